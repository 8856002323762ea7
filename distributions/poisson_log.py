"""Poisson distribution on the log scale.

    log p(x | log_rate) = x log_rate - exp(log_rate) - lgamma(x + 1),   x = 0, 1, 2, ...

Parameters: log_rate real (rate = exp(log_rate)). Where exp(log_rate)
overflows (log_rate > log(max float) ~ 709.78) every representable count
has mass 0 in float64 and the kernels return -inf instead of evaluating
inf - inf; below that the formula is evaluated as written.
scipy: ``scipy.stats.poisson(exp(log_rate))``; Stan: ``poisson_log_lpmf(x | log_rate)``.
"""

import math

from . import vmath
from .constraints import nonnegative_integer, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import poisson
from .special import LOG_FLOAT_MAX

_MAX_COUNT = 2.5e305  # lgamma(x + 1) and x log(x) overflow just above: treated as mass 0


@jitable
def _outside(x, log_rate, x_valid):
    """Invalid or overflowing log rate, x above _MAX_COUNT, or (unless ``x_valid``)
    x off the nonnegative integers."""
    if not (-math.inf < log_rate <= LOG_FLOAT_MAX) or not (x <= _MAX_COUNT):
        return True
    return not (x_valid or (0.0 <= x and x == math.floor(x)))


@jitable
def logpdf(x, log_rate):
    """Normalized log mass; ``-inf`` off the nonnegative integers or for an invalid log rate."""
    if _outside(x, log_rate, False):
        return -math.inf
    return x * log_rate - vmath.exp(log_rate) - math.lgamma(x + 1.0)


@kernel
def logpdf_grad(x, log_rate, keep, x_valid=False):
    """``(lp, d_x = 0, d_log_rate)``; see ``distributions.spec`` for ``keep`` and ``x_valid``."""
    if _outside(x, log_rate, x_valid):
        return -math.inf, 0.0, 0.0
    lp = 0.0
    d_log_rate = 0.0
    if keep[0]:
        rate = vmath.exp(log_rate)
        lp = x * log_rate - rate
        d_log_rate = x - rate
    if keep[1]:
        lp -= math.lgamma(x + 1.0)
    if lp == -math.inf:  # a summand overflowed (huge counts or parameters)
        return -math.inf, 0.0, 0.0
    return lp, 0.0, d_log_rate


@jitable
def rvs(state, log_rate):
    """One draw of Poisson(exp(log_rate)) (``poisson.rvs``)."""
    return poisson.rvs(state, math.exp(log_rate))


SPEC = Spec(
    name="PoissonLog",
    params=(Param("log_rate", real),),
    support=nonnegative_integer,
    summands=(
        Summand(("x", "log_rate"), "x log_rate - exp(log_rate)"),
        Summand(("x",), "-lgamma(x + 1)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class PoissonLog(Distribution):
    __doc__ = __doc__
    spec = SPEC
