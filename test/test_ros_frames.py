"""frames_node over real DDS: /tf and /tf_static compose to frame_poses for every link."""

import numpy as np
import pytest

pytest.importorskip('rclpy')

from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

import rbd_ros.dynamics as rbd  # noqa: E402
from conftest import ARM, QUAD2, TREE3, js, publish_until, wait_until  # noqa: E402
from rbd_ros.nodes.frames import FramesNode  # noqa: E402
from rbd_ros.dynamics.rotations import quaternion_to_matrix  # noqa: E402
from rbd_ros.ros.qos import LATCHED_QOS, TF_QOS  # noqa: E402

pytestmark = pytest.mark.timeout(120)

BEST_EFFORT = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)


def transform_to_matrix(t):
    """4x4 matrix of a geometry_msgs/Transform."""
    m = np.eye(4)
    r = t.rotation
    m[:3, :3] = quaternion_to_matrix(r.x, r.y, r.z, r.w)
    m[:3, 3] = (t.translation.x, t.translation.y, t.translation.z)
    return m


def world_poses(transforms, prefix=''):
    """Compose a TF tree into {frame: 4x4 pose relative to its root}."""
    edges = {t.child_frame_id: (t.header.frame_id, transform_to_matrix(t.transform))
             for t in transforms}
    poses = {}

    def pose(frame):
        if frame not in poses:
            if frame not in edges:
                poses[frame] = np.eye(4)
            else:
                parent, m = edges[frame]
                poses[frame] = pose(parent) @ m
        return poses[frame]

    for frame in list(edges):
        pose(frame)
    return {k[len(prefix):]: v for k, v in poses.items()}


@pytest.mark.parametrize('urdf, prefix', [(ARM, ''), (TREE3, 'robot1/')], ids=['arm7', 'tree3'])
def test_tf_of_every_link_equals_frame_poses(ros, urdf, prefix):
    model = rbd.Model.from_urdf(urdf)
    ros.start(FramesNode, {'robot_description': urdf, 'frame_prefix': prefix})
    tf = ros.collect(TFMessage, '/tf', TF_QOS)
    static = ros.collect(TFMessage, '/tf_static', LATCHED_QOS)
    desc = ros.collect(String, 'robot_description', LATCHED_QOS)
    pub = ros.publisher(JointState, 'joint_states', BEST_EFFORT, wait_for=1)
    wait_until(lambda: static and desc, what='/tf_static and latched robot_description')
    assert desc[0].data == urdf   # republished because it came as a parameter
    fixed = {j.child for j in model.joints if j.type == 'fixed' and j.mimic is None}
    assert {t.child_frame_id for t in static[0].transforms} == {prefix + c for c in fixed}
    rng = np.random.default_rng(11)
    for k in range(3):
        q = rng.uniform(-0.1, 0.2, model.nq)
        publish_until(pub, js(model.joint_names[::-1], q[::-1], sec=100 + k),
                      lambda: tf and tf[-1].transforms[0].header.stamp.sec == 100 + k, what='/tf')
        msg = tf[-1]
        assert all(t.header.stamp.sec == 100 + k for t in msg.transforms)
        moving = {j.child for j in model.joints if j.type != 'fixed' or j.mimic is not None}
        assert {t.child_frame_id for t in msg.transforms} == {prefix + c for c in moving}
        assert all(t.header.frame_id.startswith(prefix) for t in msg.transforms)
        got = world_poses(list(msg.transforms) + list(static[0].transforms), prefix)
        expected = rbd.frame_poses(model, q)
        assert set(got) == set(model.frame_names)
        for link in model.frame_names:
            assert np.allclose(got[link], expected[link], atol=1e-9), link


def test_floating_base_model_tf_relative_to_base(ros):
    fixed_model = rbd.Model.from_urdf(QUAD2)
    floating = rbd.Model.from_urdf(QUAD2, floating_base=True)
    ros.start(FramesNode, {'robot_description': QUAD2})
    tf = ros.collect(TFMessage, '/tf', TF_QOS)
    static = ros.collect(TFMessage, '/tf_static', LATCHED_QOS)
    pub = ros.publisher(JointState, 'joint_states', BEST_EFFORT, wait_for=1)
    qj = np.array([0.3, -0.5, 0.2, 0.8])
    publish_until(pub, js(fixed_model.joint_names, qj, sec=1), lambda: tf and static,
                  what='/tf and /tf_static')
    got = world_poses(list(tf[0].transforms) + list(static[0].transforms))
    # any base pose: TF (relative to the trunk) equals trunk^-1 * link of the floating model
    base = np.array([0.4, -1.0, 0.7, 0.2, 0.1, -0.3, 0.9])
    base[3:] /= np.linalg.norm(base[3:])
    poses = rbd.frame_poses(floating, np.concatenate([base, qj]))
    trunk_inv = np.linalg.inv(poses['trunk'])
    for link in floating.frame_names:
        assert np.allclose(got[link], trunk_inv @ poses[link], atol=1e-9), link


def test_description_topic_swap_republishes_static(ros):
    node = ros.start(FramesNode, {})
    static = ros.collect(TFMessage, '/tf_static', LATCHED_QOS)
    desc = ros.publisher(String, 'robot_description', LATCHED_QOS)
    desc.publish(String(data=TREE3))
    wait_until(lambda: static, what='/tf_static for tree3')
    desc.publish(String(data='not a urdf'))
    wait_until(lambda: node.stats.description_errors == 1, what='description error')
    assert node.runtime.robot.model.name == 'tree3'
    desc.publish(String(data=ARM))
    wait_until(lambda: len(static) == 2, what='/tf_static for the arm')
    assert {t.child_frame_id for t in static[1].transforms} == {'base_link', 'tool0'}


def test_publish_frequency_and_bad_input(ros):
    node = ros.start(FramesNode, {'robot_description': ARM, 'publish_frequency': 50.0,
                                  'joint_states_qos': 'reliable'})
    tf = ros.collect(TFMessage, '/tf', TF_QOS)
    pub = ros.publisher(JointState, 'joint_states', wait_for=1)
    names = rbd.Model.from_urdf(ARM).joint_names
    pub.publish(js(names, np.zeros(7), sec=5))
    wait_until(lambda: tf, what='/tf at publish_frequency')
    pub.publish(js(names, np.zeros(6), sec=6))
    pub.publish(js(names, [np.nan] * 7, sec=7))
    pub.publish(js(names, np.zeros(7), sec=4, nanosec=500_000_000))   # 0.5 s back: late
    wait_until(lambda: sum(node.stats.rejected.values()) == 3, what='rejections')
    assert set(node.stats.rejected) == {'length_mismatch', 'non_finite', 'time_backwards'}
