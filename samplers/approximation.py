"""What the approximate methods (Pathfinder, ADVI) share: log densities of
many points in one compiled call, and the DataTree of their draws.

:func:`log_densities` evaluates a model's numba entry at every row of an
array inside one compiled loop (no Python call per point; an external log
density's entry calls back into Python, see :mod:`samplers.external`).  Like
the chain runners it is compiled against the first-class function type of
the entry, once for every model, and cached on disk under a key that
includes the package's source hash (:mod:`samplers._cache`).
"""

import functools
import math
import warnings
from pathlib import Path

import numpy as np
from arviz_base import from_dict
from numba import njit, types

from ._cache import source_hash
from .diagnostics import SamplerWarning
from .interrupt import Interrupt
from .output import log_likelihood_groups, posterior_dict
from .protocol import ENTRY_TYPE

#: Hash of this package's sources: part of numba's cache key (see :mod:`samplers._cache`).
SOURCE_HASH = source_hash(Path(__file__).parent)

_F1 = types.float64[::1]
_F2 = types.float64[:, ::1]
_ROWS_SIGNATURE = types.void(ENTRY_TYPE, _F1, types.int64[::1], _F2, _F1, _F1)


def _make_rows_kernel():
    """The loop of :func:`log_densities`; a closure over the source hash, so
    numba's disk cache sees a change anywhere in the package."""
    sources = SOURCE_HASH

    def rows(f, fdata, idata, thetas, out, grad):
        sources  # noqa: B018  (a closure variable, so part of the cache key)
        for i in range(thetas.shape[0]):
            value = f(thetas[i], grad, fdata, idata)
            out[i] = value if math.isfinite(value) else -math.inf

    return rows


@functools.cache
def _rows_kernel():
    return njit(_ROWS_SIGNATURE, cache=True, nogil=True, error_model="numpy")(
        _make_rows_kernel())


def log_densities(entry, thetas):
    """Log density at each row of ``thetas``; not finite (NaN, +inf) becomes ``-inf``.

    Parameters
    ----------
    entry : NumbaEntry
    thetas : ndarray, shape (n, dim)

    Returns
    -------
    ndarray, shape (n,)
    """
    thetas = np.ascontiguousarray(thetas, dtype=np.float64)
    out = np.empty(thetas.shape[0])
    _rows_kernel()(entry.function, entry.fdata, entry.idata, thetas, out,
                   np.zeros(thetas.shape[1]))
    return out


def draws_datatree(log_density, thetas, stats, attrs, log_likelihood, max_bytes):
    """DataTree of unconstrained draws from an approximation (one chain).

    Parameters
    ----------
    log_density : LogDensity
    thetas : ndarray, shape (n, dim)
    stats : dict of str to ndarray of shape (n,)
        The ``sample_stats`` group.
    attrs : dict
        Attributes of the ``posterior`` and ``sample_stats`` groups.
    log_likelihood : bool
        Add the ``log_likelihood`` group when the log density provides it.
    max_bytes : float or None
        Leave the log-likelihood out, with a warning, above this size.

    Returns
    -------
    xarray.DataTree
        ``posterior`` (constrained values by name via ``constrain``, else
        ``theta``), ``sample_stats``, and ``log_likelihood`` /
        ``observed_data`` when the log density gives them.
    """
    draws = np.asarray(thetas, dtype=np.float64)[None]
    posterior, coords, dims = posterior_dict(log_density, draws)
    groups, missing = {"posterior": posterior}, []
    if log_likelihood and hasattr(log_density, "pointwise_log_likelihood"):
        groups.update(log_likelihood_groups(log_density, {"": draws}, max_bytes,
                                            Interrupt(), missing))
    if missing:
        warnings.warn("the output lacks " + "; ".join(missing), SamplerWarning, stacklevel=3)
    if hasattr(log_density, "observed_data"):
        groups["observed_data"] = dict(log_density.observed_data())
    groups["sample_stats"] = {k: np.asarray(v)[None] for k, v in stats.items()}
    return from_dict(groups, coords=coords or None, dims=dims or None,
                     attrs={"posterior": dict(attrs), "sample_stats": dict(attrs)})
