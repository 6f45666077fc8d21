"""The markers of pytest.ini as conftest.py applies them: ``-m "not ros"`` collects without rclpy
(the same tests as with it: none of them needs it), and every SLOW, ONE_DISTRO and ALONE entry
names a test."""
import os
import pathlib
import subprocess
import sys

import conftest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def collect(*args, env=None):
    done = subprocess.run([sys.executable, '-m', 'pytest', '--collect-only', '-q',
                           '-p', 'no:cacheprovider', *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)
    ids = [line for line in done.stdout.splitlines() if '::' in line]
    return done, ids


def test_not_ros_collects_the_same_tests_without_rclpy(tmp_path):
    """rclpy made unimportable (a package that raises ModuleNotFoundError, as an absent one
    does): the ROS files skip at collection, nothing errors, and ``-m "not ros"`` selects
    exactly the tests it selects with rclpy installed."""
    blocker = tmp_path / 'rclpy'
    blocker.mkdir()
    (blocker / '__init__.py').write_text(
        "raise ModuleNotFoundError(\"No module named 'rclpy'\", name='rclpy')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get('PYTHONPATH')])]))
    without, ids_without = collect('-m', 'not ros', 'test', env=env)
    assert without.returncode == 0, without.stdout + without.stderr
    with_rclpy, ids_with = collect('-m', 'not ros', 'test')
    assert with_rclpy.returncode == 0, with_rclpy.stdout + with_rclpy.stderr
    assert ids_without == ids_with
    assert not [i for i in ids_with if '/test_ros_' in i]


def names_a_test(entry, ids):
    """Whether a list entry (a file, a test, a test without its parameters) is among ``ids``."""
    return any(i.split('/')[-1].split('[')[0] == entry or i.split('/')[-1] == entry
               or i.split('/')[-1].split('::')[0] == entry for i in ids)


def test_every_slow_entry_names_a_test():
    done, ids = collect('-m', 'slow', 'test')
    assert done.returncode == 0, done.stdout + done.stderr
    for entry in conftest.SLOW:
        assert names_a_test(entry, ids), entry


def test_every_one_distro_entry_names_a_ros_test():
    """CI's Jazzy run leaves out `one_distro`: each entry is a `ros` test that exists."""
    done, ids = collect('-m', 'one_distro and ros', 'test')
    assert done.returncode == 0, done.stdout + done.stderr
    for entry in conftest.ONE_DISTRO:
        assert names_a_test(entry, ids), entry


def test_every_alone_entry_names_a_ros_test():
    """scripts/test.sh runs the `alone` tests one at a time: each entry is a `ros` test that
    exists (a misspelt entry would leave a clock-reading test on two processes)."""
    done, ids = collect('-m', 'alone and ros', 'test')
    assert done.returncode == 0, done.stdout + done.stderr
    for entry in conftest.ALONE:
        assert names_a_test(entry, ids), entry
