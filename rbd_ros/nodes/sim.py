"""sim_node (node ``rbd_sim``): a simulated robot to test controllers against (the ROS adapter of
rbd_ros.simulation.Simulator: real joints, RK4, saturation, friction, damping, limits).

Every 1/``publish_rate`` s of simulated time it publishes ``joint_states`` (position, velocity,
and the applied, saturated effort) and, with ``publish_clock``, ``/clock``; it integrates at
``rate`` Hz in between. Commands, summed over the inputs that are fresh (younger than
``command_timeout`` of simulated time): ``~/effort_commands`` (Float64MultiArray in
``command_joints`` order) and ``~/joint_commands`` (sensor_msgs/JointState by name, any of
position, velocity, effort filled, as topic_based_ros2_control and Isaac Sim send them:
effort is applied as it is, position and velocity through ``position_kp``/``position_kd`` and
``velocity_kp``, at every physics step inside the drive, implicitly). ``~/external_wrench``
(geometry_msgs/WrenchStamped) pushes a link.
With ``floating_base: true`` the robot's root link moves freely, on a ground plane (contacts
from the URDF's collision shapes and ``contact_points``): it publishes ``~/base_state``
(nav_msgs/Odometry, with each joint_states' stamp), the ``world_frame`` -> root link transform
on /tf, ``~/contact_wrenches`` (geometry_msgs/WrenchStamped, one per link touching the ground)
and ``~/contact_markers`` (visualization_msgs/MarkerArray, arrows for RViz).
Time: ``real_time_factor`` (1 real time, 0 as fast as possible) or ``lockstep`` (one publish
period per command received after each joint_states). Services: ``~/pause`` (SetBool),
``~/step`` (Trigger: ``step_count`` periods while paused), ``~/reset`` (Trigger: the initial
state); topics ``~/set_state`` (JointState) and ``~/set_base_state`` (Odometry) set a given
state. Everything: docs/ros.md.

This file is the ROS side: parameters, subscriptions, services, timekeeping and messages. The
command mux is rbd_ros/simulation/commands.py, what is reported (noise, delay, contact
wrenches) rbd_ros/simulation/outputs.py; the per-period outputs go out as bytes serialized
once per model (ros/wire.py), the contact outputs only while someone reads them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import time
import warnings

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from geometry_msgs.msg import Point, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import Marker, MarkerArray

import rbd_ros.dynamics as rbd

from rbd_ros.ros.joint_states import Rejected
from rbd_ros.ros.messages import odometry_to_base
from rbd_ros.ros.node import COMMON_PARAMS, MODEL_PARAMS, RbdNode, node_main
from rbd_ros.ros.params import (ParamSpec, finite_vector, non_negative, one_of,
                                per_command_joint, positive, unique_names)
from rbd_ros.ros.qos import COMMAND_QOS, OUTPUT_QOS, TF_QOS
from rbd_ros.ros.robot import Robot
from rbd_ros.ros.wire import (Output, SerializedMessage, clock_out, joint_state_out,
                              odometry_out, transform_out, wrench_out)
from rbd_ros.simulation import INTEGRATORS, POSITION_LIMITS, SimOptions, Simulator
from rbd_ros.simulation.commands import (COMMAND_BOUND, CommandMux, CommandRefused, Gains,
                                         check_bound, state_command, wrench_command)
from rbd_ros.simulation.contact import ContactPoint, ground_frame
from rbd_ros.simulation.outputs import (Every, Mimic, Sample, StateSensor, all_finite,
                                        contact_arrows, link_wrenches, stamp)


def _gains(value) -> None:
    finite_vector(minimum=0.0, maximum=COMMAND_BOUND)(value)
    if not value:
        raise ValueError('must have one value (for every joint) or one per command joint')


#: Hz of simulated time at which ~/contact_markers are published (at most)
MARKER_RATE = 30.0

#: publish periods a late tick catches up at most (the timer skips the ones it missed)
CATCH_UP_PERIODS = 10


def _finite_number(value) -> None:
    if not math.isfinite(value):
        raise ValueError(f'must be finite (got {value!r})')


def _ground_normal(value) -> None:
    ground_frame(value)


def _base_pose(value) -> None:
    if not len(value):
        return
    finite_vector(7)(value)
    norm = math.sqrt(sum(x * x for x in value[3:]))
    if abs(norm - 1.0) > 1e-3:
        raise ValueError(f'the quaternion [qx, qy, qz, qw] = {list(value[3:])} has norm '
                         f'{norm:.6g}: not a rotation (a unit quaternion; one off by rounding '
                         'is normalised)')


def _contact_points(value) -> None:
    for text in value:
        ContactPoint.parse(text)


def _divergence_bound(value) -> None:
    positive(value)
    if value > COMMAND_BOUND:
        raise ValueError(f'must be <= {COMMAND_BOUND:g} (got {value!r})')


PARAMS = {
    **COMMON_PARAMS,
    **MODEL_PARAMS,
    'gravity': ParamSpec('double_array', [0.0, 0.0, -9.81], 'gravity in the world frame (m/s^2)',
                         finite_vector(3)),
    'rate': ParamSpec('double', 1000.0, 'integration rate (Hz)', positive),
    'publish_rate': ParamSpec('double', 100.0, 'joint_states (and /clock) rate in simulated time '
                              '(Hz): the control period', positive),
    'integrator': ParamSpec('string', 'rk4', 'rk4 (energy to 1e-6) or semi_implicit_euler',
                            one_of(*INTEGRATORS)),
    'damping': ParamSpec('bool', True, 'apply the URDF <dynamics damping> (implicit)'),
    'friction': ParamSpec('bool', True, 'apply the URDF <dynamics friction> (Coulomb, with '
                          'stiction)'),
    'effort_limits': ParamSpec('bool', True, 'saturate commands at the URDF effort limits'),
    'velocity_limits': ParamSpec('bool', True, 'cap joint speeds at the URDF velocity limits'),
    'position_limits': ParamSpec('string', 'constraint', 'URDF position limits: constraint '
                                 '(inelastic stop), spring (stiff spring-damper) or off',
                                 one_of(*POSITION_LIMITS)),
    'armature': ParamSpec('double_array', [], 'reflected rotor inertia of the command joints '
                          '(kg m^2 or kg): one value for all or one per command joint; empty: '
                          'the URDF\'s drake:rotor_inertia, else none',
                          finite_vector(minimum=0.0)),
    'command_joints': ParamSpec('string_array', [], 'joint order of ~/effort_commands, '
                                'initial_positions, armature and the gains; empty: every '
                                'single-DoF joint in model order (closed loops: the actuated '
                                'joints)', unique_names),
    'initial_positions': ParamSpec('double_array', [], 'start (and reset) positions in '
                                   'command_joints order; empty: all zero', finite_vector()),
    'command_timeout': ParamSpec('double', 0.1, 's of simulated time after which a command '
                                 'input counts as zero', positive),
    'position_kp': ParamSpec('double_array', [100.0], 'N m/rad (N/m): position commands', _gains,
                             dynamic=True),
    'position_kd': ParamSpec('double_array', [10.0], 'N m s/rad: with position commands',
                             _gains, dynamic=True),
    'velocity_kp': ParamSpec('double_array', [10.0], 'N m s/rad: velocity commands', _gains,
                             dynamic=True),
    'real_time_factor': ParamSpec('double', 1.0, 'simulated s per wall s; 0: as fast as '
                                  'possible', non_negative),
    'lockstep': ParamSpec('bool', False, 'advance one publish period only when a command '
                          'arrived after the last joint_states (reproducible closed loops)'),
    'step_count': ParamSpec('int', 1, 'publish periods one ~/step call advances', positive,
                            dynamic=True),
    'publish_clock': ParamSpec('bool', False, 'publish /clock with the simulated time '
                               '(joint_states are then stamped with it)'),
    'wait_for_command': ParamSpec('bool', False, 'hold the initial state (time stopped) until '
                                  'the first command arrives, e.g. while a controller starts'),
    'joint_states_noise': ParamSpec('double_array', [0.0, 0.0], 'standard deviations of '
                                    'Gaussian noise on published positions and velocities',
                                    finite_vector(2, minimum=0.0)),
    'joint_states_delay': ParamSpec('double', 0.0, 's of simulated time between a state and '
                                    'its publication', non_negative),
    'noise_seed': ParamSpec('int', 0, 'seed of the joint_states noise'),
    'external_wrench_duration': ParamSpec('double', 0.1, 's of simulated time a '
                                          '~/external_wrench acts; 0: until the next one',
                                          non_negative),
    'divergence_bound': ParamSpec('double', 1e4, 'a joint speed (rad/s or m/s) or position '
                                  'beyond this, or a NaN, is a diverged simulation: the state '
                                  'is reset to the initial one, time runs on (at most 1e12)',
                                  _divergence_bound),
    # the floating base and the ground
    'floating_base': ParamSpec('bool', False, 'the root link moves freely (q[:7] pose, v[:6] '
                               'twist), on the ground; publishes ~/base_state and world -> root '
                               'on /tf'),
    'initial_base_pose': ParamSpec('double_array', [], 'start (and reset) pose of the root '
                                   'link, [x, y, z, qx, qy, qz, qw] in world_frame; empty: at '
                                   'the origin, raised so that its lowest contact point touches '
                                   'the ground', _base_pose),
    'initial_base_velocity': ParamSpec('double_array', [], 'start (and reset) twist of the root '
                                       'link, [vx, vy, vz, wx, wy, wz] in its own frame (as '
                                       "Odometry's twist); empty: at rest",
                                       lambda v: finite_vector(6)(v) if len(v) else None),
    'world_frame': ParamSpec('string', 'world', 'frame of ~/base_state\'s pose and the parent '
                             'of the root link on /tf'),
    'ground': ParamSpec('bool', True, 'with floating_base: a ground plane the robot stands on '
                        '(a fixed-base robot has none: its base is the world)'),
    'ground_height': ParamSpec('double', 0.0, 'the ground is the plane ground_normal . x = '
                               'ground_height (m, world frame)', _finite_number),
    'ground_normal': ParamSpec('double_array', [0.0, 0.0, 1.0], 'the ground\'s normal (world '
                               'frame; normalised): tilt it for a slope', _ground_normal),
    'friction_coefficient': ParamSpec('double', 1.0, 'Coulomb friction coefficient mu at every '
                                      'contact (a friction cone; stiction included)',
                                      non_negative),
    'contact_stiffness': ParamSpec('double', 1e5, 'N/m per contact point (0.1 mm under 10 N)',
                                   non_negative),
    'contact_damping': ParamSpec('double', 1e3, 'N s/m per contact point', non_negative),
    'collision_contacts': ParamSpec('bool', True, 'the URDF <collision> spheres, boxes, '
                                    'cylinders and capsules touch the ground (meshes do not)'),
    'contact_points': ParamSpec('string_array', [], 'more contact points: "link x y z radius" '
                                '(link frame, m), e.g. a foot of a robot whose collision '
                                'shapes are meshes', _contact_points),
}


@dataclasses.dataclass(frozen=True)
class Runtime:
    robot: Robot
    sim: Simulator                 # the state (q, v, t) and the step
    command_names: tuple[str, ...]
    command_slots: np.ndarray      # slots (in robot.joint_names) of command_joints
    q0: np.ndarray                 # initial configuration (nq; the base's pose first)
    v0: np.ndarray                 # initial velocity (nv; zero but for the base's twist)
    mux: CommandMux                # the command inputs (simulation/commands.py)
    mimic: Mimic                   # the mimic joints joint_states carries after the others
    effort_limit: np.ndarray       # of the JointState joints
    weight: float                  # N: the contact arrows' scale
    # the per-period outputs, serialized once with their names and frames (ros/wire.py)
    joint_states_out: SerializedMessage
    base_out: SerializedMessage | None
    base_tf_out: SerializedMessage | None
    wrench_outs: dict              # link -> its contact wrench's template, made when first used
    passive: frozenset = frozenset()   # a closed loop's joints that follow its motors


def held_joints(model) -> list[str]:
    """The joints a state of a robot with closed loops keeps as given when the loops are
    closed (Simulator.set_state): its motors and its floating base; the passive joints
    follow."""
    return list(model.actuated_joints) + [j.name for j in model.joints if j.type == 'floating'
                                          and j.nv]


#: rad (m): a set_state's passive joint the loops put farther than this from where it asked
PASSIVE_TOLERANCE = 1e-6


def _turned(rt, name, difference):
    """A difference of a joint's positions, whole turns left out for an angle."""
    if rt.robot.model.joint[name].type in ('revolute', 'continuous'):
        return math.remainder(difference, 2.0 * math.pi)
    return difference


def refuse_passive(rt, names, what) -> None:
    """Rejected (passive_joints) when a command or state names a loop's passive joint: it would
    be dropped in silence (the loops put it back where the motors say)."""
    named = [name for name in names if name in rt.passive]
    if named:
        raise Rejected('passive_joints', f'{what} names {named}, passive joints of the closed '
                       'loops, which follow the motors: command those '
                       f'({", ".join(rt.robot.model.actuated_joints)})')


class SimNode(RbdNode):
    CLOSED_LOOPS_REFUSAL = None      # the simulator runs them (equality rows)
    NODE_NAME = 'rbd_sim'
    PARAMS = PARAMS
    ACCEPTS_PAYLOAD = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        p = self.params
        self.substeps = max(1, round(p['rate'] / p['publish_rate']))
        self.dt = 1.0 / (self.substeps * p['publish_rate'])
        self.sim_time = 0.0
        self.steps = 0
        self.divergence_resets = 0
        self.unconverged_solves = 0     # constraint solves that ran out of solver_iterations
        self._unconverged_then = 0      # ... at the last /diagnostics
        self._unconverged_in_period = 0     # ... between the last two /diagnostics
        self.saturated = 0              # commands clipped at an effort limit
        self.paused = False
        self.awaiting_command = False   # lockstep: a state was published, no command since
        self.wrench = None              # ({link: wrench}, end time or None)
        self.sensor = StateSensor(p['joint_states_noise'], p['joint_states_delay'],
                                  p['noise_seed'])
        self._markers_due = Every(1.0 / MARKER_RATE)
        self._gains = None              # Gains of the runtime's command joints (parameters)
        self._drives_set = (None, None)     # (simulator, Drives) last given to it
        self._pace = None               # (wall time, periods run since) of real-time pacing
        self._rtf_window = (time.monotonic(), 0.0)   # (wall, simulated) time of the last check
        self._slow = None                   # the real-time factor when short of the target
        # the per-period outputs go out as bytes (ros/wire.py); joint_states, /clock, the base
        # state and /tf always, the contact outputs only while someone reads them
        self.pub_js = Output(self, JointState, 'joint_states', OUTPUT_QOS)
        self.pub_clock = Output(self, Clock, '/clock', OUTPUT_QOS) \
            if p['publish_clock'] else None
        self._clock_out = clock_out()
        # as bytes, walked with bounds checks before deserializing (cdr.py)
        self.subscribe_checked(Float64MultiArray, '~/effort_commands', self.on_effort_commands,
                               COMMAND_QOS)
        self.subscribe_checked(JointState, '~/joint_commands', self.on_joint_commands,
                               COMMAND_QOS)
        self.subscribe_checked(WrenchStamped, '~/external_wrench', self.on_external_wrench,
                               COMMAND_QOS)
        self.subscribe_checked(JointState, '~/set_state', self.on_set_state, COMMAND_QOS)
        if p['floating_base']:
            self.subscribe_checked(Odometry, '~/set_base_state', self.on_set_base_state,
                                   COMMAND_QOS)
            self.pub_base = Output(self, Odometry, '~/base_state', OUTPUT_QOS)
            self.pub_tf = Output(self, TFMessage, '/tf', TF_QOS)
            self.pub_contacts = Output(self, WrenchStamped, '~/contact_wrenches', OUTPUT_QOS)
            self.pub_markers = Output(self, MarkerArray, '~/contact_markers', OUTPUT_QOS)
        self.create_service(Trigger, '~/reset', self.on_reset)
        self.create_service(SetBool, '~/pause', self.on_pause)
        self.create_service(Trigger, '~/step', self.on_step)
        self._wall_t0 = time.monotonic()
        self.start()
        if p['lockstep']:      # the first state, again, until a controller answers it
            self._announce = self.create_timer(0.5, self.guard(self.announce))
        else:
            rtf = p['real_time_factor']
            self.create_timer(0.0 if rtf == 0 else 1.0 / (p['publish_rate'] * rtf),
                              self.guard(self.tick))

    # -- model ---------------------------------------------------------------------------------
    def prepare(self, robot: Robot) -> Runtime:
        p = self.params
        command_joints = p['command_joints']
        if not command_joints and robot.model.actuated_joints and robot.model.constraint_names:
            command_joints = list(robot.model.actuated_joints)   # a closed loop's motors
        names, slots = robot.joint_slots(command_joints)
        passive = rbd.passive_joints(robot.model)
        if passive & set(names):
            raise ValueError(f'command_joints names {[x for x in names if x in passive]}, '
                             f'passive joints of the closed loops of {robot.model.name!r}, which '
                             'follow its motors: command those '
                             f'({", ".join(robot.model.actuated_joints) or "none named"})')
        n = len(names)
        for name in ('initial_positions', 'armature', 'position_kp', 'position_kd',
                     'velocity_kp'):
            values = p[name]
            allowed = (0, n) if name in ('initial_positions', 'armature') else (1, n)
            if len(values) not in allowed and not (name == 'armature' and len(values) == 1):
                raise ValueError(f'{name} has {len(values)} values for the {n} command_joints '
                                 f'({", ".join(names)})')
        model = robot.model
        if p['armature']:     # the command joints' armature from the parameter, the rest kept
            armature = {j.name: float(model.armature[j.v_index]) for j in model.joints
                        if j.nv == 1 and j.v_index is not None}
            armature.update(zip(names, np.broadcast_to(p['armature'], (n,)).tolist()))
            model = model.with_armature(armature)
            robot = dataclasses.replace(robot, model=model)
        qj = np.zeros(len(robot.joint_names))
        if p['initial_positions']:
            qj[slots] = p['initial_positions']
        clamped = np.clip(qj, robot.lower, robot.upper)
        if not np.array_equal(clamped, qj):
            self.get_logger().warning('initial_positions outside the URDF limits: clamped')
        q0 = robot.full_q(clamped)
        v0 = np.zeros(robot.nv)
        floating = p['floating_base']
        pose = np.array(p['initial_base_pose'], dtype=float)
        if floating and len(pose):          # (else the identity, put down on the ground)
            q0[:7] = pose
            q0[3:7] /= np.linalg.norm(pose[3:])
        try:
            points = tuple(ContactPoint.parse(t) for t in p['contact_points'])
            options = SimOptions(
                dt=self.dt, integrator=p['integrator'], damping=p['damping'],
                friction=p['friction'], effort_limits=p['effort_limits'],
                velocity_limits=p['velocity_limits'], position_limits=p['position_limits'],
                divergence_bound=p['divergence_bound'], ground=floating and p['ground'],
                ground_height=p['ground_height'], ground_normal=tuple(p['ground_normal']),
                friction_coefficient=p['friction_coefficient'],
                contact_stiffness=p['contact_stiffness'], contact_damping=p['contact_damping'],
                collision_contacts=p['collision_contacts'], contact_points=points)
            with warnings.catch_warnings(record=True) as said:   # (a start under the ground)
                warnings.simplefilter('always')
                sim = Simulator(model, q0, v0, options=options,
                                place_on_ground=floating and not len(pose))
            for warning in said:
                self.get_logger().warning(f'initial_base_pose: {warning.message}')
        except ValueError as exc:     # (contact_points naming a link this robot lacks, ...)
            name = ('contact_points' if 'contact point' in str(exc) else
                    'contact_stiffness' if 'close_loops' not in str(exc) else
                    'initial_positions' if p['initial_positions'] else
                    'initial_positions (not set: the command joints at 0)')
            raise ValueError(f'{name}: {exc}') from None
        q0, v0 = sim.q, sim.v           # (closed on the loops, the motors where they were put)
        if floating:
            if p['initial_base_velocity']:
                v0[:6] = p['initial_base_velocity']
            sim.set_state(q0, v0, held_joints(model))
            q0, v0 = sim.q, sim.v
            for note in sim.notes:
                self.get_logger().info(f'contacts: {note}')
            if sim.ground and not sim.points:
                why = ('collision_contacts is false and contact_points empty'
                       if not p['collision_contacts'] else
                       'its collision shapes are meshes or absent; give contact_points '
                       '"link x y z radius"')
                self.get_logger().warning('floating_base with a ground but no contact points: '
                                          f'the robot falls through the ground ({why})')
            elif sim.ground:
                links = sorted({c.link for c in sim.points})
                self.get_logger().info(f'ground contact: {len(sim.points)} points on '
                                       f'{len(links)} link{"s" if len(links) > 1 else ""} '
                                       f'({", ".join(links[:8])}'
                                       f'{", ..." if len(links) > 8 else ""})')
        else:
            ignored = [name for name in ('contact_points', 'initial_base_pose',
                                         'initial_base_velocity') if p[name]]
            if ignored:
                self.get_logger().warning(f'{", ".join(ignored)} given without floating_base: '
                                          'true: ignored (a fixed-base robot has no ground)')
        world, root = p['world_frame'], model.root_link
        return Runtime(
            robot=robot, sim=sim, command_names=names, command_slots=slots, q0=q0, v0=v0,
            mux=CommandMux(len(robot.joint_names), slots),
            passive=passive,
            mimic=Mimic(robot.mimic_leader_slot, robot.mimic_multiplier, robot.mimic_offset),
            effort_limit=robot.effort_limit,
            weight=model.total_mass * float(np.linalg.norm(model.gravity)),
            joint_states_out=joint_state_out(robot.joint_names + robot.mimic_names,
                                             'position', 'velocity', 'effort'),
            base_out=odometry_out(world, root) if floating else None,
            base_tf_out=transform_out(world, root) if floating else None, wrench_outs={})

    def carry_state(self, old: Runtime, new: Runtime) -> Runtime:
        """A payload changed the robot's inertia, not its state: the motion and the commands
        go on from where they were."""
        new.sim.set_state(old.sim.q, old.sim.v, held_joints(new.sim.model))
        return dataclasses.replace(new, mux=old.mux)

    def runtime_changed(self, runtime: Runtime) -> None:
        runtime.sim.t = self.sim_time          # simulated time runs on across a model swap
        self._gains = None
        self.sensor.clear()

    def parameter_changed(self, name: str, value) -> None:
        if name in ('position_kp', 'position_kd', 'velocity_kp'):
            self._gains = None

    # -- commands in ---------------------------------------------------------------------------
    def _command_arrived(self, rt: Runtime) -> None:
        self.stats.last_input_time = time.monotonic()
        if self.params['lockstep'] and self.awaiting_command and not self.paused:
            self.awaiting_command = False
            self.advance(rt)

    def on_effort_commands(self, msg: Float64MultiArray) -> None:
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'command before any robot_description')
        with refused_as_rejected():
            rt.mux.effort_commands(msg.data, self.sim_time)
        self._command_arrived(rt)

    def on_joint_commands(self, msg: JointState) -> None:
        """By name; each of position, velocity, effort either empty (not commanded) or one
        value per name. Joints not named keep this input's earlier command."""
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'command before any robot_description')
        refuse_passive(rt, msg.name, 'joint_commands')
        with refused_as_rejected():
            unknown = rt.mux.joint_commands(msg.name, rt.robot.slot, msg.position, msg.velocity,
                                            msg.effort, self.sim_time)
        if unknown:
            self.stats.unknown_names(unknown)
        self._command_arrived(rt)

    def on_external_wrench(self, msg: WrenchStamped) -> None:
        """A wrench [f; tau] on the link named by header.frame_id, in that link's frame,
        about its origin (the core's f_ext), for external_wrench_duration s."""
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'wrench before any robot_description')
        link = msg.header.frame_id
        if link not in rt.robot.model.frame_index:
            raise Rejected('unknown_link', f'external_wrench on unknown link {link!r}')
        f, t = msg.wrench.force, msg.wrench.torque
        with refused_as_rejected():
            wrench = wrench_command([f.x, f.y, f.z, t.x, t.y, t.z])
        duration = self.params['external_wrench_duration']
        self.wrench = ({link: wrench}, self.sim_time + duration if duration > 0 else None)

    def on_set_state(self, msg: JointState) -> None:
        """Set positions (and velocities) by name; joints not named keep theirs."""
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'state before any robot_description')
        with refused_as_rejected():
            slots, pos, vel = state_command(msg.name, msg.position, msg.velocity,
                                            rt.robot.slot, self.params['divergence_bound'])
        q, v = rt.sim.q, rt.sim.v
        q[rt.robot.q_index[slots]] = pos
        v[rt.robot.v_index[slots]] = vel
        hold = held_joints(rt.sim.model)
        try:        # (a closed loop: the other joints follow the motors)
            q, v = rt.sim.closed_state(q, v, hold)
        except ValueError as exc:
            raise Rejected('loops_open', f'set_state: {exc}') from None
        moved = [(name, p, q[rt.robot.q_index[k]]) for name, k, p in zip(msg.name, slots, pos)
                 if name in rt.passive
                 and abs(_turned(rt, name, q[rt.robot.q_index[k]] - p)) > PASSIVE_TOLERANCE]
        if moved:   # (a passive joint alone, or one the motors put elsewhere: not silently)
            name, asked, put = moved[0]
            raise Rejected('passive_joints', f'set_state: the loops put passive joint {name!r} at '
                           f'{put:.6g}, not {asked:.6g}: it follows the motors; set those '
                           f'({", ".join(rt.robot.model.actuated_joints)})')
        rt.sim.q, rt.sim.v = q, v        # (closed above: set as they are)
        self.sensor.clear()

    def on_set_base_state(self, msg: Odometry) -> None:
        """Set the floating base's pose (world frame) and twist (base frame), as ~/base_state
        reports them; the joints keep theirs."""
        rt = self.runtime
        if rt is None:
            raise Rejected('no_model', 'state before any robot_description')
        o = msg.pose.pose.orientation
        norm = float(np.linalg.norm([o.x, o.y, o.z, o.w]))
        if abs(norm - 1.0) > 1e-3:
            raise Rejected('bad_quaternion', f'set_base_state orientation has norm {norm:.6g}: '
                           'not a rotation (a unit quaternion; one off by rounding is '
                           'normalised)')
        world, root = self.params['world_frame'], rt.robot.model.root_link
        if msg.header.frame_id not in ('', world) or msg.child_frame_id not in ('', root):
            raise Rejected('wrong_frame', f'set_base_state gives {msg.child_frame_id!r} in '
                           f'{msg.header.frame_id!r}: this simulator\'s base is {root!r} in '
                           f'{world!r} (or leave both empty)')
        base_q, base_v = odometry_to_base(msg)
        with refused_as_rejected():
            check_bound(np.concatenate([base_q[:3], base_v]), 'set_base_state',
                        self.params['divergence_bound'])
        q, v = rt.sim.q, rt.sim.v
        q[:7], v[:6] = base_q, base_v
        rt.sim.set_state(q, v, held_joints(rt.sim.model))
        self.sensor.clear()

    # -- services ------------------------------------------------------------------------------
    def on_reset(self, request, response):
        rt = self.runtime
        if rt is None:
            response.success, response.message = False, 'no model'
            return response
        rt.sim.set_state(rt.q0, rt.v0, held_joints(rt.sim.model))
        self.wrench = None
        self.sensor.clear()
        response.success = True
        response.message = (f'state reset to initial_positions'
                            f'{" and initial_base_pose" if self.params["floating_base"] else ""}'
                            f' at t = {self.sim_time:.6f} s')
        return response

    def on_pause(self, request, response):
        self.paused = bool(request.data)
        response.success = True
        response.message = f'{"paused" if self.paused else "running"} at t = {self.sim_time:.6f} s'
        if not self.paused and self.params['lockstep'] and self.runtime is not None:
            self.publish_state(self.runtime)
        return response

    def on_step(self, request, response):
        rt = self.runtime
        if rt is None or not self.paused:
            response.success = False
            response.message = 'no model' if rt is None else 'not paused: call ~/pause first'
            return response
        for _ in range(self.params['step_count']):
            self.advance(rt, force=True)
        response.success = True
        response.message = f't = {self.sim_time:.6f} s'
        return response

    # -- simulation ----------------------------------------------------------------------------
    def set_drives(self, rt: Runtime) -> None:
        """The fresh inputs, summed (CommandMux.drives), into the simulator's drives; given
        again only when they changed (a new command, one timing out, new gains)."""
        if self._gains is None:
            n = len(rt.robot.joint_names)
            self._gains = Gains(*(per_command_joint(self.params[name], rt.command_slots, n)
                                  for name in ('position_kp', 'position_kd', 'velocity_kp')))
        drives = rt.mux.drives(self.sim_time, self.params['command_timeout'], self._gains)
        sim = rt.sim
        if self._drives_set[0] is sim and self._drives_set[1] is drives:
            return
        full_v = rt.robot.full_v
        sim.set_effort(full_v(drives.effort))
        sim.set_drives(full_v(drives.kp), full_v(drives.kd), full_v(drives.q_ref),
                       full_v(drives.v_ref))
        self._drives_set = (sim, drives)

    def _holding(self, rt: Runtime) -> bool:
        return self.params['wait_for_command'] and not rt.mux.any_received()

    def tick(self) -> None:
        """Real-time (or as-fast-as-possible) mode: the publish periods due by the wall clock,
        usually one per timer tick. A tick timer that is always due (real_time_factor 0, or a
        step slower than the period) can starve the diagnostics timer: /diagnostics is then
        published from here."""
        rt = self.runtime
        if rt is None or self.paused or self._holding(rt):
            self._pace = None
            if rt is not None and not self.paused:
                self.advance(rt)        # (holding: the state again, time stopped)
        else:
            for _ in range(self._periods_due()):
                self.advance(rt)
        self.publish_diagnostics_when_due()

    def _periods_due(self) -> int:
        """Publish periods owed to the wall clock at real_time_factor (1 as fast as possible).
        A timer skips the periods it missed while the process was not running (a busy
        machine), so a late tick catches up, up to CATCH_UP_PERIODS; further behind, the node
        is slower than real time (/diagnostics says so) and the debt is forgotten."""
        rate = self.params['real_time_factor'] * self.params['publish_rate']
        if rate == 0.0:
            return 1
        now = time.monotonic()
        start, done = self._pace or (now - 1.0 / rate, 0)
        owed = round((now - start) * rate) - done
        count = min(max(owed, 0), CATCH_UP_PERIODS)
        self._pace = (now, 0) if owed > CATCH_UP_PERIODS else (start, done + count)
        return count

    def announce(self) -> None:
        """Lockstep: until the first command, republish the current state (a controller that
        starts late still gets it); afterwards, only commands advance time."""
        rt = self.runtime
        if rt is None:
            return
        if rt.mux.any_received():
            self._announce.cancel()
            return
        if not self.paused:
            self.publish_state(rt)
            self.awaiting_command = True

    def advance(self, rt: Runtime, force: bool = False) -> None:
        """One publish period: the steps that are due (one compiled call, two when an external
        wrench ends within the period), then joint_states."""
        if not force and self._holding(rt):
            self.publish_state(rt)
            return
        sim = rt.sim
        t0 = time.perf_counter()
        self.set_drives(rt)
        unconverged = sim.unconverged_solves
        left = self.substeps
        while left > 0:
            steps = left
            if self.wrench is not None:
                wrench, end = self.wrench
                if end is not None and sim.t >= end - 1e-12:
                    self.wrench = None
                    sim.set_wrenches(None)
                else:
                    sim.set_wrenches(wrench)
                    if end is not None:     # up to the wrench's end
                        steps = min(left, max(1, math.ceil((end - sim.t) / self.dt - 1e-9)))
            else:
                sim.set_wrenches(None)
            if not sim.advance(steps):
                self._reset_after_divergence(rt)
                break
            left -= steps
        self.stats.compute_s.append(time.perf_counter() - t0)
        self.steps += self.substeps
        self.sim_time = round(self.steps * self.dt, 12)
        sim.t = self.sim_time
        unconverged = sim.unconverged_solves - unconverged
        if unconverged:
            self._solver_ran_out(unconverged)
        applied = sim.applied[rt.robot.v_index]
        if self.params['effort_limits']:
            self.saturated += int(np.count_nonzero(
                np.abs(applied) >= rt.effort_limit * (1 - 1e-12)))
        self.publish_state(rt, applied)

    def _solver_ran_out(self, count: int) -> None:
        """Counts the constraint solves that ran out of solver_iterations
        (Simulator.unconverged_solves): in their steps friction, limits, drives and contacts
        held only approximately. /diagnostics goes to WARN for the periods that had some."""
        self.unconverged_solves += count
        self.get_logger().warning(
            f'the constraint solver (joint friction and limits, drives, contacts) ran out of '
            f'its Newton iterations before converging, {self.unconverged_solves} time'
            f'{"s" if self.unconverged_solves != 1 else ""} so far (last at t = '
            f'{self.sim_time:.3f} s): those steps hold them only approximately '
            '(unconverged_solves in /diagnostics)', throttle_duration_sec=10.0)

    def _reset_after_divergence(self, rt: Runtime) -> None:
        """Back to the initial state (commands kept: no wait_for_command hold again)."""
        self.divergence_resets += 1
        self.stats.last_error = f'simulation diverged at t = {self.sim_time:.3f} s: state reset'
        if self.divergence_resets == 1:    # logged once; counted in /diagnostics
            self.get_logger().error(f'simulation diverged (NaN, inf or beyond '
                                    f'divergence_bound {self.params["divergence_bound"]:g}) at '
                                    f't = {self.sim_time:.3f} s: state reset to the initial one; '
                                    'later resets are only counted (divergence_resets)')
        rt.sim.set_state(rt.q0, rt.v0, held_joints(rt.sim.model))

    # -- outputs -------------------------------------------------------------------------------
    def _contacts_read(self) -> bool:
        return self.pub_contacts.readers > 0 or self.pub_markers.readers > 0

    def publish_state(self, rt: Runtime, applied: np.ndarray | None = None) -> None:
        """The state of this period through the joint-state sensor (noise, delay), then what
        is due of it published."""
        robot, sim = rt.robot, rt.sim
        q, v = sim.q, sim.v
        effort = np.zeros(len(robot.joint_names)) if applied is None else applied
        base = contacts = None
        if self.params['floating_base']:
            base = (q[:7], v[:6])
            if applied is None:         # (held: no step, no contact)
                contacts = ([], np.zeros((0, 3)), np.zeros((0, 3)))
            elif self._contacts_read():
                contacts = sim.contact_arrays()
        for sample in self.sensor.read(self.steps, self.sim_time, q[robot.q_index],
                                       v[robot.v_index], effort, base, contacts):
            self._publish(rt, sample)
        if self.params['lockstep']:
            self.awaiting_command = True

    def _publish(self, rt: Runtime, sample: Sample) -> None:
        if self.pub_clock is not None:
            sec, nanosec = stamp(self.sim_time)
            self.pub_clock.publish(self._clock_out.fill(sec, nanosec))
            sec, nanosec = stamp(sample.t)
        else:
            sec, nanosec = self.get_clock().now().seconds_nanoseconds()
        if not all_finite(sample.position, sample.velocity, sample.effort,
                          *(sample.base or ())):
            # never publish NaN or inf (cannot happen: belt and braces)
            self.stats.non_finite_outputs += 1
            self.get_logger().error('non-finite joint_states not published',
                                    throttle_duration_sec=2.0)
            return
        position, velocity, effort = rt.mimic.joint_states(sample.position, sample.velocity,
                                                           sample.effort)
        self.pub_js.publish(rt.joint_states_out.fill(sec, nanosec, position, velocity, effort))
        self.stats.published += 1
        if sample.base is not None:
            q, v = sample.base
            self.pub_base.publish(rt.base_out.fill(sec, nanosec, q, v))
            self.pub_tf.publish(rt.base_tf_out.fill(sec, nanosec, q))
            self._publish_contacts(rt, sec, nanosec, sample.contacts)

    def _publish_contacts(self, rt: Runtime, sec: int, nanosec: int, contacts) -> None:
        """Per link touching the ground, the contact wrench on it (WrenchStamped: in the link's
        frame about its origin, as ~/external_wrench and the core's f_ext); RViz arrows at each
        point (world_frame; the robot's weight is 0.5 m), at MARKER_RATE. Nothing while nobody
        reads them."""
        if contacts is None:
            return
        points, at, force = contacts
        if self.pub_contacts.readers and len(points):
            links = [rt.sim.points[k].link for k in points]
            poses = rbd.frame_poses(rt.robot.model, rt.sim.q)
            for link, wrench in link_wrenches(links, at, force, poses):
                out = rt.wrench_outs.get(link)
                if out is None:
                    out = rt.wrench_outs[link] = wrench_out(link)
                self.pub_contacts.publish(out.fill(sec, nanosec, wrench))
        # (RViz needs no more: at 1 kHz they cost a third of a period)
        if self.pub_markers.readers and self._markers_due.due(self.sim_time):
            self.pub_markers.publish(serialize_message(self._markers(
                TimeMsg(sec=sec, nanosec=nanosec), contact_arrows(at, force, rt.weight))))

    def _markers(self, stamp_msg, arrows) -> MarkerArray:
        world = self.params['world_frame']
        markers = MarkerArray(markers=[Marker(action=Marker.DELETEALL)])
        markers.markers[0].header.frame_id = world
        for k, (start, tip) in enumerate(arrows):
            arrow = Marker(ns='contact_forces', id=k, type=Marker.ARROW, action=Marker.ADD)
            arrow.header.stamp, arrow.header.frame_id = stamp_msg, world
            arrow.points = [Point(x=float(start[0]), y=float(start[1]), z=float(start[2])),
                            Point(x=float(tip[0]), y=float(tip[1]), z=float(tip[2]))]
            arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.01, 0.02, 0.02
            arrow.color.r, arrow.color.g, arrow.color.a = 1.0, 0.3, 1.0
            arrow.pose.orientation.w = 1.0
            markers.markers.append(arrow)
        return markers

    # -- diagnostics ---------------------------------------------------------------------------
    def warning(self) -> str | None:
        parts = []
        if self._slow is not None:
            parts.append(f'running slower than real time: {self._slow:.2f}x of '
                         f'real_time_factor {self.params["real_time_factor"]:g} (lower '
                         'publish_rate or rate)')
        if self._unconverged_in_period:
            count = self._unconverged_in_period
            parts.append(f'the constraint solver ran out of iterations in {count} solve'
                         f'{"s" if count != 1 else ""} in the last '
                         f'{self.params["diagnostics_period"]:g} s: friction, limits, drives '
                         'and contacts held only approximately (raise solver_iterations, or '
                         'lower contact_stiffness or the rate)')
        return '; '.join(parts) or None

    def extra_diagnostics(self) -> dict:
        wall = max(time.monotonic() - self._wall_t0, 1e-9)
        self._unconverged_in_period = self.unconverged_solves - self._unconverged_then
        self._unconverged_then = self.unconverged_solves
        extra = {'sim_time': f'{self.sim_time:.3f}', 'steps': str(self.steps),
                 'divergence_resets': str(self.divergence_resets),
                 'unconverged_solves': str(self.unconverged_solves),
                 'unconverged_solves_last_period': str(self._unconverged_in_period),
                 'saturated_commands': str(self.saturated),
                 'paused': str(self.paused).lower(),
                 'integrator': self.params['integrator'],
                 'real_time_factor': f'{self.sim_time / wall:.3f}'}
        target = self.params['real_time_factor']
        wall_then, sim_then = self._rtf_window
        now = time.monotonic()
        if now - wall_then > 0.5:
            achieved = (self.sim_time - sim_then) / (now - wall_then)
            running = not (self.paused or self.params['lockstep'] or target == 0.0
                           or (self.runtime is not None and self._holding(self.runtime)))
            self._slow = achieved if running and achieved < 0.9 * target else None
            self._rtf_window = (now, self.sim_time)
        rt = self.runtime
        if rt is not None:
            fresh = rt.mux.fresh(self.sim_time, self.params['command_timeout'])
            extra['fresh_command_inputs'] = ','.join(fresh) or 'none'
            extra['command_stale'] = str(not fresh).lower()
        return extra


@contextlib.contextmanager
def refused_as_rejected():
    """A command the mux refuses, as the Rejected the node's guard counts."""
    try:
        yield
    except CommandRefused as exc:
        raise Rejected(exc.reason, exc.detail) from None


def main(args=None) -> int:
    return node_main(SimNode, args, executable='sim_node', description=__doc__.split('\n\n')[0])


if __name__ == '__main__':
    raise SystemExit(main())
