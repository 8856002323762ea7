"""Hurdle Poisson distribution.

    p(0 | psi, rate) = 1 - psi
    p(x | psi, rate) = psi Poisson(x | rate) / (1 - exp(-rate))
                     = psi rate^x / (x! (exp(rate) - 1)),   x = 1, 2, ...

psi is the probability of a non-zero count (PyMC's name and meaning): the
count is 0 with probability 1 - psi, otherwise a zero-truncated
Poisson(rate). Unlike the zero-inflated Poisson every zero comes from the
hurdle. Parameters: psi in [0, 1] (psi = 0 is the point mass at 0, psi = 1
the zero-truncated Poisson), rate > 0 (a normal float: below 2.2e-308,
1 / rate overflows and the rate partial would be inf - inf).
scipy has no such class; the reference is ``log1p(-psi)`` at 0 and
``log(psi) + poisson.logpmf(x) - poisson.logsf(0)`` elsewhere. PyMC:
``HurdlePoisson(psi, mu)`` with mu = rate. Stan has no built-in; the User's
Guide's hurdle model writes theta = P(0) = 1 - psi.
"""

import math

from . import vmath
from .constraints import nonnegative_integer, positive, unit_interval
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from . import poisson
from .special import SMALLEST_NORMAL, log1mexp

_MAX_COUNT = 2.5e305  # lgamma(x + 1) and x log(x) overflow just above: treated as mass 0


@jitable
def _zero_mass(x, psi, rate, x_valid):
    """Invalid parameters, x above _MAX_COUNT, x off the nonnegative integers
    (unless ``x_valid``), x = 0 when psi = 1, or x > 0 when psi = 0."""
    if not (0.0 <= psi <= 1.0 and SMALLEST_NORMAL <= rate < math.inf) or not (x <= _MAX_COUNT):
        return True
    if not (x_valid or (0.0 <= x and x == math.floor(x))):
        return True
    return psi == 1.0 if x == 0.0 else psi == 0.0


@jitable
def log_expm1(a):
    """log(exp(a) - 1) for a > 0, the log of the zero-truncation's normalizer.

    exp(-a) / (1 - exp(-a)) = 1 / (exp(a) - 1), and log(exp(a) - 1) =
    a + log(1 - exp(-a)) = a + log1mexp(-a): log1mexp keeps its relative
    accuracy for tiny a (log(a)) and for large a (exp(a) overflows above 709,
    while the result is a to rounding).
    """
    return a + log1mexp(-a)


@jitable
def logpdf(x, psi, rate):
    """Normalized log mass; ``-inf`` off the nonnegative integers or for invalid parameters."""
    if _zero_mass(x, psi, rate, False):
        return -math.inf
    if x == 0.0:
        return vmath.log1p(-psi)
    return vmath.log(psi) + x * vmath.log(rate) - log_expm1(rate) - math.lgamma(x + 1.0)


@kernel
def logpdf_grad(x, psi, rate, keep, x_valid=False):
    """``(lp, d_x = 0, d_psi, d_rate)``; see ``distributions.spec`` for ``keep`` and ``x_valid``."""
    if _zero_mass(x, psi, rate, x_valid):
        return -math.inf, 0.0, 0.0, 0.0
    lp = 0.0
    d_psi = 0.0
    d_rate = 0.0
    if keep[0]:
        lp -= math.lgamma(x + 1.0)
    if keep[1]:
        lp += x * vmath.log(rate)
        d_rate += x / rate
    if keep[2] and x == 0.0:
        lp += vmath.log1p(-psi)
        d_psi = -1.0 / (1.0 - psi)
    elif keep[2]:
        # d/drate -log(exp(rate) - 1) = -1 / (1 - exp(-rate)) = 1 / expm1(-rate),
        # exact at both ends (-1 / rate for tiny rates, -1 for large ones). At
        # x = 1 it cancels against summand 1's x / rate for tiny rates, to
        # -1/2: kept as separate summands, the sum has an absolute error of
        # ~eps / rate (4e-8 relative at rate = 1e-8).
        lp += vmath.log(psi) - log_expm1(rate)
        d_psi = 1.0 / psi
        d_rate += 1.0 / math.expm1(-rate)
    if lp == -math.inf:  # a summand overflowed (huge counts)
        return -math.inf, 0.0, 0.0, 0.0
    return lp, 0.0, d_psi, d_rate


# Below this rate zero-truncated draws are by inversion, from it on by rejection.
_INVERSION_RATE = 1.0


@jitable
def zero_truncated_rvs(state, rate):
    """One draw of Poisson(rate) conditioned on being positive.

    Below rate 1, sequential search of the CDF from 1 (inversion, Devroye
    1986, X.3, as ``poisson.rvs``) with p(1) = rate / expm1(rate): fewer than
    1.6 steps on average. From rate 1 on, the rejection method (Devroye 1986,
    II.3) with Poisson(rate) as the proposal, accepted when positive: at
    most 1 / (1 - exp(-1)) = 1.58 proposals on average.
    """
    if rate >= _INVERSION_RATE:
        while True:
            k = poisson.rvs(state, rate)
            if k > 0.0:
                return k
    u = random.uniform(state)
    p = rate / math.expm1(rate) if rate > 0.0 else 1.0
    k = 1.0
    while u >= p and p > 0.0:  # p = 0 only after the mass left has rounded away
        u -= p
        k += 1.0
        p *= rate / k
    return k


@jitable
def rvs(state, psi, rate):
    """One draw: 0 with probability 1 - psi, else ``zero_truncated_rvs(rate)``."""
    if random.uniform(state) < psi:
        return zero_truncated_rvs(state, rate)
    return 0.0


SPEC = Spec(
    name="HurdlePoisson",
    params=(Param("psi", unit_interval), Param("rate", positive)),
    support=nonnegative_integer,
    summands=(
        Summand(("x",), "-lgamma(x + 1)"),
        Summand(("x", "rate"), "x log(rate)"),
        Summand(("x", "psi", "rate"), "log(1 - psi) if x == 0 else log(psi) - log(exp(rate) - 1)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class HurdlePoisson(Distribution):
    __doc__ = __doc__
    spec = SPEC
