"""Tests of samplers.metric: momentum law, velocity, the energy function."""

import math

import numpy as np

from samplers.metric import (hamiltonian, identity_metric, sample_momentum,
                             set_inverse_metric_dense, set_inverse_metric_diag, velocity)
from samplers.rng import make_state


def test_diag_momentum_has_covariance_m():
    metric = identity_metric(2, False)
    set_inverse_metric_diag(metric, np.array([4.0, 0.25]))
    rng, p = make_state(0, 0), np.empty(2)
    draws = np.array([(sample_momentum(metric, rng, p), p.copy())[1] for _ in range(20000)])
    np.testing.assert_allclose(draws.var(axis=0), [0.25, 4.0], rtol=0.05)


def test_dense_momentum_covariance_is_inverse_of_inv_metric():
    cov = np.array([[2.0, 0.9], [0.9, 1.0]])
    metric = identity_metric(2, True)
    set_inverse_metric_dense(metric, cov)
    rng, p = make_state(1, 0), np.empty(2)
    draws = np.array([(sample_momentum(metric, rng, p), p.copy())[1] for _ in range(40000)])
    np.testing.assert_allclose(np.cov(draws.T), np.linalg.inv(cov), rtol=0.05, atol=0.02)
    v = np.empty(2)
    velocity(metric, np.array([1.0, 2.0]), v)
    np.testing.assert_allclose(v, cov @ [1.0, 2.0])


def test_hamiltonian_sign_and_nan():
    p = np.array([1.0, 2.0])
    assert hamiltonian(-3.0, p, p) == 3.0 + 2.5
    assert hamiltonian(-math.inf, p, p) == math.inf
    assert hamiltonian(math.nan, p, p) == math.inf
