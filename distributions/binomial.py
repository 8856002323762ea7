"""Binomial distribution.

    log p(x | n, p) = lchoose(n, x) + x log(p) + (n - x) log(1 - p),   x = 0, 1, ..., n

Parameters: n a nonnegative integer (no partial), p in [0, 1]; the ends are
allowed and give exact point masses (``logpmf(n | n, p=1) = 0``).
scipy: ``scipy.stats.binom(n, p)``; Stan: ``binomial_lpmf(x | n, p)``.
"""

import math

from . import vmath
from .constraints import integer_interval, nonnegative_integer, unit_interval
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import lchoose


@jitable
def _zero_mass(x, n, p, x_valid):
    """Whether the mass is 0: invalid arguments, x off {0, ..., n} (unless
    ``x_valid``), or p at an end with the other outcome (x > 0 at p = 0, x < n
    at p = 1)."""
    if not (0.0 <= p <= 1.0) or not (n < math.inf) or n != math.floor(n):
        return True
    if not (x_valid or (0.0 <= x <= n and x == math.floor(x))):
        return True
    return (p == 0.0 and x > 0.0) or (p == 1.0 and x < n)


@jitable
def logpdf(x, n, p):
    """Normalized log mass; ``-inf`` off {0, ..., n} or for invalid parameters."""
    if _zero_mass(x, n, p, False):
        return -math.inf
    lp = lchoose(n, x)
    # A term whose count is 0 is 0 even where its log is -inf (xlogy convention).
    if x > 0.0:
        lp += x * vmath.log(p)
    if x < n:
        lp += (n - x) * vmath.log1p(-p)
    return lp


@kernel
def logpdf_grad(x, n, p, keep, x_valid=False):
    """``(lp, d_x = 0, d_n = 0, d_p)``; see ``distributions.spec`` for ``keep`` and ``x_valid``."""
    if _zero_mass(x, n, p, x_valid):
        return -math.inf, 0.0, 0.0, 0.0
    lp = 0.0
    d_p = 0.0
    if keep[0]:
        lp = lchoose(n, x)
    if keep[1]:
        # d/dp = x / p - (n - x) / (1 - p); a term with count 0 is absent, so
        # the partial stays finite at p = 0 (x = 0) and p = 1 (x = n).
        if x > 0.0:
            lp += x * vmath.log(p)
            d_p = x / p
        if x < n:
            lp += (n - x) * vmath.log1p(-p)
            d_p -= (n - x) / (1.0 - p)
    if lp == -math.inf:  # a summand overflowed (huge counts or parameters)
        return -math.inf, 0.0, 0.0, 0.0
    return lp, 0.0, 0.0, d_p


# Below this mean (n min(p, 1 - p)) draws are by inversion, from it on by BTRS.
_BTRS_MEAN = 10.0


@jitable
def _inversion(state, n, p):
    """Binomial(n, p), p <= 1/2, by sequential search of the CDF from 0 (BINV of
    Kachitvichyanukul & Schmeiser 1988), with f(k) / f(k - 1) = (n + 1 - k) p / (k q):
    O(n p) steps."""
    s = p / (1.0 - p)
    a = (n + 1.0) * s
    f = math.exp(n * math.log1p(-p))
    u = random.uniform(state)
    k = 0.0
    while u >= f and f > 0.0 and k < n:
        u -= f
        k += 1.0
        f *= a / k - s
    return k


@jitable
def _btrs(state, n, p):
    """Binomial(n, p), 1/2 >= p, n p >= 10, by transformed rejection with squeeze:
    BTRS of Hoermann (1993), "The generation of binomial random variates",
    J. Statist. Comput. Simul. 46; O(1) per draw. The acceptance bound
    log f(k) / f(m) (m the mode) is taken from ``special.lchoose``."""
    q = 1.0 - p
    spq = math.sqrt(n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    log_odds = math.log(p / q)
    m = math.floor((n + 1.0) * p)
    log_fm = lchoose(n, m)
    while True:
        u = random.uniform_open(state) - 0.5
        v = random.uniform_open(state)
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + c)
        if k < 0.0 or k > n:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        if v <= lchoose(n, k) - log_fm + (k - m) * log_odds:
            return k


@jitable
def small_p_rvs(state, n, p):
    """Binomial(n, p) for p <= 1/2: inversion for n p < 10, BTRS from there on."""
    if n * p < _BTRS_MEAN:
        return _inversion(state, n, p)
    return _btrs(state, n, p)


@jitable
def rvs(state, n, p):
    """One draw; for p > 1/2, n minus a draw of the failures (1 - p is exact there)."""
    if p <= 0.5:
        return small_p_rvs(state, n, p)
    return n - small_p_rvs(state, n, 1.0 - p)


SPEC = Spec(
    name="Binomial",
    params=(Param("n", nonnegative_integer), Param("p", unit_interval)),
    support=integer_interval(0.0, "n"),
    summands=(
        Summand(("x", "n"), "lchoose(n, x)"),
        Summand(("x", "n", "p"), "x log(p) + (n - x) log(1 - p)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class Binomial(Distribution):
    __doc__ = __doc__
    spec = SPEC
    logit_form = ("binomial_logit", "BinomialLogit", "logit_p")
