"""Indexing with ``None`` and ``...``, ``reshape``, and broadcasting along a
length-1 axis (``sd[:, None] * L``), as numpy users write them.

References: numpy's own indexing and broadcasting for shapes and values (the
numpy evaluator), scipy's multivariate normal, and the helpers of
``test_shaped`` (the kernels' numpy densities at the evaluator's values to
1e-10; gradients against 5-point finite differences, rtol 1e-6; the
compiled module against its Python twin; per-sample rows summing to their
term's gradient).
"""

import numpy as np
import pytest
from scipy import stats

import logdens as ld
from logdens.evaluate import evaluate
from logdens.expr import ModelError
from engine_helpers import check_gradient, per_sample_rows
from test_shaped import check_model


@pytest.fixture
def rng():
    return np.random.default_rng(7)

INDICES = [(slice(None), None), (None,), (None, slice(None)), (Ellipsis, None), (0, None), (slice(1, None), None),
           (None, Ellipsis), (Ellipsis,), (None, None)]
MATRIX_INDICES = [(slice(None), None), (slice(None), None, slice(None)), (None,), (Ellipsis, None), (1, None),
                  (None, slice(None), 2), (slice(None), 0, None),
                  # slices of an axis
                  slice(1, None), (slice(None), slice(None, -1)), (slice(None), slice(None, None, 2)),
                  (slice(1, 3), 2), (0, slice(1, None)), (slice(None, None, -1),), (slice(None), slice(2, 0, -1)),
                  (slice(1, None), None)]


@pytest.mark.parametrize("index", INDICES)
def test_vector_indices_give_numpy_shapes_and_values(index):
    m = ld.Model()
    a = m.param("a", shape=3)
    value = np.array([0.5, -1.0, 2.0])
    expr = a[index]
    assert expr.shape == value[index].shape
    np.testing.assert_array_equal(evaluate(expr, {"a": value}), value[index])


@pytest.mark.parametrize("index", MATRIX_INDICES)
def test_matrix_indices_give_numpy_shapes_and_values(index):
    m = ld.Model()
    W = m.param("W", shape=(3, 4))
    value = np.arange(12.0).reshape(3, 4)
    expr = W[index]
    assert expr.shape == value[index].shape
    np.testing.assert_array_equal(evaluate(expr, {"W": value}), value[index])


def test_reshape_as_numpy():
    m = ld.Model()
    W = m.param("W", shape=(3, 4))
    value = np.arange(12.0).reshape(3, 4)
    for shape in [(12,), (-1,), (4, 3), (2, -1), (3, 2, 2), (1, 12)]:
        assert W.reshape(shape).shape == value.reshape(shape).shape == W.reshape(*shape).shape
        np.testing.assert_array_equal(evaluate(W.reshape(shape), {"W": value}), value.reshape(shape))
    for shape in [(5,), (-1, -1), (5, -1), (-2, 6)]:
        with pytest.raises(ModelError, match="reshape"):
            W.reshape(shape)


def test_sum_and_mean_methods_are_the_functions():
    m = ld.Model()
    W = m.param("W", shape=(3, 4))
    value = np.arange(12.0).reshape(3, 4)
    assert evaluate(W.sum(), {"W": value}) == value.sum()
    np.testing.assert_allclose(evaluate(W.mean(axis=0), {"W": value}), value.mean(axis=0), rtol=1e-15)
    np.testing.assert_allclose(evaluate(W.sum(axis=1), {"W": value}), value.sum(axis=1), rtol=1e-15)


def test_a_length_one_axis_stretches_where_it_cannot_hold_rows_of_data():
    m = ld.Model()
    a, b = m.param("a", shape=3), m.param("b", shape=4)
    W, row = m.param("W", shape=(3, 4)), m.param("row", shape=(1, 4))
    assert (a[:, None] * b[None, :]).shape == (3, 4)
    assert (a[:, None] * W).shape == (3, 4) and (W * a[:, None]).shape == (3, 4)
    assert (2.0 * a[:, None] + b).shape == (3, 4)  # still a new axis after an elementwise op
    assert (row * W).shape == (3, 4) and (row.T * a).shape == (4, 3)
    assert (np.ones((1, 4)) * W).shape == (3, 4)  # an array written into the model keeps its shape
    X = m.data("X", np.ones((1, 4)))  # one row today, maybe five after set_data
    with pytest.raises(ModelError, match="do not broadcast"):
        X * W
    with pytest.raises(ModelError, match="has length 3 but"):
        a + m.param("c", shape=1)  # vectors never stretch


def _lkj_model(Y, factor):
    m = ld.Model()
    L = m.param("L", ld.LKJCholesky(3, 2.0))
    sd = m.param("sd", ld.HalfNormal(2), shape=3)
    m.observe("Y", ld.MvNormal(m.data("zero", np.zeros(3)), scale_tril=factor(sd, L)), Y)
    return m


def test_scales_times_a_correlation_factor_as_numpy_writes_it(rng):
    """``sd[:, None] * L`` is Stan's ``diag_pre_multiply(sd, L)``: the same
    density and gradient; its likelihood is scipy's."""
    Y = rng.normal(size=(40, 3)) * [1.0, 2.0, 0.5]
    density = _lkj_model(Y, lambda sd, L: sd[:, None] * L).compile()
    stan = _lkj_model(Y, ld.diag_pre_multiply).compile()
    theta = rng.normal(size=density.dim) * 0.5
    lp, grad = density.log_density_gradient(theta, propto=False)
    lp_stan, grad_stan = stan.log_density_gradient(theta, propto=False)
    assert np.isclose(lp, lp_stan, rtol=1e-13)
    np.testing.assert_allclose(grad, grad_stan, rtol=1e-12, atol=1e-12)
    check_gradient(density, theta, rng)
    values = density.constrain(theta)
    factor = values["sd"][:, None] * values["L"]
    want = stats.multivariate_normal(np.zeros(3), factor @ factor.T).logpdf(Y)
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["Y"], want, rtol=1e-12)
    rows = per_sample_rows(density, theta, "Y")
    assert rows.shape == (40, density.dim)


def test_an_outer_product_of_vectors_in_a_potential(rng):
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=3)
    b = m.param("b", ld.Normal(0, 1), shape=4)
    target = m.data("T", rng.normal(size=(3, 4)))
    m.potential("fit", ld.sum(-ld.square(a[:, None] * b[None, :] - target)))
    check_model(m, rng)


def test_rows_of_data_with_a_new_axis_times_a_vector(rng):
    """``x[:, None] * w``: each row's scalar stretched over the row's event, the
    adjoint of the vector summed over rows and of the stretched axis per row."""
    n = 25
    x, Y = rng.normal(size=n), rng.normal(size=(n, 4))
    m = ld.Model()
    w = m.param("w", ld.Normal(0, 1), shape=4)
    c = m.param("c", ld.Normal(0, 1), shape=(1, 4))
    s = m.param("s", ld.HalfNormal(1))
    xs = m.data("x", x)
    m.observe("Y", ld.Normal(ld.tanh(xs[:, None] * w + c), s), Y)
    density, theta = check_model(m, rng, per_sample=("Y",))
    values = density.constrain(theta)
    mean = np.tanh(x[:, None] * values["w"] + values["c"])
    assert np.isclose(density.pointwise_log_likelihood(theta)["Y"].sum(),
                      stats.norm.logpdf(Y, mean, values["s"]).sum(), rtol=1e-12)
    # the rows keep a run-time length: new data of another length, no compile
    source = density.source
    x2, Y2 = rng.normal(size=2 * n), rng.normal(size=(2 * n, 4))
    density.set_data(x=x2, Y=Y2)
    mean = np.tanh(x2[:, None] * values["w"] + values["c"])
    assert density.source == source
    assert np.isclose(density.pointwise_log_likelihood(theta)["Y"].sum(),
                      stats.norm.logpdf(Y2, mean, values["s"]).sum(), rtol=1e-12)


def test_a_one_row_parameter_as_a_distribution_argument(rng):
    """``Normal(c, s)`` with ``c`` of shape (1, 4) over rows of (n, 4): numpy's
    broadcasting; the rows keep a run-time length."""
    Y = rng.normal(size=(30, 4))
    m = ld.Model()
    c = m.param("c", ld.Normal(0, 1), shape=(1, 4))
    s = m.param("s", ld.HalfNormal(1))
    m.observe("Y", ld.Normal(c, s), Y)
    density, theta = check_model(m, rng, per_sample=("Y",))
    values = density.constrain(theta)
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["Y"],
                               stats.norm.logpdf(Y, values["c"], values["s"]).sum(axis=1), rtol=1e-12)
    density.set_data(Y=Y[:7])
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["Y"],
                               stats.norm.logpdf(Y[:7], values["c"], values["s"]).sum(axis=1), rtol=1e-12)


def test_reshaped_values_in_a_likelihood(rng):
    """A row's event reshaped (the rows kept) and a flattened weight matrix."""
    n = 20
    X, Y = rng.normal(size=(n, 3)), rng.normal(size=(n, 2))
    m = ld.Model()
    W = m.param("W", shape=(3, 4))
    m.potential("prior", ld.sum(ld.Normal(0, 1).logpdf(W.reshape(-1))))
    rows = (m.data("X", X) @ W).reshape(n, 2, 2)
    m.observe("Y", ld.Normal(ld.sum(rows, axis=2), 1.0), Y)
    check_model(m, rng, per_sample=("Y",))


def test_the_rows_of_data_cannot_be_reshaped_away():
    m = ld.Model()
    X = m.data("X", np.ones((6, 2)))
    w = m.param("w", shape=2)
    m.potential("p", ld.sum(ld.Normal(0, 1).logpdf((X * w).reshape(3, 4))))
    with pytest.raises(ModelError, match="rows of data keep their axis"):
        m.compile()


def test_diag_as_numpy(rng):
    """``ld.diag`` of a vector and of a square matrix: numpy's values; a covariance
    factor ``ld.diag(sd) @ L`` is ``sd[:, None] * L``."""
    m = ld.Model()
    v, W = m.param("v", shape=3), m.param("W", shape=(3, 3))
    values = {"v": np.array([0.5, -1.0, 2.0]), "W": np.arange(9.0).reshape(3, 3)}
    np.testing.assert_array_equal(evaluate(ld.diag(v), values), np.diag(values["v"]))
    np.testing.assert_array_equal(evaluate(ld.diag(W), values), np.diag(values["W"]))
    with pytest.raises(ModelError, match="square matrix"):
        ld.diag(m.param("R", shape=(2, 3)))
    Y = rng.normal(size=(30, 3))
    density = _lkj_model(Y, lambda sd, L: ld.diag(sd) @ L).compile()
    other = _lkj_model(Y, lambda sd, L: sd[:, None] * L).compile()
    theta = rng.normal(size=density.dim) * 0.5
    lp, grad = density.log_density_gradient(theta)
    lp2, grad2 = other.log_density_gradient(theta)
    assert np.isclose(lp, lp2, rtol=1e-13) and np.allclose(grad, grad2, rtol=1e-12, atol=1e-12)
    m = ld.Model()
    S = m.param("S", ld.Normal(0, 1), shape=(3, 3))
    m.potential("trace", ld.sum(ld.square(ld.diag(S) - m.data("t", np.array([1.0, 2.0, 3.0])))))
    check_model(m, rng)


def test_reductions_take_tuples_of_axes_and_keepdims_as_numpy():
    m = ld.Model()
    A = m.param("A", shape=(2, 3, 4))
    value = np.arange(24.0).reshape(2, 3, 4) / 7.0
    for axis in [0, -1, (0, 2), (2, 0), (0, 1, 2), (1,)]:
        for keepdims in (False, True):
            for name, fn in (("sum", np.sum), ("mean", np.mean)):
                expr = getattr(ld, name)(A, axis=axis, keepdims=keepdims)
                want = fn(value, axis=axis, keepdims=keepdims)
                assert expr.shape == want.shape
                np.testing.assert_allclose(evaluate(expr, {"A": value}), want, rtol=1e-14)
            expr = ld.logsumexp(A, axis=axis, keepdims=keepdims)
            want = np.log(np.sum(np.exp(value), axis=axis, keepdims=keepdims))
            np.testing.assert_allclose(evaluate(expr, {"A": value}), want, rtol=1e-13)
    with pytest.raises(ModelError, match="named twice"):
        ld.sum(A, axis=(0, -3))
    with pytest.raises(ModelError, match="out of range"):
        ld.sum(A, axis=(0, 3))


def test_log_softmax_written_with_keepdims_is_log_softmax(rng):
    """``l - logsumexp(l, axis=-1, keepdims=True)`` over rows of data: the rows'
    length-1 axis stretched over each row's event; the same value and
    gradient as ``ld.log_softmax(l, axis=-1)``."""
    X, onehot = rng.normal(size=(40, 3)), np.eye(4)[rng.integers(0, 4, 40)]

    def model(log_probs):
        m = ld.Model()
        W = m.param("W", ld.Normal(0, 1), shape=(3, 4))
        logits = m.data("X", X) @ W
        m.potential("lik", ld.sum(log_probs(logits) * m.data("onehot", onehot), axis=1), observed=True)
        return m

    by_hand = model(lambda l: l - ld.logsumexp(l, axis=-1, keepdims=True))
    density, theta = check_model(by_hand, rng, per_sample=("lik",))
    built_in = model(lambda l: ld.log_softmax(l, axis=-1)).compile()
    lp, grad = density.log_density_gradient(theta)
    lp2, grad2 = built_in.log_density_gradient(theta)
    assert np.isclose(lp, lp2, rtol=1e-13) and np.allclose(grad, grad2, rtol=1e-12, atol=1e-12)
    with pytest.raises(ModelError, match="along the last axis only"):
        ld.softmax(m := ld.Model().param("V", shape=(2, 3)), axis=0)
    assert m.shape == (2, 3)


def test_stack_along_the_last_axis():
    m = ld.Model()
    a, b = m.param("a", shape=3), m.param("b", shape=3)
    values = {"a": np.array([1.0, 2.0, 3.0]), "b": np.array([-1.0, 0.5, 4.0])}
    for axis in (0, 1, -1, -2):
        expr = ld.stack([a, b], axis=axis)
        np.testing.assert_array_equal(evaluate(expr, values), np.stack([values["a"], values["b"]], axis=axis))
    with pytest.raises(ModelError, match="axis=2"):
        ld.stack([a, b], axis=2)


def test_concatenate_as_numpy():
    m = ld.Model()
    a, W = m.param("a", shape=3), m.param("W", shape=(2, 3))
    values = {"a": np.array([1.0, 2.0, 3.0]), "W": np.arange(6.0).reshape(2, 3)}
    cases = [(ld.concatenate([a, a * 2.0]), np.concatenate([values["a"], 2 * values["a"]])),
             (ld.concatenate([W, W], axis=1), np.concatenate([values["W"]] * 2, axis=1)),
             (ld.concatenate([np.zeros((2, 1)), W], axis=-1), np.concatenate([np.zeros((2, 1)), values["W"]], axis=1)),
             (ld.concatenate([W, a[None, :]]), np.concatenate([values["W"], values["a"][None, :]]))]
    for expr, want in cases:
        assert expr.shape == want.shape
        np.testing.assert_array_equal(evaluate(expr, values), want)
    with pytest.raises(ModelError, match="differ off axis 1"):
        ld.concatenate([W, m.param("V", shape=(3, 3))], axis=1)
    with pytest.raises(ModelError, match="one rank"):
        ld.concatenate([W, a])


def test_a_reference_category_of_zeros_in_a_multinomial_regression(rng):
    """PyMC's ``pt.concatenate([pt.zeros((p, 1)), beta], axis=1)``: the first
    category's coefficients fixed at 0; against the numpy reference, finite
    differences, the twin and per-sample rows."""
    X, classes = rng.normal(size=(60, 3)), rng.integers(0, 4, 60)
    m = ld.Model()
    beta = m.param("beta", ld.Normal(0, 1), shape=(3, 3))
    alpha = m.param("alpha", ld.Normal(0, 1), shape=3)
    logits = m.data("X", X) @ ld.concatenate([np.zeros((3, 1)), beta], axis=1) + ld.concatenate([[0.0], alpha])
    m.observe("c", ld.CategoricalLogit(logits), classes)
    density = m.compile()
    theta = rng.normal(size=density.dim) * 0.5
    check_gradient(density, theta, rng)
    lp, grad = density.log_density_gradient(theta)
    lp_twin, grad_twin = m.compile(backend="python").log_density_gradient(theta)
    assert np.isclose(lp, lp_twin, rtol=1e-12) and np.allclose(grad, grad_twin, rtol=1e-10, atol=1e-10)
    rows = per_sample_rows(density, theta, "c")
    np.testing.assert_allclose(rows.sum(axis=0), grad + theta, rtol=1e-9, atol=1e-9)  # priors: -theta
    values = density.constrain(theta)
    full = np.c_[np.zeros(3), values["beta"]]
    eta = X @ full + np.r_[0.0, values["alpha"]]
    want = (eta[np.arange(60), classes] - np.log(np.exp(eta).sum(axis=1))).sum()
    assert np.isclose(density.pointwise_log_likelihood(theta)["c"].sum(), want, rtol=1e-12)


def test_slices_of_matrices_in_a_likelihood(rng):
    """A slice of each row's event (``(X @ W)[:, 1:]``) and of a whole matrix's
    rows and columns; slicing the rows of data is refused by name."""
    X, Y = rng.normal(size=(30, 3)), rng.normal(size=(30, 2))
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(4, 4))
    s = m.param("s", ld.HalfNormal(1))
    Xn = m.data("X", X)
    rows = Xn @ W[1:, ::2] + W[0, :2]
    m.observe("Y", ld.Normal(ld.tanh(rows)[:, ::-1] + (Xn @ W[1:])[:, 1:3], s), Y)
    check_model(m, rng, per_sample=("Y",))
    bad = ld.Model()
    V = bad.param("V", shape=(3, 2))
    bad.observe("Y", ld.Normal((bad.data("X", X) @ V)[1:], 1.0), Y[1:])
    with pytest.raises(ModelError, match="slices the rows of data"):
        bad.compile()
