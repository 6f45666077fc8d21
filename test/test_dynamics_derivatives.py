"""The analytical derivatives of the dynamics (derivatives.py) against Pinocchio's
computeRNEADerivatives, computeABADerivatives, computeGeneralizedGravityDerivatives and
getFrameVelocityDerivatives (through PinocchioLayout), and against central finite differences
of our own functions, q moved with ``integrate`` (the tangent space), on random trees of every
joint type (fixed and floating base, mimic joints) and on real robots. The whole
example-robot-data corpus is in test_corpus.py."""
import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from oracle_cases import oracle_cases
from pin_oracle import REFS, Oracle, close
from urdf_factory import random_urdf

pin = pytest.importorskip('pinocchio')
TOL = 1e-9


def forward_close(model, q, ours, theirs):
    """1e-9 relative to max(1, |value|), or, where M is ill-conditioned, 1e-15 cond(M)
    relative to the matrix's largest entry: M^-1 X is only defined to about cond(M) eps of
    |X|, so two correct codes differ by that much (test_corpus.py's rule for forward dynamics;
    where they differ beyond 1e-9, ours is the closer to an iteratively refined solution, see
    docs/core.md). The identities M dqdd/dx = -dtau/dx and M M^-1 = 1 hold to 1e-9 whatever
    the conditioning (checked beside)."""
    if close(ours, theirs) < TOL:
        return True
    scale = max(1.0, float(np.abs(theirs).max()))
    error = float(np.abs(ours - theirs).max()) / scale
    bound = 1e-15 * np.linalg.cond(rbd.mass_matrix(model, q))
    assert error < bound, (error, bound)
    return True


@pytest.fixture(params=oracle_cases(60, first_seed=0, link_span=9))
def case(request):
    xml, floating, seed = request.param
    model = rbd.Model.from_urdf(xml, floating_base=floating)
    rng = np.random.default_rng(seed)
    state = dict(q=model.random_configuration(rng), v=rng.normal(size=model.nv),
                 a=rng.normal(size=model.nv), tau=rng.normal(size=model.nv) * 5)
    links = model.frame_names
    f_ext = {links[int(k)]: rng.normal(size=6)
             for k in rng.choice(len(links), size=min(3, len(links)), replace=False)}
    return model, Oracle(model, xml), state, f_ext


def solves(M, X, B):
    """M X = B to 1e-9 relative to max(1, |B|), or, for an ill-conditioned M whose solution X
    is huge (iCub's 1e-20 kg m^2 links: |X| ~ 1e10), with a residual below 1e-15 |M| |X| (a
    backward-stable solve's)."""
    R = M @ X - B
    if close(M @ X, B) < TOL:
        return True
    bound = 1e-15 * float(np.abs(M).max()) * float(np.abs(X).max())
    assert float(np.abs(R).max()) < bound, (float(np.abs(R).max()), bound)
    return True


def pinocchio_rnea_derivatives(oracle, q, v, a, f_ext=None):
    """Pinocchio's (dtau/dq, dtau/dv, M) in our coordinates: P^T X P (a mimic joint moves with
    its leader: v_pin = P v, and its torque acts on the leader)."""
    P = oracle.P
    args = (oracle.pm, oracle.pd, oracle.q(q), oracle.v(v), oracle.v(a))
    if f_ext is not None:
        args += (oracle.fext(f_ext),)
    dq, dv, M = (np.array(x) for x in pin.computeRNEADerivatives(*args))
    M = np.triu(M) + np.triu(M, 1).T        # (Pinocchio fills M's upper triangle)
    return P.T @ dq @ P, P.T @ dv @ P, P.T @ M @ P


def pinocchio_aba_derivatives(oracle, model, q, v, tau, f_ext=None):
    """Pinocchio's (dqdd/dq, dqdd/dv, M^-1) in our coordinates. With mimic joints Pinocchio's
    model moves them on their own, so its ABA answers another question: then -M^-1 dtau/dx at
    a = qdd from its RNEA derivatives and its M, reduced to our coordinates."""
    P = oracle.P
    if not model.has_mimic:
        args = (oracle.pm, oracle.pd, oracle.q(q), oracle.v(v), oracle.v(tau))
        if f_ext is not None:
            args += (oracle.fext(f_ext),)
        dq, dv, Minv = (np.array(x) for x in pin.computeABADerivatives(*args))
        return P.T @ dq @ P, P.T @ dv @ P, P.T @ Minv @ P
    qdd = oracle.forward_dynamics(q, v, tau, f_ext)
    dq, dv, M = pinocchio_rnea_derivatives(oracle, q, v, qdd, f_ext)
    Minv = np.linalg.inv(M)
    return -Minv @ dq, -Minv @ dv, Minv


def test_inverse_dynamics_derivatives_match_pinocchio(case):
    model, oracle, s, f_ext = case
    q, v, a = s['q'], s['v'], s['a']
    for wrenches in (None, f_ext):
        ours = rbd.inverse_dynamics_derivatives(model, q, v, a, wrenches)
        theirs = pinocchio_rnea_derivatives(oracle, q, v, a, wrenches)
        for name, x, y in zip(('dtau_dq', 'dtau_dv', 'M'), ours, theirs):
            assert close(x, y) < TOL, name
    assert close(ours[2], rbd.mass_matrix(model, q)) < TOL
    dg = rbd.gravity_torques_derivatives(model, q)
    theirs = pin.computeGeneralizedGravityDerivatives(oracle.pm, oracle.pd, oracle.q(q))
    assert close(dg, oracle.P.T @ theirs @ oracle.P) < TOL


def test_forward_dynamics_derivatives_match_pinocchio(case):
    model, oracle, s, f_ext = case
    q, v, tau = s['q'], s['v'], s['tau']
    for wrenches in (None, f_ext):
        ours = rbd.forward_dynamics_derivatives(model, q, v, tau, wrenches)
        theirs = pinocchio_aba_derivatives(oracle, model, q, v, tau, wrenches)
        for name, x, y in zip(('dqdd_dq', 'dqdd_dv', 'Minv'), ours, theirs):
            assert forward_close(model, q, x, y), name
        # the identities that hold however M is conditioned
        qdd = rbd.forward_dynamics(model, q, v, tau, wrenches)
        dtau_dq, dtau_dv, M = rbd.inverse_dynamics_derivatives(model, q, v, qdd, wrenches)
        assert solves(M, ours[0], -dtau_dq)
        assert solves(M, ours[1], -dtau_dv)
        assert solves(M, ours[2], np.eye(model.nv))
        assert close(ours[2], ours[2].T) == 0.0


def test_frame_velocity_derivatives_match_pinocchio(case):
    """'world' and 'local' are Pinocchio's. Pinocchio's 'local_world_aligned' holds the
    frame's origin fixed: ours, the derivative of frame_velocity itself, is Pinocchio's plus
    w x dp/dq (w the frame's angular velocity, dp/dq the linear rows of its Jacobian)."""
    model, oracle, s, _ = case
    q, v = s['q'], s['v']
    pin.computeForwardKinematicsDerivatives(oracle.pm, oracle.pd, oracle.q(q), oracle.v(v),
                                            oracle.v(s['a']))
    for link in model.frame_names:
        for ref in rbd.REFERENCES:
            dv_dq, dv_dv = rbd.frame_velocity_derivatives(model, q, v, link, ref)
            pq, pv = (np.asarray(x).reshape(6, -1) @ oracle.P for x in
                      pin.getFrameVelocityDerivatives(oracle.pm, oracle.pd,
                                                      oracle.frame_id(link), REFS[ref]))
            if ref == 'local_world_aligned':
                w = rbd.frame_velocity(model, q, v, link, ref)[3:]
                pq[:3] += np.cross(w, dv_dv[:3].T).T
            assert close(dv_dq, pq) < TOL, (link, ref)
            assert close(dv_dv, pv) < TOL, (link, ref)
            assert close(dv_dv, rbd.frame_jacobian(model, q, link, ref)) < TOL, (link, ref)


# ---- finite differences of our own functions --------------------------------------------------
def central(f, x0, step, n, h=1e-3):
    """Column j: the five-point central difference of f along e_j, x0 moved by step(x0, dx):
    (f(-2h) - 8 f(-h) + 8 f(h) - f(2h)) / 12h, exact to h^4 (1e-12) with round-off of
    eps cond / h (1e-9 for forward dynamics, whose cond(M) is up to 1e4 here)."""
    def column(e):
        f1, f2 = f(step(x0, h * e)), f(step(x0, 2 * h * e))
        g1, g2 = f(step(x0, -h * e)), f(step(x0, -2 * h * e))
        return (g2 - 8.0 * g1 + 8.0 * f1 - f2) / (12.0 * h)
    return np.stack([column(e) for e in np.eye(n)], axis=-1)


def fd_close(analytical, numerical, tol=1e-7):
    """Relative to max(1, |value|): the differences' error above, with a margin."""
    error = close(analytical, numerical, tol)
    assert error < tol, error
    return True


@pytest.mark.parametrize('seed', range(12))
def test_derivatives_equal_finite_differences(seed):
    """Random trees with every joint type (planar and floating joints inside the tree),
    floating bases every other seed and a mimic joint every third: each derivative equals the
    central difference of the function it differentiates, q moved with integrate."""
    xml = random_urdf(500 + seed, n_links=4 + seed % 5, branching=seed % 4 != 0,
                      mimic=seed % 3 == 2)
    model = rbd.Model.from_urdf(xml, floating_base=seed % 2 == 1)
    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng)
    v, a, tau = rng.normal(size=(3, model.nv))
    link = model.frame_names[-1]
    f_ext = {link: rng.normal(size=6)}
    on_q = lambda q0, dq: rbd.integrate(model, q0, dq, 1.0)      # noqa: E731
    on_v = lambda v0, dv: v0 + dv                                  # noqa: E731
    n = model.nv
    dq, dv, M = rbd.inverse_dynamics_derivatives(model, q, v, a, f_ext)
    assert fd_close(dq, central(lambda x: rbd.inverse_dynamics(model, x, v, a, f_ext), q, on_q, n))
    assert fd_close(dv, central(lambda x: rbd.inverse_dynamics(model, q, x, a, f_ext), v, on_v, n))
    assert fd_close(M, central(lambda x: rbd.inverse_dynamics(model, q, v, x, f_ext), a, on_v, n))
    fq, fv, Minv = rbd.forward_dynamics_derivatives(model, q, v, tau, f_ext)
    fd = lambda x, y, t: rbd.forward_dynamics(model, x, y, t, f_ext)   # noqa: E731
    assert fd_close(fq, central(lambda x: fd(x, v, tau), q, on_q, n))
    assert fd_close(fv, central(lambda x: fd(q, x, tau), v, on_v, n))
    assert fd_close(Minv, central(lambda x: fd(q, v, x), tau, on_v, n))
    dg = rbd.gravity_torques_derivatives(model, q)
    assert fd_close(dg, central(lambda x: rbd.gravity_torques(model, x), q, on_q, n))
    for ref in rbd.REFERENCES:
        dv_dq, dv_dv = rbd.frame_velocity_derivatives(model, q, v, link, ref)
        velocity = lambda x, y: rbd.frame_velocity(model, x, y, link, ref)   # noqa: E731
        assert fd_close(dv_dq, central(lambda x: velocity(x, v), q, on_q, n)), ref
        assert fd_close(dv_dv, central(lambda x: velocity(q, x), v, on_v, n)), ref
    # a frame's pose moves by its 'local' Jacobian: oMf(q (+) dq) = oMf(q) exp(J dq)
    T0 = rbd.frame_pose(model, q, link)

    def local_twist(x):
        T = np.linalg.solve(T0, rbd.frame_pose(model, x, link))   # oMf(q)^-1 oMf(x)
        R = T[:3, :3]
        w = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
        return np.concatenate([T[:3, 3], w])                        # (first order: log)
    assert fd_close(rbd.frame_jacobian(model, q, link, 'local'), central(local_twist, q, on_q, n))


# ---- batches, arguments, errors -----------------------------------------------------------------
@pytest.mark.parametrize('mimic', [False, True])
def test_batches_equal_single_calls(mimic, batch_path):
    xml = random_urdf(77, n_links=7, mimic=mimic)
    model = rbd.Model.from_urdf(xml, floating_base=True)
    assert model.has_mimic == mimic
    rng = np.random.default_rng(1)
    N = 40          # over 32 rows: both threads' chunks
    Q = np.stack([model.random_configuration(rng) for _ in range(N)])
    V, A = rng.normal(size=(2, N, model.nv))
    link = model.frame_names[-1]
    f_rows = {link: rng.normal(size=(N, 6))}
    batched = [rbd.inverse_dynamics_derivatives(model, Q, V, A),
               rbd.inverse_dynamics_derivatives(model, Q, V, A, f_rows),
               rbd.forward_dynamics_derivatives(model, Q, V, A),
               rbd.forward_dynamics_derivatives(model, Q, V, A, f_rows),
               (rbd.gravity_torques_derivatives(model, Q),)]
    for n in range(N):
        f_n = {link: f_rows[link][n]}
        single = [rbd.inverse_dynamics_derivatives(model, Q[n], V[n], A[n]),
                  rbd.inverse_dynamics_derivatives(model, Q[n], V[n], A[n], f_n),
                  rbd.forward_dynamics_derivatives(model, Q[n], V[n], A[n]),
                  rbd.forward_dynamics_derivatives(model, Q[n], V[n], A[n], f_n),
                  (rbd.gravity_torques_derivatives(model, Q[n]),)]
        for many, one in zip(batched, single):
            for x, y in zip(many, one):
                assert x.shape == (N, model.nv, model.nv)
                assert np.allclose(x[n], y, rtol=1e-13, atol=1e-12)
    for ref in ('world', 'local', 'local_world_aligned'):
        many = rbd.frame_velocity_derivatives(model, Q, V, link, ref)
        for n in range(N):
            for x, y in zip(many, rbd.frame_velocity_derivatives(model, Q[n], V[n], link, ref)):
                assert x.shape == (N, 6, model.nv) and np.array_equal(x[n], y)


def test_workspaces_and_lists_give_the_same_numbers():
    model = rbd.Model.from_urdf(random_urdf(5, n_links=6), floating_base=True)
    rng = np.random.default_rng(2)
    q, v, a = model.random_configuration(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    data = model.create_data()
    for fn in (rbd.inverse_dynamics_derivatives, rbd.forward_dynamics_derivatives):
        reference = fn(model, q, v, a)
        for other in (fn(model, q, v, a, data=data), fn(model, list(q), list(v), list(a))):
            assert all(np.array_equal(x, y) for x, y in zip(reference, other))
    assert np.array_equal(rbd.gravity_torques_derivatives(model, q),
                          rbd.gravity_torques_derivatives(model, q, data=data))


def test_bad_input_is_named():
    model = rbd.Model.from_urdf(random_urdf(6, n_links=5), floating_base=True)
    q, z = model.neutral(), np.zeros(model.nv)
    bad = z.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match='v contains NaN'):
        rbd.inverse_dynamics_derivatives(model, q, bad, z)
    with pytest.raises(ValueError, match='tau contains NaN'):
        rbd.forward_dynamics_derivatives(model, q, z, bad)
    with pytest.raises(ValueError, match='a contains NaN'):
        rbd.inverse_dynamics_derivatives(model, q, z, bad)
    with pytest.raises(ValueError, match=r'q must have shape'):
        rbd.gravity_torques_derivatives(model, q[:-1])
    zero_quaternion = q.copy()
    zero_quaternion[3:7] = 0.0
    with pytest.raises(ValueError, match='zero quaternion'):
        rbd.forward_dynamics_derivatives(model, zero_quaternion, z, z)
    Q = np.stack([q, q, q])
    Q[1, 0] = np.inf
    with pytest.raises(ValueError, match=r'q contains NaN or inf \(configuration 1'):
        rbd.inverse_dynamics_derivatives(model, Q, np.zeros((3, model.nv)), np.zeros((3, model.nv)))
    with pytest.raises(ValueError, match='f_ext names unknown link'):
        rbd.forward_dynamics_derivatives(model, q, z, z, {'nowhere': np.zeros(6)})
    with pytest.raises(ValueError, match=r'q contains NaN or inf \(configuration 1'):
        rbd.frame_velocity_derivatives(model, Q, np.zeros((3, model.nv)), model.frame_names[0])
    with pytest.raises(ValueError, match='different batch shape'):
        rbd.frame_velocity_derivatives(model, Q, np.zeros((2, model.nv)), model.frame_names[0])
    with pytest.raises(ValueError, match='reference must be one of'):
        rbd.frame_velocity_derivatives(model, q, z, model.frame_names[0], 'body')


def test_a_singular_mass_matrix_raises():
    """A joint that moves no mass: M is singular, as forward_dynamics says."""
    xml = '''<robot name="r"><link name="a"/><link name="b"/>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
      <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>'''
    model = rbd.Model.from_urdf(xml)
    with pytest.raises(FloatingPointError, match='not positive definite'):
        rbd.forward_dynamics_derivatives(model, np.zeros(1), np.zeros(1), np.zeros(1))
    dq, dv, M = rbd.inverse_dynamics_derivatives(model, np.zeros(1), np.zeros(1), np.zeros(1))
    assert np.array_equal(M, np.zeros((1, 1)))


def test_armature_enters_m_and_nothing_else():
    model = rbd.Model.from_urdf(random_urdf(8, n_links=6), floating_base=False)
    geared = model.with_armature({name: 0.3 for name in model.joint_names})
    rng = np.random.default_rng(3)
    q, v, a = model.random_configuration(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    plain, with_armature = (rbd.inverse_dynamics_derivatives(m, q, v, a) for m in (model, geared))
    assert np.allclose(with_armature[2] - plain[2], np.diag(geared.armature), atol=1e-14)
    assert close(with_armature[0], plain[0]) == 0.0 and close(with_armature[1], plain[1]) == 0.0
    fq, fv, Minv = rbd.forward_dynamics_derivatives(geared, q, v, a)
    assert close(Minv, np.linalg.inv(rbd.mass_matrix(geared, q))) < TOL


@pytest.mark.parametrize('seed', range(6))
def test_integrate_derivatives_match_pinocchio_and_finite_differences(seed):
    """integrate_derivatives: Pinocchio's dIntegrate (ARG0, ARG1 times dt) and the central
    differences of difference(q_next, integrate(q (+) dq, v, dt)): the tangent space at the
    result. Floating and planar joints inside the tree, floating bases, large and tiny v."""
    xml = random_urdf(900 + seed, n_links=6, joint_types=('revolute', 'planar', 'floating',
                                                          'prismatic', 'continuous'))
    model = rbd.Model.from_urdf(xml, floating_base=seed % 2 == 0)
    oracle = Oracle(model, xml)
    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng)
    for scale, dt in ((3.0, 0.7), (1e-6, 0.5), (0.0, 1e-3)):
        v = rng.normal(size=model.nv) * scale
        d_q, d_v = rbd.integrate_derivatives(model, q, v, dt)
        P = oracle.P
        arg0, arg1 = (pin.dIntegrate(oracle.pm, oracle.q(q), oracle.v(v) * dt, arg)
                      for arg in (pin.ArgumentPosition.ARG0, pin.ArgumentPosition.ARG1))
        assert close(d_q, P.T @ arg0 @ P) < TOL
        assert close(d_v, dt * P.T @ arg1 @ P) < TOL
        q_next = rbd.integrate(model, q, v, dt)
        after = lambda x: rbd.difference(model, q_next, x)           # noqa: E731
        assert fd_close(d_q, central(lambda x: after(rbd.integrate(model, x, v, dt)), q,
                                     lambda q0, dq: rbd.integrate(model, q0, dq, 1.0), model.nv))
        assert fd_close(d_v, central(lambda x: after(rbd.integrate(model, q, x, dt)), v,
                                     lambda v0, dv: v0 + dv, model.nv))
