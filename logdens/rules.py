"""One rule object per expression node type, and the walks that ask them.

A rule says what the rest of the package needs to know about a node type:
how the node reads each of its children (an access kind, below), whether it
is elementwise or reduces, its numpy value and its plate length at run time.
``rule(node)`` finds it by the node's type. Validation, the numpy evaluator,
row ordering and the data layout ask the rules instead of testing node types
one by one, so a new node type is a new rule, not an edit of every walk.
The access kinds below say how a node reads a child in each row of its plate.
"""

import numpy as np
from scipy import special as sp

from logdens import expr as ex
from logdens import gp, linalg, scans, sizes
from logdens.distributions import vectorize
from logdens.distributions.frozen import _first_violation
from logdens.expr import ModelError
from logdens.ops import OPS

#: The child's element at the node's own row (elementwise ops; the matrix's row in ``X @ beta``).
AT_ROW = "at_row"
#: The child's element at the node's own row, used as an integer index (a gather's index).
INDEX = "index"
#: One element per row, at the position the node's ``INDEX`` child holds (a gather's source).
GATHERED = "gathered"
#: One element per row, at a position computed from the row's number (a slice's source).
SHIFTED = "shifted"
#: Every element, in every row (the vector of ``X @ beta``, the argument of a sum).
WHOLE = "whole"
#: The elements up to the node's own row, in every row (the argument of a cumulative sum).
PREFIX = "prefix"

#: Access kinds that read the child at the node's own row.
AT_ITS_ROW = frozenset({AT_ROW, INDEX})
#: Access kinds that read one element of the child per row, at the row or elsewhere.
ONE_PER_ROW = frozenset({AT_ROW, INDEX, GATHERED, SHIFTED})
#: Access kinds that pair each row with a position of the child: sorting the rows breaks them.
POSITIONAL = frozenset({SHIFTED, PREFIX})
#: Access kinds whose node has the plate of the child they read.
SAME_PLATE = frozenset({AT_ROW, INDEX, PREFIX})


class Rule:
    """What every node type answers; the defaults are a leaf's.

    ``param``: a parameter's value. ``data``: a data array, replaced by
    ``set_data``. ``constant``: a number written into generated code. ``fixed``:
    its value is known once data are set (a bare data array or constant). ``elementwise``: an elementwise op of its children.
    ``reduces``: a reduction, which a term must finish before its own rows.
    """

    param = data = constant = fixed = elementwise = reduces = adds_rows = False
    #: Only the lowering of terms with matrices (``logdens.shaped``) handles it.
    shaped_only = False
    #: ``X @ beta``: a data matrix read row by row by the scalar lowering.
    reads_data_matrix = False
    #: Reads only its child's length (``len``): a whole number, whatever the rows.
    counts = False
    #: Its forward and reverse steps in the lowered program: ``Builder._lower_<lowering>``
    #: of ``logdens.compiler.ad`` (None: not lowered yet; a constant is a number there).
    lowering = None

    def reads(self, node):
        """The access kind of each child, in the order of ``node.children``."""
        return ()

    def evaluate(self, node, args, values, batch):
        """The numpy value of ``node``; ``args`` are its children's values (see
        ``logdens.evaluate``)."""
        raise NotImplementedError

    def kernel_spec(self, node):
        """The distribution whose kernel the node's code calls (None: none)."""
        return None

    def whole_operands(self, node):
        """Positions of the children below which data are read whole, not row by
        row (a covariance's inputs, a product's right operand)."""
        return ()

    def length(self, node, below, ctx):
        """The run-time plate length of ``node`` (None for a scalar), checking what
        the kernels rely on; ``below`` are the children's lengths and ``ctx`` has
        ``where`` (the site, for errors), ``array(data_node)`` (its current array)
        and ``shown(data_node)`` (its name in errors)."""
        raise NotImplementedError

    def sized(self, node, below, walk):
        """``node``'s shape when its children have shapes ``below``: ints, and
        ``sizes.Size`` for lengths read at run time (``logdens.sizes``); where two
        lengths must agree, ``walk.unify(a, b, node)``. By default its build
        shape, which its children's lengths then keep."""
        for child, shape in zip(node.children, below):
            for built, n in zip(child.shape, shape):
                walk.unify(n, built, node)
        return node.shape


class ParamRule(Rule):
    """A parameter: its constrained value."""

    param = True
    lowering = "param"

    def evaluate(self, node, args, values, batch):
        return np.asarray(values[node.name], dtype=float)

    def length(self, node, below, ctx):
        return node.shape[0] if node.shape else None

    def sized(self, node, below, walk):
        return walk.param_shape(node)


class DataRule(Rule):
    """A data array, named (replaced by ``set_data``) or carrying its own value."""

    data = fixed = True
    lowering = "data"

    def evaluate(self, node, args, values, batch):
        out = np.asarray(values[node.name] if node.name is not None else node.value)
        return out if node.integer else out.astype(float)

    def length(self, node, below, ctx):
        """Its rows, which may change; its other axes keep their build-time lengths
        (generated code is written for them)."""
        array = ctx.array(node)
        if np.shape(array)[1:] != node.shape[1:]:
            raise ModelError(f"{ctx.where}: data {ctx.shown(node)} has shape {np.shape(array)}; it was "
                             f"built with shape {node.shape}, and only its first axis (the rows) may change")
        return len(array) if node.shape else None

    def sized(self, node, below, walk):
        return walk.data_shape(node)


class ConstRule(Rule):
    """A scalar constant."""

    constant = fixed = True

    def evaluate(self, node, args, values, batch):
        return np.float64(node.value)

    def length(self, node, below, ctx):
        return None


class ElementwiseRule(Rule):
    """``Unary``, ``Binary`` and ``Ternary``: an op of ``logdens.ops.OPS`` on every child at the row."""

    elementwise = True
    lowering = "elementwise"

    def reads(self, node):
        return (AT_ROW,) * len(node.children)

    def evaluate(self, node, args, values, batch):
        return OPS[node.op].numpy(*lifted(node, args, batch))

    def length(self, node, below, ctx):
        return agree(leading(node, below), ctx.where)

    def sized(self, node, below, walk):
        return sizes.broadcast(node, [(c.shape, s) for c, s in zip(node.children, below)], walk)


class LogPdfRule(ElementwiseRule):
    """``dist.logpdf(x)``: the distribution's kernel at every row, all summands kept."""

    lowering = "logpdf"

    def evaluate(self, node, args, values, batch):
        args = np.broadcast_arrays(*[np.asarray(a, dtype=float) for a in lifted(node, args, batch)])
        return vectorize.logpdf(node.spec, args)

    def kernel_spec(self, node):
        return node.spec

    def sized(self, node, below, walk):
        return sizes.kernel_shape(node.spec, node, below, walk)[0]


class GatherRule(Rule):
    """``source[index]``: per row, the source's element the index array names."""

    lowering = "gather"

    def reads(self, node):
        return (GATHERED, INDEX)

    def evaluate(self, node, args, values, batch):
        if node.children[0].ndim == 2:  # rows of a matrix
            return np.take(args[0], args[1], axis=-2)
        return args[0][..., args[1]]

    def length(self, node, below, ctx):
        (source, index), idx = node.children, ctx.array(node.children[1])
        inside = (idx >= 0) & (idx < below[0])
        if not np.all(inside):
            raise ModelError(f"{ctx.where}: index {_first_violation(ctx.shown(index), idx, inside)} "
                             f"is out of bounds for {source.label()} of length {below[0]}")
        return len(idx)

    def sized(self, node, below, walk):
        return tuple(below[1]) + tuple(below[0][1:])


class SliceRule(Rule):
    """``source[start:stop:step]``: per row ``i``, element ``start + step * i``."""

    lowering = "slice"

    def reads(self, node):
        return (SHIFTED,)

    def evaluate(self, node, args, values, batch):
        return args[0][..., node.index if node.runtime else slice(node.start, node.stop, node.step)]

    def length(self, node, below, ctx):
        """Its bounds applied to the source's run-time length (``Slice.bounds``); a
        negative step keeps the build length, as must its source."""
        source = node.children[0]
        if node.runtime:
            return node.bounds(below[0])[1]
        if below[0] != source.shape[0]:
            raise ModelError(f"{ctx.where}: {node.label()} slices {source.label()}, which had length "
                             f"{source.shape[0]} when the model was built and now has length {below[0]}; "
                             "a sliced array keeps its length")
        return node.shape[0]

    def sized(self, node, below, walk):
        """Its bounds on the source's run-time length (``Slice.bounds``); a negative
        step keeps the build length."""
        n = below[0][0]
        if not (node.runtime and isinstance(n, sizes.Size)):
            return super().sized(node, below, walk)
        return (sizes.Size(node.bounds(n.code)[1], node.bounds(n.value)[1]),)


class ElementRule(Rule):
    """``source[k]``, a constant position: a scalar read once per call."""

    lowering = "element"

    def reads(self, node):
        return (WHOLE,)

    def evaluate(self, node, args, values, batch):
        value = args[0][..., node.index]
        return value[..., None] if batch else value  # batched scalars are (n, 1)

    def length(self, node, below, ctx):
        """The position must lie in the source's current length (``x[-1]``: the last
        element of whatever length it has now)."""
        if not -below[0] <= node.index < below[0]:
            raise ModelError(f"{ctx.where}: {node.label()} is out of bounds for {node.children[0].label()} "
                             f"of length {below[0]}")
        return None

    def sized(self, node, below, walk):
        """A scalar from a source of any length (``length`` checks the position)."""
        return ()


class CumsumRule(Rule):
    """``ld.cumsum(x)``: row ``i`` is the sum of ``x``'s elements ``0 .. i``; the
    whole vector is computed before the term's rows (``reduces``)."""

    lowering = "cumsum"

    reduces = True

    def reads(self, node):
        return (PREFIX,)

    def evaluate(self, node, args, values, batch):
        return np.cumsum(args[0], axis=-1)

    def length(self, node, below, ctx):
        return below[0]

    def sized(self, node, below, walk):
        return below[0]


class LengthRule(Rule):
    """``len(x)``: a number from the child's run-time plate length, no adjoint."""

    lowering = "length"

    counts = True

    def reads(self, node):
        return (WHOLE,)

    def evaluate(self, node, args, values, batch):
        return np.float64(np.shape(args[0])[-node.children[0].ndim])

    def length(self, node, below, ctx):
        return None

    def sized(self, node, below, walk):
        """A number from any length: nothing to agree."""
        return ()


def lifted(node, args, batch):
    """``args`` of ``node``'s children aligned for numpy: with ``batch``, a value
    that depends on parameters has a leading axis of draws (a scalar's as (n,
    1)); it gets unit axes after that one up to ``node``'s rank, so that it
    broadcasts like the unbatched children (data), which numpy aligns by their
    trailing axes."""
    if not batch:
        return args
    out, rank = [], max(node.ndim, 1)  # scalars stay (n, 1)
    for child, arg in zip(node.children, args):
        if child.depends_on_params():  # (n, *shape) with shape the current one, which data may change
            arg = np.asarray(arg)
            inner = arg.shape[1:] if child.ndim else ()
            arg = arg.reshape(arg.shape[:1] + (1,) * (rank - child.ndim) + inner)
        out.append(arg)
    return out


def batched_result(node, value, batch):
    """A value computed with a leading axis of draws, in ``evaluate``'s convention
    (scalars as (n, 1))."""
    return np.reshape(value, (-1, 1)) if batch and node.shape == () else value


def leading(node, below):
    """``(child, length)`` of the children that share ``node``'s leading axis (of
    its rank): a child of lower rank broadcasts along its trailing axes, and
    one whose leading axis is a length 1 that stretches (``expr.plate_shape``)
    along it."""
    return [(c, n) for c, n in zip(node.children, below) if c.ndim == node.ndim and not ex.stretches_leading(c, node.shape)]


class MatMulRule(Rule):
    """``a @ b`` beyond a data matrix times a parameter vector: a row-aligned left
    operand (rows of data) times a whole right one, or two whole values
    (``logdens.shaped``)."""

    lowering = "matmul"

    shaped_only = True

    def reads(self, node):
        return (AT_ROW, WHOLE)

    def whole_operands(self, node):
        return (1,)

    def evaluate(self, node, args, values, batch):
        a, b = lifted_each(node, args, batch)
        if batch:
            left, right = node.children
            a = a[..., None, :] if left.ndim == 1 else a
            b = b[..., None] if right.ndim == 1 else b
            out = np.matmul(a, b)
            out = out[..., 0, :] if left.ndim == 1 else out
            return batched_result(node, out[..., 0] if right.ndim == 1 else out, batch)
        return np.matmul(a, b)

    def length(self, node, below, ctx):
        return below[0] if node.children[0].ndim == 2 else (node.shape[0] if node.shape else None)

    def sized(self, node, below, walk):
        left, right = below
        walk.unify(left[-1], right[0], node)
        return tuple(left[:-1]) + tuple(right[1:])


def lifted_each(node, args, batch):
    """Each child's value with a leading axis of draws (``batch``), or as it is.
    Batched, every child (``with_draws``) is broadcast to the most draws among
    them; a scalar comes as (n,)."""
    if not batch:
        return args
    drawn = [with_draws(c, a) for c, a in zip(node.children, args)]
    n = max(len(a) for a in drawn)
    return [np.broadcast_to(a, (n,) + a.shape[1:]) for a in drawn]


def with_draws(node, value):
    """``node``'s value from a batched ``evaluate`` with a leading axis of draws,
    a scalar's (n, 1) as (n,). A value that depends on no parameter gets an axis
    of one draw, as does one that varies only with a scan's steps (its body
    seen outside the loop, a scan reading data alone): numpy broadcasts it."""
    value = np.asarray(value)
    if not node.depends_on_params():
        return value[None]
    return value if node.ndim else value.reshape(-1)


def _batched_axis(node, batch):
    """``node.axis`` in its child's value from ``lifted_each``, which has a leading
    axis of draws when batched."""
    return node.axis + (1 if batch else 0)


class ReduceRule(Rule):
    """``ld.sum(x, axis=k)``, ``ld.logsumexp(x, axis=k)``."""

    lowering = "reduce"

    shaped_only = True

    def reads(self, node):
        return (AT_ROW,)

    def evaluate(self, node, args, values, batch):
        (x,) = lifted_each(node, args, batch)
        axis = _batched_axis(node, batch)
        out = np.sum(x, axis=axis) if node.op == "sum" else sp.logsumexp(x, axis=axis)
        return batched_result(node, out, batch)

    def length(self, node, below, ctx):
        return below[0] if node.axis > 0 else (node.shape[0] if node.shape else None)

    def sized(self, node, below, walk):
        return tuple(n for k, n in enumerate(below[0]) if k != node.axis)


class LogSoftmaxRule(Rule):
    """``ld.log_softmax(x)`` along the last axis."""

    lowering = "log_softmax"

    shaped_only = True

    def reads(self, node):
        return (AT_ROW,)

    def evaluate(self, node, args, values, batch):
        return sp.log_softmax(args[0], axis=-1)

    def length(self, node, below, ctx):
        return below[0]

    def sized(self, node, below, walk):
        return below[0]


class TransposeRule(Rule):
    """``x.T`` of a whole matrix."""

    lowering = "transpose"

    shaped_only = True

    def reads(self, node):
        return (WHOLE,)

    def evaluate(self, node, args, values, batch):
        return np.swapaxes(args[0], -1, -2)

    def length(self, node, below, ctx):
        return node.shape[0]

    def sized(self, node, below, walk):
        return tuple(below[0][::-1])


class ReshapeRule(Rule):
    """``x.reshape(shape)``, ``x[:, None]``: the same elements, so the same flat
    positions in a buffer; rows of data keep their axis (``Reshape.keeps_rows``)."""

    lowering = "reshape"

    shaped_only = True

    def reads(self, node):
        return (AT_ROW,) if node.keeps_rows else (WHOLE,)

    def evaluate(self, node, args, values, batch):
        (x,) = lifted_each(node, args, batch)
        lead = 1 if batch else 0
        shape = (x.shape[lead],) + node.shape[1:] if node.keeps_rows else node.shape
        return batched_result(node, np.reshape(x, x.shape[:lead] + shape), batch)

    def length(self, node, below, ctx):
        return below[0] if node.keeps_rows else (node.shape[0] if node.shape else None)

    def sized(self, node, below, walk):
        """The first axis keeps a run-time length where the rows keep their axis;
        every other length is the build's."""
        if not node.keeps_rows:
            return super().sized(node, below, walk)
        (source,) = node.children
        for built, n in zip(source.shape[1:], below[0][1:]):
            walk.unify(n, built, node)
        return (below[0][0],) + node.shape[1:]


class TakeRule(Rule):
    """``x[i]``, ``x[:, j]`` of a matrix."""

    lowering = "take"

    shaped_only = True

    def reads(self, node):
        return (AT_ROW,) if node.axis > 0 else (WHOLE,)

    def evaluate(self, node, args, values, batch):
        (x,) = lifted_each(node, args, batch)
        axis = _batched_axis(node, batch)
        return batched_result(node, np.take(x, node.position, axis=axis), batch)

    def length(self, node, below, ctx):
        return below[0] if node.axis > 0 else (node.shape[0] if node.shape else None)

    def sized(self, node, below, walk):
        """The axis it picks from keeps its length (the position is a number)."""
        walk.unify(below[0][node.axis], node.children[0].shape[node.axis], node)
        return tuple(n for k, n in enumerate(below[0]) if k != node.axis)


class SliceAxisRule(TakeRule):
    """``W[1:]``, ``W[:, :-1]``: constant bounds along one axis (its length pinned),
    read as ``Take`` reads its position."""

    lowering = "slice_axis"

    def evaluate(self, node, args, values, batch):
        (x,) = lifted_each(node, args, batch)
        return np.take(x, range(node.start, node.stop, node.step), axis=_batched_axis(node, batch))

    def sized(self, node, below, walk):
        walk.unify(below[0][node.axis], node.children[0].shape[node.axis], node)
        return tuple(node.shape[k] if k == node.axis else n for k, n in enumerate(below[0]))


class MatVecRule(Rule):
    """``X @ beta``: per row, the matrix's row times the whole vector."""

    lowering = "matvec"

    reads_data_matrix = True

    def reads(self, node):
        return (AT_ROW, WHOLE)

    def whole_operands(self, node):
        return (1,)

    def evaluate(self, node, args, values, batch):
        return args[1] @ args[0].T

    def length(self, node, below, ctx):
        matrix, vector = node.children
        X = ctx.array(matrix)
        if X.shape[1] != vector.shape[0]:
            raise ModelError(f"{ctx.where}: {matrix.label()} has {X.shape[1]} columns but "
                             f"{vector.label()} has length {vector.shape[0]}")
        return X.shape[0]

    def sized(self, node, below, walk):
        walk.unify(below[0][1], below[1][0], node)
        return tuple(below[0][:1])


class SumRule(Rule):
    """``ld.sum(x)``: a scalar over every element of its argument. ``adds_rows``:
    a term whose value it is may add ``x``'s rows itself, in its own loop."""

    lowering = "sum"

    reduces = adds_rows = True

    def reads(self, node):
        return (WHOLE,)

    def evaluate(self, node, args, values, batch):
        x = np.asarray(args[0])
        if batch:  # (draws, ...) -> (draws, 1)
            return np.sum(np.reshape(x, (x.shape[0], -1)), axis=1, keepdims=True)
        return np.sum(x)

    def length(self, node, below, ctx):
        return None

    def sized(self, node, below, walk):
        return ()


class LogSumExpRule(SumRule):
    """``ld.logsumexp(x)``: a reduction like ``ld.sum``."""

    lowering = "logsumexp"

    adds_rows = False

    def evaluate(self, node, args, values, batch):
        return sp.logsumexp(args[0], axis=-1, keepdims=batch)


class _WholeMatrixRule(Rule):
    """A whole matrix computed from whole values (``logdens.linalg``, ``logdens.gp``):
    the data below it are read whole."""

    shaped_only = True

    def whole_operands(self, node):
        return range(len(node.children))

    def reads(self, node):
        return (WHOLE,) * len(node.children)

    def length(self, node, below, ctx):
        return below[0]  # a square matrix of its first argument's rows


class CholeskyRule(_WholeMatrixRule):
    """``ld.cholesky(S)`` from S's lower triangle; NaN where S is not positive definite."""

    def sized(self, node, below, walk):
        n = walk.unify(below[0][0], below[0][1], node)
        return (n, n)

    def evaluate(self, node, args, values, batch):
        lower = np.tril(np.asarray(args[0], dtype=float))
        full = lower + np.swapaxes(np.tril(lower, -1), -1, -2)
        flat = full.reshape((-1,) + full.shape[-2:])
        out = np.full(flat.shape, np.nan)
        for k, matrix in enumerate(flat):
            try:
                out[k] = np.linalg.cholesky(matrix)
            except np.linalg.LinAlgError:
                pass
        return out.reshape(full.shape)


class AddDiagRule(_WholeMatrixRule):
    """``ld.add_diag(S, v)``."""

    def evaluate(self, node, args, values, batch):
        matrix, value = lifted_each(node, args, batch)
        out = np.array(matrix, dtype=float)
        value = np.asarray(value, dtype=float)
        if node.children[1].ndim == 0 and value.ndim == 1:  # one scalar per draw
            value = value[:, None]
        n = out.shape[-1]
        out[..., np.arange(n), np.arange(n)] += value
        return out

    def sized(self, node, below, walk):
        (rows, columns), value = below
        n = walk.unify(rows, columns, node)
        for length in value:
            n = walk.unify(n, length, node)
        return (n, n)


class SolveTriangularRule(_WholeMatrixRule):
    """``ld.solve_triangular(L, B)``."""

    def evaluate(self, node, args, values, batch):
        factor, rhs = (np.asarray(a, dtype=float) for a in lifted_each(node, args, batch))
        factor = np.tril(factor)
        if node.trans:
            factor = np.swapaxes(factor, -1, -2)
        vector = node.children[1].ndim == 1
        out = np.linalg.solve(factor, rhs[..., None] if vector else rhs)
        return out[..., 0] if vector else out

    def length(self, node, below, ctx):
        return below[1]

    def sized(self, node, below, walk):
        (rows, columns), rhs = below
        n = walk.unify(walk.unify(rows, columns, node), rhs[0], node)
        return (n, *rhs[1:])


class CholeskyLogDetRule(_WholeMatrixRule):
    """``ld.cholesky_logdet(L)``: a scalar."""

    def evaluate(self, node, args, values, batch):
        (factor,) = lifted_each(node, args, batch)
        out = 2.0 * np.sum(np.log(np.diagonal(factor, axis1=-2, axis2=-1)), axis=-1)
        return batched_result(node, out, batch)

    def length(self, node, below, ctx):
        return None

    def sized(self, node, below, walk):
        walk.unify(below[0][0], below[0][1], node)
        return ()


class StackRule(_WholeMatrixRule):
    """``ld.stack([a, b, ...])``."""

    def evaluate(self, node, args, values, batch):
        parts = [np.asarray(a, dtype=float) for a in lifted_each(node, args, batch)]
        if batch:  # scalars come as (n,), vectors as (n, *shape): stack after the draw axis
            return np.stack(parts, axis=1)
        return np.stack(parts)

    def length(self, node, below, ctx):
        return len(node.children)

    def sized(self, node, below, walk):
        shape = below[0]
        for other in below[1:]:
            shape = tuple(walk.unify(a, b, node) for a, b in zip(shape, other))
        return (len(node.children), *shape)


class ConcatenateRule(_WholeMatrixRule):
    """``ld.concatenate([a, b, ...], axis=k)``."""

    def evaluate(self, node, args, values, batch):
        parts = [np.asarray(a, dtype=float) for a in lifted_each(node, args, batch)]
        return np.concatenate(parts, axis=node.axis + (1 if batch else 0))

    def length(self, node, below, ctx):
        return node.shape[0]


class GPCovRule(_WholeMatrixRule):
    """``ld.gp.exp_quad(x, alpha, rho)`` and the other covariance functions; a
    vector rho (``node.ard``) scales each input dimension, then is 1."""

    def evaluate(self, node, args, values, batch):
        x, *params = lifted_each(node, args, batch)
        x = np.asarray(x, dtype=float)
        x = x.reshape(x.shape + (1,)) if node.children[0].ndim == 1 else x
        diff = x[..., :, None, :] - x[..., None, :, :]
        if node.ard:  # rho: (d,), or (draws, d) in a batch
            diff = diff / np.asarray(params[1], dtype=float)[..., None, None, :]
            params[1] = 1.0
        r2 = np.sum(diff * diff, axis=-1)
        params = [np.asarray(p, dtype=float).reshape(np.shape(p) + (1, 1)) for p in params]
        alpha, rho = params[0], params[1]
        r = np.sqrt(r2)
        if node.name == "exp_quad":
            k = np.exp(-0.5 * r2 / rho ** 2)
        elif node.name == "periodic":
            k = np.exp(-2.0 * np.sin(np.pi * r / params[2]) ** 2 / rho ** 2)
        else:
            s = (gp.SQRT3 if node.name == "matern32" else gp.SQRT5) * r / rho
            k = ((1.0 + s) if node.name == "matern32" else (1.0 + s + s * s / 3.0)) * np.exp(-s)
        return alpha ** 2 * k

    def sized(self, node, below, walk):
        x, _, rho, *_ = below
        if node.ard:
            walk.unify(x[1], rho[0], node)
        return (x[0], x[0])


class PlaceholderRule(Rule):
    """The carry or an input inside a scan's body (``logdens.scans``): its value is
    the step's; unbound (the body seen outside its loop), zeros (batched: one draw)."""

    shaped_only = True

    def evaluate(self, node, args, values, batch):
        return values.get(node.key, np.zeros(((1,) + (node.shape or (1,))) if batch else node.shape))

    def length(self, node, below, ctx):
        return node.shape[0] if node.shape else None


def _run_scan(scan, args, values, batch):
    """``(carries, ys)`` of ``scan`` in numpy, ``args`` its children's values: the
    body evaluated at each step, in ``evaluate``'s convention (with ``batch``,
    a leading axis of draws; a scalar carry or input bound as (n, 1))."""
    from logdens.evaluate import evaluate
    init, *xs = lifted_each(scan, args, batch)[:1 + scan.n_xs]
    lead = (np.shape(init)[0],) if batch else ()

    def drawn(value, shape):  # a step's value, batched or not, as lead + shape
        return np.broadcast_to(np.reshape(value, ((-1,) if batch else ()) + shape), lead + shape)

    def bound(value, shape):
        value = drawn(value, shape)
        return value.reshape(lead + (1,)) if batch and shape == () else value
    carry, carries, ys = bound(init, scan.carry.shape), [], []
    steps = np.shape(xs[0])[len(lead)] if xs else scan.length  # the data's rows may have changed
    for t in range(steps):
        step = {**values, scan.carry.key: carry}
        for placeholder, x in zip(scan.inputs, xs):
            step[placeholder.key] = bound(np.asarray(x)[:, t] if batch else np.asarray(x)[t], placeholder.shape)
        if scan.has_y:
            ys.append(drawn(evaluate(scan.y, step, batch), scan.y.shape))
        carry = bound(evaluate(scan.next_carry, step, batch), scan.carry.shape)
        carries.append(drawn(carry, scan.carry.shape))
    axis = 1 if batch else 0
    return np.stack(carries, axis=axis), (np.stack(ys, axis=axis) if ys else None)


class ScanRule(_WholeMatrixRule):
    """``ld.scan``: the numpy loop (``_run_scan``); as many steps as its sequences
    have rows (``sizes.scan_length``)."""

    def length(self, node, below, ctx):
        if node.keep == "last":
            return below[0]
        return below[1] if node.n_xs else node.length

    def sized(self, node, below, walk):
        init, xs, next_carry = below[0], below[1:1 + node.n_xs], below[1 + node.n_xs]
        for x in xs[1:]:
            walk.unify(xs[0][0], x[0], node)
        carry = tuple(walk.unify(a, b, node) for a, b in zip(init, next_carry))
        return carry if node.keep == "last" else (sizes.scan_length(node, walk.shape), *carry)

    def evaluate(self, node, args, values, batch):
        carries = _run_scan(node, args, values, batch)[0]
        if node.keep == "last":
            return carries[:, -1] if batch else carries[-1]
        return carries


class ScanOutputsRule(_WholeMatrixRule):
    """``ys`` of ``ld.scan``: the same loop, its outputs."""

    def length(self, node, below, ctx):
        scan = node.children[0]
        return ctx.length(scan.children[1]) if scan.n_xs else scan.length

    def sized(self, node, below, walk):
        scan = node.children[0]
        return (sizes.scan_length(scan, walk.shape), *walk.shape(scan.y))

    def evaluate(self, node, args, values, batch):
        from logdens.evaluate import evaluate
        scan = node.children[0]
        return _run_scan(scan, [evaluate(c, values, batch) for c in scan.children], values, batch)[1]


RULES = {
    ex.Param: ParamRule(), ex.Data: DataRule(), ex.Const: ConstRule(),
    ex.Unary: ElementwiseRule(), ex.Binary: ElementwiseRule(), ex.Ternary: ElementwiseRule(),
    ex.Gather: GatherRule(),
    ex.Slice: SliceRule(), ex.MatVec: MatVecRule(), ex.Sum: SumRule(), ex.LogPdf: LogPdfRule(),
    ex.Element: ElementRule(), ex.Length: LengthRule(), ex.LogSumExp: LogSumExpRule(),
    ex.Cumsum: CumsumRule(), ex.MatMul: MatMulRule(), ex.Reduce: ReduceRule(),
    ex.LogSoftmax: LogSoftmaxRule(), ex.Transpose: TransposeRule(), ex.Take: TakeRule(),
    ex.Reshape: ReshapeRule(), ex.SliceAxis: SliceAxisRule(),
    linalg.Cholesky: CholeskyRule(), linalg.AddDiag: AddDiagRule(), gp.GPCov: GPCovRule(),
    linalg.SolveTriangular: SolveTriangularRule(), linalg.CholeskyLogDet: CholeskyLogDetRule(),
    linalg.Stack: StackRule(), linalg.Concatenate: ConcatenateRule(),
    scans.Placeholder: PlaceholderRule(), scans.Scan: ScanRule(), scans.ScanOutputs: ScanOutputsRule(),
}


def rows_added(term, per_observation=False):
    """A potential ``sum(x)`` as the term of ``x``'s rows, each adding its element
    to lp (one pass, where the sum as a value took a forward pass and a reverse
    one: ``sum(Normal(mu, s).logpdf(y))``, 1e5 rows, the gradient 2.5x the
    value). Not where ``per_observation`` outputs are written for a likelihood
    potential: a scalar one is one observation (``Model.potential``), and its
    rows written one per row of ``x`` overran that output. Any other term as it is."""
    if per_observation and term.kind == "likelihood":
        return term
    value = term.value
    while term.dist is None and rule(value).adds_rows:
        value = value.children[0]
    return term if value is term.value else term._replace(value=value, args=(value,))


def rule(node):
    """The rule of ``node``'s type."""
    return rule_of_type(type(node))


def rule_of_type(node_type):
    """The rule of expression node type ``node_type``."""
    try:
        return RULES[node_type]
    except KeyError:
        raise TypeError(f"no rule for expression node type {node_type.__name__}") from None


def agree(lengths, where):
    """The common length of ``(node, length)`` pairs, scalars (None) aside; a
    ``ModelError`` naming two nodes whose lengths differ."""
    sized = [(c, n) for c, n in lengths if n is not None]
    for c, n in sized[1:]:
        if n != sized[0][1]:
            raise ModelError(f"{where}: {sized[0][0].label()} has length {sized[0][1]} but "
                             f"{c.label()} has length {n}")
    return sized[0][1] if sized else None


def fold(root, combine, memo=None):
    """``combine(node, below)`` at every node under ``root``, children first and in
    order, ``below`` being the children's results; returns ``root``'s. ``memo``
    (id(node) -> result, may be shared between calls) makes a shared
    sub-expression one visit. A loop, not recursion: an unrolled recursion
    can be deeper than Python's stack."""
    memo = {} if memo is None else memo
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in memo:
            continue
        if ready:
            memo[id(node)] = combine(node, [memo[id(c)] for c in node.children])
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(node.children))
    return memo[id(root)]


def visits(roots, start, passes):
    """Every ``(node, context)`` pair reached from ``roots`` with context ``start``,
    each once, depth first, children in order: a child's context is
    ``passes(context, access)``, ``access`` being how its parent reads it."""
    seen, stack = set(), [(root, start) for root in reversed(roots)]
    while stack:
        node, context = stack.pop()
        if (id(node), context) in seen:
            continue
        seen.add((id(node), context))
        yield node, context
        children = zip(node.children, rule(node).reads(node))
        stack.extend((child, passes(context, access)) for child, access in reversed(list(children)))


def params_read_by_element(layout, term, through):
    """Vector parameters (no event transform) that ``term`` reads only one element
    per row: every path to them from the term's arguments reads with access
    kinds in ``through`` (``AT_ITS_ROW``: at the row itself; ``ONE_PER_ROW``: also
    through a gather or a slice)."""
    element, other = set(), set()
    for node, one in visits(term.args, True, lambda one, access: one and access in through):
        if rule(node).param and node.shape != ():
            (element if one and not layout.params[node.name].transform.event else other).add(node.name)
    return element - other


def elementwise_use(node, name):
    """Whether every path from ``node`` to parameter ``name`` is elementwise (no
    gather, slice, matrix product or sum reads it)."""
    return not any(rule(n).param and n.name == name and not at_row
                   for n, at_row in visits([node], True, lambda at_row, access: at_row and access == AT_ROW))


def reads_outside(node, inside, name):
    """Whether ``node`` reads parameter ``name`` other than below the node ``inside``."""
    return any(rule(n).param and n.name == name for n in ex.nodes(node, stop=lambda n: n is inside))


def shaped(term):
    """Whether ``term`` holds a value with more than one axis (a data matrix aside,
    where ``X @ beta`` reads it), a node only ``logdens.shaped`` lowers or a
    multivariate distribution: it is lowered there, rows of events per block."""
    def needs(n):
        node_rule = rule(n)
        return (node_rule.shaped_only or (n.ndim > 1 and not node_rule.data)
                or (not node_rule.reads_data_matrix and any(c.ndim > 1 for c in n.children)))
    if term.dist is not None and term.dist.spec.multivariate:
        return True
    return any(a.ndim > 1 for a in term.args) or any(needs(n) for a in term.args for n in ex.nodes(a))


def whole_data(term):
    """The data nodes of ``term`` read whole, not as rows (their rows are then a
    run-time length of the term's buffers: ``logdens.sizes``): every one when
    the term is one multivariate event or a whole batch of them (its value a
    data event or a parameter expression: a Gaussian process's inputs, a
    group-level predictor matrix), else those a node reads whole below it
    (``Rule.whole_operands``) and a multivariate kernel's data arguments that
    are one event (a data Cholesky factor)."""
    found = {}
    if term.dist is not None and term.dist.spec.multivariate:
        x, axes = term.args[0], term.dist.spec.events
        every = x.ndim == len(axes[0]) if rule(x).data else not any(rule(n).data for n in ex.nodes(x))
        for node, event in zip(term.args, axes):
            if every or (rule(node).data and node.ndim == len(event)):
                found.update({id(n): n for n in ex.nodes(node) if rule(n).data} if every else {id(node): node})
    for root in term.args:
        for node in ex.nodes(root):
            for position in rule(node).whole_operands(node):
                found.update({id(n): n for n in ex.nodes(node.children[position]) if rule(n).data})
    return found


def has_reduction(node):
    """Whether a reduction (``ld.sum``) lies below (or at) ``node``."""
    return any(rule(n).reduces for n in ex.nodes(node))
