"""``warmup``: fill numba's cache for every rbd_ros.dynamics kernel, one compile group per core,
and for the simulator's step and dynamics_node's external-torque observer.

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
    from rbd_ros.simulation.step import warm_up as warm_up_step   # the simulator's step
    warm_up_step()
    from rbd_ros.control.observer import warm_up as warm_up_observer   # dynamics_node's observer
    warm_up_observer()
    print(f'rbd_ros.dynamics, simulator and observer kernels ready in '
          f'{time.perf_counter() - start:.1f} s')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
