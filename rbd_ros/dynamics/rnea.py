"""Recursive Newton-Euler inverse dynamics (Featherstone, RBDA Table 5.1).

    forward:   v_i = X_i v_p + S_i v_i              (v_0 = 0)
               a_i = X_i a_p + S_i a_i + v_i x (S_i v_i)   (a_0 = -g; c_J = 0 for our joints)
               f_i = I_i a_i + v_i x* I_i v_i - f_ext_i
    backward:  tau_i = S_i^T f_i + armature_i a_i ;  f_p += X_i^* f_i

Gravity enters as a fictitious base acceleration a_0 = -g (spatial_v2, Pinocchio), so the
pass gives tau = M(q) a + C(q, v) v + g(q) - sum J^T f_ext. Body quantities live in body
coordinates, in row i of the workspace ``ws`` (see layout.py); ``s`` is the scratch row.
The entry points that call these kernels are in entry_points.py.
"""
from ._jit import kernel
from .checks import BAD_FEXT, OK, configuration_status, has_nonfinite_2d, state_status
from .joints import body_transform, joint_velocity, project_force
from .layout import (ACC, ARMATURE, BODY_FLOAT_COLS, FRC, GRAVITY, INERTIA, JTYPE, LI, NVJ, PARENT,
                     QIDX, SCRATCH_MOTION, VEL, VIDX, VJ, WS_COLS)
from .spatial import (add_bias_force, force_to_parent, inertia_times_motion, motion_cross,
                      motion_to_child)


@kernel
def rnea(body_int, body_float, ws, q, v, a, f_ext, tau):
    """tau = ID(q, v, a, f_ext); f_ext[i] is the wrench on body i in body coordinates.
    Returns OK or a status code (checks) naming a bad argument."""
    status = state_status(body_int, q, v, a)
    if status != OK:
        return status
    if has_nonfinite_2d(f_ext):
        return BAD_FEXT
    nb = body_int.shape[0]
    s = nb * WS_COLS
    for k in range(6):                                           # v_0 = 0, a_0 = -g
        ws[VEL + k] = 0.0
        ws[ACC + k] = 0.0
    for k in range(3):
        ws[ACC + k] = -body_float[GRAVITY + k]
    for i in range(1, nb):                                       # forward pass
        jtype, vi = body_int[i, JTYPE], body_int[i, VIDX]
        j, w, p = i * BODY_FLOAT_COLS, i * WS_COLS, body_int[i, PARENT] * WS_COLS
        body_transform(body_float, i, jtype, q, body_int[i, QIDX], ws, s)
        joint_velocity(jtype, body_float, j, v, vi, ws, w + VJ, False)     # vJ = S v
        motion_to_child(ws, w + LI, ws, p + VEL, ws, w + VEL)              # v = X v_p + vJ
        for k in range(6):
            ws[w + VEL + k] += ws[w + VJ + k]
        motion_to_child(ws, w + LI, ws, p + ACC, ws, w + ACC)              # a = X a_p + S a
        joint_velocity(jtype, body_float, j, a, vi, ws, w + ACC, True)
        motion_cross(ws, w + VEL, ws, w + VJ, ws, s + SCRATCH_MOTION)      #     + v x vJ
        for k in range(6):
            ws[w + ACC + k] += ws[s + SCRATCH_MOTION + k]
        inertia_times_motion(body_float, j + INERTIA, ws, w + ACC, ws, w + FRC)  # f = I a
        add_bias_force(body_float, j + INERTIA, ws, w + VEL, ws, w + FRC)        #   + v x* I v
        for k in range(6):
            ws[w + FRC + k] -= f_ext[i, k]                                       #   - f_ext
    for i in range(nb - 1, 0, -1):                               # backward pass
        w, p, vi, j = i * WS_COLS, body_int[i, PARENT], body_int[i, VIDX], i * BODY_FLOAT_COLS
        project_force(body_int[i, JTYPE], body_float, j, ws, w + FRC, tau, vi)  # tau = S^T f
        for k in range(body_int[i, NVJ]):                                       #   + armature a
            tau[vi + k] += body_float[j + ARMATURE + k] * a[vi + k]
        if p > 0:
            force_to_parent(ws, w + LI, ws, w + FRC, ws, p * WS_COLS + FRC, True)  # f_p += X^* f
    return OK


@kernel
def gravity_rnea(body_int, body_float, ws, q, tau):
    """tau = g(q): RNEA with v = a = 0, so v_i = 0 and the forward pass is only
    a_i = X_i a_p, f_i = I_i a_i (Pinocchio's computeGeneralizedGravity)."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    nb = body_int.shape[0]
    s = nb * WS_COLS
    for k in range(6):
        ws[ACC + k] = 0.0
    for k in range(3):
        ws[ACC + k] = -body_float[GRAVITY + k]
    for i in range(1, nb):                                       # forward pass
        w, j = i * WS_COLS, i * BODY_FLOAT_COLS
        body_transform(body_float, i, body_int[i, JTYPE], q, body_int[i, QIDX], ws, s)
        motion_to_child(ws, w + LI, ws, body_int[i, PARENT] * WS_COLS + ACC, ws, w + ACC)
        inertia_times_motion(body_float, j + INERTIA, ws, w + ACC, ws, w + FRC)
    for i in range(nb - 1, 0, -1):                               # backward pass
        w, p = i * WS_COLS, body_int[i, PARENT]
        project_force(body_int[i, JTYPE], body_float, i * BODY_FLOAT_COLS, ws, w + FRC, tau,
                      body_int[i, VIDX])
        if p > 0:
            force_to_parent(ws, w + LI, ws, w + FRC, ws, p * WS_COLS + FRC, True)
    return OK
