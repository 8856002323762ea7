"""logdens.distributed on a LocalCluster of 2 worker processes: results equal local runs,
also when a worker process dies mid-run."""

import os
import signal
import sys
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

import logdens as ld  # noqa: E402
from logdens import cache  # noqa: E402
from logdens import distributed as ldd  # noqa: E402
from logdens.samplers.diagnostics import SamplerWarning  # noqa: E402

# A hang guard: the file takes about 70 s on 2 cores shared with other work
# (4 tests kill a worker and wait for its nanny to start another); every
# wait on a future has its own timeout below this one.
pytestmark = pytest.mark.timeout(120)
WAIT = 60  # seconds any one call may wait for its futures
SHORT = dict(draws=60, tune=60, chains=2, progress=False)


@pytest.fixture(scope="module")
def client():
    # A nanny restarts a killed worker; on a busy machine that can take longer
    # than Dask's lost-worker-timeout (15 s), after which the cluster closes it.
    with dask.config.set({"distributed.deploy.lost-worker-timeout": f"{WAIT}s"}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, death_timeout=WAIT)
        client = distributed.Client(cluster, timeout=WAIT)
        try:
            yield client
        finally:
            client.close(timeout=WAIT)
            cluster.close(timeout=WAIT)


def regression_data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    return {"x": x, "y": 1.0 + 2.0 * x + 0.5 * rng.normal(size=n)}


def regression():
    """y ~ Normal(a + b x, sigma), with a deterministic that reads no data."""
    data = regression_data(20, 0)
    m = ld.Model()
    a, b = m.param("a", ld.Normal(0, 5)), m.param("b", ld.Normal(0, 5))
    sigma = m.param("sigma", ld.HalfNormal(2))
    m.deterministic("b_squared", b * b)
    m.observe("y", ld.Normal(a + b * m.data("x", data["x"]), sigma), data["y"])
    return m


def hierarchical_poisson(n=120, groups=5, seed=1):
    """Counts with group effects gathered by index (non-centered, so that its
    MAP exists), a scalar potential: the terms a shard must not count twice."""
    rng = np.random.default_rng(seed)
    g, x = rng.integers(0, groups, n), rng.normal(size=n)
    y = rng.poisson(np.exp(0.3 + 0.5 * g / groups + 0.5 * x))
    m = ld.Model()
    mu, tau = m.param("mu", ld.Normal(0, 2)), m.param("tau", ld.HalfNormal(1))
    z = m.param("z", ld.Normal(0, 1), shape=groups)
    a = m.deterministic("a", mu + tau * z)
    b = m.param("b", ld.Normal(0, 1))
    m.potential("tau_penalty", -0.1 * tau)
    m.observe("y", ld.PoissonLog(a[m.data("g", g)] + b * m.data("x", x)), y)
    return m, {"g": g, "x": x, "y": y}


class KillMidRun(distributed.SchedulerPlugin):
    """Kills a worker with work in flight: as the first task whose key begins
    with ``prefix`` finishes, the worker running another one gets SIGKILL,
    just after Dask's active memory manager (which runs every 2 s) has
    dropped the copies of inputs that no running task needs, so the dead
    worker held the last copy of what its task reads. One kill in all (the
    one that creates ``flag``)."""

    name = "logdens-test-kill-mid-run"

    def __init__(self, prefix, flag):
        self.prefix, self.flag = prefix, str(flag)

    async def start(self, scheduler):
        self.scheduler = scheduler

    def transition(self, key, start, finish, *args, **kwargs):
        if finish != "memory" or not str(key).startswith(self.prefix) or os.path.exists(self.flag):
            return
        running = [ts.processing_on for k, ts in self.scheduler.tasks.items()
                   if str(k).startswith(self.prefix) and ts.processing_on is not None]
        if running:
            self.scheduler.extensions["amm"].run_once()
            open(self.flag, "w").close()
            os.kill(running[0].pid, signal.SIGKILL)


@pytest.fixture
def kill_mid_run(client, tmp_path):
    """``kill_mid_run(prefix)`` arms :class:`KillMidRun` and returns its flag file;
    afterwards the cluster is back to 2 workers (their nannies restart them)."""
    flag = tmp_path / "killed"

    def arm(prefix):
        client.register_plugin(KillMidRun(prefix, flag))
        return flag

    try:
        yield arm
    finally:
        client.unregister_scheduler_plugin(KillMidRun.name)
        client.wait_for_workers(2, timeout=WAIT)


def assert_same_groups(local, remote, groups):
    for group in groups:
        assert set(local[group].data_vars) == set(remote[group].data_vars)
        for name in local[group].data_vars:
            np.testing.assert_array_equal(remote[group][name].values, local[group][name].values)


def assert_fits_equal_local_fits(m, datasets, fits, seed):
    """NUTS fits of ``map_fits(m, datasets, seed=seed, **SHORT)`` equal local runs with their seeds."""
    seeds = ldd.fit_seeds(seed, len(datasets))
    assert [f.posterior.attrs["seed"] for f in fits] == seeds
    density = m.compile()
    for fit, data, seed in zip(fits, datasets, seeds):
        density.set_data(**data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplerWarning)
            local = ld.nuts(density, seed=seed, **SHORT)
        assert_same_groups(local, fit, ("posterior", "sample_stats", "log_likelihood", "observed_data"))


def test_clear_error_without_dask(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed now fails
    m = regression()
    for call in (lambda: ldd.map_fits(m, [{}]), lambda: ldd.nuts_distributed(m),
                 lambda: ldd.ShardedLogDensity(m, [{}])):
        with pytest.raises(ImportError, match=r'logdens\[dask\]'):
            call()


def test_a_likelihood_whose_rows_do_not_add_up_over_shards_is_refused():
    """A lagged likelihood (rows read against other rows) or a series read whole:
    split, each shard would start its own series (no cluster needed to say so)."""
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1))
    y = m.data("y", np.linspace(0, 1, 20))
    m.observe("ahead", ld.Normal(a * y[:-1], 1.0), y[1:])
    with pytest.raises(ld.ModelError, match=r"term 'ahead' reads y\[(1:|:-1)\], rows of data against other rows"):
        ldd.ShardedLogDensity(m, [{}])
    m = ld.Model()
    rho = m.param("rho", ld.Uniform(-1, 1), shape=1)
    m.observe("y", ld.AR(rho, 1.0), np.linspace(0, 1, 20))
    with pytest.raises(ld.ModelError, match=r"term 'y' reads data y whole"):
        ldd.ShardedLogDensity(m.compile(backend="python"), [{}])


def test_a_cluster_without_workers_is_a_timeout_that_says_so():
    """Shards are placed on the workers there are: with none (a cluster still
    starting them, or one that lost them) the density waits ``timeout`` for a
    first one, then says so, rather than failing on an empty list."""
    cluster = distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None)
    try:
        with distributed.Client(cluster, timeout=WAIT) as empty:
            with pytest.raises(TimeoutError, match="the Dask cluster has no worker, and none joined within 1 s"):
                ldd.ShardedLogDensity(regression(), [regression_data(10, 1)], empty, timeout=1)
    finally:
        cluster.close(timeout=WAIT)


def test_a_worker_rebuilds_the_density_from_model_source_and_data():
    m = regression()
    density = m.compile()
    density.set_data(**regression_data(9, 3))
    shipped = ldd.payload(density)
    theta = np.array([0.2, -0.7, 0.4])
    assert shipped.key == cache.key(density.source())
    for rebuilt in (ldd.load(shipped), ldd.load(shipped._replace(key="other versions"))):
        assert rebuilt is not density and rebuilt.source() == density.source()
        np.testing.assert_array_equal(rebuilt.data()["x"], density.data()["x"])
        lp, grad = rebuilt.log_density_gradient(theta)
        lp_ref, grad_ref = density.log_density_gradient(theta)
        assert lp == lp_ref
        np.testing.assert_array_equal(grad, grad_ref)


def test_fit_seeds_are_distinct_and_do_not_depend_on_the_number_of_fits():
    seeds = ldd.fit_seeds(7, 50)
    assert len(set(seeds)) == 50
    assert ldd.fit_seeds(7, 3) == seeds[:3]
    assert ldd.fit_seeds(8, 3) != seeds[:3]


def test_map_fits_equal_local_fits_with_the_same_seeds(client):
    # Exact equality: the same compiled code on the same CPU, and NUTS results
    # depend on the seed alone. Data sets 0 and 2 are the same, so only their
    # seeds tell them apart.
    m = regression()
    datasets = [regression_data(20, 0), regression_data(25, 1), regression_data(20, 0)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fits = ldd.map_fits(m, datasets, method="nuts", client=client, seed=11, timeout=WAIT, **SHORT)
    assert_fits_equal_local_fits(m, datasets, fits, 11)
    assert not np.array_equal(fits[0].posterior["a"].values, fits[2].posterior["a"].values)
    # a worker's sampler warnings come back, prefixed with their fit (60 draws
    # of 2 chains are too few for ArviZ's ESS threshold: there are some)
    sampler = [str(w.message) for w in caught if w.category is SamplerWarning]
    assert sampler and all(message.startswith("fit ") for message in sampler)


def test_map_fits_runs_other_methods_on_a_compiled_density(client):
    m = regression()
    datasets = [regression_data(15, 4), regression_data(30, 5)]
    fits = ldd.map_fits(m.compile(), datasets, method="find_map", client=client, timeout=WAIT)
    density = m.compile()
    for fit, data, seed in zip(fits, datasets, ldd.fit_seeds(0, 2)):
        density.set_data(**data)
        np.testing.assert_array_equal(fit.theta, ld.find_map(density, seed=seed).theta)
    with pytest.raises(ValueError, match="method="):
        ldd.map_fits(m, datasets, method="sgd", client=client)


def test_chains_spread_over_workers_equal_a_local_multichain_run(client):
    m = regression()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        remote = ldd.nuts_distributed(m, draws=60, tune=60, chains=3, seed=5, client=client,
                                      progress=False, timeout=WAIT)
        local = ld.nuts(m, draws=60, tune=60, chains=3, seed=5, progress=False)
    assert_same_groups(local, remote, ("posterior", "sample_stats", "log_likelihood"))
    for group in ("posterior", "sample_stats"):
        attrs = [{k: v for k, v in idata[group].attrs.items() if k != "created_at"}
                 for idata in (remote, local)]
        assert attrs[0] == attrs[1]


@pytest.fixture(scope="module")
def sharded(client):
    m, data = hierarchical_poisson()
    cuts = [0, 50, 90, 120]  # three shards on two workers, of unequal sizes
    shards = [{k: v[lo:hi] for k, v in data.items()} for lo, hi in zip(cuts, cuts[1:])]
    shards[2] = client.submit(dict, **shards[2])  # data made on a worker, as a Future
    with ldd.ShardedLogDensity(m, shards, client, timeout=WAIT) as sharded:
        yield sharded, m.compile()


def test_sharded_gradient_equals_the_unsharded_one(sharded):
    sharded, density = sharded
    assert sharded.dim == density.dim and sharded.n_shards == 3
    assert sharded.param_unc_names() == density.param_unc_names()
    rng = np.random.default_rng(2)
    for theta in rng.normal(size=(4, density.dim)):
        for kwargs in ({}, {"propto": False}, {"jacobian": False}):
            lp, grad = sharded.log_density_gradient(theta, **kwargs)
            lp_ref, grad_ref = density.log_density_gradient(theta, **kwargs)
            np.testing.assert_allclose(lp, lp_ref, rtol=1e-12)
            np.testing.assert_allclose(grad, grad_ref, rtol=1e-12, atol=1e-12 * np.abs(grad_ref).max())
            np.testing.assert_allclose(sharded.log_density(theta, **kwargs),
                                       density.log_density(theta, **kwargs), rtol=1e-12)


def test_find_map_on_the_sharded_density_finds_the_same_optimum(sharded):
    sharded, density = sharded
    for jacobian in (False, True):
        fit, ref = ld.find_map(sharded, jacobian=jacobian), ld.find_map(density, jacobian=jacobian)
        assert fit.success and ref.success
        # the same L-BFGS run up to the last bits of each sum: the same optimum
        np.testing.assert_allclose(fit.theta, ref.theta, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(fit.log_density, ref.log_density, rtol=1e-10)
    assert set(fit.params) == {"mu", "tau", "z", "b", "a"}  # a: a deterministic that reads no data


def test_nuts_runs_on_the_sharded_density(sharded):
    sharded, density = sharded
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        idata = ld.nuts(sharded, draws=10, tune=10, chains=1, seed=3, progress=False)
        local = ld.nuts(density, draws=10, tune=10, chains=1, seed=3, progress=False)
    assert idata.posterior["a"].shape == (1, 10, 5)
    # a few dozen gradients, each equal to the unsharded one to rounding
    np.testing.assert_allclose(idata.posterior["a"].values, local.posterior["a"].values, rtol=1e-6)


def test_the_docs_page_runs_as_written(client, monkeypatch):
    import dask.distributed
    from markdown_blocks import python_blocks
    setup, usage, close = (block.code for block in python_blocks("docs/dask.md"))
    # the set-up as written, with the module's cluster standing in for its own
    made = {}
    monkeypatch.setattr(dask.distributed, "LocalCluster", lambda **kwargs: made.update(kwargs))
    monkeypatch.setattr(dask.distributed, "Client", lambda cluster: client)
    namespace = {}
    exec(compile(setup, "docs/dask.md", "exec"), namespace)
    assert namespace["client"] is client
    # the dashboard on this machine alone (Dask's default listens on every interface)
    assert made.get("dashboard_address", "").startswith("127.0.0.1:")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        exec(compile(usage, "docs/dask.md", "exec"), namespace)
    assert len(namespace["fits"]) == 3
    assert namespace["fit"].params["b"] == pytest.approx(2.0, abs=0.3)
    assert close == "client.close()"  # the module's client outlives the test: not run


# ----- a worker dies mid-run: only its work is lost, and it is done again ----
# (slow: a nanny starts a new worker, which may redo the lost work cold)

@pytest.mark.slow
def test_map_fits_with_a_worker_lost_mid_fit_returns_every_fit(client, kill_mid_run):
    # Nothing a fit needs lives on one worker alone (data sets scattered to
    # the dead worker were lost, and every fit was cancelled): the lost fit
    # runs again elsewhere, and the others come back as they were.
    m = regression()
    datasets = [regression_data(20, 0), regression_data(25, 1), regression_data(15, 2)]
    flag = kill_mid_run("logdens-nuts-")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        fits = ldd.map_fits(m, datasets, client=client, seed=3, timeout=WAIT, **SHORT)
    assert flag.exists()  # a worker did die with a fit in flight
    assert_fits_equal_local_fits(m, datasets, fits, 3)


@pytest.mark.slow
def test_nuts_distributed_with_a_worker_lost_mid_chain_returns_every_chain(client, kill_mid_run):
    # (the dead worker held the last copy of the scattered model, and every
    # chain was cancelled: FutureCancelledError)
    m = regression()
    flag = kill_mid_run("logdens-chain-")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        remote = ldd.nuts_distributed(m, seed=4, client=client, timeout=WAIT, **SHORT)
        local = ld.nuts(m, seed=4, **SHORT)
    assert flag.exists()
    assert_same_groups(local, remote, ("posterior", "sample_stats", "log_likelihood"))


class DiesAt:
    """``density`` whose ``at``-th gradient first ends the worker process ``address``."""

    def __init__(self, density, at, client, address):
        self.density, self.at, self.client, self.address = density, at, client, address
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.density, name)

    def log_density_gradient(self, theta, *args, **kwargs):
        self.calls += 1
        if self.calls == self.at:
            self.client.run(os._exit, 1, workers=[self.address], on_error="ignore")
        return self.density.log_density_gradient(theta, *args, **kwargs)


@pytest.mark.slow
def test_nuts_on_a_sharded_density_rebuilds_a_shard_lost_mid_run(client):
    # (the lost actor's calls failed inside the sampler: ignored exceptions,
    # then KeyError, and the draws were lost)
    m, data = hierarchical_poisson()
    shards = [{k: v[:60] for k, v in data.items()}, {k: v[60:] for k, v in data.items()}]
    first = sorted(client.scheduler_info()["workers"])[0]  # shard 0's, the head
    try:
        with ldd.ShardedLogDensity(m, shards, client, timeout=WAIT) as sharded:
            dying = DiesAt(sharded, 15, client, first)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SamplerWarning)
                idata = ld.nuts(dying, draws=10, tune=10, chains=1, seed=3, progress=False)
                local = ld.nuts(m, draws=10, tune=10, chains=1, seed=3, progress=False)
            assert dying.calls > 15 and first not in client.scheduler_info()["workers"]
            np.testing.assert_allclose(idata.posterior["a"].values, local.posterior["a"].values, rtol=1e-6)
    finally:
        client.wait_for_workers(2, timeout=WAIT)


@pytest.mark.slow
def test_a_lost_shard_whose_data_cannot_be_recomputed_is_a_clear_error(client):
    """Data scattered by the user are lost with their worker: the shard cannot be
    rebuilt, and the density says which and why rather than waiting or hanging."""
    m = regression()
    second = sorted(client.scheduler_info()["workers"])[1]
    scattered = client.scatter([regression_data(10, 2)], workers=[second], hash=False)[0]
    try:
        with ldd.ShardedLogDensity(m, [regression_data(10, 1), scattered], client, timeout=WAIT) as sharded:
            theta = np.zeros(sharded.dim)
            sharded.log_density_gradient(theta)
            client.run(os._exit, 1, workers=[second], on_error="ignore")
            with pytest.raises(ldd.ShardLost, match=r"shard 1 cannot be built .* its data, a Future, were lost"):
                sharded.log_density_gradient(theta)
    finally:
        client.wait_for_workers(2, timeout=WAIT)
