"""dynamics_node (node ``rbd_dynamics``): gravity, inverse and forward dynamics of the robot in
``robot_description``, by joint name, stamped with the input's stamp.

In: ``joint_states`` (sensor_msgs/JointState), ``~/reference`` (trajectory_msgs/JointTrajectory),
``~/base_state`` (nav_msgs/Odometry, only with ``floating_base: true``), ``robot_description``.
Out: ``~/gravity_torques`` and ``~/inverse_dynamics`` (JointState effort), ``~/forward_dynamics``
(JointTrajectory, one point), ``~/effort_commands`` (Float64MultiArray in ``command_joints``
order), ``/diagnostics``. Every output is one core call on one model snapshot.
Gravity compensation is published in :meth:`DynamicsNode.on_joint_states`.
Parameters: config/rbd.yaml; behaviour: docs/ros.md.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import rbd_ros.dynamics as rbd
from rbd_ros.ros.joint_states import JointStateMerger, Rejected, all_finite, stamp_ns
from rbd_ros.ros.messages import joint_state, odometry_to_base
from rbd_ros.ros.node import COMMON_PARAMS, JOINT_STATES_QOS, RbdNode, node_main
from rbd_ros.ros.params import ParamSpec, finite_vector, non_negative, one_of, unique_names
from rbd_ros.ros.qos import COMMAND_QOS, OUTPUT_QOS, joint_states_qos
from rbd_ros.ros.robot import Robot
from rbd_ros.ros.wire import JointStateDecoder, SerializedMessage

PARAMS = {
    **COMMON_PARAMS,
    'joint_states_qos': JOINT_STATES_QOS,
    'gravity': ParamSpec('double_array', [0.0, 0.0, -9.81], 'gravity in the world frame (m/s^2)',
                         finite_vector(3)),
    'floating_base': ParamSpec('bool', False, 'add a floating base; its state comes from '
                               '~/base_state'),
    'input_timeout': ParamSpec('double', 0.5, 'seconds without valid joint_states (or '
                               'base_state) after which input is stale: torque commands stop; '
                               '0 disables', non_negative),
    'command_source': ParamSpec('string', 'none', 'what ~/effort_commands carries: none, '
                                'gravity or inverse_dynamics',
                                one_of('none', 'gravity', 'inverse_dynamics')),
    'command_joints': ParamSpec('string_array', [], 'joint order of ~/effort_commands; empty: '
                                'every single-DoF joint in model order', unique_names),
}


@dataclasses.dataclass(frozen=True)
class Runtime:
    """Everything a callback needs, swapped as one object when the model changes."""

    robot: Robot
    merger: JointStateMerger
    command_names: tuple[str, ...]
    command_slots: np.ndarray     # positions in robot.joint_names of command_joints
    # the two per-joint_states outputs, serialized once with the joint names (hot path)
    gravity_out: SerializedMessage   # JointState: stamp, position, effort
    fd_out: SerializedMessage        # JointTrajectory: stamp, positions, velocities,
    #                                  accelerations, effort of points[0]


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

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        p = self.params
        self.base: BaseState | None = None
        self._last_reference_ns = -1
        self._was_stale = False
        # raw: joint_states arrive as bytes, read by a JointStateDecoder (no Python message)
        self._decoder = JointStateDecoder()
        self.create_subscription(JointState, 'joint_states', self.guard(self.on_joint_states),
                                 joint_states_qos(p['joint_states_qos']), raw=True)
        self.create_subscription(JointTrajectory, '~/reference', self.guard(self.on_reference),
                                 COMMAND_QOS)
        if p['floating_base']:
            self.create_subscription(Odometry, '~/base_state', self.guard(self.on_base_state),
                                     joint_states_qos(p['joint_states_qos']))
        self.pub_gravity = self.create_publisher(JointState, '~/gravity_torques', OUTPUT_QOS)
        self.pub_id = self.create_publisher(JointState, '~/inverse_dynamics', OUTPUT_QOS)
        self.pub_fd = self.create_publisher(JointTrajectory, '~/forward_dynamics', OUTPUT_QOS)
        self.pub_cmd = self.create_publisher(Float64MultiArray, '~/effort_commands', OUTPUT_QOS)
        self.start()

    # -- model ---------------------------------------------------------------------------------
    def prepare(self, robot: Robot) -> Runtime:
        names, slots = robot.joint_slots(self.params['command_joints'])
        old = self.runtime
        count = len(robot.joint_names)
        gravity = JointState(name=list(robot.joint_names))
        point = JointTrajectoryPoint()
        fd = JointTrajectory(joint_names=list(robot.joint_names), points=[point])
        return Runtime(
            robot=robot, merger=JointStateMerger(robot, old.merger if old is not None else None),
            command_names=names, command_slots=slots,
            gravity_out=SerializedMessage(gravity, gravity.header,
                                          [(gravity, 'position'), (gravity, 'effort')], count),
            fd_out=SerializedMessage(fd, fd.header, [(point, 'positions'), (point, 'velocities'),
                                                     (point, 'accelerations'), (point, 'effort')],
                                     count))

    # -- state ---------------------------------------------------------------------------------
    def is_stale(self) -> bool:
        timeout = self.params['input_timeout']
        if timeout <= 0:
            return False
        now = time.monotonic()
        last = self.stats.last_input_time
        if last is None or now - last > timeout:
            return True
        if self.params['floating_base']:
            return self.base is None or now - self.base.received > timeout
        return False

    def _base_state(self):
        """(q[:7], v[:6]) of the base, or (None, None) for a fixed base. Raises Rejected when a
        floating base has no state yet."""
        if not self.params['floating_base']:
            return None, None
        if self.base is None:
            raise Rejected('no_base_state', 'waiting for the first ~/base_state')
        return self.base.q, self.base.v

    def _publish(self, pub, msg, *arrays) -> bool:
        if not all_finite(*arrays):   # never publish NaN or inf
            self.stats.non_finite_outputs += 1
            self.get_logger().error(f'non-finite result not published on {pub.topic_name}',
                                    throttle_duration_sec=2.0)
            return False
        pub.publish(msg)
        self.stats.published += 1
        return True

    def _command(self, rt: Runtime, joint_tau: np.ndarray) -> None:
        if self.is_stale():
            return
        cmd = joint_tau[rt.command_slots]
        self._publish(self.pub_cmd, Float64MultiArray(data=cmd.tolist()), cmd)

    # -- callbacks -----------------------------------------------------------------------------
    def on_joint_states(self, data: bytes) -> None:
        """One serialized sensor_msgs/JointState. The hot path (1 kHz and more): no Python
        message in or out (the input is read from its bytes, the two outputs are written into
        bytes serialized once per model), the name -> slot map is cached by the merger, and the
        gravity torques are published before forward dynamics is computed."""
        stats = self.stats
        stats.received += 1
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'joint_states before any robot_description')
        sec, nanosec, names, position, velocity, effort = self._decoder.decode(data)
        m = rt.merger
        unknown, has_effort = m.update_values(names, position, velocity, effort,
                                              sec * 1_000_000_000 + nanosec)
        if unknown:
            stats.unknown_names(unknown)
        stats.last_input_time = time.monotonic()
        if not m.complete:
            return
        robot = rt.robot
        if robot.direct_state:   # fixed base, every coordinate a JointState joint: q is position
            base_q = base_v = None
            q = m.position
        else:
            if self.params['floating_base'] and (self.base is None or self.is_stale()):
                return   # outputs wait for a (fresh) base state
            base_q, base_v = self._base_state()
            q = robot.full_q(m.position, base_q)

        # gravity compensation: g(q) for every joint_states message
        g = stats.timed(rbd.gravity_torques, robot.model, q)
        if not robot.direct_state:
            g = g[robot.v_index]
        out = rt.gravity_out.fill(sec, nanosec, m.position, g)
        if self._publish(self.pub_gravity, out, g) and self.params['command_source'] == 'gravity':
            self._command(rt, g)

        if has_effort and m.effort_complete:
            if robot.direct_state:
                v, tau = m.velocity, m.effort
            else:
                v = robot.full_v(m.velocity, base_v)
                tau = robot.full_v(m.effort)   # an unactuated floating base gets no torque
            qdd = stats.timed(rbd.forward_dynamics, robot.model, q, v, tau)
            if not robot.direct_state:
                qdd = qdd[robot.v_index]
            out = rt.fd_out.fill(sec, nanosec, m.position, m.velocity, qdd, m.effort)
            self._publish(self.pub_fd, out, qdd)

    def on_reference(self, msg: JointTrajectory) -> None:
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'reference before any robot_description')
        if not msg.points:
            raise Rejected('empty_reference', 'JointTrajectory without points')
        n = len(msg.joint_names)
        pt = msg.points[0]
        for field in ('positions', 'velocities', 'accelerations'):
            if len(getattr(pt, field)) not in (0, n):
                raise Rejected('length_mismatch',
                               f'{n} joint names but {len(getattr(pt, field))} {field}')
        if len(set(msg.joint_names)) != n:
            raise Rejected('duplicate_names', 'a joint name appears twice in the reference')
        pos, vel, acc = (np.asarray(getattr(pt, f), dtype=float)
                         for f in ('positions', 'velocities', 'accelerations'))
        if not all_finite(pos, vel, acc):
            raise Rejected('non_finite', 'NaN or inf in the reference')
        t = stamp_ns(msg.header.stamp)
        if t < self._last_reference_ns:
            raise Rejected('time_backwards', 'reference stamp older than the previous one')
        robot = rt.robot
        # Joints the reference does not name: measured position if known (else 0), v = a = 0.
        qj = np.where(rt.merger.has_position, rt.merger.position, 0.0)
        vj, aj = np.zeros(len(robot.joint_names)), np.zeros(len(robot.joint_names))
        unknown = []
        for k, name in enumerate(msg.joint_names):
            i = robot.slot.get(name)
            if i is None:
                unknown.append(name)
                continue
            if len(pos):
                qj[i] = pos[k]
            if len(vel):
                vj[i] = vel[k]
            if len(acc):
                aj[i] = acc[k]
        if unknown:
            self.stats.unknown_names(unknown)
        base_q, base_v = self._base_state()
        self._last_reference_ns = t
        tau = self.stats.timed(rbd.inverse_dynamics, robot.model, robot.full_q(qj, base_q),
                               robot.full_v(vj, base_v), robot.full_v(aj))[robot.v_index]
        out = joint_state(msg.header.stamp, robot.joint_names, position=qj, velocity=vj,
                          effort=tau)
        if self._publish(self.pub_id, out, tau) and \
                self.params['command_source'] == 'inverse_dynamics':
            self._command(rt, tau)

    def on_base_state(self, msg: Odometry) -> None:
        q, v = odometry_to_base(msg)
        t = stamp_ns(msg.header.stamp)
        if self.base is not None and t < self.base.stamp_ns:
            raise Rejected('time_backwards', 'base_state stamp older than the previous one')
        self.base = BaseState(q, v, time.monotonic(), t)

    def extra_diagnostics(self) -> dict:
        stale = self.runtime is not None and self.is_stale()
        commanding = self.params['command_source'] != 'none'
        if commanding and stale and not self._was_stale and self.stats.last_input_time:
            self.get_logger().warning('input stale: torque commands stopped')
        elif commanding and self._was_stale and not stale:
            self.get_logger().info('input fresh again: torque commands resumed')
        self._was_stale = stale
        extra = {'command_source': self.params['command_source'],
                 'floating_base': str(self.params['floating_base']).lower()}
        rt = self.runtime
        if rt is not None:
            extra['joints_known'] = f'{int(rt.merger.has_position.sum())}/' \
                                    f'{len(rt.robot.joint_names)}'
            extra['clock_resets'] = str(rt.merger.clock_resets)
        return extra


def main(args=None) -> int:
    return node_main(DynamicsNode, args, executable='dynamics_node',
                     description=__doc__.split('\n\n')[0])


if __name__ == '__main__':
    raise SystemExit(main())
