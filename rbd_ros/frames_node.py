"""frames_node (node ``rbd_frames``): TF of every link, a drop-in for robot_state_publisher.

``/tf`` carries every joint that moves (single-DoF joints, mimic joints following their leaders,
planar and floating joints) stamped with the joint_states stamp; ``/tf_static`` (transient local)
carries the fixed joints, once per model. Poses come from one ``frame_poses`` call per message.
Planar and floating URDF joints are never static; joint_states cannot carry them, so they are held
at their neutral pose (identity) and published on /tf like any moving joint (docs/ros.md).
A description given as a parameter is republished latched on ``robot_description``.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

import rbd_ros.dynamics as rbd
from rbd_ros.ros_conversions import (JOINT_STATES_QOS_PARAM, ROBOT_DESCRIPTION_PARAM,
                                     LATCHED_QOS, OUTPUT_QOS, TF_QOS, TF_STATIC_QOS,
                                     JointStateMerger, LoadedModel, ParamSpec, RbdNode, Rejected,
                                     all_finite, diagnostic_status, joint_states_qos,
                                     non_negative, relative_pose, run_node,
                                     transform_msg)

PARAMS = {
    'robot_description': ROBOT_DESCRIPTION_PARAM,
    'joint_states_qos': JOINT_STATES_QOS_PARAM,
    'frame_prefix': ParamSpec('', 'prepended to every frame id (e.g. "robot1/")'),
    'publish_frequency': ParamSpec(0.0, 'Hz at which /tf is published from the latest '
                                   'joint_states; 0 = once per joint_states message',
                                   non_negative),
}


@dataclasses.dataclass(frozen=True)
class Runtime:
    loaded: LoadedModel
    merger: JointStateMerger
    moving: tuple[tuple[str, str], ...]     # (parent link, child link) of every moving joint
    fixed: tuple[tuple[str, str], ...]      # (parent link, child link) of every fixed joint


class FramesNode(RbdNode):
    NODE_NAME = 'rbd_frames'
    PARAMS = PARAMS

    def __init__(self, **kwargs):
        self.runtime: Runtime | None = None
        super().__init__(**kwargs)
        p = self.params
        self.create_subscription(JointState, 'joint_states', self.guard(self.on_joint_states),
                                 joint_states_qos(p['joint_states_qos']))
        self.pub_tf = self.create_publisher(TFMessage, '/tf', TF_QOS)
        self.pub_static = self.create_publisher(TFMessage, '/tf_static', TF_STATIC_QOS)
        self.pub_description = self.create_publisher(String, 'robot_description', LATCHED_QOS)
        self.pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', OUTPUT_QOS)
        self._pending = None   # (runtime, q, stamp) waiting for the publish_frequency timer
        if p['publish_frequency'] > 0:
            self.create_timer(1.0 / p['publish_frequency'], self.guard(self.publish_pending))
        self.create_timer(1.0, self.guard(self.publish_diagnostics))
        self.start_description()

    def model_prepared(self, loaded: LoadedModel) -> None:
        moving, fixed = [], []
        for j in loaded.model.joints:
            (fixed if j.type == 'fixed' and j.mimic is None else moving).append((j.parent, j.child))
        old = self.runtime
        self._next_runtime = Runtime(
            loaded=loaded, merger=JointStateMerger(loaded, old.merger if old else None),
            moving=tuple(moving), fixed=tuple(fixed))

    def model_changed(self, loaded: LoadedModel) -> None:
        rt = self._next_runtime
        self.runtime = rt   # the swap: one assignment
        self._next_runtime = None
        self._pending = None
        stamp = self.get_clock().now().to_msg()
        poses = rbd.frame_poses(loaded.model, loaded.q_neutral)
        self.pub_static.publish(self._tf_message(rt.fixed, poses, stamp))
        if self.params['robot_description']:
            self.pub_description.publish(String(data=loaded.xml))

    def _tf_message(self, joints, poses, stamp) -> TFMessage:
        prefix = self.params['frame_prefix']
        return TFMessage(transforms=[
            transform_msg(relative_pose(poses[parent], poses[child]), prefix + parent,
                          prefix + child, stamp) for parent, child in joints])

    def on_joint_states(self, msg: JointState) -> None:
        self.stats.received += 1
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'joint_states before any robot_description')
        unknown, _ = rt.merger.update(msg)
        for name in unknown:
            self.stats.unknown_names[name] += 1
        if not rt.merger.complete:
            return
        self.stats.last_input_time = time.monotonic()
        q = rt.loaded.full_q(rt.merger.position)
        if self.params['publish_frequency'] > 0:
            self._pending = (rt, q, msg.header.stamp)
        else:
            self._publish_tf(rt, q, msg.header.stamp)

    def publish_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            self._publish_tf(*pending)

    def _publish_tf(self, rt: Runtime, q: np.ndarray, stamp) -> None:
        poses = self.stats.timed(rbd.frame_poses, rt.loaded.model, q)
        if not all_finite(*(poses[c] for _, c in rt.moving)):
            self.stats.non_finite_outputs += 1
            return
        self.pub_tf.publish(self._tf_message(rt.moving, poses, stamp))
        self.stats.published += 1

    def publish_diagnostics(self) -> None:
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        rt = self.runtime
        arr.status = [diagnostic_status(self.get_fully_qualified_name(),
                                        rt.loaded if rt else None, self.stats, False,
                                        {'frame_prefix': self.params['frame_prefix']})]
        self.pub_diag.publish(arr)


def main(args=None) -> int:
    return run_node(FramesNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
