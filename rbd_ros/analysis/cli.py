"""`python -m rbd_ros analyze LOG... --urdf ROBOT.urdf` (also `rbd_analyze`): torque residuals
and identification from rosbag2 logs, serially, on worker processes of this machine or on a Dask
cluster (run.py).

Exit status: 0 when at least one log was analysed, 1 when none was, 2 for a usage error (an
option, the URDF, the payload's link).

This module imports nothing heavy at its top: numba, the kernels and rosbags are imported in
main(), where --profile times them as the command's start-up.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

EPILOG = '''\
A LOG is a rosbag2 bag folder (metadata.yaml and its .mcap or .db3 files), a bare .mcap or .db3
file, or a folder holding such logs (searched recursively). Each log is analysed on its own and
the sums are added, so --workers N and --scheduler give the serial numbers.

The residual is measured effort minus the model's torque: inverse dynamics at the filtered
motion, plus the URDF's joint damping and friction. --identify friction fits, per joint,
effort = inverse dynamics + viscous v + coulomb sign(v) (replacing the URDF's values);
--identify payload:LINK fits a payload on LINK (all ten inertial parameters, or its mass and
centre of mass when the motion cannot tell its inertia: the output says which). Given both,
they are one least-squares problem. A joint with Coulomb friction is left out of it where it
moves slower than --friction-band (stiction: its friction is then unknown).

A legged robot (--floating-base, or a floating joint in the URDF): the base's state comes from
--base-topic (nav_msgs/Odometry) and, with --contact-topic, the contact wrenches enter the
inverse dynamics; the base's six rows (the external wrench the motion needs) are reported apart
from the joints', and with the contacts they weigh a payload (one on the base: only they can).

examples:
  python -m rbd_ros analyze ~/bags --urdf robot.urdf
  python -m rbd_ros analyze run1.mcap run2_db3/ --urdf robot.urdf --identify friction \\
      --identify payload:tool0 --write-params identified.yaml --json report.json
  python -m rbd_ros analyze ~/fleet --urdf robot.urdf --workers auto --profile
  python -m rbd_ros analyze /shared/fleet --urdf robot.urdf --scheduler tcp://10.0.0.5:8786
  python -m rbd_ros analyze solo_run/ --urdf solo12.urdf --floating-base \\
      --contact-topic /rbd_sim/contact_wrenches --identify friction --identify payload:base_link
'''


def _workers(text):
    if text == 'auto':
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or 'auto', got "
                                         f"{text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f'must be >= 1 (or auto), got {value}')
    return value


def build_parser():
    prog = ('rbd_analyze' if os.path.basename(sys.argv[0]) == 'rbd_analyze' else
            'python -m rbd_ros analyze')
    parser = argparse.ArgumentParser(
        prog=prog, description='Torque residuals (measured effort minus '
        "the model's torque) and friction and payload identification from rosbag2 logs.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('logs', nargs='+', metavar='LOG', help='bag folder, .mcap or .db3 '
                        'file, or a folder of them')
    parser.add_argument('--urdf', required=True, help='the robot description (the URDF the '
                        'logs were recorded with)')
    parser.add_argument('--topic', default='/joint_states',
                        help='the sensor_msgs/JointState topic (default: /joint_states)')
    parser.add_argument('--floating-base', action='store_true',
                        help="the URDF's root link is free (a legged robot, a humanoid): its "
                        'state comes from --base-topic')
    parser.add_argument('--base-topic', default=None, metavar='TOPIC',
                        help='nav_msgs/Odometry of the floating base: pose in the world, twist '
                        "in the base's frame (default: /rbd_sim/base_state, what sim_node "
                        'publishes)')
    parser.add_argument('--contact-topic', default=None, metavar='TOPIC',
                        help='geometry_msgs/WrenchStamped contact wrenches (one message per '
                        'link in contact, in its frame, stamped as the joint states: '
                        "sim_node's /rbd_sim/contact_wrenches); they enter the inverse "
                        'dynamics as external wrenches')
    parser.add_argument('--cutoff', type=float, default=10.0, metavar='HZ',
                        help='low-pass cut-off before differentiation: 4th-order Butterworth, '
                        'zero-phase, on positions and velocities (default: 10 Hz; below half '
                        'the sample rate; the efforts are not filtered)')
    parser.add_argument('--max-gap', type=float, metavar='SECONDS',
                        help='the longest step between two stamps a log may have (default: 5 '
                        'median periods)')
    parser.add_argument('--identify', action='append', default=[], metavar='WHAT',
                        help='friction, or payload:LINK (may be given twice)')
    parser.add_argument('--friction-band', type=float, default=None, metavar='SPEED',
                        help='the identification leaves out a joint with Coulomb friction '
                        '(identified, or the URDF\'s) at the samples where it moves slower than '
                        'this, rad/s or m/s: in stiction its friction is anything between '
                        '-coulomb and coulomb (default: 0.05; 0: every sample)')
    parser.add_argument('--json', metavar='PATH', help='write the report as JSON')
    parser.add_argument('--plots', metavar='DIR', help='one PNG per joint: measured and model '
                        'torque over time, residual histogram')
    parser.add_argument('--write-params', metavar='PATH', help='write the identified friction '
                        'and payload as a ROS 2 parameters file for dynamics_node and sim_node')
    run = parser.add_mutually_exclusive_group()
    run.add_argument('--workers', type=_workers, default=None, metavar='N',
                     help='analyse the logs in parallel on N worker processes of this machine '
                     '(one numba thread each; at most one per log; a warning when their '
                     'start-up took longer than the analysis), or \'auto\': as many as cores '
                     'and logs, when that is estimated to be faster than this process on '
                     'all cores, else in this process')
    run.add_argument('--scheduler', metavar='ADDRESS',
                     help='send the logs to a running Dask scheduler (tcp://host:8786); its '
                     'workers need rbd_ros[analyze] and find and read the logs themselves, at '
                     'the paths given (relative ones made absolute against this directory)')
    parser.add_argument('--profile', action='store_true',
                        help='print the time of each stage (start-up, read, decode, resample, '
                        'filter, dynamics, sums)')
    parser.add_argument('--quiet', action='store_true', help='no progress, no per-log lines')
    return parser


class UsageError(Exception):
    pass


def main(argv=None):
    before_main = process_age()
    clock = time.perf_counter()
    parser = build_parser()
    args = parser.parse_args(argv)
    say = (lambda text: None) if args.quiet else (
        lambda text: print(text, file=sys.stderr, flush=True))
    startup = {'interpreter and launch': before_main}
    started = time.perf_counter()
    from . import run
    from .compute import LogResult, combine
    startup['imports'] = time.perf_counter() - started
    try:
        urdf_text, options, model, startup['model'] = _setup(args)
    except UsageError as exc:
        print(f'rbd_analyze: error: {exc}', file=sys.stderr)
        return 2
    tty = sys.stderr.isatty()
    cluster = None
    t0 = time.monotonic()
    try:
        if args.scheduler:
            paths, missing = list(args.logs), []
        else:
            paths, missing = run.find_logs(args.logs)
        for path, reason in missing:
            say(f'skipped {path}: {reason}')
        workers = 0
        if args.workers is not None and paths:
            cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else \
                (os.cpu_count() or 1)
            workers, why = run.choose_workers(args.workers, paths, options, cores)
            if why:
                say(why)
        progress = run.Progress(paths, enabled=not args.quiet and (
            tty or len(paths) > 1 or bool(args.scheduler)), tty=tty,
            sizes=not args.scheduler)

        def tell(result):
            if result.status != 'ok':
                progress.clear()
                say(f'skipped {result.path}: {result.reason}')
            elif result.ignored_joints:
                progress.clear()
                say(f'{result.path}: joints not in the URDF, ignored: '
                    f'{", ".join(result.ignored_joints)}')

        if not workers and not args.scheduler:
            started = time.perf_counter()
            _load_kernels(model, options)
            startup['kernels'] = time.perf_counter() - started
            results = run.run_serial(paths, urdf_text, options, progress, tell)
        else:
            if args.scheduler:
                try:
                    cluster = run.Cluster(args.scheduler)
                except ImportError:
                    raise UsageError('--scheduler needs dask[distributed] (pip install '
                                     "'rbd_ros[analyze]')") from None
                except (OSError, TimeoutError) as exc:
                    raise UsageError(f'--scheduler {args.scheduler}: cannot connect '
                                     f'({exc})') from None
                startup['cluster'] = cluster.startup
                results, more_missing = run.run_dask(cluster, paths, urdf_text, options,
                                                     progress, tell)
                for path, reason in more_missing:
                    progress.clear()
                    say(f'skipped {path}: {reason}')
                missing += more_missing
            else:
                cluster = run.LocalWorkers(workers)
                startup['workers'] = cluster.startup
                results = run.run_local(cluster, paths, urdf_text, options, progress, tell)
    except UsageError as exc:
        print(f'rbd_analyze: error: {exc}', file=sys.stderr)
        return 2
    finally:
        if cluster is not None:
            cluster.close()
        if 'progress' in locals():
            progress.close()
    wall = time.monotonic() - t0
    results += [LogResult(path=path, status='skipped', reason=reason) for path, reason in missing]
    summary = combine(model, results, options)
    print(report_text(summary, wall))
    if workers and not args.scheduler and cluster is not None and \
            cluster.startup > wall - cluster.startup:
        say(f'warning: --workers {args.workers}: the worker processes took '
            f'{cluster.startup:.1f} s to start and the analysis {wall - cluster.startup:.1f} s: '
            'for work this small the command is faster without --workers (or with --workers '
            'auto)')
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
    if args.profile:
        print(profile_text(results, startup, wall,
                           (before_main or 0.0) + time.perf_counter() - clock,
                           workers or (args.scheduler and 'scheduler')))
    return 0 if any(r.status == 'ok' for r in results) else 1


def process_age():
    """Seconds since this process started (Linux: /proc; None elsewhere)."""
    try:
        with open('/proc/self/stat', encoding='ascii') as f:
            start = int(f.read().rsplit(')', 1)[1].split()[19])
        with open('/proc/uptime', encoding='ascii') as f:
            uptime = float(f.read().split()[0])
        return max(uptime - start / os.sysconf('SC_CLK_TCK'), 0.0)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _load_kernels(model, options):
    """Load (or compile) every compiled function a log's analysis calls, before the first log,
    so that a stage's time is its work (--profile: the start-up's 'kernels')."""
    import numpy as np

    import rbd_ros.dynamics as rbd

    from .kernels import warm_up
    warm_up()
    n = 20
    q = np.tile(model.neutral(), (n, 1))
    v = np.zeros((n, model.nv))
    rbd.inverse_dynamics(model, q, v, v)
    if options.payload_link is not None:
        rbd.inertial_regressor(model, q, v, v, link=options.payload_link)


def _setup(args):
    """(URDF text, Options, Model, seconds to build the model) of the command line."""
    from rbd_ros.description import read_description

    from .compute import BASE_TOPIC, FRICTION_BAND, Options, base_joint, model_for
    try:        # any readable path, a pipe included (<(xacro robot.urdf.xacro)); .xacro expanded
        urdf_text, _ = read_description(args.urdf, say=lambda line: print(line, file=sys.stderr))
    except ValueError as exc:
        raise UsageError(f'--urdf {exc}') from None
    import rbd_ros.dynamics as rbd
    started = time.perf_counter()
    try:
        model = model_for(urdf_text, args.floating_base)
    except rbd.ModelError as exc:
        raise UsageError(f'--urdf {args.urdf} does not load: {str(exc).splitlines()[0]}') \
            from None
    built = time.perf_counter() - started
    planar = [j.name for j in model.joints if j.type == 'planar' and j.nv]
    if planar:
        raise UsageError(f'--urdf {args.urdf}: joint {planar[0]!r} is planar: the analysis is '
                         'for robots whose joints JointState carries (revolute, continuous, '
                         'prismatic), on a fixed or a floating base')
    floating = [j for j in model.joints if j.type == 'floating' and j.nv]
    if len(floating) > 1 or (floating and floating[0].v_index != 0):
        raise UsageError(f'--urdf {args.urdf}: joint {floating[-1].name!r} is floating but not '
                         "the root's: the analysis reads one floating base's state")
    if (args.base_topic or args.contact_topic) and base_joint(model) is None:
        raise UsageError('--base-topic and --contact-topic are for a floating base '
                         '(--floating-base, or a floating joint in the URDF)')
    if model.constraint_names:      # the tree's torques are not the motors' in a closed loop
        raise UsageError(f'--urdf {args.urdf} closes kinematic loops with <constraint> '
                         f'({", ".join(map(repr, model.constraint_names))}): the analysis '
                         'does not handle closed loops yet')
    if not (math.isfinite(args.cutoff) and args.cutoff > 0):
        raise UsageError(f'--cutoff must be a positive number of Hz, got {args.cutoff}')
    if args.max_gap is not None and not (math.isfinite(args.max_gap) and args.max_gap > 0):
        raise UsageError(f'--max-gap must be a positive number of seconds, got {args.max_gap}')
    if args.friction_band is None:
        args.friction_band = FRICTION_BAND
    if not (math.isfinite(args.friction_band) and args.friction_band >= 0):
        raise UsageError(f'--friction-band must be a speed >= 0 (rad/s, m/s), got '
                         f'{args.friction_band}')
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
    options = Options(topic=args.topic, cutoff=args.cutoff, max_gap=args.max_gap,
                      friction=friction, payload_link=link, plots=bool(args.plots),
                      floating_base=args.floating_base,
                      base_topic=args.base_topic or BASE_TOPIC,
                      contact_topic=args.contact_topic, friction_band=args.friction_band)
    return urdf_text, options, model, built


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
    if summary.base is not None:
        out['base'] = summary.base
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
    lines += _base_lines(summary.base, summary.friction is not None or
                         summary.payload is not None)
    dropped = {}
    for log in ok:
        for key, count in log.get('dropped', {}).items():
            dropped[key] = dropped.get(key, 0) + count
    said = [f'{count:,} {DROPPED_WORDS[key]}' for key, count in dropped.items()
            if count and key != 'filter_edges']
    if said:
        lines.append('left out or filled in: ' + '; '.join(said) + ' (per log in the JSON)')
    p = summary.payload
    if p is not None:
        lines.append('')
        from .compute import no_payload
        if p['mass'] is not None and p['com'] is None and no_payload(p):
            lines.append(f'payload on {p["link"]}: {p["reason"]}')
        elif p['mass'] is None or p['com'] is None:
            lines.append(f'payload on {p["link"]}: not identified: {p["reason"]}')
        else:
            lines.append(f'payload on {p["link"]}: {p["mass"]:.4g} kg (std {p["mass_std"]:.2g}) '
                         f'at com [{", ".join(f"{c:.4g}" for c in p["com"])}] m; identified: '
                         f'{p["identified"]}')
            if p['inertia'] is not None:
                lines.append('  inertia about the com (ixx ixy ixz iyy iyz izz, kg m^2): '
                             + ' '.join(f'{x:.4g}' for x in p['inertia']))
    return '\n'.join(lines)


#: the report's words for what a log left out (logs.DROPPED)
DROPPED_WORDS = {
    'filter_edges': "samples inside the filter's start-up at the logs' ends",
    'missing_messages': 'samples of lost messages (interpolated)',
    'duplicate_messages': 'messages re-sent with an earlier stamp (left out)',
    'no_base_state': "samples without the base's state (cut)",
    'short_tail': "samples of a log's last segment too short to filter",
    'unmatched_contact_messages': 'contact wrench messages stamped at no joint state',
}


def _base_lines(base, identified=False):
    """The floating base's rows: the external wrench the motion needs, and what the logged
    contacts leave of it."""
    if base is None:
        return []
    lines = ['']
    if not base.get('samples'):
        return lines + [f'floating base {base["link"]}: no samples']
    contacts = 'residual_mean' in base
    lines.append(f'floating base {base["link"]}: the external wrench the motion needs (inverse '
                 "dynamics' base rows: at the base's origin, in its frame; N, N m)" +
                 (f', and what the contact wrenches on {", ".join(base["contact_links"])} '
                  'leave of it' if contacts else ''))
    header = f'{"row":<6} {"mean":>10} {"rms":>10} {"max|w|":>10}'
    if contacts:
        header += f'   {"left: mean":>10} {"rms":>10} {"max":>10}'
    lines.append(header)
    for k, row in enumerate(base['rows']):
        line = (f'{row:<6} {base["wrench_mean"][k]:>10.4g} {base["wrench_rms"][k]:>10.4g} '
                f'{base["wrench_max"][k]:>10.4g}')
        if contacts:
            line += (f'   {base["residual_mean"][k]:>10.4g} {base["residual_rms"][k]:>10.4g} '
                     f'{base["residual_max"][k]:>10.4g}')
        lines.append(line)
    if not contacts:
        lines.append('(no contact wrenches: the joint residuals include the torques of '
                     'whatever touched the robot; --contact-topic adds them to the model)')
        if identified:
            lines.append('(the identification fits the joints alone, as if nothing touched '
                         'the robot: right for one hung in the air, biased by a foot on the '
                         'ground)')
    return lines


def profile_text(results, startup, wall, total, workers):
    """--profile: seconds per stage (the workers' summed, on a cluster), the start-up's parts."""
    from .compute import STAGES
    stages = dict.fromkeys(STAGES, 0.0)
    samples = 0
    for r in results:
        samples += r.samples
        for stage in STAGES:
            stages[stage] += (r.timings or {}).get(stage, 0.0)
    where = ('this process' if not workers else 'the scheduler\'s workers, summed'
             if workers == 'scheduler' else f'{workers} worker processes, summed')
    lines = ['', f'profile: {samples:,} samples, {total:.2f} s from the command\'s start '
                 f'({samples / max(wall, 1e-9):,.0f} samples/s after the start-up); stages in '
                 f'{where}',
             f'{"stage":<34} {"s":>8} {"share":>7}']
    known = {k: v for k, v in startup.items() if v is not None}
    rows = [('start-up: ' + name, seconds) for name, seconds in known.items()]
    words = {'read': 'read (files, chunks)', 'decode': 'decode (bytes to arrays)',
             'resample': 'resample (checks, uniform grid)',
             'filter': 'filter (low-pass, derivatives)',
             'dynamics': 'dynamics (inverse dynamics, regressor)',
             'sums': 'sums (residuals, normal equations)'}
    rows += [(words[stage], stages[stage]) for stage in STAGES]
    base = sum(seconds for _, seconds in rows) if workers else total
    for name, seconds in rows:
        lines.append(f'{name:<34} {seconds:>8.3f} {100 * seconds / max(base, 1e-9):>6.0f}%')
    if not workers:
        rest = total - sum(seconds for _, seconds in rows)
        lines.append(f'{"other (finding logs, report, ...)":<34} {rest:>8.3f} '
                     f'{100 * rest / max(total, 1e-9):>6.0f}%')
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
            from .compute import no_payload
            warnings.append(f'payload on {p["link"]}: '
                            + ('none' if no_payload(p) else
                               'not identified') + ', not written')
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
