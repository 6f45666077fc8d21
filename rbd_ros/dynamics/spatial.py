"""Spatial algebra on flat arrays with 3-vector arithmetic.

Spatial vectors are [linear; angular] 6-vectors, rotations 9 numbers row-major. A rigid
transform (E, r) maps child coordinates to parent ones: x_parent = E x_child + r. Nothing here
forms a 6x6 Plücker matrix (Pinocchio cheat sheet, ../shared/CONVENTIONS.md): a motion
transform costs 24 multiplies this way instead of 36+ for a dense product.

Every function writes into an ``out`` argument so compiled callers never allocate.
"""
import math

from ._jit import kernel


@kernel
def rotate(E, x, out):
    """out = E x"""
    x0, x1, x2 = x[0], x[1], x[2]
    out[0] = E[0] * x0 + E[1] * x1 + E[2] * x2
    out[1] = E[3] * x0 + E[4] * x1 + E[5] * x2
    out[2] = E[6] * x0 + E[7] * x1 + E[8] * x2


@kernel
def rotate_inv(E, x, out):
    """out = E^T x"""
    x0, x1, x2 = x[0], x[1], x[2]
    out[0] = E[0] * x0 + E[3] * x1 + E[6] * x2
    out[1] = E[1] * x0 + E[4] * x1 + E[7] * x2
    out[2] = E[2] * x0 + E[5] * x1 + E[8] * x2


@kernel
def compose(E1, r1, E2, r2, E_out, r_out):
    """(E_out, r_out) = (E1, r1) o (E2, r2); the outputs must not alias the inputs."""
    for i in range(3):
        for j in range(3):
            E_out[3 * i + j] = (E1[3 * i] * E2[j] + E1[3 * i + 1] * E2[3 + j]
                                + E1[3 * i + 2] * E2[6 + j])
    rotate(E1, r2, r_out)
    r_out[0] += r1[0]
    r_out[1] += r1[1]
    r_out[2] += r1[2]


@kernel
def axis_rotation(axis, angle, E):
    """Rodrigues: rotation by ``angle`` about the unit ``axis``."""
    c = math.cos(angle)
    s = math.sin(angle)
    t = 1.0 - c
    x, y, z = axis[0], axis[1], axis[2]
    E[0] = c + t * x * x
    E[1] = t * x * y - s * z
    E[2] = t * x * z + s * y
    E[3] = t * x * y + s * z
    E[4] = c + t * y * y
    E[5] = t * y * z - s * x
    E[6] = t * x * z - s * y
    E[7] = t * y * z + s * x
    E[8] = c + t * z * z


@kernel
def quaternion_rotation(qx, qy, qz, qw, E):
    """Rotation matrix of the quaternion [x, y, z, w] (normalised here)."""
    n = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    x, y, z, w = qx / n, qy / n, qz / n, qw / n
    E[0] = 1.0 - 2.0 * (y * y + z * z)
    E[1] = 2.0 * (x * y - z * w)
    E[2] = 2.0 * (x * z + y * w)
    E[3] = 2.0 * (x * y + z * w)
    E[4] = 1.0 - 2.0 * (x * x + z * z)
    E[5] = 2.0 * (y * z - x * w)
    E[6] = 2.0 * (x * z - y * w)
    E[7] = 2.0 * (y * z + x * w)
    E[8] = 1.0 - 2.0 * (x * x + y * y)


@kernel
def motion_to_child(E, r, m, out):
    """out = X m: a twist at the parent origin in parent axes, seen at the child origin in
    child axes (Pinocchio's actInv): [E^T (m_lin - r x m_ang); E^T m_ang]."""
    lx = m[0] - (r[1] * m[5] - r[2] * m[4])
    ly = m[1] - (r[2] * m[3] - r[0] * m[5])
    lz = m[2] - (r[0] * m[4] - r[1] * m[3])
    ax, ay, az = m[3], m[4], m[5]
    out[0] = E[0] * lx + E[3] * ly + E[6] * lz
    out[1] = E[1] * lx + E[4] * ly + E[7] * lz
    out[2] = E[2] * lx + E[5] * ly + E[8] * lz
    out[3] = E[0] * ax + E[3] * ay + E[6] * az
    out[4] = E[1] * ax + E[4] * ay + E[7] * az
    out[5] = E[2] * ax + E[5] * ay + E[8] * az


@kernel
def motion_to_parent(E, r, m, out):
    """out = X^-1 m: a child twist expressed at the parent origin in parent axes (act)."""
    ax = E[0] * m[3] + E[1] * m[4] + E[2] * m[5]
    ay = E[3] * m[3] + E[4] * m[4] + E[5] * m[5]
    az = E[6] * m[3] + E[7] * m[4] + E[8] * m[5]
    lx = E[0] * m[0] + E[1] * m[1] + E[2] * m[2]
    ly = E[3] * m[0] + E[4] * m[1] + E[5] * m[2]
    lz = E[6] * m[0] + E[7] * m[1] + E[8] * m[2]
    out[0] = lx + r[1] * az - r[2] * ay
    out[1] = ly + r[2] * ax - r[0] * az
    out[2] = lz + r[0] * ay - r[1] * ax
    out[3] = ax
    out[4] = ay
    out[5] = az


@kernel
def force_to_parent(E, r, f, out):
    """out = X^* f: a child wrench (about the child origin, child axes) about the parent
    origin in parent axes: [E f_lin; E f_ang + r x E f_lin]."""
    lx = E[0] * f[0] + E[1] * f[1] + E[2] * f[2]
    ly = E[3] * f[0] + E[4] * f[1] + E[5] * f[2]
    lz = E[6] * f[0] + E[7] * f[1] + E[8] * f[2]
    out[0] = lx
    out[1] = ly
    out[2] = lz
    out[3] = E[0] * f[3] + E[1] * f[4] + E[2] * f[5] + r[1] * lz - r[2] * ly
    out[4] = E[3] * f[3] + E[4] * f[4] + E[5] * f[5] + r[2] * lx - r[0] * lz
    out[5] = E[6] * f[3] + E[7] * f[4] + E[8] * f[5] + r[0] * ly - r[1] * lx


@kernel
def add_force_to_parent(E, r, f, acc):
    """acc += X^* f (see force_to_parent)."""
    lx = E[0] * f[0] + E[1] * f[1] + E[2] * f[2]
    ly = E[3] * f[0] + E[4] * f[1] + E[5] * f[2]
    lz = E[6] * f[0] + E[7] * f[1] + E[8] * f[2]
    acc[0] += lx
    acc[1] += ly
    acc[2] += lz
    acc[3] += E[0] * f[3] + E[1] * f[4] + E[2] * f[5] + r[1] * lz - r[2] * ly
    acc[4] += E[3] * f[3] + E[4] * f[4] + E[5] * f[5] + r[2] * lx - r[0] * lz
    acc[5] += E[6] * f[3] + E[7] * f[4] + E[8] * f[5] + r[0] * ly - r[1] * lx


@kernel
def force_to_child(E, r, f, out):
    """out = X^-* f: a parent wrench (parent origin and axes) about the child origin in
    child axes: [E^T f_lin; E^T (f_ang - r x f_lin)]."""
    ax = f[3] - (r[1] * f[2] - r[2] * f[1])
    ay = f[4] - (r[2] * f[0] - r[0] * f[2])
    az = f[5] - (r[0] * f[1] - r[1] * f[0])
    lx, ly, lz = f[0], f[1], f[2]
    out[0] = E[0] * lx + E[3] * ly + E[6] * lz
    out[1] = E[1] * lx + E[4] * ly + E[7] * lz
    out[2] = E[2] * lx + E[5] * ly + E[8] * lz
    out[3] = E[0] * ax + E[3] * ay + E[6] * az
    out[4] = E[1] * ax + E[4] * ay + E[7] * az
    out[5] = E[2] * ax + E[5] * ay + E[8] * az


@kernel
def motion_cross(v, m, out):
    """out = v x m = [w x m_lin + v_lin x m_ang; w x m_ang]; out must not alias v or m."""
    out[0] = v[4] * m[2] - v[5] * m[1] + v[1] * m[5] - v[2] * m[4]
    out[1] = v[5] * m[0] - v[3] * m[2] + v[2] * m[3] - v[0] * m[5]
    out[2] = v[3] * m[1] - v[4] * m[0] + v[0] * m[4] - v[1] * m[3]
    out[3] = v[4] * m[5] - v[5] * m[4]
    out[4] = v[5] * m[3] - v[3] * m[5]
    out[5] = v[3] * m[4] - v[4] * m[3]


@kernel
def inertia_times_motion(inertia, m, out):
    """out = Y m for the 10-parameter inertia (mass, h = mass*com, I about the origin):
    [mass m_lin + m_ang x h; I m_ang + h x m_lin]."""
    mass, hx, hy, hz = inertia[0], inertia[1], inertia[2], inertia[3]
    ixx, ixy, ixz, iyy, iyz, izz = (inertia[4], inertia[5], inertia[6], inertia[7],
                                    inertia[8], inertia[9])
    lx, ly, lz, ax, ay, az = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] = mass * lx + ay * hz - az * hy
    out[1] = mass * ly + az * hx - ax * hz
    out[2] = mass * lz + ax * hy - ay * hx
    out[3] = ixx * ax + ixy * ay + ixz * az + hy * lz - hz * ly
    out[4] = ixy * ax + iyy * ay + iyz * az + hz * lx - hx * lz
    out[5] = ixz * ax + iyz * ay + izz * az + hx * ly - hy * lx


@kernel
def add_bias_force(inertia, v, out):
    """out += v x* (Y v), in the cheat sheet's five-cross-product form (no 6x6 matrix)."""
    mass, hx, hy, hz = inertia[0], inertia[1], inertia[2], inertia[3]
    vx, vy, vz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
    # momentum: p = m v + w x h ; L = I w + h x v
    px = mass * vx + wy * hz - wz * hy
    py = mass * vy + wz * hx - wx * hz
    pz = mass * vz + wx * hy - wy * hx
    Lx = inertia[4] * wx + inertia[5] * wy + inertia[6] * wz + hy * vz - hz * vy
    Ly = inertia[5] * wx + inertia[7] * wy + inertia[8] * wz + hz * vx - hx * vz
    Lz = inertia[6] * wx + inertia[8] * wy + inertia[9] * wz + hx * vy - hy * vx
    # v x* [p; L] = [w x p; w x L + v x p]
    out[0] += wy * pz - wz * py
    out[1] += wz * px - wx * pz
    out[2] += wx * py - wy * px
    out[3] += wy * Lz - wz * Ly + vy * pz - vz * py
    out[4] += wz * Lx - wx * Lz + vz * px - vx * pz
    out[5] += wx * Ly - wy * Lx + vx * py - vy * px


@kernel
def add_inertia_to_parent(E, r, inertia, acc):
    """acc += X^* Y X: a child 10-parameter inertia expressed in the parent frame.

    Rotate (m, h, I) and shift the origin by r: h' = E h + m r,
    I' = E I E^T - (r k^T + k r^T - 2 (k.r) 1) - m (r r^T - |r|^2 1), with k = E h.
    """
    mass = inertia[0]
    k0 = E[0] * inertia[1] + E[1] * inertia[2] + E[2] * inertia[3]
    k1 = E[3] * inertia[1] + E[4] * inertia[2] + E[5] * inertia[3]
    k2 = E[6] * inertia[1] + E[7] * inertia[2] + E[8] * inertia[3]
    # E I E^T via the symmetric I
    i00, i01, i02, i11, i12, i22 = (inertia[4], inertia[5], inertia[6], inertia[7],
                                    inertia[8], inertia[9])
    # T = E I (row-major 3x3)
    t00 = E[0] * i00 + E[1] * i01 + E[2] * i02
    t01 = E[0] * i01 + E[1] * i11 + E[2] * i12
    t02 = E[0] * i02 + E[1] * i12 + E[2] * i22
    t10 = E[3] * i00 + E[4] * i01 + E[5] * i02
    t11 = E[3] * i01 + E[4] * i11 + E[5] * i12
    t12 = E[3] * i02 + E[4] * i12 + E[5] * i22
    t20 = E[6] * i00 + E[7] * i01 + E[8] * i02
    t21 = E[6] * i01 + E[7] * i11 + E[8] * i12
    t22 = E[6] * i02 + E[7] * i12 + E[8] * i22
    r0, r1, r2 = r[0], r[1], r[2]
    kr = k0 * r0 + k1 * r1 + k2 * r2
    rr = r0 * r0 + r1 * r1 + r2 * r2
    acc[0] += mass
    acc[1] += k0 + mass * r0
    acc[2] += k1 + mass * r1
    acc[3] += k2 + mass * r2
    acc[4] += t00 * E[0] + t01 * E[1] + t02 * E[2] - 2.0 * r0 * k0 + 2.0 * kr - mass * (r0 * r0 - rr)
    acc[5] += t00 * E[3] + t01 * E[4] + t02 * E[5] - (r0 * k1 + k0 * r1) - mass * r0 * r1
    acc[6] += t00 * E[6] + t01 * E[7] + t02 * E[8] - (r0 * k2 + k0 * r2) - mass * r0 * r2
    acc[7] += t10 * E[3] + t11 * E[4] + t12 * E[5] - 2.0 * r1 * k1 + 2.0 * kr - mass * (r1 * r1 - rr)
    acc[8] += t10 * E[6] + t11 * E[7] + t12 * E[8] - (r1 * k2 + k1 * r2) - mass * r1 * r2
    acc[9] += t20 * E[6] + t21 * E[7] + t22 * E[8] - 2.0 * r2 * k2 + 2.0 * kr - mass * (r2 * r2 - rr)
