"""A small counter-free xoshiro256** generator held in a per-chain array.

numba's ``np.random`` state is global per thread, so results would depend on
how chains are spread over threads.  Each chain here owns a ``uint64[4]``
state array, seeded by splitmix64 from ``(seed, chain)``: results are the
same whatever the number of cores.  Reference: Blackman & Vigna (2018),
"Scrambled linear pseudorandom number generators".
"""

import math

import numpy as np

from ._jit import compiled

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


def make_state(seed, stream):
    """Return a fresh ``uint64[4]`` state for chain ``stream`` of ``seed``.

    Parameters
    ----------
    seed : int
        User seed (any non-negative int).
    stream : int
        Chain index; distinct streams give unrelated sequences.

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


@compiled
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


@compiled
def uniform(state):
    """Return a uniform draw on [0, 1) with 53 random bits."""
    return (next_uint64(state) >> _U11) * _TWO_POW_M53


@compiled
def normal(state):
    """Return a standard normal draw (Box-Muller, one output per two uniforms)."""
    u1 = 1.0 - uniform(state)  # in (0, 1]: log is finite
    u2 = uniform(state)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@compiled
def fill_normal(state, out):
    """Fill ``out`` with independent standard normal draws.

    Box-Muller pairs: both outputs of each pair of uniforms are used.
    """
    n = out.shape[0]
    for i in range(0, n - 1, 2):
        radius = math.sqrt(-2.0 * math.log(1.0 - uniform(state)))
        angle = 2.0 * math.pi * uniform(state)
        out[i] = radius * math.cos(angle)
        out[i + 1] = radius * math.sin(angle)
    if n % 2 == 1:
        out[n - 1] = normal(state)
