"""Plain CDR (XCDR1), the encoding every ROS 2 rmw sends ROS messages in: the length of a
message, and a bounds-checked walk over received bytes before anything deserializes them.

Why the walk: the rmw's own deserializer (Fast CDR under rmw_fastrtps, run by rclpy's
``deserialize_message`` and by every typed subscription) is not safe on arbitrary bytes on
Kilted (Jazzy's raises an error instead: docs/ros.md says what was measured on each). Four
bytes, ``00 02 81 a1``, make Kilted's read past the buffer, in most runs killing the process
(a segfault in ``eprosima::fastcdr::Cdr::read_string``, from ``cdr_deserialize_sensor_msgs__msg__JointState``;
every encapsulation, plain CDR included, found such inputs within 20,000 random bodies). So a
node subscribes to its topics as bytes (``raw=True``), and :class:`CdrChecker` walks them against
the message's field types first: every count and string length must fit in the bytes that are
left, strings must end in their NUL, bounded fields must keep their bound, and the
encapsulation must be plain CDR (``00 00`` big-, ``00 01`` little-endian). Only bytes that pass
reach the deserializer, which then reads nothing the walk did not. Anything else raises
:class:`~rbd_ros.ros.joint_states.Rejected` (``malformed``).
"""
from __future__ import annotations

import importlib
import struct

from rclpy.serialization import deserialize_message
from rosidl_parser import definition as idl

from .joint_state_bytes import ENCAPSULATIONS, Rejected, check_encapsulation  # noqa: F401

_PRIMITIVE = {'boolean': 1, 'octet': 1, 'char': 1, 'uint8': 1, 'int8': 1, 'byte': 1,
              'int16': 2, 'uint16': 2, 'int32': 4, 'uint32': 4, 'float': 4, 'wchar': 2,
              'int64': 8, 'uint64': 8, 'double': 8, 'long double': 8}

#: encapsulation identifiers (the first two bytes) of the other representations, for the
#: refusal's message (OMG DDS-XTypes 1.3, 7.6.3.1.2)
# ---- the walk ------------------------------------------------------------------------------
# A plan is a tuple of steps over a message's fields, nested messages flattened into it:
#   (_FIXED, size, count)           `count` primitives of `size` bytes (fixed arrays included)
#   (_STRING, bound)                one string (bound 0: unbounded)
#   (_STRINGS, count, bound)        a fixed array of strings
#   (_SEQUENCE, size, bound)        a sequence of primitives
#   (_STRING_SEQUENCE, bound, sb)   a sequence of strings (bound sb each)
#   (_MESSAGES, plan, count, bound) a sequence (count None) or a fixed array of messages
_FIXED, _STRING, _STRINGS, _SEQUENCE, _STRING_SEQUENCE, _MESSAGES = range(6)


def _message_class(t: idl.NamespacedType):
    return getattr(importlib.import_module('.'.join(t.namespaces)), t.name)


def _plan(msg_type) -> tuple:
    steps = []
    for t in msg_type.SLOT_TYPES:
        steps.extend(_steps(t))
    if not msg_type.SLOT_TYPES:      # an empty message carries one dummy uint8
        steps.append((_FIXED, 1, 1))
    return tuple(steps)


def _string_bound(t) -> int:
    if isinstance(t, idl.AbstractWString):
        raise TypeError('wstring fields are not supported')
    return t.maximum_size if isinstance(t, idl.BoundedString) else 0


def _steps(t) -> list:
    if isinstance(t, idl.BasicType):
        return [(_FIXED, _PRIMITIVE[t.typename], 1)]
    if isinstance(t, idl.AbstractGenericString):
        return [(_STRING, _string_bound(t))]
    if isinstance(t, idl.NamespacedType):
        return list(_plan(_message_class(t)))
    inner = t.value_type
    if isinstance(t, idl.Array):
        if isinstance(inner, idl.BasicType):
            return [(_FIXED, _PRIMITIVE[inner.typename], t.size)]
        if isinstance(inner, idl.AbstractGenericString):
            return [(_STRINGS, t.size, _string_bound(inner))]
        return [(_MESSAGES, _plan(_message_class(inner)), t.size, 0)]
    bound = t.maximum_size if isinstance(t, idl.BoundedSequence) else 0
    if isinstance(inner, idl.BasicType):
        return [(_SEQUENCE, _PRIMITIVE[inner.typename], bound)]
    if isinstance(inner, idl.AbstractGenericString):
        return [(_STRING_SEQUENCE, bound, _string_bound(inner))]
    return [(_MESSAGES, _plan(_message_class(inner)), None, bound)]


class _Malformed(Exception):
    pass


class CdrChecker:
    """The bounds-checked walk for one message type; :meth:`message` returns the message
    deserialized from bytes that pass it."""

    def __init__(self, msg_type):
        self.msg_type = msg_type
        self.plan = _plan(msg_type)

    def check(self, data) -> None:
        """Rejected (malformed, with where and why) unless ``data`` is a whole plain-CDR
        message of this type. Bytes after its end are allowed (padding)."""
        order = check_encapsulation(data)
        count = struct.Struct(order + 'I')
        try:
            _walk(self.plan, memoryview(data), 4, len(data), count)
        except _Malformed as exc:
            raise Rejected('malformed', f'{self.msg_type.__name__} bytes: {exc}') from None

    def message(self, data):
        self.check(data)
        try:
            return deserialize_message(data, self.msg_type)
        except Exception as exc:   # noqa: BLE001 - rclpy raises its own error types
            raise Rejected('malformed', f'{self.msg_type.__name__} bytes: {exc}') from None


def _aligned(off, size):
    """XCDR1 aligns a primitive to its size, counted from the byte after the header."""
    return off + (-(off - 4)) % size


def _read_count(data, off, end, count, what):
    off = _aligned(off, 4)
    if off + 4 > end:
        raise _Malformed(f'{what} at byte {off}: past the end ({end} bytes)')
    return count.unpack_from(data, off)[0], off + 4


def _string(data, off, end, count, bound):
    n, off = _read_count(data, off, end, count, 'string length')
    if n > end - off:
        raise _Malformed(f'a string of {n} bytes at byte {off}: only {end - off} left')
    if n:
        if data[off + n - 1] != 0:
            raise _Malformed(f'the string at byte {off} does not end in its NUL')
        if bound and n - 1 > bound:
            raise _Malformed(f'a string of {n - 1} characters at byte {off}: its bound is {bound}')
    return off + n


def _walk(plan, data, off, end, count):
    for step in plan:
        kind = step[0]
        if kind == _FIXED:
            size, n = step[1], step[2]
            off = _aligned(off, size) + size * n
            if off > end:
                raise _Malformed(f'{n} x {size}-byte values past the end ({end} bytes)')
        elif kind == _STRING:
            off = _string(data, off, end, count, step[1])
        elif kind == _SEQUENCE:
            size, bound = step[1], step[2]
            n, off = _read_count(data, off, end, count, 'sequence length')
            if bound and n > bound:
                raise _Malformed(f'a sequence of {n} at byte {off}: its bound is {bound}')
            if n:
                off = _aligned(off, size)
                if n > (end - off) // size:
                    raise _Malformed(f'a sequence of {n} x {size} bytes at byte {off}: only '
                                     f'{max(end - off, 0)} left')
                off += size * n
        elif kind in (_STRINGS, _STRING_SEQUENCE):
            if kind == _STRINGS:
                n, bound, string_bound = step[1], 0, step[2]
            else:
                bound, string_bound = step[1], step[2]
                n, off = _read_count(data, off, end, count, 'sequence length')
            if bound and n > bound:
                raise _Malformed(f'a sequence of {n} strings: its bound is {bound}')
            if n > (end - off) // 4:     # every string takes at least its 4-byte length
                raise _Malformed(f'{n} strings at byte {off}: only {end - off} bytes left')
            for _ in range(n):
                off = _string(data, off, end, count, string_bound)
        else:   # _MESSAGES
            plan, n, bound = step[1], step[2], step[3]
            if n is None:
                n, off = _read_count(data, off, end, count, 'sequence length')
                if bound and n > bound:
                    raise _Malformed(f'a sequence of {n} messages: its bound is {bound}')
            if n > end - off:            # every message takes at least one byte
                raise _Malformed(f'{n} messages at byte {off}: only {end - off} bytes left')
            for _ in range(n):
                off = _walk(plan, data, off, end, count)
    return off


# ---- the length of a message we serialize ----------------------------------------------------
def cdr_length(msg) -> int:
    """Bytes of ``msg`` in plain CDR, the 4-byte encapsulation header included: computed from
    the message's field types, with CDR alignment (relative to the end of the header)."""
    return 4 + _cdr_end(msg, 0)


def _align(offset, size):
    return offset + (-offset) % size


def _cdr_end(msg, offset):
    for name, kind in type(msg).get_fields_and_field_types().items():
        offset = _cdr_value(kind, getattr(msg, name), offset)
    return offset


def _cdr_value(kind, value, offset):
    if kind.startswith('sequence<'):
        inner = kind[len('sequence<'):-1].split(',')[0].strip()
        offset = _align(offset, 4) + 4
        return _cdr_items(inner, value, offset)
    if kind.endswith(']'):                          # fixed array: T[N], no count
        return _cdr_items(kind[:kind.index('[')], value, offset)
    if kind in _PRIMITIVE:
        size = _PRIMITIVE[kind]
        return _align(offset, size) + size
    if kind.startswith('string') or kind.startswith('wstring'):
        wide = kind.startswith('wstring')
        data = value.encode('utf-16-le' if wide else 'utf-8')
        return _align(offset, 4) + 4 + len(data) + (0 if wide else 1)
    return _cdr_end(value, offset)                  # a nested message


def _cdr_items(kind, values, offset):
    if kind in _PRIMITIVE:
        size = _PRIMITIVE[kind]
        return _align(offset, size) + size * len(values) if len(values) else offset
    for value in values:
        offset = _cdr_value(kind, value, offset)
    return offset
