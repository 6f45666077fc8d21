"""The benchmarks in their seconds-long smoke mode, so that they never rot: each runs as the
README's command does (a subprocess, ``python -m benchmarks.<name> --smoke``), must exit 0 and
print its table. No timing is asserted: a smoke run measures nothing worth comparing."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.timeout(240)


def run_smoke(module: str) -> subprocess.CompletedProcess:
    # the environment is inherited: under test/conftest.py that is localhost discovery, UDP
    # transport and a temporary ROS log directory; node_bench picks its own private domain id
    return subprocess.run([sys.executable, '-m', module, '--smoke'], cwd=ROOT,
                          env=dict(os.environ), capture_output=True, text=True, timeout=180)


def table_rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip().strip('|').split('|')]
            for line in text.splitlines() if line.startswith('|')]


def test_dynamics_bench_smoke():
    pytest.importorskip('pinocchio')
    result = run_smoke('benchmarks.dynamics_bench')
    assert result.returncode == 0, result.stdout + result.stderr
    rows = table_rows(result.stdout)
    assert ['function', 'robot', 'rbd_ros us', 'Pinocchio us', 'ratio'] in rows
    assert ['function', 'robot', 'rbd_ros k/s', 'Pinocchio loop k/s', 'speed-up'] in rows
    names = {row[0] for row in rows}
    for function in ('inverse_dynamics', 'gravity_torques', 'mass_matrix', 'forward_dynamics',
                     'frame_poses', 'frame_poses, new result', 'constrained_forward_dynamics',
                     'constrained_inverse_dynamics', 'inverse_dynamics_derivatives',
                     'forward_dynamics_derivatives', 'gravity_torques_derivatives'):
        assert function in names, result.stdout
    assert ['function', 'mechanism', 'rbd_ros us', 'Pinocchio us', 'ratio'] in rows
    robots = {row[1] for row in rows if row[0] == 'forward_dynamics_derivatives'}
    assert 'Talos (nv 38, floating)' in robots, result.stdout


def test_sim_bench_smoke():
    """The simulator against MuJoCo (mujoco is in the test extra): both columns filled for the
    arm, UR5 and Solo-12 with contacts, and none of our steps diverged."""
    result = run_smoke('benchmarks.sim_bench')
    assert result.returncode == 0, result.stdout + result.stderr
    rows = table_rows(result.stdout)
    head = rows[0]
    assert head[:5] == ['robot', 'integrator', 'contacts (ours / MuJoCo)', 'rbd_ros one call',
                        'rbd_ros batch'], result.stdout
    robots = {row[0] for row in rows[2:]}
    assert 'bundled arm (7 DoF)' in robots and 'Solo-12 standing' in robots
    for row in rows[2:]:
        cell = dict(zip(head, row))
        assert 'diverged' not in cell['rbd_ros batch'], result.stdout
        assert cell['unconverged'] == '0', result.stdout
        if row[0] == 'Solo-12 standing':
            assert cell['contacts (ours / MuJoCo)'].startswith('4 /'), result.stdout
        if pytest.importorskip('mujoco'):
            assert cell['MuJoCo batch'] not in ('', '-'), result.stdout


@pytest.mark.ros
def test_node_bench_smoke():
    pytest.importorskip('rclpy')
    result = run_smoke('benchmarks.node_bench')
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {row[0]: row[1:] for row in table_rows(result.stdout)}
    assert rows.get('measurement') == ['bare relay', 'dynamics_node', 'added', 'target', 'met'], \
        result.stdout
    for label in ('lost: gravity_torques / forward_dynamics', 'latency p50, us: gravity_torques',
                  'latency p99, us: gravity_torques', 'CPU, % of one core'):
        assert label in rows, result.stdout
        assert rows[label][1] not in ('', '-'), f'no value for {label}:\n{result.stdout}'
    assert any(label.startswith('RSS max - min') for label in rows), result.stdout
    assert any(label.startswith('start-up to first torque') for label in rows), result.stdout


@pytest.mark.ros
def test_sim_node_bench_smoke():
    """sim_node's tick: a row per output subscribed, each with its cost, the real-time run and
    (with A1) the lying robot at real_time_factor 0 with its /diagnostics."""
    pytest.importorskip('rclpy')
    result = run_smoke('benchmarks.sim_node_bench')
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {row[0]: row[1:] for row in table_rows(result.stdout)}
    assert rows.get('what is subscribed') == ['us per tick', 'added'], result.stdout
    for label in ('the physics step alone (Simulator.advance)', 'nothing', '+ joint_states',
                  '+ /clock', '+ base_state', '+ /tf', '+ contact_wrenches',
                  '+ contact_markers (30 Hz)'):
        assert float(rows[label][0]) > 0, result.stdout
    assert 'per tick, every output read:' in result.stdout
    real_time = [label for label in rows if 'real_time_factor 1' in label]
    assert real_time and rows[real_time[0]][1].endswith('x'), result.stdout
    for label in rows:
        if 'real_time_factor 0' in label:
            assert rows[label][1].endswith('x') and ' in ' in rows[label][2], result.stdout


@pytest.mark.ros
def test_campaign_smoke():
    """The fuzz and soak campaign, seconds long: a few thousand fuzzed joint_states as bytes and
    as bad fields into dynamics_node, description reloads, fuzzed (and blowing-up) commands
    into sim_node, a short 1 kHz soak. It fails on any non-finite output, death, freeze,
    internal error, mixed model, lost soak output or counters that do not add up."""
    pytest.importorskip('rclpy')
    result = run_smoke('benchmarks.campaign')
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'result: every check held' in result.stdout
    rows = {row[0]: row[1:] for row in table_rows(result.stdout)}
    assert rows['internal errors: dynamics / sim'] == ['0 / 0']
    assert int(rows['rejected: malformed'][0]) > 0
    assert rows['non-finite outputs received / dropped by the nodes'] == ['0 / 0']


@pytest.mark.ros
def test_analyze_bench_smoke():
    """The offline analysis end to end on logs it writes: the script against the tool on short
    and long logs, every stage of --profile (their seconds add up to at most the whole
    command's), the start-up's parts, and 1 and 2 workers giving the serial JSON."""
    pytest.importorskip('rosbags')
    pytest.importorskip('rclpy')
    result = run_smoke('benchmarks.analyze_bench')
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {row[0]: row[1:] for row in table_rows(result.stdout)}
    for label in ('2 x 3 s', '1 x 10 s'):
        assert len(rows[label]) == 4, result.stdout
        script, tool, ratio = rows[label][1:]
        assert float(tool) > 0 and (ratio == '-' or ratio.endswith('x')), result.stdout
    stages = ('read (files, chunks)', 'decode (bytes to arrays)',
              'resample (checks, uniform grid)', 'filter (low-pass, derivatives)',
              'dynamics (inverse dynamics, regressor)', 'sums (residuals, normal equations)')
    for column in (0, 2):
        seconds = [float(rows[name][column]) for name in stages]
        seconds += [float(rows[name][column]) for name in rows if name.startswith('start-up: ')]
        assert all(x >= 0 for x in seconds)
        assert sum(seconds) <= float(rows['whole command'][column]) * 1.05, result.stdout
    for part in ('interpreter and launch', 'imports', 'model', 'kernels', 'the whole command'):
        assert float(rows[part][0]) >= 0, result.stdout
    assert rows['JSON equals serial'] == ['yes', 'yes', 'yes'], result.stdout
    assert rows['speed-up over serial'][0] == '1.00x', result.stdout


def test_implicit_bench_smoke():
    """The experiment behind docs/core.md's "Where else they would pay": every system, dt and
    scheme has a row."""
    result = run_smoke('benchmarks.implicit_bench')
    assert result.returncode == 0, result.stdout + result.stderr
    rows = table_rows(result.stdout)[2:]
    assert len(rows) == 3 * 2 * 3, result.stdout
    assert {row[2] for row in rows} == {'semi-implicit Euler', 'implicit (dh/dv)', 'RK4'}
