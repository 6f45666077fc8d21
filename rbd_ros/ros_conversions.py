"""Shared ROS plumbing for the rbd_ros nodes: QoS profiles, parameter declaration and validation,
the loaded-model snapshot, joint-state merging by name, message conversion and diagnostics.

The nodes (``dynamics_node``, ``frames_node``, ``sim_node``) stay thin: parameters come from
:func:`declare_parameters`, a robot description becomes a :class:`LoadedModel` (model + everything
derived from it, replaced by one assignment), joint states go through :class:`JointStateMerger`,
and every array is checked with :func:`all_finite` before it is published. For the 1 kHz path of
dynamics_node, :class:`JointStateDecoder` reads joint_states from their serialized bytes and
:class:`SerializedMessage` writes the outputs into bytes serialized once per model.

Multi-DoF URDF joints (planar, floating) have no single-value ``sensor_msgs/JointState``
representation: the nodes hold them at their neutral configuration (identity pose, zero velocity)
and leave them out of JointState outputs. A floating *base* (``floating_base: true``) is supplied
by ``nav_msgs/Odometry`` on the dynamics node's ``~/base_state`` (see docs/ros.md).
"""
from __future__ import annotations

import collections
import dataclasses
import gc
import inspect
import math
import struct
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import TransformStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import String

import rbd_ros.dynamics as rbd

# --------------------------------------------------------------------------------------------
# QoS
# --------------------------------------------------------------------------------------------

#: robot_description: reliable + transient local, depth 1 (a late subscriber gets the last one).
LATCHED_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: Outputs (torques, predictions, commands): reliable, volatile.
OUTPUT_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)
#: /tf as tf2_ros' TransformBroadcaster publishes it.
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                    durability=DurabilityPolicy.VOLATILE)
#: /tf_static as tf2_ros' StaticTransformBroadcaster publishes it.
TF_STATIC_QOS = LATCHED_QOS
#: Commands into the simulator: reliable, keep the latest few.
COMMAND_QOS = OUTPUT_QOS


#: Queue of a joint_states subscription: 0.1 s at 1 kHz. A node that is descheduled for a few
#: milliseconds (a busy 2-core machine) then catches up instead of losing messages; with
#: qos_profile_sensor_data's depth of 5, every stall over 5 ms lost messages.
JOINT_STATES_DEPTH = 100


def joint_states_qos(kind: str) -> QoSProfile:
    """QoS of a joint_states subscription: ``sensor_data`` (best effort: receives from reliable
    and best-effort publishers alike; qos_profile_sensor_data with a queue of
    JOINT_STATES_DEPTH) or ``reliable`` (the same queue)."""
    if kind == 'sensor_data':
        return QoSProfile(depth=JOINT_STATES_DEPTH, history=qos_profile_sensor_data.history,
                          reliability=qos_profile_sensor_data.reliability,
                          durability=qos_profile_sensor_data.durability)
    if kind == 'reliable':
        return QoSProfile(depth=JOINT_STATES_DEPTH, reliability=ReliabilityPolicy.RELIABLE)
    raise ValueError(f"joint_states_qos must be 'sensor_data' or 'reliable', not {kind!r}")


# --------------------------------------------------------------------------------------------
# Parameters: declared and validated in one place per node
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """One parameter: its default (which also fixes its type), a description, an optional
    validator (raises ValueError) and whether it may change at run time."""

    default: Any
    description: str
    validate: Callable[[Any], None] | None = None
    dynamic: bool = False


def one_of(*choices: str) -> Callable[[Any], None]:
    def check(value):
        if value not in choices:
            raise ValueError(f'must be one of {", ".join(choices)} (got {value!r})')
    return check


# Parameters several nodes declare, described once.
ROBOT_DESCRIPTION_PARAM = ParamSpec('', 'URDF text; empty: take it from the robot_description '
                                    'topic (latched)', dynamic=True)
JOINT_STATES_QOS_PARAM = ParamSpec('sensor_data', 'joint_states subscription QoS: sensor_data '
                                   '(best effort) or reliable', one_of('sensor_data', 'reliable'))


def positive(value) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f'must be a finite number > 0 (got {value!r})')


def non_negative(value) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f'must be a finite number >= 0 (got {value!r})')


def finite_vector(n: int | None = None) -> Callable[[Any], None]:
    def check(value):
        arr = np.asarray(list(value), dtype=float)
        if n is not None and arr.shape != (n,):
            raise ValueError(f'must have {n} elements (got {len(arr)})')
        if not np.all(np.isfinite(arr)):
            raise ValueError('must be finite')
    return check


def declare_parameters(node, specs: Mapping[str, ParamSpec]) -> dict[str, Any]:
    """Declare every parameter of ``specs`` on ``node``, validate the values and return them as a
    dict. Raises ValueError naming the parameter when a value is invalid. Dynamic parameters are
    re-validated by :func:`install_dynamic_validation`."""
    values = {}
    for name, spec in specs.items():
        default = spec.default
        if isinstance(default, list) and not default:
            # An empty list gives rclpy no type: say which array it is.
            ptype = Parameter.Type.STRING_ARRAY if name.endswith(('joints', 'names')) \
                else Parameter.Type.DOUBLE_ARRAY
            descriptor = ParameterDescriptor(description=spec.description, dynamic_typing=False,
                                             read_only=not spec.dynamic, type=ptype.value)
            node.declare_parameter(name, ptype, descriptor)
            try:
                value = node.get_parameter(name).value
            except ParameterUninitializedException:   # not set: the empty default
                value = None
            value = [] if value is None else list(value)
        else:
            descriptor = ParameterDescriptor(description=spec.description,
                                             read_only=not spec.dynamic)
            if isinstance(default, list):
                default = [float(x) for x in default] if all(
                    isinstance(x, (int, float)) for x in default) else default
            value = node.declare_parameter(name, default, descriptor).value
            if isinstance(value, (list, tuple)) or type(value).__name__ == 'array':
                value = list(value)
        if spec.validate is not None:
            try:
                spec.validate(value)
            except ValueError as exc:
                raise ValueError(f'parameter {name}: {exc}') from None
        values[name] = value
    return values


def install_dynamic_validation(node, specs: Mapping[str, ParamSpec],
                               on_change: Callable[[str, Any], None]) -> None:
    """Reject invalid values of dynamic parameters at set time; call ``on_change(name, value)``
    after a valid change."""

    def validate(params):
        for p in params:
            spec = specs.get(p.name)
            if spec is not None and spec.validate is not None:
                try:
                    spec.validate(p.value)
                except ValueError as exc:
                    return SetParametersResult(successful=False, reason=f'{p.name}: {exc}')
        return SetParametersResult(successful=True)

    def changed(params):
        for p in params:
            if p.name in specs and specs[p.name].dynamic:
                on_change(p.name, p.value)

    node.add_on_set_parameters_callback(validate)
    node.add_post_set_parameters_callback(changed)


# --------------------------------------------------------------------------------------------
# The loaded model: one immutable snapshot, swapped by a single assignment
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class LoadedModel:
    """A model and everything derived from it. Nodes keep one reference and replace it whole, so
    a callback that reads ``self._loaded`` once never mixes two models."""

    model: Any
    xml: str
    floating_base: bool
    #: single-coordinate joints (revolute, continuous, prismatic) in q/v order: the JointState joints
    joint_names: tuple[str, ...]
    q_index: np.ndarray          # (n,) q index of each of joint_names
    v_index: np.ndarray          # (n,) v index of each of joint_names
    name_to_slot: Mapping[str, int]   # joint name -> position in joint_names
    mimic_names: tuple[str, ...]      # mimic joints (follow their leader)
    mimic_leader_slot: np.ndarray     # slot of each mimic joint's leader (-1 when not 1-DoF)
    mimic_multiplier: np.ndarray
    mimic_offset: np.ndarray
    multi_dof_names: tuple[str, ...]  # planar/floating URDF joints, held at neutral
    q_neutral: np.ndarray             # (nq,) zeros, unit quaternions for floating joints/base
    lower: np.ndarray                 # (n,) position limits of joint_names (-inf/inf if none)
    upper: np.ndarray
    generation: int
    #: fixed base and joint_names are every coordinate in q/v order: full_q(x) equals x
    direct_state: bool = False

    def command_joint_slots(self, names) -> tuple[tuple[str, ...], np.ndarray]:
        """(names, slots) of a command_joints parameter (empty: every single-DoF joint in model
        order); ValueError naming any joint that is not a single-DoF joint of the model."""
        names = tuple(names) or tuple(self.joint_names)
        missing = [n for n in names if n not in self.name_to_slot]
        if missing:
            raise ValueError(f'command_joints {missing} are not single-DoF joints of the model')
        return names, np.array([self.name_to_slot[n] for n in names], dtype=int)

    @property
    def nq(self) -> int:
        return self.model.nq

    @property
    def nv(self) -> int:
        return self.model.nv

    def moving_joint_names(self) -> tuple[str, ...]:
        return self.joint_names + self.mimic_names

    def mimic_positions(self, joint_q: np.ndarray) -> np.ndarray:
        """Positions of the mimic joints from the single-DoF joint positions (slot order)."""
        if not self.mimic_names:
            return np.zeros(0)
        lead = np.where(self.mimic_leader_slot >= 0,
                        joint_q[np.maximum(self.mimic_leader_slot, 0)], 0.0)
        return self.mimic_multiplier * lead + self.mimic_offset

    def full_q(self, joint_q: np.ndarray, base_q: np.ndarray | None = None) -> np.ndarray:
        q = self.q_neutral.copy()
        q[self.q_index] = joint_q
        if base_q is not None:
            q[:7] = base_q
        return q

    def full_v(self, joint_v: np.ndarray, base_v: np.ndarray | None = None) -> np.ndarray:
        v = np.zeros(self.nv)
        v[self.v_index] = joint_v
        if base_v is not None:
            v[:6] = base_v
        return v


def load_model(xml: str, floating_base: bool, gravity: Sequence[float],
               generation: int = 0) -> LoadedModel:
    """Build a :class:`LoadedModel` from URDF text. Raises ``rbd.ModelError`` (or ValueError for
    an empty description)."""
    if not xml or not xml.strip():
        raise ValueError('robot description is empty')
    model = rbd.Model.from_urdf(xml, floating_base=bool(floating_base),
                                gravity=tuple(float(g) for g in gravity))
    single, mimics, multi = [], [], []
    for j in model.joints:
        if floating_base and j.type == 'floating' and j.q_index == 0 and j.v_index == 0:
            continue   # the added floating base, not a URDF joint
        if getattr(j, 'mimic', None) is not None:
            mimics.append(j)
        elif j.type in ('revolute', 'continuous', 'prismatic') and j.q_index is not None:
            single.append(j)
        elif j.type in ('planar', 'floating'):
            multi.append(j)
    single.sort(key=lambda j: j.v_index)
    slot = {j.name: i for i, j in enumerate(single)}
    q_neutral = np.zeros(model.nq)
    if floating_base:
        q_neutral[6] = 1.0
    for j in multi:
        if j.type == 'floating':
            q_neutral[j.q_index + 6] = 1.0

    def limit(value, default):
        return float(value) if value is not None and math.isfinite(float(value)) else default

    lower, upper = [], []
    for j in single:
        lo, hi = limit(j.lower, -math.inf), limit(j.upper, math.inf)
        if j.type == 'continuous' or not lo < hi:
            lo, hi = -math.inf, math.inf
        lower.append(lo)
        upper.append(hi)
    return LoadedModel(
        model=model, xml=xml, floating_base=bool(floating_base),
        joint_names=tuple(j.name for j in single),
        q_index=np.array([j.q_index for j in single], dtype=int),
        v_index=np.array([j.v_index for j in single], dtype=int),
        name_to_slot=slot,
        mimic_names=tuple(j.name for j in mimics),
        mimic_leader_slot=np.array([slot.get(j.mimic[0], -1) for j in mimics], dtype=int),
        mimic_multiplier=np.array([float(j.mimic[1]) for j in mimics]),
        mimic_offset=np.array([float(j.mimic[2]) for j in mimics]),
        multi_dof_names=tuple(j.name for j in multi),
        q_neutral=q_neutral, lower=np.array(lower), upper=np.array(upper),
        generation=generation,
        direct_state=(not floating_base and not multi and len(single) == model.nq == model.nv
                      and [j.q_index for j in single] == list(range(model.nq))
                      and [j.v_index for j in single] == list(range(model.nv))))


# --------------------------------------------------------------------------------------------
# Joint states in: validation and merging by name
# --------------------------------------------------------------------------------------------

def stamp_ns(stamp: TimeMsg) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def all_finite(*arrays) -> bool:
    """True when every element of every array (numpy array, array.array, list) is finite.

    Runs on every message, so the common case is one sum: a sum of finite numbers is finite
    (``s - s == 0``) unless it overflows, and any NaN or inf makes it NaN or inf. Only a sum that
    is not finite (or input that cannot be summed) is checked element by element."""
    try:
        total = 0.0
        for a in arrays:
            if isinstance(a, np.ndarray):
                total += sum(a.tolist()) if a.ndim == 1 else float(a.sum())
            else:
                total += sum(a)
        if total - total == 0.0:
            return True
    except (TypeError, ValueError):
        pass
    return all(bool(np.all(np.isfinite(np.asarray(a, dtype=float)))) for a in arrays)


class Rejected(Exception):
    """A message that is rejected; ``reason`` is a short key counted in diagnostics."""

    def __init__(self, reason: str, detail: str = ''):
        super().__init__(f'{reason}: {detail}' if detail else reason)
        self.reason = reason
        self.detail = detail


class JointStateMerger:
    """Latest position/velocity/effort of every single-DoF joint, merged by name from possibly
    partial, shuffled JointState messages.

    ``update`` validates a whole message before taking anything from it (all or nothing): name /
    array length mismatch, NaN or inf, and a stamp older than the previous message's raise
    :class:`Rejected`. Unknown names are ignored and returned; mimic and multi-DoF joint names are
    known (mimic joints follow their leaders, multi-DoF joints are held at neutral) and skipped.
    """

    def __init__(self, loaded: LoadedModel, previous: 'JointStateMerger | None' = None):
        n = len(loaded.joint_names)
        self.loaded = loaded
        self.position = np.zeros(n)
        self.velocity = np.zeros(n)
        self.effort = np.zeros(n)
        self.has_position = np.zeros(n, dtype=bool)
        self.has_velocity = np.zeros(n, dtype=bool)
        self.has_effort = np.zeros(n, dtype=bool)
        self.last_stamp_ns = -1
        self._skip = set(loaded.mimic_names) | set(loaded.multi_dof_names)
        self._plans: dict[tuple[str, ...], _MergePlan] = {}
        self._complete = self._effort_complete = False
        if previous is not None:   # a model swap keeps what is known, by name
            self.last_stamp_ns = previous.last_stamp_ns
            for name, i in loaded.name_to_slot.items():
                j = previous.loaded.name_to_slot.get(name)
                if j is None:
                    continue
                for attr in ('position', 'velocity', 'effort'):
                    getattr(self, attr)[i] = getattr(previous, attr)[j]
                    getattr(self, 'has_' + attr)[i] = getattr(previous, 'has_' + attr)[j]

    @property
    def complete(self) -> bool:
        """Every position known (once true, true for the life of this merger)."""
        if not self._complete:
            self._complete = bool(self.has_position.all())
        return self._complete

    @property
    def effort_complete(self) -> bool:
        if not self._effort_complete:
            self._effort_complete = bool(self.has_effort.all())
        return self._effort_complete

    def _plan(self, names: tuple[str, ...]) -> '_MergePlan':
        """Where the values of a message with these names go; cached per name list (a driver
        sends the same names every time, so the per-message work is one dict look-up)."""
        if len(set(names)) != len(names):
            raise Rejected('duplicate_names', 'a joint name appears twice')
        slots, src, unknown = [], [], []
        for k, name in enumerate(names):
            i = self.loaded.name_to_slot.get(name)
            if i is not None:
                slots.append(i)
                src.append(k)
            elif name not in self._skip:
                unknown.append(name)
        plan = _MergePlan(
            identity=slots == list(range(len(self.position))) and len(names) == len(slots),
            slots=np.array(slots, dtype=int), src=np.array(src, dtype=int),
            unknown=tuple(unknown))
        if len(self._plans) >= 64:   # bounded: a stream of ever-new name lists costs no memory
            self._plans.clear()
        self._plans[names] = plan
        return plan

    def update(self, msg: JointState) -> tuple[list[str], bool]:
        """Merge ``msg``. Returns (unknown names, whether the message carried effort)."""
        return self.update_values(tuple(msg.name), msg.position, msg.velocity, msg.effort,
                                  stamp_ns(msg.header.stamp))

    def update_values(self, names: tuple[str, ...], pos, vel, eff,
                      t: int) -> tuple[list[str], bool]:
        """Merge one JointState given as its names, position / velocity / effort values (numpy
        arrays, array.array or sequences) and stamp in ns; as :meth:`update`."""
        n = len(names)
        for field, values in (('position', pos), ('velocity', vel), ('effort', eff)):
            if len(values) not in (0, n):
                raise Rejected('length_mismatch', f'{n} names but {len(values)} {field} values')
        plan = self._plans.get(names)
        if plan is None:
            plan = self._plan(names)   # raises Rejected on duplicate names
        if not all_finite(pos, vel, eff):
            raise Rejected('non_finite', 'NaN or inf in position, velocity or effort')
        if t < self.last_stamp_ns:
            raise Rejected('time_backwards',
                           f'stamp {t * 1e-9:.9f} s is older than {self.last_stamp_ns * 1e-9:.9f} s')
        self.last_stamp_ns = t
        for values, dest, known in ((pos, self.position, self.has_position),
                                    (vel, self.velocity, self.has_velocity),
                                    (eff, self.effort, self.has_effort)):
            if not len(values):
                continue
            if plan.identity:   # every joint, in model order
                dest[:] = values
                known[:] = True
            elif len(plan.slots):
                dest[plan.slots] = np.asarray(values, dtype=float)[plan.src]
                known[plan.slots] = True
        return list(plan.unknown), bool(len(eff) and len(plan.slots))


@dataclasses.dataclass(frozen=True)
class _MergePlan:
    identity: bool          # the names are exactly the model's joints in model order
    slots: np.ndarray       # merger slot of each known name ...
    src: np.ndarray         # ... and its index in the message
    unknown: tuple[str, ...]


class JointStateDecoder:
    """sensor_msgs/JointState from its serialized bytes (a ``raw=True`` subscription) without
    building a Python message: ``decode(data)`` returns (sec, nanosec, names, position,
    velocity, effort), the arrays float64 views of the bytes.

    Plain CDR (XCDR1, either byte order: what rmw implementations send for ROS messages) is read
    here. A publisher sends the same frame_id, names and array lengths every time, so the bytes
    that fix the layout are compared with the previous message's and, when equal, the stamp and
    the arrays are read at the offsets found then. Any other encapsulation goes through rclpy's
    deserializer. Truncated or malformed bytes raise :class:`Rejected` (``malformed``).
    """

    def __init__(self):
        self._layout: _JointStateLayout | None = None

    def decode(self, data: bytes):
        lay = self._layout
        if lay is None or len(data) < lay.end or data[:2] != lay.encapsulation or \
                (int.from_bytes(data[12:lay.fixed_end], 'little') & lay.mask) != lay.fixed or \
                data[lay.velocity_count:lay.velocity_count + 4] != lay.velocity_count_bytes or \
                data[lay.effort_count:lay.effort_count + 4] != lay.effort_count_bytes:
            lay = self._layout = self._parse(data)
            if lay is None:   # not plain CDR
                msg = deserialize_message(data, JointState)
                st = msg.header.stamp
                return (st.sec, st.nanosec, tuple(msg.name), msg.position, msg.velocity,
                        msg.effort)
        sec, nanosec = lay.stamp.unpack_from(data, 4)
        (p, np_), (v, nv), (e, ne) = lay.arrays
        dt = lay.dtype
        return (sec, nanosec, lay.names,
                np.frombuffer(data, dt, np_, p) if np_ else _NO_VALUES,
                np.frombuffer(data, dt, nv, v) if nv else _NO_VALUES,
                np.frombuffer(data, dt, ne, e) if ne else _NO_VALUES)

    @staticmethod
    def _parse(data: bytes) -> '_JointStateLayout | None':
        if len(data) < 4 or data[0] != 0 or data[1] not in (0, 1):
            return None
        e = '<' if data[1] == 1 else '>'
        u32 = struct.Struct(e + 'I')

        pads = []   # alignment gaps: their bytes are undefined

        def align(off, n):   # XCDR1 aligns relative to the byte after the encapsulation
            new = off + (-(off - 4)) % n
            pads.append((off, new))
            return new

        def string(off):
            length, = u32.unpack_from(data, off)
            raw = data[off + 4:off + 4 + length]
            if len(raw) != length:
                raise struct.error('string past the end')
            return raw.rstrip(b'\0').decode('utf-8'), off + 4 + length

        try:
            _, off = string(12)                      # header.stamp (8 bytes), header.frame_id
            off = align(off, 4)
            count, = u32.unpack_from(data, off)
            off += 4
            names = []
            for _ in range(count):
                name, off = string(align(off, 4))
                names.append(name)
            arrays, count_at = [], []
            for _ in range(3):                       # position, velocity, effort
                off = align(off, 4)
                count, = u32.unpack_from(data, off)
                count_at.append(off)
                off += 4
                if count:
                    off = align(off, 8)
                arrays.append((off, count))
                off += 8 * count
            if off > len(data):
                raise struct.error('arrays past the end')
        except (struct.error, UnicodeDecodeError) as exc:
            raise Rejected('malformed', f'JointState bytes: {exc}') from None
        fixed_end, vc, ec = count_at[0] + 4, count_at[1], count_at[2]
        mask = bytearray(b'\xff' * (fixed_end - 12))
        for start, stop in pads:
            if stop <= fixed_end:
                mask[start - 12:stop - 12] = bytes(stop - start)
        mask = int.from_bytes(mask, 'little')
        return _JointStateLayout(
            end=off, encapsulation=data[:2], mask=mask,
            fixed=int.from_bytes(data[12:fixed_end], 'little') & mask,
            fixed_end=fixed_end, velocity_count=vc, velocity_count_bytes=data[vc:vc + 4],
            effort_count=ec, effort_count_bytes=data[ec:ec + 4], names=tuple(names),
            arrays=tuple(arrays), stamp=struct.Struct(e + 'iI'), dtype=np.dtype(e + 'f8'))


_NO_VALUES = np.zeros(0)
_NO_VALUES.flags.writeable = False


@dataclasses.dataclass(frozen=True)
class _JointStateLayout:
    """Where things are in a serialized JointState: equal bytes at ``encapsulation``, at
    ``fixed`` (but for alignment gaps) and at the two counts mean an equal layout."""

    end: int                 # where the effort values end
    encapsulation: bytes
    mask: int                # bytes 12 .. fixed_end (frame_id, names, position count) as an
    fixed: int               # int, alignment gaps masked out; and their value
    fixed_end: int
    velocity_count: int      # offset of the velocity count ...
    velocity_count_bytes: bytes   # ... and its bytes
    effort_count: int
    effort_count_bytes: bytes
    names: tuple[str, ...]
    arrays: tuple            # (offset, count) of position, velocity, effort
    stamp: struct.Struct
    dtype: np.dtype


# --------------------------------------------------------------------------------------------
# Messages out
# --------------------------------------------------------------------------------------------

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


class SerializedMessage:
    """A message published many times with the same names and only new numbers: serialized
    once by rclpy, then per message the stamp and the float64[] fields are written into a copy of
    those bytes, which ``Publisher.publish`` sends as they are (no Python-to-C conversion and no
    serialization per message).

    ``fields`` lists the float64[] fields to fill, as (message or sub-message, field name),
    each of ``length`` values; ``header`` is the std_msgs/Header whose stamp is set. Where they
    lie in the bytes is found by serializing the message with marker values in them, so the
    encoding is whatever rclpy produces: the bytes are identical to serializing the message with
    the same stamp and values (test_ros_conversions checks it).
    """

    _STAMP_MARK = (0x5EC0_7A11, 0x3AB_CDEF)

    def __init__(self, msg, header, fields: Sequence[tuple[Any, str]], length: int):
        header.stamp = TimeMsg(sec=self._STAMP_MARK[0], nanosec=self._STAMP_MARK[1])
        marks = []
        for k, (holder, name) in enumerate(fields):
            values = [math.ldexp(1.0 + (k * length + i + 1) / 4096.0, -1000)
                      for i in range(length)]
            setattr(holder, name, values)
            marks.append(values)
        self.template = self._exact(msg, bytes(serialize_message(msg)))
        # encapsulation: byte 1 is 1 for little-endian CDR, 0 for big-endian
        self._endian = '<' if self.template[1] & 1 else '>'
        self._stamp = struct.Struct(self._endian + 'iI')
        self._stamp_offset = self._find(self._stamp.pack(*self._STAMP_MARK))
        self._slices = []
        for values in marks:
            offset = self._find(struct.pack(f'{self._endian}{length}d', *values)) if length else 0
            self._slices.append(slice(offset, offset + 8 * length))
        self._dtype = np.dtype(np.float64).newbyteorder(self._endian)
        self.length = length

    @staticmethod
    def _exact(msg, data: bytes) -> bytes:
        """``data`` without the bytes that rclpy's serialized buffer may carry after the
        message: the shortest prefix (whole 4-byte words) that still deserializes to ``msg``."""
        lo, hi = 1, len(data) // 4   # in words; hi always deserializes
        while lo < hi:
            mid = (lo + hi) // 2
            try:
                ok = deserialize_message(data[:4 * mid], type(msg)) == msg
            except Exception:   # noqa: BLE001 - rclpy raises RMWError on a short buffer
                ok = False
            if ok:
                hi = mid
            else:
                lo = mid + 1
        return data[:4 * hi]

    def _find(self, pattern: bytes) -> int:
        offset = self.template.find(pattern)
        if offset < 0 or self.template.find(pattern, offset + 1) >= 0:
            raise RuntimeError('SerializedMessage: a field was not found exactly once')
        return offset

    def fill(self, sec: int, nanosec: int, *arrays: np.ndarray) -> bytes:
        """The serialized message stamped (sec, nanosec), with the arrays (in ``fields`` order,
        each of ``length`` float64 values)."""
        buf = bytearray(self.template)
        self._stamp.pack_into(buf, self._stamp_offset, sec, nanosec)
        for where, values in zip(self._slices, arrays):
            if type(values) is not np.ndarray or values.dtype != self._dtype:
                values = np.asarray(values, dtype=self._dtype)
            data = values.tobytes()
            if len(data) != 8 * self.length:   # (a bytearray slice assignment would resize)
                raise ValueError(f'expected {self.length} values, got {len(data) // 8}')
            buf[where] = data
        return bytes(buf)


def quaternion_from_matrix(r: np.ndarray) -> tuple[float, float, float, float]:
    """Unit quaternion [x, y, z, w] of a rotation matrix (Shepperd's method), w >= 0."""
    m00, m11, m22 = r[0, 0], r[1, 1], r[2, 2]
    tr = m00 + m11 + m22
    if tr > 0:
        s = 2.0 * math.sqrt(1.0 + tr)
        w, x, y, z = 0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, \
            (r[1, 0] - r[0, 1]) / s
    elif m00 > m11 and m00 > m22:
        s = 2.0 * math.sqrt(1.0 + m00 - m11 - m22)
        w, x, y, z = (r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, \
            (r[0, 2] + r[2, 0]) / s
    elif m11 > m22:
        s = 2.0 * math.sqrt(1.0 + m11 - m00 - m22)
        w, x, y, z = (r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, \
            (r[1, 2] + r[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(1.0 + m22 - m00 - m11)
        w, x, y, z = (r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, \
            (r[1, 2] + r[2, 1]) / s, 0.25 * s
    if w < 0:
        x, y, z, w = -x, -y, -z, -w
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    return x / norm, y / norm, z / norm, w / norm


def matrix_from_quaternion(x: float, y: float, z: float, w: float) -> np.ndarray:
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def transform_msg(pose: np.ndarray, parent: str, child: str, stamp: TimeMsg) -> TransformStamped:
    t = TransformStamped()
    t.header.stamp = stamp
    t.header.frame_id = parent
    t.child_frame_id = child
    p = t.transform.translation
    p.x, p.y, p.z = (float(c) for c in pose[:3, 3])
    q = t.transform.rotation
    q.x, q.y, q.z, q.w = quaternion_from_matrix(pose[:3, :3])
    return t


def transform_to_matrix(t) -> np.ndarray:
    """4x4 matrix of a geometry_msgs/Transform."""
    m = np.eye(4)
    r = t.rotation
    m[:3, :3] = matrix_from_quaternion(r.x, r.y, r.z, r.w)
    m[:3, 3] = (t.translation.x, t.translation.y, t.translation.z)
    return m


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


# --------------------------------------------------------------------------------------------
# Diagnostics bookkeeping
# --------------------------------------------------------------------------------------------

class Stats:
    """Counters and timings behind a node's /diagnostics status."""

    def __init__(self, window: int = 2000):
        self.compute_s: collections.deque[float] = collections.deque(maxlen=window)
        self.rejected: collections.Counter[str] = collections.Counter()
        self.unknown_names: collections.Counter[str] = collections.Counter()
        self.received = 0
        self.published = 0
        self.non_finite_outputs = 0
        self.description_errors = 0
        self.last_error = ''
        self._rate_t0 = time.monotonic()
        self._rate_n0 = 0
        self.last_input_time: float | None = None   # time.monotonic() of the last valid input

    def timed(self, fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        self.compute_s.append(time.perf_counter() - t0)
        return out

    def reject(self, reason: str) -> None:
        self.rejected[reason] += 1

    def input_rate(self) -> float:
        now = time.monotonic()
        dt = now - self._rate_t0
        rate = (self.received - self._rate_n0) / dt if dt > 0 else 0.0
        self._rate_t0, self._rate_n0 = now, self.received
        return rate

    def compute_percentiles_us(self) -> tuple[float, float]:
        if not self.compute_s:
            return 0.0, 0.0
        arr = np.fromiter(self.compute_s, dtype=float)
        p50, p99 = np.percentile(arr, [50, 99])
        return float(p50 * 1e6), float(p99 * 1e6)

    def key_values(self) -> list[KeyValue]:
        p50, p99 = self.compute_percentiles_us()
        kv = {
            'input_rate_hz': f'{self.input_rate():.1f}',
            'messages_received': str(self.received),
            'messages_published': str(self.published),
            'compute_time_p50_us': f'{p50:.1f}',
            'compute_time_p99_us': f'{p99:.1f}',
            'rejected_total': str(sum(self.rejected.values())),
            'unknown_joint_names': str(sum(self.unknown_names.values())),
            'unknown_joint_name_list': ','.join(sorted(self.unknown_names)),
            'non_finite_outputs_dropped': str(self.non_finite_outputs),
            'description_errors': str(self.description_errors),
            'last_error': self.last_error,
        }
        for reason, count in sorted(self.rejected.items()):
            kv[f'rejected_{reason}'] = str(count)
        return [KeyValue(key=k, value=v) for k, v in kv.items()]


def diagnostic_status(node_name: str, loaded: LoadedModel | None, stats: Stats, stale: bool,
                      extra: Mapping[str, str] | None = None) -> DiagnosticStatus:
    st = DiagnosticStatus()
    st.name = f'{node_name}: rbd_ros'
    values = stats.key_values()
    if loaded is None:
        st.level, st.message = DiagnosticStatus.ERROR, 'no robot model (waiting for robot_description)'
        values = [KeyValue(key='model', value='')] + values
    else:
        st.hardware_id = loaded.model.name
        values = [KeyValue(key='model', value=str(loaded.model.name)),
                  KeyValue(key='nq', value=str(loaded.nq)),
                  KeyValue(key='nv', value=str(loaded.nv)),
                  KeyValue(key='model_generation', value=str(loaded.generation))] + values
        if stale:
            st.level, st.message = DiagnosticStatus.WARN, 'input stale: torque outputs stopped'
        elif stats.rejected or stats.description_errors or stats.non_finite_outputs:
            st.level, st.message = DiagnosticStatus.WARN, 'running; some input was rejected'
        else:
            st.level, st.message = DiagnosticStatus.OK, 'running'
    values.append(KeyValue(key='stale_input', value=str(bool(stale)).lower()))
    for k, v in (extra or {}).items():
        values.append(KeyValue(key=k, value=str(v)))
    st.values = values
    return st


# --------------------------------------------------------------------------------------------
# Node helpers
# --------------------------------------------------------------------------------------------

def make_executor(context=None):
    """rclpy.experimental.EventsExecutor when available (lower latency), else the
    SingleThreadedExecutor."""
    try:
        from rclpy.experimental import EventsExecutor
        return EventsExecutor(context=context)
    except Exception:   # noqa: BLE001 - older rclpy or a build without it
        from rclpy.executors import SingleThreadedExecutor
        return SingleThreadedExecutor(context=context)


def spin(executor, context=None, duration: float | None = None) -> None:
    """Spin until the context shuts down (Ctrl-C) or ``duration`` s have passed.

    Spins in slices of 0.2 s: rclpy's EventsExecutor.spin() never returns to Python, so a
    SIGINT would not be seen; between slices it is (ExternalShutdownException or
    KeyboardInterrupt reach the caller).

    First, everything allocated so far (rclpy, numba, the model: ~130,000 objects that live as
    long as the process) is moved out of reach of Python's cyclic collector, whose full pass
    over them measured 67 ms: a stall of 67 messages at 1 kHz."""
    import rclpy
    from rclpy.task import Future

    gc.freeze()
    never = Future()
    deadline = None if not duration else time.monotonic() + duration
    while rclpy.ok(context=context):
        step = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
        if step <= 0:
            return
        executor.spin_until_future_complete(never, timeout_sec=step)


def run_node(node_cls, args=None) -> int:
    """main() body shared by the node modules: init, spin, clean shutdown on Ctrl-C or external
    shutdown. Returns a process exit code."""
    import rclpy
    from rclpy.executors import ExternalShutdownException

    rclpy.init(args=args)
    node = None
    executor = None
    try:
        node = node_cls()
        executor = make_executor()
        executor.add_node(node)
        spin(executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as exc:   # invalid parameters
        print(f'[{getattr(node_cls, "NODE_NAME", "rbd_ros")}] {exc}')
        return 2
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


# --------------------------------------------------------------------------------------------
# The common node base: parameters, robot description (parameter or latched topic), model swap
# --------------------------------------------------------------------------------------------

class RbdNode(Node):
    """Base of the three nodes. Subclasses set NODE_NAME and PARAMS (each must contain
    ``robot_description``) and implement ``model_changed(loaded)``.

    The description comes from the ``robot_description`` parameter when it is non-empty (also
    when set at run time), else from the latched ``robot_description`` topic. A description that
    fails to load is logged (the ModelError names the culprit), counted, and the previous model
    keeps running. A valid one replaces ``self.loaded`` in one assignment.
    """

    NODE_NAME = 'rbd'
    PARAMS: Mapping[str, ParamSpec] = {}
    MODEL_PARAMS = ('floating_base', 'gravity')

    def __init__(self, *, context=None, parameter_overrides=None, node_name=None,
                 namespace=None, cli_args=None):
        super().__init__(node_name or self.NODE_NAME, context=context, namespace=namespace,
                         parameter_overrides=parameter_overrides, cli_args=cli_args)
        self.params = declare_parameters(self, self.PARAMS)
        self.stats = Stats()
        self.loaded: LoadedModel | None = None
        self._generation = 0
        install_dynamic_validation(self, self.PARAMS, self._on_param_change)

    def start_description(self) -> None:
        """Take the description from the parameter now, and listen to the topic. Subclasses
        call this at the end of __init__, once their publishers exist."""
        self.create_subscription(String, 'robot_description', self._on_description_msg,
                                 LATCHED_QOS)
        if self.params['robot_description']:
            self.set_description(self.params['robot_description'], 'parameter')

    # -- description ---------------------------------------------------------------------
    def set_description(self, xml: str, source: str) -> bool:
        """Load ``xml``; on success swap the model and call ``model_changed``. Never raises."""
        try:
            loaded = load_model(xml, self.params.get('floating_base', False),
                                self.params.get('gravity', (0.0, 0.0, -9.81)),
                                generation=self._generation + 1)
            self.model_prepared(loaded)   # subclass checks against the new model (may raise)
        except Exception as exc:   # noqa: BLE001 - a bad description must never kill the node
            self.stats.description_errors += 1
            self.stats.last_error = f'robot_description from {source}: {exc}'
            keep = 'keeping the previous model' if self.loaded is not None else 'no model yet'
            self.get_logger().error(f'robot_description from {source} rejected ({keep}): '
                                    f'{type(exc).__name__}: {exc}')
            return False
        self._generation = loaded.generation
        self.loaded = loaded          # the atomic swap
        self.model_changed(loaded)
        self.get_logger().info(
            f'model {loaded.model.name!r} from {source}: nq={loaded.nq} nv={loaded.nv}, '
            f'joints {", ".join(loaded.joint_names)}')
        return True

    def _on_description_msg(self, msg) -> None:
        if self.params['robot_description']:
            return   # the parameter wins
        if self.loaded is not None and msg.data == self.loaded.xml:
            return
        self.set_description(msg.data, 'topic')

    def _on_param_change(self, name: str, value) -> None:
        self.params[name] = value
        if name == 'robot_description' and value:
            self.set_description(value, 'parameter')

    # -- hooks ---------------------------------------------------------------------------
    def model_prepared(self, loaded: LoadedModel) -> None:
        """Validate node-specific parameters against a new model; raise ValueError to refuse it."""

    def model_changed(self, loaded: LoadedModel) -> None:
        """Called after ``self.loaded`` was replaced."""

    # -- helpers -------------------------------------------------------------------------
    def reject(self, reason: str, detail: str) -> None:
        self.stats.reject(reason)
        self.stats.last_error = f'{reason}: {detail}'
        self.get_logger().warning(f'rejected message ({reason}): {detail}',
                                  throttle_duration_sec=2.0)

    def guard(self, fn):
        """Wrap a callback: a Rejected input is counted; any other exception is counted and
        logged, never raised into the executor."""
        nargs = len(inspect.signature(fn).parameters)

        def wrapped(*args):   # (rclpy passes timers a TimerInfo when the callback takes one)
            try:
                fn(*args[:nargs])
            except Rejected as exc:
                self.reject(exc.reason, exc.detail)
            except Exception as exc:   # noqa: BLE001
                self.stats.reject('internal_error')
                self.stats.last_error = f'{type(exc).__name__}: {exc}'
                self.get_logger().error(f'{fn.__name__}: {type(exc).__name__}: {exc}',
                                        throttle_duration_sec=2.0)
        wrapped.__name__ = fn.__name__
        return wrapped
