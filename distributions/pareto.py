"""Pareto distribution (type I).

    log p(x | alpha, scale) = log(alpha) + alpha log(scale / x) - log(x)

Support: x >= scale (x = scale included, where the density is alpha / scale).
Parameters: alpha > 0 (the tail index), scale > 0 (the minimum value).
scipy: ``scipy.stats.pareto(b=alpha, scale=scale)``;
Stan: ``pareto_lpdf(x | scale, alpha)`` (note Stan's argument order).

Stan splits ``alpha log(scale) - (alpha + 1) log(x)``; here the two logarithms
are taken as one ratio, ``log(scale / x) <= 0``, which does not cancel when x
and scale are both large, and ``-log(x)`` is a data-only summand.
"""

import math

from . import vmath
from .constraints import greater_than, positive
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import log_ratio


@jitable
def _valid(x, alpha, scale):
    return 0.0 < alpha < math.inf and 0.0 < scale <= x < math.inf


@jitable
def logpdf(x, alpha, scale):
    """Normalized log density; ``-inf`` for x < scale or a parameter <= 0."""
    if not _valid(x, alpha, scale):
        return -math.inf
    return vmath.log(alpha) + alpha * log_ratio(scale, x) - vmath.log(x)


@kernel
def logpdf_grad(x, alpha, scale, keep):
    """``(lp, d_x, d_alpha, d_scale)``; see ``distributions.spec`` for ``keep`` and
    why the checks pick a stand-in point instead of returning early.

    At x = scale the partials in x and scale are one-sided.
    """
    ok = _valid(x, alpha, scale)
    x = x if ok else 1.0
    alpha = alpha if ok else 1.0
    scale = scale if ok else 1.0
    lp = 0.0
    d_x = 0.0
    d_alpha = 0.0
    d_scale = 0.0
    if keep[0]:
        lp = vmath.log(alpha)
        d_alpha = 1.0 / alpha
    if keep[1]:
        log_scale_over_x = log_ratio(scale, x)
        lp += alpha * log_scale_over_x
        d_x = -alpha / x
        d_alpha += log_scale_over_x
        d_scale = alpha / scale
    if keep[2]:
        lp -= vmath.log(x)
        d_x -= 1.0 / x
    if ok and lp > -math.inf:  # -inf: alpha log(scale / x) overflowed, a rejected point
        return lp, d_x, d_alpha, d_scale
    return -math.inf, 0.0, 0.0, 0.0


@jitable
def rvs(state, alpha, scale):
    """One draw by inversion: scale U^(-1/alpha) = scale exp(E / alpha), E standard exponential."""
    return scale * math.exp(random.exponential(state) / alpha)


SPEC = Spec(
    name="Pareto",
    params=(Param("alpha", positive), Param("scale", positive)),
    support=greater_than("scale", closed=True),
    summands=(
        Summand(("alpha",), "log(alpha)"),
        Summand(("x", "alpha", "scale"), "alpha log(scale / x)"),
        Summand(("x",), "-log(x)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Pareto(Distribution):
    __doc__ = __doc__
    spec = SPEC
