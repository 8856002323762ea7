"""Expressions: numpy on either side of an operator, one shape rule, constants
that generated code can spell, and labels that cost nothing to build."""

import math

import numpy as np
import pytest
from scipy import stats

import logdens as ld
from logdens.evaluate import evaluate
from logdens.expr import LABEL_DEPTH, Expr, ModelError

from engine_helpers import check_gradient


def _model():
    m = ld.Model()
    mu = m.param("mu", shape=3)
    return m, mu


@pytest.mark.parametrize("build", [
    lambda y, mu: y - mu,
    lambda y, mu: y * mu,
    lambda y, mu: y / (1.0 + ld.exp(mu)),
    lambda y, mu: np.float64(2.0) * mu,
    lambda y, mu: np.log(2 * np.pi) - mu,
    lambda y, mu: y ** mu,
])
def test_numpy_on_the_left_of_an_operator(build):
    """numpy on the left of an operator builds the expression the reflected
    operator would (``Expr.__array_ufunc__``) instead of failing with an error
    that prints the whole array."""
    _, mu = _model()
    y = np.array([1.0, 2.0, 3.0])
    expr = build(y, mu)
    assert isinstance(expr, Expr) and expr.shape == (3,)
    value = evaluate(expr, {"mu": np.array([0.5, -0.5, 0.25])})
    assert np.all(np.isfinite(value)) and value.shape == (3,)


def test_numpy_functions_of_expressions_are_the_ld_functions():
    """``np.exp(mu)``, ``np.maximum(mu, 0)``, ``np.sum(W, axis=0)``, ... build the
    nodes ``ld.exp``, ``ld.maximum``, ``ld.sum`` build (numpy's values); a
    ufunc no node computes is a TypeError naming it."""
    m = ld.Model()
    mu, W = m.param("mu", shape=3), m.param("W", shape=(3, 2))
    values = {"mu": np.array([0.5, -1.0, 2.0]), "W": np.arange(6.0).reshape(3, 2)}
    v = values["mu"]
    cases = [(np.exp(mu), np.exp(v)), (np.log1p(np.abs(mu)), np.log1p(np.abs(v))), (np.tanh(mu), np.tanh(v)),
             (np.maximum(mu, 0.0), np.maximum(v, 0.0)), (np.minimum(1.0, mu), np.minimum(1.0, v)),
             (np.logaddexp(mu, 1.0), np.logaddexp(v, 1.0)), (np.power(mu, 2), v ** 2), (np.negative(mu), -v),
             (np.greater(mu, 0.0), (v > 0) * 1.0), (np.sum(mu), np.sum(v)), (np.mean(mu), np.mean(v)),
             (np.sum(W, axis=0), values["W"].sum(axis=0)), (np.mean(W, axis=1, keepdims=True),
                                                            values["W"].mean(axis=1, keepdims=True))]
    for expr, want in cases:
        assert isinstance(expr, Expr)
        np.testing.assert_allclose(evaluate(expr, values), want, rtol=1e-14)
    assert np.exp(mu).op == "exp" and np.maximum(mu, 0.0).op == "maximum"
    from scipy import special
    assert special.expit(mu).op == "logistic" and special.gammaln(mu).op == "lgamma"  # scipy's ufuncs too
    with pytest.raises(TypeError, match="np.arctan of a model expression"):
        np.arctan(mu)
    with pytest.raises(TypeError, match="np.add of a model expression"):
        np.add.reduce(mu)
    with pytest.raises(TypeError, match="no dtype= or out="):
        np.sum(mu, dtype=np.float32)


def test_numpy_array_functions_of_expressions_are_the_ld_functions():
    """``np.concatenate``, ``np.dot``, ``np.cumsum``, ... of expressions build the
    ld nodes (``Expr.__array_function__``; numpy's values), where numpy would
    otherwise wrap the expression in an array of objects (``np.cumsum(z)``) or
    multiply elementwise (``np.dot(W, z)``) with no error; any other numpy
    function is a TypeError naming it."""
    m = ld.Model()
    z, W = m.param("z", shape=3), m.param("W", shape=(3, 3))
    values = {"z": np.array([0.5, -1.0, 2.0]), "W": np.arange(9.0).reshape(3, 3) - 4.0}
    v, V = values["z"], values["W"]
    cases = [(np.cumsum(z), np.cumsum(v)), (np.dot(W, z), V @ v), (np.dot(z, z), v @ v), (np.dot(2.0, z), 2 * v),
             (np.concatenate([np.zeros(1), z]), np.r_[0.0, v]), (np.concatenate([W, W], axis=1), np.hstack([V, V])),
             (np.stack([z, z], axis=1), np.stack([v, v], axis=1)), (np.where(z > 0, z, 0.0), np.where(v > 0, v, 0.0)),
             (np.clip(z, -0.5, 1.0), np.clip(v, -0.5, 1.0)), (np.clip(z, None, 1.0), np.minimum(v, 1.0)),
             (np.diag(z), np.diag(v)), (np.diag(W), np.diag(V)), (np.transpose(W), V.T), (np.reshape(W, (9,)), V.ravel()),
             (np.ravel(W), V.ravel()), (np.expand_dims(z, -1), v[:, None]), (np.expand_dims(z, (0, 2)), v[None, :, None]),
             (np.outer(z, z), np.outer(v, v)), (np.linalg.cholesky(W @ W.T + 9.0 * np.eye(3)),
                                                np.linalg.cholesky(V @ V.T + 9.0 * np.eye(3)))]
    for expr, want in cases:
        assert isinstance(expr, Expr)
        got = evaluate(expr, values)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
    assert (np.shape(W), np.ndim(W), np.size(W), np.size(W, 1)) == ((3, 3), 2, 9, 3)
    for call, message in [(lambda: np.max(z), "np.max of a model expression is not supported"),
                          (lambda: np.zeros_like(z), "np.zeros_like of a model expression"),
                          (lambda: np.linalg.inv(W), "np.linalg.inv of a model expression"),
                          (lambda: np.cumsum(W, axis=1), "running sums of vectors only"),
                          (lambda: np.where(z > 0), "the three-argument form only"),
                          (lambda: np.diag(W, k=1), "the main diagonal only"),
                          (lambda: np.transpose(W[None], (1, 0, 2)), "only the reversal of the axes")]:
        with pytest.raises(TypeError, match=message):
            call()
    with pytest.raises(ModelError, match="only vectors have a cumulative sum"):
        np.cumsum(W)
    with pytest.raises(TypeError, match=r"len\(\) of a model expression \(z\): a data length may change"):
        len(z)


def test_a_model_written_with_numpy_functions_compiles_to_its_density():
    """A random-walk regression written with ``np.dot``, ``np.cumsum`` and
    ``np.concatenate``: its log density and gradient are the closed form's."""
    rng = np.random.default_rng(3)
    X, y, g = rng.normal(size=(8, 2)), rng.normal(size=8), np.array([0, 1, 2, 3, 3, 2, 1, 0])
    m = ld.Model()
    beta, z = m.param("beta", ld.Normal(0, 1), shape=2), m.param("z", ld.Normal(0, 1), shape=3)
    walk = np.concatenate([np.zeros(1), np.cumsum(z)])
    m.observe("y", ld.Normal(np.dot(m.data("X", X), beta) + walk[m.data("g", g)], 1.0), y)
    theta = rng.normal(size=5)
    b, w = theta[:2], np.r_[0.0, np.cumsum(theta[2:])]
    r = y - X @ b - w[g]
    walk_grad = np.array([r[g == k].sum() for k in range(4)])
    want = np.r_[X.T @ r, np.cumsum(walk_grad[:0:-1])[::-1]] - theta
    for backend in ("cpu", "python"):
        density = m.compile(backend=backend)
        lp, grad = density.log_density_gradient(theta)
        assert lp == pytest.approx(-0.5 * (r @ r + theta @ theta), rel=1e-13)
        np.testing.assert_allclose(grad, want, rtol=1e-12, atol=1e-12)
    rows = m.compile().per_sample_gradient(theta, "y")
    np.testing.assert_allclose(rows.sum(axis=0), want + theta, rtol=1e-12, atol=1e-12)
    m.observe("Y", ld.Normal(np.cumsum(m.data("X2", X) @ beta)[:, None] * z, 1.0), np.zeros((8, 3)))
    with pytest.raises(ModelError, match=r"term 'Y': cumsum\(\(X2 @ beta\)\): running sums over the rows of "
                                         "data are not supported in a term with matrices"):
        m.compile()


def test_numpy_matrix_times_a_parameter_vector():
    m = ld.Model()
    beta = m.param("beta", ld.Normal(0, 1), shape=2)
    X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = np.array([0.5, 1.0, 2.0])
    m.observe("y", ld.Normal(X @ beta, 1.0), y)
    density = m.compile(backend="python")
    b = np.array([0.3, -0.2])
    expected = -0.5 * np.sum((y - X @ b) ** 2) - 0.5 * np.sum(b ** 2)
    lp, grad = density.log_density_gradient(b)
    assert lp == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(grad, X.T @ (y - X @ b) - b, rtol=1e-12)


def test_infinite_constants_compile():
    """``logaddexp(x, -inf)`` is ``x``: the constant is written ``-math.inf``, not ``-inf``."""
    m = ld.Model()
    x = m.param("x", ld.Normal(0, 1))
    m.potential("p", ld.logaddexp(x, -np.inf))
    density = m.compile()
    lp, grad = density.log_density_gradient(np.array([0.7]))
    assert lp == pytest.approx(-0.5 * 0.49 + 0.7, rel=1e-14)
    assert grad[0] == pytest.approx(-0.7 + 1.0, rel=1e-14)


def test_nan_and_complex_constants_are_refused():
    _, mu = _model()
    with pytest.raises(ModelError, match="NaN"):
        mu + np.nan
    with pytest.raises(ModelError, match="complex"):
        mu * 1j
    with pytest.raises(ModelError, match="complex"):
        mu + np.array([1j, 2.0, 3.0])


def test_a_length_one_vector_does_not_broadcast():
    """The one shape rule: scalars broadcast, vectors have equal lengths."""
    m, mu = _model()
    x = m.data("x", np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ModelError, match=r"mu\[1:2\] has length 1 \(a length-1 vector does not broadcast"):
        x - mu[1:2]
    with pytest.raises(ModelError, match="has length 3 but"):
        mu + m.data("w", np.zeros(4))


def test_matrices_combine_elementwise_with_numpy_broadcasting():
    """Trailing axes align; a length-1 axis does not stretch (rows may change length)."""
    m, mu = _model()
    X = m.data("X", np.ones((3, 2)))
    assert ld.exp(X).shape == (3, 2) and (X + 1.0).shape == (3, 2) and ld.sum(X).shape == ()
    assert (X * m.param("w", shape=2)).shape == (3, 2)
    for build in (lambda: X + m.param("v", shape=3), lambda: X + m.data("ones", np.ones((1, 2)))):
        with pytest.raises(ModelError, match=r"do not broadcast"):
            build()


@pytest.mark.timeout(120)  # a hang guard: exponential work would not end
def test_shared_sub_expressions_build_and_compile_in_linear_time():
    """An unrolled recursion reuses each step twice: labels (built eagerly for
    errors) and walks over the graph that recurse into every child took time
    exponential in the depth (18 steps: 29 s). 40 steps here."""
    m = ld.Model()
    r = m.param("r", ld.Normal(0, 1))
    x0 = m.param("x", ld.Normal(0, 1), shape=4)
    g = m.data("g", np.array([0, 1, 2, 3, 3]))
    x = x0
    for _ in range(40):
        x = x + r * ld.tanh(x)
    m.potential("p", ld.sum(-0.5 * x * x))
    m.observe("y", ld.Normal(x[g], 1.0), np.zeros(5))
    m.deterministic("x_last", x)
    density = m.compile(backend="python")
    lp, grad = density.log_density_gradient(np.full(5, 0.1))
    assert np.isfinite(lp) and np.all(np.isfinite(grad))
    assert len(x.label()) < 500


def test_labels_are_bounded_in_depth():
    _, mu = _model()
    x = mu
    for _ in range(10):
        x = ld.exp(x)
    assert x.label().count("exp(") == LABEL_DEPTH and "..." in x.label()


def test_logpdf_of_an_expression_is_an_expression():
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1), shape=3)
    y = np.array([0.5, 1.0, 2.0])
    node = ld.Normal(mu, 2.0).logpdf(y)
    assert node.shape == (3,) and node.depends_on_params()
    assert ld.Poisson(ld.exp(mu)).logpmf(np.array([1, 2, 3])).shape == (3,)
    assert ld.Normal(0.0, 1.0).logpdf(mu).shape == (3,)  # x an expression, parameters numbers
    np.testing.assert_allclose(ld.Normal(0.0, 2.0).logpdf(y), -0.5 * (y / 2) ** 2 - np.log(2 * np.sqrt(2 * np.pi)))
    with pytest.raises(ModelError, match=r"Normal.logpdf: array\(4,\) has length 4 but mu has length 3"):
        ld.Normal(mu, 1.0).logpdf(np.zeros(4))


def test_a_constant_index_is_an_element():
    m = ld.Model()
    b = m.param("b", shape=4)
    assert b[0].shape == () and b[-1].position == 3 and b[np.int64(2)].position == 2
    for bad in (4, -5):
        with pytest.raises(ModelError, match=rf"b\[{bad}\]: index {bad} is out of bounds for length 4"):
            b[bad]
    with pytest.raises(ModelError, match="must be an integer data array"):
        b[True]


def test_mean_and_dot():
    m = ld.Model()
    a = m.param("a", shape=3)
    assert ld.mean(a).shape == () and ld.dot(a, np.ones(3)).shape == ()
    assert ld.mean(2.0).__class__.__name__ == "Const"  # a scalar is its own mean
    with pytest.raises(ModelError, match="has length 3 but array"):
        ld.dot(a, np.ones(4))
    values = {"a": np.array([1.0, 2.0, 6.0])}
    assert evaluate(ld.mean(a), values) == pytest.approx(3.0)
    assert evaluate(ld.dot(a, a), values) == pytest.approx(41.0)


def test_logsumexp_of_a_vector_is_a_scalar():
    m = ld.Model()
    a = m.param("a", shape=3)
    node = ld.logsumexp(a)
    assert node.shape == () and ld.logsumexp(1.5).__class__.__name__ == "Const"
    assert evaluate(node, {"a": np.array([1000.0, 1000.0, -np.inf])}) == pytest.approx(1000 + np.log(2))


def test_equality_builds_a_comparison():
    """``==`` and ``!=`` build comparisons (1.0 or 0.0) as ``<`` does, with numpy on
    either side and as ``np.equal``: ``ld.where(x == 1.0, a, 0.0)`` was the constant
    0.0 (Python's identity). Nodes still hash by identity, so they key dicts and
    sets; against a value that is no number (a string, None) ``==`` is identity."""
    m, mu = _model()
    v, w = np.array([0.5, 1.0, 2.0]), np.array([0.5, -1.0, 2.0])
    cases = [(mu == 1.0, v == 1.0), (mu != 1.0, v != 1.0), (1.0 == mu, v == 1.0), (w == mu, w == v),
             (mu != w, v != w), (np.float64(1.0) == mu, v == 1.0), (np.equal(mu, w), v == w),
             (np.not_equal(w, mu), v != w), (mu == mu, np.ones(3))]
    for expr, want in cases:
        assert isinstance(expr, Expr) and expr.shape == (3,)
        np.testing.assert_array_equal(evaluate(expr, {"mu": v}), want * 1.0)
    assert (mu == 1.0).label() == "(mu == 1.0)" and (mu != w).op == "ne"
    table, members = {mu: "mu"}, {mu, mu + 1.0}
    assert table[mu] == "mu" and mu in members and mu in [mu] and len(members) == 2
    assert not (mu == "mu") and mu != None  # noqa: E711 (what ``==`` does with a non-number)


def test_truth_and_python_numbers_of_an_expression_name_the_ld_function():
    """A Python ``if`` on an expression names ``ld.where``; ``math.log(x)``,
    ``float(x)``, ``int(x)`` and ``range(x)`` say an expression is no Python number
    and name the ld functions (Python's message was ``must be real number, not Param``)."""
    m, mu = _model()
    x = m.param("x")
    for truth in (lambda: bool(x), lambda: x == 1.0 and 0.0, lambda: 1.0 if mu != 0.0 else 0.0):
        with pytest.raises(TypeError, match=r"no truth value.*ld\.where\(x > 0, a, b\)"):
            truth()
    for number in (lambda: math.log(x), lambda: float(x), lambda: math.exp(mu[0])):
        with pytest.raises(TypeError, match=r"(x|mu\[0\]): a model expression is not a Python number.*ld\.log"):
            number()
    for index in (lambda: int(x), lambda: range(x), lambda: [1.0, 2.0][x]):
        with pytest.raises(TypeError, match=r"x: a model expression is not a Python integer"):
            index()


def test_a_tuple_index_with_an_integer_array_gathers_as_numpy():
    """``ab[cidx, 0]`` is ``ab[:, 0]`` gathered by ``cidx``, ``ab[cidx, :]`` is
    ``ab[cidx]``, as numpy's; integers may come before the array. Values, and the
    compiled gradient against the Python twin and central differences."""
    rng = np.random.default_rng(5)
    J, N = 3, 7
    c, y = rng.integers(0, J, N), rng.normal(size=N)
    m = ld.Model()
    ab = m.param("ab", ld.Normal(0, 1), shape=(J, 2))
    W = m.param("W", ld.Normal(0, 1), shape=(2, J, 2))
    cidx = m.data("cidx", c)
    values = {"ab": rng.normal(size=(J, 2)), "W": rng.normal(size=(2, J, 2)), "cidx": c}
    A, V = values["ab"], values["W"]
    cases = [(ab[cidx, 0], A[c, 0]), (ab[cidx, :], A[c, :]), (ab[cidx, 1:], A[c, 1:]), (ab[c, -1], A[c, -1]),
             (W[1, cidx], V[1, c]), (W[0, cidx, 1], V[0, c, 1]), (W[1, cidx, :], V[1, c, :]),
             (ab[list(c), 0], A[c, 0])]
    for expr, want in cases:
        assert expr.shape == want.shape
        np.testing.assert_allclose(evaluate(expr, values), want, rtol=1e-15)
    m.observe("y", ld.Normal(ab[cidx, 0] + ab[cidx, 1] * W[1, cidx, 0], 1.0), y)
    theta = rng.normal(size=6 + 12)
    densities = [m.compile(), m.compile(backend="python")]
    (lp, grad), (lp_py, grad_py) = (d.log_density_gradient(theta) for d in densities)
    assert lp == pytest.approx(lp_py, rel=1e-13)
    np.testing.assert_allclose(grad, grad_py, rtol=1e-12, atol=1e-13)
    h = 1e-6
    for k in range(theta.size):
        step = np.eye(theta.size)[k] * h
        quotient = (densities[0].log_density(theta + step) - densities[0].log_density(theta - step)) / (2 * h)
        assert grad[k] == pytest.approx(quotient, rel=1e-6, abs=1e-7)


def test_a_tuple_index_that_does_not_gather_rows_names_the_value_and_the_fix():
    """Rows of data lead, so ``ab[:, cidx]`` (numpy's column gather) is refused, as
    are a float array or a parameter as an
    index, each naming ``ab``, the index and what to write instead; two arrays
    pair only as a matrix's two indices."""
    m = ld.Model()
    ab = m.param("ab", shape=(3, 2))
    cidx, x = m.data("cidx", np.array([0, 1, 1])), m.data("x", np.array([0.0, 1.0]))
    k = m.param("k")
    with pytest.raises(ModelError, match=r"ab\[:, cidx\]: an integer data array comes first or after integers "
                                         r"only.*ab\.T\[cidx\] is numpy's ab\[:, cidx\] transposed"):
        ab[:, cidx]
    T = m.param("T", shape=(3, 2, 2))
    with pytest.raises(ModelError, match=r"T\[cidx, cidx\]: two integer arrays pair elementwise only as the two "
                                         r"indices of a matrix of at most 32 columns.*"
                                         r"T\.reshape\(-1\)\[k\] with integer data k = i \* 2 \+ j"):
        T[cidx, cidx]
    for bad, label in ((x, "x"), (k, "k"), (np.array([0.5]), r"array\(1,\)")):
        with pytest.raises(ModelError, match=rf"ab\[{label}, 0\]: index {label} must be an integer data array "
                                             r"\(m\.data\(name, ints\)\), an integer or a slice"):
            ab[bad, 0]


@pytest.mark.slow  # two compiles of K gathers per row: 130 s on this loaded machine
def test_two_index_arrays_pair_as_numpy():
    """``W[i, j]`` with integer data i and j is numpy's: one element per row,
    ``W[i[n], j[n]]``. Values against numpy, the compiled gradient against the
    Python twin and finite differences (``engine_helpers.check_gradient``), and
    j past the last column named as a gather's index is."""
    rng = np.random.default_rng(7)
    J, K, N = 2, 3, 9
    i, j, y = rng.integers(0, J, N), rng.integers(0, K, N), rng.normal(size=N)
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(J, K))
    rows, columns = m.data("i", i), m.data("j", j)
    values = {"W": rng.normal(size=(J, K)), "i": i, "j": j}
    picked = W[rows, columns]
    assert picked.shape == (N,)
    np.testing.assert_array_equal(evaluate(picked, values), values["W"][i, j])
    m.observe("y", ld.Normal(picked, 1.0), y)
    densities = [m.compile(), m.compile(backend="python")]
    theta = rng.normal(size=J * K)
    (lp, grad), (lp_py, grad_py) = (d.log_density_gradient(theta) for d in densities)
    want = stats.norm(0, 1).logpdf(theta).sum() + stats.norm(theta.reshape(J, K)[i, j], 1).logpdf(y).sum()
    assert densities[0].log_density(theta, propto=False) == pytest.approx(want, rel=1e-12)
    assert lp == pytest.approx(lp_py, rel=1e-13)
    np.testing.assert_allclose(grad, grad_py, rtol=1e-12, atol=1e-13)
    check_gradient(densities[0], theta, rng)
    with pytest.raises(ModelError, match=r"index j\[0\]=3 is out of bounds for .* of length 3"):
        densities[0].set_data(j=np.where(np.arange(N) == 0, K, j))
