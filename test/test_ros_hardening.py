"""No bytes can crash a node (issue 19).

The rmw's deserializer (Fast CDR, under rclpy's deserialize_message and under every typed
subscription) reads out of bounds on malformed bytes and kills the process. The nodes read
every topic as bytes: joint_states through JointStateDecoder, the others through a
bounds-checked walk (ros/cdr.py) before deserializing. These tests feed both every
encapsulation and a corpus of malformed bodies, each in a subprocess so that a crash fails the
test instead of killing the suite; then the running nodes get the same bytes over DDS."""
import json
import pathlib
import subprocess
import sys
import textwrap
import time

import pytest

pytest.importorskip('rclpy')

from conftest import ARM, child_env, ros_distro, script, wait_until  # noqa: E402
from hostile_bytes import CRASHER  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def run_isolated(code: str, timeout=600) -> dict:
    """Run ``code`` in a fresh interpreter (test/ on the path); its last stdout line is JSON.
    A crash (a negative exit status: a signal) fails the calling test with what it was."""
    proc = subprocess.run([sys.executable, '-c', textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, cwd=HERE.parent,
                          env={**child_env(), 'PYTHONPATH': str(HERE)})
    if proc.returncode != 0:
        pytest.fail(f'the subprocess ended with status {proc.returncode} '
                    f'({"killed by signal " + str(-proc.returncode) if proc.returncode < 0 else "error"}):'
                    f'\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}')
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_what_the_rmw_deserializer_does_with_four_bytes():
    """Why the nodes never hand received bytes to it, and what this file's subprocesses
    catch. Two bytes of body cannot hold a JointState. Kilted's rmw (rmw_fastrtps_cpp 9.3, Fast
    CDR 2.3) does not check: it reads past the buffer, which kills the process (SIGSEGV in Fast
    CDR) in most runs and, where the memory after the buffer happens to be readable, returns a
    message made of it (status 0: it happened in one environment of CI's). Jazzy's
    (rmw_fastrtps_cpp 8.4, Fast CDR 2.2) checks and raises: the process lives. docs/ros.md ("Bytes from an
    untrusted network") has what was measured on each; if this changes, the docs change."""
    proc = subprocess.run(
        [sys.executable, '-c', 'from rclpy.serialization import deserialize_message\n'
         'from sensor_msgs.msg import JointState\n'
         f'deserialize_message({CRASHER!r}, JointState)'], capture_output=True, timeout=60)
    distro = ros_distro()
    if distro == 'kilted':      # never refused: a crash, or a read past the end that returned
        assert proc.returncode in (-11, 0), (proc.returncode, proc.stderr)
        assert b'failed to deserialize' not in proc.stderr, proc.stderr
    elif distro == 'jazzy':
        assert proc.returncode == 1, (proc.returncode, proc.stderr)
        assert b'RMWError: failed to deserialize ROS message' in proc.stderr, proc.stderr
    elif proc.returncode >= 0:
        pytest.skip(f'ROS 2 {distro}: this rmw does not crash on {CRASHER.hex(" ")} '
                    f'(status {proc.returncode})')


def test_the_decoder_refuses_every_encapsulation_and_malformed_body():
    result = run_isolated('''
        import json
        import numpy as np
        from rclpy.serialization import serialize_message
        from sensor_msgs.msg import JointState
        from hostile_bytes import mutations
        from rbd_ros.ros.joint_states import Rejected
        from rbd_ros.ros.joint_state_bytes import JointStateDecoder

        msg = JointState(name=['joint_1', 'joint_2', 'a_long_joint_name_3'],
                         position=[0.1, 0.2, 0.3], velocity=[1.0, 2.0, 3.0], effort=[])
        msg.header.frame_id = 'base'
        good = bytes(serialize_message(msg))
        refused, accepted = 0, []
        decoder = JointStateDecoder()
        # every encapsulation byte pair, over the valid body and over a flipped one
        flipped = bytearray(good); flipped[20] ^= 0x10
        for body in (good, bytes(flipped)):
            for b0 in range(256):
                for b1 in range(256):
                    data = bytes((b0, b1)) + body[2:]
                    try:
                        decoder.decode(data)
                        assert (b0, b1) in ((0, 0), (0, 1)), (b0, b1)
                        accepted.append(b1)
                    except Rejected as exc:
                        assert exc.reason == 'malformed'
                        refused += 1
        # malformed bodies, a decoder with and one without a cached layout
        bodies = 0
        for data in mutations(good, 40000, seed=7):
            for d in (decoder, JointStateDecoder()):
                try:
                    sec, nanosec, names, p, v, e = d.decode(data)
                    assert all(len(x) <= len(data) // 8 for x in (p, v, e))
                except Rejected as exc:
                    assert exc.reason == 'malformed'
            bodies += 1
        print(json.dumps({'refused': refused, 'accepted': accepted, 'bodies': bodies}))
    ''')
    # 00 01 (little-endian, as rclpy wrote it) read, twice; a big-endian reading (00 00) of
    # those bytes has string lengths past the end: refused like everything else
    assert result['accepted'] == [1, 1]
    assert result['refused'] == 2 * 65536 - 2
    assert result['bodies'] > 40000


def test_checked_topics_refuse_what_would_crash_the_deserializer():
    """Every type a node reads through the checked walk: valid messages come back equal,
    malformed bytes are refused (or, when they happen to be a well-formed message, read)."""
    result = run_isolated('''
        import json
        from geometry_msgs.msg import WrenchStamped
        from nav_msgs.msg import Odometry
        from rclpy.serialization import serialize_message
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
        from builtin_interfaces.msg import Duration
        from hostile_bytes import mutations
        from rbd_ros.ros.cdr import CdrChecker
        from rbd_ros.ros.joint_states import Rejected

        traj = JointTrajectory(joint_names=['a', 'bb'], points=[
            JointTrajectoryPoint(positions=[1.0, 2.0], velocities=[0.5, 0.0],
                                 time_from_start=Duration(sec=1)),
            JointTrajectoryPoint(positions=[3.0, 4.0], effort=[1.0, 2.0],
                                 time_from_start=Duration(sec=2))])
        odom = Odometry(child_frame_id='base_link')
        odom.header.frame_id = 'world'
        odom.pose.pose.orientation.w = 1.0
        odom.pose.covariance[7] = 0.5
        wrench = WrenchStamped()
        wrench.header.frame_id = 'tool0'
        wrench.wrench.force.z = -5.0
        array = Float64MultiArray(data=[1.0, 2.0, 3.0])
        array.layout.dim = [MultiArrayDimension(label='joints', size=3, stride=3)]
        examples = [JointState(name=['j1', 'j2'], position=[1.0, 2.0], effort=[0.5, 0.25]),
                    array, wrench, traj, odom, String(data='<robot name="x"/>'),
                    JointTrajectory(), Float64MultiArray()]
        out = {}
        for k, msg in enumerate(examples):
            checker = CdrChecker(type(msg))
            good = bytes(serialize_message(msg))
            assert checker.message(good) == msg, type(msg).__name__
            refused = read = 0
            for data in mutations(good, 6000, seed=k):
                try:
                    checker.message(data)
                    read += 1
                except Rejected as exc:
                    assert exc.reason == 'malformed'
                    refused += 1
            name = type(msg).__name__
            out[name] = [out.get(name, [0, 0])[0] + refused, out.get(name, [0, 0])[1] + read]
        print(json.dumps(out))
    ''')
    assert set(result) == {'JointState', 'Float64MultiArray', 'WrenchStamped', 'JointTrajectory',
                           'Odometry', 'String'}
    for name, (refused, read) in result.items():
        assert refused > 1000, name


def test_cdr_checker_names_what_is_wrong():
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    from rbd_ros.ros.cdr import CdrChecker
    from rbd_ros.ros.joint_states import Rejected
    checker = CdrChecker(JointState)
    good = bytes(serialize_message(JointState(name=['j1'], position=[1.0])))
    cases = {b'\x00\x07' + good[2:]: 'encapsulation 00 07 (CDR2_LE (XCDR2)) is not read',
             good[:3]: 'shorter than the 4-byte CDR header',
             good[:50]: 'past the end',   # (rclpy's buffer has 8 bytes after the message)
             good[:24] + b'\xff\xff\xff\x7f' + good[28:]: 'only',
             }
    for data, words in cases.items():
        with pytest.raises(Rejected) as err:
            checker.message(data)
        assert err.value.reason == 'malformed' and words in err.value.detail, err.value.detail


def _diagnostics_of(probe_box, node):
    for arr in reversed(probe_box):
        for st in arr.status:
            if st.name.split(':')[0].strip('/') == node:
                return {kv.key: kv.value for kv in st.values}
    return {}


@pytest.mark.timeout(240)
def test_running_nodes_survive_hostile_bytes_on_every_topic(ros, tmp_path):
    """dynamics_node (with a floating base: every topic it has), frames_node and sim_node as
    processes, fed the crashing four bytes and a corpus of malformed bytes on every topic they
    read, over DDS: all three keep running and count the bytes as rejected_malformed."""
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import WrenchStamped
    from nav_msgs.msg import Odometry
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray, String
    from trajectory_msgs.msg import JointTrajectory

    from hostile_bytes import mutations
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from rbd_ros.ros.qos import COMMAND_QOS, LATCHED_QOS

    env = child_env()
    env['ROS_DOMAIN_ID'] = str(ros.domain_id)
    urdf = tmp_path / 'arm.urdf'
    urdf.write_text(ARM)
    common = ['-p', 'diagnostics_period:=0.3', '-p', 'joint_states_qos:=reliable']
    # (names of their own: no node of an earlier test in this domain answers for them)
    procs = {
        'hard_dynamics': subprocess.Popen(script('dynamics_node') + [
            '--urdf', str(urdf), '--ros-args', '-r', '__node:=hard_dynamics', *common, '-p',
            'floating_base:=true'], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT),
        'hard_frames': subprocess.Popen(script('frames_node') + [
            '--urdf', str(urdf), '--ros-args', '-r', '__node:=hard_frames', *common], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT),
        'hard_sim': subprocess.Popen(script('sim_node') + [
            '--urdf', str(urdf), '--ros-args', '-r', '__node:=hard_sim', '-p',
            'diagnostics_period:=0.3', '-r', 'joint_states:=/sim/joint_states'], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)}
    try:
        diag = ros.collect(DiagnosticArray, '/diagnostics')
        dyn, frames, sim = 'hard_dynamics', 'hard_frames', 'hard_sim'
        topics = [  # (type, topic, qos, the nodes that subscribe, an example)
            (JointState, 'joint_states', COMMAND_QOS, (dyn, frames),
             JointState(name=['joint_1'], position=[0.1])),
            (String, 'robot_description', LATCHED_QOS, (dyn, frames, sim), String(data=ARM)),
            (JointTrajectory, '/hard_dynamics/reference', COMMAND_QOS, (dyn,), JointTrajectory()),
            (JointTrajectory, '/hard_dynamics/trajectory_in', COMMAND_QOS, (dyn,),
             JointTrajectory()),
            (Odometry, '/hard_dynamics/base_state', COMMAND_QOS, (dyn,), Odometry()),
            (Float64MultiArray, '/hard_sim/effort_commands', COMMAND_QOS, (sim,),
             Float64MultiArray(data=[0.0] * 7)),
            (JointState, '/hard_sim/joint_commands', COMMAND_QOS, (sim,),
             JointState(name=['joint_1'], effort=[0.0])),
            (WrenchStamped, '/hard_sim/external_wrench', COMMAND_QOS, (sim,), WrenchStamped()),
            (JointState, '/hard_sim/set_state', COMMAND_QOS, (sim,), JointState()),
        ]
        sent = 0
        for msg_type, topic, qos, nodes, example in topics:
            # (a writer that keeps every sample until each reader has it: a reader still busy
            # starting up loses none)
            deep = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                              durability=qos.durability)
            pub = ros.publisher(msg_type, topic, deep, wait_for=len(nodes), nodes=nodes)
            good = bytes(serialize_message(example))
            for k, data in enumerate(mutations(good, 150, seed=len(topic))):
                if len(data) >= 4 and data[:2] in (b'\x00\x00', b'\x00\x01') and \
                        msg_type is String:
                    continue     # (a description that parses would replace the arm)
                if not data:
                    continue     # (no DDS sample has no bytes at all)
                pub.publish(data)
                sent += 1
                if k % 50 == 0:
                    time.sleep(0.01)
        try:
            wait_until(lambda: all(int(_diagnostics_of(diag, n).get('rejected_malformed', 0))
                                   > 50 for n in procs), timeout=60,
                       what='every node to count malformed messages')
        except BaseException:
            print({n: _diagnostics_of(diag, n) for n in procs},
                  {n: p.poll() for n, p in procs.items()})
            raise
        time.sleep(0.5)
        for name, proc in procs.items():
            assert proc.poll() is None, f'{name} died: {proc.returncode}'
            d = _diagnostics_of(diag, name)
            assert d.get('internal_errors') == '0', (name, d)
            assert d.get('model') == 'rbd_arm7', (name, d)
        assert sent > 1000
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(2)
        for name, proc in procs.items():
            try:
                out, _ = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            assert proc.returncode == 0, f'{name} exited {proc.returncode}:\n{out.decode()[-3000:]}'


def test_sim_node_never_publishes_a_non_finite_value(ros):
    """Two fresh inputs, each finite, whose sum was not (1.7e308 + 100 * 1e300 on a joint
    without an effort limit: sim_node published effort inf). A command beyond 1e12 is refused
    (rejected_out_of_range); the rest of the time everything published is finite."""
    import math

    import numpy as np
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from rbd_ros.nodes.sim import COMMAND_BOUND, SimNode
    sim = ros.start(SimNode, {'robot_description': ARM, 'effort_limits': False,
                              'velocity_limits': False, 'position_limits': 'off',
                              'command_timeout': 0.05})
    states = ros.collect(JointState, 'joint_states')
    effort = ros.publisher(Float64MultiArray, '/rbd_sim/effort_commands', wait_for=1)
    joint = ros.publisher(JointState, '/rbd_sim/joint_commands', wait_for=1)
    names = [f'joint_{i}' for i in range(1, 8)]
    for k in range(40):
        effort.publish(Float64MultiArray(data=[1.7e308] * 7))
        joint.publish(JointState(name=names, position=[1e300] * 7))
        # within the bound, but enough to diverge: reset, still nothing non-finite
        effort.publish(Float64MultiArray(data=[COMMAND_BOUND] * 7))
        time.sleep(0.01)
    wait_until(lambda: sim.stats.rejected['out_of_range'] >= 80, what='refusals')
    wait_until(lambda: sim.divergence_resets >= 1, what='a divergence reset')
    count = len(states)
    wait_until(lambda: len(states) > count + 20, what='joint_states after the resets')
    for msg in list(states):
        values = list(msg.position) + list(msg.velocity) + list(msg.effort)
        assert all(math.isfinite(x) for x in values), msg
    assert sim.stats.non_finite_outputs == 0 and sim.stats.internal_errors == 0
    assert np.max(np.abs([m.effort for m in states])) <= COMMAND_BOUND


@pytest.mark.parametrize('executable', ['dynamics_node', 'frames_node', 'sim_node'])
def test_a_parameter_the_node_does_not_have_is_named_at_start_up(executable, tmp_path):
    """A typo in a params file or on -p (floating_bas) is named in one warning with the
    closest parameter; another rbd_ros node's parameter (a shared /** file) in one INFO line."""
    params = tmp_path / 'params.yaml'
    other = 'frame_prefix' if executable != 'frames_node' else 'command_source'
    params.write_text(f'/**:\n  ros__parameters:\n    diagnostics_perod: 2.0\n    {other}: x\n')
    proc = subprocess.Popen(script(executable) + ['--ros-args', '--params-file', str(params),
                                                  '-p', 'robot_descripton:=x'],
                            env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        lines = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if 'rbd_ros nodes' in line or not line:
                break
    finally:
        proc.send_signal(2)
        rest, _ = proc.communicate(timeout=30)
    out = ''.join(lines) + rest
    warnings = [ln for ln in out.splitlines() if 'does not have' in ln]
    assert len(warnings) == 1, out
    assert '[WARN]' in warnings[0]
    assert 'diagnostics_perod (did you mean diagnostics_period?)' in warnings[0]
    assert 'robot_descripton (did you mean robot_description?)' in warnings[0]
    assert f'parameters of other rbd_ros nodes, ignored here: {other}' in out
    assert proc.returncode == 0
