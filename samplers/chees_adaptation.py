"""ChEES-HMC warmup: trajectory length by the ChEES criterion, across chains.

ChEES-HMC (Hoffman, Radul and Sountsov 2021, "An Adaptive-MCMC Scheme for
Setting Trajectory Lengths in Hamiltonian Monte Carlo", AISTATS) runs many
chains in lockstep and tunes the one trajectory length ``T`` they share by
stochastic gradient ascent on the Change in the Estimator of the Expected
Square,

    ChEES(T) = 1/4 E[(||q' - E q||^2 - ||q - E q||^2)^2]     (paper, eq. 2)

where ``q`` is a chain's state before a transition and ``q'`` the proposal
after integrating for time ``t``.  Its derivative along the trajectory is
``(||q' - E q||^2 - ||q - E q||^2) (q' - E q) . v'`` with ``v' = dq'/dt`` the
velocity at the proposal (paper, eq. 5), the expectation is replaced by the
chains' means and the per-chain gradients are averaged with their acceptance
probabilities as weights (paper, eq. 6).

Choices, each from a reference implementation:

- the optimizer is Adam without momentum on ``log T`` (RMSProp with bias
  correction), learning rate 0.025, second-moment rate 0.05, each update
  clipped to +-0.35 (about log(2)/2), and ``T`` at most
  ``max_leapfrog_steps`` steps (TFP's ``GradientBasedTrajectoryLengthAdaptation``);
- two additions: from the start ``T`` first climbs by the clip per
  iteration while the gradient is positive (:func:`trajectory_update`), and
  each metric update rescales ``T`` to the new metric's time scale
  (:func:`pooled_variance_final`);
- after warmup ``T`` is the iterate average of ``log T`` with weights
  ``t**-0.5`` (TFP; BlackJAX's ``decay_rate=0.5``);
- the trajectory time of an iteration is ``h_n T`` with ``h_n`` the
  base-2 Halton (van der Corput) sequence, shared by all chains (paper,
  section 3.3; TFP and BlackJAX default);
- chains with acceptance below ``1e-4``, a divergence or a non-finite
  gradient contribute nothing (TFP); proposals are centred on their
  acceptance-weighted mean, start points on their plain mean (TFP, BlackJAX);
- the step size is adapted by dual averaging (:mod:`samplers.step_size`) on
  the harmonic mean of the non-divergent chains' acceptance probabilities,
  target 0.651 (Beskos et al. 2013's optimum for HMC; BlackJAX's
  ``chees_adaptation``; the harmonic mean keeps the slowest chains moving).

One departure, stated: the criterion is evaluated in the coordinates of the
adapted metric, ``z = M^{1/2} q`` (``z_i = q_i / sqrt(inv_metric_i)`` for a
diagonal one).  HMC with a
metric is identity-metric HMC on ``z``, so this is the paper's criterion for
the target the sampler actually integrates; in the original coordinates the
largest-scale parameters would dominate it.

Every function here is an ``(init, update, final)`` piece over NamedTuples
or arrays, compiled as a samplers helper (:mod:`samplers._jit`).
"""

import math
from typing import NamedTuple

from ._jit import compiled
from .mass_matrix import (WelfordDiag, regularize_variance, welford_diag_final,
                          welford_diag_init, welford_diag_update)

#: Dual-averaging target of the harmonic-mean acceptance (Beskos et al. 2013).
TARGET_ACCEPT = 0.651
#: Adam (no momentum) on log T: learning rate, rate of the squared-gradient
#: average, clip of one update, and the bias-correction epsilon (TFP).
LEARNING_RATE = 0.025
SQ_GRAD_RATE = 0.05
MAX_LOG_UPDATE = 0.35
_TINY = 1e-20
#: Chains accepting with a lower probability give no trajectory gradient (TFP).
MIN_ACCEPT = 1e-4
#: Exponent of the iterate-average weights ``t**-AVERAGE_DECAY`` of log T.
AVERAGE_DECAY = 0.5
#: TFP's and BlackJAX's cap on leapfrog steps per transition.
MAX_LEAPFROG_STEPS = 1000


class TrajectoryState(NamedTuple):
    """Adam (no momentum) on ``log T`` and the iterate average after warmup.

    Attributes
    ----------
    log_length : float
        Current ``log T``.
    sq_grad : float
        Exponential average of squared gradients.
    count : float
        Updates so far (for the bias correction).
    log_length_avg : float
        Weighted average of ``log T`` since the last restart.
    avg_count : float
        Updates since that restart.
    climbing : float
        1.0 while in the climb that starts every (re)start, else 0.0.
    """

    log_length: float
    sq_grad: float
    count: float
    log_length_avg: float
    avg_count: float
    climbing: float


@compiled
def halton(n):
    """The ``n``-th base-2 Halton (van der Corput) number, in (0, 1) for ``n >= 1``.

    The bits of ``n`` mirrored about the binary point: 1 -> 0.5, 2 -> 0.25,
    3 -> 0.75, ...; quasi-random jitter spreads the trajectory times evenly.
    """
    h, f = 0.0, 0.5
    while n > 0:
        if n & 1:
            h += f
        n >>= 1
        f *= 0.5
    return h


@compiled
def trajectory_init(length):
    """Start Adam at trajectory length ``length``."""
    log_length = math.log(length)
    return TrajectoryState(log_length, 0.0, 0.0, log_length, 0.0, 1.0)


@compiled
def trajectory_update(state, grad, learning_rate, max_log_length):
    """One Adam step (``beta1 = 0``) of ``log T`` along ``grad`` (ascent), then
    the iterate average; ``log T`` stays at most ``max_log_length``.

    ``v <- (1 - r) v + r g^2``, ``v_hat = v / (1 - (1 - r)^t)``,
    ``log T <- log T + clip(lr g / sqrt(v_hat), +-0.35)``.

    While climbing (from the start until the first gradient that is not
    positive) ``log T`` grows by the clip, 0.35, instead: from one step Adam
    climbs by about ``lr`` per iteration, so a trajectory of 100 steps would
    take some 200 iterations to reach.  Climbing from below also stops at
    the first maximum of the criterion, the one the references start toward.
    """
    t = state.count + 1.0
    sq = (1.0 - SQ_GRAD_RATE) * state.sq_grad + SQ_GRAD_RATE * grad * grad
    climbing = state.climbing if grad > 0.0 else 0.0
    if climbing > 0.0:
        step = MAX_LOG_UPDATE
    else:
        sq_hat = sq / (1.0 - (1.0 - SQ_GRAD_RATE) ** t)
        step = learning_rate * grad / math.sqrt(sq_hat + _TINY)
        step = min(max(step, -MAX_LOG_UPDATE), MAX_LOG_UPDATE)
    log_length = min(state.log_length + step, max_log_length)
    c = state.avg_count + 1.0
    w = c ** (-AVERAGE_DECAY)
    avg = (1.0 - w) * state.log_length_avg + w * log_length
    return TrajectoryState(log_length, sq, t, avg, c, climbing)


@compiled
def trajectory_restart_average(state):
    """Forget the iterate average (after the metric changed)."""
    return TrajectoryState(state.log_length, state.sq_grad, state.count,
                           state.log_length, 0.0, state.climbing)


@compiled
def trajectory_rescale(state, factor):
    """Multiply the trajectory length by ``factor`` (after a metric update) and
    restart the iterate average; Adam's state is kept."""
    log_length = state.log_length + math.log(factor)
    return TrajectoryState(log_length, state.sq_grad, state.count, log_length, 0.0,
                           state.climbing)


@compiled
def trajectory_final(state):
    """The trajectory length used after warmup: ``exp`` of the averaged ``log T``."""
    return math.exp(state.log_length_avg)


@compiled
def _contributes(accept, diverging, k):
    a = accept[k]
    return a > MIN_ACCEPT and not diverging[k]


@compiled
def _centres(q0, qn, accept, diverging, m0, mn):
    """Plain mean of the start points into ``m0``, acceptance-weighted mean of
    the usable proposals into ``mn``; returns the proposals' total weight."""
    chains, dim = q0.shape
    for i in range(dim):
        m0[i] = 0.0
        mn[i] = 0.0
    w_sum = 0.0
    for k in range(chains):
        for i in range(dim):
            m0[i] += q0[k, i] / chains
        if _contributes(accept, diverging, k):
            w_sum += accept[k]
            for i in range(dim):
                mn[i] += accept[k] * qn[k, i]
    if w_sum > 0.0:
        for i in range(dim):
            mn[i] /= w_sum
    return w_sum


@compiled
def chees_gradient(q0, qn, vn, accept, diverging, metric, time, m0, mn):
    """Acceptance-weighted ChEES gradient with respect to ``log T`` (0 when no
    chain contributes).

    Per chain ``time * (|z' - mean z'|^2 - |z - mean z|^2) (z' - mean z') . dz'/dt``
    in the metric's coordinates ``z = M^{1/2} q`` (module docstring), so
    ``|z|^2 = q' M q`` and ``z . dz/dt = q' M v``; for a diagonal metric
    ``z = q / sqrt(inv_diag)``.  ``time = h_n T`` is the jittered trajectory
    time, the chain rule's factor for ``d/d log T``.  ``metric`` is a
    :class:`samplers.metric.Metric` (diagonal, or diagonal plus low rank);
    ``m0`` and ``mn`` are (dim,) workspaces.
    """
    inv_diag = metric.inv_diag
    chains, dim = q0.shape
    w_sum = _centres(q0, qn, accept, diverging, m0, mn)
    if not w_sum > 0.0:
        return 0.0
    total = 0.0
    for k in range(chains):
        if not _contributes(accept, diverging, k):
            continue
        change, along = 0.0, 0.0
        for i in range(dim):
            dn = qn[k, i] - mn[i]
            d0 = q0[k, i] - m0[i]
            change += (dn * dn - d0 * d0) / inv_diag[i]
            along += dn * vn[k, i] / inv_diag[i]
        # M's low-rank part: M = S^-2 + S^-2 W' (Lambda^-1 - I) W S^-2
        # (samplers.chees_low_rank._metric_times), one direction at a time.
        for j in range(metric.lr_vals.shape[0]):
            wn, w0, wv = 0.0, 0.0, 0.0
            for i in range(dim):
                w = metric.lr_vecs[j, i] / inv_diag[i]
                wn += w * (qn[k, i] - mn[i])
                w0 += w * (q0[k, i] - m0[i])
                wv += w * vn[k, i]
            c = 1.0 / metric.lr_vals[j] - 1.0
            change += c * (wn * wn - w0 * w0)
            along += c * wn * wv
        g = time * change * along
        if math.isfinite(g):
            total += accept[k] * g
    return total / w_sum


@compiled
def harmonic_mean_accept(accept, diverging):
    """Harmonic mean of the non-divergent chains' acceptance probabilities;
    0 when every chain diverged or one accepts with probability 0."""
    n, inv_sum = 0, 0.0
    for k in range(accept.shape[0]):
        if diverging[k]:
            continue
        n += 1
        if not accept[k] > 0.0:
            return 0.0
        inv_sum += 1.0 / accept[k]
    if n == 0:
        return 0.0
    return n / inv_sum


@compiled
def pooled_variance_update(n, mean, m2, q):
    """Add every chain's position (rows of ``q``) to the diagonal Welford
    estimator ``(n, mean, m2)``; returns the new count.

    Helpers that return arrays (a Welford state) are called only in here:
    the result crosses into the caller, which may be a Python-callable twin
    with reference counting, as a count.
    """
    wf = WelfordDiag(n, mean, m2)
    for k in range(q.shape[0]):
        wf = welford_diag_update(wf, q[k])
    return wf.n


@compiled
def pooled_variance_final(n, mean, m2, inv_diag, work):
    """Install the regularized pooled variance as the inverse metric (Stan's
    shrinkage toward 1e-3), reset the estimator, and return the factor for
    the trajectory length, ``1 / sqrt(max_i new_i / old_i)``; 1.0 (metric
    kept) for fewer than two samples.  ``work`` is a (dim,) workspace.

    In the metric's coordinates ``z = q / sqrt(inv_diag)`` the slowest
    direction sets the time scale the criterion is tuned to (the largest
    ``var(z_i)`` dominates it), and that time scale is proportional to the
    standard deviation ``sqrt(var(z_i))``.  The new metric makes every
    ``var(z_i)`` about 1 where the old one left ``new_i / old_i``: scaling
    ``T`` by the factor keeps it tuned across the update (from the unit
    metric to variances 0.01 .. 100 the factor is 1/10).
    """
    wf = WelfordDiag(n, mean, m2)
    if wf.n < 2:
        welford_diag_init(mean, m2)
        return 1.0
    welford_diag_final(wf, work)
    regularize_variance(work, float(wf.n))
    welford_diag_init(mean, m2)
    ratio = 0.0
    for i in range(inv_diag.shape[0]):
        ratio = max(ratio, work[i] / inv_diag[i])
        inv_diag[i] = work[i]
    return 1.0 / math.sqrt(ratio)
