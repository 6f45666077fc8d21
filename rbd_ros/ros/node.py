"""The base of every rbd_ros node, and the one init/spin/shutdown sequence of every executable.

A node declares its parameters (params.py), loads its robot description, and swaps in a new
*runtime* (everything its callbacks need, built by the node's ``prepare(robot)``) in one
assignment, so a callback that reads ``self.runtime`` once never mixes two models.

The description comes from the ``robot_description`` parameter (URDF text), else from the
``robot_description_file`` parameter (a path), else from the latched ``robot_description``
topic. At start-up a description or parameter the node cannot run with stops it (exit status
2, one line naming the parameter). At run time a bad description from the parameters is
refused when it is set (the parameter keeps describing the running model); one from the topic
is logged and counted, and the previous model keeps running.
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import faulthandler
import gc
import inspect
import math
import signal
import sys
import threading
import time
from typing import Callable, Iterable

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import InertiaStamped
from rclpy.exceptions import InvalidHandle
from rclpy.node import Node
from std_msgs.msg import String

from rbd_ros.dynamics._jit import JIT_ENABLED, load_signature_kernels
from rbd_ros.stdout import watch_teardown

from . import joint_state_bytes, wire
from .cdr import CdrChecker
from .diagnostics import Stats, diagnostic_status
from .joint_states import Rejected
from .params import (ParameterError, ParamSpec, declare_parameters, finite_vector,
                     install_set_validation, one_of, positive, unique_names)
from .qos import COMMAND_QOS, LATCHED_QOS, OUTPUT_QOS
from .robot import Robot, load_robot, read_description_file, refuse_closed_loops

# Parameters several nodes declare, described once.
ROBOT_DESCRIPTION = ParamSpec('string', '', 'URDF text; empty: robot_description_file, else the '
                              'latched robot_description topic', dynamic=True)
ROBOT_DESCRIPTION_FILE = ParamSpec('string', '', 'path of a URDF file, used when '
                                   'robot_description is empty', dynamic=True)
STRICT = ParamSpec('bool', False, 'refuse a robot description that has warnings that are not '
                   'harmless (a doubtful inertia, degenerate limits, ...) like a malformed one')
DIAGNOSTICS_PERIOD = ParamSpec('double', 1.0, 'seconds between /diagnostics messages', positive)
JOINT_STATES_QOS = ParamSpec('string', 'sensor_data', 'joint_states subscription QoS: '
                             'sensor_data (best effort) or reliable',
                             one_of('sensor_data', 'reliable'))
ACTUATED_JOINTS = ParamSpec('string_array', [], 'a robot with closed loops (<constraint>): the '
                            'joints that drive it; joint_states need carry only them (and the '
                            'joints outside the loops), the loops\' passive joints follow; in '
                            'dynamics_node the order of every per-joint output; empty: those '
                            'its <transmission> / <ros2_control> name', unique_names)
# The nodes that take a payload (dynamics_node, sim_node) also take the model corrections an
# identification writes (python -m rbd_ros analyze --write-params).
MODEL_PARAMS = {
    'joint_dynamics_joints': ParamSpec('string_array', [], 'joints whose URDF <dynamics> '
                                       'damping and friction joint_damping and joint_friction '
                                       'replace (what rbd_analyze --write-params writes)',
                                       unique_names),
    'joint_damping': ParamSpec('double_array', [], 'viscous friction of each '
                               'joint_dynamics_joints joint (N m s/rad, N s/m)',
                               finite_vector(minimum=0.0)),
    'joint_friction': ParamSpec('double_array', [], 'Coulomb friction of each '
                                'joint_dynamics_joints joint (N m, N)',
                                finite_vector(minimum=0.0)),
    'payload_link': ParamSpec('string', '', 'a payload carried from the start: its link (a '
                              '~/payload message replaces it)'),
    'payload': ParamSpec('double_array', [], 'the payload on payload_link: m, com x y z, ixx ixy '
                         'ixz iyy iyz izz (the link frame; inertia about the com); 1 or 4 '
                         'values: a point mass', finite_vector()),
}
COMMON_PARAMS = {'robot_description': ROBOT_DESCRIPTION,
                 'robot_description_file': ROBOT_DESCRIPTION_FILE, 'strict': STRICT,
                 'diagnostics_period': DIAGNOSTICS_PERIOD}


class RbdNode(Node):
    """Base of the rbd_ros nodes. A subclass sets NODE_NAME and PARAMS (COMMON_PARAMS and its
    own), implements ``prepare(robot) -> runtime`` (raise ValueError naming the parameter to
    refuse a model) and may override ``runtime_changed``, ``extra_diagnostics`` and
    ``is_stale``; it calls ``start()`` at the end of its __init__."""

    NODE_NAME = 'rbd'
    PARAMS: dict[str, ParamSpec] = COMMON_PARAMS
    #: strict mode refuses only warnings that bear on kinematics (frames_node)
    STRICT_KINEMATICS_ONLY = False
    #: the node takes a payload on ~/payload (geometry_msgs/InertiaStamped)
    ACCEPTS_PAYLOAD = False
    #: what stale input does to the node's outputs (said in /diagnostics)
    STALE_EFFECT = ''
    #: why the node refuses a description that closes kinematic loops (<constraint>); None: it
    #: serves them (dynamics_node and frames_node close the loops per message, sim_node
    #: simulates them)
    CLOSED_LOOPS_REFUSAL: str | None = 'this node does not serve closed loops'

    def __init__(self, *, context=None, parameter_overrides=None, node_name=None,
                 namespace=None, cli_args=None):
        super().__init__(node_name or self.NODE_NAME, context=context, namespace=namespace,
                         parameter_overrides=parameter_overrides, cli_args=cli_args)
        self.params = declare_parameters(self, self.PARAMS)
        self._name_undeclared_parameters()
        # every signature kernel (the core's entry points), from numba's cache, now: loaded on
        # a first call instead, each would make a message ~3.5 ms late (and numba's first load
        # sets up its registries: 0.3 s, with collector passes of 30 ms that /diagnostics would
        # count as the node's). So are the kernels of the joint_states merge and the outputs'
        # fill (a model's load would load them, after Stats: a full collection then measured
        # 58 ms). The batch, simulator and observer kernels load as before.
        load_signature_kernels()
        if JIT_ENABLED:
            joint_state_bytes.warm_up()
            wire.warm_up()
        self.stats = Stats()
        self.runtime = None
        self.payload = None             # (link, mass, com, inertia about the COM) or None
        self._unloaded = None           # the Robot of the description, without the payload
        self._generation = 0
        self._validated = {}     # description -> runtime, built while a parameter was set
        self._said_input = False        # "joint_states received" logged
        install_set_validation(self, self.PARAMS, self._check_param, self._param_changed)
        self.pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', OUTPUT_QOS)
        self._diagnostics_due = time.monotonic() + self.params['diagnostics_period']
        self.create_timer(self.params['diagnostics_period'],
                          self.guard(self._on_diagnostics_timer))

    def _name_undeclared_parameters(self) -> None:
        """One warning naming every parameter given to this node (params file, -p, overrides)
        that it does not declare, with the closest declared name: rclpy ignores them silently,
        so a typo (floating_bas) would otherwise look like a setting that did nothing.
        Parameters of the other rbd_ros nodes (a params file shared with ``/**``) are named in
        one INFO line instead."""
        declared = set(self._parameters)
        unknown = sorted(set(self._parameter_overrides) - declared)
        if not unknown:
            return
        others = other_node_parameters(self.NODE_NAME)
        typos = [name for name in unknown if name not in others]
        shared = [name for name in unknown if name in others]
        if typos:
            self.get_logger().warning(
                'parameters this node does not have, ignored: ' + ', '.join(
                    name + (f' (did you mean {close[0]}?)' if (close := difflib.get_close_matches(
                        name, sorted(declared), n=1, cutoff=0.6)) else '')
                    for name in typos))
        if shared:
            self.get_logger().info(f'parameters of other rbd_ros nodes, ignored here: '
                                   f'{", ".join(shared)}')

    @property
    def robot(self) -> Robot | None:
        return None if self.runtime is None else self.runtime.robot

    # -- the robot description -----------------------------------------------------------------
    def start(self) -> None:
        """Subscribe to the description topic and load the description parameters. A
        description or parameter the node cannot run with raises ParameterError."""
        self.subscribe_checked(String, 'robot_description', self._on_topic, LATCHED_QOS,
                               counted=False)
        if self.ACCEPTS_PAYLOAD:
            self.subscribe_checked(InertiaStamped, '~/payload', self.on_payload, COMMAND_QOS,
                                   counted=False)
        text, name, path = self._description_parameter()
        if not text:     # (said once; /diagnostics says it too)
            topic = self.resolve_topic_name('robot_description')
            self.get_logger().info(f'waiting for a robot description: the latched {topic} '
                                   'topic (or set robot_description, robot_description_file, '
                                   'or --urdf PATH)')
        if text:
            try:
                robot = self._load(text, 'parameter' if path is None else f'file {path}', path)
            except Exception as exc:   # noqa: BLE001 - any refusal stops the start-up
                raise ParameterError(f'parameter {name}: {_one_line(exc)}') from None
            try:
                runtime = self.prepare(robot)
            except ValueError as exc:   # the node's own parameters do not fit this robot
                raise ParameterError(f'parameter {_one_line(exc)}') from None
            self._swap(runtime)
            try:
                self._payload_parameter()
            except ValueError as exc:
                raise ParameterError(f'parameter payload: {_one_line(exc)}') from None

    def _description_parameter(self):
        """(URDF text, parameter name, file path or None) from the parameters; text '' when
        both are empty. ValueError when the file cannot be read."""
        if self.params['robot_description']:
            return self.params['robot_description'], 'robot_description', None
        path = self.params['robot_description_file']
        if path:
            try:
                text, label = read_description_file(path, say=self.get_logger().info)
                return text, 'robot_description_file', label
            except ValueError as exc:
                raise ParameterError(f'parameter robot_description_file: {exc}') from None
        return '', '', None

    def _load(self, text: str, source: str, path: str | None = None) -> Robot:
        """The Robot of a description; raises on any problem."""
        if path is None and not text.lstrip('\ufeff \t\r\n').startswith('<'):
            raise ValueError(f'not URDF XML text (it starts with {text.strip()[:40]!r}); a file '
                             'is passed with robot_description_file or --urdf PATH')
        strict = self.params['strict'] and ('kinematics' if self.STRICT_KINEMATICS_ONLY else True)
        robot = load_robot(text, floating_base=self.params.get('floating_base', False),
                           gravity=self.params.get('gravity', (0.0, 0.0, -9.81)), strict=strict,
                           generation=self._generation + 1, source=source, path=path)
        if self.CLOSED_LOOPS_REFUSAL:
            refuse_closed_loops(robot.model, self.CLOSED_LOOPS_REFUSAL)
        return self._with_joint_dynamics(robot)

    def _with_joint_dynamics(self, robot: Robot) -> Robot:
        """The robot with the joint_damping and joint_friction parameters in place of its URDF's
        (ValueError naming the parameter when they do not fit it)."""
        names = self.params.get('joint_dynamics_joints') or []
        if not names:
            return robot
        damping, friction = self.params['joint_damping'], self.params['joint_friction']
        for key, values in (('joint_damping', damping), ('joint_friction', friction)):
            if len(values) not in (0, len(names)):
                raise ValueError(f'{key} has {len(values)} values for the {len(names)} '
                                 f'joint_dynamics_joints ({", ".join(names)})')
        try:
            model = robot.model.with_joint_dynamics(
                dict(zip(names, damping)) if damping else None,
                dict(zip(names, friction)) if friction else None)
        except ValueError as exc:
            raise ValueError(f'joint_dynamics_joints: {exc}') from None
        return dataclasses.replace(robot, model=model)

    def _payload_parameter(self) -> None:
        """Carry the payload of the payload_link and payload parameters (ValueError when the
        model cannot take it)."""
        values, link = list(self.params.get('payload') or []), self.params.get('payload_link')
        if not values and not link:
            return
        if not link or len(values) not in (1, 4, 10):
            raise ValueError('payload_link and payload go together: a link, and m (1 value), '
                             'm com (4) or m com inertia (10)')
        values += [0.0] * (10 - len(values))
        m, com, (xx, xy, xz, yy, yz, zz) = values[0], np.array(values[1:4]), values[4:]
        self._set_payload(link, m, com, np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))

    def _build(self, text: str, source: str, path: str | None = None):
        """A runtime for a description (raises on any problem)."""
        return self.prepare(self._load(text, source, path))

    def _swap(self, runtime, payload: bool = False) -> None:
        robot = runtime.robot
        if payload:         # the same description, another payload
            self.runtime = runtime
            self.runtime_changed(runtime)
            return
        if self.payload is not None:
            self.get_logger().info(f'payload on {self.payload[0]!r} removed with the new '
                                   'description')
            self.payload = None
        self._unloaded = robot
        for warning in robot.model.warnings:          # each once, when its model comes in
            self.get_logger().warning(f'robot description: {warning}')
        self._generation = robot.generation
        self.stats.model_warnings = len(robot.model.warnings)
        self.runtime = runtime          # the swap: one assignment
        self.get_logger().info(
            f'model {robot.model.name!r} from {robot.source}: nq={robot.nq} nv={robot.nv}, '
            f'joints {", ".join(robot.joint_names) or "none"}'
            + (f' ({len(robot.model.warnings)} warnings)' if robot.model.warnings else ''))
        self.runtime_changed(runtime)

    def _swap_description(self, runtime) -> None:
        """Swap in the runtime of a new description, with the payload parameter's payload."""
        self._swap(runtime)
        try:
            self._payload_parameter()
        except ValueError as exc:
            self.stats.last_error = f'parameter payload: {_one_line(exc)}'
            self.get_logger().error(f'parameter payload does not fit the new description '
                                    f'(running without it): {_one_line(exc)}')

    def _refused(self, source: str, exc: Exception) -> None:
        self.stats.description_errors += 1
        self.stats.last_error = f'robot_description from {source}: {_one_line(exc)}'
        keep = 'keeping the previous model' if self.runtime is not None else 'no model yet'
        self.get_logger().error(f'robot_description from {source} refused ({keep}): '
                                f'{type(exc).__name__}: {exc}')

    def _on_topic(self, msg) -> None:
        if self.params['robot_description'] or self.params['robot_description_file']:
            return   # the parameters win
        if self.robot is not None and msg.data == self.robot.xml:
            return
        try:
            runtime = self._build(msg.data, 'topic')
        except Exception as exc:   # noqa: BLE001 - a bad description never stops the node
            self._refused('topic', exc)
            return
        self._swap_description(runtime)

    def _check_param(self, name, value) -> str | None:
        """Refuse, at set time, a description that does not load (robot_state_publisher's
        behaviour); keep the runtime built for it, to swap in once the set succeeds."""
        if name not in ('robot_description', 'robot_description_file') or not value:
            return self.check_parameter(name, value)
        try:
            if name == 'robot_description':
                text, source, path = value, 'parameter', None
            else:
                text, path = read_description_file(value, say=self.get_logger().info)
                source = f'file {path}'
            self._validated = {(name, value): self._build(text, source, path)}
        except Exception as exc:   # noqa: BLE001
            self._refused(name, exc)
            return f'{name} refused: {_one_line(exc)}'
        return None

    def _param_changed(self, name, value) -> None:
        self.params[name] = value
        runtime = self._validated.pop((name, value), None)
        if runtime is not None and (name == 'robot_description'
                                    or not self.params['robot_description']):
            self._swap_description(runtime)
        self.parameter_changed(name, value)

    # -- payload -------------------------------------------------------------------------
    def on_payload(self, msg) -> None:
        """A payload on the link named by header.frame_id (mass, centre of mass and inertia
        about it, in the link's frame: geometry_msgs/Inertia), replacing the previous one; mass
        0 removes it. The model is swapped as a new description is: every output comes from
        one model. A payload the model cannot take is refused (counted) and the model kept."""
        if self.runtime is None or self._unloaded is None:
            raise Rejected('no_model', 'payload before any robot_description')
        i, link = msg.inertia, msg.header.frame_id
        com = np.array([i.com.x, i.com.y, i.com.z])
        inertia = np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]])
        if not (math.isfinite(i.m) and np.all(np.isfinite(com)) and np.all(np.isfinite(inertia))):
            raise Rejected('non_finite', 'NaN or inf in payload')
        try:
            self._set_payload(link, i.m, com, inertia)
        except ValueError as exc:
            raise Rejected('bad_payload', str(exc)) from None

    def _set_payload(self, link, mass, com, inertia) -> None:
        """Swap in the model carrying this payload (ValueError when it cannot)."""
        model = self._unloaded.model.with_payload(link, mass, com, inertia)
        robot = dataclasses.replace(self._unloaded, model=model)
        runtime = self.carry_state(self.runtime, self.prepare(robot))
        self.payload = None if mass == 0.0 else (link, float(mass), com, inertia)
        self._swap(runtime, payload=True)
        self.get_logger().info('payload removed' if self.payload is None else
                               f'payload {mass:g} kg on {link!r} at com {com.tolist()}: model '
                               'swapped')

    def carry_state(self, old, new):
        """The runtime of a payload change, carrying what the old one knew (default: as
        prepared)."""
        return new

    def payload_text(self) -> str:
        if self.payload is None:
            return 'none'
        link, mass, com, _ = self.payload
        return f'{mass:g} kg on {link} at [{", ".join(f"{x:g}" for x in com)}]'

    # -- hooks -----------------------------------------------------------------------------
    def prepare(self, robot: Robot):
        """The runtime for a new robot; raise ValueError (naming the parameter) to refuse it."""
        raise NotImplementedError

    def runtime_changed(self, runtime) -> None:
        """Called after the runtime was swapped."""

    def parameter_changed(self, name: str, value) -> None:
        """Called after a dynamic parameter changed (its new value is in self.params)."""

    def check_parameter(self, name: str, value) -> str | None:
        """Why a new value of a dynamic parameter cannot be taken (None: it can)."""
        return None

    def is_stale(self) -> bool:
        return self.stale_reason() is not None

    def stale_reason(self) -> str | None:
        """What input is missing, naming its topic (None: the input is fresh)."""
        return None

    def joint_states_stale(self, timeout: float) -> str | None:
        """The stale reason of joint_states after ``timeout`` s without a valid one (0: never
        stale)."""
        if timeout <= 0:
            return None
        last = self.stats.last_input_time
        age = None if last is None else time.monotonic() - last
        if age is not None and age <= timeout:
            return None             # (the hot path: no string built)
        topic = self.resolve_topic_name('joint_states')
        if age is None:
            return f'no joint_states yet on {topic}'
        return f'no joint_states on {topic} for {age:.1f} s (input_timeout {timeout:g} s)'

    def input_arrived(self) -> None:
        """Called with each valid input: says once that the first one came."""
        if not self._said_input:
            self._said_input = True
            waiting = self.waiting_for()
            self.get_logger().info(f'joint_states received on '
                                   f'{self.resolve_topic_name("joint_states")}: '
                                   + (f'still waiting for {waiting}' if waiting else 'publishing'))

    def waiting_for(self) -> str | None:
        """What the node, with a model, still waits for before it can publish (None: nothing)."""
        return None

    def warning(self) -> str | None:
        """A condition /diagnostics reports as WARN with this message (None: none)."""
        return None

    def extra_diagnostics(self) -> dict:
        """Node-specific /diagnostics key-values."""
        return {}

    # -- callbacks -------------------------------------------------------------------------
    def subscribe_checked(self, msg_type, topic, callback, qos, counted=True):
        """A subscription whose bytes are walked with bounds checks (cdr.CdrChecker) before they
        are deserialized: bytes the rmw's deserializer could crash on are refused
        (``rejected_malformed``), never handed to it. ``callback(msg)`` runs guarded; each
        message counts in ``messages_received`` when ``counted``."""
        checker = CdrChecker(msg_type)
        stats = self.stats

        def on_bytes(data: bytes):
            if counted:
                stats.received += 1
            callback(checker.message(data))
        on_bytes.__name__ = callback.__name__
        return self.create_subscription(msg_type, topic, self.guard(on_bytes), qos, raw=True)

    def reject(self, reason: str, detail: str) -> None:
        self.stats.reject(reason)
        self.stats.last_error = f'{reason}: {detail}'
        self.get_logger().warning(f'rejected message ({reason}): {detail}',
                                  throttle_duration_sec=2.0)

    destroying = False

    def destroy_node(self):
        self.destroying = True
        return super().destroy_node()

    def guard(self, fn):
        """Wrap a callback: a Rejected input is counted by reason; any other exception is an
        internal error (a bug), counted and logged; neither reaches the executor."""
        nargs = len(inspect.signature(fn).parameters)

        def wrapped(*args):   # (rclpy passes timers a TimerInfo when the callback takes one)
            try:
                fn(*args[:nargs])
            except Rejected as exc:
                self.reject(exc.reason, exc.detail)
            except Exception as exc:   # noqa: BLE001
                if isinstance(exc, InvalidHandle) and self.destroying:
                    return      # a handle destroyed under this callback: shutting down, no bug
                self.stats.internal_errors += 1
                self.stats.last_error = f'{type(exc).__name__}: {exc}'
                self.get_logger().error(f'internal error in {fn.__name__}: '
                                        f'{type(exc).__name__}: {exc}', throttle_duration_sec=2.0)
        wrapped.__name__ = fn.__name__
        return wrapped

    def _on_diagnostics_timer(self) -> None:
        # (half a period early is on time: the timer's phase and that of a publication from
        # publish_diagnostics_when_due differ; a burst of late timer calls publishes once)
        if time.monotonic() >= self._diagnostics_due - 0.5 * self.params['diagnostics_period']:
            self.publish_diagnostics()

    def publish_diagnostics_when_due(self) -> None:
        """/diagnostics, when a period has passed since the last one. A node whose own timer is
        always due (sim_node as fast as possible, or slower than its rate) calls this from it:
        an executor can starve the diagnostics timer behind such a timer."""
        if time.monotonic() >= self._diagnostics_due:
            self.publish_diagnostics()

    def publish_diagnostics(self) -> None:
        self._diagnostics_due = time.monotonic() + self.params['diagnostics_period']
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        waiting = self.waiting_for() if self.robot is not None else None
        extra = self.extra_diagnostics()
        if self.ACCEPTS_PAYLOAD:
            extra['payload'] = self.payload_text()
        stale = self.stale_reason() if self.robot is not None and waiting is None else None
        arr.status = [diagnostic_status(self.get_fully_qualified_name(), self.robot, self.stats,
                                        stale, extra, waiting=waiting, warning=self.warning(),
                                        stale_effect=self.STALE_EFFECT)]
        self.pub_diag.publish(arr)


def other_node_parameters(node_name: str) -> dict[str, str]:
    """{parameter: node} of the rbd_ros nodes other than ``node_name``."""
    import importlib
    out = {}
    for module, cls in (('dynamics', 'DynamicsNode'), ('frames', 'FramesNode'),
                        ('sim', 'SimNode')):
        node = getattr(importlib.import_module(f'rbd_ros.nodes.{module}'), cls)
        if node.NODE_NAME != node_name:
            for name in node.PARAMS:
                out.setdefault(name, node.NODE_NAME)
    return out


def _one_line(exc: Exception) -> str:
    return ' '.join(str(exc).split()) or type(exc).__name__


# ---- executors and the one run sequence ------------------------------------------------------------
def make_executor(context=None):
    """rclpy.experimental.EventsExecutor when available (lower latency), else the
    SingleThreadedExecutor."""
    try:
        from rclpy.experimental import EventsExecutor
        return EventsExecutor(context=context)
    except Exception:   # noqa: BLE001 - older rclpy or a build without it
        from rclpy.executors import SingleThreadedExecutor
        return SingleThreadedExecutor(context=context)


def spin(executor, context=None, duration: float | None = None,
         stop: threading.Event | None = None, on_tick: Callable[[], bool | None] | None = None,
         tick_period: float = 0.5, wake=None) -> None:
    """Spin until ``stop`` is set, the context shuts down, or ``duration`` s have passed;
    call ``on_tick`` every ``tick_period`` s (it returns True to stop).

    Spins in slices of at most 0.2 s: rclpy's EventsExecutor.spin() never returns to Python,
    where a signal handler runs. First, everything allocated so far (rclpy, numba, the model:
    ~130,000 objects that live as long as the process) is moved out of reach of Python's
    cyclic collector, whose full pass over them measured 67 ms: 67 messages late at 1 kHz."""
    import rclpy
    from rclpy.task import Future

    gc.freeze()
    wake = Future() if wake is None else wake     # done: the slice ends at once
    start = time.monotonic()
    next_tick = [start + tick_period]

    def finish():
        if not wake.done():
            wake.set_result(None)

    def check():
        now = time.monotonic()
        if (duration and now - start >= duration) or (stop is not None and stop.is_set()):
            finish()
        elif on_tick is not None and now >= next_tick[0]:
            next_tick[0] += tick_period
            if on_tick():           # True: the caller is done
                finish()

    # Checked from a timer too: under a steady stream of callbacks (a lockstep simulator and
    # its controller answering each other) the executor's slice does not return on time.
    nodes = executor.get_nodes()
    timer = nodes[0].create_timer(min(0.1, tick_period), check) if nodes else None
    try:
        while rclpy.ok(context=context) and not wake.done() and \
                not (stop is not None and stop.is_set()):
            check()
            if wake.done():
                break
            step = 0.2
            if duration:
                step = min(step, start + duration - time.monotonic())
            executor.spin_until_future_complete(wake, timeout_sec=max(step, 0.001))
    finally:
        if timer is not None:
            nodes[0].destroy_timer(timer)


def bound_heap_growth() -> None:
    """Fix glibc's mmap threshold (128 KiB) and its number of arenas (2), before rclpy starts
    its threads. By default the threshold rises to the largest block ever freed (up to 32 MiB):
    after one 400 KB message, every later one is carved from the heap, which fragments, and each
    DDS thread may get its own 64 MiB arena; under a fuzz with huge names and frame_ids that
    was a slow, steady RSS growth (4.7 MB over 50,000 messages; 0.7 MB with these settings).
    No-op off glibc."""
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):   # pragma: no cover - not glibc
        return
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
    for option, value in ((M_MMAP_THRESHOLD, 128 * 1024), (M_TRIM_THRESHOLD, 128 * 1024),
                          (M_ARENA_MAX, 2)):
        mallopt(option, value)


#: s the nodes' teardown in run() may take before the process ends without it
TEARDOWN_LIMIT_S = 15.0


def run(make_nodes: Callable[[], Iterable[Node]], argv: list[str], *, name: str,
        duration: float | None = None, on_tick: Callable[[], bool | None] | None = None,
        tick_period: float = 0.5, restore_signals: bool = False) -> int:
    """init, create the nodes, spin, shut down: every executable (the three nodes, bringup,
    the demo) runs this. Returns the process exit status.

    SIGINT and SIGTERM stop the spin (the first one; later ones, as a terminal and ``ros2
    launch`` both send on Ctrl-C, are ignored, until the process exits unless
    ``restore_signals``), then the nodes are destroyed: no traceback, status 0. A parameter the nodes cannot run with, or ROS arguments rcl cannot parse: one
    line on stderr naming it, status 2."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.signals import SignalHandlerOptions

    from rclpy.task import Future

    stop = threading.Event()
    wake = Future()
    previous = {}

    def on_signal(signum, frame):
        # The handler runs between two callbacks. A timer that is always late (a node
        # that cannot keep its rate) keeps the executor's slice from ever returning to check
        # ``stop``; completing the future it waits on ends that slice.
        stop.set()
        if not wake.done():
            wake.set_result(None)

    bound_heap_growth()
    try:
        rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    except RuntimeError as exc:     # rcl's own argument parsing, e.g. a bad -p rule
        print(f'{name}: invalid ROS arguments: {_one_line(exc)}', file=sys.stderr)
        return 2
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    nodes, executor = [], None
    status = 0
    try:
        nodes = list(make_nodes())
        executor = make_executor()
        for node in nodes:
            executor.add_node(node)
        spin(executor, duration=duration, stop=stop, on_tick=on_tick, tick_period=tick_period,
             wake=wake)
    except ParameterError as exc:
        print(f'{name}: {exc}', file=sys.stderr)
        status = 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        for sig in previous:        # no second signal in the teardown, nor after it: Python's
            signal.signal(sig, signal.SIG_IGN)   # exit takes ~0.2 s more, and a terminal
        # Fast DDS's participant deletion can spin for ever holding the GIL while a discovery
        # callback is in flight (eProsima/Fast-DDS#6513; rbd_ros/ros_cli.py's _teardown):
        # faulthandler's watchdog, which needs no GIL, then prints the threads' stacks and
        # ends the process, status 1, instead of a node that never exits
        watch_teardown(TEARDOWN_LIMIT_S)
        try:
            if executor is not None:             # under ros2 launch sends Ctrl-C twice
                executor.shutdown()
            for node in nodes:
                node.destroy_node()
            rclpy.try_shutdown()
        finally:    # (a teardown that raised instead: nothing left to end the process later)
            faulthandler.cancel_dump_traceback_later()
        if restore_signals:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return status


def node_main(node_cls, args=None, *, executable: str, description: str) -> int:
    """main() of a node executable: ``--help``; ``--urdf PATH`` (sets robot_description_file);
    ROS arguments after ``--ros-args``."""
    from rclpy.parameter import Parameter
    from rclpy.utilities import remove_ros_args

    argv = sys.argv if args is None else [executable, *args]
    parser = argparse.ArgumentParser(
        prog=executable, description=description,
        epilog='ROS arguments go after --ros-args: -p name:=value, --params-file FILE '
               '(every parameter is in the package\'s config/rbd.yaml), -r from:=to. A URDF is '
               'easiest passed with --urdf or -p robot_description_file:=PATH.')
    parser.add_argument('--urdf', metavar='PATH',
                        help='URDF file (sets the robot_description_file parameter)')
    try:
        own_args = remove_ros_args(argv)[1:]
    except RuntimeError as exc:      # rcl's own parsing of the ROS arguments
        print(f'{executable}: invalid ROS arguments: {_one_line(exc)[:300]} (a URDF is best '
              'passed with --urdf PATH or -p robot_description_file:=PATH)', file=sys.stderr)
        return 2
    opts = parser.parse_args(own_args)
    overrides = [Parameter('robot_description_file', value=opts.urdf)] if opts.urdf else None
    return run(lambda: [node_cls(parameter_overrides=overrides)], argv,
               name=executable)
