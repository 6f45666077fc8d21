"""The simulator's implicit joint update, compiled (numba; interpreted without it):
v+ = W^-1 (M v* + lam), W = M + dt D (joint_row_velocities), with lam from a projected
Gauss-Seidel on the joint rows (joint_impulses).

Impulses lam with v = v0 + G lam such that each row's v stays in [lo, hi] (a limit pushes only
as hard as needed) and, within that, its friction impulse (|.| <= friction_impulse) brings v
toward 0 (stiction when it can). G is the rows' block of W^-1 (symmetric positive definite).

Gauss-Seidel alone converges slowly when G is ill-conditioned (a light wrist under a heavy
shoulder: ~150 sweeps for an arm held by stiction), so after sweeps 1, 2, 4, 8, ... the rows are
sorted by what the iterate says they do (held at a velocity: 0, lo or hi; or sliding at a
friction bound), that linear system is solved exactly (``polish``), and the result is kept if
one more sweep leaves it unchanged.

Plain loops over small arrays, one Cholesky factorisation for every solve, no numpy.linalg
(numba's needs scipy): in Python the solve
was two thirds of a simulator step (0.5 ms per solve on the 7-joint arm). Only the active
rows' columns of W^-1 are formed (a Cholesky solve each), never the whole inverse.
"""
import numpy as np

from rbd_ros.dynamics._jit import kernel


@kernel
def sweep(G, v, lam, lo, hi, friction_impulse):
    """One Gauss-Seidel pass over the rows, in place; the largest velocity change."""
    n = v.shape[0]
    change = 0.0
    for i in range(n):
        g = G[i, i]
        if not g > 0.0:
            continue
        free = v[i] - g * lam[i]                        # this row's impulse taken out
        stop = -free / g                                # what would stop the joint
        f = min(max(stop, -friction_impulse[i]), friction_impulse[i])
        target = min(max(free + g * f, lo[i]), hi[i]) if lo[i] <= hi[i] else lo[i]
        new = (target - free) / g
        delta = new - lam[i]
        if delta != 0.0:
            for k in range(n):
                v[k] += G[k, i] * delta
            lam[i] = new
            change = max(change, abs(delta) * g)
    return change


@kernel
def polish(G, v0, lam, v, lo, hi, friction_impulse, lam_new, v_new):
    """The exact solution for the rows' present roles into (lam_new, v_new); False when it
    cannot be formed."""
    n = v0.shape[0]
    held = np.zeros(n, dtype=np.int64)
    target = np.zeros(n)
    nh = 0
    for i in range(n):
        at_lo = v[i] <= lo[i] + 1e-12
        at_hi = v[i] >= hi[i] - 1e-12
        sliding = (abs(lam[i]) >= friction_impulse[i] * (1.0 - 1e-9)
                   and friction_impulse[i] > 0.0 and not at_lo and not at_hi)
        target[i] = lo[i] if at_lo else (hi[i] if at_hi else min(max(0.0, lo[i]), hi[i]))
        if sliding:
            lam_new[i] = friction_impulse[i] if lam[i] > 0.0 else -friction_impulse[i]
        else:
            lam_new[i] = 0.0
            held[nh] = i
            nh += 1
    if nh > 0:
        A = np.empty((nh, nh))
        rhs = np.empty(nh)
        for a in range(nh):
            i = held[a]
            s = target[i] - v0[i]
            for j in range(n):          # the sliding rows' known impulses (held ones are 0)
                s -= G[i, j] * lam_new[j]
            rhs[a] = s
            for b in range(nh):
                A[a, b] = G[i, held[b]]
        if not cholesky_in_place(A):        # a principal block of an SPD matrix: SPD
            return False
        cholesky_solve(A, rhs)
        for a in range(nh):
            lam_new[held[a]] = rhs[a]
    for i in range(n):
        s = v0[i]
        for j in range(n):
            s += G[i, j] * lam_new[j]
        v_new[i] = s
    return True


@kernel
def joint_impulses(G, v0, lo, hi, friction_impulse, sweeps, tolerance, lam):
    """The rows' impulses into lam (see the module docstring); returns the sweeps taken."""
    n = v0.shape[0]
    v = v0.copy()
    lam[:] = 0.0
    lam_p = np.empty(n)
    v_p = np.empty(n)
    largest = 0.0
    for i in range(n):
        largest = max(largest, abs(v0[i]))
    scale = tolerance * (1.0 + largest)
    for k in range(1, sweeps + 1):
        if sweep(G, v, lam, lo, hi, friction_impulse) < scale:
            return k
        if k & (k - 1) == 0:            # a power of two: try the exact solve
            if polish(G, v0, lam, v, lo, hi, friction_impulse, lam_p, v_p):
                if sweep(G, v_p, lam_p, lo, hi, friction_impulse) < scale:
                    lam[:] = lam_p
                    return k
    return sweeps


@kernel
def cholesky_in_place(W):
    """W = L L^T: L into W's lower triangle; False when W is not positive definite."""
    n = W.shape[0]
    for j in range(n):
        s = W[j, j]
        for k in range(j):
            s -= W[j, k] * W[j, k]
        if not s > 0.0:
            return False
        W[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            t = W[i, j]
            for k in range(j):
                t -= W[i, k] * W[j, k]
            W[i, j] = t / W[j, j]
    return True


@kernel
def cholesky_solve(L, b):
    """x = (L L^T)^-1 b in place of b (L: the lower triangle of cholesky_in_place's result)."""
    n = b.shape[0]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * b[k]
        b[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * b[k]
        b[i] = s / L[i, i]


@kernel
def joint_row_velocities(M, v_free, damping_dt, rows, row_diagonal, row_rhs, lo, hi,
                         friction_dt, sweeps, tolerance, v_new):
    """The implicit joint update, v_new = W^-1 (M v_free - row_rhs + lam), W = M + diag(dt
    damping) + row_diagonal at the rows, with lam the rows' impulses (joint_impulses: bounds
    [lo, hi], friction impulse friction_dt). Only the active rows' columns of W^-1 are formed.
    False when W is not positive definite."""
    nv = M.shape[0]
    W = M.copy()
    rhs = np.zeros(nv)
    for i in range(nv):
        W[i, i] += damping_dt[i]
        for j in range(nv):
            rhs[i] += M[i, j] * v_free[j]
    for r in range(rows.shape[0]):
        W[rows[r], rows[r]] += row_diagonal[r]
        rhs[rows[r]] -= row_rhs[r]
    if not cholesky_in_place(W):
        return False
    cholesky_solve(W, rhs)
    v_new[:] = rhs                      # v* (no impulses)
    active = np.zeros(rows.shape[0], dtype=np.int64)
    na = 0
    for r in range(rows.shape[0]):
        if np.isfinite(lo[r]) or np.isfinite(hi[r]) or friction_dt[r] > 0.0:
            active[na] = r
            na += 1
    if na == 0:
        return True
    columns = np.zeros((na, nv))        # columns[a] = W^-1 e_row, row = rows[active[a]]
    for a in range(na):
        columns[a, rows[active[a]]] = 1.0
        cholesky_solve(W, columns[a])
    G = np.empty((na, na))              # the active rows' block of W^-1
    v0, row_lo, row_hi, row_friction = np.empty(na), np.empty(na), np.empty(na), np.empty(na)
    for a in range(na):
        r = active[a]
        v0[a], row_lo[a], row_hi[a], row_friction[a] = v_new[rows[r]], lo[r], hi[r], friction_dt[r]
        for b in range(na):
            G[a, b] = columns[b, rows[r]]
    lam = np.empty(na)
    joint_impulses(G, v0, row_lo, row_hi, row_friction, sweeps, tolerance, lam)
    for a in range(na):
        for i in range(nv):
            v_new[i] += columns[a, i] * lam[a]
    return True


def warm_up():
    """Compile (or load from numba's cache) the solver for the simulator's argument types."""
    M = np.array([[2.0, 0.5], [0.5, 1.0]])
    v_new = np.empty(2)
    joint_row_velocities(M, np.array([1.0, -1.0]), np.array([0.0, 0.001]), np.array([0, 1]),
                         np.zeros(2), np.zeros(2), np.array([-0.5, -np.inf]),
                         np.array([0.5, np.inf]), np.array([1e-4, 2e-4]), 200, 1e-13, v_new)
