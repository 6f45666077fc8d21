"""sensor_msgs/JointState read from its serialized bytes (plain CDR), without rclpy: the nodes'
fast path (dynamics_node, frames_node) and the offline analysis of rosbag2 logs share it.
Importing this module never imports rclpy or a message package.

A message is parsed in Python once per layout (``JointStateDecoder``: frame_id, names, array
lengths); the messages after it that repeat the layout are checked against it and copied by
compiled code: many at a time for a log (rbd_ros/analysis/kernels.py, gather_fixed), one at a
time into a node's joint-state merger (``merge_joint_state``, ros/joint_states.py).
"""
from __future__ import annotations

import array
import dataclasses
import functools
import struct

import numpy as np

from rbd_ros.dynamics._jit import compile_lock, kernel


class Rejected(Exception):
    """A message that is rejected; ``reason`` is a short key counted in diagnostics."""

    def __init__(self, reason: str, detail: str = ''):
        super().__init__(f'{reason}: {detail}' if detail else reason)
        self.reason = reason
        self.detail = detail


ENCAPSULATIONS = {0x02: 'PL_CDR_BE', 0x03: 'PL_CDR_LE', 0x06: 'CDR2_BE (XCDR2)',
                  0x07: 'CDR2_LE (XCDR2)', 0x08: 'D_CDR2_BE (XCDR2)', 0x09: 'D_CDR2_LE (XCDR2)',
                  0x0a: 'PL_CDR2_BE (XCDR2)', 0x0b: 'PL_CDR2_LE (XCDR2)'}


def check_encapsulation(data) -> str:
    """'<' or '>' for plain CDR's two byte orders; Rejected (malformed) for anything else,
    naming what it is."""
    if len(data) < 4:
        raise Rejected('malformed', f'{len(data)} bytes: shorter than the 4-byte CDR header')
    if data[0] == 0 and data[1] in (0, 1):
        return '<' if data[1] == 1 else '>'
    kind = ENCAPSULATIONS.get(data[1]) if data[0] == 0 else None
    raise Rejected('malformed', f'encapsulation {data[0]:02x} {data[1]:02x}'
                   f'{f" ({kind})" if kind else ""} is not read: ROS 2 rmw implementations send '
                   'plain CDR (00 00 / 00 01)')



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

    @property
    def layout(self) -> '_JointStateLayout | None':
        """The layout of the last message decoded (None before the first)."""
        return self._layout

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

    def decode_many(self, messages):
        """Many messages at once (a log's): (count, sec, nanosec, names, position, velocity,
        effort), the stamps (n,) arrays and the values (n, len) arrays, for the longest run of
        ``messages`` from the first that shares the first one's layout (``count``; the caller
        passes the rest again). Messages of one length whose layout bytes equal the first's
        are read as one byte matrix: no Python work per message. Rejected as ``decode``,
        for the first message."""
        first = messages[0]
        self.decode(first)
        lay = self._layout
        size = len(first)
        n = len(messages)
        same = 1
        while same < n and len(messages[same]) == size:
            same += 1
        rows = np.frombuffer(b''.join(messages[:same]), np.uint8).reshape(same, size)
        fixed = _bytes_of(lay.fixed, lay.fixed_end - 12)
        mask = _bytes_of(lay.mask, lay.fixed_end - 12)
        vc, ec = lay.velocity_count, lay.effort_count
        ok = ((rows[:, :2] == np.frombuffer(lay.encapsulation, np.uint8)).all(1)
              & ((rows[:, 12:lay.fixed_end] & mask) == fixed).all(1)
              & (rows[:, vc:vc + 4] == np.frombuffer(lay.velocity_count_bytes, np.uint8)).all(1)
              & (rows[:, ec:ec + 4] == np.frombuffer(lay.effort_count_bytes, np.uint8)).all(1))
        count = same if ok.all() else int(np.argmin(ok))      # (ok[0] holds: decoded above)
        rows = rows[:count]
        e = lay.stamp.format[0]
        sec = rows[:, 4:8].copy().view(e + 'i4').ravel()
        nanosec = rows[:, 8:12].copy().view(e + 'u4').ravel()
        values = [rows[:, off:off + 8 * length].copy().view(lay.dtype) if length else
                  np.zeros((count, 0)) for off, length in lay.arrays]
        return (count, sec, nanosec, lay.names, *values)

    @staticmethod
    def _parse(data: bytes) -> '_JointStateLayout':
        e = check_encapsulation(data)
        u32 = struct.Struct(e + 'I')

        # alignment gaps (their bytes are undefined), as start, stop, start, stop, ...: a flat
        # array, not a tuple per gap (a 10,000-name message made 10,000 tuples for the garbage
        # collector to trace; its collections then paused the node for up to 8 ms)
        pads = array.array('q')

        def align(off, n):   # XCDR1 aligns relative to the byte after the encapsulation
            new = off + (-(off - 4)) % n
            if new != off:
                pads.append(off)
                pads.append(new)
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
        for k in range(0, len(pads), 2):
            start, stop = pads[k], pads[k + 1]
            if stop <= fixed_end:
                mask[start - 12:stop - 12] = bytes(stop - start)
        mask = int.from_bytes(mask, 'little')
        return _JointStateLayout(
            end=off, encapsulation=data[:2], mask=mask,
            fixed=int.from_bytes(data[12:fixed_end], 'little') & mask,
            fixed_end=fixed_end, velocity_count=vc, velocity_count_bytes=data[vc:vc + 4],
            effort_count=ec, effort_count_bytes=data[ec:ec + 4], names=tuple(names),
            arrays=tuple(arrays), stamp=struct.Struct(e + 'iI'), dtype=np.dtype(e + 'f8'))


def joint_state_layout(data: bytes) -> '_JointStateLayout':
    """Where the stamp, names and arrays of this serialized JointState are, and which bytes fix
    that layout (the offline analysis reads a log's messages of one layout with a compiled
    loop, rbd_ros/analysis/decode.py). Rejected (malformed) as ``JointStateDecoder.decode``."""
    return JointStateDecoder._parse(data)


def layout_checks(lay: '_JointStateLayout') -> list[tuple[int, int]]:
    """The byte ranges (start, stop) that fix a JointState's layout: the encapsulation, the
    frame_id, names and position count (their alignment gaps left out: those bytes are
    undefined), and the velocity and effort counts. Equal bytes there, and an equal length,
    mean an equal layout."""
    kept = np.frombuffer(lay.mask.to_bytes(lay.fixed_end - 12, 'little'), np.uint8) != 0
    # the runs of kept bytes: where the mask turns on and off (a vector op, not a loop over
    # bytes: a message of 500 names has some 20,000)
    edges = np.flatnonzero(np.diff(np.concatenate(([False], kept, [False])).astype(np.int8)))
    runs = [(12 + int(start), 12 + int(stop)) for start, stop in zip(edges[::2], edges[1::2])]
    return [(0, 2)] + runs + [(lay.velocity_count, lay.velocity_count + 4),
                              (lay.effort_count, lay.effort_count + 4)]


@kernel
def layout_differs(buf, at, template, checks) -> bool:
    """Whether the message at buf[at:] differs from ``template`` in any byte range of
    ``checks`` (rows: start, stop; the caller has checked the message's length). The
    analysis's gather_fixed has the same loop inline: numba keys a kernel's cache on its own
    file, so a kernel of one package never calls one of another (a change here would leave
    the other's cached machine code stale)."""
    differ = 0
    for c in range(checks.shape[0]):
        for k in range(checks[c, 0], checks[c, 1]):   # (no early exit: vectorised)
            differ |= buf[at + k] ^ template[k]
    return differ != 0


#: merge_joint_state's status
MERGED, MERGED_CLOCK_RESET, OTHER_LAYOUT, NON_FINITE, TIME_BACKWARDS = 0, 1, 2, 3, 4


@kernel
def _u32(data, at, swap):
    value = 0
    for k in range(4):
        value |= np.int64(data[at + (3 - k if swap else k)]) << (8 * k)
    return value


@kernel
def merge_joint_state(data, size, template, checks, arrays, swap, last_ns, reset_ns, src, slots,
                      raw, values, known):
    """One serialized JointState whose layout was seen before, into a merger's ``values``
    (rows: position, velocity, effort, in model order) and ``known``: what
    JointStateMerger.update_values checks, in its order, all or nothing. The message must have
    ``size`` bytes and equal ``template`` in the ranges of ``checks`` (else OTHER_LAYOUT:
    nothing read); ``arrays`` rows: (offset, count) of position, velocity and effort, each
    count 0 or the message's number of names m (``raw`` has room for 3 m float64); the value
    at ``src[k]`` of each array goes to the merger's slot ``slots[k]`` (the merge plan of its
    names: any order, the merger's joints or some of them, names it skips); ``swap``: a
    big-endian message. NaN or inf anywhere in the arrays: NON_FINITE; a stamp older than
    ``last_ns`` by at most ``reset_ns``: TIME_BACKWARDS (nothing written); older by more:
    MERGED_CLOCK_RESET. Returns (status, sec, nanosec)."""
    m = raw.shape[0] // 24
    if len(data) != size or layout_differs(data, 0, template, checks):
        return OTHER_LAYOUT, 0, 0
    flip = 7 if swap else 0                  # (b ^ 7 reverses each 8-byte element)
    for f in range(3):
        at = arrays[f, 0]
        for b in range(8 * arrays[f, 1]):
            raw[8 * m * f + b] = data[at + (b ^ flip)]
    x = raw.view(np.float64)
    for f in range(3):
        if arrays[f, 1]:
            for i in range(m * f, m * f + m):
                if not np.isfinite(x[i]):
                    return NON_FINITE, 0, 0
    sec = _u32(data, 4, swap)
    if sec >= 2 ** 31:                       # (int32)
        sec -= 2 ** 32
    nanosec = _u32(data, 8, swap)
    t = sec * 1_000_000_000 + nanosec
    status = MERGED
    if t < last_ns:
        if last_ns - t <= reset_ns:
            return TIME_BACKWARDS, sec, nanosec
        status = MERGED_CLOCK_RESET
    for f in range(3):
        if arrays[f, 1]:
            for k in range(slots.shape[0]):
                values[f, slots[k]] = x[m * f + src[k]]
                known[f, slots[k]] = True
    return status, sec, nanosec


@functools.cache
def warm_up() -> None:
    """Compile (or load from numba's cache) ``merge_joint_state`` for the types a merger passes
    it: once per process, before a node's first message (its first call would make that
    message late by the load, or a compile)."""
    with compile_lock():
        none = np.zeros(0, np.int64)
        merge_joint_state(bytes(12), 0, np.zeros(0, np.uint8), np.zeros((0, 2), np.int64),
                          np.zeros((3, 2), np.int64), False, 0, 0, none, none,
                          np.zeros(0, np.uint8), np.zeros((3, 0)), np.zeros((3, 0), np.bool_))


def _bytes_of(value: int, length: int) -> np.ndarray:
    return np.frombuffer(value.to_bytes(length, 'little'), np.uint8)


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
