"""ChEES's low-rank metric (samplers.chees_low_rank) on Gaussians of known covariance.

Moments are checked within 4 Monte Carlo standard errors (bulk ESS over
all chains); eigenvalues of the adapted metric within 10% of the target's.
"""

import importlib
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.linalg

from logdens.samplers.chees_low_rank import (RANK, STORED, buffers, install, length_factor,
                                             store)
from logdens.samplers.diagnostics import SamplerWarning, bulk_ess
from logdens.samplers.mass_matrix import warmup_schedule
from logdens.samplers.protocol import numba_entry
from test_samplers_chees import BatchOnly
from test_samplers_low_rank import dense_inverse_metric, gaussian_target, low_rank_covariance

chees_module = importlib.import_module("logdens.samplers.chees")  # samplers.chees is the function


def random_metric(rng, dim, scale=1.0):
    """``(inv_diag, vecs, vals)`` of a diagonal-plus-rank-2 inverse metric."""
    inv_diag = rng.uniform(0.5, 2.0, dim) * scale
    u, _ = np.linalg.qr(rng.normal(size=(dim, 2)))
    return inv_diag, np.ascontiguousarray((u * np.sqrt(inv_diag)[:, None]).T), np.array([30.0, 0.2])


def test_length_factor_is_the_largest_generalized_eigenvalue():
    # lambda_max of M_old C_new solves C_new v = lambda C_old v.
    rng = np.random.default_rng(0)
    old, new = random_metric(rng, 7, 1.3), random_metric(rng, 7)
    lam = scipy.linalg.eigh(dense_inverse_metric(*new), dense_inverse_metric(*old),
                            eigvals_only=True).max()
    assert length_factor(old, new) == pytest.approx(lam**-0.5, rel=1e-10)
    unit = (np.ones(7), np.zeros((0, 7)), np.zeros(0))
    diag = (np.linspace(0.5, 4.0, 7), np.zeros((0, 7)), np.zeros(0))
    assert length_factor(unit, diag) == pytest.approx(0.5, rel=1e-10)  # 1 / sqrt(max new / old)


def test_store_keeps_the_latest_rows_and_install_drops_them():
    lr = buffers(3, 5)
    q = np.arange(12.0).reshape(4, 3)
    store(lr[2], lr[3], lr[4], q, -q)
    store(lr[2], lr[3], lr[4], q + 100.0, -q)
    assert lr[4][STORED] == 8
    kept = {tuple(r) for r in lr[2]}
    assert kept == {tuple(r) for r in np.concatenate([q[3:], q + 100.0])}  # rows 4..8
    lr[4][STORED] = 2  # too few for an estimate: the metric is kept
    inv_diag = np.ones(3)
    assert install(inv_diag, *lr) is None and lr[4][STORED] == 0 and lr[4][RANK] == 0
    assert np.all(inv_diag == 1.0)


def adapted_run(target, chains, tune, draws, seed):
    """The ensemble's draws (chains, draws, dim) and its adapted Adaptation,
    from the compiled loop of ``ld.chees(..., metric="low_rank")``."""
    c = chees_module
    entry, dim = numba_entry(target), target.dim
    ad = c._adaptation(dim, seed, None, None, None, min(chains * tune, 1000))
    iconf = np.array([tune, c.MAX_LEAPFROG_STEPS, c.HALTON, c.LOW_RANK_METRIC])
    fconf = np.array([c.TARGET_ACCEPT, c.MAX_ENERGY_ERROR, c.LEARNING_RATE])
    ens = c.ensemble_init(entry, dim, chains, seed)
    advance = c._advance(target, entry, "entry", chains, dim)
    interrupt = SimpleNamespace(flag=np.zeros(1, dtype=np.int64))
    raw, _, _ = c._run(advance, ens, c.make_proposal(chains, dim), ad, warmup_schedule(tune),
                       iconf, fconf, interrupt, tune + draws, False)
    return raw[:, tune:], ad


def test_warmup_recovers_the_strong_eigenvalues_and_moments():
    # The two dominant eigenvalues (about 1e3 and 3e2 times the smallest)
    # within 10%; every coordinate's mean and variance within 4 MCSE.
    cov = low_rank_covariance()
    x, ad = adapted_run(gaussian_target(cov), chains=32, tune=300, draws=200, seed=1)
    k = ad.lr_counts[RANK]
    assert 2 <= k <= 12
    est = dense_inverse_metric(ad.inv_diag, ad.lr_vecs[:k], ad.lr_vals[:k])
    np.testing.assert_allclose(np.linalg.eigvalsh(est)[-2:], np.linalg.eigvalsh(cov)[-2:],
                               rtol=0.10)
    ess = bulk_ess(x)
    flat, var = x.reshape(-1, 12), np.diag(cov)
    assert np.all(np.abs(flat.mean(axis=0)) < 4 * np.sqrt(var / ess))
    assert np.all(np.abs(flat.var(axis=0) / var - 1.0) < 4 * np.sqrt(2.0 / ess))
    assert ad.scalars[chees_module.LENGTH] > 2 * ad.scalars[chees_module.STEP]  # not one step


def _sample(target, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        return chees_module.chees(target, progress=False, metric="low_rank", **kw)


def test_same_seed_same_draws_on_both_paths():
    # The batch loop (Python around the same compiled pieces, the estimate at
    # the same iterations) gives the compiled loop's draws bit for bit.
    target = gaussian_target(low_rank_covariance(dim=4))
    a = _sample(target, chains=6, tune=120, draws=20, seed=4)
    b = _sample(target, chains=6, tune=120, draws=20, seed=4)
    c = _sample(BatchOnly(target), chains=6, tune=120, draws=20, seed=4)
    assert a.posterior.attrs["metric"] == "low_rank" and a.posterior.attrs["low_rank_rank"] > 0
    assert c.posterior.attrs["gradient"] == "batch"
    for other in (b, c):
        np.testing.assert_array_equal(a.posterior["theta"].values, other.posterior["theta"].values)
        assert other.posterior.attrs["step_size"] == a.posterior.attrs["step_size"]


class DeviceOnly:
    dim = 2

    def device_gradients(self, thetas):
        raise AssertionError("not called")

    def log_density_gradient(self, theta):
        return -0.5 * theta @ theta, -theta


def test_bad_arguments():
    target = gaussian_target(low_rank_covariance(dim=3))
    with pytest.raises(ValueError, match="metric='dense'"):
        chees_module.chees(target, metric="dense", progress=False)
    with pytest.raises(ValueError, match="adapt_metric=False"):
        chees_module.chees(target, metric="low_rank", adapt_metric=False, progress=False)
    with pytest.raises(ValueError, match="gradient='device'"):
        chees_module.chees(DeviceOnly(), metric="low_rank", progress=False)
