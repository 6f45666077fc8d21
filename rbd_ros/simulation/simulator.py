"""A simulated robot with real joints and ground contact, ROS-free: effort saturation, drives
with position and velocity commands, viscous damping, Coulomb friction with stiction,
velocity and position limits, armature (in the model), external wrenches, a floating base on
a ground plane with compliant contacts and Coulomb friction cones, closed kinematic loops
(<constraint>: equality rows of the step's constraint solve; the state starts closed,
``closed_state``).

``Simulator`` builds the constant tables once (layout.py) and steps with one compiled call
(step.py: the step, and why each part is the way it is). The state is public coordinates:
with a floating base, q[:7] = [x, y, z, qx, qy, qz, qw] of the root link in the world, v[:6]
its twist in its own frame.

Energy, measured on example-robot-data's double pendulum released from q = (1, 0.5) rad,
worst error over 10 s at 1 kHz as a fraction of its swing (energy above the hanging rest
state): RK4 1e-6. Semi-implicit Euler (v+ = v + dt vdot(q, v), q+ = q (+) v+ dt) loses 39%,
and steadily: it is symplectic only when M does not depend on q (for a chain it is, in
momentum form, with a bounded 2.7% error). Hence RK4 by default.
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

import rbd_ros.dynamics as rbd
from rbd_ros.dynamics.arguments import external_wrenches

from . import layout as L
from . import tables
from .contact import ContactPoint, candidates, ground_frame
from .step import point_locations, simulate

INTEGRATORS = ('rk4', 'semi_implicit_euler')
#: closed_state: K v below this times max(1, |v|) (m/s, rad/s) keeps the loops closed
CLOSED_VELOCITY = 1e-12
POSITION_LIMITS = ('constraint', 'spring', 'off')
#: m: a given start with a contact point deeper than this under the ground is said (Simulator)
START_DEPTH_WARNING = 0.01


@dataclasses.dataclass(frozen=True)
class SimOptions:
    """What the simulated joints and the ground do. Defaults are what a real robot does."""

    dt: float = 1e-3
    integrator: str = 'rk4'
    damping: bool = True              # URDF <dynamics damping>, implicit
    friction: bool = True             # URDF <dynamics friction>, Coulomb with stiction
    effort_limits: bool = True        # saturate the drives at the URDF effort limits
    velocity_limits: bool = True      # cap speeds at the URDF velocity limits
    position_limits: str = 'constraint'   # 'constraint', 'spring' or 'off'
    limit_stiffness: float = 1e5      # spring mode: N m/rad or N/m beyond a limit
    limit_damping: float = 1e3        # spring mode: N m s/rad or N s/m beyond a limit
    divergence_bound: float = 1e4     # |v| or |q| beyond this (or NaN): diverged
    # the ground (None: with a floating base only)
    ground: bool | None = None
    ground_height: float = 0.0        # the plane normal . x = ground_height (m, world)
    ground_normal: tuple = (0.0, 0.0, 1.0)
    friction_coefficient: float = 1.0    # mu: Coulomb friction cone at every contact
    contact_stiffness: float = 1e5    # N/m per contact point: 0.1 mm under 10 N
    contact_damping: float = 1e3      # N s/m per contact point
    collision_contacts: bool = True   # the URDF <collision> shapes touch the ground
    contact_points: tuple = ()        # more points: ContactPoint or "link x y z radius"
    solver_iterations: int = 100      # the constraint solver's Newton iterations per step
    solver_tolerance: float = 1e-10   # ... until no row's velocity moves by more than this
                                      # times (1 + max |v*|) (m/s, rad/s)
    solver_sweeps: int | None = None  # (the old name of solver_iterations, from the
                                      # Gauss-Seidel solver: when given, it is the budget)

    def __post_init__(self):
        if self.integrator not in INTEGRATORS:
            raise ValueError(f'integrator must be one of {INTEGRATORS}, got {self.integrator!r}')
        if self.position_limits not in POSITION_LIMITS:
            raise ValueError(f'position_limits must be one of {POSITION_LIMITS}, '
                             f'got {self.position_limits!r}')
        if not self.dt > 0:
            raise ValueError(f'dt must be > 0, got {self.dt}')
        if self.solver_sweeps is not None:
            object.__setattr__(self, 'solver_iterations', int(self.solver_sweeps))
        if not self.solver_iterations >= 1:
            raise ValueError(f'solver_iterations must be >= 1, got {self.solver_iterations}')
        if not (math.isfinite(self.solver_tolerance) and self.solver_tolerance > 0):
            raise ValueError(f'solver_tolerance must be a finite number > 0, got '
                             f'{self.solver_tolerance!r}')
        for name in ('friction_coefficient', 'contact_stiffness', 'contact_damping'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f'{name} must be a finite number >= 0, got {value!r}')
        if not (self.contact_stiffness > 0 or self.contact_damping > 0):
            raise ValueError('contact_stiffness and contact_damping cannot both be 0')
        if not math.isfinite(self.ground_height):
            raise ValueError(f'ground_height must be finite, got {self.ground_height!r}')
        try:
            ground_frame(self.ground_normal)
        except ValueError as exc:
            raise ValueError(f'ground_normal {exc}') from None


class Simulator:
    """The state (q, v, t) of one simulated robot and its step. Not thread-safe.

    Inputs persist from step to step: ``set_effort`` (the drives' feedforward effort, nv),
    ``set_drives`` (position and velocity commands with their gains), ``set_wrenches``
    (external wrenches). ``step(tau_cmd, f_ext, steps)`` sets the effort (and wrenches) it is
    given, then advances."""

    def __init__(self, model: rbd.Model, q0=None, v0=None, options: SimOptions = SimOptions(),
                 place_on_ground: bool | None = None):
        """``q0`` (None: the neutral configuration) closed on any loops; ``place_on_ground``
        moves a floating base along the ground's normal until the lowest contact point touches
        the ground (``placed_on_ground``), by default (None) when q0 is None: a legged robot's
        neutral pose has its feet below the base's origin, under the ground, and the contact
        springs would throw it up. A given q0 whose contact points are more than
        START_DEPTH_WARNING below the ground is taken as it is, with a RuntimeWarning."""
        if model.constraint_names and model.has_mimic:
            raise ValueError(f'{model.source}: the description closes '
                             f'{len(model.constraint_names)} kinematic loop(s) with <constraint> '
                             f'({", ".join(map(repr, model.constraint_names))}) and has mimic '
                             'joints: the simulator does not simulate the two together yet '
                             '(rbd_ros.dynamics does: constrained_forward_dynamics)')
        self.model = model
        self.options = options
        self.data = model.create_data()
        o = options
        self.ground = model.floating_base if o.ground is None else bool(o.ground)
        points = [p if isinstance(p, ContactPoint) else ContactPoint.parse(p)
                  for p in o.contact_points]
        if self.ground:
            found, self.notes = candidates(model, points, o.collision_contacts)
            # grouped by body (a stable sort: each link's points stay in order), so that a
            # body clear of the ground skips its points at once (contact.body_clear_of_ground)
            self.points = sorted(found, key=lambda c: c.body)
        else:
            self.points, self.notes = [], []
        nv, nq = model.nv, model.nq
        rows = model.single_dof_joints()
        self.row_v = np.array([j.v_index for j in rows], dtype=np.int64)
        self.row_q = np.array([j.q_index for j in rows], dtype=np.int64)
        # W and the solver's Hessian are factored over the tree's dof parents (branch-induced
        # sparsity: J^T S J of a point's rows stays within it), dense with mimic joints or
        # loops (a loop's rows join its two branches)
        factor_parent = (model.dof_parent if model.direct and not model.constraint_rows
                         else np.arange(-1, nv - 1, dtype=np.int64))
        self._si, self._sf, self._work, self._iwork = tables.build(model, o, self.points,
                                                                   factor_parent)
        self._command = np.zeros((5, nv))
        passive = rbd.passive_joints(model)
        self._passive_v = np.array([j.v_index for j in rows if j.name in passive], dtype=np.int64)
        self._f_ext = np.zeros((model.body_int.shape[0], 6))
        self._out = np.zeros(nv + L.OUT_COLS * len(self.points))
        self._stats = np.zeros(L.STATS_LEN, dtype=np.int64)
        self._q = np.array(model.neutral() if q0 is None else q0, dtype=float)
        self._v = np.zeros(nv) if v0 is None else np.array(v0, dtype=float)
        if self._q.shape != (nq,) or self._v.shape != (nv,):
            raise ValueError(f'q0 must have {nq} values and v0 {nv}, got {self._q.shape} and '
                             f'{self._v.shape}')
        if model.constraint_rows:
            self._q, self._v = self.closed_state(self._q, self._v)
        if self.ground and self.points and model.floating_base:
            if place_on_ground or (place_on_ground is None and q0 is None):
                self._q = self.placed_on_ground(self._q)
            else:
                depth = self._deepest(self._q)
                if depth > START_DEPTH_WARNING:
                    warnings.warn(f'{model.name}: q0 puts contact points up to {depth:.3g} m '
                                  'under the ground, where the contact springs throw the robot '
                                  'up; Simulator.placed_on_ground(q0) puts it down on the '
                                  'ground', RuntimeWarning, stacklevel=2)
        self.t = 0.0
        self.status = L.STEP_OK
        # compiled (or loaded from numba's cache) now, not in a first step
        simulate(self.data.handle, self._si, self._sf, self._q.copy(), self._v.copy(),
                 self._command, self._f_ext, self._out.copy(), self._stats.copy(),
                 self._work.copy(), self._iwork.copy(), 0)

    # -- state ---------------------------------------------------------------------------------
    @property
    def q(self) -> np.ndarray:
        return self._q.copy()

    @q.setter
    def q(self, value):
        _assign(self._q, value, 'q')
        self._forget_forces()

    def _forget_forces(self) -> None:
        """A state set by hand starts without the forces the last step's rows carried into
        the next (step.carried_force): the contacts and stops that made them may be gone."""
        at = self._si[L.W_CARRIED]
        self._work[at:at + self.model.nv] = 0.0

    @property
    def v(self) -> np.ndarray:
        return self._v.copy()

    @v.setter
    def v(self, value):
        _assign(self._v, value, 'v')

    def closed_state(self, q, v=None, hold=None):
        """(q, v) on the loops that <constraint> elements close: q closed by close_loops with
        the joints in ``hold`` unchanged (default: the actuated joints, model.actuated_joints,
        as a robot's motors are where it is told to start), and the joints on no loop (a
        floating base), and the loops' others solved from q; v (None: zero) with K v = 0, the
        same joints' velocities kept and the others' moved the least (least squares).
        ValueError when q cannot close with those joints held (the constraint that stays
        open, and by how much) or when the held joints' velocities themselves open a loop. A
        model without loops: (q, v) as given (copies)."""
        model = self.model
        q = np.array(q, dtype=float)
        v = np.zeros(model.nv) if v is None else np.array(v, dtype=float)
        if not model.constraint_rows:
            return q, v
        hold = list(model.actuated_joints if hold is None else hold)
        q = rbd.close_loops(model, q, hold, data=self.data)
        K = rbd.constraint_jacobian(model, q, data=self.data)
        on_loops = rbd.loop_joints(model)     # (the others move a loop whole: kept, as in q)
        free = np.array([i for j in model.joints if j.v_index is not None and j.name in on_loops
                         and j.name not in hold for i in range(j.v_index, j.v_index + j.nv)],
                        dtype=int)
        scale = max(1.0, float(np.abs(v).max()))
        if np.abs(K @ v).max() > CLOSED_VELOCITY * scale:
            v[free] -= np.linalg.lstsq(K[:, free], K @ v, rcond=1e-12)[0]
        opening = np.abs(K @ v).max()
        if opening > CLOSED_VELOCITY * scale:
            raise ValueError(f'the velocities of the held joints ({", ".join(hold)}) open the '
                             f'loops at {opening:.3g} m/s (rad/s): no velocity of the other '
                             'joints keeps them closed')
        return q, v

    def set_state(self, q, v=None, hold=None) -> None:
        """The state (q, v) closed first (``closed_state``: a model with loops starts on
        them). The ``q`` and ``v`` properties set a state as it is given."""
        q, v = self.closed_state(q, v, hold)
        _assign(self._q, q, 'q')
        _assign(self._v, v, 'v')
        self._forget_forces()

    @property
    def applied(self) -> np.ndarray:
        """The drives' efforts in the last step (nv): the saturated effort command plus what
        the position and velocity commands applied."""
        return self._out[:self.model.nv].copy()

    @property
    def unconverged_solves(self) -> int:
        """Constraint solves (solver.py: joint friction and limits, drives, contacts) that ran
        out of ``solver_iterations`` before reaching ``solver_tolerance``, since the simulator
        was made (a step with rows solves once). Such a step goes on with the last iterate,
        whose impulses each keep their own law (friction within the last cone, nothing that
        adds energy), so its friction, limits, drives and contacts hold only approximately.
        sim_node reports it in /diagnostics (``unconverged_solves``) and logs a WARN."""
        return int(self._stats[L.STAT_UNCONVERGED])

    @property
    def solver_stats(self) -> dict:
        """The constraint solver since the simulator was made: ``steps``, ``solves`` (steps
        with rows), ``unconverged_solves`` (above), ``iterations`` (Newton iterations in
        all), ``max_iterations`` (the most one solve took, at most ``solver_iterations``;
        ``max_sweeps`` is its old name) and ``rows`` (in the last solve)."""
        s = self._stats
        return {'steps': int(s[L.STAT_STEPS]), 'solves': int(s[L.STAT_SOLVES]),
                'unconverged_solves': int(s[L.STAT_UNCONVERGED]),
                'iterations': int(s[L.STAT_ITERATIONS]),
                'max_iterations': int(s[L.STAT_MAX_ITERATIONS]),
                'max_sweeps': int(s[L.STAT_MAX_ITERATIONS]), 'rows': int(s[L.STAT_ROWS])}

    # -- inputs --------------------------------------------------------------------------------
    def set_effort(self, tau) -> None:
        """The drives' effort commands (nv), saturated at the effort limits in the step."""
        tau = np.asarray(tau, dtype=float)
        if tau.shape != (self.model.nv,):
            raise ValueError(f'tau must have {self.model.nv} values, got {tau.shape}')
        self._command[L.EFFORT] = tau

    def set_drives(self, kp=0.0, kd=0.0, q_ref=0.0, v_ref=0.0) -> None:
        """Position and velocity commands per velocity index (nv each, or one value): the drive
        applies kp (q_ref - q) + kd (v_ref - v) at every step, implicitly (stable for any gain
        on any link), on top of the effort command and within the effort limit. kp = kd = 0:
        no drive. Only single-DoF joints have drives. One gain for all leaves out a closed
        loop's passive joints (on a loop, not actuated): they have no motor. ``q_ref`` may also
        be a configuration (nq values, as ``q``: a floating base's 7 first): its single-DoF
        joints' positions are the references."""
        nv, nq = self.model.nv, self.model.nq
        for row, name, value in ((L.KP, 'kp', kp), (L.KD, 'kd', kd), (L.Q_REF, 'q_ref', q_ref),
                                 (L.V_REF, 'v_ref', v_ref)):
            value = np.asarray(value, dtype=float)
            if name == 'q_ref' and value.shape == (nq,) and nq != nv:
                per_v = np.zeros(nv)
                per_v[self.row_v] = value[self.row_q]
                value = per_v
            if value.size != 1 and value.shape != (nv,):
                also = f'; q_ref also {nq}, a configuration' if name == 'q_ref' and nq != nv else ''
                raise ValueError(f'{name} must have one value or {nv} (one per velocity '
                                 f'index{also}), got shape {value.shape}')
            self._command[row] = value.reshape(-1) if value.size == 1 else value
            if row in (L.KP, L.KD) and np.size(value) == 1:
                self._command[row, self._passive_v] = 0.0
        if np.any(self._command[L.KP:L.KD + 1] < 0) or not np.all(np.isfinite(self._command)):
            raise ValueError('drive gains must be >= 0 and every command finite')

    def set_wrenches(self, f_ext) -> None:
        """External wrenches {link: [f; tau] in the link frame, about its origin} (None: none),
        held until changed."""
        self._f_ext[:] = 0.0
        if f_ext:
            self._f_ext[:] = external_wrenches(self.model, self.data, f_ext, None)

    def step(self, tau_cmd=None, f_ext=None, steps: int = 1) -> bool:
        """Advance ``steps`` steps of dt under the effort command ``tau_cmd`` (nv; None: the
        one set before) and the external wrenches ``f_ext`` ({link: [f; tau]}, link frame,
        about its origin; None: none). False when the state diverged (NaN, inf, beyond
        divergence_bound, or a singular mass matrix): (q, v) are then as they were before the
        step that failed, and the caller decides (sim_node resets)."""
        if tau_cmd is not None:
            self.set_effort(tau_cmd)
        self.set_wrenches(f_ext)
        return self.advance(steps)

    def advance(self, steps: int = 1) -> bool:
        """``steps`` steps under the inputs as they are set."""
        before = int(self._stats[L.STAT_STEPS])
        self.status = simulate(self.data.handle, self._si, self._sf, self._q, self._v,
                               self._command, self._f_ext, self._out, self._stats, self._work,
                               self._iwork, steps)
        self.t += (int(self._stats[L.STAT_STEPS]) - before) * self.options.dt
        return self.status == L.STEP_OK

    # -- contacts and energy -------------------------------------------------------------------
    def contacts(self):
        """The contact points that touched the ground in the last step: a list of (link, world
        location, world force on the robot: mean over the step)."""
        points, at, force = self.contact_arrays()
        return [(self.points[k].link, at[i], force[i]) for i, k in enumerate(points)]

    def contact_arrays(self):
        """contacts() as arrays: (indices into ``points``, world locations k x 3, world forces
        k x 3)."""
        table = self._out[self.model.nv:].reshape(len(self.points), L.OUT_COLS)
        points = np.flatnonzero(table[:, L.OUT_ACTIVE] > 0.0)
        return (points, table[points, L.OUT_AT:L.OUT_AT + 3],
                table[points, L.OUT_FORCE:L.OUT_FORCE + 3])

    def energy(self) -> float:
        """Kinetic plus potential energy of the state (J), the contact springs' included."""
        q, v = self._q, self._v
        energy = (rbd.kinetic_energy(self.model, q, v, data=self.data)
                  + rbd.potential_energy(self.model, q, data=self.data))
        if self.points:
            n, h = self._sf[L.NORMAL:L.NORMAL + 3], self.options.ground_height
            for link, where in self.point_locations(q):
                depth = h - float(n @ where)
                if depth > 0:
                    energy += 0.5 * self.options.contact_stiffness * depth * depth
        return energy

    def placed_on_ground(self, q=None) -> np.ndarray:
        """q (the state's by default) with the floating base moved along the ground's normal
        until the lowest contact point touches the ground (``ground_height``): its orientation,
        joints and position along the ground kept. How a robot is put down to start."""
        if not self.model.floating_base:
            raise ValueError(f'placed_on_ground moves a floating base; {self.model.name!r} has '
                             'none')
        if not self.points:
            raise ValueError(f'{self.model.name!r} has no contact points to put on the ground '
                             '(its collision shapes are meshes or absent; give contact_points)')
        q = np.array(self._q if q is None else q, dtype=float)
        n = self._sf[L.NORMAL:L.NORMAL + 3]
        q[:3] += n * self._deepest(q)
        return q

    def _deepest(self, q) -> float:
        """How far the lowest contact point is under the ground at q (m; < 0: above it)."""
        n = self._sf[L.NORMAL:L.NORMAL + 3]
        return self.options.ground_height - min(float(n @ where)
                                                for _, where in self.point_locations(q))

    def point_locations(self, q=None):
        """[(link, world location of each contact candidate's lowest point)] at q (the state's
        by default): the step's own contact geometry (contact.contact_point)."""
        q = np.ascontiguousarray(self._q if q is None else q, dtype=float)
        found = np.empty((len(self.points), 4))
        point_locations(self.data.handle, self._si, self._sf, q, self._work, found)
        return [(c.link, found[k, :3].copy()) for k, c in enumerate(self.points)]


def _assign(state: np.ndarray, value, name: str) -> None:
    """state[:] = value, checked: ValueError when its length differs."""
    value = np.asarray(value, dtype=float)
    if value.shape != state.shape:
        raise ValueError(f'{name} must have {state.shape[0]} values, got {value.shape}')
    state[:] = value
