"""Linear algebra of whole matrices in model expressions: ``ld.cholesky``,
``ld.add_diag``, ``ld.solve_triangular`` and ``ld.cholesky_logdet``, as Stan's
``cholesky_decompose``, ``add_diag``, ``mdivide_left_tri_low`` and
``log_determinant`` of L Lᵀ.

A Gaussian-process regression is ``ld.MvNormal(mu, scale_tril=ld.cholesky(
ld.add_diag(ld.gp.exp_quad(x, alpha, rho), sigma**2)))``. These nodes are whole
values (computed once per call from parameters, never per row of data):
``logdens.shaped`` lowers them, their reverse sweeps from
``logdens.linalg_kernels`` (the Cholesky factor's after Murray 2016).
"""

from logdens import expr as ex
from logdens.expr import ModelError


def _square(matrix, what):
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ModelError(f"{what}: needs a square matrix, got {matrix.label()} of shape {matrix.shape}")


class Cholesky(ex.Expr):
    """The lower Cholesky factor L of a symmetric positive-definite matrix S (L Lᵀ = S).

    Only S's lower triangle is read, as LAPACK does. Where S is not positive
    definite the factor is NaN, and so the log density -inf.
    """

    def __init__(self, matrix):
        _square(matrix, f"cholesky({matrix.label()})")
        self.children, self.shape = (matrix,), matrix.shape

    def _format(self, children):
        return f"cholesky({children[0]})"


class AddDiag(ex.Expr):
    """A square matrix with ``value`` (a scalar or one per row) added to its diagonal."""

    def __init__(self, matrix, value):
        what = f"add_diag({matrix.label()}, {value.label()})"
        _square(matrix, what)
        if value.shape not in ((), matrix.shape[:1]):
            raise ModelError(f"{what}: the added value must be a scalar or a vector of length "
                             f"{matrix.shape[0]}, got shape {value.shape}")
        self.children, self.shape = (matrix, value), matrix.shape

    def _format(self, children):
        return f"add_diag({children[0]}, {children[1]})"


class SolveTriangular(ex.Expr):
    """X = L⁻¹ B, or L⁻ᵀ B with ``trans``, for a lower-triangular L (its upper part
    is not read) and B a vector or a matrix of n rows."""

    def __init__(self, factor, rhs, trans):
        what = f"solve_triangular({factor.label()}, {rhs.label()})"
        _square(factor, what)
        if rhs.ndim not in (1, 2) or rhs.shape[0] != factor.shape[0]:
            raise ModelError(f"{what}: the right-hand side must have {factor.shape[0]} rows, got shape "
                             f"{rhs.shape}")
        self.children, self.shape, self.trans = (factor, rhs), rhs.shape, bool(trans)

    def _format(self, children):
        return f"solve_triangular({children[0]}, {children[1]}{', trans=True' if self.trans else ''})"


class CholeskyLogDet(ex.Expr):
    """log det(L Lᵀ) = 2 sum_i log L_ii of a Cholesky factor L: a scalar."""

    def __init__(self, factor):
        _square(factor, f"cholesky_logdet({factor.label()})")
        self.children = (factor,)

    def _format(self, children):
        return f"cholesky_logdet({children[0]})"


class Stack(ex.Expr):
    """Values of one shape stacked along a new first axis (``np.stack``): a vector
    from scalars, a scan's carry from its parts."""

    def __init__(self, parts):
        shapes = {p.shape for p in parts}
        if not parts or len(shapes) != 1:
            raise ModelError(f"stack: needs values of one shape, got shapes {[p.shape for p in parts]}")
        self.children, self.shape = tuple(parts), (len(parts), *parts[0].shape)

    def _format(self, children):
        return f"stack([{', '.join(children)}])"


class Concatenate(ex.Expr):
    """Values of one rank joined along an existing axis (``np.concatenate``): a
    reference category's zeros before a coefficient matrix, vectors end to end."""

    def __init__(self, parts, axis):
        what = f"concatenate([{', '.join(p.label() for p in parts)}], axis={axis})"
        if not parts or any(p.ndim == 0 for p in parts) or len({p.ndim for p in parts}) != 1:
            raise ModelError(f"{what}: needs values of one rank, at least 1, got shapes {[p.shape for p in parts]}")
        self.axis = ex._axis(axis, parts[0].ndim, what)
        rest = {p.shape[:self.axis] + p.shape[self.axis + 1:] for p in parts}
        if len(rest) != 1:
            raise ModelError(f"{what}: shapes {[p.shape for p in parts]} differ off axis {self.axis}")
        self.children = tuple(parts)
        length = sum(p.shape[self.axis] for p in parts)
        self.shape = parts[0].shape[:self.axis] + (length,) + parts[0].shape[self.axis + 1:]
        self.fixed_leading = True  # whole values only: never rows of data

    def _format(self, children):
        return f"concatenate([{', '.join(children)}], axis={self.axis})"


def concatenate(values, axis=0):
    """``np.concatenate``: values of one rank joined along ``axis`` (whole values
    only, as ``stack``): ``ld.concatenate([np.zeros((p, 1)), beta], axis=1)``
    fixes a multinomial regression's reference category."""
    return Concatenate([ex.as_expr(v) for v in values], axis)


def stack(values, axis=0):
    """``[a, b, ...]`` as one expression of shape (k, *shape) (``axis=0``), or of
    shape (n, k) for vectors of length n (``axis=-1`` or 1): whole values only
    (parameters, constants and what is computed from them, not rows of data)."""
    stacked = Stack([ex.as_expr(v) for v in values])
    if axis in (0, -stacked.ndim):
        return stacked
    if stacked.ndim == 2 and axis in (1, -1):
        return stacked.T
    raise ModelError(f"stack(..., axis={axis}): along a new first axis, or a last one for vectors")


def diag(x):
    """``np.diag``: a vector as the diagonal of a square matrix, or a square matrix's
    diagonal as a vector; whole values, built by ``stack`` from entries (n^2
    nodes: for the small matrices of covariance factors)."""
    x = ex.as_expr(x)
    if x.ndim == 1:
        n = x.shape[0]
        return stack([stack([x[i] if j == i else 0.0 for j in range(n)]) for i in range(n)])
    if x.ndim == 2 and x.shape[0] == x.shape[1]:
        return stack([x[i, i] for i in range(x.shape[0])])
    raise ModelError(f"diag({x.label()}): needs a vector or a square matrix, got shape {x.shape}")


def solve_triangular(factor, rhs, trans=False):
    """L⁻¹ b (``trans``: L⁻ᵀ b) for a lower-triangular ``factor`` L, ``rhs`` a vector
    or a matrix: a whitened residual, a GP's predictive mean."""
    return SolveTriangular(ex.as_expr(factor), ex.as_expr(rhs), trans)


def cholesky_logdet(factor):
    """log det(L Lᵀ) of a Cholesky factor L: the log determinant of the matrix it factors."""
    return CholeskyLogDet(ex.as_expr(factor))


def cholesky(matrix):
    """The lower Cholesky factor of a symmetric positive-definite matrix expression."""
    return Cholesky(ex.as_expr(matrix))


def add_diag(matrix, value):
    """``matrix`` with ``value`` (a scalar or a vector) added to its diagonal: a
    jitter or a noise variance for a Gaussian process's covariance."""
    return AddDiag(ex.as_expr(matrix), ex.as_expr(value))
