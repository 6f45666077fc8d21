"""rbd_ros.control: joint trajectories sampled as JointTrajectoryController samples them, and
torque control laws, ROS-free (dynamics_node is their ROS adapter)."""
from .laws import LAWS, control_torques, joint_friction_compensation, tracking_error
from .trajectory import Reference, Trajectory, sinusoid_points, wrap_angle

__all__ = ['Trajectory', 'Reference', 'LAWS', 'control_torques', 'tracking_error',
           'joint_friction_compensation',
           'wrap_angle', 'sinusoid_points']
