"""Negative binomial distribution with a log mean.

    log p(x | log_mu, phi) = lgamma(x + phi) - lgamma(phi) - lgamma(x + 1)
                             + x log(mu / (mu + phi)) + phi log(phi / (mu + phi)),
    mu = exp(log_mu)

Support: x = 0, 1, 2, ... Parameters: log_mu real, phi > 0 (mean mu, variance
mu + mu^2 / phi). With d = log_mu - log(phi) the logs of ratios are softplus
terms that never form exp(log_mu):

    log(mu / (mu + phi)) = -log1pexp(-d),   log(phi / (mu + phi)) = -log1pexp(d),

so the kernels are finite for every finite log_mu (+-800 included) and agree
with ``PoissonLog`` as phi -> inf (lgamma(x + phi) - lgamma(phi) is
``log_rising_factorial(phi, x)``).
scipy: ``scipy.stats.nbinom(n=phi, p=phi / (exp(log_mu) + phi))``;
Stan: ``neg_binomial_2_log_lpmf(x | log_mu, phi)``.
"""

import math

from . import vmath
from .constraints import nonnegative_integer, positive, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import poisson
from .negative_binomial import log_rate_rvs
from .special import (
    SMALLEST_NORMAL, digamma_diff, log1pexp, log1pmx, log_rising_factorial, logistic)

_MAX_COUNT = 2.5e305  # lgamma(x + 1) and x log(x) overflow just above: treated as mass 0


@jitable
def _outside(x, log_mu, phi, x_valid):
    """Invalid parameters, x above _MAX_COUNT, or (unless ``x_valid``) x off the
    nonnegative integers.

    phi below the smallest normal float is invalid: the phi partial would be
    inf - inf there (see negative_binomial).
    """
    if not (math.isfinite(log_mu) and SMALLEST_NORMAL <= phi < math.inf) or not (x <= _MAX_COUNT):
        return True
    return not (x_valid or (0.0 <= x and x == math.floor(x)))


@jitable
def logpdf(x, log_mu, phi):
    """Normalized log mass; ``-inf`` off the nonnegative integers or for invalid parameters."""
    if _outside(x, log_mu, phi, False):
        return -math.inf
    d = log_mu - vmath.log(phi)
    return (log_rising_factorial(phi, x) - math.lgamma(x + 1.0)
            - x * log1pexp(-d) - phi * log1pexp(d))


@kernel
def logpdf_grad(x, log_mu, phi, keep, x_valid=False):
    """``(lp, d_x = 0, d_log_mu, d_phi)``; see ``distributions.spec`` for ``keep`` and ``x_valid``."""
    if _outside(x, log_mu, phi, x_valid):
        return -math.inf, 0.0, 0.0, 0.0
    d = log_mu - vmath.log(phi)
    u = logistic(d)    # mu / (mu + phi)
    w = logistic(-d)   # phi / (mu + phi), not 1 - u: no cancellation for mu >> phi
    lp = 0.0
    d_log_mu = 0.0
    d_phi = 0.0
    if keep[0]:
        lp -= math.lgamma(x + 1.0)
    if keep[1]:
        lp += log_rising_factorial(phi, x)
        d_phi += digamma_diff(phi, x)
    if keep[2]:
        # d(-x log1pexp(-d)) = x sigmoid(-d) dd, with dd/dlog_mu = 1, dd/dphi = -1/phi.
        lp -= x * log1pexp(-d)
        d_log_mu += x * w
        d_phi -= x * w / phi
    if keep[3]:
        # d(-phi log1pexp(d))/dlog_mu = -phi sigmoid(d); d/dphi = -log1pexp(d) + u,
        # which is log1p(-u) + u = log1pmx(-u) (see negative_binomial): O(u^2)
        # from two O(u) terms when phi >> mu, so log1pmx where u <= 1/2.
        softplus = log1pexp(d)
        lp -= phi * softplus
        d_log_mu -= phi * u
        d_phi += log1pmx(-u) if u <= 0.5 else u - softplus
    if lp == -math.inf:  # a summand overflowed (huge counts or parameters)
        return -math.inf, 0.0, 0.0, 0.0
    return lp, 0.0, d_log_mu, d_phi


@jitable
def rvs(state, log_mu, phi):
    """One draw of the gamma-Poisson mixture (``negative_binomial.rvs``) at mu = exp(log_mu)."""
    return poisson.rvs(state, math.exp(log_rate_rvs(state, log_mu, phi)))


SPEC = Spec(
    name="NegativeBinomialLog",
    params=(Param("log_mu", real), Param("phi", positive)),
    support=nonnegative_integer,
    summands=(
        Summand(("x",), "-lgamma(x + 1)"),
        Summand(("x", "phi"), "lgamma(x + phi) - lgamma(phi)"),
        Summand(("x", "log_mu", "phi"), "-x log1pexp(log(phi) - log_mu)"),
        Summand(("log_mu", "phi"), "-phi log1pexp(log_mu - log(phi))"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class NegativeBinomialLog(Distribution):
    __doc__ = __doc__
    spec = SPEC
