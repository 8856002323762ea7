"""Binomial distribution on the logit scale.

    log p(x | n, logit_p) = lchoose(n, x) + x log(sigmoid(logit_p)) + (n - x) log(sigmoid(-logit_p))

Support: x = 0, 1, ..., n. Parameters: n a nonnegative integer (no partial),
logit_p real (p = sigmoid(logit_p)). Both logs are ``log_logistic``, exact at
any finite logit (+-800 included).
scipy: ``scipy.stats.binom(n, scipy.special.expit(logit_p))``;
Stan: ``binomial_logit_lpmf(x | n, logit_p)``.
"""

import math

from . import vmath
from .constraints import integer_interval, nonnegative_integer, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from .binomial import small_p_rvs
from .special import logistic
from .special import lchoose


@jitable
def _outside(x, n, logit_p, x_valid):
    """Invalid parameters or (unless ``x_valid``) x off {0, ..., n}."""
    if not math.isfinite(logit_p) or not (n < math.inf) or n != math.floor(n):
        return True
    return not (x_valid or (0.0 <= x <= n and x == math.floor(x)))


@jitable
def _logit_terms(x, n, t):
    """``x log sigmoid(t) + (n - x) log sigmoid(-t)`` and its derivative
    ``x sigmoid(-t) - (n - x) sigmoid(t)``, from one exponential.

    With e = exp(-|t|) <= 1: log sigmoid(+-t) = -log1p(e) - max(-+t, 0), and
    sigmoid(t), sigmoid(-t) are 1 / (1 + e), e / (1 + e) for t >= 0 and the
    other way round below. Both tails stay exact (t = +-800: e = 0). It took
    four exponentials, two log1p and two divisions before: a model's gradient
    over 1e5 observations, 2.5 -> 0.71 ms.
    """
    e = vmath.exp(-abs(t))
    log1p_e, inverse = vmath.log1p_and_reciprocal(e)
    terms = -(x * (log1p_e + max(-t, 0.0)) + (n - x) * (log1p_e + max(t, 0.0)))
    at_x, at_rest = (e, 1.0) if t >= 0.0 else (1.0, e)  # sigmoid(-t), sigmoid(t) times 1 + e
    return terms, (x * at_x - (n - x) * at_rest) * inverse


@jitable
def logpdf(x, n, logit_p):
    """Normalized log mass; ``-inf`` off {0, ..., n} or for invalid parameters."""
    if _outside(x, n, logit_p, False):
        return -math.inf
    # Grouped as in logpdf_grad, so both round alike.
    return lchoose(n, x) + _logit_terms(x, n, logit_p)[0]


@kernel
def logpdf_grad(x, n, logit_p, keep, x_valid=False):
    """``(lp, d_x = 0, d_n = 0, d_logit_p)``; see ``distributions.spec`` for ``keep`` and ``x_valid``."""
    if _outside(x, n, logit_p, x_valid):
        return -math.inf, 0.0, 0.0, 0.0
    lp = 0.0
    d_logit = 0.0
    if keep[0]:
        lp = lchoose(n, x)
    if keep[1]:
        terms, d_logit = _logit_terms(x, n, logit_p)
        lp += terms
    if lp == -math.inf:  # a summand overflowed (huge counts or parameters)
        return -math.inf, 0.0, 0.0, 0.0
    return lp, 0.0, 0.0, d_logit


@jitable
def rvs(state, n, logit_p):
    """One draw (``binomial.rvs``), with the smaller of p and 1 - p from the
    logit, accurate where the other rounds to 1."""
    if logit_p <= 0.0:
        return small_p_rvs(state, n, logistic(logit_p))
    return n - small_p_rvs(state, n, logistic(-logit_p))


SPEC = Spec(
    name="BinomialLogit",
    params=(Param("n", nonnegative_integer), Param("logit_p", real)),
    support=integer_interval(0.0, "n"),
    summands=(
        Summand(("x", "n"), "lchoose(n, x)"),
        Summand(("x", "n", "logit_p"),
                "x log_logistic(logit_p) + (n - x) log_logistic(-logit_p)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class BinomialLogit(Distribution):
    __doc__ = __doc__
    spec = SPEC
