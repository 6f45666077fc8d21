"""`python -m rbd_ros analyze LOG... --urdf ROBOT.urdf` (also `rbd_analyze`): torque residuals
and identification from rosbag2 logs, serially or on a Dask cluster.

Exit status: 0 when at least one log was analysed, 1 when none was, 2 for a usage error (an
option, the URDF, the payload's link).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from .compute import Options, analyze_log, combine, model_for

EPILOG = '''\
A LOG is a rosbag2 bag folder (metadata.yaml and its .mcap or .db3 files), a bare .mcap or .db3
file, or a folder holding such logs (searched recursively). Each log is analysed on its own and
the sums are added, so --workers N and --scheduler give the serial numbers.

The residual is measured effort minus the model's torque: inverse dynamics at the filtered
motion, plus the URDF's joint damping and friction. --identify friction fits, per joint,
effort = inverse dynamics + viscous v + coulomb sign(v) (replacing the URDF's values);
--identify payload:LINK fits a payload on LINK (all ten inertial parameters, or its mass and
centre of mass when the motion cannot tell its inertia: the output says which). Given both,
they are one least-squares problem.

examples:
  python -m rbd_ros analyze ~/bags --urdf robot.urdf
  python -m rbd_ros analyze run1.mcap run2_db3/ --urdf robot.urdf --identify friction \\
      --identify payload:tool0 --write-params identified.yaml --json report.json
  python -m rbd_ros analyze ~/fleet --urdf robot.urdf --workers 8
  python -m rbd_ros analyze /shared/fleet --urdf robot.urdf --scheduler tcp://10.0.0.5:8786
'''


def build_parser():
    prog = ('rbd_analyze' if os.path.basename(sys.argv[0]) == 'rbd_analyze' else
            'python -m rbd_ros analyze')
    parser = argparse.ArgumentParser(
        prog=prog, description='Torque residuals (measured effort minus '
        "the model's torque) and friction and payload identification from rosbag2 logs.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('logs', nargs='+', metavar='LOG', help='bag folder, .mcap or .db3 '
                        'file, or a folder of them')
    parser.add_argument('--urdf', required=True, help='the robot description (a fixed-base '
                        'robot: the URDF the logs were recorded with)')
    parser.add_argument('--topic', default='/joint_states',
                        help='the sensor_msgs/JointState topic (default: /joint_states)')
    parser.add_argument('--cutoff', type=float, default=10.0, metavar='HZ',
                        help='low-pass cut-off before differentiation: 4th-order Butterworth, '
                        'zero-phase, on positions and velocities (default: 10 Hz; below half '
                        'the sample rate; the efforts are not filtered)')
    parser.add_argument('--max-gap', type=float, metavar='SECONDS',
                        help='the longest step between two stamps a log may have (default: 5 '
                        'median periods)')
    parser.add_argument('--identify', action='append', default=[], metavar='WHAT',
                        help='friction, or payload:LINK (may be given twice)')
    parser.add_argument('--json', metavar='PATH', help='write the report as JSON')
    parser.add_argument('--plots', metavar='DIR', help='one PNG per joint: measured and model '
                        'torque over time, residual histogram')
    parser.add_argument('--write-params', metavar='PATH', help='write the identified friction '
                        'and payload as a ROS 2 parameters file for dynamics_node and sim_node')
    run = parser.add_mutually_exclusive_group()
    run.add_argument('--workers', type=int, default=0, metavar='N',
                     help='analyse the logs in parallel on a local Dask cluster of N processes')
    run.add_argument('--scheduler', metavar='ADDRESS',
                     help='send the logs to a running Dask scheduler (tcp://host:8786); its '
                     'workers need rbd_ros[analyze] and the logs at the same paths')
    parser.add_argument('--quiet', action='store_true', help='no progress bar, no per-log lines')
    return parser


class UsageError(Exception):
    pass


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        urdf_text, options = _setup(args)
    except UsageError as exc:
        print(f'rbd_analyze: error: {exc}', file=sys.stderr)
        return 2
    model = model_for(urdf_text)
    paths, missing = find_logs(args.logs)
    results_missing = [(path, reason) for path, reason in missing]
    say = (lambda text: None) if args.quiet else (
        lambda text: print(text, file=sys.stderr, flush=True))
    for path, reason in results_missing:
        say(f'skipped {path}: {reason}')
    progress = Progress(paths, enabled=not args.quiet and sys.stderr.isatty())
    t0 = time.monotonic()
    try:
        results = run_logs(paths, urdf_text, options, args, progress, say)
    except UsageError as exc:
        progress.close()
        print(f'rbd_analyze: error: {exc}', file=sys.stderr)
        return 2
    progress.close()
    wall = time.monotonic() - t0
    from .compute import LogResult
    results += [LogResult(path=path, status='skipped', reason=reason) for path, reason in missing]
    summary = combine(model, results, options)
    print(report_text(summary, wall))
    if args.json:
        _write(args.json, json.dumps(report_json(summary), indent=2) + '\n')
    if args.plots and any(r.status == 'ok' for r in results):
        from .plots import write_plots
        written = write_plots(args.plots, model, results)
        say(f'plots: {len(written)} PNG files in {args.plots}')
    if args.write_params:
        text, warnings = params_yaml(summary, len([r for r in results if r.status == 'ok']))
        for warning in warnings:
            say(f'warning: {warning}')
        if text is None:
            say('--write-params: nothing identified, nothing written')
        else:
            _write(args.write_params, text)
            say(f'parameters for dynamics_node and sim_node written to {args.write_params} '
                f'(--params-file {args.write_params})')
    return 0 if any(r.status == 'ok' for r in results) else 1


def _setup(args):
    from rbd_ros.description import read_description
    try:        # any readable path, a pipe included (<(xacro robot.urdf.xacro)); .xacro expanded
        urdf_text, _ = read_description(args.urdf, say=lambda line: print(line, file=sys.stderr))
    except ValueError as exc:
        raise UsageError(f'--urdf {exc}') from None
    import rbd_ros.dynamics as rbd
    try:
        model = model_for(urdf_text)
    except rbd.ModelError as exc:
        raise UsageError(f'--urdf {args.urdf} does not load: {str(exc).splitlines()[0]}') \
            from None
    multi = [j.name for j in model.joints if j.type in ('planar', 'floating') and j.nv]
    if multi:
        raise UsageError(f'--urdf {args.urdf}: joint {multi[0]!r} is {model.joint[multi[0]].type}'
                         ': the analysis is for fixed-base robots whose joints JointState '
                         'carries (revolute, continuous, prismatic)')
    if model.constraint_names:      # the tree's torques are not the motors' in a closed loop
        raise UsageError(f'--urdf {args.urdf} closes kinematic loops with <constraint> '
                         f'({", ".join(map(repr, model.constraint_names))}): the analysis '
                         'does not handle closed loops yet')
    if not (math.isfinite(args.cutoff) and args.cutoff > 0):
        raise UsageError(f'--cutoff must be a positive number of Hz, got {args.cutoff}')
    if args.max_gap is not None and not (math.isfinite(args.max_gap) and args.max_gap > 0):
        raise UsageError(f'--max-gap must be a positive number of seconds, got {args.max_gap}')
    if args.workers < 0:
        raise UsageError(f'--workers must be >= 1, got {args.workers}')
    friction, link = False, None
    for what in args.identify:
        if what == 'friction':
            friction = True
        elif what.startswith('payload:') and what[len('payload:'):]:
            link = what[len('payload:'):]
            from rbd_ros.dynamics.identification import payload_columns
            try:
                payload_columns(model, link)
            except ValueError as exc:
                links = ', '.join(model.frame_names)
                raise UsageError(f'--identify {what}: {exc} (links: {links})') from None
        else:
            raise UsageError(f'--identify {what!r}: expected friction or payload:LINK')
    return urdf_text, Options(topic=args.topic, cutoff=args.cutoff, max_gap=args.max_gap,
                              friction=friction, payload_link=link, plots=bool(args.plots))


def find_logs(arguments):
    """(log paths in order, [(argument, reason)] for arguments that hold none)."""
    paths, missing = [], []
    for arg in arguments:
        if not os.path.exists(arg):
            missing.append((arg, 'no such file or folder'))
        elif os.path.isfile(arg) or os.path.exists(os.path.join(arg, 'metadata.yaml')):
            paths.append(arg)
        else:
            found = []
            for root, dirs, files in os.walk(arg):
                dirs.sort()
                if 'metadata.yaml' in files:
                    found.append(root)
                    dirs[:] = []          # a bag's own files are not logs of their own
                    continue
                found += [os.path.join(root, f) for f in sorted(files)
                          if f.endswith(('.mcap', '.db3'))]
            if found:
                paths += found
            else:
                missing.append((arg, 'no rosbag2 logs in this folder (bag folders, .mcap or '
                                     '.db3 files)'))
    return paths, missing


def run_logs(paths, urdf_text, options, args, progress, say):
    """Each log's LogResult, in the order of ``paths``."""
    if not args.workers and not args.scheduler:
        results = []
        for path in paths:
            progress.start(path)
            result = analyze_log(path, urdf_text, options, progress.messages)
            progress.done(path, result.samples)
            _tell(result, say)
            results.append(result)
        return results
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UsageError('--workers and --scheduler need dask[distributed] (pip install '
                         "'rbd_ros[analyze]')") from None
    cluster = None
    try:
        if args.scheduler:
            try:
                client = Client(args.scheduler, timeout='10s')
            except (OSError, TimeoutError) as exc:
                raise UsageError(f'--scheduler {args.scheduler}: cannot connect '
                                 f'({exc})') from None
        else:
            cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=40)
            client = Client(cluster)
        with client:
            # absolute paths: a worker's working directory is its own, not this shell's
            futures = {client.submit(analyze_log, os.path.abspath(path), urdf_text, options,
                                     pure=False): path
                       for path in paths}
            by_path = {}
            for future in as_completed(futures):
                path = futures[future]
                try:
                    result = future.result()
                except Exception as exc:     # noqa: BLE001 - a worker that died, a bug
                    from .compute import LogResult
                    result = LogResult(path=path, status='skipped',
                                       reason=f'failed on its worker: {type(exc).__name__}: '
                                              f'{exc}')
                result.path = path           # as the user named it
                by_path[path] = result
                progress.done(path, result.samples)
                _tell(result, say)
            return [by_path[path] for path in paths]
    finally:
        if cluster is not None:
            cluster.close()


def _tell(result, say):
    if result.status != 'ok':
        progress_clear()
        say(f'skipped {result.path}: {result.reason}')
    elif result.ignored_joints:
        progress_clear()
        say(f'{result.path}: joints not in the URDF, ignored: {", ".join(result.ignored_joints)}')


_active_bar = [None]


def progress_clear():
    if _active_bar[0] is not None:
        _active_bar[0].clear()


class Progress:
    """A progress bar on stderr (a terminal only): the share of the logs' bytes done, the
    samples so far and the time left. Redrawn at most 5 times a second."""

    def __init__(self, paths, enabled):
        self.enabled = enabled and len(paths) > 0
        self.size = {p: max(_size(p), 1) for p in paths} if self.enabled else {}
        self.total = sum(self.size.values()) or 1
        self.finished = 0.0
        self.current = None
        self.current_read = 0
        self.current_count = 1
        self.samples = 0
        self.logs_done = 0
        self.n_logs = len(paths)
        self.t0 = time.monotonic()
        self.last = 0.0
        self.shown = False
        _active_bar[0] = self

    def start(self, path):
        if not self.enabled:
            return
        self.current, self.current_read = path, 0
        try:
            from rosbags.rosbag2 import Reader
            with Reader(path) as reader:
                self.current_count = max(reader.message_count, 1)
        except Exception:    # noqa: BLE001 - the analysis itself will say what is wrong
            self.current_count = 1

    def messages(self, n):
        if not self.enabled:
            return
        self.current_read += n
        self.draw()

    def done(self, path, samples):
        self.logs_done += 1
        self.samples += samples
        if not self.enabled:
            return
        self.finished += self.size[path]
        self.current = None
        self.draw(force=True)

    def draw(self, force=False):
        now = time.monotonic()
        if not force and now - self.last < 0.2:
            return
        self.last = now
        part = 0.0
        if self.current is not None:
            part = self.size[self.current] * min(self.current_read / self.current_count, 1.0)
        fraction = min((self.finished + part) / self.total, 1.0)
        elapsed = now - self.t0
        left = elapsed * (1 - fraction) / fraction if fraction > 0.01 else math.nan
        bar = '#' * int(30 * fraction) + '-' * (30 - int(30 * fraction))
        text = (f'\r[{bar}] {100 * fraction:3.0f}%  {self.logs_done}/{self.n_logs} logs  '
                f'{self.samples:,} samples  '
                + (f'{left:.0f} s left' if math.isfinite(left) else ''))
        sys.stderr.write(text.ljust(90))
        sys.stderr.flush()
        self.shown = True

    def clear(self):
        if self.enabled and self.shown:
            sys.stderr.write('\r' + ' ' * 90 + '\r')
            sys.stderr.flush()
            self.last = 0.0

    def close(self):
        self.clear()
        _active_bar[0] = None


def _size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path)
               for f in files)


# ---- output -------------------------------------------------------------------------------
def report_json(summary):
    """The JSON layout other tools read (docs/analysis.md)."""
    joints = {}
    for name, stats in summary.joints.items():
        entry = dict(stats)
        if summary.friction is not None:
            f = summary.friction[name]
            entry['friction'] = {'viscous': f['viscous'], 'coulomb': f['coulomb']}
            if f.get('reason'):
                entry['friction']['reason'] = f['reason']
            else:
                entry['friction'].update(viscous_std=f['viscous_std'],
                                         coulomb_std=f['coulomb_std'])
        joints[name] = entry
    out = {'model': summary.model, 'logs': summary.logs, 'joints': joints}
    if summary.payload is not None:
        out['payload'] = summary.payload
    return out


def report_text(summary, wall):
    ok = [log for log in summary.logs if log['status'] == 'ok']
    samples = sum(log['samples'] for log in ok)
    hours = sum(log['duration_s'] for log in ok) / 3600.0
    skipped = len(summary.logs) - len(ok)
    lines = [f'{summary.model}: {len(summary.logs)} log{"s" if len(summary.logs) != 1 else ""}, '
             f'{len(ok)} analysed ({samples:,} samples, {_duration(hours * 3600)}), '
             f'{skipped} skipped, in {wall:.1f} s']
    if not ok:
        return '\n'.join(lines)
    lines.append('')
    header = (f'{"joint":<16} {"samples":>10} {"mean":>9} {"rms":>9} {"max|r|":>9} '
              f'{"corr(v)":>8}')
    if summary.friction is not None:
        header += f' {"viscous":>10} {"coulomb":>9}'
    lines += ['residual = measured effort - model torque (N m, or N for a prismatic joint)',
              header]
    for name, s in summary.joints.items():
        if not s['samples']:
            lines.append(f'{name:<16} {0:>10}')
            continue
        corr = s['velocity_correlation']
        row = (f'{name:<16} {s["samples"]:>10,} {s["residual_mean"]:>9.4g} '
               f'{s["residual_rms"]:>9.4g} {s["residual_max"]:>9.4g} '
               f'{"-" if corr is None else format(corr, ".2f"):>8}')
        if summary.friction is not None:
            f = summary.friction[name]
            row += (f' {f["viscous"]:>10.4g} {f["coulomb"]:>9.4g}' if f['viscous'] is not None
                    else '   (did not move enough)')
        lines.append(row)
    strong = [n for n, s in summary.joints.items() if s.get('velocity_correlation') is not None
              and abs(s['velocity_correlation']) > 0.5]
    if strong and summary.friction is None:
        lines.append(f'corr(v) > 0.5 on {", ".join(strong)}: friction the URDF does not '
                     'have (--identify friction)')
    if summary.friction is not None:
        lines.append('friction: viscous N m s/rad (N s/m), coulomb N m (N); effort = model + '
                     'viscous v + coulomb sign(v)')
    p = summary.payload
    if p is not None:
        lines.append('')
        if p['mass'] is None or p['com'] is None:
            lines.append(f'payload on {p["link"]}: not identified: {p["reason"]}')
        else:
            lines.append(f'payload on {p["link"]}: {p["mass"]:.4g} kg (std {p["mass_std"]:.2g}) '
                         f'at com [{", ".join(f"{c:.4g}" for c in p["com"])}] m; identified: '
                         f'{p["identified"]}')
            if p['inertia'] is not None:
                lines.append('  inertia about the com (ixx ixy ixz iyy iyz izz, kg m^2): '
                             + ' '.join(f'{x:.4g}' for x in p['inertia']))
    return '\n'.join(lines)


def _duration(seconds):
    if seconds >= 3600:
        return f'{seconds / 3600:.2f} h'
    if seconds >= 60:
        return f'{seconds / 60:.1f} min'
    return f'{seconds:.1f} s'


def params_yaml(summary, n_logs):
    """(YAML text or None when nothing was identified, warnings): the parameters dynamics_node
    and sim_node read (docs/analysis.md)."""
    warnings = []
    lines = [f'# written by rbd_analyze from {n_logs} log{"s" if n_logs != 1 else ""} of '
             f'{summary.model}', '/**:', '  ros__parameters:']
    wrote = False
    if summary.friction is not None:
        names, damping, friction = [], [], []
        for name, f in summary.friction.items():
            if f['viscous'] is None:
                warnings.append(f'{name}: friction not identified, not written (the URDF\'s '
                                'stays)')
                continue
            b, c = f['viscous'], f['coulomb']
            if b < 0 or c < 0:
                warnings.append(f'{name}: identified friction is negative (viscous {b:.3g}, '
                                f'coulomb {c:.3g}): written as 0 (the URDF, the efforts or the '
                                'logs disagree; check the residuals)')
            names.append(name)
            damping.append(max(b, 0.0))
            friction.append(max(c, 0.0))
        if names:
            wrote = True
            lines += [f'    joint_dynamics_joints: [{", ".join(names)}]',
                      f'    joint_damping: [{", ".join(repr(x) for x in damping)}]',
                      f'    joint_friction: [{", ".join(repr(x) for x in friction)}]']
    p = summary.payload
    if p is not None:
        if p['mass'] is None or p['com'] is None or p['mass'] <= 0:
            warnings.append(f'payload on {p["link"]}: not identified, not written')
        else:
            inertia = p['inertia'] or [0.0] * 6
            problem = _inertia_problem(inertia)
            if problem is not None:
                warnings.append(f'payload on {p["link"]}: the identified inertia is not '
                                f'physical ({problem}): written as a point mass')
                inertia = [0.0] * 6
            values = [p['mass'], *p['com'], *inertia]
            wrote = True
            lines += [f'    # {p["identified"]}',
                      f'    payload_link: {p["link"]}',
                      '    # m, com x y z (link frame), inertia about the com ixx ixy ixz iyy '
                      'iyz izz',
                      f'    payload: [{", ".join(repr(float(x)) for x in values)}]']
    return ('\n'.join(lines) + '\n' if wrote else None), warnings


def _inertia_problem(six):
    import numpy as np

    from rbd_ros.dynamics.inertia import inertia_problem
    xx, xy, xz, yy, yz, zz = six
    return inertia_problem(np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))


def _write(path, text):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


if __name__ == '__main__':
    raise SystemExit(main())
