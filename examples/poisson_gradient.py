"""The Poisson log-likelihood's gradient against a rate vector: the value, the
value and gradient in one pass, and the gradient alone, against JAX
``jit(value_and_grad)`` and ``jit(grad)`` when JAX is installed.

Run: python examples/poisson_gradient.py [--quick]
"""

import numpy as np

import logdens as ld
from common import arguments, jax_or_none, median_time, table_and_chart

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
sizes = [100, 1_000, 10_000] if args.quick else [100, 1_000, 10_000, 100_000, 1_000_000]
jax = jax_or_none()
times = {"value": [], "value+grad": [], "grad": []} | ({"jax value+grad": [], "jax grad": []} if jax else {})
for n in sizes:
    counts = rng.poisson(3.0, n).astype(float)
    m = ld.Model()
    m.observe("c", ld.Poisson(m.param("rate", shape=n, constraint=ld.positive)), counts)
    density = m.compile()  # a parameter's length is compiled in: one module per n
    theta = np.log(rng.uniform(1.0, 5.0, n))
    out = np.empty(n)
    times["value"].append(median_time(lambda: density.log_density(theta)))
    times["value+grad"].append(median_time(lambda: density.log_density_gradient(theta, out=out)))
    times["grad"].append(median_time(lambda: density.gradient(theta, out=out)))
    if jax:
        jx, jnp = jax
        def f(u):
            rate = jnp.exp(u)
            return jnp.sum(counts * jnp.log(rate) - rate) + jnp.sum(u)  # + log|J| of rate = exp(u)
        t = jnp.asarray(theta)
        both, grad = jx.jit(jx.value_and_grad(f)), jx.jit(jx.grad(f))
        np.testing.assert_allclose(np.asarray(grad(t)), density.gradient(theta), rtol=1e-9)
        times["jax value+grad"].append(median_time(lambda: both(t)[1].block_until_ready()))
        times["jax grad"].append(median_time(lambda: grad(t).block_until_ready()))
table_and_chart("Poisson log-likelihood: value and gradient", sizes, times, f"{args.out}/poisson_gradient.png")
print("value+grad / value at the largest N:", round(times["value+grad"][-1] / times["value"][-1], 2))
