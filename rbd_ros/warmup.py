"""``warmup``: fill numba's cache for every rbd_ros.dynamics kernel, one compile group per core,
for the simulator's step, dynamics_node's external-torque observer, the offline analysis's
loops (rbd_ros/analysis/kernels.py), the nodes' joint_states merge
(rbd_ros/ros/joint_state_bytes.py) and their outputs' fill (rbd_ros/ros/wire.py).

Run once after installing (scripts/setup.sh does; on a ROS install ``ros2 run rbd_ros warmup``
after ``colcon build``) so that no process compiles on its first message. Each group of
rbd_ros/dynamics/warmup.py compiles in its own worker process; then one ordinary process loads
everything from the cache and compiles whatever is left (all of it if a worker failed).
This module imports nothing from rbd_ros.dynamics until the workers are done: importing it
would compile every signature kernel in this process, serially.
"""
import os
import subprocess
import sys
import time

GROUP_COUNT = 2   # rbd_ros.dynamics.warmup.GROUPS


def main() -> int:
    start = time.perf_counter()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    if cores and cores > 1 and os.environ.get('RBD_ROS_NO_JIT', '') in ('', '0'):
        env = dict(os.environ, RBD_ROS_DEFER_COMPILE='1')
        workers = [subprocess.Popen([sys.executable, '-m', 'rbd_ros.dynamics.warmup',
                                     '--group', str(k)], env=env)
                   for k in range(GROUP_COUNT)]
        for k, worker in enumerate(workers):
            if worker.wait() != 0:
                print(f'warmup: compile group {k} failed (exit {worker.returncode}); '
                      'compiling its kernels in this process instead', file=sys.stderr)
    from rbd_ros.dynamics.warmup import warm_up
    warm_up(verbose=False)
    warm_up_simulator()
    from rbd_ros.control.observer import warm_up as warm_up_observer   # dynamics_node's observer
    warm_up_observer()
    from rbd_ros.analysis.kernels import warm_up as warm_up_analysis   # `analyze`'s loops
    warm_up_analysis()
    from rbd_ros.ros.joint_state_bytes import warm_up as warm_up_joint_states   # the nodes'
    warm_up_joint_states()                                                     # input
    try:
        from rbd_ros.ros.wire import warm_up as warm_up_outputs   # ... and outputs
    except ImportError:     # (no rclpy: the core and the analysis alone)
        pass
    else:
        warm_up_outputs()
    print(f'rbd_ros.dynamics, simulator, observer, analysis and the nodes\' kernels ready in '
          f'{time.perf_counter() - start:.1f} s')
    return 0


def warm_up_simulator():
    """Compile (or load from numba's cache) the simulator's step: a Simulator compiles it when
    it is made (one specialisation serves every model); two steps of a box on the ground run
    its contact rows and solver too."""
    import rbd_ros.dynamics as rbd
    from rbd_ros.simulation import SimOptions, Simulator
    box = ('<robot name="warmup_box"><link name="box"><inertial><mass value="1"/><inertia '
           'ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial><collision>'
           '<geometry><sphere radius="0.1"/></geometry></collision></link></robot>')
    sim = Simulator(rbd.Model.from_urdf(box, floating_base=True),
                    [0.0, 0.0, 0.05, 0.0, 0.0, 0.0, 1.0], options=SimOptions())
    sim.advance(2)


if __name__ == '__main__':
    raise SystemExit(main())
