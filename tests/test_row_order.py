"""Rows sorted by their group index at set_data (logdens.row_order): which terms
are sorted, and that every output comes back in the user's order.

Tolerances: sorting changes only the order in which rows are summed, so
sums agree to 1e-12 relative; a row's own value is computed by the same
operations in either order and agrees to 1e-13.
"""

import numpy as np
import pytest
from scipy import stats

import logdens as ld
from engine_helpers import check_gradient, per_sample_rows

N, GROUPS = 300, 7


def data(seed=0, order=None):
    rng = np.random.default_rng(seed)
    group = rng.integers(0, GROUPS, N)
    x, counts = rng.normal(size=N), rng.poisson(2.0, N)
    order = np.arange(N) if order is None else order
    return group[order], x[order], counts[order]


def hierarchical(group, x, counts):
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    sigma = m.param("sigma", ld.HalfNormal(1))
    z = m.param("z", ld.Normal(0, 1), shape=GROUPS)
    b = m.param("b", ld.Normal(0, 1))
    m.observe("c", ld.PoissonLog((mu + sigma * z)[m.data("g", group)] + b * m.data("x", x)), counts)
    return m


def test_a_gathering_term_is_sorted_with_its_row_aligned_arrays():
    density = hierarchical(*data()).compile()
    assert density._row_order.terms == {"c": "g"}
    assert density._row_order.arrays == {"g": {"g", "x", "c"}}


def terms_sorted(build):
    m = ld.Model()
    build(m)
    return m.compile()._row_order.terms


def test_terms_that_cannot_be_sorted():
    group, x, counts = data()

    def rate_vector_at_the_rows(m):  # rate[i] must stay with row i
        a, rate = m.param("a", shape=GROUPS), m.param("rate", shape=N)
        m.observe("c", ld.PoissonLog(a[m.data("g", group)] + rate), counts)

    def x_also_gathered_elsewhere(m):  # x is read by another index too
        a, xs = m.param("a", shape=GROUPS), m.data("x", x)
        m.observe("c", ld.PoissonLog(a[m.data("g", group)] + xs), counts)
        m.observe("y", ld.Normal(xs[m.data("h", np.arange(N)[::-1].copy())], 1.0), x)

    def x_shared_with_another_index(m):
        a, xs = m.param("a", shape=GROUPS), m.data("x", x)
        m.observe("c", ld.PoissonLog(a[m.data("g", group)] + xs), counts)
        m.observe("d", ld.PoissonLog(a[m.data("h", group[::-1].copy())] + xs), counts)

    def nothing_scattered(m):  # a gather of data only: no adjoint to scatter
        s = m.param("s", ld.HalfNormal(1))
        m.observe("y", ld.Normal(m.data("xg", x)[m.data("g", group % N)], s), x)

    for build in (rate_vector_at_the_rows, x_also_gathered_elsewhere, x_shared_with_another_index,
                  nothing_scattered):
        assert terms_sorted(build) == {}, build.__name__


def test_two_terms_sorted_by_the_same_index_share_their_arrays():
    group, x, counts = data()

    def build(m):
        a = m.param("a", shape=GROUPS)
        s = m.param("s", ld.HalfNormal(1))
        g, xs = m.data("g", group), m.data("x", x)
        m.observe("c", ld.PoissonLog(a[g] + xs), counts)
        m.observe("y", ld.Normal(a[g], s), xs)

    assert terms_sorted(build) == {"c": "g", "y": "g"}


@pytest.fixture(scope="module")
def pair():
    """The same rows given sorted by group and shuffled."""
    by_group = np.argsort(data()[0], kind="stable")
    shuffle = np.random.default_rng(3).permutation(N)
    return hierarchical(*data(order=by_group)).compile(), hierarchical(*data(order=shuffle)).compile(), \
        by_group, shuffle


def test_value_and_gradient_do_not_depend_on_the_order_given(pair):
    sorted_rows, shuffled, _, _ = pair
    assert shuffled.fdata is not shuffled._row_data[0]  # packed twice: sorted, and as given
    assert sorted_rows.fdata is sorted_rows._row_data[0]  # sorted already: packed once
    theta = np.random.default_rng(1).normal(scale=0.5, size=shuffled.dim)
    lp, grad = shuffled.log_density_gradient(theta)
    lp_sorted, grad_sorted = sorted_rows.log_density_gradient(theta)
    assert lp == pytest.approx(lp_sorted, rel=1e-12)
    np.testing.assert_allclose(grad, grad_sorted, rtol=1e-12, atol=1e-12)
    check_gradient(shuffled, theta, np.random.default_rng(2))


def test_per_row_outputs_come_back_in_the_users_order(pair):
    sorted_rows, shuffled, by_group, shuffle = pair
    theta = np.random.default_rng(4).normal(scale=0.5, size=shuffled.dim)
    # Row k of the shuffled data is the user's row shuffle[k]; of the sorted data, by_group[k].
    rows = np.empty((2, N), dtype=int)
    rows[0, by_group], rows[1, shuffle] = np.arange(N), np.arange(N)
    pointwise = shuffled.pointwise_log_likelihood(theta)["c"]
    np.testing.assert_allclose(pointwise[rows[1]], sorted_rows.pointwise_log_likelihood(theta)["c"][rows[0]],
                               rtol=1e-13)
    v = shuffled.constrain(theta)
    group, x, counts = data(order=shuffle)
    want = stats.poisson.logpmf(counts, np.exp(v["mu"] + v["sigma"] * v["z"][group] + v["b"] * x))
    np.testing.assert_allclose(pointwise, want, rtol=1e-12)
    per_sample = per_sample_rows(shuffled, theta, "c")  # dense, and sparse checked equal to it
    np.testing.assert_allclose(per_sample[rows[1]], per_sample_rows(sorted_rows, theta, "c")[rows[0]],
                               rtol=1e-13, atol=1e-13)


def test_set_data_sorts_new_rows_without_recompiling(pair):
    _, shuffled, _, _ = pair
    density = hierarchical(*data(order=np.random.default_rng(3).permutation(N))).compile()
    signatures = list(density._module.core.signatures)
    group, x, counts = data(seed=5)
    density.set_data(g=group[:100], x=x[:100], c=counts[:100])
    assert density.fdata is not density._row_data[0]
    fresh = hierarchical(group[:100], x[:100], counts[:100]).compile()
    theta = np.random.default_rng(6).normal(scale=0.5, size=density.dim)
    assert density.log_density(theta) == pytest.approx(fresh.log_density(theta), rel=1e-12)
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["c"],
                               fresh.pointwise_log_likelihood(theta)["c"], rtol=1e-13)
    assert list(density._module.core.signatures) == signatures
    assert density.observed_data()["c"] is not None
    np.testing.assert_array_equal(density.data()["g"], group[:100])  # the user's arrays, unsorted
