"""Logistic distribution.

    log p(x | loc, scale) = -z - 2 log(1 + exp(-z)) - log(scale),   z = (x - loc) / scale

Support: x real. Parameters: loc real, scale > 0.
scipy: ``scipy.stats.logistic(loc, scale)``; Stan: ``logistic_lpdf(x | loc, scale)``.
"""

import math

from . import vmath
from .constraints import positive, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import SMALLEST_NORMAL


# ``kernel``'s forced inlining: a helper holding a vmath polynomial, once
# cached by ``logpdf``, stayed a call in ``logpdf_grad``'s loops, which then
# did not vectorize.
@kernel
def _log_kernel(z):
    """-z - 2 log(1 + exp(-z)), written through |z|.

    The density is symmetric in z, so the expression equals
    -|z| - 2 log1p(exp(-|z|)): exp never overflows and log1p keeps the small
    tail correction exact.
    """
    a = abs(z)
    return -a - 2.0 * vmath.log1p(vmath.exp(-a))


@jitable
def logpdf(x, loc, scale):
    """Normalized log density; ``-inf`` outside the support or for scale <= 0."""
    if not (SMALLEST_NORMAL <= scale < math.inf and math.isfinite(x) and math.isfinite(loc)):
        return -math.inf
    return _log_kernel((x - loc) / scale) - vmath.log(scale)


@kernel
def logpdf_grad(x, loc, scale, keep):
    """``(lp, d_x, d_loc, d_scale)``; see ``distributions.spec`` for ``keep`` and
    why the checks pick a stand-in point instead of returning early."""
    ok = SMALLEST_NORMAL <= scale < math.inf and math.isfinite(x) and math.isfinite(loc)
    x = x if ok else 0.0
    loc = loc if ok else 0.0
    scale = scale if ok else 1.0
    inv_scale = 1.0 / scale
    z = (x - loc) / scale
    lp = 0.0
    d_x = 0.0
    d_scale = 0.0
    if keep[0]:
        # d/dz [-z - 2 log(1 + exp(-z))] = -1 + 2 / (1 + exp(z)) = -tanh(z / 2).
        lp += _log_kernel(z)
        slope = -math.tanh(0.5 * z)
        d_x = slope * inv_scale
        d_scale = -slope * z * inv_scale
    if keep[1]:
        lp -= vmath.log(scale)
        d_scale -= inv_scale
    if ok and lp != -math.inf:  # -inf: an overflowing term, a rejected point
        return lp, d_x, -d_x, d_scale
    return -math.inf, 0.0, 0.0, 0.0


@jitable
def rvs(state, loc, scale):
    """One draw by inversion: loc + scale log(U / (1 - U)), U in (0, 1)."""
    u = random.uniform_open(state)
    return loc + scale * (math.log(u) - math.log1p(-u))


SPEC = Spec(
    name="Logistic",
    params=(Param("loc", real), Param("scale", positive)),
    support=real,
    summands=(
        Summand(("x", "loc", "scale"), "-z - 2 log(1 + exp(-z)), z = (x - loc) / scale"),
        Summand(("scale",), "-log(scale)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Logistic(Distribution):
    __doc__ = __doc__
    spec = SPEC
