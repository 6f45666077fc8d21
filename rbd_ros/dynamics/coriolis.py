"""Coriolis matrix C(q, v) with dM/dt = C + C^T and C v = nonlinear_effects - gravity.

The factorisation is not unique; this is the Christoffel-consistent one Pinocchio computes
(computeCoriolisMatrix), built in the world frame (armature is constant: it adds nothing):
    B_i = 1/2 (v_i x* Y_i - Y_i v_i x) + 1/2 (. x* h_i)     (h_i = Y_i v_i, world momentum)
    dJ_k = v_i x J_k                                          (time derivative of S in world)
then, accumulating composite Y and B up the tree,
    C[k, subtree(i)] = J_k^T (Y_c dJ + B_c J)[:, subtree(i)]
    C[k, j]          = (Y_c J_k)^T dJ_j + (J_k^T B_c) J_j     for dofs j above i.
"""
from ._jit import inline_kernel, kernel
from .checks import OK, state_status
from .joints import motion_subspace_column
from .kinematics import body_velocities
from .layout import (BODY_FLOAT_COLS, COR_AG, COR_B, COR_DFDV, COR_DJ, COR_H, COR_J,
                     COR_Y, DOF_WS_COLS, INERTIA, JTYPE, NV_SUBTREE, NVJ, O, PARENT, SCRATCH_18,
                     SCRATCH_DOF, SCRATCH_MOTION, SCRATCH_MOTION_2, VEL, VIDX, WS_COLS)
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
def coriolis_matrix(body_int, body_float, ws, dof_ws, dof_parent, q, v, C):
    """C = C(q, v). Returns OK or a status code."""
    status = state_status(body_int, q, v, v)
    if status != OK:
        return status
    nb = body_int.shape[0]
    s = nb * WS_COLS
    C[:, :] = 0.0
    body_velocities(body_int, body_float, ws, q, v)
    ov, S, sb = s + SCRATCH_MOTION, s + SCRATCH_MOTION_2, s + SCRATCH_18
    for i in range(1, nb):                                   # forward: world quantities
        w, d = i * WS_COLS, body_int[i, VIDX] * DOF_WS_COLS
        for k in range(10):
            ws[w + COR_Y + k] = 0.0
        add_inertia_to_parent(ws, w + O, body_float, i * BODY_FLOAT_COLS + INERTIA, ws,
                              w + COR_Y)                                # oY = oMi^* Y
        motion_to_parent(ws, w + O, ws, w + VEL, ws, ov)                # ov = oMi v
        inertia_times_motion(ws, w + COR_Y, ws, ov, ws, w + COR_H)      # oh = oY ov
        for k in range(body_int[i, NVJ]):                               # J = oMi S, dJ = ov x J
            motion_subspace_column(body_int[i, JTYPE], body_float, i * BODY_FLOAT_COLS, k, ws, S)
            motion_to_parent(ws, w + O, ws, S, dof_ws, d + COR_J)
            motion_cross(ws, ov, dof_ws, d + COR_J, dof_ws, d + COR_DJ)
            d += DOF_WS_COLS
        for k in range(36):
            ws[w + COR_B + k] = 0.0
        add_momentum_variation(ws, w + COR_Y, ws, ov, ws, w + COR_H, ws, w + COR_B, ws, sb)
    JtB = s + SCRATCH_DOF
    for i in range(nb - 1, 0, -1):                           # backward: composite Y and B
        w = i * WS_COLS
        vi, nvj, nsub = body_int[i, VIDX], body_int[i, NVJ], body_int[i, NV_SUBTREE]
        for k in range(nvj):                                 # dFdv = Yc dJ + Bc J
            d = (vi + k) * DOF_WS_COLS
            inertia_times_motion(ws, w + COR_Y, dof_ws, d + COR_DJ, dof_ws, d + COR_DFDV)
            for a in range(6):
                acc = 0.0
                for b in range(6):
                    acc += ws[w + COR_B + 6 * a + b] * dof_ws[d + COR_J + b]
                dof_ws[d + COR_DFDV + a] += acc
        for k in range(nvj):
            d = (vi + k) * DOF_WS_COLS
            for c in range(vi, vi + nsub):                   # C[k, subtree] = J_k^T dFdv
                acc = 0.0
                for a in range(6):
                    acc += dof_ws[d + COR_J + a] * dof_ws[c * DOF_WS_COLS + COR_DFDV + a]
                C[vi + k, c] = acc
            inertia_times_motion(ws, w + COR_Y, dof_ws, d + COR_J, dof_ws, d + COR_AG)  # Ag = Yc J_k
            for b in range(6):                               # J_k^T Bc
                acc = 0.0
                for a in range(6):
                    acc += dof_ws[d + COR_J + a] * ws[w + COR_B + 6 * a + b]
                ws[JtB + b] = acc
            j = dof_parent[vi]
            while j >= 0:                                    # dofs above i
                acc = 0.0
                for a in range(6):
                    acc += (dof_ws[d + COR_AG + a] * dof_ws[j * DOF_WS_COLS + COR_DJ + a]
                            + ws[JtB + a] * dof_ws[j * DOF_WS_COLS + COR_J + a])
                C[vi + k, j] = acc
                j = dof_parent[j]
        p = body_int[i, PARENT]
        if p > 0:
            for k in range(10):
                ws[p * WS_COLS + COR_Y + k] += ws[w + COR_Y + k]
            for k in range(36):
                ws[p * WS_COLS + COR_B + k] += ws[w + COR_B + k]
    return OK
