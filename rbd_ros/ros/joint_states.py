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

from .joint_state_bytes import Rejected  # noqa: F401 (raised and caught by the nodes)
from .robot import Robot

#: A stamp older than the previous one by more than this is a reset of the sender's clock (a log
#: replayed from its start, a restarted driver, or one bad stamp from the future before): taken,
#: and counted. Older by less, it is a message delivered out of order: rejected (time_backwards).
CLOCK_RESET_NS = 1_000_000_000

#: merge plans are cached for at most this many name lists, each of at most this many names and
#: characters (a robot's own lists are far smaller; others are planned per message)
PLAN_CACHE_SIZE, PLAN_CACHE_NAMES, PLAN_CACHE_CHARACTERS = 64, 512, 16384


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
        self.position = np.zeros(n)
        self.velocity = np.zeros(n)
        self.effort = np.zeros(n)
        self.has_position = np.zeros(n, dtype=bool)
        self.has_velocity = np.zeros(n, dtype=bool)
        self.has_effort = np.zeros(n, dtype=bool)
        self.last_stamp_ns = -1
        self.clock_resets = 0
        self._skip = set(robot.mimic_names) | set(robot.multi_dof_names)
        self._plans: dict[tuple[str, ...], _MergePlan] = {}
        self._complete = self._effort_complete = False
        if previous is not None:   # a model swap keeps what is known, by name
            self.last_stamp_ns = previous.last_stamp_ns
            self.clock_resets = previous.clock_resets
            for name, i in robot.slot.items():
                j = previous.robot.slot.get(name)
                if j is None:
                    continue
                for attr in ('position', 'velocity', 'effort'):
                    getattr(self, attr)[i] = getattr(previous, attr)[j]
                    getattr(self, 'has_' + attr)[i] = getattr(previous, 'has_' + attr)[j]

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
            slots=np.array(slots, dtype=int), src=np.array(src, dtype=int),
            unknown=tuple(unknown))
        # bounded: a stream of ever-new or huge name lists (a hostile publisher) costs no memory
        if len(names) <= PLAN_CACHE_NAMES and sum(map(len, names)) <= PLAN_CACHE_CHARACTERS:
            if len(self._plans) >= PLAN_CACHE_SIZE:
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
            if self.last_stamp_ns - t <= CLOCK_RESET_NS:
                raise Rejected('time_backwards', f'stamp {t * 1e-9:.9f} s is older than '
                               f'{self.last_stamp_ns * 1e-9:.9f} s')
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


@dataclasses.dataclass(frozen=True)
class _MergePlan:
    identity: bool          # the names are exactly the model's joints in model order
    slots: np.ndarray       # merger slot of each known name ...
    src: np.ndarray         # ... and its index in the message
    unknown: tuple[str, ...]
