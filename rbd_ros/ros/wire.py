"""The byte-level fast path of dynamics_node (1 kHz and more): joint_states read straight from
their serialized bytes, and outputs written into bytes serialized once per model. No Python
message is built per message in either direction.
"""
from __future__ import annotations

import dataclasses
import math
import struct
from typing import Any, Sequence

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from rclpy.serialization import deserialize_message, serialize_message

from .cdr import cdr_length, check_encapsulation
from .joint_states import Rejected


class JointStateDecoder:
    """sensor_msgs/JointState from its serialized bytes (a ``raw=True`` subscription) without
    building a Python message: ``decode(data)`` returns (sec, nanosec, names, position,
    velocity, effort), the arrays float64 views of the bytes.

    Plain CDR (XCDR1, either byte order: what rmw implementations send for ROS messages) is read
    here, every offset checked against the length. A publisher sends the same frame_id, names
    and array lengths every time, so the bytes that fix the layout are compared with the
    previous message's and, when equal, the stamp and the arrays are read at the offsets found
    then. Any other encapsulation, and truncated or malformed bytes, raise :class:`Rejected`
    (``malformed``): nothing is handed to the rmw's deserializer, which bytes can crash
    (cdr.py).
    """

    def __init__(self):
        self._layout: _JointStateLayout | None = None

    def decode(self, data: bytes):
        lay = self._layout
        if lay is None or len(data) < lay.end or data[:2] != lay.encapsulation or \
                (int.from_bytes(data[12:lay.fixed_end], 'little') & lay.mask) != lay.fixed or \
                data[lay.velocity_count:lay.velocity_count + 4] != lay.velocity_count_bytes or \
                data[lay.effort_count:lay.effort_count + 4] != lay.effort_count_bytes:
            lay = self._layout = self._parse(data)
        sec, nanosec = lay.stamp.unpack_from(data, 4)
        (p, np_), (v, nv), (e, ne) = lay.arrays
        dt = lay.dtype
        return (sec, nanosec, lay.names,
                np.frombuffer(data, dt, np_, p) if np_ else _NO_VALUES,
                np.frombuffer(data, dt, nv, v) if nv else _NO_VALUES,
                np.frombuffer(data, dt, ne, e) if ne else _NO_VALUES)

    @staticmethod
    def _parse(data: bytes) -> '_JointStateLayout':
        e = check_encapsulation(data)
        u32 = struct.Struct(e + 'I')

        pads = []   # alignment gaps: their bytes are undefined

        def align(off, n):   # XCDR1 aligns relative to the byte after the encapsulation
            new = off + (-(off - 4)) % n
            pads.append((off, new))
            return new

        def string(off, decode=True):
            length, = u32.unpack_from(data, off)
            if length > len(data) - off - 4:
                raise struct.error('string past the end')
            if not decode:     # (a frame_id: not needed, however long)
                return None, off + 4 + length
            return data[off + 4:off + 4 + length].rstrip(b'\0').decode('utf-8'), off + 4 + length

        try:
            _, off = string(12, False)               # header.stamp (8 bytes), header.frame_id
            off = align(off, 4)
            count, = u32.unpack_from(data, off)
            off += 4
            names = []
            for _ in range(count):
                name, off = string(align(off, 4))
                names.append(name)
            arrays, count_at = [], []
            for _ in range(3):                       # position, velocity, effort
                off = align(off, 4)
                count, = u32.unpack_from(data, off)
                count_at.append(off)
                off += 4
                if count:
                    off = align(off, 8)
                arrays.append((off, count))
                off += 8 * count
            if off > len(data):
                raise struct.error('arrays past the end')
        except (struct.error, UnicodeDecodeError) as exc:
            raise Rejected('malformed', f'JointState bytes: {exc}') from None
        fixed_end, vc, ec = count_at[0] + 4, count_at[1], count_at[2]
        mask = bytearray(b'\xff' * (fixed_end - 12))
        for start, stop in pads:
            if stop <= fixed_end:
                mask[start - 12:stop - 12] = bytes(stop - start)
        mask = int.from_bytes(mask, 'little')
        return _JointStateLayout(
            end=off, encapsulation=data[:2], mask=mask,
            fixed=int.from_bytes(data[12:fixed_end], 'little') & mask,
            fixed_end=fixed_end, velocity_count=vc, velocity_count_bytes=data[vc:vc + 4],
            effort_count=ec, effort_count_bytes=data[ec:ec + 4], names=tuple(names),
            arrays=tuple(arrays), stamp=struct.Struct(e + 'iI'), dtype=np.dtype(e + 'f8'))


_NO_VALUES = np.zeros(0)
_NO_VALUES.flags.writeable = False


@dataclasses.dataclass(frozen=True)
class _JointStateLayout:
    """Where things are in a serialized JointState: equal bytes at ``encapsulation``, at
    ``fixed`` (but for alignment gaps) and at the two counts mean an equal layout."""

    end: int                 # where the effort values end
    encapsulation: bytes
    mask: int                # bytes 12 .. fixed_end (frame_id, names, position count) as an
    fixed: int               # int, alignment gaps masked out; and their value
    fixed_end: int
    velocity_count: int      # offset of the velocity count ...
    velocity_count_bytes: bytes   # ... and its bytes
    effort_count: int
    effort_count_bytes: bytes
    names: tuple[str, ...]
    arrays: tuple            # (offset, count) of position, velocity, effort
    stamp: struct.Struct
    dtype: np.dtype


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
