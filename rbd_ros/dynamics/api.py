"""The public functions of the dynamics core.

Every function except the frame_* ones takes a leading batch axis: q of shape (N, nq) gives
results with a leading N, equal to N single calls (the loop runs inside the compiled kernel).
A frame is named by its link or by its id (an index into model.frame_names).
Every function takes ``data=``, a workspace from ``model.create_data()``; without it the call
uses the calling thread's own workspace, so threads can share one model.

Each function first tries its compiled entry point directly (:func:`_direct`): the
single-configuration entries are compiled for exactly (float64, 1-D, C-contiguous, writable)
arrays and check lengths and finiteness themselves, so a good call costs one dispatch.
Anything else (lists, other dtypes, batches, mimic joints, external wrenches, bad values) takes
the validating path (arguments.py), which converts, and raises a ValueError naming the argument.
The fast path's few lines are written out in each function rather than in one helper that
allocates and calls: a Python call more costs ~50 ns of a ~1 us call.
"""
from collections.abc import Mapping

import numpy as np

from . import layout as L
from ._jit import JIT_ENABLED
from .arguments import (F64, array, arrays, batch_of, external_wrenches, frame_number, full_q,
                        full_v, raise_status, reduce_tau, run, single, workspace)
from .checks import SINGULAR, STATUS_STRIDE
from .entry_points import (aba_batch, aba_derivatives_batch, aba_derivatives_entry, aba_entry,
                           aba_fext_entry, center_of_mass_batch,
                           center_of_mass_entry, center_of_mass_jacobian_batch,
                           center_of_mass_jacobian_entry, centroidal_momentum_batch,
                           centroidal_momentum_entry, centroidal_momentum_matrix_batch,
                           centroidal_momentum_matrix_entry, coriolis_batch, coriolis_entry,
                           crba_batch, crba_entry, difference_batch, difference_entry,
                           frame_jacobian_entry, frame_motion_entry, frame_placements_entry,
                           frame_velocity_derivatives_batch,
                           frame_velocity_derivatives_entry, gravity_batch,
                           gravity_derivatives_batch, gravity_derivatives_entry, gravity_entry,
                           integrate_batch, integrate_entry,
                           interpolate_batch, interpolate_entry,
                           kinetic_energy_batch, kinetic_energy_entry, potential_energy_batch,
                           potential_energy_entry, regressor_batch, regressor_entry, rnea_batch,
                           rnea_derivatives_batch, rnea_derivatives_entry, rnea_entry,
                           rnea_fext_entry)
from .spd import ltdl_factor, ltdl_solve

REFERENCES = ('world', 'local', 'local_world_aligned')
_empty = np.empty   # (a module global: ~30 ns less per call than np.empty)
_REFERENCE_CODES = {'world': L.REFERENCE_WORLD, 'local': L.REFERENCE_LOCAL,
                    'local_world_aligned': L.REFERENCE_LOCAL_WORLD_ALIGNED}

if JIT_ENABLED:
    def _direct(entry, *args):
        """The status of ``entry`` on arguments of exactly its compiled types (OK: 0), or -1
        when one is not (numba's dispatcher raises TypeError): then, as for any non-zero
        status, the caller takes its validating path, which converts or raises. A batch (its
        q, the argument after the handle, has rows) goes there at once: the TypeError's
        message alone costs the dispatcher a few hundred microseconds."""
        if getattr(args[1], 'ndim', 1) != 1:
            return -1
        try:
            return entry(*args)
        except TypeError:
            return -1
else:  # interpreted kernels would take anything (a list, a wrong shape): always validate
    def _direct(entry, *args):
        return -1


def _handle(model, data):
    """The handle the compiled entries read: of ``data``, or of the calling thread's own
    workspace (one attribute look-up: the fast paths' common case)."""
    return model._thread.handle if data is None else workspace(model, data).handle


# ---- dynamics ---------------------------------------------------------------------------------
def inverse_dynamics(model, q, v, a, f_ext=None, data=None):
    """RNEA: tau = M(q) a + C(q, v) v + g(q) - sum J^T f_ext."""
    if f_ext is None and model.direct:
        h = _handle(model, data)
        tau = _empty(model.nv)
        if not _direct(rnea_entry, h, q, v, a, tau):
            return tau
    q, v, a = arrays(model, q=q, v=v, a=a)
    return _rnea(model, workspace(model, data), q, v, a, f_ext)


def _rnea(model, d, q, v, a, f_ext):
    batch = batch_of(q)
    fext = external_wrenches(model, d, f_ext, batch)
    tau = np.empty(q.shape[:-1] + (model.nv_full,))
    run(rnea_fext_entry, rnea_batch, d, batch, ('q', 'v', 'a'), full_q(model, q),
        full_v(model, v), full_v(model, a), fext, tau, parallel=True)
    return reduce_tau(model, tau)


def gravity_torques(model, q, data=None):
    """g(q): the torques that hold the robot still against gravity."""
    if model.direct:
        h = _handle(model, data)
        tau = _empty(model.nv)
        if not _direct(gravity_entry, h, q, tau):
            return tau
    (q,) = arrays(model, q=q)
    tau = np.empty(q.shape[:-1] + (model.nv_full,))
    run(gravity_entry, gravity_batch, workspace(model, data), batch_of(q), ('q',), full_q(model, q), tau,
        parallel=True)
    return reduce_tau(model, tau)


def nonlinear_effects(model, q, v, data=None):
    """C(q, v) v + g(q)."""
    d = workspace(model, data)
    if model.direct:
        tau = _empty(model.nv)
        if not _direct(rnea_entry, d.handle, q, v, d.zero_v, tau):
            return tau
    q, v = arrays(model, q=q, v=v)
    return _rnea(model, d, q, v, np.zeros_like(v), None)


def mass_matrix(model, q, data=None):
    """CRBA: the joint-space inertia matrix M(q) (armature included), symmetric positive
    definite."""
    if model.direct:
        h = _handle(model, data)
        H = _empty((model.nv, model.nv))
        if not _direct(crba_entry, h, q, H):
            return H
    (q,) = arrays(model, q=q)
    H = np.empty(q.shape[:-1] + (model.nv_full, model.nv_full))
    run(crba_entry, crba_batch, workspace(model, data), batch_of(q), ('q',), full_q(model, q), H, parallel=True)
    if model.has_mimic:
        G = model.mimic_map
        H = G.T @ H @ G
        H = 0.5 * (H + np.swapaxes(H, -1, -2))    # exactly symmetric despite round-off
    return H


def coriolis_matrix(model, q, v, data=None):
    """C(q, v) with C v = nonlinear_effects - gravity and dM/dt = C + C^T (Pinocchio's)."""
    d = workspace(model, data)
    q, v = arrays(model, q=q, v=v)
    C = np.empty(q.shape[:-1] + (model.nv_full, model.nv_full))
    run(coriolis_entry, coriolis_batch, d, batch_of(q), ('q', 'v'), full_q(model, q),
        full_v(model, v), C)
    if model.has_mimic:
        G = model.mimic_map
        C = G.T @ C @ G
    return C


def forward_dynamics(model, q, v, tau, f_ext=None, method='aba', data=None):
    """vdot = M^-1 (tau - C v - g + sum J^T f_ext).

    ``method='aba'`` runs the articulated-body algorithm (O(n)); ``'crba'`` builds M and
    solves with its branch-induced sparse L^T D L factorisation (spd.py). Models with mimic
    joints always take the CRBA route (their reduced M couples branches)."""
    if method == 'aba' and f_ext is None and model.direct:
        h = _handle(model, data)
        vdot = _empty(model.nv)
        if not _direct(aba_entry, h, q, v, tau, vdot):
            return vdot
    if method not in ('aba', 'crba'):
        raise ValueError(f"method must be 'aba' or 'crba', got {method!r}")
    q, v, tau = arrays(model, q=q, v=v, tau=tau)
    d = workspace(model, data)
    if method == 'crba' or model.has_mimic:
        return _forward_dynamics_crba(model, d, q, v, tau, f_ext)
    batch = batch_of(q)
    vdot = np.empty_like(v)
    run(aba_fext_entry, aba_batch, d, batch, ('q', 'v', 'tau'), q, v, tau,
        external_wrenches(model, d, f_ext, batch), vdot, parallel=True)
    return vdot


def _forward_dynamics_crba(model, d, q, v, tau, f_ext):
    bias = _rnea(model, d, q, v, np.zeros_like(v), f_ext)
    if not np.all(np.isfinite(tau)):
        raise ValueError('tau contains NaN or inf')
    H = mass_matrix(model, q, data=d)
    rhs = tau - bias
    # the same factorisation over the DoF parent array; with mimic joints G^T M G couples
    # branches, so over a chain (dense)
    parent = np.arange(-1, model.nv - 1, dtype=np.int64) if model.has_mimic else model._dof_parent
    if rhs.ndim == 1:
        H, rhs = H[None], rhs[None]
    for n in range(rhs.shape[0]):
        if not ltdl_factor(H[n], parent):
            raise_status(n * STATUS_STRIDE + SINGULAR, (), tau.ndim == 2)
        ltdl_solve(H[n], parent, rhs[n])
    return rhs if tau.ndim == 2 else rhs[0]


# ---- derivatives (derivatives.py; docs/core.md, "Derivatives") ------------------------------
def inverse_dynamics_derivatives(model, q, v, a, f_ext=None, data=None):
    """(dtau_dq, dtau_dv, M): the derivatives of tau = inverse_dynamics(q, v, a, f_ext) with
    respect to q, v and a (dtau/da = M(q)), nv x nv each, analytical (Carpentier and Mansard,
    RSS 2018; Pinocchio's computeRNEADerivatives). q moves in the tangent space, as integrate
    moves it: column j of dtau_dq is d tau(q (+) e_j t) / dt at t = 0, so a floating base's six
    columns are those of its twist in its own frame (Pinocchio's). f_ext's wrenches move with
    their links. (N, nv, nv) each for N states."""
    if f_ext is None and model.direct:
        d = model._thread.data if data is None else workspace(model, data)
        shape = (model.nv, model.nv)
        dq, dv, M = _empty(shape), _empty(shape), _empty(shape)
        if not _direct(rnea_derivatives_entry, d.handle, q, v, a, d.zero_fext, dq, dv, M):
            return dq, dv, M
    q, v, a = arrays(model, q=q, v=v, a=a)
    return _rnea_derivatives(model, workspace(model, data), q, v, a, f_ext)


def _rnea_derivatives(model, d, q, v, a, f_ext):
    batch = batch_of(q)
    shape = q.shape[:-1] + (model.nv_full, model.nv_full)
    dq, dv, M = np.empty(shape), np.empty(shape), np.empty(shape)
    run(rnea_derivatives_entry, rnea_derivatives_batch, d, batch, ('q', 'v', 'a'),
        full_q(model, q), full_v(model, v), full_v(model, a),
        external_wrenches(model, d, f_ext, batch), dq, dv, M, parallel=True)
    if not model.has_mimic:
        return dq, dv, M
    G = model.mimic_map        # q_full = q_full(q) moves by G dq, v_full = G v: G^T X G
    M = G.T @ M @ G
    return G.T @ dq @ G, G.T @ dv @ G, 0.5 * (M + np.swapaxes(M, -1, -2))


def forward_dynamics_derivatives(model, q, v, tau, f_ext=None, data=None):
    """(dqdd_dq, dqdd_dv, Minv): the derivatives of qdd = forward_dynamics(q, v, tau, f_ext)
    with respect to q (tangent space, as inverse_dynamics_derivatives), v and tau (= M(q)^-1),
    nv x nv each (Pinocchio's computeABADerivatives): -M^-1 dtau/dq and -M^-1 dtau/dv at
    a = qdd, M^-1 from M's branch-induced factorisation. (N, nv, nv) each for N states."""
    if f_ext is None and model.direct:
        d = model._thread.data if data is None else workspace(model, data)
        shape = (model.nv, model.nv)
        dq, dv, Minv = _empty(shape), _empty(shape), _empty(shape)
        if not _direct(aba_derivatives_entry, d.handle, q, v, tau, d.zero_fext, dq, dv, Minv):
            return dq, dv, Minv
    q, v, tau = arrays(model, q=q, v=v, tau=tau)
    d = workspace(model, data)
    if model.has_mimic:     # M = G^T M_full G couples branches: a dense inverse
        qdd = forward_dynamics(model, q, v, tau, f_ext, data=d)
        dtau_dq, dtau_dv, M = _rnea_derivatives(model, d, q, v, qdd, f_ext)
        Minv = np.linalg.inv(M)
        Minv = 0.5 * (Minv + np.swapaxes(Minv, -1, -2))
        return -Minv @ dtau_dq, -Minv @ dtau_dv, Minv
    batch = batch_of(q)
    shape = q.shape[:-1] + (model.nv, model.nv)
    dq, dv, Minv = np.empty(shape), np.empty(shape), np.empty(shape)
    run(aba_derivatives_entry, aba_derivatives_batch, d, batch, ('q', 'v', 'tau'), q, v, tau,
        external_wrenches(model, d, f_ext, batch), dq, dv, Minv, parallel=True)
    return dq, dv, Minv


def gravity_torques_derivatives(model, q, data=None):
    """dg/dq (nv x nv) of the gravity torques g(q), q in the tangent space (as
    inverse_dynamics_derivatives; Pinocchio's computeGeneralizedGravityDerivatives). (N, nv,
    nv) for N configurations."""
    if model.direct:
        h = _handle(model, data)
        dg = _empty((model.nv, model.nv))
        if not _direct(gravity_derivatives_entry, h, q, dg):
            return dg
    (q,) = arrays(model, q=q)
    dg = np.empty(q.shape[:-1] + (model.nv_full, model.nv_full))
    run(gravity_derivatives_entry, gravity_derivatives_batch, workspace(model, data),
        batch_of(q), ('q',), full_q(model, q), dg, parallel=True)
    if model.has_mimic:
        G = model.mimic_map
        dg = G.T @ dg @ G
    return dg


def inertial_regressor(model, q, v, a, link=None, data=None):
    """Y (nv x 10 nbodies) with ``Y @ model.inertial_parameters()`` = the inverse dynamics
    without the armature's term (ID = Y pi + armature a for a model without mimic joints): the
    torques are linear in each body's ten inertial parameters (model.body_names order,
    Pinocchio's layout: see Model.inertial_parameters). Batched like the others: (N, nv, 10
    nbodies) for N configurations. Pinocchio's computeJointTorqueRegressor, column for column
    once bodies are matched.

    ``link`` (a link name or frame id): only the ten columns of the body that carries that link
    (nv x 10), what a payload on it multiplies; a fraction of the whole regressor's cost."""
    q, v, a = arrays(model, q=q, v=v, a=a)
    d = workspace(model, data)
    batch = batch_of(q)
    if link is None:
        first, count = 1, len(model.body_names)
    else:
        try:
            link = model.frame_names[model.frame_id(link)]
        except ValueError:
            raise ValueError(f'unknown link {link!r}') from None
        first, count = model._link_body[link], 1
        if first == 0:
            raise ValueError(f'{link!r} belongs to the fixed base: no inertial parameters of '
                             'its own move anything')
    Y = np.empty(q.shape[:-1] + (model.nv_full, 10 * count))
    run(regressor_entry, regressor_batch, d, batch, ('q', 'v', 'a'), full_q(model, q),
        full_v(model, v), full_v(model, a), Y, first, count)
    if model.has_mimic:     # tau = G^T tau_full, column by column
        Y = np.einsum('kj,...kc->...jc', model.mimic_map, Y)
    return Y


def joint_friction_torques(model, v):
    """The joints' own resistance at velocity v (URDF <dynamics>): -damping v - friction sign(v),
    per public velocity (a mimic joint's own damping and friction are not counted).

    A separate term, not part of inverse or forward dynamics: a node adds it to simulate the
    joints, or subtracts it to compensate them. Coulomb friction at v = 0 is 0 here: holding
    a joint still against a torque below its friction level is the simulator's job (stiction)."""
    v = array(v, model.nv, 'v')
    if not np.all(np.isfinite(v)):
        raise ValueError('v contains NaN or inf')
    return -(model.damping * v + model.friction * np.sign(v))


# ---- kinematics -------------------------------------------------------------------------------
class FramePoses(Mapping):
    """{link name: 4x4 world pose}, backed by one (n_frames, 4, 4) array (``.array``)."""

    __slots__ = ('array', '_index')

    def __init__(self, array, index):
        self.array = array
        self._index = index

    def __getitem__(self, name):
        return self.array[self._index[name]]

    def __iter__(self):
        return iter(self._index)

    def __len__(self):
        return len(self._index)


def frame_poses(model, q, out=None, data=None):
    """World pose (4x4) of every link frame, as a mapping {link name: pose}.

    ``out``: a FramePoses returned by an earlier call on this model, overwritten in place and
    returned, as Pinocchio overwrites data.oMf: no allocation, for high-rate loops."""
    if model.direct:
        h = _handle(model, data)
        if out is None:
            poses = _empty(model.frame_poses_shape)
            if not _direct(frame_placements_entry, h, q, poses):
                return FramePoses(poses, model.frame_index)
        elif type(out) is FramePoses and out._index is model.frame_index and \
                not _direct(frame_placements_entry, h, q, out.array):
            return out
    (q,) = arrays(model, q=q)
    single(q, 'frame_poses')
    if out is None:
        out = FramePoses(np.empty(model.frame_poses_shape), model.frame_index)
    elif not (isinstance(out, FramePoses) and out._index == model.frame_index
              and isinstance(out.array, np.ndarray) and out.array.dtype == F64
              and out.array.shape == model.frame_poses_shape and out.array.flags.c_contiguous
              and out.array.flags.writeable):
        raise ValueError('out must be a FramePoses returned by frame_poses on this model')
    run(frame_placements_entry, None, workspace(model, data), None, ('q',), full_q(model, q), out.array)
    return out


def frame_pose(model, q, frame, data=None):
    """World pose (4x4) of one link frame (a link name or a frame id), at one configuration."""
    f = frame_number(model, frame)
    if model.direct:
        h = _handle(model, data)
        poses = _empty(model.frame_poses_shape)
        if not _direct(frame_placements_entry, h, q, poses):
            return poses[f].copy()
    (q,) = arrays(model, q=q)
    single(q, 'frame_pose')
    return frame_poses(model, q, data=data).array[f].copy()


def _reference(reference):
    try:
        return _REFERENCE_CODES[reference]
    except (KeyError, TypeError):
        raise ValueError(f'reference must be one of {REFERENCES}, got {reference!r}') from None


def _frame_motion(model, q, v, a, frame, reference, data, what):
    """[twist; classical acceleration] of a frame in ``reference``."""
    f, ref = frame_number(model, frame), _reference(reference)
    d = workspace(model, data)
    if a is None:       # (a velocity: no acceleration, and none to match v's shape)
        q, v = arrays(model, q=q, v=v)
        a = np.zeros(model.nv)
    else:
        q, v, a = arrays(model, q=q, v=v, a=a)
    single(q, what)
    out = np.empty(12)
    run(frame_motion_entry, None, d, None, ('q', 'v', 'a'), full_q(model, q), full_v(model, v),
        full_v(model, a), f, ref, out)
    return out


def frame_velocity(model, q, v, frame, reference='local_world_aligned', data=None):
    """Twist [v; w] of a link frame in the given reference."""
    return _frame_motion(model, q, v, None, frame, reference, data, 'frame_velocity')[:6]


def frame_acceleration(model, q, v, a, frame, reference='local_world_aligned', data=None):
    """Classical acceleration [a; alpha] of a link frame: for 'local' and
    'local_world_aligned' the second derivative of the frame origin; for 'world' that of the
    body point at the world origin (as Pinocchio's getFrameClassicalAcceleration)."""
    return _frame_motion(model, q, v, a, frame, reference, data, 'frame_acceleration')[6:]


def frame_jacobian(model, q, frame, reference='local_world_aligned', data=None):
    """6 x nv Jacobian J with J v = frame_velocity(q, v, frame, reference)."""
    f, ref = frame_number(model, frame), _reference(reference)
    d = workspace(model, data)
    (q,) = arrays(model, q=q)
    single(q, 'frame_jacobian')
    J = np.empty((6, model.nv_full))
    run(frame_jacobian_entry, None, d, None, ('q',), full_q(model, q), f, ref, J)
    return J @ model.mimic_map if model.has_mimic else J


def frame_velocity_derivatives(model, q, v, frame, reference='local_world_aligned', data=None):
    """(dv_dq, dv_dv), 6 x nv each: the derivatives of frame_velocity(q, v, frame, reference)
    with respect to q (tangent space, as inverse_dynamics_derivatives) and v (dv_dv is the
    frame's Jacobian). For 'world' and 'local' these are Pinocchio's getFrameVelocityDerivatives;
    for 'local_world_aligned' this is the derivative of the twist at the frame's origin, which
    moves with q (Pinocchio's holds the origin fixed: ours minus w x dp/dq, docs/core.md). A
    frame's pose needs no function of its own: oMf(q (+) dq) = oMf(q) exp(J dq), J the frame's
    'local' Jacobian. (N, 6, nv) each for N states."""
    f, ref = frame_number(model, frame), _reference(reference)
    d = workspace(model, data)
    q, v = arrays(model, q=q, v=v)
    dv_dq, dv_dv = (np.empty(q.shape[:-1] + (6, model.nv_full)) for _ in range(2))
    run(frame_velocity_derivatives_entry, frame_velocity_derivatives_batch, d, batch_of(q),
        ('q', 'v'), full_q(model, q), full_v(model, v), f, ref, dv_dq, dv_dv)
    if model.has_mimic:
        return dv_dq @ model.mimic_map, dv_dv @ model.mimic_map
    return dv_dq, dv_dv


def center_of_mass(model, q, data=None):
    """World centre of mass of the moving bodies."""
    d = workspace(model, data)
    (q,) = arrays(model, q=q)
    out = np.empty(q.shape[:-1] + (4,))
    run(center_of_mass_entry, center_of_mass_batch, d, batch_of(q), ('q',), full_q(model, q), out)
    return out[..., :3]


def center_of_mass_jacobian(model, q, data=None):
    """3 x nv Jacobian of the centre of mass: J v is its world velocity (Pinocchio's
    jacobianCenterOfMass). (N, 3, nv) for N configurations."""
    return _velocity_map(model, data, q, 3, center_of_mass_jacobian_entry,
                         center_of_mass_jacobian_batch)


def centroidal_momentum(model, q, v, data=None):
    """h_G = [m v_G; L_G] (6): the robot's linear momentum, then its angular momentum about
    the centre of mass, in world axes (Pinocchio's computeCentroidalMomentum; the armature is
    not counted). (N, 6) for N states."""
    if model.direct:
        h = _handle(model, data)
        out = _empty(6)
        if not _direct(centroidal_momentum_entry, h, q, v, out):
            return out
    d = workspace(model, data)
    q, v = arrays(model, q=q, v=v)
    out = np.empty(q.shape[:-1] + (6,))
    run(centroidal_momentum_entry, centroidal_momentum_batch, d, batch_of(q), ('q', 'v'),
        full_q(model, q), full_v(model, v), out)
    return out


def centroidal_momentum_matrix(model, q, data=None):
    """A_G (6 x nv), with A_G v = centroidal_momentum(q, v) (Pinocchio's ccrba Ag): its first
    three rows are total mass times the centre of mass Jacobian. (N, 6, nv) for N
    configurations."""
    return _velocity_map(model, data, q, 6, centroidal_momentum_matrix_entry,
                         centroidal_momentum_matrix_batch)


def _velocity_map(model, data, q, rows, entry, batch):
    """A (rows x nv) matrix of q that multiplies velocities (COM Jacobian, A_G): the compiled
    single call when the model has no mimic joints, else the batched one on the full
    coordinates, mapped onto the leaders' velocities."""
    if model.direct:
        h = _handle(model, data)
        out = _empty((rows, model.nv))
        if not _direct(entry, h, q, out):
            return out
    d = workspace(model, data)
    (q,) = arrays(model, q=q)
    out = np.empty(q.shape[:-1] + (rows, model.nv_full))
    run(entry, batch, d, batch_of(q), ('q',), full_q(model, q), out)
    return out @ model.mimic_map if model.has_mimic else out


def kinetic_energy(model, q, v, data=None):
    """1/2 v^T M(q) v (armature included)."""
    d = workspace(model, data)
    q, v = arrays(model, q=q, v=v)
    out = np.empty(q.shape[:-1] + (1,))
    run(kinetic_energy_entry, kinetic_energy_batch, d, batch_of(q), ('q', 'v'), full_q(model, q),
        full_v(model, v), out)
    return float(out[0]) if q.ndim == 1 else out[:, 0]


def potential_energy(model, q, data=None):
    """-sum m_i g . c_i over the moving bodies."""
    d = workspace(model, data)
    (q,) = arrays(model, q=q)
    out = np.empty(q.shape[:-1] + (1,))
    run(potential_energy_entry, potential_energy_batch, d, batch_of(q), ('q',), full_q(model, q),
        out)
    return float(out[0]) if q.ndim == 1 else out[:, 0]


def integrate(model, q, v, dt, data=None):
    """q (+) v dt on the configuration manifold (quaternions stay unit)."""
    if model.direct:
        h = _handle(model, data)
        out = _empty(model.nq)
        if not _direct(integrate_entry, h, q, v, dt, out):
            return out
    q, v = arrays(model, q=q, v=v)
    try:
        dt = float(dt)
    except (TypeError, ValueError):
        raise ValueError(f'dt must be a number, got {dt!r}') from None
    if not np.isfinite(dt):
        raise ValueError(f'dt must be finite, got {dt}')
    qf = full_q(model, q)
    out = np.empty_like(qf)
    run(integrate_entry, integrate_batch, workspace(model, data), batch_of(q), ('q', 'v'), qf, full_v(model, v), dt,
        out)
    return out[..., model.q_full_index] if model.has_mimic else out


def integrate_derivatives(model, q, v, dt=1.0, data=None):
    """(dq_next_dq, dq_next_dv), nv x nv each: the derivatives of q_next = integrate(q, v, dt)
    with respect to q and v, both in the tangent space (q (+) dq in, q_next (+) dq_next out;
    Pinocchio's dIntegrate, times dt for v). Block diagonal: 1 for a one-number joint; for a
    floating (planar) joint with w = v dt, Ad(exp(w))^-1 and dt J_r(w), the right Jacobian of
    SE(3) (SE(2)). One configuration; numpy (a few joints' blocks: no kernel, so ``data`` is
    taken as every function takes it, and needs no workspace)."""
    q, v = arrays(model, q=q, v=v)
    single(q, 'integrate_derivatives')
    try:
        dt = float(dt)
    except (TypeError, ValueError):
        raise ValueError(f'dt must be a number, got {dt!r}') from None
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v)) and np.isfinite(dt)):
        raise ValueError('q, v and dt must be finite')
    d_q, d_v = np.eye(model.nv), np.eye(model.nv) * dt
    for joint in model.joints:
        if joint.type not in ('floating', 'planar') or joint.mimic is not None \
                or joint.v_index is None:
            continue
        s = slice(joint.v_index, joint.v_index + joint.nv)
        w = v[s] * dt
        exp_inverse_adjoint, right_jacobian = (_se3_blocks(w) if joint.type == 'floating'
                                               else _se2_blocks(w))
        d_q[s, s] = exp_inverse_adjoint
        d_v[s, s] = dt * right_jacobian
    return d_q, d_v


def _skew(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def _se3_blocks(w):
    """(Ad(exp(w))^-1, J_r(w)) of a twist w = [rho; phi] (6 x 6 each). J_r(w) = J_l(-w), and
    J_l(w) = [[J_l(phi), Q], [0, J_l(phi)]] with Barfoot's Q(rho, phi) (State Estimation for
    Robotics, eq. 7.86); series below 1e-4 rad."""
    rho, phi = w[:3], w[3:]
    t = float(np.linalg.norm(phi))
    if t < 1e-4:
        t2 = t * t
        a, b, c = 1.0 - t2 / 6.0, 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0
        c2, c3 = 1.0 / 24.0 - t2 / 720.0, 1.0 / 120.0 - t2 / 2520.0
    else:
        sin, cos = np.sin(t), np.cos(t)
        a, b, c = sin / t, (1.0 - cos) / t ** 2, (t - sin) / t ** 3
        c2, c3 = (t * t + 2.0 * cos - 2.0) / (2.0 * t ** 4), \
            (2.0 * t - 3.0 * sin + t * cos) / (2.0 * t ** 5)

    def left(rho, phi):       # J_l(phi) (SO(3)) and Q(rho, phi); the coefficients are even
        P, X = _skew(phi), _skew(rho)
        PX, XP, PXP = P @ X, X @ P, P @ X @ P
        Q = (0.5 * X + c * (PX + XP + PXP) + c2 * (P @ PX + XP @ P - 3.0 * PXP)
             + c3 * (PXP @ P + P @ PXP))
        return np.eye(3) + b * P + c * P @ P, Q

    P = _skew(phi)
    R = np.eye(3) + a * P + b * P @ P                 # exp(w) = (R, J_l(phi) rho)
    p = left(rho, phi)[0] @ rho
    adjoint_inverse = np.zeros((6, 6))
    adjoint_inverse[:3, :3] = adjoint_inverse[3:, 3:] = R.T
    adjoint_inverse[:3, 3:] = -R.T @ _skew(p)
    rotation, Q = left(-rho, -phi)
    right = np.zeros((6, 6))
    right[:3, :3] = right[3:, 3:] = rotation
    right[:3, 3:] = Q
    return adjoint_inverse, right


def _se2_blocks(w):
    """(Ad(exp(w))^-1, J_r(w)) of a planar twist w = (rho_x, rho_y, phi) (3 x 3 each):
    Ad(R, p) = [[R, (p_y, -p_x)], [0, 1]], and J_l(w) = integral of Ad(exp(s w)) ds over
    [0, 1] = [[V(phi), (P_y, -P_x)], [0, 1]] with P = [[A, -B], [B, A]] rho, A = (1 - cos)/phi^2,
    B = (phi - sin)/phi^2; J_r(w) = J_l(-w)."""
    rx, ry, phi = w
    if abs(phi) < 1e-4:
        sinc, cosc = 1.0 - phi * phi / 6.0, phi / 2.0 - phi ** 3 / 24.0
        A, B = 0.5 - phi * phi / 24.0, phi / 6.0 - phi ** 3 / 120.0
    else:
        sinc, cosc = np.sin(phi) / phi, (1.0 - np.cos(phi)) / phi
        A, B = (1.0 - np.cos(phi)) / phi ** 2, (phi - np.sin(phi)) / phi ** 2
    c, s = np.cos(phi), np.sin(phi)
    px, py = sinc * rx - cosc * ry, cosc * rx + sinc * ry       # exp(w) = (R(phi), V rho)
    ix, iy = -(c * px + s * py), -(-s * px + c * py)            # exp(w)^-1 = (R^T, -R^T p)
    adjoint_inverse = np.array([[c, s, iy], [-s, c, -ix], [0.0, 0.0, 1.0]])
    Px, Py = -(A * rx + B * ry), -(-B * rx + A * ry)           # P(-w)
    right = np.array([[sinc, cosc, Py], [-cosc, sinc, -Px], [0.0, 0.0, 1.0]])
    return adjoint_inverse, right


def difference(model, q0, q1, wrap_angles=False, data=None):
    """q1 (-) q0: the velocity v with ``integrate(model, q0, v, 1) = q1`` (a quaternion up to its
    sign), Pinocchio's difference: per joint q1 - q0, and for floating and planar joints the
    local twist log(M0^-1 M1) (SE(3), SE(2)), the inverse of integrate's exponential.

    Angles keep their turns (q = 0 and 2 pi differ), so by default a continuous joint from
    3.0 to -3.0 gives -6.0, exactly what integrate undoes. ``wrap_angles=True`` takes the
    short way for the angles whose pose repeats every 2 pi (continuous joints, a planar
    joint's rotation): each in [-pi, pi), equal to Pinocchio's difference for any two
    configurations. Batched: (N, nv) for N pairs (q0 or q1 may be one configuration)."""
    periodic = model._periodic_velocities()
    wrap = 1 if wrap_angles else 0
    if model.direct:
        h = _handle(model, data)
        out = _empty(model.nv)
        if not _direct(difference_entry, h, q0, q1, periodic, wrap, out):
            return out
    q0, q1 = _pair(model, q0, q1)
    out = np.empty(q0.shape[:-1] + (model.nv_full,))
    run(difference_entry, difference_batch, workspace(model, data), batch_of(q0), ('q0', 'q1'),
        full_q(model, q0), full_q(model, q1), periodic, wrap, out)
    return out[..., model.v_full_index] if model.has_mimic else out


def interpolate(model, q0, q1, u, wrap_angles=False, data=None):
    """The configuration a fraction u of the way from q0 to q1 on the manifold,
    q0 (+) u (q1 (-) q0) (Pinocchio's interpolate with ``wrap_angles=True``): u = 0 gives q0,
    u = 1 gives q1 (to round-off). ``u`` is a number, or an array of N fractions for N
    configurations: a path from one q0 to one q1, or row by row of N pairs."""
    periodic = model._periodic_velocities()
    wrap = 1 if wrap_angles else 0
    if model.direct:
        h = _handle(model, data)
        out = _empty(model.nq)
        if not _direct(interpolate_entry, h, q0, q1, u, periodic, wrap, out):
            return out
    q0, q1 = _pair(model, q0, q1)
    try:
        u = np.array(u, dtype=F64)
    except (TypeError, ValueError):
        raise ValueError(f'u must be a number or a 1-D array of numbers, got {u!r}') from None
    if u.ndim > 1:
        raise ValueError(f'u must be a number or a 1-D array of numbers, got shape {u.shape}')
    if u.ndim == 1:
        if q0.ndim == 2 and q0.shape[0] != u.shape[0]:
            raise ValueError(f'u has {u.shape[0]} fractions but q0 and q1 have '
                             f'{q0.shape[0]} rows')
        q0, q1 = (np.ascontiguousarray(np.broadcast_to(q, (u.shape[0], model.nq)))
                  for q in (q0, q1))
    elif q0.ndim == 2:
        u = np.full(q0.shape[0], float(u))
    else:
        u = float(u)
    qf = full_q(model, q0)
    out = np.empty_like(qf)
    run(interpolate_entry, interpolate_batch, workspace(model, data), batch_of(q0),
        ('q0', 'q1', 'u'), qf, full_q(model, q1), u, periodic, wrap, out)
    return out[..., model.q_full_index] if model.has_mimic else out


def _pair(model, q0, q1):
    """q0 and q1 validated, one configuration repeated to the other's batch when they differ."""
    a = array(q0, model.nq, 'q0', model)
    b = array(q1, model.nq, 'q1', model)
    if a.ndim != b.ndim:
        rows = a.shape[0] if a.ndim == 2 else b.shape[0]
        a = np.ascontiguousarray(np.broadcast_to(a, (rows, model.nq)))
        b = np.ascontiguousarray(np.broadcast_to(b, (rows, model.nq)))
    elif a.ndim == 2 and a.shape[0] != b.shape[0]:
        raise ValueError(f'q0 has shape {a.shape} but q1 has shape {b.shape}; pass single '
                         'configurations or batches of the same N')
    return a, b
