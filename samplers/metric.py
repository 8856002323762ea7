"""Euclidean metrics (mass matrices): momentum draws, velocity and energy.

A metric is given by its inverse ``M^{-1}`` (the posterior covariance
estimate, as in Stan's ``inv_metric``).  Momenta are ``p ~ N(0, M)``, the
velocity is ``M^{-1} p`` (Stan's ``dtau_dp``, the "sharp" momentum of
Betancourt 2017), and the Hamiltonian is ``H = -log p(q) + p' M^{-1} p / 2``,
computed only in :func:`hamiltonian` (one sign convention: log density,
higher is better).

The diagonal and dense cases share one NamedTuple with a runtime flag rather
than two types of functions: numba can take functions as arguments but the
flag keeps one compiled sampler for both metrics.  The low-rank metric is
the diagonal one plus a correction of rank ``k`` (Seyboldt, Carlson and
Carpenter 2026, arXiv:2603.18845; nutpie's ``adaptation="low_rank"``):

    M^{-1} = S (I + U (Lambda - I) U') S,   S = diag(sqrt(inv_diag)),

with ``U`` (dim x k) orthonormal.  It is stored as ``W = (S U)'`` (k x
dim) and ``Lambda``, so that ``M^{-1} p = inv_diag * p + W' ((Lambda - I)
(W p))`` costs O(dim k) with no d x d matrix and no square root per
leapfrog step.  ``k = 0`` (the default, empty arrays) is the diagonal
metric.
"""

from typing import NamedTuple

import numpy as np

from ._jit import compiled
from .rng import fill_normal


class Metric(NamedTuple):
    """Inverse metric and the factor used to draw momenta.

    Attributes
    ----------
    inv_diag : ndarray, shape (dim,)
        Diagonal of ``M^{-1}`` (used when ``dense`` is False).
    inv_dense : ndarray, shape (dim, dim) or (1, 1)
        ``M^{-1}`` (used when ``dense`` is True).
    momentum_factor : ndarray, shape (dim, dim) or (1, 1)
        ``L^{-T}`` where ``M^{-1} = L L'``, so ``L^{-T} z ~ N(0, M)`` (Stan's
        ``dense_e_metric::sample_p``).
    dense : bool
        Which of the two representations is in use.
    lr_vecs : ndarray, shape (k, dim)
        ``W = (S U)'``: the low-rank directions scaled by ``sqrt(inv_diag)``
        (with ``dense`` False; ``k = 0`` for a diagonal metric).
    lr_vals : ndarray, shape (k,)
        Their eigenvalues ``Lambda`` in the scaled space (positive).
    """

    inv_diag: np.ndarray
    inv_dense: np.ndarray
    momentum_factor: np.ndarray
    dense: bool
    lr_vecs: np.ndarray = np.zeros((0, 1))
    lr_vals: np.ndarray = np.zeros(0)


def identity_metric(dim, dense):
    """Return the unit metric of dimension ``dim`` (fresh arrays).

    Parameters
    ----------
    dim : int
    dense : bool
        Allocate the dense representation.

    Returns
    -------
    Metric
    """
    return diagonal_metric(np.ones(dim), dense)


def diagonal_metric(inv_diag, dense):
    """Return the metric whose inverse is ``diag(inv_diag)`` (fresh arrays).

    An initial metric from outside warmup, such as Pathfinder's variances
    (``nuts(init="pathfinder")``).  For a dense metric the inverse is the
    diagonal matrix and the momentum factor ``L^{-T} = diag(1 / sqrt(inv_diag))``.

    Parameters
    ----------
    inv_diag : array_like, shape (dim,)
        Positive and finite.
    dense : bool

    Returns
    -------
    Metric
    """
    inv_diag = np.array(inv_diag, dtype=np.float64)
    if not dense:
        return Metric(inv_diag, np.eye(1), np.eye(1), False)
    return Metric(inv_diag, np.diag(inv_diag), np.diag(1.0 / np.sqrt(inv_diag)), True)


@compiled
def velocity(metric, p, out):
    """Write ``M^{-1} p`` into ``out``."""
    dim = p.shape[0]
    if metric.dense:
        a = metric.inv_dense
        for i in range(dim):
            s = 0.0
            for j in range(dim):
                s += a[i, j] * p[j]
            out[i] = s
    else:
        for i in range(dim):
            out[i] = metric.inv_diag[i] * p[i]
        # + W' (Lambda - I) W p, one direction at a time (O(dim k)).
        w = metric.lr_vecs
        for j in range(metric.lr_vals.shape[0]):
            c = 0.0
            for i in range(dim):
                c += w[j, i] * p[i]
            c *= metric.lr_vals[j] - 1.0
            for i in range(dim):
                out[i] += c * w[j, i]


@compiled
def sample_momentum(metric, rng, out):
    """Draw ``out ~ N(0, M)`` with the chain's RNG."""
    fill_normal(rng, out)
    momentum_from_normal(metric, out)


@compiled
def momentum_from_normal(metric, out):
    """Map ``out ~ N(0, I)`` in place to ``N(0, M)``.

    Low rank: ``M = S^{-1} (I + U (Lambda^{-1} - I) U') S^{-1}``, whose square
    root is ``S^{-1} (I + U (Lambda^{-1/2} - I) U')``.  With ``x = S^{-1} z``
    and ``U = S^{-1} W'``, ``p = x + S^{-2} W' ((Lambda^{-1/2} - I) W x)``;
    the directions are orthogonal, so applying them one at a time in place
    gives the same result.
    """
    dim = out.shape[0]
    if metric.dense:
        # The factor L^{-T} is upper triangular: row i reads z[i:], so the
        # product can overwrite z in place in increasing i.
        f = metric.momentum_factor
        for i in range(dim):
            s = 0.0
            for j in range(i, dim):
                s += f[i, j] * out[j]
            out[i] = s
    else:
        for i in range(dim):
            out[i] = out[i] / np.sqrt(metric.inv_diag[i])
        w = metric.lr_vecs
        for j in range(metric.lr_vals.shape[0]):
            c = 0.0
            for i in range(dim):
                c += w[j, i] * out[i]
            c *= 1.0 / np.sqrt(metric.lr_vals[j]) - 1.0
            for i in range(dim):
                out[i] += c * w[j, i] / metric.inv_diag[i]


@compiled
def hamiltonian(log_density, p, v):
    """Return ``H = -log_density + p.v / 2`` (``v = M^{-1} p``); ``+inf`` at a
    rejected point.

    The only place energy is computed.  A log density that is not finite
    (``-inf`` outside the support, but also ``+inf`` or NaN from a faulty
    density) gives ``H = +inf``: the point has zero weight and counts as a
    divergence.  Taken at face value, ``+inf`` would give ``H = -inf``,
    infinite weight, and the chain would never leave the point.
    """
    kinetic = 0.0
    for i in range(p.shape[0]):
        kinetic += p[i] * v[i]
    h = -log_density + 0.5 * kinetic
    if not h > -np.inf:  # NaN, or -inf from a log density of +inf
        return np.inf
    return h


@compiled
def cholesky_lower(a, out):
    """Write the lower Cholesky factor of ``a`` into ``out``; False if ``a`` is
    not numerically positive definite (``out`` is then unspecified)."""
    n = a.shape[0]
    for j in range(n):
        d = a[j, j]
        for k in range(j):
            d -= out[j, k] * out[j, k]
        if not d > 0.0:
            return False
        out[j, j] = np.sqrt(d)
        for i in range(j + 1, n):
            s = a[i, j]
            for k in range(j):
                s -= out[i, k] * out[j, k]
            out[i, j] = s / out[j, j]
        for i in range(j):
            out[i, j] = 0.0
    return True


@compiled
def inverse_transpose_lower(chol, out):
    """Write ``L^{-T}`` (upper triangular) for lower triangular ``L = chol``.

    Column ``j`` of ``L^{-1}`` by forward substitution on ``L x = e_j``,
    stored as row ``j`` of ``out``.
    """
    n = chol.shape[0]
    for j in range(n):
        for i in range(j):
            out[j, i] = 0.0
        out[j, j] = 1.0 / chol[j, j]
        for i in range(j + 1, n):
            s = 0.0
            for k in range(j, i):
                s += chol[i, k] * out[j, k]
            out[j, i] = -s / chol[i, i]


@compiled
def set_inverse_metric_dense(metric, cov, chol):
    """Install a new dense ``M^{-1}`` in place and recompute the momentum factor.

    ``chol`` is a (dim, dim) workspace for the Cholesky factor (the sampler
    never allocates).  Returns False, keeping the old metric, when ``cov``
    is not numerically positive definite (Stan's regularized estimate always
    is in exact arithmetic).  Written with loops rather than ``np.linalg``
    and slice assignment: those pull LAPACK wrappers and shape-error
    formatting into the compiled kernel, several seconds of its cold
    compilation.
    """
    n = cov.shape[0]
    if not cholesky_lower(cov, chol):
        return False
    for i in range(n):
        for j in range(n):
            metric.inv_dense[i, j] = cov[i, j]
    inverse_transpose_lower(chol, metric.momentum_factor)
    return True
