"""Tests of the generalized no-U-turn criterion."""

import numpy as np

from logdens.samplers.termination import is_turning, is_turning_extended


def test_straight_segment_is_not_turning_and_reversal_is():
    v = np.array([1.0, 0.0])
    assert not is_turning(v, v, np.array([3.0, 0.0]))
    assert is_turning(v, -v, np.array([3.0, 0.0]))
    assert is_turning(v, v, np.array([0.0, 1.0]))  # orthogonal: projection 0


def test_symmetric_in_its_ends_and_extended_equals_sum():
    rng = np.random.default_rng(0)
    for _ in range(200):
        a, b, rho, e = rng.normal(size=(4, 3))
        assert is_turning(a, b, rho) == is_turning(b, a, rho)
        assert is_turning_extended(a, b, rho, e) == is_turning(a, b, rho + e)


def test_merged_criterion_is_the_three_checks():
    from logdens.samplers.termination import is_turning_merged
    rng = np.random.default_rng(1)
    for _ in range(500):
        va1, va2, ra, pa, vb1, vb2, rb, pb = rng.normal(size=(8, 3))
        expected = (is_turning(va1, vb2, ra + rb) or is_turning(va1, vb1, ra + pb)
                    or is_turning(va2, vb2, rb + pa))
        assert is_turning_merged(va1, va2, ra, pa, vb1, vb2, rb, pb) == expected
