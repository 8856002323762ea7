"""Beta-binomial distribution: a binomial count whose p is Beta(alpha, beta).

    log p(x | n, alpha, beta) = lchoose(n, x) + lbeta(x + alpha, n - x + beta) - lbeta(alpha, beta),
                                x = 0, 1, ..., n

Parameters: n a nonnegative integer (no partial), alpha > 0, beta > 0.
The difference of the two lbeta terms is evaluated as rising factorials,

    lbeta(x + alpha, n - x + beta) - lbeta(alpha, beta)
        = lrf(alpha, x) + lrf(beta, n - x) - lrf(alpha + beta, n),
    lrf(a, k) = lgamma(a + k) - lgamma(a),

which never forms the two lbeta values themselves: at alpha, beta ~ 1e8 each
is ~ -1e8 while their difference is O(n log 2), so the lbeta form would lose
eight digits; each lrf is O(k log a) and ``log_rising_factorial`` keeps it
accurate for huge a. The three are separate summands (each depends on fewer
arguments than the whole) and their partials are ``digamma_diff`` terms.
scipy: ``scipy.stats.betabinom(n, alpha, beta)``; Stan: ``beta_binomial_lpmf(x | n, alpha, beta)``.
"""

import math

from .constraints import integer_interval, nonnegative_integer, positive
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .binomial import small_p_rvs
from .special import logistic
from .special import SMALLEST_NORMAL, digamma_diff, lchoose, log_rising_factorial

_MAX_COUNT = 2.5e305  # above, lrf(a, n) ~ n log(a + n) overflows and the sum is inf - inf


@jitable
def _outside(x, n, alpha, beta, x_valid):
    """Invalid parameters (n above _MAX_COUNT included) or (unless ``x_valid``) x
    off {0, ..., n}.

    Below the smallest normal float digamma_diff(alpha, x) ~ 1 / alpha
    overflows and the partials would be inf - inf: such shapes are invalid.
    """
    if not (SMALLEST_NORMAL <= alpha < math.inf and SMALLEST_NORMAL <= beta < math.inf):
        return True
    if not (n <= _MAX_COUNT) or n != math.floor(n):
        return True
    return not (x_valid or (0.0 <= x <= n and x == math.floor(x)))


@jitable
def logpdf(x, n, alpha, beta):
    """Normalized log mass; ``-inf`` off {0, ..., n} or for invalid parameters."""
    if _outside(x, n, alpha, beta, False):
        return -math.inf
    return (lchoose(n, x) + log_rising_factorial(alpha, x) + log_rising_factorial(beta, n - x)
            - log_rising_factorial(alpha + beta, n))


@kernel
def logpdf_grad(x, n, alpha, beta, keep, x_valid=False):
    """``(lp, d_x = 0, d_n = 0, d_alpha, d_beta)``; see ``distributions.spec`` for ``keep`` and ``x_valid``."""
    if _outside(x, n, alpha, beta, x_valid):
        return -math.inf, 0.0, 0.0, 0.0, 0.0
    lp = 0.0
    d_alpha = 0.0
    d_beta = 0.0
    # d lrf(a, k) / da = digamma(a + k) - digamma(a) = digamma_diff(a, k).
    if keep[0]:
        lp = lchoose(n, x)
    if keep[1]:
        lp += log_rising_factorial(alpha, x)
        d_alpha = digamma_diff(alpha, x)
    if keep[2]:
        lp += log_rising_factorial(beta, n - x)
        d_beta = digamma_diff(beta, n - x)
    if keep[3]:
        lp -= log_rising_factorial(alpha + beta, n)
        d_total = digamma_diff(alpha + beta, n)
        d_alpha -= d_total
        d_beta -= d_total
    if lp == -math.inf:  # a summand overflowed (huge counts or parameters)
        return -math.inf, 0.0, 0.0, 0.0, 0.0
    return lp, 0.0, 0.0, d_alpha, d_beta


@jitable
def rvs(state, n, alpha, beta):
    """One draw of the mixture: Binomial(n, P), P ~ Beta(alpha, beta) from two
    gammas in logs (``beta.rvs``); the smaller of P and 1 - P is formed directly."""
    d = random.log_gamma(state, alpha) - random.log_gamma(state, beta)
    if d <= 0.0:
        return small_p_rvs(state, n, logistic(d))
    return n - small_p_rvs(state, n, logistic(-d))


SPEC = Spec(
    name="BetaBinomial",
    params=(Param("n", nonnegative_integer), Param("alpha", positive), Param("beta", positive)),
    support=integer_interval(0.0, "n"),
    summands=(
        Summand(("x", "n"), "lchoose(n, x)"),
        Summand(("x", "alpha"), "lgamma(x + alpha) - lgamma(alpha)"),
        Summand(("x", "n", "beta"), "lgamma(n - x + beta) - lgamma(beta)"),
        Summand(("n", "alpha", "beta"), "-(lgamma(n + alpha + beta) - lgamma(alpha + beta))"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class BetaBinomial(Distribution):
    __doc__ = __doc__
    spec = SPEC
