"""Joint states out of a rosbag2 log (a bag folder, or a bare .mcap or .db3 file), with the
`rosbags` library: no ROS install needed. The JointState bytes are read by the nodes' own
decoder (ros/joint_state_bytes.py), without building a message per sample.

A long log is read in segments of at most SEGMENT messages, each starting a little before the
previous one ended (``overlap``), so that a worker's memory does not grow with the log's
length and a filter's start-up can be cut from both sides of every segment.

What makes a log unusable raises :class:`LogError`, whose text names the log and the problem:
the analysis skips that log and goes on with the others.
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from rbd_ros.ros.joint_state_bytes import JointStateDecoder, Rejected

JOINT_STATE_TYPE = 'sensor_msgs/msg/JointState'
#: a step between stamps beyond this many median sample periods is a gap (--max-gap)
GAP_PERIODS = 5.0
#: messages per segment (about 200 MB of working arrays for a 7-joint arm)
SEGMENT = 200_000
#: messages decoded at once (one byte matrix when they share a layout)
BATCH = 4096


class LogError(Exception):
    """A log that cannot be analysed; str() names the log and the problem."""

    def __init__(self, path, problem):
        super().__init__(f'{path}: {problem}')
        self.path = str(path)
        self.problem = problem


@dataclasses.dataclass
class JointStateLog:
    """Joint states on one uniform time grid: ``t`` (s from the log's first sample),
    ``position``, ``velocity`` (None when the log has none) and ``effort``, one column per name
    of ``names`` (the log's joint order); ``stamps`` says where the times came from."""

    path: str
    names: tuple
    t: np.ndarray
    position: np.ndarray
    velocity: np.ndarray | None
    effort: np.ndarray
    stamps: str                  # 'header' or 'recording' (the header stamps were all zero)


def read_joint_states(path, topic='/joint_states', max_gap=None, progress=None):
    """The joint states on ``topic`` of the log at ``path``, whole (see :func:`read_segments`
    for what is checked)."""
    return next(iter(read_segments(path, topic, max_gap, progress, segment=None)))


def read_segments(path, topic='/joint_states', max_gap=None, progress=None, overlap=None,
                  segment=SEGMENT):
    """The joint states on ``topic`` of the log at ``path``, as :class:`JointStateLog` segments
    of at most ``segment`` new messages (None: the whole log in one), each also holding the
    previous one's last ``overlap(period)`` rows (period: of that segment's grid).

    Every message must carry the same joints with position and effort (velocity: all or none)
    and increasing stamps with no gap longer than ``max_gap`` seconds (None: GAP_PERIODS median
    periods); each segment's samples are interpolated onto a uniform grid at its median period.
    ``progress(n)`` is called every few thousand messages with the number read since the last
    call. LogError otherwise (possibly after segments were yielded)."""
    from rosbags.rosbag2 import Reader          # (an optional dependency: the `analyze` extra)

    if not os.path.exists(path):
        raise LogError(path, 'no such file or folder')
    try:
        reader = Reader(path)
        reader.open()
    except Exception as exc:     # noqa: BLE001 - sqlite3/mcap raise their own on corrupt files
        detail = _first_line(exc)
        if 'magic' in detail.lower():     # an MCAP file cut short: its end is missing
            raise LogError(path, f'the MCAP file is truncated or corrupt ({detail}; `mcap '
                                 'recover` rebuilds a recording that was cut short)') from None
        raise LogError(path, f'not a readable rosbag2 log ({detail})') from None
    try:
        connections = [c for c in reader.connections if c.topic == topic]
        if not connections:
            topics = sorted({c.topic for c in reader.connections})
            raise LogError(path, f'no topic {topic} (the log has '
                                 f'{", ".join(topics) if topics else "no topics"}; --topic '
                                 'names another)')
        types = {c.msgtype for c in connections}
        if types != {JOINT_STATE_TYPE}:
            raise LogError(path, f'{topic} carries {", ".join(sorted(types))}, not '
                                 f'{JOINT_STATE_TYPE}')
        formats = {getattr(c.ext, 'serialization_format', 'cdr') for c in connections}
        if formats != {'cdr'}:
            raise LogError(path, f'{topic} is serialized as {", ".join(sorted(formats))}, '
                                 'not cdr')
        count = sum(c.msgcount for c in connections)
        segments = _Segments(path, topic, max_gap, overlap, segment, count)
        recorded, messages = [], []
        for _, recorded_ns, data in reader.messages(connections=connections):
            recorded.append(recorded_ns)
            messages.append(data)
            if len(messages) == BATCH:
                yield from segments.add_many(recorded, messages)
                if progress is not None:
                    progress(len(messages))
                recorded, messages = [], []
        if messages:
            yield from segments.add_many(recorded, messages)
            if progress is not None:
                progress(len(messages))
        last = segments.finish()
        if last is not None:
            yield last
    except LogError:
        raise
    except Exception as exc:     # noqa: BLE001 - a truncated or corrupt file, found mid-read
        raise LogError(path, f'unreadable after its start, corrupt or truncated '
                             f'({type(exc).__name__}: {_first_line(exc)})') from None
    finally:
        try:
            reader.close()
        except Exception:    # noqa: BLE001 - closing a corrupt file may fail too
            pass


class _Segments:
    """Messages in, checked; a segment out each time ``segment`` new messages are in."""

    def __init__(self, path, topic, max_gap, overlap, segment, count):
        self.path, self.topic, self.max_gap = path, topic, max_gap
        self.overlap, self.segment = overlap, segment       # segment None: never cut
        self.first_rows = max(1, count if segment is None else min(segment, count))
        self.decoder = JointStateDecoder()
        self.names = None
        self.n = 0                # rows in the buffers
        self.new = 0              # of which not yet in a segment
        self.index = 0            # messages so far (for the messages' numbers in errors)
        self.t0 = None            # the log's first stamp, ns
        self.stamps = None        # 'header' or 'recording', decided by the first segment
        self.segments = 0

    def _allocate(self, rows, velocity):
        nj = len(self.names)
        self.rows = rows
        self.stamp = np.empty(rows, dtype=np.int64)
        self.recorded = np.empty(rows, dtype=np.int64)
        self.P, self.E = np.empty((rows, nj)), np.empty((rows, nj))
        self.V = np.empty((rows, nj)) if velocity else None

    def add_many(self, recorded, messages):
        """Messages in (their recording times, their bytes); the segments they complete out."""
        pieces = []
        i = 0
        while i < len(messages):
            room = len(messages) - i if self.segment is None else self.segment - self.new
            try:
                count, sec, nanosec, names, p, v, e = self.decoder.decode_many(
                    messages[i:i + room])
            except Rejected as exc:
                raise LogError(self.path, f'{self.topic} message {self.index}: '
                                          f'{exc.detail or exc}') from None
            self._check(names, p.shape[1], v.shape[1], e.shape[1])
            if self.n + count > self.rows:        # more messages than the metadata said
                self._grow(max(2 * self.rows, self.n + count))
            k = slice(self.n, self.n + count)
            self.stamp[k] = sec.astype(np.int64) * 1_000_000_000 + nanosec
            self.recorded[k] = recorded[i:i + count]
            self.P[k], self.E[k] = p, e
            if self.V is not None:
                self.V[k] = v
            self.n += count
            self.new += count
            self.index += count
            i += count
            if self.new == self.segment:
                pieces.append(self._cut())
        return pieces

    def _check(self, names, n_p, n_v, n_e):
        """The layout of the next messages against the first's."""
        n, topic = self.index, self.topic
        if names is not self.names:            # the layout changed (or the first message)
            if self.names is None:
                self.names = names
                self._allocate(self.first_rows, n_v > 0)
            elif names != self.names:
                raise LogError(self.path, f'{topic} message {n} names other joints '
                                          f'({", ".join(names)}) than the first '
                                          f'({", ".join(self.names)})')
        nj = len(self.names)
        if n_p != nj or n_e != nj or n_v != (0 if self.V is None else nj):
            what = ('no effort (the analysis needs the measured torques)' if n_e == 0 else
                    'no position' if n_p == 0 else
                    f'{n_p} positions, {n_v} velocities, {n_e} efforts for {nj} joints')
            raise LogError(self.path, f'{topic} message {n}: {what}')

    def _grow(self, rows):
        old = (self.stamp, self.recorded, self.P, self.E, self.V)
        n = self.n
        self._allocate(rows, self.V is not None)
        for new, o in zip((self.stamp, self.recorded, self.P, self.E, self.V), old):
            if new is not None:
                new[:n] = o[:n]

    def _cut(self):
        """The buffered rows as a segment; keep the overlap's rows for the next one."""
        piece, period = self._segment(self.n)
        keep = min(self.n, self.overlap(period)) if self.overlap else 0
        if keep + self.segment > self.rows:
            self._grow(keep + self.segment)
        for a in (self.stamp, self.recorded, self.P, self.E, self.V):
            if a is not None and keep:
                a[:keep] = a[self.n - keep:self.n]
        self.n, self.new = keep, 0
        return piece

    def finish(self):
        """The last segment (the whole log when it never filled one)."""
        if self.index == 0:
            raise LogError(self.path, f'{self.topic} has no messages')
        if self.segments == 0 and self.index < 20:
            raise LogError(self.path, f'{self.topic} has {self.index} messages: too few to '
                                      'differentiate')
        if self.new == 0:
            return None
        return self._segment(self.n)[0]

    def _segment(self, n):
        """(JointStateLog of rows 0..n on a uniform grid, its period)."""
        first = self.index - n                # the message number of row 0
        stamp = self.stamp[:n]
        if self.stamps is None:
            # a publisher that never stamps: the recording times
            self.stamps = 'header' if np.any(stamp) else 'recording'
        ns = stamp if self.stamps == 'header' else self.recorded[:n]
        if self.t0 is None:
            self.t0 = int(ns[0])
        self.segments += 1
        t = (ns - self.t0) * 1e-9
        steps = np.diff(t)
        bad = np.flatnonzero(steps <= 0.0)
        if bad.size:
            k = int(bad[0]) + 1
            raise LogError(self.path, f'{self.topic} stamps do not increase: message '
                                      f'{first + k} at {t[k]:.6f} s after message '
                                      f'{first + k - 1} at {t[k - 1]:.6f} s')
        period = float(np.median(steps)) if steps.size else 1.0
        limit = GAP_PERIODS * period if self.max_gap is None else float(self.max_gap)
        gaps = np.flatnonzero(steps > limit)
        if gaps.size:
            k = int(gaps[0])
            raise LogError(self.path, f'{self.topic} has a gap of {steps[k]:.4g} s at '
                                      f'{t[k]:.3f} s (the median period is {period:.4g} s; '
                                      f'longer than {limit:.4g} s; --max-gap allows longer '
                                      'ones)')
        # the grid's period: the segment's length over its number of periods, each step
        # counted as the whole number of median periods nearest to it (a lost message counts
        # two). The median itself is off by the stamps' quantisation (float seconds: 1e-4),
        # and that error would scale every derivative.
        count = max(int(np.sum(np.maximum(np.rint(steps / period), 1.0))), 1)
        grid = np.linspace(t[0], t[-1], count + 1)
        piece = JointStateLog(path=str(self.path), names=tuple(self.names), t=grid,
                              position=_resample(grid, t, self.P[:n]),
                              velocity=None if self.V is None else _resample(grid, t,
                                                                             self.V[:n]),
                              effort=_resample(grid, t, self.E[:n]), stamps=self.stamps)
        return piece, (t[-1] - t[0]) / count


def _resample(grid, t, values):
    """Each column linearly interpolated at ``grid`` (the stamps' jitter removed: the filters
    and the differentiation assume a uniform grid)."""
    if grid.size == t.size and np.allclose(grid, t, rtol=0.0, atol=1e-12):
        return np.array(values)
    out = np.empty((grid.size, values.shape[1]))
    for j in range(values.shape[1]):
        out[:, j] = np.interp(grid, t, values[:, j])
    return out


def _first_line(exc):
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
