"""Pinocchio's joint order and coordinates for a Model, and conversions between them and ours.
Pinocchio is never imported: its layout follows from the URDF the model was built from.

Order. Both walk the URDF tree depth-first from the root. Ours takes each link's child joints
in the file's order; Pinocchio (buildModelFromUrdf, buildModelFromXML) takes them sorted by
joint name, because urdfdom keeps a robot's joints in a std::map keyed by name and fills each
link's child list in that map's order. (Names compare byte by byte, as std::string does: for
UTF-8 that is Python's code-point order.) Checked against Pinocchio on every URDF of
example-robot-data and on random trees (test/test_dynamics_layout.py).

Coordinates. Three joint types differ:

    joint        ours (nq / nv)        Pinocchio (nq / nv)
    continuous   angle (1 / 1)         cos, sin (2 / 1)
    planar       x, y, theta (3 / 3)   x, y, cos, sin (4 / 3)
    mimic        none (0 / 0)          its own, as if independent (Pinocchio's default,
                                       mimic=False); none with mimic=True (JointModelMimic)

Revolute and prismatic joints are one number in both, floating joints (and the floating base,
Pinocchio's 'root_joint' free-flyer) x y z qx qy qz qw and a twist [v; w] in the child frame in
both. Velocities, accelerations and torques of the joints that have them are the same numbers,
in another order.

Mimic joints (mimic=False) make the two velocity spaces differ in size: Pinocchio's velocity is
v_pin = P v, with P one 1 per our velocity and the multiplier on a mimic's row in its leader's
column. Our torques are P^T tau_pin (a mimic joint's torque acts on its leader), our mass
matrix P^T M_pin P and our Jacobians J_pin P: the ``*_from_pinocchio`` conversions. The
``*_to_pinocchio`` ones of torques and matrices put ours at Pinocchio's positions with zeros
on the mimic joints' rows and columns, one of the values that convert back to ours.
"""
import numpy as np

from .model import FLOATING_BASE_JOINT

# (nq, nv) of each joint type in Pinocchio's URDF model
_PINOCCHIO_SIZES = {'revolute': (1, 1), 'prismatic': (1, 1), 'continuous': (2, 1),
                    'planar': (4, 3), 'floating': (7, 6)}


def pinocchio_joint_order(robot):
    """The moving URDF joints of ``robot`` (a parsed URDF, ``model._robot``) in Pinocchio's
    order: depth-first from the root link, each link's child joints sorted by name."""
    order = []
    stack = sorted(robot.child_joints[robot.root], reverse=True)
    while stack:
        name = stack.pop()
        joint = robot.joints[name]
        if joint.type != 'fixed':
            order.append(name)
        stack.extend(sorted(robot.child_joints[joint.child], reverse=True))
    return order


class PinocchioLayout:
    """Pinocchio's joint order and coordinates for ``model``, and conversions of q, v, a, tau
    and matrices between our layout and Pinocchio's. Every conversion takes any leading batch
    axes and returns new arrays; the layout never changes, so threads can share it.

    ``mimic``: as Pinocchio's buildModel argument. False (its default): each mimic joint is an
    independent Pinocchio joint with its own coordinates; True: it has none.

    Attributes (Pinocchio's model without the 'universe' joint: ``model.names[1:]``,
    ``model.idx_qs[1:]``, ...): ``joint_names``, ``idx_q``, ``idx_v``, ``nqs``, ``nvs`` (one
    entry per joint), ``nq``, ``nv``."""

    def __init__(self, model, mimic=False):
        self.model = model
        self.mimic = bool(mimic)
        names = ([FLOATING_BASE_JOINT] if model.floating_base else []) + \
            pinocchio_joint_order(model._robot)
        self.joint_names = names
        idx_q, idx_v, nqs, nvs = [], [], [], []
        q_copy, q_angle, v_pin = [], [], np.full(model.nv, -1, dtype=np.int64)
        mimic_q, mimic_v, followers = [], [], []
        nq = nv = 0
        for name in names:
            info = model.joint[name]
            size = (0, 0) if info.mimic is not None and self.mimic else _PINOCCHIO_SIZES[info.type]
            idx_q.append(nq)
            idx_v.append(nv)
            nqs.append(size[0])
            nvs.append(size[1])
            if info.mimic is not None:
                followers.append(len(idx_q) - 1)
                if not self.mimic:
                    leader = model.joint[info.mimic[0]]
                    multiplier, offset = info.mimic[1], info.mimic[2]
                    angle = info.type == 'continuous'
                    mimic_q.append((nq, angle, leader.q_index, multiplier, offset))
                    mimic_v.append((nv, leader.v_index, multiplier))
            elif info.type == 'continuous':
                q_angle.append((nq, nq + 1, info.q_index))
                v_pin[info.v_index] = nv
            elif info.type == 'planar':
                q_copy += [(nq, info.q_index), (nq + 1, info.q_index + 1)]
                q_angle.append((nq + 2, nq + 3, info.q_index + 2))
                v_pin[info.v_index:info.v_index + 3] = range(nv, nv + 3)
            else:
                q_copy += [(nq + k, info.q_index + k) for k in range(info.nq)]
                v_pin[info.v_index:info.v_index + info.nv] = range(nv, nv + info.nv)
            nq, nv = nq + size[0], nv + size[1]
        if self.mimic:                  # Pinocchio gives a JointModelMimic its leader's indices
            for k in followers:
                leader = names.index(model.joint[names[k]].mimic[0])
                idx_q[k], idx_v[k] = idx_q[leader], idx_v[leader]
        assert np.all(v_pin >= 0), 'a velocity without a Pinocchio coordinate'
        self.nq, self.nv = nq, nv
        self.idx_q, self.idx_v, self.nqs, self.nvs = (_read_only(np.array(x, dtype=np.int64))
                                                      for x in (idx_q, idx_v, nqs, nvs))
        self._joint_id = {name: k + 1 for k, name in enumerate(names)}
        # q: Pinocchio's [pin] = ours [ours]; angles: [cos], [sin] of ours [angle]
        self._q_pin, self._q_ours = (np.array([c[k] for c in q_copy], dtype=np.int64)
                                     for k in (0, 1))
        self._q_cos, self._q_sin, self._q_angle = (np.array([c[k] for c in q_angle],
                                                            dtype=np.int64) for k in (0, 1, 2))
        # (Pinocchio index, is an angle, leader's q, multiplier, offset)
        self._mimic_q = mimic_q
        self._mimic_v = mimic_v       # (Pinocchio index, leader's v, multiplier)
        self._v_pin = v_pin           # our velocity k is Pinocchio's velocity _v_pin[k]

    def joint_id(self, name):
        """Pinocchio's joint id of a joint (``model.getJointId``): 1 + its place in
        ``joint_names`` (0 is Pinocchio's 'universe')."""
        try:
            return self._joint_id[name]
        except KeyError:
            raise ValueError(f'{name!r} is not a moving joint of {self.model.name!r}') from None

    # ---- configurations --------------------------------------------------------------------------
    def q_to_pinocchio(self, q):
        """Our q (nq) -> Pinocchio's (layout.nq): angles to (cos, sin), mimic joints' positions
        (multiplier q_leader + offset) filled in."""
        q = _last_axis(q, self.model.nq, 'q', 'our nq')
        out = np.empty(q.shape[:-1] + (self.nq,))
        out[..., self._q_pin] = q[..., self._q_ours]
        angle = q[..., self._q_angle]
        out[..., self._q_cos] = np.cos(angle)
        out[..., self._q_sin] = np.sin(angle)
        for pin, is_angle, leader, multiplier, offset in self._mimic_q:
            value = multiplier * q[..., leader] + offset
            if is_angle:
                out[..., pin], out[..., pin + 1] = np.cos(value), np.sin(value)
            else:
                out[..., pin] = value
        return out

    def q_from_pinocchio(self, q_pin):
        """Pinocchio's q -> ours. Angles come back in (-pi, pi] (atan2 of sin, cos: a
        continuous joint's turns are not in Pinocchio's q; np.unwrap restores a trajectory's);
        mimic joints' coordinates are dropped (not checked)."""
        q_pin = _last_axis(q_pin, self.nq, 'q_pin', "Pinocchio's nq")
        out = np.empty(q_pin.shape[:-1] + (self.model.nq,))
        out[..., self._q_ours] = q_pin[..., self._q_pin]
        out[..., self._q_angle] = np.arctan2(q_pin[..., self._q_sin], q_pin[..., self._q_cos])
        return out

    # ---- velocities and accelerations: v_pin = P v -----------------------------------------------
    def v_to_pinocchio(self, v):
        """Our v (nv) -> Pinocchio's: the same numbers in its order, a mimic joint's velocity
        its multiplier times its leader's (P v)."""
        v = _last_axis(v, self.model.nv, 'v', 'our nv')
        out = self._embed(v)
        for pin, leader, multiplier in self._mimic_v:
            out[..., pin] = multiplier * v[..., leader]
        return out

    def v_from_pinocchio(self, v_pin):
        """Pinocchio's v -> ours (mimic joints' velocities dropped, not checked)."""
        v_pin = _last_axis(v_pin, self.nv, 'v_pin', "Pinocchio's nv")
        return v_pin[..., self._v_pin]

    a_to_pinocchio = v_to_pinocchio       # accelerations convert as velocities
    a_from_pinocchio = v_from_pinocchio

    # ---- torques: tau = P^T tau_pin --------------------------------------------------------------
    def tau_from_pinocchio(self, tau_pin):
        """Pinocchio's torques -> ours: a mimic joint's torque times its multiplier added to its
        leader's (P^T tau_pin)."""
        tau_pin = _last_axis(tau_pin, self.nv, 'tau_pin', "Pinocchio's nv")
        return self._gather(tau_pin)

    def tau_to_pinocchio(self, tau):
        """Our torques -> Pinocchio's order, zero on mimic joints (their share is already on
        their leaders: tau_from_pinocchio gives tau back)."""
        return self._embed(_last_axis(tau, self.model.nv, 'tau', 'our nv'))

    # ---- matrices --------------------------------------------------------------------------------
    def matrix_from_pinocchio(self, A_pin):
        """A matrix from velocities to torques (mass matrix, Coriolis matrix, a torque's
        derivative by v or a), Pinocchio's (nv x nv) -> ours: P^T A_pin P."""
        A_pin = _last_axes(A_pin, self.nv, 'A_pin', "Pinocchio's nv")
        return np.ascontiguousarray(np.swapaxes(self._gather(np.swapaxes(self._gather(A_pin),
                                                                         -1, -2)), -1, -2))

    def matrix_to_pinocchio(self, A):
        """Ours (nv x nv) -> Pinocchio's order, zero rows and columns for mimic joints
        (matrix_from_pinocchio gives A back; with mimic joints it is not Pinocchio's own matrix,
        whose mimic joints move independently)."""
        A = _last_axes(A, self.model.nv, 'A', 'our nv')
        return np.ascontiguousarray(np.swapaxes(self._embed(np.swapaxes(self._embed(A), -1, -2)),
                                                -1, -2))

    def jacobian_from_pinocchio(self, J_pin):
        """A matrix whose columns are Pinocchio's velocities (a frame Jacobian, the centre of
        mass Jacobian, the centroidal momentum matrix, ...) -> ours: J_pin P."""
        J_pin = _last_axis(J_pin, self.nv, 'J_pin', "Pinocchio's nv", matrix=True)
        return self._gather(J_pin)

    def jacobian_to_pinocchio(self, J):
        """Our Jacobian's columns -> Pinocchio's order, zero columns for mimic joints
        (jacobian_from_pinocchio gives J back)."""
        return self._embed(_last_axis(J, self.model.nv, 'J', 'our nv', matrix=True))

    # ---- the two maps along the last axis --------------------------------------------------------
    def _embed(self, x):
        """x (ours, last axis) at Pinocchio's positions, zeros elsewhere."""
        out = np.zeros(x.shape[:-1] + (self.nv,))
        out[..., self._v_pin] = x
        return out

    def _gather(self, x):
        """P^T along the last axis: Pinocchio's entries to ours, mimic entries onto leaders."""
        out = x[..., self._v_pin]
        for pin, leader, multiplier in self._mimic_v:
            out[..., leader] += multiplier * x[..., pin]
        return out

    def __repr__(self):
        return (f'PinocchioLayout({self.model.name!r}, nq={self.nq}, nv={self.nv}, '
                f'joints={len(self.joint_names)}, mimic={self.mimic})')


def _last_axis(x, n, name, what, matrix=False):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < (2 if matrix else 1) or x.shape[-1] != n:
        shape = '(..., k, n)' if matrix else '(n,) or (..., n)'
        raise ValueError(f'{name} must have shape {shape} with n = {what} = {n}, got {x.shape}')
    return x


def _last_axes(x, n, name, what):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 2 or x.shape[-2:] != (n, n):
        raise ValueError(f'{name} must have shape (n, n) or (..., n, n) with n = {what} = {n}, '
                         f'got {x.shape}')
    return x


def _read_only(array):
    array.setflags(write=False)
    return array
