"""rbd_ros: rigid-body dynamics for a running ROS 2 robot.

The dynamics core, :mod:`rbd_ros.dynamics`, is independent of ROS; the node modules
(``dynamics_node``, ``frames_node``, ``sim_node``, ``bringup``) are thin rclpy adapters over it.
"""
__version__ = '0.1.0'
