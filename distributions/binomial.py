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
    takes_x_valid=True,
)


class Binomial(Distribution):
    __doc__ = __doc__
    spec = SPEC
