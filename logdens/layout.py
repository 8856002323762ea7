"""Where things live: parameter blocks in ``theta``, data arrays in ``fdata``/``idata``.

Parameters are laid out in declaration order, one block each. Data are
packed into two flat arrays so that every model's kernel has the same
signature ``(theta, grad, fdata, idata)``: floating-point values in
``fdata``, index arrays in ``idata``. The first ``5 * len(data)`` entries of
``idata`` are a header, five integers per data array (float offset, index
offset, rows, columns, and for an index array whether it never decreases),
which generated code reads at run time: sizes are never compiled in, so new
data of another size need no recompilation.

Parameter lengths are run-time values too, where the generated code allows
it (``ParamSlot.runtime``): a vector parameter (one axis, no event transform)
that no term with values with shape reads and no data matrix multiplies
(``_compiled_in_lengths``). After the data header comes the
parameter section, ``1 + 2 * len(params)`` integers: the dimension, then
each parameter's offset and length. Generated code reads what it needs of
it into ``dim``, ``o_<ident>`` (offsets) and ``n_<ident>`` (lengths), and
writes those names wherever the number would depend on such a length: two
models that differ only in those lengths generate the same source, and so
share one compiled module. ``ParamSlot.offset_code``, ``size_code`` and
``Layout.dim_code`` are that code (a literal where the number is fixed).
Event shapes (simplex, ordered, Cholesky factors), parameters with more
than one axis and vectors read by terms with shape stay compiled in
(``logdens.shaped`` sizes its buffers by them), as does everything on the
CUDA backend (``Layout.compiled_in``: local and shared arrays need
compile-time sizes).

Generated code never spells a user's name as an identifier: Python folds
identifiers by NFKC (``"ﬁ"`` and ``"fi"`` are one variable) and prefixes can
meet (term ``sparse_y``'s ``per_sample_sparse_y`` is also term ``y``'s sparse
function). Every parameter, data array and term gets an ``ident`` instead,
``<ascii name or "x">_<k>`` with ``k`` unique in the model: no two are equal,
none ends like a fixed name of the generated code, and comments keep the name.
"""

import copy
from typing import NamedTuple, Tuple

import numpy as np

from logdens import expr as ex
from logdens import rules, sizes
from logdens.lines import plus
from logdens.transforms import Transform

HEADER_WIDTH = 5


class ParamSlot(NamedTuple):
    """A parameter's block of the unconstrained vector."""

    name: str
    offset: int
    shape: Tuple[int, ...]
    transform: Transform
    ident: str  # in generated identifiers (see the module docstring)
    #: Whether its length is read at run time (``n_<ident>``; see the module docstring).
    runtime: bool = False
    #: Code of its offset in ``theta``: the number, or ``o_<ident>`` read at run time
    #: when a parameter of run-time length comes before it.
    offset_code: str = "0"

    @property
    def size_code(self):
        """Code of ``size``: ``n_<ident>`` for a run-time length."""
        return f"n_{self.ident}" if self.runtime else str(self.size)

    @property
    def constrained_code(self):
        """Code of ``constrained_size`` (run-time lengths have no event transform: the same)."""
        return f"n_{self.ident}" if self.runtime else str(self.constrained_size)

    @property
    def end_code(self):
        """Code of ``offset + size``, the offset of the block after its own."""
        return plus(self.offset_code, self.size_code)

    @property
    def size(self):
        """Number of unconstrained coordinates (K - 1 for a K-simplex)."""
        return self.transform.unconstrained_size(self.shape)

    @property
    def constrained_size(self):
        return int(np.prod(self.shape, dtype=int))


class DataSlot(NamedTuple):
    """A data array: its position in the header and how generated code uses it."""

    name: str
    position: int
    as_value: bool   # read as floating-point values (in fdata)
    as_index: bool   # used as an index array (in idata)
    ndim: int
    ident: str       # in generated identifiers (see the module docstring)
    #: A matrix read only by terms with shape (``logdens.shaped``): stored row by
    #: row, so a block of rows is a view for BLAS, not a transposed copy.
    row_major: bool = False


def identifier(name, k):
    """The identifier generated code uses for the ``k``-th name of a model."""
    return f"{name if name.isascii() else 'x'}_{k}"


def module_alias(spec):
    """The name a generated module imports a distribution's module under."""
    return "dist_" + spec.logpdf_grad.__module__.rsplit(".", 1)[-1]


def _compiled_in_lengths(model):
    """Names of the vectors whose lengths stay compiled in: those a term with
    shape fixes (``_fixed_by_shapes``), and the vectors of data-matrix products
    (``X @ beta``): a row's loops over their few columns cost more with a
    run-time trip count (a logistic regression's sparse per-sample rows, 20
    columns: 1.2x the time)."""
    fixed = set()
    for term in model.terms:
        if rules.shaped(term):
            fixed |= _fixed_by_shapes(term)
    for term in model.terms:
        for node in (n for a in term.args for n in ex.nodes(a)):
            if rules.rule(node).reads_data_matrix:
                fixed |= {c.name for c in node.children if rules.rule(c).param}
    return fixed


def _fixed_by_shapes(term):
    """The vectors read by term with shape ``term`` whose length it fixes: its walk
    (``logdens.sizes``, every vector and every named data array's rows a
    length of its own) finds it equal to a number (a weight matrix's columns,
    a slice's bounds). Those read only with run-time lengths (a latent
    Gaussian process's ``z`` of the inputs' rows) are read at run time too."""
    def data_shape(node):
        return (sizes.Size(f"rows {id(node)}", node.shape[0]), *node.shape[1:]) if sizes.runtime_rows(node) else node.shape

    def param_shape(node):
        return (sizes.Size(f"length {node.name}", node.shape[0]),) if node.ndim == 1 else node.shape
    walk = sizes.SizeWalk(f"term {term.name!r}", data_shape, param_shape)
    walk.term(term)
    return {name for name in term.params_read()
            if not isinstance(walk.resolve(sizes.Size(f"length {name}", 0)), sizes.Size)}


class Layout:
    """The parameter and data layout of one model."""

    def __init__(self, model):
        self.params, offset = {}, 0
        fixed = _compiled_in_lengths(model)
        moved = False  # whether a run-time length comes before: offsets read at run time
        for name, node in model.params.items():
            transform, ident = model.transforms[name], identifier(name, len(self.params))
            runtime = len(node.shape) == 1 and not transform.event and name not in fixed
            self.params[name] = ParamSlot(name, offset, node.shape, transform, ident, runtime,
                                          f"o_{ident}" if moved else str(offset))
            offset += self.params[name].size
            moved |= runtime
        self.dim = offset
        #: Code of ``dim``: the number, or ``dim`` read at run time.
        self.dim_code = "dim" if moved else str(offset)
        self._names = {}     # id(Data node) -> stored name
        self.anonymous = {}  # generated name -> array, for arrays given without a name
        self.data = {}
        roots = [node for term in model.terms for node in term.args]
        for node, as_index in rules.visits(roots, False, lambda _, access: access == rules.INDEX):
            if rules.rule(node).data:
                self._add_data(node, as_index)
        columns = {self.data_name(leaf) for term in model.terms if not rules.shaped(term)
                   for a in term.args for leaf in a.leaves() if rules.rule(leaf).data}
        for name, slot in self.data.items():
            if slot.as_value and slot.ndim == 2 and name not in columns:
                self.data[name] = slot._replace(row_major=True)
        first = len(self.params) + len(self.data)
        self.term_idents = {term.name: identifier(term.name, first + k) for k, term in enumerate(model.terms)}

    def compiled_in(self):
        """This layout with every length and offset a number in generated code (the
        CUDA emitter's: its local and shared arrays need compile-time sizes)."""
        fixed = copy.copy(self)
        fixed.params = {name: p._replace(runtime=False, offset_code=str(p.offset)) for name, p in self.params.items()}
        fixed.dim_code = str(self.dim)
        return fixed

    def runs(self, select):
        """The runs of adjacent parameter blocks that ``select`` keeps, each a list of
        ``ParamSlot``: adjacent in declaration order, not by comparing offsets,
        which may be code read at run time. A block of fixed length 0 is left
        out; a run-time length is never assumed to be 0."""
        runs, adjacent = [], False
        for p in self.params.values():
            if p.size_code == "0":
                continue
            if select(p) and adjacent:
                runs[-1].append(p)
            elif select(p):
                runs.append([p])
            adjacent = select(p)
        return runs

    def spans(self, select):
        """Code of ``[start, stop)`` of each run of adjacent parameter blocks that ``select`` keeps."""
        return [[run[0].offset_code, run[-1].end_code] for run in self.runs(select)]

    @property
    def param_section(self):
        """Position in ``idata`` of the parameter section (see the module docstring)."""
        return HEADER_WIDTH * len(self.data)

    def _add_data(self, node, as_index):
        """Add data node ``node``, read as an index or as values, to ``self.data``."""
        name = self.data_name(node) if id(node) in self._names else self._name(node)
        slot = self.data.get(name)
        value_use = not as_index or (slot is not None and slot.as_value)
        index_use = as_index or (slot is not None and slot.as_index)
        position = len(self.data) if slot is None else slot.position
        self.data[name] = DataSlot(name, position, value_use, index_use, node.ndim,
                                   identifier(name, len(self.params) + position))

    def _name(self, node):
        name = node.name if node.name is not None else f"_a{len(self._names)}"
        self._names[id(node)] = name
        if node.name is None:
            self.anonymous[name] = node.value
        return name

    def data_name(self, node):
        """The name under which ``node``'s array is stored (generated for unnamed arrays)."""
        return self._names[id(node)]

    def stored_name(self, node):
        """``data_name``, or for a node no term reads (only a deterministic) its own
        name (None when it has none: its array is its value)."""
        return self._names.get(id(node), node.name)

    def data_ident(self, node):
        """The identifier of ``node``'s array in generated code."""
        return self.data[self.data_name(node)].ident

    def pack(self, arrays):
        """``(fdata, idata)`` holding ``arrays`` (name -> ndarray) and the header."""
        slots = sorted(self.data.values(), key=lambda s: s.position)
        header = np.zeros(HEADER_WIDTH * len(slots), dtype=np.int64)
        section = [self.dim] + [n for p in self.params.values() for n in (p.offset, p.size)]
        floats, ints = [], [np.array(section, dtype=np.int64)]
        f_offset, i_offset = 0, len(header) + len(section)
        for slot in slots:
            a = np.asarray(arrays[slot.name])
            rows = a.shape[0] if a.ndim else 1
            cols = a.shape[1] if a.ndim == 2 else 1
            ordered = slot.as_index and a.ndim == 1 and bool(np.all(a[1:] >= a[:-1]))
            header[HEADER_WIDTH * slot.position:][:HEADER_WIDTH] = (f_offset, i_offset, rows, cols, ordered)
            if slot.as_value:
                # matrices column by column: X[:, j] contiguous, so blocked
                # products run down contiguous columns and vectorize (``row_major``: row by row)
                transposed = a.ndim == 2 and not slot.row_major
                floats.append(np.ascontiguousarray(a.T if transposed else a, dtype=np.float64).ravel())
                f_offset += a.size
            if slot.as_index:
                ints.append(np.ascontiguousarray(a, dtype=np.int64).ravel())
                i_offset += a.size
        fdata = np.concatenate(floats) if floats else np.zeros(0)
        idata = np.concatenate([header] + ints)
        return fdata, idata

    def param_prologue(self):
        """Generated lines binding ``dim``, ``o_<ident>`` and ``n_<ident>`` from the
        parameter section, those that generated code names (none when every
        length is fixed)."""
        lines = [f"dim = idata[{self.param_section}]"] if self.dim_code == "dim" else []
        for k, p in enumerate(self.params.values()):
            at = self.param_section + 1 + 2 * k
            if p.offset_code != str(p.offset):
                lines.append(f"{p.offset_code} = idata[{at}]  # {p.name}'s offset")
            if p.runtime:
                lines.append(f"{p.size_code} = idata[{at + 1}]  # {p.name}'s length")
        return lines

    def prologue(self):
        """Generated lines binding ``n_<name>``, ``d_<name>``, ``i_<name>`` and
        ``sorted_<name>`` from the header, and the parameters' run-time lengths
        and offsets (``param_prologue``)."""
        lines = self.param_prologue()
        for slot in sorted(self.data.values(), key=lambda s: s.position):
            h, name = HEADER_WIDTH * slot.position, slot.ident
            lines.append(f"n_{name} = idata[{h + 2}]  # {slot.name}")
            if slot.as_value:
                if slot.ndim == 2 and slot.row_major:
                    lines.append(f"d_{name} = fdata[idata[{h}]:idata[{h}] + n_{name} * idata[{h + 3}]]"
                                 f".reshape((n_{name}, idata[{h + 3}]))  # row by row")
                elif slot.ndim == 2:
                    lines.append(f"d_{name} = fdata[idata[{h}]:idata[{h}] + n_{name} * idata[{h + 3}]]"
                                 f".reshape((idata[{h + 3}], n_{name}))  # transposed: d_{name}[j, i] = X[i, j]")
                else:
                    lines.append(f"d_{name} = fdata[idata[{h}]:idata[{h}] + n_{name}]")
            if slot.as_index:
                lines.append(f"i_{name} = idata[idata[{h + 1}]:idata[{h + 1}] + n_{name}]")
                lines.append(f"sorted_{name} = idata[{h + 4}]  # 1 when i_{name} never decreases")
        return lines
