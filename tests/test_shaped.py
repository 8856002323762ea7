"""Values with shape (``logdens.shaped``): matrix parameters, products, axis
reductions, log_softmax, transposes, matrix indexing and row gathers, and a
small neural network's likelihood with per-sample gradients.

References: the numpy evaluator (``logdens.evaluate``) with the kernels'
numpy log densities for values, a hand-written numpy backpropagation for the
network, and 5-point finite differences of the value for gradients
(``engine_helpers.check_gradient``: rtol 1e-6, the stencil's accuracy) and
of each observation's log-likelihood for per-sample rows (``check_rows``).
Values agree to 1e-10 relative: the same arithmetic in another order (BLAS
sums in blocks).
"""

import numpy as np
import pytest
from scipy import stats

import logdens as ld
from logdens.distributions import vectorize
from logdens.evaluate import evaluate
from logdens.expr import ModelError
from engine_helpers import check_gradient, directional_fd, per_sample_rows


def reference_log_density(density, theta):
    """sum over terms of the kernels' numpy log density at the numpy evaluator's
    values, plus the log-Jacobian: no engine code involved."""
    values = {**density.constrain(theta), **density._arrays}
    total = 0.0
    for term in density.model.terms:
        if term.dist is None:
            total += np.sum(evaluate(term.value, values))
            continue
        args = np.broadcast_arrays(*[np.asarray(evaluate(a, values), dtype=float) for a in term.args])
        total += np.sum(vectorize.logpdf(term.dist.spec, args))
    lj = density.log_density(theta) - density.log_density(theta, jacobian=False)
    return total + lj


def check_model(m, rng, theta=None, per_sample=()):
    """Value against the reference (constants included), gradient against finite
    differences, the compiled module against its Python twin, per-sample rows
    against each observation's own gradient (``check_rows``)."""
    density = m.compile()
    theta = rng.normal(size=density.dim) * 0.5 if theta is None else theta
    want = reference_log_density(density, theta)
    got = density.log_density(theta, propto=False)
    assert np.isclose(got, want, rtol=1e-10, atol=1e-10), (got, want)
    check_gradient(density, theta, rng)
    twin = m.compile(backend="python")
    lp, grad = density.log_density_gradient(theta)
    lp2, grad2 = twin.log_density_gradient(theta)
    assert np.isclose(lp, lp2, rtol=1e-12)
    np.testing.assert_allclose(grad, grad2, rtol=1e-10, atol=1e-10)
    for name in per_sample:
        check_rows(density, theta, name)
    return density, theta


def reference_rows(density, theta, name):
    """Each observation's gradient: 5-point differences of its own log-likelihood
    (``pointwise_log_likelihood``) along each coordinate, no row code involved."""
    def pointwise(t):
        return density.pointwise_log_likelihood(t)[name]
    return np.stack([directional_fd(pointwise, theta, e) for e in np.eye(density.dim)], axis=1)


def sparse_rows_into_nans(density, theta, name):
    """The sparse rows' kernel run again into slots filled with NaN
    (``per_sample_gradient`` allocates them uninitialized, often zeros), as
    dense rows: a slot the kernel adds to instead of writing stays NaN."""
    sparse = density.per_sample_gradient(theta, name, sparse=True)
    n, width = sparse.shape[0], int(sparse.indptr[1]) if sparse.shape[0] else 0  # every row has its slots
    cols, vals = np.zeros((n, width), dtype=sparse.indices.dtype), np.full((n, width), np.nan)
    density._function("per_sample_sparse", name)(theta, *density._row_data, cols, vals)
    rows = np.zeros(sparse.shape)
    np.add.at(rows, (np.arange(n)[:, None], cols), vals)
    return rows


def check_rows(density, theta, name):
    """Per-sample rows of term ``name`` equal each observation's own gradient
    (``reference_rows``): dense rows, also written into NaNs and equal to the
    sparse ones (``per_sample_rows``), sparse rows written into NaNs, and the
    empirical Fisher (its scratch rows uninitialized) the sum of their outer
    products. Tolerance: the stencil's (``directional_fd``), 1e-7 of the
    largest entry."""
    rows = per_sample_rows(density, theta, name)
    want = reference_rows(density, theta, name)
    atol = 1e-7 * max(1.0, np.max(np.abs(want), initial=0.0))
    np.testing.assert_allclose(rows, want, rtol=1e-6, atol=atol)
    np.testing.assert_allclose(sparse_rows_into_nans(density, theta, name), rows, rtol=1e-13,
                               atol=1e-13 * np.max(np.abs(rows), initial=0.0))
    np.testing.assert_allclose(density.empirical_fisher(theta, name), rows.T @ rows, rtol=1e-9, atol=1e-9)
    return rows


# ----- the neural network ------------------------------------------------
D, H, K = 4, 6, 3


def mlp_model(X, Y):
    m = ld.Model()
    x = m.data("X", X)
    W1 = m.param("W1", ld.Normal(0, 1), shape=(D, H))
    b1 = m.param("b1", ld.Normal(0, 1), shape=H)
    W2 = m.param("W2", ld.Normal(0, 1), shape=(H, K))
    b2 = m.param("b2", ld.Normal(0, 1), shape=K)
    sigma = m.param("sigma", ld.HalfNormal(1))
    out = ld.tanh(x @ W1 + b1) @ W2 + b2
    m.observe("Y", ld.Normal(out, sigma), Y)
    return m


def mlp_backprop(p, X, Y):
    """Per-row gradients of the Normal log-likelihood w.r.t. W1, b1, W2, b2 and
    log(sigma), by hand."""
    a1 = X @ p["W1"] + p["b1"]
    h = np.tanh(a1)
    out = h @ p["W2"] + p["b2"]
    s = p["sigma"]
    g_out = (Y - out) / s ** 2                        # d loglik / d out
    g_h = g_out @ p["W2"].T
    g_a1 = g_h * (1 - h ** 2)
    rows = {"W1": X[:, :, None] * g_a1[:, None, :], "b1": g_a1,
            "W2": h[:, :, None] * g_out[:, None, :], "b2": g_out,
            "sigma": (((Y - out) ** 2).sum(1) / s ** 2 - K)[:, None]}  # d / d log(sigma)
    return {k: v.reshape(len(X), -1) for k, v in rows.items()}


@pytest.mark.parametrize("n", [1, 5, 130, 300])  # one row, part of a block, past one block
def test_mlp_against_hand_written_backpropagation(n):
    rng = np.random.default_rng(n)
    X, Y = rng.normal(size=(n, D)), rng.normal(size=(n, K))
    m = mlp_model(X, Y)
    density, theta = check_model(m, rng, per_sample=("Y",))
    p = density.constrain(theta)
    want = mlp_backprop(p, X, Y)
    rows = density.per_sample_gradient(theta, "Y")
    for slot in density.layout.params.values():
        np.testing.assert_allclose(rows[:, slot.offset:slot.offset + slot.size], want[slot.name],
                                   rtol=1e-10, atol=1e-12)
    out = np.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
    pointwise = density.pointwise_log_likelihood(theta)["Y"]
    np.testing.assert_allclose(pointwise, stats.norm.logpdf(Y, out, p["sigma"]).sum(axis=1), rtol=1e-12)


def test_mlp_new_rows_reuse_the_compiled_module():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(40, D)), rng.normal(size=(40, K))
    density = mlp_model(X, Y).compile()
    theta = rng.normal(size=density.dim) * 0.5
    source = density.source()
    X2, Y2 = rng.normal(size=(7, D)), rng.normal(size=(7, K))
    density.set_data(X=X2, Y=Y2)
    assert density.source() == source
    fresh = mlp_model(X2, Y2).compile()
    assert np.isclose(density.log_density(theta), fresh.log_density(theta), rtol=1e-13)
    out = np.empty((7, density.dim))
    assert density.per_sample_gradient(theta, "Y", out=out) is out
    np.testing.assert_allclose(out, fresh.per_sample_gradient(theta, "Y"), rtol=1e-13)
    with pytest.raises(ModelError, match="only its first axis"):
        density.set_data(X=rng.normal(size=(7, D + 1)))


def test_per_sample_rows_of_a_weight_read_twice_and_of_an_unread_parameter():
    """Rows are assigned only where one contribution covers a parameter: a weight
    read by two products gets both, and a parameter the term never reads gets
    0 (the rows are written into NaNs by ``per_sample_rows``)."""
    rng = np.random.default_rng(11)
    X, Y = rng.normal(size=(20, D)), rng.normal(size=(20, H))
    m = ld.Model()
    x = m.data("X", X)
    W = m.param("W", ld.Normal(0, 1), shape=(D, H))
    V = m.param("V", ld.Normal(0, 1), shape=(H, H))
    m.param("z", ld.Normal(0, 1), shape=3)
    h = ld.tanh((2.0 * x) @ W) + x @ W
    m.observe("Y", ld.Normal(h @ V, 1.5), Y)
    density, theta = check_model(m, rng, per_sample=("Y",))
    rows = density.per_sample_gradient(theta, "Y")
    z = density.layout.params["z"]
    assert np.all(rows[:, z.offset:z.offset + z.size] == 0.0)
    assert np.all(np.abs(rows[:, :D * H]).sum(axis=1) > 0)


def test_per_sample_out_is_checked():
    rng = np.random.default_rng(4)
    density = mlp_model(rng.normal(size=(5, D)), rng.normal(size=(5, K))).compile()
    theta = np.zeros(density.dim)
    with pytest.raises(ValueError, match="C-contiguous float64"):
        density.per_sample_gradient(theta, "Y", out=np.empty((4, density.dim)))
    with pytest.raises(ValueError, match="dense rows"):
        density.per_sample_gradient(theta, "Y", sparse=True, out=np.empty((5, density.dim)))


@pytest.mark.parametrize("scale", ["constant", "parameter"])
def test_per_sample_rows_of_parameters_with_a_length_1_axis(scale):
    """A regression with one output (issue 36): ``X @ W + b`` with W (k, 1) and a
    bias of shape (1,), its scale a constant (every sparse slot assigned: no
    row zeroed) or a parameter of shape (1,). A whole value of one entry has
    its row's partial summed in a local; that local was added into the row's
    entry, which per-sample rows assign and so do not zero: uninitialized
    memory plus the partial."""
    rng = np.random.default_rng(13)
    X, Y = rng.normal(size=(140, D)), rng.normal(size=(140, 1))
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(D, 1))
    b = m.param("b", ld.Normal(0, 1), shape=1)
    s = m.param("s", ld.HalfNormal(1), shape=1) if scale == "parameter" else 1.0
    m.observe("Y", ld.Normal(m.data("X", X) @ W + b, s), Y)
    check_model(m, rng, per_sample=("Y",))


# ----- every node kind ---------------------------------------------------
def test_softmax_regression_with_log_softmax():
    rng = np.random.default_rng(5)
    n, d, k = 150, 3, 4
    X = rng.normal(size=(n, d))
    onehot = np.eye(k)[rng.integers(0, k, n)]
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 2), shape=(d, k))
    alpha = m.param("alpha", ld.Normal(0, 2), shape=k)
    m.potential("lik", ld.sum(ld.log_softmax(m.data("X", X) @ W + alpha) * onehot, axis=-1), observed=True)
    check_model(m, rng, per_sample=("lik",))


def test_scaled_vector_product_and_matrix_products():
    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(60, 3)), rng.normal(size=60)
    m = ld.Model()
    tau = m.param("tau", ld.HalfNormal(1))
    beta = m.param("beta", ld.Normal(0, 1), shape=3)
    A = m.param("A", ld.Normal(0, 1), shape=(2, 3))
    B = m.param("B", ld.Normal(0, 1), shape=(3, 2))
    m.observe("y", ld.Normal(m.data("X", X) @ (tau * beta), 1.0), y)
    m.potential("products", ld.sum(A @ B) + beta @ (B @ A[:, 0]) + ld.sum(A.T * B) + A[1] @ beta)
    check_model(m, rng, per_sample=("y",))


def test_axis_reductions_indexing_and_mean():
    rng = np.random.default_rng(7)
    Y = rng.normal(size=(50, 3))
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1), shape=(2, 3))
    s = m.param("s", ld.HalfNormal(1), shape=(2, 3))  # a matrix under an elementwise transform
    m.observe("Y", ld.Normal(mu[0] + mu[:, 1][1], s[1]), Y)
    m.potential("whole", ld.logsumexp(mu, axis=0) @ s[0] * 0.1 + ld.sum(ld.mean(mu, axis=1))
                + ld.sum(ld.sum(s, axis=1)[:1]))
    m.potential("rows", ld.logsumexp(m.data("Yd", Y) * mu[0], axis=1) - ld.sum(s[1] ** 2), observed=True)
    check_model(m, rng, per_sample=("Y", "rows"))


def test_row_gather_of_a_parameter_matrix():
    rng = np.random.default_rng(8)
    n, groups = 90, 5
    group = rng.integers(0, groups, n)
    Y = rng.normal(size=(n, 2))
    m = ld.Model()
    effects = m.param("effects", ld.Normal(0, 1), shape=(groups, 2))
    scale = m.param("scale", ld.HalfNormal(1), shape=2)
    m.observe("Y", ld.Normal(effects[m.data("group", group)], scale), Y)
    check_model(m, rng, per_sample=("Y",))


def test_potential_sum_over_rows_and_events():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(70, 3))
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(3, 2))
    m.potential("p", ld.sum(ld.sigmoid(m.data("X", X) @ W)))
    check_model(m, rng)


# ----- shapes are checked when an expression is built --------------------
def test_build_time_shape_errors_name_both_shapes():
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(3, 4))
    v = m.param("v", ld.Normal(0, 1), shape=3)
    with pytest.raises(ModelError, match=r"\(3, 4\) and \(3,\) do not match"):
        W @ v
    with pytest.raises(ModelError, match="do not broadcast"):
        W + v
    with pytest.raises(ModelError, match="out of range"):
        ld.sum(W, axis=2)
    with pytest.raises(ModelError, match="out of bounds"):
        W[:, 4]
    with pytest.raises(ModelError, match="give an axis"):
        ld.logsumexp(W)


def test_lowering_errors_name_the_term():
    rng = np.random.default_rng(10)
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(3, 3))
    X = m.data("X", rng.normal(size=(3, 3)))
    m.potential("p", ld.sum(ld.sum(X @ W, axis=0) * 2.0))  # a sum over the rows, inside
    with pytest.raises(ModelError, match="term 'p'.*rows of data"):
        m.compile()


def test_data_on_the_right_of_a_product_are_read_whole():
    """W @ X with data X on the right: X is read whole (not as rows), so the
    product of a parameter matrix and a data matrix is one whole value."""
    rng = np.random.default_rng(10)
    X = rng.normal(size=(3, 4))
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(2, 3))
    m.potential("p", ld.sum(ld.tanh(W @ m.data("X", X))))
    density = m.compile()
    theta = rng.normal(size=6)
    lp, grad = density.log_density_gradient(theta)
    W_value = theta.reshape(2, 3)
    expected = stats.norm().logpdf(theta).sum() + np.sum(np.tanh(W_value @ X))
    assert density.log_density(theta, propto=False) == pytest.approx(expected, abs=1e-12)
    np.testing.assert_allclose(grad, -theta + ((1 - np.tanh(W_value @ X) ** 2) @ X.T).ravel(), atol=1e-12)


@pytest.mark.parametrize("n", [150, 2100])  # two blocks; three products of gathered rows, the last partial
def test_empirical_fisher_is_the_sum_of_the_rows_outer_products(n):
    rng = np.random.default_rng(11)
    X, Y = rng.normal(size=(n, D)), rng.normal(size=(n, K))
    density = mlp_model(X, Y).compile()
    theta = rng.normal(size=density.dim) * 0.5
    rows = density.per_sample_gradient(theta, "Y")
    np.testing.assert_allclose(density.empirical_fisher(theta, "Y"), rows.T @ rows, rtol=1e-10, atol=1e-8)
    density.set_data(X=X[:0], Y=Y[:0])
    assert not density.empirical_fisher(theta, "Y").any()


def test_empirical_fisher_of_a_scalar_term_from_its_sparse_rows():
    rng = np.random.default_rng(12)
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=3)
    m.observe("y", ld.Normal(a[m.data("g", rng.integers(0, 3, 40))], 1.0), rng.normal(size=40))
    density = m.compile()
    theta = rng.normal(size=3)
    rows = density.per_sample_gradient(theta, "y")
    np.testing.assert_allclose(density.empirical_fisher(theta, "y"), rows.T @ rows, rtol=1e-12)


# ----- random models with matrices (hypothesis) --------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

N_ROWS = 140  # a full block of 128 rows and a partial one
#: (inputs, outputs, groups): W (NX, NK), G (GROUPS, NK), v and the output's bias (NK,),
#: A (NK, NK); with one output the scalars s and sigma have shape (1,): every
#: parameter with a length-1 axis
SIZES = [(3, 4, 3), (3, 1, 3), (1, 4, 1), (1, 1, 1)]


def _random_rows(draw, pool, depth):
    """A random row-aligned expression of shape (N_ROWS, NK)."""
    choice = draw(st.integers(0, 7 if depth > 0 else 2))
    if choice == 0:
        return pool["X"] @ pool["W"]
    if choice == 1:
        return pool["G"][pool["g"]]                     # rows of a parameter matrix, by index
    if choice == 2:
        return pool["Z"] * pool["v"] + pool["s"]        # data rows, a whole vector, a scalar
    inner = _random_rows(draw, pool, depth - 1)
    if choice == 3:
        return draw(st.sampled_from([ld.tanh, ld.sin, ld.sigmoid, lambda x: 0.3 * ld.square(x)]))(inner)
    if choice == 4:
        other = draw(st.sampled_from([pool["v"], pool["W"][0], pool["A"][:, 0], pool["A"].T @ pool["v"],
                                      pool["s"], _random_rows(draw, pool, depth - 1)]))
        return draw(st.sampled_from([lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b]))(inner, other)
    if choice == 5:
        return inner @ (0.5 * pool["A"])
    if choice == 6:
        return ld.log_softmax(inner)
    return ld.where(pool["Z"] > 0.0, inner, 0.5 * inner)  # a condition on data: no kink for the differences


@pytest.mark.slow
@pytest.mark.parametrize("nx, nk, groups", SIZES)
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_models_with_matrices(nx, nk, groups, data):
    """Compiled against the Python twin and the numpy evaluator, gradients against
    finite differences, per-sample rows (dense into NaNs, sparse, the empirical
    Fisher) against each row's own gradient (``check_rows``), for every
    parameter shape with a length-1 axis (``SIZES``)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    m = ld.Model()
    one = (1,) if nk == 1 else ()
    pool = {"X": m.data("X", rng.normal(size=(N_ROWS, nx))), "Z": m.data("Z", rng.normal(size=(N_ROWS, nk))),
            "g": m.data("g", rng.integers(0, groups, N_ROWS)),
            "W": m.param("W", ld.Normal(0, 1), shape=(nx, nk)), "G": m.param("G", ld.Normal(0, 1), shape=(groups, nk)),
            "v": m.param("v", ld.Normal(0, 1), shape=nk), "A": m.param("A", ld.Normal(0, 1), shape=(nk, nk)),
            "s": m.param("s", ld.Normal(0, 1), shape=one)}
    sigma = m.param("sigma", ld.HalfNormal(1), shape=one)
    bias = m.param("bias", ld.Normal(0, 1), shape=nk)  # read once: its rows' entries are assigned
    rows = _random_rows(data.draw, pool, 3) + bias
    if data.draw(st.booleans()):
        m.observe("Y", ld.Normal(rows, sigma), rng.normal(size=(N_ROWS, nk)))
    else:
        reduce = data.draw(st.sampled_from([lambda x: ld.sum(x, axis=1), lambda x: ld.logsumexp(x, axis=-1)]))
        m.potential("Y", reduce(rows) - ld.sum(ld.log(sigma)), observed=True)  # sum: sigma of shape (1,)
    check_model(m, rng, per_sample=("Y",))


SHAPES = [(), (3,), (2,), (4, 3), (3, 4), (4, 2), (2, 3)]


def _numpy_log_softmax(x):
    if x.ndim == 0:
        raise ValueError("a scalar has no axis to normalize")
    return x - np.log(np.sum(np.exp(x), axis=-1, keepdims=True))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SHAPES), st.sampled_from(SHAPES),
       st.sampled_from(["+", "*", "@", "index", "column", "sum", "logsumexp", "log_softmax", "T", "where"]))
def test_shape_rules_agree_with_numpy_or_refuse(left, right, op):
    """Every built expression has numpy's shape; what numpy refuses is a ModelError."""
    m = ld.Model()
    a = m.param("a", shape=left) if left else m.param("a")
    b = m.param("b", shape=right) if right else m.param("b")
    x, y = np.zeros(left), np.zeros(right)
    build = {"+": (lambda: a + b, lambda: x + y), "*": (lambda: a * b, lambda: x * y),
             "@": (lambda: a @ b, lambda: x @ y),
             "index": (lambda: a[1], lambda: x[1]), "column": (lambda: a[:, 1], lambda: x[:, 1]),
             "sum": (lambda: ld.sum(a, axis=-1), lambda: x.sum(axis=-1)),
             "logsumexp": (lambda: ld.logsumexp(a, axis=0), lambda: np.sum(x, axis=0)),
             "log_softmax": (lambda: ld.log_softmax(a), lambda: _numpy_log_softmax(x)),
             "T": (lambda: a.T, lambda: x.T),
             "where": (lambda: ld.where(a > 0.0, a, b), lambda: np.where(x > 0.0, x, y))}
    ours, theirs = build[op]
    try:
        if op in ("sum", "logsumexp") and left == ():
            raise ValueError("numpy sums a 0-d array along an axis; a scalar has no axis here")
        want = np.shape(theirs())
    except (ValueError, IndexError, TypeError):
        with pytest.raises((ModelError, TypeError)):
            ours()
        return
    assert ours().shape == want


@pytest.mark.parametrize("outer", [lambda total, s: -total, lambda total, s: -0.5 * total,
                                   lambda total, s: total / s, lambda total, s: -(s * total)])
def test_a_potential_scales_its_sum_over_rows_of_data(outer):
    """``-ld.sum(...)``, ``c * ld.sum(...)``, ``ld.sum(...) / s`` over rows of a
    data matrix, as written by hand (a least-squares fit): the factor goes
    inside the sum, which each block of rows adds into."""
    rng = np.random.default_rng(11)
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(3, 4))
    s = m.param("s", ld.HalfNormal(1))
    T = m.data("T", rng.normal(size=(3, 4)))
    m.potential("fit", outer(ld.sum(ld.square(W - T)), s))
    check_model(m, rng)


@pytest.mark.parametrize("write", ["likelihood and prior", "two sums over rows", "a constant", "mean"])
def test_a_potential_adds_sums_over_rows_to_other_values(write):
    """A hand-written log density in one potential: a sum over rows of data beside
    a prior on the weights, a second sum over rows, a constant, or a mean over
    rows: each sum over the rows gets its own loop over them. The mean divides
    by the rows' current count (``set_data``)."""
    rng = np.random.default_rng(12)
    X, T = rng.normal(size=(30, 3)), rng.normal(size=(30, 4))
    m = ld.Model()
    W = m.param("W", shape=(3, 4))
    Xn = m.data("X", X)
    fit = ld.square(Xn @ W - m.data("T", T))
    value = {"likelihood and prior": ld.sum(-fit) - 0.5 * ld.sum(W ** 2),
             "two sums over rows": -0.5 * ld.sum(fit) + ld.sum(ld.tanh(Xn @ W)) - ld.sum(W ** 2),
             "a constant": 3.0 - ld.sum(fit),
             "mean": -ld.mean(fit) - W.mean() ** 2}[write]
    m.potential("p", value)
    density, theta = check_model(m, rng)
    if write == "mean":
        density.set_data(X=X[:7], T=T[:7])
        values = {**density.constrain(theta), **density._arrays}
        assert density.log_density(theta) == pytest.approx(float(evaluate(value, values)), rel=1e-12)
        W_value = theta.reshape(3, 4)
        assert density.log_density(theta) == pytest.approx(
            -np.mean((X[:7] @ W_value - T[:7]) ** 2) - W_value.mean() ** 2, rel=1e-12)


def test_a_scalar_likelihood_summed_over_rows_refuses_per_observation_outputs():
    """A likelihood potential ``sum(...)`` over rows of data in a term with shape is
    one observation; its rows were written one per row into an output of one
    (past its end). Its per-observation outputs are refused when called, and its
    log density and gradient are right."""
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(20, 3)), rng.normal(size=(20, 2))
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(3, 2))
    m.potential("lik", ld.sum(ld.Normal(m.data("X", X) @ W, 1).logpdf(Y)), observed=True)
    density = m.compile(backend="python")
    theta = np.full(6, 0.1)
    resid = Y - X @ theta.reshape(3, 2)
    lp, grad = density.log_density_gradient(theta)
    np.testing.assert_allclose(lp, np.sum(-0.5 * resid ** 2 - 0.5 * np.log(2 * np.pi)) - 0.5 * np.sum(theta ** 2),
                               rtol=1e-12)
    np.testing.assert_allclose(grad, (X.T @ resid).ravel() - theta, rtol=1e-12)
    for call in (lambda: density.pointwise_log_likelihood(theta), lambda: density.per_sample_gradient(theta, "lik")):
        with pytest.raises(ValueError, match="likelihood 'lik': a sum over rows of data in a term with shape"):
            call()
