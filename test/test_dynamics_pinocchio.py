"""Every public algorithm against Pinocchio (the oracle) to 1e-9 relative to max(1, |value|):
60 random trees (chains and branching; revolute, continuous, prismatic, fixed, planar,
floating joints; random axes and inertial rpy; fixed and floating base; external wrenches)
and real robots (an arm with a mimic finger, a quadruped and a 43-joint humanoid)."""

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from oracle_cases import oracle_cases
from pin_oracle import Oracle, close

TOL = 1e-9


@pytest.fixture(params=oracle_cases(60, first_seed=0, link_span=9))
def case(request):
    xml, floating, seed = request.param
    model = rbd.Model.from_urdf(xml, floating_base=floating)
    rng = np.random.default_rng(seed)
    state = dict(q=model.random_configuration(rng), v=rng.normal(size=model.nv),
                 a=rng.normal(size=model.nv), tau=rng.normal(size=model.nv) * 5)
    links = model.frame_names
    f_ext = {links[int(k)]: rng.normal(size=6) for k in rng.choice(len(links), size=min(3, len(links)),
                                                                    replace=False)}
    return model, Oracle(model, xml), state, f_ext


def test_dynamics_match_pinocchio(case):
    model, oracle, s, f_ext = case
    q, v, a, tau = s['q'], s['v'], s['a'], s['tau']
    zero = np.zeros(model.nv)
    assert close(rbd.inverse_dynamics(model, q, v, a), oracle.inverse_dynamics(q, v, a)) < TOL
    assert close(rbd.inverse_dynamics(model, q, v, a, f_ext),
                 oracle.inverse_dynamics(q, v, a, f_ext)) < TOL
    assert close(rbd.gravity_torques(model, q), oracle.inverse_dynamics(q, zero, zero)) < TOL
    assert close(rbd.nonlinear_effects(model, q, v), oracle.inverse_dynamics(q, v, zero)) < TOL
    assert close(rbd.mass_matrix(model, q), oracle.mass_matrix(q)) < TOL
    assert close(rbd.coriolis_matrix(model, q, v), oracle.coriolis_matrix(q, v)) < TOL
    expected = oracle.forward_dynamics(q, v, tau, f_ext)
    assert close(rbd.forward_dynamics(model, q, v, tau, f_ext), expected) < TOL
    assert close(rbd.forward_dynamics(model, q, v, tau, f_ext, method='crba'), expected) < TOL
    assert close(rbd.forward_dynamics(model, q, v, tau), oracle.forward_dynamics(q, v, tau)) < TOL


def test_kinematics_match_pinocchio(case):
    model, oracle, s, _ = case
    q, v, a = s['q'], s['v'], s['a']
    poses = rbd.frame_poses(model, q)
    assert set(poses) == set(model.frame_names)
    reused = rbd.frame_poses(model, model.neutral())
    assert rbd.frame_poses(model, q, out=reused) is reused     # in place, same values
    assert np.array_equal(reused.array, poses.array)
    for link in model.frame_names:
        assert close(poses[link], oracle.frame_pose(q, link)) < TOL
        assert close(rbd.frame_pose(model, q, link), poses[link]) == 0.0
        for ref in rbd.REFERENCES:
            assert close(rbd.frame_velocity(model, q, v, link, ref),
                         oracle.frame_velocity(q, v, link, ref)) < TOL, (link, ref)
            assert close(rbd.frame_acceleration(model, q, v, a, link, ref),
                         oracle.frame_acceleration(q, v, a, link, ref)) < TOL, (link, ref)
            assert close(rbd.frame_jacobian(model, q, link, ref),
                         oracle.frame_jacobian(q, link, ref)) < TOL, (link, ref)


def test_mass_and_energy_match_pinocchio(case):
    model, oracle, s, _ = case
    q, v = s['q'], s['v']
    assert close(rbd.center_of_mass(model, q), oracle.center_of_mass(q)) < TOL
    assert close(rbd.kinetic_energy(model, q, v), oracle.kinetic_energy(q, v)) < TOL
    assert close(rbd.potential_energy(model, q), oracle.potential_energy(q)) < TOL
    assert close(model.total_mass, oracle.total_mass()) < TOL


def test_integrate_matches_pinocchio(case):
    import pinocchio as pin
    model, oracle, s, _ = case
    q, v = s['q'], s['v']
    for dt in (1e-3, 0.3):
        ours = rbd.integrate(model, q, v, dt)
        theirs = pin.integrate(oracle.pm, oracle.q(q), oracle.v(v) * dt)
        # compare as configurations: quaternion sign is arbitrary, angles through cos/sin
        for info in model.joints:
            if info.q_index is None:
                continue
            jm = oracle.pm.joints[oracle.pm.getJointId(info.name)]
            mine = oracle.q(ours)[jm.idx_q:jm.idx_q + jm.nq]
            other = theirs[jm.idx_q:jm.idx_q + jm.nq]
            if info.type == 'floating':
                assert close(mine[:3], other[:3]) < TOL
                assert min(close(mine[3:], other[3:]), close(mine[3:], -other[3:])) < TOL
            else:
                assert close(mine, other) < TOL, info.name


def test_armature_matches_pinocchio(case):
    """Armature (reflected rotor inertia) adds to M's diagonal in RNEA, CRBA, ABA and the
    kinetic energy, as Pinocchio's model.armature does."""
    model, oracle, s, f_ext = case
    rng = np.random.default_rng(11)
    moving = [j.name for j in model.joints if j.nv and j.name != rbd.FLOATING_BASE_JOINT] + \
        [j.name for j in model.joints if j.mimic is not None]
    armature = {name: float(rng.uniform(0.01, 0.5)) for name in moving}
    geared = model.with_armature(armature)
    for jid in range(1, oracle.pm.njoints):
        name = oracle.pm.names[jid]
        jm = oracle.pm.joints[jid]
        oracle.pm.armature[jm.idx_v:jm.idx_v + jm.nv] = armature.get(name, 0.0)
    oracle.pd = oracle.pm.createData()
    oracle.model = geared
    q, v, a, tau = s['q'], s['v'], s['a'], s['tau']
    assert close(np.diag(oracle.mass_matrix(q) - rbd.mass_matrix(model, q)), geared.armature) < TOL
    assert close(rbd.inverse_dynamics(geared, q, v, a), oracle.inverse_dynamics(q, v, a)) < TOL
    assert close(rbd.mass_matrix(geared, q), oracle.mass_matrix(q)) < TOL
    expected = oracle.forward_dynamics(q, v, tau, f_ext)
    assert close(rbd.forward_dynamics(geared, q, v, tau, f_ext), expected) < TOL
    assert close(rbd.forward_dynamics(geared, q, v, tau, f_ext, method='crba'), expected) < TOL
    assert close(rbd.inverse_dynamics(geared, q, v, rbd.forward_dynamics(geared, q, v, tau)),
                 tau) < TOL
    M = rbd.mass_matrix(geared, q)
    assert close(rbd.kinetic_energy(geared, q, v), 0.5 * v @ M @ v) < TOL
    assert close(rbd.gravity_torques(geared, q), rbd.gravity_torques(model, q)) == 0.0


def test_inertial_regressor_matches_pinocchio_column_for_column(case):
    """Y pi = ID without the armature's term, and each body's ten columns equal Pinocchio's
    computeJointTorqueRegressor block of the joint that moves it (bodies matched by the
    joint's child link; rows mapped to our coordinates as every torque is)."""
    import pinocchio as pin
    model, oracle, s, _ = case
    q, v, a = s['q'], s['v'], s['a']
    Y = rbd.inertial_regressor(model, q, v, a)
    assert Y.shape == (model.nv, 10 * len(model.body_names))
    tau = rbd.inverse_dynamics(model, q, v, a)
    if not model.has_mimic:
        assert close(Y @ model.inertial_parameters() + model.armature * a, tau) < TOL
    Yp = np.asarray(pin.computeJointTorqueRegressor(oracle.pm, oracle.pd, oracle.q(q),
                                                    oracle.v(v), oracle.v(a)))
    Yp = Yp.reshape(oracle.pm.nv, -1)       # (one joint: pinocchio returns a vector)
    for j in range(1, oracle.pm.njoints):
        body = model.body_names.index(model.joint[oracle.pm.names[j]].child)
        assert close(Y[:, 10 * body:10 * body + 10], oracle.tau(Yp[:, 10 * (j - 1):10 * j])) \
            < TOL, oracle.pm.names[j]
    # the parameters in Pinocchio's layout, body by body
    for j in range(1, oracle.pm.njoints):
        body = model.body_names.index(model.joint[oracle.pm.names[j]].child)
        assert close(model.inertial_parameters()[10 * body:10 * body + 10],
                     oracle.pm.inertias[j].toDynamicParameters()) < TOL
