"""The iterative NUTS trajectory against a recursive reference (Stan's build_tree).

The reference below is a direct, recursive transcription of Stan's
``base_nuts`` in plain Python, calling the same leapfrog, energy, criterion
and RNG functions.  With the same random stream both must give the same
sample, tree depth, number of steps, acceptance statistic and divergence.
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from logdens.samplers.integrator import leapfrog
from logdens.samplers.metric import hamiltonian, identity_metric, sample_momentum, velocity
from logdens.samplers.rng import make_state, uniform
from logdens.samplers.termination import is_turning, is_turning_extended
from logdens.samplers.trajectory import log_add_exp, make_work, nuts_transition
from test_samplers_targets import correlated_gaussian, first_class, funnel, gaussian

MAX_ENERGY_ERROR = 1000.0


def _leaf(model, metric, z, eps, h0, ctr):
    f, fdata, idata = model
    z.lp = leapfrog(f, fdata, idata, metric, eps, z.q, z.p, z.g, z.v)
    ctr.n += 1
    h = hamiltonian(z.lp, z.p, z.v)
    ctr.acc += min(1.0, math.exp(h0 - h))
    if h - h0 > MAX_ENERGY_ERROR:
        ctr.div = True
        return None
    return SimpleNamespace(rho=z.p.copy(), p_beg=z.p.copy(), v_beg=z.v.copy(),
                           p_end=z.p.copy(), v_end=z.v.copy(), lsw=h0 - h,
                           prop=(z.q.copy(), z.g.copy(), z.lp, h))


def build_tree(model, metric, z, depth, eps, h0, rng, ctr):
    """Stan's recursive build_tree; returns None for an invalid subtree."""
    if depth == 0:
        return _leaf(model, metric, z, eps, h0, ctr)
    left = build_tree(model, metric, z, depth - 1, eps, h0, rng, ctr)
    if left is None:
        return None
    right = build_tree(model, metric, z, depth - 1, eps, h0, rng, ctr)
    if right is None:
        return None
    lsw = log_add_exp(left.lsw, right.lsw)
    prop = right.prop if uniform(rng) < math.exp(right.lsw - lsw) else left.prop
    rho = left.rho + right.rho
    turning = (is_turning(left.v_beg, right.v_end, rho)
               or is_turning_extended(left.v_beg, right.v_beg, left.rho, right.p_beg)
               or is_turning_extended(left.v_end, right.v_end, right.rho, left.p_end))
    if turning:
        return None
    return SimpleNamespace(rho=rho, p_beg=left.p_beg, v_beg=left.v_beg,
                           p_end=right.p_end, v_end=right.v_end, lsw=lsw, prop=prop)


def reference_transition(model, metric, eps, max_depth, rng, q, g, lp):
    """Stan's base_nuts::transition around the recursive build_tree."""
    dim = q.size
    p = np.empty(dim)
    sample_momentum(metric, rng, p)
    v = np.empty(dim)
    velocity(metric, p, v)
    h0 = hamiltonian(lp, p, v)
    ends = [SimpleNamespace(q=q.copy(), p=p.copy(), g=g.copy(), v=v.copy(), lp=lp)
            for _ in range(2)]
    sample, rho, lsw = (q.copy(), g.copy(), lp, h0), p.copy(), 0.0
    depth, ctr = 0, SimpleNamespace(n=0, acc=0.0, div=False)
    while depth < max_depth:
        d = 1 if uniform(rng) > 0.5 else 0
        end, far = ends[d], ends[1 - d]
        p_adj, v_adj = end.p.copy(), end.v.copy()
        tree = build_tree(model, metric, end, depth, eps if d else -eps, h0, rng, ctr)
        if tree is None:
            break
        depth += 1
        if tree.lsw > lsw or uniform(rng) < math.exp(tree.lsw - lsw):
            sample = tree.prop
        lsw = log_add_exp(lsw, tree.lsw)
        turning = (is_turning_extended(far.v, tree.v_beg, rho, tree.p_beg)
                   or is_turning_extended(v_adj, end.v, tree.rho, p_adj))
        rho = rho + tree.rho
        if turning or is_turning(ends[0].v, ends[1].v, rho):
            break
    return sample, depth, ctr


@pytest.mark.parametrize("target", ["gaussian", "funnel"])
@pytest.mark.parametrize("eps", [0.05, 0.4, 1.5, 6.0])
@pytest.mark.parametrize("max_depth", [3, 10])
def test_iterative_equals_recursive(target, eps, max_depth):
    if target == "gaussian":
        _, fdata, idata = correlated_gaussian(rho=0.95, scales=(1.0, 5.0))[0].numba_entry
        model, dim = (first_class(gaussian), fdata, idata), 2
    else:
        model, dim = (first_class(funnel), np.zeros(1), np.zeros(1, dtype=np.int64)), 6
    metric = identity_metric(dim, False)
    work = make_work(dim, max_depth)
    seen_depths, seen_div = set(), False
    for seed in range(40):
        start = np.random.default_rng(seed).normal(size=dim)
        grad = np.zeros(dim)
        lp = model[0](start, grad, model[1], model[2])
        rng_a, rng_b = make_state(seed, 0), make_state(seed, 0)
        (q_ref, _, lp_ref, e_ref), depth_ref, ctr = reference_transition(
            model, metric, eps, max_depth, rng_a, start, grad, lp)
        q, g = start.copy(), grad.copy()
        lp_new, info = nuts_transition(model[0], model[1], model[2], metric, eps,
                                       max_depth, MAX_ENERGY_ERROR, rng_b, q, g, lp, work)
        np.testing.assert_array_equal(q, q_ref)
        assert lp_new == lp_ref and info.energy == e_ref
        assert (info.depth, info.n_steps, info.diverging) == (depth_ref, ctr.n, ctr.div)
        assert info.accept_stat == pytest.approx(ctr.acc / ctr.n, rel=1e-12)
        np.testing.assert_array_equal(rng_a, rng_b)  # same number of draws
        seen_depths.add(info.depth)
        seen_div |= info.diverging
    # Both ends of the range reach one depth for almost every start: the largest
    # step diverges at once, and 8 steps of 0.05 (0.4 time units) rarely U-turn,
    # so the depth limit 3 is what stops them (in the funnel, all 40 starts).
    assert len(seen_depths) >= 2 or eps >= 6.0 or (eps <= 0.05 and max_depth == 3)
