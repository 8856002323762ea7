"""nutpie's warmup: a diagonal metric from draws and gradients, in overlapping windows.

For a Gaussian posterior with covariance ``diag(s**2)`` the gradient of the
log density is ``-x / s**2``, so ``var(x) = s**2`` and ``var(grad) = 1/s**2``
and ``sqrt(var(x) / var(grad)) = s**2``: the estimate uses the curvature the
gradients carry and converges much faster than ``var(x)`` alone, from draws
that are still correlated (Seyboldt, nutpie / nuts-rs, "diagonal mass matrix
adaptation from draws and gradients").  The schedule is nuts-rs's
``GlobalStrategy``, written anew here:

- before the first draw the inverse metric is ``1 / |grad|`` at the initial
  point (or a given one, such as Pathfinder's variances), and both
  estimators hold that point;
- every warmup draw that moved the chain enters two estimators, the
  *foreground* one that sets the metric (after every draw, once it holds 3
  draws) and the *background* one; at a *switch* the background becomes
  the foreground and a new background starts empty, so the metric always
  comes from the recent draws only;
- during the early phase (the first 30% of warmup) a switch happens every 10
  draws; then windows start at 80 draws (or the background's count, if
  larger) and grow 1.5x after each switch; no switch starts a window that
  would not end before the final phase;
- the final phase (the last 15% of warmup) keeps the metric fixed and only
  adapts the step size.

The step size (in :mod:`samplers.kernel`) follows dual averaging through the
whole warmup with one restart, the first time the metric changes; the draws
use ``exp(x_bar)`` of the last warmup iteration.

State lives in two arrays so that a chain can stop and resume between
chunks: ``moments`` (rows below, each ``(dim,)``: the foreground's and the
background's means and sums of squared deviations of draws and gradients)
and ``counts`` (draws in each estimator, the current window size, and
whether the metric has changed yet).
"""

import math

import numpy as np

from ._jit import compiled

#: Fraction of warmup in the early phase (short windows).
EARLY_WINDOW = 0.3
#: Fraction of warmup at the end that adapts only the step size.
STEP_SIZE_WINDOW = 0.15
#: Draws per window in the early phase.
EARLY_SWITCH_FREQ = 10
#: First window after the early phase.
SWITCH_FREQ = 80
#: Growth factor of the windows after the early phase.
WINDOW_GROWTH = 1.5
#: Draws the foreground needs before it sets the metric.
MIN_DRAWS = 3
#: Bounds of an inverse-metric entry (nuts-rs's clamp).
VAR_MIN, VAR_MAX = 1e-20, 1e20

# Rows of ``moments``: foreground (FG) then background (BG), each the mean
# and summed squared deviations of the draws (X) and of the gradients (G).
FG_X_MEAN, FG_X_M2, FG_G_MEAN, FG_G_M2, BG_X_MEAN, BG_X_M2, BG_G_MEAN, BG_G_M2 = range(8)
N_MOMENTS = 8
# Entries of ``counts``.
FG_N, BG_N, WINDOW, CHANGED, N_COUNTS = range(5)


def grad_adaptation_phases(tune, early_window=EARLY_WINDOW, step_size_window=STEP_SIZE_WINDOW):
    """Return ``(early_end, final_start)`` for ``tune`` warmup iterations.

    Iterations ``< early_end`` switch estimators every
    :data:`EARLY_SWITCH_FREQ` draws; iterations ``>= final_start`` adapt only
    the step size.  Rounded down as in nuts-rs (``0.3 * 1000 -> 300``,
    ``1000 - 0.15 * 1000 -> 850``).
    """
    tune = int(tune)
    return int(early_window * tune), tune - int(step_size_window * tune)


def grad_adaptation_buffers(dim):
    """Fresh ``(moments, counts)`` arrays of one chain, shapes (8, dim) and (4,)."""
    return np.zeros((N_MOMENTS, dim)), np.zeros(N_COUNTS, dtype=np.int64)


@compiled
def _add(moments, mean_row, m2_row, n, x):
    """Welford's update of one (mean, m2) pair of rows with the ``n``-th sample ``x``."""
    for i in range(x.shape[0]):
        delta = x[i] - moments[mean_row, i]
        moments[mean_row, i] += delta / n
        moments[m2_row, i] += delta * (x[i] - moments[mean_row, i])


@compiled
def grad_var_update(moments, counts, q, g):
    """Add the draw ``q`` and its gradient ``g`` to both estimators."""
    counts[FG_N] += 1
    counts[BG_N] += 1
    _add(moments, FG_X_MEAN, FG_X_M2, counts[FG_N], q)
    _add(moments, FG_G_MEAN, FG_G_M2, counts[FG_N], g)
    _add(moments, BG_X_MEAN, BG_X_M2, counts[BG_N], q)
    _add(moments, BG_G_MEAN, BG_G_M2, counts[BG_N], g)


@compiled
def grad_var_switch(moments, counts):
    """The background estimator becomes the foreground; a new background starts empty."""
    for r in range(4):
        for i in range(moments.shape[1]):
            moments[r, i] = moments[r + 4, i]
            moments[r + 4, i] = 0.0
    counts[FG_N] = counts[BG_N]
    counts[BG_N] = 0


@compiled
def grad_var_start(moments, counts, q, g, window):
    """Start the estimators at the initial point; the metric is left as it is.

    Followed by :func:`inverse_metric_from_gradient` unless the metric was
    given, as by ``nuts(init="pathfinder")``: the given one serves until the
    first estimate, as ``1 / |g|`` does otherwise.
    """
    for r in range(N_MOMENTS):
        for i in range(moments.shape[1]):
            moments[r, i] = 0.0
    counts[FG_N], counts[BG_N], counts[WINDOW], counts[CHANGED] = 0, 0, window, 0
    grad_var_update(moments, counts, q, g)


@compiled
def inverse_metric_from_gradient(g, inv_diag):
    """The inverse metric ``1 / |g|`` at the initial point, before the first estimate.

    A gradient entry that is zero or not finite leaves that entry at 1 (nuts-rs
    would set ``1e20`` for a zero gradient, a metric the step-size heuristic
    then has to fight until the first estimate).  Not a caller of
    :func:`grad_var_start`, which the loop calls in both cases: numba compiles
    a helper once per set of options of its callers, and a helper called by
    the loop and by another helper was compiled twice.
    """
    for i in range(g.shape[0]):
        a = abs(g[i])
        inv_diag[i] = min(max(1.0 / a, VAR_MIN), VAR_MAX) if 0.0 < a < np.inf else 1.0


@compiled
def grad_var_estimate(moments, counts, out):
    """Write ``sqrt(var(draws) / var(grads))`` of the foreground into ``out``.

    Returns False, writing nothing, while the foreground holds fewer than
    :data:`MIN_DRAWS` draws.  An entry whose ratio is zero or not finite (a
    coordinate that never moved, or a constant gradient) keeps its value; the
    others are clamped to ``[VAR_MIN, VAR_MAX]``.  Both variances share the
    denominator ``n - 1``, which cancels.
    """
    if counts[FG_N] < MIN_DRAWS:
        return False
    for i in range(out.shape[0]):
        v = math.sqrt(moments[FG_X_M2, i] / moments[FG_G_M2, i])
        if 0.0 < v < np.inf:
            out[i] = min(max(v, VAR_MIN), VAR_MAX)
    return True


@compiled
def next_window(window, growth):
    """The window after ``window`` draws: ``round(growth * window)``, at least one more."""
    return max(window + 1, int(round(window * growth)))


@compiled
def switch_due(it, counts, early_end, final_start, early_freq, growth):
    """Whether warmup iteration ``it`` switches estimators (nuts-rs's schedule).

    Updates ``counts[WINDOW]``: at ``it == early_end`` it becomes at least
    the background's count, and after a switch past the early phase it grows
    (:func:`next_window`).  A switch needs a full window in the background,
    and room for the next window before ``final_start``.
    """
    early = it < early_end
    if it == early_end:
        counts[WINDOW] = max(counts[WINDOW], counts[BG_N])
    freq = early_freq if early else counts[WINDOW]
    upcoming = early_freq if early else next_window(counts[WINDOW], growth)
    if counts[BG_N] < freq or it + upcoming > final_start:
        return False
    if not early:
        counts[WINDOW] = upcoming
    return True


@compiled
def grad_window_update(moments, counts, it, moved, q, g, early_end, final_start, early_freq,
                       growth):
    """Add a warmup draw to the estimators and switch them when due; returns
    whether they switched.  ``moved`` says the transition left its start
    point: nuts-rs leaves out draws equal to the previous one, which carry no
    new information.  The windows of the diagonal and of the low-rank metric
    (:mod:`samplers.low_rank`, whose foreground is the last ``counts[FG_N]``
    draws that moved)."""
    if moved:
        grad_var_update(moments, counts, q, g)
    if switch_due(it, counts, early_end, final_start, early_freq, growth):
        grad_var_switch(moments, counts)
        return True
    return False


@compiled
def grad_adaptation_update(moments, counts, it, moved, q, g, inv_diag, early_end,
                           final_start, early_freq, growth):
    """One warmup iteration ``it < final_start`` of the metric; returns whether
    the inverse metric changed for the first time (the caller then re-runs the
    step-size heuristic and restarts dual averaging)."""
    grad_window_update(moments, counts, it, moved, q, g, early_end, final_start, early_freq,
                       growth)
    if grad_var_estimate(moments, counts, inv_diag) and counts[CHANGED] == 0:
        counts[CHANGED] = 1
        return True
    return False
