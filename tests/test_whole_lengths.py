"""Data that terms with shape read whole (a scan's series, a Gaussian process's
inputs, a series observed as one event) take new lengths with ``set_data``,
without a new compile (``logdens.sizes``): models that differ only in those
lengths generate the same source, and a density built at one length and given
data of another computes what a density built at the other computes.

Tolerance: the same generated code runs on the same numbers in both, so
values and gradients agree to 1e-12 relative (they are in fact equal).
"""

import numpy as np
import pytest

import logdens as ld
from logdens import sizes, validate
from logdens.engine import generate_source, lower


def garch(T):
    """GARCH(1,1) over a lagged series read whole by the scan, its rows the likelihood's."""
    r = np.random.default_rng(T).normal(size=T) * 0.5
    m = ld.Model()
    omega = m.param("omega", ld.HalfNormal(1.0))
    a1 = m.param("a1", ld.Uniform(0, 1))
    b1 = m.param("b1", ld.Uniform(0, 1 - a1))
    previous = m.data("r_previous", np.concatenate([[0.0], r[:-1]]))
    sigma2 = ld.scan(lambda s, rp: omega + a1 * rp * rp + b1 * s, 0.3, previous)
    m.observe("r", ld.Normal(0.0, ld.sqrt(sigma2)), r)
    return m


def gp_regression(n):
    """A Gaussian process's marginal likelihood: an n x n covariance of x, y one event."""
    rng = np.random.default_rng(n)
    x = np.sort(rng.uniform(0, 5, n))
    m = ld.Model()
    alpha, rho, sigma = (m.param(k, ld.HalfNormal(1)) for k in ("alpha", "rho", "sigma"))
    K = ld.add_diag(ld.gp.exp_quad(m.data("x", x), alpha, rho), sigma ** 2)
    m.observe("y", ld.MvNormal(m.data("mean", np.zeros(n)), scale_tril=ld.cholesky(K)),
              np.sin(x) + 0.1 * rng.normal(size=n))
    return m


def ard_regression(n):
    """Two input dimensions, a length scale each: x of shape (n, 2)."""
    rng = np.random.default_rng(n)
    x = rng.normal(size=(n, 2))
    m = ld.Model()
    alpha, sigma = m.param("alpha", ld.HalfNormal(1)), m.param("sigma", ld.HalfNormal(1))
    rho = m.param("rho", ld.HalfNormal(1), shape=2)
    K = ld.add_diag(ld.gp.matern52(m.data("x", x), alpha, rho), sigma ** 2)
    m.observe("y", ld.MvNormal(m.data("mean", np.zeros(n)), scale_tril=ld.cholesky(K)), x[:, 0] - x[:, 1])
    return m


def ar2(T):
    """A series observed as one AR(2) event of T steps."""
    y = np.cumsum(np.random.default_rng(T).normal(size=T)) * 0.3
    m = ld.Model()
    rho = m.param("rho", ld.Normal(0, 0.5), shape=2)
    sigma = m.param("sigma", ld.HalfNormal(1))
    m.observe("y", ld.AR(rho, sigma), y)
    return m


def hmm(T, K=3):
    """An HMM's marginal over T observations: (T, K) emissions, a scan over their transpose."""
    y = np.random.default_rng(T).normal(size=T) * 2
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 3), shape=K, constraint=ld.ordered)
    s = m.param("s", ld.HalfNormal(2))
    Z = m.param("Z", ld.Normal(0, 1), shape=(K, K))
    start = m.param("start", ld.Dirichlet(np.ones(K)))
    log_emissions = ld.Normal(mu, s).logpdf(m.data("Y", np.repeat(y[:, None], K, axis=1)))
    m.potential("y", ld.hmm_marginal(log_emissions.T, ld.softmax(Z), start))
    return m


def checkpointed(T):
    """A scan that keeps its last carry and stores every third for its gradient:
    lengths that are not a multiple of 3 end in a short segment."""
    x = np.random.default_rng(T).normal(size=T)
    m = ld.Model()
    a = m.param("a", ld.Uniform(-1, 1))
    b = m.param("b", ld.Normal(0, 1))
    last = ld.scan(lambda c, xt: ld.tanh(a * c + b * xt), 0.1, m.data("x", x), keep="last", checkpoint=3)
    m.potential("p", -0.5 * (last - 0.2) ** 2 * 10.0)
    return m


MODELS = {"garch": garch, "gp": gp_regression, "ard": ard_regression, "ar2": ar2, "hmm": hmm,
          "checkpointed": checkpointed}
LENGTHS = {"garch": (40, 67), "gp": (12, 19), "ard": (9, 14), "ar2": (30, 53), "hmm": (6, 11),
           "checkpointed": (9, 14)}


def data(model):
    return {name: node.value for name, node in model.data_nodes.items()}


@pytest.mark.parametrize("kind", MODELS)
def test_lengths_of_data_read_whole_generate_the_same_source(kind):
    small, large = (generate_source(*lower(MODELS[kind](n))) for n in LENGTHS[kind])
    assert small == large


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("kind", MODELS)
def test_set_data_of_another_length_computes_what_a_model_built_with_it_computes(kind, backend, tmp_path):
    small, large = (MODELS[kind](n) for n in LENGTHS[kind])
    density = small.compile(backend=backend, cache_dir=tmp_path)
    built = large.compile(backend=backend, cache_dir=tmp_path)
    if backend == "cpu":
        assert density._module is built._module
    rng = np.random.default_rng(1)
    for _ in range(2):
        theta = rng.normal(size=density.dim) * 0.5
        density.set_data(**data(large))
        value, grad = density.log_density_gradient(theta)
        expected, expected_grad = built.log_density_gradient(theta)
        assert np.isfinite(expected)
        assert value == pytest.approx(expected, rel=1e-12)
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-12, atol=1e-12)
        density.set_data(**data(small))  # and back
        assert density.log_density(theta) == pytest.approx(small.compile(backend="python").log_density(theta),
                                                           rel=1e-12)


def test_the_pointwise_likelihood_and_per_sample_rows_follow_the_new_length(tmp_path):
    density = garch(40).compile(cache_dir=tmp_path)
    density.set_data(**data(garch(67)))
    theta = np.array([-1.0, 0.2, -0.3])
    pointwise = density.pointwise_log_likelihood(theta)["r"]
    assert pointwise.shape == (67,)
    assert pointwise.sum() == pytest.approx(garch(67).compile(backend="python").pointwise_log_likelihood(theta)["r"].sum(),
                                            rel=1e-12)
    rows = density.per_sample_gradient(theta, "r")
    assert rows.shape == (67, 3)


def test_lengths_that_must_agree_are_checked_on_set_data():
    density = garch(40).compile(backend="python")
    r = np.random.default_rng(0).normal(size=55)
    with pytest.raises(ld.ModelError, match=r"term 'r': .*the 55 rows of data r and the 40 rows of data r_previous"):
        density.set_data(r=r)
    gp = gp_regression(12).compile(backend="python")
    new = data(gp_regression(15))
    with pytest.raises(ld.ModelError, match=r"term 'y': .*rows of data (x|y|mean)"):
        gp.set_data(x=new["x"], mean=new["mean"])  # y keeps 12 rows
    with pytest.raises(ld.ModelError, match=r"term 'y': data (x|y|mean) is read whole and has no rows"):
        gp.set_data(x=np.zeros(0), mean=np.zeros(0), y=np.zeros(0))
    gp.set_data(**new)  # all three: fine


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_slices_and_elements_inside_a_term_with_shape_follow_a_new_length(backend, tmp_path):
    """A scan over ``x[1:]`` started at ``x[0]``, and ``x[-1]``: their bounds on
    the data's current length, as a model built at that length computes
    them; a reversed slice keeps its build length."""
    def model(x, step=1):
        m = ld.Model()
        a = m.param("a", ld.Normal(0, 1))
        xs = m.data("x", x)
        m.potential("p", -ld.sum(ld.scan(lambda c, xt: a * c + xt, xs[0], xs[1::step] if step > 0 else xs[::-1]) ** 2)
                    + a * xs[-1])
        return m.compile(backend=backend, cache_dir=tmp_path)

    short, long = np.linspace(0, 1, 10), np.cos(np.arange(17.0))
    density = model(short)
    theta = np.array([0.4])
    for x in (long, short[:2]):
        density.set_data(x=x)
        lp, grad = density.log_density_gradient(theta)
        lp_built, grad_built = model(x).log_density_gradient(theta)
        assert lp == pytest.approx(lp_built, rel=1e-13) and np.allclose(grad, grad_built, rtol=1e-13)
    strided = model(short, step=3)
    strided.set_data(x=long)
    assert strided.log_density(theta) == pytest.approx(model(long, step=3).log_density(theta), rel=1e-13)
    reversed_ = model(short, step=-1)
    with pytest.raises(ld.ModelError, match=r"x\[::-1\] slices x, which had length 10 .* keeps its length"):
        reversed_.set_data(x=np.linspace(0, 1, 12))


def test_the_gpu_backend_keeps_the_build_shapes():
    """A GPU thread's buffers are local arrays of compile-time lengths
    (``CudaLogDensity.fixed_whole_sizes``)."""
    model, layout = lower(garch(40))
    arrays = data(garch(67))
    validate.check_terms(model, layout, arrays)
    with pytest.raises(ld.ModelError, match=r"data r_previous has shape \(67,\); it was built with shape \(40,\)"):
        validate.check_terms(model, layout, arrays, fixed_whole=True)


def test_sizes_are_code_and_never_compare_with_numbers():
    n = sizes.Size("n_x", 5, "x")
    assert str(n * n) == "(n_x * n_x)" and (n * n).value == 25
    assert n * 1 is n and 1 * n is n and n + 0 is n and 0 * n == 0
    assert str(-(-n // 3) * 2) == "((-((-n_x) // 3)) * 2)" and (-(-n // 3) * 2).value == 4
    assert sizes.extent(n) is n and sizes.extent(0) == 1
    assert not sizes.is_one(sizes.Size("n_y", 1)) and sizes.is_one(1)
    with pytest.raises(TypeError, match="read at run time"):
        max(n, 1)


def latent_gp(n):
    """A latent Gaussian process, non-centred: ``z`` of the inputs' length."""
    rng = np.random.default_rng(n)
    x = np.sort(rng.uniform(0, 5, n))
    m = ld.Model()
    alpha, rho = m.param("alpha", ld.HalfNormal(1)), m.param("rho", ld.HalfNormal(1))
    z = m.param("z", ld.Normal(0, 1), shape=n)
    f = ld.cholesky(ld.add_diag(ld.gp.matern52(m.data("x", x), alpha, rho), 1e-6)) @ z
    m.observe("counts", ld.PoissonLog(f), rng.poisson(2.0, n).astype(float))
    return m


def test_a_vector_that_only_run_time_lengths_meet_is_read_at_run_time(tmp_path):
    """``z`` of a latent GP meets only the rows of x: models of 12 and 19 inputs
    share one compiled module, and each computes its own log density and
    gradient (central differences, h = 1e-6: errors near 1e-8 on values of
    size 10-30, compared at 1e-5)."""
    small, large = latent_gp(12), latent_gp(19)
    assert generate_source(*lower(small)) == generate_source(*lower(large))
    densities = [model.compile(cache_dir=tmp_path) for model in (small, large)]
    assert densities[0]._module is densities[1]._module
    assert len(list(tmp_path.glob("logdens_*.py"))) == 1
    for model, density in zip((small, large), densities):
        theta = np.random.default_rng(0).normal(size=density.dim) * 0.3
        value, grad = density.log_density_gradient(theta)
        assert value == pytest.approx(model.compile(backend="python").log_density(theta), rel=1e-12)
        fd = np.array([(density.log_density(theta + 1e-6 * e) - density.log_density(theta - 1e-6 * e)) / 2e-6
                       for e in np.eye(density.dim)])
        np.testing.assert_allclose(grad, fd, atol=1e-5 * max(1.0, np.max(np.abs(fd))))


def test_a_vector_that_meets_a_fixed_length_keeps_it_compiled_in():
    """A bias added to a layer of 4 units (a weight matrix's columns) keeps its
    length in the code, as do the matrices; the latent GP's z does not."""
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(3, 4))
    b = m.param("b", ld.Normal(0, 1), shape=4)
    m.observe("Y", ld.Normal(ld.tanh(m.data("X", np.ones((5, 3))) @ W + b), 1.0), np.zeros((5, 4)))
    layout = lower(m)[1]
    assert not layout.params["b"].runtime and not layout.params["W"].runtime
    assert lower(latent_gp(12))[1].params["z"].runtime


def test_a_potential_with_shape_checks_its_lengths_too():
    """The HMM's emissions (a potential): Y of new rows is fine; a Y of another
    number of states would be read past its columns, and is refused."""
    density = hmm(6).compile(backend="python")
    density.set_data(Y=np.zeros((9, 3)))
    with pytest.raises(ld.ModelError, match=r"term 'y': data Y has shape \(9, 4\); it was built with shape \(6, 3\)"):
        density.set_data(Y=np.zeros((9, 4)))


def test_two_sequences_of_one_scan_in_a_potential_must_keep_one_length():
    """Their steps are the first's rows: a shorter second would be read past its end."""
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1))
    u, v = m.data("u", np.ones(8)), m.data("v", np.ones(8))
    m.potential("p", -ld.sum(ld.scan(lambda c, x: a * c + x[0] * x[1], 0.0, [u, v]) ** 2))
    density = m.compile(backend="python")
    density.set_data(u=np.ones(11), v=np.ones(11))
    with pytest.raises(ld.ModelError, match=r"term 'p': .*the 11 rows of data u and the 5 rows of data v"):
        density.set_data(v=np.ones(5))


def lagged(T):
    """An AR(1) written with slices, ``y[1:] ~ Normal(a + b y[:-1], s)``: bounds
    counted from the end follow the series' length (a plate term, not one with shape)."""
    y = np.cumsum(np.random.default_rng(T).normal(size=T)) * 0.3
    m = ld.Model()
    a, b, s = m.param("a", ld.Normal(0, 1)), m.param("b", ld.Normal(0, 1)), m.param("s", ld.HalfNormal(1))
    series = m.data("y", y)
    m.observe("ahead", ld.Normal(a + b * series[:-1], s), series[1:])
    return m


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_slices_counted_from_the_end_follow_a_new_length(backend, tmp_path):
    assert generate_source(*lower(lagged(20))) == generate_source(*lower(lagged(33)))
    density = lagged(20).compile(backend=backend, cache_dir=tmp_path)
    density.set_data(**data(lagged(33)))
    theta = np.array([0.1, 0.5, -0.2])
    value, grad = density.log_density_gradient(theta)
    expected, expected_grad = lagged(33).compile(backend="python").log_density_gradient(theta)
    assert value == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-12, atol=1e-12)
    assert density.pointwise_log_likelihood(theta)["ahead"].shape == (32,)
