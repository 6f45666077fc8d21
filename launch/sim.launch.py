"""Simulated robot in the loop: sim_node + dynamics_node (gravity compensation drives the sim)
+ frames_node; the same set as ``bringup --urdf bundled`` and the demo.

    ros2 launch rbd_ros sim.launch.py [urdf:=/path/robot.urdf] [config:=/path/rbd.yaml]
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

SHARE = get_package_share_directory('rbd_ros')


def _nodes(context):
    urdf = LaunchConfiguration('urdf').perform(context)
    config = LaunchConfiguration('config').perform(context)
    description = {'robot_description': open(urdf).read()}
    return [
        Node(package='rbd_ros', executable='sim_node', name='rbd_sim', output='screen',
             parameters=[config, description, {'wait_for_command': True}],
             # close the loop: the simulator takes the dynamics node's effort commands
             remappings=[('~/effort_commands', '/rbd_dynamics/effort_commands')]),
        Node(package='rbd_ros', executable='dynamics_node', name='rbd_dynamics', output='screen',
             parameters=[config, description, {'command_source': 'gravity'}]),
        Node(package='rbd_ros', executable='frames_node', name='rbd_frames', output='screen',
             parameters=[config, description]),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument('urdf', default_value=os.path.join(SHARE, 'robots',
                                                                 'rbd_arm7.urdf')),
        DeclareLaunchArgument('config', default_value=os.path.join(SHARE, 'config', 'rbd.yaml')),
        OpaqueFunction(function=_nodes),
    ])
