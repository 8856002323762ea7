"""Step-size adaptation: Stan's initial heuristic and Nesterov dual averaging.

Dual averaging (Hoffman & Gelman 2014, section 3.2; Stan's
``stepsize_adaptation``) as an ``(init, update, final)`` triple over an
immutable :class:`DualAveragingState`.  Stan's constants are the defaults:
``gamma = 0.05``, ``t0 = 10``, ``kappa = 0.75``, ``mu = log(10 eps0)``.
"""

import math
from typing import NamedTuple

from ._jit import compiled, inlined
from .integrator import leapfrog
from .metric import hamiltonian, sample_momentum, velocity

GAMMA = 0.05
T0 = 10.0
KAPPA = 0.75
#: Stan's ``init_stepsize`` moves the step size until the one-step
#: acceptance crosses 0.8.
HEURISTIC_ACCEPT = 0.8


class DualAveragingState(NamedTuple):
    """State of dual averaging on ``x = log(step size)``.

    Attributes
    ----------
    counter : float
        Number of updates since the last restart.
    s_bar : float
        Running average of ``target - accept``.
    x_bar : float
        Iterate average of ``x``; ``exp(x_bar)`` is the final step size.
    mu : float
        Shrinkage target, ``log(10 * eps0)``.
    x : float
        Current log step size.
    """

    counter: float
    s_bar: float
    x_bar: float
    mu: float
    x: float


@compiled
def dual_averaging_init(step_size):
    """Start (or restart) dual averaging around ``step_size``."""
    return DualAveragingState(0.0, 0.0, 0.0, math.log(10.0 * step_size),
                              math.log(step_size))


@compiled
def dual_averaging_update(state, accept_stat, target_accept):
    """Return the state after observing one transition's acceptance statistic.

    ``s_bar <- (1 - eta) s_bar + eta (delta - a)`` with ``eta = 1/(t + t0)``;
    ``x = mu - s_bar sqrt(t) / gamma``;
    ``x_bar <- (1 - t^-kappa) x_bar + t^-kappa x``.
    """
    a = min(accept_stat, 1.0)
    t = state.counter + 1.0
    eta = 1.0 / (t + T0)
    s_bar = (1.0 - eta) * state.s_bar + eta * (target_accept - a)
    x = state.mu - s_bar * math.sqrt(t) / GAMMA
    w = t ** (-KAPPA)
    x_bar = (1.0 - w) * state.x_bar + w * x
    return DualAveragingState(t, s_bar, x_bar, state.mu, x)


@compiled
def dual_averaging_final(state):
    """Return the adapted step size ``exp(x_bar)`` used after warmup."""
    return math.exp(state.x_bar)


@compiled
def _one_step_delta_h(f, fdata, idata, metric, eps, rng, q, g, lp, work):
    """Energy change ``H0 - H`` of one leapfrog step from ``q``, fresh momentum."""
    ends = work.ends
    qn, pn, gn, vn = ends[0, 1], ends[1, 1], ends[2, 1], ends[3, 1]
    for i in range(q.shape[0]):  # a loop: slice assignment compiles slowly
        qn[i] = q[i]
        gn[i] = g[i]
    sample_momentum(metric, rng, pn)
    velocity(metric, pn, vn)
    h0 = hamiltonian(lp, pn, vn)
    lp_new = leapfrog(f, fdata, idata, metric, eps, qn, pn, gn, vn)
    return h0 - hamiltonian(lp_new, pn, vn)


@inlined
def find_reasonable_step_size(f, fdata, idata, metric, eps, rng, q, g, lp, work,
                              max_iter=100):
    """Stan's ``init_stepsize``: double or halve ``eps`` until the one-step
    acceptance ``exp(H0 - H)`` crosses 0.8; returns the new step size.

    Stops after ``max_iter`` changes (Stan raises instead) and keeps the step
    size within ``[1e-10, 1e7]``.
    """
    log_target = math.log(HEURISTIC_ACCEPT)
    direction = 0
    for k in range(max_iter + 1):
        # One call site, so the step (a momentum draw and a leapfrog step) is
        # compiled into this function once.
        delta = _one_step_delta_h(f, fdata, idata, metric, eps, rng, q, g, lp, work)
        if k == 0:  # the first step, at the given eps, sets the direction
            direction = 1 if delta > log_target else -1
            continue
        if direction == 1 and not delta > log_target:
            break
        if direction == -1 and not delta < log_target:
            break
        eps = eps * 2.0 if direction == 1 else eps * 0.5
        if eps > 1e7 or eps < 1e-10:
            break
    return min(max(eps, 1e-10), 1e7)
