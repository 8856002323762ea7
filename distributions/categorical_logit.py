"""Categorical distribution on 0, 1, ..., K - 1 with log-odds (softmax) parameters.

    log p(x | logits) = logits_x - logsumexp(logits),   x = 0, 1, ..., K - 1

Support: the integers 0..K-1, 0-based as in NumPyro and scipy's indexing
(Stan's ``categorical_logit_lpmf(y | beta)`` counts y from 1). Parameters:
``logits``, a finite real vector of length K; adding a constant to every
entry changes nothing. scipy has no categorical distribution:
``np.log(scipy.special.softmax(logits))[x]`` is the reference.

Partials: d/dlogits_j = [j = x] - softmax(logits)_j. With e_j =
exp(logits_j - max logits) and S = sum_j e_j, the value is (logits_x - max)
- log S and the partial at j = x is sum_{j != x} e_j / S, summed apart
rather than as 1 - e_x / S: near p_x = 1 that difference cancels to 0.
"""

import math

import numpy as np

from . import random, vmath
from .constraints import nonnegative_integer, real
from .jit import jitable, kernel
from .multivariate import MultivariateDistribution
from .spec import Param, RowsKernel, Spec, Summand


@jitable
def category_ok(x, k):
    """Whether ``x`` is one of the integers 0, 1, ..., k - 1 (NaN fails)."""
    return 0.0 <= x < k and x % 1.0 == 0.0


@kernel
def _top(logits):
    """The largest entry, or NaN where an entry is not finite."""
    top = -math.inf
    for j in range(logits.size):
        if not abs(logits[j]) < math.inf:
            return math.nan
        top = max(top, logits[j])
    return top


@jitable
def logpdf(x, logits):
    """Normalized log mass of one event; ``-inf`` off 0..K-1 or for a logit not finite."""
    top = _top(logits)
    if not (category_ok(x, logits.size) and not math.isnan(top)):
        return -math.inf
    total = 0.0
    for j in range(logits.size):
        total += vmath.exp(logits[j] - top)
    return (logits[int(x)] - top) - vmath.log(total)


@kernel
def logpdf_grad(x, logits, keep, work, d_x, d_logits):
    """Log mass of one event; partials added into ``d_logits`` (``d_x`` is None:
    the value is discrete). ``work[j]`` holds e_j (see the module docstring)."""
    k = logits.size
    top = _top(logits)
    if not (category_ok(x, k) and not math.isnan(top)):
        return -math.inf
    if not keep[0]:
        return 0.0
    i = int(x)
    total = 0.0
    others = 0.0  # sum of e_j over j != x
    for j in range(k):
        e = vmath.exp(logits[j] - top)
        work[j] = e
        total += e
        others += e if j != i else 0.0
    lp = (logits[i] - top) - vmath.log(total)
    if lp == -math.inf:  # logits_x - max overflowed (logits of +-1e308)
        return -math.inf
    if d_logits is not None:
        scale = 1.0 / total  # total >= 1: the largest e_j is 1
        for j in range(k):
            if j != i:
                d_logits[j] -= work[j] * scale
        d_logits[i] += others * scale
    return lp


@kernel
def logpdf_grad_rows(x, logits, keep, work, lp, d_x, d_logits):
    """``logpdf_grad`` over a block: ``x`` (nb,), ``logits`` (nb, k) or (k,) shared.
    The logits are first copied column by column into ``work`` as (k, nb), so
    every later loop runs down the rows over contiguous memory and vectorizes
    (the exponentials, the logarithms: 137 against 440 us over 1e4 rows of 5
    logits, where loops read the (nb, k) rows with a stride); ``work`` also
    holds each row's max, log-sum and a NaN flag."""
    nb = x.shape[0]
    k = logits.shape[-1]
    top, lse, bad = work[:nb], work[nb:2 * nb], work[2 * nb:3 * nb]
    e = work[3 * nb:3 * nb + k * nb].reshape((k, nb))  # the logits, then their exponentials
    for r in range(nb):
        top[r] = -math.inf
        lse[r] = 0.0
        bad[r] = 0.0
    for j in range(k):
        ej = e[j]
        for r in range(nb):
            v = logits[r, j] if logits.ndim == 2 else logits[j]
            ej[r] = v
            top[r] = max(top[r], v)
            bad[r] += v * 0.0  # NaN for an inf or NaN logit
    for j in range(k):
        ej = e[j]
        for r in range(nb):
            ej[r] = vmath.exp(ej[r] - top[r])
            lse[r] += ej[r]
    for r in range(nb):
        lse[r] = vmath.log(lse[r])
    finite = True
    for r in range(nb):
        ok = bad[r] == 0.0 and category_ok(x[r], k)
        i = int(x[r]) if ok else 0
        at = logits[r, i] if logits.ndim == 2 else logits[i]
        lp[r] = ((at - top[r]) - lse[r] if keep[0] else 0.0) if ok else -math.inf
        finite &= ok and lp[r] > -math.inf
    if not finite or not keep[0] or d_logits is None:
        return
    for r in range(nb):  # now: sum of e_j over j != x, over the sum of all: the partial at x
        bad[r] = 0.0
    for j in range(k):
        ej = e[j]
        for r in range(nb):
            bad[r] += ej[r] if j != int(x[r]) else 0.0
    for r in range(nb):
        lse[r] = vmath.exp(-lse[r])  # 1 / sum_j e_j
    for j in range(k):
        ej = e[j]
        for r in range(nb):
            share = (bad[r] if j == int(x[r]) else -ej[r]) * lse[r]
            if d_logits.ndim == 2:
                d_logits[r, j] += share
            else:
                d_logits[j] += share


@jitable
def rvs(state, logits, out):
    """One draw by the Gumbel-max trick: argmax_j logits_j + G_j with G_j =
    -log E_j standard Gumbel (E_j standard exponential); Yellott (1977), "The
    relationship between Luce's choice axiom, Thurstone's theory of
    comparative judgment, and the double exponential distribution",
    J. Math. Psych. 15."""
    best = -math.inf
    choice = 0
    for j in range(logits.size):
        score = logits[j] - math.log(random.exponential(state))
        if score > best:
            best = score
            choice = j
    out[0] = choice


def check(x, lengths, known):
    """it must be a category 0, 1, ..., K - 1 (K the length of logits)"""
    return np.asarray(x, dtype=float) < lengths["k"]


def _work(lengths):
    return lengths["k"]


def _rows_work(lengths, rows):
    return (3 + lengths["k"]) * rows


SPEC = Spec(
    name="CategoricalLogit",
    params=(Param("logits", real),),
    support=nonnegative_integer,
    summands=(
        Summand(("x", "logits"), "logits[x] - logsumexp(logits)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=((), ("k",)),
    check=check,
    work=_work,
    rows=RowsKernel(logpdf_grad_rows, ("x", "logits"), _rows_work),
)


class CategoricalLogit(MultivariateDistribution):
    __doc__ = __doc__
    spec = SPEC
