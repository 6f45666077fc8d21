"""Forward kinematics: world placements of bodies and frames, body twists and accelerations,
centre of mass and energies.

Each body's pose, twist and acceleration come from its parent's, composing moving frames
(oMi = oM_p o liMi ; v_i = X_i v_p + S qd ; a_i = X_i a_p + S qdd + v_i x S qd).
"""
from ._jit import (ARRAY3, MATRIX, MODEL_FLOAT, MODEL_INDEX, MODEL_INT, VECTOR, inline_kernel,
                   kernel, signature)
from .checks import OK, STATUS_STRIDE, configuration_status, state_status
from .joints import body_transform, joint_velocity
from .layout import ACC, GRAVITY, INERTIA, JTYPE, LI, O, PARENT, QIDX, VEL, VIDX, VJ
from .spatial import compose, inertia_times_motion, motion_cross, motion_to_child


@inline_kernel
def body_placements(body_int, body_float, ws, q):
    """ws[i, O] = oMi = oM_p o liMi, the world placement of every body (and ws[i, LI])."""
    for i in range(1, body_int.shape[0]):
        body_transform(body_float, i, body_int[i, JTYPE], q, body_int[i, QIDX], ws)
        compose(ws[body_int[i, PARENT]], O, ws[i], LI, ws[i], O)


@inline_kernel
def body_velocities(body_int, body_float, ws, q, qd):
    """Placements and twists of every body (v_i = X_i v_p + S qd, in body coordinates)."""
    body_placements(body_int, body_float, ws, q)
    for k in range(6):
        ws[0, VEL + k] = 0.0
    for i in range(1, body_int.shape[0]):
        w = ws[i]
        joint_velocity(body_int[i, JTYPE], body_float[i], qd, body_int[i, VIDX], w, VJ, False)
        motion_to_child(w, LI, ws[body_int[i, PARENT]], VEL, w, VEL)
        for k in range(6):
            w[VEL + k] += w[VJ + k]


@inline_kernel
def body_accelerations(body_int, body_float, ws, qdd):
    """Gravity-free spatial accelerations a_i = X_i a_p + S qdd + v_i x (S qd), after
    body_velocities. (The world row's LI entries are scratch.)"""
    for k in range(6):
        ws[0, ACC + k] = 0.0
    for i in range(1, body_int.shape[0]):
        w = ws[i]
        motion_to_child(w, LI, ws[body_int[i, PARENT]], ACC, w, ACC)
        joint_velocity(body_int[i, JTYPE], body_float[i], qdd, body_int[i, VIDX], w, ACC, True)
        motion_cross(w, VEL, w, VJ, ws[0], LI)
        for k in range(6):
            w[ACC + k] += ws[0, LI + k]


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, MATRIX, VECTOR, VECTOR, VECTOR))
def body_motions(body_int, body_float, ws, q, qd, qdd):
    """Placements, twists and accelerations of every body; 0 or a status code."""
    status = state_status(body_int, q, qd, qdd)
    if status != OK:
        return status
    body_velocities(body_int, body_float, ws, q, qd)
    body_accelerations(body_int, body_float, ws, qdd)
    return OK


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, MATRIX, MODEL_INDEX, MODEL_FLOAT, VECTOR,
                            ARRAY3))
def frame_placements(body_int, body_float, ws, frame_body, frame_placement, q, out):
    """out[f] = 4x4 world pose of frame f (a link) at configuration q."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    world = ws[0]
    for f in range(frame_body.shape[0]):
        compose(ws[frame_body[f]], O, frame_placement[f], 0, world, LI)   # oMf = oMb o bMf
        T = out[f]
        for r in range(3):
            T[r, 0] = world[LI + 3 * r]
            T[r, 1] = world[LI + 3 * r + 1]
            T[r, 2] = world[LI + 3 * r + 2]
            T[r, 3] = world[LI + 9 + r]
            T[3, r] = 0.0
        T[3, 3] = 1.0
    return OK


@inline_kernel
def mass_and_moment(body_int, body_float, ws):
    """(mass, sum m c) of the moving bodies in the world frame, after body_placements."""
    mass, cx, cy, cz = 0.0, 0.0, 0.0, 0.0
    for i in range(1, body_int.shape[0]):
        Y, X = body_float[i], ws[i]
        m, hx, hy, hz = Y[INERTIA], Y[INERTIA + 1], Y[INERTIA + 2], Y[INERTIA + 3]
        mass += m          # m * (oR c + op) = oR h + m op
        cx += X[O] * hx + X[O + 1] * hy + X[O + 2] * hz + m * X[O + 9]
        cy += X[O + 3] * hx + X[O + 4] * hy + X[O + 5] * hz + m * X[O + 10]
        cz += X[O + 6] * hx + X[O + 7] * hy + X[O + 8] * hz + m * X[O + 11]
    return mass, cx, cy, cz


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, MATRIX, VECTOR, VECTOR))
def center_of_mass(body_int, body_float, ws, q, out):
    """out[0:3] = world centre of mass of the moving bodies, out[3] = their mass."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    mass, cx, cy, cz = mass_and_moment(body_int, body_float, ws)
    out[3] = mass
    if mass > 0.0:
        out[0], out[1], out[2] = cx / mass, cy / mass, cz / mass
    else:
        out[0], out[1], out[2] = 0.0, 0.0, 0.0
    return OK


@kernel
def center_of_mass_batch(body_int, body_float, ws, Q, OUT):
    for n in range(Q.shape[0]):
        status = center_of_mass(body_int, body_float, ws, Q[n], OUT[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, MATRIX, VECTOR, VECTOR, VECTOR))
def kinetic_energy(body_int, body_float, ws, q, qd, out):
    """out[0] = 1/2 sum_i v_i . (I_i v_i)."""
    status = state_status(body_int, q, qd, q[0:0])
    if status != OK:
        return status
    body_velocities(body_int, body_float, ws, q, qd)
    energy = 0.0
    for i in range(1, body_int.shape[0]):
        inertia_times_motion(body_float[i], INERTIA, ws[i], VEL, ws[0], LI)   # momentum
        for k in range(6):
            energy += 0.5 * ws[i, VEL + k] * ws[0, LI + k]
    out[0] = energy
    return OK


@kernel
def kinetic_energy_batch(body_int, body_float, ws, Q, QD, OUT):
    for n in range(Q.shape[0]):
        status = kinetic_energy(body_int, body_float, ws, Q[n], QD[n], OUT[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, MATRIX, VECTOR, VECTOR))
def potential_energy(body_int, body_float, ws, q, out):
    """out[0] = -sum_i m_i g . c_i (world centres of mass of the moving bodies)."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    _, cx, cy, cz = mass_and_moment(body_int, body_float, ws)
    g = body_float[0]
    out[0] = -(g[GRAVITY] * cx + g[GRAVITY + 1] * cy + g[GRAVITY + 2] * cz)
    return OK


@kernel
def potential_energy_batch(body_int, body_float, ws, Q, OUT):
    for n in range(Q.shape[0]):
        status = potential_energy(body_int, body_float, ws, Q[n], OUT[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK
