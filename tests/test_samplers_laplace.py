"""Laplace approximation against closed forms."""

import numpy as np
import pytest

from logdens import samplers
from logdens.samplers.laplace import hessian
from logdens.samplers.protocol import numba_entry
from test_samplers_targets import GammaTarget, correlated_gaussian


def test_hessian_of_a_gaussian_is_minus_the_precision():
    target, mean, cov = correlated_gaussian(rho=0.5, scales=(2.0, 0.5))
    h = hessian(numba_entry(target), mean + 0.3)
    np.testing.assert_allclose(h, -np.linalg.inv(cov), rtol=1e-6)


def test_laplace_of_a_gaussian_is_the_gaussian():
    target, mean, cov = correlated_gaussian(rho=0.8, scales=(1.0, 3.0))
    idata = samplers.laplace(target, draws=20000, seed=3)
    theta = idata.posterior["theta"].values.reshape(-1, 2)
    assert idata.posterior["theta"].shape == (1, 20000, 2)
    np.testing.assert_allclose(theta.mean(axis=0), mean, atol=4 * 3 / np.sqrt(20000))
    np.testing.assert_allclose(np.cov(theta.T), cov, rtol=0.05, atol=0.05)


def test_laplace_maps_draws_through_constrain():
    # On u = log x, Gamma(a, b): mode log(a/b), curvature -a: x = exp(N(log(a/b), 1/a)).
    a, b = 4.0, 2.0
    idata = samplers.laplace(GammaTarget(a, b), draws=20000, seed=4)
    x = idata.posterior["x"].values.ravel()
    assert (x > 0).all()
    assert np.log(x).mean() == pytest.approx(np.log(a / b), abs=0.02)
    assert np.log(x).var() == pytest.approx(1 / a, rel=0.05)


def test_not_negative_definite_raises():
    class Flat:
        """-x^2/2 in the first coordinate, flat in the second."""
        dim = 2

        def log_density_gradient(self, theta):
            return -0.5 * theta[0] ** 2, np.array([-theta[0], 0.0])

    with pytest.raises(samplers.HessianError, match="not negative definite"):
        samplers.laplace(Flat(), draws=10)


def test_laplace_output_works_with_loo():
    import arviz_stats
    from test_samplers_targets import EightSchools

    class FixedTau(EightSchools):
        """Eight schools with a proper mode: tau's prior made strongly informative."""

        def __init__(self):
            super().__init__()
            self._entry = self.numba_entry
            del self.numba_entry  # the external (Python) route

        def log_density_gradient(self, theta, propto=True, jacobian=True, out=None):
            f, fdata, idata = self._entry
            grad = np.zeros(self.dim)
            value = f(np.ascontiguousarray(theta), grad, fdata, idata)
            value -= 0.5 * (theta[1] - 1.0) ** 2 / 0.01
            grad[1] -= (theta[1] - 1.0) / 0.01
            return value, grad

    target = FixedTau()
    idata = samplers.laplace(target, draws=2000, seed=5)
    assert idata.log_likelihood["y"].shape == (1, 2000, 8)
    assert np.isfinite(arviz_stats.loo(idata).elpd)


class NaNGradient:
    """Standard normal whose gradient (not its value) is NaN where ``nan_at(theta)``."""

    dim = 2

    def __init__(self, nan_at):
        self.nan_at = nan_at

    def log_density_gradient(self, theta):
        grad = np.full(2, np.nan) if self.nan_at(theta) else -theta
        return -0.5 * float(theta @ theta), grad


def test_a_nan_gradient_in_the_hessian_is_an_error_that_says_where():
    """Issue 36 item 5: the central differences at the mode 0 read the NaN
    gradient at theta[0] = +h; the NaN Hessian passed the Cholesky test and
    every draw was NaN, without a word."""
    with pytest.raises(samplers.HessianError,
                       match=r"gradient is not finite at theta\[0\] \+ h = 1e-05"):
        samplers.laplace(NaNGradient(lambda t: t[0] > 0), draws=100)


def test_an_unconverged_mode_search_warns():
    """A NaN gradient near the mode: L-BFGS-B went to a NaN point that it
    called converged; those points are now rejected and the search stops
    short of the mode, which the Laplace approximation says."""
    with pytest.warns(samplers.SamplerWarning, match="mode search has not converged"):
        idata = samplers.laplace(NaNGradient(lambda t: np.all(np.abs(t) < 0.1)), draws=100)
    assert np.isfinite(idata.posterior["theta"].values).all()
    assert idata.posterior.attrs["optimizer_success"] == 0
