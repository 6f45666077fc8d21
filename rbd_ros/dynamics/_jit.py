"""One code path, compiled when numba is available, interpreted otherwise.

Kernels are written in the subset of Python that numba compiles (loops over flat numpy
arrays). ``RBD_ROS_NO_JIT=1`` (or numba's own ``NUMBA_DISABLE_JIT=1``) runs the very same
functions in the interpreter, which is how the tests prove the two modes agree.
"""
import os

try:
    if os.environ.get('RBD_ROS_NO_JIT', '') not in ('', '0'):
        raise ImportError('disabled by RBD_ROS_NO_JIT')
    import numba as _numba
except ImportError:  # pragma: no cover - exercised by the no-JIT test in a subprocess
    _numba = None

JIT_ENABLED = _numba is not None and os.environ.get('NUMBA_DISABLE_JIT', '') in ('', '0')


def kernel(fn=None, signature=None):
    """Compile ``fn`` with numba (cached on disk, no Python objects, GIL released).

    With a ``signature`` the kernel is compiled for exactly those types: any other argument
    type raises TypeError instead of compiling a new specialisation on the fly, which is how
    the public functions detect inputs that need converting (see api.py)."""
    def wrap(function):
        if _numba is None:
            return function
        options = dict(cache=True, nogil=True, fastmath=False, error_model='numpy')
        if signature is None:
            return _numba.njit(**options)(function)
        return _numba.njit(signature, **options)(function)
    return wrap if fn is None else wrap(fn)


if _numba is not None:
    from numba import types as _t
    STATUS = _t.int64
    MODEL_INT = _t.Array(_t.int64, 2, 'C', readonly=True)     # body_int
    MODEL_FLOAT = _t.Array(_t.float64, 2, 'C', readonly=True)  # body_float, frame placements
    MODEL_INDEX = _t.Array(_t.int64, 1, 'C', readonly=True)    # dof_parent, frame_body
    VECTOR = _t.Array(_t.float64, 1, 'C')
    MATRIX = _t.Array(_t.float64, 2, 'C')
    ARRAY3 = _t.Array(_t.float64, 3, 'C')
    SCALAR = _t.float64
else:  # pragma: no cover
    STATUS = MODEL_INT = MODEL_FLOAT = MODEL_INDEX = VECTOR = MATRIX = ARRAY3 = SCALAR = None


def signature(*argument_types):
    """int64(argument_types...) or None without numba."""
    return None if _numba is None else STATUS(*argument_types)


def inline_kernel(fn):
    """A small helper compiled inline into its callers (numba IR inlining), so that the
    array views it receives cost no reference counting: ~4x faster kernels."""
    if _numba is None:
        return fn
    return _numba.njit(cache=True, nogil=True, fastmath=False, error_model='numpy',
                       inline='always')(fn)
