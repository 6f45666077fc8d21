"""Joint models: the one place that knows joint types (spatial_v2's ``jcalc``).

Every joint's motion subspace S is constant in the child (body) frame, so the joint's bias
acceleration c_J is zero and the velocity-product term of RNEA/ABA is v_i x (S qd_i).
"""
from ._jit import kernel
from .layout import (AXIS, JOINT_FLOATING, JOINT_PLANAR, JOINT_PRISMATIC, JOINT_REVOLUTE,
                     LI_P, LI_R, PLANAR_E1, PLANAR_E2, PLC_P, PLC_R)
from .spatial import axis_rotation, compose, quaternion_rotation


@kernel
def joint_transform(jtype, joint, q, qi, E, r):
    """(E, r): child-from-joint-frame transform X_J(q) of joint row ``joint`` of body_float."""
    if jtype == JOINT_REVOLUTE:
        axis_rotation(joint[AXIS:AXIS + 3], q[qi], E)
        r[0] = 0.0
        r[1] = 0.0
        r[2] = 0.0
    elif jtype == JOINT_PRISMATIC:
        for k in range(9):
            E[k] = 0.0
        E[0] = 1.0
        E[4] = 1.0
        E[8] = 1.0
        for k in range(3):
            r[k] = joint[AXIS + k] * q[qi]
    elif jtype == JOINT_PLANAR:
        axis_rotation(joint[AXIS:AXIS + 3], q[qi + 2], E)
        for k in range(3):
            r[k] = joint[PLANAR_E1 + k] * q[qi] + joint[PLANAR_E2 + k] * q[qi + 1]
    else:  # JOINT_FLOATING
        quaternion_rotation(q[qi + 3], q[qi + 4], q[qi + 5], q[qi + 6], E)
        r[0] = q[qi]
        r[1] = q[qi + 1]
        r[2] = q[qi + 2]


@kernel
def body_transform(body_float, i, jtype, q, qi, ws):
    """liMi = placement o X_J(q): parent-from-body transform of body i, into ws[i]."""
    joint = body_float[i]
    work = ws[0]  # row 0 is the world: its transform columns are scratch space
    joint_transform(jtype, joint, q, qi, work[0:9], work[9:12])
    compose(joint[PLC_R:PLC_R + 9], joint[PLC_P:PLC_P + 3], work[0:9], work[9:12],
            ws[i, LI_R:LI_R + 9], ws[i, LI_P:LI_P + 3])


@kernel
def motion_subspace_column(jtype, joint, k, s):
    """s = column k of the joint's motion subspace S, in the child frame."""
    for n in range(6):
        s[n] = 0.0
    if jtype == JOINT_REVOLUTE:
        s[3] = joint[AXIS]
        s[4] = joint[AXIS + 1]
        s[5] = joint[AXIS + 2]
    elif jtype == JOINT_PRISMATIC:
        s[0] = joint[AXIS]
        s[1] = joint[AXIS + 1]
        s[2] = joint[AXIS + 2]
    elif jtype == JOINT_PLANAR:
        if k == 0:
            s[0] = joint[PLANAR_E1]
            s[1] = joint[PLANAR_E1 + 1]
            s[2] = joint[PLANAR_E1 + 2]
        elif k == 1:
            s[0] = joint[PLANAR_E2]
            s[1] = joint[PLANAR_E2 + 1]
            s[2] = joint[PLANAR_E2 + 2]
        else:
            s[3] = joint[AXIS]
            s[4] = joint[AXIS + 1]
            s[5] = joint[AXIS + 2]
    else:  # JOINT_FLOATING: S is the identity
        s[k] = 1.0


@kernel
def joint_velocity(jtype, joint, qd, vi, out):
    """out = S qd (the joint's own twist in the child frame)."""
    if jtype == JOINT_REVOLUTE:
        for n in range(3):
            out[n] = 0.0
            out[3 + n] = joint[AXIS + n] * qd[vi]
    elif jtype == JOINT_PRISMATIC:
        for n in range(3):
            out[n] = joint[AXIS + n] * qd[vi]
            out[3 + n] = 0.0
    elif jtype == JOINT_PLANAR:
        for n in range(3):
            out[n] = joint[PLANAR_E1 + n] * qd[vi] + joint[PLANAR_E2 + n] * qd[vi + 1]
            out[3 + n] = joint[AXIS + n] * qd[vi + 2]
    else:
        for n in range(6):
            out[n] = qd[vi + n]


@kernel
def add_joint_velocity(jtype, joint, qd, vi, out):
    """out += S qd."""
    if jtype == JOINT_REVOLUTE:
        for n in range(3):
            out[3 + n] += joint[AXIS + n] * qd[vi]
    elif jtype == JOINT_PRISMATIC:
        for n in range(3):
            out[n] += joint[AXIS + n] * qd[vi]
    elif jtype == JOINT_PLANAR:
        for n in range(3):
            out[n] += joint[PLANAR_E1 + n] * qd[vi] + joint[PLANAR_E2 + n] * qd[vi + 1]
            out[3 + n] += joint[AXIS + n] * qd[vi + 2]
    else:
        for n in range(6):
            out[n] += qd[vi + n]


@kernel
def project_force(jtype, joint, f, tau, vi):
    """tau[vi:vi+nv] = S^T f."""
    if jtype == JOINT_REVOLUTE:
        tau[vi] = joint[AXIS] * f[3] + joint[AXIS + 1] * f[4] + joint[AXIS + 2] * f[5]
    elif jtype == JOINT_PRISMATIC:
        tau[vi] = joint[AXIS] * f[0] + joint[AXIS + 1] * f[1] + joint[AXIS + 2] * f[2]
    elif jtype == JOINT_PLANAR:
        tau[vi] = joint[PLANAR_E1] * f[0] + joint[PLANAR_E1 + 1] * f[1] + joint[PLANAR_E1 + 2] * f[2]
        tau[vi + 1] = (joint[PLANAR_E2] * f[0] + joint[PLANAR_E2 + 1] * f[1]
                       + joint[PLANAR_E2 + 2] * f[2])
        tau[vi + 2] = joint[AXIS] * f[3] + joint[AXIS + 1] * f[4] + joint[AXIS + 2] * f[5]
    else:
        for n in range(6):
            tau[vi + n] = f[n]
