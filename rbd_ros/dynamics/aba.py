"""Articulated-body algorithm, forward dynamics in O(n) (Featherstone, RBDA Table 7.1).

    pass 1:  X_i = X_J(q_i) X_T(i) ;  v_i = X_i v_p + S_i qd_i  (vJ = S_i qd_i, v_0 = 0)
             c_i = v_i x vJ ;  IA_i = I_i ;  pA_i = v_i x* I_i v_i - f_ext_i
    pass 2:  U_i = IA_i S_i ;  D_i = S_i^T U_i + diag(armature_i) ;  u_i = tau_i - S_i^T pA_i
             if p = parent(i) > 0:
               Ia = IA_i - U_i D_i^-1 U_i^T ;  pa = pA_i + Ia c_i + U_i D_i^-1 u_i
               IA_p += X_i^* Ia X_i ;  pA_p += X_i^* pa
    pass 3:  a_0 = -g ;  a'_i = X_i a_p + c_i ;  qdd_i = D_i^-1 (u_i - U_i^T a'_i)
             a_i = a'_i + S_i qdd_i

X_i, v_i, c_i, IA_i, ... below are the offsets of body i's quantities in its workspace row
(layout.py), v_p, a_p, IA_p, pA_p its parent's. Articulated inertias are symmetric 6x6
matrices stored as their upper triangle, row by row (21 numbers, spatial.SYM): less to load,
store and keep in cache than all 36. D_i is factored in place (L^T D L, spd.py) and every
D_i^-1 is a solve with that factor: a 1-DoF joint's is a product by 1/D_i. Armature (rotor
inertia reflected through the gear) only adds to D: it belongs to the joint, not to a body.
"""
from ._jit import borrow, inline_kernel, kernel
from .checks import OK, SINGULAR, dynamics_status
from .joints import body_transform, joint_velocity, project_force, symmetric_times_subspace
from .layout import (ABA_C, ABA_D, ABA_IA, ABA_IA_S, ABA_PA, ABA_u, ACC, ARMATURE,
                     BODY_FLOAT_COLS, INERTIA, JTYPE, LI, NVJ, PARENT, QIDX, SCRATCH_FORCE, SCRATCH_MOTION,
                     SCRATCH_U_DINV, VEL, VIDX, VJ, WS_COLS)
from .rnea import base_acceleration
from .spatial import (SYM, add6, add_bias_force, congruence, dot6, force_to_parent, motion_cross,
                      motion_to_child, subtract_row6, symmetric6_times, zero6)
from .spd import CHAIN, ltdl_factor_at, ltdl_solve_at


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
def subtract_U_Dinv_UT(ws, IA, U, D, nv, U_Dinv):
    """IA -= U D^-1 U^T for packed IA, U's nv 6-columns at U and D factored at D (stride 6).
    U_Dinv (6 nv numbers, scratch) ends holding U D^-1, column k at U_Dinv + 6k. A 1-DoF
    joint's D^-1 is its factor, the scalar 1/D: a rank-1 update, no solves (most joints)."""
    if nv == 1:
        for r in range(6):
            ur = ws[U + r] * ws[D]
            ws[U_Dinv + r] = ur
            for c in range(r, 6):
                ws[IA + SYM[6 * r + c]] -= ur * ws[U + c]
        return
    for k in range(6 * nv):                                   # U_Dinv^T = U^T, then
        ws[U_Dinv + k] = ws[U + k]
    for r in range(6):                                        # D^-1 U^T, column by column
        ltdl_solve_at(ws, D, 6, CHAIN, nv, ws, U_Dinv + r, 6)
    for r in range(6):
        for c in range(r, 6):
            acc = 0.0
            for k in range(nv):
                acc += ws[U + 6 * k + r] * ws[U_Dinv + 6 * k + c]
            ws[IA + SYM[6 * r + c]] -= acc


@inline_kernel
def add_force_and_columns_times(ws, f, C, nv, x, xo, out, o):
    """out[o:o+6] += ws[f:f+6] + C x[xo:xo+nv] for nv 6-columns C at C (column k at C + 6k)."""
    for r in range(6):
        acc = 0.0
        for k in range(nv):
            acc += ws[C + 6 * k + r] * x[xo + k]
        out[o + r] += ws[f + r] + acc


@kernel
def aba(body_int, body_float, ws, q, v, tau, f_ext, qdd):
    """qdd = FD(q, v, tau, f_ext). Returns OK or a status code (checks)."""
    status = dynamics_status(body_int, q, v, tau, f_ext)
    if status != OK:
        return status
    f_ext, qdd = borrow(f_ext), borrow(qdd)    # the helpers bind them: no reference counting
    nb = body_int.shape[0]
    s = nb * WS_COLS                                                  # the scratch row
    zero6(ws, VEL)                                                    # v_0 = 0
    for i in range(1, nb):                                            # pass 1
        jtype, vi, p = body_int[i, JTYPE], body_int[i, VIDX], body_int[i, PARENT]
        j, w = i * BODY_FLOAT_COLS, i * WS_COLS
        X_i, v_i, vJ, c_i = w + LI, w + VEL, w + VJ, w + ABA_C
        IA_i, pA_i, I_i, v_p = w + ABA_IA, w + ABA_PA, j + INERTIA, p * WS_COLS + VEL
        body_transform(body_float, i, jtype, q, body_int[i, QIDX], ws, s)  # X_i = X_J X_T
        joint_velocity(jtype, body_float, j, v, vi, ws, vJ, False)         # vJ = S_i qd_i
        motion_to_child(ws, X_i, ws, v_p, ws, v_i)                         # v_i = X_i v_p
        add6(ws, vJ, ws, v_i)                                              #       + vJ
        motion_cross(ws, v_i, ws, vJ, ws, c_i)                             # c_i = v_i x vJ
        inertia_matrix(body_float, I_i, ws, IA_i)                          # IA_i = I_i
        zero6(ws, pA_i)
        add_bias_force(body_float, I_i, ws, v_i, ws, pA_i)                 # pA_i = v_i x* I_i v_i
        subtract_row6(f_ext, i, ws, pA_i)                                  #        - f_ext_i
    pa, U_Dinv = s + SCRATCH_FORCE, s + SCRATCH_U_DINV
    for i in range(nb - 1, 0, -1):                                    # pass 2
        jtype, vi, p = body_int[i, JTYPE], body_int[i, VIDX], body_int[i, PARENT]
        nv, j, w = body_int[i, NVJ], i * BODY_FLOAT_COLS, i * WS_COLS
        X_i, c_i, IA_i, pA_i = w + LI, w + ABA_C, w + ABA_IA, w + ABA_PA
        U_i, D_i, u_i = w + ABA_IA_S, w + ABA_D, w + ABA_u
        for k in range(nv):                                           # column k of U_i, row k of D_i
            symmetric_times_subspace(jtype, body_float, j, k, ws, IA_i, ws, U_i + 6 * k,
                                     ws, s + SCRATCH_MOTION)          # U_i = IA_i S_i
            project_force(jtype, body_float, j, ws, U_i + 6 * k, ws, D_i + 6 * k)
            ws[D_i + 7 * k] += body_float[j + ARMATURE + k]           # D_i = S_i^T U_i + armature
        if not ltdl_factor_at(ws, D_i, 6, CHAIN, nv):                 # D_i = L^T D L, in place
            return SINGULAR
        project_force(jtype, body_float, j, ws, pA_i, ws, u_i)        # u_i = tau_i - S_i^T pA_i
        for k in range(nv):
            ws[u_i + k] = tau[vi + k] - ws[u_i + k]
        if p > 0:
            IA_p, pA_p = p * WS_COLS + ABA_IA, p * WS_COLS + ABA_PA
            subtract_U_Dinv_UT(ws, IA_i, U_i, D_i, nv, U_Dinv)       # Ia = IA_i - U_i D_i^-1 U_i^T
            symmetric6_times(ws, IA_i, ws, c_i, ws, pa)               #   (in place); pa = Ia c_i
            add_force_and_columns_times(ws, pA_i, U_Dinv, nv, ws, u_i, ws, pa)
                                                                      #   + pA_i + U_i D_i^-1 u_i
            add_articulated_inertia_to_parent(ws, X_i, ws, IA_i, ws, IA_p)   # IA_p += X_i^* Ia X_i
            force_to_parent(ws, X_i, ws, pa, ws, pA_p, True)                 # pA_p += X_i^* pa
    base_acceleration(body_float, ws, ACC)                            # pass 3: a_0 = -g
    for i in range(1, nb):
        vi, nv, p, w = body_int[i, VIDX], body_int[i, NVJ], body_int[i, PARENT], i * WS_COLS
        X_i, a_i, c_i, a_p = w + LI, w + ACC, w + ABA_C, p * WS_COLS + ACC
        U_i, D_i, u_i = w + ABA_IA_S, w + ABA_D, w + ABA_u
        motion_to_child(ws, X_i, ws, a_p, ws, a_i)                    # a'_i = X_i a_p
        add6(ws, c_i, ws, a_i)                                        #        + c_i
        for k in range(nv):                                           # qdd_i = u_i - U_i^T a'_i
            qdd[vi + k] = ws[u_i + k] - dot6(ws, U_i + 6 * k, ws, a_i)
        ltdl_solve_at(ws, D_i, 6, CHAIN, nv, qdd, vi, 1)              # qdd_i = D_i^-1 (...)
        joint_velocity(body_int[i, JTYPE], body_float, i * BODY_FLOAT_COLS, qdd, vi, ws, a_i,
                       True)                                          # a_i = a'_i + S_i qdd_i
    return OK
