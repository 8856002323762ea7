"""Dirichlet distribution: a random probability vector of length K.

    log p(x | alpha) = sum_i (alpha_i - 1) log x_i + lgamma(A) - sum_i lgamma(alpha_i),   A = sum_i alpha_i

Support: the open simplex, x_i > 0 with sum_i x_i = 1 within 1e-8 (Stan's
constraint tolerance). An entry 0 is excluded, as Beta excludes its ends:
there the density is infinite for alpha_i < 1, and the kernels return
``-inf`` at x_i = 0 for every alpha (scipy accepts x_i = 0 where
alpha_i >= 1). Parameters: alpha_i > 0 (the kernels return ``-inf`` for an
alpha_i below the smallest normal float or a sum A above 1e300). scipy:
``scipy.stats.dirichlet(alpha)``; Stan: ``dirichlet_lpdf(x | alpha)``.

Partials: d/dx_i = (alpha_i - 1) / x_i, d/dalpha_i = log x_i + digamma(A) -
digamma(alpha_i). The digamma difference is ``digamma_diff(alpha_i, R_i)``
with R_i = A - alpha_i, the sum of the other alphas, taken from prefix and
suffix sums rather than by subtraction: for alpha = (1e3, 1e-3) the
subtraction leaves R_0 with a relative error of 2e-11.

The two summands cancel for large alphas (both are ~A log A near the mode):
the value's absolute error is ~1e-16 times K A log A, as in scipy and Stan.
"""

import math

import numpy as np

from . import random, vmath
from .constraints import positive, simplex
from .frozen import InvalidArgumentError
from .jit import jitable, kernel
from .multivariate import MultivariateDistribution
from .spec import Param, Spec, Summand
from .special import SMALLEST_NORMAL, digamma_diff

# What the other simplex distributions share: the tolerance of a sum of 1 and
# the kernels' and the public checks of probability vectors.

#: How far the sum of a simplex may be from 1: Stan's ``CONSTRAINT_TOLERANCE``.
SIMPLEX_TOLERANCE = 1e-8
# Above this total concentration the value could overflow: |log x_i| <= 745
# and lgamma(A) ~ A log A stay below 1e303 for A <= 1e300.
_MAX_TOTAL = 1e300


@kernel
def on_open_simplex(x):
    """Whether every x_i > 0 and |sum x - 1| <= SIMPLEX_TOLERANCE (NaN fails)."""
    ok = True
    total = 0.0
    for i in range(x.size):
        ok &= x[i] > 0.0
        total += x[i]
    return ok and abs(total - 1.0) <= SIMPLEX_TOLERANCE


@kernel
def probabilities_ok(p):
    """Whether every 0 <= p_i <= 1 and |sum p - 1| <= SIMPLEX_TOLERANCE (NaN fails)."""
    ok = True
    total = 0.0
    for i in range(p.size):
        ok &= 0.0 <= p[i] <= 1.0
        total += p[i]
    return ok and abs(total - 1.0) <= SIMPLEX_TOLERANCE


@kernel
def concentrations_ok(alpha):
    """Whether every alpha_i >= SMALLEST_NORMAL and their sum <= _MAX_TOTAL.

    Below the smallest normal float digamma(alpha_i) ~ -1 / alpha_i overflows
    and the partials would be inf - inf: such concentrations are invalid.
    """
    ok = True
    total = 0.0
    for i in range(alpha.size):
        ok &= alpha[i] >= SMALLEST_NORMAL
        total += alpha[i]
    return ok and total <= _MAX_TOTAL


@jitable
def logpdf(x, alpha):
    """Normalized log density of one event; ``-inf`` off the open simplex or for invalid alpha."""
    if not (concentrations_ok(alpha) and on_open_simplex(x)):
        return -math.inf
    lp = 0.0
    total = 0.0
    for i in range(x.size):
        lp += (alpha[i] - 1.0) * vmath.log(x[i]) - math.lgamma(alpha[i])
        total += alpha[i]
    return lp + math.lgamma(total)


@kernel
def _add_normalizer(alpha, work, d_alpha):
    """lgamma(A) - sum_i lgamma(alpha_i); adds digamma(A) - digamma(alpha_i) into
    ``d_alpha``. ``work[i]`` holds the suffix sum alpha_{i+1} + ... + alpha_{K-1}."""
    k = alpha.size
    suffix = 0.0
    for i in range(k - 1, -1, -1):
        work[i] = suffix
        suffix += alpha[i]
    lp = math.lgamma(suffix)  # suffix is now A
    prefix = 0.0
    for i in range(k):
        lp -= math.lgamma(alpha[i])
        if d_alpha is not None:
            d_alpha[i] += digamma_diff(alpha[i], prefix + work[i])
        prefix += alpha[i]
    return lp


@kernel
def logpdf_grad(x, alpha, keep, work, d_x, d_alpha):
    """Log density of one event; partials added into ``d_*`` (see ``distributions.spec``).

    No summand can be -inf once the checks pass (x_i > 0, A <= 1e300), so the
    partials are added as the value is summed.
    """
    if not (concentrations_ok(alpha) and on_open_simplex(x)):
        return -math.inf
    lp = 0.0
    if keep[0]:
        for i in range(x.size):
            log_x = vmath.log(x[i])
            lp += (alpha[i] - 1.0) * log_x
            if d_x is not None:
                d_x[i] += (alpha[i] - 1.0) / x[i]
            if d_alpha is not None:
                d_alpha[i] += log_x
    if keep[1]:
        lp += _add_normalizer(alpha, work, d_alpha)
    return lp


@jitable
def rvs(state, alpha, out):
    """One draw: independent G_i ~ Gamma(alpha_i), x = G / sum G (Devroye 1986,
    "Non-Uniform Random Variate Generation", XI.4.1). The gammas are drawn as
    logs (``random.log_gamma``) and scaled by the largest before ``exp``, so
    that tiny alphas, whose gammas underflow, still give a vector summing to 1.
    Entries below 1e-308 round to 0 there, off the open simplex: at alpha_i =
    1e-3 most entries of a draw are that small, which float64 cannot hold."""
    k = out.size
    top = -math.inf
    for i in range(k):
        out[i] = random.log_gamma(state, alpha[i])
        top = max(top, out[i])
    total = 0.0
    for i in range(k):
        out[i] = math.exp(out[i] - top)
        total += out[i]
    for i in range(k):
        out[i] /= total


def check(x, lengths, known):
    """its entries must be positive and sum to 1 within 1e-8 (Stan's tolerance)"""
    x = np.asarray(x, dtype=float)
    return np.all(x > 0.0, axis=-1) & (np.abs(np.sum(x, axis=-1) - 1.0) <= SIMPLEX_TOLERANCE)


def _work(lengths):
    return lengths["k"]


def check_probability_vectors(dist, name, p):
    """Raise ``InvalidArgumentError`` naming the first event of ``p`` (shape batch
    + (K,)) whose sum is not 1 within ``SIMPLEX_TOLERANCE``; the entries'
    range is the elementwise check of the parameter's constraint."""
    sums = np.sum(p, axis=-1)
    bad = ~(np.abs(sums - 1.0) <= SIMPLEX_TOLERANCE)
    if np.any(bad):
        index = np.unravel_index(int(np.argmax(bad)), bad.shape)
        where = f"{name}[{', '.join(str(int(i)) for i in index)}]" if index else name
        raise InvalidArgumentError(f"{dist}: {where}={np.array2string(p[index], threshold=8)} sums to "
                                   f"{float(sums[index])!r}; a probability vector must sum to 1 "
                                   f"(within {SIMPLEX_TOLERANCE:g}, Stan's tolerance)")


SPEC = Spec(
    name="Dirichlet",
    params=(Param("alpha", positive),),
    support=simplex,
    summands=(
        Summand(("x", "alpha"), "sum((alpha - 1) log(x))"),
        Summand(("alpha",), "lgamma(sum(alpha)) - sum(lgamma(alpha))"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=(("k",), ("k",)),
    check=check,
    work=_work,
)


class Dirichlet(MultivariateDistribution):
    __doc__ = __doc__
    spec = SPEC
