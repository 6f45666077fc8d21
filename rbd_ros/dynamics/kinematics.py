"""Forward kinematics: world placements of bodies and frames, body twists and accelerations,
frame velocities, accelerations and Jacobians, centre of mass (and its Jacobian) and energies.

Each body's pose, twist and acceleration come from its parent's, composing moving frames
(Tasora, kinematics of moving frames):
    oMi = oM_p o liMi ;  v_i = X_i v_p + S v_i ;  a_i = X_i a_p + S a_i + v_i x (S v_i)
A frame (a link) is fixed to a body: its motion is the body's, seen at the frame (actInv of the
frame's placement), then expressed in the requested reference (layout.REFERENCE_*).
"""
import numpy as np

from ._jit import inline_kernel, kernel
from .checks import BAD_SHAPE, OK, configuration_status, state_status
from .joints import body_transform, joint_velocity, motion_subspace_column
from .layout import (ACC, ARMATURE, BODY_FLOAT_COLS, COR_Y, FRAME_BODY, FRAME_COLS,
                     FRAME_PLACEMENT, GRAVITY, INERTIA, JTYPE, LI, NVJ, O, PARENT, QIDX,
                     REFERENCE_LOCAL, REFERENCE_WORLD, SCRATCH_MOTION, SCRATCH_MOTION_2,
                     SCRATCH_X, VEL, VIDX, VJ, WS_COLS)
from .rotations import rotation_quaternion
from .spatial import compose, inertia_times_motion, motion_cross, motion_to_child, motion_to_parent


@kernel      # compiled once and called (not inlined): several kernels share it
def body_placements(body_int, body_float, ws, q):
    """oMi = oM_p o liMi (ws column O), the world placement of every body (and LI = liMi)."""
    nb = body_int.shape[0]
    for i in range(1, nb):
        body_transform(body_float, i, body_int[i, JTYPE], q, body_int[i, QIDX], ws, nb * WS_COLS)
        w = i * WS_COLS
        compose(ws, body_int[i, PARENT] * WS_COLS + O, ws, w + LI, ws, w + O)


@kernel
def body_velocities(body_int, body_float, ws, q, v):
    """Placements and twists of every body (v_i = X_i v_p + S v_i, in body coordinates)."""
    body_placements(body_int, body_float, ws, q)
    for k in range(6):
        ws[VEL + k] = 0.0
    for i in range(1, body_int.shape[0]):
        w = i * WS_COLS
        joint_velocity(body_int[i, JTYPE], body_float, i * BODY_FLOAT_COLS, v, body_int[i, VIDX],
                       ws, w + VJ, False)
        motion_to_child(ws, w + LI, ws, body_int[i, PARENT] * WS_COLS + VEL, ws, w + VEL)
        for k in range(6):
            ws[w + VEL + k] += ws[w + VJ + k]


@kernel
def body_accelerations(body_int, body_float, ws, a):
    """Gravity-free spatial accelerations a_i = X_i a_p + S a_i + v_i x (S v_i), after
    body_velocities."""
    s = body_int.shape[0] * WS_COLS + SCRATCH_MOTION
    for k in range(6):
        ws[ACC + k] = 0.0
    for i in range(1, body_int.shape[0]):
        w = i * WS_COLS
        motion_to_child(ws, w + LI, ws, body_int[i, PARENT] * WS_COLS + ACC, ws, w + ACC)
        joint_velocity(body_int[i, JTYPE], body_float, i * BODY_FLOAT_COLS, a, body_int[i, VIDX],
                       ws, w + ACC, True)
        motion_cross(ws, w + VEL, ws, w + VJ, ws, s)
        for k in range(6):
            ws[w + ACC + k] += ws[s + k]


@inline_kernel
def frame_world_placement(body_int, body_float, ws, frame):
    """The frame's world placement oMf into the scratch row (SCRATCH_X), after body_placements;
    returns (the frame's body, the frame's row in body_float)."""
    nb = body_int.shape[0]
    row = nb * BODY_FLOAT_COLS + frame * FRAME_COLS
    body = int(body_float[row + FRAME_BODY])
    compose(ws, body * WS_COLS + O, body_float, row + FRAME_PLACEMENT, ws, nb * WS_COLS + SCRATCH_X)
    return body, row


@kernel
def frame_placements(body_int, body_float, ws, q, out):
    """out[f] = 4x4 world pose of frame f (a link) at configuration q."""
    nb = body_int.shape[0]
    frames = nb * BODY_FLOAT_COLS       # the frame rows follow the body rows
    if (out.shape[0] * FRAME_COLS != body_float.shape[0] - frames or out.shape[1] != 4
            or out.shape[2] != 4):
        return BAD_SHAPE
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    X = nb * WS_COLS + SCRATCH_X
    for f in range(out.shape[0]):
        frame_world_placement(body_int, body_float, ws, f)     # oMb o bMf, at X
        for r in range(3):
            out[f, r, 0] = ws[X + 3 * r]
            out[f, r, 1] = ws[X + 3 * r + 1]
            out[f, r, 2] = ws[X + 3 * r + 2]
            out[f, r, 3] = ws[X + 9 + r]
            out[f, 3, r] = 0.0
        out[f, 3, 3] = 1.0
    return OK


@kernel
def relative_transforms(poses, parents, children, out, at) -> bool:
    """The pose of frame children[k] in frame parents[k], from world poses (``poses``: 4x4
    each, frame_placements'), as [x, y, z, qx, qy, qz, qw] into out[at[k]:at[k] + 7] (any
    flat float64 array: frames_node's is the bytes of its /tf message). parent_T_child =
    oT_parent^-1 oT_child: R = Rp^T Rc, p = Rp^T (pc - pp); the quaternion as
    rotations.matrix_to_quaternion. Returns whether every value written is finite."""
    finite = True
    for k in range(parents.shape[0]):
        P, C = poses[parents[k]], poses[children[k]]
        d0, d1, d2 = C[0, 3] - P[0, 3], C[1, 3] - P[1, 3], C[2, 3] - P[2, 3]
        i = at[k]
        for r in range(3):
            out[i + r] = P[0, r] * d0 + P[1, r] * d1 + P[2, r] * d2
        out[i + 3], out[i + 4], out[i + 5], out[i + 6] = rotation_quaternion(
            _column_dot(P, C, 0, 0), _column_dot(P, C, 0, 1), _column_dot(P, C, 0, 2),
            _column_dot(P, C, 1, 0), _column_dot(P, C, 1, 1), _column_dot(P, C, 1, 2),
            _column_dot(P, C, 2, 0), _column_dot(P, C, 2, 1), _column_dot(P, C, 2, 2))
        for j in range(i, i + 7):
            finite = finite and np.isfinite(out[j])
    return finite


@inline_kernel
def _column_dot(P, C, r, c):
    """(Rp^T Rc)[r, c]: column r of P's rotation dotted with column c of C's."""
    return P[0, r] * C[0, c] + P[1, r] * C[1, c] + P[2, r] * C[2, c]


@inline_kernel
def express_motion(ws, X, m, k, reference):
    """m[k:k+6], a motion in the frame's own axes about its origin, in ``reference``; X is
    the frame's world placement in ws."""
    if reference == REFERENCE_LOCAL:
        return
    lx, ly, lz, ax, ay, az = m[k], m[k + 1], m[k + 2], m[k + 3], m[k + 4], m[k + 5]
    for r in range(3):     # world axes
        m[k + r] = ws[X + 3 * r] * lx + ws[X + 3 * r + 1] * ly + ws[X + 3 * r + 2] * lz
        m[k + 3 + r] = ws[X + 3 * r] * ax + ws[X + 3 * r + 1] * ay + ws[X + 3 * r + 2] * az
    if reference == REFERENCE_WORLD:   # about the world origin: lin += p x ang
        px, py, pz = ws[X + 9], ws[X + 10], ws[X + 11]
        wx, wy, wz = m[k + 3], m[k + 4], m[k + 5]
        m[k] += py * wz - pz * wy
        m[k + 1] += pz * wx - px * wz
        m[k + 2] += px * wy - py * wx


@kernel
def frame_motion(body_int, body_float, ws, q, v, a, frame, reference, out):
    """out[0:6] = the frame's twist [v; w], out[6:12] its classical acceleration [a; alpha],
    both in ``reference``. Classical: the spatial acceleration plus w x v (for 'world', of the
    body point at the world origin, as Pinocchio's getFrameClassicalAcceleration)."""
    status = state_status(body_int, q, v, a)
    if status != OK:
        return status
    body_velocities(body_int, body_float, ws, q, v)
    body_accelerations(body_int, body_float, ws, a)
    body, row = frame_world_placement(body_int, body_float, ws, frame)
    X = body_int.shape[0] * WS_COLS + SCRATCH_X
    motion_to_child(body_float, row + FRAME_PLACEMENT, ws, body * WS_COLS + VEL, out, 0)
    motion_to_child(body_float, row + FRAME_PLACEMENT, ws, body * WS_COLS + ACC, out, 6)
    express_motion(ws, X, out, 0, reference)
    express_motion(ws, X, out, 6, reference)
    vx, vy, vz, wx, wy, wz = out[0], out[1], out[2], out[3], out[4], out[5]
    out[6] += wy * vz - wz * vy
    out[7] += wz * vx - wx * vz
    out[8] += wx * vy - wy * vx
    return OK


@kernel
def frame_jacobian(body_int, body_float, ws, q, frame, reference, J):
    """J (6 x nv) with J v = the frame's twist in ``reference``: the world columns of every
    joint above the frame (oMi S, about the world origin), moved to the frame's origin and
    axes as the reference asks."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    body, _ = frame_world_placement(body_int, body_float, ws, frame)
    s = body_int.shape[0] * WS_COLS
    X, S, col = s + SCRATCH_X, s + SCRATCH_MOTION, s + SCRATCH_MOTION_2
    J[:, :] = 0.0
    b = body
    while b > 0:
        vi = body_int[b, VIDX]
        for k in range(body_int[b, NVJ]):
            motion_subspace_column(body_int[b, JTYPE], body_float, b * BODY_FLOAT_COLS, k, ws, S)
            motion_to_parent(ws, b * WS_COLS + O, ws, S, ws, col)    # world column
            if reference != REFERENCE_WORLD:                          # about the frame origin
                px, py, pz = ws[X + 9], ws[X + 10], ws[X + 11]
                wx, wy, wz = ws[col + 3], ws[col + 4], ws[col + 5]
                ws[col] -= py * wz - pz * wy
                ws[col + 1] -= pz * wx - px * wz
                ws[col + 2] -= px * wy - py * wx
            if reference == REFERENCE_LOCAL:                          # in the frame's axes
                for r in range(6):
                    J[r, vi + k] = 0.0
                for r in range(3):
                    for c in range(3):
                        J[r, vi + k] += ws[X + 3 * c + r] * ws[col + c]
                        J[3 + r, vi + k] += ws[X + 3 * c + r] * ws[col + 3 + c]
            else:
                for r in range(6):
                    J[r, vi + k] = ws[col + r]
        b = body_int[b, PARENT]
    return OK


@inline_kernel
def body_mass_and_moment(body_float, ws, i):
    """(m, m c) of body i, c its centre of mass in the world frame, after body_placements."""
    y, x = i * BODY_FLOAT_COLS + INERTIA, i * WS_COLS + O
    m, hx, hy, hz = body_float[y], body_float[y + 1], body_float[y + 2], body_float[y + 3]
    return (m, ws[x] * hx + ws[x + 1] * hy + ws[x + 2] * hz + m * ws[x + 9],   # m (oR c + op)
            ws[x + 3] * hx + ws[x + 4] * hy + ws[x + 5] * hz + m * ws[x + 10],  # = oR h + m op
            ws[x + 6] * hx + ws[x + 7] * hy + ws[x + 8] * hz + m * ws[x + 11])


@inline_kernel
def mass_and_moment(body_int, body_float, ws):
    """(mass, sum m c) of the moving bodies in the world frame, after body_placements."""
    mass, cx, cy, cz = 0.0, 0.0, 0.0, 0.0
    for i in range(1, body_int.shape[0]):
        m, hx, hy, hz = body_mass_and_moment(body_float, ws, i)
        mass += m
        cx += hx
        cy += hy
        cz += hz
    return mass, cx, cy, cz


@inline_kernel
def center_of(mass, cx, cy, cz):
    """The centre of mass from (mass, sum m c); the origin when nothing has mass."""
    if mass > 0.0:
        return cx / mass, cy / mass, cz / mass
    return 0.0, 0.0, 0.0


# The kernels below open alike (check q, place the bodies, sum): kept, a helper cannot return
# a status for its caller, and each reads as its formula.
@kernel
def center_of_mass(body_int, body_float, ws, q, out):
    """out[0:3] = world centre of mass of the moving bodies, out[3] = their mass."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    mass, cx, cy, cz = mass_and_moment(body_int, body_float, ws)
    out[3] = mass
    out[0], out[1], out[2] = center_of(mass, cx, cy, cz)
    return OK


@kernel
def center_of_mass_jacobian(body_int, body_float, ws, q, J):
    """J (3 x nv) with J v = the velocity of the centre of mass (Pinocchio's
    jacobianCenterOfMass). A joint moves its subtree rigidly: with its world column
    (v_O, w) (oMi S, about the world origin), the subtree's points move at v_O + w x c, so
    its column is (m_sub v_O + w x h_sub) / m, h_sub = sum m c over the subtree (world)."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    nb = body_int.shape[0]
    for i in range(1, nb):             # (m, m c) in world coordinates: COR_Y's first four
        w = i * WS_COLS + COR_Y
        ws[w], ws[w + 1], ws[w + 2], ws[w + 3] = body_mass_and_moment(body_float, ws, i)
    mass = 0.0
    for i in range(nb - 1, 0, -1):     # subtree sums; the roots' subtrees make the whole
        w, p = i * WS_COLS + COR_Y, body_int[i, PARENT]
        if p > 0:
            for k in range(4):
                ws[p * WS_COLS + COR_Y + k] += ws[w + k]
        else:
            mass += ws[w]
    J[:, :] = 0.0
    if mass <= 0.0:
        return OK
    s = nb * WS_COLS
    S, col = s + SCRATCH_MOTION, s + SCRATCH_MOTION_2
    for i in range(1, nb):
        w = i * WS_COLS
        m, hx, hy, hz = ws[w + COR_Y], ws[w + COR_Y + 1], ws[w + COR_Y + 2], ws[w + COR_Y + 3]
        vi = body_int[i, VIDX]
        for k in range(body_int[i, NVJ]):
            motion_subspace_column(body_int[i, JTYPE], body_float, i * BODY_FLOAT_COLS, k, ws, S)
            motion_to_parent(ws, w + O, ws, S, ws, col)                  # world column
            wx, wy, wz = ws[col + 3], ws[col + 4], ws[col + 5]
            J[0, vi + k] = (m * ws[col] + wy * hz - wz * hy) / mass
            J[1, vi + k] = (m * ws[col + 1] + wz * hx - wx * hz) / mass
            J[2, vi + k] = (m * ws[col + 2] + wx * hy - wy * hx) / mass
    return OK


@kernel
def kinetic_energy(body_int, body_float, ws, q, v, out):
    """out[0] = 1/2 v^T M(q) v = 1/2 sum_i v_i . (I_i v_i) + 1/2 sum armature v^2."""
    status = state_status(body_int, q, v, v)
    if status != OK:
        return status
    body_velocities(body_int, body_float, ws, q, v)
    momentum = body_int.shape[0] * WS_COLS + SCRATCH_MOTION
    energy = 0.0
    for i in range(1, body_int.shape[0]):
        w, j, vi = i * WS_COLS, i * BODY_FLOAT_COLS, body_int[i, VIDX]
        inertia_times_motion(body_float, j + INERTIA, ws, w + VEL, ws, momentum)
        for k in range(6):
            energy += 0.5 * ws[w + VEL + k] * ws[momentum + k]
        for k in range(body_int[i, NVJ]):
            energy += 0.5 * body_float[j + ARMATURE + k] * v[vi + k] * v[vi + k]
    out[0] = energy
    return OK


@kernel
def potential_energy(body_int, body_float, ws, q, out):
    """out[0] = -sum_i m_i g . c_i (world centres of mass of the moving bodies)."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    _, cx, cy, cz = mass_and_moment(body_int, body_float, ws)
    out[0] = -(body_float[GRAVITY] * cx + body_float[GRAVITY + 1] * cy
               + body_float[GRAVITY + 2] * cz)
    return OK
