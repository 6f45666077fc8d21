"""Integration on the configuration manifold: q (+) v dt.

revolute / prismatic: q + v dt.  planar: SE(2) exponential of the local twist.
floating: SE(3) exponential of the local twist, M <- M exp(v dt) (Pinocchio's free-flyer),
so the quaternion stays unit and no Euler-angle singularity exists (From, singularity-free
dynamic equations, part one).
"""
import math

from ._jit import inline_kernel, kernel
from .checks import BAD_THIRD, OK, state_status
from .layout import JOINT_FLOATING, JOINT_PLANAR, JTYPE, NQJ, QIDX, VIDX


@inline_kernel
def _sinc_terms(theta):
    """(sin t / t, (1 - cos t) / t^2, (t - sin t) / t^3) with series near zero."""
    if theta < 1e-4:
        t2 = theta * theta
        return 1.0 - t2 / 6.0, 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0
    s, c = math.sin(theta), math.cos(theta)
    return s / theta, (1.0 - c) / (theta * theta), (theta - s) / (theta * theta * theta)


@inline_kernel
def _integrate_free_flyer(q, v, dt, qi, vi, out):
    vx, vy, vz = v[vi] * dt, v[vi + 1] * dt, v[vi + 2] * dt
    wx, wy, wz = v[vi + 3] * dt, v[vi + 4] * dt, v[vi + 5] * dt
    theta = math.sqrt(wx * wx + wy * wy + wz * wz)
    _, b, c = _sinc_terms(theta)
    # translation of exp(v dt) in the child frame: (1 + b [w] + c [w]^2) v
    cx, cy, cz = wy * vz - wz * vy, wz * vx - wx * vz, wx * vy - wy * vx       # w x v
    ccx, ccy, ccz = wy * cz - wz * cy, wz * cx - wx * cz, wx * cy - wy * cx    # w x (w x v)
    px, py, pz = vx + b * cx + c * ccx, vy + b * cy + c * ccy, vz + b * cz + c * ccz
    x, y, z, w = q[qi + 3], q[qi + 4], q[qi + 5], q[qi + 6]
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    # p_new = p + R(quat) p_exp  (rotate with the quaternion: t = 2 u x p; p + w t + u x t)
    tx, ty, tz = 2.0 * (y * pz - z * py), 2.0 * (z * px - x * pz), 2.0 * (x * py - y * px)
    out[qi] = q[qi] + px + w * tx + (y * tz - z * ty)
    out[qi + 1] = q[qi + 1] + py + w * ty + (z * tx - x * tz)
    out[qi + 2] = q[qi + 2] + pz + w * tz + (x * ty - y * tx)
    # quat_new = quat * exp(w/2)
    half = 0.5 * theta
    sh = 0.5 - theta * theta / 48.0 if theta < 1e-4 else math.sin(half) / theta
    ex, ey, ez, ew = sh * wx, sh * wy, sh * wz, math.cos(half)
    nx = w * ex + x * ew + y * ez - z * ey
    ny = w * ey - x * ez + y * ew + z * ex
    nz = w * ez + x * ey - y * ex + z * ew
    nw = w * ew - x * ex - y * ey - z * ez
    norm = math.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
    out[qi + 3], out[qi + 4], out[qi + 5], out[qi + 6] = nx / norm, ny / norm, nz / norm, nw / norm


@kernel
def integrate(body_int, q, v, dt, out):
    """out = q (+) v dt for every joint; OK or a status code (BAD_THIRD: dt not finite)."""
    status = state_status(body_int, q, v, v)
    if status != OK:
        return status
    if not math.isfinite(dt):
        return BAD_THIRD
    for i in range(1, body_int.shape[0]):
        jtype, qi, vi = body_int[i, JTYPE], body_int[i, QIDX], body_int[i, VIDX]
        if jtype == JOINT_PLANAR:
            # local twist (vx, vy, w) dt through SE(2) exp, then p <- p + R(theta) V rho
            rx, ry, phi = v[vi] * dt, v[vi + 1] * dt, v[vi + 2] * dt
            a, b, _ = _sinc_terms(abs(phi))
            b = b * phi                          # (1 - cos phi) / phi
            tx, ty = a * rx - b * ry, b * rx + a * ry
            c, s = math.cos(q[qi + 2]), math.sin(q[qi + 2])
            out[qi] = q[qi] + c * tx - s * ty
            out[qi + 1] = q[qi + 1] + s * tx + c * ty
            out[qi + 2] = q[qi + 2] + phi
        elif jtype == JOINT_FLOATING:
            _integrate_free_flyer(q, v, dt, qi, vi, out)
        else:
            for k in range(body_int[i, NQJ]):
                out[qi + k] = q[qi + k] + v[vi + k] * dt
    return OK
