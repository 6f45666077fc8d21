"""Joint trajectories sampled in time as ros2_controllers' JointTrajectoryController (JTC) samples
them, ROS-free.

A trajectory is a start time and points (time from start, positions, and optionally velocities
and accelerations) for some joints. Between two points, per joint, the spline is chosen by the
fields both points have: positions only, linear; with velocities, cubic (Hermite); with
accelerations too, quintic. Before the start time, the state measured when the trajectory came
in is held (zero velocity and acceleration); from the start time to the first point, a spline
of that point's degree runs from the measured position and velocity (for a continuous joint,
the nearest turn); after the last point, its positions are held with zero velocity and
acceleration.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np


def wrap_angle(x):
    """x wrapped to (-pi, pi]."""
    return np.pi - np.mod(np.pi - np.asarray(x, dtype=float), 2.0 * np.pi)


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """Knots (absolute times) for ``n`` joints: times (K,), positions (K, n), velocities and
    accelerations (K, n) or None, the per-knot presence of those fields, and what to hold
    before the first knot."""

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    has_velocity: np.ndarray       # (K,) bool
    has_acceleration: np.ndarray   # (K,) bool
    hold_before: np.ndarray        # positions held before times[0] (the measured ones)

    @classmethod
    def from_points(cls, start_time: float, times_from_start, positions, velocities=None,
                    accelerations=None, *, measured_q=None, measured_v=None, continuous=None):
        """A trajectory that starts at ``start_time`` (s) from the measured state: its first
        knot is (start_time, measured_q, measured_v) unless the first point is at the start
        itself. ``velocities``/``accelerations``: (K, n) arrays, or lists with None for the
        points that have no such field. ``continuous``: joints whose angle wraps."""
        tfs = np.asarray(times_from_start, dtype=float)
        pos = np.asarray(positions, dtype=float)
        k, n = pos.shape
        vel, has_v = _field(velocities, k, n)
        acc, has_a = _field(accelerations, k, n)
        q0 = pos[0] if measured_q is None else np.asarray(measured_q, dtype=float)
        if continuous is not None and np.any(continuous):   # the nearest turn to the first point
            q0 = np.where(continuous, pos[0] + wrap_angle(q0 - pos[0]), q0)
        if tfs[0] > 0.0:
            v0 = np.zeros(n) if measured_v is None else np.asarray(measured_v, dtype=float)
            times = np.concatenate([[start_time], start_time + tfs])
            pos = np.vstack([q0, pos])
            vel = np.vstack([v0, vel])
            acc = np.vstack([np.zeros(n), acc])
            has_v = np.concatenate([[has_v[0]], has_v])     # the start takes the first point's
            has_a = np.concatenate([[has_a[0]], has_a])     # fields (JTC zero-fills them)
        else:
            times = start_time + tfs
        return cls(times, pos, vel, acc, has_v, has_a, q0)

    def sample(self, t: float):
        """(q, v, a) at time t (s), one value per joint."""
        times = self.times
        if t < times[0]:
            n = len(self.hold_before)
            return self.hold_before.copy(), np.zeros(n), np.zeros(n)
        if t >= times[-1]:
            n = self.positions.shape[1]
            return self.positions[-1].copy(), np.zeros(n), np.zeros(n)
        i = int(np.searchsorted(times, t, side='right')) - 1
        return self._segment(i, t - times[i])

    def sample_at_knot(self, i: int):
        """(q, v, a) at knot i, from the segment it starts (the last knot: its hold)."""
        if i >= len(self.times) - 1:
            n = self.positions.shape[1]
            v = self.velocities[-1] if self.has_velocity[-1] else np.zeros(n)
            return self.positions[-1].copy(), v.copy(), np.zeros(n)
        return self._segment(i, 0.0)

    def _segment(self, i, s):
        T = self.times[i + 1] - self.times[i]
        p0, p1 = self.positions[i], self.positions[i + 1]
        if T <= 0.0:
            return p1.copy(), np.zeros_like(p1), np.zeros_like(p1)
        if not (self.has_velocity[i] and self.has_velocity[i + 1]):      # linear
            slope = (p1 - p0) / T
            return p0 + slope * s, slope, np.zeros_like(p0)
        v0, v1 = self.velocities[i], self.velocities[i + 1]
        if not (self.has_acceleration[i] and self.has_acceleration[i + 1]):   # cubic Hermite
            c2 = (3.0 * (p1 - p0) - (2.0 * v0 + v1) * T) / T ** 2
            c3 = (2.0 * (p0 - p1) + (v0 + v1) * T) / T ** 3
            return (p0 + v0 * s + c2 * s ** 2 + c3 * s ** 3, v0 + 2.0 * c2 * s + 3.0 * c3 * s ** 2,
                    2.0 * c2 + 6.0 * c3 * s)
        a0, a1 = self.accelerations[i], self.accelerations[i + 1]                # quintic
        c2 = 0.5 * a0
        c3 = (20.0 * (p1 - p0) - (8.0 * v1 + 12.0 * v0) * T - (3.0 * a0 - a1) * T ** 2) / (2.0 * T ** 3)
        c4 = (30.0 * (p0 - p1) + (14.0 * v1 + 16.0 * v0) * T + (3.0 * a0 - 2.0 * a1) * T ** 2) / (2.0 * T ** 4)
        c5 = (12.0 * (p1 - p0) - 6.0 * (v1 + v0) * T - (a0 - a1) * T ** 2) / (2.0 * T ** 5)
        q = p0 + v0 * s + c2 * s ** 2 + c3 * s ** 3 + c4 * s ** 4 + c5 * s ** 5
        v = v0 + 2.0 * c2 * s + 3.0 * c3 * s ** 2 + 4.0 * c4 * s ** 3 + 5.0 * c5 * s ** 4
        a = 2.0 * c2 + 6.0 * c3 * s + 12.0 * c4 * s ** 2 + 20.0 * c5 * s ** 3
        return q, v, a


def _field(values, k, n):
    """(K, n) array (zeros where a point has none) and the (K,) presence of a point field."""
    out, has = np.zeros((k, n)), np.zeros(k, dtype=bool)
    if values is None:
        return out, has
    for i, row in enumerate(values):
        if row is not None and len(row):
            out[i] = row
            has[i] = True
    return out, has


class Reference:
    """The reference of every joint: held positions, and the trajectories running for some
    joints. A new trajectory takes over the joints it names; the others keep theirs."""

    def __init__(self, n: int):
        self.hold = np.zeros(n)
        self.initialized = False
        self.active = []        # (Trajectory, joint slots)

    def start_hold(self, q):
        """Hold q (the first complete measured position, as JTC does on activation)."""
        self.hold = np.array(q, dtype=float)
        self.initialized = True

    def replace(self, trajectory: Trajectory, slots):
        slots = np.asarray(slots, dtype=int)
        kept = []
        for traj, old in self.active:
            keep = ~np.isin(old, slots)
            if not np.any(keep):
                continue
            if np.all(keep):
                kept.append((traj, old))
                continue
            # the joints that stay: the old trajectory restricted to them
            kept.append((_subset(traj, keep), old[keep]))
        kept.append((trajectory, slots))
        self.active = kept

    def sample(self, t: float):
        q, v, a = self.hold.copy(), np.zeros(len(self.hold)), np.zeros(len(self.hold))
        for traj, slots in self.active:
            qs, vs, as_ = traj.sample(t)
            q[slots], v[slots], a[slots] = qs, vs, as_
        return q, v, a


def _subset(traj: Trajectory, keep) -> Trajectory:
    return dataclasses.replace(traj, positions=traj.positions[:, keep],
                               velocities=traj.velocities[:, keep],
                               accelerations=traj.accelerations[:, keep],
                               hold_before=traj.hold_before[keep])


def sinusoid_points(q0, amplitude, frequency, duration, period=0.1):
    """Points (times, positions, velocities, accelerations) of q0 + amplitude sin(2 pi f t),
    every ``period`` s for ``duration`` s: a test and demo trajectory."""
    t = np.arange(0.0, duration + 1e-9, period)
    w = 2.0 * math.pi * frequency
    amplitude = np.asarray(amplitude, dtype=float)
    s, c = np.sin(w * t)[:, None], np.cos(w * t)[:, None]
    return (t, q0 + amplitude * s, amplitude * w * c, -amplitude * w * w * s)
