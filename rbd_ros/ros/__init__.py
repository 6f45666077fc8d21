"""The ROS 2 plumbing the nodes share, one concern per module:

- qos.py            QoS profiles of every topic
- params.py         parameter specs, declaration with types, validation at start-up and set time
- robot.py          the loaded robot: a Model plus its JointState view, and where it came from
- joint_states.py   joint states in: validation and merging by name, rejections
- joint_state_bytes.py  JointState read from its bytes, without rclpy (nodes and offline logs)
- wire.py           the byte-level fast path out: outputs serialized once, per message filled
- cdr.py            a bounds-checked walk over any message's bytes before rclpy reads them
- messages.py       message conversions (JointState, TF, Odometry)
- diagnostics.py    counters and the /diagnostics status
- node.py           the base node (description loading, guarded callbacks, diagnostics) and
                    the one init/spin/shutdown sequence of every executable

The nodes themselves are in rbd_ros/nodes/.
"""
