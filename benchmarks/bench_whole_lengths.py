"""New lengths of data read whole (a scan's series, a GP's inputs): ``set_data``
on the compiled density, against what a new length cost before the lengths
were read at run time (building and compiling the model again, with an empty
cache: a new source), side by side, as ratios; and the gradient at the new
length, the same call either way.

Run: python benchmarks/bench_whole_lengths.py [--quick]

A second table: a latent GP of another number of inputs (a new model: its
``z`` has their length) compiled where the model of the first length was.

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


def fresh_compile(kind, n, cache=None):
    """Seconds of ``compile()`` of the model at length ``n`` in a new process, with
    the logdens cache directory ``cache`` (None: an empty one, so a new source
    compiles, as every new length did before)."""
    code = ("import sys, time, tempfile; sys.path.insert(0, sys.argv[1]); import test_whole_lengths as w; "
            "m = getattr(w, sys.argv[2])(int(sys.argv[3])); t0 = time.perf_counter(); "
            "m.compile(cache_dir=sys.argv[4] if len(sys.argv) > 4 else tempfile.mkdtemp()); "
            "print(time.perf_counter() - t0)")
    tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
    argv = [sys.executable, "-c", code, tests, kind, str(n)] + ([cache] if cache else [])
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
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
        compile_s = fresh_compile(models.MODELS[kind].__name__, large)
        theta = np.random.default_rng(0).normal(size=density.dim) * 0.3
        grad = np.empty(density.dim)
        gradient = best(lambda: density.log_density_gradient(theta, out=grad), seconds)
        print(f"| {kind} | {small} -> {large} | {set_new * 1e3:.2f} | {compile_s:.2f} | "
              f"{compile_s / set_new:.0f} | {gradient * 1e6:.1f} |")
    print("\nA latent GP of another number of inputs is a new model (z has their length): compile() in a new "
          "process, its cache holding the model of the other length, against an empty cache")
    print("| model | lengths | compile, cache of the other length (s) | compile, empty cache (s) | ratio |")
    print("|---|---|---:|---:|---:|")
    for small, large in ((12, 19), (100, 150)):
        with tempfile.TemporaryDirectory() as cache:
            fresh_compile("latent_gp", small, cache)
            shared = fresh_compile("latent_gp", large, cache)
        empty = fresh_compile("latent_gp", large)
        print(f"| latent GP | {small} -> {large} | {shared:.2f} | {empty:.2f} | {empty / shared:.1f} |")


if __name__ == "__main__":
    main()
