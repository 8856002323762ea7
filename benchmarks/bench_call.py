"""What Python's call of ``log_density_gradient(theta, out=)`` costs over the
compiled kernel: the method against numba's dispatcher call of the generated
``logp_grad`` and against its compiled entry point, on a model small enough
(a Normal model, N = 10) that the call is all there is.

Run: python benchmarks/bench_call.py [--rounds 25]

One process pinned to one CPU; every round times the three calls in turn, so
a change of load reaches all of them; medians over the rounds, µs per call.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402

import numpy as np  # noqa: E402

import logdens as ld  # noqa: E402
from bench_engine import median_time  # noqa: E402
from machine import describe, pin_one_core  # noqa: E402


def calls(n=10, seed=0):
    """The three calls of one Normal model's value and gradient, each checked
    against the others before it is timed."""
    rng = np.random.default_rng(seed)
    m = ld.Model()
    mu, sigma = m.param("mu", ld.Normal(0, 5)), m.param("sigma", ld.HalfNormal(2))
    m.observe("y", ld.Normal(mu, sigma), rng.normal(size=n))
    density = m.compile()
    theta, grad = rng.normal(size=density.dim), np.empty(density.dim)
    module = density._module
    fdata, idata = density.fdata, density.idata
    entry = module.logp_grad.overloads[module.logp_grad.signatures[0]].entry_point
    out = {"log_density_gradient": lambda: density.log_density_gradient(theta, out=grad),
           "dispatcher": lambda: module.logp_grad(theta, grad, fdata, idata),
           "entry point": lambda: entry(theta, grad, fdata, idata)}
    want = density.log_density_gradient(theta)
    for call in out.values():
        lp = call()
        lp = lp[0] if isinstance(lp, tuple) else lp
        np.testing.assert_allclose([lp, *grad], [want[0], *want[1]], rtol=1e-12)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    print(describe(pin_one_core()))
    timed = calls()
    samples = {name: [] for name in timed}
    for _ in range(args.rounds):
        for name, call in timed.items():
            samples[name].append(median_time(call, 0.05) * 1e6)
    t = {name: float(np.median(s)) for name, s in samples.items()}
    print("| log_density_gradient (µs) | dispatcher (µs) | entry point (µs) "
          "| method - dispatcher | method - entry point |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {t['log_density_gradient']:.2f} | {t['dispatcher']:.2f} | {t['entry point']:.2f} "
          f"| {t['log_density_gradient'] - t['dispatcher']:.2f} "
          f"| {t['log_density_gradient'] - t['entry point']:.2f} |")


if __name__ == "__main__":
    main()
