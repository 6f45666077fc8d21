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

        from rbd_ros.ros_conversions import OUTPUT_QOS, TF_QOS

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
    from rclpy.executors import ExternalShutdownException

    from rbd_ros.bringup import create_nodes, default_urdf
    from rbd_ros.ros_conversions import load_model, make_executor

    opts = parse_args(sys.argv[1:] if argv is None else argv)
    urdf = opts.urdf or str(default_urdf())
    xml = open(urdf).read()
    loaded = load_model(xml, False, (0.0, 0.0, -9.81))
    names = list(loaded.joint_names)
    if opts.pose:
        pose = [float(x) for x in opts.pose.split(',')]
    elif opts.urdf is None and len(names) == len(DEMO_POSE):
        pose = list(DEMO_POSE)
    else:
        pose = [0.0] * len(names)
    pose = list(np.clip(pose, loaded.lower, loaded.upper))
    tty = sys.stdout.isatty()

    print(f'rbd_ros demo: {loaded.model.name} ({len(names)} joints, '
          f'{loaded.model.total_mass:.2f} kg) from {urdf}')
    print('bringup: rbd_sim + rbd_dynamics (command_source: gravity) + rbd_frames, one process; '
          f'running {opts.duration:g} s (Ctrl-C stops)')
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes, executor, monitor_node = [], None, None
    interrupted = False
    t_start = time.monotonic()
    try:
        nodes = create_nodes(['sim', 'dynamics', 'frames'], context=context, urdf_xml=xml,
                             overrides={'sim': {'initial_positions': pose,
                                                'wait_for_command': True,
                                                'command_joints': names},
                                        'dynamics': {'command_source': 'gravity',
                                                     'command_joints': names}})
        sim = nodes[0]
        monitor_node = rclpy.create_node('rbd_demo_monitor', context=context)
        monitor = Monitor(monitor_node, dict(zip(names, pose)))
        executor = make_executor(context)
        for node in [*nodes, monitor_node]:
            executor.add_node(node)
        printed = 0
        next_print = time.monotonic() + 0.5
        while time.monotonic() - t_start < opts.duration:
            executor.spin_once(timeout_sec=0.05)
            if time.monotonic() >= next_print:
                rows = monitor.table(sim.sim_time)
                if tty and printed:
                    sys.stdout.write(f'\x1b[{printed}A')
                sys.stdout.write('\n'.join(r + ('\x1b[K' if tty else '') for r in rows) + '\n')
                sys.stdout.flush()
                printed = len(rows)
                next_print += 0.5 if tty else 1.0
    except (KeyboardInterrupt, ExternalShutdownException):
        interrupted = True
    finally:
        wall = time.monotonic() - t_start
        summary = None
        if len(nodes) >= 2 and monitor_node is not None:
            p50, p99 = nodes[1].stats.compute_percentiles_us()
            summary = [
                '',
                'summary' + (' (interrupted)' if interrupted else ''),
                f'  wall time {wall:.1f} s, simulated {nodes[0].sim_time:.3f} s '
                f'({nodes[0].steps} steps of {1e3 * nodes[0].dt:g} ms, '
                f'{nodes[0].params["integrator"]})',
                '  messages: ' + ', '.join(f'{k} {v}' for k, v in monitor.counts.items()),
                f'  dynamics compute time per call: p50 {p50:.1f} us, p99 {p99:.1f} us',
                f'  rejected inputs: dynamics {sum(nodes[1].stats.rejected.values())}, '
                f'sim {sum(nodes[0].stats.rejected.values())}',
                f'  arm held by gravity compensation: max |q - q0| = {monitor.max_dev:.2e} rad',
            ]
        if executor is not None:
            executor.shutdown()
        for node in [*nodes, *([monitor_node] if monitor_node else [])]:
            node.destroy_node()
        context.try_shutdown()
    if summary:
        print('\n'.join(summary))
    ok = summary is not None and monitor.counts['gravity_torques'] > 0
    if not ok and not interrupted:
        print('demo: no gravity torques were received', file=sys.stderr)
    return 0 if ok or interrupted else 1


if __name__ == '__main__':
    raise SystemExit(main())
