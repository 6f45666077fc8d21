"""Column layout of the flat arrays that hold a model and its workspace.

A model is two arrays with one row per body (row 0 is the world / fixed root), in the
spirit of MuJoCo's mjModel: ``body_int`` (topology and indices) and ``body_float``
(placements, joint axes, 10-parameter inertias). The per-call workspace is one float array
with a row per body (transforms, velocities, forces, articulated inertias) and one with a
row per degree of freedom (Jacobian columns). Packing keeps every compiled kernel call to a
handful of arguments: numba's dispatch costs ~70 ns per argument, more than an RNEA step.

A rigid transform is 12 consecutive numbers: its rotation row-major, then its translation.
Spatial vectors are 6 numbers [linear; angular]; inertias 10 numbers (see INERTIA).
Kernels see body_float, the workspace and the dof workspace as flat 1-D arrays (row i of the
workspace starts at i * WS_COLS) and pass a quantity as (array, offset), never as a slice or
row view: numba reference-counts every view with an atomic NRT_incref/NRT_decref call, which
measured ~100 calls and more than half of an RNEA before this layout.
"""

# --- body_int columns -----------------------------------------------------------------
PARENT = 0   # parent body index (-1 for the world row)
JTYPE = 1    # joint type code (JOINT_* below)
QIDX = 2     # first index of the joint's coordinates in the (internal) q
VIDX = 3     # first index of the joint's velocities in the (internal) v
NQJ = 4      # number of coordinates of the joint
NVJ = 5      # number of velocities of the joint
NV_SUBTREE = 6  # velocities of the body's joint and all joints below it
BODY_INT_COLS = 7

# --- body_float columns ---------------------------------------------------------------
PLACEMENT = 0  # 12: transform of the joint frame in the parent body frame (parent-from-joint)
AXIS = 12      # 3: unit joint axis in the joint frame (planar: plane normal)
PLANAR_E1 = 15  # 3: planar joint: first in-plane unit vector (x coordinate direction)
PLANAR_E2 = 18  # 3: planar joint: second in-plane unit vector (y coordinate direction)
INERTIA = 21   # 10: m, m*c (3), rotational inertia about the body origin (xx xy xz yy yz zz)
GRAVITY = 31   # 3: row 0 only: the model's gravity vector in the world frame
BODY_FLOAT_COLS = 34

# --- frame rows (one per link), appended after the body rows of the kernels' flat float
# model, so that frame kernels need no extra arguments ----------------------------------
FRAME_BODY = 0       # 1: the body the frame is fixed to (an index, exact as a float)
FRAME_PLACEMENT = 1  # 12: transform of the frame in its body's frame (body-from-frame)
FRAME_COLS = 13

# --- joint types ----------------------------------------------------------------------
JOINT_ROOT = 0       # the world row
JOINT_REVOLUTE = 1   # revolute and continuous (one angle)
JOINT_PRISMATIC = 2
JOINT_PLANAR = 3     # q = (x, y, theta), v = (vx, vy, wz) twist in the child frame
JOINT_FLOATING = 4   # q = (x, y, z, qx, qy, qz, qw), v = [v; w] twist in the child frame

# --- workspace columns (one row per body) ---------------------------------------------
# Ordered so the columns one algorithm touches per body sit together (ABA on a 1-DoF joint
# reads LI..U[0:6], IA and DINV[0]): fewer cache lines per body, which matters when two
# threads share a core's L1.
LI = 0        # 12: parent-from-body transform (Pinocchio's liMi)
VEL = 12      # 6: body twist in body coordinates
ACC = 18      # 6: body spatial acceleration in body coordinates (gravity included in RNEA)
VJ = 24       # 6: joint velocity S qd; ABA: the bias acceleration c
PA = 30       # 6: articulated bias force (ABA), world momentum (Coriolis)
UU = 36       # 6: u = tau - S^T pA
U = 42        # 36: U = IA S, one 6-column per joint dof (column k at U + 6k)
IA = 78       # 36: articulated inertia (ABA: packed upper triangle, 21), Coriolis B (6x6)
DINV = 114    # 36: inverse of D = S^T IA S, row-major nvj x nvj (stride 6)
O = 150       # 12: world-from-body transform (oMi)
FRC = 162     # 6: body force / wrench in body coordinates
IC = 168      # 10: composite (CRBA) or world-frame (Coriolis) inertia
SCRATCH = 178  # 6: one spatial vector of scratch
WS_COLS = 184

# --- dof workspace columns (one row per degree of freedom) ----------------------------
J_COL = 0     # 6: motion subspace column in the world frame
DJ_COL = 6    # 6: its time derivative (Coriolis)
DFDV = 12     # 6: Coriolis helper column
AG_COL = 18   # 6: Coriolis helper column
DOF_WS_COLS = 24
