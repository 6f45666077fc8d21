"""One log in, sums out: what the analysis computes per log, and how logs add up.

Per log (:func:`analyze_log`, run wherever a Dask worker is):

1. read the joint states (logs.py) onto a uniform grid;
2. low-pass q and v with a zero-phase Butterworth filter (``cutoff`` Hz, order 4, forward
   and backward: no lag, so the motion stays aligned with the measured torques), and
   differentiate: v from q where the log has no velocity, a from v (central differences);
   drop EDGE_PERIODS cut-off periods at each end, where the filter's start-up transient
   lives; the measured efforts are not filtered (see _LogSums.add);
3. the model's torque (batched inverse dynamics, plus the URDF's joint damping and friction)
   and the residual r = measured - model, per joint;
4. sums only: per joint n, sum r, sum r^2, max |r|, sum v, sum v^2, sum r v, and for the
   identification the normal equations A^T A, A^T b, b^T b of its least squares.

Logs add by adding their sums (:func:`combine`), so the result does not depend on where each
log ran, and no sample leaves the worker that read it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import time

import numpy as np

import rbd_ros.dynamics as rbd
from rbd_ros.dynamics.identification import payload_columns, payload_from_parameters

from . import logs
from .logs import LogError, read_segments

#: rows per batched dynamics call (the regressor's rows x nv x 10 doubles stay in cache)
CHUNK = 4_096
#: cut-off periods dropped at each end of a log: the zero-phase filter's start-up transient
#: (its acceleration error falls from 7% to 5e-4 of the signal within 3 periods, 2e-6 by 5)
EDGE_PERIODS = 5
#: points per log kept for the plots
PLOT_POINTS = 4_000
#: eigenvalues of the column-scaled normal matrix below this fraction of the largest mark
#: parameters the motion does not determine (a singular-value ratio of 1e-6)
RANK_TOLERANCE = 1e-12
#: a payload's inertia is reported when its standard error (from the fit's residual) is at
#: most this fraction of it; else the mass and centre of mass only, saying why
INERTIA_TOLERANCE = 0.1


@dataclasses.dataclass(frozen=True)
class Options:
    """What the analysis does with each log (the command line's options)."""

    topic: str = '/joint_states'
    cutoff: float = 10.0             # Hz, the low-pass before differentiation
    max_gap: float | None = None     # s; None: logs.GAP_PERIODS median periods
    friction: bool = False           # identify viscous and Coulomb friction per joint
    payload_link: str | None = None  # identify a payload on this link
    plots: bool = False              # keep decimated series for the plots

    @property
    def identifying(self):
        return self.friction or self.payload_link is not None


@dataclasses.dataclass
class LogResult:
    """What one log contributes: its status and, when analysed, its sums."""

    path: str
    status: str                      # 'ok' or 'skipped'
    reason: str = ''
    samples: int = 0
    duration_s: float = 0.0
    ignored_joints: tuple = ()
    stamps: str = ''
    sums: dict | None = None         # per-joint arrays (see SUMS)
    normal: tuple | None = None      # (A^T A, A^T b, b^T b, rows)
    series: dict | None = None       # decimated t, measured, model, residual (plots)
    timings: dict | None = None      # s spent filtering and in the dynamics (the benchmark)


SUMS = ('n', 'r', 'rr', 'r_max', 'v', 'vv', 'rv')


# ---- one log ------------------------------------------------------------------------------
_models = {}


def model_for(urdf_text):
    """The fixed-base Model of a URDF text, built once per process (a Dask worker builds it on
    its first log)."""
    key = hashlib.sha256(urdf_text.encode()).hexdigest()
    model = _models.get(key)
    if model is None:
        model = _models[key] = rbd.Model.from_urdf(urdf_text)
    return model


def analyze_log(path, urdf_text, options, progress=None):
    """The :class:`LogResult` of one log; a log that cannot be analysed is 'skipped' with the
    reason (never raises for a bad log). A long log is read in segments (logs.SEGMENT
    messages), each overlapping the previous one by two filter start-ups, so memory stays
    bounded and the samples each segment keeps tile the log."""
    model = model_for(urdf_text)
    log = _LogSums(model, options, str(path))
    try:
        for piece in read_segments(path, options.topic, options.max_gap, progress,
                                   overlap=lambda period: 2 * _edge(1.0 / period, options),
                                   segment=logs.SEGMENT):
            log.add(piece)
        return log.result()
    except LogError as exc:
        return LogResult(path=str(path), status='skipped', reason=exc.problem)
    except MemoryError:
        return LogResult(path=str(path), status='skipped',
                         reason=f'out of memory (a segment is {logs.SEGMENT:,} messages: see '
                                'docs/analysis.md)')


def _edge(rate, options):
    """Samples at each end of a segment inside the filter's start-up (EDGE_PERIODS)."""
    return int(math.ceil(EDGE_PERIODS * rate / options.cutoff - 1e-9))


class _LogSums:
    """One log's sums, segment by segment."""

    def __init__(self, model, options, path):
        self.model, self.options, self.path = model, options, path
        nv = model.nv
        self.sums = {k: np.zeros(nv, dtype=np.int64 if k == 'n' else float) for k in SUMS}
        self.normal = _empty_normal(model, options)
        self.payload = (None if options.payload_link is None else
                        payload_columns(model, options.payload_link))
        self.series = [] if options.plots else None
        self.pieces = 0
        self.end = 0.0
        self.names = self.stamps = None
        self.timings = {'filter': 0.0, 'dynamics': 0.0}

    def add(self, log):
        from scipy.signal import butter, sosfiltfilt

        model, options = self.model, self.options
        first = self.pieces == 0
        self.pieces += 1
        if first:
            missing = [j for j in model.joint_names if j not in log.names]
            if missing:
                raise LogError(log.path, f'joints of the URDF missing from the log: '
                                         f'{", ".join(missing)} (the log has '
                                         f'{", ".join(log.names)})')
            self.names, self.stamps = log.names, log.stamps
        self.end = float(log.t[-1])
        columns = [log.names.index(j) for j in model.joint_names]
        dt = (float(log.t[-1] - log.t[0]) / (log.t.size - 1)) if log.t.size > 1 else math.inf
        rate = 1.0 / dt
        if not options.cutoff < 0.5 * rate:
            raise LogError(log.path, f'sampled at {rate:.4g} Hz: the low-pass cut-off '
                                     f'({options.cutoff:g} Hz, --cutoff) must be below half of '
                                     'it')
        edge = _edge(rate, options)
        if log.t.size < 4 * edge + 30:
            if first:
                raise LogError(log.path, f'{log.t.size} samples ({log.t[-1]:.3g} s): too short '
                                         f'for a {options.cutoff:g} Hz low-pass (at least '
                                         f'{4 * edge + 30} samples)')
            return      # the log's last few samples: inside its end's filter start-up anyway
        started = time.perf_counter()
        sos = butter(4, options.cutoff / (0.5 * rate), output='sos')
        q = sosfiltfilt(sos, log.position[:, columns], axis=0)
        if log.velocity is not None:
            v = sosfiltfilt(sos, log.velocity[:, columns], axis=0)
        else:
            v = np.gradient(q, dt, axis=0)
        a = np.gradient(v, dt, axis=0)
        # the efforts unfiltered: least squares averages their noise out, and a filter would
        # smear the Coulomb friction's step at each reversal into torques no model column has
        # (a 5-15% bias in the identified friction)
        measured = log.effort[:, columns]
        keep = slice(edge, log.t.size - edge)
        q, v, a, measured, t = q[keep], v[keep], a[keep], measured[keep], log.t[keep]
        for name, values in (('position', q), ('effort', measured)):
            if not np.all(np.isfinite(values)):
                raise LogError(log.path, f'NaN or inf in the {name}s')
        if not (np.all(np.isfinite(v)) and np.all(np.isfinite(a))):
            raise LogError(log.path, 'NaN or inf in the velocities')
        filtered = time.perf_counter()
        self._sums(t, q, v, a, measured)
        self.timings['filter'] += filtered - started
        self.timings['dynamics'] += time.perf_counter() - filtered

    def _sums(self, t, q, v, a, measured):
        model, options, normal = self.model, self.options, self.normal
        n, nv = q.shape
        model_torque = np.empty((n, nv))
        for start in range(0, n, CHUNK):
            k = slice(start, min(start + CHUNK, n))
            tau = rbd.inverse_dynamics(model, q[k], v[k], a[k])
            # what the identification explains: the rigid bodies' torques always; the URDF's
            # joint friction unless friction is identified (then it is fitted whole)
            rigid = tau.copy()
            tau += _joint_friction(model, v[k])
            model_torque[k] = tau
            if options.identifying:
                b = measured[k] - (rigid if options.friction else tau)
                A = _columns(model, options, q[k], v[k], a[k], self.payload)
                A, b = A.reshape(-1, A.shape[2]), b.reshape(-1)
                normal[0] += A.T @ A
                normal[1] += A.T @ b
                normal[2] += float(b @ b)
                normal[3] += b.size
        r = measured - model_torque
        sums = self.sums
        sums['n'] += n
        sums['r'] += r.sum(0)
        sums['rr'] += (r * r).sum(0)
        sums['r_max'] = np.maximum(sums['r_max'], np.abs(r).max(0))
        sums['v'] += v.sum(0)
        sums['vv'] += (v * v).sum(0)
        sums['rv'] += (r * v).sum(0)
        if self.series is not None:
            step = max(1, n // PLOT_POINTS)
            self.series.append((t[::step], measured[::step], model_torque[::step],
                                r[::max(1, n // (5 * PLOT_POINTS))]))

    def result(self):
        ignored = tuple(n for n in self.names if n not in self.model.joint_names)
        series = None
        if self.series is not None:
            t, measured, model, residual = (np.concatenate(x) for x in zip(*self.series))
            step = max(1, t.size // (4 * PLOT_POINTS))     # a long log: at most 4 segments' worth
            series = {'t': t[::step], 'measured': measured[::step], 'model': model[::step],
                      'residual': residual}
        return LogResult(path=self.path, status='ok', samples=int(self.sums['n'][0]),
                         duration_s=self.end, ignored_joints=ignored, stamps=self.stamps,
                         sums=self.sums,
                         normal=tuple(self.normal) if self.options.identifying else None,
                         series=series, timings=self.timings)


def _joint_friction(model, v):
    return model.damping * v + model.friction * np.sign(v)


def parameter_names(model, options):
    """The identification's unknowns, in column order."""
    names = []
    if options.friction:
        for j in model.joint_names:
            names += [f'{j}.viscous', f'{j}.coulomb']
    if options.payload_link is not None:
        names += [f'payload.{p}' for p in ('m', 'mcx', 'mcy', 'mcz', 'ixx', 'ixy', 'iyy', 'ixz',
                                           'iyz', 'izz')]
    return names


def _empty_normal(model, options):
    p = len(parameter_names(model, options))
    return [np.zeros((p, p)), np.zeros(p), 0.0, 0]


def _columns(model, options, q, v, a, payload):
    """A (n, nv, p): each sample's rows of the least squares, measured - model = A x."""
    n, nv = v.shape
    blocks = []
    if options.friction:
        F = np.zeros((n, nv, 2 * nv))
        j = np.arange(nv)
        F[:, j, 2 * j] = v
        F[:, j, 2 * j + 1] = np.sign(v)
        blocks.append(F)
    if payload is not None:
        blocks.append(rbd.inertial_regressor(model, q, v, a, link=options.payload_link))
    return blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=2)


# ---- logs together ------------------------------------------------------------------------
@dataclasses.dataclass
class Summary:
    """Every log's status, per-joint residual statistics, and the identified parameters."""

    model: str
    logs: list
    joints: dict
    friction: dict | None = None     # {joint: {'viscous', 'coulomb', ...}}
    payload: dict | None = None


def combine(model, results, options):
    """The summary of the logs' results (in the given order: the sums are added in it, so the
    same logs give the same numbers wherever they ran)."""
    ok = [r for r in results if r.status == 'ok']
    nv = model.nv
    total = {k: np.zeros(nv, dtype=np.int64 if k == 'n' else float) for k in SUMS}
    for r in ok:
        for k in SUMS:
            total[k] = np.maximum(total[k], r.sums[k]) if k == 'r_max' else total[k] + r.sums[k]
    joints = {}
    for j, name in enumerate(model.joint_names):
        n = int(total['n'][j])
        if n == 0:
            joints[name] = {'samples': 0}
            continue
        mean = total['r'][j] / n
        mean_v = total['v'][j] / n
        var_r = max(total['rr'][j] / n - mean * mean, 0.0)
        var_v = max(total['vv'][j] / n - mean_v * mean_v, 0.0)
        cov = total['rv'][j] / n - mean * mean_v
        corr = cov / math.sqrt(var_r * var_v) if var_r > 0 and var_v > 0 else None
        joints[name] = {'samples': n, 'residual_mean': float(mean),
                        'residual_rms': float(math.sqrt(total['rr'][j] / n)),
                        'residual_max': float(total['r_max'][j]),
                        'velocity_correlation': None if corr is None else
                        float(min(1.0, max(-1.0, corr)))}
    summary = Summary(model=model.name, logs=[_log_entry(r) for r in results], joints=joints)
    if ok and options.identifying:
        normal = _empty_normal(model, options)
        for r in ok:
            for i in range(4):
                normal[i] += r.normal[i]
        _identify(model, options, normal, summary)
    return summary


def _log_entry(r):
    entry = {'path': r.path, 'status': r.status, 'reason': r.reason, 'samples': r.samples,
             'duration_s': r.duration_s}
    if r.ignored_joints:
        entry['ignored_joints'] = list(r.ignored_joints)
    return entry


def _identify(model, options, normal, summary):
    """Solve the least squares from its normal equations. Parameters the motion does not
    determine (a joint that never moved; a payload's inertia from slow or too little motion)
    are left out of the solve and reported as such."""
    M = normal[0]
    nf = 2 * model.nv if options.friction else 0
    # a joint's two friction columns, when it moved both ways at more than one speed
    friction = [i for j in range(nf // 2) if _determined(M, [2 * j, 2 * j + 1])
                for i in (2 * j, 2 * j + 1)]
    chosen, mode, why = friction, None, ('the motion does not determine even the mass and '
                                         'centre of mass (the link needs at least two '
                                         'orientations against gravity)')
    x = std = None
    if options.payload_link is not None:
        for mode in ('all', 'mass_and_com'):
            chosen = friction + list(range(nf, nf + (10 if mode == 'all' else 4)))
            if not _determined(M, chosen):
                why = 'the motion does not determine the inertia (too slow or too little ' \
                      'rotation)'
                continue
            x, std = _solve(normal, chosen)
            if mode == 'mass_and_com':
                break
            spread = _inertia_spread(model, options.payload_link, x[nf:nf + 10],
                                     std[nf + 4:nf + 10])
            if spread <= INERTIA_TOLERANCE:
                break
            why = (f'the inertia\'s standard error would be {100 * spread:.0f}% of it (more '
                   f'than {100 * INERTIA_TOLERANCE:.0f}%: the motion is too slow or rotates '
                   'the link too little)')
        else:
            mode, chosen = None, friction
    if x is None:
        if chosen and not _determined(M, chosen):
            chosen = []      # (columns each determined alone but not together: nothing is)
        x, std = _solve(normal, chosen)
    if options.friction:
        summary.friction = {}
        for j, name in enumerate(model.joint_names):
            i = 2 * j
            if i in chosen and i + 1 in chosen:
                summary.friction[name] = {'viscous': float(x[i]), 'coulomb': float(x[i + 1]),
                                          'viscous_std': float(std[i]),
                                          'coulomb_std': float(std[i + 1])}
            else:
                summary.friction[name] = {'viscous': None, 'coulomb': None,
                                          'reason': 'the joint did not move enough in the logs'}
    if options.payload_link is not None:
        summary.payload = _payload_entry(model, options.payload_link, mode, why, x[nf:nf + 10],
                                         std[nf:nf + 10])


def _solve(normal, chosen):
    """(x, standard errors) of the least squares on the columns ``chosen`` (the others 0 and
    NaN), from its normal equations, columns scaled to unit norm first."""
    M, g, bb, rows = normal
    x, std = np.zeros(len(g)), np.full(len(g), np.nan)
    if not chosen:
        return x, std
    scale = np.sqrt(np.diag(M)[chosen])
    Ms = M[np.ix_(chosen, chosen)] / np.outer(scale, scale)
    x[chosen] = np.linalg.solve(Ms, g[chosen] / scale) / scale
    rss = max(bb - 2.0 * float(x @ g) + float(x @ M @ x), 0.0)
    cov = np.linalg.inv(Ms) / np.outer(scale, scale) * (rss / max(rows - len(chosen), 1))
    std[chosen] = np.sqrt(np.maximum(np.diag(cov), 0.0))
    return x, std


def _inertia_spread(model, link, delta, inertia_std):
    """The standard error of a payload's six inertia parameters relative to its inertia."""
    try:
        _, _, inertia = payload_from_parameters(model, link, delta, True)
    except ValueError:
        return math.inf
    return float(np.sqrt(np.sum(inertia_std ** 2)) / max(np.linalg.norm(inertia), 1e-300))


def _payload_entry(model, link, mode, why, delta, std):
    """The report's payload: what was identified, and why not more."""
    nothing = {'link': link, 'mass': None, 'com': None, 'inertia': None,
               'identified': 'nothing', 'reason': why}
    if mode is None:
        return nothing
    try:
        mass, com, inertia = payload_from_parameters(model, link, delta, mode == 'all')
    except ValueError as exc:
        return {**nothing, 'mass': 0.0, 'reason': str(exc)}
    entry = {'link': link, 'mass': mass, 'com': [float(c) for c in com], 'inertia': None,
             'identified': 'mass, centre of mass and inertia' if mode == 'all' else
             f'mass and centre of mass: {why}',
             'mass_std': float(std[0]), 'com_std': [float(s) for s in std[1:4] / abs(mass)]}
    if inertia is not None:
        entry['inertia'] = [float(inertia[0, 0]), float(inertia[0, 1]), float(inertia[0, 2]),
                            float(inertia[1, 1]), float(inertia[1, 2]), float(inertia[2, 2])]
        entry['inertia_relative_std'] = float(np.sqrt(np.sum(std[4:10] ** 2))
                                              / max(np.linalg.norm(inertia), 1e-300))
    return entry


def _determined(M, chosen):
    """Whether the columns ``chosen`` of the normal matrix M are independent (column-scaled
    eigenvalue ratio above RANK_TOLERANCE)."""
    d = np.diag(M)[chosen]
    if not chosen or np.any(d <= 0.0):
        return False
    scale = np.sqrt(d)
    w = np.linalg.eigvalsh(M[np.ix_(chosen, chosen)] / np.outer(scale, scale))
    return bool(w[0] > RANK_TOLERANCE * w[-1])
