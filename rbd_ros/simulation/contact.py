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

The ground is the plane ``normal . x = height`` (world frame). The compiled part (the step's
contact detection, ``Simulator.point_locations``): ``contact_point`` (a candidate's lowest point
and its gap, the one place that geometry is written), ``body_clear_of_ground`` (a body whose
points cannot reach the ground is skipped whole) and ``point_jacobian`` (a point's rows).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from rbd_ros.dynamics._jit import kernel
from rbd_ros.dynamics.joints import motion_subspace_column
from rbd_ros.dynamics.layout import (BODY_FLOAT_COLS, JTYPE, NVJ, O, PARENT, SCRATCH_MOTION,
                                     SCRATCH_MOTION_2, VIDX, WS_COLS)
from rbd_ros.dynamics.spatial import motion_to_parent

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


# ---- compiled: where the candidates are, and their rows -------------------------------------
@kernel
def body_clear_of_ground(ws, sf, si, group):
    """Whether every point of the group-th body with points (tables.body_groups) is above the
    ground: its origin is higher than its points reach. After body_placements."""
    at = si[L.BODY_POINTS_AT] + 3 * group
    o = si[at] * WS_COLS + O
    height = (sf[L.NORMAL] * ws[o + 9] + sf[L.NORMAL + 1] * ws[o + 10]
              + sf[L.NORMAL + 2] * ws[o + 11] - sf[L.HEIGHT])
    return height > sf[si[L.BODY_REACH_AT] + group]


@kernel
def point_jacobian(body_int, body_float, ws, body, px, py, pz, sf, J_int, chain_dofs):
    """J_int (3 x nv_int) = the velocity of the world point p, fixed to ``body``, along the
    ground's normal and its two tangents: for every joint above the body, its world motion
    column [v_o; w] (about the world origin) gives the point's velocity v_o + w x p. After
    body_placements. The internal velocity indices of those joints (the only nonzero columns)
    go into chain_dofs, from the body up; returns how many. (kinematics.frame_jacobian's walk,
    projected at a point: other output.)"""
    s = body_int.shape[0] * WS_COLS
    S, col = s + SCRATCH_MOTION, s + SCRATCH_MOTION_2
    J_int[:, :] = 0.0
    count = 0
    b = body
    while b > 0:
        vi = body_int[b, VIDX]
        for k in range(body_int[b, NVJ]):
            motion_subspace_column(body_int[b, JTYPE], body_float, b * BODY_FLOAT_COLS, k, ws, S)
            motion_to_parent(ws, b * WS_COLS + O, ws, S, ws, col)
            wx, wy, wz = ws[col + 3], ws[col + 4], ws[col + 5]
            ux = ws[col] + wy * pz - wz * py
            uy = ws[col + 1] + wz * px - wx * pz
            uz = ws[col + 2] + wx * py - wy * px
            for d in range(3):
                n = L.NORMAL if d == 0 else (L.T1 if d == 1 else L.T2)
                J_int[d, vi + k] = sf[n] * ux + sf[n + 1] * uy + sf[n + 2] * uz
            chain_dofs[count] = vi + k
            count += 1
        b = body_int[b, PARENT]
    return count


@kernel
def contact_point(ws, sf, si, p, out):
    """out[0:3] = the world location of contact candidate p (the lowest point of its sphere, or
    its rim quarter's point), out[3] = its gap to the ground (< 0: penetrating)."""
    body = si[si[L.POINT_BODY_AT] + p]
    o = body * WS_COLS + O
    row = si[L.POINTS_AT] + p * L.POINT_COLS
    c, ax_, u_ = row + L.POINT_CENTER, row + L.POINT_AXIS, row + L.POINT_U
    nx, ny, nz = sf[L.NORMAL], sf[L.NORMAL + 1], sf[L.NORMAL + 2]
    # world centre: oR c + op
    cx = ws[o] * sf[c] + ws[o + 1] * sf[c + 1] + ws[o + 2] * sf[c + 2] + ws[o + 9]
    cy = ws[o + 3] * sf[c] + ws[o + 4] * sf[c + 1] + ws[o + 5] * sf[c + 2] + ws[o + 10]
    cz = ws[o + 6] * sf[c] + ws[o + 7] * sf[c + 1] + ws[o + 8] * sf[c + 2] + ws[o + 11]
    radius = sf[row + L.POINT_RADIUS]
    if si[si[L.POINT_KIND_AT] + p] == L.SPHERE:
        dx, dy, dz = -nx, -ny, -nz
    else:                  # a rim: its lowest point, or a fixed quarter when it lies flat
        ax = ws[o] * sf[ax_] + ws[o + 1] * sf[ax_ + 1] + ws[o + 2] * sf[ax_ + 2]
        ay = ws[o + 3] * sf[ax_] + ws[o + 4] * sf[ax_ + 1] + ws[o + 5] * sf[ax_ + 2]
        az = ws[o + 6] * sf[ax_] + ws[o + 7] * sf[ax_ + 1] + ws[o + 8] * sf[ax_ + 2]
        na = nx * ax + ny * ay + nz * az
        dx, dy, dz = -(nx - na * ax), -(ny - na * ay), -(nz - na * az)
        norm = math.sqrt(dx * dx + dy * dy + dz * dz)
        if norm > 1e-9:
            dx, dy, dz = dx / norm, dy / norm, dz / norm
        else:
            dx = ws[o] * sf[u_] + ws[o + 1] * sf[u_ + 1] + ws[o + 2] * sf[u_ + 2]
            dy = ws[o + 3] * sf[u_] + ws[o + 4] * sf[u_ + 1] + ws[o + 5] * sf[u_ + 2]
            dz = ws[o + 6] * sf[u_] + ws[o + 7] * sf[u_ + 1] + ws[o + 8] * sf[u_ + 2]
        for _ in range(si[si[L.POINT_K_AT] + p]):     # a quarter turn about the axis
            dx, dy, dz = ay * dz - az * dy, az * dx - ax * dz, ax * dy - ay * dx
    out[0], out[1], out[2] = cx + radius * dx, cy + radius * dy, cz + radius * dz
    out[3] = nx * out[0] + ny * out[1] + nz * out[2] - sf[L.HEIGHT]


