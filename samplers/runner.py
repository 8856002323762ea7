"""Run chains in parallel on threads, in chunks, with a progress bar.

Each chain advances by calls to the compiled loop of
:func:`samplers.kernel.chunk_runner` (which releases the GIL).  Between
chunks the Python side updates a tqdm bar (warmup/sampling, draws per
second, divergences).  Ctrl-C in the main thread sets the shared interrupt
flag (:mod:`samplers.interrupt`), which the compiled trajectory reads after
every leapfrog step: every chain stops within a step, the transitions cut
short are dropped, and the draws made so far are returned.  Chunking does
not change results: every chain's state lives in its own arrays and RNG.
"""

import os
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import NamedTuple

import numpy as np
from tqdm.auto import tqdm

from .interrupt import Interrupt
from .kernel import ADAPT, DENSE, KIND, MAX_DEPTH, STAT_NAMES, advance, chunk_runner
from .trajectory import make_work

#: Chunks are sized to take about this long, within [1, MAX_CHUNK] transitions
#: and at most GROWTH times the previous chunk (its time per transition is the
#: estimate, and early warmup transitions can be much cheaper than later
#: ones).  Starting a chunk costs about 0.1 ms (numba unboxes some 30
#: arguments, three of them functions): with chunks of at most 100
#: transitions that was a fifth of eight schools' sampling (4 µs each).
CHUNK_SECONDS = 0.2
MAX_CHUNK = 10_000
GROWTH = 10
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


def _run_one(run_chunk, entry, state, work, schedule, iconf, fconf, draws, stats, done, c):
    """Advance chain ``c`` chunk by chunk until finished or the interrupt flag is set."""
    n_total = draws.shape[0]
    it, size = 0, 1
    while it < n_total and work.interrupt[0] == 0:
        n = min(size, n_total - it)
        t0 = time.perf_counter()
        it = advance(run_chunk, entry, state, work, schedule, iconf, fconf, it, it + n,
                     draws, stats)
        done[c] = it
        per_iter = (time.perf_counter() - t0) / n
        size = int(min(MAX_CHUNK, GROWTH * n, max(1, CHUNK_SECONDS / max(per_iter, 1e-9))))


def _update_bar(bar, done, stats, n_tune):
    total = int(done.sum())
    bar.update(total - bar.n)
    divergences = sum(int(np.nansum(s[n_tune:d, _DIVERGING])) for s, d in zip(stats, done))
    phase = "warmup" if done.min() < n_tune else "sampling"
    bar.set_postfix_str(f"{phase}, divergences={divergences}", refresh=False)


def _wait(futures, interrupt, bar, done, stats, n_tune):
    """Update the bar until every chain has finished; the first failure stops
    the others and is raised."""
    pending = futures
    while pending:
        _, pending = wait(pending, timeout=0.1, return_when=FIRST_EXCEPTION)
        _update_bar(bar, done, stats, n_tune)
        for fut in futures:
            if fut.done() and fut.exception() is not None:
                interrupt.stop()
                raise fut.exception()


def compile_chains(iconf):
    """The compiled loop of ``iconf``'s variant (:func:`samplers.kernel.chunk_runner`):
    compiled, or loaded from numba's cache, on first use.  Called before a
    Ctrl-C handler is installed, so that nothing is compiled (nor imported)
    while a press can cut it short."""
    return chunk_runner(iconf[KIND], iconf[DENSE], iconf[ADAPT])


def run_chains(entry, states, schedule, iconf, fconf, n_total, n_tune, cores, progress,
               interrupt=None):
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
    interrupt : Interrupt, optional
        Its flag stops the chains (it is left set on return); its SIGINT
        handler is installed while the chains run.  A fresh one by default.

    Returns
    -------
    ChainsResult
        ``interrupted`` when the chains stopped early (Ctrl-C, or an error
        recorded in ``interrupt.failure``, which the caller raises); a chain
        that fails raises its error instead, after the others have stopped.
    """
    interrupt = Interrupt() if interrupt is None else interrupt
    chains, dim = len(states), states[0].q.shape[0]
    draws = np.zeros((chains, n_total, dim))
    stats = np.full((chains, n_total, len(STAT_NAMES)), np.nan)
    done = np.zeros(chains, dtype=np.int64)
    works = [make_work(dim, max(int(iconf[MAX_DEPTH]), 1), interrupt.flag) for _ in states]
    run_chunk = compile_chains(iconf)
    bar = tqdm(total=chains * n_total, disable=not progress, unit="draws", smoothing=0.1)
    with interrupt.handling_sigint():
        with ThreadPoolExecutor(max_workers=cores) as pool:
            futures = [pool.submit(_run_one, run_chunk, entry, states[c], works[c], schedule,
                                   iconf, fconf, draws[c], stats[c], done, c)
                       for c in range(chains)]
            try:
                _wait(futures, interrupt, bar, done, stats, n_tune)
            except KeyboardInterrupt:  # raised by another handler (or a test)
                interrupt.stop()
                wait(futures)
            finally:
                interrupt.stop()  # the chains still running stop within a step
                bar.close()
    n_done = int(done.min())
    return ChainsResult(draws[:, :n_done], stats[:, :n_done], n_done, n_done < n_total)
