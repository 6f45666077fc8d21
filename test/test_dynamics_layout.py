"""PinocchioLayout: Pinocchio's joint order and coordinates derived from the URDF alone equal
Pinocchio's own model (names, idx_q, idx_v, nq, nv) on every example-robot-data URDF, fixed and
floating, and on random trees whose joint names are shuffled against the file order (unicode
included), with mimic joints independent (Pinocchio's default) or mimicking (mimic=True); its
conversions round-trip and carry Pinocchio's results to ours."""
import re
import zlib

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from corpus import NOT_A_ROBOT, corpus
from pin_oracle import close, layout_mismatch, pinocchio_model
from rbd_ros.dynamics.pinocchio_layout import pinocchio_joint_order
from urdf_factory import random_urdf

pin = pytest.importorskip('pinocchio')
ROBOTS = [r for r in corpus() if r[0] not in NOT_A_ROBOT]
ALPHABET = list('abcXYZ_019-.') + ['é', 'ß', 'Ω', '日']


def _read(path):
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8')


def renamed(xml, seed):
    """The same robot with random joint and link names, so that sorting joints by name and
    the file's order disagree (names compared byte by byte: unicode too)."""
    rng = np.random.default_rng(seed)
    names = re.findall(r'<(?:joint|link) name="([^"]+)"', xml)
    new = {n: ''.join(rng.choice(ALPHABET, size=int(rng.integers(1, 6)))) + str(k)
           for k, n in enumerate(names)}
    return re.sub(r'"([^"]+)"', lambda m: f'"{new.get(m.group(1), m.group(1))}"', xml)


@pytest.mark.parametrize('name, path, floating', ROBOTS, ids=[r[0] for r in ROBOTS])
def test_layout_equals_pinocchio_on_the_corpus(name, path, floating):
    xml = _read(path)
    for base in (floating, not floating):
        model = rbd.Model.from_urdf(path, floating_base=base)
        layout = rbd.PinocchioLayout(model)
        assert not layout_mismatch(layout, pinocchio_model(model, xml)), name
        # q converted: the same world poses of every link in Pinocchio
        pm = pinocchio_model(model, xml)
        pd = pm.createData()
        q = model.random_configuration(zlib.crc32(name.encode()))
        pin.framesForwardKinematics(pm, pd, layout.q_to_pinocchio(q))
        poses = rbd.frame_poses(model, q)
        for link in model.frame_names:
            assert close(poses[link], pd.oMf[pm.getFrameId(link, pin.BODY)].homogeneous) < 1e-9


def test_anymal_legs_come_in_pinocchio_s_order():
    """The issue's example: ANYmal's legs are LF, RF, LH, RH in its file (our order) and LF,
    LH, RF, RH in Pinocchio (joint names sorted)."""
    path = [p for n, p, _ in ROBOTS if n == 'anymal_b_simple_description/robots/anymal.urdf'][0]
    model = rbd.Model.from_urdf(path, floating_base=True)
    layout = rbd.PinocchioLayout(model)
    assert [n[:2] for n in model.joint_names[1::3]] == ['LF', 'RF', 'LH', 'RH']
    assert [n[:2] for n in layout.joint_names[1::3]] == ['LF', 'LH', 'RF', 'RH']
    assert layout.joint_names[0] == rbd.FLOATING_BASE_JOINT and layout.joint_id('LH_HAA') == 5
    v = np.arange(model.nv, dtype=float)
    v_pin = layout.v_to_pinocchio(v)
    assert np.array_equal(v_pin[:6], v[:6])     # the base first in both
    assert np.array_equal(v_pin[9:12], v[model.joint['LH_HAA'].v_index:][:3])


RANDOM = [(seed, seed % 2 == 1, seed % 4 == 3) for seed in range(120)]


@pytest.mark.parametrize('seed, floating, mimic', RANDOM,
                         ids=[f'random{s}-{"float" if f else "fixed"}{"-mimic" if m else ""}'
                              for s, f, m in RANDOM])
def test_layout_equals_pinocchio_on_random_trees(seed, floating, mimic):
    xml = random_urdf(seed, n_links=3 + seed % 14, branching=seed % 3 != 0, mimic=mimic)
    for text in (xml, renamed(xml, seed)):
        model = rbd.Model.from_urdf(text, floating_base=floating)
        layout = rbd.PinocchioLayout(model)
        pm = pinocchio_model(model, text)
        assert not layout_mismatch(layout, pm)
        assert layout.joint_names == [pm.names[layout.joint_id(n)] for n in layout.joint_names]
        if model.has_mimic:
            _check_mimic_true(model, text)


def _check_mimic_true(model, xml):
    """Pinocchio's mimic=True (JointModelMimic, no coordinate of its own): the layout, and its
    inverse dynamics equal ours through it. (Its CRBA with mimic joints disagrees with its own
    RNEA on some trees in Pinocchio 4.1, so M is compared with RNEA's columns.)"""
    try:
        pm = pinocchio_model(model, xml, mimic=True)
    except Exception:       # noqa: BLE001 - Pinocchio refuses a mimic of another joint type
        return
    layout = rbd.PinocchioLayout(model, mimic=True)
    assert not layout_mismatch(layout, pm)
    assert (layout.nq, layout.nv) == (model.nq + sum(
        1 for j in model.joints if j.type in ('continuous', 'planar') and j.mimic is None),
        model.nv)
    pd = pm.createData()
    rng = np.random.default_rng(len(xml))
    q = model.random_configuration(rng)
    v, a = rng.normal(size=(2, model.nv))
    qp = layout.q_to_pinocchio(q)
    tau = pin.rnea(pm, pd, qp, layout.v_to_pinocchio(v), layout.a_to_pinocchio(a))
    assert close(rbd.inverse_dynamics(model, q, v, a), layout.tau_from_pinocchio(tau)) < 1e-9
    zero = np.zeros(pm.nv)
    bias = pin.rnea(pm, pd, qp, zero, zero)
    M = np.column_stack([pin.rnea(pm, pd, qp, zero, e) - bias for e in np.eye(pm.nv)])
    assert close(rbd.mass_matrix(model, q), layout.matrix_from_pinocchio(M)) < 1e-9


def test_pinocchio_order_is_depth_first_with_children_sorted_by_joint_name():
    xml = '''<robot name="order">
      <link name="base"/><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
      <link name="e"/>
      <joint name="z_first_in_file" type="revolute"><parent link="base"/><child link="a"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="m_weld" type="fixed"><parent link="base"/><child link="b"/></joint>
      <joint name="B_upper_case" type="continuous"><parent link="b"/><child link="c"/></joint>
      <joint name="a_last_in_file" type="prismatic"><parent link="a"/><child link="d"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="_under" type="planar"><parent link="base"/><child link="e"/>
        <axis xyz="0 0 1"/></joint>
    </robot>'''
    model = rbd.Model.from_urdf(xml)
    # ours: depth-first over bodies (base and the welded b are one body), a body's joints in
    # the order of the links they hang from (its own link first), then the file's
    assert model.joint_names == ['z_first_in_file', 'a_last_in_file', '_under', 'B_upper_case']
    # Pinocchio: depth-first over links, children sorted by joint name ('_' 0x5f < 'm' 0x6d <
    # 'z'): '_under', then 'm_weld' (fixed: no coordinate) and what hangs from b, then 'z...'
    assert pinocchio_joint_order(model._robot) == ['_under', 'B_upper_case', 'z_first_in_file',
                                                   'a_last_in_file']
    layout = rbd.PinocchioLayout(model)
    assert layout.joint_names == pinocchio_joint_order(model._robot)
    assert list(layout.idx_q) == [0, 4, 6, 7] and list(layout.idx_v) == [0, 3, 4, 5]
    assert list(layout.nqs) == [4, 2, 1, 1] and (layout.nq, layout.nv) == (8, 6)
    assert not layout_mismatch(layout, pinocchio_model(model, xml))


@pytest.mark.parametrize('seed', range(12))
def test_conversions_round_trip_and_are_batched(seed):
    xml = random_urdf(seed, n_links=4 + seed, mimic=seed % 2 == 0,
                      joint_types=('revolute', 'continuous', 'prismatic', 'fixed', 'planar',
                                   'floating'))
    model = rbd.Model.from_urdf(xml, floating_base=seed % 3 == 0)
    layout = rbd.PinocchioLayout(model)
    rng = np.random.default_rng(seed)
    Q = np.stack([model.random_configuration(rng) for _ in range(5)])
    V, TAU = rng.normal(size=(2, 5, model.nv))
    # q: angles come back in (-pi, pi], the rest exactly
    assert close(layout.q_from_pinocchio(layout.q_to_pinocchio(Q)), Q) < 1e-15
    # a whole turn of a continuous or planar angle is the same Pinocchio configuration
    leaders = {j.mimic[0] for j in model.joints if j.mimic is not None}
    turned = Q.copy()
    for info in model.joints:
        if info.q_index is not None and info.name not in leaders:
            if info.type == 'continuous':
                turned[:, info.q_index] += 2 * np.pi
            elif info.type == 'planar':
                turned[:, info.q_index + 2] -= 4 * np.pi
    assert close(layout.q_to_pinocchio(turned), layout.q_to_pinocchio(Q)) < 1e-14
    assert np.array_equal(layout.v_from_pinocchio(layout.v_to_pinocchio(V)), V)
    assert np.array_equal(layout.tau_from_pinocchio(layout.tau_to_pinocchio(TAU)), TAU)
    M = rbd.mass_matrix(model, Q)
    assert np.array_equal(layout.matrix_from_pinocchio(layout.matrix_to_pinocchio(M)), M)
    J = rbd.centroidal_momentum_matrix(model, Q)
    assert np.array_equal(layout.jacobian_from_pinocchio(layout.jacobian_to_pinocchio(J)), J)
    # batches equal rows, and the duality tau . v is kept: tau_pin . (P v) = (P^T tau_pin) . v
    for n in range(5):
        assert np.array_equal(layout.q_to_pinocchio(Q)[n], layout.q_to_pinocchio(Q[n]))
        assert np.array_equal(layout.matrix_to_pinocchio(M)[n], layout.matrix_to_pinocchio(M[n]))
    tau_pin = rng.normal(size=layout.nv)
    assert np.isclose(tau_pin @ layout.v_to_pinocchio(V[0]),
                      layout.tau_from_pinocchio(tau_pin) @ V[0])
    # Pinocchio's unit (cos, sin) and quaternions
    qp = layout.q_to_pinocchio(Q[0])
    pm = pinocchio_model(model, xml)
    assert pin.isNormalized(pm, qp)
    if not model.has_mimic:
        assert close(layout.q_to_pinocchio(model.q_neutral), pin.neutral(pm)) == 0.0


def test_bad_shapes_name_the_argument_and_the_size():
    model = rbd.Model.from_urdf(random_urdf(3, n_links=6), floating_base=True)
    layout = rbd.PinocchioLayout(model)
    with pytest.raises(ValueError, match=rf"q must have .* our nq = {model.nq}"):
        layout.q_to_pinocchio(np.zeros(model.nv))
    with pytest.raises(ValueError, match=rf"q_pin must have .* Pinocchio's nq = {layout.nq}"):
        layout.q_from_pinocchio(np.zeros(model.nq + 100))
    with pytest.raises(ValueError, match=r'A_pin must have shape \(n, n\)'):
        layout.matrix_from_pinocchio(np.zeros((layout.nv, layout.nv + 1)))
    with pytest.raises(ValueError, match="'nope' is not a moving joint"):
        layout.joint_id('nope')
    assert layout.idx_q.flags.writeable is False
