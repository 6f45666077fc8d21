"""Impulses on constraint rows by projected Gauss-Seidel, compiled (numba; interpreted without).

A row r is a direction J_r in velocity space (a joint's unit row, or a contact's normal or
tangent at a point); its velocity is J_r v. With G = J W^-1 J^T (W the step's implicit inertia,
simulation/step.py), impulses lam on the rows change the rows' velocities by G lam from v0.
Each row is one of three kinds:

JOINT    a joint's Coulomb friction and its velocity bounds: the friction impulse
         (|.| <= fric) brings the row's velocity toward 0 (stiction when it can), and the
         velocity ends in [lo, hi] (a limit pushes only as hard as needed).
SOFT     a spring-damper acting along the row: impulse b - a (J_r v), kept in [lo, hi]. A
         contact's normal ([0, inf): it never pulls) and a drive's PD (within its effort
         limit) are soft rows; implicit in the row's velocity, so any gain is stable.
TANGENT  two rows (r, r + 1), a contact's tangent plane: Coulomb friction in a disk,
         |lam_t| <= fric_r lam_normal (the normal row is partner[r]), holding the contact
         still when the disk allows it (stiction), else on the disk's rim against the
         contact's resulting sliding velocity (maximal dissipation, ``sliding_impulse``; not
         the impulse that would stop the contact scaled to the rim, which points elsewhere
         when G's 2 x 2 block is not isotropic: a sliding box would feel 2% less friction
         than mu N).

Gauss-Seidel alone converges slowly when G is ill-conditioned (a light wrist under a heavy
shoulder: ~150 sweeps for an arm held by stiction), so after sweeps 1, 2, 4, 8, ... the rows are
sorted by what the iterate says they do (held at a velocity, a soft row within its bounds, a
contact sticking; or at a bound, sliding), that linear system is solved exactly (``polish``),
and the result is kept if one more sweep leaves it unchanged.

Plain loops over small arrays and the core's one SPD factorisation (rbd_ros/dynamics/spd.py,
L^T D L over a chain: a dense matrix) for every solve, also the step's W: no numpy.linalg
(numba's needs scipy).
"""
import math

import numpy as np

from rbd_ros.dynamics._jit import kernel
from rbd_ros.dynamics.spd import chain, ltdl_factor, ltdl_solve

JOINT, SOFT, TANGENT = 0, 1, 2
#: A contact's tangent rows are a touch compliant, relative to their own G_ii: a foot on four
#: points has 8 tangent rows for 3 in-plane motions, and without it the exact solve trades
#: impulses among them without bound (and Gauss-Seidel converges slowly). A sticking contact
#: then slips at STICK_COMPLIANCE G_ii lam_t: 1.3e-7 m/s for a 1 kg box on a 20 degree slope.
STICK_COMPLIANCE = 1e-4


@kernel
def sweep(G, v, lam, kind, lo, hi, fric, a, b, partner):
    """One Gauss-Seidel pass over the rows, in place; the largest velocity change."""
    n = v.shape[0]
    change = 0.0
    i = 0
    while i < n:
        if kind[i] == TANGENT:                          # rows i, i + 1 together
            j = i + 1
            g11, g12, g22 = G[i, i], G[i, j], G[j, j]
            c1, c2 = STICK_COMPLIANCE * g11, STICK_COMPLIANCE * g22
            g11, g22 = g11 + c1, g22 + c2           # (the compliant tangent rows)
            det = g11 * g22 - g12 * g12
            if det > 0.0:
                f1 = v[i] + c1 * lam[i] - g11 * lam[i] - g12 * lam[j]   # this pair's
                f2 = v[j] + c2 * lam[j] - g12 * lam[i] - g22 * lam[j]   # impulses out
                p1 = -(g22 * f1 - g12 * f2) / det       # what would stop the contact
                p2 = -(g11 * f2 - g12 * f1) / det
                radius = fric[i] * max(lam[partner[i]], 0.0)
                if p1 * p1 + p2 * p2 > radius * radius:   # sliding: on the disk's rim
                    p1, p2 = sliding_impulse(g11, g12, g22, f1, f2, radius)
                d1, d2 = p1 - lam[i], p2 - lam[j]
                if d1 != 0.0 or d2 != 0.0:
                    for k in range(n):        # (v holds J v; the slip -c lam is not in it)
                        v[k] += G[k, i] * d1 + G[k, j] * d2
                    lam[i], lam[j] = p1, p2
                    change = max(change, abs(d1) * g11, abs(d2) * g22)
            i += 2
            continue
        g = G[i, i]
        if g > 0.0:
            free = v[i] - g * lam[i]                    # this row's impulse taken out
            if kind[i] == JOINT:
                stop = -free / g                        # what would stop the joint
                f = min(max(stop, -fric[i]), fric[i])
                target = min(max(free + g * f, lo[i]), hi[i]) if lo[i] <= hi[i] else lo[i]
                new = (target - free) / g
            else:                                       # SOFT: lam = b - a (free + g lam)
                new = min(max((b[i] - a[i] * free) / (1.0 + a[i] * g), lo[i]), hi[i])
            delta = new - lam[i]
            if delta != 0.0:
                for k in range(n):
                    v[k] += G[k, i] * delta
                lam[i] = new
                change = max(change, abs(delta) * g)
        i += 1
    return change


@kernel
def sliding_impulse(g11, g12, g22, f1, f2, radius):
    """The friction impulse p on the rim |p| = radius against the contact's resulting sliding
    velocity f + G p (maximal dissipation: it minimises the kinetic energy 1/2 p^T G p + f^T p
    over the disk). On the rim, (G + s) p = -f for the s >= 0 that gives |p| = radius (then
    f + G p = -s p): in G's eigenbasis |p(s)| is monotone in s, found by Newton on
    1/|p(s)| - 1/radius (a trust-region step's secular equation; a few iterations)."""
    if not radius > 0.0:
        return 0.0, 0.0
    half = 0.5 * (g11 - g22)
    d = math.sqrt(half * half + g12 * g12)
    e1, e2 = 0.5 * (g11 + g22) + d, 0.5 * (g11 + g22) - d
    if abs(g12) > 1e-300:                       # eigenvector of e1: (e1 - g22, g12)
        c, s_ = e1 - g22, g12
        norm = math.sqrt(c * c + s_ * s_)
        c, s_ = c / norm, s_ / norm
    elif g11 >= g22:
        c, s_ = 1.0, 0.0
    else:
        c, s_ = 0.0, 1.0
    a, b = c * f1 + s_ * f2, -s_ * f1 + c * f2   # f in the eigenbasis
    s = 0.0
    for _ in range(30):
        x, y = a / (e1 + s), b / (e2 + s)
        norm = math.sqrt(x * x + y * y)
        if norm <= radius * (1.0 + 1e-14):
            break
        slope = (x * x / (e1 + s) + y * y / (e2 + s)) / (norm * norm * norm)
        s += (1.0 / radius - 1.0 / norm) / slope
    x, y = -a / (e1 + s), -b / (e2 + s)
    norm = math.sqrt(x * x + y * y)
    if norm > 0.0:                              # (exactly on the rim)
        x, y = x * radius / norm, y * radius / norm
    return c * x - s_ * y, s_ * x + c * y


@kernel
def polish(G, v0, lam, v, kind, lo, hi, fric, a, b, partner, lam_new, v_new):
    """The exact solution for the rows' present roles into (lam_new, v_new); False when it
    cannot be formed."""
    n = v0.shape[0]
    held = np.zeros(n, dtype=np.int64)
    target = np.zeros(n)
    compliance = np.zeros(n)
    nh = 0
    i = 0
    while i < n:
        if kind[i] == TANGENT:
            j = i + 1
            radius = fric[i] * max(lam[partner[i]], 0.0)
            if math.sqrt(lam[i] * lam[i] + lam[j] * lam[j]) < radius * (1.0 - 1e-9):
                held[nh], held[nh + 1] = i, j           # sticking: both velocities 0
                target[i], target[j] = 0.0, 0.0
                # (a box on four corners has 8 tangent rows for 3 in-plane motions: a
                # touch of compliance keeps the held block positive definite)
                compliance[i], compliance[j] = STICK_COMPLIANCE * G[i, i], STICK_COMPLIANCE * G[j, j]
                nh += 2
                lam_new[i], lam_new[j] = 0.0, 0.0
            else:                                       # sliding: this impulse, kept
                lam_new[i], lam_new[j] = lam[i], lam[j]
            i += 2
            continue
        if kind[i] == JOINT:
            at_lo = v[i] <= lo[i] + 1e-12
            at_hi = v[i] >= hi[i] - 1e-12
            sliding = (abs(lam[i]) >= fric[i] * (1.0 - 1e-9)
                       and fric[i] > 0.0 and not at_lo and not at_hi)
            target[i] = lo[i] if at_lo else (hi[i] if at_hi else min(max(0.0, lo[i]), hi[i]))
            if sliding:
                lam_new[i] = fric[i] if lam[i] > 0.0 else -fric[i]
            elif not (at_lo or at_hi or fric[i] > 0.0):    # free: nothing acts on it
                lam_new[i] = 0.0
            else:
                lam_new[i] = 0.0
                held[nh] = i
                nh += 1
        else:                                           # SOFT
            span = 1e-9 * (1.0 + abs(lam[i]))
            if lam[i] > lo[i] + span and lam[i] < hi[i] - span:
                # v_i + lam_i / a_i = b_i / a_i
                target[i], compliance[i] = b[i] / a[i], 1.0 / a[i]
                lam_new[i] = 0.0
                held[nh] = i
                nh += 1
            else:
                lam_new[i] = lo[i] if lam[i] <= lo[i] + span else hi[i]
        i += 1
    if nh > 0:
        A = np.empty((nh, nh))
        rhs = np.empty(nh)
        for r in range(nh):
            i = held[r]
            s = target[i] - v0[i]
            for j in range(n):          # the known impulses (held ones are 0 here)
                s -= G[i, j] * lam_new[j]
            rhs[r] = s
            for c in range(nh):
                A[r, c] = G[i, held[c]]
            A[r, r] += compliance[i]
        dense = chain(nh)
        if not ltdl_factor(A, dense):       # a principal block of an SPD matrix (+ a
            return False                    # non-negative diagonal): SPD
        ltdl_solve(A, dense, rhs)
        for r in range(nh):
            lam_new[held[r]] = rhs[r]
    for i in range(n):
        s = v0[i]
        for j in range(n):
            s += G[i, j] * lam_new[j]
        v_new[i] = s
    return True


@kernel
def measured_sweep(G, v, lam, kind, lo, hi, fric, a, b, partner, contacts, before):
    """A sweep and how far it moved: each row's own velocity change, or with contacts what
    the rows' velocities did over the sweep (a body on several contacts is statically
    indeterminate, and Gauss-Seidel trades impulses among them, each row's own change large,
    without changing any velocity). ``before`` is scratch."""
    before[:] = v
    change = sweep(G, v, lam, kind, lo, hi, fric, a, b, partner)
    if contacts:
        change = 0.0
        for i in range(v.shape[0]):
            change = max(change, abs(v[i] - before[i]))
    return change


@kernel
def row_impulses(G, v0, kind, lo, hi, fric, a, b, partner, sweeps, tolerance, lam):
    """The rows' impulses into lam (see the module docstring), starting from lam as given
    (a warm start: the previous step's contact impulses); returns the sweeps taken, or
    sweeps + 1 when the last sweep still changed a velocity by more than the tolerance."""
    n = v0.shape[0]
    v = v0.copy()
    for j in range(n):
        if lam[j] != 0.0:
            for i in range(n):
                v[i] += G[i, j] * lam[j]
    lam_p = np.empty(n)
    v_p = np.empty(n)
    largest = 0.0
    contacts = False
    for i in range(n):
        largest = max(largest, abs(v0[i]))
        contacts = contacts or kind[i] == TANGENT
    scale = tolerance * (1.0 + largest)
    before = np.empty(n)
    for k in range(1, sweeps + 1):
        if measured_sweep(G, v, lam, kind, lo, hi, fric, a, b, partner, contacts, before) < scale:
            return k
        if k & (k - 1) == 0:            # a power of two: try the exact solve
            if polish(G, v0, lam, v, kind, lo, hi, fric, a, b, partner, lam_p, v_p):
                if measured_sweep(G, v_p, lam_p, kind, lo, hi, fric, a, b, partner, contacts,
                                  before) < scale:
                    lam[:] = lam_p
                    return k
    return sweeps + 1
