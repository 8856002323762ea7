"""Gaussian-process covariance functions, Stan's ``gp_*_cov``: ``ld.gp.exp_quad(x,
alpha, rho)``, ``matern32``, ``matern52`` and ``periodic(x, alpha, rho, period)``.

Each is the (n, n) matrix K_ij = alpha^2 k(r_ij) of the inputs ``x`` (data of
shape (n,) or (n, d), at r_ij = |x_i - x_j|) with a scalar amplitude ``alpha``
and length scale ``rho`` that may be parameters:

- exp_quad:  k = exp(-r^2 / (2 rho^2))
- matern32:  k = (1 + s) exp(-s),             s = sqrt(3) r / rho
- matern52:  k = (1 + s + s^2 / 3) exp(-s),   s = sqrt(5) r / rho
- periodic:  k = exp(-2 sin^2(pi r / period) / rho^2)

The kernels below compute K and, in reverse, the partials of sum(aK * K) in
alpha, rho and the period: one pass over the pairs each way (the partials in
rho and the period do not involve dr, so r = 0 is no special case). The
inputs are data: a covariance of parameter inputs is not differentiated.
"""

import math

from logdens import expr as ex
from logdens.distributions.jit import jitable
from logdens.distributions import vmath
from logdens.expr import ModelError

#: The kernel codes the generated code passes (``GPCov.kind``).
KINDS = {"exp_quad": 0, "matern32": 1, "matern52": 2, "periodic": 3}
SQRT3, SQRT5 = math.sqrt(3.0), math.sqrt(5.0)


class GPCov(ex.Expr):
    """A covariance matrix of data inputs ``x``: children ``(x, alpha, rho[, period])``."""

    def __init__(self, name, x, *params):
        what = f"gp.{name}({x.label()}, ...)"
        if x.ndim not in (1, 2) or x.depends_on_params():
            raise ModelError(f"{what}: the inputs must be data of shape (n,) or (n, d), got {x.label()} "
                             f"of shape {x.shape}")
        for p in params:
            if p.shape != ():
                raise ModelError(f"{what}: its amplitude, length scale and period are scalars, got "
                                 f"{p.label()} of shape {p.shape}")
        self.name, self.kind = name, KINDS[name]
        self.children, self.shape = (x, *params), (x.shape[0], x.shape[0])

    def _format(self, children):
        return f"gp.{self.name}({', '.join(children)})"


def exp_quad(x, alpha, rho):
    """The squared-exponential covariance alpha^2 exp(-|x_i - x_j|^2 / (2 rho^2))."""
    return GPCov("exp_quad", *(ex.as_expr(a) for a in (x, alpha, rho)))


def matern32(x, alpha, rho):
    """The Matern 3/2 covariance alpha^2 (1 + s) exp(-s), s = sqrt(3) |x_i - x_j| / rho."""
    return GPCov("matern32", *(ex.as_expr(a) for a in (x, alpha, rho)))


def matern52(x, alpha, rho):
    """The Matern 5/2 covariance alpha^2 (1 + s + s^2 / 3) exp(-s), s = sqrt(5) |x_i - x_j| / rho."""
    return GPCov("matern52", *(ex.as_expr(a) for a in (x, alpha, rho)))


def periodic(x, alpha, rho, period):
    """The periodic covariance alpha^2 exp(-2 sin^2(pi |x_i - x_j| / period) / rho^2)."""
    return GPCov("periodic", *(ex.as_expr(a) for a in (x, alpha, rho, period)))


@jitable
def _squared_distance(x, dim, i, j):
    total = 0.0
    for k in range(dim):
        diff = x[i * dim + k] - x[j * dim + k]
        total += diff * diff
    return total


@jitable
def _pair(kind, r2, rho, period):
    """``(k, dk/drho, dk/dperiod)`` at squared distance ``r2``."""
    if kind == 0:
        k = vmath.exp(-0.5 * r2 / (rho * rho))
        return k, k * r2 / (rho * rho * rho), 0.0
    if kind == 3:
        angle = math.pi * math.sqrt(r2) / period
        sine = math.sin(angle)
        k = vmath.exp(-2.0 * sine * sine / (rho * rho))
        return (k, k * 4.0 * sine * sine / (rho * rho * rho),
                k * 2.0 * angle * math.sin(2.0 * angle) / (rho * rho * period))
    s = (SQRT3 if kind == 1 else SQRT5) * math.sqrt(r2) / rho
    e = vmath.exp(-s)
    if kind == 1:
        return (1.0 + s) * e, s * s * e / rho, 0.0
    return (1.0 + s + s * s / 3.0) * e, s * s * (1.0 + s) * e / (3.0 * rho), 0.0


@jitable
def cov_forward(kind, x, n, dim, alpha, rho, period, K):
    """K (n x n, row-major) of the inputs ``x`` (n rows of ``dim``, flat)."""
    scale = alpha * alpha
    for i in range(n):
        K[i * n + i] = scale
        for j in range(i):
            value = scale * _pair(kind, _squared_distance(x, dim, i, j), rho, period)[0]
            K[i * n + j] = value
            K[j * n + i] = value


@jitable
def cov_reverse(kind, x, n, dim, alpha, rho, period, K, aK):
    """``(d/dalpha, d/drho, d/dperiod)`` of sum(aK * K), K from ``cov_forward``."""
    d_alpha, d_rho, d_period = 0.0, 0.0, 0.0
    scale = alpha * alpha
    for i in range(n):
        d_alpha += aK[i * n + i] * K[i * n + i]
        for j in range(i):
            a = aK[i * n + j] + aK[j * n + i]
            _, dk_rho, dk_period = _pair(kind, _squared_distance(x, dim, i, j), rho, period)
            d_alpha += a * K[i * n + j]
            d_rho += a * scale * dk_rho
            d_period += a * scale * dk_period
    return 2.0 * d_alpha / alpha, d_rho, d_period
