"""samplers.eigh against numpy's LAPACK eigh."""

import numpy as np
import pytest

from logdens.samplers.eigh import eigh


def decompose(a):
    n = a.shape[0]
    vals, vecs = np.empty(n), np.empty((n, n))
    assert eigh(a, vals, vecs)
    return vals, vecs


@pytest.mark.parametrize("n", [1, 2, 5, 40])
def test_random_symmetric_matrices_against_lapack(n):
    # Tolerances: a backward-stable method on |a| ~ sqrt(n) gives errors of a
    # few n * eps * |a|.
    a = np.random.default_rng(n).normal(size=(n, n))
    a = a + a.T
    vals, vecs = decompose(a)
    np.testing.assert_allclose(vals, np.linalg.eigvalsh(a), atol=1e-12 * n)
    np.testing.assert_allclose(vecs @ np.diag(vals) @ vecs.T, a, atol=1e-12 * n)
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(n), atol=1e-13 * n)


@pytest.mark.parametrize("a", [np.eye(4), np.diag([3.0, 1.0, 2.0, 2.0]), np.zeros((3, 3)),
                               np.array([[1e-30, 0.0], [0.0, 1e30]])])
def test_repeated_zero_and_extreme_eigenvalues(a):
    vals, vecs = decompose(a)
    np.testing.assert_array_equal(vals, np.sort(np.diag(a)))
    np.testing.assert_allclose(vecs @ np.diag(vals) @ vecs.T, a, atol=1e-15)


def test_not_finite_is_refused():
    assert not eigh(np.array([[1.0, np.nan], [np.nan, 1.0]]), np.empty(2), np.empty((2, 2)))
