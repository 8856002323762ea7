"""Draws from an external sampler as the DataTree ``nuts`` returns.

emcee, nutpie's ``from_pyfunc``, BlackJAX or NumPyro sample the
unconstrained vector ``theta``; :func:`from_draws` turns those draws into
the same groups a logdens run has (``posterior`` with constrained values,
deterministics and the model's dims, ``log_likelihood``, ``observed_data``,
``sample_stats``), so ArviZ's summaries, LOO and plots see no difference.
The groups come from :mod:`samplers.output`, the code ``nuts`` uses.
"""

import warnings

import numpy as np

from .diagnostics import SamplerWarning
from .interrupt import Interrupt
from .output import LOG_LIKELIHOOD_MAX_BYTES, build_datatree, draw_groups
from .protocol import resolve


def _as_chains(draws, dim):
    """``draws`` as float64 (chains, n, dim); one chain's (n, dim) gets a leading axis."""
    draws = np.asarray(draws)
    if np.iscomplexobj(draws):
        raise ValueError("from_draws: draws must be real, got a complex array")
    draws = np.ascontiguousarray(draws, dtype=np.float64)
    if draws.ndim == 2:
        draws = draws[None]
    elif draws.ndim != 3:
        raise ValueError(f"from_draws: draws must have shape (chains, n, {dim}) or (n, {dim}), "
                         f"got {draws.shape}")
    if draws.shape[2] != dim:
        raise ValueError(f"from_draws: draws must have {dim} unconstrained coordinates in their "
                         f"last axis, got shape {draws.shape}")
    return draws


def _stats(log_density, draws, sample_stats):
    """``lp`` of every draw (when the log density has ``log_density_batch``) and the
    caller's statistics, each as (chains, n, ...); a caller's ``lp`` wins."""
    chains, n, dim = draws.shape
    out = {}
    batch = getattr(log_density, "log_density_batch", None)
    if callable(batch):
        out["lp"] = np.asarray(batch(draws.reshape(chains * n, dim))).reshape(chains, n)
    for name, value in (sample_stats or {}).items():
        value = np.asarray(value)
        if value.shape[:2] == (chains, n):
            out[name] = value
        elif value.shape[:1] == (chains * n,):  # one chain's (n,), or draws stacked
            out[name] = value.reshape((chains, n) + value.shape[1:])
        else:
            raise ValueError(f"from_draws: sample_stats[{name!r}] must have a leading shape "
                             f"({chains}, {n}) (or ({chains * n},)), got {value.shape}")
    return out


def from_draws(model, draws, *, sample_stats=None, attrs=None, log_likelihood=True,
               log_likelihood_max_bytes=LOG_LIKELIHOOD_MAX_BYTES):
    """The DataTree of unconstrained draws from any sampler, as ``nuts`` builds it.

    Parameters
    ----------
    model : LogDensity or model
        The log density that was sampled (a model is compiled).
    draws : array_like, shape (chains, n, dim) or (n, dim)
        Unconstrained draws (``theta``); a 2-D array is one chain.  Any real
        array is accepted (read-only, strided, another float type: copied).
    sample_stats : dict of str to array_like, optional
        The external sampler's statistics (``diverging``, ``acceptance_rate``,
        ...), each of leading shape (chains, n), or (n,) for one chain.  ``lp``
        (the log density of each draw) is added when the log density has
        ``log_density_batch``, unless given here.
    attrs : dict, optional
        Attributes of the posterior and sample_stats groups (``{"sampler":
        "emcee"}``).
    log_likelihood : bool
        Add the ``log_likelihood`` group (per observation).
    log_likelihood_max_bytes : float or None
        Leave the log-likelihood out when it would take more memory (as in
        ``nuts``); None: no limit.

    Returns
    -------
    xarray.DataTree
        ``posterior`` (constrained values and deterministics, with the model's
        dims and coords), ``sample_stats``, ``log_likelihood`` and
        ``observed_data``.  A part that fails is left out with a
        ``SamplerWarning`` saying why (the draws are never lost).

    Examples
    --------
    >>> idata = ld.from_draws(density, sampler.get_chain().swapaxes(0, 1))  # doctest: +SKIP
    """
    log_density = resolve(model)
    draws = _as_chains(draws, int(log_density.dim))
    stats = _stats(log_density, draws, sample_stats)
    interrupt, missing = Interrupt(), []
    parts = {"": draws}
    groups, coords, dims = draw_groups(log_density, parts, log_likelihood,
                                       log_likelihood_max_bytes, interrupt, missing)
    if stats:
        groups["sample_stats"] = stats
    group_attrs = {"posterior": dict(attrs or {}), "sample_stats": dict(attrs or {})}
    idata = build_datatree(groups, coords, dims, False, group_attrs, log_density, parts, missing)
    if missing:
        warnings.warn("the output lacks " + "; ".join(missing), SamplerWarning, stacklevel=2)
    return idata
