"""Parameter lengths read at run time (``logdens.layout``): models that differ
only in the length of a vector parameter generate the same source, share one
compiled module, and each still evaluates correctly."""

import numpy as np
import pytest

import logdens as ld
from engine_helpers import check_gradient, per_sample_rows
from logdens.engine import generate_source, lower


def hierarchical(J, z_first=False):
    """``y ~ Normal(mu + tau * z[g], 1)``, ``z`` declared first or last."""
    rng = np.random.default_rng(0)
    m = ld.Model()
    z = m.param("z", ld.Normal(0, 1), shape=J) if z_first else None
    mu = m.param("mu", ld.Normal(0, 5))
    tau = m.param("tau", ld.HalfNormal(5))
    z = m.param("z", ld.Normal(0, 1), shape=J) if z is None else z
    m.observe("y", ld.Normal(mu + tau * z[m.data("g", rng.integers(0, J, 300))], 1.0), rng.normal(size=300))
    return m


def positive_vector(J):
    """A positive vector gathered as scales, then a scalar after it."""
    rng = np.random.default_rng(1)
    m = ld.Model()
    s = m.param("s", ld.HalfNormal(1), shape=J)
    mu = m.param("mu", ld.Normal(0, 1))
    m.observe("y", ld.Normal(mu, s[m.data("g", rng.integers(0, J, 200))]), rng.normal(size=200))
    return m


def vector_location(J):
    """A vector prior whose location is another vector, read at the row (and by data of length J)."""
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=J)
    sd = m.param("sd", ld.HalfNormal(1))
    b = m.param("b", ld.Normal(a, sd), shape=J)
    m.observe("y", ld.Normal(b, 1.0), np.linspace(-1, 1, J))
    return m


def interval_vector(J):
    m = ld.Model()
    p = m.param("p", ld.Beta(2, 2), shape=J)
    m.observe("y", ld.Bernoulli(p), (np.arange(J) % 2).astype(float))
    return m


def logistic(D, J=4):
    """``X @ beta`` (``beta`` of length ``D``, compiled in) beside group effects
    ``u[g]`` of length ``J`` (read at run time)."""
    rng = np.random.default_rng(2)
    m = ld.Model()
    beta = m.param("beta", ld.Normal(0, 1), shape=D)
    u = m.param("u", ld.Normal(0, 1), shape=J)
    alpha = m.param("alpha", ld.Normal(0, 1))
    X = m.data("X", rng.normal(size=(300, D)))
    eta = X @ beta + alpha + u[m.data("g", rng.integers(0, J, 300))]
    m.observe("y", ld.BernoulliLogit(eta), (rng.random(300) < 0.5).astype(float))
    return m


def summed(J):
    """A vector under ``ld.sum`` and ``ld.mean`` (its run-time length), with a simplex (an event: its length stays fixed) after it."""
    m = ld.Model()
    z = m.param("z", shape=J)
    w = m.param("w", ld.Dirichlet(np.ones(3)))
    m.potential("p", -ld.sum(z ** 2) / 2 - ld.mean(ld.exp(z)))
    m.observe("c", ld.Categorical(w), np.array([0, 1, 2, 1]))
    return m


MODELS = {"hierarchical, z last": hierarchical, "hierarchical, z first": lambda J: hierarchical(J, True),
          "positive vector": positive_vector, "vector location": vector_location,
          "interval vector": interval_vector, "logistic": lambda J: logistic(3, J), "sum and simplex": summed}
#: Observed terms with per-sample rows to check.
OBSERVED = {"hierarchical, z last": "y", "hierarchical, z first": "y", "positive vector": "y",
            "vector location": "y", "interval vector": "y", "logistic": "y"}


def _source(model):
    return generate_source(*lower(model))


@pytest.mark.parametrize("kind", MODELS)
def test_models_differing_in_a_vector_length_generate_the_same_source(kind):
    sources = {J: _source(MODELS[kind](J)) for J in (2, 5, 9)}
    assert sources[2] == sources[5] == sources[9]


def test_a_matrix_parameter_keeps_its_shape_compiled_in_and_a_vector_beside_it_does_not():
    """Parameters with two axes keep their sizes in the source (their own
    blocks); a vector in the same model is still read at run time."""
    def model(J, K):
        m = ld.Model()
        z = m.param("z", ld.Normal(0, 1), shape=J)
        B = m.param("B", ld.Normal(0, 1), shape=(K, 2))
        m.observe("y", ld.Normal(z, 1.0), np.zeros(J))
        m.potential("q", -ld.sum(B[0] ** 2))
        return m
    assert _source(model(3, 2)) == _source(model(6, 2))
    assert _source(model(3, 2)) != _source(model(3, 4))


def test_a_data_matrix_products_vector_keeps_its_length_compiled_in():
    """``X @ beta``: its rows' short loops over the columns stay constant-length."""
    assert _source(logistic(3)) != _source(logistic(5))


@pytest.mark.parametrize("kind", ["hierarchical, z first", "logistic", "sum and simplex"])
def test_lengths_share_one_compiled_module(kind, tmp_path):
    small, large = (MODELS[kind](J).compile(cache_dir=tmp_path) for J in (3, 8))
    assert small._module is large._module
    assert len(list(tmp_path.glob("logdens_*.py"))) == 1


@pytest.mark.parametrize("kind", MODELS)
def test_each_length_evaluates_as_plain_python_and_finite_differences(kind, tmp_path):
    rng = np.random.default_rng(3)
    for J in (3, 8):
        model = MODELS[kind](J)
        density, twin = model.compile(cache_dir=tmp_path), model.compile(backend="python")
        theta = rng.normal(scale=0.5, size=density.dim)
        lp, grad = density.log_density_gradient(theta)
        lp_py, grad_py = twin.log_density_gradient(theta)
        np.testing.assert_allclose(lp, lp_py, rtol=1e-12)
        np.testing.assert_allclose(grad, grad_py, rtol=1e-10, atol=1e-12)
        check_gradient(density, theta, rng)
        lps, grads = density.log_density_gradient_batch(np.array([theta, 0.5 * theta]))
        np.testing.assert_allclose(lps[0], lp, rtol=1e-12)
        np.testing.assert_allclose(grads[0], grad, rtol=1e-10, atol=1e-12)
        if kind in OBSERVED:
            name = OBSERVED[kind]
            rows = per_sample_rows(density, theta, name)
            np.testing.assert_allclose(rows, per_sample_rows(twin, theta, name), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(density.pointwise_log_likelihood(theta)[name],
                                       twin.pointwise_log_likelihood(theta)[name], rtol=1e-12)


def test_the_parallel_variant_reads_the_lengths(tmp_path):
    """``core_parallel`` chunks a vector prior's plate by its run-time length."""
    rng = np.random.default_rng(4)
    for J in (3, 40):
        model = hierarchical(J, z_first=True)
        serial, parallel = model.compile(cache_dir=tmp_path), model.compile(cache_dir=tmp_path, parallel=True)
        theta = rng.normal(size=serial.dim)
        lp, grad = serial.log_density_gradient(theta)
        lp_par, grad_par = parallel.log_density_gradient(theta)
        np.testing.assert_allclose(lp_par, lp, rtol=1e-12)
        np.testing.assert_allclose(grad_par, grad, rtol=1e-10, atol=1e-12)
