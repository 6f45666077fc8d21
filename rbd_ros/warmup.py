"""``warmup``: fill numba's cache for every rbd_ros.dynamics kernel, the simulator's step,
dynamics_node's external-torque observer, the offline analysis's loops
(rbd_ros/analysis/kernels.py), the nodes' joint_states merge (rbd_ros/ros/joint_state_bytes.py)
and their outputs' fill (rbd_ros/ros/wire.py).

Run once after installing (scripts/setup.sh does; on a ROS install ``ros2 run rbd_ros warmup``
after ``colcon build``) so that no process compiles on its first message. The workers run in
two phases (PHASES): the kernels that several jobs call, then every job at once, each in a
worker process of its own; then one ordinary process loads everything from the cache and
compiles whatever is left (all of it if a worker failed).
This module imports nothing from rbd_ros.dynamics until the workers are done: importing it
would compile every signature kernel in this process, serially.
"""
import argparse
import os
import subprocess
import sys
import time

GROUP_COUNT = 2   # rbd_ros.dynamics.warmup.GROUPS
SHARED_COUNT = 2  # rbd_ros.dynamics.warmup.SHARED

#: the workers' jobs, in two phases. First the kernels that more than one job calls (the ABA,
#: CRBA, RNEA, its derivatives, the loop kernels: 30 s of CPU each of the two, cold), so that
#: each is compiled once; then, all at once, the dynamics core's compile groups, the
#: simulator's step, the nodes' and the analysis's kernels (64, 56, 80 and 16 s of CPU,
#: loading the shared kernels from the cache). All of a phase at once, so the cores stay busy
#: (the groups first and the rest after them in this process left one of 2 cores idle for 90
#: of 200 s). Cold on 2 cores: 153 s, 285 s of CPU; 181 s and ~355 s when every job compiled
#: the kernels it shares.
PHASES = (tuple(f'shared{k}' for k in range(SHARED_COUNT)),
          tuple(f'group{k}' for k in range(GROUP_COUNT)) + ('simulator', 'nodes'))
JOBS = tuple(job for phase in PHASES for job in phase)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog='warmup', description='Compile every rbd_ros kernel '
                                     "into numba's cache (once after installing).")
    parser.add_argument('--job', choices=JOBS, help=argparse.SUPPRESS)   # (a worker)
    args = parser.parse_args(argv)
    if args.job is not None:
        return run_job(args.job)
    start = time.perf_counter()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    env = dict(os.environ, RBD_ROS_DEFER_COMPILE='1')
    if cores and cores > 1 and os.environ.get('RBD_ROS_NO_JIT', '') in ('', '0') \
            and not cache_is_complete(env):
        print("warmup: compiling every kernel into numba's cache, once (2-3 minutes on 2 "
              'cores)', flush=True)
        for phase in PHASES:
            workers = {job: subprocess.Popen([sys.executable, '-m', 'rbd_ros.warmup', '--job',
                                              job], env=env) for job in phase}
            for job, worker in workers.items():
                if worker.wait() != 0:
                    print(f'warmup: the {job} worker failed (exit {worker.returncode}); '
                          'compiling its kernels in this process instead', file=sys.stderr)
    os.environ['RBD_ROS_WARMUP_PROCESS'] = '1'   # (what its imports compile: this command's to say)
    from rbd_ros.dynamics.warmup import warm_up
    warm_up(verbose=False)
    warm_up_simulator()
    warm_up_nodes()
    print(f'rbd_ros.dynamics, simulator, observer, analysis and the nodes\' kernels ready in '
          f'{time.perf_counter() - start:.1f} s')
    return 0


def cache_is_complete(env) -> bool:
    """Whether a process has filled numba's cache for the kernels' sources as they are
    (rbd_ros.dynamics._jit.cache_is_complete): then the workers are skipped, this process loads
    the cache in seconds (four workers took 7 s to find nothing to do). Asked in a child process
    (``env``: deferred), as importing the core here would compile it, serially, if not."""
    done = subprocess.run([sys.executable, '-c', 'from rbd_ros.dynamics._jit import '
                           'cache_is_complete; raise SystemExit(0 if cache_is_complete() else 1)'],
                          env=env)
    return done.returncode == 0


def run_job(job: str) -> int:
    """A worker (RBD_ROS_DEFER_COMPILE=1): one of JOBS into the cache."""
    if job.startswith('shared'):
        from rbd_ros.dynamics.warmup import SHARED, compile_entries
        compile_entries(SHARED[int(job[len('shared'):])])
    elif job.startswith('group'):
        from rbd_ros.dynamics.warmup import compile_group
        compile_group(int(job[len('group'):]))
    elif job == 'simulator':
        warm_up_simulator()
    else:
        warm_up_nodes()
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
                    [0.0, 0.0, 0.095, 0.0, 0.0, 0.0, 1.0], options=SimOptions())
    sim.advance(2)


def warm_up_nodes():
    """dynamics_node's observer, the offline analysis's loops, the nodes' joint_states merge
    and (with rclpy) their outputs' fill."""
    from rbd_ros.control.observer import warm_up as warm_up_observer
    warm_up_observer()
    from rbd_ros.analysis.kernels import warm_up as warm_up_analysis
    warm_up_analysis()
    from rbd_ros.ros.joint_state_bytes import warm_up as warm_up_joint_states
    warm_up_joint_states()
    try:
        from rbd_ros.ros.wire import warm_up as warm_up_outputs
    except ImportError:     # (no rclpy: the core and the analysis alone)
        pass
    else:
        warm_up_outputs()

if __name__ == '__main__':
    raise SystemExit(main())
