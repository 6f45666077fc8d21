"""The smooth dynamics of a step in public coordinates, and its integrators: what the step
(step.py) advances before any constraint row acts. A model with mimic joints takes its reduced
dynamics (M = G^T M_int G, tau = G^T tau_int, v_int = G v): the kernels run on the internal
coordinates and these functions map in and out.

A model whose <constraint> elements close kinematic loops takes the closed system's dynamics
(loops.closed_forward_dynamics: RBDA 8.5, the loops' forces K^T lam inside every stage): the
smooth step moves along the loops, and the equality rows (step.py) hold only what it drifts.

RK4 is Runge-Kutta-Munthe-Kaas on the configuration manifold (fourth order for a tumbling
floating base too: ``stage_velocity``); semi-implicit Euler on request.
"""
import numpy as np

from rbd_ros.dynamics._jit import inline_kernel, kernel, table_of
from rbd_ros.dynamics.aba import aba
from rbd_ros.dynamics.checks import OK, SINGULAR
from rbd_ros.dynamics.configuration import integrate
from rbd_ros.dynamics.crba import crba
from rbd_ros.dynamics.entry_points import dof_tables, loop_tables, model_tables
from rbd_ros.dynamics.layout import JOINT_FLOATING, JOINT_PLANAR, JTYPE, VIDX
from rbd_ros.dynamics.loops import closed_forward_dynamics
from rbd_ros.dynamics.rnea import rnea
from rbd_ros.dynamics.spd import chain, ltdl_factor, ltdl_solve

from . import layout as L


@inline_kernel
def vector(work, si, slot, n):
    """The workspace array that si[slot] says starts where (layout.py), n long."""
    return work[si[slot]:si[slot] + n]


@inline_kernel
def matrix(work, si, slot, n, m):
    """The n x m workspace matrix at si[slot]."""
    return table_of(work, si[slot], n, m)


@kernel
def mimic_scratch(work, si):
    """(qi, qn, vi, ai, ti, Mi): the mimic path's internal-coordinate scratch."""
    nvi, nqi = si[L.NV_INT], si[L.NQ_INT]
    at = si[L.W_MIMIC]
    qi, qn = work[at:at + nqi], work[at + nqi:at + 2 * nqi]
    at += 2 * nqi
    vi, ai, ti = work[at:at + nvi], work[at + nvi:at + 2 * nvi], work[at + 2 * nvi:at + 3 * nvi]
    at += 3 * nvi
    return qi, qn, vi, ai, ti, table_of(work, at, nvi, nvi)


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
    """vdot = FD(q, v, tau, f_ext), of the closed system when loops close the tree (no
    Baumgarte terms: the equality rows hold the drift). Returns OK or a dynamics status."""
    body_int, body_float, ws = model_tables(h)
    if si[L.DIRECT] == 1:
        if si[L.NLOOP_ROWS] > 0:
            loop_int, loop_float, _, lw, pivot = loop_tables(h)
            return closed_forward_dynamics(body_int, body_float, ws, dof_tables(h)[1], loop_int,
                                           loop_float, lw, pivot, q, v, tau, f_ext, 0.0, 0.0,
                                           vdot)
        return aba(body_int, body_float, ws, q, v, tau, f_ext, vdot)
    nv, nvi = si[L.NV], si[L.NV_INT]
    qi, _, vi, ai, ti, Mi = mimic_scratch(work, si)
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
        return SINGULAR
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
    """M = M(q) in public coordinates (both triangles)."""
    body_int, body_float, ws = model_tables(h)
    if si[L.DIRECT] == 1:
        return crba(body_int, body_float, ws, q, M)
    qi, _, _, _, _, Mi = mimic_scratch(work, si)
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
    qi, qn, vi, _, _, _ = mimic_scratch(work, si)
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


# ---- the smooth step ---------------------------------------------------------------------
@kernel
def smooth_step(h, si, sf, q, v, tau, f_ext, q_out, v_out, work):
    """(q*, v*): the smooth dynamics over one step, without damping, friction, limits,
    drives' PD and contacts (RK4, or semi-implicit Euler)."""
    nv, nq, dt = si[L.NV], si[L.NQ], sf[L.DT]
    at = si[L.W_STAGES]
    a1, a2, a3, a4 = (work[at:at + nv], work[at + nv:at + 2 * nv],
                      work[at + 2 * nv:at + 3 * nv], work[at + 3 * nv:at + 4 * nv])
    at += 4 * nv
    v2, v3, v4, vm = (work[at:at + nv], work[at + nv:at + 2 * nv],
                      work[at + 2 * nv:at + 3 * nv], work[at + 3 * nv:at + 4 * nv])
    qs = work[at + 4 * nv:at + 4 * nv + nq]
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


