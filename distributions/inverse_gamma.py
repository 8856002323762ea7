"""Inverse gamma distribution: 1 / X for X ~ Gamma(concentration, rate=scale).

    log p(x | a, s) = a log(s) - lgamma(a) - (a + 1) log(x) - s / x,
    a = concentration, s = scale

Support: x > 0 (the density tends to 0 as x -> 0; the kernels return ``-inf``
at x = 0). Parameters: concentration > 0, scale > 0.
scipy: ``scipy.stats.invgamma(a=concentration, scale=scale)``;
Stan: ``inv_gamma_lpdf(x | concentration, scale)``.

For a large shape the summands cancel as in Gamma; the full density is then
taken from Gamma's Stirling form at u = 1/x with the Jacobian 1/x^2:
log p(x) = large_shape_log_density(a, s / (a x)) + log(x) - 2 log(x).
"""

import math

from . import vmath
from .constraints import positive
from .frozen import Distribution
from .gamma import LARGE_SHAPE, large_shape_log_density
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import digamma, lgamma_or_inf


@jitable
def _valid(x, concentration, scale):
    return 0.0 < concentration < math.inf and 0.0 < scale < math.inf and 0.0 < x < math.inf


@jitable
def _ratio(x, concentration, scale):
    """y = scale / (concentration x), or 0 where the Stirling form does not apply."""
    if concentration < LARGE_SHAPE:
        return 0.0
    y = scale / (concentration * x)
    return y if 1e-300 < y < 1e300 else 0.0


@jitable
def logpdf(x, concentration, scale):
    """Normalized log density; ``-inf`` for x <= 0 or a parameter <= 0."""
    if not _valid(x, concentration, scale):
        return -math.inf
    y = _ratio(x, concentration, scale)
    if y > 0.0:
        lp = large_shape_log_density(concentration, y) - vmath.log(x)
    else:
        lp = (concentration * vmath.log(scale) - lgamma_or_inf(concentration)
              - (concentration + 1.0) * vmath.log(x) - scale / x)
    # A huge shape or scale / x near x = 0 may overflow: a rejected point, never NaN.
    return lp if -math.inf < lp < math.inf else -math.inf


@jitable
def _grad_large_shape(x, a, scale, y):
    """The full density from the Stirling form with the summands' partials,
    computed as in ``logpdf_grad`` and in the same order."""
    log_x = vmath.log(x)
    lp = large_shape_log_density(a, y) - log_x
    if not (-math.inf < lp < math.inf):
        return -math.inf, 0.0, 0.0, 0.0
    scale_over_x = scale / x
    return (lp, (scale_over_x - (a + 1.0)) / x, vmath.log(scale) - digamma(a) - log_x,
            (a - scale_over_x) / scale)


@kernel
def logpdf_grad(x, concentration, scale, keep):
    """``(lp, d_x, d_concentration, d_scale)``; see ``distributions.spec`` for ``keep``."""
    if not _valid(x, concentration, scale):
        return -math.inf, 0.0, 0.0, 0.0
    a = concentration
    if keep[0] and keep[1] and keep[2] and keep[3]:
        y = _ratio(x, a, scale)
        if y > 0.0:
            return _grad_large_shape(x, a, scale, y)
    scale_over_x = scale / x
    lp = 0.0
    d_x = 0.0
    d_a = 0.0
    d_s = 0.0
    if keep[0]:
        log_scale = vmath.log(scale)
        lp = a * log_scale
        d_a = log_scale
        d_s = a / scale
    if keep[1]:
        lp -= lgamma_or_inf(a)
        d_a -= digamma(a)
    if keep[2]:
        log_x = vmath.log(x)
        lp -= (a + 1.0) * log_x
        d_a -= log_x
    if keep[3]:
        lp -= scale_over_x
        d_s -= 1.0 / x
    # Partials shared by two summands are combined before one division:
    # -(a + 1)/x + (scale/x)/x and a/scale - 1/x would be inf - inf = NaN
    # for a subnormal x or scale.
    if keep[0] and keep[3]:
        d_s = (a - scale_over_x) / scale
    if keep[2] and keep[3]:
        d_x = (scale_over_x - (a + 1.0)) / x
    elif keep[2]:
        d_x = -(a + 1.0) / x
    elif keep[3]:
        d_x = scale_over_x / x
    if not (-math.inf < lp < math.inf):
        return -math.inf, 0.0, 0.0, 0.0
    return lp, d_x, d_a, d_s


@jitable
def rvs(state, concentration, scale):
    """One draw: scale / G, G ~ Gamma(concentration, 1), taken in logs so a G
    below the smallest double gives inf only where the draw itself overflows."""
    return math.exp(math.log(scale) - random.log_gamma(state, concentration))


SPEC = Spec(
    name="InverseGamma",
    params=(Param("concentration", positive), Param("scale", positive)),
    support=positive,
    summands=(
        Summand(("concentration", "scale"), "concentration log(scale)"),
        Summand(("concentration",), "-lgamma(concentration)"),
        Summand(("x", "concentration"), "-(concentration + 1) log(x)"),
        Summand(("x", "scale"), "-scale / x"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class InverseGamma(Distribution):
    __doc__ = __doc__
    spec = SPEC
