"""Joint states (and a floating base's state, and contact wrenches) out of a rosbag2 log (a bag
folder, or a bare .mcap or .db3 file). No ROS install needed: rosbags opens the log and checks
it; MCAP files are read chunk by chunk by mcap.py and every other storage by rosbags' reader;
the messages are decoded from their bytes many at a time (decode.py, with the nodes' JointState
reader), without building a message per sample.

A long log is read in segments of at most SEGMENT joint-state messages, each starting a little
before the previous one ended (``overlap``), so that a worker's memory does not grow with the
log's length and a filter's start-up can be cut from both sides of every segment. With a base
topic (a floating base: nav_msgs/Odometry) and a contact topic (geometry_msgs/WrenchStamped),
a segment is completed once the log has been read AUX_LAG_S past its last joint state, so that
the messages of those topics stamped within it are in.

What makes a log unusable raises :class:`LogError`, whose text names the log and the problem:
the analysis skips that log and goes on with the others. What is left out of a usable log is
counted (read_segments's ``dropped``), never lost silently.
"""
from __future__ import annotations

import dataclasses
import os
import time

import numpy as np

from rbd_ros.ros.joint_state_bytes import Rejected

from . import decode

JOINT_STATE_TYPE = 'sensor_msgs/msg/JointState'
ODOMETRY_TYPE = 'nav_msgs/msg/Odometry'
WRENCH_TYPE = 'geometry_msgs/msg/WrenchStamped'
#: a step between stamps beyond this many median sample periods is a gap (--max-gap)
GAP_PERIODS = 5.0
#: joint-state messages per segment (about 200 MB of working arrays for a 7-joint arm)
SEGMENT = 200_000
#: messages decoded at once by the reader of a storage other than MCAP (an MCAP chunk is one
#: batch)
BATCH = 4096
#: seconds of recording read past a segment's last joint state before the base states and
#: contact wrenches stamped within it are taken as all in
AUX_LAG_S = 1.0
#: what a log's ``dropped`` counts (docs/analysis.md, "What is left out")
DROPPED = ('filter_edges', 'missing_messages', 'duplicate_messages', 'no_base_state',
           'short_tail', 'unmatched_contact_messages')


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
    of ``names`` (the log's joint order); ``stamps`` says where the times came from.

    With a base topic, ``base`` (n, 13): the base's position (3) and orientation quaternion (4,
    x y z w) in the world, and its twist (6, [v; w]) in its own frame, on the same grid. With a
    contact topic, ``contacts`` (n, len(contact_links), 6): the wrench on each link (its frame,
    about its origin), zero where the link has no message. One grid for a whole log: ``t[k]``
    is its sample number ``first_sample + k``, at that many periods from the first stamp."""

    path: str
    names: tuple
    t: np.ndarray
    position: np.ndarray
    velocity: np.ndarray | None
    effort: np.ndarray
    stamps: str                  # 'header' or 'recording' (the header stamps were all zero)
    base: np.ndarray | None = None
    contacts: np.ndarray | None = None
    contact_links: tuple = ()
    first_sample: int = 0        # t[0] is the log's grid sample number first_sample


def read_joint_states(path, topic='/joint_states', max_gap=None, progress=None,
                      base_topic=None, contact_topic=None):
    """The joint states on ``topic`` of the log at ``path``, whole (see :func:`read_segments`
    for what is checked)."""
    return next(iter(read_segments(path, topic, max_gap, progress, segment=None,
                                   base_topic=base_topic, contact_topic=contact_topic)))


def read_segments(path, topic='/joint_states', max_gap=None, progress=None, overlap=None,
                  segment=SEGMENT, base_topic=None, contact_topic=None, timings=None,
                  dropped=None):
    """The joint states on ``topic`` of the log at ``path``, as :class:`JointStateLog` segments
    of at most ``segment`` new messages (None: the whole log in one), each also holding the
    previous one's last ``overlap(period)`` rows (period: of that segment's grid).

    Every message must carry the same joints with position and effort (velocity: all or none)
    and increasing stamps with no gap longer than ``max_gap`` seconds (None: GAP_PERIODS median
    periods); each segment's samples are interpolated onto a uniform grid at its median period.
    ``base_topic`` (nav_msgs/Odometry) must then cover the joint states (samples outside it are
    dropped, and counted) with no gap; ``contact_topic`` (geometry_msgs/WrenchStamped) is
    optional in the log. ``progress(n)`` is called every few thousand joint states with the
    number read since the last call. ``timings`` (a dict) gets seconds added under 'read',
    'decode' and 'resample', ``dropped`` (a dict) the samples and messages left out (DROPPED:
    missing_messages, no_base_state, unmatched_contact_messages). LogError otherwise
    (possibly after segments were yielded)."""
    from rosbags.rosbag2 import Reader          # (an optional dependency: the `analyze` extra)

    timings = {} if timings is None else timings
    for key in ('read', 'decode', 'resample'):
        timings.setdefault(key, 0.0)
    dropped = {} if dropped is None else dropped
    for key in DROPPED:
        dropped.setdefault(key, 0)
    started = time.perf_counter()
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
        topics = {'joints': (topic, JOINT_STATE_TYPE, '--topic')}
        if base_topic:
            topics['base'] = (base_topic, ODOMETRY_TYPE, '--base-topic')
        if contact_topic:
            topics['contacts'] = (contact_topic, WRENCH_TYPE, '--contact-topic')
        connections = {}
        for key, (name, msgtype, option) in topics.items():
            found = [c for c in reader.connections if c.topic == name]
            if not found:
                if key == 'contacts':         # a log without contacts: none touched anything
                    continue
                have = sorted({c.topic for c in reader.connections})
                raise LogError(path, f'no topic {name} (the log has '
                                     f'{", ".join(have) if have else "no topics"}; {option} '
                                     'names another)')
            types = {c.msgtype for c in found}
            if types != {msgtype}:
                raise LogError(path, f'{name} carries {", ".join(sorted(types))}, not {msgtype}')
            formats = {getattr(c.ext, 'serialization_format', 'cdr') for c in found}
            if formats != {'cdr'}:
                raise LogError(path, f'{name} is serialized as {", ".join(sorted(formats))}, '
                                     'not cdr')
            connections[key] = found
        count = sum(c.msgcount for c in connections['joints'])
        log = _Log(path, topics, max_gap, overlap, segment, count, timings, dropped)
        timings['read'] += time.perf_counter() - started
        for key, recorded, buf, offsets, sizes in _batches(path, reader, connections, timings):
            done = log.add(key, recorded, buf, offsets, sizes)
            if key == 'joints' and progress is not None:
                progress(offsets.size)
            yield from done
        yield from log.finish()
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


# ---- the messages' bytes, batch by batch ---------------------------------------------------
def _batches(path, reader, connections, timings):
    """(key, recording times (ns), buf, offsets, sizes) batches of the topics' messages, each
    topic's in log-time order: chunk by chunk from MCAP files (mcap.py), else through rosbags'
    reader in BATCH messages."""
    files = _mcap_files(path)
    if files is not None:
        from . import mcap
        opened = []
        try:
            for name in files:
                opened.append(mcap.McapFile(name))
        except mcap.Unsupported:
            files = None
        except mcap.Corrupt as exc:
            raise LogError(path, f'the MCAP file is truncated or corrupt ({exc}; `mcap '
                                 'recover` rebuilds a recording that was cut short)') from None
        finally:
            if files is None:
                for f in opened:
                    f.close()
    if files is not None:
        try:
            for f in opened:
                keys = {cid: key for key, found in connections.items()
                        for cid in f.channel_ids(found[0].topic)}
                started = time.perf_counter()
                try:
                    for buf, channel, recorded, at, size in f.chunks(list(keys)):
                        for cid, key in keys.items():
                            mine = channel == cid if len(keys) > 1 else slice(None)
                            if len(keys) == 1 or np.any(mine):
                                timings['read'] += time.perf_counter() - started
                                yield key, recorded[mine], buf, at[mine], size[mine]
                                started = time.perf_counter()
                except mcap.Corrupt as exc:
                    raise LogError(path, f'the MCAP file is truncated or corrupt ({exc}; `mcap '
                                         'recover` rebuilds a recording that was cut short)') \
                        from None
                timings['read'] += time.perf_counter() - started
        finally:
            for f in opened:
                f.close()
        return
    key_of = {c.id: key for key, found in connections.items() for c in found}
    pending = {key: ([], []) for key in connections}
    started = time.perf_counter()
    for connection, recorded_ns, data in reader.messages(
            connections=[c for found in connections.values() for c in found]):
        key = key_of[connection.id]
        times, messages = pending[key]
        times.append(recorded_ns)
        messages.append(data)
        if len(messages) == BATCH:
            timings['read'] += time.perf_counter() - started
            yield (key, np.array(times, np.int64), *decode.byte_table(messages))
            pending[key] = ([], [])
            started = time.perf_counter()
    for key, (times, messages) in pending.items():
        if messages:
            timings['read'] += time.perf_counter() - started
            yield (key, np.array(times, np.int64), *decode.byte_table(messages))
            started = time.perf_counter()
    timings['read'] += time.perf_counter() - started


def _mcap_files(path):
    """The MCAP files of a log this reader can read itself, in order; None for any other
    (sqlite3, file- or message-compressed bags: rosbags reads those)."""
    if os.path.isfile(path):
        return [path] if str(path).endswith('.mcap') else None
    import yaml
    try:
        with open(os.path.join(path, 'metadata.yaml'), encoding='utf-8') as f:
            info = yaml.safe_load(f)['rosbag2_bagfile_information']
        if info.get('storage_identifier') != 'mcap' or info.get('compression_mode') or \
                info.get('compression_format'):
            return None
        return [os.path.join(path, os.path.basename(p)) for p in info['relative_file_paths']]
    except Exception:    # noqa: BLE001 - rosbags opened it: let rosbags read it
        return None


# ---- messages to segments ------------------------------------------------------------------
class _Log:
    """Messages in, checked; a segment out each time ``segment`` new joint states are in (and
    the base states and contact wrenches of its time have been read)."""

    def __init__(self, path, topics, max_gap, overlap, segment, count, timings, dropped):
        self.path, self.topics, self.max_gap = path, topics, max_gap
        self.overlap, self.segment = overlap, segment       # segment None: never cut
        self.timings = timings
        self.topic = topics['joints'][0]
        self.first_rows = max(1, count if segment is None else min(segment, count))
        self.joints = decode.Reader(decode.joint_state, self._accept_joint_layout)
        self.names = None
        self.n = 0                # rows in the buffers
        self.new = 0              # of which not yet in a segment
        self.index = 0            # joint states so far (for the messages' numbers in errors)
        self.t0 = None            # the log's first stamp, ns
        self.stamps = None        # 'header' or 'recording', decided by the first segment
        self.segments = 0
        self.period = None        # the grid's period (s), from the first segment
        self.pending = []         # segments waiting for the base states and contacts of their time
        self.last_recorded = None  # the latest recording time read (ns)
        self.base = _Stream(topics['base'][0], 13) if 'base' in topics else None
        self.contacts = _Stream(topics['contacts'][0], 6) if 'contacts' in topics else None
        self.dropped = dropped

    # -- joint states -----------------------------------------------------------------------
    def _accept_joint_layout(self, layout, index):
        names, n_p, n_v, n_e = layout.key
        topic = self.topic
        if self.names is None:
            self.names = names
            self.dtype = layout.dtype
            self._allocate(self.first_rows)
        elif names != self.names:
            raise LogError(self.path, f'{topic} message {index} names other joints '
                                      f'({", ".join(names)}) than the first '
                                      f'({", ".join(self.names)})')
        nj = len(self.names)
        if n_p != nj or n_e != nj or n_v != (0 if self.V is None else nj):
            what = ('no effort (the analysis needs the measured torques)' if n_e == 0 else
                    'no position' if n_p == 0 else
                    f'{n_p} positions, {n_v} velocities, {n_e} efforts for {nj} joints')
            raise LogError(self.path, f'{topic} message {index}: {what}')

    def _allocate(self, rows):
        """Buffers for ``rows`` joint states: their rows as decoded (stamp, positions,
        velocities, efforts: the first layout's dtype, which every later one shares) and their
        recording times."""
        self.rows = rows
        self.table = np.empty(rows, dtype=self.dtype)
        self.recorded = np.empty(rows, dtype=np.int64)

    @property
    def V(self):
        return self.table['velocity'] if self.dtype['velocity'].shape[0] else None

    def add(self, key, recorded, buf, offsets, sizes):
        """A batch of one topic's messages in; the segments now complete out."""
        if offsets.size == 0:
            return []
        self.last_recorded = int(recorded[-1]) if self.last_recorded is None else max(
            self.last_recorded, int(recorded[-1]))
        started = time.perf_counter()
        if key != 'joints':
            stream = self.base if key == 'base' else self.contacts
            which, rows = stream.read(self, buf, offsets, sizes)
            stream.append(recorded, rows, which)
            self.timings['decode'] += time.perf_counter() - started
            return self._complete()
        i = 0
        total = offsets.size
        while i < total:
            room = total - i if self.segment is None else self.segment - self.new
            part = slice(i, min(total, i + room))
            count = part.stop - part.start

            def into(layout):       # the rows go straight into the buffers
                if self.n + count > self.rows:      # more messages than the metadata said
                    self._grow(max(2 * self.rows, self.n + count))
                return self.table[self.n:self.n + count].view(np.uint8).reshape(count, -1)

            try:
                self.joints.read(buf, offsets[part], sizes[part], self.index, into)
            except Rejected as exc:
                raise LogError(self.path, f'{self.topic} message {self.index}: '
                                          f'{exc.detail or exc}') from None
            self.recorded[self.n:self.n + count] = recorded[part]
            self.n += count
            self.new += count
            self.index += count
            i += count
            if self.new == self.segment:
                self.timings['decode'] += time.perf_counter() - started
                self.pending.append(self._cut())
                started = time.perf_counter()
        self.timings['decode'] += time.perf_counter() - started
        return self._complete()

    def _grow(self, rows):
        table, recorded, n = self.table, self.recorded, self.n
        self._allocate(rows)
        self.table[:n], self.recorded[:n] = table[:n], recorded[:n]

    def _cut(self):
        """The buffered rows as a pending segment; keep the overlap's rows for the next one."""
        piece = self._segment(self.n)
        keep = min(self.n, self.overlap(piece['period'])) if self.overlap else 0
        piece['next_ns'] = self._row_ns(self.n - keep if keep else self.n - 1)
        # fresh buffers (the segment's arrays may be views of these), the overlap's rows first
        table, recorded, n = self.table, self.recorded, self.n
        self._allocate(keep + self.segment)
        self.table[:keep], self.recorded[:keep] = table[n - keep:n], recorded[n - keep:n]
        self.n, self.new = keep, 0
        return piece

    def finish(self):
        """The segments left, the last one included (the whole log when it never filled one)."""
        if self.index == 0:
            raise LogError(self.path, f'{self.topic} has no messages')
        if self.segments == 0 and self.index < 20:
            raise LogError(self.path, f'{self.topic} has {self.index} messages: too few to '
                                      'differentiate')
        if self.new:
            self.pending.append(self._segment(self.n))
        self.last_recorded = None           # the whole log is in
        pieces = self._complete()
        if self.contacts is not None:
            self.dropped['unmatched_contact_messages'] += self.contacts.unmatched()
        for stream in (self.base, self.contacts):
            if stream is not None:
                self.dropped['duplicate_messages'] += stream.duplicates
        return pieces

    def _row_ns(self, i):
        """The stamp (ns) of buffered row i, header or recording as the log's."""
        if self.stamps == 'header':
            row = self.table[i]
            return int(row['sec']) * 1_000_000_000 + int(row['nanosec'])
        return int(self.recorded[i])

    def _segment(self, n):
        """The rows 0..n on a uniform grid (a dict until the base and contacts are in)."""
        started = time.perf_counter()
        number = np.arange(self.index - n, self.index)      # the rows' message numbers
        rows = self.table[:n]
        stamp = rows['sec'].astype(np.int64) * 1_000_000_000 + rows['nanosec']
        if self.stamps is None:
            # a publisher that never stamps: the recording times
            self.stamps = 'header' if np.any(stamp) else 'recording'
        ns = stamp if self.stamps == 'header' else self.recorded[:n]
        fresh_from = n - self.new              # rows from here on are new in this segment
        # a message with the stamp of the one before is a re-send (sim_node in lockstep
        # republishes its initial state until a controller answers): left out, and counted
        repeats = np.flatnonzero(np.diff(ns) == 0) + 1
        if repeats.size:
            self.dropped['duplicate_messages'] += int(np.sum(repeats >= fresh_from))
            keep = np.ones(n, bool)
            keep[repeats] = False
            fresh_from = int(np.sum(keep[:fresh_from]))
            rows, ns, number = rows[keep], ns[keep], number[keep]
            n = rows.size
            if n < 2:
                raise LogError(self.path, f'{self.topic} has {n} message of a distinct stamp')
        if self.t0 is None:
            self.t0 = int(ns[0])
        self.segments += 1
        t = (ns - self.t0) * 1e-9
        steps = np.diff(t)
        bad = np.flatnonzero(steps <= 0.0)
        if bad.size:
            k = int(bad[0]) + 1
            raise LogError(self.path, f'{self.topic} stamps do not increase: message '
                                      f'{number[k]} at {t[k]:.6f} s after message '
                                      f'{number[k - 1]} at {t[k - 1]:.6f} s')
        period = float(np.median(steps)) if steps.size else 1.0
        limit = GAP_PERIODS * period if self.max_gap is None else float(self.max_gap)
        gaps = np.flatnonzero(steps > limit)
        if gaps.size:
            k = int(gaps[0])
            raise LogError(self.path, f'{self.topic} has a gap of {steps[k]:.4g} s at '
                                      f'{t[k]:.3f} s (the median period is {period:.4g} s; '
                                      f'longer than {limit:.4g} s; --max-gap allows longer '
                                      'ones)')
        # the grid's period: the first segment's length over its number of periods, each step
        # counted as the whole number of median periods nearest to it (a lost message counts
        # two). The median itself is off by the stamps' quantisation (float seconds: 1e-4),
        # and that error would scale every derivative. One grid for the whole log (t0 + i
        # period): the segments' samples are the same samples where they overlap, so what
        # each keeps tiles the log exactly (compute.py), lost messages or not.
        if self.period is None:
            count = max(int(np.sum(np.maximum(np.rint(steps / period), 1.0))), 1)
            self.period = (t[-1] - t[0]) / count
        grid_period = self.period
        periods = np.maximum(np.rint(steps / grid_period), 1.0)
        # lost messages: grid samples no message stood for, counted over this segment's new
        # rows only (the overlap's were counted with the segment before)
        fresh = periods[max(0, fresh_from - 1):] if self.segments > 1 else periods
        missing = int(np.sum(fresh) - fresh.size)
        first_sample = int(np.ceil(t[0] / grid_period - 1e-6))
        last_sample = int(np.floor(t[-1] / grid_period + 1e-6))
        grid = np.arange(first_sample, last_sample + 1) * grid_period
        piece = {'grid': grid, 't': t, 'ns': ns.copy(), 'period': grid_period,
                 'next_ns': None,
                 'recorded': int(self.recorded[self.n - 1]),
                 'first_segment': self.segments == 1,
                 'missing': missing,
                 'log': JointStateLog(
                     path=str(self.path), names=tuple(self.names), t=grid,
                     position=_resample(grid, t, rows['position']),
                     velocity=None if self.V is None else _resample(grid, t,
                                                                    rows['velocity']),
                     effort=_resample(grid, t, rows['effort']), stamps=self.stamps,
                     first_sample=first_sample)}
        self.timings['resample'] += time.perf_counter() - started
        return piece

    # -- the base's state and the contact wrenches ------------------------------------------
    def _complete(self):
        """The pending segments whose base states and contacts are all in (all of them at the
        end of the log), completed."""
        out = []
        lag = int(AUX_LAG_S * 1e9)
        while self.pending and (self.last_recorded is None or (
                self.base is None and self.contacts is None) or
                self.last_recorded >= self.pending[0]['recorded'] + lag):
            out.append(self._with_aux(self.pending.pop(0)))
        return out

    def _with_aux(self, piece):
        started = time.perf_counter()
        log = piece['log']
        self.dropped['missing_messages'] += piece['missing']
        grid = piece['grid']
        if self.contacts is not None:
            wrenches = self.contacts.on_rows(self, piece['ns'], piece['period'],
                                             piece['next_ns'])
            log.contacts = _resample(grid, piece['t'], wrenches.reshape(
                wrenches.shape[0], -1)).reshape(grid.size, -1, 6)
            log.contact_links = tuple(self.contacts.links)
        if self.base is not None:
            base, lo, hi = self.base.on_grid(self, grid, piece['next_ns'])
            if hi <= lo:
                raise LogError(self.path, f'no base state on {self.base.topic} during '
                                          f'{self.topic}\'s {grid[0]:.3f} s to {grid[-1]:.3f} s '
                                          '(--base-topic names another)')
            # rows without the base's state: cut from this segment's ends (counted once: the
            # start only on the first segment, the next one starts with this one's end)
            self.dropped['no_base_state'] += (lo if piece['first_segment'] else 0) + (
                grid.size - hi)
            keep = slice(lo, hi)
            log.first_sample += lo
            log.base = base[keep]
            log.t, log.position, log.effort = grid[keep], log.position[keep], log.effort[keep]
            if log.velocity is not None:
                log.velocity = log.velocity[keep]
            if log.contacts is not None:
                log.contacts = log.contacts[keep]
        self.timings['resample'] += time.perf_counter() - started
        return log


class _Stream:
    """An auxiliary topic's messages, buffered until the segments of their time are done:
    stamps (ns: header stamps when the joint states' are, and these are not all zero; else
    recording times), values, and (contacts) the link of each and whether it met a joint
    state."""

    def __init__(self, topic, width):
        self.topic = topic
        self.reader = decode.Reader(decode.odometry if width == 13 else decode.wrench_stamped)
        self.width = width
        self.header, self.recorded, self.values, self.which, self.matched = [], [], [], [], []
        self.count = 0
        self.domain = None        # 'header' or 'recording', decided at the first use
        self.sign = None          # the last quaternion (base): its hemisphere
        self.links = []           # (contacts) the links, in the order first seen
        self.link_of = []         # a layout's link: an index into links
        self.lost = 0             # (contacts) messages trimmed without meeting a joint state
        self.last = {}            # the bytes of each link's last message (re-sends)
        self.duplicates = 0       # re-sends left out

    def read(self, log, buf, offsets, sizes):
        try:
            return self.reader.read(buf, offsets, sizes, self.count)
        except Rejected as exc:
            raise LogError(log.path, f'{self.topic} message {self.count}: '
                                     f'{exc.detail or exc}') from None

    def append(self, recorded, rows, which):
        values = rows.view(self.reader.layouts[0].dtype).ravel()
        for layout in self.reader.layouts[len(self.link_of):]:
            name = layout.key[0]
            if name not in self.links:
                self.links.append(name)
            self.link_of.append(self.links.index(name))
        header = decode.stamps_ns(values, values.dtype)
        link = np.asarray(self.link_of, np.int64)[which]
        # a re-send (the very stamp and values of this link's message before: sim_node
        # republishes its initial state until a controller answers): left out, and counted
        order = np.lexsort((np.arange(link.size), link))
        before = np.empty_like(rows)
        before[order[1:]] = rows[order[:-1]]
        starts = np.ones(link.size, bool)
        starts[order[1:]] = link[order[1:]] != link[order[:-1]]
        for i in np.flatnonzero(starts):
            before[i] = self.last.get(int(link[i]), ~rows[i])
        repeat = np.all(rows == before, axis=1)
        for i in order[np.flatnonzero(np.append(starts[order][1:], True))]:
            self.last[int(link[i])] = rows[i].copy()       # each link's last message
        if np.any(repeat):
            self.duplicates += int(np.sum(repeat))
            keep = ~repeat
            header, link, values, recorded = (header[keep], link[keep], values[keep],
                                              np.asarray(recorded)[keep])
        self.header.append(header)
        self.recorded.append(np.asarray(recorded, np.int64))
        v = np.array(values['values'], dtype=float)
        if self.width == 13:
            # one hemisphere for the orientation quaternions (q and -q are one rotation), so
            # that they interpolate and filter smoothly
            quat = v[:, 3:7]
            previous = self.sign
            for k in range(quat.shape[0]):
                if previous is not None and float(quat[k] @ previous) < 0.0:
                    quat[k] = -quat[k]
                previous = quat[k]
            self.sign = None if previous is None else previous.copy()
        self.values.append(v)
        self.which.append(link)
        self.matched.append(np.zeros(link.size, bool))
        self.count += which.size

    def _joined(self, log):
        """(stamps ns, values, links) of the buffered messages."""
        if len(self.values) > 1:
            for name in ('header', 'recorded', 'values', 'which', 'matched'):
                setattr(self, name, [np.concatenate(getattr(self, name))])
        if not self.values:
            return None, None, None
        if self.domain is None:
            self.domain = ('header' if log.stamps == 'header' and np.any(self.header[0]) else
                           'recording')
        ns = self.header[0] if self.domain == 'header' else self.recorded[0]
        return ns, self.values[0], self.which[0]

    def on_grid(self, log, grid, next_ns):
        """(values on the grid (interpolated), lo, hi): rows lo..hi have the base's state.
        Messages before ``next_ns`` (the next segment's first row) but the last are let go."""
        ns, values, _ = self._joined(log)
        out = np.zeros((grid.size, self.width))
        if ns is None:
            return out, 0, 0
        order = np.argsort(ns, kind='stable')
        ns, values = ns[order], values[order]
        if np.any(np.diff(ns) <= 0):
            k = int(np.flatnonzero(np.diff(ns) <= 0)[0]) + 1
            raise LogError(log.path, f'{self.topic}: two messages stamped '
                                     f'{(ns[k] - log.t0) * 1e-9:.6f} s')
        if not np.isfinite(values).all():
            k = int(np.argmin(np.isfinite(values).all(axis=1)))
            raise LogError(log.path, f'{self.topic}: NaN or inf in the message stamped '
                                     f'{(ns[k] - log.t0) * 1e-9:.3f} s')
        t = (ns - log.t0) * 1e-9
        lo = int(np.searchsorted(grid, t[0] - 1e-9, side='left'))
        hi = int(np.searchsorted(grid, t[-1] + 1e-9, side='right'))
        if hi > lo:
            # the stream's own gaps, where it covers this segment
            a = max(int(np.searchsorted(t, grid[lo], side='right')) - 1, 0)
            b = min(int(np.searchsorted(t, grid[hi - 1], side='left')) + 1, t.size)
            steps = np.diff(t[a:b])
            if steps.size:
                period = float(np.median(steps))
                limit = GAP_PERIODS * period if log.max_gap is None else float(log.max_gap)
                gaps = np.flatnonzero(steps > limit)
                if gaps.size:
                    k = a + int(gaps[0])
                    raise LogError(log.path, f'{self.topic} has a gap of {steps[gaps[0]]:.4g} s'
                                             f' at {t[k]:.3f} s (the median period is '
                                             f'{period:.4g} s; longer than {limit:.4g} s; '
                                             '--max-gap allows longer ones)')
            for j in range(self.width):
                out[lo:hi, j] = np.interp(grid[lo:hi], t, values[:, j])
            quat = out[lo:hi, 3:7]
            norm = np.linalg.norm(quat, axis=1)
            if not np.all(norm > 1e-6):
                k = lo + int(np.argmin(norm > 1e-6))
                raise LogError(log.path, f'{self.topic}: the orientation at {grid[k]:.3f} s is '
                                         'no rotation (a zero quaternion)')
            quat /= norm[:, None]
        if next_ns is not None:
            first = max(int(np.searchsorted(ns, next_ns, side='right')) - 1, 0)
            self._trim(order[first:])
        return out, lo, hi

    def on_rows(self, log, ns_rows, period, next_ns):
        """(rows, links, 6): each contact message added to the joint-state row of its stamp
        (the nearest, within half a period). Messages that no later segment can meet (stamped
        before ``next_ns``, the next segment's first row) are let go, counted when they met
        no row."""
        ns, values, which = self._joined(log)
        out = np.zeros((ns_rows.size, len(self.links), 6))
        if ns is None:
            return out
        at = np.clip(np.searchsorted(ns_rows, ns), 1, ns_rows.size - 1)
        nearer = np.where(np.abs(ns_rows[at - 1] - ns) <= np.abs(ns_rows[at] - ns), at - 1, at)
        ok = np.abs(ns_rows[nearer] - ns) <= 0.5 * period * 1e9
        np.add.at(out, (nearer[ok], which[ok]), values[ok])
        self.matched[0] |= ok
        if next_ns is not None:
            self._trim(np.flatnonzero(ns >= next_ns - 0.5 * period * 1e9))
        return out

    def _trim(self, keep):
        gone = np.ones(self.which[0].size, bool)
        gone[keep] = False
        self.lost += int(np.sum(gone & ~self.matched[0]))
        keep = np.sort(keep)
        for name in ('header', 'recorded', 'values', 'which', 'matched'):
            setattr(self, name, [getattr(self, name)[0][keep]])

    def unmatched(self):
        """Contact messages that met no joint state, over the whole log."""
        return self.lost + (int(np.sum(~self.matched[0])) if self.values else 0)


def log_size(path):
    """Bytes of a log's files (0 when unreadable)."""
    try:
        if os.path.isfile(path):
            return os.path.getsize(path)
        return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path)
                   for f in files)
    except OSError:
        return 0


def _resample(grid, t, values):
    """Each column linearly interpolated at ``grid`` (the stamps' jitter removed: the filters
    and the differentiation assume a uniform grid); ``values`` itself when the stamps are
    the grid."""
    if grid.size == t.size and np.allclose(grid, t, rtol=0.0, atol=1e-12):
        return values
    out = np.empty((grid.size, values.shape[1]))
    for j in range(values.shape[1]):
        out[:, j] = np.interp(grid, t, values[:, j])
    return out


def _first_line(exc):
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
