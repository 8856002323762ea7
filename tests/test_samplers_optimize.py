"""find_map against closed forms."""

import math

import numpy as np
import pytest

from logdens import samplers
from test_samplers_targets import (GammaTarget, PythonGaussian, correlated_gaussian,
                                   normal_normal_target)


def test_gaussian_mode_is_the_mean():
    target, mean, _ = correlated_gaussian(rho=0.9, scales=(1.0, 30.0))
    fit = samplers.find_map(target, seed=1)
    assert fit.success
    np.testing.assert_allclose(fit.theta, mean, atol=1e-6)
    assert fit.log_density == pytest.approx(0.0, abs=1e-10)
    np.testing.assert_allclose(fit.params["theta"], mean, atol=1e-6)


def test_conjugate_mode_is_the_posterior_mean():
    y = np.random.default_rng(0).normal(3.0, 2.0, size=15)
    target, mean, _ = normal_normal_target(y)
    fit = samplers.find_map(target, init=[-5.0])
    assert fit.theta[0] == pytest.approx(mean, abs=1e-7)


def test_constrained_estimates_by_name():
    # Mode of log x for x ~ Gamma(a, b) (Jacobian included): x* = a / b.
    fit = samplers.find_map(GammaTarget(3.0, 2.0), num_starts=3, seed=2, jacobian=True)
    assert float(fit.params["x"]) == pytest.approx(1.5, rel=1e-7)
    assert fit.n_evals > 0 and isinstance(fit.message, str)


def test_external_log_density_and_multiple_starts():
    target = PythonGaussian([2.0, -1.0], np.array([[1.0, 0.3], [0.3, 0.5]]))
    fit = samplers.find_map(target, num_starts=4)
    np.testing.assert_allclose(fit.theta, [2.0, -1.0], atol=1e-6)


def test_bimodal_keeps_the_best_start():
    class TwoBumps:
        """Mixture of N(-3, 1) (weight 0.2) and N(3, 1) (weight 0.8)."""
        dim = 1

        def log_density_gradient(self, theta):
            x = theta[0]
            a, b = math.log(0.2) - 0.5 * (x + 3) ** 2, math.log(0.8) - 0.5 * (x - 3) ** 2
            m = max(a, b)
            lse = m + math.log(math.exp(a - m) + math.exp(b - m))
            wa, wb = math.exp(a - lse), math.exp(b - lse)
            return lse, np.array([-(x + 3) * wa - (x - 3) * wb])

    fit = samplers.find_map(TwoBumps(), init=[-3.0], num_starts=8, seed=0)
    assert fit.theta[0] == pytest.approx(3.0, abs=1e-3)


def test_map_of_a_compiled_model_with_and_without_the_jacobian():
    """x ~ Gamma(3, 2) on x > 0: the MAP is (a - 1) / b = 1; with the log
    transform's Jacobian the mode of log x gives x = a / b = 1.5."""
    import logdens as ld
    m = ld.Model()
    m.param("x", ld.Gamma(3.0, 2.0))
    density = m.compile()
    assert float(samplers.find_map(density).params["x"]) == pytest.approx(1.0, rel=1e-6)
    assert float(samplers.find_map(density, jacobian=True).params["x"]) == pytest.approx(1.5, rel=1e-6)


class Regression:
    """y ~ Normal(X beta, sigma) with flat priors on beta and log sigma (external)."""

    def __init__(self, X, y):
        self.X, self.y = X, y
        self.dim = X.shape[1] + 1

    def log_density_gradient(self, theta):
        beta, log_sigma = theta[:-1], theta[-1]
        r = self.y - self.X @ beta
        s2 = math.exp(2.0 * log_sigma)
        grad = np.empty(self.dim)
        grad[:-1] = self.X.T @ r / s2
        grad[-1] = -len(self.y) + (r @ r) / s2
        return -len(self.y) * log_sigma - 0.5 * (r @ r) / s2, grad


def earnings_regression():
    """Log earnings on height and sex, 1192 rows (the size of the earnings data)."""
    rng = np.random.default_rng(1)
    n = 1192
    height = rng.normal(66.6, 3.8, n)
    male = (rng.uniform(size=n) < 0.4).astype(float)
    earn = -60000.0 + 1300.0 * height + 10000.0 * male + rng.normal(0.0, 19000.0, n)
    X = np.column_stack([np.ones(n), height, male])
    y = np.log(np.abs(earn) + 1000.0)
    return Regression(X, y), np.linalg.lstsq(X, y, rcond=None)[0]


@pytest.mark.parametrize("seed", [1, 3, 6])  # starts where L-BFGS-B says "ABNORMAL: "
def test_converged_regression_is_a_success_with_a_reason(seed):
    target, ols = earnings_regression()
    fit = samplers.find_map(target, seed=seed)
    np.testing.assert_allclose(fit.theta[:3], ols, rtol=1e-7)
    assert fit.success, fit.message
    assert fit.message and not fit.message.rstrip().endswith(":")


def test_unfinished_search_fails_and_says_why():
    target, _ = earnings_regression()
    fit = samplers.find_map(target, seed=1, max_iter=3)
    assert not fit.success
    assert fit.message.startswith("not converged") and "relative gradient" in fit.message


def test_a_nan_gradient_is_a_rejected_point_not_a_nan_mode():
    """Issue 36 item 5: a NaN gradient near the mode sent L-BFGS-B to a NaN
    point reported as converged; such a point is rejected, as one whose log
    density is not finite, and the search says it did not converge."""
    class NaNGradientNearTheMode:
        dim = 2

        def log_density_gradient(self, theta):
            grad = np.full(2, np.nan) if np.all(np.abs(theta) < 0.1) else -theta
            return -0.5 * float(theta @ theta), grad

    fit = samplers.find_map(NaNGradientNearTheMode())
    assert np.isfinite(fit.theta).all() and np.isfinite(fit.log_density)
    assert not fit.success and "not converged" in fit.message


def test_a_search_stalled_away_from_the_mode_is_not_a_success():
    """The maximum is on the edge of the support (theta[0] = 2): L-BFGS-B's
    line search stalls before it, and scipy called the step that made no
    progress convergence ("RELATIVE REDUCTION OF F"), far from any mode."""
    class MaximumOnTheEdge:
        dim = 2

        def log_density_gradient(self, theta):
            if theta[0] > 2.0:
                return -np.inf, np.zeros(2)
            r = theta - 3.0
            return -0.5 * float(r @ r), -r

    fit = samplers.find_map(MaximumOnTheEdge())
    assert not fit.success
    assert fit.message.startswith("not converged") and "relative gradient" in fit.message
