"""`python -m rbd_ros inspect` on the bundled arm, on another URDF, and on a broken one."""
import os
import subprocess
import sys


import rbd_ros.dynamics as rbd
from rbd_ros.inspect_model import DEFAULT_URDF, sample_pose

ROBOTS = os.path.join(os.path.dirname(__file__), 'data', 'robots')


def run(*args):
    return subprocess.run([sys.executable, '-m', 'rbd_ros', 'inspect', *args],
                          capture_output=True, text=True, timeout=300)


def test_inspect_default_robot_prints_every_section():
    done = run()
    assert done.returncode == 0, done.stderr
    for section in ('kinematic tree', 'degrees of freedom', 'link masses', 'validation warnings',
                    'gravity torques', 'mass matrix', 'forward dynamics'):
        assert section in done.stdout
    model = rbd.Model.from_urdf(DEFAULT_URDF)
    for name in model.joint_names:
        assert name in done.stdout
    # the printed gravity torques are the core's at the printed sample pose
    g = rbd.gravity_torques(model, sample_pose(model))
    assert f'{g[1]:.4f}' in done.stdout


def test_inspect_any_urdf_with_floating_base():
    done = run(os.path.join(ROBOTS, 'solo12.urdf'), '--floating-base')
    assert done.returncode == 0, done.stderr
    assert 'floating base, nq=19, nv=18' in done.stdout


def test_inspect_reports_model_errors(tmp_path):
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="x"><link name="a"/><joint name="j" type="ball">'
                   '<parent link="a"/><child link="b"/></joint><link name="b"/></robot>')
    done = run(str(bad))
    assert done.returncode == 2
    assert "joint 'j'" in done.stderr and "unknown type 'ball'" in done.stderr


DOUBTFUL = '''<?xml version="1.0"?>
<robot name="doubtful">
  <link name="base"/>
  <link name="a">
    <inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.5"/></inertial>
    <visual><geometry><mesh filename="a.stl" scale="2"/></geometry></visual>
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="0" upper="0" effort="0" velocity="1"/></joint>
  <gazebo reference="a"><mu1>1</mu1></gazebo>
  <foo/>
  <link name="b" color="red"/>
  <joint name="k" type="fixed"><parent link="a"/><child link="b"/></joint>
</robot>'''


def test_inspect_groups_warnings_and_summarises_parser_noise(tmp_path):
    path = tmp_path / 'doubtful.urdf'
    path.write_text(DOUBTFUL)
    done = run(str(path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    section = out[out.index('validation warnings'):out.index('sample pose')]
    assert "  link 'a'\n    line 4: principal moments" in section
    assert 'line 6: <visual>: mesh scale="2" has one number' in section
    joint_block = section[section.index("  joint 'j'\n    line 9: "):]
    assert 'effort limit 0' in joint_block and 'lower == upper' in joint_block
    assert 'parser notes: 2 elements or attributes ignored' in section
    assert '(foo)' in section and 'color' not in section.split('parser notes')[0]
    verbose = run(str(path), '--verbose').stdout
    assert "unknown attribute 'color' ignored" in verbose and '<foo> ignored' in verbose


def test_inspect_strict_makes_warnings_fatal(tmp_path):
    path = tmp_path / 'doubtful.urdf'
    path.write_text(DOUBTFUL)
    done = run(str(path), '--strict')
    assert done.returncode == 2 and 'does not load: 4 errors' in done.stderr
    assert 'triangle inequality' in done.stderr and 'lower == upper' in done.stderr
    assert run(os.path.join(ROBOTS, 'solo12.urdf'), '--strict').returncode == 0


def test_inspect_lists_every_error_and_a_missing_file_in_one_line(tmp_path):
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="x"><link name="a"/><link name="a"/><joint name="j" type="ball">'
                   '<parent link="a"/><child link="b"/></joint><link name="b"/></robot>')
    done = run(str(bad))
    assert done.returncode == 2 and 'does not load: 2 errors' in done.stderr
    assert "duplicate link name 'a'" in done.stderr and "unknown type 'ball'" in done.stderr
    missing = run(str(tmp_path / 'nope.urdf'))
    assert missing.returncode == 2 and missing.stdout == ''
    assert missing.stderr.strip() == f'error: {tmp_path / "nope.urdf"}: no such file'
