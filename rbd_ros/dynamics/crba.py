"""Composite-rigid-body algorithm and the branch-induced sparse factorisation
(Featherstone, RBDA Tables 6.2, 6.3 and 6.4).

    Ic_i = I_i ;  Ic_p += X_i^* Ic_i X_i                (backward pass)
    F = Ic_i S_i ;  H_ii = S_i^T F
    j = i ; while p(j) > 0: F = X_j^* F ; j = p(j) ; H_ji = S_j^T F

H = L^T L is factorised in place over the dof parent array lambda (lambda(k) < k), so a
tree's H costs what its branches cost, not O(n^3).
"""
import math

from ._jit import MATRIX, MODEL_FLOAT, MODEL_INT, VECTOR, kernel, signature
from .checks import OK, STATUS_STRIDE, configuration_status
from .joints import body_transform, motion_subspace_column, project_force
from .layout import IC, INERTIA, JTYPE, LI, NVJ, PARENT, QIDX, SCRATCH, VIDX
from .spatial import add_inertia_to_parent, force_to_parent, inertia_times_motion


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, MATRIX, VECTOR, MATRIX))
def crba(body_int, body_float, ws, q, H):
    """H = M(q), the joint-space inertia matrix (both triangles filled)."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    nb = body_int.shape[0]
    H[:, :] = 0.0      # entries outside the branch-induced pattern stay zero
    for i in range(1, nb):
        body_transform(body_float, i, body_int[i, JTYPE], q, body_int[i, QIDX], ws)
        for k in range(10):
            ws[i, IC + k] = body_float[i, INERTIA + k]
    for i in range(nb - 1, 0, -1):                                # Ic_p += X^* Ic_i X
        p = body_int[i, PARENT]
        if p > 0:
            add_inertia_to_parent(ws[i], LI, ws[i], IC, ws[p], IC)
    scratch = ws[0]          # the world row's IC and SCRATCH entries: S column and F
    for i in range(1, nb):
        jtype, vi = body_int[i, JTYPE], body_int[i, VIDX]
        for k in range(body_int[i, NVJ]):
            motion_subspace_column(jtype, body_float[i], k, scratch, SCRATCH)
            inertia_times_motion(ws[i], IC, scratch, SCRATCH, scratch, IC)   # F = Ic_i S_i
            row = H[vi + k]
            project_force(jtype, body_float[i], scratch, IC, row, vi)          # H_ii = S^T F
            for m in range(k):                                    # exact symmetry in the block
                H[vi + k, vi + m] = H[vi + m, vi + k]
            j = i
            while body_int[j, PARENT] > 0:                        # F = X_j^* F, up the tree
                force_to_parent(ws[j], LI, scratch, IC, scratch, IC, False)
                j = body_int[j, PARENT]
                project_force(body_int[j, JTYPE], body_float[j], scratch, IC, row,
                              body_int[j, VIDX])                  # H_ij = S_j^T F
                vj = body_int[j, VIDX]
                for m in range(body_int[j, NVJ]):                 # and its mirror H_ji
                    H[vj + m, vi + k] = row[vj + m]
    return OK


@kernel
def crba_batch(body_int, body_float, ws, Q, H):
    for n in range(Q.shape[0]):
        status = crba(body_int, body_float, ws, Q[n], H[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def ltl_factor(H, dof_parent):
    """In place H -> L with H = L^T L (lower triangle of H holds L); RBDA Table 6.3."""
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
