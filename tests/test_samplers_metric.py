"""Tests of samplers.metric: momentum law, velocity, the energy function."""

import math

import numpy as np

from logdens.samplers.metric import (cholesky_lower, hamiltonian, identity_metric,
                             inverse_transpose_lower, momentum_from_normal, sample_momentum,
                             set_inverse_metric_dense, velocity)
from logdens.samplers.rng import make_state


def test_diag_momentum_has_covariance_m():
    metric = identity_metric(2, False)
    metric.inv_diag[:] = [4.0, 0.25]
    rng, p = make_state(0, 0), np.empty(2)
    draws = np.array([(sample_momentum(metric, rng, p), p.copy())[1] for _ in range(20000)])
    np.testing.assert_allclose(draws.var(axis=0), [0.25, 4.0], rtol=0.05)


def test_dense_momentum_covariance_is_inverse_of_inv_metric():
    cov = np.array([[2.0, 0.9], [0.9, 1.0]])
    metric = identity_metric(2, True)
    assert set_inverse_metric_dense(metric, cov, np.empty((2, 2)))
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


def test_hamiltonian_of_plus_infinity_is_a_rejected_point():
    # A faulty density's +inf must not get infinite weight (H = -inf).
    p = np.array([1.0, 2.0])
    assert hamiltonian(math.inf, p, p) == math.inf
    assert hamiltonian(math.inf, np.array([math.inf]), np.array([math.inf])) == math.inf


def test_cholesky_and_inverse_factor_match_numpy():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(6, 6))
    cov = a @ a.T + 0.1 * np.eye(6)
    chol, factor = np.empty((6, 6)), np.empty((6, 6))
    assert cholesky_lower(cov, chol)
    np.testing.assert_allclose(chol, np.linalg.cholesky(cov), rtol=1e-12, atol=1e-12)
    inverse_transpose_lower(chol, factor)
    np.testing.assert_allclose(factor, np.linalg.inv(chol).T, rtol=1e-10, atol=1e-12)


def test_dense_metric_not_positive_definite_keeps_the_old_one():
    metric = identity_metric(2, True)
    chol = np.empty((2, 2))
    assert set_inverse_metric_dense(metric, np.array([[2.0, 0.5], [0.5, 1.0]]), chol)
    before = [np.copy(a) for a in (metric.inv_dense, metric.momentum_factor)]
    assert not set_inverse_metric_dense(metric, np.array([[1.0, 2.0], [2.0, 1.0]]), chol)
    np.testing.assert_array_equal(metric.inv_dense, before[0])
    np.testing.assert_array_equal(metric.momentum_factor, before[1])


def _low_rank_metric(dim=7, rank=3, seed=0):
    """A diagonal-plus-rank-``rank`` metric and its dense inverse ``S (I + U (L - I) U') S``."""
    rng = np.random.default_rng(seed)
    inv_diag = np.exp(rng.normal(size=dim))
    u, _ = np.linalg.qr(rng.normal(size=(dim, rank)))
    vals = np.array([50.0, 0.05, 3.0])[:rank]
    s = np.sqrt(inv_diag)
    metric = identity_metric(dim, False)._replace(
        inv_diag=inv_diag, lr_vecs=np.ascontiguousarray((u * s[:, None]).T), lr_vals=vals)
    dense = s[:, None] * (np.eye(dim) + u @ np.diag(vals - 1.0) @ u.T) * s[None, :]
    return metric, dense


def test_low_rank_velocity_equals_the_dense_product():
    metric, dense = _low_rank_metric()
    p, v = np.random.default_rng(1).normal(size=7), np.empty(7)
    velocity(metric, p, v)
    np.testing.assert_allclose(v, dense @ p, rtol=1e-12, atol=1e-12 * np.abs(dense @ p).max())


def test_low_rank_momentum_map_is_a_square_root_of_m():
    # p = T z with z ~ N(0, I) has covariance T T' = M = (M^{-1})^{-1}.
    metric, dense = _low_rank_metric()
    t = np.empty((7, 7))
    for j, e in enumerate(np.eye(7)):
        col = e.copy()
        momentum_from_normal(metric, col)
        t[:, j] = col
    np.testing.assert_allclose(t @ t.T @ dense, np.eye(7), atol=1e-11)


def test_low_rank_of_rank_zero_is_the_diagonal_metric():
    metric, _ = _low_rank_metric()
    plain = identity_metric(7, False)._replace(inv_diag=metric.inv_diag)
    empty = metric._replace(lr_vecs=metric.lr_vecs[:0], lr_vals=metric.lr_vals[:0])
    p, v, w = np.arange(7.0), np.empty(7), np.empty(7)
    velocity(plain, p, v)
    velocity(empty, p, w)
    np.testing.assert_array_equal(v, w)
