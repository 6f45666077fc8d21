"""The DDS domain of a test run (benchmarks/isolation.py, test/conftest.py): ROS_DOMAIN_ID when
it is set, else a private id per process (a lock file per id); a ROS_DOMAIN_ID that is not a
domain id is one clear line. Each case runs in a fresh interpreter: the id is chosen once per
process."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
HERE = ROOT / 'test'


def domain_in_a_process(env_domain, code='from benchmarks.isolation import private_domain_id\n'
                        'print(private_domain_id())'):
    env = {k: v for k, v in os.environ.items() if k != 'ROS_DOMAIN_ID'}
    if env_domain is not None:
        env['ROS_DOMAIN_ID'] = env_domain
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT), str(HERE)])
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


def test_ros_domain_id_is_honoured_by_the_tests_and_their_node_processes():
    done = domain_in_a_process('57')
    assert done.returncode == 0 and done.stdout.strip() == '57', done.stderr
    # what the test fixtures give the node subprocesses they start
    done = domain_in_a_process('0', 'import conftest\nprint(conftest.child_env()["ROS_DOMAIN_ID"])')
    assert done.returncode == 0 and done.stdout.strip() == '0', done.stderr


def test_without_ros_domain_id_each_process_takes_a_private_one():
    ids = [domain_in_a_process(value) for value in (None, '', None)]
    for done in ids:
        assert done.returncode == 0, done.stderr
        assert 1 <= int(done.stdout) <= 100


@pytest.mark.parametrize('value', ['abc', '-1', '233', '1.5'])
def test_a_ros_domain_id_that_is_not_one_is_named(value):
    done = domain_in_a_process(value)
    assert done.returncode != 0
    assert f"RuntimeError: ROS_DOMAIN_ID='{value}': a ROS domain id is a whole number from 0 " \
           'to 232' in done.stderr
