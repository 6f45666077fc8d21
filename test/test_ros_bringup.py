"""Executables as separate processes: a node's console script over DDS and its clean stop on
Ctrl-C, bringup, the demo; launch files where ROS's `launch` is installed."""
import pathlib
import py_compile
import signal
import subprocess
import sys

import numpy as np
import pytest
import yaml

pytest.importorskip('rclpy')

from sensor_msgs.msg import JointState  # noqa: E402

import rbd_ros.dynamics as rbd  # noqa: E402
from conftest import child_env, publish_until, script  # noqa: E402
from rbd_ros import bringup  # noqa: E402

pytestmark = pytest.mark.timeout(120)

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARM_PATH = ROOT / 'rbd_ros' / 'robots' / 'rbd_arm7.urdf'
NO_LAUNCH = ('ROS 2 `launch`/`launch_ros` are not installable from PyPI (PyPI\'s `launch` is an '
             'unrelated project): launch files are only loaded on a real ROS 2 install')


def test_dynamics_node_process_serves_and_stops_on_ctrl_c(ros, tmp_path):
    params = tmp_path / 'params.yaml'
    params.write_text(yaml.safe_dump({'rbd_dynamics': {'ros__parameters': {
        'robot_description': ARM_PATH.read_text(), 'joint_states_qos': 'reliable'}}}))
    proc = subprocess.Popen(script('dynamics_node') + ['--ros-args', '--params-file', str(params)],
                            env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        model = rbd.Model.from_urdf(str(ARM_PATH))
        gravity = ros.collect(JointState, '/rbd_dynamics/gravity_torques')
        pub = ros.publisher(JointState, 'joint_states', wait_for=1)
        q = np.linspace(-0.3, 0.9, 7)
        msg = JointState(name=list(model.joint_names), position=list(q))
        publish_until(pub, msg, lambda: gravity, timeout=30, what='gravity from the process')
        assert np.allclose(gravity[-1].effort, rbd.gravity_torques(model, q), rtol=1e-12,
                           atol=1e-12)
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, out
    assert 'Traceback' not in out, out


def test_demo_runs_and_summarises(tmp_path):
    """The README's demo: three phases of computed-torque tracking in the simulator, a summary
    with the error per phase, and a plot. Without a payload the model is exact (friction
    compensated): the arm follows within 1e-3 rad; the unknown payload makes it worse; the
    payload announced on the controller's ~/payload makes it exact again. The command as the
    README and docs/ros.md write it (test_docs_commands leaves it to this test); its plot goes
    to the temporary directory, here the test's own."""
    png = tmp_path / 'rbd_ros_demo.png'
    proc = subprocess.run([sys.executable, '-m', 'rbd_ros.demo'],
                          env=dict(child_env(), TMPDIR=str(tmp_path)), capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert 'summary' in out and 'Traceback' not in proc.stderr, out + proc.stderr
    # piped, the live table is one line per tick, per phase (the model's joints go to the log)
    assert 'joints joint_1, joint_2, joint_3, joint_4, joint_5, joint_6, joint_7' in proc.stderr
    for phase in ('no payload', '2 kg payload', '2 kg, announced'):
        assert f'  {phase:<16} t ' in out, out
    worst = {}
    for line in out.splitlines():
        if ' max ' in line and ' RMS ' in line:
            label = line.split(' max ')[0].strip()
            worst[label] = float(line.split(' max ')[1].split()[0])
    assert set(worst) == {'no payload', '2 kg payload', '2 kg, announced'}, out
    assert worst['no payload'] < 1e-3
    assert worst['2 kg payload'] > 10 * worst['no payload']
    assert worst['2 kg, announced'] < 1e-3
    assert f'plot: {png}' in out and png.stat().st_size > 10_000


def test_ankle_demo_holds_the_foot_where_a_tree_ignoring_the_loops_lets_it_fall():
    """--ankle: dynamics_node and frames_node serve the parallel ankle from motor-only
    joint_states; the motor torques they publish hold the loaded foot (the closed system at
    rest under them), the tree's gravity at the motors does not."""
    proc = subprocess.run([sys.executable, '-m', 'rbd_ros.demo', '--ankle'], env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'Traceback' not in proc.stderr, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()
            if line.startswith('  ') and line.split()[0][0] in '+-']
    assert len(rows) == 5, proc.stdout
    for row in rows:
        held, falls = float(row[-2]), float(row[-1])
        assert held < 1e-6 and falls > 1.0, row
        assert abs(float(row[4])) > 1.0 and abs(float(row[6])) < 0.1, row   # N m: loops, tree
    assert float(rows[1][2]) > 5.0 and abs(float(rows[3][3])) > 5.0       # pitched, rolled
    assert 'rejected inputs 0' in proc.stdout
    looped = subprocess.run([sys.executable, '-m', 'rbd_ros.demo',
                             str(ARM_PATH.parent / 'parallel_ankle.urdf')], env=child_env(),
                            capture_output=True, text=True, timeout=60)
    assert looped.returncode == 2 and '--ankle' in looped.stderr, looped.stderr


def test_bringup_process_from_yaml(tmp_path):
    cfg = tmp_path / 'two.yaml'
    cfg.write_text(yaml.safe_dump({'rbd_dynamics': {'ros__parameters': {'input_timeout': 1.0}},
                                   'rbd_frames': {'ros__parameters': {'frame_prefix': 'a/'}}}))
    assert bringup.nodes_in_config(cfg) == ['dynamics', 'frames']
    assert bringup.nodes_in_config(bringup.default_config()) == ['sim', 'dynamics', 'frames']
    proc = subprocess.run(script('bringup') + [str(cfg), '--urdf', str(ARM_PATH),
                                               '--duration', '1'],
                          env=child_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[rbd_dynamics]: model 'rbd_arm7'" in proc.stderr + proc.stdout
    assert "[rbd_frames]: model 'rbd_arm7'" in proc.stderr + proc.stdout
    bad = subprocess.run(script('bringup') + ['--nodes', 'planner'], env=child_env(),
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2


def test_config_yaml_declares_every_parameter():
    from rbd_ros.nodes import dynamics, frames, sim
    data = yaml.safe_load(bringup.default_config().read_text())
    for name, module in (('rbd_dynamics', dynamics), ('rbd_frames', frames), ('rbd_sim', sim)):
        assert set(data[name]['ros__parameters']) == set(module.PARAMS), name
        for key, value in data[name]['ros__parameters'].items():
            assert value == module.PARAMS[key].default, (name, key)


@pytest.mark.parametrize('name', ['rbd.launch.py', 'sim.launch.py'])
def test_launch_files(name):
    path = ROOT / 'launch' / name
    py_compile.compile(str(path), doraise=True)
    launch = pytest.importorskip('launch', reason=NO_LAUNCH)
    if not hasattr(launch, 'LaunchDescription'):   # the repo's launch/ folder, not ROS's launch
        pytest.skip(NO_LAUNCH)
    pytest.importorskip('launch_ros', reason=NO_LAUNCH)
    import importlib.util
    spec = importlib.util.spec_from_file_location(name.replace('.', '_'), path)
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception as exc:   # e.g. rbd_ros not in the ament index (not colcon-installed)
        pytest.skip(f'launch file needs an installed rbd_ros share directory: {exc}')
    assert module.generate_launch_description().entities
