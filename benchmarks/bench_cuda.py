"""The CUDA backend on a GPU, side by side with JAX on the same GPU and with
logdens on one CPU core, in one run.

Run: python benchmarks/bench_cuda.py [--quick] [--json PATH]

1. Checks: every engine benchmark model's value, gradient and a batch of
   points from ``backend="cuda"`` against the CPU backend (relative error).
2. Large N: a gradient evaluation of the Normal (a mean per row), the
   hierarchical Poisson and the logistic regression at N = 1e6..1e8 with the
   point on the device. Reported: the time of our three launches, the bytes
   the evaluation must move (data, theta, gradient), that as GB/s and as a
   fraction of a device-to-device copy's rate measured here, JAX's
   ``jit(value_and_grad)`` (float64) and the ratio.
   Section ``large32``: the same models compiled with ``dtype=np.float32``
   (data on the device as float32, indices as int32, arithmetic in float64),
   bytes counted with 4-byte floats and ints, the ratio to the float64 time
   of ``large`` in the same run, and the differences from a float64 density
   at the same data rounded to float32.
3. Many points: K = 1..4096 points per launch of the hierarchical Poisson
   and the logistic regression at N = 1000 (a sampler's many chains), per
   point, against JAX's ``vmap(value_and_grad)`` on the GPU and logdens'
   batch on one CPU core: where the GPU starts to pay.
4. A host call: ``log_density_gradient(numpy theta)`` for one point (copies
   and launches from Python), the cost a sampler calling from the host pays.
5. Per-sample gradient rows of the logistic regression (n = 1e5) on the
   device, against JAX's ``vmap(grad)`` on the GPU and one CPU core.
6. ChEES with 256 chains on the hierarchical Poisson model: the CUDA
   backend with each iteration's leapfrog steps on the device, the same
   with a host call per leapfrog step, and the CPU backend's compiled loop,
   wall time, ESS and time per step; 1024 chains on the device.
7. One ChEES iteration's steps alone (``steps``): on the device against a
   host round trip per step, 1 to 50 steps of 256 and 1024 chains.
8. Launch shapes for many points (``threads``): blocks per point and
   threads per block against the shape ``CudaLogDensity`` chooses.
9. The neural network of ``bench_mlp.py`` (``mlp``; values with shape, a row
   per thread): one point's value and gradient and its per-sample rows at n
   rows, against JAX's ``jit(value_and_grad)`` and ``jit(vmap(grad))`` on the
   GPU and logdens on one CPU core; K points of 256 rows per launch.

Every peer's gradient is checked against ours before it is timed.
"""

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX shares the device with us

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import logdens as ld  # noqa: E402
from engine_models import bernoulli_logit, hierarchical, logistic, normal, poisson, potential  # noqa: E402
from machine import cpu_model, versions  # noqa: E402

RESULTS = {}
JSON = None  # where ``report`` keeps the results so far (a run cut short keeps them)


def report(key, value):
    RESULTS[key] = value
    print(key, value, flush=True)
    if JSON:
        with open(JSON, "w") as f:
            json.dump(RESULTS, f, indent=1)


def gpu_time(fn, budget=0.5):
    """Median seconds per call of ``fn`` (device work waited for)."""
    fn()
    cuda.synchronize()
    start = time.perf_counter()
    fn()
    cuda.synchronize()
    once = max(time.perf_counter() - start, 1e-6)
    inner = max(1, int(0.02 / once))
    samples = []
    for _ in range(max(3, int(budget / (once * inner)))):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        cuda.synchronize()
        samples.append((time.perf_counter() - start) / inner)
    return float(np.median(samples))


def copy_rate(n):
    """Bytes per second of a device-to-device copy of ``n`` float64 (read + write counted)."""
    a = cuda.to_device(np.zeros(n))
    b = cuda.device_array(n)
    seconds = gpu_time(lambda: b.copy_to_device(a))
    return 2 * 8 * n / seconds


def jax_value_and_grad(jax_fn, batch=False):
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    f = jax.value_and_grad(jax_fn(jnp))
    return jax.jit(jax.vmap(f) if batch else f), jnp


def check_models(n):
    for build in (poisson, normal, potential, bernoulli_logit, logistic, hierarchical):
        m, _, _, _, theta = build(n, np.random.default_rng(0))
        cpu, start = m.compile(), time.perf_counter()
        gpu = m.compile(backend="cuda")
        lp_g, g_g = gpu.log_density_gradient(theta)
        compile_s = time.perf_counter() - start
        lp_c, g_c = cpu.log_density_gradient(theta)
        thetas = theta + 0.01 * np.random.default_rng(1).normal(size=(8, len(theta)))
        L_g, G_g = gpu.log_density_gradient_batch(thetas)
        L_c, G_c = cpu.log_density_gradient_batch(thetas)
        value = gpu.log_density(theta)
        scale = np.max(np.abs(g_c)) + 1e-300
        report(f"check {build.__name__} n={n}", {
            "lp_rel": abs(lp_g - lp_c) / abs(lp_c), "value_rel": abs(value - lp_c) / abs(lp_c),
            "grad_rel": float(np.max(np.abs(g_g - g_c)) / scale),
            "batch_lp_rel": float(np.max(np.abs(L_g - L_c) / np.abs(L_c))),
            "batch_grad_rel": float(np.max(np.abs(G_g - G_c)) / np.max(np.abs(G_c))),
            "first_call_s": round(compile_s, 2)})


#: The large-N models: ``(build, bytes an evaluation moves per row)`` given the
#: bytes of a data float and of an index (theta and the gradient are float64).
LARGE = {"normal": (normal, lambda f, i: f + 8 * 2),  # y; mu and its gradient, N entries each
         "hierarchical": (hierarchical, lambda f, i: 2 * f + i),  # c, x; group
         "logistic": (logistic, lambda f, i: 22 * f)}  # y, 20 columns of X, ...


def _large_densities(sizes, dtype=None):
    """``(name, n, model, jax_fn, theta, density)`` for each large case and size,
    compiled with ``dtype``; one density per model, given new data at each size."""
    for name, (build, _) in LARGE.items():
        density = None
        for n in sizes:
            if name == "logistic" and n > 10**7:
                continue
            m, _, jax_fn, _, theta = build(n, np.random.default_rng(0))
            if density is None or name == "normal":  # normal's parameter has N entries: a new model
                density = m.compile(backend="cuda", dtype=dtype)
            else:  # the same model, new data: no compilation
                density.set_data(**{k: v.value for k, v in m.data_nodes.items()})
            yield name, n, m, jax_fn, theta, density


def _moved_row(name, n, seconds, rate, bytes_float, bytes_int):
    moved = n * LARGE[name][1](bytes_float, bytes_int)
    return {"ours_ms": round(seconds * 1e3, 4), "GB/s": round(moved / seconds / 1e9, 1),
            "of_copy_rate": round(moved / seconds / rate, 3)}


def large(sizes, copy_n=100_000_000):
    rate = copy_rate(copy_n)
    report("device copy GB/s", round(rate / 1e9, 1))
    for name, n, m, jax_fn, theta, density in _large_densities(sizes):
        point = cuda.to_device(theta.reshape(1, -1))
        ours = gpu_time(lambda: density._run(point, True, True))
        lp, grad = density.log_density_gradient_batch(point)
        lp, grad = lp.copy_to_host()[0], grad.copy_to_host()[0]
        row = _moved_row(name, n, ours, rate, 8, 8)
        try:
            f, jnp = jax_value_and_grad(jax_fn)
            t = jnp.asarray(theta)
            value, jgrad = f(t)
            assert np.isclose(float(value), lp, rtol=1e-8), (float(value), lp)
            assert np.allclose(np.asarray(jgrad), grad, rtol=1e-6, atol=1e-8 * np.max(np.abs(grad)))
            jax_s = gpu_time(lambda: f(t)[1].block_until_ready())
            row.update({"jax_ms": round(jax_s * 1e3, 4), "jax/ours": round(jax_s / ours, 2)})
        except Exception as e:  # noqa: BLE001  (a missing or failing peer is reported, not fatal)
            row["jax"] = f"{type(e).__name__}: {e}"[:200]
        report(f"large {name} N={n:.0e}", row)


def large_float32(sizes, copy_n=100_000_000):
    """``large`` with the data on the device as float32 (the module docstring):
    the time, the bytes moved with 4-byte floats (and ints, unless they did
    not fit), the ratio to ``large``'s float64 time of this run, and the
    differences from a float64 density at the data rounded to float32 (the
    same arithmetic: last bits only)."""
    rate = copy_rate(copy_n)
    for name, n, m, _, theta, density in _large_densities(sizes, np.float32):
        point = cuda.to_device(theta.reshape(1, -1))
        ours = gpu_time(lambda: density._run(point, True, True))
        row = _moved_row(name, n, ours, rate, 4, density._idata.dtype.itemsize)
        float64_ms = RESULTS.get(f"large {name} N={n:.0e}", {}).get("ours_ms")
        if float64_ms:
            row["float64/float32"] = round(float64_ms / (ours * 1e3), 2)
        reference = m.compile(backend="cuda")
        reference.set_data(**{k: v.value.astype(np.float32).astype(np.float64) if v.value.dtype.kind == "f"
                              else v.value for k, v in m.data_nodes.items()})
        (lp, grad), (lp_r, grad_r) = (d.log_density_gradient_batch(theta.reshape(1, -1)) for d in (density, reference))
        row.update({"lp_rel": float(abs(lp[0] - lp_r[0]) / abs(lp_r[0])),
                    "grad_rel": float(np.max(np.abs(grad - grad_r)) / np.max(np.abs(grad_r)))})
        del reference
        report(f"large32 {name} N={n:.0e}", row)


def many_points(ks, n=1000):
    for build in (hierarchical, logistic):
        m, _, jax_fn, _, theta = build(n, np.random.default_rng(0))
        gpu, cpu = m.compile(backend="cuda"), m.compile()
        for k in ks:
            thetas = theta + 0.01 * np.random.default_rng(2).normal(size=(k, theta.size))
            points = cuda.to_device(thetas)
            ours = gpu_time(lambda: gpu._run(points, True, True))
            host = gpu_time(lambda: gpu.log_density_gradient_batch(thetas), budget=0.3)
            one_core = gpu_time(lambda: cpu.log_density_gradient_batch(thetas), budget=0.3)
            row = {"ours_us_per_point": round(ours / k * 1e6, 3), "host_call_us_per_point": round(host / k * 1e6, 3),
                   "cpu_core_us_per_point": round(one_core / k * 1e6, 3), "cpu/ours": round(one_core / ours, 2)}
            try:
                f, jnp = jax_value_and_grad(jax_fn, batch=True)
                t = jnp.asarray(thetas)
                values, grads = f(t)
                lps, our_grads = gpu.log_density_gradient_batch(thetas)
                assert np.allclose(np.asarray(values), lps, rtol=1e-8)
                jax_s = gpu_time(lambda: f(t)[1].block_until_ready())
                row.update({"jax_us_per_point": round(jax_s / k * 1e6, 3), "jax/ours": round(jax_s / ours, 2)})
            except Exception as e:  # noqa: BLE001
                row["jax"] = f"{type(e).__name__}: {e}"[:200]
            report(f"points {build.__name__} n={n} K={k}", row)


def per_sample_rows(n=100_000, d=20):
    """Per-sample gradient rows of the logistic regression (n, d + 1) into a
    device array, against JAX's ``vmap(grad)`` of one row's log-likelihood on
    the GPU and logdens' rows on one CPU core."""
    m, _, _, _, theta = logistic(n, np.random.default_rng(0), d=d)
    gpu, cpu = m.compile(backend="cuda"), m.compile()
    rows = cuda.device_array((n, theta.size))
    ours = gpu_time(lambda: gpu.per_sample_gradient(theta, "y", out=rows))
    want = cpu.per_sample_gradient(theta, "y")
    host_rows = np.empty_like(want)
    one_core = gpu_time(lambda: cpu.per_sample_gradient(theta, "y", out=host_rows), budget=0.3)
    row = {"ours_ms": round(ours * 1e3, 3), "cpu_core_ms": round(one_core * 1e3, 3),
           "max_rel_err": float(np.max(np.abs(rows.copy_to_host() - want)) / np.max(np.abs(want)))}
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        X, y = (jnp.asarray(gpu.data()[k]) for k in ("X", "y"))

        def one(t, x, yi):  # BernoulliLogit(x @ beta + alpha) of one row
            eta = x @ t[1:] + t[0]
            return yi * eta - jnp.logaddexp(0.0, eta)
        f = jax.jit(jax.vmap(jax.grad(one), in_axes=(None, 0, 0)))
        t = jnp.asarray(theta)
        assert np.allclose(np.asarray(f(t, X, y)), want, rtol=1e-8, atol=1e-12)
        jax_s = gpu_time(lambda: f(t, X, y).block_until_ready())
        row.update({"jax_ms": round(jax_s * 1e3, 3), "jax/ours": round(jax_s / ours, 2)})
    except Exception as e:  # noqa: BLE001
        row["jax"] = f"{type(e).__name__}: {e}"[:200]
    report(f"per-sample rows logistic n={n} d={d}", row)


def chees_run(chains=256, draws=300, tune=300, n=1000,
              runs=(("cuda", "device", 256), ("cuda", "batch", 256), ("cpu", "entry", 256), ("cuda", "device", 1024))):
    """ChEES on the hierarchical Poisson model: the CUDA backend with each
    iteration's leapfrog steps on the device (``gradient="device"``), the
    same with a host round trip per step (``"batch"``), and the CPU
    backend's compiled loop over the chains; wall time (after a short first
    run that compiles everything, timed apart), ESS and the time per
    leapfrog step of all chains (an iteration's fixed cost included)."""
    from logdens.samplers.diagnostics import bulk_ess
    m, *_ = hierarchical(n, np.random.default_rng(0))
    densities = {}
    for backend, source, k in runs:
        density = densities.setdefault(backend, m.compile(backend=backend))
        start = time.perf_counter()  # the kernels and the sampler's loop compiled first, timed apart
        ld.chees(density, chains=k, draws=2, tune=2, progress=False, log_likelihood=False, gradient=source)
        compile_s = time.perf_counter() - start
        start = time.perf_counter()
        idata = ld.chees(density, chains=k, draws=draws, tune=tune, progress=False, log_likelihood=False,
                         gradient=source, save_warmup=True)
        seconds = time.perf_counter() - start
        steps = float(idata.warmup_sample_stats["n_steps"].max("chain").sum()
                      + idata.sample_stats["n_steps"].max("chain").sum())
        ess = min(bulk_ess(np.asarray(idata.posterior[v]).reshape(k, draws, -1)).min()
                  for v in ("mu", "log_sigma", "b", "z"))
        report(f"chees hierarchical n={n} chains={k} draws={draws} tune={tune} {backend} {source}", {
            "seconds": round(seconds, 2), "first_run_s": round(compile_s, 2), "leapfrog_steps": int(steps), "ms_per_step": round(seconds / steps * 1e3, 3),
            "min_bulk_ess": round(float(ess)), "ess_per_s": round(float(ess) / seconds, 1),
            "mu_mean": round(float(idata.posterior["mu"].mean()), 4),
            "b_mean": round(float(idata.posterior["b"].mean()), 4)})


def chees_steps(ks=(256, 1024), ns=(1, 10, 50), n=1000):
    """One ChEES iteration's leapfrog steps alone, ``n_steps`` of them from
    the same start: ``samplers.chees_device.DeviceSteps`` (the start and the
    ends copied once) against ``batch_steps`` (a host round trip per step),
    and the gradient's launches alone, per step; the hierarchical Poisson
    model, every kernel compiled before timing."""
    from logdens.samplers.chees import batch_steps, ensemble_init, make_proposal, proposal_start
    from logdens.samplers.chees_device import DeviceSteps
    from logdens.samplers.metric import Metric
    m, *_ = hierarchical(n, np.random.default_rng(0))
    density = m.compile(backend="cuda")
    metric = Metric(np.ones(density.dim), np.zeros((1, 1)), np.zeros((1, 1)), False)
    no_interrupt = np.zeros(1, dtype=np.int64)
    for k in ks:
        ens = ensemble_init(density.numba_entry, density.dim, k, seed=1)
        sources = {"device": DeviceSteps(density, k, density.dim),
                   "batch": batch_steps(density.log_density_gradient_batch)}
        row = {}
        for name, steps in sources.items():
            for n_steps in (1,) + tuple(ns):  # the first call compiles
                prop = make_proposal(k, density.dim)
                proposal_start(metric, ens, prop)
                start = time.perf_counter()
                steps(metric, 0.01, 1000.0, prop, n_steps, no_interrupt)
                cuda.synchronize()
                row[f"{name} n={n_steps} ms/step"] = round((time.perf_counter() - start) / n_steps * 1e3, 3)
        points = cuda.to_device(ens.q)
        row["gradient launches ms/step"] = round(gpu_time(lambda: density._run(points, True, True)) * 1e3, 3)
        report(f"chees steps hierarchical n={n} chains={k}", row)


def threads_per_point(ks=(256, 4096), n=1000, grids=((1, 32), (1, 64), (1, 128), (1, 256), (2, 128), (4, 256))):
    """Many points with other launch shapes than ``CudaLogDensity._grid``'s
    choice: (blocks per point, threads per block). Fewer threads per point
    take more rows each and sum fewer partial results per block."""
    for build in (logistic, hierarchical):
        m, *_, theta = build(n, np.random.default_rng(0))
        gpu = m.compile(backend="cuda")
        for k in ks:
            points = cuda.to_device(theta + 0.01 * np.random.default_rng(2).normal(size=(k, theta.size)))
            chosen = gpu._grid(k)
            want = gpu._run(points, True, True).lps.copy_to_host()
            row = {"chosen": f"{chosen[0][0]}x{chosen[1]}",
                   "chosen_us_per_point": round(gpu_time(lambda: gpu._run(points, True, True), 0.2) / k * 1e6, 3)}
            for blocks, threads in grids:
                gpu._grid = lambda k, b=blocks, t=threads: ((b, k), t)
                lps = gpu._run(points, True, True).lps.copy_to_host()
                assert np.allclose(lps, want, rtol=1e-10), (blocks, threads)
                row[f"{blocks}x{threads}"] = round(gpu_time(lambda: gpu._run(points, True, True), 0.2) / k * 1e6, 3)
            del gpu._grid
            report(f"threads {build.__name__} n={n} K={k} (us per point)", row)


def mlp(ns=(256, 4096, 32768), ks=(64, 1024), n_points=256):
    """Section 9 (see the module docstring)."""
    from bench_mlp import jax_functions, network
    for n in ns:
        m, X, Y = network(n, np.random.default_rng(0))
        cpu, start = m.compile(), time.perf_counter()
        gpu = m.compile(backend="cuda")
        theta = np.random.default_rng(1).normal(size=cpu.dim) * 0.3
        point, rows = cuda.to_device(theta[None]), cuda.device_array((n, cpu.dim))
        lp, grad = gpu.log_density_gradient(theta)
        first_call = time.perf_counter() - start
        want_lp, want = cpu.log_density_gradient(theta)
        want_rows = cpu.per_sample_gradient(theta, "Y")
        gpu.per_sample_gradient(theta, "Y", out=rows)
        row = {"first_call_s": round(first_call, 2), "lp_rel": abs(lp - want_lp) / abs(want_lp),
               "grad_rel": float(np.max(np.abs(grad - want)) / np.max(np.abs(want))),
               "rows_rel": float(np.max(np.abs(rows.copy_to_host() - want_rows)) / np.max(np.abs(want_rows)))}
        ours = gpu_time(lambda: gpu._run(point, True, True))
        ours_rows = gpu_time(lambda: gpu.per_sample_gradient(theta, "Y", out=rows))
        host_grad, host_rows = np.empty(cpu.dim), np.empty_like(want_rows)
        row.update({"ours_us": round(ours * 1e6, 1), "ours_rows_us": round(ours_rows * 1e6, 1),
                    "cpu_core_us": round(gpu_time(lambda: cpu.log_density_gradient(theta, out=host_grad),
                                                  budget=0.3) * 1e6, 1),
                    "cpu_core_rows_us": round(gpu_time(lambda: cpu.per_sample_gradient(theta, "Y", out=host_rows),
                                                       budget=0.3) * 1e6, 1)})
        try:
            import jax
            jax.config.update("jax_enable_x64", True)
            calls, t = jax_functions(cpu, X, Y), jax.numpy.asarray(theta)
            assert np.allclose(np.asarray(calls[0](t)), want, rtol=1e-8, atol=1e-8)
            assert np.allclose(np.asarray(calls[1](t)), want_rows, rtol=1e-8, atol=1e-8)
            jax_s, jax_rows = gpu_time(lambda: calls[0](t)), gpu_time(lambda: calls[1](t))
            row.update({"jax_us": round(jax_s * 1e6, 1), "jax_rows_us": round(jax_rows * 1e6, 1),
                        "jax/ours": round(jax_s / ours, 2), "jax/ours rows": round(jax_rows / ours_rows, 2)})
        except Exception as e:  # noqa: BLE001
            row["jax"] = f"{type(e).__name__}: {e}"[:200]
        report(f"mlp n={n}", row)
    m, _, _ = network(n_points, np.random.default_rng(0))
    cpu, gpu = m.compile(), m.compile(backend="cuda")
    for k in ks:
        thetas = np.random.default_rng(2).normal(size=(k, cpu.dim)) * 0.3
        points = cuda.to_device(thetas)
        L, G = gpu.log_density_gradient_batch(thetas)
        L_c, G_c = cpu.log_density_gradient_batch(thetas)
        ours = gpu_time(lambda: gpu._run(points, True, True))
        one_core = gpu_time(lambda: cpu.log_density_gradient_batch(thetas), budget=0.3)
        report(f"mlp points n={n_points} K={k}", {
            "grad_rel": float(np.max(np.abs(G - G_c)) / np.max(np.abs(G_c))),
            "ours_us_per_point": round(ours / k * 1e6, 2), "cpu_core_us_per_point": round(one_core / k * 1e6, 2),
            "cpu/ours": round(one_core / ours, 2)})


def host_call(sizes=(100, 10_000)):
    for n in sizes:
        m, _, _, _, theta = hierarchical(n, np.random.default_rng(0))
        gpu, cpu = m.compile(backend="cuda"), m.compile()
        out = np.empty(theta.size)
        ours = gpu_time(lambda: gpu.log_density_gradient(theta, out=out), budget=0.3)
        one_core = gpu_time(lambda: cpu.log_density_gradient(theta, out=out), budget=0.3)
        report(f"host call hierarchical n={n}", {"cuda_us": round(ours * 1e6, 1), "cpu_us": round(one_core * 1e6, 1)})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--only", default="check,mlp,points,host,rows,large,large32,steps,chees,threads")
    parser.add_argument("--chees", type=int, default=300, help="ChEES warmup and draws per chain")
    args = parser.parse_args()
    global JSON
    JSON = args.json
    device = cuda.get_current_device()
    report("device", f"{device.name.decode() if isinstance(device.name, bytes) else device.name}, "
                     f"cc {device.compute_capability}, {device.MULTIPROCESSOR_COUNT} SMs")
    report("host", f"{cpu_model()}; {versions(('numpy', 'numba', 'numba-cuda', 'llvmlite', 'cupy-cuda13x', 'jax'))}")
    sizes = [10**6, 10**7] if args.quick else [10**6, 10**7, 10**8]
    sections = {"check": lambda: check_models(2000), "large": lambda: large(sizes),
                "large32": lambda: large_float32(sizes),
                "points": lambda: many_points([1, 256] if args.quick else [1, 16, 256, 4096]), "host": host_call,
                "rows": per_sample_rows, "chees": lambda: chees_run(draws=args.chees, tune=args.chees),
                "steps": chees_steps, "threads": threads_per_point, "mlp": mlp}
    for name in args.only.split(","):
        start = time.perf_counter()
        try:
            sections[name]()
        except Exception as e:  # noqa: BLE001  (report and go on to the next section)
            import traceback
            traceback.print_exc()
            report(f"{name} failed", f"{type(e).__name__}: {e}"[:500])
        report(f"{name} seconds", round(time.perf_counter() - start, 1))


if __name__ == "__main__":
    main()
