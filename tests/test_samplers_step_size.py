"""Dual averaging and the initial step-size heuristic against exact answers."""

import math

import numpy as np
import pytest

from logdens.samplers.metric import identity_metric
from logdens.samplers.rng import make_state
from logdens.samplers.step_size import (dual_averaging_final, dual_averaging_init,
                                dual_averaging_update, find_reasonable_step_size)
from logdens.samplers.trajectory import make_work
from test_samplers_targets import first_class, gaussian


def test_dual_averaging_matches_hand_computed_recursion():
    accepts = [0.3, 0.95, 1.7, 0.6, 0.81]
    state = dual_averaging_init(0.5)
    mu, s_bar, x_bar = math.log(5.0), 0.0, 0.0
    assert state.mu == pytest.approx(mu) and state.x == pytest.approx(math.log(0.5))
    for t, a in enumerate(accepts, start=1):
        state = dual_averaging_update(state, a, 0.8)
        eta = 1.0 / (t + 10.0)
        s_bar = (1 - eta) * s_bar + eta * (0.8 - min(a, 1.0))
        x = mu - s_bar * math.sqrt(t) / 0.05
        w = t ** -0.75
        x_bar = (1 - w) * x_bar + w * x
        assert (state.counter, state.s_bar, state.x, state.x_bar) == pytest.approx(
            (t, s_bar, x, x_bar), rel=1e-14)
    assert dual_averaging_final(state) == pytest.approx(math.exp(x_bar))


@pytest.mark.parametrize("target", [0.6, 0.8, 0.95])
def test_dual_averaging_finds_the_step_size_with_target_acceptance(target):
    # Acceptance falls with the step size as exp(-eps): the answer is -log(target).
    state = dual_averaging_init(1.0)
    for _ in range(20000):
        state = dual_averaging_update(state, math.exp(-math.exp(state.x)), target)
    assert dual_averaging_final(state) == pytest.approx(-math.log(target), rel=0.02)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_heuristic_scales_with_the_target(scale):
    mean = np.zeros(2)
    fdata = np.concatenate([mean, (np.eye(2) / scale**2).ravel()])
    f = first_class(gaussian)
    idata = np.zeros(1, dtype=np.int64)
    q = np.array([0.5, -0.5]) * scale
    g = np.zeros(2)
    lp = f(q, g, fdata, idata)
    eps = find_reasonable_step_size(f, fdata, idata, identity_metric(2, False), 1.0,
                                    make_state(0, 0), q, g, lp, make_work(2, 1))
    assert 0.05 * scale < eps < 20 * scale
    assert math.log2(eps) == pytest.approx(round(math.log2(eps)))  # doubling/halving
