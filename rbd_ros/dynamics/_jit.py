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


def kernel(fn):
    """Compile ``fn`` with numba (cached on disk, no Python objects, GIL released)."""
    if _numba is None:
        return fn
    return _numba.njit(cache=True, nogil=True, fastmath=False, error_model='numpy')(fn)
