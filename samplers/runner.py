"""Run chains in parallel on threads, in chunks, with a progress bar.

Each chain advances by calls to the compiled loop of
:func:`samplers.kernel.chunk_runner` (which releases the GIL).  Between
chunks the Python side updates a tqdm bar
(warmup/sampling, draws per second, divergences) and checks for a stop
request: Ctrl-C in the main thread stops every chain at its next chunk
boundary and the draws made so far are returned.  Chunking does not change
results: every chain's state lives in its own arrays and RNG.
"""

import os
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import NamedTuple

import numpy as np
from tqdm.auto import tqdm

from .kernel import DENSE, KIND, STAT_NAMES, chunk_runner

#: Chunks are sized to take about this long, within [1, MAX_CHUNK] transitions.
CHUNK_SECONDS = 0.2
MAX_CHUNK = 100
_DIVERGING = STAT_NAMES.index("diverging")


class ChainsResult(NamedTuple):
    """Raw output of :func:`run_chains`.

    Attributes
    ----------
    draws : ndarray, shape (chains, n_done, dim)
        Unconstrained positions, warmup first.
    stats : ndarray, shape (chains, n_done, len(STAT_NAMES))
    n_done : int
        Iterations completed by every chain.
    interrupted : bool
    """

    draws: np.ndarray
    stats: np.ndarray
    n_done: int
    interrupted: bool


def resolve_cores(cores, chains):
    """``cores=None`` means ``os.cpu_count()``; never more threads than chains."""
    if cores is None:
        cores = os.cpu_count() or 1
    return max(1, min(int(cores), chains))


def _run_one(run_chunk, entry, state, schedule, iconf, fconf, draws, stats, done, c, stop):
    """Advance chain ``c`` chunk by chunk until finished or asked to stop."""
    n_total = draws.shape[0]
    it, size = 0, 1
    while it < n_total and not stop.is_set():
        n = min(size, n_total - it)
        t0 = time.perf_counter()
        run_chunk(entry.function, entry.fdata, entry.idata, state.q, state.grad,
                  state.scalars, state.rng, state.metric.inv_diag,
                  state.metric.inv_dense, state.metric.momentum_factor,
                  state.metric.dense, state.wf_n, state.wf_mean, state.wf_m2_diag,
                  state.wf_m2_dense, schedule[0], schedule[1], iconf, fconf,
                  it, it + n, draws, stats)
        it += n
        done[c] = it
        per_iter = (time.perf_counter() - t0) / n
        size = int(min(MAX_CHUNK, max(1, CHUNK_SECONDS / max(per_iter, 1e-9))))


def _update_bar(bar, done, stats, n_tune):
    total = int(done.sum())
    bar.update(total - bar.n)
    divergences = sum(int(np.nansum(s[n_tune:d, _DIVERGING])) for s, d in zip(stats, done))
    phase = "warmup" if done.min() < n_tune else "sampling"
    bar.set_postfix_str(f"{phase}, divergences={divergences}", refresh=False)


def run_chains(entry, states, schedule, iconf, fconf, n_total, n_tune, cores, progress):
    """Run every chain for ``n_total`` iterations (``n_tune`` of them warmup).

    Parameters
    ----------
    entry : NumbaEntry
    states : list of ChainState
        One per chain; advanced in place.
    schedule : tuple of two bool arrays
        Metric windows from :func:`samplers.mass_matrix.warmup_schedule`.
    iconf, fconf : ndarray
        Integer and float configuration (layouts in :mod:`samplers.kernel`).
    n_total, n_tune : int
    cores : int
        Threads to use.
    progress : bool

    Returns
    -------
    ChainsResult
    """
    chains, dim = len(states), states[0].q.shape[0]
    draws = np.zeros((chains, n_total, dim))
    stats = np.full((chains, n_total, len(STAT_NAMES)), np.nan)
    done = np.zeros(chains, dtype=np.int64)
    stop = threading.Event()
    interrupted = False
    bar = tqdm(total=chains * n_total, disable=not progress, unit="draws", smoothing=0.1)
    run_chunk = chunk_runner(iconf[KIND], iconf[DENSE])  # compiles once, in this thread
    with ThreadPoolExecutor(max_workers=cores) as pool:
        futures = [pool.submit(_run_one, run_chunk, entry, states[c], schedule, iconf, fconf,
                               draws[c], stats[c], done, c, stop)
                   for c in range(chains)]
        try:
            pending = futures
            while pending:
                _, pending = wait(pending, timeout=0.1, return_when=FIRST_EXCEPTION)
                _update_bar(bar, done, stats, n_tune)
                for fut in futures:
                    if fut.done() and fut.exception() is not None:
                        stop.set()
                        raise fut.exception()
        except KeyboardInterrupt:
            interrupted = True
            stop.set()
            wait(futures)
        finally:
            stop.set()
            bar.close()
    n_done = int(done.min())
    return ChainsResult(draws[:, :n_done], stats[:, :n_done], n_done, interrupted)
