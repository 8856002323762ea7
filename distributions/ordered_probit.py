"""Ordered probit distribution of a category.

    P(x = k | eta, c) = Phi(c_k - eta) - Phi(c_{k-1} - eta),   k = 0, ..., K - 1,

with c_{-1} = -inf and c_{K-1} = +inf: P(0) = Phi(c_0 - eta),
P(K - 1) = Phi(eta - c_{K-2}); Phi is the standard normal CDF.

Support: x in {0, ..., K - 1} (0-based: Stan's y - 1), K = len(cutpoints) + 1.
Parameters: ``eta`` real (the linear predictor), ``cutpoints`` c finite and
strictly increasing. Stan: ``ordered_probit_lpmf(x + 1 | eta, c)``; scipy
has none.

The logs come from ``special``: ``log_ndtr`` at the ends and, inside,
``log_diff_ndtr(a, b)`` = log(Phi(b) - Phi(a)) with a = c_{k-1} - eta,
b = c_k - eta, accurate deep in either tail (a = 30, b = 31), where
Phi(b) - Phi(a) computed directly would be 0 or all rounding. The gap b - a
of close cutpoints carries the rounding of a and b, eps |eta| (the logistic
version takes the gap from the cutpoints themselves; ``log_diff_ndtr``
takes only a and b).

Partials, interior k, with p_a = phi(a) / P and p_b = phi(b) / P (each
exp(log phi - log P), finite where P underflows): d/dc_{k-1} = -p_a,
d/dc_k = p_b, d/deta = p_a - p_b = -p_a expm1((a - b)(a + b) / 2), the last
form where the two nearly cancel (close cutpoints: both ~ 1 / (b - a)). At
the ends the inverse Mills ratio ``dlog_ndtr``: P(0): d/dc_0 = -d/deta =
dlog_ndtr(b); P(K - 1): d/deta = -d/dc_{K-2} = dlog_ndtr(-a).
"""

import math

from . import random, vmath
from .constraints import nonnegative_integer, ordered, real
from .jit import jitable, kernel
from .multivariate import MultivariateDistribution
from .ordered_logistic import check, check_cutpoints, valid_arguments
from .spec import Param, Spec, Summand
from .special import LOG_SQRT_2PI, dlog_ndtr, log_diff_ndtr, log_ndtr


@kernel
def _log_mass(k, eta, cutpoints):
    """log P(x = k) (see the module docstring); k an int, the arguments valid."""
    n = cutpoints.size
    if n == 0:
        return 0.0
    if k == 0:
        return log_ndtr(cutpoints[0] - eta)
    if k == n:
        return log_ndtr(eta - cutpoints[n - 1])
    return log_diff_ndtr(cutpoints[k - 1] - eta, cutpoints[k] - eta)


@jitable
def logpdf(x, eta, cutpoints):
    """Normalized log mass; ``-inf`` off 0..K-1 or for cutpoints not increasing."""
    if not valid_arguments(x, eta, cutpoints):
        return -math.inf
    return _log_mass(int(x), eta, cutpoints)


@kernel
def _interior_partials(lp, a, b, gap):
    """``(p_a, p_b, p_a - p_b)`` of an interior category (module docstring); ``gap``
    = c_k - c_{k-1} = b - a, exact."""
    p_a = vmath.exp(-0.5 * a * a - LOG_SQRT_2PI - lp)
    p_b = vmath.exp(-0.5 * b * b - LOG_SQRT_2PI - lp)
    # phi(b) / phi(a) = exp((a - b)(a + b) / 2): near 1 the difference cancels
    e = -0.5 * gap * (a + b)
    if abs(e) < 1.0:
        return p_a, p_b, -p_a * math.expm1(e)
    return p_a, p_b, p_a - p_b


@kernel
def logpdf_grad(x, eta, cutpoints, keep, work, d_x, d_eta, d_cutpoints):
    """Log mass of one value; partials added into ``d_*`` (see ``distributions.spec``)."""
    if not valid_arguments(x, eta, cutpoints):
        return -math.inf
    if not keep[0]:
        return 0.0
    k = int(x)
    n = cutpoints.size
    lp = _log_mass(k, eta, cutpoints)
    if lp == -math.inf or n == 0:  # -inf: cutpoints closer than eta's rounding
        return lp
    if k == 0:
        g = dlog_ndtr(cutpoints[0] - eta)
        g_lo, g_hi, g_eta = 0.0, g, -g
    elif k == n:
        g = dlog_ndtr(eta - cutpoints[n - 1])
        g_lo, g_hi, g_eta = g, 0.0, g
    else:
        g_lo, g_hi, g_eta = _interior_partials(lp, cutpoints[k - 1] - eta, cutpoints[k] - eta,
                                               cutpoints[k] - cutpoints[k - 1])
    if d_eta is not None:
        d_eta[0] += g_eta
    if d_cutpoints is not None:
        if k > 0:
            d_cutpoints[k - 1] -= g_lo
        if k < n:
            d_cutpoints[k] += g_hi
    return lp


@jitable
def rvs(state, eta, cutpoints, out):
    """One draw from the latent form (McCullagh 1980, "Regression models for
    ordinal data"): the number of cutpoints below eta + e, e standard normal."""
    latent = eta + random.normal(state)
    count = 0
    for k in range(cutpoints.size):
        if cutpoints[k] < latent:
            count += 1
    out[0] = count


SPEC = Spec(
    name="OrderedProbit",
    params=(Param("eta", real), Param("cutpoints", ordered)),
    support=nonnegative_integer,
    summands=(Summand(("x", "eta", "cutpoints"), "log(Phi(c_x - eta) - Phi(c_{x-1} - eta))"),),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=((), (), ("c",)),
    check=check,
)


class OrderedProbit(MultivariateDistribution):
    __doc__ = __doc__
    spec = SPEC

    def _check_events(self):
        check_cutpoints("OrderedProbit", self.params["cutpoints"])
