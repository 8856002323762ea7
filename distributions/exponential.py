"""Exponential distribution.

    log p(x | rate) = log(rate) - rate x

Support: x >= 0 (zero included: the density there is ``rate``, finite).
Parameter: rate > 0 (the inverse of scipy's scale).
scipy: ``scipy.stats.expon(scale=1 / rate)``; Stan: ``exponential_lpdf(x | rate)``.
"""

import math

from . import vmath
from .constraints import nonnegative, positive
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random


@jitable
def logpdf(x, rate):
    """Normalized log density; ``-inf`` for x < 0 or rate <= 0."""
    if not (0.0 < rate < math.inf and 0.0 <= x < math.inf):
        return -math.inf
    # rate * x may overflow to inf: then the value is -inf, as it should be.
    return vmath.log(rate) - rate * x


@kernel
def logpdf_grad(x, rate, keep):
    """``(lp, d_x, d_rate)``; see ``distributions.spec`` for ``keep``.

    At x = 0 ``d_x`` is the one-sided derivative, -rate.
    """
    if not (0.0 < rate < math.inf and 0.0 <= x < math.inf):
        return -math.inf, 0.0, 0.0
    lp = 0.0
    d_x = 0.0
    d_rate = 0.0
    if keep[0]:
        lp = vmath.log(rate)
        d_rate = 1.0 / rate
    if keep[1]:
        lp -= rate * x
        d_x = -rate
        d_rate -= x
    if not (lp > -math.inf):  # rate * x overflowed: a rejected point
        return -math.inf, 0.0, 0.0
    return lp, d_x, d_rate


@jitable
def rvs(state, rate):
    """One draw by inversion: -log(U) / rate."""
    return random.exponential(state) / rate


SPEC = Spec(
    name="Exponential",
    params=(Param("rate", positive),),
    support=nonnegative,
    summands=(
        Summand(("rate",), "log(rate)"),
        Summand(("x", "rate"), "-rate x"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Exponential(Distribution):
    __doc__ = __doc__
    spec = SPEC
