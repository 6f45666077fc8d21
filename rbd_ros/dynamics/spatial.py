"""Spatial algebra on flat arrays with 3-vector arithmetic.

Every quantity is passed as (array, offset): a transform X at x is E = X[x:x+9] (row-major
rotation) and r = X[x+9:x+12], mapping child to parent coordinates (p = E c + r); a spatial
vector is 6 numbers [linear; angular]; an inertia 10 numbers (mass, h = mass * com, rotational
inertia about the origin: xx xy xz yy yz zz). Inputs are read into locals before any output
is written, so an output may alias an input.

Nothing here forms a 6x6 Plücker matrix (Pinocchio cheat sheet; docs/conventions.md):
applying X costs 24 multiplies this way instead of 36+ for a dense product.
"""
import math

from ._jit import inline_kernel


@inline_kernel
def compose(A, a, B, b, C, c):
    """C = A o B (transforms)."""
    # (unrolled like the other products here, on purpose: the nine numbers stay in registers)
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = (A[a], A[a + 1], A[a + 2], A[a + 3], A[a + 4],
                                          A[a + 5], A[a + 6], A[a + 7], A[a + 8])
    t0, t1, t2 = A[a + 9], A[a + 10], A[a + 11]
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = (B[b], B[b + 1], B[b + 2], B[b + 3], B[b + 4],
                                          B[b + 5], B[b + 6], B[b + 7], B[b + 8])
    x, y, z = B[b + 9], B[b + 10], B[b + 11]
    C[c] = a0 * b0 + a1 * b3 + a2 * b6
    C[c + 1] = a0 * b1 + a1 * b4 + a2 * b7
    C[c + 2] = a0 * b2 + a1 * b5 + a2 * b8
    C[c + 3] = a3 * b0 + a4 * b3 + a5 * b6
    C[c + 4] = a3 * b1 + a4 * b4 + a5 * b7
    C[c + 5] = a3 * b2 + a4 * b5 + a5 * b8
    C[c + 6] = a6 * b0 + a7 * b3 + a8 * b6
    C[c + 7] = a6 * b1 + a7 * b4 + a8 * b7
    C[c + 8] = a6 * b2 + a7 * b5 + a8 * b8
    C[c + 9] = a0 * x + a1 * y + a2 * z + t0
    C[c + 10] = a3 * x + a4 * y + a5 * z + t1
    C[c + 11] = a6 * x + a7 * y + a8 * z + t2


@inline_kernel
def axis_rotation(axis, k, angle, E, e):
    """E[e:e+9] = rotation by ``angle`` about the unit axis[k:k+3] (Rodrigues)."""
    c = math.cos(angle)
    s = math.sin(angle)
    t = 1.0 - c
    x, y, z = axis[k], axis[k + 1], axis[k + 2]
    E[e] = c + t * x * x
    E[e + 1] = t * x * y - s * z
    E[e + 2] = t * x * z + s * y
    E[e + 3] = t * x * y + s * z
    E[e + 4] = c + t * y * y
    E[e + 5] = t * y * z - s * x
    E[e + 6] = t * x * z - s * y
    E[e + 7] = t * y * z + s * x
    E[e + 8] = c + t * z * z


@inline_kernel
def quaternion_rotation(qx, qy, qz, qw, E, e):
    """E[e:e+9] = rotation of the quaternion [x, y, z, w] (normalised here)."""
    n = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    x, y, z, w = qx / n, qy / n, qz / n, qw / n
    E[e] = 1.0 - 2.0 * (y * y + z * z)
    E[e + 1] = 2.0 * (x * y - z * w)
    E[e + 2] = 2.0 * (x * z + y * w)
    E[e + 3] = 2.0 * (x * y + z * w)
    E[e + 4] = 1.0 - 2.0 * (x * x + z * z)
    E[e + 5] = 2.0 * (y * z - x * w)
    E[e + 6] = 2.0 * (x * z - y * w)
    E[e + 7] = 2.0 * (y * z + x * w)
    E[e + 8] = 1.0 - 2.0 * (x * x + y * y)


@inline_kernel
def motion_to_child(X, x, m, k, out, o):
    """out = X m: a twist at the parent origin in parent axes, seen at the child origin in
    child axes (Pinocchio's actInv): [E^T (m_lin - r x m_ang); E^T m_ang]."""
    ax, ay, az = m[k + 3], m[k + 4], m[k + 5]
    rx, ry, rz = X[x + 9], X[x + 10], X[x + 11]
    lx = m[k] - (ry * az - rz * ay)
    ly = m[k + 1] - (rz * ax - rx * az)
    lz = m[k + 2] - (rx * ay - ry * ax)
    e0, e1, e2, e3, e4, e5, e6, e7, e8 = (X[x], X[x + 1], X[x + 2], X[x + 3], X[x + 4],
                                          X[x + 5], X[x + 6], X[x + 7], X[x + 8])
    out[o] = e0 * lx + e3 * ly + e6 * lz
    out[o + 1] = e1 * lx + e4 * ly + e7 * lz
    out[o + 2] = e2 * lx + e5 * ly + e8 * lz
    out[o + 3] = e0 * ax + e3 * ay + e6 * az
    out[o + 4] = e1 * ax + e4 * ay + e7 * az
    out[o + 5] = e2 * ax + e5 * ay + e8 * az


@inline_kernel
def motion_to_parent(X, x, m, k, out, o):
    """out = X^-1 m: a child twist at the parent origin in parent axes (Pinocchio's act):
    [E m_lin + r x E m_ang; E m_ang]."""
    e0, e1, e2, e3, e4, e5, e6, e7, e8 = (X[x], X[x + 1], X[x + 2], X[x + 3], X[x + 4],
                                          X[x + 5], X[x + 6], X[x + 7], X[x + 8])
    rx, ry, rz = X[x + 9], X[x + 10], X[x + 11]
    ax = e0 * m[k + 3] + e1 * m[k + 4] + e2 * m[k + 5]
    ay = e3 * m[k + 3] + e4 * m[k + 4] + e5 * m[k + 5]
    az = e6 * m[k + 3] + e7 * m[k + 4] + e8 * m[k + 5]
    lx = e0 * m[k] + e1 * m[k + 1] + e2 * m[k + 2]
    ly = e3 * m[k] + e4 * m[k + 1] + e5 * m[k + 2]
    lz = e6 * m[k] + e7 * m[k + 1] + e8 * m[k + 2]
    out[o] = lx + ry * az - rz * ay
    out[o + 1] = ly + rz * ax - rx * az
    out[o + 2] = lz + rx * ay - ry * ax
    out[o + 3] = ax
    out[o + 4] = ay
    out[o + 5] = az


@inline_kernel
def force_to_parent(X, x, f, k, out, o, accumulate):
    """out (+)= X^* f: a child wrench (child origin and axes) about the parent origin in
    parent axes: [E f_lin; E f_ang + r x E f_lin]. ``accumulate`` adds instead of storing."""
    e0, e1, e2, e3, e4, e5, e6, e7, e8 = (X[x], X[x + 1], X[x + 2], X[x + 3], X[x + 4],
                                          X[x + 5], X[x + 6], X[x + 7], X[x + 8])
    rx, ry, rz = X[x + 9], X[x + 10], X[x + 11]
    f0, f1, f2, f3, f4, f5 = f[k], f[k + 1], f[k + 2], f[k + 3], f[k + 4], f[k + 5]
    lx = e0 * f0 + e1 * f1 + e2 * f2
    ly = e3 * f0 + e4 * f1 + e5 * f2
    lz = e6 * f0 + e7 * f1 + e8 * f2
    ax = e0 * f3 + e1 * f4 + e2 * f5 + ry * lz - rz * ly
    ay = e3 * f3 + e4 * f4 + e5 * f5 + rz * lx - rx * lz
    az = e6 * f3 + e7 * f4 + e8 * f5 + rx * ly - ry * lx
    if accumulate:
        out[o] += lx
        out[o + 1] += ly
        out[o + 2] += lz
        out[o + 3] += ax
        out[o + 4] += ay
        out[o + 5] += az
    else:
        out[o] = lx
        out[o + 1] = ly
        out[o + 2] = lz
        out[o + 3] = ax
        out[o + 4] = ay
        out[o + 5] = az


@inline_kernel
def motion_cross(v, k, m, j, out, o):
    """out = v x m = [w x m_lin + v_lin x m_ang; w x m_ang]."""
    vx, vy, vz, wx, wy, wz = v[k], v[k + 1], v[k + 2], v[k + 3], v[k + 4], v[k + 5]
    m0, m1, m2, m3, m4, m5 = m[j], m[j + 1], m[j + 2], m[j + 3], m[j + 4], m[j + 5]
    out[o] = wy * m2 - wz * m1 + vy * m5 - vz * m4
    out[o + 1] = wz * m0 - wx * m2 + vz * m3 - vx * m5
    out[o + 2] = wx * m1 - wy * m0 + vx * m4 - vy * m3
    out[o + 3] = wy * m5 - wz * m4
    out[o + 4] = wz * m3 - wx * m5
    out[o + 5] = wx * m4 - wy * m3


@inline_kernel
def inertia_times_motion(Y, y, m, k, out, o):
    """out = Y m = [mass m_lin + m_ang x h; I m_ang + h x m_lin]."""
    mass, hx, hy, hz = Y[y], Y[y + 1], Y[y + 2], Y[y + 3]
    lx, ly, lz, ax, ay, az = m[k], m[k + 1], m[k + 2], m[k + 3], m[k + 4], m[k + 5]
    out[o] = mass * lx + ay * hz - az * hy
    out[o + 1] = mass * ly + az * hx - ax * hz
    out[o + 2] = mass * lz + ax * hy - ay * hx
    out[o + 3] = Y[y + 4] * ax + Y[y + 5] * ay + Y[y + 6] * az + hy * lz - hz * ly
    out[o + 4] = Y[y + 5] * ax + Y[y + 7] * ay + Y[y + 8] * az + hz * lx - hx * lz
    out[o + 5] = Y[y + 6] * ax + Y[y + 8] * ay + Y[y + 9] * az + hx * ly - hy * lx


@inline_kernel
def add_bias_force(Y, y, v, k, out, o):
    """out += v x* (Y v), in the cheat sheet's five-cross-product form (no 6x6 matrix)."""
    mass, hx, hy, hz = Y[y], Y[y + 1], Y[y + 2], Y[y + 3]
    vx, vy, vz, wx, wy, wz = v[k], v[k + 1], v[k + 2], v[k + 3], v[k + 4], v[k + 5]
    # momentum: p = m v + w x h ; L = I w + h x v
    px = mass * vx + wy * hz - wz * hy
    py = mass * vy + wz * hx - wx * hz
    pz = mass * vz + wx * hy - wy * hx
    Lx = Y[y + 4] * wx + Y[y + 5] * wy + Y[y + 6] * wz + hy * vz - hz * vy
    Ly = Y[y + 5] * wx + Y[y + 7] * wy + Y[y + 8] * wz + hz * vx - hx * vz
    Lz = Y[y + 6] * wx + Y[y + 8] * wy + Y[y + 9] * wz + hx * vy - hy * vx
    # v x* [p; L] = [w x p; w x L + v x p]
    out[o] += wy * pz - wz * py
    out[o + 1] += wz * px - wx * pz
    out[o + 2] += wx * py - wy * px
    out[o + 3] += wy * Lz - wz * Ly + vy * pz - vz * py
    out[o + 4] += wz * Lx - wx * Lz + vz * px - vx * pz
    out[o + 5] += wx * Ly - wy * Lx + vx * py - vy * px


@inline_kernel
def congruence(E, m00, m01, m02, m10, m11, m12, m20, m21, m22):
    """E M E^T for a 3x3 M, with E a row-major 9-tuple; a row-major 9-tuple."""
    t00 = E[0] * m00 + E[1] * m10 + E[2] * m20        # T = E M
    t01 = E[0] * m01 + E[1] * m11 + E[2] * m21
    t02 = E[0] * m02 + E[1] * m12 + E[2] * m22
    t10 = E[3] * m00 + E[4] * m10 + E[5] * m20
    t11 = E[3] * m01 + E[4] * m11 + E[5] * m21
    t12 = E[3] * m02 + E[4] * m12 + E[5] * m22
    t20 = E[6] * m00 + E[7] * m10 + E[8] * m20
    t21 = E[6] * m01 + E[7] * m11 + E[8] * m21
    t22 = E[6] * m02 + E[7] * m12 + E[8] * m22
    return (t00 * E[0] + t01 * E[1] + t02 * E[2],    # T E^T
            t00 * E[3] + t01 * E[4] + t02 * E[5],
            t00 * E[6] + t01 * E[7] + t02 * E[8],
            t10 * E[0] + t11 * E[1] + t12 * E[2],
            t10 * E[3] + t11 * E[4] + t12 * E[5],
            t10 * E[6] + t11 * E[7] + t12 * E[8],
            t20 * E[0] + t21 * E[1] + t22 * E[2],
            t20 * E[3] + t21 * E[4] + t22 * E[5],
            t20 * E[6] + t21 * E[7] + t22 * E[8])


@inline_kernel
def add_inertia_to_parent(X, x, Y, y, acc, a):
    """acc += X^* Y X: a child 10-parameter inertia expressed in the parent frame.

    Rotate (m, h, I) and shift the origin by r: h' = E h + m r,
    I' = E I E^T - (r k^T + k r^T - 2 (k.r) 1) - m (r r^T - |r|^2 1), with k = E h.
    """
    E = (X[x], X[x + 1], X[x + 2], X[x + 3], X[x + 4], X[x + 5], X[x + 6], X[x + 7], X[x + 8])
    r0, r1, r2 = X[x + 9], X[x + 10], X[x + 11]
    mass, h0, h1, h2 = Y[y], Y[y + 1], Y[y + 2], Y[y + 3]
    i00, i01, i02, i11, i12, i22 = Y[y + 4], Y[y + 5], Y[y + 6], Y[y + 7], Y[y + 8], Y[y + 9]
    k0 = E[0] * h0 + E[1] * h1 + E[2] * h2
    k1 = E[3] * h0 + E[4] * h1 + E[5] * h2
    k2 = E[6] * h0 + E[7] * h1 + E[8] * h2
    R = congruence(E, i00, i01, i02, i01, i11, i12, i02, i12, i22)     # E I E^T
    kr = k0 * r0 + k1 * r1 + k2 * r2
    rr = r0 * r0 + r1 * r1 + r2 * r2
    acc[a] += mass
    acc[a + 1] += k0 + mass * r0
    acc[a + 2] += k1 + mass * r1
    acc[a + 3] += k2 + mass * r2
    acc[a + 4] += R[0] - 2.0 * r0 * k0 + 2.0 * kr - mass * (r0 * r0 - rr)
    acc[a + 5] += R[1] - (r0 * k1 + k0 * r1) - mass * r0 * r1
    acc[a + 6] += R[2] - (r0 * k2 + k0 * r2) - mass * r0 * r2
    acc[a + 7] += R[4] - 2.0 * r1 * k1 + 2.0 * kr - mass * (r1 * r1 - rr)
    acc[a + 8] += R[5] - (r1 * k2 + k1 * r2) - mass * r1 * r2
    acc[a + 9] += R[8] - 2.0 * r2 * k2 + 2.0 * kr - mass * (r2 * r2 - rr)


# ---- six-vectors and packed symmetric 6x6 matrices ----------------------------------------
@inline_kernel
def zero6(out, o):
    """out[o:o+6] = 0."""
    for k in range(6):
        out[o + k] = 0.0


@inline_kernel
def add6(x, k, out, o):
    """out[o:o+6] += x[k:k+6]."""
    for n in range(6):
        out[o + n] += x[k + n]


@inline_kernel
def subtract_row6(table, i, out, o):
    """out[o:o+6] -= table[i, :6] (a row of an (n x 6) table such as f_ext)."""
    for n in range(6):
        out[o + n] -= table[i, n]


@inline_kernel
def copy_inertia(Y, y, out, o):
    """out[o:o+10] = the inertia at Y[y:y+10]."""
    for k in range(10):
        out[o + k] = Y[y + k]


@inline_kernel
def add_motion_cross(v, k, m, j, out, o):
    """out += v x m (motion_cross, accumulated)."""
    vx, vy, vz, wx, wy, wz = v[k], v[k + 1], v[k + 2], v[k + 3], v[k + 4], v[k + 5]
    m0, m1, m2, m3, m4, m5 = m[j], m[j + 1], m[j + 2], m[j + 3], m[j + 4], m[j + 5]
    out[o] += wy * m2 - wz * m1 + vy * m5 - vz * m4
    out[o + 1] += wz * m0 - wx * m2 + vz * m3 - vx * m5
    out[o + 2] += wx * m1 - wy * m0 + vx * m4 - vy * m3
    out[o + 3] += wy * m5 - wz * m4
    out[o + 4] += wz * m3 - wx * m5
    out[o + 5] += wx * m4 - wy * m3


@inline_kernel
def add_force_cross(m, k, f, j, out, o):
    """out += m x* f = [w x f_lin; w x f_ang + u x f_lin] for the motion m = [u; w]."""
    ux, uy, uz, wx, wy, wz = m[k], m[k + 1], m[k + 2], m[k + 3], m[k + 4], m[k + 5]
    f0, f1, f2, f3, f4, f5 = f[j], f[j + 1], f[j + 2], f[j + 3], f[j + 4], f[j + 5]
    out[o] += wy * f2 - wz * f1
    out[o + 1] += wz * f0 - wx * f2
    out[o + 2] += wx * f1 - wy * f0
    out[o + 3] += wy * f5 - wz * f4 + uy * f2 - uz * f1
    out[o + 4] += wz * f3 - wx * f5 + uz * f0 - ux * f2
    out[o + 5] += wx * f4 - wy * f3 + ux * f1 - uy * f0


# SYM[6 r + c]: where entry (r, c) of a packed symmetric 6x6 is (row r holds columns r..5:
# 21 numbers, the upper triangle row by row).
SYM = tuple(min(r, c) * 6 - min(r, c) * (min(r, c) - 1) // 2 + abs(c - r)
            for r in range(6) for c in range(6))


@inline_kernel
def symmetric6_times(M, m, x, k, out, o):
    """out[o:o+6] = M x for the packed symmetric 6x6 M at m."""
    x0, x1, x2, x3, x4, x5 = x[k], x[k + 1], x[k + 2], x[k + 3], x[k + 4], x[k + 5]
    for r in range(6):
        b = 6 * r
        out[o + r] = (M[m + SYM[b]] * x0 + M[m + SYM[b + 1]] * x1 + M[m + SYM[b + 2]] * x2
                      + M[m + SYM[b + 3]] * x3 + M[m + SYM[b + 4]] * x4 + M[m + SYM[b + 5]] * x5)


@inline_kernel
def dot6(x, k, y, j):
    """x[k:k+6] . y[j:j+6] (a force's power on a motion, or S_k^T a: one column of U^T a)."""
    return (x[k] * y[j] + x[k + 1] * y[j + 1] + x[k + 2] * y[j + 2] + x[k + 3] * y[j + 3]
            + x[k + 4] * y[j + 4] + x[k + 5] * y[j + 5])
