"""`python -m benchmarks analyze`: the offline analysis end to end, on logs of the bundled arm
written here (1 kHz joint_states, rclpy's bytes, rosbags' MCAP writer).

1. samples per second, end to end (reading, decoding, differentiation, dynamics), and the share
   of each stage, for the residuals alone and with friction and payload identification;
2. beside it, a plain Python loop over the same samples calling Pinocchio's RNEA, our batched
   inverse dynamics on them, and an ad-hoc script end to end (rosbags' deserializer building a
   message per sample, numpy's gradient, the Pinocchio loop);
3. the speed-up from 1 to 2 Dask workers (processes, warmed up: the clusters' start-up is
   printed apart).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import rbd_ros.dynamics as rbd
from benchmarks.synthetic_logs import excitation, measured_efforts, write_log

HERE = os.path.dirname(os.path.abspath(__file__))
ARM = os.path.join(HERE, '..', 'rbd_ros', 'robots', 'rbd_arm7.urdf')
RATE = 1000.0


def make_logs(directory, count, seconds):
    model = rbd.Model.from_urdf(ARM).with_payload('tool0', 1.5, [0.02, -0.015, 0.06])
    paths = []
    for i in range(count):
        t, q, v, a = excitation(model, seconds, RATE, seed=i, amplitude=0.4, base_hz=0.2)
        tau = measured_efforts(model, q, v, a, 0.5, 0.8, noise=0.05, seed=i)
        paths.append(str(write_log(os.path.join(directory, f'log{i}'), t, model.joint_names,
                                   q, v, tau)))
    return paths


def read_only(path):
    """Seconds to read every message's bytes, nothing else."""
    from rosbags.rosbag2 import Reader
    started = time.perf_counter()
    with Reader(path) as reader:
        for _ in reader.messages():
            pass
    return time.perf_counter() - started


def stages(paths, urdf, options):
    """(samples, wall s, {stage: s}) of the serial analysis of ``paths``."""
    from rbd_ros.analysis import analyze_log
    read = sum(read_only(p) for p in paths)
    started = time.perf_counter()
    results = [analyze_log(p, urdf, options) for p in paths]
    wall = time.perf_counter() - started
    assert all(r.status == 'ok' for r in results), [r.reason for r in results]
    filtering = sum(r.timings['filter'] for r in results)
    dynamics = sum(r.timings['dynamics'] for r in results)
    return sum(r.samples for r in results), wall, {
        'reading (rosbags)': read,
        'decoding, checks, uniform grid': wall - read - filtering - dynamics,
        'filtering and differentiation': filtering,
        'dynamics and sums': dynamics}


def pinocchio_loop(path, count):
    """Samples per second of a Python loop calling Pinocchio's RNEA on the log's samples, and of
    our batched inverse dynamics on the same samples (None without Pinocchio)."""
    from rbd_ros.analysis import read_joint_states
    log = read_joint_states(path)
    dt = log.t[1] - log.t[0]
    q, v = log.position[:count], log.velocity[:count]
    a = np.gradient(v, dt, axis=0)
    model = rbd.Model.from_urdf(ARM)
    rbd.inverse_dynamics(model, q[:10], v[:10], a[:10])
    started = time.perf_counter()
    ours = rbd.inverse_dynamics(model, q, v, a)
    batched = q.shape[0] / (time.perf_counter() - started)
    try:
        import pinocchio as pin
    except ImportError:
        return None, batched
    pmodel = pin.buildModelFromUrdf(ARM)
    pdata = pmodel.createData()
    started = time.perf_counter()
    out = np.empty_like(q)
    for k in range(q.shape[0]):
        out[k] = pin.rnea(pmodel, pdata, q[k], v[k], a[k])
    rate = q.shape[0] / (time.perf_counter() - started)
    assert np.allclose(out, ours, atol=1e-8)
    return rate, batched


def adhoc_script(path):
    """Samples per second, end to end, of what an ad-hoc script does: rosbags' deserializer
    building a message per sample, numpy's gradient, Pinocchio's RNEA in a loop (None without
    Pinocchio)."""
    try:
        import pinocchio as pin
    except ImportError:
        return None
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore
    typestore = get_typestore(Stores.ROS2_KILTED)
    started = time.perf_counter()
    t, q, v, tau = [], [], [], []
    with Reader(path) as reader:
        for connection, _, data in reader.messages():
            msg = typestore.deserialize_cdr(data, connection.msgtype)
            t.append(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
            q.append(msg.position)
            v.append(msg.velocity)
            tau.append(msg.effort)
    t, q, v, tau = (np.array(x) for x in (t, q, v, tau))
    a = np.gradient(v, t, axis=0)
    pmodel = pin.buildModelFromUrdf(ARM)
    pdata = pmodel.createData()
    residual = np.empty_like(tau)
    for k in range(t.size):
        residual[k] = tau[k] - pin.rnea(pmodel, pdata, q[k], v[k], a[k])
    return t.size / (time.perf_counter() - started)


def workers_speedup(paths, urdf, options):
    """{workers: (start-up s, analysis s)} on a local cluster of 1 and of 2 processes."""
    from dask.distributed import Client, LocalCluster

    from rbd_ros.analysis import analyze_log
    from rbd_ros.analysis.compute import model_for
    out = {}
    for n in (1, 2):
        started = time.perf_counter()
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                          dashboard_address=None, silence_logs=40) as cluster, \
                Client(cluster) as client:
            client.run(lambda: model_for(urdf) and None)      # import, build, load kernels
            client.run(lambda: analyze_log(paths[0], urdf, options) and None)
            ready = time.perf_counter()
            futures = client.map(analyze_log, paths, urdf_text=urdf, options=options, pure=False)
            results = client.gather(futures)
            done = time.perf_counter()
        assert all(r.status == 'ok' for r in results)
        out[n] = (ready - started, done - ready)
    return out


def run(smoke=False):
    from rbd_ros.analysis import Options
    count, seconds = (2, 8.0) if smoke else (4, 90.0)
    with open(ARM, encoding='utf-8') as f:
        urdf = f.read()
    with tempfile.TemporaryDirectory(prefix='rbd_analyze_bench_') as directory:
        started = time.perf_counter()
        paths = make_logs(directory, count, seconds)
        size = sum(os.path.getsize(os.path.join(root, f)) for root, _, files in
                   os.walk(directory) for f in files)
        print(f'{count} logs of the bundled 7-joint arm, {seconds:g} s each at {RATE:g} Hz '
              f'({count * seconds * RATE:,.0f} messages, {size / 1e6:.0f} MB of MCAP; written in '
              f'{time.perf_counter() - started:.1f} s)\n')
        rbd_warm = Options()
        from rbd_ros.analysis import analyze_log
        analyze_log(paths[0], urdf, rbd_warm)           # compile/load the kernels first
        print('| analysis | samples/s end to end | reading | decoding | filtering | '
              'dynamics |')
        print('|---|---:|---:|---:|---:|---:|')
        for label, options in (('residuals', Options()),
                               ('residuals + friction + payload',
                                Options(friction=True, payload_link='tool0'))):
            samples, wall, shares = stages(paths, urdf, options)
            cells = [f'{100 * s / wall:.0f}%' for s in shares.values()]
            print(f'| {label} | {samples / wall:,.0f} | ' + ' | '.join(cells) + ' |')
        print('\nStages: reading = rosbags iterating the messages\' bytes; decoding = the '
              'nodes\' JointState byte decoder, the checks and the uniform grid; filtering = '
              'zero-phase low-pass and differentiation; dynamics = batched inverse dynamics '
              '(and the regressor when identifying) and the sums.\n')
        pin_rate, batched = pinocchio_loop(paths[0], 20_000 if smoke else 100_000)
        print('| inverse dynamics on the same samples | samples/s |')
        print('|---|---:|')
        print(f'| rbd_ros batched (one call) | {batched:,.0f} |')
        print(f'| Pinocchio rnea in a Python loop | '
              f'{"not installed" if pin_rate is None else f"{pin_rate:,.0f}"} |')
        adhoc = adhoc_script(paths[0])
        if adhoc is not None:
            print(f'| an ad-hoc script, end to end (rosbags\' deserializer, np.gradient, the '
                  f'Pinocchio loop) | {adhoc:,.0f} |')
        try:
            import distributed  # noqa: F401
        except ImportError:
            print('\n(dask[distributed] not installed: no workers row)')
            return 0
        timing = workers_speedup(paths, urdf, Options(friction=True, payload_link='tool0'))
        print('\n| Dask workers (local processes) | start-up s | analysis s | speed-up |')
        print('|---|---:|---:|---:|')
        for n, (up, took) in timing.items():
            print(f'| {n} | {up:.1f} | {took:.2f} | {timing[1][1] / took:.2f}x |')
        print(f'\n({os.cpu_count()} cores; {count} logs: the speed-up is bounded by the cores '
              'and by whole logs per worker)')
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m benchmarks.analyze_bench',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--smoke', action='store_true', help='a few seconds in all')
    args = parser.parse_args(argv)
    return run(smoke=args.smoke)


if __name__ == '__main__':
    raise SystemExit(main())
