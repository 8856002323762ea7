"""Gaussian-process covariance functions, Stan's ``gp_*_cov``: ``ld.gp.exp_quad(x,
alpha, rho)``, ``matern32``, ``matern52`` and ``periodic(x, alpha, rho, period)``.

Each is the (n, n) matrix K_ij = alpha^2 k(r_ij) of the inputs ``x`` (data of
shape (n,) or (n, d), at r_ij = |x_i - x_j|) with a scalar amplitude ``alpha``
and length scale ``rho`` that may be parameters:

- exp_quad:  k = exp(-r^2 / (2 rho^2))
- matern32:  k = (1 + s) exp(-s),             s = sqrt(3) r / rho
- matern52:  k = (1 + s + s^2 / 3) exp(-s),   s = sqrt(5) r / rho
- periodic:  k = exp(-2 sin^2(pi r / period) / rho^2)

For inputs of shape (n, d), exp_quad, matern32 and matern52 also take a
length scale per input dimension (automatic relevance determination, Stan's
``gp_exp_quad_cov(x, alpha, rho_vector)``, GPflow's and PyMC's ``ls=[...]``):
``rho`` of shape (d,), r_ij^2 = sum_k ((x_ik - x_jk) / rho_k)^2, and k as
above with rho = 1.

The kernels below compute K and, in reverse, the partials of sum(aK * K) in
alpha, rho (or each rho_k) and the period: one pass over the pairs each way
(the partials in rho and the period do not involve dr, so r = 0 is no
special case). The inputs are data: a covariance of parameter inputs is not
differentiated.

For large n, ``hsgp_basis`` and the spectral densities (``exp_quad_spd``,
``matern32_spd``, ``matern52_spd``) give the Hilbert-space approximation:
a basis-function regression with no matrix factor.

``Marginal`` (``logdens.gp_marginal``) is a GP regression with f integrated
out and its conditional at new inputs, for predictions.
"""

import math

import numpy as np

from logdens import expr as ex
from logdens.distributions.jit import jitable
from logdens.distributions import vmath
from logdens.distributions.frozen import _first_violation
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
        alpha, rho, *period = params
        for p in (alpha, *period):
            if p.shape != ():
                raise ModelError(f"{what}: its amplitude and period are scalars, got {p.label()} of shape "
                                 f"{p.shape}")
        if rho.shape != ():
            _check_ard(what, name, x, rho)
        _check_positive(what, params)
        self.name, self.kind = name, KINDS[name]
        #: A length scale per input dimension: ``cov_forward_ard`` and ``cov_reverse_ard``.
        self.ard = rho.shape != ()
        self.children, self.shape = (x, *params), (x.shape[0], x.shape[0])

    def _format(self, children):
        return f"gp.{self.name}({', '.join(children)})"


def _check_ard(what, name, x, rho):
    """A ``ModelError`` unless ``rho`` has one length scale per column of ``x``
    and the covariance ``name`` takes them."""
    if name == "periodic":
        raise ModelError(f"{what}: the periodic covariance takes a scalar length scale, got {rho.label()} of "
                         f"shape {rho.shape}")
    if x.ndim != 2 or rho.shape != x.shape[1:]:
        wanted = f"shape ({x.shape[1]},)" if x.ndim == 2 else "a scalar (a vector needs inputs of shape (n, d))"
        raise ModelError(f"{what}: a vector length scale has one entry per input dimension: inputs of shape "
                         f"{x.shape} take rho of {wanted}, got {rho.label()} of shape {rho.shape}")


def _check_positive(what, params):
    """A ``ModelError`` for an amplitude, length scale or period written into the
    model (a number or an array) that is not > 0: Stan's ``gp_*_cov`` require
    each > 0, and a period of 0 gives NaN. Named data and parameters are not
    known when the model is built."""
    roles = (("amplitude ", "alpha"), ("length scale ", "rho"), ("", "period"))
    for (role, name), p in zip(roles, params):
        if not isinstance(p, (ex.Const, ex.Data)) or getattr(p, "name", None) is not None:
            continue
        value = np.asarray(p.value, dtype=float)
        ok = value > 0.0
        if not np.all(ok):
            raise ModelError(f"{what}: its {role}{_first_violation(name, value, ok)}, must be > 0 (Stan's "
                             "gp_*_cov require it); pass a positive number or a parameter with a positive prior")


def exp_quad(x, alpha, rho):
    """The squared-exponential covariance alpha^2 exp(-|x_i - x_j|^2 / (2 rho^2));
    ``rho`` of shape (d,): alpha^2 exp(-sum_k (x_ik - x_jk)^2 / (2 rho_k^2))."""
    return GPCov("exp_quad", *(ex.as_expr(a) for a in (x, alpha, rho)))


def matern32(x, alpha, rho):
    """The Matern 3/2 covariance alpha^2 (1 + s) exp(-s), s = sqrt(3) |x_i - x_j| / rho;
    ``rho`` of shape (d,): s = sqrt(3) |(x_i - x_j) / rho|."""
    return GPCov("matern32", *(ex.as_expr(a) for a in (x, alpha, rho)))


def matern52(x, alpha, rho):
    """The Matern 5/2 covariance alpha^2 (1 + s + s^2 / 3) exp(-s), s = sqrt(5) |x_i - x_j| / rho;
    ``rho`` of shape (d,): s = sqrt(5) |(x_i - x_j) / rho|."""
    return GPCov("matern52", *(ex.as_expr(a) for a in (x, alpha, rho)))


def periodic(x, alpha, rho, period):
    """The periodic covariance alpha^2 exp(-2 sin^2(pi |x_i - x_j| / period) / rho^2), a scalar ``rho``."""
    return GPCov("periodic", *(ex.as_expr(a) for a in (x, alpha, rho, period)))


def hsgp_basis(x, m, c=1.5, train=None):
    """The Hilbert-space approximation of a stationary GP on 1-D inputs (Solin and
    Särkkä 2020; Riutort-Mayol et al. 2023, as PyMC's ``HSGP`` and Stan's case
    study): ``(phi, sqrt_eigenvalues)``, numpy arrays of shapes (n, m) and (m,).

    On [-L, L], L = c max|x - center|, the Laplacian's eigenfunctions are
    phi_j(x) = sin(sqrt(lambda_j) (x - center + L)) / sqrt(L) with
    sqrt(lambda_j) = j pi / (2 L), j = 1..m. Then K ~= phi diag(S(sqrt(lambda)))
    phi^T with S the covariance's spectral density (``exp_quad_spd``, ...), and
    f = phi @ (sqrt(S) * beta), beta ~ Normal(0, 1), costs n m per gradient
    instead of a Cholesky factor's n^3 / 3. ``c`` of 1.5 to 2 and m of 20 to 40
    suit length scales down to about a tenth of the inputs' range.

    For predictions at new inputs, pass the inputs the model was fit on as
    ``train``: center and L are then theirs, so the basis functions are the
    same functions (a basis of the new inputs alone has other ones, and f at
    them would be another function); ``set_data`` the result. New inputs must
    lie inside [center - L, center + L], where the basis lives.
    """
    x = np.asarray(x, dtype=float)
    domain = x if train is None else np.asarray(train, dtype=float)
    if x.ndim != 1 or domain.ndim != 1 or m < 1 or c <= 1.0:
        raise ModelError(f"hsgp_basis: needs 1-D inputs, m >= 1 and c > 1, got shape {x.shape}"
                         f"{'' if train is None else f' (train: {domain.shape})'}, m={m}, c={c}")
    _check_hsgp_inputs(domain)
    center = 0.5 * (domain.min() + domain.max())
    half = c * np.max(np.abs(domain - center))
    if train is not None:
        _check_hsgp_inputs(x, spans=False)
        inside = np.abs(x - center) <= half
        if not np.all(inside):
            raise ModelError(f"hsgp_basis: {_first_violation('x', x, inside)}, outside the basis' domain "
                             f"[{center - half!r}, {center + half!r}] (c={c} times the training inputs' half-range "
                             "around their center); fit with a larger c to predict that far out")
    sqrt_eigenvalues = np.arange(1, m + 1) * np.pi / (2.0 * half)
    phi = np.sin(sqrt_eigenvalues * (x[:, None] - center + half)) / np.sqrt(half)
    return phi, sqrt_eigenvalues


def _check_hsgp_inputs(x, spans=True):
    """A ``ModelError`` unless ``x`` is finite and (with ``spans``: the inputs that
    fix the domain) spans a range: the basis lives on [-L, L] with
    L = c max|x - center|, which a constant ``x`` makes 0 (and every basis
    function NaN)."""
    if x.size == 0:
        raise ModelError("hsgp_basis: x is empty; pass the inputs the GP is evaluated at")
    finite = np.isfinite(x)
    if not np.all(finite):
        raise ModelError(f"hsgp_basis: {_first_violation('x', x, finite)}, must be finite")
    if spans and x.min() == x.max():
        raise ModelError(f"hsgp_basis: every input is {float(x[0])!r}: the basis spans [-L, L], L = c max|x - center| "
                         "= 0; a GP over one point needs no basis (its value there is Normal(0, alpha^2))")


def exp_quad_spd(omega, alpha, rho):
    """The spectral density of ``exp_quad`` in one dimension at frequencies ``omega``:
    alpha^2 sqrt(2 pi) rho exp(-rho^2 omega^2 / 2), an expression."""
    omega, alpha, rho = (ex.as_expr(a) for a in (omega, alpha, rho))
    return alpha * alpha * math.sqrt(2.0 * math.pi) * rho * ex.FUNCTIONS["exp"](-0.5 * rho * rho * omega * omega)


def matern32_spd(omega, alpha, rho):
    """The spectral density of ``matern32`` in one dimension:
    4 alpha^2 3^(3/2) / rho^3 / (3 / rho^2 + omega^2)^2."""
    omega, alpha, rho = (ex.as_expr(a) for a in (omega, alpha, rho))
    base = 3.0 / (rho * rho) + omega * omega
    return 4.0 * 3.0 ** 1.5 * alpha * alpha / (rho * rho * rho) / (base * base)


def matern52_spd(omega, alpha, rho):
    """The spectral density of ``matern52`` in one dimension:
    (16 / 3) alpha^2 5^(5/2) / rho^5 / (5 / rho^2 + omega^2)^3."""
    omega, alpha, rho = (ex.as_expr(a) for a in (omega, alpha, rho))
    base = 5.0 / (rho * rho) + omega * omega
    return 16.0 / 3.0 * 5.0 ** 2.5 * alpha * alpha / rho ** 5 / (base * base * base)


@jitable
def _squared_distance(x, dim, i, j):
    total = 0.0
    for k in range(dim):
        diff = x[i * dim + k] - x[j * dim + k]
        total += diff * diff
    return total


@jitable
def _scaled_distance(x, dim, rho, i, j):
    """sum_k ((x_ik - x_jk) / rho_k)^2."""
    total = 0.0
    for k in range(dim):
        u = (x[i * dim + k] - x[j * dim + k]) / rho[k]
        total += u * u
    return total


@jitable
def _radial(kind, r2):
    """``(k, h)`` of exp_quad, matern32 or matern52 at the squared distance ``r2`` in
    units of the length scale: k(r2) and h = -2 dk/dr2. Then for r2 = sum_k
    (d_k / rho_k)^2, dk/drho_k = h (d_k / rho_k)^2 / rho_k (for a scalar rho,
    h r2 / rho: ``_pair``'s). With s = c sqrt(r2), ds/dr2 = c^2 / (2 s), and the
    factor s of dk/ds cancels, so h is finite at r = 0:
    matern32: dk/ds = -s e^-s, h = 3 e^-s; matern52: dk/ds = -s (1 + s) e^-s / 3,
    h = 5 (1 + s) e^-s / 3."""
    if kind == 0:
        k = vmath.exp(-0.5 * r2)
        return k, k
    s = (SQRT3 if kind == 1 else SQRT5) * math.sqrt(r2)
    e = vmath.exp(-s)
    if kind == 1:
        return (1.0 + s) * e, 3.0 * e
    return (1.0 + s + s * s / 3.0) * e, 5.0 / 3.0 * (1.0 + s) * e


@jitable
def _pair(kind, r2, rho, period):
    """``(k, dk/drho, dk/dperiod)`` at squared distance ``r2``. Kinds 0 to 2 are
    ``_radial`` at r2 / rho^2 written out: through ``_radial`` the scalar
    kernels took 5-15% longer at n = 1000."""
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


@jitable
def cov_forward_ard(kind, x, n, dim, alpha, rho, K):
    """K of ``cov_forward`` with a length scale per input dimension (``rho``, of
    length ``dim``); ``kind`` is not periodic."""
    scale = alpha * alpha
    for i in range(n):
        K[i * n + i] = scale
        for j in range(i):
            value = scale * _radial(kind, _scaled_distance(x, dim, rho, i, j))[0]
            K[i * n + j] = value
            K[j * n + i] = value


@jitable
def cov_reverse_ard(kind, x, n, dim, alpha, rho, K, aK, d_rho):
    """d/dalpha of sum(aK * K), K from ``cov_forward_ard``; its partials in each
    rho_k are written into ``d_rho`` (length ``dim``).

    dK_ij/drho_k = alpha^2 h_ij (x_ik - x_jk)^2 / rho_k^3 (``_radial``): the pass
    over the pairs sums a h (x_ik - x_jk)^2, and alpha^2 / rho_k^3 multiplies
    the sums once after it.
    """
    for k in range(dim):
        d_rho[k] = 0.0
    d_alpha = 0.0
    for i in range(n):
        d_alpha += aK[i * n + i] * K[i * n + i]
        for j in range(i):
            a = aK[i * n + j] + aK[j * n + i]
            d_alpha += a * K[i * n + j]
            weight = a * _radial(kind, _scaled_distance(x, dim, rho, i, j))[1]
            for k in range(dim):
                diff = x[i * dim + k] - x[j * dim + k]
                d_rho[k] += weight * diff * diff
    for k in range(dim):
        d_rho[k] *= alpha * alpha / (rho[k] * rho[k] * rho[k])
    return 2.0 * d_alpha / alpha


from logdens.gp_marginal import Marginal  # noqa: E402,F401  (ld.gp.Marginal: needs the module above loaded)
