"""Initial points: uniform(-2, 2), retried where the density is not finite."""

import numpy as np
import pytest

from logdens import samplers
from logdens.samplers.initial_point import find_initial_point, per_chain_inits
from logdens.samplers.protocol import numba_entry
from test_samplers_targets import NumbaTarget, half_line, std_normal


def test_retries_until_finite():
    entry = numba_entry(NumbaTarget(half_line, 1))
    rng = np.random.default_rng(0)
    for _ in range(20):
        theta, lp, grad = find_initial_point(entry, 1, rng)
        assert 0 < theta[0] < 2 and np.isfinite(lp)


def test_given_init_must_be_finite():
    entry = numba_entry(NumbaTarget(half_line, 1))
    theta, _, _ = find_initial_point(entry, 1, None, np.array([0.7]))
    assert theta[0] == 0.7
    with pytest.raises(ValueError, match="init"):
        find_initial_point(entry, 1, None, np.array([-1.0]))


def test_impossible_support_raises():
    class Nowhere:
        dim = 1

        def log_density_gradient(self, theta):
            return -np.inf, np.zeros(1)

    with pytest.raises(RuntimeError, match="100"):
        samplers.nuts(Nowhere(), draws=5, tune=5, chains=1, progress=False)


def test_per_chain_inits_shapes():
    assert per_chain_inits(None, 2, 3) == [None, None]
    assert len(per_chain_inits([1.0, 2.0, 3.0], 2, 3)) == 2
    rows = per_chain_inits(np.arange(6.0).reshape(2, 3), 2, 3)
    np.testing.assert_array_equal(rows[1], [3.0, 4.0, 5.0])
    with pytest.raises(ValueError, match="shape"):
        per_chain_inits(np.zeros(4), 2, 3)


def test_init_is_the_first_state():
    idata = samplers.nuts(NumbaTarget(std_normal, 2), draws=1, tune=0, chains=2,
                          init=[[0.1, 0.2], [5.0, 5.0]], progress=False, save_warmup=True)
    assert idata.posterior["theta"].shape == (2, 1, 2)
