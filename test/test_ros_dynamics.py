"""dynamics_node over real DDS (loopback, private domain): what it publishes equals the core
functions for the same inputs; bad input is rejected and counted; models swap atomically."""
import math
import random
import time

import numpy as np
import pytest

pytest.importorskip('rclpy')

from builtin_interfaces.msg import Duration, Time  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

import rbd_ros.dynamics as rbd  # noqa: E402
from conftest import ARM, QUAD2, TREE3, js, publish_until, wait_until  # noqa: E402
from rbd_ros.control import joint_friction_compensation  # noqa: E402
from rbd_ros.nodes.dynamics import DynamicsNode  # noqa: E402
from rbd_ros.ros.qos import LATCHED_QOS  # noqa: E402

pytestmark = pytest.mark.timeout(120)

GRAVITY = '/rbd_dynamics/gravity_torques'
FD = '/rbd_dynamics/forward_dynamics'
ID = '/rbd_dynamics/inverse_dynamics'
CMD = '/rbd_dynamics/effort_commands'

BEST_EFFORT = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


def by_name(names, values):
    return dict(zip(names, values))


def close(a, b, tol=1e-9):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol * np.maximum(1, np.abs(b))))


def diagnostics_values(box):
    """key -> value of the latest rbd_dynamics diagnostics status."""
    for arr in reversed(box):
        for st in arr.status:
            if 'rbd_dynamics' in st.name:
                return {kv.key: kv.value for kv in st.values}
    return {}


@pytest.mark.parametrize('qos, gain', [(BEST_EFFORT, 50.0), (RELIABLE, 0.0)],
                         ids=['best_effort-observer_on', 'reliable-observer_off'])
def test_gravity_and_forward_dynamics_equal_core(ros, qos, gain):
    """With the observer on (the defaults) forward dynamics comes from its call's M and n;
    off, from ABA: the core's either way."""
    node = ros.start(DynamicsNode, {'robot_description': ARM, 'observer_gain': [gain]})
    assert node.runtime.observer.enabled == (gain > 0)
    model = rbd.Model.from_urdf(ARM)
    gravity, fd = ros.collect(JointState, GRAVITY), ros.collect(JointTrajectory, FD)
    pub = ros.publisher(JointState, 'joint_states', qos, wait_for=1)
    rng = np.random.default_rng(7)
    names = list(model.joint_names)
    for k in range(5):
        q = rng.uniform(-1.5, 1.5, 7)
        v = rng.uniform(-1, 1, 7)
        tau = rng.uniform(-5, 5, 7)
        order = list(range(7))
        random.Random(k).shuffle(order)   # shuffled joint order
        msg = js([names[i] for i in order], q[order], v[order], tau[order], sec=k + 1)
        publish_until(pub, msg, lambda: gravity and fd and gravity[-1].header.stamp.sec == k + 1
                      and fd[-1].header.stamp.sec == k + 1, what='outputs')
        g_msg, fd_msg = gravity[-1], fd[-1]
        assert g_msg.header.stamp.sec == k + 1 and fd_msg.header.stamp.sec == k + 1
        assert list(g_msg.name) == names and fd_msg.joint_names == names
        assert close(g_msg.effort, rbd.gravity_torques(model, q))
        assert close(g_msg.position, q)
        point = fd_msg.points[0]
        assert close(point.accelerations, rbd.forward_dynamics(model, q, v, tau))
        assert close(point.positions, q) and close(point.velocities, v)
        assert close(point.effort, tau)
    assert node.stats.rejected == {}


def test_partial_joint_states_are_merged(ros):
    ros.start(DynamicsNode, {'robot_description': TREE3, 'joint_states_qos': 'reliable'})
    model = rbd.Model.from_urdf(TREE3)
    gravity, fd = ros.collect(JointState, GRAVITY), ros.collect(JointTrajectory, FD)
    pub = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    pub.publish(js(['j2', 'j1'], [0.4, -0.6], effort=[1.0, 2.0], sec=1))
    pub.publish(js(['j3'], [0.05], effort=[3.0], sec=2))   # still j_side missing: no output yet
    pub.publish(js(['finger_joint', 'j_side', 'not_a_joint'], [9.0, 0.3, 1.0], effort=[0, 4, 0],
                   sec=3))
    wait_until(lambda: gravity and fd, what='gravity and forward dynamics')
    q = np.zeros(model.nq)
    for name, value in {'j1': -0.6, 'j2': 0.4, 'j3': 0.05, 'j_side': 0.3}.items():
        q[model.joint[name].q_index] = value
    tau = np.zeros(model.nv)
    for name, value in {'j1': 2.0, 'j2': 1.0, 'j3': 3.0, 'j_side': 4.0}.items():
        tau[model.joint[name].v_index] = value
    assert len(gravity) == 1 and gravity[0].header.stamp.sec == 3
    assert close(by_name(gravity[0].name, gravity[0].effort)['j1'],
                 rbd.gravity_torques(model, q)[model.joint['j1'].v_index])
    expected = rbd.gravity_torques(model, q)
    assert close([by_name(gravity[0].name, gravity[0].effort)[n] for n in model.joint_names],
                 expected)
    qdd = rbd.forward_dynamics(model, q, np.zeros(model.nv), tau)
    got = by_name(fd[0].joint_names, fd[0].points[0].accelerations)
    assert close([got[n] for n in model.joint_names], qdd)


def test_reference_trajectory_is_sampled_at_every_joint_states(ros):
    """~/reference is a whole trajectory (JTC's semantics); every joint_states gets the
    reference sampled at its stamp: ~/inverse_dynamics (q_ref, v_ref, ID), ~/tracking_error,
    and the command law's efforts, in command_joints order."""
    from scipy.interpolate import CubicHermiteSpline
    from rbd_ros.control import joint_friction_compensation, Trajectory
    model = rbd.Model.from_urdf(ARM)
    order = ['joint_7', 'joint_2', 'joint_5']
    node = ros.start(DynamicsNode, {'robot_description': ARM, 'command_source': 'inverse_dynamics',
                                    'command_joints': order, 'input_timeout': 30.0,
                                    'joint_states_qos': 'reliable'})
    out, cmd = ros.collect(JointState, ID), ros.collect(Float64MultiArray, CMD)
    err = ros.collect(JointState, '/rbd_dynamics/tracking_error')
    states = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    ref = ros.publisher(JointTrajectory, '/rbd_dynamics/reference', RELIABLE, wait_for=1)
    q_meas, v_meas = np.full(7, 0.1), np.zeros(7)
    states.publish(js(model.joint_names, q_meas, v_meas, sec=9))
    # before any reference: the law holds the first measured position (commands, no ID output)
    wait_until(lambda: cmd, what='commands holding the measured position')
    idx = [model.joint_names.index(n) for n in order]
    assert close(cmd[-1].data, rbd.gravity_torques(model, q_meas)[idx]) and not out
    rng = np.random.default_rng(3)
    p1, p2 = rng.uniform(-1, 1, (2, 7))
    v1, v2 = rng.uniform(-0.5, 0.5, (2, 7))
    perm = [3, 0, 6, 1, 5, 2, 4]
    msg = JointTrajectory(joint_names=[model.joint_names[i] for i in perm])
    msg.header.stamp = Time(sec=10)
    msg.points = [JointTrajectoryPoint(positions=list(p[perm]), velocities=list(v[perm]),
                                       time_from_start=Duration(sec=s))
                  for p, v, s in ((p1, v1, 1), (p2, v2, 2))]
    ref.publish(msg)
    wait_until(lambda: node.references == 1, what='the reference')
    for k, t in enumerate((10.5, 11.25, 11.75, 13.0)):
        sec, nanosec = int(t), int(round((t - int(t)) * 1e9))
        states.publish(js(model.joint_names, q_meas, v_meas, sec=sec, nanosec=nanosec))
        wait_until(lambda: len(out) == k + 1 and len(err) == k + 1, what=f'outputs at {t}')
        got = out[-1]
        assert (got.header.stamp.sec, got.header.stamp.nanosec) == (sec, nanosec)
        if t < 11.0:       # from the measured state at receipt to the first point
            spline = CubicHermiteSpline([10.0, 11.0], [q_meas, p1], [v_meas, v1])
        elif t < 12.0:
            spline = CubicHermiteSpline([11.0, 12.0], [p1, p2], [v1, v2])
        q_ref = spline(t) if t < 12.0 else p2
        v_ref = spline.derivative()(t) if t < 12.0 else np.zeros(7)
        a_ref = spline.derivative(2)(t) if t < 12.0 else np.zeros(7)
        tau = rbd.inverse_dynamics(model, q_ref, v_ref, a_ref)
        assert close(got.position, q_ref) and close(got.velocity, v_ref)
        assert close(got.effort, tau)
        assert close(err[-1].position, q_ref - q_meas) and close(err[-1].velocity, v_ref - v_meas)
        # the command: ID plus what cancels the URDF joint damping and friction
        # (compensate_friction, default true) at the reference velocity
        command = tau + joint_friction_compensation(model, v_ref, np.arange(7))
        assert np.any(command != tau) or t >= 12.0
        wait_until(lambda: close(cmd[-1].data, command[idx]), what='the command at that stamp')
    assert Trajectory is not None
    # rejects keep the active reference: unknown joint, times not increasing, NaN, lengths
    bad = [JointTrajectory(joint_names=['ghost'], points=[JointTrajectoryPoint(positions=[0.0])]),
           JointTrajectory(joint_names=['joint_1'], points=[
               JointTrajectoryPoint(positions=[0.0], time_from_start=Duration(sec=2)),
               JointTrajectoryPoint(positions=[0.1], time_from_start=Duration(sec=1))]),
           JointTrajectory(joint_names=['joint_1'], points=[JointTrajectoryPoint(positions=[math.nan])]),
           JointTrajectory(joint_names=['joint_1', 'joint_2'], points=[JointTrajectoryPoint(positions=[0.0])])]
    for b in bad:
        ref.publish(b)
    wait_until(lambda: sum(node.stats.rejected.values()) == 4, what='4 rejections')
    assert dict(node.stats.rejected) == {'unknown_joints': 1, 'time_not_increasing': 1,
                                         'non_finite': 1, 'length_mismatch': 1}
    assert node.references == 1


def test_trajectory_annotated_with_inverse_dynamics_for_jtc(ros):
    """~/trajectory_in comes back on ~/trajectory_out: same joints, points and times,
    positions echoed, missing velocities and accelerations filled from the splines, every
    point's effort = the core's ID at that point (other joints at their measured position),
    plus the URDF joint damping and friction it cancels (compensate_friction)."""
    from rbd_ros.control import Trajectory
    model = rbd.Model.from_urdf(ARM)
    ros.start(DynamicsNode, {'robot_description': ARM, 'joint_states_qos': 'reliable'})
    annotated = ros.collect(JointTrajectory, '/rbd_dynamics/trajectory_out')
    states = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    pub = ros.publisher(JointTrajectory, '/rbd_dynamics/trajectory_in', RELIABLE, wait_for=1)
    q_meas = np.full(7, 0.3)
    states.publish(js(model.joint_names, q_meas, sec=1))
    names = ['joint_2', 'joint_4']
    rng = np.random.default_rng(5)
    pos, vel = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (3, 2))
    msg = JointTrajectory(joint_names=names, points=[
        JointTrajectoryPoint(positions=list(pos[k]), velocities=list(vel[k]),
                             time_from_start=Duration(sec=k + 1)) for k in range(3)])
    publish_until(pub, msg, lambda: annotated, what='the annotated trajectory')
    got = annotated[-1]
    assert got.joint_names == names and len(got.points) == 3
    traj = Trajectory.from_points(0.0, [1.0, 2.0, 3.0], pos, list(vel), None)
    for k, point in enumerate(got.points):
        assert point.time_from_start.sec == k + 1 and close(point.positions, pos[k])
        assert close(point.velocities, vel[k])
        a_k = traj.sample_at_knot(k + 1)[2]
        assert close(point.accelerations, a_k)
        q, v, a = q_meas.copy(), np.zeros(7), np.zeros(7)
        q[[1, 3]], v[[1, 3]], a[[1, 3]] = pos[k], vel[k], a_k
        assert close(point.effort, rbd.inverse_dynamics(model, q, v, a)[[1, 3]]
                     + joint_friction_compensation(model, vel[k], [1, 3]))


def test_gravity_commands_and_stale_input(ros):
    model = rbd.Model.from_urdf(ARM)
    node = ros.start(DynamicsNode, {'robot_description': ARM, 'command_source': 'gravity',
                                    'input_timeout': 0.3, 'diagnostics_period': 0.2})
    cmd, diag = ros.collect(Float64MultiArray, CMD), ros.collect(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    q = np.linspace(-0.5, 0.5, 7)
    pub.publish(js(model.joint_names, q, sec=1))
    wait_until(lambda: cmd, what='effort commands')
    assert close(cmd[0].data, rbd.gravity_torques(model, q))
    wait_until(lambda: diagnostics_values(diag).get('stale_input') == 'true',
               what='stale input in diagnostics')
    assert node.is_stale()
    values = diagnostics_values(diag)
    assert values['model'] == 'rbd_arm7' and values['nv'] == '7'
    for key in ('input_rate_hz', 'compute_time_p50_us', 'compute_time_p99_us', 'rejected_total',
                'unknown_joint_names'):
        assert key in values


def test_floating_base_model(ros):
    model = rbd.Model.from_urdf(QUAD2, floating_base=True)
    ros.start(DynamicsNode, {'robot_description': QUAD2, 'floating_base': True,
                             'joint_states_qos': 'reliable'})
    gravity, fd = ros.collect(JointState, GRAVITY), ros.collect(JointTrajectory, FD)
    out = ros.collect(JointState, ID)
    states = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    base = ros.publisher(Odometry, '/rbd_dynamics/base_state', RELIABLE, wait_for=1)
    ref = ros.publisher(JointTrajectory, '/rbd_dynamics/reference', RELIABLE, wait_for=1)
    names = list(model.joint_names)
    qj, vj, tau_j = np.array([0.2, -0.7, -0.1, 0.9]), np.array([0.5, -1, 2, 0.1]), \
        np.array([1.0, -2.0, 0.5, 3.0])
    states.publish(js(names, qj, vj, tau_j, sec=1))
    # no base state yet: outputs wait for it
    wait_until(lambda: True, what='')
    quat = np.array([0.1, -0.2, 0.3, 0.9])
    quat /= np.linalg.norm(quat)
    odom = Odometry()
    odom.header.stamp = Time(sec=1)
    p, o = odom.pose.pose.position, odom.pose.pose.orientation
    p.x, p.y, p.z = 0.3, -0.2, 0.5
    o.x, o.y, o.z, o.w = quat
    lin, ang = odom.twist.twist.linear, odom.twist.twist.angular
    lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = 0.1, 0.2, -0.3, 0.4, -0.5, 0.6
    base.publish(odom)
    wait_until(lambda: ros.nodes[-1].base is not None, what='base state received')
    assert not gravity   # nothing published before the base state
    states.publish(js(names, qj, vj, tau_j, sec=2))
    wait_until(lambda: gravity and fd, what='floating-base outputs')
    q = np.concatenate([[0.3, -0.2, 0.5], quat, qj])
    v = np.concatenate([[0.1, 0.2, -0.3, 0.4, -0.5, 0.6], vj])
    tau = np.concatenate([np.zeros(6), tau_j])
    assert list(gravity[0].name) == names
    assert close(gravity[0].effort, rbd.gravity_torques(model, q)[6:])
    assert close(fd[0].points[0].accelerations, rbd.forward_dynamics(model, q, v, tau)[6:])
    # a reference that starts later: until then the state measured at receipt is held (joint
    # velocities and accelerations zero); its inverse dynamics uses the measured base state
    msg = JointTrajectory(joint_names=names)
    msg.header.stamp = Time(sec=100)
    msg.points = [JointTrajectoryPoint(positions=[0.0] * 4, time_from_start=Duration(sec=1))]
    ref.publish(msg)
    wait_until(lambda: ros.nodes[-1].references == 1, what='the reference')
    states.publish(js(names, qj, vj, tau_j, sec=3))
    wait_until(lambda: out, what='floating-base inverse dynamics')
    v_hold = np.concatenate([v[:6], np.zeros(4)])
    assert close(out[0].effort, rbd.inverse_dynamics(model, q, v_hold, np.zeros(10))[6:])


def test_bad_input_is_rejected_counted_and_survived(ros):
    model = rbd.Model.from_urdf(ARM)
    node = ros.start(DynamicsNode, {'robot_description': ARM, 'joint_states_qos': 'reliable'})
    gravity = ros.collect(JointState, GRAVITY)
    pub = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    names = list(model.joint_names)
    good = np.full(7, 0.2)
    pub.publish(js(names, good, sec=10))
    wait_until(lambda: len(gravity) == 1, what='first output')
    bad = [js(names, good[:6], sec=11),                               # length mismatch
           js(names, [math.nan] + [0.0] * 6, sec=12),                  # NaN
           js(names, good, velocity=[math.inf] * 7, sec=13),           # inf
           js(names, good, sec=9)]                                     # time going backwards
    for msg in bad:
        pub.publish(msg)
    pub.publish(js(names + ['ghost'], list(good) + [1.0], sec=20))     # unknown name: ignored
    wait_until(lambda: len(gravity) == 2, what='output after the bad messages')
    assert gravity[1].header.stamp.sec == 20
    assert dict(node.stats.rejected) == {'length_mismatch': 1, 'non_finite': 2,
                                         'time_backwards': 1}
    assert node.stats.unknown_name_count == 1 and node.stats.unknown_name_sample == ['ghost']
    # reference with a bad shape / no points / NaN
    ref = ros.publisher(JointTrajectory, '/rbd_dynamics/reference', RELIABLE, wait_for=1)
    ref.publish(JointTrajectory(joint_names=names))
    ref.publish(JointTrajectory(joint_names=names,
                                points=[JointTrajectoryPoint(positions=[0.0])]))
    ref.publish(JointTrajectory(joint_names=names,
                                points=[JointTrajectoryPoint(positions=[math.nan] * 7)]))
    wait_until(lambda: sum(node.stats.rejected.values()) == 7, what='reference rejections')
    assert node.stats.rejected['empty_reference'] == 1


def test_never_publishes_non_finite(ros, monkeypatch):
    node = ros.start(DynamicsNode, {'robot_description': ARM, 'joint_states_qos': 'reliable'})
    gravity = ros.collect(JointState, GRAVITY)
    pub = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    monkeypatch.setattr(rbd, 'gravity_torques', lambda model, q: np.full(model.nv, np.nan))
    pub.publish(js(rbd.Model.from_urdf(ARM).joint_names, np.zeros(7), sec=1))
    wait_until(lambda: node.stats.non_finite_outputs == 1, what='dropped output')
    monkeypatch.undo()
    pub.publish(js(rbd.Model.from_urdf(ARM).joint_names, np.zeros(7), sec=2))
    wait_until(lambda: gravity, what='finite output')
    assert all(math.isfinite(x) for x in gravity[0].effort)


def test_description_from_topic_replaced_and_bad_one_ignored(ros):
    node = ros.start(DynamicsNode, {'joint_states_qos': 'reliable'})
    gravity = ros.collect(JointState, GRAVITY)
    desc = ros.publisher(String, 'robot_description', LATCHED_QOS)
    desc.publish(String(data=TREE3))
    wait_until(lambda: node.runtime is not None, what='model from the topic')
    tree = rbd.Model.from_urdf(TREE3)
    pub = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    pub.publish(js(tree.joint_names, [0.1, 0.2, 0.3, 0.05], sec=1))
    wait_until(lambda: gravity, what='tree3 output')
    assert list(gravity[0].name) == list(tree.joint_names)
    # a description that fails to parse keeps the previous model
    desc.publish(String(data='<robot name="broken"><link name="a"/>'))
    wait_until(lambda: node.stats.description_errors == 1, what='description error')
    assert node.runtime.robot.model.name == 'tree3'
    # replaced at run time by the arm
    desc.publish(String(data=ARM))
    wait_until(lambda: node.runtime.robot.model.name == 'rbd_arm7', what='model swap')
    arm = rbd.Model.from_urdf(ARM)
    q = np.linspace(0.1, 0.7, 7)
    pub.publish(js(arm.joint_names, q, sec=2))
    wait_until(lambda: len(gravity) == 2, what='arm output')
    assert list(gravity[1].name) == list(arm.joint_names)
    assert close(gravity[1].effort, rbd.gravity_torques(arm, q))


def test_description_from_parameter_replaced_at_run_time(ros):
    node = ros.start(DynamicsNode, {'robot_description': ARM, 'joint_states_qos': 'reliable'})
    gravity = ros.collect(JointState, GRAVITY)
    # the parameter wins over the topic
    desc = ros.publisher(String, 'robot_description', LATCHED_QOS)
    desc.publish(String(data=TREE3))
    result = node.set_parameters([Parameter('robot_description', value='<robot')])[0]
    # refused when set (robot_state_publisher's behaviour): the parameter still describes the
    # running model
    assert not result.successful and 'malformed XML' in result.reason
    assert node.get_parameter('robot_description').value == ARM
    assert node.runtime.robot.model.name == 'rbd_arm7' and node.stats.description_errors == 1
    assert node.set_parameters([Parameter('robot_description', value=TREE3)])[0].successful
    assert node.runtime.robot.model.name == 'tree3'
    tree = rbd.Model.from_urdf(TREE3)
    pub = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    q = [0.1, 0.2, 0.3, 0.05]
    pub.publish(js(tree.joint_names, q, sec=1))
    wait_until(lambda: gravity, what='output of the new model')
    assert close(gravity[0].effort, rbd.gravity_torques(tree, np.array(q)))
    assert node.runtime.robot.generation == 2


def test_invalid_parameters_raise():
    import rclpy
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=0)
    try:
        with pytest.raises(ValueError, match='command_source'):
            DynamicsNode(context=ctx, parameter_overrides=[
                Parameter('command_source', value='everything')])
        with pytest.raises(ValueError, match='gravity'):
            DynamicsNode(context=ctx, parameter_overrides=[
                Parameter('gravity', value=[0.0, 1.0])])
    finally:
        ctx.try_shutdown()


def latest_status(box, node):
    for arr in reversed(box):
        for st in arr.status:
            if node in st.name:
                return st
    return None


def test_nodes_say_what_they_wait_for_and_what_is_stale(ros, capfd):
    """One INFO line for each input a node waits for (by its resolved topic) and one when it
    comes; /diagnostics names a missing input, frames_node's too."""
    from rbd_ros.nodes.frames import FramesNode
    model = rbd.Model.from_urdf(QUAD2, floating_base=True)
    diag = ros.collect(DiagnosticArray, '/diagnostics')
    d = ros.start(DynamicsNode, {'robot_description': QUAD2, 'floating_base': True,
                                 'joint_states_qos': 'reliable', 'input_timeout': 0.4,
                                 'command_source': 'gravity', 'diagnostics_period': 0.1})
    f = ros.start(FramesNode, {'robot_description': QUAD2, 'input_timeout': 0.4,
                               'diagnostics_period': 0.1})
    wait_until(lambda: latest_status(diag, 'rbd_frames') is not None, what='frames diagnostics')
    st = latest_status(diag, 'rbd_frames')
    assert st.message == 'input stale: no joint_states yet on /joint_states', st.message
    assert {kv.key: kv.value for kv in st.values}['stale_input'] == 'true'
    wait_until(lambda: latest_status(diag, 'rbd_dynamics') is not None, what='diagnostics')
    assert latest_status(diag, 'rbd_dynamics').message == \
        'waiting for the floating base\'s state on /rbd_dynamics/base_state (nav_msgs/Odometry)'
    states = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=2)
    base = ros.publisher(Odometry, '/rbd_dynamics/base_state', RELIABLE, wait_for=1)
    odom = Odometry()
    odom.pose.pose.orientation.w = 1.0
    msg = js(model.joint_names, np.zeros(len(model.joint_names)))

    for _ in range(20):                 # joint_states first: the node says it still waits
        states.publish(msg)
        time.sleep(0.05)

    def fresh():
        states.publish(msg)
        base.publish(odom)
        return all(latest_status(diag, n).message.startswith('running')
                   for n in ('rbd_dynamics', 'rbd_frames'))
    wait_until(fresh, what='both nodes running')
    # silence: both say which input is missing, and for how long
    wait_until(lambda: latest_status(diag, 'rbd_frames').message.startswith(
        'input stale: no joint_states on /joint_states for'), what='frames stale')
    wait_until(lambda: latest_status(diag, 'rbd_dynamics').message.startswith(
        'input stale: no joint_states on /joint_states for'), what='dynamics stale')
    st = latest_status(diag, 'rbd_dynamics')
    assert st.message.endswith('(input_timeout 0.4 s); ~/effort_commands stopped'), st.message
    assert {kv.key: kv.value for kv in st.values}['stale_reason'].startswith('no joint_states')
    ros.remove(d)
    ros.remove(f)
    err = capfd.readouterr().err
    for line in ("[rbd_dynamics]: waiting for the floating base's state on "
                 "/rbd_dynamics/base_state (nav_msgs/Odometry): outputs start with it",
                 '[rbd_dynamics]: joint_states received on /joint_states: still waiting for '
                 "the floating base's state on /rbd_dynamics/base_state (nav_msgs/Odometry)",
                 '[rbd_dynamics]: floating base state received on /rbd_dynamics/base_state: '
                 'publishing',
                 '[rbd_frames]: joint_states received on /joint_states: publishing'):
        assert err.count(line) == 1, (line, err)
