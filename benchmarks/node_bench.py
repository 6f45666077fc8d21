"""dynamics_node at 1 kHz against a bare rclpy relay, in one run: latency, then CPU per output.

    .venv/bin/python -m benchmarks.node_bench [--smoke] [--only latency|cpu] [--duration S]
                                              [--cpu-duration S] [--block S]
                                              [--transport shm|udp] [--baseline DIR]
                                              [--baseline-rows K]

This process is the driver: it publishes a 7-joint ``sensor_msgs/JointState`` (position, velocity
and effort) at 1 kHz from an rclpy timer, stamped with the send time, and records when each
output comes back (raw subscriptions, reliable and 1000 deep: it reads only the stamp, and a
burst after a stall of the process under test is not dropped on its side). Two processes under
test run side by side, on the same transport, QoS and executor type:

1. a bare rclpy relay (this module with ``--relay``): republishes every message it receives on
   its input topic as it is on two topics, nothing else -- the baseline of a plain rclpy node
   with dynamics_node's two outputs per input, so that this driver receives the same message
   rate from both;
2. ``dynamics_node`` (``python -m rbd_ros.nodes.dynamics``) on the bundled 7-DoF arm with gravity,
   forward dynamics and diagnostics on, reading ``joint_states``: ``~/gravity_torques`` and
   ``~/forward_dynamics`` carry the input's stamp.

The driver's messages go to one of the two at a time, in alternating blocks of ``--block`` s
(1), until each has had ``--duration`` s (60) of input at 1 kHz; the other one idles meanwhile
(its 1 Hz timers aside). Interleaving puts both under the same load of the machine: measured
one after the other, 30 s apart, the relay's own p99 moved by up to 300 us on this 2-core VM,
as much as the p99 target itself.

Latency = receipt time - input stamp (one clock: both are taken in this process). Lost = sent
in a measuring block and never received; how many of those never reached dynamics_node comes
from its own /diagnostics (messages_received). Added latency = dynamics_node - relay, percentile
by percentile. CPU = utime + stime of the process over its own blocks (/proc/<pid>/stat), as %
of one core; the node's RSS is sampled every second from /proc/<pid>/status from the end of the
warm-up to the end. Start-up = process spawn to the first gravity torque received (driver
publishing at 1 kHz throughout), median of 9 starts after the run (whose untimed first start
warms any compile cache), with the time at which the node logged its model (up, before DDS
discovery), each after a random pause (see STARTUP_PAUSE_S).

Then the CPU per output enabled (``--only cpu`` alone): the relay again and one dynamics_node
per row of OUTPUT_ROWS, each row one output (or two) more than the row before (observer off:
gravity and forward dynamics; the defaults: + external torques; + the wrench estimate; + a
reference: inverse dynamics and tracking error; + effort commands), all running side by side
and driven in turn, ``--cpu-duration`` s (15) each; the driver subscribes to every output.
The table gives each one's CPU, what its row added, how many of each output arrived per input
(a row that published nothing would look cheap) and its longest garbage-collector pause
(/diagnostics ``gc_pause_max_us``). ``--baseline DIR`` (another checkout, e.g. ``git worktree
add /tmp/main main``) runs that checkout's dynamics_node beside this one in both parts, in the
same interleaved run: a before / after under one machine load.

Everything stays on loopback (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST) on a private ROS domain
id. ``--smoke`` runs for a few seconds and only checks that the machinery works (the test suite
runs it; no timing is asserted anywhere).
"""
from __future__ import annotations

import argparse
import array
import gc
import math
import os
import pathlib
import platform
import random
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from benchmarks.isolation import private_domain_id

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARM_URDF = ROOT / 'rbd_ros' / 'robots' / 'rbd_arm7.urdf'
NODE = 'rbd_dynamics'
GRAVITY = f'/{NODE}/gravity_torques'
FD = f'/{NODE}/forward_dynamics'
RELAY_NODE = 'rbd_bench_relay'
RELAY_IN = f'/{RELAY_NODE}/input'
RELAY_OUT = f'/{RELAY_NODE}/joint_states'
RELAY_OUT_2 = f'/{RELAY_NODE}/joint_states_2'
CLK_TCK = os.sysconf('SC_CLK_TCK')
STAMP_LE, STAMP_BE = struct.Struct('<iI'), struct.Struct('>iI')   # header.stamp after the
                                                                  # 4-byte CDR encapsulation
#: start-ups: the pause before each (s, uniform) and its seed. Fast DDS (3.2) can lose a peer's
#: answer to a new participant's first announcement (it announces before it listens); the two
#: then meet at the peer's next periodic announcement, every 3 s. The pauses spread the starts
#: over that cycle, so the median says how often and how long that wait happens.
STARTUP_PAUSE_S = (0.5, 3.5)
STARTUP_SEED = 4
#: a first torque later than this after the node was up counts as a wait for discovery
DISCOVERY_LATE_S = 0.3
TARGETS = {'added_p50_us': 50.0, 'added_p99_us': 200.0, 'cpu_pct': 35.0, 'rss_mb': 5.0,
           'startup_s': 2.0, 'gc_pause_us': 1000.0}
#: a message later than this (us) is counted as late: one period at 1 kHz
LATE_US = 1000.0


# --------------------------------------------------------------------------------------------
# Environment: private domain, loopback only, transport
# --------------------------------------------------------------------------------------------

def configure_environment(transport: str, log_dir: str) -> dict:
    """Set (in os.environ, inherited by the child processes) everything that keeps the run on
    loopback and private. Returns a description for the report."""
    domain = private_domain_id()
    os.environ['ROS_DOMAIN_ID'] = str(domain)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['ROS_LOG_DIR'] = log_dir
    os.environ.setdefault('RCUTILS_COLORIZED_OUTPUT', '0')
    if transport == 'udp':
        os.environ['FASTDDS_BUILTIN_TRANSPORTS'] = 'UDPv4'
    elif transport == 'shm':
        os.environ.pop('FASTDDS_BUILTIN_TRANSPORTS', None)   # Fast DDS default: SHM + UDPv4
    return {'domain': domain, 'transport': transport,
            'rmw': os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp (default)')}


def default_transport() -> str:
    """udp when the caller already asked Fast DDS for UDP only (the test suite does, so that no
    /dev/shm segments are left behind), else shm (Fast DDS's default on one host)."""
    return 'udp' if os.environ.get('FASTDDS_BUILTIN_TRANSPORTS', '').upper() == 'UDPV4' \
        else 'shm'


# --------------------------------------------------------------------------------------------
# /proc sampling
# --------------------------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of ``pid`` so far, in seconds."""
    with open(f'/proc/{pid}/stat') as fh:
        fields = fh.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK   # fields 14 and 15 of stat(5)


def rss_mb(pid: int) -> float:
    with open(f'/proc/{pid}/status') as fh:
        for line in fh:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return math.nan


# --------------------------------------------------------------------------------------------
# The relay (runs in its own process: python -m benchmarks.node_bench --relay)
# --------------------------------------------------------------------------------------------

def relay_main(raw: bool = False, outputs: int = 2, namespace: str = '') -> int:
    """A bare rclpy relay: every JointState on RELAY_IN is republished as it is, twice (two
    topics, as dynamics_node publishes gravity then forward dynamics), on the same QoS profiles
    and the same executor type as dynamics_node. It is the plain relay a ROS user writes
    (typed messages in and out); dynamics_node's raw-bytes I/O is part of what is measured.

    ``raw``: bytes in, the same bytes out (rclpy's floor for a node that reads and writes
    bytes, as dynamics_node does); ``outputs``: how many topics (the third and later:
    ``~/joint_states_<k>``); ``namespace``: where its topics are (RELAY_IN and the outputs
    under it)."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from sensor_msgs.msg import JointState

    from rbd_ros.ros.node import make_executor, spin
    from rbd_ros.ros.qos import OUTPUT_QOS, joint_states_qos

    rclpy.init()
    node = rclpy.create_node(RELAY_NODE, namespace=namespace or None)
    pubs = [node.create_publisher(JointState, '~/joint_states' + (f'_{k + 1}' if k else ''),
                                  OUTPUT_QOS) for k in range(outputs)]

    def relay(msg: JointState):
        for pub in pubs:
            pub.publish(msg)
    node.create_subscription(JointState, namespace + RELAY_IN, relay,
                             joint_states_qos('sensor_data'), raw=raw)
    executor = make_executor()
    executor.add_node(node)
    try:
        spin(executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


# --------------------------------------------------------------------------------------------
# The driver (this process)
# --------------------------------------------------------------------------------------------

class Receipts:
    """(input stamp, receipt time) in ns of the messages received on one topic, in two int64
    arrays: the driver keeps 10^5 of them and nothing the garbage collector has to scan."""

    def __init__(self):
        self.stamps, self.times = array.array('q'), array.array('q')

    def __len__(self) -> int:
        return len(self.stamps)

    def first(self) -> tuple[int, int]:
        return self.stamps[0], self.times[0]


class Driver:
    """Publishes a JointState at ``rate`` Hz from a timer to ``target`` ('node': joint_states,
    'relay': RELAY_IN, None: nobody), records send stamps per target and receipt times, samples
    RSS of ``watch_pid`` every second. Single-threaded: everything runs in one executor that the
    main code spins with :meth:`spin_for` / :meth:`spin_until`."""

    def __init__(self, names: list[str], rate: float):
        import rclpy
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState

        from rbd_ros.ros.node import make_executor

        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=int(os.environ['ROS_DOMAIN_ID']))
        self.node = rclpy.create_node('rbd_bench_driver', context=self.context)
        self.executor = make_executor(self.context)
        self.executor.add_node(self.node)
        # as a ros2_control joint_state_broadcaster publishes (reliable, keep last 10)
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self._qos, self._msg_type = qos, JointState
        self.pubs, self.sent = {}, {}        # per target: its publisher, the stamps sent to it
        self.add_target('node', 'joint_states')
        self.add_target('relay', RELAY_IN)
        n = len(names)
        self.msg = JointState(name=list(names))
        # a few hundred distinct, smooth states, cycled (no per-send allocation in the driver)
        self.states = []
        for k in range(500):
            s = 2 * math.pi * k / 500
            self.states.append((
                array.array('d', [0.8 * math.sin(s + 0.7 * i) for i in range(n)]),
                array.array('d', [0.5 * math.cos(s + 0.3 * i) for i in range(n)]),
                array.array('d', [2.0 * math.sin(2 * s + 0.5 * i) for i in range(n)])))
        self.target: str | None = None
        self.subs = []
        self.watch_pid: int | None = None
        self.rss: list[float] = []
        self._k = 0
        from rclpy.task import Future
        self._never = Future()
        self.timer = self.node.create_timer(1.0 / rate, self._tick)
        self.sampler = self.node.create_timer(1.0, self._sample)

    def add_target(self, name: str, topic: str) -> None:
        """Another process to drive: its joint_states topic (time_ns stamps of every send
        recorded in ``sent[name]``)."""
        self.pubs[name] = self.node.create_publisher(self._msg_type, topic, self._qos)
        self.sent[name] = array.array('q')

    def _tick(self) -> None:
        target = self.target
        if target is None:
            return
        msg = self.msg
        msg.position, msg.velocity, msg.effort = self.states[self._k % 500]
        self._k += 1
        t = time.time_ns()
        stamp = msg.header.stamp
        stamp.sec, stamp.nanosec = divmod(t, 1_000_000_000)
        self.pubs[target].publish(msg)
        self.sent[target].append(t)

    def _sample(self) -> None:
        if self.watch_pid is not None:
            try:
                self.rss.append(rss_mb(self.watch_pid))
            except OSError:
                pass

    def listen(self, msg_type, topic: str) -> 'Receipts':
        """Record (stamp ns, receipt ns) of every message on ``topic``. Raw subscription: the
        stamp is read from the bytes (every stamped message starts with its header), so the
        driver's cost per receipt is the same small one for every message type."""
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        # reliable like the outputs, and deep: a burst after a stall of the process under test
        # must not be dropped here (a keep-last-10 reader would)
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        box = Receipts()
        stamps, times = box.stamps, box.times

        def on_msg(data: bytes):
            t = time.time_ns()
            sec, nanosec = (STAMP_LE if data[1] == 1 else STAMP_BE).unpack_from(data, 4)
            stamps.append(sec * 1_000_000_000 + nanosec)
            times.append(t)
        self.subs.append(self.node.create_subscription(msg_type, topic, on_msg, qos,
                                                       raw=True))
        return box

    def count(self, msg_type, topic: str) -> list:
        """A one-element list that counts the messages received on ``topic`` (any type,
        stamped or not: raw subscription, nothing read)."""
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        box = [0]

        def on_msg(data: bytes):
            box[0] += 1
        self.subs.append(self.node.create_subscription(msg_type, topic, on_msg, qos, raw=True))
        return box

    def listen_diagnostics(self, node_name: str) -> dict:
        """The latest /diagnostics key-values of the node whose fully qualified name is
        ``node_name`` (filled in place)."""
        from diagnostic_msgs.msg import DiagnosticArray

        from rbd_ros.ros.qos import OUTPUT_QOS
        latest: dict = {}

        def on_diag(msg):
            for status in msg.status:
                if status.name.startswith(node_name + ':'):
                    latest.clear()
                    latest.update({kv.key: kv.value for kv in status.values})
        self.subs.append(self.node.create_subscription(DiagnosticArray, '/diagnostics',
                                                       on_diag, OUTPUT_QOS))
        return latest

    def unlisten(self) -> None:
        for sub in self.subs:
            self.node.destroy_subscription(sub)
        self.subs = []

    def spin_for(self, seconds: float) -> None:
        self.spin_until(lambda: False, seconds)

    def spin_until(self, predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if predicate():
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.executor.spin_until_future_complete(self._never, timeout_sec=min(0.05, left))

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


# --------------------------------------------------------------------------------------------
# Processes under test
# --------------------------------------------------------------------------------------------

class Child:
    """A process under test, its output in a log file."""

    def __init__(self, argv: list[str], log_path: str, tree: pathlib.Path = ROOT):
        self.log_path = log_path
        self.log = open(log_path, 'w')
        self.t_spawn_ns = time.time_ns()
        env = None
        if tree != ROOT:       # a baseline checkout: its rbd_ros first on the path
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [str(tree)] + [x for x in [os.environ.get('PYTHONPATH')] if x]))
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     cwd=str(tree), env=env)
        self.pid = self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def logged_at(self, pattern: str) -> float | None:
        """Seconds from spawn to the first log line matching ``pattern`` (rcutils' default
        format: ``[LEVEL] [sec.nsec] [node]: message``), or None."""
        import re
        if not self.log.closed:
            self.log.flush()
        text = pathlib.Path(self.log_path).read_text(errors='replace')
        match = re.search(r'\[(\d+\.\d+)\] ' + pattern, text)
        return float(match.group(1)) - self.t_spawn_ns / 1e9 if match else None

    def tail(self, lines: int = 20) -> str:
        if not self.log.closed:
            self.log.flush()
        text = pathlib.Path(self.log_path).read_text(errors='replace').splitlines()
        return '\n'.join(text[-lines:])


def dynamics_params_file(tmp: str, name: str = 'dynamics_bench', **overrides) -> str:
    """A parameters file for every dynamics_node (``/**``): the bundled arm, ``command_source:
    none``, the defaults otherwise, then ``overrides``."""
    import yaml
    params = {'/**': {'ros__parameters': {
        'robot_description': ARM_URDF.read_text(),
        'joint_states_qos': 'sensor_data',
        'diagnostics_period': 1.0,
        'command_source': 'none',
        **overrides,
    }}}
    path = os.path.join(tmp, f'{name}.yaml')
    with open(path, 'w') as fh:
        yaml.safe_dump(params, fh)
    return path


# --------------------------------------------------------------------------------------------
# One measured phase
# --------------------------------------------------------------------------------------------

class PhaseError(RuntimeError):
    pass


def latency_stats(sent_window, box: 'Receipts') -> dict:
    """Latency percentiles (us) and loss of the messages sent in the window."""
    import numpy as np
    recv = {}
    for stamp, t in zip(box.stamps, box.times):
        recv.setdefault(stamp, t)   # the first receipt counts
    lat = [recv[s] - s for s in sent_window if s in recv]
    out = {'sent': len(sent_window), 'received': len(lat), 'lost': len(sent_window) - len(lat)}
    if lat:
        arr = np.asarray(lat, dtype=float) / 1e3
        p50, p90, p99 = np.percentile(arr, [50, 90, 99])
        out.update(p50=float(p50), p90=float(p90), p99=float(p99), max=float(arr.max()),
                   late=int(np.count_nonzero(arr > LATE_US)))
    else:
        out.update(p50=math.nan, p90=math.nan, p99=math.nan, max=math.nan, late=0)
    return out


def wait_first(driver: Driver, child: Child, target: str, box: 'Receipts',
               timeout: float) -> float:
    """Drive ``target`` until ``box`` holds a message; seconds from spawn to its receipt."""
    driver.target = target
    try:
        ok = driver.spin_until(lambda: box or not child.alive(), timeout)
    finally:
        driver.target = None
    if not ok or not child.alive():
        raise PhaseError(f'no answer from {target} within {timeout:.0f} s (process '
                         f'{"running" if child.alive() else "exited"}); its log:\n' + child.tail())
    return (box.first()[1] - child.t_spawn_ns) / 1e9


def run_interleaved(driver: Driver, children: dict, *, warmup: float, duration: float,
                    block: float, say, watch: str | None = 'node', on_measure=None) -> dict:
    """Drive the running ``children`` ({target: Child}) in turn, ``block`` s each: ``warmup`` s
    unrecorded, then until each has had ``duration`` s. Returns per target the stamps sent in
    its blocks (all, and the first and second half of the run apart), and its CPU use over its
    own blocks. RSS of ``watch`` is sampled meanwhile (driver.rss); ``on_measure()`` is called
    when the warm-up ends."""
    def alive():
        for target, child in children.items():
            if not child.alive():
                raise PhaseError(f'{target} exited; its log:\n' + child.tail())

    targets = list(children)
    t_end, k = time.monotonic() + warmup, 0
    while time.monotonic() < t_end:
        driver.target = targets[k % len(targets)]
        driver.spin_for(min(block, max(0.0, t_end - time.monotonic())))
        alive()
        k += 1
    if on_measure is not None:
        on_measure()
    if watch is not None:
        driver.rss, driver.watch_pid = [rss_mb(children[watch].pid)], children[watch].pid
    blocks = max(2, round(duration / block))
    sent = {t: [] for t in targets}            # per block: the stamps sent in it
    cpu, wall = dict.fromkeys(targets, 0.0), dict.fromkeys(targets, 0.0)
    say(f'  measuring: {blocks} blocks of {block:g} s each, alternating')
    for _ in range(blocks):
        for target in targets:
            pid = children[target].pid
            driver.target = target
            i0, c0, t0 = len(driver.sent[target]), cpu_seconds(pid), time.monotonic()
            driver.spin_for(block)
            i1, c1, t1 = len(driver.sent[target]), cpu_seconds(pid), time.monotonic()
            sent[target].append(driver.sent[target][i0:i1])
            cpu[target] += c1 - c0
            wall[target] += t1 - t0
        alive()
    driver.target = None
    if watch is not None:
        driver.rss.append(rss_mb(children[watch].pid))
        driver.watch_pid = None

    def joined(parts):
        out = array.array('q')
        for part in parts:
            out += part
        return out
    half = blocks // 2
    return {t: {'window': joined(sent[t]),
                'halves': (joined(sent[t][:half]), joined(sent[t][half:])),
                'cpu_pct': 100.0 * cpu[t] / wall[t], 'window_s': wall[t],
                'send_rate_hz': sum(len(p) for p in sent[t]) / wall[t]}
            for t in targets}


def summarize(run: dict, boxes: dict) -> dict:
    """Latency and loss per topic of one target's run, over all its blocks and per half."""
    return dict(run, topics={topic: latency_stats(run['window'], box)
                             for topic, box in boxes.items()},
                halves=tuple({topic: latency_stats(h, box) for topic, box in boxes.items()}
                             for h in run['halves']))


def time_to_first(driver: Driver, child: Child, topic: str, msg_type, timeout: float) -> float:
    """Seconds from spawn to the first message on ``topic`` (driver publishing meanwhile)."""
    box = driver.listen(msg_type, topic)
    try:
        return wait_first(driver, child, 'node', box, timeout)
    finally:
        driver.unlisten()


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

def fmt(x, digits=0) -> str:
    return '-' if x is None or (isinstance(x, float) and math.isnan(x)) else f'{x:.{digits}f}'


def verdict(ok: bool | None) -> str:
    return '' if ok is None else ('yes' if ok else '**no**')


def report(info: dict, relay: dict, dyn: dict, starts: list[float], out=print) -> list[tuple]:
    """Print the markdown table; returns its rows."""
    r, r2 = relay['topics'][RELAY_OUT], relay['topics'][RELAY_OUT_2]
    g = dyn['topics'][GRAVITY]
    f = dyn['topics'][FD]
    add50, add99 = g['p50'] - r['p50'], g['p99'] - r['p99']
    rss = [x for x in dyn['rss'] if not math.isnan(x)]
    rss_span = max(rss) - min(rss) if rss else math.nan
    startup = statistics.median(starts) if starts else math.nan
    node = dyn.get('node', {})
    gc_max = node.get('gc_pause_max_us', '-')
    lost_total = g['lost'] + f['lost']
    rows = [
        ('joint_states sent in the window (rate)',
         f"{r['sent']} ({relay['send_rate_hz']:.0f} Hz)",
         f"{g['sent']} ({dyn['send_rate_hz']:.0f} Hz)", '', '', ''),
        ('lost: gravity_torques / forward_dynamics', f"{r['lost']} / {r2['lost']}",
         f"{g['lost']} / {f['lost']}", '', '0', verdict(lost_total == 0)),
        ('of which lost on the way in (node diagnostics, whole run)', '',
         fmt(node.get('input_lost')), '', '', ''),
        ('latency p50, us: gravity_torques', fmt(r['p50']), fmt(g['p50']), fmt(add50),
         f"< {TARGETS['added_p50_us']:.0f} added", verdict(add50 < TARGETS['added_p50_us'])),
        ('latency p90, us: gravity_torques', fmt(r['p90']), fmt(g['p90']),
         fmt(g['p90'] - r['p90']), '', ''),
        ('latency p99, us: gravity_torques', fmt(r['p99']), fmt(g['p99']), fmt(add99),
         f"< {TARGETS['added_p99_us']:.0f} added", verdict(add99 < TARGETS['added_p99_us'])),
        ('latency max, us: gravity_torques (what is left: below the table)', fmt(r['max']),
         fmt(g['max']), fmt(g['max'] - r['max']), '', ''),
        (f'messages later than {LATE_US:.0f} us: gravity_torques', str(r['late']),
         str(g['late']), f"{g['late'] - r['late']:+d}", '', ''),
        ('longest garbage-collector pause in the node, us: wall (CPU; collections per '
         'generation)', '', f"{gc_max} ({node.get('gc_pause_cpu_max_us', '-')}; "
         f"{node.get('gc_collections', '-')})", '', f"< {TARGETS['gc_pause_us']:.0f}",
         verdict(float(gc_max) < TARGETS['gc_pause_us'] if gc_max != '-' else None)),
        ('latency p50 / p99, us: forward_dynamics (relay: its 2nd output)',
         f"{fmt(r2['p50'])} / {fmt(r2['p99'])}", f"{fmt(f['p50'])} / {fmt(f['p99'])}",
         f"{fmt(f['p50'] - r2['p50'])} / {fmt(f['p99'] - r2['p99'])}", '', ''),
        ('latency max, us: forward_dynamics', '', fmt(f['max']), fmt(f['max'] - r2['max']), '',
         ''),
        ('core calls in the node (diagnostics), p50 / p99 us', '',
         f"{node.get('compute_time_p50_us', '-')} / {node.get('compute_time_p99_us', '-')}",
         '', '', ''),
        ('CPU, % of one core', fmt(relay['cpu_pct'], 1), fmt(dyn['cpu_pct'], 1),
         fmt(dyn['cpu_pct'] - relay['cpu_pct'], 1), f"< {TARGETS['cpu_pct']:.0f}",
         verdict(dyn['cpu_pct'] < TARGETS['cpu_pct'])),
        ('RSS after warm-up, MB: first / last', '',
         f"{fmt(rss[0], 1)} / {fmt(rss[-1], 1)}" if rss else '-', '', '', ''),
        (f'RSS max - min, MB ({len(rss)} samples, 1/s)', '', fmt(rss_span, 1), '',
         f"< {TARGETS['rss_mb']:.0f}", verdict(rss_span < TARGETS['rss_mb'] if rss else None)),
        (f'start-up to first torque, s (median of {len(starts)})', '', fmt(startup, 2), '',
         f"< {TARGETS['startup_s']:.0f}", verdict(startup < TARGETS['startup_s'] if starts
                                                   else None)),
    ]
    out('')
    out(f"machine: {info['machine']}; Python {info['python']}; rclpy {info['rclpy']}, "
        f"{info['rmw']}, transport {info['transport']}, executor {info['executor']} (every "
        f"process); ROS_DOMAIN_ID {info['domain']}, localhost discovery")
    out(f"driver: {len(info['names'])}-joint JointState (position, velocity, effort) at "
        f"{info['rate']:.0f} Hz to the relay and dynamics_node (both running) in turn, "
        f"{info['block']:g} s blocks, {info['duration']:g} s each after a {info['warmup']:g} s "
        f"warm-up; load average before / after: {info['load_before']} / {info['load_after']}")
    out('')
    out('| measurement | bare relay | dynamics_node | added | target | met |')
    out('|---|---:|---:|---:|---:|:---:|')
    for row in rows:
        out('| ' + ' | '.join(row) + ' |')
    out('')
    (ra, rb), (ga, gb) = ([h[topic] for h in result['halves']]
                          for result, topic in ((relay, RELAY_OUT), (dyn, GRAVITY)))
    out(f"What the max row holds: {r['late']} of the relay's and {g['late']} of the node's "
        f"{g['sent']} messages came later than {LATE_US:.0f} us (worst: relay {fmt(r['max'])}, "
        f"node {fmt(g['max'])} us). The node's own pauses are its garbage collector's (at most "
        f"{gc_max} us of wall time, {node.get('gc_pause_cpu_max_us', '-')} us of CPU; "
        f"{node.get('gc_pauses_over_1ms', '-')} over 1 ms) and its core calls "
        f"(p99 {node.get('compute_time_p99_us', '-')} us); the rest of a late message is time "
        f"in which the process did not run (load average {info['load_after'].split()[0]} on "
        f"{os.cpu_count()} cores), which the relay, doing nothing but republish, meets too.")
    out(f"p50 / p99 in the first and the second half of the run, us: relay {fmt(ra['p50'])} / "
        f"{fmt(ra['p99'])} and {fmt(rb['p50'])} / {fmt(rb['p99'])}; dynamics_node "
        f"{fmt(ga['p50'])} / {fmt(ga['p99'])} and {fmt(gb['p50'])} / {fmt(gb['p99'])} (added "
        f"p99 {fmt(ga['p99'] - ra['p99'])} and {fmt(gb['p99'] - rb['p99'])}).")
    if not starts:
        return rows
    ready = info.get('ready', [])
    waited = [t - r for t, r in zip(starts, ready) if r is not None and t - r > DISCOVERY_LATE_S]
    out(f"Start-ups, in order (s): {', '.join(f'{s:.2f}' for s in starts)}; the node was up "
        f"(model loaded) after {', '.join(fmt(s, 2) for s in ready)}, and then waited for DDS "
        f"discovery in {len(waited)} of {len(starts)} starts"
        f"{' (' + ', '.join(f'{w:.2f}' for w in waited) + ' s)' if waited else ''}. "
        f"First start of the run (untimed, may fill a compile cache, relay already running): "
        f"{dyn['startup_s']:.2f} s. Driver CPU: "
        f"{info['driver_cpu_pct']:.0f}% of one core.")
    return rows


# --------------------------------------------------------------------------------------------
# CPU per output enabled
# --------------------------------------------------------------------------------------------

#: dynamics_node configurations, each one thing more than the row before: (label, parameters
#: over dynamics_params_file's, whether a ~/reference runs, topics it adds, whether the driver
#: subscribes to them). An output nobody reads costs less than one a robot uses (no DDS
#: delivery, no acknowledgements): the defaults are measured both ways, unread as issue 33
#: measured them, then read.
OUTPUT_ROWS = (
    ('gravity_torques, forward_dynamics (observer_gain: [0.0])', {'observer_gain': [0.0]},
     False, (('gravity_torques', 'JointState'), ('forward_dynamics', 'JointTrajectory')), True),
    ('+ external_torques, nobody subscribed (the defaults, as issue 33 measured)', {}, False,
     (('external_torques', 'JointState'),), False),
    ('+ a subscriber on external_torques (the defaults, read)', {}, False, (), True),
    ('+ external_wrench_estimate (external_wrench_frame: tool0)',
     {'external_wrench_frame': 'tool0'}, False,
     (('external_wrench_estimate', 'WrenchStamped'),), True),
    ('+ inverse_dynamics, tracking_error (a ~/reference runs)',
     {'external_wrench_frame': 'tool0'}, True,
     (('inverse_dynamics', 'JointState'), ('tracking_error', 'JointState')), True),
    ('+ effort_commands (command_source: pd_feedforward)',
     {'external_wrench_frame': 'tool0', 'command_source': 'pd_feedforward'}, True,
     (('effort_commands', 'Float64MultiArray'),), True),
)
#: the rows of the observer off and the defaults (unread, read)
OFF_ROW, DEFAULTS_UNREAD_ROW, DEFAULTS_ROW = 0, 1, 2
#: relays of bytes (raw subscription, the same bytes published): on 2 topics, on 3 whose third
#: nobody reads, and on 3 whose third the driver reads: what rclpy and DDS take for one more
#: output, unread and read (the floor under a row that adds one), without any Python message
RAW_RELAYS = (('raw2', 2, False), ('raw3', 3, False), ('raw3read', 3, True))
#: the issue-33 targets: CPU of the defaults against the same node with the observer off, and
#: of the defaults alone (% of one core, what the node took before the observer existed)
CPU_TARGETS = {'defaults_over_observer_off': 1.10, 'defaults_pct': 28.0}


def _message_types() -> dict:
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory
    return {'JointState': JointState, 'JointTrajectory': JointTrajectory,
            'WrenchStamped': WrenchStamped, 'Float64MultiArray': Float64MultiArray}


def send_reference(driver: Driver, topic: str, names: list[str], timeout: float = 30.0) -> None:
    """A reference to ``topic`` (a ~/reference): from where the arm is, over 2 s to a pose,
    then held; from then on the node publishes inverse_dynamics and tracking_error per input."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    pub = driver.node.create_publisher(JointTrajectory, topic,
                                       QoSProfile(depth=10,
                                                  reliability=ReliabilityPolicy.RELIABLE))
    if not driver.spin_until(lambda: pub.get_subscription_count() > 0, timeout):
        raise PhaseError(f'nobody subscribed to {topic} within {timeout:.0f} s')
    msg = JointTrajectory(joint_names=list(names))
    point = JointTrajectoryPoint(positions=[0.3 * (-1) ** i for i in range(len(names))])
    point.time_from_start.sec = 2
    msg.points = [point]
    pub.publish(msg)
    driver.spin_for(0.2)


def cpu_phase(driver: Driver, tmp: str, names: list[str], *, warmup: float, duration: float,
              block: float, baseline: pathlib.Path | None, say,
              baseline_rows: int = len(OUTPUT_ROWS)) -> dict:
    """The bare relay and one dynamics_node per OUTPUT_ROWS row (and per row again from the
    ``baseline`` checkout, its first ``baseline_rows``), all running; the driver's 1 kHz input
    goes to one at a time in ``block`` s turns. Returns, per process: CPU %, outputs received
    per input per topic, the node's last /diagnostics."""
    types = _message_types()
    relay_argv = [sys.executable, '-m', 'benchmarks.node_bench', '--relay']
    children, procs = {}, {}
    counts = {'relay': {RELAY_OUT: driver.listen(types['JointState'], RELAY_OUT),
                        RELAY_OUT_2: driver.listen(types['JointState'], RELAY_OUT_2)}}
    diags = {}
    trees = [('now', ROOT)] + ([('base', baseline)] if baseline is not None else [])
    firsts = []   # (target, its box of first outputs, timeout s, its ~/reference topic or None)
    try:
        # every process started at once, then each driven until it answers: they are measured
        # only once all run, and one after the other their start-ups took 22 s of a smoke run
        children['relay'] = Child(relay_argv, os.path.join(tmp, 'cpu_relay.log'))
        firsts.append(('relay', counts['relay'][RELAY_OUT], 60, None))
        for target, outputs, third_read in RAW_RELAYS:   # rclpy's floor for bytes in and out
            ns = f'/bench_{target}'
            driver.add_target(target, ns + RELAY_IN)
            counts[target] = {ns + RELAY_OUT: driver.listen(types['JointState'], ns + RELAY_OUT),
                              ns + RELAY_OUT_2: driver.count(types['JointState'],
                                                             ns + RELAY_OUT_2)}
            if third_read:
                third = f'{ns}/{RELAY_NODE}/joint_states_3'
                counts[target][third] = driver.count(types['JointState'], third)
            children[target] = Child(relay_argv + ['--relay-raw', '--relay-outputs',
                                                   str(outputs), '--relay-namespace', ns],
                                     os.path.join(tmp, f'cpu_{target}.log'))
            firsts.append((target, counts[target][ns + RELAY_OUT], 60, None))
        for variant, tree in trees:
            topics, unread = [], set()
            for k, (label, params, reference, added, read) in enumerate(OUTPUT_ROWS):
                if variant == 'base' and k >= baseline_rows:
                    break
                topics += added
                unread = set() if read else {topic for topic, _ in added}
                target = f'{variant}{k}'
                ns = f'/bench_{target}'
                driver.add_target(target, f'{ns}/joint_states')
                argv = [sys.executable, '-m', 'rbd_ros.nodes.dynamics', '--ros-args',
                        '--params-file', dynamics_params_file(tmp, target, **params),
                        '-r', f'__ns:={ns}']
                boxes = {topic: (driver.listen(types[kind], f'{ns}/{NODE}/{topic}')
                                 if topic == 'gravity_torques'
                                 else driver.count(types[kind], f'{ns}/{NODE}/{topic}'))
                         for topic, kind in topics if topic not in unread}
                counts[target] = boxes
                diags[target] = driver.listen_diagnostics(f'{ns}/{NODE}')
                say(f'  {variant} row {k + 1}: {label}')
                children[target] = Child(argv, os.path.join(tmp, f'cpu_{target}.log'), tree)
                firsts.append((target, boxes['gravity_torques'], 180,
                               f'{ns}/{NODE}/reference' if reference else None))
                procs[target] = (variant, k)
        for target, box, timeout, reference in firsts:
            wait_first(driver, children[target], target, box, timeout)
            if reference is not None:
                boxes = counts[target]
                send_reference(driver, reference, names)
                driver.target = target
                ok = driver.spin_until(lambda b=boxes: _received(b['inverse_dynamics']) > 0, 30)
                driver.target = None
                if not ok:
                    raise PhaseError(f'{target}: no inverse_dynamics after a reference; '
                                     'its log:\n' + children[target].tail())
        start = {}

        def mark():
            for target, boxes in counts.items():
                start[target] = {topic: _received(box) for topic, box in boxes.items()}
        # (a warm-up of at least one turn each)
        runs = run_interleaved(driver, children, warmup=max(warmup, block * len(children)),
                               duration=duration, block=block, say=say, watch=None,
                               on_measure=mark)
        driver.spin_for(1.5)   # late outputs still count; one more /diagnostics (1 Hz)
    finally:
        for child in children.values():
            child.stop()
    out = {}
    for target, run_ in runs.items():
        sent = len(run_['window'])
        received = {topic: (_received(box) - start[target][topic]) / max(sent, 1)
                    for topic, box in counts[target].items()}
        out[target] = dict(cpu_pct=run_['cpu_pct'], sent=sent, received=received,
                           diag=dict(diags.get(target, {})), proc=procs.get(target))
    return out


def _gc_pause(diag: dict) -> str:
    """The longest collector pause of a node's /diagnostics: wall (CPU) time, us."""
    if 'gc_pause_max_us' not in diag:
        return '-'
    return f"{diag['gc_pause_max_us']} ({diag.get('gc_pause_cpu_max_us', '-')})"


def _received(box) -> int:
    return len(box) if isinstance(box, Receipts) else box[0]


def report_cpu(info: dict, result: dict, baseline: str | None, out=print) -> list[tuple]:
    """The CPU-per-output table; returns its rows."""
    variants = ['base', 'now'] if baseline else ['now']
    by = {(p['proc'][0], p['proc'][1]): p for p in result.values() if p['proc'] is not None}
    relay = result['relay']
    head = ['dynamics_node per joint_states (bundled arm, 1 kHz)', 'outputs']
    for v in variants:
        name = f'baseline ({baseline})' if v == 'base' else 'this tree'
        head += [f'CPU % of one core, {name}', f'added by the row, {name}']
    head += ['outputs received per input (min)', 'longest GC pause, us: wall (CPU)']
    rows = [['bare rclpy relay: each input republished on 2 topics (typed messages)', '2']
            + sum(([fmt(relay['cpu_pct'], 1), ''] for _ in variants), [])
            + [fmt(min(relay['received'].values()), 3), '']]
    for (target, outputs, _), label in zip(RAW_RELAYS, (
            'rclpy relay of bytes (raw in, the same bytes out) on 2 topics',
            '... on 3 topics, the third unread (one more output: rclpy and DDS alone)',
            '... on 3 topics, the third read (one more output, delivered)')):
        p = result[target]
        added = '' if target == RAW_RELAYS[0][0] else \
            f"{p['cpu_pct'] - result[RAW_RELAYS[0][0]]['cpu_pct']:+.1f}"
        rows.append([label, str(outputs)] + sum(([fmt(p['cpu_pct'], 1), added]
                                                 for _ in variants), [])
                    + [fmt(min(p['received'].values()), 3), ''])
    n = 0
    for k, (label, _, _, added, _) in enumerate(OUTPUT_ROWS):
        n += len(added)
        row = [label, str(n)]
        for v in variants:
            p = by.get((v, k))
            if p is None:          # (a baseline run for its first rows only)
                row += ['-', '']
                continue
            row += [fmt(p['cpu_pct'], 1),
                    '' if k == 0 else f"{p['cpu_pct'] - by[(v, k - 1)]['cpu_pct']:+.1f}"]
        p = by[('now', k)]
        pauses = [_gc_pause(by[(v, k)]['diag']) for v in variants if (v, k) in by]
        row += [fmt(min(p['received'].values()), 3), ' / '.join(pauses)]
        rows.append(row)
    out('')
    out(f"CPU per output enabled: every process below runs side by side; the driver's "
        f"{info['rate']:.0f} Hz joint_states (position, velocity, effort) go to one at a time in "
        f"{info['block']:g} s turns, {info['cpu_duration']:g} s each after a {info['warmup']:g} s "
        f"warm-up; CPU = utime + stime of the process over its own turns (/proc); the driver "
        f"subscribes to every output; load average before / after: {info['load_before']} / "
        f"{info['load_after']}")
    out('')
    out('| ' + ' | '.join(head) + ' |')
    out('|---|' + '---:|' * (len(head) - 1))
    for row in rows:
        out('| ' + ' | '.join(row) + ' |')
    out('')
    limit = CPU_TARGETS['defaults_over_observer_off']
    for v in variants:
        if (v, DEFAULTS_ROW) not in by:
            continue
        off = by[(v, OFF_ROW)]['cpu_pct']
        said = []
        for row, how in ((DEFAULTS_UNREAD_ROW, 'unread'), (DEFAULTS_ROW, 'read')):
            cpu = by[(v, row)]['cpu_pct']
            ratio = cpu / off if off > 0 else math.nan
            said.append(f"{how}: {ratio:.2f}x the observer off (target <= {limit:.2f}: "
                        f"{verdict(ratio <= limit)}), {cpu:.1f}% of one core (target < "
                        f"{CPU_TARGETS['defaults_pct']:.0f}: "
                        f"{verdict(cpu < CPU_TARGETS['defaults_pct'])})")
        out(f"{'baseline' if v == 'base' else 'this tree'}, the defaults: " + '; '.join(said)
            + '.')
    floor = result['raw3read']['cpu_pct'] - result['raw2']['cpu_pct']
    read_added = by[('now', DEFAULTS_ROW)]['cpu_pct'] - by[('now', OFF_ROW)]['cpu_pct']
    out(f"Of the read defaults' {read_added:+.1f} points over the observer off, one delivered "
        f"output costs rclpy and DDS alone {floor:+.1f} (the relay of bytes' third topic, read); "
        f"the observer and its message, the rest ({read_added - floor:+.1f}).")
    if baseline:
        out(f"The defaults of this tree against the baseline's observer off (the node before "
            f"the observer), same run: {by[('now', DEFAULTS_UNREAD_ROW)]['cpu_pct']:.1f}% unread, "
            f"{by[('now', DEFAULTS_ROW)]['cpu_pct']:.1f}% read, against "
            f"{by[('base', OFF_ROW)]['cpu_pct']:.1f}%.")
    return rows


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------

def latency_phase(driver: Driver, tmp: str, info: dict, *, warmup: float, duration: float,
                  block: float, starts: int, baseline: pathlib.Path | None, say):
    """The relay and dynamics_node (and the baseline's, when given) side by side: latency,
    loss, CPU, RSS; then the start-ups. Returns (relay, node, baseline node or None, start-up
    times)."""
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory
    params = dynamics_params_file(tmp)
    node_argv = [sys.executable, '-m', 'rbd_ros.nodes.dynamics', '--ros-args',
                 '--params-file', params]
    relay_argv = [sys.executable, '-m', 'benchmarks.node_bench', '--relay']
    base_ns = '/baseline'
    children = {}
    try:
        say(f'[node_bench] domain {info["domain"]}, transport {info["transport"]}; 1/3 start '
            f'the bare relay and dynamics_node')
        boxes = {'relay': {RELAY_OUT: driver.listen(JointState, RELAY_OUT),
                           RELAY_OUT_2: driver.listen(JointState, RELAY_OUT_2)},
                 'node': {GRAVITY: driver.listen(JointState, GRAVITY),
                          FD: driver.listen(JointTrajectory, FD)}}
        diag = {'node': driver.listen_diagnostics('/' + NODE)}
        # one after the other: their start-ups would compete for the cores
        children['relay'] = Child(relay_argv, os.path.join(tmp, 'relay.log'))
        wait_first(driver, children['relay'], 'relay', boxes['relay'][RELAY_OUT], 60)
        if baseline is not None:
            driver.add_target('baseline', f'{base_ns}/joint_states')
            boxes['baseline'] = {GRAVITY: driver.listen(JointState, base_ns + GRAVITY),
                                 FD: driver.listen(JointTrajectory, base_ns + FD)}
            diag['baseline'] = driver.listen_diagnostics(base_ns + '/' + NODE)
            children['baseline'] = Child(node_argv + ['-r', f'__ns:={base_ns}'],
                                         os.path.join(tmp, 'baseline.log'), baseline)
            base_startup = wait_first(driver, children['baseline'], 'baseline',
                                      boxes['baseline'][GRAVITY], 180)
        children['node'] = Child(node_argv, os.path.join(tmp, 'dynamics_0.log'))
        first_startup = wait_first(driver, children['node'], 'node', boxes['node'][GRAVITY],
                                   180)
        say(f'  first torque {first_startup:.2f} s after spawn; warming up {warmup:g} s')
        say('[node_bench] 2/3 relay and dynamics_node in turn')
        runs = run_interleaved(driver, children, warmup=warmup, duration=duration,
                               block=block, say=say)
        driver.spin_for(1.5)   # late outputs still count; one more /diagnostics (1 Hz)
        relay = summarize(runs['relay'], boxes['relay'])
        nodes = {}
        for target in [t for t in ('node', 'baseline') if t in children]:
            dyn = summarize(runs[target], {GRAVITY: boxes[target][GRAVITY],
                                           FD: boxes[target][FD]})
            first_stamp = boxes[target][GRAVITY].first()[0]
            dyn.update(rss=list(driver.rss) if target == 'node' else [],
                       startup_s=first_startup if target == 'node' else base_startup)
            # every message the node received produced an output, so from the first one on
            # (first_stamp) whatever the node did not count was lost on its input. The node
            # also counts the few messages in flight before its first output reached us, so
            # the difference can dip below zero: clamp it (a loss is never negative).
            sent = sum(1 for t in driver.sent[target] if t >= first_stamp)
            got = int(diag[target].get('messages_received', -1))
            dyn['node'] = dict(diag[target], sent_since_first=sent,
                               input_lost=max(0, sent - got) if got >= 0 else None)
            nodes[target] = dyn
        driver.unlisten()
    finally:
        for child in children.values():
            child.stop()
    say(f'[node_bench] 3/3 start-up x{starts}')
    times, ready = [], []
    pauses = random.Random(STARTUP_SEED)
    for k in range(starts):
        # a random pause: a fixed one would put every start at the same point of the
        # driver's 3 s discovery announcement cycle (see STARTUP_PAUSE_S)
        driver.spin_for(pauses.uniform(*STARTUP_PAUSE_S))
        node = Child(node_argv, os.path.join(tmp, f'dynamics_{k + 1}.log'))
        try:
            times.append(time_to_first(driver, node, GRAVITY, JointState, timeout=60))
        finally:
            node.stop()
        # the node logs its model once it is up (imports, rclpy, parameters, model):
        # the rest of the start-up is DDS discovery and the first message
        ready.append(node.logged_at(r'\[rbd_dynamics\]: model '))
        say(f'  start {k + 1}: {times[-1]:.2f} s (node up after {fmt(ready[-1], 2)} s)')
    info['ready'] = ready
    return relay, nodes['node'], nodes.get('baseline'), times


def warm_baseline(tree: pathlib.Path, say) -> None:
    """numba's cache of the baseline checkout (its own source paths), so that its nodes do not
    compile at start-up: ``python -m rbd_ros.warmup`` there (seconds when warm)."""
    say(f'[node_bench] warming the numba cache of the baseline {tree}')
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, '-m', 'rbd_ros.warmup'], cwd=str(tree), env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise PhaseError(f'warmup of the baseline failed:\n{done.stdout[-2000:]}'
                         f'{done.stderr[-2000:]}')


def run(duration: float, warmup: float, starts: int, transport: str, block: float = 1.0,
        rate: float = 1000.0, out=print, phases=('latency', 'cpu'), cpu_duration: float = 15.0,
        baseline: pathlib.Path | None = None, baseline_rows: int = len(OUTPUT_ROWS)) -> int:
    def say(text):
        print(text, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix='rbd_node_bench_') as tmp:
        env_info = configure_environment(transport, tmp)
        from importlib.metadata import PackageNotFoundError, version

        from rbd_ros.ros.robot import load_robot
        try:
            rclpy_version = version('ros-rclpy')
        except PackageNotFoundError:
            rclpy_version = '?'

        # the JointState joints, as dynamics_node itself reads them from the URDF
        names = list(load_robot(ARM_URDF.read_text()).joint_names)
        driver = Driver(names, rate)
        info = dict(env_info, machine=f'{platform.machine()}, {os.cpu_count()} cores, '
                    f'{platform.platform(terse=True)}',
                    python=platform.python_version(), rclpy=rclpy_version,
                    executor=type(driver.executor).__name__, names=names, rate=rate,
                    warmup=warmup, duration=duration, block=block, cpu_duration=cpu_duration,
                    load_before=' '.join(f'{x:.2f}' for x in os.getloadavg()))
        cpu_self0, t_self0 = time.process_time(), time.monotonic()
        # the driver's receipts are in arrays and it makes no reference cycles: no collector
        # pauses in the middle of a measurement
        gc.collect()
        gc.disable()
        latency = cpu = None
        try:
            if baseline is not None:
                warm_baseline(baseline, say)
            if 'latency' in phases:
                latency = latency_phase(driver, tmp, info, warmup=warmup, duration=duration,
                                        block=block, starts=starts, baseline=baseline, say=say)
                info['load_after'] = ' '.join(f'{x:.2f}' for x in os.getloadavg())
            if 'cpu' in phases:
                say('[node_bench] CPU per output: the relay and one dynamics_node per row')
                info['load_before'] = ' '.join(f'{x:.2f}' for x in os.getloadavg()) \
                    if latency is None else info['load_after']
                cpu = cpu_phase(driver, tmp, names, warmup=warmup, duration=cpu_duration,
                                block=block, baseline=baseline, say=say,
                                baseline_rows=baseline_rows)
                info['load_after'] = ' '.join(f'{x:.2f}' for x in os.getloadavg())
        except PhaseError as exc:
            say(f'[node_bench] FAILED: {exc}')
            driver.close()
            gc.enable()
            return 1
        info['driver_cpu_pct'] = 100 * (time.process_time() - cpu_self0) / \
            (time.monotonic() - t_self0)
        driver.close()
        gc.enable()
    if latency is not None:
        relay, dyn, base, times = latency
        if base is not None:
            out(f'\nBaseline: dynamics_node from {baseline} (the same run, interleaved)')
            report(info, relay, base, [], out=out)
            out('\nThis tree:')
        report(info, relay, dyn, times, out=out)
    if cpu is not None:
        report_cpu(info, cpu, str(baseline) if baseline is not None else None, out=out)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--smoke', action='store_true',
                        help='a few seconds in all (the test suite runs this)')
    parser.add_argument('--only', choices=('latency', 'cpu'), default=None,
                        help='one table: latency (relay against the default node) or cpu (CPU '
                        'per output enabled); default both')
    parser.add_argument('--duration', type=float, default=None,
                        help='s of 1 kHz input per process, latency table (default 60; smoke 1)')
    parser.add_argument('--cpu-duration', type=float, default=None,
                        help='s of 1 kHz input per process, CPU table (default 15; smoke 0.5)')
    parser.add_argument('--warmup', type=float, default=None,
                        help='s of alternating input before measuring (default 10; smoke 0.5)')
    parser.add_argument('--block', type=float, default=None,
                        help='s of input to one process before switching (default 1; smoke '
                        '0.25)')
    parser.add_argument('--starts', type=int, default=None,
                        help='timed start-ups (default 9; smoke 1)')
    parser.add_argument('--transport', choices=('shm', 'udp'), default=None,
                        help='Fast DDS transport (default: udp if FASTDDS_BUILTIN_TRANSPORTS '
                        'is UDPv4, else shm)')
    parser.add_argument('--baseline', type=pathlib.Path, default=None, metavar='DIR',
                        help='another checkout (e.g. git worktree add /tmp/main main): its '
                        'dynamics_node runs beside this one, interleaved, in both tables')
    parser.add_argument('--baseline-rows', type=int, default=len(OUTPUT_ROWS), metavar='K',
                        help='the CPU table runs the baseline for its first K rows only (1: the '
                        'observer-off row, all a checkout from before the observer can run; '
                        'its node ignores the observer_gain it does not declare)')
    parser.add_argument('--relay', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--relay-raw', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--relay-outputs', type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument('--relay-namespace', default='', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.relay:
        return relay_main(args.relay_raw, args.relay_outputs, args.relay_namespace)
    duration = args.duration if args.duration is not None else (1.0 if args.smoke else 60.0)
    cpu_duration = args.cpu_duration if args.cpu_duration is not None else \
        (0.5 if args.smoke else 15.0)
    warmup = args.warmup if args.warmup is not None else (0.5 if args.smoke else 10.0)
    block = args.block if args.block is not None else (0.25 if args.smoke else 1.0)
    starts = args.starts if args.starts is not None else (1 if args.smoke else 9)
    baseline = args.baseline.resolve() if args.baseline is not None else None
    if baseline is not None and not (baseline / 'rbd_ros' / 'nodes' / 'dynamics.py').is_file():
        parser.error(f'--baseline {baseline}: not an rbd_ros checkout')
    return run(duration, warmup, starts, args.transport or default_transport(), block,
               phases=(args.only,) if args.only else ('latency', 'cpu'),
               cpu_duration=cpu_duration, baseline=baseline,
               baseline_rows=max(1, min(args.baseline_rows, len(OUTPUT_ROWS))))


if __name__ == '__main__':
    raise SystemExit(main())
