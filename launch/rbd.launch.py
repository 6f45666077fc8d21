"""dynamics_node + frames_node beside a running robot.

    ros2 launch rbd_ros rbd.launch.py [urdf:=/path/robot.urdf] [config:=/path/rbd.yaml]

Without ``urdf`` the nodes take the robot's latched ``robot_description`` topic.
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
    params = [config] + ([{'robot_description': open(urdf).read()}] if urdf else [])
    return [Node(package='rbd_ros', executable=exe, name=name, parameters=params, output='screen')
            for exe, name in (('dynamics_node', 'rbd_dynamics'), ('frames_node', 'rbd_frames'))]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument('urdf', default_value='',
                              description='URDF file; empty: the robot_description topic'),
        DeclareLaunchArgument('config', default_value=os.path.join(SHARE, 'config', 'rbd.yaml')),
        OpaqueFunction(function=_nodes),
    ])
