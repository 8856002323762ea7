"""Bernoulli distribution on the logit scale.

    log p(x | logit_p) = x log(sigmoid(logit_p)) + (1 - x) log(sigmoid(-logit_p)),   x = 0, 1

Parameters: logit_p real (p = sigmoid(logit_p)). Both terms are
``log_logistic`` = -log1pexp(-t), exact for any finite logit: at +-800 the
mass is -800 or -exp(-800) (which rounds to -0.0), never log(0).
scipy: ``scipy.stats.bernoulli(scipy.special.expit(logit_p))``;
Stan: ``bernoulli_logit_lpmf(x | logit_p)``.
"""

import math

from . import vmath
from .constraints import integer_interval, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import logistic
from .special import log_logistic


@jitable
def logpdf(x, logit_p):
    """Normalized log mass; ``-inf`` off {0, 1} or for a non-finite logit."""
    if not math.isfinite(logit_p):
        return -math.inf
    if x == 1.0:
        return log_logistic(logit_p)
    if x == 0.0:
        return log_logistic(-logit_p)
    return -math.inf


@kernel
def logpdf_grad(x, logit_p, keep, x_valid=False):
    """``(lp, d_x = 0, d_logit_p)``; see ``distributions.spec`` for ``keep``, ``x_valid``
    and why the checks pick a stand-in point instead of returning early."""
    ok = math.isfinite(logit_p) and (x_valid or x == 0.0 or x == 1.0)
    logit_p = logit_p if ok else 0.0
    lp = 0.0
    d_logit = 0.0
    if keep[0]:
        # With s = t for x = 1 and s = -t for x = 0, log p = log sigmoid(s) and
        # d/dt = sign * sigmoid(-s). One exponential serves both:
        # e = exp(-|s|), log sigmoid(s) = -log1p(e) - max(-s, 0), and
        # sigmoid(-s) = e / (1 + e) for s >= 0, 1 / (1 + e) for s < 0.
        sign = 1.0 if x == 1.0 else -1.0
        s = sign * logit_p
        e = vmath.exp(-abs(s))
        log1p_e, inverse = vmath.log1p_and_reciprocal(e)
        lp = -log1p_e - max(-s, 0.0)
        d_logit = sign * (e if s >= 0.0 else 1.0) * inverse
    if ok:
        return lp, 0.0, d_logit
    return -math.inf, 0.0, 0.0


@jitable
def rvs(state, logit_p):
    """One draw: 1 if U < logistic(logit_p) (U with 53 random bits)."""
    return 1.0 if random.uniform(state) < logistic(logit_p) else 0.0


SPEC = Spec(
    name="BernoulliLogit",
    params=(Param("logit_p", real),),
    support=integer_interval(0.0, 1.0),
    summands=(
        Summand(("x", "logit_p"), "x log_logistic(logit_p) + (1 - x) log_logistic(-logit_p)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class BernoulliLogit(Distribution):
    __doc__ = __doc__
    spec = SPEC
