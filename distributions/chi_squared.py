"""Chi-squared distribution, a Gamma(df / 2, rate=1/2).

    log p(x | df) = (df/2 - 1) log(x) - x/2 - (df/2) log(2) - lgamma(df/2)

Support: x > 0. The point x = 0 is excluded because the density there is
infinite for df < 2 (and 0 for df > 2); the kernels return ``-inf`` at x = 0
for every df. Parameter: df > 0 (real, not only integers).
scipy: ``scipy.stats.chi2(df)``; Stan: ``chi_square_lpdf(x | df)``.

For large df (df/2 >= 10) the full density comes from Gamma's Stirling form
at shape df/2 and y = (x/2) / (df/2) = x / df, which does not cancel.
"""

import math

from . import vmath
from .constraints import positive
from .frozen import Distribution
from .gamma import LARGE_SHAPE, large_shape_log_density
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import LOG_2, digamma, lgamma_or_inf


@jitable
def _valid(x, df):
    return 0.0 < df < math.inf and 0.0 < x < math.inf


@jitable
def _ratio(x, df):
    """y = x / df, or 0 where the Stirling form does not apply."""
    if 0.5 * df < LARGE_SHAPE:
        return 0.0
    y = x / df
    return y if 1e-300 < y < 1e300 else 0.0


@jitable
def logpdf(x, df):
    """Normalized log density; ``-inf`` for x <= 0 or df <= 0."""
    if not _valid(x, df):
        return -math.inf
    half_df = 0.5 * df
    y = _ratio(x, df)
    if y > 0.0:
        lp = large_shape_log_density(half_df, y) - vmath.log(x)
    else:
        lp = (half_df - 1.0) * vmath.log(x) - 0.5 * x - (half_df * LOG_2 + lgamma_or_inf(half_df))
    # A huge df (or df / 2 underflowing to 0) overflows: a rejected point, never NaN.
    return lp if -math.inf < lp < math.inf else -math.inf


@jitable
def _grad_large_df(x, half_df, y):
    """The full density from the Stirling form with the summands' partials,
    computed as in ``logpdf_grad`` and in the same order."""
    log_x = vmath.log(x)
    lp = large_shape_log_density(half_df, y) - log_x
    if not (-math.inf < lp < math.inf):
        return -math.inf, 0.0, 0.0
    d_df = 0.5 * log_x - 0.5 * (LOG_2 + digamma(half_df))
    return lp, (half_df - 1.0) / x - 0.5, d_df


@kernel
def logpdf_grad(x, df, keep):
    """``(lp, d_x, d_df)``; see ``distributions.spec`` for ``keep``."""
    if not _valid(x, df):
        return -math.inf, 0.0, 0.0
    half_df = 0.5 * df
    if keep[0] and keep[1] and keep[2]:
        y = _ratio(x, df)
        if y > 0.0:
            return _grad_large_df(x, half_df, y)
    lp = 0.0
    d_x = 0.0
    d_df = 0.0
    if keep[0]:
        log_x = vmath.log(x)
        lp = (half_df - 1.0) * log_x
        d_x = (half_df - 1.0) / x
        d_df = 0.5 * log_x
    if keep[1]:
        lp -= 0.5 * x
        d_x -= 0.5
    if keep[2]:
        lp -= half_df * LOG_2 + lgamma_or_inf(half_df)
        d_df -= 0.5 * (LOG_2 + digamma(half_df))
    if not (-math.inf < lp < math.inf):
        return -math.inf, 0.0, 0.0
    return lp, d_x, d_df


@jitable
def rvs(state, df):
    """One draw: 2 G, G ~ Gamma(df / 2, 1)."""
    return 2.0 * random.gamma(state, 0.5 * df)


SPEC = Spec(
    name="ChiSquared",
    params=(Param("df", positive),),
    support=positive,
    summands=(
        Summand(("x", "df"), "(df/2 - 1) log(x)"),
        Summand(("x",), "-x/2"),
        Summand(("df",), "-(df/2) log(2) - lgamma(df/2)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class ChiSquared(Distribution):
    __doc__ = __doc__
    spec = SPEC
