"""Every robot description PyPI's example-robot-data ships loads as published (floating base for
the legged robots, humanoids and flying robots), and its inverse dynamics, gravity torques, mass
matrix, forward dynamics and frame poses equal Pinocchio's (built from the same file, mimic
joints independent, Pinocchio's default) to 1e-9 relative, on random configurations; so do the
derivatives of inverse dynamics, forward dynamics and gravity."""
import zlib

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from corpus import NOT_A_ROBOT, corpus
from pin_oracle import Oracle, close
from test_dynamics_derivatives import (forward_close, pinocchio_aba_derivatives,
                                       pinocchio_rnea_derivatives, solves)

pin = pytest.importorskip('pinocchio')
ROBOTS = corpus()
TOL = 1e-9
CONFIGURATIONS = 3

if not ROBOTS:   # a test-only dependency of the project: its absence is a set-up error
    pytest.fail('example-robot-data is not installed (scripts/setup.sh installs it)',
                pytrace=False)


@pytest.mark.parametrize('name, path, floating', ROBOTS, ids=[r[0] for r in ROBOTS])
def test_public_robot_loads_and_matches_pinocchio(name, path, floating):
    if name in NOT_A_ROBOT:
        with pytest.raises(rbd.ModelError, match=NOT_A_ROBOT[name]):
            rbd.Model.from_urdf(path)
        return
    model = rbd.Model.from_urdf(path, floating_base=floating)
    with open(path, 'rb') as handle:
        xml = handle.read().decode('utf-8')
    oracle = Oracle(model, xml)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    singular = any('mass matrix is singular' in w for w in model.warnings)
    for _ in range(CONFIGURATIONS):
        q = model.random_configuration(rng)
        v, a, tau = rng.normal(size=(3, model.nv))
        assert close(rbd.inverse_dynamics(model, q, v, a), oracle.inverse_dynamics(q, v, a)) < TOL
        zero = np.zeros(model.nv)
        assert close(rbd.gravity_torques(model, q), oracle.inverse_dynamics(q, zero, zero)) < TOL
        M = rbd.mass_matrix(model, q)
        assert close(M, oracle.mass_matrix(q)) < TOL
        if singular:     # joints that move no mass (warned): M is singular, as in Pinocchio
            with pytest.raises(FloatingPointError, match='not positive definite'):
                rbd.forward_dynamics(model, q, v, tau)
        else:
            # FD of an ill-conditioned M (iCub's 1e-20 kg m^2 links: cond(M) ~ 1e9) is only
            # defined to about cond(M) eps: two correct codes differ by that much. The residual
            # ID(FD(tau)) = tau holds to TOL regardless.
            vdot = rbd.forward_dynamics(model, q, v, tau)
            assert close(vdot, oracle.forward_dynamics(q, v, tau)) < max(TOL, 1e-15 * np.linalg.cond(M))
            assert close(rbd.inverse_dynamics(model, q, v, vdot), tau) < TOL
        poses = rbd.frame_poses(model, q)
        oracle.kinematics(q)
        for link in model.frame_names:
            assert close(poses[link], oracle.pd.oMf[oracle.frame_id(link)].homogeneous) < TOL, link


@pytest.mark.parametrize('name, path, floating', [r for r in ROBOTS if r[0] not in NOT_A_ROBOT],
                         ids=[r[0] for r in ROBOTS if r[0] not in NOT_A_ROBOT])
def test_public_robot_derivatives_match_pinocchio(name, path, floating):
    """computeRNEADerivatives, computeGeneralizedGravityDerivatives to 1e-9;
    computeABADerivatives to 1e-9, or where M is ill-conditioned to cond(M) 1e-15 of the
    matrix's scale (forward dynamics' rule above; hextilt, romeo_small and iCub, where ours is
    the closer of the two to an iteratively refined solution), and M dqdd/dq = -dtau/dq (to
    1e-9, or a backward-stable solve's residual for iCub's huge dqdd/dq)."""
    model = rbd.Model.from_urdf(path, floating_base=floating)
    with open(path, 'rb') as handle:
        oracle = Oracle(model, handle.read().decode('utf-8'))
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 1)
    q = model.random_configuration(rng)
    v, a, tau = rng.normal(size=(3, model.nv))
    for x, y in zip(rbd.inverse_dynamics_derivatives(model, q, v, a),
                    pinocchio_rnea_derivatives(oracle, q, v, a)):
        assert close(x, y) < TOL
    dg = pin.computeGeneralizedGravityDerivatives(oracle.pm, oracle.pd, oracle.q(q))
    assert close(rbd.gravity_torques_derivatives(model, q), oracle.P.T @ dg @ oracle.P) < TOL
    if any('mass matrix is singular' in w for w in model.warnings):
        with pytest.raises(FloatingPointError, match='not positive definite'):
            rbd.forward_dynamics_derivatives(model, q, v, tau)
        return
    ours = rbd.forward_dynamics_derivatives(model, q, v, tau)
    for x, y in zip(ours, pinocchio_aba_derivatives(oracle, model, q, v, tau)):
        assert forward_close(model, q, x, y)
    qdd = rbd.forward_dynamics(model, q, v, tau)
    dtau_dq, _, M = rbd.inverse_dynamics_derivatives(model, q, v, qdd)
    assert solves(M, ours[0], -dtau_dq)


def test_readme_lists_every_robot_and_its_warnings():
    """The README's corpus table is what `python test/corpus.py` prints today."""
    import pathlib

    from corpus import summary_rows
    readme = (pathlib.Path(__file__).resolve().parent.parent / 'README.md').read_text()
    table = [line for line in readme.splitlines()
             if line.startswith('| ') and ('.urdf |' in line)]
    assert table == summary_rows()
