"""Scalar special functions that numba lacks, written once over ``math``.

Every public function is plain Python over the :mod:`math` module, registered
with :func:`distributions.jit.jitable` (no fastmath flags, cached): called from
Python it runs as Python, called from ``@numba.njit`` (or numba-cuda) code it
is compiled. That fixes the rules for this module:

* only ``math`` and ``vmath`` functions and arithmetic (``vmath``'s ``exp``,
  ``log`` and ``log1p`` rather than ``math``'s, so that loops vectorize); no
  numpy, no allocation, no state;
* nothing raises. Plain Python raises on ``math.log(0.0)``, ``1.0 / 0.0``,
  ``math.exp(710.0)`` and ``math.lgamma(0.0)``, so each such edge is
  guarded and returns the limit (``-inf``, ``inf``, 0);
* every loop has a small fixed bound: recurrences take at most 10 steps,
  series and Chebyshev sums a fixed number of terms;
* NaN in gives NaN out, and NaN is never made inside a documented domain.

Accuracy is measured against scipy and mpmath in ``tests/test_special.py``:
relative error at most 1e-13 over each documented domain (absolute 1e-14 near
a zero of the function) unless a docstring says otherwise.

Coefficient tables were computed for this module with mpmath at 60 digits.
"""

import math

from . import vmath
from .jit import jitable, kernel

LOG_2 = 0.6931471805599453
LOG_PI = 1.1447298858494002
LOG_2PI = 1.8378770664093456
LOG_SQRT_2PI = 0.9189385332046728
LOG_SQRT_PI = 0.5723649429247001
SQRT_2 = 1.4142135623730951
INV_SQRT_2PI = 0.3989422804014327
# The smallest positive normal float, 2**-1022 (``sys.float_info.min``).
# Distributions reject scales (and shapes, dispersions) below it: there
# 1 / scale overflows and partials such as z**2 / scale - 1 / scale would be
# inf - inf.
SMALLEST_NORMAL = 2.2250738585072014e-308
# log of the largest float, log(sys.float_info.max): exp overflows above it.
LOG_FLOAT_MAX = 709.782712893384
# The largest argument for which lgamma does not overflow.
LGAMMA_MAX = 2.5599833278516383e305

# sqrt(1/2) and 1/sqrt(pi); sqrt(1/2) as an unevaluated sum hi + lo, so that
# ndtr can recover the rounding error of x * sqrt(1/2).
_SQRT1_2 = 0.7071067811865476
_SQRT1_2_LO = -4.833646656726457e-17
_INV_SQRT_PI = 0.5641895835477563

# Bernoulli-number series, lowest order first (DLMF 5.11.1, 5.15.8):
# lgamma(x) - Stirling = sum_k B_2k / (2k (2k-1) x^(2k-1)),
# digamma(x) = log x - 1/(2x) - sum_k B_2k / (2k x^2k),
# trigamma(x) = 1/x + 1/(2x^2) + sum_k B_2k / x^(2k+1).
# Ten terms reach 1e-18 relative at x = 10, where the recurrences hand over.
_STIRLING = (
    1.0 / 12.0, -1.0 / 360.0, 1.0 / 1260.0, -1.0 / 1680.0, 1.0 / 1188.0,
    -691.0 / 360360.0, 1.0 / 156.0, -3617.0 / 122400.0, 43867.0 / 244188.0,
    -174611.0 / 125400.0,
)
_DIGAMMA_ASYMPTOTIC = (
    1.0 / 12.0, -1.0 / 120.0, 1.0 / 252.0, -1.0 / 240.0, 1.0 / 132.0,
    -691.0 / 32760.0, 1.0 / 12.0, -3617.0 / 8160.0, 43867.0 / 14364.0,
    -174611.0 / 6600.0,
)
_TRIGAMMA_ASYMPTOTIC = (
    1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0,
    -691.0 / 2730.0, 7.0 / 6.0, -3617.0 / 510.0, 43867.0 / 798.0,
    -174611.0 / 330.0,
)

# The positive root of digamma as hi + lo, and the Taylor coefficients
# psi^(k)(x0) / k!, k = 1..16, of digamma about it. Within 0.1 of the root
# the truncation error is below 1e-18 relative (radius of convergence x0).
_DIGAMMA_ROOT_HI = 1.4616321449683622
_DIGAMMA_ROOT_LO = 9.549995429965697e-17
_DIGAMMA_ROOT_TAYLOR = (
    0.9676722454476212, -0.4427631689835921, 0.258499760955651,
    -0.16394270544240652, 0.10782405069126237, -0.07219956125645471,
    0.04880428816414311, -0.03316112647484736, 0.022597648232218104,
    -0.01542476590494896, 0.010538791616612175, -0.007204534386356869,
    0.004926781395729853, -0.003369801655439328, 0.002305126326734928,
    -0.0015769367714301972,
)

# Chebyshev coefficients in t = 16/x - 1 (that is u = 8/x on [0, 1]) for
# x >= 8 of sqrt(x) exp(-x) I0(x), and of k(u) = (1 - I1(x)/I0(x)) x / 8,
# so that I1/I0 = 1 - u k(u) keeps 1 - I1/I0 accurate as x -> inf. Both are
# smooth at u = 0 (the limits are 1/sqrt(2 pi) and 1/16); the tables stop
# where coefficients fall below 1e-18 relative.
_I0E_CHEB = (
    0.4022452055070544, 0.0033691164782556943, 6.889758346916825e-05,
    2.8913705208347567e-06, 2.0489185894690638e-07, 2.266668990498178e-08,
    3.3962320257083865e-09, 4.94060238822497e-10, 1.1889147107846439e-11,
    -3.1499165279632416e-11, -1.3215811840447713e-11, -1.7941785315068062e-12,
    7.180124451383666e-13, 3.8527783827421426e-13, 1.54008621752141e-14,
    -4.150569347287222e-14, -9.554846698828307e-15, 3.8116806693526224e-15,
    1.7725601330565263e-15, -3.425485619677219e-16, -2.8276239805165836e-16,
    3.461222867697461e-17, 4.46562142029676e-17, -4.830504485944182e-18,
    -7.233180487874754e-18, 9.921475412173699e-19, 1.193650890845982e-18,
)
_I1_I0_CHEB = (
    0.0635880528536277, 0.0011292048307908957, 4.3874106096593886e-05,
    3.000054803637902e-06, 3.185678426096941e-07, 4.769399262557199e-08,
    7.984420512641463e-09, 8.256375229370265e-10, -2.3748257295424274e-10,
    -1.7322026605132905e-10, -4.435340986443556e-11, 2.2419537105349023e-12,
    5.486650153930694e-12, 1.2386359156468411e-12, -3.6671953523087067e-13,
    -2.335682091788066e-13, 6.890160333419825e-15, 3.330253976804897e-14,
    3.1403722054107344e-15, -4.6372831524151084e-15, -8.262360010631774e-16,
    6.915271733820472e-16, 1.5442524408977476e-16, -1.1451193788653448e-16,
    -2.5002405358216034e-17, 2.0942957331288246e-17, 3.413075708566327e-18,
    -4.086763223209698e-18, -2.8227902600680846e-19, 8.112883288461737e-19,
)

# The asymptotic series of I0 and I1 (DLMF 10.40.1) take over from the
# Chebyshev forms for log I0(x) - x and 1 - I1(x)/I0(x) at x >= 40, where
# those lose a few ulps of x and of 1; the 14th term is below 1e-17 there.
_BESSEL_ASYMPTOTIC_FROM = 40.0
_BESSEL_ASYMPTOTIC_TERMS = 14

# 8-point Gauss-Legendre rule on [-1, 1]: the positive nodes and weights.
_GAUSS_NODES = (
    0.1834346424956498, 0.525532409916329, 0.7966664774136267,
    0.9602898564975363,
)
_GAUSS_WEIGHTS = (
    0.362683783378362, 0.31370664587788727, 0.22238103445337448,
    0.10122853629037626,
)


# ---------------------------------------------------------------- helpers


@jitable
def _polyval(coeffs, z):
    """Horner sum of ``coeffs[k] * z**k`` (lowest order first)."""
    s = 0.0
    for i in range(len(coeffs) - 1, -1, -1):
        s = s * z + coeffs[i]
    return s


@jitable
def _chebyshev(coeffs, t):
    """Clenshaw sum of ``coeffs[j] * T_j(t)`` for t in [-1, 1]."""
    b1 = 0.0
    b2 = 0.0
    for i in range(len(coeffs) - 1, 0, -1):
        b1, b2 = coeffs[i] + 2.0 * t * b1 - b2, b1
    return coeffs[0] + t * b1 - b2


@jitable
def _split(a):
    """Veltkamp's split a = hi + lo into two 26-bit halves, |a| < 1e300."""
    c = 134217729.0 * a  # 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


@jitable
def _product_error(a, b):
    """Rounding error of a * b: a*b = fl(a*b) + error exactly.

    Dekker (1971); needs no FMA, so it is exact in plain Python as well.
    Valid for |a|, |b| < 1e150 (no overflow in the split).
    """
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    return ((a_hi * b_hi - a * b) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


@jitable
def _exp_neg_half_sq(x):
    """exp(-x**2 / 2) to a few ulps, also where x**2 has a rounding error.

    exp(-fl(x*x)/2) alone is off by |x**2| ulps (2e-13 at x = 30);
    with x*x = s + e exactly, exp(-x*x/2) = exp(-s/2) (1 - e/2 + O(e**2)).
    """
    ax = abs(x)
    if ax > 40.0:  # exp(-800) underflows; also keeps the split finite
        return 0.0
    s = ax * ax
    return vmath.exp(-0.5 * s) * (1.0 - 0.5 * _product_error(ax, ax))


@jitable
def _cot_pi(r):
    """cot(pi r) for 0 < r < 1, accurate near r = 1/2 and r -> 0, 1.

    The arguments 1/2 - r and 1 - r are exact (Sterbenz), so tan is never
    evaluated near its pole.
    """
    if r < 0.25:
        return 1.0 / math.tan(math.pi * r)
    if r <= 0.75:
        return math.tan(math.pi * (0.5 - r))
    return -1.0 / math.tan(math.pi * (1.0 - r))


@jitable
def _sin_pi(r):
    """sin(pi r) for 0 <= r < 1, using sin(pi r) = sin(pi (1 - r))."""
    return math.sin(math.pi * min(r, 1.0 - r))


# --------------------------------------------------- logs and exponentials


@jitable
def xlogy(x, y):
    """x * log(y), with 0 * log(0) = 0.

    Returns 0 when x == 0 and y is not NaN (as ``scipy.special.xlogy``),
    ``-inf * x`` at y == 0, NaN for y < 0. Accurate to rounding.
    """
    if x == 0.0 and not math.isnan(y):
        return 0.0
    if y > 0.0:
        return x * vmath.log(y)
    if y == 0.0:
        return -math.inf * x
    return math.nan


@jitable
def xlog1py(x, y):
    """x * log1p(y), with 0 * log1p(-1) = 0.

    Returns 0 when x == 0 and y is not NaN (as ``scipy.special.xlog1py``),
    ``-inf * x`` at y == -1, NaN for y < -1. Accurate to rounding.
    """
    if x == 0.0 and not math.isnan(y):
        return 0.0
    if y > -1.0:
        return x * vmath.log1p(y)
    if y == -1.0:
        return -math.inf * x
    return math.nan


@jitable
def log1pexp(x):
    """log(1 + exp(x)), the softplus, for all real x.

    Maechler (2012), "Accurately computing log(1 - exp(-|a|))", eq. (10):
    each branch equals log1p(exp(x)) to double precision, and none
    overflows (x = 800 gives 800, x = -800 gives exp(-800) = 0).
    """
    if x <= -37.0:
        return vmath.exp(x)
    if x <= 18.0:
        return vmath.log1p(vmath.exp(x))
    if x <= 33.3:
        return x + vmath.exp(-x)
    return x


@jitable
def log1mexp(x):
    """log(1 - exp(x)) for x <= 0.

    Maechler (2012): log(-expm1(x)) for -log 2 < x < 0, where 1 - exp(x) is
    small, and log1p(-exp(x)) below, where exp(x) is small. Returns -inf at
    x == 0, 0 at x == -inf, NaN for x > 0. Relative error ~ 1e-16.
    """
    if x > -LOG_2:
        if x < 0.0:
            return vmath.log(-math.expm1(x))
        if x == 0.0:
            return -math.inf
        return math.nan
    return vmath.log1p(-vmath.exp(x))


@jitable
def logaddexp(a, b):
    """log(exp(a) + exp(b)) without overflow; either argument may be +-inf."""
    if a == b:  # covers a == b == +-inf, where a - b would be NaN
        return a + LOG_2
    if a > b:
        return a + vmath.log1p(vmath.exp(b - a))
    return b + vmath.log1p(vmath.exp(a - b))


@jitable
def logsubexp(a, b):
    """log(exp(a) - exp(b)) for a >= b.

    Returns -inf when a == b (finite or -inf), a when b == -inf, and NaN
    when a < b or a == b == inf. Computed as a + log1mexp(b - a).
    """
    if b == -math.inf:
        return a
    if a == b:
        return -math.inf if a < math.inf else math.nan
    if a < b:
        return math.nan
    return a + log1mexp(b - a)


@jitable
def logistic(x):
    """The logistic function (inverse logit) 1 / (1 + exp(-x)).

    Only exp of a non-positive number is taken, so neither tail overflows
    and the left tail keeps full relative accuracy (logistic(-700) =
    exp(-700)).
    """
    if x >= 0.0:
        return 1.0 / (1.0 + vmath.exp(-x))
    e = vmath.exp(x)
    return e / (1.0 + e)


@jitable
def log_logistic(x):
    """log(logistic(x)) = -log1pexp(-x), accurate in both tails."""
    return -log1pexp(-x)


@jitable
def logit(p):
    """log(p / (1 - p)) for 0 <= p <= 1 (-inf at 0, inf at 1, NaN outside).

    Near p = 1/2 the result is near 0, so it is computed as
    2 atanh(2p - 1), where 2p - 1 is exact for p in [1/4, 1] (Sterbenz);
    elsewhere |logit(p)| > log 3 and log(p / (1 - p)) loses nothing.
    """
    if 0.25 <= p <= 0.75:
        return 2.0 * math.atanh(2.0 * p - 1.0)
    if 0.0 < p < 1.0:
        return vmath.log(p / (1.0 - p))
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    return math.nan


@jitable
def log1pmx(x):
    """log(1 + x) - x for x >= -1, without cancellation near x = 0.

    With w = x / (2 + x), log1p(x) = 2 atanh(w) = 2 (w + w^3/3 + w^5/5 + ...)
    and 2 w - x = -x^2 / (2 + x), so log1p(x) - x = -x^2/(2 + x) + 2 w^3/3
    + ...; for |x| <= 1/2, |w| <= 1/3 and 18 terms reach 1e-17 relative.
    Elsewhere |log1p(x) - x| > 0.09 |x| and the plain difference loses
    nothing. At most 0, ~ -x^2/2 near 0; -inf at x = -1 and x = inf, NaN
    for x < -1. Relative error ~4e-16.
    """
    if abs(x) <= 0.5:
        w = x / (2.0 + x)
        w2 = w * w
        s = 0.0
        for k in range(18, 0, -1):
            s = w2 * (1.0 / (2 * k + 1) + s)
        return 2.0 * w * s - x * x / (2.0 + x)
    if -1.0 < x < math.inf:
        return vmath.log1p(x) - x
    if x == -1.0 or x == math.inf:
        return -math.inf
    return math.nan


@jitable
def logmxp1(y):
    """log(y) - y + 1 = log1pmx(y - 1) for y >= 0, accurate near y = 1.

    At most 0, 0 at y = 1. For |y - 1| <= 1/2, y - 1 is exact (Sterbenz)
    and :func:`log1pmx` has no cancellation; elsewhere |result| > 0.09 and
    log(y) - (y - 1) loses at most a few ulps; unlike log1p(y - 1) it stays
    accurate for tiny y (y - 1 rounds to -1 below y = 1e-17). -inf at y = 0
    and y = inf, NaN for y < 0. Relative error ~4e-16.
    """
    t = y - 1.0
    if abs(t) <= 0.5:
        return log1pmx(t)
    if 0.0 < y < math.inf:
        return vmath.log(y) - t
    if y == 0.0 or y == math.inf:
        return -math.inf
    return math.nan


@jitable
def log1p_ratio(a, b):
    """log(1 + a / b) for a >= 0, b > 0, also where a / b overflows.

    log1p(a / b) while a / b < 1e300; beyond, log(a) - log(b), since the
    dropped b / a < 1e-300 is far below the rounding of the result (> 690).
    0 at a = 0 or b = inf, inf at a = inf, NaN for a < 0, b <= 0 or
    a = b = inf. Relative error ~2e-16.
    """
    if not (a >= 0.0 and b > 0.0):
        return math.nan
    r = a / b
    if r < 1e300:
        return vmath.log1p(r)
    return vmath.log(a) - vmath.log(b)


@kernel  # inlined into kernels' loops, so they vectorize
def log_ratio(a, b):
    """log(a / b) for a, b > 0, also where a / b underflows or overflows.

    One rounding (of the quotient) when a / b is a normal number, which
    keeps log(a / b) accurate when a and b are large and close (the
    difference of logs would cancel); the difference of logs when the
    quotient would underflow or overflow. -inf at a = 0 or b = inf, inf at
    b = 0 or a = inf, NaN for negative arguments or a = b in {0, inf}.
    Relative error ~2e-16, or absolute ~1e-16 where the result is near 0.
    """
    if a > 0.0 and b > 0.0:
        ratio = a / b
        if 1e-300 < ratio < 1e300:
            return vmath.log(ratio)
        return vmath.log(a) - vmath.log(b)
    if a == 0.0 and b > 0.0:
        return -math.inf
    if b == 0.0 and a > 0.0:
        return math.inf
    return math.nan


@kernel  # inlined into kernels' loops, so they vectorize
def log1p_square(t):
    """``(log(1 + t^2), t / (1 + t^2), t^2 / (1 + t^2))`` for all real t, without overflow.

    The three pieces of the Cauchy and Student t kernels (the value, and
    the factors of its partials). For |t| > 1, 1 + t^2 = t^2 (1 + v^2) with
    v = 1/t, so log(1 + t^2) = 2 log|t| + log1p(v^2),
    t / (1 + t^2) = v / (1 + v^2) and t^2 / (1 + t^2) = 1 / (1 + v^2):
    nothing overflows even for |t| near the largest float, where t^2 is
    inf; at t = +-inf the limits (inf, +-0, 1). Relative error ~3e-16.
    """
    if abs(t) <= 1.0:
        s = t * t
        log1p_s, inverse = vmath.log1p_and_reciprocal(s)
        return log1p_s, t * inverse, s * inverse
    v = 1.0 / t
    w = v * v
    log1p_w, inverse = vmath.log1p_and_reciprocal(w)
    return 2.0 * vmath.log(abs(t)) + log1p_w, v * inverse, inverse


# --------------------------------------------------- gamma function family


@jitable
def lgamma_or_inf(a):
    """lgamma(a) for a >= 0, without raising at the pole or on overflow.

    ``math.lgamma`` for 0 < a <= LGAMMA_MAX (its accuracy: ~1e-15 absolute
    compiled, CPython's own code in plain Python); inf at a = 0 and above
    LGAMMA_MAX = 2.56e305, where plain Python raises. NaN for a < 0 or NaN.
    """
    if 0.0 < a <= LGAMMA_MAX:
        return math.lgamma(a)
    if a >= 0.0:
        return math.inf
    return math.nan


@jitable
def _digamma_positive(x):
    """digamma(x) for x > 0 (or NaN); see :func:`digamma`."""
    if abs(x - _DIGAMMA_ROOT_HI) < 0.1:
        # x - hi is exact (Sterbenz), so t is x - x0 to one rounding and the
        # result keeps its relative accuracy through the root.
        t = (x - _DIGAMMA_ROOT_HI) - _DIGAMMA_ROOT_LO
        return t * _polyval(_DIGAMMA_ROOT_TAYLOR, t)
    # psi(x) = psi(x + m) - sum_{k<m} 1/(x + k); at most 10 steps.
    acc = 0.0
    y = 1.0 * x
    while y < 10.0:
        acc += 1.0 / y
        y += 1.0
    z = 1.0 / (y * y)
    return vmath.log(y) - 0.5 / y - z * _polyval(_DIGAMMA_ASYMPTOTIC, z) - acc


@jitable
def digamma(x):
    """The digamma function psi(x) = d/dx log Gamma(x).

    Domain: all real x except the poles at 0, -1, -2, ... (psi(+-0) =
    -+inf as scipy; NaN at negative integers and -inf). For x > 0: upward
    recurrence to x >= 10 then the asymptotic series, and a Taylor series
    about the root x0 = 1.4616... within 0.1 of it, so the relative error
    is below 1e-14 everywhere, the root included (the recurrence sums ten
    terms of size ~2). For x < 0, reflection psi(x) = psi(1 - x)
    - pi cot(pi x): absolute error ~1e-15 log|x|, relative away from the
    negative roots.
    """
    if x > 0.0 or math.isnan(x):
        return _digamma_positive(x)
    if x == 0.0:
        return math.copysign(math.inf, -x)
    if x == -math.inf:
        return math.nan
    r = (-x) % 1.0  # exact; x = -(n + r) with n an integer
    if r == 0.0:
        return math.nan
    # cot(pi x) = -cot(pi r) by oddness and period 1.
    return _digamma_positive(1.0 - x) + math.pi * _cot_pi(r)


@jitable
def _trigamma_positive(x):
    """trigamma(x) for x > 0 (or NaN); see :func:`trigamma`."""
    # psi1(x) = psi1(x + m) + sum_{k<m} 1/(x + k)^2: all terms positive.
    acc = 0.0
    y = 1.0 * x
    while y < 10.0:
        acc += 1.0 / y / y  # not 1/(y*y): y*y underflows to 0 for y < 1e-162
        y += 1.0
    z = 1.0 / (y * y)
    return acc + (1.0 + 0.5 / y + z * _polyval(_TRIGAMMA_ASYMPTOTIC, z)) / y


@jitable
def trigamma(x):
    """The trigamma function psi'(x) = d^2/dx^2 log Gamma(x).

    Domain: all real x; inf at the poles 0, -1, -2, ..., NaN at -inf. For
    x > 0 a sum of positive terms (recurrence plus asymptotic series),
    relative error ~1e-15. For x < 0, reflection psi1(x) = pi^2/sin^2(pi x)
    - psi1(1 - x), which has no cancellation (the first term is >= pi^2).
    """
    if x > 0.0 or math.isnan(x):
        return _trigamma_positive(x)
    if x == -math.inf:
        return math.nan
    r = (-x) % 1.0
    if r == 0.0:
        return math.inf
    s = math.pi / _sin_pi(r)
    return s * s - _trigamma_positive(1.0 - x)


@jitable
def lgamma_stirling_diff(x):
    """lgamma(x) - [(x - 1/2) log x - x + log(2 pi)/2], Stirling's remainder.

    For x >= 10 the Bernoulli series (DLMF 5.11.1, ten terms) with relative
    error ~2e-16; this is the intended range. For 0 < x < 10 the plain
    difference is returned, with the absolute error of ``math.lgamma``
    (~1e-15 compiled; up to 5e-14 in CPython, whose lgamma is its own
    Lanczos code), so up to ~1e-11 relative near x = 10. NaN for x <= 0.
    """
    if x >= 10.0:
        return _polyval(_STIRLING, 1.0 / (x * x)) / x
    if x > 0.0:
        return math.lgamma(x) - ((x - 0.5) * vmath.log(x) - x + LOG_SQRT_2PI)
    return math.nan


@jitable
def _stirling_diff_delta(a, y):
    """lgamma_stirling_diff(a (1 + y)) - lgamma_stirling_diff(a), a >= 10.

    Term by term, a^(1-2k) [(1 + y)^(1-2k) - 1] with d_k = q^(2k-1) - 1,
    q = 1/(1 + y), from d_{k+1} = q^2 d_k + (q^2 - 1): every d_k <= 0, so
    the difference never cancels, even for y ~ 1e-16.
    """
    q = 1.0 / (1.0 + y)
    e = -(y * q) * ((2.0 + y) * q)  # q**2 - 1, without overflow
    d = -y * q  # q - 1
    w = 1.0 / (a * a)
    p = 1.0 / a
    s = 0.0
    for c in _STIRLING:
        s += c * p * d
        p *= w
        d = q * q * d + e
    return s


@jitable
def _log_rising_stirling(a, n):
    """lgamma(a + n) - lgamma(a) for a >= 10, n >= 0 finite.

    From Stirling with y = n/a and D = lgamma_stirling_diff:
    (a - 1/2) log1p(y) + n (log(a) + log1p(y) - 1) + D(a + n) - D(a), a sum
    of positive terms. For y <= 1 the first and the -n are regrouped as
    a (log1p(y) - y) - log1p(y)/2, which keeps tiny y free of cancellation;
    for y > 1 they are not, so that a (log1p(y) - y) cannot overflow.
    """
    y = n / a
    lp = vmath.log1p(y)
    delta = _stirling_diff_delta(a, y)
    if y <= 1.0:
        return a * log1pmx(y) - 0.5 * lp + n * (vmath.log(a) + lp) + delta
    return (a - 0.5) * lp + n * (vmath.log(a) + lp - 1.0) + delta


@jitable
def log_rising_factorial(a, n):
    """log of the rising factorial, lgamma(a + n) - lgamma(a).

    Domain a > 0, n >= 0 real (NaN otherwise). For a >= 10, Stirling's form
    with relative error ~1e-15 for huge a, where the lgamma difference
    cancels (a = 1e12, n = 3 gives 3 log(1e12)), and for tiny n. For a < 10
    the recurrence lgamma(a + n) - lgamma(a) = [same at a + m]
    - sum_k log1p(n / (a + k)) shifts a past 10 (at most 10 steps); the two
    parts can cancel, to 4e-14 relative at worst, or absolute ~1e-16 n
    where the result crosses 0 (a near 1.46, small n).
    """
    if not (a > 0.0 and n >= 0.0):
        return math.nan
    if n == 0.0:
        return 0.0
    if n == math.inf or a == math.inf:
        return math.inf
    shift = 0.0
    b = 1.0 * a
    while b < 10.0:
        shift += log1p_ratio(n, b)
        b += 1.0
    return _log_rising_stirling(b, n) - shift


@jitable
def _digamma_diff_asymptotic(a, n):
    """digamma(a + n) - digamma(a) for a >= 10, n >= 0 finite.

    From the asymptotic series: log1p(y) + n / (2 a (a + n))
    - sum_k c_k a^(-2k) [(1 + y)^(-2k) - 1], y = n / a, with the bracket
    d_k = q^(2k) - 1 from the same cancellation-free recurrence as in
    :func:`_stirling_diff_delta`.
    """
    y = n / a
    q = 1.0 / (1.0 + y)
    e = -(y * q) * ((2.0 + y) * q)  # q**2 - 1
    w = 1.0 / (a * a)
    p = w
    d = e
    s = 0.0
    for c in _DIGAMMA_ASYMPTOTIC:
        s += c * p * d
        p *= w
        d = q * q * d + e
    return vmath.log1p(y) + 0.5 * y * q / a - s


@jitable
def digamma_diff(a, n):
    """digamma(a + n) - digamma(a) for a > 0, n >= 0 (NaN otherwise).

    Accurate for huge a (~ n / a) and tiny n: for a < 10 the recurrence adds
    1/(a + k) - 1/(a + k + n) = n / ((a + k)(a + k + n)) > 0 (at most 10
    steps) and the asymptotic difference takes over at a >= 10. Every term
    is positive, so the relative error is ~1e-15 everywhere.
    """
    if not (a > 0.0 and n >= 0.0):
        return math.nan
    if n == 0.0 or a == math.inf:
        return 0.0
    if n == math.inf:
        return math.inf
    s = 0.0
    b = 1.0 * a
    while b < 10.0:
        s += (n / (b + n)) / b  # this order cannot underflow to 0 / 0
        b += 1.0
    return s + _digamma_diff_asymptotic(b, n)


@jitable
def half_step_digamma_excess(a):
    """digamma(a + 1/2) - digamma(a) - 1 / (2a) for a > 0, accurate also for huge a.

    The duplication formula and digamma's asymptotic series give
    psi(a + 1/2) - psi(a) = 1/(2a) + sum_k B_2k (1 - 4^-k) / (k a^2k)
                          = 1/(2a) + 1/(8a^2) - 1/(64a^4) + 1/(128a^6) - 17/(2048a^8) + ...
    which for a >= 100 is exact to 1e-17 relative; below, the difference of
    :func:`digamma_diff` and 1/(2a) loses at most 4a ulps (relative error
    below 1e-13). The Student t partial in df is half of it at a = df / 2.
    Domain a >= 2**-1023 (1.1e-308), where 1/a is finite (below, inf or
    NaN); 0 at a = inf, NaN for a <= 0.
    """
    if not (a > 0.0):
        return math.nan
    if a < 100.0:
        return digamma_diff(a, 0.5) - 0.5 / a
    r = 1.0 / (a * a)
    return r * (0.125 - r * (0.015625 - r * (0.0078125 - r * 0.00830078125)))


@jitable
def _lbeta_stirling(a, b):
    """log B(a, b) for 10 <= a <= b, all from Stirling (as R's lbeta).

    (a - 1/2) log a + (b - 1/2) log b - (a + b - 1/2) log(a + b)
    = -1/2 log b - (a - 1/2) log1p(b/a) - b log1p(a/b): every term is
    negative, so nothing cancels even for a = b = 1e12.
    """
    corr = (lgamma_stirling_diff(a) + lgamma_stirling_diff(b)
            - lgamma_stirling_diff(a + b))
    return (LOG_SQRT_2PI - 0.5 * vmath.log(b) - (a - 0.5) * vmath.log1p(b / a)
            - b * vmath.log1p(a / b) + corr)


@jitable
def lbeta(a, b):
    """log B(a, b) = lgamma(a) + lgamma(b) - lgamma(a + b), the log beta function.

    Domain a, b >= 0 (inf if either is 0, -inf if either is inf, NaN if
    negative). Both >= 10: Stirling throughout; one >= 10: lgamma(small) -
    log_rising_factorial(large, small), accurate for b = 1e12 or 1e300 and
    a down to 1e-300; both < 10: the lgamma sum. Relative error below
    1e-14, or absolute ~1e-15 near the curve B(a, b) = 1 where the log is 0
    (in plain Python, CPython's own math.lgamma adds up to 4e-15 relative
    when an argument is below 10).
    """
    if not (a >= 0.0 and b >= 0.0):
        return math.nan
    lo = min(a, b)
    hi = max(a, b)
    if lo == 0.0:
        return math.inf
    if hi == math.inf:
        return -math.inf
    if lo >= 10.0:
        return _lbeta_stirling(lo, hi)
    if hi >= 10.0:
        return math.lgamma(lo) - _log_rising_stirling(hi, lo)
    return math.lgamma(lo) + math.lgamma(hi) - math.lgamma(lo + hi)


@jitable
def lchoose(n, k):
    """log C(n, k) = lgamma(n+1) - lgamma(k+1) - lgamma(n-k+1), log binomial coefficient.

    Domain real n >= k >= 0; -inf for k < 0 or k > n (the coefficient of
    integers is 0 there), inf for n == inf > k, NaN for NaN. Uses
    C(n, k) = 1 / ((n + 1) B(n - k + 1, k + 1)), so it inherits the accuracy
    of :func:`lbeta` for huge n (1e15, 1e300).
    """
    if math.isnan(n) or math.isnan(k):
        return math.nan
    if k < 0.0 or k > n:
        return -math.inf
    if k == 0.0 or k == n:
        return 0.0
    if n == math.inf:
        return math.inf
    return -vmath.log1p(n) - lbeta(n - k + 1.0, k + 1.0)


# ------------------------------------------------------- normal distribution


@jitable
def ndtr(x):
    """The standard normal CDF Phi(x), with relative accuracy in the left tail.

    Phi(x) = erfc(-x / sqrt 2) / 2. Rounding -x / sqrt 2 alone costs
    x**2 ulps (3e-13 relative at x = -37); the error dz of the rounded
    argument is recovered exactly (Dekker product with sqrt(1/2) = hi + lo)
    and removed to first order, d erfc(z) = -2/sqrt(pi) exp(-z**2) dz.
    Relative error ~1e-15 down to x = -37.5; below that Phi is subnormal.
    """
    if x >= 0.0:
        return 1.0 - 0.5 * math.erfc(x * _SQRT1_2)
    v = -x
    z = v * _SQRT1_2
    p = 0.5 * math.erfc(z)
    if 0.5 < z < 28.0:  # only where it matters, and the split is finite
        dz = _product_error(v, _SQRT1_2) + v * _SQRT1_2_LO  # v/sqrt(2) - z
        p -= dz * _INV_SQRT_PI * vmath.exp(-z * z)
    return p


@jitable
def _ndtr_tail_series(u):
    """S(u) - 1 where Phi(x) = phi(x) / |x| * S(1/x**2), for x <= -20.

    S = sum_k (-1)^k (2k - 1)!! u^k (asymptotic, DLMF 7.12.1) in nested
    form 1 - u (1 - 3u (1 - 5u (...))); 12 terms at u <= 1/400 leave an
    error below 2e-20.
    """
    r = 1.0
    for k in range(11, 0, -1):
        r = 1.0 - (2 * k + 1) * u * r
    return -u * r


@jitable
def log_ndtr(x):
    """log Phi(x), the log of the standard normal CDF, for all real x.

    x > 0: log1p(-Phi(-x)) (Phi(-x) is accurate in relative terms, and the
    result tends to -Phi(-x), underflowing to -0.0 beyond x ~ 38.5);
    -20 < x <= 0: log(Phi(x)); x <= -20: the asymptotic series
    -x**2/2 - log(-x) - log(2 pi)/2 + log S(1/x**2) (x = -40 gives
    -804.608...). Relative error ~1e-15.
    """
    if x > 0.0:
        return vmath.log1p(-ndtr(-x))
    if x > -20.0:
        return vmath.log(ndtr(x))
    t = _ndtr_tail_series(1.0 / (x * x))
    return -0.5 * x * x - vmath.log(-x) - LOG_SQRT_2PI + vmath.log1p(t)


@jitable
def dlog_ndtr(x):
    """phi(x) / Phi(x), the derivative of :func:`log_ndtr` (inverse Mills ratio).

    For x <= -20 from the asymptotic series, -x / S(1/x**2) (~ -x - 1/x);
    elsewhere phi / Phi with exp(-x**2/2) free of the x**2 rounding error.
    Tends to 0 for large x and to inf as x -> -inf. Relative error ~1e-15.
    """
    if x < -20.0:
        return -x / (1.0 + _ndtr_tail_series(1.0 / (x * x)))
    return INV_SQRT_2PI * _exp_neg_half_sq(x) / ndtr(x)


@jitable
def _log_ndtr_ratio(a, b):
    """log Phi(b) - log Phi(a) > 0 for a < b <= 0 and b - a <= 1.

    Integrates d/dt log Phi(t) = dlog_ndtr(t) > 0 by 8-point Gauss-Legendre.
    The integrand is analytic within ~3 of the interval (the zeros of Phi
    lie near t = 1.9 +- 2.8i and move away as t -> -inf), so 8 points reach
    double precision, and the sum of positive terms never cancels.
    """
    half = 0.5 * (b - a)
    mid = a + half
    s = 0.0
    for i in range(len(_GAUSS_NODES)):
        dt = half * _GAUSS_NODES[i]
        s += _GAUSS_WEIGHTS[i] * (dlog_ndtr(mid - dt) + dlog_ndtr(mid + dt))
    return half * s


@jitable
def log_diff_ndtr(a, b):
    """log(Phi(b) - Phi(a)) for a < b (-inf at a == b, NaN for a > b).

    By symmetry Phi(b) - Phi(a) = Phi(-a) - Phi(-b), so a > 0 is mirrored
    to the left half. Across 0, with the tails T = Phi(a) + Phi(-b):
    log1p(-T) when T < 1/2, else log((erf(b/sqrt2) + erf(-a/sqrt2)) / 2), a
    sum of positive terms. Both <= 0: log Phi(b) + log1mexp(-D) with
    D = log Phi(b) - log Phi(a) from a difference when b - a > 1 (then
    D > 0.79) and from :func:`_log_ndtr_ratio` for closer points. Accurate
    deep in both tails (a = 30, b = 31) and for b - a down to 1e-300.
    """
    if not (a < b):
        return -math.inf if a == b else math.nan
    if a > 0.0:
        a, b = -b, -a
    if b > 0.0:
        tails = ndtr(a) + ndtr(-b)
        if tails < 0.5:
            return vmath.log1p(-tails)
        return vmath.log(0.5 * (math.erf(b * _SQRT1_2) + math.erf(-a * _SQRT1_2)))
    lb = log_ndtr(b)
    if b - a > 1.0:
        return logsubexp(lb, log_ndtr(a))
    return lb + log1mexp(-_log_ndtr_ratio(a, b))


# ------------------------------------------------------------ Bessel I0, I1


@jitable
def _i0_i1_series(x):
    """(I0(x) - 1, 2 I1(x) / x) from the power series, for 0 <= x <= 8.

    I0 = sum_k t^k / k!^2, 2 I1 / x = sum_k t^k / (k! (k+1)!), t = x^2 / 4
    (DLMF 10.25.2). All terms are positive; at x = 8 (t = 16) 22 terms reach
    1e-18 relative.
    """
    t = 0.25 * x * x
    term0 = 1.0
    term1 = 1.0
    s0 = 0.0
    s1 = 1.0
    for k in range(1, 23):
        term0 *= t / (k * k)
        term1 *= t / (k * (k + 1))
        s0 += term0
        s1 += term1
    return s0, s1


@jitable
def log_i0(x):
    """log I0(x), the log of the modified Bessel function of order 0.

    Even in x, defined for all real x (inf at +-inf). |x| <= 8: log1p of the
    power series minus 1, so log_i0(x) ~ x**2/4 keeps relative accuracy as
    x -> 0; |x| > 8: |x| - log|x| / 2 + log(sqrt(x) exp(-x) I0(x)) with the
    last factor from a Chebyshev series in 8/|x|, accurate up to x = 1e300
    and beyond. Relative error ~1e-15.
    """
    ax = abs(x)
    if ax <= 8.0:
        s0, s1 = _i0_i1_series(ax)
        return vmath.log1p(s0)
    if ax == math.inf:
        return math.inf
    g = _chebyshev(_I0E_CHEB, 16.0 / ax - 1.0)
    return ax - 0.5 * vmath.log(ax) + vmath.log(g)


@jitable
def i1_over_i0(x):
    """I1(x) / I0(x), the ratio of modified Bessel functions of order 1 and 0.

    Odd in x, defined for all real x, in (-1, 1) (+-1 at +-inf). |x| <= 8:
    ratio of power series (~ x/2 as x -> 0); |x| > 8: 1 - u k(u) with
    u = 8/|x| and k a Chebyshev series (~ 1 - 1/(2|x|)), which also keeps
    1 - I1/I0 accurate for large |x|. Relative error ~1e-15.
    """
    ax = abs(x)
    if ax <= 8.0:
        s0, s1 = _i0_i1_series(ax)
        return 0.5 * x * s1 / (1.0 + s0)
    u = 8.0 / ax
    return math.copysign(1.0 - u * _chebyshev(_I1_I0_CHEB, 2.0 * u - 1.0), x)


@jitable
def _i0_i1_asymptotic(x):
    """``(S0 - 1, S0 - S1)`` for x >= 40, where (DLMF 10.40.1)

        I0(x) e^-x sqrt(2 pi x) ~ S0 = sum_j a_j,  a_j = prod_{i<=j} (2i - 1)^2 / (j! (8x)^j)
        I1(x) e^-x sqrt(2 pi x) ~ S1 = sum_j (-1)^j prod_{i<=j} (4 - (2i - 1)^2) / (j! (8x)^j).

    Every term of S1 after the first is negative (one factor 3, the others
    negative, times (-1)^j), so S0 - S1 is a sum of positive terms and
    1 - I1/I0 = (S0 - S1) / S0 keeps its relative accuracy (~1/(2x)).
    """
    a0 = 1.0
    a1 = 1.0
    s0 = 0.0
    diff = 0.0
    inv_8x = 0.125 / x
    for j in range(1, _BESSEL_ASYMPTOTIC_TERMS + 1):
        odd = 2.0 * j - 1.0
        a0 *= odd * odd * inv_8x / j
        a1 *= abs(odd * odd - 4.0) * inv_8x / j
        s0 += a0
        diff += a0 + a1
    return s0, diff


@jitable
def log_i0e(x):
    """log I0(x) - |x| = log(i0e(x)), the log of the scaled Bessel function I0.

    Even in x, defined for all real x: 0 at 0, -inf at +-inf, ~ -log(2 pi |x|)/2
    for large |x|. :func:`log_i0` minus |x| would cancel for large |x| (at
    |x| = 1e8 both are 1e8 and the result -9.7); from |x| = 40 on it comes
    from the asymptotic series, log S0 - log(2 pi |x|) / 2, with no
    cancellation. Relative error ~2e-15 (below |x| = 40 the absolute error
    of log_i0 - |x| is a few ulps of |x|, small next to the result).
    """
    ax = abs(x)
    if ax < _BESSEL_ASYMPTOTIC_FROM:
        return log_i0(ax) - ax
    s0_minus_1, _ = _i0_i1_asymptotic(ax)
    return vmath.log1p(s0_minus_1) - 0.5 * vmath.log(ax) - LOG_SQRT_2PI


@jitable
def one_minus_i1_over_i0(x):
    """1 - I1(x) / I0(x), accurate also where the ratio is close to 1.

    Defined for all real x, in (0, 2): 1 at 0, ~ 1/(2x) as x -> inf (0 at
    inf), 2 at -inf. It is minus the derivative of :func:`log_i0e` for
    x > 0 (the von Mises partial in the concentration). Below x = 40,
    1 - :func:`i1_over_i0`, which carries over the ratio's absolute error
    (~1e-15): relative error up to 1.5e-14 for 1 < x < 40, where the result
    falls to 0.013; from 40 on, (S0 - S1) / S0 from the asymptotic series, a
    ratio of sums of positive terms, relative error ~2e-16.
    """
    if x < _BESSEL_ASYMPTOTIC_FROM:
        return 1.0 - i1_over_i0(x)
    s0_minus_1, diff = _i0_i1_asymptotic(x)
    return diff / (1.0 + s0_minus_1)
