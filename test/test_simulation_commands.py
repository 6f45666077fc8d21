"""The simulated robot's command mux and outputs without ROS (simulation/commands.py,
simulation/outputs.py): what sim_node turns commands into and what it reports, checked on plain
arrays."""
import math

import numpy as np
import pytest

from rbd_ros.simulation.commands import (COMMAND_BOUND, CommandMux, CommandRefused, Gains,
                                         state_command, wrench_command)
from rbd_ros.simulation.outputs import (Every, Mimic, StateSensor, all_finite, contact_arrows,
                                        link_wrenches, stamp)

SLOT = {'a': 0, 'b': 1, 'c': 2}
GAINS = Gains(np.full(3, 100.0), np.full(3, 10.0), np.full(3, 5.0))


def refused(reason, fn, *args):
    with pytest.raises(CommandRefused) as info:
        fn(*args)
    assert info.value.reason == reason
    return info.value


def test_fresh_inputs_sum_into_efforts_and_drives():
    mux = CommandMux(3, [2, 0])             # command joints c, a
    mux.effort_commands([1.0, 2.0], t=0.0)
    mux.joint_commands(['b', 'a'], SLOT, position=[0.5, 0.1], velocity=[],
                       effort=[3.0, 4.0], t=0.0)
    d = mux.drives(0.05, timeout=0.1, gains=GAINS)
    assert d.effort.tolist() == [2.0 + 4.0, 3.0, 1.0]
    assert d.kp.tolist() == [100.0, 100.0, 0.0] and d.kd.tolist() == [10.0, 10.0, 0.0]
    assert d.q_ref.tolist() == [0.1, 0.5, 0.0] and d.v_ref.tolist() == [0.0, 0.0, 0.0]


def test_a_velocity_command_alone_drives_with_velocity_kp():
    mux = CommandMux(3, [0, 1, 2])
    mux.joint_commands(['c'], SLOT, position=[], velocity=[2.0], effort=[], t=0.0)
    d = mux.drives(0.0, 0.1, GAINS)
    assert d.kp.tolist() == [0.0, 0.0, 0.0] and d.kd.tolist() == [0.0, 0.0, 5.0]
    assert d.v_ref.tolist() == [0.0, 0.0, 2.0]
    # with a position too: the position gains, the velocity as the reference of kd
    mux.joint_commands(['c'], SLOT, position=[1.0], velocity=[2.0], effort=[], t=0.0)
    d = mux.drives(0.0, 0.1, GAINS)
    assert (d.kp[2], d.kd[2], d.q_ref[2], d.v_ref[2]) == (100.0, 10.0, 1.0, 2.0)


def test_joints_not_named_keep_their_command_and_unknown_names_are_returned():
    mux = CommandMux(3, [0, 1, 2])
    mux.joint_commands(['a', 'b'], SLOT, position=[], velocity=[], effort=[1.0, 2.0], t=0.0)
    unknown = mux.joint_commands(['b', 'zz'], SLOT, position=[], velocity=[],
                                 effort=[5.0, 9.0], t=0.01)
    assert unknown == ['zz']
    assert mux.drives(0.01, 0.1, GAINS).effort.tolist() == [1.0, 5.0, 0.0]


def test_an_input_older_than_the_timeout_counts_as_zero():
    mux = CommandMux(3, [0, 1, 2])
    mux.effort_commands([1.0, 1.0, 1.0], t=1.0)
    assert mux.fresh(1.0625, 0.0625) == ['effort_commands']     # (exact in binary)
    assert mux.fresh(1.0625 + 1e-9, 0.0625) == []
    assert not mux.drives(1.2, 0.0625, GAINS).effort.any()
    assert mux.any_received()


def test_drives_are_summed_again_only_when_something_changed():
    mux = CommandMux(3, [0, 1, 2])
    mux.effort_commands([1.0, 0.0, 0.0], t=0.0)
    first = mux.drives(0.0, 0.1, GAINS)
    assert mux.drives(0.05, 0.1, GAINS) is first
    assert mux.drives(0.05, 0.1, Gains(*GAINS.__dict__.values())) is not first   # new gains
    mux.effort_commands([2.0, 0.0, 0.0], t=0.06)
    assert mux.drives(0.07, 0.1, GAINS).effort[0] == 2.0
    assert not mux.drives(0.5, 0.1, GAINS).effort.any()                          # timed out


@pytest.mark.parametrize('call, reason', [
    (lambda m: m.effort_commands([1.0], 0.0), 'length_mismatch'),
    (lambda m: m.effort_commands([1.0, math.nan], 0.0), 'non_finite'),
    (lambda m: m.effort_commands([1.0, 2 * COMMAND_BOUND], 0.0), 'out_of_range'),
    (lambda m: m.joint_commands(['a'], SLOT, [], [], [1.0, 2.0], 0.0), 'length_mismatch'),
    (lambda m: m.joint_commands(['a', 'a'], SLOT, [], [], [1.0, 2.0], 0.0), 'duplicate_names'),
    (lambda m: m.joint_commands(['a'], SLOT, [math.inf], [], [], 0.0), 'non_finite'),
    (lambda m: m.joint_commands(['a'], SLOT, [], [-2e12], [], 0.0), 'out_of_range'),
])
def test_bad_commands_are_refused_and_nothing_is_kept(call, reason):
    mux = CommandMux(3, [0, 1])
    refused(reason, call, mux)
    assert not mux.any_received()


def test_wrench_and_state_checks():
    assert wrench_command([1, 2, 3, 4, 5, 6]).tolist() == [1, 2, 3, 4, 5, 6]
    refused('non_finite', wrench_command, [math.nan] * 6)
    refused('out_of_range', wrench_command, [1e13, 0, 0, 0, 0, 0])
    slots, pos, vel = state_command(['c', 'a'], [0.3, 0.1], [], SLOT, bound=1e4)
    assert slots.tolist() == [2, 0] and pos.tolist() == [0.3, 0.1] and vel.tolist() == [0, 0]
    refused('length_mismatch', state_command, ['a'], [], [], SLOT, 1e4)
    refused('unknown_joint', state_command, ['x'], [0.0], [], SLOT, 1e4)
    refused('out_of_range', state_command, ['a'], [2e4], [], SLOT, 1e4)


def test_the_sensor_delays_and_its_noise_depends_only_on_seed_and_step():
    sensor = StateSensor(noise=(0.01, 0.1), delay=0.002, seed=7)
    out = [sensor.read(step, step * 1e-3, [0.0, 1.0], [0.0, 0.0], [5.0, 6.0])
           for step in range(4)]
    assert [len(due) for due in out] == [0, 0, 1, 1]
    first = out[2][0]
    assert first.t == 0.0 and first.effort.tolist() == [5.0, 6.0]
    again = StateSensor(noise=(0.01, 0.1), delay=0.0, seed=7).read(0, 0.0, [0.0, 1.0],
                                                                   [0.0, 0.0], [0.0, 0.0])[0]
    assert again.position.tobytes() == first.position.tobytes()     # bit for bit
    assert again.velocity.tobytes() == first.velocity.tobytes()
    assert 0 < np.abs(first.position - [0.0, 1.0]).max() < 0.1
    sensor.clear()
    assert not sensor.pending
    exact = StateSensor().read(3, 0.5, [1.0], [2.0], [3.0])[0]
    assert (exact.position[0], exact.velocity[0]) == (1.0, 2.0)


def test_mimic_joints_follow_their_leaders():
    mimic = Mimic(np.array([1]), np.array([-2.0]), np.array([0.1]))
    pos, vel, eff = mimic.joint_states(np.array([0.0, 0.5]), np.array([0.0, 1.0]),
                                       np.array([3.0, 4.0]))
    assert pos.tolist() == [0.0, 0.5, -0.9] and vel.tolist() == [0.0, 1.0, -2.0]
    assert eff.tolist() == [3.0, 4.0, 0.0]
    none = Mimic(np.array([], dtype=int), np.array([]), np.array([]))
    assert none.joint_states([1.0], [2.0], [3.0]) == ([1.0], [2.0], [3.0])


def test_link_wrenches_in_the_link_frame_about_its_origin():
    """Two points of one link, rotated 90 degrees about z and 1 m up: the summed force and
    the moment about the link's origin, in its frame."""
    pose = np.eye(4)
    pose[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    pose[:3, 3] = [0.0, 0.0, 1.0]
    at = np.array([[0.1, 0.0, 0.0], [-0.1, 0.0, 0.0], [0.0, 0.0, 0.0]])
    force = np.array([[0.0, 0.0, 10.0], [0.0, 0.0, 30.0], [0.0, 0.0, 5.0]])
    out = link_wrenches(['foot', 'foot', 'base'], at, force,
                        {'foot': pose, 'base': np.eye(4)})
    assert [link for link, _ in out] == ['base', 'foot']
    f_world = np.array([0.0, 0.0, 40.0])
    tau_world = sum(np.cross(a - [0, 0, 1], f) for a, f in zip(at[:2], force[:2]))
    R = pose[:3, :3]
    assert np.allclose(out[1][1], np.r_[R.T @ f_world, R.T @ tau_world])
    assert np.allclose(out[0][1], [0, 0, 5.0, 0, 0, 0])


def test_arrows_stamps_rates_and_finiteness():
    arrows = contact_arrows(np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 0.0, 100.0]]), 100.0)
    assert np.allclose(arrows, [[[1.0, 0.0, 0.0], [1.0, 0.0, 0.5]]])
    assert contact_arrows(np.zeros((0, 3)), np.zeros((0, 3)), 1.0).shape == (0, 2, 3)
    assert stamp(1.5) == (1, 500_000_000) and stamp(0.0011) == (0, 1_100_000)
    assert stamp(2.9999999999) == (3, 0)
    every = Every(0.1)
    assert [every.due(t) for t in (0.0, 0.05, 0.1, 0.15, 0.2)] == [True, False, True, False,
                                                                  True]
    assert all_finite([1.0, 2.0], np.zeros(3)) and all_finite([])
    assert not all_finite([1.0], [math.nan]) and not all_finite([1e308, 1e308, -math.inf])
    assert all_finite([1e308, 1e308])          # (the sum overflows; every value is finite)
