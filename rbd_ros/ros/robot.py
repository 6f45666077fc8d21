"""The loaded robot: a Model plus the view of it that JointState messages need, and where its
description came from. Everything here is read from the Model (its joints, limits, neutral
configuration); nothing is re-derived.

JointState carries one value per joint, so the JointState joints are the single-DoF joints
(revolute, continuous, prismatic) that own a coordinate. Mimic joints follow their leaders.
Planar and floating URDF joints have no JointState form: the nodes hold them at their neutral
pose. A floating *base* (``floating_base``) comes from elsewhere (dynamics_node: Odometry).
A description that closes kinematic loops (``<constraint>``) loads like any other: the nodes that
serve loops close them per message (rbd_ros/control/closed_loops.py); the others refuse it with
:func:`refuse_closed_loops`.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

import rbd_ros.dynamics as rbd
from rbd_ros.description import read_description
from rbd_ros.dynamics.urdf import read_urdf


@dataclasses.dataclass(frozen=True)
class Robot:
    """A model and its JointState view; replaced whole when the description changes."""

    model: rbd.Model
    xml: str
    source: str                      # 'parameter', 'topic' or 'file PATH'
    generation: int                  # 1 for the first model a node loads, then 2, ...
    joint_names: tuple[str, ...]     # the JointState joints, in v order
    q_index: np.ndarray              # their q indices ...
    v_index: np.ndarray              # ... and v indices
    slot: Mapping[str, int]          # joint name -> position in joint_names
    mimic_names: tuple[str, ...]
    mimic_leader_slot: np.ndarray    # slot of each mimic joint's leader
    mimic_multiplier: np.ndarray
    mimic_offset: np.ndarray
    multi_dof_names: tuple[str, ...]  # planar and floating URDF joints, held at neutral
    q_neutral: np.ndarray
    direct_state: bool               # fixed base and q, v are exactly the JointState values

    # limits of the JointState joints, straight from the model (inf where there is none)
    @property
    def lower(self) -> np.ndarray:
        return self.model.lower_limits[self.q_index]

    @property
    def upper(self) -> np.ndarray:
        return self.model.upper_limits[self.q_index]

    @property
    def effort_limit(self) -> np.ndarray:
        return self.model.effort_limits[self.v_index]

    @property
    def continuous(self) -> np.ndarray:
        """True for the JointState joints that are angles without limits (continuous)."""
        return np.array([self.model.joint[n].type == 'continuous' for n in self.joint_names],
                        dtype=bool)

    @property
    def nq(self) -> int:
        return self.model.nq

    @property
    def nv(self) -> int:
        return self.model.nv

    def joint_slots(self, names, parameter: str = 'command_joints'):
        """(names, slots) of a list of JointState joints (empty: all of them, in model order);
        ValueError naming ``parameter`` and every unknown joint."""
        names = tuple(names) or self.joint_names
        missing = [n for n in names if n not in self.slot]
        if missing:
            raise ValueError(f'{parameter} names {missing}, which '
                             f'{"is not a single-DoF joint" if len(missing) == 1 else "are not single-DoF joints"} '
                             f'of {self.model.name!r} (its joints: {", ".join(self.joint_names)})')
        return names, np.array([self.slot[n] for n in names], dtype=int)

    def mimic_positions(self, joint_q: np.ndarray) -> np.ndarray:
        """Positions of the mimic joints from the JointState joint positions."""
        return self.mimic_multiplier * joint_q[self.mimic_leader_slot] + self.mimic_offset

    def full_q(self, joint_q: np.ndarray, base_q: np.ndarray | None = None) -> np.ndarray:
        """The model's q from the JointState positions (and the floating base's q[:7])."""
        q = self.q_neutral.copy()
        q[self.q_index] = joint_q
        if base_q is not None:
            q[:7] = base_q
        return q

    def full_v(self, joint_v: np.ndarray, base_v: np.ndarray | None = None) -> np.ndarray:
        """The model's v (or a, or tau) from per-joint values (and the base's v[:6])."""
        v = np.zeros(self.nv)
        v[self.v_index] = joint_v
        if base_v is not None:
            v[:6] = base_v
        return v


def load_robot(xml: str, *, floating_base: bool = False, gravity=(0.0, 0.0, -9.81),
               strict=False, generation: int = 1, source: str = 'parameter',
               path: str | None = None) -> Robot:
    """Build a Robot from URDF text (``path``: the file it was read from, or its label from
    read_description_file, named in the messages; the file is not read again). Raises
    ``rbd.ModelError`` (ValueError for an empty description). ``strict`` as for
    ``Model.from_urdf`` (True, False or 'kinematics')."""
    if not xml or not xml.strip():
        raise ValueError(f'{path}: the robot description is empty' if path else
                         'the robot description is empty')
    model = rbd.Model(read_urdf(xml, source=path), floating_base=bool(floating_base),
                      gravity=tuple(float(g) for g in gravity), strict=strict)
    single = model.single_dof_joints()
    mimics = [j for j in model.joints if j.mimic is not None]
    multi = [j for j in model.joints if j.type in ('planar', 'floating') and j.mimic is None
             and not (j.name == rbd.FLOATING_BASE_JOINT and model.floating_base)]
    slot = {j.name: i for i, j in enumerate(single)}
    q_index = np.array([j.q_index for j in single], dtype=int)
    v_index = np.array([j.v_index for j in single], dtype=int)
    return Robot(
        model=model, xml=xml, source=source, generation=generation,
        joint_names=tuple(j.name for j in single), q_index=q_index, v_index=v_index,
        slot=slot, mimic_names=tuple(j.name for j in mimics),
        mimic_leader_slot=np.array([slot[j.mimic[0]] for j in mimics], dtype=int),
        mimic_multiplier=np.array([float(j.mimic[1]) for j in mimics]),
        mimic_offset=np.array([float(j.mimic[2]) for j in mimics]),
        multi_dof_names=tuple(j.name for j in multi), q_neutral=model.neutral(),
        direct_state=(not model.floating_base and len(single) == model.nq == model.nv
                      and list(q_index) == list(range(model.nq))
                      and list(v_index) == list(range(model.nv))))


def refuse_closed_loops(model: rbd.Model, what: str) -> None:
    """ValueError when the description closes kinematic loops (<constraint> elements) and
    ``what`` (a node: RbdNode.CLOSED_LOOPS_REFUSAL) cannot honour them yet: ignoring them would
    give a tree that falls apart."""
    if model.constraint_names:
        names = ', '.join(repr(n) for n in model.constraint_names[:4])
        more = ', ...' if len(model.constraint_names) > 4 else ''
        raise ValueError(f'{model.source}: the description closes {len(model.constraint_names)} '
                         f'kinematic loop{"s" if len(model.constraint_names) > 1 else ""} with '
                         f'<constraint> ({names}{more}): {what} (rbd_ros.dynamics reads them: '
                         'constrained_forward_dynamics, constrained_inverse_dynamics, '
                         'close_loops)')


def read_description_file(path: str, say=None) -> tuple[str, str]:
    """(URDF text, label for messages) of a description file: any readable path, pipes included,
    read once; a ``.xacro`` file expanded with xacro when importable (``say`` gets one line).
    ValueError in one line when it cannot be read (rbd_ros/description.py)."""
    return read_description(path, say)
