"""Model building: shapes, nodes of another model, and a compiled density that
later edits of the model or of the caller's arrays do not change."""

import numpy as np
from scipy import stats
import pytest

import logdens as ld
from logdens.expr import ModelError

from engine_helpers import check_gradient


@pytest.mark.parametrize("shape", [2.7, (3, 1.5), -1, "3", True])
def test_shapes_must_be_non_negative_integers(shape):
    m = ld.Model()
    with pytest.raises(ModelError, match=r"parameter 'z': shape=.*non-negative integers"):
        m.param("z", shape=shape)


def test_integer_like_shapes_are_accepted():
    m = ld.Model()
    assert m.param("a", shape=np.int64(3)).shape == (3,)
    assert m.param("b", shape=(2,)).shape == (2,)


def test_parameters_and_data_of_another_model_are_named_in_the_error():
    first, second = ld.Model(), ld.Model()
    mu = first.param("mu")
    x = first.data("x", np.zeros(3))
    second.param("mu")
    with pytest.raises(ModelError, match=r"term 'y': parameter 'mu' belongs to another model"):
        second.observe("y", ld.Normal(mu, 1.0), np.zeros(3))
    with pytest.raises(ModelError, match=r"potential 'p': parameter 'mu' belongs to another model|"
                                         r"term 'p': parameter 'mu' belongs to another model"):
        second.potential("p", -mu * mu)
    with pytest.raises(ModelError, match=r"term 'w': data 'x' belongs to another model"):
        second.observe("w", ld.Normal(0.0, 1.0), x)
    with pytest.raises(ModelError, match=r"deterministic 'd': parameter 'mu' belongs to another model"):
        second.deterministic("d", mu + 1.0)


def test_two_dimensional_observed_data_has_one_observation_per_row():
    """A (4, 2) array: 4 observations (rows) of 2 values; a mismatched mean is refused."""
    y = np.arange(8.0).reshape(4, 2)
    m = ld.Model()
    mu = m.param("mu", shape=2)
    m.observe("y", ld.Normal(mu, 1.0), y)
    density = m.compile()
    theta = np.array([1.0, 2.0])
    assert np.isclose(density.log_density(theta, propto=False), stats.norm.logpdf(y, theta).sum(), rtol=1e-13)
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["y"],
                               stats.norm.logpdf(y, theta).sum(axis=1), rtol=1e-13)
    with pytest.raises(ModelError, match=r"term 'y2': Normal arguments: shapes \(4, 2\).*do not broadcast"):
        m.observe("y2", ld.Normal(m.param("nu", shape=3), 1.0), y)


def _normal_model(y):
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 10))
    m.deterministic("shifted", mu + m.data("shift", y))
    m.observe("y", ld.Normal(mu, 1.0), y)
    return m


def test_terms_added_after_compile_do_not_change_the_density():
    y = np.array([0.5, 1.5, -0.5])
    m = _normal_model(y)
    density = m.compile(backend="python")
    before = density.log_density_gradient(np.array([0.3]))
    m.param("extra", ld.Normal(0, 1))
    m.observe("z", ld.Normal(0.0, 1.0), np.ones(2))
    density.set_data(y=y + 1.0)
    density.set_data(y=y)
    lp, grad = density.log_density_gradient(np.array([0.3]))
    assert lp == before[0] and np.array_equal(grad, before[1])
    assert set(density.constrain(np.array([0.3]))) == {"mu", "shifted"}
    assert list(density.pointwise_log_likelihood(np.array([0.3]))) == ["y"]


def test_the_callers_arrays_are_copied():
    """An in-place edit of an array given to the model or to ``set_data`` changes
    neither the density nor the deterministics: both keep what they were given."""
    y = np.array([0.5, 1.5, -0.5])
    m = _normal_model(y)
    density = m.compile(backend="python")
    theta = np.array([0.3])
    lp, shifted = density.log_density(theta), density.constrain(theta)["shifted"].copy()
    y[:] = 100.0
    assert density.log_density(theta) == lp
    np.testing.assert_array_equal(density.constrain(theta)["shifted"], shifted)
    new = np.array([1.0, 2.0])
    density.set_data(y=new, shift=new)
    lp_new = density.log_density(theta)
    new[:] = -50.0
    assert density.log_density(theta) == lp_new
    np.testing.assert_array_equal(density.constrain(theta)["shifted"], [1.3, 2.3])


def test_python_keywords_name_variables():
    """Generated code spells a name only inside identifiers of its own
    (``w_lambda_1``), so ``lambda`` (the usual name of a rate) and other keywords
    name parameters, data and terms: the gradient against the Python twin and
    central differences, and NUTS draws named ``lambda``."""
    y = np.array([1, 0, 3, 2])
    m = ld.Model()
    lam = m.param("lambda", ld.Gamma(2.0, 1.0))
    effect = m.param("if", ld.Normal(0, 1), shape=2)
    group = m.data("class", np.array([0, 1, 1, 0]))
    m.deterministic("None", 2.0 * lam)
    m.observe("yield", ld.Poisson(lam * ld.exp(effect[group])), y)
    m.potential("pass", -0.5 * lam * lam)
    density, twin = m.compile(), m.compile(backend="python")
    theta = np.array([0.3, -0.4, 0.2])
    lp, grad = density.log_density_gradient(theta)
    lp_py, grad_py = twin.log_density_gradient(theta)
    assert lp == pytest.approx(lp_py, rel=1e-13)
    np.testing.assert_allclose(grad, grad_py, rtol=1e-12)
    check_gradient(density, theta, np.random.default_rng(0))
    assert density.constrain(theta)["None"] == pytest.approx(2.0 * np.exp(0.3))
    density.set_data(**{"class": np.array([1, 1, 0, 0])})
    idata = ld.nuts(density, draws=30, tune=30, chains=1, seed=1, progress=False)
    assert np.all(idata.posterior["lambda"].values > 0.0) and idata.log_likelihood["yield"].shape == (1, 30, 4)


def test_names_that_generated_code_cannot_spell_say_why():
    m = ld.Model()
    for name in ("two words", "_private", "1x", 3):
        with pytest.raises(ModelError, match=r"must be a Python identifier not starting with '_' \(it is part "
                                             r"of variable names in generated code\)"):
            m.param(name)


def test_a_name_in_use_names_the_failing_call():
    """``m.data("y", ...)`` then ``m.observe("y", dist, array)``: the error names
    the observe call, the data that holds the name, and the fix."""
    m = ld.Model()
    y = m.data("y", np.zeros(3))
    m.param("mu")
    with pytest.raises(ModelError, match=r"observe 'y': the name is already used in this model by data 'y'; "
                                         r"to observe that array pass its node"):
        m.observe("y", ld.Normal(0, 1), np.zeros(3))
    with pytest.raises(ModelError, match=r"deterministic 'mu': the name is already used in this model by "
                                         r"parameter 'mu'"):
        m.deterministic("mu", 2.0 * y)
    with pytest.raises(ModelError, match=r"observe 'z': complex data are not supported"):
        m.observe("z", ld.Normal(0, 1), np.array([1j]))
    m.observe("y", ld.Normal(0, 1), y)  # the data node itself: the term of that name observes it
    assert [t.name for t in m.terms] == ["y"]


def test_observe_takes_pymcs_observed_keyword():
    """``m.observe(name, dist, observed=y)`` is ``m.observe(name, dist, y)``; both,
    or neither, is an error saying so."""
    y = np.array([0.3, -1.2, 0.8])
    densities = []
    for spelling in ({"observed": y}, {"value": y}):
        m = ld.Model()
        mu = m.param("mu", ld.Normal(0, 1))
        m.observe("y", ld.Normal(mu, 1.0), **spelling)
        densities.append(m.compile(backend="python"))
    theta = np.array([0.4])
    want = stats.norm(0, 1).logpdf(0.4) + stats.norm(0.4, 1).logpdf(y).sum()
    for density in densities:
        assert density.log_density(theta, propto=False) == pytest.approx(want, rel=1e-12)
    m = ld.Model()
    with pytest.raises(ModelError, match=r"observe 'y': give the observed data once, as the third argument or "
                                         r"as observed= \(PyMC's spelling\); got both"):
        m.observe("y", ld.Normal(0.0, 1.0), y, observed=y)
    with pytest.raises(ModelError, match=r"observe 'y': give the observed data once.*got neither"):
        m.observe("y", ld.Normal(0.0, 1.0))
