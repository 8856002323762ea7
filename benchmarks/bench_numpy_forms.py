"""The numpy ways of writing a model against the ones logdens had before.

Run: python benchmarks/bench_numpy_forms.py [--rounds 7] [--seconds 0.3]

Each pair computes the same log density (checked to 1e-12 first); the
table gives each form's value-and-gradient time (best of ``--seconds`` of
calls per round) and the ratio of the numpy form to the other, the median
and range over rounds that alternate the two, on one core:

- an LKJ multivariate normal's factor: ``sd[:, None] * L`` and
  ``ld.diag(sd) @ L`` against ``ld.diag_pre_multiply(sd, L)``;
- a softmax regression's log-probabilities written by hand,
  ``l - ld.logsumexp(l, axis=-1, keepdims=True)``, against
  ``ld.log_softmax(l)``;
- a hand-written likelihood and prior in one potential,
  ``-0.5 * ld.sum(ld.square(Y - X @ W)) - 0.5 * ld.sum(W ** 2)``, against
  two potentials.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import logdens as ld  # noqa: E402
from machine import describe  # noqa: E402


def lkj(factor, n=2000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(n, d)) @ np.triu(rng.normal(size=(d, d)) * 0.3 + np.eye(d))
    m = ld.Model()
    L = m.param("L", ld.LKJCholesky(d, 2.0))
    sd = m.param("sd", ld.HalfNormal(2), shape=d)
    m.observe("Y", ld.MvNormal(0.0, scale_tril=factor(sd, L)), Y)
    return m


def softmax(log_probs, n=2000, p=10, k=5, seed=1):
    rng = np.random.default_rng(seed)
    X, onehot = rng.normal(size=(n, p)), np.eye(k)[rng.integers(0, k, n)]
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(p, k))
    logits = m.data("X", X) @ W
    m.potential("lik", ld.sum(log_probs(logits) * m.data("onehot", onehot), axis=1), observed=True)
    return m


def least_squares(together, n=2000, p=10, k=4, seed=2):
    rng = np.random.default_rng(seed)
    X, Y = rng.normal(size=(n, p)), rng.normal(size=(n, k))
    m = ld.Model()
    W = m.param("W", shape=(p, k))
    fit = -0.5 * ld.sum(ld.square(m.data("Y", Y) - m.data("X", X) @ W))
    prior = -0.5 * ld.sum(W ** 2)
    if together:
        m.potential("p", fit + prior)
    else:
        m.potential("fit", fit)
        m.potential("prior", prior)
    return m


PAIRS = [
    ("LKJ factor: sd[:, None] * L", lkj(lambda sd, L: sd[:, None] * L), lkj(ld.diag_pre_multiply)),
    ("LKJ factor: ld.diag(sd) @ L", lkj(lambda sd, L: ld.diag(sd) @ L), lkj(ld.diag_pre_multiply)),
    ("log-softmax by hand (keepdims)", softmax(lambda l: l - ld.logsumexp(l, axis=-1, keepdims=True)),
     softmax(ld.log_softmax)),
    ("likelihood + prior in one potential", least_squares(True), least_squares(False)),
]


def best(call, seconds):
    """Microseconds of the fastest call during ``seconds``."""
    fastest, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        call()
        fastest = min(fastest, time.perf_counter() - t0)
    return fastest * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--seconds", type=float, default=0.3)
    args = p.parse_args()
    print(describe())
    print("| model | numpy form (us) | other form (us) | numpy / other, median (range) |")
    print("|---|---:|---:|---|")
    for name, numpy_form, other_form in PAIRS:
        a, b = numpy_form.compile(), other_form.compile()
        theta = np.random.default_rng(3).normal(size=a.dim) * 0.3
        lp_a, lp_b = a.log_density(theta, propto=False), b.log_density(theta, propto=False)
        assert np.isclose(lp_a, lp_b, rtol=1e-12), (name, lp_a, lp_b)
        out = np.empty(a.dim)
        times = {"a": [], "b": []}
        for _ in range(args.rounds):
            times["a"].append(best(lambda: a.log_density_gradient(theta, out=out), args.seconds))
            times["b"].append(best(lambda: b.log_density_gradient(theta, out=out), args.seconds))
        ratios = [x / y for x, y in zip(times["a"], times["b"])]
        print(f"| {name} | {statistics.median(times['a']):.1f} | {statistics.median(times['b']):.1f} | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")


if __name__ == "__main__":
    main()
