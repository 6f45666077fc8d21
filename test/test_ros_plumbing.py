"""The ROS plumbing (rbd_ros.ros) without DDS: the loaded robot, joint-state merging and
validation, the byte-level fast path, conversions, parameter validation."""
import math
import struct

import numpy as np
import pytest

pytest.importorskip('rclpy')

from builtin_interfaces.msg import Time  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

import rbd_ros.dynamics as rbd  # noqa: E402
from conftest import QUAD2, TREE3, js  # noqa: E402
from rbd_ros.dynamics import rotations  # noqa: E402
from rbd_ros.ros import joint_states, messages, params, qos  # noqa: E402
from rbd_ros.ros.joint_states import JointStateMerger, Rejected  # noqa: E402
from rbd_ros.ros.robot import load_robot  # noqa: E402
from rbd_ros.ros.joint_state_bytes import JointStateDecoder  # noqa: E402
from rbd_ros.ros import wire  # noqa: E402
from rbd_ros.ros.wire import SerializedMessage  # noqa: E402



def test_load_robot_indices_match_core():
    lm = load_robot(TREE3)
    model = lm.model
    assert lm.joint_names == tuple(model.joint_names)   # all single-DoF here
    for name, qi in zip(lm.joint_names, lm.q_index):
        assert model.joint[name].q_index == qi
    assert lm.mimic_names == ('finger_joint',)
    q = np.array([0.3, -0.2, 1.0, 0.05])
    assert lm.mimic_positions(q)[0] == pytest.approx(model.mimic_positions(q)['finger_joint'])
    assert lm.lower[lm.slot['j1']] == -2.5
    assert math.isinf(lm.upper[lm.slot['j2']])   # continuous
    assert list(lm.continuous) == [model.joint[n].type == 'continuous' for n in lm.joint_names]


def test_limits_have_one_source_the_model():
    """A revolute <limit> without lower/upper means no position limit, in the core and in
    the nodes alike (it was 0/0 in the core and +-inf in the nodes)."""
    xml = ('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/><inertia '
           'ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
           '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
           '<limit effort="3" velocity="0"/></joint></robot>')
    lm = load_robot(xml)
    assert (lm.model.lower_limits[0], lm.model.upper_limits[0]) == (-math.inf, math.inf)
    assert (lm.lower[0], lm.upper[0]) == (-math.inf, math.inf)
    assert lm.effort_limit[0] == 3 and lm.model.velocity_limits[lm.v_index[0]] == math.inf


def test_load_robot_floating_base():
    lm = load_robot(QUAD2, floating_base=True)
    assert lm.nq == 11 and lm.nv == 10
    assert lm.multi_dof_names == ()     # the added base is not a URDF joint
    assert lm.q_neutral[6] == 1.0
    q = lm.full_q(np.arange(4.0), np.array([1, 2, 3, 0, 0, 0, 1.0]))
    assert list(q[:3]) == [1, 2, 3] and list(q[lm.q_index]) == [0, 1, 2, 3]


def test_load_robot_errors():
    with pytest.raises(ValueError):
        load_robot('')
    with pytest.raises(rbd.ModelError):
        load_robot('<robot name="x"><link name="a"/><joint')
    with pytest.raises(ValueError, match='command_joints names .*nope'):
        load_robot(TREE3).joint_slots(['j1', 'nope'])


def test_merger_shuffled_partial_unknown():
    lm = load_robot(TREE3)
    m = JointStateMerger(lm)
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
    lm = load_robot(TREE3)
    m = JointStateMerger(lm)
    m.update(js(['j1', 'j2'], [1.0, 2.0], sec=5))
    with pytest.raises(Rejected) as err:
        m.update(msg)
    assert err.value.reason == reason
    assert list(m.position[:1]) == [1.0]   # nothing was taken from the rejected message


def test_merger_carries_state_across_model_swap():
    lm = load_robot(TREE3)
    m = JointStateMerger(lm)
    m.update(js(['j1', 'j2', 'j3', 'j_side'], [1, 2, 0.1, 4]))
    m2 = JointStateMerger(load_robot(TREE3, gravity=(0, 0, -1.0)), m)
    assert m2.complete and list(m2.position) == list(m.position)


def test_quaternion_round_trip():
    rng = np.random.default_rng(1)
    for _ in range(200):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        r = rotations.quaternion_to_matrix(*q)
        back = np.array(rotations.matrix_to_quaternion(r))
        assert np.allclose(rotations.quaternion_to_matrix(*back), r, atol=1e-12)
        assert back[3] >= 0


def test_odometry_to_base_rejects_bad_values():
    from nav_msgs.msg import Odometry
    msg = Odometry()
    msg.pose.pose.orientation.w = 2.0
    q, v = messages.odometry_to_base(msg)
    assert q[6] == 1.0 and not v.any()
    msg.pose.pose.orientation.w = 0.0
    with pytest.raises(Rejected):
        messages.odometry_to_base(msg)
    msg.pose.pose.orientation.w = 1.0
    msg.twist.twist.linear.x = math.nan
    with pytest.raises(Rejected):
        messages.odometry_to_base(msg)


def test_parameter_validators():
    with pytest.raises(ValueError):
        params.one_of('a', 'b')('c')
    with pytest.raises(ValueError):
        params.positive(0.0)
    with pytest.raises(ValueError):
        params.finite_vector(3)([0.0, 1.0])
    with pytest.raises(ValueError):
        params.finite_vector()([math.nan])
    with pytest.raises(ValueError):
        qos.joint_states_qos('fast')


def test_all_finite_exact_on_overflow_nan_and_inf():
    big = np.array([1e308, 1e308])   # finite, but its sum overflows: checked element-wise
    assert joint_states.all_finite(big, [1.0], np.zeros((2, 2)))
    assert joint_states.all_finite()
    for bad in ([1.0, math.nan], np.array([math.inf, -math.inf]), np.array([[1.0, math.nan]])):
        assert not joint_states.all_finite(big, bad)


def test_merger_name_cache_follows_the_names():
    lm = load_robot(TREE3)
    m = JointStateMerger(lm)
    names = list(lm.joint_names)
    m.update(js(names, [1, 2, 3, 4]))
    m.update(js(names[::-1], [5, 6, 7, 8], sec=1))   # same joints, other order: other slots
    assert list(m.position) == [8, 7, 6, 5]
    assert m.update(js(['nope', names[0]], [0, 9], sec=2))[0] == ['nope']
    assert m.position[0] == 9
    with pytest.raises(Rejected):   # a name list that was fine before stays checked
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
    decoder = JointStateDecoder()
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
    decoder = JointStateDecoder()
    msg = js(['a', 'bb'], [1, 2], velocity=[3, 4], effort=[5, 6], sec=7)
    data = bytes(serialize_message(msg))
    decoder.decode(data)
    parse = JointStateDecoder._parse
    monkeypatch.setattr(JointStateDecoder, '_parse',
                        staticmethod(lambda d: pytest.fail('layout not reused')))
    msg.position = [9.0, 8.0]
    assert list(decoder.decode(bytes(serialize_message(msg)))[3]) == [9, 8]
    monkeypatch.setattr(JointStateDecoder, '_parse', staticmethod(parse))
    end = len(bytes(serialize_message(js(['a', 'bb'], [1, 2], velocity=[3, 4]))))
    for cut in range(4, end - 8, 3):
        with pytest.raises(Rejected) as err:
            JointStateDecoder().decode(data[:cut])
        assert err.value.reason == 'malformed'


def test_serialized_message_is_the_message():
    # (compared deserialized: alignment gaps and what rclpy's buffer holds after the message
    # are not part of it and need not be equal byte for byte)
    from rclpy.serialization import deserialize_message
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    names = ['j1', 'joint_two', 'j3']
    rng = np.random.default_rng(5)
    proto = JointState(name=names)
    out = SerializedMessage(proto, proto.header, [(proto, 'position'), (proto, 'effort')], 3)
    pos, eff = rng.normal(size=3), rng.normal(size=3)
    want = js(names, pos, effort=eff, sec=12, nanosec=345)
    assert deserialize_message(out.fill(12, 345, pos, eff), JointState) == want

    point = JointTrajectoryPoint()
    traj = JointTrajectory(joint_names=names, points=[point])
    fields = ('positions', 'velocities', 'accelerations', 'effort')
    out = SerializedMessage(traj, traj.header, [(point, f) for f in fields], 3)
    arrays = [rng.normal(size=3) for _ in fields]
    want = JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(
        **{f: a.tolist() for f, a in zip(fields, arrays)})])
    want.header.stamp = Time(sec=-3, nanosec=999_999_999)
    assert deserialize_message(out.fill(-3, 999_999_999, *arrays), JointTrajectory) == want
    with pytest.raises(ValueError):
        out.fill(0, 0, *arrays[:3], np.zeros(2))

    empty = JointState()   # a model without single-DoF joints
    out = SerializedMessage(empty, empty.header, [(empty, 'position')], 0)
    assert deserialize_message(out.fill(1, 2, []), JointState) == js([], sec=1, nanosec=2)


def test_every_output_template_fills_the_message_it_names():
    """wire.py's templates (every per-joint_states output of dynamics_node): the bytes of fill
    deserialize to the message built as Python, for each; the buffer is reused, so a second
    fill gives the second message and leaves the first one's bytes as they were."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    names = ['j1', 'joint_two', 'j3']
    rng = np.random.default_rng(11)
    for fields in (('position', 'effort'), ('position', 'velocity', 'effort'),
                   ('position', 'velocity'), ('effort',)):
        out = wire.joint_state_out(names, *fields)
        arrays = [rng.normal(size=3) for _ in fields]
        first = out.fill(7, 8, *arrays)
        want = js(names, sec=7, nanosec=8, **dict(zip(fields, arrays)))
        assert deserialize_message(first, JointState) == want
        second = [rng.normal(size=3) for _ in fields]
        assert deserialize_message(out.fill(9, 10, *second), JointState) == \
            js(names, sec=9, nanosec=10, **dict(zip(fields, second)))
        assert deserialize_message(first, JointState) == want
    out = wire.trajectory_point_out(names, 'positions', 'accelerations')
    pos, acc = rng.normal(size=3), rng.normal(size=3)
    want = JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(
        positions=pos.tolist(), accelerations=acc.tolist())])
    want.header.stamp = Time(sec=3, nanosec=4)
    assert deserialize_message(out.fill(3, 4, pos, acc), JointTrajectory) == want
    out = wire.float64_array_out(4)
    assert out.msg_type is Float64MultiArray
    data = [1.5, -2.0, 1e300, 0.0]
    assert deserialize_message(out.fill(5, 6, data), Float64MultiArray) == \
        Float64MultiArray(data=data)                      # (unstamped: the stamp is ignored)
    out = wire.wrench_out('tool0')
    w = rng.normal(size=6)
    got = deserialize_message(out.fill(1, 2, w), WrenchStamped)
    assert got.header.frame_id == 'tool0' and (got.header.stamp.sec, got.header.stamp.nanosec) \
        == (1, 2)
    f, t = got.wrench.force, got.wrench.torque
    assert [f.x, f.y, f.z, t.x, t.y, t.z] == w.tolist()
    with pytest.raises(ValueError):
        out.fill(1, 2, w[:5])                             # a length that is not the field's
    with pytest.raises(ValueError):
        out.fill(1, 2, w, w)                              # more arrays than fields
    scattered = WrenchStamped()                           # scalars not one after the other
    with pytest.raises(RuntimeError):
        SerializedMessage(scattered, scattered.header,
                          [[(scattered.wrench.force, 'x'), (scattered.wrench.torque, 'z')]])


def test_compiled_fill_equals_numpy_fill(monkeypatch):
    """SerializedMessage's compiled fill (one call per message: stamp, values, finite check)
    gives the bytes and the finite flag of the numpy path, for every template of
    dynamics_node and sim_node, on finite values, NaN and inf in any field, sums that overflow
    (finite values), extreme stamps; arrays it was not compiled for (lists, int, strided,
    read-only) take numpy with the same result, and bad lengths and stamps are refused as
    before, nothing compiled on the way."""
    from rbd_ros.dynamics._jit import JIT_ENABLED
    if not JIT_ENABLED:
        pytest.skip('numba is not installed: there is only the numpy fill')
    names = ['j1', 'joint_two', 'j3']
    templates = [wire.joint_state_out(names, 'position', 'effort'),
                 wire.joint_state_out(names, 'position', 'velocity', 'effort'),
                 wire.joint_state_out(names, 'effort'),
                 wire.trajectory_point_out(names, 'positions', 'velocities', 'accelerations',
                                           'effort'),
                 wire.float64_array_out(3), wire.wrench_out('tool0'),
                 wire.odometry_out('odom', 'base'), wire.transform_out('world', 'base'),
                 wire.clock_out()]
    rng = np.random.default_rng(3)
    calls = []
    fill = wire.fill_fields
    monkeypatch.setattr(wire, 'fill_fields', lambda *args: calls.append(1) or fill(*args))

    def read_only(a):
        a = a.copy()
        a.setflags(write=False)
        return a
    for out in templates:
        assert out._compiled
        numpy_twin = SerializedMessage.__new__(SerializedMessage)
        numpy_twin.__dict__.update(out.__dict__, _compiled=False)
        for trial in range(60):
            arrays = [rng.normal(size=n) * 10.0 ** rng.integers(-3, 4) for n in out.lengths]
            if trial % 4 == 1 and arrays:                    # NaN or inf somewhere
                a = arrays[rng.integers(len(arrays))]
                if len(a):
                    a[rng.integers(len(a))] = rng.choice([np.nan, np.inf, -np.inf])
            elif trial % 4 == 2 and arrays:                  # finite, but the sum overflows
                arrays[0][:] = 1.7e308
            sec = int(rng.choice([0, 7, -2**31, 2**31 - 1, -5]))
            nanosec = int(rng.choice([0, 999_999_999, 2**32 - 1]))
            before = len(calls)
            compiled = out._fill(sec, nanosec, arrays)
            assert len(calls) == before + 1                  # (it was the compiled call)
            assert compiled == numpy_twin._fill(sec, nanosec, arrays)
            finite = all(np.isfinite(a).all() for a in arrays)
            assert compiled[1] == finite
            assert (out.fill_finite(sec, nanosec, *arrays) is None) == (not finite)
        if out.lengths:                       # not compiled for these: numpy, the same bytes
            for convert in (lambda a: a.tolist(), lambda a: np.round(a).astype(int),
                            lambda a: np.repeat(a, 2)[::2], read_only):
                arrays = [rng.normal(size=n) for n in out.lengths]
                assert out._fill(1, 2, [convert(a) for a in arrays]) == \
                    numpy_twin._fill(1, 2, [convert(a) for a in arrays])
            with pytest.raises(ValueError):
                out.fill(1, 2, *[np.zeros(n + 1) for n in out.lengths])
        if out._stamp is not None:            # (refused as before, not converted)
            for sec, nanosec in ((2**31, 0), (1.5, 0), (2**64, 0), (0, -1)):
                with pytest.raises(struct.error):
                    out.fill(sec, nanosec, *[np.zeros(n) for n in out.lengths])
    assert len(fill.signatures) == 1, fill.signatures   # (nothing compiled on the way)


def test_transforms_message_is_the_tf_message_frames_node_built():
    """frames_node's /tf bytes (TransformsMessage filled by kinematics.relative_transforms)
    deserialize to the TFMessage of Python messages it used to build (transform_msg of
    relative_pose for each moving joint): names, stamps, and poses to rounding, on random
    configurations of robots with mimic, planar and floating joints; a NaN pose is reported
    and a stamp out of range refused."""
    from rclpy.serialization import deserialize_message
    from tf2_msgs.msg import TFMessage

    from conftest import ARM
    from rbd_ros.dynamics.kinematics import relative_transforms
    from rbd_ros.dynamics.warmup import _URDF
    from rbd_ros.ros.messages import relative_pose, transform_msg
    rng = np.random.default_rng(8)
    for urdf in (ARM, TREE3, _URDF):
        model = rbd.Model.from_urdf(urdf)
        moving = [(j.parent, j.child) for j in model.joints
                  if j.type != 'fixed' or j.mimic is not None]
        out = wire.TransformsMessage([('p/' + a, 'p/' + b) for a, b in moving])
        parents = np.array([model.frame_index[a] for a, _ in moving], np.int64)
        children = np.array([model.frame_index[b] for _, b in moving], np.int64)
        for trial in range(20):
            q = rbd.integrate(model, model.neutral(), rng.uniform(-2.0, 2.0, model.nv), float(
                trial > 0))
            poses = rbd.frame_poses(model, q)
            assert relative_transforms(poses.array, parents, children, out.doubles,
                                       out.value_at)
            sec, nanosec = int(rng.integers(-2**31, 2**31)), int(rng.integers(0, 2**32))
            out.stamp(sec, nanosec)
            got = deserialize_message(out.data(), TFMessage)
            stamp = Time(sec=sec, nanosec=nanosec)
            want = [transform_msg(relative_pose(poses[a], poses[b]), 'p/' + a, 'p/' + b, stamp)
                    for a, b in moving]
            assert len(got.transforms) == len(want)
            for g, w in zip(got.transforms, want):
                assert (g.header, g.child_frame_id) == (w.header, w.child_frame_id)
                for field in ('translation', 'rotation'):
                    a, b = getattr(g.transform, field), getattr(w.transform, field)
                    names = 'xyz' if field == 'translation' else 'xyzw'
                    assert np.allclose([getattr(a, c) for c in names],
                                       [getattr(b, c) for c in names], rtol=0, atol=1e-12)
        if moving:
            bad = poses.array.copy()
            bad[children[0], 0, 3] = np.nan
            assert not relative_transforms(bad, parents, children, out.doubles, out.value_at)
            with pytest.raises(ValueError):
                out.stamp(2**31, 0)


def _cdr_joint_state(names, fields, sec, nanosec, frame_id='', endian='<') -> bytes:
    """A JointState in plain CDR of either byte order (rclpy writes little-endian only)."""
    out = bytearray(b'\0\x01\0\0' if endian == '<' else b'\0\0\0\0')

    def align(n):                     # XCDR1: relative to the byte after the encapsulation
        out.extend(bytes(-(len(out) - 4) % n))

    def u32(x):
        align(4)
        out.extend(struct.pack(endian + 'I', x))

    def string(text):
        raw = text.encode() + b'\0'
        u32(len(raw))
        out.extend(raw)
    out.extend(struct.pack(endian + 'iI', sec, nanosec))
    string(frame_id)
    u32(len(names))
    for name in names:
        string(name)
    for values in fields:
        u32(len(values))
        if len(values):
            align(8)
            out.extend(struct.pack(f'{endian}{len(values)}d', *values))
    return bytes(out)


def test_merging_bytes_equals_decoding_them_then_update_values(monkeypatch):
    """JointStateMerger.update_bytes (a repeated layout: one compiled call, merge_joint_state,
    through the merge plan of its names) gives what JointStateDecoder.decode then
    update_values give, message for message: the same return or the same rejection, the same
    merged state, stamp and clock resets; over a stream of either byte order with NaN and inf,
    stamps out of order and clock resets, layouts that change for a while and for one message
    (frame_id, array lengths, shuffled, partial and unknown names, a mimic joint's name),
    trailing, truncated and flipped bytes."""
    from rclpy.serialization import serialize_message

    from rbd_ros.ros import joint_state_bytes as jsb
    robot = load_robot(TREE3)
    names, n = list(robot.joint_names), len(robot.joint_names)
    mine = _cdr_joint_state(names, ([1.0] * n, [], [2.0] * n), 3, 4, 'base')
    theirs = js(names, [1.0] * n, effort=[2.0] * n, sec=3, nanosec=4)
    theirs.header.frame_id = 'base'
    theirs = bytes(serialize_message(theirs))            # (the encoder below writes CDR:
    assert len(theirs) >= len(mine) and [                # what rclpy writes, but for the
        list(x) if isinstance(x, np.ndarray) else x      # alignment gaps' undefined bytes
        for x in JointStateDecoder().decode(theirs)] == [  # and the bytes after the end)
        list(x) if isinstance(x, np.ndarray) else x for x in JointStateDecoder().decode(mine)]
    statuses = []
    merge = jsb.merge_joint_state

    def recorded(*args):
        result = merge(*args)
        statuses.append(result[0] if not args[5] else ('big-endian', result[0]))
        return result
    monkeypatch.setattr(jsb, 'merge_joint_state', recorded)
    monkeypatch.setattr(joint_states, 'JIT_ENABLED', True)   # (interpreted without numba)
    rng = np.random.default_rng(11)
    pair = (JointStateMerger(robot), JointStateMerger(robot), JointStateDecoder())
    by_bytes = pair[0]

    def both(data):
        return _through_both(pair, data)
    t = 10 * 10**9
    endian, frame_id, counts, sender = '<', '', (n, n, n), list(names)
    merged_names = set()

    def noted(*args):                    # (the names behind each merge the kernel did)
        result = recorded(*args)
        if result[0] in (jsb.MERGED, jsb.MERGED_CLOCK_RESET):
            merged_names.add(len(args[8]) == n and bool((args[8] == np.arange(n)).all()))
        return result
    monkeypatch.setattr(jsb, 'merge_joint_state', noted)
    for k in range(3000):
        if rng.random() < 0.03:                      # another layout for a while
            endian = '>' if rng.random() < 0.3 else '<'
            frame_id = str(rng.choice(['', 'base', 'world_frame']))
            counts = tuple(int(rng.choice([0, n])) for _ in range(3))
            sender = [list(names), list(rng.permutation(names)), names[1:],
                      ['finger_joint'] + names[::-1][:2] + ['nope'] + names[::-1][2:]][
                          int(rng.integers(4))]
        order = list(sender)
        r = rng.random()
        if r < 0.03:
            order = list(rng.permutation(names))
        elif r < 0.05:
            order = names[:2]
        elif r < 0.07:
            order = names + ['nope']
        elif r < 0.08:
            order = names + ['finger_joint']
        fields = [rng.normal(size=len(order) if c == n else 0) for c in counts]
        if rng.random() < 0.03 and len(fields[0]):
            fields[0][rng.integers(len(order))] = rng.choice([np.nan, np.inf, -np.inf])
        r = rng.random()
        t += int(rng.integers(1, 2 * 10**6))
        stamp = t
        if r < 0.03:
            stamp = t - int(rng.integers(1, 10**9))  # out of order
        elif r < 0.04:
            stamp = t = t - 5 * 10**9                # a clock reset
        data = _cdr_joint_state(order, fields, stamp // 10**9, stamp % 10**9, frame_id, endian)
        r = rng.random()
        if r < 0.02:
            data += bytes(int(rng.integers(1, 9)))   # trailing bytes
        elif r < 0.04:
            data = data[:int(rng.integers(0, len(data)))]
        elif r < 0.07:
            flipped = bytearray(data)
            flipped[rng.integers(len(data))] ^= 1 << int(rng.integers(8))
            data = bytes(flipped)
        both(data)
    # the line between a message out of order and a clock reset, exactly
    last = by_bytes.last_stamp_ns + 10**9
    for back, reason in ((joint_states.CLOCK_RESET_NS, 'time_backwards'),
                         (joint_states.CLOCK_RESET_NS + 1, None)):
        fields = [rng.normal(size=n)] * 3
        both(_cdr_joint_state(names, fields, last // 10**9, last % 10**9))
        stamp = last - back
        outcome = both(_cdr_joint_state(names, fields, stamp // 10**9, stamp % 10**9))
        assert outcome[0] == ('ok' if reason is None else 'rejected'), outcome
        assert reason is None or outcome[1] == reason
        last += 10**9
    seen = {status: statuses.count(status) for status in set(statuses)}
    for status in (jsb.MERGED, jsb.MERGED_CLOCK_RESET, jsb.OTHER_LAYOUT, jsb.NON_FINITE,
                   jsb.TIME_BACKWARDS):           # (each path of the compiled merge taken)
        assert seen.get(status, 0) + seen.get(('big-endian', status), 0) > 0, seen
    assert seen[jsb.MERGED] > 500 and seen[('big-endian', jsb.MERGED)] > 500, seen
    assert merged_names == {True, False}    # (every joint in order, and other name lists)
    assert by_bytes.clock_resets > 0


def test_merging_bytes_equals_decoding_on_every_flipped_bit_cut_and_added_byte(monkeypatch):
    """Every single-bit flip, truncation and 1-8 trailing bytes of a message the compiled merge
    takes (both byte orders, three sets of array lengths), each after that message itself:
    update_bytes gives what decode then update_values give (a flip of the encapsulation or of
    a count is another layout, never the old one's values). Then what keeps or replaces the
    compiled merge: a first message with trailing bytes, a partial sender interleaved with a
    full one, a model swap."""
    from rbd_ros.ros import joint_state_bytes as jsb
    monkeypatch.setattr(joint_states, 'JIT_ENABLED', True)   # (interpreted without numba)
    robot = load_robot(TREE3)
    names, n = list(robot.joint_names), len(robot.joint_names)
    rng = np.random.default_rng(5)

    both = _through_both

    def fresh():
        return JointStateMerger(robot), JointStateMerger(robot), JointStateDecoder()
    cases = 0
    for endian in ('<', '>'):
        for counts in ((n, n, n), (n, 0, n), (n, n, 0)):
            def message(sec, frame_id='base'):
                return _cdr_joint_state(names, [rng.normal(size=c) for c in counts], sec, 7,
                                        frame_id, endian)
            first, again, base = message(4), message(5), message(6)
            variants = [base[:cut] for cut in range(len(base))]
            variants += [base + bytes(k) for k in range(1, 9)]
            for at in range(len(base)):
                for bit in range(8):
                    flipped = bytearray(base)
                    flipped[at] ^= 1 << bit
                    variants.append(bytes(flipped))
            for data in variants:
                pair = fresh()
                both(pair, first)
                assert not pair[0]._fast        # (a layout is kept when seen again)
                both(pair, again)
                assert pair[0]._fast
                both(pair, data)
                cases += 1
    assert cases > 5000
    # a first message with bytes after its end: the next, of the same layout without them,
    # gets a compiled merge of its own length (from their second)
    statuses = []
    merge = jsb.merge_joint_state
    monkeypatch.setattr(jsb, 'merge_joint_state',
                        lambda *args: statuses.append(merge(*args)) or statuses[-1])
    pair = fresh()
    full = [[0.5] * n] * 3
    both(pair, _cdr_joint_state(names, full, 1, 0) + bytes(4))
    for k in range(2, 6):
        both(pair, _cdr_joint_state(names, full, k, 0))
    assert [s[0] for s in statuses] == [jsb.MERGED] * 2
    # two senders on one topic, every joint and two of them: both compiled (the second after
    # two of its messages)
    statuses.clear()
    for k in range(6, 16):
        both(pair, _cdr_joint_state(names if k % 2 else names[:2], [[0.1 * k] * (n if k % 2
                                                                             else 2)] * 3, k, 0))
    assert [s[0] for s in statuses] == [jsb.MERGED] * 8
    # two senders of one length (another frame_id of as many bytes): once both are kept, each
    # message is tried against the other's merge before its own
    statuses.clear()
    for k in range(16, 22):
        both(pair, _cdr_joint_state(names, full, k, 0, 'left_frame' if k % 2 else 'rght_frame'))
    assert [s[0] for s in statuses] == [jsb.OTHER_LAYOUT] + [jsb.OTHER_LAYOUT,
                                                             jsb.MERGED] * 2, statuses
    # more senders than kept merges: the least recently used goes
    kept = list(pair[0]._fast)
    for k in range(22, 22 + 2 * joint_states.FAST_MERGES):
        both(pair, _cdr_joint_state(names, full, k, 0, f'frame{k // 2}'))
    assert len(pair[0]._fast) == joint_states.FAST_MERGES and not set(kept) & set(pair[0]._fast)
    # layouts that come once (fuzzed frame_ids) push none out
    kept = list(pair[0]._fast)
    for k in range(40, 40 + 3 * joint_states.SEEN_LAYOUTS):
        both(pair, _cdr_joint_state(names, full, k, 0, f'one-off {k}'))
    assert pair[0]._fast == kept
    # a model swap: the new merger carries the state and starts without a compiled merge
    swapped = (JointStateMerger(robot, pair[0]), JointStateMerger(robot, pair[1]), pair[2])
    assert swapped[0]._fast == []
    for k in range(240, 243):
        both(swapped, _cdr_joint_state(names, full, k, 0))
    assert swapped[0]._fast


def _through_both(pair, data):
    """One message through (merger, merger, decoder): update_bytes on the first, decode then
    update_values on the second; their outcomes (a return or a rejection) and states equal."""
    by_bytes, by_values, decoder = pair
    outcomes = []
    for read in (lambda: by_bytes.update_bytes(data),
                 lambda: _decode_then_merge(decoder, by_values, data)):
        try:
            outcomes.append(('ok', read()))
        except Rejected as exc:
            outcomes.append(('rejected', exc.reason, str(exc)))
    assert outcomes[0] == outcomes[1], (data, outcomes)
    assert np.array_equal(by_bytes.values, by_values.values)
    assert np.array_equal(by_bytes.known, by_values.known)
    assert (by_bytes.last_stamp_ns, by_bytes.clock_resets) == \
        (by_values.last_stamp_ns, by_values.clock_resets)
    return outcomes[0]


def _decode_then_merge(decoder, merger, data):
    sec, nanosec, names, position, velocity, effort = decoder.decode(data)
    unknown, has_effort = merger.update_values(names, position, velocity, effort,
                                               sec * 1_000_000_000 + nanosec)
    return sec, nanosec, unknown, has_effort


def test_a_clock_reset_is_taken_and_counted_not_a_lockout():
    """One stamp far in the future (a garbage stamp, found by the fuzz campaign) used to make
    every later message 'time_backwards' until time caught up. A jump back of more than 1 s is
    a reset of the sender's clock (a log replayed from its start): taken, and counted."""
    lm = load_robot(TREE3)
    m = JointStateMerger(lm)
    names = list(lm.joint_names)
    m.update(js(names, [1, 2, 3, 4], sec=5))
    m.update(js(names, [1, 2, 3, 4], sec=2_000_000_000))      # a stamp from the future
    with pytest.raises(Rejected):                            # out of order: still rejected
        m.update(js(names, [1, 2, 3, 4], sec=1_999_999_999, nanosec=500_000_000))
    m.update(js(names, [5, 6, 7, 8], sec=6))                 # back to the real clock
    assert m.clock_resets == 1 and list(m.position) == [5, 6, 7, 8]
    m.update(js(names, [5, 6, 7, 8], sec=7))
    assert m.clock_resets == 1


def test_a_rejection_warns_for_a_while_and_its_count_stays(monkeypatch):
    """One rejected message sets /diagnostics to WARN for REJECTION_WARN_S; after that the node
    is OK again and the rejected_* count still says what happened."""
    from rbd_ros.ros import diagnostics
    robot = load_robot(TREE3)
    stats = diagnostics.Stats()
    now = [1000.0]
    monkeypatch.setattr(diagnostics.time, 'monotonic', lambda: now[0])
    assert diagnostics.diagnostic_status('n', robot, stats, None).message == 'running'
    stats.reject('bad_length')
    st = diagnostics.diagnostic_status('n', robot, stats, None)
    assert st.level == st.WARN and 'rejected in the last 10 s' in st.message, st.message
    now[0] += diagnostics.REJECTION_WARN_S + 0.1
    st = diagnostics.diagnostic_status('n', robot, stats, None)
    assert st.level == st.OK and st.message == 'running', st.message
    assert {kv.key: kv.value for kv in st.values}['rejected_bad_length'] == '1'
