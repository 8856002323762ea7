"""A hidden Markov model with K = 4 Gaussian states over T = 1e4 observations,
its states summed out by the forward algorithm: ours (``ld.hmm_marginal``, a
scan with its backward loop) ``log_density_gradient`` against JAX
``jit(value_and_grad)`` of NumPyro's potential energy with the forward
algorithm in ``lax.scan``, one core, side by side in one run, as ratios.

Run: python benchmarks/bench_scan.py [--quick] [--steps T] [--store-all N]

``--store-all N`` sets ``logdens.scans.STORE_ALL``: the gradient stores every
carry up to N numbers (T x K) and checkpoints about every sqrt(T)-th beyond;
``--store-all 0`` times the checkpointed gradient at any T.

Both log densities are compared at one constrained point before anything is
timed. JAX and NumPyro come from the optional ``bench`` extra; without them
their column is skipped.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import math  # noqa: E402

import numpy as np  # noqa: E402

import logdens as ld  # noqa: E402
from logdens import scans  # noqa: E402
from bench_multivariate import row  # noqa: E402
from machine import describe  # noqa: E402


def hmm(T, K, rng):
    """Observations from K well-separated states with sticky transitions."""
    states = np.zeros(T, dtype=int)
    for t in range(1, T):
        states[t] = states[t - 1] if rng.uniform() < 0.9 else rng.integers(K)
    y = 3.0 * states + rng.normal(size=T)
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5), shape=K)
    s = m.param("s", ld.HalfNormal(2))
    Z = m.param("Z", ld.Normal(0, 1), shape=(K, K))
    rho = m.param("rho", ld.Dirichlet(np.ones(K)))
    log_emissions = ld.Normal(mu, s).logpdf(m.data("Y", np.repeat(y[:, None], K, axis=1)))
    m.potential("y", ld.hmm_marginal(log_emissions.T, ld.softmax(Z), rho))

    def numpyro_model(y):
        import jax
        import jax.numpy as jnp
        import numpyro
        import numpyro.distributions as dist
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0).expand([K]).to_event(1))
        s = numpyro.sample("s", dist.HalfNormal(2.0))
        Z = numpyro.sample("Z", dist.Normal(0.0, 1.0).expand([K, K]).to_event(2))
        rho = numpyro.sample("rho", dist.Dirichlet(jnp.ones(K)))
        log_transitions = jax.nn.log_softmax(Z, axis=-1)
        log_emissions = dist.Normal(mu, s).log_prob(y[:, None])

        def step(alpha, emission):
            return jax.nn.logsumexp(alpha[:, None] + log_transitions, axis=0) + emission, None
        alpha, _ = jax.lax.scan(step, jnp.log(rho) + log_emissions[0], log_emissions[1:])
        numpyro.factor("y", jax.nn.logsumexp(alpha))
    return m, numpyro_model, (y,)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing budget")
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--store-all", type=int, default=scans.STORE_ALL,
                        help="carries stored whole up to this many numbers (checkpoints beyond)")
    args = parser.parse_args()
    scans.STORE_ALL = args.store_all
    budget = 0.3 if args.quick else 1.5
    rng = np.random.default_rng(20261127)
    print(describe())
    every = 1 if args.steps * 4 <= args.store_all else math.isqrt(args.steps - 1) + 1
    print(f"carries stored every {every} steps")
    print("| model | T | ours (us) | JAX (us) | JAX / ours |")
    print("|---|---|---|---|---|")
    t = {k: v * 1e6 for k, v in row(hmm(args.steps, 4, rng), budget, rng).items()}
    jax = f"{t['jax']:.0f} | {t['jax'] / t['ours']:.2f}" if "jax" in t else "- | -"
    print(f"| HMM, K = 4, hmm_marginal | {args.steps} | {t['ours']:.0f} | {jax} |", flush=True)


if __name__ == "__main__":
    main()
