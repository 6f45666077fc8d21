"""sim_node over real DDS: the closed loop with dynamics_node holds the arm; commands, limits,
reset, clock, bad commands."""
import math

import numpy as np
import pytest

pytest.importorskip('rclpy')

from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

import rbd_ros.dynamics as rbd  # noqa: E402
from conftest import ARM, wait_until  # noqa: E402
from rbd_ros.bringup import CLOSE_LOOP_REMAP  # noqa: E402
from rbd_ros.nodes.dynamics import DynamicsNode  # noqa: E402
from rbd_ros.nodes.sim import SimNode  # noqa: E402

pytestmark = pytest.mark.timeout(120)

POSE = [0.3, 0.7, -0.4, 1.2, 0.5, -0.8, 0.2]   # non-trivial: every gravity torque non-zero
NAMES = [f'joint_{i}' for i in range(1, 8)]


def sim_seconds(msg):
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def max_deviation(states, q0):
    return max(float(np.max(np.abs(np.array(m.position[:7]) - q0))) for m in states)


def start_loop(ros, command_source, integrator='semi_implicit_euler'):
    sim = ros.start(SimNode, {'robot_description': ARM, 'initial_positions': POSE,
                              'publish_clock': True, 'integrator': integrator,
                              'wait_for_command': command_source != 'none',
                              'command_timeout': 1.0},
                    cli_args=['--ros-args', '-r', CLOSE_LOOP_REMAP])
    dyn = ros.start(DynamicsNode, {'robot_description': ARM, 'command_source': command_source,
                                   'joint_states_qos': 'reliable'})
    return sim, dyn


@pytest.mark.parametrize('integrator', ['semi_implicit_euler', 'rk4'])
def test_closed_loop_gravity_compensation_holds_the_arm(ros, integrator):
    states = ros.collect(JointState, 'joint_states')
    sim, dyn = start_loop(ros, 'gravity', integrator)
    wait_until(lambda: states and sim_seconds(states[-1]) >= 2.0, timeout=60,
               what='2 s of simulated time')
    moving = [m for m in list(states)]
    assert sim.steps >= 2000 and sum(dyn.stats.rejected.values()) == 0
    dev = max_deviation(moving, np.array(POSE))
    assert dev <= 1e-3, f'arm drifted {dev} rad under gravity compensation'
    # the applied effort is the gravity torque of the held pose
    g = rbd.gravity_torques(rbd.Model.from_urdf(ARM), np.array(POSE))
    assert np.allclose(moving[-1].effort, g, rtol=1e-3, atol=1e-3)


def test_without_compensation_the_arm_falls(ros):
    states = ros.collect(JointState, 'joint_states')
    start_loop(ros, 'none')
    wait_until(lambda: states and sim_seconds(states[-1]) >= 2.0, timeout=60,
               what='2 s of simulated time')
    dev = max_deviation(states, np.array(POSE))
    assert dev > 0.1, f'arm only moved {dev} rad without compensation'


def test_joint_commands_by_name_timeout_limits_and_reset(ros):
    model = rbd.Model.from_urdf(ARM)
    sim = ros.start(SimNode, {'robot_description': ARM, 'command_timeout': 0.3,
                              'wait_for_command': True})
    states = ros.collect(JointState, 'joint_states')
    clock = ros.collect(Clock, '/clock')
    cmd = ros.publisher(JointState, '/rbd_sim/joint_commands', wait_for=1)
    wait_until(lambda: states, what='joint_states')
    assert not clock   # publish_clock is false by default
    assert list(states[-1].name) == NAMES and list(states[-1].position) == [0.0] * 7
    # a big torque on the vertical joint_1 drives it into its URDF limit (+2 pi), where it stops
    tau = rbd.gravity_torques(model, np.zeros(7))
    tau[0] = 40.0
    order = [6, 0, 3, 1, 5, 2, 4]
    msg = JointState(name=[NAMES[i] for i in order], effort=[float(tau[i]) for i in order])
    upper = model.joint['joint_1'].upper

    def at_limit():
        cmd.publish(msg)
        return states and abs(states[-1].position[0] - upper) < 1e-12 and \
            states[-1].velocity[0] == 0.0
    wait_until(at_limit, timeout=30, what='joint_1 stopped at its upper limit', period=0.05)
    assert max(m.position[0] for m in states) <= upper + 1e-12
    assert states[-1].effort[0] == 40.0
    # no more commands: after command_timeout the applied effort is zero
    wait_until(lambda: not any(states[-1].effort), what='zero effort after the timeout')
    # reset
    client = ros.probe.create_client(Trigger, '/rbd_sim/reset')
    assert client.wait_for_service(timeout_sec=15)
    future = client.call_async(Trigger.Request())
    wait_until(future.done, what='reset reply')
    assert future.result().success
    wait_until(lambda: max(abs(x) for x in states[-1].position) < 1e-9, what='reset state')
    assert sim.stats.rejected == {}


def test_bad_commands_rejected_clock_published(ros):
    sim = ros.start(SimNode, {'robot_description': ARM, 'publish_clock': True,
                              'command_joints': ['joint_2', 'joint_4'],
                              'initial_positions': [0.5, 1.0]})
    clock = ros.collect(Clock, '/clock')
    states = ros.collect(JointState, 'joint_states')
    pub = ros.publisher(Float64MultiArray, '/rbd_sim/effort_commands', wait_for=1)
    jc = ros.publisher(JointState, '/rbd_sim/joint_commands', wait_for=1)
    pub.publish(Float64MultiArray(data=[1.0, 2.0, 3.0]))
    pub.publish(Float64MultiArray(data=[1.0, math.nan]))
    jc.publish(JointState(name=['joint_1'], effort=[]))
    jc.publish(JointState(name=['joint_1'], effort=[math.inf]))
    wait_until(lambda: sum(sim.stats.rejected.values()) == 4, what='rejections')
    assert dict(sim.stats.rejected) == {'length_mismatch': 2, 'non_finite': 2}
    wait_until(lambda: clock and states, what='/clock and joint_states')
    # initial_positions in command_joints order
    first = states[0]
    assert first.position[1] == pytest.approx(0.5, abs=0.05)
    assert first.position[3] == pytest.approx(1.0, abs=0.05)
    assert sim_seconds(states[-1]) > 0 and clock[-1].clock.sec >= 0


def test_bad_description_and_invalid_parameters(ros):
    sim = ros.start(SimNode, {'robot_description': ARM})
    result = sim.set_parameters([Parameter('robot_description', value='<robot/>')])[0]
    assert not result.successful and 'no <link>' in result.reason
    assert sim.runtime.robot.model.name == 'rbd_arm7' and sim.stats.description_errors == 1
    with pytest.raises(ValueError, match='integrator'):
        SimNode(context=ros.context, node_name='sim_bad', parameter_overrides=[
            Parameter('integrator', value='leapfrog')])
    # initial_positions of the wrong length: the node refuses to start, naming the parameter
    with pytest.raises(ValueError, match='parameter initial_positions has 2 values'):
        SimNode(context=ros.context, node_name='sim_bad2', parameter_overrides=[
            Parameter('robot_description', value=ARM),
            Parameter('initial_positions', value=[0.1, 0.2])])


def test_a_diverged_simulation_resets_and_keeps_publishing(ros):
    """A huge torque blows the state up: the sim resets to the initial state, counts it, and
    simulated time runs on (it used to raise on every later tick and publish nothing, and a
    wait_for_command hold came back after a reset)."""
    sim = ros.start(SimNode, {'robot_description': ARM, 'publish_clock': True,
                              'wait_for_command': True, 'command_timeout': 0.05})
    states = ros.collect(JointState, 'joint_states')
    cmd = ros.publisher(Float64MultiArray, '/rbd_sim/effort_commands', wait_for=1)
    huge = Float64MultiArray(data=[0.0] * 6 + [1e7])
    wait_until(lambda: (cmd.publish(huge), sim.divergence_resets >= 1)[1], period=0.05,
               what='a divergence reset')
    assert sim.stats.internal_errors == 0, sim.stats.last_error
    t_reset = sim.sim_time
    count = len(states)
    # no more commands: the held arm falls, simulated time runs on, joint_states keep coming
    wait_until(lambda: sim.sim_time > t_reset + 1.0, timeout=30, what='sim time after the reset')
    assert len(states) > count + 10
    for msg in states[count:]:
        assert all(math.isfinite(x) for x in list(msg.position) + list(msg.velocity))
    stamps = [sim_seconds(m) for m in states[count:]]
    assert stamps == sorted(stamps)
    assert sim.stats.internal_errors == 0
