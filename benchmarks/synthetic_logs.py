"""rosbag2 logs of joint states from a known model, for the analysis's tests and benchmark:
an exciting trajectory (a sum of sines per joint, as identification experiments use), the
torques a model with known friction and payload needs for it, serialized by rclpy (the bytes a
robot's joint_state_broadcaster records; rosbags' serializer where rclpy is not installed) and
written by rosbags' writer (MCAP or sqlite3); and a legged robot's run (joint states, the base's
odometry, contact wrenches) as sim_node publishes it (write_legged_log)."""
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
              start=1_700_000_000, velocity=True, stamps=None, compression=False):
    """A rosbag2 bag folder at ``path`` (``storage`` 'mcap' or 'sqlite3'; ``compression``:
    zstd-compressed MCAP chunks) holding one sensor_msgs/JointState per row; header and
    recording stamps at ``start`` + t (``stamps``: other header stamps, integer ns). Returns
    the path.

    The messages are the bytes rclpy serializes (rosbags' serializer where rclpy is not
    installed): the first message is serialized, and every other one is that message with its
    stamp and values put in place (one layout: the same names and array lengths), so that a
    fleet of long logs is written in seconds."""
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    from rbd_ros.analysis.decode import joint_state

    typestore = get_typestore(Stores.ROS2_KILTED)
    plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
    recorded = start * 1_000_000_000 + np.rint(np.asarray(t) * 1e9).astype(np.int64)
    ns = recorded if stamps is None else np.asarray(stamps, dtype=np.int64)
    n, nj = len(t), len(names)
    columns = [np.asarray(q, float), np.asarray(v, float) if velocity else np.zeros((n, 0)),
               np.asarray(effort, float) if effort is not None else np.zeros((n, 0))]
    template = _serialize(typestore, names, [c.shape[1] for c in columns])
    layout = joint_state(template)
    rows = np.tile(np.frombuffer(template, np.uint8), (n, 1))
    sec, nanosec = np.divmod(ns, 1_000_000_000)
    fields = layout.fields
    rows[:, 4:8] = sec.astype('<i4').view(np.uint8).reshape(n, 4)
    rows[:, 8:12] = nanosec.astype('<u4').view(np.uint8).reshape(n, 4)
    for (offset, _, nbytes, _), values in zip(fields[1:], columns):
        if nbytes:
            rows[:, offset:offset + nbytes] = np.ascontiguousarray(
                values, dtype='<f8').view(np.uint8).reshape(n, nbytes)
    assert nj == len(layout.key[0])
    writer = Writer(path, version=9, storage_plugin=plugin)
    if compression:
        writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with writer:
        connection = writer.add_connection(topic, 'sensor_msgs/msg/JointState',
                                           typestore=typestore)
        for k in range(n):
            writer.write(connection, int(recorded[k]), rows[k].tobytes())
    return path


def _serialize(typestore, names, counts):
    """A JointState's bytes (zero stamp and values): rclpy's, or rosbags' without rclpy."""
    try:
        from rclpy.serialization import serialize_message
        from sensor_msgs.msg import JointState
    except ImportError:
        JointState = typestore.types['sensor_msgs/msg/JointState']
        Header = typestore.types['std_msgs/msg/Header']
        Time = typestore.types['builtin_interfaces/msg/Time']
        msg = JointState(header=Header(stamp=Time(sec=0, nanosec=0), frame_id=''),
                         name=list(names), position=np.zeros(counts[0]),
                         velocity=np.zeros(counts[1]), effort=np.zeros(counts[2]))
        return bytes(typestore.serialize_cdr(msg, 'sensor_msgs/msg/JointState'))
    msg = JointState()
    msg.name = list(names)
    msg.position, msg.velocity, msg.effort = ([0.0] * c for c in counts)
    return bytes(serialize_message(msg))


def write_legged_log(path, names, samples, start=1_700_000_000, base_topic='/rbd_sim/base_state',
                     contact_topic='/rbd_sim/contact_wrenches'):
    """A rosbag2 MCAP bag at ``path`` of a legged robot's run, as sim_node publishes it: per
    sample (t, q, v, effort, [(link, wrench)]) of a floating-base model (q[:7] the base's pose,
    v[:6] its twist in its own frame), a sensor_msgs/JointState of the joints ``names`` (q[7:],
    v[6:], effort[6:]), a nav_msgs/Odometry of the base and a geometry_msgs/WrenchStamped per
    link in contact (the wrench on it in its frame, about its origin), all stamped at start +
    t. Serialized by rosbags (the bytes rclpy writes: CDR). Returns the path."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    T = store.types
    Time, Header, Vector3 = (T['builtin_interfaces/msg/Time'], T['std_msgs/msg/Header'],
                             T['geometry_msgs/msg/Vector3'])
    covariance = np.zeros(36)
    kinds = {'js': 'sensor_msgs/msg/JointState', 'odom': 'nav_msgs/msg/Odometry',
             'wrench': 'geometry_msgs/msg/WrenchStamped'}
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {key: writer.add_connection(topic, kinds[key], typestore=store)
                       for key, topic in (('js', '/joint_states'), ('odom', base_topic),
                                          ('wrench', contact_topic))}

        def write(key, ns, message):
            writer.write(connections[key], ns, bytes(store.serialize_cdr(message, kinds[key])))

        for t, q, v, effort, wrenches in samples:
            ns = start * 1_000_000_000 + int(round(t * 1e9))
            stamp = Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
            write('js', ns, T[kinds['js']](header=Header(stamp=stamp, frame_id=''),
                                           name=list(names), position=np.array(q[7:]),
                                           velocity=np.array(v[6:]), effort=np.array(effort[6:])))
            pose = T['geometry_msgs/msg/Pose'](
                position=T['geometry_msgs/msg/Point'](x=q[0], y=q[1], z=q[2]),
                orientation=T['geometry_msgs/msg/Quaternion'](x=q[3], y=q[4], z=q[5], w=q[6]))
            twist = T['geometry_msgs/msg/Twist'](linear=Vector3(x=v[0], y=v[1], z=v[2]),
                                                 angular=Vector3(x=v[3], y=v[4], z=v[5]))
            write('odom', ns, T[kinds['odom']](
                header=Header(stamp=stamp, frame_id='world'), child_frame_id='base',
                pose=T['geometry_msgs/msg/PoseWithCovariance'](pose=pose, covariance=covariance),
                twist=T['geometry_msgs/msg/TwistWithCovariance'](twist=twist,
                                                                 covariance=covariance)))
            for link, w in wrenches:
                write('wrench', ns, T[kinds['wrench']](
                    header=Header(stamp=stamp, frame_id=link),
                    wrench=T['geometry_msgs/msg/Wrench'](
                        force=Vector3(x=w[0], y=w[1], z=w[2]),
                        torque=Vector3(x=w[3], y=w[4], z=w[5]))))
    return path
