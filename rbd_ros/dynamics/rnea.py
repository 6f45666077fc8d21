"""Recursive Newton-Euler inverse dynamics (Featherstone, RBDA Table 5.1).

    v_i = X_i v_p + S_i qd_i
    a_i = X_i a_p + S_i qdd_i + v_i x (S_i qd_i)        (c_J = 0 for our joints)
    f_i = I_i a_i + v_i x* I_i v_i - f_ext_i
    tau_i = S_i^T f_i ;  f_p += X_i^* f_i               (backward pass)

Gravity enters as a fictitious base acceleration a_0 = -g (spatial_v2, Pinocchio).
Body quantities live in body coordinates, row i of the workspace ``ws``.
"""
from ._jit import MATRIX, MODEL_FLOAT, MODEL_INT, VECTOR, kernel, signature
from .checks import BAD_FEXT, OK, STATUS_STRIDE, has_nonfinite_2d, state_status
from .joints import body_transform, joint_velocity, project_force
from .layout import ACC, FRC, GRAVITY, INERTIA, JTYPE, LI, PARENT, QIDX, VEL, VIDX, VJ
from .spatial import add_bias_force, force_to_parent, inertia_times_motion, motion_cross, motion_to_child


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, MATRIX, VECTOR, VECTOR, VECTOR, MATRIX, VECTOR))
def rnea(body_int, body_float, ws, q, qd, qdd, f_ext, tau):
    """tau = ID(q, qd, qdd, f_ext); f_ext[i] is the wrench on body i in body coordinates.
    Returns 0, or a status code (see checks) naming a bad argument."""
    status = state_status(body_int, q, qd, qdd)
    if status != OK:
        return status
    if has_nonfinite_2d(f_ext):
        return BAD_FEXT
    world = ws[0]
    for k in range(6):
        world[VEL + k] = 0.0
        world[ACC + k] = 0.0
    for k in range(3):
        world[ACC + k] = -body_float[0, GRAVITY + k]
    for i in range(1, body_int.shape[0]):                       # forward pass
        jtype, vi = body_int[i, JTYPE], body_int[i, VIDX]
        joint, w, parent = body_float[i], ws[i], ws[body_int[i, PARENT]]
        body_transform(body_float, i, jtype, q, body_int[i, QIDX], ws)
        joint_velocity(jtype, joint, qd, vi, w, VJ, False)       # vJ = S qd
        motion_to_child(w, LI, parent, VEL, w, VEL)             # v = X v_p + vJ
        for k in range(6):
            w[VEL + k] += w[VJ + k]
        motion_to_child(w, LI, parent, ACC, w, ACC)             # a = X a_p + S qdd + v x vJ
        joint_velocity(jtype, joint, qdd, vi, w, ACC, True)
        motion_cross(w, VEL, w, VJ, w, FRC)                     # (FRC as scratch)
        for k in range(6):
            w[ACC + k] += w[FRC + k]
        inertia_times_motion(joint, INERTIA, w, ACC, w, FRC)    # f = I a + v x* I v - f_ext
        add_bias_force(joint, INERTIA, w, VEL, w, FRC)
        for k in range(6):
            w[FRC + k] -= f_ext[i, k]
    for i in range(body_int.shape[0] - 1, 0, -1):               # backward pass
        w, p = ws[i], body_int[i, PARENT]
        project_force(body_int[i, JTYPE], body_float[i], w, FRC, tau, body_int[i, VIDX])
        if p > 0:
            force_to_parent(w, LI, w, FRC, ws[p], FRC, True)    # f_p += X^* f
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
