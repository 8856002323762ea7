"""Continuous uniform distribution.

    log p(x | lower, upper) = -log(upper - lower)

Support: lower <= x <= upper (both ends included). Parameters: lower real,
upper > lower.
scipy: ``scipy.stats.uniform(loc=lower, scale=upper - lower)``;
Stan: ``uniform_lpdf(x | lower, upper)``.
"""

import math

from . import vmath
from .constraints import greater_than, interval, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import LOG_2

_HALF_MAX = 8.988465674311579e307  # half the largest float64


@jitable
def _valid(x, lower, upper):
    return -math.inf < lower < upper < math.inf and lower <= x <= upper


# ``kernel``'s forced inlining: a helper holding a vmath polynomial, once
# cached by ``logpdf``, stayed a call in ``logpdf_grad``'s loops, which then
# did not vectorize.
@kernel
def _log_width(lower, upper):
    """``(log(upper - lower), 1 / (upper - lower))``, also where the difference
    overflows (lower = -1e308, upper = 1e308): then both bounds are halved first."""
    if -_HALF_MAX < lower and upper < _HALF_MAX:  # then upper - lower <= the largest float
        width = upper - lower
        return vmath.log(width), 1.0 / width
    half = 0.5 * upper - 0.5 * lower
    return vmath.log(half) + LOG_2, 0.5 / half


@jitable
def logpdf(x, lower, upper):
    """Normalized log density; ``-inf`` outside [lower, upper] or for upper <= lower."""
    if not _valid(x, lower, upper):
        return -math.inf
    return -_log_width(lower, upper)[0]


@kernel
def logpdf_grad(x, lower, upper, keep):
    """``(lp, d_x = 0, d_lower, d_upper)``; see ``distributions.spec`` for ``keep`` and
    why the checks pick a stand-in point instead of returning early.

    The density is flat in x; d/dlower = 1 / (upper - lower) = -d/dupper.
    """
    ok = _valid(x, lower, upper)
    lower = lower if ok else 0.0
    upper = upper if ok else 1.0
    lp = 0.0
    d_lower = 0.0
    if keep[0]:
        log_width, d_lower = _log_width(lower, upper)
        lp = -log_width
    if ok:
        return lp, 0.0, d_lower, -d_lower
    return -math.inf, 0.0, 0.0, 0.0


@jitable
def rvs(state, lower, upper):
    """One draw by inversion, lower + (upper - lower) U, U in (0, 1); as a
    weighted mean where upper - lower overflows."""
    u = random.uniform_open(state)
    width = upper - lower
    if width < math.inf:
        return min(lower + width * u, upper)
    return lower * (1.0 - u) + upper * u


SPEC = Spec(
    name="Uniform",
    params=(Param("lower", real), Param("upper", greater_than("lower"))),
    support=interval("lower", "upper", closed=True),
    summands=(
        Summand(("lower", "upper"), "-log(upper - lower)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Uniform(Distribution):
    __doc__ = __doc__
    spec = SPEC
