"""A robot description file as users have one: any path this process can read, read once (a
regular file, a pipe such as ``--urdf <(xacro robot.urdf.xacro)``, ``/dev/stdin``), and a
``*.xacro`` file expanded with xacro (ROS's macro language, ``pip install xacro``) when it is
importable. Without xacro the text is returned as it is, and the core refuses it with the
command that expands it. ROS-free: the nodes (``robot_description_file``, ``--urdf``),
bringup, the demo, ``inspect`` and ``analyze`` read their files here."""
from __future__ import annotations

import os
from typing import Callable

from rbd_ros.dynamics.urdf import read_text

class XacroError(ValueError):
    """xacro could not expand a description (the description's fault, not the file's)."""


#: what the label of an expanded description ends in (not ``.xacro``: the core refuses a
#: source of that name as unexpanded)
EXPANDED = ' (expanded by xacro)'


def read_description(path: str, say: Callable[[str], None] | None = None) -> tuple[str, str]:
    """(URDF text, label) of a description file. The label names it in messages: the path, or
    ``PATH (expanded by xacro)`` for a ``.xacro`` file that xacro expanded (``say`` gets one
    line saying so). ValueError in one line when the file cannot be read or xacro fails."""
    path = os.path.expanduser(str(path))
    if os.path.isdir(path):
        raise ValueError(f'{path}: is a directory, not a URDF file')
    try:
        with open(path, 'rb') as handle:      # once: a pipe has nothing left for a second read
            data = handle.read()
    except FileNotFoundError:
        raise ValueError(f'{path}: no such file') from None
    except OSError as exc:
        raise ValueError(f'{path}: {(exc.strerror or str(exc)).lower()}') from None
    text, _ = read_text(data, source=path)    # (in the encoding its XML declaration names)
    if not path.endswith('.xacro'):
        return text, path
    try:
        import xacro
    except ImportError:
        return text, path          # the core's refusal says how to expand it
    expanded = expand_xacro(xacro, text, path)
    if say is not None:
        say(f'{path}: a xacro file, expanded with xacro {_version()}')
    return expanded, path + EXPANDED


def expand_xacro(xacro, text: str, path: str) -> str:
    """xacro's output for the text of the file ``path`` (its includes relative to that file;
    ``$(find pkg)`` through the ament index). XacroError in one line when xacro fails."""
    import xml.parsers.expat
    try:
        xacro.init_stacks(os.path.abspath(path))
        doc = xacro.parse(text, path)
        xacro.process_doc(doc)
        return doc.toxml()
    except xml.parsers.expat.ExpatError as exc:
        raise XacroError(f'{path}: malformed XML (xacro): {exc}') from None
    except Exception as exc:   # noqa: BLE001 - xacro raises XacroException, NameError, ...
        message = ' '.join(str(exc).split()) or type(exc).__name__
        raise XacroError(f'{path}: xacro failed: {message}') from None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version('xacro')
    except PackageNotFoundError:
        return '(version unknown)'
