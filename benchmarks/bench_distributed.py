"""logdens.distributed on a LocalCluster (2 worker processes) against one process.

1. Many fits: ``ld.map_fits`` of 16 NUTS fits against a local loop of
   ``ld.nuts`` calls (whose chains run on threads, ``cores`` = all), for a
   small and a larger regression, with one or two chains per fit and with
   or without the log-likelihood group (which then travels back to the
   driver). The first ``map_fits`` call also pays the workers' warm-up
   (imports, loading the compiled model and the sampler from the disk
   cache); it is reported apart.
2. The sharded gradient: ``ShardedLogDensity.log_density_gradient`` with
   the rows split over 2 workers against the local gradient of the same
   model, at several data sizes, and the round trip of an empty shard.

Ratios are measured side by side in one run (the machine is shared and
noisy). Run: python benchmarks/bench_distributed.py
"""

import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_parallel import median_time  # noqa: E402
from machine import describe  # noqa: E402

import logdens as ld  # noqa: E402
from logdens.samplers.diagnostics import SamplerWarning  # noqa: E402

N_FITS = 16
FIT_SETTINGS = dict(draws=500, tune=500, chains=2)
SHARD_SIZES = (1_000, 100_000, 1_000_000, 4_000_000)


def regression_data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    return {"x": x, "y": 1.0 + 2.0 * x + rng.normal(size=n)}


def regression(n):
    """y ~ Normal(a + b x, sigma): the model of every fit and of the shards."""
    data = regression_data(n, 0)
    m = ld.Model()
    a, b = m.param("a", ld.Normal(0, 5)), m.param("b", ld.Normal(0, 5))
    sigma = m.param("sigma", ld.HalfNormal(2))
    m.observe("y", ld.Normal(a + b * m.data("x", data["x"]), sigma), data["y"])
    return m


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def many_fits(client, n_rows, chains, log_likelihood):
    """Seconds of a local loop of 16 fits and of one (warm) map_fits call, and
    whether their draws are equal."""
    m = regression(n_rows)
    datasets = [regression_data(n_rows, seed) for seed in range(N_FITS)]
    seeds = ld.fit_seeds(0, N_FITS)
    settings = dict(FIT_SETTINGS, chains=chains, log_likelihood=log_likelihood, progress=False)
    density = m.compile()

    def local_loop():
        fits = []
        for data, seed in zip(datasets, seeds):
            density.set_data(**data)
            fits.append(ld.nuts(density, seed=seed, **settings))
        return fits

    local, local_fits = timed(local_loop)
    remote, fits = timed(lambda: ld.map_fits(m, datasets, client=client, timeout=600, **settings))
    same = all(np.array_equal(a.posterior["b"].values, b.posterior["b"].values)
               for a, b in zip(local_fits, fits))
    return local, remote, same


def sharded_gradient(client, n_rows):
    """Median ms of the local gradient and of the sharded one (2 shards)."""
    m = regression(1_000)  # stand-in data travel with the model; the shards carry the rest
    data = regression_data(n_rows, 1)
    half = n_rows // 2
    shards = [{k: v[:half] for k, v in data.items()}, {k: v[half:] for k, v in data.items()}]
    density = m.compile()
    density.set_data(**data)
    theta = np.array([0.9, 1.8, 0.1])
    repeats = 200 if n_rows <= 100_000 else 30
    local = median_time(lambda: density.log_density_gradient(theta), repeats)
    with ld.ShardedLogDensity(m, shards, client, timeout=600) as sharded:
        np.testing.assert_allclose(sharded.log_density_gradient(theta)[0],
                                   density.log_density_gradient(theta)[0], rtol=1e-10)
        remote = median_time(lambda: sharded.log_density_gradient(theta), repeats)
    return local * 1e3, remote * 1e3


def round_trip(client):
    """Median ms of a sharded gradient whose shards hold one row each: the overhead."""
    m = regression(1_000)
    one = [{k: v[:1] for k, v in regression_data(2, 2).items()}] * 2
    with ld.ShardedLogDensity(m, one, client, timeout=600) as sharded:
        return median_time(lambda: sharded.log_density_gradient(np.zeros(3)), 500) * 1e3


def main():
    from distributed import Client, LocalCluster

    import dask
    warnings.simplefilter("ignore", SamplerWarning)
    print(describe())
    print(f"dask {dask.__version__}; LocalCluster(n_workers=2, threads_per_worker=1, processes=True)")
    start, cluster = timed(lambda: LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                dashboard_address=None))
    client = Client(cluster)
    print(f"cluster start: {start:.2f} s\n")
    m = regression(20)
    ld.nuts(m.compile(), draws=10, tune=10, chains=2, progress=False)  # load the sampler here too
    first, _ = timed(lambda: ld.map_fits(m, [{}, {}], client=client, progress=False, timeout=600,
                                         draws=10, tune=10, chains=2))
    print(f"first map_fits of 2 tiny fits (the workers import logdens and load the model and "
          f"the sampler from the disk cache): {first:.2f} s\n")
    print(f"## {N_FITS} NUTS fits ({FIT_SETTINGS['tune']} + {FIT_SETTINGS['draws']} iterations "
          "per chain), warm workers\n")
    print("| rows per fit | chains | log_likelihood | local loop s | map_fits s | "
          "local / map_fits | draws equal |")
    print("|---|---|---|---|---|---|---|")
    for n_rows, chains, log_likelihood in [(20, 1, True), (20, 2, True), (200_000, 1, False),
                                           (200_000, 2, False), (20_000, 2, True)]:
        local, remote, same = many_fits(client, n_rows, chains, log_likelihood)
        print(f"| {n_rows:,} | {chains} | {log_likelihood} | {local:.2f} | {remote:.2f} | "
              f"{local / remote:.2f}x | {same} |")
    print("\n## Sharded gradient (2 shards on 2 workers) against the local gradient\n")
    print(f"round trip of two one-row shards: {round_trip(client):.2f} ms\n")
    print("| rows | local ms | sharded ms | sharded / local |")
    print("|---|---|---|---|")
    for n_rows in SHARD_SIZES:
        local, remote = sharded_gradient(client, n_rows)
        print(f"| {n_rows:,} | {local:.3f} | {remote:.3f} | {remote / local:.2f}x |")
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
