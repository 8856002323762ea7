"""Gumbel (maximum extreme value, type I) distribution.

    log p(x | loc, scale) = -z - exp(-z) - log(scale),   z = (x - loc) / scale

Support: x real. Parameters: loc real (the mode), scale > 0.
scipy: ``scipy.stats.gumbel_r(loc, scale)``; Stan: ``gumbel_lpdf(x | loc, scale)``.
"""

import math

from . import vmath
from .constraints import positive, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import SMALLEST_NORMAL

# Below z = Z_MIN the log density, -z - exp(-z), is under -1e304 and is taken
# as -inf: exp(-z) would soon overflow (plain Python's math.exp raises past
# z = -709.78) and so would the partial in scale, about z exp(-z) / scale.
Z_MIN = -700.0


@jitable
def _valid(x, loc, scale):
    return SMALLEST_NORMAL <= scale < math.inf and math.isfinite(x) and math.isfinite(loc)


@jitable
def logpdf(x, loc, scale):
    """Normalized log density; ``-inf`` outside the support or for scale <= 0."""
    if not _valid(x, loc, scale):
        return -math.inf
    z = (x - loc) / scale
    if z < Z_MIN:
        return -math.inf
    return -z - vmath.exp(-z) - vmath.log(scale)


@kernel
def logpdf_grad(x, loc, scale, keep):
    """``(lp, d_x, d_loc, d_scale)``; see ``distributions.spec`` for ``keep``."""
    if not _valid(x, loc, scale):
        return -math.inf, 0.0, 0.0, 0.0
    inv_scale = 1.0 / scale
    z = (x - loc) / scale
    lp = 0.0
    d_x = 0.0
    d_scale = 0.0
    if keep[0]:
        if z < Z_MIN:
            return -math.inf, 0.0, 0.0, 0.0
        # d/dz [-z - exp(-z)] = exp(-z) - 1 = expm1(-z), exact near the mode.
        lp -= z + vmath.exp(-z)
        slope = math.expm1(-z)
        d_x = slope * inv_scale
        d_scale = -slope * z * inv_scale
    if keep[1]:
        lp -= vmath.log(scale)
        d_scale -= inv_scale
    if lp == -math.inf:  # an overflowing term: reject the point, zero partials
        return -math.inf, 0.0, 0.0, 0.0
    return lp, d_x, -d_x, d_scale


@jitable
def rvs(state, loc, scale):
    """One draw by inversion: loc - scale log(E), E standard exponential
    (= loc - scale log(-log U))."""
    return loc - scale * math.log(random.exponential(state))


SPEC = Spec(
    name="Gumbel",
    params=(Param("loc", real), Param("scale", positive)),
    support=real,
    summands=(
        Summand(("x", "loc", "scale"), "-z - exp(-z), z = (x - loc) / scale"),
        Summand(("scale",), "-log(scale)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Gumbel(Distribution):
    __doc__ = __doc__
    spec = SPEC
