"""A diagonal-plus-low-rank inverse metric from draws and their scores.

The estimator of Seyboldt, Carlson and Carpenter (2026, arXiv:2603.18845),
as nutpie 0.16 runs it (``adaptation="low_rank"``; nuts-rs
``LowRankMassMatrixStrategy``), written anew:

1. a diagonal scale per coordinate, ``s_i**2 = sqrt(var(x_i) / var(g_i))``
   (the diagonal Fisher estimate of :mod:`samplers.grad_adaptation`);
2. in the scaled space (``x / s``, ``g * s``, centred) the covariance ``C``
   that minimizes the Fisher divergence of a Gaussian: the SPD solution of
   ``C B C = A`` with ``A`` and ``B`` the draws' and the scores' summed outer
   products, i.e. the geometric mean ``B^{-1/2} (B^{1/2} A B^{1/2})^{1/2}
   B^{-1/2}``.  For a Gaussian target with exact scores it is the target's
   covariance whatever the draws.  Both matrices are projected on the span
   of the draws and scores (at most ``2 n`` dimensions for ``n`` draws) and
   regularized as ``A / gamma + I``, ``B / gamma + I``;
3. the eigenvectors of ``C`` whose eigenvalue lies outside
   ``[1 / cutoff, cutoff]``: the rank is what the data show, capped at
   ``max_rank`` (the largest ``|log(lambda)|`` are kept).

The inverse metric is then ``S (I + U (Lambda - I) U') S`` (see
:mod:`samplers.metric`).  Runs in numpy between calls of the compiled loop
(:func:`samplers.kernel.advance`): the eigendecompositions use LAPACK, and
the loop stays free of it (compile time).
"""

import numpy as np

from ._jit import compiled
from .grad_adaptation import MIN_DRAWS, VAR_MAX, VAR_MIN

#: Eigenvalues in ``[1 / EIGVAL_CUTOFF, EIGVAL_CUTOFF]`` are left out (nuts-rs's
#: ``LowRankSettings::eigval_cutoff`` default; nutpie's ``mass_matrix_eigval_cutoff``).
EIGVAL_CUTOFF = 2.0
#: Regularization of the summed outer products (nutpie's ``mass_matrix_gamma``).
GAMMA = 1e-5
#: Warmup draws between two estimates (nuts-rs's low-rank ``mass_matrix_update_freq``);
#: an estimator switch also triggers one.
UPDATE_FREQ = 20
#: Cap of the rank: memory ``max_rank * dim`` per chain, leapfrog cost O(dim max_rank).
MAX_RANK = 100


def _sym_power(m, power):
    """``m ** power`` of a symmetric positive definite matrix, by eigendecomposition."""
    vals, vecs = np.linalg.eigh(m)
    return (vecs * vals ** power) @ vecs.T


def _scales(draws, grads, old):
    """Per-coordinate ``s**2 = sqrt(var(x) / var(g))``, clamped; ``old`` where
    that is not finite and positive (a coordinate that never moved), as
    :func:`samplers.grad_adaptation.grad_var_estimate` does."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.sqrt(draws.var(axis=0) / grads.var(axis=0))
    ok = (ratio > 0) & np.isfinite(ratio)
    return np.where(ok, np.clip(ratio, VAR_MIN, VAR_MAX), old)


def low_rank_estimate(draws, grads, old_inv_diag, cutoff=EIGVAL_CUTOFF, gamma=GAMMA,
                      max_rank=MAX_RANK):
    """Estimate a diagonal-plus-low-rank inverse metric from draws and scores.

    Parameters
    ----------
    draws, grads : ndarray, shape (n, dim)
        Positions and gradients of the log density there; ``n >= 2``.
    old_inv_diag : ndarray, shape (dim,)
        The current diagonal, kept for coordinates with no estimate.
    cutoff : float
        Keep eigenvalues outside ``[1 / cutoff, cutoff]`` (``>= 1``).
    gamma : float
        Regularization (smaller: less).
    max_rank : int

    Returns
    -------
    inv_diag : ndarray, shape (dim,)
        ``s**2``.
    vecs : ndarray, shape (k, dim)
        ``W = (S U)'``, ``S = diag(s)``.
    vals : ndarray, shape (k,)
        Eigenvalues ``Lambda``.

    Raises
    ------
    numpy.linalg.LinAlgError
        When an eigendecomposition fails (the caller keeps its metric).
    """
    inv_diag = _scales(draws, grads, old_inv_diag)
    s = np.sqrt(inv_diag)
    x = (draws - draws.mean(axis=0)) / s
    g = (grads - grads.mean(axis=0)) * s
    # An orthonormal basis of the span of the draws and scores (rows of x, g).
    u, sv, _ = np.linalg.svd(np.concatenate([x, g]).T, full_matrices=False)
    basis = u[:, sv > sv[0] * 1e-10] if sv.size and sv[0] > 0 else u[:, :0]
    xp, gp = x @ basis, g @ basis
    eye = np.eye(basis.shape[1])
    a = xp.T @ xp / gamma + eye
    b_half = _sym_power(gp.T @ gp / gamma + eye, 0.5)
    b_inv_half = np.linalg.inv(b_half)
    mid = _sym_power(b_half @ a @ b_half, 0.5)
    cov = b_inv_half @ mid @ b_inv_half
    vals, vecs = np.linalg.eigh(0.5 * (cov + cov.T))
    keep = np.flatnonzero((vals > cutoff) | (vals < 1.0 / cutoff))
    keep = keep[np.argsort(-np.abs(np.log(vals[keep])), kind="stable")][:max_rank]
    directions = basis @ vecs[:, keep]  # (dim, k), orthonormal columns
    return inv_diag, np.ascontiguousarray((directions * s[:, None]).T), vals[keep].copy()


# Entries of a chain's ``lr_counts``: rows of draws stored, iteration of the
# last estimate, an estimate due (the loop returned for it), the step size to
# re-initialize (after the first estimate), the rank in use, whether an
# estimate was installed yet.
ROWS, LAST, PENDING, RESTART, RANK, CHANGED, N_LR_COUNTS = range(7)


def low_rank_buffers(dim, rows, max_rank=MAX_RANK):
    """Fresh low-rank state of one chain: ``(vecs, vals, draws, grads, counts)``,
    shapes ``(k, dim)``, ``(k,)``, ``(rows, dim)`` twice and ``(N_LR_COUNTS,)``,
    with ``k = min(dim, max_rank)`` and ``rows`` the warmup draws it may hold."""
    k = min(dim, max_rank)
    return (np.zeros((k, dim)), np.ones(k), np.zeros((rows, dim)), np.zeros((rows, dim)),
            np.zeros(N_LR_COUNTS, dtype=np.int64))


@compiled
def low_rank_store(draws, grads, counts, q, g):
    """Append the draw ``q`` and its gradient ``g`` (nothing once the buffers are full)."""
    row = counts[ROWS]
    if row < draws.shape[0]:
        for i in range(q.shape[0]):
            draws[row, i] = q[i]
            grads[row, i] = g[i]
        counts[ROWS] = row + 1


@compiled
def low_rank_due(counts, foreground, it, switched, update_freq):
    """Whether warmup iteration ``it`` ends with a new estimate (nuts-rs's
    ``GlobalStrategy``: at an estimator switch, or ``update_freq`` iterations
    after the last estimate, once the foreground holds 3 draws); marks it
    pending for :func:`install_low_rank`."""
    if foreground < MIN_DRAWS or not (switched or it - counts[LAST] >= update_freq):
        return False
    counts[LAST] = it
    counts[PENDING] = 1
    return True


def install_low_rank(metric, counts, draws, grads, foreground):
    """Estimate from the last ``foreground`` stored draws and install it in
    ``metric`` in place; an estimate that fails or is not finite keeps the old
    metric.  The first installed one asks the loop to re-run the step-size
    heuristic (``counts[RESTART]``), as nutpie does at its first metric change."""
    counts[PENDING] = 0
    end = counts[ROWS]
    if foreground > end:
        raise ValueError(f"metric='low_rank': the chain holds {end} warmup draws, its "
                         f"window {foreground}; its state needs low-rank buffers "
                         "(samplers.sample._chain_state(..., low_rank_rows=tune + 1))")
    try:
        inv_diag, vecs, vals = low_rank_estimate(draws[end - foreground:end],
                                                 grads[end - foreground:end], metric.inv_diag,
                                                 max_rank=metric.lr_vals.shape[0])
    except np.linalg.LinAlgError:
        return
    if not (np.all(np.isfinite(vecs)) and np.all(vals > 0) and np.all(np.isfinite(vals))):
        return
    k = vals.shape[0]
    metric.inv_diag[:] = inv_diag
    metric.lr_vecs[:k] = vecs
    metric.lr_vals[:k] = vals
    counts[RANK] = k
    if not counts[CHANGED]:
        counts[CHANGED] = counts[RESTART] = 1
