"""The discrete-time linearisation of a robot's dynamics that LQR and MPC controllers ask for,
ROS-free: the semi-implicit Euler step the simulator takes,

    v+ = v + dt qdd(q, v, u),   q+ = q (+) dt v+,   qdd = FD(q, v, S u + tau_f(v))

(S puts the actuated joints' efforts u into the model's torques; tau_f = -D v - F sign(v) the
joints' URDF damping and Coulomb friction), linearised about a state (q, v) and efforts u0:
x+ = A x + B u with x = (dq, dv) in the tangent space (q (+) dq, as ``integrate`` moves; the
next state's dq+ at q+). With Fq = dqdd/dq, Fv = dqdd/dv (the core's analytical
forward_dynamics_derivatives) and Kq = d(q (+) w)/dq, Kv = d(q (+) dt v)/dv at v = v+
(integrate_derivatives),

    A = [[Kq + dt Kv Fq, Kv (1 + dt Fv)],      B = [[dt Kv M^-1 S],
         [dt Fq,         1 + dt Fv     ]]           [dt M^-1 S   ]]

For a fixed base of one-number joints Kq = 1, Kv = dt: A = [[1 + dt^2 Fq, dt 1 + dt^2 Fv],
[dt Fq, 1 + dt Fv]], B = [[dt^2 M^-1], [dt M^-1]].

Friction: the damping D is smooth, and enters Fv as -M^-1 D. Coulomb friction F sign(v) is not
differentiable at v = 0 and flat elsewhere: it enters qdd (the operating point; 0 at v = 0, as
``joint_friction_torques``) but its derivative is taken as 0 everywhere. At rest that is the
subgradient that assumes no stiction: the linear model never counts on friction to hold or
damp a joint (a controller designed on it is not made lax by friction it may not get), and a
joint the simulator holds by stiction just moves less than the model predicts.
"""
from __future__ import annotations

import numpy as np

import rbd_ros.dynamics as rbd


def semi_implicit_euler_linearization(model: rbd.Model, q, v, u, dt: float, actuated=None,
                                      joint_friction: bool = True, data=None):
    """(A, B) of the semi-implicit Euler step about (q, v, u): A is 2 nv x 2 nv, B 2 nv x
    len(actuated). ``u``: the efforts of the ``actuated`` velocities (their v indices; default
    every velocity, the model's torques); ``joint_friction``: include the model's damping and
    Coulomb friction (the module's docstring says how)."""
    nv = model.nv
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    actuated = np.arange(nv) if actuated is None else np.asarray(actuated, dtype=int)
    u = np.asarray(u, dtype=float)
    if u.shape != actuated.shape:
        raise ValueError(f'u has {u.size} values for {actuated.size} actuated velocities')
    if not (np.isfinite(dt) and dt > 0.0):
        raise ValueError(f'dt must be a positive number of seconds, got {dt!r}')
    tau = np.zeros(nv)
    tau[actuated] = u
    if joint_friction:
        tau += rbd.joint_friction_torques(model, v)
    qdd = rbd.forward_dynamics(model, q, v, tau, data=data)
    Fq, Fv, Minv = rbd.forward_dynamics_derivatives(model, q, v, tau, data=data)
    if joint_friction:
        Fv = Fv - Minv * model.damping          # d(-D v)/dv = -D, through M^-1
    A, B = np.empty((2 * nv, 2 * nv)), np.empty((2 * nv, len(actuated)))
    eye = np.eye(nv)
    A[nv:, :nv] = dt * Fq                                       # dv+ = dt Fq dq
    A[nv:, nv:] = eye + dt * Fv                                 #     + (1 + dt Fv) dv
    B[nv:] = dt * Minv[:, actuated]                             #     + dt M^-1 S du
    if any(j.type in ('floating', 'planar') and j.v_index is not None for j in model.joints):
        Kq, Kv = rbd.integrate_derivatives(model, q, v + dt * qdd, dt)
        A[:nv, :nv] = Kq + Kv @ A[nv:, :nv]                     # dq+ = Kq dq + Kv dv+
        A[:nv, nv:] = Kv @ A[nv:, nv:]
        B[:nv] = Kv @ B[nv:]
    else:                                                       # Kq = 1, Kv = dt
        A[:nv, :nv] = eye + dt * A[nv:, :nv]
        A[:nv, nv:] = dt * A[nv:, nv:]
        B[:nv] = dt * B[nv:]
    return A, B
