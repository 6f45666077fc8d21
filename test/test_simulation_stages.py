"""The simulator step's stages (simulation/step.py, smooth.py, solver.py), each called on its own
with numpy arrays and checked against what its docstring promises, with the core
(rbd_ros.dynamics) or a closed form as the oracle: smooth_step, the row stages (joint_rows,
drive_rows, effort_rows, contact_rows, equality_rows), mass_stage, scale_rows, the rows' laws
and solve_rows, and the integrate stage (applied_efforts, contact_forces, clamp_to_limits,
integrate_public). test_simulation*.py test the step as a whole."""
import math

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from rbd_ros.simulation import SimOptions, Simulator
from rbd_ros.simulation import layout as L
from rbd_ros.simulation import smooth as SM
from rbd_ros.simulation import solver as SV
from rbd_ros.simulation import step as S
from rbd_ros.simulation.contact import ground_frame
from test_simulation import _random_spd, _row_conditions_hold, one_joint
from test_simulation import solve_rows as row_space_solve
from test_simulation_cases import rk4_step
from urdf_factory import random_urdf

DT = 1e-3
INTEGRATORS = {'rk4': 0.5, 'semi_implicit_euler': 1.0}        # theta (step.py, stage 6)


# ---- models -----------------------------------------------------------------------------------
def _inertial(mass, com='0.1 0 0'):
    return (f'<inertial><origin xyz="{com}"/><mass value="{mass}"/><inertia ixx="0.02" '
            f'ixy="0.001" ixz="0.002" iyy="0.03" iyz="0.003" izz="0.04"/></inertial>')


def chain(joints):
    """A serial chain of revolute joints with alternating axes (M couples them), one per dict
    of ``joints`` (lower, upper, velocity, friction, damping, effort)."""
    links = [f'<link name="l0">{_inertial(2.0)}</link>']
    text = []
    for k, j in enumerate(joints, start=1):
        links.append(f'<link name="l{k}">{_inertial(1.0 / k)}</link>')
        axis = ('0 0 1', '0 1 0', '1 0 0')[k % 3]
        text.append(
            f'<joint name="j{k}" type="revolute"><parent link="l{k - 1}"/><child link="l{k}"/>'
            f'<origin xyz="0.2 0 0" rpy="0.3 0 0.1"/><axis xyz="{axis}"/>'
            f'<limit lower="{j.get("lower", -3)}" upper="{j.get("upper", 3)}" '
            f'effort="{j.get("effort", 100)}" velocity="{j.get("velocity", 1000)}"/>'
            f'<dynamics damping="{j.get("damping", 0)}" friction="{j.get("friction", 0)}"/>'
            '</joint>')
    return rbd.Model.from_urdf('<robot name="chain">' + ''.join(links + text) + '</robot>')


#: a floating body with a two-joint leg: a sphere at the shin's end, a point on the body
LEGGED = f'''<robot name="legged"><link name="body">{_inertial(3.0, '0 0 0')}</link>
  <link name="thigh">{_inertial(1.0, '0 0 -0.1')}</link>
  <link name="shin">{_inertial(0.5, '0 0 -0.1')}</link>
  <joint name="hip" type="revolute"><parent link="body"/><child link="thigh"/>
    <origin xyz="0.1 0.05 -0.05" rpy="0.1 0 0.2"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="0.31" effort="50" velocity="20"/>
    <dynamics damping="0.3" friction="0.5"/></joint>
  <joint name="knee" type="revolute"><parent link="thigh"/><child link="shin"/>
    <origin xyz="0 0 -0.2"/><axis xyz="0.3 1 0"/>
    <limit lower="-2.5" upper="2.5" effort="50" velocity="20"/>
    <dynamics damping="0.1" friction="0.2"/></joint>
</robot>'''
GROUND_NORMAL = (0.1, -0.2, 1.0)          # a tilted ground: the rows use its own n, t1, t2
POINTS = ('shin 0.02 0 -0.2 0.05', 'body 0.1 0.1 -0.3 0')


def legged_sim(integrator='rk4', **options):
    options = dict(dict(ground=True, ground_normal=GROUND_NORMAL, collision_contacts=False,
                        contact_points=POINTS, friction_coefficient=0.7,
                        integrator=integrator), **options)
    return Simulator(rbd.Model.from_urdf(LEGGED, floating_base=True),
                     options=SimOptions(**options))


def legged_state(sim, depth=(2e-3, None), seed=0, hip=0.3):
    """(q, v): the base moved along the ground's normal so that the shin's sphere penetrates
    by depth[0]; depth[1] (when given) bends the knee until the body's point penetrates by
    that too (else the knee is straight: the body's point is 0.2 m clear). v random."""
    model = sim.model
    n = ground_frame(GROUND_NORMAL)[0]
    q = model.neutral()
    q[3:7] = np.array([0.05, -0.03, 0.02, 1.0]) / np.linalg.norm([0.05, -0.03, 0.02, 1.0])
    q[7:] = hip, 0.0

    def placed(knee):
        q_ = q.copy()
        q_[8] = knee
        gaps = {link: float(n @ p) for link, p in sim.point_locations(q_)}
        q_[:3] -= (gaps['shin'] + depth[0]) * n
        return q_, gaps['body'] - gaps['shin'] - depth[0]
    if depth[1] is None:
        q, _ = placed(0.0)
    else:
        lo, hi = -2.0, -0.5                     # the body's point: below, above the ground
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            q_mid, gap = placed(mid)
            lo, hi = (mid, hi) if gap < -depth[1] else (lo, mid)
        q = q_mid
    rng = np.random.default_rng(seed)
    return q, 0.3 * rng.uniform(-1, 1, model.nv)


def fields(sim):
    return S.row_fields(sim._work, sim._iwork, sim._si)


def work_vector(sim, slot, n):
    return SM.vector(sim._work, sim._si, slot, n)


# ---- 2. smooth --------------------------------------------------------------------------------
@pytest.mark.parametrize('integrator', INTEGRATORS)
@pytest.mark.parametrize('floating', [False, True], ids=['arm', 'floating'])
def test_smooth_step_is_one_integrator_step_of_forward_dynamics(integrator, floating):
    """smooth_step's (q*, v*) is one step of its integrator over rbd.forward_dynamics under
    the efforts: RK4 on the manifold (Runge-Kutta-Munthe-Kaas, test_simulation_cases.rk4_step)
    or semi-implicit Euler (v* = v + dt FD(q, v, tau), q* = q (+) v* dt), with rbd.integrate for
    the configuration, on a random branching tree of revolute, continuous and prismatic joints,
    fixed to the world or on a floating base. Both call the same kernels: measured equal to
    the bit; bound 1e-13."""
    model = rbd.Model.from_urdf(random_urdf(11, n_links=6, joint_types=(
        'revolute', 'continuous', 'prismatic', 'fixed')), floating_base=floating)
    sim = Simulator(model, options=SimOptions(integrator=integrator, ground=False))
    rng = np.random.default_rng(2)
    q = model.random_configuration(3)
    v, tau = rng.uniform(-2, 2, model.nv), rng.normal(size=model.nv) * 3
    q_free, v_free = np.zeros(model.nq), np.zeros(model.nv)
    status = SM.smooth_step(sim.data.handle, sim._si, sim._sf, q, v, tau, sim._f_ext, q_free,
                            v_free, sim._work)
    assert status == 0
    if integrator == 'rk4':
        q_want, v_want = rk4_step(model, q, v, tau, DT)
    else:
        v_want = v + DT * rbd.forward_dynamics(model, q, v, tau)
        q_want = rbd.integrate(model, q, v_want, DT)
    assert np.abs(v_free - v_want).max() <= 1e-13 * (1 + np.abs(v_want).max())
    assert np.abs(q_free - q_want).max() <= 1e-13
    assert np.abs(v_free - v).max() > 1e-4         # (the step moved: the check can fail)


# ---- 3. rows ----------------------------------------------------------------------------------
#: one joint per situation: (limits, velocity limit, friction, q*, v*)
SITUATIONS = [
    dict(lower=-1, upper=1, q=0.999, v=3.0),                 # near its upper limit
    dict(lower=-1, upper=1, q=-0.9995, v=-2.0),              # near its lower limit
    dict(lower=-1, upper=3, q=-1.01, v=-0.5),                # crossed its lower limit
    dict(velocity=1.5, q=0.0, v=1.4),                        # its speed limits
    dict(lower=-1, upper=1, velocity=10, q=0.9999, v=0.0),   # near a limit, below vmax
    dict(friction=2.0, q=0.0, v=0.7),                        # friction only
    dict(q=0.2, v=-1.0),                                     # nothing in reach: no row
]


@pytest.mark.parametrize('integrator', INTEGRATORS)
def test_joint_rows_keep_each_joint_inside_its_limits_in_the_step(integrator):
    """joint_rows: a LIMIT row per joint with anything in reach, its J the joint's unit row:
    near a position limit its bound is the velocity v+ at which the step ends at the limit
    (q+ = q* + theta dt (v+ - v*): stage 6), a crossed limit stops the joint (bound 0), speed
    limits give -+vmax (the tighter of the two wins; ROW_SPEED says which are speed limits),
    Coulomb friction gives ROW_FRIC = friction dt, the multiplier is warm-started from the last
    step's impulse, and a joint with neither friction nor a bound within REACH of v* has no
    row. Bounds to rounding (1e-12)."""
    theta = INTEGRATORS[integrator]
    model = chain(SITUATIONS)
    sim = Simulator(model, options=SimOptions(integrator=integrator))
    q_free = np.array([s['q'] for s in SITUATIONS])
    v_free = np.array([s['v'] for s in SITUATIONS])
    remembered = np.arange(1.0, 8.0) * 0.01
    rf, ri, J, nz = fields(sim)
    rows = S.joint_rows(sim._si, sim._sf, q_free, v_free, rf, ri, J, nz, remembered, S.REACH,
                        0)
    assert rows == 6                                # the last joint: none
    reach = theta * DT
    want = [(-math.inf, 3.0 + 0.001 / reach, 0), (-2.0 - 0.0005 / reach, math.inf, 0),
            (0.0, math.inf, 0), (-1.5, 1.5, 3), (-10.0, 1e-4 / reach, 1),
            (-math.inf, math.inf, 0)]
    for r, (lo, hi, speed) in enumerate(want):
        assert ri[L.ROW_KIND, r] == L.LIMIT and ri[L.ROW_ROLE, r] == S.JOINT
        assert ri[L.ROW_UNIT, r] == r and ri[L.ROW_NNZ, r] == 1 and nz[r, 0] == r
        assert np.array_equal(J[r], np.eye(model.nv)[r])
        assert rf[L.ROW_LO, r] == pytest.approx(lo, rel=1e-12), r
        assert rf[L.ROW_HI, r] == pytest.approx(hi, rel=1e-12), r
        assert ri[L.ROW_SPEED, r] == speed, r
        assert rf[L.ROW_FRIC, r] == (2.0 * DT if r == 5 else 0.0)
        assert rf[L.ROW_MULT, r] == remembered[r]
    # the position bounds are where the step ends at the limit, as stage 6 integrates
    for r, limit, bound in ((0, 1.0, L.ROW_HI), (1, -1.0, L.ROW_LO), (4, 1.0, L.ROW_HI)):
        assert q_free[r] + theta * DT * (rf[bound, r] - v_free[r]) == pytest.approx(
            limit, abs=1e-15)
    # friction off: the friction-only joint has no row left
    off = Simulator(model, options=SimOptions(integrator=integrator, friction=False))
    rf, ri, J, nz = fields(off)
    assert S.joint_rows(off._si, off._sf, q_free, v_free, rf, ri, J, nz, remembered, S.REACH,
                        0) == 5
    # ... and the place of equality rows adds none in a tree
    assert S.equality_rows(off.data.handle, off._si, off._sf, q_free, v_free, rf, ri, J, nz,
                           off._work, 5) == 5


@pytest.mark.parametrize('integrator', INTEGRATORS)
def test_drive_rows_are_the_implicit_pd_law_within_the_effort_limit(integrator):
    """drive_rows: each drive's SOFT row, impulse b - a u, is the PD law evaluated at the end
    of the step, dt (kp (q_ref - q_end) + kd (v_ref - u)) with q_end = q* + theta dt (u - v*)
    (implicit in position and velocity), for any row velocity u; its bounds leave the effort
    command plus the drive's effort within the effort limit. A joint without gains has no
    drive row. Rounding: 1e-12 relative."""
    theta = INTEGRATORS[integrator]
    model = chain([dict(effort=7.0), dict(effort=3.0), dict(effort=5.0)])
    sim = Simulator(model, options=SimOptions(integrator=integrator))
    kp, kd = np.array([400.0, 0.0, 30.0]), np.array([2.0, 0.0, 0.0])
    q_ref, v_ref = np.array([0.3, 1.0, -0.2]), np.array([-0.5, 2.0, 0.0])
    sim.set_drives(kp, kd, q_ref, v_ref)
    tau = np.array([2.0, 1.0, -5.0])            # (saturated effort commands)
    q_free, v_free = np.array([0.1, -0.4, 0.25]), np.array([0.8, 0.3, -1.2])
    rf, ri, J, nz = fields(sim)
    rows = S.drive_rows(sim._si, sim._sf, sim._command, tau, q_free, v_free, rf, ri, J, nz, 0)
    assert rows == 2                            # joint 1 has no gains
    for r, i in enumerate((0, 2)):
        assert ri[L.ROW_KIND, r] == L.SOFT and ri[L.ROW_ROLE, r] == S.DRIVE
        assert ri[L.ROW_UNIT, r] == i and np.array_equal(J[r], np.eye(3)[i])
        a, b = rf[L.ROW_A, r], rf[L.ROW_B, r]
        for u in (-3.0, 0.0, 0.4, 2.5):
            q_end = q_free[i] + theta * DT * (u - v_free[i])
            pd = DT * (kp[i] * (q_ref[i] - q_end) + kd[i] * (v_ref[i] - u))
            assert b - a * u == pytest.approx(pd, rel=1e-12, abs=1e-15), (i, u)
        limit = model.effort_limits[i]
        assert tau[i] + rf[L.ROW_LO, r] / DT == pytest.approx(-limit, rel=1e-12)
        assert tau[i] + rf[L.ROW_HI, r] / DT == pytest.approx(limit, rel=1e-12)
    free = Simulator(model, options=SimOptions(integrator=integrator, effort_limits=False))
    free.set_drives(kp, kd, q_ref, v_ref)
    rf, ri, J, nz = fields(free)
    assert S.drive_rows(free._si, free._sf, free._command, tau, q_free, v_free, rf, ri, J, nz,
                        0) == 2
    assert np.all(rf[L.ROW_LO, :2] == -np.inf) and np.all(rf[L.ROW_HI, :2] == np.inf)


def test_spring_mode_limits_are_soft_rows_of_the_documented_law():
    """drive_rows, spring mode: a joint beyond a position limit gets a SOFT row (role SPRING),
    a = dt c + dt^2 k, b = -dt k (signed penetration: pushes back in), unbounded; a joint
    inside gets none. (Its law b - a u = -dt (k (penetration + dt u) + c u) ends the joint at
    q* + dt u, not at stage 6's q* + theta dt (u - v*) as a drive's and a contact's do.)"""
    model = chain([dict(lower=-1, upper=1)] * 3)
    sim = Simulator(model, options=SimOptions(position_limits='spring'))
    k, c = sim.options.limit_stiffness, sim.options.limit_damping
    q_free, v_free = np.array([1.02, 0.0, -1.005]), np.zeros(3)
    rf, ri, J, nz = fields(sim)
    rows = S.drive_rows(sim._si, sim._sf, sim._command, np.zeros(3), q_free, v_free, rf, ri, J,
                        nz, 0)
    assert rows == 2
    for r, (i, penetration) in enumerate(((0, 0.02), (2, -0.005))):
        assert ri[L.ROW_KIND, r] == L.SOFT and ri[L.ROW_ROLE, r] == S.SPRING
        assert ri[L.ROW_UNIT, r] == i
        assert rf[L.ROW_A, r] == pytest.approx(DT * c + DT * DT * k, rel=1e-15)
        assert rf[L.ROW_B, r] == pytest.approx(-DT * k * penetration, rel=1e-12)
        assert rf[L.ROW_LO, r] == -np.inf and rf[L.ROW_HI, r] == np.inf
    # ... and the joint rows leave them to the springs (no friction, speeds out of REACH)
    rf, ri, J, nz = fields(sim)
    assert S.joint_rows(sim._si, sim._sf, q_free, v_free, rf, ri, J, nz, np.zeros(3), S.REACH,
                        0) == 0


def test_effort_rows_take_back_what_a_drive_gave_up():
    """effort_rows: a drive whose effort tau is below its (saturated) command gets a SOFT row
    (role EFFORT) bounded by what it gave up, [0, (command - tau) dt] (mirrored for a negative
    command), toward its speed limit (ROW_B = +-vmax until scale_rows makes it a stiff spring
    a (vmax - u)); a drive at its command gets none."""
    model = chain([dict(velocity=2.0, effort=10.0), dict(velocity=3.0), dict(velocity=4.0)])
    sim = Simulator(model)
    sim.set_effort(np.array([25.0, -8.0, 1.0]))       # the first saturates at 10
    tau = np.array([6.0, -5.0, 1.0])
    rf, ri, J, nz = fields(sim)
    rows = S.effort_rows(sim._si, sim._sf, sim._command, tau, rf, ri, J, nz, 0)
    assert rows == 2
    want = [(0, 0.0, 4.0 * DT, 2.0), (1, -3.0 * DT, 0.0, -3.0)]
    for r, (i, lo, hi, target) in enumerate(want):
        assert ri[L.ROW_KIND, r] == L.SOFT and ri[L.ROW_ROLE, r] == S.EFFORT
        assert ri[L.ROW_UNIT, r] == i and np.array_equal(J[r], np.eye(3)[i])
        assert rf[L.ROW_LO, r] == pytest.approx(lo, abs=1e-18)
        assert rf[L.ROW_HI, r] == pytest.approx(hi, abs=1e-18)
        assert rf[L.ROW_B, r] == target


def _point_rows_oracle(sim, q, p, link, where):
    """The normal and tangent rows of point p (world ``where`` on ``link``): rbd.frame_jacobian
    of its link moved to the point, v_p = v_o + w x (p - o), along n, t1, t2."""
    model = sim.model
    Jf = rbd.frame_jacobian(model, q, link, 'local_world_aligned')
    o = rbd.frame_pose(model, q, link)[:3, 3]
    r = where - o
    skew = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    Jp = Jf[:3] - skew @ Jf[3:]
    return np.stack([d @ Jp for d in ground_frame(GROUND_NORMAL)])


@pytest.mark.parametrize('integrator', INTEGRATORS)
def test_contact_rows_are_a_penetrating_points_spring_damper_and_friction_disk(integrator):
    """contact_rows: a point penetrating by d at q* gives a normal SOFT row (never pulls: lo =
    0) with a = theta dt^2 k + dt c and b = dt k (d + theta dt vn*) (step.py's docstring), whose
    law b - a u is dt (k (-g_end) - c u) with g_end the point's gap after moving theta dt
    (u - vn*); and a TANGENT pair of radius mu lam_n (the normal's law at v*), its partner the
    normal. The rows' J are the point's velocity Jacobian along the ground's n, t1, t2
    (rbd.frame_jacobian at the point: 1e-13, measured 6e-17; the normal also the derivative
    of point_locations' gap: central differences, 1e-9, measured 2e-11). A point above the
    ground has no rows; where each touching point is goes to ``out``."""
    theta = INTEGRATORS[integrator]
    sim = legged_sim(integrator)
    model, o = sim.model, sim.options
    q, v = legged_state(sim, depth=(2e-3, None))
    n = ground_frame(GROUND_NORMAL)[0]
    located = sim.point_locations(q)
    gaps = [float(n @ p) for _, p in located]
    touching = [p for p, g in enumerate(gaps) if g < 0]
    assert len(touching) == 1 and gaps[touching[0]] == pytest.approx(-2e-3, abs=1e-12)
    p = touching[0]
    rf, ri, J, nz = fields(sim)
    out = np.full(model.nv + L.OUT_COLS * len(sim.points), np.nan)
    rows = S.contact_rows(sim.data.handle, sim._si, sim._sf, q, v, rf, ri, J, nz, out,
                          sim._work, sim._iwork, np.zeros(3 * len(sim.points)), 0)
    assert rows == 3
    assert list(ri[L.ROW_KIND, :3]) == [L.SOFT, L.TANGENT, L.TANGENT]
    assert all(ri[L.ROW_ROLE, :3] == S.CONTACT) and all(ri[L.ROW_POINT, :3] == p)
    assert list(ri[L.ROW_PARTNER, 1:3]) == [0, 0]
    want_J = _point_rows_oracle(sim, q, p, located[p][0], located[p][1])
    assert np.abs(J[:3] - want_J).max() <= 1e-13
    for r in range(3):            # the nonzero columns say where J is
        cols = nz[r, :ri[L.ROW_NNZ, r]]
        assert np.all(J[r, np.setdiff1d(np.arange(model.nv), cols)] == 0)
    # the normal row is the gap's derivative (point_locations, the step's own geometry)
    rng = np.random.default_rng(4)
    for _ in range(3):
        delta, eps = rng.normal(size=model.nv), 1e-6
        plus = n @ sim.point_locations(rbd.integrate(model, q, delta, eps))[p][1]
        minus = n @ sim.point_locations(rbd.integrate(model, q, delta, -eps))[p][1]
        assert (plus - minus) / (2 * eps) == pytest.approx(J[0] @ delta, abs=1e-9)
    k, c, mu, d = o.contact_stiffness, o.contact_damping, o.friction_coefficient, 2e-3
    vn = J[0] @ v
    a, b = rf[L.ROW_A, 0], rf[L.ROW_B, 0]
    assert a == pytest.approx(theta * DT * DT * k + DT * c, rel=1e-14)
    assert b == pytest.approx(DT * k * (d + theta * DT * vn), rel=1e-12)
    assert rf[L.ROW_LO, 0] == 0.0 and rf[L.ROW_HI, 0] == np.inf
    for u in (-0.3, 0.0, 0.2):
        g_end = -d + theta * DT * (u - vn)
        assert b - a * u == pytest.approx(DT * (k * -g_end - c * u), rel=1e-12)
    assert rf[L.ROW_RADIUS, 1] == rf[L.ROW_RADIUS, 2] == pytest.approx(
        mu * max(b - a * vn, 0.0), rel=1e-15)
    assert rf[L.ROW_FRIC, 1] == rf[L.ROW_FRIC, 2] == mu
    assert rf[L.ROW_MULT, 1] == 0.0                 # (nothing remembered: no stick predicted)
    at = model.nv + L.OUT_COLS * p
    assert np.array_equal(out[at + L.OUT_AT:at + L.OUT_AT + 3], located[p][1])
    assert out[at + L.OUT_ACTIVE] == 1.0
    other = model.nv + L.OUT_COLS * (1 - p)
    assert np.all(out[other:other + L.OUT_COLS] == 0.0)


def test_contact_rows_warm_start_from_the_last_steps_impulses():
    """contact_rows with last step's impulses remembered: the disks' radius is mu times the
    remembered normal impulse, and a point that stuck (|lam_t| below 0.99 of its cone) has its
    stick predicted (ROW_MULT 1 on its pair); one that slid (on its cone) has not."""
    sim = legged_sim()
    q, v = legged_state(sim, depth=(2e-3, 1e-3))
    mu = sim.options.friction_coefficient
    remembered = np.array([0.01, 0.002, -0.003,            # point 0: inside its cone, stuck
                           0.02, 0.6 * mu * 0.02, 0.8 * mu * 0.02])    # point 1: on its cone
    rf, ri, J, nz = fields(sim)
    out = np.zeros(sim.model.nv + L.OUT_COLS * 2)
    rows = S.contact_rows(sim.data.handle, sim._si, sim._sf, q, v, rf, ri, J, nz, out,
                          sim._work, sim._iwork, remembered, 0)
    assert rows == 6
    for r in (0, 3):
        p = ri[L.ROW_POINT, r]
        assert rf[L.ROW_RADIUS, r + 1] == rf[L.ROW_RADIUS, r + 2] == mu * remembered[3 * p]
        assert rf[L.ROW_MULT, r + 1] == (1.0 if p == 0 else 0.0)


# ---- 4. mass ----------------------------------------------------------------------------------
def _damped_random_urdf(seed, **kw):
    text = random_urdf(seed, **kw)
    rng = np.random.default_rng(seed)
    out = []
    for part in text.split('</joint>')[:-1]:
        if 'type="fixed"' not in part:
            part += f'<dynamics damping="{rng.uniform(0.1, 5):.6f}"/>'
        out.append(part)
    return '</joint>'.join(out + [text.split('</joint>')[-1]])


@pytest.mark.parametrize('case', ['arm', 'floating', 'mimic'])
def test_mass_stage_is_the_core_mass_matrix_with_implicit_damping(case):
    """mass_stage: M = rbd.mass_matrix(q*) (public coordinates: a mimic model's reduced
    G^T M G), W = M + dt diag(damping) (M without the damping option), Mv = M v*. The core
    symmetrises a mimic model's M, the stage does not: 1e-12 relative (measured equal to the
    bit)."""
    mimic = case == 'mimic'
    model = rbd.Model.from_urdf(_damped_random_urdf(21, n_links=6, mimic=mimic, joint_types=(
        'revolute', 'continuous', 'prismatic', 'fixed')), floating_base=case == 'floating')
    assert model.has_mimic == mimic and np.any(model.damping > 0)
    rng = np.random.default_rng(5)
    q, v = model.random_configuration(8), rng.normal(size=model.nv)
    for damping in (True, False):
        sim = Simulator(model, options=SimOptions(damping=damping, ground=False))
        n = model.nv
        M, W, Mv = np.zeros((n, n)), np.zeros((n, n)), np.zeros(n)
        assert S.mass_stage(sim.data.handle, sim._si, sim._sf, q, v, M, W, Mv, sim._work) == 0
        want = rbd.mass_matrix(model, q)
        scale = np.abs(want).max()
        assert np.abs(M - want).max() <= 1e-12 * scale
        D = np.diag(model.damping) if damping else 0.0
        assert np.abs(W - (M + DT * D)).max() <= 1e-15 * scale
        assert np.abs(Mv - M @ v).max() <= 1e-12 * scale * np.abs(v).max()


def test_scale_rows_sets_each_kinds_scale_from_ws_diagonal():
    """scale_rows: each row's G_rr estimate sum_c J_rc^2 / W_cc (exactly J_r W^-1 J_r^T for a
    diagonal W): a LIMIT row's regularisation LIMIT_REGULARISATION G_rr, an effort row's
    stiffness a = 1 / (EFFORT_COMPLIANCE G_rr) and b = a vmax (the impulse a (vmax - u)), a
    tangent pair's compliance STICK_COMPLIANCE times the pair's mean G (on its first row);
    SOFT drive and normal rows keep their a, b."""
    rng = np.random.default_rng(6)
    n, m = 4, 6
    W_diag = np.diag(rng.uniform(0.5, 3.0, n))
    for W in (W_diag, np.linalg.inv(_random_spd(rng, n)) + W_diag):
        W = np.ascontiguousarray(W)
        rf, ri = np.zeros((L.ROW_FLOATS, m)), np.zeros((L.ROW_INTS, m), dtype=np.int64)
        J, nz = np.zeros((m, n)), np.zeros((m, n), dtype=np.int64)
        kinds = [(L.LIMIT, S.JOINT), (L.SOFT, S.EFFORT), (L.SOFT, S.DRIVE), (L.SOFT, S.CONTACT),
                 (L.TANGENT, S.CONTACT), (L.TANGENT, S.CONTACT)]
        for r, (kind, role) in enumerate(kinds):
            ri[L.ROW_KIND, r], ri[L.ROW_ROLE, r] = kind, role
            if r < 3:                       # unit rows
                J[r, r] = 1.0
                nz[r, 0], ri[L.ROW_NNZ, r] = r, 1
            else:                           # a point's rows: every column
                J[r] = rng.normal(size=n)
                nz[r], ri[L.ROW_NNZ, r] = np.arange(n), n
        rf[L.ROW_A], rf[L.ROW_B] = 7.0, 11.0
        rf[L.ROW_B, 1] = 2.5                # the effort row's target speed
        S.scale_rows(W, J, nz, rf, ri, m)
        g = (J ** 2 / np.diag(W)).sum(axis=1)
        assert rf[L.ROW_R, 0] == pytest.approx(SV.LIMIT_REGULARISATION * g[0], rel=1e-15)
        assert rf[L.ROW_A, 1] == pytest.approx(1 / (S.EFFORT_COMPLIANCE * g[1]), rel=1e-15)
        assert rf[L.ROW_B, 1] == pytest.approx(2.5 * rf[L.ROW_A, 1], rel=1e-15)
        assert list(rf[L.ROW_A, 2:4]) == [7.0, 7.0] and list(rf[L.ROW_B, 2:4]) == [11.0, 11.0]
        stick = SV.STICK_COMPLIANCE * 0.5 * (g[4] + g[5])
        assert rf[L.ROW_R, 4] == pytest.approx(stick, rel=1e-14)
        assert rf[L.ROW_R, 2] == rf[L.ROW_R, 3] == 0.0
        if W is W_diag:                     # the estimate is G_rr itself
            exact = np.einsum('ij,jk,ik->i', J, np.linalg.inv(W), J)
            assert np.abs(g - exact).max() <= 1e-14 * exact.max()


# ---- 5. solve: the rows' laws, and the solver -------------------------------------------------
def _one_row_cost(kind, u, **fields_):
    """The solver's cost of one row alone (W = 0, M v* = 0, J = 1): l_r(u)."""
    rf, ri = np.zeros((L.ROW_FLOATS, 2)), np.zeros((L.ROW_INTS, 2), dtype=np.int64)
    for name, value in fields_.items():
        rf[getattr(L, 'ROW_' + name.upper())] = value
    ri[L.ROW_KIND] = kind
    ri[L.ROW_NNZ] = 1 if kind != L.TANGENT else 2
    nrows = 2 if kind == L.TANGENT else 1
    J = np.eye(2)
    nz = np.array([[0, 1], [1, 0]], dtype=np.int64) if kind != L.TANGENT else \
        np.array([[0, 1], [0, 1]], dtype=np.int64)
    return SV.cost(np.zeros((2, 2)), np.array([-1, 0]), np.zeros(2), J, nz, rf, ri, nrows,
                   np.asarray(u, dtype=float))


def test_each_rows_law_is_minus_the_derivative_of_its_cost():
    """limit_impulse, soft_impulse, tangent_impulse: lam = -l'(u) of the row's term in the
    solver's cost (solver.cost: what the line search and the warm start compare), slope =
    -d lam / d u (central differences, relative 1e-6); a LIMIT row slides at exactly -+fric,
    sticks within it and is held at a bound by (bound - x) / r; a SOFT row is b - a u clipped;
    a TANGENT pair stays inside its disk, against the slip: -u / c at small slip, 0.9 of the
    disk at a slip of 2.06 c radius (the solver's docstring: 2.1)."""
    rng = np.random.default_rng(7)
    h = 1e-7
    for _ in range(200):
        r, mult = 10 ** rng.uniform(-7, -3), rng.normal() * 0.1
        lo, hi = sorted(rng.normal(size=2))
        lo, hi = (lo if rng.random() < 0.7 else -np.inf), (hi if rng.random() < 0.7 else np.inf)
        fric = rng.uniform(0, 0.5) if rng.random() < 0.7 else 0.0
        u = rng.normal() * 2
        lam, slope, piece = SV.limit_impulse(u, mult, r, lo, hi, fric)
        x = u - r * mult
        if piece == SV.UP or piece == SV.DOWN:
            assert lam == (-fric if piece == SV.UP else fric) and slope == 0.0
            assert lo <= x - math.copysign(r * fric, x) <= hi
        elif piece == SV.STUCK:
            assert abs(lam) <= fric and lam == -x / r and lo <= 0.0 <= hi
        else:
            bound = lo if piece == SV.AT_LO else hi
            assert lam == (bound - x) / r and slope == 1.0 / r
        args = dict(mult=mult, r=r, lo=lo, hi=hi, fric=fric)
        step_ = 1e-3 * r               # (the law is linear on each piece: exact off its kinks)
        derivative = (_one_row_cost(L.LIMIT, [u + step_, 0], **args)
                      - _one_row_cost(L.LIMIT, [u - step_, 0], **args)) / (2 * step_)
        assert derivative == pytest.approx(-lam, rel=1e-6, abs=1e-9 * (1 + fric))
        a, b = 10 ** rng.uniform(-3, 2), rng.normal()
        lam, slope, piece = SV.soft_impulse(u, a, b, lo, hi)
        assert lam == min(max(b - a * u, lo), hi)
        assert slope == (a if piece == SV.INSIDE else 0.0)
        derivative = (_one_row_cost(L.SOFT, [u + h, 0], a=a, b=b, lo=lo, hi=hi)
                      - _one_row_cost(L.SOFT, [u - h, 0], a=a, b=b, lo=lo, hi=hi)) / (2 * h)
        if abs(b - a * u - lo) > 1e-5 and abs(b - a * u - hi) > 1e-5:      # (off the kinks)
            assert derivative == pytest.approx(-lam, rel=1e-6, abs=1e-7)
        c, radius = 10 ** rng.uniform(-5, -2), rng.uniform(0, 2)
        ut = rng.normal(size=2) * 10 ** rng.uniform(-6, 0)
        l1, l2, s11, s12, s22, _ = SV.tangent_impulse(ut[0], ut[1], c, radius)
        lt = np.array([l1, l2])
        assert np.linalg.norm(lt) <= radius * (1 + 1e-15) and lt @ ut <= 0.0
        hh = 1e-6 * max(np.linalg.norm(ut), c * radius)
        grad, jac = np.zeros(2), np.zeros((2, 2))
        for k in range(2):
            e = np.eye(2)[k] * hh
            grad[k] = (_one_row_cost(L.TANGENT, ut + e, r=c, radius=radius)
                       - _one_row_cost(L.TANGENT, ut - e, r=c, radius=radius)) / (2 * hh)
            jac[:, k] = (np.array(SV.tangent_impulse(*(ut + e), c, radius)[:2])
                         - np.array(SV.tangent_impulse(*(ut - e), c, radius)[:2])) / (2 * hh)
        if radius > 0:
            # stiction: -u / c at small slip; 0.9 of the cone at a slip of 2.06 c radius
            small = np.array(SV.tangent_impulse(1e-6 * c * radius, 0.0, c, radius)[:2])
            assert small[0] == pytest.approx(-1e-6 * radius, rel=1e-11) and small[1] == 0.0
            slip = math.sqrt(0.81 / 0.19) * c * radius
            assert math.hypot(*SV.tangent_impulse(0.6 * slip, 0.8 * slip, c, radius)[:2]) == \
                pytest.approx(0.9 * radius, rel=1e-14)
            assert np.abs(grad + lt).max() <= 1e-6 * radius
            assert np.abs(-jac - [[s11, s12], [s12, s22]]).max() <= 1e-5 * radius / (c * radius)


def test_the_solver_meets_each_laws_conditions_on_mixed_rows():
    """solve_rows on hand-made problems mixing every kind (LIMIT joints with friction and
    bounds, SOFT drives, contacts: a SOFT normal and its TANGENT pair), in row space through
    test_simulation's harness (W = G^-1, J = I): the optimality conditions of each law at v+
    (a LIMIT row within its bounds, friction at its level when sliding, within it when held,
    only pushing back at a bound; a SOFT row b - a u clipped; a tangent pair the disk's law
    at the normal's impulse) and the gradient v - v0 - G lam = 0, converged. Tolerance 1e-8
    of the problem's scale (measured: the gradient 2e-13, the disks' law 4e-10: their radius
    is the last outer round's normal impulse, converged to the solver's tolerance)."""
    rng = np.random.default_rng(8)
    for trial in range(150):
        joints, drives, contacts = (int(x) for x in rng.integers(1, 4, 3))
        n = joints + drives + 3 * contacts
        G = _random_spd(rng, n, trial % 3 == 0)
        v0 = rng.normal(size=n)
        kind = np.array([L.LIMIT] * joints + [L.SOFT] * drives
                        + [L.SOFT, L.TANGENT, L.TANGENT] * contacts, dtype=np.int64)
        lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
        fric, a, b = np.zeros(n), np.zeros(n), np.zeros(n)
        partner, compliance = np.full(n, -1, dtype=np.int64), np.zeros(n)
        lo[:joints] = np.where(rng.random(joints) < 0.5, -rng.uniform(0, 1, joints), -np.inf)
        hi[:joints] = np.where(rng.random(joints) < 0.5, rng.uniform(0, 1, joints), np.inf)
        fric[:joints] = rng.uniform(0, 1, joints)
        d = slice(joints, joints + drives)
        a[d], b[d] = rng.uniform(0.01, 5, drives), rng.normal(size=drives)
        lo[d], hi[d] = -rng.uniform(0, 2, drives), rng.uniform(0, 2, drives)
        for c in range(contacts):
            r = joints + drives + 3 * c
            lo[r], a[r], b[r] = 0.0, rng.uniform(0.1, 10), rng.uniform(-1, 2)
            fric[r + 1:r + 3], partner[r + 1:r + 3] = rng.uniform(0.2, 1.5), r
            compliance[r + 1:r + 3] = SV.STICK_COMPLIANCE * np.mean(np.diag(G)[r + 1:r + 3])
        lam, v, taken = row_space_solve(G, v0, kind, lo, hi, fric, a, b, partner,
                                        compliance=compliance, iterations=200,
                                        tolerance=1e-12)
        assert taken <= 200, trial
        tol = 1e-8 * (1 + np.abs(lam).max() + np.abs(v0).max())
        assert np.abs(v - (v0 + G @ lam)).max() <= tol, trial           # the gradient
        for i in range(n):
            if kind[i] == L.LIMIT:
                _limit_conditions(v[i], lam[i], lo[i], hi[i], fric[i], tol, trial)
            elif kind[i] == L.SOFT:
                assert lam[i] == pytest.approx(min(max(b[i] - a[i] * v[i], lo[i]), hi[i]),
                                               abs=tol * (1 + a[i])), (trial, i)
            elif partner[i] == partner[i - 1] and kind[i - 1] == L.TANGENT:
                continue
            else:
                _tangent_conditions(v[i:i + 2], lam[i:i + 2], fric[i] * lam[partner[i]],
                                    compliance[i], tol, trial)


def _limit_conditions(u, lam, lo, hi, fric, tol, label):
    """A LIMIT row's law at its solution (test_simulation's conditions, on one row: G = 0, so
    its v0 is the row's velocity)."""
    try:
        _row_conditions_hold(np.zeros((1, 1)), np.array([u]), [lo], [hi], [fric],
                             np.array([lam]), tol)
    except AssertionError as error:
        raise AssertionError((label, u, lam, lo, hi, fric)) from error


def _tangent_conditions(u, lam, radius, c, tol, label):
    """A tangent pair's law at its solution: the disk of the normal's impulse, against the
    slip, -radius u / sqrt(|u|^2 + (c radius)^2)."""
    assert np.linalg.norm(lam) <= radius + tol, label
    want = -radius * u / np.sqrt(u @ u + (c * radius) ** 2) if radius > 0 else np.zeros(2)
    assert np.abs(lam - want).max() <= tol * (1 + radius), (label, lam, want)


def stages(sim, q, v, tau=None):
    """Stages 2-5 of one step from (q, v) under the efforts tau (the saturated effort command
    by default), called one by one as step.constrained_step calls them (cold: no warm start):
    (q*, v*, the rows, M, W, Mv, v+, ...)."""
    model, si, sf, work = sim.model, sim._si, sim._sf, sim._work
    nv, h = model.nv, sim.data.handle
    if tau is None:
        tau = np.array([S.effort_command(si, sf, sim._command, i) for i in range(nv)])
    q_free, v_free = work_vector(sim, L.W_Q_FREE, model.nq), work_vector(sim, L.W_V_FREE, nv)
    assert SM.smooth_step(h, si, sf, q, v, tau, sim._f_ext, q_free, v_free, work) == 0
    rf, ri, J, nz = fields(sim)
    rows = S.joint_rows(si, sf, q_free, v_free, rf, ri, J, nz, np.zeros(nv), S.REACH, 0)
    rows = S.drive_rows(si, sf, sim._command, tau, q_free, v_free, rf, ri, J, nz, rows)
    rows = S.effort_rows(si, sf, sim._command, tau, rf, ri, J, nz, rows)
    out = np.zeros(nv + L.OUT_COLS * len(sim.points))
    rows = S.contact_rows(h, si, sf, q_free, v_free, rf, ri, J, nz, out, work, sim._iwork,
                          np.zeros(3 * len(sim.points)), rows)
    M, W, Mv = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros(nv)
    assert S.mass_stage(h, si, sf, q_free, v_free, M, W, Mv, work) == 0
    S.scale_rows(W, J, nz, rf, ri, rows)
    W_in = W.copy()
    parent = si[si[L.FACTOR_PARENT_AT]:si[L.FACTOR_PARENT_AT] + nv]
    v_new = v_free.copy()
    tol_v = S.velocity_tolerance(si, sf, v_free)
    taken = SV.solve_rows(W, Mv, parent, J, nz, rf, ri, rows, v_new, np.zeros((nv, nv)),
                          np.zeros(nv), np.zeros(nv), 50, tol_v)
    assert 0 < taken <= 50
    return dict(q_free=q_free.copy(), v_free=v_free.copy(), rows=rows, M=M, W=W_in, Mv=Mv,
                v_new=v_new, rf=rf, ri=ri, J=J, nz=nz, tau=tau, out=out, tol_v=tol_v)


@pytest.mark.parametrize('integrator', INTEGRATORS)
def test_the_solver_on_a_steps_own_rows_meets_the_optimality_conditions(integrator):
    """solve_rows on the rows the stages build for a floating legged robot with both contact
    points in the ground, joint friction and damping, its hip swinging into its limit and a PD
    drive at its knee (the rows' J general, not unit; the hip ends at its bound, the knee's
    friction slides, its drive at its effort limit, both contacts slide): the gradient
    W v+ - M v* - J^T lam is 0 (1e-12 of M v*'s scale, measured 4e-16), every row's impulse
    is its law at u = J_r v+ (SOFT exactly, the disks at mu lam_n, LIMIT rows within bounds
    to the solver's tolerance); and the stages called one by one give the step's own v+
    (step.step: 1e-12, measured equal to the bit)."""
    sim = legged_sim(integrator)
    sim.set_drives(kp=[0, 0, 0, 0, 0, 0, 0, 200.0], kd=[0, 0, 0, 0, 0, 0, 0, 5.0],
                   q_ref=[0, 0, 0, 0, 0, 0, 0, -0.3])
    q, v = legged_state(sim, depth=(2e-3, 1e-3), seed=1, hip=0.3095)   # 0.5 mrad below its
    v[6] = 2.0                                                          # limit, swinging in
    s = stages(sim, q, v)
    rf, ri, J, rows = s['rf'], s['ri'], s['J'], s['rows']
    kinds = list(ri[L.ROW_ROLE, :rows])
    assert kinds == [S.JOINT, S.JOINT, S.DRIVE] + [S.CONTACT] * 6, kinds
    v_new, lam = s['v_new'], rf[L.ROW_LAM, :rows]
    g = s['W'] @ v_new - s['Mv'] - J[:rows].T @ lam
    assert np.abs(g).max() <= 1e-12 * np.abs(s['Mv']).max()
    u = J[:rows] @ v_new
    tol = 10 * s['tol_v']
    for r in range(rows):
        kind = ri[L.ROW_KIND, r]
        if kind == L.LIMIT:
            _limit_conditions(u[r], lam[r], rf[L.ROW_LO, r], rf[L.ROW_HI, r],
                              rf[L.ROW_FRIC, r], max(tol, 1e-9 * abs(lam[r])), r)
        elif kind == L.SOFT:
            want = min(max(rf[L.ROW_B, r] - rf[L.ROW_A, r] * u[r], rf[L.ROW_LO, r]),
                       rf[L.ROW_HI, r])
            assert lam[r] == pytest.approx(want, rel=1e-12, abs=1e-15), r
        elif ri[L.ROW_PARTNER, r] == ri[L.ROW_PARTNER, r - 1]:
            continue
        else:
            radius = rf[L.ROW_FRIC, r] * lam[ri[L.ROW_PARTNER, r]]
            assert radius > 0
            _tangent_conditions(u[r:r + 2], lam[r:r + 2], radius, rf[L.ROW_R, r],
                                1e-6 * radius, r)
    assert ri[L.ROW_UNIT, 0] == 6 and u[0] == pytest.approx(rf[L.ROW_HI, 0], abs=tol)
    assert list(ri[L.ROW_PIECE, :3]) == [SV.AT_HI, SV.UP, SV.AT_HI]      # (as the docstring)
    assert ri[L.ROW_PIECE, 4] == ri[L.ROW_PIECE, 7] == SV.UP
    # the pipeline as the step runs it (its first step: no warm start)
    sim2 = legged_sim(integrator)
    sim2._command[:] = sim._command
    sim2.q, sim2.v = q, v
    assert sim2.advance()
    assert np.abs(work_vector(sim2, L.W_V_NEW, sim2.model.nv) - v_new).max() <= 1e-12 * (
        1 + np.abs(v_new).max())


# ---- 6. integrate -----------------------------------------------------------------------------
def _held_rows(lam, fric, piece, speed):
    rf, ri = np.zeros((L.ROW_FLOATS, 1)), np.zeros((L.ROW_INTS, 1), dtype=np.int64)
    ri[L.ROW_ROLE, 0], ri[L.ROW_UNIT, 0], ri[L.ROW_SPEED, 0] = S.JOINT, 0, speed
    ri[L.ROW_PIECE, 0], rf[L.ROW_LAM, 0], rf[L.ROW_FRIC, 0] = piece, lam, fric
    return rf, ri


def test_applied_efforts_give_up_the_braking_beyond_friction_never_past_zero():
    """applied_efforts, on a hand-made limit row of a drive at its speed limit: the effort
    reported is the command less the row's braking beyond friction; never below zero, never
    of the opposite sign to the command; nothing given up where the row holds the other
    limit, holds within friction, or the command pulls away from the limit."""
    sim = Simulator(one_joint(velocity=1.5, effort=40.0))
    si, sf = sim._si, sim._sf
    F = 0.5 * DT
    cases = [  # (command, lam, piece, speed, reported)
        (10.0, -(F + 3.0 * DT), SV.AT_HI, 2, 7.0),      # brakes 3 beyond friction
        (10.0, -(F + 30.0 * DT), SV.AT_HI, 2, 0.0),     # more than the command: 0, not -20
        (60.0, -(F + 50.0 * DT), SV.AT_HI, 2, 0.0),     # (the command saturates at 40)
        (-10.0, F + 4.0 * DT, SV.AT_LO, 1, -6.0),       # mirrored
        (-10.0, F + 40.0 * DT, SV.AT_LO, 1, 0.0),
        (10.0, -0.5 * F, SV.AT_HI, 2, 10.0),            # within friction: all of it
        (-10.0, -(F + 3.0 * DT), SV.AT_HI, 2, -10.0),   # pulls away from the limit it's at
        (10.0, -(F + 3.0 * DT), SV.AT_HI, 1, 10.0),     # hi is a position limit, not vmax
        (10.0, -(F + 3.0 * DT), SV.STUCK, 2, 10.0),     # not at the bound
    ]
    for command, lam, piece, speed, reported in cases:
        sim.set_effort(np.array([command]))
        tau = np.array([min(max(command, -40.0), 40.0)])
        rf, ri = _held_rows(lam, F, piece, speed)
        out = np.full(1, np.nan)
        S.applied_efforts(si, sf, sim._command, tau, rf, ri, 1, out)
        assert out[0] == pytest.approx(reported, abs=1e-12), (command, lam, piece, speed)
        assert out[0] * command >= 0.0
    # a drive row and an effort row add their impulses (as efforts)
    rf, ri = np.zeros((L.ROW_FLOATS, 2)), np.zeros((L.ROW_INTS, 2), dtype=np.int64)
    ri[L.ROW_ROLE] = S.DRIVE, S.EFFORT
    rf[L.ROW_LAM] = 2.0 * DT, 0.5 * DT
    sim.set_effort(np.array([3.0]))
    out = np.zeros(1)
    S.applied_efforts(si, sf, sim._command, np.array([1.0]), rf, ri, 2, out)
    assert out[0] == pytest.approx(3.5, rel=1e-12)


@pytest.mark.parametrize('v0, command, reported', [
    (1.5, 50.0, 'friction'),        # held at vmax: what holds it against friction
    (3.0, 50.0, 0.0),               # above vmax, braked: given up entirely, not negative
    (3.0, -50.0, -50.0),            # above vmax, pushing back: all of it
])
def test_applied_efforts_of_a_drive_at_its_speed_limit_in_a_real_pass(v0, command, reported):
    """The stages of one pass on a bar at its speed limit (I = 0.5 kg m^2 on a vertical axis,
    friction F = 1 N m, vmax 1.5 rad/s): held at vmax under a 50 N m command, the drive is
    reported to apply F, exactly what holds the speed against friction (the limit row brakes
    the other 49 N m dt); started above vmax it gives all of its command up (0, not the
    negative braking); pushing back, all of it."""
    sim = Simulator(one_joint(velocity=1.5, friction=1.0))
    sim.set_effort(np.array([command]))
    s = stages(sim, np.zeros(1), np.array([v0]))
    out = np.zeros(1)
    S.applied_efforts(sim._si, sim._sf, sim._command, s['tau'], s['rf'], s['ri'], s['rows'], out)
    assert out[0] == pytest.approx(1.0 if reported == 'friction' else reported, abs=1e-9)
    assert s['v_new'][0] == pytest.approx(1.5, abs=1e-9)


def test_a_drive_held_at_its_speed_limit_gives_up_what_the_limit_brakes_beyond_friction():
    """speed_limited_effort between passes (step.py: stages 2-5 again with the reduced
    efforts): the bar held at vmax under a 50 N m command, friction F = 1 N m: after the first
    pass its effort becomes F (50 less the 49 the limit row braked beyond friction: what holds
    the speed, I dv = 0 over the step) and it says the efforts changed; the pass under F
    keeps the bar at vmax with nothing to give up or take back (its effort row's impulse is
    0 to the solver's tolerance: 1e-9 N m dt), and says nothing changed."""
    sim = Simulator(one_joint(velocity=1.5, friction=1.0))
    sim.set_effort(np.array([50.0]))
    si, sf, command = sim._si, sim._sf, sim._command
    last = np.zeros(4)
    s = stages(sim, np.zeros(1), np.array([1.5]))
    tau = s['tau'].copy()
    assert S.speed_limited_effort(si, sf, command, tau, s['rf'], s['ri'], s['rows'], s['tol_v'],
                                  last)
    assert tau[0] == pytest.approx(1.0, abs=1e-9)
    s = stages(sim, np.zeros(1), np.array([1.5]), tau=tau.copy())
    assert list(s['ri'][L.ROW_ROLE, :s['rows']]) == [S.JOINT, S.EFFORT]
    assert s['v_new'][0] == pytest.approx(1.5, abs=1e-9)
    assert abs(s['rf'][L.ROW_LAM, 1]) <= 1e-9 * DT
    before = tau.copy()
    assert not S.speed_limited_effort(si, sf, command, tau, s['rf'], s['ri'], s['rows'],
                                      s['tol_v'], last)
    assert tau[0] == before[0]
    out = np.zeros(1)
    S.applied_efforts(si, sf, command, tau, s['rf'], s['ri'], s['rows'], out)
    assert out[0] == pytest.approx(1.0, abs=1e-9)


def test_contact_forces_are_the_rows_impulses_over_dt_along_the_ground_frame():
    """contact_forces: each touching point's force is (lam_n n + lam_1 t1 + lam_2 t2) / dt on
    the ground's frame, remembered impulses are the rows' (0 for points not touching); joint
    rows contribute nothing. (That a resting box's forces carry its weight:
    test_simulation_step.)"""
    sim = legged_sim()
    nv = sim.model.nv
    n, t1, t2 = ground_frame(GROUND_NORMAL)
    rf, ri = np.zeros((L.ROW_FLOATS, 4)), np.zeros((L.ROW_INTS, 4), dtype=np.int64)
    ri[L.ROW_ROLE] = S.JOINT, S.CONTACT, S.CONTACT, S.CONTACT
    ri[L.ROW_POINT, 1:] = 1
    rf[L.ROW_LAM] = 9.0, 0.02, -0.003, 0.004
    out = np.zeros(nv + 2 * L.OUT_COLS)
    remembered = np.full(6, np.nan)
    S.contact_forces(sim._si, sim._sf, rf, ri, 4, out, remembered)
    at = nv + L.OUT_COLS + L.OUT_FORCE
    want = (0.02 * n - 0.003 * t1 + 0.004 * t2) / DT
    assert np.abs(out[at:at + 3] - want).max() <= 1e-15 * np.abs(want).max() * 10
    assert np.all(out[nv:nv + L.OUT_COLS] == 0.0)
    assert list(remembered) == [0, 0, 0, 0.02, -0.003, 0.004]


def test_carried_force_is_the_impulses_that_kept_their_sign_over_dt():
    """carried_force: J^T lam / dt over the contact rows whose point touched the step before
    (normal and tangents), the joint and drive rows whose impulse kept its sign; an impact (a
    point that did not touch before), a friction impulse that turned, an effort row and a
    loop closure's row add nothing."""
    nv, rows = 3, 9
    si, sf = np.zeros(L.SI_LEN, dtype=np.int64), np.zeros(L.SF_LEN)
    sf[L.DT] = DT
    rf, ri = np.zeros((L.ROW_FLOATS, rows)), np.zeros((L.ROW_INTS, rows), dtype=np.int64)
    J, nz = np.zeros((rows, nv)), np.zeros((rows, nv), dtype=np.int64)
    roles = [S.CONTACT] * 6 + [S.JOINT, S.JOINT, S.DRIVE]
    kinds = [L.SOFT, L.TANGENT, L.TANGENT] * 2 + [L.LIMIT, L.LIMIT, L.SOFT]
    rng = np.random.default_rng(3)
    for r in range(rows):
        ri[L.ROW_ROLE, r], ri[L.ROW_KIND, r] = roles[r], kinds[r]
        J[r] = rng.normal(size=nv)
        nz[r] = range(nv)
        ri[L.ROW_NNZ, r] = nv
    ri[L.ROW_POINT, :3], ri[L.ROW_POINT, 3:6] = 0, 1      # point 0 touched before, 1 did not
    ri[L.ROW_UNIT, 6:] = 0, 1, 2
    rf[L.ROW_LAM] = 0.5, 0.1, -0.2, 0.7, 0.3, 0.1, 0.04, -0.05, 0.9
    point_impulse = np.array([0.4, 0.0, 0.0, 0.0, 0.0, 0.0])
    joint_impulse = np.array([0.01, 0.02, 0.0])          # joint 1's friction turned
    drive_impulse = np.array([0.0, 0.0, 1.2])
    force = np.full(nv, np.nan)
    S.carried_force(si, sf, J, nz, rf, ri, rows, point_impulse, joint_impulse, drive_impulse,
                    force)
    kept = [0, 1, 2, 6, 8]
    want = J[kept].T @ rf[L.ROW_LAM, kept] / DT
    assert np.abs(force - want).max() <= 1e-12 * np.abs(want).max()
    ri[L.ROW_ROLE, 6:] = S.EFFORT, S.EQUALITY, S.SPRING
    S.carried_force(si, sf, J, nz, rf, ri, rows, point_impulse, joint_impulse, drive_impulse,
                    force)
    want = J[:3].T @ rf[L.ROW_LAM, :3] / DT
    assert np.abs(force - want).max() <= 1e-12 * np.abs(want).max()


def test_clamp_to_limits_ends_a_joint_that_crossed_its_limit_at_it():
    """clamp_to_limits: a joint that crossed a limit in the step (q* beyond it) and was stopped
    (v+ = 0) ends exactly at it, from beyond it or short of it; one that crossed and moves
    back ends no further out than the limit; a joint that did not cross keeps its q+. In a
    step (both integrators), a bar driven through its limit within one step stops at it."""
    model = chain([dict(lower=-1, upper=1)] * 5)
    sim = Simulator(model)
    q_free = np.array([1.01, -1.02, -1.001, 0.5, 1.01])
    v_new = np.array([0.0, 0.0, 0.4, 0.0, 0.0])
    # stopped beyond, stopped short of it (semi-implicit Euler's q+ = q), moving back from
    # beyond it, inside (the last two: q+ beyond a limit is not the clamp's business)
    q_new = np.array([1.002, -0.9995, -1.0005, 1.2, 1.0005])
    S.clamp_to_limits(sim._si, sim._sf, q_free, v_new, q_new)
    assert list(q_new) == [1.0, -1.0, -1.0, 1.2, 1.0]
    q_new = np.array([0.998, -1.0001, -0.998, 0.6, 1.0])
    S.clamp_to_limits(sim._si, sim._sf, q_free, v_new, q_new)
    assert list(q_new) == [1.0, -1.0, -0.998, 0.6, 1.0]
    for integrator in INTEGRATORS:
        bar = Simulator(one_joint(upper=0.5), q0=[0.4999], v0=[5.0],
                        options=SimOptions(integrator=integrator))
        assert bar.step(np.zeros(1))
        assert bar.q[0] == 0.5 and abs(bar.v[0]) <= 1e-10     # (v+: to the solver's tolerance)


@pytest.mark.parametrize('integrator', INTEGRATORS)
def test_the_step_ends_at_q_star_plus_theta_dt_times_the_rows_velocity_change(integrator):
    """integrate_public and clamp_to_limits in the step: q+ = q* (+) theta dt (v+ - v*)
    (rbd.integrate: rounding, 1e-15), on the floating legged robot with both points in the
    ground and its hip crossing its limit in the smooth step: the limit row stops it (v+ = 0)
    and it ends at its limit, not where the mean velocity would leave it. With semi-implicit
    Euler (theta = 1) this is q (+) v+ dt for the other joints to rounding; for the floating
    base the two exponentials on SE(3) differ at second order, by Baker-Campbell-Hausdorff's
    (dt^2 / 2) [v*, v+ - v*] (9e-8 here, the rest 4e-11: third order)."""
    theta = INTEGRATORS[integrator]
    sim = legged_sim(integrator)
    model = sim.model
    q, v = legged_state(sim, depth=(2e-3, 1e-3), seed=2, hip=0.3095)
    v[6] = 2.0
    sim.q, sim.v = q, v
    assert sim.advance()
    nq, nv = model.nq, model.nv
    q_free, v_free = work_vector(sim, L.W_Q_FREE, nq), work_vector(sim, L.W_V_FREE, nv)
    v_new, q_new = work_vector(sim, L.W_V_NEW, nv), work_vector(sim, L.W_Q_NEW, nq)
    assert np.abs(v_new - v_free).max() > 1e-3     # the rows acted
    assert q_free[7] > 0.31 and abs(v_new[6]) <= 1e-9           # the hip crossed, stopped
    want = rbd.integrate(model, q_free, v_new - v_free, theta * DT)
    out = np.zeros(nq)
    assert SM.integrate_public(sim.data.handle, sim._si, sim._sf, q_free, v_new - v_free,
                               theta * DT, out, sim._work) == 0
    assert np.abs(out - want).max() <= 1e-15
    others = np.r_[0:7, 8:nq]
    assert np.abs(q_new[others] - want[others]).max() <= 1e-15
    assert q_new[7] == 0.31 and want[7] != 0.31                 # clamped at the limit
    assert np.array_equal(sim.q, q_new)
    if integrator == 'semi_implicit_euler':
        direct = rbd.integrate(model, q, v_new, DT)
        assert abs(direct[8] - q_new[8]) <= 1e-15
        apart = rbd.difference(model, direct, q_new)[:6]           # q+ = direct (+) apart
        dv = v_new - v_free
        w, u, dw, du = v_free[3:6], v_free[:3], dv[3:6], dv[:3]
        bracket = np.r_[np.cross(w, du) - np.cross(dw, u), np.cross(w, dw)]
        assert np.abs(apart).max() > 1e-8
        assert np.abs(apart - 0.5 * DT * DT * bracket).max() <= 5e-10


def test_integrate_public_maps_a_mimic_models_public_coordinates():
    """integrate_public on a model with a mimic joint: rbd.integrate in public coordinates
    (the follower's velocity from its leader's), to rounding."""
    model = rbd.Model.from_urdf(random_urdf(21, n_links=6, mimic=True, joint_types=(
        'revolute', 'continuous', 'prismatic', 'fixed')), floating_base=True)
    assert model.has_mimic
    sim = Simulator(model, options=SimOptions(ground=False))
    rng = np.random.default_rng(9)
    q, v = model.random_configuration(4), rng.normal(size=model.nv)
    out = np.zeros(model.nq)
    assert SM.integrate_public(sim.data.handle, sim._si, sim._sf, q, v, 0.01, out,
                               sim._work) == 0
    assert np.abs(out - rbd.integrate(model, q, v, 0.01)).max() <= 1e-14
