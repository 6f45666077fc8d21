"""The simulator's step against MuJoCo's, side by side in one process.

    .venv/bin/python -m benchmarks sim [--smoke]        (or python -m benchmarks.sim_bench)

The same URDF (visuals and meshes stripped for MuJoCo's importer), the same dt (1 ms), the
closest integrator (our RK4 against MuJoCo's RK4; our semi-implicit Euler against MuJoCo's
Euler), the same joint effects (the URDF's damping, friction and limits, which MuJoCo's
importer takes as damping, frictionloss and range) and, for Solo-12, the same contacts: four
7.5 mm foot spheres on a ground plane, the robot standing on them, held by position drives
(kp 5, kd 0.1) around gravity compensation. Ours: drives with the effort limits and speed
limits too (MuJoCo has neither). "one call" times a step per Python call (what sim_node does
at 1 kHz: Simulator.advance(1), mujoco.mj_step(m, d)); "batch" times 1,000 steps in one call
(advance(1000), mj_step(m, d, nstep=1000)). Real-time factor: dt / (time per step), from the
batch.

MuJoCo (PyPI ``mujoco``) is a benchmark-only dependency: without it only our columns print.
"""
from __future__ import annotations

import argparse
import os
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


def ur5_path():
    import sys
    for base in sys.path:
        path = os.path.join(base, 'cmeel.prefix', 'share', 'example-robot-data', 'robots',
                            'ur_description', 'urdf', 'ur5_robot.urdf')
        if os.path.exists(path):
            return path
    return None


def strip_for_mujoco(text: str) -> str:
    """The URDF without <visual>, <collision> and <transmission>/<gazebo> (MuJoCo's importer
    would look for the meshes), with MuJoCo's compiler options: every link kept as a body."""
    root = ET.fromstring(text)
    for link in root.iter('link'):
        for child in list(link):
            if child.tag in ('visual', 'collision'):
                link.remove(child)
    for child in list(root):
        if child.tag in ('transmission', 'gazebo'):
            root.remove(child)
    mujoco_tag = ET.SubElement(root, 'mujoco')
    ET.SubElement(mujoco_tag, 'compiler', discardvisual='true', fusestatic='false',
                  balanceinertia='false')
    return ET.tostring(root, encoding='unicode')


def mujoco_model(path, integrator, legged=False):
    """A MuJoCo model of the URDF: dt 1 ms, ``integrator`` ('RK4' or 'Euler'); ``legged``:
    a free base on a ground plane, foot spheres, position actuators on every joint."""
    import mujoco
    m = mujoco.MjModel.from_xml_string(strip_for_mujoco(open(path).read()))
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
    if legged:
        world = root.find('worldbody')
        base = world.find('body')
        base.insert(0, ET.Element('freejoint'))
        base.set('pos', '0 0 0.3')
        world.insert(0, ET.Element('geom', type='plane', size='5 5 0.1', friction='1 0.005 0.0001'))
        for body in root.iter('body'):
            if body.get('name', '').endswith('_FOOT'):
                body.append(ET.Element('geom', type='sphere', size=str(FOOT_RADIUS)))
        actuators = ET.SubElement(root, 'actuator')
        for joint in root.iter('joint'):
            ET.SubElement(actuators, 'position', joint=joint.get('name'), kp='5', kv='0.1')
    return mujoco.MjModel.from_xml_string(ET.tostring(root, encoding='unicode'))


def solo_start(model):
    q = model.neutral()
    q[7:] = STAND
    lowest = min(rbd.frame_pose(model, q, f'{leg}_FOOT')[2, 3]
                 for leg in ('FL', 'FR', 'HL', 'HR'))
    q[2] = -lowest + FOOT_RADIUS
    return q


def ours(path, integrator, legged=False):
    """A Simulator ready to step, and its effort."""
    model = rbd.Model.from_urdf(path, floating_base=legged)
    if legged:
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
    q0 = model.random_configuration(3) * 0.3
    sim = Simulator(model, q0, options=SimOptions(integrator=integrator))
    sim.set_effort(rbd.gravity_torques(model, q0))
    return sim


def theirs(path, integrator, legged=False):
    import mujoco
    m = mujoco_model(path, integrator, legged)
    d = mujoco.MjData(m)
    model = rbd.Model.from_urdf(path, floating_base=legged)
    if legged:
        q0 = solo_start(model)
        d.qpos[:] = np.r_[q0[:3], q0[6], q0[3:6], q0[7:]]     # MuJoCo: w first
        d.ctrl[:] = STAND
        g = rbd.gravity_torques(model, q0)
        d.qfrc_applied[6:] = g[6:]
        mujoco.mj_step(m, d, nstep=500)
    else:
        q0 = model.random_configuration(3) * 0.3
        d.qpos[:] = q0
        d.qfrc_applied[:] = rbd.gravity_torques(model, q0)
    return m, d


def best_us(step, count, repeats):
    best = float('inf')
    for _ in range(repeats):
        start = time.perf_counter()
        step(count)
        best = min(best, (time.perf_counter() - start) / count * 1e6)
    return best


def run(smoke=False) -> int:
    try:
        import mujoco
    except ImportError:
        mujoco = None
    count, repeats = (100, 2) if smoke else (1000, 7)
    cases = [('bundled arm (7 DoF)', ARM, False)]
    if ur5_path():
        cases.append(('UR5 (6 DoF)', ur5_path(), False))
    cases.append(('Solo-12 standing, 4 foot contacts', SOLO, True))
    print(f'dt {DT * 1e3:g} ms; us per step, best of {repeats} x {count} steps; RTF = real-time '
          'factor (batch)')
    print(f'MuJoCo {mujoco.__version__ if mujoco else "not installed (pip install mujoco)"}\n')
    print('| robot | integrator | rbd_ros one call | rbd_ros batch | MuJoCo one call | '
          'MuJoCo batch | batch ratio | rbd_ros RTF | MuJoCo RTF |')
    print('|---|---|---:|---:|---:|---:|---:|---:|---:|')
    for label, path, legged in cases:
        for ours_integrator, their_integrator in (('rk4', 'RK4'), ('semi_implicit_euler', 'Euler')):
            sim = ours(path, ours_integrator, legged)
            one = best_us(lambda n: [sim.advance(1) for _ in range(n)], count, repeats)
            batch = best_us(sim.advance, count, repeats)
            ok = sim.status == 0
            row = [label, f'{ours_integrator} / {their_integrator}', f'{one:.1f}',
                   f'{batch:.1f}' + ('' if ok else ' (diverged)')]
            if mujoco is not None:
                m, d = theirs(path, their_integrator, legged)
                one_m = best_us(lambda n: [mujoco.mj_step(m, d) for _ in range(n)], count,
                                repeats)
                batch_m = best_us(lambda n: mujoco.mj_step(m, d, nstep=n), count, repeats)
                row += [f'{one_m:.1f}', f'{batch_m:.1f}', f'{batch / batch_m:.2f}']
            else:
                row += ['-', '-', '-']
                batch_m = None
            row += [f'{DT * 1e6 / batch:.0f}x', f'{DT * 1e6 / batch_m:.0f}x' if batch_m else '-']
            print('| ' + ' | '.join(row) + ' |')
    print('\nEvery row: the URDF\'s damping, friction and position limits in both (MuJoCo\'s '
          'importer: damping, frictionloss, range), ours with effort and velocity limits too; '
          'the arms hold their gravity torque of a random start pose; Solo-12: contacts and '
          'drives in both.')
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog='python -m benchmarks sim', description=__doc__.split(
        '\n\n')[0])
    parser.add_argument('--smoke', action='store_true', help='a second or two')
    return run(parser.parse_args(argv).smoke)


if __name__ == '__main__':
    raise SystemExit(main())
