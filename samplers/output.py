"""Convert raw chains to an ArviZ DataTree (``arviz_base.from_dict``).

Groups: ``posterior`` (constrained values and deterministics by name when
the log density has ``constrain``, else the unconstrained vector ``theta``),
``sample_stats``, ``log_likelihood`` (per observation, when the log density
has ``pointwise_log_likelihood``), ``observed_data`` and, on request,
``warmup_posterior`` / ``warmup_sample_stats`` / ``warmup_log_likelihood``.
"""

import numpy as np
from arviz_base import from_dict

from .kernel import STAT_NAMES

_INT_STATS = ("tree_depth", "n_steps")
_BOOL_STATS = ("diverging",)


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


def posterior_dict(log_density, draws):
    """Posterior variables of unconstrained ``draws`` of shape (chains, n, dim).

    Returns
    -------
    variables : dict of str to ndarray
    coords : dict
        Coordinates for ``theta`` when the unconstrained vector is returned
        and the log density names its coordinates.
    dims : dict
    """
    if hasattr(log_density, "constrain"):
        return _stack_dicts(log_density, "constrain", draws), {}, {}
    coords, dims = {}, {}
    names = getattr(log_density, "param_unc_names", None)
    if callable(names):
        coords = {"theta_dim_0": list(names())}
        dims = {"theta": ["theta_dim_0"]}
    return {"theta": draws}, coords, dims


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


def draws_groups(log_density, draws, prefix="", log_likelihood=True):
    """``posterior`` and (when available) ``log_likelihood`` of unconstrained draws.

    Parameters
    ----------
    log_density : LogDensity
    draws : ndarray, shape (chains, n, dim)
    prefix : str
        Prepended to the group names (``"warmup_"``).
    log_likelihood : bool
        Add the ``log_likelihood`` group when the log density provides it.

    Returns
    -------
    groups : dict
    coords, dims : dict
        As from :func:`posterior_dict`.
    """
    post, coords, dims = posterior_dict(log_density, draws)
    groups = {prefix + "posterior": post}
    if log_likelihood and hasattr(log_density, "pointwise_log_likelihood"):
        groups[prefix + "log_likelihood"] = _stack_dicts(
            log_density, "pointwise_log_likelihood", draws)
    return groups, coords, dims


def _groups(log_density, draws, stats, max_depth, prefix, log_likelihood):
    groups, coords, dims = draws_groups(log_density, draws, prefix, log_likelihood)
    groups[prefix + "sample_stats"] = stats_dict(stats, max_depth)
    return groups, coords, dims


def to_datatree(log_density, draws, stats, n_tune, save_warmup, max_depth, attrs=None,
                log_likelihood=True):
    """Build the DataTree of a sampler run.

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

    Returns
    -------
    xarray.DataTree
    """
    n_warm = min(n_tune, draws.shape[1])
    groups, coords, dims = _groups(log_density, draws[:, n_warm:], stats[:, n_warm:],
                                   max_depth, "", log_likelihood)
    if save_warmup and n_warm > 0:
        warm, _, _ = _groups(log_density, draws[:, :n_warm], stats[:, :n_warm],
                             max_depth, "warmup_", log_likelihood)
        groups.update(warm)
    if hasattr(log_density, "observed_data"):
        groups["observed_data"] = {k: np.asarray(v) for k, v in log_density.observed_data().items()}
    group_attrs = {"posterior": dict(attrs or {}), "sample_stats": dict(attrs or {})}
    return from_dict(groups, coords=coords or None, dims=dims or None,
                     save_warmup=bool(save_warmup), attrs=group_attrs)
