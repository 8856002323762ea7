"""The parallel variant (``compile(parallel=True)``) against the serial kernel,
by thread count, on large data. Reports speed-ups measured in one run.

Run: python benchmarks/bench_parallel.py
"""

import os
import platform
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine_models as b  # noqa: E402  (the engine benchmark's models)


def median_time(fn, repeats=15):
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))


def main():
    rng = np.random.default_rng(0)
    counts = [t for t in (1, 2, 4, 8, 16) if t <= numba.config.NUMBA_NUM_THREADS]
    print(f"# {platform.platform()}, {os.cpu_count()} CPUs, numba {numba.__version__}")
    print("| model | N | serial ms | " + " | ".join(f"{t} threads: speed-up" for t in counts) + " |")
    print("|---|---|---|" + "---|" * len(counts))
    for name, build, n in [("poisson", b.poisson, 1_000_000), ("hierarchical", b.hierarchical, 200_000),
                           ("logistic", b.logistic, 100_000)]:
        model, _, _, _, theta = build(n, rng)
        serial, parallel = model.compile(), model.compile(parallel=True)
        grad = np.empty(serial.dim)
        base = median_time(lambda: serial.log_density_gradient(theta, out=grad))
        cells = []
        for t in counts:
            numba.set_num_threads(t)
            cells.append(f"{base / median_time(lambda: parallel.log_density_gradient(theta, out=grad)):.2f}")
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        print(f"| {name} | {n:,} | {base * 1e3:.2f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
