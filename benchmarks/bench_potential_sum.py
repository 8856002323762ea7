"""A potential written as ``sum(x)`` against the two-pass lowering of a sum and
against an observed term, side by side in one run, as gradient / value ratios.

Run: python benchmarks/bench_potential_sum.py

``sum(Normal(mu, s).logpdf(y))`` as a potential runs as the loop over the rows
(one pass); ``1.0 * sum(...)`` keeps the sum as a value, the lowering every
potential sum had before: a forward pass and a reverse pass over the rows.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_engine import median_time  # noqa: E402
from machine import describe  # noqa: E402

import logdens as ld  # noqa: E402


def model(kind, y):
    m = ld.Model()
    mu, s = m.param("mu"), m.param("s", constraint=ld.positive)
    if kind == "observe":
        m.observe("y", ld.Normal(mu, s), y)
    else:
        total = ld.sum(ld.Normal(mu, s).logpdf(y))
        m.potential("lik", total if kind == "sum" else 1.0 * total)
    return m.compile()


def main():
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    print(describe("pinned to one CPU"))
    print("\n| N | model | value us | value+grad us | grad / value |\n|---:|---|---:|---:|---:|")
    theta, out = np.array([0.1, 0.2]), np.empty(2)
    for n in (1_000, 100_000):
        y = np.random.default_rng(0).normal(size=n)
        for label, kind in (("sum", "sum"), ("1.0 * sum (two passes)", "scaled"), ("observe", "observe")):
            density = model(kind, y)
            value = median_time(lambda: density.log_density(theta))
            both = median_time(lambda: density.log_density_gradient(theta, out=out))
            print(f"| {n:,} | {label} | {value * 1e6:.1f} | {both * 1e6:.1f} | {both / value:.2f} |")


if __name__ == "__main__":
    main()
