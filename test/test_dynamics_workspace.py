"""The constant Model and its workspaces (Data): one model serves several threads at once, a
passed-in workspace gives the same results, and kernel statuses become the right errors."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from rbd_ros.dynamics import checks
from rbd_ros.dynamics.arguments import raise_status
from urdf_factory import random_urdf

ROBOTS = os.path.join(os.path.dirname(__file__), 'data', 'robots')


def _calls(model, q, v, a, f_ext, data=None):
    """Every public function once, on one state."""
    link = model.frame_names[-1]
    kw = {} if data is None else {'data': data}
    return [rbd.inverse_dynamics(model, q, v, a, **kw),
            rbd.inverse_dynamics(model, q, v, a, f_ext, **kw),
            rbd.gravity_torques(model, q, **kw), rbd.nonlinear_effects(model, q, v, **kw),
            rbd.mass_matrix(model, q, **kw), rbd.coriolis_matrix(model, q, v, **kw),
            rbd.forward_dynamics(model, q, v, a, **kw),
            rbd.forward_dynamics(model, q, v, a, f_ext, method='crba', **kw),
            rbd.frame_poses(model, q, **kw).array, rbd.frame_velocity(model, q, v, link, **kw),
            rbd.frame_acceleration(model, q, v, a, link, 'world', **kw),
            rbd.frame_jacobian(model, q, link, 'local', **kw),
            rbd.center_of_mass(model, q, **kw), np.array(rbd.kinetic_energy(model, q, v, **kw)),
            np.array(rbd.potential_energy(model, q, **kw)), rbd.integrate(model, q, v, 0.01, **kw)]


@pytest.mark.parametrize('floating', [False, True])
def test_one_model_in_two_threads_equals_serial_calls(floating):
    model = rbd.Model.from_urdf(os.path.join(ROBOTS, 'humanoid.urdf'), floating_base=floating)
    rng = np.random.default_rng(4)
    states = [(model.random_configuration(rng), rng.normal(size=model.nv),
               rng.normal(size=model.nv), {model.frame_names[3]: rng.normal(size=6)})
              for _ in range(40)]
    serial = [_calls(model, *state) for state in states]
    mismatches, errors = [], []
    start = threading.Barrier(3)

    def worker(order):
        try:
            start.wait()
            for _ in range(5):         # both threads in the kernels at the same time, often
                for k in order:
                    for got, want in zip(_calls(model, *states[k]), serial[k]):
                        if not np.array_equal(got, want):
                            mismatches.append(k)
        except Exception as exc:   # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(order,))
               for order in (range(40), range(39, -1, -1))]
    for t in threads:
        t.start()
    start.wait()
    for t in threads:
        t.join()
    assert not errors and not mismatches, (errors, sorted(set(mismatches)))


def test_passed_in_workspace_gives_the_same_results():
    model = rbd.Model.from_urdf(random_urdf(5, n_links=7, mimic=True), floating_base=True)
    rng = np.random.default_rng(5)
    state = (model.random_configuration(rng), rng.normal(size=model.nv), rng.normal(size=model.nv),
             {model.frame_names[2]: rng.normal(size=6)})
    data = model.create_data()
    assert isinstance(data, rbd.Data) and data.model is model
    for got, want in zip(_calls(model, *state, data=data), _calls(model, *state)):
        assert np.array_equal(got, want)
    other = rbd.Model.from_urdf(random_urdf(5, n_links=7, mimic=True), floating_base=True)
    with pytest.raises(ValueError, match='workspace of this model'):
        rbd.gravity_torques(model, state[0], data=other.create_data())
    with pytest.raises(ValueError, match='workspace of this model'):
        rbd.gravity_torques(model, state[0], data='not a workspace')


def test_a_dropped_model_is_freed_at_once_without_the_cyclic_collector():
    """A model and its threads' workspaces hold no reference cycle: a node that swaps its
    description (or payload) frees the old model when it drops it, not at a collection of
    Python's cyclic collector, which would pause a message's callback."""
    import gc
    import weakref
    for mimic, closed in ((True, False), (False, True)):
        path = (os.path.join(os.path.dirname(__file__), '..', 'rbd_ros', 'robots',
                             'parallel_ankle.urdf') if closed else None)
        model = (rbd.Model.from_urdf(path) if closed
                 else rbd.Model.from_urdf(random_urdf(6, n_links=7, mimic=mimic),
                                          floating_base=True))
        model = model.with_payload(model.frame_names[-1], 0.5, np.zeros(3), np.eye(3) * 1e-3)
        rng = np.random.default_rng(6)
        q, v = model.random_configuration(rng), rng.normal(size=model.nv)
        rbd.mass_matrix(model, q)       # the calling thread's workspace, made on first use
        worker = threading.Thread(target=lambda: rbd.gravity_torques(model, q))
        worker.start()
        worker.join()
        # (the thread's own workspace passed as data= is this model's)
        assert np.array_equal(rbd.nonlinear_effects(model, q, v, data=model._thread.data),
                              rbd.nonlinear_effects(model, q, v))
        alive = weakref.ref(model)
        gc.disable()
        try:
            del model
            assert alive() is None, 'the model is kept by a reference cycle'
        finally:
            gc.enable()


def test_model_arrays_are_read_only():
    model = rbd.Model.from_urdf(random_urdf(2, n_links=5))
    for name in ('body_int', 'body_float', 'gravity', 'armature', 'lower_limits', 'damping',
                 'frame_placement', 'mimic_map'):
        with pytest.raises(ValueError):
            getattr(model, name)[...] = 0


SINGULAR_ARM = '''<robot name="singular">
  <link name="base"/>
  <link name="shoulder"/>
  <link name="tip"><inertial><origin xyz="0 0 1"/><mass value="2"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="yaw" type="continuous"><parent link="base"/><child link="shoulder"/>
    <axis xyz="0 0 1"/></joint>
  <joint name="pitch" type="continuous"><parent link="shoulder"/><child link="tip"/>
    <axis xyz="1 0 0"/></joint>
</robot>'''


def test_singular_configuration_in_a_batch_names_its_row(batch_path):
    """A point mass on the yaw axis (pitch = 0) cannot be turned by the yaw joint: M is
    singular there and only there."""
    model = rbd.Model.from_urdf(SINGULAR_ARM)
    Q = np.array([[0.0, 1.0], [0.3, 0.5], [0.0, 0.0], [0.0, -1.2]])
    zero = np.zeros_like(Q)
    for method in ('aba', 'crba'):
        with pytest.raises(FloatingPointError, match='configuration 2 of the batch'):
            rbd.forward_dynamics(model, Q, zero, zero, method=method)
        with pytest.raises(FloatingPointError, match='not positive definite') as info:
            rbd.forward_dynamics(model, Q[2], zero[2], zero[2], method=method)
        assert 'batch' not in str(info.value)
    assert np.all(np.isfinite(rbd.forward_dynamics(model, Q[[0, 1, 3]], zero[:3], zero[:3])))


def test_statuses_become_the_matching_errors():
    with pytest.raises(ValueError, match='wrong shape'):
        raise_status(checks.BAD_SHAPE, ('q',), False)
    with pytest.raises(ValueError, match=r'v contains NaN or inf \(configuration 3 of the batch\)'):
        raise_status(3 * checks.STATUS_STRIDE + checks.BAD_V, ('q', 'v', 'a'), True)
    with pytest.raises(FloatingPointError):
        raise_status(checks.SINGULAR, (), False)
    with pytest.raises(RuntimeError, match='internal error'):
        raise_status(-1, ('q',), False)


def test_empty_velocity_is_a_shape_error_not_a_read_past_the_end():
    model = rbd.Model.from_urdf(random_urdf(1, n_links=4, joint_types=('revolute',)))
    q = model.neutral()
    with pytest.raises(ValueError, match='v must have shape'):
        rbd.inverse_dynamics(model, q, np.zeros(0), np.zeros(model.nv))
    with pytest.raises(ValueError, match='tau must have shape'):
        rbd.forward_dynamics(model, q, np.zeros(model.nv), np.zeros(0))


_NO_JIT = r'''
import numpy as np, rbd_ros.dynamics as rbd
assert not rbd.JIT_ENABLED
m = rbd.Model.from_urdf(sys_path + '/../rbd_ros/robots/rbd_arm7.urdf')
q = [0.1] * m.nq
g = rbd.gravity_torques(m, q)
assert np.allclose(rbd.inverse_dynamics(m, q, [0.0] * m.nv, [0.0] * m.nv), g)
assert np.allclose(rbd.forward_dynamics(m, q, [0.0] * m.nv, list(g)), 0.0, atol=1e-9)
assert rbd.frame_poses(m, q)[m.frame_names[-1]].shape == (4, 4)
assert len(rbd.integrate(m, q, [0.1] * m.nv, 0.01)) == m.nq
assert rbd.mass_matrix(m, tuple(q)).shape == (m.nv, m.nv)
print('ok')
'''


def test_interpreted_mode_takes_lists():
    """Without numba the kernels run interpreted: list and tuple arguments still work."""
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, '-c', f'sys_path = {here!r}\n' + _NO_JIT],
                          env=dict(os.environ, RBD_ROS_NO_JIT='1'), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == 'ok', done.stdout + done.stderr
