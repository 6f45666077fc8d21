"""Integration on the configuration manifold, q (+) v dt; its inverse, the difference
q1 (-) q0 (the v with q0 (+) v = q1); and interpolation, q0 (+) u (q1 (-) q0).

revolute / prismatic: q + v dt.  planar: SE(2) exponential of the local twist.
floating: SE(3) exponential of the local twist, M <- M exp(v dt) (Pinocchio's free-flyer),
so the quaternion stays unit and no Euler-angle singularity exists (From, singularity-free
dynamic equations, part one). The difference is the logarithm of M0^-1 M1 (SE(3), SE(2)).

An angle here is one real coordinate that keeps its turns (q = 0 and q = 2 pi are different
configurations of the same pose), so q1 - q0 inverts integrate exactly. ``wrap`` takes the
short way instead for the angles whose pose repeats every 2 pi (``periodic``: continuous
joints, a planar joint's rotation), as Pinocchio's (cos, sin) coordinates must.
"""
import math

from ._jit import inline_kernel, kernel
from .checks import BAD_Q, BAD_SHAPE, BAD_THIRD, BAD_V, OK, configuration_status, state_status
from .layout import JOINT_FLOATING, JOINT_PLANAR, JTYPE, NQJ, NVJ, QIDX, VIDX


@inline_kernel
def _sinc_terms(theta):
    """(sin t / t, (1 - cos t) / t^2, (t - sin t) / t^3) with series near zero."""
    if theta < 1e-4:
        t2 = theta * theta
        return 1.0 - t2 / 6.0, 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0
    s, c = math.sin(theta), math.cos(theta)
    return s / theta, (1.0 - c) / (theta * theta), (theta - s) / (theta * theta * theta)


@inline_kernel
def _wrapped(angle):
    """angle - 2 pi k in [-pi, pi); exactly angle when it is already there."""
    return angle - 2.0 * math.pi * math.floor((angle + math.pi) / (2.0 * math.pi))


# ---- the exponentials: q (+) a local twist (its numbers already times dt) -------------------
@inline_kernel
def _planar_exp(q, qi, rx, ry, phi, out):
    """out[qi:qi+3]: the planar joint at q[qi:qi+3] moved by the local twist (rx, ry, phi)
    through the SE(2) exponential: p <- p + R(theta) V(phi) rho, theta <- theta + phi."""
    a, b, _ = _sinc_terms(abs(phi))
    b = b * phi                          # (1 - cos phi) / phi
    tx, ty = a * rx - b * ry, b * rx + a * ry
    c, s = math.cos(q[qi + 2]), math.sin(q[qi + 2])
    out[qi] = q[qi] + c * tx - s * ty
    out[qi + 1] = q[qi + 1] + s * tx + c * ty
    out[qi + 2] = q[qi + 2] + phi


@inline_kernel
def _free_flyer_exp(q, qi, vx, vy, vz, wx, wy, wz, out):
    """out[qi:qi+7]: M(q[qi:qi+7]) exp([v; w]), the local twist's SE(3) exponential."""
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


# ---- the logarithms: the local twist from q0 to q1 ------------------------------------------
@inline_kernel
def _planar_log(q0, q1, qi, wrap):
    """(rx, ry, phi) = log(M0^-1 M1) of a planar joint (SE(2)): phi = theta1 - theta0 (wrapped
    when ``wrap``), then rho = V(phi)^-1 R(theta0)^T (p1 - p0) with V^-1 = [[al, be], [-be, al]],
    al = (phi/2) cot(phi/2), be = phi / 2. (The cotangent, not sin / (1 - cos), which cancels;
    singular at phi = 2 pi k, k != 0: a whole turn moves nothing, so no twist turns by it and
    translates.)"""
    phi = q1[qi + 2] - q0[qi + 2]
    if wrap:
        phi = _wrapped(phi)
    c, s = math.cos(q0[qi + 2]), math.sin(q0[qi + 2])
    dx, dy = q1[qi] - q0[qi], q1[qi + 1] - q0[qi + 1]
    px, py = c * dx + s * dy, -s * dx + c * dy
    al = 1.0 - phi * phi / 12.0 if abs(phi) < 1e-4 else 0.5 * phi / math.tan(0.5 * phi)
    be = 0.5 * phi
    return al * px + be * py, -be * px + al * py, phi


@inline_kernel
def _free_flyer_log(q0, q1, qi):
    """(vx, vy, vz, wx, wy, wz) = log(M0^-1 M1) (SE(3)), the local twist that carries M0 to M1
    in unit time; its rotation the short way (angle in [0, pi])."""
    x0, y0, z0, w0 = q0[qi + 3], q0[qi + 4], q0[qi + 5], q0[qi + 6]
    n = math.sqrt(x0 * x0 + y0 * y0 + z0 * z0 + w0 * w0)
    x0, y0, z0, w0 = x0 / n, y0 / n, z0 / n, w0 / n
    x1, y1, z1, w1 = q1[qi + 3], q1[qi + 4], q1[qi + 5], q1[qi + 6]
    n = math.sqrt(x1 * x1 + y1 * y1 + z1 * z1 + w1 * w1)
    x1, y1, z1, w1 = x1 / n, y1 / n, z1 / n, w1 / n
    # relative translation in the frame of M0: p = R0^T (p1 - p0) (t = 2 u x d; d - w t + u x t
    # rotates by the conjugate quaternion)
    dx, dy, dz = q1[qi] - q0[qi], q1[qi + 1] - q0[qi + 1], q1[qi + 2] - q0[qi + 2]
    tx, ty, tz = 2.0 * (y0 * dz - z0 * dy), 2.0 * (z0 * dx - x0 * dz), 2.0 * (x0 * dy - y0 * dx)
    px = dx - w0 * tx + (y0 * tz - z0 * ty)
    py = dy - w0 * ty + (z0 * tx - x0 * tz)
    pz = dz - w0 * tz + (x0 * ty - y0 * tx)
    # relative rotation conj(quat0) * quat1, on the half of the double cover with w >= 0 so
    # that its angle is in [0, pi]; terms paired so that equal rotations give exact zeros
    rx = (w0 * x1 - x0 * w1) + (z0 * y1 - y0 * z1)
    ry = (w0 * y1 - y0 * w1) + (x0 * z1 - z0 * x1)
    rz = (w0 * z1 - z0 * w1) + (y0 * x1 - x0 * y1)
    rw = w0 * w1 + x0 * x1 + y0 * y1 + z0 * z1
    if rw < 0.0:
        rx, ry, rz, rw = -rx, -ry, -rz, -rw
    s = math.sqrt(rx * rx + ry * ry + rz * rz)          # sin(theta / 2)
    theta = 2.0 * math.atan2(s, rw)
    # SO(3) log: w = theta / sin(theta / 2) * (rx, ry, rz); near zero theta/s -> 2 / rw
    f = 2.0 / rw if s < 1e-8 else theta / s
    wx, wy, wz = f * rx, f * ry, f * rz
    # translation: V(w)^-1 p = p - 1/2 w x p + a w x (w x p), a = (1 - (t/2) cot(t/2)) / t^2
    # with cot(t/2) = rw / s from the quaternion itself; series near zero
    if theta < 1e-3:
        a = 1.0 / 12.0 + theta * theta / 720.0
    else:
        a = (1.0 - 0.5 * theta * rw / s) / (theta * theta)
    cx, cy, cz = wy * pz - wz * py, wz * px - wx * pz, wx * py - wy * px          # w x p
    ccx, ccy, ccz = wy * cz - wz * cy, wz * cx - wx * cz, wx * cy - wy * cx       # w x (w x p)
    return (px - 0.5 * cx + a * ccx, py - 0.5 * cy + a * ccy, pz - 0.5 * cz + a * ccz,
            wx, wy, wz)


@inline_kernel
def _pair_status(body_int, q0, q1):
    """The status of two configurations; BAD_V names the second (q1) when it is not finite."""
    status = configuration_status(body_int, q0)
    if status != OK:
        return status
    status = configuration_status(body_int, q1)
    return BAD_V if status == BAD_Q else status


# ---- the kernels -------------------------------------------------------------------------------
# (Each walks the joints and branches on the type alike; what each type does differs.)
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
            _planar_exp(q, qi, v[vi] * dt, v[vi + 1] * dt, v[vi + 2] * dt, out)
        elif jtype == JOINT_FLOATING:
            _free_flyer_exp(q, qi, v[vi] * dt, v[vi + 1] * dt, v[vi + 2] * dt, v[vi + 3] * dt,
                            v[vi + 4] * dt, v[vi + 5] * dt, out)
        else:
            for k in range(body_int[i, NQJ]):
                out[qi + k] = q[qi + k] + v[vi + k] * dt
    return OK


@kernel
def difference(body_int, q0, q1, periodic, wrap, out):
    """out = q1 (-) q0, the v with integrate(q0, v, 1) = q1 (up to a quaternion's sign).
    ``wrap`` != 0: each angle marked in ``periodic`` turns the short way (in [-pi, pi)), as
    Pinocchio's difference. OK or a status code (BAD_V: q1 not finite)."""
    if out.shape[0] != body_int[0, NVJ] or periodic.shape[0] != body_int[0, NVJ]:
        return BAD_SHAPE
    status = _pair_status(body_int, q0, q1)
    if status != OK:
        return status
    for i in range(1, body_int.shape[0]):
        jtype, qi, vi = body_int[i, JTYPE], body_int[i, QIDX], body_int[i, VIDX]
        if jtype == JOINT_PLANAR:
            out[vi], out[vi + 1], out[vi + 2] = _planar_log(
                q0, q1, qi, wrap != 0 and periodic[vi + 2] != 0.0)
        elif jtype == JOINT_FLOATING:
            (out[vi], out[vi + 1], out[vi + 2], out[vi + 3], out[vi + 4],
             out[vi + 5]) = _free_flyer_log(q0, q1, qi)
        else:
            for k in range(body_int[i, NQJ]):
                out[vi + k] = q1[qi + k] - q0[qi + k]
                if wrap != 0 and periodic[vi + k] != 0.0:
                    out[vi + k] = _wrapped(out[vi + k])
    return OK


@kernel
def interpolate(body_int, q0, q1, u, periodic, wrap, out):
    """out = q0 (+) u (q1 (-) q0), joint by joint: u = 0 gives q0, u = 1 gives q1 (to
    round-off). ``wrap``, ``periodic``: as in difference. OK or a status code (BAD_V: q1 not
    finite, BAD_THIRD: u not finite)."""
    if out.shape[0] != body_int[0, NQJ] or periodic.shape[0] != body_int[0, NVJ]:
        return BAD_SHAPE
    status = _pair_status(body_int, q0, q1)
    if status != OK:
        return status
    if not math.isfinite(u):
        return BAD_THIRD
    for i in range(1, body_int.shape[0]):
        jtype, qi, vi = body_int[i, JTYPE], body_int[i, QIDX], body_int[i, VIDX]
        if jtype == JOINT_PLANAR:
            rx, ry, phi = _planar_log(q0, q1, qi, wrap != 0 and periodic[vi + 2] != 0.0)
            _planar_exp(q0, qi, u * rx, u * ry, u * phi, out)
        elif jtype == JOINT_FLOATING:
            vx, vy, vz, wx, wy, wz = _free_flyer_log(q0, q1, qi)
            _free_flyer_exp(q0, qi, u * vx, u * vy, u * vz, u * wx, u * wy, u * wz, out)
        else:
            for k in range(body_int[i, NQJ]):
                d = q1[qi + k] - q0[qi + k]
                if wrap != 0 and periodic[vi + k] != 0.0:
                    d = _wrapped(d)
                out[qi + k] = q0[qi + k] + u * d
    return OK
