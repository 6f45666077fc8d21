"""`python -m rbd_ros inspect [URDF]`: what the dynamics core makes of a robot description.

Prints the kinematic tree, a DoF table (type, axis, limits), masses, validation warnings,
and the gravity torques, mass matrix and forward dynamics at a sample pose.
"""
import argparse
import os
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


def report(model, out=sys.stdout):
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
    for message in model.warnings or ['none']:
        w(f'  {message}\n')
    q = sample_pose(model)
    v = np.zeros(model.nv)
    w(f'\nsample pose q = {q}\n')
    g = rbd.gravity_torques(model, q)
    w(f'\ngravity torques g(q) [N m or N]\n  {g}\n')
    w(f'\nmass matrix M(q)\n{rbd.mass_matrix(model, q)}\n')
    qdd = rbd.forward_dynamics(model, q, v, np.zeros(model.nv))
    w(f'\nforward dynamics with zero torque, at rest: qdd [rad/s^2 or m/s^2]\n  {qdd}\n')
    com = rbd.center_of_mass(model, q)
    w(f'\ncentre of mass {com}, potential energy {rbd.potential_energy(model, q):.4f} J\n')


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m rbd_ros')
    sub = parser.add_subparsers(dest='command', required=True)
    inspect = sub.add_parser('inspect', help='print what rbd_ros makes of a URDF')
    inspect.add_argument('urdf', nargs='?', default=DEFAULT_URDF,
                         help='URDF file (default: the bundled rbd_arm7)')
    inspect.add_argument('--floating-base', action='store_true')
    args = parser.parse_args(argv)
    try:
        model = rbd.Model.from_urdf(args.urdf, floating_base=args.floating_base)
    except rbd.ModelError as error:
        print(f'error: {error}', file=sys.stderr)
        return 2
    report(model)
    return 0
