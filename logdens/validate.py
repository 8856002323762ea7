"""Checks on data when a model is compiled and on every ``set_data``.

Errors name the term and the data array, and the offending index and value,
so a user can find the bad row. Nothing is clipped: bad data raise.
"""

from typing import NamedTuple

import numpy as np

from logdens import expr as ex
from logdens import missing, rules, sizes
from logdens.distributions.constraints import contains, describe
from logdens.distributions.frozen import _first_violation
from logdens.evaluate import evaluate
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
            imputed = model.imputed.get(name)
            if imputed is not None:  # NaN where, and only where, the model imputes
                missing.check(model, name, array)
                bad &= ~imputed.mask
            if np.any(bad):
                first = array[np.unravel_index(int(np.argmax(bad)), bad.shape)]
                hint = ("; a missing value in data a model reads (a predictor) must be modelled: observe it, "
                        f"m.observe({name!r}, dist, array) with NaN or a masked array, and its missing "
                        "entries are imputed (docs/missing-data.md)") if np.isnan(first) else ""
                raise ModelError(f"data {name!r}: {_first_violation(name, array, ~bad)}, must be finite{hint}")


def length(node, arrays, layout, where, memo=None):
    """Runtime plate length of ``node`` (None for scalars), checking every node below
    it, scalar ones included (a sum hides a plate): lengths that must agree do,
    indices lie inside what they index, a slice's source keeps the length it was
    sliced at. The kernels rely on all of it and check none of it. ``memo`` makes
    shared sub-expressions cost one visit."""
    site = _Site(arrays, layout, where)
    return rules.fold(node, lambda n, below: rules.rule(n).length(n, below, site), memo)


class _Site(NamedTuple):
    """What the rules' ``length`` needs: the current arrays and where the check is."""

    arrays: dict
    layout: object
    where: str

    def array(self, node):
        """The current array of a data node: by its stored name, or (read only by a
        deterministic, so not packed) its own name or value."""
        name = self.layout.stored_name(node)
        return self.arrays[name] if name is not None else node.value

    def shown(self, node):
        """A data node's name in errors."""
        return self.layout.stored_name(node) or node.label()

    def length(self, node):
        """The run-time plate length of another node (``length``)."""
        return length(node, self.arrays, self.layout, self.where)


def check_terms(model, layout, arrays, fixed_whole=False):
    """Plate lengths, indices, observed values in the support, data parameters
    valid, and the lengths of terms with shape (``check_sizes``); with
    ``fixed_whole`` (code written for the build shapes: a GPU thread's local
    arrays), data read whole keep their shapes."""
    for name, expr in model.deterministics.items():
        length(expr, arrays, layout, f"deterministic {name!r}")
    for name, imputed in model.imputed.items():  # split by rows (logdens.missing): they still agree
        where = f"term {name!r} (its missing entries are imputed: for other rows call compile() again)"
        rules.agree([(a, length(a, arrays, layout, where)) for a in imputed.rows], where)
    for term in model.terms:
        where = f"term {term.name!r}"
        if fixed_whole:
            _check_whole_data(term, arrays, layout, where)
        memo = {}
        lengths = [(a, length(a, arrays, layout, where, memo))
                   for a in (term.args if term.dist is not None else (term.value,))]
        if rules.shaped(term):
            check_sizes(term, arrays, layout, where)
        if term.dist is None:
            if term.mixture is not None and term.kind == "likelihood":  # an observed ld.Mixture
                x = term.mixture.x
                shown = x.label() if rules.rule(x).data and x.name else "x"
                term.mixture.dist.check_value(evaluate(x, arrays), arrays, where, shown)
            continue
        spec = term.dist.spec
        args = term.args
        batches = spec.split_shapes([a.shape for a in args])[0]  # without event axes
        top = max(len(b) for b in batches)  # lower ranks broadcast along trailing axes
        plate = np.broadcast_shapes(*batches)
        rules.agree([(a, n) for (a, n), b in zip(lengths, batches)
                     if len(b) == top > 0 and not ex.stretches_leading(a, plate)], where)
        known = {n: _fixed_value(a, arrays, layout) for n, a in zip(spec.arg_names, args)}
        known = {n: v for n, v in known.items() if v is not None}
        checks = [("x", spec.support, "value")] + [(p.name, p.constraint, "parameter") for p in spec.params]
        for name, constraint, role in checks:
            node = args[spec.arg_names.index(name)]
            if name not in known or not _bounds_known(constraint, known):
                continue
            ok = contains(constraint, known[name], known)
            if not np.all(ok):
                shown = node.label() if rules.rule(node).data and node.name else name
                raise ModelError(f"{where}: {spec.name} {role} {name}: "
                                 f"{_first_violation(shown, np.asarray(known[name]), ok)}, {describe(constraint)}")
        if spec.check is not None and "x" in known:
            _check_events(spec, args, known, where)


def check_sizes(term, arrays, layout, where):
    """The lengths that the code of a term with shape relies on agree for the
    current data (``logdens.sizes``); a ModelError naming the node and the data
    whose rows differ, or the data that must keep their build length. Data read
    whole need a row."""
    site = _Site(arrays, layout, where)
    for node in rules.whole_data(term).values():
        if node.ndim and not len(site.array(node)):
            raise ModelError(f"{where}: data {site.shown(node)} is read whole and has no rows")

    def data_shape(node):
        shown, shape = site.shown(node), np.shape(site.array(node))
        if not sizes.runtime_rows(node):
            if shape != node.shape:
                raise ModelError(f"{where}: data {shown} has shape {shape}; it was built with shape {node.shape}")
            return node.shape
        return (sizes.Size(shown, shape[0], shown), *node.shape[1:])
    sizes.SizeWalk(where, data_shape).term(term)


def _check_whole_data(term, arrays, layout, where):
    """Data that a term reads whole (``rules.whole_data``) keep the shape they were
    built with, where the generated code is written for it."""
    for node in rules.whole_data(term).values():
        shape = np.shape(_Site(arrays, layout, where).array(node))
        if shape != node.shape:
            raise ModelError(f"{where}: data {node.label()} has shape {shape}; it was built with shape "
                             f"{node.shape}, and this term reads it whole into buffers of that length on "
                             "this backend (compile the model again for new shapes)")


def _check_events(spec, args, known, where):
    """A ``ModelError`` naming the first event of a fixed observed value outside
    a multivariate distribution's support (``Spec.check``)."""
    x = known["x"]
    batches, lengths = spec.split_shapes([np.shape(x)] + [a.shape for a in args[1:]])
    ok = spec.check(x, lengths, {n: v for n, v in known.items() if n != "x"})
    if not np.all(ok):
        index = np.unravel_index(int(np.argmin(ok)), np.shape(ok))
        shown = args[0].label() if rules.rule(args[0]).data and args[0].name else "x"
        at = f"[{', '.join(str(int(i)) for i in index)}]" if index else ""  # no index for one event
        raise ModelError(f"{where}: {spec.name} value {shown}{at} = {np.array2string(np.asarray(x[index]))} "
                         f"is outside the support: {spec.check.__doc__.strip()}")


def value_checked(term):
    """Whether ``check_terms`` always checks ``term``'s observed value against the
    support: a bare data array or constant, with every bound of the support
    that names a parameter given by one too."""
    spec, args = term.dist.spec, term.args
    fixed = {n for n, a in zip(spec.arg_names, args) if rules.rule(a).fixed}
    return "x" in fixed and _bounds_known(spec.support, fixed)


def _fixed_value(node, arrays, layout):
    """The numeric value of a bare data array or constant; None for anything else."""
    node_rule = rules.rule(node)
    if node_rule.data:
        return np.asarray(arrays[layout.data_name(node)], dtype=float)
    return np.asarray(node.value) if node_rule.fixed else None


def _bounds_known(constraint, known):
    return all(b in known for b in (constraint.lower, constraint.upper) if isinstance(b, str))
