"""Models with their Pinocchio oracle for the cross-checks of test_dynamics_pinocchio.py,
test_dynamics_centroidal.py and test_dynamics_difference.py: random trees (every joint type, chains and branching, fixed and
floating base, a mimic joint in every fifth) and real robots (the bundled 7-DoF arm, Panda
with its mimic finger, Solo-12 and a 43-joint humanoid)."""
import os

import pytest

import rbd_ros.dynamics as rbd
from pin_oracle import Oracle
from urdf_factory import random_urdf

HERE = os.path.dirname(__file__)
ROBOTS = os.path.join(HERE, 'data', 'robots')
ARM = os.path.join(HERE, '..', 'rbd_ros', 'robots', 'rbd_arm7.urdf')


def oracle_cases(seeds=40, first_seed=1000, link_span=10):
    """pytest params of (URDF text, floating base?, seed): ``seeds`` random trees from
    ``first_seed`` on (3 to 2 + link_span links), then the real robots."""
    cases = []
    for seed in range(seeds):
        floating, branching = seed % 2 == 1, seed % 3 != 0
        xml = random_urdf(first_seed + seed, n_links=3 + seed % link_span, branching=branching,
                          mimic=seed % 5 == 4)
        cases.append(pytest.param((xml, floating, seed), id=f'random{seed}-'
                                  f'{"float" if floating else "fixed"}-'
                                  f'{"tree" if branching else "chain"}'
                                  f'{"-mimic" if seed % 5 == 4 else ""}'))
    for name, floating in (('panda.urdf', False), ('solo12.urdf', True), ('humanoid.urdf', True),
                           ('humanoid.urdf', False)):
        with open(os.path.join(ROBOTS, name)) as handle:
            cases.append(pytest.param((handle.read(), floating, 7),
                                      id=f'{name[:-5]}-{"float" if floating else "fixed"}'))
    with open(ARM) as handle:
        cases.append(pytest.param((handle.read(), False, 3), id='rbd_arm7'))
    return cases


def build(param):
    """(model, oracle, seed) of an oracle_cases parameter."""
    xml, floating, seed = param
    model = rbd.Model.from_urdf(xml, floating_base=floating)
    return model, Oracle(model, xml), seed
