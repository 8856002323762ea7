"""Cauchy distribution.

    log p(x | loc, scale) = -log(pi) - log(scale) - log(1 + z^2),   z = (x - loc) / scale

Support: x real. Parameters: loc real, scale > 0.
scipy: ``scipy.stats.cauchy(loc, scale)``; Stan: ``cauchy_lpdf(x | loc, scale)``.
"""

import math

from . import vmath
from .constraints import positive, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import LOG_PI, SMALLEST_NORMAL, log1p_square


@jitable
def logpdf(x, loc, scale):
    """Normalized log density; ``-inf`` outside the support or for scale <= 0."""
    if not (SMALLEST_NORMAL <= scale < math.inf and math.isfinite(x) and math.isfinite(loc)):
        return -math.inf
    log1p_z2 = log1p_square((x - loc) / scale)[0]
    return -log1p_z2 - vmath.log(scale) - LOG_PI


@kernel
def logpdf_grad(x, loc, scale, keep):
    """``(lp, d_x, d_loc, d_scale)``; see ``distributions.spec`` for ``keep`` and
    why the checks pick a stand-in point instead of returning early."""
    ok = SMALLEST_NORMAL <= scale < math.inf and math.isfinite(x) and math.isfinite(loc)
    x = x if ok else 0.0
    loc = loc if ok else 0.0
    scale = scale if ok else 1.0
    inv_scale = 1.0 / scale
    log1p_z2, z_over, z2_over = log1p_square((x - loc) / scale)
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
        lp -= LOG_PI
    if ok and lp != -math.inf:  # -inf: an overflowing term, a rejected point
        return lp, d_x, -d_x, d_scale
    return -math.inf, 0.0, 0.0, 0.0


@jitable
def rvs(state, loc, scale):
    """One draw by inversion: loc + scale tan(pi (U - 1/2)), U in (0, 1)."""
    return loc + scale * math.tan(math.pi * (random.uniform_open(state) - 0.5))


SPEC = Spec(
    name="Cauchy",
    params=(Param("loc", real), Param("scale", positive)),
    support=real,
    summands=(
        Summand(("x", "loc", "scale"), "-log(1 + ((x - loc) / scale)**2)"),
        Summand(("scale",), "-log(scale)"),
        Summand((), "-log(pi)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Cauchy(Distribution):
    __doc__ = __doc__
    spec = SPEC
