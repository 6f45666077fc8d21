"""Message conversions: JointState out, TF transforms, Odometry in (the floating base)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from geometry_msgs.msg import TransformStamped
from sensor_msgs.msg import JointState

from rbd_ros.dynamics.rotations import matrix_to_quaternion

from .joint_states import Rejected, all_finite


def joint_state(stamp: TimeMsg, names: Sequence[str], position=None, velocity=None,
                effort=None, frame_id: str = '') -> JointState:
    msg = JointState()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.name = list(names)
    if position is not None:
        msg.position = doubles(position)
    if velocity is not None:
        msg.velocity = doubles(velocity)
    if effort is not None:
        msg.effort = doubles(effort)
    return msg


def doubles(values) -> list[float]:
    """A float64[] message field's value: Python floats (a 1-D numpy array converts at C speed)."""
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return values.astype(float, copy=False).tolist()
    return [float(x) for x in values]


def time_msg(seconds: float) -> TimeMsg:
    """builtin_interfaces/Time of a time in seconds (>= 0)."""
    ns = int(round(seconds * 1e9))
    return TimeMsg(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def transform_msg(pose: np.ndarray, parent: str, child: str, stamp: TimeMsg) -> TransformStamped:
    t = TransformStamped()
    t.header.stamp = stamp
    t.header.frame_id = parent
    t.child_frame_id = child
    p = t.transform.translation
    p.x, p.y, p.z = (float(c) for c in pose[:3, 3])
    q = t.transform.rotation
    q.x, q.y, q.z, q.w = matrix_to_quaternion(pose[:3, :3])
    return t


def relative_pose(parent_pose: np.ndarray, child_pose: np.ndarray) -> np.ndarray:
    """parent_T_child from two world poses."""
    r = parent_pose[:3, :3]
    out = np.eye(4)
    out[:3, :3] = r.T @ child_pose[:3, :3]
    out[:3, 3] = r.T @ (child_pose[:3, 3] - parent_pose[:3, 3])
    return out


def odometry_to_base(msg) -> tuple[np.ndarray, np.ndarray]:
    """Base q[:7] = [x, y, z, qx, qy, qz, qw] and v[:6] = [v; w] from nav_msgs/Odometry (pose in
    the world frame, twist in the child (base) frame, as Odometry defines it). The quaternion is
    normalised; raises Rejected for NaN/inf or a zero quaternion."""
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
    q = np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w], dtype=float)
    v = np.array([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z], dtype=float)
    if not all_finite(q, v):
        raise Rejected('non_finite', 'NaN or inf in base_state')
    n = np.linalg.norm(q[3:])
    if n < 1e-9:
        raise Rejected('bad_quaternion', 'base_state orientation is not a rotation')
    q[3:] /= n
    return q, v
