"""Shared fixtures for the ROS 2 tests (test_ros_*.py).

Every test process gets a private DDS domain id (a lock file per id, so two test runs on one
machine never share one), discovery is limited to localhost, Fast DDS uses UDP only (no
/dev/shm leftovers), and ROS logs go to a temporary directory. Each test gets a fresh rclpy
Context; nodes under test and the test's own probe node spin in a background executor.
"""
from __future__ import annotations

import os
import pathlib
import sys
import tempfile
import threading
import time
import warnings

import pytest

from benchmarks.isolation import private_domain_id

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


def child_env():
    """The environment of a node process: this test process's private domain, loopback."""
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
        from rclpy.executors import ExternalShutdownException
        try:
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.05)
        except (ExternalShutdownException, RuntimeError):
            pass

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

    def publisher(self, msg_type, topic, qos=None, wait_for=None):
        """A probe publisher; with ``wait_for`` (a number of subscriptions), wait until that many
        subscribers have matched."""
        from rbd_ros.ros.qos import OUTPUT_QOS
        pub = self.probe.create_publisher(msg_type, topic, qos or OUTPUT_QOS)
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
