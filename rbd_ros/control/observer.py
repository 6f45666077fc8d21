"""External torques from the measured joint torques: the generalised-momentum observer
(De Luca and Mattone, 2003; Haddadin, De Luca and Albu-Schaeffer, 2017), ROS-free.

With p = M(q) v the generalised momentum, the robot's dynamics say

    dp/dt = tau + C(q, v)^T v - g(q) + tau_f + tau_ext

(tau: the drives' torques, measured; tau_f = -D v - F sign(v): the joints' own URDF damping and
Coulomb friction, known forces; tau_ext: whatever else pushes the robot). The observer

    r = K (p(t) - p(0) - integral_0^t (tau + C^T v - g + tau_f + r) ds)

obeys dr/dt = K (tau_ext - r): r follows the external torques through a first-order filter of
time constant 1/K, with no acceleration measured. Since dM/dt = C + C^T,

    C^T v - g = dM/dt v - (C v + g) = dM/dt v - n(q, v)

with n = C v + g the nonlinear effects (one RNEA): the Coriolis matrix is never formed.
Discretised between samples k-1 and k, implicit in r (stable for any K dt), second order like
the trapezoid rule, with b = n - tau_f (a function of the state) and the measured torque taken
as what acted over the interval that ends with its sample (a drive's torque held over a control
period, as a simulator or a digital drive applies it, and as joint_states reports it):

    I_k = I_{k-1} + dt tau_k + (M_k - M_{k-1}) (v_k + v_{k-1}) / 2 - dt/2 (b_k + b_{k-1})
          + dt/2 (r_k + r_{k-1}),
    r_k = K (p_k - p_0 - I_k)

With an exact model and no contact, r stays at the integration error (below 1e-3 N m on the
bundled arm moving at up to 8 rad/s, sampled at 1 kHz: 8e-4 against 5e-4 with the trapezoid on
C^T v, which costs a Coriolis matrix per sample).

M and n are what forward dynamics needs too: ``update(..., accelerations=True)`` also solves
M qdd = tau - n (the core's CRBA route, its LTDL factorisation of M over the tree's parent
array), which dynamics_node publishes as ~/forward_dynamics: one compiled call gives both
outputs, where ABA beside the observer recomputed the same kinematics.
"""
from __future__ import annotations

import numpy as np

import rbd_ros.dynamics as rbd
from rbd_ros.dynamics._jit import JIT_ENABLED, compile_lock, kernel
from rbd_ros.dynamics.arguments import array
from rbd_ros.dynamics.crba import crba
from rbd_ros.dynamics.entry_points import dof_tables, model_tables, no_external_wrench
from rbd_ros.dynamics.kinematics import frame_jacobian
from rbd_ros.dynamics.layout import REFERENCE_LOCAL
from rbd_ros.dynamics.rnea import rnea
from rbd_ros.dynamics.spd import ltdl_factor, ltdl_solve

from .laws import FRICTION_SMOOTHING


class MomentumObserver:
    """One observer over a model's velocities (a floating base's six included: the base's
    rows then carry the external wrench on the base, in its frame). ``gain``: K in 1/s, one
    value or one per velocity.

    :meth:`update` runs at the sensor's rate (1 kHz in dynamics_node): M(q), n(q, v) and the
    step in one compiled call (:func:`observer_update`: the core's CRBA and RNEA kernels over
    the workspace's handle, then :func:`observer_step`) over arrays allocated here once; r is
    updated in place, and so is ``peak``: the largest |r| per velocity since the observer was
    made or :meth:`reset_peak` (``peaked``: any since). A model with mimic joints (whose
    public coordinates are not the kernels') takes the core's entry points instead."""

    def __init__(self, model: rbd.Model, gain):
        self.model = model
        self.data = model.create_data()
        n = model.nv
        # the step's tables: what it reads (damping, friction, K, the friction ramp), ...
        self._consts = np.zeros((CONST_ROWS, n))
        self._consts[C_DAMPING] = model.damping
        self._consts[C_FRICTION] = model.friction
        self._consts[C_RAMP] = FRICTION_SMOOTHING
        # ... and what it carries from sample to sample (p(0), the integral, b, r, v, the
        # peak; M)
        self._state = np.zeros((STATE_ROWS, n))
        self._M = np.zeros((n, n))
        # M and n of the sample (the fused call's outputs)
        self._M_now, self._n_now = np.zeros((n, n)), np.zeros(n)
        # forward dynamics of the last update that asked for it; an empty array tells the
        # compiled call not to solve (arrays of its own: nothing to check per sample)
        self.qdd = np.full(n, np.nan)
        self._no_qdd = np.empty(0)
        self._fused = JIT_ENABLED and model.direct
        self.gain = self._consts[C_GAIN]            # (views: set in place)
        self.r = self._state[S_R]
        self.peak = self._state[S_PEAK]
        self.peaked = False
        self._started = False
        self.set_gain(gain)
        with compile_lock():   # compiled (or loaded from numba's cache) here, not on a sample
            self.update(model.neutral(), np.zeros(n), np.zeros(n), None)
        self.reset()

    def set_gain(self, gain) -> None:
        """K (1/s), one value or one per velocity; 0 everywhere turns the observer off
        (``enabled``). The observer starts again at the next sample."""
        self.gain[:] = np.broadcast_to(np.asarray(gain, dtype=float), self.gain.shape)
        self.enabled = bool(np.any(self.gain))
        self.reset()

    def reset(self) -> None:
        """Start again at the next sample (r = 0 there); the peak stays."""
        self._started = False
        self.r[:] = 0.0

    def reset_peak(self) -> None:
        self.peak[:] = 0.0
        self.peaked = False

    def update(self, q, v, tau, dt: float | None, accelerations: bool = False) -> np.ndarray:
        """The external torques r after a sample (q, v, measured tau), dt s after the previous
        one (None: the first sample). Returns ``self.r``, overwritten by the next update.
        ``accelerations``: ``self.qdd`` also receives the forward dynamics
        M(q)^-1 (tau - n(q, v)), rbd.forward_dynamics(model, q, v, tau) to rounding, from the
        same M and n; NaN where M(q) is not positive definite (a body without mass or inertia
        that a joint moves), which forward_dynamics raises for: r is updated either way."""
        # (0: the first sample, which sets p(0))
        step = float(dt) if dt is not None and self._started else 0.0
        if self._fused:
            status = observer_update(self.data.handle, q, v, tau, self.data.zero_v, self._consts,
                                     self._state, self._M, self._M_now, self._n_now, step,
                                     self.qdd if accelerations else self._no_qdd)
            if status != 0:
                raise ValueError(f'observer: the sample does not fit the model (status '
                                 f'{status}: {len(q)} positions, {len(v)} velocities for '
                                 f'nq {self.model.nq}, nv {self.model.nv})')
        else:
            model, d = self.model, self.data
            M = rbd.mass_matrix(model, q, data=d)
            n = rbd.nonlinear_effects(model, q, v, data=d)
            observer_step(M, n, np.asarray(v, dtype=float), np.asarray(tau, dtype=float),
                          self._consts, self._state, self._M, step)
            if accelerations:
                try:
                    self.qdd[:] = rbd.forward_dynamics(model, q, v, tau, method='crba', data=d)
                except FloatingPointError:         # (M not positive definite: as fused)
                    self.qdd[:] = np.nan
        self.peaked = self.peaked or step != 0.0
        self._started = True
        return self.r


# rows of the step's tables (n values each)
C_DAMPING, C_FRICTION, C_GAIN, C_RAMP, CONST_ROWS = 0, 1, 2, 3, 4
S_P0, S_INTEGRAL, S_B, S_R, S_V, S_PEAK, STATE_ROWS = 0, 1, 2, 3, 4, 5, 6


@kernel
def observer_step(M, n, v, tau, consts, state, M_prev, dt):
    """One sample of the observer, in place in ``state`` and ``M_prev``: p = M v and
    b = n - tau_f, with tau_f = -damping v - friction clip(v / ramp, -1, 1) (Coulomb friction's
    sign of v, ramped below ``ramp``: at rest the friction is whatever stiction holds, unknown;
    a sign of v at 1e-16 rad/s would show the whole friction level as an external torque).
    dt = 0 is the first sample: p0 = p, the integral and r are 0. Otherwise the implicit step

        known = dt tau + (M - M_prev) (v + v_prev) / 2 - dt/2 (b + b_prev)
        r_k = K (p - p0 - I - known - dt/2 r_{k-1}) / (1 + K dt/2)
        I += known + dt/2 (r_k + r_{k-1})

    then b, v and M are kept for the next, and peak = max(peak, |r_k|). ``consts`` rows:
    damping, friction, K, ramp; ``state`` rows: p0, I, b_prev, r, v_prev, peak (C_* and S_*
    above)."""
    nv = v.shape[0]
    for i in range(nv):
        p = 0.0
        mdot_v = 0.0                                # (M - M_prev) (v + v_prev) / 2
        for j in range(nv):
            p += M[i, j] * v[j]
            mdot_v += (M[i, j] - M_prev[i, j]) * (v[j] + state[4, j])
        ramp = min(max(v[i] / consts[3, i], -1.0), 1.0)
        b = n[i] + consts[0, i] * v[i] + consts[1, i] * ramp
        if dt == 0.0:
            state[0, i] = p
            state[1, i] = 0.0
            state[3, i] = 0.0
        else:
            K = consts[2, i]
            r = state[3, i]
            known = dt * tau[i] + 0.5 * mdot_v - 0.5 * dt * (b + state[2, i])
            r_k = K * (p - state[0, i] - state[1, i] - known - 0.5 * dt * r) / (1.0 + 0.5 * K * dt)
            state[1, i] += known + 0.5 * dt * (r_k + r)
            state[3, i] = r_k
            state[5, i] = max(state[5, i], abs(r_k))
        state[2, i] = b
    for i in range(nv):                             # (after: every row above read the old ones)
        state[4, i] = v[i]
        for j in range(nv):
            M_prev[i, j] = M[i, j]


@kernel
def observer_update(h, q, v, tau, a0, consts, state, M_prev, M, n, dt, qdd):
    """One sample in one call: M(q) (CRBA) and n(q, v) (RNEA at a0 = 0) into ``M`` and ``n``
    from the workspace behind the handle ``h``, then :func:`observer_step`; then, when ``qdd``
    is not empty, forward dynamics qdd = M^-1 (tau - n), M factorised in place over the tree's
    parent array (spd.py; the step has copied M to M_prev already), NaN where M is not
    positive definite. Returns the core's status (0: the sample fits the model; otherwise
    nothing was updated)."""
    body_int, body_float, ws = model_tables(h)
    status = crba(body_int, body_float, ws, q, M)
    if status == 0:
        status = rnea(body_int, body_float, ws, q, v, a0, no_external_wrench(h), n)
    if status != 0:
        return status
    observer_step(M, n, v, tau, consts, state, M_prev, dt)
    nv = n.shape[0]
    if qdd.shape[0] == nv:
        _, dof_parent = dof_tables(h)
        for i in range(nv):
            qdd[i] = tau[i] - n[i]
        if ltdl_factor(M, dof_parent):
            ltdl_solve(M, dof_parent, qdd)
        else:                                       # (r stands: the sample was used)
            qdd[:] = np.nan
    return status


def warm_up() -> None:
    """Compile (or load from numba's cache) :func:`observer_update`, :func:`observer_step`,
    :func:`wrench_estimate` and :func:`wrench_least_squares`: one specialisation serves every
    model (``warmup`` runs this; a MomentumObserver does it when it is made)."""
    import os
    arm = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'robots', 'rbd_arm7.urdf')
    model = rbd.Model.from_urdf(arm)
    MomentumObserver(model, 1.0)
    with compile_lock():
        z, zz = np.zeros(1), np.zeros((1, 1))
        observer_step(zz, z, z, z, np.ones((CONST_ROWS, 1)), np.zeros((STATE_ROWS, 1)),
                      np.zeros((1, 1)), 0.0)
        wrench_least_squares(np.ones((6, 2)), np.ones(2), WRENCH_RCOND, np.zeros(6))
    WrenchEstimator(model, 'tool0')


def external_wrench(model: rbd.Model, q, r, frame: str, joints=None) -> np.ndarray:
    """The wrench [f; tau] on ``frame`` (in its frame, about its origin) whose joint torques
    J^T w best match r (least squares, minimum norm: Moore-Penrose pseudo-inverse of J^T),
    from the torques of ``joints`` (v indices; default all). Ill-posed where J^T has fewer than
    six independent rows (fewer than six joints between the base and the frame, a
    singularity): the wrench is then not determined, and this is the smallest that fits.
    Per sample at a sensor's rate, a :class:`WrenchEstimator` made once does it in one compiled
    call."""
    joints = velocity_indices(model, joints)
    r = array(r, model.nv, 'r')
    J = rbd.frame_jacobian(model, q, frame, reference='local')
    w = np.empty(6)
    wrench_least_squares(np.ascontiguousarray(J[:, joints]), np.ascontiguousarray(r[joints]),
                         WRENCH_RCOND, w)
    return w


def velocity_indices(model: rbd.Model, joints) -> np.ndarray:
    """``joints`` (v indices; None: all) as a checked int64 array."""
    if joints is None:
        return np.arange(model.nv)
    if np.asarray(joints).dtype == bool:
        raise ValueError('joints must be velocity indices, not a mask (np.flatnonzero)')
    joints = np.ascontiguousarray(joints, dtype=np.int64)
    if joints.ndim != 1 or (joints.size and not 0 <= joints.min() <= joints.max() < model.nv):
        raise ValueError(f'joints must be velocity indices 0..{model.nv - 1}, got {joints}')
    return joints


class WrenchEstimator:
    """:func:`external_wrench` for one model, frame and set of joints, set up once: per sample
    one compiled call (:func:`wrench_estimate`: the core's frame Jacobian over this
    estimator's workspace, then :func:`wrench_least_squares`) over arrays allocated here. In
    dynamics_node at 1 kHz numpy's lstsq behind frame_jacobian's Python path took 90 us of CPU
    a message (nothing stays in cache from one message to the next), the one call 10 us. A
    model with mimic joints takes the core's frame_jacobian instead."""

    def __init__(self, model: rbd.Model, frame, joints=None):
        self.model = model
        self.data = model.create_data()
        self.frame = model.frame_id(frame)
        self.joints = joints = velocity_indices(model, joints)
        self._J, self._Jj = np.empty((6, model.nv)), np.empty((6, joints.size))
        self._rj, self._w = np.empty(joints.size), np.empty(6)
        self._fused = JIT_ENABLED and model.direct
        with compile_lock():   # compiled (or loaded from numba's cache) here, not on a sample
            self.estimate(model.neutral(), np.zeros(model.nv))

    def estimate(self, q: np.ndarray, r: np.ndarray) -> np.ndarray:
        """The wrench for q (nq float64) and the torques r (nv float64, C-contiguous: the
        observer's r): a 6-array, overwritten by the next call."""
        model = self.model
        if len(q) != model.nq or len(r) != model.nv:
            raise ValueError(f'external wrench: q has {len(q)} values and r {len(r)}, the '
                             f'model nq {model.nq} and nv {model.nv}')
        if self._fused:
            status = wrench_estimate(self.data.handle, q, self.frame, self.joints, r, self._J,
                                     self._Jj, self._rj, self._w)
            if status != 0:
                raise ValueError(f'external wrench: q does not fit the model (status {status})')
        else:
            self._w[:] = external_wrench(model, q, r, self.frame, self.joints)
        return self._w


@kernel
def wrench_estimate(h, q, frame, joints, r, J, Jj, rj, w):
    """external_wrench in one call: the frame's local Jacobian J (the core's frame_jacobian
    over the workspace behind the handle h), its columns ``joints`` into Jj and r's entries
    into rj, then :func:`wrench_least_squares` into w. Returns the core's status."""
    body_int, body_float, ws = model_tables(h)
    status = frame_jacobian(body_int, body_float, ws, q, frame, REFERENCE_LOCAL, J)
    if status == 0:
        for k in range(joints.size):
            Jj[:, k] = J[:, joints[k]]
            rj[k] = r[joints[k]]
        wrench_least_squares(Jj, rj, WRENCH_RCOND, w)
    return status


#: singular values of J below this fraction of the largest are taken as zero (numpy's lstsq
#: rcond): the directions of a singularity get no wrench
WRENCH_RCOND = 1e-9
#: Jacobi sweeps before giving up on the rotations (six rows converge in five or six)
JACOBI_SWEEPS = 60


@kernel
def wrench_least_squares(J, r, rcond, w):
    """w = pinv(J^T) r for a 6 x m Jacobian J, by a one-sided Jacobi SVD of its rows
    (Hestenes): plane rotations make the rows of U = G J mutually orthogonal, G (6 x 6)
    orthogonal; then J^T = U^T G, the rows' norms are J's singular values, and the
    minimum-norm least-squares solution is w = sum over the rows k kept of G_k^T (U_k . r) /
    |U_k|^2. Compiled, it replaces numpy's lstsq (LAPACK's gelsd behind a Python wrapper):
    see :class:`WrenchEstimator`."""
    n, m = J.shape
    U = J.copy()
    G = np.eye(n)
    # a row shrunk to rounding noise (J rank-deficient: a short chain, a singularity) points
    # anywhere, so its rotations would never end: rows under 1e-14 |J| (far below rcond's
    # cut, which they fall under anyway) are left as they are
    negligible = 1e-28 * np.sum(J * J)
    for _ in range(JACOBI_SWEEPS):
        rotated = False
        for p in range(n - 1):
            for k in range(p + 1, n):
                alpha = beta = gamma = 0.0
                for i in range(m):
                    alpha += U[p, i] * U[p, i]
                    beta += U[k, i] * U[k, i]
                    gamma += U[p, i] * U[k, i]
                if min(alpha, beta) <= negligible or abs(gamma) <= 1e-15 * np.sqrt(alpha * beta):
                    continue                     # (a negligible row, or already orthogonal)
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                t = np.copysign(1.0, zeta) / (abs(zeta) + np.sqrt(1.0 + zeta * zeta))
                c = 1.0 / np.sqrt(1.0 + t * t)
                s = c * t
                for i in range(m):
                    a, b = U[p, i], U[k, i]
                    U[p, i], U[k, i] = c * a - s * b, s * a + c * b
                for i in range(n):
                    a, b = G[p, i], G[k, i]
                    G[p, i], G[k, i] = c * a - s * b, s * a + c * b
        if not rotated:
            break
    largest = 0.0
    for k in range(n):
        largest = max(largest, np.sqrt(np.sum(U[k] * U[k])))
    w[:] = 0.0
    for k in range(n):
        norm2 = np.sum(U[k] * U[k])
        if norm2 > 0.0 and np.sqrt(norm2) > rcond * largest:
            coefficient = np.sum(U[k] * r) / norm2
            for j in range(n):
                w[j] += coefficient * G[k, j]
