"""`python -m rbd_ros inspect`: the report of one URDF, the verdict of several, and the exit
status a CI gate reads (0 loads, 1 --strict refuses warnings, 2 does not load, 64 usage error,
66 cannot be read), on the bundled arm, small URDF strings and example-robot-data's robots."""
import os
import subprocess
import sys

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from corpus import robots_directory
from rbd_ros.dynamics.urdf import refused_by_strict
from rbd_ros.inspect_model import DEFAULT_URDF, main, sample_pose

ROBOTS = os.path.join(os.path.dirname(__file__), 'data', 'robots')
PUBLIC = robots_directory()
NAMED = {'iCub': 'icub_description/robots/icub.urdf',
         'Allegro': 'allegro_hand_description/urdf/allegro_left_hand.urdf',
         'Kinova': 'kinova_description/robots/kinova.urdf',
         'ANYmal': 'anymal_b_simple_description/robots/anymal.urdf',
         'ANYmal C': 'anymal_c_simple_description/urdf/anymal.urdf',
         'Talos': 'talos_data/robots/talos_reduced.urdf',
         'TIAGo': 'tiago_description/robots/tiago.urdf',
         'Romeo': 'romeo_description/urdf/romeo.urdf',
         'Romeo small': 'romeo_description/urdf/romeo_small.urdf',
         'Iris': 'iris_description/robots/iris.urdf',
         'hector xacro': 'hector_description/robots/quadrotor_base.urdf.xacro'}


def public(name):
    if PUBLIC is None:
        pytest.skip('example-robot-data is not installed')
    return os.path.join(PUBLIC, NAMED[name])


def run(*args, **kw):
    """The command as a user runs it: a process, through rbd_ros/__main__.py."""
    return subprocess.run([sys.executable, '-m', 'rbd_ros', 'inspect', *args],
                          capture_output=True, text=True, timeout=300, **kw)


def inspect(capsys, *args):
    """In this process (faster): (exit status, stdout, stderr)."""
    status = main(['inspect', *args])
    out, err = capsys.readouterr()
    return status, out, err


def verdicts(out):
    return [line for line in out.splitlines() if line and not line.startswith(' ')]


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
    # and the last line is the verdict
    assert done.stdout.splitlines()[-1] == f'{DEFAULT_URDF}: loads (fixed base, nq 7, nv 7; ' \
        'no warnings)'


def test_inspect_any_urdf_with_floating_base(capsys):
    status, out, _ = inspect(capsys, os.path.join(ROBOTS, 'solo12.urdf'), '--floating-base')
    assert status == 0
    assert 'floating base, nq=19, nv=18' in out and 'looks legged' not in out
    # no <collision> shapes: the simulator's ground would not hold it (said, with the remedy)
    assert 'ground contact (Simulator, sim_node' in out
    assert 'none: it falls through the ground unless contact_points' in out


def test_inspect_says_where_a_humanoid_touches_the_ground(capsys):
    """Talos as published collides through meshes but for its feet, wrists and camera: a
    user who lets it fall in the simulator sees it sink up to its feet; inspect says so first."""
    root = robots_directory()
    if root is None:
        pytest.skip('example-robot-data is not installed')
    status, out, _ = inspect(capsys, os.path.join(root, 'talos_data', 'robots',
                                                  'talos_reduced_box.urdf'), '--floating-base')
    assert status == 0
    assert '56 points on 7 links: ' in out and 'leg_left_6_link' in out
    assert 'no contact from meshes: 45 links (base_link, ' in out
    # its long link names (gripper_right_motor_single_link) keep the masses' column aligned
    masses = out.split('\nlink masses\n')[1].split('\n\n')[0].splitlines()
    assert len(masses) > 40 and len({len(line) for line in masses}) == 1, masses


def test_inspect_reports_model_errors(tmp_path):
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="x"><link name="a"/><joint name="j" type="ball">'
                   '<parent link="a"/><child link="b"/></joint><link name="b"/></robot>')
    done = run(str(bad))
    assert done.returncode == 2
    # the error once (issue 32: it was on stderr and again in the verdict)
    assert done.stderr == ''
    assert done.stdout == f"{bad}: does not load: line 1: joint 'j' has unknown type 'ball' " \
        '(expected one of revolute, continuous, prismatic, fixed, floating, planar)\n'


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


def test_inspect_groups_warnings_and_summarises_parser_noise(tmp_path, capsys):
    path = tmp_path / 'doubtful.urdf'
    path.write_text(DOUBTFUL)
    status, out, _ = inspect(capsys, str(path))
    assert status == 0
    section = out[out.index('validation warnings'):out.index('sample pose')]
    assert section.startswith('validation warnings (4, 1 of them harmless: --strict lets '
                              'those pass)\n')
    assert "  link 'a'\n    line 4: principal moments" in section
    assert 'line 6: <visual>: mesh scale="2" has one number' in section
    assert '(harmless: a <visual> is display only' in section
    joint_block = section[section.index("  joint 'j'\n    line 9: "):]
    assert 'effort limit 0' in joint_block and 'lower == upper' in joint_block
    assert 'parser notes: 2 elements or attributes ignored' in section
    assert '(foo)' in section and 'color' not in section.split('parser notes')[0]
    assert verdicts(out)[-1] == f'{path}: loads (fixed base, nq 1, nv 1; 4 warnings, --strict ' \
        'would refuse 3: inertia 1, limits 2, visual 1)'
    _, verbose, _ = inspect(capsys, str(path), '--verbose')
    assert "unknown attribute 'color' ignored" in verbose and '<foo> ignored' in verbose


def test_strict_refuses_warnings_that_are_not_harmless_with_status_1(tmp_path, capsys):
    """The description loads (its report is printed), but --strict refuses 3 of its 4
    warnings: status 1, not 2 (which means it does not load at all)."""
    path = tmp_path / 'doubtful.urdf'
    path.write_text(DOUBTFUL)
    status, out, err = inspect(capsys, '--strict', str(path))
    assert status == 1 and err == ''
    assert 'kinematic tree' in out and 'triangle inequality' in out
    assert out.splitlines()[-1] == (
        f'{path}: refused by --strict: 3 of its 4 warnings are not harmless (inertia 1, '
        'limits 2; listed above); it loads without --strict (fixed base, nq 1, nv 1)')
    # a bare --strict never takes the next file for its value
    assert inspect(capsys, '--strict', os.path.join(ROBOTS, 'solo12.urdf'))[0] == 0


def test_a_missing_file_is_status_66_in_one_line(tmp_path):
    missing = run(str(tmp_path / 'nope.urdf'))
    assert missing.returncode == 66
    assert missing.stderr == ''
    assert missing.stdout == f'{tmp_path / "nope.urdf"}: cannot be read: no such file\n'
    directory = run(str(tmp_path))
    assert directory.returncode == 66 and 'a directory, not a URDF file' in directory.stdout


def test_inspect_lists_every_error(tmp_path, capsys):
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="x"><link name="a"/><link name="a"/><joint name="j" type="ball">'
                   '<parent link="a"/><child link="b"/></joint><link name="b"/></robot>')
    status, out, err = inspect(capsys, str(bad))
    assert status == 2 and err == ''
    # each error once, grouped as warnings are, then the verdict
    assert out == ("errors (2)\n  robot\n    line 1: duplicate link name 'a' (first at line 1)\n"
                   "  joint 'j'\n    line 1: has unknown type 'ball' (expected one of revolute, "
                   "continuous, prismatic, fixed, floating, planar)\n"
                   f"{bad}: does not load: 2 errors (listed above)\n")
    # among several files: the first error, and the command that lists them all
    status, out, _ = inspect(capsys, str(bad), str(bad))
    assert out == 2 * (f"{bad}: does not load: 2 errors, the first: line 1: duplicate link name "
                       f"'a' (first at line 1) (`python -m rbd_ros inspect {bad}` lists them)\n")


# ---- several files -------------------------------------------------------------------------
def test_several_files_one_verdict_line_each_and_the_highest_status(tmp_path, capsys):
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="x"/>')
    files = [public('Kinova'), public('Allegro'), public('Talos'), str(bad),
             str(tmp_path / 'nope.urdf')]
    status, out, err = inspect(capsys, '--strict', *files)
    lines = out.splitlines()
    assert len(lines) == len(files) and 'kinematic tree' not in out
    assert [line.split(': ')[0] for line in lines] == files
    assert lines[0].endswith('kinova.urdf: loads (fixed base, nq 6, nv 6; no warnings)')
    assert lines[1].endswith(': loads (fixed base, nq 16, nv 16; 4 warnings, all harmless: '
                             'inertia 4)')
    assert 'refused by --strict: 12 of its 12 warnings are not harmless (mimic 12; ' \
           f'`python -m rbd_ros inspect {files[2]}` lists them)' in lines[2]
    assert lines[3].endswith(': does not load: the robot has no <link>')
    assert lines[4].endswith(': cannot be read: no such file')
    assert status == 66                     # the highest of 0, 0, 1, 2, 66
    assert err == ''                        # every verdict once, on stdout
    assert inspect(capsys, '--strict', *files[:3])[0] == 1
    assert inspect(capsys, *files[:4])[0] == 2
    assert inspect(capsys, *files[:3])[0] == 0   # without --strict, warnings do not fail


def test_stdin_is_a_dash(tmp_path):
    with open(public('Kinova'), 'rb') as handle:
        text = handle.read()
    done = run('-', input=text.decode())
    assert done.returncode == 0, done.stderr
    assert "robot 'kinova' from <stdin>" in done.stdout
    assert done.stdout.splitlines()[-1] == '<stdin>: loads (fixed base, nq 6, nv 6; no warnings)'
    both = run('-', DEFAULT_URDF, input=text.decode())
    assert both.returncode == 0 and verdicts(both.stdout)[0].startswith('<stdin>: loads')
    twice = run('-', '-', input='')
    assert twice.returncode == 64 and '- (standard input) can be given once' in twice.stderr


def test_a_reader_that_leaves_does_not_change_the_status():
    """`inspect kinova.urdf | grep -q kinova`: grep leaves at its first match; the status is
    still the verdict (it was 1, from the broken pipe)."""
    shell = (f'{sys.executable} -m rbd_ros inspect {public("Kinova")} | grep -q kinova; '
             'echo ${PIPESTATUS[0]}')
    done = subprocess.run(['bash', '-c', shell], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == '0' and 'Traceback' not in done.stderr, done.stderr
    # deterministic: a pipe whose reader is gone before anything is written
    for args, status in (([public('Kinova')], 0), (['--strict', public('Talos')], 1),
                         ([public('Kinova'), public('hector xacro')], 2)):
        process = subprocess.Popen([sys.executable, '-m', 'rbd_ros', 'inspect', *args],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        process.stdout.close()
        _, err = process.communicate(timeout=300)
        assert process.returncode == status, (args, err)
        assert b'Traceback' not in err


# ---- usage ---------------------------------------------------------------------------------
@pytest.mark.parametrize('args', [['inspect', '--bogus'], ['inspect', '--strict=nope'],
                                  ['inspect', '-', '-'], [], ['nonsense']],
                         ids=['unknown-option', 'strict-value', 'stdin-twice', 'no-command',
                              'unknown-command'])
def test_usage_errors_exit_64(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 64
    assert 'usage: python -m rbd_ros' in capsys.readouterr().err


def test_usage_error_status_of_the_process():
    done = run('--floating-base', '--nope')
    assert done.returncode == 64 and 'unrecognized arguments: --nope' in done.stderr


def test_help_is_plain_text_with_the_exit_statuses():
    done = run('--help')
    assert done.returncode == 0
    text = done.stdout
    assert '``' not in text and ':func:' not in text
    for line in ('  0   loads', '  1   loads, but --strict refuses', '  2   does not load',
                 '  64  usage error', '  66  cannot be read'):
        assert line in text
    assert '--strict [kinematics]' in text and '- reads one from standard input' in text
    assert 'harmless' in text and 'xacro robot.urdf.xacro | python -m rbd_ros inspect' in text


# ---- what --strict refuses ------------------------------------------------------------------
def test_icub_visual_warnings_and_rounding_inertias_pass_strict(capsys):
    """iCub: 28 <visual> material warnings (display only) and 7 inertias that are zero up to
    rounding (the head's ixz = 2.4e-35 on 1.3 kg): the first are harmless, the second physical."""
    status, out, _ = inspect(capsys, '--strict', '--floating-base', public('iCub'))
    assert status == 0
    assert 'not positive semi-definite' not in out and 'triangle' not in out
    assert out.count('(harmless: a material is display only)') == 28
    assert verdicts(out)[-1].endswith(': loads (floating base, nq 39, nv 38; 28 warnings, all '
                                      'harmless: visual 28)')


def test_allegro_welded_inertias_pass_strict(capsys):
    status, out, _ = inspect(capsys, '--strict', public('Allegro'))
    assert status == 0
    assert out.count('the body they form is physical, and only that body enters the dynamics '
                     '(harmless)') == 4


def test_strict_kinematics_refuses_only_what_bears_on_frame_poses(capsys):
    talos, allegro, romeo = public('Talos'), public('Allegro'), public('Romeo')
    status, out, _ = inspect(capsys, '--strict', 'kinematics', '--floating-base', talos,
                             allegro, romeo)
    lines = out.splitlines()
    assert status == 1
    assert 'refused by --strict kinematics: 12 of its 12 warnings bear on kinematics (mimic 12' \
        in lines[0]
    assert lines[1].endswith('all harmless: inertia 4)')
    assert lines[2].endswith('72 warnings, none that --strict kinematics refuses: limits 48, '
                             'massless joint 24)')
    assert inspect(capsys, '--strict', '--floating-base', romeo)[0] == 1
    assert inspect(capsys, '--strict=kinematics', romeo)[0] == 0


def test_strict_composes_with_repair_inertia(tmp_path, capsys):
    """A repaired inertia is what the dynamics use: --strict --repair-inertia passes it."""
    path = tmp_path / 'camera.urdf'
    path.write_text('<robot name="r"><link name="base"/><link name="camera"><inertial>'
                    '<mass value="2"/><inertia ixx="8.67e-6" ixy="0" ixz="0" iyy="6.69e-4" '
                    'iyz="0" izz="1.3735e-3"/></inertial></link><joint name="j" type="continuous">'
                    '<parent link="base"/><child link="camera"/></joint></robot>')
    assert inspect(capsys, '--strict', str(path))[0] == 1
    status, out, _ = inspect(capsys, '--strict', '--repair-inertia', str(path))
    assert status == 0 and 'the dynamics use the repaired one (harmless)' in out
    assert inspect(capsys, '--strict', '--repair-inertia', public('Romeo small'),
                   '--floating-base')[0] == 0
    assert inspect(capsys, '--strict', public('Romeo small'), '--floating-base')[0] == 1


@pytest.mark.parametrize('strict', [True, 'kinematics'])
def test_the_cli_and_the_api_give_the_same_verdict(strict, capsys):
    """inspect --strict's status 1 exactly when Model.from_urdf(strict=...) raises."""
    names = ['iCub', 'Allegro', 'Kinova', 'ANYmal', 'ANYmal C', 'Talos', 'TIAGo', 'Romeo',
             'Romeo small', 'Iris']
    flag = ['--strict'] + ([] if strict is True else ['kinematics'])
    for name in names:
        for repair in (False, True):
            path = public(name)
            status, _, _ = inspect(capsys, *flag, *(['--repair-inertia'] if repair else []),
                                   path)
            try:
                rbd.Model.from_urdf(path, strict=strict, repair_inertia=repair)
                raised = False
            except rbd.ModelError:
                raised = True
            assert status == (1 if raised else 0), (name, repair)
            warnings = rbd.Model.from_urdf(path, repair_inertia=repair).warnings
            assert raised == bool(refused_by_strict(warnings, strict))


# ---- xacro ---------------------------------------------------------------------------------
def test_a_xacro_source_is_refused_with_the_command_to_expand_it(tmp_path, capsys,
                                                                monkeypatch):
    """Where xacro is not importable (where it is, a .xacro file is expanded: below)."""
    monkeypatch.setitem(sys.modules, 'xacro', None)
    source = public('hector xacro')
    status, out, err = inspect(capsys, source)
    assert status == 2
    assert f'`xacro {source} > {source[:-len(".xacro")]}`' in out
    assert 'a xacro source, not a URDF (<xacro:property>, its name ends in .xacro)' in out
    assert 'no <link>' not in out + err
    # by content, whatever the name
    path = tmp_path / 'robot.urdf'
    path.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                    '<xacro:macro name="leg"><link name="${name}"/></xacro:macro>\n</robot>')
    status, out, _ = inspect(capsys, str(path))
    assert status == 2 and 'line 2: a xacro source, not a URDF (<xacro:macro>)' in out
    assert '`xacro robot.urdf.xacro > robot.urdf`' in out
    with open(source) as handle:
        piped = run('-', input=handle.read())
    assert piped.returncode == 2
    assert '<stdin>: does not load: line 5: a xacro source' in piped.stdout


# ---- legged robots without --floating-base --------------------------------------------------
def test_a_legged_robot_without_floating_base_gets_a_hint(capsys):
    anymal = public('ANYmal')
    status, out, _ = inspect(capsys, anymal)
    assert status == 0
    hint = ("hint: looks legged (4 legs from the root: LF_HIP, RF_HIP, LH_HIP, RH_HIP) but is "
            "inspected with a fixed base (its root link 'base' welded to the world): add "
            '--floating-base')
    assert out.splitlines()[2] == f'  {hint}'
    assert 'looks legged' not in inspect(capsys, anymal, '--floating-base')[1]
    _, out, _ = inspect(capsys, anymal, public('Kinova'), public('Allegro'), public('iCub'))
    lines = out.splitlines()
    assert lines[0].endswith(f'[{hint}]')
    assert 'looks legged' not in lines[1] + lines[2]
    assert "looks legged (2 legs from the root: l_hip_1, r_hip_1)" in lines[3]


def test_the_legged_hint_on_small_descriptions(tmp_path, capsys):
    def leg(side):
        return (f'<link name="{side}_thigh"><inertial><mass value="1"/><inertia ixx="0.01" '
                f'ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>'
                f'<link name="{side}_foot"/><joint name="{side}_hip" type="continuous">'
                f'<parent link="pelvis"/><child link="{side}_thigh"/></joint>'
                f'<joint name="{side}_ankle" type="fixed"><parent link="{side}_thigh"/>'
                f'<child link="{side}_foot"/></joint>')
    biped = tmp_path / 'biped.urdf'
    biped.write_text(f'<robot name="b"><link name="pelvis"/>{leg("l")}{leg("r")}</robot>')
    out = inspect(capsys, str(biped))[1]
    assert 'hint: looks legged (2 legs from the root: l_thigh, r_thigh)' in out
    one_leg = tmp_path / 'one_leg.urdf'       # a single chain ending in a foot: an arm, a leg rig
    one_leg.write_text(f'<robot name="b"><link name="pelvis"/>{leg("l")}</robot>')
    assert 'looks legged' not in inspect(capsys, str(one_leg))[1]
    rotors = tmp_path / 'rotors.urdf'         # leaves named like hips carry no leg
    rotors.write_text('<robot name="b"><link name="base"/><link name="FR_hip_rotor"/>'
                      '<link name="FL_hip_rotor"/><joint name="a" type="fixed"><parent '
                      'link="base"/><child link="FR_hip_rotor"/></joint><joint name="b" '
                      'type="fixed"><parent link="base"/><child link="FL_hip_rotor"/></joint>'
                      '</robot>')
    assert 'looks legged' not in inspect(capsys, str(rotors))[1]


def test_a_xacro_file_is_expanded_and_a_pipe_is_read(tmp_path, capsys):
    """With xacro importable a .xacro file is expanded (the report names it so); a pipe, as
    `<(xacro robot.urdf.xacro)` gives, loads; a xacro error is one line, status 2."""
    pytest.importorskip('xacro')
    from test_description import xacro_files
    path = xacro_files(tmp_path)
    status, out, err = inspect(capsys, str(path))
    assert status == 0 and err == '', err
    assert out.startswith(f"robot 'xarm' from {path} (expanded by xacro)\n")
    assert out.splitlines()[-1] == f'{path} (expanded by xacro): loads (fixed base, nq 1, nv 1; ' \
        'no warnings)'
    broken = tmp_path / 'broken.urdf.xacro'
    broken.write_text('<robot name="b" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                      '<link name="${nowhere}"/></robot>')
    status, out, err = inspect(capsys, str(broken))
    assert status == 2 and err == '' and len(out.splitlines()) == 1
    assert out.startswith(f'{broken}: does not load: xacro failed: ') and 'nowhere' in out
    done = subprocess.run(['bash', '-c', f'{sys.executable} -m rbd_ros inspect '
                           f'<(cat {DEFAULT_URDF})'], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].endswith(': loads (fixed base, nq 7, nv 7; no warnings)')
    assert done.stdout.startswith("robot 'rbd_arm7' from /dev/fd/")


def test_inspect_shows_the_loops_the_actuated_joints_and_the_closed_systems_dof(capsys):
    """The bundled parallel ankle: its two ball loops, the motors its transmissions name, the
    closed system's 2 degrees of freedom (8 tree DoF minus rank 6), and the sample dynamics
    at a pose where the loops are closed."""
    ankle = os.path.join(os.path.dirname(DEFAULT_URDF), 'parallel_ankle.urdf')
    status, out, _ = inspect(capsys, ankle)
    assert status == 0
    assert 'actuated joints (2, named by <transmission> or <ros2_control>): motor_left, ' \
           'motor_right' in out
    assert 'closed loops (2 <constraint>, 6 rows)' in out
    assert 'rod_left_ball           ball      rod_left -> foot, rows 0-2' in out
    assert 'closed system: 2 degrees of freedom (8 of the tree minus the rank 6' in out
    assert '(the loops closed)' in out and 'gravity compensation at the actuated joints' in out
    model = rbd.Model.from_urdf(ankle)
    pose = out.split('sample pose q = [', 1)[1].split(']', 1)[0]
    q = np.array([float(x) for x in pose.split()])
    assert np.abs(rbd.constraint_residual(model, q)).max() < 1e-3     # (printed to 4 digits)
    assert 'closed loops' not in inspect(capsys, DEFAULT_URDF)[1]


def test_inspect_says_when_the_loops_do_not_close_and_computes_nothing_of_them(tmp_path,
                                                                              capsys):
    """A four-bar whose loop closes nowhere (its constraint point 3 m along the rocker): the
    report said "(the loops closed)" of the open neutral pose and printed a constrained forward
    dynamics of 225 rad/s^2 from it."""
    from urdf_factory import FOUR_BAR, four_bar_urdf
    text = four_bar_urdf('ball')
    point = f'<child_origin xyz="{FOUR_BAR["rocker"]:.17g} 0 0"/>'
    assert point in text
    path = tmp_path / 'open.urdf'
    path.write_text(text.replace(point, '<child_origin xyz="3 0 0"/>'))
    status, out, _ = inspect(capsys, str(path))
    assert 'the loops do not close from the neutral pose' in out
    assert '(the loops closed)' not in out and 'loops closed:' not in out
    assert '(the loops open: they do not close here' in out
    assert 'gravity compensation at the actuated joints' not in out
    assert 'forward dynamics with zero torque, at rest, the loops cut' in out


def test_inspect_refuses_a_bad_constraint_naming_it(tmp_path, capsys):
    path = tmp_path / 'bad.urdf'
    with open(os.path.join(os.path.dirname(DEFAULT_URDF), 'parallel_ankle.urdf')) as handle:
        path.write_text(handle.read().replace('<child link="foot"/> <child_origin xyz="-0.04 '
                                              '0.035', '<child link="toe"/> <child_origin xyz='
                                              '"-0.04 0.035'))
    status, out, _ = inspect(capsys, str(path))
    assert status == 2
    assert "constraint 'rod_left_ball': child link 'toe' does not exist" in out
