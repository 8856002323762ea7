"""External samplers: what a Python callback costs per gradient against the
model's C entry, in nutpie, and what the JAX bridge and emcee's batch call cost.

nutpie runs one chain with each of ``logdens.nutpie_bridge.nutpie_model``'s
callbacks: ``"numba"`` (nutpie calls a C adapter that calls the model's C
entry: no Python) and ``"python"`` (nutpie's ``from_pyfunc``: a Python call
per gradient). Time per gradient is the run's wall time over its gradient
count (nutpie's ``n_steps``, warmup included), so it holds nutpie's own work
per leapfrog step too; the difference between the two is the callback's
overhead. Beside them, the model's own gradient called from Python
(``log_density_gradient`` into ``out``: the direct entry point) and from the
JAX bridge (``jax.jit(jax.grad(f))``), and emcee's ``log_density_batch`` of 32
walkers against 32 ``log_density`` calls.

Run: python benchmarks/bench_external.py (one core, about a minute; needs
nutpie, and jax for its row).
"""

import os

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})

import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logdens as ld  # noqa: E402
from bench_engine import median_time  # noqa: E402
from logdens.nutpie_bridge import nutpie_model  # noqa: E402
from machine import describe  # noqa: E402


def eight_schools():
    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    m = ld.Model()
    mu, tau = m.param("mu", ld.Normal(0, 5)), m.param("tau", ld.HalfCauchy(5))
    z = m.param("z", ld.Normal(0, 1), shape=8)
    m.observe("y", ld.Normal(mu + tau * z, sigma), y)
    return m.compile()


def logistic(n, d=10, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-x @ rng.normal(size=d)))).astype(np.int64)
    m = ld.Model()
    alpha, beta = m.param("alpha", ld.Normal(0, 2)), m.param("beta", ld.Normal(0, 1), shape=d)
    m.observe("y", ld.BernoulliLogit(m.data("X", x) @ beta + alpha), y)
    return m.compile()


def nutpie_per_gradient(density, callback, repeats=3):
    """Seconds per gradient of one nutpie chain (best of ``repeats``) and the gradient count."""
    import nutpie
    model = nutpie_model(density, callback=callback)
    best = np.inf
    for r in range(repeats):
        start = time.perf_counter()
        trace = nutpie.sample(model, draws=1000, tune=1000, chains=1, cores=1, seed=r,
                              progress_bar=False)
        wall = time.perf_counter() - start
        n = int(trace.sample_stats["n_steps"].sum() + trace.warmup_sample_stats["n_steps"].sum())
        best = min(best, wall / n)
    return best, n


def jax_per_gradient(density, theta):
    try:
        import jax
    except ImportError:
        return np.nan
    from logdens.jax_bridge import as_jax_function
    with jax.enable_x64(True):
        grad = jax.jit(jax.grad(as_jax_function(density)))
        theta = jax.numpy.asarray(theta)
        return median_time(lambda: grad(theta).block_until_ready())


def row(name, density):
    theta = np.random.default_rng(1).normal(scale=0.3, size=density.dim)
    out = np.empty(density.dim)
    direct = median_time(lambda: density.log_density_gradient(theta, out=out))
    c_entry, n_c = nutpie_per_gradient(density, "numba")
    python, n_py = nutpie_per_gradient(density, "python")
    jax_grad = jax_per_gradient(density, theta)
    walkers = np.random.default_rng(2).normal(scale=0.3, size=(32, density.dim))
    batch = median_time(lambda: density.log_density_batch(walkers))
    loop = median_time(lambda: [density.log_density(w) for w in walkers])
    us = 1e6
    print(f"| {name} | {density.dim} | {direct * us:.2f} | {c_entry * us:.2f} | {python * us:.2f} | "
          f"{(python - c_entry) * us:.2f} | {python / c_entry:.1f}x | {jax_grad * us:.1f} | "
          f"{batch * us:.1f} / {loop * us:.1f} |", flush=True)


def main():
    print(describe("pinned to one core"))
    print()
    print("| model | dim | Python -> `log_density_gradient` (us) | nutpie, C entry (us/grad) | "
          "nutpie, Python callback (us/grad) | callback overhead (us/grad) | ratio | "
          "JAX bridge `jit(grad)` (us) | emcee: batch of 32 / 32 calls (us) |")
    print("|---|---|---|---|---|---|---|---|---|")
    row("eight schools", eight_schools())
    row("logistic N=1000", logistic(1000))
    row("logistic N=20000", logistic(20000))


if __name__ == "__main__":
    main()
