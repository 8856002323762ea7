"""Skew-normal distribution.

    log p(x | loc, scale, alpha) = log 2 - log(2 pi) / 2 - log(scale) - z^2 / 2
                                   + log Phi(alpha z),   z = (x - loc) / scale

Phi is the standard normal cdf. Support: x real. Parameters: loc real,
scale > 0, alpha real (the shape; alpha = 0 is Normal(loc, scale)).
scipy: ``scipy.stats.skewnorm(alpha, loc, scale)``; Stan:
``skew_normal_lpdf(x | loc, scale, alpha)``.
"""

import math

from . import vmath
from .constraints import positive, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import LOG_2, LOG_SQRT_2PI, SMALLEST_NORMAL, dlog_ndtr, log_ndtr


@jitable
def _valid(x, loc, scale, alpha):
    return (SMALLEST_NORMAL <= scale < math.inf and math.isfinite(x) and math.isfinite(loc)
            and math.isfinite(alpha))


@jitable
def logpdf(x, loc, scale, alpha):
    """Normalized log density; ``-inf`` outside the support or for scale <= 0."""
    if not _valid(x, loc, scale, alpha):
        return -math.inf
    z = (x - loc) / scale
    if not math.isfinite(z):  # overflow: the density underflows; alpha * z could be NaN
        return -math.inf
    return -0.5 * z * z - vmath.log(scale) + log_ndtr(alpha * z) + (LOG_2 - LOG_SQRT_2PI)


@kernel
def logpdf_grad(x, loc, scale, alpha, keep):
    """``(lp, d_x, d_loc, d_scale, d_alpha)``; see ``distributions.spec`` for ``keep``."""
    if not _valid(x, loc, scale, alpha):
        return -math.inf, 0.0, 0.0, 0.0, 0.0
    inv_scale = 1.0 / scale
    z = (x - loc) / scale
    if not math.isfinite(z):
        return -math.inf, 0.0, 0.0, 0.0, 0.0
    lp = 0.0
    d_x = 0.0
    d_scale = 0.0
    d_alpha = 0.0
    if keep[0]:
        lp -= 0.5 * z * z
        d_x = -z * inv_scale
        d_scale = z * z * inv_scale
    if keep[1]:
        lp -= vmath.log(scale)
        d_scale -= inv_scale
    if keep[2]:
        # d log Phi(w) / dw = phi(w) / Phi(w), which dlog_ndtr keeps finite and
        # accurate deep in the lower tail (where it tends to -w).
        w = alpha * z
        lp += log_ndtr(w)
        ratio = dlog_ndtr(w)
        d_x += alpha * ratio * inv_scale
        if ratio > 0.0:  # ratio is 0 where w overflows to +inf: w * ratio -> 0
            d_scale -= w * ratio * inv_scale
        d_alpha = z * ratio
    if keep[3]:
        lp += LOG_2 - LOG_SQRT_2PI
    if lp == -math.inf:  # an overflowing term: reject the point, zero partials
        return -math.inf, 0.0, 0.0, 0.0, 0.0
    return lp, d_x, -d_x, d_scale, d_alpha


@jitable
def rvs(state, loc, scale, alpha):
    """One draw by Azzalini's (1985) representation: with u, v independent standard
    normals and delta = alpha / sqrt(1 + alpha^2), z = delta |u| + sqrt(1 - delta^2) v
    is SkewNormal(0, 1, alpha) (Henze 1986). 1 / sqrt(1 + alpha^2) is sqrt(1 - delta^2)
    without cancellation for large alpha."""
    u = abs(random.normal(state))
    v = random.normal(state)
    r = 1.0 / math.sqrt(1.0 + alpha * alpha) if abs(alpha) < 1e150 else 0.0
    delta = alpha * r if abs(alpha) < 1e150 else math.copysign(1.0, alpha)
    return loc + scale * (delta * u + r * v)


SPEC = Spec(
    name="SkewNormal",
    params=(Param("loc", real), Param("scale", positive), Param("alpha", real)),
    support=real,
    summands=(
        Summand(("x", "loc", "scale"), "-((x - loc) / scale)**2 / 2"),
        Summand(("scale",), "-log(scale)"),
        Summand(("x", "loc", "scale", "alpha"), "log Phi(alpha (x - loc) / scale)"),
        Summand((), "log 2 - log(2 pi) / 2"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class SkewNormal(Distribution):
    __doc__ = __doc__
    spec = SPEC
