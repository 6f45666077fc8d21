"""The constant model: tree topology, joint models, placements, inertias, armature and frames,
compiled once from a URDF into flat arrays (see layout.py). A model never changes after it is
built, so threads can share it; what the algorithms write goes into a workspace (data.py).

Bodies joined by fixed joints are merged (inertias composed exactly), every link stays a
frame. Joint order is depth-first from the root, children in URDF order (docs/conventions.md).
Mimic joints are ordinary joints of an *internal* model with their own coordinate; the
public coordinates leave them out and the API maps between the two (q_full = G q + offset,
tau = G^T tau_full).
"""
import copy
import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from . import layout as L
from .data import Data, ThreadData
from .errors import InertiaError, TopologyError
from .inertia import inertia_problem, nearest_valid_inertia
from .spatial import add_inertia_to_parent
from .urdf import ModelWarning, raise_errors, read_urdf, refused_by_strict

_JOINT_CODES = {'revolute': L.JOINT_REVOLUTE, 'continuous': L.JOINT_REVOLUTE,
                'prismatic': L.JOINT_PRISMATIC, 'planar': L.JOINT_PLANAR,
                'floating': L.JOINT_FLOATING}
_SIZES = {L.JOINT_REVOLUTE: (1, 1), L.JOINT_PRISMATIC: (1, 1), L.JOINT_PLANAR: (3, 3),
          L.JOINT_FLOATING: (7, 6)}

FLOATING_BASE_JOINT = 'root_joint'   # the name Pinocchio gives a free-flyer root
# our 10 inertial parameters (m, h, I xx xy xz yy yz zz) at Pinocchio's positions
# (m, h, I xx xy yy xz yz zz): ours[:, _PINOCCHIO_ORDER] is Pinocchio's layout
_PINOCCHIO_ORDER = [0, 1, 2, 3, 4, 5, 7, 6, 8, 9]


# (Fields shared with urdf.JointRecord, the file's joint: this is the public view of it, with
# coordinates and a resolved mimic.)
@dataclass(frozen=True)
class JointInfo:
    """One URDF joint (or the added floating base). Indices are into the public q and v;
    fixed and mimic joints have none."""
    name: str
    type: str
    parent: str
    child: str
    q_index: int = None
    v_index: int = None
    nq: int = 0
    nv: int = 0
    lower: float = -math.inf
    upper: float = math.inf
    effort: float = math.inf
    velocity: float = math.inf
    damping: float = 0.0
    friction: float = 0.0
    mimic: tuple = None     # (leader, multiplier, offset), resolved to a leader that owns a coordinate
    axis: tuple = (1.0, 0.0, 0.0)   # unit axis in the joint frame (planar: the plane normal)


@dataclass(frozen=True)
class ConstraintInfo:
    """One loop closure (a URDF <constraint>): frame A on ``parent`` (the link's frame moved by
    ``parent_origin``) held on frame B on ``child``; its rows ``row`` to ``row + rows - 1``
    of ``constraint_residual`` and ``constraint_jacobian`` (3 ball, 5 revolute, 6 fixed)."""
    name: str
    type: str
    parent: str
    child: str
    row: int
    rows: int


def _planar_basis(normal):
    """In-plane unit vectors (e1, e2 = n x e1) of the minimal rotation taking z to n, so a
    planar joint about z has the x, y of Pinocchio's JointModelPlanar."""
    z = np.array([0.0, 0.0, 1.0])
    c = float(normal @ z)
    if c > 1.0 - 1e-12:
        R = np.eye(3)
    elif c < -1.0 + 1e-12:
        R = np.diag([1.0, -1.0, -1.0])        # half turn about x
    else:
        k = np.cross(z, normal)
        s = np.linalg.norm(k)
        k = k / s
        K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
        R = np.eye(3) + s * K + (1 - c) * K @ K
    e1 = R[:, 0]
    return e1, np.cross(normal, e1)


def _link_inertia(link, inertia):
    """10 parameters of a link's inertia about the link origin, in link axes; ``inertia`` is
    its rotational inertia about the centre of mass in the <inertial> frame."""
    params = np.zeros(10)
    if link.mass == 0.0 and not np.any(inertia):
        return params
    Ic = link.com_rotation @ inertia @ link.com_rotation.T
    local = np.array([link.mass, 0, 0, 0, Ic[0, 0], Ic[0, 1], Ic[0, 2], Ic[1, 1], Ic[1, 2],
                      Ic[2, 2]])
    add_inertia_to_parent(_transform(np.eye(3), link.com_xyz), 0, local, 0, params, 0)
    return params


def _transform(E, r):
    """The 12-number transform (rotation row-major, then translation) of (E, r)."""
    return np.concatenate([np.asarray(E, float).ravel(), np.asarray(r, float)])


class Model:
    """A rigid-body model. Build it with :meth:`Model.from_urdf`; it never changes afterwards
    (its arrays are read-only), so one model can serve several threads at once."""

    def __init__(self, robot, floating_base=False, gravity=(0.0, 0.0, -9.81), armature=None,
                 strict=False, repair_inertia=False):
        gravity = np.asarray(gravity, dtype=float)
        if gravity.shape != (3,) or not np.all(np.isfinite(gravity)):
            raise ValueError(f'gravity must be 3 finite numbers, got {gravity!r}')
        self._robot = robot
        self._options = dict(strict=strict, repair_inertia=repair_inertia)
        self.name = robot.name
        self.source = robot.source
        self.warnings = list(robot.warnings)   # ModelWarning (str): doubtful but usable input
        self.notes = list(robot.notes)         # the parser's noise (unknown tags, ...)
        link_inertias = {name: link.inertia for name, link in robot.links.items()}
        link_problems = {}
        for name, link in robot.links.items():
            problem = inertia_problem(link.inertia, link.mass, link.size)
            if problem is None and link.mass == 0.0 and np.any(link.inertia):
                problem = 'zero mass with a non-zero rotational inertia'
            if problem is not None:
                link_problems[name] = problem
        self.floating_base = bool(floating_base)
        self.root_link = robot.root
        self.link_masses = {name: link.mass for name, link in robot.links.items()}

        # ---- walk the tree depth-first, merging fixed joints --------------------------
        body_rows = [dict(parent=-1, jtype=L.JOINT_ROOT, joint=None, E=np.eye(3),
                          r=np.zeros(3), axis=np.zeros(3))]
        link_body, link_E, link_r = {}, {}, {}
        order = []                       # moving URDF joints in depth-first order
        if self.floating_base:
            body_rows.append(dict(parent=0, jtype=L.JOINT_FLOATING, joint=None, E=np.eye(3),
                                  r=np.zeros(3), axis=np.zeros(3)))
        stack = [(robot.root, len(body_rows) - 1, np.eye(3), np.zeros(3))]
        while stack:
            link, body, E, r = stack.pop()
            link_body[link], link_E[link], link_r[link] = body, E, r
            pushed = []
            for joint_name in robot.child_joints[link]:
                joint = robot.joints[joint_name]
                Ej = E @ joint.origin_rotation              # joint frame in the body frame
                rj = E @ joint.origin_xyz + r
                if joint.type == 'fixed':
                    pushed.append((joint.child, body, Ej, rj))
                    continue
                body_rows.append(dict(parent=body, jtype=_JOINT_CODES[joint.type], joint=joint,
                                      E=Ej, r=rj, axis=joint.axis))
                order.append(joint.name)
                pushed.append((joint.child, len(body_rows) - 1, np.eye(3), np.zeros(3)))
            stack.extend(reversed(pushed))  # pop in URDF order: depth-first, children in order
        # stack-based DFS numbers bodies when they are created, not visited: renumber so a
        # body's subtree is contiguous (needed by the branch-induced sparsity).
        body_rows, link_body = _depth_first_renumber(body_rows, link_body)

        nb = len(body_rows)
        self.n_bodies = nb - 1
        body_int = np.zeros((nb, L.BODY_INT_COLS), dtype=np.int64)
        body_float = np.zeros((nb, L.BODY_FLOAT_COLS))
        body_int[0, L.PARENT] = -1
        body_float[0, L.GRAVITY:L.GRAVITY + 3] = gravity
        nq = nv = 0
        for i in range(1, nb):
            row = body_rows[i]
            jtype = row['jtype']
            nqj, nvj = _SIZES[jtype]
            body_int[i] = (row['parent'], jtype, nq, nv, nqj, nvj, 0)
            nq, nv = nq + nqj, nv + nvj
            body_float[i, L.PLACEMENT:L.PLACEMENT + 12] = _transform(row['E'], row['r'])
            body_float[i, L.AXIS:L.AXIS + 3] = row['axis']
            if jtype == L.JOINT_PLANAR:
                e1, e2 = _planar_basis(row['axis'])
                body_float[i, L.PLANAR_E1:L.PLANAR_E1 + 3] = e1
                body_float[i, L.PLANAR_E2:L.PLANAR_E2 + 3] = e2
        for i in range(nb - 1, 0, -1):
            body_int[i, L.NV_SUBTREE] += body_int[i, L.NVJ]
            if body_int[i, L.PARENT] > 0:
                body_int[body_int[i, L.PARENT], L.NV_SUBTREE] += body_int[i, L.NV_SUBTREE]
        # inertias: every link's inertia composed into its body, exactly
        if repair_inertia:
            for name, problem in link_problems.items():
                if problem.startswith('zero mass'):
                    continue
                link_inertias[name], old, new = nearest_valid_inertia(robot.links[name].inertia)
                link_problems[name] = (f'{problem}; repaired (repair_inertia): principal moments '
                                       f'{_moments(old)} -> {_moments(new)}, same principal axes')
        inertia = np.zeros((nb, 10))
        for name, link in robot.links.items():
            b = link_body[name]
            add_inertia_to_parent(_transform(link_E[name], link_r[name]), 0,
                                  _link_inertia(link, link_inertias[name]), 0, inertia[b], 0)
        self._inertia_warnings(robot, link_problems, link_body, inertia)
        body_float[:, L.INERTIA:L.INERTIA + 10] = inertia
        body_int[0, L.NQJ], body_int[0, L.NVJ] = nq, nv   # the world row: internal sizes
        # the moving bodies by the link their joint moves (fixed links welded to it)
        self.body_names = [row['joint'].child if row['joint'] is not None else robot.root
                           for row in body_rows[1:]]
        self._link_body = link_body
        self.body_int, self.body_float = body_int, body_float
        self.nq_full, self.nv_full = nq, nv

        # ---- dof tree (lambda of RBDA ch. 6) ------------------------------------------
        dof_parent = np.full(nv, -1, dtype=np.int64)
        for i in range(1, nb):
            vi, nvj, p = body_int[i, L.VIDX], body_int[i, L.NVJ], body_int[i, L.PARENT]
            dof_parent[vi] = body_int[p, L.VIDX] + body_int[p, L.NVJ] - 1 if p > 0 else -1
            for k in range(1, nvj):
                dof_parent[vi + k] = vi + k - 1
        self.dof_parent = dof_parent

        # ---- frames: every link --------------------------------------------------------
        self.frame_names = _links_depth_first(robot)
        self.frame_index = {name: k for k, name in enumerate(self.frame_names)}
        self.frame_poses_shape = (len(self.frame_names), 4, 4)
        self.frame_body = np.array([link_body[n] for n in self.frame_names], dtype=np.int64)
        self.frame_placement = np.array([_transform(link_E[n], link_r[n])
                                         for n in self.frame_names])

        # ---- loop closures (RBDA ch. 8: the URDF's tree is the spanning tree) -----------
        self._build_loops(robot, link_body, link_E, link_r)

        # ---- public coordinates (mimic joints removed) and joint metadata --------------
        self._build_coordinates(robot, body_rows)
        #: the joints <transmission> elements and <ros2_control> blocks drive (with a
        #: command interface), in the file's order; [] when the description names none
        self.actuated_joints = [name for name, _ in robot.actuated
                                if self.joint[name].v_index is not None]
        armature_full = self._armature_per_dof(robot, body_rows, armature)
        for i in range(1, nb):
            vi, nvj = body_int[i, L.VIDX], body_int[i, L.NVJ]
            body_float[i, L.ARMATURE:L.ARMATURE + nvj] = armature_full[vi:vi + nvj]
        self._massless_joint_warnings(robot, body_rows, inertia, armature_full)
        # the diagonal of G^T diag(armature) G: what the armature adds to the public M
        self.armature = np.einsum('kj,k,kj->j', self.mimic_map, armature_full, self.mimic_map)
        self.total_mass = float(np.sum(inertia[1:, 0]))
        self.gravity = gravity.copy()
        # The kernels take the constant tables writable and flat (numba's dispatcher types a
        # writable C-contiguous argument from a cache in C, a read-only one through a Python
        # fallback), through a workspace's handle (data.py). The public attributes are read-only
        # views of the same memory. The frame rows follow the body rows (layout.FRAME_*).
        frame_rows = np.column_stack([self.frame_body.astype(float), self.frame_placement])
        self._body_int = body_int
        self._body_float = np.concatenate([body_float.reshape(-1), frame_rows.reshape(-1)])
        self._dof_parent = self.dof_parent
        self.body_int = _read_only(body_int)
        self.body_float = _read_only(self._body_float[:body_float.size].reshape(body_float.shape))
        for name in ('dof_parent', 'frame_body', 'frame_placement', 'gravity', 'armature',
                     'lower_limits', 'upper_limits', 'velocity_limits', 'effort_limits',
                     'damping', 'friction', 'mimic_map', 'q_full_index', 'v_full_index',
                     'loop_int', 'loop_float', 'row_constraint'):
            setattr(self, name, _read_only(getattr(self, name)))
        self.direct = not self.has_mimic      # public coordinates are the kernels' own
        fatal = refused_by_strict(self.warnings, strict)   # (the same verdict as inspect --strict)
        if fatal:
            raise_errors([(w.error, f'{w} (a warning; refused by strict={strict!r})')
                          for w in fatal])
        self._thread = ThreadData.of(self)       # each thread's default workspace

    def __getstate__(self):
        """Pickle everything but the per-thread workspaces (made again on first use), and say
        which arrays are read-only: numpy does not keep that flag through pickle."""
        state = {k: v for k, v in self.__dict__.items() if k != '_thread'}
        state['_read_only_arrays'] = [k for k, v in state.items()
                                      if isinstance(v, np.ndarray) and not v.flags.writeable]
        return state

    def __setstate__(self, state):
        state = dict(state)
        for name in state.pop('_read_only_arrays'):
            state[name].setflags(write=False)
        self.__dict__.update(state)
        self._thread = ThreadData.of(self)

    # ------------------------------------------------------------------------------------
    @classmethod
    def from_urdf(cls, path_or_xml, floating_base=False, gravity=(0.0, 0.0, -9.81),
                  strict=False, repair_inertia=False, armature=None):
        """Build a model from a URDF file path or XML text.

        What no model can be built from raises :class:`ModelError` (its message starts with
        ``file:line:``, names the link or joint, and counts any further errors). Physically
        doubtful but usable input (an inertia that is not physical, degenerate limits, a mimic
        tag on a fixed joint, a broken <visual>, ...) loads and is listed in ``model.warnings``;
        the dynamics use the description as written. ``strict=True`` raises the matching
        ModelError (InertiaError, JointError, ...) for every warning that is not harmless
        instead; ``strict='kinematics'`` only for those that bear on kinematics (frame poses).
        Harmless warnings say so in their text (``warning.harmless``) and never raise: a broken
        <visual> or material (display only), a link whose own inertia is not physical while
        the body it forms with the links welded to it (what the dynamics use) is, an inertia
        repaired by ``repair_inertia``. ``python -m rbd_ros inspect --strict`` gives the same
        verdict. ``model.notes`` lists the parser's noise (unknown elements and attributes).
        An inertia that is zero up to rounding (relative to the link's mass and size) is a
        point mass, physical.

        ``repair_inertia=True`` replaces each rotational inertia that is not physical by the
        nearest physical one: the same principal axes, and principal moments moved to the
        nearest (least squares) moments that are non-negative and satisfy the triangle
        inequality; each repair is a harmless warning naming the link and the old and new
        moments (so ``strict=True`` with ``repair_inertia=True`` accepts a repaired inertia).

        ``armature``: the reflected rotor inertia of each joint velocity (kg m^2 or kg), added
        to the mass matrix's diagonal: a mapping {joint name: value} or an array of nv values;
        None takes Drake's ``drake:rotor_inertia`` and ``drake:gear_ratio`` tags
        (rotor_inertia * gear_ratio^2) where the URDF has them, else zero."""
        return cls(read_urdf(path_or_xml), floating_base=floating_base, gravity=gravity,
                   armature=armature, strict=strict, repair_inertia=repair_inertia)

    # ---- inertial parameters ------------------------------------------------------------
    def inertial_parameters(self):
        """The moving bodies' inertial parameters, 10 per body in ``body_names`` order, in
        Pinocchio's order: m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz, the
        inertia about the body frame's origin in body axes (the frame of the body's first
        link: the child of its joint). ``inertial_regressor(model, q, v, a) @ this`` is the
        inverse dynamics without the armature's term."""
        ours = self.body_float[1:, L.INERTIA:L.INERTIA + 10]
        return ours[:, _PINOCCHIO_ORDER].reshape(-1).copy()

    def with_inertial_parameters(self, parameters):
        """The same robot with other inertial parameters (``inertial_parameters`` layout): a
        new Model (this one never changes). ValueError for a wrong length or non-finite
        values; physical consistency is not required (identified parameters may not be)."""
        pi = np.asarray(parameters, dtype=float).reshape(-1)
        if pi.shape != (10 * (self.body_int.shape[0] - 1),):
            raise ValueError(f'expected {10 * (self.body_int.shape[0] - 1)} inertial parameters '
                             f'(10 per body, {len(self.body_names)} bodies), got {pi.size}')
        if not np.all(np.isfinite(pi)):
            raise ValueError('inertial parameters contain NaN or inf')
        ours = np.empty((len(self.body_names), 10))
        ours[:, _PINOCCHIO_ORDER] = pi.reshape(-1, 10)
        return self._with_body_inertias(ours)

    def with_payload(self, link, mass, com=(0.0, 0.0, 0.0), inertia=None):
        """The same robot carrying a rigid payload on ``link``: ``mass`` (kg), its centre of mass
        ``com`` (m) and its rotational ``inertia`` about that centre of mass (3x3, kg m^2; None:
        a point mass), both in the link's frame. A new Model; mass 0 gives an unchanged copy.
        ValueError naming the problem: an unknown link, a negative or non-finite mass, an
        inertia that is not physical (symmetric, positive semi-definite, its principal moments
        meeting the triangle inequality)."""
        if link not in self.frame_index:
            raise ValueError(f'payload on unknown link {link!r}')
        try:
            mass = float(mass)
        except (TypeError, ValueError):
            raise ValueError(f'payload mass must be a number, got {mass!r}') from None
        if not (math.isfinite(mass) and mass >= 0.0):
            raise ValueError(f'payload mass must be finite and >= 0, got {mass!r}')
        c = np.asarray(com, dtype=float).reshape(-1)
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise ValueError(f'payload com must be 3 finite numbers, got {list(np.ravel(com))}')
        Ic = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        if Ic.shape != (3, 3) or not np.all(np.isfinite(Ic)):
            raise ValueError('payload inertia must be a 3x3 matrix of finite numbers')
        if not np.allclose(Ic, Ic.T, rtol=0.0, atol=1e-12 * max(1.0, float(np.abs(Ic).max()))):
            raise ValueError('payload inertia is not symmetric')
        problem = inertia_problem(Ic)
        if problem is not None:
            raise ValueError(f'payload inertia is not physical: {problem}')
        if self.floating_base is False and self._link_body[link] == 0:
            raise ValueError(f'payload on {link!r}: that link is part of the fixed base (it '
                             'belongs to the world, nothing moves it)')
        body = self._link_body[link]
        f = self.frame_index[link]
        E, r = self.frame_placement[f, :9].reshape(3, 3), self.frame_placement[f, 9:]
        payload = np.zeros(10)
        if mass > 0.0 or np.any(Ic):
            local = np.array([mass, 0.0, 0.0, 0.0, Ic[0, 0], Ic[0, 1], Ic[0, 2], Ic[1, 1],
                              Ic[1, 2], Ic[2, 2]])
            add_inertia_to_parent(_transform(E, E @ c + r), 0, local, 0, payload, 0)
        ours = np.array(self.body_float[1:, L.INERTIA:L.INERTIA + 10])
        ours[body - 1] += payload
        return self._with_body_inertias(ours)

    def _with_body_inertias(self, inertias):
        """A copy of this model with the moving bodies' inertias (our storage order) replaced:
        its own tables and workspace, everything else shared (it is all read-only)."""
        clone = copy.copy(self)
        body_float = np.array(self._body_float)
        nb = self.body_int.shape[0]
        table = body_float[:nb * L.BODY_FLOAT_COLS].reshape(nb, L.BODY_FLOAT_COLS)
        table[1:, L.INERTIA:L.INERTIA + 10] = inertias
        clone._body_float = body_float
        clone.body_float = _read_only(table)
        clone.total_mass = float(np.sum(table[1:, L.INERTIA]))
        clone._thread = ThreadData.of(clone)
        return clone

    @property
    def link_collisions(self):
        """{link name: its URDF <collision> shapes (urdf.GeometryRecord: kind, size, origin in
        the link frame)}, for the links that have any: what a simulator makes contacts of."""
        return {name: tuple(link.collisions) for name, link in self._robot.links.items()
                if link.collisions}

    def with_armature(self, armature):
        """The same robot with another armature (see :meth:`from_urdf`); its inertias and joint
        damping and friction stay as they are in this model (a payload, an override)."""
        rebuilt = type(self)(self._robot, floating_base=self.floating_base, gravity=self.gravity,
                             armature=armature, **self._options)
        clone = rebuilt._with_body_inertias(self.body_float[1:, L.INERTIA:L.INERTIA + 10])
        clone.joints, clone.joint = self.joints, self.joint
        clone.damping, clone.friction = self.damping, self.friction
        return clone

    def with_joint_dynamics(self, damping=None, friction=None):
        """The same robot with other joint damping (viscous, N m s/rad or N s/m) and Coulomb
        friction (N m or N), URDF <dynamics>' two numbers: each a mapping {joint name: value}
        (the joints not named keep theirs) or None (all kept). What a friction identification
        writes, for the nodes to compensate and simulate. A new Model; ValueError for an
        unknown or non-moving joint, a mimic joint, a negative or non-finite value."""
        damping_v, friction_v = np.array(self.damping), np.array(self.friction)
        joint = dict(self.joint)
        for what, values, target in (('damping', damping, damping_v),
                                     ('friction', friction, friction_v)):
            for name, value in (values or {}).items():
                info = joint.get(name)
                if info is None:
                    raise ValueError(f'joint {what} for unknown joint {name!r}')
                if info.mimic is not None or info.v_index is None or info.type in (
                        'fixed', 'floating', 'planar'):
                    raise ValueError(f'joint {what} for {name!r}: only a revolute, continuous or '
                                     f'prismatic joint with its own coordinate has one')
                try:
                    value = float(value)
                except (TypeError, ValueError):
                    raise ValueError(f'joint {what} of {name!r} must be a number, got '
                                     f'{value!r}') from None
                if not (math.isfinite(value) and value >= 0.0):
                    raise ValueError(f'joint {what} of {name!r} must be finite and >= 0, got '
                                     f'{value!r}')
                target[info.v_index] = value
                joint[name] = dataclasses.replace(joint[name], **{what: value})
        clone = copy.copy(self)
        clone.joints = [joint[info.name] for info in self.joints]
        clone.joint = {info.name: info for info in clone.joints}
        clone.damping, clone.friction = _read_only(damping_v), _read_only(friction_v)
        clone._thread = ThreadData.of(clone)
        return clone

    def _massless_joint_warnings(self, robot, body_rows, inertia, armature_full):
        """A joint that moves no mass and no inertia, and has no armature, makes a zero row in
        the mass matrix: forward dynamics fails there."""
        body_int = self.body_int
        subtree = inertia.copy()
        for i in range(body_int.shape[0] - 1, 0, -1):
            if body_int[i, L.PARENT] > 0:
                subtree[body_int[i, L.PARENT]] += subtree[i]
        for i in range(1, body_int.shape[0]):
            vi, nvj = body_int[i, L.VIDX], body_int[i, L.NVJ]
            joint = body_rows[i]['joint']
            if np.any(subtree[i]) or np.all(armature_full[vi:vi + nvj] > 0):
                continue
            name = FLOATING_BASE_JOINT if joint is None else joint.name
            where = robot.source if joint is None else f'{robot.source}:{joint.line}'
            self.warnings.append(ModelWarning(
                f'{where}: joint {name!r} moves no mass and no inertia (every link below it is '
                'massless): the mass matrix is singular, forward dynamics fails', InertiaError))

    def _inertia_warnings(self, robot, link_problems, link_body, inertia):
        """Warnings for the inertias the dynamics use: each link's own (about its centre of
        mass) and, for a link welded to others by fixed joints, the body they form. Links
        welded to the world of a fixed-base model are never used: a note, not a warning."""
        links_of = {}
        for name, b in link_body.items():
            links_of.setdefault(b, []).append(name)
        for name, problem in link_problems.items():
            link, b = robot.links[name], link_body[name]
            where = f'{robot.source}:{link.line}: link {name!r}'
            if b == 0:
                self.notes.append(f'{where}: {problem} (not used: welded to the world of a '
                                  'fixed-base model)')
                continue
            message = f'{where}: {problem}'
            # repaired (repair_inertia: every problem but a zero mass): the dynamics use a
            # physical inertia
            harmless = self._options['repair_inertia'] and not problem.startswith('zero mass')
            if harmless:
                message += '; the dynamics use the repaired one (harmless)'
            others = [n for n in links_of[b] if n != name]
            if others:
                # judged at the body's scale: its mass; its COM's distance from its frame plus
                # its links' reach
                mass = inertia[b][0]
                com = inertia[b][1:4] / mass if mass > 0 else np.zeros(3)
                size = float(np.linalg.norm(com)) + max(robot.links[n].size for n in links_of[b])
                verdict = inertia_problem(_body_com_inertia(inertia[b]), mass, size)
                message += (f'; welded by fixed joints to {len(others)} other link'
                            f'{"s" if len(others) > 1 else ""} ({", ".join(others[:3])}'
                            f'{", ..." if len(others) > 3 else ""}): the body they form is '
                            + ('physical, and only that body enters the dynamics (harmless)'
                               if verdict is None else f'not physical either: {verdict}'))
                harmless = harmless or verdict is None
            self.warnings.append(ModelWarning(message, InertiaError, harmless=harmless))


    def _build_loops(self, robot, link_body, link_E, link_r):
        """The loop tables (layout.LOOP_*): per <constraint>, its type, the bodies and
        body-frame placements of frames A and B, the revolute's axes and the two normals of
        axis A its rotation rows measure across; ``row_constraint``: each row's constraint."""
        infos, int_rows, float_rows, row_constraint = [], [], [], []
        errors = []
        codes = {'ball': L.LOOP_BALL, 'revolute': L.LOOP_REVOLUTE, 'fixed': L.LOOP_FIXED}
        for record in robot.constraints.values():
            a, b = link_body[record.parent], link_body[record.child]
            if a == b:
                what = ('welded to the world (the fixed base)' if a == 0 else
                        'welded together by fixed joints (one body)')
                errors.append((TopologyError, f'{robot.source}:{record.line}: constraint '
                               f'{record.name!r}: links {record.parent!r} and {record.child!r} '
                               f'are {what}: nothing moves one against the other'))
                continue
            code = codes[record.type]
            rows = L.LOOP_TYPE_ROWS[code]
            row = len(row_constraint)
            int_rows.append((code, a, b, row, rows))
            row_constraint.extend([len(infos)] * rows)
            placement_a = _transform(link_E[record.parent] @ record.parent_rotation,
                                     link_E[record.parent] @ record.parent_xyz
                                     + link_r[record.parent])
            placement_b = _transform(link_E[record.child] @ record.child_rotation,
                                     link_E[record.child] @ record.child_xyz
                                     + link_r[record.child])
            normal_1, normal_2 = _planar_basis(record.parent_axis)
            float_rows.append(np.concatenate([placement_a, placement_b, record.parent_axis,
                                              record.child_axis, normal_1, normal_2]))
            infos.append(ConstraintInfo(record.name, record.type, record.parent, record.child,
                                        row, rows))
        raise_errors(errors)
        self.constraints = infos
        self.constraint_names = [info.name for info in infos]
        self.constraint_rows = len(row_constraint)
        self._loop_int = np.array(int_rows, dtype=np.int64).reshape(-1, L.LOOP_INT_COLS)
        self._loop_float = np.array(float_rows, dtype=float).reshape(-1, L.LOOP_FLOAT_COLS)
        self._row_constraint = np.array(row_constraint, dtype=np.int64)
        self.loop_int, self.loop_float = self._loop_int, self._loop_float
        self.row_constraint = self._row_constraint

    def create_data(self):
        """A new workspace for this model: pass it as ``data=`` to give a thread (or a loop)
        its own. Calls without ``data=`` use one workspace per thread, made on first use."""
        return Data(self)

    def _armature_per_dof(self, robot, body_rows, armature):
        """Armature of every internal velocity (mimic joints included): from ``armature``, else
        from the URDF's Drake tags."""
        full = np.zeros(self.nv_full)
        dof_of = {row['joint'].name: (self.body_int[i, L.VIDX], self.body_int[i, L.NVJ])
                  for i, row in enumerate(body_rows) if row['joint'] is not None}
        if armature is None:
            armature = {name: joint.armature for name, joint in robot.joints.items()
                        if getattr(joint, 'armature', 0.0)}
        if isinstance(armature, dict):
            for name, value in armature.items():
                if name == FLOATING_BASE_JOINT and self.floating_base:
                    vi, nvj = 0, 6
                elif name in dof_of:
                    vi, nvj = dof_of[name]
                else:
                    raise ValueError(f'armature names {name!r}, which is not a moving joint of '
                                     f'{self.name!r}')
                values = np.broadcast_to(np.asarray(value, dtype=float), (nvj,))
                full[vi:vi + nvj] = values
        else:
            values = np.asarray(armature, dtype=float)
            if values.shape != (self.nv,):
                raise ValueError(f'armature must be a mapping {{joint: value}} or {self.nv} '
                                 f'values, got shape {values.shape}')
            full[self.v_full_index] = values
        if not np.all(np.isfinite(full)) or np.any(full < 0):
            raise ValueError(f'armature must be finite and >= 0, got {full.tolist()}')
        return full

    def _build_coordinates(self, robot, body_rows):
        joint_body = {row['joint'].name: i for i, row in enumerate(body_rows)
                      if row['joint'] is not None}
        mimics = {}
        for name, joint in robot.joints.items():
            if joint.mimic is not None:
                leader, multiplier, offset = joint.mimic
                while robot.joints[leader].mimic is not None:   # resolve chains to the root leader
                    nxt, m2, o2 = robot.joints[leader].mimic
                    offset, multiplier, leader = multiplier * o2 + offset, multiplier * m2, nxt
                mimics[name] = (leader, multiplier, offset)
        self.has_mimic = bool(mimics)
        infos, q_map, v_map = [], [], []
        nq = nv = 0
        if self.floating_base:
            infos.append(JointInfo(FLOATING_BASE_JOINT, 'floating', 'world', robot.root, 0, 0, 7, 6))
            q_map.extend(range(7))
            v_map.extend(range(6))
            nq, nv = 7, 6
        public = {}
        for i in range(1, len(body_rows)):
            joint = body_rows[i]['joint']
            if joint is None or joint.name in mimics:
                continue
            qi, vi = self.body_int[i, L.QIDX], self.body_int[i, L.VIDX]
            nqj, nvj = self.body_int[i, L.NQJ], self.body_int[i, L.NVJ]
            public[joint.name] = (nq, nv)
            q_map.extend(range(qi, qi + nqj))
            v_map.extend(range(vi, vi + nvj))
            nq, nv = nq + nqj, nv + nvj
        self.nq, self.nv = nq, nv
        self.q_full_index = np.array(q_map, dtype=np.int64)   # public q -> internal q
        self.v_full_index = np.array(v_map, dtype=np.int64)
        mimic_rows = []
        for name, (leader, multiplier, offset) in mimics.items():
            b = joint_body[name]
            mimic_rows.append((self.body_int[b, L.QIDX], self.body_int[b, L.VIDX],
                               public[leader][0], public[leader][1], multiplier, offset))
        self._mimic_rows = mimic_rows
        # G maps public v to internal v: v_full = G v
        G = np.zeros((self.nv_full, nv))
        G[self.v_full_index, np.arange(nv)] = 1.0
        for _, vfull, _, vlead, multiplier, _ in mimic_rows:
            G[vfull, vlead] += multiplier
        self.mimic_map = G
        moving = [row['joint'].name for row in body_rows[1:] if row['joint'] is not None]
        self.joint_names = [name for name in moving if name not in mimics]
        self.moving_joint_names = moving
        for name, joint in robot.joints.items():
            qi, vi = public.get(name, (None, None))
            nqj, nvj = {'fixed': (0, 0), 'planar': (3, 3), 'floating': (7, 6)}.get(joint.type, (1, 1))
            if name in mimics or joint.type == 'fixed':
                nqj = nvj = 0
            infos.append(JointInfo(name, joint.type, joint.parent, joint.child, qi, vi, nqj, nvj,
                                   joint.lower, joint.upper, joint.effort, joint.velocity,
                                   joint.damping, joint.friction, mimics.get(name),
                                   tuple(float(x) for x in joint.axis)))
        self.joints = infos
        self.joint = {info.name: info for info in infos}
        # per-coordinate limits and per-velocity properties, in public order
        self.lower_limits = np.full(nq, -np.inf)
        self.upper_limits = np.full(nq, np.inf)
        self.velocity_limits = np.full(nv, np.inf)
        self.effort_limits = np.full(nv, np.inf)
        self.damping = np.zeros(nv)
        self.friction = np.zeros(nv)
        for info in infos:
            if info.q_index is None or info.type == 'floating':
                continue
            if info.type in ('revolute', 'prismatic'):
                self.lower_limits[info.q_index] = info.lower
                self.upper_limits[info.q_index] = info.upper
            self.velocity_limits[info.v_index:info.v_index + info.nv] = info.velocity
            self.effort_limits[info.v_index:info.v_index + info.nv] = info.effort
            self.damping[info.v_index:info.v_index + info.nv] = info.damping
            self.friction[info.v_index:info.v_index + info.nv] = info.friction

    # ------------------------------------------------------------------------------------
    def neutral(self):
        """The neutral configuration: zeros, identity quaternions."""
        q = np.zeros(self.nq)
        for info in self.joints:
            if info.type == 'floating' and info.q_index is not None:
                q[info.q_index + 6] = 1.0
        return q

    @property
    def q_neutral(self):
        """The neutral configuration as a read-only array (zeros, identity quaternions
        [0, 0, 0, 1]), made once; :meth:`neutral` returns a new, writable copy of it."""
        q = self.__dict__.get('_q_neutral')
        if q is None:
            q = self._q_neutral = _read_only(self.neutral())
        return q

    def single_dof_joints(self):
        """The joints with one coordinate of their own (revolute, continuous, prismatic; not
        mimic joints, which follow their leaders), in v order: the joints a JointState message
        carries (ros/robot.py) and the simulator's joint rows (friction, limits, drives)."""
        return sorted((j for j in self.joints if j.q_index is not None and j.nq == 1
                       and j.type in ('revolute', 'continuous', 'prismatic')),
                      key=lambda j: j.v_index)

    def frame_id(self, frame):
        """The index of a frame in ``frame_names`` (the rows of ``frame_poses(...).array``),
        from its link name or from an index (checked); ValueError for anything else."""
        if isinstance(frame, (int, np.integer)) and not isinstance(frame, (bool, np.bool_)):
            if 0 <= frame < len(self.frame_names):
                return int(frame)
            raise ValueError(f'frame id {frame} is out of range: the model has '
                             f'{len(self.frame_names)} frames, ids 0 to '
                             f'{len(self.frame_names) - 1} (model.frame_names)')
        try:
            return self.frame_index[frame]
        except (KeyError, TypeError):
            raise ValueError(f'unknown frame {frame!r}; frames are the URDF links: '
                             f'{", ".join(self.frame_names[:8])}'
                             f'{", ..." if len(self.frame_names) > 8 else ""} '
                             '(or their ids, indices into model.frame_names)') from None

    def _periodic_velocities(self):
        """(internal nv,) float array, 1.0 at the velocity of each angle whose pose repeats
        every 2 pi (a continuous joint, a planar joint's rotation), else 0.0: where
        ``difference(..., wrap_angles=True)`` wraps. Made once, writable (a kernel argument:
        numba types a read-only array through a slow path), never written."""
        mask = self.__dict__.get('_periodic')
        if mask is None:
            mask = np.zeros(self.nv_full)
            names = ([None] if self.floating_base else []) + list(self.moving_joint_names)
            for i, name in enumerate(names, start=1):      # body rows, in order
                kind = None if name is None else self._robot.joints[name].type
                if kind == 'continuous':
                    mask[self.body_int[i, L.VIDX]] = 1.0
                elif kind == 'planar':
                    mask[self.body_int[i, L.VIDX] + 2] = 1.0
            self._periodic = mask
        return mask

    def mimic_positions(self, q):
        """{mimic joint name: position} for configuration q (public coordinates)."""
        q = np.asarray(q, dtype=float)
        return {info.name: info.mimic[1] * q[self.joint[info.mimic[0]].q_index] + info.mimic[2]
                for info in self.joints if info.mimic is not None}

    def random_configuration(self, rng=None):
        """A random configuration within finite limits (angles in [-pi, pi] otherwise)."""
        rng = np.random.default_rng(rng)
        lower = np.where(np.isfinite(self.lower_limits), self.lower_limits, -math.pi)
        upper = np.where(np.isfinite(self.upper_limits), self.upper_limits, math.pi)
        q = rng.uniform(lower, upper)
        for info in self.joints:
            if info.type == 'floating' and info.q_index is not None:
                quat = rng.normal(size=4)
                q[info.q_index + 3:info.q_index + 7] = quat / np.linalg.norm(quat)
        return q

    def __repr__(self):
        base = 'floating' if self.floating_base else 'fixed'
        return (f'Model({self.name!r}, {base} base, nq={self.nq}, nv={self.nv}, '
                f'bodies={self.n_bodies}, frames={len(self.frame_names)}, '
                f'mass={self.total_mass:.3f} kg)')


def _moments(values):
    return '[' + ', '.join(f'{v:.6g}' for v in values) + ']'


def _body_com_inertia(params):
    """Rotational inertia about the centre of mass of 10 inertia parameters."""
    m, h = params[0], params[1:4]
    I = np.array([[params[4], params[5], params[6]], [params[5], params[7], params[8]],
                  [params[6], params[8], params[9]]])
    if m <= 0:
        return I
    c = h / m
    return I - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))


def _read_only(array):
    view = array.view()
    view.setflags(write=False)
    return view


def _links_depth_first(robot):
    names, stack = [], [robot.root]
    while stack:
        link = stack.pop()
        names.append(link)
        stack.extend(reversed([robot.joints[j].child for j in robot.child_joints[link]]))
    return names


def _depth_first_renumber(body_rows, link_body):
    children = [[] for _ in body_rows]
    for i, row in enumerate(body_rows[1:], start=1):
        children[row['parent']].append(i)
    new_index, order, stack = {}, [], [0]
    while stack:
        i = stack.pop()
        new_index[i] = len(order)
        order.append(i)
        stack.extend(reversed(children[i]))
    rows = []
    for old in order:
        row = dict(body_rows[old])
        row['parent'] = new_index[row['parent']] if row['parent'] >= 0 else -1
        rows.append(row)
    return rows, {link: new_index[b] for link, b in link_body.items()}
