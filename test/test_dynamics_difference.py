"""difference (q1 (-) q0) and interpolate against Pinocchio's difference and interpolate to
1e-9 relative, on random trees (every joint type, fixed and floating base, mimic joints), the
real robots and every example-robot-data URDF; difference inverts integrate exactly (angles
keep their turns) and, with wrap_angles=True, takes the short way as Pinocchio does."""
import zlib

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from corpus import NOT_A_ROBOT, corpus
from oracle_cases import build, oracle_cases
from pin_oracle import Oracle, close

pin = pytest.importorskip('pinocchio')
TOL = 1e-9
CORPUS = [r for r in corpus() if r[0] not in NOT_A_ROBOT]


@pytest.fixture(params=oracle_cases())
def case(request):
    return build(request.param)


def same_configuration(model, q, p):
    """|q - p| as configurations: a quaternion and its negative are one rotation."""
    err = 0.0
    for info in model.joints:
        if info.q_index is None:
            continue
        rows = slice(info.q_index, info.q_index + info.nq)
        a, b = q[..., rows], p[..., rows]
        if info.type == 'floating':
            err = max(err, close(a[..., :3], b[..., :3]),
                      min(close(a[..., 3:], b[..., 3:]), close(a[..., 3:], -b[..., 3:])))
        else:
            err = max(err, close(a, b))
    return err


def test_difference_matches_pinocchio(case):
    model, oracle, seed = case
    rng = np.random.default_rng(seed)
    for _ in range(4):
        q0, q1 = model.random_configuration(rng), model.random_configuration(rng)
        # any two configurations: Pinocchio's angles turn the short way
        assert close(rbd.difference(model, q0, q1, wrap_angles=True),
                     oracle.difference(q0, q1)) < TOL
        # nearby ones (every angle moves less than pi): the same without wrapping
        near = rbd.integrate(model, q0, rng.uniform(-1, 1, size=model.nv) * 0.9, 1.0)
        assert close(rbd.difference(model, q0, near), oracle.difference(q0, near)) < TOL


def test_difference_inverts_integrate(case):
    model, _, seed = case
    rng = np.random.default_rng(seed + 1)
    q0 = model.random_configuration(rng)
    v = rng.normal(size=model.nv) * 2.0      # angles beyond pi: kept, not wrapped
    for info in model.joints:
        if info.type == 'planar' and info.q_index is not None:   # a whole turn has no log
            v[info.v_index + 2] = np.clip(v[info.v_index + 2], -6.0, 6.0)
        elif info.type == 'floating' and info.q_index is not None:
            # a rotation vector is one rotation up to whole turns: the log's is under pi
            w = v[info.v_index + 3:info.v_index + 6]
            w *= min(1.0, 3.0 / np.linalg.norm(w))
    q1 = rbd.integrate(model, q0, v, 1.0)
    assert close(rbd.difference(model, q0, q1), v) < TOL * 10
    assert same_configuration(model, rbd.integrate(model, q0, rbd.difference(model, q0, q1), 1.0),
                              q1) < TOL
    other = model.random_configuration(rng)
    back = rbd.integrate(model, q0, rbd.difference(model, q0, other), 1.0)
    assert same_configuration(model, back, other) < TOL
    assert np.array_equal(rbd.difference(model, q0, q0), np.zeros(model.nv))


def test_interpolate_matches_pinocchio(case):
    model, oracle, seed = case
    rng = np.random.default_rng(seed + 2)
    q0, q1 = model.random_configuration(rng), model.random_configuration(rng)
    followers = {j.name for j in model.joints if j.mimic is not None}
    for u in (0.0, 0.25, 0.5, 1.0):
        ours = oracle.q(rbd.interpolate(model, q0, q1, u, wrap_angles=True))
        theirs = pin.interpolate(oracle.pm, oracle.q(q0), oracle.q(q1), u)
        for k, name in enumerate(oracle.layout.joint_names):
            if name in followers:     # Pinocchio moves them independently
                continue
            i, n = oracle.layout.idx_q[k], oracle.layout.nqs[k]
            a, b = ours[i:i + n], theirs[i:i + n]
            if model.joint[name].type == 'floating':
                assert close(a[:3], b[:3]) < TOL
                assert min(close(a[3:], b[3:]), close(a[3:], -b[3:])) < TOL
            else:
                assert close(a, b) < TOL, (name, u)
    assert close(rbd.interpolate(model, q0, q1, 0.0), q0) < 1e-15
    assert same_configuration(model, rbd.interpolate(model, q0, q1, 1.0), q1) < TOL


def test_batches_paths_and_data(case):
    model, _, seed = case
    rng = np.random.default_rng(seed + 3)
    Q0 = np.stack([model.random_configuration(rng) for _ in range(4)])
    Q1 = np.stack([model.random_configuration(rng) for _ in range(4)])
    data = model.create_data()
    D = rbd.difference(model, Q0, Q1, data=data)
    assert D.shape == (4, model.nv)
    for n in range(4):
        assert np.array_equal(D[n], rbd.difference(model, Q0[n], Q1[n]))
        assert np.array_equal(rbd.difference(model, Q0[n], Q1, data=data)[n],
                              rbd.difference(model, Q0[n].tolist(), Q1[n]))
    u = np.linspace(0.0, 1.0, 5)
    path = rbd.interpolate(model, Q0[0], Q1[0], u)                 # one path, 5 points
    assert path.shape == (5, model.nq)
    for n in range(5):
        assert close(path[n], rbd.interpolate(model, Q0[0], Q1[0], u[n])) < 1e-15
    rows = rbd.interpolate(model, Q0, Q1, u[:4], data=data)        # row by row
    for n in range(4):
        assert close(rows[n], rbd.interpolate(model, Q0[n], Q1[n], u[n])) < 1e-15


@pytest.mark.parametrize('name, path, floating', CORPUS, ids=[r[0] for r in CORPUS])
def test_difference_matches_pinocchio_on_the_corpus(name, path, floating):
    model = rbd.Model.from_urdf(path, floating_base=floating)
    with open(path, 'rb') as handle:
        oracle = Oracle(model, handle.read().decode('utf-8'))
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    q0, q1 = model.random_configuration(rng), model.random_configuration(rng)
    assert close(rbd.difference(model, q0, q1, wrap_angles=True), oracle.difference(q0, q1)) < TOL
    v = rbd.difference(model, q0, q1)
    assert same_configuration(model, rbd.integrate(model, q0, v, 1.0), q1) < TOL


def test_continuous_angles_keep_their_turns():
    xml = '''<robot name="wheel"><link name="base"/>
      <link name="wheel"><inertial><mass value="1"/>
        <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <joint name="spin" type="continuous"><parent link="base"/><child link="wheel"/>
        <axis xyz="0 0 1"/></joint></robot>'''
    model = rbd.Model.from_urdf(xml)
    assert close(rbd.difference(model, [3.0], [-3.0]), [-6.0]) < 1e-15
    assert close(rbd.difference(model, [3.0], [-3.0], wrap_angles=True),
                 [2 * np.pi - 6.0]) < 1e-15
    assert close(rbd.integrate(model, [3.0], [0.5], 1.0), [3.5]) < 1e-15     # past pi, no wrap
    assert close(rbd.interpolate(model, [3.0], [-3.0], 0.5), [0.0]) < 1e-15
    assert close(rbd.interpolate(model, [3.0], [-3.0], 0.5, wrap_angles=True), [np.pi]) < 1e-15


def test_bad_arguments_name_q0_and_q1():
    model = rbd.Model.from_urdf(oracle_cases(2)[1].values[0][0], floating_base=True)
    q = model.q_neutral
    with pytest.raises(ValueError, match=r'q1 must have shape .* velocity-sized'):
        rbd.difference(model, q, np.zeros(model.nv))
    with pytest.raises(ValueError, match='q1 contains NaN'):
        rbd.difference(model, q, np.full(model.nq, np.nan))
    with pytest.raises(ValueError, match='q0 contains NaN'):
        rbd.difference(model, np.full(model.nq, np.nan), q)
    bad = q.copy()
    bad[3:7] = 0.0
    with pytest.raises(ValueError, match='zero quaternion'):
        rbd.difference(model, q, bad)
    with pytest.raises(ValueError, match='same N'):
        rbd.difference(model, np.stack([q] * 3), np.stack([q] * 2))
    with pytest.raises(ValueError, match='u has 3 fractions'):
        rbd.interpolate(model, np.stack([q] * 2), np.stack([q] * 2), [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match='u contains NaN or inf'):
        rbd.interpolate(model, q, q, np.nan)
    with pytest.raises(ValueError, match=r'u contains NaN or inf \(configuration 1 of the batch\)'):
        rbd.interpolate(model, q, q, [0.0, np.inf])
    with pytest.raises(ValueError, match='u must be a number or a 1-D array'):
        rbd.interpolate(model, q, q, np.zeros((2, 2)))
