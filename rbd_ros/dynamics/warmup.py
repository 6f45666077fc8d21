"""Compile (or load from numba's on-disk cache) every kernel, single and batched, so that no
process ever compiles on its first message. The set-up script runs ``python -m
rbd_ros.dynamics.warmup`` once; later processes load the cache in well under a second. On a
ROS install run ``ros2 run rbd_ros warmup`` once after ``colcon build`` (numba keeps the cache
next to the sources, or in the user's cache directory when those are read-only)."""
import time

import numpy as np

from . import api
from .model import Model

# one model with every joint type, a mimic joint and (below) a floating base
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
            api.frame_poses(model, q)
            for ref in api.REFERENCES:
                api.frame_velocity(model, q, v, 'tool', ref)
                api.frame_acceleration(model, q, v, v, 'tool', ref)
                api.frame_jacobian(model, q, 'tool', ref)
    elapsed = time.perf_counter() - start
    if verbose:
        print(f'rbd_ros.dynamics kernels ready in {elapsed:.1f} s')
    return elapsed


def main():
    """Console script ``warmup`` (``ros2 run rbd_ros warmup`` after ``colcon build``)."""
    warm_up()


if __name__ == '__main__':
    main()
