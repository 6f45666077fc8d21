"""Recursive Newton-Euler inverse dynamics (Featherstone, RBDA Table 5.1).

    v_0 = 0 ;  a_0 = -g
    forward:   X_i = X_J(q_i) X_T(i)
               v_i = X_i v_p + S_i qd_i                         (vJ = S_i qd_i)
               a_i = X_i a_p + S_i qdd_i + v_i x vJ             (c_J = 0 for our joints)
               f_i = I_i a_i + v_i x* I_i v_i - f_ext_i
    backward:  tau_i = S_i^T f_i + armature_i qdd_i ;  f_p += X_i^* f_i   (p = parent(i) > 0)

Gravity enters as a fictitious base acceleration a_0 = -g (spatial_v2, Pinocchio), so the
pass gives tau = M(q) qdd + C(q, qd) qd + g(q) - sum J^T f_ext. Body quantities live in body
coordinates, in row i of the workspace ``ws`` (see layout.py): X_i, v_i, a_i, f_i below are
their offsets in it, v_p, a_p, f_p the parent's; ``s`` is the scratch row. The entry points
that call these kernels are in entry_points.py.
"""
from ._jit import borrow, inline_kernel, kernel
from .checks import OK, configuration_status, dynamics_status
from .joints import body_transform, joint_velocity, project_force
from .layout import (ACC, ARMATURE, BODY_FLOAT_COLS, FRC, GRAVITY, INERTIA, JTYPE, LI, NVJ, PARENT,
                     QIDX, VEL, VIDX, VJ, WS_COLS)
from .spatial import (add6, add_bias_force, add_motion_cross, force_to_parent,
                      inertia_times_motion, motion_to_child, subtract_row6, zero6)


@inline_kernel
def base_acceleration(body_float, ws, a_0):
    """ws[a_0:a_0+6] = -g, gravity as the world's fictitious acceleration [-g; 0] (RNEA, ABA's
    pass 3, the regressor)."""
    for k in range(3):
        ws[a_0 + k] = -body_float[GRAVITY + k]
        ws[a_0 + 3 + k] = 0.0


@inline_kernel
def add_armature_torque(body_float, j, nv, qdd, vi, tau):
    """tau[vi:vi+nv] += armature qdd (reflected rotor inertia of each joint velocity)."""
    for k in range(nv):
        tau[vi + k] += body_float[j + ARMATURE + k] * qdd[vi + k]


@kernel
def rnea(body_int, body_float, ws, q, v, a, f_ext, tau):
    """tau = ID(q, v, a, f_ext); f_ext[i] is the wrench on body i in body coordinates.
    Returns OK or a status code (checks) naming a bad argument."""
    status = dynamics_status(body_int, q, v, a, f_ext)
    if status != OK:
        return status
    a, f_ext, tau = borrow(a), borrow(f_ext), borrow(tau)  # the helpers bind them: no refcounts
    nb = body_int.shape[0]
    s = nb * WS_COLS
    zero6(ws, VEL)                                                     # v_0 = 0
    base_acceleration(body_float, ws, ACC)                             # a_0 = -g
    for i in range(1, nb):                                             # forward pass
        jtype, vi, p = body_int[i, JTYPE], body_int[i, VIDX], body_int[i, PARENT]
        j, w = i * BODY_FLOAT_COLS, i * WS_COLS
        X_i, v_i, a_i, f_i, vJ, I_i = w + LI, w + VEL, w + ACC, w + FRC, w + VJ, j + INERTIA
        v_p, a_p = p * WS_COLS + VEL, p * WS_COLS + ACC
        body_transform(body_float, i, jtype, q, body_int[i, QIDX], ws, s)  # X_i = X_J X_T
        joint_velocity(jtype, body_float, j, v, vi, ws, vJ, False)         # vJ = S_i qd_i
        motion_to_child(ws, X_i, ws, v_p, ws, v_i)                         # v_i = X_i v_p
        add6(ws, vJ, ws, v_i)                                              #       + vJ
        motion_to_child(ws, X_i, ws, a_p, ws, a_i)                         # a_i = X_i a_p
        joint_velocity(jtype, body_float, j, a, vi, ws, a_i, True)         #       + S_i qdd_i
        add_motion_cross(ws, v_i, ws, vJ, ws, a_i)                         #       + v_i x vJ
        inertia_times_motion(body_float, I_i, ws, a_i, ws, f_i)            # f_i = I_i a_i
        add_bias_force(body_float, I_i, ws, v_i, ws, f_i)                  #     + v_i x* I_i v_i
        subtract_row6(f_ext, i, ws, f_i)                                   #     - f_ext_i
    for i in range(nb - 1, 0, -1):                                     # backward pass
        jtype, vi, p = body_int[i, JTYPE], body_int[i, VIDX], body_int[i, PARENT]
        j, w = i * BODY_FLOAT_COLS, i * WS_COLS
        X_i, f_i, f_p = w + LI, w + FRC, p * WS_COLS + FRC
        project_force(jtype, body_float, j, ws, f_i, tau, vi)              # tau_i = S_i^T f_i
        add_armature_torque(body_float, j, body_int[i, NVJ], a, vi, tau)   #   + armature qdd_i
        if p > 0:
            force_to_parent(ws, X_i, ws, f_i, ws, f_p, True)               # f_p += X_i^* f_i
    return OK


@kernel
def gravity_rnea(body_int, body_float, ws, q, tau):
    """tau = g(q): RNEA with qd = qdd = 0, so v_i = 0 and the forward pass is only
    a_i = X_i a_p, f_i = I_i a_i (Pinocchio's computeGeneralizedGravity)."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    nb = body_int.shape[0]
    s = nb * WS_COLS
    base_acceleration(body_float, ws, ACC)                             # a_0 = -g
    for i in range(1, nb):                                             # forward pass
        p, j, w = body_int[i, PARENT], i * BODY_FLOAT_COLS, i * WS_COLS
        X_i, a_i, f_i, a_p = w + LI, w + ACC, w + FRC, p * WS_COLS + ACC
        body_transform(body_float, i, body_int[i, JTYPE], q, body_int[i, QIDX], ws, s)
        motion_to_child(ws, X_i, ws, a_p, ws, a_i)                         # a_i = X_i a_p
        inertia_times_motion(body_float, j + INERTIA, ws, a_i, ws, f_i)    # f_i = I_i a_i
    for i in range(nb - 1, 0, -1):                                     # backward pass
        jtype, vi, p = body_int[i, JTYPE], body_int[i, VIDX], body_int[i, PARENT]
        j, w = i * BODY_FLOAT_COLS, i * WS_COLS
        X_i, f_i, f_p = w + LI, w + FRC, p * WS_COLS + FRC
        project_force(jtype, body_float, j, ws, f_i, tau, vi)              # tau_i = S_i^T f_i
        if p > 0:
            force_to_parent(ws, X_i, ws, f_i, ws, f_p, True)               # f_p += X_i^* f_i
    return OK
