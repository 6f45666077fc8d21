"""Coriolis matrix C(q, v) with dM/dt = C + C^T and C v = nonlinear_effects - gravity.

The factorisation is not unique; this is the Christoffel-consistent one Pinocchio computes
(computeCoriolisMatrix), built in the world frame:
    B_i = 1/2 (v_i x* Y_i - Y_i v_i x) + 1/2 (. x* h_i)     (h_i = Y_i v_i, world momentum)
    dJ_k = v_i x J_k                                          (time derivative of S in world)
then, accumulating composite Y and B up the tree,
    C[k, subtree(i)] = J_k^T (Y_c dJ + B_c J)[:, subtree(i)]
    C[k, j]          = (Y_c J_k)^T dJ_j + (J_k^T B_c) J_j     for dofs j above i.
"""
from ._jit import MATRIX, MODEL_FLOAT, MODEL_INDEX, MODEL_INT, VECTOR, inline_kernel, kernel, signature
from .checks import OK, STATUS_STRIDE, state_status
from .joints import motion_subspace_column
from .kinematics import body_velocities
from .layout import (AG_COL, DFDV, DJ_COL, IA, IC, INERTIA, J_COL, JTYPE, NV_SUBTREE, NVJ, O,
                     PA, PARENT, SCRATCH, VEL, VIDX)
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


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, MATRIX, MATRIX, MODEL_INDEX, VECTOR, VECTOR,
                            MATRIX))
def coriolis_matrix(body_int, body_float, ws, dof_ws, dof_parent, q, qd, C):
    status = state_status(body_int, q, qd, q[0:0])
    if status != OK:
        return status
    nb = body_int.shape[0]
    C[:, :] = 0.0
    body_velocities(body_int, body_float, ws, q, qd)
    world = ws[0]            # scratch: world twist at VEL, S column at SCRATCH, 18 at IA
    for i in range(1, nb):                                   # forward: world quantities
        w = ws[i]
        for k in range(10):
            w[IC + k] = 0.0
        add_inertia_to_parent(w, O, body_float[i], INERTIA, w, IC)     # oY_i
        motion_to_parent(w, O, w, VEL, world, VEL)                     # ov_i
        inertia_times_motion(w, IC, world, VEL, w, PA)                 # oh_i = oY ov
        vi = body_int[i, VIDX]
        for k in range(body_int[i, NVJ]):                              # J = oMi S, dJ = ov x J
            motion_subspace_column(body_int[i, JTYPE], body_float[i], k, world, SCRATCH)
            motion_to_parent(w, O, world, SCRATCH, dof_ws[vi + k], J_COL)
            motion_cross(world, VEL, dof_ws[vi + k], J_COL, dof_ws[vi + k], DJ_COL)
        for k in range(36):
            w[IA + k] = 0.0
        add_momentum_variation(w, IC, world, VEL, w, PA, w, IA, world, IA)
    for i in range(nb - 1, 0, -1):                           # backward: composite Y and B
        w = ws[i]
        vi, nvj, nsub = body_int[i, VIDX], body_int[i, NVJ], body_int[i, NV_SUBTREE]
        for k in range(nvj):                                 # dFdv = Yc dJ + Bc J
            row = dof_ws[vi + k]
            inertia_times_motion(w, IC, row, DJ_COL, row, DFDV)
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += w[IA + 6 * a + b] * row[J_COL + b]
                row[DFDV + a] += s
        for k in range(nvj):
            Jk = dof_ws[vi + k]
            for c in range(vi, vi + nsub):                   # C[k, subtree] = J_k^T dFdv
                s = 0.0
                for a in range(6):
                    s += Jk[J_COL + a] * dof_ws[c, DFDV + a]
                C[vi + k, c] = s
            inertia_times_motion(w, IC, Jk, J_COL, Jk, AG_COL)   # Ag = Yc J_k
            for b in range(6):                               # J_k^T Bc
                s = 0.0
                for a in range(6):
                    s += Jk[J_COL + a] * w[IA + 6 * a + b]
                world[SCRATCH + b] = s
            j = dof_parent[vi]
            while j >= 0:                                    # dofs above i
                s = 0.0
                for a in range(6):
                    s += Jk[AG_COL + a] * dof_ws[j, DJ_COL + a] + world[SCRATCH + a] * dof_ws[j, J_COL + a]
                C[vi + k, j] = s
                j = dof_parent[j]
        p = body_int[i, PARENT]
        if p > 0:
            for k in range(10):
                ws[p, IC + k] += w[IC + k]
            for k in range(36):
                ws[p, IA + k] += w[IA + k]
    return OK


@kernel
def coriolis_matrix_batch(body_int, body_float, ws, dof_ws, dof_parent, Q, QD, C):
    for n in range(Q.shape[0]):
        status = coriolis_matrix(body_int, body_float, ws, dof_ws, dof_parent, Q[n], QD[n], C[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK
