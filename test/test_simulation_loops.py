"""Closed kinematic loops in the simulator (issue 29, point 4): the loops' rows are equality
rows of the step's one constraint solve (step.py's docstring), on a tree that keeps them in
its smooth step (smooth.py). A planar four-bar swings undamped for 10 s against its
closed-form position analysis, drift below 1e-6 m and energy within 0.5% of its swing; the
parallel ankle held by PD drives at its motors ends with the motors' torques equal to the
closed system's gravity compensation (constrained_inverse_dynamics), with either integrator; a
state is closed before the first step."""
import os

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from rbd_ros.simulation import SimOptions, Simulator
from urdf_factory import FOUR_BAR, four_bar_angles, four_bar_urdf

HERE = os.path.dirname(os.path.abspath(__file__))
ANKLE = os.path.join(HERE, '..', 'rbd_ros', 'robots', 'parallel_ankle.urdf')
#: the physics alone: no damping, friction or limits (the four-bar's crank turns round)
UNDAMPED = dict(damping=False, friction=False, velocity_limits=False, position_limits='off')


def ankle(floating=False):
    with open(ANKLE) as handle:
        return rbd.Model.from_urdf(handle.read(), floating_base=floating)


def run(sim, steps):
    """(q, v) after each of ``steps`` steps (steps x nq, steps x nv); every step must succeed."""
    Q, V = np.empty((steps, sim.model.nq)), np.empty((steps, sim.model.nv))
    for n in range(steps):
        assert sim.step(), n
        Q[n], V[n] = sim.q, sim.v
    return Q, V


def drift(model, Q):
    """The loops' largest opening (m) over the states Q: the position rows of the residual."""
    phi = rbd.constraint_residual(model, Q)
    return max(np.abs(phi[:, c.row:c.row + 3]).max() for c in model.constraints)


def swing(model):
    """The four-bar's lowest potential energy over its closed poses (closed form): its rest."""
    thetas = np.linspace(0.0, 2 * np.pi, 1441)
    return rbd.potential_energy(model, np.stack([four_bar_angles(t) for t in thetas])).min()


# ---- the four-bar -------------------------------------------------------------------------------
def test_an_undamped_four_bar_swings_ten_seconds_on_its_closed_form_keeping_its_energy():
    """Released from crank angle 2.9 rad (1.44 J above its rest), it swings through 10 s at
    1 kHz (RK4): the coupler and rocker stay where the closed-form position analysis puts
    them for the crank's angle, the loop open by less than 1e-6 m (1e-11 m measured), the
    energy within 0.5% of the swing (1e-8 measured), each solve converged."""
    model = rbd.Model.from_urdf(four_bar_urdf('revolute'))
    theta = FOUR_BAR['theta'] + 2.0
    sim = Simulator(model, four_bar_angles(theta), options=SimOptions(**UNDAMPED))
    energy0 = sim.energy()
    height = energy0 - swing(model)
    assert height > 1.0
    Q, V = run(sim, 10000)
    assert drift(model, Q) < 1e-6
    crank = Q[:, 0] + FOUR_BAR['theta']
    closed_form = np.stack([four_bar_angles(t) for t in crank[::50]])
    assert np.abs(Q[::50] - closed_form).max() < 1e-5
    energy = rbd.kinetic_energy(model, Q, V) + rbd.potential_energy(model, Q)
    assert np.abs(energy - energy0).max() < 0.005 * height
    assert np.ptp(crank) > 2.0                      # (it swung)
    stats = sim.solver_stats
    assert stats['unconverged_solves'] == 0 and stats['max_iterations'] <= 3


@pytest.mark.parametrize('closure, integrator', [('ball', 'rk4'),
                                                 ('revolute', 'semi_implicit_euler')])
def test_the_loop_stays_closed_with_either_closure_and_integrator(closure, integrator):
    """A ball closure (one redundant row) and semi-implicit Euler (its own energy error: it
    is not symplectic where M depends on q) hold the loop as well: 2 s, below 1e-6 m."""
    model = rbd.Model.from_urdf(four_bar_urdf(closure))
    sim = Simulator(model, four_bar_angles(2.9), np.array([2.0, 0.0, 0.0]),
                    options=SimOptions(integrator=integrator, **UNDAMPED))
    Q, _ = run(sim, 2000)
    assert drift(model, Q) < 1e-6
    assert sim.unconverged_solves == 0


# ---- the parallel ankle -------------------------------------------------------------------------
@pytest.mark.parametrize('integrator', ['rk4', 'semi_implicit_euler'])
def test_pd_drives_at_the_ankles_motors_end_at_its_gravity_compensation(integrator):
    """The fixed-shank ankle under gravity, its two motors driven by PD toward a pose
    (kp 200 N m/rad, kd 5 N m s/rad), the rest passive: once it has settled, what the drives
    apply is the closed system's gravity compensation at the motors (constrained inverse
    dynamics at v = a = 0) where it stands, and the loops stayed closed throughout.
    Friction off: the motors' stiction would hold part of the load (any split within its
    band is right)."""
    model = ankle()
    motors = [model.joint[j].v_index for j in model.actuated_joints]
    sim = Simulator(model, options=SimOptions(integrator=integrator, friction=False))
    kp, kd, ref = np.zeros(model.nv), np.zeros(model.nv), np.zeros(model.nv)
    kp[motors], kd[motors], ref[motors] = 200.0, 5.0, [0.3, -0.2]
    sim.set_drives(kp, kd, ref)
    Q, V = run(sim, 4000)
    assert drift(model, Q) < 1e-6
    assert np.abs(V[-1]).max() < 1e-6
    zero = np.zeros(model.nv)
    gravity = rbd.constrained_inverse_dynamics(model, Q[-1], zero, zero)
    assert np.abs(gravity).max() > 0.1
    assert np.abs(sim.applied[motors] - gravity).max() < 1e-5
    assert np.abs(Q[-1][motors] - [0.3, -0.2]).max() < 5e-3    # (kp (ref - q) = gravity)
    assert sim.unconverged_solves == 0


def test_one_gain_for_all_drives_the_motors_and_leaves_the_passive_joints_free():
    """set_drives(kp=200.0) as the README writes it: on a robot with loops the passive joints
    have no motor, so one gain is the motors' (a user saw drive efforts on a push-rod's knee);
    the ankle then ends as with gains at its motors only."""
    model = ankle()
    motors = [model.joint[j].v_index for j in model.actuated_joints]
    passive = [j.v_index for j in model.single_dof_joints() if j.v_index not in motors]
    ref = model.neutral()
    ref[motors] = [0.3, -0.2]
    sim = Simulator(model, model.neutral())
    sim.set_drives(kp=200.0, kd=5.0, q_ref=ref)
    run(sim, 500)
    assert np.abs(sim.applied[motors]).max() > 0.1
    assert np.all(sim.applied[passive] == 0.0)
    per_joint = Simulator(model, model.neutral())
    kp, kd = np.zeros(model.nv), np.zeros(model.nv)
    kp[motors], kd[motors] = 200.0, 5.0
    per_joint.set_drives(kp, kd, ref)
    run(per_joint, 500)
    assert np.array_equal(sim.q, per_joint.q)
    listed = Simulator(model, model.neutral())       # sim_node's '[100.0]': one value too
    listed.set_drives(kp=[200.0], kd=[5.0], q_ref=ref)
    run(listed, 500)
    assert np.array_equal(listed.q, per_joint.q)


def test_a_floating_ankle_dropped_on_the_ground_keeps_its_loops():
    """Contacts, limits and loops in one solve: the ankle on a floating base falls 6 cm onto
    its foot and topples; its loops stay closed through the impacts."""
    model = ankle(floating=True)
    q0 = model.neutral()
    q0[2] = 0.12
    sim = Simulator(model, q0)
    Q, _ = run(sim, 1500)
    assert drift(model, Q) < 1e-6
    assert sim.contacts() or Q[-1][2] < 0.1
    assert sim.unconverged_solves == 0


# ---- the state: closed before the first step ----------------------------------------------------
def test_the_start_is_closed_holding_the_motors_and_its_velocity_kept_on_the_loops():
    model = ankle()
    motors = [model.joint[j].q_index for j in model.actuated_joints]
    q0 = model.neutral()
    q0[motors] = [0.25, -0.1]
    q0[0] = 0.05                                    # a passive joint off its closed place
    v0 = np.zeros(model.nv)
    v0[motors] = [1.0, 0.5]
    sim = Simulator(model, q0, v0)
    assert np.array_equal(sim.q[motors], q0[motors]) and np.array_equal(sim.v[motors], v0[motors])
    assert np.abs(rbd.constraint_residual(model, sim.q)).max() <= 1e-12
    assert np.abs(rbd.constraint_jacobian(model, sim.q) @ sim.v).max() <= 1e-12
    expected = rbd.close_loops(model, q0, model.actuated_joints)
    assert np.abs(sim.q - expected).max() <= 1e-14
    # set_state closes as the start does; the properties set what they are given
    sim.set_state(q0, v0)
    assert np.abs(sim.q - expected).max() <= 1e-14
    sim.q = q0
    assert np.array_equal(sim.q, q0)


def test_a_start_that_cannot_close_is_refused_naming_the_loop():
    model = rbd.Model.from_urdf(four_bar_urdf('revolute'))
    q = four_bar_angles(1.3) + np.array([0.0, 0.05, -0.04])
    sim = Simulator(model, q, options=SimOptions(**UNDAMPED))     # (the crank held)
    assert sim.q[0] == q[0]
    with pytest.raises(ValueError, match=r"constraint 'coupler_rocker' \(coupler - rocker\) "
                                         r"stays open by"):
        sim.closed_state(q, hold=['crank_joint', 'rocker_joint'])
    closed = sim.q
    with pytest.raises(ValueError, match=r'the velocities of the held joints \(crank_joint, '
                                         r'rocker_joint\) open the loops'):
        sim.closed_state(closed, [1.0, 0.0, 1.0], hold=['crank_joint', 'rocker_joint'])


def test_loops_with_mimic_joints_are_refused_saying_so():
    xml = four_bar_urdf('ball').replace('  <constraint', (
        '  <link name="bob"><inertial><mass value="0.3"/><inertia ixx="1e-4" ixy="0" ixz="0" '
        'iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>\n'
        '  <joint name="bob_joint" type="revolute"><parent link="coupler"/><child link="bob"/>'
        '<axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/>'
        '<mimic joint="crank_joint" multiplier="0.5"/></joint>\n  <constraint'))
    with pytest.raises(ValueError, match=r"closes 1 kinematic loop\(s\) with <constraint> "
                                         r"\('coupler_rocker'\) and has mimic joints"):
        Simulator(rbd.Model.from_urdf(xml))
