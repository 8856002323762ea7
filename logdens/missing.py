"""Imputation of missing observed values, as PyMC does it.

``m.observe("y", dist, value)`` where ``value`` has NaN entries (or is a
numpy masked array) is rewritten at ``observe`` time into nodes the engine
already has:

- ``y_observed``: the observed term over the present entries, its value
  ``y[present]`` and each argument with a plate gathered at the same rows
  (a regression's mean at the observed rows). Only these rows are in
  ``pointwise_log_likelihood``, the ``log_likelihood`` group and
  ``observed_data``.
- ``y_unobserved``: a parameter, one element per missing entry (one row per
  missing row of a multivariate term), whose prior is the term's
  distribution with its arguments gathered at the missing rows.
- ``y``: a deterministic, the data with the imputed values in place (in the
  observed term's dims), as PyMC's.

The index arrays are fixed when the model is built, so the data array ``y``
(which keeps its NaNs) may get new values by ``set_data`` only where they
were present: a NaN appearing or disappearing is a ``ModelError`` that says
to compile the model again with the new data.

Discrete distributions cannot be imputed (HMC needs a continuous parameter),
nor multivariate rows with some entries missing and others present (PyMC
imputes those entries inside the row; here they are refused).
"""

import copy
import warnings
from typing import NamedTuple

import numpy as np

from logdens.distributions.constraints import contains, describe
from logdens.distributions.frozen import _first_violation
from logdens.expr import FUNCTIONS, Expr, ModelError, ModelWarning, as_expr, kernel_plate


class Imputed(NamedTuple):
    """What ``observe`` recorded for an observed data array with missing entries."""

    mask: np.ndarray  #: True at the missing entries, the array's shape
    term: object  #: the whole term before the split (``model.Term``): its name and support
    #: The data and the arguments that have the term's rows, gathered by the
    #: parts: their lengths must agree (``validate.check_terms``), as the
    #: whole term's would.
    rows: tuple


def missing_mask(value):
    """The mask of missing entries of an observed array (NaN, or masked in a numpy
    masked array), or None when nothing is missing or ``value`` is an expression."""
    if isinstance(value, Expr):
        return None
    if isinstance(value, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(value)
        if np.issubdtype(value.dtype, np.floating):
            mask = mask | np.isnan(value.data)
        return mask if mask.any() else None
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.floating):
        return None
    mask = np.isnan(array)
    return mask if mask.any() else None


def with_nan(value, mask):
    """``value`` as a float array with NaN at the missing entries."""
    array = np.ma.getdata(value).astype(float, copy=True)
    array[mask] = np.nan
    return array


def impute(model, name, dist, value, mask, dims, term_of):
    """Add observed term ``name`` of ``dist`` at ``value``, whose entries at ``mask``
    are missing, to ``model`` as the three parts of the module docstring.

    ``term_of(dist, value)`` is ``model.make_term``'s observed term (its
    arguments as expressions), for the checks of the whole term.
    """
    what = f"observe {name!r}"
    rows, event = _missing_rows(what, dist, value, mask)
    k, n = int(rows.sum()), len(rows)
    if k == n:
        raise ModelError(f"{what}: all {n} values are missing; nothing is observed: declare it "
                         f"with m.param({name!r}, ...) instead")
    array = with_nan(value, mask)
    y = model._add_data(name, array, dims, what, "observed term")
    whole = term_of(dist, y)
    present, missing = (as_expr(np.flatnonzero(r).astype(np.int64)) for r in (~rows, rows))
    kernel_plate(dist.spec, whole.args, lambda: f"{what}: {dist.spec.name} arguments")
    observed, gathered = _at_rows(what, dist, len(event), n, present)
    unobserved, _ = _at_rows(what, dist, len(event), n, missing)
    model.observe(f"{name}_observed", observed, y[present])
    param = model.param(f"{name}_unobserved", unobserved, shape=(k,) + event,
                        dims=_unobserved_dims(model, dims, rows))
    model.imputed[name] = Imputed(mask, whole, (y, *gathered))
    # The data with the imputed values in place: a gather by each row's position
    # among the missing ones (0 at present rows, where `where` picks the data).
    position = as_expr((np.cumsum(rows) - 1).clip(0).astype(np.int64))
    missing_at = as_expr(np.broadcast_to(rows.reshape((n,) + (1,) * len(event)), array.shape).astype(float))
    model.deterministics[name] = FUNCTIONS["where"](missing_at, param[position], y)
    warnings.warn(f"{what}: {int(mask.sum())} of {mask.size} values are missing and imputed: they are the "
                  f"parameter {name}_unobserved (shape {(k,) + event}); the present ones are the observed "
                  f"term {name}_observed, and {name!r} in the posterior is the data with the imputed values "
                  "(docs/missing-data.md)", ModelWarning, stacklevel=3)


def _missing_rows(what, dist, value, mask):
    """``(missing rows, event shape)``: per row of ``value``, whether it is missing
    (every entry of a multivariate row, one entry of a univariate vector)."""
    if not hasattr(dist, "spec"):
        raise ModelError(f"{what}: missing values of an ld.Mixture cannot be imputed; drop those rows "
                         "or write the mixture's components as a model of their own")
    spec = dist.spec
    if spec.support.integer:
        raise ModelError(f"{what}: {spec.name} is discrete, and HMC cannot sample a missing count or "
                         f"category (index {_index(mask)}); drop the missing rows, or marginalize them "
                         "out by hand")
    event = tuple(np.shape(value)[np.ndim(value) - len(spec.events[0]):]) if spec.multivariate else ()
    batch = np.shape(value)[:np.ndim(value) - len(event)]
    if len(batch) != 1:
        raise ModelError(f"{what}: missing values can be imputed in a vector of observations (or rows "
                         f"of {spec.name} events), got values of shape {np.shape(value)} with "
                         f"{len(batch)} batch axes; reshape the data to one axis of observations")
    per_row = mask.reshape(len(mask), -1)
    partial = per_row.any(axis=1) & ~per_row.all(axis=1)
    if partial.any():
        i = int(np.argmax(partial))
        raise ModelError(f"{what}: row {i} of the {spec.name} values has {int(per_row[i].sum())} of "
                         f"{per_row.shape[1]} entries missing; only whole rows can be imputed: drop the "
                         "row, or mark all of its entries missing")
    return per_row[:, 0], event


def _at_rows(what, dist, event_rank, n, index):
    """``(dist with each argument that has the term's rows gathered at ``index``
    (an integer data array), the expressions gathered)``; scalars and
    event-only arguments as they are."""
    part, gathered = copy.copy(dist), []
    part.params = {}
    for key, given in dist.params.items():
        rank = np.ndim(given) - (len(dist.spec.events[dist.spec.arg_names.index(key)]) if event_rank else 0)
        if rank <= 0:  # one value for every row (a multivariate scalar is stretched over the event)
            part.params[key] = given
        elif rank == 1 and np.shape(given)[0] == n and np.ndim(given) <= 2:
            if isinstance(given, np.ndarray):
                part.params[key] = given[index.value]
            else:
                gathered.append(as_expr(given))
                part.params[key] = gathered[-1][index]
        else:
            raise ModelError(f"{what}: argument {key} has shape {np.shape(given)}; with missing values "
                             f"each argument must be one value per observation ({n}) or one for all")
    return part, gathered


def _unobserved_dims(model, dims, rows):
    """Dims of ``<name>_unobserved``: none where the term has none (ArviZ's default
    ``<name>_unobserved_dim_0``, as PyMC's); else ``<dim>_unobserved`` for the
    rows, its coords those of the missing rows (their indices when the dim has
    no coords), and the event's dims as they are."""
    if dims is None:
        return None
    dim = f"{dims[0]}_unobserved"
    labels = model.coords.get(dims[0])
    model.add_coord(dim, np.flatnonzero(rows) if labels is None else labels[rows])
    return (dim,) + tuple(dims[1:])


def check(name, array, imputed, where="set_data"):
    """A ``ModelError`` unless ``array``, new data for the observed array ``name``,
    is missing exactly where it was when the model was built, and its present
    values lie in the term's support (where that is fixed)."""
    mask = imputed.mask
    fix = "; the missing entries are fixed when the model is built: call compile() again with the new data"
    if array.shape != mask.shape:
        raise ModelError(f"{where}: data {name!r} has missing values and shape {mask.shape}; got shape "
                         f"{array.shape}{fix}")
    changed = np.isnan(array) != mask
    if changed.any():
        i = tuple(int(j) for j in np.unravel_index(int(np.argmax(changed)), mask.shape))
        was = "missing" if mask[i] else "present"
        raise ModelError(f"{where}: data {name}{list(i)}={float(array[i])!r} but it was {was} when the model "
                         f"was built{fix}")
    support = imputed.term.dist.spec.support
    if not any(isinstance(b, str) for b in (support.lower, support.upper)):
        ok = contains(support, array) | mask
        if not np.all(ok):
            raise ModelError(f"{where}: term {imputed.term.name!r}: {imputed.term.dist.spec.name} value "
                             f"{_first_violation(name, array, ok)}, {describe(support)}")


def _index(mask):
    """The first missing entry's index, as written in errors."""
    return [int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape)]
