"""Imputation of missing observed values, as PyMC does it.

``m.observe("y", dist, value)`` where ``value`` has NaN entries (or is a
numpy masked array) is rewritten at ``observe`` time into nodes the engine
already has:

- ``y_observed``: the observed term over the present entries, its value
  ``y[present]`` and each argument with a plate gathered at the same rows
  (a regression's mean at the observed rows). Only these rows are in
  ``pointwise_log_likelihood``, the ``log_likelihood`` group and
  ``observed_data``.
- ``y_unobserved``: a parameter, one element per missing entry, whose prior
  is the term's distribution with its arguments gathered at the missing rows.
- ``y``: a deterministic, the data with the imputed values in place (in the
  observed term's dims), as PyMC's.

Where the term has dims, the parts get the dims ``y_observed_<dim>`` and
``y_unobserved_<dim>`` with the coords of their rows (PyMC leaves them
unnamed, ``y_unobserved_dim_0``, and which row a value belongs to is lost).

The index arrays are fixed when the model is built, so the data array ``y``
(which keeps its NaNs) may get new values by ``set_data`` only where they
were present: a NaN appearing or disappearing is a ``ModelError`` that says
to compile the model again with the new data.

Refused with a ``ModelError`` that says what to do instead: discrete
distributions (HMC needs a continuous parameter), multivariate values (PyMC
imputes whole rows, and entries inside a row by a joint density; here the
engine cannot gather rows of a data matrix, so they are refused until the
compiler rewrite can), values with more than one axis, and ``ld.Mixture``.
"""

import copy
import warnings
from typing import NamedTuple

import numpy as np

from logdens.distributions.constraints import contains, describe
from logdens.distributions.frozen import _first_violation
from logdens.expr import FUNCTIONS, Data, Expr, ModelError, ModelWarning, as_expr, nodes


class Imputed(NamedTuple):
    """What ``observe`` recorded for an observed data array with missing entries."""

    mask: np.ndarray  #: True at the missing entries, the array's shape
    dist: object  #: the observed term's distribution, whose support the present values are in
    #: The data and the arguments that have the term's rows, gathered by the
    #: parts: their lengths must agree (``validate.check_terms``), as the
    #: whole term's would.
    rows: tuple
    #: The nodes that may read the data with its NaNs: the observed part's
    #: value (present rows) and the deterministic (``where``).
    reads: tuple


def missing_mask(value, what):
    """The mask of missing entries of an observed array (NaN, or masked in a numpy
    masked array), or None when nothing is missing or ``value`` is an expression.
    Named data with NaN is refused here, by ``what``: other terms may read it
    (as PyMC refuses ``pm.Data`` with NaN)."""
    if isinstance(value, Data) and value.name is not None and np.issubdtype(value.value.dtype, np.floating):
        nan = np.isnan(value.value)
        if nan.any():
            raise ModelError(f"{what}: data {_first_violation(value.name, value.value, ~nan)}: missing values "
                             f"are imputed only in an array given to observe itself, m.observe(name, dist, "
                             f"array), not in data made with m.data(...), which other terms may read")
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


def impute(model, name, dist, value, mask, dims):
    """Add observed term ``name`` of ``dist`` at ``value``, whose entries at ``mask``
    are missing, to ``model`` as the three parts of the module docstring;
    return the deterministic ``name``, which other terms may read (an imputed
    predictor), as PyMC's ``observed=`` returns it."""
    what = f"observe {name!r}"
    _check_imputable(what, dist, value, mask)
    k, n = int(mask.sum()), len(mask)
    y = model._add_data(name, with_nan(value, mask), dims, what, "observed term")
    present, missing = (as_expr(np.flatnonzero(r).astype(np.int64)) for r in (~mask, mask))
    observed, gathered = _at_rows(dist, present)
    at_present = y[present]
    model.observe(f"{name}_observed", observed, at_present, dims=_part_dims(model, name, dims, ~mask, "observed"))
    param = model.param(f"{name}_unobserved", _at_rows(dist, missing)[0], shape=(k,),
                        dims=_part_dims(model, name, dims, mask, "unobserved"))
    # The data with the imputed values in place: a gather by each row's position
    # among the missing ones (0 at present rows, where `where` picks the data).
    position = as_expr((np.cumsum(mask) - 1).clip(0).astype(np.int64))
    joined = FUNCTIONS["where"](as_expr(mask.astype(float)), param[position], y)
    model.deterministics[name] = joined
    model.imputed[name] = Imputed(mask, dist, (y, *gathered), (at_present, joined))
    warnings.warn(f"{what}: {k} of {n} values are missing and imputed: they are the parameter "
                  f"{name}_unobserved (shape ({k},)); the present ones are the observed term {name}_observed, "
                  f"and {name!r} in the posterior is the data with the imputed values (docs/missing-data.md)",
                  ModelWarning, stacklevel=3)
    return joined


def _check_imputable(what, dist, value, mask):
    """A ``ModelError`` unless the missing entries of ``value`` can be imputed: a
    vector of observations of a continuous univariate distribution, some present."""
    if not hasattr(dist, "spec"):
        raise ModelError(f"{what}: missing values of an ld.Mixture cannot be imputed; drop those rows "
                         "or write the mixture's components as a model of their own")
    spec, at = dist.spec, _index(mask)
    if spec.support.integer:
        raise ModelError(f"{what}: {spec.name} is discrete, and HMC cannot sample a missing count or "
                         f"category (index {at}); drop the missing rows, or marginalize them out by hand")
    if spec.multivariate:
        raise ModelError(f"{what}: {spec.name} values have missing entries (index {at}); multivariate "
                         "values cannot be imputed: drop the rows with missing entries (draw them with "
                         "sample_posterior_predictive after set_data), or write the row's components "
                         "as univariate terms")
    if np.ndim(value) != 1:
        raise ModelError(f"{what}: missing values can be imputed in a vector of observations, got shape "
                         f"{np.shape(value)}; observe the flattened values (with the arguments flattened too)")
    if mask.all():
        raise ModelError(f"{what}: all {mask.size} values are missing; nothing is observed: declare it "
                         "with m.param(name, dist, shape=n) instead")
    for key, given in dist.params.items():
        if np.ndim(given) != 0 and np.shape(given) != mask.shape:
            raise ModelError(f"{what}: argument {key} has shape {np.shape(given)}; with missing values each "
                             f"argument must be one value per observation ({mask.size}) or one for all")


def _at_rows(dist, index):
    """A copy of ``dist`` whose arguments with the term's rows are taken at
    ``index`` (an integer data array), scalars as they are; and the list of the
    expressions so gathered."""
    part, gathered = copy.copy(dist), []
    part.params = {}
    for key, given in dist.params.items():
        if np.ndim(given) == 0:
            part.params[key] = given
        elif isinstance(given, np.ndarray):
            part.params[key] = given[index.value]
        else:
            gathered.append(as_expr(given))
            part.params[key] = gathered[-1][index]
    return part, gathered


def _part_dims(model, name, dims, rows, part):
    """Dims of ``<name>_<part>`` (``observed`` or ``unobserved``), the ``rows`` of
    the term: none where the term has none (ArviZ's default
    ``<name>_<part>_dim_0``, as PyMC's); else ``<name>_<part>_<dim>``, one per
    term (two terms miss other rows), its coords those of its rows (their
    indices when the dim has none). PyMC gives the parts no dims, so which row
    each value belongs to is lost there."""
    if dims is None:
        return None
    dim = f"{name}_{part}_{dims[0]}"
    labels = model.coords.get(dims[0])
    model.add_coord(dim, np.flatnonzero(rows) if labels is None else labels[rows])
    return (dim,)


def check(model, name, array):
    """A ``ModelError`` unless ``array``, new data for the observed array ``name``,
    is missing exactly where it was when the model was built, its present
    values lie in the term's support (where that is fixed), and nothing reads
    its NaNs but the nodes ``impute`` made for it."""
    imputed = model.imputed[name]
    _check_reads(model, name, imputed)
    mask = imputed.mask
    fix = "; the missing entries are fixed when the model is built: call compile() again with the new data"
    if array.shape != mask.shape:
        raise ModelError(f"data {name!r} has missing values and shape {mask.shape}; got shape "
                         f"{array.shape}{fix}")
    changed = np.isnan(array) != mask
    if changed.any():
        i = tuple(int(j) for j in np.unravel_index(int(np.argmax(changed)), mask.shape))
        was = "missing" if mask[i] else "present"
        raise ModelError(f"data {name}{list(i)}={float(array[i])!r} but it was {was} when the model "
                         f"was built{fix}")
    spec = imputed.dist.spec
    if not any(isinstance(b, str) for b in (spec.support.lower, spec.support.upper)):
        ok = contains(spec.support, array) | mask
        if not np.all(ok):
            raise ModelError(f"term {name!r}: {spec.name} value {_first_violation(name, array, ok)}, "
                             f"{describe(spec.support)}")


def _check_reads(model, name, imputed):
    """A ``ModelError`` naming a term or deterministic that reads the data ``name``
    itself, NaNs and all, instead of its imputed values."""
    data, allowed = model.data_nodes[name], {id(n) for n in imputed.reads}
    readers = [(f"term {t.name!r}", a) for t in model.terms for a in t.args]
    readers += [(f"deterministic {k!r}", e) for k, e in model.deterministics.items()]
    for reader, root in readers:
        if any(n is data for n in nodes(root, lambda n: id(n) in allowed)):
            raise ModelError(f"{reader} reads data {name!r}, whose missing entries are NaN; read the data "
                             f"with the imputed values instead: the expression m.observe({name!r}, ...) returned")


def _index(mask):
    """The first missing entry's index, as written in errors."""
    return [int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape)]
