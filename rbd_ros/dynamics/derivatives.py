"""Analytical derivatives of inverse and forward dynamics (Carpentier and Mansard, "Analytical
derivatives of rigid body dynamics algorithms", RSS 2018; Pinocchio's computeRNEADerivatives
and computeABADerivatives), of gravity and of a frame's velocity.

Every quantity is in world coordinates, about the world origin: J_k = oMi S_k is dof k's
column, v_i, a_i (a_0 = -g), Y_i, f_i the body's twist, acceleration, inertia and force.
The derivatives are taken in the tangent space, q (+) dq as ``integrate`` moves: moving dof j
by dq turns every body below it rigidly by exp(J_j dq), so a quantity fixed in one of those
bodies changes by the action of J_j (J_j x m, J_j x* f, J_j x* Y - Y J_j x). What the rigid
turn misses is the same for every body below j:

    dV_j   = v_p x J_j                                  (p: the body above joint j)
    dA/dq_j = a_p x J_j + v_p x dV_j ;   dA/dv_j = (v_i + v_p) x J_j      (i: joint j's body)

with, per body, the variation of its inertia along its own motion,

    dY_i m = v_i x* Y_i m - Y_i (v_i x m) + m x* h_i   (h_i = Y_i v_i, the momentum)

RNEA's torques tau_k = J_k^T F_i (F_i: the force on the subtree of body i) then give, with Yc,
dYc, Fc summed over the subtree (composite):

    dF/dq_j = Yc dA/dq_j + dYc dV_j + J_j x* Fc        dF/dv_j = Yc dA/dv_j + dYc J_j
    dtau_k/dq_j = J_k^T dF/dq_j        (j in the subtree of k's joint; the J_j x* Fc term only
                                        for j below k's own joint)
    dtau_k/dq_j = (Yc J_k)^T dA/dq_j + J_k^T dYc dV_j        (j above k's joint)

and the same for v with dA/dv_j and J_j: two passes, as RNEA's. dY has a compact form: with
v = [u; w], Y = (m, h_c = m c, I about the origin) and h = [p; L],

    dY = [[0, -2 [p]], [0, N]],   N = [w] I - I [w] - (h_c u^T + u h_c^T) + 2 (u . h_c) 1 - [L]

so it is 12 numbers (p, N) and acts with 3x3 products; J^T dY is 3 numbers. Forward
dynamics: qdd = M^-1 (tau - h) gives dqdd/dq = -M^-1 dtau/dq and dqdd/dv = -M^-1 dtau/dv at
a = qdd, with M^-1 from the branch-induced factor of M (spd.py), which the RNEA derivatives'
pass gives (dtau/da = M).
"""
from ._jit import borrow, inline_kernel, kernel
from .aba import aba
from .checks import BAD_SHAPE, OK, SINGULAR, configuration_status, dynamics_status, state_status
from .joints import motion_subspace_column
from .kinematics import body_placements, frame_world_placement
from .layout import (ARMATURE, BODY_FLOAT_COLS, DER_A, DER_DAQ, DER_DAV, DER_DV, DER_DY, DER_F,
                     DER_FA, DER_FQ, DER_FV, DER_J, DER_V, DER_Y, DOF_WS_COLS, GRAVITY, INERTIA,
                     JTYPE, NV_SUBTREE, NVJ, O, PARENT, REFERENCE_LOCAL,
                     REFERENCE_WORLD, SCRATCH_FORCE, SCRATCH_MOTION, SCRATCH_MOTION_2, SCRATCH_X,
                     VEC_COLUMN, VEC_D_INV, VEC_QDD, VIDX, WS_COLS)
from .spatial import (add_force_cross, add_inertia_to_parent, add_motion_cross, dot6,
                      force_to_parent, inertia_times_motion, motion_cross, motion_to_child,
                      motion_to_parent)
from .spd import ltdl_factor_at, ltdl_inverse_at


# ---- the inertia variation dY in its compact form (p, N) --------------------------------------
@inline_kernel
def inertia_variation(Y, y, v, k, h, j, out, o):
    """out[o:o+12] = dY of the world inertia Y[y:y+10] moving at the twist v[k:k+6] with
    momentum h[j:j+6] = Y v: p (3), then N row-major (9); see the module's docstring."""
    ux, uy, uz, wx, wy, wz = v[k], v[k + 1], v[k + 2], v[k + 3], v[k + 4], v[k + 5]
    cx, cy, cz = Y[y + 1], Y[y + 2], Y[y + 3]
    i00, i01, i02, i11, i12, i22 = Y[y + 4], Y[y + 5], Y[y + 6], Y[y + 7], Y[y + 8], Y[y + 9]
    Lx, Ly, Lz = h[j + 3], h[j + 4], h[j + 5]
    a00 = wy * i02 - wz * i01                   # A = [w] I: column c is w x (column c of I);
    a10 = wz * i00 - wx * i02                   # [w] I - I [w] = A + A^T
    a20 = wx * i01 - wy * i00
    a01 = wy * i12 - wz * i11
    a11 = wz * i01 - wx * i12
    a21 = wx * i11 - wy * i01
    a02 = wy * i22 - wz * i12
    a12 = wz * i02 - wx * i22
    a22 = wx * i12 - wy * i02
    uc = 2.0 * (ux * cx + uy * cy + uz * cz)
    out[o] = h[j]
    out[o + 1] = h[j + 1]
    out[o + 2] = h[j + 2]
    out[o + 3] = 2.0 * (a00 - cx * ux) + uc
    out[o + 4] = a01 + a10 - (cx * uy + ux * cy) + Lz
    out[o + 5] = a02 + a20 - (cx * uz + ux * cz) - Ly
    out[o + 6] = a10 + a01 - (cy * ux + uy * cx) - Lz
    out[o + 7] = 2.0 * (a11 - cy * uy) + uc
    out[o + 8] = a12 + a21 - (cy * uz + uy * cz) + Lx
    out[o + 9] = a20 + a02 - (cz * ux + uz * cx) + Ly
    out[o + 10] = a21 + a12 - (cz * uy + uz * cy) - Lx
    out[o + 11] = 2.0 * (a22 - cz * uz) + uc


@inline_kernel
def add_variation_times(D, d, m, k, out, o):
    """out[o:o+6] += dY m for the compact dY at D[d:d+12]: [-2 p x m_ang; N m_ang]."""
    px, py, pz = D[d], D[d + 1], D[d + 2]
    mx, my, mz = m[k + 3], m[k + 4], m[k + 5]
    out[o] -= 2.0 * (py * mz - pz * my)
    out[o + 1] -= 2.0 * (pz * mx - px * mz)
    out[o + 2] -= 2.0 * (px * my - py * mx)
    out[o + 3] += D[d + 3] * mx + D[d + 4] * my + D[d + 5] * mz
    out[o + 4] += D[d + 6] * mx + D[d + 7] * my + D[d + 8] * mz
    out[o + 5] += D[d + 9] * mx + D[d + 10] * my + D[d + 11] * mz


@inline_kernel
def variation_row(D, d, m, k):
    """m^T dY for the compact dY at D[d:d+12]: its linear part is zero, its angular part
    2 p x m_lin + N^T m_ang (returned, 3 numbers)."""
    px, py, pz = D[d], D[d + 1], D[d + 2]
    lx, ly, lz, ax, ay, az = m[k], m[k + 1], m[k + 2], m[k + 3], m[k + 4], m[k + 5]
    return (2.0 * (py * lz - pz * ly) + D[d + 3] * ax + D[d + 6] * ay + D[d + 9] * az,
            2.0 * (pz * lx - px * lz) + D[d + 4] * ax + D[d + 7] * ay + D[d + 10] * az,
            2.0 * (px * ly - py * lx) + D[d + 5] * ax + D[d + 8] * ay + D[d + 11] * az)


@inline_kernel
def add_to_parent(ws, w, p, first, count):
    """ws[parent row + first : + count] += ws[row + first : + count] (a composite's sum)."""
    for c in range(count):
        ws[p + first + c] += ws[w + first + c]


@inline_kernel
def world_columns(body_int, body_float, ws, dof_ws, i, S):
    """The world column J = oMi S of each dof of body i (dof_ws, DER_J), after
    body_placements; S: 6 numbers of scratch in ws."""
    jtype, vi = body_int[i, JTYPE], body_int[i, VIDX]
    for k in range(body_int[i, NVJ]):
        motion_subspace_column(jtype, body_float, i * BODY_FLOAT_COLS, k, ws, S)
        motion_to_parent(ws, i * WS_COLS + O, ws, S, dof_ws, (vi + k) * DOF_WS_COLS + DER_J)


@inline_kernel
def world_inertia(body_float, ws, i):
    """Y_i in world coordinates (DER_Y), after O."""
    w = i * WS_COLS
    for c in range(10):
        ws[w + DER_Y + c] = 0.0
    add_inertia_to_parent(ws, w + O, body_float, i * BODY_FLOAT_COLS + INERTIA, ws, w + DER_Y)


# ---- inverse dynamics ---------------------------------------------------------------------------
@kernel
def rnea_derivatives(body_int, body_float, ws, dof_ws, dof_parent, q, v, a, f_ext, dtau_dq,
                     dtau_dv, M):
    """dtau/dq, dtau/dv and dtau/da = M of tau = ID(q, v, a, f_ext) (f_ext[i]: the wrench on
    body i, body coordinates). OK or a status code (checks)."""
    status = dynamics_status(body_int, q, v, a, f_ext)
    if status != OK:
        return status
    nb, n = body_int.shape[0], body_int[0, NVJ]
    if dtau_dq.shape != (n, n) or dtau_dv.shape != (n, n) or M.shape != (n, n):
        return BAD_SHAPE
    a, f_ext = borrow(a), borrow(f_ext)
    s = nb * WS_COLS
    S, jv = s + SCRATCH_MOTION, s + SCRATCH_FORCE      # (jv: J v of a joint, then momentum h)
    fext, Dq, Dv, H = (f_ext.reshape(f_ext.size), dtau_dq.reshape(n * n),
                       dtau_dv.reshape(n * n), M.reshape(n * n))
    body_placements(body_int, body_float, ws, q)                       # liMi, oMi
    for k in range(n * n):
        Dq[k] = 0.0
        Dv[k] = 0.0
        H[k] = 0.0
    for k in range(3):                                   # v_0 = 0 ; a_0 = -g
        ws[DER_V + k] = 0.0
        ws[DER_V + 3 + k] = 0.0
        ws[DER_A + k] = -body_float[GRAVITY + k]
        ws[DER_A + 3 + k] = 0.0
    for i in range(1, nb):                                             # forward pass
        vi, nvj, p, w = body_int[i, VIDX], body_int[i, NVJ], body_int[i, PARENT], i * WS_COLS
        v_i, a_i, v_p, a_p = w + DER_V, w + DER_A, p * WS_COLS + DER_V, p * WS_COLS + DER_A
        world_columns(body_int, body_float, ws, dof_ws, i, S)              # J = oMi S
        for c in range(6):
            ws[jv + c] = 0.0
            ws[a_i + c] = ws[a_p + c]
        for k in range(nvj):
            J = (vi + k) * DOF_WS_COLS + DER_J
            for c in range(6):
                ws[jv + c] += dof_ws[J + c] * v[vi + k]
                ws[a_i + c] += dof_ws[J + c] * a[vi + k]               # a_i = a_p + J a
        for c in range(6):
            ws[v_i + c] = ws[v_p + c] + ws[jv + c]                     # v_i = v_p + J v
        add_motion_cross(ws, v_p, ws, jv, ws, a_i)                     #   + v_p x J v (= dJ v)
        for k in range(nvj):
            d = (vi + k) * DOF_WS_COLS
            motion_cross(ws, v_p, dof_ws, d + DER_J, dof_ws, d + DER_DV)       # dV
            motion_cross(ws, a_p, dof_ws, d + DER_J, dof_ws, d + DER_DAQ)      # dA/dq
            add_motion_cross(ws, v_p, dof_ws, d + DER_DV, dof_ws, d + DER_DAQ)
            motion_cross(ws, v_i, dof_ws, d + DER_J, dof_ws, d + DER_DAV)      # dA/dv
            for c in range(6):
                dof_ws[d + DER_DAV + c] += dof_ws[d + DER_DV + c]
        world_inertia(body_float, ws, i)                                   # Y_i
        inertia_times_motion(ws, w + DER_Y, ws, v_i, ws, jv)               # h_i = Y_i v_i
        inertia_variation(ws, w + DER_Y, ws, v_i, ws, jv, ws, w + DER_DY)  # dY_i
        inertia_times_motion(ws, w + DER_Y, ws, a_i, ws, w + DER_F)        # f_i = Y_i a_i
        add_force_cross(ws, v_i, ws, jv, ws, w + DER_F)                    #   + v_i x* h_i
        force_to_parent(ws, w + O, fext, 6 * i, ws, jv, False)             #   - oMi f_ext_i
        for c in range(6):
            ws[w + DER_F + c] -= ws[jv + c]
    for i in range(nb - 1, 0, -1):                                     # backward pass
        vi, nvj, p, w = body_int[i, VIDX], body_int[i, NVJ], body_int[i, PARENT], i * WS_COLS
        nsub, Yc, dYc, Fc = body_int[i, NV_SUBTREE], w + DER_Y, w + DER_DY, w + DER_F
        for k in range(nvj):
            d = (vi + k) * DOF_WS_COLS
            inertia_times_motion(ws, Yc, dof_ws, d + DER_J, dof_ws, d + DER_FA)      # Yc J
            inertia_times_motion(ws, Yc, dof_ws, d + DER_DAV, dof_ws, d + DER_FV)    # dF/dv
            add_variation_times(ws, dYc, dof_ws, d + DER_J, dof_ws, d + DER_FV)
            inertia_times_motion(ws, Yc, dof_ws, d + DER_DAQ, dof_ws, d + DER_FQ)    # dF/dq
            add_variation_times(ws, dYc, dof_ws, d + DER_DV, dof_ws, d + DER_FQ)
        for k in range(nvj):
            r = vi + k
            J = r * DOF_WS_COLS + DER_J
            for c in range(vi, vi + nsub):                     # row r, columns of the subtree
                e = c * DOF_WS_COLS
                H[r * n + c] = dot6(dof_ws, J, dof_ws, e + DER_FA)
                H[c * n + r] = H[r * n + c]
                Dq[r * n + c] = dot6(dof_ws, J, dof_ws, e + DER_FQ)
                Dv[r * n + c] = dot6(dof_ws, J, dof_ws, e + DER_FV)
            H[r * n + r] += body_float[i * BODY_FLOAT_COLS + ARMATURE + k]
        for k in range(nvj):
            r = vi + k
            d = r * DOF_WS_COLS
            add_force_cross(dof_ws, d + DER_J, ws, Fc, dof_ws, d + DER_FQ)  # dF/dq += J x* Fc
            g0, g1, g2 = variation_row(ws, dYc, dof_ws, d + DER_J)         # J_r^T dYc
            c = dof_parent[vi]
            while c >= 0:                                      # row r, columns above
                e = c * DOF_WS_COLS
                Dq[r * n + c] = (dot6(dof_ws, d + DER_FA, dof_ws, e + DER_DAQ)
                                       + g0 * dof_ws[e + DER_DV + 3]
                                       + g1 * dof_ws[e + DER_DV + 4]
                                       + g2 * dof_ws[e + DER_DV + 5])
                Dv[r * n + c] = (dot6(dof_ws, d + DER_FA, dof_ws, e + DER_DAV)
                                       + g0 * dof_ws[e + DER_J + 3] + g1 * dof_ws[e + DER_J + 4]
                                       + g2 * dof_ws[e + DER_J + 5])
                c = dof_parent[c]
        if p > 0:                                              # composites: Yc, dYc, Fc
            add_to_parent(ws, w, p * WS_COLS, DER_Y, 10)
            add_to_parent(ws, w, p * WS_COLS, DER_DY, 12)
            add_to_parent(ws, w, p * WS_COLS, DER_F, 6)
    return OK


@kernel
def gravity_derivatives(body_int, body_float, ws, dof_ws, dof_parent, q, dg_dq):
    """dg/dq of the gravity torques g(q): the RNEA derivatives with v = a = 0, where every
    body accelerates at a_0 = -g, dV = 0, dY = 0 and dA/dq_j = a_0 x J_j (its angular part is
    zero). OK or a status code."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    nb, n = body_int.shape[0], body_int[0, NVJ]
    if dg_dq.shape != (n, n):
        return BAD_SHAPE
    S = nb * WS_COLS + SCRATCH_MOTION
    G = dg_dq.reshape(n * n)
    body_placements(body_int, body_float, ws, q)                       # liMi, oMi
    for k in range(n * n):
        G[k] = 0.0
    for k in range(3):                                   # a_0 = -g
        ws[DER_A + k] = -body_float[GRAVITY + k]
        ws[DER_A + 3 + k] = 0.0
    for i in range(1, nb):                                             # forward pass
        vi, w = body_int[i, VIDX], i * WS_COLS
        world_columns(body_int, body_float, ws, dof_ws, i, S)              # J = oMi S
        for k in range(body_int[i, NVJ]):
            d = (vi + k) * DOF_WS_COLS
            motion_cross(ws, DER_A, dof_ws, d + DER_J, dof_ws, d + DER_DAQ)   # dA/dq
        world_inertia(body_float, ws, i)                                   # Y_i
        inertia_times_motion(ws, w + DER_Y, ws, DER_A, ws, w + DER_F)      # f_i = Y_i a_0
    for i in range(nb - 1, 0, -1):                                     # backward pass
        vi, nvj, p, w = body_int[i, VIDX], body_int[i, NVJ], body_int[i, PARENT], i * WS_COLS
        nsub = body_int[i, NV_SUBTREE]
        for k in range(nvj):
            d = (vi + k) * DOF_WS_COLS
            inertia_times_motion(ws, w + DER_Y, dof_ws, d + DER_J, dof_ws, d + DER_FA)
            inertia_times_motion(ws, w + DER_Y, dof_ws, d + DER_DAQ, dof_ws, d + DER_FQ)
        for k in range(nvj):
            r = vi + k
            J = r * DOF_WS_COLS + DER_J
            for c in range(vi, vi + nsub):                     # row r, columns of the subtree
                G[r * n + c] = dot6(dof_ws, J, dof_ws, c * DOF_WS_COLS + DER_FQ)
        for k in range(nvj):
            r = vi + k
            d = r * DOF_WS_COLS
            add_force_cross(dof_ws, d + DER_J, ws, w + DER_F, dof_ws, d + DER_FQ)
            c = dof_parent[vi]
            while c >= 0:                                      # row r, columns above
                e = c * DOF_WS_COLS + DER_DAQ
                G[r * n + c] = (dof_ws[d + DER_FA] * dof_ws[e]
                                + dof_ws[d + DER_FA + 1] * dof_ws[e + 1]
                                + dof_ws[d + DER_FA + 2] * dof_ws[e + 2])
                c = dof_parent[c]
        if p > 0:
            add_to_parent(ws, w, p * WS_COLS, DER_Y, 10)
            add_to_parent(ws, w, p * WS_COLS, DER_F, 6)
    return OK


# ---- forward dynamics ---------------------------------------------------------------------------
@inline_kernel
def minus_times(X, S, n, y):
    """X (n x n, flat) <- -S X for the symmetric S (flat), column by column (column c of S X
    needs only column c of X): y = -sum_k X[k, c] S[k, :], rows of S (contiguous), skipping
    X's zeros (its branch-induced pattern). y: n numbers of scratch."""
    for c in range(n):
        for r in range(n):
            y[r] = 0.0
        for k in range(n):
            b = X[k * n + c]
            if b != 0.0:
                for r in range(n):
                    y[r] -= b * S[k * n + r]
        for r in range(n):
            X[r * n + c] = y[r]


@kernel
def aba_derivatives(body_int, body_float, ws, dof_ws, dof_parent, vectors, q, v, tau, f_ext,
                    dqdd_dq, dqdd_dv, Minv):
    """dqdd/dq, dqdd/dv and dqdd/dtau = M^-1 of qdd = FD(q, v, tau, f_ext): ABA gives qdd,
    the RNEA derivatives at a = qdd give dtau/dq, dtau/dv (into the outputs) and M (into
    Minv), factored and inverted in place, then dqdd/dx = -M^-1 dtau/dx in place.
    ``vectors``: the dof vectors (layout.VEC_*). OK or a status code."""
    n = body_int[0, NVJ]
    if vectors.shape[0] < 3 * n:
        return BAD_SHAPE
    qdd = vectors[VEC_QDD * n:(VEC_QDD + 1) * n]
    status = aba(body_int, body_float, ws, q, v, tau, f_ext, qdd)
    if status != OK:
        return status
    status = rnea_derivatives(body_int, body_float, ws, dof_ws, dof_parent, q, v, qdd, f_ext,
                              dqdd_dq, dqdd_dv, Minv)
    if status != OK:
        return status
    H, column = Minv.reshape(n * n), vectors[VEC_COLUMN * n:(VEC_COLUMN + 1) * n]
    if not ltdl_factor_at(H, 0, n, dof_parent, n):                     # M = L^T D L
        return SINGULAR
    ltdl_inverse_at(H, 0, n, dof_parent, n, column, vectors[VEC_D_INV * n:(VEC_D_INV + 1) * n])
    minus_times(dqdd_dq.reshape(n * n), H, n, column)                 # -M^-1 dtau/dq
    minus_times(dqdd_dv.reshape(n * n), H, n, column)                 # -M^-1 dtau/dv
    return OK


# ---- a frame's velocity -------------------------------------------------------------------------
@kernel
def frame_velocity_derivatives(body_int, body_float, ws, q, v, frame, reference, dv_dq, dv_dv):
    """d/dq and d/dv (6 x nv each) of the frame's twist in ``reference``. In world
    coordinates the twist is v_b (its body's) and d v_b / dq_j = J_j x v_b + dV_j for the
    joints above the body; 'local' sees it through oMf^-1, where the rigid turn cancels and
    only dV_j is left; 'local_world_aligned' is [v_O + w x p; w] with the frame's origin p,
    which moves too (dp_j = J_j,lin + J_j,ang x p). dv_dv is the frame's Jacobian."""
    status = state_status(body_int, q, v, v)
    if status != OK:
        return status
    nb, n = body_int.shape[0], body_int[0, NVJ]
    if dv_dq.shape != (6, n) or dv_dv.shape != (6, n):
        return BAD_SHAPE
    s = nb * WS_COLS
    S, col, dV, X = s + SCRATCH_MOTION, s + SCRATCH_MOTION_2, s + SCRATCH_FORCE, s + SCRATCH_X
    body_placements(body_int, body_float, ws, q)                       # liMi, oMi
    for k in range(6):                                                 # v_0 = 0
        ws[DER_V + k] = 0.0
    for i in range(1, nb):                                             # world twists
        jtype, vi, w = body_int[i, JTYPE], body_int[i, VIDX], i * WS_COLS
        for c in range(6):
            ws[w + DER_V + c] = ws[body_int[i, PARENT] * WS_COLS + DER_V + c]
        for k in range(body_int[i, NVJ]):
            motion_subspace_column(jtype, body_float, i * BODY_FLOAT_COLS, k, ws, S)
            motion_to_parent(ws, w + O, ws, S, ws, col)
            for c in range(6):
                ws[w + DER_V + c] += ws[col + c] * v[vi + k]
    body, _ = frame_world_placement(body_int, body_float, ws, frame)  # oMf, at X
    vb = body * WS_COLS + DER_V
    px, py, pz = ws[X + 9], ws[X + 10], ws[X + 11]
    wx, wy, wz = ws[vb + 3], ws[vb + 4], ws[vb + 5]
    dv_dq[:, :] = 0.0
    dv_dv[:, :] = 0.0
    i = body
    while i > 0:                                                       # the joints above
        jtype, vi, p = body_int[i, JTYPE], body_int[i, VIDX], body_int[i, PARENT]
        for k in range(body_int[i, NVJ]):
            motion_subspace_column(jtype, body_float, i * BODY_FLOAT_COLS, k, ws, S)
            motion_to_parent(ws, i * WS_COLS + O, ws, S, ws, col)              # J (world)
            motion_cross(ws, p * WS_COLS + DER_V, ws, col, ws, dV)             # dV = v_p x J
            if reference == REFERENCE_LOCAL:
                motion_to_child(ws, X, ws, dV, ws, dV)
                motion_to_child(ws, X, ws, col, ws, col)
            else:
                add_motion_cross(ws, col, ws, vb, ws, dV)                      # + J x v_b
                if reference != REFERENCE_WORLD:       # [v_O + w x p; w], p moving too
                    jx, jy, jz = ws[col], ws[col + 1], ws[col + 2]
                    ax, ay, az = ws[col + 3], ws[col + 4], ws[col + 5]
                    dpx, dpy, dpz = jx + ay * pz - az * py, jy + az * px - ax * pz, \
                        jz + ax * py - ay * px                                # dp
                    gx, gy, gz = ws[dV + 3], ws[dV + 4], ws[dV + 5]                # dw
                    ws[dV] += gy * pz - gz * py + wy * dpz - wz * dpy
                    ws[dV + 1] += gz * px - gx * pz + wz * dpx - wx * dpz
                    ws[dV + 2] += gx * py - gy * px + wx * dpy - wy * dpx
                    ws[col], ws[col + 1], ws[col + 2] = dpx, dpy, dpz
            for r in range(6):
                dv_dq[r, vi + k] = ws[dV + r]
                dv_dv[r, vi + k] = ws[col + r]
        i = p
    return OK
