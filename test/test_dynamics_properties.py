"""Property-based checks (hypothesis): identities on arbitrary random trees, and robustness of
the URDF reader: any mutation of a valid URDF either builds a model or raises ModelError."""
import os
import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rbd_ros.dynamics as rbd
from urdf_factory import random_urdf

ARM = os.path.join(os.path.dirname(__file__), '..', 'rbd_ros', 'robots', 'rbd_arm7.urdf')
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), n_links=st.integers(2, 12), branching=st.booleans(),
       floating=st.booleans(), mimic=st.booleans())
def test_identities_on_arbitrary_trees(seed, n_links, branching, floating, mimic):
    model = rbd.Model.from_urdf(random_urdf(seed, n_links=n_links, branching=branching,
                                            mimic=mimic, planar_axis_z=False),
                                floating_base=floating)
    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    M = rbd.mass_matrix(model, q)
    assert M.shape == (model.nv, model.nv) and np.array_equal(M, M.T)
    if model.nv == 0:                 # every joint fixed: a rigid robot with nothing to move
        assert rbd.forward_dynamics(model, q, v, tau).shape == (0,)
        return
    assert np.linalg.eigvalsh(M).min() > 0
    qdd = rbd.forward_dynamics(model, q, v, tau)
    back = rbd.inverse_dynamics(model, q, v, qdd)
    assert np.allclose(back, tau, rtol=1e-8, atol=1e-8 * max(1.0, np.abs(tau).max()))
    assert np.allclose(rbd.forward_dynamics(model, q, v, tau, method='crba'), qdd,
                       rtol=1e-8, atol=1e-8 * max(1.0, np.abs(qdd).max()))
    C = rbd.coriolis_matrix(model, q, v)
    assert np.allclose(C @ v + rbd.gravity_torques(model, q), rbd.nonlinear_effects(model, q, v),
                       rtol=1e-9, atol=1e-9)


with open(ARM) as _handle:
    _ARM_XML = _handle.read()
_NUMBERS = [m.span() for m in re.finditer(r'-?\d+(\.\d+)?(e-?\d+)?', _ARM_XML)]
_NAMES = [m.span(1) for m in re.finditer(r'(?:name|link|joint)="([^"]+)"', _ARM_XML)]
_TOKENS = ['nan', 'inf', '-1', '0', '', '1e308', 'abc', '"', '<', '>', '</joint>', '<link name="x"/>',
           'revolute', 'fixed', 'ball', 'base_link', 'world', '0 0 0']


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=st.lists(st.tuples(st.sampled_from(['number', 'name', 'cut']),
                                st.integers(0, 10**6), st.sampled_from(_TOKENS)),
                      min_size=1, max_size=3))
def test_mutated_urdf_builds_or_raises_model_error(edits):
    xml = _ARM_XML
    for kind, index, token in edits:
        spans = _NUMBERS if kind == 'number' else _NAMES
        if kind == 'cut':
            at = index % len(xml)
            xml = xml[:at] + token + xml[at + 1:]
            continue
        start, end = spans[index % len(spans)]
        if end <= len(xml):
            xml = xml[:start] + token + xml[end:]
    try:
        model = rbd.Model.from_urdf(xml)
    except rbd.ModelError as error:
        assert str(error)            # a message, never an empty one
        return
    q = model.neutral()
    tau = rbd.gravity_torques(model, q)       # a model that builds computes finite numbers
    assert np.all(np.isfinite(tau))
