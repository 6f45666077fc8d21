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
