"""Log densities the sampler tests run on, written by hand as numba entries.

Each target is a numba function with the model-entry signature
``float64(theta, grad, fdata, idata)`` (cached: it lives in a real module) and
a small Python class implementing the LogDensity protocol around it.  The
tests at the bottom check every gradient against central differences.
"""

import math

import numpy as np
import pytest
from numba import cfunc, njit

from logdens.samplers.protocol import ENTRY_SIGNATURE, NumbaEntry

LOG_2PI = math.log(2.0 * math.pi)

# Eight schools (Rubin 1981).
SCHOOLS_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


@njit(ENTRY_SIGNATURE, cache=True)
def std_normal(theta, grad, fdata, idata):
    """Standard normal in ``len(theta)`` dimensions."""
    lp = 0.0
    for i in range(theta.shape[0]):
        lp -= 0.5 * theta[i] * theta[i]
        grad[i] = -theta[i]
    return lp


@njit(ENTRY_SIGNATURE, cache=True)
def gaussian(theta, grad, fdata, idata):
    """N(mean, P^{-1}); fdata = [mean (d), precision P row-major (d*d)]."""
    d = theta.shape[0]
    lp = 0.0
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += fdata[d + i * d + j] * (theta[j] - fdata[j])
        grad[i] = -s
        lp -= 0.5 * (theta[i] - fdata[i]) * s
    return lp


@njit(ENTRY_SIGNATURE, cache=True)
def normal_normal(theta, grad, fdata, idata):
    """y_i ~ N(mu, sigma), mu ~ N(mu0, tau0); fdata = [sigma, mu0, tau0, y...]."""
    mu = theta[0]
    sigma, mu0, tau0 = fdata[0], fdata[1], fdata[2]
    z = (mu - mu0) / tau0
    lp = -0.5 * z * z
    g = -z / tau0
    for i in range(3, fdata.shape[0]):
        r = (fdata[i] - mu) / sigma
        lp -= 0.5 * r * r
        g += r / sigma
    grad[0] = g
    return lp


@njit(ENTRY_SIGNATURE, cache=True)
def eight_schools(theta, grad, fdata, idata):
    """Non-centered eight schools on (mu, log tau, z_1..z_8).

    mu ~ N(0, 5), tau ~ HalfCauchy(5), z_j ~ N(0, 1),
    y_j ~ N(mu + tau z_j, sigma_j); fdata = [y (8), sigma (8)].
    """
    mu, log_tau = theta[0], theta[1]
    tau = math.exp(log_tau)
    lp = -0.5 * (mu / 5.0) ** 2 - math.log1p((tau / 5.0) ** 2) + log_tau
    g_mu = -mu / 25.0
    g_tau = -2.0 * tau / (25.0 + tau * tau)
    for j in range(8):
        z = theta[2 + j]
        r = (fdata[j] - mu - tau * z) / fdata[8 + j]
        lp -= 0.5 * z * z + 0.5 * r * r
        d = r / fdata[8 + j]
        g_mu += d
        g_tau += d * z
        grad[2 + j] = -z + d * tau
    grad[0] = g_mu
    grad[1] = g_tau * tau + 1.0
    return lp


@njit(ENTRY_SIGNATURE, cache=True)
def funnel(theta, grad, fdata, idata):
    """Neal's funnel: v ~ N(0, 3), x_i ~ N(0, exp(v / 2)); theta = (v, x...)."""
    v = theta[0]
    n = theta.shape[0] - 1
    ev = math.exp(-v)
    lp = -v * v / 18.0 - 0.5 * n * v
    g_v = -v / 9.0 - 0.5 * n
    for i in range(1, n + 1):
        x = theta[i]
        lp -= 0.5 * x * x * ev
        g_v += 0.5 * x * x * ev
        grad[i] = -x * ev
    grad[0] = g_v
    return lp


@njit(ENTRY_SIGNATURE, cache=True)
def half_line(theta, grad, fdata, idata):
    """Standard normal truncated to theta[0] > 0 (returns -inf outside)."""
    if theta[0] <= 0.0:
        return -np.inf
    grad[0] = -theta[0]
    return -0.5 * theta[0] ** 2


@njit(ENTRY_SIGNATURE, cache=True)
def faulty_normal(theta, grad, fdata, idata):
    """Standard normal that returns +inf for theta[0] > 1 and NaN for theta[0] < -1:
    a faulty density whose non-finite values must act as -inf (truncation)."""
    if theta[0] > 1.0:
        return np.inf
    if theta[0] < -1.0:
        return np.nan
    return std_normal(theta, grad, fdata, idata)


@njit(ENTRY_SIGNATURE, cache=True)
def flat(theta, grad, fdata, idata):
    """A flat (improper) density: trajectories never turn."""
    for i in range(theta.shape[0]):
        grad[i] = 0.0
    return 0.0


_FIRST_CLASS = {}


def first_class(function):
    """The entry as a cached ``cfunc``: numba types it as ENTRY_TYPE.

    Passing a dispatcher to a lazily compiled sampler function compiles that
    function again per model and never hits the disk cache; a cfunc is typed
    as the first-class function type, so the sampler internals compile once.
    """
    if function not in _FIRST_CLASS:
        _FIRST_CLASS[function] = cfunc(ENTRY_SIGNATURE, cache=True)(function.py_func)
    return _FIRST_CLASS[function]


@njit(ENTRY_SIGNATURE, cache=True)
def log_gamma(theta, grad, fdata, idata):
    """x ~ Gamma(a, rate b) on u = log x (Jacobian included); fdata = [a, b]."""
    a, b = fdata[0], fdata[1]
    ex = math.exp(theta[0])
    grad[0] = a - b * ex
    return a * theta[0] - b * ex


class NumbaTarget:
    """A LogDensity around a numba entry (the protocol's required part)."""

    def __init__(self, function, dim, fdata=(0.0,), idata=(0,)):
        self.dim = int(dim)
        self.numba_entry = NumbaEntry(function, np.asarray(fdata, dtype=np.float64),
                                      np.asarray(idata, dtype=np.int64))

    def log_density_gradient(self, theta, propto=True, jacobian=True, out=None):
        grad = np.zeros(self.dim) if out is None else out
        f, fdata, idata = self.numba_entry
        value = f(np.ascontiguousarray(theta, dtype=np.float64), grad, fdata, idata)
        return value, grad


class EightSchools(NumbaTarget):
    """Eight schools with the optional protocol methods (names, constrain, ...)."""

    def __init__(self):
        super().__init__(eight_schools, 10, np.concatenate([SCHOOLS_Y, SCHOOLS_SIGMA]))

    def param_unc_names(self):
        return ["mu", "log_tau"] + [f"z[{j}]" for j in range(8)]

    def constrain(self, theta):
        mu, tau = theta[0], math.exp(theta[1])
        return {"mu": np.array(mu), "tau": np.array(tau), "z": theta[2:].copy(),
                "theta": mu + tau * theta[2:]}

    def pointwise_log_likelihood(self, theta):
        loc = theta[0] + math.exp(theta[1]) * theta[2:]
        r = (SCHOOLS_Y - loc) / SCHOOLS_SIGMA
        return {"y": -0.5 * r * r - np.log(SCHOOLS_SIGMA) - 0.5 * LOG_2PI}

    def observed_data(self):
        return {"y": SCHOOLS_Y.copy()}

    def unconstrain(self, values):
        return np.concatenate([[values["mu"], math.log(values["tau"])], values["z"]])


class GammaTarget(NumbaTarget):
    """Gamma(a, b) sampled on the log scale, reported as ``x``."""

    def __init__(self, a=3.0, b=2.0):
        super().__init__(log_gamma, 1, [a, b])

    def constrain(self, theta):
        return {"x": np.array(math.exp(theta[0]))}


def correlated_gaussian(rho=0.9, scales=(1.0, 3.0), mean=(1.0, -2.0)):
    """2-d Gaussian target and its covariance."""
    s = np.asarray(scales)
    cov = np.array([[1.0, rho], [rho, 1.0]]) * np.outer(s, s)
    fdata = np.concatenate([np.asarray(mean, float), np.linalg.inv(cov).ravel()])
    return NumbaTarget(gaussian, 2, fdata), np.asarray(mean, float), cov


def normal_normal_target(y, sigma=2.0, mu0=1.0, tau0=3.0):
    """Conjugate target and its posterior mean and standard deviation."""
    y = np.asarray(y, float)
    prec = 1.0 / tau0**2 + y.size / sigma**2
    mean = (mu0 / tau0**2 + y.sum() / sigma**2) / prec
    fdata = np.concatenate([[sigma, mu0, tau0], y])
    return NumbaTarget(normal_normal, 1, fdata), mean, 1.0 / math.sqrt(prec)


class PythonGaussian:
    """External log density: pure Python, no numba entry."""

    def __init__(self, mean, cov):
        self.dim = len(mean)
        self.mean = np.asarray(mean, float)
        self.prec = np.linalg.inv(cov)
        self.calls = 0

    def log_density_gradient(self, theta):
        self.calls += 1
        r = theta - self.mean
        g = -self.prec @ r
        return 0.5 * float(r @ g), g


def all_targets():
    rng = np.random.default_rng(1)
    return {
        "std_normal": NumbaTarget(std_normal, 5),
        "gaussian": correlated_gaussian()[0],
        "normal_normal": normal_normal_target(rng.normal(size=7))[0],
        "eight_schools": EightSchools(),
        "funnel": NumbaTarget(funnel, 10),
    }


@pytest.mark.parametrize("name", list(all_targets()))
def test_target_gradient_matches_central_differences(name):
    target = all_targets()[name]
    rng = np.random.default_rng(0)
    theta = rng.uniform(-1.5, 1.5, target.dim)
    _, grad = target.log_density_gradient(theta)
    for i in range(target.dim):
        h = 1e-6 * max(1.0, abs(theta[i]))
        e = np.zeros(target.dim)
        e[i] = h
        fd = (target.log_density_gradient(theta + e)[0]
              - target.log_density_gradient(theta - e)[0]) / (2 * h)
        assert grad[i] == pytest.approx(fd, rel=1e-6, abs=1e-7)
