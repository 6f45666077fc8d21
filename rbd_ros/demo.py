"""The rbd_ros demo: the bundled 7-DoF arm simulated and held up by its own gravity compensation.

bringup starts ``rbd_sim`` (torque-controlled arm, from a non-trivial pose), ``rbd_dynamics``
(``command_source: gravity`` closes the loop: joint_states -> g(q) -> ~/effort_commands -> sim) and
``rbd_frames`` (TF) in one process; a monitor node prints a live table (joint, q, gravity torque,
predicted acceleration from forward dynamics) and a summary, then stops by itself after
``--duration`` seconds, or on Ctrl-C.

    python -m rbd_ros.demo [URDF] [--duration 5] [--pose q1,q2,...]
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

#: the demo's start pose for the bundled arm (rad, joint_1..joint_7): elbow bent, arm forward
DEMO_POSE = [0.3, 0.7, -0.4, 1.2, 0.5, -0.8, 0.2]


class Monitor:
    """Keeps the latest joint_states / gravity torques / forward-dynamics prediction."""

    def __init__(self, node, q0_by_name):
        from sensor_msgs.msg import JointState
        from tf2_msgs.msg import TFMessage
        from trajectory_msgs.msg import JointTrajectory

        from rbd_ros.ros.qos import OUTPUT_QOS, TF_QOS

        self.q0 = q0_by_name
        self.state = self.gravity = self.fd = None
        self.counts = {'joint_states': 0, 'gravity_torques': 0, 'forward_dynamics': 0, 'tf': 0}
        self.max_dev = 0.0
        node.create_subscription(JointState, 'joint_states', self._on_state, OUTPUT_QOS)
        node.create_subscription(JointState, 'rbd_dynamics/gravity_torques', self._on_gravity,
                                 OUTPUT_QOS)
        node.create_subscription(JointTrajectory, 'rbd_dynamics/forward_dynamics', self._on_fd,
                                 OUTPUT_QOS)
        node.create_subscription(TFMessage, '/tf', self._on_tf, TF_QOS)

    def _on_state(self, msg):
        self.state = msg
        self.counts['joint_states'] += 1
        for name, q in zip(msg.name, msg.position):
            if name in self.q0:
                self.max_dev = max(self.max_dev, abs(q - self.q0[name]))

    def _on_gravity(self, msg):
        self.gravity = msg
        self.counts['gravity_torques'] += 1

    def _on_fd(self, msg):
        self.fd = msg
        self.counts['forward_dynamics'] += 1

    def _on_tf(self, msg):
        self.counts['tf'] += 1

    def table(self, sim_time: float) -> list[str]:
        rows = [f'  sim time {sim_time:7.3f} s   joint_states {self.counts["joint_states"]:6d}'
                f'   max |q - q0| {self.max_dev:.2e} rad',
                f'  {"joint":<12}{"q [rad]":>12}{"gravity [N m]":>16}{"pred. qdd [rad/s^2]":>22}']
        if self.state is None:
            return rows + ['  (waiting for joint_states)']
        g = dict(zip(self.gravity.name, self.gravity.effort)) if self.gravity else {}
        a = dict(zip(self.fd.joint_names, self.fd.points[0].accelerations)) \
            if self.fd and self.fd.points else {}
        for name, q in zip(self.state.name, self.state.position):
            gs = f'{g[name]:16.4f}' if name in g else f'{"-":>16}'
            as_ = f'{a[name]:22.2e}' if name in a else f'{"-":>22}'
            rows.append(f'  {name:<12}{q:12.5f}{gs}{as_}')
        return rows


def parse_args(argv):
    parser = argparse.ArgumentParser(prog='python -m rbd_ros.demo', description=__doc__.split('\n\n')[0])
    parser.add_argument('urdf', nargs='?', help='URDF file (default: the bundled 7-DoF arm)')
    parser.add_argument('--duration', type=float, default=5.0, help='seconds to run (default 5)')
    parser.add_argument('--pose', help='start positions, comma-separated, in model joint order '
                        '(default: a bent-elbow pose for the bundled arm, zeros otherwise)')
    return parser.parse_args(argv)


def main(argv=None) -> int:
    import rclpy

    from rbd_ros.bringup import create_nodes, default_urdf
    from rbd_ros.ros.node import run
    from rbd_ros.ros.robot import load_robot

    opts = parse_args(sys.argv[1:] if argv is None else argv)
    urdf = opts.urdf or str(default_urdf())
    try:
        robot = load_robot(open(urdf).read(), path=urdf)
    except (OSError, ValueError) as exc:
        print(f'demo: {urdf}: {exc}', file=sys.stderr)
        return 2
    names = list(robot.joint_names)
    if opts.pose:
        pose = [float(x) for x in opts.pose.split(',')]
    elif opts.urdf is None and len(names) == len(DEMO_POSE):
        pose = list(DEMO_POSE)
    else:
        pose = [0.0] * len(names)
    pose = list(np.clip(pose, robot.lower, robot.upper))
    tty = sys.stdout.isatty()

    print(f'rbd_ros demo: {robot.model.name} ({len(names)} joints, '
          f'{robot.model.total_mass:.2f} kg) from {urdf}')
    print('bringup: rbd_sim + rbd_dynamics (command_source: gravity) + rbd_frames, one process; '
          f'running {opts.duration:g} s (Ctrl-C stops)')
    made = {}

    def make(context):
        nodes = create_nodes(['sim', 'dynamics', 'frames'], context=context, urdf_path=urdf,
                             overrides={'sim': {'initial_positions': pose,
                                                'wait_for_command': True,
                                                'command_joints': names},
                                        'dynamics': {'command_source': 'gravity',
                                                     'command_joints': names}})
        monitor_node = rclpy.create_node('rbd_demo_monitor', context=context)
        made.update(nodes=nodes, monitor=Monitor(monitor_node, dict(zip(names, pose))))
        return [*nodes, monitor_node]

    printed = [0]

    def show():
        rows = made['monitor'].table(made['nodes'][0].sim_time)
        if tty and printed[0]:
            sys.stdout.write(f'\x1b[{printed[0]}A')
        sys.stdout.write('\n'.join(r + ('\x1b[K' if tty else '') for r in rows) + '\n')
        sys.stdout.flush()
        printed[0] = len(rows)

    t_start = time.monotonic()
    status = run(make, [sys.argv[0]], name='demo', duration=opts.duration, on_tick=show,
                 tick_period=0.5 if tty else 1.0)
    if status or 'nodes' not in made:
        return status or 1
    wall = time.monotonic() - t_start
    sim, dyn = made['nodes'][0], made['nodes'][1]
    monitor = made['monitor']
    interrupted = wall < opts.duration - 0.5
    p50, p99 = dyn.stats.compute_percentiles_us()
    print('\n'.join([
        '',
        'summary' + (' (interrupted)' if interrupted else ''),
        f'  wall time {wall:.1f} s, simulated {sim.sim_time:.3f} s '
        f'({sim.steps} steps of {1e3 * sim.dt:g} ms, {sim.params["integrator"]})',
        '  messages: ' + ', '.join(f'{k} {v}' for k, v in monitor.counts.items()),
        f'  dynamics compute time per call: p50 {p50:.1f} us, p99 {p99:.1f} us',
        f'  rejected inputs: dynamics {sum(dyn.stats.rejected.values())}, '
        f'sim {sum(sim.stats.rejected.values())}',
        f'  arm held by gravity compensation: max |q - q0| = {monitor.max_dev:.2e} rad',
    ]))
    if monitor.counts['gravity_torques'] == 0 and not interrupted:
        print('demo: no gravity torques were received', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
