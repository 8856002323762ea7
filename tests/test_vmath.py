"""distributions.vmath: exp, log, log1p and tanh within 2 ulp of numpy, and vectorizing.

Tolerance: numpy's exp/log/log1p are within about 0.5-1 ulp of the exact
value, ours too, so the two may differ by up to 2 ulp of the result; we
assert that bound, measured in ``np.spacing`` of numpy's result (absolute
ulps, so subnormal results are held to the same rule). Special values
(0, -0, inf, -inf, NaN, negatives, subnormals, the overflow and underflow
edges) must match numpy exactly.
"""

import math

import mpmath
import numba
import numpy as np
import pytest

from logdens.distributions import vmath
from logdens.distributions.jit import FASTMATH

FUNCTIONS = {"exp": (vmath.exp, np.exp), "log": (vmath.log, np.log), "log1p": (vmath.log1p, np.log1p),
             "tanh": (vmath.tanh, np.tanh)}


@numba.njit(fastmath=set(FASTMATH), error_model="numpy")
def _map_exp(x, out):
    for i in range(x.size):
        out[i] = vmath.exp(x[i])


@numba.njit(fastmath=set(FASTMATH), error_model="numpy")
def _map_log(x, out):
    for i in range(x.size):
        out[i] = vmath.log(x[i])


@numba.njit(fastmath=set(FASTMATH), error_model="numpy")
def _map_log1p(x, out):
    for i in range(x.size):
        out[i] = vmath.log1p(x[i])


@numba.njit(fastmath=set(FASTMATH), error_model="numpy")
def _map_tanh(x, out):
    for i in range(x.size):
        out[i] = vmath.tanh(x[i])


# Loops compiled with the engine's fastmath flags, the way generated code calls these.
MAPS = {"exp": _map_exp, "log": _map_log, "log1p": _map_log1p, "tanh": _map_tanh}


def _points(name, rng):
    if name == "exp":
        return np.concatenate([rng.uniform(-745.1, 709.7, 100_000), rng.uniform(-1, 1, 20_000),
                               rng.uniform(-1e-8, 1e-8, 1000)])
    x = 10.0 ** rng.uniform(-323, 308, 100_000)
    if name == "tanh":  # both sides of the switch at 0.625, and the far tails
        return np.concatenate([x, -x, rng.uniform(-2.0, 2.0, 50_000), rng.uniform(-0.7, 0.7, 20_000),
                               rng.uniform(-40.0, 40.0, 20_000)])
    if name == "log":
        return np.concatenate([x, rng.uniform(0.5, 2.0, 20_000)])
    return np.concatenate([x, -x[x < 1.0], rng.uniform(-1.0, 1.0, 20_000)])


def _ulps(got, want):
    return np.abs(got - want) / np.spacing(np.abs(want))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_within_two_ulps_of_numpy_in_a_fastmath_loop(name):
    x = _points(name, np.random.default_rng(20261122))
    out = np.empty_like(x)
    MAPS[name](x, out)
    want = FUNCTIONS[name][1](x)
    worst = np.argmax(_ulps(out, want))
    assert _ulps(out, want)[worst] <= 2.0, (name, x[worst], out[worst], want[worst])


SPECIAL = [0.0, -0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 0.5, 1.0, 2.0, -1.0, -2.0,
           -1e-300, 1e-17, -1e-17, 709.78, 709.79, 710.0, -745.13, -745.14, -746.0, 1e300, -1e300,
           1.7976931348623157e308, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_special_values_match_numpy(name):
    x = np.array(SPECIAL)
    out = np.empty_like(x)
    MAPS[name](x, out)
    with np.errstate(all="ignore"):
        want = FUNCTIONS[name][1](x)
    for xi, got, ref in zip(x, out, want):
        if np.isnan(ref):
            assert np.isnan(got), (name, xi, got)
        elif not np.isfinite(ref) or ref == 0.0:
            assert got == ref and np.signbit(got) == np.signbit(ref), (name, xi, got, ref)
        else:
            assert _ulps(got, ref) <= 2.0, (name, xi, got, ref)


@pytest.mark.parametrize("x", [1e-300, 3e-20, 0.3, 0.999999, 1.000001, 7.5, 1e10, 1e300])
def test_against_mpmath(x):
    mpmath.mp.prec = 113
    for name, want in [("log", mpmath.log(x)), ("log1p", mpmath.log1p(x)), ("exp", mpmath.exp(-x))]:
        arg = -x if name == "exp" else x
        got = FUNCTIONS[name][0](arg)
        assert abs(got - float(want)) <= 1.0 * np.spacing(abs(float(want))), (name, x, got, want)
    want = mpmath.tanh(x)  # the rational form below 0.625, exp above: within 2 ulp of the exact value
    assert abs(vmath.tanh(x) - float(want)) <= 2.0 * np.spacing(abs(float(want))), ("tanh", x, want)


def test_bit_casts_agree_compiled_and_in_python():
    @numba.njit
    def roundtrip(x):
        return vmath.float_bits(x), vmath.bits_float(vmath.float_bits(x))

    for x in [0.0, -0.0, 1.0, -3.5, 5e-324, math.inf, 1e308]:
        bits, back = roundtrip(x)
        assert bits == vmath.float_bits(x) == np.float64(x).view(np.int64)
        assert back == x and vmath.bits_float(bits) == x


@pytest.mark.parametrize("name", FUNCTIONS)
def test_loops_over_them_vectorize(name):
    """The point of the module: no call is left in the loop, so LLVM emits
    vector instructions (any x86-64 has at least 2-wide SSE2 vectors)."""
    ir = next(iter(MAPS[name].inspect_llvm().values()))
    assert "x double>" in ir, f"the loop over vmath.{name} did not vectorize"


@numba.njit(fastmath=set(FASTMATH), error_model="numpy")
def _map_log1p_and_reciprocal(x, out, inverse):
    for i in range(x.size):
        out[i], inverse[i] = vmath.log1p_and_reciprocal(x[i])


def test_log1p_and_reciprocal_within_two_ulps_on_its_domain():
    """Its domain, 0 <= x <= 1 (the callers pass exp(-|t|) and squares <= 1),
    including 0, subnormals and 1; NaN outside it and at NaN."""
    rng = np.random.default_rng(7)
    x = np.concatenate([[0.0, 5e-324, 1e-310, 1e-17, 0.5, 1.0], rng.uniform(0.0, 1.0, 50_000),
                        10.0 ** rng.uniform(-323, 0, 50_000)])
    out, inverse = np.empty_like(x), np.empty_like(x)
    _map_log1p_and_reciprocal(x, out, inverse)
    assert np.max(_ulps(out[x > 0], np.log1p(x[x > 0]))) <= 2.0
    assert out[0] == 0.0 and inverse[0] == 1.0
    assert np.max(_ulps(inverse, 1.0 / (1.0 + x))) <= 1.0
    outside = np.array([-1e-300, -0.5, 1.0000000000000002, 2.0, math.inf, math.nan])
    out, inverse = np.empty_like(outside), np.empty_like(outside)
    _map_log1p_and_reciprocal(outside, out, inverse)
    assert np.isnan(out).all()
    ir = next(iter(_map_log1p_and_reciprocal.inspect_llvm().values()))
    assert "x double>" in ir


@numba.njit(fastmath=set(FASTMATH), error_model="numpy")
def _map_sin_cos_turns(u, sin_out, cos_out):
    for i in range(u.size):
        sin_out[i], cos_out[i] = vmath.sin_cos_turns(u[i])


def test_sin_cos_turns_within_one_ulp_of_the_exact_values_and_vectorizing():
    """Against mpmath at 113 bits (numpy's ``sin(2 pi u)`` rounds ``2 pi u``
    first: 4e-14 off at |u| = 50): within 1 ulp of 1 (the results are at most
    1 in magnitude; near 0 the absolute error is what a Box-Muller draw sees)
    on [0, 1) as the samplers use it, at every eighth of a turn and beside
    it, and on [-50, 50]; exact at the quarter turns."""
    rng = np.random.default_rng(11)
    eighths = np.arange(-16, 17) / 8.0
    u = np.concatenate([eighths, np.nextafter(eighths, 2.0), np.nextafter(eighths, -2.0), [1e-300, 5e-324],
                        rng.random(1500), rng.uniform(-50.0, 50.0, 500)])
    sin_got, cos_got = np.empty_like(u), np.empty_like(u)
    _map_sin_cos_turns(u, sin_got, cos_got)
    mpmath.mp.prec = 113
    for x, s, c in zip(u, sin_got, cos_got):
        angle = 2 * mpmath.pi * mpmath.mpf(float(x))
        assert abs(s - float(mpmath.sin(angle))) <= np.spacing(1.0), (x, s)
        assert abs(c - float(mpmath.cos(angle))) <= np.spacing(1.0), (x, c)
    quarters = np.arange(-8, 9) / 4.0
    sin_got, cos_got = np.empty_like(quarters), np.empty_like(quarters)
    _map_sin_cos_turns(quarters, sin_got, cos_got)
    np.testing.assert_array_equal(np.abs(sin_got) + np.abs(cos_got), 1.0)
    np.testing.assert_array_equal(sin_got, np.round(np.sin(2 * np.pi * quarters)) + 0.0)
    np.testing.assert_array_equal(cos_got, np.round(np.cos(2 * np.pi * quarters)) + 0.0)
    ir = next(iter(_map_sin_cos_turns.inspect_llvm().values()))
    assert "x double>" in ir, "the loop over vmath.sin_cos_turns did not vectorize"
