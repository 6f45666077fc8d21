"""QoS profiles of every topic the nodes use."""
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)

#: robot_description: reliable + transient local, depth 1 (a late subscriber gets the last one).
LATCHED_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: Outputs (torques, predictions, commands, diagnostics): reliable, volatile.
OUTPUT_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)
#: /tf as tf2_ros' TransformBroadcaster publishes it.
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                    durability=DurabilityPolicy.VOLATILE)
#: /tf_static as tf2_ros' StaticTransformBroadcaster publishes it.
TF_STATIC_QOS = LATCHED_QOS
#: Commands and references into a node: reliable, keep the latest few.
COMMAND_QOS = OUTPUT_QOS

#: Queue of a joint_states subscription: 0.1 s at 1 kHz. A node that is descheduled for a few
#: milliseconds (a busy 2-core machine) then catches up instead of losing messages; with
#: qos_profile_sensor_data's depth of 5, every stall over 5 ms lost messages.
JOINT_STATES_DEPTH = 100


def joint_states_qos(kind: str) -> QoSProfile:
    """QoS of a joint_states subscription: ``sensor_data`` (best effort: receives from reliable
    and best-effort publishers alike) or ``reliable``; both with a queue of JOINT_STATES_DEPTH."""
    if kind == 'sensor_data':
        return QoSProfile(depth=JOINT_STATES_DEPTH, history=qos_profile_sensor_data.history,
                          reliability=qos_profile_sensor_data.reliability,
                          durability=qos_profile_sensor_data.durability)
    if kind == 'reliable':
        return QoSProfile(depth=JOINT_STATES_DEPTH, reliability=ReliabilityPolicy.RELIABLE)
    raise ValueError(f"joint_states_qos must be 'sensor_data' or 'reliable', not {kind!r}")
