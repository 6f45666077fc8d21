"""The markers of pytest.ini as conftest.py applies them: ``-m "not ros"`` collects without rclpy
(the same tests as with it: none of them needs it), and every SLOW, ONE_DISTRO and ALONE entry
names a test."""
import os
import pathlib
import subprocess
import sys

import pytest

import conftest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def collect(*args, env=None):
    done = subprocess.run([sys.executable, '-m', 'pytest', '--collect-only', '-q',
                           '-p', 'no:cacheprovider', *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)
    ids = [line for line in done.stdout.splitlines() if '::' in line]
    return done, ids


#: a plugin for the collecting process: each test's id and its markers' names, once collected
#: (after conftest.py has applied ros, slow, one_distro and alone), in collection order
MARKER_REPORT = """
def pytest_collection_finish(session):
    for item in session.items:
        print('MARKERS', item.nodeid, ','.join(sorted({m.name for m in item.iter_markers()})),
              sep='\\t')
"""


@pytest.fixture(scope='module')
def markers(tmp_path_factory):
    """{test id: its markers' names} of the whole suite, from one collection (five took ~45 s
    of CPU)."""
    plugin = tmp_path_factory.mktemp('plugin')
    (plugin / 'marker_report.py').write_text(MARKER_REPORT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(plugin), *filter(None, [os.environ.get('PYTHONPATH')])]))
    done, _ = collect('-p', 'marker_report', 'test', env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    found = {}
    for line in done.stdout.splitlines():
        if line.startswith('MARKERS\t'):
            test_id, names = line[len('MARKERS\t'):].rsplit('\t', 1)
            found[test_id] = set(filter(None, names.split(',')))
    assert len(found) > 1000, done.stdout[-2000:]
    return found


def marked(markers, *names):
    """The ids of the tests that carry every one of ``names``, in collection order."""
    return [test_id for test_id, have in markers.items() if set(names) <= have]


def test_not_ros_collects_the_same_tests_without_rclpy(tmp_path, markers):
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
    ids_with = [test_id for test_id, have in markers.items() if 'ros' not in have]
    assert ids_without == ids_with
    assert not [i for i in ids_with if '/test_ros_' in i]


def names_a_test(entry, ids):
    """Whether a list entry (a file, a test, a test without its parameters) is among ``ids``."""
    return any(i.split('/')[-1].split('[')[0] == entry or i.split('/')[-1] == entry
               or i.split('/')[-1].split('::')[0] == entry for i in ids)


def test_every_slow_entry_names_a_test(markers):
    ids = marked(markers, 'slow')
    for entry in conftest.SLOW:
        assert names_a_test(entry, ids), entry


def test_every_one_distro_entry_names_a_ros_test(markers):
    """CI's Jazzy run leaves out `one_distro`: each entry is a `ros` test that exists."""
    ids = marked(markers, 'one_distro', 'ros')
    for entry in conftest.ONE_DISTRO:
        assert names_a_test(entry, ids), entry


def test_every_alone_entry_names_a_ros_test(markers):
    """scripts/test.sh runs the `alone` tests one at a time: each entry is a `ros` test that
    exists (a misspelt entry would leave a clock-reading test on two processes)."""
    ids = marked(markers, 'alone', 'ros')
    for entry in conftest.ALONE:
        assert names_a_test(entry, ids), entry
