"""Composite-rigid-body algorithm and the branch-induced sparse factorisation
(Featherstone, RBDA Tables 6.2, 6.3 and 6.4).

    Ic_i = I_i ;  Ic_p += X_i^* Ic_i X_i                (backward pass)
    F = Ic_i S_i ;  H_ii = S_i^T F + diag(armature_i)
    j = i ; while p(j) > 0: F = X_j^* F ; j = p(j) ; H_ji = S_j^T F

H = L^T L is factorised in place over the dof parent array lambda (lambda(k) < k), so a
tree's H costs what its branches cost, not O(n^3).
"""
import math

from ._jit import kernel
from .checks import OK, configuration_status
from .joints import body_transform, motion_subspace_column, project_force
from .layout import (ARMATURE, BODY_FLOAT_COLS, IC, INERTIA, JTYPE, LI, NVJ, PARENT, QIDX,
                     SCRATCH_DOF, SCRATCH_FORCE, SCRATCH_MOTION, VIDX, WS_COLS)
from .spatial import add_inertia_to_parent, force_to_parent, inertia_times_motion


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
        for k in range(10):
            ws[i * WS_COLS + IC + k] = body_float[i * BODY_FLOAT_COLS + INERTIA + k]
    for i in range(nb - 1, 0, -1):                                # Ic_p += X^* Ic_i X
        p = body_int[i, PARENT]
        if p > 0:
            w = i * WS_COLS
            add_inertia_to_parent(ws, w + LI, ws, w + IC, ws, p * WS_COLS + IC)
    S, F, SF = s + SCRATCH_MOTION, s + SCRATCH_FORCE, s + SCRATCH_DOF
    for i in range(1, nb):
        jtype, vi, j, w = body_int[i, JTYPE], body_int[i, VIDX], i * BODY_FLOAT_COLS, i * WS_COLS
        for k in range(body_int[i, NVJ]):
            motion_subspace_column(jtype, body_float, j, k, ws, S)
            inertia_times_motion(ws, w + IC, ws, S, ws, F)        # F = Ic_i S_i
            project_force(jtype, body_float, j, ws, F, ws, SF)    # H_ii = S_i^T F
            for m in range(body_int[i, NVJ]):
                H[vi + k, vi + m] = ws[SF + m]
            for m in range(k):                                    # exact symmetry in the block
                H[vi + k, vi + m] = H[vi + m, vi + k]
            H[vi + k, vi + k] += body_float[j + ARMATURE + k]     #   + armature
            b = i
            while body_int[b, PARENT] > 0:                        # F = X_b^* F, up the tree
                force_to_parent(ws, b * WS_COLS + LI, ws, F, ws, F, False)
                b = body_int[b, PARENT]
                project_force(body_int[b, JTYPE], body_float, b * BODY_FLOAT_COLS, ws, F, ws, SF)
                vb = body_int[b, VIDX]
                for m in range(body_int[b, NVJ]):                 # H_bi = S_b^T F and H_ib
                    H[vi + k, vb + m] = ws[SF + m]
                    H[vb + m, vi + k] = ws[SF + m]
    return OK


@kernel
def ltl_factor(H, dof_parent):
    """In place H -> L with H = L^T L (lower triangle of H holds L); RBDA Table 6.3.
    False when H is not positive definite."""
    for k in range(H.shape[0] - 1, -1, -1):
        if not H[k, k] > 0.0:
            return False
        H[k, k] = math.sqrt(H[k, k])
        i = dof_parent[k]
        while i >= 0:
            H[k, i] /= H[k, k]
            i = dof_parent[i]
        i = dof_parent[k]
        while i >= 0:
            j = i
            while j >= 0:
                H[i, j] -= H[k, i] * H[k, j]
                j = dof_parent[j]
            i = dof_parent[i]
    return True


@kernel
def ltl_solve(L, dof_parent, x):
    """In place x -> (L^T L)^-1 x (RBDA Table 6.4)."""
    n = L.shape[0]
    for i in range(n - 1, -1, -1):        # solve L^T y = x
        x[i] /= L[i, i]
        j = dof_parent[i]
        while j >= 0:
            x[j] -= L[i, j] * x[i]
            j = dof_parent[j]
    for i in range(n):                    # solve L x = y
        j = dof_parent[i]
        while j >= 0:
            x[i] -= L[i, j] * x[j]
            j = dof_parent[j]
        x[i] /= L[i, i]
