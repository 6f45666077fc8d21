"""Identifying a payload from measured torques: least squares on the inertial regressor.

A payload on a link adds its ten inertial parameters to the link's body, so the torques it
causes are the regressor's ten columns of that body times them:

    tau_measured - ID_model(q, v, a) = Y_body(q, v, a) dpi        (one row per joint, sample)

What the samples can tell: static samples (v = a = 0) excite only gravity, whose force is
linear in m and m c alone: the inertia columns are zero, so mass and centre of mass only. The
mass and centre of mass need the link seen in at least two orientations against gravity (its
rotation about the gravity direction alone cannot tell the component of c along it). Which
parameters are determined is read from the singular values of the (column-scaled) regressor.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .api import inertial_regressor, inverse_dynamics
from .arguments import array

#: singular values below this fraction of the largest (columns scaled to unit norm) are taken
#: as not determined by the samples
RANK_TOLERANCE = 1e-8


@dataclasses.dataclass(frozen=True)
class PayloadEstimate:
    """A payload identified on ``link``: ``mass`` (kg), ``com`` (m, the link's frame),
    ``inertia`` (3x3 kg m^2 about the centre of mass, link axes; None when the samples cannot
    tell it), ``residual_rms`` (N m or N: what the fit leaves of the torques) and the
    ``samples`` it used."""

    link: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray | None
    residual_rms: float
    samples: int


def estimate_payload(model, link, Q, TAU, V=None, A=None):
    """The payload carried on ``link`` that best explains the measured torques TAU (N x nv) at
    configurations Q (N x nq), velocities V and accelerations A (N x nv; None: at rest), beyond
    what ``model`` already predicts. ValueError when the samples determine not even its mass
    and centre of mass (one orientation of the link against gravity), or for bad shapes."""
    payload_columns(model, link)         # (checks the link)
    Q = array(Q, model.nq, 'Q')
    TAU = array(TAU, model.nv, 'TAU')
    if Q.ndim == 1:
        Q, TAU = Q[None], TAU[None]
    n = Q.shape[0]
    if TAU.shape != (n, model.nv):
        raise ValueError(f'TAU must have one row of {model.nv} per configuration, got '
                         f'{TAU.shape}')
    zeros = np.zeros((n, model.nv))
    V = zeros if V is None else array(V, model.nv, 'V').reshape(n, model.nv)
    A = zeros if A is None else array(A, model.nv, 'A').reshape(n, model.nv)
    residual = TAU - inverse_dynamics(model, Q, V, A)
    Y = inertial_regressor(model, Q, V, A, link=link)
    rows, b = Y.reshape(-1, 10), residual.reshape(-1)
    scale = np.linalg.norm(rows, axis=0)
    determined = _rank(rows, scale)
    if determined == 10:
        dpi = _solve(rows, b, scale)
    elif _rank(rows[:, :4], scale[:4]) == 4:
        dpi = np.zeros(10)
        dpi[:4] = _solve(rows[:, :4], b, scale[:4])
    else:
        raise ValueError(f'the samples do not determine the payload\'s mass and centre of mass '
                         f'on {link!r}: they need the link in at least two orientations against '
                         'gravity')
    fit = rows @ dpi - b
    mass, com, inertia = payload_from_parameters(model, link, dpi, determined == 10)
    return PayloadEstimate(link=link, mass=mass, com=com, inertia=inertia,
                           residual_rms=float(np.sqrt(np.mean(fit ** 2))), samples=n)


def payload_columns(model, link):
    """The slice of ``inertial_regressor``'s columns that a payload on ``link`` multiplies
    (its body's ten). ValueError for an unknown link or one of the fixed base."""
    if link not in model.frame_index:
        raise ValueError(f'unknown link {link!r}')
    body = model._link_body[link]
    if body == 0:
        raise ValueError(f'{link!r} belongs to the fixed base: nothing there moves a payload')
    return slice(10 * (body - 1), 10 * body)


def payload_from_parameters(model, link, delta, inertia_determined=True):
    """(mass, com, inertia) of the payload on ``link`` whose ten inertial parameters (about the
    body's frame, ``inertial_parameters`` layout) are ``delta``: com in the link's frame,
    inertia about the centre of mass in link axes (None when not ``inertia_determined``).
    ValueError for a mass too small to place a centre of mass."""
    mass, h = float(delta[0]), np.asarray(delta[1:4], dtype=float)
    if abs(mass) < 1e-12:
        raise ValueError(f'the samples show no payload on {link!r} (mass {mass:.3g} kg)')
    f = model.frame_index[link]
    E, r = model.frame_placement[f, :9].reshape(3, 3), model.frame_placement[f, 9:]
    c_body = h / mass
    inertia = None
    if inertia_determined:
        xx, xy, yy, xz, yz, zz = delta[4:10]
        origin = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        about_com = origin - mass * (float(c_body @ c_body) * np.eye(3) - np.outer(c_body, c_body))
        inertia = E.T @ about_com @ E
    return mass, E.T @ (c_body - r), inertia


def _rank(rows, scale):
    used = scale > 0
    if not np.any(used):
        return 0
    s = np.linalg.svd(rows[:, used] / scale[used], compute_uv=False)
    return int(np.sum(s > RANK_TOLERANCE * s[0]))


def _solve(rows, b, scale):
    x = np.linalg.lstsq(rows / scale, b, rcond=None)[0]
    return x / scale
