"""distributions.vmath against math and numpy: nanoseconds per element, one core.

Each function runs over 1e5 points in a loop compiled with the engine's
fastmath flags (``logdens.engine.FASTMATH``): the vmath version, the same loop
over ``math``'s function (a libm call per element), and numpy's ufunc on the
whole array. Before timing, the vmath results are checked against numpy to 2
ulp.

Run: python benchmarks/bench_vmath.py
"""

import os

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})  # one core

import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

from logdens.distributions import vmath  # noqa: E402
from logdens.engine import FASTMATH  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_parallel import median_time  # noqa: E402


def loop_over(fn):
    @numba.njit(fastmath=FASTMATH, error_model="numpy")
    def loop(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])
    return loop


def main():
    rng = np.random.default_rng(0)
    n = 100_000
    points = {"exp": rng.uniform(-700, 700, n), "log": 10.0 ** rng.uniform(-300, 300, n),
              "log1p": rng.uniform(-0.9, 100, n)}
    cases = {"exp": (vmath.exp, math.exp, np.exp), "log": (vmath.log, math.log, np.log),
             "log1p": (vmath.log1p, math.log1p, np.log1p)}
    print(f"# {platform.platform()}, numba {numba.__version__} (SVML: {numba.config.USING_SVML}), "
          f"numpy {np.__version__}, one core, {n:,} points")
    print("| function | vmath ns | math ns | numpy ns | math / vmath | max ulp vs numpy |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (ours, libm, ufunc) in cases.items():
        x, out, ref = points[name], np.empty(n), np.empty(n)
        fast, slow = loop_over(ours), loop_over(libm)
        fast(x, out)
        want = ufunc(x)
        ulp = float(np.max(np.abs(out - want) / np.spacing(np.abs(want))))
        assert ulp <= 2.0, (name, ulp)
        t_ours = median_time(lambda: fast(x, out), 31) / n * 1e9
        t_libm = median_time(lambda: slow(x, ref), 31) / n * 1e9
        t_numpy = median_time(lambda: ufunc(x, out=ref), 31) / n * 1e9
        print(f"| {name} | {t_ours:.2f} | {t_libm:.2f} | {t_numpy:.2f} | {t_libm / t_ours:.1f} | {ulp:.0f} |")


if __name__ == "__main__":
    main()
