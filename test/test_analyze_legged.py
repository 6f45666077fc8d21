"""`python -m rbd_ros analyze --floating-base` on the log of a simulated legged robot: Solo-12
(sim_node and dynamics_node in lockstep, config/solo12.yaml: feet on the ground, gravity_pd at
1 kHz) stands, then squats and sways on its four feet following a reference
trajectory. The nodes' messages (joint_states, the base's state, the contact wrenches) are
recorded as they are sent, with rosbags' writer, into an MCAP bag.

With the contact wrenches in the model, the joint residuals are at the level the filter and the
differentiation leave (the simulator's efforts are exact: no sensor noise), and the base's six
rows (the external wrench the motion needs) equal the contact wrenches the simulator published,
sample by sample: what they leave of the base's rows is a small fraction of them, and their
mean is the contacts' resultant the test computes itself from the recorded messages."""
import json
import math
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip('rclpy')
pytest.importorskip('rosbags')

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

import rbd_ros.dynamics as rbd  # noqa: E402
from conftest import ROOT, RosHarness, wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(600)

SOLO = ROOT / 'rbd_ros' / 'robots' / 'solo12.urdf'
SOLO_CONFIG = ROOT / 'config' / 'solo12.yaml'
#: simulated seconds recorded: standing, a second's spline to the standing pose, then the legs
#: move
SECONDS = 5.0
#: config/solo12.yaml's standing pose (FL, FR, HL, HR: HAA, HFE, KFE)
STANDING = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])
TOPICS = {'/joint_states': (JointState, 'sensor_msgs/msg/JointState'),
          '/rbd_sim/base_state': (Odometry, 'nav_msgs/msg/Odometry'),
          '/rbd_sim/contact_wrenches': (WrenchStamped, 'geometry_msgs/msg/WrenchStamped')}


def legs(t):
    """(positions, velocities, accelerations) of the reference t s after it starts: a squat
    (hips and knees bent by up to 20% more, 0.5 Hz) and a sideways sway of the hips' abduction
    (0.1 rad, 0.7 Hz), every foot on the ground; both ramp in over the first second with a
    quintic (zero velocity and acceleration at the start: a step in the acceleration is what
    no low-pass can follow)."""
    def ramped(amplitude, w):
        u = min(t, 1.0)
        s, ds, dds = (10 * u**3 - 15 * u**4 + 6 * u**5, 30 * u**2 - 60 * u**3 + 30 * u**4,
                      60 * u - 180 * u**2 + 120 * u**3)
        if t >= 1.0:
            ds = dds = 0.0
        x, dx, ddx = amplitude * math.sin(w * t), amplitude * w * math.cos(w * t), \
            -amplitude * w * w * math.sin(w * t)
        return s * x, ds * x + s * dx, dds * x + 2 * ds * dx + s * ddx

    squat = ramped(0.2, math.pi)
    sway = ramped(0.1, 1.4 * math.pi)
    q, v, a = STANDING.copy(), np.zeros(12), np.zeros(12)
    for leg in range(4):
        hip = 3 * leg
        q[hip], v[hip], a[hip] = q[hip] + sway[0], sway[1], sway[2]
        knee = slice(hip + 1, hip + 3)
        q[knee], v[knee], a[knee] = (STANDING[knee] * (1.0 + squat[0]), STANDING[knee] * squat[1],
                                     STANDING[knee] * squat[2])
    return q, v, a


@pytest.fixture(scope='module')
def solo_bag(tmp_path_factory):
    """The bag folder of the run, and the recorded messages {topic: [(recorded ns, bytes)]}."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    from rbd_ros.bringup import create_nodes
    ros = RosHarness()
    recorded = {topic: [] for topic in TOPICS}
    recorder = Recorder(ros.domain_id, recorded)
    try:
        nodes = create_nodes(['sim', 'dynamics'], config=SOLO_CONFIG, urdf_path=SOLO,
                             floating_base=True, context=ros.context, overrides={
                                 'sim': {'lockstep': True, 'publish_clock': True},
                                 'dynamics': {'input_timeout': 0.0,
                                              'joint_states_qos': 'reliable'}})
        for node in nodes:
            ros.add(node)
        sim, dyn = nodes
        names = list(rbd.Model.from_urdf(str(SOLO), floating_base=True).joint_names)
        reference = JointTrajectory(joint_names=names)
        # simulated time: standing until 0.5 s, then (JointTrajectoryController's start knot)
        # a spline from the measured state to the standing pose by 1.5 s, then the motion
        reference.header.stamp.nanosec = 500_000_000
        for k in range(int((SECONDS - 1.5) / 0.05) + 1):
            q, v, a = legs(0.05 * k)
            reference.points.append(JointTrajectoryPoint(
                positions=q.tolist(), velocities=v.tolist(), accelerations=a.tolist(),
                time_from_start=rbd_duration(1.0 + 0.05 * k)))
        pub = ros.publisher(JointTrajectory, '/rbd_dynamics/reference', wait_for=1)
        wait_until(lambda: sim.sim_time > 0.05, timeout=120, what='the simulation to start')
        pub.publish(reference)
        wait_until(lambda: dyn.references >= 1, timeout=60, what='the reference taken')
        wait_until(lambda: sim.sim_time >= SECONDS, timeout=480,
                   what=f'{SECONDS} s of simulated time')
        # paused (as ~/pause does) before the nodes go: removed while it steps, sim_node lost
        # the step's base_state after its joint_states (5003 against 5004 in one CI run)
        sim.paused = True
        time.sleep(1.0)                           # the step under way done, its messages in
        for node in nodes:
            ros.remove(node)
        assert sim.divergence_resets == 0 and dyn.stats.internal_errors == 0
    finally:
        recorder.close()
        ros.close()
    bag = tmp_path_factory.mktemp('solo') / 'solo_run'
    typestore = get_typestore(Stores.ROS2_KILTED)
    messages = sorted((t, topic, data) for topic, box in recorded.items() for t, data in box)
    with Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {topic: writer.add_connection(topic, msgtype, typestore=typestore)
                       for topic, (_, msgtype) in TOPICS.items()}
        for t, topic, data in messages:
            writer.write(connections[topic], t, bytes(data))
    return bag, recorded


class Recorder:
    """What `ros2 bag record` does: a node of its own (its own context, executor and thread:
    sharing the nodes' executor, it lost the last contact wrenches of each step's burst once
    the publisher's queue of 10 filled) subscribed to the topics, keeping each message's bytes
    and the time it arrived."""

    def __init__(self, domain_id, recorded):
        import threading

        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node('recorder', context=self.context)
        qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
        for topic, (msg_type, _) in TOPICS.items():
            box = recorded[topic]
            self.node.create_subscription(
                msg_type, topic, lambda data, box=box: box.append((time.time_ns(), data)), qos,
                raw=True)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()
        wait_until(lambda: all(self.node.count_publishers(t) for t in ()), what='nothing')

    def _spin(self):
        from rclpy.executors import ExternalShutdownException
        try:
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.05)
        except (ExternalShutdownException, RuntimeError):
            pass

    def close(self):
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self.context.try_shutdown()
        self.thread.join(timeout=5)


def rbd_duration(seconds):
    from builtin_interfaces.msg import Duration
    sec = int(seconds)
    return Duration(sec=sec, nanosec=int(round((seconds - sec) * 1e9)))


def analyze(*args):
    return subprocess.run([sys.executable, '-m', 'rbd_ros', 'analyze', *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def contact_resultant(recorded):
    """Per joint_states stamp: the contact wrenches the simulator published, moved to the base
    (its frame, about its origin), from the recorded messages themselves."""
    from rclpy.serialization import deserialize_message
    model = rbd.Model.from_urdf(str(SOLO), floating_base=True)
    q = {}
    for _, data in recorded['/rbd_sim/base_state']:
        m = deserialize_message(bytes(data), Odometry)
        p, o = m.pose.pose.position, m.pose.pose.orientation
        q.setdefault((m.header.stamp.sec, m.header.stamp.nanosec),
                     model.neutral())[:7] = [p.x, p.y, p.z, o.x, o.y, o.z, o.w]
    for _, data in recorded['/joint_states']:
        m = deserialize_message(bytes(data), JointState)
        stamp = (m.header.stamp.sec, m.header.stamp.nanosec)
        for name, value in zip(m.name, m.position):
            q[stamp][model.joint[name].q_index] = value
    wrenches = {}
    for _, data in recorded['/rbd_sim/contact_wrenches']:
        m = deserialize_message(bytes(data), WrenchStamped)
        w = m.wrench
        wrenches.setdefault((m.header.stamp.sec, m.header.stamp.nanosec), {})[
            m.header.frame_id] = [w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y,
                                  w.torque.z]
    base = model.joints[0].child
    out = {}
    for stamp, links in wrenches.items():
        poses = rbd.frame_poses(model, q[stamp])
        total = np.zeros(6)
        for link, wrench in links.items():
            T = np.linalg.solve(poses[base], poses[link])      # the link in the base's frame
            R, r = T[:3, :3], T[:3, 3]
            f = R @ wrench[:3]
            total += np.concatenate([f, R @ wrench[3:] + np.cross(r, f)])
        out[stamp] = total
    return out


def test_solo12_joint_residuals_at_noise_level_and_base_rows_equal_the_contacts(solo_bag,
                                                                                tmp_path):
    bag, recorded = solo_bag
    counts = {topic: len(box) for topic, box in recorded.items()}
    assert counts['/joint_states'] >= 1000 * SECONDS - 50, counts
    assert counts['/rbd_sim/base_state'] == counts['/joint_states'], counts
    assert counts['/rbd_sim/contact_wrenches'] >= counts['/joint_states'], counts
    report = tmp_path / 'report.json'
    done = analyze(bag, '--urdf', SOLO, '--floating-base', '--contact-topic',
                   '/rbd_sim/contact_wrenches', '--json', report)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text())
    log, = data['logs']
    assert log['status'] == 'ok', log
    assert log['dropped']['missing_messages'] == 0 and log['dropped']['no_base_state'] == 0
    assert log['dropped']['unmatched_contact_messages'] == 0, log
    model = rbd.Model.from_urdf(str(SOLO), floating_base=True)
    weight = model.total_mass * 9.81
    base = data['base']
    print(done.stdout)
    assert base['link'] == 'base_link' and base['rows'] == ['fx', 'fy', 'fz', 'tx', 'ty', 'tz']
    assert base['contact_links'] == ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']
    # the base's rows: the ground carries the robot (the base level within a few degrees)
    assert base['wrench_mean'][2] == pytest.approx(weight, rel=0.02)
    # ... and the contact wrenches leave a small fraction of them, sample by sample
    for k in range(6):
        scale = weight if k < 3 else weight * 0.2          # N; N m at 0.2 m
        assert base['residual_rms'][k] < 0.01 * scale, (k, base)
    # the base rows' mean is the contacts' resultant the simulator published, over the samples
    # analysed (the filter's start-up, 0.5 s at each end, left out)
    resultant = contact_resultant(recorded)
    times = {stamp: stamp[0] + 1e-9 * stamp[1] for stamp in resultant}
    first, last = min(times.values()), max(times.values())
    mean = np.mean([w for stamp, w in resultant.items()
                    if first + 0.5 - 1e-6 <= times[stamp] < last - 0.5 + 1e-6], axis=0)
    assert np.allclose(base['wrench_mean'], mean, rtol=0.0, atol=1e-3 * weight), \
        (base['wrench_mean'], mean)
    # the joint residuals: what the model leaves of the efforts that held and moved the legs is
    # the filter's and the differentiation's error (the simulator's efforts carry no noise)
    from rclpy.serialization import deserialize_message
    efforts = np.array([deserialize_message(bytes(data), JointState).effort
                        for _, data in recorded['/joint_states']])
    names = deserialize_message(bytes(recorded['/joint_states'][0][1]), JointState).name
    effort_rms = dict(zip(names, np.sqrt(np.mean(efforts ** 2, axis=0))))
    for name, joint in data['joints'].items():
        assert joint['samples'] == log['samples']
        assert abs(joint['residual_mean']) < 1e-3, (name, joint)
        assert joint['residual_rms'] < min(5e-3, 0.01 * effort_rms[name]), \
            (name, joint, effort_rms[name])
    print('Solo-12: joint residual rms', {n: f'{j["residual_rms"]:.2g}' for n, j in
                                          data['joints'].items()},
          'effort rms', {n: f'{x:.2g}' for n, x in effort_rms.items()},
          'base wrench mean', np.round(base['wrench_mean'], 4), 'rms left by the contacts',
          np.round(base['residual_rms'], 4), 'contacts\' resultant', np.round(mean, 4))


def test_identification_on_the_recorded_run_finds_what_the_model_lacks_nothing(solo_bag,
                                                                             tmp_path):
    """The simulator's Solo-12 is the URDF's (no joint friction, no payload): identified from
    the nodes' own messages as recorded, the friction and a payload on the base come out at
    nothing, within what the filter leaves (test_analyze_legged_identify.py finds a backpack
    and friction that are there)."""
    bag, _ = solo_bag
    report = tmp_path / 'report.json'
    done = analyze(bag, '--urdf', SOLO, '--floating-base', '--contact-topic',
                   '/rbd_sim/contact_wrenches', '--identify', 'friction', '--identify',
                   'payload:base_link', '--json', report)
    assert done.returncode == 0, done.stdout + done.stderr
    print(done.stdout)
    data = json.loads(report.read_text())
    payload = data['payload']       # none: the mass within three standard errors of zero
    assert payload['identified'] == 'nothing' and payload['reason'].startswith('no payload')
    assert abs(payload['mass']) < 0.005 and payload['com'] is None, payload
    for name, joint in data['joints'].items():
        f = joint['friction']
        assert f['coulomb'] is not None, (name, f)
        assert abs(f['coulomb']) < 2e-3 and abs(f['viscous']) < 2e-3, (name, f)


def test_without_contacts_the_joint_residuals_hold_the_contact_torques(solo_bag, tmp_path):
    """No --contact-topic: the base rows are the same (they do not depend on the contacts), the
    report says the joint residuals include the contacts, and the knees' residual is the torque
    the ground puts on them."""
    bag, _ = solo_bag
    report = tmp_path / 'report.json'
    done = analyze(bag, '--urdf', SOLO, '--floating-base', '--json', report)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text())
    assert 'residual_mean' not in data['base'] and data['base']['contact_links'] == []
    assert 'no contact wrenches' in done.stdout
    knees = [j for name, j in data['joints'].items() if name.endswith('KFE')]
    assert min(abs(j['residual_mean']) for j in knees) > 0.1, knees


def test_a_log_without_the_base_topic_is_skipped_in_one_line(solo_bag, tmp_path):
    bag, _ = solo_bag
    done = analyze(bag, '--urdf', SOLO, '--floating-base', '--base-topic', '/odom')
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith('skipped ')]
    assert len(lines) == 1 and 'no topic /odom (the log has /joint_states, ' in lines[0] and \
        '--base-topic names another' in lines[0], done.stderr


