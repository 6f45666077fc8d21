"""The compiled entry points of the algorithms, single and batched: plumbing, kept out of the
files that read like the book.

Every entry point takes the data's handle (layout.H_*: the addresses of the model's tables and
of the workspace), unpacks it into borrowed views (_jit: no reference counting) and runs one
algorithm kernel. Single-configuration entries are compiled for exact argument types (float64,
C-contiguous, writable), so any other argument raises TypeError and api.py takes its
validating path. Batch entries split the rows over ``threads`` chunks, each with its own copy
of the workspace, and return row * STATUS_STRIDE + code for the first failing row.
"""
import numpy as np

from ._jit import (ARRAY3, HANDLE, INDEX, MATRIX, SCALAR, VECTOR, borrow, chunk_rows,
                   chunk_setup, chunk_workspace, first_failure, float_view, index_view,
                   inline_kernel, int_view, kernel, prange, signature)
from .aba import aba
from .centroidal import centroidal_momentum, centroidal_momentum_matrix
from .checks import BAD_SHAPE, OK, STATUS_STRIDE, configuration_status, state_status
from .configuration import difference, integrate, interpolate
from .coriolis import coriolis_matrix
from .crba import crba
from .derivatives import (aba_derivatives, frame_velocity_derivatives, gravity_derivatives,
                          rnea_derivatives)
from .kinematics import (body_accelerations, body_placements, body_velocities, center_of_mass,
                         center_of_mass_jacobian, frame_jacobian, frame_motion, frame_placements,
                         kinetic_energy, potential_energy)
from .layout import (BODY_INT_COLS, DOF_VECTORS, DOF_WS_COLS, H_BODY_FLOAT, H_BODY_INT,
                     H_DOF_PARENT, H_DOF_VECTORS, H_DOF_WS, H_LOOP_FLOAT, H_LOOP_INT,
                     H_LOOP_PIVOT, H_LOOP_WS, H_NBODY, H_NDOF, H_NFLOAT, H_NLOOP, H_NROW,
                     H_ROW_LOOP, H_WS, H_ZERO_FEXT, LOOP_FLOAT_COLS, LOOP_INT_COLS, NVJ, WS_COLS)
from .loops import (closed_forward_dynamics, closed_inverse_dynamics, loop_bias, loop_jacobian,
                    loop_residual, loop_work, work_size)
from .regressor import inertial_regressor
from .rnea import gravity_rnea, rnea


@inline_kernel
def model_tables(h):
    """(body_int, body_float, ws) of a handle, borrowed."""
    nb = h[H_NBODY]
    return (int_view(h[H_BODY_INT], nb, BODY_INT_COLS), float_view(h[H_BODY_FLOAT], h[H_NFLOAT]),
            float_view(h[H_WS], (nb + 1) * WS_COLS))


@inline_kernel
def no_external_wrench(h):
    """The handle's zero external-wrench table, borrowed: a call without f_ext passes one
    argument less (numba's dispatch costs ~45 ns per array argument)."""
    return float_view(h[H_ZERO_FEXT], h[H_NBODY] * 6).reshape((h[H_NBODY], 6))


@inline_kernel
def dof_tables(h):
    """(dof_ws, dof_parent) of a handle, borrowed."""
    n = h[H_NDOF]
    return float_view(h[H_DOF_WS], n * DOF_WS_COLS), index_view(h[H_DOF_PARENT], n)


@inline_kernel
def loop_tables(h):
    """(loop_int, loop_float, row_loop, lw, pivot) of a handle, borrowed: the constraints'
    table (nloop x LOOP_INT_COLS), their flat float table (nloop * LOOP_FLOAT_COLS), each
    row's constraint (H_NROW), the closed-loop workspace (loops.work_size floats) and its row
    order (max(rows, nv) int64). Zero-length for a model without constraints."""
    nloop, rows = h[H_NLOOP], h[H_NROW]
    nv = h[H_NDOF]
    return (int_view(h[H_LOOP_INT], nloop, LOOP_INT_COLS),
            float_view(h[H_LOOP_FLOAT], nloop * LOOP_FLOAT_COLS), index_view(h[H_ROW_LOOP], rows),
            float_view(h[H_LOOP_WS], max(work_size(nv, rows), 1)),
            index_view(h[H_LOOP_PIVOT], max(rows, nv) if rows else 1))


@inline_kernel
def dof_vectors(h):
    """The dof vectors of a handle (layout.VEC_*), borrowed."""
    return float_view(h[H_DOF_VECTORS], DOF_VECTORS * h[H_NDOF])


# ---- single configurations -------------------------------------------------------------------
@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR, VECTOR))
def rnea_entry(h, q, v, a, tau):
    body_int, body_float, ws = model_tables(h)
    return rnea(body_int, body_float, ws, borrow(q), borrow(v), borrow(a), no_external_wrench(h),
                borrow(tau))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR, MATRIX, VECTOR))
def rnea_fext_entry(h, q, v, a, f_ext, tau):
    body_int, body_float, ws = model_tables(h)
    return rnea(body_int, body_float, ws, borrow(q), borrow(v), borrow(a), borrow(f_ext),
                borrow(tau))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR))
def gravity_entry(h, q, tau):
    body_int, body_float, ws = model_tables(h)
    return gravity_rnea(body_int, body_float, ws, borrow(q), borrow(tau))


@kernel(signature=signature(HANDLE, VECTOR, MATRIX))
def crba_entry(h, q, H):
    body_int, body_float, ws = model_tables(h)
    return crba(body_int, body_float, ws, borrow(q), borrow(H))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR, VECTOR))
def aba_entry(h, q, v, tau, vdot):
    body_int, body_float, ws = model_tables(h)
    return aba(body_int, body_float, ws, borrow(q), borrow(v), borrow(tau), no_external_wrench(h),
               borrow(vdot))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR, MATRIX, VECTOR))
def aba_fext_entry(h, q, v, tau, f_ext, vdot):
    body_int, body_float, ws = model_tables(h)
    return aba(body_int, body_float, ws, borrow(q), borrow(v), borrow(tau), borrow(f_ext),
               borrow(vdot))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR, MATRIX, INDEX, INDEX))
def regressor_entry(h, q, v, a, Y, first, count):
    body_int, body_float, ws = model_tables(h)
    return inertial_regressor(body_int, body_float, ws, borrow(q), borrow(v), borrow(a),
                              borrow(Y), first, count)


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, MATRIX))
def coriolis_entry(h, q, v, C):
    body_int, body_float, ws = model_tables(h)
    dof_ws, dof_parent = dof_tables(h)
    return coriolis_matrix(body_int, body_float, ws, dof_ws, dof_parent, borrow(q), borrow(v),
                           borrow(C))


@kernel(signature=signature(HANDLE, VECTOR, ARRAY3))
def frame_placements_entry(h, q, out):
    body_int, body_float, ws = model_tables(h)
    return frame_placements(body_int, body_float, ws, borrow(q), borrow(out))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR, INDEX, INDEX, VECTOR))
def frame_motion_entry(h, q, v, a, frame, reference, out):
    body_int, body_float, ws = model_tables(h)
    return frame_motion(body_int, body_float, ws, borrow(q), borrow(v), borrow(a), frame,
                        reference, borrow(out))


@kernel(signature=signature(HANDLE, VECTOR, INDEX, INDEX, MATRIX))
def frame_jacobian_entry(h, q, frame, reference, J):
    body_int, body_float, ws = model_tables(h)
    return frame_jacobian(body_int, body_float, ws, borrow(q), frame, reference, borrow(J))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR))
def center_of_mass_entry(h, q, out):
    body_int, body_float, ws = model_tables(h)
    return center_of_mass(body_int, body_float, ws, borrow(q), borrow(out))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR))
def kinetic_energy_entry(h, q, v, out):
    body_int, body_float, ws = model_tables(h)
    return kinetic_energy(body_int, body_float, ws, borrow(q), borrow(v), borrow(out))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR))
def potential_energy_entry(h, q, out):
    body_int, body_float, ws = model_tables(h)
    return potential_energy(body_int, body_float, ws, borrow(q), borrow(out))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, SCALAR, VECTOR))
def integrate_entry(h, q, v, dt, out):
    body_int, _, _ = model_tables(h)
    return integrate(body_int, borrow(q), borrow(v), dt, borrow(out))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR, INDEX, VECTOR))
def difference_entry(h, q0, q1, periodic, wrap, out):
    body_int, _, _ = model_tables(h)
    return difference(body_int, borrow(q0), borrow(q1), borrow(periodic), wrap, borrow(out))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, SCALAR, VECTOR, INDEX, VECTOR))
def interpolate_entry(h, q0, q1, u, periodic, wrap, out):
    body_int, _, _ = model_tables(h)
    return interpolate(body_int, borrow(q0), borrow(q1), u, borrow(periodic), wrap, borrow(out))


@kernel(signature=signature(HANDLE, VECTOR, MATRIX))
def center_of_mass_jacobian_entry(h, q, J):
    body_int, body_float, ws = model_tables(h)
    return center_of_mass_jacobian(body_int, body_float, ws, borrow(q), borrow(J))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR))
def centroidal_momentum_entry(h, q, v, out):
    body_int, body_float, ws = model_tables(h)
    return centroidal_momentum(body_int, body_float, ws, borrow(q), borrow(v), borrow(out))


@kernel(signature=signature(HANDLE, VECTOR, MATRIX))
def centroidal_momentum_matrix_entry(h, q, A):
    body_int, body_float, ws = model_tables(h)
    return centroidal_momentum_matrix(body_int, body_float, ws, borrow(q), borrow(A))


# ---- closed loops (loops.py): the constraints' rows, closed forward and inverse dynamics --------
@inline_kernel
def loop_rows_status(h, out_rows):
    """BAD_SHAPE unless an output has the model's constraint rows."""
    return OK if out_rows == h[H_NROW] else BAD_SHAPE


@kernel
def loop_residual_at(h, body_int, body_float, ws, q, phi):
    """phi at q (placements first), after the input checks."""
    loop_int, loop_float, _, _, _ = loop_tables(h)
    status = configuration_status(body_int, q)
    if status == OK:
        status = loop_rows_status(h, phi.shape[0])
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    return loop_residual(body_int, body_float, ws, loop_int, loop_float, phi)


@kernel
def loop_jacobian_at(h, body_int, body_float, ws, q, K):
    """K at q (placements first), after the input checks."""
    loop_int, loop_float, _, _, _ = loop_tables(h)
    status = configuration_status(body_int, q)
    if status == OK:
        status = loop_rows_status(h, K.shape[0])
    if status == OK and K.shape[1] != body_int[0, NVJ]:
        status = BAD_SHAPE
    if status != OK:
        return status
    body_placements(body_int, body_float, ws, q)
    return loop_jacobian(body_int, body_float, ws, loop_int, loop_float, K)


@kernel
def loop_bias_at(h, body_int, body_float, ws, q, v, k):
    """k at (q, v) (placements, twists, accelerations at qdd = 0 first), after the checks."""
    loop_int, loop_float, _, lw, _ = loop_tables(h)
    status = state_status(body_int, q, v, v)
    if status == OK:
        status = loop_rows_status(h, k.shape[0])
    if status != OK:
        return status
    zero_a = loop_work(lw, v.shape[0], k.shape[0])[7]
    body_velocities(body_int, body_float, ws, q, v)
    body_accelerations(body_int, body_float, ws, zero_a)
    return loop_bias(body_int, body_float, ws, loop_int, loop_float, k)


@kernel(signature=signature(HANDLE, VECTOR, VECTOR))
def loop_residual_entry(h, q, phi):
    body_int, body_float, ws = model_tables(h)
    return loop_residual_at(h, body_int, body_float, ws, borrow(q), borrow(phi))


@kernel(signature=signature(HANDLE, VECTOR, MATRIX))
def loop_jacobian_entry(h, q, K):
    body_int, body_float, ws = model_tables(h)
    return loop_jacobian_at(h, body_int, body_float, ws, borrow(q), borrow(K))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR))
def loop_bias_entry(h, q, v, k):
    body_int, body_float, ws = model_tables(h)
    return loop_bias_at(h, body_int, body_float, ws, borrow(q), borrow(v), borrow(k))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR, MATRIX, SCALAR, SCALAR, VECTOR))
def closed_forward_dynamics_entry(h, q, v, tau, f_ext, alpha, beta, qdd):
    if h[H_NROW] == 0:              # (a tree: no closed-loop workspace; api.py never calls)
        return BAD_SHAPE
    body_int, body_float, ws = model_tables(h)
    loop_int, loop_float, _, lw, pivot = loop_tables(h)
    dof_parent = dof_tables(h)[1]
    return closed_forward_dynamics(body_int, body_float, ws, dof_parent, loop_int, loop_float, lw,
                                   pivot, borrow(q), borrow(v), borrow(tau), borrow(f_ext), alpha,
                                   beta, borrow(qdd))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR, MATRIX, VECTOR, VECTOR))
def closed_inverse_dynamics_entry(h, q, v, a, f_ext, driven, tau):
    if h[H_NROW] == 0:
        return BAD_SHAPE
    body_int, body_float, ws = model_tables(h)
    loop_int, loop_float, _, lw, pivot = loop_tables(h)
    return closed_inverse_dynamics(body_int, body_float, ws, loop_int, loop_float, lw, pivot,
                                   borrow(q), borrow(v), borrow(a), borrow(f_ext), borrow(driven),
                                   borrow(tau))


@kernel
def loop_residual_batch(h, Q, PHI):
    body_int, body_float, ws = model_tables(h)
    q, out = borrow(Q), borrow(PHI)
    for n in range(q.shape[0]):
        status = loop_residual_at(h, body_int, body_float, ws, q[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def loop_jacobian_batch(h, Q, K):
    body_int, body_float, ws = model_tables(h)
    q, out = borrow(Q), borrow(K)
    for n in range(q.shape[0]):
        status = loop_jacobian_at(h, body_int, body_float, ws, q[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def loop_bias_batch(h, Q, V, KB):
    body_int, body_float, ws = model_tables(h)
    q, v, out = borrow(Q), borrow(V), borrow(KB)
    for n in range(q.shape[0]):
        status = loop_bias_at(h, body_int, body_float, ws, q[n], v[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def closed_forward_dynamics_batch(h, Q, V, TAU, F_EXT, alpha, beta, QDD):
    """F_EXT has one row, shared by all, or one per configuration. Rows in turn, not over
    threads: a parallel kernel of this size took 12 s more to compile (warmup) for a speed-up
    only batches of thousands see."""
    if h[H_NROW] == 0:
        return BAD_SHAPE
    body_int, body_float, ws = model_tables(h)
    loop_int, loop_float, _, lw, pivot = loop_tables(h)
    dof_parent = dof_tables(h)[1]
    q, v, tau, f_ext, qdd = borrow(Q), borrow(V), borrow(TAU), borrow(F_EXT), borrow(QDD)
    for n in range(q.shape[0]):
        f = f_ext[0] if f_ext.shape[0] == 1 else f_ext[n]
        status = closed_forward_dynamics(body_int, body_float, ws, dof_parent, loop_int,
                                         loop_float, lw, pivot, q[n], v[n], tau[n], f, alpha,
                                         beta, qdd[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def closed_inverse_dynamics_batch(h, Q, V, A, F_EXT, driven, TAU):
    """F_EXT has one row, shared by all, or one per configuration."""
    if h[H_NROW] == 0:
        return BAD_SHAPE
    body_int, body_float, ws = model_tables(h)
    loop_int, loop_float, _, lw, pivot = loop_tables(h)
    q, v, a, f_ext, tau = borrow(Q), borrow(V), borrow(A), borrow(F_EXT), borrow(TAU)
    for n in range(q.shape[0]):
        f = f_ext[0] if f_ext.shape[0] == 1 else f_ext[n]
        status = closed_inverse_dynamics(body_int, body_float, ws, loop_int, loop_float, lw, pivot,
                                         q[n], v[n], a[n], f, driven, tau[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR, MATRIX, MATRIX, MATRIX, MATRIX))
def rnea_derivatives_entry(h, q, v, a, f_ext, dtau_dq, dtau_dv, M):
    body_int, body_float, ws = model_tables(h)
    dof_ws, dof_parent = dof_tables(h)
    return rnea_derivatives(body_int, body_float, ws, dof_ws, dof_parent, borrow(q), borrow(v),
                            borrow(a), borrow(f_ext), borrow(dtau_dq), borrow(dtau_dv),
                            borrow(M))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, VECTOR, MATRIX, MATRIX, MATRIX, MATRIX))
def aba_derivatives_entry(h, q, v, tau, f_ext, dqdd_dq, dqdd_dv, Minv):
    body_int, body_float, ws = model_tables(h)
    dof_ws, dof_parent = dof_tables(h)
    return aba_derivatives(body_int, body_float, ws, dof_ws, dof_parent, dof_vectors(h),
                           borrow(q), borrow(v), borrow(tau), borrow(f_ext), borrow(dqdd_dq),
                           borrow(dqdd_dv), borrow(Minv))


@kernel(signature=signature(HANDLE, VECTOR, MATRIX))
def gravity_derivatives_entry(h, q, dg_dq):
    body_int, body_float, ws = model_tables(h)
    dof_ws, dof_parent = dof_tables(h)
    return gravity_derivatives(body_int, body_float, ws, dof_ws, dof_parent, borrow(q),
                               borrow(dg_dq))


@kernel(signature=signature(HANDLE, VECTOR, VECTOR, INDEX, INDEX, MATRIX, MATRIX))
def frame_velocity_derivatives_entry(h, q, v, frame, reference, dv_dq, dv_dv):
    body_int, body_float, ws = model_tables(h)
    return frame_velocity_derivatives(body_int, body_float, ws, borrow(q), borrow(v), frame,
                                      reference, borrow(dv_dq), borrow(dv_dv))


# ---- batches: rows over threads (parallel) ---------------------------------------------------
# (One spelled-out kernel per algorithm, alike but for the call: numba inlines a kernel named
# here, and a function passed as an argument would be a first-class function call per row.)
@kernel(parallel=True)
def rnea_batch(h, Q, V, A, F_EXT, TAU, threads):
    """F_EXT has one row, shared by all, or one per configuration."""
    body_int, body_float, ws = model_tables(h)
    q, v, a, f_ext, tau = borrow(Q), borrow(V), borrow(A), borrow(F_EXT), borrow(TAU)
    rows = q.shape[0]
    chunks, workspaces, statuses = chunk_setup(rows, threads, ws)
    for c in prange(chunks):
        w = chunk_workspace(workspaces, c, ws)
        for n in chunk_rows(c, chunks, rows):
            f = f_ext[0] if f_ext.shape[0] == 1 else f_ext[n]
            status = rnea(body_int, body_float, w, q[n], v[n], a[n], f, tau[n])
            if status != OK:
                statuses[c] = n * STATUS_STRIDE + status
                break
    return first_failure(statuses)


@kernel(parallel=True)
def gravity_batch(h, Q, TAU, threads):
    body_int, body_float, ws = model_tables(h)
    q, tau = borrow(Q), borrow(TAU)
    rows = q.shape[0]
    chunks, workspaces, statuses = chunk_setup(rows, threads, ws)
    for c in prange(chunks):
        w = chunk_workspace(workspaces, c, ws)
        for n in chunk_rows(c, chunks, rows):
            status = gravity_rnea(body_int, body_float, w, q[n], tau[n])
            if status != OK:
                statuses[c] = n * STATUS_STRIDE + status
                break
    return first_failure(statuses)


@kernel(parallel=True)
def crba_batch(h, Q, H, threads):
    body_int, body_float, ws = model_tables(h)
    q, out = borrow(Q), borrow(H)
    rows = q.shape[0]
    chunks, workspaces, statuses = chunk_setup(rows, threads, ws)
    for c in prange(chunks):
        w = chunk_workspace(workspaces, c, ws)
        for n in chunk_rows(c, chunks, rows):
            status = crba(body_int, body_float, w, q[n], out[n])
            if status != OK:
                statuses[c] = n * STATUS_STRIDE + status
                break
    return first_failure(statuses)


@kernel(parallel=True)
def aba_batch(h, Q, V, TAU, F_EXT, VDOT, threads):
    """F_EXT has one row, shared by all, or one per configuration."""
    body_int, body_float, ws = model_tables(h)
    q, v, tau, f_ext, vdot = borrow(Q), borrow(V), borrow(TAU), borrow(F_EXT), borrow(VDOT)
    rows = q.shape[0]
    chunks, workspaces, statuses = chunk_setup(rows, threads, ws)
    for c in prange(chunks):
        w = chunk_workspace(workspaces, c, ws)
        for n in chunk_rows(c, chunks, rows):
            f = f_ext[0] if f_ext.shape[0] == 1 else f_ext[n]
            status = aba(body_int, body_float, w, q[n], v[n], tau[n], f, vdot[n])
            if status != OK:
                statuses[c] = n * STATUS_STRIDE + status
                break
    return first_failure(statuses)


@kernel(parallel=True)
def rnea_derivatives_batch(h, Q, V, A, F_EXT, DQ, DV, M, threads):
    """F_EXT has one row, shared by all, or one per configuration. Each chunk has its own
    copies of the workspace and the dof workspace."""
    body_int, body_float, ws = model_tables(h)
    dof_ws, dof_parent = dof_tables(h)
    q, v, a, f_ext = borrow(Q), borrow(V), borrow(A), borrow(F_EXT)
    dq, dv, m = borrow(DQ), borrow(DV), borrow(M)
    rows = q.shape[0]
    chunks, workspaces, statuses = chunk_setup(rows, threads, ws)
    dof_workspaces = np.empty((chunks, dof_ws.shape[0]))
    for c in prange(chunks):
        w, dw = chunk_workspace(workspaces, c, ws), borrow(dof_workspaces[c])
        for n in chunk_rows(c, chunks, rows):
            f = f_ext[0] if f_ext.shape[0] == 1 else f_ext[n]
            status = rnea_derivatives(body_int, body_float, w, dw, dof_parent, q[n], v[n], a[n],
                                      f, dq[n], dv[n], m[n])
            if status != OK:
                statuses[c] = n * STATUS_STRIDE + status
                break
    return first_failure(statuses)


@kernel(parallel=True)
def aba_derivatives_batch(h, Q, V, TAU, F_EXT, DQ, DV, MINV, threads):
    """F_EXT has one row, shared by all, or one per configuration. Each chunk has its own
    copies of the workspace, the dof workspace and the dof vectors."""
    body_int, body_float, ws = model_tables(h)
    dof_ws, dof_parent = dof_tables(h)
    q, v, tau, f_ext = borrow(Q), borrow(V), borrow(TAU), borrow(F_EXT)
    dq, dv, minv = borrow(DQ), borrow(DV), borrow(MINV)
    rows = q.shape[0]
    chunks, workspaces, statuses = chunk_setup(rows, threads, ws)
    dof_workspaces = np.empty((chunks, dof_ws.shape[0]))
    vector_sets = np.empty((chunks, DOF_VECTORS * h[H_NDOF]))
    for c in prange(chunks):
        w, dw, vs = (chunk_workspace(workspaces, c, ws), borrow(dof_workspaces[c]),
                     borrow(vector_sets[c]))
        for n in chunk_rows(c, chunks, rows):
            f = f_ext[0] if f_ext.shape[0] == 1 else f_ext[n]
            status = aba_derivatives(body_int, body_float, w, dw, dof_parent, vs, q[n], v[n],
                                     tau[n], f, dq[n], dv[n], minv[n])
            if status != OK:
                statuses[c] = n * STATUS_STRIDE + status
                break
    return first_failure(statuses)


@kernel(parallel=True)
def gravity_derivatives_batch(h, Q, DG, threads):
    body_int, body_float, ws = model_tables(h)
    dof_ws, dof_parent = dof_tables(h)
    q, dg = borrow(Q), borrow(DG)
    rows = q.shape[0]
    chunks, workspaces, statuses = chunk_setup(rows, threads, ws)
    dof_workspaces = np.empty((chunks, dof_ws.shape[0]))
    for c in prange(chunks):
        w, dw = chunk_workspace(workspaces, c, ws), borrow(dof_workspaces[c])
        for n in chunk_rows(c, chunks, rows):
            status = gravity_derivatives(body_int, body_float, w, dw, dof_parent, q[n], dg[n])
            if status != OK:
                statuses[c] = n * STATUS_STRIDE + status
                break
    return first_failure(statuses)


# ---- batches: rows in turn (cheap per row, or rarely batched) ---------------------------------
# (Spelled out per algorithm, as the parallel ones above are.)
@kernel
def coriolis_batch(h, Q, V, C):
    body_int, body_float, ws = model_tables(h)
    dof_ws, dof_parent = dof_tables(h)
    q, v, out = borrow(Q), borrow(V), borrow(C)
    for n in range(q.shape[0]):
        status = coriolis_matrix(body_int, body_float, ws, dof_ws, dof_parent, q[n], v[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def regressor_batch(h, Q, V, A, Y, first, count):
    body_int, body_float, ws = model_tables(h)
    q, v, a, out = borrow(Q), borrow(V), borrow(A), borrow(Y)
    for n in range(q.shape[0]):
        status = inertial_regressor(body_int, body_float, ws, q[n], v[n], a[n], out[n], first,
                                    count)
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def frame_velocity_derivatives_batch(h, Q, V, frame, reference, DQ, DV):
    body_int, body_float, ws = model_tables(h)
    q, v, dq, dv = borrow(Q), borrow(V), borrow(DQ), borrow(DV)
    for n in range(q.shape[0]):
        status = frame_velocity_derivatives(body_int, body_float, ws, q[n], v[n], frame,
                                            reference, dq[n], dv[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def center_of_mass_batch(h, Q, OUT):
    body_int, body_float, ws = model_tables(h)
    q, out = borrow(Q), borrow(OUT)
    for n in range(q.shape[0]):
        status = center_of_mass(body_int, body_float, ws, q[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def kinetic_energy_batch(h, Q, V, OUT):
    body_int, body_float, ws = model_tables(h)
    q, v, out = borrow(Q), borrow(V), borrow(OUT)
    for n in range(q.shape[0]):
        status = kinetic_energy(body_int, body_float, ws, q[n], v[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def potential_energy_batch(h, Q, OUT):
    body_int, body_float, ws = model_tables(h)
    q, out = borrow(Q), borrow(OUT)
    for n in range(q.shape[0]):
        status = potential_energy(body_int, body_float, ws, q[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def integrate_batch(h, Q, V, dt, OUT):
    body_int, _, _ = model_tables(h)
    q, v, out = borrow(Q), borrow(V), borrow(OUT)
    for n in range(q.shape[0]):
        status = integrate(body_int, q[n], v[n], dt, out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def difference_batch(h, Q0, Q1, periodic, wrap, OUT):
    body_int, _, _ = model_tables(h)
    q0, q1, out = borrow(Q0), borrow(Q1), borrow(OUT)
    for n in range(q0.shape[0]):
        status = difference(body_int, q0[n], q1[n], periodic, wrap, out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def interpolate_batch(h, Q0, Q1, U, periodic, wrap, OUT):
    body_int, _, _ = model_tables(h)
    q0, q1, u, out = borrow(Q0), borrow(Q1), borrow(U), borrow(OUT)
    for n in range(q0.shape[0]):
        status = interpolate(body_int, q0[n], q1[n], u[n], periodic, wrap, out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def center_of_mass_jacobian_batch(h, Q, J):
    body_int, body_float, ws = model_tables(h)
    q, out = borrow(Q), borrow(J)
    for n in range(q.shape[0]):
        status = center_of_mass_jacobian(body_int, body_float, ws, q[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def centroidal_momentum_batch(h, Q, V, OUT):
    body_int, body_float, ws = model_tables(h)
    q, v, out = borrow(Q), borrow(V), borrow(OUT)
    for n in range(q.shape[0]):
        status = centroidal_momentum(body_int, body_float, ws, q[n], v[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK


@kernel
def centroidal_momentum_matrix_batch(h, Q, A):
    body_int, body_float, ws = model_tables(h)
    q, out = borrow(Q), borrow(A)
    for n in range(q.shape[0]):
        status = centroidal_momentum_matrix(body_int, body_float, ws, q[n], out[n])
        if status != OK:
            return n * STATUS_STRIDE + status
    return OK
