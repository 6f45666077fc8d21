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
                     'frame_poses', 'frame_poses, new result', 'inverse_dynamics_derivatives',
                     'forward_dynamics_derivatives', 'gravity_torques_derivatives'):
        assert function in names, result.stdout
    robots = {row[1] for row in rows if row[0] == 'forward_dynamics_derivatives'}
    assert 'Talos (nv 38, floating)' in robots, result.stdout


def test_sim_bench_smoke():
    """The simulator against MuJoCo (mujoco is in the test extra): both columns filled for the
    arm, UR5 and Solo-12 with contacts, and none of our steps diverged."""
    result = run_smoke('benchmarks.sim_bench')
    assert result.returncode == 0, result.stdout + result.stderr
    rows = table_rows(result.stdout)
    assert rows[0][:4] == ['robot', 'integrator', 'rbd_ros one call', 'rbd_ros batch']
    robots = {row[0] for row in rows[2:]}
    assert 'bundled arm (7 DoF)' in robots and 'Solo-12 standing, 4 foot contacts' in robots
    for row in rows[2:]:
        assert 'diverged' not in row[3], result.stdout
        if pytest.importorskip('mujoco'):
            assert row[4] not in ('', '-') and row[6] not in ('', '-'), result.stdout


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
    """The offline analysis end to end on logs it writes: both analysis rows, the stages'
    shares adding up, the inverse-dynamics rows and the 1- and 2-worker rows."""
    pytest.importorskip('rosbags')
    pytest.importorskip('rclpy')
    result = run_smoke('benchmarks.analyze_bench')
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {row[0]: row[1:] for row in table_rows(result.stdout)}
    for label in ('residuals', 'residuals + friction + payload'):
        shares = [float(cell.rstrip('%')) for cell in rows[label][1:]]
        assert len(shares) == 4 and abs(sum(shares) - 100) <= 3, result.stdout
    assert 'rbd_ros batched (one call)' in rows and 'Pinocchio rnea in a Python loop' in rows
    assert rows['1'][2] == '1.00x' and rows['2'][2].endswith('x'), result.stdout


def test_implicit_bench_smoke():
    """The experiment behind docs/core.md's "Where else they would pay": every system, dt and
    scheme has a row."""
    result = run_smoke('benchmarks.implicit_bench')
    assert result.returncode == 0, result.stdout + result.stderr
    rows = table_rows(result.stdout)[2:]
    assert len(rows) == 3 * 2 * 3, result.stdout
    assert {row[2] for row in rows} == {'semi-implicit Euler', 'implicit (dh/dv)', 'RK4'}
