"""Input checks done inside the compiled kernels (a Python-side np.isfinite costs ~1 us per
array, more than the whole RNEA). Kernels return 0, or a status code naming the argument."""
import math

from ._jit import kernel
from .layout import JOINT_FLOATING, JTYPE, QIDX

OK = 0
BAD_Q = 1          # non-finite configuration
BAD_V = 2          # non-finite velocity
BAD_THIRD = 3      # non-finite acceleration / torque
BAD_FEXT = 4       # non-finite external wrench
ZERO_QUATERNION = 5
STATUS_STRIDE = 8  # batched kernels return index * STATUS_STRIDE + code


@kernel
def has_nonfinite(x):
    for k in range(x.shape[0]):
        if not math.isfinite(x[k]):
            return True
    return False


@kernel
def has_nonfinite_2d(x):
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            if not math.isfinite(x[i, k]):
                return True
    return False


@kernel
def configuration_status(body_int, q):
    """BAD_Q for a non-finite q, ZERO_QUATERNION for a floating joint's zero quaternion."""
    if has_nonfinite(q):
        return BAD_Q
    for i in range(1, body_int.shape[0]):
        if body_int[i, JTYPE] == JOINT_FLOATING:
            qi = body_int[i, QIDX]
            n2 = q[qi + 3] ** 2 + q[qi + 4] ** 2 + q[qi + 5] ** 2 + q[qi + 6] ** 2
            if n2 < 1e-24:
                return ZERO_QUATERNION
    return OK


@kernel
def state_status(body_int, q, v, third):
    """Status of (q, v, a-or-tau); an empty array skips its check."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    if has_nonfinite(v):
        return BAD_V
    if has_nonfinite(third):
        return BAD_THIRD
    return OK
