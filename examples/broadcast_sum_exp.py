"""A broadcast ``sum(exp(x))`` over a parameter vector whose gradient costs what
its value costs: one fused loop computes both (a tape would record every
element, then walk the record back), against the value alone.

Run: python examples/broadcast_sum_exp.py [--quick]
"""

import numpy as np

import logdens as ld
from common import arguments, median_time, table_and_chart

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
sizes = [1_000, 100_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
times = {"value": [], "value+grad": []}
for n in sizes:
    m = ld.Model()
    m.potential("s", -ld.sum(ld.exp(m.param("x", shape=n))))
    density = m.compile()
    theta, out = rng.normal(size=n), np.empty(n)
    times["value"].append(median_time(lambda: density.log_density(theta)))
    times["value+grad"].append(median_time(lambda: density.log_density_gradient(theta, out=out)))
table_and_chart("sum(exp(x)): value and gradient", sizes, times, f"{args.out}/broadcast_sum_exp.png")
print("gradient / value:", ", ".join(f"{g / v:.2f}" for g, v in zip(times["value+grad"], times["value"])))
