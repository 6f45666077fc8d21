"""Identities that hold for any correct implementation, on random models: M SPD,
ID(FD(tau)) = tau, dM/dt - 2C skew, J v = frame velocity, finite differences of poses and
velocities, energy balance and conservation, mimic = constrained model, planar joints about
any axis, batches = single calls, and the compiled and interpreted code paths agree."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from urdf_factory import random_urdf

SEEDS = range(12)


def _model(seed, floating=None, **kw):
    floating = seed % 2 == 1 if floating is None else floating
    kw.setdefault('planar_axis_z', False)
    return rbd.Model.from_urdf(random_urdf(seed, n_links=4 + seed % 6, **kw),
                               floating_base=floating)


def _state(model, seed):
    rng = np.random.default_rng(100 + seed)
    return (model.random_configuration(rng), rng.normal(size=model.nv),
            rng.normal(size=model.nv), rng.normal(size=model.nv))


def _rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / np.maximum(1.0, np.abs(b))))


@pytest.mark.parametrize('seed', SEEDS)
def test_mass_matrix_symmetric_positive_definite(seed):
    model = _model(seed)
    q = _state(model, seed)[0]
    M = rbd.mass_matrix(model, q)
    assert np.array_equal(M, M.T)
    assert np.linalg.eigvalsh(M).min() > 0


@pytest.mark.parametrize('seed', SEEDS)
def test_inverse_of_forward_dynamics(seed):
    model = _model(seed)
    q, v, _, tau = _state(model, seed)
    f_ext = {model.frame_names[-1]: np.arange(6.0) - 2.5}
    for method in ('aba', 'crba'):
        qdd = rbd.forward_dynamics(model, q, v, tau, f_ext, method=method)
        assert _rel(rbd.inverse_dynamics(model, q, v, qdd, f_ext), tau) < 1e-9


@pytest.mark.parametrize('seed', SEEDS)
def test_mass_matrix_derivative_minus_twice_coriolis_is_skew(seed):
    model = _model(seed)
    q, v, _, _ = _state(model, seed)
    h = 1e-6
    dM = (rbd.mass_matrix(model, rbd.integrate(model, q, v, h))
          - rbd.mass_matrix(model, rbd.integrate(model, q, v, -h))) / (2 * h)
    C = rbd.coriolis_matrix(model, q, v)
    assert np.abs(dM - C - C.T).max() < 1e-6 * max(1.0, np.abs(dM).max())
    N = dM - 2 * C
    assert np.abs(N + N.T).max() < 1e-6 * max(1.0, np.abs(dM).max())
    # and C v is the velocity part of the nonlinear effects
    g = rbd.gravity_torques(model, q)
    assert _rel(C @ v + g, rbd.nonlinear_effects(model, q, v)) < 1e-9


@pytest.mark.parametrize('seed', SEEDS)
def test_jacobian_times_velocity_is_frame_velocity(seed):
    model = _model(seed)
    q, v, _, _ = _state(model, seed)
    for frame in model.frame_names:
        for ref in rbd.REFERENCES:
            J = rbd.frame_jacobian(model, q, frame, ref)
            assert J.shape == (6, model.nv)
            assert _rel(J @ v, rbd.frame_velocity(model, q, v, frame, ref)) < 1e-9


def _log_rotation(R):
    angle = np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1))
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / 2
    return w if angle < 1e-12 else w * angle / np.sin(angle)


@pytest.mark.parametrize('seed', SEEDS)
def test_finite_differences_of_kinematics(seed):
    """Pose derivative = velocity (LWA); velocity derivative = classical acceleration."""
    model = _model(seed)
    q, v, a, _ = _state(model, seed)
    h = 1e-5
    # second-order accurate path on the manifold: q(t) = q (+) (v t + a t^2 / 2), v(t) = v + a t
    q_plus = rbd.integrate(model, q, v * h + a * h * h / 2, 1.0)
    q_minus = rbd.integrate(model, q, -v * h + a * h * h / 2, 1.0)
    for frame in model.frame_names:
        T1, T0 = rbd.frame_pose(model, q_plus, frame), rbd.frame_pose(model, q_minus, frame)
        twist = rbd.frame_velocity(model, q, v, frame, 'local_world_aligned')
        assert _rel((T1[:3, 3] - T0[:3, 3]) / (2 * h), twist[:3]) < 1e-6
        assert _rel(_log_rotation(T1[:3, :3] @ T0[:3, :3].T) / (2 * h), twist[3:]) < 1e-6
        v1 = rbd.frame_velocity(model, q_plus, v + a * h, frame, 'local_world_aligned')
        v0 = rbd.frame_velocity(model, q_minus, v - a * h, frame, 'local_world_aligned')
        acc = rbd.frame_acceleration(model, q, v, a, frame, 'local_world_aligned')
        assert _rel((v1 - v0) / (2 * h), acc) < 1e-5


@pytest.mark.parametrize('seed', SEEDS)
def test_energy_balance(seed):
    """d/dt (kinetic + potential) = v . tau along forward dynamics (with gravity)."""
    model = _model(seed)
    q, v, _, tau = _state(model, seed)
    a = rbd.forward_dynamics(model, q, v, tau)
    h = 1e-5

    def energy(t):
        qt = rbd.integrate(model, q, v * t + a * t * t / 2, 1.0)
        return rbd.kinetic_energy(model, qt, v + a * t) + rbd.potential_energy(model, qt)
    power = (energy(h) - energy(-h)) / (2 * h)
    assert abs(power - v @ tau) < 1e-6 * max(1.0, abs(v @ tau))


@pytest.mark.parametrize('seed', [0, 2, 3, 5])
def test_energy_conserved_without_gravity_or_torque(seed):
    """RK4 on the manifold for 0.3 s: kinetic energy drifts by less than 1e-7 relative."""
    xml = random_urdf(seed, n_links=5, joint_types=('revolute', 'continuous', 'prismatic', 'fixed'))
    model = rbd.Model.from_urdf(xml, floating_base=seed % 2 == 1, gravity=(0, 0, 0))
    q, v, _, _ = _state(model, seed)
    zero = np.zeros(model.nv)
    e0 = rbd.kinetic_energy(model, q, v)
    dt = 1e-3
    for _ in range(300):
        # RK4 in the tangent space at q (exact to 4th order for these Lie groups at small dt)
        k1v, k1a = v, rbd.forward_dynamics(model, q, v, zero)
        q2 = rbd.integrate(model, q, k1v, dt / 2)
        k2v, k2a = v + dt / 2 * k1a, rbd.forward_dynamics(model, q2, v + dt / 2 * k1a, zero)
        q3 = rbd.integrate(model, q, k2v, dt / 2)
        k3v, k3a = v + dt / 2 * k2a, rbd.forward_dynamics(model, q3, v + dt / 2 * k2a, zero)
        q4 = rbd.integrate(model, q, k3v, dt)
        k4v, k4a = v + dt * k3a, rbd.forward_dynamics(model, q4, v + dt * k3a, zero)
        q = rbd.integrate(model, q, (k1v + 2 * k2v + 2 * k3v + k4v) / 6, dt)
        v = v + dt / 6 * (k1a + 2 * k2a + 2 * k3a + k4a)
    assert abs(rbd.kinetic_energy(model, q, v) - e0) < 1e-7 * e0


@pytest.mark.parametrize('seed', [4, 9, 14, 19])
def test_mimic_model_equals_constrained_model(seed):
    """A mimic joint is the constraint q_m = k q_l + c on the same tree without the mimic."""
    xml = random_urdf(seed, n_links=6, mimic=True)
    assert '<mimic' in xml
    mimic = rbd.Model.from_urdf(xml)
    free = rbd.Model.from_urdf(re.sub(r'<mimic [^>]*/>', '', xml))
    assert mimic.nv == free.nv - 1 and mimic.has_mimic
    G = mimic.mimic_map                       # v_free = G v
    q, v, a, tau = _state(mimic, seed)
    q_free = np.zeros(free.nq)
    for name in free.joint_names:
        info_free, info = free.joint[name], mimic.joint[name]
        if info.mimic is not None:
            leader, k, c = info.mimic
            q_free[info_free.q_index] = k * q[mimic.joint[leader].q_index] + c
        else:
            q_free[info_free.q_index:info_free.q_index + info_free.nq] = \
                q[info.q_index:info.q_index + info.nq]
    assert _rel(rbd.inverse_dynamics(mimic, q, v, a),
                G.T @ rbd.inverse_dynamics(free, q_free, G @ v, G @ a)) < 1e-9
    M = G.T @ rbd.mass_matrix(free, q_free) @ G
    assert _rel(rbd.mass_matrix(mimic, q), M) < 1e-9
    bias = G.T @ rbd.nonlinear_effects(free, q_free, G @ v)
    assert _rel(rbd.forward_dynamics(mimic, q, v, tau), np.linalg.solve(M, tau - bias)) < 1e-9
    for frame in mimic.frame_names:
        assert _rel(rbd.frame_pose(mimic, q, frame), rbd.frame_pose(free, q_free, frame)) < 1e-12
    positions = mimic.mimic_positions(q)
    assert set(positions) == {j.name for j in mimic.joints if j.mimic}


def _rpy(R):
    return (np.arctan2(R[2, 1], R[2, 2]), np.arcsin(-np.clip(R[2, 0], -1, 1)),
            np.arctan2(R[1, 0], R[0, 0]))


@pytest.mark.parametrize('axis', [(1, 0, 0), (0, -1, 0), (0, 0, -1), (0.3, -0.5, 0.8)])
def test_planar_joint_about_any_axis(axis):
    """Planar about n == fixed rotation R_n, planar about z, fixed R_n^T (CONVENTIONS: x, y
    along the first two columns of the minimal rotation taking z to n)."""
    from rbd_ros.dynamics.model import _planar_basis
    n = np.asarray(axis, float) / np.linalg.norm(axis)
    e1, e2 = _planar_basis(n)
    Rn = np.column_stack([e1, e2, n])
    inertial = ('<inertial><origin xyz="0.1 0.02 -0.03" rpy="0.1 0.2 0.3"/><mass value="1.5"/>'
                '<inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.04"/>'
                '</inertial>')
    head = (f'<robot name="p"><link name="base"/><link name="body">{inertial}</link>'
            f'<link name="tip">{inertial}</link>'
            '<joint name="tip_joint" type="revolute"><parent link="body"/><child link="tip"/>'
            '<origin xyz="0.2 0 0.1"/><axis xyz="0 1 0"/>'
            '<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
    direct = head + (f'<joint name="slide" type="planar"><parent link="base"/><child link="body"/>'
                     f'<origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.1"/><axis xyz="{n[0]} {n[1]} {n[2]}"/>'
                     '</joint></robot>')
    r1, r2 = ' '.join(map(str, _rpy(Rn))), ' '.join(map(str, _rpy(Rn.T)))
    composed = head + ('<link name="in"/><link name="out"/>'
                       '<joint name="a" type="fixed"><parent link="base"/><child link="in"/>'
                       f'<origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.1"/></joint>'
                       '<joint name="b" type="fixed"><parent link="in"/><child link="out"/>'
                       f'<origin rpy="{r1}"/></joint>'
                       '<joint name="slide" type="planar"><parent link="out"/><child link="mid"/>'
                       '<axis xyz="0 0 1"/></joint><link name="mid"/>'
                       '<joint name="c" type="fixed"><parent link="mid"/><child link="body"/>'
                       f'<origin rpy="{r2}"/></joint></robot>')
    A, B = rbd.Model.from_urdf(direct), rbd.Model.from_urdf(composed)
    assert A.nq == B.nq == 4
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v, a = rng.normal(size=4), rng.normal(size=4), rng.normal(size=4)
        assert _rel(rbd.inverse_dynamics(A, q, v, a), rbd.inverse_dynamics(B, q, v, a)) < 1e-9
        assert _rel(rbd.frame_pose(A, q, 'tip'), rbd.frame_pose(B, q, 'tip')) < 1e-9
        assert _rel(rbd.integrate(A, q, v, 0.3), rbd.integrate(B, q, v, 0.3)) < 1e-12


@pytest.mark.parametrize('seed', [1, 6])
def test_batches_equal_single_calls(seed, batch_path):
    model = _model(seed, mimic=seed == 6)
    rng = np.random.default_rng(seed)
    N = 5
    Q = np.array([model.random_configuration(rng) for _ in range(N)])
    V, A, T = (rng.normal(size=(N, model.nv)) for _ in range(3))
    link = model.frame_names[-1]
    F = {link: rng.normal(size=(N, 6))}

    def each(fn, *args, f_ext=None):
        return np.array([fn(model, *(x[n] for x in args),
                            **({} if f_ext is None else {'f_ext': {link: f_ext[link][n]}}))
                         for n in range(N)])
    pairs = [
        (rbd.inverse_dynamics(model, Q, V, A, F), each(rbd.inverse_dynamics, Q, V, A, f_ext=F)),
        (rbd.gravity_torques(model, Q), each(rbd.gravity_torques, Q)),
        (rbd.nonlinear_effects(model, Q, V), each(rbd.nonlinear_effects, Q, V)),
        (rbd.mass_matrix(model, Q), each(rbd.mass_matrix, Q)),
        (rbd.coriolis_matrix(model, Q, V), each(rbd.coriolis_matrix, Q, V)),
        (rbd.forward_dynamics(model, Q, V, T, F), each(rbd.forward_dynamics, Q, V, T, f_ext=F)),
        (rbd.forward_dynamics(model, Q, V, T, method='crba'), each(rbd.forward_dynamics, Q, V, T)),
        (rbd.center_of_mass(model, Q), each(rbd.center_of_mass, Q)),
        (rbd.kinetic_energy(model, Q, V), each(rbd.kinetic_energy, Q, V)),
        (rbd.potential_energy(model, Q), each(rbd.potential_energy, Q)),
        (rbd.integrate(model, Q, V, 0.01), np.array([rbd.integrate(model, Q[n], V[n], 0.01)
                                                     for n in range(N)])),
    ]
    for batched, single in pairs:
        assert batched.shape == single.shape
        assert _rel(batched, single) < 1e-12


_SCRIPT = r'''
import json, sys, numpy as np
sys.path.insert(0, sys.argv[1])
import rbd_ros.dynamics as rbd
from urdf_factory import random_urdf
out = {'jit': rbd.JIT_ENABLED, 'ir_inlining': rbd._jit.IR_INLINING}
for seed in (3, 8):
    m = rbd.Model.from_urdf(random_urdf(seed, n_links=6, mimic=seed == 8), floating_base=seed == 3)
    rng = np.random.default_rng(seed)
    q, v, a = m.random_configuration(rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
    out[seed] = [rbd.inverse_dynamics(m, q, v, a).tolist(), rbd.mass_matrix(m, q).tolist(),
                 rbd.forward_dynamics(m, q, v, a).tolist(), rbd.coriolis_matrix(m, q, v).tolist(),
                 rbd.frame_pose(m, q, m.frame_names[-1]).tolist(),
                 rbd.integrate(m, q, v, 0.1).tolist()]
print(json.dumps(out))
'''


def test_interpreted_and_compiled_paths_agree(tmp_path):
    """The interpreter, the compiled kernels, and the compiled kernels without numba IR
    inlining (what numba < 0.59 gets; its own cache directory, since numba's cache does not
    tell the two apart) give the same numbers. The last compiles only the kernels the script
    calls (RBD_ROS_DEFER_COMPILE, as a warm-up worker: each for the types it is called with),
    27 s, not every entry point at import (75 s)."""
    here = os.path.dirname(__file__)
    modes = {'interpreted': {'RBD_ROS_NO_JIT': '1'},
             'compiled': {'RBD_ROS_NO_JIT': '0'},
             'compiled, helpers left to LLVM': {'RBD_ROS_NO_JIT': '0', 'RBD_ROS_IR_INLINE': '0',
                                                'RBD_ROS_DEFER_COMPILE': '1',
                                                'NUMBA_CACHE_DIR': str(tmp_path / 'cache')}}
    results = {}
    for mode, variables in modes.items():
        env = {k: v for k, v in os.environ.items() if k != 'RBD_ROS_IR_INLINE'}
        env.update(variables)
        done = subprocess.run([sys.executable, '-c', _SCRIPT, here], env=env, check=True,
                              capture_output=True, text=True, timeout=600)
        results[mode] = json.loads(done.stdout)
    interpreted = results.pop('interpreted')
    assert interpreted.pop('jit') is False
    interpreted.pop('ir_inlining')
    if not results['compiled']['jit']:
        pytest.skip('numba not installed')
    assert results['compiled, helpers left to LLVM'].pop('ir_inlining') is False
    for mode, compiled in results.items():
        compiled.pop('jit')
        compiled.pop('ir_inlining', None)
        for seed in interpreted:
            for x, y in zip(interpreted[seed], compiled[seed]):
                assert _rel(np.array(x), np.array(y)) < 1e-12, mode
