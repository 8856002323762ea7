"""Thousands of random heavy-tailed points per model: nothing raises, nothing is NaN,
and a finite log density comes with a finite gradient."""

import numpy as np
import pytest

import logdens as ld
from test_density import hierarchical_model, regression_model

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools():
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5))
    tau = m.param("tau", ld.HalfCauchy(5))
    theta = m.param("theta", ld.Normal(mu, tau), shape=8)  # centered: a prior with parameter arguments
    m.observe("y", ld.Normal(theta, SIGMA), Y)
    return m


def mixture():
    """Two-component Gaussian mixture with ordered locations, written with logaddexp."""
    rng = np.random.default_rng(3)
    y = np.concatenate([rng.normal(-2, 1, 40), rng.normal(3, 1, 60)])
    m = ld.Model()
    loc = m.param("loc", ld.Normal(0, 10), shape=2, constraint=ld.ordered)
    scale = m.param("scale", ld.HalfNormal(2), shape=2)
    w = m.param("w", ld.Beta(2, 2))
    y_ = m.data("y", y)
    k0, k1 = m.data("k0", np.zeros(100, dtype=int)), m.data("k1", np.ones(100, dtype=int))

    def component(k, log_weight):
        z = (y_ - loc[k]) / scale[k]
        return log_weight - 0.5 * z * z - ld.log(scale[k])
    m.potential("mix", ld.sum(ld.logaddexp(component(k0, ld.log(w)), component(k1, ld.log1p(-w)))))
    return m


def potential_model():
    m = ld.Model()
    x = m.param("x", shape=50)
    rho = ld.sum(ld.exp(-3.0 * (x + 1.0)))
    m.potential("F", -(rho ** 2 + rho ** 3 + rho ** 4 / 4))
    return m


@pytest.mark.slow
# hierarchical_model: 2 points with lp near -1e307 and a gradient beyond the
# largest float; eight_schools: 3 with tau < 1e-100, where the Normal's partial
# in tau overflows (see test_transform_stability): both need the engine's guard.
@pytest.mark.parametrize("build", [hierarchical_model, regression_model, eight_schools, mixture, potential_model])
def test_heavy_tailed_points(build):
    density = build().compile()
    rng = np.random.default_rng(0)
    thetas = rng.standard_cauchy(size=(3000, density.dim)) * rng.choice([0.1, 1.0, 10.0], size=(3000, 1))
    lps, grads = density.log_density_gradient_batch(thetas)
    assert not np.any(np.isnan(lps))
    finite = np.isfinite(lps)
    assert np.mean(finite) > 0.01  # the test must exercise finite values too
    for lp, theta in zip(lps[:200], thetas[:200]):
        assert not np.isnan(density.log_density(theta))
        assert not np.isnan(density.log_density(theta, propto=False))
    assert np.all(np.isfinite(grads[finite])), "a non-finite gradient at a finite log density"
