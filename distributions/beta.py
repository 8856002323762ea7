"""Beta distribution.

    log p(x | a, b) = (a - 1) log(x) + (b - 1) log(1 - x) - lbeta(a, b),
    a = alpha, b = beta

Support: 0 < x < 1. The ends are excluded because the density there is
infinite for a < 1 (at 0) or b < 1 (at 1); the kernels return ``-inf`` at
x = 0 and x = 1 for all parameters. Parameters: alpha > 0, beta > 0.
scipy: ``scipy.stats.beta(a=alpha, b=beta)``; Stan: ``beta_lpdf(x | alpha, beta)``.

log(1 - x) is ``log1p(-x)``, exact for x near 0; near 1, 1 - x is exact. For
both shapes large the three summands cancel (at a = b = 1e4 each is about
1.4e4 and the density about 4); the full density then comes from Stirling's
series (``_large_shapes_log_density``) instead.
"""

import math

from . import vmath
from .constraints import interval, positive
from .frozen import Distribution
from .gamma import LARGE_SHAPE
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import logistic
from .special import LOG_SQRT_2PI, digamma_diff, lbeta, lgamma_stirling_diff, logmxp1


@jitable
def _valid(x, alpha, beta):
    return 0.0 < alpha < math.inf and 0.0 < beta < math.inf and 0.0 < x < 1.0


@jitable
def _large_shapes(alpha, beta):
    """Whether the Stirling form applies: both shapes large, a + b finite."""
    return alpha >= LARGE_SHAPE and beta >= LARGE_SHAPE and alpha + beta < math.inf


@jitable
def _large_shapes_log_density(x, a, b):
    """The full log density for a, b >= LARGE_SHAPE.

    With n = a + b, p = a/n, q = b/n and lgamma(z) = (z - 1/2) log z - z
    + log(2 pi)/2 + D(z) (D = lgamma_stirling_diff),
        lbeta(a, b) = a log p + b log q - log(a q)/2 + log(2 pi)/2 + D(a) + D(b) - D(n),
    and since a (x/p - 1) + b ((1 - x)/q - 1) = n x - a + n (1 - x) - b = 0,
        log p(x) = a g(x/p) + b g((1 - x)/q) - log x - log(1 - x)
                   + log(a q)/2 - log(2 pi)/2 - D(a) - D(b) + D(n),
    g(y) = log(y) - (y - 1) = logmxp1(y) <= 0: no term cancels.
    """
    n = a + b
    q = b / n
    log_x = vmath.log(x)
    log1m_x = vmath.log1p(-x)
    return (a * logmxp1(x * n / a) + b * logmxp1((1.0 - x) / q)
            - log_x - log1m_x + 0.5 * vmath.log(a * q) - LOG_SQRT_2PI
            - (lgamma_stirling_diff(a) + lgamma_stirling_diff(b) - lgamma_stirling_diff(n)))


@jitable
def logpdf(x, alpha, beta):
    """Normalized log density; ``-inf`` outside (0, 1) or for a parameter <= 0."""
    if not _valid(x, alpha, beta):
        return -math.inf
    if _large_shapes(alpha, beta):
        return _large_shapes_log_density(x, alpha, beta)
    lp = (alpha - 1.0) * vmath.log(x) + (beta - 1.0) * vmath.log1p(-x) - lbeta(alpha, beta)
    return lp if -math.inf < lp < math.inf else -math.inf


@kernel
def logpdf_grad(x, alpha, beta, keep):
    """``(lp, d_x, d_alpha, d_beta)``; see ``distributions.spec`` for ``keep``.

    d/dalpha lbeta = digamma(a) - digamma(a + b) = -digamma_diff(a, b),
    accurate also when b is tiny next to a.
    """
    if not _valid(x, alpha, beta):
        return -math.inf, 0.0, 0.0, 0.0
    stirling = keep[0] and keep[1] and keep[2] and _large_shapes(alpha, beta)
    lp = 0.0
    d_x = 0.0
    d_a = 0.0
    d_b = 0.0
    if keep[0]:
        log_x = vmath.log(x)
        lp = (alpha - 1.0) * log_x
        d_x = (alpha - 1.0) / x
        d_a = log_x
    if keep[1]:
        log1m_x = vmath.log1p(-x)
        lp += (beta - 1.0) * log1m_x
        d_x -= (beta - 1.0) / (1.0 - x)
        d_b = log1m_x
    if keep[2]:
        if not stirling:
            lp -= lbeta(alpha, beta)
        d_a += digamma_diff(alpha, beta)
        d_b += digamma_diff(beta, alpha)
    if stirling:  # the full density, without the summands' cancellation
        lp = _large_shapes_log_density(x, alpha, beta)
    if not (-math.inf < lp < math.inf):  # overflow of a huge shape times log(x)
        return -math.inf, 0.0, 0.0, 0.0
    return lp, d_x, d_a, d_b


@jitable
def rvs(state, alpha, beta):
    """One draw from two gammas: Ga / (Ga + Gb) = logistic(log Ga - log Gb),
    in logs so that tiny shapes (both gammas below the smallest double)
    still give a number, not 0 / 0."""
    return logistic(random.log_gamma(state, alpha) - random.log_gamma(state, beta))


SPEC = Spec(
    name="Beta",
    params=(Param("alpha", positive), Param("beta", positive)),
    support=interval(0.0, 1.0),
    summands=(
        Summand(("x", "alpha"), "(alpha - 1) log(x)"),
        Summand(("x", "beta"), "(beta - 1) log1p(-x)"),
        Summand(("alpha", "beta"), "-lbeta(alpha, beta)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Beta(Distribution):
    __doc__ = __doc__
    spec = SPEC
