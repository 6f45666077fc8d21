"""Coriolis matrix C(q, v) with dM/dt = C + C^T and C v = nonlinear_effects - gravity.

The factorisation is not unique; this is the Christoffel-consistent one Pinocchio computes
(computeCoriolisMatrix), built in the world frame:
    B_i = 1/2 (v_i x* Y_i - Y_i v_i x) + 1/2 (. x* h_i)     (h_i = Y_i v_i, world momentum)
    dJ_k = v_i x J_k                                          (time derivative of S in world)
then, accumulating composite Y and B up the tree,
    C[k, subtree(i)] = J_k^T (Y_c dJ + B_c J)[:, subtree(i)]
    C[k, j]          = (Y_c J_k)^T dJ_j + (J_k^T B_c) J_j     for dofs j above i.
"""
from ._jit import kernel
from .checks import OK, STATUS_STRIDE, state_status
from .joints import motion_subspace_column
from .kinematics import body_velocities
from .layout import (AG_COL, DFDV, DJ_COL, IA, IC, INERTIA, J_COL, JTYPE, NV_SUBTREE, NVJ, O_P,
                     O_R, PA, PARENT, SCRATCH, VEL, VIDX)
from .spatial import (add_inertia_to_parent, inertia_times_motion, motion_cross,
                      motion_to_parent)


@kernel
def add_momentum_variation(inertia, v, h, B):
    """B += 1/2 (v x* Y - Y v x) + 1/2 (. x* h), column by column (B is row-major 6x6)."""
    for j in range(6):
        e0 = 1.0 if j == 0 else 0.0
        e1 = 1.0 if j == 1 else 0.0
        e2 = 1.0 if j == 2 else 0.0
        e3 = 1.0 if j == 3 else 0.0
        e4 = 1.0 if j == 4 else 0.0
        e5 = 1.0 if j == 5 else 0.0
        # Y e_j: the column of the spatial inertia
        m, hx, hy, hz = inertia[0], inertia[1], inertia[2], inertia[3]
        y0 = m * e0 + e4 * hz - e5 * hy
        y1 = m * e1 + e5 * hx - e3 * hz
        y2 = m * e2 + e3 * hy - e4 * hx
        y3 = inertia[4] * e3 + inertia[5] * e4 + inertia[6] * e5 + hy * e2 - hz * e1
        y4 = inertia[5] * e3 + inertia[7] * e4 + inertia[8] * e5 + hz * e0 - hx * e2
        y5 = inertia[6] * e3 + inertia[8] * e4 + inertia[9] * e5 + hx * e1 - hy * e0
        # v x e_j, then Y (v x e_j)
        vx, vy, vz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
        c0 = wy * e2 - wz * e1 + vy * e5 - vz * e4
        c1 = wz * e0 - wx * e2 + vz * e3 - vx * e5
        c2 = wx * e1 - wy * e0 + vx * e4 - vy * e3
        c3 = wy * e5 - wz * e4
        c4 = wz * e3 - wx * e5
        c5 = wx * e4 - wy * e3
        z0 = m * c0 + c4 * hz - c5 * hy
        z1 = m * c1 + c5 * hx - c3 * hz
        z2 = m * c2 + c3 * hy - c4 * hx
        z3 = inertia[4] * c3 + inertia[5] * c4 + inertia[6] * c5 + hy * c2 - hz * c1
        z4 = inertia[5] * c3 + inertia[7] * c4 + inertia[8] * c5 + hz * c0 - hx * c2
        z5 = inertia[6] * c3 + inertia[8] * c4 + inertia[9] * c5 + hx * c1 - hy * c0
        # v x* (Y e_j) = [w x y_lin; w x y_ang + v x y_lin]
        f0 = wy * y2 - wz * y1
        f1 = wz * y0 - wx * y2
        f2 = wx * y1 - wy * y0
        f3 = wy * y5 - wz * y4 + vy * y2 - vz * y1
        f4 = wz * y3 - wx * y5 + vz * y0 - vx * y2
        f5 = wx * y4 - wy * y3 + vx * y1 - vy * y0
        # e_j x* h = [e_ang x h_lin; e_ang x h_ang + e_lin x h_lin]
        g0 = e4 * h[2] - e5 * h[1]
        g1 = e5 * h[0] - e3 * h[2]
        g2 = e3 * h[1] - e4 * h[0]
        g3 = e4 * h[5] - e5 * h[4] + e1 * h[2] - e2 * h[1]
        g4 = e5 * h[3] - e3 * h[5] + e2 * h[0] - e0 * h[2]
        g5 = e3 * h[4] - e4 * h[3] + e0 * h[1] - e1 * h[0]
        B[j] += 0.5 * (f0 - z0 + g0)
        B[6 + j] += 0.5 * (f1 - z1 + g1)
        B[12 + j] += 0.5 * (f2 - z2 + g2)
        B[18 + j] += 0.5 * (f3 - z3 + g3)
        B[24 + j] += 0.5 * (f4 - z4 + g4)
        B[30 + j] += 0.5 * (f5 - z5 + g5)


@kernel
def coriolis_matrix(body_int, body_float, ws, dof_ws, dof_parent, q, qd, C):
    status = state_status(body_int, q, qd, q[0:0])
    if status != OK:
        return status
    nb = body_int.shape[0]
    C[:, :] = 0.0
    body_velocities(body_int, body_float, ws, q, qd)
    column = ws[0, SCRATCH:SCRATCH + 6]
    for i in range(1, nb):                                   # forward: world quantities
        w = ws[i]
        E, r = w[O_R:O_R + 9], w[O_P:O_P + 3]
        oY, B, h = w[IC:IC + 10], w[IA:IA + 36], w[PA:PA + 6]
        oY[:] = 0.0
        add_inertia_to_parent(E, r, body_float[i, INERTIA:INERTIA + 10], oY)
        ov = ws[0, VEL:VEL + 6]                              # world twist (row 0 as scratch)
        motion_to_parent(E, r, w[VEL:VEL + 6], ov)
        inertia_times_motion(oY, ov, h)
        vi = body_int[i, VIDX]
        for k in range(body_int[i, NVJ]):
            motion_subspace_column(body_int[i, JTYPE], body_float[i], k, column)
            Jk = dof_ws[vi + k, J_COL:J_COL + 6]
            motion_to_parent(E, r, column, Jk)
            motion_cross(ov, Jk, dof_ws[vi + k, DJ_COL:DJ_COL + 6])
        B[:] = 0.0
        add_momentum_variation(oY, ov, h, B)
    for i in range(nb - 1, 0, -1):                           # backward: composite Y and B
        w = ws[i]
        oY, B = w[IC:IC + 10], w[IA:IA + 36]
        vi, nvj, nsub = body_int[i, VIDX], body_int[i, NVJ], body_int[i, NV_SUBTREE]
        for k in range(nvj):
            row = dof_ws[vi + k]
            inertia_times_motion(oY, row[DJ_COL:DJ_COL + 6], row[DFDV:DFDV + 6])
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += B[6 * a + b] * row[J_COL + b]
                row[DFDV + a] += s
        for k in range(nvj):
            Jk = dof_ws[vi + k, J_COL:J_COL + 6]
            for c in range(vi, vi + nsub):                   # C[k, subtree] = J_k^T dFdv
                s = 0.0
                for a in range(6):
                    s += Jk[a] * dof_ws[c, DFDV + a]
                C[vi + k, c] = s
            Ag = dof_ws[vi + k, AG_COL:AG_COL + 6]
            inertia_times_motion(oY, Jk, Ag)
            JB = ws[0, SCRATCH:SCRATCH + 6]                  # J_k^T B
            for b in range(6):
                s = 0.0
                for a in range(6):
                    s += Jk[a] * B[6 * a + b]
                JB[b] = s
            j = dof_parent[vi]
            while j >= 0:                                    # dofs above i
                s = 0.0
                for a in range(6):
                    s += Ag[a] * dof_ws[j, DJ_COL + a] + JB[a] * dof_ws[j, J_COL + a]
                C[vi + k, j] = s
                j = dof_parent[j]
        p = body_int[i, PARENT]
        if p > 0:
            for k in range(10):
                ws[p, IC + k] += oY[k]
            for k in range(36):
                ws[p, IA + k] += B[k]
    return OK


@kernel
def coriolis_matrix_batch(body_int, body_float, ws, dof_ws, dof_parent, Q, QD, C):
    for n in range(Q.shape[0]):
        status = coriolis_matrix(body_int, body_float, ws, dof_ws, dof_parent, Q[n], QD[n], C[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK
