"""Poisson distribution.

    log p(x | rate) = x log(rate) - rate - lgamma(x + 1),   x = 0, 1, 2, ...

Parameters: rate > 0 (rate = 0 is the point mass at 0 and is not allowed).
scipy: ``scipy.stats.poisson(rate)``; Stan: ``poisson_lpmf(x | rate)``.
"""

import math

from . import vmath
from .constraints import nonnegative_integer, positive
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand

_MAX_COUNT = 2.5e305  # lgamma(x + 1) overflows just above: such counts have mass 0


@jitable
def logpdf(x, rate):
    """Normalized log mass; ``-inf`` off the nonnegative integers or for rate <= 0."""
    if not (0.0 < rate < math.inf) or not (0.0 <= x <= _MAX_COUNT) or x != math.floor(x):
        return -math.inf
    return x * vmath.log(rate) - rate - math.lgamma(x + 1.0)


@kernel
def logpdf_grad(x, rate, keep, x_valid=False):
    """``(lp, d_x = 0, d_rate)``; see ``distributions.spec`` for ``keep``, ``x_valid``
    and why the checks pick a stand-in point instead of returning early."""
    ok = 0.0 < rate < math.inf and x <= _MAX_COUNT
    ok = ok and (x_valid or (0.0 <= x and x == math.floor(x)))
    x = x if ok else 0.0
    rate = rate if ok else 1.0
    lp = 0.0
    d_rate = 0.0
    if keep[0]:
        lp = x * vmath.log(rate) - rate
        d_rate = x / rate - 1.0
    if keep[1]:
        lp -= math.lgamma(x + 1.0)
    if ok:
        return lp, 0.0, d_rate
    return -math.inf, 0.0, 0.0


SPEC = Spec(
    name="Poisson",
    params=(Param("rate", positive),),
    support=nonnegative_integer,
    summands=(
        Summand(("x", "rate"), "x log(rate) - rate"),
        Summand(("x",), "-lgamma(x + 1)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    takes_x_valid=True,
)


class Poisson(Distribution):
    __doc__ = __doc__
    spec = SPEC
