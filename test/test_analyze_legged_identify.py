"""Identification on legged robots' logs: `python -m rbd_ros analyze --floating-base
--contact-topic ... --identify ...` on the runs of robots the simulator moves (ROS-free: the
Simulator stepped here, its states, applied efforts and contact wrenches written as sim_node
publishes them, into an MCAP bag), analysed with the URDF as published, which lacks what the
real robot has:

- Solo-12 carrying a 0.6 kg backpack off its base's centre, every joint with viscous and
  Coulomb friction (the simulator's: with stiction), squatting and swaying on its four feet.
  No joint carries the backpack: its weight is in the base's six rows, which the contact
  wrenches balance, so it is identified from them;
- the Unitree G1 (example-robot-data) standing on both feet, holding 1 kg in its left hand while
  its arms move, every joint with friction.
"""
import json
import math
import pathlib
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip('rosbags')

import rbd_ros.dynamics as rbd  # noqa: E402
from benchmarks.synthetic_logs import write_legged_log  # noqa: E402
from corpus import robots_directory  # noqa: E402
from rbd_ros.simulation import SimOptions, Simulator  # noqa: E402
from rbd_ros.simulation.outputs import link_wrenches  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOLO = ROOT / 'rbd_ros' / 'robots' / 'solo12.urdf'
pytestmark = pytest.mark.timeout(300)

#: config/solo12.yaml's standing pose and contact points
STAND = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])
FEET = tuple(f'{leg}_FOOT 0 0 0 0.0075' for leg in ('FL', 'FR', 'HL', 'HR'))
BACKPACK = dict(link='base_link', mass=0.6, com=np.array([0.05, 0.02, 0.04]),
                inertia=np.diag([0.00045, 0.00085, 0.001]))
SOLO_FRICTION = dict(viscous=0.01, coulomb=0.03)       # N m s/rad, N m: every joint
SECONDS = 8.0


def run(model, reference, kp, kd, seconds=SECONDS, contact_points=()):
    """Step ``model`` on the ground from its standing pose (feet touching) under drives that
    track reference(t) -> (q, v) of the joints, with its gravity torques as effort: the samples
    (t, q, v, applied effort, contact wrenches per link) sim_node would publish."""
    sim = Simulator(model, options=SimOptions(contact_points=contact_points))
    q = model.neutral()
    q[7:] = reference(0.0)[0]
    q[2] = -min(float(w[2]) for _, w in sim.point_locations(q))
    sim.q = q
    joints = np.r_[np.zeros(6), np.ones(model.nv - 6)]
    samples = []
    for k in range(int(round(seconds * 1000))):
        q_ref, v_ref = reference(k * 1e-3)
        g = rbd.gravity_torques(model, sim.q)
        g[:6] = 0.0
        sim.set_effort(g)
        sim.set_drives(kp=kp * joints, kd=kd * joints, q_ref=np.r_[np.zeros(6), q_ref],
                       v_ref=np.r_[np.zeros(6), v_ref])
        assert sim.advance(1), sim.status
        points, at, force = sim.contact_arrays()
        wrenches = link_wrenches([sim.points[i].link for i in points], at, force,
                                 rbd.frame_poses(model, sim.q))
        samples.append((sim.t, sim.q.copy(), sim.v.copy(), sim.applied.copy(), wrenches))
    return samples


def ramp(t):
    """A quintic from 0 to 1 over the first second (no step in acceleration), and its rate."""
    u = min(t, 1.0)
    return (10 * u**3 - 15 * u**4 + 6 * u**5,
            (30 * u**2 - 60 * u**3 + 30 * u**4) if t < 1.0 else 0.0)


def solo_reference(t):
    """Squat (hips and knees bent by up to 20% more, 0.5 Hz) and sway (hip abduction 0.1 rad,
    0.7 Hz), ramped in: test_analyze_legged's motion."""
    s, ds = ramp(t)
    squat, dsquat = 0.2 * math.sin(math.pi * t), 0.2 * math.pi * math.cos(math.pi * t)
    sway, dsway = 0.1 * math.sin(1.4 * math.pi * t), 0.14 * math.pi * math.cos(1.4 * math.pi * t)
    q, v = STAND.copy(), np.zeros(12)
    for hip in (0, 3, 6, 9):
        q[hip], v[hip] = q[hip] + s * sway, ds * sway + s * dsway
        knee = slice(hip + 1, hip + 3)
        q[knee] = STAND[knee] * (1.0 + s * squat)
        v[knee] = STAND[knee] * (ds * squat + s * dsquat)
    return q, v


def analyze(*args):
    done = subprocess.run([sys.executable, '-m', 'rbd_ros', 'analyze', *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope='module')
def solo_log(tmp_path_factory):
    nominal = rbd.Model.from_urdf(str(SOLO), floating_base=True)
    names = [j.name for j in nominal.joints if j.type != 'floating' and j.nv]
    truth = nominal.with_payload(BACKPACK['link'], BACKPACK['mass'], BACKPACK['com'],
                                 BACKPACK['inertia']).with_joint_dynamics(
        damping=dict.fromkeys(names, SOLO_FRICTION['viscous']),
        friction=dict.fromkeys(names, SOLO_FRICTION['coulomb']))
    samples = run(truth, solo_reference, kp=5.0, kd=0.1, contact_points=FEET)
    assert len(samples[-1][4]) == 4                       # on its four feet to the end
    return write_legged_log(tmp_path_factory.mktemp('solo') / 'solo_backpack', names, samples)


def solo_report(log, tmp_path, *extra):
    report = tmp_path / 'report.json'
    done = analyze(log, '--urdf', SOLO, '--floating-base', '--identify', 'friction',
                   '--identify', 'payload:base_link', '--json', report, *extra)
    return json.loads(report.read_text()), done.stdout


def test_solo12_backpack_and_joint_friction_from_the_base_rows_and_the_joints(solo_log,
                                                                             tmp_path):
    data, out = solo_report(solo_log, tmp_path, '--contact-topic', '/rbd_sim/contact_wrenches')
    print(out)
    for name, joint in data['joints'].items():
        f = joint['friction']
        assert f['coulomb'] == pytest.approx(SOLO_FRICTION['coulomb'], rel=0.01), (name, f)
        assert f['viscous'] == pytest.approx(SOLO_FRICTION['viscous'], rel=0.02), (name, f)
        assert joint['slow_samples'] > 0, (name, joint)  # the reversals' stiction, left out
    p = data['payload']
    assert p['link'] == 'base_link' and p['identified'] != 'nothing', p
    assert p['mass'] == pytest.approx(BACKPACK['mass'], rel=1e-3), p
    assert np.allclose(p['com'], BACKPACK['com'], atol=4e-3), p


def test_stiction_biases_the_coulomb_friction_without_the_band(solo_log, tmp_path):
    """--friction-band 0 keeps the samples where a joint stuck at a reversal (3% of them):
    the Coulomb friction then comes out tens of percent off, which is why the band exists."""
    data, _ = solo_report(solo_log, tmp_path, '--contact-topic', '/rbd_sim/contact_wrenches',
                          '--friction-band', '0')
    errors = [abs(j['friction']['coulomb'] / SOLO_FRICTION['coulomb'] - 1.0)
              for j in data['joints'].values()]
    assert max(errors) > 0.1, errors
    assert all(j['slow_samples'] == 0 for j in data['joints'].values())


def test_without_contact_wrenches_the_backpack_is_not_weighed_and_the_report_says_why(
        solo_log, tmp_path):
    data, out = solo_report(solo_log, tmp_path)
    p = data['payload']
    assert p['identified'] == 'nothing' and '--contact-topic' in p['reason'], p
    assert 'the identification fits the joints alone' in out, out


def test_g1_humanoid_weighs_what_its_hand_holds(tmp_path):
    root = robots_directory()
    if root is None:
        pytest.skip('example-robot-data is not installed')
    urdf = root + '/g1_description/urdf/g1_29dof_rev_1_0.urdf'
    nominal = rbd.Model.from_urdf(urdf, floating_base=True)
    names = [j.name for j in nominal.joints if j.type != 'floating' and j.nv]
    held = dict(mass=1.0, com=np.array([0.08, 0.0, -0.02]))
    truth = nominal.with_payload('left_rubber_hand', held['mass'], held['com'],
                                 np.diag([0.001, 0.002, 0.0015])).with_joint_dynamics(
        damping=dict.fromkeys(names, 0.05), friction=dict.fromkeys(names, 0.2))
    arm = np.array([nominal.joint[n].v_index - 6 for n in names
                    if any(part in n for part in ('shoulder', 'elbow', 'wrist'))])
    rng = np.random.default_rng(1)
    amplitude, w, phase = (rng.uniform(0.15, 0.3, arm.size),
                           2 * np.pi * rng.uniform(0.3, 0.8, arm.size),
                           rng.uniform(0, 2 * np.pi, arm.size))
    pose = nominal.neutral()[7:]

    def reference(t):
        """The arms' joints: sines about the neutral pose (ramped in); legs and waist still."""
        s, ds = ramp(t)
        x = amplitude * (np.sin(w * t + phase) - np.sin(phase))
        q, v = pose.copy(), np.zeros(pose.size)
        q[arm] += s * x
        v[arm] = s * amplitude * w * np.cos(w * t + phase) + ds * x
        return q, v

    # stiff joints: a 35 kg robot on its feet (test_simulation_step's standing G1)
    samples = run(truth, reference, kp=1000.0, kd=10.0)
    feet = {link for link, _ in samples[-1][4]}
    assert feet == {'left_ankle_roll_link', 'right_ankle_roll_link'}, feet     # still standing
    log = write_legged_log(tmp_path / 'g1_holding', names, samples)
    report = tmp_path / 'report.json'
    out = analyze(log, '--urdf', urdf, '--floating-base', '--contact-topic',
                  '/rbd_sim/contact_wrenches', '--identify', 'friction', '--identify',
                  'payload:left_rubber_hand', '--json', report).stdout
    print(out)
    data = json.loads(report.read_text())
    p = data['payload']
    assert p['mass'] == pytest.approx(held['mass'], rel=0.01), p
    assert np.allclose(p['com'], held['com'], atol=3e-3), p
    for name, joint in data['joints'].items():
        f = joint['friction']
        if nominal.joint[name].v_index - 6 in arm:
            assert f['coulomb'] == pytest.approx(0.2, rel=0.03), (name, f)
            assert f['viscous'] == pytest.approx(0.05, rel=0.2), (name, f)
        else:         # held still by its drive: nothing to fit, and the report says so
            assert f['coulomb'] is None and 'did not move' in f['reason'], (name, f)
