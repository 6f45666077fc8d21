"""A simulated robot with real joints, ROS-free: effort saturation, viscous damping, Coulomb
friction with stiction, velocity and position limits, armature (in the model), external wrenches.

One step of ``dt`` from (q, v) under the commanded torques:

1. saturate:   tau = clip(tau_cmd, -effort_limit, effort_limit); a drive also gives up the
               torque that would take its joint past its velocity limit in this step
2. free step:  (q*, v*) under the smooth dynamics M vdot + C v + g = tau + J^T f_ext (RK4 on
               the configuration manifold by default; semi-implicit Euler on request)
3. the joints: v+ = W^-1 (M v* + lambda), W = M + dt D (viscous damping D, implicit: any
               damping is stable), with lambda the joint impulses that keep each joint within
               its speed and position limits and apply Coulomb friction: |lambda_f| <=
               friction dt, opposing the joint's motion, holding it still when that suffices
               (stiction). Projected Gauss-Seidel, one row per joint (pgs.py, compiled).
4. positions:  q+ = q* (+) (v+ - v*) theta dt. The joints' forces act through the step, so the
               position moves by the mean of the velocity change: theta = 1/2 after RK4 (a
               drive at its speed limit then advances at that speed, however hard it pushes),
               theta = 1 after semi-implicit Euler (q+ = q (+) v+ dt, that method exactly).

A position limit bounds where the joint ends the step; a joint that reaches it there stops
(an inelastic impact), so a limit never adds energy, and it acts on its own joint only (other
joints feel it only through the mass matrix, as physics says). ``spring`` mode makes limits a
stiff one-sided spring-damper instead (implicit as well).

With damping, friction and limits off, step 2 changes nothing. Measured on example-robot-data's
double pendulum released from q = (1, 0.5) rad, worst energy error over 10 s at 1 kHz, as a
fraction of its swing (energy above the hanging rest state): RK4 1e-6. Semi-implicit Euler
(v+ = v + dt vdot(q, v), q+ = q (+) v+ dt) loses 39%, and steadily: it is symplectic only when
M does not depend on q. For a chain it is, in momentum form (p = M(q) v: p+ = p + dt (C(q, v+)^T
v+ - g(q) + tau), v+ = M(q)^-1 p+), whose error stays bounded (2.7% here, oscillating); the
velocity form evaluates the Coriolis forces with the old velocity and drifts at first order.
That is why the old sim_node default lost 41% of a double pendulum's energy in 5 s. RK4 costs
four forward dynamics per step (about 60 us at 1 kHz on the bundled arm).
"""
from __future__ import annotations

import dataclasses

import numpy as np

import rbd_ros.dynamics as rbd

from . import pgs

INTEGRATORS = ('rk4', 'semi_implicit_euler')
POSITION_LIMITS = ('constraint', 'spring', 'off')


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
        pgs.warm_up()       # compiled (or loaded from numba's cache) now, not in a first step

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
            q_free, v_free = self._free_step(self.q, self.v, tau, f_ext)
            if not self._finite(q_free, v_free):
                return False
            if self._near_speed_limit(v_free):
                q_new, v_new = self._joints(q_free, v_free, limits=False)
                limited = self._drive_speed_limit(q_free, v_new, tau)
                if limited is not None:   # the drives give up what would overspeed the joints
                    tau = limited
                    q_free, v_free = self._free_step(self.q, self.v, tau, f_ext)
            self.applied = tau
            q_new, v_new = self._joints(q_free, v_free)
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
        a1 = self._acceleration(q, v, tau, f_ext)
        v2 = v + 0.5 * dt * a1
        a2 = self._acceleration(rbd.integrate(model, q, v, 0.5 * dt, data=d), v2, tau, f_ext)
        v3 = v + 0.5 * dt * a2
        a3 = self._acceleration(rbd.integrate(model, q, v2, 0.5 * dt, data=d), v3, tau, f_ext)
        v4 = v + dt * a3
        a4 = self._acceleration(rbd.integrate(model, q, v3, dt, data=d), v4, tau, f_ext)
        q_new = rbd.integrate(model, q, (v + 2.0 * v2 + 2.0 * v3 + v4) / 6.0, dt, data=d)
        return q_new, v + dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)

    def _near_speed_limit(self, v_free) -> bool:
        """Whether a joint may end this step past its velocity limit: only then is the
        drives' share worked out (a solve of its own; damping and friction only slow a
        joint, so half the limit is a wide margin, and the limit rows of the final solve
        bound the speed in any case)."""
        rows = self.rows
        return bool(self.options.velocity_limits and len(rows.v)
                    and np.any(np.abs(v_free[rows.v]) > 0.5 * rows.velocity))

    def _drive_speed_limit(self, q, v_end, tau):
        """A drive limits its joint's speed by giving up torque, as a real one does: the
        torques, reduced (never reversed) where they would take a joint past its velocity
        limit by the end of this step (v_end: with damping and friction); None when no joint
        would go past it."""
        rows = self.rows
        if not self.options.velocity_limits or len(rows.v) == 0:
            return None
        vf, tr, vmax = v_end[rows.v], tau[rows.v], rows.velocity
        over = np.nonzero((np.abs(vf) > vmax) & (np.sign(tr) == np.sign(vf)) & (tr != 0))[0]
        if len(over) == 0:
            return None
        dt = self.options.dt
        W = rbd.mass_matrix(self.model, q, data=self.data)
        if self.options.damping:
            W[np.diag_indices_from(W)] += dt * self.model.damping
        G = np.linalg.inv(W)
        idx = rows.v[over]
        target = np.sign(vf[over]) * vmax[over]
        # the torque change that brings these joints to their limit speed (v changes by
        # about dt M^-1 dtau), kept between giving up all of the drive's torque and none
        delta = np.linalg.solve(dt * G[np.ix_(idx, idx)], target - vf[over])
        delta = np.where(tr[over] > 0, np.clip(delta, -tr[over], 0.0),
                         np.clip(delta, 0.0, -tr[over]))
        limited = tau.copy()
        limited[idx] += delta
        return limited

    def _joints(self, q_free, v_free, limits=True):
        """Damping, friction and limits as one implicit velocity update; then the positions.
        ``limits`` False leaves the position and velocity limits out (a step's first pass,
        which finds what the drives must give up)."""
        o, rows, dt, model = self.options, self.rows, self.options.dt, self.model
        theta = 0.5 if o.integrator == 'rk4' else 1.0
        damping = model.damping if o.damping else np.zeros(model.nv)
        lower_gap = q_free[rows.q] - rows.lower      # > 0 inside the limits
        upper_gap = rows.upper - q_free[rows.q]
        spring = np.zeros(len(rows.v))
        if o.position_limits == 'spring':
            spring = np.where((lower_gap < 0) | (upper_gap < 0), 1.0, 0.0)
        friction = rows.friction if o.friction else np.zeros(len(rows.v))
        constrained = (limits and o.position_limits == 'constraint'
                       and bool(np.any(np.isfinite(rows.lower) | np.isfinite(rows.upper))))
        if not (np.any(damping) or np.any(friction) or np.any(spring) or constrained
                or (o.velocity_limits and limits and np.any(np.isfinite(rows.velocity)))):
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
        if o.velocity_limits and limits:
            lo = np.maximum(lo, -rows.velocity)
            hi = np.minimum(hi, rows.velocity)
        # v+ = W^-1 (M v* - row_rhs + lambda), W = M + dt D + row_diagonal: pgs.py
        M = rbd.mass_matrix(model, q_free, data=self.data)
        v_new = np.empty(model.nv)
        if not pgs.joint_row_velocities(M, v_free, dt * damping, rows.v, row_diagonal, row_rhs,
                                        lo, hi, friction * dt, 200, 1e-13, v_new):
            raise np.linalg.LinAlgError('M + dt D is not positive definite')
        q_new = rbd.integrate(model, q_free, v_new - v_free, theta * dt, data=self.data)
        return q_new, v_new

