"""External torques from the measured joint torques: the generalised-momentum observer
(De Luca and Mattone, 2003; Haddadin, De Luca and Albu-Schaeffer, 2017), ROS-free.

With p = M(q) v the generalised momentum, the robot's dynamics say

    dp/dt = tau + C(q, v)^T v - g(q) + tau_f + tau_ext

(tau: the drives' torques, measured; tau_f = -D v - F sign(v): the joints' own URDF damping and
Coulomb friction, known forces; tau_ext: whatever else pushes the robot). The observer

    r = K (p(t) - p(0) - integral_0^t (tau + C^T v - g + tau_f + r) ds)

obeys dr/dt = K (tau_ext - r): r follows the external torques through a first-order filter of
time constant 1/K, with no acceleration measured. Discretised between samples k-1 and k,
implicit in r (stable for any K dt), with h = C^T v - g + tau_f (a function of the state: the
trapezoid rule) and the measured torque taken as what acted over the interval that ends with
its sample (a drive's torque held over a control period, as a simulator or a digital drive
applies it, and as joint_states reports it):

    I_k = I_{k-1} + dt tau_k + dt/2 (h_k + h_{k-1}) + dt/2 (r_k + r_{k-1}),
    r_k = K (p_k - p_0 - I_k)

With an exact model and no contact, r stays at the integration error of h (below 1e-3 N m on
the bundled arm moving at several rad/s, sampled at 1 kHz).
"""
from __future__ import annotations

import numpy as np

import rbd_ros.dynamics as rbd

from .laws import FRICTION_SMOOTHING


class MomentumObserver:
    """One observer over a model's velocities (a floating base's six included: the base's
    rows then carry the external wrench on the base, in its frame). ``gain``: K in 1/s, one
    value or one per velocity."""

    def __init__(self, model: rbd.Model, gain):
        self.model = model
        self.gain = np.broadcast_to(np.asarray(gain, dtype=float), (model.nv,)).copy()
        self.data = model.create_data()
        self.reset()

    def reset(self) -> None:
        """Start again at the next sample (r = 0 there)."""
        self._p0 = None
        self.r = np.zeros(self.model.nv)

    def state_torques(self, q, v):
        """h = C^T v - g + tau_f at one sample."""
        model, d = self.model, self.data
        C = rbd.coriolis_matrix(model, q, v, data=d)
        # (Coulomb friction: the sign of v, ramped over |v| < FRICTION_SMOOTHING: at rest the
        # friction is whatever stiction holds, unknown; a sign of v at 1e-16 rad/s would show
        # the whole friction level as an external torque)
        friction = -(model.damping * v + model.friction
                     * np.clip(v / FRICTION_SMOOTHING, -1.0, 1.0))
        return C.T @ v - rbd.gravity_torques(model, q, data=d) + friction

    def update(self, q, v, tau, dt: float | None) -> np.ndarray:
        """The external torques r after a sample (q, v, measured tau), dt s after the previous
        one (None: the first sample)."""
        p = rbd.mass_matrix(self.model, q, data=self.data) @ v
        h = self.state_torques(q, v)
        if self._p0 is None or dt is None:
            self._p0, self._integral, self._h, self.r = p, np.zeros_like(p), h, np.zeros_like(p)
            return self.r
        K, tau = self.gain, np.asarray(tau, dtype=float)
        known = dt * tau + 0.5 * dt * (h + self._h)
        r = K * (p - self._p0 - self._integral - known - 0.5 * dt * self.r) / (1.0 + 0.5 * K * dt)
        self._integral = self._integral + known + 0.5 * dt * (r + self.r)
        self._h, self.r = h, r
        return r


def external_wrench(model: rbd.Model, q, r, frame: str, joints=None) -> np.ndarray:
    """The wrench [f; tau] on ``frame`` (in its frame, about its origin) whose joint torques
    J^T w best match r (least squares, minimum norm: Moore-Penrose pseudo-inverse of J^T),
    from the torques of ``joints`` (v indices; default all). Ill-posed where J^T has fewer than
    six independent rows (fewer than six joints between the base and the frame, a
    singularity): the wrench is then not determined, and this is the smallest that fits."""
    J = rbd.frame_jacobian(model, q, frame, reference='local')
    if joints is not None:
        J, r = J[:, joints], np.asarray(r)[joints]
    return np.linalg.lstsq(J.T, r, rcond=1e-9)[0]
