"""Legged robots in the loop, over real DDS: sim_node with a floating base on the ground
(base_state, TF, contact wrenches and markers), dynamics_node closing the loop through the
base state, start-up refusals of bad contact and base parameters, drives at every physics
step."""
import math
import pathlib
import subprocess
import time

import numpy as np
import pytest

pytest.importorskip('rclpy')

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

import rbd_ros.dynamics as rbd  # noqa: E402
from conftest import ROOT, child_env, script, wait_until  # noqa: E402
from corpus import robots_directory  # noqa: E402
from rbd_ros.bringup import create_nodes  # noqa: E402
from rbd_ros.nodes.sim import SimNode  # noqa: E402

pytestmark = pytest.mark.timeout(180)

SOLO = ROOT / 'rbd_ros' / 'robots' / 'solo12.urdf'
SOLO_CONFIG = ROOT / 'config' / 'solo12.yaml'
BOX = ('<robot name="box"><link name="box"><inertial><mass value="2.0"/><inertia ixx="0.00333" '
       'ixy="0" ixz="0" iyy="0.00333" iyz="0" izz="0.00333"/></inertial><collision><geometry>'
       '<box size="0.1 0.1 0.1"/></geometry></collision></link></robot>')


def stamp(msg):
    return (msg.header.stamp.sec, msg.header.stamp.nanosec)


def test_a_free_box_falls_lands_and_reports_its_base_and_contacts(ros):
    """A robot with no joints (a box) dropped from 0.3 m: ~/base_state (world pose, twist in
    the base frame) with each joint_states' stamp, world -> box on /tf, contact wrenches on
    the box that carry its weight, and RViz arrows."""
    states = ros.collect(JointState, 'joint_states')
    base = ros.collect(Odometry, '/rbd_sim/base_state')
    tf = ros.collect(TFMessage, '/tf')
    wrenches = ros.collect(WrenchStamped, '/rbd_sim/contact_wrenches')
    markers = ros.collect(MarkerArray, '/rbd_sim/contact_markers')
    sim = ros.start(SimNode, {'robot_description': BOX, 'floating_base': True,
                              'initial_base_pose': [0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0],
                              'publish_clock': True, 'real_time_factor': 0.0})
    wait_until(lambda: sim.sim_time > 1.5 and wrenches and base, timeout=60,
               what='1.5 s of simulated time with contacts')
    last = base[-1]
    assert last.header.frame_id == 'world' and last.child_frame_id == 'box'
    assert last.pose.pose.position.z == pytest.approx(0.05, abs=1e-4)
    assert abs(last.twist.twist.linear.z) < 1e-6
    by_stamp = {stamp(m) for m in states}
    assert all(stamp(m) in by_stamp for m in base[:50])     # the same stamps as joint_states
    assert states[-1].name == []
    t = [x for m in tf for x in m.transforms if x.child_frame_id == 'box']
    assert t and t[-1].header.frame_id == 'world'
    assert t[-1].transform.translation.z == pytest.approx(0.05, abs=1e-4)
    w = wrenches[-1]
    assert w.header.frame_id == 'box'
    assert w.wrench.force.z == pytest.approx(2.0 * 9.81, rel=1e-3)   # (one message: one link)
    arrows = [m for m in markers[-1].markers if m.type == m.ARROW and m.action == m.ADD]
    assert len(arrows) == 4 and markers[-1].markers[0].action == markers[-1].markers[0].DELETEALL
    assert sim.divergence_resets == 0 and sim.stats.internal_errors == 0


def test_reset_and_set_base_state_cover_the_base(ros):
    base = ros.collect(Odometry, '/rbd_sim/base_state')
    sim = ros.start(SimNode, {'robot_description': BOX, 'floating_base': True,
                              'initial_base_pose': [1.0, 2.0, 0.5, 0.0, 0.0, 0.0, 1.0],
                              'initial_base_velocity': [0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
                              'real_time_factor': 0.0, 'publish_clock': True})
    wait_until(lambda: sim.sim_time > 0.5, what='0.5 s')
    set_base = ros.publisher(Odometry, '/rbd_sim/set_base_state', wait_for=1)
    odom = Odometry()
    odom.pose.pose.position.z = 3.0
    odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = math.sin(0.5), math.cos(0.5)
    set_base.publish(odom)
    # (what lasts after the box has fallen back to the ground: at real_time_factor 0 its 0.14 s
    # above 2.9 m can all be published before the probe takes one, and KEEP_LAST drops them)
    wait_until(lambda: base and abs(base[-1].pose.pose.position.x) < 1e-3
               and abs(base[-1].pose.pose.position.y) < 1e-3, what='the base set')
    assert base[-1].pose.pose.orientation.z == pytest.approx(math.sin(0.5), abs=1e-3)
    client = ros.probe.create_client(Trigger, '/rbd_sim/reset')
    assert client.wait_for_service(timeout_sec=10)
    future = client.call_async(Trigger.Request())
    wait_until(future.done, what='reset')
    count = len(base)
    wait_until(lambda: len(base) > count + 2, what='base_state after the reset')
    after = base[count + 1]
    assert after.pose.pose.position.x == pytest.approx(1.0, abs=1e-3)
    assert after.pose.pose.position.y == pytest.approx(2.0, abs=1e-3)
    assert after.twist.twist.angular.z == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize('args, expected', [
    (['-p', 'contact_points:=["nowhere 0 0 0 0.01"]'],
     "parameter contact_points: contact point on unknown link 'nowhere'"),
    (['-p', 'contact_points:=["box 0 0 0 -0.01"]'],
     'parameter contact_points: \'box 0 0 0 -0.01\': the radius must be >= 0'),
    (['-p', 'friction_coefficient:=-0.5'], 'parameter friction_coefficient: must be'),
    (['-p', 'ground_normal:=[0.0, 0.0, 0.0]'],
     'parameter ground_normal: must be a non-zero vector of 3 finite numbers, got [0, 0, 0]'),
    (['-p', 'initial_base_pose:=[0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0]'],
     'parameter initial_base_pose: the quaternion [qx, qy, qz, qw] = [0.0, 0.0, 0.0, 2.0] '
     'has norm 2'),
    (['-p', 'initial_base_pose:=[0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]'],
     'has norm 0: not a rotation'),
])
def test_bad_contact_and_base_parameters_stop_sim_node_in_one_line(args, expected, tmp_path):
    urdf = tmp_path / 'box.urdf'
    urdf.write_text(BOX)
    done = subprocess.run(script('sim_node') + ['--urdf', str(urdf), '--ros-args', '-p',
                                                'floating_base:=true', *args],
                          env=child_env(), capture_output=True, text=True, timeout=60)
    lines = [ln for ln in done.stderr.splitlines() if not ln.startswith('[rcutils|')]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith('sim_node: '), done.stderr
    assert expected in lines[0], lines[0]


def test_a_quaternion_off_by_rounding_is_normalised(ros):
    base = ros.collect(Odometry, '/rbd_sim/base_state')
    ros.start(SimNode, {'robot_description': BOX, 'floating_base': True, 'ground': False,
                        'initial_base_pose': [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0000004],
                        'gravity': [0.0, 0.0, 0.0]})
    wait_until(lambda: base, what='base_state')
    assert base[-1].pose.pose.orientation.w == 1.0


def test_dynamics_node_says_what_it_waits_for(tmp_path):
    """With floating_base and no ~/base_state: one INFO line naming the resolved topic, the
    /diagnostics message says so, and no 'input stale' warning while joint_states flow."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    env = child_env()
    proc = subprocess.Popen(script('dynamics_node') + [
        '--urdf', str(SOLO), '--ros-args', '-p', 'floating_base:=true', '-p',
        'command_source:=gravity_pd', '-p', 'diagnostics_period:=0.3'],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(env['ROS_DOMAIN_ID']))
    node = rclpy.create_node('probe', context=context)
    from rclpy.executors import SingleThreadedExecutor
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    diag = []
    node.create_subscription(DiagnosticArray, '/diagnostics', diag.append, 10)
    pub = node.create_publisher(JointState, 'joint_states', 10)
    names = list(rbd.Model.from_urdf(str(SOLO), floating_base=True).joint_names)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pub.publish(JointState(name=names, position=[0.0] * 12, velocity=[0.0] * 12))
            executor.spin_once(timeout_sec=0.05)
            status = [s for a in diag for s in a.status if 'rbd_dynamics' in s.name]
            if len(status) > 3:
                break
        assert status[-1].message == ("waiting for the floating base's state on "
                                      "/rbd_dynamics/base_state (nav_msgs/Odometry)")
        values = {kv.key: kv.value for kv in status[-1].values}
        assert values['stale_input'] == 'false' and values['waiting_for']
        time.sleep(1.0)
    finally:
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()
        proc.send_signal(2)
        out, _ = proc.communicate(timeout=30)
    # said once at start-up, and once more when joint_states come without the base's state
    waiting = [ln for ln in out.splitlines() if "]: waiting for the floating base's state" in ln]
    assert len(waiting) == 1 and '[INFO]' in waiting[0], out
    still = [ln for ln in out.splitlines()
             if "joint_states received on /joint_states: still waiting for the floating base's "
                "state on /rbd_dynamics/base_state (nav_msgs/Odometry)" in ln]
    assert len(still) == 1 and '[INFO]' in still[0], out
    assert 'stale' not in out, out


@pytest.mark.timeout(300)
def test_solo12_stands_for_10_s_in_closed_loop_with_dynamics_node(ros):
    """bringup's set (config/solo12.yaml, --floating-base) in lockstep: sim_node with its base
    on the ground, dynamics_node's gravity_pd through the base state, 1 kHz. Over 10 s the base
    height stays within 1 cm of its settled value and no foot slides more than 5 mm."""
    model = rbd.Model.from_urdf(str(SOLO), floating_base=True)
    base = ros.collect(Odometry, '/rbd_sim/base_state')
    states = ros.collect(JointState, 'joint_states')
    nodes = create_nodes(['sim', 'dynamics'], config=SOLO_CONFIG, urdf_path=SOLO,
                         floating_base=True, context=ros.context, overrides={
                             'sim': {'lockstep': True, 'publish_clock': True},
                             'dynamics': {'input_timeout': 0.0,
                                          'joint_states_qos': 'reliable'}})
    for node in nodes:
        ros.add(node)
    sim, dyn = nodes
    wait_until(lambda: sim.sim_time >= 10.0, timeout=240, what='10 s of simulated time')
    joints = {stamp(m): m for m in list(states)}
    samples = []
    for m in list(base):
        js = joints.get(stamp(m))
        if js is None:
            continue
        q = model.neutral()
        p, o = m.pose.pose.position, m.pose.pose.orientation
        q[:7] = [p.x, p.y, p.z, o.x, o.y, o.z, o.w]
        q[7:] = js.position
        t = m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
        samples.append((t, p.z, [rbd.frame_pose(model, q, f'{leg}_FOOT')[:3, 3]
                                 for leg in ('FL', 'FR', 'HL', 'HR')]))
    t = np.array([s[0] for s in samples])
    settled = [s for s in samples if s[0] >= 1.0]
    assert t[-1] >= 9.9 and len(settled) > 8000
    z = np.array([s[1] for s in settled])
    slide = max(np.linalg.norm((s[2][k] - settled[0][2][k])[:2]) for s in settled
                for k in range(4))
    print(f'Solo-12, 1 s to 10 s: base height within {np.abs(z - z[-1]).max():.2e} m of '
          f'{z[-1]:.4f} m, feet slid {slide:.2e} m')
    assert np.abs(z - z[-1]).max() < 0.01
    assert slide < 5e-3
    assert sim.divergence_resets == 0 and dyn.stats.internal_errors == 0
    assert sum(dyn.stats.rejected.values()) == 0


def test_the_ur5_wrist_settles_on_a_position_command_with_the_default_gains(ros):
    """Position commands act inside the drive at every 1 ms step (they went through their gains
    once per 10 ms publish period: UR5's last wrist joint, 0.017 kg m^2, limit-cycled at its
    speed limit and ended 0.06 rad off)."""
    root = robots_directory()
    if root is None:
        pytest.skip('example-robot-data is not installed')
    path = pathlib.Path(root) / 'ur_description' / 'urdf' / 'ur5_robot.urdf'
    model = rbd.Model.from_urdf(str(path))
    goal = np.zeros(6)
    goal[5] = 1.0
    sim = ros.start(SimNode, {'robot_description_file': str(path), 'real_time_factor': 0.0,
                              'command_timeout': 100.0, 'publish_clock': True})
    cmd = ros.publisher(JointState, '/rbd_sim/joint_commands', wait_for=1)
    cmd.publish(JointState(name=list(model.joint_names), position=goal.tolist(),
                           effort=rbd.gravity_torques(model, goal).tolist()))
    wait_until(lambda: sim.sim_time >= 5.0, timeout=120, what='5 s of simulated time')
    q = sim.runtime.sim.q
    assert abs(q[5] - 1.0) < 1e-3
    assert sim.stats.rejected == {}
    sim.set_parameters([Parameter('position_kp', value=[100.0])])      # (still dynamic)


def test_a_contact_blow_up_is_a_divergence_like_any_other(ros):
    """A box pressed into the ground with 1e9 N: the state leaves divergence_bound, the sim
    resets it to the initial pose, counts it, and never publishes a non-finite joint_states or
    base_state."""
    base = ros.collect(Odometry, '/rbd_sim/base_state')
    sim = ros.start(SimNode, {'robot_description': BOX, 'floating_base': True,
                              'real_time_factor': 0.0, 'publish_clock': True,
                              'external_wrench_duration': 0.0})
    wrench = ros.publisher(WrenchStamped, '/rbd_sim/external_wrench', wait_for=1)
    push = WrenchStamped()
    push.header.frame_id = 'box'
    push.wrench.force.z = -1e9
    wait_until(lambda: (wrench.publish(push), sim.divergence_resets >= 1)[1], period=0.05,
               what='a divergence reset')
    calm = WrenchStamped()
    calm.header.frame_id = 'box'
    wrench.publish(calm)
    count = len(base)
    wait_until(lambda: len(base) > count + 20, what='base_state after the reset')
    for m in list(base):
        p, o, v = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist.linear
        assert all(math.isfinite(x) for x in (p.x, p.y, p.z, o.x, o.y, o.z, o.w, v.x, v.y, v.z))
    assert sim.stats.non_finite_outputs == 0 and sim.stats.internal_errors == 0
