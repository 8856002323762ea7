"""Multivariate terms: a multivariate normal with scales and an LKJ correlation
prior (d = 10), and a softmax regression (5 classes, 20 predictors), each over
1e4 rows. Ours ``log_density_gradient`` against JAX ``jit(value_and_grad)`` of
NumPyro's potential energy for the same model, one core, side by side in one
run, as ratios.

Run: python benchmarks/bench_multivariate.py [--quick] [--rows N]

NumPyro's unconstrained coordinates are its own (its transforms differ from
ours in details), so the two gradients are not compared entry by entry; the
log densities of the same constrained point are, before anything is timed.
JAX and NumPyro come from the optional ``bench`` extra; without them their
columns are skipped.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402

import numpy as np  # noqa: E402

import logdens as ld  # noqa: E402
from bench_engine import median_time  # noqa: E402
from machine import describe  # noqa: E402


def mv_normal(n, d, rng):
    """Correlated rows, their mean, scales and correlation factor as parameters."""
    a = rng.normal(size=(d, d))
    y = rng.multivariate_normal(np.arange(d, dtype=float), a @ a.T + np.eye(d), size=n)
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5), shape=d)
    sigma = m.param("sigma", ld.HalfNormal(2), shape=d)
    corr = m.param("corr", ld.LKJCholesky(d, 2.0))
    m.observe("y", ld.MvNormal(mu, scale_tril=ld.diag_pre_multiply(sigma, corr)), y)

    def numpyro_model(y):
        import numpyro
        import numpyro.distributions as dist
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0).expand([d]).to_event(1))
        sigma = numpyro.sample("sigma", dist.HalfNormal(2.0).expand([d]).to_event(1))
        corr = numpyro.sample("corr", dist.LKJCholesky(d, 2.0))
        numpyro.sample("y", dist.MultivariateNormal(mu, scale_tril=sigma[:, None] * corr), obs=y)
    return m, numpyro_model, (y,)


def softmax_regression(n, p, k, rng):
    """Classes from a linear predictor; weights and intercepts as parameters."""
    x = rng.normal(size=(n, p))
    logits = x @ rng.normal(size=(p, k))
    y = np.array([rng.choice(k, p=np.exp(r - r.max()) / np.exp(r - r.max()).sum()) for r in logits])
    m = ld.Model()
    w = m.param("w", ld.Normal(0, 1), shape=(p, k))
    b = m.param("b", ld.Normal(0, 1), shape=k)
    m.observe("y", ld.CategoricalLogit(m.data("x", x) @ w + b), y)

    def numpyro_model(x, y):
        import numpyro
        import numpyro.distributions as dist
        w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([p, k]).to_event(2))
        b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([k]).to_event(1))
        numpyro.sample("y", dist.CategoricalLogits(x @ w + b), obs=y)
    return m, numpyro_model, (x, y)


def numpyro_gradient(numpyro_model, args, values):
    """A timed call of JAX's value and gradient of NumPyro's potential energy, after
    checking its log density at the constrained ``values`` against ``expected``."""
    try:
        import jax
        import jax.numpy as jnp
        from numpyro.infer.util import log_density, potential_energy, unconstrain_fn
    except ImportError:
        return None, None
    jax.config.update("jax_enable_x64", True)
    args = tuple(jnp.asarray(a) for a in args)
    constrained = {k: jnp.asarray(v) for k, v in values.items()}
    their_value = float(log_density(numpyro_model, args, {}, constrained)[0])
    unconstrained = unconstrain_fn(numpyro_model, args, {}, constrained)
    both = jax.jit(jax.value_and_grad(lambda u: -potential_energy(numpyro_model, args, {}, u)))
    return their_value, lambda: jax.block_until_ready(both(unconstrained))


def row(built, budget, rng):
    m, numpyro_model, args = built
    density = m.compile()
    theta = rng.normal(size=density.dim) * 0.3
    grad = np.empty(density.dim)
    times = {"ours": median_time(lambda: density.log_density_gradient(theta, out=grad), budget)}
    values = density.constrain(theta)
    their_value, call = numpyro_gradient(numpyro_model, args, values)
    if call is not None:
        ours = density.log_density(theta, propto=False, jacobian=False)
        np.testing.assert_allclose(their_value, ours, rtol=1e-10)
        times["jax"] = median_time(call, budget)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing budget")
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    budget = 0.3 if args.quick else 1.5
    rng = np.random.default_rng(20261127)
    print(describe())
    print("| model | rows | ours (us) | JAX (us) | JAX / ours |")
    print("|---|---|---|---|---|")
    cases = (("MvNormal d=10, LKJ prior", lambda: mv_normal(args.rows, 10, rng)),
             ("softmax regression K=5, p=20", lambda: softmax_regression(args.rows, 20, 5, rng)))
    for name, build in cases:
        t = {k: v * 1e6 for k, v in row(build(), budget, rng).items()}
        jax = f"{t['jax']:.0f} | {t['jax'] / t['ours']:.2f}" if "jax" in t else "- | -"
        print(f"| {name} | {args.rows} | {t['ours']:.0f} | {jax} |", flush=True)


if __name__ == "__main__":
    main()
