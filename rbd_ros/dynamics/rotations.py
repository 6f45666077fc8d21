"""Rotation matrices from and to URDF roll-pitch-yaw and [x, y, z, w] quaternions (the
project's quaternion order), for model building and the ROS layer. (The kernels rotate with
spatial.quaternion_rotation, written into flat arrays.)"""
import math

import numpy as np

from ._jit import kernel


def rpy_to_matrix(rpy):
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def quaternion_to_matrix(x, y, z, w):
    """Rotation matrix of the quaternion [x, y, z, w] (normalised here)."""
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def matrix_to_quaternion(r):
    """Unit quaternion (x, y, z, w) of a rotation matrix (Shepperd's method), w >= 0."""
    return rotation_quaternion(float(r[0, 0]), float(r[0, 1]), float(r[0, 2]),
                               float(r[1, 0]), float(r[1, 1]), float(r[1, 2]),
                               float(r[2, 0]), float(r[2, 1]), float(r[2, 2]))


@kernel
def rotation_quaternion(m00, m01, m02, m10, m11, m12, m20, m21, m22):
    """matrix_to_quaternion of the matrix's entries: a kernel, so that compiled code (frames
    for /tf, kinematics.relative_transforms) and Python take the same arithmetic."""
    trace = m00 + m11 + m22
    if trace > 0:
        s = 2.0 * math.sqrt(1.0 + trace)
        w, x, y, z = 0.25 * s, (m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s
    elif m00 > m11 and m00 > m22:
        s = 2.0 * math.sqrt(1.0 + m00 - m11 - m22)
        w, x, y, z = (m21 - m12) / s, 0.25 * s, (m01 + m10) / s, (m02 + m20) / s
    elif m11 > m22:
        s = 2.0 * math.sqrt(1.0 + m11 - m00 - m22)
        w, x, y, z = (m02 - m20) / s, (m01 + m10) / s, 0.25 * s, (m12 + m21) / s
    else:
        s = 2.0 * math.sqrt(1.0 + m22 - m00 - m11)
        w, x, y, z = (m10 - m01) / s, (m02 + m20) / s, (m12 + m21) / s, 0.25 * s
    if w < 0:
        x, y, z, w = -x, -y, -z, -w
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    return x / norm, y / norm, z / norm, w / norm
