"""The parallel warm-up's compile groups cover every signature kernel, and a group compiles in
a worker process without touching another group's kernels."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), '..')

COVERAGE = '''
from rbd_ros import warmup
from rbd_ros.dynamics import _jit
from rbd_ros.dynamics.warmup import GROUPS, SHARED
assert warmup.GROUP_COUNT == len(GROUPS), (warmup.GROUP_COUNT, len(GROUPS))
assert warmup.SHARED_COUNT == len(SHARED), (warmup.SHARED_COUNT, len(SHARED))
grouped = [name for names, _ in GROUPS for name in names]
assert len(grouped) == len(set(grouped)), grouped
shared = [name for names in SHARED for name in names]
assert len(shared) == len(set(shared)) and set(shared) <= set(grouped), shared
assert _jit.DEFERRED, 'no kernel was deferred'
for dispatcher, _ in _jit.DEFERRED:
    name = dispatcher.py_func.__name__
    assert name in grouped, f'{dispatcher.py_func.__module__}.{name} is in no warm-up group'
    assert not dispatcher.signatures, 'compiled at import despite RBD_ROS_DEFER_COMPILE'
print('ok', len(_jit.DEFERRED))
'''


def run(args, **env):
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, **env))


@pytest.mark.skipif(os.environ.get('RBD_ROS_NO_JIT', '') not in ('', '0'), reason='needs numba')
def test_groups_cover_every_signature_kernel():
    pytest.importorskip('numba')
    result = run(['-c', COVERAGE], RBD_ROS_DEFER_COMPILE='1')
    assert result.returncode == 0 and result.stdout.startswith('ok'), result.stdout + result.stderr


@pytest.mark.skipif(os.environ.get('RBD_ROS_NO_JIT', '') not in ('', '0'), reason='needs numba')
@pytest.mark.parametrize('job', ['shared0', 'shared1', 'group0', 'group1'])
def test_a_job_compiles_in_a_worker(job):
    pytest.importorskip('numba')
    result = run(['-m', 'rbd_ros.warmup', '--job', job], RBD_ROS_DEFER_COMPILE='1')
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_worker_needs_the_deferred_mode():
    result = run(['-m', 'rbd_ros.warmup', '--job', 'group0'], RBD_ROS_DEFER_COMPILE='0')
    assert result.returncode != 0 and 'RBD_ROS_DEFER_COMPILE=1' in result.stderr


_HOLD = '''
import sys, time
from rbd_ros.dynamics._jit import compile_lock
with compile_lock(exclusive={'ex': True, 'sh': False}[sys.argv[2]]):
    print('locked', flush=True)
    time.sleep(float(sys.argv[1]))
'''


@pytest.mark.skipif(os.environ.get('RBD_ROS_NO_JIT', '') not in ('', '0'), reason='needs numba')
def test_processes_take_turns_at_the_compile_lock_and_a_killed_one_lets_go():
    """A process that loads the cache waits while another compiles (the exclusive lock); one
    killed in the middle of its compile releases the lock with its death."""
    import signal
    import time
    holder = subprocess.Popen([sys.executable, '-c', _HOLD, '30', 'ex'], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == 'locked'
    waiter = subprocess.Popen([sys.executable, '-c', _HOLD, '0', 'sh'], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)
    assert waiter.poll() is None            # waiting for the lock
    holder.send_signal(signal.SIGKILL)      # killed mid-"compile"
    holder.wait(timeout=10)
    assert waiter.stdout.readline().strip() == 'locked'
    assert waiter.wait(timeout=30) == 0


@pytest.mark.skipif(os.environ.get('RBD_ROS_NO_JIT', '') not in ('', '0'), reason='needs numba')
def test_a_process_compiling_into_a_cache_of_its_own_holds_up_nobody(tmp_path):
    """The lock is per cache: a process compiling into its own NUMBA_CACHE_DIR (a test of the
    kernels without IR inlining did, for 75 s, while every test that loaded the kernels waited)
    does not hold up those of the sources' cache, and two of that other cache take turns."""
    import time
    # (deferred: importing the core compiles nothing, whatever the caches hold)
    mine = dict(os.environ, RBD_ROS_DEFER_COMPILE='1')
    other = dict(mine, NUMBA_CACHE_DIR=str(tmp_path / 'cache'))
    holder = subprocess.Popen([sys.executable, '-c', _HOLD, '30', 'ex'], cwd=ROOT, env=other,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'locked'
        here = subprocess.run([sys.executable, '-c', _HOLD, '0', 'ex'], cwd=ROOT, env=mine,
                              capture_output=True, text=True, timeout=60)
        assert here.returncode == 0 and here.stdout.strip() == 'locked', here.stderr
        # (compile_lock says so when another process holds the lock for LOCK_QUIET_S)
        assert 'waiting for another process' not in here.stderr, here.stderr
        same = subprocess.Popen([sys.executable, '-c', _HOLD, '0', 'sh'], cwd=ROOT, env=other,
                                stdout=subprocess.PIPE, text=True)
        time.sleep(1.5)
        assert same.poll() is None                  # the other cache's: waiting
        same.kill()
        same.wait()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.skipif(os.environ.get('RBD_ROS_NO_JIT', '') not in ('', '0'), reason='needs numba')
def test_processes_load_a_complete_cache_at_once():
    """Once a process has filled the cache (it says so in the cache), processes started
    together load it side by side: two shared holders hold the lock at the same time, and the
    dynamics core's import takes the shared one."""
    import time
    from rbd_ros.dynamics import _jit
    import rbd_ros.dynamics  # noqa: F401 - fills and marks the cache if it was not
    assert _jit.cache_is_complete()
    first = subprocess.Popen([sys.executable, '-c', _HOLD, '30', 'sh'], cwd=ROOT,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == 'locked'
        started = time.monotonic()
        second = subprocess.run([sys.executable, '-c', 'import time; t = time.monotonic(); '
                                 'import rbd_ros.dynamics; print(time.monotonic() - t)'],
                                cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert second.returncode == 0, second.stderr
        assert 'waiting for another process' not in second.stderr
        assert time.monotonic() - started < 25      # not after the holder's 30 s
    finally:
        first.kill()
        first.wait()


FIRST_CALL = '''
import numpy as np
import rbd_ros.dynamics as rbd
from rbd_ros.dynamics import _jit, entry_points
assert _jit._load_on_first_call(), 'the cache is complete: kernels load on first call'
loaded = lambda: sorted(d.py_func.__name__ for d in _jit.FIRST_CALL if d.signatures)
assert len(_jit.FIRST_CALL) > 20 and loaded() == [], loaded()
model = rbd.Model.from_urdf('rbd_ros/robots/rbd_arm7.urdf')
data, tau = model.create_data(), np.zeros(7)
q = np.linspace(-1, 1, 7)
g = rbd.gravity_torques(model, q)
assert loaded() == ['gravity_entry'], loaded()
# the first call of a kernel with other types: loaded, and refused (TypeError), not compiled
try:
    entry_points.rnea_entry(data.handle, q.astype(np.float32), q, q, tau)
    raise SystemExit('float32 accepted')
except TypeError as exc:
    assert 'No matching definition' in str(exc), exc
assert len(entry_points.rnea_entry.signatures) == 1
assert entry_points.rnea_entry(data.handle, q, 0 * q, 0 * q, tau) == 0
assert np.array_equal(tau, g), (tau, g)
assert np.array_equal(rbd.gravity_torques(model, list(q)), g)    # (a list: converted)
# nor does numba's typing of a compiled caller add a specialisation (it calls compile)
from numba import types
try:
    entry_points.frame_placements_entry.compile((_jit.HANDLE, types.float32[::1], _jit.MATRIX))
    raise SystemExit('another signature compiled')
except TypeError as exc:
    assert 'compiled for' in str(exc), exc
assert _jit.load_signature_kernels() == len(_jit.FIRST_CALL) - 2
assert len(loaded()) == len(_jit.FIRST_CALL) and _jit.load_signature_kernels() == 0
print('ok')
'''


@pytest.mark.skipif(os.environ.get('RBD_ROS_NO_JIT', '') not in ('', '0'), reason='needs numba')
def test_signature_kernels_load_on_first_call_and_keep_their_one_signature():
    """With a complete cache, importing the core loads no signature kernel (they took a third
    of every import); the first call loads one, and it still takes exactly its signature (a
    TypeError for any other types, which the public functions rely on); the nodes load the
    rest before they spin (load_signature_kernels)."""
    pytest.importorskip('numba')
    import rbd_ros.dynamics  # noqa: F401 - fills and marks the cache if it was not
    result = run(['-c', FIRST_CALL])
    assert result.returncode == 0 and result.stdout.strip().endswith('ok'), \
        result.stdout + result.stderr


_START_UP = '''
import sys
import numpy as np
import rbd_ros.dynamics as rbd
from rbd_ros.dynamics import _jit
model = rbd.Model.from_urdf(sys.argv[1])
assert np.all(np.isfinite(rbd.gravity_torques(model, np.zeros(model.nq))))
_jit.load_signature_kernels()
assert 'scipy.linalg' not in sys.modules, 'the start-up imported scipy.linalg'
try:
    import scipy.linalg.cython_blas  # noqa: F401
    have_blas = True
except ImportError:
    have_blas = False
import numba
import numba.np.arraymath
assert numba.np.arraymath._HAVE_BLAS == have_blas, (numba.np.arraymath._HAVE_BLAS, have_blas)
if have_blas:      # a user's kernel that calls BLAS still compiles and runs
    dot = numba.njit(lambda a, b: np.dot(a, b))
    assert dot(np.ones(3), np.arange(3.0)) == 3.0
print('ok')
'''


@pytest.mark.skipif(os.environ.get('RBD_ROS_NO_JIT', '') not in ('', '0'), reason='needs numba')
def test_a_start_up_leaves_scipy_linalg_unimported_and_numba_knows_blas():
    """numba's BLAS check at its first kernel load imported scipy.linalg (0.2 s of every node's
    start-up, OpenBLAS's threads); the answer now comes from the files, and is the same."""
    pytest.importorskip('numba')
    arm = os.path.join(ROOT, 'rbd_ros', 'robots', 'rbd_arm7.urdf')
    result = run(['-c', _START_UP, arm])
    assert result.returncode == 0 and result.stdout.strip() == 'ok', result.stdout + result.stderr


@pytest.mark.skipif(os.environ.get('RBD_ROS_NO_JIT', '') not in ('', '0'), reason='needs numba')
def test_a_process_that_must_compile_every_kernel_says_so_first(tmp_path):
    """A first use without `warmup` (here: a cache of its own, empty) compiles every kernel at
    the core's import, minutes on one core: one line says so before, not a silent hang. (The
    process is stopped after that line.) The warm-up's own processes stay quiet."""
    env = {k: v for k, v in os.environ.items()
           if k not in ('RBD_ROS_DEFER_COMPILE', 'RBD_ROS_WARMUP_PROCESS')}
    env['NUMBA_CACHE_DIR'] = str(tmp_path / 'cache')
    lines = {}
    for mode, extra in (('user', {}), ('warmup', {'RBD_ROS_WARMUP_PROCESS': '1'})):
        proc = subprocess.Popen([sys.executable, '-c', 'import rbd_ros.dynamics; print("done")'],
                                cwd=ROOT, env=dict(env, **extra), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            if mode == 'user':
                lines[mode] = proc.stderr.readline()
            else:       # (quiet: the first thing on stderr is whatever follows, or nothing)
                import time
                time.sleep(3.0)
        finally:
            proc.kill()
            _, err = proc.communicate()
        lines.setdefault(mode, err)
    assert lines['user'].startswith("rbd_ros: numba's cache does not hold the kernels yet: "
                                    'compiling them now, once'), lines['user']
    assert 'rbd_ros.warmup' in lines['user']
    assert 'compiling them now' not in lines['warmup'], lines['warmup']


def test_the_compile_message_says_why(monkeypatch, capsys):
    from rbd_ros.dynamics import _jit
    monkeypatch.delenv('RBD_ROS_WARMUP_PROCESS', raising=False)
    monkeypatch.setattr(_jit, 'DEFER_COMPILE', False)
    monkeypatch.setattr(_jit, 'STALE_DROPPED', True)
    _jit.say_compiling()
    assert capsys.readouterr().err.startswith('rbd_ros: the kernels changed since they were '
                                              'compiled: compiling them now')
    monkeypatch.setattr(_jit, 'DEFER_COMPILE', True)
    _jit.say_compiling()
    assert capsys.readouterr().err == ''
