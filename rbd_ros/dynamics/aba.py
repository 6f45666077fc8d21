"""Articulated-body algorithm, forward dynamics in O(n) (Featherstone, RBDA Table 7.1).

    pass 1:  v_i = X_i v_p + S_i qd_i ;  c_i = v_i x (S_i qd_i)
             IA_i = I_i ;  pA_i = v_i x* I_i v_i - f_ext_i
    pass 2:  U_i = IA_i S_i ;  D_i = S_i^T U_i ;  u_i = tau_i - S_i^T pA_i
             Ia = IA_i - U_i D_i^-1 U_i^T ;  pa = pA_i + Ia c_i + U_i D_i^-1 u_i
             IA_p += X_i^* Ia X_i ;  pA_p += X_i^* pa
    pass 3:  a'_i = X_i a_p + c_i ;  qdd_i = D_i^-1 (u_i - U_i^T a'_i) ;  a_i = a'_i + S_i qdd_i

Articulated inertias are general symmetric 6x6 matrices stored row-major (36 entries).
"""
from ._jit import kernel
from .checks import BAD_FEXT, OK, STATUS_STRIDE, has_nonfinite_2d, state_status
from .joints import (add_joint_velocity, body_transform, joint_velocity, motion_subspace_column,
                     project_force)
from .layout import (ACC, DINV, GRAVITY, IA, INERTIA, JTYPE, LI_P, LI_R, NVJ, PA, PARENT, QIDX,
                     SCRATCH, U, UU, VEL, VIDX, VJ)
from .spatial import (add_bias_force, add_force_to_parent, force_to_parent, motion_cross,
                      motion_to_child)


@kernel
def inertia_matrix(inertia, out):
    """The dense 6x6 spatial inertia [[m 1, -[h]], [[h], I]] of a 10-parameter inertia."""
    m, hx, hy, hz = inertia[0], inertia[1], inertia[2], inertia[3]
    for k in range(36):
        out[k] = 0.0
    out[0] = m
    out[7] = m
    out[14] = m
    out[4], out[5] = hz, -hy          # linear rows: m v - [h] w
    out[9], out[11] = -hz, hx
    out[15], out[16] = hy, -hx
    out[19], out[20] = -hz, hy        # angular rows: [h] v + I w
    out[24], out[26] = hz, -hx
    out[30], out[31] = -hy, hx
    out[21], out[22], out[23] = inertia[4], inertia[5], inertia[6]
    out[27], out[28], out[29] = inertia[5], inertia[7], inertia[8]
    out[33], out[34], out[35] = inertia[6], inertia[8], inertia[9]


@kernel
def matrix6_times(M, x, out):
    """out = M x for a row-major 6x6 M."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += M[6 * r + c] * x[c]
        out[r] = s


@kernel
def add_articulated_inertia_to_parent(E, r, Ia, acc, scratch):
    """acc += X^* Ia X, one column at a time: column j is X^* (Ia (X e_j)).
    ``scratch`` holds 18 numbers."""
    unit, x_col, y_col = scratch[0:6], scratch[6:12], scratch[12:18]
    for j in range(6):
        for k in range(6):
            unit[k] = 0.0
        unit[j] = 1.0
        motion_to_child(E, r, unit, x_col)
        matrix6_times(Ia, x_col, y_col)
        force_to_parent(E, r, y_col, x_col)
        for k in range(6):
            acc[6 * k + j] += x_col[k]


@kernel
def invert_spd(D, n, out):
    """out = D^-1 for a small symmetric positive-definite n x n D (stride 6), Gauss-Jordan
    without pivoting (fine for SPD). Destroys D. Returns False if D is singular."""
    for a in range(n):
        for b in range(n):
            out[6 * a + b] = 1.0 if a == b else 0.0
    for c in range(n):
        pivot = D[6 * c + c]
        if not pivot > 0.0:
            return False
        for b in range(n):
            D[6 * c + b] /= pivot
            out[6 * c + b] /= pivot
        for a in range(n):
            if a != c:
                factor = D[6 * a + c]
                for b in range(n):
                    D[6 * a + b] -= factor * D[6 * c + b]
                    out[6 * a + b] -= factor * out[6 * c + b]
    return True


@kernel
def aba(body_int, body_float, ws, q, qd, tau, f_ext, qdd):
    """qdd = FD(q, qd, tau, f_ext). Returns 0 or a status code (checks)."""
    status = state_status(body_int, q, qd, tau)
    if status != OK:
        return status
    if has_nonfinite_2d(f_ext):
        return BAD_FEXT
    nb = body_int.shape[0]
    scratch = ws[0, IA:IA + 36]                # the world row's ABA entries are scratch
    D = ws[0, DINV:DINV + 36]
    ws[0, VEL:VEL + 6] = 0.0
    for i in range(1, nb):                                          # pass 1
        jtype, vi, p = body_int[i, JTYPE], body_int[i, VIDX], body_int[i, PARENT]
        joint, w = body_float[i], ws[i]
        body_transform(body_float, i, jtype, q, body_int[i, QIDX], ws)
        v, c, pA = w[VEL:VEL + 6], w[VJ:VJ + 6], w[PA:PA + 6]
        joint_velocity(jtype, joint, qd, vi, scratch[0:6])          # vJ = S qd
        motion_to_child(w[LI_R:LI_R + 9], w[LI_P:LI_P + 3], ws[p, VEL:VEL + 6], v)
        for k in range(6):
            v[k] += scratch[k]
        motion_cross(v, scratch[0:6], c)                            # c = v x vJ
        inertia_matrix(joint[INERTIA:INERTIA + 10], w[IA:IA + 36])
        for k in range(6):
            pA[k] = -f_ext[i, k]
        add_bias_force(joint[INERTIA:INERTIA + 10], v, pA)
    for i in range(nb - 1, 0, -1):                                  # pass 2
        jtype, vi, nv, p = body_int[i, JTYPE], body_int[i, VIDX], body_int[i, NVJ], body_int[i, PARENT]
        joint, w = body_float[i], ws[i]
        Ia, pA, Ui, Dinv, u = w[IA:IA + 36], w[PA:PA + 6], w[U:U + 36], w[DINV:DINV + 36], w[UU:UU + 6]
        for k in range(nv):                                         # U = IA S
            motion_subspace_column(jtype, joint, k, scratch[0:6])
            matrix6_times(Ia, scratch[0:6], Ui[6 * k:6 * k + 6])
        for k in range(nv):                                         # D = S^T U
            project_force(jtype, joint, Ui[6 * k:6 * k + 6], scratch[6:12], 0)
            for m in range(nv):
                D[6 * m + k] = scratch[6 + m]
        if not invert_spd(D, nv, Dinv):
            return -1
        project_force(jtype, joint, pA, u, 0)                       # u = tau - S^T pA
        for k in range(nv):
            u[k] = tau[vi + k] - u[k]
        if p > 0:
            # Ia <- IA - U D^-1 U^T ;  pa = pA + Ia c + U D^-1 u
            for a in range(6):
                for b in range(6):
                    s = 0.0
                    for k in range(nv):
                        for m in range(nv):
                            s += Ui[6 * k + a] * Dinv[6 * k + m] * Ui[6 * m + b]
                    Ia[6 * a + b] -= s
            pa = scratch[12:18]
            matrix6_times(Ia, w[VJ:VJ + 6], pa)
            for a in range(6):
                s = 0.0
                for k in range(nv):
                    for m in range(nv):
                        s += Ui[6 * k + a] * Dinv[6 * k + m] * u[m]
                pa[a] += pA[a] + s
            E, r = w[LI_R:LI_R + 9], w[LI_P:LI_P + 3]
            add_articulated_inertia_to_parent(E, r, Ia, ws[p, IA:IA + 36], scratch[18:36])
            add_force_to_parent(E, r, pa, ws[p, PA:PA + 6])
    ws[0, ACC:ACC + 3] = -body_float[0, GRAVITY:GRAVITY + 3]        # pass 3, a_0 = -g
    ws[0, ACC + 3:ACC + 6] = 0.0
    for i in range(1, nb):
        jtype, vi, nv, p = body_int[i, JTYPE], body_int[i, VIDX], body_int[i, NVJ], body_int[i, PARENT]
        w = ws[i]
        a = w[ACC:ACC + 6]
        motion_to_child(w[LI_R:LI_R + 9], w[LI_P:LI_P + 3], ws[p, ACC:ACC + 6], a)
        for k in range(6):
            a[k] += w[VJ + k]                                       # a' = X a_p + c
        Ui, Dinv, u = w[U:U + 36], w[DINV:DINV + 36], w[UU:UU + 6]
        for k in range(nv):                                         # u - U^T a'
            s = 0.0
            for m in range(6):
                s += Ui[6 * k + m] * a[m]
            scratch[k] = u[k] - s
        for k in range(nv):                                         # qdd = D^-1 (...)
            s = 0.0
            for m in range(nv):
                s += Dinv[6 * k + m] * scratch[m]
            qdd[vi + k] = s
        add_joint_velocity(jtype, body_float[i], qdd, vi, a)        # a = a' + S qdd
    return OK


@kernel
def aba_batch(body_int, body_float, ws, Q, QD, TAU, F_EXT, QDD):
    shared = F_EXT.shape[0] == 1
    for n in range(Q.shape[0]):
        status = aba(body_int, body_float, ws, Q[n], QD[n], TAU[n],
                     F_EXT[0] if shared else F_EXT[n], QDD[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK
