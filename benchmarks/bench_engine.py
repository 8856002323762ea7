"""The gradient engine side by side: logdens, a hand-written fused numba loop,
JAX ``jit(value_and_grad)`` and PyTensor's compiled logp + dlogp (what PyMC
and nutpie run), on one core, in one run, reported as ratios.

Run: python benchmarks/bench_engine.py [--quick]

Peers come from the optional ``bench`` extra; a missing peer is skipped with
a message. Every peer's gradient is checked against logdens' before it is
timed, so a wrong baseline cannot produce a flattering ratio.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})  # the last core: one core, as the issue asks

import argparse  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

import logdens as ld  # noqa: E402
from engine_models import (bernoulli_logit, hierarchical, hierarchical_sorted, logistic, normal,  # noqa: E402
                           poisson, potential)


def median_time(fn, budget=0.3):
    """Median seconds per call over repeats filling about ``budget`` seconds."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    inner = max(1, int(0.02 / once))
    samples = []
    for _ in range(max(5, int(budget / (once * inner)))):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return float(np.median(samples))


# ----- timing from inside numba: what a sampler written in numba pays -----

ENTRY = numba.types.float64(numba.types.float64[::1], numba.types.float64[::1],
                            numba.types.float64[::1], numba.types.int64[::1])


@njit(numba.types.float64(numba.types.FunctionType(ENTRY), numba.types.float64[::1],
                          numba.types.float64[::1], numba.types.float64[::1], numba.types.int64[::1],
                          numba.types.int64), cache=True)
def _repeat(function, theta, grad, fdata, idata, reps):
    total = 0.0
    for _ in range(reps):
        total += function(theta, grad, fdata, idata)
    return total


def numba_level_time(function, theta, grad, fdata, idata, budget):
    """Seconds per call of ``function`` called in a loop inside numba (no Python per call).

    At least 10 calls per timing: passing a dispatcher to ``_repeat`` as a
    first-class function costs tens of µs per call of ``_repeat`` (it was a
    third of the logistic regression's figure with one call per timing).
    """
    reps = max(10, int(2e5 / max(len(theta), len(fdata), 1)))
    return median_time(lambda: _repeat(function, theta, grad, fdata, idata, reps), budget) / reps


def as_entry(hand):
    """The hand loop behind the shared entry signature, so both are timed the same way."""
    @njit(ENTRY)
    def entry(theta, grad, fdata, idata):
        return hand(theta, grad)
    return entry


# ----- peers -----

def jax_peer(jax_fn, theta):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    f = jax.jit(jax.value_and_grad(jax_fn(jnp)))
    t = jnp.asarray(theta)

    def call():
        value, grad = f(t)
        grad.block_until_ready()
        return float(value), np.asarray(grad)
    return call


def pytensor_peer(pymc_fn, theta):
    try:
        import pymc as pm
    except ImportError:
        return None
    model = pymc_fn(pm)
    f = model.logp_dlogp_function(ravel_inputs=True)
    f.set_extra_values({})
    # PyMC ravels value variables in its own order: map our theta onto it by name.
    ours = {}
    start = 0
    for v in model.value_vars:
        size = int(np.prod(model.initial_point()[v.name].shape, dtype=int))
        ours[v.name] = (start, size)
        start += size
    order = [v.name for v in f._grad_vars]
    sizes = {name: ours[name][1] for name in order}
    offsets = dict(zip(ours, np.cumsum([0] + [ours[n][1] for n in ours])[:-1]))
    x = np.concatenate([theta[offsets[n]:offsets[n] + sizes[n]] for n in order])

    def call():
        value, grad = f(x)
        back = np.empty_like(theta)
        pos = 0
        for n in order:
            back[offsets[n]:offsets[n] + sizes[n]] = grad[pos:pos + sizes[n]]
            pos += sizes[n]
        return float(value), back
    return call, f, x


# ----- one row -----

def row(name, build, n, rng, budget):
    model, hand, jax_fn, pymc_fn, theta = build(n, rng)
    density = model.compile()
    entry = density.numba_entry
    grad = np.empty(density.dim)
    want_lp, want = density.log_density_gradient(theta, jacobian=False)
    hand_grad = np.empty(density.dim)
    hand(theta, hand_grad)
    np.testing.assert_allclose(hand_grad, want, rtol=1e-8, atol=1e-8)

    out = {"model": name, "N": n}
    no_data, no_index = np.zeros(0), np.zeros(0, dtype=np.int64)
    out["hand"] = numba_level_time(as_entry(hand), theta, hand_grad, no_data, no_index, budget)
    out["logdens"] = numba_level_time(entry.function, theta, grad, entry.fdata, entry.idata, budget)
    out["method"] = median_time(lambda: density.log_density_gradient(theta, out=grad), budget)
    value, core = density._module.value, density._module.core
    out["value"] = median_time(lambda: value(theta, entry.fdata, entry.idata, True), budget)
    out["grad"] = median_time(lambda: core(theta, grad, entry.fdata, entry.idata, True), budget)
    observed = [t.name for t in model.terms if t.kind == "observe"]
    if observed and n * density.dim <= 4_000_000:  # the (N, dim) output itself must be small
        out["per_sample"] = median_time(lambda: density.per_sample_gradient(theta, observed[0]), budget)
    if observed:
        out["sparse"] = median_time(lambda: density.per_sample_gradient(theta, observed[0], sparse=True),
                                    budget)
        out["pointwise"] = median_time(lambda: density.pointwise_log_likelihood(theta), budget)
    jax_call = jax_peer(jax_fn, theta)
    if jax_call is not None:
        np.testing.assert_allclose(jax_call()[1], want, rtol=1e-8, atol=1e-8)
        out["jax"] = median_time(jax_call, budget)
    peer = pytensor_peer(pymc_fn, theta)
    if peer is not None:
        call, f, x = peer
        np.testing.assert_allclose(call()[1], want, rtol=1e-8, atol=1e-8)
        out["pytensor"] = median_time(lambda: f(x), budget)
    return out


COMPILE_SCRIPT = """
import sys, tempfile, time, numpy as np
sys.path.insert(0, {here!r})
import logdens as ld, engine_models as b
warm_up = ld.Model(); warm_up.param("w", ld.Normal(0, 1))
warm_up.compile(cache_dir=tempfile.mkdtemp())  # numba's one-time start-up, excluded
model = b.{build}({n}, np.random.default_rng(0))[0]
start = time.perf_counter()
model.compile(cache_dir={cache!r})
print(time.perf_counter() - start)
"""


def compile_times(build, n):
    """Seconds of ``compile()`` in a new process: with an empty cache, then from the disk cache.

    numba's own start-up (its first compilation in a process) is excluded by
    compiling a throwaway model first.
    """
    with tempfile.TemporaryDirectory() as cache:
        script = COMPILE_SCRIPT.format(here=os.path.dirname(os.path.abspath(__file__)),
                                       build=build.__name__, n=n, cache=cache)
        times = [float(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                      check=True).stdout.split()[-1]) for _ in range(2)]
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes, shorter timing")
    parser.add_argument("--models", help="comma-separated subset of the models (default: all)")
    parser.add_argument("--no-compile-times", action="store_true", help="skip the compile-time table")
    args = parser.parse_args()
    budget = 0.1 if args.quick else 0.3
    rng = np.random.default_rng(0)
    sizes = {
        "poisson": [100, 10_000, 1_000_000] if args.quick else [100, 1_000, 10_000, 100_000, 1_000_000],
        "normal": [10, 1_000, 100_000] if args.quick else [10, 100, 1_000, 10_000, 100_000],
        "bernoulli_logit": [1_000, 100_000] if args.quick else [1_000, 10_000, 100_000],
        "potential": [100, 1_000],
        "logistic": [10_000],
        "hierarchical": [20_000],
        "hierarchical_sorted": [20_000],
    }
    builds = {"poisson": poisson, "normal": normal, "bernoulli_logit": bernoulli_logit,
              "potential": potential, "logistic": logistic, "hierarchical": hierarchical,
              "hierarchical_sorted": hierarchical_sorted}
    if args.models:
        sizes = {name: sizes[name] for name in args.models.split(",")}
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line), "?")
    print(f"# {platform.platform()}, {cpu}, one core; numba {numba.__version__} "
          f"(SVML: {numba.config.USING_SVML}), numpy {np.__version__}")
    ld.Model().compile()  # numba's one-time start-up, not a model's compile time
    header = ("model", "N", "hand us (numba loop)", "logdens us (numba loop)", "logdens/hand",
              "logdens us (Python call)", "grad/value", "per-sample/grad", "sparse per-sample/grad",
              "pointwise/grad",
              "jax us", "jax/logdens",
              "pytensor us", "pytensor/logdens")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, ns in sizes.items():
        for n in ns:
            r = row(name, builds[name], n, rng, budget)
            us = {k: v * 1e6 for k, v in r.items() if isinstance(v, float)}
            cells = [name, f"{n:,}", f"{us['hand']:.2f}", f"{us['logdens']:.2f}",
                     f"{r['logdens'] / r['hand']:.2f}", f"{us['method']:.2f}",
                     f"{r['grad'] / r['value']:.2f}",
                     f"{r['per_sample'] / r['grad']:.2f}" if "per_sample" in r else "-",
                     f"{r['sparse'] / r['grad']:.2f}" if "sparse" in r else "-",
                     f"{r['pointwise'] / r['grad']:.2f}" if "pointwise" in r else "-",
                     f"{us['jax']:.1f}" if "jax" in r else "skipped (no jax)",
                     f"{r['jax'] / r['method']:.1f}" if "jax" in r else "-",
                     f"{us['pytensor']:.1f}" if "pytensor" in r else "skipped (no pymc)",
                     f"{r['pytensor'] / r['method']:.1f}" if "pytensor" in r else "-"]
            print("| " + " | ".join(cells) + " |", flush=True)
    if args.no_compile_times:
        return
    print("\n| model | N | compile s (empty cache) | ms from the disk cache |\n|---|---|---|---|")
    for name, n in [("poisson", 1000), ("normal", 1000), ("potential", 1000), ("logistic", 10_000),
                    ("hierarchical", 20_000)]:
        cold, warm = compile_times(builds[name], n)
        print(f"| {name} | {n:,} | {cold:.2f} | {warm * 1e3:.0f} |", flush=True)


if __name__ == "__main__":
    main()
