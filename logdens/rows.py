"""Where a per-sample gradient row goes: a dense row of ``out`` or sparse slots.

``codegen.Lowering`` with ``per_row`` writes each observation's gradient
through one of these targets. ``DenseRows`` fills ``out`` of shape
(n_obs, dim). ``SparseRows`` fills ``cols`` and ``vals`` of shape (n_obs,
width): a row's nonzero entries are few when the term reads most parameters
one element per row (a rate vector at the row, group effects through
``a[idx]``), and writing a dense (20,000, 103) output took nine times the
gradient on the hierarchical Poisson model.

A sparse row has ``fixed`` slots first, the columns of parameters the term
may read whole in any row (scalars, the vector of ``X @ beta``, a vector under
``ld.sum`` or an event transform), then one slot per distinct element read
(``rate[i]``, ``a[idx[i]]``), whose column is stored row by row. Two slots
of a row can hold the same column (``a[g[i]]`` and ``a[h[i]]`` when
``g[i] == h[i]``); scipy's sparse arrays sum such duplicates.
"""

from logdens import rules
from logdens.cpu_blocks import BLOCK
from logdens.lines import indent, plus
from logdens.targets import OWN_ROW

#: Rows gathered for each product of ``FisherRows``: a multiple of ``BLOCK``.
FISHER_ROWS = 8 * BLOCK

#: Entries of ``out`` above which ``DenseRows`` zeroes every row whole before
#: writing it, even where it then assigns (8 MiB). A store into a line that is
#: not in cache reads the line first, unless the store fills it as zeroing
#: does: once the rows no longer stay in the last-level cache between calls,
#: a row zeroed whole and then assigned is faster; while they do, the
#: zeroing is a pass too many. The benchmark network's rows on a 32 MiB-L3
#: EPYC: assigned alone 0.84x the time at 256 rows (3.6 MB), 0.95x at 512,
#: 1.41x at 1024 (14 MB), 1.42x at 4096.
ROWS_IN_CACHE = 1 << 20


def _index(e, rows):
    """Code of the element index of gradient entry ``e`` inside its parameter."""
    return rows.plate(e.at) if e.kind == OWN_ROW else e.at


def _column(e, rows):
    """Code of the column of gradient entry ``e``."""
    return plus(e.p.offset_code, rows.plate(e.at)) if e.kind == OWN_ROW else e.col


class DenseRows:
    """Rows of ``out`` (n_obs, dim), entry ``col`` at the parameter's own column."""

    row = "b0 + r"  # the code of row r of a block: its index in the data

    def before_blocks(self):
        return []

    def after_block(self, n_rows):
        return []

    def __init__(self, layout):
        self.layout = layout

    def __call__(self, e, row, rows):
        return f"out[{rows.plate(row)}, {_column(e, rows)}]"

    def zero(self):
        return ["out[:, :] = 0.0"]

    def zero_block(self, once):
        """Lines zeroing a block's rows ``b0:b1``, except the columns of the
        parameters in ``once`` (written exactly once per row, so assigned instead)."""
        return [f"out[b0:b1, {a}:{b}] = 0.0" for a, b in self.layout.spans(lambda p: p.name not in once)]

    def event_reverse(self, p, row, rows):
        return [p.transform.reverse_code(p.offset_code, p.ident, f"out[{rows.plate(row)}]", "0.0")]

    def zero_row(self, row, once=()):
        """Lines zeroing row ``row``, except the columns of the parameters in ``once``
        (assigned, see ``zero_block``) unless ``out`` is too large to stay in
        cache (``ROWS_IN_CACHE``)."""
        whole, spans = [f"out[{row}, :] = 0.0"], self._zero_spans("out", row, once)
        if not once:
            return whole
        return [f"if out.size > {ROWS_IN_CACHE}:  # see rows.ROWS_IN_CACHE"] + indent(whole) + (
            ["else:"] + indent(spans) if spans else [])

    def _zero_spans(self, array, row, once):
        """Lines zeroing row ``row`` of ``array`` but the columns of the parameters in ``once``."""
        return [f"{array}[{row}, {a}:{b}] = 0.0" for a, b in self.layout.spans(lambda p: p.name not in once)]

    def row_slice(self, p, row):
        """Code of parameter ``p``'s entries in row ``row``: a contiguous view."""
        return f"out[{row}, {p.offset_code}:{p.end_code}]"

    def prologue(self):
        return []

    def column_lines(self, row, rows):
        return []

    def fixed_column_lines(self, row, rows):
        return []


class GridRows(DenseRows):
    """``DenseRows`` written by GPU threads (``codegen.Lowering`` with ``grid``),
    a thread per row: ``out`` is zeroed before the launch, not by each thread."""

    def zero(self):
        return []

    def zero_row(self, row, once=()):
        return []


class FisherRows(DenseRows):
    """Rows gathered in the scratch ``rows`` (``FISHER_ROWS``, dim), multiplied into
    the empirical Fisher information ``fisher`` (dim, dim) as ``rows.T @ rows``
    (BLAS) whenever it is full and after the last block: no (n_obs, dim) array.
    The first product is written into ``fisher`` itself, later ones through
    ``outer`` and added (each addition is a pass over dim^2 entries: fewer,
    longer products; 32 rows at dim 1739 took 23 ms with a zeroed ``fisher``
    and an addition, against JAX's 6 ms). For the lowering of values with
    shape (``logdens.shaped``), which writes row ``r`` of a block at ``row``."""

    row = "filled + r"

    def __call__(self, e, row, rows):
        return f"rows[{rows.plate(row)}, {_column(e, rows)}]"

    def zero_row(self, row, once=()):
        return self._zero_spans("rows", row, once)

    def row_slice(self, p, row):
        return f"rows[{row}, {p.offset_code}:{p.end_code}]"

    def event_reverse(self, p, row, rows):
        return [p.transform.reverse_code(p.offset_code, p.ident, f"rows[{rows.plate(row)}]", "0.0")]

    def before_blocks(self):
        return ["filled = 0", "first = True"]

    def after_block(self, n_rows):
        flush = ["if first:", "    np.dot(rows[:filled].T, rows[:filled], fisher)", "    first = False",
                 "else:", "    np.dot(rows[:filled].T, rows[:filled], outer)", "    fisher += outer",
                 "filled = 0"]
        return ["filled += nb", f"if filled + {BLOCK} > {FISHER_ROWS} or b1 == {n_rows}:"] + ["    " + f for f in flush]


class SparseRows:
    """Rows of ``vals`` (n_obs, width) with their columns in ``cols``; see the module."""

    def __init__(self, layout, term):
        self.layout = layout
        # Read one element per row: at the row, through a gather or a slice.
        element = set() if rules.shaped(term) else rules.params_read_by_element(layout, term, rules.ONE_PER_ROW)
        read = term.params_read()
        self.fixed, width = {}, "0"  # parameter name -> code of its first slot
        for p in layout.params.values():
            if p.name in read and p.name not in element:
                self.fixed[p.name], width = width, plus(width, p.size_code)
        self.n_fixed = width  # code: the fixed slots of vectors have run-time lengths
        self.elements = {}  # (column code, row variable) -> slot, one per distinct element read

    row = "b0 + r"

    def before_blocks(self):
        return []

    def after_block(self, n_rows):
        return []

    @property
    def width(self):
        """Code of the number of slots per row."""
        return plus(self.n_fixed, len(self.elements))

    def __call__(self, e, row, rows):
        at = rows.plate(row)
        if e.at is None:  # a scalar parameter
            return f"vals[{at}, {self.fixed[e.p.name]}]"
        if e.p.name in self.fixed:
            return f"vals[{at}, {plus(self.fixed[e.p.name], _index(e, rows))}]"
        slot = self.elements.setdefault((_column(e, rows), row), plus(self.n_fixed, len(self.elements)))
        return f"vals[{at}, {slot}]"

    def zero(self):
        return ["vals[:, :] = 0.0"]

    def zero_row(self, row, once=()):
        return [] if self._assigned(once) else [f"vals[{row}, :] = 0.0"]

    def row_slice(self, p, row):
        """Code of the slots of fixed parameter ``p`` in row ``row``: a contiguous view."""
        slot = self.fixed[p.name]
        return f"vals[{row}, {slot}:{plus(slot, p.size_code)}]"

    def zero_block(self, once):
        """A line zeroing a block's rows unless every slot is assigned (a fixed slot
        of a parameter in ``once``; element slots never are): whole rows, as
        one contiguous store, even when only some slots need it (hierarchical
        Poisson: 150 against 185 us zeroing one slot)."""
        return [] if self._assigned(once) else ["vals[b0:b1, :] = 0.0"]

    def _assigned(self, once):
        """Whether every slot is assigned: a fixed slot of a parameter in ``once``
        (element slots never are)."""
        return all(name in once for name in self.fixed) and not self.elements

    def event_reverse(self, p, row, rows):
        """An event transform's reverse sweep writes at the parameter's own columns:
        into the dense scratch row ``erow``, then copied to the slots."""
        a, b, slot = p.offset_code, p.end_code, self.fixed[p.name]
        return [f"erow[{a}:{b}] = 0.0", p.transform.reverse_code(p.offset_code, p.ident, "erow", "0.0"),
                f"vals[{rows.plate(row)}, {slot}:{plus(slot, p.size_code)}] += erow[{a}:{b}]"]

    def prologue(self):
        events = any(self.layout.params[name].transform.event for name in self.fixed)
        return ["erow = np.zeros(theta.shape[0])"] if events else []

    def fixed_column_lines(self, row, rows):
        """Lines storing the fixed slots' columns (the same in every row) at row ``row``."""
        lines, at = [], rows.plate(row)
        for name, slot in self.fixed.items():
            p = self.layout.params[name]
            lines += ([f"cols[{at}, {slot}] = {p.offset_code}"] if p.shape == () else
                      [f"for j in range({p.size_code}):", f"    cols[{at}, {plus(slot, 'j')}] = {plus(p.offset_code, 'j')}"])
        return lines

    def column_lines(self, row, rows):
        """Lines storing the columns of the element slots written at row ``row``
        (the rows' loop variable, or ``r`` of a gather's scatter after them)."""
        return [f"cols[{rows.plate(row)}, {slot}] = {code}"
                for (code, at), slot in self.elements.items() if at == row]
