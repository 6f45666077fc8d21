"""Counters and timings behind a node's /diagnostics status, with bounded memory: however many
distinct unknown joint names arrive, a node keeps their count and a sample of
UNKNOWN_NAME_SAMPLE names of at most UNKNOWN_NAME_LENGTH characters (the first ones seen); and
the pauses of Python's cyclic garbage collector in the process (:class:`GcPauses`)."""
from __future__ import annotations

import collections
import gc
import time
from typing import Mapping

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

UNKNOWN_NAME_SAMPLE = 10
UNKNOWN_NAME_LENGTH = 64


#: seconds a rejected input keeps /diagnostics at WARN (the rejected_* counts stay): one bad
#: message long ago is history, not a state of the node
REJECTION_WARN_S = 10.0


#: a collector pause longer than this is counted (gc_pauses_over_1ms): a message at 1 kHz
GC_PAUSE_LIMIT_S = 1e-3


class GcPauses:
    """The pauses of Python's cyclic garbage collector in this process, timed from its
    ``gc.callbacks`` (start to stop of each collection): collections per generation, the longest
    pause in wall time (and its generation), the longest in CPU time of the collecting thread
    (what the collector itself took: the wall time also holds any time the process was not
    running), and how many lasted over GC_PAUSE_LIMIT_S of wall time. One per process
    (:func:`gc_pauses`): every node of a process reports the same figures."""

    def __init__(self):
        self.collections = [0, 0, 0]
        self.longest_s = 0.0
        self.longest_generation = -1
        self.longest_cpu_s = 0.0
        self.over_limit = 0
        self._start = None

    def __call__(self, phase: str, info: dict) -> None:
        if phase == 'start':
            self._start = (time.perf_counter(), time.thread_time())
            return
        if self._start is None:
            return
        pause = time.perf_counter() - self._start[0]
        cpu = time.thread_time() - self._start[1]
        self._start = None
        generation = info.get('generation', 2)
        self.collections[generation] += 1
        if pause > self.longest_s:
            self.longest_s, self.longest_generation = pause, generation
        self.longest_cpu_s = max(self.longest_cpu_s, cpu)
        if pause > GC_PAUSE_LIMIT_S:
            self.over_limit += 1

    def key_values(self) -> dict[str, str]:
        return {'gc_collections': '/'.join(map(str, self.collections)),
                'gc_pause_max_us': f'{self.longest_s * 1e6:.0f}',
                'gc_pause_max_generation': str(self.longest_generation),
                'gc_pause_cpu_max_us': f'{self.longest_cpu_s * 1e6:.0f}',
                'gc_pauses_over_1ms': str(self.over_limit)}


_gc_pauses: GcPauses | None = None


def gc_pauses() -> GcPauses:
    """The process's GcPauses, installed in gc.callbacks on first use."""
    global _gc_pauses
    if _gc_pauses is None:
        _gc_pauses = GcPauses()
        gc.callbacks.append(_gc_pauses)
    return _gc_pauses


class Stats:
    """Counters and timings of one node."""

    def __init__(self, window: int = 2000):
        self.compute_s: collections.deque[float] = collections.deque(maxlen=window)
        self.rejected: collections.Counter[str] = collections.Counter()
        self.unknown_name_count = 0           # unknown joint names received (with repeats)
        self.unknown_name_sample: list[str] = []
        self.received = 0
        self.published = 0
        self.non_finite_outputs = 0
        self.description_errors = 0
        self.model_warnings = 0
        self.internal_errors = 0
        self.last_error = ''
        self._rate_t0 = time.monotonic()
        self._rate_n0 = 0
        self.last_input_time: float | None = None   # time.monotonic() of the last valid input
        self.last_rejection_time: float | None = None   # time.monotonic() of the last rejection
        self.gc = gc_pauses()

    def timed(self, fn, *args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        self.compute_s.append(time.perf_counter() - t0)
        return out

    def reject(self, reason: str) -> None:
        self.rejected[reason] += 1
        self.last_rejection_time = time.monotonic()

    def rejected_recently(self) -> bool:
        """Whether an input was rejected in the last REJECTION_WARN_S seconds (the counts stay)."""
        return (self.last_rejection_time is not None
                and time.monotonic() - self.last_rejection_time < REJECTION_WARN_S)

    def unknown_names(self, names) -> None:
        """Count unknown joint names; keep the first few (truncated) as a sample."""
        self.unknown_name_count += len(names)
        for name in names:
            if len(self.unknown_name_sample) >= UNKNOWN_NAME_SAMPLE:
                return
            short = name[:UNKNOWN_NAME_LENGTH]
            if short not in self.unknown_name_sample:
                self.unknown_name_sample.append(short)

    def input_rate(self) -> float:
        now = time.monotonic()
        dt = now - self._rate_t0
        rate = (self.received - self._rate_n0) / dt if dt > 0 else 0.0
        self._rate_t0, self._rate_n0 = now, self.received
        return rate

    def compute_percentiles_us(self) -> tuple[float, float]:
        if not self.compute_s:
            return 0.0, 0.0
        arr = np.fromiter(self.compute_s, dtype=float)
        p50, p99 = np.percentile(arr, [50, 99])
        return float(p50 * 1e6), float(p99 * 1e6)

    def key_values(self) -> dict[str, str]:
        p50, p99 = self.compute_percentiles_us()
        kv = {
            'input_rate_hz': f'{self.input_rate():.1f}',
            'messages_received': str(self.received),
            'messages_published': str(self.published),
            'compute_time_p50_us': f'{p50:.1f}',
            'compute_time_p99_us': f'{p99:.1f}',
            'rejected_total': str(sum(self.rejected.values())),
            'unknown_joint_names': str(self.unknown_name_count),
            'unknown_joint_name_sample': ','.join(self.unknown_name_sample),
            'non_finite_outputs_dropped': str(self.non_finite_outputs),
            'description_errors': str(self.description_errors),
            'model_warnings': str(self.model_warnings),
            'internal_errors': str(self.internal_errors),
            'last_error': self.last_error,
        }
        kv.update(self.gc.key_values())
        for reason, count in sorted(self.rejected.items()):
            kv[f'rejected_{reason}'] = str(count)
        return kv


def diagnostic_status(node_name: str, robot, stats: Stats, stale: str | None,
                      extra: Mapping[str, str] | None = None,
                      waiting: str | None = None, warning: str | None = None,
                      stale_effect: str = '') -> DiagnosticStatus:
    """The node's DiagnosticStatus: ERROR without a model, WARN while it waits for an input
    (``waiting``: what) or when stale (``stale``: the missing input; ``stale_effect``: what
    that stops), after rejections, internal errors or with model warnings, OK otherwise."""
    st = DiagnosticStatus()
    st.name = f'{node_name}: rbd_ros'
    values = {}
    if robot is None:
        st.level, st.message = DiagnosticStatus.ERROR, 'no robot model (waiting for robot_description)'
        values['model'] = ''
    else:
        st.hardware_id = robot.model.name
        values.update(model=str(robot.model.name), nq=str(robot.nq), nv=str(robot.nv),
                      model_generation=str(robot.generation), description_source=robot.source)
        if waiting:
            st.level, st.message = DiagnosticStatus.WARN, f'waiting for {waiting}' + (
                '; the robot description has warnings' if stats.model_warnings else '')
        elif stale:
            st.level, st.message = DiagnosticStatus.WARN, f'input stale: {stale}' + (
                f'; {stale_effect}' if stale_effect else '')
        elif warning:
            st.level, st.message = DiagnosticStatus.WARN, warning
        elif stats.internal_errors:
            st.level, st.message = DiagnosticStatus.WARN, 'running; internal errors (a bug: please report)'
        elif stats.rejected_recently():
            st.level, st.message = DiagnosticStatus.WARN, \
                f'running; some input was rejected in the last {REJECTION_WARN_S:g} s'
        elif stats.description_errors or stats.non_finite_outputs:
            st.level, st.message = DiagnosticStatus.WARN, 'running; a robot description was ' \
                'refused or an output was not finite (see the counts)'
        elif stats.model_warnings:
            st.level, st.message = DiagnosticStatus.WARN, 'running; the robot description has warnings'
        else:
            st.level, st.message = DiagnosticStatus.OK, 'running'
    values.update(stats.key_values())
    values['stale_input'] = str(bool(stale)).lower()
    values['stale_reason'] = stale or ''
    values['waiting_for'] = waiting or ''

    values.update({k: str(v) for k, v in (extra or {}).items()})
    st.values = [KeyValue(key=k, value=v) for k, v in values.items()]
    return st
