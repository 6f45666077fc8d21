"""One simulator step, compiled: the step of ``Simulator`` (simulator.py) as one call over the
model's handle, the simulator's constant tables (si, sf: layout.py) and its workspace, as
mj_step runs over mjModel and mjData. Public coordinates throughout (a model with mimic
joints takes its reduced dynamics: M = G^T M_int G, tau = G^T tau_int).

One step of dt from (q, v) under the drives' commands and the external wrenches:

1. saturate:   tau = clip(effort, -effort_limit, effort_limit); a drive also gives up the
               effort that would take its joint past its velocity limit in this step
               (``speed_limited_effort``: only near the limit)
2. free step:  (q*, v*) under the smooth dynamics M vdot + C v + g = tau + J^T f_ext, RK4 on
               the configuration manifold (Runge-Kutta-Munthe-Kaas: fourth order for a
               tumbling base too; semi-implicit Euler on request)
3. rows:       v+ = W^-1 (M v* + J^T lam), W = M + dt D (the joints' viscous damping,
               implicit), with lam the impulses on the constraint rows (pgs.py): each joint's
               Coulomb friction and velocity and position limits; each drive's PD toward its
               position and velocity command, implicit in both and within its effort limit;
               each contact's normal spring-damper (it never pulls) and its Coulomb friction
               cone (stiction included). A contact is a point of the robot below the ground
               at q*.
4. positions:  q+ = q* (+) (v+ - v*) theta dt: the rows' forces act through the step, so the
               position moves by the mean of the velocity change (theta = 1/2 after RK4,
               theta = 1 after semi-implicit Euler, q+ = q (+) v+ dt, that method exactly).

A contact acts on the rows' velocities at the end of the step: a point penetrating by d
(gap g* = -d at q*) with stiffness k and damping c gives the normal impulse
lam_n = dt (k (-g_end) - c vn+), g_end = g* + theta dt (vn+ - vn*), clipped at 0; friction
holds the point's tangential velocity at zero while |lam_t| <= mu lam_n. Because the rows are
implicit, a stiff contact under a light foot is stable at any dt.
"""
import math

import numpy as np

from rbd_ros.dynamics._jit import kernel
from rbd_ros.dynamics.aba import aba
from rbd_ros.dynamics.checks import OK
from rbd_ros.dynamics.configuration import integrate
from rbd_ros.dynamics.crba import crba
from rbd_ros.dynamics.entry_points import model_tables
from rbd_ros.dynamics.joints import motion_subspace_column
from rbd_ros.dynamics.kinematics import body_placements
from rbd_ros.dynamics.layout import (BODY_FLOAT_COLS, JOINT_FLOATING, JOINT_PLANAR, JTYPE, NVJ, O,
                                     PARENT, SCRATCH_MOTION,
                                     SCRATCH_MOTION_2, VIDX, WS_COLS)
from rbd_ros.dynamics.rnea import rnea
from rbd_ros.dynamics.spatial import motion_to_parent
from rbd_ros.dynamics.spd import chain, ltdl_factor, ltdl_solve, unit_transpose_solve

from . import layout as L
from .pgs import JOINT, SOFT, TANGENT, row_impulses


#: rad/s (m/s): a joint's speed change in one step beyond which its limits are left out of the
#: step's rows (they cannot bind; the rows stay few)
REACH = 100.0


# ---- the workspace ----------------------------------------------------------------------------
def work_sizes(nv, nq, nv_int, nq_int, maxrows, npoints):
    """Float and int workspace sizes, in the order the kernels carve them."""
    n = nv
    floats = (2 * nq_int + 3 * nv_int + nv_int * nv_int      # mimic path: qi, qi2, vi, ai, ti, Mi
              + 8 * n + nq                                  # RK4: a1..a4, v2, v3, v4, stage q, mean v
              + 2 * nq + 5 * n                              # q*, v*, q+, v+, tau, v_unc, dv
              + 2 * n * n + n                               # M, W, rhs
              + 2 * maxrows * n + maxrows * maxrows + 8 * maxrows    # J, X, G, row vectors
              + 4 * n + 3 * npoints + 3 * nv_int + 4)   # drives, warm start, J_int, a point
    return floats, 4 * maxrows + n


@kernel
def _carve(work, at, n):
    return work[at:at + n], at + n


# ---- coordinates ------------------------------------------------------------------------------
@kernel
def expand_q(si, sf, q, qi):
    """The internal q of a public q (mimic joints from their leaders)."""
    nq, at = si[L.NQ], si[L.Q_FULL_AT]
    for k in range(nq):
        qi[si[at + k]] = q[k]
    m, mf = si[L.MIMIC_AT], si[L.MIMIC_FLOAT_AT]
    for k in range(si[L.NMIMIC]):
        qi[si[m + 4 * k]] = sf[mf + 2 * k] * q[si[m + 4 * k + 2]] + sf[mf + 2 * k + 1]


@kernel
def expand_v(si, sf, v, vi):
    """v_int = G v."""
    nv, nvi, g = si[L.NV], si[L.NV_INT], si[L.G_AT]
    for r in range(nvi):
        s = 0.0
        for c in range(nv):
            s += sf[g + r * nv + c] * v[c]
        vi[r] = s


@kernel
def reduce_rows(si, sf, J_int, J, row):
    """J[row] = J_int G (a row of internal velocities to public ones)."""
    nv, nvi, g = si[L.NV], si[L.NV_INT], si[L.G_AT]
    for c in range(nv):
        s = 0.0
        for r in range(nvi):
            s += J_int[r] * sf[g + r * nv + c]
        J[row, c] = s


# ---- dynamics in public coordinates -------------------------------------------------------
@kernel
def acceleration(h, si, sf, q, v, tau, f_ext, vdot, work):
    """vdot = FD(q, v, tau, f_ext). Returns OK or a dynamics status."""
    body_int, body_float, ws = model_tables(h)
    if si[L.DIRECT] == 1:
        return aba(body_int, body_float, ws, q, v, tau, f_ext, vdot)
    nv, nvi, nqi = si[L.NV], si[L.NV_INT], si[L.NQ_INT]
    qi, at = _carve(work, 0, nqi)
    _, at = _carve(work, at, nqi)
    vi, at = _carve(work, at, nvi)
    ai, at = _carve(work, at, nvi)
    ti, at = _carve(work, at, nvi)
    Mi = work[at:at + nvi * nvi].reshape((nvi, nvi))
    expand_q(si, sf, q, qi)
    expand_v(si, sf, v, vi)
    ai[:] = 0.0
    status = rnea(body_int, body_float, ws, qi, vi, ai, f_ext, ti)    # bias: C v + g - J^T f
    if status != OK:
        return status
    status = crba(body_int, body_float, ws, qi, Mi)
    if status != OK:
        return status
    M = np.empty((nv, nv))
    reduced_mass_matrix(si, sf, Mi, M)
    g = si[L.G_AT]
    for c in range(nv):                     # tau - G^T bias
        s = tau[c]
        for r in range(nvi):
            s -= sf[g + r * nv + c] * ti[r]
        vdot[c] = s
    dense = chain(nv)
    if not ltdl_factor(M, dense):
        return 7      # dynamics SINGULAR
    ltdl_solve(M, dense, vdot)
    return OK


@kernel
def reduced_mass_matrix(si, sf, Mi, M):
    """M = G^T M_int G."""
    nv, nvi, g = si[L.NV], si[L.NV_INT], si[L.G_AT]
    for a in range(nv):
        for b in range(nv):
            s = 0.0
            for r in range(nvi):
                gr = sf[g + r * nv + a]
                if gr != 0.0:
                    for c in range(nvi):
                        s += gr * Mi[r, c] * sf[g + c * nv + b]
            M[a, b] = s


@kernel
def mass_matrix(h, si, sf, q, M, work):
    body_int, body_float, ws = model_tables(h)
    if si[L.DIRECT] == 1:
        return crba(body_int, body_float, ws, q, M)
    nvi, nqi = si[L.NV_INT], si[L.NQ_INT]
    qi = work[:nqi]
    at = 2 * nqi + 3 * nvi
    Mi = work[at:at + nvi * nvi].reshape((nvi, nvi))
    expand_q(si, sf, q, qi)
    status = crba(body_int, body_float, ws, qi, Mi)
    reduced_mass_matrix(si, sf, Mi, M)
    return status


@kernel
def integrate_public(h, si, sf, q, v, dt, out, work):
    """out = q (+) v dt."""
    body_int, _, _ = model_tables(h)
    if si[L.DIRECT] == 1:
        return integrate(body_int, q, v, dt, out)
    nvi, nqi = si[L.NV_INT], si[L.NQ_INT]
    qi, at = _carve(work, 0, nqi)
    qn, at = _carve(work, at, nqi)
    vi, at = _carve(work, at, nvi)
    expand_q(si, sf, q, qi)
    expand_v(si, sf, v, vi)
    status = integrate(body_int, qi, vi, dt, qn)
    at = si[L.Q_FULL_AT]
    for k in range(si[L.NQ]):
        out[k] = qn[si[at + k]]
    return status


@kernel
def stage_velocity(h, si, theta, k, xi):
    """xi, in place, -> dexp^-1 at -Theta of xi with Theta = theta k, to second order in Theta
    (xi + [Theta, xi] / 2 + [Theta, [Theta, xi]] / 12), on the velocities of the joints whose
    configuration is a Lie group (floating: SE(3); planar: SE(2)); the others' stay xi.
    Runge-Kutta-Munthe-Kaas: a stage's configuration is q (+) Theta, and Theta's rate is not the
    stage's body twist xi when rotations do not commute; without this, RK4 on a tumbling base
    is second order in the orientation."""
    body_int, _, _ = model_tables(h)
    mim, nm = si[L.MIMIC_AT], si[L.NMIMIC]
    for i in range(1, body_int.shape[0]):
        jtype = body_int[i, JTYPE]
        if jtype != JOINT_FLOATING and jtype != JOINT_PLANAR:
            continue
        b = body_int[i, VIDX]                   # internal -> public: less the mimic joints' v
        for m in range(nm):                     # before it (a Lie group joint is never mimic)
            if si[mim + 4 * m + 1] < body_int[i, VIDX]:
                b -= 1
        if jtype == JOINT_FLOATING:
            rx, ry, rz = theta * k[b], theta * k[b + 1], theta * k[b + 2]
            px, py, pz = theta * k[b + 3], theta * k[b + 4], theta * k[b + 5]
            ux, uy, uz, wx, wy, wz = xi[b], xi[b + 1], xi[b + 2], xi[b + 3], xi[b + 4], xi[b + 5]
            # c1 = [Theta, xi] = (phi x u - w x rho, phi x w); c2 = [Theta, c1]
            ax = py * uz - pz * uy - (wy * rz - wz * ry)
            ay = pz * ux - px * uz - (wz * rx - wx * rz)
            az = px * uy - py * ux - (wx * ry - wy * rx)
            bx, by, bz = py * wz - pz * wy, pz * wx - px * wz, px * wy - py * wx
            cx = py * az - pz * ay - (by * rz - bz * ry)
            cy = pz * ax - px * az - (bz * rx - bx * rz)
            cz = px * ay - py * ax - (bx * ry - by * rx)
            dx, dy, dz = py * bz - pz * by, pz * bx - px * bz, px * by - py * bx
            xi[b], xi[b + 1], xi[b + 2] = ux + ax / 2 + cx / 12, uy + ay / 2 + cy / 12, \
                uz + az / 2 + cz / 12
            xi[b + 3], xi[b + 4], xi[b + 5] = wx + bx / 2 + dx / 12, wy + by / 2 + dy / 12, \
                wz + bz / 2 + dz / 12
        else:                                   # (x, y, angle): the rotation is about the normal
            rx, ry, p = theta * k[b], theta * k[b + 1], theta * k[b + 2]
            ux, uy, w = xi[b], xi[b + 1], xi[b + 2]
            ax, ay = -p * uy + w * ry, p * ux - w * rx
            xi[b], xi[b + 1] = ux + ax / 2 - p * ay / 12, uy + ay / 2 + p * ax / 12


# ---- the parts of a step ------------------------------------------------------------------
@kernel
def free_step(h, si, sf, q, v, tau, f_ext, q_out, v_out, work, stages):
    """The smooth dynamics over one step, without damping, friction, limits, drives' PD and
    contacts (RK4, or semi-implicit Euler)."""
    nv, nq, dt = si[L.NV], si[L.NQ], sf[L.DT]
    # (each kernel carves its own part of the workspace, in the order work_sizes counts it)
    a1, at = _carve(stages, 0, nv)
    a2, at = _carve(stages, at, nv)
    a3, at = _carve(stages, at, nv)
    a4, at = _carve(stages, at, nv)
    v2, at = _carve(stages, at, nv)
    v3, at = _carve(stages, at, nv)
    v4, at = _carve(stages, at, nv)
    qs, at = _carve(stages, at, nq)
    vm, at = _carve(stages, at, nv)
    if si[L.RK4] == 0:
        status = acceleration(h, si, sf, q, v, tau, f_ext, a1, work)
        if status != OK:
            return status
        for k in range(nv):
            v_out[k] = v[k] + dt * a1[k]
        return integrate_public(h, si, sf, q, v_out, dt, q_out, work)
    # RK4 on the manifold (Runge-Kutta-Munthe-Kaas): stage j's configuration is q (+) Theta_j,
    # Theta_2 = dt/2 k1, Theta_3 = dt/2 k2, Theta_4 = dt k3, with k_j the stage velocity v_j
    # through stage_velocity; each k_j overwrites its v_j once a_j is computed
    status = acceleration(h, si, sf, q, v, tau, f_ext, a1, work)
    for k in range(nv):
        v2[k] = v[k] + 0.5 * dt * a1[k]
    status += integrate_public(h, si, sf, q, v, 0.5 * dt, qs, work)
    status += acceleration(h, si, sf, qs, v2, tau, f_ext, a2, work)
    stage_velocity(h, si, 0.5 * dt, v, v2)                   # k2
    for k in range(nv):
        v3[k] = v[k] + 0.5 * dt * a2[k]
    status += integrate_public(h, si, sf, q, v2, 0.5 * dt, qs, work)
    status += acceleration(h, si, sf, qs, v3, tau, f_ext, a3, work)
    stage_velocity(h, si, 0.5 * dt, v2, v3)                  # k3
    for k in range(nv):
        v4[k] = v[k] + dt * a3[k]
    status += integrate_public(h, si, sf, q, v3, dt, qs, work)
    status += acceleration(h, si, sf, qs, v4, tau, f_ext, a4, work)
    stage_velocity(h, si, dt, v3, v4)                        # k4
    if status != OK:
        return status
    for k in range(nv):      # (the mean velocity, in numpy's order of operations)
        vm[k] = ((v[k] + 2.0 * v2[k]) + 2.0 * v3[k] + v4[k]) / 6.0
    status = integrate_public(h, si, sf, q, vm, dt, q_out, work)
    for k in range(nv):
        v_out[k] = v[k] + dt / 6.0 * (((a1[k] + 2.0 * a2[k]) + 2.0 * a3[k]) + a4[k])
    return status


@kernel
def finite_state(si, sf, q, v):
    """Finite, and the joints' |v| and |q| (and the base's position) within the bound."""
    bound = sf[L.BOUND]
    for k in range(si[L.NQ]):
        if not math.isfinite(q[k]):
            return False
    for k in range(si[L.NV]):
        if not (abs(v[k]) <= bound):
            return False
    rq = si[L.ROWS_Q_AT]
    for r in range(si[L.NROWS]):
        if not (abs(q[si[rq + r]]) <= bound):
            return False
    if si[L.FLOATING] == 1:
        for k in range(3):
            if not (abs(q[k]) <= bound):
                return False
    return True


@kernel
def point_rows(body_int, body_float, ws, body, px, py, pz, sf, J_int):
    """J_int (3 x nv_int) = the velocity of the world point p, fixed to ``body``, along the
    ground's normal and its two tangents: for every joint above the body, its world motion
    column [v_o; w] (about the world origin) gives the point's velocity v_o + w x p. After
    body_placements. (kinematics.frame_jacobian's walk, projected at a point: other output.)"""
    s = body_int.shape[0] * WS_COLS
    S, col = s + SCRATCH_MOTION, s + SCRATCH_MOTION_2
    J_int[:, :] = 0.0
    b = body
    while b > 0:
        vi = body_int[b, VIDX]
        for k in range(body_int[b, NVJ]):
            motion_subspace_column(body_int[b, JTYPE], body_float, b * BODY_FLOAT_COLS, k, ws, S)
            motion_to_parent(ws, b * WS_COLS + O, ws, S, ws, col)
            wx, wy, wz = ws[col + 3], ws[col + 4], ws[col + 5]
            ux = ws[col] + wy * pz - wz * py
            uy = ws[col + 1] + wz * px - wx * pz
            uz = ws[col + 2] + wx * py - wy * px
            for d in range(3):
                n = L.NORMAL if d == 0 else (L.T1 if d == 1 else L.T2)
                J_int[d, vi + k] = sf[n] * ux + sf[n + 1] * uy + sf[n + 2] * uz
        b = body_int[b, PARENT]


@kernel
def contact_point(ws, sf, si, p, out):
    """out[0:3] = the world location of contact candidate p (the lowest point of its sphere, or
    its rim quarter's point), out[3] = its gap to the ground (< 0: penetrating)."""
    body = si[si[L.POINT_BODY_AT] + p]
    o = body * WS_COLS + O
    row = si[L.POINTS_AT] + p * L.POINT_COLS
    c, ax_, u_ = row + L.POINT_CENTER, row + L.POINT_AXIS, row + L.POINT_U
    nx, ny, nz = sf[L.NORMAL], sf[L.NORMAL + 1], sf[L.NORMAL + 2]
    # world centre: oR c + op
    cx = ws[o] * sf[c] + ws[o + 1] * sf[c + 1] + ws[o + 2] * sf[c + 2] + ws[o + 9]
    cy = ws[o + 3] * sf[c] + ws[o + 4] * sf[c + 1] + ws[o + 5] * sf[c + 2] + ws[o + 10]
    cz = ws[o + 6] * sf[c] + ws[o + 7] * sf[c + 1] + ws[o + 8] * sf[c + 2] + ws[o + 11]
    radius = sf[row + L.POINT_RADIUS]
    if si[si[L.POINT_KIND_AT] + p] == L.SPHERE:
        dx, dy, dz = -nx, -ny, -nz
    else:                  # a rim: its lowest point, or a fixed quarter when it lies flat
        ax = ws[o] * sf[ax_] + ws[o + 1] * sf[ax_ + 1] + ws[o + 2] * sf[ax_ + 2]
        ay = ws[o + 3] * sf[ax_] + ws[o + 4] * sf[ax_ + 1] + ws[o + 5] * sf[ax_ + 2]
        az = ws[o + 6] * sf[ax_] + ws[o + 7] * sf[ax_ + 1] + ws[o + 8] * sf[ax_ + 2]
        na = nx * ax + ny * ay + nz * az
        dx, dy, dz = -(nx - na * ax), -(ny - na * ay), -(nz - na * az)
        norm = math.sqrt(dx * dx + dy * dy + dz * dz)
        if norm > 1e-9:
            dx, dy, dz = dx / norm, dy / norm, dz / norm
        else:
            dx = ws[o] * sf[u_] + ws[o + 1] * sf[u_ + 1] + ws[o + 2] * sf[u_ + 2]
            dy = ws[o + 3] * sf[u_] + ws[o + 4] * sf[u_ + 1] + ws[o + 5] * sf[u_ + 2]
            dz = ws[o + 6] * sf[u_] + ws[o + 7] * sf[u_ + 1] + ws[o + 8] * sf[u_ + 2]
        for _ in range(si[si[L.POINT_K_AT] + p]):     # a quarter turn about the axis
            dx, dy, dz = ay * dz - az * dy, az * dx - ax * dz, ax * dy - ay * dx
    out[0], out[1], out[2] = cx + radius * dx, cy + radius * dy, cz + radius * dz
    out[3] = nx * out[0] + ny * out[1] + nz * out[2] - sf[L.HEIGHT]


#: Gauss-Seidel sweeps at most for the drives' give-up (a handful of coupled drives converge in
#: tens; the last sweep's answer is within its bounds whatever happens)
SPEED_LIMIT_SWEEPS = 500
#: passes of the drives' give-up per step (the second corrects the first's linearisation)
SPEED_LIMIT_PASSES = 2


@kernel
def speed_limited_effort(h, si, sf, q, v_end, tau_cmd, tau, work):
    """A drive limits its joint's speed by giving up effort, as a real one does: tau (the
    efforts of the step's last pass, which ended at v_end with damping and friction) changed
    where a joint would go past its velocity limit by the end of this step, each drive's
    effort kept between zero and its command tau_cmd. False when nothing changes."""
    nv, dt = si[L.NV], sf[L.DT]
    nr, rv, lim = si[L.NROWS], si[L.ROWS_V_AT], si[L.ROW_LIMITS_AT]
    # the drives that push their joints on toward the limit: those past it, those near it
    # (another drive's give-up can take a coupled joint past its limit), and those that gave
    # up effort in an earlier pass (they may take some back)
    over = np.empty(nr, dtype=np.int64)
    n = 0
    act = False
    for r in range(nr):
        i = si[rv + r]
        vf, tc, vmax = v_end[i], tau_cmd[i], sf[lim + 4 * r + 2]
        if abs(vf) > 0.5 * vmax and tc != 0.0 and np.sign(tc) == np.sign(vf):
            over[n] = r
            n += 1
            act = act or abs(vf) > vmax or tau[i] != tc
    if not act:
        return False
    W = np.empty((nv, nv))
    mass_matrix(h, si, sf, q, W, work)
    if si[L.DAMPING] == 1:
        for i in range(nv):
            W[i, i] += dt * sf[si[L.PER_V_AT] + i]
    dense = chain(nv)
    if not ltdl_factor(W, dense):
        return False
    # the torque change x that brings these joints to their limit speed (v changes by about
    # dt W^-1 x): never more push than the command, and where it holds back, it holds the
    # joint at its limit speed: a box-constrained quadratic program (min 1/2 x^T A x -
    # x^T target, A SPD), solved by projected Gauss-Seidel. Its part down to zero effort is
    # the drive's give-up; any more is braking the speed-limit row does, which the other
    # drives' give-up must count on (coupled joints) though the drive does not apply it.
    col = np.empty(nv)
    A = np.empty((n, n))
    target = np.empty(n)
    low = np.empty(n)
    high = np.empty(n)
    for c in range(n):
        col[:] = 0.0
        col[si[rv + over[c]]] = 1.0
        ltdl_solve(W, dense, col)
        for r in range(n):
            A[r, c] = dt * col[si[rv + over[r]]]
    for r in range(n):
        i = si[rv + over[r]]
        target[r] = np.sign(v_end[i]) * sf[lim + 4 * over[r] + 2] - v_end[i]
        if tau_cmd[i] > 0.0:
            low[r], high[r] = -np.inf, tau_cmd[i] - tau[i]
        else:
            low[r], high[r] = tau_cmd[i] - tau[i], np.inf
    delta = np.zeros(n)
    for _ in range(SPEED_LIMIT_SWEEPS):
        change = 0.0
        for r in range(n):
            residual = target[r]
            for c in range(n):
                residual -= A[r, c] * delta[c]
            new = min(max(delta[r] + residual / A[r, r], low[r]), high[r])
            change = max(change, abs(new - delta[r]))
            delta[r] = new
        if change <= 1e-15 * (1.0 + np.abs(delta).max()):
            break
    changed = False
    for r in range(n):
        i = si[rv + over[r]]
        new = tau[i] + delta[r]
        new = min(max(new, 0.0), tau_cmd[i]) if tau_cmd[i] > 0.0 else \
            max(min(new, 0.0), tau_cmd[i])
        changed = changed or new != tau[i]
        tau[i] = new
    return changed


@kernel
def joint_update(h, si, sf, command, tau, q_free, v_free, q_new, v_new, limits, out, stats,
                 work, iwork):
    """Step 3 and 4 (the module docstring): the rows, then the positions. ``limits`` False
    leaves out the velocity limits: the first pass, which finds what the drives must give up
    (a joint held at a position limit, or by the ground, needs no speed limiting: the drive
    pushes with all its effort). Returns a step status."""
    body_int, body_float, ws = model_tables(h)
    nv, dt = si[L.NV], sf[L.DT]
    theta = 0.5 if si[L.RK4] == 1 else 1.0
    nr, rv, rq, lim = si[L.NROWS], si[L.ROWS_V_AT], si[L.ROWS_Q_AT], si[L.ROW_LIMITS_AT]
    pv = si[L.PER_V_AT]
    mode = si[L.POSITION_LIMITS]
    constrained = mode == 0
    velocity_limits = limits and si[L.VELOCITY_LIMITS] == 1
    # carve the workspace (after the mimic path's and the stages' part)
    nvi, nqi, nq = si[L.NV_INT], si[L.NQ_INT], si[L.NQ]
    n = nv
    at = 2 * nqi + 3 * nvi + nvi * nvi + 8 * n + nq + 2 * nq + 3 * n
    v_unc, at = _carve(work, at, n)
    dv, at = _carve(work, at, n)
    M = work[at:at + n * n].reshape((n, n))
    W = work[at + n * n:at + 2 * n * n].reshape((n, n))
    dense = chain(n)                       # W's parent array: dense (spd.py)
    at += 2 * n * n
    rhs, at = _carve(work, at, n)
    maxrows = si[L.MAXROWS]
    J_all, at = _carve(work, at, maxrows * n)
    X_all, at = _carve(work, at, maxrows * n)
    G_all, at = _carve(work, at, maxrows * maxrows)
    v0, at = _carve(work, at, maxrows)
    lam, at = _carve(work, at, maxrows)
    lo, at = _carve(work, at, maxrows)
    hi, at = _carve(work, at, maxrows)
    fric, at = _carve(work, at, maxrows)
    ra, at = _carve(work, at, maxrows)
    rb, at = _carve(work, at, maxrows)
    drive_a, at = _carve(work, at, n)
    drive_b, at = _carve(work, at, n)
    drive_lo, at = _carve(work, at, n)
    drive_hi, at = _carve(work, at, n)
    npts = si[L.NPOINTS]
    previous, at = _carve(work, at, 3 * npts)     # the last step's contact impulses
    J_int_flat, at = _carve(work, at, 3 * nvi)
    where, at = _carve(work, at, 4)
    kind, partner = iwork[:maxrows], iwork[maxrows:2 * maxrows]
    unit, point = iwork[2 * maxrows:3 * maxrows], iwork[3 * maxrows:4 * maxrows]
    drive_row = iwork[4 * maxrows:4 * maxrows + n]   # 0: no drive, 1: in W, 2: a bounded row
    J = J_all[:maxrows * n].reshape((maxrows, n))

    # the joint rows: bounds, friction, spring-mode limits (into W's diagonal)
    any_damping = False
    if si[L.DAMPING] == 1:
        for i in range(nv):
            if sf[pv + i] != 0.0:
                any_damping = True
    rows = 0
    spring_rows = False
    for r in range(nr):
        i, qi = si[rv + r], si[rq + r]
        lower, upper = sf[lim + 4 * r], sf[lim + 4 * r + 1]
        lower_gap, upper_gap = q_free[qi] - lower, upper - q_free[qi]    # > 0 inside
        friction = sf[lim + 4 * r + 3] if si[L.FRICTION] == 1 else 0.0
        if mode == 1 and (lower_gap < 0.0 or upper_gap < 0.0):
            spring_rows = True
        row_lo, row_hi = -math.inf, math.inf
        if constrained:    # end the step within the limits: q+ = q* + theta dt (v+ - v*)
            vf = v_free[i]
            if lower_gap < 0.0:     # crossed in the step: it stops (and ends at the limit,
                row_lo = max(row_lo, 0.0)   # below: an inelastic impact, no bounce)
            else:
                row_lo = max(row_lo, vf - lower_gap / (theta * dt))
            if upper_gap < 0.0:
                row_hi = min(row_hi, 0.0)
            else:
                row_hi = min(row_hi, vf + upper_gap / (theta * dt))
        if velocity_limits:
            vmax = sf[lim + 4 * r + 2]
            row_lo = max(row_lo, -vmax)
            row_hi = min(row_hi, vmax)
        # a bound that the rows' impulses cannot reach in this step is left out: no joint
        # changes speed by more than REACH in one step (an impact that does is caught by the
        # next step: a crossed limit ends it at the limit)
        if not row_lo > v_free[i] - REACH:
            row_lo = -math.inf
        if not row_hi < v_free[i] + REACH:
            row_hi = math.inf
        if math.isfinite(row_lo) or math.isfinite(row_hi) or friction * dt > 0.0:
            kind[rows], unit[rows], point[rows] = JOINT, i, -1
            lo[rows], hi[rows], fric[rows] = row_lo, row_hi, friction * dt
            lam[rows] = 0.0
            rows += 1
    # the drives' PD toward (q_ref, v_ref): its impulse b - a v+ (implicit in v+) goes into W
    # and the right-hand side; a drive that would pass its effort limit there becomes a soft
    # row bounded by the limit (below)
    drive_row[:] = 0
    drives = 0
    for r in range(nr):
        i, qi = si[rv + r], si[rq + r]
        kp, kd = command[L.KP, i], command[L.KD, i]
        if kp > 0.0 or kd > 0.0:
            drive_row[i] = 1
            drives += 1
            drive_a[i] = dt * kd + theta * dt * dt * kp
            drive_b[i] = dt * (kp * (command[L.Q_REF, i] - q_free[qi] + theta * dt * v_free[i])
                               + kd * command[L.V_REF, i])
            if si[L.EFFORT_LIMITS] == 1:
                limit = sf[pv + nv + i]
                drive_lo[i], drive_hi[i] = (-limit - tau[i]) * dt, (limit - tau[i]) * dt
            else:
                drive_lo[i], drive_hi[i] = -math.inf, math.inf
    # contacts: the candidates below the ground at q*
    for p in range(npts):                 # a warm start: the last step's contact impulses
        o = nv + L.OUT_COLS * p
        for d in range(3):
            n_ = L.NORMAL if d == 0 else (L.T1 if d == 1 else L.T2)
            previous[3 * p + d] = 0.0 if out[o + L.OUT_ACTIVE] == 0.0 else dt * (
                out[o] * sf[n_] + out[o + 1] * sf[n_ + 1] + out[o + 2] * sf[n_ + 2])
        for c in range(L.OUT_COLS):
            out[o + c] = 0.0
    contact_rows = 0
    if si[L.GROUND] == 1 and npts > 0:
        qi_ = work[:nqi]
        if si[L.DIRECT] == 1:
            body_placements(body_int, body_float, ws, q_free)
        else:
            expand_q(si, sf, q_free, qi_)
            body_placements(body_int, body_float, ws, qi_)
        J_int = J_int_flat.reshape((3, nvi))
        k_c, c_c = sf[L.CONTACT_K], sf[L.CONTACT_C]
        for p in range(npts):
            contact_point(ws, sf, si, p, where)
            if not where[3] < 0.0 or rows + 3 > maxrows:
                continue
            point_rows(body_int, body_float, ws, si[si[L.POINT_BODY_AT] + p], where[0],
                       where[1], where[2], sf, J_int)
            for d in range(3):
                if si[L.DIRECT] == 1:
                    for c in range(nv):
                        J[rows + d, c] = J_int[d, c]
                else:
                    reduce_rows(si, sf, J_int[d], J, rows + d)
            vn = 0.0
            for c in range(nv):
                vn += J[rows, c] * v_free[c]
            o = nv + L.OUT_COLS * p
            out[o + L.OUT_AT], out[o + L.OUT_AT + 1], out[o + L.OUT_AT + 2] = where[0], where[1], where[2]
            out[o + L.OUT_ACTIVE] = 1.0
            kind[rows], unit[rows], point[rows] = SOFT, -1, p
            for d in range(3):
                lam[rows + d] = previous[3 * p + d]
            ra[rows] = theta * dt * dt * k_c + dt * c_c
            rb[rows] = dt * k_c * (-where[3] + theta * dt * vn)
            lo[rows], hi[rows] = 0.0, math.inf
            for d in (1, 2):
                kind[rows + d], unit[rows + d], point[rows + d] = TANGENT, -1, p
                partner[rows + d] = rows
                fric[rows + d] = sf[L.MU]
                lo[rows + d], hi[rows + d] = -math.inf, math.inf
            rows += 3
            contact_rows += 3
    if not (any_damping or spring_rows or rows > 0 or drives > 0):   # nothing acts on v*
        q_new[:nq] = q_free[:nq]
        v_new[:nv] = v_free[:nv]
        for i in range(nv):
            out[i] = tau[i]
        return L.STEP_OK

    # W = M + dt D (+ spring-mode limits, + the drives' a), rhs = M v* (- the limits' spring
    # force, + the drives' b)
    status = mass_matrix(h, si, sf, q_free, M, work)
    if status != OK:
        return L.STEP_SINGULAR
    fixed_rows = rows                      # joint and contact rows; bounded drives after them
    for attempt in range(3):
        rows = fixed_rows
        for i in range(nv):
            if drive_row[i] == 2:
                kind[rows], unit[rows], point[rows] = SOFT, i, -1
                lam[rows], ra[rows], rb[rows] = 0.0, drive_a[i], drive_b[i]
                lo[rows], hi[rows] = drive_lo[i], drive_hi[i]
                rows += 1
        for i in range(nv):
            for j in range(nv):
                W[i, j] = M[i, j]
        for i in range(nv):
            W[i, i] += dt * sf[pv + i] if si[L.DAMPING] == 1 else 0.0
            s = 0.0
            for j in range(nv):
                s += M[i, j] * v_free[j]
            rhs[i] = s
            if drive_row[i] == 1:
                W[i, i] += drive_a[i]
                rhs[i] += drive_b[i]
        if mode == 1:
            k_l, c_l = sf[L.LIMIT_K], sf[L.LIMIT_C]
            for r in range(nr):
                i, qi = si[rv + r], si[rq + r]
                lower_gap = q_free[qi] - sf[lim + 4 * r]
                upper_gap = sf[lim + 4 * r + 1] - q_free[qi]
                if lower_gap < 0.0 or upper_gap < 0.0:
                    penetration = lower_gap if lower_gap < 0.0 else -upper_gap
                    W[i, i] += dt * c_l + dt * dt * k_l
                    rhs[i] -= dt * k_l * penetration
        if not ltdl_factor(W, dense):
            return L.STEP_SINGULAR
        ltdl_solve(W, dense, rhs)
        for i in range(nv):
            v_unc[i] = rhs[i]
            v_new[i] = rhs[i]               # v* with damping and drives (no impulses)
        if rows > 0:
            # G = J W^-1 J^T = Y^T D^-1 Y with Y = L^-T J^T (W = L^T D L, D^-1 on the
            # factor's diagonal): one triangular solve per row; v0 = J v_unc
            Y = X_all[:rows * nv].reshape((rows, nv))
            G = G_all[:rows * rows].reshape((rows, rows))
            for r in range(rows):
                if unit[r] >= 0:
                    Y[r, :] = 0.0
                    Y[r, unit[r]] = 1.0
                    v0[r] = v_unc[unit[r]]
                else:
                    s = 0.0
                    for c in range(nv):
                        Y[r, c] = J[r, c]
                        s += J[r, c] * v_unc[c]
                    v0[r] = s
                unit_transpose_solve(W, dense, Y[r])
            dinv_y = np.empty(nv)
            for b in range(rows):
                for c in range(nv):
                    dinv_y[c] = W[c, c] * Y[b, c]       # D^-1 Y_b
                for a in range(b + 1):
                    s = 0.0
                    for c in range(nv):
                        s += Y[a, c] * dinv_y[c]
                    G[a, b] = s
                    G[b, a] = s
            # (contacts: velocities to 1e-10 m/s; a box on four corners is statically
            # indeterminate, and Gauss-Seidel wanders among its equal solutions below that)
            tolerance = sf[L.TOLERANCE] if contact_rows == 0 else max(sf[L.TOLERANCE], 1e-10)
            sweeps = row_impulses(G, v0[:rows], kind[:rows], lo[:rows], hi[:rows], fric[:rows],
                                  ra[:rows], rb[:rows], partner[:rows], si[L.SWEEPS], tolerance,
                                  lam[:rows])
            stats[L.STAT_ROWS] = rows
            if sweeps > si[L.SWEEPS]:
                stats[L.STAT_UNCONVERGED] += 1
            stats[L.STAT_MAX_SWEEPS] = max(stats[L.STAT_MAX_SWEEPS], min(sweeps, si[L.SWEEPS]))
            for i in range(nv):             # v+ = v_unc + W^-1 J^T lam
                rhs[i] = 0.0
            for a in range(rows):
                if unit[a] >= 0:
                    rhs[unit[a]] += lam[a]
                else:
                    for i in range(nv):
                        rhs[i] += J[a, i] * lam[a]
            ltdl_solve(W, dense, rhs)
            for i in range(nv):
                v_new[i] += rhs[i]
        saturated = False                   # a drive in W past its effort limit: a row now
        for i in range(nv):
            if drive_row[i] == 1:
                impulse = drive_b[i] - drive_a[i] * v_new[i]
                if impulse < drive_lo[i] or impulse > drive_hi[i]:
                    drive_row[i] = 2
                    saturated = True
        if not saturated:
            break
    for i in range(nv):
        out[i] = tau[i]
        if drive_row[i] == 1:
            out[i] += (drive_b[i] - drive_a[i] * v_new[i]) / dt
    for a in range(rows):                   # what the rows did: drive efforts, contact forces
        if kind[a] == SOFT and unit[a] >= 0:
            out[unit[a]] += lam[a] / dt
        elif point[a] >= 0:
            o = nv + L.OUT_COLS * point[a] + L.OUT_FORCE
            d = L.NORMAL if kind[a] == SOFT else (L.T1 if partner[a] == a - 1 else L.T2)
            for c in range(3):
                out[o + c] += lam[a] / dt * sf[d + c]
    for i in range(nv):
        dv[i] = v_new[i] - v_free[i]
    status = integrate_public(h, si, sf, q_free, dv, theta * dt, q_new, work)
    if constrained:   # a joint that crossed its limit in the step met the stop within the
        for r in range(nr):     # step: it ends inside, at the limit when it was stopped there
            i, qi = si[rv + r], si[rq + r]      # (however short of it the mean-velocity
            lower, upper = sf[lim + 4 * r], sf[lim + 4 * r + 1]   # position would leave it)
            if q_free[qi] > upper:
                q_new[qi] = upper if abs(v_new[i]) <= 1e-9 else min(q_new[qi], upper)
            elif q_free[qi] < lower:
                q_new[qi] = lower if abs(v_new[i]) <= 1e-9 else max(q_new[qi], lower)
    return L.STEP_OK if status == OK else L.STEP_DIVERGED


@kernel
def simulate(h, si, sf, q, v, command, f_ext, out, stats, work, iwork, steps):
    """``steps`` steps from (q, v), in place. Returns STEP_OK, or the status of the first step
    that failed, with (q, v) as they were before it."""
    nv, nq = si[L.NV], si[L.NQ]
    if nv == 0:                             # (a fixed robot without joints: nothing moves)
        return L.STEP_OK
    n = nv
    nvi, nqi = si[L.NV_INT], si[L.NQ_INT]
    at = 2 * nqi + 3 * nvi + nvi * nvi
    stages, at = _carve(work, at, 8 * n + nq)
    q_free, at = _carve(work, at, nq)
    v_free, at = _carve(work, at, n)
    q_new, at = _carve(work, at, nq)
    v_new, at = _carve(work, at, n)
    tau, at = _carve(work, at, n)
    tau_cmd = np.empty(n)
    for _ in range(steps):
        for i in range(nv):                 # 1. saturate
            e = command[L.EFFORT, i]
            if si[L.EFFORT_LIMITS] == 1:
                limit = sf[si[L.PER_V_AT] + nv + i]
                e = min(max(e, -limit), limit)
            tau[i] = e
            tau_cmd[i] = e
        status = free_step(h, si, sf, q, v, tau, f_ext, q_free, v_free, work, stages)
        if status != OK or not finite_state(si, sf, q_free, v_free):
            return L.STEP_DIVERGED
        if si[L.VELOCITY_LIMITS] == 1 and near_speed_limit(si, sf, v_free):
            # two passes: the second corrects the first's linearisation (a drive that gives up
            # tens of N m changes the RK4 step by more than its first-order part)
            for _ in range(SPEED_LIMIT_PASSES):
                status = joint_update(h, si, sf, command, tau, q_free, v_free, q_new, v_new,
                                      False, out, stats, work, iwork)
                if status != L.STEP_OK:
                    return status
                if not speed_limited_effort(h, si, sf, q_free, v_new, tau_cmd, tau, work):
                    break
                status = free_step(h, si, sf, q, v, tau, f_ext, q_free, v_free, work, stages)
                if status != OK or not finite_state(si, sf, q_free, v_free):
                    return L.STEP_DIVERGED
        status = joint_update(h, si, sf, command, tau, q_free, v_free, q_new, v_new, True, out,
                              stats, work, iwork)
        if status != L.STEP_OK:
            return status
        if not finite_state(si, sf, q_new, v_new):
            return L.STEP_DIVERGED
        q[:] = q_new[:nq]
        v[:] = v_new[:nv]
        stats[L.STAT_STEPS] += 1
    return L.STEP_OK


@kernel
def near_speed_limit(si, sf, v_free):
    """Whether a joint may end this step past its velocity limit: only then is the drives'
    share worked out (damping and friction only slow a joint, so half the limit is a wide
    margin, and the limit rows bound the speed in any case)."""
    rv, lim = si[L.ROWS_V_AT], si[L.ROW_LIMITS_AT]
    for r in range(si[L.NROWS]):
        if abs(v_free[si[rv + r]]) > 0.5 * sf[lim + 4 * r + 2]:
            return True
    return False


def warm_up():
    """Compile (or load from numba's cache) the step: a Simulator compiles it when it is made
    (one specialisation serves every model)."""
    import rbd_ros.dynamics as rbd
    from .simulator import SimOptions, Simulator
    box = ('<robot name="warmup_box"><link name="box"><inertial><mass value="1"/><inertia '
           'ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial><collision>'
           '<geometry><sphere radius="0.1"/></geometry></collision></link></robot>')
    sim = Simulator(rbd.Model.from_urdf(box, floating_base=True),
                    [0.0, 0.0, 0.05, 0.0, 0.0, 0.0, 1.0], options=SimOptions())
    sim.advance(2)
