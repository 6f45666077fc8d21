"""The simulator's step against MuJoCo's, side by side in one process.

    .venv/bin/python -m benchmarks sim [--smoke]        (or python -m benchmarks.sim_bench)

The same URDF (visuals and meshes stripped for MuJoCo's importer), the same dt (1 ms), the
closest integrator (our RK4 against MuJoCo's RK4; our semi-implicit Euler against MuJoCo's
Euler), the same joint effects (the URDF's damping, friction and limits, which MuJoCo's
importer takes as damping, frictionloss and range) and the same contact shapes, MuJoCo's own
contact model and solver at their defaults (Newton, tolerance 1e-8; soft contacts), no
self-collision on either side (we have none):

- the bundled arm and UR5: no contact, each holding the gravity torque of a random pose;
- Solo-12 standing: four 7.5 mm foot spheres, position drives (kp 5, kd 0.1) around gravity
  compensation;
- A1 lying on its side: its URDF's collision boxes, cylinders and spheres on both sides (148
  candidate points here; MuJoCo's box, cylinder and sphere geoms), dropped limp from 25 cm and
  settled for 2 s before timing;
- G1 lying on its back: its collision meshes give no contact, so spheres at its limbs (pelvis,
  torso, head, shoulders, elbows, hands, knees) plus the URDF's foot spheres, on both sides;
  dropped limp from 20 cm, settled 2 s.
- G1 falling: the same shapes, limp, from standing on its feet pitched 0.1 rad forward (put
  down on the ground: Simulator.placed_on_ground, MuJoCo from the same q), the first 1.5 s
  (it topples, hits the ground and bounces) timed once from the start on each side: a
  transient, so no best of several runs and no one-call column.

Times are this process's CPU time per step (both simulators run in it, one thread).
"one call" times a step per Python call (what sim_node does at 1 kHz: Simulator.advance(1),
mujoco.mj_step(m, d)); "batch" times 1,000 steps in one call (advance(1000), mj_step(m, d,
nstep=1000)); the ratio is ours over MuJoCo's, batch. Contacts: points touching the ground
after settling (ours: Simulator.contacts(); MuJoCo: d.ncon). Our solver's Newton iterations
per step over the timed steps, and solves that ran out of iterations, are printed too.

MuJoCo (PyPI ``mujoco``) is a benchmark-only dependency: without it only our columns print.
"""
from __future__ import annotations

import argparse
import atexit
import math
import os
import sys
import time
import xml.etree.ElementTree as ET

import numpy as np

import rbd_ros.dynamics as rbd
from rbd_ros.simulation import SimOptions, Simulator

HERE = os.path.dirname(os.path.abspath(__file__))
ARM = os.path.join(HERE, '..', 'rbd_ros', 'robots', 'rbd_arm7.urdf')
SOLO = os.path.join(HERE, '..', 'rbd_ros', 'robots', 'solo12.urdf')
STAND = [0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6]
FOOT_RADIUS = 0.0075
DT = 1e-3
SETTLE = 2000                   # steps of settling before a lying robot is timed
FALL_STEPS = 1500               # the G1's fall: toppling, the impact, the first bounces
JOINT_FRICTION = 1.0            # N m, the falling G1's second case (a Talos's is 1 N m)
#: G1's limb spheres (link, x, y, z, radius in the link frame): where it lies on the ground
G1_LIMBS = (('pelvis', 0, 0, 0, 0.08), ('torso_link', 0, 0, 0.15, 0.1),
            ('head_link', 0, 0, 0.4, 0.08),
            ('left_shoulder_roll_link', 0, 0, 0, 0.05), ('right_shoulder_roll_link', 0, 0, 0, 0.05),
            ('left_elbow_link', 0, 0, 0, 0.04), ('right_elbow_link', 0, 0, 0, 0.04),
            ('left_rubber_hand', 0, 0, 0, 0.04), ('right_rubber_hand', 0, 0, 0, 0.04),
            ('left_knee_link', 0, 0, 0, 0.05), ('right_knee_link', 0, 0, 0, 0.05))


def robot_path(*parts):
    """A URDF of example-robot-data (PyPI), or None."""
    for base in sys.path:
        path = os.path.join(base, 'cmeel.prefix', 'share', 'example-robot-data', 'robots',
                            *parts)
        if os.path.exists(path):
            return path
    return None


def with_joint_friction(path, friction):
    """A copy of the URDF at ``path`` (in TMPDIR) whose every moving joint has Coulomb friction
    ``friction`` (N m: <dynamics friction>, which MuJoCo's importer takes as frictionloss)."""
    tree = ET.parse(path)
    for joint in tree.getroot().iter('joint'):
        if joint.get('type') == 'fixed':
            continue
        dynamics = joint.find('dynamics')
        if dynamics is None:
            dynamics = ET.SubElement(joint, 'dynamics')
        dynamics.set('friction', str(friction))
    out = os.path.join(os.environ.get('TMPDIR', '/tmp'),
                       f'rbd_ros_bench_{os.getpid()}_friction.urdf')
    tree.write(out)
    atexit.register(os.remove, out)
    return out


def ur5_path():
    return robot_path('ur_description', 'urdf', 'ur5_robot.urdf')


def strip_for_mujoco(text: str, collisions: bool = False) -> str:
    """The URDF without <visual> (and <collision> unless ``collisions``: then only meshes go),
    <transmission>/<gazebo>, with MuJoCo's compiler options: every link kept as a body."""
    root = ET.fromstring(text)
    for link in root.iter('link'):
        for child in list(link):
            if child.tag == 'visual':
                link.remove(child)
            elif child.tag == 'collision':
                geometry = child.find('geometry')
                if not collisions or geometry is None or geometry.find('mesh') is not None:
                    link.remove(child)
    for child in list(root):
        if child.tag in ('transmission', 'gazebo'):
            root.remove(child)
    mujoco_tag = ET.SubElement(root, 'mujoco')
    ET.SubElement(mujoco_tag, 'compiler', discardvisual='true', fusestatic='false',
                  balanceinertia='false')
    return ET.tostring(root, encoding='unicode')


def mujoco_model(path, integrator, case):
    """A MuJoCo model of the URDF: dt 1 ms, ``integrator`` ('RK4' or 'Euler'); with a
    floating ``case`` (solo, a1, g1): a free base on a ground plane, the case's contact
    geoms, robot geoms touching only the plane."""
    import mujoco
    m = mujoco.MjModel.from_xml_string(strip_for_mujoco(open(path).read(),
                                                        collisions=case == 'a1'
                                                        or case == 'g1'))
    out = os.path.join(os.environ.get('TMPDIR', '/tmp'), f'rbd_ros_bench_{os.getpid()}.xml')
    mujoco.mj_saveLastXML(out, m)
    tree = ET.parse(out)
    os.remove(out)
    root = tree.getroot()
    option = root.find('option')
    if option is None:
        option = ET.SubElement(root, 'option')
    option.set('timestep', str(DT))
    option.set('integrator', integrator)
    if case is None:
        return mujoco.MjModel.from_xml_string(ET.tostring(root, encoding='unicode'))
    world = root.find('worldbody')
    base = world.find('body')
    base.insert(0, ET.Element('freejoint'))
    for geom in root.iter('geom'):                 # the robot touches the plane, not itself
        geom.set('contype', '1')
        geom.set('conaffinity', '0')
    world.insert(0, ET.Element('geom', type='plane', size='5 5 0.1', contype='0',
                               conaffinity='1', friction='1 0.005 0.0001'))
    bodies = {body.get('name'): body for body in root.iter('body')}
    if case == 'solo':
        for name, body in bodies.items():
            if name.endswith('_FOOT'):
                body.append(ET.Element('geom', type='sphere', size=str(FOOT_RADIUS),
                                       contype='1', conaffinity='0'))
        actuators = ET.SubElement(root, 'actuator')
        for joint in root.iter('joint'):
            if joint.get('name'):
                ET.SubElement(actuators, 'position', joint=joint.get('name'), kp='5', kv='0.1')
    elif case == 'g1':
        for link, x, y, z, radius in G1_LIMBS:
            bodies[link].append(ET.Element('geom', type='sphere', size=str(radius),
                                           pos=f'{x} {y} {z}', contype='1', conaffinity='0',
                                           mass='0'))
    return mujoco.MjModel.from_xml_string(ET.tostring(root, encoding='unicode'))


def solo_start(model):
    q = model.neutral()
    q[7:] = STAND
    lowest = min(rbd.frame_pose(model, q, f'{leg}_FOOT')[2, 3]
                 for leg in ('FL', 'FR', 'HL', 'HR'))
    q[2] = -lowest + FOOT_RADIUS
    return q


def lying_start(model, case):
    """A1 rolled onto its side 25 cm up; G1 on its back (pitched -90 degrees) 20 cm up."""
    q = model.neutral()
    if case == 'a1':
        q[3:7] = [math.sin(math.pi / 4), 0.0, 0.0, math.cos(math.pi / 4)]
        q[2] = 0.25
    else:
        q[3:7] = [0.0, -math.sin(math.pi / 4), 0.0, math.cos(math.pi / 4)]
        q[2] = 0.2
    return q


def fall_start(sim):
    """The neutral pose pitched 0.1 rad forward, put down on the ground."""
    q = sim.model.neutral()
    q[3:7] = [0.0, math.sin(0.05), 0.0, math.cos(0.05)]
    return sim.placed_on_ground(q)


def case_model(path, case):
    return rbd.Model.from_urdf(path, floating_base=case is not None)


def ours(path, integrator, case):
    """A Simulator ready to step (settled where the case says so)."""
    model = case_model(path, case)
    if case == 'solo':
        q0 = solo_start(model)
        feet = tuple(f'{leg}_FOOT 0 0 0 {FOOT_RADIUS}' for leg in ('FL', 'FR', 'HL', 'HR'))
        sim = Simulator(model, q0, options=SimOptions(integrator=integrator,
                                                      contact_points=feet))
        g = rbd.gravity_torques(model, q0)
        g[:6] = 0.0
        sim.set_effort(g)
        gains = np.r_[np.zeros(6), np.ones(12)]
        sim.set_drives(kp=5 * gains, kd=0.1 * gains, q_ref=np.r_[np.zeros(6), STAND])
        sim.advance(500)               # standing, settled
        return sim
    if case in ('a1', 'g1', 'g1_fall'):
        points = tuple(' '.join(str(x) for x in limb) for limb in G1_LIMBS) \
            if case != 'a1' else ()
        options = SimOptions(integrator=integrator, contact_points=points)
        if case == 'g1_fall':
            sim = Simulator(model, options=options)
            sim.q = fall_start(sim)
            return sim
        sim = Simulator(model, lying_start(model, case), options=options)
        sim.advance(SETTLE)
        return sim
    q0 = model.random_configuration(3) * 0.3
    sim = Simulator(model, q0, options=SimOptions(integrator=integrator))
    sim.set_effort(rbd.gravity_torques(model, q0))
    return sim


def theirs(path, integrator, case, q0=None):
    """MuJoCo's model and data of the case, ready to step (``q0``: the start, our
    coordinates; the case's own by default)."""
    import mujoco
    m = mujoco_model(path, integrator, 'g1' if case == 'g1_fall' else case)
    d = mujoco.MjData(m)
    model = case_model(path, case)
    if case is None:
        q0 = model.random_configuration(3) * 0.3
        d.qpos[:] = q0
        d.qfrc_applied[:] = rbd.gravity_torques(model, q0)
        return m, d
    if q0 is None:
        q0 = solo_start(model) if case == 'solo' else lying_start(model, case)
    # MuJoCo's free joint: w first; its joints in its own order (the URDF's, depth first)
    d.qpos[:7] = np.r_[q0[:3], q0[6], q0[3:6]]
    names = [m.joint(k).name for k in range(1, m.njnt)]
    index = {name: k for k, name in enumerate(model.joint_names)}
    for k, name in enumerate(names):
        d.qpos[7 + k] = q0[7 + index[name]]
    if case == 'solo':
        d.ctrl[:] = [STAND[index[name]] for name in names]
        g = rbd.gravity_torques(model, q0)
        d.qfrc_applied[6:] = [g[6 + index[name]] for name in names]
        mujoco.mj_step(m, d, nstep=500)
    elif case != 'g1_fall':
        mujoco.mj_step(m, d, nstep=SETTLE)
    return m, d


def once_us(step, count):
    """us of this process's CPU time per step of one run of ``step(count)`` (a transient)."""
    start = time.process_time()
    step(count)
    return (time.process_time() - start) / count * 1e6


def best_us(step, count, repeats):
    """The best of ``repeats`` runs of ``step(count)``, us per step of this process's CPU time
    (time.process_time: both simulators run in this one thread; other processes' load on the
    machine does not count, as it would in wall time)."""
    best = float('inf')
    for _ in range(repeats):
        start = time.process_time()
        step(count)
        best = min(best, (time.process_time() - start) / count * 1e6)
    return best


def cases():
    found = [('bundled arm (7 DoF)', ARM, None)]
    if ur5_path():
        found.append(('UR5 (6 DoF)', ur5_path(), None))
    found.append(('Solo-12 standing', SOLO, 'solo'))
    a1 = robot_path('a1_description', 'urdf', 'a1.urdf')
    if a1:
        found.append(('A1 lying on its side', a1, 'a1'))
    g1 = robot_path('g1_description', 'urdf', 'g1_29dof_rev_1_0.urdf')
    if g1:
        found.append(('G1 lying on its back', g1, 'g1'))
        found.append((f'G1 falling (the first {FALL_STEPS / 1000:g} s)', g1, 'g1_fall'))
        # (what a Talos showed: Coulomb friction in every joint, each a stick-slip kink)
        found.append((f'G1 falling, {JOINT_FRICTION:g} N m friction in every joint',
                      with_joint_friction(g1, JOINT_FRICTION), 'g1_fall'))
    return found


def run(smoke=False) -> int:
    try:
        import mujoco
    except ImportError:
        mujoco = None
    count, repeats = (100, 2) if smoke else (1000, 7)
    print(f'dt {DT * 1e3:g} ms; us of CPU time per step, best of {repeats} x {count} steps; RTF = '
          'real-time factor (batch)')
    print(f'MuJoCo {mujoco.__version__ if mujoco else "not installed (pip install mujoco)"}\n')
    print('| robot | integrator | contacts (ours / MuJoCo) | rbd_ros one call | rbd_ros batch | '
          'MuJoCo one call | MuJoCo batch | batch ratio | rbd_ros RTF | MuJoCo RTF | Newton '
          'iterations per step (mean / max) | unconverged |')
    print('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for label, path, case in cases() if not smoke else cases()[:3]:
        for ours_integrator, their_integrator in (('rk4', 'RK4'), ('semi_implicit_euler', 'Euler')):
            sim = ours(path, ours_integrator, case)
            before = sim.solver_stats
            falling = case == 'g1_fall'
            if falling:
                start = sim.q
                one, batch = float('nan'), once_us(sim.advance, FALL_STEPS)
            else:
                one = best_us(lambda n: [sim.advance(1) for _ in range(n)], count, repeats)
                batch = best_us(sim.advance, count, repeats)
            after = sim.solver_stats
            ok = sim.status == 0
            steps = after['steps'] - before['steps']
            iterations = (after['iterations'] - before['iterations']) / max(steps, 1)
            contacts = len(sim.contacts()) if case else 0
            row = [label, f'{ours_integrator} / {their_integrator}']
            if mujoco is not None:
                if falling:
                    m, d = theirs(path, their_integrator, case, q0=start)
                    one_m = float('nan')
                    batch_m = once_us(lambda n: mujoco.mj_step(m, d, nstep=n), FALL_STEPS)
                else:
                    m, d = theirs(path, their_integrator, case)
                    one_m = best_us(lambda n: [mujoco.mj_step(m, d) for _ in range(n)], count,
                                    repeats)
                    batch_m = best_us(lambda n: mujoco.mj_step(m, d, nstep=n), count, repeats)
                row += [f'{contacts} / {d.ncon}', f'{one:.1f}'.replace('nan', '-'),
                        f'{batch:.1f}' + ('' if ok else ' (diverged)'),
                        f'{one_m:.1f}'.replace('nan', '-'), f'{batch_m:.1f}',
                        f'{batch / batch_m:.2f}']
            else:
                batch_m = None
                row += [f'{contacts} / -', f'{one:.1f}'.replace('nan', '-'),
                        f'{batch:.1f}' + ('' if ok else ' (diverged)'), '-', '-', '-']
            row += [f'{DT * 1e6 / batch:.0f}x', f'{DT * 1e6 / batch_m:.0f}x' if batch_m else '-',
                    f'{iterations:.2f} / {after["max_iterations"]}',
                    str(after['unconverged_solves'])]
            print('| ' + ' | '.join(row) + ' |', flush=True)
    print('\nEvery row: the URDF\'s damping, friction and position limits in both (MuJoCo\'s '
          'importer: damping, frictionloss, range), ours with effort and velocity limits too; '
          'the arms hold their gravity torque of a random start pose; Solo-12: contacts and '
          'drives in both; A1 and G1: limp, lying where they fell; the G1 falling: from its start '
          '(one run each, CPU time over the fall; the second with Coulomb friction added to every '
          'joint in both). Max iterations and '
          'unconverged solves count every step since the simulator was made (settling '
          'included).')
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog='python -m benchmarks sim', description=__doc__.split(
        '\n\n')[0])
    parser.add_argument('--smoke', action='store_true', help='a second or two')
    return run(parser.parse_args(argv).smoke)


if __name__ == '__main__':
    raise SystemExit(main())
