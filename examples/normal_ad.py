"""The Normal log-density AD benchmark: sum of Normal(mu, sigma).logpdf(y) over
N observations, gradient against the value, at N = 10, 100, 1000 (JAX's
``jit(value_and_grad)`` against ``jit`` of the value beside it when installed).

Run: python examples/normal_ad.py [--quick]
"""

import numpy as np

import logdens as ld
from common import arguments, jax_or_none, median_time, table_and_chart

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
sizes = [10, 100, 1_000]
jax = jax_or_none()
times = {"value": [], "value+grad": []} | ({"jax value": [], "jax value+grad": []} if jax else {})
for n in sizes:
    y = rng.normal(size=n)
    m = ld.Model()
    mu, sigma = m.param("mu"), m.param("sigma", constraint=ld.positive)
    m.observe("y", ld.Normal(mu, sigma), y)
    density = m.compile()
    theta, out = np.array([0.1, 0.2]), np.empty(2)
    times["value"].append(median_time(lambda: density.log_density(theta)))
    times["value+grad"].append(median_time(lambda: density.log_density_gradient(theta, out=out)))
    if jax:
        jx, jnp = jax
        def f(t):
            s = jnp.exp(t[1])
            return jnp.sum(-0.5 * ((y - t[0]) / s) ** 2 - jnp.log(s)) + t[1]
        t = jnp.asarray(theta)
        value, both = jx.jit(f), jx.jit(jx.value_and_grad(f))
        times["jax value"].append(median_time(lambda: value(t).block_until_ready()))
        times["jax value+grad"].append(median_time(lambda: both(t)[1].block_until_ready()))
table_and_chart("Normal log density: value and gradient", sizes, times, f"{args.out}/normal_ad.png")
for name in ("", "jax ") if jax else ("",):
    ratios = [g / v for g, v in zip(times[f"{name}value+grad"], times[f"{name}value"])]
    print(f"{name or 'logdens '}gradient / value:", ", ".join(f"{r:.2f}" for r in ratios))
