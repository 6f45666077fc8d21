"""The compiled simulator step (rbd_ros/simulation/step.py): equal to the step it replaced
(test/reference_sim.py) wherever the physics did not change, and the new physics: drives at
every physics step, a floating base on the ground with compliant contacts and Coulomb cones.

Contact cases against their analytic answers: a box dropped comes to rest without gaining
energy, a sliding box stops at v0^2 / (2 mu g), on a slope steeper than atan(mu) it slides at
g (sin a - mu cos a), shallower it sticks."""
import math
import os

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
import reference_sim as ref
from corpus import robots_directory
from rbd_ros.simulation import SimOptions, Simulator
from rbd_ros.simulation.contact import ContactPoint, candidates

HERE = os.path.dirname(os.path.abspath(__file__))
ARM = os.path.join(HERE, '..', 'rbd_ros', 'robots', 'rbd_arm7.urdf')
SOLO = os.path.join(HERE, '..', 'rbd_ros', 'robots', 'solo12.urdf')
TREE3 = os.path.join(HERE, 'data', 'ros', 'tree3.urdf')
FEET = tuple(f'{leg}_FOOT 0 0 0 0.0075' for leg in ('FL', 'FR', 'HL', 'HR'))
STAND = [0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6]
G = 9.81


def box(mass=1.0, size=0.1, shape=None):
    inertia = mass * size * size / 6.0
    shape = shape or f'<box size="{size} {size} {size}"/>'
    return rbd.Model.from_urdf(
        f'<robot name="box"><link name="box"><inertial><mass value="{mass}"/><inertia '
        f'ixx="{inertia}" ixy="0" ixz="0" iyy="{inertia}" iyz="0" izz="{inertia}"/></inertial>'
        f'<collision><geometry>{shape}</geometry></collision></link></robot>',
        floating_base=True)


# ---- equal to the step it replaced ----------------------------------------------------------
def compare(model, q0, options, torques, steps, v0=None):
    """Worst differences (q and v, applied efforts) between the compiled step and the
    reference over ``steps`` steps under ``torques(k)``. The compiled solver runs to a
    tolerance of 1e-14 (its default 1e-10 leaves up to that much of a speed per step); the
    reference solves each step's rows exactly."""
    a = Simulator(model, q0, v0, options=SimOptions(**options, solver_tolerance=1e-14))
    b = ref.Simulator(model, q0, v0, options=ref.SimOptions(
        **{k: v for k, v in options.items() if k != 'ground'}))
    state = effort = 0.0
    for k in range(steps):
        tau = torques(k)
        assert a.step(tau) == b.step(tau), k
        state = max(state, np.abs(a.q - b.q).max(), np.abs(a.v - b.v).max())
        effort = max(effort, np.abs(a.applied - b.applied).max())
    return state, effort


@pytest.mark.parametrize('options', [
    {},                                                      # RK4, friction, damping, limits
    {'integrator': 'semi_implicit_euler'},
    {'position_limits': 'spring'},
    {'damping': False, 'friction': False, 'effort_limits': False, 'position_limits': 'off'},
], ids=['rk4', 'euler', 'spring', 'bare'])
def test_the_compiled_step_equals_the_step_it_replaced_on_the_arm(options):
    """Random torques up to 20 N m from a random configuration, 300 steps: friction sticks and
    slips, the spring limits push (no hard stop is hit here: where a joint hits one, the step
    now ends it at the limit, which the old one did not). Without speed limits: there the
    drives give up effort (a fixed point of the step the reference does not compute), which
    test_simulation_cases.py holds to its physics."""
    model = rbd.Model.from_urdf(ARM)
    rng = np.random.default_rng(0)
    q0 = model.random_configuration(1) * 0.5
    torques = [rng.normal(size=model.nv) * 20 for _ in range(300)]
    state, effort = compare(model, q0, {**options, 'velocity_limits': False},
                            lambda k: torques[k], 300)
    assert state < 1e-11 and effort < 1e-11


def test_the_compiled_step_equals_the_step_it_replaced_with_a_mimic_joint():
    model = rbd.Model.from_urdf(TREE3)
    assert model.has_mimic
    rng = np.random.default_rng(1)
    torques = [rng.normal(size=model.nv) for _ in range(200)]
    state, effort = compare(model, model.random_configuration(2) * 0.3,
                            {'velocity_limits': False}, lambda k: torques[k], 200)
    assert state < 1e-11 and effort < 1e-11


def test_the_compiled_step_equals_the_step_it_replaced_on_a_free_floating_base():
    """Solo-12 floating in space (no ground) under random joint torques: the base's quaternion
    stays unit and the motion is the old step's."""
    model = rbd.Model.from_urdf(SOLO, floating_base=True)
    q0 = model.neutral()
    q0[7:] = STAND
    rng = np.random.default_rng(2)
    torques = [np.r_[np.zeros(6), rng.normal(size=12) * 0.3] for _ in range(200)]
    state, effort = compare(model, q0, {'ground': False}, lambda k: torques[k], 200,
                            v0=np.r_[0.1, 0.0, 0.2, 0.5, -0.3, 0.2, np.zeros(12)])
    assert state < 1e-11 and effort < 1e-11
    sim = Simulator(model, q0, options=SimOptions(ground=False))
    sim.step(torques[0], steps=200)
    assert abs(np.linalg.norm(sim.q[3:7]) - 1.0) < 1e-14


# ---- drives ---------------------------------------------------------------------------------
def test_a_position_drive_at_every_step_settles_a_light_wrist():
    """UR5's last wrist joint (0.017 kg m^2): the default gains (100 N m/rad, 10 N m s/rad)
    applied every 10 ms as a held torque limit-cycle 0.04 rad off the goal; inside the drive
    at every 1 ms step, damping implicit, it settles."""
    root = robots_directory()
    if root is None:
        pytest.skip('example-robot-data is not installed')
    model = rbd.Model.from_urdf(root + '/ur_description/urdf/ur5_robot.urdf')
    goal = np.zeros(6)
    goal[5] = 1.0
    sim = Simulator(model)
    held = Simulator(model)
    for _ in range(500):                  # 5 s
        sim.set_effort(rbd.gravity_torques(model, goal))
        sim.set_drives(kp=100.0, kd=10.0, q_ref=goal, v_ref=0.0)
        assert sim.advance(10)
        q, v = held.q, held.v             # the same PD, a torque held for 10 ms
        assert held.step(rbd.gravity_torques(model, goal) + 100 * (goal - q) - 10 * v, steps=10)
    assert abs(sim.q[5] - 1.0) < 1e-4
    assert abs(held.q[5] - 1.0) > 1e-2


def test_stiff_drive_gains_on_a_light_link_are_stable():
    """kp 1e6 N m/rad, kd 1e4 N m s/rad on a 5e-4 kg m^2 link at 1 ms (kd dt / I = 2e4: an
    explicit drive would explode at the first step)."""
    model = rbd.Model.from_urdf(
        '<robot name="light"><link name="base"/><link name="bar"><inertial><origin xyz="0.05 0 0"/>'
        '<mass value="0.1"/><inertia ixx="1e-5" ixy="0" ixz="0" iyy="1e-5" iyz="0" izz="2.5e-4"/>'
        '</inertial></link><joint name="j" type="revolute"><parent link="base"/><child link="bar"/>'
        '<axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1e9" velocity="1e9"/></joint></robot>')
    sim = Simulator(model)
    sim.set_drives(kp=1e6, kd=1e4, q_ref=0.5, v_ref=0.0)
    for _ in range(200):
        assert sim.advance(1)
        assert abs(sim.q[0]) < 0.5 + 1e-9
    assert sim.q[0] == pytest.approx(0.5, abs=1e-6)


def test_a_drive_keeps_within_its_effort_limit_and_reports_what_it_applied():
    model = rbd.Model.from_urdf(ARM)
    sim = Simulator(model)
    limit = model.effort_limits[0]
    goal = np.zeros(model.nv)
    goal[0] = 3.0
    sim.set_drives(kp=1e4, kd=100.0, q_ref=goal)
    assert sim.advance(5)
    assert abs(sim.applied[0]) == pytest.approx(limit, rel=1e-12)
    sim.set_drives(0.0)
    sim.set_effort(np.full(model.nv, 1.0))
    assert sim.advance(1) and np.allclose(sim.applied, 1.0)


# ---- contact geometry -------------------------------------------------------------------------
def test_contact_points_come_from_the_collision_shapes_and_the_user():
    m = rbd.Model.from_urdf(
        '<robot name="shapes"><link name="a"><inertial><mass value="1"/><inertia ixx="1" ixy="0" '
        'ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
        '<collision><geometry><box size="0.2 0.1 0.05"/></geometry></collision>'
        '<collision><origin xyz="0 0 1"/><geometry><sphere radius="0.3"/></geometry></collision>'
        '<collision><geometry><capsule radius="0.1" length="0.4"/></geometry></collision>'
        '<collision><geometry><cylinder radius="0.1" length="0.4"/></geometry></collision>'
        '<collision><geometry><mesh filename="a.stl"/></geometry></collision></link></robot>',
        floating_base=True)
    points, notes = candidates(m, [ContactPoint.parse('a 1 2 3 0.5')])
    kinds = [(p.kind, p.radius) for p in points]
    assert len(points) == 8 + 1 + 2 + 8 + 1        # corners, sphere, capsule ends, rims, user
    corners = np.array([p.center for p in points[:8]])
    assert np.allclose(np.abs(corners), [0.1, 0.05, 0.025])
    assert kinds[8] == (0, 0.3) and np.allclose(points[8].center, [0, 0, 1])
    assert np.allclose([p.center[2] for p in points[9:11]], [-0.2, 0.2])
    assert np.allclose(points[-1].center, [1, 2, 3]) and points[-1].radius == 0.5
    assert notes == ["link 'a': 1 collision mesh skipped (no contact from meshes: give the "
                     "link contact_points)"]
    with pytest.raises(ValueError, match="unknown link 'b'"):
        candidates(m, [ContactPoint('b', (0, 0, 0))])
    for text, words in (('a 1 2', 'expected "link x y z radius"'), ('a 1 2 x', 'numbers'),
                        ('a 0 0 0 -1', 'radius must be >= 0'), ('a nan 0 0', 'finite')):
        with pytest.raises(ValueError, match=words):
            ContactPoint.parse(text)


@pytest.mark.parametrize('field, value, words', [
    ('friction_coefficient', -0.1, 'friction_coefficient must be'),
    ('ground_normal', (0.0, 0.0, 0.0), 'ground_normal must be a non-zero vector'),
    ('contact_stiffness', math.nan, 'contact_stiffness must be'),
])
def test_bad_ground_options_are_refused(field, value, words):
    with pytest.raises(ValueError, match=words):
        SimOptions(**{field: value})


# ---- the ground -----------------------------------------------------------------------------
@pytest.mark.parametrize('integrator', ['rk4', 'semi_implicit_euler'])
def test_a_box_dropped_from_half_a_metre_comes_to_rest(integrator):
    """Penetration below 2 mm, the total energy (the contact springs' included) never rises
    after the first impact, at rest within 2 s, resting at its weight's compression."""
    model = box()
    sim = Simulator(model, [0, 0, 0.55, 0, 0, 0, 1], options=SimOptions(integrator=integrator))
    energy, heights = [sim.energy()], []
    for _ in range(2000):
        assert sim.step(np.zeros(6))
        energy.append(sim.energy())
        heights.append(sim.q[2])
    heights = np.array(heights)
    first = int(np.argmax(heights < 0.05))
    assert 0.05 - heights.min() < 2e-3
    assert np.max(np.diff(energy[first:])) <= 1e-12
    assert np.abs(sim.v).max() < 1e-9
    assert sim.q[2] == pytest.approx(0.05 - G / (4 * 1e5), abs=1e-9)   # 4 corners, k 1e5 N/m
    assert len(sim.contacts()) == 4
    assert sum(f[2] for _, _, f in sim.contacts()) == pytest.approx(G, rel=1e-9)
    assert sim.solver_stats['unconverged_solves'] == 0


def test_a_sliding_box_stops_at_the_coulomb_distance():
    mu, v0 = 0.5, 2.0
    rest = 0.05 - G / 4e5
    sim = Simulator(box(), [0, 0, rest, 0, 0, 0, 1], [v0, 0, 0, 0, 0, 0],
                    options=SimOptions(friction_coefficient=mu))
    for _ in range(1500):
        assert sim.step(np.zeros(6))
    assert sim.q[0] == pytest.approx(v0 ** 2 / (2 * mu * G), rel=0.05)
    assert abs(sim.v[0]) < 1e-12


def _box_on_a_slope(angle_deg, mu):
    a = math.radians(angle_deg)
    n = (math.sin(a), 0.0, math.cos(a))
    centre = np.array(n) * (0.05 - G * math.cos(a) / 4e5)
    return Simulator(box(), [*centre, 0, math.sin(a / 2), 0, math.cos(a / 2)],
                     options=SimOptions(friction_coefficient=mu, ground_normal=n)), a


def test_a_box_on_a_steep_slope_slides_at_the_coulomb_acceleration():
    mu = 0.5
    sim, a = _box_on_a_slope(30.0, mu)
    start = sim.q[:3]
    for _ in range(2000):
        assert sim.step(np.zeros(6))
    expected = 0.5 * G * (math.sin(a) - mu * math.cos(a)) * 2.0 ** 2
    assert np.linalg.norm(sim.q[:3] - start) == pytest.approx(expected, rel=0.05)


def test_a_box_on_a_shallow_slope_sticks():
    """20 degrees under mu 0.5 (atan mu = 26.6 degrees): stiction holds it, no viscous creep."""
    sim, _ = _box_on_a_slope(20.0, 0.5)
    start = sim.q[:3]
    for _ in range(2000):
        assert sim.step(np.zeros(6))
    assert np.linalg.norm(sim.q[:3] - start) < 1e-3
    assert np.linalg.norm(sim.q[:3] - start) < 1e-4           # measured: 9 um
    assert sim.solver_stats['unconverged_solves'] <= 20       # of 2000 (measured: 5)


def test_a_ball_rolls_and_a_wheel_rolls_smoothly():
    """A sphere pushed sideways rolls without slipping (v = w r after the start); a cylinder
    lying on its side (its rims touch at their lowest points) rolls at a steady height: no
    polygon bumps."""
    ball = Simulator(box(shape='<sphere radius="0.1"/>', size=0.2),
                     [0, 0, 0.1 - G / 1e5, 0, 0, 0, 1], [1.0, 0, 0, 0, 0, 0])
    for _ in range(1000):
        assert ball.step(np.zeros(6))
    v, w = ball.v[:3], ball.v[3:]
    R = rbd.frame_pose(ball.model, ball.q, 'box')[:3, :3]
    v_world, w_world = R @ v, R @ w
    assert v_world[0] == pytest.approx(w_world[1] * 0.1, rel=1e-6)       # rolling
    assert 0.5 < v_world[0] < 1.0                                        # (2/7 lost to spin-up)
    half = math.sqrt(0.5)
    wheel = Simulator(box(shape='<cylinder radius="0.1" length="0.05"/>', size=0.1),
                      [0, 0, 0.1 - G / 2e5, half, 0, 0, half], [1.0, 0, 0, 0, 0, 0])
    heights = []
    for _ in range(1000):
        assert wheel.step(np.zeros(6))
        heights.append(wheel.q[2])
    assert np.ptp(heights[200:]) < 1e-6
    assert abs(wheel.q[1]) < 1e-6 and wheel.q[0] > 0.5        # rolled along its path


@pytest.mark.parametrize('how', ['q', 'set_state'])
def test_a_state_set_by_hand_steps_as_a_fresh_simulator_would(how):
    """A box resting on the ground (RK4: its contact forces carried from step to step) lifted
    1 m by hand falls as a simulator made at that state does, bit for bit: the forces of
    contacts it left are not carried into its fall."""
    model = box()
    sim = Simulator(model, [0, 0, 0.05, 0, 0, 0, 1])
    assert sim.advance(300) and len(sim.contacts()) == 4
    lifted = sim.q
    lifted[2] += 1.0
    if how == 'q':
        sim.q, sim.v = lifted, np.zeros(6)
    else:
        sim.set_state(lifted, np.zeros(6))
    fresh = Simulator(model, lifted)
    for _ in range(50):
        assert sim.step(np.zeros(6)) and fresh.step(np.zeros(6))
        assert np.array_equal(sim.q, fresh.q) and np.array_equal(sim.v, fresh.v)


def test_a_robot_without_joints_is_a_valid_robot():
    sim = Simulator(box(), [0, 0, 1.0, 0, 0, 0, 1])
    assert sim.model.nv == 6 and not sim.row_v.size
    assert sim.step(np.zeros(6), steps=100)
    assert sim.q[2] == pytest.approx(1.0 - 0.5 * G * 0.1 ** 2, abs=1e-9)


def test_solo12_stands_on_its_feet_under_drives():
    """The drives hold the standing pose (PD inside the drive, gravity torques as effort):
    weight on four feet, the base still, no foot sliding."""
    model = rbd.Model.from_urdf(SOLO, floating_base=True)
    q0 = model.neutral()
    q0[2], q0[7:] = 0.35, STAND
    sim = Simulator(model, q0, options=SimOptions(contact_points=FEET))
    stand = np.r_[np.zeros(6), STAND]
    gains = np.r_[np.zeros(6), np.full(12, 1.0)]
    for _ in range(3000):
        g = rbd.gravity_torques(model, sim.q)
        g[:6] = 0.0
        sim.set_effort(g)
        sim.set_drives(kp=5 * gains, kd=0.1 * gains, q_ref=stand)
        assert sim.advance(1)
    feet = [rbd.frame_pose(model, sim.q, f.split()[0])[:3, 3] for f in FEET]
    z = sim.q[2]
    for _ in range(1000):
        assert sim.advance(1)
    assert abs(sim.q[2] - z) < 1e-4
    assert max(np.linalg.norm(rbd.frame_pose(model, sim.q, f.split()[0])[:3, 3] - p)
               for f, p in zip(FEET, feet)) < 1e-4
    forces = sim.contacts()
    assert len(forces) == 4
    assert sum(f[2] for _, _, f in forces) == pytest.approx(model.total_mass * G, rel=1e-6)


def test_without_q0_a_legged_robot_starts_put_down_on_the_ground():
    """Simulator(model) with a floating base: the neutral pose moved up until the lowest foot
    touches the ground. It started at the origin, feet 0.32 m under the ground, and the contact
    springs threw it up at 19.5 m/s, in silence. A q0 that deep is said (RuntimeWarning)."""
    model = rbd.Model.from_urdf(SOLO, floating_base=True)
    sim = Simulator(model, options=SimOptions(contact_points=FEET))
    lowest = min(float(w[2]) for _, w in sim.point_locations())
    assert lowest == pytest.approx(0.0, abs=1e-12)
    assert np.array_equal(sim.q[3:], model.neutral()[3:]) and sim.q[2] > 0.3
    assert sim.advance(200)
    assert abs(sim.v[2]) < 1.0                       # it falls onto its legs, not up
    with pytest.warns(RuntimeWarning, match=r'q0 puts contact points up to 0\.3\d* m under the '
                                            'ground'):
        Simulator(model, model.neutral(), options=SimOptions(contact_points=FEET))
    q = model.neutral()
    q[:7] = [1.0, -2.0, 5.0, 0.0, math.sin(0.15), 0.0, math.cos(0.15)]
    high = Simulator(model, q, options=SimOptions(contact_points=FEET, ground_height=0.25))
    assert np.array_equal(high.q, q)                 # above the ground: as given
    placed = high.placed_on_ground()
    assert np.array_equal(placed[[0, 1]], q[[0, 1]]) and np.array_equal(placed[3:], q[3:])
    assert min(float(w[2]) for _, w in high.point_locations(placed)) == pytest.approx(0.25,
                                                                                     abs=1e-12)
    with pytest.raises(ValueError, match='has none'):
        Simulator(rbd.Model.from_urdf(SOLO)).placed_on_ground()


def test_a_drive_reference_may_be_a_configuration_and_a_wrong_length_is_named():
    """set_drives(q_ref=q) as the README writes it, on a floating base (nq 19, nv 18): the
    joints' positions are the references (it raised numpy's broadcast error)."""
    model = rbd.Model.from_urdf(SOLO, floating_base=True)
    sim = Simulator(model, options=SimOptions(contact_points=FEET))
    q = sim.q
    q[7:] = STAND
    gains = np.r_[np.zeros(6), np.ones(12)]
    sim.set_drives(kp=gains, q_ref=q)
    by_velocity = Simulator(model, options=SimOptions(contact_points=FEET))
    by_velocity.set_drives(kp=gains, q_ref=np.r_[np.zeros(6), STAND])
    assert sim.advance(50) and by_velocity.advance(50)
    assert np.array_equal(sim.q, by_velocity.q)
    with pytest.raises(ValueError, match=r'q_ref must have one value or 18 \(one per velocity '
                                         r'index; q_ref also 19, a configuration\), got shape '
                                         r'\(12,\)'):
        sim.set_drives(q_ref=STAND)
    with pytest.raises(ValueError, match=r'^kd must have one value or 18'):
        sim.set_drives(kd=np.ones(19))


@pytest.mark.parametrize('kp, stands', [(1000.0, True), (200.0, False)])
def test_a_humanoid_on_its_feet_stands_when_its_ankles_are_stiff_enough(kp, stands):
    """G1 (example-robot-data, as published: its feet touch the ground on the spheres of its
    collision shapes; the rest are meshes, noted and skipped) on the ground, every joint driven
    to its start pose with gravity compensation. Standing is an inverted pendulum: stiffer
    joints than m g h (35 kg at 0.7 m: 240 N m/rad) hold it still on both feet; 200 N m/rad
    does not, and it tips onto its toes or heels (four points left), as a real one would."""
    root = robots_directory()
    if root is None:
        pytest.skip('example-robot-data is not installed')
    model = rbd.Model.from_urdf(root + '/g1_description/urdf/g1_29dof_rev_1_0.urdf',
                                floating_base=True)
    sim = Simulator(model)
    feet = sorted({c.link for c in sim.points if 'ankle' in c.link})
    assert feet == ['left_ankle_roll_link', 'right_ankle_roll_link'] and sim.notes
    q = model.neutral()
    q[2] = -min(float(w[2]) for _, w in sim.point_locations(q))
    sim.q = q
    gains = np.r_[np.zeros(6), np.ones(model.nv - 6)]
    pose = np.r_[np.zeros(6), q[7:]]
    start = [w for link, w in sim.point_locations() if link in feet]
    for _ in range(1500):
        g = rbd.gravity_torques(model, sim.q)
        g[:6] = 0.0
        sim.set_effort(g)
        sim.set_drives(kp=kp * gains, kd=10.0 * gains, q_ref=pose)
        assert sim.advance(1), sim.status
    on_ground = sum(1 for link, _, _ in sim.contacts() if link in feet)
    if stands:
        assert on_ground == 8
        assert abs(sim.q[2] - q[2]) < 2e-3
        end = [w for link, w in sim.point_locations() if link in feet]
        assert max(np.linalg.norm((a - b)[:2]) for a, b in zip(start, end)) < 1e-4
        assert sum(f[2] for _, _, f in sim.contacts()) == pytest.approx(model.total_mass * G,
                                                                        rel=1e-2)
    else:
        assert on_ground <= 4                       # on its toes or heels, falling
