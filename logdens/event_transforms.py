"""Transforms of whole vectors and matrices: ordered, positive_ordered, simplex,
sum_to_zero, unit_vector, cholesky_corr, cholesky_cov, corr_matrix, cov_matrix.

Element k of the constrained vector depends on several unconstrained
coordinates, so the engine materializes the vector once per call (``w``),
accumulates the adjoints of its elements (``aw``) in the term loops, and then
runs the transform's reverse sweep once (``*_reverse``), adding the
log-Jacobian's gradient scaled by ``jacobian`` (1.0 or 0.0). The scalar
kernels are ``distributions.jit.jitable`` (plain Python too, cached); the numpy methods serve
``constrain``/``unconstrain``.

The module also holds the scalar helpers that every transform's generated
code calls (``floored_exp``, ``floored_logistic``) and the check that keeps
a finite log density from coming with a non-finite gradient
(``reject_nonfinite_gradient``): the generated module imports it as ``events``
and the compile cache hashes its source.

Why a floor (issue 12, item 6). For u < -708.4, exp(u) and logistic(u) are
subnormal, then 0; a kernel's partial in x such as Gamma's (a - 1) / x
overflows while its value (a - 1) log(x) stays finite, and the chain rule
gives inf * exp(u) = inf, or inf * 0 = NaN. So the transforms take
exp(max(u, LOG_FLOOR)): below the floor x is the constant exp(LOG_FLOOR) and
dx/du is 0 (the reverse sweeps here skip the product, so an inf adjoint
times 0 makes no NaN). The log-Jacobian keeps its formula in u, so there the
log density is the prior at exp(LOG_FLOOR) plus log|J|(u): continuous at the
floor, decreasing with u (log|J| = u for exp), and its gradient, the
log-Jacobian's alone, is the derivative of the value computed. Above the
floor nothing changes. exp(-700) = 9.9e-305 is a normal float with room:
a partial c / x stays finite there for |c| < 1.8e4 (LogNormal's
(log(x) - mu) / (sigma^2 x) has c = 700). A floor at the smallest normal
float, -708.4, would keep u in [-708.4, -700] as it was, but leave c / x
finite only for |c| < 4.
"""

import math

import numpy as np
from scipy import special as sp

from logdens.distributions import special, vmath
from logdens.distributions.jit import fast_kernel, jitable
from logdens.distributions.lkj_corr import gram_in_place
from logdens.expr import ModelError

#: Unconstrained coordinates below this are read as this by exp and logistic.
LOG_FLOOR = -700.0
LOG_2 = math.log(2.0)


@jitable
def floored_exp(u):
    """``(exp(max(u, LOG_FLOOR)), its derivative in u)``: 0 below the floor.

    NaN stays NaN (``u < LOG_FLOOR`` is false for it).
    """
    t = LOG_FLOOR if u < LOG_FLOOR else u
    e = vmath.exp(t)
    return e, (0.0 if u < LOG_FLOOR else e)


@jitable
def floored_logistic(u):
    """``(logistic(max(u, LOG_FLOOR)), its derivative in u)``: 0 below the floor.

    The derivative is s (1 - s) with the same rounded s as the value, so that
    a kernel's partial in x = lower + width s (computed from the rounded x)
    and dx/du stay consistent near the upper end, where 1 - s cancels.
    """
    t = LOG_FLOOR if u < LOG_FLOOR else u
    s = special.logistic(t)
    return s, (0.0 if u < LOG_FLOOR else s * (1.0 - s))


@fast_kernel
def reject_nonfinite_gradient(lp, grad):
    """``lp``, or ``-inf`` where ``lp`` is finite and an entry of ``grad`` is not.

    The gradient functions' last step. Where a kernel's partial in x
    overflows at a normal x (InverseGamma's b / x^2 for x < 1e-154, a Normal
    scale's z^2 / sigma for a tiny sigma), the gradient in u may be finite
    (b / x, z^2) but cannot be had from a partial that is inf; where the
    gradient exceeds the largest float (a positive_ordered Normal near x =
    1e154, lp -1.6e308) there is no finite answer; a simplex stick times a
    floored z_k can still underflow. In the sweeps of
    tests/test_transform_stability.py the value there was below -1e150, or
    -1.8e3 for the simplex (its log|J| has log z_k = u_k < -700): the point
    is rejected, as a sampler would reject it. ``log_density``, which
    computes no gradient, keeps its finite value there.
    """
    nonfinite = 0.0
    for k in range(grad.size):  # no branch in the loop: it vectorizes (fast_kernel's reassoc)
        nonfinite += grad[k] * 0.0  # 0 for a finite entry, NaN for inf or NaN
    return lp if nonfinite == 0.0 else -math.inf


@jitable
def ordered_forward(theta, offset, w, positive):
    """x_0 = u_0 (exp(u_0) if ``positive``), x_k = x_{k-1} + exp(u_k); returns log|J|.

    The exponentials are floored (``floored_exp``): a far-tail u_0 of a
    positive_ordered vector would otherwise make x_0 subnormal.
    """
    log_j = theta[offset] if positive else 0.0
    w[0] = floored_exp(theta[offset])[0] if positive else theta[offset]
    for k in range(1, w.size):
        w[k] = w[k - 1] + floored_exp(theta[offset + k])[0]
        log_j += theta[offset + k]
    return log_j


@jitable
def ordered_reverse(theta, offset, w, aw, target, jacobian, positive):
    """Add the gradient w.r.t. u of sum(aw * x) + jacobian * log|J| into ``target[offset:]``.

    x_j depends on u_k for every k <= j, with dx_j/du_k = exp(u_k) (k >= 1, or
    k = 0 when positive), so the adjoint of u_k is exp(u_k) * sum_{j >= k} aw_j.
    Below the floor dx_j/du_k is 0 and the product is skipped: the adjoints of
    tiny x_j may be inf, and inf * 0 is NaN.
    """
    tail = 0.0
    for k in range(w.size - 1, -1, -1):
        tail += aw[k]
        if k > 0 or positive:
            d = floored_exp(theta[offset + k])[1]
            if d != 0.0:
                target[offset + k] += tail * d
            target[offset + k] += jacobian
        else:
            target[offset] += tail


@jitable
def simplex_forward(theta, offset, w):
    """Stan's stick-breaking: K - 1 coordinates to K positive values summing to 1.

    z_k = logistic(u_k - log(K - k - 1)), x_k = stick_k z_k, stick_{k+1} = stick_k - x_k,
    x_{K-1} = stick_{K-1}; log|J| = sum_k log z_k + log(1 - z_k) + log stick_k.
    z_k is floored (``floored_logistic``); log|J| keeps the exact log z_k.
    """
    size = w.size
    stick, log_j = 1.0, 0.0
    for k in range(size - 1):
        y = theta[offset + k] - vmath.log(size - k - 1.0)
        z = floored_logistic(y)[0]
        w[k] = stick * z
        log_j += special.log_logistic(y) + special.log_logistic(-y) + vmath.log(stick)
        stick -= w[k]
    w[size - 1] = stick
    return log_j


@jitable
def simplex_reverse(theta, offset, w, aw, target, jacobian):
    """Reverse sweep of ``simplex_forward``; stick_k = sum_{j >= k} x_j is rebuilt from the end.

    z_k is computed again from u_k, as the forward sweep did, not as
    x_k / stick_k: that is 0 / 0 once the sticks underflow. Below the floor
    dz_k/du_k is 0 and its product with a_z (inf for a tiny x_k under a
    log) is skipped; without the Jacobian, its 1 / stick_k is skipped too.
    """
    size = w.size
    stick = w[size - 1]
    a_stick = aw[size - 1]  # adjoint of stick_{k+1} while processing k
    for k in range(size - 2, -1, -1):
        stick_next = stick
        stick = stick_next + w[k]  # stick_k
        z, dz = floored_logistic(theta[offset + k] - vmath.log(size - k - 1.0))
        # stick_{k+1} = stick_k (1 - z_k); x_k = stick_k z_k; log|J| has log stick_k
        a_z = aw[k] * stick - a_stick * stick
        a_stick = a_stick * (1.0 - z) + aw[k] * z
        if jacobian != 0.0:
            a_stick += jacobian / stick
        if dz != 0.0:
            target[offset + k] += a_z * dz
        target[offset + k] += jacobian * (1.0 - 2.0 * z)


@jitable
def _log_sech2(y):
    """log(1 - tanh(y)^2) = log(4) - 2|y| - 2 log1p(exp(-2|y|)), without 1 - z^2's
    cancellation (it is 0 for |y| > 19, this stays finite to |y| = 3.5e2)."""
    a = abs(y)
    return 1.3862943611198906 - 2.0 * a - 2.0 * math.log1p(vmath.exp(-2.0 * a))


@jitable
def cholesky_corr_forward(theta, offset, w, d):
    """Stan's Cholesky factor of a correlation matrix, d (d - 1) / 2 coordinates to
    a d x d lower-triangular ``w`` (row-major) with unit rows.

    Row i: z_j = tanh(u), s_0 = 1, L_ij = z_j sqrt(s_j), s_{j+1} = s_j (1 - z_j^2),
    L_ii = sqrt(s_i); log|J| = sum log(1 - z_j^2) + sum_j 0.5 log s_j. The factor
    1 - z^2 is exp(``_log_sech2``), which does not round to 0 at |u| > 19.
    """
    k = offset
    log_j = 0.0
    for q in range(d * d):
        w[q] = 0.0
    w[0] = 1.0
    for i in range(1, d):
        s = 1.0
        for j in range(i):
            u = theta[k]
            k += 1
            lz = _log_sech2(u)
            w[i * d + j] = math.tanh(u) * math.sqrt(s)
            log_j += lz + 0.5 * vmath.log(s)
            s *= vmath.exp(lz)
        w[i * d + i] = math.sqrt(s)
    return log_j


@jitable
def _corr_entry_reverse(u, s_next, a_s, a_l, jacobian):
    """One step of the reverse sweep of a row of ``cholesky_corr_forward``, at the
    entry j of coordinate ``u``: ``(d/du, s_j, adjoint of s_j, z_j)`` from s_{j+1},
    its adjoint ``a_s``, the adjoint ``a_l`` of L_ij and the Jacobian's weight.

    L_ij = z sqrt(s_j) and s_{j+1} = s_j e with e = 1 - z^2, de/du = -2 z e;
    log|J| has log e and 0.5 log s_j.
    """
    z, e = math.tanh(u), vmath.exp(_log_sech2(u))
    s = s_next / e
    root = math.sqrt(s)
    du = a_l * root * e - 2.0 * z * (jacobian + a_s * s_next)
    return du, s, a_s * e + a_l * z * 0.5 / root + jacobian * 0.5 / s, z


@jitable
def cholesky_corr_reverse(theta, offset, w, aw, target, jacobian, d):
    """Reverse sweep of ``cholesky_corr_forward``, row by row from the last entry.

    s_j comes back as s_{j+1} / (1 - z_j^2) (exact to rounding; where the
    factor underflows s is 0, L_ii is 0 and the density -inf). Entries above
    the diagonal and L_00 are constants: their adjoints are not read.
    """
    k = offset + d * (d - 1) // 2
    for i in range(d - 1, 0, -1):
        k -= i
        s = 1.0
        for j in range(i):
            s *= vmath.exp(_log_sech2(theta[k + j]))
        a_s = aw[i * d + i] * 0.5 / math.sqrt(s) if s > 0.0 else 0.0
        for j in range(i - 1, -1, -1):
            du, s, a_s, _ = _corr_entry_reverse(theta[k + j], s, a_s, aw[i * d + j], jacobian)
            target[k + j] += du


@jitable
def sum_to_zero_forward(theta, offset, w):
    """Stan's isometric sum-to-zero transform: N - 1 coordinates to N values that
    sum to 0, x = V u with V's columns orthonormal (a Helmert basis):
    x_j = sum_{k > j} v_k - j v_j with v_k = u_{k-1} / sqrt(k (k + 1)), v_0 = 0.
    Linear, with a constant log|J|: 0."""
    n = w.size - 1
    tail = 0.0
    for j in range(n, -1, -1):
        v = theta[offset + j - 1] / math.sqrt(j * (j + 1.0)) if j > 0 else 0.0
        w[j] = tail - j * v
        tail += v
    return 0.0


@jitable
def sum_to_zero_reverse(theta, offset, w, aw, target, jacobian):
    """Reverse sweep of ``sum_to_zero_forward``: the adjoint of v_k is the sum of
    aw_j over j < k minus k aw_k."""
    head = 0.0
    for k in range(1, w.size):
        head += aw[k - 1]
        target[offset + k - 1] += (head - k * aw[k]) / math.sqrt(k * (k + 1.0))


@jitable
def unit_vector_forward(theta, offset, w):
    """Stan's unit vector: x = u / |u|; log|J| = -|u|^2 / 2, a standard normal on u
    that makes the radius proper (the density of x itself is unchanged)."""
    sq = 0.0
    for k in range(w.size):
        sq += theta[offset + k] * theta[offset + k]
    norm = math.sqrt(sq)
    for k in range(w.size):
        w[k] = theta[offset + k] / norm
    return -0.5 * sq


@jitable
def unit_vector_reverse(theta, offset, w, aw, target, jacobian):
    """Reverse sweep of ``unit_vector_forward``: (aw - (aw . x) x) / |u| - jacobian u."""
    sq, dot = 0.0, 0.0
    for k in range(w.size):
        sq += theta[offset + k] * theta[offset + k]
        dot += aw[k] * w[k]
    norm = math.sqrt(sq)
    for k in range(w.size):
        target[offset + k] += (aw[k] - dot * w[k]) / norm - jacobian * theta[offset + k]


@jitable
def cholesky_cov_forward(theta, offset, w, d):
    """Stan's Cholesky factor of a covariance: d (d + 1) / 2 coordinates, row by
    row, to a lower-triangular d x d ``w`` (row-major) whose diagonal is exp of
    its coordinates; log|J| = the sum of those coordinates. The exponentials
    are floored (``floored_exp``)."""
    k = offset
    log_j = 0.0
    for i in range(d):
        for j in range(d):
            if j < i:
                w[i * d + j] = theta[k]
                k += 1
            elif j == i:
                w[i * d + j] = floored_exp(theta[k])[0]
                log_j += theta[k]
                k += 1
            else:
                w[i * d + j] = 0.0
    return log_j


@jitable
def cholesky_cov_reverse(theta, offset, w, aw, target, jacobian, d):
    """Reverse sweep of ``cholesky_cov_forward``."""
    k = offset
    for i in range(d):
        for j in range(i + 1):
            if j < i:
                target[k] += aw[i * d + j]
            else:
                dx = floored_exp(theta[k])[1]
                if dx != 0.0:
                    target[k] += aw[i * d + j] * dx
                target[k] += jacobian
            k += 1


@jitable
def cov_matrix_forward(theta, offset, w, d):
    """Stan's covariance matrix: d (d + 1) / 2 coordinates to L (``cholesky_cov_forward``,
    its diagonal exp of its coordinates, floored) and the full symmetric
    Sigma = L L^T in ``w``.

    log|J| = sum_k u_kk (``cholesky_cov``) + d log 2 + sum_k (d - k) u_kk
    (k from 0), where the second part is log|J| of L -> Sigma over the free
    entries Sigma_ij, j <= i: ordered row by row, entry (i, j) of row i reads
    L_ik for k <= j only, and dSigma_ij/dL_ij = L_jj (j < i), dSigma_ii/dL_ii =
    2 L_ii, so the Jacobian is triangular, its determinant 2^d prod_k L_kk^(d - k).
    Its log L_kk is u_kk, the formula in u that the floors keep (the module).
    """
    log_j = cholesky_cov_forward(theta, offset, w, d) + d * LOG_2
    for k in range(d):
        log_j += (d - k) * theta[offset + k * (k + 1) // 2 + k]
    gram_in_place(w, d)
    return log_j


@jitable
def cov_matrix_reverse(theta, offset, w, aw, target, jacobian, d):
    """Reverse sweep of ``cov_matrix_forward``, with L re-derived from theta (no
    scratch: its entries are theta's, its diagonal one floored exp each).

    Sigma_ab = sum_k L_ak L_bk, so the adjoint of L is (A + A^T) L with A the
    adjoints of the d x d entries of ``w`` (each of (i, j) and (j, i) has its
    own): a_L_ij = sum_{m >= j} B_im L_mj, B = A + A^T. Then ``cholesky_cov``'s
    sweep, plus the (d - i) of log|J| in u_ii. ``w`` is not read.
    """
    k = offset
    for i in range(d):
        for j in range(i + 1):
            diagonal = offset + j * (j + 1) // 2 + j  # the coordinate of L_jj
            a_l = (aw[i * d + j] + aw[j * d + i]) * floored_exp(theta[diagonal])[0]
            for m in range(j + 1, d):
                a_l += (aw[i * d + m] + aw[m * d + i]) * theta[offset + m * (m + 1) // 2 + j]
            if j < i:
                target[k] += a_l
            else:
                dx = floored_exp(theta[k])[1]
                if dx != 0.0:  # below the floor: an inf adjoint times 0 (see the module)
                    target[k] += a_l * dx
                target[k] += jacobian * (d - i + 1.0)
            k += 1


@jitable
def corr_matrix_forward(theta, offset, w, d):
    """Stan's correlation matrix: d (d - 1) / 2 coordinates to L
    (``cholesky_corr_forward``) and the full symmetric Omega = L L^T in ``w``,
    its diagonal set to 1 (it is 1 to rounding: the rows of L have unit length).

    log|J| = cholesky_corr's + sum_i (d - 1 - i) log L_ii (i from 0), the
    second part log|J| of L -> Omega over the strictly lower entries: row by
    row, Omega_ij (j < i) reads L_ik for k <= j of row i, dOmega_ij/dL_ij =
    L_jj, so the Jacobian is triangular with determinant prod_{i} prod_{j<i}
    L_jj = prod_j L_jj^(d - 1 - j). (L_ii follows from the rest of its row: it
    is no coordinate.) Where L_ii underflows to 0, Omega is singular and
    log|J| is -inf.
    """
    log_j = cholesky_corr_forward(theta, offset, w, d)
    for i in range(1, d - 1):
        log_j += (d - 1.0 - i) * vmath.log(w[i * d + i])
    gram_in_place(w, d)
    for i in range(d):
        w[i * d + i] = 1.0
    return log_j


@jitable
def corr_matrix_reverse(theta, offset, w, aw, target, jacobian, d):
    """Reverse sweep of ``corr_matrix_forward``.

    The adjoint of L is a_L_iq = sum_{m != i} B_im L_mq (B = A + A^T, A the
    adjoints of ``w``'s entries): the diagonal of Omega is the constant 1, so
    its adjoints are dropped (their exact contribution, A_ii d|L_i|^2/du, is
    0). Column q of L is read for every row i, and re-deriving an entry from
    theta costs a product over its row, so L is stored for the sweep in the
    half of ``w`` that repeats the other: L_mq at (q, m) above the diagonal,
    L_qq on the diagonal. The sweep restores both exactly (the mirror of the
    lower triangle, and 1), and reads nothing else of ``w``: no scratch, and
    ``w`` is unchanged afterwards. Then each row's ``cholesky_corr`` sweep
    (``_corr_entry_reverse``), plus the extra log|J|'s (d - 1 - i) log L_ii,
    whose derivative in u_iq is -(d - 1 - i) z_iq.
    """
    k = offset
    for i in range(1, d):
        s = 1.0
        for j in range(i):
            u = theta[k]
            k += 1
            w[j * d + i] = math.tanh(u) * math.sqrt(s)
            s *= vmath.exp(_log_sech2(u))
        w[i * d + i] = math.sqrt(s)
    for i in range(d - 1, 0, -1):
        k -= i
        s = 1.0  # s_i as the forward sweep has it (not L_ii^2, which rounds)
        for j in range(i):
            s *= vmath.exp(_log_sech2(theta[k + j]))
        a_s = _corr_adjoint(w, aw, d, i, i) * 0.5 / math.sqrt(s) if s > 0.0 else 0.0
        for j in range(i - 1, -1, -1):
            du, s, a_s, z = _corr_entry_reverse(theta[k + j], s, a_s, _corr_adjoint(w, aw, d, i, j), jacobian)
            target[k + j] += du - jacobian * (d - 1.0 - i) * z
    for i in range(d):
        for j in range(i):
            w[j * d + i] = w[i * d + j]
        w[i * d + i] = 1.0


@jitable
def _corr_adjoint(w, aw, d, i, q):
    """a_L_iq = sum_{m >= q, m != i} (A_im + A_mi) L_mq, L stored transposed in
    ``w``'s upper triangle and diagonal (``corr_matrix_reverse``)."""
    a = 0.0
    for m in range(q, d):
        if m != i:
            a += (aw[i * d + m] + aw[m * d + i]) * w[q * d + m]
    return a


class EventTransform:
    """Numpy side of a transform of whole vectors or matrices; the generated code
    calls the numba kernels above it names (``forward_code``, ``reverse_code``)."""

    identity = False
    event = True

    def __init__(self, name):
        self.name = name
        self.kernel = name  # the kernels' prefix: ``<kernel>_forward``, ``<kernel>_reverse``

    def check_shape(self, shape, what):
        """A ``ModelError`` naming ``what`` when the parameter's shape does not fit."""
        if len(shape) != 1:
            raise ModelError(f"{what}: the {self.name} constraint needs a vector shape")
        if shape[0] < 2:
            raise ModelError(f"{what}: a {self.name} vector needs at least 2 elements")

    def unconstrained_size(self, shape):
        return shape[0]

    def forward_code(self, offset, name):
        """Generated line computing ``w_<name>`` and its log|J| ``lj_<name>``."""
        return f"lj_{name} = events.{self.kernel}_forward(theta, {offset}, w_{name}{self._extra()})"

    def reverse_code(self, offset, name, target, jacobian):
        """Generated line adding the gradient into ``target`` from the adjoints ``aw_<name>``."""
        return (f"events.{self.kernel}_reverse(theta, {offset}, w_{name}, aw_{name}, {target}, "
                f"{jacobian}{self._extra()})")

    def _extra(self):
        """Further constant arguments of this transform's kernels."""
        return ""


class Ordered(EventTransform):
    """``ordered`` and ``positive_ordered``: increasing steps of exp(u)."""

    def __init__(self, name):
        super().__init__(name)
        self.kernel, self.positive = "ordered", name == "positive_ordered"

    def forward(self, u):
        u = np.asarray(u, dtype=float)
        w = np.empty(u.shape[0])
        ordered_forward(u, 0, w, self.positive)
        return w

    def inverse(self, x):
        x = np.asarray(x, dtype=float)
        first = np.log(x[:1]) if self.positive else x[:1]
        return np.concatenate([first, np.log(np.diff(x))])

    def _extra(self):
        return f", {self.positive}"


class Simplex(EventTransform):
    """Stan's stick-breaking: K - 1 coordinates."""

    def unconstrained_size(self, shape):
        return shape[0] - 1

    def forward(self, u):
        u = np.asarray(u, dtype=float)
        w = np.empty(u.shape[0] + 1)
        simplex_forward(u, 0, w)
        return w

    def inverse(self, x):
        x = np.asarray(x, dtype=float)
        size = x.shape[0]
        stick = 1.0 - np.concatenate([[0.0], np.cumsum(x[:-1])])[:-1]
        return sp.logit(x[:-1] / stick) + np.log(size - np.arange(size - 1) - 1.0)


class CholeskyCorr(EventTransform):
    """Stan's Cholesky factor of a correlation matrix: d (d - 1) / 2 coordinates."""

    def __init__(self, name):
        super().__init__(name)
        self.d = None

    def check_shape(self, shape, what):
        if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 1:
            raise ModelError(f"{what}: the {self.name} constraint needs a square matrix shape (d, d), "
                             f"got {shape}")
        self.d = shape[0]

    def unconstrained_size(self, shape):
        return shape[0] * (shape[0] - 1) // 2

    def _extra(self):
        return f", {self.d}"

    def forward(self, u):
        w = np.empty(self.d * self.d)
        cholesky_corr_forward(np.asarray(u, dtype=float), 0, w, self.d)
        return w.reshape(self.d, self.d)

    def inverse(self, x):
        x = np.asarray(x, dtype=float)
        out = []
        for i in range(1, x.shape[0]):
            s = 1.0
            for j in range(i):
                z = x[i, j] / np.sqrt(s)
                out.append(np.arctanh(z))
                s *= 1.0 - z * z
        return np.array(out)


class SumToZero(EventTransform):
    """Stan's isometric sum-to-zero vector: N - 1 coordinates."""

    def unconstrained_size(self, shape):
        return shape[0] - 1

    def forward(self, u):
        w = np.empty(np.shape(u)[0] + 1)
        sum_to_zero_forward(np.asarray(u, dtype=float), 0, w)
        return w

    def inverse(self, x):
        """V^T x: V's columns are orthonormal, so this undoes ``forward`` on sums of 0."""
        x = np.asarray(x, dtype=float)
        u = np.zeros(x.shape[0] - 1)
        sum_to_zero_reverse(u, 0, x, x, u, 0.0)
        return u


class UnitVector(EventTransform):
    """Stan's unit vector: N coordinates, x = u / |u|."""

    def forward(self, u):
        u = np.asarray(u, dtype=float)
        return u / np.linalg.norm(u)

    def inverse(self, x):
        return np.asarray(x, dtype=float)


class CholeskyCov(CholeskyCorr):
    """Stan's Cholesky factor of a covariance matrix: d (d + 1) / 2 coordinates."""

    def unconstrained_size(self, shape):
        return shape[0] * (shape[0] + 1) // 2

    def forward(self, u):
        w = np.empty(self.d * self.d)
        cholesky_cov_forward(np.asarray(u, dtype=float), 0, w, self.d)
        return w.reshape(self.d, self.d)

    def inverse(self, x):
        x = np.asarray(x, dtype=float)
        return np.array([np.log(x[i, j]) if i == j else x[i, j]
                         for i in range(self.d) for j in range(i + 1)])


class CovMatrix(CholeskyCov):
    """Stan's covariance matrix: d (d + 1) / 2 coordinates, those of its Cholesky factor."""

    def forward(self, u):
        w = np.empty(self.d * self.d)
        cov_matrix_forward(np.asarray(u, dtype=float), 0, w, self.d)
        return w.reshape(self.d, self.d)

    def inverse(self, x):
        """``CholeskyCov.inverse`` of the Cholesky factor of the symmetric part of ``x``."""
        x = np.asarray(x, dtype=float)
        return super().inverse(np.linalg.cholesky(0.5 * (x + x.T)))


class CorrMatrix(CholeskyCorr):
    """Stan's correlation matrix: d (d - 1) / 2 coordinates, those of its Cholesky factor."""

    def forward(self, u):
        w = np.empty(self.d * self.d)
        corr_matrix_forward(np.asarray(u, dtype=float), 0, w, self.d)
        return w.reshape(self.d, self.d)

    def inverse(self, x):
        """``CholeskyCorr.inverse`` of the Cholesky factor of the symmetric part of
        ``x``, its rows scaled to unit length (a diagonal within the tolerance of 1)."""
        x = np.asarray(x, dtype=float)
        chol = np.linalg.cholesky(0.5 * (x + x.T))
        return super().inverse(chol / np.linalg.norm(chol, axis=1, keepdims=True))


def for_event_constraint(name):
    """The transform of event constraint ``name`` (``constraints.EVENT_CONSTRAINTS``)."""
    kinds = {"simplex": Simplex, "ordered": Ordered, "positive_ordered": Ordered,
             "cholesky_corr": CholeskyCorr, "cholesky_cov": CholeskyCov, "corr_matrix": CorrMatrix,
             "cov_matrix": CovMatrix, "sum_to_zero": SumToZero, "unit_vector": UnitVector}
    return kinds[name](name)
