"""Normal distribution truncated to the interval [lower, upper].

    log p(x | loc, scale, lower, upper) = -z^2 / 2 - log(scale) - log(2 pi) / 2
                                          - log(Phi(b) - Phi(a)),
    z = (x - loc) / scale,  a = (lower - loc) / scale,  b = (upper - loc) / scale

Phi is the standard normal cdf. Support: lower <= x <= upper. Parameters: loc
real, scale > 0, lower real or -inf, upper > lower or inf (an infinite bound
is none, as PyMC's and NumPyro's missing one: ``TruncatedNormal(mu, s, 0.0,
np.inf)`` is a normal truncated below at 0). The normalizer stays
accurate with both bounds deep in one tail (lower = 8, upper = 9 around
loc = 0, scale = 1) and for narrow intervals.
scipy: ``scipy.stats.truncnorm(a, b, loc, scale)`` with a, b standardized as
above; Stan: ``normal_lpdf(x | loc, scale) T[lower, upper]``.
"""

import math

from . import vmath
from .constraints import Constraint, greater_than, interval, positive, real
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from .special import log_ndtr
from .special import LOG_FLOAT_MAX, LOG_SQRT_2PI, SMALLEST_NORMAL, log_diff_ndtr

@jitable
def _valid(x, loc, scale, lower, upper):
    return (SMALLEST_NORMAL <= scale < math.inf and math.isfinite(loc) and math.isfinite(x)
            and lower < upper and lower <= x <= upper)


@jitable
def _standardized(loc, scale, lower, upper):
    """``(a, b, width)``: the bounds in units of scale from loc, and b - a.

    The width comes from upper - lower, exact for a narrow interval (Sterbenz),
    unlike b - a; where upper - lower overflows, b - a is used instead.
    """
    a = (lower - loc) / scale
    b = (upper - loc) / scale
    width = (upper - lower) / scale
    if width == math.inf:
        width = b - a
    return a, b, width


@jitable
def _log_mass(a, b, width):
    """log Z = log(Phi(b) - Phi(a)) for an interval of width ``width`` = (upper - lower) / scale.

    The rounded a and b carry errors of about ulp(a) each, which dominate
    b - a once the interval is narrow (relative 2e-10 at width 1e-6), while
    ``width`` is accurate. Over a narrow interval Z = phi(a) w (1 + O(a w)),
    proportional to its width w, so rescaling from the width b - a to the
    accurate one, log Z += log1p((width - (b - a)) / (b - a)), removes that
    error to within O(a ulp(a)). Where a and b round to the same number this
    limit gives log Z = log phi(a) + log(width). ``-inf`` when Z underflows or
    the standardized bounds overflow.
    """
    gap = b - a
    if gap >= 1.0:
        return log_diff_ndtr(a, b)
    if gap > 0.0:
        return log_diff_ndtr(a, b) + vmath.log1p((width - gap) / gap)
    if gap == 0.0 and width > 0.0:
        return -0.5 * a * a - LOG_SQRT_2PI + vmath.log(width)
    return -math.inf


@jitable
def _density_over_mass(t, log_mass):
    """phi(t) / Z = exp(log phi(t) - log Z), the form that survives deep tails.

    The exponent is capped where exp overflows (plain Python's math.exp
    raises); it gets there only for an interval narrower than ~1e-308 scales.
    """
    return vmath.exp(min(-0.5 * t * t - LOG_SQRT_2PI - log_mass, LOG_FLOAT_MAX))


@jitable
def _normalizer_terms(a, b, width, log_mass):
    """``(pa, pb, pb - pa, b pb - a pa)`` with pa = phi(a) / Z, pb = phi(b) / Z.

    Z = Phi(b) - Phi(a) and ``width`` = b - a computed from the bounds. For a
    narrow interval pa and pb are both about 1 / width and nearly equal, so
    the differences are formed without subtracting them: since
    log phi(b) - log phi(a) = -width (a + b) / 2,
        pb - pa = pa expm1(-width (a + b) / 2)    (when pa >= pb)
                = -pb expm1(width (a + b) / 2)    (when pb > pa),
    each expm1 argument <= 0 (the sign of a + b decides, not pa and pb,
    which may round to the same number), and with b = a + width
        b pb - a pa = a (pb - pa) + width pb = b (pb - pa) + width pa.
    A zero pa or pb (the bound beyond any tail) drops its term, so no
    inf * 0 appears.
    """
    pa = _density_over_mass(a, log_mass)
    pb = _density_over_mass(b, log_mass)
    if pa == 0.0 and pb == 0.0:  # both bounds beyond any tail (both infinite: a normal)
        return 0.0, 0.0, 0.0, 0.0
    log_ratio = -0.5 * width * (a + b)  # log(pb / pa), its sign picks the form
    if log_ratio <= 0.0:
        if pa == 0.0:
            return 0.0, 0.0, 0.0, 0.0
        diff = pa * math.expm1(log_ratio)
        moment = a * diff + (width * pb if pb > 0.0 else 0.0)
    else:
        if pb == 0.0:
            return pa, 0.0, 0.0, 0.0
        diff = -pb * math.expm1(-log_ratio)
        moment = b * diff + (width * pa if pa > 0.0 else 0.0)
    return pa, pb, diff, moment


@jitable
def logpdf(x, loc, scale, lower, upper):
    """Normalized log density; ``-inf`` outside [lower, upper] or for invalid parameters."""
    if not _valid(x, loc, scale, lower, upper):
        return -math.inf
    a, b, width = _standardized(loc, scale, lower, upper)
    log_mass = _log_mass(a, b, width)
    if log_mass == -math.inf:  # the interval's mass underflows: reject the point
        return -math.inf
    z = (x - loc) / scale
    return -0.5 * z * z - vmath.log(scale) - LOG_SQRT_2PI - log_mass


@kernel
def logpdf_grad(x, loc, scale, lower, upper, keep):
    """``(lp, d_x, d_loc, d_scale, d_lower, d_upper)``; see ``distributions.spec`` for ``keep``."""
    if not _valid(x, loc, scale, lower, upper):
        return -math.inf, 0.0, 0.0, 0.0, 0.0, 0.0
    inv_scale = 1.0 / scale
    lp = 0.0
    d_x = 0.0
    d_loc = 0.0
    d_scale = 0.0
    d_lower = 0.0
    d_upper = 0.0
    if keep[0]:
        z = (x - loc) / scale
        lp -= 0.5 * z * z
        d_x = -z * inv_scale
        d_loc = -d_x
        d_scale = z * z * inv_scale
    if keep[1]:
        lp -= vmath.log(scale)
        d_scale -= inv_scale
    if keep[2]:
        lp -= LOG_SQRT_2PI
    if keep[3]:
        # d log Z / da = -pa, d log Z / db = pb, with da/dloc = -1/scale,
        # da/dscale = -a/scale, da/dlower = 1/scale (and likewise for b).
        a, b, width = _standardized(loc, scale, lower, upper)
        log_mass = _log_mass(a, b, width)
        if log_mass == -math.inf:
            return -math.inf, 0.0, 0.0, 0.0, 0.0, 0.0
        pa, pb, diff, moment = _normalizer_terms(a, b, width, log_mass)
        lp -= log_mass
        d_loc += diff * inv_scale
        d_scale += moment * inv_scale
        d_lower = pa * inv_scale
        d_upper = -pb * inv_scale
    # Reject the point where the value overflows, or where d_loc or d_scale
    # became inf - inf: their terms, each about z / scale, overflow with
    # opposite signs only for scales near the smallest normal float.
    if lp == -math.inf or d_loc != d_loc or d_scale != d_scale:
        return -math.inf, 0.0, 0.0, 0.0, 0.0, 0.0
    return lp, d_x, d_loc, d_scale, d_lower, d_upper


@jitable
def _standard_draw(state, a, b, width, log_mass):
    """``(z, t)``: z ~ N(0, 1) truncated to [a, b] (a < b, b > 0) and its offset
    t = z - a from the lower bound, or ``(nan, t)`` where t is the accurate one.
    By whichever exact rejection method accepts most often (rates estimated
    from Z = Phi(b) - Phi(a)): normal (accept z in [a, b]; rate Z), uniform on
    [a, b] (accept w.p. exp((m^2 - z^2) / 2), m the point nearest 0), or for
    a > 0 the translated exponential, rate lam = (a + sqrt(a^2 + 4)) / 2
    (accept w.p. exp(-(z - lam)^2 / 2)); Robert (1995), "Simulation of
    truncated normal variables", Statistics and Computing 5."""
    m = a if a > 0.0 else 0.0
    rate_normal = math.exp(log_mass)
    rate_uniform = math.exp(log_mass + 0.5 * m * m + LOG_SQRT_2PI) / width
    rate_exponential = 0.0
    if a > 0.0:  # the one-sided envelope's efficiency (>= 0.76) times the tail's share below b
        rate_exponential = 0.76 * math.exp(log_mass - log_ndtr(-a))
    if rate_normal >= rate_uniform and rate_normal >= rate_exponential:
        while True:
            z = random.normal(state)
            if a <= z <= b:
                return z, z - a
    if rate_uniform >= rate_exponential:
        while True:
            t = width * random.uniform(state)
            z = a + t
            if random.uniform(state) <= math.exp(0.5 * (m - z) * (m + z)):
                return math.nan, t
    lam = 0.5 * (a + math.sqrt(a * a + 4.0))
    while True:
        t = random.exponential(state) / lam
        d = a + t - lam
        if a + t <= b and random.uniform(state) <= math.exp(-0.5 * d * d):
            return math.nan, t


@jitable
def rvs(state, loc, scale, lower, upper):
    """One draw: with the standardized bounds [a, b] (mirrored to [-b, -a] when
    b <= 0, so a tail interval is always an upper one), x = loc +- scale z,
    or bound +- scale t from the near bound where the method gives the offset
    (deep in a tail or over a narrow interval that is the accurate form);
    clipped to [lower, upper] against rounding."""
    a, b, width = _standardized(loc, scale, lower, upper)
    sign = 1.0
    bound = lower
    if b <= 0.0:
        a, b, sign, bound = -b, -a, -1.0, upper
    z, t = _standard_draw(state, a, b, width, _log_mass(a, b, width))
    x = loc + sign * scale * z if z == z else bound + sign * scale * t
    return min(max(x, lower), upper)


SPEC = Spec(
    name="TruncatedNormal",
    params=(Param("loc", real), Param("scale", positive),
            Param("lower", Constraint("less_than", upper=math.inf, infinite=True)),
            Param("upper", greater_than("lower")._replace(infinite=True))),
    support=interval("lower", "upper", closed=True),
    summands=(
        Summand(("x", "loc", "scale"), "-((x - loc) / scale)**2 / 2"),
        Summand(("scale",), "-log(scale)"),
        Summand((), "-log(2 pi) / 2"),
        Summand(("loc", "scale", "lower", "upper"),
                "-log(Phi((upper - loc) / scale) - Phi((lower - loc) / scale))"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class TruncatedNormal(Distribution):
    __doc__ = __doc__
    spec = SPEC
