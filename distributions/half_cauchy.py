"""Half-Cauchy distribution: a Cauchy(0, scale) folded onto x >= 0.

    log p(x | scale) = log 2 - log(pi) - log(scale) - log(1 + (x / scale)^2)

Support: x >= 0 (zero included, as in Stan). Parameter: scale > 0.
scipy: ``scipy.stats.halfcauchy(scale=scale)``; Stan: ``cauchy_lpdf(x | 0, scale)``
on a ``<lower=0>`` variable, plus log 2.
"""

import math

from . import vmath
from .constraints import nonnegative, positive
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import LOG_2, LOG_PI, SMALLEST_NORMAL, log1p_square


@jitable
def logpdf(x, scale):
    """Normalized log density; ``-inf`` for x < 0 or scale <= 0."""
    if not (SMALLEST_NORMAL <= scale < math.inf and 0.0 <= x < math.inf):
        return -math.inf
    log1p_z2 = log1p_square(x / scale)[0]
    return -log1p_z2 - vmath.log(scale) + (LOG_2 - LOG_PI)


@kernel
def logpdf_grad(x, scale, keep):
    """``(lp, d_x, d_scale)``; see ``distributions.spec`` for ``keep`` and
    why the checks pick a stand-in point instead of returning early.

    At x = 0 ``d_x`` is the one-sided derivative, 0.
    """
    ok = SMALLEST_NORMAL <= scale < math.inf and 0.0 <= x < math.inf
    x = x if ok else 0.0
    scale = scale if ok else 1.0
    inv_scale = 1.0 / scale
    log1p_z2, z_over, z2_over = log1p_square(x / scale)
    lp = 0.0
    d_x = 0.0
    d_scale = 0.0
    if keep[0]:
        # d/dz -log(1 + z^2) = -2 z / (1 + z^2); dz/dscale = -z / scale.
        lp -= log1p_z2
        d_x = -2.0 * z_over * inv_scale
        d_scale = 2.0 * z2_over * inv_scale
    if keep[1]:
        lp -= vmath.log(scale)
        d_scale -= inv_scale
    if keep[2]:
        lp += LOG_2 - LOG_PI
    if ok and lp != -math.inf:  # -inf: an overflowing term, a rejected point
        return lp, d_x, d_scale
    return -math.inf, 0.0, 0.0


@jitable
def rvs(state, scale):
    """One draw by inversion: scale tan(pi U / 2), U in (0, 1)."""
    return scale * math.tan(0.5 * math.pi * random.uniform_open(state))


SPEC = Spec(
    name="HalfCauchy",
    params=(Param("scale", positive),),
    support=nonnegative,
    summands=(
        Summand(("x", "scale"), "-log(1 + (x / scale)**2)"),
        Summand(("scale",), "-log(scale)"),
        Summand((), "log 2 - log(pi)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class HalfCauchy(Distribution):
    __doc__ = __doc__
    spec = SPEC
