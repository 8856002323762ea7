"""Named dimensions and their coordinates (PyMC's ``dims`` and ``coords``).

A model may name the axes of its parameters, data, deterministics and
observed terms (``dims="county"``) and give the values along a named axis
(``Model(coords={"county": names})``). The samplers' DataTrees carry both, so
``idata.posterior["a"].sel(county="Aitkin")`` works. A dim with coordinates
has their length; a dim without them takes the length of the first variable
that uses it and gets integer coordinates in the output, as ArviZ gives.

Every variable that uses a dim must have the dim's length: when the model
is built, and again on every ``set_data`` (data may change length; a dim
with coordinates then needs new ones, ``set_data(..., coords=...)``).
"""

import numpy as np

from logdens import validate
from logdens.expr import ModelError

#: Dims ArviZ gives the samples themselves: a variable cannot use them.
RESERVED = ("chain", "draw", "sample")


def as_dims(dims, what):
    """``dims`` (None, a name, or a sequence of names) as a tuple of names, or None."""
    if dims is None:
        return None
    names = (dims,) if isinstance(dims, str) else dims
    if not isinstance(names, (tuple, list)) or not all(isinstance(d, str) and d for d in names):
        raise ModelError(f"{what}: dims={dims!r}: must be a dim name or a tuple of dim names")
    reserved = [d for d in names if d in RESERVED]
    if reserved:
        raise ModelError(f"{what}: dims={dims!r}: {reserved[0]!r} is reserved for the samples; "
                         "choose another name")
    if len(set(names)) != len(names):
        raise ModelError(f"{what}: dims={dims!r}: a dim may appear once")
    return tuple(names)


def coord_values(name, values):
    """The coordinates of dim ``name`` as a read-only 1-D array of distinct values."""
    if isinstance(name, str) and name in RESERVED:
        raise ModelError(f"coords: dim {name!r} is reserved for the samples; choose another name")
    if not isinstance(name, str) or not name:
        raise ModelError(f"coords: dim names must be non-empty strings, got {name!r}")
    array = np.array(values, copy=True)
    if array.ndim != 1:
        raise ModelError(f"coords: dim {name!r}: values must be 1-D, got shape {array.shape}")
    if len(np.unique(array)) != len(array):
        raise ModelError(f"coords: dim {name!r}: values must be distinct (they label positions)")
    array.flags.writeable = False
    return array


class DimLengths:
    """The length of each named dim, and the variable that fixed it (for errors)."""

    def __init__(self, coords):
        self.coords = coords
        self.lengths = {d: (len(v), f"the coords of {d!r}") for d, v in coords.items()}

    def check(self, what, dims, shape, hint=""):
        """A ModelError unless ``dims`` name the axes of ``shape`` with the lengths
        the dims have (``hint``, formatted with ``dim``, is added where the dim's
        coords fixed it)."""
        if dims is None:
            return
        if len(dims) != len(shape):
            raise ModelError(f"{what}: dims {dims} name {len(dims)} axes but its shape {shape} "
                             f"has {len(shape)}")
        for dim, n in zip(dims, shape):
            known = self.lengths.get(dim)
            if known is not None and known[0] != n:
                extra = hint.format(dim=dim) if dim in self.coords else ""
                raise ModelError(f"{what}: has length {n} along dim {dim!r}, which has length "
                                 f"{known[0]} ({known[1]}){extra}")

    def record(self, what, dims, shape):
        """``check``, then fix the lengths of dims seen for the first time."""
        self.check(what, dims, shape)
        for dim, n in zip(dims or (), shape):
            self.lengths.setdefault(dim, (n, what))

    def copy(self, coords):
        """An independent copy, over ``coords`` (the copy's own dict)."""
        other = DimLengths(coords)
        other.lengths = dict(self.lengths)
        return other

    def length(self, dim):
        """The length of ``dim``, or None when nothing fixed it yet."""
        known = self.lengths.get(dim)
        return None if known is None else known[0]


def shape_from_dims(what, dims, lengths):
    """The shape a parameter gets from its dims (PyMC: ``dims`` without ``shape``);
    a ModelError naming an unknown dim."""
    shape = []
    for dim in dims:
        n = lengths.length(dim)
        if n is None:
            raise ModelError(f"{what}: unknown dim {dim!r}: it has no coords and no variable fixed "
                             f"its length yet; pass Model(coords={{{dim!r}: ...}}), "
                             "model.add_coord(...), or shape=")
        shape.append(n)
    return tuple(shape)


def check_sizes(coords, sizes, hint=""):
    """Check that the variables agree on the length of every dim and with ``coords``.

    ``sizes`` is a list of ``(what, dims, shape)`` with current shapes (after
    ``set_data``). Raises a ModelError naming the variable, the dim and both
    lengths.
    """
    stale = _stale_coords(coords, sizes)
    if hint and len(stale) > 1:  # name every dim that needs new coords, not the first alone
        found = "; ".join(f"{what} has length {n} along dim {dim!r}, whose coords have length {len(coords[dim])}"
                          for dim, (what, n) in stale.items())
        wanted = ", ".join(f"{dim!r}: values" for dim in stale)
        raise ModelError(f"{found}: dims {list(stale)} need new coords: set_data(..., coords={{{wanted}}})")
    lengths = DimLengths(coords)
    for what, dims, shape in sizes:
        lengths.check(what, dims, shape, hint)
        lengths.record(what, dims, shape)
    return lengths


def _stale_coords(coords, sizes):
    """``{dim: (variable, length)}``: the dims with coords that a variable of
    ``sizes`` now disagrees with (the first such variable per dim)."""
    stale = {}
    for what, dims, shape in sizes:
        for dim, n in zip(dims or (), shape):
            if dim in coords and n != len(coords[dim]):
                stale.setdefault(dim, (what, n))
    return stale


def names(model):
    """Every dim a model uses or has coords for."""
    return set(model.coords).union(*model.dims.values())


def new_coords(model_dims, coords, given):
    """``coords`` updated with ``given`` (``set_data(..., coords=...)``) for dims the
    model uses; a ModelError for a dim it does not use."""
    if not given:
        return coords
    if not isinstance(given, dict):
        raise ModelError(f"set_data: coords must be a dict of dim name to values, got {given!r}")
    unknown = sorted(set(given) - set(model_dims))
    if unknown:
        raise ModelError(f"set_data: coords for unknown dim {unknown[0]!r}; the model's dims are "
                         f"{sorted(model_dims)}")
    return {**coords, **{d: coord_values(d, v) for d, v in given.items()}}


def current_sizes(model, layout, arrays):
    """``(what, dims, shape)`` of every variable with dims, for the data ``arrays``
    (already checked by ``validate``): parameters keep their shapes, data,
    deterministics and observed terms take their current lengths."""
    sizes, memo = [], {}

    def shape_of(expr):  # the first axis may follow the data; the others keep their lengths
        n = validate.length(expr, arrays, layout, "", memo)
        return () if n is None else (n,) + tuple(expr.shape[1:])

    for name, dims in model.dims.items():
        if name in model.params:
            sizes.append((f"parameter {name!r}", dims, model.params[name].shape))
        elif name in model.data_nodes:
            sizes.append((f"data {name!r}", dims, arrays[name].shape))
        elif name in model.deterministics:
            sizes.append((f"deterministic {name!r}", dims, shape_of(model.deterministics[name])))
        else:  # an observed term whose value is a data expression
            term = next(t for t in model.terms if t.name == name and t.per_observation)
            sizes.append((f"{'observe' if term.kind == 'observe' else 'potential'} {name!r}", dims,
                          shape_of(term.value)))
    return sizes
