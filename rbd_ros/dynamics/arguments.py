"""What api.py does around a kernel call: validate and convert arguments, map public and internal
coordinates (mimic joints), express external wrenches per body, run a single or batched entry
point, and turn a kernel status into the exception that names the culprit."""
import threading
from collections.abc import Mapping

import numpy as np

from . import checks
from ._jit import JIT_ENABLED, thread_count
from .data import Data

F64 = np.float64
_THREAD_POOL = threading.Lock()   # batches run on numba's thread pool: one at a time
#: a small batch (rows x values of q per row at most this) runs row by row on the calling
#: thread, one compiled call per row, where numba's threads are its workqueue layer (TBB not
#: installed): waking them costs about 150 us per parallel loop here (the 2-core VM: a
#: parallel loop that does nothing takes 147 us, 1.9 us on TBB), more than a small batch's
#: rows cost. 800: where the two cost about the same for the arm's (7 values, 100 rows) and
#: the G1's (50 values, 16 rows) derivatives, measured on that VM
SMALL_BATCH = 800


def workspace(model, data):
    """The Data a call writes into: ``data`` when given (it must be this model's), else the
    calling thread's own."""
    if data is None:
        return model._thread.data
    # (a thread's own Data holds a weak proxy of its model: data.ThreadData)
    if not isinstance(data, Data) or (data.model is not model and data is not model._thread.data):
        raise ValueError('data must be a workspace of this model (model.create_data())')
    return data


CONFIGURATIONS = ('q', 'q0', 'q1')   # argument names of nq values; the others have nv


def array(x, n, name, model=None):
    """x as a C-contiguous, writable float64 array of shape (n,) or (N, n). With ``model``,
    a configuration given a velocity's length (or the reverse) says so."""
    a = np.ascontiguousarray(x, dtype=F64)
    if not a.flags.writeable:   # a read-only array is another numba type: copy, no recompile
        a = a.copy()
    if (a.ndim == 1 and a.shape[0] == n) or (a.ndim == 2 and a.shape[1] == n):
        return a
    message = f'{name} must have shape ({n},) or (N, {n}), got {np.shape(x)}'
    if model is not None and a.ndim in (1, 2) and model.nq != model.nv:
        message += _size_hint(model, name, a.shape[-1])
    raise ValueError(message)


def _size_hint(model, name, got):
    """Why a configuration and a velocity differ in length (floating joints: 7 numbers for 6
    velocities), when ``got`` is the other one's length; else ''."""
    if model.floating_base:
        layout = ('for a floating base: x y z, a quaternion qx qy qz qw, then the joints',
                  'for a floating base: its twist [v; w] in the base frame, then the joints')
    else:
        joints = [j.name for j in model.joints if j.type == 'floating' and j.nq]
        layout = (f'(floating joint {", ".join(map(repr, joints))}: x y z, a quaternion qx qy '
                  'qz qw)', f'(floating joint {", ".join(map(repr, joints))}: a twist [v; w])')
    if name in CONFIGURATIONS and got == model.nv:
        return (f'. {name} has nq = {model.nq} values {layout[0]}; got {got}, which is nv: did '
                'you pass a velocity-sized vector?')
    if name not in CONFIGURATIONS and got == model.nq:
        return (f'. {name} has nv = {model.nv} values {layout[1]}; got {got}, which is nq: '
                'did you pass a configuration-sized vector?')
    return ''


def arrays(model, **named):
    """Validate configurations (q, q0, q1: nq) and velocity-sized arguments (nv): all single
    or all batched alike."""
    out, batch = [], None
    for name, value in named.items():
        a = array(value, model.nq if name in CONFIGURATIONS else model.nv, name, model)
        rows = a.shape[0] if a.ndim == 2 else None
        if batch is not None and rows != batch[1]:
            raise ValueError(f'{name} has shape {a.shape} but {batch[0]} has a different '
                             'batch shape; pass all single or all with the same N')
        batch = batch or (name, rows)
        out.append(a)
    return out


def single(q, what):
    """Refuse a batch where a function takes one configuration."""
    if q.ndim != 1:
        raise ValueError(f'{what} takes one configuration q of shape ({q.shape[-1]},), got a '
                         f'batch of shape {q.shape}: the frame_* functions (frame_poses, '
                         'frame_pose, frame_velocity, frame_acceleration, frame_jacobian) take '
                         'one configuration at a time; call them per row')


def batch_of(a):
    return a.shape[0] if a.ndim == 2 else None


def raise_status(status, names, batched):
    """Raise what a kernel's status says. ``names`` name the (q, v, third) arguments."""
    if status < 0:
        raise RuntimeError(f'internal error: kernel status {status}')
    row, code = divmod(int(status), checks.STATUS_STRIDE)
    where = f' (configuration {row} of the batch)' if batched else ''
    if code == checks.ZERO_QUATERNION:
        raise ValueError(f'q has a zero quaternion for a floating joint{where}')
    if code == checks.BAD_FEXT:
        raise ValueError(f'f_ext contains NaN or inf{where}')
    if code in (checks.BAD_Q, checks.BAD_V, checks.BAD_THIRD) and len(names) >= code:
        raise ValueError(f'{names[code - 1]} contains NaN or inf{where}')
    if code == checks.SINGULAR:
        raise FloatingPointError(f'the joint-space inertia is not positive definite at this '
                                 f'configuration (a body without mass or inertia that a joint '
                                 f'moves?){where}')
    if code == checks.BAD_SHAPE:
        raise ValueError(f'an argument has the wrong shape for this model{where}')
    raise RuntimeError(f'internal error: kernel status {status}')


def run(entry, batch_entry, data, batch, names, *args, parallel=False):
    """One entry point on one configuration, or its batch version on a batch; raise on a
    non-zero status. A small parallel batch runs row by row where waking numba's threads
    costs more than its rows (SMALL_BATCH)."""
    if batch is None:
        status = entry(data.handle, *args)
    elif parallel and batch * args[0].shape[-1] <= SMALL_BATCH and slow_thread_launch():
        status = row_by_row(entry, data.handle, batch, args)
    elif parallel:
        with _THREAD_POOL:
            status = batch_entry(data.handle, *args, thread_count())
    else:
        status = batch_entry(data.handle, *args)
    if status:
        raise_status(status, names, batch is not None)


def slow_thread_launch():
    """Whether numba's parallel loops run on its workqueue layer (known once one has run)."""
    if not JIT_ENABLED:
        return False
    import numba
    try:
        return numba.threading_layer() == 'workqueue'
    except ValueError:      # no parallel loop has run yet: the first batch starts the layer
        return False


def row_by_row(entry, handle, batch, args):
    """A batch entry's status, computed by its single entry on each row (an argument of one
    row, such as a shared f_ext, is every row's)."""
    for n in range(batch):
        status = entry(handle, *[a[n] if a.shape[0] == batch else a[0] for a in args])
        if status:
            return n * checks.STATUS_STRIDE + status
    return 0


# ---- public <-> internal coordinates (mimic joints have their own internal coordinate) ------
def full_q(model, q):
    """Public q -> internal q."""
    if not model.has_mimic:
        return q
    full = np.zeros(q.shape[:-1] + (model.nq_full,))
    full[..., model.q_full_index] = q
    for qf, _, ql, _, multiplier, offset in model._mimic_rows:
        full[..., qf] = multiplier * q[..., ql] + offset
    return full


def full_v(model, v):
    """Public v (or a) -> internal: v_full = G v."""
    return v if not model.has_mimic else np.ascontiguousarray(v @ model.mimic_map.T)


def reduce_tau(model, tau_full):
    """Internal torques -> public: tau = G^T tau_full (a mimic joint's torque to its leader)."""
    return tau_full if not model.has_mimic else tau_full @ model.mimic_map


def external_wrenches(model, data, f_ext, batch):
    """{link: [f; tau] in the link frame about its origin} -> per-body wrenches (body frame),
    shape (nbody, 6), or (batch, nbody, 6) when a wrench has a row per configuration."""
    if f_ext is None:
        return data.zero_fext if batch is None else data.zero_fext[None]
    if not isinstance(f_ext, Mapping):
        raise ValueError('f_ext must map link names to wrenches [fx, fy, fz, tx, ty, tz]')
    nb = model.body_int.shape[0]
    out = np.zeros((nb, 6) if batch is None else (batch, nb, 6))
    for link, wrench in f_ext.items():
        try:
            f = model.frame_id(link)
        except ValueError:
            raise ValueError(f'f_ext names unknown link {link!r} (f_ext keys are link names '
                             'or frame ids)') from None
        w = np.asarray(wrench, dtype=F64)
        if w.shape not in ((6,), (batch, 6)):
            expected = '(6,)' if batch is None else f'(6,) or ({batch}, 6)'
            raise ValueError(f'f_ext[{link!r}] must have shape {expected}, got {w.shape}')
        E = model.frame_placement[f, :9].reshape(3, 3)
        r = model.frame_placement[f, 9:]
        force = w[..., :3] @ E.T
        torque = w[..., 3:] @ E.T + np.cross(r, force)
        out[..., model.frame_body[f], :3] += force
        out[..., model.frame_body[f], 3:] += torque
    return out


def frame_number(model, frame):
    """The frame's index from a link name or a frame id (an index into model.frame_names)."""
    return model.frame_id(frame)
