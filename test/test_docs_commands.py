"""Every shell command in a code block of README.md, docs/ros.md and docs/analysis.md runs here as
written, or this file says why it cannot. Placeholders (`robot.urdf`, `~/bags`, `my.yaml`, a
scheduler's address) become files and services this test makes; `.venv/bin/X` and `ros2 run rbd_ros
X` run as the X beside the interpreter that runs the tests (whatever its venv is called: a Jazzy
venv, a system Python), or as `python -m` its module; `python` is that interpreter. A node is
started, must say it has a model (or what it waits for) without an error, and is stopped with
Ctrl-C (status 0). A command added to the docs that this file does not know fails the test
until it is classified."""
import os
import pathlib
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip('rclpy')
pytest.importorskip('rosbags')

from conftest import BIN, MODULES, child_env, script  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ('README.md', 'docs/ros.md', 'docs/analysis.md')
pytestmark = pytest.mark.timeout(600)

#: commands that cannot run here, and why (a regular expression on the command)
NOT_HERE = (
    (r'^bash scripts/test\.sh$', 'the test suite itself: CI runs it (.ci/run)'),
    (r'^bash scripts/demo\.sh$', 'runs setup.sh then `python -m rbd_ros.demo`: the demo line of '
                                 'docs/ros.md runs here, and test_ros_bringup checks its phases'),
    (r'^(\w+=\S+ )*bash scripts/(setup|test)\.sh', 'the set-up (a venv and ROS 2 wheels) and the '
                                                  'suite: CI runs them on both distributions '
                                                  '(.ci/run)'),
    (r'^\.venv/bin/python -m benchmarks', 'minutes long: test_benchmarks.py runs each benchmark '
                                          'with --smoke'),
    (r'^ros2 launch ', '`launch` is not installable from PyPI: bringup starts the same nodes '
                       'from the same YAML (docs/ros.md, Running)'),
)
#: commands another test runs as written and checks further (a regular expression on the
#: command, the test's file::name): run once, there
RUN_ELSEWHERE = (
    (r'^(\.venv/bin/)?python -m rbd_ros\.demo$',
     'test_ros_bringup.py::test_demo_runs_and_summarises'),
    (r'^(\.venv/bin/)?python -m rbd_ros\.demo --ankle$',
     'test_ros_bringup.py::test_ankle_demo_holds_the_foot_where_a_tree_ignoring_the_loops_lets_it_fall'),
)
#: placeholder -> what stands for it here (paths relative to the scratch copy of the repo)
PLACEHOLDERS = (
    ('path/to/robot.urdf', 'rbd_ros/robots/rbd_arm7.urdf'),
    ('robot.urdf', 'rbd_ros/robots/rbd_arm7.urdf'),
    ('my.yaml', 'config/rbd.yaml'),
    ('~/bags', 'logs'), ('~/fleet', 'logs'), ('/shared/fleet', 'logs'),
    ('run1/ run2.mcap', 'logs/run1/ logs/run2.mcap'),
    ('--workers 8', '--workers 2'),                # this machine has 2 cores
)
#: long-running executables: started, checked, stopped
NODES = ('dynamics_node', 'frames_node', 'sim_node', 'bringup')
#: a node's line once it has a model, or says what it waits for
READY = re.compile(r"\]: (model '|waiting for a robot description)")


def doc_commands():
    """(file:line, command) for each command line of the docs' bash and indented blocks."""
    out = []
    for name in DOCS:
        text = (ROOT / name).read_text()
        blocks = [(m.start(1), m.group(1)) for m in re.finditer(r'```bash\n(.*?)```', text, re.S)]
        blocks += [(m.start(1), re.sub(r'^    ', '', m.group(1), flags=re.M))
                   for m in re.finditer(r'\n\n((?:    [^\n]*\n)+)', text)
                   if re.match(r'    (\.venv/|ros2 |python |bash |rbd_analyze)', m.group(1))]
        for start, block in blocks:
            line = text[:start].count('\n') + 1
            for k, command in enumerate(re.sub(r'\\\n\s*', ' ', block).splitlines()):
                command = re.sub(r'\s+#.*$', '', command).strip()
                if command and not command.startswith('#'):
                    out.append((f'{name}:{line + k}', command))
    return out


#: the executables the docs name, as `python -m` where no console script is installed
EXECUTABLES = {**MODULES, 'warmup': 'rbd_ros.warmup', 'rbd_analyze': 'rbd_ros.analysis.cli'}


def executable(name):
    """The command line of an rbd_ros executable, or of `python`, for this interpreter."""
    if name == 'python':
        return shlex.quote(sys.executable)
    if (BIN / name).exists():
        return shlex.quote(str(BIN / name))
    return f'{shlex.quote(sys.executable)} -m {EXECUTABLES[name]}'


def runnable(command):
    """The command as run here: placeholders replaced, `.venv/bin/X`, `ros2 run rbd_ros X`,
    `python` and `rbd_analyze` -> this interpreter's."""
    for placeholder, here in PLACEHOLDERS:
        command = command.replace(placeholder, here)
    command = re.sub(r'^ros2 run rbd_ros (\w+)', r'.venv/bin/\1', command)
    command = re.sub(r'^(python|rbd_analyze) ', r'.venv/bin/\1 ', command)
    return re.sub(r'(?<![\w./-])\.venv/bin/(\w+)', lambda m: executable(m.group(1)), command)


@pytest.fixture
def scratch(tmp_path_factory):
    """A directory that looks like the repository (config, robots, scripts linked) with logs:
    one per part, so that the parts run on separate processes."""
    from benchmarks.synthetic_logs import excitation, measured_efforts, write_log

    import rbd_ros.dynamics as rbd
    d = tmp_path_factory.mktemp('docs')
    for name in ('config', 'scripts'):
        (d / name).symlink_to(ROOT / name)
    # rbd_ros/robots only: a linked package here would be imported from this path instead of the
    # installed one, and numba would compile its kernels again for the new path
    (d / 'rbd_ros').mkdir()
    (d / 'rbd_ros' / 'robots').symlink_to(ROOT / 'rbd_ros' / 'robots')
    model = rbd.Model.from_urdf(str(ROOT / 'rbd_ros/robots/rbd_arm7.urdf'))
    carried = model.with_payload('tool0', 1.0, [0.0, 0.0, 0.05])
    for k, storage in enumerate(('mcap', 'sqlite3')):
        t, q, v, a = excitation(model, 12.0, 200.0, seed=k, amplitude=0.4, base_hz=0.2)
        tau = measured_efforts(carried, q, v, a, 0.5, 0.8, noise=0.02, seed=k)
        write_log(d / 'logs' / f'run{k + 1}', t, model.joint_names, q, v, tau, storage=storage)
    # a bare .mcap file too (docs/analysis.md's run2.mcap)
    (d / 'logs' / 'run2.mcap').write_bytes(next((d / 'logs' / 'run1').glob('*.mcap'))
                                           .read_bytes())
    return d


def run_node(command, cwd, env, seconds=25.0):
    """Start a node command, wait for its model (or what it waits for), Ctrl-C it."""
    proc = subprocess.Popen(['bash', '-c', command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        if any(READY.search(line) for line in list(lines)):
            time.sleep(1.0)
            break
        time.sleep(0.1)
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:      # it ended by itself (127: not found): its output says why
        pass
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    reader.join(timeout=5)
    return proc.returncode, ''.join(lines)


def test_every_docs_command_is_classified():
    commands = doc_commands()
    assert len(commands) > 20, commands
    for where, command in commands:
        here = runnable(command)
        known = (any(re.search(p, command) for p, _ in NOT_HERE + RUN_ELSEWHERE)
                 or here.startswith((shlex.quote(str(BIN)), shlex.quote(sys.executable),
                                     'bash scripts/')))
        assert known, f'{where}: a docs command this test does not know how to run: {command}'


def test_the_commands_run_elsewhere_are_in_the_docs_and_run_there_as_written():
    """Each RUN_ELSEWHERE pattern matches a docs command, and the test it names runs that
    command's arguments (quoted in its source, in the command's order)."""
    import ast
    import inspect
    commands = [command for _, command in doc_commands()]
    for pattern, test in RUN_ELSEWHERE:
        command = next((c for c in commands if re.search(pattern, c)), None)
        assert command is not None, f'no docs command matches {pattern}'
        module, name = test.split('::')
        source = inspect.getsource(getattr(__import__(module[:-len('.py')]), name))
        quoted = [node.value for node in ast.walk(ast.parse(source.lstrip()))
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        arguments = shlex.split(command)[1:]        # (after python)
        found = [a for a in quoted if a in arguments]
        assert found[:len(arguments)] == arguments, (test, command, found)


def docs_part(part):
    """The commands of one part: README.md's, docs/analysis.md's, or one half of docs/ros.md's
    (the longest: its halves run on two test processes at once under scripts/test.sh)."""
    name, _, half = part.partition('#')
    commands = [(where, c) for where, c in doc_commands() if where.split(':')[0] == name]
    if half:
        middle = len(commands) // 2
        commands = commands[:middle] if half == '1' else commands[middle:]
    return commands


PARTS = ('README.md', 'docs/analysis.md', 'docs/ros.md#1', 'docs/ros.md#2')


def test_the_parts_hold_every_command():
    assert sorted(c for part in PARTS for c in docs_part(part)) == sorted(doc_commands())


@pytest.mark.parametrize('part', PARTS)
def test_every_docs_command_runs(scratch, part):
    """Runs a part's commands in the docs' order (later ones use earlier ones' files:
    identified.yaml); each part in its own scratch directory."""
    env = child_env()
    cluster = None
    sim = None
    failures, ran, skipped = [], 0, []
    try:
        for where, command in docs_part(part):
            reason = next((r for p, r in NOT_HERE if re.search(p, command)), None)
            elsewhere = next((t for p, t in RUN_ELSEWHERE if re.search(p, command)), None)
            if reason or elsewhere:
                skipped.append(f'{where}: {command}: {reason or "runs in " + elsewhere}')
                continue
            here = runnable(command)
            if 'tcp://host:8786' in here:
                if cluster is None:
                    from distributed import LocalCluster
                    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
                here = here.replace('tcp://host:8786', cluster.scheduler_address)
            started = time.monotonic()
            exe = re.match(r'(?:ros2 run rbd_ros |\.venv/bin/)?(\S+)', command).group(1)
            if re.search(r'-m rbd_ros (list|param|call|echo)\b', here) and sim is None:
                sim = subprocess.Popen(script('bringup') + ['--urdf', 'bundled'],
                                       cwd=scratch, env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
                for _ in range(30):             # until its nodes are discovered
                    listed = subprocess.run([sys.executable, '-m', 'rbd_ros', 'list'],
                                            cwd=scratch, env=env, capture_output=True, text=True)
                    if '/rbd_sim' in listed.stdout and '/rbd_dynamics' in listed.stdout:
                        break
                    time.sleep(1.0)
            if exe in NODES and '--duration' not in here:
                status, out = run_node(here, scratch, env)
                ok = status == 0 and not re.search(r'\[ERROR\]|Traceback', out) and \
                    READY.search(out)
            else:
                done = subprocess.run(['bash', '-c', here], cwd=scratch, env=env,
                                      capture_output=True, text=True, timeout=240)
                status, out = done.returncode, done.stdout + done.stderr
                ok = status == 0 and 'Traceback' not in out
            ran += 1
            print(f'{where}: {time.monotonic() - started:.1f} s, status {status}', flush=True)
            if not ok:
                failures.append(f'{where}: {command}\n  ran: {here}\n  status {status}\n'
                                + out[-1500:])
    finally:
        if sim is not None:
            sim.send_signal(signal.SIGINT)
            sim.wait(timeout=20)
        if cluster is not None:
            cluster.close()
    print(f'{ran} commands ran; not here:\n' + '\n'.join(skipped))
    assert not failures, '\n\n'.join(failures)
    assert ran >= 3
