"""distributions.vmath against math and numpy: nanoseconds per element, one core;
and the samplers' normal draws (Box-Muller with vmath's ``log`` and
``sin_cos_turns``) against the same draws with ``math``'s functions.

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

from logdens.distributions import random, vmath  # noqa: E402
from logdens.engine import FASTMATH  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_parallel import median_time  # noqa: E402


def loop_over(fn):
    @numba.njit(fastmath=set(FASTMATH), error_model="numpy")
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
    momenta()


@numba.njit
def _fill_normal_with_libm(state, out):
    """The samplers' normal draws before session 16: a Box-Muller pair at a
    time with ``math``'s ``log``, ``cos`` and ``sin`` (libm calls)."""
    for i in range(0, out.shape[0] - 1, 2):
        radius = math.sqrt(-2.0 * math.log(1.0 - random.uniform(state)))
        angle = 2.0 * math.pi * random.uniform(state)
        out[i] = radius * math.cos(angle)
        out[i + 1] = radius * math.sin(angle)


@numba.njit
def _fill_rows(states, out, with_libm):
    for k in range(out.shape[0]):
        if with_libm:
            _fill_normal_with_libm(states[k], out[k])
        else:
            random.fill_normal(states[k], out[k])


def momenta(chains=1024, dim=202):
    """One ChEES iteration's momenta (a chain's stream per row), both ways,
    alternated in 9 rounds; numpy's ziggurat for scale (one stream)."""
    states = np.stack([random.make_state(1, k) for k in range(chains)])
    out = np.empty((chains, dim))
    gen = np.random.default_rng(1)
    times = {"vmath": [], "math": [], "numpy": []}
    for _ in range(9):
        times["vmath"].append(median_time(lambda: _fill_rows(states, out, False), 11))
        times["math"].append(median_time(lambda: _fill_rows(states, out, True), 11))
        times["numpy"].append(median_time(lambda: gen.standard_normal(out=out), 11))
    ns = {k: float(np.median(v)) / out.size * 1e9 for k, v in times.items()}
    print(f"\nnormal draws, {chains} chains x {dim}, ns per draw (median of 9 alternated rounds)")
    print("| fill_normal (vmath) | Box-Muller with math | numpy standard_normal | math / vmath |")
    print("|---:|---:|---:|---:|")
    print(f"| {ns['vmath']:.2f} | {ns['math']:.2f} | {ns['numpy']:.2f} | {ns['math'] / ns['vmath']:.2f} |")


if __name__ == "__main__":
    main()
