"""Read and validate a URDF (via urdf_parser_py) into plain link and joint records.

Every error is a :class:`ModelError` whose message starts with ``<source>:<line>:`` and names
the link or joint, so a user can go straight to the offending element.
"""
import math
import os
from dataclasses import dataclass, field

import numpy as np
from lxml import etree
from urdf_parser_py import urdf as urdf_parser
from urdf_parser_py.xml_reflection import core as urdf_core

from .errors import InertiaError, JointError, ModelError, TopologyError, URDFSyntaxError

JOINT_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar')


@dataclass
class LinkRecord:
    name: str
    line: int
    mass: float = 0.0
    com_xyz: np.ndarray = field(default_factory=lambda: np.zeros(3))
    com_rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))  # about the COM


@dataclass
class JointRecord:
    name: str
    line: int
    type: str
    parent: str
    child: str
    origin_rotation: np.ndarray
    origin_xyz: np.ndarray
    axis: np.ndarray
    lower: float = -math.inf
    upper: float = math.inf
    effort: float = math.inf
    velocity: float = math.inf
    damping: float = 0.0
    friction: float = 0.0
    mimic: tuple = None   # (leader name, multiplier, offset)


@dataclass
class RobotRecord:
    name: str
    source: str
    root: str
    links: dict          # name -> LinkRecord, in URDF order
    joints: dict         # name -> JointRecord, in URDF order
    child_joints: dict   # link name -> [joint names] in URDF order
    warnings: list


def rpy_to_matrix(rpy):
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _read_text(path_or_xml):
    """Return (xml text, source label) from a file path or an XML string."""
    text = str(path_or_xml)
    if text.lstrip().startswith('<'):
        return text, '<robot_description>'
    if not os.path.exists(text):
        raise ModelError(f'{text}: no such file (and not URDF XML text)')
    with open(text, 'rb') as handle:
        return handle.read().decode('utf-8'), text


# A robot's masses (kg), inertias (kg m^2), lengths (m) and mimic factors are far below this;
# a larger value is a typo, and its products in the algorithms (m g r, m r r, ...) could
# overflow float64 into inf and NaN torques.
PHYSICAL_LIMIT = 1e12


def _finite(values, where, what):
    array = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(array)):
        raise ModelError(f'{where}: {what} has a non-finite value: {list(array.ravel())}')
    return array


def _physical(values, where, what):
    """_finite, and within +-PHYSICAL_LIMIT: for every number the dynamics computes with."""
    array = _finite(values, where, what)
    if np.any(np.abs(array) > PHYSICAL_LIMIT):
        raise ModelError(f'{where}: {what} has a value beyond {PHYSICAL_LIMIT:g} in magnitude '
                         f'(not a physical robot value): {list(array.ravel())}')
    return array


def read_urdf(path_or_xml):
    """Parse and validate a URDF; returns a :class:`RobotRecord`."""
    text, source = _read_text(path_or_xml)
    try:
        root = etree.fromstring(text.encode('utf-8'),
                                parser=etree.XMLParser(remove_comments=True))
    except etree.XMLSyntaxError as error:
        line, column = error.position if error.position else (0, 0)
        raise URDFSyntaxError(f'{source}:{line}:{column}: malformed XML: {error.msg}') from None
    if root.tag != 'robot':
        raise URDFSyntaxError(f'{source}:{root.sourceline}: the root element is <{root.tag}>, '
                              'not <robot>')

    # Element positions for messages, and checks urdf_parser_py would only assert on.
    lines = {}
    for element in root:
        if element.tag not in ('link', 'joint'):
            continue
        name = element.get('name')
        where = f'{source}:{element.sourceline}'
        if not name:
            raise ModelError(f'{where}: <{element.tag}> without a name')
        key = (element.tag, name)
        if key in lines:
            raise TopologyError(f'{where}: duplicate {element.tag} name {name!r} '
                                f'(first at line {lines[key]})')
        lines[key] = element.sourceline
        if element.tag == 'joint' and element.get('type') not in JOINT_TYPES:
            raise JointError(f'{where}: joint {name!r} has unknown type '
                             f'{element.get("type")!r} (expected one of {", ".join(JOINT_TYPES)})')

    warnings = []
    previous_handler = urdf_core.on_error
    urdf_core.on_error = warnings.append  # unknown tags (gazebo, ...) are warnings, not noise
    try:
        robot = urdf_parser.URDF.from_xml_string(text.encode('utf-8'))
    except urdf_core.ParseError as error:
        raise ModelError(f'{source}: {error}'.replace('\n', ' ')) from None
    except Exception as error:  # urdf_parser_py also raises bare Exception (unknown geometry)
        raise ModelError(f'{source}: invalid URDF: {error}'.replace('\n', ' ')) from None
    finally:
        urdf_core.on_error = previous_handler

    links = {}
    for link in robot.links:
        links[link.name] = _read_link(link, f'{source}:{lines[("link", link.name)]}')
    joints = {}
    for joint in robot.joints:
        joints[joint.name] = _read_joint(joint, f'{source}:{lines[("joint", joint.name)]}',
                                         warnings)
    if not links:
        raise TopologyError(f'{source}: the robot has no <link>')
    root_link, child_joints = _check_tree(source, links, joints)
    _check_mimics(source, joints)
    return RobotRecord(robot.name or '', source, root_link, links, joints, child_joints,
                       warnings)


def _read_link(link, where):
    record = LinkRecord(link.name, int(where.rsplit(':', 1)[1]))
    inertial = link.inertial
    if inertial is None:
        return record
    what = f'{where}: link {link.name!r}'
    record.mass = float(_physical(inertial.mass or 0.0, what, 'mass'))
    if record.mass < 0:
        raise InertiaError(f'{what}: negative mass {record.mass}')
    if inertial.origin is not None:
        record.com_xyz = _physical(inertial.origin.xyz or [0, 0, 0], what, 'inertial origin xyz')
        record.com_rotation = rpy_to_matrix(_finite(inertial.origin.rpy or [0, 0, 0], what,
                                                    'inertial origin rpy'))
    if inertial.inertia is not None:
        i = inertial.inertia
        tensor = _physical([[i.ixx or 0, i.ixy or 0, i.ixz or 0],
                          [i.ixy or 0, i.iyy or 0, i.iyz or 0],
                          [i.ixz or 0, i.iyz or 0, i.izz or 0]], what, 'inertia')
        _check_inertia(tensor, record.mass, what)
        record.inertia = tensor
    return record


def _check_inertia(tensor, mass, what):
    """A rotational inertia must be positive (semi-)definite and its principal moments must
    satisfy the triangle inequality (each at most the sum of the other two)."""
    moments = np.linalg.eigvalsh(tensor)
    scale = max(float(np.max(np.abs(moments))), 1e-300)
    tolerance = 1e-9 * scale
    if mass > 0 and moments[0] <= 0:
        raise InertiaError(f'{what}: inertia is not positive definite (principal moments '
                           f'{moments.tolist()})')
    if moments[0] < -tolerance:
        raise InertiaError(f'{what}: inertia is not positive semi-definite (principal '
                           f'moments {moments.tolist()})')
    a, b, c = moments
    if c > a + b + tolerance:
        raise InertiaError(f'{what}: principal moments {moments.tolist()} violate the triangle '
                           f'inequality ({c:g} > {a:g} + {b:g})')


def _read_joint(joint, where, warnings):
    what = f'{where}: joint {joint.name!r}'
    origin = joint.origin
    rotation = rpy_to_matrix(_finite(origin.rpy if origin is not None and origin.rpy else
                                     [0, 0, 0], what, 'origin rpy'))
    xyz = _physical(origin.xyz if origin is not None and origin.xyz else [0, 0, 0], what,
                    'origin xyz')
    axis = _physical(joint.axis if joint.axis is not None else [1.0, 0.0, 0.0], what, 'axis')
    record = JointRecord(joint.name, int(where.rsplit(':', 1)[1]), joint.type, joint.parent,
                         joint.child, rotation, xyz, axis)
    if joint.type in ('revolute', 'continuous', 'prismatic', 'planar'):
        norm = float(np.linalg.norm(axis))
        if norm < 1e-12:
            raise JointError(f'{what}: axis is zero')
        record.axis = axis / norm
    limit = joint.limit
    if limit is not None:
        record.effort = (float(_finite(limit.effort, what, 'limit effort'))
                         if limit.effort is not None else math.inf)
        record.velocity = (float(_finite(limit.velocity, what, 'limit velocity'))
                           if limit.velocity is not None else math.inf)
        if joint.type in ('revolute', 'prismatic'):
            record.lower = float(_finite(limit.lower or 0.0, what, 'limit lower'))
            record.upper = float(_finite(limit.upper or 0.0, what, 'limit upper'))
            if record.lower > record.upper:
                raise JointError(f'{what}: limit lower {record.lower} > upper {record.upper}')
        if record.effort < 0 or record.velocity < 0:
            raise JointError(f'{what}: negative effort or velocity limit')
    elif joint.type in ('revolute', 'prismatic'):
        warnings.append(f'{what}: {joint.type} joint without <limit>: treated as unbounded')
    if joint.dynamics is not None:
        record.damping = float(_finite(joint.dynamics.damping or 0.0, what, 'damping'))
        record.friction = float(_finite(joint.dynamics.friction or 0.0, what, 'friction'))
        if record.damping < 0 or record.friction < 0:
            raise JointError(f'{what}: negative damping or friction')
    if joint.mimic is not None:
        if not joint.mimic.joint:
            raise JointError(f'{what}: <mimic> without a joint attribute')
        multiplier = 1.0 if joint.mimic.multiplier is None else float(joint.mimic.multiplier)
        offset = 0.0 if joint.mimic.offset is None else float(joint.mimic.offset)
        _physical([multiplier, offset], what, 'mimic multiplier/offset')
        if joint.type not in ('revolute', 'continuous', 'prismatic'):
            raise JointError(f'{what}: a {joint.type} joint cannot mimic another joint')
        record.mimic = (joint.mimic.joint, multiplier, offset)
    return record


def _check_tree(source, links, joints):
    """Exactly one root, every joint between known links, each link the child of at most one
    joint, every link reachable from the root (else a cycle). Returns (root, child_joints)."""
    parent_joint = {}
    child_joints = {name: [] for name in links}
    for joint in joints.values():
        where = f'{source}:{joint.line}: joint {joint.name!r}'
        for role, link in (('parent', joint.parent), ('child', joint.child)):
            if link not in links:
                raise TopologyError(f'{where}: {role} link {link!r} does not exist')
        if joint.parent == joint.child:
            raise TopologyError(f'{where}: link {joint.child!r} is its own parent (cycle)')
        if joint.child in parent_joint:
            raise TopologyError(f'{where}: link {joint.child!r} is already the child of joint '
                                f'{parent_joint[joint.child]!r} (a kinematic loop or a '
                                'duplicate joint)')
        parent_joint[joint.child] = joint.name
        child_joints[joint.parent].append(joint.name)
    roots = [name for name in links if name not in parent_joint]
    if not roots:
        raise TopologyError(f'{source}: no root link: every link is the child of a joint '
                            '(the joints form a cycle)')
    if len(roots) > 1:
        raise TopologyError(f'{source}: several root links (links that are no joint\'s child): '
                            f'{", ".join(repr(r) for r in roots)}; a URDF must form one tree')
    reached, stack = set(), [roots[0]]
    while stack:
        link = stack.pop()
        reached.add(link)
        stack.extend(joints[j].child for j in child_joints[link])
    unreached = [name for name in links if name not in reached]
    if unreached:
        raise TopologyError(f'{source}: links {", ".join(repr(n) for n in unreached)} are not '
                            f'reachable from the root {roots[0]!r}: their joints form a cycle')
    return roots[0], child_joints


def _check_mimics(source, joints):
    for joint in joints.values():
        if joint.mimic is None:
            continue
        where = f'{source}:{joint.line}: joint {joint.name!r}'
        leader = joint.mimic[0]
        if leader not in joints:
            raise JointError(f'{where}: mimics unknown joint {leader!r}')
        seen = [joint.name]
        while leader is not None:
            if leader in seen:
                raise JointError(f'{where}: mimic cycle {" -> ".join(seen + [leader])}')
            seen.append(leader)
            if joints[leader].type not in ('revolute', 'continuous', 'prismatic'):
                raise JointError(f'{where}: mimics {leader!r}, a {joints[leader].type} joint '
                                 '(only revolute, continuous and prismatic joints can lead)')
            mimic = joints[leader].mimic
            leader = mimic[0] if mimic is not None else None
            if leader is not None and leader not in joints:
                raise JointError(f'{where}: mimic chain reaches unknown joint {leader!r}')
