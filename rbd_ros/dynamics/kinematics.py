"""Forward kinematics: world placements of bodies and frames, body twists and accelerations,
centre of mass and energies.

Each body's pose, twist and acceleration come from its parent's, composing moving frames
(oMi = oM_p o liMi ; v_i = X_i v_p + S qd ; a_i = X_i a_p + S qdd + v_i x S qd).
"""
from ._jit import kernel
from .checks import OK, STATUS_STRIDE, configuration_status, state_status
from .joints import add_joint_velocity, body_transform, joint_velocity
from .layout import (ACC, GRAVITY, INERTIA, JTYPE, LI_P, LI_R, O_P, O_R, PARENT, QIDX, VEL, VIDX,
                     VJ)
from .spatial import compose, inertia_times_motion, motion_cross, motion_to_child


@kernel
def body_placements(body_int, body_float, ws, q):
    """ws[i, O_*] = oMi, the world placement of every body (and ws[i, LI_*] = liMi)."""
    for i in range(1, body_int.shape[0]):
        p = body_int[i, PARENT]
        body_transform(body_float, i, body_int[i, JTYPE], q, body_int[i, QIDX], ws)
        compose(ws[p, O_R:O_R + 9], ws[p, O_P:O_P + 3], ws[i, LI_R:LI_R + 9],
                ws[i, LI_P:LI_P + 3], ws[i, O_R:O_R + 9], ws[i, O_P:O_P + 3])


@kernel
def body_velocities(body_int, body_float, ws, q, qd):
    """Placements and twists of every body (v_i = X_i v_p + S qd, in body coordinates)."""
    body_placements(body_int, body_float, ws, q)
    ws[0, VEL:VEL + 6] = 0.0
    for i in range(1, body_int.shape[0]):
        w = ws[i]
        v, vJ = w[VEL:VEL + 6], w[VJ:VJ + 6]
        joint_velocity(body_int[i, JTYPE], body_float[i], qd, body_int[i, VIDX], vJ)
        motion_to_child(w[LI_R:LI_R + 9], w[LI_P:LI_P + 3], ws[body_int[i, PARENT], VEL:VEL + 6], v)
        for k in range(6):
            v[k] += vJ[k]


@kernel
def body_accelerations(body_int, body_float, ws, qdd):
    """Gravity-free spatial accelerations a_i = X_i a_p + S qdd + v_i x (S qd), after
    body_velocities."""
    ws[0, ACC:ACC + 6] = 0.0
    for i in range(1, body_int.shape[0]):
        w = ws[i]
        a = w[ACC:ACC + 6]
        motion_to_child(w[LI_R:LI_R + 9], w[LI_P:LI_P + 3], ws[body_int[i, PARENT], ACC:ACC + 6], a)
        add_joint_velocity(body_int[i, JTYPE], body_float[i], qdd, body_int[i, VIDX], a)
        motion_cross(w[VEL:VEL + 6], w[VJ:VJ + 6], ws[0, 0:6])
        for k in range(6):
            a[k] += ws[0, k]


@kernel
def body_motions(body_int, body_float, ws, q, qd, qdd):
    """Placements, twists and accelerations of every body; 0 or a status code."""
    status = state_status(body_int, q, qd, qdd)
    if status != OK:
        return status
    body_velocities(body_int, body_float, ws, q, qd)
    body_accelerations(body_int, body_float, ws, qdd)
    return OK


@kernel
def frame_placements(body_int, body_float, ws, frame_body, frame_placement, q, out):
    """out[f] = 4x4 world pose of frame f (a link) at configuration q."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    for f in range(frame_body.shape[0]):
        b = frame_body[f]
        E, r, P = ws[b, O_R:O_R + 9], ws[b, O_P:O_P + 3], frame_placement[f]
        T = out[f]
        for i in range(3):
            for j in range(3):
                T[i, j] = E[3 * i] * P[j] + E[3 * i + 1] * P[3 + j] + E[3 * i + 2] * P[6 + j]
            T[i, 3] = E[3 * i] * P[9] + E[3 * i + 1] * P[10] + E[3 * i + 2] * P[11] + r[i]
            T[3, i] = 0.0
        T[3, 3] = 1.0
    return OK


@kernel
def center_of_mass(body_int, body_float, ws, q, out):
    """out[0:3] = world centre of mass of the moving bodies, out[3] = their mass."""
    status = configuration_status(body_int, q)
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    mass, cx, cy, cz = 0.0, 0.0, 0.0, 0.0
    for i in range(1, body_int.shape[0]):
        inertia, E, r = body_float[i, INERTIA:INERTIA + 4], ws[i, O_R:O_R + 9], ws[i, O_P:O_P + 3]
        m, hx, hy, hz = inertia[0], inertia[1], inertia[2], inertia[3]
        mass += m          # sum of m * (oR c + op) = oR h + m op
        cx += E[0] * hx + E[1] * hy + E[2] * hz + m * r[0]
        cy += E[3] * hx + E[4] * hy + E[5] * hz + m * r[1]
        cz += E[6] * hx + E[7] * hy + E[8] * hz + m * r[2]
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


@kernel
def kinetic_energy(body_int, body_float, ws, q, qd, out):
    """out[0] = 1/2 sum_i v_i . (I_i v_i)."""
    status = state_status(body_int, q, qd, q[0:0])
    if status != OK:
        return status
    body_velocities(body_int, body_float, ws, q, qd)
    energy = 0.0
    momentum = ws[0, 0:6]
    for i in range(1, body_int.shape[0]):
        v = ws[i, VEL:VEL + 6]
        inertia_times_motion(body_float[i, INERTIA:INERTIA + 10], v, momentum)
        for k in range(6):
            energy += 0.5 * v[k] * momentum[k]
    out[0] = energy
    return OK


@kernel
def kinetic_energy_batch(body_int, body_float, ws, Q, QD, OUT):
    for n in range(Q.shape[0]):
        status = kinetic_energy(body_int, body_float, ws, Q[n], QD[n], OUT[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def potential_energy(body_int, body_float, ws, q, out):
    """out[0] = -sum_i m_i g . c_i (world centres of mass of the moving bodies)."""
    status = center_of_mass(body_int, body_float, ws, q, out[1:5])
    if status != OK:
        return status
    g = body_float[0, GRAVITY:GRAVITY + 3]
    out[0] = -out[4] * (g[0] * out[1] + g[1] * out[2] + g[2] * out[3])
    return OK


@kernel
def potential_energy_batch(body_int, body_float, ws, Q, OUT):
    for n in range(Q.shape[0]):
        status = potential_energy(body_int, body_float, ws, Q[n], OUT[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK
