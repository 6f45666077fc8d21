"""The simulator's step as it was before it was compiled (rbd_ros at b7b3bb9: numpy, public
API calls, and its projected Gauss-Seidel in plain Python): the reference that the compiled
step (rbd_ros/simulation/step.py) must reproduce to ~1e-12 wherever the physics did not
change (effort commands, damping, friction, limits, drive speed limits, no contacts).
Test-only; slow (interpreted)."""
from __future__ import annotations

import dataclasses

import numpy as np

import rbd_ros.dynamics as rbd

def sweep(G, v, lam, lo, hi, friction_impulse):
    """One Gauss-Seidel pass over the rows, in place; the largest velocity change."""
    n = v.shape[0]
    change = 0.0
    for i in range(n):
        g = G[i, i]
        if not g > 0.0:
            continue
        free = v[i] - g * lam[i]                        # this row's impulse taken out
        stop = -free / g                                # what would stop the joint
        f = min(max(stop, -friction_impulse[i]), friction_impulse[i])
        target = min(max(free + g * f, lo[i]), hi[i]) if lo[i] <= hi[i] else lo[i]
        new = (target - free) / g
        delta = new - lam[i]
        if delta != 0.0:
            for k in range(n):
                v[k] += G[k, i] * delta
            lam[i] = new
            change = max(change, abs(delta) * g)
    return change


def polish(G, v0, lam, v, lo, hi, friction_impulse, lam_new, v_new):
    """The exact solution for the rows' present roles into (lam_new, v_new); False when it
    cannot be formed."""
    n = v0.shape[0]
    held = np.zeros(n, dtype=np.int64)
    target = np.zeros(n)
    nh = 0
    for i in range(n):
        at_lo = v[i] <= lo[i] + 1e-12
        at_hi = v[i] >= hi[i] - 1e-12
        sliding = (abs(lam[i]) >= friction_impulse[i] * (1.0 - 1e-9)
                   and friction_impulse[i] > 0.0 and not at_lo and not at_hi)
        target[i] = lo[i] if at_lo else (hi[i] if at_hi else min(max(0.0, lo[i]), hi[i]))
        if sliding:
            lam_new[i] = friction_impulse[i] if lam[i] > 0.0 else -friction_impulse[i]
        else:
            lam_new[i] = 0.0
            held[nh] = i
            nh += 1
    if nh > 0:
        A = np.empty((nh, nh))
        rhs = np.empty(nh)
        for a in range(nh):
            i = held[a]
            s = target[i] - v0[i]
            for j in range(n):          # the sliding rows' known impulses (held ones are 0)
                s -= G[i, j] * lam_new[j]
            rhs[a] = s
            for b in range(nh):
                A[a, b] = G[i, held[b]]
        if not cholesky_in_place(A):        # a principal block of an SPD matrix: SPD
            return False
        cholesky_solve(A, rhs)
        for a in range(nh):
            lam_new[held[a]] = rhs[a]
    for i in range(n):
        s = v0[i]
        for j in range(n):
            s += G[i, j] * lam_new[j]
        v_new[i] = s
    return True


def joint_impulses(G, v0, lo, hi, friction_impulse, sweeps, tolerance, lam):
    """The rows' impulses into lam (see the module docstring); returns the sweeps taken."""
    n = v0.shape[0]
    v = v0.copy()
    lam[:] = 0.0
    lam_p = np.empty(n)
    v_p = np.empty(n)
    largest = 0.0
    for i in range(n):
        largest = max(largest, abs(v0[i]))
    scale = tolerance * (1.0 + largest)
    for k in range(1, sweeps + 1):
        if sweep(G, v, lam, lo, hi, friction_impulse) < scale:
            # converged to the tolerance: the exact solve for these roles, kept when one more
            # sweep leaves it as it is (Gauss-Seidel alone stops ~1e-9 short on a stiff arm)
            if polish(G, v0, lam, v, lo, hi, friction_impulse, lam_p, v_p):
                if sweep(G, v_p, lam_p, lo, hi, friction_impulse) < scale:
                    lam[:] = lam_p
            return k
        if k & (k - 1) == 0:            # a power of two: try the exact solve
            if polish(G, v0, lam, v, lo, hi, friction_impulse, lam_p, v_p):
                if sweep(G, v_p, lam_p, lo, hi, friction_impulse) < scale:
                    lam[:] = lam_p
                    return k
    return sweeps


def cholesky_in_place(W):
    """W = L L^T: L into W's lower triangle; False when W is not positive definite."""
    n = W.shape[0]
    for j in range(n):
        s = W[j, j]
        for k in range(j):
            s -= W[j, k] * W[j, k]
        if not s > 0.0:
            return False
        W[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            t = W[i, j]
            for k in range(j):
                t -= W[i, k] * W[j, k]
            W[i, j] = t / W[j, j]
    return True


def cholesky_solve(L, b):
    """x = (L L^T)^-1 b in place of b (L: the lower triangle of cholesky_in_place's result)."""
    n = b.shape[0]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * b[k]
        b[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * b[k]
        b[i] = s / L[i, i]


def joint_row_velocities(M, v_free, damping_dt, rows, row_diagonal, row_rhs, lo, hi,
                         friction_dt, sweeps, tolerance, v_new, row_impulse):
    """The implicit joint update, v_new = W^-1 (M v_free - row_rhs + lam), W = M + diag(dt
    damping) + row_diagonal at the rows, with lam the rows' impulses (joint_impulses: bounds
    [lo, hi], friction impulse friction_dt) into row_impulse. Only the active rows' columns of
    W^-1 are formed. False when W is not positive definite."""
    row_impulse[:] = 0.0
    nv = M.shape[0]
    W = M.copy()
    rhs = np.zeros(nv)
    for i in range(nv):
        W[i, i] += damping_dt[i]
        for j in range(nv):
            rhs[i] += M[i, j] * v_free[j]
    for r in range(rows.shape[0]):
        W[rows[r], rows[r]] += row_diagonal[r]
        rhs[rows[r]] -= row_rhs[r]
    if not cholesky_in_place(W):
        return False
    cholesky_solve(W, rhs)
    v_new[:] = rhs                      # v* (no impulses)
    active = np.zeros(rows.shape[0], dtype=np.int64)
    na = 0
    for r in range(rows.shape[0]):
        if np.isfinite(lo[r]) or np.isfinite(hi[r]) or friction_dt[r] > 0.0:
            active[na] = r
            na += 1
    if na == 0:
        return True
    columns = np.zeros((na, nv))        # columns[a] = W^-1 e_row, row = rows[active[a]]
    for a in range(na):
        columns[a, rows[active[a]]] = 1.0
        cholesky_solve(W, columns[a])
    G = np.empty((na, na))              # the active rows' block of W^-1
    v0, row_lo, row_hi, row_friction = np.empty(na), np.empty(na), np.empty(na), np.empty(na)
    for a in range(na):
        r = active[a]
        v0[a], row_lo[a], row_hi[a], row_friction[a] = v_new[rows[r]], lo[r], hi[r], friction_dt[r]
        for b in range(na):
            G[a, b] = columns[b, rows[r]]
    lam = np.empty(na)
    joint_impulses(G, v0, row_lo, row_hi, row_friction, sweeps, tolerance, lam)
    for a in range(na):
        row_impulse[active[a]] = lam[a]
        for i in range(nv):
            v_new[i] += columns[a, i] * lam[a]
    return True


INTEGRATORS = ('rk4', 'semi_implicit_euler')
POSITION_LIMITS = ('constraint', 'spring', 'off')


def _hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def stage_velocity(model, theta, xi):
    """Runge-Kutta-Munthe-Kaas's stage velocity: (I + ad/2 + ad^2/12) xi with ad the adjoint
    matrix of theta ([[phi^, rho^], [0, phi^]], [linear; angular]) on the floating and planar
    joints' velocities (a planar twist (vx, vy, w) as the spatial one (vx, vy, 0, 0, 0, w)),
    xi elsewhere."""
    out = np.array(xi, dtype=float)
    for joint in model.joints:
        if joint.type not in ('floating', 'planar') or joint.v_index is None:
            continue
        b = joint.v_index
        if joint.type == 'floating':
            t6, x6 = np.asarray(theta[b:b + 6]), np.asarray(xi[b:b + 6])
        else:
            t6 = np.array([theta[b], theta[b + 1], 0.0, 0.0, 0.0, theta[b + 2]])
            x6 = np.array([xi[b], xi[b + 1], 0.0, 0.0, 0.0, xi[b + 2]])
        ad = np.zeros((6, 6))
        ad[:3, :3] = ad[3:, 3:] = _hat(t6[3:])
        ad[:3, 3:] = _hat(t6[:3])
        y = x6 + ad @ x6 / 2 + ad @ ad @ x6 / 12
        out[b:b + joint.nv] = y if joint.type == 'floating' else y[[0, 1, 5]]
    return out


@dataclasses.dataclass(frozen=True)
class SimOptions:
    """What the simulated joints do. Defaults are what a real robot does."""

    dt: float = 1e-3
    integrator: str = 'rk4'
    damping: bool = True              # URDF <dynamics damping>, implicit
    friction: bool = True             # URDF <dynamics friction>, Coulomb with stiction
    effort_limits: bool = True        # saturate commands at the URDF effort limits
    velocity_limits: bool = True      # cap speeds at the URDF velocity limits
    position_limits: str = 'constraint'   # 'constraint', 'spring' or 'off'
    limit_stiffness: float = 1e5      # spring mode: N m/rad or N/m beyond a limit
    limit_damping: float = 1e3        # spring mode: N m s/rad or N s/m beyond a limit
    divergence_bound: float = 1e4     # |v| or |q| beyond this (or NaN): diverged

    def __post_init__(self):
        if self.integrator not in INTEGRATORS:
            raise ValueError(f'integrator must be one of {INTEGRATORS}, got {self.integrator!r}')
        if self.position_limits not in POSITION_LIMITS:
            raise ValueError(f'position_limits must be one of {POSITION_LIMITS}, '
                             f'got {self.position_limits!r}')
        if not self.dt > 0:
            raise ValueError(f'dt must be > 0, got {self.dt}')


@dataclasses.dataclass(frozen=True)
class JointRows:
    """The joint velocities that limits and friction act on: single-DoF joints (revolute,
    continuous, prismatic) that own a coordinate."""

    v: np.ndarray          # their v indices
    q: np.ndarray          # their q indices
    lower: np.ndarray      # position limits (inf where none)
    upper: np.ndarray
    velocity: np.ndarray   # velocity limits (inf where none)
    friction: np.ndarray   # Coulomb friction torque (0 where none)


def joint_rows(model: rbd.Model) -> JointRows:
    joints = [j for j in model.joints if j.q_index is not None and j.nq == 1 and j.nv == 1
              and j.type in ('revolute', 'continuous', 'prismatic')]
    v = np.array([j.v_index for j in joints], dtype=int)
    q = np.array([j.q_index for j in joints], dtype=int)
    return JointRows(v=v, q=q, lower=model.lower_limits[q], upper=model.upper_limits[q],
                     velocity=model.velocity_limits[v], friction=model.friction[v])


class Simulator:
    """The state (q, v, t) of one simulated robot and its step. Not thread-safe."""

    def __init__(self, model: rbd.Model, q0=None, v0=None, options: SimOptions = SimOptions()):
        self.model = model
        self.options = options
        self.rows = joint_rows(model)
        self.data = model.create_data()
        self.q = model.neutral() if q0 is None else np.array(q0, dtype=float)
        self.v = np.zeros(model.nv) if v0 is None else np.array(v0, dtype=float)
        self.t = 0.0
        self.applied = np.zeros(model.nv)    # the drives' torques in the last step
        self.joint_impulse = np.zeros(len(self.rows.v))     # the last step's, per joint row
        self.carried = np.zeros(model.nv)    # RK4: the last step's as a mean force (_joints)

    def saturate(self, tau_cmd: np.ndarray) -> np.ndarray:
        """The torques the drives apply: the command, clipped at the effort limits."""
        tau = np.asarray(tau_cmd, dtype=float)
        if self.options.effort_limits:
            tau = np.clip(tau, -self.model.effort_limits, self.model.effort_limits)
        return tau

    def step(self, tau_cmd: np.ndarray, f_ext=None) -> bool:
        """Advance one step under tau_cmd (nv) and the external wrenches f_ext ({link: [f;
        tau]}, link frame, about its origin). False when the state diverged (NaN, inf, or
        beyond divergence_bound, or a singular mass matrix): then (q, v) are left as they were
        and the caller decides (sim_node resets)."""
        tau = self.saturate(tau_cmd)
        try:
            carried = self.carried if self.options.integrator == 'rk4' else 0.0
            q_free, v_free = self._free_step(self.q, self.v, tau + carried, f_ext)
            if not self._finite(q_free, v_free):
                return False
            q_new, v_new = self._joints(q_free, v_free)
            self.applied = tau
        except (ValueError, FloatingPointError, np.linalg.LinAlgError):
            return False
        if not self._finite(q_new, v_new):
            return False
        self.q, self.v = q_new, v_new
        self.t += self.options.dt
        return True

    def energy(self) -> float:
        """Kinetic plus potential energy of the state (J)."""
        return (rbd.kinetic_energy(self.model, self.q, self.v, data=self.data)
                + rbd.potential_energy(self.model, self.q, data=self.data))

    # -- the parts of a step -------------------------------------------------------------------
    def _finite(self, q, v) -> bool:
        bound = self.options.divergence_bound
        return bool(np.all(np.isfinite(q)) and np.all(np.isfinite(v))
                    and np.max(np.abs(v), initial=0.0) <= bound
                    and np.max(np.abs(q[self.rows.q]), initial=0.0) <= bound)

    def _acceleration(self, q, v, tau, f_ext):
        return rbd.forward_dynamics(self.model, q, v, tau, f_ext, data=self.data)

    def _free_step(self, q, v, tau, f_ext):
        """The smooth dynamics over one step, without damping, friction and limits."""
        dt, model, d = self.options.dt, self.model, self.data
        if self.options.integrator == 'semi_implicit_euler':
            v_new = v + dt * self._acceleration(q, v, tau, f_ext)
            return rbd.integrate(model, q, v_new, dt, data=d), v_new
        # Runge-Kutta-Munthe-Kaas: stages at q (+) dt c_j k_(j-1), k_j the stage velocity
        a1 = self._acceleration(q, v, tau, f_ext)
        v2 = v + 0.5 * dt * a1
        a2 = self._acceleration(rbd.integrate(model, q, v, 0.5 * dt, data=d), v2, tau, f_ext)
        k2 = stage_velocity(model, 0.5 * dt * v, v2)
        v3 = v + 0.5 * dt * a2
        a3 = self._acceleration(rbd.integrate(model, q, k2, 0.5 * dt, data=d), v3, tau, f_ext)
        k3 = stage_velocity(model, 0.5 * dt * k2, v3)
        v4 = v + dt * a3
        a4 = self._acceleration(rbd.integrate(model, q, k3, dt, data=d), v4, tau, f_ext)
        k4 = stage_velocity(model, dt * k3, v4)
        q_new = rbd.integrate(model, q, (v + 2.0 * k2 + 2.0 * k3 + k4) / 6.0, dt, data=d)
        return q_new, v + dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)

    def _joints(self, q_free, v_free):
        """Damping, friction and limits as one implicit velocity update; then the positions.
        (A speed limit brakes its joint here; the compiled step's drives give up effort at
        their speed limits instead, tested by its physics in test_simulation_cases.py.)"""
        o, rows, dt, model = self.options, self.rows, self.options.dt, self.model
        theta = 0.5 if o.integrator == 'rk4' else 1.0
        damping = model.damping if o.damping else np.zeros(model.nv)
        lower_gap = q_free[rows.q] - rows.lower      # > 0 inside the limits
        upper_gap = rows.upper - q_free[rows.q]
        spring = np.zeros(len(rows.v))
        if o.position_limits == 'spring':
            spring = np.where((lower_gap < 0) | (upper_gap < 0), 1.0, 0.0)
        friction = rows.friction if o.friction else np.zeros(len(rows.v))
        constrained = (o.position_limits == 'constraint'
                       and bool(np.any(np.isfinite(rows.lower) | np.isfinite(rows.upper))))
        carried = self.carried if o.integrator == 'rk4' else np.zeros(model.nv)
        if not (np.any(damping) or np.any(friction) or np.any(spring) or constrained
                or (o.velocity_limits and np.any(np.isfinite(rows.velocity)))
                or np.any(carried)):
            self.joint_impulse[:] = 0.0
            return q_free, v_free
        row_diagonal, row_rhs = np.zeros(len(rows.v)), np.zeros(len(rows.v))
        if np.any(spring):    # implicit one-sided spring-damper beyond the limits
            k, c = o.limit_stiffness * spring, o.limit_damping * spring
            row_diagonal = dt * c + dt * dt * k
            penetration = np.where(lower_gap < 0, lower_gap, np.where(upper_gap < 0, -upper_gap, 0.0))
            row_rhs = dt * k * penetration
        lo = np.full(len(rows.v), -np.inf)
        hi = np.full(len(rows.v), np.inf)
        if constrained:       # end the step within the limits: q+ = q* + theta dt (v+ - v*)
            vf = v_free[rows.v]
            lo = np.maximum(lo, vf - lower_gap / (theta * dt))
            hi = np.minimum(hi, vf + upper_gap / (theta * dt))
            # a joint that crossed its limit in the step stops there (no bounce when stopping
            # suffices)
            lo = np.where(lower_gap < 0, np.maximum(lo, np.minimum(0.0, hi)), lo)
            hi = np.where(upper_gap < 0, np.minimum(hi, np.maximum(0.0, lo)), hi)
        if o.velocity_limits:
            lo = np.maximum(lo, -rows.velocity)
            hi = np.minimum(hi, rows.velocity)
        # v+ = W^-1 (M v* - row_rhs + lambda), W = M + dt D + row_diagonal: pgs.py
        # RK4 carried the last step's joint impulses through its stages (the compiled step's
        # carried_force): taken back here, so lam is the whole of this step's
        row_rhs = row_rhs + dt * carried[rows.v]
        M = rbd.mass_matrix(model, q_free, data=self.data)
        v_new = np.empty(model.nv)
        lam = np.empty(len(rows.v))
        if not joint_row_velocities(M, v_free, dt * damping, rows.v, row_diagonal, row_rhs,
                                        lo, hi, friction * dt, 200, 1e-13, v_new, lam):
            raise np.linalg.LinAlgError('M + dt D is not positive definite')
        before, self.joint_impulse = self.joint_impulse, lam
        self.carried = np.zeros(model.nv)     # (what kept its sign: step.carried_force)
        self.carried[rows.v] = np.where(before * lam > 0.0, lam, 0.0) / dt
        q_new = rbd.integrate(model, q_free, v_new - v_free, theta * dt, data=self.data)
        return q_new, v_new
