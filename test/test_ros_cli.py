"""`python -m rbd_ros list | param | call | echo` (ros2cli's everyday commands for a pip set-up)
against a running sim_node, as a user types them, from another process."""
import subprocess
import sys

import pytest
import yaml

pytest.importorskip('rclpy')

from conftest import ARM, child_env, wait_until  # noqa: E402
from rbd_ros.nodes.sim import SimNode  # noqa: E402

pytestmark = pytest.mark.timeout(180)


def cli(*args):
    return subprocess.run([sys.executable, '-m', 'rbd_ros', *args], capture_output=True,
                          text=True, env=child_env(), timeout=60)


def test_param_call_echo_and_list_against_a_running_sim(ros):
    sim = ros.start(SimNode, {'robot_description': ARM, 'publish_rate': 50.0})
    # (discovery of a node started a moment ago can take longer than list's default 2 s on a
    # loaded machine: Fast DDS's missed first announcement, README's Speed section)
    listed = cli('list', '--timeout', '6')
    assert listed.returncode == 0, listed.stderr
    assert '  /rbd_sim\n' in listed.stdout
    assert '/rbd_sim/pause [std_srvs/srv/SetBool]' in listed.stdout
    assert '/joint_states [sensor_msgs/msg/JointState]' in listed.stdout
    names = cli('param', 'list', '/rbd_sim')
    assert names.returncode == 0 and 'position_kp' in names.stdout.split()
    got = cli('param', 'get', 'rbd_sim', 'integrator')
    assert got.returncode == 0 and got.stdout.strip() == 'rk4'
    # a whole number for a double array: converted, and the node takes it
    done = cli('param', 'set', '/rbd_sim', 'position_kp', '[250]')
    assert done.returncode == 0 and done.stdout.strip() == 'position_kp = [250.0]', done.stderr
    assert list(sim.params['position_kp']) == [250.0]
    refused = cli('param', 'set', '/rbd_sim', 'position_kp', '[-1]')
    assert refused.returncode == 1
    assert 'refused position_kp = [-1.0]' in refused.stderr and 'must be >= 0' in refused.stderr
    dump = cli('param', 'dump', '/rbd_sim')
    values = yaml.safe_load(dump.stdout)['/rbd_sim']['ros__parameters']
    assert values['position_kp'] == [250.0] and values['integrator'] == 'rk4'
    paused = cli('call', '/rbd_sim/pause', 'true')
    assert paused.returncode == 0 and 'success: true' in paused.stdout, paused.stderr
    wait_until(lambda: sim.paused, what='paused')
    t = sim.sim_time
    stepped = cli('call', '/rbd_sim/step')
    assert stepped.returncode == 0 and sim.sim_time > t
    assert cli('call', '/rbd_sim/pause', '{data: false}').returncode == 0
    wait_until(lambda: not sim.paused, what='running')
    assert cli('call', '/rbd_sim/reset').returncode == 0
    echoed = cli('echo', '/joint_states', '--count', '1')
    assert echoed.returncode == 0, echoed.stderr
    msg = yaml.safe_load(echoed.stdout.split('---')[0])
    assert msg['name'] == [f'joint_{i}' for i in range(1, 8)] and len(msg['position']) == 7
    # what does not exist: one line, status 1
    for args, words in ((('call', '/rbd_sim/nothing', '--timeout', '1'), 'no service'),
                        (('param', 'get', '/rbd_sim', 'nothing'), "no parameter 'nothing'"),
                        (('param', 'get', '/nobody', 'x', '--timeout', '1'), 'not available')):
        result = cli(*args)
        assert result.returncode == 1 and words in result.stderr, (args, result.stderr)
