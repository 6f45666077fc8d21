"""Joint states in: validation and merging by name.

A JointState is taken whole or not at all: a name/array length mismatch, a duplicate name,
NaN or inf, or a stamp older than the previous message's raise :class:`Rejected` (counted in
/diagnostics by reason). Names are matched in any order, partial messages merged; unknown
names are ignored and returned (counted); mimic and multi-DoF joint names are known and
skipped (mimic joints follow their leaders, multi-DoF joints are held at neutral).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from sensor_msgs.msg import JointState

from rbd_ros.dynamics._jit import JIT_ENABLED

from . import joint_state_bytes
from .joint_state_bytes import (MERGED_CLOCK_RESET, NON_FINITE, OTHER_LAYOUT, TIME_BACKWARDS,
                                Rejected)  # (Rejected: raised and caught by the nodes)
from .robot import Robot

#: A stamp older than the previous one by more than this is a reset of the sender's clock (a log
#: replayed from its start, a restarted driver, or one bad stamp from the future before): taken,
#: and counted. Older by less, it is a message delivered out of order: rejected (time_backwards).
CLOCK_RESET_NS = 1_000_000_000

#: compiled merges kept per merger, the last used first: one per sender on the topic (an arm's
#: driver and a gripper's), each tried in turn on a message of its length. A layout gets one
#: the second time it is merged (of the last SEEN_LAYOUTS new ones): a stream of one-off
#: layouts (fuzzed names) does not push the senders' merges out, nor copy a template each
FAST_MERGES, SEEN_LAYOUTS = 8, 64

#: merge plans are cached for at most this many name lists, each of at most this many names and
#: characters (a robot's own lists are far smaller; others are planned per message)
PLAN_CACHE_SIZE, PLAN_CACHE_NAMES, PLAN_CACHE_CHARACTERS = 64, 512, 16384

NON_FINITE_DETAIL = 'NaN or inf in position, velocity or effort'


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


class JointStateMerger:
    """Latest position/velocity/effort of every single-DoF joint, merged by name from possibly
    partial, shuffled JointState messages.

    ``update`` validates a whole message before taking anything from it (all or nothing): name /
    array length mismatch, NaN or inf, and a stamp older than the previous message's raise
    :class:`Rejected`. Unknown names are ignored and returned; mimic and multi-DoF joint names are
    known (mimic joints follow their leaders, multi-DoF joints are held at neutral) and skipped.
    """

    def __init__(self, robot: Robot, previous: 'JointStateMerger | None' = None,
                 required: np.ndarray | None = None):
        n = len(robot.joint_names)
        self.robot = robot
        # the joints whose positions make the state complete (a robot with closed loops: all
        # but the loops' passive joints, which follow; rbd_ros/control/closed_loops.py)
        self.required = np.ones(n, dtype=bool) if required is None else required
        # rows position, velocity, effort (views of one array: a compiled merge writes them)
        self.values = np.zeros((3, n))
        self.position, self.velocity, self.effort = self.values
        self.known = np.zeros((3, n), dtype=bool)
        self.has_position, self.has_velocity, self.has_effort = self.known
        self.last_stamp_ns = -1
        self.clock_resets = 0
        self._skip = set(robot.mimic_names) | set(robot.multi_dof_names)
        self._plans: dict[tuple[str, ...], _MergePlan] = {}
        self._complete = self._effort_complete = False
        # update_bytes: the layout of the last message read, and what merge_joint_state
        # compares and copies for the layouts merged last (the last used first)
        self._decoder = joint_state_bytes.JointStateDecoder()
        self._fast: list[_FastMerge] = []
        self._seen: set[int] = set()      # hashes of layouts merged once, not yet kept
        if JIT_ENABLED:
            joint_state_bytes.warm_up()
        if previous is not None:   # a model swap keeps what is known, by name
            self.last_stamp_ns = previous.last_stamp_ns
            self.clock_resets = previous.clock_resets
            for name, i in robot.slot.items():
                j = previous.robot.slot.get(name)
                if j is None:
                    continue
                self.values[:, i] = previous.values[:, j]
                self.known[:, i] = previous.known[:, j]

    @property
    def complete(self) -> bool:
        """Every required position known (once true, true for the life of this merger)."""
        if not self._complete:
            self._complete = bool(self.has_position[self.required].all())
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
            i = self.robot.slot.get(name)
            if i is not None:
                slots.append(i)
                src.append(k)
            elif name not in self._skip:
                unknown.append(name)
        plan = _MergePlan(
            identity=slots == list(range(len(self.position))) and len(names) == len(slots),
            slots=np.array(slots, dtype=np.int64), src=np.array(src, dtype=np.int64),
            unknown=tuple(unknown))
        # bounded: a stream of ever-new or huge name lists (a hostile publisher) costs no memory
        if len(names) <= PLAN_CACHE_NAMES and sum(map(len, names)) <= PLAN_CACHE_CHARACTERS:
            if len(self._plans) >= PLAN_CACHE_SIZE:
                self._plans.clear()
            self._plans[names] = plan
        return plan

    def update_bytes(self, data: bytes) -> tuple[int, int, list[str], bool]:
        """Merge one serialized JointState (a raw subscription's bytes). Returns (sec, nanosec,
        unknown names, whether it carried effort); rejects what ``update`` rejects, and bytes
        that are not a JointState (JointStateDecoder).

        A driver sends one layout (frame_id, names, array lengths) every time: once two
        messages of a layout have been merged, the next ones are checked and merged by one
        compiled call (merge_joint_state, through the merge plan of its names), which is what
        decoding them and ``update_values`` would do, with the same rejections. The last
        FAST_MERGES layouts are kept (senders interleaved on one topic); any other message
        takes that path."""
        size = len(data)
        for k, fast in enumerate(self._fast):
            if fast.size != size:
                continue
            status, sec, nanosec = joint_state_bytes.merge_joint_state(
                data, size, fast.template, fast.checks, fast.arrays, fast.swap,
                self.last_stamp_ns, CLOCK_RESET_NS, fast.src, fast.slots, fast.raw,
                self.values, self.known)
            if status == OTHER_LAYOUT:
                continue
            if status == NON_FINITE:
                raise Rejected('non_finite', NON_FINITE_DETAIL)
            if status == TIME_BACKWARDS:
                raise Rejected('time_backwards', self._backwards(sec * 1_000_000_000 + nanosec))
            self.clock_resets += status == MERGED_CLOCK_RESET
            self.last_stamp_ns = sec * 1_000_000_000 + nanosec
            if k:
                self._fast.insert(0, self._fast.pop(k))
            return sec, nanosec, list(fast.unknown), fast.has_effort
        sec, nanosec, names, position, velocity, effort = self._decoder.decode(data)
        unknown, has_effort = self.update_values(names, position, velocity, effort,
                                                 sec * 1_000_000_000 + nanosec)
        if JIT_ENABLED:     # (merged: its layout may be one a sender repeats)
            layout = self._decoder.layout
            key = hash((len(data), layout.encapsulation, layout.fixed, layout.mask,
                        layout.velocity_count_bytes, layout.effort_count_bytes))
            if key not in self._seen:
                if len(self._seen) >= SEEN_LAYOUTS:
                    self._seen.clear()
                self._seen.add(key)
            else:
                fast = self._fast_merge(layout, data)
                if fast is not None:
                    self._seen.discard(key)
                    self._fast.insert(0, fast)
                    del self._fast[FAST_MERGES:]
        return sec, nanosec, unknown, has_effort

    def _fast_merge(self, layout, data: bytes) -> '_FastMerge | None':
        """What merge_joint_state needs for messages of ``layout`` (that of ``data``, just
        merged), or None when its plan is not cached (a name list too long to keep)."""
        plan = self._plans.get(layout.names)
        if plan is None:
            return None
        checks = joint_state_bytes.layout_checks(layout)
        m = len(layout.names)
        return _FastMerge(
            size=len(data),
            template=np.frombuffer(data[:max(stop for _, stop in checks)], np.uint8).copy(),
            checks=np.array(checks, dtype=np.int64), arrays=np.array(layout.arrays, np.int64),
            swap=layout.stamp.format[0] == '>', src=plan.src, slots=plan.slots,
            raw=np.zeros(3 * 8 * m, np.uint8), unknown=plan.unknown,
            has_effort=layout.arrays[2][1] > 0 and len(plan.slots) > 0)

    def _backwards(self, t: int) -> str:
        return f'stamp {t * 1e-9:.9f} s is older than {self.last_stamp_ns * 1e-9:.9f} s'

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
            raise Rejected('non_finite', NON_FINITE_DETAIL)
        if t < self.last_stamp_ns:
            if self.last_stamp_ns - t <= CLOCK_RESET_NS:
                raise Rejected('time_backwards', self._backwards(t))
            self.clock_resets += 1
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


@dataclasses.dataclass(frozen=True, eq=False)
class _FastMerge:
    """merge_joint_state's arguments for one layout of messages (equal only to itself)."""
    size: int                 # bytes of each message
    template: np.ndarray      # uint8: the first message's bytes, up to the last check
    checks: np.ndarray        # (k, 2) byte ranges equal to the template's
    arrays: np.ndarray        # (3, 2) offset and count of position, velocity, effort
    swap: bool                # big-endian
    src: np.ndarray           # the merge plan: the message's index of each value taken ...
    slots: np.ndarray         # ... and its slot in the merger
    raw: np.ndarray           # uint8: room for the three arrays' float64 values
    unknown: tuple[str, ...]  # names the model does not know (returned, counted)
    has_effort: bool


@dataclasses.dataclass(frozen=True)
class _MergePlan:
    identity: bool          # the names are exactly the model's joints in model order
    slots: np.ndarray       # merger slot of each known name ...
    src: np.ndarray         # ... and its index in the message
    unknown: tuple[str, ...]
