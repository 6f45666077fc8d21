"""Offline analysis of recorded joint states: torque residuals against the model, friction and
payload identification, over many rosbag2 logs, serially or on a Dask cluster.

- logs.py     a log's joint states (rosbags; the nodes' byte decoder), checked, on a uniform grid
- compute.py  one log to sums (filter, differentiate, batched inverse dynamics, normal
              equations); sums of many logs to the report and the identified parameters
- cli.py      ``python -m rbd_ros analyze`` / ``rbd_analyze``: options, Dask, table, JSON,
              parameters file
- plots.py    ``--plots``: PNG per joint

Needs the ``analyze`` extra (rosbags, scipy, dask[distributed], matplotlib); the dynamics core
does not. docs/analysis.md is the user's guide.
"""
from .compute import LogResult, Options, Summary, analyze_log, combine
from .logs import JointStateLog, LogError, read_joint_states

__all__ = ['JointStateLog', 'LogError', 'LogResult', 'Options', 'Summary', 'analyze_log',
           'combine', 'read_joint_states']
