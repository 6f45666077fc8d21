"""The one factorisation of symmetric positive-definite matrices: H = L^T D L over a parent
array (Featherstone, RBDA Tables 6.3 and 6.4, the LTDL form).

``parent[k] < k`` names the row that row k couples to next (-1: none); entry (k, i) with
i < k may be nonzero only when i is reached from k through parent. Factorising over it
causes no fill-in, so it costs what the nonzero pattern costs, not O(n^3):

    for k = n-1 .. 0:                       D_k = H_kk
        for i = parent(k), parent(parent(k)), ...:
            a = H_ki / D_k ;  H_ij -= H_kj a  for j = i, parent(i), ... ;  L_ki = a
    H^-1 x:  x = L^-T x  (i = n-1 .. 0: x_j -= L_ij x_i, j up from i) ;  x = D^-1 x ;
             x = L^-1 x  (i = 0 .. n-1: x_i -= L_ij x_j, j up from i)

One code serves four users:
  - CRBA's forward dynamics (api.py): H = M(q) over the tree's ``dof_parent``
    (branch-induced sparsity);
  - ABA's joint blocks D_i = S_i^T U_i (aba.py), n <= 6, in the flat workspace with row
    stride 6, over CHAIN;
  - the simulator's dense solves (simulation/step.py, solver.py): a dense matrix is the chain
    parent[k] = k - 1 (``chain(n)``), and the loops above are then the ordinary dense LDL^T;
  - the derivatives of forward dynamics (derivatives.py): M^-1 itself, from the factor over
    ``dof_parent`` (``ltdl_inverse_at``).

Storage: a matrix is A[a + stride * r + c] in a flat array, a vector x[o + step * k].
Only the lower triangle (c <= r) is read. L (unit diagonal, not stored) overwrites it below
the diagonal and the diagonal holds 1/D_k: no square roots, and a solve multiplies, so a 1x1
block (a 1-DoF joint in ABA) costs one division at factorisation and a product per solve,
as D^-1 always did. ``ltdl_factor`` / ``ltdl_solve`` are the same for a 2-D matrix.
"""
import numpy as np

from ._jit import inline_kernel, kernel

#: the parent array of a dense block of up to 6 x 6 (ABA's D_i): parent[k] = k - 1
CHAIN = np.arange(-1, 5)


@inline_kernel
def chain(n):
    """The parent array of a dense n x n matrix: parent[k] = k - 1."""
    return np.arange(-1, n - 1)


@inline_kernel
def ltdl_factor_at(A, a, stride, parent, n):
    """In place: the n x n matrix at A[a] (row stride ``stride``) -> L below the diagonal,
    1/D on it, with H = L^T D L (RBDA Table 6.3). False when H is not positive definite."""
    for k in range(n - 1, -1, -1):
        kk = a + stride * k
        d = A[kk + k]
        if not d > 0.0:
            return False
        d_inv = 1.0 / d
        A[kk + k] = d_inv
        i = parent[k]
        while i >= 0:
            l_ki = A[kk + i] * d_inv                    # a = H_ki / D_k
            ii = a + stride * i
            j = i
            while j >= 0:
                A[ii + j] -= A[kk + j] * l_ki            # H_ij -= H_kj a
                j = parent[j]
            A[kk + i] = l_ki                            # L_ki = a
            i = parent[i]
    return True


@inline_kernel
def unit_transpose_solve_at(A, a, stride, parent, n, x, o, step):
    """x = L^-T x for the factor at A[a] (the first third of ``ltdl_solve_at``)."""
    for i in range(n - 1, -1, -1):
        xi = x[o + step * i]
        ii = a + stride * i
        j = parent[i]
        while j >= 0:
            x[o + step * j] -= A[ii + j] * xi
            j = parent[j]


@inline_kernel
def ltdl_solve_at(A, a, stride, parent, n, x, o, step):
    """x = H^-1 x in place, H = L^T D L factored by ``ltdl_factor_at`` (RBDA Table 6.4)."""
    if n == 1:                                                       # (1 x 1: x = x / H)
        x[o] *= A[a]
        return
    unit_transpose_solve_at(A, a, stride, parent, n, x, o, step)     # x = L^-T x
    for i in range(n):                                               # x = D^-1 x
        x[o + step * i] *= A[a + (stride + 1) * i]
    for i in range(n):                                               # x = L^-1 x
        ii = a + stride * i
        s = x[o + step * i]
        j = parent[i]
        while j >= 0:
            s -= A[ii + j] * x[o + step * j]
            j = parent[j]
        x[o + step * i] = s


@inline_kernel
def ltdl_inverse_at(A, a, stride, parent, n, x, dinv):
    """In place: the factor at A[a] (``ltdl_factor_at``) -> H^-1, both triangles. Column c of
    H^-1 is L^-1 D^-1 L^-T e_c. L^-T e_c lives on c and its ancestors (a walk up the parent
    array), and only its rows r <= c are needed: they go to the upper triangle, which the
    factor does not use, and the lower one is filled from it at the end. ``x`` and ``dinv``
    are vectors of n numbers of scratch."""
    for i in range(n):
        dinv[i] = A[a + (stride + 1) * i]
    for c in range(n):
        for i in range(c + 1):
            x[i] = 0.0
        x[c] = 1.0
        i = c
        while i >= 0:                                   # x = L^-T e_c: c and its ancestors
            xi = x[i]
            ii = a + stride * i
            j = parent[i]
            while j >= 0:
                x[j] -= A[ii + j] * xi
                j = parent[j]
            i = parent[i]
        for i in range(c + 1):                          # x = L^-1 D^-1 x, rows 0 .. c
            ii = a + stride * i
            t = x[i] * dinv[i]
            j = parent[i]
            while j >= 0:
                t -= A[ii + j] * x[j]
                j = parent[j]
            x[i] = t
            A[ii + c] = t                               # H^-1[i, c], upper triangle
    for r in range(n):
        for c in range(r):
            A[a + stride * r + c] = A[a + stride * c + r]


@kernel
def ltdl_factor(H, parent):
    """In place H = L^T D L for a 2-D (C-contiguous) H; False when H is not positive
    definite."""
    return ltdl_factor_at(H.reshape(H.size), 0, H.shape[1], parent, H.shape[0])


@kernel
def ltdl_solve(L, parent, x):
    """x = H^-1 x in place (1-D x), L from ``ltdl_factor``."""
    ltdl_solve_at(L.reshape(L.size), 0, L.shape[1], parent, L.shape[0], x, 0, 1)


@kernel
def unit_transpose_solve(L, parent, x):
    """x = L^-T x in place (1-D x), L from ``ltdl_factor``: then x^T D^-1 x = x0^T H^-1 x0."""
    unit_transpose_solve_at(L.reshape(L.size), 0, L.shape[1], parent, L.shape[0], x, 0, 1)
