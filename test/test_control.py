"""The ROS-free control pieces: trajectory sampling equals an independent spline evaluation
(scipy), JTC's rules before, between and after the points, and the control laws' formulas."""
import math

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from rbd_ros.control import Reference, Trajectory, control_torques, tracking_error
from urdf_factory import random_urdf

interpolate = pytest.importorskip('scipy.interpolate')


def points(rng, k=5, n=3):
    tfs = np.cumsum(rng.uniform(0.2, 0.6, k))
    return tfs, rng.normal(size=(k, n)), rng.normal(size=(k, n)), rng.normal(size=(k, n))


@pytest.mark.parametrize('fields', ['positions', 'velocities', 'accelerations'])
def test_sampling_equals_an_independent_spline(fields):
    rng = np.random.default_rng(1)
    tfs, pos, vel, acc = points(rng)
    kw = {}
    if fields != 'positions':
        kw['velocities'] = vel
    if fields == 'accelerations':
        kw['accelerations'] = acc
    traj = Trajectory.from_points(10.0, tfs, pos, **kw, measured_q=pos[0] * 0.0)
    t = 10.0 + tfs          # the knots after the start segment
    for j in range(pos.shape[1]):
        if fields == 'positions':
            ref = interpolate.interp1d(t, pos[:, j])
        elif fields == 'velocities':
            ref = interpolate.CubicHermiteSpline(t, pos[:, j], vel[:, j])
        else:
            ref = interpolate.BPoly.from_derivatives(t, np.stack([pos[:, j], vel[:, j], acc[:, j]], 1))
        for x in np.linspace(t[0], t[-1] - 1e-9, 57):
            q, v, a = traj.sample(x)
            assert q[j] == pytest.approx(float(ref(x)), abs=1e-9)
            if fields != 'positions':
                assert v[j] == pytest.approx(float(ref.derivative()(x)), abs=1e-8)
                assert a[j] == pytest.approx(float(ref.derivative(2)(x)), abs=1e-7)


def test_before_the_start_from_the_measured_state_and_after_the_end():
    tfs, pos = np.array([1.0, 2.0]), np.array([[1.0], [2.0]])
    traj = Trajectory.from_points(5.0, tfs, pos, velocities=[[0.0], [0.0]],
                                  measured_q=[0.2], measured_v=[0.5])
    assert traj.sample(4.0) == (pytest.approx([0.2]), pytest.approx([0.0]), pytest.approx([0.0]))
    q, v, _ = traj.sample(5.0)             # the spline starts at the measured state
    assert q[0] == pytest.approx(0.2) and v[0] == pytest.approx(0.5)
    q, v, _ = traj.sample(6.0)
    assert q[0] == pytest.approx(1.0) and v[0] == pytest.approx(0.0)
    q, v, a = traj.sample(9.0)             # after the last point: held, at rest
    assert (q[0], v[0], a[0]) == (2.0, 0.0, 0.0)


def test_a_continuous_joint_takes_the_nearest_turn_and_errors_wrap():
    traj = Trajectory.from_points(0.0, [1.0], [[0.1]], measured_q=[2 * math.pi - 0.1],
                                  continuous=np.array([True]))
    assert traj.sample(0.0)[0][0] == pytest.approx(-0.1)
    assert traj.sample(0.5)[0][0] == pytest.approx(0.0)
    e = tracking_error([0.1, 0.1], [2 * math.pi, 2 * math.pi], np.array([True, False]))
    assert e[0] == pytest.approx(0.1) and e[1] == pytest.approx(0.1 - 2 * math.pi)


def test_a_new_trajectory_takes_over_only_the_joints_it_names():
    ref = Reference(3)
    ref.start_hold([1.0, 2.0, 3.0])
    ref.replace(Trajectory.from_points(0.0, [1.0], [[5.0, 6.0]], measured_q=[1.0, 2.0]), [0, 1])
    ref.replace(Trajectory.from_points(0.5, [1.0], [[9.0]], measured_q=[7.0]), [1])
    q, _, _ = ref.sample(10.0)
    assert list(q) == [5.0, 9.0, 3.0]


@pytest.mark.parametrize('law', ['gravity', 'inverse_dynamics', 'pd_feedforward',
                                 'computed_torque', 'gravity_pd'])
def test_control_laws_are_their_formulas(law):
    model = rbd.Model.from_urdf(random_urdf(3, n_links=5, joint_types=('revolute', 'prismatic')))
    rng = np.random.default_rng(0)
    q, v = model.random_configuration(rng), rng.normal(size=model.nv)
    q_ref, v_ref, a_ref = model.random_configuration(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    kp, kd = rng.uniform(1, 10, model.nv), rng.uniform(0.1, 2, model.nv)
    idx = np.arange(model.nv)
    tau = control_torques(law, model, q, v, idx, idx, q_ref, v_ref, a_ref, kp, kd,
                          np.zeros(model.nv, dtype=bool))
    e, e_dot = q_ref - q, v_ref - v
    M, h, g = rbd.mass_matrix(model, q), rbd.nonlinear_effects(model, q, v), rbd.gravity_torques(model, q)
    expected = {'gravity': g,
                'inverse_dynamics': rbd.inverse_dynamics(model, q_ref, v_ref, a_ref),
                'pd_feedforward': rbd.inverse_dynamics(model, q_ref, v_ref, a_ref) + kp * e + kd * e_dot,
                'computed_torque': M @ (a_ref + kp * e + kd * e_dot) + h,
                'gravity_pd': g + kp * e - kd * v}[law]
    assert np.allclose(tau, expected, rtol=1e-10, atol=1e-10)


def test_friction_compensation_cancels_the_simulated_joint_resistance():
    """What compensate_friction adds is what rbd.joint_friction_torques takes away at the same
    (non-small) velocity, per law with a feedforward."""
    from rbd_ros.bringup import default_urdf
    model = rbd.Model.from_urdf(open(default_urdf()).read())
    rng = np.random.default_rng(3)
    q = rng.uniform(-1, 1, model.nq)
    v = rng.uniform(0.1, 1.0, model.nv) * rng.choice([-1, 1], model.nv)
    idx = np.arange(model.nv)
    a = rng.normal(size=model.nv)
    for law in ('inverse_dynamics', 'pd_feedforward', 'computed_torque'):
        plain = control_torques(law, model, q, v, idx, idx, q, v, a, 100.0, 20.0,
                                np.zeros(model.nv, bool))
        comp = control_torques(law, model, q, v, idx, idx, q, v, a, 100.0, 20.0,
                               np.zeros(model.nv, bool), compensate_friction=True)
        np.testing.assert_allclose(comp - plain, -rbd.joint_friction_torques(model, v),
                                   rtol=0, atol=1e-12)
    assert np.any(model.friction > 0) and np.any(model.damping > 0)


@pytest.mark.parametrize('floating', [False, True])
def test_linearization_equals_finite_differences_of_the_step(floating):
    """semi_implicit_euler_linearization: A and B are the five-point differences of the step
    itself, v+ = v + dt FD(q, v, S u + tau_f(v)), q+ = q (+) dt v+, in the tangent spaces of
    x and of x+ (dq+ = q+ (-) q+_0), on a tree with planar and floating joints inside, damping
    and Coulomb friction (v away from 0, where friction's sign is locally constant), a floating
    base and unactuated joints (the base's six)."""
    from rbd_ros.control.linearization import semi_implicit_euler_linearization
    xml = random_urdf(41, n_links=6, joint_types=('revolute', 'prismatic', 'planar', 'floating'))
    model = rbd.Model.from_urdf(xml, floating_base=floating)
    model = model.with_joint_dynamics(
        damping={j.name: 0.7 for j in model.single_dof_joints()},
        friction={j.name: 0.4 for j in model.single_dof_joints()})
    rng = np.random.default_rng(2)
    q, v = model.random_configuration(rng), rng.normal(size=model.nv) + 0.5
    actuated = np.array([j.v_index for j in model.single_dof_joints()])
    u, dt, n = rng.normal(size=len(actuated)), 0.01, model.nv

    def step(q, v, u):
        tau = np.zeros(n)
        tau[actuated] = u
        tau += rbd.joint_friction_torques(model, v)
        v_next = v + dt * rbd.forward_dynamics(model, q, v, tau)
        return rbd.integrate(model, q, v_next, dt), v_next
    q0, v0 = step(q, v, u)

    def deviation(x):
        qn, vn = step(rbd.integrate(model, q, x[:n], 1.0), v + x[n:2 * n], u + x[2 * n:])
        return np.concatenate([rbd.difference(model, q0, qn), vn - v0])
    h, columns = 1e-4, []
    for e in np.eye(2 * n + len(actuated)):
        columns.append((deviation(-2 * h * e) - 8 * deviation(-h * e) + 8 * deviation(h * e)
                        - deviation(2 * h * e)) / (12 * h))
    numerical = np.stack(columns, axis=1)
    A, B = semi_implicit_euler_linearization(model, q, v, u, dt, actuated)
    assert A.shape == (2 * n, 2 * n) and B.shape == (2 * n, len(actuated))
    scale = np.maximum(1.0, np.abs(numerical))
    assert np.max(np.abs(np.hstack([A, B]) - numerical) / scale) < 1e-7
    # a fixed base of one-number joints: the formula, blocks of dt
    if not floating:
        return
    arm = rbd.Model.from_urdf(random_urdf(3, n_links=4, joint_types=('revolute',)))
    q, v, u = arm.random_configuration(rng), rng.normal(size=arm.nv), rng.normal(size=arm.nv)
    A, B = semi_implicit_euler_linearization(arm, q, v, u, dt)
    tau = u + rbd.joint_friction_torques(arm, v)
    Fq, Fv, Minv = rbd.forward_dynamics_derivatives(arm, q, v, tau)
    Fv = Fv - Minv * arm.damping
    eye = np.eye(arm.nv)
    assert np.allclose(A, np.block([[eye + dt ** 2 * Fq, dt * eye + dt ** 2 * Fv],
                                    [dt * Fq, eye + dt * Fv]]), rtol=0, atol=1e-14)
    assert np.allclose(B, np.vstack([dt ** 2 * Minv, dt * Minv]), rtol=0, atol=1e-14)
