"""Simulator cases the other files leave out: a floating base carrying mimic joints, planar
joints, drives at their speed limits when the joints are inertially coupled, and a Model sent
through pickle (to another process).

Tolerances: a step compared with the same integrator written out over the ROS-free dynamics is
equal to rounding (1e-12); conserved quantities over a run drift by RK4's O(dt^4) truncation
only, bounded 10x above what was measured."""
import concurrent.futures
import multiprocessing
import pickle

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from rbd_ros.simulation import SimOptions, Simulator

#: nothing but the rigid-body dynamics: no damping, friction, limits or ground
OFF = dict(damping=False, friction=False, effort_limits=False, velocity_limits=False,
           position_limits='off', ground=False)


def _inertial(mass, com='0 0 0', ixx=0.02, iyy=0.03, izz=0.04):
    return (f'<inertial><origin xyz="{com}"/><mass value="{mass}"/><inertia ixx="{ixx}" '
            f'ixy="0.001" ixz="0" iyy="{iyy}" iyz="0.002" izz="{izz}"/></inertial>')


def mimic_robot(mimic=True, follower_q=None):
    """A free body carrying a leader joint with a follower that mimics it (multiplier -1.5,
    offset 0.1) and a prismatic joint. ``mimic=False``: the follower is an ordinary joint (the
    twin that checks where the mimic puts it)."""
    tag = '<mimic joint="lead" multiplier="-1.5" offset="0.1"/>' if mimic else ''
    return f'''<robot name="mimicked">
  <link name="body">{_inertial(3.0, '0.02 0 0.01', 0.05, 0.06, 0.07)}</link>
  <link name="arm">{_inertial(1.0, '0.2 0 0')}</link>
  <link name="finger">{_inertial(0.4, '0.1 0.02 0')}</link>
  <link name="slider">{_inertial(0.7, '0 0.05 0')}</link>
  <joint name="lead" type="revolute"><parent link="body"/><child link="arm"/>
    <origin xyz="0.1 0 0.05" rpy="0.2 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <joint name="follow" type="revolute"><parent link="arm"/><child link="finger"/>
    <origin xyz="0.4 0 0" rpy="0 0.3 0"/><axis xyz="0 1 0"/>
    <limit lower="-5" upper="5" effort="50" velocity="20"/>{tag}</joint>
  <joint name="slide" type="prismatic"><parent link="body"/><child link="slider"/>
    <origin xyz="-0.1 0.1 0"/><axis xyz="0.6 0.8 0"/>
    <limit lower="-1" upper="1" effort="50" velocity="10"/></joint>
</robot>'''


PLANAR = f'''<robot name="puck">
  <link name="world_link"/>
  <link name="puck">{_inertial(2.0, '0.03 -0.02 0', 0.05, 0.05, 0.08)}</link>
  <link name="arm">{_inertial(0.5, '0.15 0 0')}</link>
  <joint name="plane" type="planar"><parent link="world_link"/><child link="puck"/>
    <axis xyz="0 0 1"/></joint>
  <joint name="swing" type="continuous"><parent link="puck"/><child link="arm"/>
    <origin xyz="0.1 0 0"/><axis xyz="0 0 1"/></joint>
</robot>'''


def rk4_step(model, q, v, tau, dt):
    """RK4 on the configuration manifold (Runge-Kutta-Munthe-Kaas: a stage's velocity through
    dexp^-1, reference_sim.stage_velocity, as matrices) over rbd.forward_dynamics and
    rbd.integrate: the simulator's free step, as its docstring states it."""
    from reference_sim import stage_velocity

    def fd(q_, v_):
        return rbd.forward_dynamics(model, q_, v_, tau)
    a1 = fd(q, v)
    v2 = v + 0.5 * dt * a1
    a2 = fd(rbd.integrate(model, q, v, 0.5 * dt), v2)
    k2 = stage_velocity(model, 0.5 * dt * v, v2)
    v3 = v + 0.5 * dt * a2
    a3 = fd(rbd.integrate(model, q, k2, 0.5 * dt), v3)
    k3 = stage_velocity(model, 0.5 * dt * k2, v3)
    v4 = v + dt * a3
    a4 = fd(rbd.integrate(model, q, k3, dt), v4)
    k4 = stage_velocity(model, dt * k3, v4)
    v_mean = (v + 2 * k2 + 2 * k3 + k4) / 6
    return rbd.integrate(model, q, v_mean, dt), v + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)


def _start(model, seed):
    rng = np.random.default_rng(seed)
    q = model.random_configuration(seed)
    if model.floating_base:
        q[:3] = rng.uniform(-0.5, 0.5, 3)
    return q, rng.uniform(-1.0, 1.0, model.nv)


# ---- a floating base with mimic joints -----------------------------------------------------
def test_floating_mimic_model_is_reduced_to_its_leaders():
    model = rbd.Model.from_urdf(mimic_robot(), floating_base=True)
    assert model.has_mimic and model.floating_base
    assert model.joint_names == ['lead', 'slide'] and (model.nq, model.nv) == (9, 8)


@pytest.mark.parametrize('integrator', ['rk4', 'semi_implicit_euler'])
def test_floating_mimic_step_is_the_integrator_over_forward_dynamics(integrator):
    """One step without rows (OFF) is the integrator itself over the reduced forward dynamics:
    semi-implicit Euler v+ = v + dt FD(q, v), q+ = q (+) v+ dt; RK4 as rk4_step writes it."""
    model = rbd.Model.from_urdf(mimic_robot(), floating_base=True)
    q, v = _start(model, 3)
    tau = np.concatenate([np.zeros(6), [0.7, -2.0]])
    sim = Simulator(model, q0=q, v0=v, options=SimOptions(integrator=integrator, **OFF))
    assert sim.step(tau)
    dt = sim.options.dt
    if integrator == 'rk4':
        q_ref, v_ref = rk4_step(model, q, v, tau, dt)
    else:
        v_ref = v + dt * rbd.forward_dynamics(model, q, v, tau)
        q_ref = rbd.integrate(model, q, v_ref, dt)
    assert np.allclose(sim.v, v_ref, rtol=0, atol=1e-12)
    assert np.allclose(sim.q, q_ref, rtol=0, atol=1e-12)


def _tumble(dt, seconds=2.0):
    """The mimic robot tumbling free (zero gravity, no ground, nothing dissipates, no effort):
    the worst change of its centroidal momentum (world axes, about the moving centre of mass)
    and of its energy, relative, and how far it moved."""
    model = rbd.Model.from_urdf(mimic_robot(), floating_base=True, gravity=(0.0, 0.0, 0.0))
    q, v = _start(model, 5)
    v[:6] *= 2.0
    sim = Simulator(model, q0=q, v0=v, options=SimOptions(dt=dt, **OFF))
    h0 = rbd.centroidal_momentum(model, q, v)
    e0 = sim.energy()
    worst_h = worst_e = 0.0
    for _ in range(20):
        assert sim.step(np.zeros(model.nv), steps=round(seconds / 20 / dt))
        worst_h = max(worst_h, np.abs(rbd.centroidal_momentum(model, sim.q, sim.v) - h0).max())
        worst_e = max(worst_e, abs(sim.energy() - e0))
    return worst_h / np.abs(h0).max(), worst_e / e0, np.abs(sim.q - q).max()


def test_free_floating_mimic_robot_conserves_momentum_and_energy():
    """Over 2 s of tumbling at 1 kHz with the joints swinging, the energy stays to RK4's
    O(dt^4) (measured 2.2e-13 relative; bound 1e-9) and so does the momentum (measured 7.4e-13;
    bound 1e-10; 4.7e-7 before the stages went through dexp^-1, step.stage_velocity)."""
    momentum, energy, moved = _tumble(1e-3)
    assert moved > 0.5                                 # it did tumble
    assert energy < 1e-9
    assert momentum < 1e-10


def test_free_floating_momentum_converges_at_rk4s_order():
    """Halving dt divides the momentum drift by 16 (measured 1.19e-11 at 2 ms, 7.4e-13 at 1 ms,
    3.5e-14 at 0.5 ms): the tumbling base's orientation is fourth order too (without the
    Munthe-Kaas stage velocities: 4, second order)."""
    coarse, fine = _tumble(2e-3)[0], _tumble(1e-3)[0]
    assert coarse / fine > 12          # fourth order: 16


def test_mimic_follower_sits_where_its_leader_puts_it():
    """After a run under gravity with efforts (and the default joints: damping, friction,
    limits), the follower's link is where the twin robot without the mimic tag puts it at
    q_follow = -1.5 q_lead + 0.1: frame poses equal to rounding."""
    model = rbd.Model.from_urdf(mimic_robot(), floating_base=True)
    twin = rbd.Model.from_urdf(mimic_robot(mimic=False), floating_base=True)
    assert twin.joint_names == ['lead', 'follow', 'slide']
    q, v = _start(model, 7)
    sim = Simulator(model, q0=q, v0=v, options=SimOptions(ground=False))
    for k in range(5):
        assert sim.step(np.concatenate([np.zeros(6), [2.0 * (-1) ** k, 1.0]]), steps=60)
        qs = sim.q
        lead, slide = qs[7], qs[8]
        q_twin = np.concatenate([qs[:7], [lead, -1.5 * lead + 0.1, slide]])
        ours, theirs = rbd.frame_poses(model, qs), rbd.frame_poses(twin, q_twin)
        for link in ('body', 'arm', 'finger', 'slider'):
            assert np.allclose(ours[link], theirs[link], rtol=0, atol=1e-12), (k, link)


# ---- planar joints -------------------------------------------------------------------------
def test_planar_joint_step_is_rk4_over_forward_dynamics():
    model = rbd.Model.from_urdf(PLANAR)
    assert (model.nq, model.nv) == (4, 4)
    q, v = np.array([0.3, -0.2, 0.8, -1.1]), np.array([0.5, -0.4, 2.0, -3.0])
    tau = np.array([0.3, 0.1, -0.2, 0.05])
    sim = Simulator(model, q0=q, v0=v, options=SimOptions(**OFF))
    assert sim.step(tau)
    q_ref, v_ref = rk4_step(model, q, v, tau, sim.options.dt)
    assert np.allclose(sim.v, v_ref, rtol=0, atol=1e-12)
    assert np.allclose(sim.q, q_ref, rtol=0, atol=1e-12)


def test_planar_puck_conserves_in_plane_momentum_and_energy():
    """A puck sliding and spinning on a planar joint (normal z) with an arm swinging on it, no
    effort: the plane's constraint acts along z and about x and y only, so the in-plane linear
    momentum (m v_G x, y), the angular momentum about z and the kinetic energy are conserved
    (gravity along z does no work). Measured drift 1e-14 relative; bound 1e-9 (RK4's
    truncation, as above)."""
    model = rbd.Model.from_urdf(PLANAR)
    q, v = np.array([0.0, 0.0, 0.4, -0.3]), np.array([0.8, -0.5, 3.0, -6.0])
    sim = Simulator(model, q0=q, v0=v, options=SimOptions(**OFF))
    h0 = rbd.centroidal_momentum(model, q, v)[[0, 1, 5]]
    e0 = sim.energy()
    worst_h = worst_e = 0.0
    for _ in range(20):
        assert sim.step(np.zeros(4), steps=100)
        worst_h = max(worst_h, np.abs(rbd.centroidal_momentum(model, sim.q, sim.v)[[0, 1, 5]]
                                      - h0).max())
        worst_e = max(worst_e, abs(sim.energy() - e0))
    assert np.hypot(*(sim.q[:2] - q[:2])) > 0.5      # it did slide
    assert worst_h < 1e-9 * np.abs(h0).max()
    assert worst_e < 1e-9 * e0


# ---- drives at their speed limits, coupled -------------------------------------------------
ARM2 = '''<robot name="arm2"><link name="base"/>
  <link name="upper"><inertial><origin xyz="0.3 0 0"/><mass value="3"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="fore"><inertial><origin xyz="0.25 0 0"/><mass value="2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.05"/></inertial></link>
  <joint name="shoulder" type="continuous"><parent link="base"/><child link="upper"/>
    <axis xyz="0 0 1"/><limit effort="40" velocity="1.0"/></joint>
  <joint name="elbow" type="continuous"><parent link="upper"/><child link="fore"/>
    <origin xyz="0.6 0 0"/><axis xyz="0 0 1"/><limit effort="40" velocity="1.5"/></joint>
</robot>'''


def _drive_hard(signs, steps=3000):
    """ARM2's two drives commanded 30 N m (within their 40 N m) with ``signs``: per step the
    state, the applied efforts and the energy the rows took: the energy change minus the
    drives' work, less the same for one step of the bare integrator (no limits) under the
    applied efforts from the same state: RK4's own energy error (up to 5e-9 J per step here)
    is not the rows' doing. The speed-limit rows are the only other force."""
    model = rbd.Model.from_urdf(ARM2)
    command = 30.0 * np.array(signs, dtype=float)
    sim = Simulator(model, options=SimOptions())
    bare = Simulator(model, options=SimOptions(velocity_limits=False, effort_limits=False))
    rows = []
    for _ in range(steps):
        q, v, e = sim.q, sim.v, sim.energy()
        assert sim.step(command)
        applied = sim.applied
        bare.q, bare.v = q, v
        assert bare.step(applied)
        integrator = bare.energy() - e - applied @ (bare.q - q)
        rows.append((sim.q, sim.v, applied,
                     sim.energy() - e - applied @ (sim.q - q) - integrator))
    return model, command, rows


@pytest.mark.parametrize('signs', [(1, 1), (1, -1)], ids=['same', 'opposite'])
def test_coupled_drives_each_hold_their_speed_limit_by_giving_up_effort(signs):
    """Two inertially coupled joints (a horizontal two-link arm: M01 / sqrt(M00 M11) = 0.83)
    both driven hard past their speed limits (1.0 and 1.5 rad/s) at once: every step ends
    with each joint within its limit (measured: 1e-15 over; bound 1e-9), each drive only
    gives up effort (the applied effort has the command's sign and at most its size), both
    joints reach their limits within 0.1 s and stay there (to 1e-6: the drives give up effort
    on a linearisation of the step, in two passes; measured 2.3e-8 rad/s while the shoulder
    gives up all 30 N m and its limit row brakes it, 1.0e-4 with one pass), and the speed-limit
    rows never add energy (what they took: <= 0 each step, to rounding)."""
    model, command, rows = _drive_hard(signs)
    M = rbd.mass_matrix(model, np.zeros(2))
    assert abs(M[0, 1]) / np.sqrt(M[0, 0] * M[1, 1]) > 0.5     # strongly coupled
    vmax = model.velocity_limits
    for k, (_, v, applied, took) in enumerate(rows):
        assert np.all(np.abs(v) <= vmax + 1e-9), (k, v)
        assert np.all(applied * command >= 0.0) and np.all(np.abs(applied) <= 30.0 + 1e-9), k
        assert took <= 1e-10, (k, took)     # (measured 8e-12: an effort change below the
                                            # solver's tolerance stays an impulse)
    speeds = np.array([v for _, v, _, _ in rows[100:]])
    assert np.allclose(speeds, vmax * np.array(signs), rtol=0, atol=1e-6)


@pytest.mark.parametrize('signs', [(1, 1), (1, -1)], ids=['same', 'opposite'])
def test_coupled_drives_at_their_speed_limits_push_no_harder_than_holding_it_needs(signs):
    """Once both joints run at their limits (constant speeds: a = 0), holding them takes
    tau = C(q, v) v (rbd.nonlinear_effects; no gravity torque about vertical axes). A drive
    that gives up effort "as a real one does" applies at most that (in the command's
    direction: where it needs the other direction the drive gives up all of it and the limit
    row brakes, which is the only dissipation there should be). Bound: 0.05 N m (the holding
    torque changes by ~1e-3 N m over a step); the clipped case is 30 N m off."""
    model, command, rows = _drive_hard(signs)
    vmax = model.velocity_limits
    held = [row for row in rows[100:] if np.allclose(np.abs(row[1]), vmax, rtol=0, atol=1e-6)]
    assert len(held) == len(rows) - 100
    for k, (q, v, applied, _) in enumerate(held):
        need = rbd.nonlinear_effects(model, q, v)
        direction = np.sign(command)
        assert np.all(direction * applied <= np.maximum(direction * need, 0.0) + 0.05), \
            (k, applied, need)


def test_a_mimic_followers_drive_less_leader_keeps_its_speed_limit():
    """A driven leader with a follower geared to it (the mimic robot, on a fixed base): the
    leader's drive holds the leader at its limit even though the follower's inertia loads it
    through the mimic (the reduced mass matrix)."""
    model = rbd.Model.from_urdf(mimic_robot())
    vmax = model.velocity_limits
    sim = Simulator(model, options=SimOptions(velocity_limits=True, position_limits='off'))
    for _ in range(2000):
        assert sim.step(np.array([50.0, 50.0]))
        assert np.all(np.abs(sim.v) <= vmax + 1e-9), sim.v
        assert np.all(sim.applied >= 0.0)
    assert np.allclose(sim.v, vmax, rtol=0, atol=1e-6)


# ---- a Model through pickle ------------------------------------------------------------------
def _arm():
    import os
    return rbd.Model.from_urdf(os.path.join(os.path.dirname(__file__), '..', 'rbd_ros', 'robots',
                                            'rbd_arm7.urdf'))


def _same_dynamics(a, b):
    rng = np.random.default_rng(0)
    Q = np.stack([a.random_configuration(k) for k in range(5)])
    V, A = rng.normal(size=Q.shape), rng.normal(size=Q.shape)
    assert np.array_equal(rbd.inverse_dynamics(a, Q, V, A), rbd.inverse_dynamics(b, Q, V, A))
    assert np.array_equal(rbd.mass_matrix(a, Q), rbd.mass_matrix(b, Q))
    assert np.array_equal(rbd.forward_dynamics(a, Q, V, A), rbd.forward_dynamics(b, Q, V, A))
    assert np.array_equal(rbd.gravity_torques(a, Q), rbd.gravity_torques(b, Q))
    assert a.joint_names == b.joint_names and a.name == b.name


def test_a_model_survives_pickle():
    model = _arm()
    back = pickle.loads(pickle.dumps(model))
    _same_dynamics(model, back)
    # still constant: the arrays stay read-only, as Model.__init__ made them
    for name in ('body_float', 'armature', 'lower_limits', 'dof_parent'):
        assert not getattr(back, name).flags.writeable, name


def test_a_model_with_payload_and_armature_survives_pickle():
    model = _arm().with_armature(np.linspace(0.01, 0.07, 7)).with_payload(
        'tool0', 1.5, [0.0, 0.01, 0.04])
    back = pickle.loads(pickle.dumps(model))
    _same_dynamics(model, back)
    assert np.array_equal(back.armature, model.armature)


def test_a_model_computes_in_another_process():
    model = _arm()
    q = model.random_configuration(1)
    context = multiprocessing.get_context('spawn')
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        there = pool.submit(rbd.gravity_torques, model, q).result(timeout=120)
    assert np.array_equal(there, rbd.gravity_torques(model, q))


# ---- a bound far from v* that an impact crosses ------------------------------------------
ARM2_STOP = (ARM2
             .replace('<joint name="shoulder" type="continuous">',
                      '<joint name="shoulder" type="revolute">')
             .replace('<limit effort="40" velocity="1.0"/>',
                      '<limit effort="40" velocity="100" lower="-3" upper="0.5"/>')
             .replace('<limit effort="40" velocity="1.5"/>', '<limit effort="40" velocity="8"/>'))


def test_an_impact_that_throws_a_joint_past_a_far_speed_limit_is_held_at_it():
    """The horizontal two-link arm swung at 20 rad/s into its shoulder's stop (0.5 rad): the
    stop's impulse throws the elbow, at rest against the upper arm, past its 8 rad/s speed
    limit. A step solves first with only the bounds near v* (step.NEAR: the elbow's is 8 rad/s
    away), then again with every bound in reach when v+ crosses one it left out: every step
    ends with the elbow within its limit (to 1e-9) and the shoulder within its stop, and the
    elbow does reach its limit (the impact would have taken it past)."""
    from rbd_ros.simulation import step as S
    model = rbd.Model.from_urdf(ARM2_STOP)
    assert 8.0 - 0.0 > S.NEAR                  # the elbow's bound is left out at first
    sim = Simulator(model, [0.0, 0.0], [20.0, 0.0], options=SimOptions(
        integrator='semi_implicit_euler'))
    fastest = 0.0
    for _ in range(100):
        assert sim.step(np.zeros(2))
        assert abs(sim.v[1]) <= 8.0 + 1e-9, sim.v
        assert sim.q[0] <= 0.5 + 1e-9, sim.q
        fastest = max(fastest, abs(sim.v[1]))
    assert fastest > 8.0 - 1e-6


# ---- a quadruped falls over ------------------------------------------------------------------
@pytest.mark.parametrize('integrator', ['rk4', 'semi_implicit_euler'])
def test_a_quadruped_dropped_on_its_side_comes_to_rest(integrator):
    """example-robot-data's A1 as published (its <collision> boxes, cylinders and spheres: 148
    candidate points), limp, floating base, default options, rolled onto its side and dropped
    from 25 cm: every solve converges; it comes to rest (all speeds below 1e-3) within 2 s of
    the impact (measured 0.41 s), resting 0.6 mm deep (bound 2 mm; 2.4 mm at the impact's
    deepest with RK4); after the impact its energy never climbs back above its lowest so
    far: with RK4 by at most 1e-5 of the drop's 34 J (measured 0.015 mJ, in one step, with
    the rows' forces carried through the stages: 4.5 mJ without), with semi-implicit Euler
    by at most 2e-4 (measured 1.0 mJ while a limp calf swings at 9 rad/s: that method's own
    energy oscillation, first order in dt, which a link swinging free shows too); it sheds
    energy to the impact and the joint stops (34 J -> 16 J)."""
    from corpus import robots_directory
    root = robots_directory()
    if root is None:
        pytest.skip('example-robot-data is not installed')
    model = rbd.Model.from_urdf(f'{root}/a1_description/urdf/a1.urdf', floating_base=True)
    from benchmarks.sim_bench import lying_start        # (the benchmark's case: 25 cm up)
    sim = Simulator(model, lying_start(model, 'a1'), options=SimOptions(integrator=integrator))
    assert len(sim.points) > 100
    zero = np.zeros(model.nv)
    energy, impact, moving, deepest_at_rest = [], None, 0, 0.0
    for k in range(int(2.5 / sim.options.dt)):
        assert sim.step(zero)
        energy.append(sim.energy())
        if impact is None and sim.contacts():
            impact = k
        if np.abs(sim.v).max() >= 1e-3:
            moving = k
    assert impact is not None and impact < 200          # (a 25 cm fall takes 0.14 s)
    assert moving - impact < 2000, moving
    for _, where in sim.point_locations():
        deepest_at_rest = max(deepest_at_rest, -where[2])
    assert 0.0 < deepest_at_rest < 2e-3
    after = np.array(energy[impact:])
    bound = 1e-5 if integrator == 'rk4' else 2e-4
    assert np.all(after - np.minimum.accumulate(after) <= bound * energy[0])
    assert after[-1] < 0.6 * energy[0]
    assert sim.solver_stats['unconverged_solves'] == 0
    assert len(sim.contacts()) >= 3


@pytest.mark.parametrize('integrator', ['rk4', 'semi_implicit_euler'])
def test_a_humanoid_dropped_on_its_back_settles_with_every_solve_converged(integrator):
    """example-robot-data's G1 (29 DoF), limp, pitched onto its back and dropped from 20 cm
    onto spheres at its limbs and its URDF's foot spheres: with the default budget (100
    iterations) every solve of 4 s converges (measured over 20 s of settling: at most 56
    iterations in one step, 4-6 per step at rest), and its body lies still on several
    contacts."""
    from corpus import robots_directory
    root = robots_directory()
    if root is None:
        pytest.skip('example-robot-data is not installed')
    model = rbd.Model.from_urdf(f'{root}/g1_description/urdf/g1_29dof_rev_1_0.urdf',
                                floating_base=True)
    from benchmarks.sim_bench import G1_LIMBS, lying_start      # (the benchmark's case)
    sim = Simulator(model, lying_start(model, 'g1'), options=SimOptions(
        integrator=integrator, contact_points=tuple(' '.join(map(str, s)) for s in G1_LIMBS)))
    assert sim.advance(4000)
    stats = sim.solver_stats
    assert stats['unconverged_solves'] == 0, stats
    assert stats['max_iterations'] <= SimOptions().solver_iterations
    assert len(sim.contacts()) >= 5 and np.abs(sim.v[:6]).max() < 0.2     # the body lies
    # (0.05 measured: it rocks while its limp wrists swing: light links, little damping)


@pytest.mark.parametrize('integrator', ['rk4', 'semi_implicit_euler'])
def test_a_humanoid_falling_from_standing_converges_in_a_few_iterations(integrator):
    """The same G1, limp, from standing pitched 0.1 rad forward (the benchmark's falling case):
    over the first 1.5 s (toppling, feet sliding, the impact, joints at their limits) every
    solve converges in a few Newton iterations a step. Measured 6.2 (RK4) and 6.6 (Euler), at
    most 37 and 41 in one step; before the first step's model of predicted rows, the frictionless
    joints' one piece and the radii's secant (solver.py): 10.9 and 12.2, with 11 and 1 solves
    out of their 100 iterations."""
    from corpus import robots_directory
    root = robots_directory()
    if root is None:
        pytest.skip('example-robot-data is not installed')
    model = rbd.Model.from_urdf(f'{root}/g1_description/urdf/g1_29dof_rev_1_0.urdf',
                                floating_base=True)
    from benchmarks.sim_bench import G1_LIMBS, fall_start
    sim = Simulator(model, options=SimOptions(
        integrator=integrator, contact_points=tuple(' '.join(map(str, s)) for s in G1_LIMBS)))
    sim.q = fall_start(sim)
    standing = sim.q[2]
    assert sim.advance(1500)
    stats = sim.solver_stats
    assert stats['unconverged_solves'] == 0, stats
    assert stats['iterations'] / stats['steps'] < 8.0, stats
    assert sim.q[2] < 0.5 * standing and len(sim.contacts()) >= 5     # it fell, onto its front
