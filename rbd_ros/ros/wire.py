"""The byte-level fast path out of dynamics_node and sim_node (1 kHz and more): each per-message output is
serialized once per model, with its names, and per message only its stamp and numbers are
written into those bytes. No Python message is built per message.

An output joins the fast path with a publisher, :class:`Output` (made once, in the node's
``__init__``: it also knows whether anybody subscribes), a template made in the node's
``prepare`` (one per model: the names are in the bytes) and one ``fill`` per message::

    out = joint_state_out(robot.joint_names, 'position', 'effort')   # JointState
    out = float64_array_out(len(command_joints))                     # Float64MultiArray
    out = trajectory_point_out(robot.joint_names, 'positions', 'accelerations')
    out = wrench_out(frame_id)                                       # WrenchStamped
    out = odometry_out(frame_id, child_frame_id)                     # Odometry
    out = transform_out(parent, child)                               # TFMessage, one transform
    out = clock_out()                                                # Clock
    if output.readers:
        output.publish(out.fill(sec, nanosec, position, effort))     # bytes, as they are

Any other message whose per-message content is float64 fields (arrays of one length, or
consecutive float64 scalars) goes through :class:`SerializedMessage` directly.
"""
from __future__ import annotations

import math
import struct
from typing import Any, Sequence

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from rclpy.event_handler import PublisherEventCallbacks, UnsupportedEventTypeError
from rclpy.serialization import deserialize_message, serialize_message

from .cdr import cdr_length


class SerializedMessage:
    """A message published many times with the same names and only new numbers: serialized
    once by rclpy, then per message the stamp and the float64 fields are written into a buffer
    holding those bytes, and a copy of it is what ``Publisher.publish`` sends as it is (no
    Python-to-C conversion and no serialization per message).

    ``fields`` lists what :meth:`fill` writes, one array each, in order:

    - ``(holder, name)``: a float64[] field of ``msg`` or of a sub-message ``holder``, of
      ``length`` values (JointState's position, Float64MultiArray's data);
    - ``[(holder, name), ...]``: float64 scalar fields that lie one after the other in the bytes
      (a Wrench's force.x ... torque.z): one array of as many values.

    ``header`` is the std_msgs/Header (or message) whose ``stamp_field`` :meth:`fill` sets, or None for a message
    without one (its stamp arguments are then ignored). Where things lie in the bytes is found
    by serializing the message with marker values in them, so the encoding is whatever rclpy
    produces: :meth:`fill` gives the bytes of serializing the message with that stamp and those
    values (test_ros_plumbing checks it for every output of dynamics_node).

    One instance is filled by one thread at a time (a node's callbacks are; its buffer is
    reused).
    """

    _STAMP_MARK = (0x5EC0_7A11, 0x3AB_CDEF)

    def __init__(self, msg, header, fields: Sequence[Any], length: int = 0,
                 stamp_field: str = 'stamp'):
        if header is not None:      # (``stamp_field``: rosgraph_msgs/Clock's is ``clock``)
            setattr(header, stamp_field,
                    TimeMsg(sec=self._STAMP_MARK[0], nanosec=self._STAMP_MARK[1]))
        marks, count = [], 0
        for field in fields:
            scalars = isinstance(field, list)
            n = len(field) if scalars else length
            values = [math.ldexp(1.0 + (count + i + 1) / 4096.0, -1000) for i in range(n)]
            count += n
            if scalars:
                for (holder, name), value in zip(field, values):
                    setattr(holder, name, value)
            else:
                setattr(field[0], field[1], values)
            marks.append(values)
        # rclpy's serialized buffer can carry bytes after the message: cut at its CDR length
        data = bytes(serialize_message(msg))
        self.template = data[:cdr_length(msg)]
        if deserialize_message(self.template, type(msg)) != msg:
            raise RuntimeError('SerializedMessage: the CDR length of the message is wrong')
        # encapsulation: byte 1 is 1 for little-endian CDR, 0 for big-endian
        endian = '<' if self.template[1] & 1 else '>'
        self._buffer = bytearray(self.template)
        self._stamp = struct.Struct(endian + 'iI') if header is not None else None
        self._stamp_offset = self._find(self._stamp.pack(*self._STAMP_MARK)) \
            if header is not None else 0
        dtype = np.dtype(endian + 'f8')
        # per field: a float64 view of the buffer where its values lie (unaligned is fine)
        self._views = []
        for values in marks:
            offset = self._find(struct.pack(f'{endian}{len(values)}d', *values)) \
                if values else 0
            self._views.append(np.frombuffer(self._buffer, dtype, len(values), offset))
        self.lengths = tuple(len(values) for values in marks)
        self.length = length
        self.msg_type = type(msg)

    def _find(self, pattern: bytes) -> int:
        offset = self.template.find(pattern)
        if offset < 0 or self.template.find(pattern, offset + 1) >= 0:
            raise RuntimeError('SerializedMessage: a field was not found exactly once')
        return offset

    def fill(self, sec: int, nanosec: int, *arrays) -> bytes:
        """The serialized message stamped (sec, nanosec), with the arrays (in ``fields`` order,
        each of its field's length; numpy arrays or sequences of numbers)."""
        buf = self._buffer
        if self._stamp is not None:
            self._stamp.pack_into(buf, self._stamp_offset, sec, nanosec)
        if len(arrays) != len(self._views):
            raise ValueError(f'expected {len(self._views)} arrays, got {len(arrays)}')
        for view, values in zip(self._views, arrays):
            if len(values) != len(view):       # (an assignment would broadcast one value)
                raise ValueError(f'expected {len(view)} values, got {len(values)}')
            view[:] = values
        return bytes(buf)


class Output:
    """The publisher of a per-message output, and how many subscriptions it has matched
    (``readers``, from its matched events: a subscriber that comes or goes is seen by the next
    message). Nobody reading, a node neither fills nor sends the output, and skips what only
    that output needs: DDS delivers nothing to a subscriber before it is matched anyway, so no
    subscriber sees a difference, and an output nobody reads costs nothing. Where the rmw has no
    matched events, ``readers`` stays 1: every message is sent."""

    def __init__(self, node, msg_type, topic: str, qos):
        self.readers = 0
        try:
            self.publisher = node.create_publisher(
                msg_type, topic, qos, event_callbacks=PublisherEventCallbacks(
                    matched=self._matched))
        except UnsupportedEventTypeError:     # (an rmw without matched events)
            self.readers = 1
            self.publisher = node.create_publisher(msg_type, topic, qos)
        self.topic_name = self.publisher.topic_name

    def _matched(self, info) -> None:
        self.readers = info.current_count

    def publish(self, data: bytes) -> None:
        self.publisher.publish(data)


# ---- the templates of dynamics_node's outputs -------------------------------------------------
def joint_state_out(names: Sequence[str], *fields: str, frame_id: str = '') -> SerializedMessage:
    """sensor_msgs/JointState with ``name`` = names; ``fields`` ('position', 'velocity',
    'effort') are filled per message, one value per name, the others stay empty."""
    from sensor_msgs.msg import JointState
    msg = JointState(name=list(names))
    msg.header.frame_id = frame_id
    return SerializedMessage(msg, msg.header, [(msg, f) for f in fields], len(names))


def trajectory_point_out(names: Sequence[str], *fields: str) -> SerializedMessage:
    """trajectory_msgs/JointTrajectory with ``joint_names`` = names and one point whose
    ``fields`` ('positions', 'velocities', 'accelerations', 'effort') are filled per message
    (time_from_start 0)."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    point = JointTrajectoryPoint()
    msg = JointTrajectory(joint_names=list(names), points=[point])
    return SerializedMessage(msg, msg.header, [(point, f) for f in fields], len(names))


def float64_array_out(length: int) -> SerializedMessage:
    """std_msgs/Float64MultiArray of ``length`` values (no layout dimensions, as
    forward_command_controller reads it); unstamped: fill's stamp is ignored."""
    from std_msgs.msg import Float64MultiArray
    msg = Float64MultiArray()
    return SerializedMessage(msg, None, [(msg, 'data')], length)


def wrench_out(frame_id: str) -> SerializedMessage:
    """geometry_msgs/WrenchStamped in ``frame_id``: one array [fx, fy, fz, tx, ty, tz] per
    message."""
    from geometry_msgs.msg import WrenchStamped
    msg = WrenchStamped()
    msg.header.frame_id = frame_id
    force, torque = msg.wrench.force, msg.wrench.torque
    return SerializedMessage(msg, msg.header, [[(force, 'x'), (force, 'y'), (force, 'z'),
                                                (torque, 'x'), (torque, 'y'), (torque, 'z')]])


# ---- the templates of sim_node's outputs ------------------------------------------------------
def odometry_out(frame_id: str, child_frame_id: str) -> SerializedMessage:
    """nav_msgs/Odometry in ``frame_id`` of ``child_frame_id``: per message the pose [x, y, z,
    qx, qy, qz, qw] and the twist [vx, vy, vz, wx, wy, wz] (covariances zero)."""
    from nav_msgs.msg import Odometry
    msg = Odometry(child_frame_id=child_frame_id)
    msg.header.frame_id = frame_id
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    v, w = msg.twist.twist.linear, msg.twist.twist.angular
    return SerializedMessage(msg, msg.header, [
        [(p, 'x'), (p, 'y'), (p, 'z'), (o, 'x'), (o, 'y'), (o, 'z'), (o, 'w')],
        [(v, 'x'), (v, 'y'), (v, 'z'), (w, 'x'), (w, 'y'), (w, 'z')]])


def transform_out(parent: str, child: str) -> SerializedMessage:
    """tf2_msgs/TFMessage of one transform ``parent`` -> ``child``: per message [x, y, z, qx,
    qy, qz, qw] and the stamp."""
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage
    t = TransformStamped(child_frame_id=child)
    t.header.frame_id = parent
    p, r = t.transform.translation, t.transform.rotation
    return SerializedMessage(TFMessage(transforms=[t]), t.header, [
        [(p, 'x'), (p, 'y'), (p, 'z'), (r, 'x'), (r, 'y'), (r, 'z'), (r, 'w')]])


def clock_out() -> SerializedMessage:
    """rosgraph_msgs/Clock: the stamp is the whole message."""
    from rosgraph_msgs.msg import Clock
    msg = Clock()
    return SerializedMessage(msg, msg, [], stamp_field='clock')
