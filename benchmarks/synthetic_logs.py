"""rosbag2 logs of joint states from a known model, for the analysis's tests and benchmark:
an exciting trajectory (a sum of sines per joint, as identification experiments use), the
torques a model with known friction and payload needs for it, serialized by rclpy (the bytes a
robot's joint_state_broadcaster records) and written by rosbags' writer (MCAP or sqlite3)."""
from __future__ import annotations

import numpy as np


def excitation(model, duration, rate, seed=0, amplitude=0.25, base_hz=0.1, harmonics=5):
    """(t, q, v, a) of a sum of ``harmonics`` sines per joint (period 1 / base_hz, a slightly
    different fundamental per joint so the joints are not in step); exact derivatives."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(round(duration * rate))) / rate
    n = model.nv
    q, v, a = (np.zeros((t.size, n)) for _ in range(3))
    for j in range(n):
        for k in range(1, harmonics + 1):
            w = 2 * np.pi * base_hz * k * (1.0 + 0.13 * j)
            A = rng.uniform(0.4, 1.2) * amplitude / k
            phase = rng.uniform(0.0, 2 * np.pi)
            q[:, j] += A * np.sin(w * t + phase)
            v[:, j] += A * w * np.cos(w * t + phase)
            a[:, j] -= A * w * w * np.sin(w * t + phase)
    return t, q, v, a


def measured_efforts(model, q, v, a, viscous=0.0, coulomb=0.0, noise=0.0, seed=0):
    """What the joints' torque sensors read on ``model``: inverse dynamics plus viscous v plus
    coulomb sign(v) (per joint or one value), plus white noise of ``noise`` N m rms."""
    import rbd_ros.dynamics as rbd
    tau = rbd.inverse_dynamics(model, q, v, a) + viscous * v + coulomb * np.sign(v)
    if noise:
        tau += np.random.default_rng(seed + 1000).normal(0.0, noise, tau.shape)
    return tau


def write_log(path, t, names, q, v, effort, storage='mcap', topic='/joint_states',
              start=1_700_000_000, velocity=True, stamps=None):
    """A rosbag2 bag folder at ``path`` (``storage`` 'mcap' or 'sqlite3') holding one
    sensor_msgs/JointState per row; header and recording stamps at ``start`` + t (``stamps``:
    other header stamps, integer ns). Returns the path."""
    from rclpy.serialization import serialize_message
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    from sensor_msgs.msg import JointState

    typestore = get_typestore(Stores.ROS2_KILTED)
    plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
    recorded = start * 1_000_000_000 + np.rint(np.asarray(t) * 1e9).astype(np.int64)
    ns = recorded if stamps is None else np.asarray(stamps, dtype=np.int64)
    msg = JointState()
    msg.name = list(names)
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        connection = writer.add_connection(topic, 'sensor_msgs/msg/JointState',
                                           typestore=typestore)
        for k in range(len(t)):
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(ns[k]), 1_000_000_000)
            msg.position = q[k].tolist()
            msg.velocity = v[k].tolist() if velocity else []
            msg.effort = effort[k].tolist() if effort is not None else []
            writer.write(connection, int(recorded[k]), serialize_message(msg))
    return path
