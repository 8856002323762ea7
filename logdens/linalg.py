"""Linear algebra of whole matrices in model expressions: ``ld.cholesky`` and
``ld.add_diag``, as Stan's ``cholesky_decompose`` and ``add_diag``.

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


def cholesky(matrix):
    """The lower Cholesky factor of a symmetric positive-definite matrix expression."""
    return Cholesky(ex.as_expr(matrix))


def add_diag(matrix, value):
    """``matrix`` with ``value`` (a scalar or a vector) added to its diagonal: a
    jitter or a noise variance for a Gaussian process's covariance."""
    return AddDiag(ex.as_expr(matrix), ex.as_expr(value))
