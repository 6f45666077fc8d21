"""The rbd_ros demo: feedforward torque control of the bundled 7-DoF arm, simulated.

bringup starts ``rbd_sim`` (the simulated arm: friction, damping, limits, lockstep with its
controller) and ``rbd_dynamics`` (``command_source: computed_torque``) in one process. The arm
follows a 4 s trajectory given as one JointTrajectory; then the sim gets a 2 kg payload on its
last link that the controller's description does not have, and the arm follows the same
trajectory again; then the payload is announced to the controller (its ~/payload), and the
arm follows it a third time. A live table shows the reference, the measured position and the command per
joint; the summary gives the tracking error per phase (max and RMS, after the first 0.5 s);
a plot (reference against measured per joint, and the commanded torques) is written as a PNG
whose path is printed. It ends by itself after the three phases (about 27 s of simulated time,
15 s of wall time), or on Ctrl-C.

``--legged``: the bundled Solo-12 quadruped (config/solo12.yaml), dropped from 35 cm onto the
ground with its legs in the standing pose, held by ``gravity_pd`` in ``rbd_dynamics`` through
the simulator's ``~/base_state``: it lands, settles and stands. The summary gives the impact,
the settled height and its drift, and the foot forces against the robot's weight; the plot
shows the base height and each foot's contact force.

``--ankle``: the bundled parallel ankle (two motors, rods, a foot on a universal joint: closed
kinematic loops) with a load at its toe, served by ``rbd_dynamics`` (``command_source:
gravity``) and ``rbd_frames`` from joint_states that carry only the two motors. Per pose, the
motor torques that hold the foot (constrained inverse dynamics, the loops closed by the nodes)
against what a tree that ignores the loops gives at the motors (the fake a URDF without
``<constraint>`` is left with: mimic joints cannot drive one foot joint from two motors), and
what each does to the foot (the closed system's acceleration under those torques). No
simulation: sim_node does not simulate loops yet.

    python -m rbd_ros.demo [URDF] [--payload 2.0] [--plot PATH]
    python -m rbd_ros.demo --legged [--plot PATH]
    python -m rbd_ros.demo --ankle [--load 5.0]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time

import numpy as np

#: the demo's start pose for the bundled arm (rad, joint_1..joint_7): elbow bent, arm forward
DEMO_POSE = [0.3, 0.7, -0.4, 1.2, 0.5, -0.8, 0.2]
PHASE_S = 4.0            # trajectory length of each phase, s of simulated time
AMPLITUDE = 0.25         # rad: q0 + A (1 - cos(pi t)) / 2, every joint


def with_payload(xml: str, mass: float) -> str:
    """The robot with a point mass (and a little inertia) on its last link."""
    import rbd_ros.dynamics as rbd
    last = rbd.Model.from_urdf(xml).frame_names[-1]
    payload = (f'<link name="demo_payload"><inertial><origin xyz="0 0 0.05"/>'
               f'<mass value="{mass}"/><inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" '
               f'izz="0.002"/></inertial></link><joint name="demo_payload_joint" type="fixed">'
               f'<parent link="{last}"/><child link="demo_payload"/></joint></robot>')
    return xml[:xml.rindex('</robot>')] + payload


RETURN_S = 1.5           # s: the move back to the start pose before the third phase


def return_msg(names, q0, start):
    """One point: q0 at rest, RETURN_S after ``start`` (JointTrajectoryController's spline
    from the measured state)."""
    from builtin_interfaces.msg import Duration, Time
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = Time(sec=int(start), nanosec=int((start % 1) * 1e9))
    msg.points.append(JointTrajectoryPoint(
        positions=list(map(float, q0)), velocities=[0.0] * len(names),
        accelerations=[0.0] * len(names),
        time_from_start=Duration(sec=int(RETURN_S), nanosec=int((RETURN_S % 1) * 1e9))))
    return msg


def payload_msg(link, mass):
    """The payload ``with_payload`` adds, as a geometry_msgs/InertiaStamped for ~/payload."""
    from geometry_msgs.msg import InertiaStamped
    msg = InertiaStamped()
    msg.header.frame_id = link
    msg.inertia.m, msg.inertia.com.z = float(mass), 0.05
    msg.inertia.ixx = msg.inertia.iyy = msg.inertia.izz = 0.002
    return msg


def reference_msg(names, q0, start):
    """q0 + A (1 - cos(pi t)) / 2 for PHASE_S s, every 0.1 s, from rest; starting at ``start``
    (s, simulated time)."""
    from builtin_interfaces.msg import Duration, Time
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = Time(sec=int(start), nanosec=int((start % 1) * 1e9))
    for t in np.arange(0.0, PHASE_S + 1e-9, 0.1):
        w, a = math.pi, AMPLITUDE
        msg.points.append(JointTrajectoryPoint(
            positions=list(q0 + a * (1 - math.cos(w * t)) / 2),
            velocities=[a * w * math.sin(w * t) / 2] * len(names),
            accelerations=[a * w * w * math.cos(w * t) / 2] * len(names),
            time_from_start=Duration(sec=int(t), nanosec=int(round((t % 1) * 1e9)) % 10**9)))
    return msg


class Recorder:
    """Keeps what the plot and the table need: reference, measured, error, commands."""

    def __init__(self, node, names):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        from rbd_ros.ros.qos import OUTPUT_QOS
        self.names = names
        self.rows = []            # (t, q_ref, q, e, tau)
        self.last_tau = np.zeros(len(names))
        self.last_ref = None
        node.create_subscription(JointState, 'rbd_dynamics/tracking_error', self._error,
                                 OUTPUT_QOS)
        node.create_subscription(JointState, 'rbd_dynamics/inverse_dynamics', self._ref,
                                 OUTPUT_QOS)
        node.create_subscription(Float64MultiArray, 'rbd_dynamics/effort_commands', self._tau,
                                 OUTPUT_QOS)

    def _ref(self, msg):
        self.last_ref = msg

    def _tau(self, msg):
        self.last_tau = np.array(msg.data)

    def _error(self, msg):
        if self.last_ref is None:
            return
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        q_ref = np.array(self.last_ref.position)
        e = np.array(msg.position)
        self.rows.append((t, q_ref, q_ref - e, e, self.last_tau.copy()))


def phase_errors(rows, start, end):
    errs = np.array([np.abs(r[3]) for r in rows if start + 0.5 <= r[0] <= end])
    if not len(errs):
        return math.nan, math.nan
    return float(errs.max()), float(np.sqrt(np.mean(errs ** 2)))


def plot(rows, names, phases, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    t = np.array([r[0] for r in rows])
    q_ref, q, tau = (np.array([r[k] for r in rows]) for k in (1, 2, 4))
    fig, axes = plt.subplots(len(names) + 1, 1, figsize=(9, 2 + 1.3 * len(names)), sharex=True)
    for j, name in enumerate(names):
        ax = axes[j]
        ax.plot(t, q_ref[:, j], 'k--', lw=1, label='reference')
        ax.plot(t, q[:, j], lw=1.2, label='measured')
        ax.set_ylabel(f'{name}\n[rad]', fontsize=8)
        for label, (start, _) in phases.items():
            ax.axvline(start, color='0.7', lw=0.8)
    axes[0].legend(loc='upper right', fontsize=8)
    for j, name in enumerate(names):
        axes[-1].plot(t, tau[:, j], lw=1, label=name)
    axes[-1].set_ylabel('command\n[N m]', fontsize=8)
    axes[-1].set_xlabel('simulated time [s]')
    axes[-1].legend(loc='upper right', fontsize=6, ncol=4)
    titles = ', '.join(f'{label} from {start:.1f} s' for label, (start, _) in phases.items())
    fig.suptitle(f'computed-torque tracking: {titles}', fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog='python -m rbd_ros.demo',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('urdf', nargs='?', help='URDF file (default: the bundled 7-DoF arm)')
    parser.add_argument('--payload', type=float, default=2.0,
                        help='kg on the last link in the second phase (default 2)')
    parser.add_argument('--plot', help='PNG path (default: rbd_ros_demo.png in the temporary '
                        'directory)')
    parser.add_argument('--timeout', type=float, default=60.0,
                        help='give up after this many wall seconds (default 60)')
    parser.add_argument('--legged', action='store_true',
                        help='the bundled Solo-12 dropped onto the ground stands (gravity_pd)')
    parser.add_argument('--ankle', action='store_true',
                        help='the bundled parallel ankle (closed loops): the motor torques that '
                        'hold its foot under a load, against a tree that ignores the loops')
    parser.add_argument('--load', type=float, default=ANKLE_LOAD,
                        help=f'--ankle: kg at the toe (default {ANKLE_LOAD:g})')
    return parser.parse_args(argv)


#: the ankle demo: kg at the toe (a point on the sole's front edge, foot frame, m), and the
#: motor angles it holds (rad: alike pitch the foot, against each other roll it)
ANKLE_LOAD = 5.0
ANKLE_TOE = (0.12, 0.0, -0.06)
ANKLE_POSES = [(0.0, 0.0), (0.3, 0.3), (-0.3, -0.3), (0.25, -0.25), (0.4, 0.1)]


def ankle(opts) -> int:
    """The parallel ankle with a load at the toe: rbd_dynamics (gravity, the loops closed from
    motor-only joint_states) and rbd_frames in one process; per pose the motor torques that
    hold the foot, the foot's pitch and roll from /tf, and a tree that ignores the loops."""
    import rclpy
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage

    import rbd_ros.dynamics as rbd
    from rbd_ros.bringup import create_nodes, package_file
    from rbd_ros.ros.messages import joint_state
    from rbd_ros.ros.node import run
    from rbd_ros.ros.qos import OUTPUT_QOS, TF_QOS

    urdf = package_file('robots', 'parallel_ankle.urdf')
    with open(urdf) as handle:
        xml = handle.read()
    motors = ['motor_left', 'motor_right']
    load = [float(opts.load), *ANKLE_TOE]
    # the same robot carrying the load, for the checks: the closed model and the cut tree
    model = rbd.Model.from_urdf(urdf).with_payload('foot', load[0], np.array(ANKLE_TOE),
                                                   np.zeros((3, 3)))
    print(f'rbd_ros ankle demo: the parallel ankle ({urdf}: 2 motors, 2 rods, 2 ball loops) '
          f'holding {load[0]:g} kg at its toe; rbd_dynamics (command_source gravity) + '
          'rbd_frames, joint_states carrying only the two motors')
    made, rows = {}, []

    def make():
        nodes = create_nodes(['dynamics', 'frames'], urdf_xml=xml, overrides={
            'dynamics': {'command_source': 'gravity', 'payload_link': 'foot', 'payload': load,
                         'input_timeout': 0.0, 'joint_states_qos': 'reliable'},
            'frames': {'joint_states_qos': 'reliable'}})
        node = rclpy.create_node('rbd_demo_ankle')
        made.update(node=node, nodes=nodes, pose=0, gravity={}, tf={}, t0=time.monotonic(),
                    pub=node.create_publisher(JointState, 'joint_states', 10))
        node.create_subscription(JointState, 'rbd_dynamics/gravity_torques',
                                 lambda m: made['gravity'].setdefault(m.header.stamp.sec, m),
                                 OUTPUT_QOS)
        node.create_subscription(TFMessage, '/tf', lambda m: made['tf'].setdefault(
            m.transforms[0].header.stamp.sec if m.transforms else -1, m), TF_QOS)
        return [*nodes, node]

    def tick():
        if time.monotonic() - made['t0'] > opts.timeout:
            print('demo: timed out', file=sys.stderr)
            return True
        k = made['pose']
        if k == len(ANKLE_POSES):
            return True
        stamp = k + 1
        if stamp in made['gravity'] and stamp in made['tf']:
            rows.append((ANKLE_POSES[k], made['gravity'][stamp], made['tf'][stamp]))
            made['pose'] += 1
            return False
        if made['pub'].get_subscription_count() >= 2:    # (both nodes matched: send, again)
            made['pub'].publish(joint_state(Time(sec=stamp), motors, ANKLE_POSES[k]))
        return False

    status = run(make, [sys.argv[0]], name='demo', on_tick=tick, tick_period=0.1)
    if status or len(rows) < len(ANKLE_POSES):
        print('demo: the ankle poses did not complete', file=sys.stderr)
        return status or 1
    print(f'\n  {"motors (rad)":<16}{"foot (deg, /tf)":<20}{"motor torques (N m)":<24}'
          f'{"tree ignoring the loops":<26}foot under each (rad/s^2)')
    print(f'  {"left   right":<16}{"pitch   roll":<20}{"loops closed":<24}{"(its gravity, N m)":<26}'
          'closed: held   tree: falls')
    worst = 0.0
    for motors_q, gravity, tf in rows:
        q = model.neutral()
        q[[model.joint[m].q_index for m in motors]] = motors_q
        q = rbd.close_loops(model, q, motors)
        held = np.array(gravity.effort)
        tree = rbd.gravity_torques(model, q)[[model.joint[m].v_index for m in motors]]
        foot = {}
        for t in tf.transforms:       # the ankle's two axes: shank -> cross (y), cross -> foot (x)
            r = t.transform.rotation
            if t.child_frame_id == 'ankle_cross':
                foot['pitch'] = 2.0 * math.atan2(r.y, r.w)
            elif t.child_frame_id == 'foot':
                foot['roll'] = 2.0 * math.atan2(r.x, r.w)
        accel = []
        for u in (held, tree):        # the closed system under these motor torques, at rest
            tau = np.zeros(model.nv)
            tau[[model.joint[m].v_index for m in motors]] = u
            qdd = rbd.constrained_forward_dynamics(model, q, np.zeros(model.nv), tau)
            accel.append(float(np.abs(qdd).max()))
        worst = max(worst, accel[0])
        print(f'  {motors_q[0]:+6.2f} {motors_q[1]:+6.2f}   '
              f'{math.degrees(foot.get("pitch", math.nan)):+6.1f} '
              f'{math.degrees(foot.get("roll", math.nan)):+6.1f}       '
              f'{held[0]:+7.3f} {held[1]:+7.3f}         {tree[0]:+7.3f} {tree[1]:+7.3f}'
              f'           {accel[0]:7.1e}   {accel[1]:7.1f}')
    dyn = made['nodes'][0]
    print(f'\nThe motors hold the foot with the torques rbd_dynamics publishes (the closed '
          f'system\'s largest acceleration under them {worst:.1e} rad/s^2); a tree that ignores '
          'the loops puts the foot\'s weight on the passive ankle joints, and its motor torques '
          'let the foot fall. rbd_dynamics: rejected inputs '
          f'{sum(dyn.stats.rejected.values())}, compute p50 '
          f'{dyn.stats.compute_percentiles_us()[0]:.1f} us per message')
    return 0 if worst < 1e-6 else 1


LEGGED_S = 4.0           # simulated s of the legged demo
DROP_HEIGHT = 0.35       # m: the base's start height (its feet 12 cm above the ground)


def legged(opts) -> int:
    """Solo-12 dropped onto the ground stands: sim + dynamics (gravity_pd) with the base's
    state, lockstep; base height and foot forces recorded from the topics."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from nav_msgs.msg import Odometry

    from rbd_ros.bringup import create_nodes, package_file
    from rbd_ros.ros.node import run
    from rbd_ros.ros.qos import OUTPUT_QOS

    urdf, config = package_file('robots', 'solo12.urdf'), package_file('config', 'solo12.yaml')
    path = opts.plot or os.path.join(tempfile.gettempdir(), 'rbd_ros_demo_legged.png')
    tty = sys.stdout.isatty()
    print(f'rbd_ros legged demo: Solo-12 ({urdf}) dropped from {DROP_HEIGHT} m onto the ground; '
          f'rbd_sim (floating base, ground contact, lockstep) + rbd_dynamics (gravity_pd on the '
          f'base state), {config}')
    made = {}
    heights, forces = [], {}

    def on_base(msg):
        heights.append((msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec,
                        msg.pose.pose.position.z, msg.pose.pose.position.x,
                        msg.pose.pose.position.y))

    def on_wrench(msg):
        f = msg.wrench.force
        forces.setdefault(msg.header.frame_id, []).append(
            (msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec,
             math.sqrt(f.x * f.x + f.y * f.y + f.z * f.z)))

    def make():
        nodes = create_nodes(['sim', 'dynamics'], config=config, urdf_path=urdf,
                             floating_base=True, overrides={
                                 'sim': {'initial_base_pose': [0.0, 0.0, DROP_HEIGHT, 0.0, 0.0,
                                                               0.0, 1.0],
                                         'lockstep': True, 'publish_clock': True},
                                 'dynamics': {'input_timeout': 0.0,
                                              'joint_states_qos': 'reliable'}})
        node = rclpy.create_node('rbd_demo')
        node.create_subscription(Odometry, 'rbd_sim/base_state', on_base, OUTPUT_QOS)
        node.create_subscription(WrenchStamped, 'rbd_sim/contact_wrenches', on_wrench, 100)
        made.update(nodes=nodes, t0=time.monotonic())
        return [*nodes, node]

    def tick():
        sim = made['nodes'][0]
        if time.monotonic() - made['t0'] > opts.timeout:
            print('demo: timed out', file=sys.stderr)
            return True
        if heights:
            t, z = heights[-1][:2]
            feet = sum(1 for samples in forces.values() if samples and samples[-1][0] == t)
            line = f'  simulated time {sim.sim_time:5.2f} s   base height {z:.4f} m   feet on ' \
                   f'the ground {feet}'
            sys.stdout.write(('\r' + line + '\x1b[K') if tty else line + '\n')
            sys.stdout.flush()
        return sim.sim_time >= LEGGED_S

    status = run(make, [sys.argv[0]], name='demo', on_tick=tick, tick_period=0.25 if tty else 1.0)
    if status or 'nodes' not in made:
        return status or 1
    sim, dyn = made['nodes']
    if tty:
        print()
    t = np.array([h[0] for h in heights])
    z = np.array([h[1] for h in heights])
    if len(t) < 10:
        print('demo: no base state recorded', file=sys.stderr)
        return 1
    t = t - t[0]
    late = t > LEGGED_S - 1.0
    weight = sim.runtime.robot.model.total_mass * 9.81
    total = {}
    for samples in forces.values():
        for s_t, f in samples:
            total[s_t] = total.get(s_t, 0.0) + f
    last = [v for k, v in sorted(total.items())][-20:]
    print('summary:')
    print(f'  lowest base height {z.min():.4f} m (standing at {z[late].mean():.4f} m), drift over '
          f'the last 1 s {1e3 * (z[late].max() - z[late].min()):.3f} mm')
    xy = np.array([[h[2], h[3]] for h in heights])
    print(f'  base moved {1e3 * float(np.linalg.norm(xy[-1] - xy[len(xy) // 2])):.3f} mm '
          'horizontally over the second half')
    vertical = sum(float(f[2]) for _, _, f in sim.runtime.sim.contacts())
    print(f'  feet on the ground: {len(forces)}; the ground carries {vertical:.2f} N of a '
          f'weight of {weight:.2f} N (contact force magnitudes, friction included: '
          f'{np.mean(last) if last else 0.0:.2f} N)')
    print(f'  divergence resets {sim.divergence_resets}; rejected inputs: dynamics '
          f'{sum(dyn.stats.rejected.values())}, sim {sum(sim.stats.rejected.values())}')
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
        a1.plot(t, z, lw=1.2)
        a1.set_ylabel('base height [m]')
        t0 = heights[0][0]
        for foot, samples in sorted(forces.items()):
            a2.plot([s_t - t0 for s_t, _ in samples], [f for _, f in samples], lw=1, label=foot)
        a2.axhline(weight / 4, color='0.6', lw=0.8, ls='--', label='weight / 4')
        a2.set_ylabel('contact force [N]')
        a2.set_xlabel('simulated time [s]')
        a2.legend(fontsize=8, loc='upper right')
        fig.suptitle(f'Solo-12 dropped from {DROP_HEIGHT} m, gravity_pd through ~/base_state',
                     fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)
        print(f'plot: {path}')
    except ImportError:
        print('plot: skipped, matplotlib is not installed (pip install matplotlib)')
    standing = abs(z[late].mean() - z[-1]) < 0.01 and len(forces) == 4
    if not standing:
        print('demo: the robot did not stand', file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    import rclpy
    from geometry_msgs.msg import InertiaStamped
    from rclpy.parameter import Parameter
    from trajectory_msgs.msg import JointTrajectory

    from rbd_ros.bringup import create_nodes, default_urdf
    from rbd_ros.description import read_description
    from rbd_ros.ros.node import run
    from rbd_ros.ros.robot import load_robot

    opts = parse_args(sys.argv[1:] if argv is None else argv)
    if opts.legged:
        return legged(opts)
    if opts.ankle:
        return ankle(opts)
    urdf = opts.urdf or str(default_urdf())
    try:
        xml, label = read_description(urdf, say=lambda line: print(f'demo: {line}'))
        robot = load_robot(xml, path=label)
    except ValueError as exc:        # (ModelError is one; messages start with the file)
        print(f'demo: {exc}', file=sys.stderr)
        return 2
    if robot.model.constraint_names:
        print(f'demo: {label} closes kinematic loops (<constraint>), which sim_node does not '
              'simulate yet; --ankle shows the nodes serving the bundled parallel ankle',
              file=sys.stderr)
        return 2
    names = list(robot.joint_names)
    pose = list(DEMO_POSE) if opts.urdf is None and len(names) == len(DEMO_POSE) \
        else [0.0] * len(names)
    q0 = np.clip(pose, robot.lower + AMPLITUDE, robot.upper - AMPLITUDE)
    heavy = with_payload(xml, opts.payload)
    path = opts.plot or os.path.join(tempfile.gettempdir(), 'rbd_ros_demo.png')
    tty = sys.stdout.isatty()
    print(f'rbd_ros demo: {robot.model.name} ({len(names)} joints, '
          f'{robot.model.total_mass:.2f} kg) from {urdf}')
    print('rbd_sim (lockstep: friction, damping, limits) + rbd_dynamics (computed_torque), one '
          f'process; three {PHASE_S:g} s phases, the second with a {opts.payload:g} kg payload the '
          'controller does not know')
    made = {'phase': 'starting', 'phases': {}}
    loaded, announced = f'{opts.payload:g} kg payload', f'{opts.payload:g} kg, announced'
    last_link = robot.model.frame_names[-1]

    def make():
        # (the text read once above: a pipe, <(xacro ...), has nothing left for the nodes)
        nodes = create_nodes(['sim', 'dynamics'], urdf_xml=xml, overrides={
            'sim': {'initial_positions': list(q0), 'command_joints': names, 'lockstep': True,
                    'publish_clock': True, 'publish_rate': 500.0, 'command_timeout': 1.0},
            'dynamics': {'command_source': 'computed_torque', 'command_joints': names,
                         'kp': [400.0], 'kd': [40.0], 'input_timeout': 0.0,
                         'joint_states_qos': 'reliable'}})
        node = rclpy.create_node('rbd_demo')
        made.update(nodes=nodes, node=node, recorder=Recorder(node, names),
                    ref=node.create_publisher(JointTrajectory, 'rbd_dynamics/reference', 10),
                    payload=node.create_publisher(InertiaStamped, 'rbd_dynamics/payload', 10),
                    t0=time.monotonic())
        return [*nodes, node]

    printed = [0]           # table rows on the terminal (redrawn in place)
    logged = [None]         # simulated time of the last line (not a terminal)
    logged_phases = set()   # phases that have a line in the log

    def log_line(sim):
        """One line of the log (not a terminal): the phase, the time, the latest error."""
        _, q_ref, q, e, tau = made['recorder'].rows[-1]
        logged[0] = sim.sim_time
        logged_phases.add(made['phase'])
        print(f'  {made["phase"]:<16} t {sim.sim_time:6.2f} s   max |error| '
              f'{np.max(np.abs(e)):.2e} rad   max |command| {np.max(np.abs(tau)):.1f} N m',
              flush=True)

    def send_phase(label, sim, dyn):
        if not tty and made['phase'] in made['phases'] and made['phase'] not in logged_phases \
                and made['recorder'].rows:
            log_line(sim)       # (a phase run between two ticks still gets its line)
        sim.paused = True
        start = sim.sim_time + 0.05
        made['phases'][label] = (start, start + PHASE_S)
        made['taken'] = dyn.references + 1
        made['ref'].publish(reference_msg(names, q0, start))
        made['phase'] = label

    def tick():
        sim, dyn = made['nodes']
        phase = made['phase']
        if time.monotonic() - made['t0'] > opts.timeout:
            print('demo: timed out', file=sys.stderr)
            return True
        if sim.paused and dyn.references >= made.get('taken', 0):   # reference in: go
            sim.paused = False
            if sim.runtime is not None:
                sim.publish_state(sim.runtime)
        if phase == 'starting' and sim.sim_time > 0.05 and made['ref'].get_subscription_count():
            send_phase('no payload', sim, dyn)
        elif phase == 'no payload' and sim.sim_time > made['phases'][phase][1] + 0.3:
            sim.set_parameters([Parameter('robot_description', value=heavy)])
            send_phase(loaded, sim, dyn)
        elif phase == loaded and sim.sim_time > made['phases'][phase][1] + 0.3:
            if dyn.payload is None:           # tell the controller what the arm carries
                sim.paused = True
                made['payload'].publish(payload_msg(last_link, opts.payload))
            else:                             # and bring the arm back to the start, 1.5 s
                sim.paused = True
                made['returned'] = sim.sim_time + 0.05 + RETURN_S
                made['taken'] = dyn.references + 1
                made['ref'].publish(return_msg(names, q0, sim.sim_time + 0.05))
                made['phase'] = 'returning'
        elif phase == 'returning' and sim.sim_time > made['returned'] + 0.5:
            send_phase(announced, sim, dyn)
        elif phase == announced and sim.sim_time > made['phases'][phase][1] + 0.3:
            if not tty and phase not in logged_phases and made['recorder'].rows:
                log_line(sim)
            return True
        rec = made['recorder']
        if not tty:     # a log: one line per tick with news, no table redrawn
            if rec.rows and sim.sim_time != logged[0]:
                log_line(sim)
            return False
        rows = [f'  phase: {made["phase"]:<16} simulated time {sim.sim_time:6.2f} s',
                f'  {"joint":<10}{"q_ref":>9}{"q":>9}{"error":>10}{"command N m":>13}']
        if rec.rows:
            _, q_ref, q, e, tau = rec.rows[-1]
            for j, name in enumerate(names):
                rows.append(f'  {name:<10}{q_ref[j]:9.4f}{q[j]:9.4f}{e[j]:10.2e}{tau[j]:13.3f}')
        if printed[0]:
            sys.stdout.write(f'\x1b[{printed[0]}A')
        sys.stdout.write('\n'.join(r + '\x1b[K' for r in rows) + '\n')
        sys.stdout.flush()
        printed[0] = len(rows)
        return False

    status = run(make, [sys.argv[0]], name='demo', on_tick=tick, tick_period=0.25 if tty else 1.0)
    if status or 'nodes' not in made:
        return status or 1
    rec = made['recorder']
    sim, dyn = made['nodes']
    print('\nsummary: tracking error |q_ref - q| per phase, after its first 0.5 s')
    results = {}
    for label, (start, end) in made['phases'].items():
        worst, rms = phase_errors(rec.rows, start, end)
        results[label] = worst
        print(f'  {label:<16} max {worst:.2e} rad   RMS {rms:.2e} rad')
    print(f'  saturated commands: dynamics {dyn.saturated}, sim {sim.saturated}; rejected inputs: dynamics '
          f'{sum(dyn.stats.rejected.values())}, sim {sum(sim.stats.rejected.values())}; '
          f'dynamics compute p50 {dyn.stats.compute_percentiles_us()[0]:.1f} us')
    if rec.rows:
        try:
            plot(rec.rows, names, made['phases'], path)
            print(f'plot: {path}')
        except ImportError:
            print('plot: skipped, matplotlib is not installed (pip install matplotlib)')
    if len(results) < 3 or not all(np.isfinite(v) for v in results.values()):
        print('demo: the three phases did not complete', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
