"""Metric adaptation: Welford estimators and Stan's windowed warmup schedule.

Welford's online mean and (co)variance as ``(init, update, final)`` triples
over NamedTuple states (the arrays are updated in place, the count is
returned in a new state; ``final`` writes into a given array: the compiled
sampler never allocates), Stan's regularization toward ``1e-3 I``, and the
warmup windows of Stan's ``windowed_adaptation``: an initial fast buffer of
75 iterations, slow windows starting at 25 and doubling, a terminal fast
buffer of 50 (Stan reference manual, "HMC algorithm parameters").
"""

from typing import NamedTuple

import numpy as np

from ._jit import compiled

#: Stan's default warmup windows.
INIT_BUFFER = 75
BASE_WINDOW = 25
TERM_BUFFER = 50


class WelfordDiag(NamedTuple):
    """Running mean and sum of squared deviations per coordinate."""

    n: int
    mean: np.ndarray
    m2: np.ndarray


class WelfordDense(NamedTuple):
    """Running mean and matrix of summed outer products of deviations."""

    n: int
    mean: np.ndarray
    m2: np.ndarray


@compiled
def welford_diag_init(mean, m2):
    """Reset the given buffers and return an empty diagonal estimator."""
    for i in range(mean.shape[0]):
        mean[i] = 0.0
        m2[i] = 0.0
    return WelfordDiag(0, mean, m2)


@compiled
def welford_diag_update(state, x):
    """Add one sample ``x``; buffers are updated in place."""
    n = state.n + 1
    for i in range(x.shape[0]):
        delta = x[i] - state.mean[i]
        state.mean[i] += delta / n
        state.m2[i] += delta * (x[i] - state.mean[i])
    return WelfordDiag(n, state.mean, state.m2)


@compiled
def welford_diag_final(state, out):
    """Write the sample variance (denominator ``n - 1``) into ``out``."""
    for i in range(out.shape[0]):
        out[i] = state.m2[i] / (state.n - 1.0)


@compiled
def welford_dense_init(mean, m2):
    """Reset the given buffers and return an empty dense estimator."""
    for i in range(mean.shape[0]):
        mean[i] = 0.0
        for j in range(mean.shape[0]):
            m2[i, j] = 0.0
    return WelfordDense(0, mean, m2)


@compiled
def welford_dense_update(state, x):
    """Add one sample ``x``: ``m2 += (n - 1)/n (x - mean_old)(x - mean_old)'``.

    The same update as ``(x - mean_old)(x - mean_new)'``, written with the
    old mean only so that it needs no buffer for ``x - mean_old``.
    """
    n = state.n + 1
    dim = x.shape[0]
    scale = (n - 1.0) / n
    for i in range(dim):
        d_i = scale * (x[i] - state.mean[i])
        for j in range(dim):
            state.m2[i, j] += d_i * (x[j] - state.mean[j])
    for i in range(dim):
        state.mean[i] += (x[i] - state.mean[i]) / n
    return WelfordDense(n, state.mean, state.m2)


@compiled
def welford_dense_final(state, out):
    """Write the sample covariance (denominator ``n - 1``), symmetrized, into ``out``."""
    dim = out.shape[0]
    for i in range(dim):
        for j in range(dim):
            out[i, j] = 0.5 * (state.m2[i, j] + state.m2[j, i]) / (state.n - 1.0)


@compiled
def regularize_variance(var, n):
    """Stan's shrinkage, in place: ``var <- (n / (n + 5)) var + 1e-3 (5 / (n + 5))``."""
    for i in range(var.shape[0]):
        var[i] = (n / (n + 5.0)) * var[i] + 1e-3 * (5.0 / (n + 5.0))


@compiled
def regularize_covariance(cov, n):
    """Stan's shrinkage toward the identity, in place:
    ``cov <- (n/(n+5)) cov + 1e-3 (5/(n+5)) I``."""
    for i in range(cov.shape[0]):
        for j in range(cov.shape[0]):
            cov[i, j] *= n / (n + 5.0)
        cov[i, i] += 1e-3 * (5.0 / (n + 5.0))


def warmup_schedule(tune, init_buffer=INIT_BUFFER, term_buffer=TERM_BUFFER,
                    base_window=BASE_WINDOW):
    """Return Stan's metric-adaptation windows for ``tune`` warmup iterations.

    Parameters
    ----------
    tune : int
    init_buffer, term_buffer, base_window : int
        Stan's ``adapt init_buffer``, ``term_buffer`` and ``window``: the
        initial fast buffer, the terminal fast buffer (step size only) and
        the first slow window.

    Returns
    -------
    in_window : ndarray of bool, shape (tune,)
        Iterations whose sample enters the metric estimate.
    window_end : ndarray of bool, shape (tune,)
        Iterations after which the metric is updated (and the step size
        re-initialized).

    Notes
    -----
    Follows Stan's ``windowed_adaptation``: with fewer than 20 iterations no
    metric is estimated; when ``75 + 25 + 50 > tune`` the buffers become 15%
    and 10% of ``tune`` and one slow window takes the rest.  A window that
    would end within twice its size of the terminal buffer is stretched to
    the terminal buffer.
    """
    in_window = np.zeros(tune, dtype=np.bool_)
    window_end = np.zeros(tune, dtype=np.bool_)
    if tune < 20:
        return in_window, window_end
    init, base, term = init_buffer, base_window, term_buffer
    if init + base + term > tune:
        init, term = int(0.15 * tune), int(0.1 * tune)
        base = tune - (init + term)
    last = tune - term - 1
    size, next_end = base, init + base - 1
    for counter in range(tune):
        in_window[counter] = init <= counter < tune - term
        if counter == next_end:
            window_end[counter] = True
            if next_end == last:
                next_end = -1  # no more windows
                continue
            size *= 2
            next_end = counter + size
            if next_end != last and next_end + 2 * size >= tune - term:
                next_end = last
    return in_window, window_end
