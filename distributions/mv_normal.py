"""Multivariate normal with the Cholesky factor of its covariance.

    log p(x | loc, L) = -|z|^2 / 2 - sum_i log L_ii - d log(2 pi) / 2,   L z = x - loc

Support: x in R^d. Parameters: loc in R^d, ``scale_tril`` = L, lower
triangular d x d with a positive diagonal (entries above the diagonal are
not read), the covariance being L L^T. scipy:
``scipy.stats.multivariate_normal(loc, L @ L.T)``; Stan:
``multi_normal_cholesky_lpdf(x | loc, L)``.

Partials, with w = L^-T z: d/dx = -w, d/dloc = w, d/dL_ij = w_i z_j - [i = j] / L_ii
(i >= j). Each costs two triangular solves per event and no inverse.
"""

import math

import numpy as np

from . import random, vmath
from .constraints import real
from .jit import jitable, kernel
from .multivariate import MultivariateDistribution
from .frozen import InvalidArgumentError, is_numeric
from .spec import Param, RowsKernel, Spec, Summand
from .special import LOG_SQRT_2PI


@kernel
def solve_lower(scale_tril, x, loc, z):
    """z = L^-1 (x - loc), forward substitution; returns |z|^2."""
    d = z.size
    sq = 0.0
    for i in range(d):
        acc = x[i] - loc[i]
        for j in range(i):
            acc -= scale_tril[i, j] * z[j]
        z[i] = acc / scale_tril[i, i]
        sq += z[i] * z[i]
    return sq


@kernel
def diagonal_ok(scale_tril):
    """Whether every diagonal entry of a Cholesky factor is positive and finite."""
    ok = True
    for i in range(scale_tril.shape[0]):
        ok &= 0.0 < scale_tril[i, i] < math.inf
    return ok


@jitable
def logpdf(x, loc, scale_tril):
    """Normalized log density of one event; ``-inf`` for a diagonal entry <= 0."""
    d = x.size
    if not diagonal_ok(scale_tril):
        return -math.inf
    sq = solve_lower(scale_tril, x, loc, np.empty(d))
    if not math.isfinite(sq):
        return -math.inf
    lp = -0.5 * sq - d * LOG_SQRT_2PI
    for i in range(d):
        lp -= vmath.log(scale_tril[i, i])
    return lp


@kernel
def add_quadratic_partials(scale_tril, z, w, f, d_x, d_loc, d_scale_tril):
    """Add f times the partials of -|z|^2 / 2 in x, loc and L (L z = x - loc):
    -f w, f w and f w_i z_j, with w = L^-T z by back substitution into ``w``.
    MvNormal's with f = 1; MvStudentT's with its weight (nu + d) / (nu + |z|^2)."""
    d = z.size
    for i in range(d - 1, -1, -1):
        acc = z[i]
        for j in range(i + 1, d):
            acc -= scale_tril[j, i] * w[j]
        w[i] = acc / scale_tril[i, i]
    if d_x is not None:
        for i in range(d):
            d_x[i] -= f * w[i]
    if d_loc is not None:
        for i in range(d):
            d_loc[i] += f * w[i]
    if d_scale_tril is not None:
        for i in range(d):
            for j in range(i + 1):
                d_scale_tril[i, j] += f * w[i] * z[j]


@kernel
def logpdf_grad(x, loc, scale_tril, keep, work, d_x, d_loc, d_scale_tril):
    """Log density of one event; partials added into ``d_*`` (see ``distributions.spec``)."""
    d = x.size
    if not diagonal_ok(scale_tril):
        return -math.inf
    z, w = work[:d], work[d:2 * d]
    sq = solve_lower(scale_tril, x, loc, z)
    if not math.isfinite(sq):
        return -math.inf
    lp = 0.0
    if keep[0]:
        lp -= 0.5 * sq
        if d_x is not None or d_loc is not None or d_scale_tril is not None:
            add_quadratic_partials(scale_tril, z, w, 1.0, d_x, d_loc, d_scale_tril)
    if keep[1]:
        for i in range(d):
            lp -= vmath.log(scale_tril[i, i])
            if d_scale_tril is not None:
                d_scale_tril[i, i] -= 1.0 / scale_tril[i, i]
    if keep[2]:
        lp -= d * LOG_SQRT_2PI
    return lp


@kernel
def logpdf_grad_rows(x, loc, scale_tril, keep, work, lp, d_x, d_loc, d_scale_tril):
    """``logpdf_grad`` over the rows of ``x`` (nb, d) and of ``loc`` when it is
    (nb, d): the solves run down the rows (z, w stored (d, nb) in ``work``)."""
    nb, d = x.shape
    if not diagonal_ok(scale_tril):
        for r in range(nb):
            lp[r] = -math.inf
        return
    inv = work[:d]
    z = work[d:d + d * nb].reshape((d, nb))
    w = work[d + d * nb:d + 2 * d * nb].reshape((d, nb))
    log_det = 0.0
    for i in range(d):
        inv[i] = 1.0 / scale_tril[i, i]
        log_det += vmath.log(scale_tril[i, i])
    for i in range(d):  # z = L^-1 (x - loc), row i of z for every row of x at once
        zi = z[i]
        if loc.ndim == 2:
            for r in range(nb):
                zi[r] = x[r, i] - loc[r, i]
        else:
            for r in range(nb):
                zi[r] = x[r, i] - loc[i]
        for j in range(i):
            lij, zj = scale_tril[i, j], z[j]
            for r in range(nb):
                zi[r] -= lij * zj[r]
        for r in range(nb):
            zi[r] *= inv[i]
    for r in range(nb):
        lp[r] = 0.0
    for i in range(d):
        zi = z[i]
        for r in range(nb):
            lp[r] += zi[r] * zi[r]
    finite = True
    const = (log_det if keep[1] else 0.0) + (d * LOG_SQRT_2PI if keep[2] else 0.0)
    for r in range(nb):
        ok = math.isfinite(lp[r])
        finite &= ok
        lp[r] = ((-0.5 * lp[r] if keep[0] else 0.0) - const) if ok else -math.inf
    if not finite:
        return
    if keep[0] and (d_x is not None or d_loc is not None or d_scale_tril is not None):
        for i in range(d - 1, -1, -1):  # w = L^-T z
            wi, zi = w[i], z[i]
            for r in range(nb):
                wi[r] = zi[r]
            for j in range(i + 1, d):
                lji, wj = scale_tril[j, i], w[j]
                for r in range(nb):
                    wi[r] -= lji * wj[r]
            for r in range(nb):
                wi[r] *= inv[i]
        if d_x is not None:
            for i in range(d):
                for r in range(nb):
                    d_x[r, i] -= w[i, r]
        if d_loc is not None:
            for i in range(d):
                if d_loc.ndim == 2:
                    for r in range(nb):
                        d_loc[r, i] += w[i, r]
                else:
                    acc = 0.0
                    for r in range(nb):
                        acc += w[i, r]
                    d_loc[i] += acc
        if d_scale_tril is not None:
            for i in range(d):
                wi = w[i]
                for j in range(i + 1):
                    zj = z[j]
                    acc = 0.0
                    for r in range(nb):
                        acc += wi[r] * zj[r]
                    d_scale_tril[i, j] += acc
    if keep[1] and d_scale_tril is not None:
        for i in range(d):
            d_scale_tril[i, i] -= nb * inv[i]


@jitable
def rvs(state, loc, scale_tril, out):
    """One draw: loc + L z, z standard normal."""
    d = out.size
    random.fill_normal(state, out)
    for i in range(d - 1, -1, -1):  # row i reads z_0..z_i, not yet overwritten
        acc = loc[i]
        for j in range(i + 1):
            acc += scale_tril[i, j] * out[j]
        out[i] = acc


def _work(lengths):
    return 2 * lengths["d"]


def _rows_work(lengths, rows):
    return lengths["d"] * (1 + 2 * rows)


SPEC = Spec(
    name="MvNormal",
    params=(Param("loc", real), Param("scale_tril", real)),
    support=real,
    summands=(
        Summand(("x", "loc", "scale_tril"), "-|L^-1 (x - loc)|^2 / 2"),
        Summand(("scale_tril",), "-sum(log(diag(L)))"),
        Summand((), "-d log(2 pi) / 2"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=(("d",), ("d",), ("d", "d")),
    work=_work,
    rows=RowsKernel(logpdf_grad_rows, ("x", "loc"), _rows_work),
)


class MvNormal(MultivariateDistribution):
    __doc__ = __doc__
    spec = SPEC
    scalar_events = ("loc",)

    def __init__(self, loc, scale_tril=None, cov=None):
        if (scale_tril is None) == (cov is None):
            raise TypeError("MvNormal: give exactly one of scale_tril= and cov=")
        if cov is not None:
            if not is_numeric(cov):
                raise InvalidArgumentError("MvNormal: cov= takes numbers (data, factored once); for a "
                                           "covariance of parameters give its Cholesky factor as scale_tril=")
            scale_tril = _cholesky(np.asarray(cov, dtype=float))
        super().__init__(loc, scale_tril)

    def _check_events(self):
        check_scale_tril("MvNormal", self.params["scale_tril"])


def check_scale_tril(dist, scale_tril):
    """An ``InvalidArgumentError`` naming the first diagonal entry of a (batch of)
    Cholesky factor(s) that is not positive and finite."""
    diagonal = np.diagonal(scale_tril, axis1=-2, axis2=-1)
    bad = ~(diagonal > 0) | ~np.isfinite(diagonal)
    if np.any(bad):
        index = np.unravel_index(int(np.argmax(bad)), bad.shape)
        where = ", ".join(str(int(i)) for i in index[:-1] + (index[-1], index[-1]))
        raise InvalidArgumentError(f"{dist}: scale_tril[{where}]={float(diagonal[index])!r}: the diagonal "
                                   "of a Cholesky factor must be positive and finite")


def _cholesky(cov):
    """The lower Cholesky factor of a data covariance, or an error saying why not."""
    if cov.ndim < 2 or cov.shape[-1] != cov.shape[-2]:
        raise InvalidArgumentError(f"MvNormal: cov has shape {cov.shape}; it must be a square matrix")
    if not np.all(np.isfinite(cov)):
        raise InvalidArgumentError("MvNormal: cov has entries that are not finite")
    if not np.allclose(cov, np.swapaxes(cov, -1, -2), rtol=1e-12, atol=0.0):
        raise InvalidArgumentError("MvNormal: cov is not symmetric")
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        smallest = np.min(np.linalg.eigvalsh(cov))
        raise InvalidArgumentError(f"MvNormal: cov is not positive definite (smallest eigenvalue "
                                   f"{smallest:.3g})") from None
