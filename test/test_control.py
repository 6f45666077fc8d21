"""The ROS-free control pieces: trajectory sampling equals an independent spline evaluation
(scipy), JTC's rules before, between and after the points, the control laws' formulas, and
the external-torque observer (its compiled step is its formula; without contact it stays at
its integration error; it follows a constant external torque) and the wrench estimate's
compiled least squares (numpy's lstsq, full rank or not)."""
import math
import pathlib

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from rbd_ros.control import Reference, Trajectory, control_torques, tracking_error
from rbd_ros.control.laws import FRICTION_SMOOTHING
from rbd_ros.control.observer import (WRENCH_RCOND, MomentumObserver, WrenchEstimator,
                                     external_wrench, wrench_least_squares)
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


ARM = 'rbd_ros/robots/rbd_arm7.urdf'


def test_the_observer_s_compiled_step_is_its_formula():
    """observer.py's docstring formula written in numpy: the same r to rounding over 2,000
    random samples (the first sets p(0); r = 0 there); set_gain starts it again; the peak is
    the largest |r| of them all, until reset_peak."""
    model = rbd.Model.from_urdf(str(pathlib.Path(__file__).parent.parent / ARM))
    n = model.nv
    K = np.linspace(10.0, 80.0, n)
    observer = MomentumObserver(model, K)
    rng = np.random.default_rng(2)

    def b_of(q, v):        # n(q, v) - tau_f
        return rbd.nonlinear_effects(model, q, v) + model.damping * v \
            + model.friction * np.clip(v / FRICTION_SMOOTHING, -1.0, 1.0)
    kept, peak = None, np.zeros(n)
    assert not observer.peaked
    for k in range(2000):
        q, v, tau = rng.uniform(-1, 1, n), rng.uniform(-2, 2, n), rng.uniform(-5, 5, n)
        dt = None if k in (0, 1000) else rng.uniform(5e-4, 2e-3)
        if k == 1000:
            observer.set_gain(K)            # starts again: this sample is a first one
        got = observer.update(q, v, tau, dt).copy()
        M, b = rbd.mass_matrix(model, q), b_of(q, v)
        if dt is None:
            kept = dict(p0=M @ v, I=np.zeros(n), r=np.zeros(n))
            assert np.all(got == 0.0)
        else:
            known = dt * tau + 0.5 * (M - kept['M']) @ (v + kept['v']) \
                - 0.5 * dt * (b + kept['b'])
            r = K * (M @ v - kept['p0'] - kept['I'] - known - 0.5 * dt * kept['r']) \
                / (1.0 + 0.5 * K * dt)
            kept['I'] = kept['I'] + known + 0.5 * dt * (r + kept['r'])
            kept['r'] = r
            assert np.allclose(got, r, rtol=1e-12, atol=1e-12 * np.abs(r).max())
            peak = np.maximum(peak, np.abs(r))
        kept.update(M=M, v=v, b=b)
    assert observer.peaked and np.allclose(observer.peak, peak, rtol=1e-12)
    observer.reset_peak()
    assert not observer.peaked and not np.any(observer.peak)
    assert observer.enabled
    observer.set_gain(0.0)
    assert not observer.enabled


def test_the_wrench_estimate_s_least_squares_is_numpys_lstsq():
    """wrench_least_squares (a compiled Jacobi SVD) gives numpy's minimum-norm least squares
    (LAPACK's gelsd, the same rcond) on random 6 x m Jacobians, m = 1..12 (fewer joints than
    six: an underdetermined wrench), on singular ones (a repeated row, a zero row, a zero
    column, nearly parallel rows), and in external_wrench on the bundled arm, joints chosen or
    not."""
    rng = np.random.default_rng(3)
    cases = [rng.normal(size=(6, m)) * rng.uniform(0.01, 10.0, size=(6, 1))
             for m in range(1, 13) for _ in range(5)]
    for J in [rng.normal(size=(6, 7)) for _ in range(4)]:
        J[5] = J[1]
        cases.append(J)
    zero_row, zero_col, parallel = (rng.normal(size=(6, 7)) for _ in range(3))
    zero_row[2] = 0.0
    zero_col[:, 4] = 0.0
    parallel[3] = parallel[0] * (1.0 + 1e-13)
    cases += [zero_row, zero_col, parallel, np.zeros((6, 7))]
    for J in cases:
        r = rng.normal(size=J.shape[1])
        w = np.empty(6)
        wrench_least_squares(J, r, WRENCH_RCOND, w)
        expected = np.linalg.lstsq(J.T, r, rcond=WRENCH_RCOND)[0]
        scale = max(1.0, np.abs(expected).max())
        assert np.allclose(w, expected, rtol=1e-9, atol=1e-12 * scale), (J.shape, w, expected)
    model = rbd.Model.from_urdf(str(pathlib.Path(__file__).parent.parent / ARM))
    for joints in (None, np.arange(1, 7)):
        q, r = rng.uniform(-1, 1, model.nq), rng.normal(size=model.nv)
        J = rbd.frame_jacobian(model, q, 'tool0', reference='local')
        if joints is not None:
            J, rj = J[:, joints], r[joints]
        else:
            rj = r
        assert np.allclose(external_wrench(model, q, r, 'tool0', joints),
                           np.linalg.lstsq(J.T, rj, rcond=WRENCH_RCOND)[0], rtol=1e-10,
                           atol=1e-12)
        estimator = WrenchEstimator(model, 'tool0', joints)     # the node's one compiled call
        assert np.allclose(estimator.estimate(q, r), external_wrench(model, q, r, 'tool0', joints),
                           rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match='not a mask'):
        external_wrench(model, q, r, 'tool0', np.ones(model.nv, dtype=bool))
    with pytest.raises(ValueError, match='velocity indices'):
        external_wrench(model, q, r, 'tool0', [0, model.nv])


@pytest.mark.parametrize('seed', [3, 11])
def test_the_observer_s_one_call_equals_the_core_s_entry_points(seed):
    """observer_update (M, n and the step in one compiled call over the handle) gives the same
    bits as mass_matrix and nonlinear_effects then the step, on random trees of every joint
    type with a floating base; a model with mimic joints takes the entry points."""
    model = rbd.Model.from_urdf(random_urdf(seed, n_links=9), floating_base=True)
    fused, plain = MomentumObserver(model, 30.0), MomentumObserver(model, 30.0)
    assert fused._fused and model.direct
    plain._fused = False
    rng = np.random.default_rng(seed)
    for k in range(200):
        q = model.random_configuration(rng)
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        dt = None if k == 0 else 1e-3
        assert np.array_equal(fused.update(q, v, tau, dt), plain.update(q, v, tau, dt))
    with pytest.raises(ValueError, match='does not fit the model'):
        fused.update(np.zeros(model.nq + 1), np.zeros(model.nv), np.zeros(model.nv), 1e-3)
    # forward dynamics from the same call: the core's, to rounding, on either path; asking
    # for it leaves r as it was
    with_qdd, without = MomentumObserver(model, 30.0), MomentumObserver(model, 30.0)
    plain.reset()
    for k in range(50):
        q = model.random_configuration(rng)
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        dt = None if k == 0 else 1e-3
        r = with_qdd.update(q, v, tau, dt, accelerations=True)
        assert np.array_equal(r, without.update(q, v, tau, dt))
        plain.update(q, v, tau, dt, accelerations=True)
        expected = rbd.forward_dynamics(model, q, v, tau)
        for got in (with_qdd.qdd, plain.qdd):
            assert np.allclose(got, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())
    # not asked for, qdd is left as it was
    before = with_qdd.qdd.copy()
    with_qdd.update(q, v, tau + 1.0, 1e-3)
    assert np.array_equal(with_qdd.qdd, before)
    mimic = rbd.Model.from_urdf(random_urdf(seed, mimic=True))
    if mimic.has_mimic:
        observer = MomentumObserver(mimic, 30.0)
        assert not observer._fused
        q = mimic.random_configuration(rng)
        observer.update(q, np.ones(mimic.nv), np.zeros(mimic.nv), None)
        assert np.all(np.isfinite(observer.update(q, np.ones(mimic.nv), np.zeros(mimic.nv), 1e-3)))


def test_the_observer_s_forward_dynamics_is_nan_where_m_is_singular_and_r_goes_on():
    """A joint that moves no mass: forward_dynamics raises, the observer's qdd is NaN (the node
    then counts a non-finite output and publishes no forward dynamics), and r is updated as
    without qdd, on the compiled path and the entry points'."""
    xml = '''<robot name="r"><link name="a"/><link name="b"/>
      <link name="c"><inertial><mass value="1"/><origin xyz="0.1 0 0"/>
        <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
      <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="k" type="revolute"><parent link="a"/><child link="c"/><axis xyz="0 1 0"/>
      <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>'''
    model = rbd.Model.from_urdf(xml)
    q, v, tau = np.array([0.1, 0.2]), np.array([0.3, -0.2]), np.array([0.0, 0.5])
    with pytest.raises(FloatingPointError, match='not positive definite'):
        rbd.forward_dynamics(model, q, v, tau)
    for fused in (True, False):
        with_qdd, without = MomentumObserver(model, 30.0), MomentumObserver(model, 30.0)
        with_qdd._fused = without._fused = fused and with_qdd._fused
        for k in range(3):
            dt = None if k == 0 else 1e-3
            r = with_qdd.update(q, v, tau, dt, accelerations=True)
            assert np.array_equal(r, without.update(q, v, tau, dt)) and np.all(np.isfinite(r))
            assert np.all(np.isnan(with_qdd.qdd))
        assert with_qdd.peaked


def _driven_arm(model, seconds, external):
    """The arm under a drive torque held over each 1 ms period (gravity + a wobble of 1.5 N m),
    RK4 at 0.1 ms, plus ``external(t)``: samples (t, q, v, held tau, tau_ext) at 1 kHz."""
    n = model.nv
    q, v, h, t = np.full(n, 0.3), np.zeros(n), 1e-4, 0.0
    samples, held = [], None
    for k in range(int(round(seconds / h))):
        if k % 10 == 0:
            held = 1.5 * np.sin(2 * np.pi * 1.3 * t + np.arange(n)) + \
                rbd.gravity_torques(model, q)
        ext = external(t)

        def f(qq, vv):
            return vv, rbd.forward_dynamics(model, qq, vv, held + ext - model.damping * vv)
        k1 = f(q, v)
        k2 = f(q + h / 2 * k1[0], v + h / 2 * k1[1])
        k3 = f(q + h / 2 * k2[0], v + h / 2 * k2[1])
        k4 = f(q + h * k3[0], v + h * k3[1])
        q = q + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        v = v + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        t += h
        if (k + 1) % 10 == 0:
            samples.append((t, q, v, held, ext))
    return samples


def test_the_observer_stays_at_its_integration_error_and_follows_an_external_torque():
    """The docstring's figure: the arm (damping, no Coulomb friction: stiction would make the
    reference simulation stiff) moving at up to 8 rad/s without contact: |r| below 1e-3 N m;
    with 2 N m on joint 3 from 0.8 s on, r is that torque within 1e-3 N m 0.3 s later (six
    time constants at K = 50)."""
    import pathlib
    urdf = (pathlib.Path(__file__).parent.parent / ARM).read_text()
    model = rbd.Model.from_urdf(urdf).with_joint_dynamics(
        None, {name: 0.0 for name in rbd.Model.from_urdf(urdf).joint_names})
    n = model.nv
    push = np.zeros(n)
    push[2] = 2.0
    for external, check in ((lambda t: np.zeros(n), lambda t: t > 0.05),
                            (lambda t: push if t > 0.8 else np.zeros(n), lambda t: t > 1.1)):
        observer = MomentumObserver(model, 50.0)
        worst, fastest = 0.0, 0.0
        for k, (t, q, v, tau, ext) in enumerate(_driven_arm(model, 1.5, external)):
            r = observer.update(q, v, tau, None if k == 0 else 1e-3)
            fastest = max(fastest, np.abs(v).max())
            if check(t):
                worst = max(worst, np.abs(r - ext).max())
        assert worst < 1e-3 and 5.0 < fastest < 10.0, (worst, fastest)


# ---- closed loops as the nodes drive them (control/closed_loops.py) ------------------------------
ANKLE_URDF = 'rbd_ros/robots/parallel_ankle.urdf'


@pytest.mark.parametrize('robot', ['ankle', 'four_bar_revolute'])
def test_loop_closure_closes_as_close_loops_and_completes_the_motion(robot):
    """Warm-started Newton (the chord steps included) lands where close_loops does, along a
    motor trajectory; the completed velocities and accelerations keep the loops closed (K v = 0,
    K a = k); the torques are constrained_inverse_dynamics'. The four-bar's revolute closure
    has redundant rows (5 rows, rank 2 in the plane)."""
    from rbd_ros.control.closed_loops import LoopClosure
    from urdf_factory import four_bar_urdf
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    model = (rbd.Model.from_urdf(os.path.join(root, ANKLE_URDF)) if robot == 'ankle'
             else rbd.Model.from_urdf(four_bar_urdf('revolute')))
    motors = list(model.actuated_joints)
    names = [j.name for j in model.single_dof_joints()]
    closure = LoopClosure(model, names)
    assert closure.actuated == tuple(motors)
    assert set(closure.free_names) == set(names) - set(motors)
    assert not closure.required[[names.index(n) for n in closure.free_names]].any()
    rng = np.random.default_rng(3)
    start = model.neutral()
    for t in np.linspace(0.0, 0.2, 40):
        q = start.copy()
        q[closure.actuated_q] = 0.3 * np.sin(2 * np.pi * (t + np.arange(len(motors)) / 4))
        warm = q.copy() if closure.last is None else closure.last.copy()
        warm[closure.actuated_q] = q[closure.actuated_q]
        mine = closure.close(model, q)
        assert np.abs(rbd.constraint_residual(model, mine)).max() <= 1e-12
        assert np.array_equal(mine[closure.actuated_q], q[closure.actuated_q])
        core = rbd.close_loops(model, warm, motors)     # the core from the same warm start
        assert np.abs(mine - core).max() < 1e-10
        # the passive values given are not used: the warm start is the last closed pose
        start = mine + rng.normal(scale=0.3, size=model.nq)
    q = mine
    v = np.zeros(model.nv)
    v[closure.actuated_v] = rng.normal(size=len(motors))
    v = closure.velocity(model, q, v)
    a = np.zeros(model.nv)
    a[closure.actuated_v] = rng.normal(size=len(motors))
    a = closure.acceleration(model, q, v, a)
    K = rbd.constraint_jacobian(model, q)
    assert np.abs(K @ v).max() < 1e-10
    assert np.abs(K @ a - rbd.constraint_bias(model, q, v)).max() < 1e-9
    assert np.allclose(closure.torques(model, q, v, a),
                       rbd.constrained_inverse_dynamics(model, q, v, a), rtol=0, atol=1e-12)
    # the inverse dynamics law at the measured state is computed torque with zero gains
    zero = np.zeros(len(motors))
    ff = closure.law_torques('inverse_dynamics', model, q, v, q[closure.actuated_q],
                             v[closure.actuated_v], a[closure.actuated_v], zero, zero,
                             np.zeros(len(motors), dtype=bool))
    assert np.allclose(ff, closure.torques(model, q, v, a), rtol=0, atol=1e-9)


def test_loop_closure_refuses_what_cannot_drive_or_close_the_ankle():
    from rbd_ros.control.closed_loops import LoopClosure
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    model = rbd.Model.from_urdf(os.path.join(root, ANKLE_URDF))
    names = [j.name for j in model.single_dof_joints()]
    with pytest.raises(ValueError, match='2 degrees of freedom'):
        LoopClosure(model, names, ['motor_left'])
    with pytest.raises(ValueError, match=r"names \['sole_joint'\], not single-DoF joints"):
        LoopClosure(model, names, ['motor_left', 'sole_joint'])
    closure = LoopClosure(model, names, ['motor_right', 'motor_left'])
    q = closure.close(model, model.neutral())
    bad = q.copy()
    bad[closure.actuated_q] = [2.0, -2.0]
    with pytest.raises(ValueError, match="constraint 'rod_.*_ball' .* stays open"):
        closure.close(model, bad)
    assert np.array_equal(closure.last, q)        # the warm start is kept
    g = closure.gravity(model, q)
    assert np.allclose(g, rbd.constrained_inverse_dynamics(
        model, q, np.zeros(8), np.zeros(8), ['motor_right', 'motor_left']), rtol=0, atol=1e-12)


def test_loop_closure_serves_a_floating_leg_on_the_neutral_poses_branch_from_its_first_message():
    """A user's push-rod knee on a floating base: the node's closure took the base's six degrees
    of freedom for the loops' ('names 2 joints but the closed system has 8 degrees of freedom')
    and refused every legged robot with loops; a first message with the motors far from the
    neutral pose closed on the crossed parallelogram, and later messages stayed there."""
    from rbd_ros.control.closed_loops import LoopClosure
    import os
    leg = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'robots',
                       'pushrod_leg.urdf')
    model = rbd.Model.from_urdf(leg, floating_base=True)
    names = [j.name for j in model.single_dof_joints()]
    closure = LoopClosure(model, names)
    with pytest.raises(ValueError, match=r"names 1 joints on the loops \(FL_hip\) but the loops "
                                         r"of 'pushrod_leg' have 2 degrees of freedom"):
        LoopClosure(model, names, ['FL_hip'])
    q = model.neutral()
    q[closure.actuated_q] = (0.6, -0.6)
    first = closure.close(model, q)
    assert np.allclose(first, rbd.close_loops(model, q, list(closure.actuated)), atol=1e-12)
    knee = model.joint['FL_knee'].q_index
    assert abs(first[knee] - -1.2) < 1e-9           # the parallelogram, not its crossed image
    g = closure.gravity(model, first)
    expected = rbd.constrained_inverse_dynamics(model, first, np.zeros(model.nv),
                                                np.zeros(model.nv))
    assert np.allclose(g, expected, rtol=0, atol=1e-9)
    back = q.copy()
    back[closure.actuated_q] = (0.0, 0.0)             # one jump back: still on that branch
    assert abs(closure.close(model, back)[knee]) < 1e-9


def test_loop_closure_without_motors_quotes_the_transmission_that_named_no_joint():
    """A misspelt <transmission> joint is only a note of the description (a transmission does
    not change a tree's dynamics); on a robot with loops it leaves no motor, and the refusal
    now says which transmission named what."""
    from rbd_ros.control.closed_loops import LoopClosure
    from urdf_factory import four_bar_urdf
    text = four_bar_urdf('revolute')
    tag = '<joint name="crank_joint"><hardwareInterface>'
    assert tag in text
    model = rbd.Model.from_urdf(text.replace(tag, tag.replace('crank_joint', 'crank_jiont')))
    with pytest.raises(ValueError, match=r"names no actuated joint .*<transmission> "
                                         r"'crank_drive' names joint 'crank_jiont', which the "
                                         r"robot does not have"):
        LoopClosure(model, [j.name for j in model.single_dof_joints()])
