"""One log in, sums out: what the analysis computes per log, and how logs add up.

Per log (:func:`analyze_log`, run wherever a Dask worker is):

1. read the joint states (logs.py) onto a uniform grid; with a floating base, the base's state
   (pose and twist) and, when logged, the contact wrenches on the same grid;
2. low-pass q and v with a zero-phase Butterworth filter (``cutoff`` Hz, order 4, forward
   and backward: no lag, so the motion stays aligned with the measured torques; filters.py),
   and differentiate: v from q where the log has no velocity, a from v (central differences);
   drop EDGE_PERIODS cut-off periods at each end, where the filter's start-up transient
   lives; the measured efforts are not filtered (see _LogSums.add);
3. the model's torque (batched inverse dynamics, with the contact wrenches as external
   wrenches, plus the URDF's joint damping and friction) and the residual r = measured -
   model, per joint; with a floating base, the base's six rows apart: the external wrench the
   motion needs (inverse dynamics without the contacts: the contacts' resultant when the
   ground alone touches the robot) and what the logged contacts leave of it;
4. sums only: per joint n, sum r, sum r^2, max |r|, sum v, sum v^2, sum r v, and for the
   identification the normal equations A^T A, A^T b, b^T b of its least squares
   (kernels.py: compiled loops in a fixed order, so a log's sums are the same bits in any
   process).

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
from rbd_ros.dynamics.identification import payload_from_parameters

from . import filters, kernels, logs
from .logs import DROPPED, LogError, read_segments

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
#: a payload whose identified mass is within this many standard errors of zero is none: its
#: centre of mass (first moment over mass) would be noise over noise (a recorded Solo-12 run
#: with none: 5.4e-5 kg, standard error 4.5e-5, "centre of mass" 5.8 m up)
NO_PAYLOAD_SIGMAS = 3.0
#: how the reason of such a payload entry starts (the report and the parameters file tell
#: "none" from "not identified" by it: no_payload)
NO_PAYLOAD = 'no payload'
#: the default base topic: what sim_node publishes (docs/ros.md)
BASE_TOPIC = '/rbd_sim/base_state'
#: the stages of a log's analysis, in order (``--profile``)
STAGES = ('read', 'decode', 'resample', 'filter', 'dynamics', 'sums')
#: the base's six rows, in the order of the model's base velocity ([v; w]: a wrench [f; tau])
BASE_ROWS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')
#: rad/s (m/s): the identification leaves out a joint's row at the samples where it moves
#: slower than this, when it has Coulomb friction (identified, or the URDF's). In stiction
#: (a reversal, a joint held still) the friction is anything between -coulomb and coulomb,
#: which no column of the model explains, and the low-pass blurs the speed's sign around a
#: reversal: on a simulated Solo-12 with stiction (3% of the samples stuck) the Coulomb
#: friction came out 15-41% low and the viscous friction took the rest; leaving out the rows
#: under 0.05 rad/s gave both within 0.6%.
FRICTION_BAND = 0.05


@dataclasses.dataclass(frozen=True)
class Options:
    """What the analysis does with each log (the command line's options)."""

    topic: str = '/joint_states'
    cutoff: float = 10.0             # Hz, the low-pass before differentiation
    max_gap: float | None = None     # s; None: logs.GAP_PERIODS median periods
    friction: bool = False           # identify viscous and Coulomb friction per joint
    payload_link: str | None = None  # identify a payload on this link
    plots: bool = False              # keep decimated series for the plots
    floating_base: bool = False      # add a floating base to the URDF's root link
    base_topic: str = BASE_TOPIC     # nav_msgs/Odometry of a floating base
    contact_topic: str | None = None  # geometry_msgs/WrenchStamped contact wrenches
    friction_band: float = FRICTION_BAND  # rad/s (m/s): slower rows left out (see the constant)

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
    normal: tuple | None = None      # (A^T A, A^T b, b^T b, rows, rows left out per joint)
    series: dict | None = None       # decimated t, measured, model, residual (plots)
    timings: dict | None = None      # s per stage (STAGES; --profile, the benchmark)
    base: dict | None = None         # a floating base's sums (see BASE_SUMS)
    dropped: dict | None = None      # samples and messages left out (logs.DROPPED)
    contact_links: tuple = ()        # links the contact wrenches acted on
    size: int = 0                    # bytes of the log's files (the progress line)


SUMS = ('n', 'r', 'rr', 'r_max', 'v', 'vv', 'rv')
#: a floating base's sums, per row of BASE_ROWS: the wrench w the motion needs (inverse
#: dynamics without the contacts), and what the logged contacts leave of it (e)
BASE_SUMS = ('n', 'w', 'ww', 'w_max', 'e', 'ee', 'e_max')


# ---- one log ------------------------------------------------------------------------------
_models = {}


def model_for(urdf_text, floating_base=False):
    """The Model of a URDF text (with a floating base added to its root link when asked), built
    once per process (a Dask worker builds it on its first log)."""
    key = (hashlib.sha256(urdf_text.encode()).hexdigest(), bool(floating_base))
    model = _models.get(key)
    if model is None:
        model = _models[key] = rbd.Model.from_urdf(urdf_text, floating_base=floating_base)
    return model


def base_joint(model):
    """The model's floating base joint (JointInfo), or None for a fixed base."""
    floating = [j for j in model.joints if j.type == 'floating' and j.nv]
    return floating[0] if floating else None


def joint_rows(model):
    """(names, v indices) of the joints JointState carries: every moving joint but a floating
    base, in the model's order."""
    names, rows = [], []
    for name in model.joint_names:
        info = model.joint[name]
        if info.type == 'floating':
            continue
        names.append(name)
        rows.append(info.v_index)
    return names, np.array(rows, dtype=np.int64)


def analyze_log(path, urdf_text, options, progress=None):
    """The :class:`LogResult` of one log; a log that cannot be analysed is 'skipped' with the
    reason (never raises for a bad log). A long log is read in segments (logs.SEGMENT
    messages), each overlapping the previous one by two filter start-ups, so memory stays
    bounded and the samples each segment keeps tile the log."""
    started = time.perf_counter()
    model = model_for(urdf_text, options.floating_base)
    log = _LogSums(model, options, str(path))
    timings = log.timings
    try:
        floating = base_joint(model) is not None
        for piece in read_segments(path, options.topic, options.max_gap, progress,
                                   overlap=lambda period: 2 * _edge(1.0 / period, options),
                                   segment=logs.SEGMENT,
                                   base_topic=options.base_topic if floating else None,
                                   contact_topic=options.contact_topic if floating else None,
                                   timings=timings, dropped=log.dropped):
            log.add(piece)
        result = log.result()
    except LogError as exc:
        result = LogResult(path=str(path), status='skipped', reason=exc.problem)
    except MemoryError:
        result = LogResult(path=str(path), status='skipped',
                           reason=f'out of memory (a segment is {logs.SEGMENT:,} messages: see '
                                  'docs/analysis.md)')
    except (ValueError, FloatingPointError) as exc:      # the dynamics core refused the motion
        result = LogResult(path=str(path), status='skipped',
                           reason=f'the model\'s dynamics refused the filtered motion: {exc}')
    result.timings = timings
    timings['total'] = time.perf_counter() - started
    result.size = logs.log_size(path)
    return result


def _edge(rate, options):
    """Samples at each end of a segment inside the filter's start-up (EDGE_PERIODS)."""
    return int(math.ceil(EDGE_PERIODS * rate / options.cutoff - 1e-9))


class _LogSums:
    """One log's sums, segment by segment."""

    def __init__(self, model, options, path):
        self.model, self.options, self.path = model, options, path
        self.base_joint = base_joint(model)
        self.joint_names, self.rows = joint_rows(model)
        self.damping = np.ascontiguousarray(model.damping[self.rows])
        self.friction = np.ascontiguousarray(model.friction[self.rows])
        # the identification's joint rows: friction columns, and the speed under which a row
        # is left out (a joint with Coulomb friction: FRICTION_BAND)
        self.friction_rows = (np.arange(self.rows.size, dtype=np.int64) if options.friction
                              else np.full(self.rows.size, -1, np.int64))
        self.band = np.where(options.friction | (self.friction > 0.0), options.friction_band,
                             0.0)
        nj = len(self.joint_names)
        self.sums = {k: np.zeros(nj, dtype=np.int64 if k == 'n' else float) for k in SUMS}
        self.base = ({k: np.zeros(6, dtype=np.int64 if k == 'n' else float) for k in BASE_SUMS}
                     if self.base_joint is not None else None)
        self.normal = _empty_normal(model, options)
        self.series = [] if options.plots else None
        self.pieces = 0
        self.end = 0.0
        self.names = self.stamps = None
        self.timings = dict.fromkeys(STAGES, 0.0)
        self.dropped = dict.fromkeys(DROPPED, 0)
        self.contact_links = set()
        self.kept_end = None
        self.next_sample = None      # the grid sample the next segment starts keeping at

    def add(self, log):
        model, options = self.model, self.options
        first = self.pieces == 0
        self.pieces += 1
        if first:
            missing = [j for j in self.joint_names if j not in log.names]
            if missing:
                raise LogError(log.path, f'joints of the URDF missing from the log: '
                                         f'{", ".join(missing)} (the log has '
                                         f'{", ".join(log.names)})')
            self.names, self.stamps = log.names, log.stamps
        unknown = [name for name in log.contact_links if name not in model.frame_names]
        if unknown:
            raise LogError(log.path, f'{options.contact_topic} has wrenches on '
                                     f'{", ".join(unknown)}, not links of the URDF')
        columns = [log.names.index(j) for j in self.joint_names]
        n = log.t.size
        dt = (float(log.t[-1] - log.t[0]) / (n - 1)) if n > 1 else math.inf
        rate = 1.0 / dt
        if not options.cutoff < 0.5 * rate:
            raise LogError(log.path, f'sampled at {rate:.4g} Hz: the low-pass cut-off '
                                     f'({options.cutoff:g} Hz, --cutoff) must be below half of '
                                     'it')
        edge = _edge(rate, options)
        # the samples this segment keeps, by their number on the log's grid: from where the
        # segment before stopped (or the filter's start-up at the log's start) to one
        # start-up before its end; the overlap (two start-ups) makes them tile the log
        start = log.first_sample + edge if self.next_sample is None else self.next_sample
        stop = log.first_sample + n - edge
        if n < 4 * edge + 30:
            if first:
                raise LogError(log.path, f'{n} samples ({log.t[-1]:.3g} s): too short '
                                         f'for a {options.cutoff:g} Hz low-pass (at least '
                                         f'{4 * edge + 30} samples)')
            # the log's last few samples: those not kept by the segment before are left out,
            # and counted
            self.dropped['short_tail'] += max(0, stop - start)
            self.dropped['filter_edges'] += edge
            self.kept_end = None            # (the segment before's end: in the tail's count)
            return
        self.end = float(log.t[-1])
        started = time.perf_counter()
        if stop <= start:
            return
        # NaN or inf in what the log says (the filter would spread one over its neighbours)
        for name, values in (('positions', log.position), ('velocities', log.velocity),
                             ('efforts', log.effort)):
            if values is not None and not np.isfinite(values[:, columns]).all():
                raise LogError(log.path, f'NaN or inf in the {name}')
        for name, values in ((f'base states ({options.base_topic})', log.base),
                             (f'contact wrenches ({options.contact_topic})', log.contacts)):
            if values is not None and not np.isfinite(values).all():
                raise LogError(log.path, f'NaN or inf in the {name}')
        nq, nv = model.nq, model.nv
        qj = [model.joint[j].q_index for j in self.joint_names]
        base = self.base_joint
        direct = base is None and qj == list(range(nq)) and columns == list(range(nq))
        if direct:             # the log's columns are the model's coordinates, in its order
            q = log.position
        else:
            q = np.empty((n, nq))
            q[:, qj] = log.position[:, columns]
            if base is not None:
                q[:, base.q_index:base.q_index + 7] = log.base[:, :7]
        q = filters.filtfilt(q, options.cutoff, rate)
        if base is not None:
            quat = q[:, base.q_index + 3:base.q_index + 7]
            quat /= np.linalg.norm(quat, axis=1)[:, None]
        if log.velocity is not None:
            if direct:
                v = log.velocity
            else:
                v = np.empty((n, nv))
                v[:, self.rows] = log.velocity[:, columns]
                if base is not None:
                    v[:, base.v_index:base.v_index + 6] = log.base[:, 7:13]
            v = filters.filtfilt(v, options.cutoff, rate)
        else:
            v = np.empty((n, nv))
            if base is not None:
                v[:, base.v_index:base.v_index + 6] = filters.filtfilt(
                    log.base[:, 7:13], options.cutoff, rate)
            v[:, self.rows] = filters.gradient(q[:, qj], dt)
        a = filters.gradient(v, dt)
        # the efforts unfiltered: least squares averages their noise out, and a filter would
        # smear the Coulomb friction's step at each reversal into torques no model column has
        # (a 5-15% bias in the identified friction)
        keep = slice(start - log.first_sample, stop - log.first_sample)
        measured = np.ascontiguousarray(log.effort[keep][:, columns] if not direct else
                                        log.effort[keep])
        q, v, a, t = q[keep], v[keep], a[keep], log.t[keep]
        contacts = None
        if log.contacts is not None and log.contact_links:
            contacts = {name: np.ascontiguousarray(log.contacts[keep, k])
                        for k, name in enumerate(log.contact_links)}
            self.contact_links.update(log.contact_links)
        self.timings['filter'] += time.perf_counter() - started
        self.dropped['filter_edges'] += (edge if first else 0)
        self.kept_end = edge
        self.next_sample = stop
        self._sums(t, q, v, a, measured, contacts)

    def _sums(self, t, q, v, a, measured, contacts):
        model, options, normal = self.model, self.options, self.normal
        n = q.shape[0]
        rows = self.rows
        base = self.base_joint
        timings = self.timings
        clock = time.perf_counter()
        # the model's torque: one batched call per segment (numba's threads share its rows)
        tau = rbd.inverse_dynamics(model, q, v, a, contacts)
        needed = None
        if base is not None and contacts is not None:
            needed = rbd.inverse_dynamics(model, q, v, a)
        timings['dynamics'] += time.perf_counter() - clock
        clock = time.perf_counter()
        every = rows.size == model.nv          # (a fixed base: every row is a joint's)
        vj = v if every else np.ascontiguousarray(v[:, rows])
        rigid = tau if every else np.ascontiguousarray(tau[:, rows])
        # the model's torque (the URDF's joint friction added) and the residual's sums, in one
        # pass
        model_torque = np.empty_like(rigid)
        residual_sums = np.zeros((6, rows.size))
        kernels.joint_residual_sums(measured, rigid, vj, self.damping, self.friction,
                                    model_torque, residual_sums)
        if base is not None:
            # the base's rows: the wrench w the motion needs (no contacts), and e = what the
            # logged contacts leave of it (the rows of the call with them)
            b0 = base.v_index
            zero = np.zeros((n, 6))
            w_sums, e_sums = np.zeros((6, 6)), np.zeros((6, 6))
            kernels.residual_sums(np.ascontiguousarray((tau if needed is None else needed)
                                                       [:, b0:b0 + 6]), zero, zero, w_sums)
            if needed is not None:
                kernels.residual_sums(np.ascontiguousarray(tau[:, b0:b0 + 6]), zero, zero,
                                      e_sums)
            s = self.base
            s['n'] += n
            s['w'] += w_sums[0]
            s['ww'] += w_sums[1]
            s['w_max'] = np.maximum(s['w_max'], w_sums[2])
            s['e'] += e_sums[0]
            s['ee'] += e_sums[1]
            s['e_max'] = np.maximum(s['e_max'], e_sums[2])
        sums = self.sums
        sums['n'] += n
        for i, key in enumerate(('r', 'rr', 'r_max', 'v', 'vv', 'rv')):
            sums[key] = np.maximum(sums[key], residual_sums[i]) if key == 'r_max' else \
                sums[key] + residual_sums[i]
        timings['sums'] += time.perf_counter() - clock
        if options.identifying:
            # what the identification explains: the rigid bodies' torques always; the URDF's
            # joint friction unless friction is identified (then it is fitted whole)
            b = measured - rigid if options.friction else measured - model_torque
            equations = (rows, b, vj, self.friction_rows, self.band)
            if base is not None and contacts is not None and options.payload_link is not None:
                # the base's six rows too: no motor drives them (measured 0), so what the
                # logged contacts leave of them is what a payload on the robot explains (the
                # rows that weigh a payload on the base itself, which no joint carries); they
                # have no friction column, so without a payload they would only add their
                # residual (N, N m) to the joints' variance
                b0 = base.v_index
                zero = np.zeros(6)
                equations = (np.r_[np.arange(b0, b0 + 6), rows],
                             np.hstack([-tau[:, b0:b0 + 6], b]),
                             np.hstack([np.zeros((n, 6)), vj]),
                             np.r_[np.full(6, -1, np.int64), self.friction_rows],
                             np.r_[zero, self.band])
            clock = time.perf_counter()
            regressor = other = 0.0
            for M, g, bb, left_out, spent in _normal_equations(model, options, q, v, a,
                                                                *equations):
                normal[0] += M
                normal[1] += g
                normal[2] += bb[0]
                normal[3] += int(bb[1])
                normal[4] += left_out[left_out.size - rows.size:]
                regressor, other = regressor + spent[0], other + spent[1]
            wall = time.perf_counter() - clock      # (threads: their seconds, as wall time)
            timings['dynamics'] += wall * regressor / max(regressor + other, 1e-12)
            timings['sums'] += wall * other / max(regressor + other, 1e-12)
        if self.series is not None:
            step = max(1, n // PLOT_POINTS)
            r = measured - model_torque
            self.series.append((t[::step], measured[::step], model_torque[::step],
                                r[::max(1, n // (5 * PLOT_POINTS))]))

    def result(self):
        ignored = tuple(n for n in self.names if n not in self.joint_names)
        series = None
        if self.series is not None:
            t, measured, model, residual = (np.concatenate(x) for x in zip(*self.series))
            step = max(1, t.size // (4 * PLOT_POINTS))     # a long log: at most 4 segments' worth
            series = {'t': t[::step], 'measured': measured[::step], 'model': model[::step],
                      'residual': residual}
        if self.kept_end is not None:
            self.dropped['filter_edges'] += self.kept_end      # the last segment's end
        return LogResult(path=self.path, status='ok', samples=int(self.sums['n'][0]),
                         duration_s=self.end, ignored_joints=ignored, stamps=self.stamps,
                         sums=self.sums,
                         normal=tuple(self.normal) if self.options.identifying else None,
                         series=series, timings=self.timings, base=self.base,
                         dropped=self.dropped, contact_links=tuple(sorted(self.contact_links)))


def _normal_equations(model, options, q, v, a, rows, b, vj, friction_rows, band):
    """Per CHUNK of samples, in order: (A^T A (upper triangle), A^T b, [b^T b, rows used],
    rows left out per row, (s in the regressor, s in the sums)) of the model's velocity rows
    ``rows`` (b: measured - model on them; vj their speeds; friction_rows and band as
    kernels.normal_equations takes them). The chunks run on as many threads as numba has (the
    regressor and the sums release the GIL); each chunk's sums are its own and are added in
    chunk order, so the result is the same bits whatever the thread count."""
    n, m = b.shape
    p = len(parameter_names(model, options))
    no_payload = np.zeros((1, 1, 10))

    def chunk(start):
        k = slice(start, min(start + CHUNK, n))
        clock = time.perf_counter()
        Y = None
        if options.payload_link is not None:
            Y = rbd.inertial_regressor(model, q[k], v[k], a[k], link=options.payload_link)
            Y = np.ascontiguousarray(Y[:, rows])
        regressor = time.perf_counter() - clock
        M, g, bb, left_out = np.zeros((p, p)), np.zeros(p), np.zeros(2), np.zeros(m, np.int64)
        kernels.normal_equations(np.ascontiguousarray(b[k]), np.ascontiguousarray(vj[k]),
                                 friction_rows, band, no_payload if Y is None else Y,
                                 Y is not None, M, g, bb, left_out)
        return M, g, bb, left_out, (regressor, time.perf_counter() - clock - regressor)

    starts = range(0, n, CHUNK)
    threads = min(kernels_threads(), len(starts))
    if threads <= 1:
        yield from map(chunk, starts)
        return
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(threads) as pool:
        yield from pool.map(chunk, starts)


def kernels_threads():
    """The threads the analysis may use in this process: numba's (NUMBA_NUM_THREADS, or
    numba.set_num_threads in this thread; 1 in each Dask worker, see cli.py)."""
    from rbd_ros.dynamics._jit import thread_count
    return max(1, thread_count())


def parameter_names(model, options):
    """The identification's unknowns, in column order."""
    names = []
    if options.friction:
        for j in joint_rows(model)[0]:
            names += [f'{j}.viscous', f'{j}.coulomb']
    if options.payload_link is not None:
        names += [f'payload.{p}' for p in ('m', 'mcx', 'mcy', 'mcz', 'ixx', 'ixy', 'iyy', 'ixz',
                                           'iyz', 'izz')]
    return names


def _empty_normal(model, options):
    p = len(parameter_names(model, options))
    return [np.zeros((p, p)), np.zeros(p), 0.0, 0,
            np.zeros(len(joint_rows(model)[0]), np.int64)]


# ---- logs together ------------------------------------------------------------------------
@dataclasses.dataclass
class Summary:
    """Every log's status, per-joint residual statistics, a floating base's wrench, and the
    identified parameters."""

    model: str
    logs: list
    joints: dict
    friction: dict | None = None     # {joint: {'viscous', 'coulomb', ...}}
    payload: dict | None = None
    base: dict | None = None         # a floating base's rows (see combine)


def combine(model, results, options):
    """The summary of the logs' results (in the given order: the sums are added in it, so the
    same logs give the same numbers wherever they ran)."""
    ok = [r for r in results if r.status == 'ok']
    names, _ = joint_rows(model)
    nj = len(names)
    total = {k: np.zeros(nj, dtype=np.int64 if k == 'n' else float) for k in SUMS}
    for r in ok:
        for k in SUMS:
            total[k] = np.maximum(total[k], r.sums[k]) if k == 'r_max' else total[k] + r.sums[k]
    joints = {}
    for j, name in enumerate(names):
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
        slow = sum(r.normal[4] for r in ok)
        for j, name in enumerate(names):
            if joints[name]['samples']:
                joints[name]['slow_samples'] = int(slow[j])
    if base_joint(model) is not None:
        summary.base = _base_entry(model, options, ok)
    if ok and options.identifying:
        normal = _empty_normal(model, options)
        for r in ok:
            for i in range(5):
                normal[i] += r.normal[i]
        M = normal[0]
        normal[0] = np.triu(M) + np.triu(M, 1).T      # the kernels fill the upper triangle
        _identify(model, options, normal, summary)
    return summary


def _base_entry(model, options, ok):
    """A floating base's six rows over the logs: the external wrench the motion needs (at the
    base's origin, in its frame: inverse dynamics' base rows without the contacts), and, when
    contact wrenches were logged, what they leave of it."""
    total = {k: np.zeros(6, dtype=np.int64 if k == 'n' else float) for k in BASE_SUMS}
    contacts = sorted({link for r in ok for link in r.contact_links})
    for r in ok:
        for k in BASE_SUMS:
            total[k] = (np.maximum(total[k], r.base[k]) if k.endswith('_max') else
                        total[k] + r.base[k])
    n = int(total['n'][0])
    entry = {'link': base_joint(model).child, 'rows': list(BASE_ROWS), 'samples': n,
             'contact_links': contacts}
    if n == 0:
        return entry
    entry.update(wrench_mean=[float(x) for x in total['w'] / n],
                 wrench_rms=[float(x) for x in np.sqrt(total['ww'] / n)],
                 wrench_max=[float(x) for x in total['w_max']])
    if options.contact_topic and contacts:
        entry.update(residual_mean=[float(x) for x in total['e'] / n],
                     residual_rms=[float(x) for x in np.sqrt(total['ee'] / n)],
                     residual_max=[float(x) for x in total['e_max']])
    return entry


def _log_entry(r):
    entry = {'path': r.path, 'status': r.status, 'reason': r.reason, 'samples': r.samples,
             'duration_s': r.duration_s}
    if r.status == 'ok':
        entry['dropped'] = dict(r.dropped)
    if r.ignored_joints:
        entry['ignored_joints'] = list(r.ignored_joints)
    return entry


def _identify(model, options, normal, summary):
    """Solve the least squares from its normal equations. Parameters the motion does not
    determine (a joint that never moved; a payload's inertia from slow or too little motion)
    are left out of the solve and reported as such."""
    M = normal[0]
    names, _ = joint_rows(model)
    nf = 2 * len(names) if options.friction else 0
    # a joint's two friction columns, when it moved both ways at more than one speed
    friction = [i for j in range(nf // 2) if _determined(M, [2 * j, 2 * j + 1])
                for i in (2 * j, 2 * j + 1)]
    nothing = ('the motion does not determine even the mass and centre of mass (the link '
               'needs at least two orientations against gravity')
    if base_joint(model) is not None and not summary.base['contact_links']:
        nothing += ("; on a floating base the contact wrenches (--contact-topic) add the base's "
                    'rows, which weigh a payload that no joint carries')
    chosen, mode, why = friction, None, nothing + ')'
    x = std = None
    if options.payload_link is not None:
        for mode in ('all', 'mass_and_com'):
            chosen = friction + list(range(nf, nf + (10 if mode == 'all' else 4)))
            if not _determined(M, chosen):
                why = ('the motion does not determine the inertia (too slow or too little '
                       'rotation)') if mode == 'all' else nothing + ')'
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
        for j, name in enumerate(names):
            i = 2 * j
            if i in chosen and i + 1 in chosen:
                summary.friction[name] = {'viscous': float(x[i]), 'coulomb': float(x[i + 1]),
                                          'viscous_std': float(std[i]),
                                          'coulomb_std': float(std[i + 1])}
            else:
                summary.friction[name] = {'viscous': None, 'coulomb': None,
                                          'reason': 'the joint did not move enough in the logs'}
    if options.payload_link is not None:
        slow = int(np.sum(normal[4]))
        if mode != 'all' and slow:
            why += (f'; {slow} joint samples slower than --friction-band were left out (joints '
                    'with Coulomb friction: in stiction it is unknown)')
        summary.payload = _payload_entry(model, options.payload_link, mode, why, x[nf:nf + 10],
                                         std[nf:nf + 10])


def _solve(normal, chosen):
    """(x, standard errors) of the least squares on the columns ``chosen`` (the others 0 and
    NaN), from its normal equations, columns scaled to unit norm first."""
    M, g, bb, rows = normal[:4]
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


def no_payload(entry) -> bool:
    """Whether a payload entry says the link carries none (a mass within NO_PAYLOAD_SIGMAS
    standard errors of zero), rather than that the payload was not identified."""
    return entry['reason'].startswith(NO_PAYLOAD)


def _payload_entry(model, link, mode, why, delta, std):
    """The report's payload: what was identified, and why not more."""
    nothing = {'link': link, 'mass': None, 'com': None, 'inertia': None,
               'identified': 'nothing', 'reason': why}
    if mode is None:
        return nothing
    if abs(delta[0]) <= NO_PAYLOAD_SIGMAS * std[0]:
        return {**nothing, 'mass': float(delta[0]), 'mass_std': float(std[0]),
                'reason': f'{NO_PAYLOAD}: its mass, {delta[0]:.3g} kg, is within '
                          f'{NO_PAYLOAD_SIGMAS:g} standard errors ({std[0]:.2g} kg) of zero'}
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
