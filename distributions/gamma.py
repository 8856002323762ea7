"""Gamma distribution, shape-rate parameterization.

    log p(x | a, b) = a log(b) - lgamma(a) + (a - 1) log(x) - b x,
    a = concentration, b = rate

Support: x > 0. The point x = 0 is excluded because the density there is
infinite for a < 1 (and 0 for a > 1); the kernels return ``-inf`` at x = 0 for
every a. Parameters: concentration > 0, rate > 0 (the inverse of scipy's scale).
scipy: ``scipy.stats.gamma(a=concentration, scale=1 / rate)``;
Stan: ``gamma_lpdf(x | concentration, rate)``.

For a large shape the four summands are each about a log(a) and cancel to
O(log a) (at a = 1e4 they lose 5 digits). The full density is then computed
from Stirling's series instead (``large_shape_log_density``, also used by
InverseGamma and ChiSquared; like Beta's, it is built on ``logmxp1``); a proper
subset of the summands, which the engine asks for when some arguments are
data, is summed as tagged (there the dropped constants absorb the
cancellation, and an absolute error of eps * a log(a) does not matter).
"""

import math

from . import vmath
from .constraints import positive
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import (
    LOG_SQRT_2PI, digamma, lgamma_or_inf, lgamma_stirling_diff, logmxp1)

# From this shape on, lgamma_stirling_diff is a converged series and the
# summands cancel by more than a digit.
LARGE_SHAPE = 10.0


@jitable
def large_shape_log_density(a, y):
    """log(x p(x)) of Gamma(a, b) at y = b x / a, for a >= LARGE_SHAPE.

    With lgamma(a) = (a - 1/2) log(a) - a + log(2 pi)/2 + D(a)
    (D = lgamma_stirling_diff), the gamma log density is
        a log(b x) - log(x) - b x - (a - 1/2) log(a) + a - log(2 pi)/2 - D(a)
      = a [log(y) - y + 1] + log(a)/2 - log(2 pi)/2 - D(a) - log(x),
    and log(y) - y + 1 = logmxp1(y) <= 0 is computed without cancellation, so
    the value is accurate to a few ulps of its own size. Needs 0 < y < inf.
    """
    return (a * logmxp1(y) + 0.5 * vmath.log(a) - LOG_SQRT_2PI
            - lgamma_stirling_diff(a))


@jitable
def _valid(x, concentration, rate):
    return 0.0 < concentration < math.inf and 0.0 < rate < math.inf and 0.0 < x < math.inf


@jitable
def _ratio(x, concentration, rate):
    """y = rate x / concentration, or 0 where the Stirling form does not apply:
    a small shape, or y out of the normal range (a rate x that overflows)."""
    if concentration < LARGE_SHAPE:
        return 0.0
    y = rate * x / concentration
    return y if 1e-300 < y < 1e300 else 0.0


@jitable
def logpdf(x, concentration, rate):
    """Normalized log density; ``-inf`` for x <= 0 or a parameter <= 0."""
    if not _valid(x, concentration, rate):
        return -math.inf
    y = _ratio(x, concentration, rate)
    if y > 0.0:
        lp = large_shape_log_density(concentration, y) - vmath.log(x)
    else:
        lp = (concentration * vmath.log(rate) - lgamma_or_inf(concentration)
              + (concentration - 1.0) * vmath.log(x) - rate * x)
    # A huge shape or rate * x may overflow: a rejected point, never NaN.
    return lp if -math.inf < lp < math.inf else -math.inf


@jitable
def _grad_large_shape(x, a, rate, y):
    """The full density from the Stirling form with the summands' partials,
    computed as in ``logpdf_grad`` and in the same order."""
    log_x = vmath.log(x)
    lp = large_shape_log_density(a, y) - log_x
    if not (-math.inf < lp < math.inf):
        return -math.inf, 0.0, 0.0, 0.0
    return lp, (a - 1.0) / x - rate, vmath.log(rate) - digamma(a) + log_x, a / rate - x


@kernel
def logpdf_grad(x, concentration, rate, keep):
    """``(lp, d_x, d_concentration, d_rate)``; see ``distributions.spec`` for ``keep``."""
    if not _valid(x, concentration, rate):
        return -math.inf, 0.0, 0.0, 0.0
    a = concentration
    if keep[0] and keep[1] and keep[2] and keep[3]:
        y = _ratio(x, a, rate)
        if y > 0.0:
            return _grad_large_shape(x, a, rate, y)
    lp = 0.0
    d_x = 0.0
    d_a = 0.0
    d_b = 0.0
    if keep[0]:
        log_rate = vmath.log(rate)
        lp = a * log_rate
        d_a = log_rate
        d_b = a / rate
    if keep[1]:
        lp -= lgamma_or_inf(a)
        d_a -= digamma(a)
    if keep[2]:
        log_x = vmath.log(x)
        lp += (a - 1.0) * log_x
        d_x = (a - 1.0) / x
        d_a += log_x
    if keep[3]:
        lp -= rate * x
        d_x -= rate
        d_b -= x
    if not (-math.inf < lp < math.inf):
        return -math.inf, 0.0, 0.0, 0.0
    return lp, d_x, d_a, d_b


@jitable
def rvs(state, concentration, rate):
    """One draw: G / rate, G ~ Gamma(concentration, 1) (Marsaglia-Tsang, see
    ``distributions.random.gamma``)."""
    return random.gamma(state, concentration) / rate


SPEC = Spec(
    name="Gamma",
    params=(Param("concentration", positive), Param("rate", positive)),
    support=positive,
    summands=(
        Summand(("concentration", "rate"), "concentration log(rate)"),
        Summand(("concentration",), "-lgamma(concentration)"),
        Summand(("x", "concentration"), "(concentration - 1) log(x)"),
        Summand(("x", "rate"), "-rate x"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Gamma(Distribution):
    __doc__ = __doc__
    spec = SPEC
