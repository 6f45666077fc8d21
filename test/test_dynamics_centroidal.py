"""The centre of mass Jacobian, the centroidal momentum and the centroidal momentum matrix
against Pinocchio (jacobianCenterOfMass, computeCentroidalMomentum, ccrba) to 1e-9 relative,
on random trees (every joint type, fixed and floating base, mimic joints), the real robots
and every example-robot-data URDF; batches equal single calls; the identities that tie them
together (A_G v = h_G, m J_com = A_G's linear rows, J_com v = d com / dt)."""
import zlib

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from corpus import NOT_A_ROBOT, corpus
from oracle_cases import build, oracle_cases
from pin_oracle import Oracle, close

pytest.importorskip('pinocchio')
TOL = 1e-9
CORPUS = [r for r in corpus() if r[0] not in NOT_A_ROBOT]


@pytest.fixture(params=oracle_cases())
def case(request):
    return build(request.param)


def test_centroidal_quantities_match_pinocchio(case):
    model, oracle, seed = case
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, v = model.random_configuration(rng), rng.normal(size=model.nv)
        assert close(rbd.center_of_mass_jacobian(model, q), oracle.center_of_mass_jacobian(q)) < TOL
        assert close(rbd.centroidal_momentum(model, q, v), oracle.centroidal_momentum(q, v)) < TOL
        A = rbd.centroidal_momentum_matrix(model, q)
        assert close(A, oracle.centroidal_momentum_matrix(q)) < TOL


def test_centroidal_identities(case):
    model, _, seed = case
    rng = np.random.default_rng(seed + 1)
    q, v = model.random_configuration(rng), rng.normal(size=model.nv)
    A, J = rbd.centroidal_momentum_matrix(model, q), rbd.center_of_mass_jacobian(model, q)
    assert A.shape == (6, model.nv) and J.shape == (3, model.nv)
    assert close(A @ v, rbd.centroidal_momentum(model, q, v)) < TOL
    assert close(A[:3], model.total_mass * J) < TOL
    # J v is the centre of mass's velocity (central differences along the manifold)
    h = 1e-6
    rate = (rbd.center_of_mass(model, rbd.integrate(model, q, v, h))
            - rbd.center_of_mass(model, rbd.integrate(model, q, v, -h))) / (2 * h)
    assert close(J @ v, rate, tol=1e-6) < 1e-6


def test_batches_equal_single_calls_and_data_is_honoured(case):
    model, _, seed = case
    rng = np.random.default_rng(seed + 2)
    Q = np.stack([model.random_configuration(rng) for _ in range(4)])
    V = rng.normal(size=(4, model.nv))
    data = model.create_data()
    J = rbd.center_of_mass_jacobian(model, Q)
    H = rbd.centroidal_momentum(model, Q, V, data=data)
    A = rbd.centroidal_momentum_matrix(model, Q)
    assert J.shape == (4, 3, model.nv) and H.shape == (4, 6) and A.shape == (4, 6, model.nv)
    for n in range(4):
        assert np.array_equal(J[n], rbd.center_of_mass_jacobian(model, Q[n], data=data))
        assert np.array_equal(H[n], rbd.centroidal_momentum(model, Q[n], V[n]))
        assert np.array_equal(A[n], rbd.centroidal_momentum_matrix(model, Q[n].tolist()))


@pytest.mark.parametrize('name, path, floating', CORPUS, ids=[r[0] for r in CORPUS])
def test_centroidal_quantities_match_pinocchio_on_the_corpus(name, path, floating):
    model = rbd.Model.from_urdf(path, floating_base=floating)
    with open(path, 'rb') as handle:
        oracle = Oracle(model, handle.read().decode('utf-8'))
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    q, v = model.random_configuration(rng), rng.normal(size=model.nv)
    assert close(rbd.center_of_mass_jacobian(model, q), oracle.center_of_mass_jacobian(q)) < TOL
    assert close(rbd.centroidal_momentum(model, q, v), oracle.centroidal_momentum(q, v)) < TOL
    assert close(rbd.centroidal_momentum_matrix(model, q),
                 oracle.centroidal_momentum_matrix(q)) < TOL


def test_bad_arguments():
    model = rbd.Model.from_urdf(oracle_cases(2)[1].values[0][0], floating_base=True)
    with pytest.raises(ValueError, match='velocity-sized'):
        rbd.center_of_mass_jacobian(model, np.zeros(model.nv))
    with pytest.raises(ValueError, match='v contains NaN'):
        rbd.centroidal_momentum(model, model.q_neutral, np.full(model.nv, np.nan))
    with pytest.raises(ValueError, match=r'q contains NaN or inf \(configuration 1 of the batch\)'):
        rbd.centroidal_momentum_matrix(model, np.stack([model.q_neutral,
                                                        np.full(model.nq, np.inf)]))
