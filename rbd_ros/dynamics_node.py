"""dynamics_node (node ``rbd_dynamics``): gravity, inverse and forward dynamics of the robot in
``robot_description``, by joint name, stamped with the input's stamp.

In: ``joint_states`` (sensor_msgs/JointState), ``~/reference`` (trajectory_msgs/JointTrajectory),
``~/base_state`` (nav_msgs/Odometry, only with ``floating_base: true``), ``robot_description``.
Out: ``~/gravity_torques``, ``~/inverse_dynamics`` (JointState effort), ``~/forward_dynamics``
(JointTrajectory, one point), ``~/effort_commands`` (Float64MultiArray in ``command_joints``
order), ``/diagnostics`` at 1 Hz. Every output is one core call on one model snapshot.
Parameters: config/rbd.yaml; behaviour: docs/ros.md.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import rbd_ros.dynamics as rbd
from rbd_ros.ros_conversions import (JOINT_STATES_QOS_PARAM, ROBOT_DESCRIPTION_PARAM,
                                     OUTPUT_QOS, JointStateMerger, LoadedModel, ParamSpec,
                                     JointStateDecoder, RbdNode, Rejected, SerializedMessage,
                                     all_finite, diagnostic_status, finite_vector, joint_state,
                                     joint_states_qos, non_negative, odometry_to_base, one_of,
                                     positive, run_node, stamp_ns)

PARAMS = {
    'robot_description': ROBOT_DESCRIPTION_PARAM,
    'joint_states_qos': JOINT_STATES_QOS_PARAM,
    'gravity': ParamSpec([0.0, 0.0, -9.81], 'gravity in the world frame (m/s^2)',
                         finite_vector(3)),
    'floating_base': ParamSpec(False, 'add a floating base; its state comes from ~/base_state'),
    'input_timeout': ParamSpec(0.5, 'seconds without valid joint_states (or base_state) after '
                               'which input is stale: torque commands stop; 0 disables',
                               non_negative),
    'command_source': ParamSpec('none', 'what ~/effort_commands carries: none, gravity or '
                                'inverse_dynamics',
                                one_of('none', 'gravity', 'inverse_dynamics')),
    'command_joints': ParamSpec([], 'joint order of ~/effort_commands; empty: every '
                                'single-DoF joint in model order'),
    'diagnostics_period': ParamSpec(1.0, 'seconds between /diagnostics messages', positive),
}


@dataclasses.dataclass(frozen=True)
class Runtime:
    """Everything a callback needs, swapped as one object when the model changes."""

    loaded: LoadedModel
    merger: JointStateMerger
    command_slots: np.ndarray   # positions in loaded.joint_names of command_joints
    command_names: tuple[str, ...]
    # the two per-joint_states outputs, serialized once with the joint names (hot path)
    gravity_out: SerializedMessage   # JointState: stamp, position, effort
    fd_out: SerializedMessage        # JointTrajectory: stamp, positions, velocities,
                                     # accelerations, effort of points[0]


class DynamicsNode(RbdNode):
    NODE_NAME = 'rbd_dynamics'
    PARAMS = PARAMS

    def __init__(self, **kwargs):
        self.runtime: Runtime | None = None
        self._base = None          # (q[:7], v[:6], monotonic receive time, stamp ns)
        super().__init__(**kwargs)
        p = self.params
        # raw: joint_states arrive as bytes and are read by a JointStateDecoder (no Python
        # message is built per message)
        self._decoder = JointStateDecoder()
        self.create_subscription(JointState, 'joint_states', self.guard(self.on_joint_states),
                                 joint_states_qos(p['joint_states_qos']), raw=True)
        self.create_subscription(JointTrajectory, '~/reference', self.guard(self.on_reference),
                                 OUTPUT_QOS)
        if p['floating_base']:
            self.create_subscription(Odometry, '~/base_state', self.guard(self.on_base_state),
                                     joint_states_qos(p['joint_states_qos']))
        self.pub_gravity = self.create_publisher(JointState, '~/gravity_torques', OUTPUT_QOS)
        self.pub_id = self.create_publisher(JointState, '~/inverse_dynamics', OUTPUT_QOS)
        self.pub_fd = self.create_publisher(JointTrajectory, '~/forward_dynamics', OUTPUT_QOS)
        self.pub_cmd = self.create_publisher(Float64MultiArray, '~/effort_commands', OUTPUT_QOS)
        self.pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', OUTPUT_QOS)
        self._last_ref_ns = -1
        self._was_stale = False
        self.create_timer(p['diagnostics_period'], self.guard(self.publish_diagnostics))
        self.start_description()

    # -- model ---------------------------------------------------------------------------
    def model_prepared(self, loaded: LoadedModel) -> None:
        names, slots = loaded.command_joint_slots(self.params['command_joints'])
        old = self.runtime
        count = len(loaded.joint_names)
        gravity = JointState(name=list(loaded.joint_names))
        point = JointTrajectoryPoint()
        fd = JointTrajectory(joint_names=list(loaded.joint_names), points=[point])
        self._next_runtime = Runtime(
            loaded=loaded,
            merger=JointStateMerger(loaded, old.merger if old is not None else None),
            command_slots=slots,
            command_names=names,
            gravity_out=SerializedMessage(gravity, gravity.header,
                                          [(gravity, 'position'), (gravity, 'effort')],
                                          count),
            fd_out=SerializedMessage(fd, fd.header, [(point, 'positions'), (point, 'velocities'),
                                                     (point, 'accelerations'), (point, 'effort')],
                                     count))

    def model_changed(self, loaded: LoadedModel) -> None:
        self.runtime = self._next_runtime   # the swap: one assignment
        self._next_runtime = None

    # -- state ---------------------------------------------------------------------------
    def is_stale(self) -> bool:
        timeout = self.params['input_timeout']
        if timeout <= 0:
            return False
        now = time.monotonic()
        last = self.stats.last_input_time
        if last is None or now - last > timeout:
            return True
        if self.params['floating_base']:
            return self._base is None or now - self._base[2] > timeout
        return False

    def _base_state(self):
        """(q[:7], v[:6]) of the base, or (None, None) for a fixed base. Raises Rejected when a
        floating base has no state yet."""
        if not self.params['floating_base']:
            return None, None
        if self._base is None:
            raise Rejected('no_base_state', 'waiting for the first ~/base_state')
        return self._base[0], self._base[1]

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

    # -- callbacks -----------------------------------------------------------------------
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
        for name in unknown:
            stats.unknown_names[name] += 1
        stats.last_input_time = time.monotonic()
        if not m.complete:
            return
        lm = rt.loaded
        if lm.direct_state:   # fixed base, every coordinate a JointState joint: q is position
            base_q = base_v = None
            q = m.position
        else:
            if self.params['floating_base'] and (self._base is None or self.is_stale()):
                return   # outputs wait for a (fresh) base state
            base_q, base_v = self._base_state()
            q = lm.full_q(m.position, base_q)

        g = stats.timed(rbd.gravity_torques, lm.model, q)
        if not lm.direct_state:
            g = g[lm.v_index]
        out = rt.gravity_out.fill(sec, nanosec, m.position, g)
        if self._publish(self.pub_gravity, out, g) and self.params['command_source'] == 'gravity':
            self._command(rt, g)

        if has_effort and m.effort_complete:
            if lm.direct_state:
                v, tau = m.velocity, m.effort
            else:
                v = lm.full_v(m.velocity, base_v)
                tau = lm.full_v(m.effort)   # an unactuated floating base gets no torque
            qdd = stats.timed(rbd.forward_dynamics, lm.model, q, v, tau)
            if not lm.direct_state:
                qdd = qdd[lm.v_index]
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
        if t < self._last_ref_ns:
            raise Rejected('time_backwards', 'reference stamp older than the previous one')
        lm = rt.loaded
        # Joints the reference does not name: measured position if known (else 0), v = a = 0.
        qj = np.where(rt.merger.has_position, rt.merger.position, 0.0)
        vj, aj = np.zeros(len(lm.joint_names)), np.zeros(len(lm.joint_names))
        for k, name in enumerate(msg.joint_names):
            i = lm.name_to_slot.get(name)
            if i is None:
                self.stats.unknown_names[name] += 1
                continue
            if len(pos):
                qj[i] = pos[k]
            if len(vel):
                vj[i] = vel[k]
            if len(acc):
                aj[i] = acc[k]
        base_q, base_v = self._base_state()
        self._last_ref_ns = t
        tau = self.stats.timed(rbd.inverse_dynamics, lm.model, lm.full_q(qj, base_q),
                               lm.full_v(vj, base_v), lm.full_v(aj))[lm.v_index]
        out = joint_state(msg.header.stamp, lm.joint_names, position=qj, velocity=vj, effort=tau)
        if self._publish(self.pub_id, out, tau) and \
                self.params['command_source'] == 'inverse_dynamics':
            self._command(rt, tau)

    def on_base_state(self, msg: Odometry) -> None:
        q, v = odometry_to_base(msg)
        t = stamp_ns(msg.header.stamp)
        if self._base is not None and t < self._base[3]:
            raise Rejected('time_backwards', 'base_state stamp older than the previous one')
        self._base = (q, v, time.monotonic(), t)

    def publish_diagnostics(self) -> None:
        stale = self.runtime is not None and self.is_stale()
        if stale and not self._was_stale:
            self.get_logger().warning('input stale: torque commands stopped')
        self._was_stale = stale
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        rt = self.runtime
        extra = {'command_source': self.params['command_source'],
                 'floating_base': str(self.params['floating_base']).lower()}
        if rt is not None:
            extra['joints_known'] = f'{int(rt.merger.has_position.sum())}/' \
                                    f'{len(rt.loaded.joint_names)}'
        arr.status = [diagnostic_status(self.get_fully_qualified_name(),
                                        rt.loaded if rt else None, self.stats, stale, extra)]
        self.pub_diag.publish(arr)


def main(args=None) -> int:
    return run_node(DynamicsNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
