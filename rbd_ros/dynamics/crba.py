"""Composite-rigid-body algorithm (Featherstone, RBDA Table 6.2).

    IC_i = I_i ;  IC_p += X_i^* IC_i X_i            (backward, p = parent(i) > 0)
    F = IC_i S_i ;  H_ii = S_i^T F + diag(armature_i)
    j = i ;  while parent(j) > 0:  F = X_j^* F ;  j = parent(j) ;  H_ji = S_j^T F ;  H_ij = H_ji^T

F is built one column k of S_i at a time (F_k = IC_i S_ik, in the scratch row). H's
branch-induced sparsity is what spd.py's L^T D L factorisation over the dof parent array uses
(RBDA Tables 6.3, 6.4): forward dynamics by CRBA costs what the tree's branches cost.
"""
from ._jit import kernel
from .checks import OK, configuration_status
from .joints import body_transform, motion_subspace_column, project_force
from .layout import (ARMATURE, BODY_FLOAT_COLS, IC, INERTIA, JTYPE, LI, NVJ, PARENT, QIDX,
                     SCRATCH_DOF, SCRATCH_FORCE, SCRATCH_MOTION, VIDX, WS_COLS)
from .spatial import add_inertia_to_parent, copy_inertia, force_to_parent, inertia_times_motion


@kernel
def crba(body_int, body_float, ws, q, H):
    """H = M(q), the joint-space inertia matrix (both triangles filled)."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    nb = body_int.shape[0]
    s = nb * WS_COLS
    H[:, :] = 0.0      # entries outside the branch-induced pattern stay zero
    for i in range(1, nb):
        body_transform(body_float, i, body_int[i, JTYPE], q, body_int[i, QIDX], ws, s)
        copy_inertia(body_float, i * BODY_FLOAT_COLS + INERTIA, ws, i * WS_COLS + IC)  # IC_i = I_i
    for i in range(nb - 1, 0, -1):
        p, w = body_int[i, PARENT], i * WS_COLS
        if p > 0:                                                 # IC_p += X_i^* IC_i X_i
            add_inertia_to_parent(ws, w + LI, ws, w + IC, ws, p * WS_COLS + IC)
    S_ik, F_k, StF = s + SCRATCH_MOTION, s + SCRATCH_FORCE, s + SCRATCH_DOF
    for i in range(1, nb):
        jtype, vi, nv, j, w = (body_int[i, JTYPE], body_int[i, VIDX], body_int[i, NVJ],
                               i * BODY_FLOAT_COLS, i * WS_COLS)
        for k in range(nv):                                       # column k of S_i:
            motion_subspace_column(jtype, body_float, j, k, ws, S_ik)
            inertia_times_motion(ws, w + IC, ws, S_ik, ws, F_k)   # F_k = IC_i S_ik
            project_force(jtype, body_float, j, ws, F_k, ws, StF)  # H_ii = S_i^T F
            for m in range(nv):
                H[vi + k, vi + m] = ws[StF + m]
            for m in range(k):                                    # exact symmetry in the block
                H[vi + k, vi + m] = H[vi + m, vi + k]
            H[vi + k, vi + k] += body_float[j + ARMATURE + k]     #   + armature
            b = i
            while body_int[b, PARENT] > 0:
                force_to_parent(ws, b * WS_COLS + LI, ws, F_k, ws, F_k, False)  # F = X_b^* F
                b = body_int[b, PARENT]                                         # b = parent(b)
                project_force(body_int[b, JTYPE], body_float, b * BODY_FLOAT_COLS, ws, F_k, ws,
                              StF)                                # H_bi = S_b^T F
                vb = body_int[b, VIDX]
                for m in range(body_int[b, NVJ]):                 #   and H_ib = H_bi^T
                    H[vi + k, vb + m] = ws[StF + m]
                    H[vb + m, vi + k] = ws[StF + m]
    return OK
