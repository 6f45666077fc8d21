"""bringup: start any set of rbd_ros nodes in one process, on one executor, from one YAML file.

The equivalent of launch/rbd.launch.py and launch/sim.launch.py for machines without ROS's
``launch``. The YAML file is an ordinary ROS 2 parameters file (as given to ``--params-file``):
every node whose name has a section in it (``rbd_dynamics``, ``rbd_frames``, ``rbd_sim``) is
started, unless ``--nodes`` picks them.

    bringup [CONFIG.yaml] [--urdf PATH] [--floating-base] [--nodes sim,dynamics,frames]
            [--duration S] [--ros-args ...]

``--urdf`` gives every node the URDF file (its ``robot_description_file`` parameter; a pipe such
as ``<(xacro robot.urdf.xacro)`` is read once and given as ``robot_description``); without it,
the nodes take the YAML's value or the latched ``robot_description`` topic. ``--floating-base``
sets ``floating_base`` on the simulator and the dynamics node and connects the simulator's
``~/base_state`` to the dynamics node's (a legged robot or a mobile base; config/solo12.yaml
has the rest of such a set-up for the bundled Solo-12).
"""
from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any, Iterable, Mapping

import yaml

NODE_CLASSES = {
    'dynamics': ('rbd_ros.nodes.dynamics', 'DynamicsNode', 'rbd_dynamics'),
    'frames': ('rbd_ros.nodes.frames', 'FramesNode', 'rbd_frames'),
    'sim': ('rbd_ros.nodes.sim', 'SimNode', 'rbd_sim'),
}
#: the remapping that closes the loop (as in launch/sim.launch.py)
CLOSE_LOOP_REMAP = '~/effort_commands:=/rbd_dynamics/effort_commands'
#: with a floating base, the dynamics node reads the simulator's base state
BASE_STATE_REMAP = '~/base_state:=/rbd_sim/base_state'
#: start order: the simulator first, so that joint_states exist when the consumers come up
START_ORDER = ('sim', 'dynamics', 'frames')


def package_file(*parts: str) -> pathlib.Path:
    """A file shipped with rbd_ros: next to the sources (editable install, source tree), or in
    the package's share directory (colcon / pip install)."""
    here = pathlib.Path(__file__).resolve().parent
    for candidate in (here.joinpath(*parts), here.parent.joinpath(*parts)):
        if candidate.exists():
            return candidate
    try:
        from ament_index_python.packages import get_package_share_directory
        candidate = pathlib.Path(get_package_share_directory('rbd_ros')).joinpath(*parts)
        if candidate.exists():
            return candidate
    except Exception:   # noqa: BLE001 - no ament index
        pass
    prefix = pathlib.Path(sys.prefix) / 'share' / 'rbd_ros'
    return prefix.joinpath(*parts)


def default_urdf() -> pathlib.Path:
    """The bundled 7-DoF arm."""
    here = pathlib.Path(__file__).resolve().parent / 'robots' / 'rbd_arm7.urdf'
    return here if here.exists() else package_file('robots', 'rbd_arm7.urdf')


def default_config() -> pathlib.Path:
    return package_file('config', 'rbd.yaml')


def nodes_in_config(config: str | pathlib.Path | None) -> list[str]:
    """Keys of NODE_CLASSES whose node name has a section in the parameters file."""
    if config is None:
        return []
    data = yaml.safe_load(pathlib.Path(config).read_text()) or {}
    names = {str(k).strip('/').split('/')[-1] for k in data}
    return [key for key in START_ORDER if NODE_CLASSES[key][2] in names]


def create_nodes(which: Iterable[str], *, config=None, urdf_xml: str | None = None,
                 urdf_path: str | None = None,
                 overrides: Mapping[str, Mapping[str, Any]] | None = None, context=None,
                 namespace: str | None = None, floating_base: bool = False) -> list:
    """Instantiate the nodes ``which`` (keys of NODE_CLASSES) in ``context``, in START_ORDER.
    Parameters: the YAML ``config`` (a ROS parameters file), then ``urdf_xml`` as
    robot_description or ``urdf_path`` as robot_description_file, then ``overrides[key]``
    ({name: value}), later ones winning. With both
    sim and dynamics, the loop is closed: the simulator's ~/effort_commands is remapped to the
    dynamics node's (so ``command_source`` on rbd_dynamics drives the simulated robot).
    ``floating_base``: set on sim and dynamics. With both, the dynamics node's ~/base_state is
    the simulator's (used when floating_base is on, by this or by the config)."""
    import importlib

    from rclpy.parameter import Parameter

    which = set(which)
    nodes = []
    try:
        for key in sorted(which, key=START_ORDER.index):
            module, cls_name, _ = NODE_CLASSES[key]
            cls = getattr(importlib.import_module(module), cls_name)
            params = {}
            if urdf_xml is not None:
                params['robot_description'] = urdf_xml
            if urdf_path is not None:
                params['robot_description_file'] = str(urdf_path)
            if floating_base and key in ('sim', 'dynamics'):
                params['floating_base'] = True
            params.update((overrides or {}).get(key, {}))
            cli_args = ['--ros-args']
            if config:
                cli_args += ['--params-file', str(config)]
            if key == 'sim' and 'dynamics' in which:
                cli_args += ['-r', CLOSE_LOOP_REMAP]
            if key == 'dynamics' and 'sim' in which:
                cli_args += ['-r', BASE_STATE_REMAP]
            nodes.append(cls(context=context, namespace=namespace, cli_args=cli_args,
                             parameter_overrides=[Parameter(k, value=v)
                                                  for k, v in params.items()]))
    except Exception:
        for node in nodes:
            node.destroy_node()
        raise
    return nodes


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog='bringup', description=__doc__.split('\n\n')[0])
    parser.add_argument('config', nargs='?', default=None,
                        help='ROS 2 parameters file (default: the package\'s config/rbd.yaml)')
    parser.add_argument('--urdf', help='URDF file for robot_description ("bundled": the '
                        'bundled arm)')
    parser.add_argument('--floating-base', action='store_true',
                        help='the robot\'s root moves freely: floating_base on sim and dynamics, '
                        'the simulator\'s ~/base_state into the dynamics node')
    parser.add_argument('--nodes', help='comma-separated subset of sim,dynamics,frames '
                        '(default: the nodes with a section in the config)')
    parser.add_argument('--duration', type=float, default=0.0,
                        help='stop after this many seconds (default: run until Ctrl-C)')
    return parser.parse_args(argv)


def main(args: list[str] | None = None) -> int:
    from rclpy.utilities import remove_ros_args

    from rbd_ros.ros.node import run

    argv = sys.argv if args is None else ['bringup', *args]
    opts = parse_args(remove_ros_args(argv)[1:])
    config = opts.config or default_config()
    which = opts.nodes.split(',') if opts.nodes else nodes_in_config(config)
    unknown = [w for w in which if w not in NODE_CLASSES]
    if unknown or not which:
        print(f'bringup: nothing to start (unknown nodes {unknown}; choose from '
              f'{", ".join(START_ORDER)})', file=sys.stderr)
        return 2
    urdf_path = urdf_xml = None
    if opts.urdf:
        try:
            urdf_path, urdf_xml = urdf_option(opts.urdf)
        except ValueError as exc:
            print(f'bringup: --urdf {exc}', file=sys.stderr)
            return 2
    return run(lambda: create_nodes(which, config=config, urdf_path=urdf_path, urdf_xml=urdf_xml,
                                    floating_base=opts.floating_base),
               argv, name='bringup', duration=opts.duration)


def urdf_option(urdf: str) -> tuple[pathlib.Path | None, str | None]:
    """(path, text) for ``--urdf``: a regular file goes to every node by path (each reads it,
    expands a .xacro, and names the file in its messages); anything else readable, a pipe
    (``--urdf <(xacro robot.urdf.xacro)``) or /dev/stdin, is read once here and given as
    robot_description text, since the nodes cannot each read it. ValueError in one line."""
    from rbd_ros.description import read_description
    path = default_urdf() if urdf == 'bundled' else pathlib.Path(urdf).expanduser()
    if path.is_file():
        return path, None
    return None, read_description(str(path))[0]


if __name__ == '__main__':
    raise SystemExit(main())
