"""The per-call workspace of a model (Pinocchio's Data, MuJoCo's mjData, RigidBodyDynamics.jl's
MechanismState): what the algorithms write while they run. The model itself never changes, so
one model serves any number of workspaces, one per thread.

    data = model.create_data()
    tau = rbd.inverse_dynamics(model, q, v, a, data=data)

Without ``data=``, a call uses its thread's own workspace, made on the thread's first call.
"""
import threading
import weakref

import numpy as np

from . import layout as L
from .loops import work_size


class Data:
    """Workspace arrays of one model (shapes in layout.py): ``ws`` (one row per body, then the
    scratch row), ``dof_ws`` (one row per degree of freedom), ``dof_vectors`` (scratch vectors
    of one number per degree of freedom), zero arguments (no external wrench, zero
    acceleration), the closed-loop workspace ``loop_ws`` and its row order ``loop_pivot``
    (loops.work_size; one unused entry for a tree), and ``handle``, the addresses the compiled
    entry points read them from. Use a Data from one thread at a time."""

    __slots__ = ('model', 'ws', 'dof_ws', 'dof_vectors', 'zero_fext', 'zero_v', 'handle',
                 '_dof_parent', 'loop_ws', 'loop_pivot')

    def __init__(self, model):
        nb = model.body_int.shape[0]
        ndof = max(model.nv_full, 1)
        self.model = model
        self.ws = np.zeros((nb + 1) * L.WS_COLS)
        self.ws[L.O:L.O + 9] = np.eye(3).ravel()     # the world's placement: never written
        self.dof_ws = np.zeros(ndof * L.DOF_WS_COLS)
        self.dof_vectors = np.zeros(L.DOF_VECTORS * ndof)
        self.zero_fext = np.zeros((nb, 6))           # read by the kernels, never written
        self.zero_v = np.zeros(model.nv)             # (nonlinear_effects: a = 0)
        self._dof_parent = np.full(ndof, -1, dtype=np.int64)
        self._dof_parent[:model.nv_full] = model.dof_parent
        handle = np.zeros(L.HANDLE_LEN, dtype=np.int64)
        handle[L.H_BODY_INT] = model._body_int.ctypes.data
        handle[L.H_NBODY] = nb
        handle[L.H_BODY_FLOAT] = model._body_float.ctypes.data
        handle[L.H_NFLOAT] = model._body_float.shape[0]
        handle[L.H_WS] = self.ws.ctypes.data
        handle[L.H_DOF_WS] = self.dof_ws.ctypes.data
        handle[L.H_NDOF] = ndof
        handle[L.H_DOF_PARENT] = self._dof_parent.ctypes.data
        handle[L.H_ZERO_FEXT] = self.zero_fext.ctypes.data
        rows = model.constraint_rows
        self.loop_ws = np.zeros(max(work_size(model.nv_full, rows), 1))
        self.loop_pivot = np.zeros(max(rows, model.nv_full, 1) if rows else 1, dtype=np.int64)
        handle[L.H_NLOOP] = model._loop_int.shape[0]
        handle[L.H_LOOP_INT] = model._loop_int.ctypes.data
        handle[L.H_LOOP_FLOAT] = model._loop_float.ctypes.data
        handle[L.H_NROW] = rows
        handle[L.H_ROW_LOOP] = model._row_constraint.ctypes.data
        handle[L.H_LOOP_WS] = self.loop_ws.ctypes.data
        handle[L.H_LOOP_PIVOT] = self.loop_pivot.ctypes.data
        handle[L.H_DOF_VECTORS] = self.dof_vectors.ctypes.data
        self.handle = handle

    def __repr__(self):
        return f'Data({self.model.name!r})'


class ThreadData(threading.local):
    """Each thread's own Data for one model, made on the thread's first call that needs it.
    Made by ``ThreadData.of(model)``, over a weak proxy of the model: the model holds this, and
    a strong reference back (threading.local keeps its arguments, to make each thread's Data;
    the Data keeps its model) would be a cycle that only Python's cyclic collector frees. A node
    swapping descriptions kept each old model and its arrays until a collection, which then fell
    inside a message's callback (0.3-0.5 ms). Whoever uses a model's thread data holds the model."""

    @classmethod
    def of(cls, model) -> 'ThreadData':
        return cls(weakref.proxy(model))

    def __init__(self, model):
        self.data = Data(model)
        self.handle = self.data.handle   # (what the fast paths read: one look-up less)
