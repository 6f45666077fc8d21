"""rbd_ros.dynamics against Pinocchio, side by side in one run.

    .venv/bin/python -m benchmarks.dynamics_bench [--smoke]

Per-call medians (single configuration, from Python) for inverse_dynamics, gravity_torques,
mass_matrix, forward_dynamics and frame_poses on the bundled 7-DoF arm and the 43-joint
floating-base G1 humanoid (nv = 49), then batched throughput (N configurations in one call)
against a Python loop of Pinocchio calls over the same configurations, then the closed loops
of the bundled parallel ankle (two ball <constraint>s; fixed and floating shank):
constrained_forward_dynamics beside Pinocchio's constraintDynamics (CONTACT_3D constraints,
its exact solve), and constrained_inverse_dynamics (the motors' torques) beside what a
Pinocchio user writes for it (rnea, getConstraintsJacobian, a numpy least-squares balance of
the passive joints), each pair first checked to give the same numbers. Then the analytical
derivatives (inverse_dynamics_derivatives, forward_dynamics_derivatives,
gravity_torques_derivatives) against computeRNEADerivatives, computeABADerivatives and
computeGeneralizedGravityDerivatives on the arm, Talos (example-robot-data's talos_reduced,
floating base, nv = 38) and G1, single and batched.

Each row times calls that do the same work. Pinocchio's rnea, computeGeneralizedGravity, crba
and aba return a new numpy array, as ours do. Its framesForwardKinematics returns nothing: it
overwrites data.oMf, so the ``frame_poses`` row times ours in place (``out=``). The row
``frame_poses, new result`` times ours returning new arrays against Pinocchio's call followed
by ``data.oMf[f].homogeneous`` for every link, which is how Python gets the poses from it. A
line under the table gives the third pairing, our new result against Pinocchio's bare call.
Pinocchio's derivative calls return views of its Data (the next call overwrites them); ours
return new arrays. The single rows time both as they are (Pinocchio then allocates nothing);
the batched Pinocchio loop copies each result, as a loop that keeps N results must.
"""
import argparse
import os
import platform
import statistics
import time

import numpy as np

import rbd_ros.dynamics as rbd

HERE = os.path.dirname(os.path.abspath(__file__))
ANKLE = os.path.join(HERE, '..', 'rbd_ros', 'robots', 'parallel_ankle.urdf')
ROBOTS = [('arm7 (7 DoF, fixed)', os.path.join(HERE, '..', 'rbd_ros', 'robots', 'rbd_arm7.urdf'), False),
          ('G1 humanoid (nv 49, floating)', os.path.join(HERE, '..', 'test', 'data', 'robots',
                                                         'humanoid.urdf'), True)]
#: example-robot-data's Talos (a test dependency; found in its installed share directory)
TALOS = ('Talos (nv 38, floating)', os.path.join('talos_data', 'robots', 'talos_reduced.urdf'))


def derivative_robots():
    """(label, path, floating) of the derivatives' robots: the arm, Talos when
    example-robot-data is installed, the G1 humanoid."""
    import sys
    robots = [ROBOTS[0]]
    for base in sys.path:
        path = os.path.join(base, 'cmeel.prefix', 'share', 'example-robot-data', 'robots',
                            TALOS[1])
        if os.path.isfile(path):
            robots.append((TALOS[0], path, True))
            break
    return robots + [ROBOTS[1]]


def _loop_count(fn):
    """Calls per timing sample: a loop of ~10 ms."""
    fn()
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - start > 0.01:
            return n
        n *= 2


def _sample_us(fn, n):
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def side_by_side_us(fns, seconds):
    """Per-call time of each function in microseconds: the median over ~10 ms tight-loop
    samples, the functions' samples interleaved so that each sees the same machine state (on
    a shared 2-core VM the speed drifts over seconds)."""
    counts = [_loop_count(fn) for fn in fns]
    samples, deadline = [[] for _ in fns], time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(samples[0]) < 5:
        for fn, n, out in zip(fns, counts, samples):
            out.append(_sample_us(fn, n))
    return [statistics.median(out) for out in samples]


def pinocchio_state(pm, model, q, v):
    """Our (q, v) in Pinocchio's joint order (joints matched by name)."""
    qp, vp = np.zeros(pm.nq), np.zeros(pm.nv)
    for jid in range(1, pm.njoints):
        info = model.joint[pm.names[jid]]
        jm = pm.joints[jid]
        values = q[info.q_index:info.q_index + info.nq]
        if jm.nq == 2 and info.nq == 1:
            values = [np.cos(values[0]), np.sin(values[0])]
        qp[jm.idx_q:jm.idx_q + jm.nq] = values
        vp[jm.idx_v:jm.idx_v + jm.nv] = v[info.v_index:info.v_index + info.nv]
    return qp, vp


def pinocchio_link_poses(pin, pm, pd, qp, link_ids):
    """Every link's world pose from Pinocchio as numpy arrays: its call, then a read of
    data.oMf (a C++ vector of SE3) for each link."""
    pin.framesForwardKinematics(pm, pd, qp)
    oMf = pd.oMf
    return [oMf[f].homogeneous for f in link_ids]


def run(smoke=False, out=print):
    import pinocchio as pin
    seconds = 0.05 if smoke else 1.0
    batch = 200 if smoke else 10_000
    out(f'machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, '
        f'numba kernels {"on" if rbd.JIT_ENABLED else "OFF"}, Pinocchio {pin.__version__}')
    out('')
    out('| function | robot | rbd_ros us | Pinocchio us | ratio |')
    out('|---|---|---:|---:|---:|')
    rows, batch_rows, unlike = [], [], []
    for label, path, floating in ROBOTS:
        model = rbd.Model.from_urdf(path, floating_base=floating)
        pm = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(path))
        pd = pm.createData()
        rng = np.random.default_rng(0)
        q, v, a = model.random_configuration(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
        qp, vp = pinocchio_state(pm, model, q, v)
        poses = rbd.frame_poses(model, q)
        link_ids = [pm.getFrameId(name, pin.BODY) for name in model.frame_names]
        # the two sides of a row must give the same poses, or the row compares nothing
        pin_poses = np.array(pinocchio_link_poses(pin, pm, pd, qp, link_ids))
        if not np.allclose(pin_poses, poses.array, rtol=0, atol=1e-9):
            raise RuntimeError(f'{label}: Pinocchio and rbd_ros frame poses differ by '
                               f'{np.abs(pin_poses - poses.array).max():.3g}')
        _, ap = pinocchio_state(pm, model, q, a)
        cases = [
            ('inverse_dynamics', lambda: rbd.inverse_dynamics(model, q, v, a),
             lambda: pin.rnea(pm, pd, qp, vp, ap)),
            ('gravity_torques', lambda: rbd.gravity_torques(model, q),
             lambda: pin.computeGeneralizedGravity(pm, pd, qp)),
            ('mass_matrix', lambda: rbd.mass_matrix(model, q), lambda: pin.crba(pm, pd, qp)),
            ('forward_dynamics', lambda: rbd.forward_dynamics(model, q, v, a),
             lambda: pin.aba(pm, pd, qp, vp, ap)),
            # both fill storage allocated once (Pinocchio: data.oMf)
            ('frame_poses', lambda: rbd.frame_poses(model, q, out=poses),
             lambda: pin.framesForwardKinematics(pm, pd, qp)),
            # both hand Python new arrays of every link's pose
            ('frame_poses, new result', lambda: rbd.frame_poses(model, q),
             lambda: pinocchio_link_poses(pin, pm, pd, qp, link_ids)),
        ]
        for name, ours, theirs in cases:
            t_ours, t_pin = side_by_side_us([ours, theirs], 2 * seconds)
            rows.append((name, label, t_ours, t_pin))
            out(f'| {name} | {label} | {t_ours:.2f} | {t_pin:.2f} | {t_ours / t_pin:.2f} |')
        t_ours, t_pin = side_by_side_us([lambda: rbd.frame_poses(model, q),
                                         lambda: pin.framesForwardKinematics(pm, pd, qp)],
                                        2 * seconds)
        unlike.append((label, t_ours, t_pin))
        Q = np.stack([model.random_configuration(rng) for _ in range(batch)])
        V, A = rng.normal(size=(batch, model.nv)), rng.normal(size=(batch, model.nv))
        P = [pinocchio_state(pm, model, Q[n], V[n]) + (pinocchio_state(pm, model, Q[n], A[n])[1],)
             for n in range(batch)]
        batched = [
            ('inverse_dynamics', lambda: rbd.inverse_dynamics(model, Q, V, A),
             lambda: [pin.rnea(pm, pd, qp_, vp_, ap_) for qp_, vp_, ap_ in P]),
            ('gravity_torques', lambda: rbd.gravity_torques(model, Q),
             lambda: [pin.computeGeneralizedGravity(pm, pd, qp_) for qp_, _, _ in P]),
            ('forward_dynamics', lambda: rbd.forward_dynamics(model, Q, V, A),
             lambda: [pin.aba(pm, pd, qp_, vp_, ap_) for qp_, vp_, ap_ in P]),
        ]
        for name, ours, theirs in batched:
            t_ours, t_pin = (t / batch for t in side_by_side_us([ours, theirs], 2 * seconds))
            batch_rows.append((name, label, t_ours, t_pin))
    out('')
    for label, t_ours, t_pin in unlike:
        out(f'Not like for like, {label}: frame_poses returning a new result, {t_ours:.2f} us, '
            f'against framesForwardKinematics, which returns nothing, {t_pin:.2f} us: '
            f'ratio {t_ours / t_pin:.2f}.')
    out('')
    out(f'Batched, N = {batch} configurations per call (throughput in thousand configurations/s):')
    out('')
    out('| function | robot | rbd_ros k/s | Pinocchio loop k/s | speed-up |')
    out('|---|---|---:|---:|---:|')
    for name, label, t_ours, t_pin in batch_rows:
        out(f'| {name} | {label} | {1e3 / t_ours:.0f} | {1e3 / t_pin:.0f} | {t_pin / t_ours:.2f} |')
    closed_loops(pin, seconds, batch, out)
    run_derivatives(pin, seconds, smoke, out)


def pinocchio_loops(pin, model, pm):
    """Pinocchio's rigid constraints (CONTACT_3D, LOCAL) for the model's ball <constraint>s,
    between the two links' joints at the constraints' frames."""
    constraints = []
    for info in model.constraints:
        record = model._robot.constraints[info.name]
        ends = []
        for link, R, p in ((info.parent, record.parent_rotation, record.parent_xyz),
                           (info.child, record.child_rotation, record.child_xyz)):
            frame = pm.frames[pm.getFrameId(link, pin.BODY)]
            ends.append((frame.parentJoint, frame.placement * pin.SE3(R, p)))
        constraints.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, ends[0][0],
                                                    ends[0][1], ends[1][0], ends[1][1], pin.LOCAL))
    models = pin.StdVec_RigidConstraintModel(constraints)
    datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
    return models, datas


def closed_loops(pin, seconds, batch, out):
    """The closed loops' table (see the module's docstring); its rows."""
    out('')
    out('Closed loops: the parallel ankle (two motors, two rods with universal and ball ends, '
        'two ball loops):')
    out('')
    out('| function | mechanism | rbd_ros us | Pinocchio us | ratio |')
    out('|---|---|---:|---:|---:|')
    rows = []
    for floating in (False, True):
        label = f'parallel ankle ({"floating" if floating else "fixed"} shank, nv ' \
                f'{8 + 6 * floating}, 6 rows)'
        model = rbd.Model.from_urdf(ANKLE, floating_base=floating)
        pm = (pin.buildModelFromUrdf(ANKLE, pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(ANKLE))
        layout = rbd.PinocchioLayout(model)
        pm.armature = layout.v_to_pinocchio(model.armature)
        pd = pm.createData()
        models, datas = pinocchio_loops(pin, model, pm)
        pin.initConstraintDynamics(pm, pd, models, datas)
        settings = pin.ProximalSettings(1e-12, 0.0, 1)
        rng = np.random.default_rng(1)
        q = model.neutral()
        if floating:
            q[:7] = model.random_configuration(rng)[:7]
        q[[model.joint[j].q_index for j in model.actuated_joints]] = [0.25, -0.15]
        q = rbd.close_loops(model, q, model.actuated_joints + (['root_joint'] if floating else []))
        K = rbd.constraint_jacobian(model, q)
        null = np.linalg.svd(K)[2][K.shape[0]:].T
        v = null @ rng.normal(size=null.shape[1])
        tau = rng.normal(size=model.nv)
        qp, vp, tp = layout.q_to_pinocchio(q), layout.v_to_pinocchio(v), layout.tau_to_pinocchio(tau)
        ours = rbd.constrained_forward_dynamics(model, q, v, tau)
        theirs = layout.v_from_pinocchio(pin.constraintDynamics(pm, pd, qp, vp, tp, models, datas,
                                                                settings))
        if not np.allclose(ours, theirs, rtol=0, atol=1e-8 * max(1.0, np.abs(theirs).max())):
            raise RuntimeError(f'{label}: constrained forward dynamics differ from Pinocchio\'s '
                               f'by {np.abs(ours - theirs).max():.3g}')
        a = ours
        ap = layout.v_to_pinocchio(a)
        actuated = np.array([model.joint[j].v_index for j in model.actuated_joints])
        driven = np.zeros(model.nv, bool)
        driven[actuated] = True
        driven[:6] |= floating
        driven_pin = layout.v_to_pinocchio(driven.astype(float)) > 0.5
        motors_pin = [pm.joints[pm.getJointId(j)].idx_v for j in model.actuated_joints]

        def pinocchio_motors():
            """The motors' torques with Pinocchio: the tree's torques, the constraints'
            Jacobian, the passive joints balanced by the loops (least squares)."""
            tau_id = pin.rnea(pm, pd, qp, vp, ap)
            pin.computeJointJacobians(pm, pd, qp)
            J = pin.getConstraintsJacobian(pm, pd, models, datas)
            lam = np.linalg.lstsq(J[:, ~driven_pin].T, tau_id[~driven_pin], rcond=None)[0]
            return (tau_id - J.T @ lam)[motors_pin]

        u = rbd.constrained_inverse_dynamics(model, q, v, a)
        if not np.allclose(u, pinocchio_motors(), rtol=0, atol=1e-8 * max(1.0, np.abs(u).max())):
            raise RuntimeError(f'{label}: the motors\' torques differ from Pinocchio\'s by '
                               f'{np.abs(u - pinocchio_motors()).max():.3g}')
        cases = [
            ('constrained_forward_dynamics', lambda: rbd.constrained_forward_dynamics(model, q, v, tau),
             lambda: pin.constraintDynamics(pm, pd, qp, vp, tp, models, datas, settings)),
            ('constrained_inverse_dynamics', lambda: rbd.constrained_inverse_dynamics(model, q, v, a),
             pinocchio_motors),
        ]
        for name, ours_fn, theirs_fn in cases:
            t_ours, t_pin = side_by_side_us([ours_fn, theirs_fn], 2 * seconds)
            rows.append((name, label, t_ours, t_pin))
            out(f'| {name} | {label} | {t_ours:.2f} | {t_pin:.2f} | {t_ours / t_pin:.2f} |')
        Q = np.repeat(q[None], batch, axis=0)
        V, T = np.repeat(v[None], batch, axis=0), rng.normal(size=(batch, model.nv))
        TP = [layout.tau_to_pinocchio(t) for t in T]
        t_ours, t_pin = (t / batch for t in side_by_side_us(
            [lambda: rbd.constrained_forward_dynamics(model, Q, V, T),
             lambda: [pin.constraintDynamics(pm, pd, qp, vp, tp_, models, datas, settings)
                      for tp_ in TP]], 2 * seconds))
        rows.append(('constrained_forward_dynamics, batch', label, t_ours, t_pin))
        out(f'| constrained_forward_dynamics, N = {batch} per call | {label} | {t_ours:.2f} | '
            f'{t_pin:.2f} (a loop) | {t_ours / t_pin:.2f} |')
    out('')
    out('Pinocchio has no inverse dynamics at the motors of a closed loop: its column for '
        'constrained_inverse_dynamics times rnea, computeJointJacobians, getConstraintsJacobian '
        'and a numpy least-squares balance of the passive joints (the same torques).')
    return rows


#: the derivatives' small batch: a few states per call, as an MPC's horizon
SMALL_BATCH = 10


def run_derivatives(pin, seconds, smoke, out):
    """The analytical derivatives beside Pinocchio's: per call, then batched (N states per call
    against a Python loop of Pinocchio calls that copies each result)."""
    batch = 50 if smoke else 1_000
    out('')
    out('Analytical derivatives, per call (us):')
    out('')
    out('| function | robot | rbd_ros us | Pinocchio us | ratio |')
    out('|---|---|---:|---:|---:|')
    rows, batch_rows = [], []
    for label, path, floating in derivative_robots():
        model = rbd.Model.from_urdf(path, floating_base=floating)
        pm = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(path))
        pd = pm.createData()
        layout = rbd.PinocchioLayout(model)
        rng = np.random.default_rng(0)
        q, v, a = (model.random_configuration(rng), rng.normal(size=model.nv),
                   rng.normal(size=model.nv))
        qp, vp, ap = layout.q_to_pinocchio(q), layout.v_to_pinocchio(v), layout.v_to_pinocchio(a)
        # the two sides of a row must agree, or the row compares nothing
        ours = rbd.forward_dynamics_derivatives(model, q, v, a)[0]
        theirs = layout.matrix_from_pinocchio(pin.computeABADerivatives(pm, pd, qp, vp, ap)[0])
        if not np.allclose(ours, theirs, rtol=1e-6, atol=1e-6):
            raise RuntimeError(f'{label}: Pinocchio and rbd_ros ABA derivatives differ by '
                               f'{np.abs(ours - theirs).max():.3g}')
        cases = [
            ('inverse_dynamics_derivatives',
             lambda: rbd.inverse_dynamics_derivatives(model, q, v, a),
             lambda: pin.computeRNEADerivatives(pm, pd, qp, vp, ap)),
            ('forward_dynamics_derivatives',
             lambda: rbd.forward_dynamics_derivatives(model, q, v, a),
             lambda: pin.computeABADerivatives(pm, pd, qp, vp, ap)),
            ('gravity_torques_derivatives', lambda: rbd.gravity_torques_derivatives(model, q),
             lambda: pin.computeGeneralizedGravityDerivatives(pm, pd, qp)),
        ]
        for name, mine, pinocchio in cases:
            t_ours, t_pin = side_by_side_us([mine, pinocchio], 2 * seconds)
            rows.append((name, label, t_ours, t_pin))
            out(f'| {name} | {label} | {t_ours:.2f} | {t_pin:.2f} | {t_ours / t_pin:.2f} |')
        for n_states in (batch, SMALL_BATCH):
            Q = np.stack([model.random_configuration(rng) for _ in range(n_states)])
            V, A = rng.normal(size=(n_states, model.nv)), rng.normal(size=(n_states, model.nv))
            P = [(layout.q_to_pinocchio(Q[n]), layout.v_to_pinocchio(V[n]),
                  layout.v_to_pinocchio(A[n])) for n in range(n_states)]
            batched = [
                ('inverse_dynamics_derivatives',
                 lambda: rbd.inverse_dynamics_derivatives(model, Q, V, A),
                 lambda: [tuple(x.copy() for x in pin.computeRNEADerivatives(pm, pd, *s))
                          for s in P]),
                ('forward_dynamics_derivatives',
                 lambda: rbd.forward_dynamics_derivatives(model, Q, V, A),
                 lambda: [tuple(x.copy() for x in pin.computeABADerivatives(pm, pd, *s))
                          for s in P]),
            ]
            for name, mine, pinocchio in batched:
                t_ours, t_pin = (t / n_states
                                 for t in side_by_side_us([mine, pinocchio], 2 * seconds))
                batch_rows.append((name, label, n_states, t_ours, t_pin))
    out('')
    out('Analytical derivatives batched, N states per call (thousand states/s; the Pinocchio '
        'loop copies each result; N = 10 is an MPC horizon\'s worth):')
    out('')
    out('| function | robot | N | rbd_ros k/s | Pinocchio loop k/s | speed-up |')
    out('|---|---|---:|---:|---:|---:|')
    for name, label, n_states, t_ours, t_pin in batch_rows:
        out(f'| {name} | {label} | {n_states} | {1e3 / t_ours:.1f} | {1e3 / t_pin:.1f} | '
            f'{t_pin / t_ours:.2f} |')
    return rows, batch_rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--smoke', action='store_true', help='seconds-long run (tests)')
    args = parser.parse_args()
    run(smoke=args.smoke)


if __name__ == '__main__':
    main()
