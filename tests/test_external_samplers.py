"""External samplers and tools: ``ld.from_draws``, ``logdens.jax_bridge``, the
numba entry for nutpie, and array layouts every public method accepts."""

import warnings

import numpy as np
import pytest

import logdens as ld
from logdens.samplers import SamplerWarning

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
SCHOOLS = [f"s{i}" for i in range(8)]


def eight_schools():
    m = ld.Model(coords={"school": SCHOOLS})
    mu = m.param("mu", ld.Normal(0, 5))
    tau = m.param("tau", ld.HalfCauchy(5))
    z = m.param("z", ld.Normal(0, 1), dims="school")
    theta = m.deterministic("theta", mu + tau * z, dims="school")
    m.observe("y", ld.Normal(theta, SIGMA), Y, dims="school")
    return m


@pytest.fixture(scope="module")
def density():
    return eight_schools().compile()


def _draws(density, chains=2, n=7, seed=0):
    return np.random.default_rng(seed).normal(size=(chains, n, density.dim))


# ----- ld.from_draws -------------------------------------------------------
def test_from_draws_has_the_groups_of_nuts_with_constrained_values(density):
    draws = _draws(density)
    idata = ld.from_draws(density, draws, attrs={"sampler": "test"})
    assert {"posterior", "sample_stats", "log_likelihood", "observed_data"} == set(idata.children)
    post = idata.posterior
    assert post["mu"].shape == (2, 7) and post["z"].dims == ("chain", "draw", "school")
    assert list(post["theta"].coords["school"].values) == SCHOOLS
    assert post.attrs["sampler"] == "test"
    for c in range(2):
        for i in range(7):
            expected = density.constrain(draws[c, i])
            for name in ("mu", "tau", "z", "theta"):
                np.testing.assert_allclose(post[name].values[c, i], expected[name], rtol=1e-13)
            np.testing.assert_allclose(idata.log_likelihood["y"].values[c, i],
                                       density.pointwise_log_likelihood(draws[c, i])["y"], rtol=1e-13)
            assert idata.sample_stats["lp"].values[c, i] == pytest.approx(density.log_density(draws[c, i]),
                                                                         rel=1e-13)
    np.testing.assert_array_equal(idata.observed_data["y"].values, Y)
    assert idata.log_likelihood["y"].dims == ("chain", "draw", "school")


def test_from_draws_of_one_chain_with_its_statistics(density):
    draws = np.asfortranarray(_draws(density, chains=1, n=5)[0])  # (n, dim), any layout
    draws.flags.writeable = False
    idata = ld.from_draws(eight_schools(), draws, sample_stats={"diverging": np.zeros(5, dtype=bool),
                                                                "lp": np.arange(5.0)})
    assert idata.posterior["z"].shape == (1, 5, 8)
    assert idata.sample_stats["diverging"].dtype == bool
    np.testing.assert_array_equal(idata.sample_stats["lp"].values, [np.arange(5.0)])  # the caller's lp wins
    np.testing.assert_allclose(idata.posterior["tau"].values[0], np.exp(draws[:, 1]), rtol=1e-13)


def test_from_draws_equals_the_output_of_nuts(density):
    """The posterior of a run, given back to ``from_draws`` as theta, is rebuilt as it was."""
    idata = ld.nuts(density, draws=20, tune=20, chains=1, seed=1, progress=False)
    post = idata.posterior
    thetas = np.array([density.unconstrain({k: post[k].values[0, i] for k in ("mu", "tau", "z")})
                       for i in range(20)])
    again = ld.from_draws(density, thetas)
    for name in ("mu", "tau", "z", "theta"):
        np.testing.assert_allclose(again.posterior[name].values, post[name].values, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(again.log_likelihood["y"].values, idata.log_likelihood["y"].values,
                               rtol=1e-10)
    np.testing.assert_allclose(again.sample_stats["lp"].values, idata.sample_stats["lp"].values, rtol=1e-10)


def test_from_draws_refuses_draws_and_stats_of_the_wrong_shape(density):
    with pytest.raises(ValueError, match=r"last axis, got shape \(2, 3, 4\)"):
        ld.from_draws(density, np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match=r"shape \(chains, n, 10\) or \(n, 10\)"):
        ld.from_draws(density, np.zeros(10))
    with pytest.raises(ValueError, match=r"sample_stats\['acc'\] must have a leading shape \(2, 7\)"):
        ld.from_draws(density, _draws(density), sample_stats={"acc": np.zeros(3)})


def test_from_draws_leaves_out_a_log_likelihood_too_large_and_says_so(density):
    with pytest.warns(SamplerWarning, match="log_likelihood_max_bytes"):
        idata = ld.from_draws(density, _draws(density), log_likelihood_max_bytes=10)
    assert "log_likelihood" not in idata.children and "posterior" in idata.children
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "log_likelihood" not in ld.from_draws(density, _draws(density), log_likelihood=False).children


# ----- read-only and non-contiguous arrays everywhere -----------------------
def _vectors(theta):
    """``theta`` read-only, strided, big-endian and as a list."""
    frozen = theta.copy()
    frozen.flags.writeable = False
    return {"read-only": frozen, "strided": np.repeat(theta, 2)[::2], "big-endian": theta.astype(">f8"),
            "list": theta.tolist()}


def _matrices(thetas):
    """``thetas`` read-only, strided, Fortran-order, every other row, big-endian."""
    frozen = thetas.copy()
    frozen.flags.writeable = False
    return {"read-only": frozen, "strided": np.repeat(thetas, 2, axis=1)[:, ::2],
            "fortran": np.asfortranarray(thetas), "rows skipped": np.repeat(thetas, 2, axis=0)[::2],
            "big-endian": thetas.astype(">f8")}


def _same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b))
    if hasattr(a, "toarray"):
        a, b = a.toarray(), b.toarray()
    return np.array_equal(a, b)


ONE_POINT = {
    "log_density": lambda d, t: d.log_density(t),
    "log_density normalized": lambda d, t: d.log_density(t, propto=False, jacobian=False),
    "log_density_gradient": lambda d, t: d.log_density_gradient(t),
    "log_density_gradient without jacobian": lambda d, t: d.log_density_gradient(t, jacobian=False),
    "log_density_gradient into out": lambda d, t: d.log_density_gradient(t, out=np.empty(d.dim)),
    "gradient": lambda d, t: d.gradient(t),
    "pointwise_log_likelihood": lambda d, t: d.pointwise_log_likelihood(t),
    "per_sample_gradient": lambda d, t: d.per_sample_gradient(t, "y"),
    "per_sample_gradient sparse": lambda d, t: d.per_sample_gradient(t, "y", sparse=True),
    "constrain": lambda d, t: d.constrain(t),
    "param_constrain": lambda d, t: d.param_constrain(t, include_tp=True),
    "param_unconstrain": lambda d, t: d.param_unconstrain(np.exp(t[:10])),  # any flat values in the support
}
MANY_POINTS = {
    "log_density_batch": lambda d, t: d.log_density_batch(t),
    "log_density_gradient_batch": lambda d, t: d.log_density_gradient_batch(t),
    "constrain_batch": lambda d, t: d.constrain_batch(t),
    "pointwise_log_likelihood_batch": lambda d, t: d.pointwise_log_likelihood_batch(t),
}


@pytest.mark.parametrize("method", ONE_POINT)
def test_every_method_takes_read_only_and_non_contiguous_theta(density, method):
    theta = np.random.default_rng(3).normal(scale=0.5, size=density.dim)
    expected = ONE_POINT[method](density, theta)
    for layout, other in _vectors(theta).items():
        assert _same(ONE_POINT[method](density, other), expected), layout


@pytest.mark.parametrize("method", MANY_POINTS)
def test_every_batch_method_takes_read_only_and_non_contiguous_thetas(density, method):
    thetas = np.random.default_rng(4).normal(scale=0.5, size=(3, density.dim))
    expected = MANY_POINTS[method](density, thetas)
    for layout, other in _matrices(thetas).items():
        assert _same(MANY_POINTS[method](density, other), expected), layout


def test_unconstrain_takes_read_only_and_non_contiguous_values(density):
    values = density.constrain(np.random.default_rng(5).normal(size=density.dim))
    expected = density.unconstrain(values)
    for layout, z in _vectors(values["z"]).items():
        np.testing.assert_array_equal(density.unconstrain({**values, "z": z}), expected, err_msg=layout)


def _normal_model():
    m = ld.Model()
    mu, s = m.param("mu", ld.Normal(0, 5)), m.param("s", ld.HalfNormal(2))
    m.observe("y", ld.Normal(mu, s), np.array([0.3, -1.0, 2.0, 0.7, 1.1]))
    return m.compile()


RUNS = {
    "nuts": lambda d, init: ld.nuts(d, draws=5, tune=5, chains=2, init=init, progress=False, cores=1),
    "hmc": lambda d, init: ld.hmc(d, draws=5, tune=5, chains=2, init=init, progress=False, cores=1),
    "find_map": lambda d, init: ld.find_map(d, init=init),
    "laplace": lambda d, init: ld.laplace(d, init=init, draws=5),
    "pathfinder": lambda d, init: ld.pathfinder(d, init=init, seed=0, num_paths=1, draws=50),
    "advi": lambda d, init: ld.advi(d, init=init, seed=0, max_iters=20, draws=5, progress=False),
}


@pytest.mark.parametrize("sampler", RUNS)
@pytest.mark.filterwarnings("ignore::logdens.samplers.SamplerWarning")
def test_samplers_take_a_read_only_or_non_contiguous_init(sampler):
    """find_map, laplace and advi passed a read-only init to the numba entry as it was
    (numba's one signature refused it); every sampler takes it now."""
    density = _normal_model()
    init = np.array([0.1, 0.2])
    layouts = _vectors(init)
    if sampler in ("nuts", "hmc"):  # one start per chain
        layouts.update({f"per chain, {k}": v for k, v in _matrices(np.array([init, -init])).items()})
    for layout, other in layouts.items():
        RUNS[sampler](density, other)  # nothing raises


# ----- JAX: logdens.jax_bridge ----------------------------------------------
@pytest.fixture
def x64():
    """JAX with float64 for the test's duration (a context, not a global switch)."""
    jax = pytest.importorskip("jax")
    with jax.enable_x64(True):
        yield jax


def test_jax_gradient_equals_log_density_gradient(density, x64):
    from logdens.jax_bridge import as_jax_function
    jax = x64
    f = as_jax_function(density)
    theta = np.random.default_rng(9).normal(size=density.dim)
    lp, grad = density.log_density_gradient(theta)
    # the value alone and the value with its gradient are compiled apart: equal to rounding
    assert float(f(jax.numpy.asarray(theta))) == pytest.approx(lp, rel=1e-14)
    np.testing.assert_allclose(jax.grad(f)(theta), grad, rtol=1e-13)
    value, g = jax.jit(jax.value_and_grad(f))(theta)
    assert float(value) == pytest.approx(lp, rel=1e-14)
    np.testing.assert_allclose(g, grad, rtol=1e-13)
    # the cotangent scales the gradient (a function of the log density)
    np.testing.assert_allclose(jax.grad(lambda t: 0.5 * f(t) ** 2)(theta), lp * grad, rtol=1e-13)
    normalized = as_jax_function(density, propto=False, jacobian=False)
    expected = density.log_density_gradient(theta, propto=False, jacobian=False)
    assert float(normalized(theta)) == pytest.approx(expected[0], rel=1e-14)
    np.testing.assert_allclose(jax.grad(normalized)(theta), expected[1], rtol=1e-13)


def test_jax_function_under_vmap_is_one_batch_call(density, x64):
    from logdens.jax_bridge import as_jax_function
    jax = x64
    f = as_jax_function(density)
    thetas = np.random.default_rng(10).normal(size=(5, density.dim))
    lps, grads = density.log_density_gradient_batch(thetas)
    np.testing.assert_allclose(jax.vmap(f)(thetas), lps, rtol=1e-14)  # the value kernel
    np.testing.assert_array_equal(jax.jit(jax.vmap(jax.grad(f)))(thetas), grads)
    values, gs = jax.vmap(jax.value_and_grad(f))(thetas)
    np.testing.assert_array_equal(values, lps)
    np.testing.assert_array_equal(gs, grads)
    np.testing.assert_array_equal(jax.grad(lambda t: jax.numpy.sum(jax.vmap(f)(t)))(thetas), grads)


def test_jax_function_in_float32_and_with_a_wrong_shape(density):
    jax = pytest.importorskip("jax")
    from logdens.jax_bridge import as_jax_function
    f = as_jax_function(density)
    theta = np.random.default_rng(11).normal(size=density.dim).astype(np.float32)
    with jax.enable_x64(False):
        value, grad = jax.value_and_grad(f)(theta)
        assert value.dtype == np.float32 and grad.dtype == np.float32
        np.testing.assert_allclose(value, density.log_density(theta), rtol=1e-6)
        np.testing.assert_allclose(grad, density.log_density_gradient(theta)[1], rtol=1e-5, atol=1e-5)
        with pytest.raises(ValueError, match=r"theta must have shape \(10,\)"):
            f(theta[:3])


# ----- nutpie: the C adapter -------------------------------------------------
def test_nutpie_adapter_calls_the_c_entry(density):
    """The adapter nutpie calls gives log_density_gradient's numbers (the C entry
    and ``logp_grad`` are compiled apart: equal to rounding), -inf as a rejected
    point (code 4) and a wrong dimension as an error (-1)."""
    import ctypes
    pytest.importorskip("nutpie")
    from logdens.nutpie_bridge import _adapters
    logp, _ = _adapters()
    call = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_uint64, *[ctypes.c_void_p] * 4)(logp.address)
    from logdens.nutpie_bridge import nutpie_model
    model = nutpie_model(density)
    user_data = model.user_data
    theta, grad, lp = np.random.default_rng(12).normal(size=density.dim), np.empty(density.dim), np.empty(1)
    assert call(density.dim, theta.ctypes.data, grad.ctypes.data, lp.ctypes.data, user_data.ctypes.data) == 0
    expected = density.log_density_gradient(theta)
    assert lp[0] == pytest.approx(expected[0], rel=1e-14)
    np.testing.assert_allclose(grad, expected[1], rtol=1e-12)
    theta[1] = 800.0  # tau = exp(800) overflows: outside the support
    assert call(density.dim, theta.ctypes.data, grad.ctypes.data, lp.ctypes.data, user_data.ctypes.data) == 4
    assert call(3, theta.ctypes.data, grad.ctypes.data, lp.ctypes.data, user_data.ctypes.data) == -1


@pytest.mark.parametrize("callback", ["numba", "python"])
def test_nutpie_samples_theta_for_from_draws(density, callback):
    nutpie = pytest.importorskip("nutpie")
    from logdens.nutpie_bridge import nutpie_model
    trace = nutpie.sample(nutpie_model(density, callback=callback), draws=100, tune=100, chains=2,
                          seed=1, progress_bar=False)
    draws = trace.posterior["theta"].values
    assert draws.shape == (2, 100, density.dim) and np.isfinite(draws).all()
    idata = ld.from_draws(density, draws)
    np.testing.assert_allclose(idata.posterior["tau"].values, np.exp(draws[..., 1]), rtol=1e-13)
    with pytest.raises(ValueError, match="callback='c'; must be 'numba' or 'python'"):
        nutpie_model(density, callback="c")
