"""Random URDF trees for cross-checks: chains and branching trees with every joint type,
random axes of any sign, random origins, inertial frames with rpy, full inertia tensors,
fixed joints in the middle and at leaves, massless links, and optional mimic joints."""
import numpy as np


def _random_rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _inertia(rng, mass):
    # principal moments from positive second moments: always satisfies the triangle inequality
    a, b, c = rng.uniform(0.2, 1.0, size=3) * mass * 0.05
    R = _random_rotation(rng)
    return R @ np.diag([b + c, a + c, a + b]) @ R.T


def _vec(x):
    return ' '.join(f'{float(v):.17g}' for v in x)


def random_urdf(seed, n_links=8, branching=True, joint_types=('revolute', 'continuous',
                'prismatic', 'fixed', 'planar', 'floating'), planar_axis_z=True, mimic=False,
                massless_leaves=True, name='random'):
    """Return URDF XML text. Joint type weights favour 1-DoF joints."""
    rng = np.random.default_rng(seed)
    links, joints = [], []
    weights = {'revolute': 4, 'continuous': 2, 'prismatic': 2, 'fixed': 2, 'planar': 1,
               'floating': 1}
    types = list(joint_types)
    p = np.array([weights[t] for t in types], float)
    p /= p.sum()
    children = {0: []}
    joint_of_link = {}
    for k in range(n_links):
        mass = float(rng.uniform(0.2, 3.0))
        inertia = _inertia(rng, mass)
        links.append((f'link{k}', mass, inertia, rng.uniform(-0.1, 0.1, 3),
                      rng.uniform(-np.pi, np.pi, 3)))
        if k == 0:
            continue
        parent = int(rng.integers(0, k)) if branching else k - 1
        children.setdefault(parent, []).append(k)
        children[k] = []
        jtype = str(rng.choice(types, p=p))
        axis = rng.normal(size=3)
        if rng.random() < 0.3:     # axis-aligned, of either sign
            axis = np.zeros(3)
            axis[rng.integers(0, 3)] = rng.choice([-1.0, 1.0])
        if jtype == 'planar' and planar_axis_z:
            axis = np.array([0.0, 0.0, 1.0])
        axis *= rng.uniform(0.5, 2.0)          # URDF axes need not be unit
        joints.append(dict(name=f'joint{k}', type=jtype, parent=f'link{parent}',
                           child=f'link{k}', xyz=rng.uniform(-0.3, 0.3, 3),
                           rpy=rng.uniform(-np.pi, np.pi, 3), axis=axis, mimic=None))
        joint_of_link[k] = joints[-1]
    if massless_leaves:            # a massless link on a fixed joint at some leaf
        leaves = [k for k in children if not children[k]]
        leaf = int(rng.choice(leaves))
        links.append((f'link{n_links}_tool', 0.0, np.zeros((3, 3)), np.zeros(3), np.zeros(3)))
        joints.append(dict(name=f'joint{n_links}_tool', type='fixed', parent=f'link{leaf}',
                           child=f'link{n_links}_tool', xyz=rng.uniform(-0.3, 0.3, 3),
                           rpy=rng.uniform(-np.pi, np.pi, 3), axis=np.array([1.0, 0, 0]),
                           mimic=None))
    if mimic:
        one_dof = [j for j in joints if j['type'] in ('revolute', 'continuous', 'prismatic')]
        if len(one_dof) >= 2:
            follower, leader = one_dof[-1], one_dof[0]
            follower['mimic'] = (leader['name'], float(rng.uniform(-2, 2)),
                                 float(rng.uniform(-0.5, 0.5)))
    out = [f'<?xml version="1.0"?>\n<robot name="{name}">']
    for lname, mass, inertia, com, rpy in links:
        if mass == 0.0:
            out.append(f'  <link name="{lname}"/>')
            continue
        i = inertia
        out.append(f'  <link name="{lname}"><inertial><origin xyz="{_vec(com)}" rpy="{_vec(rpy)}"/>'
                   f'<mass value="{mass:.17g}"/><inertia ixx="{i[0,0]:.17g}" ixy="{i[0,1]:.17g}" '
                   f'ixz="{i[0,2]:.17g}" iyy="{i[1,1]:.17g}" iyz="{i[1,2]:.17g}" '
                   f'izz="{i[2,2]:.17g}"/></inertial></link>')
    for j in joints:
        extra = ''
        if j['type'] in ('revolute', 'prismatic'):
            extra += '<limit lower="-2.5" upper="2.5" effort="100" velocity="10"/>'
        if j['mimic'] is not None:
            extra += (f'<mimic joint="{j["mimic"][0]}" multiplier="{j["mimic"][1]:.17g}" '
                      f'offset="{j["mimic"][2]:.17g}"/>')
        out.append(f'  <joint name="{j["name"]}" type="{j["type"]}"><parent link="{j["parent"]}"/>'
                   f'<child link="{j["child"]}"/><origin xyz="{_vec(j["xyz"])}" rpy="{_vec(j["rpy"])}"/>'
                   f'<axis xyz="{_vec(j["axis"])}"/>{extra}</joint>')
    out.append('</robot>')
    return '\n'.join(out)


# ---- closed loops -------------------------------------------------------------------------
def four_bar_positions(crank, coupler, rocker, ground, theta, open_branch=True):
    """Closed-form position analysis of a planar four-bar (pivots O2 = (0, 0), O4 = (ground,
    0)): the world angles (phi, psi) of the coupler (A -> B) and the rocker (O4 -> B) at crank
    angle theta, B the intersection of the circles about A = crank (cos, sin) theta (radius
    coupler) and O4 (radius rocker), on the left of A -> O4 (``open_branch``) or its right."""
    ax, ay = crank * np.cos(theta), crank * np.sin(theta)
    dx, dy = ground - ax, -ay
    dist = np.hypot(dx, dy)
    along = (dist ** 2 + coupler ** 2 - rocker ** 2) / (2 * dist)
    height = np.sqrt(coupler ** 2 - along ** 2)
    sign = 1.0 if open_branch else -1.0
    bx = ax + (along * dx - sign * height * dy) / dist
    by = ay + (along * dy + sign * height * dx) / dist
    return np.arctan2(by - ay, bx - ax), np.arctan2(by, bx - ground)


FOUR_BAR = dict(crank=0.1, coupler=0.35, rocker=0.3, ground=0.3, theta=0.9)
# (mass, centre of mass in the link frame (the bar along x), inertia xx xy xz yy yz zz at it)
FOUR_BAR_LINKS = {'crank': (0.5, (0.05, 0.004, 0.0), (1e-4, 1e-6, 0, 5e-4, 0, 5e-4)),
                  'coupler': (1.2, (0.17, 0.02, 0.01), (2e-4, 3e-6, 1e-6, 1.3e-2, 2e-6, 1.3e-2)),
                  'rocker': (0.8, (0.15, -0.01, 0.0), (1.5e-4, 0, 2e-6, 6e-3, 0, 6e-3))}


def four_bar_urdf(closure='revolute', theta0=None, crank=None, coupler=None, rocker=None,
                  ground=None, vertical=True, name='four_bar'):
    """A planar four-bar: crank (joint ``crank_joint``, actuated by a transmission) and
    coupler on one branch, rocker on the other, the loop closed between the coupler's and the
    rocker's free ends by a ``<constraint>`` of type ``closure`` ('revolute': 5 rows, 3 of
    them redundant in the plane; 'ball': 3, one redundant). The joints' origins put the
    closed pose at crank angle ``theta0`` (open branch) at q = 0. ``vertical``: the plane is
    the world's x-z (gravity in it), through a fixed joint from the root ``ground`` to
    ``frame``, the plane's link; else x-y."""
    p = dict(FOUR_BAR)
    p.update({k: v for k, v in dict(crank=crank, coupler=coupler, rocker=rocker, ground=ground,
                                    theta=theta0).items() if v is not None})
    a, b, c, d, theta = p['crank'], p['coupler'], p['rocker'], p['ground'], p['theta']
    phi, psi = four_bar_positions(a, b, c, d, theta)
    links = []
    for link, (mass, com, I) in FOUR_BAR_LINKS.items():
        links.append(f'  <link name="{link}"><inertial><origin xyz="{_vec(com)}"/>'
                     f'<mass value="{mass}"/><inertia ixx="{I[0]}" ixy="{I[1]}" ixz="{I[2]}" '
                     f'iyy="{I[3]}" iyz="{I[4]}" izz="{I[5]}"/></inertial></link>')
    limit = '<limit lower="-6.3" upper="6.3" effort="50" velocity="20"/>'
    joints = [
        f'  <joint name="mount" type="fixed"><parent link="ground"/><child link="frame"/>'
        f'<origin rpy="{1.5707963267948966 if vertical else 0.0} 0 0"/></joint>',
        f'  <joint name="crank_joint" type="revolute"><parent link="frame"/><child link="crank"/>'
        f'<origin rpy="0 0 {theta:.17g}"/><axis xyz="0 0 1"/>{limit}</joint>',
        f'  <joint name="coupler_joint" type="revolute"><parent link="crank"/>'
        f'<child link="coupler"/><origin xyz="{a:.17g} 0 0" rpy="0 0 {phi - theta:.17g}"/>'
        f'<axis xyz="0 0 1"/>{limit}</joint>',
        f'  <joint name="rocker_joint" type="revolute"><parent link="frame"/><child link="rocker"/>'
        f'<origin xyz="{d:.17g} 0 0" rpy="0 0 {psi:.17g}"/><axis xyz="0 0 1"/>{limit}</joint>']
    axes = ('<parent_axis xyz="0 0 1"/>', '<child_axis xyz="0 0 1"/>') \
        if closure == 'revolute' else ('', '')
    constraint = (f'  <constraint name="coupler_rocker" type="{closure}">'
                  f'<parent link="coupler"/><parent_origin xyz="{b:.17g} 0 0"/>{axes[0]}'
                  f'<child link="rocker"/><child_origin xyz="{c:.17g} 0 0"/>{axes[1]}'
                  '</constraint>')
    transmission = ('  <transmission name="crank_drive"><type>transmission_interface/'
                    'SimpleTransmission</type><joint name="crank_joint"><hardwareInterface>'
                    'hardware_interface/EffortJointInterface</hardwareInterface></joint>'
                    '<actuator name="crank_motor"><mechanicalReduction>1</mechanicalReduction>'
                    '</actuator></transmission>')
    return '\n'.join([f'<?xml version="1.0"?>\n<robot name="{name}">', '  <link name="ground"/>',
                      '  <link name="frame"/>', *links, *joints, constraint, transmission,
                      '</robot>'])


def four_bar_angles(theta, theta0=None, **lengths):
    """The joint angles (crank_joint, coupler_joint, rocker_joint) of four_bar_urdf's closed
    pose at crank angle theta (closed form)."""
    p = dict(FOUR_BAR)
    p.update({k: v for k, v in lengths.items() if v is not None})
    theta0 = p['theta'] if theta0 is None else theta0
    a, b, c, d = p['crank'], p['coupler'], p['rocker'], p['ground']
    phi0, psi0 = four_bar_positions(a, b, c, d, theta0)
    phi, psi = four_bar_positions(a, b, c, d, theta)
    return np.array([theta - theta0, (phi - theta) - (phi0 - theta0), psi - psi0])
