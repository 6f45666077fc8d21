"""The public functions of closed kinematic loops (RBDA chapter 8; the kernels are loops.py).

A URDF keeps its tree; each ``<constraint>`` closes a loop (``model.constraint_names``, rows
3 ball, 5 revolute, 6 fixed; ``model.constraints``). On the tree's coordinates:

    constraint_residual(model, q)            phi: zero when every loop is closed
    constraint_jacobian(model, q)            K (rows x nv): K v = 0 keeps the loops closed
    constraint_bias(model, q, v)             k: K qdd = k along the motion (k = -Kdot v)
    close_loops(model, q, hold)              q on the closed configuration, ``hold`` unchanged
    constrained_forward_dynamics(...)        qdd of the closed system
    constrained_inverse_dynamics(...)        the actuated joints' torques of a closed motion
    mobility(model)                          the closed system's degrees of freedom
    loop_joints(model)                       the joints on some loop (only they close one)

Every function but close_loops' iteration runs compiled kernels; each takes a leading batch
axis (N configurations) and ``data=``, as the rest of the core. A model with mimic joints maps
through its mimic map (K G, G^T tau) and solves the small dense systems here.
"""
import math

import numpy as np

from .api import (_direct, _empty, _rnea, difference, forward_dynamics, integrate, interpolate,
                  inverse_dynamics, mass_matrix)
from .arguments import (arrays, batch_of, external_wrenches, full_q, full_v, raise_status, run,
                        workspace)
from .checks import SINGULAR
from .entry_points import (closed_forward_dynamics_batch, closed_forward_dynamics_entry,
                           closed_inverse_dynamics_batch, closed_inverse_dynamics_entry,
                           loop_bias_batch, loop_bias_entry, loop_jacobian_batch,
                           loop_jacobian_entry, loop_residual_batch, loop_residual_entry)
from .loops import RANK_TOLERANCE, balance_passive, solve_semidefinite

#: close_loops: the residual (m, rad) at which a loop counts as closed, and its iterations
CLOSE_TOLERANCE = 1e-12
CLOSE_ITERATIONS = 50
#: close_loops: no coordinate moves more than this in one Newton step (rad or m): a full
#: Gauss-Newton step from far away can land on a loop's other assembly mode (a crossed four-bar)
MAX_STEP = 0.2
#: close_loops' walk: the held joints move from a closed configuration to the asked one in
#: steps of at most this much (rad or m), the loops closed after each
WALK_STEP = 0.05
#: Newton iterations of one step of the walk (it starts 0.05 away: a few are enough; where the
#: loops stop closing it gives up early)
WALK_ITERATIONS = 10
#: close_loops: rad a loop's joints are turned by when neither the neutral pose nor q closes
#: (a dead centre, where the residual's gradient vanishes)
KICK = 0.1
#: close_loops' last resort when nothing else closed: the free loop joints turned by these
#: (rad, alternately signed) as Newton's starts
SEARCH_TURNS = (1.0, -1.0, 2.0, -2.0, 3.0, -3.0)
#: constrained_inverse_dynamics: a passive joint left with more than this times
#: max(1, the largest torque) unbalanced means the actuated joints cannot produce the motion
BALANCE_TOLERANCE = 1e-6
#: mobility: singular values of K below this times its largest count as zero
MOBILITY_TOLERANCE = 1e-9


def constraint_residual(model, q, data=None):
    """phi (rows): every constraint's residual, in ``model.constraints`` order (rows ``row`` to
    ``row + rows - 1`` each), zero when its loop is closed: p_B - p_A (the frames' origins,
    world axes, m); then for a revolute constraint the rotation taking axis A onto axis B
    across two unit vectors normal to axis A (rad), for a fixed one log(R_B R_A^T) (world,
    rad). (N, rows) for N configurations; (0,) for a model without constraints."""
    d = workspace(model, data)
    (q,) = arrays(model, q=q)
    phi = np.empty(q.shape[:-1] + (model.constraint_rows,))
    if model.constraint_rows:
        run(loop_residual_entry, loop_residual_batch, d, batch_of(q), ('q',), full_q(model, q),
            phi)
    return phi


def constraint_jacobian(model, q, data=None):
    """K (rows x nv): K v = 0 is the velocity every loop allows (v_B - v_A of the frames'
    origins, world axes; the relative angular velocity across a revolute's axis, all of it
    for a fixed one). The exact Jacobian of constraint_residual's linear rows, and of its
    rotation rows where the loops are closed. (N, rows, nv) for N configurations."""
    d = workspace(model, data)
    (q,) = arrays(model, q=q)
    K = np.empty(q.shape[:-1] + (model.constraint_rows, model.nv_full))
    if model.constraint_rows:
        run(loop_jacobian_entry, loop_jacobian_batch, d, batch_of(q), ('q',), full_q(model, q), K)
    return K @ model.mimic_map if model.has_mimic else K


def constraint_bias(model, q, v, data=None):
    """k (rows) with K qdd = k: what the loops ask of the accelerations at velocity v,
    -Kdot v, from the frames' classical accelerations at qdd = 0 (RBDA 8.15). (N, rows) for
    N states."""
    d = workspace(model, data)
    q, v = arrays(model, q=q, v=v)
    k = np.empty(q.shape[:-1] + (model.constraint_rows,))
    if model.constraint_rows:
        run(loop_bias_entry, loop_bias_batch, d, batch_of(q), ('q', 'v'), full_q(model, q),
            full_v(model, v), k)
    return k


# ---- forward and inverse dynamics ---------------------------------------------------------------
def constrained_forward_dynamics(model, q, v, tau, f_ext=None, baumgarte=None, data=None):
    """qdd of the closed system: M qdd + C v + g = tau + sum J^T f_ext + K^T lam, with
    K qdd = k (RBDA 8.6). ``baumgarte=(alpha, beta)`` (1/s) adds Baumgarte's stabilisation,
    K qdd = k - 2 alpha K v - beta^2 phi (RBDA 8.22; None or (0, 0): none, the exact
    dynamics).

    Solved as RBDA 8.5's method 2 over the CRBA's sparse factor of M: lam from
    (K M^-1 K^T) lam = k - K M^-1 (tau - C v - g), then qdd. Redundant constraint rows (a
    planar four-bar closed by a 3-D revolute) leave lam undetermined and qdd unique: the solve
    for lam is rank-revealing (L D L^T with diagonal pivoting; pivots below RANK_TOLERANCE
    times the largest are dependent rows, whose lam is 0). A model without constraints gives
    forward_dynamics. FloatingPointError when the tree's M is singular."""
    d = model._thread.data if data is None else workspace(model, data)
    if f_ext is None and baumgarte is None and model.direct:     # (one compiled call)
        qdd = _empty(model.nv)
        if not _direct(closed_forward_dynamics_entry, d.handle, q, v, tau, d.zero_fext, 0.0, 0.0,
                       qdd):
            return qdd
    q, v, tau = arrays(model, q=q, v=v, tau=tau)
    alpha, beta = _gains(baumgarte)
    batch = batch_of(q)
    if not model.constraint_rows:
        return forward_dynamics(model, q, v, tau, f_ext=f_ext, method='crba', data=d)
    if model.has_mimic:
        return _per_row(lambda *x: _forward_dynamics_mimic(model, d, *x, f_ext, alpha, beta),
                        q, v, tau)
    fext = external_wrenches(model, d, f_ext, batch)
    qdd = np.empty_like(v)
    run(closed_forward_dynamics_entry, closed_forward_dynamics_batch, d, batch, ('q', 'v', 'tau'),
        q, v, tau, fext, alpha, beta, qdd)
    return qdd


def _gains(baumgarte):
    if baumgarte is None:
        return 0.0, 0.0
    try:
        alpha, beta = (float(x) for x in baumgarte)
    except (TypeError, ValueError):
        raise ValueError(f'baumgarte must be two numbers (alpha, beta) in 1/s, got '
                         f'{baumgarte!r}') from None
    if not (np.isfinite(alpha) and np.isfinite(beta) and alpha >= 0 and beta >= 0):
        raise ValueError(f'baumgarte gains must be finite and >= 0, got {(alpha, beta)}')
    return alpha, beta


def _per_row(function, *arguments):
    """``function`` on one configuration, or row by row of a batch (stacked)."""
    if arguments[0].ndim == 1:
        return function(*arguments)
    return np.stack([function(*row) for row in zip(*arguments)])


def _forward_dynamics_mimic(model, d, q, v, tau, f_ext, alpha, beta):
    """The closed system's qdd in the public coordinates of a model with mimic joints:
    M = G^T M_int G, K G, the same method as the kernel's, dense."""
    M = mass_matrix(model, q, data=d)
    bias = _rnea(model, d, q, v, np.zeros_like(v), f_ext)
    if not np.all(np.isfinite(tau)):
        raise ValueError('tau contains NaN or inf')
    K = constraint_jacobian(model, q, data=d)
    k = constraint_bias(model, q, v, data=d)
    if alpha or beta:
        k = k - 2.0 * alpha * (K @ v) - beta * beta * constraint_residual(model, q, data=d)
    try:
        factor = np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        raise_status(SINGULAR, (), False)
    qdd0 = _cho_solve(factor, tau - bias)
    Y = _cho_solve(factor, K.T)
    A = np.ascontiguousarray(K @ Y)
    lam = np.empty(len(k))
    solve_semidefinite(A, np.ascontiguousarray(k - K @ qdd0), lam,
                       np.empty(len(k), dtype=np.int64))
    return qdd0 + Y @ lam


def _cho_solve(L, b):
    return np.linalg.solve(L.T, np.linalg.solve(L, b))


def constrained_inverse_dynamics(model, q, v, a, actuated=None, f_ext=None, data=None):
    """The torques of the actuated joints (in ``actuated``'s order; default
    ``model.actuated_joints``, from the URDF's <transmission> and <ros2_control>) that
    produce the closed system's motion (q, v, a): with v = a = 0, the gravity compensation at
    the motors. (q, v, a) must be a motion the loops allow (q closed, K v = 0, K a = k: see
    close_loops, constraint_jacobian, constraint_bias).

    RBDA 8.12: the tree's torques tau_ID = ID(q, v, a, f_ext) must be S u + K^T lam, u the
    actuated joints' torques, lam the loops' forces. lam balances the passive joints,
    K_P^T lam = tau_ID,P (of least norm when several do), then u = tau_ID,A - K_A^T lam.
    With a floating base the base counts as driven (by the contacts, with whatever wrench
    the motion needs, as inverse_dynamics' first six torques). ValueError when the actuated
    joints cannot produce the motion (a passive joint left unbalanced: under-actuated) or
    name no joint that owns a coordinate. With more actuated joints than the closed system
    has degrees of freedom (redundant actuation) the answer is the one whose loop forces
    have the least norm. (N, len(actuated)) for N states."""
    d = model._thread.data if data is None else workspace(model, data)
    plan = _actuation(model, actuated)
    if f_ext is None and model.direct:              # (one compiled call)
        tau = _empty(model.nv)
        if not _direct(closed_inverse_dynamics_entry, d.handle, q, v, a, d.zero_fext, plan.driven,
                       tau):
            left = tau[plan.passive]
            if left.size and np.abs(left).max() > BALANCE_TOLERANCE * max(1.0, np.abs(tau).max()):
                _unbalanced(model, tau, plan)
            return tau[plan.columns]
    q, v, a = arrays(model, q=q, v=v, a=a)
    columns, driven = plan.columns, plan.driven
    batch = batch_of(q)
    if not model.constraint_rows:
        tau = inverse_dynamics(model, q, v, a, f_ext=f_ext, data=d)
    elif model.has_mimic:
        tau = _per_row(lambda *x: _inverse_dynamics_mimic(model, d, *x, f_ext, driven), q, v, a)
    else:
        fext = external_wrenches(model, d, f_ext, batch)
        tau = np.empty_like(v)
        run(closed_inverse_dynamics_entry, closed_inverse_dynamics_batch, d, batch,
            ('q', 'v', 'a'), q, v, a, fext, driven, tau)
    for n, row in enumerate(tau.reshape(-1, model.nv)):
        left = row[plan.passive]
        if left.size and np.abs(left).max() > BALANCE_TOLERANCE * max(1.0, np.abs(row).max()):
            _unbalanced(model, row, plan, n if tau.ndim == 2 else None)
    return tau[..., columns]


class _Actuation:
    """The actuated joints' names, their public velocity columns, the driven mask (public nv,
    float: what the kernel reads) and the passive columns."""
    __slots__ = ('names', 'columns', 'driven', 'passive')

    def __init__(self, names, columns, driven):
        self.names, self.columns, self.driven = names, columns, driven
        self.passive = np.flatnonzero(driven == 0.0)


def _actuation(model, actuated):
    """The _Actuation of ``actuated`` (None: model.actuated_joints, made once per model); the
    floating base is driven (by the contacts) whether named or not."""
    if actuated is None:
        plan = model.__dict__.get('_actuation_plan')
        if plan is None:
            plan = model._actuation_plan = _actuation(model, list(model.actuated_joints))
        return plan
    names = list([actuated] if isinstance(actuated, str) else actuated)
    if not names:
        raise ValueError(f'no actuated joints: {model.name!r} names none in a <transmission> or '
                         '<ros2_control> block; pass actuated=[joint names]')
    driven = np.zeros(model.nv)
    if model.floating_base:
        driven[:6] = 1.0
    columns, seen = [], set()
    for name in names:
        info = model.joint.get(name)
        if info is None or info.v_index is None or name in seen:
            why = ('is named twice' if name in seen else
                   'is not a joint' if info is None else
                   f'has no coordinate of its own ({"a mimic joint" if info.mimic else info.type})')
            raise ValueError(f'actuated joint {name!r} {why}; actuated joints are joints that own '
                             f'a coordinate: {", ".join(model.joint_names[:8])}'
                             f'{", ..." if len(model.joint_names) > 8 else ""}')
        seen.add(name)
        columns.extend(range(info.v_index, info.v_index + info.nv))
        driven[info.v_index:info.v_index + info.nv] = 1.0
    return _Actuation(names, np.array(columns, dtype=np.int64), driven)


def _inverse_dynamics_mimic(model, d, q, v, a, f_ext, driven):
    tau = inverse_dynamics(model, q, v, a, f_ext=f_ext, data=d)
    K = np.ascontiguousarray(constraint_jacobian(model, q, data=d))
    n, rows = model.nv, model.constraint_rows
    balance_passive(K, tau, driven, np.empty((n, n)), np.empty(n), np.empty(n), np.empty(rows),
                    np.empty(n, dtype=np.int64))
    return tau


def _unbalanced(model, tau, plan, row=None):
    """ValueError naming the passive joint the loops leave most unbalanced (tau: one row of
    the kernel's result, the unbalanced torques on the passive columns)."""
    left = np.abs(tau[plan.passive])
    worst = int(plan.passive[np.argmax(left)])
    joint = next(j.name for j in model.joints if j.v_index is not None
                 and j.v_index <= worst < j.v_index + j.nv)
    where = f' (configuration {row} of the batch)' if row is not None else ''
    raise ValueError(f'the actuated joints ({", ".join(plan.names)}) cannot produce this motion '
                     f'of the closed system: passive joint {joint!r} is left with '
                     f'{left.max():.3g} N m (N) the loops cannot carry{where} '
                     '(under-actuated: actuate more joints; a dead centre, where the motors '
                     'lose their hold on a loop: move off that pose; or q, v, a that open the '
                     'loops)')


# ---- positions ------------------------------------------------------------------------------------
def loop_joints(model):
    """The names of the joints on some loop: those on the tree path between a constraint's two
    links. Only they can close a loop; the others (a floating base, the joints above a loop)
    move a loop whole."""
    up = {j.child: j for j in model.joints}

    def chain(link):
        names = []
        while link in up:
            names.append(up[link].name)
            link = up[link].parent
        return names
    joints = set()
    for c in model.constraints:
        joints |= set(chain(c.parent)) ^ set(chain(c.child))
    return joints


def passive_joints(model):
    """The names of the loops' joints that follow the motors: on a loop (loop_joints), not
    actuated. Nothing commands or sets them; the loops decide where they are."""
    return frozenset(loop_joints(model) - set(model.actuated_joints)) if model.constraints \
        else frozenset()


def close_loops(model, q, hold, tolerance=CLOSE_TOLERANCE, max_iterations=CLOSE_ITERATIONS,
                data=None, start=None, search=True):
    """q on the closed configuration: the joints named in ``hold`` unchanged, and every joint
    on no loop (loop_joints: a floating base, the joints above a loop move a loop whole), the
    loops' other joints solved. (N, nq) for N configurations, each closed on its own.

    Near a closed configuration (Newton's method from q converges with no loop joint moved
    more than MAX_STEP) the result is the one nearest q (Gauss-Newton, least-norm steps, so
    redundant rows do no harm). Farther, q's loop joints are no guide, and a loop closed in one jump can
    land on its mirror image (a crossed four-bar, a knee bent the wrong way): the held joints
    then walk to q's from a closed configuration, ``start`` (default: the neutral configuration,
    its loops closed; else that pose with the loops' revolute joints turned by KICK, a dead
    centre left; else q's own), in steps of at most WALK_STEP, the loops closed after each,
    so that the result is on that configuration's branch (assembly mode); where that way is
    barred (a pose between the two where the loops cannot close), Newton's method from q, its
    loop joints turned by up to SEARCH_TURNS if need be. ``search=False`` (a node's messages)
    tries no such start: a pose the parallel ankle's motors cannot reach is then refused in
    ~10 ms, not ~35. A solved revolute angle is then moved by whole turns into
    its limits (or to the turn nearest q's).

    ValueError naming the constraint that stays most open, and by how much, when it cannot
    close (unreachable with ``hold``, or a pose where the loops lock). A model without
    constraints returns q."""
    (q,) = arrays(model, q=q)
    d = workspace(model, data)
    held = set()
    for name in ([hold] if isinstance(hold, str) else list(hold)):
        info = model.joint.get(name)
        if info is None or (info.v_index is None and info.type != 'fixed' and info.mimic is None):
            raise ValueError(f'close_loops: hold names {name!r}, which is not a joint of '
                             f'{model.name!r}')
        held.add(name)
    if not model.constraint_rows:
        return q.copy()
    on_loops = loop_joints(model)
    moving = [j for j in model.joints if j.v_index is not None and j.name in on_loops]
    free = [j for j in moving if j.name not in held]
    walking = [j for j in moving if j.name in held]
    if start is not None:
        (start,) = arrays(model, q=start)
    closing = _Closing(model, d, free, moving, walking, tolerance, max_iterations, bool(held),
                       search)
    if q.ndim == 2:     # (``start``: one for all, or one per configuration)
        return np.stack([closing.close(row, start if start is None or start.ndim == 1
                                       else start[n], n) for n, row in enumerate(q)])
    return closing.close(q, start, None)


def _v_columns(joints):
    return np.array([i for j in joints for i in range(j.v_index, j.v_index + j.nv)], dtype=int)


class _Closing:
    """close_loops for one model and one choice of held joints: ``free`` the loop joints it
    solves, ``moving`` every loop joint, ``walking`` the held ones on loops."""

    def __init__(self, model, d, free, moving, walking, tolerance, max_iterations, held_any,
                 search=True):
        self.model, self.d, self.search = model, d, search
        self.free, self.walking = free, walking
        self.free_v, self.moving_v = _v_columns(free), _v_columns(moving)
        self.free_q = np.array([i for j in free for i in range(j.q_index, j.q_index + j.nq)],
                               dtype=int)
        self.tolerance, self.max_iterations, self.held_any = tolerance, max_iterations, held_any

    def close(self, q, start, row):
        model, d = self.model, self.d
        closed, phi, error = self.newton(q, self.free_v)
        found = error <= self.tolerance
        moved = np.abs(difference(model, q, closed, data=d)[self.free_v]).max(initial=0.0)
        if found and (moved <= MAX_STEP or not self.walking):
            return self.turns(closed, q)      # (nothing held on the loops: nothing to walk)
        # far from a closed configuration: walk the held joints there from a closed one
        anchor = start
        if anchor is None:
            neutral = q.copy()
            for j in self.free + self.walking:
                neutral[j.q_index:j.q_index + j.nq] = model.q_neutral[j.q_index:j.q_index + j.nq]
            # the neutral pose's branch; else that pose turned a little (a four-bar drawn
            # straight at zero is a dead centre Newton cannot leave); else q's own
            moving = self.free + self.walking
            for guess in (neutral, self.kicked(neutral, KICK, moving),
                          self.kicked(neutral, -KICK, moving), q):
                anchor, _, anchor_error = self.newton(guess, self.moving_v)
                if anchor_error <= self.tolerance:
                    break
            else:
                anchor = None
        if anchor is not None:
            goal = anchor.copy()
            for j in self.walking:
                goal[j.q_index:j.q_index + j.nq] = q[j.q_index:j.q_index + j.nq]
            distance = np.abs(difference(model, anchor, goal, data=d)).max(initial=0.0)
            steps = max(1, math.ceil(distance / WALK_STEP))
            walked = anchor
            for k in range(1, steps + 1):
                x = interpolate(model, anchor, goal, k / steps, data=d)
                x[self.free_q] = walked[self.free_q]
                walked, phi, error = self.newton(x, self.free_v, WALK_ITERATIONS)
                if error > self.tolerance:
                    break
            else:
                return self.turns(walked, q)
        # no closed configuration to walk from, or no way from it (a linkage whose motors
        # reach q's pose only through poses that do not close): Newton's from q, or from q's
        # loop joints turned (a dead centre; a start in no closed configuration's basin)
        for angle in (KICK, -KICK) + SEARCH_TURNS if self.search else ():
            if found:
                break
            closed, _, error = self.newton(self.kicked(q, angle, self.free), self.free_v)
            found = error <= self.tolerance
        if found:
            return self.turns(closed, q)
        info = max(model.constraints, key=lambda c: np.abs(phi[c.row:c.row + c.rows]).max())
        part = phi[info.row:info.row + info.rows]
        gap = np.linalg.norm(part[:3])
        turn = f' and {np.linalg.norm(part[3:]):.3g} rad' if info.rows > 3 else ''
        where = f' (configuration {row} of the batch)' if row is not None else ''
        held = ' with the held joints where they are' if self.held_any else ''
        raise ValueError(f'close_loops: constraint {info.name!r} ({info.parent} - {info.child}) '
                         f'stays open by {gap:.3g} m{turn}{where} where the search stopped: no '
                         f'closed configuration near q{held}')

    def newton(self, q, columns, iterations=None):
        """(q, phi, its largest entry): Gauss-Newton over
        ``columns`` with least-norm steps, each halved until the residual falls; at most
        ``iterations`` (default: max_iterations)."""
        model, d = self.model, self.d
        q = q.copy()
        phi = constraint_residual(model, q, data=d)
        error = np.abs(phi).max()
        for _ in range(self.max_iterations if iterations is None else iterations):
            if error <= self.tolerance or not len(columns):
                break
            K = constraint_jacobian(model, q, data=d)[:, columns]
            step = np.zeros(model.nv)
            step[columns] = -np.linalg.lstsq(K, phi, rcond=1e-12)[0]
            biggest = np.abs(step).max()
            if biggest > MAX_STEP:
                step *= MAX_STEP / biggest
            for _ in range(30):                 # halve until the residual falls
                trial = integrate(model, q, step, 1.0, data=d)
                trial_phi = constraint_residual(model, trial, data=d)
                trial_error = np.abs(trial_phi).max()
                if trial_error < error:
                    break
                step *= 0.5
            else:
                break
            q, phi, error = trial, trial_phi, trial_error
        return q, phi, error

    def kicked(self, q, angle, joints):
        """q with the revolute ones of ``joints`` turned by +-angle, alternately."""
        q = q.copy()
        sign = 1.0
        for j in joints:
            if j.type in ('revolute', 'continuous') and j.nq == 1:
                q[j.q_index] += sign * angle
                sign = -sign
        return q

    def turns(self, closed, q):
        """The solved revolute angles moved by whole turns into their limits, else to the turn
        nearest q's (the same pose)."""
        model = self.model
        for j in self.free:
            if j.type not in ('revolute', 'continuous') or j.nq != 1:
                continue
            i = j.q_index
            angle, lower, upper = closed[i], model.lower_limits[i], model.upper_limits[i]
            turn = 2.0 * math.pi
            shift = round((q[i] - angle) / turn) * turn
            if math.isfinite(lower) and math.isfinite(upper) and not lower <= angle <= upper:
                inside = math.ceil((lower - angle) / turn) * turn
                if angle + inside <= upper:
                    shift = inside
            closed[i] = angle + shift
        return closed


def mobility(model, q=None, data=None):
    """The closed system's degrees of freedom: nv minus the rank of the constraint Jacobian
    at q closed first (close_loops with nothing held; q defaults to the neutral
    configuration). A model without constraints: nv. ValueError when q does not close."""
    if not model.constraint_rows:
        return model.nv
    q = close_loops(model, model.q_neutral if q is None else q, [], data=data)
    return model.nv - jacobian_rank(constraint_jacobian(model, q, data=data))


def jacobian_rank(K):
    """The numerical rank of a constraint Jacobian (or of some of its columns): its singular
    values above MOBILITY_TOLERANCE times the largest."""
    s = np.linalg.svd(K, compute_uv=False)
    return int(np.sum(s > MOBILITY_TOLERANCE * s.max())) if s.size and s.max() > 0 else 0


__all__ = ['constraint_residual', 'constraint_jacobian', 'constraint_bias', 'close_loops',
           'loop_joints', 'passive_joints',
           'constrained_forward_dynamics', 'constrained_inverse_dynamics', 'mobility',
           'RANK_TOLERANCE']
