"""Von Mises distribution on the circle.

    log p(x | loc, k) = k cos(x - loc) - log(2 pi) - log I0(k),   k = concentration
                      = -2 k sin^2((x - loc) / 2) - [log I0(k) - k] - log(2 pi)

Support: -pi <= x <= pi. Parameters: loc real (any real; the density has
period 2 pi in loc), concentration > 0. The second form is the one computed:
for large k both ``k cos(x - loc)`` and ``log I0(k)`` are about k and their
difference would lose log10(k) digits, while ``log I0(k) - k`` is O(log k)
and is evaluated directly (``_log_i0e``). Accurate for concentration from
1e-8 to 1e8 and beyond.
scipy: ``scipy.stats.vonmises(kappa=concentration, loc=loc)``;
Stan: ``von_mises_lpdf(x | loc, concentration)``.
"""

import math

from numba.extending import register_jitable

from distributions.constraints import interval, positive, real
from distributions.frozen import Distribution
from distributions.spec import Param, Spec, Summand
from distributions.special import LOG_2PI, LOG_SQRT_2PI, i1_over_i0, log_i0

# Above this concentration log I0(k) - k and 1 - I1(k)/I0(k) come from the
# asymptotic series; below it from log_i0 and i1_over_i0, whose absolute
# errors (a few ulps of k and of 1) are then small relative to the results.
_ASYMPTOTIC_FROM = 40.0
_ASYMPTOTIC_TERMS = 14  # the 14th term is below 1e-17 at k = 40


@register_jitable
def _asymptotic_sums(k):
    """``(S0 - 1, S0 - S1)`` for k >= 40, where (DLMF 10.40.1)

        I0(k) e^-k sqrt(2 pi k) ~ S0 = sum_j a_j,  a_j = prod_{i<=j} (2i - 1)^2 / (j! (8k)^j)
        I1(k) e^-k sqrt(2 pi k) ~ S1 = sum_j (-1)^j prod_{i<=j} (4 - (2i - 1)^2) / (j! (8k)^j).

    Every term of S1 after the first is negative (one factor 3, the others
    negative, times (-1)^j), so S0 - S1 is a sum of positive terms and
    1 - I1/I0 = (S0 - S1) / S0 keeps its relative accuracy (~1/(2k)).
    """
    a0 = 1.0
    a1 = 1.0
    s0 = 0.0
    diff = 0.0
    inv_8k = 0.125 / k
    for j in range(1, _ASYMPTOTIC_TERMS + 1):
        odd = 2.0 * j - 1.0
        a0 *= odd * odd * inv_8k / j
        a1 *= abs(odd * odd - 4.0) * inv_8k / j
        s0 += a0
        diff += a0 + a1
    return s0, diff


@register_jitable
def _log_i0e(k):
    """log I0(k) - k for k > 0, without the cancellation of log_i0(k) - k."""
    if k < _ASYMPTOTIC_FROM:
        return log_i0(k) - k
    s0_minus_1, _ = _asymptotic_sums(k)
    return math.log1p(s0_minus_1) - 0.5 * math.log(k) - LOG_SQRT_2PI


@register_jitable
def _log_i0e_and_d(k):
    """``(log I0(k) - k, 1 - I1(k)/I0(k))``: the summand and minus its derivative."""
    if k < _ASYMPTOTIC_FROM:
        return log_i0(k) - k, 1.0 - i1_over_i0(k)
    s0_minus_1, diff = _asymptotic_sums(k)
    log_i0e = math.log1p(s0_minus_1) - 0.5 * math.log(k) - LOG_SQRT_2PI
    return log_i0e, diff / (1.0 + s0_minus_1)


@register_jitable
def _valid(x, loc, concentration):
    return (0.0 < concentration < math.inf and -math.pi <= x <= math.pi
            and -math.inf < loc < math.inf)


@register_jitable
def logpdf(x, loc, concentration):
    """Normalized log density; ``-inf`` outside [-pi, pi] or for concentration <= 0."""
    if not _valid(x, loc, concentration):
        return -math.inf
    # k (cos d - 1) = -2 k sin^2(d / 2): no cancellation near d = 0.
    s = math.sin(0.5 * (x - loc))
    lp = -concentration * (2.0 * s * s) - _log_i0e(concentration) - LOG_2PI
    # k sin^2 overflows only for k near the largest float: a rejected point.
    return lp if lp > -math.inf else -math.inf


@register_jitable
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
        log_i0e, d_log_i0e = _log_i0e_and_d(concentration)
        lp -= log_i0e
        d_k += d_log_i0e
    if keep[2]:
        lp -= LOG_2PI
    if not (lp > -math.inf):
        return -math.inf, 0.0, 0.0, 0.0
    return lp, d_x, -d_x, d_k


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
)


class VonMises(Distribution):
    __doc__ = __doc__
    spec = SPEC
