"""A fuzz and soak campaign against the running nodes (separate processes, real DDS, loopback):

    .venv/bin/python -m benchmarks.campaign [--fuzz 200000] [--soak 600] [--smoke]

1. fuzz: joint_states into dynamics_node as raw bytes (random, truncated, bit-flipped) and as
   bad fields (NaN/inf, length mismatches, duplicate and unknown names, stamps going back), at
   about 1 kHz, mixed with valid ones;
2. reloads: the robot_description topic switches between the arm, another robot and a broken
   description every 0.5 s while valid joint_states flow; every gravity output must come from
   one whole model (its names and values match one of the two robots);
3. sim: fuzzed effort and joint commands into sim_node, including torques that blow the state
   up: it must reset and keep publishing;
4. soak: valid joint_states at 1 kHz for ``--soak`` seconds: no loss, flat memory.

It prints one table (sent, rejected per reason, outputs, non-finite outputs, internal errors,
RSS at start and end, lost) and exits 1 when any output was non-finite, a node died or froze,
an internal error was counted, an output mixed two models, or the counters do not add up.
``--smoke`` runs it in seconds (the test suite does).
"""
from __future__ import annotations

import argparse
import gc
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from array import array

import numpy as np

from benchmarks.isolation import private_domain_id
from benchmarks.node_bench import cpu_seconds, rss_mb
from rbd_ros.ros.cdr import ENCAPSULATIONS
from rbd_ros.ros.joint_states import all_finite

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARM = ROOT / 'rbd_ros' / 'robots' / 'rbd_arm7.urdf'
TREE = ROOT / 'test' / 'data' / 'ros' / 'tree3.urdf'
BROKEN = '<robot name="broken"><link name="a"/><link name="a"/></robot>'


MAX_LATE = 0.02     # s the driver may fall behind its schedule before it restarts it
RSS_EVERY = 10_000  # fuzzed messages between two RSS readings of dynamics_node
#: second bytes of the encapsulations fuzzed: XCDR2 and PL_CDR (cdr.py), and two that mean nothing
FOREIGN_ENCAPSULATIONS = sorted(ENCAPSULATIONS) + [0x40, 0xff]


class Campaign:
    def __init__(self, args):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray, String

        from rbd_ros.ros.node import make_executor
        from rbd_ros.ros.qos import LATCHED_QOS, OUTPUT_QOS

        self.args = args
        self.rng = np.random.default_rng(args.seed)
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=int(os.environ['ROS_DOMAIN_ID']))
        self.node = rclpy.create_node('rbd_campaign', context=self.context)
        self.executor = make_executor(self.context)
        self.executor.add_node(self.node)
        reliable = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.js = self.node.create_publisher(JointState, 'joint_states', reliable)
        self.description = self.node.create_publisher(String, 'robot_description', LATCHED_QOS)
        self.effort = self.node.create_publisher(Float64MultiArray, '/rbd_sim/effort_commands',
                                                 reliable)
        self.joint_cmd = self.node.create_publisher(JointState, '/rbd_sim/joint_commands',
                                                    reliable)
        # Outputs are counted and checked on arrival, not kept: a driver holding 300,000
        # messages paused 0.6 s in Python's full collections, then published the backlog as
        # one burst that overflowed the node's queue (lost messages the node never saw).
        self.gravity_count = self.sim_count = self.nonfinite = 0
        self.kept = None                # a list while outputs are to be kept (reloads)
        self.stamps = None              # an array('q') while output stamps are recorded (soak)
        self.diag = {}
        self.driver_pauses, self.driver_max_late = 0, 0.0
        deep = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.node.create_subscription(JointState, '/rbd_dynamics/gravity_torques',
                                      self._on_gravity, deep)
        self.node.create_subscription(JointState, '/campaign_sim/joint_states',
                                      self._on_sim_state, deep)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, OUTPUT_QOS)
        self.JointState, self.String, self.Float64MultiArray = JointState, String, Float64MultiArray

    # -- plumbing ----------------------------------------------------------------------------
    def _on_gravity(self, m):
        self.gravity_count += 1
        if not all_finite(m.effort):
            self.nonfinite += 1
        if self.kept is not None:
            self.kept.append(m)
        if self.stamps is not None:
            self.stamps.append(m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec)

    def _on_sim_state(self, m):
        self.sim_count += 1
        if not all_finite(m.position, m.velocity, m.effort):
            self.nonfinite += 1

    def _on_diag(self, arr):
        for st in arr.status:
            self.diag[st.name.split(':')[0].strip('/')] = {kv.key: kv.value for kv in st.values}

    def spin_for(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=min(0.01, max(end - time.monotonic(), 0.0)))

    def wait(self, predicate, timeout, what):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return
            self.executor.spin_once(timeout_sec=0.02)
        raise RuntimeError(f'timed out after {timeout} s waiting for {what}')

    def msg(self, names, position=(), velocity=(), effort=(), stamp_ns=0):
        m = self.JointState(name=list(names), position=[float(x) for x in position],
                            velocity=[float(x) for x in velocity], effort=[float(x) for x in effort])
        m.header.stamp.sec, m.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
        return m

    def paced(self, count, rate, make):
        """Publish ``make(k)`` count times at about ``rate`` Hz, spinning in between.

        When the driver itself falls more than MAX_LATE s behind (its process descheduled on
        the shared 2-core VM), it restarts its schedule instead of sending the backlog in one
        burst: a burst of hundreds would overflow the node's 0.1 s queue by design, and a real
        1 kHz driver does not send one. Such pauses are counted and reported."""
        start, k0 = time.monotonic(), 0
        for k in range(count):
            make(k)
            due = start + (k + 1 - k0) / rate
            late = time.monotonic() - due
            if late > MAX_LATE:
                self.driver_pauses += 1
                self.driver_max_late = max(self.driver_max_late, late)
                start, k0 = time.monotonic(), k + 1
                continue
            while time.monotonic() < due:
                self.executor.spin_once(timeout_sec=max(0.0, min(0.002, due - time.monotonic())))

    # -- phases ------------------------------------------------------------------------------
    def fuzz(self, count, names, pid=None):
        """Bad and good joint_states in a mix; returns how many were sent. With ``pid``,
        the RSS of that process is recorded every RSS_EVERY messages (self.rss_trace)."""
        from rclpy.serialization import serialize_message
        rng, n = self.rng, len(names)
        good = bytes(serialize_message(self.msg(names, np.zeros(n), stamp_ns=1)))
        letters = list('abcxyz_0123456789')
        self.t_ns = getattr(self, 't_ns', 10**9)
        self.rss_trace = []

        def flipped(data):
            data = bytearray(data)
            for _ in range(int(rng.integers(1, 6))):
                i = int(rng.integers(4, len(data)))
                data[i] ^= 1 << int(rng.integers(0, 8))
            return data

        def one(k):
            if pid is not None and k % RSS_EVERY == 0:
                self.rss_trace.append((k, rss_mb(pid)))
            kind = k % 20
            self.t_ns += 1_000_000
            if kind == 0:     # random bytes
                data = rng.integers(0, 256, size=int(rng.integers(1, 300)), dtype=np.uint8)
                self.js.publish(data.tobytes())
            elif kind == 1:   # a valid message cut short
                self.js.publish(good[:int(rng.integers(4, len(good)))])
            elif kind == 2:   # bit flips
                self.js.publish(bytes(flipped(good)))
            elif kind in (3, 4, 5):   # another encapsulation (XCDR2, PL_CDR, ...) or a random
                # first byte, over a valid (3) or bit-flipped (4, 5) body: the bytes that
                # crashed the rmw's deserializer, which the node used to hand them to
                data = bytearray(good if kind == 3 else flipped(good))
                if rng.random() < 0.2:
                    data[0] = int(rng.integers(1, 256))
                else:
                    data[0:2] = bytes((0, int(rng.choice(FOREIGN_ENCAPSULATIONS))))
                self.js.publish(bytes(data))
            elif kind == 6:   # a count or length made huge
                data = bytearray(good)
                at = 4 * int(rng.integers(3, len(data) // 4))
                data[at:at + 4] = bytes(rng.choice([b'\xff\xff\xff\xff', b'\xff\xff\xff\x7f',
                                                    b'\x00\x00\x01\x00']))
                self.js.publish(bytes(data))
            elif kind == 7:   # NaN / inf
                q = rng.normal(size=n)
                q[int(rng.integers(0, n))] = rng.choice([math.nan, math.inf, -math.inf])
                self.js.publish(self.msg(names, q, stamp_ns=self.t_ns))
            elif kind == 8:   # lengths that do not match
                self.js.publish(self.msg(names, rng.normal(size=int(rng.integers(0, 2 * n))),
                                         velocity=rng.normal(size=1), stamp_ns=self.t_ns))
            elif kind == 9:   # duplicate names
                dup = list(names) + [names[0]]
                self.js.publish(self.msg(dup, rng.normal(size=n + 1), stamp_ns=self.t_ns))
            elif kind == 10:  # hostile unknown names, all different
                bad = [''.join(rng.choice(letters, int(rng.integers(1, 200)))) for _ in range(3)]
                self.js.publish(self.msg(list(names) + bad, rng.normal(size=n + 3),
                                         stamp_ns=self.t_ns))
            elif kind == 11:  # stamp going back
                self.js.publish(self.msg(names, rng.normal(size=n), stamp_ns=self.t_ns - 10**9))
            elif kind == 12:  # big: a 64 KiB name, a 400 KB frame_id, 10,000 joints
                big = (k // 20) % 3
                if big == 0:
                    m = self.msg(list(names) + ['n' * 65536 + str(k)], rng.normal(size=n + 1),
                                 stamp_ns=self.t_ns)
                elif big == 1:
                    m = self.msg(names, rng.normal(size=n), stamp_ns=self.t_ns)
                    m.header.frame_id = 'f' * 400_000
                else:
                    m = self.msg(list(names) + [f'x{k}_{i}' for i in range(10_000)],
                                 rng.normal(size=n + 10_000), stamp_ns=self.t_ns)
                self.js.publish(m)
            else:             # valid
                self.js.publish(self.msg(names, rng.uniform(-1, 1, n), rng.normal(size=n),
                                         rng.normal(size=n), stamp_ns=self.t_ns))
        self.paced(count, self.args.rate, one)
        if pid is not None:
            self.rss_trace.append((count, rss_mb(pid)))
        return count

    def prime_reader_queue(self, names, pid):
        """Bring the nodes' joint_states queue to its high-water mark before the fuzz's RSS is
        read: Fast DDS grows each of the queue's JOINT_STATES_DEPTH payload buffers to the
        largest message it has held and keeps it (PREALLOCATED_WITH_REALLOC, docs/ros.md).
        During the fuzz that happens whenever the node falls behind as big messages arrive,
        at random: +40 MB measured (a 400 KB message in each of 100 slots), which the growth
        check read as a leak in some runs and not in others. A burst of twice the depth of
        the largest valid message fuzzed (a 400 KB frame_id) fills every slot once, so what
        the check sees after it is the nodes' own memory. RSS of ``pid`` before and after:
        self.primed."""
        from rbd_ros.ros.qos import JOINT_STATES_DEPTH
        self.t_ns = getattr(self, 't_ns', 10**9)
        before = rss_mb(pid)
        for _ in range(2 * JOINT_STATES_DEPTH):
            self.t_ns += 1_000_000
            m = self.msg(names, np.zeros(len(names)), stamp_ns=self.t_ns)
            m.header.frame_id = 'f' * 400_000
            self.js.publish(m)
        self.spin_for(3.0)
        self.primed = (before, rss_mb(pid))

    def reloads(self, seconds, arm_names, tree_names):
        """Valid joint_states for both robots while the description switches every 0.5 s;
        returns (swaps, gravity outputs received, outputs that matched no single model)."""
        import rbd_ros.dynamics as rbd
        models = {'rbd_arm7': rbd.Model.from_urdf(str(ARM)), 'tree3': rbd.Model.from_urdf(str(TREE))}
        texts = [ARM.read_text(), TREE.read_text(), BROKEN]
        first, self.kept = self.gravity_count, []

        def one(i):
            if i % int(0.5 * self.args.rate) == 0:
                self.description.publish(self.String(data=texts[(i // int(0.5 * self.args.rate)) % 3]))
            self.t_ns += 1_000_000
            names = arm_names if i % 2 else tree_names
            q = self.rng.uniform(-1, 1, len(names))
            self.js.publish(self.msg(names, q, stamp_ns=self.t_ns))
        count = int(seconds * self.args.rate)
        self.paced(count, self.args.rate, one)
        swaps = count // int(0.5 * self.args.rate)
        self.spin_for(0.5)
        mixed = 0
        kept, self.kept = self.kept, None
        for out in kept:
            match = [m for m in models.values() if list(out.name) == list(m.joint_names)]
            if len(match) != 1:
                mixed += 1
                continue
            model = match[0]
            q = np.array(out.position)
            if not np.allclose(out.effort, rbd.gravity_torques(model, q), rtol=1e-9, atol=1e-9):
                mixed += 1
        return swaps, self.gravity_count - first, mixed

    def sim_fuzz(self, count, names):
        from rclpy.serialization import serialize_message
        rng, n = self.rng, len(names)
        good_effort = bytes(serialize_message(self.Float64MultiArray(data=[0.0] * n)))
        good_joint = bytes(serialize_message(self.msg(names, effort=np.zeros(n))))

        def broken(good):
            data = bytearray(good)
            if rng.random() < 0.5:
                data[0:2] = bytes((0, int(rng.choice(FOREIGN_ENCAPSULATIONS))))
            for _ in range(int(rng.integers(1, 6))):
                i = int(rng.integers(4, len(data)))
                data[i] ^= 1 << int(rng.integers(0, 8))
            return bytes(data[:int(rng.integers(4, len(data) + 1))])

        def one(k):
            kind = k % 8
            if kind == 0:
                data = rng.normal(size=int(rng.integers(0, 2 * n))) * 10
                self.effort.publish(self.Float64MultiArray(data=data.tolist()))
            elif kind == 1:
                data = rng.normal(size=n)
                data[int(rng.integers(0, n))] = rng.choice([math.nan, math.inf])
                self.effort.publish(self.Float64MultiArray(data=data.tolist()))
            elif kind == 2:    # torques that blow the state up
                self.effort.publish(self.Float64MultiArray(data=(rng.choice([-1, 1], n) * 1e7).tolist()))
            elif kind == 3:
                self.joint_cmd.publish(self.msg(list(names) + ['ghost'], effort=rng.normal(size=n)))
            elif kind == 4:    # two finite inputs whose sum is not: 1.7e308 + 100 * 1e300
                self.effort.publish(self.Float64MultiArray(data=[1.7e308] * n))
                self.joint_cmd.publish(self.msg(names, position=[1e300] * n))
            elif kind == 5:    # malformed bytes on both command topics
                self.effort.publish(broken(good_effort))
                self.joint_cmd.publish(broken(good_joint))
            else:
                self.joint_cmd.publish(self.msg(names, effort=rng.normal(size=n)))
        self.paced(count, self.args.rate, one)
        return count


def _lost_runs(t0_ns, count, stamps):
    """(first index, length) of each run of soak messages with no output: message k was
    stamped t0 + (k + 1) ms and its output carries the same stamp."""
    got = {round((t - t0_ns) / 1e6) - 1 for t in stamps}
    runs, k = [], 0
    while k < count:
        if k in got:
            k += 1
            continue
        start = k
        while k < count and k not in got:
            k += 1
        runs.append((start, k - start))
    return runs


GROWTH_SPAN = 100_000


def _fuzz_rss_growth(trace):
    """RSS growth (MB) from the reading after RSS_EVERY messages to the one GROWTH_SPAN
    later (the issue's bound: < 5 MB), None when the fuzz was shorter."""
    at = dict(trace)
    if RSS_EVERY in at and RSS_EVERY + GROWTH_SPAN in at:
        return at[RSS_EVERY + GROWTH_SPAN] - at[RSS_EVERY]
    return None


def _script(name):
    path = pathlib.Path(sys.executable).parent / name
    module = {'dynamics_node': 'rbd_ros.nodes.dynamics', 'sim_node': 'rbd_ros.nodes.sim',
              'frames_node': 'rbd_ros.nodes.frames'}[name]
    return [str(path)] if path.exists() else [sys.executable, '-m', module]


def run(args) -> int:
    tmp = tempfile.mkdtemp(prefix='rbd_campaign_')
    os.environ['ROS_DOMAIN_ID'] = str(private_domain_id())
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['ROS_LOG_DIR'] = tmp
    os.environ.setdefault('RCUTILS_COLORIZED_OUTPUT', '0')
    logs = {}
    procs = {}
    for name, cmd in (
            ('dynamics', _script('dynamics_node') + ['--ros-args', '-p', 'joint_states_qos:=reliable',
                                                      '-p', 'diagnostics_period:=0.5',
                                                      '-p', 'input_timeout:=0.0']),
            ('sim', _script('sim_node') + ['--urdf', str(ARM), '--ros-args', '-r',
                                           'joint_states:=/campaign_sim/joint_states', '-p',
                                           'diagnostics_period:=0.5', '-p',
                                           'command_timeout:=0.05',
                                           # unsaturated and unbounded, so that the blow-up
                                           # commands do blow the state up (and it resets)
                                           '-p', 'effort_limits:=false',
                                           '-p', 'velocity_limits:=false',
                                           '-p', "position_limits:='off'"]),
            # frames_node reads the same fuzzed joint_states (with the arm from the topic)
            ('frames', _script('frames_node') + ['--ros-args', '-p', 'joint_states_qos:=reliable',
                                                 '-p', 'diagnostics_period:=0.5'])):
        logs[name] = open(os.path.join(tmp, f'{name}.log'), 'w')
        procs[name] = subprocess.Popen(cmd, stdout=logs[name], stderr=subprocess.STDOUT)
    import rbd_ros.dynamics as rbd
    arm = rbd.Model.from_urdf(str(ARM))
    tree = rbd.Model.from_urdf(str(TREE))
    c = Campaign(args)
    gc.freeze()     # as the nodes do: the driver's own collector pauses are not the node's losses
    report, failures = [], []
    try:
        c.description.publish(c.String(data=ARM.read_text()))
        c.wait(lambda: c.js.get_subscription_count() >= 1 and c.effort.get_subscription_count() >= 1,
               30, 'the nodes to subscribe')
        c.wait(lambda: 'rbd_dynamics' in c.diag and c.diag['rbd_dynamics'].get('model') == 'rbd_arm7',
               30, 'dynamics_node to load the arm')
        rss = {k: rss_mb(p.pid) for k, p in procs.items()}
        c.prime_reader_queue(list(arm.joint_names), procs['dynamics'].pid)
        t0 = time.monotonic()
        sent_fuzz = c.fuzz(args.fuzz, list(arm.joint_names), procs['dynamics'].pid)
        fuzz_s = time.monotonic() - t0
        c.t_ns += 2_000_000_000
        swaps, reload_outputs, mixed = c.reloads(args.reload_seconds, list(arm.joint_names),
                                                  list(tree.joint_names))
        c.description.publish(c.String(data=ARM.read_text()))
        c.wait(lambda: c.diag.get('rbd_dynamics', {}).get('model') == 'rbd_arm7', 30,
               'the arm back')
        sim_before = c.sim_count
        sent_sim = c.sim_fuzz(args.sim, list(arm.joint_names))
        c.spin_for(2.0)
        sim_published = c.sim_count - sim_before
        # soak: valid joint_states at rate for args.soak s
        diag0 = dict(c.diag.get('rbd_dynamics', {}))
        gravity0 = c.gravity_count
        rss_soak0 = rss_mb(procs['dynamics'].pid)
        sent_soak = int(args.soak * args.rate)
        cpu_soak0 = {k: cpu_seconds(p.pid) for k, p in procs.items()}
        wall_soak0 = time.monotonic()
        names = list(arm.joint_names)
        # a clean time base: a fuzzed stamp up to 1 s in the future would otherwise make the
        # first valid messages 'time_backwards' (rightly: they look older)
        c.t_ns += 2_000_000_000
        soak_t0, c.stamps = c.t_ns, array('q')

        states = [c.msg(names, c.rng.uniform(-1, 1, 7)) for _ in range(100)]

        def valid(k):        # (pre-built messages: the driver keeps up at 1 kHz)
            c.t_ns += 1_000_000
            m = states[k % 100]
            m.header.stamp.sec, m.header.stamp.nanosec = divmod(c.t_ns, 1_000_000_000)
            c.js.publish(m)
        c.paced(sent_soak, args.rate, valid)
        cpu_soak = {k: 100 * (cpu_seconds(p.pid) - cpu_soak0[k]) / (time.monotonic() - wall_soak0)
                    for k, p in procs.items()}
        c.spin_for(2.0)
        soak_outputs = c.gravity_count - gravity0
        rss_end = {k: rss_mb(p.pid) for k, p in procs.items()}
        c.spin_for(1.0)
        d, s = c.diag.get('rbd_dynamics', {}), c.diag.get('rbd_sim', {})
        f = c.diag.get('rbd_frames', {})
        nonfinite = c.nonfinite
        rejected = {k[len('rejected_'):]: int(v) for k, v in d.items()
                    if k.startswith('rejected_') and k != 'rejected_total'}
        lost_soak = sent_soak - soak_outputs
        runs = _lost_runs(soak_t0, sent_soak, c.stamps)
        received_soak = int(d.get('messages_received', 0)) - int(diag0.get('messages_received', 0))
        rejected_soak = int(d.get('rejected_total', 0)) - int(diag0.get('rejected_total', 0))
        report = [
            ('joint_states fuzzed into dynamics_node (rate)', f'{sent_fuzz} ({sent_fuzz / max(fuzz_s, 1e-9):.0f} Hz)'),
            ('received by dynamics_node, whole run', d.get('messages_received', '?')),
            ('rejected, total', d.get('rejected_total', '?')),
        ] + [(f'  rejected: {k}', v) for k, v in sorted(rejected.items())] + [
            ('unknown joint names (count / sample size)',
             f"{d.get('unknown_joint_names', '?')} / {len([x for x in d.get('unknown_joint_name_sample', '').split(',') if x])}"),
            ('internal errors: dynamics / sim', f"{d.get('internal_errors', '?')} / {s.get('internal_errors', '?')}"),
            ('description swaps (arm, tree3, broken) / outputs during them / mixed',
             f'{swaps} / {reload_outputs} / {mixed}'),
            ('description errors counted', d.get('description_errors', '?')),
            ('clock resets taken (stamps more than 1 s back)', d.get('clock_resets', '?')),
            ('sim commands fuzzed / joint_states published after / divergence resets',
             f"{sent_sim} / {sim_published} / {s.get('divergence_resets', '?')}"),
            ('gravity outputs, whole run', c.gravity_count),
            ('non-finite outputs received / dropped by the nodes',
             f"{nonfinite} / {d.get('non_finite_outputs_dropped', '?')}"),
            (f'soak: sent at {args.rate:.0f} Hz for {args.soak:g} s / received by the node / '
             'rejected / outputs received / lost', f'{sent_soak} / {received_soak} / '
             f'{rejected_soak} / {soak_outputs} / {lost_soak}'),
            ('soak: CPU of the node processes over it, % of one core: dynamics_node (its '
             'defaults, joint_states with positions only: gravity_torques, read) / frames_node '
             '(/tf) / sim_node (its own loop)',
             f"{cpu_soak['dynamics']:.1f} / {cpu_soak['frames']:.1f} / {cpu_soak['sim']:.1f}"),
            ('soak: runs of consecutive lost messages / longest / first lost at (s)',
             f"{len(runs)} / {max((n for _, n in runs), default=0)} / "
             f"{', '.join(f'{k / args.rate:.1f}' for k, _ in runs[:8])}"
             f"{' ...' if len(runs) > 8 else ''}"),
            (f'driver pauses over {1e3 * MAX_LATE:.0f} ms, schedule restarted (whole run) / '
             'longest, ms',
             f'{c.driver_pauses} / {1e3 * c.driver_max_late:.0f}'),
            ('garbage collector in dynamics_node, whole run: collections per generation / '
             'longest pause, us: wall (its generation), CPU / pauses over 1 ms',
             f"{d.get('gc_collections', '?')} / {d.get('gc_pause_max_us', '?')} "
             f"({d.get('gc_pause_max_generation', '?')}), {d.get('gc_pause_cpu_max_us', '?')} / "
             f"{d.get('gc_pauses_over_1ms', '?')}"),
            ('RSS dynamics_node, MB: start / before soak / end', f"{rss['dynamics']:.1f} / {rss_soak0:.1f} / {rss_end['dynamics']:.1f}"),
            ('RSS sim_node, MB: start / end', f"{rss['sim']:.1f} / {rss_end['sim']:.1f}"),
            ('RSS frames_node, MB: start / end', f"{rss['frames']:.1f} / {rss_end['frames']:.1f}"),
            ('RSS dynamics_node, MB, before / after a burst that brings its joint_states '
             "queue to DDS's high-water mark (200 messages of 400 KB, before the fuzz)",
             f'{c.primed[0]:.1f} / {c.primed[1]:.1f}' if hasattr(c, 'primed') else '-'),
            (f'RSS dynamics_node during the fuzz, MB, every {RSS_EVERY:,} messages',
             ' '.join(f'{mb:.1f}' for _, mb in c.rss_trace)),
            ('internal errors: frames', f"{f.get('internal_errors', '?')}"),
            ('rejected: sim_node (malformed / out_of_range) / frames_node (malformed)',
             f"{s.get('rejected_total', '?')} ({s.get('rejected_malformed', '0')} / "
             f"{s.get('rejected_out_of_range', '0')}) / {f.get('rejected_malformed', '0')}"),
        ]
        growth = _fuzz_rss_growth(c.rss_trace)
        if growth is not None:
            report.append((f'RSS growth of dynamics_node over the {GROWTH_SPAN:,} fuzzed messages '
                           f'after the first {RSS_EVERY:,}, MB', f'{growth:.1f}'))
            if growth >= 5.0:
                failures.append(f'dynamics_node RSS grew {growth:.1f} MB under fuzz')
        for name, proc in procs.items():
            if proc.poll() is not None:
                failures.append(f'{name} died (exit {proc.returncode})')
        if nonfinite:
            failures.append(f'{nonfinite} non-finite outputs')
        if any(x.get('internal_errors', '0') != '0' for x in (d, s, f)):
            failures.append('internal errors counted')
        if mixed:
            failures.append(f'{mixed} outputs mixed two models')
        if sim_published < 10:
            failures.append('sim_node froze')
        if s.get('divergence_resets', '0') == '0':
            failures.append('no divergence reset: the blow-up commands went untested')
        if lost_soak != 0:
            failures.append(f'{lost_soak} soak outputs lost')
        if int(d.get('rejected_total', 0)) > int(d.get('messages_received', 0)):
            failures.append('more rejections than messages received')
        if received_soak != sent_soak:
            failures.append(f'soak: {sent_soak} sent but {received_soak} received')
        if not args.smoke and rss_end['dynamics'] - rss_soak0 > 5.0:
            failures.append(f"dynamics_node RSS grew {rss_end['dynamics'] - rss_soak0:.1f} MB in the soak")
    finally:
        c.executor.shutdown()
        c.node.destroy_node()
        c.context.try_shutdown()
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(2)
        for name, proc in procs.items():
            try:
                code = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = 'killed'
            if code not in (0, 'killed') and proc.returncode not in (0,):
                failures.append(f'{name} exited with status {code} on SIGINT')
            logs[name].close()
    print('| measurement | value |')
    print('|---|---:|')
    for label, value in report:
        print(f'| {label} | {value} |')
    print()
    print('result: ' + ('FAILED: ' + '; '.join(failures) if failures else 'every check held'))
    print(f'node logs: {tmp}')
    return 1 if failures else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog='python -m benchmarks.campaign',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--fuzz', type=int, default=200_000, help='fuzzed joint_states (200000)')
    parser.add_argument('--soak', type=float, default=600.0, help='soak seconds at 1 kHz (600)')
    parser.add_argument('--sim', type=int, default=5000, help='fuzzed sim commands (5000)')
    parser.add_argument('--reload-seconds', type=float, default=20.0,
                        help='seconds of description reloads every 0.5 s (20)')
    parser.add_argument('--rate', type=float, default=1000.0, help='publish rate, Hz (1000)')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--smoke', action='store_true', help='seconds: 3000 fuzzed, 3 s soak')
    args = parser.parse_args(argv)
    if args.smoke:
        args.fuzz, args.soak, args.sim, args.reload_seconds = 3000, 3.0, 500, 3.0
    return run(args)


if __name__ == '__main__':
    raise SystemExit(main())
