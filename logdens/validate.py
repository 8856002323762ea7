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
    """Dimensions, index dtypes and finiteness of each array, before packing (numeric,
    real dtypes are ``expr.frozen_array``'s check, made when the array is taken)."""
    for name, array in arrays.items():
        node = model.data_nodes.get(name)
        ndim = node.ndim if node is not None else np.ndim(layout.anonymous[name])
        if array.ndim != ndim:
            raise ModelError(f"data {name!r}: expected a {ndim}-D array, got shape {array.shape}")
        slot = layout.data.get(name)
        if slot is not None and slot.as_index and not np.issubdtype(array.dtype, np.integer):
            raise ModelError(f"data {name!r}: used as an index, must have an integer dtype, got {array.dtype}")
        if np.issubdtype(array.dtype, np.floating):
            bad = ~np.isfinite(array)
            if np.any(bad):
                raise ModelError(f"data {name!r}: {_first_violation(name, array, ~bad)}, must be finite")


def length(node, arrays, layout, where, memo=None):
    """Runtime plate length of ``node`` (None for scalars), checking every node below
    it, scalar ones included (a sum hides a plate): lengths that must agree do,
    indices lie inside what they index, a slice's source keeps the length it was
    sliced at. The kernels rely on all of it and check none of it. ``memo`` makes
    shared sub-expressions cost one visit."""
    memo = {} if memo is None else memo
    if id(node) not in memo:
        memo[id(node)] = _length(node, arrays, layout, where, memo)
    return memo[id(node)]


def _length(node, arrays, layout, where, memo):
    below = [length(c, arrays, layout, where, memo) for c in node.children]
    if isinstance(node, ex.Param):
        return node.shape[0] if node.shape else None
    if isinstance(node, ex.Data):
        return len(_array(node, arrays, layout)) if node.shape else None
    if isinstance(node, ex.Slice):
        source = node.children[0]
        if below[0] != source.shape[0]:
            raise ModelError(f"{where}: {node.label()} slices {source.label()}, which had length "
                             f"{source.shape[0]} when the model was built and now has length {below[0]}; "
                             "a sliced array keeps its length")
        return node.shape[0]
    if isinstance(node, ex.Gather):
        (source, index), idx = node.children, _array(node.children[1], arrays, layout)
        inside = (idx >= 0) & (idx < below[0])
        if not np.all(inside):
            raise ModelError(f"{where}: index {_first_violation(_shown(index, layout), idx, inside)} "
                             f"is out of bounds for {source.label()} of length {below[0]}")
        return len(idx)
    if isinstance(node, ex.MatVec):
        matrix, vector = node.children
        X = _array(matrix, arrays, layout)
        if X.shape[1] != vector.shape[0]:
            raise ModelError(f"{where}: {matrix.label()} has {X.shape[1]} columns but "
                             f"{vector.label()} has length {vector.shape[0]}")
        return X.shape[0]
    if isinstance(node, ex.Sum):
        return None
    return _agree(list(zip(node.children, below)), where)


def _array(node, arrays, layout):
    """The current array of a data node: by its stored name, or (read only by a
    deterministic, so not packed) its own name or value."""
    name = layout.stored_name(node)
    return arrays[name] if name is not None else node.value


def _shown(node, layout):
    return layout.stored_name(node) or node.label()


def _agree(lengths, where):
    sized = [(c, n) for c, n in lengths if n is not None]
    for c, n in sized[1:]:
        if n != sized[0][1]:
            raise ModelError(f"{where}: {sized[0][0].label()} has length {sized[0][1]} but "
                             f"{c.label()} has length {n}")
    return sized[0][1] if sized else None


def check_terms(model, layout, arrays):
    """Plate lengths, indices, observed values in the support, data parameters valid."""
    for name, expr in model.deterministics.items():
        length(expr, arrays, layout, f"deterministic {name!r}")
    for term in model.terms:
        where = f"term {term.name!r}"
        if term.dist is None:
            length(term.value, arrays, layout, where)
            continue
        spec = term.dist.spec
        args = term.args
        memo = {}
        _agree([(a, length(a, arrays, layout, where, memo)) for a in args], where)
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
