"""Where a simulated robot can touch the ground: contact points from the URDF's ``<collision>``
shapes and from ``contact_points`` given by the user.

Every shape becomes points fixed to its link's body (a point is a sphere of some radius; its
lowest point is where it touches):

- sphere:   its centre, its radius
- box:      its 8 corners, radius 0
- capsule:  its two end spheres
- cylinder: its two rims; each rim touches at its lowest point, which moves around the rim as
            the cylinder rolls (a wheel rolls smoothly), plus the three points a quarter, a
            half and three quarters of a turn from it (a cylinder standing on its end rests
            on four points)
- mesh:     skipped (one note per link; give the link ``contact_points`` instead)

The ground is the plane ``normal . x = height`` (world frame).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import layout as L


@dataclasses.dataclass(frozen=True)
class ContactPoint:
    """A contact point given by the user: a sphere of ``radius`` at ``xyz`` in ``link``'s frame."""

    link: str
    xyz: tuple[float, float, float]
    radius: float = 0.0

    @classmethod
    def parse(cls, text: str) -> 'ContactPoint':
        """From ``"link x y z radius"`` (radius optional, 0). ValueError naming the problem."""
        parts = str(text).split()
        if len(parts) not in (4, 5):
            raise ValueError(f'{text!r}: expected "link x y z radius" (radius optional)')
        try:
            numbers = [float(x) for x in parts[1:]]
        except ValueError:
            raise ValueError(f'{text!r}: x y z radius must be numbers') from None
        if not all(math.isfinite(x) for x in numbers):
            raise ValueError(f'{text!r}: x y z radius must be finite')
        radius = numbers[3] if len(numbers) == 4 else 0.0
        if radius < 0:
            raise ValueError(f'{text!r}: the radius must be >= 0, got {radius:g}')
        return cls(parts[0], tuple(numbers[:3]), radius)


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One contact point as the step reads it (layout.POINT_*)."""

    link: str
    body: int
    kind: int             # layout.SPHERE or layout.RIM
    quarter: int          # a rim point's quarter turn from the lowest (0..3)
    center: np.ndarray    # in the body frame
    radius: float
    axis: np.ndarray      # a rim's axis, body frame
    u: np.ndarray         # a rim's fixed in-plane direction, body frame


def _in_body(model, link):
    """(body, E, r): the link's frame in its body's frame."""
    f = model.frame_index[link]
    placement = model.frame_placement[f]
    return int(model.frame_body[f]), placement[:9].reshape(3, 3), placement[9:]


def candidates(model, points=(), collisions=True):
    """(candidates, notes): the contact points of the model's collision shapes (when
    ``collisions``) and of ``points`` (ContactPoint); a note names each link whose collision
    shapes include meshes (skipped). ValueError naming an unknown link."""
    out, notes = [], []
    zero = np.zeros(3)
    if collisions:
        for link in model.frame_names:
            shapes = model.link_collisions.get(link, ())
            body, E, r = _in_body(model, link)
            meshes = 0
            for shape in shapes:
                R = E @ shape.origin_rotation          # the shape in the body frame
                c = E @ shape.origin_xyz + r
                if shape.kind == 'sphere':
                    out.append(Candidate(link, body, L.SPHERE, 0, c, shape.size[0], zero, zero))
                elif shape.kind == 'box':
                    half = np.asarray(shape.size) / 2.0
                    for sx in (-1, 1):
                        for sy in (-1, 1):
                            for sz in (-1, 1):
                                corner = c + R @ (half * (sx, sy, sz))
                                out.append(Candidate(link, body, L.SPHERE, 0, corner, 0.0, zero,
                                                     zero))
                elif shape.kind in ('cylinder', 'capsule'):
                    radius, length = shape.size
                    axis = R[:, 2]
                    for end in (-0.5, 0.5):
                        centre = c + end * length * axis
                        if shape.kind == 'capsule':
                            out.append(Candidate(link, body, L.SPHERE, 0, centre, radius, zero,
                                                 zero))
                        else:
                            for quarter in range(4):
                                out.append(Candidate(link, body, L.RIM, quarter, centre, radius,
                                                     axis, R[:, 0]))
                else:
                    meshes += 1
            if meshes:
                notes.append(f'link {link!r}: {meshes} collision mesh{"es" if meshes > 1 else ""} '
                             'skipped (no contact from meshes: give the link contact_points)')
    for point in points:
        if point.link not in model.frame_index:
            links = ', '.join(model.frame_names[:12]) + (', ...' if len(model.frame_names) > 12
                                                          else '')
            raise ValueError(f'contact point on unknown link {point.link!r} (the links: '
                             f'{links})')
        body, E, r = _in_body(model, point.link)
        out.append(Candidate(point.link, body, L.SPHERE, 0, E @ np.asarray(point.xyz, float) + r,
                             float(point.radius), zero, zero))
    return out, notes


def ground_frame(normal):
    """(n, t1, t2): the unit normal and two unit tangents of the ground. ValueError for a
    zero or non-finite normal."""
    n = np.asarray(normal, dtype=float)
    norm = float(np.linalg.norm(n)) if n.shape == (3,) else 0.0
    if not (math.isfinite(norm) and norm > 1e-12):
        shown = ', '.join(f'{float(x):g}' for x in np.ravel(normal))
        raise ValueError(f'must be a non-zero vector of 3 finite numbers, got [{shown}]')
    n = n / norm
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(n, helper)
    t1 /= np.linalg.norm(t1)
    return n, t1, np.cross(n, t1)
