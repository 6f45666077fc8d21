"""Compile (or load from numba's on-disk cache) every kernel, single and batched, so that no
process ever compiles on its first message. ``python -m rbd_ros.warmup`` (the ``warmup``
console script) runs the compile groups below in parallel worker processes, then
:func:`warm_up` in one process; later processes load the cache in well under a second.
The set-up script runs it once; on a ROS install run ``ros2 run rbd_ros warmup`` once after
``colcon build`` (numba keeps the cache next to the sources, or in the user's cache directory
when those are read-only)."""
import argparse
import time

import numpy as np

from . import _jit, api, closed_loops, kinematics, rotations
from .model import Model

# one model with every joint type, a mimic joint, a closed loop and (below) a floating base
_URDF = '''<robot name="warmup">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="c"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="d"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="e"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="tool"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j2" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j3" type="continuous"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/><mimic joint="j1"/></joint>
  <joint name="j4" type="planar"><parent link="a"/><child link="d"/><axis xyz="0 0 1"/></joint>
  <joint name="j5" type="floating"><parent link="d"/><child link="e"/></joint>
  <joint name="j6" type="fixed"><parent link="e"/><child link="tool"/></joint>
  <constraint name="loop" type="ball"><parent link="tool"/><child link="b"/></constraint>
</robot>'''


def warm_up(verbose=True):
    start = time.perf_counter()
    for floating in (False, True):
        for xml in (_URDF, _URDF.replace('<mimic joint="j1"/>', '')):
            model = Model.from_urdf(xml, floating_base=floating)
            q, v = model.neutral(), np.full(model.nv, 0.1)
            Q, V = np.stack([q, q]), np.stack([v, v])
            f_ext = {'tool': np.ones(6)}
            for args in ((q, v), (Q, V)):
                api.inverse_dynamics(model, args[0], args[1], args[1], f_ext)
                api.inverse_dynamics(model, args[0], args[1], args[1])
                api.gravity_torques(model, args[0])
                api.nonlinear_effects(model, args[0], args[1])
                api.mass_matrix(model, args[0])
                api.coriolis_matrix(model, args[0], args[1])
                api.forward_dynamics(model, args[0], args[1], args[1], f_ext)
                api.forward_dynamics(model, args[0], args[1], args[1], method='crba')
                api.center_of_mass(model, args[0])
                api.kinetic_energy(model, args[0], args[1])
                api.potential_energy(model, args[0])
                api.integrate(model, args[0], args[1], 0.01)
                api.difference(model, args[0], args[0], wrap_angles=True)
                api.interpolate(model, args[0], args[0], 0.5)
                api.center_of_mass_jacobian(model, args[0])
                api.centroidal_momentum(model, args[0], args[1])
                api.centroidal_momentum_matrix(model, args[0])
                api.inertial_regressor(model, args[0], args[1], args[1])
                api.inverse_dynamics_derivatives(model, args[0], args[1], args[1], f_ext)
                api.inverse_dynamics_derivatives(model, args[0], args[1], args[1])
                api.forward_dynamics_derivatives(model, args[0], args[1], args[1], f_ext)
                api.forward_dynamics_derivatives(model, args[0], args[1], args[1])
                api.gravity_torques_derivatives(model, args[0])
                api.frame_velocity_derivatives(model, args[0], args[1], 'tool', 'local')
                _closed_loops(model, args[0], args[1])
            closed_loops.close_loops(model, q, ['j1'])
            poses = api.frame_poses(model, q).array
            pairs = np.arange(len(poses), dtype=np.int64)   # (frames_node's /tf)
            kinematics.relative_transforms(poses, pairs, pairs, np.empty(7 * len(poses)),
                                           7 * pairs)
            rotations.matrix_to_quaternion(np.eye(3))
            for ref in api.REFERENCES:
                api.frame_velocity(model, q, v, 'tool', ref)
                api.frame_acceleration(model, q, v, v, 'tool', ref)
                api.frame_jacobian(model, q, 'tool', ref)
                api.frame_velocity_derivatives(model, q, v, 'tool', ref)
    elapsed = time.perf_counter() - start
    if verbose:
        print(f'rbd_ros.dynamics kernels ready in {elapsed:.1f} s')
    return elapsed


def _closed_loops(model, q, v):
    """The closed-loop functions on one state or a batch (q need not close the loop)."""
    closed_loops.constraint_residual(model, q)
    closed_loops.constraint_jacobian(model, q)
    closed_loops.constraint_bias(model, q, v)
    closed_loops.constrained_forward_dynamics(model, q, v, v, baumgarte=(1.0, 1.0))
    _closed_inverse_dynamics(model, q, v)


def _closed_inverse_dynamics(model, q, v):
    actuated = [name for name in model.joint_names if name != 'root_joint']
    try:        # (the loop open and v random: no motion the motors produce; compiled all the same)
        closed_loops.constrained_inverse_dynamics(model, q, v, v, actuated)
    except ValueError:
        pass


# Compile groups for the parallel warm-up: entry points whose compiles are independent, balanced
# on a 2-core VM (~half of the serial compile each), with batch calls that compile the groups'
# lazily typed batch kernels.
GROUPS = (
    (('aba_entry', 'aba_fext_entry', 'crba_entry', 'integrate_entry', 'frame_placements_entry',
      'regressor_entry', 'difference_entry', 'interpolate_entry',
      'centroidal_momentum_matrix_entry', 'closed_forward_dynamics_entry',
      'aba_derivatives_entry', 'frame_velocity_derivatives_entry'),
     lambda model, Q, V, f_ext: (api.forward_dynamics(model, Q, V, V),
                                 closed_loops.constrained_forward_dynamics(model, Q, V, V),
                                 api.inertial_regressor(model, Q, V, V),
                                 api.forward_dynamics(model, Q, V, V, f_ext),
                                 api.mass_matrix(model, Q), api.integrate(model, Q, V, 0.01),
                                 api.difference(model, Q, Q), api.interpolate(model, Q, Q, 0.5),
                                 api.centroidal_momentum_matrix(model, Q),
                                 api.forward_dynamics_derivatives(model, Q, V, V),
                                 api.frame_velocity_derivatives(model, Q, V, 'tool', 'local'))),
    (('rnea_entry', 'rnea_fext_entry', 'gravity_entry', 'coriolis_entry', 'frame_motion_entry',
      'frame_jacobian_entry', 'center_of_mass_entry', 'kinetic_energy_entry',
      'potential_energy_entry', 'center_of_mass_jacobian_entry', 'centroidal_momentum_entry',
      'loop_residual_entry', 'loop_jacobian_entry', 'loop_bias_entry',
      'closed_inverse_dynamics_entry', 'rnea_derivatives_entry', 'gravity_derivatives_entry'),
     lambda model, Q, V, f_ext: (api.inverse_dynamics(model, Q, V, V),
                                 closed_loops.constraint_residual(model, Q),
                                 closed_loops.constraint_jacobian(model, Q),
                                 closed_loops.constraint_bias(model, Q, V),
                                 _closed_inverse_dynamics(model, Q, V),
                                 api.inverse_dynamics(model, Q, V, V, f_ext),
                                 api.gravity_torques(model, Q), api.coriolis_matrix(model, Q, V),
                                 api.center_of_mass(model, Q), api.kinetic_energy(model, Q, V),
                                 api.potential_energy(model, Q),
                                 api.center_of_mass_jacobian(model, Q),
                                 api.centroidal_momentum(model, Q, V),
                                 api.inverse_dynamics_derivatives(model, Q, V, V),
                                 api.gravity_torques_derivatives(model, Q))),
)


# The kernels more than one worker calls (the ABA and the CRBA: the groups, the simulator's step,
# the observer; the RNEA, its derivatives and the loop kernels: both groups and the step), each
# compiled once before the workers that share them start, through these entry points, in two
# workers: the others then load them from the cache. Compiled by every worker that called them,
# they were ~90 of the ~355 s of CPU a cold warm-up took. (A kernel called from another keeps
# its own cache entry, which numba looks up before compiling it.)
SHARED = (('aba_entry', 'crba_entry', 'rnea_entry'),
          ('rnea_derivatives_entry', 'loop_residual_entry', 'loop_jacobian_entry',
           'loop_bias_entry'))


def compile_entries(names):
    """Worker side (RBD_ROS_DEFER_COMPILE=1): compile these signature kernels into the cache."""
    if not _jit.DEFER_COMPILE:
        raise RuntimeError('the warm-up workers run with RBD_ROS_DEFER_COMPILE=1')
    for dispatcher, signature in _jit.DEFERRED:
        if dispatcher.py_func.__name__ in names:
            dispatcher.compile(signature)
            dispatcher.disable_compile()   # as in a normal process: other types raise TypeError


def compile_group(index):
    """Worker side (RBD_ROS_DEFER_COMPILE=1): compile one group's kernels into the cache."""
    names, batch_calls = GROUPS[index]
    compile_entries(names)
    model = Model.from_urdf(_URDF.replace('<mimic joint="j1"/>', ''), floating_base=True)
    Q, V = np.stack([model.neutral()] * 2), np.full((2, model.nv), 0.1)
    batch_calls(model, Q, V, {'tool': np.ones(6)})


def main():
    """``python -m rbd_ros.dynamics.warmup``: :func:`warm_up` in this process (serial; the
    parallel workers are rbd_ros/warmup.py's ``--job groupK``, which call compile_group)."""
    argparse.ArgumentParser(description=main.__doc__.split('\n')[0]).parse_args()
    warm_up()


if __name__ == '__main__':
    main()
