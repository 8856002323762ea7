"""Discrete parameters summed out of the model (``logdens.marginalize``).

The change point of the coal-mining disasters (yearly counts 1851-1961, as
in PyMC's tutorial) with Gamma priors on the two rates has a switchpoint
posterior in closed form: for each split, the Poisson-Gamma marginal
likelihood of each side. Tolerances: log densities at 1e-10 relative (a
sum of 111 rows of about 1e2 each and a logsumexp over 111 values, each a
few ulps); gradients against central differences at 1e-6 (h = 1e-6, error
O(h^2) plus rounding eps / h); the recovered posterior within 0.04 in total
variation at 4000 draws (the issue's bound; the Monte Carlo error of 111
cells at 4000 draws is about 0.02).
"""

import numpy as np
import pytest
from scipy import special as sp
from scipy import stats

import logdens as ld
from logdens.expr import ModelError

#: Coal-mining disasters in Great Britain per year, 1851-1961 (Jarrett 1979;
#: the 111 counts of PyMC's change-point tutorial).
DISASTERS = np.array([
    4, 5, 4, 0, 1, 4, 3, 4, 0, 6, 3, 3, 4, 0, 2, 6, 3, 3, 5, 4, 5, 3, 1, 4, 4, 1, 5, 5, 3, 4, 2, 5,
    2, 2, 3, 4, 2, 1, 3, 2, 2, 1, 1, 1, 1, 3, 0, 0, 1, 0, 1, 1, 0, 0, 3, 1, 0, 3, 2, 2, 0, 1, 1, 1,
    0, 1, 0, 1, 0, 0, 0, 2, 1, 0, 0, 0, 1, 1, 0, 2, 3, 3, 1, 1, 2, 1, 1, 1, 1, 2, 4, 2, 0, 0, 1, 4,
    0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1])
YEARS = np.arange(1851, 1962)
T = len(DISASTERS)
#: Gamma(shape, rate) priors of the early and late rates.
SHAPE, RATE = 2.0, 1.0


def change_point(years=YEARS, counts=DISASTERS):
    """PyMC's spelling: ``switch(switchpoint >= years, early, late)``."""
    m = ld.Model()
    s = m.param("s", ld.DiscreteUniform(int(years[0]), int(years[-1])))
    early = m.param("early", ld.Gamma(SHAPE, RATE))
    late = m.param("late", ld.Gamma(SHAPE, RATE))
    t = m.data("years", years.astype(float))
    m.observe("disasters", ld.Poisson(ld.where(s >= t, early, late)), counts)
    return m


def exact_switchpoint_posterior():
    """p(s = year_k | counts): with rows i <= k early, the Poisson-Gamma marginal
    likelihood of each side, log Gamma(a + S) - (a + S) log(b + N) up to
    what does not depend on the split (the uniform prior, b^a / Gamma(a), the
    counts' factorials)."""
    def side(total, n):
        return sp.gammaln(SHAPE + total) - (SHAPE + total) * np.log(RATE + n)
    early_total = np.cumsum(DISASTERS)
    k = np.arange(1, T + 1)  # rows in the early side
    lp = side(early_total, k) + side(DISASTERS.sum() - early_total, T - k)
    return np.exp(lp - sp.logsumexp(lp))


def poisson_sum(rate):
    return stats.poisson.logpmf(DISASTERS, rate)


@pytest.fixture(scope="module")
def coal():
    return change_point().compile()


def test_change_point_log_density_is_the_sum_over_the_switchpoint(coal):
    """At fixed rates, the marginalized log density is numpy's logsumexp over the
    111 splits (plus the rates' priors and log-Jacobians; the constant summands
    the engine drops from the Gamma(2, 1) priors, log(rate^2 / Gamma(2)), are 0)."""
    for early, late in [(3.1, 0.9), (1.0, 2.5), (0.05, 40.0)]:
        lp = coal.log_density(coal.unconstrain({"early": early, "late": late}))
        splits = [np.sum(np.where(YEARS <= YEARS[k], poisson_sum(early), poisson_sum(late))) for k in range(T)]
        priors = stats.gamma(SHAPE, scale=1 / RATE).logpdf([early, late]).sum() + np.log(early * late)
        assert lp == pytest.approx(sp.logsumexp(np.array(splits) - np.log(T)) + priors, rel=1e-10)


def test_change_point_gradient_matches_finite_differences(coal):
    theta = coal.unconstrain({"early": 2.7, "late": 1.1})
    _, grad = coal.log_density_gradient(theta)
    h = 1e-6
    for j in range(coal.dim):
        step = np.zeros(coal.dim)
        step[j] = h
        fd = (coal.log_density(theta + step) - coal.log_density(theta - step)) / (2 * h)
        assert grad[j] == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_the_switchpoint_leaves_the_sampled_parameters(coal):
    assert coal.param_names() == ["early", "late"]


@pytest.mark.slow
def test_switchpoint_posterior_against_its_closed_form_by_recovery(coal):
    """The recovered draws (exact conditionals given each rate draw) against the
    closed-form posterior: total variation below 0.04 at 4000 draws. The
    conditionals alone are exact: their mean over the draws is compared as well."""
    idata = ld.nuts(coal, draws=1000, tune=500, chains=4, seed=3, progress=False)
    s = idata.posterior["s"].values
    assert s.shape == (4, 1000) and s.dtype == np.int64
    assert set(np.unique(s)) <= set(YEARS)
    exact = exact_switchpoint_posterior()
    frequencies = np.bincount(s.ravel() - YEARS[0], minlength=T) / s.size
    assert 0.5 * np.abs(frequencies - exact).sum() < 0.04
    again = ld.nuts(coal, draws=1000, tune=500, chains=4, seed=3, progress=False)
    np.testing.assert_array_equal(again.posterior["s"].values, s)  # seeded: reproducible


@pytest.mark.parametrize("years, support", [(1851 + 2 * np.arange(10), (1845, 1875)),
                                             (1851 + np.arange(10), (1853, 1857))],
                         ids=["gaps, support past both ends", "support inside"])
def test_switchpoints_between_or_outside_the_years(years, support):
    """Support values between the data's years or past their ends: ties and jumps
    of the split count, against numpy's logsumexp over the support."""
    counts = DISASTERS[:10]
    m = ld.Model()
    s = m.param("s", ld.DiscreteUniform(*support))
    early, late = m.param("early", ld.Gamma(SHAPE, RATE)), m.param("late", ld.Gamma(SHAPE, RATE))
    m.observe("disasters", ld.Poisson(ld.where(s >= m.data("years", years.astype(float)), early, late)), counts)
    d = m.compile()
    values = np.arange(support[0], support[1] + 1)
    splits = [np.sum(np.where(years <= v, stats.poisson.logpmf(counts, 2.2), stats.poisson.logpmf(counts, 0.6)))
              for v in values]
    priors = stats.gamma(SHAPE, scale=1 / RATE).logpdf([2.2, 0.6]).sum() + np.log(2.2 * 0.6)
    lp = d.log_density(d.unconstrain({"early": 2.2, "late": 0.6}))
    assert lp == pytest.approx(sp.logsumexp(np.array(splits) - np.log(len(values))) + priors, rel=1e-10)


def test_the_one_pass_sum_equals_one_copy_per_support_value():
    """A switchpoint read through an arithmetic expression (no comparison) takes
    one copy of the term per support value: the same log density as the one-pass
    form on a short series."""
    years, counts = YEARS[:6], DISASTERS[:6]
    compared = change_point(years, counts).compile()
    m = ld.Model()
    s = m.param("s", ld.DiscreteUniform(int(years[0]), int(years[-1])))
    early, late = m.param("early", ld.Gamma(SHAPE, RATE)), m.param("late", ld.Gamma(SHAPE, RATE))
    step = ld.logistic(1e3 * (s - m.data("years", years.astype(float)) + 0.5))  # 1 where s >= year
    m.observe("disasters", ld.Poisson(late + (early - late) * step), counts)
    copied = m.compile()
    point = {"early": 2.0, "late": 0.7}
    assert copied.log_density(copied.unconstrain(point)) == pytest.approx(
        compared.log_density(compared.unconstrain(point)), rel=1e-10)


def test_set_data_of_the_switch_data_needs_a_new_compile(coal):
    coal.set_data(disasters=DISASTERS[::-1].copy())  # the counts: fine
    coal.set_data(years=YEARS.astype(float))  # the same values: fine
    with pytest.raises(ModelError, match=r"'years'.*'s'.*new compile\(\)"):
        coal.set_data(years=YEARS + 1.0)
    coal.set_data(disasters=DISASTERS)


def test_a_scalar_bernoulli_with_a_parameter_probability():
    """One switch for all rows, ``g ~ Bernoulli(q)`` with q sampled: the density is
    logaddexp(log(1 - q) + sum N(y | 0, 1), log q + sum N(y | mu, 1)) (compared
    between two points: the priors' constant summands are dropped), and its
    gradient matches finite differences."""
    y = np.array([0.3, 1.9, 2.4, 1.1])
    m = ld.Model()
    q = m.param("q", ld.Beta(2, 2))
    mu = m.param("mu", ld.Normal(0, 3))
    g = m.param("g", ld.Bernoulli(q))
    m.observe("y", ld.Normal(g * mu, 1.0), y)
    d = m.compile()

    def expected(q, mu):
        return (np.logaddexp(np.log1p(-q) + stats.norm.logpdf(y).sum(), np.log(q) + stats.norm.logpdf(y, mu).sum())
                + stats.beta(2, 2).logpdf(q) + np.log(q * (1 - q)) + stats.norm(0, 3).logpdf(mu))
    theta = d.unconstrain({"q": 0.3, "mu": 1.5})
    lp, grad = d.log_density_gradient(theta)
    other = d.log_density(d.unconstrain({"q": 0.8, "mu": -0.4}))
    assert lp - other == pytest.approx(expected(0.3, 1.5) - expected(0.8, -0.4), rel=1e-10)
    h = 1e-6
    for j, step in enumerate(np.eye(d.dim) * h):
        assert grad[j] == pytest.approx((d.log_density(theta + step) - d.log_density(theta - step)) / (2 * h),
                                        rel=1e-6)


# ----- a label per observation ------------------------------------------------

RNG = np.random.default_rng(0)
Y = np.concatenate([RNG.normal(-2.0, 1.0, 30), RNG.normal(2.0, 1.0, 20)])


def two_normals(labels):
    """A two-component Normal mixture: latent Bernoulli labels, or ld.Mixture."""
    m = ld.Model()
    w = m.param("w", ld.Beta(2, 2))
    mu = m.param("mu", ld.Normal(0, 5), shape=2, constraint=ld.ordered)
    s = m.param("sigma", ld.HalfNormal(2))
    if labels:
        z = m.param("z", ld.Bernoulli(w), shape=len(Y))
        m.observe("y", ld.Normal(mu[0] + z * (mu[1] - mu[0]), s), Y)
    else:
        m.observe("y", ld.Mixture([1 - w, w], [ld.Normal(mu[0], s), ld.Normal(mu[1], s)]), Y)
    return m


@pytest.fixture(scope="module")
def mixtures():
    return two_normals(True).compile(), two_normals(False).compile()


def test_bernoulli_labels_give_the_mixture_density(mixtures):
    labels, mixture = mixtures
    for point in [{"w": 0.4, "mu": np.array([-1.5, 2.5]), "sigma": 1.3},
                  {"w": 0.01, "mu": np.array([0.0, 9.0]), "sigma": 0.2}]:
        a, b = labels.unconstrain(point), mixture.unconstrain(point)
        lp_a, g_a = labels.log_density_gradient(a)
        lp_b, g_b = mixture.log_density_gradient(b)
        assert lp_a == pytest.approx(lp_b, rel=1e-10)
        np.testing.assert_allclose(g_a, g_b, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(labels.pointwise_log_likelihood(a)["y"],
                                   mixture.pointwise_log_likelihood(b)["y"], rtol=1e-10)


@pytest.mark.slow
def test_bernoulli_labels_give_the_mixture_posterior(mixtures):
    """Same posterior means (within Monte Carlo error), and the recovered labels'
    frequencies against the exact responsibilities averaged over the draws."""
    labels, mixture = mixtures
    a = ld.nuts(labels, draws=500, tune=500, chains=2, seed=1, progress=False).posterior
    b = ld.nuts(mixture, draws=500, tune=500, chains=2, seed=1, progress=False).posterior
    for name in ("w", "mu", "sigma"):
        x, y = a[name].values.reshape(1000, -1), b[name].values.reshape(1000, -1)
        se = np.sqrt(x.var(0) / 100 + y.var(0) / 100)  # an effective sample size of 100 at least
        assert np.all(np.abs(x.mean(0) - y.mean(0)) < 4 * se), name
    z = a["z"].values.reshape(1000, -1)
    w, mu, s = (a[k].values.reshape(1000, -1) for k in ("w", "mu", "sigma"))
    one = np.log(w) + stats.norm.logpdf(Y, mu[:, 1:], s)
    zero = np.log1p(-w) + stats.norm.logpdf(Y, mu[:, :1], s)
    responsibility = np.exp(one - np.logaddexp(one, zero)).mean(0)
    assert np.all(np.abs(z.mean(0) - responsibility) < 4 * np.sqrt(0.25 / 1000))


def test_categorical_labels_with_a_simplex_prior():
    """``ld.Categorical(p)`` labels per row, p a simplex parameter: the density is
    sum_i logsumexp_k (log p_k + log N(y_i | mu_k, 1)) at a fixed point."""
    y = np.array([-3.0, 0.1, 2.9, 3.2])
    m = ld.Model()
    p = m.param("p", ld.Dirichlet(np.ones(3)))
    mu = m.param("mu", ld.Normal(0, 5), shape=3, constraint=ld.ordered)
    z = m.param("z", ld.Categorical(p), shape=4)
    loc = ld.where(z < 0.5, mu[0], ld.where(z < 1.5, mu[1], mu[2]))
    m.observe("y", ld.Normal(loc, 1.0), y)
    d = m.compile()
    point = {"p": np.array([0.2, 0.3, 0.5]), "mu": np.array([-3.0, 0.0, 3.0])}
    theta = d.unconstrain(point)
    mixture = sp.logsumexp(np.log(point["p"]) + stats.norm.logpdf(y[:, None], point["mu"], 1.0), axis=1)
    assert d.pointwise_log_likelihood(theta)["y"] == pytest.approx(mixture, rel=1e-10)


def test_categorical_labels_pick_components_by_index():
    """``mu[z]`` with z a vector of Categorical labels (PyMC's spelling) gives the
    density of the ld.where spelling, and a Categorical mixture's pointwise value."""
    y = np.array([-3.0, 0.1, 2.9, 3.2, 0.4])
    p = np.array([0.2, 0.3, 0.5])
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5), shape=3, constraint=ld.ordered)
    s = m.param("s", ld.HalfNormal(1))
    z = m.param("z", ld.Categorical(p), shape=5)
    m.observe("y", ld.Normal(mu[z], s), y)
    d = m.compile()
    point = {"mu": np.array([-3.0, 0.0, 3.0]), "s": 0.8}
    mixture = sp.logsumexp(np.log(p) + stats.norm.logpdf(y[:, None], point["mu"], 0.8), axis=1)
    assert d.pointwise_log_likelihood(d.unconstrain(point))["y"] == pytest.approx(mixture, rel=1e-10)


def test_an_index_by_a_continuous_parameter_is_still_refused():
    m = ld.Model()
    mu, k = m.param("mu", shape=3), m.param("k", shape=2)
    with pytest.raises(ModelError, match="must be an integer data array"):
        mu[k]


# ----- what cannot be summed out ---------------------------------------------


def test_infinite_support_is_refused():
    m = ld.Model()
    with pytest.raises(ModelError, match=r"'k'.*Poisson has an infinite support"):
        m.param("k", ld.Poisson(3.0))


def test_support_too_large_to_enumerate_is_refused():
    m = ld.Model()
    with pytest.raises(ModelError, match=r"'k'.*20001 values, more than 10000 evaluations per row"):
        m.param("k", ld.DiscreteUniform(0, 20000))


def test_support_depending_on_a_parameter_is_refused():
    m = ld.Model()
    n = m.param("n", ld.Exponential(0.1))
    with pytest.raises(ModelError, match=r"'k'.*bound.*depends on a parameter"):
        m.param("k", ld.DiscreteUniform(0, n))


def test_a_discrete_parameter_feeding_another_is_refused():
    m = ld.Model()
    a = m.param("a", ld.Bernoulli(0.5))
    m.param("b", ld.Bernoulli(0.2 + 0.5 * a))
    with pytest.raises(ModelError, match=r"reads discrete parameters 'a' and 'b'"):
        m.compile()


def test_labels_read_across_rows_are_refused():
    m = ld.Model()
    z = m.param("z", ld.Bernoulli(0.5), shape=3)
    m.observe("y", ld.Normal(ld.cumsum(z), 1.0), np.zeros(3))
    with pytest.raises(ModelError, match=r"'y' reads discrete parameter 'z' through Cumsum"):
        m.compile()


def test_too_many_copies_are_refused():
    m = ld.Model()
    s = m.param("s", ld.DiscreteUniform(0, 100))
    m.observe("y", ld.Normal(0.01 * s, 1.0), np.zeros(3))
    with pytest.raises(ModelError, match=r"'s'.*101 copies, more than 64"):
        m.compile()
