"""Read a URDF into plain link and joint records, accepting what urdfdom (robot_state_publisher,
KDL, Pinocchio) accepts, and sorting every problem into one of three kinds:

- **errors**: what no model can be built from (malformed XML, a tree that is not one tree, an
  unknown joint type, a zero axis, a negative or non-finite mass, a mimic cycle, a mass,
  inertia, length or mimic factor beyond PHYSICAL_LIMIT). All of them are collected; the first is
  raised as a :class:`ModelError` whose message counts the others (``.errors`` lists them all).
- **warnings**: physically doubtful but usable input (degenerate limits, a mimic tag on a fixed
  joint or naming an unknown joint, a broken <visual>/<collision>, ...). The model loads and
  records them; ``strict`` makes them errors (:func:`refused_by_strict`), except the harmless
  ones, which say so: a broken <visual> or material (display only). Inertia warnings are added
  by model.py, which knows what the dynamics use.
- **notes**: the parser's own noise: elements and attributes that URDF does not define or that
  the dynamics never read (Gazebo tags, ...). Never a warning, never an error.

Beside the tree: ``<constraint>`` elements (urdfdom PR #264's proposal) close kinematic loops
(read into :class:`ConstraintRecord`; a bad one is an error naming the constraint), and the
joints that ``<transmission>`` elements and ``<ros2_control>`` blocks name (with a
``command_interface``) are the actuated ones (``RobotRecord.actuated``).

A xacro source (named ``*.xacro``, or with unexpanded ``<xacro:...>`` elements or ``${...}``,
``$(...)`` substitutions) is an error that gives the command expanding it.

Every message starts with ``<source>:<line>:`` and names the link or joint.
"""
import math
import os
import re
from dataclasses import dataclass, field

import numpy as np
from lxml import etree

from .errors import InertiaError, JointError, ModelError, TopologyError, URDFSyntaxError
from .rotations import quaternion_to_matrix, rpy_to_matrix

JOINT_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar')
MOVING_1DOF = ('revolute', 'continuous', 'prismatic')
URDF_VERSIONS = ('1.0', '1.1', '1.2')   # what urdfdom 6 reads

# A robot's masses (kg), inertias (kg m^2), lengths (m) and mimic factors are far below this;
# a larger value is a typo, and its products in the algorithms (m g r, m r r, ...) could
# overflow float64 into inf and NaN torques.
PHYSICAL_LIMIT = 1e12

CONSTRAINT_TYPES = ('ball', 'revolute', 'fixed')   # loop joints: 3, 5 and 6 equations

# Top-level elements the dynamics never read: skipped whole, silently (they are not noise).
# (<transmission> and <ros2_control> are read for the actuated joints only.)
IGNORED_TOP_LEVEL = ('material', 'gazebo', 'sensor', 'plugin')
# The attributes and children URDF defines per element; anything else is a note.
KNOWN = {
    'robot': ({'name', 'version'}, set()),
    'link': ({'name', 'type'}, {'inertial', 'visual', 'collision'}),
    'inertial': (set(), {'origin', 'mass', 'inertia'}),
    'joint': ({'name', 'type'}, {'origin', 'parent', 'child', 'axis', 'limit', 'dynamics',
                                 'mimic', 'safety_controller', 'calibration'}),
    'limit': ({'lower', 'upper', 'effort', 'velocity', 'acceleration', 'deceleration', 'jerk'},
              set()),
    'dynamics': ({'damping', 'friction'}, set()),
    'mimic': ({'joint', 'multiplier', 'offset'}, set()),
    'constraint': ({'name', 'type'}, {'parent', 'child', 'parent_origin', 'child_origin',
                                      'parent_axis', 'child_axis'}),
}


class ModelWarning(str):
    """A warning about a robot description: the message (a str), the ModelError subclass that
    ``strict`` raises for it (``error``), whether it bears on kinematics (``kinematic``:
    ``strict='kinematics'``, frames_node's strict mode, refuses only those) and whether it is
    harmless (``harmless``: the model as loaded is not affected, and the message says why: a
    display-only <visual> or material, a link whose own inertia is not physical but the welded
    body the dynamics use is, an inertia repaired by ``repair_inertia``; strict lets it pass)."""

    def __new__(cls, message, error=ModelError, kinematic=False, harmless=False):
        warning = super().__new__(cls, message)
        warning.error = error
        warning.kinematic = kinematic
        warning.harmless = harmless
        return warning


def refused_by_strict(warnings, strict):
    """The warnings that ``strict`` turns into errors: none when it is false; for True every
    warning that is not harmless (it bears on the dynamics, the kinematics or the simulator's
    contacts, or is input urdfdom refuses); for 'kinematics' those that bear on frame poses."""
    if isinstance(strict, str) and strict == 'kinematics':
        return [w for w in warnings if w.kinematic]
    if isinstance(strict, str) or strict not in (False, True, None):
        raise ValueError(f"strict must be False, True or 'kinematics', got {strict!r}")
    return [w for w in warnings if not w.harmless] if strict else []


@dataclass
class GeometryRecord:
    """One <collision> (or <visual>) shape: kind 'box' (size), 'sphere' (radius), 'cylinder'
    and 'capsule' (radius, length), 'mesh' (filename, scale); its pose in the link frame."""
    kind: str
    origin_rotation: np.ndarray
    origin_xyz: np.ndarray
    size: tuple = ()
    filename: str = ''
    name: str = ''


@dataclass
class LinkRecord:
    name: str
    line: int
    mass: float = 0.0
    com_xyz: np.ndarray = field(default_factory=lambda: np.zeros(3))
    com_rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))  # about the COM
    has_inertial: bool = False
    collisions: list = field(default_factory=list)   # GeometryRecord, in URDF order
    #: the link's extent (m): the farthest of its centre of mass, the origins of the joints it
    #: carries and its collision shapes from its frame; with the mass, the scale of rounding in
    #: its inertia (inertia.py)
    size: float = 0.0


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
    armature: float = 0.0
    mimic: tuple = None   # (leader name, multiplier, offset)


@dataclass
class ConstraintRecord:
    """One <constraint> (a loop joint): frame A is ``parent``'s link frame moved by
    (parent_rotation, parent_xyz), frame B is ``child``'s moved by (child_rotation, child_xyz);
    the axes (unit, revolute only) are in frames A and B."""
    name: str
    line: int
    type: str            # 'ball', 'revolute' or 'fixed' (CONSTRAINT_TYPES)
    parent: str
    child: str
    parent_rotation: np.ndarray
    parent_xyz: np.ndarray
    child_rotation: np.ndarray
    child_xyz: np.ndarray
    parent_axis: np.ndarray
    child_axis: np.ndarray


@dataclass
class RobotRecord:
    name: str
    source: str
    root: str
    links: dict          # name -> LinkRecord, in URDF order
    joints: dict         # name -> JointRecord, in URDF order
    child_joints: dict   # link name -> [joint names] in URDF order
    warnings: list       # ModelWarning
    notes: list          # str: the parser's noise
    constraints: dict = field(default_factory=dict)   # name -> ConstraintRecord, in URDF order
    #: the joints <transmission> elements and <ros2_control> blocks name (with a command
    #: interface), in the file's order, each once: (joint name, line)
    actuated: list = field(default_factory=list)


def read_text(path_or_xml, source=None):
    """(xml text, source label) of a file path, of URDF XML text or of its bytes (labelled
    ``source``, default ``<robot_description>``)."""
    if isinstance(path_or_xml, (bytes, bytearray)):
        return _decode(bytes(path_or_xml)), source or '<robot_description>'
    text = str(path_or_xml)
    if text.lstrip('\ufeff \t\r\n').startswith('<'):
        return text, source or '<robot_description>'
    if not os.path.exists(text):
        raise ModelError(f'{text}: no such file (and not URDF XML text)')
    if os.path.isdir(text):
        raise ModelError(f'{text}: is a directory, not a URDF file')
    with open(text, 'rb') as handle:
        data = handle.read()
    return _decode(data), text


def _decode(data):
    """Bytes as text, in the encoding the XML declaration names (default UTF-8)."""
    head = data[:200].decode('ascii', 'replace')
    match = re.search(r'<\?xml[^>]*encoding\s*=\s*["\']([A-Za-z0-9._-]+)["\']', head)
    try:
        return data.decode(match.group(1) if match else 'utf-8-sig')
    except (LookupError, UnicodeDecodeError):
        return data.decode('utf-8', 'replace')


def _declaration_span(text):
    """(start, end) of an XML declaration that follows only a byte-order mark, whitespace and
    comments, else None. A scan, not a regular expression: `(?:\\s|<!--.*?-->)*<\\?xml` backtracks
    through every way of splitting the comments before it, twice the time per comment when no
    declaration follows (a Talos URDF written by lxml without one, 163 comments, never loaded)."""
    at = 1 if text.startswith('\ufeff') else 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if not text.startswith('<!--', at):
            break
        end = text.find('-->', at + 4)
        if end < 0:
            return None
        at = end + 3
    if not text.startswith('<?xml', at):
        return None
    end = text.find('?>', at + 5)
    return None if end < 0 else (at, end + 2)


def _parse_xml(text, source, notes):
    # An XML declaration, possibly after whitespace, comments or a byte-order mark: libxml2
    # refuses anything before it and some versions in it; TinyXML2 (urdfdom) does not care. It
    # says nothing the parser needs once the text is decoded, so it is blanked out (newlines
    # kept: line numbers stay right).
    span = _declaration_span(text)
    if span is not None:
        start, end = span
        text = text[:start] + re.sub(r'[^\n]', ' ', text[start:end]) + text[end:]
    text = text.lstrip('\ufeff')
    parser = etree.XMLParser(remove_comments=True, remove_pis=True, huge_tree=True)
    declared = []
    for _ in range(20):
        try:
            root = etree.fromstring(text, parser=parser)
            if declared:
                notes.append(f'{source}: XML namespace prefix{"es" if len(declared) > 1 else ""} '
                             f'{", ".join(declared)} used without a declaration: accepted')
            return root
        except etree.XMLSyntaxError as error:
            # TinyXML2 knows no namespaces: <xacro:foo> or <drake:rotor_inertia> without an
            # xmlns declaration is fine there. Declare such prefixes and try again.
            prefix = re.search(r'Namespace prefix (\S+) (?:on|for) .* is not defined', error.msg or '')
            if prefix is None or prefix.group(1) in declared:
                line, column = error.position if error.position else (0, 0)
                raise URDFSyntaxError(f'{source}:{line}:{column}: malformed XML: {error.msg}') \
                    from None
            declared.append(prefix.group(1))
            text = re.sub(r'<robot\b', f'<robot xmlns:{prefix.group(1)}="urn:undeclared:'
                          f'{prefix.group(1)}"', text, count=1)
    raise URDFSyntaxError(f'{source}: malformed XML: too many undeclared namespace prefixes')


def _local(element):
    return etree.QName(element).localname if isinstance(element.tag, str) else ''


def _shown(element):
    """The tag as written: prefix:name."""
    return f'{element.prefix}:{_local(element)}' if element.prefix else _local(element)


class _Reader:
    """One pass over the document, collecting errors, warnings and notes."""

    def __init__(self, source):
        self.source = source
        self.errors = []      # (ModelError subclass, message)
        self.warnings = []    # ModelWarning
        self.notes = []       # str
        self.claimed_children = set()   # the child link of every joint, broken ones included

    def at(self, element):
        return f'{self.source}:{element.sourceline}'

    def error(self, kind, element, message):
        self.errors.append((kind, f'{self.at(element)}: {message}'))

    def warn(self, element, message, error=ModelError, kinematic=False):
        self.warnings.append(ModelWarning(f'{self.at(element)}: {message}', error, kinematic))

    def note(self, element, message):
        self.notes.append(f'{self.at(element)}: {message}')

    def harmless(self, since, why):
        """Marks the warnings recorded since index ``since`` harmless, saying why."""
        self.warnings[since:] = [w if w.harmless else
                                 ModelWarning(f'{w} (harmless: {why})', w.error, w.kinematic, True)
                                 for w in self.warnings[since:]]

    # -- numbers ---------------------------------------------------------------------------
    def numbers(self, element, attribute, count, what, default=None):
        """``count`` numbers from an attribute (any whitespace between them), or ``default``
        when it is absent; None after recording an error when malformed or non-finite."""
        text = element.get(attribute)
        if text is None:
            return default
        parts = text.replace(',', ' ').split()
        try:
            values = [float(p) for p in parts]
        except ValueError:
            self.error(URDFSyntaxError, element, f'{what}: {attribute}="{text}" is not '
                       f'{count} number{"s" if count > 1 else ""}')
            return None
        if len(values) != count:
            self.error(URDFSyntaxError, element, f'{what}: {attribute}="{text}" has '
                       f'{len(values)} numbers, {count} expected')
            return None
        if not all(math.isfinite(x) for x in values):
            self.error(ModelError, element, f'{what}: {attribute} has a non-finite value: '
                       f'{values}')
            return None
        if any(abs(x) > PHYSICAL_LIMIT for x in values):
            self.error(ModelError, element, f'{what}: {attribute} has a value beyond '
                       f'{PHYSICAL_LIMIT:g} in magnitude (not a physical robot value): {values}')
            return None
        return values if count > 1 else values[0]

    def origin(self, parent, what, tag='origin'):
        """(rotation, xyz) of the <origin> (or ``tag``) child of ``parent`` (identity when
        absent); None after an error."""
        origin = parent.find(tag)
        if origin is None:
            return np.eye(3), np.zeros(3)
        xyz = self.numbers(origin, 'xyz', 3, what + ' origin', [0.0, 0.0, 0.0])
        rpy = self.numbers(origin, 'rpy', 3, what + ' origin', None)
        quat = self.numbers(origin, 'quat_xyzw', 4, what + ' origin', None)
        if xyz is None or (origin.get('rpy') is not None and rpy is None) or \
                (origin.get('quat_xyzw') is not None and quat is None):
            return None
        if quat is not None:
            if rpy is not None:
                self.error(URDFSyntaxError, origin, f'{what} origin: both rpy and quat_xyzw')
                return None
            if math.sqrt(sum(x * x for x in quat)) < 1e-9:
                self.error(URDFSyntaxError, origin, f'{what} origin: quat_xyzw is zero')
                return None
            return quaternion_to_matrix(*quat), np.array(xyz)
        return rpy_to_matrix(rpy or [0.0, 0.0, 0.0]), np.array(xyz)

    def unknown(self, element, what, children_too=True):
        """Notes for the attributes (and children) URDF does not define on ``element``."""
        attributes, children = KNOWN[_local(element)]
        for name in element.attrib:
            if etree.QName(name).localname not in attributes:
                self.note(element, f'{what}: unknown attribute {name!r} ignored')
        for child in element if children_too else ():
            if isinstance(child.tag, str) and _local(child) not in children and \
                    not _is_drake_tag(child):
                self.note(child, f'{what}: <{_shown(child)}> ignored (the dynamics do not read it)')

    # -- links -----------------------------------------------------------------------------
    def link(self, element, name):
        record = LinkRecord(name, element.sourceline)
        what = f'link {name!r}'
        self.unknown(element, what)
        inertials = element.findall('inertial')
        if len(inertials) > 1:
            self.warn(inertials[1], f'{what}: {len(inertials)} <inertial> elements: the first '
                      'is used', InertiaError)
        if inertials:
            self.inertial(inertials[0], record, what)
        for kind in ('visual', 'collision'):
            for shape in element.findall(kind):
                since = len(self.warnings)
                geometry = self.geometry(shape, f'{what} <{kind}>')
                if geometry is not None and kind == 'collision':
                    record.collisions.append(geometry)
                if kind == 'visual':
                    self.harmless(since, 'a <visual> is display only: neither the dynamics nor '
                                  'the simulator read it')
        return record

    def inertial(self, element, record, what):
        record.has_inertial = True
        self.unknown(element, what + ' <inertial>')
        placement = self.origin(element, what + ' inertial')
        if placement is not None:
            record.com_rotation, record.com_xyz = placement
        mass = element.find('mass')
        if mass is None or mass.get('value') is None:
            self.warn(element, f'{what}: <inertial> without <mass value>: mass 0 assumed',
                      InertiaError)
        else:
            value = self.numbers(mass, 'value', 1, what + ' mass')
            if value is not None and value < 0:
                self.error(InertiaError, mass, f'{what}: negative mass {value}')
            elif value is not None:
                record.mass = value
        inertia = element.find('inertia')
        if inertia is None:
            if record.mass > 0:
                self.warn(element, f'{what}: <inertial> without <inertia>: a point mass at the '
                          'centre of mass assumed', InertiaError)
            return
        values = {}
        for key in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'):
            value = self.numbers(inertia, key, 1, what + ' inertia', None)
            if value is None and inertia.get(key) is None:
                self.warn(inertia, f'{what}: <inertia> without {key}: 0 assumed', InertiaError)
                value = 0.0
            values[key] = value
        if None in values.values():
            return
        i = values
        record.inertia = np.array([[i['ixx'], i['ixy'], i['ixz']],
                                   [i['ixy'], i['iyy'], i['iyz']],
                                   [i['ixz'], i['iyz'], i['izz']]])

    def geometry(self, element, what):
        """A <visual>/<collision>: its first shape, or None (with a warning) when it has none
        or the shape is malformed. Problems here never stop a load."""
        errors_before = len(self.errors)
        placement = self.origin(element, what)
        holder = element.find('geometry')
        shapes = [] if holder is None else [c for c in holder if isinstance(c.tag, str)]
        result = None
        if not shapes:
            self.warn(element, f'{what}: no <geometry> shape: ignored', URDFSyntaxError)
        else:
            if len(shapes) > 1:
                self.warn(shapes[1], f'{what}: <geometry> has {len(shapes)} shapes '
                          f'({", ".join(_local(s) for s in shapes)}): only the first is used',
                          URDFSyntaxError)
            result = self.shape(shapes[0], what, placement)
        material = element.find('material')
        since = len(self.warnings)
        if material is not None:
            color = material.find('color')
            if color is not None and color.get('rgba') is not None:
                rgba = color.get('rgba').split()
                try:
                    ok = len(rgba) == 4 and all(0.0 <= float(x) <= 1.0 for x in rgba)
                except ValueError:
                    ok = False
                if not ok:
                    self.warn(color, f'{what}: material color rgba="{color.get("rgba")}" is '
                              'not 4 numbers in [0, 1]', URDFSyntaxError)
            texture = material.find('texture')
            if texture is not None and not texture.get('filename'):
                self.warn(texture, f'{what}: material texture without a filename',
                          URDFSyntaxError)
        self.harmless(since, 'a material is display only')
        # A malformed number in a shape is not a model error: the errors just recorded become
        # warnings, and the shape is dropped.
        malformed = self.errors[errors_before:]
        del self.errors[errors_before:]
        for _, message in malformed:
            self.warnings.append(ModelWarning(f'{message} (shape ignored)', URDFSyntaxError))
        return None if malformed or placement is None else result

    def shape(self, element, what, placement):
        kind = _local(element)
        spec = {'box': (('size', 3),), 'sphere': (('radius', 1),),
                'cylinder': (('radius', 1), ('length', 1)),
                'capsule': (('radius', 1), ('length', 1)), 'mesh': ()}
        if kind not in spec:
            self.warn(element, f'{what}: unknown geometry <{kind}>: ignored', URDFSyntaxError)
            return None
        size = []
        for attribute, count in spec[kind]:
            value = self.numbers(element, attribute, count, f'{what} <{kind}>', None)
            if value is None:
                if element.get(attribute) is None:
                    self.warn(element, f'{what}: <{kind}> without {attribute}: ignored',
                              URDFSyntaxError)
                return None
            size.extend(value if count > 1 else [value])
        filename = ''
        if kind == 'mesh':
            filename = element.get('filename') or ''
            if not filename:
                self.warn(element, f'{what}: <mesh> without a filename: ignored',
                          URDFSyntaxError)
                return None
            text = element.get('scale')
            scale = [1.0, 1.0, 1.0]
            if text is not None:
                try:
                    values = [float(x) for x in text.split()]
                except ValueError:
                    values = []
                if len(values) == 3 and all(math.isfinite(x) for x in values):
                    scale = values
                elif len(values) == 1 and math.isfinite(values[0]):
                    scale = values * 3
                    self.warn(element, f'{what}: mesh scale="{text}" has one number, 3 '
                              'expected: used for all three axes', URDFSyntaxError)
                else:
                    self.warn(element, f'{what}: mesh scale="{text}" is not 3 numbers: '
                              '1 1 1 used', URDFSyntaxError)
            size = scale
        if placement is None:
            return None
        return GeometryRecord(kind, placement[0], placement[1], tuple(size), filename,
                              element.getparent().getparent().get('name') or '')

    # -- joints ----------------------------------------------------------------------------
    def joint(self, element, name):
        what = f'joint {name!r}'
        self.unknown(element, what)
        links = {}
        for role in ('parent', 'child'):
            tag = element.find(role)
            links[role] = tag.get('link') if tag is not None else None
        if links['child']:     # (a broken joint still claims its child: no second root)
            self.claimed_children.add(links['child'])
        jtype = element.get('type')
        if jtype not in JOINT_TYPES:
            self.error(JointError, element, f'{what} has '
                       f'{"no type" if jtype is None else f"unknown type {jtype!r}"} '
                       f'(expected one of {", ".join(JOINT_TYPES)})')
            return None
        for role in ('parent', 'child'):
            if not links[role]:
                self.error(TopologyError, element, f'{what} has no <{role} link="...">')
                return None
        placement = self.origin(element, what)
        axis = np.array([1.0, 0.0, 0.0])
        axis_tag = element.find('axis')
        if axis_tag is not None and jtype not in ('fixed', 'floating'):
            value = self.numbers(axis_tag, 'xyz', 3, what + ' axis', [0.0, 0.0, 0.0])
            if value is None:
                return None
            axis = np.array(value)
        if placement is None:
            return None
        record = JointRecord(name, element.sourceline, jtype, links['parent'], links['child'],
                             placement[0], placement[1], axis)
        if jtype in ('revolute', 'continuous', 'prismatic', 'planar'):
            norm = float(np.linalg.norm(axis))
            if norm < 1e-12:
                self.error(JointError, axis_tag if axis_tag is not None else element,
                           f'{what}: axis is zero')
                return None
            record.axis = axis / norm
        self.limits(element, record, what)
        dynamics = element.find('dynamics')
        if dynamics is not None:
            self.unknown(dynamics, what + ' <dynamics>')
            for key in ('damping', 'friction'):
                value = self.numbers(dynamics, key, 1, what + ' dynamics', 0.0)
                if value is not None and value < 0:
                    self.warn(dynamics, f'{what}: negative {key} {value}: 0 used', JointError)
                elif value is not None:
                    setattr(record, key, value)
        self.drake_armature(element, record, what)
        mimic = element.find('mimic')
        if mimic is not None:
            self.mimic(mimic, record, what)
        return record

    def limits(self, element, record, what):
        limit = element.find('limit')
        if record.type in ('fixed', 'floating'):
            return           # nothing to limit
        if limit is None:
            if record.type in ('revolute', 'prismatic'):
                self.warn(element, f'{what}: {record.type} joint without <limit>: no position, '
                          'effort or velocity limit', JointError)
            return
        self.unknown(limit, what + ' <limit>')
        values = {}
        for key in ('lower', 'upper', 'effort', 'velocity'):
            # exporters write 1e16 or inf for "no limit": a limit enters no product of the
            # algorithms, so it needs no bound, only a warning
            text = limit.get(key)
            try:
                huge = text is not None and abs(float(text)) > PHYSICAL_LIMIT
            except ValueError:
                huge = False
            if huge:
                self.warn(limit, f'{what}: {key} limit {text} (beyond {PHYSICAL_LIMIT:g}): no '
                          f'{"position" if key in ("lower", "upper") else key} limit', JointError)
                values[key] = math.copysign(math.inf, float(text))
            else:
                values[key] = self.numbers(limit, key, 1, what + ' limit', None)
        for key in ('effort', 'velocity'):
            value = values[key]
            if value is None:
                if limit.get(key) is None and record.type in ('revolute', 'prismatic'):
                    self.warn(limit, f'{what}: <limit> without {key}: no {key} limit',
                              JointError)
            elif value == 0:
                self.warn(limit, f'{what}: {key} limit 0 (unspecified): no {key} limit',
                          JointError)
            elif value < 0:
                self.warn(limit, f'{what}: negative {key} limit {value}: no {key} limit',
                          JointError)
            elif math.isfinite(value):
                setattr(record, key, value)
        if record.type not in ('revolute', 'prismatic'):
            return           # continuous, planar, floating: no position limits
        lower = 0.0 if values['lower'] is None else values['lower']
        upper = 0.0 if values['upper'] is None else values['upper']
        if math.isinf(lower) or math.isinf(upper):
            if lower < upper:    # one side unbounded: keep the other
                record.lower, record.upper = lower, upper
        elif lower == upper:
            self.warn(limit, f'{what}: limit lower == upper ({lower:g}): no position limit',
                      JointError)
        elif lower > upper:
            self.warn(limit, f'{what}: limit lower {lower:g} > upper {upper:g}: no position '
                      'limit', JointError)
        else:
            record.lower, record.upper = lower, upper

    def drake_armature(self, element, record, what):
        """Drake's reflected rotor inertia: rotor_inertia * gear_ratio^2."""
        tags = {_local(c): c for c in element if isinstance(c.tag, str) and _is_drake_tag(c)}
        if 'rotor_inertia' not in tags:
            return
        inertia = self.numbers(tags['rotor_inertia'], 'value', 1, what + ' drake:rotor_inertia')
        ratio = 1.0
        if 'gear_ratio' in tags:
            ratio = self.numbers(tags['gear_ratio'], 'value', 1, what + ' drake:gear_ratio')
        if inertia is None or ratio is None:
            return
        if inertia < 0:
            self.warn(tags['rotor_inertia'], f'{what}: negative drake:rotor_inertia {inertia}: '
                      'no armature', JointError)
            return
        record.armature = inertia * ratio * ratio

    def mimic(self, mimic, record, what):
        self.unknown(mimic, what + ' <mimic>')
        leader = mimic.get('joint')
        if not leader:
            self.error(JointError, mimic, f'{what}: <mimic> without a joint attribute')
            return
        multiplier = self.numbers(mimic, 'multiplier', 1, what + ' mimic', 1.0)
        offset = self.numbers(mimic, 'offset', 1, what + ' mimic', 0.0)
        if multiplier is None or offset is None:
            return
        if record.type not in MOVING_1DOF:
            self.warn(mimic, f'{what}: a {record.type} joint cannot mimic another joint: '
                      '<mimic> ignored (as Pinocchio does)', JointError, kinematic=True)
            return
        record.mimic = (leader, multiplier, offset)

    # -- loop closures and actuators ----------------------------------------------------------
    def constraint(self, element, name, links):
        """A <constraint> (a loop joint closing the tree), or None after its errors, each naming
        the constraint and the culprit."""
        what = f'constraint {name!r}'
        self.unknown(element, what)
        kind = element.get('type')
        ok = True
        if kind not in CONSTRAINT_TYPES:
            self.error(JointError, element, f'{what} has '
                       f'{"no type" if kind is None else f"unknown type {kind!r}"} (expected '
                       f'one of {", ".join(CONSTRAINT_TYPES)})')
            ok = False
        ends = {}
        for role in ('parent', 'child'):
            tag = element.find(role)
            link = tag.get('link') if tag is not None else None
            if not link:
                self.error(TopologyError, element, f'{what} has no <{role} link="...">')
                ok = False
            elif link not in links:
                self.error(TopologyError, tag, f'{what}: {role} link {link!r} does not exist')
                ok = False
            ends[role] = link
        if ok and ends['parent'] == ends['child']:
            self.error(TopologyError, element, f'{what}: link {ends["parent"]!r} is constrained '
                       'to itself (parent and child are the same link)')
            ok = False
        placements, axes = {}, {}
        for role in ('parent', 'child'):
            placements[role] = self.origin(element, f'{what} {role}', tag=f'{role}_origin')
            axis_tag = element.find(f'{role}_axis')
            axes[role] = np.array([1.0, 0.0, 0.0])      # URDF's default axis
            if axis_tag is None:
                continue
            if kind != 'revolute':
                self.note(axis_tag, f'{what}: <{role}_axis> ignored (a {kind} constraint has '
                          'no axis)')
                continue
            value = self.numbers(axis_tag, 'xyz', 3, f'{what} {role}_axis', [0.0, 0.0, 0.0])
            if value is None:
                ok = False
                continue
            norm = float(np.linalg.norm(value))
            if norm < 1e-12:
                self.error(JointError, axis_tag, f'{what}: {role}_axis is zero')
                ok = False
                continue
            axes[role] = np.array(value) / norm
        if not ok or placements['parent'] is None or placements['child'] is None:
            return None
        return ConstraintRecord(name, element.sourceline, kind, ends['parent'], ends['child'],
                                *placements['parent'], *placements['child'], axes['parent'],
                                axes['child'])

    def actuated_joints(self, element, joints, seen, out):
        """Append to ``out`` the (joint, line) a <transmission> or <ros2_control> names as
        driven, each once (``seen``): every <joint> of a transmission; a ros2_control
        <joint> with a <command_interface> (one with state interfaces only is a sensor). A
        name that is no moving joint is a note: a transmission never changes the dynamics."""
        block = _local(element)
        what = f'<{block}> {element.get("name")!r}' if element.get('name') else f'<{block}>'
        for tag in element.iter('joint'):
            if not isinstance(tag.tag, str) or tag.getparent() is not element:
                continue
            name = tag.get('name')
            if not name:
                self.note(tag, f'{what}: <joint> without a name ignored')
                continue
            if block == 'ros2_control' and not any(
                    isinstance(c.tag, str) and _local(c) == 'command_interface' for c in tag):
                continue
            if name not in joints:
                self.note(tag, f'{what} names joint {name!r}, which the robot does not have '
                          '(not an actuated joint)')
            elif joints[name].type == 'fixed':
                self.note(tag, f'{what} names fixed joint {name!r} (not an actuated joint)')
            elif joints[name].mimic is not None:
                self.note(tag, f'{what} names mimic joint {name!r}: it follows its leader '
                          '(not an actuated joint)')
            elif name not in seen:
                seen.add(name)
                out.append((name, tag.sourceline))


def _is_drake_tag(element):
    return isinstance(element.tag, str) and (element.prefix == 'drake' or 'drake' in
                                             (etree.QName(element).namespace or ''))


def read_urdf(path_or_xml, source=None):
    """Read a URDF (a file path, XML text or its bytes; ``source`` labels text in messages):
    a :class:`RobotRecord` (with its warnings and notes), or the first of all its errors raised
    as :class:`ModelError` (``.errors``: every error message)."""
    text, source = read_text(path_or_xml, source)
    reader = _Reader(source)
    try:
        root = _parse_xml(text, source, reader.notes)
    except URDFSyntaxError:
        if source.endswith('.xacro'):
            raise_errors([(URDFSyntaxError, _xacro_message(source, None))])
        raise
    xacro = _xacro_evidence(root)
    if xacro is not None or source.endswith('.xacro'):
        raise_errors([(URDFSyntaxError, _xacro_message(source, xacro))])
    if _local(root) != 'robot':
        raise URDFSyntaxError(f'{source}:{root.sourceline}: the root element is <{root.tag}>, '
                              'not <robot>')
    reader.unknown(root, 'robot', children_too=False)
    name = root.get('name')
    if not name:
        reader.warn(root, '<robot> has no name attribute (urdfdom requires one)',
                    URDFSyntaxError)
    version = root.get('version')
    if version is not None and version.strip() not in URDF_VERSIONS:
        reader.warn(root, f'<robot version="{version}">: URDF versions are '
                    f'{", ".join(URDF_VERSIONS)}; read as 1.0', URDFSyntaxError)

    links, joints, lines = {}, {}, {}
    constraint_elements, actuator_elements = [], []
    for element in root:
        tag = _local(element)
        if tag == 'constraint':
            constraint_elements.append(element)
            continue
        if tag in ('transmission', 'ros2_control'):
            actuator_elements.append(element)
            continue
        if tag not in ('link', 'joint'):
            if tag and tag not in IGNORED_TOP_LEVEL:
                reader.note(element, f'<{_shown(element)}> ignored (the dynamics do not read it)')
            continue
        element_name = element.get('name')
        if not element_name:
            reader.error(JointError if tag == 'joint' else TopologyError, element,
                         f'<{tag}> without a name')
            continue
        key = (tag, element_name)
        if key in lines:
            reader.error(TopologyError, element, f'duplicate {tag} name {element_name!r} '
                         f'(first at line {lines[key]})')
            continue
        lines[key] = element.sourceline
        if tag == 'link':
            links[element_name] = reader.link(element, element_name)
        else:
            record = reader.joint(element, element_name)
            if record is not None:
                joints[element_name] = record
    if not links:
        reader.errors.append((TopologyError, f'{source}: the robot has no <link>'))
    root_link, child_joints = _check_tree(reader, links, joints) if links else (None, {})
    _check_mimics(reader, joints)
    constraints = {}
    for element in constraint_elements:
        element_name = element.get('name')
        if not element_name:
            reader.error(TopologyError, element, '<constraint> without a name')
            continue
        if element_name in constraints or ('constraint', element_name) in lines:
            reader.error(TopologyError, element, f'duplicate constraint name {element_name!r} '
                         f'(first at line {lines[("constraint", element_name)]})')
            continue
        lines[('constraint', element_name)] = element.sourceline
        record = reader.constraint(element, element_name, links)
        if record is not None:
            constraints[element_name] = record
    actuated, seen = [], set()
    for element in actuator_elements:
        reader.actuated_joints(element, joints, seen, actuated)
    raise_errors(reader.errors)
    _measure_links(links, joints)
    return RobotRecord(name or '', source, root_link, links, joints, child_joints,
                       reader.warnings, reader.notes, constraints, actuated)


_XACRO_SUBSTITUTION = re.compile(r'\$\{[^}]*\}|\$\([^)]*\)')


def _xacro_evidence(root):
    """(line, what) of the first unexpanded xacro construct: an element in the xacro namespace
    (or with an undeclared xacro: prefix), or a ${...} or $(...) substitution in an attribute or
    text; None when there is none. (xacro's output keeps the xmlns:xacro declaration: that alone
    is no evidence, 38 of example-robot-data's loading URDFs carry it.)"""
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        if element.prefix == 'xacro' or 'xacro' in (etree.QName(element).namespace or ''):
            return element.sourceline, f'<{_shown(element)}>'
        for name, value in element.attrib.items():
            match = _XACRO_SUBSTITUTION.search(value)
            if match:
                return element.sourceline, f'{etree.QName(name).localname}="{value}"'
        match = _XACRO_SUBSTITUTION.search(element.text or '')
        if match:
            return element.sourceline, match.group(0)
    return None


def _xacro_message(source, evidence):
    """The error for a xacro source: what shows it, and the command that expands it."""
    named = source.endswith('.xacro')
    line = f':{evidence[0]}' if evidence else ''
    shown = source if named else 'robot.urdf.xacro'
    target = shown[:-len('.xacro')] if named else 'robot.urdf'
    if not target.endswith('.urdf'):
        target += '.urdf'
    why = ', '.join(([evidence[1]] if evidence else []) +
                    (['its name ends in .xacro'] if named else []))
    return (f'{source}{line}: a xacro source, not a URDF ({why}): expand it first: '
            f'`xacro {shown} > {target}` (xacro comes with ROS; or `pip install xacro`), '
            f'or `xacro {shown} | python -m rbd_ros inspect -`')


def _measure_links(links, joints):
    """Each link's extent (LinkRecord.size): the farthest of its centre of mass, the origins
    of its child joints and its collision shapes (their origin plus their largest dimension)
    from its frame."""
    for link in links.values():
        reach = [float(np.linalg.norm(link.com_xyz))]
        reach += [float(np.linalg.norm(shape.origin_xyz)) +
                  (max(shape.size) if shape.kind != 'mesh' and shape.size else 0.0)
                  for shape in link.collisions]
        link.size = max(reach)
    for joint in joints.values():
        parent = links[joint.parent]
        parent.size = max(parent.size, float(np.linalg.norm(joint.origin_xyz)))


def raise_errors(errors):
    """Raise the first of (ModelError subclass, message) pairs, its message counting the
    others; every message in the exception's ``.errors``."""
    if not errors:
        return
    kind, message = errors[0]
    if len(errors) > 1:
        message += (f' (and {len(errors) - 1} more error{"s" if len(errors) > 2 else ""}: '
                    f'`python -m rbd_ros inspect` lists them all)')
    error = kind(message)
    error.errors = [m for _, m in errors]
    raise error


def _check_tree(reader, links, joints):
    """Exactly one root, every joint between known links, each link the child of at most one
    joint, every link reachable from the root (else a cycle). Returns (root, child_joints);
    joints that break the tree are dropped after their error."""
    source = reader.source
    parent_joint = {}
    child_joints = {name: [] for name in links}
    for joint in list(joints.values()):
        where = f'{source}:{joint.line}: joint {joint.name!r}'
        missing = [f'{role} link {link!r}' for role, link in (('parent', joint.parent),
                                                               ('child', joint.child))
                   if link not in links]
        if missing:
            reader.errors.append((TopologyError, f'{where}: {" and ".join(missing)} does not '
                                  'exist'))
            del joints[joint.name]
            continue
        if joint.parent == joint.child:
            reader.errors.append((TopologyError, f'{where}: link {joint.child!r} is its own '
                                  'parent (cycle)'))
            del joints[joint.name]
            continue
        if joint.child in parent_joint:
            reader.errors.append((TopologyError, f'{where}: link {joint.child!r} is already the '
                                  f'child of joint {parent_joint[joint.child]!r} (a kinematic '
                                  'loop or a duplicate joint: a URDF stays a tree, and a loop is '
                                  'closed with a <constraint> element, see docs/core.md)'))
            del joints[joint.name]
            continue
        parent_joint[joint.child] = joint.name
        child_joints[joint.parent].append(joint.name)
    roots = [name for name in links if name not in parent_joint
             and (name not in reader.claimed_children or not reader.errors)]
    if not roots:
        reader.errors.append((TopologyError, f'{source}: no root link: every link is the child '
                              'of a joint (the joints form a cycle)'))
        return None, child_joints
    if len(roots) > 1:
        reader.errors.append((TopologyError, f'{source}: several root links (links that are no '
                              f'joint\'s child): {", ".join(repr(r) for r in roots)}; a URDF '
                              'must form one tree'))
    reached, stack = set(), [roots[0]]
    while stack:
        link = stack.pop()
        reached.add(link)
        stack.extend(joints[j].child for j in child_joints[link])
    unreached = [name for name in links if name not in reached and name not in roots[1:]]
    if unreached and len(roots) == 1 and not reader.errors:   # (else: a consequence)
        reader.errors.append((TopologyError, f'{source}: links '
                              f'{", ".join(repr(n) for n in unreached)} are not reachable from '
                              f'the root {roots[0]!r}: their joints form a cycle'))
    return roots[0], child_joints


def _check_mimics(reader, joints):
    """A mimic's leader must exist and the chain of leaders must end; a leader that cannot be
    followed (fixed, planar, floating) makes the mimic a warning and the joint independent."""
    for joint in joints.values():
        if joint.mimic is None:
            continue
        where = f'{reader.source}:{joint.line}: joint {joint.name!r}'
        seen, leader = [joint.name], joint.mimic[0]
        while leader is not None:
            if leader not in joints:
                # urdfdom never checks the leader; Pinocchio ignores <mimic> by default
                reader.warnings.append(ModelWarning(
                    f'{where}: mimics unknown joint {leader!r}: <mimic> ignored (the joint moves '
                    'on its own)' if len(seen) == 1 else
                    f'{where}: mimic chain reaches unknown joint {leader!r}: <mimic> ignored',
                    JointError, kinematic=True))
                joint.mimic = None
                break
            if leader in seen:
                reader.errors.append((JointError, f'{where}: mimic cycle '
                                      f'{" -> ".join(seen + [leader])}'))
                break
            seen.append(leader)
            if joints[leader].type not in MOVING_1DOF:
                reader.warnings.append(ModelWarning(
                    f'{where}: mimics {leader!r}, a {joints[leader].type} joint (only revolute, '
                    'continuous and prismatic joints can lead): <mimic> ignored', JointError,
                    kinematic=True))
                joint.mimic = None
                break
            mimic = joints[leader].mimic
            leader = mimic[0] if mimic is not None else None
