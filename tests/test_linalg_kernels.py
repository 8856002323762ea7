"""Tests of ``logdens.linalg_kernels``: Cholesky forward and reverse, triangular
solves and their reverses, at the sizes around every crossover and block edge.

Matrices have eigenvalues log-spaced from ``scale`` down to ``scale / cond``;
cond = 10 is well conditioned, cond = 1e10 near-singular. The references:
numpy's Cholesky and solves, Murray's closed form of the reverse, central
finite differences (h = 1e-6 * scale) where S is well conditioned, and the
complex step where it is near-singular (see ``test_reverse_near_singular``).
"""

import re

import numba
import numpy as np
import pytest
from scipy.linalg import solve_triangular

from logdens import linalg_kernels as lk

EPS = np.finfo(float).eps
#: The brief's sizes, and ours: the crossovers (12, 24, 8) and blocks (8, 64).
SIZES = (1, 2, 3, 8, 9, 12, 13, 24, 25, 31, 32, 33, 64, 65, 100, 129, 257)


@pytest.fixture(autouse=True, scope="module")
def one_blas_thread():
    """BLAS on one thread for these tests: OpenBLAS's threads spin while they
    wait, and on a busy two-core machine the file took 25 s with them, 4 s
    without."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(1, user_api="blas"):
        yield


def spd(n, cond, scale=1.0, seed=0):
    """Symmetric S = Q diag(lambda) Q^T, lambda log-spaced in [scale / cond, scale]."""
    rng = np.random.default_rng(seed + n)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    lam = scale * np.logspace(0.0, -np.log10(cond), n)
    s = (q * lam) @ q.T
    return (s + s.T) / 2


def factor(S, kernel=lk.cholesky_forward):
    """L of S through a kernel, as an n x n array, and its success flag."""
    n = S.shape[0]
    L = np.full(n * n, np.nan)
    ok = kernel(np.ascontiguousarray(S).ravel(), L, n)
    return ok, L.reshape(n, n)


def reverse(L, aL, kernel=lk.cholesky_reverse):
    """aS from a zero start, through a kernel, as an n x n array."""
    n = L.shape[0]
    aS = np.zeros(n * n)
    kernel(L.ravel(), aL.ravel(), aS, n, np.empty(lk.cholesky_reverse_work(n)))
    return aS.reshape(n, n)


def with_garbage(L):
    """L's lower triangle with NaN above it, for kernels that must not read there."""
    return np.tril(L) + np.triu(np.full(L.shape, np.nan), 1)


def phi(a):
    """Lower triangle with the diagonal halved (Murray's Phi)."""
    return np.tril(a) - 0.5 * np.diag(np.diag(a))


def murray(L, aL):
    """aS = tril Phi(G + G^T), G = L^-T Phi(L^T aL) L^-1 (module docstring)."""
    left = solve_triangular(L, phi(L.T @ aL), lower=True, trans="T")
    g = solve_triangular(L, left.T, lower=True, trans="T").T
    return np.tril(phi(g + g.T))


# ----- forward -----

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("cond", [10.0, 1e10])
def test_forward_matches_numpy(n, cond):
    """L agrees with numpy's to 10 sqrt(n cond) eps relative to max |L|, and
    L L^T = S to 4 n eps relative to max |S| whatever cond (Cholesky is
    backward stable). Sun's (1991) worst case for the factor's forward error
    is cond * eps; its typical size is nearer sqrt(cond) * eps (Chang, Paige
    and Stewart 1996), and measured here 1.1 sqrt(cond) eps at most. Both
    paths of the kernel."""
    S = spd(n, cond, scale=3.0)
    expected = np.linalg.cholesky(S)
    for kernel in (lk.cholesky_forward, lk.cholesky_forward_reference):
        ok, L = factor(S, kernel)
        assert ok
        assert np.all(np.triu(L, 1) == 0.0)
        atol = 10 * np.sqrt(n * cond) * EPS * np.abs(expected).max()
        np.testing.assert_allclose(L, expected, rtol=0, atol=atol)
        np.testing.assert_allclose(L @ L.T, S, rtol=0, atol=4 * n * EPS * np.abs(S).max())


@pytest.mark.parametrize("n", [5, 40, 100])
def test_forward_reads_lower_triangle_only(n):
    """NaN above the diagonal changes nothing, as in LAPACK."""
    S = spd(n, 100.0)
    ok, L = factor(np.tril(S) + np.triu(np.full((n, n), np.nan), 1))
    assert ok
    np.testing.assert_array_equal(L, factor(S)[1])


@pytest.mark.parametrize("n", [3, 12, 13, 40, 100])
def test_forward_rejects_non_positive_definite(n):
    """A negative eigenvalue, a zero matrix, a NaN or inf in the lower
    triangle: False, never an exception."""
    S = spd(n, 100.0)
    q = np.linalg.eigh(S)[1][:, 0]
    cases = [S - 2 * np.outer(q, q), np.zeros((n, n))]
    for i, j in [(0, 0), (n - 1, 0), (n - 1, n - 1), (n // 2, n // 3)]:
        for bad in (np.nan, np.inf):
            T = S.copy()
            T[i, j] = bad
            cases.append(T)
    for kernel in (lk.cholesky_forward, lk.cholesky_forward_reference):
        assert not any(factor(T, kernel)[0] for T in cases)


# ----- reverse -----

def test_reverse_n1_closed_form():
    """n = 1: L = sqrt(S), dL/dS = 1 / (2 L)."""
    L, aL = np.array([[1.7]]), np.array([[0.3]])
    np.testing.assert_allclose(reverse(L, aL), aL / (2 * L), rtol=1e-15)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("cond", [10.0, 1e10])
def test_reverse_matches_closed_form(n, cond):
    """Blocked sweep and loops against Murray's closed form (by scipy's
    triangular solves). aS involves L^-1 twice, so the worst case is
    cond * eps relative to max |aS|; measured 1.3 n eps at most for both
    conds, and the test asks 20 n eps: a less stable order of operations
    would show."""
    rng = np.random.default_rng(n)
    _, L = factor(spd(n, cond))
    aL = rng.normal(size=(n, n))  # its upper part is garbage, not to be read
    expected = murray(L, np.tril(aL))
    atol = 20 * n * EPS * np.abs(expected).max()
    for kernel in (lk.cholesky_reverse, lk.cholesky_reverse_reference):
        aS = reverse(L, aL, kernel)
        assert np.all(np.triu(aS, 1) == 0.0)
        np.testing.assert_allclose(aS, expected, rtol=0, atol=atol)


def lower_entries(n, rng, most=60):
    """(i, j), i >= j: all of them for small n, else the corners, the block
    edges and a random sample."""
    every = [(i, j) for i in range(n) for j in range(i + 1)]
    if len(every) <= most:
        return every
    edges = [(n - 1, 0), (0, 0), (n - 1, n - 1), (64, 63), (65, 64), (n - 1, n - 65)]
    picks = rng.choice(len(every), most - len(edges), replace=False)
    return [e for e in edges if 0 <= e[1] <= e[0] < n] + [every[k] for k in picks]


@pytest.mark.parametrize("n", [1, 2, 3, 31, 32, 33, 100, 257])
def test_reverse_finite_differences(n):
    """Partials of f(S) = sum(W * L) in each lower entry S_ij against central
    differences with h = 1e-6 * scale. The difference is off by about
    h^2 |f'''| (truncation, about 1e-12 cond^2 relative, cond = 10 here)
    plus eps |f| / h (rounding, about 1e-10 relative); measured 3e-10 of
    max |aS| at most, and the test asks 1e-8. Reading the result as the
    symmetric gradient (half the off-diagonal partials) is off by 0.27-0.5."""
    scale, rng = 50.0, np.random.default_rng(7 * n)
    S = spd(n, 10.0, scale)
    W = np.tril(rng.normal(size=(n, n)))
    _, L = factor(S)
    aS = reverse(L, W)
    h = 1e-6 * scale
    for i, j in lower_entries(n, rng):
        up, down = S.copy(), S.copy()
        up[i, j] += h
        down[i, j] -= h
        fd = (np.sum(W * factor(up)[1]) - np.sum(W * factor(down)[1])) / (2 * h)
        assert abs(aS[i, j] - fd) <= 1e-8 * np.abs(aS).max(), (i, j, aS[i, j], fd)


def complex_cholesky(S):
    """The Cholesky loops in complex arithmetic, without conjugation: an
    analytic function of the lower triangle of S, for the complex step."""
    n = S.shape[0]
    L = np.zeros_like(S)
    for j in range(n):
        L[j, j] = np.sqrt(S[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (S[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


@pytest.mark.parametrize("n", [3, 32, 33, 100])
def test_reverse_near_singular(n):
    """Eigenvalues down to 1e-10: central differences with h = 1e-6 leave the
    positive definite cone (27 of 30 steps at n = 33), and the best step that
    stays inside (1e-11) loses all but 5 digits to cancellation. So the
    partials are checked by the complex step, Im f(S + i h E_ij) / h with
    h = 1e-30, free of cancellation. Both sides may carry an error of
    cond * eps relative to max |aS| (L^-1 twice); measured 2.2e-8
    (1e-2 cond eps) at most."""
    cond, rng = 1e10, np.random.default_rng(n)
    S = spd(n, cond)
    W = np.tril(rng.normal(size=(n, n)))
    _, L = factor(S)
    aS = reverse(L, W)
    for i, j in lower_entries(n, rng, most=30):
        T = S.astype(complex)
        T[i, j] += 1e-30j
        step = np.sum(W * complex_cholesky(T)).imag / 1e-30
        assert abs(aS[i, j] - step) <= cond * EPS * np.abs(aS).max(), (i, j)


@pytest.mark.parametrize("n", [5, 30, 100])
def test_reverse_adds_and_keeps_the_rest(n):
    """aS += the adjoint on and below the diagonal; aS above it, aL and the
    scratch beyond its stated size are untouched; L above its diagonal
    (NaN here) is not read."""
    rng = np.random.default_rng(n)
    _, L = factor(spd(n, 10.0))
    aL = rng.normal(size=n * n)
    start = rng.normal(size=n * n)
    aS, aL_before = start.copy(), aL.copy()
    work = np.full(lk.cholesky_reverse_work(n) + 8, 7.0)
    lk.cholesky_reverse(with_garbage(L).ravel(), aL, aS, n, work)
    expected = start + reverse(L, np.tril(aL.reshape(n, n))).ravel()
    np.testing.assert_allclose(aS, expected, rtol=1e-14, atol=1e-14)
    upper = np.triu(np.ones((n, n), bool), 1).ravel()
    np.testing.assert_array_equal(aS[upper], start[upper])
    np.testing.assert_array_equal(aL, aL_before)
    assert np.all(work[-8:] == 7.0)


# ----- triangular solves -----

SOLVES = {
    "lower": (lk.solve_lower, lk.solve_lower_reverse, False),
    "upper_transposed": (lk.solve_upper_transposed, lk.solve_upper_transposed_reverse, True),
}


def solve(kind, L, B):
    """X through a kernel, L's upper part NaN: it must not be read."""
    n, m = B.shape
    X = np.empty(n * m)
    SOLVES[kind][0](with_garbage(L).ravel(), B.ravel(), X, n, m)
    return X.reshape(n, m)


@pytest.mark.parametrize("kind", SOLVES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("m", [1, 3])
def test_solve_matches_scipy(kind, n, m):
    """X = L^-1 B or L^-T B as scipy's, to 100 n eps relative to max |X|:
    the forward error bound of a triangular solve is about n cond(L) eps,
    and cond(L) = sqrt(cond(S)) = 10 here."""
    rng = np.random.default_rng(n * m)
    _, L = factor(spd(n, 100.0))
    B = rng.normal(size=(n, m))
    expected = solve_triangular(L, B, lower=True, trans="T" if SOLVES[kind][2] else "N")
    atol = 100 * n * EPS * np.abs(expected).max()
    np.testing.assert_allclose(solve(kind, L, B), expected, rtol=0, atol=atol)


@pytest.mark.parametrize("kind", SOLVES)
@pytest.mark.parametrize("n", [4, 40])
def test_solve_in_place(kind, n):
    """X may be B."""
    rng = np.random.default_rng(n)
    _, L = factor(spd(n, 100.0))
    B = rng.normal(size=(n, 2))
    X = B.ravel().copy()
    SOLVES[kind][0](L.ravel(), X, X, n, 2)
    np.testing.assert_allclose(X.reshape(n, 2), solve(kind, L, B), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("kind", SOLVES)
@pytest.mark.parametrize("n", [1, 3, 9, 33, 65, 129])
@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("loops", [False, True])
def test_solve_reverse_finite_differences(kind, n, m, loops):
    """Partials of f = sum(V * X) in B and in the lower entries of L, added
    to what aB and aL held, against central differences (h = 1e-6; X is
    linear in B and smooth in L: measured 6.5e-10 of the largest partial at
    most, asked 1e-8). ``loops``: the reverse's ``_reference`` twin, with no
    BLAS call (a GPU thread's)."""
    reverse_kernel = SOLVES[kind][1]
    if loops:
        reverse_kernel = getattr(lk, reverse_kernel.__name__ + "_reference")
    rng = np.random.default_rng(n + 10 * m)
    _, L = factor(spd(n, 10.0))
    B, V = rng.normal(size=(n, m)), rng.normal(size=(n, m))
    start_L, start_B = rng.normal(size=(n, n)), rng.normal(size=(n, m))
    aL, aB = start_L.ravel().copy(), start_B.ravel().copy()
    work = np.full(lk.solve_reverse_work(n, m) + 4, 7.0)
    reverse_kernel(with_garbage(L).ravel(), solve(kind, L, B).ravel(), V.ravel(), aL, aB, n, m, work)
    assert np.all(work[-4:] == 7.0)
    aL, aB = aL.reshape(n, n) - start_L, aB.reshape(n, m) - start_B
    assert np.all(np.triu(aL, 1) == 0.0)
    f = lambda L_, B_: np.sum(V * solve(kind, L_, B_))  # noqa: E731
    h, tol = 1e-6, 1e-8 * max(np.abs(aL).max(), np.abs(aB).max())
    for i, j in lower_entries(n, rng, most=25):
        dL = np.zeros((n, n))
        dL[i, j] = h
        assert abs((f(L + dL, B) - f(L - dL, B)) / (2 * h) - aL[i, j]) <= tol, ("L", i, j)
    for i in rng.choice(n, min(n, 5), replace=False):
        dB = np.zeros((n, m))
        dB[i, m - 1] = h
        assert abs((f(L, B + dB) - f(L, B - dB)) / (2 * h) - aB[i, m - 1]) <= tol, ("B", i)


# ----- no allocation -----

def _arguments(name, n, m):
    """Arguments of a kernel for one call, L = I."""
    a, square, rows = np.eye(n).ravel(), np.zeros(n * n), np.ones(n * m)
    if name == "cholesky_forward":
        return a, square, n
    if name == "cholesky_reverse":
        return a, a.copy(), square, n, np.empty(lk.cholesky_reverse_work(n))
    if name.endswith("reverse"):
        return a, rows, rows.copy(), square, rows.copy(), n, m, np.empty(lk.solve_reverse_work(n, m))
    return a, rows, rows.copy(), n, m


@pytest.mark.parametrize("name", ["cholesky_forward", "cholesky_reverse", "solve_lower",
                                  "solve_upper_transposed", "solve_lower_reverse",
                                  "solve_upper_transposed_reverse"])
def test_kernels_do_not_allocate(name):
    """The compiled code, callees included, never calls numba's allocator
    (what np.empty or a temporary array would need)."""
    copy = numba.njit(error_model="numpy")(getattr(lk, name).py_func)
    copy(*_arguments(name, 70, 2))
    llvm = copy.inspect_llvm(copy.signatures[0])
    assert "logdens_linalg_d" in llvm  # the BLAS path, callees' code included
    assert not re.search(r"call .*@NRT_(MemInfo_alloc|Allocate)", llvm)
