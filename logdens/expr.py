"""Model expressions: immutable nodes with numpy broadcasting semantics.

An expression is a DAG over parameters, data and constants. Elementwise
operations broadcast like numpy over 1-D plates; ``a[idx]`` gathers by an
integer data array, ``X @ beta`` multiplies a data matrix by a parameter
vector row by row, ``ld.sum`` reduces to a scalar, and constant slices select
a strided part of a vector. The engine lowers these nodes to fused loops; the
numpy interpreter in ``logdens.evaluate`` computes them directly.
"""

import numbers

import numpy as np


class ModelError(ValueError):
    """A model is malformed: a bad name, shape, index or data array."""


def _shape_of_broadcast(shapes, what):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ModelError(f"{what}: shapes {' and '.join(map(str, shapes))} do not broadcast") from None


class Expr:
    """Base of every node; gives the operators users write."""

    shape = ()
    children = ()

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

    def __pos__(self):
        return self

    def __matmul__(self, other):
        return MatVec(self, as_expr(other))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Slice(self, index)
        index = as_expr(index)
        if not isinstance(index, Data) or not index.integer:
            raise ModelError(f"index of {self.label()} must be an integer data array (m.data(...)) "
                             "or a constant slice")
        return Gather(self, index)

    def __array_ufunc__(self, *args, **kwargs):
        return NotImplemented  # so numpy arrays defer to our operators

    def __bool__(self):
        raise TypeError("a model expression has no truth value; use it in a model term")

    @property
    def ndim(self):
        return len(self.shape)

    def label(self):
        """A short readable rendering, used in generated-code comments and errors."""
        return type(self).__name__

    def leaves(self):
        """Every leaf node below (and including) this one, each once."""
        seen, out, stack = set(), [], [self]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if not node.children:
                out.append(node)
            stack.extend(node.children)
        return out

    def depends_on_params(self):
        return any(isinstance(leaf, Param) for leaf in self.leaves())


class Param(Expr):
    """A model parameter's constrained value (``shape`` () or (n,))."""

    def __init__(self, name, shape, constraint):
        self.name, self.shape, self.constraint = name, shape, constraint

    def label(self):
        return self.name


class Data(Expr):
    """A named data array, replaceable by ``set_data`` (its length may change)."""

    def __init__(self, name, value, integer=False):
        self.name, self.integer = name, integer
        self.shape = np.shape(value)
        self.value = value

    def label(self):
        return self.name if self.name is not None else f"array{self.shape}"


class Const(Expr):
    """A scalar constant."""

    def __init__(self, value):
        self.value = float(value)

    def label(self):
        return repr(self.value)


class Unary(Expr):
    """An elementwise function of one expression (``exp``, ``log``, ``neg``, ...)."""

    def __init__(self, op, arg):
        self.op, self.children, self.shape = op, (arg,), arg.shape

    def label(self):
        return f"{self.op}({self.children[0].label()})"


SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}


class Binary(Expr):
    """An elementwise function of two expressions, broadcasting like numpy."""

    def __init__(self, op, left, right):
        self.op, self.children = op, (left, right)
        self.shape = _shape_of_broadcast((left.shape, right.shape), f"{left.label()} {op} {right.label()}")
        if len(self.shape) > 1:
            raise ModelError(f"{self.label()}: only scalars and 1-D vectors can be combined elementwise")

    def label(self):
        left, right = (c.label() for c in self.children)
        if self.op in SYMBOLS:
            return f"({left} {SYMBOLS[self.op]} {right})"
        return f"{self.op}({left}, {right})"


class Gather(Expr):
    """``source[index]``: elements of a vector picked by an integer data array."""

    def __init__(self, source, index):
        if source.ndim != 1:
            raise ModelError(f"{source.label()}[{index.label()}]: only vectors can be indexed")
        self.children, self.shape = (source, index), index.shape

    def label(self):
        return f"{self.children[0].label()}[{self.children[1].label()}]"


class Slice(Expr):
    """``source[start:stop:step]`` with constant bounds."""

    def __init__(self, source, index):
        if source.ndim != 1:
            raise ModelError(f"{source.label()}[...]: only vectors can be sliced")
        self.start, self.stop, self.step = index.indices(source.shape[0])
        self.children = (source,)
        self.shape = (len(range(self.start, self.stop, self.step)),)

    def label(self):
        return f"{self.children[0].label()}[{self.start}:{self.stop}:{self.step}]"


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

    def label(self):
        return f"({self.children[0].label()} @ {self.children[1].label()})"


class Sum(Expr):
    """The sum of all elements of an expression: a scalar."""

    def __init__(self, arg):
        self.children = (arg,)

    def label(self):
        return f"sum({self.children[0].label()})"


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
        return Data(None, array, integer=np.issubdtype(array.dtype, np.integer))
    raise TypeError(f"cannot use {type(value).__name__} {value!r} in a model expression")


def _unary(op):
    def fn(x):
        return Unary(op, as_expr(x))
    fn.__name__ = op
    fn.__doc__ = f"Elementwise ``{op}`` of a model expression."
    return fn


UNARY_OPS = ("exp", "log", "log1p", "expm1", "sqrt", "square", "abs", "logistic", "logit",
             "log_logistic", "softplus", "tanh", "lgamma", "digamma", "erf", "neg")
exp, log, log1p, expm1, sqrt, square, abs, logistic, logit = (
    _unary(op) for op in UNARY_OPS[:9])
log_logistic, softplus, tanh, lgamma, digamma, erf = (_unary(op) for op in UNARY_OPS[9:15])
inv_logit = logistic


def logaddexp(a, b):
    """Elementwise ``log(exp(a) + exp(b))``, stable."""
    return Binary("logaddexp", as_expr(a), as_expr(b))


def sum(x):
    """Sum over every element: a scalar expression."""
    x = as_expr(x)
    return x if x.shape == () else Sum(x)
