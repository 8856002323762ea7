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
:mod:`samplers.metric`).  The estimate runs between calls of the compiled
loop (:func:`samplers.kernel.advance`), compiled on its own (only runs that
use it compile it), with loops and :mod:`samplers.eigh` rather than BLAS
and LAPACK, whose threads oversubscribe the cores when every chain's thread
calls them.
"""

import math

import numpy as np
from numba import njit

from ._jit import compiled
from .eigh import OPTIONS, eigh
from .grad_adaptation import MIN_DRAWS, VAR_MAX, VAR_MIN
from .metric import cholesky_lower

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


# The estimate is written with loops over C-contiguous arrays, one
# signature per helper, no slice assignment, fancy indexing or broadcasting:
# those pulled numba's shape-error formatting, argsort and a matrix product
# per memory layout into its compile, 27 of the 34 CPU-seconds of the first
# ``metric="low_rank"`` run after ``python -m logdens warmup`` (events of
# benchmarks/bench_first_run.py --after-warmup --events --metric low_rank).


@njit(**OPTIONS)
def _standardize(draws, grads, old, x, g):
    """Per-coordinate ``s**2 = sqrt(var(x) / var(g))``, clamped, or ``old`` where
    that is not finite and positive (a coordinate that never moved, as
    :func:`samplers.grad_adaptation.grad_var_estimate`); writes the centred
    ``draws / s`` and ``grads * s`` into ``x`` and ``g``.  Returns ``s**2``."""
    n, d = draws.shape
    out = np.empty(d)
    for i in range(d):
        mx, mg = 0.0, 0.0
        for r in range(n):
            mx += draws[r, i]
            mg += grads[r, i]
        mx /= n
        mg /= n
        vx, vg = 0.0, 0.0
        for r in range(n):
            vx += (draws[r, i] - mx) ** 2
            vg += (grads[r, i] - mg) ** 2
        ratio = math.sqrt(vx / vg)
        out[i] = min(max(ratio, VAR_MIN), VAR_MAX) if 0.0 < ratio < np.inf else old[i]
        s = math.sqrt(out[i])
        for r in range(n):
            x[r, i] = (draws[r, i] - mx) / s
            g[r, i] = (grads[r, i] - mg) * s
    return out


@njit(**OPTIONS)
def _gram(a, b, scale):
    """``a' b / scale + I`` for ``a, b`` of shape (n, m), by loops (no BLAS threads)."""
    m = a.shape[1]
    out = np.zeros((m, m))
    for r in range(a.shape[0]):
        for i in range(m):
            ai = a[r, i] / scale
            for j in range(m):
                out[i, j] += ai * b[r, j]
    for i in range(m):
        out[i, i] += 1.0
    return out


@njit(**OPTIONS)
def _matmul(a, b):
    out = np.zeros((a.shape[0], b.shape[1]))
    for i in range(a.shape[0]):
        for k in range(a.shape[1]):
            aik = a[i, k]
            for j in range(b.shape[1]):
                out[i, j] += aik * b[k, j]
    return out


@njit(**OPTIONS)
def _transpose(a):
    out = np.empty((a.shape[1], a.shape[0]))
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[j, i] = a[i, j]
    return out


@njit(**OPTIONS)
def _span(x, g):
    """An orthonormal basis (d, m) of the span of the rows of ``x`` and ``g``
    (for ``2 n < d``), from the eigenvectors of their Gram matrix (``m <= 2 n``,
    directions whose eigenvalue is below 1e-12 of the largest left out)."""
    n, d = x.shape
    z = np.empty((2 * n, d))
    for r in range(n):
        for i in range(d):
            z[r, i] = x[r, i]
            z[n + r, i] = g[r, i]
    zt = _transpose(z)
    vals, vecs = np.empty(2 * n), np.empty((2 * n, 2 * n))
    eigh(_matmul(z, zt), vals, vecs)
    first = 0  # eigenvalues ascend: keep those from ``first`` on
    while first < 2 * n and not vals[first] > vals[2 * n - 1] * 1e-12:
        first += 1
    kept = np.empty((2 * n, 2 * n - first))
    for r in range(2 * n):
        for j in range(first, 2 * n):
            kept[r, j - first] = vecs[r, j] / math.sqrt(vals[j])
    return _matmul(zt, kept)


@njit(**OPTIONS)
def _fisher_covariance(xp, gp, gamma, cov):
    """The SPD ``C`` with ``C B C = A``, ``A = xp' xp / gamma + I``,
    ``B = gp' gp / gamma + I``, into ``cov``: with ``B = L L'``,
    ``C = L^{-T} (L' A L)^{1/2} L^{-1}`` (check: ``C B C = L^{-T} (L' A L) L^{-1} = A``),
    written ``Y Y'`` with ``Y = L^{-T} V diag(nu^{1/4})`` from ``L' A L = V diag(nu) V'``.
    Returns False when ``B`` is not numerically positive definite."""
    m = xp.shape[1]
    a, b = _gram(xp, xp, gamma), _gram(gp, gp, gamma)
    chol = np.zeros((m, m))
    if not cholesky_lower(b, chol):
        return False
    k = _matmul(_matmul(_transpose(chol), a), chol)
    nu, y = np.empty(m), np.empty((m, m))
    if not eigh(k, nu, y):
        return False
    for j in range(m):  # y = v diag(nu^{1/4}), then back substitution: L' y = that
        root = math.sqrt(math.sqrt(max(nu[j], 0.0)))
        for i in range(m):
            y[i, j] *= root
        for i in range(m - 1, -1, -1):
            t = y[i, j]
            for r in range(i + 1, m):
                t -= chol[r, i] * y[r, j]
            y[i, j] = t / chol[i, i]
    yy = _matmul(y, _transpose(y))
    for i in range(m):
        for j in range(m):
            cov[i, j] = yy[i, j]
    return True


@njit(**OPTIONS)
def _strongest(vals, cutoff, max_rank):
    """Indices of the eigenvalues (ascending) outside ``[1 / cutoff, cutoff]``,
    largest ``|log(lambda)|`` first, at most ``max_rank``: a merge from both ends."""
    keep = np.empty(min(max_rank, vals.shape[0]), dtype=np.int64)
    lo, hi, k = 0, vals.shape[0] - 1, 0
    while k < keep.shape[0] and lo <= hi:
        small, large = vals[lo] < 1.0 / cutoff, vals[hi] > cutoff
        if not (small or large):
            break
        if large and (not small or math.log(vals[hi]) >= -math.log(vals[lo])):
            keep[k] = hi
            hi -= 1
        else:
            keep[k] = lo
            lo += 1
        k += 1
    return keep[:k]


@njit(**OPTIONS)
def low_rank_estimate(draws, grads, old_inv_diag, cutoff=EIGVAL_CUTOFF, gamma=GAMMA,
                      max_rank=MAX_RANK):
    """Estimate a diagonal-plus-low-rank inverse metric from draws and scores.

    Parameters
    ----------
    draws, grads : ndarray, shape (n, dim)
        Positions and gradients of the log density there; ``n >= 2``; C-contiguous.
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
        Eigenvalues ``Lambda``; NaN entries when the estimate failed (a
        matrix not numerically positive definite).
    """
    n, d = draws.shape
    x, g = np.empty((n, d)), np.empty((n, d))
    inv_diag = _standardize(draws, grads, old_inv_diag, x, g)
    # With 2 n >= d the span is (almost surely) the whole space: no projection.
    full = 2 * n >= d
    basis = np.eye(1) if full else _span(x, g)
    m = d if full else basis.shape[1]
    cov = np.empty((m, m))
    if full:
        ok = _fisher_covariance(x, g, gamma, cov)
    else:
        ok = _fisher_covariance(_matmul(x, basis), _matmul(g, basis), gamma, cov)
    vals, vecs = np.empty(m), np.empty((m, m))
    if not (ok and eigh(cov, vals, vecs)):
        return inv_diag, np.zeros((1, d)), np.full(1, np.nan)
    keep = _strongest(vals, cutoff, max_rank)
    chosen = np.empty((m, keep.shape[0]))
    for r in range(m):
        for j in range(keep.shape[0]):
            chosen[r, j] = vecs[r, keep[j]]
    directions = chosen if full else _matmul(basis, chosen)  # orthonormal columns
    w, lam = np.empty((keep.shape[0], d)), np.empty(keep.shape[0])
    for j in range(keep.shape[0]):
        lam[j] = vals[keep[j]]
        for i in range(d):
            w[j, i] = directions[i, j] * math.sqrt(inv_diag[i])
    return inv_diag, w, lam


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


def compile_estimate():
    """Compile :func:`low_rank_estimate` (or load it from numba's cache) now, on
    a tiny problem: the runner compiles everything before sampling starts, so
    that a Ctrl-C never lands in a compile."""
    x = np.arange(6.0).reshape(3, 2) ** 2
    low_rank_estimate(x, -x, np.ones(2), EIGVAL_CUTOFF, GAMMA, 2)


def usable_estimate(draws, grads, inv_diag, max_rank):
    """:func:`low_rank_estimate` at the defaults, or None where it is not finite
    and positive (the caller keeps its metric): the one rule both warmups
    (NUTS per chain, ChEES over all chains) accept an estimate by."""
    new = low_rank_estimate(draws, grads, inv_diag, EIGVAL_CUTOFF, GAMMA, max_rank)
    if not (np.all(np.isfinite(new[1])) and np.all(np.isfinite(new[2])) and np.all(new[2] > 0)):
        return None
    return new


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
    new = usable_estimate(draws[end - foreground:end], grads[end - foreground:end], metric.inv_diag,
                          metric.lr_vals.shape[0])
    if new is None:
        return
    inv_diag, vecs, vals = new
    k = vals.shape[0]
    metric.inv_diag[:] = inv_diag
    metric.lr_vecs[:k] = vecs
    metric.lr_vals[:k] = vals
    counts[RANK] = k
    if not counts[CHANGED]:
        counts[CHANGED] = counts[RESTART] = 1
