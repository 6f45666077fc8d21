"""Forward kinematics: world placements of bodies and frames, body twists and accelerations,
centre of mass and energies.

Each body's pose, twist and acceleration come from its parent's, composing moving frames
(oMi = oM_p o liMi ; v_i = X_i v_p + S qd ; a_i = X_i a_p + S qdd + v_i x S qd).
"""
from ._jit import ARRAY3, MODEL_FLOAT, MODEL_INT, VECTOR, borrow, inline_kernel, kernel, signature
from .checks import BAD_SHAPE, OK, STATUS_STRIDE, configuration_status, state_status
from .joints import body_transform, joint_velocity
from .layout import (ACC, BODY_FLOAT_COLS, FRAME_BODY, FRAME_COLS, FRAME_PLACEMENT, GRAVITY,
                     INERTIA, JTYPE, LI, O, PARENT, QIDX, VEL, VIDX, VJ, WS_COLS)
from .spatial import compose, inertia_times_motion, motion_cross, motion_to_child


@kernel      # compiled once and called (not inlined): six kernels share it
def body_placements(body_int, model, ws, q):
    """oMi = oM_p o liMi (ws offset O), the world placement of every body (and LI = liMi)."""
    for i in range(1, body_int.shape[0]):
        body_transform(model, i, body_int[i, JTYPE], q, body_int[i, QIDX], ws)
        w = i * WS_COLS
        compose(ws, body_int[i, PARENT] * WS_COLS + O, ws, w + LI, ws, w + O)


@kernel
def body_velocities(body_int, model, ws, q, qd):
    """Placements and twists of every body (v_i = X_i v_p + S qd, in body coordinates)."""
    body_placements(body_int, model, ws, q)
    for k in range(6):
        ws[VEL + k] = 0.0
    for i in range(1, body_int.shape[0]):
        w = i * WS_COLS
        joint_velocity(body_int[i, JTYPE], model, i * BODY_FLOAT_COLS, qd, body_int[i, VIDX],
                       ws, w + VJ, False)
        motion_to_child(ws, w + LI, ws, body_int[i, PARENT] * WS_COLS + VEL, ws, w + VEL)
        for k in range(6):
            ws[w + VEL + k] += ws[w + VJ + k]


@kernel
def body_accelerations(body_int, model, ws, qdd):
    """Gravity-free spatial accelerations a_i = X_i a_p + S qdd + v_i x (S qd), after
    body_velocities. (The world row's LI entries are scratch.)"""
    for k in range(6):
        ws[ACC + k] = 0.0
    for i in range(1, body_int.shape[0]):
        w = i * WS_COLS
        motion_to_child(ws, w + LI, ws, body_int[i, PARENT] * WS_COLS + ACC, ws, w + ACC)
        joint_velocity(body_int[i, JTYPE], model, i * BODY_FLOAT_COLS, qdd, body_int[i, VIDX],
                       ws, w + ACC, True)
        motion_cross(ws, w + VEL, ws, w + VJ, ws, LI)
        for k in range(6):
            ws[w + ACC + k] += ws[LI + k]


@kernel
def body_motions(body_int, model, ws, q, qd, qdd):
    """Placements, twists and accelerations of every body; 0 or a status code."""
    status = state_status(body_int, q, qd, qdd)
    if status != OK:
        return status
    body_velocities(body_int, model, ws, q, qd)
    body_accelerations(body_int, model, ws, qdd)
    return OK


@kernel
def frame_placements(body_int, model, ws, q, out):
    """out[f] = 4x4 world pose of frame f (a link) at configuration q."""
    frames = body_int.shape[0] * BODY_FLOAT_COLS       # the frame rows follow the body rows
    if (out.shape[0] * FRAME_COLS != model.shape[0] - frames or out.shape[1] != 4
            or out.shape[2] != 4):
        return BAD_SHAPE
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, model, ws, q)
    for f in range(out.shape[0]):
        row = frames + f * FRAME_COLS
        body = int(model[row + FRAME_BODY])
        compose(ws, body * WS_COLS + O, model, row + FRAME_PLACEMENT, ws, LI)   # oMb o bMf
        for r in range(3):
            out[f, r, 0] = ws[LI + 3 * r]
            out[f, r, 1] = ws[LI + 3 * r + 1]
            out[f, r, 2] = ws[LI + 3 * r + 2]
            out[f, r, 3] = ws[LI + 9 + r]
            out[f, 3, r] = 0.0
        out[f, 3, 3] = 1.0
    return OK


@inline_kernel
def mass_and_moment(body_int, body_float, ws):
    """(mass, sum m c) of the moving bodies in the world frame, after body_placements."""
    mass, cx, cy, cz = 0.0, 0.0, 0.0, 0.0
    for i in range(1, body_int.shape[0]):
        y, x = i * BODY_FLOAT_COLS + INERTIA, i * WS_COLS + O
        m, hx, hy, hz = body_float[y], body_float[y + 1], body_float[y + 2], body_float[y + 3]
        mass += m          # m * (oR c + op) = oR h + m op
        cx += ws[x] * hx + ws[x + 1] * hy + ws[x + 2] * hz + m * ws[x + 9]
        cy += ws[x + 3] * hx + ws[x + 4] * hy + ws[x + 5] * hz + m * ws[x + 10]
        cz += ws[x + 6] * hx + ws[x + 7] * hy + ws[x + 8] * hz + m * ws[x + 11]
    return mass, cx, cy, cz


@kernel
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
def center_of_mass_batch(body_int, model, ws, Q, OUT):
    bi, bf, w, q, out = borrow(body_int), borrow(model), borrow(ws), borrow(Q), borrow(OUT)
    for n in range(q.shape[0]):
        status = center_of_mass(bi, bf, w, q[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def kinetic_energy(body_int, body_float, ws, q, qd, out):
    """out[0] = 1/2 sum_i v_i . (I_i v_i)."""
    status = state_status(body_int, q, qd, q[0:0])
    if status != OK:
        return status
    body_velocities(body_int, body_float, ws, q, qd)
    energy = 0.0
    for i in range(1, body_int.shape[0]):
        w = i * WS_COLS
        inertia_times_motion(body_float, i * BODY_FLOAT_COLS + INERTIA, ws, w + VEL, ws, LI)
        for k in range(6):
            energy += 0.5 * ws[w + VEL + k] * ws[LI + k]
    out[0] = energy
    return OK


@kernel
def kinetic_energy_batch(body_int, model, ws, Q, QD, OUT):
    bi, bf, w, q, qd, out = (borrow(body_int), borrow(model), borrow(ws), borrow(Q), borrow(QD),
                             borrow(OUT))
    for n in range(q.shape[0]):
        status = kinetic_energy(bi, bf, w, q[n], qd[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
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


@kernel
def potential_energy_batch(body_int, model, ws, Q, OUT):
    bi, bf, w, q, out = borrow(body_int), borrow(model), borrow(ws), borrow(Q), borrow(OUT)
    for n in range(q.shape[0]):
        status = potential_energy(bi, bf, w, q[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, VECTOR, VECTOR, VECTOR, VECTOR))
def body_motions_entry(body_int, model, ws, q, qd, qdd):
    """The compiled entry point: body_motions on borrowed views (see _jit.borrow)."""
    return body_motions(borrow(body_int), borrow(model), borrow(ws), borrow(q), borrow(qd), borrow(qdd))


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, VECTOR, VECTOR, ARRAY3))
def frame_placements_entry(body_int, model, ws, q, out):
    """The compiled entry point: frame_placements on borrowed views (see _jit.borrow)."""
    return frame_placements(borrow(body_int), borrow(model), borrow(ws), borrow(q), borrow(out))


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, VECTOR, VECTOR, VECTOR))
def center_of_mass_entry(body_int, body_float, ws, q, out):
    """The compiled entry point: center_of_mass on borrowed views (see _jit.borrow)."""
    return center_of_mass(borrow(body_int), borrow(body_float), borrow(ws), borrow(q), borrow(out))


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, VECTOR, VECTOR, VECTOR, VECTOR))
def kinetic_energy_entry(body_int, body_float, ws, q, qd, out):
    """The compiled entry point: kinetic_energy on borrowed views (see _jit.borrow)."""
    return kinetic_energy(borrow(body_int), borrow(body_float), borrow(ws), borrow(q), borrow(qd), borrow(out))


@kernel(signature=signature(MODEL_INT, MODEL_FLOAT, VECTOR, VECTOR, VECTOR))
def potential_energy_entry(body_int, body_float, ws, q, out):
    """The compiled entry point: potential_energy on borrowed views (see _jit.borrow)."""
    return potential_energy(borrow(body_int), borrow(body_float), borrow(ws), borrow(q), borrow(out))
