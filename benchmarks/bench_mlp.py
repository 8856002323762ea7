"""A small neural network's likelihood (10-32-32-10, tanh, Normal errors): the
summed gradient, the per-sample gradient rows and the empirical Fisher
information (the sum of the rows' outer products), ours against JAX
``jit(value_and_grad)``, ``jit(vmap(grad))`` and ``jit`` of the rows' ``G.T @ G``,
one pinned core, side by side in one run, as ratios, at batches of 32, 256 and 4096 rows.

Run: python benchmarks/bench_mlp.py [--quick]

Both are called from Python as a stochastic-gradient loop calls them: ours
with a preallocated output, JAX with device arrays. Every JAX result is
checked against ours before it is timed. JAX comes from the optional
``bench`` extra; without it its columns are skipped.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import logdens as ld  # noqa: E402
from bench_engine import median_time  # noqa: E402
from machine import describe, pin_one_core  # noqa: E402

LAYERS = (10, 32, 32, 10)


def build(n, rng):
    """The model with ``n`` rows of data compiled for the CPU, the data, and a point."""
    m, X, Y = network(n, rng)
    density = m.compile()
    theta = rng.normal(size=density.dim) * 0.3
    return density, X, Y, theta


def network(n, rng):
    """The model with ``n`` rows of random data, and the data."""
    d, h, _, k = LAYERS
    X, Y = rng.normal(size=(n, d)), rng.normal(size=(n, k))
    m = ld.Model()
    x = m.data("X", X)
    W1 = m.param("W1", ld.Normal(0, 1), shape=(d, h))
    b1 = m.param("b1", ld.Normal(0, 1), shape=h)
    W2 = m.param("W2", ld.Normal(0, 1), shape=(h, h))
    b2 = m.param("b2", ld.Normal(0, 1), shape=h)
    W3 = m.param("W3", ld.Normal(0, 1), shape=(h, k))
    b3 = m.param("b3", ld.Normal(0, 1), shape=k)
    sigma = m.param("sigma", ld.HalfNormal(1))
    out = ld.tanh(ld.tanh(x @ W1 + b1) @ W2 + b2) @ W3 + b3
    m.observe("Y", ld.Normal(out, sigma), Y)
    return m, X, Y


def jax_functions(density, X, Y):
    """JAX's (value_and_grad, per-sample grad) of the same log density, or None."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    slots = density.layout.params

    def unpack(theta):
        p = {s.name: theta[s.offset:s.offset + s.size].reshape(s.shape) for s in slots.values()}
        return p, jnp.exp(p["sigma"]), p["sigma"]  # sigma's log transform and its log-Jacobian

    def net(p, x):
        return jnp.tanh(jnp.tanh(x @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]) @ p["W3"] + p["b3"]

    def loglik(theta, x, y):
        p, sigma, _ = unpack(theta)
        z = (y - net(p, x)) / sigma
        return jnp.sum(-0.5 * z * z - jnp.log(sigma) - 0.5 * jnp.log(2 * jnp.pi))

    def logp(theta, x, y):
        p, sigma, log_j = unpack(theta)
        prior = sum(jnp.sum(-0.5 * p[n] ** 2) for n in ("W1", "b1", "W2", "b2", "W3", "b3"))
        return prior - 0.5 * sigma ** 2 + log_j + loglik(theta, x, y)

    x, y = jnp.asarray(X), jnp.asarray(Y)
    both = jax.jit(jax.value_and_grad(logp))
    per_row = jax.vmap(jax.grad(loglik), in_axes=(None, 0, 0))
    rows = jax.jit(per_row)
    fisher = jax.jit(lambda t, x, y: per_row(t, x, y).T @ per_row(t, x, y))
    return (lambda t: both(t, x, y)[1].block_until_ready(), lambda t: rows(t, x, y).block_until_ready(),
            lambda t: fisher(t, x, y).block_until_ready())


def row(n, rng, budget, rounds=5):
    """Seconds per call of each contender at ``n`` rows: the median of ``rounds``
    rounds, each timing every contender in turn, so that a change of load on
    a shared machine reaches all of them."""
    density, X, Y, theta = build(n, rng)
    grad, rows = np.empty(density.dim), np.empty((n, density.dim))
    _, want = density.log_density_gradient(theta)
    want_rows = density.per_sample_gradient(theta, "Y")
    calls = {"value+grad": lambda: density.log_density_gradient(theta, out=grad),
             "per-sample": lambda: density.per_sample_gradient(theta, "Y", out=rows),
             "fisher": lambda: density.empirical_fisher(theta, "Y")}
    jax = jax_functions(density, X, Y)
    if jax is not None:
        import jax.numpy as jnp
        t = jnp.asarray(theta)
        np.testing.assert_allclose(np.asarray(jax[0](t)), want, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(np.asarray(jax[1](t)), want_rows, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(np.asarray(jax[2](t)), want_rows.T @ want_rows, rtol=1e-8, atol=1e-6)
        calls.update({"jax value+grad": lambda: jax[0](t), "jax per-sample": lambda: jax[1](t),
                      "jax fisher": lambda: jax[2](t)})
    samples = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(median_time(call, budget / rounds))
    return {name: float(np.median(times)) for name, times in samples.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing budget")
    args = parser.parse_args()
    budget = 0.3 if args.quick else 1.5
    print(describe(pin_one_core()))
    rng = np.random.default_rng(20261126)
    print("| rows | value+grad (us) | per-sample (us) | per-sample / value+grad | Fisher (us) "
          "| JAX value+grad (us) | JAX per-sample (us) | JAX Fisher (us) "
          "| JAX / ours: value+grad | per-sample | Fisher |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in (32, 256, 4096):
        started = time.perf_counter()
        t = {k: v * 1e6 for k, v in row(n, rng, budget).items()}
        names = ("value+grad", "per-sample", "fisher")
        jax = ([f"{t['jax ' + k]:.0f}" for k in names] + [f"{t['jax ' + k] / t[k]:.2f}" for k in names]
               if "jax value+grad" in t else ["-"] * 6)
        print(f"| {n} | {t['value+grad']:.0f} | {t['per-sample']:.0f} | {t['per-sample'] / t['value+grad']:.2f} | "
              f"{t['fisher']:.0f} | " + " | ".join(jax) + f" |  ({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
