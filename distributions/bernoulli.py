"""Bernoulli distribution.

    log p(x | p) = x log(p) + (1 - x) log(1 - p),   x = 0, 1

Parameters: p in [0, 1]; the ends are allowed and give exact point masses
(``logpmf(1 | p=1) = 0``, ``logpmf(0 | p=1) = -inf``).
scipy: ``scipy.stats.bernoulli(p)``; Stan: ``bernoulli_lpmf(x | p)``.
"""

import math

from . import vmath
from .constraints import integer_interval, unit_interval
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random


@jitable
def logpdf(x, p):
    """Normalized log mass; ``-inf`` off {0, 1} or for p outside [0, 1]."""
    if not (0.0 <= p <= 1.0):
        return -math.inf
    # Only one of the two terms is present, so log(0) is taken only where
    # the mass is 0 and is written as -inf explicitly.
    if x == 1.0:
        return vmath.log(p) if p > 0.0 else -math.inf
    if x == 0.0:
        return vmath.log1p(-p) if p < 1.0 else -math.inf
    return -math.inf


@kernel
def logpdf_grad(x, p, keep):
    """``(lp, d_x = 0, d_p)``; see ``distributions.spec`` for ``keep`` and
    why the checks pick a stand-in point instead of returning early."""
    ok = 0.0 <= p <= 1.0 and ((x == 1.0 and p > 0.0) or (x == 0.0 and p < 1.0))
    p = p if ok else 0.5
    lp = 0.0
    d_p = 0.0
    if keep[0]:
        lp = vmath.log(p) if x == 1.0 else vmath.log1p(-p)
        d_p = 1.0 / p if x == 1.0 else -1.0 / (1.0 - p)
    if ok:
        return lp, 0.0, d_p
    return -math.inf, 0.0, 0.0


@jitable
def rvs(state, p):
    """One draw: 1 if U < p (U with 53 random bits)."""
    return 1.0 if random.uniform(state) < p else 0.0


SPEC = Spec(
    name="Bernoulli",
    params=(Param("p", unit_interval),),
    support=integer_interval(0.0, 1.0),
    summands=(
        Summand(("x", "p"), "x log(p) + (1 - x) log(1 - p)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Bernoulli(Distribution):
    __doc__ = __doc__
    spec = SPEC
    logit_form = ("bernoulli_logit", "BernoulliLogit", "logit_p")
