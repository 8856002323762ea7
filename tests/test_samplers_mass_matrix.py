"""Welford estimators, Stan's regularization and warmup windows."""

import numpy as np
import pytest

from logdens.samplers.mass_matrix import (regularize_covariance, regularize_variance,
                                  warmup_schedule, welford_dense_final,
                                  welford_dense_init, welford_dense_update,
                                  welford_diag_final, welford_diag_init,
                                  welford_diag_update)


def test_welford_diag_and_dense_equal_two_pass_estimates():
    x = np.random.default_rng(0).normal(size=(500, 4)) @ np.diag([1.0, 10.0, 0.1, 3.0]) + 50.0
    d = welford_diag_init(np.zeros(4), np.zeros(4))
    m = welford_dense_init(np.zeros(4), np.zeros((4, 4)))
    for row in x:
        d = welford_diag_update(d, row)
        m = welford_dense_update(m, row)
    assert d.n == m.n == 500
    np.testing.assert_allclose(d.mean, x.mean(axis=0), rtol=1e-13)
    var, cov = np.empty(4), np.empty((4, 4))
    welford_diag_final(d, var)
    welford_dense_final(m, cov)
    np.testing.assert_allclose(var, x.var(axis=0, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(m.mean, x.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(cov, np.cov(x.T), rtol=1e-12, atol=1e-14)
    d = welford_diag_init(d.mean, d.m2)  # restart reuses and clears the buffers
    assert d.n == 0 and not d.mean.any() and not d.m2.any()


def test_stan_regularization():
    var, cov = np.array([2.0, 0.5]), np.array([[2.0, 0.3], [0.3, 0.5]])
    shrunk_var, shrunk_cov = var.copy(), cov.copy()  # in place
    regularize_variance(shrunk_var, 95.0)
    regularize_covariance(shrunk_cov, 95.0)
    np.testing.assert_allclose(shrunk_var, 0.95 * var + 1e-3 * 0.05)
    np.testing.assert_allclose(shrunk_cov, 0.95 * cov + 1e-3 * 0.05 * np.eye(2))


@pytest.mark.parametrize("tune, ends, first, last", [
    (1000, [99, 149, 249, 449, 949], 75, 949),
    (200, [99, 149], 75, 149),
    (150, [99], 75, 99),
    (120, [107], 18, 107),      # short warmup: buffers of 15% and 10%
    (500, [99, 149, 249, 449], 75, 449),
])
def test_stan_windows(tune, ends, first, last):
    in_window, window_end = warmup_schedule(tune)
    assert list(np.flatnonzero(window_end)) == ends
    idx = np.flatnonzero(in_window)
    assert (idx[0], idx[-1], idx.size) == (first, last, last - first + 1)


def test_no_metric_windows_below_20_iterations():
    in_window, window_end = warmup_schedule(19)
    assert not in_window.any() and not window_end.any()


def test_windows_follow_the_buffer_settings():
    # CmdStan: adapt init_buffer=50 term_buffer=150 window=50, 1000 warmup.
    in_window, window_end = warmup_schedule(1000, init_buffer=50, term_buffer=150,
                                            base_window=50)
    assert list(np.flatnonzero(window_end)) == [99, 199, 399, 849]
    idx = np.flatnonzero(in_window)
    assert (idx[0], idx[-1]) == (50, 849)
