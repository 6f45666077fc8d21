"""Offline analysis of recorded joint states: torque residuals against the model, friction and
payload identification, over many rosbag2 logs, serially or on a Dask cluster.

- logs.py     a log's joint states (and a floating base's state, contact wrenches), checked,
              on a uniform grid
- mcap.py     MCAP files read chunk by chunk (rosbags reads the other storages)
- decode.py   messages decoded from their bytes many at a time (JointState, Odometry,
              WrenchStamped)
- filters.py  the zero-phase Butterworth low-pass and the derivatives
- kernels.py  the compiled loops: records, byte layouts, filter, sums, normal equations
- compute.py  one log to sums (filter, differentiate, batched inverse dynamics, normal
              equations); sums of many logs to the report and the identified parameters
- run.py      where the logs run: this process, or Dask workers; the progress of a run
- cli.py      ``python -m rbd_ros analyze`` / ``rbd_analyze``: options, table, JSON,
              parameters file, --profile
- plots.py    ``--plots``: PNG per joint

Needs the ``analyze`` extra (rosbags, dask[distributed], matplotlib; scipy for the tests'
oracle); the dynamics core does not. docs/analysis.md is the user's guide. The names below are
imported on first use, so that ``python -m rbd_ros analyze --help`` (cli.py) starts without
numba.
"""
_EXPORTS = {'LogResult': 'compute', 'Options': 'compute', 'Summary': 'compute',
            'analyze_log': 'compute', 'combine': 'compute', 'JointStateLog': 'logs',
            'LogError': 'logs', 'read_joint_states': 'logs'}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(f'.{_EXPORTS[name]}', __name__), name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
