"""The compiler's speed parity gate (issue 37): the engine's generated ``core``
against the lowered program's (``logdens.compiler.cpu_program``, emitted by
``logdens.compiler.emit``), value and gradient, on the engine benchmark models.

Both run on the same data in one process, timed in turns (round robin, the
median of each); the table gives the new path's time over the old one's
(target: within 5% of 1.00). Run: ``python benchmarks/bench_compiler.py``;
a true AVX2 build: ``python benchmarks/machine.py --avx2 python
benchmarks/bench_compiler.py``. ``--sizes 1000 100000`` and ``--models`` pick the rows.
"""

import argparse
import time
import warnings

import numpy as np

import bench_mlp
import engine_models
import machine
from logdens.compiler import cpu_program, emit
from logdens.expr import ModelWarning

#: Model builders ``f(n, rng) -> (model, ...)``: the engine models, and a shaped
#: one (events per row: ``bench_mlp``'s 10-32-32-10 network, the engine's
#: ``logdens.shaped`` against the program's event maps).
SOURCES = {**{name: getattr(engine_models, name) for name in
              ("poisson", "normal", "potential", "bernoulli_logit", "logistic", "hierarchical")},
           "mlp": bench_mlp.network}
MODELS = list(SOURCES)


def turns(functions, rounds=15, budget=0.02):
    """Median seconds per call of each function, timed in turns."""
    for f in functions:
        f()
    inner = []
    for f in functions:
        start = time.perf_counter()
        f()
        inner.append(max(1, int(budget / max(time.perf_counter() - start, 1e-7))))
    samples = [[] for _ in functions]
    for _ in range(rounds):
        for f, n, out in zip(functions, inner, samples):
            start = time.perf_counter()
            for _ in range(n):
                f()
            out.append((time.perf_counter() - start) / n)
    return [float(np.median(s)) for s in samples]


def row(name, n):
    model, *_ = SOURCES[name](n, np.random.default_rng(0))
    density = model.compile()
    module = emit.load(emit.source(cpu_program(density.model, density.layout), density.model, density.layout))
    theta = np.random.default_rng(1).normal(0.0, 0.1, density.dim)
    if name == "poisson":
        theta = np.abs(theta) + 1.0  # rates
    old_grad, new_grad = np.empty(density.dim), np.empty(density.dim)
    fdata, idata = density.fdata, density.idata
    old, new = turns([lambda: density._module.core(theta, old_grad, fdata, idata, True),
                      lambda: module.core(theta, new_grad, fdata, idata, True)])
    # the parity gate's test: sums in another order (the network's BLAS blocks) round
    # differently, relative to max(1, |g|) where an entry is itself a cancellation
    assert np.all(np.abs(old_grad - new_grad) <= 1e-12 * np.maximum(1.0, np.abs(old_grad)))
    return f"| {name} | {n} | {old * 1e6:.1f} | {new * 1e6:.1f} | {new / old:.2f} |"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100000])
    parser.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ModelWarning)  # the engine models' flat priors, on purpose
    print(machine.describe(machine.pin_one_core()))
    print("| model | N | engine core (us) | program core (us) | program / engine |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        for name in args.models:
            print(row(name, n), flush=True)


if __name__ == "__main__":
    main()
