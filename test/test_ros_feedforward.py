"""Feedforward torque control as a controller uses it, over real DDS: sim_node (lockstep) and
dynamics_node in a closed loop follow a 5 s trajectory given as one JointTrajectory."""
import os

import numpy as np
import pytest

pytest.importorskip('rclpy')

from builtin_interfaces.msg import Duration, Time  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import SetBool  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

import rbd_ros.dynamics as rbd  # noqa: E402
from conftest import ARM, wait_until  # noqa: E402
from corpus import robots_directory  # noqa: E402
from rbd_ros.nodes.dynamics import DynamicsNode  # noqa: E402
from rbd_ros.nodes.sim import SimNode  # noqa: E402

pytestmark = pytest.mark.timeout(240)


def ur5():
    root = robots_directory()
    if root is None:
        pytest.skip('example-robot-data is not installed')
    return open(os.path.join(root, 'ur_description/urdf/ur5_robot.urdf')).read()


def with_payload(xml, mass=2.0):
    """The same robot with a point mass on its last link (a payload the controller ignores)."""
    model = rbd.Model.from_urdf(xml)
    last = model.frame_names[-1]
    payload = (f'<link name="payload"><inertial><origin xyz="0 0 0.05"/><mass value="{mass}"/>'
               '<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/>'
               f'</inertial></link><joint name="payload_joint" type="fixed"><parent link="{last}"/>'
               '<child link="payload"/></joint></robot>')
    return xml[:xml.rindex('</robot>')] + payload


def reference_points(q0, amplitude, duration=5.0, period=0.1):
    """q0 + A (1 - cos(pi t)) / 2: from rest at q0, every period s."""
    t = np.arange(0.0, duration + 1e-9, period)[:, None]
    w, a = np.pi, amplitude * np.ones_like(q0)
    return (t[:, 0], q0 + a * (1 - np.cos(w * t)) / 2, a * w * np.sin(w * t) / 2,
            a * w * w * np.cos(w * t) / 2)


def track(ros, xml, law, sim_xml=None, amplitude=0.3, name='a'):
    """Run the loop; (reference start, [(t, max |e|)] from ~/tracking_error)."""
    model = rbd.Model.from_urdf(xml)
    names = list(model.joint_names)
    q0 = np.clip(np.full(len(names), 0.4), model.lower_limits, model.upper_limits)
    sim = ros.start(SimNode, {'robot_description': sim_xml or xml, 'initial_positions': list(q0),
                              'publish_clock': True, 'lockstep': True, 'publish_rate': 500.0,
                              'command_timeout': 1.0},
                    cli_args=['--ros-args', '-r',
                              f'~/effort_commands:=/rbd_dynamics_{name}/effort_commands'],
                    node_name=f'rbd_sim_{name}')
    dyn = ros.start(DynamicsNode, {'robot_description': xml, 'command_source': law,
                                   'kp': [400.0] if law == 'computed_torque' else [300.0],
                                   'kd': [40.0] if law == 'computed_torque' else [20.0],
                                   'joint_states_qos': 'reliable', 'input_timeout': 0.0},
                    node_name=f'rbd_dynamics_{name}')
    errors = ros.collect(JointState, f'/rbd_dynamics_{name}/tracking_error')
    wait_until(lambda: sim.sim_time > 0.05, timeout=60, what='the loop running')
    pause = ros.probe.create_client(SetBool, f'/rbd_sim_{name}/pause')
    assert pause.wait_for_service(timeout_sec=15)
    done = pause.call_async(SetBool.Request(data=True))
    wait_until(done.done, what='pause')
    start = sim.sim_time + 0.02
    t, pos, vel, acc = reference_points(q0, amplitude)
    msg = JointTrajectory(joint_names=names)
    msg.header.stamp = Time(sec=int(start), nanosec=int(round((start % 1) * 1e9)))
    for k in range(len(t)):
        sec = int(t[k])
        msg.points.append(JointTrajectoryPoint(
            positions=list(pos[k]), velocities=list(vel[k]), accelerations=list(acc[k]),
            time_from_start=Duration(sec=sec, nanosec=int(round((t[k] - sec) * 1e9)))))
    pub = ros.probe.create_publisher(JointTrajectory, f'/rbd_dynamics_{name}/reference', 10)
    wait_until(lambda: pub.get_subscription_count() >= 1, what='the reference subscriber')
    pub.publish(msg)
    wait_until(lambda: dyn.references == 1, what=f'the reference taken ({dict(dyn.stats.rejected)}, {dyn.stats.last_error})')
    done = pause.call_async(SetBool.Request(data=False))
    wait_until(done.done, what='resume')
    wait_until(lambda: sim.sim_time > start + 5.3, timeout=120, what='5 s of tracking')
    out = [(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec,
            float(np.max(np.abs(m.position)))) for m in errors]
    assert all(np.isfinite(e) for _, e in out)
    assert dyn.stats.internal_errors == 0 and sim.stats.internal_errors == 0
    ros.remove(sim)
    ros.remove(dyn)
    return start, out


def worst_after(start, out, after=0.5, until=5.0):
    return max(e for t, e in out if start + after <= t <= start + until)


@pytest.mark.parametrize('robot', ['arm7', 'ur5'])
def test_computed_torque_tracks_a_whole_trajectory(ros, robot):
    xml = ARM if robot == 'arm7' else ur5()
    start, out = track(ros, xml, 'computed_torque', name=robot)
    worst = worst_after(start, out)
    print(f'{robot}: computed_torque, max |q_ref - q| after 0.5 s: {worst:.2e} rad')
    assert worst < 1e-3


def test_an_unknown_payload_feedback_laws_beat_feedforward_alone(ros):
    heavy = with_payload(ARM)
    results = {}
    for k, law in enumerate(('inverse_dynamics', 'pd_feedforward', 'computed_torque')):
        start, out = track(ros, ARM, law, sim_xml=heavy, name=f'p{k}')
        results[law] = worst_after(start, out)
    print('2 kg payload unknown to the controller, max |e| after 0.5 s:', results)
    assert results['pd_feedforward'] < 0.5 * results['inverse_dynamics']
    assert results['computed_torque'] < 0.5 * results['inverse_dynamics']
