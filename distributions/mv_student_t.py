"""Multivariate Student t with the Cholesky factor of its scale matrix.

    log p(x | nu, loc, L) = lgamma((nu + d) / 2) - lgamma(nu / 2) - d log(nu pi) / 2
                            - sum_i log L_ii - (nu + d) / 2 log(1 + |z|^2 / nu),   L z = x - loc

Support: x in R^d. Parameters: ``df`` = nu > 0, loc in R^d, ``scale_tril`` =
L, lower triangular d x d with a positive diagonal (entries above the
diagonal are not read); the scale matrix is L L^T (the covariance
nu / (nu - 2) L L^T for nu > 2). As nu -> inf it tends to
MvNormal(loc, scale_tril=L). scipy:
``scipy.stats.multivariate_t(loc, shape=L @ L.T, df=nu)``; Stan:
``multi_student_t_cholesky_lpdf(x | nu, loc, L)``.

Partials, with w = L^-T z, f = (nu + d) / (nu + |z|^2) and u = |z|^2 / nu:
d/dx = -f w, d/dloc = f w, d/dL_ij = f w_i z_j - [i = j] / L_ii (i >= j),
as MvNormal's with the weight f; d/dnu = (psi((nu + d)/2) - psi(nu/2) - d/nu) / 2
- (log(1 + u) - u / (1 + u)) / 2 + d u / (2 nu (1 + u)). Both brackets are
of order 1/nu^2 and are formed without cancellation (see ``_digamma_excess``
and ``student_t.log1p_minus_ratio``), so the partial in nu stays accurate
for huge nu.
"""

import math

import numpy as np

from . import random, vmath
from .constraints import positive, real
from .jit import jitable, kernel
from .multivariate import MultivariateDistribution
from .mv_normal import add_quadratic_partials, check_scale_tril, diagonal_ok, solve_lower
from .spec import Param, Spec, Summand
from .special import (LOG_SQRT_PI, SMALLEST_NORMAL, half_step_digamma_excess, log1p_square,
                      log_rising_factorial)
from .student_t import log1p_minus_ratio


@kernel
def _scaled_norm(z, sq, df):
    """t = |z| / sqrt(df), with |z|^2 = ``sq``; where ``sq`` overflowed (|z| > 1e154)
    from z / max|z_i|, whose squares cannot overflow."""
    if sq < math.inf:
        return math.sqrt(sq) / math.sqrt(df)
    if sq != sq:  # NaN in x or loc
        return sq
    big = 0.0
    for i in range(z.size):
        big = max(big, abs(z[i]))
    s = 0.0
    for i in range(z.size):
        s += (z[i] / big) * (z[i] / big)
    return big / math.sqrt(df) * math.sqrt(s)


@kernel
def _digamma_excess(a, d):
    """psi(a + d/2) - psi(a) - d / (2a), of order d^2 / a^2, without cancellation.

    With h = 1/2 for odd d (else 0) and m = d // 2, the recurrence
    psi(y + 1) = psi(y) + 1/y gives psi(a + d/2) - psi(a) = [psi(a + 1/2) - psi(a)]
    + sum_{k<m} 1 / (a + h + k), and each 1 / (a + h + k) - 1/a is
    -(k + h) / (a (a + h + k)): the sum has no cancellation, and the half step
    is ``half_step_digamma_excess`` (its own 1 / (2a) taken out).
    """
    h = 0.5 if d % 2 == 1 else 0.0
    excess = half_step_digamma_excess(a) if d % 2 == 1 else 0.0
    for k in range(d // 2):
        excess -= (k + h) / (a + h + k) / a
    return excess


@kernel
def _valid(df, scale_tril):
    """df from the smallest normal float up (below, df / 2 may round to 0) and
    finite; a positive finite diagonal."""
    return SMALLEST_NORMAL <= df < math.inf and diagonal_ok(scale_tril)


@jitable
def logpdf(x, df, loc, scale_tril):
    """Normalized log density of one event; ``-inf`` for df <= 0 or a diagonal entry <= 0."""
    d = x.size
    if not _valid(df, scale_tril):
        return -math.inf
    z = np.empty(d)
    t = _scaled_norm(z, solve_lower(scale_tril, x, loc, z), df)
    if not math.isfinite(t):
        return -math.inf
    # lgamma((nu + d)/2) - lgamma(nu/2) as a rising factorial: no cancellation for huge nu
    lp = log_rising_factorial(0.5 * df, 0.5 * d) - 0.5 * d * vmath.log(df) - d * LOG_SQRT_PI
    for i in range(d):
        lp -= vmath.log(scale_tril[i, i])
    return lp - 0.5 * (df + d) * log1p_square(t)[0]


@kernel
def logpdf_grad(x, df, loc, scale_tril, keep, work, d_x, d_df, d_loc, d_scale_tril):
    """Log density of one event; partials added into ``d_*`` (see ``distributions.spec``)."""
    d = x.size
    if not _valid(df, scale_tril):
        return -math.inf
    z, w = work[:d], work[d:2 * d]
    sq = solve_lower(scale_tril, x, loc, z)
    t = _scaled_norm(z, sq, df)
    if not math.isfinite(t):
        return -math.inf
    lp = 0.0
    if keep[0]:
        log1p_t2, _, ratio = log1p_square(t)  # log(1 + u), u / (1 + u), u = t^2
        lp -= 0.5 * (df + d) * log1p_t2
        if d_x is not None or d_loc is not None or d_scale_tril is not None:
            # f = (nu + d) / (nu + |z|^2); 0 where |z|^2 overflowed (the partials underflow)
            add_quadratic_partials(scale_tril, z, w, (df + d) / (df + sq), d_x, d_loc, d_scale_tril)
        if d_df is not None:
            d_df[0] += 0.5 * d * (ratio / df) - 0.5 * log1p_minus_ratio(t, log1p_t2, ratio)
    if keep[1]:
        for i in range(d):
            lp -= vmath.log(scale_tril[i, i])
            if d_scale_tril is not None:
                d_scale_tril[i, i] -= 1.0 / scale_tril[i, i]
    if keep[2]:
        lp += log_rising_factorial(0.5 * df, 0.5 * d) - 0.5 * d * vmath.log(df)
        if d_df is not None:
            d_df[0] += 0.5 * _digamma_excess(0.5 * df, d)
    if keep[3]:
        lp -= d * LOG_SQRT_PI
    return lp


@jitable
def rvs(state, df, loc, scale_tril, out):
    """One draw: loc + L z sqrt(nu / V), z standard normal, V ~ chi2(nu) = 2 Gamma(nu/2)
    (the normal variance mixture; Kotz and Nadarajah 2004, "Multivariate t
    distributions", ch. 1), sqrt(nu / V) taken in logs as in ``student_t``."""
    d = out.size
    half = 0.5 * df
    mix = math.exp(0.5 * (math.log(half) - random.log_gamma(state, half)))
    random.fill_normal(state, out)
    for i in range(d - 1, -1, -1):  # row i reads z_0..z_i, not yet overwritten
        acc = 0.0
        for j in range(i + 1):
            acc += scale_tril[i, j] * out[j]
        out[i] = loc[i] + mix * acc


def _work(lengths):
    return 2 * lengths["d"]


SPEC = Spec(
    name="MvStudentT",
    params=(Param("df", positive), Param("loc", real), Param("scale_tril", real)),
    support=real,
    summands=(
        Summand(("x", "df", "loc", "scale_tril"), "-(nu + d) / 2 log(1 + |L^-1 (x - loc)|^2 / nu)"),
        Summand(("scale_tril",), "-sum(log(diag(L)))"),
        Summand(("df",), "lgamma((nu + d) / 2) - lgamma(nu / 2) - d log(nu) / 2"),
        Summand((), "-d log(pi) / 2"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=(("d",), (), ("d",), ("d", "d")),
    work=_work,
)


class MvStudentT(MultivariateDistribution):
    __doc__ = __doc__
    spec = SPEC
    scalar_events = ("loc",)

    def _check_events(self):
        check_scale_tril("MvStudentT", self.params["scale_tril"])
