"""Closed kinematic loops as the nodes serve them (issue 29), ROS-free.

A robot whose description closes loops (``<constraint>``) is driven by its actuated joints: a
joint state needs the *held* joints (the actuated ones, and every joint outside the loops) and
the loops' passive joints follow, closed by Newton's method warm-started from the last closed
configuration (the robot moves little between two messages: one or two Jacobians). Its torques
are the actuated joints', from constrained inverse dynamics (RBDA 8.12); its velocities and
accelerations on the passive joints follow from K v = 0 and K a = k.

    closure = LoopClosure(model, joint_names, actuated)   # joint_names: the JointState joints
    q = closure.close(model, q)                 # ValueError (the core's) when it cannot close
    u = closure.gravity(model, q)               # per actuated joint, in ``actuated`` order
    u = closure.law_torques('computed_torque', model, q, v, q_ref, v_ref, a_ref, kp, kd, ...)

The model is an argument of every call (a payload swaps it; the structure stays).
"""
from __future__ import annotations

import numpy as np

import rbd_ros.dynamics as rbd
from rbd_ros.dynamics.closed_loops import CLOSE_TOLERANCE, MAX_STEP, jacobian_rank, loop_joints

from .laws import joint_friction_compensation, tracking_error

#: Newton iterations of the warm-started closing before close_loops (its line search, its
#: error naming the constraint) takes over
FAST_ITERATIONS = 8
#: a kept Newton step matrix is used while each step shrinks the residual this much
CHORD_RATE = 0.01
#: relative damping of the Newton step's (K K^T + mu I): redundant rows (a planar four-bar
#: closed by 3-D revolutes) make K K^T singular
STEP_DAMPING = 1e-12


def _undetermined(model, free) -> int | None:
    """How many degrees of freedom of the loops the joints outside ``free`` leave open: the
    number of free joints' velocity columns minus the rank of K's at the neutral pose, its
    loops closed (0: the free joints follow; None: the neutral pose does not close)."""
    try:
        q = rbd.close_loops(model, model.q_neutral, [])
    except ValueError:
        return None
    columns = [i for j in free for i in range(j.v_index, j.v_index + j.nv)]
    if not columns:
        return 0
    return len(columns) - jacobian_rank(rbd.constraint_jacobian(model, q)[:, columns])


class LoopClosure:
    """The loops of one robot as a node drives them: which JointState joints a message must
    carry (``required``), which follow (``free_slots``), and the actuated joints (``actuated``,
    the order of every per-actuated-joint array; ``actuated_slots`` their JointState slots).

    ValueError (naming ``parameter``) when ``actuated`` names a joint that is not a JointState
    joint, or names none, or fewer than the closed system's degrees of freedom."""

    def __init__(self, model, joint_names, actuated=(), parameter: str = 'actuated_joints'):
        joint_names = list(joint_names)
        names = list(actuated) or list(model.actuated_joints)
        if not names:
            skipped = [note for note in model.notes if note.endswith('(not an actuated joint)')]
            why = f' ({skipped[0]})' if skipped else ''
            raise ValueError(f'{parameter}: {model.name!r} closes kinematic loops but names no '
                             'actuated joint (no <transmission> or <ros2_control> command '
                             f'interface){why}; set {parameter} to its motors')
        missing = [n for n in names if n not in joint_names]
        if missing:
            raise ValueError(f'{parameter} names {missing}, not single-DoF joints of '
                             f'{model.name!r} (its joints: {", ".join(joint_names)})')
        if len(set(names)) != len(names):
            raise ValueError(f'{parameter} names a joint twice: {names}')
        in_loop = loop_joints(model)
        free = [k for k, n in enumerate(joint_names) if n in in_loop and n not in names]
        undetermined = _undetermined(model, [model.joint[joint_names[k]] for k in free])
        if undetermined:    # (None: the neutral pose does not close, said when a message comes)
            on_loops = [n for n in names if n in in_loop]
            raise ValueError(f'{parameter} names {len(on_loops)} joints on the loops '
                             f'({", ".join(on_loops) or "none"}) but the loops of '
                             f'{model.name!r} have {len(on_loops) + undetermined} degrees of '
                             'freedom: name every motor')
        self.actuated = tuple(names)
        self.actuated_slots = np.array([joint_names.index(n) for n in names], dtype=int)
        self.free_slots = np.array(free, dtype=int)
        self.required = np.ones(len(joint_names), dtype=bool)
        self.required[self.free_slots] = False
        self.free_names = tuple(joint_names[k] for k in free)
        # coordinates: the free joints' q and v columns, the actuated joints' v columns
        self.free_q = np.array([model.joint[joint_names[k]].q_index for k in free], dtype=int)
        self.free_v = np.array([model.joint[joint_names[k]].v_index for k in free], dtype=int)
        self.held_v = np.setdiff1d(np.arange(model.nv), self.free_v)
        self.actuated_v = np.array([model.joint[n].v_index for n in names], dtype=int)
        self.actuated_q = np.array([model.joint[n].q_index for n in names], dtype=int)
        self.hold = [j.name for j in model.joints
                     if j.v_index is not None and j.name not in self.free_names]
        # constrained_inverse_dynamics takes the model's own list fastest (its plan is cached)
        own = list(model.actuated_joints)
        self._order = (np.array([own.index(n) for n in names], dtype=int)
                       if sorted(own) == sorted(names) else None)
        self.last: np.ndarray | None = None    # the last closed q: the next warm start
        self._step: np.ndarray | None = None   # the last Newton step matrix (_least_norm)

    # -- positions -----------------------------------------------------------------------------
    def close(self, model, q: np.ndarray) -> np.ndarray:
        """q closed: the held coordinates as given, the free ones solved, starting from the last
        closed configuration (q's own before the first). ValueError naming the constraint that
        stays open (rbd.close_loops) when it cannot close; the warm start is then kept."""
        q = np.array(q, dtype=float)
        if self.last is None:     # the first: on the neutral pose's branch (close_loops' walk)
            closed = rbd.close_loops(model, q, self.hold)
        else:
            if len(self.free_q):
                q[self.free_q] = self.last[self.free_q]
            closed = self._newton(model, q)
            if closed is None:    # far from the last solution, or not closable: the core's
                closed = rbd.close_loops(model, q, self.hold, start=self.last,  # walk from it
                                         search=False)  # (a refused message: ~10 ms, not ~35)
        self.last = closed
        return closed

    def _newton(self, model, q):
        """Newton's method over the free coordinates with least-norm steps, no line search; the
        step matrix of the last call is reused while it converges fast (a chord method: between
        two messages the Jacobian barely changes, and a residual is a third of its cost). None
        when it does not converge within FAST_ITERATIONS, or a step is longer than MAX_STEP (a
        jump that could land on the loops' other assembly mode)."""
        phi = rbd.constraint_residual(model, q)
        error = np.abs(phi).max()
        fresh = False
        step = np.zeros(model.nv)
        for _ in range(FAST_ITERATIONS):
            if error <= CLOSE_TOLERANCE:
                return q
            if self._step is None:
                self._step = self._least_norm(rbd.constraint_jacobian(model, q))
                fresh = True
            step[self.free_v] = -self._step @ phi
            if np.abs(step).max(initial=0.0) > MAX_STEP:
                self._step = None
                return None
            q = rbd.integrate(model, q, step, 1.0)
            phi = rbd.constraint_residual(model, q)
            last, error = error, np.abs(phi).max()
            if not error < CHORD_RATE * last:    # slow: a new Jacobian, or give up on a new one
                self._step = None
                if fresh and not error < last:
                    return None
        return q if error <= CLOSE_TOLERANCE else None

    # -- velocities and accelerations -------------------------------------------------------
    def _least_norm(self, K):
        """P (free x rows) with x = P r the least-norm solution of K[:, free] x = r (damped:
        K^T (K K^T + mu I)^-1, redundant rows do no harm)."""
        K = K[:, self.free_v]
        KKt = K @ K.T
        KKt.flat[::len(KKt) + 1] += STEP_DAMPING * max(1.0, KKt.trace())
        return np.linalg.solve(KKt, K).T

    def velocity(self, model, q, v) -> np.ndarray:
        """v with the free joints' velocities those the loops allow (K v = 0) with the held ones
        as given."""
        v = np.array(v, dtype=float)
        if len(self.free_v):
            K = rbd.constraint_jacobian(model, q)
            v[self.free_v] = self._least_norm(K) @ (-K[:, self.held_v] @ v[self.held_v])
        return v

    def acceleration(self, model, q, v, a) -> np.ndarray:
        """a with the free joints' accelerations those the loops ask (K a = k) with the held
        ones as given (v: a velocity the loops allow)."""
        a = np.array(a, dtype=float)
        if len(self.free_v):
            K = rbd.constraint_jacobian(model, q)
            k = rbd.constraint_bias(model, q, v)
            a[self.free_v] = self._least_norm(K) @ (k - K[:, self.held_v] @ a[self.held_v])
        return a

    # -- torques --------------------------------------------------------------------------------
    def torques(self, model, q, v, a) -> np.ndarray:
        """The actuated joints' torques (``actuated`` order) of the closed motion (q, v, a)."""
        if self._order is not None:
            return rbd.constrained_inverse_dynamics(model, q, v, a)[self._order]
        return rbd.constrained_inverse_dynamics(model, q, v, a, list(self.actuated))

    def gravity(self, model, q) -> np.ndarray:
        """The actuated joints' torques that hold the closed configuration q."""
        zero = np.zeros(model.nv)
        return self.torques(model, q, zero, zero)

    def reference_torques(self, model, q, q_ref, v_ref, a_ref) -> np.ndarray:
        """The actuated joints' torques of the reference (q_ref, v_ref, a_ref per actuated
        joint): the loops closed at q_ref starting from q (not the warm start of ``close``),
        the passive joints' velocities and accelerations those the loops allow."""
        qr = np.array(q, dtype=float)
        qr[self.actuated_q] = q_ref
        closed = self._newton(model, qr)    # (from the measured q, closed: a small step)
        qr = (rbd.close_loops(model, qr, self.hold, start=q, search=False) if closed is None
              else closed)
        vr = np.zeros(model.nv)
        vr[self.actuated_v] = v_ref
        vr = self.velocity(model, qr, vr)
        ar = np.zeros(model.nv)
        ar[self.actuated_v] = a_ref
        return self.torques(model, qr, vr, self.acceleration(model, qr, vr, ar))

    def law_torques(self, law, model, q, v, q_ref, v_ref, a_ref, kp, kd, continuous,
                    compensate_friction=False) -> np.ndarray:
        """control_torques (laws.py) on a closed robot: the laws act on the actuated joints (q_ref
        ... continuous: per actuated joint; q closed, v: the measured velocities, its passive
        ones replaced by those the loops allow), every torque from constrained inverse
        dynamics: computed torque asks the closed system for a = a_ref + kp e + kd e_dot at the
        motors."""
        if law == 'gravity':
            return self.gravity(model, q)
        e = tracking_error(q_ref, q[self.actuated_q], continuous)
        v = self.velocity(model, q, v)
        e_dot = v_ref - v[self.actuated_v]
        if law == 'gravity_pd':
            return self.gravity(model, q) + kp * e - kd * v[self.actuated_v]
        if law == 'computed_torque':
            a = np.zeros(model.nv)
            a[self.actuated_v] = a_ref + kp * e + kd * e_dot
            tau = self.torques(model, q, v, self.acceleration(model, q, v, a))
        else:
            tau = self.reference_torques(model, q, q_ref, v_ref, a_ref)
        if compensate_friction:
            tau = tau + joint_friction_compensation(model, v_ref, self.actuated_v)
        if law in ('computed_torque', 'inverse_dynamics'):
            return tau
        if law == 'pd_feedforward':
            return tau + kp * e + kd * e_dot
        raise ValueError(f'unknown control law {law!r}')
