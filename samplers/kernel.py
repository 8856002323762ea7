"""The transition loop of one chain over a range of iterations, in numba.

:func:`chunk_runner` returns the compiled loop of one variant (diagonal or
dense metric; Stan's windowed warmup, :mod:`samplers.mass_matrix`, or
nutpie's, from draws and gradients, :mod:`samplers.grad_adaptation`) with
the transition (NUTS or static HMC) and the step-size search it calls.  Each
is compiled on first use against the first-class function type of the model
entry (:data:`samplers.protocol.ENTRY_TYPE`), so it calls any model's numba
function with no recompilation, and cached on disk.  The loop runs
iterations ``start .. stop - 1`` of a chain: the transition, then during
warmup the step-size and metric adaptation, and writes the draw and its
statistics to row ``it`` of the output arrays.  All state that survives
between chunks lives in the chain's arrays (:class:`ChainState`), so a chain
can be run in pieces for the progress bar and Ctrl-C.  Nothing allocates
(workspaces come from Python), so all is compiled without numba's reference
counting.

Three entry points rather than one: the loop calls the transition and the
step-size search through first-class function arguments, so their code is
optimized and turned into machine code in their own library only, not a
second time inside the loop's (numba compiles a callee's code again in
every caller's library, :mod:`samplers._jit`).  With the warmup a
compile-time constant of the loop as well, the first NUTS run after
installing executes 13% fewer instructions (22% fewer in LLVM).  The call
through a pointer, once per transition, costs nothing measurable; unboxing
the two function arguments adds about 70 µs to each call of the loop, which
the runner's chunks absorb (:mod:`samplers.runner`).
"""

import functools
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numba import njit, types

from ._cache import source_hash
from ._jit import compiled
from .mass_matrix import (
    WelfordDense, WelfordDiag, regularize_covariance, regularize_variance,
    welford_dense_final, welford_dense_init, welford_dense_update,
    welford_diag_final, welford_diag_init, welford_diag_update)
from .grad_adaptation import (
    FG_N, grad_adaptation_update, grad_var_start, grad_window_update,
    inverse_metric_from_gradient)
from .low_rank import (PENDING, RANK, RESTART, UPDATE_FREQ, compile_estimate, install_low_rank,
                       low_rank_due, low_rank_store)
from .metric import Metric, set_inverse_metric_dense
from .protocol import ENTRY_TYPE
from .static_hmc import hmc_transition
from .step_size import (
    DualAveragingState, dual_averaging_final, dual_averaging_init,
    dual_averaging_update, find_reasonable_step_size)
from .trajectory import TransitionInfo, TreeWork, nuts_transition

#: Hash of this package's sources: part of numba's cache key of the entry points.
SOURCE_HASH = source_hash(Path(__file__).parent)
#: Columns of the statistics array, in order.
STAT_NAMES = ("lp", "acceptance_rate", "step_size", "tree_depth", "n_steps",
              "diverging", "energy", "energy_error")
#: Transition kinds.
NUTS, HMC = 0, 1
#: Layout of the per-chain scalar array.
LP, STEP, DA_COUNTER, DA_S_BAR, DA_X_BAR, DA_MU, DA_X, N_SCALARS = range(8)
#: Layout of the integer configuration array: the nutpie warmup's phases
#: and windows follow ``ADAPT`` (see :mod:`samplers.grad_adaptation`);
#: ``METRIC_GIVEN`` is 1 when the chains' initial metric was given (nutpie's
#: warmup then keeps it until its first estimate instead of ``1 / |grad|``).
(KIND, MAX_DEPTH, NUM_STEPS, N_TUNE, DENSE, ADAPT, EARLY_END, FINAL_START, EARLY_FREQ,
 SWITCH_FREQ, METRIC_GIVEN, N_ICONF) = range(12)
#: Layout of the float configuration array.
TARGET_ACCEPT, MAX_ENERGY_ERROR, WINDOW_GROWTH, N_FCONF = range(4)
#: Warmups (``iconf[ADAPT]``): Stan's windows, nutpie's draws and gradients
#: (diagonal metric), nutpie's low-rank metric (:mod:`samplers.low_rank`).
ADAPT_STAN, ADAPT_NUTPIE, ADAPT_LOW_RANK = 0, 1, 2


class ChainState(NamedTuple):
    """Everything one chain carries from one chunk to the next.

    Attributes
    ----------
    q, grad : ndarray, shape (dim,)
        Current position and gradient of the log density.
    scalars : ndarray, shape (N_SCALARS,)
        Log density, step size and the dual-averaging state.
    rng : ndarray of uint64, shape (4,)
    metric : Metric
    wf_n : ndarray of int64, shape (1,)
        Samples in the current metric window.
    wf_mean, wf_m2_diag, wf_m2_dense : ndarray
        Welford buffers (the dense one is (1, 1) for a diagonal metric).
    wf_cov : ndarray, shape (dim, dim) or (1, 1)
        Workspace for the covariance estimate of a dense metric.
    ga_moments : ndarray, shape (8, dim)
    ga_counts : ndarray of int64, shape (4,)
        State of nutpie's warmup (:mod:`samplers.grad_adaptation`).
    lr_draws, lr_grads : ndarray, shape (rows, dim)
    lr_counts : ndarray of int64
        The low-rank metric's warmup draws and gradients, and its counters
        (:func:`samplers.low_rank.low_rank_buffers`; ``rows`` is 0 for
        other metrics).  The metric's ``lr_vecs`` and ``lr_vals`` are then
        buffers of the largest rank; ``lr_counts[RANK]`` rows are in use.
    """

    q: np.ndarray
    grad: np.ndarray
    scalars: np.ndarray
    rng: np.ndarray
    metric: Metric
    wf_n: np.ndarray
    wf_mean: np.ndarray
    wf_m2_diag: np.ndarray
    wf_m2_dense: np.ndarray
    wf_cov: np.ndarray
    ga_moments: np.ndarray
    ga_counts: np.ndarray
    lr_draws: np.ndarray
    lr_grads: np.ndarray
    lr_counts: np.ndarray


@compiled
def _install_diag(metric, wf):
    """End of a slow window: install the regularized variances; restart Welford.

    A window of fewer than two draws (``adapt_window=1``) has no variance:
    the metric is kept.
    """
    if wf.n >= 2:
        welford_diag_final(wf, metric.inv_diag)
        regularize_variance(metric.inv_diag, float(wf.n))
    return welford_diag_init(wf.mean, wf.m2)


@compiled
def _install_dense(metric, wf, cov):
    """End of a slow window: install the regularized covariance; restart Welford.

    ``cov`` is a workspace; Welford's ``m2`` holds the Cholesky factor (it is
    reset right after).  A window of fewer than two draws, or a covariance
    that is not numerically positive definite, leaves the old metric in
    place (see :func:`samplers.metric.set_inverse_metric_dense`).
    """
    if wf.n >= 2:
        welford_dense_final(wf, cov)
        regularize_covariance(cov, float(wf.n))
        set_inverse_metric_dense(metric, cov, wf.m2)
    return welford_dense_init(wf.mean, wf.m2)


@compiled
def _record(it, q, lp, eps, info, draws, stats):
    for i in range(q.shape[0]):
        draws[it, i] = q[i]
    stats[it, 0] = lp
    stats[it, 1] = info.accept_stat
    stats[it, 2] = eps
    stats[it, 3] = info.depth
    stats[it, 4] = info.n_steps
    stats[it, 5] = 1.0 if info.diverging else 0.0
    stats[it, 6] = info.energy
    stats[it, 7] = info.energy_error


def _make_transition(kind):
    """The transition entry point of one kind: NUTS or static HMC.

    The transition's code is inlined (:func:`samplers._jit.inlined`), so this
    library is the only one that compiles it.  numba's disk cache keys the
    closure by the values of its variables: the kind and the hash of the
    package's sources (:mod:`samplers._cache`).  The closure refers to no
    other closure (a captured dispatcher would not pickle the same way in
    two processes, defeating the cache).
    """
    sources = SOURCE_HASH
    is_nuts = kind == NUTS

    def transition(f, fdata, idata, metric, eps, n, max_energy_error, rng, q, g, lp, work):
        sources  # noqa: B018  (a closure variable, so part of the cache key)
        if is_nuts:
            return nuts_transition(f, fdata, idata, metric, eps, n, max_energy_error,
                                   rng, q, g, lp, work)
        return hmc_transition(f, fdata, idata, metric, eps, n, max_energy_error,
                              rng, q, g, lp, work)

    return transition


def _make_step_size_search():
    """The entry point of Stan's step-size heuristic (as :func:`_make_transition`)."""
    sources = SOURCE_HASH

    def step_size_search(f, fdata, idata, metric, eps, rng, q, g, lp, work):
        sources  # noqa: B018  (a closure variable, so part of the cache key)
        return find_reasonable_step_size(f, fdata, idata, metric, eps, rng, q, g, lp, work)

    return step_size_search


def _make_run_chunk(dense, nutpie, low_rank=False):
    """The flat-argument transition loop of one variant (see :func:`chunk_runner`).

    ``dense``, ``nutpie`` (the warmup) and ``low_rank`` are closure
    constants: numba prunes the branches they decide before typing, so a
    variant compiles only its own metric estimator.  The low-rank variant
    runs nutpie's windows and returns after each iteration that ends with a
    new estimate due (``lr_counts[PENDING]``): :func:`advance` computes it in
    numpy and calls the loop again, which then restarts the step size if it
    was the first.  The transition and the step-size search
    are arguments (``transition``, ``search``).  Cached like
    :func:`_make_transition`: by the variant and the hash of the sources.
    """
    sources = SOURCE_HASH

    def run_chunk(f, fdata, idata, transition, search, q, g, sc, rng, inv_diag, inv_dense,
                  momentum_factor, dense_flag, lr_vecs, lr_vals, wf_n, wf_mean, wf_m2_diag,
                  wf_m2_dense, wf_cov, ga_moments, ga_counts, lr_q, lr_g, lr_counts, ends, end_lp,
                  slots, slot_scalars, traj, interrupt, in_window, window_end, iconf, fconf,
                  start, stop, draws, stats):
        sources  # noqa: B018  (a closure variable, so part of the cache key)
        metric = Metric(inv_diag, inv_dense, momentum_factor, dense_flag, lr_vecs, lr_vals)
        work = TreeWork(ends, end_lp, slots, slot_scalars, traj, interrupt)
        da = DualAveragingState(sc[DA_COUNTER], sc[DA_S_BAR], sc[DA_X_BAR], sc[DA_MU], sc[DA_X])
        if dense:
            wf = WelfordDense(wf_n[0], wf_mean, wf_m2_dense)
        else:
            wf = WelfordDiag(wf_n[0], wf_mean, wf_m2_diag)
        lp, eps = sc[LP], sc[STEP]
        # The transition's integer parameter: NUTS's depth, HMC's steps.
        n = iconf[MAX_DEPTH] if iconf[KIND] == NUTS else iconf[NUM_STEPS]
        if start == 0:
            # Stan's services call set_mu(log(10 * stepsize)) before
            # init_stepsize runs: the first window shrinks toward ten times
            # the *given* step size (1 by default); later restarts use the
            # heuristic's result.  nutpie starts from the metric 1/|grad|,
            # unless one was given (Stan's warmup always starts from the
            # chain's metric, the identity or the given one).
            mu = math.log(10.0 * eps)
            if nutpie and iconf[N_TUNE] > 0:
                grad_var_start(ga_moments, ga_counts, q, g, iconf[SWITCH_FREQ])
                if low_rank:
                    low_rank_store(lr_q, lr_g, lr_counts, q, g)
                if not iconf[METRIC_GIVEN]:
                    inverse_metric_from_gradient(g, inv_diag)
            eps = search(f, fdata, idata, metric, eps, rng, q, g, lp, work)
            da = DualAveragingState(0.0, 0.0, 0.0, mu, math.log(eps))
            if nutpie:
                da = dual_averaging_init(eps)
        elif low_rank and lr_counts[RESTART]:
            lr_counts[RESTART] = 0
            eps = search(f, fdata, idata, metric, eps, rng, q, g, lp, work)
            da = dual_averaging_init(eps)
        end = stop
        for it in range(start, stop):
            lp_start = lp
            lp, info = transition(f, fdata, idata, metric, eps, n, fconf[MAX_ENERGY_ERROR],
                                  rng, q, g, lp, work)
            if interrupt[0] != 0:  # the transition may have been cut short: drop it
                end = it
                break
            _record(it, q, lp, eps, info, draws, stats)
            if it >= iconf[N_TUNE]:
                continue
            da = dual_averaging_update(da, info.accept_stat, fconf[TARGET_ACCEPT])
            eps = math.exp(da.x)
            if low_rank:
                if it < iconf[FINAL_START]:
                    moved = lp != lp_start
                    switched = grad_window_update(
                        ga_moments, ga_counts, it, moved, q, g, iconf[EARLY_END],
                        iconf[FINAL_START], iconf[EARLY_FREQ], fconf[WINDOW_GROWTH])
                    if moved:
                        low_rank_store(lr_q, lr_g, lr_counts, q, g)
                    if low_rank_due(lr_counts, ga_counts[FG_N], it, switched, UPDATE_FREQ):
                        end = it + 1  # advance() installs the estimate
                        break
                if it == iconf[N_TUNE] - 1:
                    eps = dual_averaging_final(da)
                continue
            if nutpie:
                # nuts-rs's order: estimators, switch, metric, then the step
                # size (restarted only at the metric's first change).
                if it < iconf[FINAL_START] and grad_adaptation_update(
                        ga_moments, ga_counts, it, lp != lp_start, q, g, inv_diag,
                        iconf[EARLY_END], iconf[FINAL_START], iconf[EARLY_FREQ],
                        fconf[WINDOW_GROWTH]):
                    eps = search(f, fdata, idata, metric, eps, rng, q, g, lp, work)
                    da = dual_averaging_init(eps)
                if it == iconf[N_TUNE] - 1:
                    eps = dual_averaging_final(da)
                continue
            # Warmup bookkeeping, in the order of Stan's adapt_*_nuts::transition.
            if in_window[it]:
                if dense:
                    wf = welford_dense_update(wf, q)
                else:
                    wf = welford_diag_update(wf, q)
            if window_end[it]:
                if dense:
                    wf = _install_dense(metric, wf, wf_cov)
                else:
                    wf = _install_diag(metric, wf)
                eps = search(f, fdata, idata, metric, eps, rng, q, g, lp, work)
                da = dual_averaging_init(eps)
            if it == iconf[N_TUNE] - 1:
                eps = dual_averaging_final(da)
        sc[LP], sc[STEP] = lp, eps
        sc[DA_COUNTER], sc[DA_S_BAR], sc[DA_X_BAR], sc[DA_MU], sc[DA_X] = da
        wf_n[0] = wf.n
        return end

    return run_chunk


_F1 = types.float64[::1]
_F2 = types.float64[:, ::1]
_F3 = types.float64[:, :, ::1]
_B1 = types.boolean[::1]
_I1 = types.int64[::1]
_U1 = types.uint64[::1]
_METRIC = types.NamedTuple((_F1, _F2, _F2, types.boolean, _F2, _F1), Metric)
_WORK = types.NamedTuple((_F3, _F1, _F3, _F2, _F2, _I1), TreeWork)
_INFO = types.NamedTuple((types.float64, types.int64, types.int64, types.boolean,
                          types.float64, types.float64), TransitionInfo)

#: ``(lp, info) = transition(f, fdata, idata, metric, eps, n, max_energy_error,
#: rng, q, g, lp, work)``: NUTS (``n`` the maximum depth) or static HMC
#: (``n`` leapfrog steps).
_TRANSITION_SIGNATURE = types.Tuple((types.float64, _INFO))(
    ENTRY_TYPE, _F1, _I1, _METRIC, types.float64, types.int64, types.float64,
    _U1, _F1, _F1, types.float64, _WORK)
#: ``eps = search(f, fdata, idata, metric, eps, rng, q, g, lp, work)``.
_SEARCH_SIGNATURE = types.float64(
    ENTRY_TYPE, _F1, _I1, _METRIC, types.float64, _U1, _F1, _F1, types.float64, _WORK)
_CHUNK_SIGNATURE = types.int64(
    ENTRY_TYPE, _F1, _I1,                      # model entry
    types.FunctionType(_TRANSITION_SIGNATURE),  # transition
    types.FunctionType(_SEARCH_SIGNATURE),      # step-size search
    _F1, _F1, _F1, _U1,                        # q, grad, scalars, rng
    _F1, _F2, _F2, types.boolean, _F2, _F1,    # metric
    _I1, _F1, _F1, _F2, _F2,                   # Welford buffers, covariance workspace
    _F2, _I1, _F2, _F2, _I1,                   # nutpie warmup state, low-rank warmup
    _F3, _F1, _F3, _F2, _F2, _I1,              # TreeWork (interrupt flag last)
    _B1, _B1, _I1, _F1,                        # schedule, configuration
    types.int64, types.int64, _F2, _F2,        # start, stop, outputs
)
#: Options of the entry points (see :mod:`samplers._jit`).  Python calls the
#: loop (it needs no C wrapper); the loop calls the transition and the
#: step-size search through their C wrappers (they need no Python wrapper).
_OPTIONS = dict(cache=True, nogil=True, _nrt=False, error_model="numpy")


class ChunkRunner(NamedTuple):
    """The compiled entry points one chain runs with (see :func:`chunk_runner`).

    Attributes
    ----------
    loop : numba dispatcher
        The loop over iterations, called from Python by :func:`advance`.
    transition, search : numba first-class functions
        The transition and the step-size search, arguments of the loop.
    """

    loop: object
    transition: object
    search: object


@functools.cache
def _transition(kind):
    return njit(_TRANSITION_SIGNATURE, no_cpython_wrapper=True, **_OPTIONS)(
        _make_transition(kind))


@functools.cache
def _search():
    return njit(_SEARCH_SIGNATURE, no_cpython_wrapper=True, **_OPTIONS)(
        _make_step_size_search())


@functools.cache
def _loop(dense, nutpie, low_rank):
    return njit(_CHUNK_SIGNATURE, no_cfunc_wrapper=True, **_OPTIONS)(
        _make_run_chunk(dense, nutpie, low_rank))


def _first_class(dispatcher):
    """``dispatcher`` (compiled for one signature) as a first-class function
    argument: numba unboxes it in about 35 µs per call of the loop, the
    dispatcher itself in about 100 (it looks its compiled code up again)."""
    return types.CompileResultWAP(dispatcher.overloads[dispatcher.signatures[0]])


@functools.cache
def chunk_runner(kind, dense, adaptation=None):
    """Return the compiled entry points of one variant: NUTS or static HMC,
    diagonal or dense metric, Stan's or nutpie's warmup.

    Each is compiled (or loaded from numba's disk cache) on first use, not at
    import, and only with the code it needs (its helpers with the options of
    :mod:`samplers._jit`); the variants share what they have in common (the
    transition, the step-size search).  Each has an explicit signature over
    the first-class function type of the model entry, so every model shares
    it.  The loop's arguments, flat: the model entry, the transition and the
    step-size search, the fields of :class:`ChainState` (the metric's four
    in place of ``metric``), those of :class:`samplers.trajectory.TreeWork`,
    the two schedule arrays, the integer and float configuration, ``start``,
    ``stop`` and the output arrays (:data:`_CHUNK_SIGNATURE`; :func:`advance`
    spreads them).  The loop runs iterations ``start .. stop - 1`` and
    returns the index after the last one it recorded: ``stop``, or less when
    the interrupt flag was set (the transition it cut short is dropped).  It
    releases the GIL, so chains run in parallel on threads.  Call
    :func:`chunk_runner` once from one thread before starting others.

    Parameters
    ----------
    kind : {NUTS, HMC}
    dense : bool
    adaptation : {ADAPT_STAN, ADAPT_NUTPIE, ADAPT_LOW_RANK}, optional
        The warmup (``iconf[ADAPT]``); by default nutpie's for a diagonal
        metric, Stan's for a dense one (nutpie's is diagonal only).
        ``ADAPT_LOW_RANK``: nutpie's low-rank metric (not dense).

    Returns
    -------
    ChunkRunner
    """
    dense = bool(dense)
    if adaptation is None:
        adaptation = ADAPT_STAN if dense else ADAPT_NUTPIE
    low_rank = int(adaptation) == ADAPT_LOW_RANK and not dense
    nutpie = int(adaptation) in (ADAPT_NUTPIE, ADAPT_LOW_RANK) and not dense
    if low_rank:
        compile_estimate()  # advance() calls it between calls of the loop
    return ChunkRunner(_loop(dense, nutpie, low_rank), _first_class(_transition(int(kind))),
                       _first_class(_search()))


def advance(runner, entry, state, work, schedule, iconf, fconf, start, stop, draws, stats):
    """Run iterations ``start .. stop - 1`` of one chain with compiled entry points.

    Parameters
    ----------
    runner : ChunkRunner
        From :func:`chunk_runner` for the variant of ``iconf``.
    entry : NumbaEntry
    state : ChainState
        Advanced in place.
    work : TreeWork
        The chain's trajectory workspace and the shared interrupt flag.
    schedule : tuple of two bool arrays
        From :func:`samplers.mass_matrix.warmup_schedule`.
    iconf, fconf : ndarray
    start, stop : int
    draws, stats : ndarray
        The chain's output rows (written at rows ``start ..``).

    Returns
    -------
    int
        The index after the last recorded iteration.

    Notes
    -----
    The low-rank variant returns early when an estimate is due; it is
    computed here (:func:`samplers.low_rank.install_low_rank`, numpy) and the
    loop resumes, so the iterations at which the metric changes never
    depend on the chunks.
    """
    m, lr = state.metric, state.lr_counts
    while True:
        k = lr[RANK]
        end = runner.loop(entry.function, entry.fdata, entry.idata, runner.transition,
                          runner.search, state.q, state.grad, state.scalars, state.rng,
                          m.inv_diag, m.inv_dense, m.momentum_factor, m.dense, m.lr_vecs[:k],
                          m.lr_vals[:k], state.wf_n, state.wf_mean, state.wf_m2_diag,
                          state.wf_m2_dense, state.wf_cov, state.ga_moments, state.ga_counts,
                          state.lr_draws, state.lr_grads, lr, *work, schedule[0], schedule[1],
                          iconf, fconf, start, stop, draws, stats)
        if not lr[PENDING]:
            return end
        install_low_rank(m, lr, state.lr_draws, state.lr_grads, int(state.ga_counts[FG_N]))
        if end == stop or work.interrupt[0] != 0:
            return end
        start = end
