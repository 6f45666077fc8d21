"""The inertial regressor: tau = Y(q, v, a) pi, linear in the bodies' inertial parameters
(Atkeson, An and Hollerbach; Pinocchio's computeJointTorqueRegressor).

Each body's Newton-Euler force f_i = I_i a_i + v_i x* I_i v_i is linear in its ten parameters
pi_i = (m, h_x, h_y, h_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz) (h = m c; I about the body
origin, in body axes: Pinocchio's order), so f_i = A(v_i, a_i) pi_i with, for v = [v_o; w],
a = [a_o; alpha] (spatial, body frame, a_0 = -g as in RNEA):

    m column:   [a_o + w x v_o ; 0]
    h columns:  [alpha x e + w x (w x e) ; e x a_o + w x (e x v_o) + v_o x (w x e)]
    I columns:  [0 ; B alpha + w x (B w)]          (B: the symmetric basis matrix)

and the torques of body i's parameters are those of RNEA's backward pass applied to A alone:
tau_j += S_j^T X_{j<-i}^* A for every joint j from i up to the root. The armature is not an
inertial parameter of a body: ID = Y pi + diag(armature) a.
"""
import numpy as np

from ._jit import kernel
from .checks import OK, state_status
from .joints import body_transform, joint_velocity, project_force
from .layout import ACC, BODY_FLOAT_COLS, JTYPE, LI, NVJ, PARENT, QIDX, VEL, VIDX, VJ, WS_COLS
from .rnea import base_acceleration
from .spatial import add6, add_motion_cross, force_to_parent, motion_to_child, zero6

@kernel
def body_force_basis(ws, w, A):
    """A[k*6:(k+1)*6] = the body force of unit parameter k (the module docstring), from the
    body's velocity and acceleration in ws row w. (Scalars only: an array allocated per body
    made this function most of the regressor's cost.)"""
    vx, vy, vz = ws[w + VEL], ws[w + VEL + 1], ws[w + VEL + 2]
    wx, wy, wz = ws[w + VEL + 3], ws[w + VEL + 4], ws[w + VEL + 5]
    ax, ay, az = ws[w + ACC], ws[w + ACC + 1], ws[w + ACC + 2]
    bx, by, bz = ws[w + ACC + 3], ws[w + ACC + 4], ws[w + ACC + 5]
    A[:] = 0.0
    A[0] = ax + wy * vz - wz * vy                       # m: a_o + w x v_o
    A[1] = ay + wz * vx - wx * vz
    A[2] = az + wx * vy - wy * vx
    for k in range(3):                                  # h = e_k
        ex, ey, ez = _unit(k)
        o = 6 * (1 + k)
        cx, cy, cz = wy * ez - wz * ey, wz * ex - wx * ez, wx * ey - wy * ex       # w x e
        A[o] = by * ez - bz * ey + wy * cz - wz * cy            # alpha x e + w x (w x e)
        A[o + 1] = bz * ex - bx * ez + wz * cx - wx * cz
        A[o + 2] = bx * ey - by * ex + wx * cy - wy * cx
        dx, dy, dz = ey * vz - ez * vy, ez * vx - ex * vz, ex * vy - ey * vx       # e x v_o
        A[o + 3] = (ey * az - ez * ay) + (wy * dz - wz * dy) + (vy * cz - vz * cy)
        A[o + 4] = (ez * ax - ex * az) + (wz * dx - wx * dz) + (vz * cx - vx * cz)
        A[o + 5] = (ex * ay - ey * ax) + (wx * dy - wy * dx) + (vx * cy - vy * cx)
    # I: B alpha + w x (B w), B the symmetric matrix with ones at the entry and its mirror
    _inertia_column(A, 24, wx, wy, wz, bx, 0.0, 0.0, wx, 0.0, 0.0)      # xx
    _inertia_column(A, 30, wx, wy, wz, by, bx, 0.0, wy, wx, 0.0)        # xy
    _inertia_column(A, 36, wx, wy, wz, 0.0, by, 0.0, 0.0, wy, 0.0)      # yy
    _inertia_column(A, 42, wx, wy, wz, bz, 0.0, bx, wz, 0.0, wx)        # xz
    _inertia_column(A, 48, wx, wy, wz, 0.0, bz, by, 0.0, wz, wy)        # yz
    _inertia_column(A, 54, wx, wy, wz, 0.0, 0.0, bz, 0.0, 0.0, wz)      # zz


@kernel
def _unit(k):
    return (1.0 if k == 0 else 0.0), (1.0 if k == 1 else 0.0), (1.0 if k == 2 else 0.0)


@kernel
def _inertia_column(A, o, wx, wy, wz, Bax, Bay, Baz, Bwx, Bwy, Bwz):
    """The moment of one rotational-inertia column: B alpha + w x (B w) (the force part is 0)."""
    A[o + 3] = Bax + wy * Bwz - wz * Bwy
    A[o + 4] = Bay + wz * Bwx - wx * Bwz
    A[o + 5] = Baz + wx * Bwy - wy * Bwx


@kernel
def inertial_regressor(body_int, body_float, ws, q, v, a, Y, first, count):
    """Y (nv x 10 count): the columns of bodies first .. first + count - 1; for every moving
    body (first 1, count nbody - 1), Y pi = ID(q, v, a) - armature a. Returns OK or a
    status."""
    status = state_status(body_int, q, v, a)
    if status != OK:
        return status
    nb = body_int.shape[0]
    s = nb * WS_COLS
    zero6(ws, VEL)                                               # v_0 = 0
    base_acceleration(body_float, ws, ACC)                       # a_0 = -g
    # RNEA's forward pass (rnea.py), line for line but for the forces (f = I a + v x* I v), which
    # RNEA forms in the same loop and the regressor replaces by each body's basis: a twin kept
    # so that each file reads as its own table, at no cost in a call
    for i in range(1, nb):
        jtype, vi, p = body_int[i, JTYPE], body_int[i, VIDX], body_int[i, PARENT]
        j, w = i * BODY_FLOAT_COLS, i * WS_COLS
        X_i, v_i, a_i, vJ = w + LI, w + VEL, w + ACC, w + VJ
        v_p, a_p = p * WS_COLS + VEL, p * WS_COLS + ACC
        body_transform(body_float, i, jtype, q, body_int[i, QIDX], ws, s)  # X_i = X_J X_T
        joint_velocity(jtype, body_float, j, v, vi, ws, vJ, False)         # vJ = S_i qd_i
        motion_to_child(ws, X_i, ws, v_p, ws, v_i)                         # v_i = X_i v_p
        add6(ws, vJ, ws, v_i)                                              #       + vJ
        motion_to_child(ws, X_i, ws, a_p, ws, a_i)                         # a_i = X_i a_p
        joint_velocity(jtype, body_float, j, a, vi, ws, a_i, True)         #       + S_i qdd_i
        add_motion_cross(ws, v_i, ws, vJ, ws, a_i)                         #       + v_i x vJ
    Y[:, :] = 0.0
    A = np.empty(60)
    projected = np.empty(6)
    for i in range(first, first + count):                        # each body's ten columns
        body_force_basis(ws, i * WS_COLS, A)
        col = 10 * (i - first)
        b = i
        while b > 0:                                             # up to the root:
            vb, jb = body_int[b, VIDX], b * BODY_FLOAT_COLS
            for k in range(10):                                  # tau_b += S_b^T F
                project_force(body_int[b, JTYPE], body_float, jb, A, 6 * k, projected, 0)
                for m in range(body_int[b, NVJ]):
                    Y[vb + m, col + k] += projected[m]
            p = body_int[b, PARENT]
            if p > 0:
                for k in range(10):                              # F = X_b^* F
                    force_to_parent(ws, b * WS_COLS + LI, A, 6 * k, A, 6 * k, False)
            b = p
    return OK
