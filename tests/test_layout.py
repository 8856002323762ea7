"""Names in generated code: no user name is spelled as an identifier, so names
that Python folds together (NFKC) or that meet a generated prefix stay apart."""

import numpy as np
import pytest

import logdens as ld


def _two_parameters(first, second):
    m = ld.Model()
    a = m.param(first, ld.Gamma(2, 1), shape=2)
    b = m.param(second, ld.Normal(1, 2), shape=2, constraint=ld.positive)
    m.observe("y", ld.Normal(a + b, 1.5), np.array([0.3, 2.0]))
    return m.compile(backend="python")


def test_names_equal_after_nfkc_normalization_are_two_variables():
    """Python reads the ligature ``ﬁ`` as ``fi``: both were one variable."""
    theta = np.array([0.4, -1.2, 0.1, 0.3])
    unicode, ascii_ = _two_parameters("\ufb01", "fi"), _two_parameters("a", "b")
    assert unicode.log_density_gradient(theta)[0] == ascii_.log_density_gradient(theta)[0]
    np.testing.assert_array_equal(unicode.log_density_gradient(theta)[1], ascii_.log_density_gradient(theta)[1])
    assert unicode.param_names() == ["\ufb01[0]", "\ufb01[1]", "fi[0]", "fi[1]"]


def test_an_observed_term_with_a_non_ascii_name_has_its_outputs():
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    m.observe("\ufb01", ld.Normal(mu, 1.0), np.array([0.5, 1.5]))
    density = m.compile()
    theta = np.array([0.2])
    pointwise = density.pointwise_log_likelihood(theta)
    np.testing.assert_allclose(pointwise["\ufb01"], -0.5 * np.log(2 * np.pi) - 0.5 * (np.array([0.5, 1.5]) - 0.2) ** 2)
    assert density.per_sample_gradient(theta, "\ufb01").shape == (2, 1)


def test_term_names_that_meet_a_generated_prefix():
    """Terms ``y`` and ``sparse_y`` both made ``per_sample_sparse_y``."""
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    s = m.param("s", ld.HalfNormal(1))
    m.observe("y", ld.Normal(mu, 1.0), np.array([0.5, 1.5, 2.0]))
    m.observe("sparse_y", ld.Normal(mu, s), np.array([-1.0, 1.0]))
    density = m.compile(backend="python")
    theta = np.array([0.2, -0.3])
    for name, n in (("y", 3), ("sparse_y", 2)):
        dense = density.per_sample_gradient(theta, name)
        sparse = density.per_sample_gradient(theta, name, sparse=True)
        assert dense.shape == (n, 2)
        np.testing.assert_allclose(sparse.toarray(), dense, rtol=1e-14)


def test_data_named_like_generated_variables():
    """``n_<data>`` was ``n_chunked`` of the parallel variant, which holds the
    length of the term being chunked: a term over 5 rows before one over data
    ``chunked`` of length 3 made the second read 5 rows of 3."""
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    other, x = np.linspace(-1, 1, 5), np.array([0.5, 1.5, 2.0])
    m.observe("a", ld.Normal(mu, 1.0), other)
    m.observe("y", ld.Normal(mu, 1.0), m.data("chunked", x))
    density = m.compile(backend="python", parallel=True)
    theta = np.array([0.4])
    expected = -0.5 * 0.16 - 0.5 * np.sum((other - 0.4) ** 2) - 0.5 * np.sum((x - 0.4) ** 2)
    assert density.log_density(theta) == pytest.approx(expected, rel=1e-13)
    assert density.log_density_gradient(theta)[0] == pytest.approx(expected, rel=1e-13)


def test_index_arrays_named_like_a_block_view():
    """The block view of index ``g`` was ``i_g_b0``: index array ``g_b0`` too."""
    rng = np.random.default_rng(5)
    g, h, y = rng.integers(0, 3, 300), rng.integers(0, 4, 300), rng.normal(size=300)
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=3)
    b = m.param("b", ld.Normal(0, 1), shape=4)
    m.observe("y", ld.Normal(a[m.data("g", g)] + b[m.data("g_b0", h)], 1.0), y)
    density = m.compile(backend="python")
    va, vb = rng.normal(size=3), rng.normal(size=4)
    expected = -0.5 * np.sum(va ** 2) - 0.5 * np.sum(vb ** 2) - 0.5 * np.sum((y - va[g] - vb[h]) ** 2)
    assert density.log_density(np.concatenate([va, vb])) == pytest.approx(expected, rel=1e-12)
