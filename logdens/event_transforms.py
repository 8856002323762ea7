"""Transforms of whole vectors: ordered, positive_ordered, simplex.

Element k of the constrained vector depends on several unconstrained
coordinates, so the engine materializes the vector once per call (``w``),
accumulates the adjoints of its elements (``aw``) in the term loops, and then
runs the transform's reverse sweep once (``*_reverse``), adding the
log-Jacobian's gradient scaled by ``jacobian`` (1.0 or 0.0). The scalar
kernels are ``distributions.jit.jitable`` (plain Python too, cached); the numpy methods serve
``constrain``/``unconstrain``.
"""

import math

import numpy as np
from scipy import special as sp

from logdens.distributions import special, vmath
from logdens.distributions.jit import jitable


@jitable
def ordered_forward(theta, offset, w, positive):
    """x_0 = u_0 (exp(u_0) if ``positive``), x_k = x_{k-1} + exp(u_k); returns log|J|."""
    log_j = theta[offset] if positive else 0.0
    w[0] = vmath.exp(theta[offset]) if positive else theta[offset]
    for k in range(1, w.size):
        w[k] = w[k - 1] + vmath.exp(theta[offset + k])
        log_j += theta[offset + k]
    return log_j


@jitable
def ordered_reverse(theta, offset, w, aw, target, jacobian, positive):
    """Add the gradient w.r.t. u of sum(aw * x) + jacobian * log|J| into ``target[offset:]``.

    x_j depends on u_k for every k <= j, with dx_j/du_k = exp(u_k) (k >= 1, or
    k = 0 when positive), so the adjoint of u_k is exp(u_k) * sum_{j >= k} aw_j.
    """
    tail = 0.0
    for k in range(w.size - 1, -1, -1):
        tail += aw[k]
        if k > 0 or positive:
            target[offset + k] += tail * vmath.exp(theta[offset + k]) + jacobian
        else:
            target[offset] += tail


@jitable
def simplex_forward(theta, offset, w):
    """Stan's stick-breaking: K - 1 coordinates to K positive values summing to 1.

    z_k = logistic(u_k - log(K - k - 1)), x_k = stick_k z_k, stick_{k+1} = stick_k - x_k,
    x_{K-1} = stick_{K-1}; log|J| = sum_k log z_k + log(1 - z_k) + log stick_k.
    """
    size = w.size
    stick, log_j = 1.0, 0.0
    for k in range(size - 1):
        y = theta[offset + k] - vmath.log(size - k - 1.0)
        z = special.logistic(y)
        w[k] = stick * z
        log_j += special.log_logistic(y) + special.log_logistic(-y) + vmath.log(stick)
        stick -= w[k]
    w[size - 1] = stick
    return log_j


@jitable
def simplex_reverse(theta, offset, w, aw, target, jacobian):
    """Reverse sweep of ``simplex_forward``; stick_k = sum_{j >= k} x_j is rebuilt from the end."""
    size = w.size
    stick = w[size - 1]
    a_stick = aw[size - 1]  # adjoint of stick_{k+1} while processing k
    for k in range(size - 2, -1, -1):
        stick_next = stick
        stick = stick_next + w[k]  # stick_k
        z = w[k] / stick
        # stick_{k+1} = stick_k (1 - z_k); x_k = stick_k z_k; log|J| has log stick_k
        a_z = aw[k] * stick - a_stick * stick
        a_stick = a_stick * (1.0 - z) + aw[k] * z + jacobian / stick
        target[offset + k] += a_z * z * (1.0 - z) + jacobian * (1.0 - 2.0 * z)


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
