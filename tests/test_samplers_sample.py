"""Posteriors of known targets within a few Monte Carlo standard errors."""

import warnings

import arviz_stats
import numpy as np
import pytest

from logdens import samplers
from logdens.samplers.diagnostics import SamplerWarning
from test_samplers_targets import (EightSchools, NumbaTarget, correlated_gaussian,
                                   funnel, gaussian, normal_normal_target, std_normal)

# Eight schools non-centered, reference from a long run of this sampler
# (8 chains x 100,000 draws, target_accept 0.9, seed 123; MCSE < 0.005),
# agreeing with posteriordb's eight_schools_noncentered reference.
EIGHT_SCHOOLS_MU = 4.39
EIGHT_SCHOOLS_TAU = 3.60
Z_MAX = 4.0


def z_scores(draws, truth):
    """(estimate - truth) / MCSE per coordinate; draws of shape (chain, draw, k)."""
    ess = np.array([float(arviz_stats.ess(draws[:, :, k], method="mean"))
                    for k in range(draws.shape[2])])
    mcse = draws.std(axis=(0, 1)) / np.sqrt(ess)
    return (draws.mean(axis=(0, 1)) - truth) / mcse


@pytest.mark.slow
def test_standard_normal_100d():
    idata = samplers.nuts(NumbaTarget(std_normal, 100), seed=1, progress=False)
    theta = idata.posterior["theta"].values
    assert np.max(np.abs(z_scores(theta, 0.0))) < 4.5  # 100 coordinates
    assert np.max(np.abs(z_scores(theta**2, 1.0))) < 4.5
    assert not idata.sample_stats["diverging"].values.any()


@pytest.mark.slow
@pytest.mark.parametrize("metric, rho, draws", [("dense", 0.95, 1000), ("low_rank", 0.99, 500)])
def test_correlated_gaussian_with_a_metric_that_holds_the_correlation(metric, rho, draws):
    """An adapted dense or low-rank metric makes the target isotropic (for the
    low-rank one the correlation is a scaled eigenvalue of 0.01): moments right,
    short trajectories."""
    target, mean, cov = correlated_gaussian(rho=rho, scales=(1.0, 10.0))
    idata = samplers.nuts(target, seed=2, metric=metric, progress=False, draws=draws)
    theta = idata.posterior["theta"].values
    assert np.max(np.abs(z_scores(theta, mean))) < Z_MAX
    centered = (theta - mean).reshape(-1, 2)
    prods = (centered[:, [0, 1, 0]] * centered[:, [0, 1, 1]]).reshape(theta.shape[:2] + (3,))
    assert np.max(np.abs(z_scores(prods, [cov[0, 0], cov[1, 1], cov[0, 1]]))) < Z_MAX
    assert idata.sample_stats["tree_depth"].values.mean() < 2.5
    assert idata.posterior.attrs["metric"] == metric


def test_eight_schools_noncentered_with_low_rank_metric():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)  # a rare divergence is fine
        idata = samplers.nuts(EightSchools(), seed=4, metric="low_rank", progress=False)
    post = idata.posterior
    assert abs(z_scores(post["mu"].values[..., None], EIGHT_SCHOOLS_MU)[0]) < Z_MAX
    assert abs(z_scores(post["tau"].values[..., None], EIGHT_SCHOOLS_TAU)[0]) < Z_MAX


def test_static_hmc_takes_the_low_rank_metric():
    idata = samplers.hmc(EightSchools(), num_steps=8, metric="low_rank", draws=50, tune=150,
                         chains=1, seed=6, target_accept=0.65, progress=False)
    assert idata.posterior.attrs["metric"] == "low_rank"
    assert np.isfinite(idata.posterior["mu"].values).all()


def test_low_rank_needs_nutpies_warmup():
    with pytest.raises(ValueError, match="adaptation='stan' with metric='low_rank'"):
        samplers.nuts(EightSchools(), metric="low_rank", adaptation="stan", progress=False)
    with pytest.raises(ValueError, match="'diag', 'dense' or 'low_rank'"):
        samplers.nuts(EightSchools(), metric="lowrank", progress=False)


def gradients_per_effective_draw(idata):
    ess = float(arviz_stats.ess(idata, method="bulk", var_names=["theta"])["theta"].min())
    return float(idata.sample_stats["n_steps"].values.sum()) / ess


@pytest.mark.slow
def test_low_rank_needs_far_fewer_gradients_on_a_correlated_100d_gaussian():
    # Unit scales plus three directions with variances 400, 100 and 25: a
    # diagonal metric cannot remove them (every coordinate has about the
    # same variance), the low-rank one can.
    rng = np.random.default_rng(5)
    u, _ = np.linalg.qr(rng.normal(size=(100, 3)))
    cov = np.eye(100) + u @ np.diag([399.0, 99.0, 24.0]) @ u.T
    fdata = np.concatenate([np.zeros(100), np.linalg.inv(cov).ravel()])
    target = NumbaTarget(gaussian, 100, fdata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)  # diag's chains have not mixed
        runs = {metric: samplers.nuts(target, seed=7, metric=metric, chains=2, tune=500,
                                      draws=300, progress=False)
                for metric in ("diag", "low_rank")}
    cost = {metric: gradients_per_effective_draw(idata) for metric, idata in runs.items()}
    assert cost["diag"] > 2.0 * cost["low_rank"], cost
    theta = runs["low_rank"].posterior["theta"].values
    assert np.max(np.abs(z_scores(theta @ u, 0.0))) < Z_MAX


@pytest.mark.slow
def test_conjugate_normal_normal_against_closed_form():
    y = np.random.default_rng(3).normal(2.0, 2.0, size=20)
    target, mean, sd = normal_normal_target(y, sigma=2.0, mu0=1.0, tau0=3.0)
    idata = samplers.nuts(target, seed=3, progress=False)
    mu = idata.posterior["theta"].values
    assert abs(z_scores(mu, mean)[0]) < Z_MAX
    assert abs(z_scores((mu - mean) ** 2, sd**2)[0]) < Z_MAX


@pytest.mark.slow
def test_eight_schools_noncentered():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)  # a rare divergence is fine
        idata = samplers.nuts(EightSchools(), seed=4, progress=False)
    post = idata.posterior
    mu, tau = post["mu"].values[..., None], post["tau"].values[..., None]
    assert abs(z_scores(mu, EIGHT_SCHOOLS_MU)[0]) < Z_MAX
    assert abs(z_scores(tau, EIGHT_SCHOOLS_TAU)[0]) < Z_MAX
    assert set(post.data_vars) == {"mu", "tau", "z", "theta"}
    assert post["theta"].shape == (4, 1000, 8)


def test_divergences_detected_on_neals_funnel():
    # At the default target and 300 draws, 2 seeds of 10 never reached the
    # neck; at 0.6 and 1000 draws every one of 10 seeds diverged 4 to 1034 times.
    with pytest.warns(SamplerWarning, match="divergent"):
        idata = samplers.nuts(NumbaTarget(funnel, 10), draws=1000, tune=300, seed=1,
                              target_accept=0.6, progress=False)
    assert idata.sample_stats["diverging"].values.sum() > 0


def test_static_hmc_eight_schools():
    # (A standard normal is a poor static-HMC test: on a harmonic oscillator
    # the acceptance is not monotone in the step size and chains resonate.)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        idata = samplers.hmc(EightSchools(), num_steps=8, seed=6, target_accept=0.65,
                             progress=False)
    post, ss = idata.posterior, idata.sample_stats
    assert abs(z_scores(post["mu"].values[..., None], EIGHT_SCHOOLS_MU)[0]) < Z_MAX
    assert abs(z_scores(post["tau"].values[..., None], EIGHT_SCHOOLS_TAU)[0]) < Z_MAX
    ok = ~ss["diverging"].values  # a divergence stops the integration early
    assert (ss["n_steps"].values[ok] == 8).all() and (ss["tree_depth"].values == 0).all()
    # exp(x_bar) is below the last iterates: acceptance ends above the target.
    assert 0.6 < ss["acceptance_rate"].values.mean() < 0.95


def test_warmup_window_arguments_reach_the_schedule(monkeypatch):
    from logdens.samplers import sample
    seen = []
    real = sample.warmup_schedule

    def spy(tune, *windows):
        seen.append((tune,) + windows)
        return real(tune, *windows)

    monkeypatch.setattr(sample, "warmup_schedule", spy)
    samplers.nuts(NumbaTarget(std_normal, 2), draws=10, tune=300, chains=1, progress=False,
                  adapt_init_buffer=30, adapt_term_buffer=100, adapt_window=40)
    assert seen == [(300, 30, 100, 40)]
    with pytest.raises(ValueError, match="adapt_window"):
        samplers.nuts(NumbaTarget(std_normal, 2), draws=10, tune=300, adapt_window=0)


@pytest.mark.parametrize("given", [False, True])
def test_nutpie_warmup_keeps_a_given_metric_until_its_first_estimate(given):
    from logdens.samplers import kernel, runner
    from logdens.samplers.mass_matrix import warmup_schedule
    from logdens.samplers.protocol import numba_entry
    from logdens.samplers.sample import _chain_state, _config

    target = NumbaTarget(std_normal, 3)
    entry = numba_entry(target)
    variances = np.array([0.5, 2.0, 8.0])
    state = _chain_state(entry, 3, False, 0, 0, np.array([0.3, -1.0, 2.0]),
                         variances if given else None)
    grad0 = state.grad.copy()
    iconf, fconf = _config(kernel.NUTS, 10, 0, 100, "diag", 0.8, "nutpie", given)
    # One warmup draw: the estimator needs three points (the start counts)
    # before it sets the metric, so what is there is the metric it started from.
    runner.run_chains(entry, [state], warmup_schedule(100), iconf, fconf, 1, 100, 1, False)
    expected = variances if given else 1.0 / np.abs(grad0)
    np.testing.assert_array_equal(state.metric.inv_diag, expected)
