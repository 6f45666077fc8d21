"""The executables as a user types them: --help, --urdf, parameters the node cannot run with
(one line naming the parameter, exit status 2, no traceback), Ctrl-C from a terminal (twice),
and every parameter readable as `ros2 param dump` reads it."""
import os
import pathlib
import re
import signal
import subprocess
import time

import pytest
import yaml

pytest.importorskip('rclpy')

from rcl_interfaces.msg import ParameterType  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from conftest import ARM, MODULES, child_env, script, wait_until  # noqa: E402
from corpus import robots_directory  # noqa: E402

pytestmark = pytest.mark.timeout(120)

ROOT = pathlib.Path(__file__).resolve().parent.parent
ANKLE_PATH = str(ROOT / 'rbd_ros' / 'robots' / 'parallel_ankle.urdf')
ARM_PATH = str(ROOT / 'rbd_ros' / 'robots' / 'rbd_arm7.urdf')
EXECUTABLES = ('dynamics_node', 'frames_node', 'sim_node', 'bringup')


def run(args, timeout=60):
    return subprocess.run(args, env=child_env(), capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize('executable', EXECUTABLES)
def test_help_prints_usage_and_starts_nothing(executable):
    done = run(script(executable) + ['--help'])
    assert done.returncode == 0 and done.stdout.startswith(f'usage: {executable}')
    assert '--urdf' in done.stdout and done.stderr == ''


def _talos():
    root = robots_directory()
    return os.path.join(root, 'talos_data', 'robots', 'talos_reduced.urdf') if root else None


def _bad_constraint_file(tmp_path):
    """The parallel ankle with its left ball constraint on a link that does not exist."""
    path = tmp_path / 'bad.urdf'
    path.write_text(pathlib.Path(ANKLE_PATH).read_text().replace(
        '<child link="foot"/> <child_origin xyz="-0.04 0.035',
        '<child link="toe"/> <child_origin xyz="-0.04 0.035'))
    return ['--urdf', str(path)]


def _bad_description_file(tmp_path):
    path = tmp_path / 'params.yaml'
    path.write_text(yaml.safe_dump({'rbd_dynamics': {'ros__parameters': {
        'robot_description': '<robot name="x">\n  <link name="a">\n</robot>'}}}))
    return ['--ros-args', '--params-file', str(path)]


CASES = [
    ('dynamics_node', ['--urdf', '/nonexistent/robot.urdf'],
     'parameter robot_description_file: /nonexistent/robot.urdf: no such file'),
    ('frames_node', ['--ros-args', '-p', 'robot_description:=notxml'],
     'parameter robot_description: not URDF XML text'),
    ('dynamics_node', _bad_description_file,
     'parameter robot_description: <robot_description>:3:'),
    ('dynamics_node', ['--urdf', ARM_PATH, '--ros-args', '-p', 'command_joints:=[joint_1, nope]'],
     "parameter command_joints names ['nope']"),
    ('sim_node', ['--urdf', ARM_PATH, '--ros-args', '-p', 'initial_positions:=[0.1]'],
     'parameter initial_positions has 1 values for the 7 command_joints'),
    ('dynamics_node', ['--ros-args', '-p', 'input_timeout:=abc'],
     "parameter input_timeout: expected a double (e.g. input_timeout:=0.5), got string 'abc'"),
    ('sim_node', ['--ros-args', '-p', 'rate:=500'],
     "parameter rate: expected a double (e.g. rate:=0.5), got integer '500'"),
    ('frames_node', ['--ros-args', '-p', 'publish_frequency:=-1.0'],
     'parameter publish_frequency: must be a finite number >= 0'),
    ('sim_node', ['--ros-args', '-p', 'position_limits:=off'],     # YAML reads off as false
     "parameter position_limits: expected a string (e.g. position_limits:=text), got bool "
     "'False'; quote a word YAML reads as a boolean: position_limits:=\"'off'\""),
    ('sim_node', ['--ros-args', '-p', 'integrator:=leapfrog'],
     'parameter integrator: must be one of'),
    ('dynamics_node', ['--ros-args', '-p', 'robot_description:=<robot name="a">\n<!-- a: b -->'],
     'invalid ROS arguments'),
    # every node serves loops: a bad <constraint> stops it in the core's line
    *[(node, _bad_constraint_file, "parameter robot_description_file: {tmp}/bad.urdf:110: "
       "constraint 'rod_left_ball': child link 'toe' does not exist")
      for node in ('dynamics_node', 'frames_node', 'sim_node')],
    ('dynamics_node', ['--urdf', ANKLE_PATH, '--ros-args', '-p',
                       'actuated_joints:=[motor_left, nope]'],
     "parameter actuated_joints names ['nope'], not single-DoF joints of 'parallel_ankle'"),
    ('frames_node', ['--urdf', ANKLE_PATH, '--ros-args', '-p', 'actuated_joints:=[motor_left]'],
     "parameter actuated_joints names 1 joints on the loops (motor_left) but the loops of "
     "'parallel_ankle' have 2 degrees of freedom"),
    ('dynamics_node', ['--urdf', ANKLE_PATH, '--ros-args', '-p',
                       'command_joints:=[ankle_pitch]'],
     "parameter command_joints names ['ankle_pitch'], not actuated joints of 'parallel_ankle'"),
    # sim_node: a loop's passive joint follows the motors (nothing commands it); motors where
    # the loops cannot close name the parameter that put them there
    ('sim_node', ['--urdf', ANKLE_PATH, '--ros-args', '-p', 'command_joints:=[ankle_pitch]'],
     "parameter command_joints names ['ankle_pitch'], passive joints of the closed loops of "
     "'parallel_ankle', which follow its motors"),
    ('sim_node', ['--urdf', ANKLE_PATH, '--ros-args', '-p', 'initial_positions:=[1.0, -1.0]'],
     "parameter initial_positions: close_loops: constraint 'rod_"),
    ('dynamics_node', lambda _: ['--urdf', _talos(), '--ros-args', '-p', 'strict:=true'],
     "parameter robot_description_file: " + '{talos}:1386: joint '
     "'gripper_left_inner_double_joint': a fixed joint cannot mimic another joint"),
]


#: runs each (module, args) case's main(args) in a process forked from this one, which imports
#: the modules and loads the kernels a node loads at its start once; prints [[exit status,
#: stdout, stderr], ...] as JSON. One process start (~1.5 s of CPU: numba, rclpy, the core,
#: then 0.6 s of kernels) instead of one per case.
FORKED_MAINS = r"""
import atexit, importlib, json, os, sys, tempfile, time, traceback
cases = json.load(sys.stdin)
for module, _ in cases:
    importlib.import_module(module)
from rbd_ros.dynamics._jit import JIT_ENABLED, load_signature_kernels
from rbd_ros.ros import joint_state_bytes, wire
load_signature_kernels()
if JIT_ENABLED:
    joint_state_bytes.warm_up()
    wire.warm_up()
results = []
for module, args in cases:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            try:
                code = importlib.import_module(module).main(args)
            except SystemExit as exc:
                code = exc.code
            except BaseException:
                traceback.print_exc()
                code = 1
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
                code = 1
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code or 0)
        deadline = time.monotonic() + 60     # (a case that is not refused spins: stopped)
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                status = 'none: still running after 60 s'
                break
            time.sleep(0.01)
        out.seek(0)
        err.seek(0)
        results.append([status, out.read().decode(errors='replace'),
                        err.read().decode(errors='replace')])
json.dump(results, sys.stdout)
"""


def run_mains(cases, timeout=300):
    """[(exit status, stdout, stderr)] of each (executable, args): its main(args), each in a
    process of its own (forked from one that imported them)."""
    import json
    done = subprocess.run([os.sys.executable, '-c', FORKED_MAINS], env=child_env(),
                          input=json.dumps([[MODULES[e], a] for e, a in cases]),
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def refusal_problems(executable, done_status, stderr, stdout, expected):
    """What is wrong with a refusal: status 2, one line on stderr (rcutils' own lines aside)
    that starts with the executable and holds the expected text, no traceback."""
    lines = [ln for ln in stderr.splitlines() if not ln.startswith('[rcutils|')]
    problems = []
    if done_status != 2:
        problems.append(f'exit status {done_status}')
    if len(lines) != 1:
        problems.append(f'{len(lines)} lines on stderr')
    elif not lines[0].startswith(f'{executable}: ') or expected not in lines[0]:
        problems.append(f'expected {expected!r} in {lines[0]!r}')
    if 'Traceback' in stderr + stdout:
        problems.append('a traceback')
    return problems


def test_parameters_the_node_cannot_run_with_stop_it_in_one_line(tmp_path):
    """Every case of CASES, each in its own process (forked: run_mains)."""
    cases, expectations = [], []
    for index, (executable, args, expected) in enumerate(CASES):
        if callable(args):
            if _talos() is None and 'talos' in expected:
                continue        # (example-robot-data not installed)
            args = args(tmp_path)
        cases.append((executable, args))
        expectations.append((index, executable, expected.format(talos=_talos(), tmp=tmp_path)))
    failures = []
    for (index, executable, expected), (_, args), (status, out, err) in zip(
            expectations, cases, run_mains(cases)):
        problems = refusal_problems(executable, status, err, out, expected)
        if problems:
            failures.append(f'CASES[{index}] {executable} {args}: {"; ".join(problems)}\n{err}')
    assert not failures, '\n'.join(failures)


def test_a_refused_parameter_ends_the_executable_with_status_2():
    """One case as the console script runs it (the others: run_mains)."""
    executable, args, expected = CASES[5]
    done = run(script(executable) + args)
    assert refusal_problems(executable, done.returncode, done.stderr, done.stdout, expected) == []


def test_a_node_serves_from_urdf_and_stops_quietly_on_two_ctrl_c(ros):
    """As a terminal does on Ctrl-C under `ros2 launch`: SIGINT to the whole process group,
    twice. The node exits with status 0, no traceback, no stderr noise from its model load."""
    gravity = ros.collect(JointState, '/rbd_dynamics/gravity_torques')
    proc = subprocess.Popen(script('dynamics_node') + ['--urdf', ARM_PATH], env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        pub = ros.publisher(JointState, 'joint_states', wait_for=1)
        msg = JointState(name=[f'joint_{i}' for i in range(1, 8)], position=[0.1] * 7)
        deadline = time.monotonic() + 30
        while not gravity and time.monotonic() < deadline:
            pub.publish(msg)
            time.sleep(0.1)
        assert gravity, 'no gravity torques from the process'
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    for noise in ('Traceback', 'KeyboardInterrupt', 'sequence size exceeds'):
        assert noise not in out + err, out + err
    assert 'model \'rbd_arm7\' from file' in err


@pytest.mark.parametrize('node_cls', ['DynamicsNode', 'FramesNode', 'SimNode'])
def test_every_parameter_dumps_and_gets(ros, node_cls):
    """What `ros2 param dump` does: list_parameters, then get_parameters for all of them. One
    parameter declared without a value makes get_parameters answer nothing at all."""
    from rclpy.parameter_client import AsyncParameterClient

    from rbd_ros.nodes import dynamics, frames, sim
    module = {'DynamicsNode': dynamics, 'FramesNode': frames, 'SimNode': sim}[node_cls]
    node = ros.start(getattr(module, node_cls), {'robot_description': ARM})
    client = AsyncParameterClient(ros.probe, node.get_fully_qualified_name())
    assert client.wait_for_services(timeout_sec=15)
    future = client.list_parameters()
    wait_until(future.done, what='list_parameters')
    names = list(future.result().result.names)
    assert set(module.PARAMS) <= set(names)
    future = client.get_parameters(names)
    wait_until(future.done, what='get_parameters')
    values = future.result().values
    assert len(values) == len(names)
    got = dict(zip(names, values))
    assert got['command_joints' if node_cls != 'FramesNode' else 'frame_prefix'].type in (
        ParameterType.PARAMETER_STRING_ARRAY, ParameterType.PARAMETER_STRING)
    for name in module.PARAMS:
        assert got[name].type != ParameterType.PARAMETER_NOT_SET, name
    if node_cls == 'SimNode':
        assert got['initial_positions'].type == ParameterType.PARAMETER_DOUBLE_ARRAY
        assert list(got['initial_positions'].double_array_value) == []


OVERLOADED = '''
import sys, time
import rclpy
from rbd_ros.ros.node import run

def make():
    node = rclpy.create_node('overloaded')
    node.create_timer(0.01, lambda: time.sleep(0.03))    # always late: 30 ms work every 10 ms
    print('ready', flush=True)
    return [node]

sys.exit(run(make, sys.argv, name='overloaded'))
'''


def test_a_node_that_cannot_keep_its_rate_still_stops_on_ctrl_c():
    """A timer that is always late keeps the executor busy: the signal itself must end the
    spin (found when sim_node, 8x slower than real time, ignored Ctrl-C under ros2 launch)."""
    proc = subprocess.Popen([os.sys.executable, '-c', OVERLOADED], env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == 'ready'
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=10)    # before the fix it spun on for good: TimeoutExpired
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, proc.stderr.read()


STUCK_TEARDOWN = '''
import ctypes, ctypes.util, sys
import rclpy
from rbd_ros.ros import node as ros_node
ros_node.TEARDOWN_LIMIT_S = 1.0
libc = ctypes.PyDLL(ctypes.util.find_library('c'))    # (PyDLL: the GIL stays held)

def make():
    node = rclpy.create_node('stuck')
    node.destroy_node = lambda: libc.sleep(600)       # as Fast DDS's spin in rcl_node_fini
    return [node]

sys.exit(ros_node.run(make, sys.argv, name='stuck', duration=0.3))
'''


def test_a_node_whose_teardown_hangs_holding_the_gil_still_ends():
    """Fast DDS's participant deletion can spin for ever with the GIL held
    (eProsima/Fast-DDS#6513): the process prints its threads' stacks and ends, status 1,
    TEARDOWN_LIMIT_S into the teardown, instead of a node that never exits."""
    started = time.monotonic()
    done = subprocess.run([os.sys.executable, '-c', STUCK_TEARDOWN], env=child_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert 'Timeout (0:00:01)!' in done.stderr and '<lambda>' in done.stderr, done.stderr
    assert time.monotonic() - started < 30


RAISING_TEARDOWN = '''
import sys, time
import rclpy
from rbd_ros.ros import node as ros_node
ros_node.TEARDOWN_LIMIT_S = 1.0

def make():
    node = rclpy.create_node('raising')
    def destroy_node():
        raise RuntimeError('teardown failed')
    node.destroy_node = destroy_node
    return [node]

try:
    ros_node.run(make, sys.argv, name='raising', duration=0.3)
except RuntimeError:
    pass
time.sleep(2.0)           # past TEARDOWN_LIMIT_S: the watchdog must have been cancelled
print('alive', flush=True)
'''


def test_a_teardown_that_raises_leaves_no_watchdog_behind():
    """run()'s watchdog is cancelled however the teardown ends: a process that goes on after
    a teardown that raised (the demo runs run() several times) is not ended later."""
    done = subprocess.run([os.sys.executable, '-c', RAISING_TEARDOWN], env=child_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == 'alive', done.stderr


def test_sim_node_without_commands_keeps_real_time_and_stops_on_ctrl_c(ros):
    """Default parameters, no controller: the arm hangs in stiction; sim_node keeps
    publishing and stops on Ctrl-C (it once took 80 ms per 10 ms period in the friction solver
    and ignored Ctrl-C under ros2 launch). The solver's work is checked without a clock in
    test_simulation.py (test_an_arm_held_by_stiction_is_solved_in_one_sweep)."""
    states = ros.collect(JointState, '/joint_states')
    proc = subprocess.Popen(script('sim_node') + ['--urdf', ARM_PATH], env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        wait_until(lambda: len(states) > 0, 60, 'joint_states from sim_node')
        first = len(states)
        wait_until(lambda: len(states) >= first + 50, 60, 'sim_node to keep publishing')
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err



def start_and_stop(command, ready, timeout=60.0):
    """Run ``command`` in bash (as a user types it, <(...) included) until ``ready(output)``,
    then Ctrl-C it: (status, output)."""
    import threading
    proc = subprocess.Popen(['bash', '-c', command], env=child_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None and not ready(''.join(lines)):
        time.sleep(0.1)
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:      # (it ended by itself: its output says why)
        pass
    proc.wait(timeout=30)
    reader.join(timeout=5)
    return proc.returncode, ''.join(lines)


def test_urdf_from_a_pipe_and_a_xacro_file(tmp_path):
    """`--urdf <(cat robot.urdf)` (a pipe: read once), `--urdf robot.urdf.xacro` (expanded with
    xacro, one INFO line) and bringup with a pipe (read once, given to both nodes): every node
    loads the model."""
    import shlex
    pytest.importorskip('xacro')
    from test_description import xacro_files
    xacro_path = xacro_files(tmp_path)
    dynamics = ' '.join(map(shlex.quote, script('dynamics_node')))
    bringup = ' '.join(map(shlex.quote, script('bringup')))
    for command, name, source, nodes in (
            (f'{dynamics} --urdf <(cat {ARM_PATH})', 'rbd_arm7', 'file /dev/fd/', 1),
            (f'{dynamics} --urdf {xacro_path}', 'xarm', f'file {xacro_path} (expanded by xacro)',
             1),
            (f'{bringup} --nodes dynamics,frames --urdf <(cat {ARM_PATH})', 'rbd_arm7',
             'parameter', 2)):
        loaded = f"]: model '{name}' from {source}"
        status, out = start_and_stop(command, lambda out: out.count(loaded) >= nodes)
        assert status == 0 and 'Traceback' not in out and '[ERROR]' not in out, out
        assert out.count(loaded) == nodes, out
        expanded = [line for line in out.splitlines() if 'expanded with xacro' in line]
        assert len(expanded) == (1 if 'xacro' in command else 0), out
        if expanded:
            assert '[INFO]' in expanded[0] and f'{xacro_path}: a xacro file' in expanded[0]


def test_a_colcon_symlink_install_starts_from_the_warm_cache(tmp_path):
    """`colcon build --symlink-install` in a workspace whose src/rbd_ros is this checkout: the
    nodes then import rbd_ros through build/rbd_ros/rbd_ros, a link to the same files, so
    numba's cache directory is the one warmed for this run. A node started from the install
    loads every kernel from it (numba's own cache log: loaded, never saved) and says nothing
    about stale kernels; before, a stamp of the kernel sources' absolute paths dropped the
    whole warm cache and the first launch compiled for 35-70 s."""
    import shutil
    colcon = shutil.which('colcon', path=str(pathlib.Path(script('dynamics_node')[0]).parent))
    if colcon is None:
        pytest.skip('colcon is not installed (the test extra has colcon-common-extensions)')
    cache = ROOT / 'rbd_ros' / 'dynamics' / '__pycache__'
    before = {p.name: p.stat().st_mtime_ns for p in cache.glob('*.nb[ic]')}
    (tmp_path / 'src').mkdir()
    (tmp_path / 'src' / 'rbd_ros').symlink_to(ROOT)
    env = child_env()
    env['PATH'] = f'{pathlib.Path(colcon).parent}{os.pathsep}{env["PATH"]}'
    built = subprocess.run([colcon, 'build', '--symlink-install', '--base-paths', 'src/rbd_ros'],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / 'build' / 'rbd_ros' / 'rbd_ros').is_symlink()
    command = (f'source {tmp_path}/install/setup.bash && NUMBA_DEBUG_CACHE=1 '
               f'{tmp_path}/install/rbd_ros/lib/rbd_ros/dynamics_node --urdf {ARM_PATH}')
    status, out = start_and_stop(command, lambda out: "model 'rbd_arm7' from" in out, 120)
    assert status == 0 and "model 'rbd_arm7' from" in out, out[-3000:]
    loaded = re.findall(r"\[cache\] data loaded from '([^']+)'", out)
    assert loaded and all(f'{tmp_path}/build/rbd_ros/rbd_ros/' in path for path in loaded), \
        out[-3000:]
    assert '[cache] data saved' not in out and 'kernels changed' not in out, out[-3000:]
    after = {p.name: p.stat().st_mtime_ns for p in cache.glob('*.nb[ic]')}
    assert after == before         # nothing dropped or written again
