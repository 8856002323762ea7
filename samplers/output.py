"""Convert raw chains to an ArviZ DataTree (``arviz_base.from_dict``).

Groups: ``posterior`` (constrained values and deterministics by name when
the log density has ``constrain``, else the unconstrained vector ``theta``),
``sample_stats``, ``log_likelihood`` (per observation, when the log density
has ``pointwise_log_likelihood``), ``observed_data`` and, on request,
``warmup_posterior`` / ``warmup_sample_stats`` / ``warmup_log_likelihood``.

Building the output never loses the draws: a part that fails (an error in
``constrain`` or in the log-likelihood, a Ctrl-C while it is computed) or
that would be too large (the log-likelihood above a size limit) is left out,
and :func:`to_datatree` says what is missing and why.
:func:`pointwise_log_likelihood` computes a left-out log-likelihood later,
for as many draws at a time as memory allows.
"""

import functools

import numpy as np
from arviz_base import dict_to_dataset, from_dict
from tqdm.auto import tqdm

from .interrupt import Interrupt
from .kernel import STAT_NAMES
from .protocol import resolve

_INT_STATS = ("tree_depth", "n_steps")
_BOOL_STATS = ("diverging",)
#: Bytes per stored log-likelihood value (float64).
_BYTES = 8
#: Default limit on the memory of the ``log_likelihood`` groups (1 GB).
LOG_LIKELIHOOD_MAX_BYTES = 1e9


def _stack_dicts(log_density, method, draws):
    """``method`` applied to every draw, stacked to (chains, draws, ...) per name.

    Uses ``<method>_batch(thetas)`` (one call for all draws, returning
    arrays with a leading draw axis) when the log density has it; otherwise
    one Python call per draw.
    """
    chains, n, dim = draws.shape
    if n == 0:  # shapes from a point evaluation, no draws
        probe = getattr(log_density, method)(np.zeros(dim))
        return {k: np.empty((chains, 0) + np.shape(v)) for k, v in probe.items()}
    batch = getattr(log_density, method + "_batch", None)
    if batch is not None:
        out = batch(draws.reshape(chains * n, dim))
        return {k: np.asarray(v).reshape((chains, n) + np.shape(v)[1:])
                for k, v in out.items()}
    fn = getattr(log_density, method)
    out = {}
    for c in range(chains):
        for i in range(n):
            for name, value in fn(draws[c, i]).items():
                value = np.asarray(value)
                if name not in out:
                    out[name] = np.empty((chains, n) + value.shape, dtype=value.dtype)
                out[name][c, i] = value
    return out


def _theta_dict(log_density, draws):
    """The unconstrained draws as ``theta``, with coordinate names when the log
    density gives ``dim`` of them."""
    names = getattr(log_density, "param_unc_names", None)
    if not callable(names):
        return {"theta": draws}, {}, {}
    try:
        names = [str(n) for n in names()]
    except Exception:  # names are a nicety; the draws must come back
        return {"theta": draws}, {}, {}
    if len(names) != draws.shape[2]:
        return {"theta": draws}, {}, {}
    return {"theta": draws}, {"theta_dim_0": names}, {"theta": ["theta_dim_0"]}


def named_dims(log_density, missing=None):
    """``(coords, dims)`` that the log density gives by ``coords()`` and ``dims()``
    (a model's named dims, for every group), else empty.

    Coordinates are a nicety: when they fail, the output goes on without them
    and says so in ``missing``.
    """
    coords_fn, dims_fn = getattr(log_density, "coords", None), getattr(log_density, "dims", None)
    try:
        coords = dict(coords_fn()) if callable(coords_fn) else {}
        dims = {k: list(v) for k, v in dims_fn().items()} if callable(dims_fn) else {}
    except Exception as err:
        if missing is not None:
            missing.append(f"named dims and coords ({type(err).__name__}: {err})")
        return {}, {}
    return coords, dims


def posterior_dict(log_density, draws):
    """Posterior variables of unconstrained ``draws`` of shape (chains, n, dim).

    Returns
    -------
    variables : dict of str to ndarray
    coords : dict
        The log density's coords (``named_dims``) for constrained values, or
        coordinates for ``theta`` when the unconstrained vector is returned
        and the log density names its coordinates.
    dims : dict
    """
    if hasattr(log_density, "constrain"):
        variables = _stack_dicts(log_density, "constrain", draws)
        recover = getattr(log_density, "recover_discrete", None)
        if recover is not None:  # discrete parameters summed out of the model (logdens.marginalize)
            variables.update(recover(variables, draws))
        return (variables,) + named_dims(log_density)
    return _theta_dict(log_density, draws)


def stats_dict(stats, max_depth):
    """Sample statistics (chains, n, k) to named arrays with natural dtypes."""
    out = {}
    for k, name in enumerate(STAT_NAMES):
        col = stats[:, :, k]
        if name in _INT_STATS:
            col = col.astype(np.int64)
        elif name in _BOOL_STATS:
            col = col.astype(bool)
        out[name] = col
    out["reached_max_treedepth"] = (out["tree_depth"] >= max_depth if max_depth
                                    else np.zeros_like(out["diverging"]))
    return out


def check_outputs(log_density, theta, log_likelihood=True):
    """Evaluate the methods the output will call, once at ``theta``, so that
    their errors show before sampling rather than after it.

    The batch methods are the ones used when present.  An error is raised
    as it is, with a note saying where it came from.
    """
    methods = ["constrain"]
    if log_likelihood:
        methods.append("pointwise_log_likelihood")
    draws = np.asarray(theta, dtype=np.float64).reshape(1, 1, -1)
    for method in methods:
        if hasattr(log_density, method):
            try:
                _stack_dicts(log_density, method, draws)
            except Exception as err:
                if hasattr(err, "add_note"):  # Python >= 3.11
                    err.add_note(f"(raised by {method} at the initial point, before sampling)")
                raise


def observations_per_draw(log_density, point):
    """Number of pointwise log-likelihood values per draw (one evaluation at ``point``)."""
    return sum(np.size(v) for v in log_density.pointwise_log_likelihood(point).values())


def _format_bytes(n):
    """``n`` bytes as ``"6.4 kB"``, ``"32 GB"``."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def log_likelihood_groups(log_density, parts, max_bytes, interrupt, missing):
    """The ``log_likelihood`` groups of ``parts`` (prefix -> draws), or none
    (reason in ``missing``) when they fail or would take more than ``max_bytes``.

    Parameters
    ----------
    log_density : LogDensity
        With ``pointwise_log_likelihood``.
    parts : dict of str to ndarray
        Unconstrained draws (chains, n, dim) by group-name prefix (``""``,
        ``"warmup_"``); ``""`` is present.
    max_bytes : float or None
    interrupt : Interrupt
    missing : list of str
        Appended to when the groups are left out.

    Returns
    -------
    dict
        Group name to a dict of arrays (chains, n, n_obs) by observed term.
    """
    chains = parts[""].shape[0]
    n = sum(d.shape[1] for d in parts.values())
    if n == 0:
        return {}
    point = next(d[0, 0] for d in parts.values() if d.shape[1])
    n_obs = interrupt.optional("log_likelihood",
                               lambda: observations_per_draw(log_density, point), missing)
    if n_obs is None:
        return {}
    n_bytes = chains * n * n_obs * _BYTES
    if max_bytes is not None and n_bytes > max_bytes:
        missing.append(
            f"log_likelihood ({chains} chains x {n} draws x {n_obs} observations x "
            f"{_BYTES} bytes = {_format_bytes(n_bytes)}, above log_likelihood_max_bytes="
            f"{max_bytes:.3g}; pass a larger log_likelihood_max_bytes (or None), or compute "
            "it afterwards for some draws at a time with samplers.pointwise_log_likelihood("
            "model, idata.posterior.isel(draw=slice(0, 100))))")
        return {}
    groups = interrupt.optional("log_likelihood", lambda: {
        prefix + "log_likelihood": _stack_dicts(log_density, "pointwise_log_likelihood", d)
        for prefix, d in parts.items()}, missing)
    return groups or {}


def _posterior_groups(log_density, parts, interrupt, missing):
    """``posterior`` groups of ``parts`` (prefix -> draws) and their coords and
    dims; the unconstrained ``theta`` when ``constrain`` fails."""
    def constrained():
        return {prefix: posterior_dict(log_density, d) for prefix, d in parts.items()}

    built = None
    if hasattr(log_density, "constrain"):
        built = interrupt.optional("the constrained posterior (it holds the unconstrained "
                                   "draws as theta instead)", constrained, missing)
    if built is None:
        built = {prefix: _theta_dict(log_density, d) for prefix, d in parts.items()}
    groups = {prefix + "posterior": v for prefix, (v, _, _) in built.items()}
    coords, dims = named_dims(log_density, missing)
    _, posterior_coords, posterior_dims = built[""]
    # theta's own dims (when it stands in for the constrained values) win over a parameter's
    return groups, {**coords, **posterior_coords}, {**dims, **posterior_dims}


def to_datatree(log_density, draws, stats, n_tune, save_warmup, max_depth, attrs=None,
                log_likelihood=True, log_likelihood_max_bytes=None, interrupt=None):
    """Build the DataTree of a sampler run; parts that fail are left out.

    Parameters
    ----------
    log_density : LogDensity
    draws : ndarray, shape (chains, n_done, dim)
        Unconstrained draws, warmup first.
    stats : ndarray, shape (chains, n_done, len(STAT_NAMES))
    n_tune : int
        Number of warmup iterations at the start of ``draws``.
    save_warmup : bool
    max_depth : int or None
        For ``reached_max_treedepth`` (None for static HMC).
    attrs : dict, optional
        Attributes of the posterior group (sampler settings).
    log_likelihood : bool
        Add the ``log_likelihood`` groups when the log density provides them.
    log_likelihood_max_bytes : float, optional
        Leave the log-likelihood out when it would take more memory (chains
        x draws x observations x 8 bytes); None: no limit.
    interrupt : Interrupt, optional
        Whose Ctrl-C handler may cut the optional parts short.

    Returns
    -------
    idata : xarray.DataTree
    missing : list of str
        The parts left out, each with its reason (empty when complete).
    """
    interrupt = Interrupt() if interrupt is None else interrupt
    missing = []
    n_warm = min(n_tune, draws.shape[1])
    parts = {"": draws[:, n_warm:]}
    if save_warmup and n_warm > 0:
        parts["warmup_"] = draws[:, :n_warm]
    groups, coords, dims = draw_groups(log_density, parts, log_likelihood,
                                       log_likelihood_max_bytes, interrupt, missing)
    groups["sample_stats"] = stats_dict(stats[:, n_warm:], max_depth)
    if "warmup_" in parts:
        groups["warmup_sample_stats"] = stats_dict(stats[:, :n_warm], max_depth)
    group_attrs = {"posterior": dict(attrs or {}), "sample_stats": dict(attrs or {})}
    return build_datatree(groups, coords, dims, save_warmup, group_attrs, log_density, parts,
                          missing), missing


def draw_groups(log_density, parts, log_likelihood, log_likelihood_max_bytes, interrupt, missing):
    """The groups that depend on the draws alone: ``posterior``, ``log_likelihood``
    (with ``log_likelihood``, when the log density has it) and ``observed_data``,
    with their coords and dims; parts that fail are left out (reason in ``missing``).

    Parameters
    ----------
    log_density : LogDensity
    parts : dict of str to ndarray
        Unconstrained draws (chains, n, dim) by group-name prefix (``""``,
        ``"warmup_"``); ``""`` is present.
    log_likelihood : bool
    log_likelihood_max_bytes : float or None
    interrupt : Interrupt
    missing : list of str

    Returns
    -------
    groups : dict of str to dict of ndarray
    coords, dims : dict
    """
    groups, coords, dims = _posterior_groups(log_density, parts, interrupt, missing)
    if log_likelihood and hasattr(log_density, "pointwise_log_likelihood"):
        groups.update(log_likelihood_groups(log_density, parts, log_likelihood_max_bytes,
                                             interrupt, missing))
    if hasattr(log_density, "observed_data"):
        observed = interrupt.optional("observed_data", lambda: {
            k: np.asarray(v) for k, v in log_density.observed_data().items()}, missing)
        if observed is not None:
            groups["observed_data"] = observed
    return groups, coords, dims


def build_datatree(groups, coords, dims, save_warmup, attrs, log_density, parts, missing):
    """``arviz_base.from_dict``; when it rejects the groups, the draws alone
    (unconstrained posterior and sample statistics), with the reason in ``missing``."""
    try:
        return from_dict(groups, coords=coords or None, dims=dims or None,
                         save_warmup=bool(save_warmup), attrs=attrs)
    except Exception as err:
        missing.append(f"every group but the unconstrained posterior and sample_stats "
                       f"(building the DataTree failed: {type(err).__name__}: {err})")
    minimal = {k: v for k, v in groups.items() if k.endswith("sample_stats")}
    for prefix, d in parts.items():
        minimal[prefix + "posterior"], coords, dims = _theta_dict(log_density, d)
    return from_dict(minimal, coords=coords or None, dims=dims or None,
                     save_warmup=bool(save_warmup), attrs=attrs)


@functools.cache
def import_lazy_modules():
    """Import now, once per process, what a run would import on first use after
    installing its Ctrl-C handler: xarray looks for dask when it makes its
    first array, tqdm imports ``multiprocessing`` for its first bar's lock.
    A press that cuts an import short leaves the module half-initialized for
    the rest of the process (and while the output is built, a press raises
    ``KeyboardInterrupt``: :mod:`samplers.interrupt`)."""
    from_dict({"posterior": {"x": np.zeros((1, 1))}})
    tqdm.get_lock()


def pointwise_log_likelihood(model, posterior):
    """The ``log_likelihood`` group of posterior draws, computed after sampling.

    For runs whose log-likelihood was left out (too large to hold at once,
    or interrupted): call it on as many draws at a time as memory allows.

    Parameters
    ----------
    model : LogDensity or model
        The one that was sampled.  It needs ``pointwise_log_likelihood`` and,
        when the posterior holds constrained values, ``unconstrain(values)``
        (a dict of constrained values by name to ``theta``).
    posterior : xarray.Dataset
        Posterior draws with dims (chain, draw, ...), e.g.
        ``idata.posterior.isel(draw=slice(0, 100))``.

    Returns
    -------
    xarray.Dataset
        One variable per observed term, dims (chain, draw, observation), with
        the coordinates of ``posterior``.

    Examples
    --------
    >>> ll = samplers.pointwise_log_likelihood(
    ...     model, idata.posterior.isel(draw=slice(0, 100)))  # doctest: +SKIP
    """
    log_density = resolve(model)
    thetas = _unconstrain_draws(log_density, posterior)
    values = _stack_dicts(log_density, "pointwise_log_likelihood", thetas)
    return dict_to_dataset(values, coords={"chain": posterior["chain"].values,
                                           "draw": posterior["draw"].values})


def _unconstrain_draws(log_density, posterior):
    """Unconstrained draws (chains, n, dim) of a posterior Dataset."""
    chains, n = posterior.sizes["chain"], posterior.sizes["draw"]
    if "theta" in posterior and not hasattr(log_density, "constrain"):
        return np.asarray(posterior["theta"].transpose("chain", "draw", ...).values,
                          dtype=np.float64).reshape(chains, n, -1)
    if not callable(getattr(log_density, "unconstrain", None)):
        raise TypeError(f"{type(log_density).__name__} has no unconstrain(values): the "
                        "posterior's constrained values cannot be mapped back to theta")
    arrays = {k: v.transpose("chain", "draw", ...).values for k, v in posterior.data_vars.items()}
    thetas = np.empty((chains, n, int(log_density.dim)))
    for c in range(chains):
        for i in range(n):
            thetas[c, i] = log_density.unconstrain({k: a[c, i] for k, a in arrays.items()})
    return thetas
