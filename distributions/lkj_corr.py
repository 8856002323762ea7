"""LKJ distribution of a correlation matrix.

    log p(Omega | eta) = (eta - 1) log det(Omega) + log c_d(eta)

with c_d(eta) the constant of ``LKJCholesky`` (``lkj_cholesky.log_constant``,
which derives it): Lewandowski, Kurowicka and Joe 2009, "Generating random
correlation matrices based on vines and extended onion method".

Support: Omega symmetric positive definite with a unit diagonal
(``corr_matrix``); the density is over its d (d - 1) / 2 strictly lower
entries. eta = 1 is uniform over correlation matrices, eta > 1 favours the
identity, eta < 1 strong correlations. Each off-diagonal entry has the
marginal Beta(eta - 1 + d/2, same) on (-1, 1); for d = 2 the correlation r
has density c_2(eta) (1 - r^2)^(eta - 1), scipy's
``stats.beta(eta, eta, loc=-1, scale=2).pdf(r)``.

Parameters: ``dim`` = d >= 1, an integer (it fixes the value's shape (d, d)
and has no partial); ``concentration`` = eta > 0. NumPyro:
``LKJ(dim, concentration)``; Stan: ``lkj_corr_lpdf(Omega | eta)``; scipy
has none (d = 2 as above).

The kernel reads Omega as S = (Omega + Omega^T) / 2: a value that is not
symmetric to 1e-8, or whose diagonal is not 1 to 1e-8 (``UNIT_TOLERANCE``),
or whose S has no Cholesky factor (not positive definite) gets ``-inf``. It
is a function of every entry as an independent input, (eta - 1) log det S,
whose partials are, by Jacobi's formula (S symmetric),

    d/dOmega_ij = (eta - 1) (S^-1)_ij,   d/deta = log det S + d/deta log c_d(eta):

the entries (i, j) and (j, i) get one each, whose sum is the derivative
along a symmetric change; the diagonal's are the true partials too (the
``corr_matrix`` transform holds it at 1 and drops them). S^-1 = L^-T L^-1
from the Cholesky factor L, inverted in the ``work`` array.
"""

import math

import numpy as np

from . import lkj_cholesky, vmath
from .constraints import corr_matrix, nonnegative_integer, positive
from .jit import jitable, kernel
from .lkj_cholesky import UNIT_TOLERANCE, LKJBase, dlog_constant, log_constant
from .spec import Param, Spec, Summand


@jitable
def gram_in_place(a, d):
    """Overwrite the lower-triangular L in ``a`` (d x d, row-major, flat; the
    entries above the diagonal are not read) with the full symmetric L L^T.

    Rows from the last, each from its diagonal leftwards: entry (i, j) reads
    row i left of j and row j, neither written yet. Then the upper triangle
    is the mirror of the lower: exactly symmetric.
    """
    for i in range(d - 1, -1, -1):
        for j in range(i, -1, -1):
            acc = 0.0
            for k in range(j + 1):
                acc += a[i * d + k] * a[j * d + k]
            a[i * d + j] = acc
    for i in range(d):
        for j in range(i):
            a[j * d + i] = a[i * d + j]


@kernel
def _valid(x, dim, concentration):
    """eta finite and > 0; x square of side ``dim``, symmetric and with a unit
    diagonal to ``UNIT_TOLERANCE`` (NaN or an infinity anywhere fails)."""
    d = x.shape[0]
    ok = dim == d and x.shape[1] == d and 0.0 < concentration < math.inf
    for i in range(d):
        ok &= abs(x[i, i] - 1.0) <= UNIT_TOLERANCE
        for j in range(i):
            ok &= abs(x[i, j] - x[j, i]) <= UNIT_TOLERANCE
    return ok


@kernel
def _cholesky(x, work):
    """The Cholesky factor of S = (x + x^T) / 2 into ``work`` (d x d, row-major,
    its lower triangle), column by column; returns log det S = sum_j log of
    the pivots L_jj^2, or ``-inf`` at the first pivot that is not positive (S
    not positive definite, or NaN)."""
    d = x.shape[0]
    log_det = 0.0
    for j in range(d):
        for i in range(j, d):
            acc = 0.5 * (x[i, j] + x[j, i])
            for k in range(j):
                acc -= work[i * d + k] * work[j * d + k]
            if i > j:
                work[i * d + j] = acc / work[j * d + j]
            elif acc > 0.0:
                work[j * d + j] = math.sqrt(acc)
                log_det += vmath.log(acc)
            else:
                return -math.inf
    return log_det


@kernel
def _add_inverse(work, d, scale, d_x):
    """Add ``scale`` S^-1 into ``d_x``, S = L L^T with L in ``work``, which
    becomes M = L^-1: column by column, down the rows, M_ij = -sum_{j<=k<i}
    L_ik M_kj / L_ii reads L in row i right of column j and M above row i,
    never an entry already overwritten. Then (S^-1)_ij = sum_{k>=i} M_ki M_kj
    (i >= j), added at (i, j) and (j, i)."""
    for j in range(d):
        work[j * d + j] = 1.0 / work[j * d + j]
        for i in range(j + 1, d):
            acc = 0.0
            for k in range(j, i):
                acc -= work[i * d + k] * work[k * d + j]
            work[i * d + j] = acc / work[i * d + i]
    for i in range(d):
        for j in range(i + 1):
            acc = 0.0
            for k in range(i, d):
                acc += work[k * d + i] * work[k * d + j]
            d_x[i, j] += scale * acc
            if j < i:
                d_x[j, i] += scale * acc


@jitable
def logpdf(x, dim, concentration):
    """Normalized log density of one matrix; ``-inf`` off the support or for eta <= 0."""
    if not _valid(x, dim, concentration):
        return -math.inf
    d = x.shape[0]
    log_det = _cholesky(x, np.empty(d * d))
    if log_det == -math.inf:
        return -math.inf
    return (concentration - 1.0) * log_det + log_constant(d, concentration)


@kernel
def logpdf_grad(x, dim, concentration, keep, work, d_x, d_dim, d_concentration):
    """Log density of one matrix; partials added into ``d_*`` (see ``distributions.spec``).
    The Cholesky factor goes into ``work`` (d^2 floats) even when no summand
    reads log det: it decides whether x is positive definite."""
    if not _valid(x, dim, concentration):
        return -math.inf
    log_det = _cholesky(x, work)
    if log_det == -math.inf:
        return -math.inf
    d = x.shape[0]
    lp = 0.0
    if keep[0]:
        lp += (concentration - 1.0) * log_det
        if d_concentration is not None:
            d_concentration[0] += log_det
        if d_x is not None:
            _add_inverse(work, d, concentration - 1.0, d_x)
    if keep[1]:
        lp += log_constant(d, concentration)
        if d_concentration is not None:
            d_concentration[0] += dlog_constant(d, concentration)
    return lp


@jitable
def rvs(state, dim, concentration, out):
    """One matrix: ``LKJCholesky``'s draw of L (the extended onion method), then
    L L^T in place with its diagonal set to 1 (it is 1 to rounding). Near
    eta = 1e-3 a diagonal entry of L can underflow to 0 (see
    ``lkj_cholesky.rvs``): the matrix is then singular, off the support."""
    lkj_cholesky.rvs(state, dim, concentration, out)
    d = int(dim)
    gram_in_place(out, d)
    for i in range(d):
        out[i * d + i] = 1.0


def check(x, lengths, known):
    """Omega is symmetric with a unit diagonal (both to 1e-8) and positive definite"""
    x = np.asarray(x, dtype=float)
    transposed = np.swapaxes(x, -1, -2)
    with np.errstate(invalid="ignore"):
        ok = np.array(np.all(np.abs(x - transposed) <= UNIT_TOLERANCE, axis=(-2, -1)))
        ok &= np.all(np.abs(np.diagonal(x, axis1=-2, axis2=-1) - 1.0) <= UNIT_TOLERANCE, axis=-1)
    symmetric = 0.5 * (x + transposed)
    for index in np.ndindex(ok.shape):
        if ok[index]:  # finite, so numpy's Cholesky raises where it fails
            try:
                np.linalg.cholesky(symmetric[index])
            except np.linalg.LinAlgError:
                ok[index] = False
    return ok


SPEC = Spec(
    name="LKJCorr",
    params=(Param("dim", nonnegative_integer), Param("concentration", positive)),
    support=corr_matrix,
    summands=(
        Summand(("x", "concentration"), "(eta - 1) log det(Omega)"),
        Summand(("dim", "concentration"), "log c_d(eta)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=(("d", "d"), (), ()),
    check=check,
    work=lambda lengths: lengths["d"] ** 2,
)


class LKJCorr(LKJBase):
    __doc__ = __doc__
    spec = SPEC
