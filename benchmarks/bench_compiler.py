"""The compiler's speed parity gate (issue 37): the engine's generated ``core``
(value and gradient) and per-sample gradient rows against the lowered
program's (``logdens.compiler.cpu_program``, emitted by
``logdens.compiler.emit``), on the engine benchmark models.

Both run on the same data in one process, timed in turns (round robin, the
median of each); the table gives the new path's time over the old one's
(target: within 5% of 1.00), and the ratio of the fastest rounds. Times are
CPU time of the timing thread (``turns``). Per-sample rows are timed where they
have at most ``ROWS`` entries. Run: ``python benchmarks/bench_compiler.py``;
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

ROWS = 10 ** 7  #: the most entries per-sample rows are timed with (80 MB; a vector per row is n x n)
#: Model builders ``f(n, rng) -> (model, ...)``: the engine models, and a shaped
#: one (events per row: ``bench_mlp``'s 10-32-32-10 network, the engine's
#: ``logdens.shaped`` against the program's event maps).
SOURCES = {**{name: getattr(engine_models, name) for name in
              ("poisson", "normal", "potential", "bernoulli_logit", "logistic", "hierarchical",
               "hierarchical_sorted")},
           "mlp": bench_mlp.network}
MODELS = list(SOURCES)


def turns(functions, rounds=21, budget=0.01):
    """``(median, min)`` seconds per call of each function, timed in turns. The
    clock is this thread's CPU time: on a machine shared with other work the
    time it spends waiting for a core is not counted (what it loses to their
    use of the caches still is)."""
    for f in functions:
        f()
    inner = []
    for f in functions:
        start = time.thread_time()
        f()
        inner.append(max(1, int(budget / max(time.thread_time() - start, 1e-7))))
    samples = [[] for _ in functions]
    for _ in range(rounds):
        for f, n, out in zip(functions, inner, samples):
            start = time.thread_time()
            for _ in range(n):
                f()
            out.append((time.thread_time() - start) / n)
    return [(float(np.median(s)), min(s)) for s in samples]


def rows(name, n):
    """The table's rows of one model: ``core`` (value and gradient), and each
    observed term's per-sample gradient rows (where they have at most ``ROWS`` entries)."""
    model, *_ = SOURCES[name](n, np.random.default_rng(0))
    density = model.compile()
    lowered, layout = density.model, density.layout
    observed = [t for t in lowered.terms if t.per_observation]
    programs = [cpu_program(lowered, layout)] + [cpu_program(lowered, layout, "per_sample", t) for t in observed]
    module = emit.load(emit.source(programs, lowered, layout))
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
    out = [line(name, n, "core", old, new)]
    for term in [t for t in observed if density._data.n_obs[t.name] * density.dim <= ROWS]:
        function = f"per_sample_{layout.term_idents[term.name]}"
        old_rows, new_rows = (np.empty((density._data.n_obs[term.name], density.dim)) for _ in range(2))
        old, new = turns([lambda: getattr(density._module, function)(theta, fdata, idata, old_rows),
                          lambda: getattr(module, function)(theta, fdata, idata, new_rows)])
        assert np.all(np.abs(old_rows - new_rows) <= 1e-12 * np.maximum(1.0, np.abs(old_rows)))
        out.append(line(name, n, f"per-sample {term.name}", old, new))
    return out


def line(name, n, function, old, new):
    """A table row: medians, their ratio and the fastest rounds' ratio."""
    return (f"| {name} | {n} | {function} | {old[0] * 1e6:.1f} | {new[0] * 1e6:.1f} | {new[0] / old[0]:.2f} "
            f"| {new[1] / old[1]:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100000])
    parser.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ModelWarning)  # the engine models' flat priors, on purpose
    print(machine.describe(machine.pin_one_core()))
    print("| model | N | function | engine (us) | program (us) | program / engine | fastest / fastest |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        for name in args.models:
            print("\n".join(rows(name, n)), flush=True)


if __name__ == "__main__":
    main()
