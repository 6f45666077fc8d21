"""Joint models (spatial_v2's ``jcalc``): the one place that knows how each joint type moves
its body: its transform X_J(q), motion subspace S, joint velocity S v and force projection
S^T f. The algorithms (RNEA, CRBA, ABA, kinematics) reach joint types only through these.
Three other files know joint types, each for a concern of its own: model.py (URDF types to
the codes and sizes here, a planar joint's basis), configuration.py (each type's
configuration manifold: the exp and log maps of integrate, difference and interpolate, kept
apart from the joint models as Pinocchio keeps its Lie groups) and checks.py (a floating
joint's quaternion must not be zero).

Every joint's motion subspace S is constant in the child (body) frame, so the joint's bias
acceleration c_J is zero and the velocity-product term of RNEA and ABA is v_i x (S v_i).
``body_float`` is the model's float table and ``j`` the offset of the joint's row in it.
"""
from ._jit import inline_kernel
from .layout import (AXIS, BODY_FLOAT_COLS, JOINT_PLANAR, JOINT_PRISMATIC, JOINT_REVOLUTE, LI,
                     PLACEMENT, PLANAR_E1, PLANAR_E2, SCRATCH_X, WS_COLS)
from .spatial import SYM, axis_rotation, compose, quaternion_rotation, symmetric6_times


@inline_kernel
def joint_transform(jtype, body_float, j, q, qi, X, x):
    """X[x:x+12] = X_J(q), the joint's transform (child frame in the joint frame)."""
    if jtype == JOINT_REVOLUTE:
        axis_rotation(body_float, j + AXIS, q[qi], X, x)
        X[x + 9] = 0.0
        X[x + 10] = 0.0
        X[x + 11] = 0.0
    elif jtype == JOINT_PRISMATIC:
        for k in range(9):
            X[x + k] = 0.0
        X[x] = 1.0
        X[x + 4] = 1.0
        X[x + 8] = 1.0
        for k in range(3):
            X[x + 9 + k] = body_float[j + AXIS + k] * q[qi]
    elif jtype == JOINT_PLANAR:
        axis_rotation(body_float, j + AXIS, q[qi + 2], X, x)
        for k in range(3):
            X[x + 9 + k] = (body_float[j + PLANAR_E1 + k] * q[qi]
                            + body_float[j + PLANAR_E2 + k] * q[qi + 1])
    else:  # JOINT_FLOATING
        quaternion_rotation(q[qi + 3], q[qi + 4], q[qi + 5], q[qi + 6], X, x)
        X[x + 9] = q[qi]
        X[x + 10] = q[qi + 1]
        X[x + 11] = q[qi + 2]


@inline_kernel
def body_transform(body_float, i, jtype, q, qi, ws, scratch):
    """liMi = placement o X_J(q), the parent-from-body transform of body i, into ws row i (LI).
    X_J passes through the scratch row (offset ``scratch``)."""
    j = i * BODY_FLOAT_COLS
    joint_transform(jtype, body_float, j, q, qi, ws, scratch + SCRATCH_X)
    compose(body_float, j + PLACEMENT, ws, scratch + SCRATCH_X, ws, i * WS_COLS + LI)


@inline_kernel
def motion_subspace_column(jtype, body_float, j, k, s, o):
    """s[o:o+6] = column k of the joint's motion subspace S, in the child frame."""
    for n in range(6):
        s[o + n] = 0.0
    if jtype == JOINT_REVOLUTE:
        for n in range(3):
            s[o + 3 + n] = body_float[j + AXIS + n]
    elif jtype == JOINT_PRISMATIC:
        for n in range(3):
            s[o + n] = body_float[j + AXIS + n]
    elif jtype == JOINT_PLANAR:
        if k == 0:
            for n in range(3):
                s[o + n] = body_float[j + PLANAR_E1 + n]
        elif k == 1:
            for n in range(3):
                s[o + n] = body_float[j + PLANAR_E2 + n]
        else:
            for n in range(3):
                s[o + 3 + n] = body_float[j + AXIS + n]
    else:  # JOINT_FLOATING: S is the identity
        s[o + k] = 1.0


@inline_kernel
def joint_velocity(jtype, body_float, j, v, vi, out, o, accumulate):
    """out[o:o+6] (+)= S v[vi:], the joint's own twist (or S a: its acceleration) in the child
    frame."""
    if not accumulate:
        for n in range(6):
            out[o + n] = 0.0
    if jtype == JOINT_REVOLUTE:
        for n in range(3):
            out[o + 3 + n] += body_float[j + AXIS + n] * v[vi]
    elif jtype == JOINT_PRISMATIC:
        for n in range(3):
            out[o + n] += body_float[j + AXIS + n] * v[vi]
    elif jtype == JOINT_PLANAR:
        for n in range(3):
            out[o + n] += (body_float[j + PLANAR_E1 + n] * v[vi]
                           + body_float[j + PLANAR_E2 + n] * v[vi + 1])
            out[o + 3 + n] += body_float[j + AXIS + n] * v[vi + 2]
    else:
        for n in range(6):
            out[o + n] += v[vi + n]


@inline_kernel
def project_force(jtype, body_float, j, f, k, tau, t):
    """tau[t:t+nv] = S^T f[k:k+6]."""
    a = j + AXIS
    if jtype == JOINT_REVOLUTE:
        tau[t] = body_float[a] * f[k + 3] + body_float[a + 1] * f[k + 4] + body_float[a + 2] * f[k + 5]
    elif jtype == JOINT_PRISMATIC:
        tau[t] = body_float[a] * f[k] + body_float[a + 1] * f[k + 1] + body_float[a + 2] * f[k + 2]
    elif jtype == JOINT_PLANAR:
        e1, e2 = j + PLANAR_E1, j + PLANAR_E2
        tau[t] = body_float[e1] * f[k] + body_float[e1 + 1] * f[k + 1] + body_float[e1 + 2] * f[k + 2]
        tau[t + 1] = body_float[e2] * f[k] + body_float[e2 + 1] * f[k + 1] + body_float[e2 + 2] * f[k + 2]
        tau[t + 2] = body_float[a] * f[k + 3] + body_float[a + 1] * f[k + 4] + body_float[a + 2] * f[k + 5]
    else:
        for n in range(6):
            tau[t + n] = f[k + n]


@inline_kernel
def symmetric_times_subspace(jtype, body_float, j, k, M, m, out, o, scratch, sc):
    """out[o:o+6] = M S_k for column k of the joint's motion subspace and a packed symmetric
    6x6 M (spatial.SYM; ABA's U = IA S). M is symmetric, so for a revolute (prismatic) joint,
    S = [0; a] ([a; 0]), this is a combination of three of its rows: 18 products instead of
    36. scratch[sc:sc+6] is scratch."""
    if jtype == JOINT_REVOLUTE or jtype == JOINT_PRISMATIC:
        b = 18 if jtype == JOINT_REVOLUTE else 0      # first of the three rows, times 6
        a0, a1, a2 = body_float[j + AXIS], body_float[j + AXIS + 1], body_float[j + AXIS + 2]
        for c in range(6):
            out[o + c] = (a0 * M[m + SYM[b + c]] + a1 * M[m + SYM[b + 6 + c]]
                          + a2 * M[m + SYM[b + 12 + c]])
    else:
        motion_subspace_column(jtype, body_float, j, k, scratch, sc)
        symmetric6_times(M, m, scratch, sc, out, o)
