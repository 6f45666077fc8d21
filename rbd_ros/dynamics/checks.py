"""Input checks done inside the compiled kernels (a Python-side np.isfinite costs ~1 us per
array, more than the whole RNEA). Kernels return OK (0) or one of the status codes below;
batch kernels return row * STATUS_STRIDE + code for the first failing row. api.py turns a
status into the matching exception (and any other value into an internal error)."""
import math

from ._jit import inline_kernel
from .layout import JOINT_FLOATING, JTYPE, NQJ, NVJ, QIDX

OK = 0
BAD_Q = 1          # non-finite configuration
BAD_V = 2          # non-finite velocity
BAD_THIRD = 3      # non-finite acceleration / torque
BAD_FEXT = 4       # non-finite external wrench
ZERO_QUATERNION = 5
BAD_SHAPE = 6      # an array of the wrong length (the Python side finds which)
SINGULAR = 7       # the joint-space inertia (ABA's D, CRBA's M) is not positive definite
STATUS_STRIDE = 8  # batched kernels return row * STATUS_STRIDE + code


@inline_kernel
def has_nonfinite(x):
    for k in range(x.shape[0]):
        if not math.isfinite(x[k]):
            return True
    return False


@inline_kernel
def has_nonfinite_2d(x):
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            if not math.isfinite(x[i, k]):
                return True
    return False


@inline_kernel
def configuration_status(body_int, q):
    """BAD_Q for a non-finite q, ZERO_QUATERNION for a floating joint's zero quaternion."""
    if q.shape[0] != body_int[0, NQJ]:
        return BAD_SHAPE
    if has_nonfinite(q):
        return BAD_Q
    for i in range(1, body_int.shape[0]):
        if body_int[i, JTYPE] == JOINT_FLOATING:
            qi = body_int[i, QIDX]
            n2 = q[qi + 3] ** 2 + q[qi + 4] ** 2 + q[qi + 5] ** 2 + q[qi + 6] ** 2
            if n2 < 1e-24:
                return ZERO_QUATERNION
    return OK


@inline_kernel
def shapes_status(body_int, q, v, third):
    """BAD_SHAPE unless q has the model's nq entries and v, third its nv. (The world row of
    body_int holds the model's internal nq (NQJ) and nv (NVJ).) A kernel without a third
    argument passes v twice."""
    if q.shape[0] != body_int[0, NQJ]:
        return BAD_SHAPE
    if v.shape[0] != body_int[0, NVJ] or third.shape[0] != body_int[0, NVJ]:
        return BAD_SHAPE
    return OK


@inline_kernel
def state_status(body_int, q, v, third):
    """Status of (q, v, a-or-tau): shapes, then finiteness."""
    status = shapes_status(body_int, q, v, third)
    if status != OK:
        return status
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    if has_nonfinite(v):
        return BAD_V
    if has_nonfinite(third):
        return BAD_THIRD
    return OK


@inline_kernel
def dynamics_status(body_int, q, v, third, f_ext):
    """Status of (q, v, a-or-tau, f_ext): state_status, then BAD_FEXT for a non-finite
    external wrench (RNEA and ABA)."""
    status = state_status(body_int, q, v, third)
    if status != OK:
        return status
    if has_nonfinite_2d(f_ext):
        return BAD_FEXT
    return OK
