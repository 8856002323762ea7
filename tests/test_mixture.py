"""ld.Mixture (logdens.mixture): numeric logpdf and rvs, compiled models, predictive draws.

References are scipy's: log(sum_k w_k p_k(x)) computed as a logsumexp of the
components' scipy log densities, stable where the naive sum underflows.
Gradients are checked against central finite differences; random draws by
their moments within 5 standard errors, at fixed seeds.
"""

import math

import numpy as np
import pytest
from arviz_base import from_dict
from scipy import special, stats

import logdens as ld
from logdens.expr import ModelError
from engine_helpers import check_gradient, per_sample_rows

N = 20000


def _reference(x, weights, logpdfs):
    """log sum_k w_k p_k(x), the log densities ``logpdfs`` (K, ...) from scipy."""
    with np.errstate(divide="ignore"):
        return special.logsumexp(np.log(np.asarray(weights))[:, None] + np.atleast_2d(logpdfs), axis=0)


def _central_jacobian(f, theta, h=1e-6):
    """Central differences of the vector function ``f`` at ``theta``: (len(f), dim)."""
    columns = []
    for j in range(len(theta)):
        step = np.zeros_like(theta)
        step[j] = h * max(1.0, abs(theta[j]))
        columns.append((f(theta + step) - f(theta - step)) / (2 * step[j]))
    return np.stack(columns, axis=-1)


# ----- numeric use -----------------------------------------------------------

def test_logpdf_matches_scipy_in_the_bulk_and_the_tails():
    mix = ld.Mixture([0.3, 0.7], [ld.Normal(0, 1), ld.Normal(3, 1)])
    x = np.array([-60.0, -8.0, 0.0, 1.5, 3.0, 9.0, 70.0])
    expected = _reference(x, [0.3, 0.7], [stats.norm.logpdf(x), stats.norm.logpdf(x, 3.0)])
    np.testing.assert_allclose(mix.logpdf(x), expected, rtol=1e-13)
    with np.errstate(divide="ignore"):  # where the naive sum of densities underflows to 0
        naive = np.log(0.3 * stats.norm.pdf(x) + 0.7 * stats.norm.pdf(x, 3.0))
    assert naive[0] == -np.inf and np.isfinite(mix.logpdf(x)[0])
    assert isinstance(mix.logpdf(1.5), float) and mix.logpdf(1.5) == pytest.approx(expected[3], rel=1e-13)


def test_logpdf_of_positive_and_discrete_mixtures():
    mix = ld.Mixture([0.4, 0.6], [ld.Gamma(2.0, 0.5), ld.LogNormal(1.0, 0.5)])
    x = np.array([1e-3, 0.5, 3.0, 40.0])
    expected = _reference(x, [0.4, 0.6], [stats.gamma.logpdf(x, 2.0, scale=2.0),
                                          stats.lognorm.logpdf(x, 0.5, scale=math.e)])
    np.testing.assert_allclose(mix.logpdf(x), expected, rtol=1e-12)
    assert mix.logpdf(-1.0) == -np.inf
    counts = np.array([0, 3, 12, 200])
    mix = ld.Mixture([0.25, 0.5, 0.25], [ld.Poisson(1.0), ld.Poisson(5.0), ld.Poisson(20.0)])
    expected = _reference(counts, [0.25, 0.5, 0.25], [stats.poisson.logpmf(counts, r) for r in (1, 5, 20)])
    np.testing.assert_allclose(mix.logpmf(counts), expected, rtol=1e-12)
    assert mix.logpdf(2.5) == -np.inf


def test_rvs_moments_and_seeds():
    mix = ld.Mixture([0.3, 0.7], [ld.Normal(0, 1), ld.Normal(3, 1)])
    x = mix.rvs(size=N, seed=1)
    assert x.shape == (N,) and x.dtype == np.float64
    mean, var = 0.3 * 0 + 0.7 * 3, 1.0 + 0.3 * 0.7 * 9.0  # E[var] + var of the means
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / N)
    assert abs(x.var() - var) < 5 * np.std((x - x.mean()) ** 2) / math.sqrt(N)
    np.testing.assert_array_equal(mix.rvs(size=5, seed=7), mix.rvs(size=5, seed=7))
    counts = ld.Mixture([0.5, 0.5], [ld.Poisson(2.0), ld.Poisson(10.0)]).rvs(size=(100, 200), seed=2)
    assert counts.shape == (100, 200) and counts.dtype == np.int64
    # mean 6, variance 6 + 0.25 * 64 = 22
    assert abs(counts.mean() - 6.0) < 5 * math.sqrt(22.0 / counts.size)
    with pytest.raises(ValueError, match="size"):
        ld.Mixture([0.5, 0.5], [ld.Normal(np.zeros(3), 1), ld.Normal(1, 1)]).rvs(size=4)


def test_rvs_with_elementwise_parameters_draws_each_element_from_its_own():
    locs = np.array([-100.0, 0.0, 100.0])
    x = ld.Mixture([0.5, 0.5], [ld.Normal(locs, 1.0), ld.Normal(locs + 10.0, 1.0)]).rvs(size=(4000, 3), seed=3)
    assert np.all(np.abs(x - locs - 5.0) < 10.0)
    assert abs(np.mean(x - locs > 5.0) - 0.5) < 5 * 0.5 / math.sqrt(x.size)


# ----- in models -------------------------------------------------------------

def normal_mixture(y):
    m = ld.Model()
    w = m.param("w", ld.Dirichlet(np.array([2.0, 2.0])))
    mu = m.param("mu", ld.Normal(0, 5), shape=2, constraint=ld.ordered)
    s = m.param("s", ld.HalfNormal(2))
    m.observe("y", ld.Mixture(w, [ld.Normal(mu[0], s), ld.Normal(mu[1], s)]), y)
    return m


def test_observed_normal_mixture_value_gradient_and_rows():
    rng = np.random.default_rng(0)
    y = np.concatenate([rng.normal(-1, 1, 15), rng.normal(2, 1, 25), [-30.0]])  # one far in a tail
    m = normal_mixture(y)
    assert "y[41] ~ Mixture(w, [Normal(mu[0], s), Normal(mu[1], s)]) observed" in " ".join(str(m).split())
    density = m.compile()
    theta = density.unconstrain({"w": np.array([0.3, 0.7]), "mu": np.array([-1.0, 2.0]), "s": 0.8})
    lik = _reference(y, [0.3, 0.7], [stats.norm.logpdf(y, -1.0, 0.8), stats.norm.logpdf(y, 2.0, 0.8)])
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["y"], lik, rtol=1e-12)
    priors = (stats.dirichlet.logpdf([0.3, 0.7], [2.0, 2.0]) + stats.norm.logpdf([-1.0, 2.0], 0, 5).sum()
              + stats.halfnorm.logpdf(0.8, scale=2.0))
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(priors + lik.sum(),
                                                                                     rel=1e-12)
    check_gradient(density, theta, np.random.default_rng(1), n_directions=4)
    rows = per_sample_rows(density, theta, "y")
    assert rows.shape == (len(y), density.dim)
    fd = _central_jacobian(lambda t: density.pointwise_log_likelihood(t)["y"], theta)
    np.testing.assert_allclose(rows, fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rows.sum(axis=0), fd.sum(axis=0), rtol=1e-6, atol=1e-6)


def test_observed_poisson_mixture_with_softmax_weights():
    counts = np.array([0, 1, 2, 2, 3, 9, 11, 14, 10, 1])
    m = ld.Model()
    rate = m.param("rate", ld.Gamma(2.0, 0.2), shape=2, constraint=ld.positive_ordered)
    z = m.param("z", ld.Normal(0, 1), shape=2)
    m.observe("c", ld.Mixture(ld.softmax(z), [ld.Poisson(rate[0]), ld.Poisson(rate[1])]), counts)
    density = m.compile()
    point = {"rate": np.array([1.5, 10.0]), "z": np.array([0.2, -0.4])}
    theta = density.unconstrain(point)
    w = special.softmax(point["z"])
    lik = _reference(counts, w, [stats.poisson.logpmf(counts, r) for r in point["rate"]])
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["c"], lik, rtol=1e-12)
    check_gradient(density, theta, np.random.default_rng(2), n_directions=4)
    fd = _central_jacobian(lambda t: density.pointwise_log_likelihood(t)["c"], theta)
    np.testing.assert_allclose(per_sample_rows(density, theta, "c"), fd, rtol=1e-6, atol=1e-6)


def test_mixture_prior_on_a_positive_parameter():
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1))
    w = m.param("w", ld.Beta(2, 2))
    m.param("x", ld.Mixture([w, 1 - w], [ld.Gamma(2.0, 1.0), ld.LogNormal(a, 0.5)]), shape=3)
    assert m.params["x"].constraint == ld.positive
    shown = " ".join(str(m).split())
    assert "x[3] ~ Mixture([w, 1 - w], [Gamma(2, 1), LogNormal(a, 0.5)]) positive" in shown
    assert "potential" not in shown  # its density is shown as its prior, once
    density = m.compile()
    x = np.array([0.05, 1.0, 6.0])
    theta = density.unconstrain({"a": 0.3, "w": 0.4, "x": x})
    mixture = _reference(x, [0.4, 0.6], [stats.gamma.logpdf(x, 2.0), stats.lognorm.logpdf(x, 0.5, scale=math.exp(0.3))])
    expected = stats.norm.logpdf(0.3) + stats.beta.logpdf(0.4, 2, 2) + mixture.sum()
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, rel=1e-12)
    # the log transform's Jacobian, sum(log x), and the logit's, log(w (1 - w))
    assert density.log_density(theta, propto=False) == pytest.approx(
        expected + np.log(x).sum() + math.log(0.4 * 0.6), rel=1e-12)
    check_gradient(density, theta, np.random.default_rng(3), n_directions=4)
    assert density.pointwise_log_likelihood(theta) == {}  # a prior, not an observation


def test_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match="Normal has support reals in .* Gamma has reals in .0.0, inf.*one support"):
        ld.Mixture([0.5, 0.5], [ld.Normal(0, 1), ld.Gamma(2, 1)])
    with pytest.raises(ValueError, match="Poisson has support integers .* Normal has reals"):
        ld.Mixture([0.5, 0.5], [ld.Poisson(1.0), ld.Normal(0, 1)])
    with pytest.raises(ValueError, match=r"weights have shape \(3,\) but there are 2 components"):
        ld.Mixture([0.2, 0.3, 0.5], [ld.Normal(0, 1), ld.Normal(1, 1)])
    with pytest.raises(ValueError, match="weights sum to 1.1, must sum to 1"):
        ld.Mixture([0.5, 0.6], [ld.Normal(0, 1), ld.Normal(1, 1)])
    with pytest.raises(ValueError, match=r"weights\[0\]=-0.5, must be >= 0"):
        ld.Mixture([-0.5, 1.5], [ld.Normal(0, 1), ld.Normal(1, 1)])
    with pytest.raises(TypeError, match="list of distributions"):
        ld.Mixture([1.0], ld.Normal(0, 1))
    m = ld.Model()
    w = m.param("w", ld.Dirichlet(np.ones(3)))
    rate = m.param("rate", ld.Gamma(2, 1), shape=2)
    with pytest.raises(ModelError, match=r"weights w have shape \(3,\) but there are 2 components"):
        ld.Mixture(w, [ld.Poisson(rate[0]), ld.Poisson(rate[1])])
    # observed values outside the support: an error when data are set (compile, set_data)
    for observed, match in [(np.array([1, 2, -1, 3]), r"term 'c': Mixture value x: c\[2\]=-1, must be >= 0.0 and an integer"),
                            ("counts", r"term 'c': Mixture value x: counts\[1\]=2.5"),
                            ("binomial", r"term 'c': Mixture value x: c\[1\]=21, must be in \[0.0, n\]")]:
        bad = ld.Model()
        rate = bad.param("rate", ld.Gamma(2, 1), shape=2)
        mix = ld.Mixture([0.5, 0.5], [ld.Poisson(rate[0]), ld.Poisson(rate[1])])
        if isinstance(observed, str) and observed == "counts":
            bad.observe("c", mix, bad.data("counts", np.array([0.0, 2.5])))
        elif isinstance(observed, str):
            trials = bad.data("trials", np.array([10, 20]))
            bad.observe("c", ld.Mixture([0.5, 0.5], [ld.Binomial(trials, rate[0] / 10), ld.Binomial(trials, 0.7)]),
                        np.array([3, 21]))
        else:
            bad.observe("c", mix, observed)
        with pytest.raises(ModelError, match=match):
            bad.compile()
    with pytest.raises(ModelError, match="cannot be discrete"):
        m.param("k", ld.Mixture([0.5, 0.5], [ld.Poisson(1.0), ld.Poisson(2.0)]))


# ----- sampling --------------------------------------------------------------

@pytest.mark.slow
def test_nuts_recovers_a_two_component_normal_mixture():
    rng = np.random.default_rng(4)
    truth = {"w": 0.3, "mu": np.array([-2.0, 2.0]), "s": 1.0}
    y = np.where(rng.uniform(size=300) < truth["w"], rng.normal(-2.0, 1.0, 300), rng.normal(2.0, 1.0, 300))
    idata = ld.nuts(normal_mixture(y), draws=300, tune=300, chains=2, seed=0, progress=False)
    post = idata.posterior
    for value, draws in [(truth["w"], post["w"].values[..., 0]), (truth["mu"][0], post["mu"].values[..., 0]),
                         (truth["mu"][1], post["mu"].values[..., 1]), (truth["s"], post["s"].values)]:
        assert abs(draws.mean() - value) < 4 * draws.std(), (value, draws.mean(), draws.std())
    assert idata.log_likelihood["y"].shape == (2, 300, 300)


def test_prior_predictive_of_a_mixture_observation_and_prior():
    m = normal_mixture(np.zeros(30))
    a = m.param("a", ld.Normal(0, 1))
    m.param("x", ld.Mixture([0.5, 0.5], [ld.Gamma(2.0, 1.0), ld.LogNormal(a, 0.5)]))
    n = 4000
    tree = ld.sample_prior_predictive(m, draws=n, seed=5)
    y = tree.prior_predictive["y"].values[0]
    assert y.shape == (n, 30) and tree.observed_data["y"].shape == (30,)
    w, mu, s = (tree.prior[k].values[0] for k in ("w", "mu", "s"))
    # given a draw of the parameters, y has the mixture's mean and variance
    mean = np.sum(w * mu, axis=-1)
    var = s ** 2 + w[:, 0] * w[:, 1] * (mu[:, 1] - mu[:, 0]) ** 2
    z = (y - mean[:, None]) / np.sqrt(var[:, None])
    assert abs(z.mean()) < 5 / math.sqrt(n)  # the 30 elements of a draw share its parameters
    assert abs((z ** 2).mean() - 1.0) < 5 * np.std(np.mean(z ** 2, axis=1)) / math.sqrt(n)
    x = tree.prior["x"].values[0]  # E[x] = 0.5 * 2 + 0.5 * E[exp(a + 0.5 Z)] = 1 + 0.5 exp(0.625)
    assert x.shape == (n,) and np.all(x > 0)
    assert abs(x.mean() - (1.0 + 0.5 * math.exp(0.625))) < 5 * x.std() / math.sqrt(n)


def test_posterior_predictive_of_mixture_observations():
    m = ld.Model()
    w = m.param("w", ld.Dirichlet(np.ones(2)))
    mu = m.param("mu", ld.Normal(0, 5), shape=2, constraint=ld.ordered)
    s = m.param("s", ld.HalfNormal(2))
    m.observe("y", ld.Mixture(w, [ld.Normal(mu[0], s), ld.Normal(mu[1], s)]), np.zeros(20))
    m.observe("c", ld.Mixture(w, [ld.Poisson(3.0), ld.Poisson(mu[1] ** 2)]), np.array([1, 4, 0]))
    chains, draws = 2, 2000
    posterior = from_dict({"posterior": {"w": np.broadcast_to([0.3, 0.7], (chains, draws, 2)),
                                         "mu": np.broadcast_to([-2.0, 2.0], (chains, draws, 2)),
                                         "s": np.full((chains, draws), 0.5)}})
    density = m.compile()
    tree = ld.sample_posterior_predictive(posterior, density, seed=6)
    y = tree.posterior_predictive["y"].values
    c = tree.posterior_predictive["c"].values
    assert y.shape == (chains, draws, 20) and c.shape == (chains, draws, 3) and c.dtype == np.int64
    mean, var = 0.3 * -2.0 + 0.7 * 2.0, 0.25 + 0.21 * 16.0
    assert abs(y.mean() - mean) < 5 * math.sqrt(var / y.size)
    assert abs(np.mean(y < 0) - 0.3) < 5 * math.sqrt(0.21 / y.size)  # the components barely overlap
    assert abs(c.mean() - (0.3 * 3 + 0.7 * 4)) < 5 * math.sqrt((3.7 + 0.21) / c.size)
    np.testing.assert_array_equal(tree.observed_data["c"].values, [1, 4, 0])
    again = ld.sample_posterior_predictive(posterior, m, seed=6)  # the model, not its density: the same draws
    np.testing.assert_array_equal(again.posterior_predictive["c"].values, c)


def test_set_data_checks_and_observed_data_holds_mixture_terms():
    """A new observed array outside the support is an error at set_data, and the
    observed values of a Mixture term are in ``observed_data`` (the samplers'
    ``observed_data`` group)."""
    m = ld.Model()
    rate = m.param("rate", ld.Gamma(2, 1), shape=2)
    m.observe("c", ld.Mixture([0.3, 0.7], [ld.Poisson(rate[0]), ld.Poisson(rate[1])]), np.array([1, 2, 0]))
    lp = m.compile()
    np.testing.assert_array_equal(lp.observed_data()["c"], [1, 2, 0])
    with pytest.raises(ModelError, match=r"term 'c': Mixture value x: c\[1\]=-2"):
        lp.set_data(c=np.array([1, -2]))
