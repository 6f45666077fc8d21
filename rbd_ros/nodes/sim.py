"""sim_node (node ``rbd_sim``): a simulated torque-controlled robot.

Integrates ``forward_dynamics`` at ``rate`` Hz (semi-implicit Euler or RK4, on the configuration
manifold through ``integrate``) from ``initial_positions``; every 1/``publish_rate`` s it runs the
steps that are due and publishes ``joint_states`` (position, velocity, applied effort) and,
optionally, ``/clock``. Commands: ``~/effort_commands`` (Float64MultiArray in ``command_joints``
order) or ``~/joint_commands`` (JointState effort, by name); a command older than
``command_timeout`` counts as zero torque. URDF position limits stop the joint. ``~/reset``
(std_srvs/Trigger) restores the initial state. Planar and floating URDF joints are integrated but,
having no JointState form, are not published (docs/ros.md).
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

import rbd_ros.dynamics as rbd
from rbd_ros.ros.joint_states import Rejected, all_finite
from rbd_ros.ros.messages import joint_state, time_msg
from rbd_ros.ros.node import COMMON_PARAMS, RbdNode, node_main
from rbd_ros.ros.params import ParamSpec, finite_vector, one_of, positive, unique_names
from rbd_ros.ros.qos import COMMAND_QOS, OUTPUT_QOS
from rbd_ros.ros.robot import Robot

PARAMS = {
    **COMMON_PARAMS,
    'gravity': ParamSpec('double_array', [0.0, 0.0, -9.81], 'gravity in the world frame (m/s^2)',
                         finite_vector(3)),
    'rate': ParamSpec('double', 1000.0, 'integration rate (Hz)', positive),
    'publish_rate': ParamSpec('double', 100.0, 'joint_states (and /clock) rate (Hz); the '
                              'integration steps that are due run in one batch at this rate',
                              positive),
    'integrator': ParamSpec('string', 'semi_implicit_euler', 'semi_implicit_euler or rk4',
                            one_of('semi_implicit_euler', 'rk4')),
    'command_joints': ParamSpec('string_array', [], 'joint order of ~/effort_commands and '
                                'initial_positions; empty: every single-DoF joint in model '
                                'order', unique_names),
    'initial_positions': ParamSpec('double_array', [], 'start (and reset) positions in '
                                   'command_joints order; empty: all zero', finite_vector()),
    'command_timeout': ParamSpec('double', 0.1, 's after which a command counts as zero torque',
                                 positive),
    'publish_clock': ParamSpec('bool', False, 'publish /clock with the simulated time '
                               '(joint_states are then stamped with it)'),
    'wait_for_command': ParamSpec('bool', False, 'hold the initial state (time stopped) until '
                                  'the first command arrives, e.g. while a controller starts'),
    'divergence_bound': ParamSpec('double', 1e4, 'a joint speed (rad/s or m/s) or position '
                                  'beyond this, or a NaN, is a diverged simulation: the state '
                                  'is reset to the initial one, time runs on', positive),
}


@dataclasses.dataclass
class SimState:
    """The simulated robot's state, changed in place by the step and the command callbacks."""

    q: np.ndarray
    v: np.ndarray
    command: np.ndarray           # effort per JointState joint
    command_time: float | None    # time.monotonic() of the last command


@dataclasses.dataclass(frozen=True)
class Runtime:
    robot: Robot
    command_names: tuple[str, ...]
    command_slots: np.ndarray     # slots (in robot.joint_names) of command_joints
    q0: np.ndarray                # initial full configuration (nq)
    state: SimState


class SimNode(RbdNode):
    NODE_NAME = 'rbd_sim'
    PARAMS = PARAMS

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        p = self.params
        self.dt = 1.0 / p['rate']
        self.substeps = max(1, round(p['rate'] / p['publish_rate']))
        self.sim_time = 0.0
        self.steps = 0
        self.divergence_resets = 0
        self.pub_js = self.create_publisher(JointState, 'joint_states', OUTPUT_QOS)
        self.pub_clock = self.create_publisher(Clock, '/clock', OUTPUT_QOS) \
            if p['publish_clock'] else None
        self.create_subscription(Float64MultiArray, '~/effort_commands',
                                 self.guard(self.on_effort_commands), COMMAND_QOS)
        self.create_subscription(JointState, '~/joint_commands',
                                 self.guard(self.on_joint_commands), COMMAND_QOS)
        self.create_service(Trigger, '~/reset', self.on_reset)
        self._wall_t0 = time.monotonic()
        self.create_timer(1.0 / p['publish_rate'], self.guard(self.tick))
        self.start()

    # -- model ---------------------------------------------------------------------------------
    def prepare(self, robot: Robot) -> Runtime:
        names, slots = robot.joint_slots(self.params['command_joints'])
        init = self.params['initial_positions']
        if init and len(init) != len(names):
            raise ValueError(f'initial_positions has {len(init)} values for the {len(names)} '
                             f'command_joints ({", ".join(names)})')
        qj = np.zeros(len(robot.joint_names))
        if init:
            qj[slots] = init
        clamped = np.clip(qj, robot.lower, robot.upper)
        if not np.array_equal(clamped, qj):
            self.get_logger().warning('initial_positions outside the URDF limits: clamped')
        q0 = robot.full_q(clamped)
        return Runtime(robot=robot, command_names=names, command_slots=slots, q0=q0,
                       state=self._initial_state(robot, q0))

    @staticmethod
    def _initial_state(robot: Robot, q0: np.ndarray) -> SimState:
        return SimState(q=q0.copy(), v=np.zeros(robot.nv),
                        command=np.zeros(len(robot.joint_names)), command_time=None)

    # -- commands ------------------------------------------------------------------------------
    def on_effort_commands(self, msg: Float64MultiArray) -> None:
        self.stats.received += 1
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'command before any robot_description')
        data = np.asarray(msg.data, dtype=float)
        if data.shape != (len(rt.command_slots),):
            raise Rejected('length_mismatch', f'{len(data)} efforts for '
                           f'{len(rt.command_slots)} command_joints')
        if not all_finite(data):
            raise Rejected('non_finite', 'NaN or inf in effort_commands')
        command = np.zeros(len(rt.robot.joint_names))
        command[rt.command_slots] = data
        rt.state.command = command
        rt.state.command_time = self.stats.last_input_time = time.monotonic()

    def on_joint_commands(self, msg: JointState) -> None:
        self.stats.received += 1
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'command before any robot_description')
        if len(msg.effort) != len(msg.name):
            raise Rejected('length_mismatch',
                           f'{len(msg.name)} names but {len(msg.effort)} efforts')
        effort = np.asarray(msg.effort, dtype=float)
        if not all_finite(effort):
            raise Rejected('non_finite', 'NaN or inf in joint_commands')
        st = rt.state
        command = st.command.copy() if st.command_time is not None \
            else np.zeros(len(rt.robot.joint_names))
        unknown = []
        for name, value in zip(msg.name, effort):
            i = rt.robot.slot.get(name)
            if i is None:
                unknown.append(name)
            else:
                command[i] = value
        if unknown:
            self.stats.unknown_names(unknown)
        st.command = command
        st.command_time = self.stats.last_input_time = time.monotonic()

    def on_reset(self, request, response):
        rt = self.runtime
        if rt is None:
            response.success, response.message = False, 'no model'
            return response
        fresh = self._initial_state(rt.robot, rt.q0)
        rt.state.q, rt.state.v = fresh.q, fresh.v
        rt.state.command, rt.state.command_time = fresh.command, fresh.command_time
        response.success, response.message = True, 'state reset to initial_positions'
        return response

    def _diverged(self, robot: Robot, q, v) -> bool:
        """NaN or inf, or a joint beyond divergence_bound (speed or position)."""
        bound = self.params['divergence_bound']
        if not all_finite(q, v):
            return True
        return bool(np.max(np.abs(v), initial=0.0) > bound
                    or np.max(np.abs(q[robot.q_index]), initial=0.0) > bound)

    # -- simulation ----------------------------------------------------------------------------
    def _step(self, robot: Robot, q, v, tau):
        """One integration step; None when the simulation diverged (before the core could
        refuse a NaN: a diverged state must reset, never stop the simulator)."""
        try:
            return self._integrate(robot, q, v, tau)
        except (ValueError, FloatingPointError):   # NaN, inf or a singular M on the way
            return None

    def _integrate(self, robot: Robot, q, v, tau):
        dt, model = self.dt, robot.model
        if self.params['integrator'] == 'rk4':
            a1 = rbd.forward_dynamics(model, q, v, tau)
            v2 = v + 0.5 * dt * a1
            a2 = rbd.forward_dynamics(model, rbd.integrate(model, q, v, 0.5 * dt), v2, tau)
            v3 = v + 0.5 * dt * a2
            a3 = rbd.forward_dynamics(model, rbd.integrate(model, q, v2, 0.5 * dt), v3, tau)
            v4 = v + dt * a3
            a4 = rbd.forward_dynamics(model, rbd.integrate(model, q, v3, dt), v4, tau)
            q_new = rbd.integrate(model, q, (v + 2 * v2 + 2 * v3 + v4) / 6.0, dt)
            v_new = v + dt / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
        else:   # semi-implicit (symplectic) Euler
            v_new = v + dt * rbd.forward_dynamics(model, q, v, tau)
            q_new = rbd.integrate(model, q, v_new, dt)
        if self._diverged(robot, q_new, v_new):
            return None
        # URDF position limits stop the joint.
        qj, vj = q_new[robot.q_index], v_new[robot.v_index]
        lower, upper = robot.lower, robot.upper
        low, high = qj < lower, qj > upper
        if low.any() or high.any():
            qj = np.clip(qj, lower, upper)
            vj = np.where((low & (vj < 0)) | (high & (vj > 0)), 0.0, vj)
            q_new[robot.q_index], v_new[robot.v_index] = qj, vj
        return q_new, v_new

    def applied_effort(self, rt: Runtime) -> np.ndarray:
        st = rt.state
        if st.command_time is None or \
                time.monotonic() - st.command_time > self.params['command_timeout']:
            return np.zeros(len(rt.robot.joint_names))
        return st.command

    def tick(self) -> None:
        rt = self.runtime
        if rt is None:
            return
        robot, st = rt.robot, rt.state
        tau_j = self.applied_effort(rt)
        holding = self.params['wait_for_command'] and st.command_time is None
        if not holding:
            tau = robot.full_v(tau_j)
            t0 = time.perf_counter()
            q, v = st.q, st.v
            for _ in range(self.substeps):
                stepped = self._step(robot, q, v, tau)
                if stepped is None:       # diverged: back to the initial state, time runs on
                    self._reset_after_divergence(rt)
                    q, v = st.q, st.v
                    break
                q, v = stepped
            self.stats.compute_s.append(time.perf_counter() - t0)
            st.q, st.v = q, v
            self.steps += self.substeps
            self.sim_time = self.steps * self.dt
        self.publish_state(rt, tau_j)

    def _reset_after_divergence(self, rt: Runtime) -> None:
        """Reset the state (not the commands: a wait_for_command hold does not come back)."""
        self.divergence_resets += 1
        self.stats.last_error = f'simulation diverged at t = {self.sim_time:.3f} s: state reset'
        if self.divergence_resets == 1:    # logged once; counted in /diagnostics
            self.get_logger().error(f'simulation diverged (NaN, inf or beyond '
                                    f'divergence_bound {self.params["divergence_bound"]:g}) at '
                                    f't = {self.sim_time:.3f} s: state reset to the initial one; '
                                    'later resets are only counted (divergence_resets)')
        fresh = self._initial_state(rt.robot, rt.q0)
        rt.state.q, rt.state.v = fresh.q, fresh.v

    def publish_state(self, rt: Runtime, tau_j: np.ndarray) -> None:
        robot, st = rt.robot, rt.state
        if self.pub_clock is not None:
            stamp = time_msg(self.sim_time)
            self.pub_clock.publish(Clock(clock=stamp))
        else:
            stamp = self.get_clock().now().to_msg()
        qj, vj = st.q[robot.q_index], st.v[robot.v_index]
        names, pos, vel, eff = list(robot.joint_names), list(qj), list(vj), list(tau_j)
        if robot.mimic_names:   # mimic joints follow their leaders
            names += robot.mimic_names
            pos += list(robot.mimic_positions(qj))
            vel += list(robot.mimic_multiplier * vj[robot.mimic_leader_slot])
            eff += [0.0] * len(robot.mimic_names)
        self.pub_js.publish(joint_state(stamp, names, pos, vel, eff))
        self.stats.published += 1

    def extra_diagnostics(self) -> dict:
        extra = {'sim_time': f'{self.sim_time:.3f}', 'steps': str(self.steps),
                 'divergence_resets': str(self.divergence_resets),
                 'integrator': self.params['integrator'],
                 'real_time_factor': f'{self.sim_time / max(time.monotonic() - self._wall_t0, 1e-9):.3f}'}
        rt = self.runtime
        if rt is not None:
            t = rt.state.command_time
            stale = t is None or time.monotonic() - t > self.params['command_timeout']
            extra['command'] = 'none yet' if t is None else f'{time.monotonic() - t:.3f} s old'
            extra['command_stale'] = str(stale).lower()
        return extra


def main(args=None) -> int:
    return node_main(SimNode, args, executable='sim_node', description=__doc__.split('\n\n')[0])


if __name__ == '__main__':
    raise SystemExit(main())
