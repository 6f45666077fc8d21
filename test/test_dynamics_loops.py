"""Closed kinematic loops (<constraint>, RBDA chapter 8): the description, the constraints'
rows (phi, K, k) against finite differences and the frames' poses, closing the loops against a
four-bar's closed-form position analysis, the closed system's forward dynamics against
Pinocchio's constraintDynamics (ball and fixed loops as its rigid constraints, a revolute one
as two ball constraints on its axis) and against the KKT system solved densely, the motors'
inverse dynamics against virtual work along the closed manifold, batches, mimic joints, and
the kernels' use from another compiled kernel."""
import os

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from pin_oracle import LoopOracle, close
from rbd_ros.dynamics import layout as L
from rbd_ros.dynamics.arguments import full_q
from rbd_ros.dynamics.rotations import rpy_to_matrix
from urdf_factory import (FOUR_BAR, FOUR_BAR_LINKS, four_bar_angles, four_bar_positions,
                          four_bar_urdf, random_urdf)

HERE = os.path.dirname(__file__)
ANKLE = os.path.join(HERE, '..', 'rbd_ros', 'robots', 'parallel_ankle.urdf')
G = 9.81


# ---- models ---------------------------------------------------------------------------------
def _vec(x):
    return ' '.join(f'{float(v):.17g}' for v in x)


def _rpy(R):
    """Roll, pitch, yaw of a rotation (URDF's fixed-axis x-y-z)."""
    pitch = np.arcsin(-np.clip(R[2, 0], -1.0, 1.0))
    return np.array([np.arctan2(R[2, 1], R[2, 2]), pitch, np.arctan2(R[1, 0], R[0, 0])])


def _rotation(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def looped_urdf(seed, kinds, n_links=9, floating=False):
    """(URDF text, a configuration where its loops are closed): a random tree (random_urdf, no
    mimic) with one <constraint> per entry of ``kinds`` between two random links on different
    bodies, its frames placed where they meet at a random configuration q*."""
    xml = random_urdf(seed, n_links=n_links, branching=True)
    tree = rbd.Model.from_urdf(xml, floating_base=floating)
    rng = np.random.default_rng(seed + 7)
    q_star = tree.random_configuration(rng)
    links = [name for name in tree.frame_names
             if floating or tree._link_body[name] != 0 or name == tree.root_link]
    elements = []
    for n, kind in enumerate(kinds):
        while True:
            a, b = rng.choice(links, 2, replace=False)
            if tree._link_body[a] != tree._link_body[b]:
                break
        xyz_a, rpy_a = rng.uniform(-0.2, 0.2, 3), rng.uniform(-np.pi, np.pi, 3)
        T_a = rbd.frame_pose(tree, q_star, a)
        frame = np.eye(4)
        frame[:3, :3], frame[:3, 3] = rpy_to_matrix(rpy_a), xyz_a
        world = T_a @ frame                              # frame A (= frame B) at q*
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        turn = np.eye(4)
        if kind == 'revolute':                           # B may turn about the axis
            turn[:3, :3] = _rotation(axis, rng.uniform(-np.pi, np.pi))
        in_b = np.linalg.inv(rbd.frame_pose(tree, q_star, b)) @ world @ turn
        axes = ''
        if kind == 'revolute':
            axes = (f'<parent_axis xyz="{_vec(axis * 1.7)}"/>',
                    f'<child_axis xyz="{_vec(turn[:3, :3].T @ axis)}"/>')
        elements.append(
            f'<constraint name="loop{n}" type="{kind}"><parent link="{a}"/>'
            f'<parent_origin xyz="{_vec(xyz_a)}" rpy="{_vec(rpy_a)}"/>{axes[0] if axes else ""}'
            f'<child link="{b}"/><child_origin xyz="{_vec(in_b[:3, 3])}" '
            f'rpy="{_vec(_rpy(in_b[:3, :3]))}"/>{axes[1] if axes else ""}</constraint>')
    return xml.replace('</robot>', '\n'.join(elements) + '\n</robot>'), q_star


def consistent_velocity(model, q, rng, scale=2.0):
    """A velocity the loops allow at q: in the null space of K."""
    K = rbd.constraint_jacobian(model, q)
    _, s, Vt = np.linalg.svd(K)
    rank = int(np.sum(s > 1e-10 * max(1.0, s.max())))
    N = Vt[rank:].T
    return N @ rng.normal(size=N.shape[1]) * scale


def consistent_acceleration(model, q, v, rng):
    """An acceleration the loops allow at (q, v): K a = k, plus a random null-space part."""
    K, k = rbd.constraint_jacobian(model, q), rbd.constraint_bias(model, q, v)
    a = np.linalg.lstsq(K, k, rcond=1e-12)[0]
    return a + consistent_velocity(model, q, rng, 1.0)


def ankle(floating=False):
    with open(ANKLE) as handle:
        xml = handle.read()
    return rbd.Model.from_urdf(xml, floating_base=floating), xml


# ---- the description ----------------------------------------------------------------------
ARM = '''<robot name="r">
  <link name="base"/>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="c"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="tip"/>
  <joint name="j1" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>
  <joint name="j2" type="continuous"><parent link="a"/><child link="b"/><origin xyz="1 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="j3" type="continuous"><parent link="base"/><child link="c"/><origin xyz="2 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="tip_joint" type="fixed"><parent link="b"/><child link="tip"/><origin xyz="1 0 0"/></joint>
  {}
</robot>'''
BALL = '<constraint name="{}" type="ball"><parent link="{}"/><child link="{}"/>{}</constraint>'


@pytest.mark.parametrize('element, words', [
    (BALL.format('x', 'b', 'nowhere', ''), ("constraint 'x'", "child link 'nowhere' does not exist")),
    (BALL.format('x', 'nowhere', 'b', ''), ("constraint 'x'", "parent link 'nowhere' does not exist")),
    (BALL.format('x', 'b', 'b', ''), ("constraint 'x'", "link 'b' is constrained to itself")),
    (BALL.format('x', 'b', 'tip', ''), ("constraint 'x'", "'b' and 'tip'", 'welded together')),
    ('<constraint name="x" type="prismatic"><parent link="b"/><child link="c"/></constraint>',
     ("constraint 'x'", "unknown type 'prismatic'", 'ball, revolute, fixed')),
    ('<constraint name="x"><parent link="b"/><child link="c"/></constraint>',
     ("constraint 'x'", 'no type')),
    ('<constraint type="ball"><parent link="b"/><child link="c"/></constraint>',
     ('<constraint> without a name',)),
    ('<constraint name="x" type="ball"><child link="c"/></constraint>',
     ("constraint 'x'", 'no <parent link')),
    ('<constraint name="x" type="revolute"><parent link="b"/><parent_axis xyz="0 0 0"/>'
     '<child link="c"/></constraint>', ("constraint 'x'", 'parent_axis is zero')),
    ('<constraint name="x" type="revolute"><parent link="b"/><child link="c"/>'
     '<child_axis xyz="0 0 nan"/></constraint>', ("constraint 'x'", 'child_axis', 'non-finite')),
    ('<constraint name="x" type="ball"><parent link="b"/><parent_origin xyz="1 2"/>'
     '<child link="c"/></constraint>', ("constraint 'x' parent origin", '3 expected')),
    (BALL.format('x', 'b', 'c', '') + BALL.format('x', 'a', 'c', ''),
     ("duplicate constraint name 'x'",)),
])
def test_a_bad_constraint_is_refused_naming_it_and_the_culprit(element, words):
    with pytest.raises(rbd.ModelError) as error:
        rbd.Model.from_urdf(ARM.format(element))
    message = str(error.value)
    assert message.startswith('<robot_description>:'), message
    for word in words:
        assert word in message, message


def test_a_constraint_between_links_welded_to_the_world_is_refused():
    xml = ARM.format(BALL.format('x', 'base', 'base', '')).replace(
        '<link name="tip"/>', '<link name="tip"/><link name="stand"/>').replace(
        '</robot>', '<joint name="s" type="fixed"><parent link="base"/><child link="stand"/>'
                    '</joint></robot>').replace('<child link="base"/>', '<child link="stand"/>')
    with pytest.raises(rbd.TopologyError, match="'base' and 'stand' are welded to the world"):
        rbd.Model.from_urdf(xml)


def test_the_constraint_tables_and_the_rows():
    xml = ARM.format('<constraint name="hinge" type="revolute"><parent link="tip"/>'
                     '<parent_axis xyz="0 0 2"/><child link="c"/><child_origin xyz="0 1 0"/>'
                     '<child_axis xyz="0 0 -1"/></constraint>' + BALL.format('pin', 'a', 'c', '')
                     + '<constraint name="weld" type="fixed"><parent link="b"/><child link="c"/>'
                     '<parent_axis xyz="1 0 0"/></constraint>')
    model = rbd.Model.from_urdf(xml)
    assert model.constraint_names == ['hinge', 'pin', 'weld']
    assert [(c.type, c.parent, c.child, c.row, c.rows) for c in model.constraints] == [
        ('revolute', 'tip', 'c', 0, 5), ('ball', 'a', 'c', 5, 3), ('fixed', 'b', 'c', 8, 6)]
    assert model.constraint_rows == 14
    assert model.row_constraint.tolist() == [0] * 5 + [1] * 3 + [2] * 6
    assert any("<parent_axis> ignored (a fixed constraint has no axis)" in n for n in model.notes)
    # the kernels' view: the handle says how many rows and where each row's constraint is
    h = model.create_data().handle
    assert h[L.H_NLOOP] == 3 and h[L.H_NROW] == 14
    assert model.loop_int[:, L.LOOP_ROWS].tolist() == [5, 3, 6]
    assert model.loop_int[:, L.LOOP_TYPE].tolist() == [L.LOOP_REVOLUTE, L.LOOP_BALL, L.LOOP_FIXED]
    # frame A of the hinge is the tip's frame, on body b; its axis unit and the normals
    # orthogonal to it
    f = model.loop_float[0]
    assert np.allclose(f[L.LOOP_AXIS_A:L.LOOP_AXIS_A + 3], [0, 0, 1])
    assert np.allclose(f[L.LOOP_AXIS_B:L.LOOP_AXIS_B + 3], [0, 0, -1])
    n1, n2 = f[L.LOOP_NORMAL_1:L.LOOP_NORMAL_1 + 3], f[L.LOOP_NORMAL_2:L.LOOP_NORMAL_2 + 3]
    assert np.allclose([n1 @ n1, n2 @ n2, n1 @ n2, n1[2], n2[2]], [1, 1, 0, 0, 0])
    assert np.allclose(f[L.LOOP_PLACEMENT_A + 9:L.LOOP_PLACEMENT_A + 12], [1, 0, 0])


def test_a_model_without_constraints_has_the_same_tables_as_before():
    """The tree's tables do not change with <constraint> elements, and without them the loop
    tables are empty: nothing in the kernels' tables differs from a model built before."""
    with open(ANKLE) as handle:
        xml = handle.read()
    cut = xml.split('<!-- the loops')[0] + xml.split('</constraint>')[-1]
    tree, looped = rbd.Model.from_urdf(cut), rbd.Model.from_urdf(xml)
    assert tree.constraint_names == [] and tree.constraint_rows == 0
    assert tree.loop_int.shape == (0, L.LOOP_INT_COLS) and tree.loop_float.shape == (0, 36)
    assert np.array_equal(tree.body_int, looped.body_int)
    assert np.array_equal(tree._body_float, looped._body_float)
    assert tree.joint_names == looped.joint_names
    data = tree.create_data()
    assert data.handle[L.H_NROW] == 0 and data.loop_ws.size == 1
    q = tree.random_configuration(1)
    v = np.random.default_rng(1).normal(size=tree.nv)
    assert np.array_equal(rbd.constrained_forward_dynamics(tree, q, v, v),
                          rbd.forward_dynamics(tree, q, v, v, method='crba'))
    assert np.array_equal(rbd.constrained_inverse_dynamics(tree, q, v, v, tree.joint_names),
                          rbd.inverse_dynamics(tree, q, v, v))
    assert rbd.constraint_residual(tree, q).shape == (0,)
    assert rbd.constraint_jacobian(tree, q).shape == (0, tree.nv)
    assert rbd.mobility(tree) == tree.nv
    assert np.array_equal(rbd.close_loops(tree, q, []), q)


def test_actuated_joints_from_transmissions_and_ros2_control():
    xml = ARM.format(
        '<transmission name="t1"><type>transmission_interface/SimpleTransmission</type>'
        '<joint name="j3"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>'
        '<actuator name="m3"/></transmission>'
        '<transmission name="t2"><joint name="nowhere"/><joint name="tip_joint"/></transmission>'
        '<ros2_control name="arm" type="system"><hardware><plugin>x</plugin></hardware>'
        '<joint name="j1"><command_interface name="effort"/><state_interface name="position"/>'
        '</joint><joint name="j2"><state_interface name="position"/></joint>'
        '<joint name="j3"><command_interface name="effort"/></joint></ros2_control>')
    model = rbd.Model.from_urdf(xml, strict=True)
    assert model.actuated_joints == ['j3', 'j1']      # the file's order, each once
    assert not model.warnings
    assert any("'t2' names joint 'nowhere'" in n for n in model.notes)
    assert any("names fixed joint 'tip_joint'" in n for n in model.notes)
    assert rbd.Model.from_urdf(ARM.format('')).actuated_joints == []


# ---- phi, K and k ---------------------------------------------------------------------------
def test_the_residual_is_the_frames_offset_and_turn():
    """phi from the frames' world poses (frame_pose, composed here with the constraints'
    origins): origin offset, the revolute's turn of axis A onto axis B, the fixed one's
    rotation vector."""
    xml, q_star = looped_urdf(5, ('ball', 'revolute', 'fixed'))
    model = rbd.Model.from_urdf(xml)
    q = model.random_configuration(3)
    phi = rbd.constraint_residual(model, q)
    for index, info in enumerate(model.constraints):
        record = model._robot.constraints[info.name]
        frames = []
        for link, R, p in ((info.parent, record.parent_rotation, record.parent_xyz),
                           (info.child, record.child_rotation, record.child_xyz)):
            T = rbd.frame_pose(model, q, link)
            frames.append((T[:3, :3] @ R, T[:3, :3] @ p + T[:3, 3]))
        (Ra, pa), (Rb, pb) = frames
        rows = phi[info.row:info.row + info.rows]
        assert np.allclose(rows[:3], pb - pa, atol=1e-14)
        if info.type == 'revolute':
            a, b = Ra @ record.parent_axis, Rb @ record.child_axis
            e = np.cross(a, b)
            e *= np.arctan2(np.linalg.norm(e), a @ b) / np.linalg.norm(e)
            n1 = model.loop_float[index, L.LOOP_NORMAL_1:L.LOOP_NORMAL_1 + 3]
            n2 = model.loop_float[index, L.LOOP_NORMAL_2:L.LOOP_NORMAL_2 + 3]
            assert np.allclose(rows[3:], [(Ra @ n1) @ e, (Ra @ n2) @ e], atol=1e-12)
        if info.type == 'fixed':
            R = Rb @ Ra.T
            angle = np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1))
            w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
            assert np.allclose(rows[3:], w * angle / (2 * np.sin(angle)), atol=1e-12)
    assert np.abs(rbd.constraint_residual(model, q_star)).max() < 1e-12


@pytest.mark.parametrize('seed, floating', [(11, False), (12, True), (13, False), (14, True)])
def test_K_is_the_derivative_of_phi_and_k_of_minus_K_v(seed, floating):
    """K d = d phi / dt along q (+) d t (central differences) where the loops are closed (and
    for the linear rows anywhere); k = -d(K v)/dt along q (+) v t, a motion with qdd = 0."""
    xml, q_star = looped_urdf(seed, ('ball', 'revolute', 'fixed'), floating=floating)
    model = rbd.Model.from_urdf(xml, floating_base=floating)
    rng = np.random.default_rng(seed)
    h = 1e-6
    for q, rows in ((q_star, slice(None)), (model.random_configuration(rng), [0, 1, 2])):
        d = rng.normal(size=model.nv)
        numeric = (rbd.constraint_residual(model, rbd.integrate(model, q, d, h))
                   - rbd.constraint_residual(model, rbd.integrate(model, q, d, -h))) / (2 * h)
        assert close((rbd.constraint_jacobian(model, q) @ d)[rows], numeric[rows], 1e-7) < 1e-7
    for q in (q_star, model.random_configuration(rng)):
        v = rng.normal(size=model.nv)
        Kdot_v = (rbd.constraint_jacobian(model, rbd.integrate(model, q, v, h)) @ v
                  - rbd.constraint_jacobian(model, rbd.integrate(model, q, v, -h)) @ v) / (2 * h)
        assert close(rbd.constraint_bias(model, q, v), -Kdot_v) < 1e-6


def test_moving_along_the_null_space_of_K_keeps_the_loops_closed():
    xml, q_star = looped_urdf(21, ('ball', 'revolute', 'fixed'))
    model = rbd.Model.from_urdf(xml)
    v = consistent_velocity(model, q_star, np.random.default_rng(0))
    for t in (1e-3, 1e-4):
        assert np.abs(rbd.constraint_residual(model, rbd.integrate(model, q_star, v, t))).max() \
            < 10 * t * t * np.abs(v).max() ** 2


# ---- closing the loops: the four-bar's closed-form position analysis -------------------------
@pytest.mark.parametrize('closure', ['revolute', 'ball'])
def test_close_loops_gives_the_four_bar_closed_form(closure):
    model = rbd.Model.from_urdf(four_bar_urdf(closure))
    q = model.neutral()
    worst = 0.0
    for theta in np.linspace(FOUR_BAR['theta'], FOUR_BAR['theta'] + 2 * np.pi, 73)[1:]:
        q[0] = theta - FOUR_BAR['theta']                     # crank held, warm start
        q = rbd.close_loops(model, q, ['crank_joint'])
        worst = max(worst, np.abs(q - four_bar_angles(theta)).max())
        assert np.abs(rbd.constraint_residual(model, q)).max() <= 1e-12
    assert worst < 1e-10, worst
    assert rbd.mobility(model) == 1


def test_close_loops_holds_what_it_is_told_and_says_when_it_cannot():
    model = rbd.Model.from_urdf(four_bar_urdf('revolute'))
    q = four_bar_angles(1.3) + np.array([0.0, 0.05, -0.04])
    closed = rbd.close_loops(model, q, ['rocker_joint'])
    assert closed[2] == q[2] and np.abs(rbd.constraint_residual(model, closed)).max() <= 1e-12
    with pytest.raises(ValueError, match=r"constraint 'coupler_rocker' \(coupler - rocker\) stays "
                                         r"open by [0-9.e-]+ m"):
        rbd.close_loops(model, q, ['crank_joint', 'rocker_joint'])
    with pytest.raises(ValueError, match='stays open'):
        rbd.close_loops(model, np.array([2.3, 0.0, 3.0]), ['crank_joint', 'rocker_joint'])
    with pytest.raises(ValueError, match="hold names 'nope'"):
        rbd.close_loops(model, q, ['nope'])
    batch = rbd.close_loops(model, np.stack([q, q + 0.01]), ['crank_joint'])
    assert batch.shape == (2, 3)
    assert np.allclose(batch[0], rbd.close_loops(model, q, ['crank_joint']), atol=1e-14)


PUSHROD_LEG = os.path.join(HERE, 'data', 'robots', 'pushrod_leg.urdf')


def _walked(model, q, hold, steps=400):
    """q closed by moving the held joints there from the neutral pose in ``steps`` tiny steps
    (each a warm start close_loops finishes without a long step): the neutral pose's branch."""
    index = [model.joint[name].q_index for name in hold]
    closed = rbd.close_loops(model, model.neutral(), hold)
    start = closed[index].copy()
    for t in np.linspace(0.0, 1.0, steps)[1:]:
        closed[index] = start + t * (q[index] - start)
        closed = rbd.close_loops(model, closed, hold)
    return closed


@pytest.mark.parametrize('motors', [(0.6, -0.6), (0.3, 0.0), (0.0, 0.45), (-0.8, 0.9)])
def test_a_loop_closed_in_one_jump_stays_on_the_neutral_poses_branch_in_its_limits(motors):
    """A user's push-rod knee (a parallelogram): the motors put far from the neutral pose and
    the loop closed in one call. A Newton step from there landed on the crossed parallelogram
    (the knee at -8.40 rad for (0.6, -0.6), outside its +-2.5 limits; -38.6 for (0, 0.45));
    now the result is the one reached by moving the motors there in small steps."""
    model = rbd.Model.from_urdf(PUSHROD_LEG)
    hold = model.actuated_joints
    q = model.neutral()
    q[[model.joint[name].q_index for name in hold]] = motors
    closed = rbd.close_loops(model, q, hold)
    assert np.abs(rbd.constraint_residual(model, closed)).max() <= 1e-12
    assert np.allclose(closed, _walked(model, q, hold), rtol=0, atol=1e-9), closed
    assert np.all(closed >= model.lower_limits) and np.all(closed <= model.upper_limits)
    assert np.array_equal(closed[[model.joint[n].q_index for n in hold]], motors)


def test_a_batch_closes_each_row_as_alone_from_one_start_or_one_each():
    model = rbd.Model.from_urdf(PUSHROD_LEG)
    hold = model.actuated_joints
    index = [model.joint[name].q_index for name in hold]
    Q = np.tile(model.neutral(), (3, 1))
    Q[:, index] = [(0.6, -0.6), (0.3, 0.0), (-0.8, 0.9)]
    alone = np.stack([rbd.close_loops(model, q, hold) for q in Q])
    assert np.array_equal(rbd.close_loops(model, Q, hold), alone)
    start = rbd.close_loops(model, model.neutral(), hold)
    assert np.allclose(rbd.close_loops(model, Q, hold, start=start), alone, rtol=0, atol=1e-12)
    assert np.allclose(rbd.close_loops(model, Q, hold, start=np.tile(start, (3, 1))), alone,
                       rtol=0, atol=1e-12)


def test_closing_loops_leaves_a_floating_base_and_the_joints_on_no_loop_where_they_are():
    """The push-rod leg on a floating base: the base does not take part in closing the loop
    (it moves the loop whole); it was tilted 27 degrees by the least-norm steps."""
    model = rbd.Model.from_urdf(PUSHROD_LEG, floating_base=True)
    assert rbd.loop_joints(model) == {'FL_hip', 'FL_knee', 'FL_knee_motor', 'FL_rod_joint'}
    assert set(model.actuated_joints) == {'FL_hip', 'FL_knee_motor'}
    assert rbd.passive_joints(model) == {'FL_knee', 'FL_rod_joint'}
    assert rbd.passive_joints(rbd.Model.from_urdf(ARM)) == frozenset()
    q = model.neutral()
    q[:7] = [0.1, -0.2, 0.35, 0.0, 0.0, 0.0, 1.0]
    q[[model.joint[name].q_index for name in model.actuated_joints]] = (0.6, -0.6)
    closed = rbd.close_loops(model, q, model.actuated_joints)
    assert np.array_equal(closed[:7], q[:7])
    assert np.abs(rbd.constraint_residual(model, closed)).max() <= 1e-12
    fixed = rbd.Model.from_urdf(PUSHROD_LEG)
    assert np.allclose(closed[7:], rbd.close_loops(fixed, q[7:], fixed.actuated_joints),
                       rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r'stays open by [0-9.e-]+ m where the search stopped: '
                                         r'no closed configuration near q$'):
        rbd.close_loops(four_bar_model_that_cannot_close(), np.zeros(3), [])


def test_a_four_bar_drawn_straight_at_zero_closes_and_has_one_degree_of_freedom():
    """A user's crank-rocker with every link along x at zero: open there by 0.02 m and a dead
    centre (the residual's gradient vanishes), so that mobility and a Simulator at its
    default start raised 'stays open'. The loop closes from the neutral pose turned a little;
    the crank then walks back to zero."""
    model = rbd.Model.from_urdf(os.path.join(HERE, 'data', 'robots', 'fourbar_straight.urdf'))
    assert rbd.mobility(model) == 1
    closed = rbd.close_loops(model, model.neutral(), model.actuated_joints)
    assert closed[model.joint['crank_joint'].q_index] == 0.0
    assert np.abs(rbd.constraint_residual(model, closed)).max() <= 1e-12
    from rbd_ros.simulation import Simulator
    assert np.array_equal(Simulator(model).q, closed)


FOURBAR_STRAIGHT = os.path.join(HERE, 'data', 'robots', 'fourbar_straight.urdf')


@pytest.mark.parametrize('crank', [-3.0, -2.0, -1.0, 1.0, 2.0, 3.0])
def test_a_crank_jumped_far_lands_on_the_branch_it_turns_on(crank):
    """The crank-rocker cannot pass between its two assembly modes while the crank drives it:
    a crank put far from zero in one call must land on the branch the crank turns on from the
    start Simulator takes (17 of 30 crank angles landed on the other one: Newton's unstepped
    answer from the straight pose was taken)."""
    model = rbd.Model.from_urdf(FOURBAR_STRAIGHT)
    q = model.neutral()
    q[0] = crank
    jumped = rbd.close_loops(model, q, ['crank_joint'])
    walked = rbd.close_loops(model, model.neutral(), ['crank_joint'])
    for angle in np.linspace(0.0, crank, 120)[1:]:
        walked[0] = angle
        walked = rbd.close_loops(model, walked, ['crank_joint'])
    turns = np.remainder(jumped - walked + np.pi, 2 * np.pi) - np.pi
    assert np.abs(turns).max() < 1e-9, (jumped, walked)


def test_a_pose_reached_only_through_poses_that_do_not_close_is_still_closed():
    """A non-Grashof four-bar (the rocker halved): its crank reaches pi on a branch the
    neutral pose's does not lead to (the way is barred); Newton's method from the straight pose
    stalled there, and close_loops said 'stays open' of a pose that closes."""
    text = open(FOURBAR_STRAIGHT).read()
    point = '<child_origin xyz="0.12 0 0"'
    assert point in text
    model = rbd.Model.from_urdf(text.replace(point, '<child_origin xyz="0.06 0 0"'))
    q = model.neutral()
    q[0] = 3.14
    closed = rbd.close_loops(model, q, ['crank_joint'])
    assert closed[0] == 3.14 and np.abs(rbd.constraint_residual(model, closed)).max() <= 1e-12


def four_bar_model_that_cannot_close():
    """The four-bar with its constraint's point 3 m along the rocker: out of the coupler's
    reach anywhere."""
    text = four_bar_urdf('ball')
    point = f'<child_origin xyz="{FOUR_BAR["rocker"]:.17g} 0 0"/>'
    assert point in text
    return rbd.Model.from_urdf(text.replace(point, '<child_origin xyz="3 0 0"/>'))


def test_the_parallel_ankle_closes_and_has_two_degrees_of_freedom():
    model, _ = ankle()
    assert not model.warnings
    assert model.actuated_joints == ['motor_left', 'motor_right']
    assert model.constraint_names == ['rod_left_ball', 'rod_right_ball']
    assert rbd.mobility(model) == 2
    assert np.abs(rbd.constraint_residual(model, model.q_neutral)).max() < 1e-15
    q = model.neutral()
    left, right = model.joint['motor_left'].q_index, model.joint['motor_right'].q_index
    pitch, roll = model.joint['ankle_pitch'].q_index, model.joint['ankle_roll'].q_index
    q[[left, right]] = 0.3                                     # alike: the foot pitches
    q = rbd.close_loops(model, q, model.actuated_joints)
    assert q[pitch] > 0.2 and abs(q[roll]) < 1e-12
    q[[left, right]] = [0.3, -0.3]                             # against each other: it rolls
    q = rbd.close_loops(model, q, model.actuated_joints)
    assert q[roll] > 0.2
    # the rods keep their length: the foot's point stays 0.25 m from the crank's tip
    for side in ('left', 'right'):
        T = rbd.frame_pose(model, q, f'rod_{side}')
        y = 0.035 if side == 'left' else -0.035
        point = rbd.frame_pose(model, q, 'foot') @ np.array([-0.04, y, -0.03, 1.0])
        assert abs(np.linalg.norm(point[:3] - T[:3, 3]) - 0.25) < 1e-12


# ---- forward dynamics: Pinocchio's constraintDynamics ----------------------------------------
@pytest.mark.parametrize('floating', [False, True])
def test_the_parallel_ankle_forward_dynamics_equals_pinocchio(floating):
    model, xml = ankle(floating)
    oracle = LoopOracle(model, xml)
    rng = np.random.default_rng(4)
    worst = 0.0
    for n in range(8):
        q = model.random_configuration(rng) if floating else model.neutral()
        if floating:
            q[7:] = 0.0
        motors = [model.joint[j].q_index for j in model.actuated_joints]
        q[motors] = rng.uniform(-0.5, 0.5, 2)
        q = rbd.close_loops(model, q, model.actuated_joints + (['root_joint'] if floating else []))
        v = consistent_velocity(model, q, rng)
        tau = rng.normal(size=model.nv)
        ours = rbd.constrained_forward_dynamics(model, q, v, tau)
        worst = max(worst, close(ours, oracle.constrained_forward_dynamics(q, v, tau)))
    assert worst < 1e-8, worst


@pytest.mark.parametrize('seed, kinds, floating', [
    (31, ('ball',), False), (32, ('ball', 'ball'), True), (33, ('fixed',), False),
    (34, ('ball', 'fixed'), True), (35, ('fixed', 'ball'), False), (36, ('ball',), True)])
def test_random_trees_with_ball_and_fixed_loops_equal_pinocchio(seed, kinds, floating):
    """Random trees (every joint type) closed by ball (CONTACT_3D) and fixed (CONTACT_6D)
    loops: Pinocchio's exact solve where the rows are independent, its proximal iterations
    where they are not (a loop through fewer joints than it has rows)."""
    xml, q_star = looped_urdf(seed, kinds, floating=floating)
    model = rbd.Model.from_urdf(xml, floating_base=floating)
    oracle = LoopOracle(model, xml)
    rng = np.random.default_rng(seed)
    K = rbd.constraint_jacobian(model, q_star)
    independent = np.linalg.matrix_rank(K) == model.constraint_rows
    v = consistent_velocity(model, q_star, rng)
    tau = rng.normal(size=model.nv)
    ours = rbd.constrained_forward_dynamics(model, q_star, v, tau)
    theirs = (oracle.constrained_forward_dynamics(q_star, v, tau) if independent else
              oracle.constrained_forward_dynamics(q_star, v, tau, mu=1e-8, iterations=200))
    assert close(ours, theirs) < 1e-8


@pytest.mark.parametrize('closure', ['ball', 'revolute'])
def test_the_four_bars_redundant_rows_equal_pinocchio(closure):
    """A planar four-bar closed by a 3-D ball (3 rows, rank 2) or revolute (5 rows, rank 2;
    Pinocchio: two balls on the axis, 6 rows): qdd is unique though lam is not, and both
    closures give the same motion."""
    model = rbd.Model.from_urdf(four_bar_urdf(closure))
    oracle = LoopOracle(model, four_bar_urdf(closure))
    rng = np.random.default_rng(8)
    for theta in (0.2, 1.4, 3.0, 4.4):
        q = four_bar_angles(theta)
        v = consistent_velocity(model, q, rng, 5.0)
        tau = rng.normal(size=3)
        ours = rbd.constrained_forward_dynamics(model, q, v, tau)
        theirs = oracle.constrained_forward_dynamics(q, v, tau, mu=1e-8, iterations=200)
        assert close(ours, theirs) < 1e-8
        other = rbd.Model.from_urdf(four_bar_urdf('ball' if closure == 'revolute' else 'revolute'))
        assert close(ours, rbd.constrained_forward_dynamics(other, q, v, tau)) < 1e-12


@pytest.mark.parametrize('seed, kinds', [(41, ('revolute',)), (42, ('revolute', 'ball')),
                                         (43, ('revolute', 'fixed'))])
def test_spatial_revolute_loops_equal_pinocchio_with_two_balls_on_the_axis(seed, kinds):
    xml, q_star = looped_urdf(seed, kinds, floating=seed % 2 == 0)
    model = rbd.Model.from_urdf(xml, floating_base=seed % 2 == 0)
    oracle = LoopOracle(model, xml)
    rng = np.random.default_rng(seed)
    v = consistent_velocity(model, q_star, rng)
    tau = rng.normal(size=model.nv)
    ours = rbd.constrained_forward_dynamics(model, q_star, v, tau)
    assert close(ours, oracle.constrained_forward_dynamics(q_star, v, tau, mu=1e-8,
                                                           iterations=300)) < 1e-8


@pytest.mark.parametrize('seed, kinds, floating', [(53, ('ball', 'revolute'), False),
                                                   (54, ('revolute',), True),
                                                   (56, ('fixed', 'ball'), True)])
def test_forward_dynamics_solves_the_kkt_system(seed, kinds, floating):
    """Against [M K^T; K 0] [qdd; -lam] = [tau - h; k] solved densely, at any state (the
    loops open, v not one they allow), where K's rows are independent (else K qdd = k need not
    have a solution away from the closed manifold): K qdd = k and M qdd + h - tau lies in K's
    row space."""
    xml, _ = looped_urdf(seed, kinds, n_links=12, floating=floating)
    model = rbd.Model.from_urdf(xml, floating_base=floating)
    rng = np.random.default_rng(seed)
    q, v, tau = model.random_configuration(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    ours = rbd.constrained_forward_dynamics(model, q, v, tau)
    M, h = rbd.mass_matrix(model, q), rbd.nonlinear_effects(model, q, v)
    K, k = rbd.constraint_jacobian(model, q), rbd.constraint_bias(model, q, v)
    m = len(k)
    assert np.linalg.matrix_rank(K) == m
    kkt = np.block([[M, K.T], [K, np.zeros((m, m))]])
    dense = np.linalg.lstsq(kkt, np.concatenate([tau - h, k]), rcond=1e-13)[0][:model.nv]
    assert close(ours, dense, 1e-8) < 1e-8
    assert np.abs(K @ ours - k).max() < 1e-9 * max(1.0, np.abs(k).max())


def test_external_wrenches_and_baumgarte_stabilisation():
    """f_ext acts as tau + J^T f (the frame's local Jacobian); Baumgarte's terms change k to
    k - 2 alpha K v - beta^2 phi (checked on the result: K qdd equals it)."""
    xml, q_star = looped_urdf(67, ('ball', 'revolute'), n_links=12)
    model = rbd.Model.from_urdf(xml)
    rng = np.random.default_rng(67)
    q = model.random_configuration(rng)           # open loops: phi != 0
    assert np.linalg.matrix_rank(rbd.constraint_jacobian(model, q)) == model.constraint_rows
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    link, wrench = model.frame_names[-2], rng.normal(size=6)
    J = rbd.frame_jacobian(model, q, link, 'local')
    assert close(rbd.constrained_forward_dynamics(model, q, v, tau, f_ext={link: wrench}),
                 rbd.constrained_forward_dynamics(model, q, v, tau + J.T @ wrench)) < 1e-12
    alpha, beta = 20.0, 30.0
    qdd = rbd.constrained_forward_dynamics(model, q, v, tau, baumgarte=(alpha, beta))
    K, k, phi = (rbd.constraint_jacobian(model, q), rbd.constraint_bias(model, q, v),
                 rbd.constraint_residual(model, q))
    target = k - 2 * alpha * K @ v - beta ** 2 * phi
    assert np.abs(K @ qdd - target).max() < 1e-9 * np.abs(target).max()
    with pytest.raises(ValueError, match='baumgarte'):
        rbd.constrained_forward_dynamics(model, q, v, tau, baumgarte=(-1.0, 0.0))


def test_the_multiplier_solve_is_rank_revealing():
    """solve_semidefinite on A = X X^T of rank r (rows of unlike scales, as metres and radians
    are): it finds the rank, solves A x = b exactly for b in A's range, with x = 0 on the
    m - r dependent rows."""
    from rbd_ros.dynamics.loops import solve_semidefinite
    rng = np.random.default_rng(3)
    for m, r in ((6, 6), (6, 4), (9, 2), (5, 1), (4, 0)):
        X = rng.normal(size=(m, r)) * rng.uniform(0.01, 10.0, size=(m, 1))
        A = X @ X.T
        b = A @ rng.normal(size=m)
        x = np.empty(m)
        rank = solve_semidefinite(A.copy(), b.copy(), x, np.empty(m, dtype=np.int64))
        assert rank == r
        assert np.abs(A @ x - b).max() <= 1e-10 * max(1.0, np.abs(b).max())
        assert np.count_nonzero(x) == r


# ---- inverse dynamics at the motors ------------------------------------------------------------
def _four_bar_gravity_torque(theta):
    """The crank torque that holds the four-bar at crank angle theta: virtual work along the
    closed manifold, u = dV/dtheta = -sum m g . dc/dtheta, from the closed-form position
    analysis and its velocity analysis (A' = crank x rate, B' from the two rigid bars)."""
    a, b, c, d = (FOUR_BAR[k] for k in ('crank', 'coupler', 'rocker', 'ground'))
    phi, psi = four_bar_positions(a, b, c, d, theta)
    A = a * np.array([np.cos(theta), np.sin(theta)])
    O4 = np.array([d, 0.0])
    B = O4 + c * np.array([np.cos(psi), np.sin(psi)])
    dA = a * np.array([-np.sin(theta), np.cos(theta)])
    dB = np.linalg.solve(np.array([B - A, B - O4]), np.array([(B - A) @ dA, 0.0]))
    cross = lambda x, y: x[0] * y[1] - x[1] * y[0]       # noqa: E731
    rates = {'crank': 1.0, 'coupler': cross(B - A, dB - dA) / b ** 2,
             'rocker': cross(B - O4, dB) / c ** 2}
    angles = {'crank': theta, 'coupler': phi, 'rocker': psi}
    gravity = np.array([0.0, -G])              # in the plane (the mechanism stands vertical)
    u = 0.0
    for link, (mass, com, _) in FOUR_BAR_LINKS.items():
        turn = angles[link]
        r = np.array([np.cos(turn) * com[0] - np.sin(turn) * com[1],
                      np.sin(turn) * com[0] + np.cos(turn) * com[1]])
        velocity = rates[link] * np.array([-r[1], r[0]])
        velocity += {'crank': np.zeros(2), 'coupler': dA, 'rocker': np.zeros(2)}[link]
        u -= mass * gravity @ velocity
    return u


@pytest.mark.parametrize('closure', ['revolute', 'ball'])
def test_the_cranks_gravity_torque_is_the_virtual_work_along_the_closed_manifold(closure):
    model = rbd.Model.from_urdf(four_bar_urdf(closure))
    zero = np.zeros(3)
    thetas = np.linspace(0.0, 2 * np.pi, 25)
    ours = rbd.constrained_inverse_dynamics(model, np.stack([four_bar_angles(t) for t in thetas]),
                                            np.zeros((25, 3)), np.zeros((25, 3)))
    assert ours.shape == (25, 1)
    expected = np.array([_four_bar_gravity_torque(t) for t in thetas])
    assert close(ours[:, 0], expected, 1e-10) < 1e-10
    # the rocker as the motor instead: the same holding power through another joint
    rocker = rbd.constrained_inverse_dynamics(model, four_bar_angles(1.0), zero, zero,
                                              actuated=['rocker_joint'])
    assert rocker.shape == (1,) and abs(rocker[0]) > 0


@pytest.mark.parametrize('floating', [False, True])
def test_inverse_dynamics_undoes_forward_dynamics_at_the_motors(floating):
    """u = ID(q, v, FD(q, v, S u)): the motors' torques that produce the closed system's
    motion, on the parallel ankle (2 motors, 2 degrees of freedom; with a floating base the
    base is driven by whatever the motion needs)."""
    model, _ = ankle(floating)
    rng = np.random.default_rng(9)
    motors = np.array([model.joint[j].v_index for j in model.actuated_joints])
    for n in range(5):
        q = model.neutral()
        q[[model.joint[j].q_index for j in model.actuated_joints]] = rng.uniform(-0.35, 0.35, 2)
        q = rbd.close_loops(model, q, model.actuated_joints)
        v = consistent_velocity(model, q, rng, 3.0)
        tau = np.zeros(model.nv)
        tau[motors] = rng.normal(size=2)
        if floating:
            tau[:6] = rng.normal(size=6)
        qdd = rbd.constrained_forward_dynamics(model, q, v, tau)
        u = rbd.constrained_inverse_dynamics(model, q, v, qdd)
        assert close(u, tau[motors], 1e-9) < 1e-9


def test_gravity_compensation_at_the_motors_holds_the_ankle_still():
    """v = a = 0: the motors' torques that hold the foot; applied, the closed system stays at
    rest (qdd = 0), and the same torques with the loops cut (on the tree) would not."""
    model, _ = ankle()
    q = model.neutral()
    q[[model.joint[j].q_index for j in model.actuated_joints]] = [0.4, -0.1]
    q = rbd.close_loops(model, q, model.actuated_joints)
    zero = np.zeros(model.nv)
    u = rbd.constrained_inverse_dynamics(model, q, zero, zero)
    tau = np.zeros(model.nv)
    tau[[model.joint[j].v_index for j in model.actuated_joints]] = u
    assert np.abs(rbd.constrained_forward_dynamics(model, q, zero, tau)).max() < 1e-10
    assert np.abs(rbd.forward_dynamics(model, q, zero, tau)).max() > 1.0


def test_inverse_dynamics_refuses_what_the_motors_cannot_do():
    model, _ = ankle()
    q, zero = model.q_neutral, np.zeros(model.nv)
    with pytest.raises(ValueError, match=r"cannot produce this motion .* passive joint '\w+' is "
                                         r"left with"):
        rbd.constrained_inverse_dynamics(model, q, zero, zero, actuated=['motor_left'])
    with pytest.raises(ValueError, match="actuated joint 'nope' is not a joint"):
        rbd.constrained_inverse_dynamics(model, q, zero, zero, actuated=['nope'])
    with pytest.raises(ValueError, match="'motor_left' is named twice"):
        rbd.constrained_inverse_dynamics(model, q, zero, zero, ['motor_left', 'motor_left'])
    bare = rbd.Model.from_urdf(four_bar_urdf().split('  <transmission')[0] + '</robot>')
    assert bare.actuated_joints == []
    with pytest.raises(ValueError, match='no actuated joints'):
        rbd.constrained_inverse_dynamics(bare, np.zeros(3), np.zeros(3), np.zeros(3))


# ---- batches, mimic joints, arguments -----------------------------------------------------------
def test_batches_equal_single_calls():
    """A leading axis on every function, equal to N single calls (the closed forward dynamics'
    batch runs its rows over threads, each with its own workspace copies)."""
    model, _ = ankle(True)
    rng = np.random.default_rng(12)
    N = 40
    Q = np.stack([model.random_configuration(rng) for _ in range(N)])
    V, T = rng.normal(size=(N, model.nv)), rng.normal(size=(N, model.nv))
    pairs = [(rbd.constraint_residual(model, Q), [rbd.constraint_residual(model, q) for q in Q]),
             (rbd.constraint_jacobian(model, Q), [rbd.constraint_jacobian(model, q) for q in Q]),
             (rbd.constraint_bias(model, Q, V),
              [rbd.constraint_bias(model, q, v) for q, v in zip(Q, V)]),
             (rbd.constrained_forward_dynamics(model, Q, V, T),
              [rbd.constrained_forward_dynamics(model, q, v, t) for q, v, t in zip(Q, V, T)]),
             (rbd.constrained_forward_dynamics(model, Q, V, T, baumgarte=(3.0, 4.0)),
              [rbd.constrained_forward_dynamics(model, q, v, t, baumgarte=(3.0, 4.0))
               for q, v, t in zip(Q, V, T)])]
    for batched, singles in pairs:
        assert np.array_equal(batched, np.stack(singles))
    closed = np.stack([rbd.close_loops(model, np.concatenate([q[:7], np.zeros(8)]), ['root_joint'])
                       for q in Q[:6]])
    zero = np.zeros((6, model.nv))
    assert np.array_equal(rbd.constrained_inverse_dynamics(model, closed, zero, zero),
                          np.stack([rbd.constrained_inverse_dynamics(model, q, z, z)
                                    for q, z in zip(closed, zero)]))
    bad = Q.copy()
    bad[17, 3] = np.nan
    with pytest.raises(ValueError, match=r'q contains NaN or inf \(configuration 17 of the batch'):
        rbd.constrained_forward_dynamics(model, bad, V, T)
    with pytest.raises(ValueError, match='tau must have shape'):
        rbd.constrained_forward_dynamics(model, Q[0], V[0], T[0][:3])


def _mimic_loop_urdf():
    """A four-bar whose crank drives a mimic joint on a small pendulum hanging from the
    coupler (the pendulum follows the crank at 0.5 times its angle)."""
    xml = four_bar_urdf('ball')
    extra = ('  <link name="bob"><inertial><origin xyz="0 -0.1 0"/><mass value="0.3"/>'
             '<inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>\n'
             '  <joint name="bob_joint" type="revolute"><parent link="coupler"/><child link="bob"/>'
             '<origin xyz="0.2 0 0"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" '
             'velocity="1"/><mimic joint="crank_joint" multiplier="0.5" offset="0.1"/></joint>\n')
    return xml.replace('  <constraint', extra + '  <constraint')


def test_a_model_with_mimic_joints_is_a_model_with_one_more_equality_row():
    """The mimic joint's q_m = 0.5 q_crank + 0.1 is one more loop-like row on the same tree
    without the mimic: the dense KKT system of that tree, its K with the row added, gives the
    mimic model's qdd (public coordinates), and its inverse dynamics undoes it."""
    mimic = rbd.Model.from_urdf(_mimic_loop_urdf())
    free = rbd.Model.from_urdf(_mimic_loop_urdf().replace(
        '<mimic joint="crank_joint" multiplier="0.5" offset="0.1"/>', ''))
    assert mimic.has_mimic and mimic.nv == 3 and free.nv == 4
    rng = np.random.default_rng(13)
    q = four_bar_angles(1.1)
    v = consistent_velocity(mimic, q, rng, 3.0)
    tau = rng.normal(size=3)
    qdd = rbd.constrained_forward_dynamics(mimic, q, v, tau)
    qf, vf = full_q(mimic, q), mimic.mimic_map @ v
    row = np.zeros(4)
    m = free.joint['bob_joint'].v_index
    row[m], row[free.joint['crank_joint'].v_index] = 1.0, -0.5
    K = np.vstack([rbd.constraint_jacobian(free, qf), row])
    k = np.concatenate([rbd.constraint_bias(free, qf, vf), [0.0]])
    M, h = rbd.mass_matrix(free, qf), rbd.nonlinear_effects(free, qf, vf)
    tf = np.zeros(4)
    tf[mimic.v_full_index] = tau
    kkt = np.block([[M, K.T], [K, np.zeros((4, 4))]])
    dense = np.linalg.lstsq(kkt, np.concatenate([tf - h, k]), rcond=1e-13)[0][:4]
    assert close(qdd, dense[mimic.v_full_index], 1e-9) < 1e-9
    tau_crank = np.zeros(3)
    tau_crank[0] = tau[0]
    qdd_crank = rbd.constrained_forward_dynamics(mimic, q, v, tau_crank)
    assert close(rbd.constrained_inverse_dynamics(mimic, q, v, qdd_crank), tau[[0]], 1e-9) < 1e-9
    assert np.array_equal(rbd.constraint_jacobian(mimic, q),
                          rbd.constraint_jacobian(free, qf) @ mimic.mimic_map)


# ---- the kernels from another compiled kernel (what the simulator will call) ---------------------
def test_the_kernels_run_inside_another_compiled_kernel_from_the_handle():
    """A compiled caller reads the loop tables and workspace from the handle (loop_tables)
    and runs the closed forward dynamics, with Baumgarte gains, in the internal coordinates."""
    from rbd_ros.dynamics._jit import kernel
    from rbd_ros.dynamics.entry_points import dof_tables, loop_tables, model_tables
    from rbd_ros.dynamics.loops import closed_forward_dynamics, constraint_rows

    @kernel
    def caller(h, q, v, tau, f_ext, qdd):
        body_int, body_float, ws = model_tables(h)
        loop_int, loop_float, row_loop, lw, pivot = loop_tables(h)
        status = closed_forward_dynamics(body_int, body_float, ws, dof_tables(h)[1], loop_int,
                                         loop_float, lw, pivot, q, v, tau, f_ext, 2.0, 3.0, qdd)
        return status * 1000 + constraint_rows(loop_int) * 10 + row_loop[constraint_rows(loop_int) - 1]

    model, _ = ankle()
    data = model.create_data()
    rng = np.random.default_rng(14)
    q, v, tau = model.random_configuration(rng), rng.normal(size=8), rng.normal(size=8)
    qdd = np.empty(8)
    assert caller(data.handle, q, v, tau, data.zero_fext, qdd) == 6 * 10 + 1
    assert np.array_equal(qdd, rbd.constrained_forward_dynamics(model, q, v, tau,
                                                                baumgarte=(2.0, 3.0)))


_NO_JIT = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import rbd_ros.dynamics as rbd
from urdf_factory import four_bar_urdf, four_bar_angles
out = {'jit': rbd.JIT_ENABLED}
m = rbd.Model.from_urdf(four_bar_urdf('revolute'), floating_base=True)
q = np.concatenate([[0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.9], four_bar_angles(1.2)])
rng = np.random.default_rng(0)
v, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
out['r'] = [rbd.constraint_residual(m, q + 0.01).tolist(), rbd.constraint_jacobian(m, q).tolist(),
            rbd.constraint_bias(m, q, v).tolist(),
            rbd.constrained_forward_dynamics(m, q, v, tau, baumgarte=(1.0, 2.0)).tolist(),
            rbd.constrained_inverse_dynamics(m, q, np.zeros(m.nv), np.zeros(m.nv)).tolist(),
            rbd.close_loops(m, q + 0.01, ['crank_joint']).tolist()]
print(json.dumps(out))
'''


def test_interpreted_and_compiled_kernels_agree():
    import json
    import subprocess
    import sys
    results = {}
    for mode in ('1', '0'):
        done = subprocess.run([sys.executable, '-c', _NO_JIT, HERE], check=True, text=True,
                              capture_output=True, timeout=600,
                              env=dict(os.environ, RBD_ROS_NO_JIT=mode))
        results[mode] = json.loads(done.stdout)
    assert results['1']['jit'] is False
    if not results['0']['jit']:
        pytest.skip('numba not installed')
    for x, y in zip(results['1']['r'], results['0']['r']):
        assert close(np.array(x), np.array(y), 1e-12) < 1e-12


# ---- what does not take loops yet refuses them -------------------------------------------------
def test_the_nodes_robot_loads_a_constrained_description():
    """The nodes' Robot loads loops (dynamics_node and frames_node close them:
    test_ros_loops.py; the simulator runs them: test_simulation_loops.py); a node that does
    not serve them refuses them by name."""
    from rbd_ros.ros.robot import load_robot, refuse_closed_loops
    _, xml = ankle()
    robot = load_robot(xml)
    assert robot.model.constraint_names == ['rod_left_ball', 'rod_right_ball']
    with pytest.raises(ValueError, match=r"closes 2 kinematic loops with <constraint> "
                                         r"\('rod_left_ball', 'rod_right_ball'\): sim_node does "
                                         r"not simulate closed loops yet"):
        refuse_closed_loops(robot.model, 'sim_node does not simulate closed loops yet')
    cut = xml.split('<!-- the loops')[0] + xml.split('</constraint>')[-1]
    assert load_robot(cut).model.constraint_names == []


def test_analyze_refuses_a_constrained_description(tmp_path, capsys):
    pytest.importorskip('rosbags')
    from rbd_ros.analysis.cli import main
    (tmp_path / 'logs').mkdir()
    assert main([str(tmp_path / 'logs'), '--urdf', ANKLE]) == 2
    assert 'closes kinematic loops with <constraint>' in capsys.readouterr().err
