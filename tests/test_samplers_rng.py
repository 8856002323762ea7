"""Tests of samplers.rng: reproducible per-chain streams with the right laws."""

import numpy as np
from scipy import stats

from logdens.samplers.rng import fill_normal, make_state, next_uint64, uniform


def test_same_seed_same_stream_and_distinct_streams():
    a, b, c = make_state(3, 0), make_state(3, 0), make_state(3, 1)
    xs = [next_uint64(a) for _ in range(5)]
    assert xs == [next_uint64(b) for _ in range(5)]
    assert xs != [next_uint64(c) for _ in range(5)]
    assert not np.array_equal(make_state(3, 0), make_state(4, 0))


def test_xoshiro256ss_reference_output():
    # Reference values of xoshiro256** from state (1, 2, 3, 4) (Vigna's C code).
    state = np.array([1, 2, 3, 4], dtype=np.uint64)
    assert [int(next_uint64(state)) for _ in range(3)] == [
        11520, 0, 1509978240]


def test_uniform_and_normal_laws():
    state = make_state(0, 0)
    u = np.array([uniform(state) for _ in range(20000)])
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    z = np.empty(20000)
    fill_normal(state, z)
    assert stats.kstest(z, "norm").pvalue > 1e-3


def test_fill_normal_pairs_are_independent_and_odd_lengths_filled():
    """Each Box-Muller pair lands at ``i`` and ``n // 2 + i``: the two halves are
    uncorrelated, and so are their squares (a pair shares its radius); an odd
    length draws its last entry alone."""
    state = make_state(5, 2)
    z = np.full(40001, np.nan)
    fill_normal(state, z)
    assert np.isfinite(z).all()
    assert stats.kstest(z, "norm").pvalue > 1e-3
    first, second = z[:20000], z[20000:40000]
    assert abs(np.corrcoef(first, second)[0, 1]) < 0.03  # 4.2 standard errors of 1/sqrt(20000)
    assert abs(np.corrcoef(first ** 2, second ** 2)[0, 1]) < 0.03
