"""Weibull distribution.

    log p(x | k, s) = log(k) - log(x) + k log(x / s) - (x / s)^k,
    k = concentration, s = scale

Support: x > 0. The point x = 0 is excluded because the density there is
infinite for k < 1 (and 0 for k > 1); the kernels return ``-inf`` at x = 0 for
every k. Parameters: concentration > 0 (the shape), scale > 0.
scipy: ``scipy.stats.weibull_min(c=concentration, scale=scale)``;
Stan: ``weibull_lpdf(x | concentration, scale)``.

Stan writes ``(k - 1) log(x) - k log(s)``; here ``v = k log(x / s)`` is taken
as one term, so nothing cancels when x and s are large, the summand
``-log(x)`` depends on data only, and with ``w = exp(v) = (x / s)^k`` every
partial of ``v - w`` carries the factor ``1 - w = -expm1(v)``, exact near the
mode where w is close to 1.
"""

import math

from . import vmath
from .constraints import positive
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import log_ratio

# Above this v = k log(x / s), exp(v) overflows (plain Python raises) and
# v - exp(v) < -1.79e308: the value is -inf, as it is where v itself is -inf.
_V_MAX = 709.78


@jitable
def _valid(x, concentration, scale):
    return 0.0 < concentration < math.inf and 0.0 < scale < math.inf and 0.0 < x < math.inf


@jitable
def logpdf(x, concentration, scale):
    """Normalized log density; ``-inf`` for x <= 0 or a parameter <= 0."""
    if not _valid(x, concentration, scale):
        return -math.inf
    v = concentration * log_ratio(x, scale)
    if not (-math.inf < v <= _V_MAX):
        return -math.inf
    return vmath.log(concentration) - vmath.log(x) + (v - vmath.exp(v))


@kernel
def logpdf_grad(x, concentration, scale, keep):
    """``(lp, d_x, d_concentration, d_scale)``; see ``distributions.spec`` for ``keep``."""
    if not _valid(x, concentration, scale):
        return -math.inf, 0.0, 0.0, 0.0
    log_z = log_ratio(x, scale)
    v = concentration * log_z
    if not (-math.inf < v <= _V_MAX):
        return -math.inf, 0.0, 0.0, 0.0
    lp = 0.0
    d_x = 0.0
    d_k = 0.0
    d_s = 0.0
    if keep[0]:
        lp = vmath.log(concentration)
        d_k = 1.0 / concentration
    if keep[1]:
        lp -= vmath.log(x)
        d_x = -1.0 / x
    if keep[2]:
        w = vmath.exp(v)
        lp += v - w
        # d(v - w) = (1 - w) dv, and 1 - w = -expm1(v) is exact near the mode.
        one_minus_w = -math.expm1(v)
        d_k += log_z * one_minus_w
        d_s = -concentration * one_minus_w / scale
        if keep[1]:
            # -1/x + k (1 - w)/x cancels for k near 1 and x -> 0; combined
            # as ((k - 1) - k w) / x it does not (k = 1 gives -w/x exactly).
            d_x = ((concentration - 1.0) - concentration * w) / x
        else:
            d_x = concentration * one_minus_w / x
    return lp, d_x, d_k, d_s


@jitable
def rvs(state, concentration, scale):
    """One draw by inversion: scale E^(1/concentration), E standard exponential."""
    return scale * math.exp(math.log(random.exponential(state)) / concentration)


SPEC = Spec(
    name="Weibull",
    params=(Param("concentration", positive), Param("scale", positive)),
    support=positive,
    summands=(
        Summand(("concentration",), "log(concentration)"),
        Summand(("x",), "-log(x)"),
        Summand(("x", "concentration", "scale"),
                "concentration log(x / scale) - (x / scale)^concentration"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Weibull(Distribution):
    __doc__ = __doc__
    spec = SPEC
