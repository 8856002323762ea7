"""Half-normal distribution: a Normal(0, scale) folded onto x >= 0.

    log p(x | scale) = log 2 - log(2 pi) / 2 - log(scale) - (x / scale)^2 / 2

Support: x >= 0 (zero included, as in Stan). Parameter: scale > 0.
scipy: ``scipy.stats.halfnorm(scale=scale)``; Stan: ``normal_lpdf(x | 0, scale)``
on a ``<lower=0>`` variable, plus log 2.
"""

import math

from . import vmath
from .constraints import nonnegative, positive
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import LOG_2, LOG_SQRT_2PI, SMALLEST_NORMAL


@jitable
def logpdf(x, scale):
    """Normalized log density; ``-inf`` for x < 0 or scale <= 0."""
    if not (SMALLEST_NORMAL <= scale < math.inf and 0.0 <= x < math.inf):
        return -math.inf
    z = x / scale
    return -0.5 * z * z - vmath.log(scale) + (LOG_2 - LOG_SQRT_2PI)


@kernel
def logpdf_grad(x, scale, keep):
    """``(lp, d_x, d_scale)``; see ``distributions.spec`` for ``keep``.

    At x = 0 ``d_x`` is the one-sided derivative, 0.
    """
    if not (SMALLEST_NORMAL <= scale < math.inf and 0.0 <= x < math.inf):
        return -math.inf, 0.0, 0.0
    inv_scale = 1.0 / scale
    z = x / scale
    lp = 0.0
    d_x = 0.0
    d_scale = 0.0
    if keep[0]:
        lp -= 0.5 * z * z
        d_x = -z * inv_scale
        d_scale = z * z * inv_scale
    if keep[1]:
        lp -= vmath.log(scale)
        d_scale -= inv_scale
    if keep[2]:
        lp += LOG_2 - LOG_SQRT_2PI
    if lp == -math.inf:  # an overflowing term: reject the point, zero partials
        return -math.inf, 0.0, 0.0
    return lp, d_x, d_scale


@jitable
def rvs(state, scale):
    """One draw: scale |z|, z standard normal."""
    return scale * abs(random.normal(state))


SPEC = Spec(
    name="HalfNormal",
    params=(Param("scale", positive),),
    support=nonnegative,
    summands=(
        Summand(("x", "scale"), "-(x / scale)**2 / 2"),
        Summand(("scale",), "-log(scale)"),
        Summand((), "log 2 - log(2 pi) / 2"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class HalfNormal(Distribution):
    __doc__ = __doc__
    spec = SPEC
