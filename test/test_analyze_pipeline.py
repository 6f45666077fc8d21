"""The offline analysis's pipeline piece by piece: the filter against scipy's, the MCAP reader
against rosbags' (the same messages in the same order; MCAP, zstd MCAP and sqlite3 give the same
bits), a corrupt chunk named, big-endian messages, what a log leaves out counted and adding up,
a fork after batched kernels, the workers finding the logs themselves, --workers auto, the
progress line and --profile."""
import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip('rosbags')

import rbd_ros.dynamics as rbd  # noqa: E402
from benchmarks.synthetic_logs import excitation, measured_efforts, write_log  # noqa: E402
from rbd_ros.analysis import filters, logs  # noqa: E402
from rbd_ros.analysis.compute import Options, analyze_log, combine  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARM_PATH = ROOT / 'rbd_ros' / 'robots' / 'rbd_arm7.urdf'
ARM = ARM_PATH.read_text()
RATE = 500.0
pytestmark = pytest.mark.timeout(300)


def arm():
    return rbd.Model.from_urdf(ARM)


def motion(seconds=8.0, seed=0):
    model = arm().with_payload('tool0', 1.0, [0.0, 0.01, 0.05])
    t, q, v, a = excitation(model, seconds, RATE, seed=seed, amplitude=0.4, base_hz=0.2)
    return t, q, v, measured_efforts(model, q, v, a, 0.5, 0.8, noise=0.02, seed=seed)


@pytest.mark.parametrize('order, cutoff, rate', [(4, 10.0, 1000.0), (4, 10.0, 500.0),
                                                 (2, 3.0, 100.0), (6, 40.0, 1000.0),
                                                 (4, 240.0, 500.0)])
def test_the_filter_is_scipys(order, cutoff, rate):
    signal = pytest.importorskip('scipy.signal')
    sos, zi, pad = filters.butter_lowpass(order, cutoff, rate)
    reference = signal.butter(order, cutoff / (0.5 * rate), output='sos')
    assert np.allclose(sos, reference, rtol=1e-13, atol=1e-15)
    assert np.allclose(zi, signal.sosfilt_zi(reference), rtol=1e-12, atol=1e-14)
    x = np.cumsum(np.random.default_rng(order).normal(size=(3000, 5)), axis=0)
    ours = filters.filtfilt(x, cutoff, rate, order)
    theirs = signal.sosfiltfilt(reference, x, axis=0)
    assert np.max(np.abs(ours - theirs)) <= 1e-12 * np.max(np.abs(x))
    assert np.array_equal(filters.gradient(x, 1.0 / rate), np.gradient(x, 1.0 / rate, axis=0))


def _wrench(typestore, frame, stamp_ns, values, little_endian=True):
    Wrench = typestore.types['geometry_msgs/msg/WrenchStamped']
    msg = Wrench(
        header=typestore.types['std_msgs/msg/Header'](
            stamp=typestore.types['builtin_interfaces/msg/Time'](sec=stamp_ns // 10**9,
                                                                 nanosec=stamp_ns % 10**9),
            frame_id=frame),
        wrench=typestore.types['geometry_msgs/msg/Wrench'](
            force=typestore.types['geometry_msgs/msg/Vector3'](*values[:3]),
            torque=typestore.types['geometry_msgs/msg/Vector3'](*values[3:])))
    return bytes(typestore.serialize_cdr(msg, 'geometry_msgs/msg/WrenchStamped',
                                         little_endian=little_endian))


@pytest.mark.parametrize('compressed', [False, True])
def test_mcap_chunks_hold_the_messages_rosbags_reads(tmp_path, compressed):
    """Two topics interleaved, recording times out of order within chunks, several chunks
    (1 MB each), uncompressed or zstd: per topic, the messages and their order are rosbags'."""
    from rosbags.rosbag2 import (CompressionFormat, CompressionMode, Reader, StoragePlugin,
                                 Writer)
    from rosbags.typesys import Stores, get_typestore

    from rbd_ros.analysis import mcap
    typestore = get_typestore(Stores.ROS2_KILTED)
    rng = np.random.default_rng(1)
    writer = Writer(tmp_path / 'bag', version=9, storage_plugin=StoragePlugin.MCAP)
    if compressed:
        writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with writer:
        wrenches = writer.add_connection('/w', 'geometry_msgs/msg/WrenchStamped',
                                         typestore=typestore)
        other = writer.add_connection('/other', 'geometry_msgs/msg/WrenchStamped',
                                      typestore=typestore)
        for k in range(30000):
            jitter = int(rng.integers(-3, 4)) * 1000     # recording times a little out of order
            data = _wrench(typestore, f'link{k % 3}', k * 10**6, rng.normal(size=6))
            writer.write(wrenches if k % 4 else other, 10**9 + k * 10**6 + jitter, data)
    path = next((tmp_path / 'bag').glob('*.mcap'))
    with Reader(tmp_path / 'bag') as reader:
        expected = {topic: [(t, bytes(d)) for c, t, d in reader.messages() if c.topic == topic]
                    for topic in ('/w', '/other')}
    with mcap.McapFile(path) as f:
        assert len(f.chunk_index) >= 3
        for topic in ('/w', '/other'):
            got = []
            for buf, _, log_time, at, size in f.chunks(f.channel_ids(topic)):
                got += [(int(t), buf[a:a + s].tobytes()) for t, a, s in zip(log_time, at, size)]
            assert got == expected[topic]


def test_mcap_zstd_and_sqlite3_logs_give_the_same_bits(tmp_path):
    """The MCAP reader (plain and zstd chunks) and rosbags' reader (sqlite3) feed the same
    analysis: every sum and the normal equations equal to the bit."""
    t, q, v, tau = motion()
    names = arm().joint_names
    paths = [write_log(tmp_path / 'mcap', t, names, q, v, tau),
             write_log(tmp_path / 'zstd', t, names, q, v, tau, compression=True),
             write_log(tmp_path / 'db3', t, names, q, v, tau, storage='sqlite3')]
    options = Options(friction=True, payload_link='tool0')
    results = [analyze_log(str(p), ARM, options) for p in paths]
    assert [r.status for r in results] == ['ok'] * 3, [r.reason for r in results]
    for r in results[1:]:
        for key in results[0].sums:
            assert np.array_equal(r.sums[key], results[0].sums[key]), key
        for mine, theirs in zip(r.normal, results[0].normal):
            assert np.array_equal(mine, theirs)


def test_a_chunk_that_fails_its_checksum_is_named(tmp_path):
    """rosbag2's MCAP writer stores each chunk's CRC-32 (rosbags' writes none): with one in
    place, a flipped byte in the chunk's records is named, not read."""
    import struct
    import zlib

    from rbd_ros.analysis import mcap
    t, q, v, tau = motion(4.0)
    bag = write_log(tmp_path / 'bag', t, arm().joint_names, q, v, tau)
    path = next(pathlib.Path(bag).glob('*.mcap'))
    data = bytearray(path.read_bytes())
    with mcap.McapFile(path) as f:
        offset = f.chunk_index[0][0]
    name_length, = struct.unpack_from('<I', data, offset + 9 + 28)
    records = offset + 9 + 32 + name_length + 8
    size, = struct.unpack_from('<Q', data, offset + 9 + 16)
    struct.pack_into('<I', data, offset + 9 + 24, zlib.crc32(data[records:records + size]))
    path.write_bytes(bytes(data))
    assert analyze_log(str(bag), ARM, Options()).status == 'ok'      # the CRC is right
    data[records + size // 2] ^= 0x55
    path.write_bytes(bytes(data))
    result = analyze_log(str(bag), ARM, Options())
    assert result.status == 'skipped'
    assert result.reason.startswith('the MCAP file is truncated or corrupt (the chunk at byte '
                                    f'{offset} fails its checksum'), result.reason


def test_big_endian_messages_read_as_little_endian_ones():
    from rosbags.typesys import Stores, get_typestore

    from rbd_ros.analysis import decode
    typestore = get_typestore(Stores.ROS2_KILTED)
    values = np.arange(6) * 1.25 - 2.0
    for endian in (True, False):
        data = _wrench(typestore, 'FL_FOOT', 5 * 10**9 + 7, values, little_endian=endian)
        reader = decode.Reader(decode.wrench_stamped)
        buf = np.frombuffer(bytearray(data), np.uint8)
        which, rows = reader.read(buf, np.zeros(1, np.int64), np.array([len(data)]))
        row = rows.view(reader.layouts[0].dtype).ravel()
        assert reader.layouts[0].key == ('FL_FOOT',)
        assert decode.stamps_ns(row, row.dtype)[0] == 5 * 10**9 + 7
        assert np.array_equal(row['values'][0], values)


@pytest.mark.parametrize('segment', [None, 1500])
def test_what_a_log_leaves_out_is_counted_and_adds_up(tmp_path, monkeypatch, segment):
    """Lost messages (interpolated), re-sent ones (left out), the filter's start-up at the
    ends: counted per log, and the samples analysed plus those left out are the log's grid,
    read whole or in segments."""
    t, q, v, tau = motion(10.0)
    lost = np.array([700, 701, 2500])                       # three messages never recorded
    keep = np.setdiff1d(np.arange(t.size), lost)
    resent = np.sort(np.append(keep, [1200, 1200, 3100]))   # three re-sent (same stamp)
    bag = write_log(tmp_path / 'bag', t[resent], arm().joint_names, q[resent], v[resent],
                    tau[resent])
    if segment is not None:
        monkeypatch.setattr(logs, 'SEGMENT', segment)
    result = analyze_log(str(bag), ARM, Options())
    assert result.status == 'ok', result.reason
    d = result.dropped
    assert d['missing_messages'] == 3 and d['duplicate_messages'] == 3, d
    edge = int(np.ceil(5 * RATE / 10.0))
    assert d['filter_edges'] == 2 * edge, d
    grid = t.size                                          # the log's samples, lost ones too
    assert result.samples + d['filter_edges'] + d['short_tail'] == grid, (result.samples, d)
    data = combine(arm(), [result], Options())
    assert data.logs[0]['dropped'] == d


def test_a_process_that_ran_batched_kernels_can_fork(tmp_path):
    """numba's threading layer is fork-safe (rbd_ros/dynamics/_jit.py): after a batched call,
    a multiprocessing pool of forked workers runs the analysis (with GNU OpenMP each child
    aborted: 'fork() called from a process already using GNU OpenMP'). Where the ``fast``
    extra installed TBB's wheel, the layer is TBB (its library loaded from the wheel)."""
    t, q, v, tau = motion(4.0)
    bag = write_log(tmp_path / 'bag', t, arm().joint_names, q, v, tau)
    code = textwrap.dedent(f'''
        import multiprocessing, sys
        import numpy as np
        import rbd_ros.dynamics as rbd
        from rbd_ros.analysis.compute import Options, analyze_log
        urdf = open({str(ARM_PATH)!r}).read()
        model = rbd.Model.from_urdf(urdf)
        Q = np.random.default_rng(0).normal(size=(2000, model.nq))
        rbd.inverse_dynamics(model, Q, Q, Q)                     # the batched kernels run
        import numba
        print('layer', numba.threading_layer())
        def one(path):
            return analyze_log(path, urdf, Options()).samples
        if __name__ == '__main__':
            with multiprocessing.get_context('fork').Pool(2) as pool:
                print('samples', pool.map(one, [{str(bag)!r}] * 2))
    ''')
    script = tmp_path / 'fork.py'
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=240, cwd=ROOT, env={k: v for k, v in os.environ.items()
                                                     if k != 'NUMBA_THREADING_LAYER'})
    assert done.returncode == 0, done.stdout + done.stderr
    layer = done.stdout.split('layer ', 1)[1].split()[0]
    assert 'omp' not in layer
    try:
        importlib.metadata.distribution('tbb')
        assert layer == 'tbb', layer
    except importlib.metadata.PackageNotFoundError:
        assert layer == 'workqueue', layer
    samples = analyze_log(str(bag), ARM, Options()).samples
    assert f'samples [{samples}, {samples}]' in done.stdout, done.stdout


def test_on_a_schedulers_cluster_the_workers_find_the_logs(tmp_path, monkeypatch):
    """This process never looks at the logs: the workers expand the folder and read them, and
    the sums are the serial ones."""
    distributed = pytest.importorskip('distributed')
    from rbd_ros.analysis import run
    t, q, v, tau = motion(6.0)
    folder = tmp_path / 'fleet'
    for k in range(3):
        write_log(folder / f'run{k}', t, arm().joint_names, q, v, tau + 0.01 * k)
    serial = [analyze_log(str(folder / f'run{k}'), ARM, Options()) for k in range(3)]

    def nowhere(_):
        raise AssertionError('the client looked at the logs')
    monkeypatch.setattr(run, 'find_logs', nowhere)
    monkeypatch.setattr(run, 'log_size', nowhere)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = run.Cluster(cluster.scheduler_address)
        try:
            progress = run.Progress([], enabled=False, tty=False, sizes=False)
            results, missing = run.run_dask(remote, [str(folder), str(tmp_path / 'none')],
                                            ARM, Options(), progress, lambda r: None)
        finally:
            remote.close()
    assert missing == [(str(tmp_path / 'none'), 'no such file or folder')]
    assert [pathlib.Path(r.path).name for r in results] == ['run0', 'run1', 'run2']
    for mine, theirs in zip(results, serial):
        for key in theirs.sums:
            assert np.array_equal(mine.sums[key], theirs.sums[key]), key


def test_a_worker_process_that_dies_does_not_lose_the_logs(tmp_path):
    """A killed worker process breaks its pool: the logs not done run again on a new pool, and
    the sums are still the serial ones."""
    import signal

    from rbd_ros.analysis import run
    t, q, v, tau = motion(3.0)
    paths = []
    for k in range(3):
        write_log(tmp_path / f'run{k}', t, arm().joint_names, q, v, tau + 0.01 * k)
        paths.append(str(tmp_path / f'run{k}'))
    serial = [analyze_log(p, ARM, Options()) for p in paths]
    local = run.LocalWorkers(1)
    told = []

    def tell(result):
        told.append(result.path)
        if len(told) == 1:           # after the first log, its worker is killed
            for pid in list(local.pool._processes):
                os.kill(pid, signal.SIGKILL)
    try:
        progress = run.Progress([], enabled=False, tty=False, sizes=False)
        results = run.run_local(local, paths, ARM, Options(), progress, tell)
    finally:
        local.close()
    assert [r.status for r in results] == ['ok'] * 3
    assert sorted(told) == sorted(paths)
    for mine, theirs in zip(results, serial):
        for key in theirs.sums:
            assert np.array_equal(mine.sums[key], theirs.sums[key]), key


def test_workers_auto_keeps_small_work_in_this_process(tmp_path):
    from rbd_ros.analysis import run
    t, q, v, tau = motion(6.0)
    paths = [str(write_log(tmp_path / f'run{k}', t, arm().joint_names, q, v, tau))
             for k in range(2)]
    workers, why = run.choose_workers('auto', paths, Options(), cores=16)
    assert workers == 0 and 'analysed in this process' in why
    # a large fleet (sizes as reported): as many workers as cores and logs
    big = [str(tmp_path / f'big{k}') for k in range(40)]
    sizes = dict.fromkeys(big, 500e6)
    original = run.log_size
    try:
        run.log_size = sizes.get
        assert run.choose_workers('auto', big, Options(), cores=16)[0] == 16
        assert run.choose_workers('auto', big, Options(), cores=2)[0] == 2
        # three logs identified on 16 cores: this process's threads beat three workers
        assert run.choose_workers('auto', big[:3], Options(friction=True), cores=16)[0] == 0
    finally:
        run.log_size = original
    assert run.choose_workers(8, paths, Options(), cores=16) == (
        2, '--workers 8: 2 logs, one task each: 2 workers')
    report = tmp_path / 'auto.json'
    done = subprocess.run([sys.executable, '-m', 'rbd_ros', 'analyze', *paths, '--urdf',
                           str(ARM_PATH), '--workers', 'auto', '--json', str(report)],
                          capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '--workers auto: 2 logs' in done.stderr and 'analysed in this process' in \
        done.stderr, done.stderr
    serial = combine(arm(), [analyze_log(p, ARM, Options()) for p in paths], Options())
    from rbd_ros.analysis.cli import report_json
    data = json.loads(report.read_text())
    assert data['joints'] == json.loads(json.dumps(report_json(serial)))['joints']


def test_a_run_of_many_logs_reports_its_progress(monkeypatch, capsys):
    from rbd_ros.analysis import run
    from rbd_ros.analysis.compute import LogResult
    monkeypatch.setattr(run, 'PROGRESS_PERIOD_S', 0.0)
    monkeypatch.setattr(run, 'log_size', lambda path: 1000)
    progress = run.Progress(['a', 'b', 'c', 'd'], enabled=True, tty=False)
    for name in 'abc':
        progress.done(name, LogResult(path=name, status='ok', samples=5000))
    lines = [line for line in capsys.readouterr().err.splitlines()
             if line.startswith('progress: ')]
    assert len(lines) == 3
    assert lines[-1].startswith('progress: 3/4 logs, 15,000 samples (')
    assert lines[-1].endswith(' s left') and '/s), ' in lines[-1]


def test_profile_prints_each_stage_and_the_start_up(tmp_path):
    t, q, v, tau = motion(6.0)
    bag = write_log(tmp_path / 'bag', t, arm().joint_names, q, v, tau)
    done = subprocess.run([sys.executable, '-m', 'rbd_ros', 'analyze', str(bag), '--urdf',
                           str(ARM_PATH), '--profile', '--identify', 'friction'],
                          capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    from benchmarks.analyze_bench import profile_rows
    rows = profile_rows(done.stdout)
    for name in ('start-up: interpreter and launch', 'start-up: imports', 'start-up: model',
                 'start-up: kernels', 'read (files, chunks)', 'decode (bytes to arrays)',
                 'resample (checks, uniform grid)', 'filter (low-pass, derivatives)',
                 'dynamics (inverse dynamics, regressor)',
                 'sums (residuals, normal equations)', 'other (finding logs, report, ...)'):
        assert name in rows, (name, done.stdout)
    assert all(seconds >= 0.0 for seconds in rows.values()), rows
    assert rows['dynamics (inverse dynamics, regressor)'] > 0.0


def _odometry(typestore, stamp_ns, pose, twist):
    T = typestore.types
    msg = T['nav_msgs/msg/Odometry'](
        header=T['std_msgs/msg/Header'](
            stamp=T['builtin_interfaces/msg/Time'](sec=stamp_ns // 10**9,
                                                    nanosec=stamp_ns % 10**9),
            frame_id='world'),
        child_frame_id='base_link',
        pose=T['geometry_msgs/msg/PoseWithCovariance'](
            pose=T['geometry_msgs/msg/Pose'](
                position=T['geometry_msgs/msg/Point'](*pose[:3]),
                orientation=T['geometry_msgs/msg/Quaternion'](*pose[3:])),
            covariance=np.zeros(36)),
        twist=T['geometry_msgs/msg/TwistWithCovariance'](
            twist=T['geometry_msgs/msg/Twist'](
                linear=T['geometry_msgs/msg/Vector3'](*twist[:3]),
                angular=T['geometry_msgs/msg/Vector3'](*twist[3:])),
            covariance=np.zeros(36)))
    return bytes(typestore.serialize_cdr(msg, 'nav_msgs/msg/Odometry'))


def _with_base(tmp_path, name, base_rows, pose=lambda k: [0, 0, 0.5, 0, 0, 0, 1]):
    """The arm's joint states and, for the rows ``base_rows`` of them, the base's state."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    typestore = get_typestore(Stores.ROS2_KILTED)
    t, q, v, tau = motion(8.0)
    joints = write_log(tmp_path / f'{name}_joints', t, arm().joint_names, q, v, tau)
    start = 1_700_000_000 * 10**9
    bag = tmp_path / name
    with logs_reader(joints) as messages, Writer(bag, version=9,
                                                 storage_plugin=StoragePlugin.MCAP) as writer:
        js = writer.add_connection('/joint_states', 'sensor_msgs/msg/JointState',
                                   typestore=typestore)
        odom = writer.add_connection('/rbd_sim/base_state', 'nav_msgs/msg/Odometry',
                                     typestore=typestore)
        for k, (recorded, data) in enumerate(messages):
            writer.write(js, recorded, data)
            if k in base_rows:
                writer.write(odom, recorded, _odometry(typestore, recorded, pose(k), [0.0] * 6))
    assert recorded == start + int(round(t[-1] * 1e9))
    return str(bag)


class logs_reader:
    """The (recording time, bytes) of a bag's messages."""

    def __init__(self, path):
        from rosbags.rosbag2 import Reader
        self.reader = Reader(path)

    def __enter__(self):
        self.reader.open()
        return ((t, bytes(d)) for _, t, d in self.reader.messages())

    def __exit__(self, *exc):
        self.reader.close()


def test_a_floating_bases_state_covers_the_samples_it_can(tmp_path):
    """Base states for the middle of the log only: the samples before and after are cut and
    counted; a NaN in a base state and a zero quaternion are named."""
    options = Options(floating_base=True)
    n = int(8.0 * RATE)
    bag = _with_base(tmp_path, 'middle', set(range(1000, n - 1000)))
    result = analyze_log(bag, ARM, options)
    assert result.status == 'ok', result.reason
    d = result.dropped
    assert d['no_base_state'] == 2000, d
    assert result.samples + d['filter_edges'] + d['no_base_state'] == n, (result.samples, d)
    summary = combine(rbd.Model.from_urdf(ARM, floating_base=True), [result], options)
    # the base held at rest 0.5 m up: it needs the robot's weight (and the arm's swing: 0.2%)
    weight = rbd.Model.from_urdf(ARM, floating_base=True).total_mass * 9.81
    assert summary.base['wrench_mean'][2] == pytest.approx(weight, rel=0.01)
    bad = _with_base(tmp_path, 'nan', set(range(n)),
                     pose=lambda k: [0, 0, np.nan if k == 3000 else 0.5, 0, 0, 0, 1])
    result = analyze_log(bad, ARM, options)
    assert result.status == 'skipped'
    assert result.reason == '/rbd_sim/base_state: NaN or inf in the message stamped 6.000 s'
    zero = _with_base(tmp_path, 'zero', set(range(n)),
                      pose=lambda k: [0, 0, 0.5, 0, 0, 0, 0 if k >= 3000 else 1])
    result = analyze_log(zero, ARM, options)
    assert result.status == 'skipped'
    assert 'no rotation (a zero quaternion)' in result.reason, result.reason


def test_a_floating_joint_in_the_urdf_is_the_floating_base(tmp_path):
    """A URDF whose root is joined to the world by its own floating joint needs no
    --floating-base: the same base rows as the arm with one added."""
    bag = _with_base(tmp_path, 'all', set(range(int(8.0 * RATE))))
    added = analyze_log(bag, ARM, Options(floating_base=True))
    urdf = ARM.replace('<joint name="world_joint" type="fixed">',
                       '<joint name="world_joint" type="floating">', 1)     # world -> base_link
    own = analyze_log(bag, urdf, Options())
    assert added.status == own.status == 'ok', (added.reason, own.reason)
    assert combine(rbd.Model.from_urdf(urdf), [own], Options()).base['link'] == 'base_link'
    for key in added.base:
        assert np.allclose(own.base[key], added.base[key], rtol=1e-9, atol=1e-9), key
    for key in added.sums:
        assert np.allclose(own.sums[key], added.sums[key], rtol=1e-9, atol=1e-12), key
