"""Centroidal momentum h_G = [m v_G; L_G] and the centroidal momentum matrix A_G (Orin, Goswami
and Lee, Centroidal dynamics of a humanoid robot, 2013; Pinocchio's computeCentroidalMomentum
and ccrba): the robot's total momentum, linear then angular about its centre of mass, in world
axes, with h_G = A_G v.

    h_O = sum_i oMi^* (I_i v_i)               (each body's momentum, moved to the world origin)
    A_G[:, j] = Ic_j J_j                       (Ic_j: the world inertia of joint j's subtree;
                                                J_j: its world column oMi S, about the origin)
then both move from the world origin to the centre of mass c: the angular part less c x linear.
The armature (rotor inertia) is not a momentum of the bodies and is not counted, as in
Pinocchio.
"""
from ._jit import kernel
from .checks import OK, configuration_status, state_status
from .joints import motion_subspace_column
from .kinematics import body_placements, body_velocities, center_of, mass_and_moment
from .layout import (BODY_FLOAT_COLS, COR_Y, INERTIA, JTYPE, NVJ, O, PARENT, SCRATCH_FORCE,
                     SCRATCH_MOTION, SCRATCH_MOTION_2, VEL, VIDX, WS_COLS)
from .spatial import add_inertia_to_parent, force_to_parent, inertia_times_motion, motion_to_parent


@kernel
def centroidal_momentum(body_int, body_float, ws, q, v, out):
    """out[0:6] = h_G = [m v_G; L_G] at (q, v), world axes, about the centre of mass."""
    status = state_status(body_int, q, v, v)
    if status != OK:
        return status
    body_velocities(body_int, body_float, ws, q, v)
    nb = body_int.shape[0]
    s = nb * WS_COLS
    body, h = s + SCRATCH_MOTION, s + SCRATCH_FORCE
    for k in range(6):
        ws[h + k] = 0.0
    for i in range(1, nb):
        w = i * WS_COLS
        inertia_times_motion(body_float, i * BODY_FLOAT_COLS + INERTIA, ws, w + VEL, ws, body)
        force_to_parent(ws, w + O, ws, body, ws, h, True)        # h_O += oMi^* (I_i v_i)
    mass, mx, my, mz = mass_and_moment(body_int, body_float, ws)
    cx, cy, cz = center_of(mass, mx, my, mz)
    px, py, pz = ws[h], ws[h + 1], ws[h + 2]
    out[0], out[1], out[2] = px, py, pz
    out[3] = ws[h + 3] - (cy * pz - cz * py)                      # L_G = L_O - c x p
    out[4] = ws[h + 4] - (cz * px - cx * pz)
    out[5] = ws[h + 5] - (cx * py - cy * px)
    return OK


@kernel
def centroidal_momentum_matrix(body_int, body_float, ws, q, A):
    """A (6 x nv) = A_G(q), with A_G v = h_G (Pinocchio's ccrba Ag)."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    nb = body_int.shape[0]
    for i in range(1, nb):                                        # oY_i = oMi^* Y_i
        w = i * WS_COLS
        for k in range(10):
            ws[w + COR_Y + k] = 0.0
        add_inertia_to_parent(ws, w + O, body_float, i * BODY_FLOAT_COLS + INERTIA, ws, w + COR_Y)
    for i in range(nb - 1, 0, -1):                                # composite: Ic_p += Ic_i
        p = body_int[i, PARENT]
        if p > 0:
            for k in range(10):
                ws[p * WS_COLS + COR_Y + k] += ws[i * WS_COLS + COR_Y + k]
    mass, mx, my, mz = mass_and_moment(body_int, body_float, ws)
    cx, cy, cz = center_of(mass, mx, my, mz)
    s = nb * WS_COLS
    S, J, F = s + SCRATCH_MOTION, s + SCRATCH_MOTION_2, s + SCRATCH_FORCE
    A[:, :] = 0.0
    for i in range(1, nb):
        w, vi = i * WS_COLS, body_int[i, VIDX]
        for k in range(body_int[i, NVJ]):
            motion_subspace_column(body_int[i, JTYPE], body_float, i * BODY_FLOAT_COLS, k, ws, S)
            motion_to_parent(ws, w + O, ws, S, ws, J)                 # J = oMi S
            inertia_times_motion(ws, w + COR_Y, ws, J, ws, F)         # Ic J, about the origin
            fx, fy, fz = ws[F], ws[F + 1], ws[F + 2]
            A[0, vi + k], A[1, vi + k], A[2, vi + k] = fx, fy, fz
            A[3, vi + k] = ws[F + 3] - (cy * fz - cz * fy)            # about the centre of mass
            A[4, vi + k] = ws[F + 4] - (cz * fx - cx * fz)
            A[5, vi + k] = ws[F + 5] - (cx * fy - cy * fx)
    return OK
