"""Closed kinematic loops (Featherstone, RBDA chapter 8), on the URDF's tree as spanning tree.

A loop closure (a URDF <constraint>) holds frame A, fixed to body A, on frame B, fixed to body
B (layout.LOOP_*). Its rows, in world axes (p: a frame's origin, R its rotation, w its angular
velocity):

    ball      phi = p_B - p_A                                           3 rows
    revolute  phi = [p_B - p_A;  n_1 . (theta e);  n_2 . (theta e)]     5 rows
              theta e: the rotation taking axis A (world) onto axis B, n_1, n_2: two unit
              vectors of frame A normal to its axis (world)
    fixed     phi = [p_B - p_A;  log(R_B R_A^T)]                        6 rows

The velocity rows K v (K: rows x nv) are what the constraints keep at zero (RBDA 8.9, 8.17):
    linear    v_B(p_B) - v_A(p_A)      the two frames' Jacobians, world axes, subtracted
    revolute  n_i . (w_B - w_A)        the relative rotation across the axis
    fixed     w_B - w_A
so K is the exact derivative of phi's linear rows, and of its rotation rows where the loop is
closed. The acceleration rows K qdd = k (RBDA 8.14-8.15), k = -Kdot v, come from the frames'
classical accelerations at qdd = 0 (a: of the origin, alpha: angular):
    linear    -(a_B - a_A)
    revolute  -(n_i . (alpha_B - alpha_A) + (w_A x n_i) . (w_B - w_A))   (n_i turns with A)
    fixed     -(alpha_B - alpha_A)
Baumgarte stabilisation (RBDA 8.21-8.22): K qdd = k - 2 alpha K v - beta^2 phi.

Forward dynamics (RBDA 8.5, method 2): with the CRBA's H and its branch-induced L^T D L factor,
    qdd_0 = H^-1 (tau - C) ;  Y = H^-1 K^T ;  A = K Y ;  A lam = k - K qdd_0 ;  qdd = qdd_0 + Y lam
(H qdd + C = tau + K^T lam, K qdd = k). Redundant rows (a planar four-bar closed by a 3-D
revolute) make A singular: qdd is still unique, lam is not. ``solve_semidefinite`` is
rank-revealing: L D L^T with diagonal pivoting stops at pivots below RANK_TOLERANCE times A's
largest diagonal entry, the dependent rows get lam = 0 and the independent ones are solved
exactly.

The kernels below work in the internal coordinates (nv: the model's ``nv_full``; a model with
mimic joints is reduced by its caller) on the model's tables and a workspace, as the other
algorithms do; each says what state of the workspace it needs. ``loop_int`` is (nloop x
LOOP_INT_COLS), ``loop_float`` the flat (nloop * LOOP_FLOAT_COLS) table; entry_points.py
reads both, the closed-loop workspace ``lw`` (work_size floats) and its row order ``pivot``
(max(rows, nv) int64) from a Data's handle (``loop_tables``). The helpers are compiled once
and called, not inlined at numba's IR level as the tree's are: they take borrowed arrays (no
reference counts to save), and inlining them in every kernel cost most of their compile
time.
"""
import math

from ._jit import inline_kernel, kernel
from .checks import OK, SINGULAR, dynamics_status
from .crba import crba
from .joints import motion_subspace_column
from .layout import (ACC, BODY_FLOAT_COLS, JTYPE, LI, LOOP_AXIS_A, LOOP_AXIS_B, LOOP_BODY_A,
                     LOOP_BODY_B, LOOP_FIXED, LOOP_FLOAT_COLS, LOOP_NORMAL_1, LOOP_NORMAL_2,
                     LOOP_PLACEMENT_A, LOOP_PLACEMENT_B, LOOP_REVOLUTE, LOOP_ROW, LOOP_ROWS,
                     LOOP_TYPE, NVJ, O, PARENT, SCRATCH_FRAME_A, SCRATCH_FRAME_B, SCRATCH_MOTION,
                     SCRATCH_MOTION_2, VEL, VIDX, WS_COLS)
from .rnea import rnea
from .spatial import compose, motion_to_parent
from .spd import ltdl_factor, ltdl_solve

#: pivots of K H^-1 K^T below this times its largest diagonal entry are dependent rows
RANK_TOLERANCE = 1e-10


@inline_kernel
def work_size(nv, rows):
    """Floats of the closed-loop workspace (Data.loop_ws) of ``rows`` constraint rows over nv
    velocities: H (nv x nv), K and Y (rows x nv each), A (rows x rows), the row vectors k,
    phi, lam (rows each), a zero acceleration (nv), and the inverse dynamics' N (nv x nv), b
    and z (nv each). Its row order (Data.loop_pivot) has max(rows, nv) entries."""
    return 2 * nv * nv + 2 * rows * nv + rows * rows + 3 * rows + 3 * nv if rows else 0


@inline_kernel
def constraint_rows(loop_int):
    """The rows of a loop table: its last constraint's first row plus that one's rows."""
    last = loop_int.shape[0] - 1
    return loop_int[last, LOOP_ROW] + loop_int[last, LOOP_ROWS] if last >= 0 else 0


@kernel
def loop_work(lw, nv, rows):
    """The closed-loop workspace carved (work_size's order): (H, K, Y, A, k, phi, lam, zero_a,
    N, b, z); zero_a is never written (zero accelerations for RNEA). lw is borrowed (the
    handle's view), and so are its slices. (Compiled once and called: inlined, its twelve
    slices and reshapes cost seconds of compile in every kernel that carves.)"""
    H = lw[:nv * nv].reshape((nv, nv))
    at = nv * nv
    K = lw[at:at + rows * nv].reshape((rows, nv))
    at += rows * nv
    Y = lw[at:at + rows * nv].reshape((rows, nv))
    at += rows * nv
    A = lw[at:at + rows * rows].reshape((rows, rows))
    at += rows * rows
    k, phi, lam = lw[at:at + rows], lw[at + rows:at + 2 * rows], lw[at + 2 * rows:at + 3 * rows]
    at += 3 * rows
    zero_a = lw[at:at + nv]
    at += nv
    N = lw[at:at + nv * nv].reshape((nv, nv))
    at += nv * nv
    return H, K, Y, A, k, phi, lam, zero_a, N, lw[at:at + nv], lw[at + nv:at + 2 * nv]


# ---- the two frames of a loop -------------------------------------------------------------------
@kernel
def loop_frames(body_int, ws, loop_int, loop_float, l):
    """oMa and oMb, the world placements of loop l's frames A and B, into the scratch row
    (SCRATCH_FRAME_A, SCRATCH_FRAME_B), after the bodies' placements (ws column O). Returns
    (body A, body B, offset of oMa in ws, offset of oMb in ws)."""
    s = body_int.shape[0] * WS_COLS
    f = l * LOOP_FLOAT_COLS
    body_a, body_b = loop_int[l, LOOP_BODY_A], loop_int[l, LOOP_BODY_B]
    compose(ws, body_a * WS_COLS + O, loop_float, f + LOOP_PLACEMENT_A, ws, s + SCRATCH_FRAME_A)
    compose(ws, body_b * WS_COLS + O, loop_float, f + LOOP_PLACEMENT_B, ws, s + SCRATCH_FRAME_B)
    return body_a, body_b, s + SCRATCH_FRAME_A, s + SCRATCH_FRAME_B


@kernel
def in_world(ws, X, table, t):
    """The world components of the vector table[t:t+3], given in the frame placed at ws[X]."""
    x, y, z = table[t], table[t + 1], table[t + 2]
    return (ws[X] * x + ws[X + 1] * y + ws[X + 2] * z,
            ws[X + 3] * x + ws[X + 4] * y + ws[X + 5] * z,
            ws[X + 6] * x + ws[X + 7] * y + ws[X + 8] * z)


@kernel
def revolute_normals(ws, A, loop_float, f):
    """(n_1, n_2) of a revolute loop in world axes: 6 numbers."""
    n1x, n1y, n1z = in_world(ws, A, loop_float, f + LOOP_NORMAL_1)
    n2x, n2y, n2z = in_world(ws, A, loop_float, f + LOOP_NORMAL_2)
    return n1x, n1y, n1z, n2x, n2y, n2z


@kernel
def frame_world_motion(ws, body, X):
    """(v, w, a, alpha) of the frame placed at ws[X] on ``body``, world axes (12 numbers): the
    velocity and classical acceleration of its origin, the angular velocity and acceleration,
    from the body's twist and spatial acceleration (ws columns VEL, ACC, O of its row)."""
    b = body * WS_COLS
    o, vel, acc = b + O, b + VEL, b + ACC
    wx, wy, wz = in_world(ws, o, ws, vel + 3)        # w = R w_b
    vx, vy, vz = in_world(ws, o, ws, vel)            # the body origin's velocity
    alx, aly, alz = in_world(ws, o, ws, acc + 3)
    ax, ay, az = in_world(ws, o, ws, acc)            # spatial: of the point at the body origin
    dx, dy, dz = ws[X + 9] - ws[o + 9], ws[X + 10] - ws[o + 10], ws[X + 11] - ws[o + 11]
    vx, vy, vz = vx + wy * dz - wz * dy, vy + wz * dx - wx * dz, vz + wx * dy - wy * dx
    ax += aly * dz - alz * dy + wy * vz - wz * vy    # spatial at p, then + w x v: classical
    ay += alz * dx - alx * dz + wz * vx - wx * vz
    az += alx * dy - aly * dx + wx * vy - wy * vx
    return vx, vy, vz, wx, wy, wz, ax, ay, az, alx, aly, alz


@kernel
def rotation_log(ws, A, B):
    """log(R_B R_A^T): the world rotation vector taking frame A's axes onto frame B's."""
    R00 = ws[B] * ws[A] + ws[B + 1] * ws[A + 1] + ws[B + 2] * ws[A + 2]
    R01 = ws[B] * ws[A + 3] + ws[B + 1] * ws[A + 4] + ws[B + 2] * ws[A + 5]
    R02 = ws[B] * ws[A + 6] + ws[B + 1] * ws[A + 7] + ws[B + 2] * ws[A + 8]
    R10 = ws[B + 3] * ws[A] + ws[B + 4] * ws[A + 1] + ws[B + 5] * ws[A + 2]
    R11 = ws[B + 3] * ws[A + 3] + ws[B + 4] * ws[A + 4] + ws[B + 5] * ws[A + 5]
    R12 = ws[B + 3] * ws[A + 6] + ws[B + 4] * ws[A + 7] + ws[B + 5] * ws[A + 8]
    R20 = ws[B + 6] * ws[A] + ws[B + 7] * ws[A + 1] + ws[B + 8] * ws[A + 2]
    R21 = ws[B + 6] * ws[A + 3] + ws[B + 7] * ws[A + 4] + ws[B + 8] * ws[A + 5]
    R22 = ws[B + 6] * ws[A + 6] + ws[B + 7] * ws[A + 7] + ws[B + 8] * ws[A + 8]
    sx, sy, sz = 0.5 * (R21 - R12), 0.5 * (R02 - R20), 0.5 * (R10 - R01)   # sin(theta) axis
    s = math.sqrt(sx * sx + sy * sy + sz * sz)
    c = 0.5 * (R00 + R11 + R22 - 1.0)                                      # cos(theta)
    theta = math.atan2(s, c)
    if c > 0.0 or s > 1e-6:               # theta / sin(theta) is well conditioned here
        scale = theta / s if s > 0.0 else 1.0
        return sx * scale, sy * scale, sz * scale
    # near a half turn: the axis from the symmetric part, R + R^T - 2c 1 = 2 (1 - c) u u^T
    d0, d1, d2 = R00 - c, R11 - c, R22 - c
    if d0 >= d1 and d0 >= d2:
        ux, uy, uz = d0, 0.5 * (R01 + R10), 0.5 * (R02 + R20)
    elif d1 >= d2:
        ux, uy, uz = 0.5 * (R01 + R10), d1, 0.5 * (R12 + R21)
    else:
        ux, uy, uz = 0.5 * (R02 + R20), 0.5 * (R12 + R21), d2
    n = math.sqrt(ux * ux + uy * uy + uz * uz)
    if ux * sx + uy * sy + uz * sz < 0.0:
        n = -n
    return ux * theta / n, uy * theta / n, uz * theta / n


# ---- phi, K, k ------------------------------------------------------------------------------------
@kernel
def loop_residual(body_int, body_float, ws, loop_int, loop_float, phi):
    """phi (rows): every constraint's residual (the module's table), zero when its loop is
    closed. Needs the bodies' world placements (ws column O: kinematics.body_placements, or
    world_placements after RNEA or CRBA)."""
    for l in range(loop_int.shape[0]):
        _, _, A, B = loop_frames(body_int, ws, loop_int, loop_float, l)
        r, f = loop_int[l, LOOP_ROW], l * LOOP_FLOAT_COLS
        for k in range(3):
            phi[r + k] = ws[B + 9 + k] - ws[A + 9 + k]
        kind = loop_int[l, LOOP_TYPE]
        if kind == LOOP_REVOLUTE:
            ax, ay, az = in_world(ws, A, loop_float, f + LOOP_AXIS_A)
            bx, by, bz = in_world(ws, B, loop_float, f + LOOP_AXIS_B)
            cx, cy, cz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
            s = math.sqrt(cx * cx + cy * cy + cz * cz)
            theta = math.atan2(s, ax * bx + ay * by + az * bz)
            n1x, n1y, n1z, n2x, n2y, n2z = revolute_normals(ws, A, loop_float, f)
            if s > 0.0:                                   # theta e = theta (a x b) / |a x b|
                ex, ey, ez = cx * theta / s, cy * theta / s, cz * theta / s
            elif theta > 0.0:                             # exactly opposite: a half turn
                ex, ey, ez = n1x * theta, n1y * theta, n1z * theta
            else:
                ex, ey, ez = 0.0, 0.0, 0.0
            phi[r + 3] = n1x * ex + n1y * ey + n1z * ez
            phi[r + 4] = n2x * ex + n2y * ey + n2z * ez
        elif kind == LOOP_FIXED:
            phi[r + 3], phi[r + 4], phi[r + 5] = rotation_log(ws, A, B)
    return OK


@kernel
def loop_jacobian(body_int, body_float, ws, loop_int, loop_float, K):
    """K (rows x nv): every constraint's velocity rows (the module's table). Walks up the tree
    from each frame's body (RBDA Table 8.4), with each joint's world column (oMi S, about
    the world origin) seen at the frame's origin. Needs ws column O, as loop_residual."""
    s = body_int.shape[0] * WS_COLS
    S, col = s + SCRATCH_MOTION, s + SCRATCH_MOTION_2
    K[:, :] = 0.0
    for l in range(loop_int.shape[0]):
        body_a, body_b, A, B = loop_frames(body_int, ws, loop_int, loop_float, l)
        r, f, kind = loop_int[l, LOOP_ROW], l * LOOP_FLOAT_COLS, loop_int[l, LOOP_TYPE]
        n1x, n1y, n1z, n2x, n2y, n2z = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        if kind == LOOP_REVOLUTE:
            n1x, n1y, n1z, n2x, n2y, n2z = revolute_normals(ws, A, loop_float, f)
        for side in range(2):                  # + frame B's Jacobian, - frame A's
            b, X, sign = (body_b, B, 1.0) if side == 0 else (body_a, A, -1.0)
            px, py, pz = ws[X + 9], ws[X + 10], ws[X + 11]
            while b > 0:
                vi = body_int[b, VIDX]
                for k in range(body_int[b, NVJ]):
                    motion_subspace_column(body_int[b, JTYPE], body_float, b * BODY_FLOAT_COLS,
                                           k, ws, S)
                    motion_to_parent(ws, b * WS_COLS + O, ws, S, ws, col)   # world column
                    wx, wy, wz = ws[col + 3], ws[col + 4], ws[col + 5]
                    c = vi + k
                    K[r, c] += sign * (ws[col] + wy * pz - wz * py)         # v_O + w x p
                    K[r + 1, c] += sign * (ws[col + 1] + wz * px - wx * pz)
                    K[r + 2, c] += sign * (ws[col + 2] + wx * py - wy * px)
                    if kind == LOOP_REVOLUTE:
                        K[r + 3, c] += sign * (n1x * wx + n1y * wy + n1z * wz)
                        K[r + 4, c] += sign * (n2x * wx + n2y * wy + n2z * wz)
                    elif kind == LOOP_FIXED:
                        K[r + 3, c] += sign * wx
                        K[r + 4, c] += sign * wy
                        K[r + 5, c] += sign * wz
                b = body_int[b, PARENT]
    return OK


@kernel
def loop_bias(body_int, body_float, ws, loop_int, loop_float, k):
    """k (rows) with K qdd = k: -Kdot v (the module's table). Needs the bodies' world
    placements (ws O), twists (VEL) and accelerations at qdd = 0 (ACC: RNEA's at a = 0,
    whose uniform -g cancels between the two frames, or kinematics.body_accelerations with
    a = 0)."""
    for l in range(loop_int.shape[0]):
        body_a, body_b, A, B = loop_frames(body_int, ws, loop_int, loop_float, l)
        r, f, kind = loop_int[l, LOOP_ROW], l * LOOP_FLOAT_COLS, loop_int[l, LOOP_TYPE]
        _, _, _, wax, way, waz, aax, aay, aaz, alax, alay, alaz = frame_world_motion(ws, body_a, A)
        _, _, _, wbx, wby, wbz, abx, aby, abz, albx, alby, albz = frame_world_motion(ws, body_b, B)
        k[r], k[r + 1], k[r + 2] = aax - abx, aay - aby, aaz - abz
        dalx, daly, dalz = albx - alax, alby - alay, albz - alaz
        if kind == LOOP_REVOLUTE:
            dwx, dwy, dwz = wbx - wax, wby - way, wbz - waz
            n1x, n1y, n1z, n2x, n2y, n2z = revolute_normals(ws, A, loop_float, f)
            # d/dt (n_i . dw) = n_i . dalpha + (w_A x n_i) . dw
            t1x, t1y, t1z = way * n1z - waz * n1y, waz * n1x - wax * n1z, wax * n1y - way * n1x
            t2x, t2y, t2z = way * n2z - waz * n2y, waz * n2x - wax * n2z, wax * n2y - way * n2x
            k[r + 3] = -(n1x * dalx + n1y * daly + n1z * dalz + t1x * dwx + t1y * dwy + t1z * dwz)
            k[r + 4] = -(n2x * dalx + n2y * daly + n2z * dalz + t2x * dwx + t2y * dwy + t2z * dwz)
        elif kind == LOOP_FIXED:
            k[r + 3], k[r + 4], k[r + 5] = -dalx, -daly, -dalz
    return OK


@kernel
def stabilise(K, v, phi, alpha, beta, k):
    """k -= 2 alpha K v + beta^2 phi (Baumgarte, RBDA 8.22): the loops' velocity and position
    errors decay as e'' + 2 alpha e' + beta^2 e = 0."""
    for r in range(K.shape[0]):
        s = 0.0
        for c in range(K.shape[1]):
            s += K[r, c] * v[c]
        k[r] -= 2.0 * alpha * s + beta * beta * phi[r]


@kernel
def world_placements(body_int, ws):
    """oMi = oM_p o liMi (ws column O) from the parent-from-body transforms LI that RNEA and
    CRBA leave in the workspace: no joint transform computed again."""
    for i in range(1, body_int.shape[0]):
        w = i * WS_COLS
        compose(ws, body_int[i, PARENT] * WS_COLS + O, ws, w + LI, ws, w + O)


# ---- the multipliers: a rank-revealing solve ---------------------------------------------------
@kernel
def solve_semidefinite(A, b, x, pivot):
    """x with A x = b for a symmetric positive semi-definite A (m x m): L D L^T with diagonal
    pivoting (the largest remaining pivot first; rows and columns swapped in place), stopped at
    pivots below RANK_TOLERANCE times A's largest diagonal entry. Rows dependent on those
    before them get x = 0; the others are solved exactly (b is taken to lie in A's range; a
    part outside it in the dependent rows is left out). A and b are overwritten (L below the
    diagonal, D on it, in the pivoted order); pivot (m int64) is scratch. Returns the rank."""
    m = A.shape[0]
    largest = 0.0
    for i in range(m):
        pivot[i] = i
        largest = max(largest, A[i, i])
    threshold = RANK_TOLERANCE * largest
    rank = 0
    for j in range(m):
        at = j
        for i in range(j + 1, m):                   # the largest remaining pivot
            if A[i, i] > A[at, at]:
                at = i
        if not A[at, at] > threshold:               # the rest depend on the rows before them
            break
        if at != j:                                 # symmetric swap of j and at
            pivot[j], pivot[at] = pivot[at], pivot[j]
            for c in range(m):
                A[j, c], A[at, c] = A[at, c], A[j, c]
            for r in range(m):
                A[r, j], A[r, at] = A[r, at], A[r, j]
        d = A[j, j]
        for i in range(j + 1, m):                   # Schur complement of the pivot
            l_ij = A[i, j] / d
            for c in range(j + 1, m):
                A[i, c] -= l_ij * A[j, c]
        for i in range(j + 1, m):
            A[i, j] /= d                            # L_ij
        rank += 1
    for i in range(rank):                           # x = L^-1 P b
        s = b[pivot[i]]
        for j in range(i):
            s -= A[i, j] * x[j]
        x[i] = s
    for i in range(rank):                           # x = D^-1 x
        x[i] /= A[i, i]
    for i in range(rank - 1, -1, -1):               # x = L^-T x
        s = x[i]
        for j in range(i + 1, rank):
            s -= A[j, i] * x[j]
        x[i] = s
    for i in range(rank):                           # back to the rows' own order
        b[i] = x[i]
    for i in range(m):
        x[i] = 0.0
    for i in range(rank):
        x[pivot[i]] = b[i]
    return rank


# ---- forward and inverse dynamics of the closed system -----------------------------------------
@kernel
def closed_forward_dynamics(body_int, body_float, ws, dof_parent, loop_int, loop_float, lw, pivot,
                            q, v, tau, f_ext, alpha, beta, qdd):
    """qdd (nv) of the closed system: H qdd + C = tau + J^T f_ext + K^T lam with
    K qdd = k - 2 alpha K v - beta^2 phi (alpha = beta = 0: no stabilisation). RBDA 8.5,
    method 2 (the module's docstring); lam is left in the workspace (loop_work's ``lam``).
    Returns OK or a status (checks): a bad argument, SINGULAR when the tree's H is not
    positive definite."""
    status = dynamics_status(body_int, q, v, tau, f_ext)
    if status != OK:
        return status
    n, rows = qdd.shape[0], constraint_rows(loop_int)
    H, K, Y, A, k, phi, lam, zero_a, _, _, _ = loop_work(lw, n, rows)
    status = rnea(body_int, body_float, ws, q, v, zero_a, f_ext, qdd)   # qdd <- C - J^T f_ext
    if status != OK:
        return status
    world_placements(body_int, ws)          # (RNEA left LI, VEL and ACC at qdd = 0)
    loop_jacobian(body_int, body_float, ws, loop_int, loop_float, K)
    loop_bias(body_int, body_float, ws, loop_int, loop_float, k)
    if alpha != 0.0 or beta != 0.0:
        loop_residual(body_int, body_float, ws, loop_int, loop_float, phi)
        stabilise(K, v, phi, alpha, beta, k)
    status = crba(body_int, body_float, ws, q, H)
    if status != OK:
        return status
    if not ltdl_factor(H, dof_parent):                          # H = L^T D L
        return SINGULAR
    for i in range(n):
        qdd[i] = tau[i] - qdd[i]
    ltdl_solve(H, dof_parent, qdd)                              # qdd_0 = H^-1 (tau - C)
    for r in range(rows):                                       # Y = H^-1 K^T, row by row
        for c in range(n):
            Y[r, c] = K[r, c]
        ltdl_solve(H, dof_parent, Y[r])
    for r in range(rows):                                       # A = K Y^T ; k -= K qdd_0
        for c in range(rows):
            s = 0.0
            for i in range(n):
                s += K[r, i] * Y[c, i]
            A[r, c] = s
        s = 0.0
        for i in range(n):
            s += K[r, i] * qdd[i]
        k[r] -= s
    solve_semidefinite(A, k, lam, pivot)                        # A lam = k - K qdd_0
    for r in range(rows):                                       # qdd = qdd_0 + Y^T lam
        for i in range(n):
            qdd[i] += Y[r, i] * lam[r]
    return OK


@kernel
def balance_passive(K, tau, driven, N, b, z, lam, pivot):
    """The driven coordinates' share of tau when the loops carry what they can: lam with
    K_P^T lam = tau_P on the passive coordinates P (driven[c] == 0), of least norm
    (lam = K_P z, K_P^T K_P z = tau_P, solve_semidefinite); then tau -= K^T lam. tau keeps,
    on the driven coordinates, the torques (RBDA 8.12: tau_ID = S u + K^T lam), and on the
    passive ones what the loops cannot balance (zero when the driven coordinates can produce
    the motion). K (rows x n), tau (n), driven (n), N (n x n: scratch), z (n), lam (rows),
    pivot (n int64, scratch)."""
    rows, n = K.shape[0], K.shape[1]
    for i in range(n):                              # N = K_P^T K_P (identity on driven rows:
        for j in range(n):                          #  they stay out of the solve, z = 0 there)
            s = 0.0
            if driven[i] == 0 and driven[j] == 0:
                for r in range(rows):
                    s += K[r, i] * K[r, j]
            N[i, j] = s
        b[i] = tau[i] if driven[i] == 0 else 0.0
    solve_semidefinite(N, b, z, pivot)
    for r in range(rows):                           # lam = K_P z
        s = 0.0
        for i in range(n):
            if driven[i] == 0:
                s += K[r, i] * z[i]
        lam[r] = s
    for i in range(n):                              # tau -= K^T lam
        s = 0.0
        for r in range(rows):
            s += K[r, i] * lam[r]
        tau[i] -= s
    return OK


@kernel
def closed_inverse_dynamics(body_int, body_float, ws, loop_int, loop_float, lw, pivot, q, v, a,
                            f_ext, driven, tau):
    """tau (nv) of the closed system at (q, v, a), a motion the loops allow: RNEA's tree
    torques less the loops' share K^T lam (balance_passive), so that on the driven
    coordinates (driven[c] != 0) tau holds the torques that produce the motion, and on the
    passive ones what is left unbalanced (zero when the driven ones can). Returns OK or a
    status (checks); lam is left in the workspace (loop_work's ``lam``)."""
    n = tau.shape[0]
    _, K, _, _, _, _, lam, _, N, b, z = loop_work(lw, n, constraint_rows(loop_int))
    status = rnea(body_int, body_float, ws, q, v, a, f_ext, tau)
    if status != OK:
        return status
    world_placements(body_int, ws)          # (RNEA left LI)
    loop_jacobian(body_int, body_float, ws, loop_int, loop_float, K)
    return balance_passive(K, tau, driven, N, b, z, lam, pivot)
