"""Inertial parameters, payloads and their identification in the core: a payload is ten numbers
added to a body, equal to a URDF that carries it as a link; the regressor batches like the
other functions; estimate_payload recovers a known payload from noise-free torques (mass,
centre of mass and inertia from moving samples; mass and centre of mass alone from static
ones) and says when the samples cannot tell."""
import os

import numpy as np
import pytest

import rbd_ros.dynamics as rbd

HERE = os.path.dirname(os.path.abspath(__file__))
ARM = os.path.join(HERE, '..', 'rbd_ros', 'robots', 'rbd_arm7.urdf')
SOLO = os.path.join(HERE, '..', 'rbd_ros', 'robots', 'solo12.urdf')
IC = np.array([[0.010, 0.001, 0.000], [0.001, 0.020, 0.002], [0.000, 0.002, 0.015]])


def with_payload_link(xml, link, mass, com, inertia, rpy='0 0 0'):
    """The URDF with the payload as a link fixed to ``link`` (the reference for with_payload)."""
    i = inertia
    return xml[:xml.rindex('</robot>')] + (
        f'<link name="payload"><inertial><origin xyz="{com[0]} {com[1]} {com[2]}" rpy="{rpy}"/>'
        f'<mass value="{mass}"/><inertia ixx="{i[0, 0]}" ixy="{i[0, 1]}" ixz="{i[0, 2]}" '
        f'iyy="{i[1, 1]}" iyz="{i[1, 2]}" izz="{i[2, 2]}"/></inertial></link>'
        f'<joint name="payload_joint" type="fixed"><parent link="{link}"/><child link="payload"/>'
        '</joint></robot>')


@pytest.mark.parametrize('path, floating, link', [(ARM, False, 'tool0'),
                                                  (ARM, False, 'forearm_link'),
                                                  (SOLO, True, 'FL_FOOT'),
                                                  (SOLO, True, 'base_link')])
def test_a_payload_equals_a_link_carrying_it(path, floating, link):
    xml = open(path).read()
    model = rbd.Model.from_urdf(xml, floating_base=floating)
    heavy = model.with_payload(link, 2.0, [0.01, -0.02, 0.05], IC)
    reference = rbd.Model.from_urdf(with_payload_link(xml, link, 2.0, [0.01, -0.02, 0.05], IC),
                                    floating_base=floating)
    rng = np.random.default_rng(0)
    for k in range(5):
        q, v, a = model.random_configuration(k), rng.normal(size=model.nv), rng.normal(size=model.nv)
        assert np.allclose(rbd.inverse_dynamics(heavy, q, v, a),
                           rbd.inverse_dynamics(reference, q, v, a), atol=1e-12, rtol=1e-12)
        assert np.allclose(rbd.mass_matrix(heavy, q), rbd.mass_matrix(reference, q), atol=1e-12)
    assert heavy.total_mass == pytest.approx(model.total_mass + 2.0)
    # the original never changes, a zero payload is the same robot
    assert np.array_equal(model.inertial_parameters(), rbd.Model.from_urdf(
        xml, floating_base=floating).inertial_parameters())
    same = model.with_payload(link, 0.0)
    assert np.array_equal(same.inertial_parameters(), model.inertial_parameters())


def test_inertial_parameters_round_trip_and_the_regressor_batches():
    model = rbd.Model.from_urdf(SOLO, floating_base=True)
    pi = model.inertial_parameters()
    assert pi.shape == (10 * len(model.body_names),) and len(model.body_names) == 13
    assert model.body_names[0] == 'base_link'
    other = model.with_inertial_parameters(pi * 1.5)
    rng = np.random.default_rng(1)
    Q = np.stack([model.random_configuration(k) for k in range(20)])
    V, A = rng.normal(size=(20, model.nv)), rng.normal(size=(20, model.nv))
    Y = rbd.inertial_regressor(model, Q, V, A)
    assert Y.shape == (20, model.nv, 10 * 13)
    for n in range(20):
        assert np.array_equal(Y[n], rbd.inertial_regressor(model, Q[n], V[n], A[n]))
    assert np.allclose(np.einsum('nvc,c->nv', Y, pi * 1.5),
                       rbd.inverse_dynamics(other, Q, V, A), atol=1e-12)
    # one body's columns (link=): the same numbers as the slice of the whole regressor, for a
    # leg's last link, the floating base, and a link welded to its body by a fixed joint
    for link in ('FL_LOWER_LEG', 'base_link', 'FL_FOOT'):
        body = model._link_body[link] - 1           # (its place in model.body_names)
        columns = slice(10 * body, 10 * body + 10)
        assert np.array_equal(rbd.inertial_regressor(model, Q, V, A, link=link),
                              Y[:, :, columns])
        assert np.array_equal(rbd.inertial_regressor(model, Q[3], V[3], A[3], link=link),
                              Y[3, :, columns])
    with pytest.raises(ValueError, match="unknown link 'nowhere'"):
        rbd.inertial_regressor(model, Q, V, A, link='nowhere')
    arm = rbd.Model.from_urdf(ARM)
    with pytest.raises(ValueError, match='fixed base'):
        rbd.inertial_regressor(arm, arm.neutral(), np.zeros(7), np.zeros(7), link='base_link')
    with pytest.raises(ValueError, match='expected 130 inertial parameters'):
        model.with_inertial_parameters(pi[:-1])
    with pytest.raises(ValueError, match='NaN'):
        model.with_inertial_parameters(np.full(130, np.nan))


@pytest.mark.parametrize('call, words', [
    (lambda m: m.with_payload('nowhere', 1.0), "unknown link 'nowhere'"),
    (lambda m: m.with_payload('tool0', -1.0), 'mass must be finite and >= 0'),
    (lambda m: m.with_payload('tool0', float('nan')), 'mass must be finite'),
    (lambda m: m.with_payload('tool0', 1.0, [0, 0]), 'com must be 3 finite numbers'),
    (lambda m: m.with_payload('tool0', 1.0, inertia=np.diag([1.0, 1.0, 3.0])),
     'not physical'),
    (lambda m: m.with_payload('tool0', 1.0, inertia=-np.eye(3)), 'not positive semi-definite'),
    (lambda m: m.with_payload('tool0', 1.0, inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]),
     'not symmetric'),
    (lambda m: m.with_payload('base_link', 1.0), 'part of the fixed base'),
])
def test_a_payload_that_is_not_physical_is_refused(call, words):
    with pytest.raises(ValueError, match=words):
        call(rbd.Model.from_urdf(ARM))


def test_estimate_payload_recovers_a_known_payload():
    model = rbd.Model.from_urdf(ARM)
    truth = dict(mass=2.0, com=np.array([0.01, -0.02, 0.05]), inertia=IC)
    heavy = model.with_payload('tool0', truth['mass'], truth['com'], truth['inertia'])
    rng = np.random.default_rng(2)
    Q = np.stack([model.random_configuration(k) for k in range(40)])
    V, A = rng.normal(size=(40, 7)), rng.normal(size=(40, 7))
    moving = rbd.estimate_payload(model, 'tool0', Q, rbd.inverse_dynamics(heavy, Q, V, A), V, A)
    # noise-free torques of the model with the payload: a least-squares fit recovers it to
    # rounding (measured 2e-16 mass, 1e-16 m com, 5e-16 kg m^2 inertia; 1e-9 is the bound the
    # static fit below uses too), not to the 1% an identification from noisy logs gets
    assert moving.mass == pytest.approx(2.0, rel=1e-9)
    assert np.allclose(moving.com, truth['com'], rtol=0, atol=1e-9)
    assert np.allclose(moving.inertia, truth['inertia'], rtol=0, atol=1e-9)
    assert moving.residual_rms < 1e-9 and moving.samples == 40
    static = rbd.estimate_payload(model, 'tool0', Q, rbd.gravity_torques(heavy, Q))
    assert static.mass == pytest.approx(2.0, rel=1e-9) and static.inertia is None
    assert np.allclose(static.com, truth['com'], atol=1e-9)
    with pytest.raises(ValueError, match='two orientations'):
        rbd.estimate_payload(model, 'tool0', Q[:1], rbd.gravity_torques(heavy, Q[:1]))


def test_joint_dynamics_override_and_armature_keep_each_other():
    """with_joint_dynamics replaces the named joints' URDF damping and friction (the others
    kept), with_armature keeps an override and a payload, and bad values are named."""
    model = rbd.Model.from_urdf(ARM)
    tuned = model.with_joint_dynamics({'joint_2': 1.5}, {'joint_2': 2.5, 'joint_7': 0.0})
    assert tuned.damping[1] == 1.5 and tuned.friction[1] == 2.5 and tuned.friction[6] == 0.0
    assert np.array_equal(np.delete(tuned.damping, 1), np.delete(model.damping, 1))
    assert tuned.joint['joint_2'].damping == 1.5 and model.joint['joint_2'].damping == 0.5
    v = np.linspace(-1, 1, 7)
    assert np.allclose(rbd.joint_friction_torques(tuned, v),
                       -(tuned.damping * v + tuned.friction * np.sign(v)))
    loaded = tuned.with_payload('tool0', 2.0, [0.0, 0.0, 0.05])
    both = loaded.with_armature({'joint_1': 0.3})
    assert both.armature[0] == 0.3
    assert np.array_equal(both.damping, tuned.damping) and both.total_mass == loaded.total_mass
    q = model.neutral() + 0.3
    assert np.allclose(rbd.gravity_torques(both, q), rbd.gravity_torques(loaded, q))
    for damping, friction, words in (({'elbow': 1.0}, None, "unknown joint 'elbow'"),
                                     ({'tool0_joint': 1.0}, None, 'only a revolute'),
                                     (None, {'joint_1': -1.0}, 'finite and >= 0'),
                                     (None, {'joint_1': 'x'}, 'must be a number')):
        with pytest.raises(ValueError, match=words):
            model.with_joint_dynamics(damping, friction)
