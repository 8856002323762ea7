"""Prior and posterior predictive draws (logdens.predictive).

Laws are checked at fixed seeds with the tests of ``test_random.py``: a
Kolmogorov-Smirnov test against the exact law, rejected when p < 1e-4 (each
test is deterministic; a correct sampler fails one such check at about 1 in
10,000 seeds), and moments within 5 standard errors. Posterior predictive
laws are checked on conjugate models whose posterior draws are exact (made
with scipy), so no sampler error enters; one test runs ld.nuts end to end.
"""

import math
import warnings

import numpy as np
import pytest
from arviz_base import from_dict
from scipy import stats

import logdens as ld
from logdens.expr import ModelError

ALPHA = 1e-4
N = 4000


def _ks(x, cdf):
    return stats.kstest(np.ravel(x), cdf).pvalue


def normal_model(n_obs=5, coords=None):
    """mu ~ Normal(1, 2); y_i ~ Normal(mu, 0.5), i < n_obs."""
    m = ld.Model(coords=coords)
    mu = m.param("mu", ld.Normal(1.0, 2.0))
    m.observe("y", ld.Normal(mu, 0.5), np.zeros(n_obs), dims=None if coords is None else "obs")
    return m


def test_prior_and_prior_predictive_follow_their_laws():
    tree = ld.sample_prior_predictive(normal_model(), draws=N, seed=3)
    assert set(tree.children) == {"prior", "prior_predictive", "observed_data"}
    mu = tree.prior["mu"].values
    y = tree.prior_predictive["y"].values
    assert mu.shape == (1, N) and y.shape == (1, N, 5)
    assert _ks(mu, stats.norm(1.0, 2.0).cdf) >= ALPHA
    # marginally y_i ~ Normal(1, sqrt(4 + 0.25)); given mu, y_i - mu ~ Normal(0, 0.5)
    assert _ks(y[..., 0], stats.norm(1.0, math.sqrt(4.25)).cdf) >= ALPHA
    assert _ks(y - mu[..., None], stats.norm(0.0, 0.5).cdf) >= ALPHA
    # the elements of one draw share mu: corr(y_0, y_1) = 4 / 4.25 (SE about (1 - r^2) / sqrt(N))
    r = np.corrcoef(y[0, :, 0], y[0, :, 1])[0, 1]
    assert abs(r - 4 / 4.25) < 5 * (1 - (4 / 4.25) ** 2) / math.sqrt(N)


def test_a_prior_reads_parameters_drawn_before_it():
    """Centered eight schools: theta ~ Normal(mu, tau), each draw at its own mu and tau."""
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5))
    tau = m.param("tau", ld.HalfNormal(5))
    theta = m.param("theta", ld.Normal(mu, tau), shape=8)
    m.deterministic("spread", ld.sum((theta - mu) ** 2) / tau ** 2)
    tree = ld.sample_prior_predictive(m, draws=N, seed=4)
    p = tree.prior
    assert _ks(p["tau"].values, stats.halfnorm(scale=5).cdf) >= ALPHA
    z = (p["theta"].values - p["mu"].values[..., None]) / p["tau"].values[..., None]
    assert _ks(z, stats.norm.cdf) >= ALPHA
    assert _ks(p["spread"].values, stats.chi2(8).cdf) >= ALPHA  # a sum of 8 squared z's
    assert "prior_predictive" not in tree.children  # no observed term


def test_a_constraint_that_cuts_a_constant_prior_truncates_it():
    """Stan's idiom: a Normal prior on a positive parameter is a half-normal; an
    interval cuts a Cauchy to its middle."""
    m = ld.Model()
    m.param("sigma", ld.Normal(0.0, 3.0), constraint=ld.positive)
    m.param("w", ld.Cauchy(0.0, 1.0), constraint=ld.interval(-1.0, 2.0))
    p = ld.sample_prior_predictive(m, draws=N, seed=5).prior
    assert _ks(p["sigma"].values, stats.halfnorm(scale=3.0).cdf) >= ALPHA
    lo, hi = stats.cauchy.cdf(-1.0), stats.cauchy.cdf(2.0)
    assert _ks(p["w"].values, lambda x: (stats.cauchy.cdf(x) - lo) / (hi - lo)) >= ALPHA


def test_a_cut_that_depends_on_a_parameter_is_refused():
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    m.param("s", ld.Normal(mu, 1.0), constraint=ld.positive)
    with pytest.raises(ModelError, match=r"parameter 's': its constraint .* cuts into the support "
                                         r"of its prior Normal, and the prior.s mass inside it depends on other"):
        ld.sample_prior_predictive(m, draws=10, seed=0)


def test_an_ordered_vector_is_sorted_iid_draws():
    """The minimum of 3 sorted Normal(0, 1) draws has cdf 1 - (1 - Phi)^3."""
    m = ld.Model()
    m.param("c", ld.Normal(0.0, 1.0), shape=3, constraint=ld.ordered)
    c = ld.sample_prior_predictive(m, draws=N, seed=6).prior["c"].values[0]
    assert np.all(np.diff(c, axis=1) > 0)
    assert _ks(c[:, 0], lambda x: 1 - stats.norm.sf(x) ** 3) >= ALPHA
    assert _ks(c[:, 2], lambda x: stats.norm.cdf(x) ** 3) >= ALPHA


@pytest.mark.parametrize("build, message", [
    (lambda m: m.param("c", ld.Normal(np.arange(3.0), 1.0), shape=3, constraint=ld.ordered),
     "an ordered vector can be drawn only when its prior's arguments are the same"),
    (lambda m: m.param("w", ld.Gamma(2.0, 1.0), shape=3, constraint=ld.simplex),
     "a simplex with a Gamma prior"),
    (lambda m: m.param("flat"), "parameter 'flat' has no prior"),
    (lambda m: m.param("s", ld.Normal(-40.0, 1.0), constraint=ld.positive),
     "fewer than 1 in 1000 draws of its prior lie inside its constraint"),
])
def test_priors_that_cannot_be_drawn_are_refused(build, message):
    m = ld.Model()
    build(m)
    with pytest.raises(ModelError, match=message):
        ld.sample_prior_predictive(m, draws=10, seed=0)


def test_potentials_are_left_out_with_a_warning():
    m = normal_model()
    m.potential("pull", -m.params["mu"] ** 2)
    with pytest.warns(UserWarning, match=r"potentials \['pull'\] are left out"):
        tree = ld.sample_prior_predictive(m, draws=N, seed=7)
    assert _ks(tree.prior["mu"].values, stats.norm(1.0, 2.0).cdf) >= ALPHA


def poisson_regression(n_groups=4, rows_per_group=3):
    """log rate = a[group] + b * x; counts as int64 draws, dims and coords on rows."""
    group = np.repeat(np.arange(n_groups), rows_per_group)
    x = np.linspace(-1, 1, group.size)
    m = ld.Model(coords={"row": np.arange(group.size), "county": list("ABCD")[:n_groups]})
    a = m.param("a", ld.Normal(0.5, 0.3), dims="county")
    b = m.param("b", ld.Normal(0.0, 0.2))
    g = m.data("group", group, dims="row")
    xs = m.data("x", x, dims="row")
    m.deterministic("log_rate", a[g] + b * xs, dims="row")
    m.observe("count", ld.PoissonLog(a[g] + b * xs), np.ones(group.size, dtype=np.int64), dims="row")
    return m


def test_discrete_observations_and_dims():
    tree = ld.sample_prior_predictive(poisson_regression(), draws=N, seed=8)
    count = tree.prior_predictive["count"]
    assert count.dtype == np.int64 and count.dims == ("chain", "draw", "row")
    assert tree.prior["a"].dims == ("chain", "draw", "county")
    assert list(tree.prior["a"].coords["county"].values) == list("ABCD")
    # given the log rate of each draw, the counts are Poisson: E[count] = E[exp(log_rate)]
    rate = np.exp(tree.prior["log_rate"].values)
    k = count.values
    se = np.sqrt((rate + rate ** 2).var(axis=1) / N)  # var(count) = E[rate] + var(rate) >= var(rate)
    assert np.all(np.abs(k.mean(axis=1) - rate.mean(axis=1)) < 5 * np.sqrt(rate.mean(axis=1) / N + se ** 2))


def test_draws_depend_only_on_the_seed_and_a_model_equals_its_density():
    m = poisson_regression()
    a = ld.sample_prior_predictive(m, draws=50, seed=9)
    b = ld.sample_prior_predictive(m.compile(), draws=50, seed=9)
    c = ld.sample_prior_predictive(m, draws=50, seed=10)
    np.testing.assert_array_equal(a.prior_predictive["count"], b.prior_predictive["count"])
    np.testing.assert_array_equal(a.prior["a"], b.prior["a"])
    assert not np.array_equal(a.prior["a"], c.prior["a"])


def test_var_names_select_the_returned_variables():
    tree = ld.sample_prior_predictive(poisson_regression(), draws=20, seed=0, var_names=["b", "count"])
    assert list(tree.prior.data_vars) == ["b"] and list(tree.prior_predictive.data_vars) == ["count"]
    with pytest.raises(ValueError, match="var_names has 'nope'"):
        ld.sample_prior_predictive(poisson_regression(), draws=20, var_names=["nope"])


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(draws=0), ValueError, "draws=0, must be an integer >= 1"),
    (dict(draws=2.5), ValueError, "draws=2.5"),
    (dict(seed=-1), TypeError, "seed=-1, must be a non-negative int"),
])
def test_bad_arguments_raise(kwargs, error, message):
    with pytest.raises(error, match=message):
        ld.sample_prior_predictive(normal_model(), **kwargs)
    with pytest.raises(TypeError, match="model must be an ld.Model"):
        ld.sample_prior_predictive(object())


def test_an_invalid_distribution_argument_at_a_draw_names_the_term():
    """exp(40 * z) overflows to inf above z = 17.7 and underflows to 0 below -18.6: the
    first such scale is named, with its index (draw, element)."""
    m = ld.Model()
    z = m.param("z", ld.Normal(0.0, 1e3))
    m.observe("y", ld.Normal(0.0, ld.exp(40 * z)), np.zeros(2))
    with pytest.raises(ModelError, match=r"sample_prior_predictive: term 'y': Normal: scale\[\d+, 0\]=(inf|0\.0), must be > 0"):
        ld.sample_prior_predictive(m, draws=200, seed=0)


def test_truncation_bounds_drawn_out_of_order_name_both_values_and_the_fix():
    """TruncatedNormal(0, 1, lo, hi) with lo and hi drawn from their priors: where
    the draws cross, the message said 'upper[8]=0.15, must be > lower (inf:
    none)', with neither lower's value nor a way out."""
    m = ld.Model()
    lo = m.param("lo", ld.Normal(0, 1))
    hi = m.param("hi", ld.Normal(0.5, 1))
    m.param("x", ld.TruncatedNormal(0.0, 1.0, lo, hi))
    with pytest.raises(ModelError, match=r"term 'x': TruncatedNormal: upper\[(\d+)\]=\S+, must be > lower \(or inf: "
                                         r"no bound\); lower\[\1\]=\S+ \(index: draw, then element\); the arguments "
                                         r"come from the draws of the parameters they depend on: give those priors "
                                         r"under which they are always valid \(e.g. an upper bound as the lower one "
                                         r"plus a positive width\)"):
        ld.sample_prior_predictive(m, draws=50, seed=1)

def _posterior(values, chains=2):
    """A posterior group from draws (chains * n, ...) made elsewhere."""
    return from_dict({"posterior": {k: v.reshape((chains, -1) + v.shape[1:]) for k, v in values.items()}})


def test_posterior_predictive_of_a_conjugate_normal_model():
    """mu ~ Normal(1, 2), y_i ~ Normal(mu, 0.5): the posterior is Normal(m, s) in
    closed form, and a replicated y_i is Normal(m, sqrt(s^2 + 0.25))."""
    y = np.array([0.3, 1.1, 0.7, 0.2, 0.9])
    m = ld.Model()
    mu = m.param("mu", ld.Normal(1.0, 2.0))
    m.observe("y", ld.Normal(mu, 0.5), y)
    precision = 1 / 4 + y.size / 0.25
    mean, sd = (1 / 4 + y.sum() / 0.25) / precision, math.sqrt(1 / precision)
    draws = stats.norm(mean, sd).rvs(size=N, random_state=1)
    idata = _posterior({"mu": draws})
    tree = ld.sample_posterior_predictive(idata, m, seed=11)
    assert set(tree.children) == {"posterior_predictive", "observed_data"}
    rep = tree.posterior_predictive["y"].values
    assert rep.shape == (2, N // 2, 5)
    np.testing.assert_array_equal(tree.observed_data["y"].values, y)
    assert _ks(rep[..., 3], stats.norm(mean, math.sqrt(sd ** 2 + 0.25)).cdf) >= ALPHA
    # one replicate per posterior draw, at that draw's mu
    assert _ks(rep - draws.reshape(2, -1)[..., None], stats.norm(0, 0.5).cdf) >= ALPHA


def _ppc_variance_pvalue(counts, seed):
    """Bayesian p-value P(var(y_rep) >= var(y)) of a Poisson model with a Gamma(2, 1)
    prior on its rate, from exact posterior draws Gamma(2 + sum y, 1 + n)."""
    m = ld.Model()
    rate = m.param("rate", ld.Gamma(2.0, 1.0))
    m.observe("y", ld.Poisson(rate), counts)
    rates = stats.gamma(2.0 + counts.sum(), scale=1 / (1.0 + counts.size)).rvs(size=2000, random_state=seed)
    rep = ld.sample_posterior_predictive(_posterior({"rate": rates}), m, seed=seed)
    y_rep = rep.posterior_predictive["y"].values
    assert y_rep.dtype == np.int64
    return np.mean(y_rep.var(axis=-1) >= counts.var())


def test_a_posterior_predictive_check_finds_overdispersion():
    """The known answer: Poisson data pass the check, overdispersed counts of the
    same mean (negative binomial, variance 6x the mean) fail it."""
    rng = np.random.default_rng(12)
    poisson = rng.poisson(4.0, size=200)
    overdispersed = rng.negative_binomial(0.8, 0.8 / 4.8, size=200)
    assert 0.05 < _ppc_variance_pvalue(poisson, 1) < 0.95
    assert _ppc_variance_pvalue(overdispersed, 2) == 0.0


def regression(n, x=None, coords=True):
    """y ~ Normal(a + b x, s), data a line with noise of sd 0.1, rows labelled by dim 'obs'."""
    x = np.linspace(0, 1, n) if x is None else x
    m = ld.Model(coords={"obs": np.arange(n)} if coords else None)
    a = m.param("a", ld.Normal(0, 10))
    b = m.param("b", ld.Normal(0, 10))
    s = m.param("s", ld.HalfNormal(1))
    xs = m.data("x", x, dims="obs" if coords else None)
    mu = m.deterministic("mu", a + b * xs, dims="obs" if coords else None)
    noise = 0.1 * np.random.default_rng(n).standard_normal(n)
    m.observe("y", ld.Normal(mu, s), 1.0 + 2.0 * x + noise, dims="obs" if coords else None)
    return m


def test_predictions_on_new_data():
    """set_data to 3 new rows (and a placeholder y of that length), then predictions:
    each predicted row is Normal(a + b x_new, s) at every draw."""
    rng = np.random.default_rng(13)
    post = {"a": rng.normal(1, 0.1, N), "b": rng.normal(2, 0.1, N), "s": rng.uniform(0.1, 0.3, N)}
    idata = _posterior(post)
    density = regression(20).compile()
    x_new = np.array([-1.0, 0.5, 3.0])
    density.set_data(x=x_new, y=np.zeros(3), coords={"obs": [100, 101, 102]})
    tree = ld.sample_posterior_predictive(idata, density, seed=14, var_names=["y", "mu"],
                                          predictions=True)
    assert set(tree.children) == {"predictions", "predictions_constant_data"}
    pred = tree.predictions
    assert pred["y"].dims == ("chain", "draw", "obs") and list(pred["obs"].values) == [100, 101, 102]
    np.testing.assert_array_equal(tree.predictions_constant_data["x"].values, x_new)
    mu = post["a"][:, None] + post["b"][:, None] * x_new
    np.testing.assert_allclose(pred["mu"].values.reshape(N, 3), mu, rtol=1e-12)
    z = (pred["y"].values.reshape(N, 3) - mu) / post["s"][:, None]
    assert _ks(z, stats.norm.cdf) >= ALPHA


def test_extend_adds_the_group_to_the_nuts_output():
    """End to end: ld.nuts, then the posterior predictive added to its DataTree."""
    density = regression(30, coords=False).compile()
    idata = ld.nuts(density, draws=300, tune=300, chains=2, seed=1, progress=False)
    out = ld.sample_posterior_predictive(idata, density, seed=2, extend_inferencedata=True)
    assert out is idata and "posterior_predictive" in idata.children
    y_rep = idata.posterior_predictive["y"].values
    assert y_rep.shape == (2, 300, 30)
    # the replicates' mean is the posterior mean of mu, up to Monte Carlo error
    # (sd 0.1 over 600 draws: SE 0.004, 0.01 at an ESS of 100)
    resid = y_rep.mean(axis=(0, 1)) - idata.posterior["mu"].mean(("chain", "draw")).values
    assert np.max(np.abs(resid)) < 0.05


def test_posterior_errors_name_the_variable():
    m = regression(5)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="the posterior has no parameter 's'"):
        ld.sample_posterior_predictive(_posterior({"a": rng.normal(size=8), "b": rng.normal(size=8)}), m)
    bad = _posterior({"a": rng.normal(size=8), "b": rng.normal(size=8), "s": rng.uniform(size=(8, 2))})
    with pytest.raises(ValueError, match=r"posterior 's' has shape \(2,\) per draw"):
        ld.sample_posterior_predictive(bad, m)
    good = _posterior({"a": rng.normal(size=8), "b": rng.normal(size=8), "s": rng.uniform(size=8)})
    with pytest.raises(ValueError, match="var_names has 'a', which is no observed term or deterministic"):
        ld.sample_posterior_predictive(good, m, var_names=["a"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ld.sample_posterior_predictive(good, m, seed=0)


def test_predictive_draws_of_a_latent_gp_have_its_data_shape_and_law():
    """k ~ PoissonLog(cholesky(K) @ z), K a covariance of data (issue 36: the draws
    had shape (1, 20, 1, 20, 6)); at a posterior of one repeated z0 each k_j is
    Poisson(exp(f_j)), f = L z0, its mean within 5 standard errors."""
    x = np.linspace(0, 5, 6)
    m = ld.Model()
    z = m.param("z", ld.Normal(0, 1), shape=6)
    L = ld.cholesky(ld.add_diag(ld.gp.exp_quad(m.data("x", x), 1.0, 1.0), 1e-6))
    m.observe("k", ld.PoissonLog(L @ z), np.arange(6.0))
    assert ld.sample_prior_predictive(m, draws=20, seed=1).prior_predictive["k"].shape == (1, 20, 6)
    z0 = np.linspace(-1, 1, 6)
    k = ld.sample_posterior_predictive(_posterior({"z": np.tile(z0, (N, 1))}), m, seed=2).posterior_predictive["k"]
    assert k.shape == (2, N // 2, 6)
    r = np.abs(x[:, None] - x[None, :])
    rate = np.exp(np.linalg.cholesky(np.exp(-0.5 * r ** 2) + 1e-6 * np.eye(6)) @ z0)
    assert np.all(np.abs(k.values.reshape(N, 6).mean(axis=0) - rate) <= 5 * np.sqrt(rate / N))


def test_a_mixture_prior_under_an_expression_bound_is_refused_by_name():
    """A Mixture prior whose parameter has a bound given by another parameter
    cannot be drawn from: a ModelError naming it (comparing the constraint with
    the support must not ask the truth of ``lo == 0.0``, a comparison node)."""
    m = ld.Model()
    lo = m.param("lo", ld.Normal(0, 1))
    m.param("x", ld.Mixture(np.array([0.5, 0.5]), [ld.Uniform(0, 1), ld.Uniform(0, 1)]),
            constraint=ld.interval(lo, 1.0))
    with pytest.raises(ModelError, match=r"parameter 'x': its constraint .* is not the support of its Mixture"):
        ld.sample_prior_predictive(m, draws=5, seed=1)


@pytest.mark.slow  # compiles a GP regression: about 25 s on a loaded machine, 5 s from the cache
def test_a_gp_term_at_new_inputs_is_refused_with_the_conditional_named():
    """y ~ MvNormal(0, K(x) + sigma^2 I) drawn after set_data(x=x_new) would be the
    GP's prior at x_new, ignoring y (issue 38: the draws' mean was about 0 where
    y is sin(x)); a ModelError names the term, the data and ld.gp.Marginal. At
    the inputs it was built with the term's replicates are drawn as before, and
    prior predictive draws at new inputs are the prior's."""
    x = np.linspace(0, 5, 8)
    m = ld.Model()
    alpha, rho = m.param("alpha", ld.HalfNormal(1.0)), m.param("rho", ld.Gamma(2.0, 1.0))
    K = ld.add_diag(ld.gp.exp_quad(m.data("x", x), alpha, rho), 0.01)
    m.observe("y", ld.MvNormal(np.zeros(8), scale_tril=ld.cholesky(K)), np.sin(x))
    idata = _posterior({"alpha": np.ones(N), "rho": np.ones(N)})
    density = m.compile()
    assert ld.sample_posterior_predictive(idata, density, seed=1).posterior_predictive["y"].shape == (2, N // 2, 8)
    density.set_data(x=x + 0.1)
    with pytest.raises(ModelError, match=r"term 'y' reads the GP covariance gp.exp_quad\(x, .*of data 'x', which "
                                         r"set_data changed.*ld.gp.Marginal.*gp.conditional"):
        ld.sample_posterior_predictive(idata, density, seed=1, predictions=True)
    # the prior predictive at new inputs is the GP's prior there: drawn
    assert ld.sample_prior_predictive(density, draws=5, seed=1).prior_predictive["y"].shape == (1, 5, 8)
