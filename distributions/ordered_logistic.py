"""Ordered logistic (proportional odds) distribution of a category.

    P(x = k | eta, c) = logistic(eta - c_{k-1}) - logistic(eta - c_k),   k = 0, ..., K - 1,

with c_{-1} = -inf and c_{K-1} = +inf: P(0) = logistic(c_0 - eta),
P(K - 1) = logistic(eta - c_{K-2}).

Support: x in {0, ..., K - 1} (0-based: Stan's y - 1), K = len(cutpoints) + 1.
Parameters: ``eta`` real (the linear predictor), ``cutpoints`` c finite and
strictly increasing. Stan: ``ordered_logistic_lpmf(x + 1 | eta, c)``;
NumPyro: ``OrderedLogistic(predictor, cutpoints)``; scipy has none.

The log is taken as in Stan Math's ``log_inv_logit_diff``: with
a = eta - c_{k-1} > b = eta - c_k,

    logistic(a) - logistic(b) = e^a (1 - e^(b - a)) / ((1 + e^a) (1 + e^b)),
    log P = log_logistic(a) + log_logistic(-b) + log1mexp(c_{k-1} - c_k),

each term accurate in both tails (P = 1e-300 far from the cutpoints stays
finite), and the gap of the cutpoints taken as their own difference, not as
b - a, which loses it when eta is large.

Partials, interior k: d/deta = logistic(-a) - logistic(b),
d/dc_{k-1} = -logistic(-a) - 1 / expm1(c_k - c_{k-1}),
d/dc_k = logistic(b) + 1 / expm1(c_k - c_{k-1}); at the ends only the term
of the cutpoint that exists: P(0): d/deta = -logistic(b), d/dc_0 = logistic(b);
P(K - 1): d/deta = logistic(-a), d/dc_{K-2} = -logistic(-a). They sum to 0
(a shift of eta and every cutpoint changes nothing).
"""

import math

import numpy as np

from . import random, vmath
from .constraints import nonnegative_integer, ordered, real
from .frozen import InvalidArgumentError
from .jit import jitable, kernel
from .multivariate import MultivariateDistribution
from .spec import Param, Spec, Summand
from .special import log1mexp, log_logistic, logistic, logit


@kernel
def valid_arguments(x, eta, cutpoints):
    """eta finite, cutpoints finite and strictly increasing, x one of 0..K-1 (also
    OrderedProbit's arguments)."""
    n = cutpoints.size
    ok = math.isfinite(eta) and 0.0 <= x <= n and x == math.floor(x)
    for k in range(n):
        ok &= math.isfinite(cutpoints[k])
    for k in range(1, n):
        ok &= cutpoints[k - 1] < cutpoints[k]
    return ok


@kernel
def _log_mass(k, eta, cutpoints):
    """log P(x = k) (see the module docstring); k an int, the arguments valid."""
    n = cutpoints.size
    if n == 0:
        return 0.0
    if k == 0:
        return log_logistic(cutpoints[0] - eta)
    if k == n:
        return log_logistic(eta - cutpoints[n - 1])
    return (log_logistic(eta - cutpoints[k - 1]) + log_logistic(cutpoints[k] - eta)
            + log1mexp(cutpoints[k - 1] - cutpoints[k]))


@jitable
def logpdf(x, eta, cutpoints):
    """Normalized log mass; ``-inf`` off 0..K-1 or for cutpoints not increasing."""
    if not valid_arguments(x, eta, cutpoints):
        return -math.inf
    return _log_mass(int(x), eta, cutpoints)


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
    if lp == -math.inf:  # cutpoints closer than eta's rounding
        return lp
    # g_lo: d/deta of log_logistic(eta - c_{k-1}); g_hi: -d/deta of log_logistic(c_k - eta)
    g_lo = logistic(cutpoints[k - 1] - eta) if k > 0 else 0.0
    g_hi = logistic(eta - cutpoints[k]) if k < n else 0.0
    if d_eta is not None:
        d_eta[0] += g_lo - g_hi
    if d_cutpoints is not None:
        gap = 0.0
        if 0 < k < n:  # d/dc_k log1mexp(c_{k-1} - c_k) = 1 / expm1(g), g = c_k - c_{k-1} > 0,
            g = cutpoints[k] - cutpoints[k - 1]  # as e^-g / (1 - e^-g): no overflow for g > 709
            gap = vmath.exp(-g) / -math.expm1(-g)
        if k > 0:
            d_cutpoints[k - 1] -= g_lo + gap
        if k < n:
            d_cutpoints[k] += g_hi + gap
    return lp


@jitable
def rvs(state, eta, cutpoints, out):
    """One draw from the latent form (McCullagh 1980, "Regression models for
    ordinal data"): the number of cutpoints below eta + e, e ~ Logistic(0, 1)
    by inversion, logit(U)."""
    latent = eta + logit(random.uniform_open(state))
    count = 0
    for k in range(cutpoints.size):
        if cutpoints[k] < latent:
            count += 1
    out[0] = count


def check(x, lengths, known):
    """x is below K = len(cutpoints) + 1, the number of categories"""
    return np.asarray(x, dtype=float) < lengths["c"] + 1


SPEC = Spec(
    name="OrderedLogistic",
    params=(Param("eta", real), Param("cutpoints", ordered)),
    support=nonnegative_integer,
    summands=(Summand(("x", "eta", "cutpoints"), "log(logistic(eta - c_{x-1}) - logistic(eta - c_x))"),),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=((), (), ("c",)),
    check=check,
)


def check_cutpoints(name, cutpoints):
    """An ``InvalidArgumentError`` naming distribution ``name`` unless ``cutpoints``
    has at least one entry and each event increases strictly (also OrderedProbit's)."""
    if cutpoints.shape[-1] == 0:
        raise InvalidArgumentError(f"{name}: cutpoints is empty; it needs at least one entry "
                                   "(K - 1 cutpoints for K categories)")
    steps = np.diff(cutpoints, axis=-1)
    bad = ~(steps > 0)
    if np.any(bad):
        index = np.unravel_index(int(np.argmax(bad)), bad.shape)
        after = index[:-1] + (index[-1] + 1,)
        at = ", ".join(str(int(i)) for i in after)
        raise InvalidArgumentError(f"{name}: cutpoints[{at}]={cutpoints[after].item()!r} is not above the "
                                   f"cutpoint before it, {cutpoints[index].item()!r}: cutpoints must "
                                   "increase strictly")


class OrderedLogistic(MultivariateDistribution):
    __doc__ = __doc__
    spec = SPEC

    def _check_events(self):
        check_cutpoints("OrderedLogistic", self.params["cutpoints"])
