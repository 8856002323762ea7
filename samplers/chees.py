"""ChEES-HMC: many chains in lockstep, one jittered trajectory length for all.

Every iteration all ``K`` chains draw a momentum, take the same number of
leapfrog steps ``ceil(h_n T / eps)`` (``h_n`` a Halton number, ``T`` the
shared trajectory length) and accept or reject their end points with their
own Metropolis test and their own RNG (:mod:`samplers.rng`), so results
depend only on the seed.  During warmup the step size, ``T`` and a diagonal
metric are adapted from all chains at once (:mod:`samplers.chees_adaptation`;
Hoffman, Radul and Sountsov 2021).

One leapfrog step of the ensemble is three pieces: :func:`drift` (half kick
and drift of every live chain), the gradients of all chains, :func:`kick`
(second half kick and energy check).  The gradients come from one of three
places:

- a numba entry (:class:`samplers.protocol.NumbaEntry`): a compiled loop over
  chains (:func:`entry_gradients`), and the whole run -- transitions,
  adaptation, output rows -- is one compiled loop (:func:`chunk_runner`), with
  no Python per step;
- ``log_density_gradient_batch(thetas) -> (lps, grads)``: one call per
  leapfrog step for all chains, from a Python loop over the same compiled
  pieces (:func:`batch_steps`, :func:`_advance_steps`).  This is the path of
  external densities that evaluate many points at once;
- a GPU density's ``device_gradients``: the same Python loop, with each
  iteration's leapfrog steps on the device (:mod:`samplers.chees_device`).

The first two do the same arithmetic in the same order: for the same
gradients they give the same draws, bit for bit; on a device, where
multiply-adds may be fused, they agree to rounding.

Three tiers: :func:`ensemble_init`, :func:`chees_step` (one lockstep
transition, every knob an argument) and :func:`chees` (model in, DataTree out).
"""

import functools
import math
import time
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numba import njit, types
from tqdm.auto import tqdm

from ._cache import source_hash
from ._jit import compiled
from .chees_adaptation import (
    LEARNING_RATE, MAX_LEAPFROG_STEPS, TARGET_ACCEPT, TrajectoryState, chees_gradient,
    halton, harmonic_mean_accept, pooled_variance_final, pooled_variance_update,
    trajectory_final, trajectory_init, trajectory_rescale, trajectory_update)
from .mass_matrix import BASE_WINDOW, INIT_BUFFER, TERM_BUFFER, warmup_schedule
from .kernel import STAT_NAMES
from .diagnostics import SamplerWarning, sampler_warnings
from .external import entry_for
from .initial_point import find_initial_point, per_chain_inits
from .interrupt import Interrupt
from .metric import Metric, hamiltonian, sample_momentum, velocity
from .output import LOG_LIKELIHOOD_MAX_BYTES, check_outputs, import_lazy_modules, to_datatree
from .protocol import ENTRY_TYPE, dimension, numba_entry, resolve
from .rng import make_state, uniform
from .sample import _check_integer
from .step_size import (HEURISTIC_ACCEPT, DualAveragingState, dual_averaging_final,
                        dual_averaging_init, dual_averaging_update)

#: Hash of this package's sources: part of numba's cache key of the runner.
SOURCE_HASH = source_hash(Path(__file__).parent)
#: Stan's divergence threshold on the energy error.
MAX_ENERGY_ERROR = 1000.0
#: Layout of the adaptation scalars: step size, dual averaging, Adam on
#: log T (:class:`TrajectoryState`), the trajectory length after warmup.
(STEP, DA_COUNTER, DA_S_BAR, DA_X_BAR, DA_MU, DA_X, LOG_T, SQ_GRAD, T_COUNT, LOG_T_AVG,
 T_AVG_COUNT, CLIMBING, LENGTH, N_SCALARS) = range(14)
#: Layout of the integer configuration.
N_TUNE, MAX_STEPS, JITTER, ADAPT_METRIC, N_ICONF = range(5)
#: Layout of the float configuration.
TARGET, MAX_ERROR, RATE, N_FCONF = range(4)
#: Jitter kinds (``iconf[JITTER]``).
HALTON, UNIFORM = 0, 1
#: RNG stream of the uniform jitter (chains use streams 0 .. chains - 1).
JITTER_STREAM = 2**40
#: Bounds of the step-size heuristic (as :func:`samplers.step_size.find_reasonable_step_size`).
_HEURISTIC_MAX_ITER, _MIN_STEP, _MAX_STEP = 100, 1e-10, 1e7
#: Columns of the statistics, as the NUTS runner writes them (:mod:`samplers.output`).
_LP, _ACCEPT, _STEP_SIZE, _DEPTH, _N_STEPS, _DIVERGING, _ENERGY, _ENERGY_ERROR = (
    STAT_NAMES.index(name) for name in ("lp", "acceptance_rate", "step_size", "tree_depth",
                                        "n_steps", "diverging", "energy", "energy_error"))


class Ensemble(NamedTuple):
    """The chains' state: all the next transition needs.

    Attributes
    ----------
    q, grad : ndarray, shape (chains, dim)
    lp : ndarray, shape (chains,)
    rng : ndarray of uint64, shape (chains, 4)
        One xoshiro256** state per chain.
    """

    q: np.ndarray
    grad: np.ndarray
    lp: np.ndarray
    rng: np.ndarray


class Proposal(NamedTuple):
    """Workspace of one lockstep trajectory, and its per-chain diagnostics.

    ``q, p, grad, v`` (chains, dim) are the moving end of each trajectory;
    ``lp, h0, h`` its log density and the Hamiltonians at its start and end;
    ``alive`` is False once a chain diverged (it takes no more steps);
    ``steps`` the steps it took; ``accept`` and ``diverging`` its Metropolis
    probability and divergence flag.
    """

    q: np.ndarray
    p: np.ndarray
    grad: np.ndarray
    v: np.ndarray
    lp: np.ndarray
    h0: np.ndarray
    h: np.ndarray
    alive: np.ndarray
    steps: np.ndarray
    accept: np.ndarray
    diverging: np.ndarray


class Adaptation(NamedTuple):
    """Warmup state: the diagonal inverse metric, the scalars (layout above),
    the pooled Welford estimator, workspaces for the chains' means and the
    RNG of the uniform jitter."""

    inv_diag: np.ndarray
    scalars: np.ndarray
    wf_n: np.ndarray
    wf_mean: np.ndarray
    wf_m2: np.ndarray
    centre0: np.ndarray
    centre1: np.ndarray
    jitter_rng: np.ndarray


def make_proposal(chains, dim):
    """Allocate a :class:`Proposal` (in Python: the compiled loops never allocate)."""
    z = functools.partial(np.zeros, (chains, dim))
    return Proposal(z(), z(), z(), z(), np.zeros(chains), np.zeros(chains), np.zeros(chains),
                    np.zeros(chains, dtype=np.bool_), np.zeros(chains, dtype=np.int64),
                    np.zeros(chains), np.zeros(chains, dtype=np.bool_))


# ----- one lockstep trajectory ----------------------------------------------


@compiled
def proposal_start(metric, ens, prop):
    """Copy every chain's state to the trajectory, draw its momentum with its
    own RNG and record the starting Hamiltonian."""
    chains, dim = ens.q.shape
    for k in range(chains):
        for i in range(dim):
            prop.q[k, i] = ens.q[k, i]
            prop.grad[k, i] = ens.grad[k, i]
        sample_momentum(metric, ens.rng[k], prop.p[k])
        velocity(metric, prop.p[k], prop.v[k])
        prop.lp[k] = ens.lp[k]
        prop.h0[k] = hamiltonian(ens.lp[k], prop.p[k], prop.v[k])
        prop.h[k] = prop.h0[k]
        prop.alive[k] = True
        prop.steps[k] = 0


@compiled
def drift(metric, eps, prop):
    """First half of a leapfrog step for every live chain: ``p += eps/2 grad``,
    ``q += eps M^{-1} p`` (the arithmetic of :func:`samplers.integrator.leapfrog`)."""
    chains, dim = prop.q.shape
    half = 0.5 * eps
    for k in range(chains):
        if not prop.alive[k]:
            continue
        p, v, q = prop.p[k], prop.v[k], prop.q[k]
        for i in range(dim):
            p[i] += half * prop.grad[k, i]
        velocity(metric, p, v)
        for i in range(dim):
            q[i] += eps * v[i]


@compiled
def entry_gradients(f, fdata, idata, prop):
    """Log density and gradient of every live chain through the numba entry."""
    for k in range(prop.q.shape[0]):
        if prop.alive[k]:
            prop.lp[k] = f(prop.q[k], prop.grad[k], fdata, idata)


@compiled
def take_gradients(lps, grads, prop):
    """Copy a batch evaluation ``(lps, grads)`` into the live chains."""
    for k in range(prop.q.shape[0]):
        if prop.alive[k]:
            prop.lp[k] = lps[k]
            for i in range(prop.q.shape[1]):
                prop.grad[k, i] = grads[k, i]


@compiled
def kick(metric, eps, max_energy_error, prop):
    """Second half of a leapfrog step; a chain whose energy error exceeds
    ``max_energy_error`` (or is not finite) stops there."""
    chains, dim = prop.q.shape
    half = 0.5 * eps
    for k in range(chains):
        if not prop.alive[k]:
            continue
        p, v = prop.p[k], prop.v[k]
        for i in range(dim):
            p[i] += half * prop.grad[k, i]
        velocity(metric, p, v)
        prop.h[k] = hamiltonian(prop.lp[k], p, v)
        prop.steps[k] += 1
        if prop.h[k] - prop.h0[k] > max_energy_error:
            prop.alive[k] = False


@compiled
def proposal_finish(max_energy_error, prop):
    """Each chain's Metropolis probability ``min(1, exp(H0 - H))`` and divergence."""
    for k in range(prop.q.shape[0]):
        h, h0 = prop.h[k], prop.h0[k]
        prop.diverging[k] = h - h0 > max_energy_error
        prop.accept[k] = 1.0 if h < h0 else math.exp(h0 - h)


@compiled
def metropolis(ens, prop):
    """Accept each chain's end point with its probability (one uniform per
    chain, always drawn, so the stream does not depend on the outcome);
    a divergent trajectory is rejected.  Energies go to ``prop.h``: the
    Hamiltonian of the kept state."""
    chains, dim = ens.q.shape
    for k in range(chains):
        u = uniform(ens.rng[k])
        if u < prop.accept[k] and not prop.diverging[k]:
            for i in range(dim):
                ens.q[k, i] = prop.q[k, i]
                ens.grad[k, i] = prop.grad[k, i]
            ens.lp[k] = prop.lp[k]
        else:
            prop.h[k] = prop.h0[k]


@compiled
def record(it, eps, ens, prop, draws, stats):
    """Row ``it`` of every chain's draws and statistics
    (:data:`samplers.kernel.STAT_NAMES`; the tree depth is 0)."""
    chains, dim = ens.q.shape
    for k in range(chains):
        for i in range(dim):
            draws[k, it, i] = ens.q[k, i]
        stats[k, it, _LP] = ens.lp[k]
        stats[k, it, _ACCEPT] = prop.accept[k]
        stats[k, it, _STEP_SIZE] = eps
        stats[k, it, _DEPTH] = 0.0
        stats[k, it, _N_STEPS] = prop.steps[k]
        stats[k, it, _DIVERGING] = 1.0 if prop.diverging[k] else 0.0
        stats[k, it, _ENERGY] = prop.h[k]
        stats[k, it, _ENERGY_ERROR] = prop.h[k] - prop.h0[k]


# ----- one iteration: plan, adapt -------------------------------------------


@compiled
def end_iteration(it, eps, duration, ens, prop, ad, in_window, window_end, iconf, fconf, draws, stats):
    """After an iteration's leapfrog steps, the same in the compiled loop and the
    batch loop: acceptance probabilities, the ChEES gradient of log T while
    tuning, Metropolis, the draws' row ``it``, the warmup's adaptation.
    Returns whether the step size must be found again (a warmup window ended)."""
    proposal_finish(fconf[MAX_ERROR], prop)
    tuning = it < iconf[N_TUNE]
    grad_log_t = 0.0
    if tuning:
        grad_log_t = chees_gradient(ens.q, prop.q, prop.v, prop.accept, prop.diverging,
                                    ad.inv_diag, duration, ad.centre0, ad.centre1)
    metropolis(ens, prop)
    record(it, eps, ens, prop, draws, stats)
    return tuning and adapt(ad, ens, prop, grad_log_t, it, in_window, window_end, iconf, fconf)


@compiled
def n_leapfrog_steps(duration, eps, max_steps):
    """``ceil(duration / eps)`` within ``[1, max_steps]``."""
    n = math.ceil(duration / eps) if duration / eps < max_steps else max_steps
    return max(1, int(n))


@compiled
def iteration_plan(ad, it, iconf):
    """``(eps, duration, n_steps)`` of iteration ``it``: the step size, the
    jittered trajectory time ``h T`` and its number of steps."""
    sc = ad.scalars
    if iconf[JITTER] == HALTON:
        h = halton(it + 1)
    else:
        h = uniform(ad.jitter_rng)
    length = math.exp(sc[LOG_T]) if it < iconf[N_TUNE] else sc[LENGTH]
    eps = sc[STEP]
    duration = h * length
    return eps, duration, n_leapfrog_steps(duration, eps, iconf[MAX_STEPS])


@compiled
def adapt(ad, ens, prop, grad_log_t, it, in_window, window_end, iconf, fconf):
    """Warmup after iteration ``it``: dual averaging of the step size on the
    harmonic-mean acceptance, Adam on log T, the pooled metric estimate.

    Returns True when a new metric was installed (the caller then finds a
    new step size and calls :func:`restart_step_size`; ``T`` was rescaled).  After the last
    warmup iteration the averaged step size and trajectory length are set.
    """
    sc = ad.scalars
    da = DualAveragingState(sc[DA_COUNTER], sc[DA_S_BAR], sc[DA_X_BAR], sc[DA_MU], sc[DA_X])
    da = dual_averaging_update(da, harmonic_mean_accept(prop.accept, prop.diverging),
                               fconf[TARGET])
    sc[STEP] = math.exp(da.x)
    tr = TrajectoryState(sc[LOG_T], sc[SQ_GRAD], sc[T_COUNT], sc[LOG_T_AVG], sc[T_AVG_COUNT],
                         sc[CLIMBING])
    tr = trajectory_update(tr, grad_log_t, fconf[RATE], math.log(iconf[MAX_STEPS] * sc[STEP]))
    installed = False
    if iconf[ADAPT_METRIC]:
        if in_window[it]:
            ad.wf_n[0] = pooled_variance_update(ad.wf_n[0], ad.wf_mean, ad.wf_m2, ens.q)
        if window_end[it]:
            factor = pooled_variance_final(ad.wf_n[0], ad.wf_mean, ad.wf_m2, ad.inv_diag,
                                           ad.centre0)
            ad.wf_n[0] = 0
            installed = factor != 1.0
            tr = trajectory_rescale(tr, factor)
    if it == iconf[N_TUNE] - 1:
        sc[STEP] = dual_averaging_final(da)
        sc[LENGTH] = min(trajectory_final(tr), iconf[MAX_STEPS] * sc[STEP])
        installed = False
    sc[DA_COUNTER], sc[DA_S_BAR], sc[DA_X_BAR], sc[DA_MU], sc[DA_X] = da
    sc[LOG_T], sc[SQ_GRAD], sc[T_COUNT], sc[LOG_T_AVG], sc[T_AVG_COUNT], sc[CLIMBING] = tr
    return installed


@compiled
def restart_step_size(ad, eps):
    """Restart dual averaging around ``eps`` (as Stan does after a metric update)."""
    sc = ad.scalars
    sc[STEP] = eps
    sc[DA_COUNTER], sc[DA_S_BAR], sc[DA_X_BAR], sc[DA_MU], sc[DA_X] = dual_averaging_init(eps)


@compiled
def restart(ad, eps, length):
    """Start dual averaging at step size ``eps`` and Adam at trajectory length
    ``length`` (one step by default, as TFP and BlackJAX)."""
    restart_step_size(ad, eps)
    sc = ad.scalars
    sc[LOG_T], sc[SQ_GRAD], sc[T_COUNT], sc[LOG_T_AVG], sc[T_AVG_COUNT], sc[CLIMBING] = \
        trajectory_init(length)


@compiled
def heuristic_update(k, direction, eps, log_accept):
    """One move of Stan's initial step-size heuristic on the ensemble's
    ``log`` harmonic-mean one-step acceptance: ``(eps, direction, done)``.

    The first probe sets the direction (double while above 0.8, halve while
    below); the search stops when the acceptance crosses 0.8, as in
    :func:`samplers.step_size.find_reasonable_step_size`.
    """
    log_target = math.log(HEURISTIC_ACCEPT)
    if k == 0:
        return eps, (1 if log_accept > log_target else -1), False
    if direction == 1 and not log_accept > log_target:
        return eps, direction, True
    if direction == -1 and not log_accept < log_target:
        return eps, direction, True
    eps = eps * 2.0 if direction == 1 else eps * 0.5
    done = eps > _MAX_STEP or eps < _MIN_STEP
    return min(max(eps, _MIN_STEP), _MAX_STEP), direction, done


@compiled
def probe_accept(max_energy_error, prop):
    """``log`` of the harmonic-mean acceptance of a one-step probe."""
    proposal_finish(max_energy_error, prop)
    return math.log(harmonic_mean_accept(prop.accept, prop.diverging))


@compiled
def entry_heuristic(f, fdata, idata, metric, ens, prop, eps, max_energy_error):
    """Stan's initial step-size search on the whole ensemble (one-step probes,
    nothing accepted), with gradients from the numba entry."""
    direction = 0
    for k in range(_HEURISTIC_MAX_ITER + 1):
        proposal_start(metric, ens, prop)
        drift(metric, eps, prop)
        entry_gradients(f, fdata, idata, prop)
        kick(metric, eps, max_energy_error, prop)
        eps, direction, done = heuristic_update(k, direction, eps,
                                                probe_accept(max_energy_error, prop))
        if done:
            break
    return eps


# ----- the compiled run (numba entry) ---------------------------------------


def _make_run_chunk():
    """The flat-argument loop of :func:`chunk_runner` (a closure over the
    sources' hash, numba's disk-cache key; see :mod:`samplers._cache`)."""
    sources = SOURCE_HASH

    def run_chunk(f, fdata, idata, q, g, lp, rng, pq, pp, pg, pv, plp, ph0, ph, palive,
                  psteps, paccept, pdiv, inv_diag, unit, sc, wf_n, wf_mean, wf_m2, centre0,
                  centre1, jitter_rng, in_window, window_end, iconf, fconf, interrupt,
                  start, stop, draws, stats):
        sources  # noqa: B018  (a closure variable, so part of the cache key)
        ens = Ensemble(q, g, lp, rng)
        prop = Proposal(pq, pp, pg, pv, plp, ph0, ph, palive, psteps, paccept, pdiv)
        ad = Adaptation(inv_diag, sc, wf_n, wf_mean, wf_m2, centre0, centre1, jitter_rng)
        metric = Metric(inv_diag, unit, unit, False, unit[:0], inv_diag[:0])  # diagonal
        max_error = fconf[MAX_ERROR]
        if start == 0 and iconf[N_TUNE] > 0:
            eps = entry_heuristic(f, fdata, idata, metric, ens, prop, sc[STEP], max_error)
            restart(ad, eps, math.exp(sc[LOG_T]) if math.isfinite(sc[LOG_T]) else eps)
        for it in range(start, stop):
            eps, duration, n = iteration_plan(ad, it, iconf)
            proposal_start(metric, ens, prop)
            for _ in range(n):
                drift(metric, eps, prop)
                entry_gradients(f, fdata, idata, prop)
                kick(metric, eps, max_error, prop)
                if interrupt[0] != 0:  # the cut-short transition is dropped
                    return it
            if end_iteration(it, eps, duration, ens, prop, ad, in_window, window_end, iconf, fconf,
                             draws, stats):
                eps = entry_heuristic(f, fdata, idata, metric, ens, prop, sc[STEP], max_error)
                restart_step_size(ad, eps)
        return stop

    return run_chunk


_F1, _F2, _F3 = types.float64[::1], types.float64[:, ::1], types.float64[:, :, ::1]
_B1, _I1 = types.boolean[::1], types.int64[::1]

_CHUNK_SIGNATURE = types.int64(
    ENTRY_TYPE, _F1, _I1,                                  # model entry
    _F2, _F2, _F1, types.uint64[:, ::1],                   # Ensemble
    _F2, _F2, _F2, _F2, _F1, _F1, _F1, _B1, _I1, _F1, _B1,  # Proposal
    _F1, _F2, _F1, _I1, _F1, _F1, _F1, _F1, types.uint64[::1],  # metric, Adaptation
    _B1, _B1, _I1, _F1, _I1,                               # schedule, configuration, interrupt
    types.int64, types.int64, _F3, _F3,                    # start, stop, outputs
)


@functools.cache
def chunk_runner():
    """The compiled ChEES loop over iterations ``start .. stop - 1`` of all
    chains, against the first-class type of the model entry (one compiled
    loop for every model; cached on disk).  Returns the index after the
    last recorded iteration (less than ``stop`` when interrupted)."""
    return njit(_CHUNK_SIGNATURE, cache=True, nogil=True, _nrt=False, error_model="numpy")(
        _make_run_chunk())


def _unit():
    return np.ones((1, 1))


def _advance_entry(entry, ens, prop, ad, schedule, iconf, fconf, interrupt, start, stop,
                   draws, stats):
    return chunk_runner()(entry.function, entry.fdata, entry.idata, *ens, *prop, ad.inv_diag,
                          _unit(), *ad[1:], schedule[0], schedule[1], iconf, fconf, interrupt,
                          start, stop, draws, stats)


# ----- the batch run (one Python call per leapfrog step or iteration) ------


def batch_steps(batch):
    """``steps(metric, eps, max_energy_error, prop, n, interrupt)``: ``n``
    ensemble leapfrog steps, one call of ``batch(thetas) -> (lps, grads)``
    each; False when interrupted (checked after every step).
    :class:`samplers.chees_device.DeviceSteps` does the same on a GPU."""
    def steps(metric, eps, max_energy_error, prop, n, interrupt):
        for _ in range(n):
            drift(metric, eps, prop)
            lps, grads = batch(prop.q.copy())
            take_gradients(np.ascontiguousarray(lps, dtype=np.float64),
                           np.ascontiguousarray(grads, dtype=np.float64), prop)
            kick(metric, eps, max_energy_error, prop)
            if interrupt[0] != 0:
                return False
        return True
    return steps


def _heuristic_steps(steps, metric, ens, prop, eps, max_energy_error):
    """:func:`entry_heuristic` with the one-step probes of ``steps``."""
    direction, no_interrupt = 0, np.zeros(1, dtype=np.int64)
    for k in range(_HEURISTIC_MAX_ITER + 1):
        proposal_start(metric, ens, prop)
        steps(metric, eps, max_energy_error, prop, 1, no_interrupt)
        eps, direction, done = heuristic_update(k, direction, eps,
                                                probe_accept(max_energy_error, prop))
        if done:
            break
    return eps


def _advance_steps(steps, ens, prop, ad, schedule, iconf, fconf, interrupt, start, stop,
                   draws, stats):
    """The loop of :func:`chunk_runner` in Python around the leapfrog steps of
    ``steps`` (:func:`batch_steps` or a device's): the same compiled pieces
    in the same order."""
    sc, max_error = ad.scalars, fconf[MAX_ERROR]
    metric = Metric(ad.inv_diag, _unit(), _unit(), False)
    if start == 0 and iconf[N_TUNE] > 0:
        eps = _heuristic_steps(steps, metric, ens, prop, sc[STEP], max_error)
        restart(ad, eps, math.exp(sc[LOG_T]) if math.isfinite(sc[LOG_T]) else eps)
    for it in range(start, stop):
        eps, duration, n = iteration_plan(ad, it, iconf)
        proposal_start(metric, ens, prop)
        if not steps(metric, eps, max_error, prop, n, interrupt):
            return it
        if end_iteration(it, eps, duration, ens, prop, ad, schedule[0], schedule[1], iconf, fconf,
                         draws, stats):
            eps = _heuristic_steps(steps, metric, ens, prop, sc[STEP], max_error)
            restart_step_size(ad, eps)
    return stop


# ----- the three tiers ------------------------------------------------------


def ensemble_init(entry, dim, chains, seed=0, init=None):
    """Tier 1: the initial :class:`Ensemble` of ``chains`` chains.

    Each chain starts where :func:`samplers.initial_point.find_initial_point`
    puts it (uniform(-2, 2), or ``init``), with the generator NUTS's chains
    use for that (seed, chain), and owns the RNG stream ``make_state(seed, chain)``.

    Parameters
    ----------
    entry : NumbaEntry
        Any object with ``function(theta, grad, fdata, idata)``, ``fdata``, ``idata``.
    dim, chains : int
    seed : int
    init : array_like, optional
        Shape (dim,) or (chains, dim).

    Returns
    -------
    Ensemble
    """
    starts = per_chain_inits(init, chains, dim)
    q, g, lp = np.zeros((chains, dim)), np.zeros((chains, dim)), np.zeros(chains)
    for c in range(chains):
        rng = np.random.default_rng([int(seed), c, 0x1D])
        q[c], lp[c], g[c] = find_initial_point(entry, dim, rng, starts[c])
    rngs = np.stack([make_state(seed, c) for c in range(chains)])
    return Ensemble(q, g, lp, rngs)


def chees_step(gradients, ens, prop, inv_metric, step_size, n_steps,
               max_energy_error=MAX_ENERGY_ERROR):
    """Tier 2: one lockstep HMC transition of every chain, in place.

    Parameters
    ----------
    gradients : NumbaEntry or callable
        The numba entry, or ``batch(thetas) -> (lps, grads)`` for all chains
        (e.g. ``log_density.log_density_gradient_batch``).
    ens : Ensemble
        Advanced in place.
    prop : Proposal
        Workspace (:func:`make_proposal`); holds the trajectory's end points
        and per-chain diagnostics on return.
    inv_metric : ndarray, shape (dim,)
        Diagonal inverse metric.
    step_size : float
    n_steps : int
        Leapfrog steps, the same for every chain.
    max_energy_error : float
        A chain whose energy error exceeds it stops and is rejected (divergent).

    Returns
    -------
    Ensemble, Proposal
    """
    metric = Metric(np.ascontiguousarray(inv_metric, dtype=np.float64), _unit(), _unit(), False)
    proposal_start(metric, ens, prop)
    if callable(gradients):
        batch_steps(gradients)(metric, step_size, max_energy_error, prop, int(n_steps),
                               np.zeros(1, dtype=np.int64))
    else:
        for _ in range(int(n_steps)):
            drift(metric, step_size, prop)
            entry_gradients(gradients.function, gradients.fdata, gradients.idata, prop)
            kick(metric, step_size, max_energy_error, prop)
    proposal_finish(max_energy_error, prop)
    metropolis(ens, prop)
    return ens, prop


def _adaptation(dim, seed, step_size, trajectory_length, inv_metric):
    scalars = np.zeros(N_SCALARS)
    scalars[STEP] = 1.0 if step_size is None else step_size
    scalars[LOG_T] = np.nan if trajectory_length is None else math.log(trajectory_length)
    scalars[LENGTH] = np.nan if trajectory_length is None else trajectory_length
    inv = np.ones(dim) if inv_metric is None else np.array(inv_metric, dtype=np.float64)
    if inv.shape != (dim,) or not np.all(np.isfinite(inv) & (inv > 0)):
        raise ValueError(f"inv_metric must be {dim} positive finite numbers")
    return Adaptation(inv, scalars, np.zeros(1, dtype=np.int64), np.zeros(dim), np.zeros(dim),
                      np.zeros(dim), np.zeros(dim), make_state(seed, JITTER_STREAM))


def _positive(name, value, allow_none=True):
    if value is None and allow_none:
        return
    try:
        ok = math.isfinite(value) and value > 0
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(f"{name}={value!r}; must be a positive number")


def _check(draws, tune, chains, max_leapfrog_steps, target_accept, jitter, step_size,
           trajectory_length, learning_rate):
    for name, value, low in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 2),
                             ("max_leapfrog_steps", max_leapfrog_steps, 1)):
        _check_integer(name, value, low)
    if not 0.0 < target_accept < 1.0:
        raise ValueError(f"target_accept={target_accept}; must be in (0, 1)")
    if jitter not in ("halton", "uniform"):
        raise ValueError(f"jitter={jitter!r}; expected 'halton' or 'uniform'")
    _positive("step_size", step_size)
    _positive("trajectory_length", trajectory_length)
    _positive("learning_rate", learning_rate, allow_none=False)
    if tune == 0 and (step_size is None or trajectory_length is None):
        raise ValueError("tune=0 needs step_size and trajectory_length (nothing is adapted)")


GRADIENT_SOURCES = ("entry", "batch", "device")


def _gradient_source(log_density, entry, gradient):
    """Where the gradients come from (``gradient``, or the default of
    :func:`chees`): one of :data:`GRADIENT_SOURCES`."""
    batch = getattr(log_density, "log_density_gradient_batch", None)
    device = getattr(log_density, "device_gradients", None)
    if gradient is None:
        if callable(device):
            return "device"
        on_device = getattr(log_density, "batches_on_device", False)
        return "entry" if (entry is not None and not on_device) or not callable(batch) else "batch"
    if gradient not in GRADIENT_SOURCES:
        raise ValueError(f"gradient={gradient!r}; expected one of {GRADIENT_SOURCES} or None")
    needs = {"batch": ("log_density_gradient_batch(thetas)", batch),
             "device": ("device_gradients(thetas) (a density on a GPU)", device)}.get(gradient)
    if needs and not callable(needs[1]):
        raise ValueError(f"gradient={gradient!r}: {type(log_density).__name__} has no {needs[0]}")
    return gradient


def _steps(log_density, source, chains, dim):
    """The ``steps`` function of ``source`` "batch" or "device"."""
    if source == "batch":
        return batch_steps(log_density.log_density_gradient_batch)
    from .chees_device import DeviceSteps  # numba.cuda: only for a density on a device
    return DeviceSteps(log_density, chains, dim)


def _advance(log_density, entry, source, chains, dim):
    """The ``advance`` function of :func:`_run` for ``source``, its compiled
    loop compiled (or loaded from numba's cache) now, before the run's
    Ctrl-C handler is installed."""
    if source == "entry":
        chunk_runner()
        return functools.partial(_advance_entry, entry)
    return functools.partial(_advance_steps, _steps(log_density, source, chains, dim))


#: Chunks of iterations are sized to take about this long (progress bar, Ctrl-C).
CHUNK_SECONDS = 0.2
#: Total bulk ESS below which a run warns: Vehtari et al. (2021)'s 400, which
#: for many chains replaces their "100 per chain" (64 chains would ask for 6,400).
MIN_ESS = 400


def _run(advance, ens, prop, ad, schedule, iconf, fconf, interrupt, n_total, progress):
    """Advance all chains chunk by chunk; returns (draws, stats, n_done)."""
    chains, dim = ens.q.shape
    draws = np.zeros((chains, n_total, dim))
    stats = np.full((chains, n_total, len(STAT_NAMES)), np.nan)
    it, size = 0, 1
    with tqdm(total=chains * n_total, disable=not progress, unit="draws") as bar:
        while it < n_total and interrupt.flag[0] == 0:
            stop = min(n_total, it + size)
            t0 = time.perf_counter()
            done = advance(ens, prop, ad, schedule, iconf, fconf, interrupt.flag, it, stop,
                           draws, stats)
            per_iter = (time.perf_counter() - t0) / max(done - it, 1)
            bar.update(chains * (done - it))
            div = int(np.nansum(stats[:, iconf[N_TUNE]:done, _DIVERGING]))
            bar.set_postfix_str(f"{'warmup' if done < iconf[N_TUNE] else 'sampling'}, "
                                f"divergences={div}", refresh=False)
            it = done
            size = int(min(100, max(1, CHUNK_SECONDS / max(per_iter, 1e-9))))
    return draws[:, :it], stats[:, :it], it


def chees(model, chains=64, draws=1000, tune=1000, seed=0, target_accept=TARGET_ACCEPT,
          max_leapfrog_steps=MAX_LEAPFROG_STEPS, jitter="halton", learning_rate=LEARNING_RATE,
          adapt_metric=True, step_size=None, trajectory_length=None, inv_metric=None,
          init=None, progress=True, save_warmup=False, log_likelihood=True, gradient=None,
          adapt_init_buffer=INIT_BUFFER, adapt_term_buffer=TERM_BUFFER,
          adapt_window=BASE_WINDOW, log_likelihood_max_bytes=LOG_LIKELIHOOD_MAX_BYTES):
    """Sample with ChEES-HMC: many chains in lockstep, adapted together.

    Each iteration every chain takes the same number of leapfrog steps (the
    shared trajectory length ``T`` times a Halton number, over the step
    size) and its own Metropolis test.  Warmup adapts the step size (dual
    averaging on the harmonic-mean acceptance), ``T`` (Adam on the ChEES
    criterion) and a diagonal metric (the pooled variance of all chains in
    Stan's windows).  Hoffman, Radul and Sountsov (2021); see
    :mod:`samplers.chees_adaptation` for the details and their sources.
    Best with many chains (dozens or more) on models whose posterior needs
    no per-chain trajectory length: every chain moves every iteration, with
    no tree building, and the steps of all chains run as one batch.

    Parameters
    ----------
    model : LogDensity, model or external log density
        As :func:`samplers.nuts`.
    chains : int
        At least 2 (the adaptation uses the chains' means); 64 by default.
    draws, tune : int
    seed : int
        Results depend only on the seed.
    target_accept : float
        Dual-averaging target of the harmonic mean of the chains' acceptance
        probabilities (0.651, Beskos et al. 2013, as BlackJAX).
    max_leapfrog_steps : int
        Cap on the steps of one transition (and on ``T / step_size``).
    jitter : {"halton", "uniform"}
        How the trajectory time ``h T`` is jittered: ``h`` from the base-2
        Halton sequence, or uniform(0, 1) from the seed's own stream.
    learning_rate : float
        Adam's learning rate on ``log T`` (0.025, TFP).
    adapt_metric : bool
        Adapt the diagonal metric; otherwise keep ``inv_metric`` (or unit).
    step_size, trajectory_length : float, optional
        Starting values (the step-size search starts from ``step_size``; ``T``
        starts at one step); both are required with ``tune=0``.
    inv_metric : array_like, shape (dim,), optional
        Initial diagonal inverse metric (unit by default).
    init : array_like, optional
        Unconstrained start, shape (dim,) or (chains, dim).
    progress : bool
    save_warmup, log_likelihood, log_likelihood_max_bytes
        As :func:`samplers.nuts`.
    gradient : {None, "entry", "batch", "device"}
        Where gradients come from: ``"entry"``, the model's numba entry in
        one compiled loop (an external density without it calls back into
        Python once per chain and step); ``"batch"``,
        ``log_density_gradient_batch(thetas)`` once per leapfrog step for all
        chains; ``"device"``, a GPU density's ``device_gradients``, with each
        iteration's leapfrog steps on the device
        (:mod:`samplers.chees_device`).  ``None``: ``"device"`` on the CUDA
        backend, else the batch method of a density that evaluates batches
        on a device (``batches_on_device``), else the entry when there is
        one, else the batch method.
    adapt_init_buffer, adapt_term_buffer, adapt_window : int
        Stan's metric windows (:func:`samplers.nuts`); each window pools the
        draws of all chains.

    Returns
    -------
    xarray.DataTree
        The groups of :func:`samplers.nuts`.  ``sample_stats`` has ``lp``,
        ``acceptance_rate`` (each chain's Metropolis probability),
        ``step_size``, ``n_steps``, ``diverging``, ``energy``,
        ``energy_error`` (``tree_depth`` is 0); ``posterior.attrs`` holds
        the adapted ``step_size`` and ``trajectory_length``.  Ctrl-C, and an
        exception of the log density, stop the run as in :func:`samplers.nuts`.
    """
    _check(draws, tune, chains, max_leapfrog_steps, target_accept, jitter, step_size,
           trajectory_length, learning_rate)
    log_density = resolve(model)
    dim = dimension(log_density)
    entry = numba_entry(log_density)
    source = _gradient_source(log_density, entry, gradient)
    ad = _adaptation(dim, seed, step_size, trajectory_length, inv_metric)
    iconf = np.array([tune, max_leapfrog_steps, HALTON if jitter == "halton" else UNIFORM,
                      bool(adapt_metric)], dtype=np.int64)
    fconf = np.array([target_accept, MAX_ENERGY_ERROR, learning_rate])
    schedule = warmup_schedule(tune, int(adapt_init_buffer), int(adapt_term_buffer),
                               int(adapt_window))
    interrupt = Interrupt()
    with entry_for(log_density, interrupt) as entry:
        ens = ensemble_init(entry, dim, chains, seed, init)
        check_outputs(log_density, ens.q[0], log_likelihood)
        advance = _advance(log_density, entry, source, chains, dim)
        import_lazy_modules()
        with interrupt.handling_sigint():  # nothing is imported (nor compiled) from here on
            raw, stats, n_done = _run(advance, ens, make_proposal(chains, dim), ad, schedule,
                                      iconf, fconf, interrupt, tune + draws, progress)
            interrupt.wrap_up()
            attrs = {"sampler": "chees", "seed": int(seed), "tune": int(tune),
                     "chains": int(chains), "step_size": float(ad.scalars[STEP]),
                     "trajectory_length": float(ad.scalars[LENGTH]), "jitter": jitter,
                     "gradient": source, "interrupted": int(n_done < tune + draws)}
            idata, missing = to_datatree(log_density, raw, stats, tune,
                                         save_warmup or n_done <= tune, None, attrs,
                                         log_likelihood, log_likelihood_max_bytes, interrupt)
            interrupt.raise_failure(idata)
            messages = []
            if n_done > tune and n_done == tune + draws:
                messages = interrupt.optional("the convergence diagnostics",
                                              lambda: sampler_warnings(idata, None, MIN_ESS),
                                              missing)
    if n_done < tune + draws:
        warnings.warn(f"sampling interrupted: {n_done} of {tune + draws} iterations per "
                      "chain kept", SamplerWarning, stacklevel=2)
    if missing:
        warnings.warn("the output lacks " + "; ".join(missing), SamplerWarning, stacklevel=2)
    for msg in messages or []:
        warnings.warn(msg, SamplerWarning, stacklevel=2)
    return idata
