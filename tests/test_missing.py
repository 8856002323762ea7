"""Imputation of missing observed values (``logdens.missing``), as PyMC does it."""

import math
import warnings

import numpy as np
import pytest
import scipy.stats

import logdens as ld
from engine_helpers import check_gradient
from logdens.samplers.diagnostics import bulk_ess

# The conjugate model: y_i ~ Normal(mu, SIGMA), mu ~ Normal(M0, S0), y[2] and y[5] missing.
SIGMA, M0, S0 = 1.5, 1.0, 2.0
Y = np.array([0.3, 2.1, np.nan, 1.4, -0.5, np.nan, 2.8, 1.9])
MISSING = np.isnan(Y)


def conjugate_model(y=Y):
    m = ld.Model()
    mu = m.param("mu", ld.Normal(M0, S0))
    with pytest.warns(ld.ModelWarning, match=r"observe 'y': 2 of 8 values are missing .* parameter y_unobserved"):
        m.observe("y", ld.Normal(mu, SIGMA), y)
    return m


@pytest.fixture(scope="module")
def conjugate():
    return conjugate_model().compile()


def numpy_density(mu, unobserved, y=Y):
    """The joint log density by hand: prior, present rows, imputed rows."""
    def normal(x, loc, scale):
        return -0.5 * ((x - loc) / scale) ** 2 - math.log(scale) - 0.5 * math.log(2 * math.pi)
    return normal(mu, M0, S0) + normal(y[~MISSING], mu, SIGMA).sum() + normal(unobserved, mu, SIGMA).sum()


def test_density_is_the_hand_written_one(conjugate):
    """The value at 1e-12 relative (the same sums in another order) and the gradient
    against finite differences (engine_helpers: rtol 1e-6)."""
    assert conjugate.param_names() == ["mu", "y_unobserved[0]", "y_unobserved[1]"]
    rng = np.random.default_rng(0)
    for _ in range(3):
        theta = rng.normal(size=3) * 2
        expected = numpy_density(theta[0], theta[1:])
        assert conjugate.log_density(theta, propto=False) == pytest.approx(expected, rel=1e-12)
        check_gradient(conjugate, theta, rng)


def test_pointwise_log_likelihood_has_only_the_observed_rows(conjugate):
    theta = np.array([0.7, 5.0, -3.0])
    pointwise = conjugate.pointwise_log_likelihood(theta)
    assert list(pointwise) == ["y_observed"]
    np.testing.assert_allclose(pointwise["y_observed"], scipy.stats.norm.logpdf(Y[~MISSING], 0.7, SIGMA),
                               rtol=1e-12)
    np.testing.assert_array_equal(conjugate.observed_data()["y_observed"], Y[~MISSING])
    filled = Y.copy()
    filled[MISSING] = [5.0, -3.0]  # the deterministic y: the data with the imputed values in place, as PyMC's
    np.testing.assert_array_equal(conjugate.constrain(theta)["y"], filled)


def test_masked_array_is_the_same_model():
    masked = np.ma.masked_array(np.nan_to_num(Y, nan=99.0), mask=MISSING)
    density = conjugate_model(masked).compile()
    theta = np.array([0.4, 1.0, 2.0])
    assert density.log_density(theta, propto=False) == pytest.approx(numpy_density(0.4, theta[1:]), rel=1e-12)
    density.set_data(y=np.ma.masked_array(np.nan_to_num(Y, nan=-7.0) + 1.0, mask=MISSING))
    assert density.log_density(theta, propto=False) == pytest.approx(
        numpy_density(0.4, theta[1:], Y + 1.0), rel=1e-12)


def assert_mean(draws, truth):
    """Within 4 Monte Carlo standard errors (bulk ESS)."""
    mcse = draws.std() / math.sqrt(bulk_ess(draws))
    assert abs(draws.mean() - truth) < 4 * mcse, (draws.mean(), truth, mcse)


def test_posterior_is_the_conjugate_one(conjugate):
    """mu | y is Normal with precision 1/S0^2 + n/SIGMA^2; each imputed y is that
    mean with variance var(mu | y) + SIGMA^2. Means within 4 MCSE; the imputed
    values' sd within 4 standard errors of an sd (sd / sqrt(2 ESS))."""
    idata = ld.nuts(conjugate, draws=1000, tune=500, chains=2, seed=3, progress=False)
    post = idata.posterior
    precision = 1 / S0 ** 2 + (~MISSING).sum() / SIGMA ** 2
    mean = (M0 / S0 ** 2 + Y[~MISSING].sum() / SIGMA ** 2) / precision
    assert_mean(post["mu"].values, mean)
    sd = math.sqrt(1 / precision + SIGMA ** 2)
    for j in range(2):
        draws = post["y_unobserved"].values[..., j]
        assert_mean(draws, mean)
        assert abs(draws.std() - sd) < 4 * sd / math.sqrt(2 * bulk_ess(draws)), (draws.std(), sd)
    np.testing.assert_array_equal(post["y"].values[..., MISSING], post["y_unobserved"].values)
    np.testing.assert_array_equal(post["y"].values[..., ~MISSING], np.broadcast_to(Y[~MISSING], (2, 1000, 6)))
    assert list(idata.log_likelihood.data_vars) == ["y_observed"]
    assert idata.log_likelihood["y_observed"].shape == (2, 1000, 6)
    assert list(idata.observed_data.data_vars) == ["y_observed"]


def test_regression_imputes_along_the_line():
    """Missing y of a regression: each imputed draw is the line at its x plus noise,
    so y_unobserved[j] - (a + b x_j) has posterior mean 0 (within 4 MCSE), and the
    imputed values take the coords of their rows."""
    rng = np.random.default_rng(1)
    x = np.linspace(-2, 2, 20)
    y = 1.0 + 0.8 * x + rng.normal(scale=0.3, size=20)
    gone = [0, 7, 19]  # the ends too: the line, not the data near them
    y[gone] = np.nan
    m = ld.Model(coords={"row": [f"r{i}" for i in range(20)]})
    a = m.param("a", ld.Normal(0, 5))
    b = m.param("b", ld.Normal(0, 5))
    s = m.param("s", ld.HalfNormal(1))
    with pytest.warns(ld.ModelWarning, match="3 of 20"):
        m.observe("y", ld.Normal(a + b * m.data("x", x, dims="row"), s), y, dims="row")
    density = m.compile()
    idata = ld.nuts(density, draws=1000, tune=500, chains=2, seed=2, progress=False)
    post = idata.posterior
    assert list(post["y_unobserved"].coords["y_unobserved_row"].values) == ["r0", "r7", "r19"]
    observed_rows = idata.log_likelihood["y_observed"].coords["y_observed_row"].values
    assert len(observed_rows) == 17 and observed_rows[[0, 6, 16]].tolist() == ["r1", "r8", "r18"]
    assert post["y"].dims == ("chain", "draw", "row")
    line = post["a"].values[..., None] + post["b"].values[..., None] * x[gone]
    residual = post["y_unobserved"].values - line
    for j in range(3):
        assert_mean(residual[..., j], 0.0)
    assert abs(post["y_unobserved"].values[..., 2].mean() - (1.0 + 0.8 * 2)) < 0.5  # near the true line


def test_arguments_per_row_are_gathered_at_their_rows():
    """Eight schools with two effects missing: a parameter vector (theta) and a
    numeric array (sigma) per row, each taken at the present and at the missing
    rows; the density against scipy at 1e-12."""
    y = np.array([28.0, 8.0, np.nan, 7.0, -1.0, 1.0, np.nan, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    m = ld.Model()
    theta = m.param("theta", ld.Normal(0, 10), shape=8)
    with pytest.warns(ld.ModelWarning):
        m.observe("y", ld.Normal(theta, sigma), y)
    density = m.compile()
    point = np.linspace(-5, 5, 10)  # theta, then y_unobserved
    gone = np.isnan(y)
    expected = (scipy.stats.norm.logpdf(point[:8], 0, 10).sum()
                + scipy.stats.norm.logpdf(y[~gone], point[:8][~gone], sigma[~gone]).sum()
                + scipy.stats.norm.logpdf(point[8:], point[:8][gone], sigma[gone]).sum())
    assert density.log_density(point, propto=False) == pytest.approx(expected, rel=1e-12)
    check_gradient(density, point, np.random.default_rng(6))
    rows = density.per_sample_gradient(point, "y_observed")
    assert rows.shape == (6, 10) and np.count_nonzero(rows[:, 8:]) == 0  # no imputed value in a row


def test_group_effects_gathered_by_index_are_taken_at_the_rows():
    """A hierarchical mean a[g] + b x: a gather of a gather at the present and the
    missing rows; the density against scipy at 1e-12 before and after set_data
    of the group index and the predictor (same rows), and the gradient."""
    g, x = np.array([0, 1, 2, 0, 1, 2, 0, 1]), np.linspace(0, 1, 8)
    y = np.array([0.1, np.nan, 0.4, 0.3, 1.0, np.nan, 0.2, 0.5])
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=3)
    b = m.param("b", ld.Normal(0, 1))
    with pytest.warns(ld.ModelWarning):
        m.observe("y", ld.Normal(a[m.data("g", g)] + b * m.data("x", x), 0.5), y)
    density = m.compile()
    theta = np.array([0.1, 0.2, 0.3, 0.7, 1.5, -1.0])  # a, b, y_unobserved
    gone = np.isnan(y)

    def expected(g, x):
        mu = theta[:3][g] + theta[3] * x
        return (scipy.stats.norm.logpdf(theta[:4]).sum() + scipy.stats.norm.logpdf(y[~gone], mu[~gone], 0.5).sum()
                + scipy.stats.norm.logpdf(theta[4:], mu[gone], 0.5).sum())
    assert density.log_density(theta, propto=False) == pytest.approx(expected(g, x), rel=1e-12)
    check_gradient(density, theta, np.random.default_rng(8))
    density.set_data(g=g[::-1].copy(), x=x ** 2)
    assert density.log_density(theta, propto=False) == pytest.approx(expected(g[::-1], x ** 2), rel=1e-12)


def test_prior_predictive_draws_the_imputed_values_from_the_prior():
    """Without data: y_unobserved ~ Normal(M0, sqrt(S0^2 + SIGMA^2)), each (5
    standard errors of a mean and of a variance at 4000 independent draws)."""
    prior = ld.sample_prior_predictive(conjugate_model(), draws=4000, seed=7)
    draws = prior.prior["y_unobserved"].values.reshape(4000, 2)
    var = S0 ** 2 + SIGMA ** 2
    assert np.all(np.abs(draws.mean(axis=0) - M0) < 5 * math.sqrt(var / 4000))
    assert np.all(np.abs(draws.var(axis=0) - var) < 5 * var * math.sqrt(2 / 4000))
    assert list(prior.prior_predictive.data_vars) == ["y_observed"]
    np.testing.assert_array_equal(prior.prior["y"].values[0, :, ~MISSING].T, np.broadcast_to(Y[~MISSING], (4000, 6)))


def test_two_terms_miss_other_rows_of_one_dim():
    """Each part's dim is its own (an error when both were `row_unobserved`)."""
    m = ld.Model(coords={"row": ["a", "b", "c"]})
    mu = m.param("mu", ld.Normal(0, 1))
    with pytest.warns(ld.ModelWarning):
        m.observe("u", ld.Normal(mu, 1.0), np.array([np.nan, 1.0, 2.0]), dims="row")
        m.observe("v", ld.Normal(mu, 1.0), np.array([1.0, 2.0, np.nan]), dims="row")
    assert m.coords["u_unobserved_row"].tolist() == ["a"] and m.coords["v_unobserved_row"].tolist() == ["c"]
    assert m.dims["v_observed"] == ("v_observed_row",) and m.coords["v_observed_row"].tolist() == ["a", "b"]


def test_graph_joins_the_parts_into_the_deterministic():
    """As PyMC draws it: y_unobserved and y_observed into the deterministic y, which
    stands for the data of its name (drawn twice, with an edge y -> y, before)."""
    from logdens.graph import variables
    found = {name: (kind, parents) for name, kind, _, _, parents in variables(conjugate_model())}
    assert found == {"mu": ("param", []), "y_unobserved": ("param", ["mu"]),
                     "y": ("deterministic", ["y_unobserved", "y_observed"]), "y_observed": ("observed", ["mu"])}


def test_set_data_may_not_change_which_entries_are_missing(conjugate):
    theta = np.array([0.4, 1.0, 2.0])
    appears, disappears = Y.copy(), Y.copy()
    appears[3], disappears[5] = np.nan, 1.0
    with pytest.raises(ld.ModelError, match=r"data y\[3\]=nan but it was present .* call compile\(\) again"):
        conjugate.set_data(y=appears)
    with pytest.raises(ld.ModelError, match=r"data y\[5\]=1.0 but it was missing .* call compile\(\) again"):
        conjugate.set_data(y=disappears)
    with pytest.raises(ld.ModelError, match=r"has missing values and shape \(8,\); got shape \(9,\)"):
        conjugate.set_data(y=np.append(Y, 1.0))
    conjugate.set_data(y=Y - 1.0)  # new values where present: fine
    try:
        assert conjugate.log_density(theta, propto=False) == pytest.approx(
            numpy_density(0.4, theta[1:], Y - 1.0), rel=1e-12)
    finally:
        conjugate.set_data(y=Y)


def test_present_values_stay_in_the_support():
    m = ld.Model()
    s = m.param("s", ld.HalfNormal(1))
    with pytest.warns(ld.ModelWarning):
        m.observe("y", ld.HalfNormal(s), np.array([0.5, np.nan, 1.0]))
    density = m.compile()
    with pytest.raises(ld.ModelError, match=r"term 'y': HalfNormal value y\[2\]=-1.0, must be >= 0"):
        density.set_data(y=np.array([0.5, np.nan, -1.0]))
    assert density.param_names() == ["s", "y_unobserved[0]"]
    assert density.constrain(density.unconstrain({"s": 1.0, "y_unobserved": np.array([0.3])}))["y_unobserved"] \
        == pytest.approx([0.3])  # positive, as its prior: a log transform


def test_rows_of_a_predictor_must_still_agree():
    """The split term's rows and the predictor's keep one length, as the whole term's would."""
    m = ld.Model()
    b = m.param("b", ld.Normal(0, 1))
    x = m.data("x", np.arange(8.0))
    with pytest.warns(ld.ModelWarning):
        m.observe("y", ld.Normal(b * x, SIGMA), Y)
    density = m.compile()
    with pytest.raises(ld.ModelError, match=r"term 'y' \(its missing entries are imputed: for other rows call "
                                            r"compile\(\) again\): y has length 8 but \(b \* x\) has length 9"):
        density.set_data(x=np.arange(9.0))


def test_missing_predictor_says_to_model_it():
    x = np.array([0.0, 1.0, np.nan, 3.0])
    m = ld.Model()
    b = m.param("b", ld.Normal(0, 1))
    m.observe("y", ld.Normal(b * m.data("x", x), 1.0), np.zeros(4))
    with pytest.raises(ld.ModelError, match=r"data 'x': x\[2\]=nan, must be finite; .* must be modelled: "
                                            r"observe it, m.observe\('x', dist, array\)"):
        m.compile()


def test_an_imputed_predictor_is_read_through_what_observe_returns():
    """A missing predictor modelled as observed: observe returns x with x_unobserved
    in place, which the next term reads; the density against a hand-written one
    (1e-12) and finite differences. The raw data, NaNs and all, may not be read."""
    x = np.array([0.5, -1.0, np.nan, 2.0, 0.1])
    y = np.array([1.0, -2.1, 0.3, 3.9, 0.0])
    m = ld.Model()
    with pytest.warns(ld.ModelWarning, match="1 of 5"):
        x_full = m.observe("x", ld.Normal(0.0, 2.0), x)
    b = m.param("b", ld.Normal(0, 1))
    m.observe("y", ld.Normal(b * x_full, 0.5), y)
    density = m.compile()
    theta = np.array([0.7, 1.6])  # x_unobserved, b
    filled = np.where(np.isnan(x), 0.7, x)
    expected = (scipy.stats.norm.logpdf(filled, 0.0, 2.0).sum() + scipy.stats.norm.logpdf(1.6) +
                scipy.stats.norm.logpdf(y, 1.6 * filled, 0.5).sum())
    assert density.log_density(theta, propto=False) == pytest.approx(expected, rel=1e-12)
    check_gradient(density, theta, np.random.default_rng(5))
    assert density.pointwise_log_likelihood(theta)["y"].shape == (5,)
    m.observe("z", ld.Normal(m.data_nodes["x"], 1.0), np.zeros(5))
    with pytest.raises(ld.ModelError, match=r"term 'z' reads data 'x', whose missing entries are NaN; read the "
                                            r"data with the imputed values instead"):
        m.compile()


def test_what_cannot_be_imputed_is_refused():
    m = ld.Model()
    rate = m.param("rate", ld.Gamma(2, 1))
    with pytest.raises(ld.ModelError, match=r"observe 'y': data y\[2\]=nan: missing values are imputed only in "
                                            r"an array given to observe itself"):
        m.observe("y", ld.Normal(rate, 1.0), m.data("y", Y))
    with pytest.raises(ld.ModelError, match=r"observe 'c': Poisson is discrete.*\(index \[1\]\)"):
        m.observe("c", ld.Poisson(rate), np.ma.masked_array([1, 2, 3], mask=[False, True, False]))
    with pytest.raises(ld.ModelError, match="all 2 values are missing"):
        m.observe("z", ld.Normal(rate, 1.0), np.array([np.nan, np.nan]))
    mixture = ld.Mixture([0.5, 0.5], [ld.Normal(0, 1), ld.Normal(rate, 1)])
    with pytest.raises(ld.ModelError, match="Mixture cannot be imputed"):
        m.observe("w", mixture, np.array([0.0, np.nan]))
    assert not m.imputed and [t.name for t in m.terms] == ["rate"] and list(m.data_nodes) == ["y"]


def test_multivariate_values_are_refused():
    """PyMC imputes whole missing rows of a multivariate term (and entries inside a
    row through a joint density); the engine cannot gather rows of a data matrix
    yet, so both are a clear error here, as are values with two axes."""
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1), shape=2)
    for y in (np.array([[0.0, 1.0], [np.nan, np.nan]]), np.array([[0.0, 1.0], [np.nan, 2.0]])):
        with pytest.raises(ld.ModelError, match=r"observe 'v': MvNormal values have missing entries \(index "
                                                r"\[1, 0\]\); multivariate values cannot be imputed: drop"):
            m.observe("v", ld.MvNormal(mu, np.eye(2)), y)
    with pytest.raises(ld.ModelError, match=r"in a vector of observations, got shape \(2, 2\)"):
        m.observe("w", ld.Normal(0.0, 1.0), np.array([[0.0, 1.0], [np.nan, 2.0]]))
    assert not m.imputed and [t.name for t in m.terms] == ["mu"]


def test_no_warning_and_no_split_without_missing_values():
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.observe("y", ld.Normal(mu, 1.0), np.ma.masked_array([1.0, 2.0], mask=[False, False]))
    assert [t.name for t in m.terms] == ["mu", "y"] and not m.imputed
