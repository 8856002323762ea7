"""Parameters whose bounds are expressions of other parameters or data
(``logdens.bounds``): values against hand-written densities with the
Jacobian of the bounds, gradients against central differences, round trips
through ``constrain``/``unconstrain``, errors, prior draws and posteriors.

Tolerances: the compiled value is the hand density's to 1e-12 (the same
formulas in another order); central differences with h = 1e-6 on log
densities of size about 10 carry an error near 1e-8 (truncation h^2 f''' and
rounding 1e-16 / h), so gradients are compared at 1e-6.
"""

import math

import numpy as np
import pytest
from scipy import special as sp
from scipy import stats

import logdens as ld
from logdens.samplers.diagnostics import bulk_ess

Y = np.array([0.1, 0.4, 0.3, 0.9])


def garch_like(backend="python"):
    """alpha1 in (0, 1), beta1 in (0, 1 - alpha1): GARCH(1,1)'s stationarity."""
    m = ld.Model()
    a = m.param("alpha1", ld.Uniform(0, 1))
    b = m.param("beta1", ld.Uniform(0, 1 - a))
    m.observe("y", ld.Normal(a + b, 0.5), Y)
    return m, m.compile(backend=backend)


def central_differences(f, theta, h=1e-6):
    return np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(len(theta))])


def test_value_is_the_hand_density_with_the_bounds_jacobian():
    _, lp = garch_like()

    def hand(theta, jacobian=True):
        a = sp.expit(theta[0])
        s = sp.expit(theta[1])
        b = (1 - a) * s
        value = (stats.uniform(0, 1).logpdf(a) + stats.uniform(0, 1 - a).logpdf(b)
                 + stats.norm(a + b, 0.5).logpdf(Y).sum())
        log_j = np.log(a * (1 - a)) + np.log(s * (1 - s)) + np.log(1 - a)
        return value + (log_j if jacobian else 0.0)

    for theta in ([0.3, -0.2], [-4.0, 3.0], [5.0, -6.0]):
        theta = np.array(theta)
        assert lp.log_density(theta, propto=False) == pytest.approx(hand(theta), abs=1e-12)
        assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(hand(theta, False), abs=1e-12)
        for jacobian in (True, False):
            _, grad = lp.log_density_gradient(theta, jacobian=jacobian)
            fd = central_differences(lambda t: lp.log_density(t, jacobian=jacobian), theta)
            np.testing.assert_allclose(grad, fd, atol=1e-6)


def test_log_jacobian_is_that_of_the_constrain_map():
    """log|det J| of theta -> (alpha1, beta1) by central differences (h = 1e-6:
    entries of size 0.2 to an absolute 1e-10, so log|det| to about 1e-8) against
    the density's Jacobian part, with the Jacobian minus without it."""
    _, lp = garch_like()
    for theta in ([0.3, -0.2], [-2.0, 1.5]):
        theta = np.array(theta)
        def point(t):
            return np.array([float(v) for v in lp.constrain(t).values()])
        jac = np.column_stack([(point(theta + 1e-6 * e) - point(theta - 1e-6 * e)) / 2e-6 for e in np.eye(2)])
        log_det = np.log(abs(np.linalg.det(jac)))
        assert lp.log_density(theta) - lp.log_density(theta, jacobian=False) == pytest.approx(log_det, abs=1e-7)


def test_compiled_kernel_equals_the_python_twin():
    _, twin = garch_like()
    _, cpu = garch_like("cpu")
    theta = np.array([0.7, -1.3])
    for jacobian in (True, False):
        v0, g0 = twin.log_density_gradient(theta, jacobian=jacobian)
        v1, g1 = cpu.log_density_gradient(theta, jacobian=jacobian)
        assert v1 == pytest.approx(v0, abs=1e-12)
        np.testing.assert_allclose(g1, g0, atol=1e-12)
        np.testing.assert_allclose(cpu.gradient(theta, jacobian=jacobian), g0, atol=1e-12)


def test_constrain_and_unconstrain_round_trip():
    _, lp = garch_like()
    theta = np.array([0.3, -0.2])
    values = lp.constrain(theta)
    assert values["alpha1"] == pytest.approx(sp.expit(0.3))
    assert values["beta1"] == pytest.approx((1 - sp.expit(0.3)) * sp.expit(-0.2))
    np.testing.assert_allclose(lp.unconstrain(values), theta, atol=1e-13)
    batch = lp.constrain_batch(np.array([theta, 2 * theta]))
    assert batch["beta1"].shape == (2,) and batch["beta1"][0] == pytest.approx(values["beta1"])
    with pytest.raises(ValueError, match=r"parameter beta1 = 0.6 is outside its bounds \(0.0, 0.5\)"):
        lp.unconstrain({"alpha1": 0.5, "beta1": 0.6})


def vector_model(backend="python"):
    """A vector between a data vector and a parameter, read gathered, and a chain of
    bounds (c's lower bound is the bounded b[0]); one-sided bounds both ways."""
    m = ld.Model()
    lo = m.data("lo", np.array([-1.0, 0.0, 0.5]))
    top = m.param("top", ld.Normal(2.0, 0.5))
    b = m.param("b", ld.Normal(0, 1), shape=3, constraint=ld.interval(lo, top))
    c = m.param("c", ld.Normal(0, 2), constraint=ld.greater_than(b[0]))
    d = m.param("d", ld.Normal(0, 2), constraint=ld.less_than(2 * c))
    group = np.array([0, 2, 1, 1, 2])
    m.observe("y", ld.Normal(b[group] + c - 0.1 * d, 1.0), np.array([0.2, 1.0, 0.4, 0.6, 1.4]))
    return m, m.compile(backend=backend)


def test_vector_bounds_chains_and_one_sided_bounds():
    _, lp = vector_model()
    theta = np.array([2.4, -0.5, 0.2, 1.1, -0.3, 0.8])
    values = lp.constrain(theta)
    top = values["top"]
    s = sp.expit(theta[1:4])
    np.testing.assert_allclose(values["b"], [-1.0, 0.0, 0.5] + (top - np.array([-1.0, 0.0, 0.5])) * s)
    assert values["c"] == pytest.approx(values["b"][0] + math.exp(-0.3))
    assert values["d"] == pytest.approx(2 * values["c"] - math.exp(0.8))
    np.testing.assert_allclose(lp.unconstrain(values), theta, atol=1e-12)

    def hand(t):
        v = lp.constrain(t)
        s = sp.expit(t[1:4])
        value = (stats.norm(2.0, 0.5).logpdf(v["top"]) + stats.norm(0, 1).logpdf(v["b"]).sum()
                 + stats.norm(0, 2).logpdf(v["c"]) + stats.norm(0, 2).logpdf(v["d"])
                 + stats.norm(v["b"][[0, 2, 1, 1, 2]] + v["c"] - 0.1 * v["d"], 1.0).logpdf(
                     [0.2, 1.0, 0.4, 0.6, 1.4]).sum())
        log_j = np.sum(np.log(s * (1 - s)) + np.log(v["top"] - np.array([-1.0, 0.0, 0.5]))) + t[4] + t[5]
        return value + log_j

    assert lp.log_density(theta, propto=False) == pytest.approx(hand(theta), abs=1e-12)
    _, grad = lp.log_density_gradient(theta)
    np.testing.assert_allclose(grad, central_differences(lp.log_density, theta), atol=1e-6)
    with pytest.raises(ValueError, match=r"parameter b\[2\] = 0.4 is outside its bounds \(0.5, "):
        lp.unconstrain({**values, "b": np.array([0.0, 0.5, 0.4])})


def test_empty_interval_gives_minus_infinity_with_or_without_the_jacobian():
    m = ld.Model()
    lo = m.param("lo", ld.Normal(0, 1))
    hi = m.param("hi", ld.Normal(0, 1))
    m.param("x", constraint=ld.interval(lo, hi))
    lp = m.compile(backend="python")
    assert np.isfinite(lp.log_density(np.array([-1.0, 1.0, 0.0])))
    for jacobian in (True, False):
        assert lp.log_density(np.array([1.0, -1.0, 0.0]), jacobian=jacobian) == -math.inf
        assert lp.log_density_gradient(np.array([1.0, -1.0, 0.0]), jacobian=jacobian)[0] == -math.inf


def test_set_data_moves_a_data_bound():
    m = ld.Model()
    hi = m.data("hi", np.array(2.0))
    m.param("x", ld.Uniform(0, hi))
    lp = m.compile(backend="python")
    theta = np.array([0.0])
    assert lp.constrain(theta)["x"] == pytest.approx(1.0)
    lp.set_data(hi=np.array(4.0))
    assert lp.constrain(theta)["x"] == pytest.approx(2.0)
    assert lp.log_density(theta, propto=False) == pytest.approx(math.log(0.25))  # Uniform(0, 4) at 2, log|J| 0


def test_bound_errors():
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=2)
    with pytest.raises(ld.ModelError, match=r"bound a has shape \(2,\), which does not broadcast to the "
                                            r"parameter's shape \(3,\)"):
        m.param("x", shape=3, constraint=ld.greater_than(a))
    other = ld.Model().param("o", ld.Normal(0, 1))
    with pytest.raises(ld.ModelError, match="belongs to another model"):
        m.param("y", constraint=ld.less_than(other))


def test_prior_draws_respect_the_bounds():
    m, _ = garch_like()
    tree = ld.sample_prior_predictive(m, draws=4000, seed=3)
    a, b = (tree.prior[k].values[0] for k in ("alpha1", "beta1"))
    assert np.all((b > 0) & (b < 1 - a))
    assert abs(b.mean() - 0.25) < 5 * b.std() / math.sqrt(4000)  # E[(1 - a) / 2]
    m2 = ld.Model()
    a = m2.param("a", ld.Uniform(0, 1))
    m2.param("b", ld.Normal(0, 1), constraint=ld.interval(0, 1 - a))
    with pytest.raises(ld.ModelError, match="the prior's mass inside it depends on other parameters"):
        ld.sample_prior_predictive(m2, draws=10, seed=0)


def assert_mean(draws, truth):
    """Within 4 Monte Carlo standard errors (bulk ESS)."""
    mcse = draws.std() / math.sqrt(bulk_ess(draws))
    assert abs(draws.mean() - truth) < 4 * mcse, (draws.mean(), truth, mcse)


@pytest.mark.slow
def test_nuts_on_a_triangle_and_shifted_exponentials():
    """Flat on the triangle 0 < b < 1 - a: E[a] = E[b] = 1/3. x - mu and mu - z are
    Exponential(1) given mu ~ Normal(0, 1): E[x] = 1, E[z] = -1."""
    m = ld.Model()
    a = m.param("a", constraint=ld.interval(0, 1))
    m.param("b", constraint=ld.interval(0, 1 - a))
    mu = m.param("mu", ld.Normal(0, 1))
    x = m.param("x", constraint=ld.greater_than(mu))
    z = m.param("z", constraint=ld.less_than(mu))
    m.potential("shifts", -(x - mu) - (mu - z))
    post = ld.nuts(m, draws=1000, tune=500, chains=2, seed=1, progress=False).posterior
    for name, truth in (("a", 1 / 3), ("b", 1 / 3), ("x", 1.0), ("z", -1.0)):
        assert_mean(post[name].values, truth)
    assert np.all(post["b"].values < 1 - post["a"].values)
