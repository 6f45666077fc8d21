"""Recursive Newton-Euler inverse dynamics (Featherstone, RBDA Table 5.1).

    v_i = X_i v_p + S_i qd_i
    a_i = X_i a_p + S_i qdd_i + v_i x (S_i qd_i)        (c_J = 0 for our joints)
    f_i = I_i a_i + v_i x* I_i v_i - f_ext_i
    tau_i = S_i^T f_i ;  f_p += X_i^* f_i               (backward pass)

Gravity enters as a fictitious base acceleration a_0 = -g (spatial_v2, Pinocchio).
Body quantities live in body coordinates, in row i of the flat workspace ``ws`` (offset w).
"""
from ._jit import (MATRIX, MODEL_FLOAT, MODEL_INT, VECTOR, borrow, chunk_rows, chunk_setup,
                   chunk_workspace, first_failure, kernel, prange, signature)
from .checks import (BAD_FEXT, OK, STATUS_STRIDE, configuration_status, has_nonfinite_2d,
                     state_status)
from .joints import body_transform, joint_velocity, project_force
from .layout import (ACC, BODY_FLOAT_COLS, FRC, GRAVITY, INERTIA, JTYPE, LI, PARENT, QIDX, VEL,
                     VIDX, VJ, WS_COLS)
from .spatial import add_bias_force, force_to_parent, inertia_times_motion, motion_cross, motion_to_child


@kernel
def rnea(body_int, model, ws, q, qd, qdd, f_ext, tau):
    """tau = ID(q, qd, qdd, f_ext); f_ext[i] is the wrench on body i in body coordinates.
    Returns 0, or a status code (see checks) naming a bad argument."""
    status = state_status(body_int, q, qd, qdd)
    if status != OK:
        return status
    if has_nonfinite_2d(f_ext):
        return BAD_FEXT
    for k in range(6):                                           # the world row
        ws[VEL + k] = 0.0
        ws[ACC + k] = 0.0
    for k in range(3):
        ws[ACC + k] = -model[GRAVITY + k]
    for i in range(1, body_int.shape[0]):                        # forward pass
        jtype, vi = body_int[i, JTYPE], body_int[i, VIDX]
        j, w, p = i * BODY_FLOAT_COLS, i * WS_COLS, body_int[i, PARENT] * WS_COLS
        body_transform(model, i, jtype, q, body_int[i, QIDX], ws)
        joint_velocity(jtype, model, j, qd, vi, ws, w + VJ, False)      # vJ = S qd
        motion_to_child(ws, w + LI, ws, p + VEL, ws, w + VEL)           # v = X v_p + vJ
        for k in range(6):
            ws[w + VEL + k] += ws[w + VJ + k]
        motion_to_child(ws, w + LI, ws, p + ACC, ws, w + ACC)           # a = X a_p + S qdd
        joint_velocity(jtype, model, j, qdd, vi, ws, w + ACC, True)
        motion_cross(ws, w + VEL, ws, w + VJ, ws, w + FRC)              #     + v x vJ
        for k in range(6):
            ws[w + ACC + k] += ws[w + FRC + k]
        inertia_times_motion(model, j + INERTIA, ws, w + ACC, ws, w + FRC)  # f = I a
        add_bias_force(model, j + INERTIA, ws, w + VEL, ws, w + FRC)        #   + v x* I v
        for k in range(6):
            ws[w + FRC + k] -= f_ext[i, k]                                  #   - f_ext
    for i in range(body_int.shape[0] - 1, 0, -1):                # backward pass
        w, p = i * WS_COLS, body_int[i, PARENT]
        project_force(body_int[i, JTYPE], model, i * BODY_FLOAT_COLS, ws, w + FRC, tau,
                      body_int[i, VIDX])                                 # tau = S^T f
        if p > 0:
            force_to_parent(ws, w + LI, ws, w + FRC, ws, p * WS_COLS + FRC, True)  # f_p += X^* f
    return OK


@kernel
def gravity_rnea(body_int, model, ws, q, tau):
    """tau = g(q): RNEA with qd = qdd = 0, so v_i = 0 and the forward pass is only
    a_i = X_i a_p, f_i = I_i a_i (Pinocchio's computeGeneralizedGravity)."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    for k in range(6):
        ws[ACC + k] = 0.0
    for k in range(3):
        ws[ACC + k] = -model[GRAVITY + k]
    for i in range(1, body_int.shape[0]):                        # forward pass
        w, j = i * WS_COLS, i * BODY_FLOAT_COLS
        body_transform(model, i, body_int[i, JTYPE], q, body_int[i, QIDX], ws)
        motion_to_child(ws, w + LI, ws, body_int[i, PARENT] * WS_COLS + ACC, ws, w + ACC)
        inertia_times_motion(model, j + INERTIA, ws, w + ACC, ws, w + FRC)
    for i in range(body_int.shape[0] - 1, 0, -1):                # backward pass
        w, p = i * WS_COLS, body_int[i, PARENT]
        project_force(body_int[i, JTYPE], model, i * BODY_FLOAT_COLS, ws, w + FRC, tau,
                      body_int[i, VIDX])
        if p > 0:
            force_to_parent(ws, w + LI, ws, w + FRC, ws, p * WS_COLS + FRC, True)
    return OK


@kernel(parallel=True)
def rnea_batch(body_int, model, ws, Q, QD, QDD, F_EXT, TAU, threads):
    """rnea for each row, rows split over ``threads`` (one workspace copy each).
    F_EXT has one row, shared by all, or one per configuration."""
    bi, bf = borrow(body_int), borrow(model)
    q_, qd_, qdd_, f_ext_, tau_ = borrow(Q), borrow(QD), borrow(QDD), borrow(F_EXT), borrow(TAU)
    rows = q_.shape[0]
    chunks, workspaces, statuses = chunk_setup(rows, threads, ws)
    for c in prange(chunks):
        w = chunk_workspace(workspaces, c, ws)
        for n in chunk_rows(c, chunks, rows):
            f = f_ext_[0] if f_ext_.shape[0] == 1 else f_ext_[n]
            status = rnea(bi, bf, w, q_[n], qd_[n], qdd_[n], f, tau_[n])
            if status != OK:
                statuses[c] = n * STATUS_STRIDE + status
                break
    return first_failure(statuses)


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, VECTOR, VECTOR, VECTOR, VECTOR, MATRIX, VECTOR))
def rnea_entry(body_int, model, ws, q, qd, qdd, f_ext, tau):
    """The compiled entry point: rnea on borrowed views (see _jit.borrow)."""
    return rnea(borrow(body_int), borrow(model), borrow(ws), borrow(q), borrow(qd), borrow(qdd), borrow(f_ext), borrow(tau))


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, VECTOR, VECTOR, VECTOR))
def gravity_rnea_entry(body_int, model, ws, q, tau):
    """The compiled entry point: gravity_rnea on borrowed views (see _jit.borrow)."""
    return gravity_rnea(borrow(body_int), borrow(model), borrow(ws), borrow(q), borrow(tau))


@kernel(parallel=True)
def gravity_rnea_batch(body_int, model, ws, Q, TAU, threads):
    """gravity_rnea for each row, rows split over ``threads`` (one workspace copy each)."""
    bi, bf = borrow(body_int), borrow(model)
    q_, tau_ = borrow(Q), borrow(TAU)
    rows = q_.shape[0]
    chunks, workspaces, statuses = chunk_setup(rows, threads, ws)
    for c in prange(chunks):
        w = chunk_workspace(workspaces, c, ws)
        for n in chunk_rows(c, chunks, rows):
            status = gravity_rnea(bi, bf, w, q_[n], tau_[n])
            if status != OK:
                statuses[c] = n * STATUS_STRIDE + status
                break
    return first_failure(statuses)
