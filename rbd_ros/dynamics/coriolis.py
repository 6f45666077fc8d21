"""Coriolis matrix C(q, v) with dM/dt = C + C^T and C v = nonlinear_effects - gravity.

The factorisation is not unique; this is the Christoffel-consistent one Pinocchio computes
(computeCoriolisMatrix), built in the world frame:
    B_i = 1/2 (v_i x* Y_i - Y_i v_i x) + 1/2 (. x* h_i)     (h_i = Y_i v_i, world momentum)
    dJ_k = v_i x J_k                                          (time derivative of S in world)
then, accumulating composite Y and B up the tree,
    C[k, subtree(i)] = J_k^T (Y_c dJ + B_c J)[:, subtree(i)]
    C[k, j]          = (Y_c J_k)^T dJ_j + (J_k^T B_c) J_j     for dofs j above i.
"""
from ._jit import MATRIX, MODEL_FLOAT, MODEL_INDEX, MODEL_INT, VECTOR, inline_kernel, borrow, kernel, signature
from .checks import OK, STATUS_STRIDE, state_status
from .joints import motion_subspace_column
from .kinematics import body_velocities
from .layout import (AG_COL, BODY_FLOAT_COLS, DFDV, DJ_COL, DOF_WS_COLS, IA, IC, INERTIA, J_COL,
                     JTYPE, NV_SUBTREE, NVJ, O, PA, PARENT, SCRATCH, VEL, VIDX, WS_COLS)
from .spatial import add_inertia_to_parent, inertia_times_motion, motion_cross, motion_to_parent


@inline_kernel
def add_momentum_variation(Y, y, v, k, h, j, B, b, scratch, s):
    """B += 1/2 (v x* Y - Y v x) + 1/2 (. x* h), column by column (B row-major 6x6 at b).
    scratch holds 18 numbers."""
    e, Ye, vxe = s, s + 6, s + 12
    for c in range(6):
        for n in range(6):
            scratch[e + n] = 0.0
        scratch[e + c] = 1.0
        inertia_times_motion(Y, y, scratch, e, scratch, Ye)         # Y e_c
        motion_cross(v, k, scratch, e, scratch, vxe)                 # v x e_c
        inertia_times_motion(Y, y, scratch, vxe, scratch, vxe)       # Y (v x e_c)
        wx, wy, wz, vx, vy, vz = v[k + 3], v[k + 4], v[k + 5], v[k], v[k + 1], v[k + 2]
        y0, y1, y2, y3, y4, y5 = (scratch[Ye], scratch[Ye + 1], scratch[Ye + 2], scratch[Ye + 3],
                                  scratch[Ye + 4], scratch[Ye + 5])
        # v x* (Y e_c) = [w x y_lin; w x y_ang + v x y_lin]
        f0 = wy * y2 - wz * y1
        f1 = wz * y0 - wx * y2
        f2 = wx * y1 - wy * y0
        f3 = wy * y5 - wz * y4 + vy * y2 - vz * y1
        f4 = wz * y3 - wx * y5 + vz * y0 - vx * y2
        f5 = wx * y4 - wy * y3 + vx * y1 - vy * y0
        # e_c x* h = [e_ang x h_lin; e_ang x h_ang + e_lin x h_lin]
        e0, e1, e2, e3, e4, e5 = (scratch[e], scratch[e + 1], scratch[e + 2], scratch[e + 3],
                                  scratch[e + 4], scratch[e + 5])
        g0 = e4 * h[j + 2] - e5 * h[j + 1]
        g1 = e5 * h[j] - e3 * h[j + 2]
        g2 = e3 * h[j + 1] - e4 * h[j]
        g3 = e4 * h[j + 5] - e5 * h[j + 4] + e1 * h[j + 2] - e2 * h[j + 1]
        g4 = e5 * h[j + 3] - e3 * h[j + 5] + e2 * h[j] - e0 * h[j + 2]
        g5 = e3 * h[j + 4] - e4 * h[j + 3] + e0 * h[j + 1] - e1 * h[j]
        B[b + c] += 0.5 * (f0 - scratch[vxe] + g0)
        B[b + 6 + c] += 0.5 * (f1 - scratch[vxe + 1] + g1)
        B[b + 12 + c] += 0.5 * (f2 - scratch[vxe + 2] + g2)
        B[b + 18 + c] += 0.5 * (f3 - scratch[vxe + 3] + g3)
        B[b + 24 + c] += 0.5 * (f4 - scratch[vxe + 4] + g4)
        B[b + 30 + c] += 0.5 * (f5 - scratch[vxe + 5] + g5)


@kernel
def coriolis_matrix(body_int, model, ws, dof_ws, dof_parent, q, qd, C):
    status = state_status(body_int, q, qd, q[0:0])
    if status != OK:
        return status
    nb = body_int.shape[0]
    C[:, :] = 0.0
    body_velocities(body_int, model, ws, q, qd)
    # world-row scratch: the world twist ov at VEL, an S column at SCRATCH, 18 numbers at IA
    for i in range(1, nb):                                   # forward: world quantities
        w, d = i * WS_COLS, body_int[i, VIDX] * DOF_WS_COLS
        for k in range(10):
            ws[w + IC + k] = 0.0
        add_inertia_to_parent(ws, w + O, model, i * BODY_FLOAT_COLS + INERTIA, ws, w + IC)  # oY
        motion_to_parent(ws, w + O, ws, w + VEL, ws, VEL)                # ov = oMi v
        inertia_times_motion(ws, w + IC, ws, VEL, ws, w + PA)            # oh = oY ov
        for k in range(body_int[i, NVJ]):                                # J = oMi S, dJ = ov x J
            motion_subspace_column(body_int[i, JTYPE], model, i * BODY_FLOAT_COLS, k, ws, SCRATCH)
            motion_to_parent(ws, w + O, ws, SCRATCH, dof_ws, d + J_COL)
            motion_cross(ws, VEL, dof_ws, d + J_COL, dof_ws, d + DJ_COL)
            d += DOF_WS_COLS
        for k in range(36):
            ws[w + IA + k] = 0.0
        add_momentum_variation(ws, w + IC, ws, VEL, ws, w + PA, ws, w + IA, ws, IA)
    for i in range(nb - 1, 0, -1):                           # backward: composite Y and B
        w = i * WS_COLS
        vi, nvj, nsub = body_int[i, VIDX], body_int[i, NVJ], body_int[i, NV_SUBTREE]
        for k in range(nvj):                                 # dFdv = Yc dJ + Bc J
            d = (vi + k) * DOF_WS_COLS
            inertia_times_motion(ws, w + IC, dof_ws, d + DJ_COL, dof_ws, d + DFDV)
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += ws[w + IA + 6 * a + b] * dof_ws[d + J_COL + b]
                dof_ws[d + DFDV + a] += s
        for k in range(nvj):
            d = (vi + k) * DOF_WS_COLS
            for c in range(vi, vi + nsub):                   # C[k, subtree] = J_k^T dFdv
                s = 0.0
                for a in range(6):
                    s += dof_ws[d + J_COL + a] * dof_ws[c * DOF_WS_COLS + DFDV + a]
                C[vi + k, c] = s
            inertia_times_motion(ws, w + IC, dof_ws, d + J_COL, dof_ws, d + AG_COL)  # Ag = Yc J_k
            for b in range(6):                               # J_k^T Bc
                s = 0.0
                for a in range(6):
                    s += dof_ws[d + J_COL + a] * ws[w + IA + 6 * a + b]
                ws[SCRATCH + b] = s
            j = dof_parent[vi]
            while j >= 0:                                    # dofs above i
                s = 0.0
                for a in range(6):
                    s += (dof_ws[d + AG_COL + a] * dof_ws[j * DOF_WS_COLS + DJ_COL + a]
                          + ws[SCRATCH + a] * dof_ws[j * DOF_WS_COLS + J_COL + a])
                C[vi + k, j] = s
                j = dof_parent[j]
        p = body_int[i, PARENT]
        if p > 0:
            for k in range(10):
                ws[p * WS_COLS + IC + k] += ws[w + IC + k]
            for k in range(36):
                ws[p * WS_COLS + IA + k] += ws[w + IA + k]
    return OK


@kernel
def coriolis_matrix_batch(body_int, model, ws, dof_ws, dof_parent, Q, QD, C):
    bi, bf, w, dw, dp = borrow(body_int), borrow(model), borrow(ws), borrow(dof_ws), borrow(dof_parent)
    q, qd, c = borrow(Q), borrow(QD), borrow(C)
    for n in range(q.shape[0]):
        status = coriolis_matrix(bi, bf, w, dw, dp, q[n], qd[n], c[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, VECTOR, VECTOR, MODEL_INDEX, VECTOR, VECTOR,
                            MATRIX))
def coriolis_matrix_entry(body_int, model, ws, dof_ws, dof_parent, q, qd, C):
    """The compiled entry point: coriolis_matrix on borrowed views (see _jit.borrow)."""
    return coriolis_matrix(borrow(body_int), borrow(model), borrow(ws), borrow(dof_ws), borrow(dof_parent), borrow(q), borrow(qd), borrow(C))
