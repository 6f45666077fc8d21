"""The nodes on real robot descriptions: the public robots load in every node, their warnings
are logged once and counted in /diagnostics, ``strict`` refuses them (frames_node only for
what bears on kinematics), and descriptions come from a file parameter too."""
import os

import numpy as np
import pytest

pytest.importorskip('rclpy')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

import rbd_ros.dynamics as rbd  # noqa: E402
from conftest import ARM, TREE3, js, publish_until, wait_until  # noqa: E402
from corpus import robots_directory  # noqa: E402
from rbd_ros.nodes.dynamics import DynamicsNode  # noqa: E402
from rbd_ros.nodes.frames import FramesNode  # noqa: E402
from rbd_ros.nodes.sim import SimNode  # noqa: E402
from rbd_ros.ros.params import ParameterError  # noqa: E402
from rbd_ros.ros.qos import TF_QOS  # noqa: E402

pytestmark = pytest.mark.timeout(120)

ROBOTS = robots_directory()
# the nine public robots that refused to load before (or load with warnings), as published
NINE = {'double pendulum': ('double_pendulum_description/urdf/double_pendulum.urdf', False),
        'UR5': ('ur_description/urdf/ur5_robot.urdf', False),
        'Panda arm': (os.path.join(os.path.dirname(__file__), 'data', 'robots', 'panda.urdf'), False),
        'Panda with fingers': ('panda_description/urdf/panda.urdf', False),
        'Kinova': ('kinova_description/robots/kinova.urdf', False),
        'TIAGo': ('tiago_description/robots/tiago.urdf', False),
        'Solo-12': ('solo_description/robots/solo12.urdf', True),
        'ANYmal C': ('anymal_c_simple_description/urdf/anymal.urdf', True),
        'Talos': ('talos_data/robots/talos_reduced.urdf', True)}


def path_of(name):
    if ROBOTS is None:
        pytest.skip('example-robot-data is not installed')
    return os.path.join(ROBOTS, NINE[name][0])


@pytest.mark.parametrize('name', list(NINE))
def test_the_nine_public_robots_load_in_every_node(ros, name):
    path, floating = path_of(name), NINE[name][1]
    warnings = {f: len(rbd.Model.from_urdf(path, floating_base=f).warnings) for f in (False, True)}
    nodes = [ros.start(DynamicsNode, {'robot_description_file': path, 'floating_base': floating},
                       node_name=f'dyn_{abs(hash(name))}'),
             ros.start(FramesNode, {'robot_description_file': path},
                       node_name=f'frames_{abs(hash(name))}'),
             ros.start(SimNode, {'robot_description_file': path},
                       node_name=f'sim_{abs(hash(name))}')]
    for node in nodes:
        robot = node.robot
        assert robot is not None and robot.source == f'file {path}'
        assert node.stats.model_warnings == warnings[robot.model.floating_base]
        assert node.stats.description_errors == 0
    assert nodes[0].robot.model.floating_base == floating


def _diagnostics(box, node_name):
    for arr in reversed(box):
        for st in arr.status:
            if node_name in st.name:
                return {kv.key: kv.value for kv in st.values}, st
    return None, None


def test_warnings_are_logged_once_counted_and_reported(ros):
    path = path_of('ANYmal C')
    model = rbd.Model.from_urdf(path, floating_base=True)
    assert model.warnings, 'ANYmal C has a depth camera whose inertia is not physical'
    diag = ros.collect(DiagnosticArray, '/diagnostics')
    node = ros.start(DynamicsNode, {'robot_description_file': path, 'floating_base': True,
                                    'diagnostics_period': 0.2, 'input_timeout': 0.0})
    logged = []
    original = node.get_logger().warning
    node.get_logger().warning = lambda message, **kw: (logged.append(message), original(message, **kw))
    wait_until(lambda: _diagnostics(diag, 'rbd_dynamics')[0], what='diagnostics')
    values, status = _diagnostics(diag, 'rbd_dynamics')
    assert values['model_warnings'] == str(len(model.warnings))
    assert values['description_source'] == f'file {path}'
    assert status.level == status.WARN and 'warnings' in status.message
    # a reload of the same file logs its warnings once more, not on every message
    node.set_parameters([Parameter('robot_description_file', value=path)])
    assert [m for m in logged if 'robot description:' in m] == \
        [f'robot description: {w}' for w in model.warnings]


def test_strict_refuses_doubtful_descriptions_and_frames_only_for_kinematics(ros):
    talos = path_of('Talos')
    # Romeo small: two inertias that break the triangle inequality (ANYmal C's five are
    # harmless: each link's welded body is physical, and strict lets them pass)
    romeo = os.path.join(ROBOTS, 'romeo_description/urdf/romeo_small.urdf')
    with pytest.raises(ParameterError, match='robot_description_file: .*triangle inequality.*'
                                             'strict'):
        ros.start(DynamicsNode, {'robot_description_file': romeo, 'strict': True,
                                 'floating_base': True}, node_name='strict_dyn')
    anymal = ros.start(DynamicsNode, {'robot_description_file': path_of('ANYmal C'),
                                      'strict': True, 'floating_base': True},
                       node_name='strict_dyn_anymal')
    assert anymal.robot is not None and anymal.robot.model.warnings
    hand = os.path.join(ROBOTS, 'allegro_hand_description/urdf/allegro_left_hand.urdf')
    assert rbd.Model.from_urdf(hand).warnings          # fingertip inertias: not physical
    frames = ros.start(FramesNode, {'robot_description_file': hand, 'strict': True},
                       node_name='strict_frames')
    assert frames.robot is not None        # an inertia never costs a robot its TF
    with pytest.raises(ParameterError, match='a fixed joint cannot mimic'):
        ros.start(FramesNode, {'robot_description_file': talos, 'strict': True},
                  node_name='strict_frames_talos')
    with pytest.raises(ParameterError, match='strict'):
        ros.start(SimNode, {'robot_description_file': talos, 'strict': True},
                  node_name='strict_sim')


def test_frames_node_serves_tf_for_a_public_robot_that_used_to_be_refused(ros):
    path = path_of('TIAGo')
    model = rbd.Model.from_urdf(path)
    tf = ros.collect(TFMessage, '/tf', TF_QOS)
    ros.start(FramesNode, {'robot_description_file': path, 'joint_states_qos': 'reliable'})
    pub = ros.publisher(JointState, 'joint_states', wait_for=1)
    q = model.random_configuration(3)
    msg = js(model.joint_names, q, sec=4)
    publish_until(pub, msg, lambda: tf, what='TIAGo /tf')
    assert len(tf[-1].transforms) > 10


def test_description_file_parameter_swaps_and_a_bad_one_is_refused_when_set(ros, tmp_path):
    good, bad = tmp_path / 'tree3.urdf', tmp_path / 'bad.urdf'
    good.write_text(TREE3)
    bad.write_text('<robot name="bad"><link name="a"/><link name="a"/></robot>')
    node = ros.start(DynamicsNode, {'robot_description': ARM})
    # robot_description (text) wins over the file while it is set
    assert node.set_parameters([Parameter('robot_description_file', value=str(good))])[0].successful
    assert node.robot.model.name == 'rbd_arm7'
    assert node.set_parameters([Parameter('robot_description', value='')])[0].successful
    node.set_parameters([Parameter('robot_description_file', value=str(good))])
    assert node.robot.model.name == 'tree3' and node.robot.source == f'file {good}'
    result = node.set_parameters([Parameter('robot_description_file', value=str(bad))])[0]
    assert not result.successful and "duplicate link name 'a'" in result.reason
    assert node.get_parameter('robot_description_file').value == str(good)
    result = node.set_parameters([Parameter('robot_description_file', value='/no/such.urdf')])[0]
    assert not result.successful and 'no such file' in result.reason
    assert node.robot.model.name == 'tree3' and node.stats.description_errors == 2
    for name, value in (('input_timeout', 3.0), ('gravity', [0.0, 0.0, -1.0])):
        result = node.set_parameters([Parameter(name, value=value)])[0]
        assert not result.successful and 'read at start-up only' in result.reason


def test_garbage_bytes_are_malformed_input_not_internal_errors(ros):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.serialization import serialize_message
    node = ros.start(DynamicsNode, {'robot_description': ARM, 'joint_states_qos': 'reliable'})
    gravity = ros.collect(JointState, '/rbd_dynamics/gravity_torques')
    raw = ros.probe.create_publisher(JointState, 'joint_states',
                                     QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    wait_until(lambda: raw.get_subscription_count() >= 1, what='subscriber')
    rng = np.random.default_rng(0)
    good = bytes(serialize_message(js([f'joint_{i}' for i in range(1, 8)], [0.1] * 7, sec=1)))
    sent = 0
    for k in range(300):
        data = bytearray(rng.integers(0, 256, size=int(rng.integers(0, 200)), dtype=np.uint8))
        if k % 3 == 0 and data:       # some with a plain-CDR header, some with another one
            data[:4] = b'\x00\x01\x00\x00' if k % 2 else b'\x00\x11\x00\x00'
        if k % 5 == 0:                # truncated real messages
            data = bytearray(good[:int(rng.integers(4, len(good)))])
        raw.publish(bytes(data))
        sent += 1
        if k % 50 == 49:          # (the node's queue keeps the latest 100)
            wait_until(lambda: node.stats.received >= k - 10, what=f'{k} messages received')
    raw.publish(good)
    wait_until(lambda: gravity, what='a good message after the garbage')
    assert node.stats.internal_errors == 0, node.stats.last_error
    # (DDS delivers what it can: an empty payload, or one with a foreign encapsulation, may
    # never reach the node)
    assert node.stats.rejected['malformed'] >= sent // 5, node.stats.rejected
    assert set(node.stats.rejected) <= {'malformed', 'length_mismatch', 'non_finite',
                                         'duplicate_names', 'time_backwards'}


def test_unknown_joint_names_are_counted_with_a_bounded_sample(ros):
    from rbd_ros.ros.diagnostics import UNKNOWN_NAME_LENGTH, UNKNOWN_NAME_SAMPLE
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    node = ros.start(DynamicsNode, {'robot_description': ARM, 'joint_states_qos': 'reliable'})
    pub = ros.publisher(JointState, 'joint_states', wait_for=1,
                        qos=QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    for k in range(200):          # (in batches: the node keeps the latest 100 in its queue)
        pub.publish(js([f'ghost_{k}_' + 'x' * 500], [0.0], sec=k))
        if k % 50 == 49:
            wait_until(lambda: node.stats.unknown_name_count == k + 1, what=f'{k + 1} names')
    wait_until(lambda: node.stats.unknown_name_count == 200, what=f'200 unknown names ({node.stats.received} received, {node.stats.unknown_name_count} unknown, {dict(node.stats.rejected)})')
    sample = node.stats.unknown_name_sample
    assert len(sample) == UNKNOWN_NAME_SAMPLE
    assert all(len(n) <= UNKNOWN_NAME_LENGTH for n in sample)
    assert len(node.stats.key_values()['unknown_joint_name_sample']) <= \
        UNKNOWN_NAME_SAMPLE * (UNKNOWN_NAME_LENGTH + 1)


@pytest.mark.parametrize('node_cls', [FramesNode, SimNode])
def test_diagnostics_period_is_a_parameter_of_every_node(ros, node_cls):
    import time
    diag = ros.collect(DiagnosticArray, '/diagnostics')
    node = ros.start(node_cls, {'robot_description': ARM, 'diagnostics_period': 0.1})
    name = node.get_name()
    wait_until(lambda: _diagnostics(diag, name)[0], what='diagnostics')
    start = len([a for a in diag if any(name in s.name for s in a.status)])
    time.sleep(1.0)
    count = len([a for a in diag if any(name in s.name for s in a.status)]) - start
    assert count >= 5, count


def test_description_file_parameter_takes_a_pipe_and_a_xacro_file(ros, tmp_path):
    """robot_description_file set at run time: a pipe is read once (the set's check and the
    swap use that one read) and a .xacro file is expanded (xacro importable)."""
    from test_description import pipe_path, xacro_files
    node = ros.start(DynamicsNode, {'robot_description': ''})
    path = pipe_path(TREE3.encode())
    assert node.set_parameters([Parameter('robot_description_file', value=path)])[0].successful
    assert node.robot.model.name == 'tree3' and node.robot.source == f'file {path}'
    os.close(int(path.rsplit('/', 1)[1]))
    pytest.importorskip('xacro')
    xacro = xacro_files(tmp_path)
    result = node.set_parameters([Parameter('robot_description_file', value=str(xacro))])[0]
    assert result.successful, result.reason
    assert node.robot.model.name == 'xarm'
    assert node.robot.source == f'file {xacro} (expanded by xacro)'
