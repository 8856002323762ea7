"""``logdens.outer``: a row's outer product written as LLVM vector stores.

Each entry is one product ``h[j] * g[q]`` (plus the old value for
``row_outer_add``), the same rounding as numpy's, so results are compared
exactly. Lengths cover the vector width's remainders and both sides of
``UNROLLED`` (straight-line stores up to it, a loop beyond and for lengths
known only at run time).
"""

import numba
import numpy as np
import pytest
from numba.core.errors import TypingError

from logdens.outer import UNROLLED, WIDTH, row_outer, row_outer_add

LENGTHS = (1, 2, 3, WIDTH, WIDTH + 1, 10, 32, 33, UNROLLED, UNROLLED + 1)


def _constant_length(n):
    """A compiled caller with the row length ``n`` a constant of its code, as the
    generated per-sample functions write it, into a slice of a 2-d array's row."""
    namespace = {"numba": numba, "row_outer": row_outer, "row_outer_add": row_outer_add}
    exec(f"@numba.njit\n"
         f"def assign(out, h, g, m):\n"
         f"    for r in range(h.shape[0]):\n"
         f"        row_outer(out[r, 1:1 + m * {n}], h[r], g[r], m, {n})\n"
         f"@numba.njit\n"
         f"def add(out, h, g, m):\n"
         f"    for r in range(h.shape[0]):\n"
         f"        row_outer_add(out[r, 1:1 + m * {n}], h[r], g[r], m, {n})\n", namespace)
    return namespace["assign"], namespace["add"]


@numba.njit
def _run_time_length(dst, h, g, m, n):
    row_outer_add(dst, h, g, m, n)


@pytest.mark.parametrize("n", LENGTHS)
def test_rows_equal_numpy_and_leave_the_rest(n):
    rng = np.random.default_rng(n)
    rows, m = 3, 7
    h, g = rng.normal(size=(rows, m)), rng.normal(size=(rows, n))
    want = np.einsum("rj,rq->rjq", h, g).reshape(rows, m * n)
    assign, add = _constant_length(n)
    out = rng.normal(size=(rows, m * n + 2))
    before = out.copy()
    assign(out, h, g, m)
    assert np.array_equal(out[:, 1:-1], want)
    assert np.array_equal(out[:, [0, -1]], before[:, [0, -1]])
    add(out, h, g, m)
    assert np.array_equal(out[:, 1:-1], want + want)
    assert np.array_equal(out[:, [0, -1]], before[:, [0, -1]])


@pytest.mark.parametrize("n", (1, 5, 40, 100))
def test_a_length_known_at_run_time(n):
    rng = np.random.default_rng(100 + n)
    h, g, dst = rng.normal(size=4), rng.normal(size=n), rng.normal(size=4 * n + 3)
    want = dst.copy()
    want[:4 * n] += np.outer(h, g).ravel()
    _run_time_length(dst, h, g, 4, n)
    assert np.array_equal(dst, want)


def test_short_rows_are_vector_stores():
    """A row of 10 (a network's output layer) is written with vector stores, which
    the loop vectorizer did not make of this nest (numba runs no SLP vectorizer)."""
    assign, _ = _constant_length(10)
    h, g, out = np.ones((2, 3)), np.ones((2, 10)), np.zeros((2, 40))
    assign(out, h, g, 3)
    ir = assign.inspect_llvm(assign.signatures[0])
    assert f"store <{WIDTH} x double>" in ir


def test_a_strided_row_is_refused_by_name():
    @numba.njit
    def strided(dst, h, g):
        row_outer(dst, h[::2], g, 2, 3)

    with pytest.raises(TypingError, match="row_outer: h must be a contiguous 1-d float64 array"):
        strided(np.zeros(6), np.ones(4), np.ones(3))
