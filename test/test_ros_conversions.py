"""rbd_ros.ros_conversions without DDS: model snapshot, joint-state merging and validation,
quaternion conversion, parameter validation."""
import math

import numpy as np
import pytest

pytest.importorskip('rclpy')

from builtin_interfaces.msg import Time  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

import rbd_ros.dynamics as rbd  # noqa: E402
from conftest import QUAD2, TREE3, js  # noqa: E402
from rbd_ros import ros_conversions as rc  # noqa: E402



def test_load_model_indices_match_core():
    lm = rc.load_model(TREE3, False, (0, 0, -9.81))
    model = lm.model
    assert lm.joint_names == tuple(model.joint_names)   # all single-DoF here
    for name, qi in zip(lm.joint_names, lm.q_index):
        assert model.joint[name].q_index == qi
    assert lm.mimic_names == ('finger_joint',)
    q = np.array([0.3, -0.2, 1.0, 0.05])
    assert lm.mimic_positions(q)[0] == pytest.approx(model.mimic_positions(q)['finger_joint'])
    assert lm.lower[lm.name_to_slot['j1']] == -2.5
    assert math.isinf(lm.upper[lm.name_to_slot['j2']])   # continuous


def test_load_model_floating_base():
    lm = rc.load_model(QUAD2, True, (0, 0, -9.81))
    assert lm.nq == 11 and lm.nv == 10
    assert lm.multi_dof_names == ()     # the added base is not a URDF joint
    assert lm.q_neutral[6] == 1.0
    q = lm.full_q(np.arange(4.0), np.array([1, 2, 3, 0, 0, 0, 1.0]))
    assert list(q[:3]) == [1, 2, 3] and list(q[lm.q_index]) == [0, 1, 2, 3]


def test_load_model_errors():
    with pytest.raises(ValueError):
        rc.load_model('', False, (0, 0, -9.81))
    with pytest.raises(rbd.ModelError):
        rc.load_model('<robot name="x"><link name="a"/><joint', False, (0, 0, -9.81))


def test_merger_shuffled_partial_unknown():
    lm = rc.load_model(TREE3, False, (0, 0, -9.81))
    m = rc.JointStateMerger(lm)
    unknown, has_effort = m.update(js(['j3', 'nope', 'j1'], [0.1, 9, 0.5], effort=[1, 2, 3]))
    assert unknown == ['nope'] and has_effort and not m.complete
    m.update(js(['j2', 'j_side', 'finger_joint'], [0.7, -0.3, 5.0], sec=1))
    assert m.complete and not m.effort_complete
    q = dict(zip(lm.joint_names, m.position))
    assert q == {'j1': 0.5, 'j_side': -0.3, 'j2': 0.7, 'j3': 0.1}


@pytest.mark.parametrize('msg, reason', [
    (js(['j1', 'j2'], [0.1]), 'length_mismatch'),
    (js(['j1', 'j2'], [0.1, 0.2], velocity=[1.0]), 'length_mismatch'),
    (js(['j1', 'j2'], [0.1, 0.2], effort=[1, 2, 3]), 'length_mismatch'),
    (js(['j1', 'j2'], [0.1, math.nan]), 'non_finite'),
    (js(['j1'], [0.1], velocity=[math.inf]), 'non_finite'),
    (js(['j1', 'j1'], [0.1, 0.2]), 'duplicate_names'),
    (js(['j1'], [0.1], sec=4), 'time_backwards'),
])
def test_merger_rejects_whole_message(msg, reason):
    lm = rc.load_model(TREE3, False, (0, 0, -9.81))
    m = rc.JointStateMerger(lm)
    m.update(js(['j1', 'j2'], [1.0, 2.0], sec=5))
    with pytest.raises(rc.Rejected) as err:
        m.update(msg)
    assert err.value.reason == reason
    assert list(m.position[:1]) == [1.0]   # nothing was taken from the rejected message


def test_merger_carries_state_across_model_swap():
    lm = rc.load_model(TREE3, False, (0, 0, -9.81))
    m = rc.JointStateMerger(lm)
    m.update(js(['j1', 'j2', 'j3', 'j_side'], [1, 2, 0.1, 4]))
    m2 = rc.JointStateMerger(rc.load_model(TREE3, False, (0, 0, -1.0)), m)
    assert m2.complete and list(m2.position) == list(m.position)


def test_quaternion_round_trip():
    rng = np.random.default_rng(1)
    for _ in range(200):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        r = rc.matrix_from_quaternion(*q)
        back = np.array(rc.quaternion_from_matrix(r))
        assert np.allclose(rc.matrix_from_quaternion(*back), r, atol=1e-12)
        assert back[3] >= 0


def test_odometry_to_base_rejects_bad_values():
    from nav_msgs.msg import Odometry
    msg = Odometry()
    msg.pose.pose.orientation.w = 2.0
    q, v = rc.odometry_to_base(msg)
    assert q[6] == 1.0 and not v.any()
    msg.pose.pose.orientation.w = 0.0
    with pytest.raises(rc.Rejected):
        rc.odometry_to_base(msg)
    msg.pose.pose.orientation.w = 1.0
    msg.twist.twist.linear.x = math.nan
    with pytest.raises(rc.Rejected):
        rc.odometry_to_base(msg)


def test_parameter_validators():
    with pytest.raises(ValueError):
        rc.one_of('a', 'b')('c')
    with pytest.raises(ValueError):
        rc.positive(0.0)
    with pytest.raises(ValueError):
        rc.finite_vector(3)([0.0, 1.0])
    with pytest.raises(ValueError):
        rc.finite_vector()([math.nan])
    with pytest.raises(ValueError):
        rc.joint_states_qos('fast')


def test_all_finite_exact_on_overflow_nan_and_inf():
    big = np.array([1e308, 1e308])   # finite, but its sum overflows: checked element-wise
    assert rc.all_finite(big, [1.0], np.zeros((2, 2)))
    assert rc.all_finite()
    for bad in ([1.0, math.nan], np.array([math.inf, -math.inf]), np.array([[1.0, math.nan]])):
        assert not rc.all_finite(big, bad)


def test_merger_name_cache_follows_the_names():
    lm = rc.load_model(TREE3, False, (0, 0, -9.81))
    m = rc.JointStateMerger(lm)
    names = list(lm.joint_names)
    m.update(js(names, [1, 2, 3, 4]))
    m.update(js(names[::-1], [5, 6, 7, 8], sec=1))   # same joints, other order: other slots
    assert list(m.position) == [8, 7, 6, 5]
    assert m.update(js(['nope', names[0]], [0, 9], sec=2))[0] == ['nope']
    assert m.position[0] == 9
    with pytest.raises(rc.Rejected):   # a name list that was fine before stays checked
        m.update(js(names[::-1], [1, 2, 3], sec=3))


def _random_joint_state(rng):
    n = rng.integers(0, 7)
    letters = list('abcxyz_é')
    msg = JointState(name=[''.join(rng.choice(letters, rng.integers(0, 10))) for _ in range(n)])
    msg.header.frame_id = ''.join(rng.choice(letters, rng.integers(0, 6)))
    msg.header.stamp = Time(sec=int(rng.integers(-2**31, 2**31)),
                            nanosec=int(rng.integers(0, 10**9)))
    for field in ('position', 'velocity', 'effort'):
        count = int(rng.choice([0, n, rng.integers(0, 5)]))
        setattr(msg, field, rng.normal(size=count).tolist())
    return msg


def test_joint_state_decoder_reads_what_rclpy_writes():
    from rclpy.serialization import serialize_message
    rng = np.random.default_rng(3)
    decoder = rc.JointStateDecoder()
    for _ in range(500):
        msg = _random_joint_state(rng)
        for _ in range(2):   # the second time from the cached layout
            sec, nanosec, names, pos, vel, eff = decoder.decode(bytes(serialize_message(msg)))
            assert (sec, nanosec) == (msg.header.stamp.sec, msg.header.stamp.nanosec)
            assert names == tuple(msg.name)
            for got, want in ((pos, msg.position), (vel, msg.velocity), (eff, msg.effort)):
                assert list(got) == list(want)
            msg.position = [x + 1.0 for x in msg.position]
            msg.header.stamp.nanosec = (msg.header.stamp.nanosec + 1) % 10**9


def test_joint_state_decoder_caches_the_layout_and_rejects_truncated_bytes(monkeypatch):
    from rclpy.serialization import serialize_message
    decoder = rc.JointStateDecoder()
    msg = js(['a', 'bb'], [1, 2], velocity=[3, 4], effort=[5, 6], sec=7)
    data = bytes(serialize_message(msg))
    decoder.decode(data)
    parse = rc.JointStateDecoder._parse
    monkeypatch.setattr(rc.JointStateDecoder, '_parse',
                        staticmethod(lambda d: pytest.fail('layout not reused')))
    msg.position = [9.0, 8.0]
    assert list(decoder.decode(bytes(serialize_message(msg)))[3]) == [9, 8]
    monkeypatch.setattr(rc.JointStateDecoder, '_parse', staticmethod(parse))
    end = len(bytes(serialize_message(js(['a', 'bb'], [1, 2], velocity=[3, 4]))))
    for cut in range(4, end - 8, 3):
        with pytest.raises(rc.Rejected) as err:
            rc.JointStateDecoder().decode(data[:cut])
        assert err.value.reason == 'malformed'


def test_serialized_message_is_the_message():
    # (compared deserialized: alignment gaps and what rclpy's buffer holds after the message
    # are not part of it and need not be equal byte for byte)
    from rclpy.serialization import deserialize_message
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    names = ['j1', 'joint_two', 'j3']
    rng = np.random.default_rng(5)
    proto = JointState(name=names)
    out = rc.SerializedMessage(proto, proto.header, [(proto, 'position'), (proto, 'effort')], 3)
    pos, eff = rng.normal(size=3), rng.normal(size=3)
    want = js(names, pos, effort=eff, sec=12, nanosec=345)
    assert deserialize_message(out.fill(12, 345, pos, eff), JointState) == want

    point = JointTrajectoryPoint()
    traj = JointTrajectory(joint_names=names, points=[point])
    fields = ('positions', 'velocities', 'accelerations', 'effort')
    out = rc.SerializedMessage(traj, traj.header, [(point, f) for f in fields], 3)
    arrays = [rng.normal(size=3) for _ in fields]
    want = JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(
        **{f: a.tolist() for f, a in zip(fields, arrays)})])
    want.header.stamp = Time(sec=-3, nanosec=999_999_999)
    assert deserialize_message(out.fill(-3, 999_999_999, *arrays), JointTrajectory) == want
    with pytest.raises(ValueError):
        out.fill(0, 0, *arrays[:3], np.zeros(2))

    empty = JointState()   # a model without single-DoF joints
    out = rc.SerializedMessage(empty, empty.header, [(empty, 'position')], 0)
    assert deserialize_message(out.fill(1, 2, []), JointState) == js([], sec=1, nanosec=2)
