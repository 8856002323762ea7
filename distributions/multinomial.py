"""Multinomial distribution: counts of n draws over K categories.

    log p(x | n, p) = lgamma(n + 1) - sum_i lgamma(x_i + 1) + sum_i x_i log p_i,
                      x_i = 0, 1, ..., with sum_i x_i = n

Support: vectors of K nonnegative integers summing to n. When data are set,
counts that do not sum to a fixed n are an error (``check``); with n a
model expression they give ``-inf`` from the kernels. Parameters: n a nonnegative integer
(no partial), p a probability vector (entries in [0, 1] summing to 1
within 1e-8, Stan's tolerance). A term with x_i = 0 is 0 even where p_i =
0 (0 log 0 = 0, as ``xlogy``); x_i > 0 at p_i = 0 has mass 0.
scipy: ``scipy.stats.multinomial(n, p)``; Stan: ``multinomial_lpmf(x | p)``
(n implied by x there).

Partials: d/dp_i = x_i / p_i (absent where x_i = 0, so finite at p_i = 0).
The lgamma difference cancels for large counts: its absolute error is
~1e-16 n log n, as in scipy.
"""

import math

import numpy as np

from . import binomial, vmath
from .constraints import nonnegative_integer, simplex
from .dirichlet import check_probability_vectors, probabilities_ok
from .jit import jitable, kernel
from .multivariate import MultivariateDistribution
from .spec import Param, Spec, Summand

# Counts up to here: lgamma(n + 1) <= 1.8e308 (as BetaBinomial's bound).
MAX_COUNT = 2.5e305


@kernel
def counts_ok(x, n):
    """Whether n is an integer in [0, MAX_COUNT] and x nonnegative integers summing to n."""
    if not (0.0 <= n <= MAX_COUNT and n % 1.0 == 0.0):
        return False
    ok = True
    total = 0.0
    for i in range(x.size):
        # x % 1 rather than math.floor: numba's floor returns an int64, wrong past 2**63
        ok &= 0.0 <= x[i] and x[i] % 1.0 == 0.0
        total += x[i]
    return ok and total == n


@kernel
def log_multinomial_coefficient(x, n):
    """lgamma(n + 1) - sum_i lgamma(x_i + 1), the log of n! / (x_0! ... x_{K-1}!)."""
    lp = math.lgamma(n + 1.0)
    for i in range(x.size):
        lp -= math.lgamma(x[i] + 1.0)
    return lp


@kernel
def _impossible(x, p):
    """Whether some x_i > 0 has p_i = 0 (mass 0)."""
    for i in range(x.size):
        if x[i] > 0.0 and p[i] == 0.0:
            return True
    return False


@kernel
def _log_likelihood(x, p):
    """sum_i x_i log p_i over the x_i > 0 (0 log 0 = 0)."""
    lp = 0.0
    for i in range(x.size):
        if x[i] > 0.0:
            lp += x[i] * vmath.log(p[i])
    return lp


@jitable
def logpdf(x, n, p):
    """Normalized log mass of one event; ``-inf`` off the support or for invalid parameters."""
    if not (counts_ok(x, n) and probabilities_ok(p)) or _impossible(x, p):
        return -math.inf
    return log_multinomial_coefficient(x, n) + _log_likelihood(x, p)


@kernel
def logpdf_grad(x, n, p, keep, work, d_x, d_n, d_p):
    """Log mass of one event; partials x_i / p_i added into ``d_p`` (``d_x`` and
    ``d_n`` are None: the value and n are integers). The value is summed
    before any partial is added, so that nothing is added where it is -inf."""
    if not (counts_ok(x, n) and probabilities_ok(p)) or _impossible(x, p):
        return -math.inf
    lp = 0.0
    if keep[0]:
        lp += log_multinomial_coefficient(x, n)
    if keep[1]:
        lp += _log_likelihood(x, p)
        if lp == -math.inf:  # x_i log p_i overflowed (counts ~1e305 at p_i ~ 1e-300)
            return -math.inf
        if d_p is not None:
            for i in range(x.size):
                if x[i] > 0.0:
                    d_p[i] += x[i] / p[i]
    return lp


@jitable
def rvs(state, n, p, out):
    """One draw by conditional binomials: x_i ~ Binomial(n - x_0 - ... - x_{i-1},
    p_i / (p_i + ... + p_{K-1})), the last category taking the rest
    (Devroye 1986, "Non-Uniform Random Variate Generation", XI.1.4). The
    suffix sums of p are built in ``out`` first, from the end, and replaced
    by the counts from the front."""
    k = out.size
    acc = 0.0
    for i in range(k - 1, -1, -1):
        acc += p[i]
        out[i] = acc
    rest = n
    for i in range(k - 1):
        tail = out[i]
        q = min(1.0, p[i] / tail) if tail > 0.0 else 0.0
        draw = binomial.rvs(state, rest, q) if rest > 0.0 else 0.0
        out[i] = draw
        rest -= draw
    out[k - 1] = rest


def check(x, lengths, known):
    """its counts must sum to n"""
    total = np.sum(np.asarray(x, dtype=float), axis=-1)
    return total == known["n"] if "n" in known else np.ones(np.shape(total), dtype=bool)


SPEC = Spec(
    name="Multinomial",
    params=(Param("n", nonnegative_integer), Param("p", simplex)),
    support=nonnegative_integer,
    summands=(
        Summand(("x", "n"), "lgamma(n + 1) - sum(lgamma(x + 1))"),
        Summand(("x", "p"), "sum(x log(p))"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=(("k",), (), ("k",)),
    check=check,
)


class Multinomial(MultivariateDistribution):
    __doc__ = __doc__
    spec = SPEC

    def _check_events(self):
        check_probability_vectors("Multinomial", "p", self.params["p"])
