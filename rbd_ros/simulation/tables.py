"""The simulator's constant tables (si, sf) and its workspace, built once per model: what
layout.py names, filled from the model, the options and the contact points. ROS-free, numpy."""
from __future__ import annotations

import numpy as np

from . import layout as L
from .contact import ground_frame


def build(model, options, points, factor_parent):
    """(si, sf, work, iwork): the tables of ``model`` under ``options`` (SimOptions) with the
    contact candidates ``points`` (contact.Candidate, grouped by body) and the parent array
    ``factor_parent`` (nv) that W and the solver's Hessian are factored over."""
    o = options
    nv, nq = model.nv, model.nq
    rows = model.single_dof_joints()
    row_v = np.array([j.v_index for j in rows], dtype=np.int64)
    row_q = np.array([j.q_index for j in rows], dtype=np.int64)
    mimic = model._mimic_rows
    bodies = body_groups(points)
    loop_rows = model.constraint_rows
    maxrows = 2 * len(rows) + 3 * len(points) + loop_rows      # (a loop's rows: one each)
    si_arrays = [('ROWS_V_AT', row_v), ('ROWS_Q_AT', row_q),
                 ('POINT_BODY_AT', [c.body for c in points]),
                 ('POINT_KIND_AT', [c.kind for c in points]),
                 ('POINT_K_AT', [c.quarter for c in points]),
                 ('Q_FULL_AT', model.q_full_index),
                 ('MIMIC_AT', [x for m in mimic for x in m[:4]]),
                 ('FACTOR_PARENT_AT', factor_parent),
                 ('BODY_POINTS_AT', [x for b in bodies for x in b[:3]])]
    n, t1, t2 = ground_frame(o.ground_normal)
    sf_scalars = np.zeros(L.SF_LEN)
    sf_scalars[L.DT] = o.dt
    sf_scalars[L.BOUND] = o.divergence_bound
    sf_scalars[L.LIMIT_K], sf_scalars[L.LIMIT_C] = o.limit_stiffness, o.limit_damping
    sf_scalars[L.CONTACT_K], sf_scalars[L.CONTACT_C] = o.contact_stiffness, o.contact_damping
    sf_scalars[L.MU] = o.friction_coefficient
    sf_scalars[L.NORMAL:L.NORMAL + 3] = n
    sf_scalars[L.HEIGHT] = o.ground_height
    sf_scalars[L.T1:L.T1 + 3], sf_scalars[L.T2:L.T2 + 3] = t1, t2
    sf_scalars[L.TOLERANCE] = o.solver_tolerance
    limits = np.column_stack([model.lower_limits[row_q], model.upper_limits[row_q],
                              model.velocity_limits[row_v], model.friction[row_v]])
    point_rows = np.array([np.concatenate([c.center, [c.radius], c.axis, c.u])
                           for c in points]).reshape(-1, L.POINT_COLS)
    sf_arrays = [('ROW_LIMITS_AT', limits),
                 ('PER_V_AT', np.concatenate([model.damping, model.effort_limits])),
                 ('POINTS_AT', point_rows),
                 ('MIMIC_FLOAT_AT', [x for m in mimic for x in m[4:]]),
                 ('G_AT', model.mimic_map if model.has_mimic else np.zeros(0)),
                 ('BODY_REACH_AT', [b[3] for b in bodies])]
    si = np.zeros(L.SI_LEN, dtype=np.int64)
    si[[L.NV, L.NQ, L.NV_INT, L.NQ_INT]] = nv, nq, model.nv_full, model.nq_full
    si[L.DIRECT] = int(model.direct)
    si[L.RK4] = int(o.integrator == 'rk4')
    si[L.DAMPING], si[L.FRICTION] = int(o.damping), int(o.friction)
    si[L.EFFORT_LIMITS], si[L.VELOCITY_LIMITS] = int(o.effort_limits), int(o.velocity_limits)
    si[L.POSITION_LIMITS] = ('constraint', 'spring', 'off').index(o.position_limits)
    si[L.NROWS], si[L.NPOINTS] = len(rows), len(points)
    si[L.GROUND] = int(model.floating_base if o.ground is None else bool(o.ground))
    si[L.ITERATIONS], si[L.NMIMIC] = o.solver_iterations, len(mimic)
    si[L.FLOATING] = int(model.floating_base)
    si[L.MAXROWS] = maxrows
    si[L.NBODY_POINTS] = len(bodies)
    si[L.NLOOP_ROWS] = loop_rows
    si_parts, sf_parts = [si], [sf_scalars]
    at = L.SI_LEN
    for slot, values in si_arrays:
        values = np.asarray(values, dtype=np.int64).ravel()
        si[getattr(L, slot)] = at
        si_parts.append(values)
        at += len(values)
    at = L.SF_LEN
    for slot, values in sf_arrays:
        values = np.asarray(values, dtype=float).ravel()
        si[getattr(L, slot)] = at
        sf_parts.append(values)
        at += len(values)
    floats, ints = workspace(si, nv, nq, model.nv_full, model.nq_full, maxrows, len(points),
                             loop_rows)
    return (np.concatenate(si_parts), np.concatenate(sf_parts), np.zeros(floats),
            np.zeros(ints, dtype=np.int64))


def workspace(si, nv, nq, nv_int, nq_int, maxrows, npoints, loop_rows=0):
    """Writes where each workspace array starts into si's W_* and I_* slots; returns the float
    and int workspace sizes."""
    sizes = [('W_MIMIC', 2 * nq_int + 3 * nv_int + nv_int * nv_int),
             ('W_STAGES', 8 * nv + nq),
             ('W_Q_FREE', nq), ('W_V_FREE', nv), ('W_Q_NEW', nq), ('W_V_NEW', nv),
             ('W_TAU', nv), ('W_DV', nv),
             ('W_M', nv * nv), ('W_W', nv * nv), ('W_H', nv * nv), ('W_MV', nv),
             ('W_SOLVER', 4 * nv),
             ('W_J', maxrows * nv), ('W_ROWS', L.ROW_FLOATS * maxrows),
             ('W_POINT', 4 + 3 * nv_int),
             ('W_DV_LAST', nv), ('W_JOINT_IMPULSE', nv), ('W_POINT_IMPULSE', 3 * npoints),
             ('W_SPEED_PASS', 4 * nv),
             ('W_LOOP_PHI', loop_rows), ('W_LOOP_K', loop_rows * nv),
             ('W_LOOP_IMPULSE', loop_rows), ('W_CARRIED', nv), ('W_TAU_SMOOTH', nv),
             ('W_DRIVE_IMPULSE', nv)]
    at = 0
    for slot, size in sizes:
        si[getattr(L, slot)] = at
        at += size
    floats = at
    at = 0
    for slot, size in [('I_ROWS', L.ROW_INTS * maxrows), ('I_NZ', maxrows * nv),
                       ('I_POINT_NZ', nv)]:
        si[getattr(L, slot)] = at
        at += size
    return floats, at


def body_groups(points):
    """[(body, first point, number of points, reach)] of candidates grouped by body (they
    must be sorted by body): reach is how far the body's points get from its origin, so a
    body whose origin is farther than that above the ground has no point on it."""
    groups = []
    for k, c in enumerate(points):
        reach = float(np.linalg.norm(c.center)) + c.radius
        if groups and groups[-1][0] == c.body:
            body, first, count, far = groups[-1]
            groups[-1] = (body, first, count + 1, max(far, reach))
        else:
            groups.append((c.body, k, 1, reach))
    return groups
