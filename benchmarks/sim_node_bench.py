"""sim_node's tick with a legged robot: what each publish period costs, output by output, the
real-time factor it keeps at 1 kHz, and how fast it runs a lying robot at real_time_factor 0.

    .venv/bin/python -m benchmarks sim_node [--smoke]   (or python -m benchmarks.sim_node_bench)

The robot is A1 from example-robot-data (PyPI; else the bundled Solo-12): floating base on the
ground, its URDF's collision shapes as contacts, ``publish_rate: 1000`` (one physics step per
tick), ``publish_clock: true``.

1. Per tick, standing on a position command (the default gains): ``SimNode.advance`` called in
   a loop in this process (no executor, so only the tick is timed), first with nobody
   subscribed, then adding a subscriber (a probe node that is never spun: DDS queues for it)
   to one output after another: joint_states, /clock, base_state, /tf, contact_wrenches,
   contact_markers. Each row is the best of a few blocks' mean wall time per tick; the
   physics alone (``Simulator.advance``) is the first row.
2. Real time: the node spun by the executables' executor at ``real_time_factor: 1`` with every
   output read, for a few seconds: simulated over wall time.
3. ``real_time_factor: 0``, A1 lying on its side (benchmarks/sim_bench.lying_start), settled
   for 2 s of simulated time first: steps per wall second over a few seconds (the real-time
   factor, at publish_rate 100 and 1000), with /diagnostics read by a probe that is spun: how
   many arrived and the longest gap between two of them (diagnostics_period 1 s).

On loopback (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST), on a private ROS domain id. ``--smoke``
runs for a few seconds and only checks that the machinery works (nothing asserts a time).
"""
from __future__ import annotations

import argparse
import math
import os
import threading
import time

from benchmarks.isolation import private_domain_id
from benchmarks.sim_bench import SOLO, STAND, robot_path

#: A1 standing: hip, thigh, calf of each leg (FR, FL, RR, RL)
A1_STAND = [0.0, 0.9, -1.8] * 4


def robot():
    """(label, URDF path, standing joint positions, contact_points)."""
    a1 = robot_path('a1_description', 'urdf', 'a1.urdf')
    if a1:
        return 'A1', a1, A1_STAND, []
    feet = [f'{leg}_FOOT 0 0 0 0.0075' for leg in ('FL', 'FR', 'HL', 'HR')]
    return 'Solo-12', SOLO, STAND, feet


def make_node(context, name, path, joints, contact_points, **params):
    from rclpy.parameter import Parameter

    from rbd_ros.nodes.sim import SimNode
    base = {'robot_description_file': path, 'floating_base': True, 'publish_rate': 1000.0,
            'publish_clock': True, 'initial_positions': joints,
            'contact_points': contact_points, 'command_timeout': 1e9}
    base.update(params)
    base = {k: v for k, v in base.items() if v != []}   # (an empty list types as bytes)
    return SimNode(context=context, node_name=name,
                   parameter_overrides=[Parameter(k, value=v) for k, v in base.items()])


def command_stance(node, joints) -> None:
    """A position command holding the standing pose, through the node's own callback."""
    from sensor_msgs.msg import JointState
    names = list(node.runtime.robot.joint_names)
    node.on_joint_commands(JointState(name=names, position=[float(x) for x in joints],
                                      velocity=[0.0] * len(names)))


def per_tick_us(node, ticks: int, blocks: int) -> float:
    rt = node.runtime
    best = math.inf
    for _ in range(blocks):
        t0 = time.perf_counter()
        for _ in range(ticks):
            node.advance(rt, force=True)
        best = min(best, (time.perf_counter() - t0) / ticks)
    return best * 1e6


def physics_us(node, ticks: int, blocks: int) -> float:
    sim = node.runtime.sim
    best = math.inf
    for _ in range(blocks):
        t0 = time.perf_counter()
        for _ in range(ticks):
            sim.advance(node.substeps)
        best = min(best, (time.perf_counter() - t0) / ticks)
    return best * 1e6


def wait_matched(node, topic, count=1, timeout=10.0) -> None:
    deadline = time.monotonic() + timeout
    while node.count_subscribers(topic) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f'no subscriber matched on {topic}')
        time.sleep(0.01)


def tick_table(context, label, path, joints, points, ticks, blocks) -> None:
    from geometry_msgs.msg import WrenchStamped
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage
    from visualization_msgs.msg import MarkerArray

    from rbd_ros.ros.qos import OUTPUT_QOS, TF_QOS
    node = make_node(context, 'rbd_sim', path, joints, points)
    import rclpy
    probe = rclpy.create_node('rbd_bench_idle_probe', context=context)
    command_stance(node, joints)
    for _ in range(500):        # standing, settled
        node.advance(node.runtime, force=True)
    contacts = len(node.runtime.sim.contacts())
    links = len({c[0] for c in node.runtime.sim.contacts()})
    print(f'{label} standing at publish_rate 1000 (1 step per tick): {contacts} contact points '
          f'on {links} links; us of wall time per tick, best of {blocks} x {ticks} ticks\n')
    print('| what is subscribed | us per tick | added |')
    print('|---|---:|---:|')
    physics = physics_us(node, ticks, blocks)
    print(f'| the physics step alone (Simulator.advance) | {physics:.1f} | |', flush=True)
    before = per_tick_us(node, ticks, blocks)
    print(f'| nothing | {before:.1f} | {before - physics:+.1f} |', flush=True)
    for what, msg_type, topic, qos in (
            ('+ joint_states', JointState, 'joint_states', OUTPUT_QOS),
            ('+ /clock', Clock, '/clock', OUTPUT_QOS),
            ('+ base_state', Odometry, '/rbd_sim/base_state', OUTPUT_QOS),
            ('+ /tf', TFMessage, '/tf', TF_QOS),
            ('+ contact_wrenches', WrenchStamped, '/rbd_sim/contact_wrenches', OUTPUT_QOS),
            ('+ contact_markers (30 Hz)', MarkerArray, '/rbd_sim/contact_markers',
             OUTPUT_QOS)):
        probe.create_subscription(msg_type, topic, lambda msg: None, qos)
        wait_matched(node, topic)
        time.sleep(0.2)         # (the publisher's matched event)
        now = per_tick_us(node, ticks, blocks)
        print(f'| {what} | {now:.1f} | {now - before:+.1f} |', flush=True)
        before = now
    print(f'\nper tick, every output read: {before:.1f} us = {before / 10:.0f}% of the 1 ms '
          'period\n')
    probe.destroy_node()
    node.destroy_node()


def spin_for(node, seconds, diag_box=None) -> tuple[float, float]:
    """(simulated s, wall s) of ``seconds`` of spinning the node with the executables'
    executor."""
    from rbd_ros.ros.node import make_executor, spin
    executor = make_executor(context=node.context)
    executor.add_node(node)
    try:
        t0, s0 = time.monotonic(), node.sim_time
        spin(executor, context=node.context, duration=seconds)
        return node.sim_time - s0, time.monotonic() - t0
    finally:
        executor.remove_node(node)
        executor.shutdown()


def real_time(context, label, path, joints, points, seconds) -> None:
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage
    from visualization_msgs.msg import MarkerArray

    from rbd_ros.ros.qos import OUTPUT_QOS, TF_QOS
    node = make_node(context, 'rbd_sim', path, joints, points, real_time_factor=1.0)
    probe = rclpy.create_node('rbd_bench_idle_probe', context=context)
    for msg_type, topic, qos in ((JointState, 'joint_states', OUTPUT_QOS),
                                 (Clock, '/clock', OUTPUT_QOS),
                                 (Odometry, '/rbd_sim/base_state', OUTPUT_QOS),
                                 (TFMessage, '/tf', TF_QOS),
                                 (WrenchStamped, '/rbd_sim/contact_wrenches', OUTPUT_QOS),
                                 (MarkerArray, '/rbd_sim/contact_markers', OUTPUT_QOS)):
        probe.create_subscription(msg_type, topic, lambda msg: None, qos)
        wait_matched(node, topic)
    command_stance(node, joints)
    spin_for(node, 1.0)         # (warm-up)
    simulated, wall = spin_for(node, seconds)
    print(f'| {label} standing, real_time_factor 1, every output read | 1000 | '
          f'{simulated / wall:.3f}x | |', flush=True)
    probe.destroy_node()
    node.destroy_node()


class DiagnosticsProbe:
    """/diagnostics received in a thread of its own (its executor spun there)."""

    def __init__(self, context):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor

        from rbd_ros.ros.qos import OUTPUT_QOS
        self.times = []
        self.messages = []
        self.node = rclpy.create_node('rbd_bench_diagnostics_probe', context=context)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on, OUTPUT_QOS)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self._stop = False
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _on(self, msg):
        self.times.append(time.monotonic())
        self.messages.append(msg)

    def _spin(self):
        while not self._stop:
            self.executor.spin_once(timeout_sec=0.05)

    def close(self):
        self._stop = True
        self.thread.join(timeout=2)
        self.executor.shutdown()
        self.node.destroy_node()


def lying(context, path, seconds, publish_rate) -> None:
    import rbd_ros.dynamics as rbd
    from benchmarks.sim_bench import lying_start
    q = lying_start(rbd.Model.from_urdf(path, floating_base=True), 'a1')
    node = make_node(context, 'rbd_sim', path, [], [], real_time_factor=0.0,
                     publish_rate=publish_rate, initial_base_pose=[float(x) for x in q[:7]],
                     command_timeout=0.1)
    while node.sim_time < 2.0:          # settling (not timed)
        node.advance(node.runtime, force=True)
    probe = DiagnosticsProbe(context)
    try:
        start = len(probe.times)
        simulated, wall = spin_for(node, seconds)
        times = probe.times[start:]
        gaps = [b - a for a, b in zip(times, times[1:])]
        levels = {int.from_bytes(bytes(m.status[0].level), 'little')
                  if isinstance(m.status[0].level, bytes) else int(m.status[0].level)
                  for m in probe.messages[start:] if m.status}
        print(f'| A1 lying on its side, real_time_factor 0 | {publish_rate:g} | '
              f'{simulated / wall:.2f}x | {len(times)} in {wall:.1f} s, longest gap '
              f'{max(gaps) if gaps else math.nan:.2f} s, levels {sorted(levels)} |',
              flush=True)
    finally:
        probe.close()
        node.destroy_node()


def run(smoke: bool = False) -> int:
    import rclpy
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=private_domain_id())
    label, path, joints, points = robot()
    ticks, blocks, seconds = (100, 2, 1.5) if smoke else (1000, 5, 8.0)
    try:
        tick_table(context, label, path, joints, points, ticks, blocks)
        print('| run | publish_rate | simulated s per wall s | /diagnostics (period 1 s) |')
        print('|---|---:|---:|---|')
        real_time(context, label, path, joints, points, seconds)
        if label == 'A1':
            for rate in (100.0, 1000.0):
                lying(context, path, seconds, rate)
    finally:
        context.try_shutdown()
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog='python -m benchmarks sim_node',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--smoke', action='store_true', help='a few seconds')
    return run(parser.parse_args(argv).smoke)


if __name__ == '__main__':
    raise SystemExit(main())
