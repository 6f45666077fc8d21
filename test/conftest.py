"""Shared fixtures for the ROS 2 tests (test_ros_*.py), the markers and the cache warm-up.

Markers (registered in pytest.ini, --strict-markers): ``ros`` is applied here to every test
that needs rclpy (ROS_FILES, test_ros_*.py, any test using the ``ros`` fixture; a few others
carry it explicitly), ``slow`` to the tests listed in SLOW, ``one_distro`` and ``alone`` to
those in ONE_DISTRO and ALONE (scripts/test.sh and .ci/run say what they do). When a run
includes tests that start rbd_ros in a subprocess or a node (WARM_FILES, ``ros``), numba's
cache is warmed once with ``python -m rbd_ros.warmup`` (2-4 s when warm, 2.5 minutes
cold on 2 cores): before
collection when the command line names a directory or such a file, else once the selected
tests are known. A node subprocess that compiled its kernels at start-up would miss the
tests' discovery timeouts. RBD_ROS_TEST_WARMUP=0 skips it.

Every test process gets a private DDS domain id (a lock file per id, so two test runs on one
machine never share one; ROS_DOMAIN_ID instead when it is set), discovery is limited to localhost, Fast DDS uses UDP only (no
/dev/shm leftovers), and ROS logs go to a temporary directory. Each test gets a fresh rclpy
Context; nodes under test and the test's own probe node spin in a background executor.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import pytest

from benchmarks.isolation import private_domain_id

# pytest keeps the test modules' rewritten bytecode in test/__pycache__ (ignored by git) even
# where PYTHONDONTWRITEBYTECODE is set, as on CI's machines: else each of a run's ~11 pytest
# processes (xdist workers) rewrites and compiles every test module again, 4-5 s of CPU each.
# The processes the tests start keep the setting (scripts/setup.sh compiles rbd_ros's sources).
sys.dont_write_bytecode = False
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('FASTDDS_BUILTIN_TRANSPORTS', 'UDPv4')
if not os.environ.get('ROS_LOG_DIR'):
    os.environ['ROS_LOG_DIR'] = tempfile.mkdtemp(prefix='rbd_ros_test_log_')
warnings.filterwarnings('ignore', category=DeprecationWarning, module='lark')

# the robots the ROS tests load, as robot_description texts
ROOT = pathlib.Path(__file__).resolve().parent.parent
ARM = (ROOT / 'rbd_ros' / 'robots' / 'rbd_arm7.urdf').read_text()
TREE3 = (ROOT / 'test' / 'data' / 'ros' / 'tree3.urdf').read_text()
QUAD2 = (ROOT / 'test' / 'data' / 'ros' / 'quad2.urdf').read_text()


BIN = pathlib.Path(sys.executable).parent
MODULES = {'dynamics_node': 'rbd_ros.nodes.dynamics', 'frames_node': 'rbd_ros.nodes.frames',
           'sim_node': 'rbd_ros.nodes.sim', 'bringup': 'rbd_ros.bringup'}


def script(name):
    """The command of an rbd_ros executable (the console script, else python -m)."""
    path = BIN / name
    return [str(path)] if path.exists() else [sys.executable, '-m', MODULES[name]]


def ros_distro():
    """The ROS 2 distribution under test: from the PyPI wheels (ros-jazzy-rclpy: 'jazzy';
    ros-rclpy 9: 'kilted'), else ROS_DISTRO (a sourced ROS 2 install), else None."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        version('ros-jazzy-rclpy')
        return 'jazzy'
    except PackageNotFoundError:
        pass
    try:
        if version('ros-rclpy').split('.')[0] == '9':
            return 'kilted'
    except PackageNotFoundError:
        pass
    return os.environ.get('ROS_DISTRO') or None


def child_env():
    """The environment of a node process: this test process's domain (ROS_DOMAIN_ID, else a
    private one), loopback."""
    env = dict(os.environ)
    env['ROS_DOMAIN_ID'] = str(private_domain_id())
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env['PYTHONUNBUFFERED'] = '1'
    return env


def js(names, position=(), velocity=(), effort=(), sec=0, nanosec=0):
    """A sensor_msgs/JointState with the given fields and header stamp."""
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState
    msg = JointState(name=list(names), position=[float(x) for x in position],
                     velocity=[float(x) for x in velocity], effort=[float(x) for x in effort])
    msg.header.stamp = Time(sec=sec, nanosec=nanosec)
    return msg


def pytest_configure(config):
    # the first ROS message import makes lark warn about sre_parse/sre_constants
    config.addinivalue_line('filterwarnings', "ignore:module 'sre_:DeprecationWarning")


# ---- markers -----------------------------------------------------------------------------
#: files whose every test needs rclpy (besides test_ros_*.py): they import it at module level
ROS_FILES = {'test_docs_commands.py', 'test_analyze.py', 'test_analyze_legged.py'}

#: the tests over ~10 s each on the 2-core machine (a file name: all of its tests). Measured
#: with --durations=0 on a warm cache (2026-11-25), seconds in the comments.
SLOW = {
    'test_docs_commands.py::test_every_docs_command_runs',      # every docs command: minutes
    'test_dynamics_identities.py::test_interpreted_and_compiled_paths_agree',   # 30
    'test_ros_legged.py::test_solo12_stands_for_10_s_in_closed_loop_with_dynamics_node',  # 28
    'test_analyze_legged.py',      # 5 s of Solo-12 simulated and recorded, then analysed: 45
    'test_benchmarks.py::test_campaign_smoke',                  # 21
    'test_ros_cli.py::test_param_call_echo_and_list_against_a_running_sim',    # 18
    'test_ros_feedforward.py::test_an_unknown_payload_feedback_laws_beat_feedforward_alone',  # 16
    'test_ros_bringup.py::test_demo_runs_and_summarises',       # 15
    'test_benchmarks.py::test_node_bench_smoke',                # 13
    'test_benchmarks.py::test_analyze_bench_smoke',             # 10
    'test_analyze.py::test_local_workers_and_a_scheduler_give_the_serial_numbers',  # 10
}


#: `ros` tests whose ROS 2 side another test already covers on every distribution: what they
#: check beyond it is the same whatever the distribution (the docs' text, the benchmarks'
#: harnesses, the offline analysis, a control law's quality). Marked `one_distro`: CI runs
#: them on Kilted and leaves them out of its Jazzy run (.ci/run), which has the node, wire,
#: echo, launch and simulator tests. Seconds measured as SLOW's.
ONE_DISTRO = {
    'test_docs_commands.py',                 # 95: every command of the docs
    'test_benchmarks.py::test_node_bench_smoke',                # 49
    'test_benchmarks.py::test_campaign_smoke',                  # 20
    'test_benchmarks.py::test_analyze_bench_smoke',             # 18
    'test_benchmarks.py::test_sim_node_bench_smoke',            # 9
    'test_analyze.py',                       # 27: the analysis of logs (rclpy writes them)
    'test_analyze_legged.py',                # 24: the nodes' part is test_ros_legged.py's
    'test_ros_feedforward.py::test_an_unknown_payload_feedback_laws_beat_feedforward_alone',  # 16
    # the demo's phases (its nodes and bringup: test_ros_bringup's other tests)
    'test_ros_bringup.py::test_demo_runs_and_summarises',       # 22
    # how fast the observer flags a collision (its topics: the other test_ros_observer tests)
    'test_ros_observer.py::test_a_collision_is_flagged_within_20_ms_and_not_on_a_free_trajectory',
    # /diagnostics' period under a heavy step (the period parameter: test_ros_descriptions)
    'test_ros_sim.py::test_diagnostics_keep_their_period_as_fast_as_possible_with_a_heavy_step',
    # Solo-12 standing 10 s (31 s of CPU): its nodes' topics are the floating base's
    # (test_ros_dynamics.py::test_floating_base_model, the box's tests in test_ros_legged.py)
    # and the lockstep loop's (test_ros_sim.py)
    'test_ros_legged.py::test_solo12_stands_for_10_s_in_closed_loop_with_dynamics_node',
    # docs/ros.md's LQR loop against a push (22 s): the linearization's topics are the other
    # test_ros_linearization.py tests'
    'test_ros_linearization.py::test_the_docs_lqr_example_holds_the_arm_against_a_push',
    # UR5's run of computed torque: the topics of the arm's run
    'test_ros_feedforward.py::test_computed_torque_tracks_a_whole_trajectory[ur5]',
    # numba's cache reached through colcon's links (its node's start-up: the other tests')
    'test_ros_startup.py::test_a_colcon_symlink_install_starts_from_the_warm_cache',
}


#: `ros` tests whose checks read the clock: a rate, a latency, a CPU share, real time, a
#: command timeout, a period of silence. Marked `alone`: scripts/test.sh runs them one at a
#: time after the other `ros` tests, which run on three processes: those start nodes and wait,
#: with timeouts, for what the nodes say, or run a closed loop in lockstep (sim_node advances
#: when the controller answers: the same run however loaded the machine is, only slower).
ALONE = {
    'test_benchmarks.py::test_node_bench_smoke',
    'test_benchmarks.py::test_sim_node_bench_smoke',
    'test_benchmarks.py::test_campaign_smoke',
    'test_ros_sim.py',
    'test_ros_observer.py',
    'test_ros_fast_path.py',             # counts over 1,000 messages sent at 1 kHz
    'test_ros_linearization.py::test_the_linearization_is_the_cores_of_the_state_it_names',
    'test_ros_linearization.py::test_a_floating_base_is_linearised_on_the_whole_model',
    'test_ros_legged.py::test_a_free_box_falls_lands_and_reports_its_base_and_contacts',
    'test_ros_legged.py::test_reset_and_set_base_state_cover_the_base',
    'test_ros_legged.py::test_the_ur5_wrist_settles_on_a_position_command_with_the_default_gains',
    'test_ros_legged.py::test_a_contact_blow_up_is_a_divergence_like_any_other',
    'test_ros_bringup.py::test_ankle_demo_holds_the_foot_where_a_tree_ignoring_the_loops_lets_it_fall',
    'test_ros_startup.py::test_sim_node_without_commands_keeps_real_time_and_stops_on_ctrl_c',
    'test_ros_startup.py::test_a_node_that_cannot_keep_its_rate_still_stops_on_ctrl_c',
    # (checks that nothing writes numba's cache while it runs)
    'test_ros_startup.py::test_a_colcon_symlink_install_starts_from_the_warm_cache',
    'test_ros_loops.py::test_sim_node_simulates_the_ankle_from_its_motors_and_publishes_every_joint',
    'test_ros_dynamics.py::test_gravity_commands_and_stale_input',
    'test_ros_dynamics.py::test_nodes_say_what_they_wait_for_and_what_is_stale',
    'test_ros_frames.py::test_publish_frequency_and_bad_input',
    'test_ros_descriptions.py::test_diagnostics_period_is_a_parameter_of_every_node',
    'test_simulation_solver.py::test_sim_node_reports_unconverged_solves_in_diagnostics',
}


def _listed(item, names):
    name = item.path.name
    return name in names or item.nodeid.split('/')[-1] in names \
        or item.nodeid.split('/')[-1].split('[')[0] in names


def _is_slow(item):
    return _listed(item, SLOW)


@pytest.hookimpl(tryfirst=True)     # before -m deselects by them
def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        if name.startswith('test_ros_') or name in ROS_FILES or 'ros' in item.fixturenames:
            item.add_marker(pytest.mark.ros)
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
        if _listed(item, ONE_DISTRO):
            item.add_marker(pytest.mark.one_distro)
        if _listed(item, ALONE):
            item.add_marker(pytest.mark.alone)


# ---- batches: both ways a parallel batch runs ------------------------------------------
@pytest.fixture(params=['threads', 'row by row'])
def batch_path(request, monkeypatch):
    """A parallel batch (inverse and forward dynamics, M, gravity, their derivatives) runs on
    numba's threads, or row by row where waking them costs more than a small batch's rows
    (rbd_ros.dynamics.arguments.SMALL_BATCH): a test taking this fixture runs once each way,
    whatever the batch's size and the machine's threading layer."""
    from rbd_ros.dynamics import arguments
    rows = request.param == 'row by row'
    monkeypatch.setattr(arguments, 'SMALL_BATCH', 10 ** 9 if rows else 0)
    monkeypatch.setattr(arguments, 'slow_thread_launch', lambda: rows)
    return request.param


# ---- numba cache warm-up -----------------------------------------------------------------
#: files whose tests start rbd_ros in subprocesses with a timeout (besides the `ros` tests)
WARM_FILES = {'test_benchmarks.py', 'test_inspect.py', 'test_warmup.py', 'test_readme.py',
              'test_analyze_pipeline.py'}


def _needs_warm_cache(items):
    return any(item.get_closest_marker('ros') is not None or item.path.name in WARM_FILES
               for item in items)


def _arg_needs_warm_cache(arg):
    """A command-line path (a directory, or a file of ROS or subprocess tests)."""
    path = pathlib.Path(str(arg).split('::')[0])
    return path.is_dir() or path.name.startswith('test_ros_') or path.name in ROS_FILES \
        or path.name in WARM_FILES


_warmed = []


def _no_warmup(config):
    return (config.option.collectonly or os.environ.get('RBD_ROS_TEST_WARMUP', '1') == '0'
            or os.environ.get('RBD_ROS_NO_JIT', '') not in ('', '0')
            or os.environ.get('NUMBA_DISABLE_JIT', '') not in ('', '0'))


def _warm_up(config):
    """python -m rbd_ros.warmup once, in this process's environment: a NUMBA_CACHE_DIR set for
    the run is the one warmed, and the one the node subprocesses inherit."""
    if _warmed:
        return
    _warmed.append(True)
    reporter = config.pluginmanager.get_plugin('terminalreporter')
    start = time.monotonic()
    done = subprocess.run([sys.executable, '-m', 'rbd_ros.warmup'], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    took = time.monotonic() - start
    if done.returncode != 0:
        # the tests that compile will fail with the reason; say it once here too
        message = (f'rbd_ros.warmup failed (exit {done.returncode}) after {took:.1f} s:\n'
                   + (done.stdout + done.stderr)[-3000:])
    else:
        message = f'rbd_ros: numba cache warmed in {took:.1f} s (python -m rbd_ros.warmup)'
    if reporter is not None:
        reporter.write_line(message)
    else:
        print(message, file=sys.stderr)


def pytest_sessionstart(session):
    """Before collection when the run names a directory or a file of ROS or subprocess tests:
    importing the test modules would otherwise compile the signature kernels in this process,
    one after the other, before a later warm-up could compile them on every core."""
    if not _no_warmup(session.config) and any(map(_arg_needs_warm_cache, session.config.args)):
        _warm_up(session.config)


def pytest_collection_finish(session):
    """Otherwise after collection and deselection, when a selected test starts node or rbd_ros
    subprocesses (they would compile their kernels at start-up, for longer than the tests
    wait for them: discovery timeouts from a cold cache)."""
    if not (_no_warmup(session.config) or not session.items
            or not _needs_warm_cache(session.items)):
        _warm_up(session.config)


class RosHarness:
    """A fresh Context on the private domain, an executor spinning in a thread, and helpers to
    publish, collect and wait."""

    def __init__(self):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.domain_id = private_domain_id()
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=self.domain_id)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.nodes = []
        self.probe = self.add(rclpy.create_node('rbd_test_probe', context=self.context))
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        # A node removed and destroyed while spin_once waits on its handles can make that one
        # call raise (RuntimeError, InvalidHandle); the thread spins on, or every node a test
        # starts afterwards would sit unserved until its timeout. It ends with the context.
        from rclpy.executors import ExternalShutdownException
        while self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except ExternalShutdownException:
                return
            except Exception as error:   # noqa: BLE001 - said, and spun on
                if not self.context.ok():
                    return
                print(f'RosHarness: spin_once raised {error!r}; spinning on', file=sys.stderr,
                      flush=True)

    def add(self, node):
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def remove(self, node):
        self.executor.remove_node(node)
        self.nodes.remove(node)
        node.destroy_node()

    def start(self, cls, params=None, **kwargs):
        """Instantiate an rbd_ros node class with parameter overrides and spin it."""
        from rclpy.parameter import Parameter
        overrides = [Parameter(k, value=v) for k, v in (params or {}).items()]
        return self.add(cls(context=self.context, parameter_overrides=overrides, **kwargs))

    def collect(self, msg_type, topic, qos=None):
        """Subscribe on the probe node; returns a list that fills with received messages."""
        from rbd_ros.ros.qos import OUTPUT_QOS
        box = []
        self.probe.create_subscription(msg_type, topic, box.append, qos or OUTPUT_QOS)
        return box

    def publisher(self, msg_type, topic, qos=None, wait_for=None, nodes=()):
        """A probe publisher; with ``wait_for`` (a number of subscriptions), wait until that many
        subscribers have matched; with ``nodes`` (node names), until each of them has a
        subscription on the topic in the graph too (a count alone can be met by another test's
        node still leaving the domain, and a volatile sample sent then misses the one asked
        for)."""
        from rbd_ros.ros.qos import OUTPUT_QOS
        pub = self.probe.create_publisher(msg_type, topic, qos or OUTPUT_QOS)
        if nodes:
            name = pub.topic_name
            wait_until(lambda: set(nodes) <= {info.node_name for info in
                                              self.probe.get_subscriptions_info_by_topic(name)},
                       timeout=60.0, what=f'subscriptions of {", ".join(nodes)} on {name}')
        if wait_for:
            wait_until(lambda: pub.get_subscription_count() >= wait_for,
                       what=f'{wait_for} subscriber(s) on {topic}')
        return pub

    def wait_for_publisher(self, topic, count=1):
        wait_until(lambda: self.probe.count_publishers(topic) >= count,
                   what=f'{count} publisher(s) on {topic}')

    def close(self):
        self.executor.shutdown(timeout_sec=1.0)
        for node in list(self.nodes):
            try:
                node.destroy_node()
            except Exception:   # noqa: BLE001
                pass
        self.context.try_shutdown()
        self._thread.join(timeout=5)


def publish_until(pub, msg, predicate, timeout=15.0, what='a reply', every=0.5):
    """Publish ``msg`` until ``predicate`` holds (re-sending covers a best-effort loss)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pub.publish(msg)
        t_next = time.monotonic() + every
        while time.monotonic() < t_next:
            if predicate():
                return
            time.sleep(0.005)
    pytest.fail(f'timed out after {timeout} s waiting for {what}')


def wait_until(predicate, timeout=15.0, what='condition', period=0.01):
    """Poll ``predicate`` until it is true; fail the test after ``timeout`` s (discovery can take
    seconds on a busy 2-core machine)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(period)
    pytest.fail(f'timed out after {timeout} s waiting for {what}')


@pytest.fixture
def ros():
    pytest.importorskip('rclpy')
    harness = RosHarness()
    try:
        yield harness
    finally:
        harness.close()
