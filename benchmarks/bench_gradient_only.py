"""The gradient alone (``LogDensity.gradient``) against the value and gradient
(``log_density_gradient``) and against JAX ``jit(grad)`` and
``jit(value_and_grad)``, one core, side by side in one run, as ratios.

Run: python benchmarks/bench_gradient_only.py [--quick]

Both libraries are called from Python with preallocated or device arrays, as
an optimizer or a stochastic-gradient loop calls them. JAX comes from the
optional ``bench`` extra; without it its columns are skipped. Every JAX
gradient is checked against ours before it is timed. ``python
benchmarks/machine.py --avx2 python benchmarks/bench_gradient_only.py`` builds
true AVX2 code (``NUMBA_CPU_NAME=haswell`` alone keeps an AVX-512 host's
features).
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402

import numpy as np  # noqa: E402

from bench_engine import median_time  # noqa: E402
from engine_models import hierarchical, logistic, normal, poisson  # noqa: E402
from machine import describe, pin_one_core  # noqa: E402


def jax_calls(jax_fn, theta):
    """``(grad, value_and_grad)`` of JAX as calls returning numpy gradients, or None."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    t = jnp.asarray(theta)
    grad, both = jax.jit(jax.grad(jax_fn(jnp))), jax.jit(jax.value_and_grad(jax_fn(jnp)))
    return (lambda: np.asarray(grad(t).block_until_ready()),
            lambda: np.asarray(both(t)[1].block_until_ready()))


def row(build, n, rng, budget):
    """Seconds per call of each contender on model ``build`` of size ``n``."""
    model, _, jax_fn, _, theta = build(n, rng)
    density = model.compile()
    out = np.empty(density.dim)
    _, want = density.log_density_gradient(theta, jacobian=False)
    np.testing.assert_allclose(density.gradient(theta, jacobian=False), want, rtol=1e-12, atol=1e-12)
    times = {"value+grad": median_time(lambda: density.log_density_gradient(theta, out=out), budget),
             "grad": median_time(lambda: density.gradient(theta, out=out), budget)}
    calls = jax_calls(jax_fn, theta)
    if calls is not None:
        for name, call in zip(("jax grad", "jax value+grad"), calls):
            np.testing.assert_allclose(call(), want, rtol=1e-8, atol=1e-8)
            times[name] = median_time(call, budget)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes, shorter timing")
    args = parser.parse_args()
    print(describe(pin_one_core()))
    budget = 0.1 if args.quick else 0.4
    sizes = [100, 10_000, 1_000_000] if args.quick else [100, 1_000, 10_000, 100_000, 1_000_000]
    models = {"poisson": (poisson, sizes), "normal": (normal, sizes), "logistic": (logistic, [10_000]),
              "hierarchical": (hierarchical, [20_000])}
    print("\n| model | N | value+grad us | grad us | grad / value+grad | jax grad us "
          "| jax grad / ours | jax value+grad / ours value+grad |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for name, (build, ns) in models.items():
        for n in ns:
            t = row(build, n, rng, budget)
            us = {k: v * 1e6 for k, v in t.items()}
            jax = (f"{us['jax grad']:.1f} | {t['jax grad'] / t['grad']:.2f} | "
                   f"{t['jax value+grad'] / t['value+grad']:.2f}") if "jax grad" in t else "- | - | -"
            print(f"| {name} | {n:,} | {us['value+grad']:.1f} | {us['grad']:.1f} | "
                  f"{t['grad'] / t['value+grad']:.2f} | {jax} |", flush=True)


if __name__ == "__main__":
    main()
