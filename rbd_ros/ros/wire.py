"""The byte-level fast path of dynamics_node (1 kHz and more): joint_states read straight from
their serialized bytes, and outputs written into bytes serialized once per model. No Python
message is built per message in either direction.
"""
from __future__ import annotations

import math
import struct
from typing import Any, Sequence

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from rclpy.serialization import deserialize_message, serialize_message

from .cdr import cdr_length


class SerializedMessage:
    """A message published many times with the same names and only new numbers: serialized
    once by rclpy, then per message the stamp and the float64[] fields are written into a copy of
    those bytes, which ``Publisher.publish`` sends as they are (no Python-to-C conversion and no
    serialization per message).

    ``fields`` lists the float64[] fields to fill, as (message or sub-message, field name),
    each of ``length`` values; ``header`` is the std_msgs/Header whose stamp is set. Where they
    lie in the bytes is found by serializing the message with marker values in them, so the
    encoding is whatever rclpy produces: the bytes are identical to serializing the message with
    the same stamp and values (test_ros_conversions checks it).
    """

    _STAMP_MARK = (0x5EC0_7A11, 0x3AB_CDEF)

    def __init__(self, msg, header, fields: Sequence[tuple[Any, str]], length: int):
        header.stamp = TimeMsg(sec=self._STAMP_MARK[0], nanosec=self._STAMP_MARK[1])
        marks = []
        for k, (holder, name) in enumerate(fields):
            values = [math.ldexp(1.0 + (k * length + i + 1) / 4096.0, -1000)
                      for i in range(length)]
            setattr(holder, name, values)
            marks.append(values)
        # rclpy's serialized buffer can carry bytes after the message: cut at its CDR length
        data = bytes(serialize_message(msg))
        self.template = data[:cdr_length(msg)]
        if deserialize_message(self.template, type(msg)) != msg:
            raise RuntimeError('SerializedMessage: the CDR length of the message is wrong')
        # encapsulation: byte 1 is 1 for little-endian CDR, 0 for big-endian
        self._endian = '<' if self.template[1] & 1 else '>'
        self._stamp = struct.Struct(self._endian + 'iI')
        self._stamp_offset = self._find(self._stamp.pack(*self._STAMP_MARK))
        self._slices = []
        for values in marks:
            offset = self._find(struct.pack(f'{self._endian}{length}d', *values)) if length else 0
            self._slices.append(slice(offset, offset + 8 * length))
        self._dtype = np.dtype(np.float64).newbyteorder(self._endian)
        self.length = length

    def _find(self, pattern: bytes) -> int:
        offset = self.template.find(pattern)
        if offset < 0 or self.template.find(pattern, offset + 1) >= 0:
            raise RuntimeError('SerializedMessage: a field was not found exactly once')
        return offset

    def fill(self, sec: int, nanosec: int, *arrays: np.ndarray) -> bytes:
        """The serialized message stamped (sec, nanosec), with the arrays (in ``fields`` order,
        each of ``length`` float64 values)."""
        buf = bytearray(self.template)
        self._stamp.pack_into(buf, self._stamp_offset, sec, nanosec)
        for where, values in zip(self._slices, arrays):
            if type(values) is not np.ndarray or values.dtype != self._dtype:
                values = np.asarray(values, dtype=self._dtype)
            data = values.tobytes()
            if len(data) != 8 * self.length:   # (a bytearray slice assignment would resize)
                raise ValueError(f'expected {self.length} values, got {len(data) // 8}')
            buf[where] = data
        return bytes(buf)
