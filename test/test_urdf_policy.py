"""What loads, what warns and what refuses: doubtful but usable descriptions load with warnings
naming file:line, link or joint and the condition; strict makes each the matching error; parts
the dynamics never read never stop a load; every problem is reported at once."""
import math

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from pin_oracle import Oracle, close

INERTIAL = ('<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" '
            'izz="0.1"/></inertial>')


def robot(*parts, name='r', head=''):
    return f'{head}<robot name="{name}">\n' + '\n'.join(parts) + '\n</robot>'


def link(name, inertial=INERTIAL, extra=''):
    return f'<link name="{name}">{inertial}{extra}</link>'


def joint(name, parent, child, jtype='revolute', extra='<axis xyz="0 0 1"/>',
          limit='<limit lower="-1" upper="1" effort="1" velocity="1"/>'):
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
            f'<child link="{child}"/>{extra}{limit if jtype in ("revolute", "prismatic") else ""}'
            '</joint>')


def arm(*extra_links, tip_inertial=INERTIAL, head='', tip_extra=''):
    return robot(link('base'), link('a'), link('b', tip_inertial, tip_extra),
                 joint('j1', 'base', 'a'), joint('j2', 'a', 'b', extra='<axis xyz="1 0 0"/>'),
                 *extra_links, head=head)


# ---- XML that urdfdom accepts loads ----------------------------------------------------------
@pytest.mark.parametrize('head', [
    '\n\n   <?xml version="1.0"?>\n',                                  # whitespace first
    '<!-- exported by a CAD tool -->\n<?xml version="1.0" encoding="UTF-8"?>\n',   # comment
    '<?xml version="1.1" encoding="utf-8" standalone="yes"?>\n',      # an odd declaration
    '\ufeff<?xml version = "1.0" ?>',                                  # BOM, spaces
], ids=['whitespace', 'comment', 'version-1.1', 'bom'])
def test_declarations_urdfdom_accepts_load(head):
    model = rbd.Model.from_urdf(arm(head=head))
    assert model.joint_names == ['j1', 'j2'] and not model.warnings


@pytest.mark.timeout(60)
def test_many_comments_without_a_declaration_load(tmp_path):
    """A file that opens with comments and no XML declaration (Talos's URDF as lxml writes it
    back: 163 comments) never loaded: the declaration's pattern backtracked through every way
    of splitting the comments, twice the time per comment. A declaration after comments still
    loads, and one inside a comment is a comment."""
    comments = ''.join(f'<!-- part {k}: a - b > c -->\n' for k in range(200))
    path = tmp_path / 'commented.urdf'
    path.write_text(comments + arm())
    assert rbd.Model.from_urdf(str(path)).joint_names == ['j1', 'j2']
    model = rbd.Model.from_urdf(arm(head=comments + '<?xml version="1.0"?>\n'))
    assert model.joint_names == ['j1', 'j2'] and not model.warnings
    model = rbd.Model.from_urdf(arm(head='<!-- <?xml version="1.0"?> -->\n'))
    assert model.joint_names == ['j1', 'j2'] and not model.warnings


def test_a_file_in_another_declared_encoding(tmp_path):
    path = tmp_path / 'latin.urdf'
    text = arm(head='<?xml version="1.0" encoding="ISO-8859-1"?>\n').replace(
        '<robot name="r">', '<robot name="r\u00e9">')
    path.write_bytes(text.encode('latin-1'))
    assert rbd.Model.from_urdf(str(path)).name == 'r\u00e9'


def test_parts_the_dynamics_never_read_never_stop_a_load():
    ros1_transmission = ('<transmission name="t1" type="pr2_mechanism_model/SimpleTransmission">'
                         '<actuator name="m1"/><joint name="j1"/><mechanicalReduction>1'
                         '</mechanicalReduction></transmission>')
    gazebo = '<gazebo reference="a"><mu1>0.2</mu1><material>Gazebo/Grey</material></gazebo>'
    xml = arm(ros1_transmission, gazebo, '<ros2_control name="x" type="system"/>',
              '<drake:collision_filter_group name="g"/>', '<unknown_tag/>',
              tip_extra='<contact><lateral_friction value="1"/></contact>')
    model = rbd.Model.from_urdf(xml, strict=True)
    assert not model.warnings
    assert len(model.notes) == 4 and all(n.startswith('<robot_description>:') for n in model.notes)
    assert any('<drake:collision_filter_group> ignored' in n for n in model.notes)
    assert any("<contact> ignored" in n for n in model.notes)
    assert any('drake used without a declaration' in n for n in model.notes)


@pytest.mark.parametrize('visual, words', [
    ('<visual><geometry><sphere radius="0.1"/><box size="1 1 1"/></geometry></visual>',
     ('<geometry> has 2 shapes', 'only the first')),
    ('<visual><geometry><mesh filename="a.stl" scale="1 2"/></geometry></visual>',
     ('mesh scale="1 2"', 'not 3 numbers')),
    ('<visual><geometry/></visual>', ('no <geometry> shape',)),
    ('<visual><geometry><box size="1 x 1"/></geometry></visual>', ('<box>: size="1 x 1"',)),
    ('<visual><material name="m"><texture/></material><geometry><sphere radius="1"/></geometry>'
     '</visual>', ('texture without a filename',)),
    ('<visual><material name="m"><color rgba="1 0 0"/></material><geometry><sphere radius="1"/>'
     '</geometry></visual>', ('rgba="1 0 0"',)),
])
def test_broken_visuals_are_harmless_warnings(visual, words):
    """A <visual> is display only: its problems are warnings that say they are harmless, and
    strict lets them pass. The same problems in a <collision> (the simulator's contacts) are
    refused; a material is display only wherever it is."""
    xml = arm(tip_extra=visual)
    model = rbd.Model.from_urdf(xml)
    assert len(model.warnings) == 1, model.warnings
    assert all(w in model.warnings[0] for w in words + ("link 'b' <visual>",))
    assert model.warnings[0].error is rbd.URDFSyntaxError and not model.warnings[0].kinematic
    assert model.warnings[0].harmless
    assert ('(harmless: a material is display only)' if 'material' in visual else
            '(harmless: a <visual> is display only') in model.warnings[0]
    assert rbd.Model.from_urdf(xml, strict=True).warnings == model.warnings
    collision = xml.replace('visual>', 'collision>')
    warning, = rbd.Model.from_urdf(collision).warnings
    if 'material' in visual:
        assert warning.harmless and 'harmless: a material is display only' in warning
        rbd.Model.from_urdf(collision, strict=True)
    else:
        assert not warning.harmless and 'harmless' not in warning
        with pytest.raises(rbd.URDFSyntaxError, match='refused by strict=True'):
            rbd.Model.from_urdf(collision, strict=True)


def test_valid_collision_shapes_are_parsed():
    shapes = ('<collision name="c1"><origin xyz="0 0 0.5" rpy="0 1.5707963267948966 0"/>'
              '<geometry><cylinder radius="0.05" length="1"/></geometry></collision>'
              '<collision><geometry><mesh filename="package://x/y.stl" scale="2 2 2"/></geometry>'
              '</collision><collision><geometry><box size="1 2"/></geometry></collision>')
    model = rbd.Model.from_urdf(arm(tip_extra=shapes))
    collisions = model._robot.links['b'].collisions
    assert [c.kind for c in collisions] == ['cylinder', 'mesh']
    assert collisions[0].size == (0.05, 1.0) and collisions[0].name == 'c1'
    assert np.allclose(collisions[0].origin_xyz, [0, 0, 0.5])
    assert collisions[1].filename == 'package://x/y.stl' and collisions[1].size == (2, 2, 2)
    assert len(model.warnings) == 1 and '<box>: size="1 2" has 2 numbers' in model.warnings[0]


def test_robot_without_a_name_loads_with_a_warning():
    xml = arm().replace('<robot name="r">', '<robot>')
    model = rbd.Model.from_urdf(xml)
    assert model.name == '' and 'no name' in model.warnings[0]
    with pytest.raises(rbd.URDFSyntaxError):
        rbd.Model.from_urdf(xml, strict=True)


# ---- inertias ----------------------------------------------------------------------------------
POINT_MASS = ('<inertial><origin xyz="0 0 0.3"/><mass value="0.01"/>'
              '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>')
NOT_PSD = ('<inertial><mass value="1e-6"/><inertia ixx="-3.5e-8" ixy="0" ixz="0" iyy="3.5e-8" '
           'iyz="0" izz="9.1e-8"/></inertial>')       # TIAGo's antenna, in principal axes
TRIANGLE = ('<inertial><mass value="2"/><inertia ixx="8.67e-6" ixy="0" ixz="0" iyy="6.69e-4" '
            'iyz="0" izz="1.3735e-3"/></inertial>')   # ANYmal C's depth camera


def test_point_mass_is_physical_in_either_mode():
    model = rbd.Model.from_urdf(arm(tip_inertial=POINT_MASS), strict=True)
    assert not model.warnings and not model.notes
    g = rbd.gravity_torques(model, np.array([0.0, 0.5]))
    assert np.all(np.isfinite(g)) and abs(g[1]) > 0


@pytest.mark.parametrize('inertial, words', [(NOT_PSD, 'not positive semi-definite'),
                                             (TRIANGLE, 'triangle inequality')])
def test_doubtful_inertia_loads_as_written_and_equals_pinocchio(inertial, words):
    xml = arm(tip_inertial=inertial)
    model = rbd.Model.from_urdf(xml)
    assert len(model.warnings) == 1 and words in model.warnings[0]
    assert model.warnings[0].startswith('<robot_description>:4:')     # the link's line
    assert "link 'b'" in model.warnings[0] and model.warnings[0].error is rbd.InertiaError
    oracle = Oracle(model, xml)
    q, v, a = np.array([0.3, -0.4]), np.array([0.5, 1.0]), np.array([-1.0, 2.0])
    assert close(rbd.inverse_dynamics(model, q, v, a), oracle.inverse_dynamics(q, v, a)) < 1e-9
    assert close(rbd.mass_matrix(model, q), oracle.mass_matrix(q)) < 1e-9
    with pytest.raises(rbd.InertiaError, match=words):
        rbd.Model.from_urdf(xml, strict=True)


@pytest.mark.parametrize('inertial', [NOT_PSD, TRIANGLE])
def test_repair_inertia_takes_the_nearest_physical_one(inertial):
    from rbd_ros.dynamics.inertia import inertia_problem
    xml = arm(tip_inertial=inertial)
    model = rbd.Model.from_urdf(xml, repair_inertia=True)
    assert len(model.warnings) == 1
    warning = model.warnings[0]
    assert "link 'b'" in warning and 'repaired' in warning and '->' in warning
    before = rbd.Model.from_urdf(xml)
    # the body's inertia changed, its mass did not, and it is physical now
    i = model.body_int.shape[0] - 1
    assert model.body_float[i, 21] == before.body_float[i, 21]
    I = model.body_float[i, 25:31]
    rot = np.array([[I[0], I[1], I[2]], [I[1], I[3], I[4]], [I[2], I[4], I[5]]])
    assert inertia_problem(rot) is None
    assert not np.allclose(model.body_float[i, 25:31], before.body_float[i, 25:31])
    # the dynamics use the repaired inertia: harmless, so strict composes with repair
    assert warning.harmless and 'the dynamics use the repaired one (harmless)' in warning
    assert rbd.Model.from_urdf(xml, repair_inertia=True, strict=True).warnings == model.warnings
    with pytest.raises(rbd.InertiaError, match='refused by strict=True'):
        rbd.Model.from_urdf(xml, strict=True)


def test_nearest_valid_inertia_is_nearest():
    from rbd_ros.dynamics.inertia import inertia_problem, nearest_valid_inertia
    rng = np.random.default_rng(0)
    for _ in range(200):
        moments = np.sort(rng.normal(size=3))
        fixed, _, new = nearest_valid_inertia(np.diag(moments))
        assert inertia_problem(fixed) is None
        # no physical moments (sampled) are closer
        d = np.abs(rng.normal(size=(2000, 3)))
        candidates = d @ np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]]).T
        best = np.min(np.linalg.norm(np.sort(candidates, axis=1) - moments, axis=1))
        assert np.linalg.norm(np.sort(new) - moments) <= best + 1e-12
        if inertia_problem(np.diag(moments)) is None:
            assert np.allclose(np.sort(new), moments)


def test_welded_link_is_judged_after_lumping_too():
    heavy = ('<inertial><mass value="5"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
             'izz="1"/></inertial>')
    xml = robot(link('base'), link('a', heavy), link('antenna', NOT_PSD),
                joint('j1', 'base', 'a'), joint('weld', 'a', 'antenna', 'fixed'))
    model = rbd.Model.from_urdf(xml)
    assert len(model.warnings) == 1
    assert "link 'antenna'" in model.warnings[0] and 'not positive semi-definite' in model.warnings[0]
    assert 'welded by fixed joints to 1 other link (a)' in model.warnings[0]
    assert 'the body they form is physical' in model.warnings[0]
    # only the body enters the dynamics: harmless, and so it says; strict lets it pass
    assert model.warnings[0].harmless and model.warnings[0].endswith(
        'only that body enters the dynamics (harmless)')
    assert rbd.Model.from_urdf(xml, strict=True).warnings == model.warnings


def test_a_welded_body_that_is_not_physical_either_is_refused():
    light = ('<inertial><mass value="1e-6"/><inertia ixx="1e-9" ixy="0" ixz="0" iyy="1e-9" '
             'iyz="0" izz="1e-9"/></inertial>')
    xml = robot(link('base'), link('a', light), link('antenna', NOT_PSD),
                joint('j1', 'base', 'a'), joint('weld', 'a', 'antenna', 'fixed'))
    warning, = rbd.Model.from_urdf(xml).warnings
    assert 'not physical either' in warning and not warning.harmless
    assert 'harmless' not in warning
    with pytest.raises(rbd.InertiaError, match='refused by strict=True'):
        rbd.Model.from_urdf(xml, strict=True)


# iCub's published inertias: all zeros but CAD rounding noise, on links of 0.5 to 1.3 kg
ICUB_HEAD = ('<inertial><mass value="1.33687"/><origin xyz="0.0185 -0.1108 6.78454e-18"/>'
             '<inertia ixx="0" ixy="0" ixz="2.40741e-35" iyy="0" iyz="0" izz="0"/></inertial>')
ICUB_HIP = ('<inertial><mass value="0.526"/><origin xyz="0 0 0.03045"/><inertia '
            'ixx="-5.42101e-20" ixy="0" ixz="0" iyy="-5.42101e-20" iyz="0" izz="0"/></inertial>')
ICUB_ANKLE = ('<inertial><mass value="0.746"/><origin xyz="-0.0054 0.00163 -0.0172"/><inertia '
              'ixx="2.71051e-20" ixy="-1.69407e-21" ixz="1.35525e-20" iyy="5.42101e-20" '
              'iyz="3.38813e-21" izz="1.35525e-20"/></inertial>')


@pytest.mark.parametrize('inertial', [ICUB_HEAD, ICUB_HIP, ICUB_ANKLE],
                         ids=['head', 'hip', 'ankle'])
def test_an_inertia_zero_up_to_rounding_is_a_point_mass(inertial):
    """Judged against the link's mass and size (1e-6 of m L^2, L its reach from its frame):
    1e-20 kg m^2 on a 0.5 kg link a few cm long is rounding, physical, in either mode."""
    model = rbd.Model.from_urdf(arm(tip_inertial=inertial), strict=True)
    assert not model.warnings and not model.notes


def test_the_rounding_scale_follows_mass_and_size():
    from rbd_ros.dynamics.inertia import inertia_problem
    noise = np.diag([-1e-12, 0.0, 1e-12])
    assert inertia_problem(noise) is not None                   # alone: relative to itself
    assert inertia_problem(noise, mass=1.0, size=0.1) is None   # 1e-12 << 1e-6 * 1 * 0.1^2
    assert inertia_problem(noise, mass=1e-6, size=0.01) is not None    # 1e-12 > 1e-16
    assert inertia_problem(np.zeros((3, 3)), mass=1.0, size=0.1) is None   # a point mass
    # real problems stay problems at their scale (TIAGo's antenna, ANYmal C's camera)
    assert inertia_problem(np.diag([-3.5e-8, 3.5e-8, 9.1e-8]), 1e-6, 0.1) is not None
    assert inertia_problem(np.diag([8.67e-6, 6.69e-4, 1.3735e-3]), 2.0, 0.1) is not None


def test_strict_modes():
    """strict=True refuses what is not harmless, 'kinematics' what bears on frame poses, and
    anything else is a ValueError (not silently no strictness)."""
    from rbd_ros.dynamics.urdf import refused_by_strict
    mimic = joint('j3', 'a', 'c', 'fixed').replace('</joint>', '<mimic joint="j1"/></joint>')
    xml = robot(link('base'), link('a'), link('b', NOT_PSD), link('c'),
                joint('j1', 'base', 'a'), joint('j2', 'a', 'b', extra='<axis xyz="1 0 0"/>'),
                mimic)
    model = rbd.Model.from_urdf(xml)
    assert len(model.warnings) == 2
    assert refused_by_strict(model.warnings, False) == []
    assert refused_by_strict(model.warnings, True) == model.warnings
    kinematic, = refused_by_strict(model.warnings, 'kinematics')
    assert 'cannot mimic' in kinematic
    with pytest.raises(rbd.JointError, match="refused by strict='kinematics'"):
        rbd.Model.from_urdf(xml, strict='kinematics')
    for wrong in ('yes', 'all', 2):
        with pytest.raises(ValueError, match='strict must be'):
            rbd.Model.from_urdf(xml, strict=wrong)


# ---- xacro sources ----------------------------------------------------------------------------
XACRO = ('<?xml version="1.0"?>\n<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
         '  <xacro:property name="length" value="0.3"/>\n  <link name="base"/>\n</robot>')


@pytest.mark.parametrize('text, evidence', [
    (XACRO, '<xacro:property>'),
    (XACRO.replace(' xmlns:xacro="http://www.ros.org/wiki/xacro"', ''), '<xacro:property>'),
    (arm().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 ${z}"/>'), 'xyz="0 0 ${z}"'),
    (arm().replace('<link name="a">', '<link name="$(arg prefix)a">'), 'name="$(arg prefix)a"'),
], ids=['element', 'undeclared-prefix', 'substitution', 'argument'])
def test_a_xacro_source_is_an_error_giving_the_command(text, evidence):
    with pytest.raises(rbd.URDFSyntaxError) as info:
        rbd.Model.from_urdf(text)
    message = str(info.value)
    assert 'a xacro source, not a URDF' in message and evidence in message
    assert '`xacro robot.urdf.xacro > robot.urdf`' in message
    assert info.value.errors == [message]      # not followed by its consequences (no <link>)


def test_a_file_named_xacro_is_an_error_giving_the_command(tmp_path):
    path = tmp_path / 'robot.urdf.xacro'
    path.write_text(arm())                        # even one without xacro constructs
    with pytest.raises(rbd.URDFSyntaxError, match='its name ends in .xacro') as info:
        rbd.Model.from_urdf(str(path))
    assert f'`xacro {path} > {tmp_path / "robot.urdf"}`' in str(info.value)
    broken = tmp_path / 'robot.xacro'
    broken.write_text('<robot><xacro:if value="${a < b}"></robot>')     # not even XML
    with pytest.raises(rbd.URDFSyntaxError) as info:
        rbd.Model.from_urdf(str(broken))
    assert f'`xacro {broken} > {tmp_path / "robot.urdf"}`' in str(info.value)


def test_expanded_xacro_output_loads():
    """xacro keeps the xmlns:xacro declaration in its output (38 of example-robot-data's URDFs
    carry it), and comments may quote macros: neither makes a xacro source."""
    text = arm().replace('<robot name="r">',
                         '<robot name="r" xmlns:xacro="http://wiki.ros.org/xacro">'
                         '<!-- <xacro:arm prefix="${p}"/> -->')
    assert rbd.Model.from_urdf(text, strict=True).joint_names == ['j1', 'j2']


def test_inertia_welded_to_the_world_is_not_used_a_note():
    xml = robot(link('base', TRIANGLE), link('a'), joint('j1', 'base', 'a'))
    fixed = rbd.Model.from_urdf(xml, strict=True)
    assert not fixed.warnings and any('not used' in n and "link 'base'" in n for n in fixed.notes)
    floating = rbd.Model.from_urdf(xml, floating_base=True)
    assert len(floating.warnings) == 1 and "link 'base'" in floating.warnings[0]


def test_a_joint_that_moves_no_mass_is_warned():
    xml = robot(link('base'), link('a'), link('tip', ''), joint('j1', 'base', 'a'),
                joint('j2', 'a', 'tip', extra='<axis xyz="1 0 0"/>'))
    model = rbd.Model.from_urdf(xml)
    assert len(model.warnings) == 1 and "joint 'j2' moves no mass" in model.warnings[0]
    with pytest.raises(FloatingPointError):
        rbd.forward_dynamics(model, np.zeros(2), np.zeros(2), np.zeros(2))
    geared = rbd.Model.from_urdf(xml, armature={'j2': 0.01})
    assert not geared.warnings
    assert np.all(np.isfinite(rbd.forward_dynamics(geared, np.zeros(2), np.zeros(2),
                                                   np.ones(2))))


# ---- joints and limits -------------------------------------------------------------------------
@pytest.mark.parametrize('limit, field, words', [
    ('<limit lower="0.5" upper="0.5" effort="1" velocity="1"/>', 'position', 'lower == upper'),
    ('<limit effort="1" velocity="1"/>', 'position', 'lower == upper (0)'),
    ('<limit lower="-1" upper="1" effort="0" velocity="1"/>', 'effort', 'effort limit 0'),
    ('<limit lower="-1" upper="1" effort="1" velocity="0"/>', 'velocity', 'velocity limit 0'),
    ('<limit lower="-1e16" upper="1e16" effort="1" velocity="1"/>', 'position', 'beyond'),
])
def test_degenerate_limits_mean_no_limit(limit, field, words):
    xml = robot(link('base'), link('a'), joint('j1', 'base', 'a', limit=limit))
    model = rbd.Model.from_urdf(xml)
    assert any(words in w and "joint 'j1'" in w for w in model.warnings), model.warnings
    info = model.joint['j1']
    if field == 'position':
        assert (model.lower_limits[0], model.upper_limits[0]) == (-math.inf, math.inf)
        assert (info.lower, info.upper) == (-math.inf, math.inf)
    else:
        arrays = {'effort': model.effort_limits, 'velocity': model.velocity_limits}
        assert arrays[field][0] == math.inf and getattr(info, field) == math.inf
        assert (model.lower_limits[0], model.upper_limits[0]) == (-1, 1)
    with pytest.raises(rbd.JointError):
        rbd.Model.from_urdf(xml, strict=True)


def test_limits_of_continuous_and_fixed_joints_say_nothing():
    xml = robot(link('base'), link('a'), link('b'),
                joint('j1', 'base', 'a', 'continuous', limit='') .replace(
                    '</joint>', '<limit effort="0" velocity="0"/></joint>'),
                joint('j2', 'a', 'b', 'fixed').replace(
                    '</joint>', '<limit effort="0" velocity="0"/></joint>'))
    model = rbd.Model.from_urdf(xml)
    assert [w for w in model.warnings if 'j2' in w] == []
    assert (model.lower_limits[0], model.upper_limits[0]) == (-math.inf, math.inf)


def test_drake_rotor_inertia_is_armature():
    tags = ('<drake:rotor_inertia value="2e-5"/><drake:gear_ratio value="100"/>'
            '<axis xyz="0 0 1"/>')
    xml = robot(link('base'), link('a'), joint('j1', 'base', 'a', extra=tags)).replace(
        '<robot name="r">', '<robot name="r" xmlns:drake="http://drake.mit.edu">')
    model = rbd.Model.from_urdf(xml)
    assert not model.warnings and model.armature[0] == pytest.approx(0.2)
    plain = rbd.Model.from_urdf(xml, armature={'j1': 0.0})
    assert rbd.mass_matrix(model, [0.0])[0, 0] == pytest.approx(
        rbd.mass_matrix(plain, [0.0])[0, 0] + 0.2)


# ---- every problem at once ---------------------------------------------------------------------
def test_every_error_is_reported_at_once():
    xml = robot(link('base'), link('a'), link('a'), link('b'),
                joint('j1', 'base', 'a', 'ball'),
                joint('j2', 'a', 'ghost'),
                joint('j3', 'base', 'b', extra='<axis xyz="0 0 0"/>'))
    with pytest.raises(rbd.ModelError) as info:
        rbd.Model.from_urdf(xml)
    errors = info.value.errors
    assert len(errors) == 4, errors
    assert "duplicate link name 'a'" in errors[0] and 'and 3 more errors' in str(info.value)
    assert str(info.value).startswith(errors[0])
    assert any("unknown type 'ball'" in e for e in errors)
    assert any("child link 'ghost' does not exist" in e for e in errors)
    assert any('axis is zero' in e for e in errors)
    assert all(e.startswith('<robot_description>:') for e in errors)


def test_strict_reports_every_warning_at_once():
    xml = robot(link('base'), link('a', TRIANGLE), link('b', NOT_PSD),
                joint('j1', 'base', 'a', limit='<limit effort="0" velocity="1"/>'),
                joint('j2', 'a', 'b', extra='<axis xyz="1 0 0"/>'))
    model = rbd.Model.from_urdf(xml)
    with pytest.raises(rbd.ModelError) as info:
        rbd.Model.from_urdf(xml, strict=True)
    assert len(info.value.errors) == len(model.warnings) == 4
    assert 'and 3 more errors' in str(info.value)
