"""Articulated-body algorithm, forward dynamics in O(n) (Featherstone, RBDA Table 7.1).

    pass 1:  v_i = X_i v_p + S_i v_i ;  c_i = v_i x (S_i v_i)
             IA_i = I_i ;  pA_i = v_i x* I_i v_i - f_ext_i
    pass 2:  U_i = IA_i S_i ;  D_i = S_i^T U_i + diag(armature_i) ;  u_i = tau_i - S_i^T pA_i
             Ia = IA_i - U_i D_i^-1 U_i^T ;  pa = pA_i + Ia c_i + U_i D_i^-1 u_i
             IA_p += X_i^* Ia X_i ;  pA_p += X_i^* pa
    pass 3:  a'_i = X_i a_p + c_i ;  vdot_i = D_i^-1 (u_i - U_i^T a'_i) ;  a_i = a'_i + S_i vdot_i
             (a_0 = -g)

Articulated inertias are symmetric 6x6 matrices stored as their upper triangle, row by row
(21 numbers, see SYM): less to load, store and keep in cache than all 36. Armature (rotor
inertia reflected through the gear) only adds to D: it belongs to the joint, not to a body.
"""
from ._jit import inline_kernel, kernel
from .checks import BAD_FEXT, OK, SINGULAR, has_nonfinite_2d, state_status
from .joints import body_transform, joint_velocity, motion_subspace_column, project_force
from .layout import (ABA_C, ABA_DINV, ABA_IA, ABA_PA, ABA_U, ABA_UU, ACC, ARMATURE, AXIS,
                     BODY_FLOAT_COLS, GRAVITY, INERTIA, JOINT_PRISMATIC, JOINT_REVOLUTE, JTYPE,
                     LI, NVJ, PARENT, QIDX, SCRATCH_D, SCRATCH_DOF, SCRATCH_FORCE, SCRATCH_MOTION,
                     VEL, VIDX, VJ, WS_COLS)
from .spatial import add_bias_force, congruence, force_to_parent, motion_cross, motion_to_child


# SYM[6 r + c]: where entry (r, c) of a packed symmetric 6x6 is (row r holds columns r..5).
SYM = tuple(min(r, c) * 6 - min(r, c) * (min(r, c) - 1) // 2 + abs(c - r)
            for r in range(6) for c in range(6))


@inline_kernel
def inertia_matrix(Y, y, out, o):
    """out[o:o+21] = the spatial inertia [[m 1, -[h]], [[h], I]], packed (see SYM)."""
    m, hx, hy, hz = Y[y], Y[y + 1], Y[y + 2], Y[y + 3]
    out[o], out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = m, 0.0, 0.0, 0.0, hz, -hy
    out[o + 6], out[o + 7], out[o + 8], out[o + 9], out[o + 10] = m, 0.0, -hz, 0.0, hx
    out[o + 11], out[o + 12], out[o + 13], out[o + 14] = m, hy, -hx, 0.0
    out[o + 15], out[o + 16], out[o + 17] = Y[y + 4], Y[y + 5], Y[y + 6]     # I about the origin
    out[o + 18], out[o + 19], out[o + 20] = Y[y + 7], Y[y + 8], Y[y + 9]


@inline_kernel
def symmetric6_times(M, m, x, k, out, o):
    """out[o:o+6] = M x for the packed symmetric 6x6 M at m."""
    x0, x1, x2, x3, x4, x5 = x[k], x[k + 1], x[k + 2], x[k + 3], x[k + 4], x[k + 5]
    for r in range(6):
        b = 6 * r
        out[o + r] = (M[m + SYM[b]] * x0 + M[m + SYM[b + 1]] * x1 + M[m + SYM[b + 2]] * x2
                      + M[m + SYM[b + 3]] * x3 + M[m + SYM[b + 4]] * x4 + M[m + SYM[b + 5]] * x5)


@inline_kernel
def cross_columns(rx, ry, rz, M):
    """[r] M for a row-major 3x3 M (a 9-tuple): column j is r x (column j of M)."""
    return (ry * M[6] - rz * M[3], ry * M[7] - rz * M[4], ry * M[8] - rz * M[5],
            rz * M[0] - rx * M[6], rz * M[1] - rx * M[7], rz * M[2] - rx * M[8],
            rx * M[3] - ry * M[0], rx * M[4] - ry * M[1], rx * M[5] - ry * M[2])


@inline_kernel
def add_articulated_inertia_to_parent(X, x, Ia, ia, acc, a):
    """acc += X^* Ia X for a symmetric 6x6 Ia = [[A, B], [B^T, C]] (linear, angular blocks),
    with 3x3 blocks rather than 6x6 products: rotate the blocks (A' = E A E^T, B' = E B E^T,
    C' = E C E^T), then move the origin by r:
        A_p = A',  B_p = B' - A'[r],  C_p = C' + [r]B' + ([r]B')^T - [r]A'[r].
    The blocks live in local tuples (registers), not in the aliased workspace."""
    E = (X[x], X[x + 1], X[x + 2], X[x + 3], X[x + 4], X[x + 5], X[x + 6], X[x + 7], X[x + 8])
    rx, ry, rz = X[x + 9], X[x + 10], X[x + 11]
    a00, a01, a02, a11, a12, a22 = (Ia[ia], Ia[ia + 1], Ia[ia + 2], Ia[ia + 6], Ia[ia + 7],
                                    Ia[ia + 11])
    c00, c01, c02, c11, c12, c22 = (Ia[ia + 15], Ia[ia + 16], Ia[ia + 17], Ia[ia + 18],
                                    Ia[ia + 19], Ia[ia + 20])
    A = congruence(E, a00, a01, a02, a01, a11, a12, a02, a12, a22)
    B = congruence(E, Ia[ia + 3], Ia[ia + 4], Ia[ia + 5], Ia[ia + 8], Ia[ia + 9], Ia[ia + 10],
                   Ia[ia + 12], Ia[ia + 13], Ia[ia + 14])
    C = congruence(E, c00, c01, c02, c01, c11, c12, c02, c12, c22)
    RA = cross_columns(rx, ry, rz, A)                  # [r]A', so A'[r] = -([r]A')^T
    T = (-RA[0], -RA[3], -RA[6], -RA[1], -RA[4], -RA[7], -RA[2], -RA[5], -RA[8])
    M = cross_columns(rx, ry, rz, B)                   # [r]B'
    N = cross_columns(rx, ry, rz, T)                   # [r]A'[r]
    for i in range(3):
        for j in range(3):
            acc[a + SYM[6 * i + 3 + j]] += B[3 * i + j] - T[3 * i + j]
            if j >= i:
                acc[a + SYM[6 * i + j]] += A[3 * i + j]
                acc[a + SYM[6 * (3 + i) + 3 + j]] += (C[3 * i + j] + M[3 * i + j] + M[3 * j + i]
                                                      - N[3 * i + j])


@inline_kernel
def articulated_times_subspace(jtype, body_float, j, k, Ia, ia, out, o, scratch, sc):
    """out[o:o+6] = Ia S_k for column k of the joint's motion subspace (Ia packed). Ia is
    symmetric, so for a revolute (prismatic) joint, S = [0; a] ([a; 0]), this is a combination
    of three of its rows: 18 products instead of 36. scratch[sc:sc+6] is scratch."""
    if jtype == JOINT_REVOLUTE or jtype == JOINT_PRISMATIC:
        b = 18 if jtype == JOINT_REVOLUTE else 0      # first of the three rows, times 6
        a0, a1, a2 = body_float[j + AXIS], body_float[j + AXIS + 1], body_float[j + AXIS + 2]
        for c in range(6):
            out[o + c] = (a0 * Ia[ia + SYM[b + c]] + a1 * Ia[ia + SYM[b + 6 + c]]
                          + a2 * Ia[ia + SYM[b + 12 + c]])
    else:
        motion_subspace_column(jtype, body_float, j, k, scratch, sc)
        symmetric6_times(Ia, ia, scratch, sc, out, o)


@inline_kernel
def invert_spd(D, d, n, out, o):
    """out = D^-1 for a small symmetric positive-definite n x n D (row stride 6), by
    Gauss-Jordan without pivoting (fine for SPD). Destroys D. False if D is singular."""
    for r in range(n):
        for c in range(n):
            out[o + 6 * r + c] = 1.0 if r == c else 0.0
    for c in range(n):
        pivot = D[d + 7 * c]
        if not pivot > 0.0:
            return False
        for b in range(n):
            D[d + 6 * c + b] /= pivot
            out[o + 6 * c + b] /= pivot
        for r in range(n):
            if r != c:
                factor = D[d + 6 * r + c]
                for b in range(n):
                    D[d + 6 * r + b] -= factor * D[d + 6 * c + b]
                    out[o + 6 * r + b] -= factor * out[o + 6 * c + b]
    return True


@kernel
def aba(body_int, body_float, ws, q, v, tau, f_ext, vdot):
    """vdot = FD(q, v, tau, f_ext). Returns OK or a status code (checks)."""
    status = state_status(body_int, q, v, tau)
    if status != OK:
        return status
    if has_nonfinite_2d(f_ext):
        return BAD_FEXT
    nb = body_int.shape[0]
    s = nb * WS_COLS
    for k in range(6):
        ws[VEL + k] = 0.0
    for i in range(1, nb):                                        # pass 1
        jtype, j, w = body_int[i, JTYPE], i * BODY_FLOAT_COLS, i * WS_COLS
        body_transform(body_float, i, jtype, q, body_int[i, QIDX], ws, s)
        joint_velocity(jtype, body_float, j, v, body_int[i, VIDX], ws, w + VJ, False)  # vJ = S v
        motion_to_child(ws, w + LI, ws, body_int[i, PARENT] * WS_COLS + VEL, ws, w + VEL)
        for k in range(6):
            ws[w + VEL + k] += ws[w + VJ + k]                     # v = X v_p + vJ
        motion_cross(ws, w + VEL, ws, w + VJ, ws, w + ABA_C)      # c = v x vJ
        inertia_matrix(body_float, j + INERTIA, ws, w + ABA_IA)   # IA = I
        for k in range(6):
            ws[w + ABA_PA + k] = -f_ext[i, k]
        add_bias_force(body_float, j + INERTIA, ws, w + VEL, ws, w + ABA_PA)  # pA = v x* I v - f_ext
    D, pa, sf = s + SCRATCH_D, s + SCRATCH_FORCE, s + SCRATCH_DOF
    for i in range(nb - 1, 0, -1):                                # pass 2
        jtype, vi, nv, p = body_int[i, JTYPE], body_int[i, VIDX], body_int[i, NVJ], body_int[i, PARENT]
        j, w = i * BODY_FLOAT_COLS, i * WS_COLS
        for k in range(nv):                                       # U = IA S
            articulated_times_subspace(jtype, body_float, j, k, ws, w + ABA_IA, ws,
                                       w + ABA_U + 6 * k, ws, s + SCRATCH_MOTION)
        for k in range(nv):                                       # D = S^T U + armature
            project_force(jtype, body_float, j, ws, w + ABA_U + 6 * k, ws, sf)
            for m in range(nv):
                ws[D + 6 * m + k] = ws[sf + m]
            ws[D + 7 * k] += body_float[j + ARMATURE + k]
        if nv == 1:
            if not ws[D] > 0.0:
                return SINGULAR
            ws[w + ABA_DINV] = 1.0 / ws[D]
        elif not invert_spd(ws, D, nv, ws, w + ABA_DINV):
            return SINGULAR
        project_force(jtype, body_float, j, ws, w + ABA_PA, ws, w + ABA_UU)  # u = tau - S^T pA
        for k in range(nv):
            ws[w + ABA_UU + k] = tau[vi + k] - ws[w + ABA_UU + k]
        if p > 0:
            if nv == 1:                                           # rank-1: D and u are scalars
                d_inv, uu = ws[w + ABA_DINV], ws[w + ABA_UU]
                for r in range(6):                                # Ia = IA - U U^T / D
                    ur = ws[w + ABA_U + r] * d_inv
                    for c in range(r, 6):
                        ws[w + ABA_IA + SYM[6 * r + c]] -= ur * ws[w + ABA_U + c]
                symmetric6_times(ws, w + ABA_IA, ws, w + ABA_C, ws, pa)  # pa = pA + Ia c + U u / D
                for r in range(6):
                    ws[pa + r] += ws[w + ABA_PA + r] + ws[w + ABA_U + r] * d_inv * uu
            else:
                for r in range(6):                                # Ia = IA - U D^-1 U^T
                    for c in range(r, 6):
                        acc = 0.0
                        for k in range(nv):
                            for m in range(nv):
                                acc += (ws[w + ABA_U + 6 * k + r] * ws[w + ABA_DINV + 6 * k + m]
                                        * ws[w + ABA_U + 6 * m + c])
                        ws[w + ABA_IA + SYM[6 * r + c]] -= acc
                symmetric6_times(ws, w + ABA_IA, ws, w + ABA_C, ws, pa)  # pa = pA + Ia c + U D^-1 u
                for r in range(6):
                    acc = 0.0
                    for k in range(nv):
                        for m in range(nv):
                            acc += (ws[w + ABA_U + 6 * k + r] * ws[w + ABA_DINV + 6 * k + m]
                                    * ws[w + ABA_UU + m])
                    ws[pa + r] += ws[w + ABA_PA + r] + acc
            add_articulated_inertia_to_parent(ws, w + LI, ws, w + ABA_IA, ws, p * WS_COLS + ABA_IA)
            force_to_parent(ws, w + LI, ws, pa, ws, p * WS_COLS + ABA_PA, True)
    for k in range(6):                                            # pass 3, a_0 = -g
        ws[ACC + k] = 0.0
    for k in range(3):
        ws[ACC + k] = -body_float[GRAVITY + k]
    for i in range(1, nb):
        vi, nv, w = body_int[i, VIDX], body_int[i, NVJ], i * WS_COLS
        motion_to_child(ws, w + LI, ws, body_int[i, PARENT] * WS_COLS + ACC, ws, w + ACC)
        for k in range(6):
            ws[w + ACC + k] += ws[w + ABA_C + k]                  # a' = X a_p + c
        for k in range(nv):                                       # u - U^T a'
            acc = 0.0
            for m in range(6):
                acc += ws[w + ABA_U + 6 * k + m] * ws[w + ACC + m]
            ws[sf + k] = ws[w + ABA_UU + k] - acc
        for k in range(nv):                                       # vdot = D^-1 (u - U^T a')
            acc = 0.0
            for m in range(nv):
                acc += ws[w + ABA_DINV + 6 * k + m] * ws[sf + m]
            vdot[vi + k] = acc
        joint_velocity(body_int[i, JTYPE], body_float, i * BODY_FLOAT_COLS, vdot, vi, ws,
                       w + ACC, True)                             # a = a' + S vdot
    return OK
