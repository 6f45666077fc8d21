"""`python -m rbd_ros inspect [URDF]`: what the dynamics core makes of a robot description.

Prints the kinematic tree, a DoF table (type, axis, limits), masses, the validation warnings
grouped by link and joint (the parser's noise, such as Gazebo tags, in one summary line;
``--verbose`` lists it), and the gravity torques, mass matrix and forward dynamics at a sample
pose. Exit status: 0 when the description loads (with or without warnings), 2 when it does not,
or, with ``--strict``, when it has warnings: the shape of ``check_urdf`` for CI.
"""
import argparse
import os
import re
import sys

import numpy as np

import rbd_ros.dynamics as rbd

DEFAULT_URDF = os.path.join(os.path.dirname(__file__), 'robots', 'rbd_arm7.urdf')


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


_SUBJECT = re.compile(r"^(?:(\d+):)?\s*(link|joint) '([^']+)'")


def write_grouped(messages, out, source):
    """Messages grouped by the link or joint they name (groups in order of first appearance,
    messages by line)."""
    groups = {}
    for message in messages:
        text = (message[len(source) + 1:] if message.startswith(source + ':') else message).lstrip()
        match = _SUBJECT.match(text)
        key = f'{match.group(2)} {match.group(3)!r}' if match else 'robot'
        line = int(match.group(1)) if match and match.group(1) else 0
        groups.setdefault(key, []).append(
            (line, text[match.end():].lstrip(': ') if match else text))
    for key, items in groups.items():
        out.write(f'  {key}\n')
        for line, item in sorted(items, key=lambda item: item[0]):
            out.write(f'    {f"line {line}: " if line else ""}{item}\n')


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


def report(model, out=sys.stdout, verbose=False):
    np.set_printoptions(precision=4, suppress=True, linewidth=120)
    w = out.write
    base = 'floating' if model.floating_base else 'fixed'
    w(f'robot {model.name!r} from {model.source}\n')
    w(f'  {base} base, nq={model.nq}, nv={model.nv}, {model.n_bodies} moving bodies, '
      f'{len(model.frame_names)} frames, moving mass {model.total_mass:.4f} kg, '
      f'gravity {model.gravity.tolist()}\n\nkinematic tree\n')
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
    w('\nlink masses\n')
    for name, mass in model.link_masses.items():
        w(f'  {name:<28}{mass:10.4f} kg\n')
    w(f'  {"total (all links)":<28}{sum(model.link_masses.values()):10.4f} kg\n')
    w('\nvalidation warnings\n')
    write_grouped(model.warnings, out, model.source)
    if not model.warnings:
        w('  none\n')
    write_notes(model.notes, out, verbose)
    q = sample_pose(model)
    v = np.zeros(model.nv)
    w(f'\nsample pose q = {q}\n')
    g = rbd.gravity_torques(model, q)
    w(f'\ngravity torques g(q) [N m or N]\n  {g}\n')
    w(f'\nmass matrix M(q)\n{rbd.mass_matrix(model, q)}\n')
    try:
        qdd = rbd.forward_dynamics(model, q, v, np.zeros(model.nv))
    except FloatingPointError as error:
        qdd = f'not defined: {error}'
    w(f'\nforward dynamics with zero torque, at rest: qdd [rad/s^2 or m/s^2]\n  {qdd}\n')
    com = rbd.center_of_mass(model, q)
    w(f'\ncentre of mass {com}, potential energy {rbd.potential_energy(model, q):.4f} J\n')


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m rbd_ros')
    sub = parser.add_subparsers(dest='command', required=True)
    inspect = sub.add_parser('inspect', help='print what rbd_ros makes of a URDF',
                             description=__doc__.split('\n\n')[1].replace('\n', ' '))
    inspect.add_argument('urdf', nargs='?', default=DEFAULT_URDF,
                         help='URDF file (default: the bundled rbd_arm7)')
    inspect.add_argument('--floating-base', action='store_true',
                         help='add a floating base (legged robots, humanoids)')
    inspect.add_argument('--strict', action='store_true',
                         help='refuse a description with warnings (exit status 2)')
    inspect.add_argument('--repair-inertia', action='store_true',
                         help='replace each inertia that is not physical by the nearest one')
    inspect.add_argument('--verbose', action='store_true',
                         help='list the parser notes (unknown tags and attributes)')
    sub.add_parser('analyze', add_help=False,
                   help='torque residuals, friction and payload from rosbag2 logs '
                   '(python -m rbd_ros analyze -h)')
    args = parser.parse_args(argv)
    if not os.path.exists(args.urdf) and not args.urdf.lstrip().startswith('<'):
        print(f'error: {args.urdf}: no such file', file=sys.stderr)
        return 2
    try:
        model = rbd.Model.from_urdf(args.urdf, floating_base=args.floating_base,
                                    strict=args.strict, repair_inertia=args.repair_inertia)
    except rbd.ModelError as error:
        errors = getattr(error, 'errors', None) or [str(error)]
        print(f'error: {args.urdf} does not load: {len(errors)} error'
              f'{"s" if len(errors) > 1 else ""}', file=sys.stderr)
        write_grouped(errors, sys.stderr, args.urdf)
        return 2
    report(model, verbose=args.verbose)
    return 0
