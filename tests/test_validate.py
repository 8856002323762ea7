"""Bad models and bad data get clear errors naming the term, array, index and value."""

import numpy as np
import pytest
from scipy import stats

import logdens as ld
from logdens.expr import ModelError


def poisson_model(counts, group, n_groups=3):
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=n_groups)
    g = m.data("group", group)
    m.observe("c", ld.PoissonLog(a[g]), counts)
    return m


def test_names_must_be_identifiers():
    m = ld.Model()
    for bad in ("1x", "a-b", "x y", "_private", "θ+"):
        with pytest.raises(ModelError, match="identifier"):
            m.param(bad)
    with pytest.raises(ModelError, match="identifier"):
        m.data("my data", np.zeros(3))


def test_names_must_be_unique():
    m = ld.Model()
    m.param("mu")
    with pytest.raises(ModelError, match="already used"):
        m.data("mu", np.zeros(2))


def test_nan_in_data_is_named_with_its_index():
    """In a predictor (NaN in an observed array is imputed: test_missing.py)."""
    x = np.array([0.1, np.nan, 0.3])
    m = ld.Model()
    mu = m.param("mu")
    m.observe("y", ld.Normal(mu * m.data("x", x), 1.0), np.zeros(3))
    with pytest.raises(ModelError, match=r"data 'x': x\[1\]=nan, must be finite; .* must be modelled"):
        m.compile()


def test_negative_and_fractional_counts_are_rejected():
    with pytest.raises(ModelError, match=r"term 'c': PoissonLog value x: c\[2\]=-1.0, must be >= 0.0"):
        poisson_model(np.array([1, 2, -1, 0]), np.array([0, 1, 2, 0])).compile()
    with pytest.raises(ModelError, match=r"c\[0\]=1.5, .*integer"):
        poisson_model(np.array([1.5, 2, 1, 0]), np.array([0, 1, 2, 0])).compile()


def test_index_out_of_bounds_and_non_integer_index():
    with pytest.raises(ModelError, match=r"term 'c': index group\[3\]=3 is out of bounds for a of length 3"):
        poisson_model(np.array([1, 2, 1, 0]), np.array([0, 1, 2, 3])).compile()
    density = poisson_model(np.array([1, 2, 1, 0]), np.array([0, 1, 2, 0])).compile()
    with pytest.raises(ModelError, match="integer dtype"):
        density.set_data(group=np.array([0.0, 1.0, 2.0, 0.0]))
    with pytest.raises(ModelError, match=r"group\[1\]=-1"):
        density.set_data(group=np.array([0, -1, 2, 0]))


def test_length_mismatch_names_both_lengths():
    density = poisson_model(np.array([1, 2, 1, 0]), np.array([0, 1, 2, 0])).compile()
    with pytest.raises(ModelError, match=r"term 'c': c has length 5 but a\[group\] has length 4"):
        density.set_data(c=np.array([1, 2, 1, 0, 4]))
    density.set_data(c=np.array([1, 2, 1, 0, 4]), group=np.array([0, 1, 2, 0, 1]))  # consistent: fine


def test_unknown_data_name_in_set_data():
    density = poisson_model(np.array([1, 2]), np.array([0, 1])).compile()
    with pytest.raises(ModelError, match=r"unknown data \['counts'\]"):
        density.set_data(counts=np.array([1]))


def test_invalid_data_parameter_is_named():
    m = ld.Model()
    mu = m.param("mu")
    sigma = m.data("sigma", np.array([1.0, -2.0, 3.0]))
    m.observe("y", ld.Normal(mu, sigma), np.zeros(3))
    with pytest.raises(ModelError, match=r"term 'y': Normal parameter scale: sigma\[1\]=-2.0, must be > 0"):
        m.compile()


def test_shapes_that_do_not_broadcast():
    m = ld.Model()
    z = m.param("z", shape=4)
    with pytest.raises(ModelError, match=r"z has length 4 but array\(3,\) has length 3"):
        z + np.zeros(3)


def test_matrix_columns_must_match():
    m = ld.Model()
    beta = m.param("beta", shape=3)
    with pytest.raises(ModelError, match=r"\(10, 2\) and \(3,\)"):
        m.data("X", np.zeros((10, 2))) @ beta


def test_discrete_parameters_are_rejected():
    m = ld.Model()
    with pytest.raises(ModelError, match="Poisson has an infinite support"):
        m.param("k", ld.Poisson(3.0))


def test_potential_must_be_scalar():
    m = ld.Model()
    z = m.param("z", shape=3)
    with pytest.raises(ModelError, match=r"ld.sum"):
        m.potential("p", z * 2)


def test_observed_value_must_be_data():
    m = ld.Model()
    mu = m.param("mu")
    with pytest.raises(ModelError, match="must be data"):
        m.observe("y", ld.Normal(0, 1), mu + 1.0)


def test_set_data_rechecks_a_slice_of_a_gather():
    """The kernel reads ``a[g][0:5]`` rows 0..4 of the gather: ``g`` of length 2
    wrote gradients out of bounds (a segfault) before ``set_data`` checked it.
    The slice now has numpy's bounds on the current length (2 rows), which no
    longer agrees with y's 5."""
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=3)
    g = m.data("g", np.array([0, 1, 2, 0, 1, 2]))
    m.observe("y", ld.Normal(a[g][0:5], 1), np.zeros(5))
    density = m.compile()
    with pytest.raises(ModelError, match=r"term 'y': y has length 5 but a\[g\]\[0:5\] has length 2"):
        density.set_data(g=np.array([0, 1]))
    lp, grad = density.log_density_gradient(np.ones(3), propto=False)  # the old data are kept
    assert lp == pytest.approx(8 * stats.norm.logpdf(1.0), rel=1e-13)
    np.testing.assert_allclose(grad, [-1.0 - 2.0, -1.0 - 2.0, -1.0 - 1.0], rtol=1e-13)


def test_set_data_rechecks_a_slice_of_data():
    m = ld.Model()
    mu = m.param("mu")
    x = m.data("x", np.arange(10.0))
    m.observe("y", ld.Normal(mu + x[2:8], 1.0), np.zeros(6))
    density = m.compile()
    with pytest.raises(ModelError, match=r"term 'y': y has length 6 but \(mu \+ x\[2:8\]\) has length 1"):
        density.set_data(x=np.arange(3.0))
    density.set_data(x=np.arange(10.0) + 1.0, y=np.zeros(6))
    density.set_data(x=np.arange(12.0), y=np.zeros(6))  # x[2:8] of 12: still 6 entries, read from 2


def test_an_element_counted_from_the_end_follows_the_data():
    """``x[-1]`` is the last element of x's current length (numpy's reading), and
    ``x[4]`` must lie inside it: a shorter x is refused, never read out of bounds."""
    m = ld.Model()
    mu = m.param("mu")
    x = m.data("x", np.arange(10.0))
    m.observe("y", ld.Normal(mu + x[-1] - x[4], 1.0), np.zeros(6))
    for backend in ("python", "cpu"):
        density = m.compile(backend=backend)
        assert density.log_density(np.zeros(1)) == pytest.approx(-0.5 * 6 * 25.0)  # 9 - 4
        density.set_data(x=np.arange(7.0) * 2.0)
        assert density.log_density(np.zeros(1)) == pytest.approx(-0.5 * 6 * 16.0)  # 12 - 8
        with pytest.raises(ModelError, match=r"term 'y': x\[4\] is out of bounds for x of length 3"):
            density.set_data(x=np.arange(3.0))
        assert density.log_density(np.zeros(1)) == pytest.approx(-0.5 * 6 * 16.0)  # the old data are kept


def test_a_plate_inside_a_sum_is_checked():
    """``ld.sum`` makes a potential scalar; the lengths below it are checked all the same."""
    m = ld.Model()
    mu = m.param("mu", shape=3)
    x = m.data("x", np.array([1.0, 2.0, 3.0]))
    m.potential("p", ld.sum(-0.5 * ld.square(x - mu)))
    density = m.compile()
    with pytest.raises(ModelError, match=r"term 'p': x has length 4 but mu has length 3|"
                                         r"term 'p': mu has length 3 but x has length 4"):
        density.set_data(x=np.zeros(4))


def test_indices_read_only_by_a_deterministic_are_checked():
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=3)
    g = m.data("g", np.array([0, 2]))
    m.deterministic("picked", a[g])
    density = m.compile()
    with pytest.raises(ModelError, match=r"deterministic 'picked': index g\[1\]=-1 is out of bounds"):
        density.set_data(g=np.array([0, -1]))
    m2 = ld.Model()
    a2 = m2.param("a", ld.Normal(0, 1), shape=3)
    m2.deterministic("picked", a2[m2.data("g", np.array([3]))])
    with pytest.raises(ModelError, match=r"deterministic 'picked': index g\[0\]=3 is out of bounds"):
        m2.compile()


def test_complex_data_are_refused():
    m = ld.Model()
    with pytest.raises(ModelError, match=r"data 'x': complex data are not supported"):
        m.data("x", np.array([1.0 + 2.0j]))
    mu = m.param("mu")
    m.observe("y", ld.Normal(mu, 1.0), np.zeros(2))
    density = m.compile()
    with pytest.raises(ModelError, match=r"set_data: data 'y': complex"):
        density.set_data(y=np.array([1.0 + 1.0j, 0.0]))
    with pytest.raises(ModelError, match=r"set_data: data 'y': must be a numeric array, got dtype <U1"):
        density.set_data(y=np.array(["a", "b"]))
