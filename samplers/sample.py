"""Convenience runners: :func:`nuts` and :func:`hmc` (model in, DataTree out)."""

import warnings

import numpy as np

from . import kernel
from .diagnostics import SamplerWarning, sampler_warnings
from .external import entry_for
from .grad_adaptation import (EARLY_SWITCH_FREQ, SWITCH_FREQ, WINDOW_GROWTH,
                              grad_adaptation_buffers, grad_adaptation_phases)
from .initial_point import find_initial_point, per_chain_inits
from .interrupt import Interrupt
from .kernel import ChainState
from .low_rank import low_rank_buffers
from .mass_matrix import BASE_WINDOW, INIT_BUFFER, TERM_BUFFER, warmup_schedule
from .metric import diagonal_metric, identity_metric
from .output import LOG_LIKELIHOOD_MAX_BYTES, check_outputs, import_lazy_modules, to_datatree
from .protocol import dimension, resolve
from .rng import make_state
from .runner import compile_chains, resolve_cores, run_chains
from .compile_notice import announcing_compile

#: Stan's divergence threshold on the energy error.
MAX_ENERGY_ERROR = 1000.0


def _chain_state(entry, dim, dense, seed, chain, init, inv_metric=None, low_rank_rows=0):
    """Initial :class:`ChainState` of one chain: its start point, and the unit
    metric or the given diagonal inverse metric ``inv_metric``; with
    ``low_rank_rows`` (the warmup draws a low-rank metric may hold, at most
    ``tune + 1``) its low-rank buffers."""
    rng = np.random.default_rng([int(seed), int(chain), 0x1D])
    q, lp, grad = find_initial_point(entry, dim, rng, init)
    scalars = np.zeros(kernel.N_SCALARS)
    scalars[kernel.LP], scalars[kernel.STEP] = lp, 1.0
    n = dim if dense else 1
    metric = (identity_metric(dim, dense) if inv_metric is None
              else diagonal_metric(inv_metric, dense))
    vecs, vals, *lr_state = low_rank_buffers(dim, low_rank_rows)
    if low_rank_rows:
        metric = metric._replace(lr_vecs=vecs, lr_vals=vals)
    return ChainState(np.ascontiguousarray(q), grad, scalars, make_state(seed, chain),
                      metric, np.zeros(1, dtype=np.int64),
                      np.zeros(dim), np.zeros(dim), np.zeros((n, n)), np.zeros((n, n)),
                      *grad_adaptation_buffers(dim), *lr_state)


def _check_integer(name, value, low):
    """ValueError naming the argument unless ``value`` is an integer >= ``low``."""
    try:
        ok = int(value) == value and value >= low
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{name}={value!r}; must be an integer >= {low}")


def _check_counts(draws, tune, chains, max_treedepth):
    # draws >= 1: a run keeps at least one draw (its diagnostics and
    # log-likelihood need one); warmup alone is tune with no draws to keep.
    for name, value, low in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1),
                             ("max_treedepth", max_treedepth, 1)):
        _check_integer(name, value, low)


def resolve_adaptation(adaptation, metric):
    """The warmup to run: ``None`` is nutpie's for a diagonal or low-rank
    metric, Stan's for a dense one; nutpie's estimate is not dense, and the
    low-rank one needs nutpie's (it uses gradients)."""
    if adaptation is None:
        return "stan" if metric == "dense" else "nutpie"
    if adaptation not in ("nutpie", "stan"):
        raise ValueError(f"adaptation={adaptation!r}; expected 'nutpie', 'stan' or None")
    if adaptation == "stan" and metric == "low_rank":
        raise ValueError("adaptation='stan' with metric='low_rank'; the low-rank estimate "
                         "needs gradients: use adaptation='nutpie' (or None)")
    if adaptation == "nutpie" and metric == "dense":
        raise ValueError(f"adaptation='nutpie' with metric={metric!r}; nutpie's "
                         "estimate is diagonal: use metric='diag' or adaptation='stan'")
    return adaptation


def _config(kind, max_treedepth, num_steps, tune, metric, target_accept, adaptation="stan",
            metric_given=False):
    if metric not in ("diag", "dense", "low_rank"):
        raise ValueError(f"metric={metric!r}; expected 'diag', 'dense' or 'low_rank'")
    adaptation = resolve_adaptation(adaptation, metric)
    if not 0.0 < target_accept < 1.0:
        raise ValueError(f"target_accept={target_accept}; must be in (0, 1)")
    iconf = np.zeros(kernel.N_ICONF, dtype=np.int64)
    iconf[kernel.KIND], iconf[kernel.MAX_DEPTH] = kind, max_treedepth
    iconf[kernel.NUM_STEPS], iconf[kernel.N_TUNE] = num_steps, tune
    iconf[kernel.DENSE] = metric == "dense"
    iconf[kernel.ADAPT] = (kernel.ADAPT_LOW_RANK if metric == "low_rank" else
                           kernel.ADAPT_NUTPIE if adaptation == "nutpie" else kernel.ADAPT_STAN)
    iconf[kernel.EARLY_END], iconf[kernel.FINAL_START] = grad_adaptation_phases(tune)
    iconf[kernel.EARLY_FREQ], iconf[kernel.SWITCH_FREQ] = EARLY_SWITCH_FREQ, SWITCH_FREQ
    iconf[kernel.METRIC_GIVEN] = bool(metric_given)
    fconf = np.zeros(kernel.N_FCONF)
    fconf[kernel.TARGET_ACCEPT], fconf[kernel.MAX_ENERGY_ERROR] = target_accept, MAX_ENERGY_ERROR
    fconf[kernel.WINDOW_GROWTH] = WINDOW_GROWTH
    return iconf, fconf


def _check_windows(windows):
    for name, value, low in zip(("adapt_init_buffer", "adapt_term_buffer", "adapt_window"),
                                windows, (0, 0, 1)):
        _check_integer(name, value, low)


def _named_init(init, log_density, chains, seed):
    """``init="pathfinder"``: a :class:`samplers.pathfinder.PathfinderInit`
    (start points, initial inverse metrics, evaluations spent)."""
    if init != "pathfinder":
        raise ValueError(f"init={init!r}; expected 'pathfinder', an array of shape (dim,) or "
                         "(chains, dim), or None")
    from .pathfinder import pathfinder_init
    return pathfinder_init(log_density, chains, seed)


def _starts(init, log_density, chains, seed):
    """``(init, inverse metrics, named)``: the start points to give
    :func:`per_chain_inits`, each chain's initial diagonal inverse metric
    (None: the unit metric), and the ``PathfinderInit`` of a named ``init``
    (None for an array or None, which leave everything as given)."""
    if not isinstance(init, str):
        return init, [None] * chains, None
    named = _named_init(init, log_density, chains, seed)
    return named.points, list(named.inv_metric), named


def _check_max_bytes(max_bytes):
    if max_bytes is not None and not max_bytes >= 0:
        raise ValueError(f"log_likelihood_max_bytes={max_bytes!r}; must be >= 0 or None")


def _sample(model, kind, draws, tune, chains, seed, target_accept, max_treedepth,
            num_steps, metric, init, progress, cores, save_warmup, log_likelihood,
            log_likelihood_max_bytes, windows, adaptation):
    """Validate everything, sample, then build the output (which never loses the draws)."""
    _check_counts(draws, tune, chains, max_treedepth)
    _check_windows(windows)
    _check_max_bytes(log_likelihood_max_bytes)
    log_density = resolve(model)
    dim = dimension(log_density)
    init, inv_metrics, named = _starts(init, log_density, chains, seed)
    iconf, fconf = _config(kind, max_treedepth, num_steps, tune, metric, target_accept,
                           resolve_adaptation(adaptation, metric), named is not None)
    interrupt = Interrupt()
    with entry_for(log_density, interrupt) as entry:
        inits = per_chain_inits(init, chains, dim)
        states = [_chain_state(entry, dim, metric == "dense", seed, c, inits[c],
                               inv_metrics[c], tune + 1 if metric == "low_rank" else 0)
                  for c in range(chains)]
        check_outputs(log_density, states[0].q, log_likelihood)
        schedule = warmup_schedule(tune, *(int(w) for w in windows))
        what = (f"{'NUTS' if kind == kernel.NUTS else 'static HMC'} ({metric} metric, "
                f"{resolve_adaptation(adaptation, metric)}'s warmup)")
        with announcing_compile(what, progress):
            compile_chains(iconf)
        import_lazy_modules()
        with interrupt.handling_sigint():  # nothing is imported (nor compiled) from here on
            res = run_chains(entry, states, schedule, iconf, fconf, tune + draws, tune,
                             resolve_cores(cores, chains), progress, interrupt)
            interrupt.wrap_up()
            depth = max_treedepth if kind == kernel.NUTS else None
            attrs = {"sampler": "nuts" if kind == kernel.NUTS else "hmc", "seed": int(seed),
                     "tune": int(tune), "metric": metric,
                     "adaptation": resolve_adaptation(adaptation, metric),
                     "interrupted": int(res.interrupted)}
            if named is not None:
                attrs["init_evals"] = named.n_evals
            idata, missing = to_datatree(log_density, res.draws, res.stats, tune,
                                         save_warmup or res.n_done <= tune, depth, attrs,
                                         log_likelihood, log_likelihood_max_bytes, interrupt)
            interrupt.raise_failure(idata)
            messages = []
            if res.n_done > tune and not res.interrupted:
                messages = interrupt.optional("the convergence diagnostics",
                                              lambda: sampler_warnings(idata, depth), missing)
    _warn(res, tune + draws, missing, messages or [])
    return idata


def _warn(res, n_total, missing, messages):
    """The run's warnings: interruption, parts of the output left out, diagnostics."""
    if res.interrupted:
        warnings.warn(f"sampling interrupted: {res.n_done} of {n_total} iterations per "
                      "chain kept", SamplerWarning, stacklevel=4)
    if missing:
        warnings.warn("the output lacks " + "; ".join(missing), SamplerWarning, stacklevel=4)
    for msg in messages:
        warnings.warn(msg, SamplerWarning, stacklevel=4)


def nuts(model, draws=1000, tune=1000, chains=4, seed=0, target_accept=0.8,
         max_treedepth=10, metric="diag", init=None, progress=True, cores=None,
         save_warmup=False, log_likelihood=True, adapt_init_buffer=INIT_BUFFER,
         adapt_term_buffer=TERM_BUFFER, adapt_window=BASE_WINDOW,
         log_likelihood_max_bytes=LOG_LIKELIHOOD_MAX_BYTES, adaptation=None):
    """Sample with the No-U-Turn Sampler (Stan's) after nutpie's or Stan's warmup.

    Parameters
    ----------
    model : LogDensity, model or external log density
        A model (has ``compile()``) is compiled first.  An external log
        density without ``numba_entry`` runs through a Python callback: same
        algorithm, slower (one Python call per gradient).  A log density
        that is not finite (``-inf``, but also ``+inf`` or NaN) rejects the
        point; an exception it raises stops the run (see Raises).  A model
        with no parameters (``dim == 0``) is refused.
    draws, tune : int
        Iterations kept after warmup (at least 1), and warmup iterations.
    chains : int
    seed : int
        Results depend only on the seed, never on ``cores``.
    target_accept : float
        Dual-averaging target of the mean acceptance statistic.
    max_treedepth : int
        At most ``2**max_treedepth - 1`` leapfrog steps per draw.
    metric : {"diag", "dense", "low_rank"}
        ``"low_rank"``: a diagonal inverse metric plus a correction of low
        rank, estimated from the warmup's draws and gradients as nutpie's
        ``adaptation="low_rank"`` (Seyboldt, Carlson and Carpenter 2026;
        :mod:`samplers.low_rank`): for posteriors with a few strongly
        correlated directions.  It uses nutpie's warmup windows.
    init : array_like or "pathfinder", optional
        Unconstrained start, shape (dim,) or (chains, dim); default
        uniform(-2, 2) per coordinate, retried when not finite.
        ``"pathfinder"``: distinct draws of a cheap Pathfinder run
        (:func:`samplers.pathfinder.pathfinder_init`), which start the chains
        near the posterior, and its covariance diagonal as each chain's
        initial inverse metric (both warmups then start from Pathfinder's
        scales instead of the identity or ``1 / |grad|``); the
        evaluations it spent are ``posterior.attrs["init_evals"]``.
    progress : bool
        Show a tqdm progress bar, and before the sampler is compiled (once
        per install, :mod:`samplers.compile_notice`) say so.
    cores : int, optional
        Threads; default ``os.cpu_count()``, at most ``chains``.
    save_warmup : bool
        Also return the warmup draws (``warmup_*`` groups).
    log_likelihood : bool
        Add the pointwise ``log_likelihood`` group (for LOO and WAIC) when the
        log density provides it.  Its first evaluation compiles the model's
        pointwise function (0.26 s on eight schools; a later call costs
        about one gradient), which is most of the first call's overhead on
        small models.  ``constrain`` and the log-likelihood are evaluated
        once at the initial point before sampling, so their errors show
        then.
    adapt_init_buffer, adapt_term_buffer, adapt_window : int
        Stan's warmup windows (CmdStan's ``adapt init_buffer``,
        ``term_buffer``, ``window``): iterations before the first metric
        window, iterations after the last one (step size only), and the
        first metric window, which doubles.  A longer terminal buffer gives
        dual averaging more iterations after the last metric update; Stan's
        50 tends to end with a step size whose acceptance exceeds
        ``target_accept``.  Used by ``adaptation="stan"`` only.
    log_likelihood_max_bytes : float or None
        The ``log_likelihood`` groups are left out, with a warning, when they
        would take more memory than this (chains x draws x observations x 8
        bytes; default 1 GB; None: no limit).
        :func:`samplers.pointwise_log_likelihood` computes them afterwards
        for some draws at a time.
    adaptation : {None, "nutpie", "stan"}
        The warmup.  ``"nutpie"`` (nutpie's and PyMC's default, diagonal
        metric only): the inverse metric is ``sqrt(var(draws) /
        var(gradients))`` per coordinate, updated after every draw from
        overlapping windows, and the step size adapts by dual averaging
        throughout, alone in the last 15% (:mod:`samplers.grad_adaptation`).
        ``"stan"``: Stan's windowed warmup (``adapt_*`` above).  ``None``:
        ``"nutpie"`` for ``metric="diag"``, ``"stan"`` for ``"dense"``.

    Returns
    -------
    xarray.DataTree
        ``posterior``, ``sample_stats``, and ``log_likelihood`` /
        ``observed_data`` when the log density provides them.  Ctrl-C stops
        sampling within one leapfrog step, even inside a long trajectory,
        and returns the draws completed so far (the transition it cut short
        is dropped; ``posterior.attrs["interrupted"] == 1``).  Should a part
        of the output fail after sampling (an error in ``constrain`` or the
        log-likelihood, or another Ctrl-C while it is computed), it is left
        out with a :class:`SamplerWarning` that names it, and the draws are
        returned all the same (the posterior then holds the unconstrained
        ``theta`` if ``constrain`` failed).

    Raises
    ------
    Exception
        Whatever an external log density raises: the chains stop within a
        leapfrog step, as for Ctrl-C, and the exception reaches the caller
        with the output of the draws made before it as its ``idata``
        attribute (a point the density cannot evaluate is rejected by
        returning ``-inf`` instead).
    """
    return _sample(model, kernel.NUTS, draws, tune, chains, seed, target_accept,
                   max_treedepth, 0, metric, init, progress, cores, save_warmup,
                   log_likelihood, log_likelihood_max_bytes,
                   (adapt_init_buffer, adapt_term_buffer, adapt_window), adaptation)


def hmc(model, num_steps=16, draws=1000, tune=1000, chains=4, seed=0,
        target_accept=0.8, metric="diag", init=None, progress=True, cores=None,
        save_warmup=False, log_likelihood=True, adapt_init_buffer=INIT_BUFFER,
        adapt_term_buffer=TERM_BUFFER, adapt_window=BASE_WINDOW,
        log_likelihood_max_bytes=LOG_LIKELIHOOD_MAX_BYTES, adaptation=None):
    """Sample with static HMC (``num_steps`` leapfrog steps per draw).

    Same warmup and output as :func:`nuts`; the step size is adapted by
    dual averaging toward ``target_accept`` (0.65 is a common choice for
    static HMC).  See :func:`nuts` for the other parameters.
    """
    _check_integer("num_steps", num_steps, 1)
    return _sample(model, kernel.HMC, draws, tune, chains, seed, target_accept,
                   1, int(num_steps), metric, init, progress, cores, save_warmup,
                   log_likelihood, log_likelihood_max_bytes,
                   (adapt_init_buffer, adapt_term_buffer, adapt_window), adaptation)
