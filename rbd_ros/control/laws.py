"""Torque control laws on a Model, ROS-free: the building blocks of dynamics_node's effort
commands. Each takes the measured state (q, v: the model's coordinates) and, per controlled
joint (``index``: their v indices; for 1-DoF joints also their q indices), the reference and
the gains; each returns the joints' torques.

    gravity:          g(q)
    inverse_dynamics: ID(q_ref, v_ref, a_ref)                         (feedforward only)
    pd_feedforward:   ID(q_ref, v_ref, a_ref) + Kp e + Kd e_dot       (Kp in N m/rad)
    computed_torque:  M(q) (a_ref + Kp e + Kd e_dot) + h(q, v)        (Kp in 1/s^2)
                      = ID(q, v, a_ref + Kp e + Kd e_dot): one RNEA
    gravity_pd:       g(q) + Kp (q_ref - q) - Kd v                    (set-point regulation)

with e = q_ref - q (wrapped to (-pi, pi] for continuous joints) and e_dot = v_ref - v.

``compensate_friction``: the three feedforward laws also cancel the joints' own resistance
from the URDF's <dynamics> (damping v_ref + friction sign(v_ref), see
``joint_friction_compensation``). Without it a light wrist under computed torque (Kp 400 on a
0.01 kg m^2 inertia: 4 N m/rad) lags its reference by friction / 4 rad.
"""
from __future__ import annotations

import numpy as np

import rbd_ros.dynamics as rbd

from .trajectory import wrap_angle

LAWS = ('gravity', 'inverse_dynamics', 'pd_feedforward', 'computed_torque', 'gravity_pd')


def tracking_error(q_ref, q, continuous):
    """q_ref - q per joint, wrapped to (-pi, pi] where ``continuous``."""
    e = np.asarray(q_ref, dtype=float) - np.asarray(q, dtype=float)
    return np.where(continuous, wrap_angle(e), e)


#: |v| below which the Coulomb term of the compensation is scaled down linearly (rad/s or m/s):
#: a sign() at a reference velocity of 0 would flip the full friction torque on noise
FRICTION_SMOOTHING = 1e-2


def joint_friction_compensation(model, v_ref, v_index):
    """The torques that cancel the joints' own damping and Coulomb friction at the reference
    velocity v_ref (per joint ``v_index``): damping v_ref + friction clip(v_ref / 0.01, -1, 1)."""
    v_ref = np.asarray(v_ref, dtype=float)
    return (model.damping[v_index] * v_ref
            + model.friction[v_index] * np.clip(v_ref / FRICTION_SMOOTHING, -1.0, 1.0))


def control_torques(law, model, q, v, q_index, v_index, q_ref, v_ref, a_ref, kp, kd,
                    continuous, compensate_friction=False):
    """The torques of ``law`` on the joints (q_index, v_index). q, v: the measured state in the
    model's coordinates. q_ref, v_ref, a_ref, kp, kd, continuous: per joint. The feedforward
    laws take the inverse dynamics at the reference: q, v with the joints' coordinates
    replaced by q_ref, v_ref (the others, such as a floating base, as measured)."""
    if law == 'gravity':
        return rbd.gravity_torques(model, q)[v_index]
    e = tracking_error(q_ref, q[q_index], continuous)
    e_dot = v_ref - v[v_index]
    if law == 'gravity_pd':
        return rbd.gravity_torques(model, q)[v_index] + kp * e - kd * v[v_index]
    if law == 'computed_torque':
        a = np.zeros(model.nv)
        a[v_index] = a_ref + kp * e + kd * e_dot
        tau = rbd.inverse_dynamics(model, q, v, a)[v_index]
        if compensate_friction:
            tau = tau + joint_friction_compensation(model, v_ref, v_index)
        return tau
    reference_q, reference_v = q.copy(), v.copy()
    reference_q[q_index], reference_v[v_index] = q_ref, v_ref
    a = np.zeros(model.nv)
    a[v_index] = a_ref
    tau = rbd.inverse_dynamics(model, reference_q, reference_v, a)[v_index]
    if compensate_friction:
        tau = tau + joint_friction_compensation(model, v_ref, v_index)
    if law == 'inverse_dynamics':
        return tau
    if law == 'pd_feedforward':
        return tau + kp * e + kd * e_dot
    raise ValueError(f'unknown control law {law!r}; laws: {", ".join(LAWS)}')
