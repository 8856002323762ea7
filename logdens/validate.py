"""Checks on data when a model is compiled and on every ``set_data``.

Errors name the term and the data array, and the offending index and value,
so a user can find the bad row. Nothing is clipped: bad data raise.
"""

import numpy as np

from logdens.distributions.constraints import contains, describe
from logdens.distributions.frozen import _first_violation
from logdens import expr as ex
from logdens.expr import ModelError


def check_arrays(layout, model, arrays):
    """Types, finiteness and dimensions of each array, before packing."""
    for name, array in arrays.items():
        node = model.data_nodes.get(name)
        ndim = node.ndim if node is not None else np.ndim(layout.anonymous[name])
        if array.ndim != ndim:
            raise ModelError(f"data {name!r}: expected a {ndim}-D array, got shape {array.shape}")
        if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
            raise ModelError(f"data {name!r}: must be numeric, got dtype {array.dtype}")
        slot = layout.data.get(name)
        if slot is not None and slot.as_index and not np.issubdtype(array.dtype, np.integer):
            raise ModelError(f"data {name!r}: used as an index, must have an integer dtype, got {array.dtype}")
        if np.issubdtype(array.dtype, np.floating):
            bad = ~np.isfinite(array)
            if np.any(bad):
                raise ModelError(f"data {name!r}: {_first_violation(name, array, ~bad)}, must be finite")


def length(node, arrays, layout, where):
    """Runtime plate length of ``node`` (None for scalars), checking that lengths agree."""
    if node.shape == ():
        return None
    if isinstance(node, ex.Param) or isinstance(node, ex.Slice):
        if isinstance(node, ex.Slice):
            length(node.children[0], arrays, layout, where)
        return node.shape[0]
    if isinstance(node, ex.Data):
        return len(arrays[layout.data_name(node)])
    if isinstance(node, ex.Gather):
        source, index = node.children
        n_source = length(source, arrays, layout, where)
        idx = arrays[layout.data_name(index)]
        inside = (idx >= 0) & (idx < n_source)
        if not np.all(inside):
            raise ModelError(f"{where}: index {_first_violation(layout.data_name(index), idx, inside)} "
                             f"is out of bounds for {source.label()} of length {n_source}")
        return len(idx)
    if isinstance(node, ex.MatVec):
        matrix, vector = node.children
        X = arrays[layout.data_name(matrix)]
        if X.shape[1] != vector.shape[0]:
            raise ModelError(f"{where}: {matrix.label()} has {X.shape[1]} columns but "
                             f"{vector.label()} has length {vector.shape[0]}")
        return X.shape[0]
    lengths = [(c, length(c, arrays, layout, where)) for c in node.children]
    return _agree(lengths, where)


def _agree(lengths, where):
    sized = [(c, n) for c, n in lengths if n is not None]
    for c, n in sized[1:]:
        if n != sized[0][1]:
            raise ModelError(f"{where}: {sized[0][0].label()} has length {sized[0][1]} but "
                             f"{c.label()} has length {n}")
    return sized[0][1] if sized else None


def check_terms(model, layout, arrays):
    """Plate lengths, indices, observed values in the support, data parameters valid."""
    for term in model.terms:
        where = f"term {term.name!r}"
        if term.dist is None:
            length(term.value, arrays, layout, where)
            continue
        spec = term.dist.spec
        args = term.args
        _agree([(a, length(a, arrays, layout, where)) for a in args], where)
        known = {n: _fixed_value(a, arrays, layout) for n, a in zip(spec.arg_names, args)}
        known = {n: v for n, v in known.items() if v is not None}
        checks = [("x", spec.support, "value")] + [(p.name, p.constraint, "parameter") for p in spec.params]
        for name, constraint, role in checks:
            node = args[spec.arg_names.index(name)]
            if name not in known or not _bounds_known(constraint, known):
                continue
            ok = contains(constraint, known[name], known)
            if not np.all(ok):
                shown = node.label() if isinstance(node, ex.Data) and node.name else name
                raise ModelError(f"{where}: {spec.name} {role} {name}: "
                                 f"{_first_violation(shown, np.asarray(known[name]), ok)}, {describe(constraint)}")


def value_checked(term):
    """Whether ``check_terms`` always checks ``term``'s observed value against the
    support: a bare data array or constant, with every bound of the support
    that names a parameter given by one too."""
    spec, args = term.dist.spec, term.args
    fixed = {n for n, a in zip(spec.arg_names, args) if isinstance(a, (ex.Const, ex.Data))}
    return "x" in fixed and _bounds_known(spec.support, fixed)


def _fixed_value(node, arrays, layout):
    """The numeric value of a bare data array or constant; None for anything else."""
    if isinstance(node, ex.Const):
        return np.asarray(node.value)
    if isinstance(node, ex.Data):
        return np.asarray(arrays[layout.data_name(node)], dtype=float)
    return None


def _bounds_known(constraint, known):
    return all(b in known for b in (constraint.lower, constraint.upper) if isinstance(b, str))
