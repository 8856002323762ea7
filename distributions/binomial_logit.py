"""Binomial distribution on the logit scale.

    log p(x | n, logit_p) = lchoose(n, x) + x log(sigmoid(logit_p)) + (n - x) log(sigmoid(-logit_p))

Support: x = 0, 1, ..., n. Parameters: n a nonnegative integer (no partial),
logit_p real (p = sigmoid(logit_p)). Both logs are ``log_logistic``, exact at
any finite logit (+-800 included).
scipy: ``scipy.stats.binom(n, scipy.special.expit(logit_p))``;
Stan: ``binomial_logit_lpmf(x | n, logit_p)``.
"""

import math

from distributions.constraints import integer_interval, nonnegative_integer, real
from distributions.frozen import Distribution
from distributions.jit import jitable, kernel
from distributions.spec import Param, Spec, Summand
from distributions.special import lchoose, log_logistic, logistic


@jitable
def _outside(x, n, logit_p):
    """Invalid parameters or x off {0, ..., n}."""
    if not math.isfinite(logit_p) or not (0.0 <= x <= n < math.inf):
        return True
    return x != math.floor(x) or n != math.floor(n)


@jitable
def logpdf(x, n, logit_p):
    """Normalized log mass; ``-inf`` off {0, ..., n} or for invalid parameters."""
    if _outside(x, n, logit_p):
        return -math.inf
    # Grouped as in logpdf_grad, so both round alike.
    return lchoose(n, x) + (x * log_logistic(logit_p) + (n - x) * log_logistic(-logit_p))


@kernel
def logpdf_grad(x, n, logit_p, keep):
    """``(lp, d_x = 0, d_n = 0, d_logit_p)``; see ``distributions.spec`` for ``keep``."""
    if _outside(x, n, logit_p):
        return -math.inf, 0.0, 0.0, 0.0
    lp = 0.0
    d_logit = 0.0
    if keep[0]:
        lp = lchoose(n, x)
    if keep[1]:
        # d/dt = x sigmoid(-t) - (n - x) sigmoid(t) (= x - n sigmoid(t), written
        # without the cancellation of 1 - sigmoid(t) at large t).
        lp += x * log_logistic(logit_p) + (n - x) * log_logistic(-logit_p)
        d_logit = x * logistic(-logit_p) - (n - x) * logistic(logit_p)
    if lp == -math.inf:  # a summand overflowed (huge counts or parameters)
        return -math.inf, 0.0, 0.0, 0.0
    return lp, 0.0, 0.0, d_logit


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
)


class BinomialLogit(Distribution):
    __doc__ = __doc__
    spec = SPEC
