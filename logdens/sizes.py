"""Lengths read at run time in terms with shape (``logdens.shaped``).

The rows of a data array that such a term reads whole (a scan's series, a
Gaussian process's inputs, a series observed as one event) are read when the
kernel runs, like the rows of a plate, so new data of another length need no
new compile. Each node's shape follows from its children's by its rule
(``Rule.sized``), with a ``Size`` wherever a length comes from data rows. The
same walk runs twice: when the term's code is written, with each data array's
rows as code (``n_x_5``), so that buffers and loops take their lengths at run
time; and on every ``set_data``, with the current row counts, so that every
pair of lengths the code relies on agrees (``SizeWalk.unify``) before it runs.
A node whose rule cannot take a run-time length (a reversed slice) keeps
its build shape, and the data below it keep their lengths.
"""

import operator

from logdens import expr as ex
from logdens.expr import ModelError


class Size:
    """A length known at run time: its ``code`` in generated source (``n_x_5``,
    ``(n_x_5 * n_x_5)``) and its ``value`` (the build-time rows when code is
    written, the current rows when data are checked); ``shown`` names the data
    array of a length that is its rows (None for a length computed from them).
    Arithmetic with ints and sizes gives sizes; comparing with a number raises,
    since code written for one value would be wrong for the next (``is_one``)."""

    __slots__ = ("code", "value", "shown")

    def __init__(self, code, value, shown=None):
        self.code, self.value, self.shown = code, value, shown

    def __str__(self):
        return self.code

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, Size) and other.code == self.code

    def __hash__(self):
        return hash(self.code)

    def _compare(self, other):
        raise TypeError(f"{self.code} is a length read at run time: it has no order at build time")

    __lt__ = __le__ = __gt__ = __ge__ = _compare

    def _operator(op, reflected=False):  # noqa: N805 (builds the methods below)
        if reflected:
            return lambda self, other: _combine(other, self, op)
        return lambda self, other: _combine(self, other, op)

    __add__, __radd__ = _operator("+"), _operator("+", True)
    __sub__, __rsub__ = _operator("-"), _operator("-", True)
    __mul__, __rmul__ = _operator("*"), _operator("*", True)
    __floordiv__, __rfloordiv__ = _operator("//"), _operator("//", True)
    del _operator

    def __neg__(self):
        return Size(f"(-{self.code})", -self.value)


_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv}


def _combine(a, b, op):
    """``a op b`` with at least one a ``Size``; identities folded (``n * 1`` is ``n``)."""
    if op == "*" and (a == 0 or b == 0):
        return 0
    if (op in ("*", "//") and b == 1) or (op in ("+", "-") and b == 0):
        return a
    if (op == "*" and a == 1) or (op == "+" and a == 0):
        return b
    return Size(f"({a} {op} {b})", _OPS[op](value(a), value(b)))


def value(n):
    """The number of a length: an int's own, a ``Size``'s value."""
    return n.value if isinstance(n, Size) else n


def extent(n):
    """A buffer's length for ``n`` entries: at least one (a scalar's buffer), a
    run-time length as it is."""
    return n if isinstance(n, Size) else max(n, 1)


def is_one(n):
    """Whether ``n`` is 1 whatever the data: a run-time length never is."""
    return not isinstance(n, Size) and n == 1


def runtime_rows(node):
    """Whether the rows of data node ``node`` are read at run time: those of a
    named array (``set_data`` may change them), not those of a numpy array
    written into the model, which keeps its shape (constant loops over it)."""
    return node.ndim > 0 and node.name is not None


def scan_length(scan, shape_of):
    """A scan's steps: the first axis of its sequences (``shape_of(node)``: a
    sized node's shape), or its fixed ``length``."""
    return shape_of(scan.children[1])[0] if scan.n_xs else scan.length


class Kernel:
    """A term's distribution as a node: its children the term's arguments, its
    shape their plate (``expr.kernel_plate``)."""

    def __init__(self, term):
        self.children, self.spec = term.args, term.dist.spec
        self.shape = ex.kernel_plate(self.spec, term.args, lambda: f"term {term.name!r}")

    ndim = property(lambda self: len(self.shape))

    def label(self):
        return f"{self.spec.name} kernel"


class SizeWalk:
    """The context of one term's walk (``Rule.sized``): ``data_shape(node)`` and
    ``param_shape(node)``, a data node's or a parameter's shape (a ``Size``
    where its length is read at run time; by default a parameter's build
    shape); ``shapes``, id(node) -> shape of the nodes sized so far; ``where``,
    the term, for errors. Lengths found equal are one from then on
    (``unify``): a run-time length equal to a fixed one is that number."""

    def __init__(self, where, data_shape, param_shape=lambda node: node.shape):
        self.where, self.data_shape, self.param_shape, self.shapes = where, data_shape, param_shape, {}
        self.aliases = {}  # a Size's code -> the length it was unified with

    def resolve(self, n):
        """The length ``n`` stands for after the unifications so far."""
        while isinstance(n, Size) and n.code in self.aliases:
            n = self.aliases[n.code]
        return n

    def shape(self, node):
        return tuple(self.resolve(n) for n in self.shapes[id(node)])

    def visit(self, node, below):
        """``node``'s shape from its children's, ``below``: by its rule, a term's
        kernel by ``kernel_shape``."""
        from logdens import rules  # the rules size nodes with this module's helpers
        if isinstance(node, Kernel):
            shape = kernel_shape(node.spec, node, below, self)[0]
        else:
            shape = rules.rule(node).sized(node, below, self)
        self.shapes[id(node)] = shape
        return shape

    def term(self, term):
        """Size every node of ``term``: a potential's value, or the arguments and
        the kernel of its distribution; return the value's or the kernel's shape."""
        from logdens import rules
        if term.dist is None:
            return rules.fold(term.value, self.visit, self.shapes)
        below = [rules.fold(a, self.visit, self.shapes) for a in term.args]
        return self.visit(Kernel(term), below)

    def unify(self, a, b, node):
        """The length where ``a`` and ``b`` must agree (for ``node``): a
        ``ModelError`` when their values differ; a fixed length rather than a
        run-time one (the code may then use the number), which then stands for
        the other everywhere (``resolve``)."""
        a, b = self.resolve(a), self.resolve(b)
        if value(a) != value(b):
            raise ModelError(f"{self.where}: {node.label()} needs {_describe(a)} and {_describe(b)} to agree")
        if a == b or not isinstance(b, Size) and not isinstance(a, Size):
            return a
        if isinstance(a, Size) and not isinstance(b, Size):
            a, b = b, a
        self.aliases[b.code] = a
        return a


def _describe(n):
    if not isinstance(n, Size):
        return f"the length {n} it was built with"
    return f"the {n.value} rows of data {n.shown}" if n.shown else f"a length of {n.value}"


def broadcast(node, pairs, walk):
    """The run-time shape of ``node`` (of build shape ``node.shape``) that
    broadcasts ``pairs`` of (build shape, run-time shape), numpy's way (trailing
    axes aligned): an axis of build length 1 under a longer one must stay 1, the
    others agree."""
    built_out = node.shape
    out = [None] * len(built_out)
    for built, run in pairs:
        offset = len(built_out) - len(built)
        for k, (b, n) in enumerate(zip(built, run)):
            axis = offset + k
            if b == 1 and built_out[axis] != 1:
                walk.unify(n, 1, node)
            else:
                out[axis] = n if out[axis] is None else walk.unify(out[axis], n, node)
    return tuple(b if n is None else n for b, n in zip(built_out, out))


def kernel_shape(spec, node, below, walk):
    """``(shape, event lengths)`` of a distribution's kernel over ``node``'s
    children (``x`` first) of run-time shapes ``below``: a univariate kernel
    broadcasts them; a multivariate one's named event axes agree across its
    arguments (``Spec.events``) and the rest broadcasts."""
    if not spec.multivariate:
        return broadcast(node, [(c.shape, s) for c, s in zip(node.children, below)], walk), {}
    lengths, batches = {}, []
    for child, shape, axes in zip(node.children, below, spec.events):
        cut = len(shape) - len(axes)
        for axis, n in zip(axes, shape[cut:]):
            lengths[axis] = walk.unify(lengths[axis], n, node) if axis in lengths else n
        batches.append((child.shape[:cut], shape[:cut]))
    return broadcast(node, batches, walk), lengths
