"""Physical validity of a rigid body's rotational inertia, and the nearest valid one.

A rotational inertia about the centre of mass is physical when its principal moments are
non-negative and each is at most the sum of the other two (the triangle inequality). Both say
one thing: the body's second moments of mass d_i = (l_j + l_k - l_i) / 2 (the diagonal of the
mass distribution's covariance in principal axes) are non-negative, since l_i = d_j + d_k.
A point mass (all moments zero) is physical.
"""
import itertools

import numpy as np

#: problems smaller than this fraction of the largest principal moment are rounding (CAD
#: exports print 6 to 8 significant digits), not errors
RELATIVE_TOLERANCE = 1e-6

# l = A d: principal moments from second moments
_A = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])


def inertia_problem(inertia):
    """None when the symmetric 3x3 ``inertia`` (about the centre of mass) is physical, else
    what is wrong with it, in words."""
    moments = np.linalg.eigvalsh(inertia)
    tolerance = RELATIVE_TOLERANCE * max(float(np.max(np.abs(moments))), 1e-300)
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
