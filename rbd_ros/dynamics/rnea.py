"""Recursive Newton-Euler inverse dynamics (Featherstone, RBDA Table 5.1).

    v_i = X_i v_p + S_i qd_i
    a_i = X_i a_p + S_i qdd_i + v_i x (S_i qd_i)        (c_J = 0 for our joints)
    f_i = I_i a_i + v_i x* I_i v_i - f_ext_i
    tau_i = S_i^T f_i ;  f_p += X_i^* f_i               (backward pass)

Gravity enters as a fictitious base acceleration a_0 = -g (spatial_v2, Pinocchio).
Body quantities live in body coordinates; X_i is applied with 3-vector algebra.
"""
from ._jit import kernel
from .checks import BAD_FEXT, OK, STATUS_STRIDE, has_nonfinite_2d, state_status
from .joints import add_joint_velocity, body_transform, joint_velocity, project_force
from .layout import (ACC, FRC, GRAVITY, INERTIA, JTYPE, LI_P, LI_R, PARENT, QIDX, VEL, VIDX,
                     VJ)
from .spatial import (add_bias_force, add_force_to_parent, inertia_times_motion,
                      motion_cross, motion_to_child)


@kernel
def rnea(body_int, body_float, ws, q, qd, qdd, f_ext, tau):
    """tau = ID(q, qd, qdd, f_ext); f_ext[i] is the wrench on body i in body coordinates.
    Returns 0, or a status code (see checks) naming a bad argument."""
    status = state_status(body_int, q, qd, qdd)
    if status != OK:
        return status
    if has_nonfinite_2d(f_ext):
        return BAD_FEXT
    nb = body_int.shape[0]
    ws[0, VEL:VEL + 6] = 0.0
    ws[0, ACC:ACC + 3] = -body_float[0, GRAVITY:GRAVITY + 3]
    ws[0, ACC + 3:ACC + 6] = 0.0
    for i in range(1, nb):                                     # forward pass
        jtype, qi, vi, p = (body_int[i, JTYPE], body_int[i, QIDX], body_int[i, VIDX],
                            body_int[i, PARENT])
        joint, w = body_float[i], ws[i]
        body_transform(body_float, i, jtype, q, qi, ws)
        E, r = w[LI_R:LI_R + 9], w[LI_P:LI_P + 3]
        v, a, f, vJ = w[VEL:VEL + 6], w[ACC:ACC + 6], w[FRC:FRC + 6], w[VJ:VJ + 6]
        joint_velocity(jtype, joint, qd, vi, vJ)
        motion_to_child(E, r, ws[p, VEL:VEL + 6], v)           # v_i = X v_p + S qd
        for k in range(6):
            v[k] += vJ[k]
        motion_to_child(E, r, ws[p, ACC:ACC + 6], a)           # a_i = X a_p + S qdd + v x vJ
        add_joint_velocity(jtype, joint, qdd, vi, a)
        motion_cross(v, vJ, f)                                 # f as scratch for v x vJ
        for k in range(6):
            a[k] += f[k]
        inertia_times_motion(joint[INERTIA:INERTIA + 10], a, f)  # f_i = I a + v x* I v - f_ext
        add_bias_force(joint[INERTIA:INERTIA + 10], v, f)
        for k in range(6):
            f[k] -= f_ext[i, k]
    for i in range(nb - 1, 0, -1):                             # backward pass
        w = ws[i]
        project_force(body_int[i, JTYPE], body_float[i], w[FRC:FRC + 6], tau, body_int[i, VIDX])
        p = body_int[i, PARENT]
        if p > 0:
            add_force_to_parent(w[LI_R:LI_R + 9], w[LI_P:LI_P + 3], w[FRC:FRC + 6],
                                ws[p, FRC:FRC + 6])
    return OK


@kernel
def rnea_batch(body_int, body_float, ws, Q, QD, QDD, F_EXT, TAU):
    """rnea for each row; F_EXT has one row, shared by all, or one per configuration."""
    shared = F_EXT.shape[0] == 1
    for n in range(Q.shape[0]):
        status = rnea(body_int, body_float, ws, Q[n], QD[n], QDD[n],
                      F_EXT[0] if shared else F_EXT[n], TAU[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK
