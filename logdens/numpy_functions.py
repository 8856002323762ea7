"""numpy's functions on model expressions: the table of ``Expr.__array_function__``
(``expr.ARRAY_FUNCTIONS``), filled when ``logdens`` is imported.

``np.sum(W, axis=0)``, ``np.concatenate([a, b])``, ``np.dot(X, w)``,
``np.cumsum(z)``, ``np.where(x > 0, x, 0.0)`` build what the matching
``ld.<function>`` builds, so numpy code written for arrays builds a model.
Any other numpy function given an expression is a TypeError naming it:
without this protocol numpy wraps the expression in an array of objects and
carries on (``np.cumsum(z)`` an array holding ``z``, ``np.dot(W, z)`` the
elementwise ``W * z``), a wrong model with no error.
"""

import math

import numpy as np

from logdens import expr as ex
from logdens import linalg


def _sum(a, axis=None, dtype=None, out=None, keepdims=False):
    return ex.as_expr(a).sum(axis, dtype, out, keepdims)


def _mean(a, axis=None, dtype=None, out=None, keepdims=False):
    return ex.as_expr(a).mean(axis, dtype, out, keepdims)


def _cumsum(a, axis=None):
    if axis not in (None, 0, -1):
        raise TypeError(f"np.cumsum of a model expression along axis {axis!r}: running sums of vectors only")
    return ex.cumsum(a)


def _dot(a, b):
    """numpy's ``dot``: a product by a scalar, else ``a @ b`` (vectors and matrices)."""
    a, b = ex.as_expr(a), ex.as_expr(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return ex.matmul(a, b)


def _transpose(a, axes=None):
    a = ex.as_expr(a)
    if axes is not None and tuple(axes) != tuple(reversed(range(a.ndim))):
        raise TypeError(f"np.transpose of {a.label()} with axes={axes!r}: only the reversal of the axes (.T)")
    return a.T


def _reshape(a, shape=None, order="C", *, newshape=None):
    if order != "C":
        raise TypeError(f"np.reshape of a model expression: order={order!r}; only 'C'")
    return ex.as_expr(a).reshape(newshape if shape is None else shape)


def _expand_dims(a, axis):
    a, axis = ex.as_expr(a), (axis,) if isinstance(axis, int) else tuple(axis)
    axes = sorted(k % (a.ndim + len(axis)) for k in axis)  # positions in the result, as numpy's
    index = [slice(None)] * a.ndim
    for k in axes:
        index.insert(k, None)
    return a[tuple(index)]


def _outer(a, b):
    return ex.as_expr(a).reshape(-1)[:, None] * ex.as_expr(b).reshape(-1)[None, :]


def _where(condition, x=None, y=None):
    if x is None or y is None:
        raise TypeError("np.where of a model expression: the three-argument form only (np.where(c, x, y))")
    return ex.FUNCTIONS["where"](condition, x, y)


def _clip(a, a_min=None, a_max=None, *, min=None, max=None):
    return ex.clip(a, a_min if min is None else min, a_max if max is None else max)


def _diag(v, k=0):
    if k != 0:
        raise TypeError(f"np.diag of a model expression with k={k}: the main diagonal only")
    return linalg.diag(v)


def _cholesky(a, upper=False):
    if upper:
        raise TypeError("np.linalg.cholesky of a model expression: the lower factor only (upper=False)")
    return linalg.cholesky(a)


# numpy function -> the builder of its expression (same arguments as numpy's).
ex.ARRAY_FUNCTIONS.update({
    np.sum: _sum, np.mean: _mean, np.cumsum: _cumsum, np.dot: _dot,
    np.transpose: _transpose, np.reshape: _reshape, np.ravel: lambda a, order="C": _reshape(a, -1, order),
    np.expand_dims: _expand_dims, np.outer: _outer, np.where: _where, np.clip: _clip, np.diag: _diag,
    np.concatenate: lambda arrays, axis=0: linalg.concatenate(arrays, axis),
    np.stack: lambda arrays, axis=0: linalg.stack(arrays, axis), np.linalg.cholesky: _cholesky,
    np.shape: lambda a: ex.as_expr(a).shape, np.ndim: lambda a: ex.as_expr(a).ndim,
    np.size: lambda a, axis=None: math.prod(ex.as_expr(a).shape) if axis is None else ex.as_expr(a).shape[axis],
})
