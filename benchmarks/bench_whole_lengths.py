"""New lengths of data read whole (a scan's series, a GP's inputs): ``set_data``
on the compiled density, against what a new length cost before the lengths
were read at run time (building and compiling the model again, with an empty
cache: a new source), side by side, as ratios; and the gradient at the new
length, the same call either way.

Run: python benchmarks/bench_whole_lengths.py [--quick]

The models are those of ``tests/test_whole_lengths.py``. One core; the compile
runs in a new process with an empty logdens cache (numba's cache of the
distributions' kernels kept, as on any machine where logdens has run).
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import test_whole_lengths as models  # noqa: E402
from machine import describe  # noqa: E402


def best(call, seconds):
    """The fastest of 5 medians of ``call`` over ``seconds`` each, in seconds."""
    runs = []
    for _ in range(5):
        times, start = [], time.perf_counter()
        while time.perf_counter() - start < seconds / 5 or len(times) < 3:
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        runs.append(np.median(times))
    return min(runs)


def fresh_compile(kind, n):
    """Seconds of ``compile()`` of the model at length ``n`` in a new process with an
    empty logdens cache: what a new source costs (every new length, before)."""
    code = ("import sys, time, tempfile; sys.path.insert(0, sys.argv[1]); import test_whole_lengths as w; "
            "m = w.MODELS[sys.argv[2]](int(sys.argv[3])); t0 = time.perf_counter(); "
            "m.compile(cache_dir=tempfile.mkdtemp()); print(time.perf_counter() - t0)")
    tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
    out = subprocess.run([sys.executable, "-c", code, tests, kind, str(n)], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seconds = 0.3 if args.quick else 1.5
    print(describe())
    cases = [("garch", 1000, 1500), ("hmm", 300, 450), ("gp", 200, 300), ("checkpointed", 1000, 1500)]
    print("| model | lengths | set_data (ms) | build + compile at the new length (s) | compile / set_data | "
          "value+grad at the new length (us) |")
    print("|---|---|---:|---:|---:|---:|")
    for kind, small, large in cases:
        with tempfile.TemporaryDirectory() as cache:
            density = models.MODELS[kind](small).compile(cache_dir=cache)
            new, old = models.data(models.MODELS[kind](large)), models.data(models.MODELS[kind](small))
            flips = iter(range(10 ** 9))
            set_new = best(lambda: density.set_data(**(new if next(flips) % 2 else old)), seconds)
            density.set_data(**new)
        compile_s = fresh_compile(kind, large)
        theta = np.random.default_rng(0).normal(size=density.dim) * 0.3
        grad = np.empty(density.dim)
        gradient = best(lambda: density.log_density_gradient(theta, out=grad), seconds)
        print(f"| {kind} | {small} -> {large} | {set_new * 1e3:.2f} | {compile_s:.2f} | "
              f"{compile_s / set_new:.0f} | {gradient * 1e6:.1f} |")


if __name__ == "__main__":
    main()
