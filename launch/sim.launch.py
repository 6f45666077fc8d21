"""Simulated robot in the loop: sim_node + dynamics_node (gravity compensation drives the sim)
+ frames_node; the same set as ``bringup --urdf bundled`` and the demo.

    ros2 launch rbd_ros sim.launch.py [urdf:=/path/robot.urdf] [config:=/path/rbd.yaml]
                                      [floating_base:=true]

With floating_base:=true (a legged robot, a mobile base) the simulator's root link moves freely
on the ground and the dynamics node reads the simulator's ~/base_state; the command law is the
config's, gravity compensation by default (config/solo12.yaml: the bundled Solo-12 under
gravity_pd:  urdf:=.../robots/solo12.urdf config:=.../config/solo12.yaml floating_base:=true).
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
    floating = LaunchConfiguration('floating_base').perform(context).lower() in ('true', '1')
    description = {'robot_description': open(urdf).read()}
    base = {'floating_base': True} if floating else {}
    law = {} if floating else {'command_source': 'gravity'}   # (a legged config sets its own)
    return [
        Node(package='rbd_ros', executable='sim_node', name='rbd_sim', output='screen',
             parameters=[config, description, {'wait_for_command': True}, base],
             # close the loop: the simulator takes the dynamics node's effort commands
             remappings=[('~/effort_commands', '/rbd_dynamics/effort_commands')]),
        Node(package='rbd_ros', executable='dynamics_node', name='rbd_dynamics', output='screen',
             parameters=[config, description, law, base],
             # with a floating base, the simulator's base state
             remappings=[('~/base_state', '/rbd_sim/base_state')]),
        Node(package='rbd_ros', executable='frames_node', name='rbd_frames', output='screen',
             parameters=[config, description]),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument('urdf', default_value=os.path.join(SHARE, 'robots',
                                                                 'rbd_arm7.urdf')),
        DeclareLaunchArgument('config', default_value=os.path.join(SHARE, 'config', 'rbd.yaml')),
        DeclareLaunchArgument('floating_base', default_value='false'),
        OpaqueFunction(function=_nodes),
    ])
