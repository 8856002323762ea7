"""The change point summed out automatically against the same sum written by
hand with ``ld.cumsum`` and ``ld.logsumexp``, side by side in one run.

Run: python benchmarks/bench_marginalize.py

Automatic: ``m.param("s", ld.DiscreteUniform(...))`` read as
``ld.where(s >= years, early, late)`` (``logdens.marginalize``). By hand:
logsumexp_k [log p(k) + sum(late rows) + C_k] with C the cumulative sums of
the early-minus-late log densities. Both compute the same log density
(checked); the table gives value + gradient times and their ratio. The
coal-mining series has 111 years; the longer one is synthetic.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_engine import median_time  # noqa: E402
from machine import describe, pin_one_core  # noqa: E402

import logdens as ld  # noqa: E402

#: Alternating timing rounds of the two models: a loaded machine disturbs both alike.
ROUNDS = 15

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests"))
from test_marginalize import DISASTERS  # noqa: E402


def automatic(years, counts):
    m = ld.Model()
    s = m.param("s", ld.DiscreteUniform(int(years[0]), int(years[-1])))
    early, late = m.param("early", ld.Gamma(2, 1)), m.param("late", ld.Gamma(2, 1))
    t = m.data("years", years.astype(float))
    m.observe("disasters", ld.Poisson(ld.where(s >= t, early, late)), counts)
    return m.compile()


def by_hand(years, counts):
    """s = years[k]: rows 0..k early. C_k = sum_{i <= k} (early_i - late_i)."""
    m = ld.Model()
    early, late = m.param("early", ld.Gamma(2, 1)), m.param("late", ld.Gamma(2, 1))
    y = m.data("disasters", counts)
    lp_early, lp_late = ld.Poisson(early).logpdf(y), ld.Poisson(late).logpdf(y)
    steps = ld.cumsum(lp_early - lp_late)
    m.potential("switch", ld.logsumexp(steps) + ld.sum(lp_late) - np.log(len(counts)))
    return m.compile()


def main():
    print(describe(pin_one_core()))
    print("(a machine shared with other jobs: ratios are the figures to read)")
    print("\n| rows | automatic us | by hand us | automatic / by hand |\n|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    series = [DISASTERS, np.concatenate([rng.poisson(3.0, 1000), rng.poisson(1.0, 1000)])]
    for counts in series:
        years = np.arange(1851, 1851 + len(counts))
        auto, hand = automatic(years, counts), by_hand(years, counts)
        point = {"early": 3.0, "late": 1.0}
        a, h = auto.unconstrain(point), hand.unconstrain(point)
        assert np.isclose(auto.log_density(a), hand.log_density(h), rtol=1e-10, atol=0.0)
        rounds = [(median_time(lambda: auto.log_density_gradient(a), 0.1),
                   median_time(lambda: hand.log_density_gradient(h), 0.1)) for _ in range(ROUNDS)]
        t_auto, t_hand = (min(r[j] for r in rounds) for j in (0, 1))  # the least disturbed of each
        print(f"| {len(counts):,} | {t_auto * 1e6:.2f} | {t_hand * 1e6:.2f} | {t_auto / t_hand:.2f} |")


if __name__ == "__main__":
    main()
