"""A Gaussian-process regression (an exponentiated-quadratic covariance with
amplitude, length scale and noise as parameters) at n = 200 and 1000 inputs:
ours ``log_density_gradient`` against JAX ``jit(value_and_grad)`` of NumPyro's
potential energy of the same model (``jnp.linalg.cholesky`` inside
``MultivariateNormal``), one core, side by side in one run, as ratios.

Run: python benchmarks/bench_gp.py [--quick] [--sizes 200 1000]

Both log densities are compared at one constrained point before anything is
timed. JAX and NumPyro come from the optional ``bench`` extra; without them
their columns are skipped.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402

import numpy as np  # noqa: E402

import logdens as ld  # noqa: E402
from bench_multivariate import row  # noqa: E402
from machine import describe  # noqa: E402


def gp_regression(n, rng):
    """Noisy draws of a smooth function at n sorted inputs."""
    x = np.sort(rng.uniform(0, 10, n))
    y = np.sin(x) + 0.3 * rng.normal(size=n)
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2))
    rho = m.param("rho", ld.InverseGamma(5, 5))
    sigma = m.param("sigma", ld.HalfNormal(1))
    K = ld.add_diag(ld.gp.exp_quad(m.data("x", x), alpha, rho), sigma ** 2)
    m.observe("y", ld.MvNormal(np.zeros(n), scale_tril=ld.cholesky(K)), y)

    def numpyro_model(x, y):
        import jax.numpy as jnp
        import numpyro
        import numpyro.distributions as dist
        alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
        rho = numpyro.sample("rho", dist.InverseGamma(5.0, 5.0))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        K = alpha ** 2 * jnp.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / rho ** 2) + sigma ** 2 * jnp.eye(n)
        numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(n), scale_tril=jnp.linalg.cholesky(K)), obs=y)
    return m, numpyro_model, (x, y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing budget")
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    args = parser.parse_args()
    budget = 0.3 if args.quick else 1.5
    rng = np.random.default_rng(20261127)
    print(describe())
    print("| model | n | ours (us) | JAX (us) | JAX / ours |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        t = {k: v * 1e6 for k, v in row(gp_regression(n, rng), budget, rng).items()}
        jax = f"{t['jax']:.0f} | {t['jax'] / t['ours']:.2f}" if "jax" in t else "- | -"
        print(f"| GP regression, exp_quad | {n} | {t['ours']:.0f} | {jax} |", flush=True)


if __name__ == "__main__":
    main()
