"""Would the simulator gain from the analytical derivatives? An experiment, not a feature.

    .venv/bin/python -m benchmarks.implicit_bench [--smoke]

MuJoCo's ``implicit`` integrator treats the velocity-dependent forces implicitly:
(M + dt dh/dv) (v+ - v) = dt (tau - h(q, v)), with h = C(q, v) v + g(q) and dh/dv from the
derivatives (here ``inverse_dynamics_derivatives``' dtau/dv at a = 0). Its ``implicitfast``
keeps only the damping's symmetric part, which the simulator already treats implicitly. This
runs the free motion (no damping, friction, limits or torque) of three systems for 10 s with
semi-implicit Euler (explicit forces), the implicit variant and RK4 (the simulator's default),
at dt = 1 ms and 10 ms, and prints the worst energy error as a fraction of the motion's energy
and the core calls each step makes. The loop is Python (the simulator's compiled step is not
touched), so its time per step is printed only as a guide.
"""
import argparse
import sys
import time

import numpy as np
import scipy.linalg

import rbd_ros.dynamics as rbd

BOX = '''<robot name="box"><link name="b"><inertial><mass value="1"/>
<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial></link></robot>'''
#: core calls per step of each scheme
CALLS = {'semi-implicit Euler': '1 FD', 'implicit (dh/dv)': '1 ID + 1 ID derivatives + 1 LU',
         'RK4': '4 FD'}


def energy(model, q, v):
    return rbd.kinetic_energy(model, q, v) + rbd.potential_energy(model, q)


def simulate(model, q, v, dt, duration, scheme):
    """(worst |E - E0|, seconds per step) of ``duration`` s of free motion; inf if it blew up."""
    zero, data, e0, worst = np.zeros(model.nv), model.create_data(), energy(model, q, v), 0.0
    steps = int(round(duration / dt))
    start = time.perf_counter()
    for _ in range(steps):
        if scheme == 'semi-implicit Euler':
            v = v + dt * rbd.forward_dynamics(model, q, v, zero, data=data)
            q = rbd.integrate(model, q, v, dt, data=data)
        elif scheme == 'implicit (dh/dv)':
            h = rbd.nonlinear_effects(model, q, v, data=data)
            _, dh_dv, M = rbd.inverse_dynamics_derivatives(model, q, v, zero, data=data)
            v = v - dt * scipy.linalg.solve(M + dt * dh_dv, h)
            q = rbd.integrate(model, q, v, dt, data=data)
        else:
            def acc(q_, v_):
                return rbd.forward_dynamics(model, q_, v_, zero, data=data)
            k1 = acc(q, v)
            v2 = v + 0.5 * dt * k1
            k2 = acc(rbd.integrate(model, q, v, 0.5 * dt, data=data), v2)
            v3 = v + 0.5 * dt * k2
            k3 = acc(rbd.integrate(model, q, v2, 0.5 * dt, data=data), v3)
            v4 = v + dt * k3
            k4 = acc(rbd.integrate(model, q, v3, dt, data=data), v4)
            q = rbd.integrate(model, q, (v + 2 * v2 + 2 * v3 + v4) / 6.0, dt, data=data)
            v = v + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        if not np.all(np.isfinite(v)) or np.abs(v).max() > 1e6:
            return np.inf, (time.perf_counter() - start) / steps
        worst = max(worst, abs(energy(model, q, v) - e0))
    return worst, (time.perf_counter() - start) / steps


def systems():
    """(label, model, q0, v0, the motion's energy scale)."""
    sys.path.insert(0, 'test')
    out = []
    try:
        from corpus import robots_directory
        root = robots_directory()
    except ImportError:
        root = None
    if root:
        model = rbd.Model.from_urdf(root + '/double_pendulum_description/urdf/'
                                    'double_pendulum.urdf')
        q0 = np.array([1.0, 0.5])
        out.append(('double pendulum from (1, 0.5) rad', model, q0, np.zeros(2),
                    abs(energy(model, q0, np.zeros(2)) - energy(model, model.neutral(),
                                                                np.zeros(2)))))
    arm = rbd.Model.from_urdf('rbd_ros/robots/rbd_arm7.urdf')
    q0 = np.array([0.0, 1.2, 0.0, 1.5, 0.0, 1.0, 0.0])
    out.append(('bundled arm falling from a bent pose', arm, q0, np.zeros(7),
                abs(energy(arm, q0, np.zeros(7)) - energy(arm, arm.neutral(), np.zeros(7)))))
    box = rbd.Model.from_urdf(BOX, floating_base=True, gravity=(0.0, 0.0, 0.0))
    v0 = np.array([0.0, 0.0, 0.0, 0.01, 20.0, 0.0])
    out.append(('free box spinning near its middle axis', box, box.neutral(), v0,
                energy(box, box.neutral(), v0)))
    return out


def run(smoke=False, out=print):
    duration = 0.05 if smoke else 10.0
    out('| system | dt | scheme | core calls per step | worst energy error / energy | '
        'Python loop us/step |')
    out('|---|---:|---|---|---:|---:|')
    for label, model, q0, v0, scale in systems():
        for dt in (1e-3, 1e-2):
            for scheme in CALLS:
                worst, seconds = simulate(model, q0.copy(), v0.copy(), dt, duration, scheme)
                text = 'diverged' if not np.isfinite(worst) else f'{worst / scale:.1e}'
                out(f'| {label} | {dt:g} | {scheme} | {CALLS[scheme]} | {text} | '
                    f'{seconds * 1e6:.0f} |')
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--smoke', action='store_true', help='seconds-long run (tests)')
    return run(smoke=parser.parse_args().smoke)


if __name__ == '__main__':
    raise SystemExit(main())
