"""The analysis's compiled loops (numba, cached on disk; interpreted with RBD_ROS_NO_JIT=1, as
the dynamics kernels are): the byte-level work between a log's file and its arrays, the
zero-phase filter, and the normal equations. Each is a plain loop over flat arrays whose order
of operations is fixed, so a log's numbers do not depend on the process, thread count or BLAS
that computed them (Dask workers give the serial run's numbers to the bit).

- mcap_records     the records of an MCAP chunk (or data section): opcode, extent; a message's
                   channel and log time
- gather_fixed     messages that share one byte layout: check their layout bytes against a
                   template and copy their fields (stamps, float64 arrays) into rows
- sos_filtfilt     zero-phase second-order-sections filter, scipy.signal.sosfiltfilt's
                   arithmetic (odd padding, steady-state initial conditions)
- normal_equations the least squares' A^T A, A^T b, b^T b over friction columns (two per
                   joint: v and sign(v), on that joint's row only) and payload columns (the
                   inertial regressor's ten), without forming A
- residual_sums    per column: sum r, r^2, max |r|, sum v, v^2, r v (joint_residual_sums:
                   with the URDF's joint friction added to the model's torque first)
"""
import numpy as np

from rbd_ros.dynamics._jit import kernel

#: MCAP opcodes read here
OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK = 0x03, 0x04, 0x05, 0x06


@kernel
def _u64(buf, at):
    value = 0
    for k in range(8):
        value |= np.int64(buf[at + k]) << (8 * k)
    return value


@kernel
def mcap_records(buf, start, end, op, at, size, channel, log_time):
    """Walk the records of buf[start:end] (opcode u8, length u64, content). With ``op`` of
    length 0, only count them; else fill op (opcode), at (content's offset), size (content's
    length) and, for messages (opcode 5), channel (u16) and log_time (u64); others get -1.
    Returns the number of records, or -1 when a record runs past ``end`` (corrupt or cut
    short)."""
    n = 0
    p = start
    fill = op.shape[0] > 0
    while p < end:
        if p + 9 > end:
            return -1
        length = _u64(buf, p + 1)
        if length < 0 or length > end - p - 9:
            return -1
        if fill:
            code = np.int64(buf[p])
            op[n] = code
            at[n] = p + 9
            size[n] = length
            if code == OP_MESSAGE and length >= 22:
                channel[n] = np.int64(buf[p + 9]) | (np.int64(buf[p + 10]) << 8)
                log_time[n] = _u64(buf, p + 15)
            else:
                channel[n] = -1
                log_time[n] = -1
        n += 1
        p += 9 + length
    return n


@kernel
def gather_fixed(buf, offsets, lengths, size, template, checks, fields, swap, out, ok):
    """For each message (bytes buf[offsets[i]:offsets[i] + lengths[i]]): ok[i] = 1 when it has
    ``size`` bytes and its bytes in every range of ``checks`` (rows: start, stop) equal
    ``template``'s; then its fields (rows of ``fields``: offset in the message, offset in the
    output row, bytes, element width) are copied into out[i] (element bytes reversed when
    ``swap``: a big-endian message). Returns the number of messages with ok."""
    count = 0
    flat = out.reshape(-1)
    row = out.shape[1]
    for i in range(offsets.shape[0]):
        ok[i] = 0
        if lengths[i] != size:
            continue
        o = offsets[i]
        differ = 0
        for c in range(checks.shape[0]):
            lo, hi = checks[c, 0], checks[c, 1]
            mine, theirs = buf[o + lo:o + hi], template[lo:hi]
            for k in range(hi - lo):        # (whole ranges, no early exit: vectorised)
                differ |= mine[k] ^ theirs[k]
        if differ:
            continue
        ok[i] = 1
        count += 1
        for f in range(fields.shape[0]):
            src, dst, nbytes, width = fields[f, 0], fields[f, 1], fields[f, 2], fields[f, 3]
            source = buf[o + src:o + src + nbytes]
            target = flat[i * row + dst:i * row + dst + nbytes]
            if swap:
                for e in range(0, nbytes, width):
                    for b in range(width):
                        target[e + b] = source[e + width - 1 - b]
            else:
                for b in range(nbytes):
                    target[b] = source[b]
    return count


@kernel
def _sosfilt_pass(sos, z, x, y, reverse):
    """One direct-form-II-transposed pass of the sections over the rows of x (m, k) into y,
    each column from its state z (sections, 2, k), in scipy's _sosfilt order of operations;
    backwards when ``reverse``. The columns side by side: one row's work is contiguous."""
    m, k = x.shape
    sections = sos.shape[0]
    cur = np.empty(k)
    for step in range(m):
        i = m - 1 - step if reverse else step
        for j in range(k):
            cur[j] = x[i, j]
        for s in range(sections):
            b0, b1, b2, a1, a2 = sos[s, 0], sos[s, 1], sos[s, 2], sos[s, 4], sos[s, 5]
            for j in range(k):
                new = b0 * cur[j] + z[s, 0, j]
                z[s, 0, j] = b1 * cur[j] - a1 * new + z[s, 1, j]
                z[s, 1, j] = b2 * cur[j] - a2 * new
                cur[j] = new
        for j in range(k):
            y[i, j] = cur[j]


@kernel
def sos_filtfilt(sos, zi, pad, x, out):
    """Each column of x (n, k) filtered forward and backward into out (n, k): the column
    extended by ``pad`` samples of odd reflection at each end, the forward pass started in the
    steady state of its first sample, the backward pass in that of the forward's last;
    scipy.signal.sosfiltfilt(sos, x, axis=0) with its default padding."""
    n, k = x.shape
    m = n + 2 * pad
    ext = np.empty((m, k))
    fwd = np.empty((m, k))
    for i in range(pad):
        for j in range(k):
            ext[i, j] = 2.0 * x[0, j] - x[pad - i, j]
            ext[pad + n + i, j] = 2.0 * x[n - 1, j] - x[n - 2 - i, j]
    ext[pad:pad + n] = x
    sections = sos.shape[0]
    z = np.empty((sections, 2, k))
    for s in range(sections):
        for j in range(k):
            z[s, 0, j] = zi[s, 0] * ext[0, j]
            z[s, 1, j] = zi[s, 1] * ext[0, j]
    _sosfilt_pass(sos, z, ext, fwd, False)
    for s in range(sections):
        for j in range(k):
            z[s, 0, j] = zi[s, 0] * fwd[m - 1, j]
            z[s, 1, j] = zi[s, 1] * fwd[m - 1, j]
    _sosfilt_pass(sos, z, fwd, ext, True)
    out[:, :] = ext[pad:pad + n]


@kernel
def central_difference(x, dt, out):
    """numpy.gradient(x, dt, axis=0) (second-order inside, first-order at the ends)."""
    n, k = x.shape
    for j in range(k):
        out[0, j] = (x[1, j] - x[0, j]) / dt
        out[n - 1, j] = (x[n - 1, j] - x[n - 2, j]) / dt
        for i in range(1, n - 1):
            out[i, j] = (x[i + 1, j] - x[i - 1, j]) / (2.0 * dt)


@kernel
def residual_sums(measured, model, v, sums):
    """Per column j, sums[0..5, j] += r, r^2, (max) |r|, v, v^2, r v over the rows, in row
    order, with r = measured - model."""
    n, k = measured.shape
    for i in range(n):
        for j in range(k):
            r = measured[i, j] - model[i, j]
            w = v[i, j]
            sums[0, j] += r
            sums[1, j] += r * r
            a = abs(r)
            if a > sums[2, j]:
                sums[2, j] = a
            sums[3, j] += w
            sums[4, j] += w * w
            sums[5, j] += r * w


@kernel
def joint_residual_sums(measured, rigid, v, damping, friction, model, sums):
    """model = rigid + damping v + friction sign(v) per column (the URDF's joint friction),
    and residual_sums's sums of r = measured - model, in one pass."""
    n, k = measured.shape
    for i in range(n):
        for j in range(k):
            w = v[i, j]
            s = 1.0 if w > 0.0 else (-1.0 if w < 0.0 else 0.0)
            m = rigid[i, j] + damping[j] * w + friction[j] * s
            model[i, j] = m
            r = measured[i, j] - m
            sums[0, j] += r
            sums[1, j] += r * r
            a = abs(r)
            if a > sums[2, j]:
                sums[2, j] = a
            sums[3, j] += w
            sums[4, j] += w * w
            sums[5, j] += r * w


@kernel
def normal_equations(b, v, friction_rows, band, Y, payload, M, g, bb, left_out):
    """The normal equations of measured - model = A x over the samples of b (n, m): rows j of
    each sample with friction_rows[j] >= 0 get the friction unknowns 2 f and 2 f + 1 (f =
    friction_rows[j]) with values v[., j] and sign(v[., j]); with ``payload``, every row gets
    the ten unknowns after the friction ones, with values Y (n, m, 10). Row j of a sample whose
    speed |v[., j]| is below band[j] is left out (a joint in or near stiction: its friction is
    anything between -coulomb and coulomb) and counted in left_out[j]. Adds A^T A to M (upper
    triangle and diagonal; the caller mirrors it), A^T b to g, b^T b to bb[0] and the rows
    used to bb[1]."""
    n, m = b.shape
    nf = M.shape[0] - (10 if payload else 0)
    for i in range(n):
        for j in range(m):
            x0 = v[i, j]
            if abs(x0) < band[j]:
                left_out[j] += 1
                continue
            bij = b[i, j]
            bb[0] += bij * bij
            bb[1] += 1.0
            f = friction_rows[j]
            if f >= 0:
                c0, c1 = 2 * f, 2 * f + 1
                x1 = 1.0 if x0 > 0.0 else (-1.0 if x0 < 0.0 else 0.0)
                M[c0, c0] += x0 * x0
                M[c0, c1] += x0 * x1
                M[c1, c1] += x1 * x1
                g[c0] += x0 * bij
                g[c1] += x1 * bij
                if payload:
                    for p in range(10):
                        y = Y[i, j, p]
                        M[c0, nf + p] += x0 * y
                        M[c1, nf + p] += x1 * y
            if payload:
                for p in range(10):
                    y = Y[i, j, p]
                    g[nf + p] += y * bij
                    for r in range(p, 10):
                        M[nf + p, nf + r] += y * Y[i, j, r]


def warm_up():
    """Compile (or load from numba's cache) every kernel above, on tiny inputs."""
    buf = np.zeros(64, np.uint8)
    empty = np.zeros(0, np.int64)
    mcap_records(buf, 0, 0, empty, empty, empty, empty, empty)
    out = np.zeros((1, 8), np.uint8)
    gather_fixed(buf, np.zeros(1, np.int64), np.full(1, 8, np.int64), 8, buf,
                 np.zeros((1, 2), np.int64), np.array([[0, 0, 8, 8]], np.int64), False, out,
                 np.zeros(1, np.int64))
    x = np.zeros((40, 2))
    sos = np.array([[1.0, 2.0, 1.0, 1.0, 0.1, 0.1]])
    sos_filtfilt(sos, np.zeros((1, 2)), 3, x, np.empty_like(x))
    central_difference(x, 0.1, np.empty_like(x))
    residual_sums(x, x, x, np.zeros((6, 2)))
    joint_residual_sums(x, x, x, np.zeros(2), np.zeros(2), np.empty_like(x), np.zeros((6, 2)))
    normal_equations(x, x, np.zeros(2, np.int64), np.zeros(2), np.zeros((40, 2, 10)), True,
                     np.zeros((14, 14)), np.zeros(14), np.zeros(2), np.zeros(2, np.int64))
