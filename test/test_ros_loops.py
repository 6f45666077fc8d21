"""The nodes with a robot that closes kinematic loops (issue 29), over real DDS: the bundled
parallel ankle, joint_states that carry only its two motors. dynamics_node publishes at the
motors what constrained inverse dynamics gives at the pose close_loops closes; frames_node
places the passive links where close_loops puts them; a joint_states that cannot close is
refused and counted, never published from."""
import pathlib

import numpy as np
import pytest

pytest.importorskip('rclpy')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

import rbd_ros.dynamics as rbd  # noqa: E402
from conftest import js, publish_until, wait_until  # noqa: E402
from rbd_ros.nodes.dynamics import DynamicsNode  # noqa: E402
from rbd_ros.nodes.frames import FramesNode  # noqa: E402
from rbd_ros.ros.qos import LATCHED_QOS, TF_QOS  # noqa: E402
from test_ros_frames import world_poses  # noqa: E402

pytestmark = pytest.mark.timeout(120)

ANKLE = (pathlib.Path(__file__).resolve().parent.parent / 'rbd_ros' / 'robots'
         / 'parallel_ankle.urdf').read_text()
GRAVITY = '/rbd_dynamics/gravity_torques'
CMD = '/rbd_dynamics/effort_commands'
BEST_EFFORT = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
MOTORS = ['motor_left', 'motor_right']
#: motor angles the node is sent, one pose per message (pitch, roll, both)
POSES = [(0.3, -0.2), (0.25, -0.1), (-0.2, -0.2), (0.1, 0.15)]
#: motor angles the rods cannot reach: the ankle twisted beyond its rods' length
UNREACHABLE = (2.0, -2.0)


def closed(model, motors):
    """The ankle's q with the motors at ``motors``, the rest closed by the core."""
    q = model.neutral()
    q[[model.joint[m].q_index for m in MOTORS]] = motors
    return rbd.close_loops(model, q, hold=MOTORS)


def latest_values(box, node):
    for arr in reversed(box):
        for st in arr.status:
            if node in st.name:
                return {kv.key: kv.value for kv in st.values}
    return {}


@pytest.mark.parametrize('actuated', [[], ['motor_right', 'motor_left']],
                         ids=['transmissions', 'parameter_order'])
def test_dynamics_node_publishes_gravity_at_the_motors_from_motor_only_joint_states(ros, actuated):
    """gravity_torques and the gravity command: for the motors only (in actuated_joints' order,
    the URDF's <transmission> order by default), equal to constrained_inverse_dynamics at the
    closed pose to 1e-9; the passive joints never needed a value."""
    model = rbd.Model.from_urdf(ANKLE)
    params = {'robot_description': ANKLE, 'command_source': 'gravity',
              'diagnostics_period': 0.2}
    if actuated:         # (an empty list would be a byte array to rclpy)
        params['actuated_joints'] = actuated
    ros.start(DynamicsNode, params)
    gravity, cmd = ros.collect(JointState, GRAVITY), ros.collect(Float64MultiArray, CMD)
    diag = ros.collect(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(JointState, 'joint_states', BEST_EFFORT, wait_for=1)
    order = actuated or MOTORS
    for k, motors in enumerate(POSES):
        publish_until(pub, js(MOTORS[::-1], motors[::-1], sec=10 + k),
                      lambda: gravity and gravity[-1].header.stamp.sec == 10 + k and cmd,
                      what='gravity torques')
        q = closed(model, motors)
        expected = rbd.constrained_inverse_dynamics(model, q, np.zeros(8), np.zeros(8), order)
        msg = gravity[-1]
        assert list(msg.name) == order
        assert np.allclose(msg.position, [motors[MOTORS.index(n)] for n in order], atol=0)
        assert np.allclose(msg.effort, expected, rtol=0, atol=1e-9), (msg.effort, expected)
        wait_until(lambda: np.allclose(cmd[-1].data, expected, rtol=0, atol=1e-9),
                   what='the gravity command at the motors')
    # the tree's gravity at the motors is not what holds the ankle (the rods carry the foot)
    tree = rbd.gravity_torques(model, q)[[model.joint[n].v_index for n in order]]
    assert np.abs(tree - expected).max() > 1e-3
    wait_until(lambda: latest_values(diag, 'rbd_dynamics').get('actuated_joints')
               == ', '.join(order), what='the actuated joints in /diagnostics')
    values = latest_values(diag, 'rbd_dynamics')
    assert values['closed_loops'] == 'rod_left_ball, rod_right_ball'
    assert 'rejected_loops_open' not in values


def test_dynamics_node_refuses_and_counts_joint_states_that_cannot_close(ros):
    """Motors beyond the rods' reach: refused (rejected_loops_open), nothing published with
    that stamp, the node serves the next reachable message from the last closed pose."""
    model = rbd.Model.from_urdf(ANKLE)
    with pytest.raises(ValueError, match='stays open'):
        closed(model, UNREACHABLE)
    ros.start(DynamicsNode, {'robot_description': ANKLE, 'command_source': 'gravity',
                             'diagnostics_period': 0.2})
    gravity, cmd = ros.collect(JointState, GRAVITY), ros.collect(Float64MultiArray, CMD)
    diag = ros.collect(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(JointState, 'joint_states', BEST_EFFORT, wait_for=1)
    publish_until(pub, js(MOTORS, POSES[0], sec=10), lambda: gravity and cmd, what='gravity')
    published, commands = len(gravity), len(cmd)
    publish_until(pub, js(MOTORS, UNREACHABLE, sec=11),
                  lambda: int(latest_values(diag, 'rbd_dynamics').get('rejected_loops_open',
                                                                      0)) >= 1,
                  what='rejected_loops_open in /diagnostics')
    assert all(m.header.stamp.sec != 11 for m in gravity)
    assert len(gravity) == published and len(cmd) == commands
    publish_until(pub, js(MOTORS, POSES[1], sec=12),
                  lambda: gravity and gravity[-1].header.stamp.sec == 12, what='gravity again')
    expected = rbd.constrained_inverse_dynamics(model, closed(model, POSES[1]), np.zeros(8),
                                                np.zeros(8))
    assert np.allclose(gravity[-1].effort, expected, rtol=0, atol=1e-9)
    assert all(np.all(np.isfinite(m.effort)) for m in gravity)


def test_dynamics_node_computed_torque_is_constrained_inverse_dynamics(ros):
    """computed_torque on the motors: a = kp e + kd e_dot at the motors (the reference holds
    the first measured pose), the passive joints' velocities and accelerations those the loops
    allow, the torques constrained inverse dynamics: checked against the core, with K's null
    space solved here by least squares."""
    model = rbd.Model.from_urdf(ANKLE)
    kp, kd = 50.0, 5.0
    ros.start(DynamicsNode, {'robot_description': ANKLE, 'command_source': 'computed_torque',
                             'kp': [kp], 'kd': [kd], 'compensate_friction': False,
                             'saturate_efforts': False})
    cmd = ros.collect(Float64MultiArray, CMD)
    pub = ros.publisher(JointState, 'joint_states', BEST_EFFORT, wait_for=1)
    hold = POSES[0]
    publish_until(pub, js(MOTORS, hold, [0.0, 0.0], sec=10), lambda: cmd, what='commands')
    motors, motor_v = POSES[1], np.array([0.4, -0.3])
    count = len(cmd)
    publish_until(pub, js(MOTORS, motors, motor_v, sec=11), lambda: len(cmd) > count,
                  what='a command')
    q = closed(model, motors)
    held = [model.joint[m].v_index for m in MOTORS]
    free = [i for i in range(8) if i not in held]
    K = rbd.constraint_jacobian(model, q)
    v = np.zeros(8)
    v[held] = motor_v
    v[free] = np.linalg.lstsq(K[:, free], -K[:, held] @ motor_v, rcond=None)[0]
    a = np.zeros(8)
    a[held] = kp * (np.array(hold) - motors) + kd * (0.0 - motor_v)
    k = rbd.constraint_bias(model, q, v)
    a[free] = np.linalg.lstsq(K[:, free], k - K[:, held] @ a[held], rcond=None)[0]
    expected = rbd.constrained_inverse_dynamics(model, q, v, a)
    wait_until(lambda: np.allclose(cmd[-1].data, expected, rtol=0, atol=1e-8),
               what=f'the computed torque {expected}')


def test_frames_node_places_the_passive_links_where_close_loops_puts_them(ros):
    model = rbd.Model.from_urdf(ANKLE)
    ros.start(FramesNode, {'robot_description': ANKLE, 'diagnostics_period': 0.2})
    tf = ros.collect(TFMessage, '/tf', TF_QOS)
    static = ros.collect(TFMessage, '/tf_static', LATCHED_QOS)
    diag = ros.collect(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(JointState, 'joint_states', BEST_EFFORT, wait_for=1)
    wait_until(lambda: static, what='/tf_static')
    for k, motors in enumerate(POSES):
        publish_until(pub, js(MOTORS, motors, sec=20 + k),
                      lambda: tf and tf[-1].transforms[0].header.stamp.sec == 20 + k, what='/tf')
        got = world_poses(list(tf[-1].transforms) + list(static[0].transforms))
        expected = rbd.frame_poses(model, closed(model, motors))
        assert set(got) == set(model.frame_names)
        for link in model.frame_names:
            assert np.allclose(got[link], expected[link], atol=1e-9), link
    count = len(tf)
    publish_until(pub, js(MOTORS, UNREACHABLE, sec=30),
                  lambda: int(latest_values(diag, 'rbd_frames').get('rejected_loops_open',
                                                                    0)) >= 1,
                  what='rejected_loops_open in /diagnostics')
    assert len(tf) == count and all(t.header.stamp.sec != 30 for m in tf for t in m.transforms)


def test_dynamics_node_forward_dynamics_at_the_motors_and_no_reference_on_passive_joints(ros):
    """~/forward_dynamics: the motors' accelerations under their measured efforts, from
    constrained forward dynamics at rest; a ~/reference naming a passive joint is refused
    (rejected_passive_joints)."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    model = rbd.Model.from_urdf(ANKLE)
    ros.start(DynamicsNode, {'robot_description': ANKLE, 'diagnostics_period': 0.2})
    fd = ros.collect(JointTrajectory, '/rbd_dynamics/forward_dynamics')
    diag = ros.collect(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(JointState, 'joint_states', BEST_EFFORT, wait_for=1)
    effort = [-2.5, -3.5]
    publish_until(pub, js(MOTORS, POSES[0], [0.0, 0.0], effort, sec=10), lambda: fd,
                  what='forward dynamics')
    q = closed(model, POSES[0])
    tau = np.zeros(8)
    tau[[model.joint[m].v_index for m in MOTORS]] = effort
    qdd = rbd.constrained_forward_dynamics(model, q, np.zeros(8), tau)
    point = fd[-1].points[0]
    assert list(fd[-1].joint_names) == MOTORS
    assert np.allclose(point.accelerations, qdd[[model.joint[m].v_index for m in MOTORS]],
                       rtol=0, atol=1e-9)
    assert np.allclose(point.effort, effort, rtol=0, atol=0)
    ref = ros.publisher(JointTrajectory, '/rbd_dynamics/reference', wait_for=1)
    msg = JointTrajectory(joint_names=['motor_left', 'ankle_pitch'], points=[JointTrajectoryPoint(
        positions=[0.1, 0.1], time_from_start=Duration(sec=1))])
    publish_until(ref, msg, lambda: int(latest_values(diag, 'rbd_dynamics').get(
        'rejected_passive_joints', 0)) >= 1, what='rejected_passive_joints')


def test_sim_node_simulates_the_ankle_from_its_motors_and_publishes_every_joint(ros):
    """sim_node on the parallel ankle: command_joints default to the motors (the URDF's
    <transmission>s), initial_positions put them at a pose and the loops close the rest;
    joint_states carry every joint (the initial state, held until the first command, exactly
    the closed pose), on the closed loops (residual below 1e-6 m in every message);
    driven by ~/joint_commands at the motors (their pose, through the position gains, plus
    constrained_inverse_dynamics' gravity torques as feedforward), the foot stays where it was
    put (the motors within 1e-3 rad after 1 s of simulated time: the feedforward holds it, the
    gains only keep the balance stable) and the motors' applied efforts are the feedforward's
    (within 1e-2 N m)."""
    from rbd_ros.nodes.sim import SimNode
    model = rbd.Model.from_urdf(ANKLE)
    motors = (0.3, -0.2)
    q0 = closed(model, motors)
    hold = rbd.constrained_inverse_dynamics(model, q0, np.zeros(8), np.zeros(8), MOTORS)
    ros.start(SimNode, {'robot_description': ANKLE, 'initial_positions': list(motors),
                        'publish_rate': 200.0, 'friction': False, 'wait_for_command': True,
                        'command_timeout': 10.0})     # (the command is re-sent every 0.5 s)
    states = ros.collect(JointState, 'joint_states')
    cmd = ros.publisher(JointState, '/rbd_sim/joint_commands', wait_for=1)
    wait_until(lambda: states, what='joint_states')
    names = list(states[-1].name)
    assert sorted(names) == sorted(model.joint_names)
    slot = [names.index(n) for n in model.joint_names]
    first = np.array(states[0].position)[slot]
    assert np.allclose(first, q0, rtol=0, atol=1e-9)      # closed where the motors were put
    start = len(states)
    publish_until(cmd, JointState(name=MOTORS, position=list(motors),
                                  effort=[float(x) for x in hold]),
                  lambda: len(states) > start + 250, what='1 s of held joint_states')
    for msg in states[start:]:
        q = np.array(msg.position)[slot]
        assert np.abs(rbd.constraint_residual(model, q)).max() < 1e-6
    last = np.array(states[-1].position)[slot]
    assert np.abs(last[[model.joint[m].q_index for m in MOTORS]] - motors).max() < 1e-3
    applied = np.array(states[-1].effort)[[names.index(m) for m in MOTORS]]
    assert np.allclose(applied, hold, rtol=0, atol=1e-2), (applied, hold)


def test_sim_node_refuses_commands_and_states_for_the_passive_joints_alone(ros):
    """A loop's passive joint has no motor: a joint command naming it is refused
    (rejected_passive_joints), not dropped in silence; a set_state that would put it elsewhere
    than the motors do is refused too, while a whole state whose passive joints are where the
    loops put them (a recorded joint_states) is taken."""
    from rbd_ros.nodes.sim import SimNode
    model = rbd.Model.from_urdf(ANKLE)
    node = ros.start(SimNode, {'robot_description': ANKLE, 'initial_positions': [0.3, -0.2],
                               'publish_rate': 100.0, 'wait_for_command': True})
    states = ros.collect(JointState, 'joint_states')
    commands = ros.publisher(JointState, '/rbd_sim/joint_commands', wait_for=1)
    set_state = ros.publisher(JointState, '/rbd_sim/set_state', wait_for=1)
    wait_until(lambda: states, what='joint_states')
    rejected = node.stats.rejected
    publish_until(commands, JointState(name=['ankle_pitch'], position=[0.2]),
                  lambda: rejected.get('passive_joints', 0) >= 1, what='a refused command')
    publish_until(set_state, JointState(name=['ankle_pitch'], position=[0.2]),
                  lambda: rejected.get('passive_joints', 0) >= 2, what='a refused state')
    whole = closed(model, (0.1, 0.15))
    names = model.joint_names
    publish_until(set_state, JointState(name=names, position=[float(x) for x in whole]),
                  lambda: states and np.allclose(
                      np.array(states[-1].position)[[list(states[-1].name).index(n)
                                                      for n in names]], whole, atol=1e-9),
                  what='the whole state taken')
    assert rejected.get('passive_joints', 0) >= 2 and not rejected.get('loops_open', 0)
