"""The one SPD factorisation (rbd_ros/dynamics/spd.py), H = L^T D L over a parent array,
against numpy: dense matrices (a chain), branch-induced sparse ones (a tree), strided blocks
in a flat array (ABA's D_i), and matrices that are not positive definite."""
import numpy as np
import pytest

from rbd_ros.dynamics.spd import (CHAIN, chain, ltdl_factor, ltdl_factor_at, ltdl_solve,
                                  ltdl_solve_at, unit_transpose_solve)


def _tree(rng, n):
    """A random parent array with parent[k] < k (-1: a root), several branches."""
    return np.array([-1] + [int(rng.integers(-1, k)) for k in range(1, n)], dtype=np.int64)


def _spd_over(parent, rng):
    """A random SPD matrix whose nonzeros follow the parent array: L^T D L with L's row k
    nonzero on k's ancestors only (so the factorisation has no fill-in)."""
    n = len(parent)
    L = np.eye(n)
    for k in range(n):
        i = parent[k]
        while i >= 0:
            L[k, i] = rng.normal()
            i = parent[i]
    return L.T @ np.diag(rng.uniform(0.2, 3.0, n)) @ L


@pytest.mark.parametrize('seed', range(8))
@pytest.mark.parametrize('shape', ['chain', 'tree'])
def test_solve_matches_numpy(seed, shape):
    rng = np.random.default_rng(seed)
    n = 1 + seed * 3
    parent = chain(n) if shape == 'chain' else _tree(rng, n)
    if shape == 'chain':
        A = rng.normal(size=(n, n))
        H = A @ A.T + n * np.eye(n)
    else:
        H = _spd_over(parent, rng)
    b = rng.normal(size=n)
    F = H.copy()
    assert ltdl_factor(F, parent)
    x = b.copy()
    ltdl_solve(F, parent, x)
    np.testing.assert_allclose(x, np.linalg.solve(H, b), rtol=1e-9, atol=1e-11)
    # the factor itself: L unit lower (below the diagonal, on the pattern), D^-1 on the diagonal
    L = np.tril(F, -1) + np.eye(n)
    D = np.diag(1.0 / np.diag(F))
    np.testing.assert_allclose(L.T @ D @ L, H, rtol=1e-9, atol=1e-10)
    # the half solve: y = L^-T b gives b^T H^-1 b = y^T D^-1 y (the simulator's G = Y^T D^-1 Y)
    y = b.copy()
    unit_transpose_solve(F, parent, y)
    assert y @ np.diag(np.diag(F)) @ y == pytest.approx(b @ np.linalg.solve(H, b), rel=1e-9)


def test_chain_is_the_dense_factorisation():
    rng = np.random.default_rng(1)
    n = 7
    A = rng.normal(size=(n, n))
    H = A @ A.T + np.eye(n)
    F = H.copy()
    assert ltdl_factor(F, chain(n))
    np.testing.assert_array_equal(chain(n), np.arange(-1, n - 1))
    # over a chain, L^T D L is a dense factorisation H = R^T R, R = D^1/2 L lower triangular
    R = np.sqrt(1.0 / np.diag(F))[:, None] * (np.tril(F, -1) + np.eye(n))
    np.testing.assert_allclose(R.T @ R, H, rtol=1e-10, atol=1e-12)
    # (numpy's Cholesky of the reversed matrix is the same factor, reversed)
    P = np.eye(n)[::-1]
    np.testing.assert_allclose(P @ R.T @ P, np.linalg.cholesky(P @ H @ P), rtol=1e-9,
                               atol=1e-12)


@pytest.mark.parametrize('n', range(1, 7))
def test_strided_block_as_aba_uses_it(n):
    """A block of up to 6 x 6 with row stride 6 at an offset in a flat array, over CHAIN, and a
    right-hand side with a stride (ABA's columns of D^-1 U^T)."""
    rng = np.random.default_rng(n)
    A = rng.normal(size=(n, n))
    H = A @ A.T + 0.5 * np.eye(n)
    ws = rng.normal(size=200)
    d, o, step = 17, 120, 6
    for r in range(n):
        ws[d + 6 * r:d + 6 * r + n] = H[r]
    outside = ws.copy()
    assert ltdl_factor_at(ws, d, 6, CHAIN, n)
    b = rng.normal(size=n)
    ws[o:o + step * n:step] = b
    ltdl_solve_at(ws, d, 6, CHAIN, n, ws, o, step)
    np.testing.assert_allclose(ws[o:o + step * n:step], np.linalg.solve(H, b), rtol=1e-9,
                               atol=1e-11)
    # nothing outside the block's lower triangle and the vector's entries was written
    touched = np.zeros(200, bool)
    for r in range(n):
        touched[d + 6 * r:d + 6 * r + r + 1] = True
    touched[o:o + step * n:step] = True
    np.testing.assert_array_equal(ws[~touched], outside[~touched])
    if n == 1:          # a 1-DoF joint: the factor is 1/D, the solve one product
        assert ws[d] == 1.0 / H[0, 0]


@pytest.mark.parametrize('shape', ['chain', 'tree'])
def test_not_positive_definite(shape):
    rng = np.random.default_rng(5)
    n = 6
    parent = chain(n) if shape == 'chain' else _tree(rng, n)
    H = _spd_over(parent, rng)
    w, V = np.linalg.eigh(H)
    w[0] = -0.1
    H_bad = V @ np.diag(w) @ V.T
    if shape == 'tree':     # keep the pattern: an indefinite matrix over the same tree
        H_bad = _spd_over(parent, rng)
        H_bad[n - 1, n - 1] = -1.0
    assert not ltdl_factor(H_bad.copy(), parent)
    assert not ltdl_factor(np.zeros((n, n)), parent)
    nan = H.copy()
    nan[0, 0] = np.nan
    assert not ltdl_factor(nan, parent)
