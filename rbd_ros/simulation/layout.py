"""Layout of the simulator's constant tables and its workspace (MuJoCo's mjModel / mjData for
the step): what ``simulator.py`` writes once per model and ``step.py`` reads every step.

``si`` (int64) and ``sf`` (float64) start with the scalar slots below; the per-row, per-point
and per-velocity arrays follow, at the offsets stored in si's ``*_AT`` slots (for the arrays of
both). ``command``
(5 x nv: effort, kp, kd, q_ref, v_ref per velocity) is the drives' input, ``f_ext`` (nbody x 6)
the external wrenches in body frames, ``out`` the applied efforts (nv) and the contact points'
forces and locations (7 per point), ``stats`` the solver's counters, ``work`` the scratch.
"""

# --- si: integer scalars ---------------------------------------------------------------------
NV, NQ, NV_INT, NQ_INT = 0, 1, 2, 3   # public and internal (kernel) sizes
DIRECT = 4              # 1: no mimic joint (public coordinates are the kernels' own)
RK4 = 5                 # 1: RK4, 0: semi-implicit Euler
DAMPING = 6             # flags: URDF damping, URDF friction, effort and velocity limits
FRICTION = 7
EFFORT_LIMITS = 8
VELOCITY_LIMITS = 9
POSITION_LIMITS = 10    # 0 constraint, 1 spring, 2 off
NROWS = 11              # joint rows (single-DoF joints that own a coordinate)
NPOINTS = 12            # contact candidates
GROUND = 13             # 1: a ground plane
SWEEPS = 14             # the row solver's sweep budget
NMIMIC = 15             # mimic joints
FLOATING = 16           # 1: q[:7], v[:6] are a floating base (its position is checked too)
MAXROWS = 17            # rows the workspace has room for
# offsets of the integer arrays in si
ROWS_V_AT = 18          # NROWS: the joint rows' v indices
ROWS_Q_AT = 19          # NROWS: their q indices
POINT_BODY_AT = 20      # NPOINTS: the body each point is fixed to
POINT_KIND_AT = 21      # NPOINTS: SPHERE or RIM
POINT_K_AT = 22         # NPOINTS: a rim point's quarter (0..3)
Q_FULL_AT = 23          # NQ: public q -> internal q index
MIMIC_AT = 24           # NMIMIC x 4: internal q, internal v, leader's public q and v
# offsets of the float arrays in sf
ROW_LIMITS_AT = 25      # NROWS x 4: lower, upper, velocity limit, Coulomb friction
PER_V_AT = 26           # 2 x NV: damping, effort limit
POINTS_AT = 27          # NPOINTS x POINT_COLS
MIMIC_FLOAT_AT = 28     # NMIMIC x 2: multiplier, offset
G_AT = 29               # NV_INT x NV: v_internal = G v (mimic models)
SI_LEN = 30

# --- sf: float scalars -----------------------------------------------------------------------
DT = 0
BOUND = 1               # divergence bound on |v| and |q| of the joints (and the base position)
LIMIT_K, LIMIT_C = 2, 3  # spring-mode position limits
CONTACT_K, CONTACT_C = 4, 5
MU = 6
NORMAL = 7              # 3: the ground's unit normal (world)
HEIGHT = 10             # the ground plane: normal . x = height
T1 = 11                 # 3, 3: two unit tangents of the ground
T2 = 14
TOLERANCE = 17          # the row solver's tolerance
SF_LEN = 18

# --- a contact point's row in sf (POINT_COLS numbers) -------------------------------------------
POINT_CENTER = 0        # 3: sphere centre / rim centre, body frame
POINT_RADIUS = 3
POINT_AXIS = 4          # 3: a rim's axis, body frame
POINT_U = 7             # 3: a rim's fixed in-plane direction (used when it lies flat)
POINT_COLS = 10
SPHERE, RIM = 0, 1

# --- command rows ------------------------------------------------------------------------------
EFFORT, KP, KD, Q_REF, V_REF = range(5)

# --- out: after the nv applied efforts, OUT_COLS per contact point -----------------------------
OUT_FORCE = 0           # 3: the contact force on the robot (world), mean over the step
OUT_AT = 3              # 3: where it acts (world)
OUT_ACTIVE = 6          # 1.0 when the point touched the ground in the step
OUT_COLS = 7

# --- stats (int64) ---------------------------------------------------------------------------
STAT_STEPS = 0          # steps taken
STAT_UNCONVERGED = 1    # row solves that ran out of sweeps
STAT_MAX_SWEEPS = 2     # the most sweeps one solve took
STAT_ROWS = 3           # rows in the last solve
STATS_LEN = 4

# --- step status -------------------------------------------------------------------------------
STEP_OK = 0
STEP_DIVERGED = 1       # NaN, inf or beyond BOUND
STEP_SINGULAR = 2       # W (or the reduced M) not positive definite
