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
from . import random
from .special import LOG_SQRT_2PI, lgamma_stirling_diff, logmxp1

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


# Below this rate draws are by inversion (O(rate) steps), from it on by PTRS.
_PTRS_RATE = 10.0


@jitable
def _log_mass(k, rate):
    """log p(k | rate) for the rejection step; for k >= 10 in the Stirling form
    k logmxp1(rate / k) - log(k) / 2 - log(2 pi) / 2 - D(k) (D: Stirling's
    remainder), where k log(rate) - rate - lgamma(k + 1) would cancel (terms
    of 1e13 at rate 1e12)."""
    if k < 10.0:
        return logpdf(k, rate)
    return k * logmxp1(rate / k) - 0.5 * math.log(k) - LOG_SQRT_2PI - lgamma_stirling_diff(k)


@jitable
def _ptrs(state, rate):
    """Poisson(rate) for rate >= 10 by transformed rejection with squeeze: PTRS of
    Hoermann (1993), "The transformed rejection method for generating Poisson
    random variables", Insurance: Mathematics and Economics 12; O(1) per draw."""
    b = 0.931 + 2.53 * math.sqrt(rate)
    a = -0.059 + 0.02483 * b
    log_inv_alpha = math.log(1.1239 + 1.1328 / (b - 3.4))
    v_r = 0.9277 - 3.6224 / (b - 2.0)
    while True:
        u = random.uniform_open(state) - 0.5
        v = random.uniform_open(state)
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + rate + 0.43)
        if us >= 0.07 and v <= v_r:
            return k
        if k < 0.0 or (us < 0.013 and v > us):
            continue
        if math.log(v) + log_inv_alpha - math.log(a / (us * us) + b) <= _log_mass(k, rate):
            return k


@jitable
def rvs(state, rate):
    """One draw: sequential search of the CDF from 0 (inversion, Devroye 1986,
    X.3) below rate 10, PTRS from there on. A rate of 0 gives 0."""
    if rate >= _PTRS_RATE:
        return _ptrs(state, rate)
    u = random.uniform(state)
    p = math.exp(-rate)
    k = 0.0
    while u >= p and p > 0.0:  # p = 0 only after the mass left has rounded away
        u -= p
        k += 1.0
        p *= rate / k
    return k


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
    rvs=rvs,
    takes_x_valid=True,
)


class Poisson(Distribution):
    __doc__ = __doc__
    spec = SPEC
