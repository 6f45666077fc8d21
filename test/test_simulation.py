"""The simulator core (rbd_ros.simulation): energy per integrator, friction that holds and lets
go, damping at the analytic rate, saturation, limits that never add energy and leave other
joints alone, external wrenches equal to forward dynamics with f_ext."""
import math
import os

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from corpus import robots_directory
from rbd_ros.simulation import SimOptions, Simulator

OFF = dict(damping=False, friction=False, effort_limits=False, velocity_limits=False,
           position_limits='off')


def one_joint(friction=0.0, damping=0.0, lower=-10.0, upper=10.0, effort=100.0, velocity=100.0,
              axis='0 0 1'):
    """A bar on a vertical axis (gravity does no work): I = 0.5 kg m^2 about the axis."""
    return rbd.Model.from_urdf(f'''<robot name="one"><link name="base"/>
      <link name="bar"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.25" iyz="0" izz="0.25"/></inertial></link>
      <joint name="j" type="revolute"><parent link="base"/><child link="bar"/><axis xyz="{axis}"/>
        <limit lower="{lower}" upper="{upper}" effort="{effort}" velocity="{velocity}"/>
        <dynamics damping="{damping}" friction="{friction}"/></joint></robot>''')


def double_pendulum():
    root = robots_directory()
    if root is None:
        pytest.skip('example-robot-data is not installed')
    return rbd.Model.from_urdf(root + '/double_pendulum_description/urdf/'
                               'double_pendulum_continuous.urdf')


def swing(model, q0):
    """Energy above the hanging rest state (the lowest potential energy on a grid)."""
    grid = np.stack(np.meshgrid(*[np.linspace(-np.pi, np.pi, 73)] * model.nq), -1)
    low = rbd.potential_energy(model, grid.reshape(-1, model.nq)).min()
    return rbd.potential_energy(model, q0) - low


@pytest.mark.parametrize('integrator, bound', [('rk4', 1e-5), ('semi_implicit_euler', None)])
def test_energy_drift_per_integrator(integrator, bound):
    """RK4, the default, keeps a conservative double pendulum's energy within 1e-5 of its swing
    over 10 s at 1 kHz (measured: 1e-6; RK4's energy error is O(dt^4), so the bound is a 10x
    margin over the measurement for other platforms' rounding, not a slack on the method);
    semi-implicit Euler does not (measured: 39%)."""
    model = double_pendulum()
    sim = Simulator(model, q0=[1.0, 0.5], options=SimOptions(integrator=integrator, **OFF))
    e0, scale = sim.energy(), swing(model, np.array([1.0, 0.5]))
    worst = 0.0
    for _ in range(10_000):
        assert sim.step(np.zeros(2))
        worst = max(worst, abs(sim.energy() - e0))
    if bound is not None:
        assert worst / scale < bound
    else:
        assert worst / scale > 0.1           # documented in docs/ros.md: 39%


def test_friction_holds_below_its_level_and_lets_go_above():
    model = one_joint(friction=1.0)
    sim = Simulator(model, options=SimOptions())
    for _ in range(1000):
        assert sim.step(np.array([0.9]))
    assert abs(sim.q[0]) < 1e-12 and abs(sim.v[0]) < 1e-12    # held by stiction
    for _ in range(500):
        assert sim.step(np.array([1.1]))
    # (tau - F) t / I: the sliding friction impulse is F dt in every step, from the first (the
    # step that lets go), so the speed is exact up to 500 steps of rounding (measured 6e-14)
    assert sim.v[0] == pytest.approx(0.5 * (1.1 - 1.0) / 0.5, rel=1e-12)
    for _ in range(2000):                               # the torque gone: friction stops it
        assert sim.step(np.array([0.0]))
    assert abs(sim.v[0]) < 1e-15        # (the held row's multiplier leaves ~1e-170: stopped)


@pytest.mark.parametrize('damping', [0.1, 1.0, 5.0])
def test_damping_decays_at_the_analytic_rate(damping):
    model = one_joint(damping=damping)
    sim = Simulator(model, v0=[2.0], options=SimOptions())
    for _ in range(1000):
        assert sim.step(np.array([0.0]))
    rate = -math.log(sim.v[0] / 2.0) / 1.0
    # the continuous rate d / I, to the implicit step's O(dt d / I) (5e-3 relative at d = 5) ...
    assert rate == pytest.approx(damping / 0.5, rel=1e-2)
    # ... and exactly the implicit step v+ = I v / (I + dt d) (no other force acts on this
    # joint: RK4's free step leaves v as it is), to 1000 steps of rounding (measured 1.2e-13)
    assert sim.v[0] == pytest.approx(2.0 * (0.5 / (0.5 + 1e-3 * damping)) ** 1000, rel=1e-11)


def test_a_huge_damping_is_stable():
    sim = Simulator(one_joint(damping=1e6), v0=[2.0], options=SimOptions())
    for _ in range(100):
        assert sim.step(np.array([0.0]))
    assert 0.0 <= sim.v[0] < 1e-3


def test_commands_saturate_at_the_effort_limit():
    model = one_joint(effort=2.0)
    sim = Simulator(model, options=SimOptions())
    for _ in range(100):
        assert sim.step(np.array([5.0]))
    assert sim.applied[0] == 2.0
    # RK4 integrates a constant acceleration exactly: rounding only (measured 7e-15)
    assert sim.v[0] == pytest.approx(0.1 * 2.0 / 0.5, rel=1e-12)
    assert sim.step(np.array([-5.0])) and sim.applied[0] == -2.0
    free = Simulator(model, options=SimOptions(effort_limits=False))
    assert free.step(np.array([5.0])) and free.applied[0] == 5.0


def test_a_drive_holds_its_joint_at_the_velocity_limit():
    model = one_joint(velocity=1.5)
    sim = Simulator(model, options=SimOptions())
    speeds = []
    for _ in range(2000):
        assert sim.step(np.array([50.0]))
        speeds.append(sim.v[0])
    assert max(speeds) <= 1.5 + 1e-9 and speeds[-1] == pytest.approx(1.5, rel=1e-6)
    assert sim.q[0] == pytest.approx(1.5 * 2.0, abs=0.02)     # advances at that speed


TWO_PENDULUMS = '''<robot name="two"><link name="base"/>
  <link name="a"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.001"/></inertial></link>
  <link name="b"><inertial><origin xyz="0 0 -0.4"/><mass value="2"/>
    <inertia ixx="0.03" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.002"/></inertial></link>
  <joint name="ja" type="revolute"><parent link="base"/><child link="a"/><axis xyz="1 0 0"/>
    <origin xyz="0 0.5 0"/><limit lower="-0.3" upper="0.3" effort="10" velocity="100"/></joint>
  <joint name="jb" type="revolute"><parent link="base"/><child link="b"/><axis xyz="1 0 0"/>
    <origin xyz="0 -0.5 0"/><limit lower="-3" upper="3" effort="10" velocity="100"/></joint>
</robot>'''


@pytest.mark.parametrize('mode', ['constraint', 'spring'])
def test_a_pendulum_swung_into_a_limit_never_gains_energy_and_leaves_others_alone(mode):
    model = rbd.Model.from_urdf(TWO_PENDULUMS)
    q0 = [0.29, -1.0]                     # a at its limit's edge, swinging into it
    opts = dict(damping=False, friction=False, effort_limits=False, velocity_limits=False)
    limited = Simulator(model, q0=q0, v0=[3.0, 0.5], options=SimOptions(position_limits=mode, **opts))
    free = Simulator(model, q0=q0, v0=[3.0, 0.5], options=SimOptions(position_limits='off', **opts))
    k = limited.options.limit_stiffness

    def total():      # (in spring mode the spring's own energy counts too)
        beyond = max(abs(limited.q[0]) - 0.3, 0.0) if mode == 'spring' else 0.0
        return limited.energy() + 0.5 * k * beyond ** 2
    energy = [total()]
    hits = 0
    for _ in range(3000):
        assert limited.step(np.zeros(2)) and free.step(np.zeros(2))
        energy.append(total())
        hits += abs(limited.q[0]) > 0.299
        if mode == 'constraint':
            assert -0.3 - 1e-9 <= limited.q[0] <= 0.3 + 1e-9
        # the other pendulum is exactly where it would be without the limit
        assert abs(limited.q[1] - free.q[1]) < 1e-12 and abs(limited.v[1] - free.v[1]) < 1e-12
    assert hits > 0
    rises = np.diff(energy)
    scale = abs(energy[0]) + 1.0
    assert rises.max() <= 1e-9 * scale                  # never gains energy (round-off)
    assert energy[-1] < energy[0]                       # the impacts took some


def test_external_wrench_response_equals_forward_dynamics_with_f_ext():
    model = rbd.Model.from_urdf(TWO_PENDULUMS)       # (gravity acts: the axes are horizontal)
    q, v = np.array([0.1, -0.4]), np.array([0.3, 0.2])
    f_ext = {'a': [0.0, 1.0, -2.0, 0.3, 0.0, 0.1]}
    sim = Simulator(model, q0=q, v0=v, options=SimOptions(integrator='semi_implicit_euler', **OFF))
    assert sim.step(np.zeros(2), f_ext)
    expected = rbd.forward_dynamics(model, q, v, np.zeros(2), f_ext)
    assert np.allclose((sim.v - v) / sim.options.dt, expected, rtol=1e-12, atol=1e-12)
    # RK4's step is the classical RK4 of forward_dynamics with the same f_ext (a wrench in the
    # link frame: it turns with the link between the stages), written out here: equal to
    # rounding (measured: identical). (Its mean acceleration differs from FD at the start by
    # about dt/2 times the jerk, 3e-4 relative here, which is what an rtol of 1e-2 allowed.)
    rk4 = Simulator(model, q0=q, v0=v, options=SimOptions(**OFF))
    assert rk4.step(np.zeros(2), f_ext)
    dt = rk4.options.dt

    def fd(q_, v_):
        return rbd.forward_dynamics(model, q_, v_, np.zeros(2), f_ext)
    a1 = fd(q, v)
    a2 = fd(q + dt / 2 * v, v + dt / 2 * a1)
    a3 = fd(q + dt / 2 * (v + dt / 2 * a1), v + dt / 2 * a2)
    a4 = fd(q + dt * (v + dt / 2 * a2), v + dt * a3)
    assert np.allclose(rk4.v, v + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4), rtol=0, atol=1e-12)
    v_mean = (v + 2 * (v + dt / 2 * a1) + 2 * (v + dt / 2 * a2) + (v + dt * a3)) / 6
    assert np.allclose(rk4.q, q + dt * v_mean, rtol=0, atol=1e-12)


def test_a_diverging_state_is_reported_not_kept():
    model = one_joint(effort=1e12, velocity=1e12)
    sim = Simulator(model, options=SimOptions(divergence_bound=1e4))
    assert not sim.step(np.array([1e9]))
    assert sim.q[0] == 0.0 and sim.v[0] == 0.0 and sim.t == 0.0


def _row_conditions_hold(G, v0, lo, hi, fi, lam, tol):
    """Each row of a solved joint-row problem: v = v0 + G lam within [lo, hi]; inside them the
    impulse is friction alone (|lam| <= fi, opposing the motion, at fi when sliding); at a
    bound, the limit adds an impulse that only pushes back into [lo, hi]."""
    v = v0 + G @ lam
    for i in range(len(v)):
        def friction_at(speed):    # the friction impulse when the row moves at ``speed``
            return -math.copysign(fi[i], speed) if speed != 0.0 else None
        assert lo[i] - tol <= v[i] <= hi[i] + tol, (i, v[i], lo[i], hi[i])
        if v[i] <= lo[i] + tol:                     # at the lower bound: pushed up
            f = friction_at(lo[i])
            assert lam[i] >= (-fi[i] if f is None else f) - tol, (i, lam[i])
        elif v[i] >= hi[i] - tol:                   # at the upper bound: pushed down
            f = friction_at(hi[i])
            assert lam[i] <= (fi[i] if f is None else f) + tol, (i, lam[i])
        elif abs(v[i]) > tol:                       # sliding: friction at its level
            assert abs(lam[i] - friction_at(v[i])) <= tol, (i, lam[i], v[i], fi[i])
        else:                                       # held: within the friction level
            assert abs(lam[i]) <= fi[i] + tol, (i, lam[i], fi[i])


def _random_spd(rng, n, spread=False):
    A = rng.normal(size=(n, n))
    W = A @ A.T + rng.uniform(0.01, 10) * np.eye(n)
    if spread:
        W[np.diag_indices(n)] *= np.logspace(0, 4, n)
    return np.linalg.inv(W)


def solve_rows(G, v0, kind, lo, hi, fric, a=None, b=None, partner=None, iterations=50,
               compliance=None, tolerance=1e-13, mult=None):
    """The solver (simulation/solver.py) on a problem given in row space: impulses lam on n
    rows change their velocities by G lam from v0. That is the step's problem with W = G^-1,
    M v* = W v0 and J = I (v is then the rows' velocities). ``mult``: the LIMIT rows'
    multipliers from a step before (the solver's warm start and prediction). Returns (lam, v,
    Newton iterations taken: iterations + 1 when it ran out)."""
    from rbd_ros.simulation import layout as L
    from rbd_ros.simulation.solver import LIMIT_REGULARISATION, solve_rows as solve
    n = len(v0)
    W = np.linalg.inv(G)
    W = np.ascontiguousarray(0.5 * (W + W.T))
    kind = np.asarray(kind, dtype=np.int64)
    rf, ri = np.zeros((L.ROW_FLOATS, n)), np.zeros((L.ROW_INTS, n), dtype=np.int64)
    rf[L.ROW_LO], rf[L.ROW_HI], rf[L.ROW_FRIC] = lo, hi, fric
    rf[L.ROW_A] = 0.0 if a is None else a
    rf[L.ROW_B] = 0.0 if b is None else b
    ri[L.ROW_KIND] = kind
    ri[L.ROW_PARTNER] = -1 if partner is None else partner
    ri[L.ROW_PIECE] = -1
    ri[L.ROW_NNZ] = 1
    if mult is not None:
        rf[L.ROW_MULT] = mult
    r = 0
    while r < n:
        if kind[r] == L.LIMIT:
            rf[L.ROW_R, r] = LIMIT_REGULARISATION / W[r, r]
        elif kind[r] == L.TANGENT:       # a pair: its compliance and radius on its first row
            p = partner[r]
            rf[L.ROW_R, r] = compliance[r]
            rf[L.ROW_RADIUS, r] = fric[r] * max(b[p] - a[p] * v0[p], 0.0)
            r += 1
        r += 1
    J = np.eye(n)
    nz = np.tile(np.arange(n, dtype=np.int64), (n, 1))
    for k in range(n):
        nz[k, 0] = k
    for k in range(n - 1):          # (a tangent pair's rows share their columns, as at a point)
        if kind[k] == L.TANGENT and kind[k + 1] == L.TANGENT and partner[k] == partner[k + 1]:
            nz[k, :2] = nz[k + 1, :2] = k, k + 1
            ri[L.ROW_NNZ, k] = ri[L.ROW_NNZ, k + 1] = 2
    v = v0.copy()
    taken = solve(W, W @ v0, np.arange(-1, n - 1), J, nz, rf, ri, n, v, np.zeros((n, n)),
                  np.zeros(n), np.zeros(n), iterations,
                  tolerance * (1 + np.abs(v0).max()))
    return rf[L.ROW_LAM].copy(), v, taken


def test_the_joint_row_solver_meets_every_rows_conditions():
    """The Newton solver (simulation/solver.py) on random joint-row problems, up to 11 rows,
    one in three ill-conditioned (diagonal spread 1e4): every row ends within its bounds, with
    friction opposing motion at its level, stiction within it, and limit impulses that only
    push back; velocities and impulses agree (v = v0 + G lam), converged."""
    from rbd_ros.simulation.layout import LIMIT
    rng = np.random.default_rng(0)
    worst = 0
    for trial in range(600):
        n = int(rng.integers(1, 12))
        G = _random_spd(rng, n, trial % 3 == 0)
        v0 = rng.normal(size=n) * rng.uniform(0.01, 10)
        lo = np.where(rng.random(n) < 0.5, -np.inf, -rng.uniform(0, 2, n))
        hi = np.where(rng.random(n) < 0.5, np.inf, rng.uniform(0, 2, n))
        fi = np.where(rng.random(n) < 0.3, 0.0, rng.uniform(0, 3, n))
        lam, v, taken = solve_rows(G, v0, [LIMIT] * n, lo, hi, fi)
        assert taken <= 50, trial
        worst = max(worst, taken)
        scale = 1e-9 * (1 + np.max(np.abs(v0)) + np.max(np.abs(lam)))
        assert np.abs(v - (v0 + G @ lam)).max() <= scale, trial
        _row_conditions_hold(G, v0, lo, hi, fi, lam, scale)
    assert worst <= 30, worst          # (from a cold start at 1e-13)


def test_soft_and_friction_cone_rows_meet_their_conditions():
    """Random problems of soft rows (a spring-damper's impulse b - a v, within [lo, hi]: a
    drive, a contact's normal) and contacts (a normal row and a tangent pair in the cone
    |lam_t| <= mu lam_n, Coulomb's exact cone through the solver's outer rounds): a soft row's
    impulse is b - a v unless that leaves its bounds, then the bound; a contact's friction is
    the disk's law at the normal's impulse: against its slip, -u / c at small slip (stiction,
    the stick compliance c), on the rim once it slides."""
    from rbd_ros.simulation.layout import SOFT, TANGENT
    from rbd_ros.simulation.solver import STICK_COMPLIANCE
    rng = np.random.default_rng(3)
    worst = 0
    for trial in range(400):
        contacts = int(rng.integers(1, 4))
        drives = int(rng.integers(0, 3))
        n = 3 * contacts + drives
        G = _random_spd(rng, n, trial % 4 == 0)
        v0 = rng.normal(size=n)
        kind = np.zeros(n, dtype=np.int64)
        lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
        fric, a, b = np.zeros(n), np.zeros(n), np.zeros(n)
        partner = np.full(n, -1, dtype=np.int64)
        compliance = np.zeros(n)
        for c in range(contacts):
            r = 3 * c
            kind[r], lo[r], a[r], b[r] = SOFT, 0.0, rng.uniform(0.1, 10), rng.uniform(-1, 2)
            kind[r + 1:r + 3], fric[r + 1:r + 3], partner[r + 1:r + 3] = TANGENT, \
                rng.uniform(0.2, 1.5), r
            compliance[r + 1:r + 3] = STICK_COMPLIANCE * np.mean(np.diag(G)[r + 1:r + 3])
        for d in range(3 * contacts, n):
            kind[d], a[d], b[d] = SOFT, rng.uniform(0.01, 5), rng.normal()
            lo[d], hi[d] = -rng.uniform(0, 2), rng.uniform(0, 2)
        lam, v, taken = solve_rows(G, v0, kind, lo, hi, fric, a, b, partner,
                                   compliance=compliance, iterations=200, tolerance=1e-12)
        assert taken <= 200, trial
        worst = max(worst, taken)
        tol = 1e-7 * (1 + np.abs(lam).max() + np.abs(v0).max())
        assert np.abs(v - (v0 + G @ lam)).max() <= tol, trial
        for i in range(n):
            if kind[i] == SOFT:
                want = b[i] - a[i] * v[i]
                assert lo[i] - tol <= lam[i] <= hi[i] + tol, (trial, i)
                if lo[i] + tol < lam[i] < hi[i] - tol:
                    assert abs(lam[i] - want) < tol * (1 + a[i]), (trial, i, lam[i], want)
                else:       # at a bound: the spring would have pushed past it
                    at_lo = abs(lam[i] - lo[i]) <= tol
                    assert (want <= lam[i] + tol) if at_lo else (want >= lam[i] - tol), (trial, i)
        for c in range(contacts):
            r = 3 * c
            lam_t, v_t = lam[r + 1:r + 3], v[r + 1:r + 3]
            radius = fric[r + 1] * lam[r]           # the cone at the normal's impulse
            assert np.linalg.norm(lam_t) <= radius + tol, trial
            # against the slip, rho |u| / sqrt(|u|^2 + (c rho)^2) of the cone: -u / c at
            # small slip (stiction), the rim once it slides
            e = compliance[r + 1] * radius
            want = -radius * v_t / np.sqrt(v_t @ v_t + e * e) if radius > 0 else np.zeros(2)
            assert np.abs(lam_t - want).max() <= tol * (1 + fric[r + 1]), (trial, lam_t, want)
    assert worst <= 80, worst          # (measured 48, from a cold start at 1e-12)


def test_an_arm_held_by_stiction_is_solved_in_one_iteration():
    """The bundled arm at rest under gravity, held by its joints' friction (a light wrist
    under a heavy shoulder: plain Gauss-Seidel needs over 100 sweeps): each step's solve takes
    one Newton iteration from its warm start, and every joint is held still. Counted, not
    timed: sim_node once took 80 ms per 10 ms period here."""
    arm = os.path.join(os.path.dirname(__file__), '..', 'rbd_ros', 'robots', 'rbd_arm7.urdf')
    model = rbd.Model.from_urdf(arm)
    sim = Simulator(model)
    for _ in range(50):
        assert sim.step(np.zeros(model.nv))
    stats = sim.solver_stats
    assert stats['unconverged_solves'] == 0, stats
    assert stats['iterations'] <= 60, stats          # (about one per step; measured 57)
    assert np.abs(sim.v).max() < 1e-12                     # held: every joint stopped


def test_a_row_held_last_step_is_predicted_held_only_at_a_bound_in_reach():
    """The first Newton step holds a row that was held last step (its multiplier says at
    which bound, row_slope) where it was held, not where the start has it. A bound the step
    left out (infinite: far from v*) is no place to hold it: no prediction (its model was -inf
    in the step's right-hand side, caught only by the climbing step's fallback)."""
    from rbd_ros.simulation import layout as L
    from rbd_ros.simulation.solver import AT_LO, row_slope
    predict = getattr(row_slope, 'py_func', row_slope)
    rf, ri = np.zeros((L.ROW_FLOATS, 1)), np.zeros((L.ROW_INTS, 1), dtype=np.int64)
    ri[L.ROW_KIND, 0], ri[L.ROW_PIECE, 0] = L.LIMIT, -1
    rf[L.ROW_R, 0], rf[L.ROW_MULT, 0], rf[L.ROW_U, 0] = 1e-6, 0.4, 0.3     # (free at the start)
    rf[L.ROW_LO, 0], rf[L.ROW_HI, 0] = 0.25, 5.0
    assert predict(rf, ri, 0, True) == 1e6 and ri[L.ROW_PIECE, 0] == AT_LO
    # held at 0.25 with last step's impulse: lam = mult + (lo - u) / r, less the law's (0)
    assert rf[L.ROW_MODEL, 0] == pytest.approx(0.4 + (0.25 - 0.3) / 1e-6)
    rf[L.ROW_LO, 0], rf[L.ROW_MODEL, 0], ri[L.ROW_PIECE, 0] = -np.inf, 0.0, -1
    assert predict(rf, ri, 0, True) == 0.0 and ri[L.ROW_PIECE, 0] == -1
    assert rf[L.ROW_MODEL, 0] == 0.0


def test_the_solver_says_when_it_runs_out_of_iterations():
    """A problem that needs more Newton iterations than allowed returns iterations + 1 (the
    step counts it in ``solver_stats['unconverged_solves']``, and sim_node in /diagnostics);
    its impulses still keep each row's law (friction within its level, here)."""
    from rbd_ros.simulation.layout import LIMIT
    rng = np.random.default_rng(5)
    results = []
    for _ in range(50):
        G = _random_spd(rng, 10, spread=True)
        v0 = rng.normal(size=10)
        lo, hi = -np.full(10, np.inf), np.full(10, np.inf)
        fi = rng.uniform(0, 0.5, 10)
        short = solve_rows(G, v0, [LIMIT] * 10, lo, hi, fi, iterations=1)
        full = solve_rows(G, v0, [LIMIT] * 10, lo, hi, fi, iterations=50)
        results.append((short[2], full[2]))
        assert np.all(np.abs(short[0]) <= fi * (1 + 1e-12) + 1e-15)
    assert any(short == 2 for short, _ in results)      # some ran out after one ...
    assert all(full <= 50 for _, full in results)       # ... and none with enough of them
