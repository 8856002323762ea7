"""ChEES's low-rank metric: :mod:`samplers.low_rank`'s estimate from all chains at once.

``ld.chees(..., metric="low_rank")`` adapts the diagonal-plus-low-rank
inverse metric of Seyboldt, Carlson and Carpenter (2026) in the windows the
diagonal ChEES warmup pools (Stan's, :func:`samplers.mass_matrix.warmup_schedule`):
after each iteration of a window every chain's position and gradient go to
one buffer (:func:`store`; a ring that keeps the window's latest
:data:`MAX_ROWS` rows), and at the window's end the compiled loop returns so
that :func:`install` computes the Fisher-divergence estimate
(:func:`samplers.low_rank.low_rank_estimate`) from them.  The chains are
independent, so a window of 25 iterations of 64 chains gives 1,600 draws,
where NUTS's per-chain estimate has the draws of one chain only.

A new metric changes the time scale the trajectory length was tuned to:
:func:`install` leaves the factor for ``T`` (:func:`length_factor`) in the
adaptation's scalars, and the loop, called again, rescales ``T`` and finds a
new step size, as after a diagonal update
(:func:`samplers.chees_adaptation.pooled_variance_final`).
"""

import math

import numpy as np

from ._jit import compiled
from .grad_adaptation import MIN_DRAWS
from .low_rank import MAX_RANK, usable_estimate

#: Entries of the counters: rows stored in the window (may exceed the
#: buffer: a ring), an estimate due, ``T`` to rescale and the step size to
#: find (an estimate was installed), the rank in use.
STORED, PENDING, RESTART, RANK, N_COUNTS = range(5)
#: Rows of the buffer: the estimate costs O(rows dim^2) with ``2 rows >= dim``.
MAX_ROWS = 1000
#: Power iterations of :func:`length_factor`.
POWER_ITERATIONS = 100


def buffers(dim, rows, max_rank=MAX_RANK):
    """Fresh low-rank state of the ensemble: ``(vecs, vals, q, g, counts)``,
    shapes ``(k, dim)``, ``(k,)``, ``(rows, dim)`` twice and ``(N_COUNTS,)``,
    with ``k = min(dim, max_rank)`` (``rows = 0``: no low-rank metric)."""
    k = min(dim, max_rank) if rows else 0
    return (np.zeros((k, dim)), np.ones(k), np.zeros((rows, dim)), np.zeros((rows, dim)),
            np.zeros(N_COUNTS, dtype=np.int64))


@compiled
def store(lr_q, lr_g, counts, q, g):
    """Append every chain's position (rows of ``q``) and gradient to the ring."""
    rows = lr_q.shape[0]
    for k in range(q.shape[0]):
        r = counts[STORED] % rows
        for i in range(q.shape[1]):
            lr_q[r, i] = q[k, i]
            lr_g[r, i] = g[k, i]
        counts[STORED] += 1


def _inverse_times(metric, x):
    """``M^{-1} x`` of ``metric = (inv_diag, vecs, vals)`` (:mod:`samplers.metric`)."""
    inv_diag, vecs, vals = metric
    return inv_diag * x + vecs.T @ ((vals - 1.0) * (vecs @ x))


def _metric_times(metric, x):
    """``M x``: ``M = S^{-1} (I + U (Lambda^{-1} - I) U') S^{-1}`` with ``U = S^{-1} W'``."""
    inv_diag, vecs, vals = metric
    y = x / inv_diag
    return y + (vecs.T @ ((1.0 / vals - 1.0) * (vecs @ y))) / inv_diag


def length_factor(old, new):
    """``1 / sqrt(lambda_max)`` of ``M_old M_new^{-1}``: the factor for ``T``.

    ``lambda_max`` is the largest variance, in the old metric's whitened
    coordinates, of a target whose covariance is the new ``M^{-1}``: the
    slowest direction, which sets the time scale ChEES tunes ``T`` to (for
    two diagonal metrics ``max_i new_i / old_i``, as
    :func:`samplers.chees_adaptation.pooled_variance_final`).  Power iteration
    from a fixed start, then the generalized Rayleigh quotient
    ``v' C_new v / v' C_old v`` (never above ``lambda_max``).
    """
    v = np.random.default_rng(0).normal(size=old[0].shape[0])
    for _ in range(POWER_ITERATIONS):
        v = _metric_times(old, _inverse_times(new, v))
        v /= np.linalg.norm(v)
    ratio = (v @ _inverse_times(new, v)) / (v @ _inverse_times(old, v))
    return 1.0 / math.sqrt(ratio)


def install(inv_diag, vecs, vals, lr_q, lr_g, counts):
    """At a window's end: estimate from the stored rows, install the metric in
    place and return the factor for ``T`` (:func:`length_factor`), or None
    (the metric kept: fewer than 3 rows, or an estimate not finite and
    positive).  The window's rows are dropped either way."""
    n = min(int(counts[STORED]), lr_q.shape[0])
    counts[PENDING] = counts[STORED] = 0
    if n < MIN_DRAWS:
        return None
    new = usable_estimate(lr_q[:n], lr_g[:n], inv_diag, vals.shape[0])
    if new is None:
        return None
    k_old, k = int(counts[RANK]), new[2].shape[0]
    factor = length_factor((inv_diag.copy(), vecs[:k_old].copy(), vals[:k_old].copy()), new)
    inv_diag[:] = new[0]
    vecs[:k] = new[1]
    vals[:k] = new[2]
    counts[RANK] = k
    counts[RESTART] = 1
    return factor
