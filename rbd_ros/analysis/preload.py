"""Imported once by the fork server that --workers' processes are forked from
(run.LocalWorkers): numpy, numba, the dynamics core and the analysis's compiled loops are loaded
there once, so each worker starts with them (spawned workers each imported them, one after
the other: the dynamics core loads numba's cache under a lock shared by every process)."""
import numpy as np

import rbd_ros.dynamics as rbd

from . import kernels, run  # noqa: F401 - (run imports compute and logs: what a task needs)

kernels.warm_up()


def _batched_kernels():
    """Load the batched inverse dynamics and the regressor (any model: the kernels are the
    same for every robot)."""
    import os
    arm = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'robots', 'rbd_arm7.urdf')
    model = rbd.Model.from_urdf(arm)
    q = np.zeros((20, model.nq))
    rbd.inverse_dynamics(model, q, q, q)
    rbd.inertial_regressor(model, q, q, q, link='tool0')


try:
    _batched_kernels()
except Exception:     # noqa: BLE001 - a worker then loads them on its first log
    pass
