"""Transforms of whole vectors: ordered, positive_ordered, simplex.

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

#: Unconstrained coordinates below this are read as this by exp and logistic.
LOG_FLOOR = -700.0


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


class EventTransform:
    """Numpy side of a vector transform; ``kind`` names its numba kernels."""

    identity = False
    event = True

    def __init__(self, kind):
        self.kind = kind

    def unconstrained_size(self, shape):
        return shape[0] - 1 if self.kind == "simplex" else shape[0]

    def forward(self, u):
        u = np.asarray(u, dtype=float)
        w = np.empty(u.shape[0] + 1 if self.kind == "simplex" else u.shape[0])
        if self.kind == "simplex":
            simplex_forward(u, 0, w)
        else:
            ordered_forward(u, 0, w, self.kind == "positive_ordered")
        return w

    def inverse(self, x):
        x = np.asarray(x, dtype=float)
        if self.kind == "simplex":
            size = x.shape[0]
            stick = 1.0 - np.concatenate([[0.0], np.cumsum(x[:-1])])[:-1]
            return sp.logit(x[:-1] / stick) + np.log(size - np.arange(size - 1) - 1.0)
        first = np.log(x[:1]) if self.kind == "positive_ordered" else x[:1]
        return np.concatenate([first, np.log(np.diff(x))])

    def forward_code(self, offset, name):
        """Generated line computing ``w_<name>`` and its log|J| ``lj_<name>``."""
        if self.kind == "simplex":
            return f"lj_{name} = events.simplex_forward(theta, {offset}, w_{name})"
        return (f"lj_{name} = events.ordered_forward(theta, {offset}, w_{name}, "
                f"{self.kind == 'positive_ordered'})")

    def reverse_code(self, offset, name, target, jacobian):
        """Generated line adding the gradient into ``target`` from the adjoints ``aw_<name>``."""
        if self.kind == "simplex":
            return f"events.simplex_reverse(theta, {offset}, w_{name}, aw_{name}, {target}, {jacobian})"
        return (f"events.ordered_reverse(theta, {offset}, w_{name}, aw_{name}, {target}, {jacobian}, "
                f"{self.kind == 'positive_ordered'})")
