"""The samplers on Dask's distributed scheduler: many fits, and the chains of one fit over workers.

- :func:`map_fits`: one fit per data set (cross-validation refits,
  simulation-based calibration, per-group models), each a Dask task;
- :func:`nuts_distributed`: the chains of one NUTS run as tasks, combined
  into the DataTree ``ld.nuts`` returns, equal to it chain by chain.

Both ship the model as ``logdens.distributed`` does (a
:class:`logdens.distributed.ModelPayload`, the result of a task that Dask
computes again when a worker is lost; never a compiled function), and run
on a worker exactly what ``ld.nuts`` or ``ld.<method>`` run here, so a
chain or fit lost with its worker runs again on another with the same
numbers. ``pip install "logdens[dask]"``.
"""

import inspect
import uuid
import warnings

import numpy as np

from logdens.distributed import load, payload, recomputable, require_distributed, resolve_client

from . import kernel, sample
from .advi import advi
from .diagnostics import SamplerWarning, sampler_warnings
from .initial_point import per_chain_inits
from .laplace import laplace
from .mass_matrix import BASE_WINDOW, INIT_BUFFER, TERM_BUFFER, warmup_schedule
from .optimize import find_map
from .output import LOG_LIKELIHOOD_MAX_BYTES, to_datatree
from .pathfinder import pathfinder
from .protocol import dimension, numba_entry, resolve
from .runner import run_chains

#: The fits :func:`map_fits` runs by name (``ld.<method>``).
FITS = {"nuts": sample.nuts, "hmc": sample.hmc, "find_map": find_map, "laplace": laplace,
        "pathfinder": pathfinder, "advi": advi}
METHODS = tuple(FITS)


# ----- many fits ------------------------------------------------------------

def fit_seeds(seed, n):
    """The seeds of :func:`map_fits`' ``n`` fits: fit ``i`` gets a seed drawn from
    ``numpy.random.SeedSequence(seed, spawn_key=(i,))``, so it depends on
    ``seed`` and ``i`` only (not on ``n``, the workers or the order of completion)."""
    return [int(np.random.SeedSequence(int(seed), spawn_key=(i,)).generate_state(1)[0])
            for i in range(int(n))]


def _run_fit(payload, data, method, seed, fit_kwargs, cache_dir):
    """One fit on a worker: ``(result, warnings as (category, message))``."""
    density = load(payload, cache_dir)
    if data:
        density.set_data(**data)
    fit = FITS[method]
    kwargs = dict(fit_kwargs)
    parameters = inspect.signature(fit).parameters
    if "progress" in parameters:
        kwargs["progress"] = False  # a worker's terminal is no one's: the driver shows progress
    if "cores" in parameters:
        kwargs.setdefault("cores", 1)  # a task's share of its worker is one of its threads
    # Recorded here and raised again on the driver, where the user sees them
    # (a worker's warnings would otherwise stay in its log).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit(density, seed=seed, **kwargs)
    return result, [(w.category, str(w.message)) for w in caught]


def _gather(client, futures, progress, timeout, what):
    """Results of ``futures`` in order, with a tqdm bar of those done; on an error or
    a timeout the futures still pending are cancelled and the error raised."""
    distributed = require_distributed()
    from tqdm.auto import tqdm
    try:
        with tqdm(total=len(futures), disable=not progress, unit=what) as bar:
            for _ in distributed.as_completed(futures, timeout=timeout):
                bar.update()
        return client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise


def map_fits(model, datasets, method="nuts", client=None, seed=0, progress=True, timeout=None,
             cache_dir=None, **fit_kwargs):
    """Fit ``model`` to every data set, one Dask task per fit.

    Parameters
    ----------
    model : ld.Model or LogDensity
        Shipped to the workers as a :class:`logdens.distributed.ModelPayload` (model, generated
        source and its hash); each worker loads the compiled module from its
        own disk cache.
    datasets : list of dict
        Arguments of ``set_data`` for each fit (named arrays, ``coords``
        allowed); an empty dict fits the model's own data.
    method : {"nuts", "hmc", "find_map", "laplace", "pathfinder", "advi"}
        The fit to run: ``ld.<method>(density, seed=..., **fit_kwargs)``.
    client : distributed.Client, optional
        Default: the current client (``distributed.get_client()``).
    seed : int
        Base seed; fit ``i`` gets ``fit_seeds(seed, len(datasets))[i]``, so
        ``ld.<method>`` with that seed on the same data gives the same
        result locally, whatever the number of workers.
    progress : bool
        A tqdm bar of the fits done (sampler bars on workers are turned off).
    timeout : float, optional
        Seconds to wait for all fits; on expiry the pending ones are
        cancelled and ``TimeoutError`` is raised.
    cache_dir : str, optional
        The workers' cache directory (default: each worker's own,
        ``$LOGDENS_CACHE_DIR`` or ``~/.cache/logdens``).
    **fit_kwargs
        Passed to the fit (``draws``, ``tune``, ``chains``, ...), except
        ``seed`` and ``progress``. The chains of a fit run on one thread
        (``cores=1``, a task's share of a worker) unless ``cores`` is given;
        results do not depend on it.

    Returns
    -------
    list
        One result per data set, in order: a DataTree (``MapResult`` for
        ``find_map``). Warnings raised by a fit on its worker are raised
        again here, prefixed with the fit's index. A fit whose worker dies
        runs again on another (up to Dask's ``distributed.scheduler.allowed-failures``
        times, 3 by default, then ``KilledWorker``); the others are kept.
    """
    client = resolve_client(client)
    if method not in METHODS:
        raise ValueError(f"method={method!r}; expected one of {METHODS}")
    if "seed" in fit_kwargs:
        raise TypeError("map_fits: pass the base seed as seed=; each fit gets its own (fit_seeds)")
    datasets = [dict(d) for d in datasets]
    seeds = fit_seeds(seed, len(datasets))
    shipped = recomputable(client, payload(model), "model")
    token = uuid.uuid4().hex[:8]
    # each data set in its own fit's task (used there alone), so a fit lost
    # with its worker runs again elsewhere
    futures = [client.submit(_run_fit, shipped, d, method, s, fit_kwargs, cache_dir,
                             key=f"logdens-{method}-{i}-{token}")
               for i, (d, s) in enumerate(zip(datasets, seeds))]
    results = []
    for i, (result, caught) in enumerate(_gather(client, futures, progress, timeout, "fits")):
        for category, message in caught:
            warnings.warn(f"fit {i}: {message}", category, stacklevel=2)
        results.append(result)
    return results


# ----- the chains of one fit ------------------------------------------------

def _run_chain(payload, chain, seed, init, inv_metric, iconf, fconf, metric, schedule,
               n_total, n_tune, cache_dir):
    """Chain ``chain`` of a NUTS run on a worker: its draws and statistics
    (what ``samplers.sample._sample`` computes for that chain)."""
    density = load(payload, cache_dir)
    entry = numba_entry(density)
    state = sample.chain_state(entry, density.dim, metric, n_tune, seed, chain, init, inv_metric)
    res = run_chains(entry, [state], schedule, iconf, fconf, n_total, n_tune, 1, False)
    return res.draws[0], res.stats[0]


def nuts_distributed(model, draws=1000, tune=1000, chains=4, seed=0, client=None,
                     target_accept=0.8, max_treedepth=10, metric="diag", init=None,
                     progress=True, save_warmup=False, log_likelihood=True,
                     adapt_init_buffer=None, adapt_term_buffer=None, adapt_window=None,
                     log_likelihood_max_bytes=None, adaptation=None, timeout=None,
                     cache_dir=None):
    """``ld.nuts`` with one Dask task per chain; the same DataTree, chain by chain.

    Each chain depends only on ``(seed, chain)`` (``ld.nuts``: results never
    depend on cores), so chain ``c`` of this run equals chain ``c`` of
    ``ld.nuts(model, chains=chains, seed=seed)`` on the same machine type,
    draw for draw. The model is compiled here too: the driver builds the
    output (constrained values, log-likelihood) as ``ld.nuts`` does.

    Parameters
    ----------
    model : ld.Model or LogDensity
    client : distributed.Client, optional
        Default: the current client.
    progress : bool
        A tqdm bar of the chains done.
    timeout : float, optional
        Seconds to wait for every chain (pending ones are cancelled on expiry).
    cache_dir : str, optional
        The workers' cache directory.

    Returns
    -------
    xarray.DataTree
        A chain whose worker dies runs again on another, as in :func:`map_fits`.

    Notes
    -----
    The other parameters are :func:`ld.nuts`' (``adapt_*`` and
    ``log_likelihood_max_bytes`` default to its defaults); ``init="pathfinder"``
    runs Pathfinder here, before the chains are sent.
    """
    client = resolve_client(client)
    windows = tuple(int(w) if w is not None else d for w, d in zip(
        (adapt_init_buffer, adapt_term_buffer, adapt_window), (INIT_BUFFER, TERM_BUFFER, BASE_WINDOW)))
    max_bytes = LOG_LIKELIHOOD_MAX_BYTES if log_likelihood_max_bytes is None else log_likelihood_max_bytes
    sample._check_counts(draws, tune, chains, max_treedepth)
    sample._check_windows(windows)
    sample._check_max_bytes(max_bytes)
    density = resolve(model)
    dim = dimension(density)
    adaptation = sample.resolve_adaptation(adaptation, metric)
    init, inv_metrics, named = sample._starts(init, density, chains, seed)
    iconf, fconf = sample._config(kernel.NUTS, max_treedepth, 0, tune, metric, target_accept,
                                  adaptation, named is not None)
    inits = per_chain_inits(init, chains, dim)
    schedule = warmup_schedule(tune, *windows)
    shipped = recomputable(client, payload(density), "model")
    token = uuid.uuid4().hex[:8]
    futures = [client.submit(_run_chain, shipped, c, seed, inits[c], inv_metrics[c], iconf, fconf,
                             metric, schedule, tune + draws, tune, cache_dir,
                             key=f"logdens-chain-{c}-{token}")
               for c in range(chains)]
    parts = _gather(client, futures, progress, timeout, "chains")
    attrs = {"sampler": "nuts", "seed": int(seed), "tune": int(tune), "metric": metric,
             "adaptation": adaptation, "interrupted": 0}
    if named is not None:
        attrs["init_evals"] = named.n_evals
    idata, missing = to_datatree(density, np.stack([p[0] for p in parts]),
                                 np.stack([p[1] for p in parts]), tune, save_warmup,
                                 max_treedepth, attrs, log_likelihood, max_bytes)
    if missing:
        warnings.warn("the output lacks " + "; ".join(missing), SamplerWarning, stacklevel=2)
    for message in sampler_warnings(idata, max_treedepth):
        warnings.warn(message, SamplerWarning, stacklevel=2)
    return idata
