"""ZeroSumNormal: a sum-to-zero vector, normal on its subspace (PyMC's).

References: scipy's normal density of the entries plus the one scale term and
log(2 pi) / 2 that n - 1 free entries do not have (exact: 1e-13 relative);
partials against central differences of that formula (h = 1e-6 relative,
asked 1e-7); draws against the marginal variance sigma^2 (n - 1) / n.
"""

import numpy as np
import pytest
from scipy import stats

import logdens as ld
from logdens.distributions.frozen import InvalidArgumentError


def reference(x, sigma):
    return stats.norm(0.0, sigma).logpdf(x).sum() + np.log(sigma) + 0.5 * np.log(2 * np.pi)


def zero_sum(n, seed, scale=1.0):
    x = np.random.default_rng(seed).normal(size=n) * scale
    return x - x.mean()


@pytest.mark.parametrize("n, sigma", [(2, 1.0), (5, 0.3), (12, 4.0), (6, 1e-8), (6, 1e9)])
def test_logpdf_and_partials(n, sigma):
    x = zero_sum(n, n, scale=sigma)
    dist = ld.ZeroSumNormal(sigma)
    assert dist.logpdf(x) == pytest.approx(reference(x, sigma), rel=1e-13)
    lp, grads = dist.logpdf_grad(x)
    assert lp == pytest.approx(reference(x, sigma), rel=1e-13)
    np.testing.assert_allclose(grads["x"], -x / sigma ** 2, rtol=1e-14)
    h = 1e-6 * sigma
    fd = (reference(x, sigma + h) - reference(x, sigma - h)) / (2 * h)
    assert grads["sigma"] == pytest.approx(fd, rel=1e-7, abs=1e-7 / sigma)


def test_support_and_invalid_arguments():
    """Off the subspace (beyond rounding) the density is -inf; one entry is the
    point 0; a bad sigma or n raises naming it."""
    x = zero_sum(4, 0)
    assert ld.ZeroSumNormal(1.0).logpdf(x + 1e-3) == -np.inf
    assert np.isfinite(ld.ZeroSumNormal(1.0).logpdf(x + 1e-15))  # rounding of a transform
    assert ld.ZeroSumNormal(2.0).logpdf(np.zeros(1)) == 0.0
    with pytest.raises(InvalidArgumentError, match=r"ZeroSumNormal: sigma=0.0, must be > 0"):
        ld.ZeroSumNormal(0.0)
    with pytest.raises(InvalidArgumentError, match=r"ZeroSumNormal: n=0, must be an integer >= 1"):
        ld.ZeroSumNormal(1.0, n=0)
    with pytest.raises(InvalidArgumentError, match="give the parameter shape=n"):
        ld.ZeroSumNormal(1.0).rvs(size=2)


def test_draws_sum_to_zero_with_the_marginal_variance():
    """20,000 draws of 5 entries: each sums to 0, each entry's variance is
    sigma^2 (n - 1) / n (standard error 1%, asked 4%) and entries correlate at
    -1 / (n - 1)."""
    draws = ld.ZeroSumNormal(2.0, n=5).rvs(size=20_000, seed=3)
    assert draws.shape == (20_000, 5)
    np.testing.assert_allclose(draws.sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(draws.var(axis=0), 4.0 * 4 / 5, rtol=0.04)
    np.testing.assert_allclose(np.corrcoef(draws.T)[0, 1:], -0.25, atol=0.03)


@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_hierarchical_effects_in_a_model(backend):
    """Effects ~ ZeroSumNormal(s), read through a group index: the parameter gets
    the sum-to-zero transform (n - 1 free entries), and the log density and
    gradient are the closed form's."""
    g = np.array([0, 1, 2, 3, 4, 0, 1, 2])
    y = np.random.default_rng(0).normal(size=g.size)
    m = ld.Model()
    s = m.param("s", ld.HalfNormal(1.0))
    a = m.param("a", ld.ZeroSumNormal(s), shape=5)
    m.observe("y", ld.Normal(a[m.data("g", g)], 1.0), y)
    density = m.compile(backend=backend)
    assert density.dim == 1 + 4
    theta = np.random.default_rng(1).normal(size=density.dim) * 0.5
    values = density.constrain(theta)
    assert abs(values["a"].sum()) < 1e-14
    want = (stats.halfnorm.logpdf(values["s"]) + reference(values["a"], values["s"])
            + stats.norm.logpdf(y, values["a"][g]).sum())
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(want, rel=1e-13)
    h, grad = 1e-6, density.log_density_gradient(theta)[1]
    fd = [(density.log_density(theta + h * e) - density.log_density(theta - h * e)) / (2 * h)
          for e in np.eye(density.dim)]
    np.testing.assert_allclose(grad, fd, rtol=1e-7, atol=1e-7)


def test_prior_draws_of_a_parameter():
    m = ld.Model()
    m.param("a", ld.ZeroSumNormal(1.5), shape=4)
    prior = ld.sample_prior_predictive(m, draws=200, seed=2)
    a = np.asarray(prior["prior"]["a"])
    assert a.shape[-1] == 4
    np.testing.assert_allclose(a.sum(axis=-1), 0.0, atol=1e-12)
