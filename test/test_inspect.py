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
