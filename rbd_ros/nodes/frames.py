"""frames_node (node ``rbd_frames``): TF of every link, a drop-in for robot_state_publisher.

``/tf`` carries every joint that moves (single-DoF joints, mimic joints following their leaders,
planar and floating joints) stamped with the joint_states stamp; ``/tf_static`` (transient local)
carries the fixed joints, once per model. Per message: one ``frame_poses`` call, then one
compiled call (kinematics.relative_transforms) writes every transform into the bytes of a
TFMessage serialized once per model (ros/wire.py's TransformsMessage); no Python message.
Planar and floating URDF joints are never static; joint_states cannot carry them, so they are held
at their neutral pose (identity) and published on /tf like any moving joint (docs/ros.md).
A description given as a parameter (or file) is republished latched on ``robot_description``.
In strict mode only warnings that bear on kinematics refuse a description: an inertia never
stops a robot from getting its TF.
A description that closes kinematic loops (``<constraint>``) gets every link too: joint_states
need carry only the actuated joints (``actuated_joints``; and the joints outside the loops), the
passive ones are placed by closing the loops (rbd_ros/control/closed_loops.py), warm-started
from the last message's. A joint_states that cannot close is refused (rejected_loops_open).
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

import rbd_ros.dynamics as rbd
from rbd_ros.control.closed_loops import LoopClosure
from rbd_ros.dynamics._jit import compile_lock
from rbd_ros.dynamics.kinematics import relative_transforms
from rbd_ros.dynamics.rotations import matrix_to_quaternion
from rbd_ros.ros.joint_states import JointStateMerger, Rejected
from rbd_ros.ros.messages import relative_pose, transform_msg
from rbd_ros.ros.node import (ACTUATED_JOINTS, COMMON_PARAMS, JOINT_STATES_QOS, RbdNode,
                             node_main)
from rbd_ros.ros.params import ParamSpec, non_negative
from rbd_ros.ros.qos import LATCHED_QOS, TF_QOS, TF_STATIC_QOS, joint_states_qos
from rbd_ros.ros.robot import Robot
from rbd_ros.ros.wire import TransformsMessage

PARAMS = {
    **COMMON_PARAMS,
    'joint_states_qos': JOINT_STATES_QOS,
    'frame_prefix': ParamSpec('string', '', 'prepended to every frame id (e.g. "robot1/")'),
    'input_timeout': ParamSpec('double', 1.0, 'seconds without complete joint_states after '
                               'which /diagnostics reports stale input (0: never)',
                               non_negative),
    'publish_frequency': ParamSpec('double', 0.0, 'Hz at which /tf is published from the latest '
                                   'joint_states; 0 = once per joint_states message',
                                   non_negative),
    'actuated_joints': ACTUATED_JOINTS,
}


@dataclasses.dataclass(frozen=True)
class Runtime:
    robot: Robot
    merger: JointStateMerger
    moving: tuple[tuple[str, str], ...]     # (parent link, child link) of every moving joint
    fixed: tuple[tuple[str, str], ...]      # (parent link, child link) of every fixed joint
    loops: LoopClosure | None               # a robot with closed loops: how they close
    tf_out: TransformsMessage               # /tf's bytes: the moving joints' transforms
    parents: np.ndarray                     # frame index of each moving joint's parent ...
    children: np.ndarray                    # ... and child link
    poses: object                           # the FramePoses frame_poses overwrites


@dataclasses.dataclass(frozen=True)
class PendingTF:
    """The latest state waiting for the publish_frequency timer."""

    runtime: Runtime
    q: np.ndarray
    sec: int
    nanosec: int


class FramesNode(RbdNode):
    NODE_NAME = 'rbd_frames'
    PARAMS = PARAMS
    STRICT_KINEMATICS_ONLY = True
    CLOSED_LOOPS_REFUSAL = None      # served: the passive links placed by closing the loops

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        p = self.params
        self.pending: PendingTF | None = None
        # raw: read by the merger with bounds checks, as dynamics_node does (bytes can crash
        # the rmw's own deserializer: ros/cdr.py)
        self.create_subscription(JointState, 'joint_states', self.guard(self.on_joint_states),
                                 joint_states_qos(p['joint_states_qos']), raw=True)
        self.pub_tf = self.create_publisher(TFMessage, '/tf', TF_QOS)
        self.pub_static = self.create_publisher(TFMessage, '/tf_static', TF_STATIC_QOS)
        self.pub_description = self.create_publisher(String, 'robot_description', LATCHED_QOS)
        if p['publish_frequency'] > 0:
            self.create_timer(1.0 / p['publish_frequency'], self.guard(self.publish_pending))
        self.start()

    def prepare(self, robot: Robot) -> Runtime:
        moving, fixed = [], []
        for j in robot.model.joints:
            (fixed if j.type == 'fixed' and j.mimic is None else moving).append((j.parent, j.child))
        loops = None
        if robot.model.constraint_names:
            loops = LoopClosure(robot.model, robot.joint_names, self.params['actuated_joints'])
        old = self.runtime
        model, prefix = robot.model, self.params['frame_prefix']
        index = model.frame_index
        runtime = Runtime(
            robot=robot, merger=JointStateMerger(robot, old.merger if old else None,
                                                 None if loops is None else loops.required),
            moving=tuple(moving), fixed=tuple(fixed), loops=loops,
            tf_out=TransformsMessage([(prefix + p, prefix + c) for p, c in moving]),
            parents=np.array([index[p] for p, _ in moving], np.int64),
            children=np.array([index[c] for _, c in moving], np.int64),
            poses=rbd.frame_poses(model, robot.q_neutral))
        with compile_lock():   # compiled (or loaded from numba's cache) here, not on a message
            relative_transforms(runtime.poses.array, runtime.parents, runtime.children,
                                runtime.tf_out.doubles, runtime.tf_out.value_at)
            matrix_to_quaternion(np.eye(3))      # (/tf_static's, from Python)
        return runtime

    def runtime_changed(self, runtime: Runtime) -> None:
        self.pending = None
        stamp = self.get_clock().now().to_msg()
        poses = rbd.frame_poses(runtime.robot.model, runtime.robot.q_neutral)
        self.pub_static.publish(self._tf_message(runtime.fixed, poses, stamp))
        if runtime.robot.source != 'topic':
            self.pub_description.publish(String(data=runtime.robot.xml))

    def _tf_message(self, joints, poses, stamp) -> TFMessage:
        prefix = self.params['frame_prefix']
        return TFMessage(transforms=[
            transform_msg(relative_pose(poses[parent], poses[child]), prefix + parent,
                          prefix + child, stamp) for parent, child in joints])

    def on_joint_states(self, data: bytes) -> None:
        self.stats.received += 1
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'joint_states before any robot_description')
        sec, nanosec, unknown, _ = rt.merger.update_bytes(data)
        if unknown:
            self.stats.unknown_names(unknown)
        if not rt.merger.complete:
            return
        self.stats.last_input_time = time.monotonic()
        if not self._said_input:
            self.input_arrived()
        q = rt.robot.full_q(rt.merger.position)
        if rt.loops is not None:       # the passive joints where the loops put them
            try:
                q = self.stats.timed(rt.loops.close, rt.robot.model, q)
            except ValueError as exc:
                raise Rejected('loops_open', str(exc)) from None
        if self.params['publish_frequency'] > 0:
            self.pending = PendingTF(rt, q.copy(), sec, nanosec)
        else:
            self._publish_tf(rt, q, sec, nanosec)

    def publish_pending(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            self._publish_tf(pending.runtime, pending.q, pending.sec, pending.nanosec)

    def _publish_tf(self, rt: Runtime, q: np.ndarray, sec: int, nanosec: int) -> None:
        poses = self.stats.timed(rbd.frame_poses, rt.robot.model, q, out=rt.poses)
        tf = rt.tf_out
        if not relative_transforms(poses.array, rt.parents, rt.children, tf.doubles,
                                   tf.value_at):
            self.stats.non_finite_outputs += 1     # (never NaN or inf on /tf)
            return
        tf.stamp(sec, nanosec)
        self.pub_tf.publish(tf.data())
        self.stats.published += 1

    def stale_reason(self) -> str | None:
        return self.joint_states_stale(self.params['input_timeout'])

    def extra_diagnostics(self) -> dict:
        extra = {'frame_prefix': self.params['frame_prefix']}
        if self.runtime is not None:
            extra['clock_resets'] = str(self.runtime.merger.clock_resets)
            if self.runtime.loops is not None:
                extra['closed_loops'] = ', '.join(self.runtime.robot.model.constraint_names)
                extra['actuated_joints'] = ', '.join(self.runtime.loops.actuated)
        return extra


def main(args=None) -> int:
    return node_main(FramesNode, args, executable='frames_node',
                     description=__doc__.split('\n\n')[0])


if __name__ == '__main__':
    raise SystemExit(main())
