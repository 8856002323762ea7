"""Where adjoints land: gradient entries, how a term loop's rows write them, and
how the loop's body subscripts its rows.

A lowering (``logdens.codegen``) says which entry an adjoint goes to
(``Entry``); a target writes the code for it: ``grad_target`` for the serial
kernels, the parallel chunks' target in ``codegen``, the per-sample rows in
``logdens.rows``.
"""

from typing import NamedTuple

from logdens.lines import plus


# How the rows of a term loop write to a gradient entry (``Entry.kind``): each row
# to its own entry (disjoint between the chunks of a parallel loop, a store on a
# GPU), every row to the same entry (a scalar parameter), or to an entry picked
# by an index or an inner loop (a gather's source, a product's vector).
OWN_ROW, SHARED, SCATTER = "own row", "shared", "scatter"


class Entry(NamedTuple):
    """A gradient entry that adjoints are added to: element ``at`` (code; None for
    a scalar) of parameter ``p``, in column ``col`` (code; for ``OWN_ROW``
    written by the target, which knows how the loop reads its rows)."""

    p: object
    at: object
    col: object
    kind: str


def entry(p, at=None):
    """The ``Entry`` of element ``at`` of ``p`` (its scalar value when ``at`` is None)."""
    if at is None:
        return Entry(p, None, p.offset_code, SHARED)
    return Entry(p, at, plus(p.offset_code, at), SCATTER)


class Rows:
    """How the body of a term loop subscripts its row ``i``, decided before the body
    is written: plainly (``x[offset + i]``), or through views of the block's rows
    (``x_b<offset>[i]``, bound once per block) when the loop runs in blocks or
    over a chunk's range. In blocks the row index then starts at 0: numba wraps
    negative indices, LLVM cannot tell ``b0 + i`` is not negative and would
    gather every load (measured: 133 against 98 us on the hierarchical Poisson
    model)."""

    def __init__(self, viewed):
        self.viewed, self.views = viewed, {}

    def element(self, array, row, offset="0"):
        """Code of element ``offset + row`` of ``array`` (``offset``: code, such as a
        run-time offset ``o_<ident>``, which names the view ``<array>_<offset>``)."""
        if not self.viewed:
            return f"{array}[{plus(offset, row)}]"
        view = f"{array}_b{offset}" if str(offset).isdigit() else f"{array}_{offset}"
        self.views.setdefault(view, f"{array}[{plus(offset, 'b0')}:{plus(offset, 'b1')}]")
        return f"{view}[{row}]"

    def plate(self, row):
        """Code of the plate index of the loop's row ``row`` (or of ``r`` in a block)."""
        return f"(b0 + {row})" if self.viewed else row


def grad_target(e, row, rows):
    """``grad``'s entry ``e``: the serial kernels' gradient target."""
    return rows.element("grad", e.at, e.p.offset_code) if e.kind == OWN_ROW else f"grad[{e.col}]"


class ChunkTarget:
    """The gradient target of a parallel chunk ``c``: entries at the loop's own
    row are disjoint between chunks and go straight to ``grad``; the rest
    (scalars, gathers, products) go to the chunk's private row of ``bufs``,
    summed in chunk order afterwards. ``uses_bufs``: whether any entry did."""

    def __init__(self):
        self.uses_bufs = False

    def __call__(self, e, row, rows):
        if e.kind == OWN_ROW:
            return grad_target(e, row, rows)
        self.uses_bufs = True
        return f"bufs[c, {e.col}]"


class Atomic(NamedTuple):
    """Element ``index`` (code) of ``array``, which other GPU threads add to at the
    same time: the lowering adds to it with ``cuda.atomic.add``."""

    array: str
    index: object

    def __str__(self):
        return f"{self.array}[{self.index}]"


class GridTarget:
    """The gradient target of a GPU thread (``codegen.Lowering`` with ``grid``).

    A scalar parameter's entry, which every row adds to, is the thread's local
    ``acc<col>``, summed over the block and added to ``grad`` once per block by
    the kernel's end (``locals``: the columns used). An entry picked by an
    index (``a[group]``) of a short parameter goes to the block's copy of its
    adjoints in shared memory, ``sh_<p>`` (``shared``), added to ``grad`` once
    per block: rows of many groups queued on a few global addresses (the
    hierarchical Poisson model's 100 groups, H200: 68 GB/s). Every other entry
    is added to ``grad`` atomically: rows of other threads, and other terms in
    the same kernel, may add to it too.
    """

    #: Longest vector parameter whose adjoints in products (``X @ beta``) a thread
    #: sums in a local array, flushed once per block like ``acc<col>``; longer
    #: ones are added atomically row by row.
    LOCAL_VECTOR = 64
    #: Float64 entries of shared memory a block may hold for ``sh_<p>`` arrays
    #: (32 KB of the 48 KB a block may declare statically; the sums' buffer is 2 KB).
    SHARED_ENTRIES = 4096

    def __init__(self):
        self.locals, self.vectors, self.shared = set(), {}, {}

    def vector(self, p):
        """The name of the thread's local array of ``p``'s adjoints in products
        (unscaled by a transform's dx/du), or None when ``p`` is too long or
        event-transformed."""
        if p.transform.event or p.constrained_size > self.LOCAL_VECTOR:
            return None
        self.vectors[p.name] = p
        return f"accv_{p.ident}"

    def _in_shared(self, p):
        if p.name not in self.shared:
            if p.size + sum(q.size for q in self.shared.values()) > self.SHARED_ENTRIES:
                return False
            self.shared[p.name] = p
        return True

    def start_lines(self):
        """The kernel's lines before its terms: the sums and shared copies zeroed."""
        lines = [f"acc{c} = 0.0" for c in sorted(self.locals)]
        for p in self.vectors.values():
            lines += [f"accv_{p.ident} = cuda.local.array({p.constrained_size}, numba.float64)",
                      f"for j in range({p.constrained_size}):", f"    accv_{p.ident}[j] = 0.0"]
        for p in self.shared.values():
            lines += [f"sh_{p.ident} = cuda.shared.array({p.size}, numba.float64)",
                      f"for k in range(cuda.threadIdx.x, {p.size}, cuda.blockDim.x):", f"    sh_{p.ident}[k] = 0.0"]
        return lines + (["cuda.syncthreads()"] if self.shared else [])

    def end_lines(self):
        """The kernel's last lines, after a ``block_add`` (whose barrier leaves every
        row's adds in): each sum and shared copy added to ``grad`` once per block."""
        lines = [f"block_add(buffer, acc{c}, grad, {c})" for c in sorted(self.locals)]
        for p in self.shared.values():
            lines += [f"for k in range(cuda.threadIdx.x, {p.size}, cuda.blockDim.x):",
                      f"    if sh_{p.ident}[k] != 0.0:", f"        cuda.atomic.add(grad, {plus(p.offset_code, 'k')}, sh_{p.ident}[k])"]
        for p in self.vectors.values():
            scale = "" if p.transform.identity else f" * dw_{p.ident}[j]"
            lines += [f"for j in range({p.constrained_size}):",
                      f"    block_add(buffer, accv_{p.ident}[j]{scale}, grad, {plus(p.offset_code, 'j')})"]
        return lines

    def __call__(self, e, row, rows):
        if e.kind == SHARED:
            self.locals.add(e.col)
            return f"acc{e.col}"
        if e.kind == SCATTER and self._in_shared(e.p):
            return Atomic(f"sh_{e.p.ident}", e.at)
        return Atomic("grad", e.col if e.kind != OWN_ROW else plus(e.p.offset_code, e.at))
