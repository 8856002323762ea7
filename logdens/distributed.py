"""logdens on Dask's distributed scheduler: many fits, chains over workers, sharded data.

Three ways to use more than one machine (``pip install "logdens[dask]"``):

- :func:`map_fits`: one fit per data set (cross-validation refits,
  simulation-based calibration, per-group models), each a Dask task;
- :func:`nuts_distributed`: the chains of one NUTS run as tasks, combined
  into the DataTree ``ld.nuts`` returns, equal to it chain by chain;
- :class:`ShardedLogDensity`: data beyond one machine's memory, one shard
  per worker; every gradient is a round trip to all of them.

How a model reaches a worker. Compiled functions are never pickled: a
worker gets a :class:`ModelPayload`, which is the model itself (plain Python
objects and its data arrays), its generated source and that source's cache
key. The worker recomputes the key of the source with its own versions
(``logdens.cache.key``); when it matches, it loads the module through its
own disk cache (about 10 ms once numba's files are there; a fresh machine
compiles once), else (other versions of logdens, numba or Python) it
generates the source from the model itself. Within a worker process the
module is loaded once (``logdens.cache`` keeps it), and each task builds
its own cheap ``LogDensity`` around it, so tasks running on threads of one
worker never share data.

A lost worker costs only the work it held. Dask cannot recompute
``scatter``-ed data (it cancels every task that needs them), so the payload
is the result of a task (:func:`_recomputable`) and a fit's data are its
task's arguments: Dask reruns the fits and chains of a dead worker on the
others and keeps the rest. A shard is a Dask Actor, which Dask does not
rebuild: :class:`ShardedLogDensity` builds it again on another worker, from
the model's task and the shard's data kept here, at the first call that
finds it gone.

Measured on 2 cores (benchmarks/RESULTS.md, session 8): a Dask task round
trip costs about 10 ms, an Actor call 1.3 ms and a gradient of 2 shards
3-4 ms, so ship whole fits or chains to workers. A sharded gradient pays
only when the local gradient costs more than about two round trips, or
when the data do not fit one machine at all.
"""

import inspect
import threading
import time
import uuid
import warnings
from concurrent.futures import CancelledError
from typing import NamedTuple

import numpy as np

from logdens import cache, rules
from logdens import expr as ex
from logdens.density import LogDensity
from logdens.expr import Data, ModelError
from logdens.model import Model

#: The fit functions :func:`map_fits` runs by name (``ld.<method>``).
METHODS = ("nuts", "hmc", "find_map", "laplace", "pathfinder", "advi")
#: Seconds a :class:`ShardedLogDensity` waits for its shards by default.
SHARD_TIMEOUT = 300.0
#: Times one call of a :class:`ShardedLogDensity` builds again a shard lost with its worker.
REBUILDS = 3
#: Seconds between looks at whether a shard's worker is gone, while waiting for its reply.
_POLL = 1.0
_EXTRA = 'pip install "logdens[dask]" (or pip install "dask[distributed]")'
_LOAD_LOCK = threading.Lock()


def _distributed():
    """The ``distributed`` package, or an ImportError that names the extra."""
    try:
        import distributed
    except ImportError as err:
        raise ImportError(f"logdens.distributed needs Dask's distributed scheduler: {_EXTRA}") from err
    return distributed


def _client(client):
    """``client``, else the current Dask client, else a clear error."""
    distributed = _distributed()
    if client is not None:
        return client
    try:
        return distributed.get_client()
    except ValueError as err:
        raise ValueError("no Dask client: pass client=distributed.Client(...) (a LocalCluster "
                         "or a cluster's scheduler address)") from err


def _workers(client, timeout):
    """The addresses of ``client``'s workers, after waiting up to ``timeout`` s for
    a first one (a cluster still starting them, or replacing lost ones); a
    TimeoutError naming the wait if none joins."""
    if not client.scheduler_info()["workers"]:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError as err:
            raise TimeoutError(f"ShardedLogDensity: the Dask cluster has no worker, and none joined within "
                               f"{timeout} s") from err
    return sorted(client.scheduler_info()["workers"])


# ----- the model on the wire ---------------------------------------------

class ModelPayload(NamedTuple):
    """What a worker needs to rebuild a compiled model (no compiled function in it).

    Attributes
    ----------
    model : Model
        A snapshot of the model (its data arrays travel with it).
    source : str
        The generated module (``LogDensity.source()``).
    key : str
        ``logdens.cache.key(source)`` on the driver.
    data : dict
        Data to bind after loading (a ``LogDensity``'s current data), with
        ``"coords"`` when there are coords to bind.
    """

    model: Model
    source: str
    key: str
    data: dict


def payload(model):
    """The :class:`ModelPayload` of an ``ld.Model`` or a compiled ``LogDensity``.

    A model's source is generated here (pure Python, no numba compilation);
    a ``LogDensity`` gives its own, with its current data and coords.
    """
    from logdens.engine import generate_source, lower
    if isinstance(model, LogDensity):
        data = dict(model.data())
        if model.coords():
            data["coords"] = model.coords()
        return ModelPayload(model.model, model.source(), cache.key(model.source()), data)
    if not isinstance(model, Model):
        raise TypeError(f"expected an ld.Model or a compiled LogDensity, got {type(model).__name__}; "
                        "external log densities cannot be rebuilt on a worker")
    snapshot = model.snapshot()
    source = generate_source(*lower(snapshot))
    return ModelPayload(snapshot, source, cache.key(source), {})


def load(payload, cache_dir=None):
    """A fresh ``LogDensity`` of ``payload`` in this process (run on a worker).

    The module comes from this process's memory or disk cache when the
    driver's key matches this process's key of the source; otherwise the
    model is compiled here from scratch.
    """
    from logdens.engine import compile_model, lower
    with _LOAD_LOCK:  # one numba compilation per module, even with threads per worker
        if cache.key(payload.source) == payload.key:
            module = cache.load(payload.source, cache_dir)
            density = LogDensity(payload.model, lower(payload.model)[1], module, payload.source)
        else:
            density = compile_model(payload.model, cache_dir=cache_dir)
    if payload.data:
        density.set_data(**payload.data)
    return density


# ----- many fits ------------------------------------------------------------

def fit_seeds(seed, n):
    """The seeds of :func:`map_fits`' ``n`` fits: fit ``i`` gets a seed drawn from
    ``numpy.random.SeedSequence(seed, spawn_key=(i,))``, so it depends on
    ``seed`` and ``i`` only (not on ``n``, the workers or the order of completion)."""
    return [int(np.random.SeedSequence(int(seed), spawn_key=(i,)).generate_state(1)[0])
            for i in range(int(n))]


def _run_fit(payload, data, method, seed, fit_kwargs, cache_dir):
    """One fit on a worker: ``(result, warnings as (category, message))``."""
    from logdens import samplers
    density = load(payload, cache_dir)
    if data:
        density.set_data(**data)
    fit = getattr(samplers, method)
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


def _value(value):
    """``value`` itself: the task of :func:`_recomputable`."""
    return value


def _recomputable(client, value, name):
    """A Future of ``value`` that Dask computes again when the worker holding it
    is lost: ``value`` is in the task's definition, kept by the scheduler,
    whereas a ``scatter``-ed value lives on workers alone and dies with them
    (every task that needs it is then cancelled). Workers fetch it from each
    other, so it is sent once, not once per task."""
    return client.submit(_value, value, key=f"logdens-{name}-{uuid.uuid4().hex[:8]}")


def _gather(client, futures, progress, timeout, what):
    """Results of ``futures`` in order, with a tqdm bar of those done; on an error or
    a timeout the futures still pending are cancelled and the error raised."""
    distributed = _distributed()
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
        Shipped to the workers as a :class:`ModelPayload` (model, generated
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
    client = _client(client)
    if method not in METHODS:
        raise ValueError(f"method={method!r}; expected one of {METHODS}")
    if "seed" in fit_kwargs:
        raise TypeError("map_fits: pass the base seed as seed=; each fit gets its own (fit_seeds)")
    datasets = [dict(d) for d in datasets]
    seeds = fit_seeds(seed, len(datasets))
    shipped = _recomputable(client, payload(model), "model")
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

def _run_chain(payload, chain, seed, init, inv_metric, iconf, fconf, dense, schedule,
               n_total, n_tune, cache_dir):
    """Chain ``chain`` of a NUTS run on a worker: its draws and statistics
    (what ``samplers.sample._sample`` computes for that chain)."""
    from logdens.samplers.protocol import numba_entry
    from logdens.samplers.runner import run_chains
    from logdens.samplers.sample import _chain_state
    density = load(payload, cache_dir)
    entry = numba_entry(density)
    state = _chain_state(entry, density.dim, dense, seed, chain, init, inv_metric)
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
    from logdens.samplers import kernel, sample
    from logdens.samplers.diagnostics import SamplerWarning, sampler_warnings
    from logdens.samplers.initial_point import per_chain_inits
    from logdens.samplers.mass_matrix import BASE_WINDOW, INIT_BUFFER, TERM_BUFFER, warmup_schedule
    from logdens.samplers.output import LOG_LIKELIHOOD_MAX_BYTES, to_datatree
    from logdens.samplers.protocol import dimension, resolve
    client = _client(client)
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
    shipped = _recomputable(client, payload(density), "model")
    token = uuid.uuid4().hex[:8]
    futures = [client.submit(_run_chain, shipped, c, seed, inits[c], inv_metrics[c], iconf, fconf,
                             metric == "dense", schedule, tune + draws, tune, cache_dir,
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


# ----- a sharded log density --------------------------------------------------

def likelihood_model(model):
    """A copy of ``model`` with its per-observation terms alone (observed terms
    and ``observed=True`` potentials): no priors, no scalar potentials.

    Its parameters, their transforms and hence ``theta``'s layout are the
    model's; evaluated with ``jacobian=False`` it is the log-likelihood of
    the data it holds.
    """
    snapshot = (model.model if isinstance(model, LogDensity) else model).snapshot()
    snapshot.terms = tuple(t for t in snapshot.terms if t.per_observation)
    return snapshot


class _Shard:
    """A Dask Actor on a worker: one shard's compiled density.

    ``head`` (shard 0) carries the priors, scalar potentials and the Jacobian;
    the others hold :func:`likelihood_model` and are evaluated without the Jacobian.
    """

    def __init__(self, payload, data, head, cache_dir):
        self.density = load(payload, cache_dir)
        if data:
            self.density.set_data(**data)
        self.head = head

    def log_density_gradient(self, theta, propto, jacobian):
        return self.density.log_density_gradient(theta, propto=propto, jacobian=jacobian and self.head)

    def log_density(self, theta, propto, jacobian):
        return self.density.log_density(theta, propto=propto, jacobian=jacobian and self.head)

    def describe(self):
        """``dim``, unconstrained names, coords and dims of the shard's density."""
        d = self.density
        return d.dim, d.param_unc_names(), d.coords(), d.dims()

    def constrain_batch(self, thetas, names):
        return {k: v for k, v in self.density.constrain_batch(thetas).items() if k in names}


def _shared_deterministics(model):
    """Names of the deterministics that read no named data: their values are the
    same on every shard (the others would show one shard's rows)."""
    return [name for name, e in model.deterministics.items()
            if not any(isinstance(leaf, Data) and leaf.name is not None for leaf in e.leaves())]


def _check_rows_split(model):
    """A ModelError for a likelihood whose rows do not add up over shards: one
    that reads named data whole (a series observed as one event, a scan's
    series, a GP's inputs) or rows against other rows (``y[:-1]`` beside
    ``y[1:]``, a running sum). Split, each shard would start its own series;
    repeated in every shard, it would be counted once per shard."""
    for term in model.terms:
        if not term.per_observation:
            continue
        named = [n for n in (rules.whole_data(term).values() if rules.shaped(term) else ()) if n.name is not None]
        if named:
            raise ModelError(f"ShardedLogDensity: term {term.name!r} reads data {named[0].name} whole; its rows "
                             "cannot be split over shards")
        for root in (term.args if term.dist is not None else (term.value,)):
            for node in ex.nodes(root):
                for child, access in zip(node.children, rules.rule(node).reads(node)):
                    if access in rules.POSITIONAL and any(isinstance(leaf, Data) and leaf.name is not None
                                                          for leaf in child.leaves()):
                        raise ModelError(f"ShardedLogDensity: term {term.name!r} reads {node.label()}, rows of "
                                         "data against other rows; its rows cannot be split over shards")


class ShardLost(RuntimeError):
    """A shard of a :class:`ShardedLogDensity` was lost with its worker and cannot
    be built again (its data are lost too, or its workers keep dying)."""


class _Placed(NamedTuple):
    """A shard on a worker: the Dask future that keeps its actor, and the actor."""

    future: object
    actor: object


class ShardedLogDensity:
    """A log density whose data are split over Dask workers, one shard each.

    Each shard is a Dask Actor holding a compiled density with its shard's
    data (``set_data(**shard)``); ``log_density_gradient`` asks every shard
    for its ``(lp, gradient)`` at once and adds them up, in shard order.

    Priors are counted once: shard 0 holds the whole model (priors, scalar
    potentials, the Jacobian of the transforms, and its rows of the
    likelihood); every other shard holds :func:`likelihood_model` (the
    observed terms and ``observed=True`` potentials alone), evaluated without
    the Jacobian. So when the shards' rows partition the data, the sum is
    the unsharded model's log density and gradient, with ``propto`` either
    way. Put data that priors read, and anything that is not split by rows
    (group counts, hyperparameters as data), in every shard alike. A
    likelihood whose rows do not add up over shards (slices of data, running
    sums, data read whole: a series observed as one event) is refused.

    It follows the samplers' protocol as an external log density (``dim``,
    ``log_density_gradient``; no ``numba_entry``), so ``ld.find_map`` and
    ``ld.nuts`` run on it through Python, one round trip per gradient
    (3-4 ms for 2 shards on a 2-core LocalCluster). ``constrain`` gives the parameters
    and the deterministics that read no data; there is no pointwise
    log-likelihood (each shard holds its own rows).

    A shard whose worker dies is built again on a live worker, from its model
    and data, by the first call that finds it gone, and asked again; a run
    on it goes on with the same numbers. This process keeps each shard's
    dict for that. A shard that cannot be built again (its data a Future of
    scattered data, lost with their worker; or lost :data:`REBUILDS` + 1
    times in one call) raises :class:`ShardLost`.

    Parameters
    ----------
    model : ld.Model or LogDensity
        Its own data arrays travel to every worker with it: build it with
        small stand-in data (or one shard's) and pass the real data as shards.
    shards : list of dict or distributed.Future
        ``set_data`` arguments of each shard (``coords`` allowed). A dict is
        sent from here to its worker; a Future of such a dict (say
        ``client.submit(read_shard, path)``) is loaded on the workers, so
        the data never pass through this process.
    client : distributed.Client, optional
        Default: the current client. Shard ``i`` is placed on worker
        ``i mod n_workers`` (workers sorted by address).
    timeout : float
        Seconds to wait for any reply of a shard, or for a shard to be built.
    cache_dir : str, optional
        The workers' cache directory.

    Examples
    --------
    >>> sharded = ShardedLogDensity(m, [{"x": x[:n], "y": y[:n]}, {"x": x[n:], "y": y[n:]}],
    ...                             client)  # doctest: +SKIP
    >>> fit = ld.find_map(sharded)  # doctest: +SKIP
    """

    def __init__(self, model, shards, client=None, timeout=SHARD_TIMEOUT, cache_dir=None):
        _check_rows_split(model.model if isinstance(model, LogDensity) else model)
        client = _client(client)
        future = _distributed().Future
        shards = list(shards)
        if not shards:
            raise ValueError("ShardedLogDensity: give at least one shard")
        self._client, self.timeout, self._cache_dir = client, timeout, cache_dir
        head = payload(model)
        self._kept = _shared_deterministics(head.model)
        # What each shard is built from, kept to build it again when its worker
        # is lost: its model (shard 0's the whole one), recomputable by Dask,
        # and its data (a dict, sent from here each time; or a Future).
        models = [_recomputable(client, head, "model")]
        if len(shards) > 1:
            models.append(_recomputable(client, payload(likelihood_model(model)), "likelihood"))
        self._recipes = [(models[min(i, 1)], shard if isinstance(shard, future) else dict(shard))
                         for i, shard in enumerate(shards)]
        self._lock = threading.Lock()
        workers = _workers(client, timeout)
        submitted = [self._submit(i, workers) for i in range(len(shards))]
        self._placed = [self._built(i, f) for i, f in enumerate(submitted)]
        self.dim, self._names, coords, dims = self._ask([0], "describe")[0]
        self._constrained = list(head.model.params) + self._kept
        self._dims = {k: v for k, v in dims.items() if k in self._constrained}
        used = {d for v in self._dims.values() for d in v}
        self._coords = {k: v for k, v in coords.items() if k in used}

    @property
    def n_shards(self):
        return len(self._placed)

    def _submit(self, i, workers):
        """The Future of shard ``i``'s actor, placed on ``workers[i % len(workers)]``
        (or on another worker, should that one be gone by then)."""
        model, data = self._recipes[i]
        where = [workers[i % len(workers)]]
        if isinstance(data, dict):  # not in the task: the scheduler would keep it as long as the actor
            data = self._client.scatter([data], workers=where, hash=False)[0]
        return self._client.submit(_Shard, model, data, i == 0, self._cache_dir, workers=where,
                                   allow_other_workers=True, actor=True,
                                   key=f"logdens-shard-{i}-{uuid.uuid4().hex[:8]}")

    def _built(self, i, future):
        """Shard ``i`` on its worker, once ``future`` has built it; a :class:`ShardLost`
        when Dask cannot build it (its data are lost, or its workers keep dying)."""
        try:
            return _Placed(future, future.result(timeout=self.timeout))
        except TimeoutError as err:
            raise TimeoutError(f"ShardedLogDensity: shard {i} was not built on a worker within "
                               f"{self.timeout} s; a slower cluster needs a larger timeout=") from err
        except (CancelledError, _distributed().KilledWorker) as err:
            data = self._recipes[i][1]
            if isinstance(data, _distributed().Future) and data.status == "cancelled":
                why = ("its data, a Future, were lost with their worker and cannot be recomputed (data "
                       "scattered to workers live there alone): give the shard as a dict, or as a Future "
                       "of a task (client.submit(read_shard, path))")
            else:
                why = f"{type(err).__name__}: {err}"
            raise ShardLost(f"ShardedLogDensity: shard {i} cannot be built on a worker: {why}") from err

    def _rebuild(self, i, lost):
        """Build shard ``i`` again on a live worker, unless another thread already has."""
        with self._lock:
            if self._placed[i] is lost:
                lost.future.release()
                self._placed[i] = self._built(i, self._submit(i, _workers(self._client, self.timeout)))

    def _ask(self, shards, method, *args):
        """The replies of ``shards`` (indices) to ``method(*args)``, asked at once, in order."""
        calls = [self._call(i, method, args) for i in shards]
        return [self._reply(i, placed, call, method, args) for i, (placed, call) in zip(shards, calls)]

    def _call(self, i, method, args):
        """``(placed, call)``: shard ``i`` as placed now and its call of ``method``
        (None when Dask already knows its worker is gone)."""
        placed = self._placed[i]
        try:
            if placed.future.status == "finished":
                return placed, getattr(placed.actor, method)(*args)
        except RuntimeError:  # "Worker holding Actor was lost", learnt since the line above
            pass
        return placed, None

    def _reply(self, i, placed, call, method, args):
        """Shard ``i``'s reply to ``call``. A shard whose worker is gone is built
        again on a live one from its model and data and asked again, up to
        :data:`REBUILDS` times; an exception raised by the shard's density is
        raised here."""
        for attempt in range(REBUILDS + 1):
            if attempt:
                self._rebuild(i, placed)
                placed, call = self._call(i, method, args)
            deadline = time.monotonic() + self.timeout
            while placed.future.status == "finished":  # alive, as far as Dask knows
                if time.monotonic() > deadline:
                    raise TimeoutError(f"ShardedLogDensity: shard {i} did not answer {method} within "
                                       f"{self.timeout} s; a slower shard needs a larger timeout=")
                if call is None:  # its worker cannot be reached: wait for Dask to say it is gone
                    time.sleep(0.1)
                    continue
                try:
                    return call.result(timeout=_POLL)  # (a call to a lost actor may never return)
                except TimeoutError:
                    pass
                except OSError:
                    call = None
        raise ShardLost(f"ShardedLogDensity: shard {i} was lost with its worker {REBUILDS + 1} times in one "
                        f"call of {method}; see the workers' logs for why they die")

    def _sum(self, method, theta, propto, jacobian):
        """Call ``method`` on every shard at once; the replies in shard order."""
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        if theta.shape != (self.dim,):
            raise ValueError(f"theta must have shape ({self.dim},), got {theta.shape}")
        return self._ask(range(self.n_shards), method, theta, propto, jacobian)

    def log_density_gradient(self, theta, propto=True, jacobian=True, out=None):
        """``(log density, gradient)``: the shards' partial sums added in shard order."""
        parts = self._sum("log_density_gradient", theta, propto, jacobian)
        lp = float(sum(p[0] for p in parts))
        grad = np.zeros(self.dim) if out is None else out
        grad[:] = 0.0
        for _, g in parts:
            grad += g
        return (lp if np.isfinite(lp) else -np.inf), grad

    def log_density(self, theta, propto=True, jacobian=True):
        """The log density alone (the shards' values added)."""
        lp = float(sum(self._sum("log_density", theta, propto, jacobian)))
        return lp if np.isfinite(lp) else -np.inf

    def param_unc_names(self):
        return list(self._names)

    def constrain_batch(self, thetas):
        """Parameters and data-free deterministics of the rows of ``thetas`` (one call to shard 0)."""
        thetas = np.ascontiguousarray(thetas, dtype=np.float64).reshape(-1, self.dim)
        return self._ask([0], "constrain_batch", thetas, self._constrained)[0]

    def constrain(self, theta):
        """Parameters and data-free deterministics at ``theta``, by name."""
        return {k: v[0] for k, v in self.constrain_batch(np.asarray(theta)[None]).items()}

    def coords(self):
        return dict(self._coords)

    def dims(self):
        return dict(self._dims)

    def close(self):
        """Release the shards' actors (their memory on the workers)."""
        for placed in self._placed:
            placed.future.release()
        self._placed, self._recipes = [], []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
