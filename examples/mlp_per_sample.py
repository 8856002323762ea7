"""Per-sample gradients of a neural network's likelihood: a 10-32-32-10 tanh
network with Normal errors, fitted by MAP, then one gradient row per
observation. The rows find mislabelled observations (their gradients are the
largest); the empirical Fisher information is the sum of their outer
products. Their cost is timed against the summed gradient and, when JAX is
installed, against JAX's ``jit(vmap(grad))`` and the rows' ``G.T @ G``.

Run: python examples/mlp_per_sample.py [--quick]
"""

import numpy as np

import logdens as ld
from common import arguments, jax_or_none, median_time, table_and_chart

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
D, H, K = 10, 32, 10


def network(m, X):
    """The network's output for data ``X``, its weights parameters of ``m``."""
    W1 = m.param("W1", ld.Normal(0, 1), shape=(D, H))
    b1 = m.param("b1", ld.Normal(0, 1), shape=H)
    W2 = m.param("W2", ld.Normal(0, 1), shape=(H, H))
    b2 = m.param("b2", ld.Normal(0, 1), shape=H)
    W3 = m.param("W3", ld.Normal(0, 1), shape=(H, K))
    b3 = m.param("b3", ld.Normal(0, 1), shape=K)
    h1 = ld.tanh(X @ W1 + b1)
    h2 = ld.tanh(h1 @ W2 + b2)
    return h2 @ W3 + b3


def model(X, Y):
    m = ld.Model()
    out = network(m, m.data("X", X))
    m.observe("Y", ld.Normal(out, m.param("sigma", ld.HalfNormal(1))), Y)
    return m


# Data from a random network of the same shape, with 5 rows given wrong labels.
n = 1024
X = rng.normal(size=(n, D))
truth = {"W1": rng.normal(0, 0.5, (D, H)), "W2": rng.normal(0, 0.3, (H, H)), "W3": rng.normal(0, 0.5, (H, K))}
Y = np.tanh(np.tanh(X @ truth["W1"]) @ truth["W2"]) @ truth["W3"] + rng.normal(0, 0.1, (n, K))
corrupted = rng.choice(n, 5, replace=False)
Y[corrupted] += rng.choice([-3.0, 3.0], (5, K))  # labels off by 3 in every output

density = model(X, Y).compile()
theta = ld.find_map(density, seed=args.seed).theta
rows = density.per_sample_gradient(theta, "Y")  # (n, dim): one gradient per observation
print(f"per-sample gradients: {rows.shape[0]} rows of {rows.shape[1]} entries; their sum is the "
      "likelihood's gradient")
norms = np.linalg.norm(rows, axis=1)
flagged = np.argsort(norms)[-5:]
print("the 5 largest gradient norms are the corrupted rows:", set(flagged) == set(corrupted),
      f"(norms {np.sort(norms)[-5:].round(1)} against a median of {np.median(norms):.2f})")
fisher = density.empirical_fisher(theta, "Y")  # sum of g_i g_i^T, made a block of rows at a time
assert np.allclose(fisher, rows.T @ rows)
print(f"empirical Fisher: {fisher.shape}, trace {np.trace(fisher):.1f}")

# Cost of the rows against the summed gradient, and JAX's, as the batch grows.
sizes = [32, 256] if args.quick else [32, 256, 4096]
jax = jax_or_none()
times = {"value+grad": [], "per-sample rows": [], "Fisher": []} | (
    {"jax per-sample rows": [], "jax Fisher": []} if jax else {})
for size in sizes:
    Xb, Yb = rng.normal(size=(size, D)), rng.normal(size=(size, K))
    density.set_data(X=Xb, Y=Yb)  # another batch size: the same compiled module
    grad, out = np.empty(density.dim), np.empty((size, density.dim))
    times["value+grad"].append(median_time(lambda: density.log_density_gradient(theta, out=grad)))
    times["per-sample rows"].append(median_time(lambda: density.per_sample_gradient(theta, "Y", out=out)))
    times["Fisher"].append(median_time(lambda: density.empirical_fisher(theta, "Y")))
    if jax:
        jx, jnp = jax
        slots = density.layout.params

        def loglik(t, x, y):
            p = {s.name: t[s.offset:s.offset + s.size].reshape(s.shape) for s in slots.values()}
            out = jnp.tanh(jnp.tanh(x @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]) @ p["W3"] + p["b3"]
            sigma = jnp.exp(p["sigma"])
            return jnp.sum(-0.5 * ((y - out) / sigma) ** 2 - jnp.log(sigma))

        rows_of = jx.vmap(jx.grad(loglik), in_axes=(None, 0, 0))
        per_row = jx.jit(rows_of)
        jax_fisher = jx.jit(lambda t, x, y: rows_of(t, x, y).T @ rows_of(t, x, y))
        t, xb, yb = jnp.asarray(theta), jnp.asarray(Xb), jnp.asarray(Yb)
        np.testing.assert_allclose(np.asarray(per_row(t, xb, yb)), density.per_sample_gradient(theta, "Y"),
                                   rtol=1e-8, atol=1e-8)
        times["jax per-sample rows"].append(median_time(lambda: per_row(t, xb, yb).block_until_ready()))
        times["jax Fisher"].append(median_time(lambda: jax_fisher(t, xb, yb).block_until_ready()))
table_and_chart("MLP 10-32-32-10: per-sample gradient rows", sizes, times, f"{args.out}/mlp_per_sample.png")
