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
import math  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

import logdens as ld  # noqa: E402


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


# ----- the models: logdens, hand loop, JAX, PyMC, each with the same parameter layout -----

def poisson(n, rng):
    """Poisson log-likelihood gradient w.r.t. a rate vector (identity transform)."""
    counts = rng.poisson(3.0, n).astype(float)
    m = ld.Model()
    rate = m.param("rate", shape=n)
    m.observe("c", ld.Poisson(rate), counts)

    @njit(fastmath=True, error_model="numpy")
    def hand(theta, grad):
        lp = 0.0
        for i in range(theta.size):
            lp += counts[i] * math.log(theta[i]) - theta[i]
            grad[i] = counts[i] / theta[i] - 1.0
        return lp

    def jax_fn(jnp):
        return lambda t: jnp.sum(counts * jnp.log(t) - t)

    def pymc(pm):
        with pm.Model() as model:
            r = pm.Flat("rate", shape=n)
            pm.Poisson("c", mu=r, observed=counts)
        return model

    theta = rng.uniform(1.0, 5.0, n)
    return m, hand, jax_fn, pymc, theta


def normal(n, rng):
    """Normal log-density sum w.r.t. the means."""
    y = rng.normal(size=n)
    m = ld.Model()
    mu = m.param("mu", shape=n)
    m.observe("y", ld.Normal(mu, 1.5), y)

    @njit(fastmath=True, error_model="numpy")
    def hand(theta, grad):
        lp = 0.0
        for i in range(theta.size):
            z = (y[i] - theta[i]) / 1.5
            lp -= 0.5 * z * z
            grad[i] = z / 1.5
        return lp

    def jax_fn(jnp):
        return lambda t: jnp.sum(-0.5 * ((y - t) / 1.5) ** 2)

    def pymc(pm):
        with pm.Model() as model:
            mu_ = pm.Flat("mu", shape=n)
            pm.Normal("y", mu=mu_, sigma=1.5, observed=y)
        return model

    return m, hand, jax_fn, pymc, rng.normal(size=n)


def potential(n, rng):
    """F(rho) = rho^2 + rho^3 + rho^4 / 4, rho = sum(exp(-3 (x + 1)))."""
    m = ld.Model()
    x = m.param("x", shape=n)
    rho = ld.sum(ld.exp(-3.0 * (x + 1.0)))
    m.potential("F", rho ** 2 + rho ** 3 + rho ** 4 / 4)

    @njit(fastmath=True, error_model="numpy")
    def hand(theta, grad):
        rho = 0.0
        for i in range(theta.size):
            grad[i] = math.exp(-3.0 * (theta[i] + 1.0))
            rho += grad[i]
        dF = 2 * rho + 3 * rho ** 2 + rho ** 3
        for i in range(theta.size):
            grad[i] *= -3.0 * dF
        return rho ** 2 + rho ** 3 + rho ** 4 / 4

    def jax_fn(jnp):
        def F(t):
            r = jnp.sum(jnp.exp(-3.0 * (t + 1.0)))
            return r ** 2 + r ** 3 + r ** 4 / 4
        return F

    def pymc(pm):
        with pm.Model() as model:
            x_ = pm.Flat("x", shape=n)
            r = pm.math.sum(pm.math.exp(-3.0 * (x_ + 1.0)))
            pm.Potential("F", r ** 2 + r ** 3 + r ** 4 / 4)
        return model

    return m, hand, jax_fn, pymc, rng.normal(scale=0.3, size=n)


def logistic(n, rng, d=20):
    """Logistic regression: BernoulliLogit(X @ beta + alpha), flat priors."""
    X = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < 0.5).astype(float)
    m = ld.Model()
    alpha = m.param("alpha")
    beta = m.param("beta", shape=d)
    m.observe("y", ld.BernoulliLogit(m.data("X", X) @ beta + alpha), y)

    @njit(fastmath=True, error_model="numpy")
    def hand(theta, grad):
        lp = 0.0
        grad[:] = 0.0
        for i in range(X.shape[0]):
            eta = theta[0]
            for j in range(d):
                eta += X[i, j] * theta[1 + j]
            # log p = y eta - log1p(exp(eta)); d/deta = y - logistic(eta)
            if eta > 0:
                e = math.exp(-eta)
                lp += y[i] * eta - eta - math.log1p(e)
                g = y[i] - 1.0 / (1.0 + e)
            else:
                e = math.exp(eta)
                lp += y[i] * eta - math.log1p(e)
                g = y[i] - e / (1.0 + e)
            grad[0] += g
            for j in range(d):
                grad[1 + j] += g * X[i, j]
        return lp

    def jax_fn(jnp):
        import jax
        return lambda t: jnp.sum(y * (X @ t[1:] + t[0]) - jax.nn.softplus(X @ t[1:] + t[0]))

    def pymc(pm):
        with pm.Model() as model:
            a = pm.Flat("alpha")
            b = pm.Flat("beta", shape=d)
            pm.Bernoulli("y", logit_p=pm.math.dot(X, b) + a, observed=y)
        return model

    return m, hand, jax_fn, pymc, rng.normal(scale=0.1, size=d + 1)


def hierarchical(n, rng, groups=100):
    """Hierarchical Poisson, non-centered: PoissonLog((mu + sigma z)[group] + b x), flat priors."""
    group = rng.integers(0, groups, n)
    x = rng.normal(size=n)
    counts = rng.poisson(np.exp(0.5 + 0.3 * rng.normal(size=groups)[group] + 0.2 * x)).astype(float)
    m = ld.Model()
    mu = m.param("mu")
    log_sigma = m.param("log_sigma")
    z = m.param("z", shape=groups)
    b = m.param("b")
    g = m.data("group", group)
    m.observe("c", ld.PoissonLog((mu + ld.exp(log_sigma) * z)[g] + b * m.data("x", x)), counts)

    @njit(fastmath=True, error_model="numpy")
    def hand(theta, grad):
        mu_, sigma, b_ = theta[0], math.exp(theta[1]), theta[groups + 2]
        lp = 0.0
        grad[:] = 0.0
        for i in range(group.size):
            k = group[i]
            eta = mu_ + sigma * theta[2 + k] + b_ * x[i]
            rate = math.exp(eta)
            lp += counts[i] * eta - rate
            r = counts[i] - rate
            grad[0] += r
            grad[1] += r * sigma * theta[2 + k]
            grad[2 + k] += r * sigma
            grad[groups + 2] += r * x[i]
        return lp

    def jax_fn(jnp):
        def f(t):
            eta = (t[0] + jnp.exp(t[1]) * t[2:groups + 2])[group] + t[groups + 2] * x
            return jnp.sum(counts * eta - jnp.exp(eta))
        return f

    def pymc(pm):
        with pm.Model() as model:
            mu_ = pm.Flat("mu")
            ls = pm.Flat("log_sigma")
            z_ = pm.Flat("z", shape=groups)
            b_ = pm.Flat("b")
            eta = (mu_ + pm.math.exp(ls) * z_)[group] + b_ * x
            pm.Poisson("c", mu=pm.math.exp(eta), observed=counts)
        return model

    return m, hand, jax_fn, pymc, rng.normal(scale=0.1, size=groups + 3)


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
    """Seconds per call of ``function`` called in a loop inside numba (no Python per call)."""
    reps = max(1, int(2e5 / max(len(theta), len(fdata), 1)))
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
import logdens as ld, bench_engine as b
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
    args = parser.parse_args()
    budget = 0.1 if args.quick else 0.3
    rng = np.random.default_rng(0)
    sizes = {
        "poisson": [100, 10_000, 1_000_000] if args.quick else [100, 1_000, 10_000, 100_000, 1_000_000],
        "normal": [10, 1_000, 100_000] if args.quick else [10, 100, 1_000, 10_000, 100_000],
        "potential": [100, 1_000],
        "logistic": [10_000],
        "hierarchical": [20_000],
    }
    builds = {"poisson": poisson, "normal": normal, "potential": potential, "logistic": logistic,
              "hierarchical": hierarchical}
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line), "?")
    print(f"# {platform.platform()}, {cpu}, one core; numba {numba.__version__} "
          f"(SVML: {numba.config.USING_SVML}), numpy {np.__version__}")
    ld.Model().compile()  # numba's one-time start-up, not a model's compile time
    header = ("model", "N", "hand us (numba loop)", "logdens us (numba loop)", "logdens/hand",
              "logdens us (Python call)", "grad/value", "per-sample/grad", "jax us", "jax/logdens",
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
                     f"{us['jax']:.1f}" if "jax" in r else "skipped (no jax)",
                     f"{r['jax'] / r['method']:.1f}" if "jax" in r else "-",
                     f"{us['pytensor']:.1f}" if "pytensor" in r else "skipped (no pymc)",
                     f"{r['pytensor'] / r['method']:.1f}" if "pytensor" in r else "-"]
            print("| " + " | ".join(cells) + " |", flush=True)
    print("\n| model | N | compile s (empty cache) | ms from the disk cache |\n|---|---|---|---|")
    for name, n in [("poisson", 1000), ("normal", 1000), ("potential", 1000), ("logistic", 10_000),
                    ("hierarchical", 20_000)]:
        cold, warm = compile_times(builds[name], n)
        print(f"| {name} | {n:,} | {cold:.2f} | {warm * 1e3:.0f} |", flush=True)


if __name__ == "__main__":
    main()
