"""`python -m rbd_ros analyze` on rosbag2 logs written here (rosbags' writer, MCAP and sqlite3,
JointState bytes serialized by rclpy) from a known model: the bundled arm with known joint
friction and a known payload, with torque-sensor noise. The command recovers the friction and
the payload within 2%, leaves residuals at the noise for the true model, gives the serial
numbers on a local Dask cluster and on a scheduler the test starts, skips bad logs with one
line each, and writes a parameters file that dynamics_node and sim_node take."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip('rosbags')
pytest.importorskip('scipy')
pytest.importorskip('rclpy')           # (the writer serializes with rclpy; the analysis does not)

import rbd_ros.dynamics as rbd  # noqa: E402
from benchmarks.synthetic_logs import excitation, measured_efforts, write_log  # noqa: E402
from conftest import ARM  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARM_PATH = ROOT / 'rbd_ros' / 'robots' / 'rbd_arm7.urdf'
pytestmark = pytest.mark.timeout(300)

VISCOUS = np.array([0.8, 1.1, 0.6, 0.9, 0.25, 0.3, 0.2])
COULOMB = np.array([1.2, 1.5, 0.9, 1.0, 0.4, 0.35, 0.3])
PAYLOAD = dict(link='tool0', mass=1.5, com=np.array([0.02, -0.015, 0.06]),
               inertia=np.array([[0.004, 0.0003, 0.0], [0.0003, 0.005, -0.0002],
                                 [0.0, -0.0002, 0.003]]))
NOISE = 0.05          # N m rms on every torque sensor
RATE, DURATION = 500.0, 24.0
#: an exciting trajectory, as identification experiments use: accelerations of 7 to 25 rad/s^2
EXCITING = dict(amplitude=0.4, base_hz=0.2)


def arm():
    return rbd.Model.from_urdf(ARM)


def truth():
    p = PAYLOAD
    return arm().with_payload(p['link'], p['mass'], p['com'], p['inertia'])


def record(path, seed, storage='mcap', model=None, viscous=VISCOUS, coulomb=COULOMB,
           noise=NOISE, order=None, motion=EXCITING, **kwargs):
    """A log of the excitation on ``model`` (default: the truth), columns in ``order``."""
    model = model or truth()
    t, q, v, a = excitation(model, DURATION, RATE, seed=seed, **motion)
    tau = measured_efforts(model, q, v, a, viscous, coulomb, noise, seed=seed)
    names = list(model.joint_names)
    if order is not None:
        names, q, v, tau = [names[i] for i in order], q[:, order], v[:, order], tau[:, order]
    return str(write_log(path, t, names, q, v, tau, storage=storage, **kwargs))


@pytest.fixture(scope='module')
def logs(tmp_path_factory):
    """Three logs of one robot: a bag folder (MCAP), a bag folder (sqlite3) with the joints in
    another order, and a bare .db3 file."""
    d = tmp_path_factory.mktemp('fleet')
    a = record(d / 'run_a', seed=1, storage='mcap')
    b = record(d / 'run_b', seed=2, storage='sqlite3', order=[3, 0, 6, 1, 5, 2, 4])
    c = record(d / 'run_c', seed=3, storage='sqlite3')
    bare = d / 'bare' / 'run_c.db3'
    bare.parent.mkdir()
    shutil.move(next(pathlib.Path(c).glob('*.db3')), bare)
    shutil.rmtree(c)
    return [a, b, str(bare)]


def analyze(*args, env=None):
    result = subprocess.run([sys.executable, '-m', 'rbd_ros', 'analyze', *map(str, args)],
                            capture_output=True, text=True, cwd=ROOT, timeout=240,
                            env=env or dict(os.environ))
    return result


def report(tmp_path, *args, name='report.json'):
    out = tmp_path / name
    result = analyze(*args, '--json', out)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(out.read_text()), result


def test_friction_and_payload_recovered_within_2_percent(logs, tmp_path):
    params = tmp_path / 'identified.yaml'
    data, result = report(tmp_path, *logs, '--urdf', ARM_PATH, '--identify', 'friction',
                          '--identify', 'payload:tool0', '--write-params', params)
    assert [log['status'] for log in data['logs']] == ['ok'] * 3, data['logs']
    assert data['model'] == 'rbd_arm7'
    for j, name in enumerate(arm().joint_names):
        f = data['joints'][name]['friction']
        assert f['viscous'] == pytest.approx(VISCOUS[j], rel=0.02), (name, f)
        assert f['coulomb'] == pytest.approx(COULOMB[j], rel=0.02), (name, f)
    p = data['payload']
    assert p['link'] == 'tool0' and p['identified'].startswith('mass, centre of mass and inertia')
    assert p['mass'] == pytest.approx(PAYLOAD['mass'], rel=0.02)
    assert np.linalg.norm(np.subtract(p['com'], PAYLOAD['com'])) < 0.02 * np.linalg.norm(
        PAYLOAD['com'])
    xx, xy, xz, yy, yz, zz = p['inertia']
    inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    assert np.linalg.norm(inertia - PAYLOAD['inertia']) < 0.02 * np.linalg.norm(
        PAYLOAD['inertia']), inertia
    # the terminal table says the same
    assert 'payload on tool0: 1.5' in result.stdout and 'viscous' in result.stdout
    # the parameters file holds exactly the JSON's numbers, in the nodes' parameter names
    text = params.read_text()
    assert '/**:' in text and 'ros__parameters:' in text
    import yaml
    written = yaml.safe_load(text)['/**']['ros__parameters']
    assert written['joint_dynamics_joints'] == list(arm().joint_names)
    assert written['joint_damping'] == [data['joints'][n]['friction']['viscous']
                                        for n in arm().joint_names]
    assert written['payload_link'] == 'tool0'
    assert written['payload'][:4] == [p['mass'], *p['com']]


def test_slow_motion_gives_mass_and_centre_of_mass_only(tmp_path):
    """Motion too slow to tell the payload's inertia from the noise: its mass and centre of
    mass, and the report says why not the inertia."""
    logs = [record(tmp_path / f'slow{seed}', seed=seed, motion=dict(amplitude=0.4,
                                                                    base_hz=0.03))
            for seed in (5, 6)]
    data, result = report(tmp_path, *logs, '--urdf', ARM_PATH, '--identify', 'payload:tool0',
                          '--identify', 'friction')
    p = data['payload']
    assert p['identified'].startswith('mass and centre of mass: '), p
    assert 'standard error' in p['identified'] or 'does not determine' in p['identified']
    assert p['inertia'] is None
    assert p['mass'] == pytest.approx(PAYLOAD['mass'], rel=0.02)
    assert np.linalg.norm(np.subtract(p['com'], PAYLOAD['com'])) < 0.02 * np.linalg.norm(
        PAYLOAD['com'])
    assert 'identified: mass and centre of mass' in result.stdout


def test_segments_positions_only_and_unstamped_logs(tmp_path, monkeypatch):
    """A long log read in segments gives the numbers of reading it whole (to the filter's
    start-up error); a driver that publishes no velocities (differentiated from the positions)
    and one that never stamps its messages (the recording times) give the friction too."""
    from rbd_ros.analysis import Options, analyze_log, combine, logs
    options = Options(friction=True)
    log = record(tmp_path / 'long', seed=7, viscous=VISCOUS, coulomb=COULOMB)
    whole = analyze_log(log, ARM, options)
    monkeypatch.setattr(logs, 'SEGMENT', 1500)            # 8 segments of 3 s
    pieces = analyze_log(log, ARM, options)
    assert whole.status == pieces.status == 'ok'
    assert pieces.samples == whole.samples             # the segments' samples tile the log
    rms = np.sqrt(whole.sums['rr'] / whole.samples)
    assert np.all(np.abs(pieces.sums['r'] - whole.sums['r']) / whole.samples < 1e-3 * rms)
    for key in ('rr', 'vv', 'rv'):
        assert np.allclose(pieces.sums[key], whole.sums[key], rtol=1e-3), key
    fw, fp = (combine(arm(), [r], options).friction for r in (whole, pieces))
    for name in fw:
        assert fp[name]['viscous'] == pytest.approx(fw[name]['viscous'], rel=1e-3)
        assert fp[name]['coulomb'] == pytest.approx(fw[name]['coulomb'], rel=1e-3)
    monkeypatch.undo()
    model = truth()
    t, q, v, a = excitation(model, DURATION, RATE, seed=8, **EXCITING)
    tau = measured_efforts(model, q, v, a, VISCOUS, COULOMB, NOISE, seed=8)
    no_velocity = write_log(tmp_path / 'no_velocity', t, model.joint_names, q, v, tau,
                            velocity=False)
    unstamped = write_log(tmp_path / 'unstamped', t, model.joint_names, q, v, tau,
                          stamps=np.zeros(t.size))
    for path, stamps in ((no_velocity, 'header'), (unstamped, 'recording')):
        result = analyze_log(str(path), ARM, Options(friction=True, payload_link='tool0'))
        assert result.status == 'ok', result.reason
        assert result.stamps == stamps
        summary = combine(arm(), [result], Options(friction=True, payload_link='tool0'))
        for j, name in enumerate(arm().joint_names):
            assert summary.friction[name]['viscous'] == pytest.approx(VISCOUS[j], rel=0.02)
            assert summary.friction[name]['coulomb'] == pytest.approx(COULOMB[j], rel=0.02)
        assert summary.payload['mass'] == pytest.approx(PAYLOAD['mass'], rel=0.02)


def test_true_model_leaves_residuals_at_the_noise(tmp_path):
    """The URDF the logs were made with (friction in its <dynamics>, no payload): residual mean
    near 0 and rms at the sensor noise, on every joint; the bundled URDF's own friction values
    (wrong for these logs) leave residuals that correlate with velocity, and the table says to
    identify friction."""
    urdf = ARM
    for j, name in enumerate(arm().joint_names):
        urdf = re.sub(rf'(<joint name="{name}".*?<dynamics )damping="[^"]*" friction="[^"]*"',
                      rf'\g<1>damping="{VISCOUS[j]:.17g}" friction="{COULOMB[j]:.17g}"', urdf,
                      flags=re.S)
    true_urdf = tmp_path / 'true.urdf'
    true_urdf.write_text(urdf)
    model = rbd.Model.from_urdf(urdf)
    assert np.allclose(model.damping, VISCOUS) and np.allclose(model.friction, COULOMB)
    log = record(tmp_path / 'run', seed=4, model=arm(), noise=NOISE)
    data, _ = report(tmp_path, log, '--urdf', true_urdf)
    for name, s in data['joints'].items():
        assert abs(s['residual_mean']) < 0.01, (name, s)
        assert s['residual_rms'] == pytest.approx(NOISE, rel=0.1), (name, s)
        assert s['residual_max'] < 6 * NOISE, (name, s)
    wrong, result = report(tmp_path, log, '--urdf', ARM_PATH, name='wrong.json')
    assert max(abs(s['velocity_correlation']) for s in wrong['joints'].values()) > 0.5
    assert '--identify friction' in result.stdout


def test_local_workers_and_a_scheduler_give_the_serial_numbers(logs, tmp_path):
    distributed = pytest.importorskip('distributed')
    options = ('--urdf', ARM_PATH, '--identify', 'friction', '--identify', 'payload:tool0')
    serial, _ = report(tmp_path, *logs, *options, name='serial.json')
    parallel, _ = report(tmp_path, *logs, *options, '--workers', '2', name='parallel.json')
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote, _ = report(tmp_path, *logs, *options, '--scheduler', cluster.scheduler_address,
                           name='remote.json')
    # sums added in the logs' order wherever they ran: the same numbers, to the last bit
    assert parallel == serial
    assert remote == serial


def test_bad_logs_are_named_and_skipped(logs, tmp_path):
    model = truth()
    t, q, v, a = excitation(model, 4.0, RATE, seed=9)
    tau = measured_efforts(model, q, v, a, VISCOUS, COULOMB)
    names = list(model.joint_names)
    bad = tmp_path / 'bad'
    write_log(bad / 'other_topic', t, names, q, v, tau, topic='/arm/joint_states')
    write_log(bad / 'no_effort', t, names, q, v, None)
    stamps = 1_700_000_000 * 10**9 + np.rint(t * 1e9).astype(np.int64)
    stamps[100] = stamps[98]
    write_log(bad / 'stamps_back', t, names, q, v, tau, stamps=stamps)
    gap = np.rint(t * 1e9).astype(np.int64) + 1_700_000_000 * 10**9
    gap[1000:] += 500_000_000
    write_log(bad / 'gap', t, names, q, v, tau, stamps=gap)
    write_log(bad / 'renamed', t, [n.replace('joint_4', 'elbow') for n in names], q, v, tau)
    truncated = bad / 'truncated.mcap'
    good = next(pathlib.Path(logs[0]).glob('*.mcap'))
    truncated.write_bytes(good.read_bytes()[:good.stat().st_size // 3])
    (bad / 'garbage.db3').write_bytes(np.random.default_rng(0).bytes(50_000))
    (tmp_path / 'empty').mkdir()
    data, result = report(tmp_path, logs[0], bad, tmp_path / 'empty', tmp_path / 'nowhere',
                          '--urdf', ARM_PATH)
    status = {pathlib.Path(log['path']).name: (log['status'], log['reason'])
              for log in data['logs']}
    assert status['run_a'] == ('ok', '')
    expected = {'other_topic': 'no topic /joint_states (the log has /arm/joint_states',
                'no_effort': 'no effort', 'stamps_back': 'stamps do not increase: message 100',
                'gap': 'a gap of 0.502 s', 'renamed': 'missing from the log: joint_4',
                'truncated.mcap': 'truncated', 'garbage.db3': 'not a readable rosbag2 log',
                'empty': 'no rosbag2 logs in this folder', 'nowhere': 'no such file'}
    for name, words in expected.items():
        assert status[name][0] == 'skipped', (name, status[name])
        assert words in status[name][1], (name, status[name])
        # one line on stderr names the log and the problem
        lines = [line for line in result.stderr.splitlines() if line.startswith('skipped ')
                 and name in line]
        assert len(lines) == 1 and words in lines[0], (name, result.stderr)
    assert '9 skipped' in result.stdout
    # nothing analysed: exit status 1
    nothing = analyze(bad, '--urdf', ARM_PATH)
    assert nothing.returncode == 1, nothing.stdout + nothing.stderr


@pytest.mark.parametrize('args, words', [
    (['--identify', 'payload:nolink'], "unknown link 'nolink'"),
    (['--identify', 'payload:base_link'], 'fixed base'),
    (['--identify', 'mass'], 'expected friction or payload:LINK'),
    (['--cutoff', '0'], '--cutoff must be a positive number'),
    (['--urdf', 'missing.urdf'], '--urdf missing.urdf: no such file'),
    (['--workers', '2', '--scheduler', 'tcp://127.0.0.1:1'], 'not allowed with'),
    (['--workers', '0'], "argument --workers: must be >= 1 (or auto), got 0"),
    (['--base-topic', '/odom'], '--base-topic and --contact-topic are for a floating base'),
])
def test_usage_errors_exit_2(logs, args, words, capsys):
    """In this process (a process each took ~2.5 s of CPU); the status of the process itself:
    the next test."""
    from rbd_ros.analysis.cli import main
    if '--urdf' not in args:
        args = ['--urdf', str(ARM_PATH), *args]
    try:
        status = main([str(logs[0]), *args])
    except SystemExit as exc:          # (argparse's errors)
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2, err
    assert words in err


def test_a_usage_error_is_the_status_of_the_process(logs):
    result = analyze(logs[0], '--urdf', ARM_PATH, '--identify', 'payload:nolink')
    assert result.returncode == 2, result.stdout + result.stderr
    assert "unknown link 'nolink'" in result.stderr and 'Traceback' not in result.stderr


def test_plots_and_a_low_cutoff_sample_rate(logs, tmp_path):
    plots = tmp_path / 'plots'
    result = analyze(logs[0], '--urdf', ARM_PATH, '--plots', plots)
    assert result.returncode == 0, result.stderr
    files = sorted(p.name for p in plots.iterdir())
    assert files == [f'{n}.png' for n in arm().joint_names]
    assert all((plots / f).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' for f in files)
    # a cut-off above half the sample rate is that log's problem, named
    result = analyze(logs[0], '--urdf', ARM_PATH, '--cutoff', '300')
    assert result.returncode == 1 and 'sampled at 500 Hz' in result.stderr


def test_runs_without_ros(logs, tmp_path):
    """The analysis needs no ROS install: rclpy and every message package made unimportable."""
    code = ('import sys\n'
            'for m in ("rclpy", "sensor_msgs", "builtin_interfaces", "std_msgs", '
            '"rosidl_parser"):\n'
            '    sys.modules[m] = None\n'
            'from rbd_ros.analysis.cli import main\n'
            f'status = main([{logs[0]!r}, "--urdf", {str(ARM_PATH)!r}, "--identify", '
            '"friction"])\n'
            'assert not [m for m in sys.modules if m.startswith("rclpy") and sys.modules[m]]\n'
            'sys.exit(status)\n')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            cwd=tmp_path, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'joint_7' in result.stdout


def test_the_nodes_take_the_written_parameters(logs, tmp_path, ros):
    from rbd_ros.nodes.dynamics import DynamicsNode
    from rbd_ros.nodes.sim import SimNode
    from rbd_ros.ros.params import ParameterError

    params = tmp_path / 'identified.yaml'
    result = analyze(*logs, '--urdf', ARM_PATH, '--identify', 'friction', '--identify',
                     'payload:tool0', '--write-params', params, '--json', tmp_path / 'r.json')
    assert result.returncode == 0, result.stderr
    data = json.loads((tmp_path / 'r.json').read_text())
    viscous = [data['joints'][n]['friction']['viscous'] for n in arm().joint_names]
    coulomb = [data['joints'][n]['friction']['coulomb'] for n in arm().joint_names]
    args = ['--ros-args', '--params-file', str(params)]
    d = ros.start(DynamicsNode, {'robot_description': ARM}, cli_args=args)
    s = ros.start(SimNode, {'robot_description': ARM}, cli_args=args)
    for node in (d, s):
        model = node.robot.model
        assert np.array_equal(model.damping, viscous) and np.array_equal(model.friction, coulomb)
        assert node.payload[0] == 'tool0'
        assert node.payload[1] == pytest.approx(data['payload']['mass'], rel=1e-12)
        assert model.total_mass == pytest.approx(arm().total_mass + data['payload']['mass'])
    # the simulator simulates the identified friction
    assert np.array_equal(s.runtime.sim.model.damping, viscous)
    # a new description keeps both corrections
    from rclpy.parameter import Parameter
    assert d.set_parameters([Parameter('robot_description', value=ARM + '\n')])[0].successful
    assert d.robot.xml == ARM + '\n' and d.payload[0] == 'tool0'
    assert np.array_equal(d.robot.model.damping, viscous)
    # parameters that do not fit the robot stop the node at start-up, naming the parameter
    with pytest.raises(ParameterError, match="joint_dynamics_joints: joint damping for unknown "
                                             "joint 'elbow'"):
        ros.start(DynamicsNode, {'robot_description': ARM, 'joint_dynamics_joints': ['elbow'],
                                 'joint_damping': [1.0]}, node_name='bad_dynamics')
    with pytest.raises(ParameterError, match='parameter payload'):
        ros.start(DynamicsNode, {'robot_description': ARM, 'payload_link': 'nolink',
                                 'payload': [1.0]}, node_name='bad_payload')
