"""Messages of a log decoded from their bytes many at a time (a byte table: one buffer, each
message's offset and length), without a Python object per message.

A publisher sends the same layout every time (frame ids, joint names, array lengths), so the
first message of a layout is parsed in Python (the nodes' JointState reader,
ros/joint_state_bytes.py, or the CDR of a stamped message below), and every message of that
layout is then checked against it and copied out by one compiled loop (kernels.gather_fixed):
its length, and the bytes that fix the layout, must equal the first's. A message that fits no
layout seen so far is parsed in turn. Plain CDR only, either byte order.
"""
from __future__ import annotations

import dataclasses
import struct

import numpy as np

from rbd_ros.ros.joint_state_bytes import (Rejected, check_encapsulation, joint_state_layout,
                                          layout_checks)

from . import kernels


@dataclasses.dataclass
class Layout:
    """One byte layout of a message type: what to compare and what to copy."""

    size: int                    # bytes of every message of this layout
    template: np.ndarray         # uint8: the first message's bytes, up to the last check
    checks: np.ndarray           # (k, 2) byte ranges that must equal the template's
    fields: np.ndarray           # (k, 4) offset in the message, in the row, bytes, element width
    swap: bool                   # big-endian: each element's bytes reversed
    dtype: np.dtype              # a row's fields (native little-endian)
    key: tuple                   # what the layout says (joint names and counts; frame ids)


def _layout(data, checks, fields, swap, dtype, key):
    end = max(stop for _, stop in checks)
    return Layout(size=len(data), template=np.frombuffer(data[:end], np.uint8).copy(),
                  checks=np.array(checks, dtype=np.int64).reshape(-1, 2),
                  fields=np.array(fields, dtype=np.int64).reshape(-1, 4), swap=swap,
                  dtype=np.dtype(dtype), key=key)


def joint_state(data):
    """The Layout of a serialized sensor_msgs/JointState; key (names, positions, velocities,
    efforts). Rejected when malformed."""
    lay = joint_state_layout(data)
    checks = layout_checks(lay)
    fields = [(4, 0, 8, 4)]
    dtype = [('sec', '<i4'), ('nanosec', '<u4')]
    row = 8
    for name, (offset, count) in zip(('position', 'velocity', 'effort'), lay.arrays):
        fields.append((offset, row, 8 * count, 8))
        dtype.append((name, '<f8', (count,)))
        row += 8 * count
    counts = tuple(count for _, count in lay.arrays)
    return _layout(data, checks, fields, lay.stamp.format[0] == '>', dtype,
                   (lay.names, *counts))


def stamped(data, strings, blocks):
    """The Layout of a message that opens with a std_msgs/Header (stamp, frame_id), then
    ``strings - 1`` more strings, then float64 fields: ``blocks`` are (first, count) float64
    runs counted from the first float64 (aligned to 8). key: the strings. Rejected when
    malformed."""
    e = check_encapsulation(data)
    u32 = struct.Struct(e + 'I')
    checks, names = [(0, 2)], []
    off = 12
    try:
        for _ in range(strings):
            off += (-(off - 4)) % 4
            length, = u32.unpack_from(data, off)
            if length > len(data) - off - 4:
                raise struct.error('a string runs past the end')
            checks.append((off, off + 4 + length))
            names.append(data[off + 4:off + 4 + length].rstrip(b'\0').decode('utf-8'))
            off += 4 + length
    except (struct.error, UnicodeDecodeError) as exc:
        raise Rejected('malformed', str(exc)) from None
    off += (-(off - 4)) % 8
    last = max(first + count for first, count in blocks)
    if off + 8 * last > len(data):
        raise Rejected('malformed', f'{len(data)} bytes: too short for its fields')
    fields = [(4, 0, 8, 4)]
    row = 8
    for first, count in blocks:
        fields.append((off + 8 * first, row, 8 * count, 8))
        row += 8 * count
    dtype = [('sec', '<i4'), ('nanosec', '<u4'), ('values', '<f8', ((row - 8) // 8,))]
    return _layout(data, checks, fields, e == '>', dtype, tuple(names))


def odometry(data):
    """nav_msgs/Odometry: values = pose position (3), orientation (4, x y z w), twist linear
    (3), angular (3); key (frame_id, child_frame_id)."""
    return stamped(data, 2, ((0, 7), (43, 6)))


def wrench_stamped(data):
    """geometry_msgs/WrenchStamped: values = force (3), torque (3); key (frame_id,)."""
    return stamped(data, 1, ((0, 6),))


class Reader:
    """Messages of one topic, batch by batch: each message's layout (an index into
    ``layouts``) and its row (``layout.dtype``, the rows of one batch in one uint8 matrix).

    ``parse(data)`` makes the Layout of a message (Rejected when malformed); ``accept(layout,
    index)`` may refuse a new layout (raising) given the index of its first message."""

    def __init__(self, parse, accept=None):
        self.parse, self.accept = parse, accept
        self.layouts = []

    def read(self, buf, offsets, sizes, first=0, out=None):
        """(which, rows) of the messages buf[offsets[i]:offsets[i] + sizes[i]]; ``first``: the
        number of the batch's first message in its topic (for the errors). ``out``: where the
        rows go, a callable given the first layout returning a (n, row bytes) uint8 array
        (C-contiguous)."""
        n = offsets.size
        which = np.full(n, -1, np.int64)
        rows = None
        make = out
        todo = None                 # None: every message
        k = 0
        while todo is None or todo.size:
            fresh = k == len(self.layouts)
            if fresh:
                i = 0 if todo is None else int(todo[0])
                data = buf[offsets[i]:offsets[i] + sizes[i]].tobytes()
                layout = self.parse(data)
                if self.accept is not None:
                    self.accept(layout, first + i)
                self.layouts.append(layout)
            layout = self.layouts[k]
            width = layout.dtype.itemsize
            if rows is None:
                rows = np.empty((n, width), np.uint8) if make is None else make(layout)
            elif rows.shape[1] != width:
                raise Rejected('malformed', 'messages of one topic with rows of other sizes')
            if todo is None:
                ok = np.empty(n, np.int64)
                kernels.gather_fixed(buf, offsets, sizes, layout.size, layout.template,
                                     layout.checks, layout.fields, layout.swap, rows, ok)
                hit = ok.astype(bool)
                which[hit] = k
                todo = np.flatnonzero(~hit)
            else:
                ok = np.empty(todo.size, np.int64)
                part = np.empty((todo.size, width), np.uint8)
                kernels.gather_fixed(buf, offsets[todo], sizes[todo], layout.size,
                                     layout.template, layout.checks, layout.fields,
                                     layout.swap, part, ok)
                hit = ok.astype(bool)
                rows[todo[hit]] = part[hit]
                which[todo[hit]] = k
                todo = todo[~hit]
            if fresh and not hit[0]:      # (cannot happen: a message fits its own layout)
                raise Rejected('malformed', 'a message that does not fit its own layout')
            k += 1
        return which, rows


def byte_table(messages):
    """(buf, offsets, sizes) of a list of bytes objects."""
    sizes = np.fromiter((len(m) for m in messages), np.int64, len(messages))
    offsets = np.zeros(len(messages), np.int64)
    np.cumsum(sizes[:-1], out=offsets[1:])
    return np.frombuffer(bytearray(b''.join(messages)), np.uint8), offsets, sizes


def stamps_ns(rows, dtype):
    """int64 ns of rows' header stamps."""
    view = rows.view(dtype).ravel() if rows.dtype != dtype else rows
    return view['sec'].astype(np.int64) * 1_000_000_000 + view['nanosec']
