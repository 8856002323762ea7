"""Model expressions: immutable nodes with numpy broadcasting semantics.

An expression is a DAG over parameters, data and constants. Elementwise
operations broadcast like numpy over 1-D plates; ``a[idx]`` gathers by an
integer data array, ``X @ beta`` multiplies a data matrix by a parameter
vector row by row, ``ld.sum`` reduces to a scalar, and constant slices select
a strided part of a vector, and ``dist.logpdf(x)`` of any distribution is an
elementwise node too. The engine lowers these nodes to fused loops; the
numpy interpreter in ``logdens.evaluate`` computes them directly.
"""

import builtins
import numbers

import numpy as np

from logdens.ops import OPS

builtins_sum = builtins.sum  # this module's ``sum`` is the expression's


class ModelError(ValueError):
    """A model is malformed: a bad name, shape, index or data array."""


class ModelWarning(UserWarning):
    """Something in a model a user should know of: values it imputes, say."""


#: How many levels of an expression ``label()`` shows: a shared sub-expression
#: is written out at every use, so an unbounded label of an unrolled recursion
#: has a length exponential in its depth.
LABEL_DEPTH = 4


def plate_shape(nodes, what):
    """The shape of an elementwise combination of ``nodes``: numpy's broadcasting,
    stretching a length-1 axis only where its length cannot change.

    The one shape rule for every place expressions meet (operators, the
    arguments of a term, a potential): trailing axes align, missing leading
    axes broadcast, aligned lengths must be equal, except that a length-1
    axis of a value with two or more axes stretches (``sd[:, None] * L``)
    unless it is the leading axis of a value that may have rows of data
    (``Expr.fixed_leading``): a data array of length 1 today may have length
    5 after ``set_data``. Vectors never stretch. ``what()`` describes the
    site in the error; it is called only when there is one (labels cost
    time).
    """
    shaped = [n for n in nodes if n.shape != ()]
    if not shaped:
        return ()
    if all(n.ndim == 1 for n in shaped):
        for node in shaped[1:]:
            if node.shape != shaped[0].shape:
                one = " (a length-1 vector does not broadcast: use a scalar)" if 1 in (
                    node.shape[0], shaped[0].shape[0]) else ""
                raise ModelError(f"{what()}: {shaped[0].label()} has length {shaped[0].shape[0]} but "
                                 f"{node.label()} has length {node.shape[0]}{one}")
        return shaped[0].shape
    widest = max(shaped, key=lambda n: n.ndim)
    out = list(widest.shape)
    for axis in range(widest.ndim):
        lengths = {}
        for node in shaped:
            k = axis - (widest.ndim - node.ndim)  # the node's own axis; below 0: it has none there
            if k >= 0 and not (node.ndim >= 2 and node.shape[k] == 1 and (k > 0 or node.fixed_leading)):
                lengths.setdefault(node.shape[k], node)
        if len(lengths) > 1:
            first, second = list(lengths.values())[:2]
            raise ModelError(f"{what()}: shapes {first.shape} ({first.label()}) and {second.shape} "
                             f"({second.label()}) do not broadcast: aligned from the right, axes must have "
                             "equal lengths (a length-1 axis stretches unless it may hold rows of data)")
        out[axis] = next(iter(lengths), 1)
    return tuple(out)


def stretches_leading(child, shape):
    """Whether ``child``'s leading axis, of length 1, stretches to that of
    ``shape`` (``plate_shape``): a child of that rank read whole at each row."""
    return child.ndim >= 2 and child.shape[0] == 1 != shape[0] and child.fixed_leading


def _leading_fixed(node):
    """``fixed_leading`` of an elementwise node: that of each child of its rank."""
    return all(c.fixed_leading for c in node.children if c.ndim == node.ndim)


def _axis(axis, ndim, what):
    """``axis`` as a non-negative position among ``ndim`` axes."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ModelError(f"{what}: axis {axis!r} is out of range for {ndim} axes")
    return int(axis) % ndim


class Expr:
    """Base of every node; gives the operators users write."""

    shape = ()
    children = ()
    #: A leaf whose value changes between calls: a parameter, a scan's carry.
    varies = False
    #: The leading axis cannot be rows of data, so a length 1 there stretches
    #: (``plate_shape``): a matrix parameter, an array written into the model,
    #: a new axis (``x[None]``), and what is elementwise of such values.
    fixed_leading = False

    def __add__(self, other):
        return Binary("add", self, as_expr(other))

    def __radd__(self, other):
        return Binary("add", as_expr(other), self)

    def __sub__(self, other):
        return Binary("sub", self, as_expr(other))

    def __rsub__(self, other):
        return Binary("sub", as_expr(other), self)

    def __mul__(self, other):
        return Binary("mul", self, as_expr(other))

    def __rmul__(self, other):
        return Binary("mul", as_expr(other), self)

    def __truediv__(self, other):
        return Binary("div", self, as_expr(other))

    def __rtruediv__(self, other):
        return Binary("div", as_expr(other), self)

    def __pow__(self, other):
        other = as_expr(other)
        if isinstance(other, Const) and other.value == 2.0:
            return Unary("square", self)
        return Binary("pow", self, other)

    def __rpow__(self, other):
        return Binary("pow", as_expr(other), self)

    def __neg__(self):
        return Unary("neg", self)

    # Comparisons give 1.0 or 0.0, for ld.where; == and != too, as numpy's and JAX's.
    # Nodes hash by identity, so dicts and sets of nodes (and lru_cache keyed by
    # one) still work: a lookup compares a key with ``==`` only when the hashes
    # are equal, and distinct live objects have distinct identity hashes. ``in``
    # on a list, ``list.index`` and tuple equality do compare, and the truth of
    # a comparison raises (``__bool__``): code that looks for a node keys by
    # ``id`` or compares with ``is``.
    __hash__ = object.__hash__

    def __eq__(self, other):
        return _compare("eq", self, other)

    def __ne__(self, other):
        return _compare("ne", self, other)

    def __lt__(self, other):
        return Binary("lt", self, as_expr(other))

    def __le__(self, other):
        return Binary("le", self, as_expr(other))

    def __gt__(self, other):
        return Binary("gt", self, as_expr(other))

    def __ge__(self, other):
        return Binary("ge", self, as_expr(other))

    def __pos__(self):
        return self

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    @property
    def T(self):
        """The transpose of a matrix (a vector or scalar is its own)."""
        return Transpose(self) if self.ndim == 2 else self

    def reshape(self, *shape):
        """The same elements in C order with ``shape`` (one entry may be -1), as
        numpy's ``reshape``; rows of data keep their axis."""
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return Reshape(self, shape)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        """``ld.sum(self, axis, keepdims)``; ``np.sum(x)`` calls it (``dtype`` and
        ``out`` must be None)."""
        _no_numpy_options(dtype, out, "sum")
        return sum(self, axis, keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        """``ld.mean(self, axis, keepdims)``; ``np.mean(x)`` calls it."""
        _no_numpy_options(dtype, out, "mean")
        return mean(self, axis, keepdims)

    def __getitem__(self, index):
        if index is None or index is Ellipsis or (isinstance(index, tuple) and any(
                part is None or part is Ellipsis for part in index)):
            return _index_with_new_axes(self, index if isinstance(index, tuple) else (index,))
        if isinstance(index, tuple):
            return _take_tuple(self, index)
        if isinstance(index, slice):
            if self.ndim > 1:
                return self if index == slice(None) else SliceAxis(self, index, 0)
            return Slice(self, index)
        if _is_int(index):
            return Element(self, int(index)) if self.ndim <= 1 else Take(self, int(index), 0)
        return Gather(self, _index_array(index, lambda: f"{self.label()}[{_index_text(index)}]"))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy's ufuncs on expressions, as numpy users write them: ``np.exp(mu)``,
        ``np.maximum(x, 0)``, and numpy on the left of an operator (``y - mu``,
        ``np.float64(2) * mu``, ``X @ beta``) build the expression the operator
        or ``ld.<function>`` would; any other ufunc is a TypeError naming it."""
        name = _UFUNCS.get(ufunc)
        if method != "__call__" or kwargs or name is None:
            raise TypeError(f"np.{ufunc.__name__} of a model expression is not supported; use the "
                            "operators and ld.<function> (ld.exp, ld.sum, ...)")
        if name == "matmul":
            return matmul(*inputs)
        args = [as_expr(a) for a in inputs]
        return (Unary, Binary)[len(args) - 1](name, *args)

    def __array_function__(self, func, types, args, kwargs):
        """numpy's functions on expressions (``np.concatenate([a, b])``, ``np.dot(X,
        w)``, ``np.cumsum(z)``) build what ``ld.<function>`` would
        (``logdens.numpy_functions``); any other is a TypeError naming it."""
        from logdens.numpy_functions import ARRAY_FUNCTIONS  # it builds on linalg, which imports this module
        build = ARRAY_FUNCTIONS.get(func)
        if build is None:
            name = func.__module__.replace("numpy", "np", 1) + "." + func.__name__
            raise TypeError(f"{name} of a model expression is not supported; use the operators and "
                            "ld.<function> (ld.exp, ld.sum, ld.concatenate, ...)")
        return build(*args, **kwargs)

    def __bool__(self):
        raise TypeError(f"{self.label()}: a model expression has no truth value (a Python if, and, or, "
                        "`in` on a list): its value is known only when the model runs; choose per "
                        "element with ld.where(x > 0, a, b), and test whether two nodes are one with `is`")

    def __float__(self):
        raise TypeError(f"{self.label()}: a model expression is not a Python number (math.log(x), "
                        "float(x)): its value is known only when the model runs; use the functions "
                        "that build expressions: ld.log, ld.exp, ld.sqrt, ...")

    def __index__(self):
        raise TypeError(f"{self.label()}: a model expression is not a Python integer (int(x), range(x), "
                        "a list or array indexed by it): lengths and positions are fixed when the model "
                        "is built; to pick elements by data, index an expression with an integer data "
                        "array (a[m.data('idx', ints)])")

    def __len__(self):
        raise TypeError(f"len() of a model expression ({self.label()}): a data length may change with "
                        "set_data, so it is not a Python number; x.shape[0] is the length when the model "
                        "is built, ld.mean divides by the length at run time")

    @property
    def ndim(self):
        return len(self.shape)

    def label(self, depth=LABEL_DEPTH):
        """A short readable rendering, used in generated-code comments and errors:
        ``depth`` levels, deeper ones shown as ``...``."""
        if depth <= 0 and self.children:
            return "..."
        return self._format([c.label(depth - 1) for c in self.children])

    def _format(self, children):
        return type(self).__name__

    def leaves(self):
        """Every leaf node below (and including) this one, each once."""
        return [node for node in nodes(self) if not node.children]

    def depends_on_params(self):
        return any(leaf.varies for leaf in self.leaves())

    def logpdf_expression(self, dist, x):
        """``dist.logpdf(x)`` when ``x`` or a parameter of ``dist`` is an expression
        (the distributions call this; they know nothing of models)."""
        if dist.spec.multivariate:
            raise ModelError(f"{dist.spec.name}.logpdf of a model expression: a multivariate "
                             "density is a term of its own (m.observe or m.param) for now")
        return LogPdf(dist.spec, [as_expr(x)] + [as_expr(v) for v in dist.params.values()])


#: The ufuncs (numpy's, scipy.special's) an expression node computes -> its op's
#: name: the op table's own numpy functions, the comparisons its indicators wrap.
_UFUNCS = {**{op.numpy: op.name for op in OPS.values() if isinstance(op.numpy, np.ufunc)},
           np.less: "lt", np.less_equal: "le", np.greater: "gt", np.greater_equal: "ge", np.equal: "eq",
           np.not_equal: "ne", np.matmul: "matmul"}


def _compare(op, node, other):
    """``node == other`` (``op`` "eq") or ``!=`` ("ne"): a comparison node, or
    NotImplemented for a value that is no number, array or expression (a
    string, None, a ``sizes.Size``), so that Python compares by identity."""
    try:
        other = as_expr(other)
    except TypeError:
        return NotImplemented
    return Binary(op, node, other)


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_full(part):
    """Whether an index ``part`` is ``:`` (never comparing an array or expression with a slice)."""
    return isinstance(part, slice) and part == slice(None)


def _index_text(part):
    """An index part as written, for errors: ``0``, ``1:``, ``cidx``, ``array(3,)``."""
    if isinstance(part, slice):
        return slice_text(part)
    if isinstance(part, Expr):
        return part.label()
    return f"array{np.shape(part)}" if isinstance(part, (np.ndarray, list)) else repr(part)


def _index_array(part, what):
    """``part`` of an index as the integer data array that gathers by it, or a
    vector of discrete labels (``mu[z]``: summed out, ``logdens.marginalize``);
    a ModelError naming the index (``what()``: the indexing as written) otherwise."""
    array = as_expr(part)
    if isinstance(array, Param) and array.constraint.integer and array.ndim == 1:
        return array
    if not isinstance(array, Data) or not array.integer:
        raise ModelError(f"{what()}: index {_index_text(part)} must be an integer data array "
                         "(m.data(name, ints)), an integer or a slice")
    return array


#: Columns up to which ``W[i, j]`` (two index arrays) is built from one gather per column.
MAX_PAIRED_COLUMNS = 32


def _paired(matrix, rows, columns):
    """``matrix[rows, columns]`` as numpy pairs them: per row n, the element
    ``matrix[rows[n], columns[n]]``. Built from nodes the engine has: column c
    gathered by ``rows`` where ``columns`` is c (K gathers per row: hence
    ``MAX_PAIRED_COLUMNS``), starting from row 0 gathered by ``columns``, never
    chosen but a gather that checks ``columns`` against the column count as
    every gather checks its index."""
    picked = Gather(Take(matrix, 0, 0), columns)
    for c in range(matrix.shape[1]):
        picked = Ternary("where", Binary("eq", columns, Const(c)), Gather(Take(matrix, c, 1), rows), picked)
    return picked


def _take_tuple(node, index):
    """``x[:, j]`` and ``x[i, j]``: full slices and integer positions, one per
    axis; and, as numpy's, one integer data array after integers only
    (``ab[idx, 0]``, ``W[0, idx, :]``): the rest of the index first, whose
    leading axis is then the array's, gathered by it (``ab[:, 0][idx]``); or
    two arrays as the two indices of a matrix, paired (``W[i, j]``, ``_paired``)."""
    def what():
        return f"{node.label()}[{', '.join(_index_text(part) for part in index)}]"
    if len(index) > node.ndim:
        raise ModelError(f"{what()}: too many indices for shape {node.shape}")
    arrays = [k for k, part in enumerate(index) if not (_is_int(part) or isinstance(part, slice))]
    if arrays:
        k = arrays[0]
        rows = _index_array(index[k], what)
        if len(arrays) > 1:
            if arrays == [0, 1] and node.ndim == 2 and node.shape[1] <= MAX_PAIRED_COLUMNS:
                return _paired(node, rows, _index_array(index[1], what))
            raise ModelError(f"{what()}: two integer arrays pair elementwise only as the two indices of a "
                             f"matrix of at most {MAX_PAIRED_COLUMNS} columns; for elements [i, j] of a larger "
                             f"one index its flattened values: {node.label()}.reshape(-1)[k] with integer "
                             f"data k = i * {node.shape[-1]} + j")
        if not all(_is_int(part) for part in index[:k]):
            raise ModelError(f"{what()}: an integer data array comes first or after integers only: its "
                             "axis is the rows of the result, and rows of data lead; for a matrix, "
                             f"{node.label()}.T[{rows.label()}] is numpy's {node.label()}[:, {rows.label()}] "
                             "transposed")
        return Gather(_take_tuple(node, index[:k] + (slice(None),) + index[k + 1:]), rows)
    axis = 0
    for part in index:
        if _is_int(part):
            node = Element(node, int(part)) if node.ndim == 1 else Take(node, int(part), axis)
        elif _is_full(part):
            axis += 1
        else:
            node = Slice(node, part) if node.ndim == 1 else SliceAxis(node, part, axis)
            axis += 1
    return node


def _no_numpy_options(dtype, out, what):
    if dtype is not None or out is not None:
        raise TypeError(f"np.{what} of a model expression takes no dtype= or out=")


def _index_with_new_axes(node, index):
    """``x[:, None]``, ``x[None]``, ``x[..., None]``: numpy's indexing where ``None``
    inserts an axis of length 1 and ``...`` stands for the axes not named; the
    other parts index as they do without them."""
    ellipses = [k for k, part in enumerate(index) if part is Ellipsis]
    consumed = builtins_sum(part is not None and part is not Ellipsis for part in index)
    if len(ellipses) > 1 or consumed > node.ndim:
        raise ModelError(f"{node.label()}{list(index)}: an index of shape {node.shape} names at most "
                         f"{node.ndim} axes and one ellipsis")
    if ellipses:
        k = ellipses[0]
        index = index[:k] + (slice(None),) * (node.ndim - consumed) + index[k + 1:]
    rest = tuple(part for part in index if part is not None)
    if all(_is_full(part) for part in rest):
        picked = node
    else:
        picked = node[rest if len(rest) != 1 else rest[0]]
    shape, axes = [], iter(picked.shape)
    for part in index:
        if part is None:
            shape.append(1)
        elif not _is_int(part):
            shape.append(next(axes))
    shape += list(axes)
    return picked if tuple(shape) == picked.shape else Reshape(picked, shape)


class Param(Expr):
    """A model parameter's constrained value (``shape`` () or (n,))."""

    varies = True

    def __init__(self, name, shape, constraint):
        self.name, self.shape, self.constraint = name, shape, constraint
        self.fixed_leading = len(shape) >= 2

    def _format(self, children):
        return self.name


def frozen_array(value, what):
    """A read-only copy of a numeric, real array: a model keeps the data it was
    given, whatever the caller later does to its own array."""
    if np.ma.is_masked(value):  # masked entries are missing values, NaN (logdens.missing)
        value = np.ma.filled(value.astype(float), np.nan)
    array = np.array(value, copy=True)
    if np.iscomplexobj(array):
        raise ModelError(f"{what}: complex data are not supported (dtype {array.dtype})")
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise ModelError(f"{what}: must be a numeric array, got dtype {array.dtype}")
    array.flags.writeable = False
    return array


class Data(Expr):
    """A named data array, replaceable by ``set_data`` (its length may change)."""

    def __init__(self, name, value, integer=False):
        self.name, self.integer = name, integer
        self.shape = np.shape(value)
        self.value = value
        self.fixed_leading = name is None  # an array written into the model keeps its shape

    def _format(self, children):
        return self.name if self.name is not None else f"array{self.shape}"


class Const(Expr):
    """A scalar constant: a real number or +-inf (``logaddexp(x, -inf)``); NaN is refused."""

    def __init__(self, value):
        if np.iscomplexobj(value):
            raise ModelError(f"constant {value!r}: complex numbers are not supported")
        self.value = float(value)
        if self.value != self.value:
            raise ModelError("a constant in a model expression is NaN")

    def _format(self, children):
        return repr(self.value)


class Unary(Expr):
    """An elementwise function of one expression (``exp``, ``log``, ``neg``, ...)."""

    def __init__(self, op, arg):
        self.op, self.children = op, (arg,)
        self.shape = plate_shape((arg,), lambda: f"{op}({arg.label()})")
        self.fixed_leading = _leading_fixed(self)

    def _format(self, children):
        return f"{self.op}({children[0]})"


class Binary(Expr):
    """An elementwise function of two expressions, broadcasting like numpy."""

    def __init__(self, op, left, right):
        self.op, self.children = op, (left, right)
        self.shape = plate_shape(self.children, self.label)
        self.fixed_leading = _leading_fixed(self)

    def _format(self, children):
        left, right = children
        symbol = OPS[self.op].symbol
        if symbol is not None:
            return f"({left} {symbol} {right})"
        return f"{self.op}({left}, {right})"


class Ternary(Expr):
    """An elementwise function of three expressions (``where``), broadcasting."""

    def __init__(self, op, first, second, third):
        self.op, self.children = op, (first, second, third)
        self.shape = plate_shape(self.children, self.label)
        self.fixed_leading = _leading_fixed(self)

    def _format(self, children):
        return f"{self.op}({', '.join(children)})"


class Gather(Expr):
    """``source[index]``: elements of a vector picked by an integer data array."""

    def __init__(self, source, index):
        if source.ndim not in (1, 2):
            raise ModelError(f"{source.label()}[{index.label()}]: only vectors and matrices (rows) can be "
                             f"gathered, got shape {source.shape}")
        if index.ndim != 1:
            raise ModelError(f"{source.label()}[{index.label()}]: the index must be a 1-D integer "
                             f"array, got shape {index.shape}")
        self.children, self.shape = (source, index), index.shape + source.shape[1:]

    def _format(self, children):
        return f"{children[0]}[{children[1]}]"


class Slice(Expr):
    """``source[start:stop:step]`` with constant bounds, as numpy reads them:
    ``index`` keeps them as written (``y[1:]``, ``y[:-1]``: from the end), so
    that a source of another length is sliced the same way (``bounds``);
    ``start``, ``stop``, ``step`` are those resolved at the build length."""

    def __init__(self, source, index):
        if source.ndim != 1:
            raise ModelError(f"{source.label()}[...]: only vectors can be sliced")
        self.index = index
        self.start, self.stop, self.step = index.indices(source.shape[0])
        self.children = (source,)
        self.shape = (len(range(self.start, self.stop, self.step)),)

    def bounds(self, n):
        """``(start, length)`` of the slice of a source of length ``n``: ints for an
        int ``n``, code for a run-time length (its code, or a ``sizes.Size``). A
        negative step keeps the build bounds (``runtime``)."""
        if not self.runtime:
            return self.start, self.shape[0]
        if _is_int(n) or str(n).isdigit():
            start, stop, step = self.index.indices(int(n))
            return start, len(range(start, stop, step))
        n = str(n)

        def clamp(bound, default):
            if bound is None:
                return default
            return f"min({bound}, {n})" if bound >= 0 else f"max({n} - {-bound}, 0)"
        start, stop, step = clamp(self.index.start, "0"), clamp(self.index.stop, n), self.step
        span = f"{stop} - {start}" if start != "0" else stop
        return start, (f"max({span}, 0)" if step == 1 else f"max(({span} + {step - 1}) // {step}, 0)")

    @property
    def runtime(self):
        """Whether the slice follows its source's run-time length (a positive step)."""
        return self.step > 0

    def _format(self, children):
        return f"{children[0]}[{self.text()}]"

    def text(self):
        """The bounds as written: ``1:``, ``:-1``, ``::2``."""
        return slice_text(self.index)


def slice_text(index):
    """A slice's bounds as written: ``1:``, ``:-1``, ``::2``."""
    start, stop, step = ("" if b is None else str(b) for b in (index.start, index.stop, index.step))
    return f"{start}:{stop}" + (f":{step}" if step else "")


class Element(Expr):
    """``source[k]`` with a constant integer ``k`` (negative counts from the end): a scalar."""

    def __init__(self, source, position):
        if source.ndim != 1:
            raise ModelError(f"{source.label()}[{position}]: only vectors can be indexed")
        n = source.shape[0]
        if not -n <= position < n:
            raise ModelError(f"{source.label()}[{position}]: index {position} is out of bounds for "
                             f"length {n}")
        self.children, self.position = (source,), position % n
        self.index = position  # as written: a negative one counts from the end of the current length

    def _format(self, children):
        return f"{children[0]}[{self.index}]"

    def at(self, n):
        """The position read in a source of length ``n`` (an int, or a run-time
        length: its code or a ``sizes.Size``)."""
        if self.index >= 0:
            return self.index
        return n + self.index if _is_int(n) else f"{n} - {-self.index}"


class MatVec(Expr):
    """``X @ beta``: a data matrix (n, d) times a parameter vector (d,), row by row."""

    def __init__(self, matrix, vector):
        if not isinstance(matrix, Data) or matrix.ndim != 2:
            raise ModelError(f"{matrix.label()} @ {vector.label()}: the left operand must be a 2-D data matrix")
        if not isinstance(vector, Param) or vector.ndim != 1:
            raise ModelError(f"{matrix.label()} @ {vector.label()}: the right operand must be a vector parameter")
        if matrix.shape[1] != vector.shape[0]:
            raise ModelError(f"{matrix.label()} @ {vector.label()}: shapes {matrix.shape} and "
                             f"{vector.shape} do not match")
        self.children, self.shape = (matrix, vector), (matrix.shape[0],)

    def _format(self, children):
        return f"({children[0]} @ {children[1]})"


class MatMul(Expr):
    """``a @ b`` with numpy's rules for vectors and matrices: (n, k) @ (k, m),
    (n, k) @ (k,), (k,) @ (k, m), (k,) @ (k,)."""

    def __init__(self, left, right):
        what = f"{left.label()} @ {right.label()}"
        if left.ndim not in (1, 2) or right.ndim not in (1, 2):
            raise ModelError(f"{what}: shapes {left.shape} and {right.shape}: only vectors and matrices multiply")
        if left.shape[-1] != right.shape[0]:
            raise ModelError(f"{what}: shapes {left.shape} and {right.shape} do not match "
                             f"({left.shape[-1]} against {right.shape[0]})")
        self.children, self.shape = (left, right), left.shape[:-1] + right.shape[1:]

    def _format(self, children):
        return f"({children[0]} @ {children[1]})"


def matmul(a, b):
    """``a @ b``: a data matrix times a parameter vector keeps its own fast
    product (``MatVec``); every other pair is a ``MatMul``."""
    a, b = as_expr(a), as_expr(b)
    if isinstance(a, Data) and a.ndim == 2 and isinstance(b, Param) and b.ndim == 1:
        return MatVec(a, b)
    return MatMul(a, b)


class Reduce(Expr):
    """``ld.sum(x, axis=k)`` or ``ld.logsumexp(x, axis=k)``: one axis reduced."""

    def __init__(self, op, arg, axis):
        self.op, self.children = op, (arg,)
        self.axis = _axis(axis, arg.ndim, f"{op}({arg.label()}, axis={axis})")
        self.shape = arg.shape[:self.axis] + arg.shape[self.axis + 1:]

    def _format(self, children):
        return f"{self.op}({children[0]}, axis={self.axis})"


class LogSoftmax(Expr):
    """``x - logsumexp(x)`` along the last axis: log-probabilities from logits."""

    def __init__(self, arg):
        if arg.ndim == 0:
            raise ModelError(f"log_softmax({arg.label()}): a scalar has no axis to normalize")
        self.children, self.shape = (arg,), arg.shape

    def _format(self, children):
        return f"log_softmax({children[0]})"


class Transpose(Expr):
    """``x.T`` of a matrix."""

    def __init__(self, arg):
        self.children, self.shape = (arg,), arg.shape[::-1]
        self.fixed_leading = True  # a matrix's last axis is never rows of data

    def _format(self, children):
        return f"{children[0]}.T"


class Reshape(Expr):
    """``x.reshape(shape)`` and ``x[:, None]``: the same elements in C order."""

    def __init__(self, source, shape):
        shape = [int(n) for n in shape]
        if shape.count(-1) > 1 or any(n < -1 for n in shape):
            raise ModelError(f"{source.label()}.reshape{tuple(shape)}: lengths are >= 0, one may be -1")
        size, known = np.prod(source.shape, dtype=int), np.prod([n for n in shape if n != -1], dtype=int)
        if -1 in shape and known > 0 and size % known == 0:
            shape[shape.index(-1)] = int(size // known)
        if -1 in shape or np.prod(shape, dtype=int) != size:
            raise ModelError(f"{source.label()}: cannot reshape shape {source.shape} ({size} elements) "
                             f"into {tuple(shape)}")
        self.children, self.shape = (source,), tuple(shape)
        self.fixed_leading = source.fixed_leading if self.keeps_rows else True

    @property
    def keeps_rows(self):
        """Whether the first axis stays as it is (``x[:, None]``): reshaping the
        events of rows, which data of another length keep."""
        (source,) = self.children
        return (source.ndim >= 1 and self.ndim >= 1 and self.shape[0] == source.shape[0]
                and np.prod(self.shape[1:], dtype=int) == np.prod(source.shape[1:], dtype=int))

    def _format(self, children):
        return f"{children[0]}.reshape{self.shape}"


class Take(Expr):
    """``x[i]`` or ``x[:, j]`` of a matrix: a constant position along one axis."""

    def __init__(self, source, position, axis):
        n = source.shape[axis]
        if not -n <= position < n:
            raise ModelError(f"{source.label()}: index {position} is out of bounds for axis {axis} "
                             f"of length {n}")
        self.children, self.position, self.axis = (source,), position % n, axis
        self.shape = source.shape[:axis] + source.shape[axis + 1:]

    def _format(self, children):
        return f"{children[0]}[{', '.join([':'] * self.axis + [str(self.position)])}]"


class SliceAxis(Expr):
    """``W[1:]``, ``W[:, :-1]``, ``W[:, ::2]`` of a value with two or more axes:
    constant bounds along one axis, resolved when the model is built (a
    vector's slice, along its rows, is ``Slice``)."""

    def __init__(self, source, index, axis):
        self.children, self.axis, self.index = (source,), axis, index
        self.start, self.stop, self.step = index.indices(source.shape[axis])
        length = len(range(self.start, self.stop, self.step))
        self.shape = source.shape[:axis] + (length,) + source.shape[axis + 1:]
        self.fixed_leading = source.fixed_leading or axis == 0

    def _format(self, children):
        return f"{children[0]}[{', '.join([':'] * self.axis + [slice_text(self.index)])}]"


class _Batch:
    """An argument seen without its event axes (``kernel_plate``)."""

    def __init__(self, node, shape):
        self.node, self.shape, self.ndim = node, shape, len(shape)

    def label(self):
        return self.node.label()


def kernel_plate(spec, args, what):
    """The plate of a distribution's kernel over ``args`` (``x`` first): their
    broadcast shape (``plate_shape``), less the event axes of a multivariate
    distribution, whose lengths must agree (``Spec.split_shapes``)."""
    if not spec.multivariate:
        return plate_shape(args, what)
    try:
        batches, _ = spec.split_shapes([a.shape for a in args])
    except ValueError as error:
        raise ModelError(f"{what()}: {error}") from None
    return plate_shape([_Batch(a, b) for a, b in zip(args, batches)], what)


class Sum(Expr):
    """The sum of all elements of an expression: a scalar."""

    def __init__(self, arg):
        self.children = (arg,)

    def _format(self, children):
        return f"sum({children[0]})"


class LogPdf(Expr):
    """A distribution's normalized log density at each element: ``ld.Normal(mu,
    s).logpdf(y)`` inside a model, for mixtures and hand-written likelihoods.
    ``children`` are the kernel's arguments ``(x, *params)``, broadcast
    elementwise."""

    def __init__(self, spec, args):
        self.spec, self.children = spec, tuple(args)
        self.shape = plate_shape(self.children, lambda: f"{spec.name}.logpdf")

    def _format(self, children):
        return f"{self.spec.name}({', '.join(children[1:])}).logpdf({children[0]})"


class LogSumExp(Expr):
    """``log(sum(exp(x)))`` over every element of a vector: a scalar, computed
    stably (shifted by the largest element)."""

    def __init__(self, arg):
        if arg.ndim > 1:
            raise ModelError(f"logsumexp({arg.label()}): shape {arg.shape}: give an axis "
                             "(ld.logsumexp(x, axis=-1))")
        self.children = (arg,)

    def _format(self, children):
        return f"logsumexp({children[0]})"


class Cumsum(Expr):
    """The cumulative sum of a vector: element ``i`` is ``x[0] + ... + x[i]``."""

    def __init__(self, arg):
        if arg.ndim != 1:
            raise ModelError(f"cumsum({arg.label()}): only vectors have a cumulative sum")
        self.children, self.shape = (arg,), arg.shape

    def _format(self, children):
        return f"cumsum({children[0]})"


class Length(Expr):
    """The length of an expression's first axis (its plate) as a number, read at
    run time (a data array's length may change with ``set_data``): ``ld.mean``'s
    divisor."""

    def __init__(self, source):
        if source.ndim == 0:
            raise ModelError(f"len({source.label()}): a scalar has no length")
        self.children = (source,)

    def depends_on_params(self):
        return False  # the length of a parameter vector is fixed when it is declared

    def _format(self, children):
        return f"len({children[0]})"


def substitute(node, memo):
    """``node`` with the nodes ``memo`` maps replaced (``id -> (node, replacement)``,
    holding each node so that its id is not reused while ``memo`` lives);
    shared sub-expressions stay shared. A replacement has the shape of what it
    replaces, so a node copied with new children keeps its own."""
    if id(node) in memo:
        return memo[id(node)][1]
    children = tuple(substitute(child, memo) for child in node.children)
    out = node if all(new is old for new, old in zip(children, node.children)) else with_children(node, children)
    memo[id(node)] = (node, out)
    return out


def with_children(node, children):
    """A copy of ``node`` with ``children`` (of the same shapes) in place of its own."""
    out = object.__new__(type(node))
    out.__dict__.update(node.__dict__)
    out.children = tuple(children)
    return out


def nodes(root, stop=None):
    """Every node below (and including) ``root``, each once, not descending below
    a node for which ``stop(node)`` is true (nor yielding it). Walks that recurse
    into every child instead revisit a shared sub-expression once per path:
    exponential in the depth of an unrolled recursion."""
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen or (stop is not None and stop(node)):
            continue
        seen.add(id(node))
        yield node
        stack.extend(node.children)


def as_expr(value):
    """Wrap numbers and numpy arrays; pass expressions through."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, numbers.Number) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return Const(value)
    if isinstance(value, (np.ndarray, list, tuple)):
        array = np.asarray(value)
        if array.ndim == 0:
            return Const(array)
        return Data(None, frozen_array(array, "an array in a model expression"),
                    integer=np.issubdtype(array.dtype, np.integer))
    raise TypeError(f"cannot use {type(value).__name__} {value!r} in a model expression")


def _function(op):
    """The user-facing function ``ld.<name>`` of the elementwise op ``op``."""
    if op.arity == 1:
        def fn(x):
            return Unary(op.name, as_expr(x))
    elif op.arity == 2:
        def fn(a, b):
            return Binary(op.name, as_expr(a), as_expr(b))
    else:
        def fn(a, b, c):
            return Ternary(op.name, as_expr(a), as_expr(b), as_expr(c))
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = f"Elementwise ``{op.name}`` of model expressions (``logdens.ops.OPS``)."
    return fn


#: ``ld.exp``, ``ld.logaddexp``, ...: one function per op of the table that no
#: operator writes. They are names of this module (``logdens`` exports them).
FUNCTIONS = {op.name: _function(op) for op in OPS.values() if op.symbol is None}
globals().update(FUNCTIONS)
inv_logit = sigmoid = FUNCTIONS["logistic"]


def _along(op, x, axis, keepdims):
    """``op`` ("sum" or "logsumexp") along ``axis``, an int or a tuple of them (one
    axis after another, the last first), each reduced axis kept with length 1
    with ``keepdims``, as numpy's."""
    axes = axis if isinstance(axis, tuple) else (axis,)
    positions = sorted({_axis(a, x.ndim, f"{op}({x.label()}, axis={axis})") for a in axes}, reverse=True)
    if len(positions) != len(axes):
        raise ModelError(f"{op}({x.label()}, axis={axis}): an axis is named twice")
    out = x
    for k in positions:
        out = Reduce(op, out, k)
    if keepdims:
        out = Reshape(out, [1 if k in positions else n for k, n in enumerate(x.shape)])
    return out


def sum(x, axis=None, keepdims=False):
    """Sum over every element (a scalar expression), or along ``axis`` (an int or a
    tuple; ``keepdims`` keeps each as a length-1 axis)."""
    x = as_expr(x)
    if axis is not None:
        return _along("sum", x, axis, keepdims)
    return x if x.shape == () else Sum(x)


def mean(x, axis=None, keepdims=False):
    """Mean over every element, divided by the length the data have at run time;
    along ``axis`` (as ``sum``), divided by those axes' lengths."""
    x = as_expr(x)
    if axis is not None:
        axes = axis if isinstance(axis, tuple) else (axis,)
        count = np.prod([x.shape[_axis(a, x.ndim, f"mean({x.label()})")] for a in axes])
        return _along("sum", x, axis, keepdims) / float(count)
    if x.shape == ():
        return x
    count = Length(x) if x.ndim == 1 else Length(x) * float(np.prod(x.shape[1:]))
    return Sum(x) / count


def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over every element of a vector (a scalar expression),
    or along ``axis`` (as ``sum``; for a pair of expressions, ``ld.logaddexp``)."""
    x = as_expr(x)
    if axis is not None:
        return _along("logsumexp", x, axis, keepdims)
    return x if x.shape == () else LogSumExp(x)


def _last_axis(x, axis, what):
    """``x`` as an expression, after checking that ``axis`` names its last axis."""
    x = as_expr(x)
    if x.ndim and _axis(axis, x.ndim, f"{what}({x.label()})") != x.ndim - 1:
        raise ModelError(f"{what}({x.label()}, axis={axis}): along the last axis only (transpose first)")
    return x


def log_softmax(x, axis=-1):
    """``x - logsumexp(x)`` along the last axis, computed stably."""
    return LogSoftmax(_last_axis(x, axis, "log_softmax"))


def softmax(x, axis=-1):
    """``exp(log_softmax(x))``: probabilities along the last axis."""
    return FUNCTIONS["exp"](log_softmax(x, axis))


def cumsum(x):
    """Cumulative sum of a vector (a latent random walk: ``cumsum(sigma * z)``);
    a scalar is its own."""
    x = as_expr(x)
    return x if x.shape == () else Cumsum(x)


def dot(a, b):
    """``sum(a * b)``: the inner product of two vectors of one length."""
    return sum(as_expr(a) * as_expr(b))


def clip(x, lower, upper):
    """``x`` limited to [lower, upper] elementwise (``np.clip``): ``minimum(maximum(x,
    lower), upper)``; a bound of None is none."""
    x = as_expr(x)
    if lower is not None:
        x = FUNCTIONS["maximum"](x, lower)
    return x if upper is None else FUNCTIONS["minimum"](x, upper)


def transpose(x):
    """``x.T``."""
    return as_expr(x).T


def diag_pre_multiply(v, m):
    """``diag(v) @ m``: row i of matrix ``m`` times ``v[i]`` (Stan's name), as a
    covariance's Cholesky factor from scales and a correlation factor:
    ``ld.MvNormal(mu, scale_tril=ld.diag_pre_multiply(sigma, L_corr))``."""
    v, m = as_expr(v), as_expr(m)
    if v.ndim != 1 or m.ndim != 2 or m.shape[0] != v.shape[0]:
        raise ModelError(f"diag_pre_multiply: a vector and a matrix with one row per entry, got shapes "
                         f"{v.shape} and {m.shape}")
    return (v * m.T).T
