"""The random number generator: xoshiro256** in a per-stream array, and the
standard draws every distribution's ``rvs`` is built from.

numba's ``np.random`` state is global per thread, so results would depend on
how work is spread over threads. Here each stream (a sampler's chain, a
predictive draw) owns a ``uint64[4]`` state array, seeded by splitmix64 from
``(seed, stream)``, and every draw takes it as its first argument: results
depend only on the seed. Reference: Blackman & Vigna (2018), "Scrambled
linear pseudorandom number generators". ``samplers.rng`` re-exports the
generator; this is its one implementation.

The standard draws are exact algorithms, each cited where it is defined:
uniform (53 random bits), normal (Box-Muller), exponential (inversion) and
gamma (Marsaglia-Tsang, with the shape < 1 boost done in log space).
Functions are plain Python compiled by numba inside callers
(``distributions.jit.jitable``); from Python they run uncompiled.
"""

import math

import numpy as np

from . import vmath
from .jit import jitable
from .special import logmxp1

_MASK = (1 << 64) - 1
_U7 = np.uint64(7)
_U9 = np.uint64(9)
_U5 = np.uint64(5)
_U11 = np.uint64(11)
_U17 = np.uint64(17)
_U45 = np.uint64(45)
_U64 = np.uint64(64)
_TWO_POW_M53 = 1.0 / 9007199254740992.0


def _splitmix64(x):
    """Return ``(next_state, output)`` of splitmix64 on Python ints."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return x, z ^ (z >> 31)


def make_state(seed, stream=0):
    """Return a fresh ``uint64[4]`` state for stream ``stream`` of ``seed``.

    Parameters
    ----------
    seed : int
        User seed (any non-negative int; larger ints are reduced mod 2**64).
    stream : int
        Stream index (a chain); distinct streams give unrelated sequences.

    Returns
    -------
    ndarray of uint64, shape (4,)
    """
    x = (int(seed) * 0x2545F4914F6CDD1D + int(stream) * 0x9E3779B97F4A7C15 + 1) & _MASK
    words = []
    for _ in range(4):
        x, out = _splitmix64(x)
        words.append(out)
    return np.array(words, dtype=np.uint64)


def seeded_state(seed, what):
    """``make_state(seed)`` for a user's ``seed`` (a non-negative int, or None for
    fresh entropy from the OS); a TypeError naming ``what`` otherwise."""
    if seed is None:
        seed = np.random.SeedSequence().entropy
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TypeError(f"{what}: seed={seed!r}, must be a non-negative int")
    return make_state(int(seed))


@jitable
def next_uint64(state):
    """Advance ``state`` in place and return the next 64-bit output.

    ``(x << k) | (x >> (64 - k))`` is a left rotation by ``k`` bits (written
    out rather than as a helper: each compiled helper costs compile time).
    """
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    r = s1 * _U5
    result = ((r << _U7) | (r >> (_U64 - _U7))) * _U9
    t = s1 << _U17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << _U45) | (s3 >> (_U64 - _U45))
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return result


@jitable
def uniform(state):
    """Return a uniform draw on [0, 1) with 53 random bits."""
    return (next_uint64(state) >> _U11) * _TWO_POW_M53


@jitable
def uniform_open(state):
    """Return a uniform draw on the open interval (0, 1): the midpoints of the
    2**53 cells of ``uniform``, so that logs and inverse CDFs stay finite."""
    return ((next_uint64(state) >> _U11) + 0.5) * _TWO_POW_M53


@jitable
def normal(state):
    """Return a standard normal draw (Box-Muller, one output per two uniforms)."""
    u1 = 1.0 - uniform(state)  # in (0, 1]: log is finite
    u2 = uniform(state)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@jitable
def fill_normal(state, out):
    """Fill ``out`` with independent standard normal draws.

    Box-Muller pairs, both outputs of each pair of uniforms used, in two
    passes: the uniforms first (the generator is sequential), then one loop
    that turns the pair at ``i`` and ``half + i`` into two draws with
    ``vmath``'s ``log`` and ``sin_cos_turns``: no libm calls, so it
    vectorizes. 4x faster than a pair at a time with ``math``'s ``log``,
    ``cos`` and ``sin`` (a sampler's momenta; RESULTS.md, session 16).
    """
    n = out.shape[0]
    half = n // 2
    for i in range(2 * half):
        out[i] = uniform(state)
    for i in range(half):
        radius = math.sqrt(-2.0 * vmath.log(1.0 - out[i]))  # 1 - u in (0, 1]: the log is finite
        sin_a, cos_a = vmath.sin_cos_turns(out[half + i])
        out[i] = radius * cos_a
        out[half + i] = radius * sin_a
    if n % 2 == 1:
        out[n - 1] = normal(state)


@jitable
def exponential(state):
    """Return a standard exponential draw by inversion, -log(U) with U in (0, 1)."""
    return -math.log(uniform_open(state))


@jitable
def _gamma_large(state, a):
    """Gamma(a, 1) for a >= 1: Marsaglia & Tsang (2000), "A simple method for
    generating gamma variables", ACM TOMS 26(3). The log test is
    d (1 - v + log v) = d logmxp1(v), free of cancellation for huge shapes."""
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = normal(state)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform_open(state)
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2:
            return d * v
        if math.log(u) < 0.5 * x2 + d * logmxp1(v):
            return d * v


@jitable
def log_gamma(state, a):
    """Return log G for G ~ Gamma(a, 1), a > 0, finite even where G underflows.

    For a < 1 Marsaglia and Tsang's boost G = G' U^(1/a), G' ~ Gamma(a + 1),
    taken in logs: log G' + log(U) / a (at a = 1e-3, G itself is below the
    smallest double about half the time).
    """
    if a >= 1.0:
        return math.log(_gamma_large(state, a))
    return math.log(_gamma_large(state, a + 1.0)) + math.log(uniform_open(state)) / a


@jitable
def gamma(state, a):
    """Return a Gamma(a, 1) draw for a > 0 (0.0 where it underflows, for tiny a)."""
    if a >= 1.0:
        return _gamma_large(state, a)
    return math.exp(log_gamma(state, a))
