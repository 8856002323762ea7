"""Normal distribution.

    log p(x | loc, scale) = -z^2 / 2 - log(scale) - log(2 pi) / 2,   z = (x - loc) / scale

Support: x real. Parameters: loc real, scale > 0.
scipy: ``scipy.stats.norm(loc, scale)``; Stan: ``normal_lpdf(x | loc, scale)``.
"""

import math

from . import vmath
from .constraints import positive, real
from .frozen import Distribution
from .jit import fast_kernel, jitable
from .spec import Param, Spec, Summand
from . import random
from .special import LOG_SQRT_2PI


@jitable
def logpdf(x, loc, scale):
    """Normalized log density; ``-inf`` outside the support or for scale <= 0."""
    if not (0.0 < scale < math.inf and math.isfinite(x) and math.isfinite(loc)):
        return -math.inf
    z = (x - loc) / scale
    return -0.5 * z * z - vmath.log(scale) - LOG_SQRT_2PI


@fast_kernel
def logpdf_grad(x, loc, scale, keep):
    """``(lp, d_x, d_loc, d_scale)``; see ``distributions.spec`` for ``keep`` and
    why the checks pick a stand-in point instead of returning early."""
    # One check of z covers x and loc (an inf or NaN in either makes z inf or
    # NaN); a z that overflows from finite x and loc has density 0: -inf too.
    scale = scale if 0.0 < scale < math.inf else math.nan
    inv_scale = 1.0 / scale
    z = (x - loc) * inv_scale
    ok = math.isfinite(z)
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
        lp -= LOG_SQRT_2PI
    if ok:
        return lp, d_x, -d_x, d_scale
    return -math.inf, 0.0, 0.0, 0.0


@jitable
def rvs(state, loc, scale):
    """One draw: loc + scale z, z standard normal (Box-Muller)."""
    return loc + scale * random.normal(state)


SPEC = Spec(
    name="Normal",
    params=(Param("loc", real), Param("scale", positive)),
    support=real,
    summands=(
        Summand(("x", "loc", "scale"), "-((x - loc) / scale)**2 / 2"),
        Summand(("scale",), "-log(scale)"),
        Summand((), "-log(2 pi) / 2"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Normal(Distribution):
    __doc__ = __doc__
    spec = SPEC
