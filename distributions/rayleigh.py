"""Rayleigh distribution.

    log p(x | scale) = log(x) - 2 log(scale) - (x / scale)^2 / 2

Support: x >= 0. The density is finite on the whole support but vanishes at
x = 0, so the value there is ``-inf`` (with zero partials), as in scipy.
Parameter: scale > 0.
scipy: ``scipy.stats.rayleigh(scale=scale)``; Stan: ``rayleigh_lpdf(x | scale)``.
"""

import math

from . import vmath
from .constraints import nonnegative, positive
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random

# sqrt of the largest float64: beyond it (x / scale)^2 overflows and the
# log density is below -8.9e307, i.e. -inf.
_Z_MAX = 1.3407807929942596e154


@jitable
def _finite(x, scale):
    """Whether the value is finite: a valid scale, x > 0 and (x/scale)^2 < inf.

    x = 0 belongs to the support but has log density -inf.
    """
    return 0.0 < scale < math.inf and 0.0 < x < math.inf and x / scale < _Z_MAX


@jitable
def logpdf(x, scale):
    """Normalized log density; ``-inf`` for x <= 0 or scale <= 0."""
    if not _finite(x, scale):
        return -math.inf
    z = x / scale
    return vmath.log(x) - 2.0 * vmath.log(scale) - 0.5 * z * z


@kernel
def logpdf_grad(x, scale, keep):
    """``(lp, d_x, d_scale)``; see ``distributions.spec`` for ``keep``."""
    if not _finite(x, scale):
        return -math.inf, 0.0, 0.0
    z = x / scale
    lp = 0.0
    d_x = 0.0
    d_scale = 0.0
    if keep[0]:
        lp = vmath.log(x)
        d_x = 1.0 / x
    if keep[1]:
        lp -= 2.0 * vmath.log(scale)
        d_scale = -2.0 / scale
    if keep[2]:
        lp -= 0.5 * z * z
        d_x = -z / scale
        d_scale = z * z / scale
    # Where summands share an argument their partials are combined before the
    # one division (1/x - z/scale = (1 - z^2)/x, -2/scale + z^2/scale =
    # (z^2 - 2)/scale): for subnormal x or scale the separate terms are inf
    # and their sum would be NaN.
    if keep[0] and keep[2]:
        d_x = (1.0 - z * z) / x
    if keep[1] and keep[2]:
        d_scale = (z * z - 2.0) / scale
    return lp, d_x, d_scale


@jitable
def rvs(state, scale):
    """One draw by inversion: scale sqrt(2 E), E standard exponential."""
    return scale * math.sqrt(2.0 * random.exponential(state))


SPEC = Spec(
    name="Rayleigh",
    params=(Param("scale", positive),),
    support=nonnegative,
    summands=(
        Summand(("x",), "log(x)"),
        Summand(("scale",), "-2 log(scale)"),
        Summand(("x", "scale"), "-(x / scale)^2 / 2"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class Rayleigh(Distribution):
    __doc__ = __doc__
    spec = SPEC
