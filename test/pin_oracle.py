"""Pinocchio as a test oracle: the same URDF loaded by Pinocchio, with our coordinates mapped to
Pinocchio's by rbd.PinocchioLayout (the core's own, Pinocchio-free conversion: joint order,
continuous and planar angles as cos/sin, mimic joints as independent Pinocchio joints driven
through the mimic map). Each Oracle first checks that the layout equals the loaded Pinocchio
model's own (names, idx_q, idx_v), so every cross-check also checks the layout."""
import numpy as np
import pinocchio as pin

import rbd_ros.dynamics as rbd

REFS = {'world': pin.ReferenceFrame.WORLD, 'local': pin.ReferenceFrame.LOCAL,
        'local_world_aligned': pin.ReferenceFrame.LOCAL_WORLD_ALIGNED}


def pinocchio_model(model, urdf_xml, mimic=False):
    """Pinocchio's model of the same URDF, with our model's base and gravity."""
    if model.floating_base:
        pm = pin.buildModelFromXML(urdf_xml, pin.JointModelFreeFlyer(), mimic)
    else:
        pm = pin.buildModelFromXML(urdf_xml, mimic)
    pm.gravity = pin.Motion(np.concatenate([model.gravity, np.zeros(3)]))
    return pm


def layout_mismatch(layout, pm):
    """What differs between a PinocchioLayout and a Pinocchio model ('' when nothing)."""
    theirs = dict(names=list(pm.names)[1:], idx_q=list(pm.idx_qs)[1:], idx_v=list(pm.idx_vs)[1:],
                  nqs=list(pm.nqs)[1:], nvs=list(pm.nvs)[1:], nq=pm.nq, nv=pm.nv)
    ours = dict(names=layout.joint_names, idx_q=layout.idx_q.tolist(),
                idx_v=layout.idx_v.tolist(), nqs=layout.nqs.tolist(), nvs=layout.nvs.tolist(),
                nq=layout.nq, nv=layout.nv)
    return '; '.join(f'{key}: ours {ours[key]} Pinocchio {theirs[key]}' for key in ours
                     if ours[key] != theirs[key])


class Oracle:
    def __init__(self, model, urdf_xml):
        self.model = model
        self.pm = pinocchio_model(model, urdf_xml)
        self.pd = self.pm.createData()
        self.layout = rbd.PinocchioLayout(model)
        mismatch = layout_mismatch(self.layout, self.pm)
        assert not mismatch, mismatch
        self.P = self.layout.v_to_pinocchio(np.eye(model.nv)).T     # v_pin = P v

    def q(self, q):
        return self.layout.q_to_pinocchio(q)

    def v(self, v):
        return self.layout.v_to_pinocchio(v)

    def tau(self, tau_pin):
        """Pinocchio's torques -> ours, along the first axis (P^T tau_pin: a torque vector, or
        a matrix whose rows are torques, as a regressor's)."""
        tau_pin = np.asarray(tau_pin)
        return np.moveaxis(self.layout.tau_from_pinocchio(np.moveaxis(tau_pin, 0, -1)), -1, 0)

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
        return self.layout.matrix_from_pinocchio(M)

    def coriolis_matrix(self, q, v):
        return self.layout.matrix_from_pinocchio(
            pin.computeCoriolisMatrix(self.pm, self.pd, self.q(q), self.v(v)))

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
        return self.layout.jacobian_from_pinocchio(np.asarray(J).reshape(6, -1))

    def center_of_mass(self, q):
        return pin.centerOfMass(self.pm, self.pd, self.q(q))

    def center_of_mass_jacobian(self, q):
        J = pin.jacobianCenterOfMass(self.pm, self.pd, self.q(q))
        return self.layout.jacobian_from_pinocchio(np.asarray(J).reshape(3, -1))

    def centroidal_momentum(self, q, v):
        return pin.computeCentroidalMomentum(self.pm, self.pd, self.q(q), self.v(v)).vector

    def centroidal_momentum_matrix(self, q):
        Ag = pin.ccrba(self.pm, self.pd, self.q(q), np.zeros(self.pm.nv))
        return self.layout.jacobian_from_pinocchio(np.asarray(Ag).reshape(6, -1))

    def difference(self, q0, q1):
        """Pinocchio's difference, in our velocities (mimic joints dropped: they follow)."""
        return self.layout.v_from_pinocchio(pin.difference(self.pm, self.q(q0), self.q(q1)))

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


class LoopOracle(Oracle):
    """Pinocchio's constraintDynamics on the same closed loops: a ball <constraint> is a
    CONTACT_3D RigidConstraintModel, a fixed one a CONTACT_6D, between the two links' joints at
    the constraint's frames (LOCAL). Pinocchio has no revolute loop: a revolute one is two
    CONTACT_3D, at the frames' origins and at points ``axis_offset`` along their axes (they
    coincide exactly when the origins do and the axes align), six rows of rank five, so
    those need the proximal solve (``mu`` > 0). The model's armature is set on Pinocchio's."""

    def __init__(self, model, urdf_xml, axis_offset=0.1):
        super().__init__(model, urdf_xml)
        self.pm.armature = self.layout.v_to_pinocchio(model.armature)
        self.pd = self.pm.createData()
        constraints = []
        for info in model.constraints:
            record = model._robot.constraints[info.name]
            ends = []
            for link, R, p in ((info.parent, record.parent_rotation, record.parent_xyz),
                               (info.child, record.child_rotation, record.child_xyz)):
                frame = self.pm.frames[self.pm.getFrameId(link, pin.BODY)]
                ends.append((frame.parentJoint, frame.placement * pin.SE3(R, p)))
            (joint_a, at_a), (joint_b, at_b) = ends
            kind = pin.ContactType.CONTACT_6D if info.type == 'fixed' else pin.ContactType.CONTACT_3D
            constraints.append(pin.RigidConstraintModel(kind, self.pm, joint_a, at_a, joint_b, at_b,
                                                        pin.LOCAL))
            if info.type == 'revolute':
                along_a = at_a * pin.SE3(np.eye(3), axis_offset * record.parent_axis)
                along_b = at_b * pin.SE3(np.eye(3), axis_offset * record.child_axis)
                constraints.append(pin.RigidConstraintModel(kind, self.pm, joint_a, along_a,
                                                            joint_b, along_b, pin.LOCAL))
        self.constraint_models = pin.StdVec_RigidConstraintModel(constraints)
        self.constraint_datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
        pin.initConstraintDynamics(self.pm, self.pd, self.constraint_models, self.constraint_datas)

    def constrained_forward_dynamics(self, q, v, tau, mu=0.0, iterations=1):
        """qdd of Pinocchio's constraintDynamics (mu = 0, one iteration: its exact KKT solve,
        for independent rows; mu > 0: the proximal iterations, for redundant ones)."""
        settings = pin.ProximalSettings(1e-14, mu, iterations)
        a = pin.constraintDynamics(self.pm, self.pd, self.q(q), self.v(v),
                                   self.layout.tau_to_pinocchio(tau), self.constraint_models,
                                   self.constraint_datas, settings)
        return self.layout.v_from_pinocchio(a)
