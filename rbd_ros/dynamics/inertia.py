"""Physical validity of a rigid body's rotational inertia, and the nearest valid one.

A rotational inertia about the centre of mass is physical when its principal moments are
non-negative and each is at most the sum of the other two (the triangle inequality). Both say
one thing: the body's second moments of mass d_i = (l_j + l_k - l_i) / 2 (the diagonal of the
mass distribution's covariance in principal axes) are non-negative, since l_i = d_j + d_k.
A point mass (positive mass, all moments zero) is physical, and so is an inertia that is zero
up to rounding: CAD exports write a point mass as 1e-20-ish noise (iCub's head: all zeros but
ixz = 2.4e-35 on 1.3 kg), which is judged against what a body of that mass and size can have.
"""
import itertools

import numpy as np

#: problems smaller than this fraction of the inertia's scale are rounding (CAD exports print
#: 6 to 8 significant digits), not errors; the scale is the largest principal moment or, when
#: larger, mass * size^2 (a body of that mass and size: a rod of length L has m L^2 / 12)
RELATIVE_TOLERANCE = 1e-6

# l = A d: principal moments from second moments
_A = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])


def inertia_problem(inertia, mass=0.0, size=0.0):
    """None when the symmetric 3x3 ``inertia`` (about the centre of mass) is physical, else
    what is wrong with it, in words. ``mass`` (kg) and ``size`` (m, the body's extent) set the
    scale below which a problem is rounding: 1e-6 of max(largest moment, mass * size^2)."""
    moments = np.linalg.eigvalsh(inertia)
    scale = max(float(np.max(np.abs(moments))), float(mass) * float(size) ** 2)
    tolerance = RELATIVE_TOLERANCE * max(scale, 1e-300)
    shown = '[' + ', '.join(f'{m:.6g}' for m in moments) + ']'
    if moments[0] < -tolerance:
        return f'inertia is not positive semi-definite (principal moments {shown})'
    a, b, c = moments
    if c > a + b + tolerance:
        return (f'principal moments {shown} violate the triangle inequality '
                f'({c:.6g} > {a:.6g} + {b:.6g})')
    return None


def nearest_valid_inertia(inertia):
    """The physical inertia nearest to ``inertia``: the same principal axes, and the principal
    moments l replaced by the least-squares nearest moments A d with second moments d >= 0
    (a 3-variable non-negative least-squares problem, solved by trying every set of active
    constraints). Returns (inertia, old moments, new moments)."""
    moments, axes = np.linalg.eigh(inertia)
    best, best_cost = np.zeros(3), float(moments @ moments)
    for free in itertools.chain.from_iterable(itertools.combinations(range(3), k)
                                              for k in (1, 2, 3)):
        cols = list(free)
        d_free, *_ = np.linalg.lstsq(_A[:, cols], moments, rcond=None)
        if np.all(d_free >= 0):
            d = np.zeros(3)
            d[cols] = d_free
            cost = float(np.sum((_A @ d - moments) ** 2))
            if cost < best_cost:
                best, best_cost = d, cost
    repaired = _A @ best
    return axes @ np.diag(repaired) @ axes.T, moments, repaired
