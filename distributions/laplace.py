"""Laplace (double exponential) distribution.

    log p(x | loc, scale) = -log(2) - log(scale) - |x - loc| / scale

Support: x real. Parameters: loc real, scale > 0.
scipy: ``scipy.stats.laplace(loc, scale)``; Stan: ``double_exponential_lpdf(x | loc, scale)``.
"""

import math

from . import vmath
from .constraints import positive, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import LOG_2, SMALLEST_NORMAL


@jitable
def logpdf(x, loc, scale):
    """Normalized log density; ``-inf`` outside the support or for scale <= 0."""
    if not (SMALLEST_NORMAL <= scale < math.inf and math.isfinite(x) and math.isfinite(loc)):
        return -math.inf
    return -abs(x - loc) / scale - vmath.log(scale) - LOG_2


@kernel
def logpdf_grad(x, loc, scale, keep):
    """``(lp, d_x, d_loc, d_scale)``; see ``distributions.spec`` for ``keep`` and
    why the checks pick a stand-in point instead of returning early.

    At x = loc, where |x - loc| has a kink, the partials in x and loc are 0
    (the mean of the one-sided derivatives, as sign(0) = 0 in Stan).
    """
    ok = SMALLEST_NORMAL <= scale < math.inf and math.isfinite(x) and math.isfinite(loc)
    x = x if ok else 0.0
    loc = loc if ok else 0.0
    scale = scale if ok else 1.0
    inv_scale = 1.0 / scale
    diff = x - loc
    lp = 0.0
    d_x = 0.0
    d_scale = 0.0
    if keep[0]:
        abs_z = abs(diff) / scale
        lp -= abs_z
        if diff > 0.0:
            d_x = -inv_scale
        elif diff < 0.0:
            d_x = inv_scale
        d_scale = abs_z * inv_scale
    if keep[1]:
        lp -= vmath.log(scale)
        d_scale -= inv_scale
    if keep[2]:
        lp -= LOG_2
    if ok and lp != -math.inf:  # -inf: an overflowing term, a rejected point
        return lp, d_x, -d_x, d_scale
    return -math.inf, 0.0, 0.0, 0.0


@jitable
def rvs(state, loc, scale):
    """One draw by inversion: loc -+ scale E, E standard exponential, sign by a fair coin
    (the two halves of the inverse CDF)."""
    e = scale * random.exponential(state)
    return loc + e if random.uniform(state) < 0.5 else loc - e


SPEC = Spec(
    name="Laplace",
    params=(Param("loc", real), Param("scale", positive)),
    support=real,
    summands=(
        Summand(("x", "loc", "scale"), "-|x - loc| / scale"),
        Summand(("scale",), "-log(scale)"),
        Summand((), "-log(2)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Laplace(Distribution):
    __doc__ = __doc__
    spec = SPEC
