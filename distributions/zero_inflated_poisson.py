"""Zero-inflated Poisson distribution.

    p(0 | zi, rate) = zi + (1 - zi) exp(-rate)
    p(x | zi, rate) = (1 - zi) rate^x exp(-rate) / x!,   x = 1, 2, ...

zi is the probability of a structural zero: with probability zi the count is
0, otherwise it is Poisson(rate). Parameters: zi in [0, 1] (zi = 0 is
Poisson, zi = 1 the point mass at 0), rate > 0.
scipy has no such class; the reference is ``log(zi + (1 - zi) poisson.pmf(0))``
at 0 and ``log1p(-zi) + poisson.logpmf(x)`` elsewhere. Stan has no built-in;
it is the usual ``log_mix(zi, 0, poisson_lpmf(0 | rate))`` at 0.
"""

import math

from . import vmath
from .constraints import nonnegative_integer, positive, unit_interval
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from . import poisson
from .special import LOG_FLOAT_MAX, logaddexp

_MAX_COUNT = 2.5e305  # lgamma(x + 1) and x log(x) overflow just above: treated as mass 0


@jitable
def _zero_mass(x, zi, rate, x_valid):
    """Invalid parameters, x above _MAX_COUNT, x off the nonnegative integers
    (unless ``x_valid``), or x > 0 when zi = 1."""
    if not (0.0 <= zi <= 1.0 and 0.0 < rate < math.inf) or not (x <= _MAX_COUNT):
        return True
    if not (x_valid or (0.0 <= x and x == math.floor(x))):
        return True
    return zi == 1.0 and x > 0.0


@jitable
def log_p0(zi, rate):
    """log(zi + (1 - zi) exp(-rate)), the log mass at 0.

    It is log1p(t) with t = (1 - zi) expm1(-rate) in (-1, 0], exact while
    t > -1/2 (mass above 1/2; small rates included, where logaddexp would
    subtract two nearly equal logs). Below, the mass is the sum of the two
    positive terms zi and (1 - zi) exp(-rate): logaddexp of their logs.
    """
    t = (1.0 - zi) * math.expm1(-rate)
    if t > -0.5:
        return vmath.log1p(t)
    if zi == 0.0:
        return -rate
    return logaddexp(vmath.log(zi), vmath.log1p(-zi) - rate)


@jitable
def logpdf(x, zi, rate):
    """Normalized log mass; ``-inf`` off the nonnegative integers or for invalid parameters."""
    if _zero_mass(x, zi, rate, False):
        return -math.inf
    if x == 0.0:
        return log_p0(zi, rate)
    return vmath.log1p(-zi) + x * vmath.log(rate) - rate - math.lgamma(x + 1.0)


@kernel
def logpdf_grad(x, zi, rate, keep, x_valid=False):
    """``(lp, d_x = 0, d_zi, d_rate)``; see ``distributions.spec`` for ``keep`` and ``x_valid``."""
    if _zero_mass(x, zi, rate, x_valid):
        return -math.inf, 0.0, 0.0, 0.0
    lp = 0.0
    d_zi = 0.0
    d_rate = 0.0
    if keep[0]:
        lp -= math.lgamma(x + 1.0)
    if keep[1] and x == 0.0:
        # With p0 = exp(lp0): d/dzi = (1 - exp(-rate)) / p0, d/drate =
        # -(1 - zi) exp(-rate) / p0 = -(1 - zi) exp(-rate - lp0), whose exponent
        # is <= -log(1 - zi). 1 / p0 overflows only for zi < 1e-308 and
        # rate > 709, where the true partial exceeds the float range: inf.
        lp0 = log_p0(zi, rate)
        lp += lp0
        d_zi = -math.expm1(-rate) * vmath.exp(-lp0) if -lp0 <= LOG_FLOAT_MAX else math.inf
        d_rate = -(1.0 - zi) * vmath.exp(-rate - lp0)
    elif keep[1]:
        lp += vmath.log1p(-zi) + x * vmath.log(rate) - rate
        d_zi = -1.0 / (1.0 - zi)
        d_rate = x / rate - 1.0
    if lp == -math.inf:  # a summand overflowed (huge counts or parameters)
        return -math.inf, 0.0, 0.0, 0.0
    return lp, 0.0, d_zi, d_rate


@jitable
def rvs(state, zi, rate):
    """One draw of the mixture: 0 with probability zi, else Poisson(rate)."""
    if random.uniform(state) < zi:
        return 0.0
    return poisson.rvs(state, rate)


SPEC = Spec(
    name="ZeroInflatedPoisson",
    params=(Param("zi", unit_interval), Param("rate", positive)),
    support=nonnegative_integer,
    summands=(
        Summand(("x",), "-lgamma(x + 1)"),
        Summand(("x", "zi", "rate"),
                "log(zi + (1 - zi) exp(-rate)) if x == 0 else log(1 - zi) + x log(rate) - rate"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class ZeroInflatedPoisson(Distribution):
    __doc__ = __doc__
    spec = SPEC
