"""Discrete uniform distribution on the integers lower, lower + 1, ..., upper.

    log p(x | lower, upper) = -log(upper - lower + 1),   x = lower, ..., upper

Both ends are included, as PyMC's ``pm.DiscreteUniform(lower, upper)`` and
NumPyro's ``DiscreteUniform(low, high)``. Parameters: lower an integer,
upper an integer >= lower (neither has a partial: they are integers).
scipy: ``scipy.stats.randint(lower, upper + 1)`` (scipy excludes its upper
end); Stan: ``discrete_range_lpmf(x | lower, upper)``.

As a parameter's prior (``m.param("s", ld.DiscreteUniform(0, T - 1))``) it
is summed out of the model (``logdens.marginalize``).
"""

import math

from .constraints import Constraint, integer_interval
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random, vmath

#: Any integer (a bound of the support).
_INTEGER = Constraint("integer", integer=True)
#: An integer >= the argument ``lower``.
_AT_LEAST_LOWER = Constraint("greater_than", lower="lower", lower_closed=True, integer=True)


@jitable
def _valid(x, lower, upper):
    """Finite integer bounds with lower <= x <= upper, x an integer (the comparisons
    come first: NaN fails them, and ``math.floor`` of NaN or inf raises)."""
    return (-math.inf < lower <= x <= upper < math.inf and lower == math.floor(lower)
            and upper == math.floor(upper) and x == math.floor(x))


@jitable
def logpdf(x, lower, upper):
    """Normalized log mass; ``-inf`` off {lower, ..., upper} or for invalid bounds."""
    if not _valid(x, lower, upper):
        return -math.inf
    return -vmath.log(upper - lower + 1.0)


@kernel
def logpdf_grad(x, lower, upper, keep):
    """``(lp, d_x = 0, d_lower = 0, d_upper = 0)``: the bounds are integers, without
    partials; the checks pick a stand-in point as Uniform's do (``distributions.spec``)."""
    ok = _valid(x, lower, upper)
    width = upper - lower + 1.0 if ok else 1.0
    lp = -vmath.log(width) if keep[0] else 0.0
    if ok:
        return lp, 0.0, 0.0, 0.0
    return -math.inf, 0.0, 0.0, 0.0


@jitable
def rvs(state, lower, upper):
    """One draw by inversion, lower + floor((upper - lower + 1) U), U in [0, 1);
    capped at upper against rounding."""
    return min(lower + math.floor((upper - lower + 1.0) * random.uniform(state)), upper)


SPEC = Spec(
    name="DiscreteUniform",
    params=(Param("lower", _INTEGER), Param("upper", _AT_LEAST_LOWER)),
    support=integer_interval("lower", "upper"),
    summands=(
        Summand(("lower", "upper"), "-log(upper - lower + 1)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class DiscreteUniform(Distribution):
    __doc__ = __doc__
    spec = SPEC
