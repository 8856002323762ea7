"""Categorical distribution on 0, 1, ..., K - 1 with probabilities p.

    log p(x | p) = log p_x,   x = 0, 1, ..., K - 1

Support: the integers 0..K-1, 0-based as in NumPyro (Stan's
``categorical_lpmf(y | theta)`` counts y from 1). Parameters: p, a
probability vector: entries in [0, 1] summing to 1 within 1e-8 (Stan's
tolerance); a category of probability 0 has log mass ``-inf``. scipy has no
categorical distribution: ``np.log(p[x])`` is the reference (and
``scipy.stats.multinomial(1, p)`` at the one-hot vector of x).

Partials: d/dp_x = 1 / p_x, 0 for the other entries. p is taken as it is,
not renormalized: the partials are those of log p_x itself, and a model
that keeps p on the simplex (a ``simplex`` parameter, a softmax) carries
the constraint through its own transform.
"""

import math

import numpy as np

from . import random, vmath
from .categorical_logit import category_ok
from .constraints import nonnegative_integer, simplex
from .dirichlet import check_probability_vectors, probabilities_ok
from .jit import jitable, kernel
from .multivariate import MultivariateDistribution
from .spec import Param, Spec, Summand


@jitable
def logpdf(x, p):
    """Normalized log mass of one event; ``-inf`` off 0..K-1, where p_x = 0, or for invalid p."""
    if not (category_ok(x, p.size) and probabilities_ok(p)):
        return -math.inf
    px = p[int(x)]
    return vmath.log(px) if px > 0.0 else -math.inf


@kernel
def logpdf_grad(x, p, keep, work, d_x, d_p):
    """Log mass of one event; the partial 1 / p_x added into ``d_p[x]`` (``d_x`` is
    None: the value is discrete). A category of probability 0 gives ``-inf``
    whether or not its summand is kept: the outcome is impossible."""
    if not (category_ok(x, p.size) and probabilities_ok(p)):
        return -math.inf
    i = int(x)
    px = p[i]
    if not px > 0.0:
        return -math.inf
    if not keep[0]:
        return 0.0
    if d_p is not None:
        d_p[i] += 1.0 / px
    return vmath.log(px)


@jitable
def rvs(state, p, out):
    """One draw by inversion: the first x with p_0 + ... + p_x > U S, U uniform
    on [0, 1) and S = sum p (the sum may differ from 1 by the tolerance). Where
    rounding runs past the end, the last category of positive probability."""
    total = 0.0
    last = 0
    for j in range(p.size):
        total += p[j]
        if p[j] > 0.0:
            last = j
    target = random.uniform(state) * total
    acc = 0.0
    for j in range(p.size):
        acc += p[j]
        if target < acc:
            out[0] = j
            return
    out[0] = last


def check(x, lengths, known):
    """it must be a category 0, 1, ..., K - 1 (K the length of p)"""
    return np.asarray(x, dtype=float) < lengths["k"]


SPEC = Spec(
    name="Categorical",
    params=(Param("p", simplex),),
    support=nonnegative_integer,
    summands=(
        Summand(("x", "p"), "log(p[x])"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=((), ("k",)),
    check=check,
)


class Categorical(MultivariateDistribution):
    __doc__ = __doc__
    spec = SPEC
    logit_form = ("categorical_logit", "CategoricalLogit", "logits")

    def _check_events(self):
        check_probability_vectors("Categorical", "p", self.params["p"])
