"""``exp``, ``log``, ``log1p`` (and ``log1p_and_reciprocal``), ``tanh`` in plain arithmetic, so loops over them vectorize.

This numba has no SVML: ``math.exp`` and ``math.log`` compile to scalar libm
calls (5-11 ns per element here), and a call in a loop body stops LLVM from
vectorizing the loop. These versions are a range reduction through the float's
bits plus a polynomial: no calls, no branches (the special cases are selects),
so LLVM inlines them and a loop over them runs 8 elements per instruction on
AVX-512 (about 1.5 ns per element here). All three are within 1 ulp of
numpy's (tests/test_vmath.py), with the same values at 0, inf, NaN, negative
arguments and subnormals.

Their own fastmath flags are set explicitly to contraction only (fused
multiply-add). Flags set on a function are not inherited from its caller, so
the engine's ``reassoc`` cannot regroup ``(t - n*ln2_hi) - n*ln2_lo`` into
``t - n*ln2`` and cost the reduction its extra precision (measured: 2e-14
relative error instead of 2e-16 with the caller's flags).
"""

import math
import struct

import numba
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from . import jit

_JIT = jit.njit(fastmath={"contract"})
# tanh is too large for LLVM's inliner to take it on its own: a call per element.
_JIT_INLINED = jit.njit(fastmath={"contract"}, forceinline=True)

_LOG2E = 1.4426950408889634
# ln 2 split so that n * _LN2_HI is exact for |n| < 2**11 (its low bits are zero).
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SQRT2 = 1.4142135623730951
_TWO54 = 18014398509481984.0
_SMALLEST_NORMAL = 2.2250738585072014e-308
_EXP_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(14))  # 1/0!, ..., 1/13!
# Minimax coefficients of (log(1 + f) - f + f^2/2) / s in s^2, s = f / (2 + f)
# on |s| <= 0.1716 (fdlibm's e_log.c): error below 2**-58.
_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
       2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
       1.479819860511658591e-01)


def float_bits(x):
    """The IEEE 754 bits of the float ``x`` as a signed 64-bit integer."""
    return struct.unpack("<q", struct.pack("<d", x))[0]


def bits_float(n):
    """The float whose IEEE 754 bits are the 64-bit integer ``n``."""
    return struct.unpack("<d", struct.pack("<q", n))[0]


@intrinsic
def _float_bits(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _bits_float(typingctx, n):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@overload(float_bits)
def _float_bits_compiled(x):
    return lambda x: _float_bits(x)


@overload(bits_float)
def _bits_float_compiled(n):
    return lambda n: _bits_float(n)


@_JIT
def exp(x):
    """e**x: exp(r) for |r| <= ln(2)/2 by its Taylor series, times 2**n.

    The degree-13 series leaves a truncation error below 4e-18. 2**n is
    applied as two factors 2**(n//2) and 2**(n - n//2), so results that
    overflow become inf and subnormal results are rounded once.
    """
    t = x if x > -746.0 else -746.0  # also maps NaN to a finite value; restored below
    t = t if t < 710.0 else 710.0
    n = math.floor(t * _LOG2E + 0.5)
    r = (t - n * _LN2_HI) - n * _LN2_LO
    # 1 + r + r^2 q(r), with q by Estrin's scheme: 5 dependent multiply-adds
    # instead of Horner's 14, for loops that do not vectorize (a scatter in
    # the body), where the latency of the chain is what costs. Adding the
    # small part r + r^2 q to 1 last keeps the result within 1 ulp.
    c = _EXP_TAYLOR
    r2 = r * r
    r4 = r2 * r2
    q = (((c[2] + c[3] * r) + (c[4] + c[5] * r) * r2) + ((c[6] + c[7] * r) + (c[8] + c[9] * r) * r2) * r4
         + ((c[10] + c[11] * r) + (c[12] + c[13] * r) * r2) * (r4 * r4))
    p = 1.0 + (r + r2 * q)
    k = numba.int64(n)
    half = k >> 1
    y = p * bits_float((half + 1023) << 52) * bits_float((k - half + 1023) << 52)
    return y if x == x else x


# tanh(x) = x + x z P(z) / Q(z), z = x^2, for |x| < 0.625: a rational
# approximation (Cephes' tanh.c) with relative error below 3e-17 there.
_TANH_P = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
_TANH_Q = (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)


@_JIT_INLINED
def tanh(x):
    """Hyperbolic tangent: the rational form near 0, ``1 - 2 / (exp(2|x|) + 1)``
    with the sign of x elsewhere (where the result is at least 0.55, so the
    subtraction loses under one bit); +-1 beyond, NaN at NaN. Both branches are
    computed and one selected: no branch, so loops over it vectorize."""
    a = abs(x)
    z = x * x
    near = x + x * z * ((_TANH_P[0] * z + _TANH_P[1]) * z + _TANH_P[2]) / (
        ((z + _TANH_Q[0]) * z + _TANH_Q[1]) * z + _TANH_Q[2])
    far = 1.0 - 2.0 / (exp(2.0 * (a if a < 40.0 else 40.0)) + 1.0)
    far = far if x >= 0.0 else -far
    y = near if a < 0.625 else far
    y = x if z == 0.0 else y  # +-0 and the smallest subnormals: x itself, with its sign
    return y if x == x else x


@_JIT
def _log_plus(x, c):
    """log(x) + c / x for finite x > 0, c a small correction (fdlibm's reduction).

    x = 2**k * m with m in [sqrt(2)/2, sqrt(2)), f = m - 1, s = f / (2 + f):
    log(m) = f - (f^2/2 - s (f^2/2 + R(s^2))). Subnormal x is scaled by 2**54 first.
    """
    tiny = x < _SMALLEST_NORMAL
    scaled = x * _TWO54 if tiny else x
    bits = float_bits(scaled)
    k = ((bits >> 52) & 0x7FF) - (1023 + 54 if tiny else 1023)
    m = bits_float((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)
    high = m > _SQRT2
    m = 0.5 * m if high else m
    dk = float(k + 1 if high else k)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = (z * (_LG[0] + w * (_LG[2] + w * (_LG[4] + w * _LG[6])))
         + w * (_LG[1] + w * (_LG[3] + w * _LG[5])))
    hfsq = 0.5 * f * f
    return dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + (dk * _LN2_LO + c / x))) - f)


@_JIT
def log(x):
    """Natural logarithm: -inf at 0, NaN below 0 or at NaN, inf at inf."""
    y = _log_plus(x, 0.0)
    y = -math.inf if x == 0.0 else y
    y = x if x == math.inf else y
    return y if x >= 0.0 else math.nan


@_JIT
def log1p(x):
    """log(1 + x), accurate for small x.

    u = 1 + x is rounded; c = x - (u - 1) is its rounding error (exact), and
    log(1 + x) = log(u + c) = log(u) + c / u to first order in c.
    """
    u = 1.0 + x
    y = _log_plus(u, x - (u - 1.0))
    y = x if x == 0.0 else y  # keeps the sign of -0.0
    y = -math.inf if u == 0.0 else y
    y = x if x == math.inf else y
    return y if u >= 0.0 else math.nan


@_JIT
def log1p_and_reciprocal(x):
    """``(log(1 + x), 1 / (1 + x))`` for 0 <= x <= 1 (NaN outside), with one division.

    The kernels that need log1p(x) also need 1 / (1 + x) (the logistic
    function, the Cauchy kernel's factors): log1p's correction c / u becomes
    c * (1 / u) and the reciprocal is shared. Per 1e6 gradients
    (bench_distributions.py): BernoulliLogit 11.1 -> 10.4 ms, Cauchy 15.0 ->
    14.7 ms.
    """
    u = 1.0 + x
    inverse = 1.0 / u
    y = _log_plus(u, (x - (u - 1.0)) * inverse)  # exactly 0 at x = 0
    return (y if 0.0 <= x <= 1.0 else math.nan), inverse


_HALF_PI = 1.5707963267948966
_SIN_TAYLOR = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(1, 8))  # -1/3!, ..., -1/15!
_COS_TAYLOR = tuple((-1.0) ** k / math.factorial(2 * k) for k in range(1, 9))  # -1/2!, ..., 1/16!


@_JIT_INLINED
def sin_cos_turns(u):
    """``(sin(2 pi u), cos(2 pi u))`` for finite ``u`` (an angle in turns).

    The reduction is exact: ``t = 4u`` counts quarter turns, ``q`` is the
    nearest whole quarter and ``r = t - q`` (in [-1/2, 1/2], Sterbenz's lemma)
    the rest, so only ``x = pi/2 r`` (|x| <= pi/4) is rounded. There the Taylor
    series to x^15 and x^16 leave truncation errors below 5e-17 and 2e-18.
    The quarter ``q mod 4`` swaps and signs the pair by selects, not branches
    or integer conversions (packed float-to-integer conversion needs
    AVX-512), so loops over it vectorize on AVX2 as well.
    """
    t = 4.0 * u
    q = math.floor(t + 0.5)
    x = _HALF_PI * (t - q)
    x2 = x * x
    s, c = _SIN_TAYLOR, _COS_TAYLOR
    sin_x = x + x * x2 * (s[0] + x2 * (s[1] + x2 * (s[2] + x2 * (s[3] + x2 * (s[4] + x2 * (s[5] + x2 * s[6]))))))
    cos_x = 1.0 + x2 * (c[0] + x2 * (c[1] + x2 * (c[2] + x2 * (c[3] + x2 * (c[4] + x2 * (c[5] + x2 * (
        c[6] + x2 * c[7])))))))
    m = q - 4.0 * math.floor(0.25 * q)  # 0, 1, 2 or 3 quarter turns
    odd = m == 1.0 or m == 3.0
    sin_t = cos_x if odd else sin_x
    cos_t = sin_x if odd else cos_x
    sin_t = -sin_t if m >= 2.0 else sin_t
    cos_t = -cos_t if m == 1.0 or m == 2.0 else cos_t
    return sin_t, cos_t
