"""dynamics_node's per-message outputs go through the serialized fast path (ros/wire.py): over
1,000 joint_states at 1 kHz with every output on (gravity, forward dynamics, external torques,
the wrench estimate, inverse dynamics, tracking error, effort commands), no ROS message is
constructed under ``on_joint_states``, and every output arrives once per input. Real nodes over
real DDS; the message classes' constructors are wrapped to count (and then call the original)."""
import collections
import sys
import time

import numpy as np
import pytest

pytest.importorskip('rclpy')

from builtin_interfaces.msg import Duration  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from conftest import ARM, js, wait_until  # noqa: E402
from rbd_ros.nodes.dynamics import DynamicsNode  # noqa: E402
from rbd_ros.nodes.frames import FramesNode  # noqa: E402
from rbd_ros.ros.node import RbdNode  # noqa: E402

pytestmark = pytest.mark.timeout(180)

RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
NAMES = [f'joint_{i}' for i in range(1, 8)]
#: every per-joint_states output of dynamics_node, with every output switched on
OUTPUTS = {'gravity_torques': JointState, 'forward_dynamics': JointTrajectory,
           'external_torques': JointState, 'external_wrench_estimate': WrenchStamped,
           'inverse_dynamics': JointState, 'tracking_error': JointState,
           'effort_commands': Float64MultiArray}
MESSAGES = 1000


def message_classes() -> list[type]:
    """Every ROS message class loaded in this process: rosidl's generated classes, each made
    by its own ``Metaclass_<Name>``."""
    found = set()
    for name, module in list(sys.modules.items()):
        if '.msg._' not in name and '.srv._' not in name and '.action._' not in name:
            continue
        for obj in list(vars(module).values()):
            if isinstance(obj, type) and type(obj).__name__ == f'Metaclass_{obj.__name__}':
                found.add(obj)
    return sorted(found, key=lambda cls: (cls.__module__, cls.__name__))


@pytest.fixture
def constructions(monkeypatch):
    """Counts ROS message constructions by (where, class): ``where`` is 'on_joint_states' for
    one made anywhere under DynamicsNode's or FramesNode's on_joint_states, 'diagnostics' under
    RbdNode.publish_diagnostics (the control: it builds its messages), else not counted."""
    where = {DynamicsNode.on_joint_states.__code__: 'on_joint_states',
             FramesNode.on_joint_states.__code__: 'on_joint_states',
             RbdNode.publish_diagnostics.__code__: 'diagnostics'}
    counts = collections.Counter()

    def counting(cls, init):
        def __init__(self, *args, **kwargs):
            frame = sys._getframe(1)
            while frame is not None:
                place = where.get(frame.f_code)
                if place is not None:
                    counts[place, cls.__name__] += 1
                    break
                frame = frame.f_back
            init(self, *args, **kwargs)
        return __init__

    classes = message_classes()
    assert JointState in classes and Float64MultiArray in classes and WrenchStamped in classes
    for cls in classes:
        monkeypatch.setattr(cls, '__init__', counting(cls, cls.__init__))
    return counts


def reference_msg():
    """From the measured state over 0.5 s to a pose, then held: inverse_dynamics and
    tracking_error from then on, per joint_states."""
    msg = JointTrajectory(joint_names=list(NAMES))
    msg.points = [JointTrajectoryPoint(positions=[0.2 * (-1) ** i for i in range(7)],
                                       time_from_start=Duration(nanosec=500_000_000))]
    return msg


@pytest.mark.parametrize('source', ['gravity', 'pd_feedforward'])
def test_no_output_builds_a_python_message(ros, constructions, source):
    node = ros.start(DynamicsNode, {
        'robot_description': ARM, 'joint_states_qos': 'reliable', 'command_source': source,
        'external_wrench_frame': 'tool0', 'collision_threshold': [1e6],
        'diagnostics_period': 0.2, 'input_timeout': 30.0})
    boxes = {topic: ros.collect(kind, f'/rbd_dynamics/{topic}', RELIABLE)
             for topic, kind in OUTPUTS.items()}
    states = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    reference = ros.publisher(JointTrajectory, '/rbd_dynamics/reference', RELIABLE, wait_for=1)
    rng = np.random.default_rng(4)
    t0 = 100 * 10**9

    def send(k):
        q, v, tau = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7), rng.uniform(-5, 5, 7)
        sec, nanosec = divmod(t0 + k * 1_000_000, 10**9)
        states.publish(js(NAMES, q, v, tau, sec=sec, nanosec=nanosec))

    send(0)
    wait_until(lambda: boxes['gravity_torques'], what='the first output')
    reference.publish(reference_msg())
    wait_until(lambda: node.references == 1, what='the reference')
    send(1)
    wait_until(lambda: all(boxes.values()), what='every output')
    wait_until(lambda: constructions['diagnostics', 'DiagnosticArray'] > 0,
               what='a /diagnostics message')
    before = {topic: len(box) for topic, box in boxes.items()}
    received, published = node.stats.received, node.stats.published
    constructions.clear()
    start = time.monotonic()
    for k in range(MESSAGES):          # at 1 kHz, in bursts the node (which shares this
        send(k + 2)                    # process and its executor with the probe) keeps up with
        time.sleep(max(0.0, start + k * 1e-3 - time.monotonic()))
        if k % 50 == 49:
            wait_until(lambda k=k: node.stats.received == received + k + 1, timeout=60,
                       what=f'{k + 1} joint_states in the node')
            start = time.monotonic() - (k + 1) * 1e-3
    wait_until(lambda: node.stats.received == received + MESSAGES, timeout=60,
               what=f'{MESSAGES} joint_states in the node')
    # every input gave every output (counted when the callback is done with the last one;
    # what the probe received of them: best effort under load)
    wait_until(lambda: node.stats.published >= published + len(OUTPUTS) * MESSAGES,
               what='the outputs of the last message')
    assert node.stats.published == published + len(OUTPUTS) * MESSAGES
    built = {cls: n for (place, cls), n in constructions.items() if place == 'on_joint_states'}
    assert built == {}, f'messages built per joint_states: {built}'
    # the counting works: the node's own diagnostics still build theirs
    assert constructions['diagnostics', 'DiagnosticArray'] > 0
    wait_until(lambda: all(len(box) > before[topic] for topic, box in boxes.items()),
               what='outputs of the run at the probe')
    assert node.stats.internal_errors == 0 and not node.stats.rejected, \
        (node.stats.last_error, dict(node.stats.rejected))
    last = boxes['external_torques'][-1]
    assert list(last.name) == NAMES and len(last.effort) == 7 and not last.position
    assert boxes['external_wrench_estimate'][-1].header.frame_id == 'tool0'
    assert len(boxes['effort_commands'][-1].data) == 7


def test_frames_node_builds_no_python_message_per_joint_states(ros, constructions):
    """frames_node's /tf per joint_states: bytes filled by one compiled call, no message built
    (it built a TransformStamped per moving joint), one /tf per input, stamped with it."""
    from rbd_ros.ros.qos import TF_QOS
    node = ros.start(FramesNode, {'robot_description': ARM, 'joint_states_qos': 'reliable',
                                  'diagnostics_period': 0.2})
    tf = ros.collect(TFMessage, '/tf', TF_QOS)
    states = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    rng = np.random.default_rng(6)
    states.publish(js(NAMES, rng.uniform(-1, 1, 7), sec=50))
    wait_until(lambda: tf, what='the first /tf')
    wait_until(lambda: constructions['diagnostics', 'DiagnosticArray'] > 0,
               what='a /diagnostics message')
    published = node.stats.published
    constructions.clear()
    for k in range(200):
        states.publish(js(NAMES, rng.uniform(-1, 1, 7), sec=51, nanosec=k * 1_000_000))
        time.sleep(1e-3)
    wait_until(lambda: node.stats.published == published + 200, timeout=60,
               what='200 /tf messages')
    built = {cls: n for (place, cls), n in constructions.items() if place == 'on_joint_states'}
    assert built == {}, f'messages built per joint_states: {built}'
    assert constructions['diagnostics', 'DiagnosticArray'] > 0    # (the counting works)
    wait_until(lambda: tf[-1].transforms[0].header.stamp.nanosec == 199_000_000,
               what='the last /tf at the probe')
    assert len(tf[-1].transforms) == 7 and node.stats.internal_errors == 0


def test_observer_gain_set_at_run_time_turns_the_observer_off_and_on(ros):
    """observer_gain is dynamic: [0.0] stops ~/external_torques at once, a gain again starts the
    observer over (its first sample: r = 0)."""
    node = ros.start(DynamicsNode, {'robot_description': ARM, 'joint_states_qos': 'reliable'})
    external = ros.collect(JointState, '/rbd_dynamics/external_torques', RELIABLE)
    gravity = ros.collect(JointState, '/rbd_dynamics/gravity_torques', RELIABLE)
    states = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    q, v, tau = np.full(7, 0.2), np.full(7, 0.1), np.full(7, 1.0)
    states.publish(js(NAMES, q, v, tau, sec=1))
    wait_until(lambda: external, what='external torques')
    assert node.set_parameters([Parameter('observer_gain', value=[0.0])])[0].successful
    states.publish(js(NAMES, q, v, tau, sec=2))
    wait_until(lambda: len(gravity) == 2, what='the second gravity output')
    assert len(external) == 1 and not node.runtime.observer.enabled
    assert node.set_parameters([Parameter('observer_gain', value=[20.0])])[0].successful
    states.publish(js(NAMES, q, v, tau, sec=2, nanosec=1_000_000))
    wait_until(lambda: len(external) == 2, what='external torques again')
    assert list(external[-1].effort) == [0.0] * 7            # started over
    assert list(node.runtime.observer.gain) == [20.0] * 7


def test_an_output_nobody_reads_is_not_sent_and_a_new_reader_gets_it(ros):
    """Nobody subscribed, an output is neither filled nor sent (forward dynamics is not even
    computed), while the observer behind ~/external_torques keeps running (collisions are
    detected from it); a subscriber that comes gets the next message."""
    node = ros.start(DynamicsNode, {'robot_description': ARM, 'joint_states_qos': 'reliable'})
    gravity = ros.collect(JointState, '/rbd_dynamics/gravity_torques', RELIABLE)
    states = ros.publisher(JointState, 'joint_states', RELIABLE, wait_for=1)
    q, v, tau = np.full(7, 0.2), np.full(7, 0.1), np.full(7, 1.0)
    states.publish(js(NAMES, q, v, tau, sec=1))
    wait_until(lambda: gravity, what='gravity torques')
    assert node.pub_external.readers == 0 and node.pub_fd.readers == 0
    published = node.stats.published
    states.publish(js(NAMES, q, v, tau, sec=1, nanosec=1_000_000))
    wait_until(lambda: len(gravity) == 2 and node._observed is not None
               and node._observed[1] == 10**9 + 10**6, what='the second message')
    assert node.stats.published == published + 1               # gravity alone
    assert node._observed is not None and node._observed[1] == 10**9 + 10**6   # it ran
    external = ros.collect(JointState, '/rbd_dynamics/external_torques', RELIABLE)
    wait_until(lambda: node.pub_external.readers == 1, what='the new reader matched')
    states.publish(js(NAMES, q, v, tau, sec=1, nanosec=2_000_000))
    wait_until(lambda: external, what='external torques')
    assert (external[0].header.stamp.sec, external[0].header.stamp.nanosec) == (1, 2_000_000)
    wait_until(lambda: node.stats.published == published + 3, what='gravity and external')
