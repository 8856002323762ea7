"""Named dims and coords (logdens.dims): the model checks them, the DataTrees carry them."""

import numpy as np
import pytest

import logdens as ld
from logdens.expr import ModelError

SCHOOLS = ["Choate", "Deerfield", "Exeter", "Hotchkiss", "Lawrence", "Mt. Hermon", "St. Paul's",
           "Windsor"]
Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools():
    """Non-centered eight schools, every vector labelled by school; sigma is data
    with dims, so observed_data and log_likelihood both need the school coords."""
    m = ld.Model(coords={"school": SCHOOLS})
    mu = m.param("mu", ld.Normal(0, 5))
    tau = m.param("tau", ld.HalfCauchy(5))
    z = m.param("z", ld.Normal(0, 1), dims="school")     # shape from the coords
    theta = m.deterministic("theta", mu + tau * z, dims="school")
    sigma = m.data("sigma", SIGMA, dims="school")
    m.observe("y", ld.Normal(theta, sigma), Y, dims="school")
    return m


@pytest.fixture(scope="module")
def density():
    return eight_schools().compile()


def check_labelled(idata, groups):
    """Every vector of ``groups`` has the dim ``school`` with the school names."""
    for group in groups:
        for name, var in idata[group].data_vars.items():
            if name in ("mu", "tau"):
                assert var.dims == ("chain", "draw"), (group, name)
                continue
            assert var.dims[-1] == "school", (group, name, var.dims)
            assert list(var["school"].values) == SCHOOLS, (group, name)


@pytest.mark.filterwarnings("ignore:.*(R-hat|ESS).*")  # 50 draws: too few for convergence, enough for labels
def test_nuts_groups_carry_dims_and_coords(density):
    idata = ld.nuts(density, draws=50, tune=50, chains=2, seed=3, progress=False, save_warmup=True)
    check_labelled(idata, ["posterior", "warmup_posterior", "log_likelihood", "warmup_log_likelihood",
                           "observed_data"])
    assert idata.posterior["z"].shape == (2, 50, 8)
    assert idata.observed_data["y"].dims == ("school",)
    np.testing.assert_array_equal(idata.observed_data["y"].sel(school="Exeter"), -3.0)
    # the deterministic keeps its dims and is its definition, school by school (float64 rounding)
    post = idata.posterior
    np.testing.assert_allclose(post["theta"].sel(school="Windsor"),
                               post["mu"] + post["tau"] * post["z"].sel(school="Windsor"), rtol=1e-12)
    # the labels follow the values: the pointwise log-likelihood of one school at one draw
    draw = post.isel(chain=1, draw=7)
    lp = ld.Normal(float(draw["theta"].sel(school="Lawrence")), SIGMA[4]).logpdf(Y[4])
    np.testing.assert_allclose(idata.log_likelihood["y"].isel(chain=1, draw=7).sel(school="Lawrence"),
                               lp, rtol=1e-12)


def test_laplace_groups_carry_dims_and_coords(density):
    approx = ld.laplace(density, draws=30, seed=1)
    check_labelled(approx, ["posterior", "log_likelihood", "observed_data"])
    assert approx.posterior["theta"].shape == (1, 30, 8)


def test_dims_without_coords_get_integer_coords():
    x = np.linspace(-1.0, 1.0, 5)
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=2, dims="level")
    group = m.data("group", np.array([0, 1, 1, 0, 1]), dims="obs")
    m.deterministic("mean", a[group] + x, dims="obs")
    m.observe("y", ld.Normal(a[group] + x, 1.0), np.array([0.1, 0.5, -0.2, 0.3, 0.0]), dims="obs")
    approx = ld.laplace(m.compile(), draws=10, seed=0)
    assert approx.posterior["a"].dims == ("chain", "draw", "level")
    assert approx.posterior["mean"].dims == ("chain", "draw", "obs")
    assert list(approx.posterior["obs"].values) == [0, 1, 2, 3, 4]
    assert list(approx.log_likelihood["y"]["obs"].values) == [0, 1, 2, 3, 4]


def test_observed_data_expression_takes_the_data_dims():
    m = ld.Model(coords={"obs": ["a", "b", "c"]})
    mu = m.param("mu", ld.Normal(0, 1))
    y = m.data("y_values", np.array([0.5, -0.5, 1.0]), dims="obs")
    m.observe("y", ld.Normal(mu, 1.0), y)
    density = m.compile()
    assert density.dims() == {"y_values": ("obs",), "y": ("obs",)}
    approx = ld.laplace(density, draws=5, seed=0)
    assert list(approx.log_likelihood["y"]["obs"].values) == ["a", "b", "c"]
    assert list(approx.observed_data["y"]["obs"].values) == ["a", "b", "c"]


def test_shape_and_dims_must_agree():
    m = ld.Model(coords={"county": ["A", "B", "C"]})
    with pytest.raises(ModelError, match=r"parameter 'a': has length 4 along dim 'county', which has "
                                         r"length 3 \(the coords of 'county'\)"):
        m.param("a", ld.Normal(0, 1), shape=4, dims="county")
    assert m.param("b", ld.Normal(0, 1), shape=3, dims="county").shape == (3,)
    assert m.param("c", ld.Normal(0, 1), dims=("county",)).shape == (3,)
    with pytest.raises(ModelError, match=r"parameter 'd': dims \('county',\) name 1 axes but its "
                                         r"shape \(\) has 0"):
        m.param("d", ld.Normal(0, 1), shape=(), dims="county")


def test_unknown_dim():
    m = ld.Model()
    with pytest.raises(ModelError, match="parameter 'a': unknown dim 'county'"):
        m.param("a", ld.Normal(0, 1), dims="county")
    assert "a" not in m.params
    # a shape gives the dim its length, which later variables must have
    m.param("b", ld.Normal(0, 1), shape=4, dims="county")
    assert m.param("c", ld.Normal(0, 1), dims="county").shape == (4,)
    with pytest.raises(ModelError, match=r"data 'x': has length 5 along dim 'county', which has "
                                         r"length 4 \(parameter 'b'\)"):
        m.data("x", np.zeros(5), dims="county")


def test_each_kind_of_variable_is_checked():
    m = ld.Model(coords={"obs": [10, 20, 30]})
    mu = m.param("mu", ld.Normal(0, 1), shape=2)
    with pytest.raises(ModelError, match=r"deterministic 'm2': has length 2 along dim 'obs', which has length 3"):
        m.deterministic("m2", mu * 2.0, dims="obs")
    with pytest.raises(ModelError, match=r"observe 'y': has length 2 along dim 'obs', which has length 3"):
        m.observe("y", ld.Normal(mu, 1.0), np.zeros(2), dims="obs")
    with pytest.raises(ModelError, match=r"data 'X': dims \('obs',\) name 1 axes but its shape \(3, 2\) has 2"):
        m.data("X", np.zeros((3, 2)), dims="obs")
    assert m.data("X2", np.zeros((3, 2)), dims=("obs", "feature")).shape == (3, 2)
    with pytest.raises(ModelError, match="'chain' is reserved"):
        m.param("s", ld.Normal(0, 1), shape=2, dims="chain")
    with pytest.raises(ModelError, match="dims=3: must be a dim name"):
        m.param("t", ld.Normal(0, 1), shape=2, dims=3)
    with pytest.raises(ModelError, match="the name is reserved"):
        m.data("coords", np.zeros(3))


def test_coords_are_checked():
    with pytest.raises(ModelError, match="dim 'g': values must be 1-D"):
        ld.Model(coords={"g": [[1, 2], [3, 4]]})
    with pytest.raises(ModelError, match="dim 'g': values must be distinct"):
        ld.Model(coords={"g": ["a", "a"]})
    m = ld.Model()
    m.param("a", ld.Normal(0, 1), shape=2, dims="g")
    with pytest.raises(ModelError, match=r"add_coord: dim 'g' has length 2 \(parameter 'a'\) but 3 coords"):
        m.add_coord("g", ["x", "y", "z"])
    m.add_coord("g", ["x", "y"])
    m.add_coord("g", ["x", "y"])  # the same values again: nothing changes
    with pytest.raises(ModelError, match="add_coord: dim 'g' has coords already"):
        m.add_coord("g", ["x", "w"])


def test_compiled_density_keeps_its_coords():
    m = eight_schools()
    density = m.compile()
    m.add_coord("later", [1, 2])
    m.param("w", ld.Normal(0, 1), dims="later")
    assert set(density.coords()) == {"school"} and "w" not in density.dims()
    assert list(density.coords()["school"]) == SCHOOLS


def regression(n_obs, coords):
    """Linear regression whose observations are labelled by the dim ``obs``."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=n_obs)
    m = ld.Model(coords={"obs": coords} if coords is not None else None)
    a, b = m.param("a", ld.Normal(0, 5)), m.param("b", ld.Normal(0, 5))
    xd = m.data("x", x, dims="obs")
    m.observe("y", ld.Normal(a + b * xd, 1.0), 1.0 + 2.0 * x + rng.normal(size=n_obs), dims="obs")
    return m.compile(), rng


def test_set_data_with_a_new_length_needs_new_coords():
    density, rng = regression(4, ["p", "q", "r", "s"])
    x, y = rng.normal(size=3), rng.normal(size=3)
    with pytest.raises(ModelError, match=r"data 'x': has length 3 along dim 'obs', which has length 4 "
                                         r"\(the coords of 'obs'\); give its new coords"):
        density.set_data(x=x, y=y)
    assert density.data()["x"].shape == (4,)  # a refused set_data changes nothing
    with pytest.raises(ModelError, match="set_data: coords for unknown dim 'school'"):
        density.set_data(x=x, y=y, coords={"school": [1, 2, 3]})
    density.set_data(x=x, y=y, coords={"obs": ["t", "u", "v"]})
    assert list(density.coords()["obs"]) == ["t", "u", "v"]
    approx = ld.laplace(density, draws=5, seed=0)
    assert list(approx.log_likelihood["y"]["obs"].values) == ["t", "u", "v"]
    assert list(approx.observed_data["y"]["obs"].values) == ["t", "u", "v"]
    np.testing.assert_array_equal(approx.observed_data["y"].values, y)


def test_set_data_names_every_dim_that_needs_new_coords():
    """The README's predictions spelling without coords= on a model with two dims
    of coords: one error names both dims and the call that fixes it."""
    m = ld.Model(coords={"obs": range(4), "group": ["a", "b"]})
    a = m.param("a", ld.Normal(0, 1), dims="group")
    g = m.data("g", np.array([0, 1, 0, 1]), dims="obs")
    m.data("w", np.ones(2), dims="group")
    m.observe("y", ld.Normal(a[g], 1.0), np.zeros(4), dims="obs")
    density = m.compile()
    with pytest.raises(ModelError, match=r"data 'g' has length 3 along dim 'obs', whose coords have length 4; "
                                         r"data 'w' has length 3 along dim 'group', whose coords have length 2: "
                                         r"dims \['obs', 'group'\] need new coords: "
                                         r"set_data\(\.\.\., coords=\{'obs': values, 'group': values\}\)"):
        density.set_data(g=np.array([0, 1, 1]), w=np.ones(3), y=np.zeros(3))


def test_set_data_without_coords_relabels_with_integers():
    density, rng = regression(4, None)
    density.set_data(x=rng.normal(size=6), y=rng.normal(size=6))
    approx = ld.laplace(density, draws=5, seed=0)
    assert list(approx.log_likelihood["y"]["obs"].values) == list(range(6))


def test_set_data_keeps_a_dim_one_length():
    """Two observed terms on one dim without coords: new data for one alone is refused."""
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    m.observe("y1", ld.Normal(mu, 1.0), np.zeros(4), dims="obs")
    m.observe("y2", ld.Normal(mu, 2.0), np.ones(4), dims="obs")
    density = m.compile()
    with pytest.raises(ModelError, match=r"data 'y2': has length 4 along dim 'obs', which has length 5 "
                                         r"\(data 'y1'\)"):
        density.set_data(y1=np.zeros(5))
    density.set_data(y1=np.zeros(5), y2=np.ones(5))
    assert density.observed_data()["y2"].shape == (5,)
