"""`python -m rbd_ros inspect [URDF ...]`: what the dynamics core makes of robot descriptions,
and a gate for CI (`--strict`).

One file: the kinematic tree, the degrees of freedom, the masses, the validation warnings grouped
by link and joint, the dynamics at a sample pose, then a one-line verdict. Several files: the
verdict of each. The verdicts are the core's: a file is read and built as
`Model.from_urdf` does (`read_urdf`, then `Model`), and `--strict` refuses exactly the warnings
`refused_by_strict` names, the ones for which `Model.from_urdf(..., strict=...)` raises. Each
error is printed once, on standard output (the report's stream). Files are read as the nodes
read them (rbd_ros/description.py: pipes, a .xacro expanded when xacro is importable). The
help text (DESCRIPTION, EXIT_STATUS) is plain text: argparse prints it as written.
"""
import argparse
import os
import re
import sys

import numpy as np

import rbd_ros.dynamics as rbd
from rbd_ros.description import XacroError, read_description
from rbd_ros.dynamics.urdf import read_urdf, refused_by_strict
from rbd_ros.stdout import reader_left

DEFAULT_URDF = os.path.join(os.path.dirname(__file__), 'robots', 'rbd_arm7.urdf')

# exit statuses; with several files, the highest of theirs
LOADS = 0            # loads (with --strict: no warning --strict refuses)
STRICT_REFUSES = 1   # loads, but --strict refuses some of its warnings
DOES_NOT_LOAD = 2    # errors: no model can be built
USAGE = 64           # EX_USAGE (sysexits.h); argparse's own 2 would read as "does not load"
NO_INPUT = 66        # EX_NOINPUT: a file that cannot be read

DESCRIPTION = """\
Print what rbd_ros makes of a robot description: the kinematic tree, the degrees
of freedom (type, axis, limits), the masses, the validation warnings grouped by
link and joint (the parser's noise, such as Gazebo tags, in one summary line;
--verbose lists it), the gravity torques, mass matrix and forward dynamics at a
sample pose, and a one-line verdict. With several files, the verdict of each
(and what makes it fail). As a CI gate:

  python -m rbd_ros inspect --strict robots/*.urdf
  xacro robot.urdf.xacro | python -m rbd_ros inspect --strict -
"""

EXIT_STATUS = """\
exit status (with several files, the highest of theirs):
  0   loads (with --strict: and has no warning that --strict refuses)
  1   loads, but --strict refuses some of its warnings (only with --strict)
  2   does not load: errors (malformed XML, not one tree, a xacro source, ...)
  64  usage error (an unknown option, a missing value, - given twice)
  66  cannot be read (no such file, a directory, no permission)

--strict refuses every warning except the harmless ones, which say "harmless"
in their text: a broken <visual> or material (display only), a link whose own
inertia is not physical while the body it forms with the links welded to it is
(only that body enters the dynamics), an inertia --repair-inertia repaired.
An inertia that is zero up to rounding is a point mass: physical, no warning.
--strict kinematics refuses only what bears on frame poses (a <mimic> that is
ignored), as frames_node's strict mode. Model.from_urdf(path, strict=True or
'kinematics', repair_inertia=...) raises for exactly the warnings refused here.
"""


def sample_pose(model):
    """A non-trivial pose inside the limits: 30% of the way from the middle to the upper limit
    (0.5 rad for unlimited joints), identity orientations."""
    q = model.neutral()
    for info in model.joints:
        if info.q_index is None or info.type in ('floating', 'planar'):
            continue
        if np.isfinite(info.lower) and np.isfinite(info.upper):
            q[info.q_index] = (info.lower + info.upper) / 2 + 0.3 * (info.upper - info.lower) / 2
        else:
            q[info.q_index] = 0.5
    return q


def _tree_lines(model):
    children = {}
    for info in model.joints:
        children.setdefault(info.parent, []).append(info)
    lines = []

    def walk(link, depth):
        for info in children.get(link, []):
            label = info.type + (f', mimics {info.mimic[0]}' if info.mimic else '')
            lines.append(f'{"  " * depth}{info.parent} --[{info.name}: {label}]--> {info.child}')
            walk(info.child, depth + 1)
    if model.floating_base:
        lines.append(f'world --[{rbd.FLOATING_BASE_JOINT}: floating base]--> {model.root_link}')
    walk(model.root_link, 1 if model.floating_base else 0)
    return lines


def _fmt(x):
    return '-' if x is None else ('inf' if x == np.inf else '-inf' if x == -np.inf else f'{x:.4g}')


_SUBJECT = re.compile(r"^(?:(\d+):)?(?:\d+:)?\s*(?:(link|joint) '([^']+)')?")


def write_grouped(messages, out, source, indent='  '):
    """Messages grouped by the link or joint they name (groups in order of first appearance,
    messages by line)."""
    groups = {}
    for message in messages:
        text = (message[len(source) + 1:] if message.startswith(source + ':') else message).lstrip()
        match = _SUBJECT.match(text)      # (always matches: every part is optional)
        key = f'{match.group(2)} {match.group(3)!r}' if match.group(2) else 'robot'
        line = int(match.group(1)) if match.group(1) else 0
        groups.setdefault(key, []).append((line, text[match.end():].lstrip(': ')))
    for key, items in groups.items():
        out.write(f'{indent}{key}\n')
        for line, item in sorted(items, key=lambda item: item[0]):
            out.write(f'{indent}  {f"line {line}: " if line else ""}{item}\n')


def write_notes(notes, out, verbose):
    """The parser's noise: one summary line, or every note with --verbose."""
    if not notes:
        return
    if verbose:
        out.write(f'\nparser notes ({len(notes)}: what URDF does not define or the dynamics do '
                  'not read)\n')
        for note in notes:
            out.write(f'  {note}\n')
        return
    tags = sorted({m.group(1) for m in (re.search(r'<([^>\s]+)>', n) for n in notes) if m})
    shown = ', '.join(tags[:6]) + (', ...' if len(tags) > 6 else '')
    out.write(f'\nparser notes: {len(notes)} elements or attributes ignored'
              f'{f" ({shown})" if shown else ""}; --verbose lists them\n')


def report(model, out=sys.stdout, verbose=False, hint=None):
    np.set_printoptions(precision=4, suppress=True, linewidth=120)
    w = out.write
    base = 'floating' if model.floating_base else 'fixed'
    w(f'robot {model.name!r} from {model.source}\n')
    w(f'  {base} base, nq={model.nq}, nv={model.nv}, {model.n_bodies} moving bodies, '
      f'{len(model.frame_names)} frames, moving mass {model.total_mass:.4f} kg, '
      f'gravity {model.gravity.tolist()}\n')
    if hint:
        w(f'  {hint}\n')
    w('\nkinematic tree\n')
    for line in _tree_lines(model):
        w(f'  {line}\n')
    w('\ndegrees of freedom (q/v order)\n')
    header = f'  {"joint":<24}{"type":<12}{"q":>3}{"v":>4}  {"axis":<22}{"lower":>9}{"upper":>9}' \
             f'{"effort":>9}{"velocity":>9}{"damping":>9}{"friction":>9}\n'
    w(header)
    for info in model.joints:
        if info.type == 'fixed':
            continue
        axis = ''
        if info.type in ('revolute', 'continuous', 'prismatic', 'planar'):
            axis = np.array2string(np.array(info.axis), precision=3, separator=' ')
        kind = 'mimic' if info.mimic else info.type
        w(f'  {info.name:<24}{kind:<12}{_fmt(info.q_index):>3}{_fmt(info.v_index):>4}  {axis:<22}'
          f'{_fmt(info.lower):>9}{_fmt(info.upper):>9}{_fmt(info.effort):>9}'
          f'{_fmt(info.velocity):>9}{_fmt(info.damping):>9}{_fmt(info.friction):>9}\n')
    closed, loops_closed = _loop_lines(model, w)
    w('\nlink masses\n')
    width = max([28, *(len(name) + 2 for name in model.link_masses)])   # (long names align too)
    for name, mass in model.link_masses.items():
        w(f'  {name:<{width}}{mass:10.4f} kg\n')
    w(f'  {"total (all links)":<{width}}{sum(model.link_masses.values()):10.4f} kg\n')
    if model.floating_base:
        _contact_lines(model, w)
    harmless = sum(1 for warning in model.warnings if warning.harmless)
    w('\nvalidation warnings' + (f' ({len(model.warnings)}, {harmless} of them harmless: '
                                  '--strict lets those pass)' if harmless else '') + '\n')
    write_grouped(model.warnings, out, model.source)
    if not model.warnings:
        w('  none\n')
    write_notes(model.notes, out, verbose)
    q = sample_pose(model) if closed is None else closed
    v = np.zeros(model.nv)
    loops = bool(model.constraint_names)
    w(f'\nsample pose q = {q}' + (' (the loops closed)' if loops_closed else
                                  ' (the loops open: they do not close here; the numbers below '
                                  'are the tree\'s, the loops cut)' if loops else '') + '\n')
    g = rbd.gravity_torques(model, q)
    w(f'\ngravity torques g(q) [N m or N]' + (' of the tree (the loops cut)' if loops else '')
      + f'\n  {g}\n')
    if loops_closed and model.actuated_joints:
        try:
            u = rbd.constrained_inverse_dynamics(model, q, v, v)
        except ValueError as error:
            u = f'not defined: {error}'
        w(f'\ngravity compensation at the actuated joints (the closed system) [N m or N]\n'
          f'  {u}\n')
    w(f'\nmass matrix M(q)\n{rbd.mass_matrix(model, q)}\n')
    try:
        qdd = (rbd.constrained_forward_dynamics(model, q, v, v) if loops_closed else
               rbd.forward_dynamics(model, q, v, v))
    except FloatingPointError as error:
        qdd = f'not defined: {error}'
    w(f'\nforward dynamics with zero torque, at rest' + (', loops closed' if loops_closed else
                                                        ', the loops cut' if loops else '') +
      f': qdd [rad/s^2 or m/s^2]\n  {qdd}\n')
    com = rbd.center_of_mass(model, q)
    w(f'\ncentre of mass {com}, potential energy {rbd.potential_energy(model, q):.4f} J\n')


def _contact_lines(model, w):
    """Where the simulator (Simulator, sim_node) lets a floating-base robot touch the ground:
    the points its <collision> shapes give, and the links whose meshes give none (a published
    humanoid collides through meshes but for its feet: fallen, it sinks up to them)."""
    from rbd_ros.simulation.contact import candidates
    found, _ = candidates(model, [], True)
    links = sorted({c.link for c in found}, key=list(model.link_masses).index)
    w('\nground contact (Simulator, sim_node: from the <collision> shapes)\n')
    if found:
        w(f'  {len(found)} points on {len(links)} links: {", ".join(links[:8])}'
          f'{", ..." if len(links) > 8 else ""}\n')
    else:
        w('  none: it falls through the ground unless contact_points "link x y z radius" give '
          'it some (its feet)\n')
    meshed = [link for link in model.frame_names
              if any(shape.kind == 'mesh' for shape in model.link_collisions.get(link, ()))]
    if meshed:
        w(f'  no contact from meshes: {len(meshed)} links ({", ".join(meshed[:6])}'
          f'{", ..." if len(meshed) > 6 else ""}); contact_points "link x y z radius" adds '
          'points where they should touch\n')


def _loop_lines(model, w):
    """The actuated joints and the closed loops (<constraint>), with the closed system's
    degrees of freedom (tree DoF minus the rank of K at the neutral pose, closed first).
    Returns (a closed sample pose, True): the neutral pose closed, its actuated joints moved to
    the sample pose's and the loops closed again (close_loops walks them there on the neutral
    pose's branch); the neutral pose closed when they do not close there. (the neutral pose,
    False) when the loops do not close even there; (None, False) for a tree."""
    if model.actuated_joints:
        w(f'\nactuated joints ({len(model.actuated_joints)}, named by <transmission> or '
          f'<ros2_control>): {", ".join(model.actuated_joints)}\n')
    if not model.constraint_names:
        return None, False
    w(f'\nclosed loops ({len(model.constraint_names)} <constraint>, {model.constraint_rows} '
      'rows)\n')
    for info in model.constraints:
        w(f'  {info.name:<24}{info.type:<10}{info.parent} -> {info.child}, rows {info.row}-'
          f'{info.row + info.rows - 1}\n')
    try:
        dof = rbd.mobility(model)
        w(f'  closed system: {dof} degree{"s" if dof != 1 else ""} of freedom ({model.nv} of the '
          f'tree minus the rank {model.nv - dof} of the constraint Jacobian at the neutral '
          'pose, closed)\n')
        neutral = rbd.close_loops(model, model.q_neutral, [])
    except ValueError as error:
        w(f'  closed system: degrees of freedom unknown: the loops do not close from the '
          f'neutral pose ({error})\n')
        return model.neutral(), False
    q, sample = neutral.copy(), sample_pose(model)
    index = [k for name in model.actuated_joints
             for k in range(model.joint[name].q_index,
                            model.joint[name].q_index + model.joint[name].nq)]
    q[index] = sample[index]
    try:
        return rbd.close_loops(model, q, model.actuated_joints, start=neutral), True
    except ValueError:
        return neutral, True


def _kind(warning):
    """What a warning is about, in a word or two (for the verdict's counts)."""
    for words, kind in (('<visual>', 'visual'), ('<collision>', 'collision'),
                        ('moves no mass', 'massless joint'), ('mimic', 'mimic'),
                        ('inertia', 'inertia'), ('principal moments', 'inertia'),
                        ('zero mass', 'inertia'), ('limit', 'limits')):
        if words in warning:
            return kind
    return 'other'


def _counts(warnings):
    counts = {}
    for warning in warnings:
        counts[_kind(warning)] = counts.get(_kind(warning), 0) + 1
    return ', '.join(f'{kind} {n}' for kind, n in sorted(counts.items()))


_FOOT_WORDS = {'foot', 'feet', 'toe', 'toes', 'ankle', 'sole', 'heel'}
_LEG_WORDS = _FOOT_WORDS | {'leg', 'knee', 'shin', 'shank', 'calf', 'thigh', 'hip'}
_WORDS = re.compile(r'[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+')   # LF_FOOT, l_ankle_1, LAnkle


def looks_legged(model):
    """When the base is fixed and two or more chains from the root are legs, the first link of
    each leg, else []. A link is part of a leg when a word of its name is foot, feet, toe(s),
    ankle, sole, heel, knee, shin, shank, calf, thigh, hip or ends in leg (LF_FOOT, l_ankle_1,
    LAnkle, FL_upperleg); a leg starts at the first such link of a chain, and carries more
    links or is a foot itself (a hip rotor welded to the trunk is no leg)."""
    if model.floating_base or any(info.type == 'floating' for info in model.joints):
        return []
    parent = {info.child: info.parent for info in model.joints}
    has_children = set(parent.values())

    def words(link):
        return [word.lower() for word in _WORDS.findall(link)]

    def leglike(link):
        return any(word in _LEG_WORDS or word.endswith('leg') for word in words(link))

    def starts_a_leg(link):
        if not leglike(link) or not (link in has_children or
                                     any(word in _FOOT_WORDS for word in words(link))):
            return False
        while link in parent:
            link = parent[link]
            if leglike(link):
                return False
        return True
    legs = [link for link in model.frame_names if starts_a_leg(link)]
    return legs if len(legs) >= 2 else []


def _hint(model, legs):
    shown = ', '.join(legs[:4]) + (', ...' if len(legs) > 4 else '')
    return (f'looks legged ({len(legs)} legs from the root: {shown}) but is inspected with a '
            f'fixed base (its root link {model.root_link!r} welded to the world): add '
            '--floating-base')


class _Output:
    """A stream that goes quiet when its reader leaves (`inspect a.urdf | grep -q a`): the
    remaining files are still judged, and the exit status stays their verdict."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        self._try('write', text)

    def flush(self):
        self._try('flush')

    def _try(self, method, *args):
        if self.stream is None:
            return
        try:
            getattr(self.stream, method)(*args)
        except BrokenPipeError:
            reader_left(self.stream)   # what is still buffered goes to /dev/null at exit
            self.stream = None


def _read(name):
    """(bytes or XML text, label) of a file name (any readable path, a pipe included; a .xacro
    file expanded when xacro is importable: rbd_ros/description.py), '-' (standard input) or
    URDF XML text. ValueError when a file cannot be read, XacroError when xacro fails."""
    if name == '-':
        return sys.stdin.buffer.read(), '<stdin>'
    if not os.path.exists(name) and name.lstrip('\ufeff \t\r\n').startswith('<'):
        return name, '<robot_description>'
    return read_description(name)


def _without_source(message, source):
    """An error's text after its ``source:line:``, with 'line N: ' for the line."""
    text = message[len(source) + 1:] if message.startswith(source + ':') else message
    match = re.match(r'(\d+):(?:\d+:)?\s*', text)
    return f'line {match.group(1)}: {text[match.end():]}' if match else text.lstrip()


def inspect_file(name, args, strict, out, single):
    """Judge one description and print its report (``single``) and verdict, each error once;
    its exit status."""
    label = '<stdin>' if name == '-' else name
    try:
        data, label = _read(name)
        # Model.from_urdf's two steps, with the source's label (<stdin>) for the messages
        model = rbd.Model(read_urdf(data, source=label), floating_base=args.floating_base,
                          repair_inertia=args.repair_inertia)
    except XacroError as error:
        out.write(f'{label}: does not load: {_without_source(str(error), label)}\n')
        return DOES_NOT_LOAD
    except ValueError as error:
        if not isinstance(error, rbd.ModelError):
            out.write(f'{label}: cannot be read: {_without_source(str(error), label)}\n')
            return NO_INPUT
        errors = getattr(error, 'errors', None) or [str(error)]
        first = _without_source(errors[0], label)
        if len(errors) == 1:
            out.write(f'{label}: does not load: {first}\n')
        elif single:
            out.write(f'errors ({len(errors)})\n')
            write_grouped(errors, out, label)
            out.write(f'{label}: does not load: {len(errors)} errors (listed above)\n')
        else:
            out.write(f'{label}: does not load: {len(errors)} errors, the first: {first} '
                      f'(`python -m rbd_ros inspect {name}` lists them)\n')
        return DOES_NOT_LOAD
    legs = [] if args.floating_base else looks_legged(model)
    if single:
        report(model, out, verbose=args.verbose,
               hint=f'hint: {_hint(model, legs)}' if legs else None)
    refused = refused_by_strict(model.warnings, strict)   # what from_urdf(strict=) raises for
    listed = 'listed above' if single else f'`python -m rbd_ros inspect {name}` lists them'
    hint = f' [hint: {_hint(model, legs)}]' if legs and not single else ''
    out.write(f'{label}: {verdict(model, strict, refused, listed)}{hint}\n')
    return STRICT_REFUSES if refused else LOADS


def verdict(model, strict, refused, listed):
    """The verdict on a model that loads, in a line: what --strict refuses (``refused``) or
    what its warnings are."""
    warnings = model.warnings
    base = f'{"floating" if model.floating_base else "fixed"} base, nq {model.nq}, nv {model.nv}'
    mode = ' kinematics' if strict == 'kinematics' else ''
    many = 's' if len(warnings) > 1 else ''
    if refused:
        bears = 'bear on kinematics' if mode else 'are not harmless'
        return (f'refused by --strict{mode}: {len(refused)} of its {len(warnings)} warning{many} '
                f'{bears} ({_counts(refused)}; {listed}); it loads without --strict ({base})')
    if not warnings:
        return f'loads ({base}; no warnings)'
    if all(warning.harmless for warning in warnings):
        judged = 'all harmless'
    elif strict:
        judged = f'none that --strict{mode} refuses'
    else:
        judged = f'--strict would refuse {len(refused_by_strict(warnings, True))}'
    return f'loads ({base}; {len(warnings)} warning{many}, {judged}: {_counts(warnings)})'


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors exit 64 (EX_USAGE), not 2 (here: does not load)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(USAGE, f'{self.prog}: error: {message}\n')


def _parsers():
    top = _Parser(prog='python -m rbd_ros')
    sub = top.add_subparsers(dest='command', required=True)
    inspect = sub.add_parser(
        'inspect', help='what rbd_ros makes of URDF files, a gate for CI (--strict)',
        description=DESCRIPTION, epilog=EXIT_STATUS, allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    inspect.add_argument('urdf', nargs='*', metavar='URDF',
                         help='URDF files; - reads one from standard input (default: the '
                         'bundled rbd_arm7)')
    inspect.add_argument('--floating-base', action='store_true',
                         help='add a floating base (legged robots, humanoids, flying robots)')
    inspect.add_argument('--strict', nargs='?', const='all', choices=('all', 'kinematics'),
                         metavar='kinematics',
                         help='exit status 1 for a description that loads with warnings that '
                         'are not harmless; --strict kinematics: only for those that bear on '
                         'frame poses')
    inspect.add_argument('--repair-inertia', action='store_true',
                         help='replace each inertia that is not physical by the nearest one '
                         '(a repaired inertia passes --strict)')
    inspect.add_argument('--verbose', action='store_true',
                         help='list the parser notes (unknown tags and attributes)')
    sub.add_parser('analyze', add_help=False,
                   help='torque residuals, friction and payload from rosbag2 logs '
                   '(python -m rbd_ros analyze -h)')
    # (dispatched by rbd_ros/__main__.py to ros_cli.py before this parser: listed for --help)
    for name, text in (('list', 'the ROS graph: nodes, topics, services'),
                       ('param', 'list, get, set or dump a node\'s parameters (ros2 param)'),
                       ('call', 'call a service (ros2 service call)'),
                       ('echo', 'print a topic\'s messages (ros2 topic echo)')):
        sub.add_parser(name, add_help=False, help=f'{text}; python -m rbd_ros {name} -h')
    return top, inspect


def _strict_words(argv):
    """A bare --strict means all: so that `--strict robot.urdf` does not take the file for
    --strict's value (only `--strict kinematics` or `--strict all` give one)."""
    out = []
    for i, word in enumerate(argv):
        follows = argv[i + 1] if i + 1 < len(argv) else None
        out.append('--strict=all' if word == '--strict' and follows not in ('all', 'kinematics')
                   else word)
    return out


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    top, inspect = _parsers()
    if argv[:1] == ['analyze']:
        from rbd_ros.analysis.cli import main as analyze
        return analyze(argv[1:])
    if argv[:1] != ['inspect']:
        top.parse_args(argv)     # --help, or a usage error (exit status 64)
    args = inspect.parse_intermixed_args(_strict_words(argv[1:]))
    files = args.urdf or [DEFAULT_URDF]
    if files.count('-') > 1:
        inspect.error('- (standard input) can be given once')
    strict = {None: False, 'all': True, 'kinematics': 'kinematics'}[args.strict]
    out = _Output(sys.stdout)
    status = LOADS
    for name in files:
        status = max(status, inspect_file(name, args, strict, out, len(files) == 1))
    out.flush()
    return status
