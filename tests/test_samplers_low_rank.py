"""The low-rank metric's estimate (samplers.low_rank) against Gaussians of known covariance."""

import numpy as np
import pytest

from logdens.samplers import kernel, runner
from logdens.samplers.low_rank import RANK, low_rank_estimate
from logdens.samplers.mass_matrix import warmup_schedule
from logdens.samplers.protocol import numba_entry
from logdens.samplers.sample import _chain_state, _config
from test_samplers_targets import NumbaTarget, gaussian


def low_rank_covariance(dim=12, seed=0):
    """``diag(s**2) + B B'`` with ``s`` from 0.1 to 10 and two strong directions in ``B``."""
    rng = np.random.default_rng(seed)
    s = np.logspace(-1, 1, dim)
    b = s[:, None] * rng.normal(size=(dim, 2)) * np.array([6.0, 3.0])
    return np.diag(s**2) + b @ b.T


def exact_draws(cov, n, seed=1):
    """Independent draws of N(0, cov) and their scores ``-cov^{-1} x``."""
    x = np.random.default_rng(seed).multivariate_normal(np.zeros(len(cov)), cov, size=n)
    return x, -np.linalg.solve(cov, x.T).T


def dense_inverse_metric(inv_diag, vecs, vals):
    return np.diag(inv_diag) + vecs.T @ np.diag(vals - 1.0) @ vecs


def test_fisher_estimate_of_a_gaussian_is_its_covariance():
    # With exact scores, C B C = A has the target's covariance as solution
    # (scaled), whatever the draws; with no cutoff every direction is kept.
    # 1e-5: the regularization gamma = 1e-5 against sums over 200 draws.
    cov = low_rank_covariance()
    x, g = exact_draws(cov, 200)
    inv_diag, vecs, vals = low_rank_estimate(x, g, np.ones(len(cov)), cutoff=1.0)
    assert vals.shape == (12,)
    np.testing.assert_allclose(dense_inverse_metric(inv_diag, vecs, vals), cov,
                               atol=1e-5 * np.abs(cov).max())


def test_cutoff_keeps_the_strong_directions_and_bounds_the_rest():
    cov = low_rank_covariance()
    x, g = exact_draws(cov, 200)
    inv_diag, vecs, vals = low_rank_estimate(x, g, np.ones(len(cov)))
    assert 2 <= vals.size < 12 and np.all((vals > 2.0) | (vals < 0.5))
    est = dense_inverse_metric(inv_diag, vecs, vals)
    top, top_est = np.linalg.eigvalsh(cov)[-2:], np.linalg.eigvalsh(est)[-2:]
    np.testing.assert_allclose(top_est, top, rtol=0.10)
    # Directions left out have scaled eigenvalues in [1/2, 2]: M^{-1} is within
    # that factor of the covariance in every direction.
    rel = np.linalg.eigvals(np.linalg.solve(cov, est)).real
    assert 0.5 - 1e-6 <= rel.min() and rel.max() <= 2.0 + 1e-6


def test_rank_cap_keeps_the_largest_log_eigenvalues():
    cov = low_rank_covariance()
    x, g = exact_draws(cov, 200)
    _, _, vals = low_rank_estimate(x, g, np.ones(len(cov)))
    _, vecs, capped = low_rank_estimate(x, g, np.ones(len(cov)), max_rank=1)
    assert vecs.shape == (1, 12)
    assert capped[0] == vals[np.argmax(np.abs(np.log(vals)))]


def test_fewer_draws_than_dimensions_and_a_fixed_coordinate():
    # 5 draws in 12 dimensions: the span is at most 10; a coordinate that
    # never moved keeps its old scale (as the diagonal estimate does).
    cov = low_rank_covariance()
    x, g = exact_draws(cov, 5)
    x[:, 3], g[:, 3] = 0.7, -1.0
    old = np.full(12, 3.0)
    inv_diag, vecs, vals = low_rank_estimate(x, g, old)
    assert inv_diag[3] == 3.0 and np.all(np.isfinite(inv_diag))
    assert vals.size <= 10 and np.all(np.isfinite(vecs))
    w = vecs / np.sqrt(inv_diag)  # U' (rows orthonormal)
    np.testing.assert_allclose(w @ w.T, np.eye(vals.size), atol=1e-10)


def gaussian_target(cov):
    fdata = np.concatenate([np.zeros(len(cov)), np.linalg.inv(cov).ravel()])
    return NumbaTarget(gaussian, len(cov), fdata)


def adapted_state(target, tune, low_rank_rows, seed=0):
    entry = numba_entry(target)
    state = _chain_state(entry, target.dim, False, seed, 0, None, low_rank_rows=low_rank_rows)
    iconf, fconf = _config(kernel.NUTS, 10, 0, tune, "low_rank", 0.8, "nutpie")
    runner.run_chains(entry, [state], warmup_schedule(tune), iconf, fconf, tune + 1, tune, 1,
                      False)
    return state


def test_warmup_recovers_the_strong_eigenvalues():
    # Warmup draws are correlated and come from early, poorly adapted
    # trajectories; the two dominant eigenvalues (about 1e3 and 3e2 times the
    # smallest) are still recovered within 10%.
    cov = low_rank_covariance()
    state = adapted_state(gaussian_target(cov), 600, 601)
    k = state.lr_counts[RANK]
    m = state.metric
    est = dense_inverse_metric(m.inv_diag, m.lr_vecs[:k], m.lr_vals[:k])
    np.testing.assert_allclose(np.linalg.eigvalsh(est)[-2:], np.linalg.eigvalsh(cov)[-2:],
                               rtol=0.10)


def test_a_state_without_low_rank_buffers_is_refused():
    with pytest.raises(ValueError, match="low-rank buffers"):
        adapted_state(gaussian_target(low_rank_covariance()), 100, 0)
