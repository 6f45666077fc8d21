"""The command mux of a simulated robot (sim_node's, without ROS): the latest command of each
input, their checks, and the drives the Simulator gets from the inputs that are fresh.

Joints are *slots*: the JointState joints of the robot (single-DoF, in v order; ros/robot.py),
``n`` of them. Each input (``effort_commands``: efforts in command-joint order;
``joint_commands``: any of position, velocity, effort by slot) keeps its latest command and the
simulated time it came. An input older than ``command_timeout`` of simulated time counts as
zero. The fresh inputs are summed into :class:`Drives`: efforts add up; a position command
drives as kp (q_ref - q) + kd (v_ref - v) (v_ref: the velocity command, else 0); a velocity
command alone as velocity_kp (v_ref - v). The Simulator evaluates drives at every physics step,
implicitly (step.py).

A refused command raises :class:`CommandRefused` with a short reason (counted by the node as
``rejected_<reason>``); nothing of it is kept.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np

#: The largest command value (N m, N, rad, m, rad/s, m/s) and gain the mux takes: a command
#: beyond it is refused (out_of_range), so that no sum of inputs, gains and a state within
#: divergence_bound can overflow to inf (two finite commands of 1.8e308 and 1e300 did).
COMMAND_BOUND = 1e12

#: the command inputs, in the order their efforts are summed
INPUTS = ('effort_commands', 'joint_commands')


class CommandRefused(Exception):
    """A command that is refused; ``reason`` is a short key (length_mismatch, non_finite,
    out_of_range, duplicate_names, ...)."""

    def __init__(self, reason: str, detail: str = ''):
        super().__init__(f'{reason}: {detail}')
        self.reason, self.detail = reason, detail


def check_finite(values, what: str) -> None:
    if not np.all(np.isfinite(values)):
        raise CommandRefused('non_finite', f'NaN or inf in {what}')


def check_bound(values, what: str, bound: float = COMMAND_BOUND) -> None:
    if len(values) and float(np.max(np.abs(values))) > bound:
        raise CommandRefused('out_of_range', f'{what}: a value beyond {bound:g}')


@dataclasses.dataclass
class CommandInput:
    """The latest command on one input, per slot (NaN: not commanded)."""

    effort: np.ndarray
    position: np.ndarray
    velocity: np.ndarray
    time: float | None = None       # simulated time of receipt

    @classmethod
    def empty(cls, n):
        nan = np.full(n, np.nan)
        return cls(nan.copy(), nan.copy(), nan.copy())


@dataclasses.dataclass(frozen=True)
class Drives:
    """What the Simulator gets, per slot: effort, and the drive kp (q_ref - q) + kd (v_ref - v)."""

    effort: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    q_ref: np.ndarray
    v_ref: np.ndarray


@dataclasses.dataclass(frozen=True)
class Gains:
    """The drive gains per slot (position_kp, position_kd, velocity_kp)."""

    position_kp: np.ndarray
    position_kd: np.ndarray
    velocity_kp: np.ndarray


class CommandMux:
    """The inputs of one robot: ``n`` slots, of which ``command_slots`` are the command joints
    (the order of ``effort_commands``)."""

    def __init__(self, n: int, command_slots: Sequence[int],
                 inputs: Mapping[str, CommandInput] | None = None):
        self.n = n
        self.command_slots = np.asarray(command_slots, dtype=int)
        self.inputs = dict(inputs) if inputs is not None else \
            {name: CommandInput.empty(n) for name in INPUTS}
        self._drives_key = self._kept = self._drives = None   # drives(): the last sum

    # -- commands in ---------------------------------------------------------------------------
    def effort_commands(self, data, t: float) -> None:
        """Efforts in command-joint order, received at simulated time ``t``."""
        data = np.asarray(data, dtype=float)
        if data.shape != (len(self.command_slots),):
            raise CommandRefused('length_mismatch', f'{len(data)} efforts for '
                                 f'{len(self.command_slots)} command_joints')
        check_finite(data, 'effort_commands')
        check_bound(data, 'effort_commands')
        cmd = CommandInput.empty(self.n)
        cmd.effort[self.command_slots] = data
        cmd.time = t
        self.inputs['effort_commands'] = cmd

    def joint_commands(self, names: Sequence[str], slot: Mapping[str, int], position, velocity,
                       effort, t: float) -> list[str]:
        """A JointState command by name: each of position, velocity, effort either empty (not
        commanded) or one value per name. Joints not named keep this input's earlier command.
        Returns the names that are not joints (``slot``: name -> slot), which are ignored."""
        n = len(names)
        fields = {'position': np.asarray(position, dtype=float),
                  'velocity': np.asarray(velocity, dtype=float),
                  'effort': np.asarray(effort, dtype=float)}
        for field, values in fields.items():
            if len(values) not in (0, n):
                raise CommandRefused('length_mismatch',
                                     f'{n} names but {len(values)} {field} values')
        if len(set(names)) != n:
            raise CommandRefused('duplicate_names', 'a joint name appears twice')
        for values in fields.values():
            check_finite(values, 'joint_commands')
        for field, values in fields.items():
            check_bound(values, f'joint_commands {field}')
        old = self.inputs['joint_commands']
        cmd = CommandInput(old.effort.copy(), old.position.copy(), old.velocity.copy())
        unknown = []
        for k, name in enumerate(names):
            i = slot.get(name)
            if i is None:
                unknown.append(name)
                continue
            for field, values in fields.items():
                getattr(cmd, field)[i] = values[k] if len(values) else np.nan
        cmd.time = t
        self.inputs['joint_commands'] = cmd
        return unknown

    # -- what the Simulator gets ---------------------------------------------------------------
    def fresh(self, t: float, timeout: float) -> list[str]:
        """The inputs younger than ``timeout`` at simulated time ``t``."""
        return [name for name, c in self.inputs.items()
                if c.time is not None and t - c.time <= timeout]

    def any_received(self) -> bool:
        return any(c.time is not None for c in self.inputs.values())

    def drives(self, t: float, timeout: float, gains: Gains) -> Drives:
        """The fresh inputs summed (per slot). The same object as long as the same commands are
        fresh and the gains are the same object: a tick at 1 kHz does not sum again."""
        fresh = tuple(self.inputs[name] for name in self.fresh(t, timeout))
        key = (tuple(map(id, fresh)), id(gains))
        if key == self._drives_key:
            return self._drives
        n = self.n
        effort, kp, kd = np.zeros(n), np.zeros(n), np.zeros(n)
        q_ref, v_ref = np.zeros(n), np.zeros(n)
        for cmd in fresh:
            effort += np.nan_to_num(cmd.effort)
            has_p, has_v = ~np.isnan(cmd.position), ~np.isnan(cmd.velocity)
            kp = np.where(has_p, gains.position_kp, kp)
            kd = np.where(has_p, gains.position_kd, np.where(has_v, gains.velocity_kp, kd))
            q_ref = np.where(has_p, np.nan_to_num(cmd.position), q_ref)
            v_ref = np.where(has_v, np.nan_to_num(cmd.velocity), np.where(has_p, 0.0, v_ref))
        # (the inputs and gains stay referenced with their key: their ids are not reused)
        self._drives_key, self._kept = key, (fresh, gains)
        self._drives = Drives(effort, kp, kd, q_ref, v_ref)
        return self._drives


def wrench_command(values) -> np.ndarray:
    """[fx, fy, fz, tx, ty, tz] of an external wrench, checked."""
    wrench = np.asarray(values, dtype=float)
    check_finite(wrench, 'external_wrench')
    check_bound(wrench, 'external_wrench')
    return wrench


def state_command(names: Sequence[str], position, velocity, slot: Mapping[str, int],
                  bound: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A set_state by name: (slots, positions, velocities; 0 where none are given), checked
    (``bound``: the divergence bound a state must be within)."""
    n = len(names)
    pos, vel = np.asarray(position, dtype=float), np.asarray(velocity, dtype=float)
    if len(pos) != n or len(vel) not in (0, n):
        raise CommandRefused('length_mismatch', f'{n} names, {len(pos)} positions, '
                             f'{len(vel)} velocities')
    check_finite(np.concatenate([pos, vel]), 'set_state')
    check_bound(np.concatenate([pos, vel]), 'set_state', bound)
    slots = []
    for name in names:
        i = slot.get(name)
        if i is None:
            raise CommandRefused('unknown_joint', f'set_state names unknown joint {name!r}')
        slots.append(i)
    return np.array(slots, dtype=int), pos, vel if len(vel) else np.zeros(n)
