"""The constraint rows' impulses: one convex problem over the step's velocities, solved by
Newton's method, as MuJoCo's Newton solver and Drake's SAP solve theirs.

The rows stage of a step (step.py) ends at

    v+ = argmin_v  1/2 v^T W v - v^T M v* + sum_r l_r(J_r v)

with W = M + dt D (the joints' viscous damping, implicit) and v* the smooth step's velocity.
Each row r is a direction J_r in velocity space (a joint's unit row, a contact's normal or
tangent at a point) whose impulse lam_r = -l_r'(u) is a monotone function of the row's velocity
u = J_r v (so l_r is convex and the problem strictly convex: v+ is unique even where the
impulses are not, as on a box resting on four corners):

LIMIT    a joint's velocity bounds [lo, hi] (position limits, speed limits) and its Coulomb
         friction (|lam| <= fric, holding the joint still when it can): l = fric |u| on
         [lo, hi], infinite outside. Hard, so regularised and made exact by the method of
         multipliers: lam = mult + (w - u) / r with w = prox(u - r mult) the velocity the row
         allows; each outer round sets mult = lam, and the row's error w - u shrinks by about
         r / (r + G_rr) per round (r = 1e-6 G_rr: one or two rounds).
SOFT     a spring-damper lam = b - a u kept in [lo, hi]: a contact's normal ([0, inf): it never
         pulls), a drive's PD within its effort limit. Smooth; exact as it is.
TANGENT  two rows (r, r + 1), a contact's tangent plane: Coulomb friction in a disk of
         radius rho, smoothed at its centre: lam_t = -rho u_t / sqrt(|u_t|^2 + (c rho)^2),
         i.e. -u_t / c at small slip (stiction: the contact creeps at c |lam_t|, c the stick
         compliance; 2.1 c rho at 0.9 of the cone) and on the rim against the slip once it
         slides (maximal dissipation). A kink there (a disk and a stiff centre) would leave
         Newton alternating between the two Hessians near it, converging only linearly; the
         smooth law converges quadratically through stick and slip. The radius rho = mu lam_n
         is the normal impulse of the last outer round:
         Coulomb's cone couples the two, which no convex problem can say exactly (MuJoCo and
         SAP relax it, and a sliding body then hovers by about mu |v_t| (dt + c_n/k_n): a
         centimetre at 1 m/s here); the outer rounds reach the exact cone instead.

Newton: the gradient g = W v - M v* - J^T lam(J v), the Hessian H = W + J^T S J (S = -dlam/du,
per row, a 2 x 2 block per tangent pair), the step d = -H^-1 g (spd.py's L^T D L over the tree's
parent array: J^T S J keeps the branch-induced pattern of M), then an exact line search along d
(the cost's derivative along d is monotone: a safeguarded Newton on it, O(rows) per trial). Every
l_r is piecewise quadratic but a contact's disk, so once no row changes piece under a full step
the iterate is the minimum (to rounding); with contacts, Newton converges quadratically. The
inner loop ends there or when a step moves no velocity by more than the tolerance; the outer
round then updates the multipliers (and the disks' radii), and the solve ends when neither
moves a row's velocity by more than the tolerance either.

Two things keep a solve on a robot lying on many contacts to a few factorisations (a G1 on
its back: 6.6 a step before them, 2-3 of its 4.7 iterations after):
- the disks' radii follow the normal impulses between iterations, not only between outer
  rounds: after a step whose model held (alpha within a tenth of 1) that changed no row's
  piece, each radius whose move would change its slip by more than the tolerance
  (``radius_move``) takes it. Not while pieces change (a contact switching on and off under a
  radius that followed it made Newton cycle, 100 iterations in one step of a G1 settling on
  its back), nor smaller moves (each step's problem then differs a little from the last's:
  steps that never got below the tolerance); the outer round makes those.
- a step whose model held with no piece changed is followed by one on the same factor (the
  iterate and the radii moved little, H with them), the step the convergence check has just
  solved for; while the steps shrink to half or less: near a contact's kink the stale steps
  of one solve cycled above the tolerance, so from then on every step takes a fresh factor.

Three more keep a robot falling over (contacts coming and going, feet sliding, joints reaching
their limits) to a few (a G1 falling from standing: 10.9 iterations a step and 11 solves out of
100 before them, 6.2 and none after):
- the first step's model of a row predicted to hold (assemble_hessian) is its law in that
  piece, at the start (model_offsets): held where it was held, not where the start has it,
  which a stiff row's Hessian alone would keep it at (each such row then came back one
  iteration at a time, the line search stopping at its kink a millionth of the way along);
- a joint without friction is free within its bounds in one piece, whichever way it moves
  (its velocity's sign changing was counted as a change of piece, keeping the radii from
  their refreshes);
- the radii's refreshes take the secant through their last two gaps (refresh_radii).

A solve that runs out of iterations keeps its last iterate: every row's impulse is then within
its own law (friction within the last radius, limits and drives as the iterate has them), each
dissipative, so the step gains no energy; it is counted (``STAT_UNCONVERGED``).
"""
import math

from rbd_ros.dynamics._jit import kernel
from rbd_ros.dynamics.spd import ltdl_factor, ltdl_solve

from .layout import (LIMIT, ROW_A, ROW_B, ROW_DU, ROW_FRIC, ROW_GAP, ROW_HI, ROW_KIND, ROW_LAM,
                     ROW_LO, ROW_MODEL, ROW_MULT, ROW_NNZ, ROW_PARTNER, ROW_PIECE, ROW_R,
                     ROW_RADIUS, ROW_SLOPE, ROW_SLOPE_X, ROW_TARGET, ROW_U, SOFT, TANGENT)

#: a LIMIT row's regularisation relative to its G_rr (W's diagonal estimate): each multiplier
#: round leaves 1e-6 of the last round's error, and H stays well conditioned (a held row adds
#: 1e6 / G_rr); stiffer (1e-8) took more Newton iterations on a limp humanoid lying on its
#: joint limits (its kinks stop the line search sooner), softer (1e-4) more rounds
LIMIT_REGULARISATION = 1e-6
#: a contact's tangent rows are a touch compliant, relative to their G = J W^-1 J^T: a foot on
#: four points has 8 tangent rows for 3 in-plane motions. A sticking contact slips at
#: STICK_COMPLIANCE G lam_t: 1.3e-7 m/s for a 1 kg box on a 20 degree slope.
STICK_COMPLIANCE = 1e-4
#: the line search ends when the cost's slope along d is this fraction of its start
LINE_SEARCH_TOLERANCE = 1e-3

# pieces of a row's law (a row that changes piece changes the Hessian or the impulse's
# constant part): sliding up, sliding down, stuck, at a bound, a spring inside its bounds
UP, DOWN, STUCK, AT_LO, AT_HI, INSIDE = 0, 1, 2, 3, 4, 5


@kernel
def limit_impulse(u, mult, r, lo, hi, fric):
    """(lam, slope, piece) of a LIMIT row at velocity u: the velocity the row allows,
    w = clip(shrink(u - r mult, r fric), lo, hi) (friction holds u at 0 unless the force it
    takes exceeds fric), and lam = (w - (u - r mult)) / r, written out per piece (sliding:
    exactly -+fric; (x - r fric - x) / r would lose the digits that r fric is below x)."""
    x = u - r * mult
    t = r * fric
    if fric == 0.0:                 # (free within the bounds: one piece, whichever way it moves)
        w, lam, piece = x, 0.0, UP
    elif x > t:
        w, lam, piece = x - t, -fric, UP
    elif x < -t:
        w, lam, piece = x + t, fric, DOWN
    else:
        w, lam, piece = 0.0, -x / r, STUCK
    if lo > hi or w < lo:           # (a joint past both bounds' reach: the lower one wins)
        lam, piece = (lo - x) / r, AT_LO
    elif w > hi:
        lam, piece = (hi - x) / r, AT_HI
    return lam, (0.0 if piece == UP or piece == DOWN else 1.0 / r), piece


@kernel
def soft_impulse(u, a, b, lo, hi):
    """(lam, slope, piece) of a SOFT row: b - a u within [lo, hi]."""
    lam = b - a * u
    if lam < lo:
        return lo, 0.0, AT_LO
    if lam > hi:
        return hi, 0.0, AT_HI
    return lam, a, INSIDE


@kernel
def tangent_impulse(u1, u2, c, radius):
    """(lam1, lam2, s11, s12, s22, piece) of a tangent pair: Coulomb's disk of ``radius``
    smoothed at its centre, lam = -radius u / sqrt(|u|^2 + (c radius)^2): -u / c at small
    slip (stiction, stiff), on the rim against the slip beyond a few c radius of it; s =
    -d lam / d u = (radius / s) (I - u u^T / s^2), s = sqrt(|u|^2 + (c radius)^2)."""
    if not radius > 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, UP
    e = c * radius
    s2 = u1 * u1 + u2 * u2 + e * e
    s = math.sqrt(s2)
    k = radius / s
    return -k * u1, -k * u2, k * (1.0 - u1 * u1 / s2), -k * u1 * u2 / s2, \
        k * (1.0 - u2 * u2 / s2), (STUCK if u1 * u1 + u2 * u2 <= e * e else UP)


@kernel
def evaluate_pair(rf, ri, r):
    """The tangent pair at r's impulses, slopes and piece at its velocities and radius.
    Returns whether its piece changed."""
    l1, l2, s11, s12, s22, piece = tangent_impulse(
        rf[ROW_U, r], rf[ROW_U, r + 1], rf[ROW_R, r], rf[ROW_RADIUS, r])
    rf[ROW_LAM, r], rf[ROW_LAM, r + 1] = l1, l2
    rf[ROW_SLOPE, r], rf[ROW_SLOPE, r + 1], rf[ROW_SLOPE_X, r] = s11, s22, s12
    changed = ri[ROW_PIECE, r] != piece
    ri[ROW_PIECE, r] = piece
    return changed


@kernel
def evaluate_rows(rf, ri, nrows):
    """Every row's impulse, slope and piece at its velocity rf[ROW_U]. Returns (whether a
    row changed its piece, whether a sliding contact (the one law that is not piecewise
    quadratic) is among them)."""
    changed = False
    curved = False
    r = 0
    while r < nrows:
        kind = ri[ROW_KIND, r]
        if kind == TANGENT:
            changed = evaluate_pair(rf, ri, r) or changed
            curved = curved or rf[ROW_RADIUS, r] > 0.0      # (a smooth, not quadratic, law)
            r += 2
            continue
        if kind == LIMIT:
            lam, slope, piece = limit_impulse(rf[ROW_U, r], rf[ROW_MULT, r], rf[ROW_R, r],
                                              rf[ROW_LO, r], rf[ROW_HI, r], rf[ROW_FRIC, r])
        else:
            lam, slope, piece = soft_impulse(rf[ROW_U, r], rf[ROW_A, r], rf[ROW_B, r],
                                             rf[ROW_LO, r], rf[ROW_HI, r])
        rf[ROW_LAM, r], rf[ROW_SLOPE, r] = lam, slope
        changed = changed or ri[ROW_PIECE, r] != piece
        ri[ROW_PIECE, r] = piece
        r += 1
    return changed, curved


@kernel
def row_velocities(J, nz, ri, nrows, x, field, rf):
    """rf[field, r] = J_r x for every row (over its nonzero columns)."""
    for r in range(nrows):
        s = 0.0
        for k in range(ri[ROW_NNZ, r]):
            c = nz[r, k]
            s += J[r, c] * x[c]
        rf[field, r] = s


@kernel
def slope_along(rf, ri, nrows, alpha):
    """(sum_r lam_r(u_r + alpha du_r) du_r, sum_r du_r S_r(u_r + alpha du_r) du_r): the rows'
    part of the cost's first and second derivative along the search direction."""
    first = 0.0
    second = 0.0
    r = 0
    while r < nrows:
        kind = ri[ROW_KIND, r]
        u = rf[ROW_U, r] + alpha * rf[ROW_DU, r]
        du = rf[ROW_DU, r]
        if kind == TANGENT:
            du2 = rf[ROW_DU, r + 1]
            l1, l2, s11, s12, s22, _ = tangent_impulse(
                u, rf[ROW_U, r + 1] + alpha * du2, rf[ROW_R, r], rf[ROW_RADIUS, r])
            first += l1 * du + l2 * du2
            second += s11 * du * du + 2.0 * s12 * du * du2 + s22 * du2 * du2
            r += 2
            continue
        if kind == LIMIT:
            lam, slope, _ = limit_impulse(u, rf[ROW_MULT, r], rf[ROW_R, r], rf[ROW_LO, r],
                                          rf[ROW_HI, r], rf[ROW_FRIC, r])
        else:
            lam, slope, _ = soft_impulse(u, rf[ROW_A, r], rf[ROW_B, r], rf[ROW_LO, r],
                                         rf[ROW_HI, r])
        first += lam * du
        second += slope * du * du
        r += 1
    return first, second


@kernel
def line_search(rf, ri, nrows, d_g, d_W_d):
    """The step length alpha > 0 that minimises the cost along d: the root of
    phi'(alpha) = d^T g + alpha d^T W d - sum_r (lam_r(u_r + alpha du_r) - lam_r(u_r)) du_r,
    monotone in alpha (d^T g < 0 at the start). Safeguarded Newton from alpha = 1 (the full
    Newton step, exact when no row changes piece)."""
    base, _ = slope_along(rf, ri, nrows, 0.0)
    lo_a, hi_a = 0.0, math.inf
    target = LINE_SEARCH_TOLERANCE * abs(d_g)
    alpha = 1.0
    for _ in range(50):
        rows_first, rows_second = slope_along(rf, ri, nrows, alpha)
        slope = d_g + alpha * d_W_d - (rows_first - base)
        if abs(slope) <= target:
            return alpha
        if slope < 0.0:
            lo_a = alpha
        else:
            hi_a = alpha
        step = alpha - slope / (d_W_d + rows_second)
        if step <= lo_a or step >= hi_a:        # outside the bracket: bisect (or double)
            step = 0.5 * (lo_a + hi_a) if math.isfinite(hi_a) else 2.0 * alpha
        if hi_a - lo_a <= 1e-12 * hi_a:
            return step
        alpha = step
    return alpha


@kernel
def assemble_hessian(W, parent, J, nz, rf, ri, nrows, H, predicted):
    """H = W + J^T S J, lower triangle (what spd.py reads), over each row's nonzero columns
    (a tangent pair's two rows share theirs: they are one point's). ``predicted``: what held
    last step counts as held though the start has it just free, a LIMIT row whose
    warm-started multiplier is not 0 and a contact that stuck (ROW_MULT 1 on its pair: its
    law's slopes where it gives the share of its disk it used then; 1 / c at zero share):
    its bound moved with the step, and a first step that ignored it would run into its stiff
    kink at once (the line search then stops a millionth of the way).
    A predicted row takes the piece it is predicted in, and the first step's right-hand side
    its impulse there (ROW_MODEL, model_offsets): the next evaluate_rows says whether the
    prediction held at the new iterate (a step under a wrong one is not the solution's)."""
    n = W.shape[0]
    for i in range(n):                  # (W's lower triangle within the parent pattern)
        H[i, i] = W[i, i]
        j = parent[i]
        while j >= 0:
            H[i, j] = W[i, j]
            j = parent[j]
    r = 0
    while r < nrows:
        if ri[ROW_KIND, r] == TANGENT:      # (a pair without its normal row before it)
            s11, s22, s12 = tangent_slopes(rf, ri, r, predicted)
            add_point_block(H, J, nz, ri, r, r, 0.0, s11, s22, s12)
            r += 2
            continue
        s = row_slope(rf, ri, r, predicted)
        if (r + 2 < nrows and ri[ROW_KIND, r + 1] == TANGENT and ri[ROW_PARTNER, r + 1] == r
                and same_columns(nz, ri, r, r + 1)):
            # a contact's normal and tangent rows: one point's, one pass over its columns
            s11, s22, s12 = tangent_slopes(rf, ri, r + 1, predicted)
            add_point_block(H, J, nz, ri, r, r + 1, s, s11, s22, s12)
            r += 3
            continue
        if s != 0.0:
            count = ri[ROW_NNZ, r]
            for ka in range(count):     # (each pair of columns once: H's lower triangle)
                a = nz[r, ka]
                sa = s * J[r, a]
                for kb in range(ka, count):
                    b = nz[r, kb]
                    H[max(a, b), min(a, b)] += sa * J[r, b]
        r += 1


@kernel
def row_slope(rf, ri, r, predicted):
    """Row r's slope in H (a LIMIT or SOFT row): its law's at the iterate, or, ``predicted``,
    1 / r for a LIMIT row that held last step (assemble_hessian), which takes that piece."""
    s = rf[ROW_SLOPE, r]
    if predicted and s == 0.0 and ri[ROW_KIND, r] == LIMIT and rf[ROW_MULT, r] != 0.0:
        mult = rf[ROW_MULT, r]        # held by friction, or at the bound it pushed from
        piece = STUCK if abs(mult) <= rf[ROW_FRIC, r] else (AT_LO if mult > 0.0 else AT_HI)
        # that piece's velocity: held where it was held (0 within the bounds, or the bound),
        # not where the start has it; none when the bound is out of this step's reach (the
        # step leaves out bounds far from v*: a prediction there would hold it at infinity)
        lo, hi = rf[ROW_LO, r], rf[ROW_HI, r]
        w = min(max(0.0, lo), hi) if piece == STUCK else (lo if piece == AT_LO else hi)
        if math.isfinite(w):
            s = 1.0 / rf[ROW_R, r]
            ri[ROW_PIECE, r] = piece
            rf[ROW_MODEL, r] = (w - (rf[ROW_U, r] - rf[ROW_R, r] * mult)) * s - rf[ROW_LAM, r]
    return s


@kernel
def tangent_slopes(rf, ri, r, predicted):
    """(s11, s22, s12) of the tangent pair at r in H: its law's at the iterate, or,
    ``predicted`` for a contact that stuck last step (ROW_MULT 1), its law's at the slip that
    gives last step's share of its disk (ROW_A of the two rows), whose piece it takes."""
    if predicted and rf[ROW_MULT, r] == 1.0:
        c, radius = rf[ROW_R, r], rf[ROW_RADIUS, r]
        y1, y2 = rf[ROW_A, r], rf[ROW_A, r + 1]
        k = c * radius / math.sqrt(1.0 - y1 * y1 - y2 * y2)
        u1, u2 = -y1 * k, -y2 * k       # (the slip at which its impulse is y radius)
        _, _, s11, s12, s22, ri[ROW_PIECE, r] = tangent_impulse(u1, u2, c, radius)
        # the law there, linear, at the start: lam(u) = y radius - S (u - (u1, u2))
        d1, d2 = rf[ROW_U, r] - u1, rf[ROW_U, r + 1] - u2
        rf[ROW_MODEL, r] = y1 * radius - s11 * d1 - s12 * d2 - rf[ROW_LAM, r]
        rf[ROW_MODEL, r + 1] = y2 * radius - s12 * d1 - s22 * d2 - rf[ROW_LAM, r + 1]
        return s11, s22, s12
    return rf[ROW_SLOPE, r], rf[ROW_SLOPE, r + 1], rf[ROW_SLOPE_X, r]


@kernel
def same_columns(nz, ri, r, s):
    """Whether rows r and s have the same nonzero columns, in the same order."""
    if ri[ROW_NNZ, r] != ri[ROW_NNZ, s]:
        return False
    for k in range(ri[ROW_NNZ, r]):
        if nz[r, k] != nz[s, k]:
            return False
    return True


@kernel
def add_point_block(H, J, nz, ri, rn, rt, sn, s11, s22, s12):
    """H += the normal row rn's sn J_n^T J_n and the tangent pair rt, rt + 1's 2 x 2 block
    (rn = rt: no normal, sn 0), over the pair's columns (one point's: the normal's too), each
    pair of columns once."""
    if sn == 0.0 and s11 == 0.0 and s22 == 0.0 and s12 == 0.0:
        return
    count = ri[ROW_NNZ, rt]
    for ka in range(count):
        a = nz[rt, ka]
        an, a1, a2 = J[rn, a], J[rt, a], J[rt + 1, a]
        for kb in range(ka, count):
            b = nz[rt, kb]
            bn, b1, b2 = J[rn, b], J[rt, b], J[rt + 1, b]
            value = sn * an * bn + s11 * a1 * b1 + s22 * a2 * b2 + s12 * (a1 * b2 + a2 * b1)
            H[max(a, b), min(a, b)] += value        # (no branch: the columns' order is mixed)


@kernel
def symmetric_times(A, parent, x, out):
    """out = A x, A symmetric with its lower triangle nonzero only where ``parent`` says
    (spd.py: the tree's branch-induced pattern, or a chain for a dense A): the tree's cost,
    not n^2."""
    n = A.shape[0]
    for i in range(n):
        out[i] = A[i, i] * x[i]
    for i in range(n):
        j = parent[i]
        while j >= 0:
            out[i] += A[i, j] * x[j]
            out[j] += A[i, j] * x[i]
            j = parent[j]


@kernel
def gradient(W, parent, Mv, J, nz, rf, ri, nrows, v, g):
    """g = W v - M v* - J^T lam."""
    n = W.shape[0]
    symmetric_times(W, parent, v, g)
    for i in range(n):
        g[i] -= Mv[i]
    for r in range(nrows):
        lam = rf[ROW_LAM, r]
        if lam != 0.0:
            for k in range(ri[ROW_NNZ, r]):
                c = nz[r, k]
                g[c] -= J[r, c] * lam


@kernel
def radius_move(rf, ri, r, tol_v):
    """(radius, moved) of the tangent pair at r: its disk's radius from its normal row's
    impulse at the iterate, mu lam_n, and whether the change moves the pair's slip by more
    than tol_v: G |d lam_t|, with d lam_t / d rho = -(|u| / s)^3 along u (0 while it sticks,
    1 once it slides; G = c / STICK_COMPLIANCE)."""
    radius = rf[ROW_FRIC, r] * max(rf[ROW_LAM, ri[ROW_PARTNER, r]], 0.0)   # mu lam_n
    old = rf[ROW_RADIUS, r]
    if radius == old:
        return radius, False
    u1, u2, e = rf[ROW_U, r], rf[ROW_U, r + 1], rf[ROW_R, r] * old
    u2s = u1 * u1 + u2 * u2
    share = (u2s / (u2s + e * e)) ** 1.5 if u2s > 0.0 else 0.0
    return radius, abs(radius - old) * share * rf[ROW_R, r] / STICK_COMPLIANCE > tol_v


@kernel
def refresh_radii(rf, ri, nrows, tol_v, extrapolate):
    """Between two Newton steps: each tangent pair whose disk's radius moves its slip by more
    than tol_v (radius_move) takes it, and its impulse and slopes there (smaller moves are
    left to the outer round, as they would make each step's problem a little different from
    the last's, the steps never smaller than the tolerance). ``extrapolate`` (a refresh
    after a Newton step before this one, since the last outer round): the radii are a fixed point,
    rho = mu lam_n(rho), which plain refreshes reach only linearly: each left about a third
    of the last one's gap on a G1 standing on its feet (10-15 Newton steps), and on feet
    sliding as it fell a gap of alternating sign, 0.97 of the last (100 steps, unconverged).
    Anderson's step (Aitken's across the pairs) takes the secant through the last two
    refreshes' gaps instead. Returns (whether a pair changed its piece, whether any radius
    moved, whether any disk has a radius now)."""
    refreshed, curved = False, False
    across, along = 0.0, 0.0    # (over the pairs that move: gap . (gap - last gap), |...|^2)
    now, before = 0.0, 0.0      # (their |gap|^2, |last gap|^2)
    r = 0
    while r < nrows:
        if ri[ROW_KIND, r] == TANGENT:
            target, moved = radius_move(rf, ri, r, tol_v)
            if moved:           # (a pair too still to move keeps its gap: noise to a secant)
                refreshed = True
                gap = target - rf[ROW_RADIUS, r]
                change = gap - rf[ROW_GAP, r]
                across += gap * change
                along += change * change
                now += gap * gap
                before += rf[ROW_GAP, r] * rf[ROW_GAP, r]
            r += 2
        else:
            r += 1
    # gamma = lambda / (lambda - 1) for gaps that change by lambda a refresh: a jump of at
    # most 10x the gap (lambda 0.9), the mean of the last two targets at most (lambda -1:
    # alternating); none while the gaps do not shrink (near the tolerance, a step's rounding
    # makes the secant's slope)
    gamma = 0.0
    if extrapolate and refreshed and along > 0.0 and now < before:
        gamma = min(max(across / along, -9.0), 0.5)
    changed = False
    r = 0
    while r < nrows:
        if ri[ROW_KIND, r] != TANGENT:
            r += 1
            continue
        target, moved = radius_move(rf, ri, r, tol_v)
        last_target = rf[ROW_TARGET, r]
        rf[ROW_TARGET, r] = target          # (every pair's: a gap left from a refresh long
        rf[ROW_GAP, r] = target - rf[ROW_RADIUS, r]     # past would rule the secant)
        if moved:
            rf[ROW_RADIUS, r] = max(target - gamma * (target - last_target), 0.0)
            changed = evaluate_pair(rf, ri, r) or changed
        curved = curved or rf[ROW_RADIUS, r] > 0.0
        r += 2
    return changed, refreshed, curved


@kernel
def outer_round(rf, ri, nrows, tol_v):
    """The multipliers and the disks' radii from the iterate's impulses. Returns whether any
    row's velocity moves by more than tol_v for it (a LIMIT row's error r |lam - mult|, a
    pair's radius_move)."""
    moved = False
    r = 0
    while r < nrows:
        kind = ri[ROW_KIND, r]
        if kind == LIMIT:
            change = rf[ROW_LAM, r] - rf[ROW_MULT, r]
            if rf[ROW_R, r] * abs(change) > tol_v:
                moved = True
            rf[ROW_MULT, r] = rf[ROW_LAM, r]
        elif kind == TANGENT:
            radius, radius_moved = radius_move(rf, ri, r, tol_v)
            moved = moved or radius_moved
            rf[ROW_RADIUS, r] = radius
            r += 2
            continue
        r += 1
    return moved


@kernel
def held_impulses(W, parent, Mv, J, nz, rf, ri, nrows, v, g):
    """A joint held by its LIMIT row (stuck, or at a bound) takes the impulse that zeroes its
    coordinate of the gradient: the row's law says it as (w - x) / r, which multiplies the
    rounding of v by 1 / r (1e-8 of an impulse's size at a wrist); v is not changed."""
    gradient(W, parent, Mv, J, nz, rf, ri, nrows, v, g)
    for r in range(nrows):
        if ri[ROW_KIND, r] == LIMIT and ri[ROW_PIECE, r] >= STUCK and ri[ROW_NNZ, r] == 1:
            rf[ROW_LAM, r] += g[nz[r, 0]] / J[r, nz[r, 0]]


@kernel
def solve_rows(W, Mv, parent, J, nz, rf, ri, nrows, v, H, g, d, iterations, tol_v):
    """v (in: the start, out: v+) minimising the step's problem (the module docstring) over
    the nrows rows. W is M + dt D (dense, both triangles), Mv = M v*. Returns the Newton
    iterations taken, iterations + 1 when it ran out of them, or -1 when H was not positive
    definite."""
    n = W.shape[0]
    taken = 0
    full_step = False       # the last step was a full Newton step
    modelled = False        # ... or within a tenth of one
    small_step = False      # the last step moved no velocity by more than tol_v
    reused = False          # the last step was made with the factor of the one before
    contracting = True      # every check's step was at most half the step before it
    last_step = math.inf    # the largest velocity change of the last step
    secant = False          # the radii were refreshed after a Newton step since the last
                            # outer round (refresh_radii extrapolates then)
    while True:
        checked = False     # d is the Newton step at v with the last factor
        row_velocities(J, nz, ri, nrows, v, ROW_U, rf)
        changed, curved = evaluate_rows(rf, ri, nrows)   # (pieces against the Hessian's)
        if taken == 0 or (modelled and not changed):
            piece_changed, refreshed, now_curved = refresh_radii(
                rf, ri, nrows, tol_v, secant)
            if refreshed:       # a new problem: the last step's size says nothing of it
                secant = taken > 0     # (the start's refresh follows no step: no secant from it)
                changed = changed or piece_changed
                curved, full_step, small_step = now_curved, False, False
        if taken > 0 and modelled and not changed and curved and not small_step:
            # a contact's law is not quadratic: after a step its model held (alpha near 1), is
            # the next Newton step already within the tolerance? Measured with the last factor
            # (H holds it still: a solve, not a factorisation), as a simplified Newton step
            # would be
            gradient(W, parent, Mv, J, nz, rf, ri, nrows, v, g)
            for i in range(n):
                d[i] = -g[i]
            ltdl_solve(H, parent, d)
            largest = 0.0
            for i in range(n):
                largest = max(largest, abs(d[i]))
            small_step = largest <= tol_v
            checked = True
            # a stale factor only while the steps shrink (on a contact's law near its kink,
            # steps on one cycled, never below the tolerance): else fresh ones to the end
            contracting = contracting and largest <= 0.5 * last_step
            if small_step:      # taken: the iterate's gradient is then 0 to rounding
                for i in range(n):
                    v[i] += d[i]
                row_velocities(J, nz, ri, nrows, v, ROW_U, rf)
                evaluate_rows(rf, ri, nrows)
                checked = False
        if taken > 0 and (small_step or (full_step and not changed)):
            # the inner problem is solved, or Newton is in its last piece: the outer round
            # (each round taking one Newton iteration, not a converged inner solve); done
            # when it moves no row and the inner problem is solved
            moved = outer_round(rf, ri, nrows, tol_v)
            if not moved and (small_step or not curved):
                held_impulses(W, parent, Mv, J, nz, rf, ri, nrows, v, g)
                return taken
            if moved:
                secant = False          # (the outer round moved the radii: no secant)
                moved_piece, _ = evaluate_rows(rf, ri, nrows)
                changed = changed or moved_piece
                checked = False
        if taken >= iterations:
            return iterations + 1
        reuse = contracting and taken > 0 and modelled and not changed and not reused
        if not (reuse and checked):     # (else d is the check's step: the same g and factor)
            gradient(W, parent, Mv, J, nz, rf, ri, nrows, v, g)
            if not reuse:
                assemble_hessian(W, parent, J, nz, rf, ri, nrows, H, taken == 0)
                if not ltdl_factor(H, parent):
                    return -1
            for i in range(n):
                d[i] = -g[i]
            if taken == 0:          # the first step: the predicted rows' model, not the start's
                model_offsets(J, nz, rf, ri, nrows, d)
            ltdl_solve(H, parent, d)
        reused = reuse
        row_velocities(J, nz, ri, nrows, d, ROW_DU, rf)
        d_g = 0.0
        for i in range(n):
            d_g += d[i] * g[i]
        if taken == 0 and not d_g < 0.0:    # the model's step climbs: the plain Newton step
            for i in range(n):
                d[i] = -g[i]
            ltdl_solve(H, parent, d)
            row_velocities(J, nz, ri, nrows, d, ROW_DU, rf)
            d_g = 0.0
            for i in range(n):
                d_g += d[i] * g[i]
        symmetric_times(W, parent, d, g)    # (g is made again next iteration)
        d_W_d = 0.0         # (not as -d^T g - du^T S du: that cancels when stiff rows rule H)
        for i in range(n):
            d_W_d += d[i] * g[i]
        taken += 1
        if not d_g < 0.0:         # (g is zero to rounding: nothing to gain)
            small_step = True
            full_step = False
            continue
        alpha = line_search(rf, ri, nrows, d_g, d_W_d)
        largest = 0.0
        for i in range(n):
            step = alpha * d[i]
            v[i] += step
            largest = max(largest, abs(step))
        full_step = alpha == 1.0
        modelled = abs(alpha - 1.0) <= 0.1
        small_step = largest <= tol_v
        last_step = largest


@kernel
def model_offsets(J, nz, rf, ri, nrows, rhs):
    """rhs += J^T (the predicted rows' model impulses less their laws' at the start): the
    first Newton step's right-hand side, -g with each predicted row held where it is predicted
    to be held (row_slope, tangent_slopes: their ROW_MODEL), so that the step takes it there,
    not only keeps it where the start has it. Rows not predicted have ROW_MODEL 0."""
    for r in range(nrows):
        offset = rf[ROW_MODEL, r]
        if offset != 0.0:
            for k in range(ri[ROW_NNZ, r]):
                c = nz[r, k]
                rhs[c] += J[r, c] * offset


@kernel
def cost(W, parent, Mv, J, nz, rf, ri, nrows, v):
    """The problem's cost at v, 1/2 v^T W v - v^T M v* + sum_r l_r(J_r v) (each l_r up to a
    constant: for comparing two starts). Leaves the rows' velocities at v in rf[ROW_U]."""
    n = W.shape[0]
    total = 0.0
    for i in range(n):                  # (W's lower triangle within the parent pattern)
        s = 0.5 * W[i, i] * v[i]
        j = parent[i]
        while j >= 0:
            s += W[i, j] * v[j]
            j = parent[j]
        total += v[i] * (s - Mv[i])
    row_velocities(J, nz, ri, nrows, v, ROW_U, rf)
    r = 0
    while r < nrows:
        kind = ri[ROW_KIND, r]
        u = rf[ROW_U, r]
        if kind == TANGENT:         # radius (sqrt(|u|^2 + (c radius)^2) - c radius)
            c, radius = rf[ROW_R, r], rf[ROW_RADIUS, r]
            e = c * radius
            total += radius * (math.sqrt(u * u + rf[ROW_U, r + 1] * rf[ROW_U, r + 1] + e * e) - e)
            r += 2
            continue
        if kind == LIMIT:           # the Moreau envelope fric |w| + (x - w)^2 / 2r
            rr, fric = rf[ROW_R, r], rf[ROW_FRIC, r]
            x = u - rr * rf[ROW_MULT, r]
            lam, _, _ = limit_impulse(u, rf[ROW_MULT, r], rr, rf[ROW_LO, r], rf[ROW_HI, r],
                                      fric)
            w = x + rr * lam
            total += fric * abs(w) + 0.5 * rr * lam * lam
        else:                       # SOFT: a u^2 / 2 - b u between the clips, linear beyond
            a, b, lo, hi = rf[ROW_A, r], rf[ROW_B, r], rf[ROW_LO, r], rf[ROW_HI, r]
            if a > 0.0:
                u_hi, u_lo = (b - hi) / a, (b - lo) / a     # lam = hi below u_hi, lo above u_lo
                if u < u_hi:
                    total += -hi * (u - u_hi) + 0.5 * a * u_hi * u_hi - b * u_hi
                elif u > u_lo:
                    total += -lo * (u - u_lo) + 0.5 * a * u_lo * u_lo - b * u_lo
                else:
                    total += 0.5 * a * u * u - b * u
            else:
                total -= min(max(b, lo), hi) * u
        r += 1
    return total
