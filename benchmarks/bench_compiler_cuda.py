"""The compiler's CUDA kernels (``logdens.compiler.emit_cuda``) side by side
with the engine's (``backend="cuda"``) on one GPU, in one run (issue 37: the
new path at least as fast as the old).

Run on a GPU: python benchmarks/bench_compiler_cuda.py [--quick] [--json PATH]
(``--quick`` also runs in numba's CUDA simulator, NUMBA_ENABLE_CUDASIM=1, as
a check that the script works; its times mean nothing.)

For the engine benchmark models (``engine_models``) at N rows and K points
per launch (K = 1: one chain at large N; K = 1024 at N = 1000: many chains),
the time of one value-and-gradient evaluation of K device-resident points
(``device_gradients``: three launches, waited for) by each path, their
ratio new / old, and the largest relative difference of their results.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
from numba import config, cuda

sys.path.insert(0, os.path.dirname(__file__))
from engine_models import hierarchical, logistic, normal, poisson, potential  # noqa: E402

from logdens.compiler.emit_cuda import cuda_density  # noqa: E402

MODELS = {"poisson": poisson, "normal": normal, "potential": potential, "logistic": logistic,
          "hierarchical": hierarchical}


def gpu_time(fn, budget):
    """Median seconds per call of ``fn`` (device work waited for)."""
    fn()
    cuda.synchronize()
    samples = []
    end = time.perf_counter() + budget
    while len(samples) < 3 or time.perf_counter() < end:
        start = time.perf_counter()
        fn()
        cuda.synchronize()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))


def compare(name, n, k, budget):
    m, _, _, _, theta = MODELS[name](n, np.random.default_rng(0))
    thetas = cuda.to_device(np.atleast_1d(theta) + 0.01 * np.random.default_rng(1).normal(size=(k, np.size(theta))))
    old, new = m.compile(backend="cuda"), cuda_density(m)
    (lp_o, g_o), (lp_n, g_n) = (d.log_density_gradient_batch(thetas) for d in (old, new))
    lp_o, g_o, lp_n, g_n = (a.copy_to_host() for a in (lp_o, g_o, lp_n, g_n))
    rel = max(float(np.max(np.abs(lp_n - lp_o) / np.maximum(1, np.abs(lp_o)))),
              float(np.max(np.abs(g_n - g_o) / np.maximum(1, np.abs(g_o)), initial=0.0)))
    t_old, t_new = (gpu_time(lambda d=d: d.device_gradients(thetas), budget) for d in (old, new))
    return {"old_us": round(1e6 * t_old, 2), "new_us": round(1e6 * t_new, 2), "new/old": round(t_new / t_old, 3),
            "max_rel_diff": rel}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    quick = args.quick or config.ENABLE_CUDASIM
    shapes = [(100, 1), (100, 4)] if quick else [(10**6, 1), (10**7, 1), (1000, 1024)]
    budget = 0.01 if quick else 0.5
    results = {}
    for name in MODELS:
        for n, k in shapes:
            results[f"{name} n={n} k={k}"] = compare(name, n, k, budget)
            print(f"{name} n={n} k={k}", results[f"{name} n={n} k={k}"], flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
