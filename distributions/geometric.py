"""Geometric distribution: the number of failures before the first success.

    log p(x | p) = log(p) + x log(1 - p),   x = 0, 1, 2, ...

Parameters: p in (0, 1], the probability of success; p = 1 is the point
mass at 0 (``logpmf(0 | p=1) = 0``, -inf elsewhere).
scipy: ``scipy.stats.geom(p).logpmf(x + 1)`` (scipy counts trials, not
failures); Stan has no geometric; it is ``neg_binomial_lpmf(x | 1, p / (1 - p))``.
"""

import math

from . import vmath
from .constraints import Constraint, nonnegative_integer
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random

# p in (0, 1]: open at 0 (no success ever), closed at 1.
_PROBABILITY = Constraint("interval", 0.0, 1.0, False, True)


@jitable
def _zero_mass(x, p, x_valid):
    """Invalid p, x off the nonnegative integers (unless ``x_valid``), or x > 0 when p = 1."""
    if not (0.0 < p <= 1.0):
        return True
    if not (x_valid or (0.0 <= x < math.inf and x == math.floor(x))):
        return True
    return p == 1.0 and x > 0.0


@jitable
def logpdf(x, p):
    """Normalized log mass; ``-inf`` off the nonnegative integers or for p outside (0, 1]."""
    if _zero_mass(x, p, False):
        return -math.inf
    # x = 0 skips x log1p(-p), which is 0 * (-inf) at p = 1.
    return vmath.log(p) + (x * vmath.log1p(-p) if x > 0.0 else 0.0)


@kernel
def logpdf_grad(x, p, keep, x_valid=False):
    """``(lp, d_x = 0, d_p)``; see ``distributions.spec`` for ``keep``, ``x_valid``
    and why the checks pick a stand-in point instead of returning early."""
    ok = not _zero_mass(x, p, x_valid)
    x = x if ok else 0.0
    p = p if ok else 0.5
    lp = 0.0
    d_p = 0.0
    if keep[0]:
        lp = vmath.log(p)
        d_p = 1.0 / p
    if keep[1]:
        # x = 0 skips x log1p(-p), which is 0 * (-inf) at p = 1.
        lp += x * vmath.log1p(-p) if x > 0.0 else 0.0
        d_p -= x / (1.0 - p) if x > 0.0 else 0.0
    if ok and lp != -math.inf:  # -inf: a summand overflowed (huge counts or parameters)
        return lp, 0.0, d_p
    return -math.inf, 0.0, 0.0


@jitable
def rvs(state, p):
    """Failures before the first success, by inversion: floor(E / -log(1 - p)),
    E standard exponential (Devroye 1986, X.2)."""
    return math.floor(random.exponential(state) / -math.log1p(-p))


SPEC = Spec(
    name="Geometric",
    params=(Param("p", _PROBABILITY),),
    support=nonnegative_integer,
    summands=(
        Summand(("p",), "log(p)"),
        Summand(("x", "p"), "x log(1 - p)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class Geometric(Distribution):
    __doc__ = __doc__
    spec = SPEC
