"""`python -m rbd_ros list | param | call | echo` (ros2cli's everyday commands for a pip set-up)
against a running sim_node, as a user types them, from another process."""
import signal
import subprocess
import sys
import time

import pytest
import yaml

pytest.importorskip('rclpy')

from conftest import ARM, child_env, wait_until  # noqa: E402
from rbd_ros.nodes.sim import SimNode  # noqa: E402

pytestmark = pytest.mark.timeout(180)


def cli(*args):
    return subprocess.run([sys.executable, '-m', 'rbd_ros', *args], capture_output=True,
                          text=True, env=child_env(), timeout=60)


def test_param_call_echo_and_list_against_a_running_sim(ros):
    sim = ros.start(SimNode, {'robot_description': ARM, 'publish_rate': 50.0})
    # (discovery of a node started a moment ago can take longer than list's default 2 s on a
    # loaded machine: Fast DDS's missed first announcement, README's Speed section)
    listed = cli('list', '--timeout', '6')
    assert listed.returncode == 0, listed.stderr
    assert '  /rbd_sim\n' in listed.stdout
    assert '/rbd_sim/pause [std_srvs/srv/SetBool]' in listed.stdout
    assert '/joint_states [sensor_msgs/msg/JointState]' in listed.stdout
    names = cli('param', 'list', '/rbd_sim')
    assert names.returncode == 0 and 'position_kp' in names.stdout.split()
    got = cli('param', 'get', 'rbd_sim', 'integrator')
    assert got.returncode == 0 and got.stdout.strip() == 'rk4'
    # a whole number for a double array: converted, and the node takes it
    done = cli('param', 'set', '/rbd_sim', 'position_kp', '[250]')
    assert done.returncode == 0 and done.stdout.strip() == 'position_kp = [250.0]', done.stderr
    assert list(sim.params['position_kp']) == [250.0]
    refused = cli('param', 'set', '/rbd_sim', 'position_kp', '[-1]')
    assert refused.returncode == 1
    assert 'refused position_kp = [-1.0]' in refused.stderr and 'must be >= 0' in refused.stderr
    dump = cli('param', 'dump', '/rbd_sim')
    values = yaml.safe_load(dump.stdout)['/rbd_sim']['ros__parameters']
    assert values['position_kp'] == [250.0] and values['integrator'] == 'rk4'
    paused = cli('call', '/rbd_sim/pause', 'true')
    assert paused.returncode == 0 and 'success: true' in paused.stdout, paused.stderr
    wait_until(lambda: sim.paused, what='paused')
    t = sim.sim_time
    stepped = cli('call', '/rbd_sim/step')
    assert stepped.returncode == 0 and sim.sim_time > t
    assert cli('call', '/rbd_sim/pause', '{data: false}').returncode == 0
    wait_until(lambda: not sim.paused, what='running')
    assert cli('call', '/rbd_sim/reset').returncode == 0
    echoed = cli('echo', '/joint_states', '--count', '1')
    assert echoed.returncode == 0, echoed.stderr
    msg = yaml.safe_load(echoed.stdout.split('---')[0])
    assert msg['name'] == [f'joint_{i}' for i in range(1, 8)] and len(msg['position']) == 7
    # what does not exist: one line, status 1
    for args, words in ((('call', '/rbd_sim/nothing', '--timeout', '1'), 'no service'),
                        (('param', 'get', '/rbd_sim', 'nothing'), "no parameter 'nothing'"),
                        (('param', 'get', '/nobody', 'x', '--timeout', '1'), 'not available')):
        result = cli(*args)
        assert result.returncode == 1 and words in result.stderr, (args, result.stderr)


# ---- echo: every message type of the nodes' interfaces ---------------------------------------
def interface_messages():
    """{topic: message} with one message of every type the nodes publish or subscribe to, each
    field set to something distinctive: negative, huge, tiny and non-finite numbers, fixed-size
    arrays (numpy), sequences (array.array), bytes, nested and repeated messages, a multi-line
    text with YAML's special characters."""
    import math

    from builtin_interfaces.msg import Duration, Time
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from geometry_msgs.msg import InertiaStamped, Point, TransformStamped, WrenchStamped
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool, ColorRGBA, Float64MultiArray, MultiArrayDimension, String
    from tf2_msgs.msg import TFMessage
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    from visualization_msgs.msg import Marker, MarkerArray

    stamp = Time(sec=1_700_000_000, nanosec=999_999_999)
    joints = JointState(name=['joint_1', 'a: b', '#c'], position=[0.1, -2.5, 1e-300],
                        velocity=[], effort=[1e300, -0.0, 3.0])
    joints.header.stamp, joints.header.frame_id = stamp, 'base_link'
    array = Float64MultiArray(data=[1.5, math.inf, -math.inf, math.nan])
    array.layout.dim = [MultiArrayDimension(label='joints', size=4, stride=4)]
    array.layout.data_offset = 3
    wrench = WrenchStamped()
    wrench.header.frame_id = 'tool0'
    wrench.wrench.force.x, wrench.wrench.torque.z = -10.25, 0.5
    inertia = InertiaStamped()
    inertia.header.frame_id = 'tool0'
    inertia.inertia.m, inertia.inertia.com.z, inertia.inertia.ixx = 2.0, 0.05, 1e-3
    odometry = Odometry(child_frame_id='base')
    odometry.header.stamp = stamp
    odometry.pose.pose.orientation.w = 1.0
    odometry.pose.covariance = [0.5 * k for k in range(36)]
    odometry.twist.covariance[35] = -1.0
    transform = TransformStamped(child_frame_id='link_1')
    transform.header.frame_id = 'base_link'
    transform.transform.rotation.w, transform.transform.translation.y = 1.0, -0.3
    marker = Marker(ns='contacts', id=7, type=Marker.ARROW, frame_locked=True,
                    points=[Point(x=1.0), Point(y=-2.0)],
                    colors=[ColorRGBA(r=1.0, a=0.5)], lifetime=Duration(sec=0, nanosec=5))
    if hasattr(marker, 'mesh_file'):     # (since Iron; Jazzy has it)
        marker.mesh_file.data = [0, 255, 7]
    status = DiagnosticStatus(level=DiagnosticStatus.WARN, name='rbd_sim: status',
                              message='input stale: no joint_states for 2.1 s',
                              hardware_id='', values=[KeyValue(key='unconverged', value='3')])
    trajectory = JointTrajectory(joint_names=['joint_1', 'joint_2'], points=[
        JointTrajectoryPoint(positions=[0.0, 1.0], velocities=[0.5, -0.5], accelerations=[],
                             effort=[], time_from_start=Duration(sec=2, nanosec=500))])
    text = '<?xml version="1.0"?>\n<!-- Source: x: y # z -->\n<robot name="r">\n' \
           '  <link name="a"/>\n</robot>\n'
    return {'/echo/joint_state': joints, '/echo/float64_multi_array': array,
            '/echo/string': String(data=text), '/echo/bool': Bool(data=True),
            '/echo/wrench_stamped': wrench, '/echo/inertia_stamped': inertia,
            '/echo/odometry': odometry, '/echo/tf_message': TFMessage(transforms=[transform]),
            '/echo/marker_array': MarkerArray(markers=[marker, Marker(ns='second')]),
            '/echo/diagnostic_array': DiagnosticArray(status=[status]),
            '/echo/joint_trajectory': trajectory, '/echo/clock': Clock(clock=stamp)}


def assert_same(loaded, value, where='msg'):
    """``loaded`` (YAML read back) holds ``value`` (a message or field): mappings in field order,
    lists for arrays, numbers as numbers of the same kind, equal (NaN to NaN)."""
    import math

    if hasattr(value, 'get_fields_and_field_types'):
        fields = list(value.get_fields_and_field_types())
        assert isinstance(loaded, dict) and list(loaded) == fields, (where, loaded)
        for key in fields:
            assert_same(loaded[key], getattr(value, key), f'{where}.{key}')
    elif isinstance(value, bytes):                              # a `byte` field
        assert type(loaded) is int and loaded == value[0], (where, loaded)
    elif isinstance(value, str):
        assert loaded == value, (where, loaded)
    elif hasattr(value, '__len__'):                             # list, numpy, array.array
        assert isinstance(loaded, list) and len(loaded) == len(value), (where, loaded)
        for k, item in enumerate(value):
            assert_same(loaded[k], item, f'{where}[{k}]')
    elif type(value).__name__ in ('bool', 'bool_'):
        assert loaded is bool(value), (where, loaded)
    elif isinstance(value, int) or type(value).__name__.startswith(('int', 'uint')):
        assert type(loaded) is int and loaded == int(value), (where, loaded)
    else:
        value = float(value)
        assert type(loaded) is float, (where, loaded)
        if math.isnan(value):
            assert math.isnan(loaded), (where, loaded)
        else:                                                   # -0.0 stays -0.0
            assert loaded == value, (where, loaded)
            assert math.copysign(1.0, loaded) == math.copysign(1.0, value), (where, loaded)


def test_echo_prints_every_message_type_of_the_interfaces_as_yaml(ros):
    """One echo per type, four at a time, against publishers in this process: each prints its
    message as YAML that reads back equal. The latched ones (String, Bool: reliable + transient
    local, as robot_description and ~/collision are) are published once, before the echo
    starts: echo subscribes as its publishers do and still gets them. (All at once, the
    echoes' start-ups shared two cores under the rest of CI's load: one took over 120 s.)"""
    from rbd_ros.ros.qos import LATCHED_QOS, OUTPUT_QOS
    messages = interface_messages()
    latched = {'/echo/string', '/echo/bool'}
    publishers = {topic: ros.probe.create_publisher(
        type(msg), topic, LATCHED_QOS if topic in latched else OUTPUT_QOS)
        for topic, msg in messages.items()}
    for topic in latched:
        publishers[topic].publish(messages[topic])

    def again():
        for topic, msg in messages.items():
            if topic not in latched:
                publishers[topic].publish(msg)
    ros.probe.create_timer(0.2, again)
    topics = list(messages)
    for first in range(0, len(topics), 4):
        procs = {topic: subprocess.Popen(
            [sys.executable, '-m', 'rbd_ros', 'echo', topic, '--count', '1', '--timeout', '60'],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
            for topic in topics[first:first + 4]}
        try:
            for topic, proc in procs.items():
                out, err = proc.communicate(timeout=120)
                # (or Fast DDS's participant deletion spun, eProsima/Fast-DDS#6513: the four
                # echoes leave at once; the output is whole, the process ended 12 s later)
                assert proc.returncode == 0 or (proc.returncode == 1 and 'Timeout (' in err
                                                and 'destroy_node' in err), (topic, err)
                assert 'Traceback' not in err, (topic, err)
                documents = list(yaml.safe_load_all(out))
                assert out.endswith('\n---\n') and documents[-1] is None, (topic, out)
                assert len(documents) == 2, (topic, out)
                assert_same(documents[0], messages[topic], topic)
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['ctrl-c', 'sigterm'])
def test_echo_stops_cleanly_on_ctrl_c_and_sigterm(ros, sig):
    """An echo without --count runs until stopped: Ctrl-C or SIGTERM ends it between two
    messages, status 0, no traceback, and what it printed is whole YAML documents."""
    from rbd_ros.ros.qos import OUTPUT_QOS
    msg = interface_messages()['/echo/odometry']
    pub = ros.probe.create_publisher(type(msg), '/echo/stop', OUTPUT_QOS)
    ros.probe.create_timer(0.01, lambda: pub.publish(msg))
    proc = subprocess.Popen([sys.executable, '-m', 'rbd_ros', 'echo', '/echo/stop'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env())
    first = ''.join(iter(proc.stdout.readline, '---\n'))     # (blocks until one message)
    assert first, proc.stderr.read()
    time.sleep(0.3)                                           # (more messages on the way)
    proc.send_signal(sig)
    rest, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert 'Traceback' not in err and 'Exception' not in err, err
    out = first + '---\n' + rest
    assert out.endswith('---\n')
    documents = [d for d in yaml.safe_load_all(out) if d is not None]
    assert len(documents) >= 2
    for document in documents:
        assert_same(document, msg)


_STUCK_TEARDOWN = '''
import sys, time
import rclpy
from rbd_ros import ros_cli
ros_cli.TEARDOWN_S = 1.0
rclpy.try_shutdown = lambda: time.sleep(600)     # a shutdown that never returns
sys.exit(ros_cli.main(['list', '--timeout', '0.2']))
'''


_GIL_HELD_TEARDOWN = '''
import ctypes, ctypes.util, sys
import rclpy
from rbd_ros import ros_cli
ros_cli.TEARDOWN_S, ros_cli.TEARDOWN_GRACE_S = 1.0, 1.0
libc = ctypes.PyDLL(ctypes.util.find_library('c'))    # (PyDLL: the GIL stays held)
def try_shutdown():                                   # as Fast DDS's spin in rcl_node_fini
    libc.sleep(600)
rclpy.try_shutdown = try_shutdown
sys.exit(ros_cli.main(['list', '--timeout', '0.2']))
'''


def test_a_reader_that_leaves_ends_a_command_quietly():
    """`python -m rbd_ros list | head -1`: a pipe whose reader is gone before anything is
    written (deterministic): status 0, no traceback (it was status 1 and BrokenPipeError's)."""
    process = subprocess.Popen([sys.executable, '-m', 'rbd_ros', 'list', '--timeout', '0.2'],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
    process.stdout.close()
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert b'Traceback' not in err and b'BrokenPipe' not in err, err


def test_a_teardown_that_hangs_holding_the_gil_still_ends_the_process():
    """A teardown stuck in C code that holds the GIL (Fast DDS's participant deletion can spin
    so: eProsima/Fast-DDS#6513) leaves no Python code to run, the watch in _teardown included:
    faulthandler's watchdog prints the threads' stacks and ends the process, status 1."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, '-c', _GIL_HELD_TEARDOWN], capture_output=True,
                          text=True, env=child_env(), timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith('nodes:') and 'services:' in done.stdout
    assert 'Timeout (0:00:02)!' in done.stderr and 'try_shutdown' in done.stderr, done.stderr
    assert time.monotonic() - started < 30


def test_a_command_whose_ros_teardown_hangs_still_exits_with_its_status():
    """The output is whole before the teardown: one that does not return (a Jazzy echo stayed
    up over 120 s after printing, twice in CI) is cut after TEARDOWN_S, said in one line, and
    the command exits with its own status."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, '-c', _STUCK_TEARDOWN], capture_output=True,
                          text=True, env=child_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('nodes:') and 'services:' in done.stdout
    assert 'warning: rclpy.try_shutdown() did not return in 1 s' in done.stderr, done.stderr
    assert time.monotonic() - started < 30
