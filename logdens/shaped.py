"""Lowering of terms with values that have shape: matrices, and rows of vectors.

A term with a value of more than one axis, a general product ``a @ b``, an
axis reduction, ``log_softmax``, a transpose or a matrix index is lowered
here (``rules.shaped``); every other term by ``codegen.Lowering``.

Every value of such a term is *row-aligned* (it depends on data that have
rows: its first axis is the term's rows, read at run time, the rest its
event) or *whole* (parameters, constants, data read whole and what is
computed from them). Lengths are numbers in the code, except those that come
from the rows of named data read whole (a scan's series, a Gaussian process's
inputs): those are read at run time (``logdens.sizes``), so new data of
another length need no new compile. The term runs over blocks of ``BLOCK`` rows:
each row-aligned value is a (BLOCK, event size) buffer filled for the
block's rows, node by node, children first; each whole value is a flat
buffer computed once per call before the blocks. Products of a block with
a whole matrix call BLAS (``np.dot`` into the block's buffer, the same for
their adjoints: ``A.T @ G`` into a whole matrix's adjoint), so a neural
network's layers are small matrix products, not a loop per row.

The reverse sweep runs after each block's forward pass: adjoints of
row-aligned values in per-block buffers, those of whole values in flat
buffers summed over the rows and swept back through the whole values (and
the parameters' transforms) once after the blocks. For per-sample rows the
contributions to whole values are made row by row instead, and the whole
sweep runs once per row into that row's output.

On a GPU (``Lowering.grid``: ``thread``) each thread runs the same program
over its own rows, one at a time: blocks of one row in local arrays, loops
where the CPU calls BLAS or numpy, whole values computed by every thread
and their adjoints summed in its own buffers, swept back once after its
rows into the gradient (atomically: ``targets.GridTarget``). A term without
rows runs in the point's first thread.
"""

import functools
import math
import operator

from logdens import expr as ex
from logdens import gp, linalg, linalg_kernels, rules, sizes, validate
from logdens import scans as scan_nodes
from logdens.cpu_blocks import BLOCK
from logdens.expr import ModelError
from logdens.layout import module_alias
from logdens.lines import indent, literal
from logdens.opaque import loop_bound
from logdens.ops import OPS
from logdens.targets import Rows, entry


class _Kernel(sizes.Kernel):
    """The term's distribution as a node: its log density at each element (the
    summands ``keep`` selects), with the kernel's partials kept for the sweep."""

    def __init__(self, term, keep, checked):
        super().__init__(term)
        self.keep, self.checked = keep, checked

    def depends_on_params(self):
        return any(c.depends_on_params() for c in self.children)


class _RowsOf:
    """A whole value whose first axis is the term's rows, read row by row by a
    row-aligned node (``f = L @ z`` of a latent Gaussian process under a
    likelihood of data rows): each block copies its rows out, and its reverse
    adds their adjoints back."""

    def __init__(self, whole):
        self.children, self.shape = (whole,), whole.shape

    ndim = property(lambda self: len(self.shape))

    def label(self, depth=ex.LABEL_DEPTH):
        return self.children[0].label(depth)

    def depends_on_params(self):
        return self.children[0].depends_on_params()


_NO_RULE = rules.Rule()


class _Info:
    """What the lowering knows of one node: row-aligned or whole, its event shape
    (lengths read at run time are ``sizes.Size``), its size (at least 1), its
    value buffer, its adjoint buffer (None: no gradient through it)."""

    def __init__(self, rowed, event, value, adjoint, in_place=False):
        self.rowed, self.event, self.value, self.adjoint = rowed, event, value, adjoint
        self.size = sizes.extent(math.prod(event))
        self.in_place = in_place  # the adjoint is a view of gradient entries (``_adds_in_place``)


def _rule(node):
    """The rule of an expression node (``logdens.rules``); the term's kernel and
    ``_RowsOf`` have none."""
    return _NO_RULE if isinstance(node, (_Kernel, _RowsOf)) else rules.rule(node)


def _kind(node):
    """The method suffix of ``node``'s type (``KINDS``); a multivariate kernel's
    is ``event_kernel``: one call per row on whole events."""
    if isinstance(node, _Kernel) and node.spec.multivariate:
        return "event_kernel"
    return KINDS.get(type(node), "unsupported")


def _calls_kernel(node):
    """Whether ``node`` calls a distribution's kernel: the term's, or ``dist.logpdf(x)``."""
    return isinstance(node, _Kernel) or _rule(node).kernel_spec(node) is not None


def _flat(shape, names):
    """Code of the row-major flat position of indices ``names`` in ``shape``."""
    terms, stride = [], 1
    for n, name in reversed(list(zip(shape, names))):
        if n != 1:
            terms.append(name if stride == 1 else f"{name} * {stride}")
        stride *= n
    return " + ".join(reversed(terms)) or "0"


def _reads_rows(node):
    """Whether ``node`` reads data with an axis (rows, in a term with them) other
    than for their count (``len``)."""
    return any(rules.rule(n).data and n.ndim >= 1 for n in ex.nodes(node, stop=lambda n: rules.rule(n).counts))


def _sum_outermost(value):
    """A potential's ``-sum(x)``, ``c * sum(x)``, ``sum(x) * c`` and ``sum(x) / c``,
    ``x`` reading rows of data and ``c`` a scalar that does not, as ``sum(-x)``,
    ``sum(c * x)``, ...: a sum over the rows must be the potential's outermost
    node (each block adds its rows' share of it), and a factor distributes."""
    if isinstance(value, ex.Unary) and value.op == "neg":
        inner = _sum_outermost(value.children[0])
        if isinstance(inner, ex.Sum) and _reads_rows(inner):
            return ex.Sum(-inner.children[0])
    if isinstance(value, ex.Binary) and value.op in ("mul", "div"):
        left, right = value.children
        for k, (total, factor) in enumerate(((left, right), (right, left))[:1 if value.op == "div" else 2]):
            inner = _sum_outermost(total)
            if (isinstance(inner, ex.Sum) and _reads_rows(inner) and factor.shape == ()
                    and not _reads_rows(factor)):
                x = inner.children[0]
                return ex.Sum(ex.Binary(value.op, x, factor) if k == 0 else ex.Binary("mul", factor, x))
    return value


def potential_parts(term):
    """A scalar potential ``a + b - c`` with addends that sum over rows of data, as
    one term per such addend and one for the rest (a prior written beside a
    likelihood): each sum over the rows needs a loop over them of its own, as
    its potential's outermost node (``_sum_outermost``)."""
    if term.kind != "potential":
        return [term]
    addends = _addends(term.value)
    rows = [a for a in addends if _reads_rows(a)]
    if len(addends) == 1 or not rows:
        return [term]
    rest = [a for a in addends if not _reads_rows(a)]
    parts = rows + ([functools.reduce(operator.add, rest)] if rest else [])
    return [term._replace(value=part, args=(part,)) for part in parts]


def _addends(node, sign=1.0):
    """``node`` as a list of expressions that add up to it (``a - b`` is ``[a, -b]``)."""
    if isinstance(node, ex.Binary) and node.op in ("add", "sub"):
        left, right = node.children
        return _addends(left, sign) + _addends(right, sign if node.op == "add" else -sign)
    if isinstance(node, ex.Unary) and node.op == "neg":
        return _addends(node.children[0], -sign)
    return [node if sign > 0 else -node]


class ShapedTerm:
    """Writes one term's lines for a ``codegen.Lowering`` (its layout, gradient,
    per-row target and workspaces); ``mode`` as ``Lowering.term``."""

    def __init__(self, lowering, term, keep, mode):
        self.low, self.layout, self.term, self.mode = lowering, lowering.layout, term, mode
        self.gradient, self.per_row = lowering.gradient, lowering.per_row
        self.thread = lowering.grid  # a GPU thread (see the module docstring)
        self.block = 1 if self.thread else BLOCK
        self.where = f"term {term.name!r}"
        self.info = {}
        self.order = []  # nodes, children first
        self.rowed_data = None  # a data node whose rows are the term's rows
        if term.dist is None:
            value = _sum_outermost(term.value)
            self.rows_summed = rules.rule(value).adds_rows  # a scalar potential, summed over rows
            while rules.rule(value).adds_rows:  # a potential sum(x): the rows' sum, in their loop
                value = value.children[0]
            self.root = value
        else:
            checked = term.dist.spec.takes_x_valid and validate.value_checked(term)
            self.root, self.rows_summed = _Kernel(term, keep, checked), False
        self.data_views = set()  # value buffers that are views of a block of data rows
        self.event_data = set(rules.whole_data(term))  # data read whole, not as rows
        self.walk = sizes.SizeWalk(self.where, self._data_shape, self._param_shape)  # ``logdens.sizes``
        self.root = self._rows_of_wholes(self.root)
        # every node's shape before any buffer: a length unified late stands for another everywhere
        rules.fold(self.root, lambda node, below: below[0] if isinstance(node, _RowsOf) else self.walk.visit(node, below),
                   self.walk.shapes)
        self._visit(self.root)
        self.body = self._scan_bodies()
        self.rowed = self.info[id(self.root)].rowed
        self.parents = {}  # id(node) -> [(parent, position of node among its children)]
        for node in self.order:
            for j, child in enumerate(node.children):
                self.parents.setdefault(id(child), []).append((node, j))
        self.partials = {}  # id(kernel node) -> {argument position: its partials' buffer}
        self.assigned, self.shared = set(), set()  # see ``_share_adjoints``
        self.flat_views = set()  # block buffers read flat (``_event_loops``)
        self.row_assigned = set()  # see ``_row_assigned``
        self.scalar_locals, self.locals_used = {}, set()  # whole scalar buffer -> its local (``_event_loops``)
        self._share_adjoints()

    # ----- what each node is --------------------------------------------
    def _visit(self, root):
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if id(node) in self.info:
                continue
            if not ready:
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(node.children) if id(c) not in self.info)
                continue
            self.info[id(node)] = self._classify(node)
            self.order.append(node)

    def _scan_bodies(self):
        """``id(scan) -> its body``: the nodes computed from the scan's placeholders,
        children first, placeholders left out; they run in the scan's loop only
        (``body_ids``). A scan inside another's step is a node of the outer body,
        and its own body runs in its loop only: an inner scan (before the outer in
        ``order``) claims its body first. Also ``scan_outputs``: ``id(scan) ->``
        the info of its ``ScanOutputs`` node in this term, if any."""
        deps, bodies, claimed, self.scan_outputs = {}, {}, set(), {}
        for node in self.order:
            kind = _kind(node)
            found = set().union(*(deps[id(c)] for c in node.children)) if node.children else set()
            if kind == "placeholder":
                found = {node.key}
            elif kind == "scan":
                own = {node.carry.key, *(x.key for x in node.inputs)}
                bodies[id(node)] = [n for n in self.order if deps.get(id(n), set()) & own
                                    and _kind(n) != "placeholder" and id(n) not in claimed]
                claimed.update(id(n) for n in bodies[id(node)])
                found -= own
            elif kind == "scan_outputs":
                self.scan_outputs[id(node.children[0])] = self.info[id(node)]
            deps[id(node)] = found
        self.body_ids = {id(n) for n, found in zip(self.order, (deps[id(n)] for n in self.order)) if found}
        return bodies

    def _rows_of_wholes(self, root):
        """``root`` with each whole value that an elementwise node or univariate
        kernel reads at its rows (a whole child of the node's rank, the node
        row-aligned) wrapped in ``_RowsOf``."""
        rowed, rebuilt, wrapped = {}, {}, {}

        def visit(node, below):
            rows = (_rule(node).data and node.ndim >= 1 and id(node) not in self.event_data) or any(
                rowed[id(c)] for c in node.children)
            rowed[id(node)] = rows
            reads_rows = rows and (_rule(node).elementwise or (isinstance(node, _Kernel) and not node.spec.multivariate))
            children = []
            for child, new in zip(node.children, below):
                if (reads_rows and not rowed[id(child)] and child.ndim == node.ndim >= 1
                        and not ex.stretches_leading(child, node.shape)):
                    new = wrapped.setdefault(id(child), _RowsOf(new))
                children.append(new)
            if all(new is old for new, old in zip(children, node.children)):
                return node
            if isinstance(node, _Kernel):
                node.children = tuple(children)
                return node
            return ex.with_children(node, children)
        return rules.fold(root, visit, rebuilt)

    def _data_shape(self, node):
        """A data node's shape, its rows read at run time (``n_<ident>``) where
        ``sizes.runtime_rows``, except on a GPU thread, whose buffers are local
        arrays of compile-time lengths."""
        if self.thread or not sizes.runtime_rows(node):
            return node.shape
        rows = sizes.Size(f"n_{self.layout.data_ident(node)}", node.shape[0], node.label())
        return (rows, *node.shape[1:])

    def _param_shape(self, node):
        """A parameter's shape, a vector's length read at run time where the layout
        says so (``Layout``: where the term does not fix it)."""
        p = self.layout.params[node.name]
        return (sizes.Size(p.size_code, node.shape[0], node.name),) if p.runtime else node.shape

    def _shape(self, node):
        """``node``'s shape, with its run-time lengths (``sizes.Size``)."""
        return self.walk.shape(node)

    def _classify(self, node):
        kids = [self.info[id(c)] for c in node.children]
        shape = self._shape(node)
        if isinstance(node, _RowsOf):  # a whole value read at the rows of data found below its reader
            rowed = True
        elif _rule(node).data and node.ndim >= 1 and id(node) not in self.event_data:
            rowed = True
            self.rowed_data = node if self.rowed_data is None else self.rowed_data
        else:  # a count of rows (``len``) is a whole number
            rowed = any(k.rowed for k in kids) and not _rule(node).counts
        event = shape[1:] if rowed else shape
        if _kind(node) == "event_kernel":
            self._check_events(node, kids, event)
        if rowed and node.ndim == 0:
            raise ModelError(f"{self.where}: {node.label()} reduces over the rows of data inside an "
                             "expression with matrices; only a potential's outer ld.sum may")
        needs = (self.gradient and node.depends_on_params()
                 and not (isinstance(node, _Kernel) or _rule(node).constant))
        if _rule(node).constant:
            return _Info(False, (), None, None)
        n = self.low.fresh("s")[1:]
        if _rule(node).data:
            if node.ndim > 2:
                raise ModelError(f"{self.where}: data {node.label()} has shape {node.shape}; data of more "
                                 "than two axes are not supported")
            if not self.layout.data[self.layout.data_name(node)].as_value:
                return _Info(rowed, event, None, None)  # an index only, read where used
        size = sizes.extent(math.prod(event))
        shape = (self.block, size) if rowed else (size,)
        value = f"sv{n}"
        if self._data_view(node, rowed):
            self.data_views.add(value)
        elif not (_rule(node).param and node.shape != ()):
            self.low.workspaces.declare(value, *shape)
        if needs and self._adds_in_place(node):
            return _Info(rowed, event, value, f"sa{n}", in_place=True)
        adjoint = self.low.workspaces.declare(f"sa{n}", *shape) if needs else None
        return _Info(rowed, event, value, adjoint)

    def _data_view(self, node, rowed):
        """Whether ``node`` is a data matrix stored row by row (``DataSlot.row_major``)
        whose block of rows is a view, with no copy (not on a GPU thread: its rows
        are read as float64, ``Lowering.data_read``)."""
        return (not self.thread and rowed and _rule(node).data and node.ndim == 2
                and self.layout.data[self.layout.data_name(node)].row_major)

    def _check_events(self, node, kids, event):
        """A multivariate kernel runs once per row of the term's data, once per
        event of a whole batch of one axis (a prior on the rows of a parameter
        matrix), or once: each argument is one event, or one per row or per
        entry of the batch."""
        rowed = any(k.rowed for k in kids)
        if len(event) > (0 if rowed else 1):
            raise ModelError(f"{self.where}: {node.spec.name} over a batch of shape {node.shape}; a "
                             "multivariate term takes one event, one per row of data, or a vector of them")
        for child, kid, axes in zip(node.children, kids, node.spec.events):
            batch = child.ndim - len(axes)
            if batch != (1 if kid.rowed else 0) and not (not rowed and batch == 1 and child.shape[0] == node.shape[0]):
                raise ModelError(f"{self.where}: {node.spec.name} argument {child.label()} has shape "
                                 f"{child.shape}; it must be one event ({len(axes)} axes) or one per row "
                                 "of the data")

    def _adds_in_place(self, node):
        """Whether the adjoint of parameter ``node`` is a view of its gradient entries
        (or of the per-sample row's): a vector without a transform, so its
        adjoint is its gradient. No buffer to zero, and no sweep. Not on a GPU
        thread, except into its own per-sample row: other threads add too."""
        if (self.thread and not self.per_row) or not _rule(node).param or node.shape == () or node is self.root:
            return False
        return self.layout.params[node.name].transform.identity

    def _views(self, whole, row):
        """Lines binding the in-place adjoints to the gradient (``row`` None) or to
        row ``row`` of the per-sample output."""
        lines = []
        for n in whole:
            info = self.info[id(n)]
            if info.in_place:
                p = self.layout.params[n.name]
                where = (f"grad[{p.offset_code}:{p.end_code}]" if row is None
                         else self.low.target.row_slice(p, row))
                lines.append(f"{info.adjoint} = {where}")
        return lines

    def _share_adjoints(self):
        """Row-aligned adjoints with exactly one contribution (one parent, read once):
        the contribution is assigned, not added, so the buffer is never zeroed
        (``assigned``); when it is the parent's adjoint itself (``a + b``) or a
        kernel's partial, the child reads that buffer instead of a copy
        (``shared``). A network's layers then cost no adjoint pass of their own
        between the products. Whole values share by ``_whole_shared_buffer``."""
        parents = self.parents
        for node in self.order:
            if _kind(node) == "event_kernel":
                self._event_partials(node)
            elif _calls_kernel(node):
                info = self.info[id(node)]
                shape = (self.block, info.size) if info.rowed else (info.size,)
                self.partials[id(node)] = {
                    j: self.low.workspaces.declare(f"sk{info.value[2:]}_{j}", *shape)
                    for j, c in enumerate(node.children) if self.info[id(c)].adjoint is not None}
        for node in reversed(self.order):  # parents first: a shared buffer may be shared on
            info = self.info[id(node)]
            edges = parents.get(id(node), [])
            if info.adjoint is None or node is self.root or len(edges) != 1:
                continue
            parent, j = edges[0]
            if not info.rowed:
                buffer = self._whole_shared_buffer(node, info, parent, j)
                if buffer is not None:
                    self.low.workspaces.drop(info.adjoint)
                    info.adjoint = buffer
                    self.shared.add(id(node))
                continue
            kind = _kind(parent)
            same = self.info[id(parent)].event == info.event
            if kind == "event_kernel" or (isinstance(parent, _Kernel) and same):
                buffer = self.partials[id(parent)][j]
            elif kind == "elementwise" and same and OPS[parent.op].derivatives[j] == "1.0":
                buffer = self.info[id(parent)].adjoint
            elif (kind in ("elementwise", "kernel") and same) or kind in ("reduce", "log_softmax") or (
                    kind == "matmul" and j == 0):  # one contribution per element (a stretched axis: several)
                self.assigned.add(id(node))
                continue
            else:
                continue
            self.low.workspaces.drop(info.adjoint)
            info.adjoint = buffer
            self.shared.add(id(node))

    def _whole_shared_buffer(self, node, info, parent, j):
        """The buffer that can be the adjoint of whole value ``node``, read once by
        ``parent`` (its argument ``j``), outside any scan's loop: the summed
        partial of a multivariate kernel that runs once (zeroed before its call),
        or add_diag's adjoint for its matrix (passed through unchanged); else
        None. Each spares zeroing an n x n adjoint and adding into it."""
        if info.in_place or id(node) in self.body_ids or id(parent) in self.body_ids:
            return None  # a view of the gradient; a loop re-zeroes its own buffers at every step
        kind = _kind(parent)
        if kind == "event_kernel" and not self.info[id(parent)].rowed:
            buffer = self.partials[id(parent)].get(j)
            if buffer is not None and len(self.low.workspaces.shapes[buffer]) == 1:
                return buffer
        elif kind == "add_diag" and j == 0:
            return self.info[id(parent)].adjoint
        return None

    def _event_partials(self, node):
        """A multivariate kernel's partials buffers, one per argument with an
        adjoint: a row-aligned argument's are the block's rows; a whole one's
        are summed over the rows by the kernel itself (it adds), except in
        per-sample rows, which keep each row's."""
        info = self.info[id(node)]
        buffers = {}
        for j, child in enumerate(node.children):
            kid = self.info[id(child)]
            if kid.adjoint is None:
                continue
            per_row = kid.rowed or (self.per_row and info.rowed)
            shape = (self.block, kid.size) if per_row else (kid.size,)
            buffers[j] = self.low.workspaces.declare(f"sk{info.value[2:]}_{j}", *shape)
        self.partials[id(node)] = buffers

    def _op(self, child):
        """``=`` for an adjoint that takes its one contribution, else ``+=``."""
        return "=" if id(child) in self.assigned or id(child) in self.row_assigned else "+="

    def _row_assigned(self):
        """In per-sample rows, the parameters (with in-place adjoints) that take their
        row's entries from one contribution covering all of them: a product's
        matrix (the row's outer product), a vector added to each row. They are
        assigned: no read of the (zeroed) row before the store."""
        edges, out = self.parents, set()
        for node in self.order:
            info = self.info[id(node)]
            if not info.in_place or len(edges.get(id(node), ())) != 1:
                continue
            parent, j = edges[id(node)][0]
            kind, rowed = _kind(parent), self.info[id(parent)].rowed
            if rowed and ((kind == "matmul" and j == 1)
                          or (kind in ("elementwise", "kernel") and self.info[id(parent)].event == info.event)):
                out.add(id(node))
        return out

    def _at(self, node, row, t):
        """Code of ``node``'s element ``t`` (flat, in its event) at row ``row`` (None:
        ``t`` is the flat position in the block)."""
        if _rule(node).constant:
            return literal(node.value)
        info = self.info[id(node)]
        return self._element(info.value, info.rowed, row, t)

    def _element(self, buffer, rowed, row, t):
        """Code of element ``t`` of a buffer at row ``row`` (see ``_at``; a whole
        scalar inside ``_event_loops``: its local)."""
        if not rowed:
            if t == "0" and buffer in self.scalar_locals:
                self.locals_used.add(buffer)
                return self.scalar_locals[buffer]
            return f"{buffer}[{t}]"
        if row is None:
            self.flat_views.add(buffer)
            return f"f{buffer}[{t}]"
        return f"{buffer}[{row}, {t}]"

    def _index(self, node):
        """Code of the row's entry of an index array (a gather's)."""
        if not self.info[id(node)].rowed:
            raise ModelError(f"{self.where}: the index {node.label()} must be a 1-D integer data array")
        return f"i_{self.layout.data_ident(node)}[b0 + r]"

    def _row_element(self, buffer, rowed):
        """``q -> code`` of element ``q`` of ``buffer`` at the block's row ``r``."""
        return lambda q: self._element(buffer, rowed, "r", q)

    def _row_element_of(self, rowed):
        """``(buffer, q) -> code`` of element ``q`` at the block's row ``r``."""
        return lambda buffer, q: self._element(buffer, rowed, "r", q)

    def _event_axis(self, node, what):
        """``(child info, axis)``: ``node.axis`` of its one child, counted in the
        child's event; a ``ModelError`` saying ``what`` when it is the rows' axis."""
        xi = self.info[id(node.children[0])]
        axis = node.axis - (1 if xi.rowed else 0)
        if axis < 0:
            raise ModelError(f"{self.where}: {node.label()} {what}")
        return xi, axis

    def _adj(self, node, row, t):
        info = self.info[id(node)]
        return self._element(info.adjoint, info.rowed, row, t)

    # ----- loops over events --------------------------------------------
    def _event_loops(self, node, operands, body, fixed_row=False):
        """Lines running ``body(row, t, operand_index)`` over ``node``'s elements
        (``_element_loops``), with each whole scalar operand read into a local
        before the loops and its adjoint summed in a local added after them:
        read from its buffer, LLVM cannot tell the loop's stores do not change
        it, reloads it and redoes what depends on it (a Normal's log sigma) at
        every element, and the loop does not vectorize (40x on an HMM's
        emissions). The local goes into the buffer as the body's contribution
        would (``_op``): a per-sample row's entry that is assigned is not zeroed."""
        self.scalar_locals, self.locals_used = {}, set()
        lines = {}  # buffer -> (lines before the loops, lines after them)
        for child in operands:
            kid = self.info[id(child)]
            if (kid.rowed or kid.value is None or _rule(child).constant or not sizes.is_one(kid.size)
                    or kid.value in self.scalar_locals):  # not rowed, not twice (rho * rho)
                continue
            self.scalar_locals[kid.value] = f"{kid.value}_0"
            lines[kid.value] = ([f"{kid.value}_0 = {kid.value}[0]"], [])
            if kid.adjoint is not None and id(child) not in self.shared:
                self.scalar_locals[kid.adjoint] = f"{kid.adjoint}_0"
                lines[kid.adjoint] = ([f"{kid.adjoint}_0 = 0.0"],
                                      [f"{kid.adjoint}[0] {self._op(child)} {kid.adjoint}_0"])
        loops = self._element_loops(node, operands, body, fixed_row)
        used = [lines[b] for b in lines if b in self.locals_used]
        self.scalar_locals = {}
        return [x for first, _ in used for x in first] + loops + [x for _, last in used for x in last]

    def _element_loops(self, node, operands, body, fixed_row):
        """Lines running ``body(row, t, operand_index)`` over ``node``'s elements:
        ``t`` the flat position in the event, ``operand_index(child)`` the child's
        (broadcast: trailing axes aligned), inside a loop over the block's rows
        ``r`` when ``node`` is row-aligned (unless ``fixed_row``: ``r`` is bound).
        When every operand is row-aligned with the node's event or a whole
        scalar, one flat loop runs over the block's rows and events together
        (``row`` None: flat views): a kernel over 10 outputs per row then
        vectorizes over the block, not over a loop of 10."""
        info = self.info[id(node)]
        event, size = info.event, info.size
        shapes = {}
        for child in operands:
            kid = self.info[id(child)]
            if _rule(child).constant or kid.value is None:
                continue
            if kid.rowed and len(kid.event) != len(event):
                raise ModelError(f"{self.where}: {child.label()} (shape {child.shape}) and {node.label()}: "
                                 "row-aligned values combine only with values of their own rank")
            kid_event = kid.event
            while not kid.rowed and len(kid_event) > len(event) and kid_event[0] == 1:
                kid_event = kid_event[1:]  # a stretched leading 1 (``c`` of shape (1, k) at each row)
            if not kid.rowed and len(kid_event) > len(event):
                raise ModelError(f"{self.where}: {child.label()} has shape {child.shape}, which would "
                                 f"broadcast along the rows of data in {node.label()}")
            shapes[id(child)] = (kid.rowed, kid_event)

        def same(s):  # the node's event, or one element
            return s == event or sizes.is_one(math.prod(s))
        if info.rowed and not fixed_row and not self.thread and all(
                s == event if rowed else same(s) for rowed, s in shapes.values()):
            def flat_index(child):
                rowed, s = shapes.get(id(child), (False, ()))
                return "q" if rowed else f"q % {size}" if s == event and not sizes.is_one(size) else "0"
            return [f"for q in range(nb * {size}):"] + indent(body(None, "q", flat_index))
        if all(same(s) for _, s in shapes.values()):
            header, depth = ([f"for t in range({size}):"], 1) if not sizes.is_one(size) else (["t = 0"], 0)

            def index(child):
                s = shapes.get(id(child), (False, ()))[1]
                return "t" if s == event and not sizes.is_one(size) else "0"
        else:
            names = [f"t{k}" for k in range(len(event))]
            header = []
            for k, n in enumerate(event):
                header += indent([f"for t{k} in range({n}):"], k)
            header += indent([f"t = {_flat(event, names)}"], len(event))
            depth = len(event)

            def index(child):
                s = shapes.get(id(child), (False, ()))[1]
                return _flat(s, names[len(event) - len(s):])
        return self._rows(header + indent(body("r", "t", index), depth), info.rowed, fixed_row)

    def _inner(self, n):
        """Code of the bound of a product's innermost loop, ``n`` iterations: hidden
        from LLVM on the CPU (``logdens.opaque``: a run-time length already is);
        a number on a GPU thread."""
        return str(n) if self.thread or isinstance(n, sizes.Size) else loop_bound(n)

    def _rows(self, lines, rowed, fixed_row=False):
        """``lines`` in a loop over the block's rows ``r`` (a row-aligned node) unless
        ``fixed_row`` (``r`` is bound by the caller) or the node is whole."""
        if not rowed or fixed_row:
            return lines
        return ["for r in range(nb):"] + indent(lines)

    # ----- forward ------------------------------------------------------
    def _forward(self, node):
        info = self.info[id(node)]
        if _rule(node).constant or info.value is None:
            return []
        method = getattr(self, "_fwd_" + _kind(node))
        return [f"# {info.value}: {node.label()}"] + method(node, info)

    def _fwd_unsupported(self, node, info):
        raise ModelError(f"{self.where}: {type(node).__name__} ({node.label()}) is not supported in a "
                         "term with matrices yet")

    def _fwd_param(self, node, info):
        p = self.layout.params[node.name]
        if node.shape != ():
            view = f"theta[{p.offset_code}:{p.end_code}]" if p.transform.identity else f"w_{p.ident}"
            return [f"{info.value} = {view}"]
        if p.transform.identity:
            self.scalar_dx = getattr(self, "scalar_dx", {})
            return [f"{info.value}[0] = theta[{p.offset_code}]"]
        lines = []
        x, dx = p.transform.emit(lines, f"theta[{p.offset_code}]", f"u{info.value}")
        self.scalar_dx = getattr(self, "scalar_dx", {})
        self.scalar_dx[id(node)] = f"d{info.value}"
        return lines + [f"{info.value}[0] = {x}", f"d{info.value} = {dx}"]

    def _fwd_data(self, node, info):
        ident, read = self.layout.data_ident(node), self.low.data_read
        if info.value in self.data_views:  # its flat view is bound here, per block
            return [f"{info.value} = d_{ident}[b0:b1]", f"f{info.value} = {info.value}.reshape(nb * {node.shape[1]})"]
        row_major = node.ndim == 2 and self.layout.data[self.layout.data_name(node)].row_major
        if not info.rowed and node.ndim == 2:  # a whole event (``Layout.pack``: maybe transposed)
            a, b = self._shape(node)
            at = "i, j" if row_major else "j, i"
            return [f"for i in range({a}):", f"    for j in range({b}):",
                    f"        {info.value}[i * {b} + j] = {read(f'd_{ident}[{at}]')}"]
        if not info.rowed:
            return [f"for k in range({info.size}):", f"    {info.value}[k] = {read(f'd_{ident}[k]')}"]
        if node.ndim == 1:
            return ["for r in range(nb):", f"    {info.value}[r, 0] = {read(f'd_{ident}[b0 + r]')}"]
        # stored transposed (``Layout.pack``): column j of the block is contiguous
        at = "b0 + r, j" if row_major else "j, b0 + r"
        return [f"for j in range({node.shape[1]}):", "    for r in range(nb):",
                f"        {info.value}[r, j] = {read(f'd_{ident}[{at}]')}"]

    def _fwd_elementwise(self, node, info):
        op = OPS[node.op]
        return self._event_loops(node, node.children, lambda row, t, index: [
            f"{self._at(node, row, t)} = " + op.value.format(*[self._at(c, row, index(c)) for c in node.children])])

    def _fwd_kernel(self, node, info):
        """The distribution's kernel per element; its partials into ``sk<n>_<j>``."""
        keep = node.keep if isinstance(node, _Kernel) else node.spec.keep_all
        checked = ", True" if isinstance(node, _Kernel) and node.checked else ""
        partials = self.partials[id(node)]
        module, res = module_alias(node.spec), f"res{info.value[2:]}"

        def body(row, t, index):
            args = ", ".join(self._at(c, row, index(c)) for c in node.children)
            return ([f"{res} = {module}.logpdf_grad({args}, {keep!r}{checked})",
                     f"{self._at(node, row, t)} = {res}[0]"]
                    + [f"{self._element(name, info.rowed, row, t)} = {res}[{j + 1}]" for j, name in partials.items()])
        return self._event_loops(node, node.children, body)

    def _fwd_event_kernel(self, node, info):
        """A multivariate kernel once per row (or once): each argument one event,
        a view of its buffer; its partials added into ``sk<n>_<j>``."""
        partials, spec = self.partials[id(node)], node.spec
        row = "r" if info.rowed else None
        _, lengths = sizes.kernel_shape(spec, node, [self._shape(c) for c in node.children], self.walk)
        zero = [line for b in partials.values() for line in self._zero(b)]
        if self._rows_kernel(node, info):
            return zero + self._fwd_rows_kernel(node, info, lengths)
        work = self.low.workspaces.declare(f"sw{info.value[2:]}", sizes.extent(spec.work(lengths)) if spec.work else 1)
        batch = "q" if info.event else None  # a whole batch: one call per entry
        ranks = [len(axes) for axes in spec.events]
        args = [self._event_view(c, rank, self.info[id(c)].value, self.info[id(c)].rowed, row, batch)
                for c, rank in zip(node.children, ranks)]
        outs = []
        for j, (child, rank) in enumerate(zip(node.children, ranks)):
            if j not in partials:
                outs.append("None")
                continue
            buffer = partials[j]
            rowed = len(self.low.workspaces.shapes[buffer]) == 2
            outs.append(self._event_view(child, rank, buffer, rowed, row, batch, scalar_as_array=True))
        call = (f"{module_alias(spec)}.logpdf_grad({', '.join(args)}, {node.keep!r}, {work}, "
                f"{', '.join(outs)})")
        if batch:
            return zero + [f"for q in range({info.event[0]}):", f"    {info.value}[q] = {call}"]
        return zero + self._rows([f"{self._at(node, row, '0')} = {call}"], info.rowed)

    def _zero(self, buffer):
        """Lines zeroing a workspace (a block's rows of it): a slice on the CPU, a
        loop on a GPU thread."""
        shape = self.low.workspaces.shapes[buffer]
        if self.thread:
            return [f"for e in range({shape[-1]}):", f"    {buffer}[{'0, ' if len(shape) == 2 else ''}e] = 0.0"]
        return [f"{buffer}[:nb] = 0.0" if len(shape) == 2 else f"{buffer}[:] = 0.0"]

    def _rows_kernel(self, node, info):
        """Whether the kernel over a block of rows (``Spec.rows``) runs: the term has
        rows, only arguments it takes as rows are row-aligned (vectors), and no
        per-sample rows need each row's partials of whole arguments."""
        rows = node.spec.rows
        if rows is None or not info.rowed or self.per_row or self.thread:
            return False
        return all(not self.info[id(c)].rowed or (name in rows.aligned and len(axes) <= 1)
                   for name, c, axes in zip(node.spec.arg_names, node.children, node.spec.events))

    def _fwd_rows_kernel(self, node, info, lengths):
        """One call for the block: row-aligned arguments and their partials as the
        block's rows (``[:nb]``: (nb,) for scalar events, (nb, d) for vectors),
        the log densities into the flat value buffer."""
        partials, spec = self.partials[id(node)], node.spec
        work = self.low.workspaces.declare(f"sw{info.value[2:]}", spec.rows.work(lengths, BLOCK))
        args, outs = [], []

        def rows(buffer, rank):
            if rank:
                return f"{buffer}[:nb]"
            self.flat_views.add(buffer)
            return f"f{buffer}[:nb]"
        for j, child in enumerate(node.children):
            kid = self.info[id(child)]
            rank = len(spec.events[j])
            args.append(rows(kid.value, rank) if kid.rowed else self._event_view(child, rank, kid.value, False, None))
            if j not in partials:
                outs.append("None")
            else:
                outs.append(rows(partials[j], rank) if kid.rowed
                            else self._event_view(child, rank, partials[j], False, None, scalar_as_array=True))
        self.flat_views.add(info.value)
        return [f"{module_alias(spec)}.{spec.rows.kernel.__name__}({', '.join(args)}, {node.keep!r}, {work}, "
                f"f{info.value}[:nb], {', '.join(outs)})"]

    def _event_view(self, child, rank, buffer, rowed, row, batch=None, scalar_as_array=False):
        """Code of one event (``rank`` axes) of ``child`` in ``buffer``: its row
        ``row`` when ``rowed``, entry ``batch`` of a whole batch of events, or the
        whole buffer. A float for a scalar event (a length-1 array with
        ``scalar_as_array``), an array of the event's shape otherwise."""
        if _rule(child).constant:
            return literal(child.value)
        event = self._shape(child)[child.ndim - rank:]
        size = sizes.extent(math.prod(event))
        batched = batch is not None and child.ndim > rank
        if rowed:
            view = f"{buffer}[{row}]"
        elif batched:
            view = f"{buffer}[{batch} * {size}:({batch} + 1) * {size}]"
        else:
            view = buffer
        if not event:
            if scalar_as_array:
                return view
            return f"{buffer}[{row}, 0]" if rowed else (f"{buffer}[{batch}]" if batched else f"{buffer}[0]")
        return view if len(event) == 1 else f"{view}.reshape({event!r})"

    def _fwd_matmul(self, node, info):
        left, right = node.children
        li, ri = self.info[id(left)], self.info[id(right)]
        if ri.rowed:
            raise ModelError(f"{self.where}: {node.label()}: the right operand {right.label()} has the rows of "
                             "data; write the product with the data on the left (x @ W.T)")
        if li.rowed:
            if left.ndim != 2:
                raise ModelError(f"{self.where}: {node.label()}: a row-aligned left operand must be a matrix "
                                 f"of rows, got shape {left.shape}")
            k = self._shape(left)[1]
            if right.ndim == 2 and self.thread:  # no BLAS on a GPU thread
                m = self._shape(right)[1]
                return self._rows([f"for q in range({m}):", "    acc = 0.0", f"    for j in range({k}):",
                                   f"        acc += {li.value}[r, j] * {self._whole(right)}[j * {m} + q]",
                                   f"    {info.value}[r, q] = acc"], True)
            if right.ndim == 2:
                m = self._shape(right)[1]
                return [f"np.dot({li.value}[:nb], {self._whole(right)}.reshape(({k}, {m})), {info.value}[:nb])"]
            return ["for r in range(nb):", "    acc = 0.0", f"    for j in range({self._inner(k)}):",
                    f"        acc += {li.value}[r, j] * {self._whole(right)}[j]", f"    {info.value}[r, 0] = acc"]
        a, b = self._shape(left), self._shape(right)
        n, k, m = (a[0] if len(a) == 2 else 1), a[-1], (b[1] if len(b) == 2 else 1)
        return [f"for i in range({n}):", f"    for q in range({m}):", "        acc = 0.0",
                f"        for j in range({k}):",
                f"            acc += {self._whole(left)}[i * {k} + j] * {self._whole(right)}[j * {m} + q]",
                f"        {info.value}[i * {m} + q] = acc"]

    def _whole(self, node):
        """Code of a whole node's flat buffer (a constant as a one-element array)."""
        if _rule(node).constant:
            raise ModelError(f"{self.where}: a product with the constant {node.label()}: use '*'")
        return self.info[id(node)].value

    def _fwd_reduce(self, node, info):
        xi, axis = self._event_axis(node, "reduces over the rows of data; only a potential's outer ld.sum may")
        outer, n, inner = math.prod(xi.event[:axis]), xi.event[axis], math.prod(xi.event[axis + 1:])
        src, dst = self._row_element(xi.value, xi.rowed), self._row_element(info.value, info.rowed)
        at = f"(o * {n} + j) * {inner} + u"
        if node.op == "sum":
            body = ["acc = 0.0", f"for j in range({n}):", f"    acc += {src(at)}", f"{dst(f'o * {inner} + u')} = acc"]
        else:
            body = ["top = -math.inf", f"for j in range({n}):", f"    top = max(top, {src(at)})",
                    "acc = 0.0", f"for j in range({n}):", f"    acc += vmath.exp({src(at)} - top)",
                    f"{dst(f'o * {inner} + u')} = top + vmath.log(acc) if top > -math.inf else -math.inf"]
        lines = [f"for o in range({outer}):", f"    for u in range({inner}):"] + indent(body, 2)
        return self._rows(lines, info.rowed)

    def _fwd_log_softmax(self, node, info):
        (x,) = node.children
        xi = self.info[id(x)]
        n = xi.event[-1] if xi.event else 1
        outer = info.size // n
        src, dst = self._row_element(xi.value, xi.rowed), self._row_element(info.value, info.rowed)
        lines = [f"for o in range({outer}):", "    top = -math.inf", f"    for j in range({n}):",
                 f"        top = max(top, {src(f'o * {n} + j')})", "    acc = 0.0", f"    for j in range({n}):",
                 f"        acc += vmath.exp({src(f'o * {n} + j')} - top)", "    lse = top + vmath.log(acc)",
                 f"    for j in range({n}):", f"        {dst(f'o * {n} + j')} = {src(f'o * {n} + j')} - lse"]
        return self._rows(lines, info.rowed)

    def _fwd_transpose(self, node, info):
        (x,) = node.children
        if self.info[id(x)].rowed:
            raise ModelError(f"{self.where}: {node.label()}: the rows of data cannot be transposed")
        a, b = self._shape(x)
        return [f"for i in range({a}):", f"    for j in range({b}):",
                f"        {info.value}[j * {a} + i] = {self._whole(x)}[i * {b} + j]"]

    def _fwd_cumsum(self, node, info):
        (x,) = node.children
        if self.info[id(x)].rowed:
            raise ModelError(f"{self.where}: {node.label()}: running sums over the rows of data are not supported "
                             "in a term with matrices")
        return ["acc = 0.0", f"for k in range({info.size}):", f"    acc += {self._whole(x)}[k]",
                f"    {info.value}[k] = acc"]

    def _fwd_reshape(self, node, info):
        """A copy in flat order: the element positions are the same."""
        xi = self.info[id(node.children[0])]
        if xi.rowed and not node.keeps_rows:
            raise ModelError(f"{self.where}: {node.label()}: the rows of data keep their axis; only the "
                             "axes of each row's values can be reshaped")
        at = self._row_element_of(info.rowed)
        return self._rows([f"for k in range({info.size}):", f"    {at(info.value, 'k')} = {at(xi.value, 'k')}"],
                          info.rowed)

    def _pick(self, node, info, forward, fixed_row=False):
        """Lines copying what ``Take`` (one position) or ``SliceAxis`` (``start +
        step * j``) picks along one axis of its source into ``node``'s value
        (``forward``), or adding ``node``'s adjoint back into the source's."""
        take = isinstance(node, ex.Take)
        xi, axis = self._event_axis(node, "picks one row of data; only whole values and the event axes of rows can "
                                          "be indexed" if take else "slices the rows of data; only whole values and "
                                          "the event axes of rows can be sliced")
        shape = xi.event
        outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
        header = [f"for o in range({outer}):"]
        if take:
            src, dst = f"(o * {shape[axis]} + {node.position}) * {inner} + u", f"o * {inner} + u"
        else:
            length = node.shape[node.axis]
            header.append(f"    for j in range({length}):")
            src = f"(o * {shape[axis]} + {node.start} + {node.step} * j) * {inner} + u"
            dst = f"(o * {length} + j) * {inner} + u"
        at = self._row_element_of(info.rowed)
        body = (f"{at(info.value, dst)} = {at(xi.value, src)}" if forward
                else f"{at(xi.adjoint, src)} += {at(info.adjoint, dst)}")
        return self._rows(header + indent([f"for u in range({inner}):", f"    {body}"], len(header)),
                          info.rowed, fixed_row)

    def _fwd_slice_axis(self, node, info):
        return self._pick(node, info, True)

    _fwd_take = _fwd_slice_axis

    def _rev_slice_axis(self, node, info, kids, fixed_row):
        return self._pick(node, info, False, fixed_row)

    _rev_take = _rev_slice_axis

    def _position(self, node):
        """Code of the position ``Element`` ``node`` reads in its source's current length."""
        return node.at(self._shape(node.children[0])[0])

    def _slice_bounds(self, node):
        """``(start, length)`` of ``Slice`` ``node`` on its source's current length."""
        return node.bounds(self._shape(node.children[0])[0])

    def _fwd_element(self, node, info):
        (x,) = node.children
        if self.info[id(x)].rowed:
            raise ModelError(f"{self.where}: {node.label()} picks one row of data")
        return [f"{info.value}[0] = {self._whole(x)}[{self._position(node)}]"]

    def _fwd_slice(self, node, info):
        (x,) = node.children
        if self.info[id(x)].rowed:
            raise ModelError(f"{self.where}: {node.label()} slices the rows of data")
        start, length = self._slice_bounds(node)
        return [f"for j in range({length}):", f"    {info.value}[j] = {self._whole(x)}[{start} + {node.step} * j]"]

    def _fwd_length(self, node, info):
        return [f"{info.value}[0] = float({self._shape(node.children[0])[0]})"]

    def _fwd_sum(self, node, info):
        (x,) = node.children
        return [f"{info.value}[0] = {self._total(self._whole(x), self.info[id(x)].size)}"]

    def _total(self, array, size):
        """Code of the sum of a flat ``array`` of ``size`` entries: ``np.sum`` on the
        CPU, a call of ``cuda_device.total`` on a GPU thread (no numpy there)."""
        return f"total({array}, {size})" if self.thread else f"np.sum({array})"

    def _fwd_gather(self, node, info):
        source, index = node.children
        si = self.info[id(source)]
        if si.rowed:
            raise ModelError(f"{self.where}: {node.label()}: only whole values can be gathered by an index")
        size = info.size
        return ["for r in range(nb):", f"    g = {self._index(index)}",
                f"    for t in range({size}):", f"        {info.value}[r, t] = {si.value}[g * {size} + t]"]

    def _whole_matrix(self, node):
        """A ``ModelError`` when a whole-matrix node (a Cholesky factor, a covariance)
        would read the rows of data."""
        if self.info[id(node)].rowed:
            raise ModelError(f"{self.where}: {node.label()} would read the rows of data; it takes whole "
                             "values (parameters, and data read whole)")

    def _scalar(self, node):
        """Code of a whole scalar's value: a constant's literal, else its buffer's entry."""
        return literal(node.value) if _rule(node).constant else f"{self._whole(node)}[0]"

    def _linalg(self, kernel):
        """Code naming ``linalg_kernels.<kernel>``; on a GPU thread its ``_reference``
        twin, loops with no BLAS or LAPACK call."""
        return f"linalg.{kernel}_reference" if self.thread else f"linalg.{kernel}"

    def _fwd_cholesky(self, node, info):
        self._whole_matrix(node)
        n = self._shape(node)[0]
        return ([f"if not {self._linalg('cholesky_forward')}({self._whole(node.children[0])}, {info.value}, {n}):"
                 "  # not positive definite: the log density is -inf"]
                + indent(self._move((info.value, None), "math.nan", n * n)))

    def _fwd_add_diag(self, node, info):
        self._whole_matrix(node)
        matrix, value = node.children
        n = self._shape(node)[0]
        added = self._scalar(value) if value.ndim == 0 else f"{self._whole(value)}[i]"
        return self._move((info.value, None), (self._whole(matrix), None), n * n) + [
            f"for i in range({n}):", f"    {info.value}[i * {n + 1}] += {added}"]

    def _solve_shape(self, node):
        """``(n, m, kernel name)`` of a triangular solve."""
        shape = self._shape(node)
        return (shape[0], shape[1] if len(shape) == 2 else 1,
                "solve_upper_transposed" if node.trans else "solve_lower")

    def _fwd_solve_triangular(self, node, info):
        self._whole_matrix(node)
        n, m, kernel = self._solve_shape(node)
        factor, rhs = node.children
        return [f"{self._linalg(kernel)}({self._whole(factor)}, {self._whole(rhs)}, {info.value}, {n}, {m})"]

    def _fwd_cholesky_logdet(self, node, info):
        self._whole_matrix(node)
        n = self._shape(node.children[0])[0]
        factor = self._whole(node.children[0])
        return ["acc = 0.0", f"for i in range({n}):", f"    acc += vmath.log({factor}[i * {n + 1}])",
                f"{info.value}[0] = 2.0 * acc"]

    def _fwd_stack(self, node, info):
        self._whole_matrix(node)
        size = self.info[id(node.children[0])].size
        return [line for k, part in enumerate(node.children)
                for line in self._move((info.value, k), self._flat_slot(part), size)]

    def _concatenate_blocks(self, node):
        """``(outer, total, [(part, its block, its offset)])``: each row of the axes
        before ``node.axis`` holds every part's block of entries in turn."""
        axis, shape = node.axis, self._shape(node)
        outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
        blocks, offset = [], 0
        for part in node.children:
            block = self._shape(part)[axis] * inner
            blocks.append((part, block, offset))
            offset += block
        return outer, offset, blocks

    def _fwd_concatenate(self, node, info):
        self._whole_matrix(node)
        outer, total, blocks = self._concatenate_blocks(node)
        lines = []
        for part, block, offset in blocks:
            lines += [f"for o in range({outer}):", f"    for u in range({block}):",
                      f"        {info.value}[o * {total} + {offset} + u] = {self._whole(part)}[o * {block} + u]"]
        return lines

    def _gp_arguments(self, node):
        """The arguments of ``gp.cov_forward`` and ``gp.cov_reverse`` before K; with a
        length scale per input dimension (``node.ard``), of ``gp.cov_forward_ard``
        and ``gp.cov_reverse_ard``: rho's buffer, and no period."""
        x, alpha, rho, *period = node.children
        dim = 1 if x.ndim == 1 else x.shape[1]
        if node.ard:
            params = [self._scalar(alpha), self._whole(rho)]
        else:
            params = [self._scalar(p) for p in (alpha, rho, *period)] + ([] if period else ["1.0"])
        return f"{node.kind}, {self._whole(x)}, {self._shape(node)[0]}, {dim}, {', '.join(params)}"

    def _fwd_gp_cov(self, node, info):
        self._whole_matrix(node)
        kernel = "cov_forward_ard" if node.ard else "cov_forward"
        return [f"gp.{kernel}({self._gp_arguments(node)}, {info.value})"]

    def _fwd_rows_of(self, node, info):
        size = info.size
        return ["for r in range(nb):", f"    for t in range({size}):",
                f"        {info.value}[r, t] = {self._whole(node.children[0])}[(b0 + r) * {size} + t]"]

    def _fwd_placeholder(self, node, info):
        return []  # set by its scan's loop

    def _fwd_scan_outputs(self, node, info):
        return []  # stored by its scan's loop

    def _scan_step(self, node, time, previous):
        """Lines of one step at ``time``: the carry placeholder set from ``init`` at
        time 0 (when ``previous`` has two entries, the first is a condition for
        that) or from ``previous``, the flat code of the carry before; each x_t
        bound; then the body."""
        carry, size = (self.info[id(node.carry)].value, None), max(math.prod(node.carry.shape), 1)
        if len(previous) == 2:
            first, before = previous
            lines = ([f"if {first}:"] + indent(self._move(carry, self._flat_slot(node.children[0]), size))
                     + ["else:"] + indent(self._move(carry, before, size)))
        else:
            lines = self._move(carry, previous[0], size)
        for placeholder, x in zip(node.inputs, node.children[1:1 + node.n_xs]):
            width = max(math.prod(placeholder.shape), 1)
            lines += self._move((self.info[id(placeholder)].value, None), (self._whole(x), time), width)
        return lines + [line for n in self.body[id(node)] for line in self._forward(n)]

    def _flat_slot(self, node):
        """A whole node's flat buffer as a slot (see ``_move``), or a constant's literal."""
        return literal(node.value) if _rule(node).constant else (self._whole(node), None)

    def _move(self, dst, src, size, op="="):
        """Lines for ``dst op src``: slots ``(buffer, k)``, block ``k`` of ``size``
        entries of a flat buffer (``k`` None: the whole buffer); ``src`` a slot or
        the code of a scalar (a constant's literal, an entry). Slices on the CPU;
        a loop on a GPU thread, where numba-cuda copies between arrays through
        its runtime (kernels have none)."""
        def block(slot):
            buffer, k = slot
            if k is None:
                return f"{buffer}[:]"
            return (f"{buffer}[{k * size}:{(k + 1) * size}]" if isinstance(k, int)
                    else f"{buffer}[{k} * {size}:({k} + 1) * {size}]")

        def entry(slot):
            buffer, k = slot
            if k is None:
                return f"{buffer}[e]"
            return f"{buffer}[{k * size} + e]" if isinstance(k, int) else f"{buffer}[{k} * {size} + e]"

        if sizes.is_one(size):  # one entry: an element, not a slice (numba clamps a slice's bounds)
            def at(slot):
                return f"{slot[0]}[{0 if slot[1] is None else slot[1]}]"
            return [f"{at(dst)} {op} {src if isinstance(src, str) else at(src)}"]
        if not self.thread:
            code = src if isinstance(src, str) else (src[0] if src[1] is None else block(src))
            return [f"{block(dst)} {op} {code}"]
        return [f"for e in range({size}):", f"    {entry(dst)} {op} {src if isinstance(src, str) else entry(src)}"]

    def _scan_buffers(self, node, info):
        """``(stored carries, segment)`` of a scan that keeps its last
        carry and has a gradient: the carries before every ``node.checkpoint``-th
        step, and the carries of one segment recomputed (None: every carry is
        stored)."""
        n, size = info.value[2:], max(math.prod(node.carry.shape), 1)
        every = node.checkpoint
        stored = self.low.workspaces.declare(f"sc{n}", -(-self._steps(node) // every) * size)
        segment = None if every == 1 else self.low.workspaces.declare(f"sg{n}", every * size)
        return stored, segment

    def _steps(self, node):
        """Code of a scan's number of steps (its sequences' rows, read at run time)."""
        return sizes.scan_length(node, self._shape)

    def _fwd_scan(self, node, info):
        time = f"time{info.value[2:]}"
        size = max(math.prod(node.carry.shape), 1)
        outputs = self.scan_outputs.get(id(node))
        store = []
        if outputs is not None:
            width = self.info[id(node.y)].size
            store += self._move((outputs.value, time), self._flat_slot(node.y), width)
        if node.keep == "all":
            before = (info.value, f"({time} - 1)")
            store += self._move((info.value, time), self._flat_slot(node.next_carry), size)
            return [f"for {time} in range({self._steps(node)}):"] + indent(
                self._scan_step(node, time, (f"{time} == 0", before)) + store)
        step = self._scan_step(node, time, (f"{time} == 0", (info.value, None)))
        if info.adjoint is not None:  # the gradient's stored carries
            stored, _ = self._scan_buffers(node, info)
            every, carry = node.checkpoint, self.info[id(node.carry)].value
            keep = self._move((stored, f"({time} // {every})"), (carry, None), size)
            step += keep if every == 1 else [f"if {time} % {every} == 0:"] + indent(keep)
        store += self._move((info.value, None), self._flat_slot(node.next_carry), size)
        return [f"for {time} in range({self._steps(node)}):"] + indent(step + store)

    # ----- reverse ------------------------------------------------------
    def _contributions(self, node, child_rowed, fixed_row=False):
        """Lines adding ``node``'s adjoint times its partials to the adjoints of its
        children that are (``child_rowed``) or are not row-aligned."""
        info = self.info[id(node)]
        kids = [(j, c) for j, c in enumerate(node.children)
                if self.info[id(c)].adjoint is not None and self.info[id(c)].rowed == child_rowed
                and id(c) not in self.shared]
        if not kids or (info.adjoint is None and not isinstance(node, _Kernel)):
            return []
        method = getattr(self, "_rev_" + _kind(node))
        return method(node, info, kids, fixed_row)

    def _seed(self, node, row, t):
        """Code of ``node``'s adjoint at ``t`` (the kernel's: 1)."""
        return "1.0" if isinstance(node, _Kernel) else self._adj(node, row, t)

    def _rev_elementwise(self, node, info, kids, fixed_row):
        op = OPS[node.op]

        def body(row, t, index):
            args = [self._at(c, row, index(c)) for c in node.children]
            return [f"{self._adj(c, row, index(c))} {self._op(c)} {self._seed(node, row, t)} * "
                    f"({op.derivatives[j].format(*args, v=self._at(node, row, t))})" for j, c in kids]
        return self._event_loops(node, node.children, body, fixed_row)

    def _rev_kernel(self, node, info, kids, fixed_row):
        partials = self.partials[id(node)]

        def body(row, t, index):
            seed = "" if isinstance(node, _Kernel) else f"{self._adj(node, row, t)} * "
            return [f"{self._adj(c, row, index(c))} {self._op(c)} {seed}"
                    f"{self._element(partials[j], info.rowed, row, t)}" for j, c in kids]
        return self._event_loops(node, node.children, body, fixed_row)

    def _rev_event_kernel(self, node, info, kids, fixed_row):
        """Each argument's partials into its adjoint: a row's for row-aligned ones
        and, in per-sample rows, whole ones; the block's sum otherwise."""
        partials, lines = self.partials[id(node)], []
        for j, child in kids:
            kid, buffer = self.info[id(child)], partials[j]
            size = kid.size
            if kid.rowed:
                lines += self._rows([f"for t in range({size}):",
                                     f"    {kid.adjoint}[r, t] {self._op(child)} {buffer}[r, t]"],
                                    True, fixed_row)
            elif len(self.low.workspaces.shapes[buffer]) == 2:
                lines += [f"for t in range({size}):", f"    {kid.adjoint}[t] += {buffer}[r, t]"]
            else:
                lines += [f"for t in range({size}):", f"    {kid.adjoint}[t] += {buffer}[t]"]
        return lines

    def _rev_matmul(self, node, info, kids, fixed_row):
        left, right = node.children
        li, ri = self.info[id(left)], self.info[id(right)]
        lines = []
        for j, child in kids:
            if li.rowed and j == 0:  # G @ B.T into the rows' adjoint
                k = self._shape(left)[1]
                m = self._shape(right)[1] if right.ndim == 2 else 1
                if right.ndim == 2 and self.thread:  # no BLAS on a GPU thread
                    lines += self._rows([f"for j in range({k}):", "    acc = 0.0", f"    for q in range({m}):",
                                         f"        acc += {info.adjoint}[r, q] * {ri.value}[j * {m} + q]",
                                         f"    {li.adjoint}[r, j] {self._op(child)} acc"], True)
                elif right.ndim == 2 and id(child) in self.assigned:
                    lines += [f"np.dot({info.adjoint}[:nb], {ri.value}.reshape(({k}, {m})).T, "
                              f"{li.adjoint}[:nb])"]
                elif right.ndim == 2:
                    tmp = self.low.workspaces.declare(f"st{info.value[2:]}", BLOCK, k)
                    lines += [f"np.dot({info.adjoint}[:nb], {ri.value}.reshape(({k}, {m})).T, {tmp}[:nb])",
                              "for r in range(nb):", f"    for j in range({k}):",
                              f"        {li.adjoint}[r, j] += {tmp}[r, j]"]
                else:
                    lines += ["for r in range(nb):", f"    for j in range({self._inner(k)}):",
                              f"        {li.adjoint}[r, j] {self._op(child)} {info.adjoint}[r, 0] * {ri.value}[j]"]
            elif li.rowed:  # A.T @ G into the whole right operand's adjoint
                k = self._shape(left)[1]
                m = self._shape(right)[1] if right.ndim == 2 else 1
                if fixed_row and not self.thread:  # the row's outer product (logdens.outer)
                    kind = "row_outer" if self._op(child) == "=" else "row_outer_add"
                    h, g, rows, n = f"{li.value}[r]", f"{info.adjoint}[r]", k, m
                    if m == 1:  # a vector's (k, 1) product is the (1, k) one: k contiguous entries
                        h, g, rows, n = g, h, 1, k
                    lines += [f"{kind}({ri.adjoint}, {h}, {g}, {rows}, {n})"]
                elif self.thread:  # one row (a GPU thread's block is one row): plain loops
                    lines += self._rows([f"for j in range({k}):", f"    for q in range({m}):",
                                         f"        {ri.adjoint}[j * {m} + q] {self._op(child)} {li.value}[r, j] * "
                                         f"{info.adjoint}[r, q]"], True, fixed_row)
                elif right.ndim == 2:
                    tmp = self.low.workspaces.declare(f"su{info.value[2:]}", k, m)
                    lines += [f"np.dot({li.value}[:nb].T, {info.adjoint}[:nb], {tmp})",
                              f"{ri.adjoint} += {tmp}.reshape({k * m})"]
                else:
                    lines += [f"for j in range({k}):", "    acc = 0.0", "    for r in range(nb):",
                              f"        acc += {li.value}[r, j] * {info.adjoint}[r, 0]",
                              f"    {ri.adjoint}[j] += acc"]
            else:  # whole @ whole
                a, b = self._shape(left), self._shape(right)
                n, k, m = (a[0] if len(a) == 2 else 1), a[-1], (b[1] if len(b) == 2 else 1)
                mine, other = (li, ri) if j == 0 else (ri, li)
                at = (f"i * {k} + j", f"j * {m} + q")
                lines += [f"for i in range({n}):", f"    for q in range({m}):", f"        for j in range({k}):",
                          f"            {mine.adjoint}[{at[j]}] += {info.adjoint}[i * {m} + q] * "
                          f"{other.value}[{at[1 - j]}]"]
        return lines

    def _rev_reduce(self, node, info, kids, fixed_row):
        x = node.children[0]
        xi, axis = self._event_axis(node, "reduces over the rows of data")
        outer, n, inner = math.prod(xi.event[:axis]), xi.event[axis], math.prod(xi.event[axis + 1:])
        here = self._row_element_of(info.rowed)
        at, own = f"(o * {n} + j) * {inner} + u", f"o * {inner} + u"
        grad = here(info.adjoint, own)
        if node.op == "logsumexp":
            grad += f" * vmath.exp({here(xi.value, at)} - {here(info.value, own)})"
        lines = [f"for o in range({outer}):", f"    for u in range({inner}):", f"        for j in range({n}):",
                 f"            {here(xi.adjoint, at)} {self._op(x) if info.rowed else '+='} {grad}"]
        return self._rows(lines, info.rowed, fixed_row)

    def _rev_log_softmax(self, node, info, kids, fixed_row):
        (x,) = node.children
        xi = self.info[id(x)]
        n = xi.event[-1] if xi.event else 1
        outer = info.size // n
        here = self._row_element_of(info.rowed)
        q = f"o * {n} + j"
        lines = [f"for o in range({outer}):", "    acc = 0.0", f"    for j in range({n}):",
                 f"        acc += {here(info.adjoint, q)}", f"    for j in range({n}):",
                 f"        {here(xi.adjoint, q)} {self._op(x) if info.rowed else '+='} {here(info.adjoint, q)} "
                 f"- vmath.exp({here(info.value, q)}) * acc"]
        return self._rows(lines, info.rowed, fixed_row)

    def _rev_transpose(self, node, info, kids, fixed_row):
        (x,) = node.children
        a, b = self._shape(x)
        return [f"for i in range({a}):", f"    for j in range({b}):",
                f"        {self.info[id(x)].adjoint}[i * {b} + j] += {info.adjoint}[j * {a} + i]"]

    def _rev_cumsum(self, node, info, kids, fixed_row):
        """The adjoint of entry k is the sum of the running sums' adjoints from k on."""
        return ["acc = 0.0", f"for k in range({info.size} - 1, -1, -1):", f"    acc += {info.adjoint}[k]",
                f"    {self.info[id(node.children[0])].adjoint}[k] += acc"]

    def _rev_reshape(self, node, info, kids, fixed_row):
        xi = self.info[id(node.children[0])]
        at = self._row_element_of(info.rowed)
        lines = [f"for k in range({info.size}):", f"    {at(xi.adjoint, 'k')} += {at(info.adjoint, 'k')}"]
        return self._rows(lines, info.rowed, fixed_row)

    def _rev_element(self, node, info, kids, fixed_row):
        return [f"{self.info[id(node.children[0])].adjoint}[{self._position(node)}] += {info.adjoint}[0]"]

    def _rev_slice(self, node, info, kids, fixed_row):
        start, length = self._slice_bounds(node)
        return [f"for j in range({length}):",
                f"    {self.info[id(node.children[0])].adjoint}[{start} + {node.step} * j] += {info.adjoint}[j]"]

    def _rev_sum(self, node, info, kids, fixed_row):
        x = self.info[id(node.children[0])]
        return self._move((x.adjoint, None), f"{info.adjoint}[0]", x.size, "+=")

    def _rev_gather(self, node, info, kids, fixed_row):
        source, index = node.children
        size = info.size
        lines = [f"g = {self._index(index)}", f"for t in range({size}):",
                 f"    {self.info[id(source)].adjoint}[g * {size} + t] += {info.adjoint}[r, t]"]
        return self._rows(lines, True, fixed_row)

    def _rev_cholesky(self, node, info, kids, fixed_row):
        n = self._shape(node)[0]
        work = self.low.workspaces.declare(f"sw{info.value[2:]}", linalg_kernels.cholesky_reverse_work(n))
        return [f"{self._linalg('cholesky_reverse')}({info.value}, {info.adjoint}, "
                f"{self.info[id(node.children[0])].adjoint}, {n}, {work})"]

    def _rev_add_diag(self, node, info, kids, fixed_row):
        n, lines = self._shape(node)[0], []
        for j, child in kids:
            adjoint = self.info[id(child)].adjoint
            if j == 0:
                lines += self._move((adjoint, None), (info.adjoint, None), n * n, "+=")
            else:
                at = "i" if child.ndim else "0"
                lines += [f"for i in range({n}):", f"    {adjoint}[{at}] += {info.adjoint}[i * {n + 1}]"]
        return lines

    def _rev_solve_triangular(self, node, info, kids, fixed_row):
        n, m, kernel = self._solve_shape(node)
        factor, rhs = (self.info[id(c)] for c in node.children)
        work = self.low.workspaces.declare(f"sw{info.value[2:]}", linalg_kernels.solve_reverse_work(n, m))
        scratch = {}  # an operand without a gradient gets a buffer the sweep may write
        for j, kid in enumerate((factor, rhs)):
            if kid.adjoint is None:
                size = n * n if j == 0 else n * m
                scratch[j] = self.low.workspaces.declare(f"sx{info.value[2:]}_{j}", size)
        a_factor, a_rhs = (scratch.get(j, kid.adjoint) for j, kid in enumerate((factor, rhs)))
        return [f"{self._linalg(kernel + '_reverse')}({factor.value}, {info.value}, {info.adjoint}, {a_factor}, {a_rhs}, "
                f"{n}, {m}, {work})"]

    def _rev_cholesky_logdet(self, node, info, kids, fixed_row):
        n = self._shape(node.children[0])[0]
        factor = self.info[id(node.children[0])]
        return [f"for i in range({n}):",
                f"    {factor.adjoint}[i * {n + 1}] += 2.0 * {info.adjoint}[0] / {factor.value}[i * {n + 1}]"]

    def _rev_concatenate(self, node, info, kids, fixed_row):
        outer, total, blocks = self._concatenate_blocks(node)
        lines = []
        for j, child in kids:
            _, block, offset = blocks[j]
            lines += [f"for o in range({outer}):", f"    for u in range({block}):",
                      f"        {self.info[id(child)].adjoint}[o * {block} + u] += {info.adjoint}[o * {total} + {offset} + u]"]
        return lines

    def _rev_stack(self, node, info, kids, fixed_row):
        size = self.info[id(node.children[0])].size
        return [line for j, c in kids for line in self._move((self.info[id(c)].adjoint, None), (info.adjoint, j),
                                                             size, "+=")]

    def _rev_gp_cov(self, node, info, kids, fixed_row):
        """The scalar parameters' partials (a tuple, ``sg``) into their adjoints; a
        vector rho's (``node.ard``) are written by the kernel into a buffer of
        its length, added to its adjoint."""
        partials = f"sg{info.value[2:]}"
        arguments = f"{self._gp_arguments(node)}, {info.value}, {info.adjoint}"
        if not node.ard:
            lines = [f"{partials} = gp.cov_reverse({arguments})"]
            return lines + [f"{self.info[id(c)].adjoint}[0] += {partials}[{j - 1}]" for j, c in kids if j > 0]
        d_rho = self.low.workspaces.declare(f"sr{info.value[2:]}", node.children[2].shape[0])
        lines = [f"{partials} = gp.cov_reverse_ard({arguments}, {d_rho})"]
        for j, c in kids:
            adjoint = self.info[id(c)].adjoint
            if j == 1:
                lines.append(f"{adjoint}[0] += {partials}")  # alpha's
            elif j == 2:
                lines += self._move((adjoint, None), (d_rho, None), node.children[2].shape[0], "+=")  # rho's
        return lines

    def _rev_rows_of(self, node, info, kids, fixed_row):
        size = info.size
        lines = [f"for t in range({size}):",
                 f"    {self.info[id(node.children[0])].adjoint}[(b0 + r) * {size} + t] += {info.adjoint}[r, t]"]
        return self._rows(lines, True, fixed_row)

    def _rev_scan_outputs(self, node, info, kids, fixed_row):
        return []  # its scan's backward loop reads its adjoint

    def _rev_placeholder(self, node, info, kids, fixed_row):
        return []

    def _rev_scan(self, node, info, kids, fixed_row):
        """The backward loop: each step's body recomputed from its stored carry, its
        adjoints zeroed and seeded (the carry's from the step after, and from the
        scan's adjoint: at every step, or the last carry's before the loop; y_t's),
        swept back, and the carry's adjoint passed on."""
        time, n, steps = f"time{info.value[2:]}", info.value[2:], self._steps(node)
        size = max(math.prod(node.carry.shape), 1)
        carried = self.low.workspaces.declare(f"sn{n}", size)  # the adjoint of the carry after the step
        body = self.body[id(node)]
        zero = self._zero_adjoints([*body, node.carry, *node.inputs])
        seed = []
        next_carry = self.info[id(node.next_carry)]
        if next_carry.adjoint is not None:
            if node.keep == "all":
                seed += self._move((next_carry.adjoint, None), (info.adjoint, time), size, "+=")
            seed += self._move((next_carry.adjoint, None), (carried, None), size, "+=")
        outputs = self.scan_outputs.get(id(node))
        y = self.info[id(node.y)] if node.has_y else None
        if outputs is not None and outputs.adjoint is not None and y.adjoint is not None:
            seed += self._move((y.adjoint, None), (outputs.adjoint, time), y.size, "+=")
        sweep = [line for b in reversed(body) for line in self._contributions(b, False)]
        carry = self.info[id(node.carry)]
        passed = self._move((carried, None), (carry.adjoint, None), size)
        for placeholder, x in zip(node.inputs, node.children[1:1 + node.n_xs]):
            xi, width = self.info[id(x)], max(math.prod(placeholder.shape), 1)
            if xi.adjoint is not None:
                passed += self._move((xi.adjoint, time), (self.info[id(placeholder)].adjoint, None), width, "+=")
        init = self.info[id(node.children[0])]
        last = self._move((init.adjoint, None), (carried, None), size, "+=") if init.adjoint is not None else []
        back = zero + seed + sweep + passed
        if node.keep == "all":
            before = (f"{time} == 0", (info.value, f"({time} - 1)"))
            step = self._scan_step(node, time, before) + back
            return (self._move((carried, None), "0.0", size)
                    + [f"for {time} in range({steps - 1}, -1, -1):"] + indent(step) + last)
        stored, segment = self._scan_buffers(node, info)
        start = self._move((carried, None), (info.adjoint, None), size)
        if segment is None:  # every carry stored
            step = self._scan_step(node, time, ((stored, time),)) + back
            return start + [f"for {time} in range({steps - 1}, -1, -1):"] + indent(step) + last
        every, k = node.checkpoint, f"k{n}"
        local = f"({time} - {k} * {every})"
        here = ((segment, local),)
        recompute = self._scan_step(node, time, here) + self._move(
            (segment, f"({local} + 1)"), self._flat_slot(node.next_carry), size)
        segment_loop = [
            *self._move((segment, "0"), (stored, k), size),
            f"for {time} in range({k} * {every}, min(({k} + 1) * {every}, {steps}) - 1):",
            *indent(recompute),
            f"for {time} in range(min(({k} + 1) * {every}, {steps}) - 1, {k} * {every} - 1, -1):",
            *indent(self._scan_step(node, time, here) + back)]
        segments = -(-steps // every)
        return start + [f"for {k} in range({segments - 1}, -1, -1):"] + indent(segment_loop) + last

    def _rev_param(self, node, info, row):
        """Lines sending a parameter's adjoint buffer into the gradient (``row``: the
        per-sample row, or None) or into its event transform's adjoint."""
        p = self.layout.params[node.name]
        target, add = self.low.target, self.low.add
        rows = Rows(False)
        if node.shape == ():
            e = entry(p)
            scale = "" if p.transform.identity else f" * {self.scalar_dx[id(node)]}"
            return [add(target(e, row or 'r', rows), f"{info.adjoint}[0]{scale}")]
        n = p.constrained_code  # the adjoint's entries: an event transform's has more than theta's
        if self.thread and row is None:  # threads add to the same entries: each from its own first
            loop = [f"for kk in range({n}):", f"    k = (kk + cuda.threadIdx.x) % {n}"]
        else:
            loop = [f"for k in range({n}):"]
        if p.transform.event:
            if not self.thread:
                return [f"aw_{p.ident}[:] += {info.adjoint}"]
            return loop + [f"    {add(self.low.event_adjoint(p, None, 'k'), f'{info.adjoint}[k]')}"]
        scale = "" if p.transform.identity else f" * dw_{p.ident}[k]"
        return loop + [f"    {add(target(entry(p, 'k'), row or 'r', rows), f'{info.adjoint}[k]{scale}')}"]

    # ----- the term -----------------------------------------------------
    def lines(self):
        whole = [n for n in self.order if not self.info[id(n)].rowed]
        rowed = [n for n in self.order if self.info[id(n)].rowed]
        head = [f"# term {self.term.name!r} (values with shape): {self._describe()}"]
        forward_whole = [line for n in whole if id(n) not in self.body_ids for line in self._forward(n)]
        if not self.rowed:  # no rows of data: one row, and every value is whole
            lines = self._whole_term(forward_whole, whole)
            return head + (["if row0 == 0:  # no rows: one thread"] + indent(lines) if self.thread else lines)
        if self.term.kind == "likelihood" and self.rows_summed and (self.per_row or self.mode == "pointwise"):
            # a scalar likelihood is one observation (Model.potential); its sum's rows
            # written one per row overran that output of one: refused when called
            message = (f"likelihood {self.term.name!r}: a sum over rows of data in a term with shape has no "
                       "per-observation output yet; write the likelihood without ld.sum (a vector, one "
                       "log-likelihood per row)")
            return head + [f"raise ValueError({message!r})"]
        n_rows = f"n_{self.layout.data_ident(self.rowed_data)}"
        if self.thread:  # this thread's rows, one at a time
            loop, block = [f"for b0 in range(row0, {n_rows}, rows_step):"], ["b1 = b0 + 1", "nb = 1"]
        else:
            loop = [f"for b0 in range(0, {n_rows}, {BLOCK}):"]
            block = [f"b1 = min(b0 + {BLOCK}, {n_rows})", "nb = b1 - b0"]
        if self.gradient:
            block += [f"{self.info[id(n)].adjoint}[:nb] = {'1.0' if n is self.root else '0.0'}"
                      for n in rowed if self.info[id(n)].adjoint is not None
                      and id(n) not in self.assigned | self.shared]
        block += [line for n in rowed for line in self._forward(n)] + self._accumulate()
        if not self.gradient:
            return head + self._threads(n_rows, forward_whole + self._flat_views() + loop + indent(block))
        zero_whole = self._zero_adjoints(whole)
        for n in reversed(rowed):
            block += self._contributions(n, True)
            if not self.per_row:
                block += self._contributions(n, False)
        if not self.per_row:
            return head + self._threads(n_rows, forward_whole + self._views(whole, None) + zero_whole
                                        + self._flat_views() + loop + indent(block) + self._whole_sweep(whole, None))
        # each row zeroed just before it is written, where it is not assigned: it
        # stays in cache (a block's rows, zeroed at once, can outgrow it)
        target = self.low.target
        row = target.row
        self.row_assigned = self._row_assigned()
        once = {n.name for n in self.order if id(n) in self.row_assigned}
        per_row = target.zero_row(row, once) + self._views(whole, row) + zero_whole + self._event_zero()
        for n in reversed(rowed):
            per_row += self._contributions(n, False, fixed_row=True)
        per_row += self._whole_sweep(whole, row) + self._row_columns(row)
        block += (["for r in range(nb):"] + indent(per_row) if per_row else []) + target.after_block(n_rows)
        return head + self._threads(n_rows, target.prologue() + forward_whole + self._flat_views()
                                    + target.before_blocks() + loop + indent(block))

    def _threads(self, n_rows, lines):
        """``lines`` run by a GPU thread only if it has rows (its whole values and
        their sweep are work and atomic adds for nothing otherwise)."""
        return [f"if row0 < {n_rows}:"] + indent(lines) if self.thread else lines

    def _flat_views(self):
        """Lines binding the flat views of block buffers (``f<buffer>``), once per term."""
        shapes = self.low.workspaces.shapes
        return [f"f{name} = {name}.reshape({math.prod(shapes[name])})"
                for name in sorted(self.flat_views - self.data_views)]

    def _accumulate(self):
        """Lines adding the block's log densities to ``lp`` (or writing each row's
        to ``out`` for the pointwise log-likelihood)."""
        info = self.info[id(self.root)]
        size, lp = info.size, self.low.lp
        if self.mode == "lp":
            if sizes.is_one(size):
                return ["for r in range(nb):", f"    {lp} += {info.value}[r, 0]"]
            if not self.thread:
                return [f"{lp} += np.sum({info.value}[:nb])"]
            return ["for r in range(nb):", f"    {lp} += {self._total(f'{info.value}[r]', size)}"]
        if self.mode == "pointwise":
            return ["for r in range(nb):", f"    out[b0 + r] = {self._total(f'{info.value}[r]', size)}"]
        return []

    def _whole_term(self, forward_whole, whole):
        info = self.info[id(self.root)]
        lines = list(forward_whole)
        total = self._total(info.value, info.size)
        if self.mode == "lp":
            lines.append(f"{self.low.lp} += {total}")
        elif self.mode == "pointwise":
            lines.append(f"out[0] = {total}")
        if not self.gradient:
            return lines
        zero = self._zero_adjoints(whole)
        row = "0" if self.per_row else None
        per_row = self.low.target.prologue() + self.low.target.zero() if self.per_row else []
        lines += per_row + self._views(whole, row) + zero + self._event_zero()
        return lines + self._whole_sweep(whole, row) + (self._row_columns("0") if self.per_row else [])

    def _zero_adjoints(self, nodes):
        """Lines zeroing the adjoints of ``nodes`` that own their buffer (not a view
        of the gradient, not shared with another's); the root's set to 1."""
        return [f"{self.info[id(n)].adjoint}[:] = {'1.0' if n is self.root else '0.0'}" for n in nodes
                if self.info[id(n)].adjoint is not None and not self.info[id(n)].in_place
                and id(n) not in self.shared]

    def _event_zero(self):
        return [f"aw_{p.ident}[:] = 0.0" for p in self._event_params()] if self.per_row else []

    def _event_params(self):
        return [self.layout.params[n.name] for n in self.order
                if _rule(n).param and self.layout.params[n.name].transform.event]

    def _whole_sweep(self, whole, row):
        """The reverse sweep of the whole nodes into the gradient (or the row ``row``)."""
        lines = []
        for n in reversed(whole):
            info = self.info[id(n)]
            if (info.adjoint is None and not isinstance(n, _Kernel)) or id(n) in self.body_ids:
                continue
            if _rule(n).param:
                lines += [] if info.in_place else self._rev_param(n, info, row)
            else:
                lines += self._contributions(n, False)
        if row is not None:
            lines += [line for p in self._event_params()
                      for line in self.low.target.event_reverse(p, row, Rows(False))]
        return lines

    def _row_columns(self, row):
        rows = Rows(False)
        return self.low.target.column_lines(row, rows) + self.low.target.fixed_column_lines(row, rows)

    def _describe(self):
        if self.term.dist is None:
            return f"potential {self.term.value.label()}"
        return f"{self.term.value.label()} ~ {self.term.dist.spec.name}(...)"


# The method suffix of each node type (``_fwd_<kind>``, ``_rev_<kind>``).
KINDS = {
    ex.Param: "param", ex.Data: "data", ex.Unary: "elementwise", ex.Binary: "elementwise",
    ex.Ternary: "elementwise", ex.LogPdf: "kernel", _Kernel: "kernel", ex.MatMul: "matmul",
    ex.MatVec: "matmul", ex.Reduce: "reduce", ex.LogSoftmax: "log_softmax", ex.Transpose: "transpose",
    ex.Reshape: "reshape", ex.SliceAxis: "slice_axis", ex.Take: "take", ex.Element: "element", ex.Slice: "slice",
    ex.Sum: "sum", ex.Gather: "gather", ex.Length: "length", ex.Cumsum: "cumsum",
    linalg.Cholesky: "cholesky", linalg.AddDiag: "add_diag", gp.GPCov: "gp_cov", _RowsOf: "rows_of",
    linalg.SolveTriangular: "solve_triangular", linalg.CholeskyLogDet: "cholesky_logdet",
    scan_nodes.Placeholder: "placeholder", scan_nodes.Scan: "scan", scan_nodes.ScanOutputs: "scan_outputs",
    linalg.Stack: "stack", linalg.Concatenate: "concatenate",
}

#: Multivariate densities whose kernels are loops over their events, with no
#: numpy call, allocation or BLAS: a GPU thread runs them (``_fwd_event_kernel``).
THREAD_EVENT_KERNELS = {"MvNormal", "MvStudentT", "Dirichlet", "DirichletMultinomial", "Multinomial",
                        "Categorical", "CategoricalLogit", "OrderedLogistic", "OrderedProbit", "LKJCholesky",
                        "LKJCorr", "GaussianRandomWalk", "AR", "ZeroSumNormal"}


def thread_unsupported(term):
    """The label of shaped ``term``'s density if a GPU thread cannot run it (a
    multivariate density not in ``THREAD_EVENT_KERNELS``), or None. Every
    node kind runs on a thread (linear algebra as the kernels' loops:
    ``_linalg``)."""
    if term.dist is not None and term.dist.spec.multivariate and term.dist.spec.name not in THREAD_EVENT_KERNELS:
        return f"{term.dist.spec.name} (a multivariate density)"
    return None
