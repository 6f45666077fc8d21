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


def test_joint_commands_by_name_saturation_limits_timeout_and_reset(ros):
    model = rbd.Model.from_urdf(ARM)
    sim = ros.start(SimNode, {'robot_description': ARM, 'command_timeout': 0.3,
                              'wait_for_command': True, 'publish_clock': True})
    states = ros.collect(JointState, 'joint_states')
    cmd = ros.publisher(JointState, '/rbd_sim/joint_commands', wait_for=1)
    wait_until(lambda: states, what='joint_states')
    assert list(states[-1].name) == NAMES and list(states[-1].position) == [0.0] * 7
    # 40 N m on the vertical joint_1 (limit 39 N m, 1.3963 rad/s, +2 pi): it saturates, runs at
    # its speed limit and stops at its position limit
    tau = rbd.gravity_torques(model, np.zeros(7))
    tau[0] = 40.0
    order = [6, 0, 3, 1, 5, 2, 4]
    msg = JointState(name=[NAMES[i] for i in order], effort=[float(tau[i]) for i in order])
    upper, vmax = model.joint['joint_1'].upper, model.joint['joint_1'].velocity

    def at_limit():
        cmd.publish(msg)
        # (it stops within theta dt v_max = 0.7 mrad of the limit: the stop acts through the
        # last step)
        return states and abs(states[-1].position[0] - upper) < 1e-3 and \
            abs(states[-1].velocity[0]) < 1e-6
    wait_until(at_limit, timeout=40, what='joint_1 stopped at its upper limit', period=0.05)
    assert max(m.position[0] for m in states) <= upper + 1e-9
    assert max(m.velocity[0] for m in states) <= vmax + 1e-6
    assert states[-1].effort[0] == 39.0          # the applied (saturated) effort
    assert sim.saturated > 0
    # no more commands: after command_timeout (simulated time) the applied effort is zero
    wait_until(lambda: not any(states[-1].effort), what='zero effort after the timeout')
    # reset: the next joint_states carry the initial state, stamps run on
    client = ros.probe.create_client(Trigger, '/rbd_sim/reset')
    assert client.wait_for_service(timeout_sec=15)
    before = sim_seconds(states[-1])
    future = client.call_async(Trigger.Request())
    wait_until(future.done, what='reset reply')
    assert future.result().success
    wait_until(lambda: max(abs(x) for x in states[-1].position) < 1e-3, what='reset state')
    assert sim_seconds(states[-1]) >= before
    assert sim.stats.rejected == {} and sim.stats.internal_errors == 0


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
    jc.publish(JointState(name=['joint_1'], effort=[1.0, 2.0]))
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
                              'wait_for_command': True, 'command_timeout': 0.05,
                              'effort_limits': False, 'velocity_limits': False})
    states = ros.collect(JointState, 'joint_states')
    cmd = ros.publisher(Float64MultiArray, '/rbd_sim/effort_commands', wait_for=1)
    huge = Float64MultiArray(data=[0.0] * 6 + [1e7])   # (no drive would give that)
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


def run_lockstep_loop(ros, name_suffix, steps=150):
    """sim (lockstep, noisy joint_states) + dynamics (gravity compensation) in a closed loop;
    the joint_states of the first ``steps`` periods: stamp, names and the exact bytes of the
    float64 arrays (not the serialized message: CDR's alignment padding is not initialized)."""
    states = ros.collect(JointState, 'joint_states')
    sim = ros.start(SimNode, {'robot_description': ARM, 'initial_positions': POSE,
                              'publish_clock': True, 'lockstep': True, 'publish_rate': 200.0,
                              'joint_states_noise': [1e-3, 1e-2], 'noise_seed': 7,
                              'command_timeout': 1.0},
                    cli_args=['--ros-args', '-r',
                              f'~/effort_commands:=/rbd_dynamics_{name_suffix}/effort_commands'],
                    node_name=f'rbd_sim_{name_suffix}')
    dyn = ros.start(DynamicsNode, {'robot_description': ARM, 'command_source': 'gravity',
                                   'joint_states_qos': 'reliable', 'input_timeout': 0.0},
                    node_name=f'rbd_dynamics_{name_suffix}')
    wait_until(lambda: sim.steps >= steps * sim.substeps, timeout=60, what=f'{steps} periods')
    ros.remove(sim)
    ros.remove(dyn)
    by_stamp = {}
    for m in states:
        stamp = (m.header.stamp.sec, m.header.stamp.nanosec)
        by_stamp.setdefault(stamp, (stamp, tuple(m.name)) + tuple(
            np.asarray(f, dtype=np.float64).tobytes() for f in (m.position, m.velocity, m.effort)))
    return [by_stamp[k] for k in sorted(by_stamp)][:steps]


def test_lockstep_closed_loop_is_reproducible_bit_for_bit(ros):
    """Each period advances only when the controller's command for it has arrived, so the run
    does not depend on the machine's load: two runs give bit-identical joint_states."""
    first = run_lockstep_loop(ros, 'a')
    second = run_lockstep_loop(ros, 'b')
    assert len(first) == len(second) == 150
    assert first == second


def test_joint_commands_in_the_topic_based_ros2_control_layout(ros):
    """One JointState with every joint and position, velocity and effort all filled (what
    topic_based_ros2_control publishes with three command interfaces): effort applied as it is,
    position and velocity through the gains; they bring the arm to the commanded pose."""
    model = rbd.Model.from_urdf(ARM)
    # (rotor inertia behind a gear, as a real arm has: 0.1 kg m^2 reflected, so that a 500 Hz
    # PD can hold the light wrist)
    sim = ros.start(SimNode, {'robot_description': ARM, 'publish_clock': True,
                              'real_time_factor': 0.0, 'publish_rate': 500.0, 'armature': [0.1],
                              'position_kp': [150.0], 'position_kd': [15.0],
                              'command_timeout': 1.0})
    states = ros.collect(JointState, 'joint_states')
    cmd = ros.publisher(JointState, '/rbd_sim/joint_commands', wait_for=1)
    goal = np.array([0.2, 0.4, -0.3, 0.8, 0.1, -0.5, 0.3])
    msg = JointState(name=NAMES, position=list(goal), velocity=[0.0] * 7,
                     effort=list(rbd.gravity_torques(model, goal)))

    def there():      # (within friction / kp = 1 / 150 rad: a PD does not beat stiction)
        cmd.publish(msg)
        return states and np.max(np.abs(np.array(states[-1].position) - goal)) < 1e-2
    wait_until(there, timeout=60, period=0.02, what='the commanded pose')
    assert sim.stats.rejected == {} and sim.stats.internal_errors == 0


def test_reset_under_a_running_controller(ros):
    """The loop keeps running through a reset: the next joint_states carry the initial state,
    stamps keep increasing, the controller rejects nothing."""
    states = ros.collect(JointState, 'joint_states')
    sim, dyn = start_loop(ros, 'gravity')
    wait_until(lambda: states and sim_seconds(states[-1]) > 0.5, timeout=30, what='0.5 s')
    client = ros.probe.create_client(Trigger, '/rbd_sim/reset')
    assert client.wait_for_service(timeout_sec=15)
    sim.runtime.sim.q[0] += 0.2              # somewhere else than the start
    future = client.call_async(Trigger.Request())
    wait_until(future.done, what='reset reply')
    count = len(states)
    wait_until(lambda: len(states) > count + 20, what='joint_states after the reset')
    after = states[count:]
    assert any(np.allclose(m.position[:7], POSE, atol=1e-6) for m in after[:3])
    # (wait_for_command: until the controller's first command the t = 0 state is repeated)
    stamps = [sim_seconds(m) for m in states]
    stamps = stamps[next(k for k, s in enumerate(stamps) if s > 0.0):]
    bad = [(k, a, b) for k, (a, b) in enumerate(zip(stamps, stamps[1:])) if not b > a]
    assert not bad, (bad[:5], len(stamps), count)
    assert dyn.stats.rejected == {} and dyn.stats.internal_errors == 0
    assert sim.stats.internal_errors == 0


def test_external_wrench_pause_and_step(ros):
    """A paused sim advances step_count periods per ~/step; a wrench on a link moves it as
    forward dynamics with that f_ext says."""
    from geometry_msgs.msg import WrenchStamped
    from std_srvs.srv import SetBool
    model = rbd.Model.from_urdf(ARM)
    q0 = np.array(POSE)
    sim = ros.start(SimNode, {'robot_description': ARM, 'initial_positions': POSE,
                              'publish_clock': True, 'publish_rate': 1000.0,
                              'damping': False, 'friction': False,
                              'external_wrench_duration': 0.0})
    pause = ros.probe.create_client(SetBool, '/rbd_sim/pause')
    step = ros.probe.create_client(Trigger, '/rbd_sim/step')
    assert pause.wait_for_service(timeout_sec=15) and step.wait_for_service(timeout_sec=15)
    future = pause.call_async(SetBool.Request(data=True))
    wait_until(future.done, what='pause')
    sim.runtime.sim.q, sim.runtime.sim.v = q0.copy(), np.zeros(7)   # a known state
    wrench = WrenchStamped()
    wrench.header.frame_id = 'tool0' if 'tool0' in model.frame_names else model.frame_names[-1]
    wrench.wrench.force.x, wrench.wrench.torque.z = 5.0, 0.3
    pub = ros.publisher(WrenchStamped, '/rbd_sim/external_wrench', wait_for=1)
    pub.publish(wrench)
    wait_until(lambda: sim.wrench is not None, what='the wrench')
    t0 = sim.sim_time
    future = step.call_async(Trigger.Request())
    wait_until(future.done, what='one step')
    assert future.result().success and sim.sim_time == pytest.approx(t0 + 0.001)
    f_ext = {wrench.header.frame_id: [5.0, 0.0, 0.0, 0.0, 0.0, 0.3]}
    expected = rbd.forward_dynamics(model, q0, np.zeros(7), np.zeros(7), f_ext) * 0.001
    without = rbd.forward_dynamics(model, q0, np.zeros(7), np.zeros(7)) * 0.001
    v1 = sim.runtime.sim.v
    assert np.allclose(v1, expected, rtol=2e-2, atol=1e-7)
    assert not np.allclose(v1, without, rtol=2e-2, atol=1e-7)


def test_diagnostics_keep_their_period_as_fast_as_possible_with_a_heavy_step(ros):
    """sim_node as the executable runs it (its executor), real_time_factor 0, a legged robot
    lying on the ground (A1 from example-robot-data, else Solo-12 dropped on its feet) at 50
    kHz, 500 steps per tick: the tick timer is always due, and /diagnostics still comes every
    diagnostics_period (the executor starved its timer: gaps of 9 s, then nothing after 13 s)."""
    import os
    import signal
    import subprocess
    import time

    from diagnostic_msgs.msg import DiagnosticArray

    from conftest import ROOT, child_env, script
    from corpus import robots_directory
    robots = robots_directory()
    a1 = robots and os.path.join(robots, 'a1_description', 'urdf', 'a1.urdf')
    if a1 and os.path.exists(a1):       # on its side, 25 cm up
        args = ['--urdf', a1, '-p', 'initial_base_pose:=[0.0, 0.0, 0.25, 0.70710678, 0.0, '
                '0.0, 0.70710678]']
    else:
        args = ['--urdf', str(ROOT / 'rbd_ros' / 'robots' / 'solo12.urdf'), '--params-file',
                str(ROOT / 'config' / 'solo12.yaml')]
    arrivals = []
    ros.probe.create_subscription(
        DiagnosticArray, '/diagnostics', lambda msg: arrivals.append((time.monotonic(), msg)),
        10)
    period = 0.5
    proc = subprocess.Popen(script('sim_node') + args[:2] + [
        '--ros-args', '-p', 'floating_base:=true', '-p', 'real_time_factor:=0.0', '-p',
        'rate:=50000.0', '-p',
        f'diagnostics_period:={period}', *(['-p', args[3]] if args[2] == '-p' else args[2:])],
        env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        wait_until(lambda: len(arrivals) >= 12, timeout=90, what='12 /diagnostics')
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    times = [t for t, _ in arrivals]
    gaps = [b - a for a, b in zip(times[1:], times[2:])]   # (the first: start-up)
    assert max(gaps) < 4 * period, gaps           # (slack for a loaded 2-core machine)
    values = [{kv.key: kv.value for kv in s.values} for _, m in arrivals for s in m.status]
    steps = [int(v.get('steps', 0)) for v in values]
    assert steps[-1] > steps[1] > 0, values[-1]
    assert proc.returncode == 0, err
