"""Negative binomial distribution, mean-dispersion parameterization.

    log p(x | mu, phi) = lgamma(x + phi) - lgamma(phi) - lgamma(x + 1)
                         + x log(mu / (mu + phi)) + phi log(phi / (mu + phi)),   x = 0, 1, 2, ...

Mean mu, variance mu + mu^2 / phi; as phi -> inf it tends to Poisson(mu).
Parameters: mu > 0, phi > 0. The kernels stay accurate up to phi ~ 1e12 and
beyond: lgamma(x + phi) - lgamma(phi) is ``log_rising_factorial(phi, x)``
and the two logs of ratios are written as -log1p(phi / mu) and
-log1p(mu / phi), so nothing of size log(phi) or phi is cancelled by hand.
scipy: ``scipy.stats.nbinom(n=phi, p=phi / (mu + phi))``;
Stan: ``neg_binomial_2_lpmf(x | mu, phi)``.
"""

import math

from .constraints import nonnegative_integer, positive
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from . import poisson
from .special import (
    SMALLEST_NORMAL, digamma_diff, log1p_ratio, log1pmx, log_rising_factorial)

_MAX_COUNT = 2.5e305  # lgamma(x + 1) and x log(x) overflow just above: treated as mass 0


@jitable
def outside(x, mu, phi, x_valid):
    """Invalid parameters, x above _MAX_COUNT, or (unless ``x_valid``) x off the
    nonnegative integers.

    Below the smallest normal float 1 / phi overflows and digamma_diff(phi, x)
    is inf, so the phi partial would be inf - inf: such phi are invalid.
    """
    if not (0.0 < mu < math.inf and SMALLEST_NORMAL <= phi < math.inf) or not (x <= _MAX_COUNT):
        return True
    return not (x_valid or (0.0 <= x and x == math.floor(x)))


@jitable
def logpdf(x, mu, phi):
    """Normalized log mass; ``-inf`` off the nonnegative integers or for invalid parameters."""
    if outside(x, mu, phi, False):
        return -math.inf
    # x log(mu / (mu + phi)) = -x log1p(phi / mu); phi log(phi / (mu + phi)) = -phi log1p(mu / phi)
    return (log_rising_factorial(phi, x) - math.lgamma(x + 1.0)
            - x * log1p_ratio(phi, mu) - phi * log1p_ratio(mu, phi))


@kernel
def count_summands(x, mu, phi, w, keep):
    """``(lp, d_mu, d_phi)`` of summands 0-2, the terms in x (all 0 at x = 0), as
    ``keep`` selects; w = phi / (mu + phi). Shared by the zero-inflated and
    hurdle forms, whose other summands differ."""
    lp = 0.0
    d_mu = 0.0
    d_phi = 0.0
    if keep[0]:
        lp -= math.lgamma(x + 1.0)
    if keep[1]:
        lp += log_rising_factorial(phi, x)
        d_phi += digamma_diff(phi, x)
    if keep[2]:
        # d/dmu -x log1p(phi/mu) = x phi / (mu (mu + phi)) = (x / mu) w;
        # d/dphi = -x / (mu + phi) (0 if mu + phi overflows, as it should).
        lp -= x * log1p_ratio(phi, mu)
        d_mu += x / mu * w
        d_phi -= x / (mu + phi)
    return lp, d_mu, d_phi


@kernel
def logpdf_grad(x, mu, phi, keep, x_valid=False):
    """``(lp, d_x = 0, d_mu, d_phi)``; see ``distributions.spec`` for ``keep`` and ``x_valid``."""
    if outside(x, mu, phi, x_valid):
        return -math.inf, 0.0, 0.0, 0.0
    # u = mu / (mu + phi) and w = phi / (mu + phi) = 1 - u, each from one
    # quotient that cannot overflow (mu + phi may).
    u = 1.0 / (1.0 + phi / mu)
    w = 1.0 / (1.0 + mu / phi)
    # The phi partial, summand by summand:
    #   lgamma(x + phi) - lgamma(phi)  -> digamma_diff(phi, x)          ~ x / phi
    #   -x log1p(phi / mu)             -> -x / (mu + phi)               ~ -x / phi
    #   -phi log1p(mu / phi)           -> log1pmx(-u) (derived below)   ~ -mu^2 / (2 phi^2)
    # Each is exact to rounding, even at phi = 1e12. The first two cancel: the
    # total is -((x - mu)^2 - x) / (2 phi^2) + O(phi^-3). Kept as separate
    # summands, it has an absolute error ~eps x / phi (~1e-27 at phi = 1e12).
    lp, d_mu, d_phi = count_summands(x, mu, phi, w, keep)
    if keep[3]:
        lp, d_mu, d_phi = dispersion_summand(mu, phi, u, w, lp, d_mu, d_phi)
    if lp == -math.inf:  # a summand overflowed (huge counts or parameters)
        return -math.inf, 0.0, 0.0, 0.0
    return lp, 0.0, d_mu, d_phi


@jitable
def dispersion_summand(mu, phi, u, w, lp, d_mu, d_phi):
    """Add -phi log1p(mu / phi) and its partials to ``(lp, d_mu, d_phi)``.

    d/dmu = -phi / (mu + phi) = -w. d/dphi = -log1p(mu/phi) + mu / (mu + phi):
    since 1 + mu/phi = 1 / (1 - u), this is log1p(-u) + u = log1pmx(-u), two
    O(mu/phi) terms whose difference is -u^2/2 + O(u^3) at large phi; log1pmx
    gives it to full relative accuracy. For u > 1/2 there is no cancellation
    and the value's log1p is reused.
    """
    log1p_mu_over_phi = log1p_ratio(mu, phi)
    lp -= phi * log1p_mu_over_phi
    d_mu -= w
    if u <= 0.5:
        d_phi += log1pmx(-u)
    else:
        d_phi += u - log1p_mu_over_phi
    return lp, d_mu, d_phi


@jitable
def log_rate_rvs(state, log_mu, phi):
    """log of a Gamma(phi, phi / mu) draw, the rate of the Poisson mixture that is
    NegativeBinomial(mu, phi); in logs, since for a tiny phi the gamma draw
    is below the smallest double."""
    return log_mu + random.log_gamma(state, phi) - math.log(phi)


@jitable
def rvs(state, mu, phi):
    """One draw of the gamma-Poisson mixture: Poisson(lambda), lambda ~ Gamma(phi, phi / mu)."""
    return poisson.rvs(state, math.exp(log_rate_rvs(state, math.log(mu), phi)))


SPEC = Spec(
    name="NegativeBinomial",
    params=(Param("mu", positive), Param("phi", positive)),
    support=nonnegative_integer,
    summands=(
        Summand(("x",), "-lgamma(x + 1)"),
        Summand(("x", "phi"), "lgamma(x + phi) - lgamma(phi)"),
        Summand(("x", "mu", "phi"), "x log(mu / (mu + phi))"),
        Summand(("mu", "phi"), "phi log(phi / (mu + phi))"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class NegativeBinomial(Distribution):
    __doc__ = __doc__
    spec = SPEC
