"""The public functions: validate arguments, map public <-> internal coordinates (mimic
joints), run one compiled kernel, turn a status code into a ValueError.

Every function except the frame_* ones takes a leading batch axis: q of shape (N, nq) gives
results with a leading N, equal to N single calls (the loop runs inside the kernel).
The model's workspace is reused by every call: one model must not be used from two threads
at once (build one model per thread).

Each function first tries its kernel directly: the single-configuration kernels are compiled
for exactly (float64, 1-D, C-contiguous, writable) arrays and check lengths and finiteness
themselves, so a good call costs one dispatch. Anything else (lists, other dtypes, batches,
mimic joints, external wrenches, bad values) takes the validating path, which converts, and
raises a ValueError naming the argument.
"""
import threading
from collections.abc import Mapping

import numpy as np

from . import checks
from ._jit import thread_count
from . import layout as L
from .aba import aba_batch, aba_entry as aba
from .configuration import integrate_batch as _integrate_batch, integrate_entry as _integrate
from .coriolis import coriolis_matrix_batch as _coriolis_batch, coriolis_matrix_entry as _coriolis
from .crba import crba_batch, crba_entry as crba, ltl_factor, ltl_solve
from .joints import motion_subspace_column
from .kinematics import (body_motions_entry as body_motions, center_of_mass_batch as _com_batch,
                         center_of_mass_entry as _com, frame_placements_entry as frame_placements,
                         kinetic_energy_batch as _ke_batch, kinetic_energy_entry as _ke,
                         potential_energy_batch as _pe_batch, potential_energy_entry as _pe)
from .rnea import (gravity_rnea_batch, gravity_rnea_entry as gravity_rnea, rnea_batch,
                   rnea_entry as rnea)

REFERENCES = ('world', 'local', 'local_world_aligned')
_THREAD_POOL = threading.Lock()   # batches run on numba's thread pool: one at a time
_F64 = np.float64


# ---- argument handling ---------------------------------------------------------------
def _array(x, n, name):
    a = np.ascontiguousarray(x, dtype=_F64)
    if not a.flags.writeable:   # read-only arrays are another numba type: avoid a recompile
        a = a.copy()
    if a.ndim == 1:
        if a.shape[0] == n:
            return a
    elif a.ndim == 2 and a.shape[1] == n:
        return a
    raise ValueError(f'{name} must have shape ({n},) or (N, {n}), got {np.shape(x)}')


def _arrays(model, **named):
    """Validate q (nq) and velocity-sized arguments; all single or all batched alike."""
    out, batch = [], None
    for name, value in named.items():
        a = _array(value, model.nq if name == 'q' else model.nv, name)
        shape = a.shape[0] if a.ndim == 2 else None
        if batch is not None and shape != batch[1]:
            raise ValueError(f'{name} has shape {a.shape} but {batch[0]} has a different '
                             'batch shape; pass all single or all with the same N')
        batch = batch or (name, shape)
        out.append(a)
    return out


def _raise_status(status, names, batched):
    index, code = divmod(status, checks.STATUS_STRIDE)
    where = f' (configuration {index} of the batch)' if batched else ''
    if code == checks.ZERO_QUATERNION:
        raise ValueError(f'q has a zero quaternion for a floating joint{where}')
    if code == checks.BAD_FEXT:
        raise ValueError(f'f_ext contains NaN or inf{where}')
    if code in (checks.BAD_Q, checks.BAD_V, checks.BAD_THIRD):
        raise ValueError(f'{names[code - 1]} contains NaN or inf{where}')
    raise FloatingPointError(f'the model is singular at this configuration{where}')


def _full_q(model, q):
    """Public q -> internal q (mimic joints get their own coordinate)."""
    if not model.has_mimic:
        return q
    full = np.zeros(q.shape[:-1] + (model.nq_full,))
    full[..., model.q_full_index] = q
    for qf, _, ql, _, multiplier, offset in model._mimic_rows:
        full[..., qf] = multiplier * q[..., ql] + offset
    return full


def _full_v(model, v):
    return v if not model.has_mimic else v @ model.mimic_map.T


def _reduce_tau(model, tau_full):
    return tau_full if not model.has_mimic else tau_full @ model.mimic_map


def _external_wrenches(model, f_ext, batch):
    """{link: [f; tau] in the link frame about its origin} -> per-body wrenches (body frame)."""
    if f_ext is None:
        return model.zero_fext if batch is None else model.zero_fext[None]
    if not isinstance(f_ext, Mapping):
        raise ValueError('f_ext must map link names to wrenches [fx, fy, fz, tx, ty, tz]')
    shape = (model.body_int.shape[0], 6) if batch is None else (batch, model.body_int.shape[0], 6)
    out = np.zeros(shape)
    for link, wrench in f_ext.items():
        if link not in model.frame_index:
            raise ValueError(f'f_ext names unknown link {link!r}')
        w = np.asarray(wrench, dtype=_F64)
        if w.shape not in ((6,), (batch, 6)):
            expected = '(6,)' if batch is None else f'(6,) or ({batch}, 6)'
            raise ValueError(f'f_ext[{link!r}] must have shape {expected}, got {w.shape}')
        f = model.frame_index[link]
        E = model.frame_placement[f, :9].reshape(3, 3)
        r = model.frame_placement[f, 9:]
        force = w[..., :3] @ E.T
        torque = w[..., 3:] @ E.T + np.cross(r, force)
        out[..., model.frame_body[f], :3] += force
        out[..., model.frame_body[f], 3:] += torque
    return out


def _batch_of(a):
    return a.shape[0] if a.ndim == 2 else None


# ---- dynamics --------------------------------------------------------------------------
def inverse_dynamics(model, q, v, a, f_ext=None):
    """RNEA: tau = M(q) a + C(q, v) v + g(q) - sum J^T f_ext."""
    if f_ext is None and model.direct:
        tau = np.empty(model.nv)
        try:
            if rnea(model.kernel_int, model.kernel_float, model.ws_flat, q, v, a, model.zero_fext, tau) == 0:
                return tau
        except TypeError:
            pass
    q, v, a = _arrays(model, q=q, v=v, a=a)
    return _rnea(model, q, v, a, f_ext, ('q', 'v', 'a'))


def _rnea(model, q, v, a, f_ext, names):
    batch = _batch_of(q)
    fext = _external_wrenches(model, f_ext, batch)
    qf, vf, af = _full_q(model, q), _full_v(model, v), _full_v(model, a)
    tau = np.empty(q.shape[:-1] + (model.nv_full,))
    if batch is None:
        status = rnea(model.kernel_int, model.kernel_float, model.ws_flat, qf, vf, af, fext, tau)
    else:
        with _THREAD_POOL:
            status = rnea_batch(model.kernel_int, model.kernel_float, model.ws_flat, qf, vf, af,
                                fext, tau, thread_count())
    if status:
        _raise_status(status, names, batch is not None)
    return _reduce_tau(model, tau)


def gravity_torques(model, q):
    """g(q): the torques that hold the robot still against gravity."""
    if model.direct:
        tau = np.empty(model.nv)
        try:
            if gravity_rnea(model.kernel_int, model.kernel_float, model.ws_flat, q, tau) == 0:
                return tau
        except TypeError:
            pass
    (q,) = _arrays(model, q=q)
    batch = _batch_of(q)
    qf = _full_q(model, q)
    tau = np.empty(q.shape[:-1] + (model.nv_full,))
    args = (model.kernel_int, model.kernel_float, model.ws_flat, qf, tau)
    if batch is None:
        status = gravity_rnea(*args)
    else:
        with _THREAD_POOL:
            status = gravity_rnea_batch(*args, thread_count())
    if status:
        _raise_status(status, ('q',), batch is not None)
    return _reduce_tau(model, tau)


def nonlinear_effects(model, q, v):
    """C(q, v) v + g(q)."""
    if model.direct:
        tau = np.empty(model.nv)
        try:
            if rnea(model.kernel_int, model.kernel_float, model.ws_flat, q, v, model.zero_v,
                    model.zero_fext, tau) == 0:
                return tau
        except TypeError:
            pass
    q, v = _arrays(model, q=q, v=v)
    return _rnea(model, q, v, np.zeros_like(v), None, ('q', 'v', 'a'))


def mass_matrix(model, q):
    """CRBA: the joint-space inertia matrix M(q), symmetric positive definite."""
    if model.direct:
        H = np.empty((model.nv, model.nv))
        try:
            if crba(model.kernel_int, model.kernel_float, model.ws_flat, q, H) == 0:
                return H
        except TypeError:
            pass
    (q,) = _arrays(model, q=q)
    batch = _batch_of(q)
    qf = _full_q(model, q)
    H = np.empty(q.shape[:-1] + (model.nv_full, model.nv_full))
    if batch is None:
        status = crba(model.kernel_int, model.kernel_float, model.ws_flat, qf, H)
    else:
        with _THREAD_POOL:
            status = crba_batch(model.kernel_int, model.kernel_float, model.ws_flat, qf, H,
                                thread_count())
    if status:
        _raise_status(status, ('q',), batch is not None)
    if model.has_mimic:
        G = model.mimic_map
        H = G.T @ H @ G
        H = 0.5 * (H + np.swapaxes(H, -1, -2))    # exactly symmetric despite round-off
    return H


def coriolis_matrix(model, q, v):
    """C(q, v) with C v = nonlinear_effects - gravity and dM/dt = C + C^T (Pinocchio's)."""
    q, v = _arrays(model, q=q, v=v)
    batch = _batch_of(q)
    qf, vf = _full_q(model, q), _full_v(model, v)
    C = np.empty(q.shape[:-1] + (model.nv_full, model.nv_full))
    args = (model.kernel_int, model.kernel_float, model.ws_flat, model.dof_ws_flat,
            model.kernel_dof_parent, qf, vf, C)
    status = _coriolis(*args) if batch is None else _coriolis_batch(*args)
    if status:
        _raise_status(status, ('q', 'v'), batch is not None)
    if model.has_mimic:
        G = model.mimic_map
        C = G.T @ C @ G
    return C


def forward_dynamics(model, q, v, tau, f_ext=None, method='aba'):
    """qdd = M^-1 (tau - C v - g + sum J^T f_ext).

    ``method='aba'`` runs the articulated-body algorithm (O(n)); ``'crba'`` builds M and
    solves with its branch-induced sparse L^T L factorisation. Models with mimic joints
    always take the CRBA route (their reduced M couples branches)."""
    if method == 'aba' and f_ext is None and model.direct:
        qdd = np.empty(model.nv)
        try:
            if aba(model.kernel_int, model.kernel_float, model.ws_flat, q, v, tau, model.zero_fext, qdd) == 0:
                return qdd
        except TypeError:
            pass
    if method not in ('aba', 'crba'):
        raise ValueError(f"method must be 'aba' or 'crba', got {method!r}")
    q, v, tau = _arrays(model, q=q, v=v, tau=tau)
    batch = _batch_of(q)
    if method == 'crba' or model.has_mimic:
        return _forward_dynamics_crba(model, q, v, tau, f_ext)
    fext = _external_wrenches(model, f_ext, batch)
    qdd = np.empty_like(v)
    args = (model.kernel_int, model.kernel_float, model.ws_flat, q, v, tau, fext, qdd)
    if batch is None:
        status = aba(*args)
    else:
        with _THREAD_POOL:
            status = aba_batch(*args, thread_count())
    if status:
        _raise_status(status, ('q', 'v', 'tau'), batch is not None)
    return qdd


def _forward_dynamics_crba(model, q, v, tau, f_ext):
    bias = _rnea(model, q, v, np.zeros_like(v), f_ext, ('q', 'v', 'a'))
    if not np.all(np.isfinite(tau)):
        raise ValueError('tau contains NaN or inf')
    H = mass_matrix(model, q)
    rhs = tau - bias
    if model.has_mimic:
        return np.linalg.solve(H, rhs[..., None])[..., 0]
    if rhs.ndim == 1:
        H, rhs = H[None], rhs[None]
    for n in range(rhs.shape[0]):
        if not ltl_factor(H[n], model.kernel_dof_parent):
            raise FloatingPointError('the mass matrix is not positive definite')
        ltl_solve(H[n], model.kernel_dof_parent, rhs[n])
    return rhs if tau.ndim == 2 else rhs[0]


# ---- kinematics ------------------------------------------------------------------------
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


def frame_poses(model, q, out=None):
    """World pose (4x4) of every link frame, as a mapping {link name: pose}.

    ``out``: a FramePoses returned by an earlier call on this model, overwritten in place and
    returned, as Pinocchio overwrites data.oMf: no allocation, for high-rate loops."""
    if model.direct:
        try:
            if out is None:
                poses = np.empty(model.frame_poses_shape)
                if frame_placements(model.kernel_int, model.kernel_float, model.ws_flat, q,
                                    poses) == 0:
                    return FramePoses(poses, model.frame_index)
            elif out._index is model.frame_index and frame_placements(
                    model.kernel_int, model.kernel_float, model.ws_flat, q, out.array) == 0:
                return out
        except (TypeError, AttributeError):
            pass
    (q,) = _arrays(model, q=q)
    if q.ndim != 1:
        raise ValueError('frame_poses takes one configuration q of shape (nq,)')
    if out is None:
        out = FramePoses(np.empty(model.frame_poses_shape), model.frame_index)
    elif not (isinstance(out, FramePoses) and out._index == model.frame_index
              and isinstance(out.array, np.ndarray) and out.array.dtype == _F64
              and out.array.shape == model.frame_poses_shape and out.array.flags.c_contiguous
              and out.array.flags.writeable):
        raise ValueError('out must be a FramePoses returned by frame_poses on this model')
    status = frame_placements(model.kernel_int, model.kernel_float, model.ws_flat,
                              _full_q(model, q), out.array)
    if status:
        _raise_status(status, ('q',), False)
    return out


def _frame(model, frame):
    try:
        return model.frame_index[frame]
    except (KeyError, TypeError):
        raise ValueError(f'unknown frame {frame!r}; frames are the URDF links: '
                         f'{", ".join(model.frame_names[:8])}'
                         f'{", ..." if len(model.frame_names) > 8 else ""}') from None


def _reference(reference):
    if reference not in REFERENCES:
        raise ValueError(f'reference must be one of {REFERENCES}, got {reference!r}')
    return reference


def frame_pose(model, q, frame):
    """World pose (4x4) of one link frame."""
    f = _frame(model, frame)
    return frame_poses(model, q).array[f].copy()


def _frame_motion(model, q, v, a, frame, names):
    """World placement (R, p) of a frame and its local twist and spatial acceleration."""
    f = _frame(model, frame)
    q, v, a = _arrays(model, q=q, v=v, a=a)
    if q.ndim != 1:
        raise ValueError('frame functions take one configuration, not a batch')
    status = body_motions(model.kernel_int, model.kernel_float, model.ws_flat, _full_q(model, q),
                          _full_v(model, v), _full_v(model, a))
    if status:
        _raise_status(status, names, False)
    b = model.frame_body[f]
    ws = model.ws[b]
    E = model.frame_placement[f, :9].reshape(3, 3)
    r = model.frame_placement[f, 9:]
    R_body = ws[L.O:L.O + 9].reshape(3, 3)
    R = R_body @ E
    p = R_body @ r + ws[L.O + 9:L.O + 12]

    def to_frame(m):   # body-frame motion -> frame-local motion (actInv of the placement)
        ang = m[3:]
        lin = m[:3] - np.cross(r, ang)
        return np.concatenate([E.T @ lin, E.T @ ang])
    return R, p, to_frame(ws[L.VEL:L.VEL + 6]), to_frame(ws[L.ACC:L.ACC + 6])


def _express(R, p, motion, reference):
    """A frame-local motion vector in the requested reference."""
    lin, ang = R @ motion[:3], R @ motion[3:]
    if reference == 'local':
        return motion.copy()
    if reference == 'local_world_aligned':
        return np.concatenate([lin, ang])
    return np.concatenate([lin + np.cross(p, ang), ang])     # world: about the world origin


def frame_velocity(model, q, v, frame, reference='local_world_aligned'):
    """Twist [v; w] of a link frame in the given reference."""
    reference = _reference(reference)
    zero = np.zeros(model.nv)
    R, p, twist, _ = _frame_motion(model, q, v, zero, frame, ('q', 'v', 'a'))
    return _express(R, p, twist, reference)


def frame_acceleration(model, q, v, a, frame, reference='local_world_aligned'):
    """Classical acceleration [a; alpha] of a link frame: for 'local' and
    'local_world_aligned' the second derivative of the frame origin; for 'world' that of the
    body point at the world origin (as Pinocchio's getFrameClassicalAcceleration)."""
    reference = _reference(reference)
    R, p, twist, accel = _frame_motion(model, q, v, a, frame, ('q', 'v', 'a'))
    vel = _express(R, p, twist, reference)
    acc = _express(R, p, accel, reference)
    acc[:3] += np.cross(vel[3:], vel[:3])
    return acc


def frame_jacobian(model, q, frame, reference='local_world_aligned'):
    """6 x nv Jacobian J with J v = frame_velocity(q, v, frame, reference)."""
    reference = _reference(reference)
    f = _frame(model, frame)
    (q,) = _arrays(model, q=q)
    if q.ndim != 1:
        raise ValueError('frame_jacobian takes one configuration q of shape (nq,)')
    poses = np.empty(model.frame_poses_shape)
    status = frame_placements(model.kernel_int, model.kernel_float, model.ws_flat,
                              _full_q(model, q), poses)
    if status:
        _raise_status(status, ('q',), False)
    J = np.zeros((6, model.nv_full))
    column = np.zeros(6)
    b = model.frame_body[f]
    while b > 0:                       # world-frame columns of every joint above the frame
        row = model.ws[b]
        R = row[L.O:L.O + 9].reshape(3, 3)
        o = row[L.O + 9:L.O + 12]
        vi = model.body_int[b, L.VIDX]
        for k in range(model.body_int[b, L.NVJ]):
            motion_subspace_column(model.body_int[b, L.JTYPE], model.kernel_float,
                                   b * L.BODY_FLOAT_COLS, k, column, 0)
            ang = R @ column[3:]
            J[:3, vi + k] = R @ column[:3] + np.cross(o, ang)
            J[3:, vi + k] = ang
        b = model.body_int[b, L.PARENT]
    Rf, pf = poses[f, :3, :3], poses[f, :3, 3]
    if reference != 'world':
        J[:3] -= np.cross(pf, J[3:].T).T        # about the frame origin
        if reference == 'local':
            J = np.vstack([Rf.T @ J[:3], Rf.T @ J[3:]])
    return J @ model.mimic_map if model.has_mimic else J


def center_of_mass(model, q):
    """World centre of mass of the moving bodies."""
    (q,) = _arrays(model, q=q)
    out = np.empty(q.shape[:-1] + (4,))
    args = (model.kernel_int, model.kernel_float, model.ws_flat, _full_q(model, q), out)
    status = _com(*args) if q.ndim == 1 else _com_batch(*args)
    if status:
        _raise_status(status, ('q',), q.ndim == 2)
    return out[..., :3]


def kinetic_energy(model, q, v):
    """1/2 v^T M(q) v."""
    q, v = _arrays(model, q=q, v=v)
    out = np.empty(q.shape[:-1] + (1,))
    args = (model.kernel_int, model.kernel_float, model.ws_flat, _full_q(model, q), _full_v(model, v), out)
    status = _ke(*args) if q.ndim == 1 else _ke_batch(*args)
    if status:
        _raise_status(status, ('q', 'v'), q.ndim == 2)
    return float(out[0]) if q.ndim == 1 else out[:, 0]


def potential_energy(model, q):
    """-sum m_i g . c_i over the moving bodies."""
    (q,) = _arrays(model, q=q)
    out = np.empty(q.shape[:-1] + (1,))
    args = (model.kernel_int, model.kernel_float, model.ws_flat, _full_q(model, q), out)
    status = _pe(*args) if q.ndim == 1 else _pe_batch(*args)
    if status:
        _raise_status(status, ('q',), q.ndim == 2)
    return float(out[0]) if q.ndim == 1 else out[:, 0]


def integrate(model, q, v, dt):
    """q (+) v dt on the configuration manifold (quaternions stay unit)."""
    if model.direct:
        out = np.empty(model.nq)
        try:
            if _integrate(model.kernel_int, q, v, dt, out) == 0:
                return out
        except TypeError:
            pass
    q, v = _arrays(model, q=q, v=v)
    dt = float(dt)
    qf, vf = _full_q(model, q), _full_v(model, v)
    out = np.empty_like(qf)
    args = (model.kernel_int, qf, vf, dt, out)
    status = _integrate(*args) if q.ndim == 1 else _integrate_batch(*args)
    if status:
        if status % checks.STATUS_STRIDE == checks.BAD_THIRD:
            raise ValueError(f'dt must be finite, got {dt}')
        _raise_status(status, ('q', 'v'), q.ndim == 2)
    return out[..., model.q_full_index] if model.has_mimic else out
