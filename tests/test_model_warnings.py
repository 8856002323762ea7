"""Build-time warnings (``logdens.model_warnings``): a parameter whose values can
leave a distribution argument's constraint, and a parameter with no prior."""

import warnings

import numpy as np
import pytest

import logdens as ld

Y = np.array([0.3, -0.2, 1.1])


def model_warnings(m):
    """The ModelWarning messages of compiling ``m`` (others pass)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m.compile(backend="python")
    return [str(w.message) for w in caught if w.category is ld.ModelWarning]


def test_a_real_parameter_as_a_scale_is_named_with_its_support():
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 5))
    b = m.param("b", ld.Normal(0, 5))
    m.observe("y", ld.Normal(a, b), Y)
    (message,) = model_warnings(m)
    assert message.startswith("parameter 'b' (support: real, any number) is the scale of Normal in term 'y', "
                              "which must be > 0.0: the sampler rejects every draw of 'b' outside that")
    assert "ld.exp(b)" in message


def test_a_real_parameter_as_a_probability_or_a_rate_of_a_prior():
    m = ld.Model()
    p = m.param("p", ld.Normal(0, 1))
    r = m.param("r", ld.Normal(0, 1))
    m.param("lam", ld.Exponential(r))
    m.observe("k", ld.Bernoulli(p), np.array([0, 1, 1]))
    got = model_warnings(m)
    assert len(got) == 2
    assert any("'r' (support: real, any number) is the rate of Exponential in term 'lam', which must be > 0.0"
               in g for g in got)
    assert any("'p' (support: real, any number) is the p of Bernoulli in term 'k', which must be in [0.0, 1.0]"
               in g for g in got)


def test_a_parameter_with_no_prior_is_improper():
    m = ld.Model()
    c = m.param("c")
    m.observe("y", ld.Normal(c, 1.0), Y)
    (message,) = model_warnings(m)
    assert message.startswith("parameter 'c' has no prior: its density is flat over an unbounded set "
                              "(support: real, any number), an improper prior")
    assert "m.param('c', ld.Normal(0, 10))" in message


def test_no_warning_for_fitting_supports_transforms_bounds_and_potentials():
    """A positive parameter as a scale, ld.exp of a real one, a parameter of a
    bounded constraint with no prior (a proper flat density), one whose density
    a potential gives, and a real parameter as a location: no warning."""
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 5))
    s = m.param("s", ld.HalfNormal(1.0))
    b = m.param("b", ld.Normal(0, 1))
    u = m.param("u", constraint=ld.interval(0.0, 1.0))
    x = m.param("x")
    m.potential("px", -0.5 * x * x)
    m.observe("y", ld.Normal(a, s), Y)
    m.observe("z", ld.Normal(a + x, ld.exp(b)), Y)
    m.observe("k", ld.Bernoulli(u), np.array([0, 1, 1]))
    assert model_warnings(m) == []


def test_each_warning_once_per_model():
    m = ld.Model()
    b = m.param("b", ld.Normal(0, 5))
    m.observe("y", ld.Normal(0.0, b), Y)
    assert len(model_warnings(m)) == 1
    assert model_warnings(m) == []
    with pytest.warns(ld.ModelWarning, match="'b'"):  # a new model warns again
        other = ld.Model()
        other.observe("y", ld.Normal(0.0, other.param("b", ld.Normal(0, 5))), Y)
        other.compile(backend="python")
