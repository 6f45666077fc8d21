"""The simulator's constraint solver says when it runs out of iterations:
Simulator.unconverged_solves (and solver_stats) count it, sim_node reports it in /diagnostics
(WARN for each period that had some, with how many)."""
import functools
import pathlib

import numpy as np
import pytest

import rbd_ros.dynamics as rbd
from rbd_ros.simulation import SimOptions, Simulator

ROBOTS = pathlib.Path(__file__).resolve().parents[1] / 'rbd_ros' / 'robots'
ARM = str(ROBOTS / 'rbd_arm7.urdf')
SOLO = str(ROBOTS / 'solo12.urdf')
POSE = np.array([0.3, 0.7, -0.4, 1.2, 0.5, -0.8, 0.2])
FEET = tuple(f'{leg}_FOOT 0 0 0 0.0075' for leg in ('FL', 'FR', 'HL', 'HR'))


def _arm_driven(iterations):
    """The arm's drives pulling every joint 0.3 rad away, against its friction: drive and
    friction rows coupled through M (Newton: up to 10 iterations a step as joints stick and
    slip; Gauss-Seidel needed tens of sweeps)."""
    sim = Simulator(rbd.Model.from_urdf(ARM), q0=POSE,
                    options=SimOptions(solver_iterations=iterations))
    sim.set_drives(kp=50.0, kd=1.0, q_ref=POSE + 0.3)
    assert sim.advance(300)
    return sim


def test_a_solver_short_of_iterations_is_counted():
    sim = _arm_driven(1)
    stats = sim.solver_stats
    assert sim.unconverged_solves == stats['unconverged_solves'] > 100
    assert stats['max_iterations'] == 1 and stats['steps'] == 300


def test_with_its_default_budget_the_solver_converges():
    sim = _arm_driven(SimOptions().solver_iterations)
    assert sim.unconverged_solves == 0
    assert 1 < sim.solver_stats['max_iterations'] <= SimOptions().solver_iterations


def test_the_old_name_of_the_budget_still_sets_it():
    """Scripts written for the Gauss-Seidel solver pass solver_sweeps: it is the budget."""
    assert SimOptions(solver_sweeps=7).solver_iterations == 7
    assert _arm_driven(1).solver_stats['max_sweeps'] == 1


def test_sim_node_reports_unconverged_solves_in_diagnostics(ros, monkeypatch):
    pytest.importorskip('rclpy')
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus

    import rbd_ros.nodes.sim as sim_module
    from conftest import wait_until
    monkeypatch.setattr(sim_module, 'SimOptions', functools.partial(SimOptions, solver_iterations=1))
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    node = ros.start(sim_module.SimNode, {
        'robot_description_file': SOLO, 'floating_base': True, 'contact_points': list(FEET),
        'initial_base_pose': [0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0], 'real_time_factor': 0.0,
        'diagnostics_period': 0.2})

    def reported():
        for msg in list(diagnostics):
            for status in msg.status:
                values = {kv.key: kv.value for kv in status.values}
                if int(values.get('unconverged_solves', '0')) > 0:
                    return True
        return False

    wait_until(reported, timeout=60, what='unconverged_solves > 0 in /diagnostics')
    assert node.unconverged_solves > 0
    # WARN for each period that had some, with how many
    warned = [(status, {kv.key: kv.value for kv in status.values}) for msg in list(diagnostics)
              for status in msg.status if 'ran out of iterations' in status.message]
    assert warned, [s.message for m in diagnostics for s in m.status]
    status, values = warned[-1]
    count = int(values['unconverged_solves_last_period'])
    assert status.level == DiagnosticStatus.WARN and count > 0
    assert f'in {count} solve' in status.message and 'in the last 0.2 s' in status.message
    # a period without any: OK again
    node.paused = True
    wait_until(lambda: any(s.level == DiagnosticStatus.OK and 'iterations' not in s.message
                           and {kv.key: kv.value for kv in s.values}.get(
                               'unconverged_solves_last_period') == '0'
                           for m in list(diagnostics)[-3:] for s in m.status),
               what='/diagnostics OK after a period without unconverged solves')
    assert node.extra_diagnostics()['unconverged_solves'] == str(node.unconverged_solves)
