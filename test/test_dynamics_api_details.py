"""Details of the public functions from a new user's report (issue 23): the frame_* functions
say they take one configuration, a configuration of a velocity's length (or the reverse) is
named as such, frames are named by link or by id everywhere, and model.q_neutral."""
import os
import subprocess
import sys

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from urdf_factory import random_urdf

HERE = os.path.dirname(__file__)
SOLO = os.path.join(HERE, 'data', 'robots', 'solo12.urdf')


@pytest.fixture(scope='module')
def solo():
    return rbd.Model.from_urdf(SOLO, floating_base=True)


def test_frame_functions_say_they_take_one_configuration(solo):
    Q = np.stack([solo.q_neutral] * 3)
    v = np.zeros((3, solo.nv))
    for name, call in (('frame_pose', lambda: rbd.frame_pose(solo, Q, 'FL_FOOT')),
                       ('frame_poses', lambda: rbd.frame_poses(solo, Q)),
                       ('frame_velocity', lambda: rbd.frame_velocity(solo, Q, v, 'FL_FOOT')),
                       ('frame_acceleration',
                        lambda: rbd.frame_acceleration(solo, Q, v, v, 'FL_FOOT')),
                       ('frame_jacobian', lambda: rbd.frame_jacobian(solo, Q, 'FL_FOOT'))):
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert message.startswith(f'{name} takes one configuration q of shape (19,), got a '
                                  'batch of shape (3, 19)'), message
        assert 'the frame_* functions' in message and 'per row' in message


def test_a_velocity_sized_configuration_is_named(solo):
    with pytest.raises(ValueError) as info:
        rbd.gravity_torques(solo, np.zeros(18))
    message = str(info.value)
    assert message.startswith('q must have shape (19,) or (N, 19), got (18,)')
    assert ('q has nq = 19 values for a floating base: x y z, a quaternion qx qy qz qw, then '
            'the joints; got 18, which is nv: did you pass a velocity-sized vector?') in message
    q, v = solo.q_neutral, np.zeros(solo.nv)
    for call in (lambda: rbd.mass_matrix(solo, np.zeros((4, 18))),
                 lambda: rbd.inverse_dynamics(solo, v, v, v),
                 lambda: rbd.frame_pose(solo, v, 'FL_FOOT'),
                 lambda: rbd.integrate(solo, v, v, 0.1),
                 lambda: rbd.centroidal_momentum(solo, v, v),
                 lambda: rbd.difference(solo, q, v)):
        with pytest.raises(ValueError, match='did you pass a velocity-sized vector'):
            call()
    with pytest.raises(ValueError, match=r'v has nv = 18 values for a floating base: its twist '
                                         r'\[v; w\] in the base frame, then the joints; got 19, '
                                         r'which is nq: did you pass a configuration-sized'):
        rbd.nonlinear_effects(solo, q, np.zeros(19))
    with pytest.raises(ValueError, match='tau has nv = 18'):
        rbd.forward_dynamics(solo, q, v, np.zeros(19))
    # a floating joint inside the tree (no floating base) is named
    model = rbd.Model.from_urdf(random_urdf(3, n_links=3, joint_types=('floating', 'revolute')))
    floating = [j.name for j in model.joints if j.type == 'floating']
    assert floating and model.nq != model.nv
    with pytest.raises(ValueError, match=f"floating joint '{floating[0]}'"):
        rbd.gravity_torques(model, np.zeros(model.nv))
    # without floating joints nq = nv: the plain message
    arm = rbd.Model.from_urdf(os.path.join(HERE, '..', 'rbd_ros', 'robots', 'rbd_arm7.urdf'))
    with pytest.raises(ValueError, match=r'got \(6,\)$'):
        rbd.gravity_torques(arm, np.zeros(6))


def test_frames_by_id_wherever_by_name(solo):
    rng = np.random.default_rng(0)
    q, v, a = solo.random_configuration(rng), rng.normal(size=solo.nv), rng.normal(size=solo.nv)
    name = 'HR_FOOT'
    f = solo.frame_id(name)
    assert solo.frame_names[f] == name and solo.frame_id(np.int64(f)) == f
    assert np.array_equal(rbd.frame_pose(solo, q, f), rbd.frame_pose(solo, q, name))
    assert np.array_equal(rbd.frame_pose(solo, q, np.int32(f)), rbd.frame_pose(solo, q, name))
    for ref in rbd.REFERENCES:
        assert np.array_equal(rbd.frame_velocity(solo, q, v, f, ref),
                              rbd.frame_velocity(solo, q, v, name, ref))
        assert np.array_equal(rbd.frame_acceleration(solo, q, v, a, f, ref),
                              rbd.frame_acceleration(solo, q, v, a, name, ref))
        assert np.array_equal(rbd.frame_jacobian(solo, q, f, ref),
                              rbd.frame_jacobian(solo, q, name, ref))
    wrench = rng.normal(size=6)
    assert np.array_equal(rbd.inverse_dynamics(solo, q, v, a, {f: wrench}),
                          rbd.inverse_dynamics(solo, q, v, a, {name: wrench}))
    assert np.array_equal(rbd.forward_dynamics(solo, q, v, a, {f: wrench}),
                          rbd.forward_dynamics(solo, q, v, a, {name: wrench}))
    assert np.array_equal(rbd.inertial_regressor(solo, q, v, a, link=f),
                          rbd.inertial_regressor(solo, q, v, a, link=name))
    for bad in (len(solo.frame_names), -1, True, 2.0):
        with pytest.raises(ValueError, match='out of range|unknown frame'):
            rbd.frame_pose(solo, q, bad)
    with pytest.raises(ValueError, match='unknown link 99'):
        rbd.inverse_dynamics(solo, q, v, a, {99: wrench})


def test_q_neutral_is_a_read_only_attribute(solo):
    assert np.array_equal(solo.q_neutral, solo.neutral())
    assert np.array_equal(solo.q_neutral[3:7], [0, 0, 0, 1])
    assert solo.q_neutral is solo.q_neutral
    with pytest.raises(ValueError):
        solo.q_neutral[0] = 1.0
    with pytest.raises(AttributeError):
        solo.q_neutral = np.zeros(solo.nq)
    fresh = solo.neutral()                     # neutral() stays, a writable copy
    fresh[0] = 1.0
    assert solo.q_neutral[0] == 0.0
    assert np.array_equal(rbd.gravity_torques(solo, solo.q_neutral),
                          rbd.gravity_torques(solo, solo.neutral()))


_NO_JIT = r'''
import numpy as np, rbd_ros.dynamics as rbd
assert not rbd.JIT_ENABLED
m = rbd.Model.from_urdf(path, floating_base=True)
rng = np.random.default_rng(0)
q0, q1, v = m.random_configuration(rng), m.random_configuration(rng), rng.normal(size=m.nv)
print(repr((rbd.difference(m, q0, q1, wrap_angles=True).tolist(),
            rbd.interpolate(m, q0, q1, 0.3).tolist(),
            rbd.center_of_mass_jacobian(m, q0).tolist(), rbd.centroidal_momentum(m, q0, v).tolist(),
            rbd.centroidal_momentum_matrix(m, q0).tolist())))
'''


def test_new_functions_run_interpreted_with_the_same_results():
    script = f'path = {SOLO!r}\n' + _NO_JIT
    done = subprocess.run([sys.executable, '-c', script], env=dict(os.environ, RBD_ROS_NO_JIT='1'),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    interpreted = eval(done.stdout)     # noqa: S307 - our own subprocess's repr of lists
    m = rbd.Model.from_urdf(SOLO, floating_base=True)
    rng = np.random.default_rng(0)
    q0, q1, v = m.random_configuration(rng), m.random_configuration(rng), rng.normal(size=m.nv)
    compiled = (rbd.difference(m, q0, q1, wrap_angles=True), rbd.interpolate(m, q0, q1, 0.3),
                rbd.center_of_mass_jacobian(m, q0), rbd.centroidal_momentum(m, q0, v),
                rbd.centroidal_momentum_matrix(m, q0))
    for a, b in zip(interpreted, compiled):
        assert np.allclose(a, b, rtol=1e-13, atol=1e-13)


def test_core_doc_examples_run():
    """docs/core.md's Python blocks run as written, from the repository root."""
    import re
    root = os.path.join(HERE, '..')
    with open(os.path.join(root, 'docs', 'core.md')) as handle:
        blocks = re.findall(r'```python\n(.*?)```', handle.read(), flags=re.S)
    assert len(blocks) >= 2
    for block in blocks:
        done = subprocess.run([sys.executable, '-c', block], cwd=root, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, block + done.stderr


def test_the_core_never_imports_pinocchio():
    """PinocchioLayout derives Pinocchio's layout from the URDF: it works with Pinocchio made
    unimportable, and no file of rbd_ros/dynamics imports it."""
    folder = os.path.join(HERE, '..', 'rbd_ros', 'dynamics')
    for name in os.listdir(folder):
        if name.endswith('.py'):
            with open(os.path.join(folder, name)) as handle:
                text = handle.read()
            assert 'import pinocchio' not in text and 'from pinocchio' not in text, name
    script = (
        'import sys\n'
        'class Block:\n'
        '    def find_spec(self, name, path=None, target=None):\n'
        '        if name.split(".")[0] == "pinocchio":\n'
        '            raise ImportError("blocked")\n'
        'sys.meta_path.insert(0, Block())\n'
        'import numpy as np, rbd_ros.dynamics as rbd\n'
        f'm = rbd.Model.from_urdf({SOLO!r}, floating_base=True)\n'
        'layout = rbd.PinocchioLayout(m)\n'
        'print(layout.joint_names[1], layout.q_to_pinocchio(m.q_neutral).shape)\n'
        'assert "pinocchio" not in sys.modules\n')
    done = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.split() == ['FL_HAA', '(19,)'], done.stderr
