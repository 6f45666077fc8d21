"""dynamics_node (node ``rbd_dynamics``): gravity, inverse and forward dynamics of the robot in
``robot_description``, by joint name, stamped with the input's stamp.

In: ``joint_states`` (sensor_msgs/JointState), ``~/reference`` (trajectory_msgs/JointTrajectory:
a whole trajectory, sampled in time as JointTrajectoryController samples it),
``~/trajectory_in`` (JointTrajectory to annotate), ``~/base_state`` (nav_msgs/Odometry, only
with ``floating_base: true``), ``robot_description``.
Out, per joint_states: ``~/gravity_torques`` (JointState effort), ``~/forward_dynamics``
(JointTrajectory, one point), and while a reference runs ``~/inverse_dynamics`` (the sampled
reference and its torques) and ``~/tracking_error``; ``~/effort_commands`` (Float64MultiArray in
``command_joints`` order) per ``command_source``: a control law of rbd_ros.control.laws;
``~/trajectory_out`` (the annotated trajectory: every point's effort = inverse dynamics);
at ``linearization_rate`` (not per message) ``~/linearization/A``, ``~/linearization/B``
(Float64MultiArray) and ``~/linearization/state`` (JointState): the discrete-time linearisation
about the latest joint state (rbd_ros.control.linearization); ``/diagnostics``.
Gravity compensation is published in :meth:`DynamicsNode.on_joint_states`.
A robot whose description closes kinematic loops (``<constraint>``) is served by its actuated
joints (``actuated_joints``): joint_states need carry only them (and the joints outside the
loops); the loops' passive joints follow, closed per message (rbd_ros/control/closed_loops.py),
and every per-joint output is for the actuated joints, from constrained dynamics. A joint_states
that cannot close is refused (rejected_loops_open), never published from.
Every per-joint_states output is written into bytes serialized once per model (ros/wire.py):
no Python message is built per message. Parameters: config/rbd.yaml; behaviour: docs/ros.md.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, MultiArrayDimension
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import rbd_ros.dynamics as rbd
from rbd_ros.control import (LAWS, Reference, Trajectory, control_torques,
                             joint_friction_compensation, tracking_error)
from rbd_ros.control.closed_loops import LoopClosure
from rbd_ros.control.linearization import semi_implicit_euler_linearization
from rbd_ros.control.observer import MomentumObserver, WrenchEstimator
from rbd_ros.ros.joint_states import JointStateMerger, Rejected, all_finite, stamp_ns
from rbd_ros.ros.messages import joint_state, odometry_to_base
from rbd_ros.ros.node import (ACTUATED_JOINTS, COMMON_PARAMS, JOINT_STATES_QOS, MODEL_PARAMS,
                             RbdNode, node_main)
from rbd_ros.ros.params import (ParamSpec, finite_vector, non_negative, one_of,
                                per_command_joint, positive, unique_names)
from rbd_ros.ros.qos import COMMAND_QOS, LATCHED_QOS, OUTPUT_QOS, joint_states_qos
from rbd_ros.ros.robot import Robot
from rbd_ros.ros.wire import (Output, SerializedMessage, float64_array_out, joint_state_out,
                             trajectory_point_out, wrench_out)

PARAMS = {
    **COMMON_PARAMS,
    **MODEL_PARAMS,
    'joint_states_qos': JOINT_STATES_QOS,
    'gravity': ParamSpec('double_array', [0.0, 0.0, -9.81], 'gravity in the world frame (m/s^2)',
                         finite_vector(3)),
    'floating_base': ParamSpec('bool', False, 'add a floating base; its state comes from '
                               '~/base_state'),
    'input_timeout': ParamSpec('double', 0.5, 'seconds without valid joint_states (or '
                               'base_state) after which input is stale: torque commands stop; '
                               '0 disables', non_negative),
    'command_source': ParamSpec('string', 'none', 'what ~/effort_commands carries, per '
                                'joint_states: none, gravity, inverse_dynamics, pd_feedforward, '
                                'computed_torque or gravity_pd', one_of('none', *LAWS),
                                dynamic=True),
    'command_joints': ParamSpec('string_array', [], 'joint order of ~/effort_commands, kp and '
                                'kd; empty: every single-DoF joint in model order (closed '
                                'loops: the actuated joints)', unique_names),
    'actuated_joints': ACTUATED_JOINTS,
    'kp': ParamSpec('double_array', [100.0], 'position gains, one value or one per command '
                    'joint: N m/rad (pd_feedforward, gravity_pd) or 1/s^2 (computed_torque)',
                    finite_vector(minimum=0.0), dynamic=True),
    'kd': ParamSpec('double_array', [20.0], 'velocity gains, one value or one per command '
                    'joint: N m s/rad or 1/s', finite_vector(minimum=0.0), dynamic=True),
    'compensate_friction': ParamSpec('bool', True, 'the feedforward laws and ~/trajectory_out '
                                     'also cancel the URDF <dynamics> damping and friction at '
                                     'the reference velocity', dynamic=True),
    'saturate_efforts': ParamSpec('bool', True, 'clip effort commands at the URDF effort '
                                  'limits (counted: saturated_commands)'),
    'observer_gain': ParamSpec('double_array', [50.0], 'external-torque observer gain K (1/s): '
                               'one value, or one per joint (0 turns it off); needs joint_states '
                               'with effort', finite_vector(minimum=0.0), dynamic=True),
    'external_wrench_frame': ParamSpec('string', '', 'a link: ~/external_wrench_estimate is the '
                                       'wrench on it that explains the external torques; '
                                       'empty: none'),
    'collision_threshold': ParamSpec('double_array', [], 'N m (N): an external torque beyond it '
                                     'is a collision (~/collision, /diagnostics); one value or '
                                     'one per joint; []: no detection (calibrate: a few times '
                                     'external_torque_peak of a contact-free run)',
                                     finite_vector(minimum=0.0), dynamic=True),
    'on_collision': ParamSpec('string', 'none', 'what the effort commands do on a collision, '
                              'until ~/reset_collision: none, hold (the law holds the measured '
                              'position) or zero (zero torque)', one_of('none', 'hold', 'zero'),
                              dynamic=True),
    'linearization_rate': ParamSpec('double', 0.0, 'Hz: publish ~/linearization/A, B and state, '
                                    'the discrete-time linearisation x+ = A x + B u about the '
                                    'latest joint state (on this node\'s clock); 0: off',
                                    non_negative),
    'linearization_dt': ParamSpec('double', 0.001, 's: the time step of the linearised '
                                  'semi-implicit Euler step', positive),
}


#: s between two joint_states beyond which the observer starts again (its integral would span
#: a gap in the data)
OBSERVER_GAP = 0.5


@dataclasses.dataclass(frozen=True)
class Runtime:
    """Everything a callback needs, swapped as one object when the model changes."""

    robot: Robot
    merger: JointStateMerger
    command_names: tuple[str, ...]
    command_slots: np.ndarray     # positions in robot.joint_names of command_joints
    loops: LoopClosure | None     # a robot with closed loops: how they close (else None)
    out_names: tuple[str, ...]    # the joints of the per-joint outputs: every JointState joint,
    out_slots: np.ndarray         # or with closed loops the actuated ones; their slots
    # the per-joint_states outputs, serialized once with the joint names (ros/wire.py); per
    # message DynamicsNode._emit fills in the stamp and the arrays, in this order:
    gravity_out: SerializedMessage   # JointState: position, effort
    fd_out: SerializedMessage        # JointTrajectory, one point: positions, velocities,
    #                                  accelerations, effort
    id_out: SerializedMessage        # JointState: position, velocity, effort (reference, ID)
    error_out: SerializedMessage     # JointState: position, velocity (e, e_dot)
    command_out: SerializedMessage   # Float64MultiArray: data (command_joints order; unstamped)
    external_out: SerializedMessage  # JointState: effort (the observer's r)
    wrench_out: SerializedMessage | None   # WrenchStamped: [f; tau] (external_wrench_frame)
    reference: Reference             # per JointState joint: held positions and trajectories
    observer: MomentumObserver       # the external torques (the model's velocities)
    wrench: WrenchEstimator | None   # the wrench on external_wrench_frame from them


@dataclasses.dataclass(frozen=True)
class BaseState:
    """The floating base from ~/base_state."""

    q: np.ndarray          # [x, y, z, qx, qy, qz, qw], world frame
    v: np.ndarray          # [v; w], base frame
    received: float        # time.monotonic() at receipt
    stamp_ns: int


class DynamicsNode(RbdNode):
    NODE_NAME = 'rbd_dynamics'
    PARAMS = PARAMS
    ACCEPTS_PAYLOAD = True
    CLOSED_LOOPS_REFUSAL = None      # served: the loops closed per joint_states

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        p = self.params
        self.base: BaseState | None = None
        self._was_stale = False         # "input stale" logged, "resumed" not yet
        self.saturated = 0               # effort commands clipped at a limit
        self.references = 0              # trajectories taken on ~/reference
        # raw: joint_states arrive as bytes, read by the merger (no Python message)
        self.create_subscription(JointState, 'joint_states', self.guard(self.on_joint_states),
                                 joint_states_qos(p['joint_states_qos']), raw=True)
        # every other topic as bytes too, walked with bounds checks before deserializing
        self.subscribe_checked(JointTrajectory, '~/reference', self.on_reference, COMMAND_QOS,
                               counted=False)
        self.subscribe_checked(JointTrajectory, '~/trajectory_in', self.on_trajectory_in,
                               COMMAND_QOS, counted=False)
        self._said_waiting = False
        if p['floating_base']:
            sub = self.subscribe_checked(Odometry, '~/base_state', self.on_base_state,
                                         joint_states_qos(p['joint_states_qos']), counted=False)
            self._base_topic = sub.topic_name
        # the per-joint_states outputs (ros/wire.py): bytes out, and nothing done for an output
        # nobody subscribes to
        self.pub_gravity = Output(self, JointState, '~/gravity_torques', OUTPUT_QOS)
        self.pub_id = Output(self, JointState, '~/inverse_dynamics', OUTPUT_QOS)
        self.pub_fd = Output(self, JointTrajectory, '~/forward_dynamics', OUTPUT_QOS)
        self.pub_cmd = Output(self, Float64MultiArray, '~/effort_commands', OUTPUT_QOS)
        self.pub_error = Output(self, JointState, '~/tracking_error', OUTPUT_QOS)
        self.pub_external = Output(self, JointState, '~/external_torques', OUTPUT_QOS)
        self.pub_wrench = Output(self, WrenchStamped, '~/external_wrench_estimate',
                                 OUTPUT_QOS) if p['external_wrench_frame'] else None
        self.pub_trajectory = self.create_publisher(JointTrajectory, '~/trajectory_out',
                                                    OUTPUT_QOS)
        self.pub_collision = self.create_publisher(Bool, '~/collision', LATCHED_QOS)
        self.create_service(Trigger, '~/reset_collision', self.on_reset_collision)
        self.collision: list[str] = []       # the joints over threshold when it was detected
        self.collisions = 0
        self.collision_stamp = None          # the last collision's joint state stamp (ns)
        self._observed = None                # (observer, stamp in ns) of its last sample
        self.linearizations = 0
        if p['linearization_rate'] > 0.0:    # a timer of its own: nothing per joint_states
            self.pub_lin_a = self.create_publisher(Float64MultiArray, '~/linearization/A',
                                                   OUTPUT_QOS)
            self.pub_lin_b = self.create_publisher(Float64MultiArray, '~/linearization/B',
                                                   OUTPUT_QOS)
            self.pub_lin_state = self.create_publisher(JointState, '~/linearization/state',
                                                       OUTPUT_QOS)
            self.create_timer(1.0 / p['linearization_rate'], self.guard(self.linearize))
        self.start()
        self.pub_collision.publish(Bool(data=False))

    # -- model ---------------------------------------------------------------------------------
    def prepare(self, robot: Robot) -> Runtime:
        loops = None
        if robot.model.constraint_names:
            loops = LoopClosure(robot.model, robot.joint_names, self.params['actuated_joints'])
            if self.params['linearization_rate'] > 0.0:
                raise ValueError('linearization_rate: the linearisation of a robot with closed '
                                 'loops is not served yet; set it to 0')
        names, slots = robot.joint_slots(self.params['command_joints']
                                         or (loops.actuated if loops is not None else ()))
        if loops is not None and not set(names) <= set(loops.actuated):
            raise ValueError(f'command_joints names {[n for n in names if n not in loops.actuated]}'
                             f', not actuated joints of {robot.model.name!r}, whose closed loops '
                             f'give torques only to {", ".join(loops.actuated)} (actuated_joints)')
        frame = self.params['external_wrench_frame']
        if frame and frame not in robot.model.frame_index:
            raise ValueError(f'external_wrench_frame names {frame!r}, not a link of '
                             f'{robot.model.name!r}')
        for name in ('observer_gain', 'collision_threshold'):
            reason = self._per_joint(name, self.params[name], len(robot.joint_names))
            if reason:
                raise ValueError(reason)
        for gain in ('kp', 'kd'):
            self._check_gains(gain, self.params[gain], len(names))
        old = self.runtime
        joints = robot.joint_names if loops is None else loops.actuated
        return Runtime(
            robot=robot, merger=JointStateMerger(robot, old.merger if old is not None else None,
                                                 None if loops is None else loops.required),
            command_names=names, command_slots=slots, loops=loops, out_names=joints,
            out_slots=(np.arange(len(joints)) if loops is None else loops.actuated_slots),
            gravity_out=joint_state_out(joints, 'position', 'effort'),
            fd_out=trajectory_point_out(joints, 'positions', 'velocities', 'accelerations',
                                        'effort'),
            id_out=joint_state_out(joints, 'position', 'velocity', 'effort'),
            error_out=joint_state_out(joints, 'position', 'velocity'),
            command_out=float64_array_out(len(names)),
            external_out=joint_state_out(robot.joint_names, 'effort'),
            wrench_out=wrench_out(frame) if frame else None,
            reference=Reference(len(joints)),
            observer=MomentumObserver(robot.model, self._observer_gain(robot)),
            wrench=WrenchEstimator(robot.model, frame, robot.v_index) if frame else None)

    def _observer_gain(self, robot: Robot) -> np.ndarray:
        """K per velocity: the parameter per JointState joint; a floating base's six rows take
        the first value. Zero (off) for a robot with closed loops: the observer's momentum is
        the tree's."""
        gain = np.asarray(self.params['observer_gain'], dtype=float)
        if robot.model.constraint_names:
            return np.zeros(robot.nv)
        K = np.full(robot.nv, gain[0] if len(gain) else 0.0)
        if len(gain) == len(robot.joint_names):
            K[robot.v_index] = gain
        return K

    def parameter_changed(self, name, value) -> None:
        rt = self.runtime
        if name == 'observer_gain' and rt is not None:    # (it starts again from this sample)
            rt.observer.set_gain(self._observer_gain(rt.robot))

    def carry_state(self, old: Runtime, new: Runtime) -> Runtime:
        """A payload changed the model, not the robot: the reference runs on, and the peak
        of the external torques stays."""
        if old.observer.peaked:
            new.observer.peak[:] = old.observer.peak
            new.observer.peaked = True
        if old.loops is not None and new.loops is not None:
            new.loops.last = old.loops.last        # (the warm start)
        return dataclasses.replace(new, reference=old.reference)

    @property
    def peak(self) -> np.ndarray | None:
        """The largest |external torque| per joint since the model, or ~/reset_collision (None
        before any)."""
        rt = self.runtime
        if rt is None or not rt.observer.peaked:
            return None
        return rt.observer.peak if rt.robot.direct_state else rt.observer.peak[rt.robot.v_index]

    @staticmethod
    def _check_gains(name, values, count):
        if len(values) not in (1, count):
            raise ValueError(f'{name} has {len(values)} values for the {count} command_joints '
                             '(one value for all, or one per command joint)')

    @staticmethod
    def _per_joint(name, value, joints):
        allowed = (0, 1, joints) if name == 'collision_threshold' else (1, joints)
        if len(value) not in allowed:
            return (f'{name} has {len(value)} values for {joints} joints (one value for all, '
                    'or one per joint)')
        return None

    def check_parameter(self, name, value):
        if name in ('observer_gain', 'collision_threshold') and self.runtime is not None:
            return self._per_joint(name, value, len(self.runtime.robot.joint_names))
        if name in ('kp', 'kd') and self.runtime is not None:
            try:
                self._check_gains(name, value, len(self.runtime.command_names))
            except ValueError as exc:
                return str(exc)
        return None

    def _seconds(self, sec, nanosec) -> float:
        """A stamp in s; a zero stamp (unstamped joint_states, a trajectory to start on
        receipt) is now, on this node's clock (sim time with use_sim_time)."""
        t = sec + 1e-9 * nanosec
        return self.get_clock().now().nanoseconds * 1e-9 if t == 0.0 else t

    def _gains(self, rt: Runtime, name):
        """Per JointState joint (0 for the joints that are not commanded)."""
        return per_command_joint(self.params[name], rt.command_slots, len(rt.robot.joint_names))

    # -- state ---------------------------------------------------------------------------------
    def stale_reason(self) -> str | None:
        timeout = self.params['input_timeout']
        reason = self.joint_states_stale(timeout)
        if reason is None and timeout > 0 and self.params['floating_base']:
            if self.base is None:
                return f'no base state yet on {self._base_topic}'
            age = time.monotonic() - self.base.received
            if age > timeout:
                return (f'no base state on {self._base_topic} for {age:.1f} s (input_timeout '
                        f'{timeout:g} s)')
        return reason

    @property
    def STALE_EFFECT(self) -> str:      # noqa: N802 (the base class's class attribute)
        return ('~/effort_commands stopped' if self.params['command_source'] != 'none'
                else '')

    def waiting_for(self) -> str | None:
        if self.params['floating_base'] and self.base is None:
            return f'the floating base\'s state on {self._base_topic} (nav_msgs/Odometry)'
        return None

    def runtime_changed(self, runtime) -> None:
        if self.params['floating_base'] and self.base is None and not self._said_waiting:
            self._said_waiting = True
            self.get_logger().info(f'waiting for {self.waiting_for()}: outputs start with it')

    def _base_state(self):
        """(q[:7], v[:6]) of the base, or (None, None) for a fixed base. Raises Rejected when a
        floating base has no state yet."""
        if not self.params['floating_base']:
            return None, None
        if self.base is None:
            raise Rejected('no_base_state', 'waiting for the first ~/base_state')
        return self.base.q, self.base.v

    def _emit(self, pub: Output, out: SerializedMessage, sec, nanosec, arrays) -> bool:
        """A per-joint_states output through the fast path: ``arrays`` written into ``out``'s
        bytes (the fields it was made with, in order), stamped (sec, nanosec), published when
        anybody subscribes (nothing done otherwise); False (counted, logged, not published) when
        a value is NaN or inf."""
        if not pub.readers:
            return True
        data = out.fill_finite(sec, nanosec, *arrays)
        if data is None:                   # never NaN or inf
            return self._non_finite(pub)
        pub.publish(data)
        self.stats.published += 1
        return True

    def _publish(self, pub, msg, *arrays) -> bool:
        """A Python message (the outputs that are not per joint_states: ~/trajectory_out);
        not published when one of ``arrays`` holds NaN or inf."""
        if not all_finite(*arrays):
            return self._non_finite(pub)
        pub.publish(msg)
        self.stats.published += 1
        return True

    def _non_finite(self, pub) -> bool:
        self.stats.non_finite_outputs += 1
        self.get_logger().error(f'non-finite result not published on {pub.topic_name}',
                                throttle_duration_sec=2.0)
        return False

    def _law(self) -> str:
        """The command law: command_source, but while a collision holds the robot, a law with
        feedback (gravity and inverse_dynamics have none: gravity_pd holds instead)."""
        source = self.params['command_source']
        if (self.collision and self.params['on_collision'] == 'hold'
                and source in ('gravity', 'inverse_dynamics')):
            return 'gravity_pd'
        return source

    def _command(self, rt: Runtime, joint_tau: np.ndarray) -> None:
        """~/effort_commands: the torques of the command joints, saturated, unless input is
        stale."""
        if self.is_stale():
            return
        cmd = joint_tau[rt.command_slots]
        if self.collision and self.params['on_collision'] == 'zero':
            cmd = np.zeros_like(cmd)
        if self.params['saturate_efforts']:
            limit = rt.robot.effort_limit[rt.command_slots]
            clipped = np.clip(cmd, -limit, limit)
            self.saturated += int(np.count_nonzero(clipped != cmd))
            cmd = clipped
        self._emit(self.pub_cmd, rt.command_out, 0, 0, (cmd,))

    def _track(self, rt: Runtime, sec, nanosec, q, base_v) -> None:
        """The reference sampled at this joint_states' stamp, the tracking outputs, and the
        control law's effort commands."""
        robot, m, ref = rt.robot, rt.merger, rt.reference
        if not ref.initialized:
            ref.start_hold(m.position)        # JTC on activation: hold where the robot is
        t = self._seconds(sec, nanosec)
        q_ref, v_ref, a_ref = ref.sample(t)
        v = robot.full_v(m.velocity, base_v)
        loops, out = rt.loops, rt.out_slots     # (closed loops: the actuated joints)
        if ref.active and self.pub_id.readers:    # a reference runs: what it asks, ...
            if loops is None:
                tau_ref = control_torques('inverse_dynamics', robot.model, q, v, robot.q_index,
                                          robot.v_index, q_ref, v_ref, a_ref, 0.0, 0.0,
                                          robot.continuous)
            else:
                tau_ref = self._closing(loops.reference_torques, robot.model, q, q_ref[out],
                                        v_ref[out], a_ref[out])
            self._emit(self.pub_id, rt.id_out, sec, nanosec, (q_ref[out], v_ref[out], tau_ref))
        if ref.active and self.pub_error.readers:    # ... and how far
            e = tracking_error(q_ref[out], m.position[out], robot.continuous[out])
            e_dot = v_ref[out] - m.velocity[out]
            self._emit(self.pub_error, rt.error_out, sec, nanosec, (e, e_dot))
        source = self._law()
        if source in ('none', 'gravity'):
            return
        kp, kd = self._gains(rt, 'kp'), self._gains(rt, 'kd')
        if loops is None:
            tau = self.stats.timed(control_torques, source, robot.model, q, v, robot.q_index,
                                   robot.v_index, q_ref, v_ref, a_ref, kp, kd, robot.continuous,
                                   compensate_friction=self.params['compensate_friction'])
        else:      # the laws act on the actuated joints; their torques on the closed system
            tau = np.zeros(len(robot.joint_names))
            tau[out] = self._closing(self.stats.timed, loops.law_torques, source, robot.model, q,
                                     v, q_ref[out], v_ref[out], a_ref[out], kp[out], kd[out],
                                     robot.continuous[out],
                                     compensate_friction=self.params['compensate_friction'])
        self._command(rt, tau)

    @staticmethod
    def _closing(fn, *args, **kwargs):
        """``fn`` on a robot with closed loops: a configuration they cannot close (or a motion
        the actuated joints cannot produce) is a refused input (rejected_loops_open), never a
        torque."""
        try:
            return fn(*args, **kwargs)
        except ValueError as exc:
            raise Rejected('loops_open', str(exc)) from None

    # -- callbacks -----------------------------------------------------------------------------
    def on_joint_states(self, data: bytes) -> None:
        """One serialized sensor_msgs/JointState. The hot path (1 kHz and more): no Python
        message in or out (the input is read from its bytes, every output is written into
        bytes serialized once per model: _emit), the name -> slot map is cached by the merger,
        and the gravity torques are published before anything else is computed."""
        stats = self.stats
        stats.received += 1
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'joint_states before any robot_description')
        m = rt.merger
        sec, nanosec, unknown, has_effort = m.update_bytes(data)
        if unknown:
            stats.unknown_names(unknown)
        stats.last_input_time = time.monotonic()
        if not m.complete:
            return
        if not self._said_input:
            self.input_arrived()
        robot = rt.robot
        if robot.direct_state:   # fixed base, every coordinate a JointState joint: q is position
            base_q = base_v = None
            q = m.position
        else:
            if self.params['floating_base'] and (self.base is None or self.is_stale()):
                return   # outputs wait for a (fresh) base state
            base_q, base_v = self._base_state()
            q = robot.full_q(m.position, base_q)
        loops = rt.loops
        if loops is not None:     # the passive joints follow the held ones: the loops closed
            q = self._closing(stats.timed, loops.close, robot.model, q)
            m.position[:] = q[robot.q_index]

        # gravity compensation: g(q) for every joint_states message
        if loops is None:
            g = g_out = stats.timed(rbd.gravity_torques, robot.model, q)
            if not robot.direct_state:
                g = g_out = g[robot.v_index]
        else:                     # at the motors: constrained inverse dynamics, v = a = 0
            g_out = self._closing(stats.timed, loops.gravity, robot.model, q)
            g = np.zeros(len(robot.joint_names))
            g[rt.out_slots] = g_out
        source = self._law()
        if self._emit(self.pub_gravity, rt.gravity_out, sec, nanosec,
                      (m.position[rt.out_slots] if loops is not None else m.position, g_out)) \
                and source == 'gravity':
            self._command(rt, g)
        if source not in ('none', 'gravity') or rt.reference.active:
            self._track(rt, sec, nanosec, q, base_v)
        if loops is not None:
            self._closed_forward_dynamics(rt, sec, nanosec, q, base_v, has_effort)
            return

        if has_effort and m.effort_complete and (self.pub_fd.readers or rt.observer.enabled):
            if robot.direct_state:
                v, tau = m.velocity, m.effort
            else:
                v = robot.full_v(m.velocity, base_v)
                tau = robot.full_v(m.effort)   # an unactuated floating base gets no torque
            # with the observer on, forward dynamics comes from the M(q) and n(q, v) it
            # computes anyway, in the same compiled call (control/observer.py)
            qdd, wanted = None, self.pub_fd.readers > 0
            if rt.observer.enabled:
                r, dt = self._observe(rt, sec, nanosec, q, v, tau, wanted)
                if wanted:
                    qdd = rt.observer.qdd
            elif wanted:
                qdd = stats.timed(rbd.forward_dynamics, robot.model, q, v, tau)
            if qdd is not None:
                if not robot.direct_state:
                    qdd = qdd[robot.v_index]
                self._emit(self.pub_fd, rt.fd_out, sec, nanosec,
                           (m.position, m.velocity, qdd, m.effort))
            if rt.observer.enabled:
                self._external(rt, sec, nanosec, q, r, dt)

    def _closed_forward_dynamics(self, rt: Runtime, sec, nanosec, q, base_v, has_effort):
        """~/forward_dynamics of a robot with closed loops: the actuated joints' accelerations
        under their measured efforts (the passive joints get none), from constrained forward
        dynamics at the velocities the loops allow."""
        m, robot, loops, out = rt.merger, rt.robot, rt.loops, rt.out_slots
        if not (has_effort and self.pub_fd.readers and m.has_effort[out].all()):
            return
        v = loops.velocity(robot.model, q, robot.full_v(m.velocity, base_v))
        tau = np.zeros(robot.nv)
        tau[loops.actuated_v] = m.effort[out]
        qdd = self.stats.timed(rbd.constrained_forward_dynamics, robot.model, q, v, tau)
        self._emit(self.pub_fd, rt.fd_out, sec, nanosec,
                   (m.position[out], v[loops.actuated_v], qdd[loops.actuated_v], m.effort[out]))

    def _observe(self, rt: Runtime, sec, nanosec, q, v, tau, accelerations: bool):
        """The external torques r (control/observer.py) after this sample, and the seconds
        since the previous one (None: the observer started again); with ``accelerations``,
        forward dynamics into the observer's ``qdd``."""
        observer = rt.observer
        t = sec * 1_000_000_000 + nanosec
        last = self._observed
        dt = None
        if last is not None and last[0] is observer:
            dt = (t - last[1]) * 1e-9
            if not 0.0 < dt <= OBSERVER_GAP:     # (a gap or a clock reset: start again)
                dt = None
        r = self.stats.timed(observer.update, q, v, tau, dt, accelerations)
        self._observed = (observer, t)
        return r, dt

    def _external(self, rt: Runtime, sec, nanosec, q, r, dt) -> None:
        """The observer's r published (and the wrench that explains it); a collision when
        one passes its threshold."""
        robot = rt.robot
        joints = r if robot.direct_state else r[robot.v_index]
        self._emit(self.pub_external, rt.external_out, sec, nanosec, (joints,))
        if rt.wrench_out is not None and self.pub_wrench.readers:
            self._emit(self.pub_wrench, rt.wrench_out, sec, nanosec, (rt.wrench.estimate(q, r),))
        threshold = self.params['collision_threshold']
        if threshold and dt is not None and not self.collision:
            size = np.abs(joints)
            over = size > np.broadcast_to(np.asarray(threshold, dtype=float), size.shape)
            if np.any(over):
                self._collide(rt, over, joints, sec * 1_000_000_000 + nanosec)

    def _collide(self, rt: Runtime, over, joints, stamp) -> None:
        robot = rt.robot
        self.collision = [robot.joint_names[k] for k in np.nonzero(over)[0]]
        self.collisions += 1
        self.collision_stamp = stamp        # (ns: the joint state that passed the threshold)
        self.pub_collision.publish(Bool(data=True))
        what = ', '.join(f'{robot.joint_names[k]} {joints[k]:+.3g}'
                         for k in np.nonzero(over)[0])
        action = self.params['on_collision']
        self.get_logger().warning(
            f'collision: external torque over collision_threshold on {what}; '
            + {'none': 'commands go on', 'hold': 'holding the measured position',
               'zero': 'zero torque commands'}[action] + ' until ~/reset_collision')
        if action == 'hold':
            rt.reference.active = []
            rt.reference.start_hold(rt.merger.position)

    def on_reset_collision(self, request, response):
        was = self.collision
        self.collision = []
        if self.runtime is not None:
            self.runtime.observer.reset_peak()
        self.pub_collision.publish(Bool(data=False))
        response.success = True
        response.message = (f'collision on {", ".join(was)} cleared' if was
                            else 'no collision was active')
        if was:
            self.get_logger().info(response.message)
        return response

    def linearize(self) -> None:
        """The discrete-time linearisation about the latest complete joint state (the base's
        from ~/base_state), at every tick while input is fresh (a controller that starts late
        gets one without waiting for the robot to move): ~/linearization/state first (the
        state, its stamp, and effort = the efforts u0 it was taken at: the measured ones when
        joint_states carry every effort, else g(q), the torques that hold q), then A and B."""
        rt = self.runtime
        if rt is None or not rt.merger.complete or self.is_stale():
            return
        m, robot = rt.merger, rt.robot
        base_q, base_v = self._base_state()
        q, v = robot.full_q(m.position, base_q), robot.full_v(m.velocity, base_v)
        if m.effort_complete:
            u0 = m.effort.copy()
        else:
            u0 = rbd.gravity_torques(robot.model, q)[robot.v_index]
        try:
            A, B = self.stats.timed(semi_implicit_euler_linearization, robot.model, q, v, u0,
                                    self.params['linearization_dt'], robot.v_index)
        except FloatingPointError as exc:
            raise Rejected('singular_mass_matrix', f'no linearisation: {exc}') from None
        if not all_finite(A, B, u0):                # never publish NaN or inf
            self.stats.non_finite_outputs += 1
            self.get_logger().error('non-finite linearisation not published',
                                    throttle_duration_sec=2.0)
            return
        sec, nanosec = divmod(m.last_stamp_ns, 1_000_000_000)
        self._publish(self.pub_lin_state, joint_state(Time(sec=sec, nanosec=nanosec),
                                                      robot.joint_names, m.position,
                                                      m.velocity, u0))
        self._publish(self.pub_lin_a, matrix_message(A, 'x+ (dq, dv)', 'x (dq, dv)'))
        self._publish(self.pub_lin_b, matrix_message(B, 'x+ (dq, dv)', 'u (effort)'))
        self.linearizations += 1

    def _trajectory(self, rt: Runtime, msg: JointTrajectory):
        """(slots, times from start, positions, velocities, accelerations) of a valid
        JointTrajectory; Rejected (the active reference kept) otherwise."""
        robot = rt.robot
        n = len(msg.joint_names)
        if not msg.points:
            raise Rejected('empty_reference', 'JointTrajectory without points')
        if len(set(msg.joint_names)) != n:
            raise Rejected('duplicate_names', 'a joint name appears twice in the trajectory')
        unknown = [name for name in msg.joint_names if name not in robot.slot]
        if unknown:
            raise Rejected('unknown_joints', f'the trajectory names {unknown}, not single-DoF '
                           f'joints of {robot.model.name!r}')
        if rt.loops is not None and (passive := [n for n in msg.joint_names
                                                 if n not in rt.loops.actuated]):
            raise Rejected('passive_joints', f'the trajectory names {passive}, which the closed '
                           f'loops move: a reference is for the actuated joints '
                           f'({", ".join(rt.loops.actuated)})')
        tfs, pos, vel, acc = [], [], [], []
        for k, pt in enumerate(msg.points):
            if len(pt.positions) != n:
                raise Rejected('length_mismatch', f'point {k}: {n} joint names but '
                               f'{len(pt.positions)} positions')
            for field in ('velocities', 'accelerations'):
                if len(getattr(pt, field)) not in (0, n):
                    raise Rejected('length_mismatch', f'point {k}: {n} joint names but '
                                   f'{len(getattr(pt, field))} {field}')
            if len(pt.accelerations) and not len(pt.velocities):
                raise Rejected('length_mismatch', f'point {k}: accelerations without velocities')
            tfs.append(pt.time_from_start.sec + 1e-9 * pt.time_from_start.nanosec)
            pos.append(pt.positions)
            vel.append(list(pt.velocities) or None)
            acc.append(list(pt.accelerations) or None)
        tfs = np.array(tfs)
        if np.any(np.diff(tfs) <= 0) or tfs[0] < 0:
            raise Rejected('time_not_increasing', 'time_from_start must increase strictly')
        if not all_finite(tfs, np.asarray(pos, dtype=float),
                          *[np.asarray(x, dtype=float) for x in vel + acc if x is not None]):
            raise Rejected('non_finite', 'NaN or inf in the trajectory')
        slots = np.array([robot.slot[name] for name in msg.joint_names], dtype=int)
        return slots, tfs, np.asarray(pos, dtype=float), vel, acc

    def on_reference(self, msg: JointTrajectory) -> None:
        """A whole trajectory, JTC's semantics: it starts at header.stamp (zero: now, on this
        node's clock), its points at time_from_start; it replaces the reference of the joints
        it names, from the state measured now."""
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'reference before any robot_description')
        slots, tfs, pos, vel, acc = self._trajectory(rt, msg)
        if self.collision and self.params['on_collision'] == 'hold':
            raise Rejected('collision', 'holding after a collision: call ~/reset_collision first')
        m = rt.merger
        if not m.complete:
            raise Rejected('no_state', 'a reference before every joint position is known')
        start = self._seconds(msg.header.stamp.sec, msg.header.stamp.nanosec)
        if not rt.reference.initialized:
            rt.reference.start_hold(m.position)
        trajectory = Trajectory.from_points(start, tfs, pos, vel, acc,
                                            measured_q=m.position[slots],
                                            measured_v=m.velocity[slots],
                                            continuous=rt.robot.continuous[slots])
        rt.reference.replace(trajectory, slots)
        self.references += 1

    def on_trajectory_in(self, msg: JointTrajectory) -> None:
        """The same trajectory out, each point's effort = ID(q, v, a) of that point, missing
        velocities and accelerations filled from the splines the reference would sample:
        feedforward for JointTrajectoryController on effort interfaces."""
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'trajectory before any robot_description')
        slots, tfs, pos, vel, acc = self._trajectory(rt, msg)
        robot = rt.robot
        traj = Trajectory.from_points(0.0, tfs, pos, vel, acc)
        offset = 1 if tfs[0] > 0 else 0        # (a start knot before the first point)
        qj = np.where(rt.merger.has_position, rt.merger.position, 0.0)
        base_q, base_v = self._base_state() if self.params['floating_base'] else (None, None)
        out = JointTrajectory(header=msg.header, joint_names=list(msg.joint_names))
        efforts = []
        for k, pt in enumerate(msg.points):
            q_k, v_k, a_k = traj.sample_at_knot(k + offset)
            v_k = np.asarray(vel[k]) if vel[k] is not None else v_k
            a_k = np.asarray(acc[k]) if acc[k] is not None else a_k
            q_full, v_full, a_full = qj.copy(), np.zeros(len(qj)), np.zeros(len(qj))
            q_full[slots], v_full[slots], a_full[slots] = q_k, v_k, a_k
            if rt.loops is None:
                tau = rbd.inverse_dynamics(robot.model, robot.full_q(q_full, base_q),
                                           robot.full_v(v_full, base_v),
                                           robot.full_v(a_full))[robot.v_index][slots]
            else:       # the point's motors move the closed system
                out = rt.out_slots
                joint_tau = np.zeros(len(qj))
                start = rt.loops.last if rt.loops.last is not None else robot.full_q(qj, base_q)
                joint_tau[out] = self._closing(rt.loops.reference_torques, robot.model, start,
                                               q_full[out], v_full[out], a_full[out])
                tau = joint_tau[slots]
            if self.params['compensate_friction']:
                tau = tau + joint_friction_compensation(robot.model, v_k,
                                                        robot.v_index[slots])
            efforts.append(tau)
            out.points.append(JointTrajectoryPoint(
                positions=list(pt.positions), velocities=v_k.tolist(), accelerations=a_k.tolist(),
                effort=tau.tolist(), time_from_start=pt.time_from_start))
        self._publish(self.pub_trajectory, out, *efforts)

    def on_base_state(self, msg: Odometry) -> None:
        q, v = odometry_to_base(msg)
        t = stamp_ns(msg.header.stamp)
        if self.base is not None and t < self.base.stamp_ns:
            raise Rejected('time_backwards', 'base_state stamp older than the previous one')
        first = self.base is None
        self.base = BaseState(q, v, time.monotonic(), t)
        if first:
            self.get_logger().info(f'floating base state received on {self._base_topic}'
                                   + (': publishing' if self._said_input else ''))

    def extra_diagnostics(self) -> dict:
        stale = self.runtime is not None and self.is_stale()
        commanding = self.params['command_source'] != 'none'
        # "resumed" only after a logged "stopped" (stale before the first input is not logged)
        if self.waiting_for() is not None:
            stale = False       # (waiting for the base's first state is said as such)
        if commanding and stale and not self._was_stale and self.stats.last_input_time:
            self.get_logger().warning(f'input stale ({self.stale_reason()}): torque commands '
                                      'stopped')
            self._was_stale = True
        elif self._was_stale and not stale:
            if commanding:
                self.get_logger().info('input fresh again: torque commands resumed')
            self._was_stale = False
        extra = {'command_source': self.params['command_source'],
                 'collision': str(bool(self.collision)).lower(),
                 'collision_joints': ','.join(self.collision),
                 'collisions': str(self.collisions),
                 'floating_base': str(self.params['floating_base']).lower(),
                 'saturated_commands': str(self.saturated),
                 'references_taken': str(self.references)}
        if self.params['linearization_rate'] > 0.0:
            extra['linearizations'] = str(self.linearizations)
        rt = self.runtime
        if rt is not None:
            extra['joints_known'] = f'{int(rt.merger.has_position.sum())}/' \
                                    f'{len(rt.robot.joint_names)}'
            if rt.loops is not None:
                extra['closed_loops'] = ', '.join(rt.robot.model.constraint_names)
                extra['actuated_joints'] = ', '.join(rt.loops.actuated)
            extra['clock_resets'] = str(rt.merger.clock_resets)
            if self.peak is not None and len(self.peak) == len(rt.robot.joint_names):
                extra['external_torque_peak'] = ', '.join(
                    f'{name} {x:.3g}' for name, x in zip(rt.robot.joint_names, self.peak))
        return extra


def matrix_message(X: np.ndarray, rows: str, columns: str) -> Float64MultiArray:
    """A 2-D matrix as Float64MultiArray, row-major: dim[0] the rows, dim[1] the columns
    (std_msgs/MultiArrayLayout's convention: stride = the size of the block below)."""
    r, c = X.shape
    msg = Float64MultiArray(data=np.ascontiguousarray(X, dtype=float).ravel().tolist())
    msg.layout.dim = [MultiArrayDimension(label=rows, size=r, stride=r * c),
                      MultiArrayDimension(label=columns, size=c, stride=c)]
    return msg


def main(args=None) -> int:
    return node_main(DynamicsNode, args, executable='dynamics_node',
                     description=__doc__.split('\n\n')[0])


if __name__ == '__main__':
    raise SystemExit(main())
