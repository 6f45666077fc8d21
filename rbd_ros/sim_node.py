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
from diagnostic_msgs.msg import DiagnosticArray
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

import rbd_ros.dynamics as rbd
from rbd_ros.ros_conversions import (ROBOT_DESCRIPTION_PARAM,
                                     COMMAND_QOS, OUTPUT_QOS, LoadedModel, ParamSpec, RbdNode,
                                     Rejected, all_finite, diagnostic_status, finite_vector,
                                     joint_state, one_of, positive, run_node)

PARAMS = {
    'robot_description': ROBOT_DESCRIPTION_PARAM,
    'gravity': ParamSpec([0.0, 0.0, -9.81], 'gravity in the world frame (m/s^2)',
                         finite_vector(3)),
    'rate': ParamSpec(1000.0, 'integration rate (Hz)', positive),
    'publish_rate': ParamSpec(100.0, 'joint_states (and /clock) rate (Hz); the integration '
                              'steps that are due run in one batch at this rate', positive),
    'integrator': ParamSpec('semi_implicit_euler', 'semi_implicit_euler or rk4',
                            one_of('semi_implicit_euler', 'rk4')),
    'command_joints': ParamSpec([], 'joint order of ~/effort_commands and initial_positions; '
                                'empty: every single-DoF joint in model order'),
    'initial_positions': ParamSpec([], 'start (and reset) positions in command_joints order; '
                                   'empty: all zero', finite_vector()),
    'command_timeout': ParamSpec(0.1, 's after which a command counts as zero torque',
                                 positive),
    'publish_clock': ParamSpec(False, 'publish /clock with the simulated time (joint_states '
                               'are then stamped with it)'),
    'wait_for_command': ParamSpec(False, 'hold the initial state (time stopped) until the '
                                  'first command arrives, e.g. while a controller starts'),
}


@dataclasses.dataclass(frozen=True)
class Runtime:
    loaded: LoadedModel
    command_slots: np.ndarray     # slots (in loaded.joint_names) of command_joints
    command_names: tuple[str, ...]
    q0: np.ndarray                # initial full configuration (nq)
    state: dict                   # mutable: 'q', 'v', 'cmd' (per joint slot), 'cmd_time'


class SimNode(RbdNode):
    NODE_NAME = 'rbd_sim'
    PARAMS = PARAMS

    def __init__(self, **kwargs):
        self.runtime: Runtime | None = None
        super().__init__(**kwargs)
        p = self.params
        self.dt = 1.0 / p['rate']
        self.substeps = max(1, round(p['rate'] / p['publish_rate']))
        self.sim_time = 0.0
        self.steps = 0
        self.pub_js = self.create_publisher(JointState, 'joint_states', OUTPUT_QOS)
        self.pub_clock = self.create_publisher(Clock, '/clock', OUTPUT_QOS) \
            if p['publish_clock'] else None
        self.pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', OUTPUT_QOS)
        self.create_subscription(Float64MultiArray, '~/effort_commands',
                                 self.guard(self.on_effort_commands), COMMAND_QOS)
        self.create_subscription(JointState, '~/joint_commands',
                                 self.guard(self.on_joint_commands), COMMAND_QOS)
        self.create_service(Trigger, '~/reset', self.on_reset)
        self._wall_t0 = time.monotonic()
        self.create_timer(1.0 / p['publish_rate'], self.guard(self.tick))
        self.create_timer(1.0, self.guard(self.publish_diagnostics))
        self.start_description()

    # -- model ---------------------------------------------------------------------------
    def model_prepared(self, loaded: LoadedModel) -> None:
        names, slots = loaded.command_joint_slots(self.params['command_joints'])
        init = self.params['initial_positions']
        if init and len(init) != len(names):
            raise ValueError(f'initial_positions has {len(init)} values for '
                             f'{len(names)} command_joints')
        qj = np.zeros(len(loaded.joint_names))
        if init:
            qj[slots] = init
        clamped = np.clip(qj, loaded.lower, loaded.upper)
        if not np.array_equal(clamped, qj):
            self.get_logger().warning('initial_positions outside the URDF limits: clamped')
        q0 = loaded.full_q(clamped)
        self._next_runtime = Runtime(loaded=loaded, command_slots=slots,
                                     command_names=names, q0=q0,
                                     state=self._fresh_state(loaded, q0))

    @staticmethod
    def _fresh_state(loaded: LoadedModel, q0: np.ndarray) -> dict:
        return {'q': q0.copy(), 'v': np.zeros(loaded.nv),
                'cmd': np.zeros(len(loaded.joint_names)), 'cmd_time': None}

    def model_changed(self, loaded: LoadedModel) -> None:
        self.runtime = self._next_runtime   # the swap: one assignment (state starts anew)
        self._next_runtime = None

    # -- commands ------------------------------------------------------------------------
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
        cmd = np.zeros(len(rt.loaded.joint_names))
        cmd[rt.command_slots] = data
        rt.state['cmd'] = cmd
        rt.state['cmd_time'] = time.monotonic()
        self.stats.last_input_time = rt.state['cmd_time']

    def on_joint_commands(self, msg: JointState) -> None:
        self.stats.received += 1
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'command before any robot_description')
        if len(msg.effort) != len(msg.name):
            raise Rejected('length_mismatch',
                           f'{len(msg.name)} names but {len(msg.effort)} efforts')
        eff = np.asarray(msg.effort, dtype=float)
        if not all_finite(eff):
            raise Rejected('non_finite', 'NaN or inf in joint_commands')
        cmd = rt.state['cmd'].copy() if rt.state['cmd_time'] is not None \
            else np.zeros(len(rt.loaded.joint_names))
        for name, value in zip(msg.name, eff):
            i = rt.loaded.name_to_slot.get(name)
            if i is None:
                self.stats.unknown_names[name] += 1
            else:
                cmd[i] = value
        rt.state['cmd'] = cmd
        rt.state['cmd_time'] = time.monotonic()
        self.stats.last_input_time = rt.state['cmd_time']

    def on_reset(self, request, response):
        rt = self.runtime
        if rt is None:
            response.success, response.message = False, 'no model'
            return response
        rt.state.update(self._fresh_state(rt.loaded, rt.q0))
        response.success, response.message = True, 'state reset to initial_positions'
        return response

    # -- simulation ----------------------------------------------------------------------
    def _fd(self, model, q, v, tau):
        return rbd.forward_dynamics(model, q, v, tau)

    def _step(self, lm: LoadedModel, q, v, tau):
        dt, model = self.dt, lm.model
        if self.params['integrator'] == 'rk4':
            a1 = self._fd(model, q, v, tau)
            v2 = v + 0.5 * dt * a1
            a2 = self._fd(model, rbd.integrate(model, q, v, 0.5 * dt), v2, tau)
            v3 = v + 0.5 * dt * a2
            a3 = self._fd(model, rbd.integrate(model, q, v2, 0.5 * dt), v3, tau)
            v4 = v + dt * a3
            a4 = self._fd(model, rbd.integrate(model, q, v3, dt), v4, tau)
            q_new = rbd.integrate(model, q, (v + 2 * v2 + 2 * v3 + v4) / 6.0, dt)
            v_new = v + dt / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
        else:   # semi-implicit (symplectic) Euler
            v_new = v + dt * self._fd(model, q, v, tau)
            q_new = rbd.integrate(model, q, v_new, dt)
        # URDF position limits stop the joint.
        qj, vj = q_new[lm.q_index], v_new[lm.v_index]
        low, high = qj < lm.lower, qj > lm.upper
        if low.any() or high.any():
            qj = np.clip(qj, lm.lower, lm.upper)
            vj = np.where((low & (vj < 0)) | (high & (vj > 0)), 0.0, vj)
            q_new[lm.q_index], v_new[lm.v_index] = qj, vj
        return q_new, v_new

    def applied_effort(self, rt: Runtime) -> np.ndarray:
        st = rt.state
        if st['cmd_time'] is None or \
                time.monotonic() - st['cmd_time'] > self.params['command_timeout']:
            return np.zeros(len(rt.loaded.joint_names))
        return st['cmd']

    def tick(self) -> None:
        rt = self.runtime
        if rt is None:
            return
        lm, st = rt.loaded, rt.state
        tau_j = self.applied_effort(rt)
        holding = self.params['wait_for_command'] and st['cmd_time'] is None
        if not holding:
            tau = lm.full_v(tau_j)
            t0 = time.perf_counter()
            q, v = st['q'], st['v']
            for _ in range(self.substeps):
                q, v = self._step(lm, q, v, tau)
            self.stats.compute_s.append(time.perf_counter() - t0)
            if not all_finite(q, v):
                self.stats.non_finite_outputs += 1
                self.stats.last_error = 'simulation diverged: state reset'
                self.get_logger().error('simulation diverged (NaN/inf): state reset',
                                        throttle_duration_sec=2.0)
                st.update(self._fresh_state(lm, rt.q0))
                return
            st['q'], st['v'] = q, v
            self.steps += self.substeps
            self.sim_time = self.steps * self.dt
        self.publish_state(rt, tau_j)

    def publish_state(self, rt: Runtime, tau_j: np.ndarray) -> None:
        lm, st = rt.loaded, rt.state
        if self.pub_clock is not None:
            sec = int(self.sim_time)
            stamp = Clock().clock
            stamp.sec, stamp.nanosec = sec, int(round((self.sim_time - sec) * 1e9)) % 1_000_000_000
            self.pub_clock.publish(Clock(clock=stamp))
        else:
            stamp = self.get_clock().now().to_msg()
        qj, vj = st['q'][lm.q_index], st['v'][lm.v_index]
        names, pos, vel, eff = list(lm.joint_names), list(qj), list(vj), list(tau_j)
        if lm.mimic_names:   # mimic joints follow their leaders
            lead = np.maximum(lm.mimic_leader_slot, 0)
            names += lm.mimic_names
            pos += list(lm.mimic_positions(qj))
            vel += list(lm.mimic_multiplier * vj[lead])
            eff += [0.0] * len(lm.mimic_names)
        self.pub_js.publish(joint_state(stamp, names, pos, vel, eff))
        self.stats.published += 1

    def publish_diagnostics(self) -> None:
        rt = self.runtime
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        extra = {'sim_time': f'{self.sim_time:.3f}', 'steps': str(self.steps),
                 'integrator': self.params['integrator'],
                 'real_time_factor': f'{self.sim_time / max(time.monotonic() - self._wall_t0, 1e-9):.3f}'}
        stale = False
        if rt is not None:
            t = rt.state['cmd_time']
            stale = t is None or time.monotonic() - t > self.params['command_timeout']
            extra['command'] = 'none yet' if t is None else f'{time.monotonic() - t:.3f} s old'
        status = diagnostic_status(self.get_fully_qualified_name(), rt.loaded if rt else None,
                                   self.stats, False, extra)
        status.values.append(type(status.values[0])(key='command_stale',
                                                    value=str(stale).lower()))
        arr.status = [status]
        self.pub_diag.publish(arr)


def main(args=None) -> int:
    return run_node(SimNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
