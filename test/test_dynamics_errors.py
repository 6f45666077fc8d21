"""Every bad input raises a clear error of the right type naming the culprit."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import rbd_ros.dynamics as rbd

INERTIAL = ('<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" '
            'izz="0.1"/></inertial>')
ARM = os.path.join(os.path.dirname(__file__), '..', 'rbd_ros', 'robots', 'rbd_arm7.urdf')


def robot(body, name='r'):
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}\n</robot>'


def link(name, inertial=INERTIAL):
    return f'<link name="{name}">{inertial}</link>'


def joint(name, parent, child, jtype='revolute', extra='<axis xyz="0 0 1"/>'):
    limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>' if jtype in ('revolute', 'prismatic') else ''
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
            f'<child link="{child}"/>{extra}{limit}</joint>')


GOOD = [link('base'), link('a'), link('b'), joint('j1', 'base', 'a'), joint('j2', 'a', 'b')]


def build(*parts):
    return rbd.Model.from_urdf(robot('\n'.join(parts)))


def expect(error_type, xml_or_parts, *words, strict=False):
    xml = xml_or_parts if isinstance(xml_or_parts, str) else robot('\n'.join(xml_or_parts))
    with pytest.raises(error_type) as info:
        rbd.Model.from_urdf(xml, strict=strict)
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)
    return message


def expect_warning(error_type, parts, *words):
    """Loads by default with one warning naming the culprit; strict raises error_type."""
    xml = robot('\n'.join(parts))
    model = rbd.Model.from_urdf(xml)
    matching = [w for w in model.warnings if all(word in w for word in words)]
    assert len(matching) == 1, (words, model.warnings)
    assert matching[0].startswith('<robot_description>:') and matching[0].error is error_type
    message = expect(error_type, xml, *words, strict=True)
    assert '(a warning; refused by strict=True)' in message
    return model


def test_good_model_builds():
    model = build(*GOOD)
    assert model.joint_names == ['j1', 'j2']


def test_malformed_xml_names_line_and_column():
    message = expect(rbd.URDFSyntaxError, '<robot name="r">\n<link name="a">\n</robot>',
                     'malformed XML', '<robot_description>:3:')
    assert 'link' in message


def test_malformed_xml_in_a_file_names_the_file(tmp_path):
    path = tmp_path / 'broken.urdf'
    path.write_text('<robot name="r">\n  <link name="a"/>\n  <joint name="j" type="fixed">\n</robot>')
    with pytest.raises(rbd.URDFSyntaxError) as info:
        rbd.Model.from_urdf(str(path))
    assert str(path) + ':4:' in str(info.value)


def test_missing_file():
    with pytest.raises(rbd.ModelError, match='no-such.urdf: no such file'):
        rbd.Model.from_urdf('/tmp/no-such.urdf')


def test_not_a_robot_document():
    expect(rbd.URDFSyntaxError, '<sdf version="1.6"/>', 'root element is <sdf>')


def test_no_root_link_is_a_cycle():
    expect(rbd.TopologyError, [link('a'), link('b'), joint('j1', 'a', 'b'), joint('j2', 'b', 'a')],
           'no root link', 'cycle')


def test_several_roots():
    expect(rbd.TopologyError, [link('a'), link('b'), link('c'), joint('j1', 'a', 'b')],
           'several root links', "'a'", "'c'")


def test_cycle_below_the_root():
    expect(rbd.TopologyError, [link('base'), link('a'), link('b'), link('c'), joint('j0', 'base', 'a'),
                               joint('j1', 'b', 'c'), joint('j2', 'c', 'b')],
           'cycle')


def test_link_with_two_parents_is_a_loop():
    expect(rbd.TopologyError, GOOD + [link('c'), joint('j3', 'base', 'c'), joint('j4', 'a', 'c')],
           "joint 'j4'", "'c'", 'already the child')


@pytest.mark.parametrize('role', ['parent', 'child'])
def test_missing_parent_or_child_link(role):
    parts = [link('base'), link('a'), joint('j1', 'base', 'ghost') if role == 'child'
             else joint('j1', 'ghost', 'a')]
    message = expect(rbd.TopologyError, parts, "joint 'j1'", f"{role} link 'ghost' does not exist")
    assert ':' in message.split("joint")[0]      # source:line prefix


def test_duplicate_names():
    expect(rbd.TopologyError, GOOD + [link('a')], "duplicate link name 'a'")


def test_unknown_joint_type_names_joint_and_line():
    message = expect(rbd.JointError, [link('base'), link('a'), joint('hinge', 'base', 'a', 'ball')],
                     "joint 'hinge'", "unknown type 'ball'")
    assert message.startswith('<robot_description>:')


def test_zero_axis():
    expect(rbd.JointError, [link('base'), link('a'),
                            joint('j1', 'base', 'a', extra='<axis xyz="0 0 0"/>')],
           "joint 'j1'", 'axis is zero')


def test_negative_mass():
    bad = '<inertial><mass value="-1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
    expect(rbd.InertiaError, [link('base'), link('a', bad), joint('j1', 'base', 'a')],
           "link 'a'", 'negative mass')


def test_inertia_not_positive_definite():
    bad = '<inertial><mass value="1"/><inertia ixx="1" ixy="2" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
    expect_warning(rbd.InertiaError, [link('base'), link('a', bad), joint('j1', 'base', 'a')],
                   "link 'a'", 'not positive semi-definite')


def test_inertia_violating_triangle_inequality():
    bad = '<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.5"/></inertial>'
    expect_warning(rbd.InertiaError, [link('base'), link('a', bad), joint('j1', 'base', 'a')],
                   "link 'a'", 'triangle inequality')


def test_non_finite_numbers():
    expect(rbd.ModelError, [link('base'), link('a'), joint('j1', 'base', 'a',
                                                           extra='<origin xyz="0 nan 0"/><axis xyz="0 0 1"/>')],
           "joint 'j1'", 'non-finite')


@pytest.mark.parametrize('part, what', [
    (link('a', '<inertial><mass value="1e308"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" '
               'iyz="0" izz="0.1"/></inertial>'), "link 'a'"),
    (joint('j1', 'base', 'a', extra='<origin xyz="0 0 -1e300"/><axis xyz="0 0 1"/>'), "joint 'j1'"),
    (joint('j1', 'base', 'a', extra='<axis xyz="0 0 1e308"/>'), "joint 'j1'"),   # norm overflows
])
def test_numbers_beyond_physical_are_rejected(part, what):
    """Found by the URDF fuzzer: a mass of 1e308 built a model whose gravity torques were NaN."""
    parts = [link('base'), part if part.startswith('<link') else link('a'),
             part if part.startswith('<joint') else joint('j1', 'base', 'a')]
    expect(rbd.ModelError, parts, what, 'not a physical robot value')


def test_mimic_of_unknown_joint():
    """urdfdom never checks the leader and Pinocchio ignores <mimic> by default: a published
    hand (alex_psyonic_hands) names leaders that do not exist. The joint moves on its own."""
    model = expect_warning(rbd.JointError, GOOD[:3] + [
        joint('j1', 'base', 'a'),
        joint('j2', 'a', 'b', extra='<axis xyz="0 0 1"/><mimic joint="nope"/>')],
        "joint 'j2'", "unknown joint 'nope'", 'ignored')
    assert model.joint_names == ['j1', 'j2'] and model.joint['j2'].mimic is None


def test_mimic_cycle():
    expect(rbd.JointError, GOOD[:3] + [joint('j1', 'base', 'a', extra='<axis xyz="0 0 1"/><mimic joint="j2"/>'),
                                       joint('j2', 'a', 'b', extra='<axis xyz="0 0 1"/><mimic joint="j1"/>')],
           'mimic cycle', 'j1', 'j2')


def test_mimic_of_a_fixed_joint():
    expect_warning(rbd.JointError, GOOD[:3] + [
        joint('j1', 'base', 'a', 'fixed'),
        joint('j2', 'a', 'b', extra='<axis xyz="0 0 1"/><mimic joint="j1"/>')],
        "joint 'j2'", "mimics 'j1', a fixed joint")


def test_mimic_tag_on_a_fixed_joint_is_ignored():
    """Talos' grippers: 12 fixed joints carry <mimic>; Pinocchio ignores the tag."""
    model = expect_warning(rbd.JointError, GOOD[:3] + [
        joint('j1', 'base', 'a'),
        joint('j2', 'a', 'b', 'fixed', extra='<mimic joint="j1"/>')],
        "joint 'j2'", 'a fixed joint cannot mimic', 'ignored')
    assert model.joint_names == ['j1'] and model.joint['j2'].type == 'fixed'


def test_mimic_chain_resolves_to_the_first_leader():
    model = build(*(GOOD[:3] + [link('c'),
                                joint('j1', 'base', 'a'),
                                joint('j2', 'a', 'b', extra='<axis xyz="0 0 1"/><mimic joint="j1" multiplier="2" offset="0.1"/>'),
                                joint('j3', 'b', 'c', extra='<axis xyz="0 0 1"/><mimic joint="j2" multiplier="3" offset="0.2"/>')]))
    assert model.nq == 1
    positions = model.mimic_positions([0.5])
    assert math.isclose(positions['j2'], 1.1) and math.isclose(positions['j3'], 3.5)


def test_lower_limit_above_upper():
    model = expect_warning(rbd.JointError, [
        link('base'), link('a'),
        '<joint name="j1" type="revolute"><parent link="base"/><child link="a"/>'
        '<limit lower="1" upper="-1" effort="1" velocity="1"/></joint>'],
        "joint 'j1'", 'lower 1 > upper -1', 'no position limit')
    assert model.lower_limits[0] == -np.inf and model.upper_limits[0] == np.inf


# ---- algorithm arguments ----------------------------------------------------------------
@pytest.fixture(scope='module')
def arm():
    return rbd.Model.from_urdf(ARM)


def test_wrong_shapes_name_argument_and_expected_shape(arm):
    q = np.zeros(arm.nq)
    with pytest.raises(ValueError, match=r'q must have shape \(7,\) or \(N, 7\), got \(6,\)'):
        rbd.gravity_torques(arm, np.zeros(6))
    with pytest.raises(ValueError, match=r'v must have shape \(7,\)'):
        rbd.inverse_dynamics(arm, q, np.zeros(8), q)
    with pytest.raises(ValueError, match=r'tau must have shape'):
        rbd.forward_dynamics(arm, q, q, np.zeros((2, 2, 7)))
    with pytest.raises(ValueError, match='batch'):
        rbd.inverse_dynamics(arm, np.zeros((3, 7)), np.zeros((2, 7)), np.zeros((3, 7)))
    with pytest.raises(ValueError, match=r"f_ext\['tool0'\] must have shape"):
        rbd.inverse_dynamics(arm, q, q, q, {'tool0': np.zeros(5)})


@pytest.mark.parametrize('which', ['q', 'v', 'a'])
def test_non_finite_state_is_rejected(arm, which):
    args = {'q': np.zeros(7), 'v': np.zeros(7), 'a': np.zeros(7)}
    args[which][2] = np.nan
    with pytest.raises(ValueError, match=f'{which} contains NaN or inf'):
        rbd.inverse_dynamics(arm, args['q'], args['v'], args['a'])


def test_non_finite_in_a_batch_names_the_row(arm, batch_path):
    Q = np.zeros((4, 7))
    Q[2, 1] = np.inf
    with pytest.raises(ValueError, match=r'q contains NaN or inf \(configuration 2 of the batch\)'):
        rbd.mass_matrix(arm, Q)


def test_non_finite_tau_and_f_ext(arm):
    z = np.zeros(7)
    with pytest.raises(ValueError, match='tau contains NaN'):
        rbd.forward_dynamics(arm, z, z, np.full(7, np.nan))
    with pytest.raises(ValueError, match='f_ext contains NaN'):
        rbd.forward_dynamics(arm, z, z, z, {'tool0': [0, 0, np.nan, 0, 0, 0]})
    with pytest.raises(ValueError, match="unknown link 'nowhere'"):
        rbd.inverse_dynamics(arm, z, z, z, {'nowhere': np.zeros(6)})


def test_frame_poses_out_must_come_from_this_model(arm):
    q = np.zeros(7)
    other = build(*GOOD)
    poses = rbd.frame_poses(arm, q)
    same_links = rbd.Model.from_urdf(ARM, floating_base=True)    # same names, same rows: fine
    assert rbd.frame_poses(same_links, same_links.neutral(), out=poses) is poses
    bad = [np.zeros(arm.frame_poses_shape), rbd.frame_poses(other, other.neutral()),
           rbd.FramePoses(np.zeros((3, 4, 4)), arm.frame_index),
           rbd.FramePoses(np.zeros(arm.frame_poses_shape, dtype=np.float32), arm.frame_index),
           rbd.FramePoses(np.zeros(arm.frame_poses_shape)[::-1], arm.frame_index)]
    for out in bad:
        before = out.copy() if isinstance(out, np.ndarray) else out.array.copy()
        with pytest.raises(ValueError, match='out must be a FramePoses returned by frame_poses'):
            rbd.frame_poses(arm, q, out=out)
        after = out if isinstance(out, np.ndarray) else out.array
        assert np.array_equal(before, after)          # nothing written
    q[3] = np.nan
    with pytest.raises(ValueError, match='q contains NaN'):
        rbd.frame_poses(arm, q, out=poses)


def test_zero_quaternion_and_bad_names():
    model = rbd.Model.from_urdf(ARM, floating_base=True)
    q = model.neutral()
    q[3:7] = 0.0
    with pytest.raises(ValueError, match='zero quaternion'):
        rbd.gravity_torques(model, q)
    with pytest.raises(ValueError, match="unknown frame 'nope'"):
        rbd.frame_pose(model, model.neutral(), 'nope')
    with pytest.raises(ValueError, match='reference must be one of'):
        rbd.frame_jacobian(model, model.neutral(), 'tool0', 'body')
    with pytest.raises(ValueError, match='dt must be finite'):
        rbd.integrate(model, model.neutral(), np.zeros(model.nv), float('nan'))


def test_dynamics_core_never_imports_ros():
    """rbd_ros.dynamics imports and computes with rclpy made unimportable, and no source
    file under rbd_ros/dynamics mentions a ROS module."""
    root = os.path.join(os.path.dirname(__file__), '..', 'rbd_ros', 'dynamics')
    for name in os.listdir(root):
        if name.endswith('.py'):
            with open(os.path.join(root, name)) as handle:
                text = handle.read()
            for module in ('rclpy', 'sensor_msgs', 'std_msgs', 'geometry_msgs', 'tf2'):
                assert f'import {module}' not in text and f'from {module}' not in text, name
    script = (
        'import sys\n'
        'class Block:\n'
        '    def find_spec(self, name, path=None, target=None):\n'
        '        if name.split(".")[0] in ("rclpy", "rcl_interfaces", "sensor_msgs", "std_msgs"):\n'
        '            raise ImportError("ROS is blocked in this test: " + name)\n'
        'sys.meta_path.insert(0, Block())\n'
        'import numpy as np, rbd_ros.dynamics as rbd\n'
        f'm = rbd.Model.from_urdf({ARM!r})\n'
        'print(rbd.gravity_torques(m, np.zeros(m.nq))[1])\n'
        'assert not any(k.startswith("rclpy") for k in sys.modules)\n'
        'try:\n    import rclpy\nexcept ImportError:\n    print("rclpy blocked")\n')
    done = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert np.isfinite(float(lines[0])) and 'blocked' in done.stdout


def test_unknown_geometry_is_a_warning():
    """An unknown geometry tag (found by the hypothesis fuzz test): a warning naming the link
    and the tag. In a <collision> (the simulator's contacts) strict refuses it; in a <visual>,
    which neither the dynamics nor the simulator read, it is harmless and strict lets it pass."""
    shape = '<geometry><nanylinder radius="1"/></geometry>'
    bad_link = f'<link name="a"><collision>{shape}</collision></link>'
    expect_warning(rbd.URDFSyntaxError, [link('base'), bad_link, joint('j1', 'base', 'a')],
                   "link 'a' <collision>", 'unknown geometry <nanylinder>')
    visual = robot('\n'.join([link('base'),
                              f'<link name="a">{INERTIAL}<visual>{shape}</visual></link>',
                              joint('j1', 'base', 'a')]))
    warning, = rbd.Model.from_urdf(visual, strict=True).warnings
    assert "link 'a' <visual>" in warning and warning.harmless and '(harmless: ' in warning
