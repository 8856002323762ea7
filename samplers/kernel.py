"""The transition loop of one chain over a range of iterations, in numba.

:func:`run_chunk` is compiled once, against the first-class function type of
the model entry (:data:`samplers.protocol.ENTRY_TYPE`), so it calls any
model's numba function with no recompilation and is cached on disk.  It runs
iterations ``start .. stop - 1`` of a chain: the transition (NUTS or static
HMC), then during warmup the step-size and metric adaptation, and writes the
draw and its statistics to row ``it`` of the output arrays.  All state that
survives between chunks lives in the chain's arrays (:class:`ChainState`), so
a chain can be run in pieces for the progress bar and Ctrl-C.
"""

from typing import NamedTuple

import numpy as np
from numba import njit, types

from samplers.mass_matrix import (
    WelfordDense, WelfordDiag, regularize_covariance, regularize_variance,
    welford_dense_final, welford_dense_init, welford_dense_update,
    welford_diag_final, welford_diag_init, welford_diag_update)
from samplers.metric import Metric, set_inverse_metric_dense, set_inverse_metric_diag
from samplers.protocol import ENTRY_TYPE
from samplers.static_hmc import hmc_transition
from samplers.step_size import (
    DualAveragingState, dual_averaging_final, dual_averaging_init,
    dual_averaging_update, find_reasonable_step_size)
from samplers.trajectory import make_work, nuts_transition

#: Columns of the statistics array, in order.
STAT_NAMES = ("lp", "acceptance_rate", "step_size", "tree_depth", "n_steps",
              "diverging", "energy", "energy_error")
#: Transition kinds.
NUTS, HMC = 0, 1
#: Layout of the per-chain scalar array.
LP, STEP, DA_COUNTER, DA_S_BAR, DA_X_BAR, DA_MU, DA_X, N_SCALARS = range(8)
#: Layout of the integer configuration array.
KIND, MAX_DEPTH, NUM_STEPS, N_TUNE, DENSE, N_ICONF = range(6)
#: Layout of the float configuration array.
TARGET_ACCEPT, MAX_ENERGY_ERROR, N_FCONF = range(3)


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


@njit(cache=True, nogil=True, _nrt=False)
def _transition(f, fdata, idata, metric, eps, iconf, fconf, rng, q, g, lp, work):
    if iconf[KIND] == NUTS:
        return nuts_transition(f, fdata, idata, metric, eps, iconf[MAX_DEPTH],
                               fconf[MAX_ENERGY_ERROR], rng, q, g, lp, work)
    return hmc_transition(f, fdata, idata, metric, eps, iconf[NUM_STEPS],
                          fconf[MAX_ENERGY_ERROR], rng, q, g, lp, work)


@njit(cache=True, nogil=True)
def _update_metric(metric, wd, wdense):
    """End of a slow window: install the regularized estimate; restart Welford."""
    if metric.dense:
        n = float(wdense.n)
        set_inverse_metric_dense(metric, regularize_covariance(welford_dense_final(wdense), n))
        return wd, welford_dense_init(wdense.mean, wdense.m2)
    n = float(wd.n)
    set_inverse_metric_diag(metric, regularize_variance(welford_diag_final(wd), n))
    return welford_diag_init(wd.mean, wd.m2), wdense


@njit(cache=True, nogil=True, _nrt=False)
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


@njit(cache=True, nogil=True)
def _adapt(f, fdata, idata, it, info, metric, da, wd, wdense, in_window,
           window_end, iconf, fconf, rng, q, g, lp, work):
    """Warmup bookkeeping after transition ``it`` (Stan's order); returns
    the new step size and adaptation states."""
    da = dual_averaging_update(da, info.accept_stat, fconf[TARGET_ACCEPT])
    eps = np.exp(da.x)
    if in_window[it]:
        if metric.dense:
            wdense = welford_dense_update(wdense, q)
        else:
            wd = welford_diag_update(wd, q)
    if window_end[it]:
        wd, wdense = _update_metric(metric, wd, wdense)
        eps = find_reasonable_step_size(f, fdata, idata, metric, eps, rng, q, g, lp, work)
        da = dual_averaging_init(eps)
    if it == iconf[N_TUNE] - 1:
        eps = dual_averaging_final(da)
    return eps, da, wd, wdense


@njit(cache=True, nogil=True)
def chunk_loop(f, fdata, idata, state, in_window, window_end, iconf, fconf,
               start, stop, draws, stats):
    """Run iterations ``start .. stop - 1`` of one chain (see module docstring)."""
    sc = state.scalars
    metric, q, g, rng = state.metric, state.q, state.grad, state.rng
    work = make_work(q.shape[0], max(iconf[MAX_DEPTH], 1))
    da = DualAveragingState(sc[DA_COUNTER], sc[DA_S_BAR], sc[DA_X_BAR], sc[DA_MU], sc[DA_X])
    wd = WelfordDiag(state.wf_n[0], state.wf_mean, state.wf_m2_diag)
    wdense = WelfordDense(state.wf_n[0], state.wf_mean, state.wf_m2_dense)
    lp, eps = sc[LP], sc[STEP]
    if start == 0:
        eps = find_reasonable_step_size(f, fdata, idata, metric, eps, rng, q, g, lp, work)
        da = dual_averaging_init(eps)
    for it in range(start, stop):
        lp, info = _transition(f, fdata, idata, metric, eps, iconf, fconf,
                               rng, q, g, lp, work)
        _record(it, q, lp, eps, info, draws, stats)
        if it < iconf[N_TUNE]:
            eps, da, wd, wdense = _adapt(f, fdata, idata, it, info, metric, da, wd,
                                         wdense, in_window, window_end, iconf,
                                         fconf, rng, q, g, lp, work)
    sc[LP], sc[STEP] = lp, eps
    sc[DA_COUNTER], sc[DA_S_BAR], sc[DA_X_BAR], sc[DA_MU], sc[DA_X] = da
    state.wf_n[0] = wdense.n if metric.dense else wd.n


_F1 = types.float64[::1]
_F2 = types.float64[:, ::1]
_B1 = types.boolean[::1]
_I1 = types.int64[::1]

_CHUNK_SIGNATURE = types.void(
    ENTRY_TYPE, _F1, _I1,                      # model entry
    _F1, _F1, _F1, types.uint64[::1],          # q, grad, scalars, rng
    _F1, _F2, _F2, types.boolean,              # metric
    _I1, _F1, _F1, _F2,                        # Welford buffers
    _B1, _B1, _I1, _F1,                        # schedule, configuration
    types.int64, types.int64, _F2, _F2,        # start, stop, outputs
)


@njit(_CHUNK_SIGNATURE, cache=True, nogil=True)
def run_chunk(f, fdata, idata, q, grad, scalars, rng, inv_diag, inv_dense,
              momentum_factor, dense, wf_n, wf_mean, wf_m2_diag, wf_m2_dense,
              in_window, window_end, iconf, fconf, start, stop, draws, stats):
    """Flat-argument entry point (explicit signature; see :func:`chunk_loop`).

    Releases the GIL, so chains run in parallel on threads.
    """
    state = ChainState(q, grad, scalars, rng,
                       Metric(inv_diag, inv_dense, momentum_factor, dense),
                       wf_n, wf_mean, wf_m2_diag, wf_m2_dense)
    chunk_loop(f, fdata, idata, state, in_window, window_end, iconf, fconf,
               start, stop, draws, stats)
