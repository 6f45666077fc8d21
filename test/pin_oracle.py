"""Pinocchio as a test oracle: the same URDF loaded by Pinocchio, with maps between our
public coordinates and Pinocchio's (joints matched by name; continuous and planar angles as
cos/sin; mimic joints as independent Pinocchio joints driven through the mimic map)."""
import numpy as np
import pinocchio as pin


REFS = {'world': pin.ReferenceFrame.WORLD, 'local': pin.ReferenceFrame.LOCAL,
        'local_world_aligned': pin.ReferenceFrame.LOCAL_WORLD_ALIGNED}


class Oracle:
    def __init__(self, model, urdf_xml):
        self.model = model
        if model.floating_base:
            self.pm = pin.buildModelFromXML(urdf_xml, pin.JointModelFreeFlyer())
        else:
            self.pm = pin.buildModelFromXML(urdf_xml)
        self.pm.gravity = pin.Motion(np.concatenate([model.gravity, np.zeros(3)]))
        self.pd = self.pm.createData()
        # v_pin = P v  (mimic joints: multiplier times the leader's velocity)
        self.P = np.zeros((self.pm.nv, model.nv))
        for jid in range(1, self.pm.njoints):
            name = self.pm.names[jid]
            jm = self.pm.joints[jid]
            info = model.joint[name]
            if info.mimic is not None:
                leader = model.joint[info.mimic[0]]
                self.P[jm.idx_v, leader.v_index] = info.mimic[1]
            else:
                for k in range(jm.nv):
                    self.P[jm.idx_v + k, info.v_index + k] = 1.0

    def q(self, q):
        qp = np.zeros(self.pm.nq)
        mimic = self.model.mimic_positions(q)
        for jid in range(1, self.pm.njoints):
            name = self.pm.names[jid]
            jm = self.pm.joints[jid]
            info = self.model.joint[name]
            if info.mimic is not None:
                values = [mimic[name]]
            else:
                values = list(q[info.q_index:info.q_index + info.nq])
            if info.type == 'continuous' or (info.mimic is not None and jm.nq == 2):
                values = [np.cos(values[0]), np.sin(values[0])]
            elif info.type == 'planar':
                values = [values[0], values[1], np.cos(values[2]), np.sin(values[2])]
            assert len(values) == jm.nq, (name, values, jm)
            qp[jm.idx_q:jm.idx_q + jm.nq] = values
        return qp

    def v(self, v):
        return self.P @ v

    def tau(self, tau_pin):
        return self.P.T @ tau_pin

    def fext(self, f_ext):
        forces = [pin.Force.Zero() for _ in range(self.pm.njoints)]
        for link, wrench in (f_ext or {}).items():
            frame = self.pm.frames[self.pm.getFrameId(link, pin.BODY)]
            forces[frame.parentJoint] += frame.placement.act(pin.Force(np.asarray(wrench)))
        return forces

    def frame_id(self, link):
        return self.pm.getFrameId(link, pin.BODY)

    # --- the quantities -----------------------------------------------------------------
    def inverse_dynamics(self, q, v, a, f_ext=None):
        return self.tau(pin.rnea(self.pm, self.pd, self.q(q), self.v(v), self.v(a),
                                 self.fext(f_ext)))

    def mass_matrix(self, q):
        M = pin.crba(self.pm, self.pd, self.q(q))
        M = np.triu(M) + np.triu(M, 1).T
        return self.P.T @ M @ self.P

    def coriolis_matrix(self, q, v):
        return self.P.T @ pin.computeCoriolisMatrix(self.pm, self.pd, self.q(q), self.v(v)) @ self.P

    def forward_dynamics(self, q, v, tau, f_ext=None):
        if np.allclose(self.P.T @ self.P, np.eye(self.model.nv)) and self.P.shape[0] == self.P.shape[1]:
            return self.P.T @ pin.aba(self.pm, self.pd, self.q(q), self.v(v), self.P @ tau,
                                      self.fext(f_ext)) if not self.model.has_mimic else None
        M = self.mass_matrix(q)
        bias = self.inverse_dynamics(q, v, np.zeros_like(v), f_ext)
        return np.linalg.solve(M, tau - bias)

    def kinematics(self, q, v=None, a=None):
        v = np.zeros(self.model.nv) if v is None else v
        a = np.zeros(self.model.nv) if a is None else a
        pin.forwardKinematics(self.pm, self.pd, self.q(q), self.v(v), self.v(a))
        pin.updateFramePlacements(self.pm, self.pd)

    def frame_pose(self, q, link):
        self.kinematics(q)
        return self.pd.oMf[self.frame_id(link)].homogeneous

    def frame_velocity(self, q, v, link, ref):
        self.kinematics(q, v)
        return pin.getFrameVelocity(self.pm, self.pd, self.frame_id(link), REFS[ref]).vector

    def frame_acceleration(self, q, v, a, link, ref):
        self.kinematics(q, v, a)
        return pin.getFrameClassicalAcceleration(self.pm, self.pd, self.frame_id(link),
                                                 REFS[ref]).vector

    def frame_jacobian(self, q, link, ref):
        J = pin.computeFrameJacobian(self.pm, self.pd, self.q(q), self.frame_id(link), REFS[ref])
        return np.asarray(J).reshape(6, -1) @ self.P

    def center_of_mass(self, q):
        return pin.centerOfMass(self.pm, self.pd, self.q(q))

    def kinetic_energy(self, q, v):
        return pin.computeKineticEnergy(self.pm, self.pd, self.q(q), self.v(v))

    def potential_energy(self, q):
        return pin.computePotentialEnergy(self.pm, self.pd, self.q(q))

    def total_mass(self):
        return pin.computeTotalMass(self.pm)


def close(ours, theirs, tol=1e-9):
    """Elementwise |a - b| <= tol * max(1, |b|)."""
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    err = np.abs(ours - theirs) / np.maximum(1.0, np.abs(theirs))
    return float(err.max()) if err.size else 0.0
