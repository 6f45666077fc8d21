"""Description files as users have them (rbd_ros/description.py, issue 32): any readable path,
read once, so that a pipe (`--urdf <(xacro robot.urdf.xacro)`) or a FIFO loads; a .xacro file
expanded with xacro when it is importable, else the core's refusal naming the command that
expands it; load_robot never reads the file a second time."""
import os
import pathlib
import sys
import threading

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from rbd_ros.description import EXPANDED, XacroError, read_description
from rbd_ros.ros.robot import load_robot

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARM_PATH = ROOT / 'rbd_ros' / 'robots' / 'rbd_arm7.urdf'
ARM = ARM_PATH.read_bytes()

XACRO = '''<?xml version="1.0"?>
<robot name="xarm" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:include filename="parts/link.xacro"/>
  <xacro:property name="length" value="0.5"/>
  <link name="base"/>
  <xacro:arm_link name="upper" mass="${2 * 1.5}"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0 0 ${length}"/><axis xyz="0 1 0"/>
    <limit lower="${-pi / 2}" upper="${pi / 2}" effort="10" velocity="1"/>
  </joint>
</robot>
'''
PART = '''<robot xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:macro name="arm_link" params="name mass">
    <link name="${name}">
      <inertial><origin xyz="0.25 0 0"/><mass value="${mass}"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    </link>
  </xacro:macro>
</robot>
'''
#: what xacro makes of XACRO, written by hand
EXPANDED_BY_HAND = '''<robot name="xarm">
  <link name="base"/>
  <link name="upper">
    <inertial><origin xyz="0.25 0 0"/><mass value="3.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.5"/><axis xyz="0 1 0"/>
    <limit lower="-1.5707963267948966" upper="1.5707963267948966" effort="10" velocity="1"/>
  </joint>
</robot>
'''


def xacro_files(tmp_path):
    (tmp_path / 'parts').mkdir()
    (tmp_path / 'parts' / 'link.xacro').write_text(PART)
    path = tmp_path / 'xarm.urdf.xacro'
    path.write_text(XACRO)
    return path


def pipe_path(data: bytes) -> str:
    """A /dev/fd path of a pipe a thread writes ``data`` into: what `<(cat x.urdf)` gives."""
    read, write = os.pipe()

    def feed():
        with os.fdopen(write, 'wb') as handle:
            handle.write(data)
    threading.Thread(target=feed, daemon=True).start()
    return f'/dev/fd/{read}'


def test_a_pipe_is_read_once_and_loads():
    path = pipe_path(ARM)
    try:
        text, label = read_description(path)
        assert label == path and text == ARM.decode()
        # load_robot does not read the path again (it did: "Document is empty")
        robot = load_robot(text, path=label)
    finally:
        os.close(int(path.rsplit('/', 1)[1]))
    assert robot.model.name == 'rbd_arm7' and robot.model.source == path
    assert robot.nq == 7


def test_a_fifo_loads(tmp_path):
    fifo = tmp_path / 'robot.urdf'
    os.mkfifo(fifo)

    def feed():
        with open(fifo, 'wb') as handle:
            handle.write(ARM)
    threading.Thread(target=feed, daemon=True).start()
    text, label = read_description(str(fifo))
    assert load_robot(text, path=label).model.name == 'rbd_arm7'


def test_what_cannot_be_read_is_one_line(tmp_path):
    for path, words in ((tmp_path / 'nope.urdf', 'no such file'),
                        (tmp_path, 'is a directory, not a URDF file')):
        with pytest.raises(ValueError) as caught:
            read_description(str(path))
        assert str(caught.value) == f'{path}: {words}'
    empty = tmp_path / 'empty.urdf'
    empty.write_text('')
    text, label = read_description(str(empty))
    with pytest.raises(ValueError, match=f'^{empty}: the robot description is empty$'):
        load_robot(text, path=label)


def test_a_xacro_file_is_expanded_with_xacro(tmp_path):
    pytest.importorskip('xacro')
    lines = []
    text, label = read_description(str(xacro_files(tmp_path)), say=lines.append)
    assert label == f'{tmp_path / "xarm.urdf.xacro"}{EXPANDED}'
    assert len(lines) == 1 and lines[0].startswith(f'{tmp_path / "xarm.urdf.xacro"}: a xacro '
                                                   'file, expanded with xacro ')
    robot = load_robot(text, path=label)
    by_hand = rbd.Model.from_urdf(EXPANDED_BY_HAND)
    assert robot.model.source == label and robot.joint_names == ('shoulder',)
    assert robot.model.total_mass == by_hand.total_mass == 3.0
    assert robot.upper[0] == pytest.approx(np.pi / 2, abs=1e-15)
    q = np.array([0.3])
    assert np.allclose(rbd.gravity_torques(robot.model, q), rbd.gravity_torques(by_hand, q),
                       rtol=0, atol=1e-15)
    assert np.allclose(rbd.mass_matrix(robot.model, q), rbd.mass_matrix(by_hand, q),
                       rtol=0, atol=1e-15)


def test_a_xacro_error_is_one_line(tmp_path):
    pytest.importorskip('xacro')
    path = tmp_path / 'broken.urdf.xacro'
    path.write_text('<robot name="b" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                    '<link name="${nowhere}"/></robot>')
    with pytest.raises(XacroError) as caught:
        read_description(str(path))
    message = str(caught.value)
    assert message.startswith(f'{path}: xacro failed: ') and 'nowhere' in message
    assert '\n' not in message


def test_without_xacro_a_xacro_file_gets_the_command_that_expands_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'xacro', None)      # `import xacro` fails
    path = xacro_files(tmp_path)
    lines = []
    text, label = read_description(str(path), say=lines.append)
    assert label == str(path) and text == XACRO and lines == []
    with pytest.raises(rbd.ModelError, match=r'a xacro source, not a URDF .*expand it first: '
                       f'`xacro {path} > {str(path)[:-len(".xacro")]}`'):
        load_robot(text, path=label)
