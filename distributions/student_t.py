"""Student's t distribution with location and scale.

    log p(x | df, loc, scale) = lgamma((df + 1) / 2) - lgamma(df / 2) - log(df pi) / 2
                                - log(scale) - (df + 1) / 2 log(1 + z^2 / df),
    z = (x - loc) / scale

Support: x real. Parameters: df > 0 (degrees of freedom), loc real, scale > 0.
As df -> inf it tends to Normal(loc, scale); value and partials stay accurate
for huge df (checked against mpmath up to df = 1e20).
scipy: ``scipy.stats.t(df, loc, scale)``; Stan: ``student_t_lpdf(x | df, loc, scale)``.
"""

import math

from . import vmath
from .constraints import positive, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import (
    LOG_SQRT_PI, SMALLEST_NORMAL, half_step_digamma_excess, log1p_square, log_rising_factorial)


@jitable
def _valid(x, df, loc, scale):
    """Finite x and loc; df and scale from the smallest normal float up (below,
    df / 2 may round to 0 and lgamma(df / 2) be inf, and 1 / scale overflows)."""
    return (SMALLEST_NORMAL <= df < math.inf and SMALLEST_NORMAL <= scale < math.inf
            and math.isfinite(x) and math.isfinite(loc))


@jitable
def log1p_minus_ratio(t, log1p_u, ratio):
    """log1p(u) - u / (1 + u) for u = t^2, given both terms.

    They agree to first order, so for u < 0.01 the series
    sum_k>=2 (-1)^k (k - 1) / k u^k (to u^9, error 2e-16 relative) replaces
    the difference, which would lose a factor 1/u.
    """
    if abs(t) >= 0.1:
        return log1p_u - ratio
    u = t * t
    s = 0.0
    for k in range(9, 1, -1):
        s = (k - 1.0) / k - u * s
    return u * u * s


@jitable
def logpdf(x, df, loc, scale):
    """Normalized log density; ``-inf`` outside the support or for df, scale <= 0."""
    if not _valid(x, df, loc, scale):
        return -math.inf
    # lgamma((df+1)/2) - lgamma(df/2) as a rising factorial: both lgammas are
    # about (df/2) log(df/2) and would cancel catastrophically for huge df.
    log_norm = log_rising_factorial(0.5 * df, 0.5) - 0.5 * vmath.log(df)
    # z^2 / df = t^2 with t = z / sqrt(df), so the log1p never overflows.
    log1p_t2 = log1p_square((x - loc) / scale / math.sqrt(df))[0]
    return log_norm - LOG_SQRT_PI - vmath.log(scale) - 0.5 * (df + 1.0) * log1p_t2


@kernel
def logpdf_grad(x, df, loc, scale, keep):
    """``(lp, d_x, d_df, d_loc, d_scale)``; see ``distributions.spec`` for ``keep``."""
    if not _valid(x, df, loc, scale):
        return -math.inf, 0.0, 0.0, 0.0, 0.0
    inv_scale = 1.0 / scale
    sqrt_df = math.sqrt(df)
    lp = 0.0
    d_x = 0.0
    d_df = 0.0
    d_scale = 0.0
    if keep[0]:
        # d/d(df) [lgamma((df+1)/2) - lgamma(df/2) - log(df)/2]
        #   = (psi(df/2 + 1/2) - psi(df/2)) / 2 - 1 / (2 df), of order 1/df^2:
        # the cancelling 1/(2 df) is taken out inside half_step_digamma_excess.
        lp += log_rising_factorial(0.5 * df, 0.5) - 0.5 * vmath.log(df)
        d_df = 0.5 * half_step_digamma_excess(0.5 * df)
    if keep[1]:
        lp -= LOG_SQRT_PI
    if keep[2]:
        lp -= vmath.log(scale)
        d_scale = -inv_scale
    if keep[3]:
        # With t = z / sqrt(df), L = log(1 + t^2), r = t / (1 + t^2), q = t r:
        # dL/dz = 2 r / sqrt(df), dL/dscale = -2 q / scale, dL/ddf = -q / df,
        # so d/d(df) = ((df + 1) q / df - L) / 2 = (q / df - (L - q)) / 2,
        # where L - q ~ t^4 / 2 is formed without cancellation.
        half_df1 = 0.5 * (df + 1.0)
        t = (x - loc) / scale / sqrt_df
        log1p_t2, r, q = log1p_square(t)
        lp -= half_df1 * log1p_t2
        d_x = -2.0 * half_df1 * r / sqrt_df * inv_scale
        d_scale += 2.0 * half_df1 * q * inv_scale
        d_df += 0.5 * (q / df - log1p_minus_ratio(t, log1p_t2, q))
    if lp == -math.inf:  # an overflowing term: reject the point, zero partials
        return -math.inf, 0.0, 0.0, 0.0, 0.0
    return lp, d_x, d_df, -d_x, d_scale


@jitable
def standard_rvs(state, df):
    """A standard t draw: z / sqrt(V / df), z normal, V ~ chi2(df) = 2 Gamma(df / 2);
    sqrt(df / V) = exp((log(df / 2) - log G) / 2) in logs (a tiny df gives a
    G below the smallest double)."""
    half = 0.5 * df
    return random.normal(state) * math.exp(0.5 * (math.log(half) - random.log_gamma(state, half)))


@jitable
def rvs(state, df, loc, scale):
    """One draw: loc + scale t, t a standard t draw (normal over chi)."""
    return loc + scale * standard_rvs(state, df)


SPEC = Spec(
    name="StudentT",
    params=(Param("df", positive), Param("loc", real), Param("scale", positive)),
    support=real,
    summands=(
        Summand(("df",), "lgamma((df + 1) / 2) - lgamma(df / 2) - log(df) / 2"),
        Summand((), "-log(pi) / 2"),
        Summand(("scale",), "-log(scale)"),
        Summand(("x", "df", "loc", "scale"), "-(df + 1) / 2 log(1 + ((x - loc) / scale)**2 / df)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class StudentT(Distribution):
    __doc__ = __doc__
    spec = SPEC
