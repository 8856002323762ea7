"""Log-normal distribution: log(x) is Normal(loc, scale).

    log p(x | loc, scale) = -z^2 / 2 - log(x) - log(scale) - log(2 pi) / 2,
    z = (log(x) - loc) / scale

Support: x > 0. Parameters: loc real (the mean of log x), scale > 0.
scipy: ``scipy.stats.lognorm(s=scale, scale=exp(loc))``; Stan:
``lognormal_lpdf(x | loc, scale)``.
"""

import math

from . import vmath
from .constraints import positive, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import LOG_SQRT_2PI, SMALLEST_NORMAL


@jitable
def logpdf(x, loc, scale):
    """Normalized log density; ``-inf`` for x <= 0 or scale <= 0."""
    if not (SMALLEST_NORMAL <= scale < math.inf and 0.0 < x < math.inf and math.isfinite(loc)):
        return -math.inf
    log_x = vmath.log(x)
    z = (log_x - loc) / scale
    return -0.5 * z * z - log_x - vmath.log(scale) - LOG_SQRT_2PI


@kernel
def logpdf_grad(x, loc, scale, keep):
    """``(lp, d_x, d_loc, d_scale)``; see ``distributions.spec`` for ``keep`` and
    why the checks pick a stand-in point instead of returning early."""
    ok = SMALLEST_NORMAL <= scale < math.inf and 0.0 < x < math.inf and math.isfinite(loc)
    x = x if ok else 1.0
    loc = loc if ok else 0.0
    scale = scale if ok else 1.0
    inv_scale = 1.0 / scale
    log_x = vmath.log(x)
    z = (log_x - loc) / scale
    lp = 0.0
    d_log_x = 0.0  # the partial with respect to log(x); d_x = d_log_x / x
    d_loc = 0.0
    d_scale = 0.0
    if keep[0]:
        lp -= 0.5 * z * z
        d_loc = z * inv_scale
        d_log_x = -d_loc
        d_scale = z * z * inv_scale
    if keep[1]:
        lp -= log_x
        d_log_x -= 1.0
    if keep[2]:
        lp -= vmath.log(scale)
        d_scale -= inv_scale
    if keep[3]:
        lp -= LOG_SQRT_2PI
    if ok and lp != -math.inf:  # -inf: an overflowing term, a rejected point
        # One division at the end: for a subnormal x, 1/x overflows, and
        # (d_log_x) * (1/x) could be 0 * inf or inf - inf.
        return lp, d_log_x / x, d_loc, d_scale
    return -math.inf, 0.0, 0.0, 0.0


@jitable
def rvs(state, loc, scale):
    """One draw: exp(loc + scale z), z standard normal."""
    return math.exp(loc + scale * random.normal(state))


SPEC = Spec(
    name="LogNormal",
    params=(Param("loc", real), Param("scale", positive)),
    support=positive,
    summands=(
        Summand(("x", "loc", "scale"), "-((log(x) - loc) / scale)**2 / 2"),
        Summand(("x",), "-log(x)"),
        Summand(("scale",), "-log(scale)"),
        Summand((), "-log(2 pi) / 2"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class LogNormal(Distribution):
    __doc__ = __doc__
    spec = SPEC
