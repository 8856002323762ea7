"""LogDensity: the protocol's methods on models with gathers, matrices, reductions."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import numba
import numpy as np
import pytest
from scipy import stats

import logdens as ld
from engine_helpers import check_gradient, per_sample_rows

RNG = np.random.default_rng(42)
N, J, D = 60, 5, 3
GROUP = RNG.integers(0, J, size=N)
X = RNG.normal(size=(N, D))
COUNTS = RNG.poisson(3.0, size=N)
Y = RNG.normal(size=N)


def hierarchical_model(counts=COUNTS, group=GROUP, x=X):
    """Poisson regression with gathered group effects, a matrix product and a potential."""
    m = ld.Model()
    mu_a = m.param("mu_a", ld.Normal(0, 2))
    sigma_a = m.param("sigma_a", ld.HalfNormal(1))
    z_a = m.param("z_a", ld.Normal(0, 1), shape=J)
    beta = m.param("beta", ld.Normal(0, 1), shape=D)
    g = m.data("group", group)
    X_ = m.data("X", x)
    m.deterministic("a", mu_a + sigma_a * z_a)
    m.observe("c", ld.PoissonLog((mu_a + sigma_a * z_a)[g] + X_ @ beta), counts)
    m.potential("shrink", -0.5 * ld.sum(ld.square(beta)))
    return m


def regression_model():
    m = ld.Model()
    alpha = m.param("alpha", ld.Normal(0, 1))
    beta = m.param("beta", ld.Normal(0, 1), shape=D)
    sigma = m.param("sigma", ld.Exponential(1.0))
    nu = m.param("nu", ld.Gamma(2.0, 0.1))
    X_ = m.data("X", X)
    m.observe("y", ld.StudentT(nu, X_ @ beta + alpha, sigma), Y)
    return m


@pytest.fixture(scope="module")
def hierarchical():
    return hierarchical_model().compile()


def theta0(density, seed=0):
    return np.random.default_rng(seed).normal(scale=0.5, size=density.dim)


def test_gradient_of_hierarchical_model(hierarchical):
    check_gradient(hierarchical, theta0(hierarchical), np.random.default_rng(1), n_directions=5)
    check_gradient(hierarchical, theta0(hierarchical), np.random.default_rng(2), propto=False, jacobian=False)


def test_gradient_of_student_t_regression():
    density = regression_model().compile()
    check_gradient(density, theta0(density), np.random.default_rng(3), n_directions=5)


def test_value_against_numpy_reference(hierarchical):
    theta = theta0(hierarchical)
    v = hierarchical.constrain(theta)
    eta = v["a"][GROUP] + X @ v["beta"]
    want = (np.sum(ld.PoissonLog(eta).logpdf(COUNTS)) + ld.Normal(0, 2).logpdf(v["mu_a"])
            + ld.HalfNormal(1).logpdf(v["sigma_a"]) + np.sum(ld.Normal(0, 1).logpdf(v["z_a"]))
            + np.sum(ld.Normal(0, 1).logpdf(v["beta"])) - 0.5 * np.sum(v["beta"] ** 2))
    got = hierarchical.log_density(theta, propto=False, jacobian=False)
    assert got == pytest.approx(want, rel=1e-12)
    jacobian = theta[1]  # sigma_a = exp(u): log|J| = u
    assert hierarchical.log_density(theta, propto=False) == pytest.approx(want + jacobian, rel=1e-12)


def test_pointwise_log_likelihood_sums_to_the_likelihood(hierarchical):
    theta = theta0(hierarchical)
    v = hierarchical.constrain(theta)
    pointwise = hierarchical.pointwise_log_likelihood(theta)
    assert set(pointwise) == {"c"} and pointwise["c"].shape == (N,)
    np.testing.assert_allclose(pointwise["c"], ld.PoissonLog(v["a"][GROUP] + X @ v["beta"]).logpdf(COUNTS),
                               rtol=1e-12)


def test_pointwise_constants_are_kept_only_from_a_point_inside_the_support():
    """The summands ``propto`` drops (here -lgamma(c + 1) and -log(sqrt(2 pi)))
    are computed once per data set, but not kept from a point where the
    kernel returned -inf for every summand."""
    rng = np.random.default_rng(11)
    y = rng.normal(size=N)
    m = ld.Model()
    mu = m.param("mu")
    s = m.param("s")  # no constraint: s <= 0 is outside the Normal's support
    m.observe("c", ld.PoissonLog(mu + 0.1 * m.data("x", Y)), COUNTS)
    m.observe("y", ld.Normal(mu, s), y)
    density = m.compile()
    assert np.all(density.pointwise_log_likelihood([0.3, -1.0])["y"] == -np.inf)
    for theta in ([0.3, 2.0], [0.1, 1.5]):
        pointwise = density.pointwise_log_likelihood(theta)
        np.testing.assert_allclose(pointwise["y"], stats.norm.logpdf(y, theta[0], theta[1]), rtol=1e-12)
        np.testing.assert_allclose(pointwise["c"], stats.poisson.logpmf(COUNTS, np.exp(theta[0] + 0.1 * Y)),
                                   rtol=1e-12)
    density.set_data(c=COUNTS[:10], x=Y[:10])  # new counts: new constants
    np.testing.assert_allclose(density.pointwise_log_likelihood([0.1, 1.5])["c"],
                               stats.poisson.logpmf(COUNTS[:10], np.exp(0.1 + 0.1 * Y[:10])), rtol=1e-12)


def test_per_sample_gradients_sum_to_the_gradient_of_the_likelihood():
    m = ld.Model()
    mu_a = m.param("mu_a")
    sigma_a = m.param("sigma_a", constraint=ld.positive)
    z_a = m.param("z_a", shape=J)
    beta = m.param("beta", shape=D)
    m.observe("c", ld.PoissonLog((mu_a + sigma_a * z_a)[m.data("group", GROUP)] + m.data("X", X) @ beta), COUNTS)
    density = m.compile()
    theta = theta0(density)
    rows = per_sample_rows(density, theta, "c")
    assert rows.shape == (N, density.dim)
    _, grad = density.log_density_gradient(theta, jacobian=False)
    np.testing.assert_allclose(rows.sum(axis=0), grad, rtol=1e-12, atol=1e-12)
    # Row i is the gradient of observation i alone: check one against finite differences.
    i = 7
    def lp_i(t):
        return density.pointwise_log_likelihood(t)["c"][i]
    e = np.eye(density.dim)
    fd = np.array([(lp_i(theta + 1e-6 * e[k]) - lp_i(theta - 1e-6 * e[k])) / 2e-6 for k in range(density.dim)])
    np.testing.assert_allclose(rows[i], fd, rtol=1e-6, atol=1e-8)


def test_batch_equals_a_loop(hierarchical):
    thetas = np.random.default_rng(5).normal(size=(7, hierarchical.dim))
    lps, grads = hierarchical.log_density_gradient_batch(thetas)
    for k, t in enumerate(thetas):
        lp, g = hierarchical.log_density_gradient(t)
        assert lps[k] == lp
        np.testing.assert_array_equal(grads[k], g)


def test_out_argument_is_filled_in_place(hierarchical):
    out = np.empty(hierarchical.dim)
    lp, grad = hierarchical.log_density_gradient(theta0(hierarchical), out=out)
    assert grad is out


def test_the_direct_call_takes_only_arrays_it_can_pass_as_they_are(hierarchical):
    """A sampler's call (contiguous, writable float64 ``theta`` and ``out``) goes to
    the compiled entry point without numba's dispatch; any other array goes the
    checked way (converted, or refused) with the same numbers."""
    theta = theta0(hierarchical)
    lp, grad = hierarchical.log_density_gradient(theta)
    assert hierarchical._direct is not None
    out = np.empty(hierarchical.dim)
    assert hierarchical.log_density_gradient(theta, out=out)[0] == lp
    np.testing.assert_array_equal(out, grad)
    frozen = theta.copy()
    frozen.flags.writeable = False
    for other in (theta.astype(">f8"), np.repeat(theta, 2)[::2], frozen, list(theta)):
        out = np.empty(hierarchical.dim)
        assert hierarchical.log_density_gradient(other, out=out)[0] == lp
        np.testing.assert_array_equal(out, grad)
    with pytest.raises(ValueError, match="out must be a float64 array"):
        hierarchical.log_density_gradient(theta, out=np.empty(hierarchical.dim, dtype=">f8"))
    strided = np.empty(2 * hierarchical.dim)[::2]  # accepted: written through ``core``
    assert hierarchical.log_density_gradient(theta, out=strided)[0] == pytest.approx(lp, rel=1e-13)
    np.testing.assert_allclose(strided, grad, rtol=1e-12)


@pytest.mark.parametrize("out", [np.empty(3), np.empty(12, dtype=np.float32), [0.0] * 12])
def test_an_out_argument_that_does_not_fit_is_rejected(hierarchical, out):
    with pytest.raises(ValueError, match="out must be a float64 array of shape"):
        hierarchical.log_density_gradient(theta0(hierarchical), out=out)


def test_python_calls_with_the_jacobian_compile_nothing_more(tmp_path):
    """``logp_grad`` is compiled at load (its own body, not a call of ``core``);
    Python's calls with the Jacobian use it, so ``core`` is compiled only for
    calls without the Jacobian and ``batch``, once for both (a fresh cache
    directory, and a model no other test compiles: nothing was compiled before)."""
    m = ld.Model()
    loc_only_here = m.param("loc_only_here", ld.Normal(0.0, 2.0))
    scale = m.param("scale", ld.HalfNormal(1.0))
    m.observe("y", ld.StudentT(4.0, loc_only_here, scale), np.array([0.3, -1.2, 2.5, 0.8]))
    density = m.compile(cache_dir=str(tmp_path))
    module, theta = density._module, theta0(density)
    lp, grad = density.log_density_gradient(theta)
    density.log_density_gradient(theta, out=np.empty(density.dim))
    assert len(module.logp_grad.signatures) == 1 and len(module.core.signatures) == 0
    lp_core, grad_core = density.log_density_gradient(theta, out=np.empty((density.dim, 2))[:, 0])
    assert lp_core == pytest.approx(lp, rel=1e-13)  # a strided `out`: core, not the entry
    np.testing.assert_allclose(grad_core, grad, rtol=1e-12)
    density.log_density_gradient(theta, jacobian=False)
    lps, grads = density.log_density_gradient_batch(np.stack([theta, theta]))
    assert len(module.core.signatures) == 2  # the strided `out` and the contiguous arrays
    assert lps[0] == pytest.approx(lp, rel=1e-13)


def _rows_checked(m, rng):
    """Compile ``m`` (one observed term "y", no priors); its per-sample rows at a
    random point, checked to sum to the gradient and to equal plain Python's."""
    density = m.compile()
    theta = rng.normal(scale=0.5, size=density.dim)
    rows = per_sample_rows(density, theta, "y")
    _, grad = density.log_density_gradient(theta, jacobian=False)
    np.testing.assert_allclose(rows.sum(axis=0), grad, rtol=1e-12, atol=1e-12)
    twin = m.compile(backend="python")
    np.testing.assert_allclose(rows, twin.per_sample_gradient(theta, "y"), rtol=1e-12, atol=1e-15)
    sparse_twin = twin.per_sample_gradient(theta, "y", sparse=True).toarray()
    np.testing.assert_allclose(rows, sparse_twin, rtol=1e-12, atol=1e-15)
    return density, theta, rows


def test_sparse_per_sample_rows_hold_only_the_entries_a_row_can_touch():
    """Hierarchical Poisson, non-centered: a row reads mu_a, sigma_a, b and one
    z[g[i]], so it holds 4 entries of dim 3 + J, at those columns."""
    rng = np.random.default_rng(13)
    n, groups = 500, 40
    g = rng.integers(0, groups, size=n)
    m = ld.Model()
    mu_a, sigma_a, b = m.param("mu_a"), m.param("sigma_a", constraint=ld.positive), m.param("b")
    z = m.param("z", shape=groups)
    x = rng.normal(size=n)
    m.observe("y", ld.Poisson(ld.exp((mu_a + sigma_a * z)[m.data("g", g)] + b * x)), rng.poisson(2.0, size=n))
    density, theta, rows = _rows_checked(m, rng)
    sparse = density.per_sample_gradient(theta, "y", sparse=True)
    assert sparse.shape == (n, 3 + groups) and sparse.nnz == 4 * n
    np.testing.assert_array_equal(sparse.indptr, np.arange(0, 4 * n + 1, 4))
    np.testing.assert_array_equal(sparse.indices.reshape(n, 4), np.column_stack([
        np.zeros(n), np.ones(n), np.full(n, 2), 3 + g]))
    assert np.count_nonzero(rows) <= 4 * n


def test_sparse_per_sample_rows_with_sums_slices_and_repeated_columns():
    """One term reading a vector through two gathers whose indices sometimes
    agree (two slots, one column), a vector under a sum (all its columns in
    every row), a constant slice and a positive vector at the row."""
    rng = np.random.default_rng(14)
    n, k = 300, 6
    m = ld.Model()
    a = m.param("a", shape=k)
    c = m.param("c", shape=4)
    s = m.param("s", shape=n + 2)
    r = m.param("r", shape=n, constraint=ld.positive)
    g, h = (m.data(name, rng.integers(0, k, size=n)) for name in ("g", "h"))
    loc = a[g] * a[h] + ld.sum(ld.exp(c)) * m.data("d", rng.normal(size=n)) + s[2:n + 2]
    m.observe("y", ld.Normal(loc, r), rng.normal(size=n))
    density, theta, rows = _rows_checked(m, rng)
    sparse = density.per_sample_gradient(theta, "y", sparse=True)
    assert sparse.nnz == (4 + 4) * n  # c's 4 columns, then a[g], a[h], s[i + 2], r[i]


def test_per_sample_gradients_in_blocks_with_row_parameters_and_a_constrained_product():
    """600 rows (blocks of 128, four full and one of 88): a vector read at the row, a product
    with a positive-constrained vector (its rows scaled by dx/du), a scalar."""
    n, rng = 600, np.random.default_rng(11)
    m = ld.Model()
    z = m.param("z", shape=n)
    w = m.param("w", shape=D, constraint=ld.positive)
    a = m.param("a")
    m.observe("y", ld.Normal(z + m.data("X", rng.normal(size=(n, D))) @ w + a, 1.3), rng.normal(size=n))
    density, theta, rows = _rows_checked(m, rng)
    for i in (0, 300, 599):  # one row of each block against central differences
        def lp_i(t):
            return density.pointwise_log_likelihood(t)["y"][i]
        e = np.eye(density.dim)
        fd = np.array([(lp_i(theta + 1e-6 * e[k]) - lp_i(theta - 1e-6 * e[k])) / 2e-6
                       for k in range(density.dim)])
        np.testing.assert_allclose(rows[i], fd, rtol=1e-6, atol=1e-8)


def test_per_sample_gradients_when_a_product_vector_is_also_gathered():
    """beta read by ``X @ beta`` and gathered too: its columns are added to, after
    a zeroing, not assigned; two scalars go through per-block buffers."""
    n, rng = 300, np.random.default_rng(12)
    m = ld.Model()
    beta = m.param("beta", shape=D)
    a = m.param("a")
    s = m.param("s", constraint=ld.positive)
    idx = m.data("idx", rng.integers(0, D, size=n))
    loc = m.data("X", rng.normal(size=(n, D))) @ beta + beta[idx] * a
    m.observe("y", ld.Normal(loc, s), rng.normal(size=n))
    density, theta, rows = _rows_checked(m, rng)
    rows_again = per_sample_rows(density, theta, "y")  # nothing left over from the last call
    np.testing.assert_array_equal(rows_again, rows)
    assert "out[b0:b1, 0:" in density.source()  # beta's columns zeroed before the rows


def test_set_data_with_a_new_size_does_not_recompile(hierarchical):
    density = hierarchical_model().compile()
    core = density._module.core
    theta = theta0(density)
    density.log_density_gradient(theta)
    signatures = list(core.signatures)
    n = 150
    rng = np.random.default_rng(9)
    counts, group, x = rng.poisson(2.0, n), rng.integers(0, J, n), rng.normal(size=(n, D))
    density.set_data(c=counts, group=group, X=x)
    lp, grad = density.log_density_gradient(theta)
    assert list(core.signatures) == signatures
    fresh = hierarchical_model(counts, group, x).compile()
    assert fresh._module is density._module  # same generated source: sizes are not compiled in
    lp_fresh, grad_fresh = fresh.log_density_gradient(theta)
    assert lp == lp_fresh
    np.testing.assert_array_equal(grad, grad_fresh)
    assert density.pointwise_log_likelihood(theta)["c"].shape == (n,)
    check_gradient(density, theta, np.random.default_rng(10))


def test_constrain_and_unconstrain_round_trip(hierarchical):
    theta = theta0(hierarchical)
    values = hierarchical.constrain(theta)
    assert values["sigma_a"] > 0 and values["a"].shape == (J,)
    np.testing.assert_allclose(hierarchical.unconstrain(values), theta, rtol=1e-12)
    flat = hierarchical.param_constrain(theta)
    assert flat.shape == (hierarchical.param_num(),)
    np.testing.assert_allclose(hierarchical.param_unconstrain(flat), theta, rtol=1e-12)
    names = hierarchical.param_names(include_tp=True)
    assert names[:3] == ["mu_a", "sigma_a", "z_a[0]"] and names[-1] == f"a[{J - 1}]"
    assert len(hierarchical.param_constrain(theta, include_tp=True)) == len(names)


def test_potential_of_a_reduction():
    """F(rho) = rho^2 + rho^3 + rho^4 / 4 with rho = sum(exp(-3 (x + 1))): two passes."""
    m = ld.Model()
    x = m.param("x", shape=100)
    rho = ld.sum(ld.exp(-3.0 * (x + 1.0)))
    m.potential("F", rho ** 2 + rho ** 3 + rho ** 4 / 4)
    density = m.compile()
    theta = np.random.default_rng(0).normal(scale=0.3, size=100)
    r = np.sum(np.exp(-3 * (theta + 1)))
    assert density.log_density(theta) == pytest.approx(r ** 2 + r ** 3 + r ** 4 / 4, rel=1e-12)
    dF = 2 * r + 3 * r ** 2 + r ** 3
    _, grad = density.log_density_gradient(theta)
    np.testing.assert_allclose(grad, dF * -3 * np.exp(-3 * (theta + 1)), rtol=1e-12)


def test_numba_entry_has_the_shared_signature(hierarchical):
    entry = hierarchical.numba_entry
    theta = theta0(hierarchical)
    grad = np.empty(hierarchical.dim)
    lp = entry.function(theta, grad, entry.fdata, entry.idata)
    lp2, grad2 = hierarchical.log_density_gradient(theta)
    assert lp == lp2
    np.testing.assert_array_equal(grad, grad2)
    assert len(entry.function.signatures) == 1


def test_outside_the_support_gives_minus_inf():
    m = ld.Model()
    s = m.param("s", constraint=ld.real)
    m.observe("y", ld.Normal(0.0, s), np.array([0.5, 1.0]))  # s <= 0 is invalid inside the kernel
    density = m.compile()
    assert density.log_density(np.array([-1.0])) == -np.inf
    lp, grad = density.log_density_gradient(np.array([-1.0]))
    assert lp == -np.inf
    assert density.log_density(np.array([-1.0]), propto=False) == -np.inf


def test_a_second_process_loads_from_the_disk_cache(tmp_path):
    script = textwrap.dedent(f"""
        import numpy as np, logdens as ld
        m = ld.Model()
        mu = m.param("mu", ld.Normal(0, 1))
        m.observe("y", ld.Normal(mu, 2.0), np.arange(5.0))
        d = m.compile(cache_dir={str(tmp_path)!r})
        d.log_density_gradient(np.zeros(1))
        entry = d._module.logp_grad
        print(sum(entry.stats.cache_hits.values()), sum(entry.stats.cache_misses.values()))
    """)
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    hits_first, misses_first = map(int, runs[0].stdout.split())
    hits_second, misses_second = map(int, runs[1].stdout.split())
    assert misses_first >= 1 and hits_second >= 1 and misses_second == 0


def test_cfunc_entry_matches_through_ctypes(hierarchical):
    import ctypes
    double_p, int64_p = ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int64)
    prototype = ctypes.CFUNCTYPE(ctypes.c_double, double_p, double_p, double_p, ctypes.c_int64,
                                 int64_p, ctypes.c_int64)
    f = prototype(hierarchical.cfunc_address())
    theta = theta0(hierarchical)
    grad = np.empty(hierarchical.dim)
    fdata, idata = hierarchical.fdata, hierarchical.idata
    lp = f(theta.ctypes.data_as(double_p), grad.ctypes.data_as(double_p), fdata.ctypes.data_as(double_p),
           len(fdata), idata.ctypes.data_as(int64_p), len(idata))
    lp2, grad2 = hierarchical.log_density_gradient(theta)
    assert lp == lp2
    np.testing.assert_array_equal(grad, grad2)


@pytest.mark.parametrize("constraint", [ld.ordered, ld.positive_ordered, ld.simplex],
                         ids=["ordered", "positive_ordered", "simplex"])
def test_vector_constraints(constraint):
    """Values land in the set, round trips hold, log|J| matches a finite-difference
    Jacobian determinant, and gradients (through the vector transform, in a
    likelihood, a matrix product and per-sample rows) match finite differences."""
    K = 4
    m = ld.Model()
    w = m.param("w", shape=K, constraint=constraint)
    k, y = np.array([0, 1, 3, 3, 2]), np.array([0.1, 0.5, 0.9, 1.2, 0.3])
    A, v = RNG.normal(size=(6, K)), RNG.normal(size=6)
    m.observe("y", ld.Normal(w[m.data("k", k)], 0.7), y)
    m.observe("v", ld.Normal(m.data("A", A) @ w, 1.3), v)
    density = m.compile()
    theta = np.random.default_rng(0).normal(size=density.dim)
    value = density.constrain(theta)["w"]
    # The likelihood against scipy: a blocked A @ w once ran over the K - 1 free
    # coordinates of a simplex instead of its K entries.
    want = stats.norm.logpdf(y, value[k], 0.7).sum() + stats.norm.logpdf(v, A @ value, 1.3).sum()
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(want, rel=1e-12)
    if constraint is ld.simplex:
        assert density.dim == K - 1 and value.sum() == pytest.approx(1.0) and np.all(value > 0)
    else:
        assert np.all(np.diff(value) > 0) and (constraint is ld.ordered or value[0] > 0)
    np.testing.assert_allclose(density.unconstrain({"w": value}), theta, rtol=1e-10, atol=1e-12)
    check_gradient(density, theta, np.random.default_rng(1), n_directions=4)
    check_gradient(density, theta, np.random.default_rng(2), jacobian=False)
    # log|J| against the determinant of a finite-difference Jacobian (of the free coordinates)
    forward = lambda t: density.constrain(t)["w"][:density.dim]
    J = np.column_stack([(forward(theta + 1e-6 * e) - forward(theta - 1e-6 * e)) / 2e-6
                         for e in np.eye(density.dim)])
    log_j = density.log_density(theta) - density.log_density(theta, jacobian=False)
    assert log_j == pytest.approx(np.log(abs(np.linalg.det(J))), rel=1e-6, abs=1e-6)
    for term in ("y", "v"):  # a gather and a matrix product of the transformed vector
        rows = per_sample_rows(density, theta, term)
        # central differences with h = 1e-6: accurate to about 1e-9
        np.testing.assert_allclose(rows.sum(axis=0), gradient_of_term(density, theta, term),
                                   rtol=1e-6, atol=1e-8)


def gradient_of_term(density, theta, name="y"):
    """Gradient of the term ``name`` alone, by central differences of its pointwise log-likelihood."""
    f = lambda t: density.pointwise_log_likelihood(t)[name].sum()
    e = np.eye(density.dim)
    return np.array([(f(theta + 1e-6 * e[k]) - f(theta - 1e-6 * e[k])) / 2e-6 for k in range(density.dim)])


def rate_vector_model():
    """A parameter as long as the data: every chunk writes its own elements."""
    m = ld.Model()
    rate = m.param("rate", ld.Gamma(2.0, 1.0), shape=N)
    m.observe("c", ld.Poisson(rate), COUNTS)
    return m


@pytest.mark.parametrize("build", [hierarchical_model, rate_vector_model])
def test_parallel_variant_equals_serial_and_is_deterministic(build):
    serial = build().compile()
    parallel = build().compile(parallel=True)
    theta = theta0(serial)
    lp, grad = serial.log_density_gradient(theta)
    lp_par, grad_par = parallel.log_density_gradient(theta)
    assert lp_par == pytest.approx(lp, rel=1e-13)
    np.testing.assert_allclose(grad_par, grad, rtol=1e-12, atol=1e-13)
    numba.set_num_threads(1)
    try:
        one_thread = parallel.log_density_gradient(theta)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert one_thread[0] == lp_par  # fixed chunks summed in order: bit for bit
    np.testing.assert_array_equal(one_thread[1], grad_par)


def test_batch_forms_of_constrain_and_pointwise(hierarchical):
    thetas = np.random.default_rng(8).normal(scale=0.5, size=(5, hierarchical.dim))
    batch = hierarchical.constrain_batch(thetas)
    pointwise = hierarchical.pointwise_log_likelihood_batch(thetas)
    for k, theta in enumerate(thetas):
        one = hierarchical.constrain(theta)
        assert set(batch) == set(one)
        for name, value in one.items():
            np.testing.assert_allclose(batch[name][k], value, rtol=1e-13)
        np.testing.assert_array_equal(pointwise["c"][k], hierarchical.pointwise_log_likelihood(theta)["c"])


def _small_density(backend="cpu"):
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5))
    tau = m.param("tau", ld.HalfCauchy(5))
    w = m.param("w", ld.Beta(2, 2))
    loc = m.param("loc", ld.Normal(0, 1), shape=3, constraint=ld.ordered)
    p = m.param("p", shape=3, constraint=ld.simplex)
    m.observe("y", ld.Normal(mu + loc, tau), np.array([0.1, 0.5, 2.0]))
    m.potential("mix", ld.log(w) + ld.sum(ld.log(p)))
    return m.compile(backend=backend)


def test_read_only_arrays_are_accepted():
    """JAX's callbacks pass read-only arrays; numba's signature wanted writable ones."""
    density = _small_density()
    theta = np.random.default_rng(0).normal(size=density.dim)
    expected = density.log_density_gradient(theta)
    frozen = theta.copy()
    frozen.flags.writeable = False
    lp, grad = density.log_density_gradient(frozen)
    assert lp == expected[0] and np.array_equal(grad, expected[1])
    assert density.log_density(frozen) == density.log_density(theta)
    batch = np.tile(frozen, (2, 1))
    batch.flags.writeable = False
    np.testing.assert_array_equal(density.log_density_gradient_batch(batch)[0], [lp, lp])
    out = np.empty(density.dim)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        density.log_density_gradient(theta, out=out)


def test_complex_theta_is_refused():
    density = _small_density(backend="python")
    with pytest.raises(ValueError, match="theta must be real"):
        density.log_density(np.zeros(density.dim) + 0j)


@pytest.mark.parametrize("values, message", [
    ({"tau": -1.0}, r"parameter tau=-1.0 is outside its support: must be > 0.0"),
    ({"tau": 0.0}, r"parameter tau=0.0 is outside its support"),
    ({"w": 1.0}, r"parameter w=1.0 is outside its support: must be in \(0.0, 1.0\)"),
    ({"mu": np.inf}, r"parameter mu=inf is outside its support: must be finite"),
    ({"loc": [0.0, 2.0, 1.0]}, r"parameter loc\[2\]=1.0 is outside its support: must be ordered"),
    ({"p": [0.5, 0.6, -0.1]}, r"parameter p\[2\]=-0.1 is outside its support: must be simplex"),
    ({"p": [0.5, 0.6, 0.1]}, r"parameter 'p' sums to 1.2.*must sum to 1"),
])
def test_unconstrain_names_a_value_outside_the_support(values, message):
    density = _small_density(backend="python")
    good = {"mu": 0.0, "tau": 1.0, "w": 0.5, "loc": [0.0, 1.0, 2.0], "p": [0.2, 0.3, 0.5]}
    theta = density.unconstrain(good)
    assert np.all(np.isfinite(theta))
    with pytest.raises(ValueError, match=message):
        density.unconstrain({**good, **values})


def test_a_positive_infinite_log_density_is_a_rejected_point():
    """``-log(logistic(x))`` at x = -800 is +inf: a sampler must not jump there."""
    m = ld.Model()
    x = m.param("x", ld.Normal(0, 1))
    m.potential("p", -ld.log(ld.logistic(x)))
    density, twin = m.compile(), m.compile(backend="python")
    far = np.array([-800.0])
    assert density.log_density_gradient(far)[0] == -np.inf
    assert density.log_density(far) == -np.inf and twin.log_density(far) == -np.inf
    assert density.log_density_gradient_batch(np.array([far, [0.0]]))[0][0] == -np.inf
    assert np.isfinite(density.log_density(np.array([0.0])))


def likelihood_model(y, coords=True):
    """A two-component mixture as a hand-written likelihood: one log-likelihood per y."""
    m = ld.Model(coords={"obs": np.arange(len(y))} if coords else None)
    w = m.param("w", ld.Beta(2, 2))
    mu = m.param("mu", ld.Normal(0, 5), shape=2, constraint=ld.ordered)
    s = m.param("s", ld.HalfNormal(2))
    ys = m.data("y", y, dims="obs" if coords else None)
    lik = ld.logaddexp(ld.log(w) + ld.Normal(mu[0], s).logpdf(ys),
                       ld.log1p(-w) + ld.Normal(mu[-1], s).logpdf(ys))
    m.potential("lik", lik, observed=True, dims="obs" if coords else None)
    return m


def _mixture_reference(c, y):
    return np.logaddexp(np.log(c["w"]) + stats.norm(c["mu"][0], c["s"]).logpdf(y),
                        np.log1p(-c["w"]) + stats.norm(c["mu"][1], c["s"]).logpdf(y))


def test_a_likelihood_potential_has_pointwise_values_and_per_sample_rows():
    """Its rows are observations: pointwise values against scipy (rtol 1e-12),
    per-sample rows summing to the gradient less the priors' (rtol 1e-10), and
    a new data length without recompiling."""
    rng = np.random.default_rng(3)
    y = rng.normal(0, 2, size=50)
    m = likelihood_model(y, coords=False)
    density = m.compile()
    theta = rng.normal(size=density.dim) * 0.5
    c = density.constrain(theta)
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["lik"], _mixture_reference(c, y),
                               rtol=1e-12)
    check_gradient(density, theta, rng)
    rows = density.per_sample_gradient(theta, "lik")
    priors_only = ld.Model()
    priors_only.param("w", ld.Beta(2, 2))
    priors_only.param("mu", ld.Normal(0, 5), shape=2, constraint=ld.ordered)
    priors_only.param("s", ld.HalfNormal(2))
    want = density.log_density_gradient(theta)[1] - priors_only.compile().log_density_gradient(theta)[1]
    np.testing.assert_allclose(rows.sum(axis=0), want, rtol=1e-10)
    np.testing.assert_allclose(density.per_sample_gradient(theta, "lik", sparse=True).toarray(), rows,
                               rtol=1e-13, atol=1e-13 * np.abs(rows).max())
    density.set_data(y=y[:7])
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["lik"], _mixture_reference(c, y[:7]),
                               rtol=1e-12)


@pytest.mark.slow
def test_loo_works_for_a_hand_written_likelihood():
    """The log_likelihood group is there, labelled by its dims, and arviz_stats.loo runs."""
    import arviz_stats
    y = np.concatenate([np.random.default_rng(0).normal(-2, 1, 60), np.random.default_rng(1).normal(3, 1, 40)])
    idata = ld.nuts(likelihood_model(y), draws=500, tune=500, chains=2, seed=1, progress=False)
    assert idata.log_likelihood["lik"].dims == ("chain", "draw", "obs")
    loo = arviz_stats.loo(idata)
    assert np.isfinite(loo.elpd) and loo.n_data_points == 100


def test_likelihood_potential_errors():
    m = ld.Model()
    a = m.param("a", shape=3)
    with pytest.raises(ld.ModelError, match=r"potential 'p': must be a scalar expression, got shape \(3,\); "
                                         r"use ld.sum\(...\), or observed=True"):
        m.potential("p", a)
    with pytest.raises(ld.ModelError, match="potential 'q': must be a scalar"):
        m.potential("q", ld.sum(a), dims="obs")
    m.potential("one", ld.sum(a), observed=True)  # a scalar: one observation
    density = m.compile()
    assert density.pointwise_log_likelihood(np.zeros(3))["one"].shape == (1,)
    assert "one" not in density.observed_data()
    with pytest.raises(KeyError, match="no observed term or likelihood 'a'"):
        density.per_sample_gradient(np.zeros(3), "a")


def _layouts(thetas):
    """``thetas`` as a read-only, a strided, a Fortran-order and a big-endian array."""
    frozen = thetas.copy()
    frozen.flags.writeable = False
    strided = np.repeat(thetas, 2, axis=1)[:, ::2]
    return {"read-only": frozen, "strided": strided, "fortran": np.asfortranarray(thetas),
            "rows skipped": np.repeat(thetas, 2, axis=0)[::2], "big-endian": thetas.astype(">f8"),
            "list": thetas.tolist()}


@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_log_density_batch_equals_log_density_per_row(hierarchical, backend):
    """The compiled value-only loop gives ``log_density`` of each row, for every
    ``propto``/``jacobian`` setting, with a row outside the support as ``-inf``."""
    density = _small_density(backend)
    thetas = np.random.default_rng(6).normal(size=(5, density.dim))
    thetas[3, 3:6] = np.nan  # a NaN in the ordered block: outside the support
    for propto in (True, False):
        for jacobian in (True, False):
            lps = density.log_density_batch(thetas, propto=propto, jacobian=jacobian)
            expected = [density.log_density(t, propto=propto, jacobian=jacobian) for t in thetas]
            assert lps.shape == (5,) and lps[3] == -np.inf
            np.testing.assert_allclose(lps, expected, rtol=1e-13)
    if backend == "cpu":
        thetas = np.random.default_rng(7).normal(size=(4, hierarchical.dim))
        np.testing.assert_allclose(hierarchical.log_density_batch(thetas),
                                   [hierarchical.log_density(t) for t in thetas], rtol=1e-13)


def test_log_density_batch_takes_any_layout_of_rows(hierarchical):
    thetas = np.random.default_rng(8).normal(size=(3, hierarchical.dim))
    expected = hierarchical.log_density_batch(thetas)
    for name, other in _layouts(thetas).items():
        np.testing.assert_array_equal(hierarchical.log_density_batch(other), expected, err_msg=name)
    assert hierarchical.log_density_batch(np.empty((0, hierarchical.dim))).shape == (0,)
    with pytest.raises(ValueError, match=r"thetas must have shape \(K, 10\)"):
        hierarchical.log_density_batch(thetas[0])
    with pytest.raises(ValueError, match="thetas must be real"):
        hierarchical.log_density_batch(thetas + 0j)


@pytest.mark.parametrize("observed", [False, True])
def test_a_model_without_parameters_compiles(observed):
    """Every generated function has a body (an empty one is ``pass``): a model
    with no parameters, with or without a term, evaluates at the empty theta."""
    m = ld.Model()
    if observed:
        m.observe("y", ld.Normal(0.0, 1.0), np.array([0.5, -1.0]))
    density = m.compile()
    theta = np.zeros(0)
    assert density.dim == 0 and density.gradient(theta).shape == (0,)
    want = float(np.sum(stats.norm.logpdf([0.5, -1.0]))) if observed else 0.0
    assert density.log_density(theta, propto=False) == pytest.approx(want, rel=1e-14)
    assert density.log_density_gradient(theta)[1].shape == (0,)


# ----- out arguments and threads ----------------------------------------
def _theta_with_out(density, method):
    """``(call, theta, out)``: a call of ``method`` whose ``out`` holds ``theta``
    (its first row, for per-sample rows)."""
    if method == "per_sample_gradient":
        out = np.zeros((N, density.dim))
        out[0] = theta0(density)
        return lambda: density.per_sample_gradient(out[0], "c", out=out), out[0], out
    theta = theta0(density)
    return lambda: getattr(density, method)(theta, out=theta), theta, theta


@pytest.mark.parametrize("method", ["log_density_gradient", "gradient", "per_sample_gradient"])
def test_an_out_that_holds_theta_is_refused(hierarchical, method):
    """A kernel reads theta while it writes out: out=theta gave lp -2.225 for
    -1.325 and a wrong gradient. Refused, theta left as it is."""
    call, theta, out = _theta_with_out(hierarchical, method)
    before = theta.copy()
    with pytest.raises(ValueError, match=f"{method}: out shares memory with theta"):
        call()
    np.testing.assert_array_equal(theta, before)
    view = theta0(hierarchical)  # a view of the same memory, through the sampler's direct call
    with pytest.raises(ValueError, match="log_density_gradient: out shares memory with theta"):
        hierarchical.log_density_gradient(view, out=view[:])


def test_an_out_beside_theta_in_one_buffer_is_taken(hierarchical):
    """The test is exact (``np.shares_memory``): a strided ``out`` whose span
    holds ``theta`` but none of its elements is written, not refused."""
    dim = hierarchical.dim
    buffer = np.zeros((dim, dim + 2))
    out, theta = buffer[:, 0], buffer[1, 1:dim + 1]  # theta lies between out's elements
    theta[:] = theta0(hierarchical)
    lp, grad = hierarchical.log_density_gradient(theta.copy())
    assert hierarchical.log_density_gradient(theta, out=out)[0] == pytest.approx(lp, rel=1e-13)
    np.testing.assert_allclose(out, grad, rtol=1e-12)


def _race_model():
    """``hierarchical_model`` with a deterministic that reads data (its length is the data's)."""
    m = hierarchical_model()
    m.deterministic("eta", m.data_nodes["X"] @ m.params["beta"])
    return m


def _race_data(n, seed):
    rng = np.random.default_rng(seed)
    return {"c": rng.poisson(3.0, n), "group": rng.integers(0, J, n), "X": rng.normal(size=(n, D))}


def _race_calls(density):
    """Name -> a call of each method that reads the data."""
    theta = theta0(density)
    thetas = np.stack([theta, theta + 0.1])
    return {
        "log_density": lambda: density.log_density(theta, propto=False),
        "log_density_gradient": lambda: density.log_density_gradient(theta, out=np.empty(density.dim)),
        "log_density_gradient propto=False": lambda: density.log_density_gradient(theta, propto=False),
        "gradient": lambda: density.gradient(theta),
        "log_density_batch": lambda: density.log_density_batch(thetas, propto=False),
        "log_density_gradient_batch": lambda: density.log_density_gradient_batch(thetas),
        "pointwise_log_likelihood": lambda: density.pointwise_log_likelihood(theta),
        "pointwise_log_likelihood_batch": lambda: density.pointwise_log_likelihood_batch(thetas),
        "per_sample_gradient": lambda: density.per_sample_gradient(theta, "c"),
        "per_sample_gradient sparse": lambda: density.per_sample_gradient(theta, "c", sparse=True).toarray(),
        "empirical_fisher": lambda: density.empirical_fisher(theta, "c"),
        "constrain": lambda: density.constrain(theta),
        "constrain_batch": lambda: density.constrain_batch(thetas),
        "param_constrain": lambda: density.param_constrain(theta, include_tp=True),
        "numba_entry": lambda: _entry_call(density.numba_entry, theta),
        "data": lambda: density.data(),
    }


def _entry_call(entry, theta):
    grad = np.empty(len(theta))
    return entry.function(theta, grad, entry.fdata, entry.idata), grad


def _arrays(result):
    """A result as a flat list of arrays (dicts in key order)."""
    if isinstance(result, dict):
        return [a for k in sorted(result) for a in _arrays(result[k])]
    if isinstance(result, tuple):
        return [a for r in result for a in _arrays(r)]
    return [np.asarray(result)]


def _same(a, b):
    """Whether two results (``_arrays``) are equal, to rounding."""
    return len(a) == len(b) and all(x.shape == y.shape and np.allclose(x, y, rtol=1e-12, atol=0.0, equal_nan=True)
                                    for x, y in zip(a, b))


def race(seconds, readers=3, long_rows=20_000, short_rows=3):
    """One thread sets long and short data in turn while ``readers`` threads
    call every method of ``_race_calls``: each result must be the one of
    either data set, never a mix. Returns the mismatches (method name,
    reader, what) and the rounds of calls and of ``set_data`` made."""
    density = _race_model().compile()
    calls = _race_calls(density)
    sets = [_race_data(long_rows, 1), _race_data(short_rows, 2)]
    expected = []
    for arrays in sets:
        density.set_data(**arrays)
        expected.append({name: _arrays(call()) for name, call in calls.items()})
    stop, failures, rounds = time.monotonic() + seconds, [], {"set_data": 0, "calls": 0}

    def write():
        while time.monotonic() < stop:
            density.set_data(**sets[rounds["set_data"] % 2])
            rounds["set_data"] += 1

    def read(reader):
        while time.monotonic() < stop:
            rounds["calls"] += 1
            for name, call in calls.items():
                try:
                    got = _arrays(call())
                except Exception as error:  # a mix that numpy or a check noticed
                    failures.append((name, reader, repr(error)))
                    continue
                if not any(_same(got, e[name]) for e in expected):
                    failures.append((name, reader, "a mix of the two data sets"))
    threads = [threading.Thread(target=write)] + [threading.Thread(target=read, args=(k,)) for k in range(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures, rounds


def test_set_data_in_one_thread_while_others_read_the_data():
    """``set_data`` bound the data, counts and caches one attribute at a time: a
    per-sample call read the long data's rows with an output sized for the
    short data and wrote past it (a segfault). In a process of its own, so a
    crash is a failure, not a dead test run; switching threads every
    microsecond makes the races of a few bytecodes likely."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        sys.setswitchinterval(1e-6)
        import test_density
        failures, rounds = test_density.race(seconds=2.0)
        print(len(failures), rounds["set_data"] > 10 and rounds["calls"] > 3, sorted({{f[0] for f in failures}}),
              failures[:3])
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, (run.returncode, run.stdout[-2000:], run.stderr[-3000:])
    assert run.stdout.startswith("0 True "), run.stdout  # no mix, and both sides ran


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_likelihood_potential_of_a_sum_is_one_observation(backend):
    """``potential(sum(Normal(mu, 1).logpdf(y)), observed=True)`` is one observation
    (``Model.potential``): its pointwise value and per-sample row are the sum's.
    The lowering added ``y``'s rows in their own loop there too, writing 50 rows
    into an output of one (the Python twin: IndexError)."""
    y = np.random.default_rng(0).normal(size=50)
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    m.potential("lik", ld.sum(ld.Normal(mu, 1).logpdf(y)), observed=True)
    density = m.compile(backend=backend)
    theta = np.array([0.3])
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["lik"],
                               [np.sum(-0.5 * (y - 0.3) ** 2 - 0.5 * np.log(2 * np.pi))], rtol=1e-13)
    np.testing.assert_allclose(density.per_sample_gradient(theta, "lik"), [[np.sum(y - 0.3)]], rtol=1e-12)
