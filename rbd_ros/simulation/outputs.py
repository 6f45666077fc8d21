"""What a simulated robot reports (sim_node's outputs, without ROS): the joint-state sensor
(noise and delay), the joint_states values with the mimic joints, the contact wrench on each
link touching the ground, the arrows that draw the contact forces, stamps, and the rates of the
outputs that need not go out every period. Plain numpy in and out; sim_node writes them into
messages (nodes/sim.py).
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Sequence

import numpy as np

#: the contact arrows' length for the robot's weight (m)
ARROW_LENGTH_PER_WEIGHT = 0.5


def stamp(seconds: float) -> tuple[int, int]:
    """(sec, nanosec) of a time in seconds (>= 0), rounded to the nanosecond."""
    ns = int(round(seconds * 1e9))
    return ns // 1_000_000_000, ns % 1_000_000_000


def all_finite(*arrays) -> bool:
    """Every value of every array finite (a sum that is finite cannot hold NaN or inf, unless it
    overflowed: then each value is checked)."""
    with np.errstate(over='ignore', invalid='ignore'):
        for a in arrays:
            a = np.asarray(a, dtype=float)
            if a.size and not np.isfinite(a.sum()) and not np.all(np.isfinite(a)):
                return False
    return True


@dataclasses.dataclass(frozen=True)
class Sample:
    """The state one period reports: joint positions, velocities and applied efforts (per
    JointState joint), the floating base's (q[:7], v[:6]) or None, and the contacts (a list of
    (link, world location, world force)) or None where they were not read."""

    t: float
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    base: tuple[np.ndarray, np.ndarray] | None = None
    contacts: list | None = None


class StateSensor:
    """The joint-state sensor: Gaussian noise of standard deviations ``noise`` = (position,
    velocity) and a delay of ``delay`` s of simulated time. The noise of a state is a function
    of (seed, step, stream) only, so a state published again (lockstep announcing it until a
    controller answers, a hold) carries the same noise, and a lockstep run repeats bit for
    bit."""

    def __init__(self, noise: Sequence[float] = (0.0, 0.0), delay: float = 0.0, seed: int = 0):
        self.noise_q, self.noise_v = (float(x) for x in noise)
        self.delay = float(delay)
        self.seed = int(seed) % 2**63
        self.pending: collections.deque[Sample] = collections.deque()

    def rng(self, step: int, stream: int = 0):
        return np.random.default_rng([self.seed, step, stream])

    def read(self, step: int, t: float, position, velocity, effort, base=None,
             contacts=None) -> list[Sample]:
        """The state at simulated time ``t`` (step number ``step``) measured; returns the
        samples due now (the delayed ones whose time has come, oldest first)."""
        position = np.array(position, dtype=float)
        velocity = np.array(velocity, dtype=float)
        if self.noise_q > 0:
            position += self.rng(step).normal(0.0, self.noise_q, len(position))
        if self.noise_v > 0:
            velocity += self.rng(step, 1).normal(0.0, self.noise_v, len(velocity))
        self.pending.append(Sample(t, position, velocity, np.asarray(effort, dtype=float),
                                   base, contacts))
        due = []
        while self.pending and self.pending[0].t + self.delay <= t + 1e-12:
            due.append(self.pending.popleft())
        return due

    def clear(self) -> None:
        """Forget the samples not yet due (the state was set or reset)."""
        self.pending.clear()


@dataclasses.dataclass(frozen=True)
class Mimic:
    """The mimic joints that follow JointState joints: q_m = multiplier q_leader + offset."""

    leader_slot: np.ndarray
    multiplier: np.ndarray
    offset: np.ndarray

    def joint_states(self, position, velocity, effort):
        """(position, velocity, effort) of the JointState joints then the mimic joints (no
        effort of their own: it acts on the leader)."""
        if not len(self.leader_slot):
            return position, velocity, effort
        return (np.concatenate([position, self.multiplier * position[self.leader_slot]
                                + self.offset]),
                np.concatenate([velocity, self.multiplier * velocity[self.leader_slot]]),
                np.concatenate([effort, np.zeros(len(self.leader_slot))]))


def link_wrenches(links: Sequence[str], at: np.ndarray, force: np.ndarray,
                  poses) -> list[tuple[str, np.ndarray]]:
    """Per link touching the ground, sorted by name, the contact wrench on it [f; tau] in the
    link's frame about its origin (as an external wrench, the core's f_ext): ``links``, ``at``
    and ``force`` (k x 3, world) give each contact point; ``poses[link]`` is the link's 4 x 4
    world pose."""
    out = []
    links = np.asarray(links)
    for link in sorted(set(links.tolist())):
        mine = links == link
        pose = poses[link]
        f = force[mine].sum(axis=0)
        tau = np.cross(at[mine] - pose[:3, 3], force[mine]).sum(axis=0)
        R = pose[:3, :3]
        out.append((link, np.concatenate([R.T @ f, R.T @ tau])))
    return out


def contact_arrows(at: np.ndarray, force: np.ndarray, weight: float) -> np.ndarray:
    """k x 2 x 3: from each contact point (world) to the tip of its force's arrow, whose length
    is ARROW_LENGTH_PER_WEIGHT for the robot's weight (N; at least 1e-9)."""
    scale = ARROW_LENGTH_PER_WEIGHT / max(weight, 1e-9)
    at = np.asarray(at, dtype=float).reshape(-1, 3)
    return np.stack([at, at + scale * np.asarray(force, dtype=float).reshape(-1, 3)], axis=1)


class Every:
    """Due at most every ``period`` s of simulated time (the first call is due): an output at
    its own rate, below the publish rate."""

    def __init__(self, period: float):
        self.period = period
        self.next = 0.0

    def due(self, t: float) -> bool:
        if t < self.next - 1e-12:
            return False
        self.next = t + self.period
        return True
