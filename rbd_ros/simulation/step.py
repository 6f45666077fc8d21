"""One simulator step, compiled: the step of ``Simulator`` (simulator.py) as one call over the
model's handle, the simulator's tables (si, sf: tables.py, layout.py) and its workspace, as
mj_step runs over mjModel and mjData. Public coordinates throughout (smooth.py maps a model with
mimic joints to its kernels' coordinates and back).

A step of dt from (q, v), in stages (``step``):

1. saturate    tau = clip(effort command, -effort_limit, effort_limit)
2. smooth      (q*, v*) under M vdot + C v + g = tau + J^T f_ext (smooth.py: RK4 on the
               configuration manifold, or semi-implicit Euler); with RK4 also under the
               forces the last step's rows carried (``carried_force``, below)
3. rows        the constraint rows at q*, each a direction J_r in velocity space and a law
               (solver.py), in this order:
                 joint rows     a joint's Coulomb friction, position limits (the step ends
                                within them) and speed limits: LIMIT; the bounds NEAR v*
                                first, all within REACH when v+ crosses one left out
                 drive rows     a drive's PD toward its position and velocity command,
                                implicit in both, within its effort limit: SOFT
                 effort rows    a drive that gave up effort at its speed limit earlier in
                                the step may take it back: SOFT (stiff, toward the limit)
                 spring limits  the spring mode's position limits: SOFT
                 contact rows   each candidate point below the ground at q* (contact.py):
                                its normal spring-damper (SOFT: it never pulls) and its
                                Coulomb friction disk (TANGENT)
                 equality rows  each loop closure's rows (<constraint>): LIMIT, lo = hi,
                                J_r the row of K(q*) (below)
4. mass        M = M(q*), W = M + dt D (the joints' viscous damping, implicit), M v*; each
               row's scale from W's diagonal
5. solve       v+ = argmin 1/2 v^T W v - v^T M v* + sum_r l_r(J_r v)   (solver.py: Newton,
               warm-started from the last step's velocity change)
6. integrate   q+ = q* (+) theta dt (v+ - v*): the rows' impulses act through the step, so the
               position moves by the mean of the velocity change (theta = 1/2 after RK4; 1
               after semi-implicit Euler, q+ = q (+) v+ dt, that method: exactly for the
               joints, whose coordinates add; a floating base's two exponentials on SE(3)
               differ by dt^2/2 [v*, v+ - v*], second order like the method's own error); a
               joint that crossed a position limit ends inside it; what the drives applied and
               the contact forces go to ``out``.

A contact acts on the rows' velocities at the end of the step: a point penetrating by d (gap
g* = -d at q*) with stiffness k and damping c gives the normal impulse
lam_n = dt (k (-g_end) - c vn+), g_end = g* + theta dt (vn+ - vn*), clipped at 0, i.e. the SOFT
law b - a vn+ with a = theta dt^2 k + dt c, b = dt k (-g* + theta dt vn*). Because the rows are
implicit, a stiff contact under a light foot is stable at any dt.

Closed kinematic loops (RBDA chapter 8) act in two places. The smooth step integrates the
closed system (smooth.py: the loops' forces inside every RK4 stage), so it moves along the
loops to RK4's order. Held by the rows alone (a free tree's step, then the rows), the loops'
forces would act a step late and lose energy at first order in dt: a four-bar lost 21% of
its swing in 10 s at 1 kHz so, 8% with the rows' Jacobian at mid-step and the centripetal
bias in their target (a Python prototype of the step). The equality rows then hold what the
smooth step drifts and carry the loops' share of the other rows' impulses (a drive's, a
limit's, a contact's): row r of K at q*, held at

    u_r = theta K_r v* - phi_r(q*) / dt

The smooth step keeps K v and moves phi by dt K v; with q+ = q* (+) theta dt (v+ - v*) this
target makes the map from one step's (phi, dt K v) to the next's nilpotent: whatever the loops'
residual and velocity error, both are gone two steps later, to second order in their size
(theta = 1 closes the loop at once). The drift left is what the smooth step makes in one
step (1e-11 m on the four-bar), and the targets' impulses are that small. A position
projection after the step instead (close_loops' Newton) would move q without v, changing the
potential energy every step. Rows K leaves empty (a planar loop's out-of-plane rows) are left
out; other redundant rows are consistent, and the rows' regularisation takes them.

With RK4 the rows' forces act inside the smooth step, as the loops' do: each contact, joint
and drive row whose impulse kept its sign since the step before is carried into the next
smooth step as the force J_r^T lam_r / dt (``carried_force``, W_CARRIED) through all four
stages, and the solve takes it back (M v* less dt times it, in ``rows_and_solve``), so its
rows find the whole impulse and stage 6 moves the positions only by what the impulses changed.
Done once per step, after the smooth step, the correction is a splitting: an A1 rolling on six
sticking contacts gained 4.5 mJ in 70 steps so (second order in dt), 0.015 mJ now; and the
solver starts nearer its answer (a G1 lying on its back: 3.4 Newton iterations a step, 5.5
before). Contacts alone were not enough: without the drives' impulses the contacts' force
folded Solo-12's legs in the smooth step and its feet chattered. An impulse new this step (an
impact, a stop) is not carried: it acts once (carried, an A1's landing impulses lifted its
points off the ground in the next smooth step: 1.25 mJ gained in that step); nor are an
unconverged solve's. Semi-implicit Euler's positions follow v+ whatever v* was: it carries
nothing.

A drive at its joint's speed limit gives up effort, as a real one does (``speed_limited_effort``):
the speed-limit row brakes the joint, and what it brakes beyond friction is counted first
against the drive's effort command (given up, down to zero effort) and only the rest as
braking. A drive applies its effort through the whole step, so when one gives some up, stages
2-5 are made again with the reduced efforts, an effort row letting each take back what it
gave up too much (the smooth step is not linear in the effort); at most SPEED_LIMIT_PASSES
times, what is left after the last is reported (``applied_efforts``). Without it, the effort
given up at the step's end would still have done its work in the smooth step (3.7e-5 J per
step of energy the speed-limit rows appear to add on a two-link arm at its limits).
"""
import math



from rbd_ros.dynamics._jit import borrow, inline_kernel, kernel, table_of
from rbd_ros.dynamics.checks import OK
from rbd_ros.dynamics.entry_points import loop_tables, model_tables
from rbd_ros.dynamics.kinematics import body_placements
from rbd_ros.dynamics.loops import loop_jacobian, loop_residual

from . import layout as L
from .contact import body_clear_of_ground, contact_point, point_jacobian
from .smooth import (expand_q, integrate_public, mass_matrix, matrix, mimic_scratch,
                     reduce_rows, smooth_step, vector)
from .solver import AT_HI, AT_LO, LIMIT_REGULARISATION, STICK_COMPLIANCE, cost, solve_rows

#: rad/s (m/s): a joint's speed change in one step beyond which its limits are left out of the
#: step's rows (they cannot bind; the rows stay few)
REACH = 100.0
#: rad/s (m/s): a step first solves with only the bounds this near v* (a joint at rest far
#: from its limits has no row: a G1 lying still kept 24 speed-limit rows of 20-37 rad/s that
#: cost 9 of its 69 us a step); when v+ crosses a bound so left out (an impact), the step
#: solves again with every bound within REACH
NEAR = 5.0
#: times at most a step is made again with the efforts the drives give up at their speed limits
#: (the first gives up what the impulse says; each later one the smooth step's rest, about 1e-3
#: of the last: three reach 1e-10 of a speed)
SPEED_LIMIT_PASSES = 5
#: a loop-closure row whose largest entry is below this times K's largest is empty (a planar
#: loop's out-of-plane rows, zero but for rounding): it would hold nothing, and its G_rr (its
#: scale, 0) would make its regularisation 0
EMPTY_ROW = 1e-9
#: an effort row's compliance relative to its joint's G (as the tangent rows' stick
#: compliance): stiff enough that a joint ends within 1e-4 of the take-back's own speed change
#: of its limit, soft enough that rounding in u (1 ulp of the speed) takes back no effort
EFFORT_COMPLIANCE = 1e-4

# what a row stands for (ROW_ROLE), for what the step reports
JOINT, DRIVE, SPRING, CONTACT, EQUALITY, EFFORT = 0, 1, 2, 3, 4, 5


@inline_kernel
def row_fields(work, iwork, si):
    """(rf, ri, J, nz): the rows' float fields (ROW_FLOATS x MAXROWS), int fields (ROW_INTS x
    MAXROWS), Jacobian (MAXROWS x nv) and nonzero columns (MAXROWS x nv)."""
    m, n = si[L.MAXROWS], si[L.NV]
    return (matrix(work, si, L.W_ROWS, L.ROW_FLOATS, m), matrix(iwork, si, L.I_ROWS, L.ROW_INTS, m),
            matrix(work, si, L.W_J, m, n), matrix(iwork, si, L.I_NZ, m, n))


@inline_kernel
def add_row(rf, ri, r, kind, role, unit, point, lo, hi):
    """Row r's kind, role, joint (unit >= 0: J_r = e_unit) or contact point, bounds; its other
    fields cleared."""
    for f in range(L.ROW_FLOATS):
        rf[f, r] = 0.0
    ri[L.ROW_KIND, r], ri[L.ROW_ROLE, r], ri[L.ROW_UNIT, r] = kind, role, unit
    ri[L.ROW_POINT, r], ri[L.ROW_PARTNER, r], ri[L.ROW_PIECE, r] = point, -1, -1
    ri[L.ROW_NNZ, r], ri[L.ROW_SPEED, r] = 0, 0
    rf[L.ROW_LO, r], rf[L.ROW_HI, r] = lo, hi


@inline_kernel
def unit_row(J, nz, ri, r, i):
    """J_r = e_i (the row cleared: its other entries are another step's)."""
    J[r, :] = 0.0
    J[r, i] = 1.0
    nz[r, 0] = i
    ri[L.ROW_NNZ, r] = 1


# ---- 3. rows ----------------------------------------------------------------------------------
@inline_kernel
def joint_bounds(si, sf, q_free, v_free, k):
    """(i, lo, hi, speed, friction): joint k's bounds on v+ (its position limits as the step
    ends within them, its speed limits; ROW_SPEED's bits say which are speed limits) and its
    Coulomb friction."""
    dt = sf[L.DT]
    theta = 0.5 if si[L.RK4] == 1 else 1.0
    lim = si[L.ROW_LIMITS_AT]
    i, qi = si[si[L.ROWS_V_AT] + k], si[si[L.ROWS_Q_AT] + k]
    lower_gap = q_free[qi] - sf[lim + 4 * k]           # > 0 inside
    upper_gap = sf[lim + 4 * k + 1] - q_free[qi]
    friction = sf[lim + 4 * k + 3] if si[L.FRICTION] == 1 else 0.0
    lo, hi = -math.inf, math.inf
    speed = 0
    if si[L.POSITION_LIMITS] == 0:  # end the step within the limits: q+ = q* + theta dt (v+ - v*)
        if lower_gap < 0.0:     # crossed in the step: it stops (and ends at the limit,
            lo = 0.0            # below: an inelastic impact, no bounce)
        else:
            lo = v_free[i] - lower_gap / (theta * dt)
        if upper_gap < 0.0:
            hi = 0.0
        else:
            hi = v_free[i] + upper_gap / (theta * dt)
    if si[L.VELOCITY_LIMITS] == 1:
        vmax = sf[lim + 4 * k + 2]
        if -vmax >= lo:
            lo, speed = -vmax, speed | 1
        if vmax <= hi:
            hi, speed = vmax, speed | 2
    return i, lo, hi, speed, friction


@inline_kernel
def left_out(lo, hi, v, reach):
    """(lower, upper): whether each of a joint's bounds is farther than ``reach`` from its v*,
    so that its row leaves it out."""
    return not lo > v - reach, not hi < v + reach


@kernel
def joint_rows(si, sf, q_free, v_free, rf, ri, J, nz, remembered, reach, rows):
    """LIMIT rows: each joint's friction, and its position bounds and speed limits within
    ``reach`` of v* (NEAR, then REACH: constrained_step); the multiplier warm-started from the
    impulse it took in the last step (``remembered``)."""
    dt = sf[L.DT]
    for k in range(si[L.NROWS]):
        i, lo, hi, speed, friction = joint_bounds(si, sf, q_free, v_free, k)
        # a bound that the rows' impulses cannot reach in this step is left out: no joint
        # changes speed by more than REACH in one step (an impact that does is caught by the
        # next step: a crossed limit ends it at the limit)
        lower_out, upper_out = left_out(lo, hi, v_free[i], reach)
        if lower_out:
            lo, speed = -math.inf, speed & 2
        if upper_out:
            hi, speed = math.inf, speed & 1
        if math.isfinite(lo) or math.isfinite(hi) or friction > 0.0:
            if rows >= si[L.MAXROWS]:
                break
            add_row(rf, ri, rows, L.LIMIT, JOINT, i, -1, lo, hi)
            unit_row(J, nz, ri, rows, i)
            rf[L.ROW_FRIC, rows] = friction * dt
            rf[L.ROW_MULT, rows] = remembered[i]
            ri[L.ROW_SPEED, rows] = speed
            rows += 1
    return rows


@kernel
def crosses_a_bound_left_out(si, sf, q_free, v_free, v_new, reach, tolerance):
    """Whether v+ crosses, by more than ``tolerance``, a joint's bound that joint_rows left out
    at ``reach``."""
    for k in range(si[L.NROWS]):
        i, lo, hi, _, _ = joint_bounds(si, sf, q_free, v_free, k)
        lower_out, upper_out = left_out(lo, hi, v_free[i], reach)
        if (lower_out and v_new[i] < lo - tolerance) or (upper_out and v_new[i] > hi + tolerance):
            return True
    return False


@kernel
def drive_rows(si, sf, command, tau, q_free, v_free, rf, ri, J, nz, rows):
    """SOFT rows: each drive's PD toward (q_ref, v_ref), its impulse b - a v+ implicit in v+
    (a = dt kd + theta dt^2 kp), within what the effort limit leaves after the effort command;
    and the spring mode's position limits (a = dt c + dt^2 k, b = -dt k penetration)."""
    nv, dt = si[L.NV], sf[L.DT]
    theta = 0.5 if si[L.RK4] == 1 else 1.0
    rv, rq, lim, pv = si[L.ROWS_V_AT], si[L.ROWS_Q_AT], si[L.ROW_LIMITS_AT], si[L.PER_V_AT]
    for k in range(si[L.NROWS]):
        i, qi = si[rv + k], si[rq + k]
        kp, kd = command[L.KP, i], command[L.KD, i]
        if (kp > 0.0 or kd > 0.0) and rows < si[L.MAXROWS]:
            lo, hi = -math.inf, math.inf
            if si[L.EFFORT_LIMITS] == 1:
                limit = sf[pv + nv + i]
                lo, hi = (-limit - tau[i]) * dt, (limit - tau[i]) * dt
            add_row(rf, ri, rows, L.SOFT, DRIVE, i, -1, lo, hi)
            unit_row(J, nz, ri, rows, i)
            rf[L.ROW_A, rows] = dt * kd + theta * dt * dt * kp
            rf[L.ROW_B, rows] = dt * (kp * (command[L.Q_REF, i] - q_free[qi]
                                            + theta * dt * v_free[i]) + kd * command[L.V_REF, i])
            rows += 1
        if si[L.POSITION_LIMITS] == 1 and rows < si[L.MAXROWS]:
            lower_gap = q_free[qi] - sf[lim + 4 * k]
            upper_gap = sf[lim + 4 * k + 1] - q_free[qi]
            if lower_gap < 0.0 or upper_gap < 0.0:
                penetration = lower_gap if lower_gap < 0.0 else -upper_gap
                k_l, c_l = sf[L.LIMIT_K], sf[L.LIMIT_C]
                add_row(rf, ri, rows, L.SOFT, SPRING, i, -1, -math.inf, math.inf)
                unit_row(J, nz, ri, rows, i)
                rf[L.ROW_A, rows] = dt * c_l + dt * dt * k_l
                rf[L.ROW_B, rows] = -dt * k_l * penetration
                rows += 1
    return rows


@inline_kernel
def effort_command(si, sf, command, i):
    """Velocity i's effort command, saturated at its effort limit."""
    e = command[L.EFFORT, i]
    if si[L.EFFORT_LIMITS] == 1:
        limit = sf[si[L.PER_V_AT] + si[L.NV] + i]
        e = min(max(e, -limit), limit)
    return e


@kernel
def effort_rows(si, sf, command, tau, rf, ri, J, nz, rows):
    """SOFT rows (role EFFORT): a drive whose effort tau gave up part of its command earlier in
    this step takes back up to all of it while its joint is below its speed limit: the
    impulse a (vmax - u) (a stiff spring toward the limit: a set by scale_rows) within
    [0, (command - tau) dt] (mirrored for a negative command). The target speed waits in ROW_B."""
    dt = sf[L.DT]
    rv, lim = si[L.ROWS_V_AT], si[L.ROW_LIMITS_AT]
    for k in range(si[L.NROWS]):
        i = si[rv + k]
        wanted = effort_command(si, sf, command, i)
        if wanted == tau[i] or rows >= si[L.MAXROWS]:
            continue
        vmax = sf[lim + 4 * k + 2]
        lo, hi = (0.0, (wanted - tau[i]) * dt) if wanted > 0.0 else ((wanted - tau[i]) * dt, 0.0)
        add_row(rf, ri, rows, L.SOFT, EFFORT, i, -1, lo, hi)
        unit_row(J, nz, ri, rows, i)
        rf[L.ROW_B, rows] = vmax if wanted > 0.0 else -vmax
        rows += 1
    return rows


@kernel
def contact_rows(h, si, sf, q_free, v_free, rf, ri, J, nz, out, work, iwork, remembered, rows):
    """Three rows per candidate point below the ground at q*: the normal (SOFT) and the
    tangent pair (TANGENT, its disk's radius from the point's last normal impulse, or from the
    normal's law at v* when it was not touching). Their locations into ``out``."""
    body_int, body_float, ws = model_tables(h)
    nv, dt, npts = si[L.NV], sf[L.DT], si[L.NPOINTS]
    theta = 0.5 if si[L.RK4] == 1 else 1.0
    for p in range(npts):
        o = nv + L.OUT_COLS * p
        for c in range(L.OUT_COLS):
            out[o + c] = 0.0
    if si[L.GROUND] == 0 or npts == 0:
        return rows
    nvi = si[L.NV_INT]
    if si[L.DIRECT] == 1:
        body_placements(body_int, body_float, ws, q_free)
    else:
        qi, _, _, _, _, _ = mimic_scratch(work, si)
        expand_q(si, sf, q_free, qi)
        body_placements(body_int, body_float, ws, qi)
    point = vector(work, si, L.W_POINT, 4 + 3 * nvi)
    where = point[:4]
    J_int = table_of(work, si[L.W_POINT] + 4, 3, nvi)
    chain_dofs = vector(iwork, si, L.I_POINT_NZ, nv)
    k_c, c_c, mu = sf[L.CONTACT_K], sf[L.CONTACT_C], sf[L.MU]
    groups = si[L.BODY_POINTS_AT]
    for group in range(si[L.NBODY_POINTS]):
        if body_clear_of_ground(ws, sf, si, group):
            continue
        first, count = si[groups + 3 * group + 1], si[groups + 3 * group + 2]
        for p in range(first, first + count):
            contact_point(ws, sf, si, p, where)
            if not where[3] < 0.0 or rows + 3 > si[L.MAXROWS]:
                continue
            nnz = point_jacobian(body_int, body_float, ws, si[si[L.POINT_BODY_AT] + p],
                                 where[0], where[1], where[2], sf, J_int, chain_dofs)
            for d in range(3):
                add_row(rf, ri, rows + d, L.TANGENT if d > 0 else L.SOFT, CONTACT, -1, p,
                        -math.inf, math.inf)
                if si[L.DIRECT] == 1:
                    for k in range(nnz):
                        c = chain_dofs[k]
                        J[rows + d, c] = J_int[d, c]
                        nz[rows + d, k] = c
                    ri[L.ROW_NNZ, rows + d] = nnz
                else:
                    reduce_rows(si, sf, J_int[d], J, rows + d)
                    for c in range(nv):
                        nz[rows + d, c] = c
                    ri[L.ROW_NNZ, rows + d] = nv
            vn = 0.0
            for k in range(ri[L.ROW_NNZ, rows]):
                c = nz[rows, k]
                vn += J[rows, c] * v_free[c]
            a = theta * dt * dt * k_c + dt * c_c
            b = dt * k_c * (-where[3] + theta * dt * vn)
            rf[L.ROW_LO, rows], rf[L.ROW_A, rows], rf[L.ROW_B, rows] = 0.0, a, b
            normal = remembered[3 * p] if remembered[3 * p] > 0.0 else max(b - a * vn, 0.0)
            for d in (1, 2):
                ri[L.ROW_PARTNER, rows + d] = rows
                rf[L.ROW_FRIC, rows + d] = mu
                rf[L.ROW_RADIUS, rows + d] = mu * normal
            held = math.hypot(remembered[3 * p + 1], remembered[3 * p + 2])
            if remembered[3 * p] > 0.0 and held < 0.99 * mu * remembered[3 * p]:
                rf[L.ROW_MULT, rows + 1] = 1.0              # it stuck last step, using
                for d in (1, 2):                            # this share of its disk
                    rf[L.ROW_A, rows + d] = remembered[3 * p + d] / (mu * remembered[3 * p])
            o = nv + L.OUT_COLS * p
            out[o + L.OUT_AT], out[o + L.OUT_AT + 1], out[o + L.OUT_AT + 2] = \
                where[0], where[1], where[2]
            out[o + L.OUT_ACTIVE] = 1.0
            rows += 3
    return rows


@kernel
def equality_rows(h, si, sf, q_free, v_free, rf, ri, J, nz, work, rows):
    """LIMIT rows with lo = hi (friction 0: exact through their multipliers, as a joint held
    at a limit is), one per loop-closure row (RBDA 8.3): J_r = K_r(q*), held at
    u_r = theta K_r v* - phi_r(q*) / dt (the module docstring: the step then ends with the
    loop closed, and a drift left by the last step is gone two steps later). A row that K
    leaves empty (a planar loop's out-of-plane rows: redundant) holds nothing and is left out.
    Each multiplier is warm-started from the row's impulse in the last step."""
    m = si[L.NLOOP_ROWS]
    if m == 0:
        return rows
    body_int, body_float, ws = model_tables(h)
    loop_int, loop_float, _, _, _ = loop_tables(h)
    nv, dt = si[L.NV], sf[L.DT]
    theta = 0.5 if si[L.RK4] == 1 else 1.0
    phi, K = vector(work, si, L.W_LOOP_PHI, m), matrix(work, si, L.W_LOOP_K, m, nv)
    remembered = vector(work, si, L.W_LOOP_IMPULSE, m)
    body_placements(body_int, body_float, ws, q_free)
    loop_residual(body_int, body_float, ws, loop_int, loop_float, phi)
    loop_jacobian(body_int, body_float, ws, loop_int, loop_float, K)
    largest = 0.0
    for r in range(m):
        for c in range(nv):
            largest = max(largest, abs(K[r, c]))
    for r in range(m):
        if rows >= si[L.MAXROWS]:
            break
        row_size, u, nnz = 0.0, 0.0, 0
        J[rows, :] = 0.0            # K_r over the columns of the loop's two chains (the row
        for c in range(nv):         # cleared: its other entries are another step's)
            if K[r, c] != 0.0:
                J[rows, c] = K[r, c]
                nz[rows, nnz] = c
                nnz += 1
                u += K[r, c] * v_free[c]
                row_size = max(row_size, abs(K[r, c]))
        if not row_size > EMPTY_ROW * largest:
            continue
        u = theta * u - phi[r] / dt
        add_row(rf, ri, rows, L.LIMIT, EQUALITY, r, -1, u, u)      # (its unit: the K row)
        ri[L.ROW_NNZ, rows] = nnz
        rf[L.ROW_MULT, rows] = remembered[r]
        rows += 1
    return rows


# ---- 4. mass ----------------------------------------------------------------------------------
@kernel
def mass_stage(h, si, sf, q_free, v_free, M, W, Mv, work):
    """M = M(q*) (public coordinates), W = M + dt D, Mv = M v*. Returns a dynamics status."""
    nv, dt = si[L.NV], sf[L.DT]
    status = mass_matrix(h, si, sf, q_free, M, work)
    if status != OK:
        return status
    pv = si[L.PER_V_AT]
    for i in range(nv):
        s = 0.0
        for j in range(nv):
            W[i, j] = M[i, j]
            s += M[i, j] * v_free[j]
        Mv[i] = s
        if si[L.DAMPING] == 1:
            W[i, i] += dt * sf[pv + i]
    return OK


@kernel
def scale_rows(W, J, nz, rf, ri, nrows):
    """Each row's scale from W's diagonal (the Jacobi estimate of G_rr = J_r W^-1 J_r^T):
    a LIMIT row's regularisation LIMIT_REGULARISATION G_rr, an effort row's stiffness
    1 / (EFFORT_COMPLIANCE G_rr), a tangent
    pair's stick compliance STICK_COMPLIANCE G (the pair's mean, one compliance: isotropic
    friction)."""
    r = 0
    while r < nrows:
        kind = ri[L.ROW_KIND, r]
        span = 2 if kind == L.TANGENT else 1
        g = 0.0
        for t in range(span):
            for k in range(ri[L.ROW_NNZ, r + t]):
                c = nz[r + t, k]
                g += J[r + t, c] * J[r + t, c] / W[c, c]
        g /= span
        if kind == L.LIMIT:
            rf[L.ROW_R, r] = LIMIT_REGULARISATION * g
        elif ri[L.ROW_ROLE, r] == EFFORT:           # a stiff spring toward ROW_B
            rf[L.ROW_A, r] = 1.0 / (EFFORT_COMPLIANCE * g)
            rf[L.ROW_B, r] *= rf[L.ROW_A, r]
        elif kind == L.TANGENT:
            rf[L.ROW_R, r] = STICK_COMPLIANCE * g
        r += span


@inline_kernel
def speed_limit_held(si, sf, command, rf, ri, r):
    """(side, braking) of row r: side +1 (-1) where it is a speed-limit row holding its joint
    at +vmax (-vmax), the limit the joint's effort command pushes toward, 0 elsewhere; braking,
    the row's impulse beyond friction there (<= 0 at +vmax, >= 0 at -vmax: what the drive
    gives up)."""
    if ri[L.ROW_ROLE, r] != JOINT or ri[L.ROW_SPEED, r] == 0:
        return 0, 0.0
    piece, speed = ri[L.ROW_PIECE, r], ri[L.ROW_SPEED, r]
    lam, fric = rf[L.ROW_LAM, r], rf[L.ROW_FRIC, r]
    wanted = effort_command(si, sf, command, ri[L.ROW_UNIT, r])
    if piece == AT_HI and speed & 2 and wanted > 0.0:
        return 1, min(lam + fric, 0.0)
    if piece == AT_LO and speed & 1 and wanted < 0.0:
        return -1, max(lam - fric, 0.0)
    return 0, 0.0


@kernel
def held_effort_corrections(si, sf, command, tau, rf, ri, nrows, correction, g):
    """correction[i]: what drive i's effort should change by after a pass: its effort row's
    impulse taken back, plus, where its joint is held at the speed limit its command pushes
    toward, the limit row's braking beyond friction (negative: given up). g[i]: the joint's
    G_ii as a row says it (for the tolerance). Zero where neither row is."""
    dt = sf[L.DT]
    correction[:] = 0.0
    g[:] = 0.0
    for r in range(nrows):
        i = ri[L.ROW_UNIT, r]
        if ri[L.ROW_ROLE, r] == EFFORT:
            correction[i] += rf[L.ROW_LAM, r] / dt
            g[i] = max(g[i], 1.0 / (EFFORT_COMPLIANCE * rf[L.ROW_A, r]))
            continue
        side, braking = speed_limit_held(si, sf, command, rf, ri, r)
        if side != 0:
            correction[i] += braking / dt
            g[i] = max(g[i], rf[L.ROW_R, r] / LIMIT_REGULARISATION)


@kernel
def speed_limited_effort(si, sf, command, tau, rf, ri, nrows, tol_v, last):
    """tau, in place: each drive held at its joint's speed limit by the limit row, its effort
    pushing on, gives up the row's braking beyond friction (down to zero effort), and takes
    back its effort row's impulse (one correction per drive: both rows act on the same joint).
    A drive whose correction changed sign since the last pass (``last[:2 nv]``: its effort and
    correction then; 0 before the first) takes the secant's effort between the two instead:
    two strongly coupled joints answer an effort through the whole step otherwise than the
    impulse says, and the corrections alternate (give all up, take it back). Returns whether
    any effort changed by more than the solver can tell: a change whose speed change
    dt G_ii |d tau| exceeds tol_v."""
    dt, nv = sf[L.DT], si[L.NV]
    correction, g = last[2 * nv:3 * nv], last[3 * nv:4 * nv]
    held_effort_corrections(si, sf, command, tau, rf, ri, nrows, correction, g)
    changed = False
    for i in range(nv):                 # correction[i] becomes drive i's new effort
        c, new = correction[i], tau[i]
        if c != 0.0:
            new = tau[i] + c
            before, before_correction = last[i], last[nv + i]
            if before_correction * c < 0.0:                          # the secant's root
                new = tau[i] - c * (tau[i] - before) / (c - before_correction)
            wanted = effort_command(si, sf, command, i)   # (0 to the command, as it says)
            new = min(max(new, 0.0), wanted) if wanted > 0.0 else max(min(new, 0.0), wanted)
            last[nv + i] = c
            if dt * g[i] * abs(new - tau[i]) > tol_v:
                changed = True
        correction[i] = new
    if changed:       # (else tau stays that of the rows just solved: applied_efforts reads both)
        for i in range(nv):
            last[i], tau[i] = tau[i], correction[i]
    return changed


# ---- 6. integrate -----------------------------------------------------------------------------
@kernel
def applied_efforts(si, sf, command, tau, rf, ri, nrows, out):
    """out[:nv]: the effort command (saturated, less what was given up in earlier passes), plus
    the effort row's take-back, less the braking of the limit row at the speed limit the
    command pushes toward (beyond friction, down to zero effort: the rest is the limit's own
    braking, not the drive's), plus each PD drive's impulse."""
    nv, dt = si[L.NV], sf[L.DT]
    for i in range(nv):
        out[i] = tau[i]
    for r in range(nrows):
        if ri[L.ROW_ROLE, r] == EFFORT:
            out[ri[L.ROW_UNIT, r]] += rf[L.ROW_LAM, r] / dt
    for r in range(nrows):
        side, braking = speed_limit_held(si, sf, command, rf, ri, r)
        i = ri[L.ROW_UNIT, r]
        if side > 0:                # (down to zero effort, never the other way)
            out[i] = max(out[i] + braking / dt, 0.0)
        elif side < 0:
            out[i] = min(out[i] + braking / dt, 0.0)
    for r in range(nrows):
        if ri[L.ROW_ROLE, r] == DRIVE:
            out[ri[L.ROW_UNIT, r]] += rf[L.ROW_LAM, r] / dt


@kernel
def contact_forces(si, sf, rf, ri, nrows, out, remembered):
    """Each touching point's force (world, mean over the step) into out, and its impulses
    (normal, t1, t2) remembered for the next step's warm start."""
    nv, dt = si[L.NV], sf[L.DT]
    remembered[:] = 0.0
    r = 0
    while r < nrows:
        if ri[L.ROW_ROLE, r] != CONTACT:
            r += 1
            continue
        p = ri[L.ROW_POINT, r]
        o = nv + L.OUT_COLS * p + L.OUT_FORCE
        for d in range(3):
            lam = rf[L.ROW_LAM, r + d]
            remembered[3 * p + d] = lam
            n = L.NORMAL if d == 0 else (L.T1 if d == 1 else L.T2)
            for c in range(3):
                out[o + c] += lam / dt * sf[n + c]
        r += 3


@kernel
def carried_force(si, sf, J, nz, rf, ri, nrows, point_impulse, joint_impulse, drive_impulse,
                  force):
    """force = J^T lam / dt over the contact, joint and drive rows whose impulse has the sign
    it had the step before (a contact: its normal was there): the mean force they applied,
    which the next RK4 step carries through its stages. An impulse new this step (an impact,
    a stop, a stick turning to slip the other way) is not carried: it acts once. Not carried:
    the loop closures' (the closed dynamics makes them in the stages), the effort rows' (a
    take-back) and the spring mode's limits (its law takes the whole spring at q*)."""
    dt = sf[L.DT]
    force[:] = 0.0
    kept = False
    for r in range(nrows):
        role, lam = ri[L.ROW_ROLE, r], rf[L.ROW_LAM, r]
        if role == CONTACT:
            if ri[L.ROW_KIND, r] == L.SOFT:                 # (its tangent rows follow it)
                kept = lam > 0.0 and point_impulse[3 * ri[L.ROW_POINT, r]] > 0.0
        elif role == JOINT:
            kept = lam * joint_impulse[ri[L.ROW_UNIT, r]] > 0.0
        elif role == DRIVE:
            kept = lam * drive_impulse[ri[L.ROW_UNIT, r]] > 0.0
        else:
            continue
        if kept:
            for k in range(ri[L.ROW_NNZ, r]):
                c = nz[r, k]
                force[c] += J[r, c] * lam / dt


@kernel
def clamp_to_limits(si, sf, q_free, v_new, q_new):
    """A joint that crossed its limit in the step met the stop within the step: it ends
    inside, at the limit when it was stopped there (however short of it the mean-velocity
    position would leave it). Not in a closed loop: moving one joint alone would open its
    loop (by 1e-4 m on the parallel ankle's motors at 2 rad/s), so a joint there ends up to
    (1 - theta) dt |v*| past its limit, where its limit row holds it."""
    rv, rq, lim = si[L.ROWS_V_AT], si[L.ROWS_Q_AT], si[L.ROW_LIMITS_AT]
    for k in range(si[L.NROWS]):
        i, qi = si[rv + k], si[rq + k]
        lower, upper = sf[lim + 4 * k], sf[lim + 4 * k + 1]
        if q_free[qi] > upper:
            q_new[qi] = upper if abs(v_new[i]) <= 1e-9 else min(q_new[qi], upper)
        elif q_free[qi] < lower:
            q_new[qi] = lower if abs(v_new[i]) <= 1e-9 else max(q_new[qi], lower)


# ---- the step -------------------------------------------------------------------------------
@kernel
def velocity_tolerance(si, sf, v_free):
    """The solver's tolerance in velocity: solver_tolerance (1 + max |v*|)."""
    largest = 0.0
    for i in range(si[L.NV]):
        largest = max(largest, abs(v_free[i]))
    return sf[L.TOLERANCE] * (1.0 + largest)


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
def rows_and_solve(h, si, sf, q_free, v_free, command, tau, out, stats, work, iwork, rf, ri,
                   J, nz, reach, tolerance):
    """Stages 3-5 at (q*, v*): the rows (the joints' bounds within ``reach`` of v*), M and W,
    v+ (into W_V_NEW, to ``tolerance``: velocity_tolerance). Returns (step status, the number
    of rows)."""
    nv = si[L.NV]
    v_new = vector(work, si, L.W_V_NEW, nv)
    dv_last = vector(work, si, L.W_DV_LAST, nv)
    # 3. rows
    rows = joint_rows(si, sf, q_free, v_free, rf, ri, J, nz,
                      vector(work, si, L.W_JOINT_IMPULSE, nv), reach, 0)
    rows = drive_rows(si, sf, command, tau, q_free, v_free, rf, ri, J, nz, rows)
    if si[L.VELOCITY_LIMITS] == 1:
        rows = effort_rows(si, sf, command, tau, rf, ri, J, nz, rows)
    rows = contact_rows(h, si, sf, q_free, v_free, rf, ri, J, nz, out, work, iwork,
                        vector(work, si, L.W_POINT_IMPULSE, 3 * si[L.NPOINTS]), rows)
    rows = equality_rows(h, si, sf, q_free, v_free, rf, ri, J, nz, work, rows)
    carried = vector(work, si, L.W_CARRIED, nv)
    acts = False                            # damping, or forces carried to take back
    for i in range(nv):
        acts = acts or (si[L.DAMPING] == 1 and sf[si[L.PER_V_AT] + i] != 0.0) \
            or (si[L.RK4] == 1 and carried[i] != 0.0)
    if rows == 0 and not acts:              # nothing acts on v*
        v_new[:] = v_free
        return L.STEP_OK, 0
    # 4. mass
    M, W, H = matrix(work, si, L.W_M, nv, nv), matrix(work, si, L.W_W, nv, nv), \
        matrix(work, si, L.W_H, nv, nv)
    Mv = vector(work, si, L.W_MV, nv)
    if mass_stage(h, si, sf, q_free, v_free, M, W, Mv, work) != OK:
        return L.STEP_SINGULAR, rows
    if si[L.RK4] == 1:                      # the rows' forces that the smooth step carried are
        dt = sf[L.DT]                       # taken back: the rows' impulses are the whole of
        for i in range(nv):                 # them (M (v+ - v*) = J^T lam - dt carried)
            Mv[i] -= dt * carried[i]
    scale_rows(W, J, nz, rf, ri, rows)
    # 5. solve: from v* or from v* plus the last step's change, whichever costs less
    solver = vector(work, si, L.W_SOLVER, 4 * nv)
    g, d, start = solver[:nv], solver[nv:2 * nv], solver[2 * nv:3 * nv]
    for i in range(nv):
        v_new[i] = v_free[i]
        start[i] = v_free[i] + dv_last[i]
    factor_parent = si[si[L.FACTOR_PARENT_AT]:si[L.FACTOR_PARENT_AT] + nv]
    if (cost(W, factor_parent, Mv, J, nz, rf, ri, rows, start)
            < cost(W, factor_parent, Mv, J, nz, rf, ri, rows, v_new)):
        v_new[:] = start
    budget = si[L.ITERATIONS]
    taken = solve_rows(W, Mv, factor_parent, J, nz, rf, ri, rows, v_new, H, g, d, budget,
                       tolerance)
    if taken < 0:
        return L.STEP_SINGULAR, rows
    stats[L.STAT_ROWS] = rows
    stats[L.STAT_SOLVES] += 1
    stats[L.STAT_ITERATIONS] += min(taken, budget)
    stats[L.STAT_MAX_ITERATIONS] = max(stats[L.STAT_MAX_ITERATIONS], min(taken, budget))
    if taken > budget:
        stats[L.STAT_UNCONVERGED] += 1
    return L.STEP_OK, rows


@kernel
def constrained_step(h, si, sf, q, v, command, f_ext, out, stats, work, iwork):
    """Stages 2-5 under the efforts in W_TAU: (q*, v*), the rows, M and W, v+ (into W_V_NEW).
    Returns (step status, the number of rows)."""
    nv, nq = si[L.NV], si[L.NQ]
    q_free, v_free = vector(work, si, L.W_Q_FREE, nq), vector(work, si, L.W_V_FREE, nv)
    v_new, tau = vector(work, si, L.W_V_NEW, nv), vector(work, si, L.W_TAU, nv)
    # 2. smooth (RK4: with the forces the last step's rows carried through its stages)
    smooth_tau = tau
    if si[L.RK4] == 1:
        smooth_tau = vector(work, si, L.W_TAU_SMOOTH, nv)
        carried = vector(work, si, L.W_CARRIED, nv)
        for i in range(nv):
            smooth_tau[i] = tau[i] + carried[i]
    status = smooth_step(h, si, sf, q, v, smooth_tau, f_ext, q_free, v_free, work)
    if status != OK or not finite_state(si, sf, q_free, v_free):
        return L.STEP_DIVERGED, 0
    # 3-5, with the joints' bounds NEAR v*, then (when v+ crossed one left out) all within REACH
    rf, ri, J, nz = row_fields(work, iwork, si)
    tolerance = velocity_tolerance(si, sf, v_free)
    rows = 0
    for reach in (NEAR, REACH):
        status, rows = rows_and_solve(h, si, sf, q_free, v_free, command, tau, out, stats, work,
                                      iwork, rf, ri, J, nz, reach, tolerance)
        if status != L.STEP_OK or reach == REACH or not crosses_a_bound_left_out(
                si, sf, q_free, v_free, v_new, reach, tolerance):
            return status, rows
    return L.STEP_OK, rows


@kernel
def step(h, si, sf, q, v, command, f_ext, out, stats, work, iwork):
    """One step from (q, v) into the workspace's q+ and v+ (the module docstring). Returns a
    step status."""
    nv, nq, dt = si[L.NV], si[L.NQ], sf[L.DT]
    theta = 0.5 if si[L.RK4] == 1 else 1.0
    q_free, v_free = vector(work, si, L.W_Q_FREE, nq), vector(work, si, L.W_V_FREE, nv)
    q_new, v_new = vector(work, si, L.W_Q_NEW, nq), vector(work, si, L.W_V_NEW, nv)
    tau, dv = vector(work, si, L.W_TAU, nv), vector(work, si, L.W_DV, nv)
    dv_last = vector(work, si, L.W_DV_LAST, nv)
    joint_impulse = vector(work, si, L.W_JOINT_IMPULSE, nv)
    drive_impulse = vector(work, si, L.W_DRIVE_IMPULSE, nv)
    rf, ri, J, nz = row_fields(work, iwork, si)
    unconverged = stats[L.STAT_UNCONVERGED]
    # 1. saturate
    for i in range(nv):
        tau[i] = effort_command(si, sf, command, i)
    # 2-5, again with what the drives give up at their speed limits
    last = vector(work, si, L.W_SPEED_PASS, 4 * nv)
    last[:] = 0.0
    for attempt in range(SPEED_LIMIT_PASSES + 1):
        status, rows = constrained_step(h, si, sf, q, v, command, f_ext, out, stats, work,
                                        iwork)
        if status != L.STEP_OK:
            return status
        if (attempt == SPEED_LIMIT_PASSES or si[L.VELOCITY_LIMITS] == 0
                or not speed_limited_effort(si, sf, command, tau, rf, ri, rows, velocity_tolerance(
                    si, sf, vector(work, si, L.W_V_FREE, nv)), last)):
            break
    # 6. integrate
    applied_efforts(si, sf, command, tau, rf, ri, rows, out)
    # (carried_force reads the last step's impulses: before contact_forces and the loop below
    # overwrite them)
    carried = vector(work, si, L.W_CARRIED, nv)
    if si[L.RK4] == 1 and stats[L.STAT_UNCONVERGED] == unconverged:
        carried_force(si, sf, J, nz, rf, ri, rows,
                      vector(work, si, L.W_POINT_IMPULSE, 3 * si[L.NPOINTS]), joint_impulse,
                      drive_impulse, carried)
    else:                       # (an unconverged solve's impulses are not carried)
        carried[:] = 0.0
    contact_forces(si, sf, rf, ri, rows, out, vector(work, si, L.W_POINT_IMPULSE,
                                                     3 * si[L.NPOINTS]))
    loop_impulse = vector(work, si, L.W_LOOP_IMPULSE, si[L.NLOOP_ROWS])
    joint_impulse[:] = 0.0
    loop_impulse[:] = 0.0
    drive_impulse[:] = 0.0
    for r in range(rows):
        role = ri[L.ROW_ROLE, r]
        if role == JOINT:
            joint_impulse[ri[L.ROW_UNIT, r]] = rf[L.ROW_LAM, r]
        elif role == EQUALITY:
            loop_impulse[ri[L.ROW_UNIT, r]] = rf[L.ROW_LAM, r]
        elif role == DRIVE:
            drive_impulse[ri[L.ROW_UNIT, r]] = rf[L.ROW_LAM, r]
    for i in range(nv):
        dv[i] = v_new[i] - v_free[i]
        dv_last[i] = dv[i]
    status = integrate_public(h, si, sf, q_free, dv, theta * dt, q_new, work)
    if si[L.POSITION_LIMITS] == 0 and si[L.NLOOP_ROWS] == 0:
        clamp_to_limits(si, sf, q_free, v_new, q_new)
    return L.STEP_OK if status == OK else L.STEP_DIVERGED


@kernel
def simulate(h, si, sf, q, v, command, f_ext, out, stats, work, iwork, steps):
    """``steps`` steps from (q, v), in place. Returns STEP_OK, or the status of the first step
    that failed, with (q, v) as they were before it."""
    nv, nq = si[L.NV], si[L.NQ]
    if nv == 0:                             # (a fixed robot without joints: nothing moves)
        return L.STEP_OK
    # borrowed (the caller keeps them alive): the stages' many views of them then cost no
    # reference counting (an atomic increment and decrement each, a third of the step)
    si, sf, q, v, command, f_ext = borrow(si), borrow(sf), borrow(q), borrow(v), \
        borrow(command), borrow(f_ext)
    out, stats, work, iwork = borrow(out), borrow(stats), borrow(work), borrow(iwork)
    q_new, v_new = vector(work, si, L.W_Q_NEW, nq), vector(work, si, L.W_V_NEW, nv)
    for _ in range(steps):
        status = step(h, si, sf, q, v, command, f_ext, out, stats, work, iwork)
        if status != L.STEP_OK:
            return status
        if not finite_state(si, sf, q_new, v_new):
            return L.STEP_DIVERGED
        q[:] = q_new
        v[:] = v_new
        stats[L.STAT_STEPS] += 1
    return L.STEP_OK


@kernel
def point_locations(h, si, sf, q, work, out):
    """out (NPOINTS x 4): each contact candidate's lowest point (world) and its gap to the
    ground, at q."""
    body_int, body_float, ws = model_tables(h)
    if si[L.DIRECT] == 1:
        body_placements(body_int, body_float, ws, q)
    else:
        qi, _, _, _, _, _ = mimic_scratch(work, si)
        expand_q(si, sf, q, qi)
        body_placements(body_int, body_float, ws, qi)
    for p in range(si[L.NPOINTS]):
        contact_point(ws, sf, si, p, out[p])
