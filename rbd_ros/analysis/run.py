"""Where the logs are analysed: in this process one after the other, on worker processes of
this machine (a process pool), or on a running Dask scheduler's workers; and the progress of a
run.

- Each worker process runs one numba thread (NUMBA_NUM_THREADS=1 in a local worker;
  numba.set_num_threads(1) in each task on a scheduler's), so N workers use N cores and never
  N x cores threads: the logs are the parallelism.
- On a scheduler's cluster the workers find the logs themselves: each argument (made absolute
  here without touching the file system) is expanded into logs by a worker, and each log is
  read by the worker that analyses it; this process never opens a log.
- A log's result carries only sums (a few KB), added in the logs' given order (compute.combine),
  so where a log ran does not change the numbers.
"""
from __future__ import annotations

import math
import os
import sys
import time

from .compute import LogResult, analyze_log
from .logs import log_size

#: --workers auto's model of a run, from the fleet tables of the 16-core machine
#: (docs/analysis.md: 128 logs of the 7-joint arm at 1 kHz, friction and payload identified):
#: the worker processes' start-up (2.2-2.3 s there for 16; 0.9 s on the 2-core VM) ...
WORKERS_STARTUP_S = 2.3
#: ... one core's rate in bytes of MCAP per second (about 350 bytes a message): 57 MB/s with
#: identification (--workers 1 there, after the start-up); residuals alone, 125 MB/s
#: (estimated: --profile's stages took 2.2 times as long with identification) ...
BYTES_PER_S = {'residuals': 125e6, 'identification': 57e6}
#: ... the share of a log's work one process runs on numba's threads (batched inverse
#: dynamics, the regressor's chunks): the serial command ran 4.8x one worker there on 16
#: cores, Amdahl's 0.85 (residuals: the dynamics stage's share of --profile's, 0.35) ...
PARALLEL_SHARE = {'residuals': 0.35, 'identification': 0.85}


def worker_efficiency(n):
    """... and n worker processes' rate as a share of n times one's: 0.93, 0.79, 0.64 and
    0.55 at 2, 4, 8 and 16 workers of a local Dask cluster there. The process pool that
    replaced it was 1.4-1.7x as fast on 16 workers in the same run, so this is on the safe
    side (it keeps work in this process a little longer than it needs)."""
    return 1.0 / (1.0 + 0.05 * (n - 1))


#: a progress line every this many seconds when stderr is not a terminal
PROGRESS_PERIOD_S = 10.0


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


def estimated_seconds(size, options, cores, workers=0):
    """The estimated analysis time of ``size`` bytes of logs: in this process on ``cores``
    cores (workers 0), or on that many local worker processes, their start-up included."""
    kind = 'identification' if options.identifying else 'residuals'
    one_core = size / BYTES_PER_S[kind]
    if not workers:
        share = PARALLEL_SHARE[kind]
        return one_core * ((1.0 - share) + share / max(cores, 1))
    return WORKERS_STARTUP_S + one_core / (workers * worker_efficiency(workers))


def choose_workers(asked, paths, options, cores):
    """(workers, why): how many local worker processes --workers ``asked`` ('auto' or N)
    gets for these logs (0: this process), and the line that says why when it is not what was
    asked (None). auto: as many as cores and logs allow, when the estimated time on them
    (estimated_seconds) is shorter than in this process."""
    logs = len(paths)
    s = 's' if logs != 1 else ''
    if asked == 'auto':
        size = sum(log_size(p) for p in paths)
        here = estimated_seconds(size, options, cores)
        n = max(1, min(cores, logs))
        there = estimated_seconds(size, options, cores, n)
        words = (f'--workers auto: {logs} log{s}, {size / 1e6:,.0f} MB: about {here:.1f} s '
                 f'in this process (numba\'s threads on {cores} cores), about {there:.1f} s on '
                 f'{n} worker process{"es" if n != 1 else ""} ({WORKERS_STARTUP_S:g} s of '
                 'start-up)')
        if n < 2 or there >= here:
            return 0, words + ': analysed in this process'
        return n, words + f': {n} workers'
    if asked > logs and logs:
        return logs, f'--workers {asked}: {logs} log{s}, one task each: {logs} worker{s}'
    return asked, None


def run_serial(paths, urdf_text, options, progress, tell):
    results = []
    for path in paths:
        progress.start(path)
        result = analyze_log(path, urdf_text, options, progress.messages)
        result.path = path
        progress.done(path, result)
        tell(result)
        results.append(result)
    return results


def worker_task(path, urdf_text, options):
    """analyze_log on a worker: one numba thread for this task (the workers are the
    parallelism; NUMBA_NUM_THREADS in a local worker already says so)."""
    try:
        import numba
        numba.set_num_threads(1)
    except ImportError:
        pass
    return analyze_log(path, urdf_text, options)


def worker_find_logs(argument):
    """find_logs on a worker: the worker resolves the paths it will read."""
    return find_logs([argument])


#: each local worker's environment: one thread for numba and for any BLAS
WORKER_ENV = {'NUMBA_NUM_THREADS': '1', 'OMP_NUM_THREADS': '1', 'OPENBLAS_NUM_THREADS': '1',
              'MKL_NUM_THREADS': '1'}


class Cluster:
    """A Dask client on a running scheduler's cluster; ``startup`` is the seconds it took to
    connect."""

    def __init__(self, scheduler):
        from dask.distributed import Client
        started = time.monotonic()
        self.client = Client(scheduler, timeout='10s')
        self.startup = time.monotonic() - started

    def close(self):
        self.client.close()


class LocalWorkers:
    """``workers`` processes of this machine, each running one task at a time on one numba
    thread, forked from a fork server that has loaded what a task needs (preload.py): a
    process pool. A local Dask cluster did the same work slower: on 16 cores its workers' summed
    stages took 30% longer (each task shares its process, and the GIL, with the worker's event
    loop and a nanny beside it) and it took twice as long to start (docs/analysis.md)."""

    def __init__(self, workers):
        started = time.monotonic()
        self.workers = workers
        self.pool = None
        self.start()
        self.startup = time.monotonic() - started

    def start(self):
        import concurrent.futures
        import multiprocessing
        saved = {key: os.environ.get(key) for key in WORKER_ENV}
        try:
            os.environ.update(WORKER_ENV)      # the fork server's environment, so its children's
            if 'forkserver' in multiprocessing.get_all_start_methods():
                ctx = multiprocessing.get_context('forkserver')
                ctx.set_forkserver_preload(['rbd_ros.analysis.preload'])
            else:                                # pragma: no cover - no fork server here
                ctx = multiprocessing.get_context('spawn')
            self.pool = concurrent.futures.ProcessPoolExecutor(max_workers=self.workers,
                                                               mp_context=ctx)
            self.pool.submit(os.getpid).result()  # the fork server starts now, in WORKER_ENV
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)

    def restart(self):
        """A new pool after one of its processes died (the old pool is broken for good)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.start()


def run_dask(cluster, arguments, urdf_text, options, progress, tell):
    """(results in the logs' order, [(argument, reason)] for arguments that hold no logs) on a
    scheduler's cluster: the workers resolve the arguments and read the logs."""
    from dask.distributed import as_completed
    client = cluster.client
    missing = []
    # absolute by the string alone (this process's working directory): the workers look
    listed = client.gather(client.map(worker_find_logs, [os.path.abspath(a) for a in arguments],
                                      pure=False))
    paths, shown = [], {}
    for argument, (found, absent) in zip(arguments, listed):
        for path in found:
            shown[path] = path if os.path.isabs(argument) else os.path.relpath(path)
        paths += found
        missing += [(argument, reason) for _, reason in absent]
    progress.set_logs(paths)
    futures = {client.submit(worker_task, os.path.abspath(path), urdf_text, options,
                             pure=False): os.path.abspath(path) for path in paths}
    by_path = {}
    for future in as_completed(futures):
        path = futures[future]
        try:
            result = future.result()
        except Exception as exc:     # noqa: BLE001 - a worker that died, a bug
            result = _failed(path, f'{type(exc).__name__}: {exc}')
        _record(result, path, shown.get(path, path), by_path, progress, tell)
    return [by_path[os.path.abspath(p)] for p in paths], missing


def _failed(path, why):
    return LogResult(path=path, status='skipped', reason=f'failed on its worker: {why}')


def _record(result, path, shown, by_path, progress, tell):
    """A log's result, done: named as the user named it, kept under its absolute path,
    counted and told."""
    result.path = shown
    by_path[path] = result
    progress.done(result.path, result)
    tell(result)


def run_local(local, paths, urdf_text, options, progress, tell):
    """The logs on LocalWorkers, results in the logs' order. A worker process that dies breaks
    its pool: every log not done then runs once more on a new pool; a log that fails so twice
    is skipped with the reason."""
    import concurrent.futures
    from concurrent.futures.process import BrokenProcessPool
    by_path = {}
    pending = [os.path.abspath(p) for p in paths]
    shown = {os.path.abspath(p): p for p in paths}
    for attempt in (1, 2):
        broken = []
        try:
            futures = {local.pool.submit(worker_task, path, urdf_text, options): path
                       for path in pending}
        except BrokenProcessPool:
            futures, broken = {}, list(pending)
        for future in concurrent.futures.as_completed(futures):
            path = futures[future]
            try:
                result = future.result()
            except BrokenProcessPool as exc:
                if attempt == 1:
                    broken.append(path)
                    continue
                result = _failed(path, f'a worker process died, twice ({exc})')
            except Exception as exc:     # noqa: BLE001 - a bug
                result = _failed(path, f'{type(exc).__name__}: {exc}')
            _record(result, path, shown[path], by_path, progress, tell)
        if not broken:
            break
        pending = [p for p in pending if p in broken]
        local.restart()
    return [by_path[os.path.abspath(p)] for p in paths]


class Progress:
    """A run's progress on stderr: logs done, samples per second and the time left (from the
    share of the logs' bytes done). On a terminal a bar redrawn at most 5 times a second; else
    (a batch job's log) a line every PROGRESS_PERIOD_S, once a run lasts that long."""

    def __init__(self, paths, enabled, tty, sizes=True):
        self.enabled = enabled
        self.tty = tty
        self.sizes = sizes
        self.t0 = time.monotonic()
        self.last = 0.0 if tty else self.t0
        self.shown = False
        self.samples = 0
        self.logs_done = 0
        self.current = None
        self.current_read = 0
        self.current_count = 1
        self.finished = 0.0
        self.set_logs(paths)

    def set_logs(self, paths):
        self.n_logs = len(paths)
        self.size = {p: max(log_size(p), 1) for p in paths} if self.enabled and self.sizes \
            else {}
        self.total = sum(self.size.values()) or 1

    def start(self, path):
        if not (self.enabled and self.tty):
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

    def done(self, path, result):
        self.logs_done += 1
        self.samples += result.samples
        if not self.enabled:
            return
        self.finished += self.size.get(path, result.size or 1)
        if not self.size:
            self.total = max(self.total, self.finished)
        self.current = None
        self.draw(force=self.tty)

    def fraction(self):
        part = 0.0
        if self.current is not None:
            part = self.size.get(self.current, 0) * min(self.current_read / self.current_count,
                                                         1.0)
        if self.size:
            return min((self.finished + part) / self.total, 1.0)
        return self.logs_done / max(self.n_logs, 1)

    def line(self):
        fraction = self.fraction()
        elapsed = time.monotonic() - self.t0
        left = elapsed * (1 - fraction) / fraction if fraction > 0.01 else math.nan
        rate = self.samples / elapsed if elapsed > 0 else 0.0
        return (f'{self.logs_done}/{self.n_logs} logs, {self.samples:,} samples '
                f'({rate:,.0f}/s), ' + (f'{left:.0f} s left' if math.isfinite(left) else
                                         'time left not known yet'))

    def draw(self, force=False):
        now = time.monotonic()
        if self.tty:
            if not force and now - self.last < 0.2:
                return
            self.last = now
            bar = '#' * int(30 * self.fraction())
            sys.stderr.write(f'\r[{bar:-<30}] {self.line()}'.ljust(100))
            sys.stderr.flush()
            self.shown = True
        elif now - self.last >= PROGRESS_PERIOD_S:
            self.last = now
            print(f'progress: {self.line()}', file=sys.stderr, flush=True)

    def clear(self):
        if self.enabled and self.tty and self.shown:
            sys.stderr.write('\r' + ' ' * 100 + '\r')
            sys.stderr.flush()
            self.last = 0.0

    def close(self):
        self.clear()
