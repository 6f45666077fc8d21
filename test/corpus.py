"""The corpus of public robot descriptions: every URDF that PyPI's example-robot-data ships,
as published (found through its installed share directory)."""
import glob
import os
import sys

# robots that move their base: built with a floating base (the others with a fixed one)
FLOATING = ('a1', 'alex', 'alexander', 'anymal_b', 'anymal_c', 'b1', 'bolt', 'borinot',
            'centauro', 'g1', 'go1', 'go2', 'hector', 'hextilt', 'human', 'hyq', 'icub', 'iris',
            'laikago', 'quadruped', 'romeo', 'simple_humanoid', 'solo', 'talos')
# descriptions that are not a robot, refused by Pinocchio (urdfdom) and by us alike
NOT_A_ROBOT = {'ur_description/urdf/ur3.urdf': 'the robot has no <link>'}


def robots_directory():
    """example-robot-data's robots/ directory, or None when it is not installed."""
    for base in sys.path:
        pattern = os.path.join(base, 'cmeel.prefix', 'share', 'example-robot-data', 'robots')
        if os.path.isdir(pattern):
            return pattern
    return None


def corpus():
    """[(name relative to robots/, absolute path, floating base?)] of every shipped URDF."""
    root = robots_directory()
    if root is None:
        return []
    out = []
    for path in sorted(glob.glob(os.path.join(root, '*', '*', '*.urdf'))):
        name = os.path.relpath(path, root)
        package = name.split('/')[0].replace('_description', '').replace('_simple', '') \
            .replace('_data', '')
        out.append((name, path, package in FLOATING and 'left_arm' not in name))
    return out


CATEGORIES = (('moves no mass', 'massless joint'), ('inertia', 'inertia'),
              ('principal moments', 'inertia'),
              ('zero mass', 'inertia'), ('<inertial>', 'inertia'), ('mimic', 'mimic'),
              ('limit', 'limits'), ('<visual>', 'visual'), ('<collision>', 'collision'),
              ('no name', 'robot name'))


def category(warning):
    """What a model warning is about, in one word or two (for the README's summary)."""
    for words, label in CATEGORIES:
        if words in warning:
            return label
    return 'other'


def summary_rows():
    """README rows: | file | base | nq / nv | warnings by category | of every corpus URDF."""
    import collections

    import rbd_ros.dynamics as rbd
    rows = []
    for name, path, floating in corpus():
        if name in NOT_A_ROBOT:
            rows.append(f'| {name} | - | - | refused: {NOT_A_ROBOT[name]} (Pinocchio refuses it too) |')
            continue
        model = rbd.Model.from_urdf(path, floating_base=floating)
        counts = collections.Counter(category(w) for w in model.warnings)
        text = ', '.join(f'{label} {n}' for label, n in sorted(counts.items())) or 'none'
        rows.append(f'| {name} | {"floating" if floating else "fixed"} | {model.nq} / {model.nv} '
                    f'| {text} |')
    return rows


if __name__ == '__main__':     # python test/corpus.py: the README's table
    print('\n'.join(summary_rows()))
