"""Layout of the simulator's constant tables and its workspace (MuJoCo's mjModel / mjData for
the step): what ``tables.py`` writes once per model and ``step.py`` reads every step.

``si`` (int64) and ``sf`` (float64) start with the scalar slots below; the per-row, per-point
and per-velocity arrays follow, at the offsets stored in si's ``*_AT`` slots (for the arrays of
both). The workspace (``work`` float64, ``iwork`` int64) is carved the same way: si's ``W_*``
slots hold where each of its arrays starts (tables.workspace), so a kernel names what it reads
(``vector(work, si, W_V_FREE, nv)``) instead of summing sizes. ``command`` (5 x nv: effort, kp,
kd, q_ref, v_ref per velocity) is the drives' input, ``f_ext`` (nbody x 6) the external wrenches
in body frames, ``out`` the applied efforts (nv) and the contact points' forces and locations
(OUT_COLS per point), ``stats`` the solver's counters.
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
ITERATIONS = 14         # the solver's budget of Newton iterations per step
NMIMIC = 15             # mimic joints
FLOATING = 16           # 1: q[:7], v[:6] are a floating base (its position is checked too)
MAXROWS = 17            # constraint rows the workspace has room for
NBODY_POINTS = 18       # bodies that carry contact points
# offsets of the integer arrays in si
ROWS_V_AT = 19          # NROWS: the joint rows' v indices
ROWS_Q_AT = 20          # NROWS: their q indices
POINT_BODY_AT = 21      # NPOINTS: the body each point is fixed to
POINT_KIND_AT = 22      # NPOINTS: SPHERE or RIM
POINT_K_AT = 23         # NPOINTS: a rim point's quarter (0..3)
Q_FULL_AT = 24          # NQ: public q -> internal q index
MIMIC_AT = 25           # NMIMIC x 4: internal q, internal v, leader's public q and v
FACTOR_PARENT_AT = 26   # NV: the parent array W and H are factored over (spd.py)
BODY_POINTS_AT = 27     # NBODY_POINTS x 3: body, its first point, its number of points
# offsets of the float arrays in sf
ROW_LIMITS_AT = 28      # NROWS x 4: lower, upper, velocity limit, Coulomb friction
PER_V_AT = 29           # 2 x NV: damping, effort limit
POINTS_AT = 30          # NPOINTS x POINT_COLS
MIMIC_FLOAT_AT = 31     # NMIMIC x 2: multiplier, offset
G_AT = 32               # NV_INT x NV: v_internal = G v (mimic models)
BODY_REACH_AT = 33      # NBODY_POINTS: the farthest a body's points reach from its origin (m)
# where the workspace's arrays start (tables.workspace): floats in work ...
W_MIMIC = 34            # the mimic path's scratch: qi, qn, vi, ai, ti, Mi
W_STAGES = 35           # RK4: a1..a4, v2, v3, v4, mean v (nv each), stage q (nq)
W_Q_FREE = 36           # nq: q* (the smooth step's end)
W_V_FREE = 37           # nv: v*
W_Q_NEW = 38            # nq: q+
W_V_NEW = 39            # nv: v+
W_TAU = 40              # nv: the drives' effort through the step (saturated, less what they give up)
W_DV = 41               # nv: v+ - v*
W_M = 42                # nv x nv: M(q*)
W_W = 43                # nv x nv: W = M + dt D, then its factor
W_H = 44                # nv x nv: the solver's Hessian, then its factor
W_MV = 45               # nv: M v*
W_SOLVER = 46           # 4 nv: the solver's vectors (gradient, step, ...)
W_J = 47                # MAXROWS x nv: the rows' Jacobian
W_ROWS = 48             # ROW_FLOATS x MAXROWS: per row lo, hi, friction, a, b, r, ...
W_POINT = 49            # 4 + 3 nv_int: one contact point's location, gap and Jacobian
W_DV_LAST = 50          # nv: the last step's v+ - v* (the solver's warm start); kept
W_JOINT_IMPULSE = 51    # nv: the last step's impulse on each joint's row; kept
W_POINT_IMPULSE = 52    # 3 NPOINTS: the last step's impulse at each point (n, t1, t2); kept
W_SPEED_PASS = 53       # 4 nv: a drive's effort and correction in the last pass, this pass's, its G_ii
# ... and ints in iwork
I_ROWS = 54             # ROW_INTS x MAXROWS: per row kind, unit, point, partner, piece, ...
I_NZ = 55               # MAXROWS x nv: each row's nonzero columns
I_POINT_NZ = 56         # nv: the chain of one contact point's body
# closed loops (<constraint>: the equality rows, step.equality_rows)
NLOOP_ROWS = 57         # the constraints' rows (0: a tree)
W_LOOP_PHI = 58         # NLOOP_ROWS: phi(q*), the loops' residual at the smooth step's end
W_LOOP_K = 59           # NLOOP_ROWS x nv: K(q*)
W_LOOP_IMPULSE = 60     # NLOOP_ROWS: the last step's impulse on each constraint row; kept
# RK4: the rows' forces inside the smooth step's stages (step.py)
W_CARRIED = 61          # nv: the last step's impulses as a mean force, J^T lam / dt; kept
W_TAU_SMOOTH = 62       # nv: what the smooth step applies: W_TAU plus W_CARRIED
W_DRIVE_IMPULSE = 63    # nv: the last step's impulse on each drive's row; kept
SI_LEN = 64

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
TOLERANCE = 17          # the solver's tolerance (relative velocity)
SF_LEN = 18

# --- a contact point's row in sf (POINT_COLS numbers) -------------------------------------------
POINT_CENTER = 0        # 3: sphere centre / rim centre, body frame
POINT_RADIUS = 3
POINT_AXIS = 4          # 3: a rim's axis, body frame
POINT_U = 7             # 3: a rim's fixed in-plane direction (used when it lies flat)
POINT_COLS = 10
SPHERE, RIM = 0, 1

# --- constraint rows (solver.py): float and int fields, each a MAXROWS array ------------------
# kinds
LIMIT = 0       # a joint's velocity bounds [lo, hi] (position and speed limits) and its
                # Coulomb friction (fric): hard, exact through the multiplier (solver.py)
SOFT = 1        # a spring-damper impulse b - a u kept in [lo, hi]: a contact's normal, a drive
TANGENT = 2     # rows r, r + 1: a contact's tangent plane, Coulomb friction in a disk
# float fields
ROW_LO, ROW_HI, ROW_FRIC, ROW_A, ROW_B = 0, 1, 2, 3, 4
ROW_R = 5           # LIMIT: the regularisation; TANGENT: the stick compliance
ROW_MULT = 6        # LIMIT: the multiplier (the impulse the row converges to); TANGENT: 1.0
                    # when the contact stuck last step (solver.assemble_hessian's prediction;
                    # ROW_A of the pair's two rows: the share of its disk it used then)
ROW_RADIUS = 7      # TANGENT: the friction disk's radius, mu times the normal impulse
ROW_U = 8           # the row's velocity J_r v at the iterate
ROW_DU = 9          # J_r d along the search direction
ROW_LAM = 10        # the row's impulse at the iterate
ROW_SLOPE = 11      # -d lam / d u (TANGENT: the pair's 2 x 2 block in r (11), r + 1 (11), r (12))
ROW_SLOPE_X = 12
ROW_TARGET = 13     # TANGENT: mu lam_n at the pair's last refresh of its radius (solver.py)
ROW_GAP = 14        # TANGENT: that target less the radius it replaced
ROW_MODEL = 15      # a predicted row (solver.assemble_hessian): its predicted law's impulse at
                    # the start less its law's, the first Newton step's model of it
ROW_FLOATS = 16
# int fields
ROW_KIND, ROW_UNIT, ROW_POINT, ROW_PARTNER, ROW_PIECE, ROW_NNZ = 0, 1, 2, 3, 4, 5
# (ROW_UNIT: a joint's or drive's row: its velocity index; an equality row: its row of K)
ROW_SPEED = 6       # LIMIT: 1 when lo is the speed limit, 2 when hi is, 3 both, 0 neither
ROW_ROLE = 7        # what the row stands for (step.py: a joint, a drive, a contact, ...)
ROW_INTS = 8

# --- command rows ------------------------------------------------------------------------------
EFFORT, KP, KD, Q_REF, V_REF = range(5)

# --- out: after the nv applied efforts, OUT_COLS per contact point -----------------------------
OUT_FORCE = 0           # 3: the contact force on the robot (world), mean over the step
OUT_AT = 3              # 3: where it acts (world)
OUT_ACTIVE = 6          # 1.0 when the point touched the ground in the step
OUT_COLS = 7

# --- stats (int64) ---------------------------------------------------------------------------
STAT_STEPS = 0          # steps taken
STAT_UNCONVERGED = 1    # solves that ran out of iterations
STAT_MAX_ITERATIONS = 2  # the most Newton iterations one solve took
STAT_ROWS = 3           # rows in the last solve
STAT_ITERATIONS = 4     # Newton iterations in all
STAT_SOLVES = 5         # solves (steps with rows)
STATS_LEN = 6

# --- step status -------------------------------------------------------------------------------
STEP_OK = 0
STEP_DIVERGED = 1       # NaN, inf or beyond BOUND
STEP_SINGULAR = 2       # W (or the reduced M) not positive definite
