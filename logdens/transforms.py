"""Unconstraining transforms: one per constraint, with log-Jacobian and derivatives.

A transform maps an unconstrained real ``u`` to a constrained value ``x``.
Each one exists twice, from the same formulas: numpy functions (``forward``,
``inverse``) for ``constrain``/``unconstrain``, and code emitters that the
engine inlines into generated kernels. The elementwise transforms are here
(``real``, ``positive``, ``greater_than``, ``less_than``, ``interval``,
``unit_interval``): the value of element k depends on ``u[k]`` alone, so the
chain rule is one multiplication by ``dx/du``. Vector constraints (simplex,
ordered) are in ``logdens.event_transforms``.

exp and logistic read u below ``LOG_FLOOR`` (-700) as ``LOG_FLOOR``, with a
derivative of 0 there, so that a constrained value is never subnormal; the
log-Jacobian keeps its formula in u (``logdens.event_transforms`` says why).
The numpy ``forward`` floors as the generated code does; ``inverse`` of a
value below ``exp(LOG_FLOOR)`` gives a u below the floor, which ``forward``
maps to ``exp(LOG_FLOOR)``.
"""

import numpy as np
from scipy import special as sp

from logdens import bounds
from logdens.distributions import constraints as c
from logdens.event_transforms import LOG_FLOOR, for_event_constraint
from logdens.expr import ModelError


def _floored(u):
    """``max(u, LOG_FLOOR)`` elementwise, NaN kept: the numpy side of ``events.floored_exp``."""
    u = np.asarray(u, dtype=float)
    return np.where(u < LOG_FLOOR, LOG_FLOOR, u)


class Transform:
    """``x = forward(u)``; ``log_jacobian(u) = log |dx/du|``.

    ``emit(lines, u, name)`` appends generated statements computing ``x``
    and ``dx/du`` from the code string ``u`` and returns their variable names;
    ``emit_log_jacobian(code, u)`` returns code strings for log|J| and its
    derivative in ``u``.
    """

    identity = False
    event = False

    def unconstrained_size(self, shape):
        return int(np.prod(shape, dtype=int))

    def forward(self, u):
        raise NotImplementedError

    def inverse(self, x):
        raise NotImplementedError


class Identity(Transform):
    """Real values: x = u."""

    identity = True

    def forward(self, u):
        return np.asarray(u, dtype=float)

    def inverse(self, x):
        return np.asarray(x, dtype=float)

    def log_jacobian(self, u):
        return np.zeros_like(np.asarray(u, dtype=float))


class LowerBound(Transform):
    """x > lower: x = lower + exp(u), log|J| = u (exp floored at ``LOG_FLOOR``)."""

    def __init__(self, lower):
        self.lower = float(lower)

    def forward(self, u):
        return self.lower + np.exp(_floored(u))

    def inverse(self, x):
        return np.log(np.asarray(x, dtype=float) - self.lower)

    def log_jacobian(self, u):
        return np.asarray(u, dtype=float)

    def emit(self, lines, u, name):
        lines.append(f"e_{name}, dx_{name} = events.floored_exp({u})")
        lines.append(f"x_{name} = {self.lower!r} + e_{name}")
        return f"x_{name}", f"dx_{name}"

    def emit_log_jacobian(self, u):
        return u, "1.0"


class UpperBound(Transform):
    """x < upper: x = upper - exp(u), log|J| = u (exp floored at ``LOG_FLOOR``)."""

    def __init__(self, upper):
        self.upper = float(upper)

    def forward(self, u):
        return self.upper - np.exp(_floored(u))

    def inverse(self, x):
        return np.log(self.upper - np.asarray(x, dtype=float))

    def log_jacobian(self, u):
        return np.asarray(u, dtype=float)

    def emit(self, lines, u, name):
        lines.append(f"e_{name}, de_{name} = events.floored_exp({u})")
        lines.append(f"x_{name} = {self.upper!r} - e_{name}")
        lines.append(f"dx_{name} = -de_{name}")
        return f"x_{name}", f"dx_{name}"

    def emit_log_jacobian(self, u):
        return u, "1.0"


class Interval(Transform):
    """lower < x < upper: x = lower + width * logistic(u).

    log|J| = log(width) + log_logistic(u) + log_logistic(-u), whose derivative
    is logistic(-u) - logistic(u) = 1 - 2 logistic(u). logistic is floored
    at ``LOG_FLOOR``; log|J| is not.
    """

    def __init__(self, lower, upper):
        self.lower, self.upper = float(lower), float(upper)
        self.width = self.upper - self.lower

    def forward(self, u):
        return self.lower + self.width * sp.expit(_floored(u))

    def inverse(self, x):
        return sp.logit((np.asarray(x, dtype=float) - self.lower) / self.width)

    def log_jacobian(self, u):
        return np.log(self.width) + sp.log_expit(u) + sp.log_expit(-u)

    def emit(self, lines, u, name):
        lines.append(f"s_{name}, ds_{name} = events.floored_logistic({u})")
        lines.append(f"x_{name} = {self.lower!r} + {self.width!r} * s_{name}")
        lines.append(f"dx_{name} = {self.width!r} * ds_{name}")
        return f"x_{name}", f"dx_{name}"

    def emit_log_jacobian(self, u):
        return (f"{float(np.log(self.width))!r} + special.log_logistic({u}) + special.log_logistic(-({u}))",
                f"1.0 - 2.0 * special.logistic({u})")


def _number(bound, what):
    if isinstance(bound, str) or not np.isfinite(bound):
        raise ModelError(f"{what}: bounds of a constraint must be finite numbers, got {bound!r}")
    return float(bound)


def _finite_or_none(bound, infinity):
    """``bound``, or None where it is the infinity at its end (no bound there: a
    truncation's ``upper=np.inf``)."""
    return None if isinstance(bound, (int, float)) and bound == infinity else bound


def for_constraint(constraint, what):
    """The transform that maps the real line onto ``constraint``.

    ``what`` names the parameter in errors (infinite bounds and integer
    supports are rejected here). Bounds that are expressions give the raw
    value's transform (``logdens.bounds``).
    """
    if constraint.integer:
        raise ModelError(f"{what}: a parameter cannot be discrete ({constraint!r}); "
                         "marginalize it out or observe it")
    if constraint.name in c.EVENT_CONSTRAINTS:
        return for_event_constraint(constraint.name)
    if bounds.has_expression(constraint):
        constraint = bounds.raw_constraint(constraint)
    lower, upper = _finite_or_none(constraint.lower, -np.inf), _finite_or_none(constraint.upper, np.inf)
    if lower is None and upper is None:
        return Identity()
    if upper is None:
        return LowerBound(_number(lower, what))
    if lower is None:
        return UpperBound(_number(upper, what))
    lower, upper = _number(lower, what), _number(upper, what)
    if not lower < upper:
        raise ModelError(f"{what}: interval({lower}, {upper}) is empty")
    return Interval(lower, upper)
