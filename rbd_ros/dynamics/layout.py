"""Column layout of the flat arrays that hold a model (constant) and its workspace (per call).

A model is two tables with one row per body (row 0 is the world / fixed root), in the spirit of
MuJoCo's mjModel: ``body_int`` (topology and indices, int64) and ``body_float`` (placements,
joint axes, armature, 10-parameter inertias, float64). The frame rows (one per link) follow the
body rows in ``body_float``, so frame kernels need no extra argument.

A workspace (``Data``, like Pinocchio's Data or MuJoCo's mjData) is one float array ``ws`` with a
row per body plus one scratch row after them, one array ``dof_ws`` with a row per degree of
freedom, and ``dof_vectors``, a few vectors of one number per degree of freedom. Each column
below means one thing; scratch is the scratch row, named as scratch.

Kernels see every table as a flat 1-D array (row i of the workspace starts at i * WS_COLS) and
pass a quantity as (array, offset), never as a slice or row view: numba reference-counts every
view with an atomic call, which measured more than half of an RNEA before this layout.
A rigid transform is 12 numbers: its rotation row-major, then its translation. Spatial vectors
are 6 numbers [linear; angular]; inertias 10 numbers (mass, mass * com, rotational inertia about
the body origin: xx xy xz yy yz zz).
"""

# --- body_int columns (nbody x BODY_INT_COLS) --------------------------------------------------
PARENT = 0      # parent body index (-1 for the world row)
JTYPE = 1       # joint type code (JOINT_* below)
QIDX = 2        # first index of the joint's coordinates in the internal q
VIDX = 3        # first index of the joint's velocities in the internal v
NQJ = 4         # number of coordinates of the joint (world row: the model's internal nq)
NVJ = 5         # number of velocities of the joint (world row: the model's internal nv)
NV_SUBTREE = 6  # velocities of the body's joint and of every joint below it
BODY_INT_COLS = 7

# --- body_float columns (nbody x BODY_FLOAT_COLS, then the frame rows) ----------------------
PLACEMENT = 0    # 12: joint frame in the parent body frame (parent-from-joint)
AXIS = 12        # 3: unit joint axis in the joint frame (planar: the plane normal)
PLANAR_E1 = 15   # 3: planar joint: first in-plane unit vector (x coordinate direction)
PLANAR_E2 = 18   # 3: planar joint: second in-plane unit vector (y coordinate direction)
INERTIA = 21     # 10: the body's inertia (m, m c, I about the body origin)
ARMATURE = 31    # 6: reflected rotor inertia of each of the joint's velocities (added to M's diagonal)
GRAVITY = 37     # 3: world row only: the model's gravity vector in the world frame
BODY_FLOAT_COLS = 40

# --- frame rows (one per link), after the body rows of body_float -----------------------------
FRAME_BODY = 0       # 1: the body the frame is fixed to (an index, exact as a float)
FRAME_PLACEMENT = 1  # 12: the frame in its body's frame (body-from-frame)
FRAME_COLS = 13

# --- joint types -------------------------------------------------------------------------------
JOINT_ROOT = 0       # the world row
JOINT_REVOLUTE = 1   # revolute and continuous (one angle)
JOINT_PRISMATIC = 2
JOINT_PLANAR = 3     # q = (x, y, theta), v = (vx, vy, wz): twist in the child frame
JOINT_FLOATING = 4   # q = (x, y, z, qx, qy, qz, qw), v = [v; w]: twist in the child frame

# --- frame references (kinematics kernels) -----------------------------------------------------
REFERENCE_WORLD = 0                # world axes, about the world origin
REFERENCE_LOCAL = 1                # the frame's axes, about its origin
REFERENCE_LOCAL_WORLD_ALIGNED = 2  # world axes, about the frame's origin

# --- workspace columns (one row per body, then the scratch row) --------------------------------
# Ordered so that the columns one algorithm touches per body sit together (ABA on a 1-DoF joint
# reads LI .. ABA_D): fewer cache lines per body.
# shared by the forward passes
LI = 0           # 12: parent-from-body transform liMi (Pinocchio's liMi)
VEL = 12         # 6: body twist, body coordinates (world row: zero)
ACC = 18         # 6: body spatial acceleration, body coordinates (world row: -gravity or zero)
VJ = 24          # 6: joint twist S v
# ABA (RBDA Table 7.1)
ABA_C = 30       # 6: bias acceleration c = v x (S v)
ABA_PA = 36      # 6: articulated bias force pA
ABA_u = 42       # 6: u = tau - S^T pA, one number per joint velocity (small u: a vector)
ABA_IA_S = 48    # 36: U = IA S, one 6-column per joint velocity (column k at ABA_IA_S + 6k)
ABA_IA = 84      # 21: articulated inertia, packed upper triangle (spatial.SYM)
ABA_D = 105      # 36: D = S^T U (+ armature), nvj x nvj with row stride 6, factored in place
                 #     as L^T D L (spd.py: L below the diagonal, 1/D on it)
# kinematics, RNEA, CRBA
O = 141          # 12: world-from-body transform oMi
FRC = 153        # 6: RNEA body force, body coordinates
IC = 159         # 10: CRBA composite inertia, body coordinates
# Coriolis matrix (world frame)
COR_Y = 169      # 10: body inertia in the world frame, then composite (subtree) inertia
COR_H = 179      # 6: world-frame momentum of the body
COR_B = 185      # 36: the body's (then subtree's) B matrix, row-major 6x6
# derivatives of RNEA (derivatives.py): world coordinates, about the world origin
DER_V = 221      # 6: body twist
DER_A = 227      # 6: body spatial acceleration (world row: -gravity)
DER_Y = 233      # 10: body inertia, then composite (subtree) inertia
DER_DY = 243     # 12: its variation dY (compact: linear momentum p, then N row-major), then
                 #     composite
DER_F = 255      # 6: body force, then composite (subtree) force
WS_COLS = 261

# --- the scratch row (row nbody of ws): what a pass needs for a moment, never kept -----------
SCRATCH_X = 0          # 12: a transform (the joint transform X_J(q) before it is composed)
SCRATCH_MOTION = 12    # 6: a motion vector (RNEA: v x vJ; a column of S; Coriolis: world twist)
SCRATCH_MOTION_2 = 18  # 6: a second motion vector (Coriolis: a column of S)
SCRATCH_FORCE = 24     # 6: a force vector (CRBA: F = Ic S; ABA: pa)
SCRATCH_DOF = 30       # 6: one number per joint velocity (S^T F; J_k^T B)
SCRATCH_U_DINV = 36    # 36: ABA's U D^-1, one 6-column per joint velocity (column k at +6k)
SCRATCH_18 = 72        # 18: three motion vectors (Coriolis: columns of B)
SCRATCH_FRAME_A = 90   # 12: a loop constraint's frame A in the world (oMa; loops.py)
SCRATCH_FRAME_B = 102  # 12: its frame B (oMb)
SCRATCH_COLS = 114
assert SCRATCH_COLS <= WS_COLS, 'the scratch row is an ordinary workspace row (data.py)'

# --- dof workspace columns (one row per degree of freedom; Coriolis matrix) ------------------
COR_J = 0        # 6: the dof's motion subspace column in the world frame
COR_DJ = 6       # 6: its time derivative
COR_DFDV = 12    # 6: Yc dJ + Bc J of the dof
COR_AG = 18      # 6: Yc J of the dof
# derivatives of RNEA (derivatives.py): world coordinates, about the world origin
DER_J = 24       # 6: the dof's motion subspace column J = oMi S
DER_DV = 30      # 6: dV = v_parent x J: how the dof's q moves the velocities below it
DER_DAQ = 36     # 6: dA/dq = a_parent x J + v_parent x dV: how it moves their accelerations
DER_DAV = 42     # 6: dA/dv = (v + v_parent) x J: how its velocity moves their accelerations
DER_FA = 48      # 6: Yc J (CRBA's F: a column of M's rows)
DER_FQ = 54      # 6: Yc dA/dq + dYc dV, then + J x* Fc: dF/dq of the dof
DER_FV = 60      # 6: Yc dA/dv + dYc J: dF/dv of the dof
DOF_WS_COLS = 66

# --- dof vectors: nv-long scratch vectors, one after the other (data.dof_vectors) ------------
VEC_QDD = 0      # ABA derivatives: the accelerations the derivatives are taken at
VEC_COLUMN = 1   # a column being solved (the inverse of M), then a product's column
VEC_D_INV = 2    # the inverse of M: 1 / D of its factor
DOF_VECTORS = 3

# --- loop closures (model.loop_int, model.loop_float: one row per <constraint>) -------------
# A constraint holds frame A (on body A) on frame B (on body B): their origins coincide (3
# rows, world axes), and for a revolute one axis_A (in A) stays along axis_B (in B) (2 rows:
# the relative rotation across NORMAL_1 and NORMAL_2, the world directions of two unit
# vectors of A normal to axis_A), for a fixed one the frames' axes coincide (3 rows, world).
LOOP_TYPE = 0        # LOOP_BALL, LOOP_REVOLUTE or LOOP_FIXED
LOOP_BODY_A = 1      # the body frame A is fixed to (0: the world of a fixed base)
LOOP_BODY_B = 2      # the body frame B is fixed to
LOOP_ROW = 3         # the constraint's first row in phi, K and k
LOOP_ROWS = 4        # its rows: 3, 5 or 6
LOOP_INT_COLS = 5
LOOP_PLACEMENT_A = 0   # 12: frame A in body A's frame (body-from-frame)
LOOP_PLACEMENT_B = 12  # 12: frame B in body B's frame
LOOP_AXIS_A = 24       # 3: revolute: the unit axis in frame A
LOOP_AXIS_B = 27       # 3: revolute: the unit axis in frame B
LOOP_NORMAL_1 = 30     # 3: revolute: a unit vector of frame A normal to the axis
LOOP_NORMAL_2 = 33     # 3: revolute: axis x NORMAL_1
LOOP_FLOAT_COLS = 36
LOOP_BALL = 1
LOOP_REVOLUTE = 2
LOOP_FIXED = 3
LOOP_TYPE_ROWS = {LOOP_BALL: 3, LOOP_REVOLUTE: 5, LOOP_FIXED: 6}

# --- the kernel handle (data.handle, int64): where a model and a workspace live --------------
H_BODY_INT = 0     # address of body_int
H_NBODY = 1        # its rows (bodies, world included)
H_BODY_FLOAT = 2   # address of body_float (frame rows included)
H_NFLOAT = 3       # its length
H_WS = 4           # address of ws
H_DOF_WS = 5       # address of dof_ws
H_NDOF = 6         # its rows (the internal nv, at least 1)
H_DOF_PARENT = 7   # address of dof_parent (internal nv entries)
H_ZERO_FEXT = 8    # address of a zero (nbody x 6) external-wrench table (calls without f_ext)
H_NLOOP = 9        # loop closures (constraints): rows of loop_int and loop_float (0: a tree)
H_LOOP_INT = 10    # address of loop_int (nloop x LOOP_INT_COLS)
H_LOOP_FLOAT = 11  # address of loop_float (nloop x LOOP_FLOAT_COLS)
H_NROW = 12        # constraint rows in all (3, 5 or 6 per constraint)
H_ROW_LOOP = 13    # address of row_loop (H_NROW int64): each row's constraint index
H_LOOP_WS = 14     # address of the closed-loop workspace (Data.loop_ws: loops.work_size)
H_LOOP_PIVOT = 15  # address of its row order (Data.loop_pivot: H_NROW int64)
H_DOF_VECTORS = 16 # address of the dof vectors (DOF_VECTORS x the rows of dof_ws)
HANDLE_LEN = 17
