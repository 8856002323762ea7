"""Dirichlet-multinomial distribution: multinomial counts whose p is Dirichlet(alpha).

    log p(x | n, alpha) = lgamma(n + 1) - sum_i lgamma(x_i + 1)
                          + sum_i lrf(alpha_i, x_i) - lrf(A, n),
    lrf(a, k) = lgamma(a + k) - lgamma(a),   A = sum_i alpha_i,   sum_i x_i = n

Support: vectors of K nonnegative integers summing to n (as Multinomial's:
only the elementwise part is checked when data are set, a sum other than n
gives ``-inf``). Parameters: n a nonnegative integer (no partial),
alpha_i > 0. For K = 2 it is BetaBinomial. scipy:
``scipy.stats.dirichlet_multinomial(alpha, n)``; Stan:
``dirichlet_multinomial_lpmf(x | alpha)``.

The lgamma differences are taken as ``log_rising_factorial`` (as in
BetaBinomial), which never forms lgamma of a huge alpha: at alpha ~ 1e8
each lgamma is ~2e9 while their difference is O(x log alpha).

Partials: d/dalpha_i = digamma(x_i + alpha_i) - digamma(alpha_i) -
(digamma(n + A) - digamma(A)), both differences as ``digamma_diff``
(accurate for huge alphas and small counts).
"""

import math

from . import beta_binomial
from .constraints import nonnegative_integer, positive
from .dirichlet import concentrations_ok
from .jit import jitable, kernel
from .multinomial import check, counts_ok, log_multinomial_coefficient
from .multivariate import MultivariateDistribution
from .spec import Param, Spec, Summand
from .special import digamma_diff, log_rising_factorial


@jitable
def logpdf(x, n, alpha):
    """Normalized log mass of one event; ``-inf`` off the support or for invalid parameters."""
    if not (counts_ok(x, n) and concentrations_ok(alpha)):
        return -math.inf
    lp = log_multinomial_coefficient(x, n)
    total = 0.0
    for i in range(x.size):
        lp += log_rising_factorial(alpha[i], x[i])
        total += alpha[i]
    lp -= log_rising_factorial(total, n)
    return lp if abs(lp) < math.inf else -math.inf


@kernel
def logpdf_grad(x, n, alpha, keep, work, d_x, d_n, d_alpha):
    """Log mass of one event; partials added into ``d_alpha`` (``d_x`` and ``d_n``
    are None: the value and n are integers). The value is summed before any
    partial is added: an lrf of counts ~1e305 can overflow, and then the
    value is ``-inf`` and nothing is added."""
    if not (counts_ok(x, n) and concentrations_ok(alpha)):
        return -math.inf
    k = x.size
    total = 0.0
    for i in range(k):
        total += alpha[i]
    lp = 0.0
    if keep[0]:
        lp += log_multinomial_coefficient(x, n)
    if keep[1]:
        for i in range(k):
            lp += log_rising_factorial(alpha[i], x[i])
    if keep[2]:
        lp -= log_rising_factorial(total, n)
    if not abs(lp) < math.inf:  # overflow, or inf - inf
        return -math.inf
    if d_alpha is not None:
        shared = digamma_diff(total, n) if keep[2] else 0.0
        for i in range(k):
            d_alpha[i] += (digamma_diff(alpha[i], x[i]) if keep[1] else 0.0) - shared
    return lp


@jitable
def rvs(state, n, alpha, out):
    """One draw by conditional beta-binomials: x_i ~ BetaBinomial(n - x_0 - ... -
    x_{i-1}, alpha_i, alpha_{i+1} + ... + alpha_{K-1}), the last category
    taking the rest; the Dirichlet's aggregation property gives the
    conditionals (the Polya urn read category by category). Each draws its
    Beta from log-gammas (``beta_binomial.rvs``), so tiny alphas are
    exact. The suffix sums of alpha are built in ``out`` first, from the
    end, and replaced by the counts from the front."""
    k = out.size
    acc = 0.0
    for i in range(k - 1, -1, -1):
        out[i] = acc  # alpha_{i+1} + ... + alpha_{K-1}
        acc += alpha[i]
    rest = n
    for i in range(k - 1):
        draw = beta_binomial.rvs(state, rest, alpha[i], out[i]) if rest > 0.0 else 0.0
        out[i] = draw
        rest -= draw
    out[k - 1] = rest


SPEC = Spec(
    name="DirichletMultinomial",
    params=(Param("n", nonnegative_integer), Param("alpha", positive)),
    support=nonnegative_integer,
    summands=(
        Summand(("x", "n"), "lgamma(n + 1) - sum(lgamma(x + 1))"),
        Summand(("x", "alpha"), "sum(lgamma(x + alpha) - lgamma(alpha))"),
        Summand(("n", "alpha"), "-(lgamma(n + A) - lgamma(A)), A = sum(alpha)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=(("k",), (), ("k",)),
    check=check,
)


class DirichletMultinomial(MultivariateDistribution):
    __doc__ = __doc__
    spec = SPEC
