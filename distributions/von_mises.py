"""Von Mises distribution on the circle.

    log p(x | loc, k) = k cos(x - loc) - log(2 pi) - log I0(k),   k = concentration
                      = -2 k sin^2((x - loc) / 2) - [log I0(k) - k] - log(2 pi)

Support: -pi <= x <= pi. Parameters: loc real (any real; the density has
period 2 pi in loc), concentration > 0. The second form is the one computed:
for large k both ``k cos(x - loc)`` and ``log I0(k)`` are about k and their
difference would lose log10(k) digits, while ``log I0(k) - k`` is O(log k)
and is evaluated directly (``special.log_i0e``). Accurate for concentration
from 1e-8 to 1e8 and beyond.
scipy: ``scipy.stats.vonmises(kappa=concentration, loc=loc)``;
Stan: ``von_mises_lpdf(x | loc, concentration)``.
"""

import math

from .constraints import interval, positive, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import LOG_2PI, log_i0e, one_minus_i1_over_i0


@jitable
def _valid(x, loc, concentration):
    return (0.0 < concentration < math.inf and -math.pi <= x <= math.pi
            and -math.inf < loc < math.inf)


@jitable
def logpdf(x, loc, concentration):
    """Normalized log density; ``-inf`` outside [-pi, pi] or for concentration <= 0."""
    if not _valid(x, loc, concentration):
        return -math.inf
    # k (cos d - 1) = -2 k sin^2(d / 2): no cancellation near d = 0.
    s = math.sin(0.5 * (x - loc))
    lp = -concentration * (2.0 * s * s) - log_i0e(concentration) - LOG_2PI
    # k sin^2 overflows only for k near the largest float: a rejected point.
    return lp if lp > -math.inf else -math.inf


@kernel
def logpdf_grad(x, loc, concentration, keep):
    """``(lp, d_x, d_loc, d_concentration)``; see ``distributions.spec`` for ``keep``."""
    if not _valid(x, loc, concentration):
        return -math.inf, 0.0, 0.0, 0.0
    lp = 0.0
    d_x = 0.0
    d_k = 0.0
    if keep[0]:
        d = x - loc
        s = math.sin(0.5 * d)
        d_k = -2.0 * s * s
        lp = concentration * d_k
        d_x = -concentration * math.sin(d)
    if keep[1]:
        # d/dk -(log I0(k) - k) = 1 - I1(k)/I0(k), also accurate for large k.
        lp -= log_i0e(concentration)
        d_k += one_minus_i1_over_i0(concentration)
    if keep[2]:
        lp -= LOG_2PI
    if not (lp > -math.inf):
        return -math.inf, 0.0, 0.0, 0.0
    return lp, d_x, -d_x, d_k


@jitable
def _envelope(k):
    """e = s - 1 of Best & Fisher's wrapped-Cauchy envelope, s = (1 + rho^2) / (2 rho),
    rho = (tau - sqrt(2 tau)) / (2 k), tau = 1 + sqrt(1 + 4 k^2), as
    e = (1 - rho)^2 / (2 rho) without cancellation: for k <= 1,
    rho = 2 k tau / ((sqrt(1 + 4 k^2) + 1) (tau + sqrt(2 tau))); for k > 1
    (rho near 1), 1 - rho = (sqrt(2 tau) - 1 - 1 / (sqrt(1 + 4 k^2) + 2 k)) / (2 k)."""
    root = math.sqrt(1.0 + 4.0 * k * k) if k < 1e150 else 2.0 * k
    tau = 1.0 + root
    if k <= 1.0:
        rho = 2.0 * k * tau / ((root + 1.0) * (tau + math.sqrt(2.0 * tau)))
        one_minus_rho = 1.0 - rho
    else:
        one_minus_rho = (math.sqrt(2.0 * tau) - 1.0 - 1.0 / (root + 2.0 * k)) / (2.0 * k)
        rho = 1.0 - one_minus_rho
    return one_minus_rho * one_minus_rho / (2.0 * rho)


@jitable
def rvs(state, loc, concentration):
    """One draw, wrapped into [-pi, pi): Best & Fisher (1979), "Efficient simulation
    of the von Mises distribution", Applied Statistics 28(2), rejection from a
    wrapped Cauchy. With s = 1 + e and z = cos(pi U), their f = (1 + s z) / (s + z)
    enters as 1 - f = e (1 - z) / (1 + e + z) and k (s - f) = k e (2 + e) / (1 + e + z),
    and acos(f) as 2 asin(sqrt((1 - f) / 2)): no cancellation for any k."""
    k = concentration
    e = _envelope(k)
    while True:
        h = 0.5 * math.pi * random.uniform(state)
        one_minus_z = 2.0 * math.sin(h) ** 2  # z = cos(2 h), 1 -+ z without cancellation
        ratio = e / (2.0 * math.cos(h) ** 2 + e)
        c = k * ratio * (2.0 + e)
        u = random.uniform_open(state)
        if c * (2.0 - c) - u > 0.0 or math.log(c / u) + 1.0 - c >= 0.0:
            break
    theta = 2.0 * math.asin(min(math.sqrt(0.5 * one_minus_z * ratio), 1.0))
    x = loc - theta if random.uniform(state) < 0.5 else loc + theta
    if not (-math.pi <= x < math.pi):
        x -= 2.0 * math.pi * math.floor((x + math.pi) / (2.0 * math.pi))
    return x


SPEC = Spec(
    name="VonMises",
    params=(Param("loc", real), Param("concentration", positive)),
    support=interval(-math.pi, math.pi, closed=True),
    summands=(
        Summand(("x", "loc", "concentration"), "concentration (cos(x - loc) - 1)"),
        Summand(("concentration",), "concentration - log I0(concentration)"),
        Summand((), "-log(2 pi)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class VonMises(Distribution):
    __doc__ = __doc__
    spec = SPEC
