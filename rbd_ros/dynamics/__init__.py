"""rbd_ros.dynamics: rigid-body dynamics from a URDF, independent of ROS.

    import rbd_ros.dynamics as rbd
    model = rbd.Model.from_urdf('robot.urdf')
    tau = rbd.inverse_dynamics(model, q, v, a)

Conventions (vector order [linear; angular], quaternions [x, y, z, w], floating base q[:7],
v[:6] in the base frame) are in docs/conventions.md, the coordinates in detail in
docs/core.md; PinocchioLayout(model) converts q, v, tau and matrices to and from Pinocchio's
order and coordinates.
A Model never changes once built; each call writes into a workspace (Data), the calling
thread's own unless ``data=model.create_data()`` is passed.
"""
from ._jit import (DEFER_COMPILE, JIT_ENABLED, cache_is_complete, compile_lock,
                   mark_cache_complete, say_compiling)

_filling = JIT_ENABLED and not cache_is_complete()
with compile_lock(exclusive=_filling):   # importing the entry points compiles them while the
    # cache is filled (else they load from it on their first call: _jit._FirstCallDispatcher)
    if _filling and not cache_is_complete():   # (not filled by a process this one waited for)
        say_compiling()
    from .api import (REFERENCES, FramePoses, center_of_mass, center_of_mass_jacobian,
                      centroidal_momentum, centroidal_momentum_matrix, coriolis_matrix,
                      difference, forward_dynamics, forward_dynamics_derivatives,
                      frame_acceleration, frame_jacobian, frame_pose, frame_poses,
                      frame_velocity, frame_velocity_derivatives, gravity_torques,
                      gravity_torques_derivatives, inertial_regressor, integrate,
                      integrate_derivatives, interpolate,
                      inverse_dynamics, inverse_dynamics_derivatives, joint_friction_torques,
                      kinetic_energy, mass_matrix, nonlinear_effects, potential_energy)
    from .closed_loops import (close_loops, constrained_forward_dynamics,
                               constrained_inverse_dynamics, constraint_bias, constraint_jacobian,
                               constraint_residual, loop_joints, mobility, passive_joints)
if _filling and not DEFER_COMPILE:   # (a warm-up worker compiles only its share)
    mark_cache_complete()
from .data import Data
from .identification import PayloadEstimate, estimate_payload
from .errors import InertiaError, JointError, ModelError, TopologyError, URDFSyntaxError
from .model import FLOATING_BASE_JOINT, ConstraintInfo, JointInfo, Model
from .pinocchio_layout import PinocchioLayout

__all__ = [
    'Model', 'Data', 'JointInfo', 'ConstraintInfo', 'FramePoses', 'FLOATING_BASE_JOINT', 'REFERENCES',
    'JIT_ENABLED', 'ModelError', 'URDFSyntaxError', 'TopologyError', 'JointError',
    'InertiaError', 'inverse_dynamics', 'gravity_torques', 'nonlinear_effects', 'mass_matrix',
    'coriolis_matrix', 'forward_dynamics', 'joint_friction_torques', 'frame_poses',
    'frame_pose', 'frame_velocity', 'frame_acceleration', 'frame_jacobian', 'center_of_mass',
    'kinetic_energy', 'potential_energy', 'integrate', 'difference', 'interpolate',
    'center_of_mass_jacobian', 'centroidal_momentum', 'centroidal_momentum_matrix',
    'inertial_regressor', 'estimate_payload', 'PayloadEstimate', 'PinocchioLayout',
    'constraint_residual', 'constraint_jacobian', 'constraint_bias', 'close_loops',
    'constrained_forward_dynamics', 'constrained_inverse_dynamics', 'mobility', 'loop_joints',
    'passive_joints',
    'inverse_dynamics_derivatives', 'forward_dynamics_derivatives', 'gravity_torques_derivatives',
    'frame_velocity_derivatives', 'integrate_derivatives',
]
