"""`python -m benchmarks analyze`: `python -m rbd_ros analyze` end to end, each command timed
whole (its start-up included, as a user runs it), on MCAP logs of the bundled 7-joint arm at
1 kHz written here (benchmarks/synthetic_logs.py).

1. the script a user would write (benchmarks/user_script.py: rosbags' deserializer, numpy's
   gradient, one Pinocchio RNEA per sample) against the tool's residuals, on short logs
   (4 x 30 s, 120,000 samples) and long ones (2 x 300 s, 600,000 samples): best of three,
   the two commands interleaved;
2. the tool's --profile on the long logs: each stage's seconds, for the residuals and with
   friction and payload identification;
3. the start-up: the tool on a 3 s log, --profile's start-up rows;
4. workers: the whole command with --workers 1 and 2 against the serial one, on the long logs.

    python -m benchmarks analyze --fleet K --seconds S --workers 1,2,4,8,16 [--identify]

runs the fleet table instead: K logs of S seconds each (a few distinct ones, the rest copies:
the analysis reads each), the serial command and one with each --workers count, each timed
whole; whether each run's JSON report equals the serial run's. --out FILE writes the tables
there too. Beside it, what the machine itself gives N processes at once, so that a sub-linear
row can be told apart from the workers' or the analysis's own cost: N copies of a one-core compute
loop and of a memory-bound copy (each process timing its own loop), and N plain `analyze`
processes of one numba thread each on an N-th of the logs, started together (no pool).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ARM = os.path.join(ROOT, 'rbd_ros', 'robots', 'rbd_arm7.urdf')
RATE = 1000.0
IDENTIFY = ('--identify', 'friction', '--identify', 'payload:tool0')
#: distinct logs of a fleet (the others are copies of these)
DISTINCT = 8


def make_logs(directory, count, seconds, distinct=None):
    """``count`` bag folders of ``seconds`` each under ``directory`` (the arm with a 1.5 kg
    payload, viscous 0.5 and Coulomb 0.8 friction, 0.05 N m sensor noise); at most
    ``distinct`` different ones, the rest copies. Returns their paths."""
    import rbd_ros.dynamics as rbd
    from benchmarks.synthetic_logs import excitation, measured_efforts, write_log
    model = rbd.Model.from_urdf(ARM).with_payload('tool0', 1.5, [0.02, -0.015, 0.06])
    paths = []
    for i in range(count):
        path = os.path.join(directory, f'log{i:03d}')
        if distinct is not None and i >= distinct:
            shutil.copytree(paths[i % distinct], path)
            os.rename(os.path.join(path, f'log{i % distinct:03d}.mcap'),
                      os.path.join(path, f'log{i:03d}.mcap'))
            _rename_in_metadata(path, f'log{i % distinct:03d}', f'log{i:03d}')
        else:
            t, q, v, a = excitation(model, seconds, RATE, seed=i, amplitude=0.4, base_hz=0.2)
            tau = measured_efforts(model, q, v, a, 0.5, 0.8, noise=0.05, seed=i)
            write_log(path, t, model.joint_names, q, v, tau)
        paths.append(path)
    return paths


def _rename_in_metadata(path, old, new):
    meta = os.path.join(path, 'metadata.yaml')
    with open(meta, encoding='utf-8') as f:
        text = f.read()
    with open(meta, 'w', encoding='utf-8') as f:
        f.write(text.replace(f'{old}.mcap', f'{new}.mcap'))


def size_of(paths):
    return sum(os.path.getsize(os.path.join(root, f)) for p in paths
               for root, _, files in os.walk(p) for f in files)


def timed(command, env=None):
    """(seconds, CompletedProcess) of a command, run whole."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env=env or dict(os.environ), timeout=3600)
    return time.perf_counter() - started, done


def tool(paths, *options):
    return [sys.executable, '-m', 'rbd_ros', 'analyze', *paths, '--urdf', ARM, '--quiet',
            *options]


def script(paths):
    return [sys.executable, os.path.join(HERE, 'user_script.py'), ARM, *paths]


def checked(done):
    if done.returncode != 0:
        raise SystemExit(f'{" ".join(done.args[:6])} ...: exit {done.returncode}\n'
                         + done.stdout[-2000:] + done.stderr[-2000:])
    return done


def have_pinocchio():
    try:
        import pinocchio  # noqa: F401
    except ImportError:
        return False
    return True


def profile_rows(text):
    """{stage: seconds} of a --profile table."""
    rows = {}
    on = False
    for line in text.splitlines():
        if line.startswith('stage '):
            on = True
            continue
        if on:
            m = re.match(r'(.+?)\s+(-?[\d.]+)\s+(-?\d+)%$', line)
            if not m:
                break
            rows[m.group(1).strip()] = float(m.group(2))
    return rows


def script_against_tool(sets, repeats):
    print('| logs | samples | the script s | `python -m rbd_ros analyze` s | speed-up |')
    print('|---|---:|---:|---:|---:|')
    pinocchio = have_pinocchio()
    for label, paths, samples in sets:
        best_script, best_tool = np.inf, np.inf
        for _ in range(repeats):
            if pinocchio:
                took, done = timed(script(paths))
                checked(done)
                best_script = min(best_script, took)
            took, done = timed(tool(paths))
            checked(done)
            best_tool = min(best_tool, took)
        ratio = f'{best_script / best_tool:.1f}x' if pinocchio else '-'
        shown = f'{best_script:.2f}' if pinocchio else 'no pinocchio'
        print(f'| {label} | {samples:,} | {shown} | {best_tool:.2f} | {ratio} |')


def stages(paths, repeats):
    print('| stage | residuals s | share | + friction + payload s | share |')
    print('|---|---:|---:|---:|---:|')
    columns = []
    for options in ((), IDENTIFY):
        best = None
        for _ in range(repeats):
            took, done = timed(tool(paths, '--profile', *options))
            rows = profile_rows(checked(done).stdout)
            if best is None or took < best[0]:
                best = (took, rows)
        columns.append(best)
    names = list(columns[0][1])
    for name in names:
        cells = []
        for took, rows in columns:
            seconds = rows.get(name, 0.0)
            cells += [f'{seconds:.3f}', f'{100 * seconds / took:.0f}%']
        print(f'| {name} | ' + ' | '.join(cells) + ' |')
    print(f'| whole command | {columns[0][0]:.3f} | 100% | {columns[1][0]:.3f} | 100% |')


def startup(path, repeats):
    best = None
    for _ in range(repeats):
        took, done = timed(tool([path], '--profile'))
        rows = profile_rows(checked(done).stdout)
        if best is None or took < best[0]:
            best = (took, rows)
    took, rows = best
    print('| start-up (the tool on a 3 s log) | s |')
    print('|---|---:|')
    for name, seconds in rows.items():
        if name.startswith('start-up'):
            print(f'| {name[len("start-up: "):]} | {seconds:.3f} |')
    print(f'| the whole command | {took:.3f} |')


def workers_table(paths, counts, options, repeats, out=None):
    """The whole command serially and with each --workers count: wall seconds, the local
    workers' start-up (--profile), the speed-ups over the serial command (whole, and after the
    start-up), whether the JSON report equals the serial run's."""
    with tempfile.TemporaryDirectory(prefix='rbd_analyze_reports_') as reports:
        runs = [('serial', ())] + [(str(n), ('--workers', str(n))) for n in counts]
        walls, startups, equal = {}, {}, {}
        serial_json = None
        for label, extra in runs:
            best = (np.inf, 0.0)
            for r in range(repeats):
                report = os.path.join(reports, f'{label}-{r}.json')
                took, done = timed(tool(paths, *options, *extra, '--profile', '--json',
                                        report))
                rows = profile_rows(checked(done).stdout)
                if took < best[0]:
                    best = (took, rows.get('start-up: workers', 0.0))
                with open(report, encoding='utf-8') as f:
                    data = json.load(f)
                if label == 'serial' and serial_json is None:
                    serial_json = data
                equal[label] = equal.get(label, True) and data == serial_json
            walls[label], startups[label] = best
            print(f'  {label}: {best[0]:.2f} s (workers\' start-up {best[1]:.2f} s)',
                  file=sys.stderr, flush=True)
        after = {label: walls[label] - startups[label] for label, _ in runs}
    lines = ['| workers | ' + ' | '.join(label for label, _ in runs) + ' |',
             '|---|' + '---:|' * len(runs),
             '| wall s | ' + ' | '.join(f'{walls[label]:.1f}' for label, _ in runs) + ' |',
             '| of which the workers\' start-up s | ' + ' | '.join(
                 f'{startups[label]:.1f}' if label != 'serial' else '-'
                 for label, _ in runs) + ' |',
             '| speed-up over serial | ' + ' | '.join(
                 f'{walls["serial"] / walls[label]:.2f}x' for label, _ in runs) + ' |',
             '| speed-up after the start-up | ' + ' | '.join(
                 f'{after["serial"] / after[label]:.2f}x' for label, _ in runs) + ' |',
             '| JSON equals serial | ' + ' | '.join('yes' if equal[label] else 'NO'
                                                    for label, _ in runs) + ' |']
    print('\n'.join(lines))
    if out is not None:
        out.write('\n'.join(lines) + '\n')
    return walls, equal


#: one process's share of the machine rows: a compute loop (the interpreter's, no memory
#: traffic) and a memory-bound one (a 64 MB array copied over and over, past any cache)
COMPUTE_LOOP = ('import time; t = time.perf_counter(); s = 0\n'
                'for i in range(15_000_000): s += i * i\n'
                'print(time.perf_counter() - t)')
MEMORY_LOOP = ('import time, numpy as np; a = np.ones(1 << 23); b = np.empty_like(a); '
               't = time.perf_counter()\n'
               'for _ in range(60): np.copyto(b, a)\n'
               'print(time.perf_counter() - t)')


def together(commands, env=None):
    """Start every command at once; (wall seconds until the last ends, their stdouts)."""
    started = time.perf_counter()
    running = [subprocess.Popen(c, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env or dict(os.environ)) for c in commands]
    outs = []
    for p in running:
        out, err = p.communicate(timeout=3600)
        if p.returncode != 0:
            raise SystemExit(f'{" ".join(p.args[:6])} ...: exit {p.returncode}\n{err[-2000:]}')
        outs.append(out)
    return time.perf_counter() - started, outs


def machine_rows(paths, counts, options):
    """Speed-ups of N processes at once over one: the machine's (compute, memory: N times one
    process's loop time over their mean loop time) and the analysis's without a pool (one
    process on all logs over N processes on an N-th each, whole commands)."""
    compute, memory, split = {}, {}, {}
    env = dict(os.environ, NUMBA_NUM_THREADS='1', OMP_NUM_THREADS='1')
    for n in counts:
        for name, code, table in (('compute', COMPUTE_LOOP, compute),
                                  ('memory', MEMORY_LOOP, memory)):
            _, outs = together([[sys.executable, '-c', code]] * n, env)
            table[n] = float(np.mean([float(o) for o in outs]))
        wall, _ = together([tool(paths[i::n], *options) for i in range(n)], env)
        split[n] = wall
        print(f'  {n} at once: compute loop {compute[n]:.2f} s, memory loop {memory[n]:.2f} s, '
              f'analyze split {n} ways {wall:.2f} s', file=sys.stderr, flush=True)
    one = counts[0]
    lines = ['| processes at once | ' + ' | '.join(str(n) for n in counts) + ' |',
             '|---|' + '---:|' * len(counts),
             '| the machine: a compute loop, speed-up | ' + ' | '.join(
                 f'{n * compute[one] / (one * compute[n]):.2f}x' for n in counts) + ' |',
             '| the machine: a memory-bound copy, speed-up | ' + ' | '.join(
                 f'{n * memory[one] / (one * memory[n]):.2f}x' for n in counts) + ' |',
             '| `analyze` split N ways, no pool: wall s | ' + ' | '.join(
                 f'{split[n]:.1f}' for n in counts) + ' |',
             '| `analyze` split N ways, no pool: speed-up | ' + ' | '.join(
                 f'{split[one] / split[n]:.2f}x' for n in counts) + ' |']
    return lines


def run(smoke=False):
    short_n, short_s, long_n, long_s = (2, 3.0, 1, 10.0) if smoke else (4, 30.0, 2, 300.0)
    repeats = 1 if smoke else 3
    with tempfile.TemporaryDirectory(prefix='rbd_analyze_bench_') as directory:
        started = time.perf_counter()
        short = make_logs(os.path.join(directory, 'short'), short_n, short_s)
        long_ = make_logs(os.path.join(directory, 'long'), long_n, long_s)
        one = make_logs(os.path.join(directory, 'one'), 1, 3.0)
        print(f'MCAP logs of the bundled 7-joint arm at {RATE:g} Hz: {short_n} x {short_s:g} s '
              f'and {long_n} x {long_s:g} s ({size_of(short + long_) / 1e6:.0f} MB; written in '
              f'{time.perf_counter() - started:.1f} s); {os.cpu_count()} cores, load '
              f'{os.getloadavg()[0]:.1f}\n', flush=True)
        timed(tool(one))                  # numba's cache, the page cache
        sets = [(f'{short_n} x {short_s:g} s', short, int(short_n * short_s * RATE)),
                (f'{long_n} x {long_s:g} s', long_, int(long_n * long_s * RATE))]
        script_against_tool(sets, repeats)
        if not have_pinocchio():
            print('\n(Pinocchio not installed: no script column)')
        print('\nStages (--profile) on the long logs; start-up: the interpreter and launch, the '
              'imports (numpy, numba, the dynamics core, rosbags), the model, the kernels '
              'loaded from numba\'s cache:\n', flush=True)
        stages(long_, repeats)
        print(flush=True)
        startup(one[0], repeats)
        print('\nWorkers, the whole command on the long logs with friction and payload '
              'identification (worker processes, one numba thread each):\n', flush=True)
        workers_table(long_, [1, 2], IDENTIFY, 1 if smoke else 2)
        print(f'\n({os.cpu_count()} cores; {long_n} logs: the speed-up is bounded by the cores '
              'and by whole logs per worker)')
    return 0


def fleet(count, seconds, counts, identify, out_path=None, directory=None):
    keep = directory is not None
    directory = directory or tempfile.mkdtemp(prefix='rbd_analyze_fleet_')
    try:
        started = time.perf_counter()
        paths = make_logs(directory, count, seconds, distinct=min(count, DISTINCT))
        size = size_of(paths)
        samples = int(count * seconds * RATE)
        header = (f'Fleet: {count} logs x {seconds:g} s of the 7-joint arm at {RATE:g} Hz '
                  f'({samples:,} samples, {size / 1e9:.2f} GB of MCAP; {min(count, DISTINCT)} '
                  f'distinct, written in {time.perf_counter() - started:.0f} s); '
                  f'{"residuals, friction and payload identification" if identify else "residuals"}'
                  f'; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; each command timed '
                  'whole\n')
        print(header, flush=True)
        timed(tool(paths[:1]))            # numba's cache
        out = open(out_path, 'w', encoding='utf-8') if out_path else None
        try:
            if out is not None:
                out.write(header + '\n')
            options = IDENTIFY if identify else ()
            walls, _ = workers_table(paths, counts, options, 1, out)
            rate = samples / walls['serial']
            lines = [f'\nserial: {rate:,.0f} samples/s, {size / walls["serial"] / 1e6:.0f} MB/s '
                     'of MCAP, start-up included', '',
                     'What the machine gives N processes at once (each a one-core loop timing '
                     'itself), and the same analysis as N plain processes on an N-th of the logs '
                     'each (one numba thread, no pool; whole commands):', '']
            lines += machine_rows(paths, counts, options)
            print('\n'.join(lines))
            if out is not None:
                out.write('\n'.join(lines) + '\n')
        finally:
            if out is not None:
                out.close()
    finally:
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m benchmarks analyze',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--smoke', action='store_true', help='a few seconds in all')
    parser.add_argument('--fleet', type=int, metavar='K', help='the fleet table: K logs')
    parser.add_argument('--seconds', type=float, default=120.0, metavar='S',
                        help='seconds per fleet log (default 120)')
    parser.add_argument('--workers', default='1,2', metavar='N,N,...',
                        help='--workers counts of the fleet table (default 1,2)')
    parser.add_argument('--identify', action='store_true',
                        help='fleet: friction and payload identification too')
    parser.add_argument('--out', metavar='FILE', help='fleet: the table written there too')
    parser.add_argument('--dir', metavar='DIR', help='fleet: write (and keep) the logs there')
    args = parser.parse_args(argv)
    if args.fleet:
        counts = [int(x) for x in args.workers.split(',') if x]
        return fleet(args.fleet, args.seconds, counts, args.identify, args.out, args.dir)
    return run(smoke=args.smoke)


if __name__ == '__main__':
    raise SystemExit(main())
