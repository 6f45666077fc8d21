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

import functools
import math
import struct
import sys
from typing import Any, Sequence

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from rclpy.event_handler import PublisherEventCallbacks, UnsupportedEventTypeError
from rclpy.serialization import deserialize_message, serialize_message

from rbd_ros.dynamics._jit import JIT_ENABLED, compile_lock, kernel

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

    Per message one compiled call (``fill_fields``) writes the stamp and the values and says
    whether they were all finite (:meth:`fill_finite`): in
    dynamics_node at 1 kHz the numpy assignments and a finite check in Python took ~16 us of
    CPU an output (nothing stays in cache from one message to the next), the call ~7. Arrays it was
    not compiled for (not float64, not contiguous), a big-endian template, or no numba: the same
    in numpy.

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
        self._buffer = aligned_buffer(self.template)
        self._stamp = struct.Struct(endian + 'iI') if header is not None else None
        self._stamp_offset = self._find(self._stamp.pack(*self._STAMP_MARK)) \
            if header is not None else 0
        dtype = np.dtype(endian + 'f8')
        # per field: a float64 view of the buffer where its values lie
        self._views = []
        for values in marks:
            offset = self._find(struct.pack(f'{endian}{len(values)}d', *values)) \
                if values else 0
            self._views.append(self._buffer[offset:offset + 8 * len(values)].view(dtype)
                               if values else np.zeros(0, dtype))
        # sec and nanosec as two uint32 (a message without a stamp: two bytes nobody reads)
        self._stamp_words = (self._buffer[self._stamp_offset:self._stamp_offset + 8]
                             .view(np.uint32) if header is not None else np.zeros(2, np.uint32))
        self._compiled = (JIT_ENABLED and endian == NATIVE and len(self._views) <= 4
                          and all(view.flags.aligned for view in self._views))
        self._views = tuple(self._views)
        self._four_views = self._views + _NO_FIELDS[len(self._views):]
        if self._compiled:
            warm_up()
        self.lengths = tuple(len(values) for values in marks)
        self.length = length
        self.msg_type = type(msg)

    def _find(self, pattern: bytes) -> int:
        return find_once(self.template, pattern, 'SerializedMessage: a field')

    def fill(self, sec: int, nanosec: int, *arrays) -> bytes:
        """The serialized message stamped (sec, nanosec), with the arrays (in ``fields`` order,
        each of its field's length; numpy arrays or sequences of numbers)."""
        return self._fill(sec, nanosec, arrays)[0]

    def fill_finite(self, sec: int, nanosec: int, *arrays) -> bytes | None:
        """As :meth:`fill`, or None (nothing to publish) when a value is NaN or inf."""
        data, finite = self._fill(sec, nanosec, arrays)
        return data if finite else None

    def _fill(self, sec, nanosec, arrays) -> tuple[bytes, bool]:
        """(the bytes, whether every value was finite)."""
        views = self._views
        if len(arrays) != len(views):
            raise ValueError(f'expected {len(views)} arrays, got {len(arrays)}')
        if self._compiled and type(sec) is int and type(nanosec) is int:
            status = BAD_ARGUMENTS
            v, a = self._four_views, (*arrays, *_NO_FIELDS[len(arrays):])
            try:
                status = fill_fields(self._stamp_words, sec, nanosec, v[0], a[0], v[1], a[1],
                                     v[2], a[2], v[3], a[3])
            except (TypeError, ValueError, OverflowError):
                pass     # (types it was not compiled for, an empty list, a stamp beyond
                         # int64: numpy below, which names it)
            if status >= 0:
                return self._buffer.tobytes(), status == FINITE
        # numpy: the same bytes, and the errors named (a length, a stamp out of range)
        buf = self._buffer
        if self._stamp is not None:
            self._stamp.pack_into(buf, self._stamp_offset, sec, nanosec)
        for view, values in zip(views, arrays):
            if len(values) != len(view):       # (an assignment would broadcast one value)
                raise ValueError(f'expected {len(view)} values, got {len(values)}')
            view[:] = values
        return buf.tobytes(), all_finite(views)


NATIVE = '<' if sys.byteorder == 'little' else '>'


def aligned_buffer(template: bytes) -> np.ndarray:
    """A writable copy of a serialized message whose byte 4 (where CDR's alignment counts
    from) is 8-aligned in memory: every float64 of the message is then an aligned one (as the
    compiled fills are typed for), every int32 a 4-aligned one."""
    size = len(template)
    store = np.zeros(size + 8, np.uint8)
    start = -(store.ctypes.data + 4) % 8
    buffer = store[start:start + size]
    buffer[:] = np.frombuffer(template, np.uint8)
    return buffer


def find_once(template: bytes, pattern: bytes, what: str) -> int:
    """The offset of a marker in a serialized message; RuntimeError naming ``what`` unless it
    is there exactly once."""
    offset = template.find(pattern)
    if offset < 0 or template.find(pattern, offset + 1) >= 0:
        raise RuntimeError(f'{what} was not found exactly once')
    return offset


_NO_FIELDS = (np.zeros(0),) * 4      # (the fields a message does not have)
#: what the compiled fills return: every value finite, one not, or arguments the numpy path
#: takes (a length that does not match, a stamp out of range)
FINITE, NON_FINITE, BAD_ARGUMENTS = 1, 0, -1


def all_finite(views) -> bool:
    with np.errstate(over='ignore', invalid='ignore'):   # (a sum may overflow: looked at)
        total = 0.0
        for view in views:
            total += float(view.sum())
    return total - total == 0.0 or all(bool(np.isfinite(view).all()) for view in views)


@kernel
def _copied(view, values) -> int:
    """values into view (of as many): FINITE or NON_FINITE."""
    total = 0.0
    for i in range(view.shape[0]):
        view[i] = values[i]
        total += values[i]
    # (a sum of finite values is finite unless it overflows: then each is looked at)
    if total - total == 0.0:
        return FINITE
    for i in range(view.shape[0]):
        if not np.isfinite(values[i]):
            return NON_FINITE
    return FINITE


@kernel
def fill_fields(stamp, sec, nanosec, v0, a0, v1, a1, v2, a2, v3, a3) -> int:
    """The stamp and up to four fields (the values a0 into the view v0 of the buffer, ...;
    empty arrays for the fields a message does not have) into a SerializedMessage's buffer.
    Returns FINITE, NON_FINITE, or BAD_ARGUMENTS (a length that is not its field's, a stamp
    out of range: nothing written)."""
    if (not -2 ** 31 <= sec < 2 ** 31 or not 0 <= nanosec < 2 ** 32
            or a0.shape[0] != v0.shape[0] or a1.shape[0] != v1.shape[0]
            or a2.shape[0] != v2.shape[0] or a3.shape[0] != v3.shape[0]):
        return BAD_ARGUMENTS
    stamp[0] = np.uint32(sec & 0xFFFFFFFF)
    stamp[1] = np.uint32(nanosec)
    return min(_copied(v0, a0), _copied(v1, a1), _copied(v2, a2), _copied(v3, a3))


@functools.cache
def warm_up() -> None:
    """Compile (or load from numba's cache) ``fill_fields`` for aligned float64 views and
    contiguous float64 arrays, then let it compile nothing more: another type raises
    TypeError, and the fill takes numpy (a compile on a node's message would stall it).
    Nothing without numba."""
    if not JIT_ENABLED:
        return
    with compile_lock():
        a = np.zeros(1)
        fill_fields(np.zeros(2, np.uint32), 0, 0, a, a, a, a, a, a, a, a)
        fill_fields.disable_compile()


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


class TransformsMessage:
    """tf2_msgs/TFMessage of the same transforms (parent, child) every message, each stamped:
    serialized once, then per message the poses are written into ``doubles`` (a float64 view
    of the bytes) at ``value_at`` (x, y, z, qx, qy, qz, qw from there; frames_node's compiled
    kinematics.relative_transforms writes them), :meth:`stamp` sets every transform's stamp,
    and :meth:`data` is what ``Publisher.publish`` sends. Offsets are found, as
    SerializedMessage's, by serializing marker values; deserializing the bytes gives the
    message (test_ros_plumbing)."""

    _SEC_MARK = 0x5EC0_7A11

    def __init__(self, pairs: Sequence[tuple[str, str]]):
        from geometry_msgs.msg import TransformStamped
        from tf2_msgs.msg import TFMessage
        msg = TFMessage()
        for k, (parent, child) in enumerate(pairs):
            t = TransformStamped(child_frame_id=child)
            t.header.frame_id = parent
            t.header.stamp = TimeMsg(sec=self._SEC_MARK, nanosec=k + 1)
            p, r = t.transform.translation, t.transform.rotation
            p.x, p.y, p.z, r.x, r.y, r.z, r.w = self._marks(k)
            msg.transforms.append(t)
        data = bytes(serialize_message(msg))
        template = data[:cdr_length(msg)]
        if template[1] & 1 != (sys.byteorder == 'little') or \
                deserialize_message(template, TFMessage) != msg:
            raise RuntimeError('TransformsMessage: the bytes are not the message (byte order, '
                               'CDR length)')
        size = len(template)
        self._buffer = aligned_buffer(template)
        # uint32 words from byte 0 (stamps are 4-aligned), doubles from byte 4 (CDR aligns
        # them to 8 counting from there)
        self._words = self._buffer[:size // 4 * 4].view(np.uint32)
        self.doubles = self._buffer[4:4 + (size - 4) // 8 * 8].view(np.float64)
        stamp_at, value_at = [], []
        for k in range(len(pairs)):        # (native byte order: checked above)
            at = find_once(template, struct.pack('=iI', self._SEC_MARK, k + 1),
                           'TransformsMessage: a stamp')
            values = find_once(template, struct.pack('=7d', *self._marks(k)),
                               'TransformsMessage: a pose')
            if at % 4 or (values - 4) % 8:
                raise RuntimeError('TransformsMessage: a stamp or a pose is not CDR-aligned')
            stamp_at.append(at // 4)
            value_at.append((values - 4) // 8)
        self._stamp_at = np.array(stamp_at, np.int64)
        self.value_at = np.array(value_at, np.int64)

    @staticmethod
    def _marks(k: int) -> list[float]:
        return [math.ldexp(1.0 + (7 * k + i + 1) / 2.0 ** 30, -1000) for i in range(7)]

    def stamp(self, sec: int, nanosec: int) -> None:
        """Every transform's header.stamp (sec int32, nanosec uint32)."""
        if not (-2 ** 31 <= sec < 2 ** 31 and 0 <= nanosec < 2 ** 32):
            raise ValueError(f'stamp {sec}.{nanosec:09d} out of builtin_interfaces/Time range')
        self._words[self._stamp_at] = sec & 0xFFFFFFFF
        self._words[self._stamp_at + 1] = nanosec

    def data(self) -> bytes:
        return self._buffer.tobytes()


def clock_out() -> SerializedMessage:
    """rosgraph_msgs/Clock: the stamp is the whole message."""
    from rosgraph_msgs.msg import Clock
    msg = Clock()
    return SerializedMessage(msg, msg, [], stamp_field='clock')
