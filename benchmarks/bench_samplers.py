"""NUTS side by side: logdens against nutpie, NumPyro and PyMC's own NUTS.

Run: python benchmarks/bench_samplers.py [--models eight_schools,logistic]
     [--tools logdens,nutpie] [--draws 1000] [--tune 1000] [--json out.json]
     python benchmarks/bench_samplers.py --report out.json   (tables again)
     python benchmarks/bench_samplers.py --first-call 3      (first ld.nuts, fresh caches)

Every (model, tool) pair runs in a fresh Python process pinned to one core
(``--core``), with one thread for numba, BLAS and XLA and an empty numba cache
directory, so compile times are cold: logdens compiles its model into a fresh
cache directory and ``samplers.nuts`` compiles its transition kernel from
scratch.  PyTensor's own compile directory (C modules used by PyMC) is left
as it is, which favours PyMC and nutpie; say so when quoting the numbers.

The data are simulated with fixed seeds inside each process, so every tool
sees the same numbers.  All tools run 4 chains, ``--tune`` warmup and
``--draws`` kept draws, target acceptance 0.8, max tree depth 10, diagonal
mass matrix.  Reported per tool:

- compile s: from the data to a ready sampler (model construction included).
  logdens: ``Model.compile`` into a fresh cache directory plus a first
  ``samplers.nuts`` call with 5 + 5 iterations of one chain, plus
  ``import samplers`` and ``samplers.kernel.chunk_runner`` for NUTS with a
  diagonal metric, which compiles the package's transition loop (or loads it
  from numba's disk cache), and a first call of ``distributions.vmath``'s
  functions (library code compiled once per install, like the loop).  logdens
  leaves out the pointwise log-likelihood group (``log_likelihood=False``),
  as the peers do by default; pass ``--log-likelihood`` to include it.  Two
  rows from two processes sharing one numba cache directory: "logdens, empty
  numba cache" runs first and compiles everything (the first run after
  installing); "logdens" runs second and finds the library code in numba's
  disk cache (the NUTS loop, vmath and the distributions' kernels, which
  numba caches per argument types), while the model's own generated module
  is compiled from scratch (a fresh logdens cache directory): the first run
  of a new model on a machine where logdens has run before.  nutpie:
  building the PyMC model and ``compile_pymc_model``.  PyMC: wall time of
  building the model and ``pm.sample`` minus its own ``sampling_time``; this
  includes PyMC's convergence checks (R-hat and ESS after sampling, on by
  default, about 0.3 s on eight schools), the counterpart of the R-hat and
  ESS warnings logdens computes inside its sampling time (``--no-pymc-checks``
  turns them off, as runs before session 4 did).
  NumPyro recompiles for every chain and every ``run`` in sequential mode:
  its compile time is a first (cold) 10 + 10 iteration run, its sampling
  time a full run minus a second 10 + 10 run (both warm, both recompiling),
  shown as an upper bound when the difference is below the run-to-run noise
  of compiling.
- sampling s: the sampling call itself (warmup + draws, 4 chains in turn).
- min bulk ESS: ``arviz_stats.ess`` over every element of the model's free
  parameters (the same variables for every tool), its minimum.
- CPU share: process CPU time over wall time during sampling; below 100%
  means other processes held the core (the machine is shared).
- grads/draw: leapfrog steps (one gradient each) summed over kept draws,
  divided by the number of kept draws; grads/ESS the same sum divided by the
  min bulk ESS.
- the posterior means of key parameters, which are checked to agree with the
  first tool's within 5 Monte Carlo standard errors (combined): a sampler that
  is fast because it is wrong fails this check.

Nothing is asserted about time.  Peers come from the optional ``bench``
extra; a tool that cannot be imported is skipped with a message.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

TOOLS = ("logdens", "nutpie", "numpyro", "pymc")
#: Modules a tool needs; a tool whose modules do not import is skipped.
TOOL_MODULES = {"logdens": ("logdens", "logdens.samplers"), "nutpie": ("nutpie", "pymc"),
                "numpyro": ("numpyro", "jax"), "pymc": ("pymc",)}
#: Packages whose versions a run reports.
VERSIONED = ("numpy", "numba", "llvmlite", "logdens", "nutpie", "pymc", "pytensor", "numpyro", "jax",
             "arviz_base", "arviz_stats")
#: How many combined Monte Carlo standard errors two means may differ by.
MCSE_TOLERANCE = 5.0


# ----- data: simulated once per process from fixed seeds -----

def eight_schools_data():
    """The classic eight schools data (Rubin 1981)."""
    return {"y": np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0]),
            "sigma": np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])}


def logistic_data(n=10_000, d=20, seed=20261122):
    """Standard normal design, true coefficients N(0, 0.5^2), intercept 0.3."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    beta = rng.normal(0.0, 0.5, size=d)
    eta = 0.3 + X @ beta
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)
    return {"X": X, "y": y}


def poisson_data(groups=100, n=20_000, seed=20261123):
    """200 observations per group, log rate a[group] + b x, a ~ N(1, 0.5^2), b = 0.3."""
    rng = np.random.default_rng(seed)
    group = rng.permutation(np.repeat(np.arange(groups), n // groups))
    a = rng.normal(1.0, 0.5, size=groups)
    x = rng.normal(size=n)
    y = rng.poisson(np.exp(a[group] + 0.3 * x)).astype(np.int64)
    return {"group": group, "x": x, "y": y, "groups": groups}


# ----- the models, one builder per tool -----

def eight_schools_logdens(ld, data):
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5))
    tau = m.param("tau", ld.HalfCauchy(5))
    z = m.param("z", ld.Normal(0, 1), shape=8)
    m.deterministic("theta", mu + tau * z)
    m.observe("y", ld.Normal(mu + tau * z, data["sigma"]), data["y"])
    return m


def eight_schools_pymc(pm, data):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfCauchy("tau", 5)
        z = pm.Normal("z", 0, 1, shape=8)
        pm.Normal("y", mu + tau * z, data["sigma"], observed=data["y"])
    return model


def eight_schools_numpyro(numpyro, dist, jnp, data):
    y, sigma = jnp.asarray(data["y"]), jnp.asarray(data["sigma"])

    def model():
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
        z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([8]).to_event(1))
        numpyro.sample("y", dist.Normal(mu + tau * z, sigma), obs=y)
    return model


def logistic_logdens(ld, data):
    m = ld.Model()
    X = m.data("X", data["X"])
    alpha = m.param("alpha", ld.Normal(0, 1))
    beta = m.param("beta", ld.Normal(0, 1), shape=data["X"].shape[1])
    m.observe("y", ld.BernoulliLogit(X @ beta + alpha), data["y"])
    return m


def logistic_pymc(pm, data):
    with pm.Model() as model:
        X = pm.Data("X", data["X"])
        alpha = pm.Normal("alpha", 0, 1)
        beta = pm.Normal("beta", 0, 1, shape=data["X"].shape[1])
        pm.Bernoulli("y", logit_p=X @ beta + alpha, observed=data["y"])
    return model


def logistic_numpyro(numpyro, dist, jnp, data):
    X, y = jnp.asarray(data["X"]), jnp.asarray(data["y"])

    def model():
        alpha = numpyro.sample("alpha", dist.Normal(0.0, 1.0))
        beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
        numpyro.sample("y", dist.Bernoulli(logits=X @ beta + alpha), obs=y)
    return model


def poisson_logdens(ld, data, centered):
    m = ld.Model()
    g = m.data("group", data["group"])
    x = m.data("x", data["x"])
    mu_a = m.param("mu_a", ld.Normal(0, 5))
    sigma_a = m.param("sigma_a", ld.HalfNormal(1))
    b = m.param("b", ld.Normal(0, 1))
    if centered:
        a = m.param("a", ld.Normal(mu_a, sigma_a), shape=data["groups"])
    else:
        z = m.param("z", ld.Normal(0, 1), shape=data["groups"])
        a = mu_a + sigma_a * z
    m.observe("y", ld.PoissonLog(a[g] + b * x), data["y"])
    return m


def poisson_pymc(pm, data, centered):
    with pm.Model() as model:
        g = pm.Data("group", data["group"])
        x = pm.Data("x", data["x"])
        mu_a = pm.Normal("mu_a", 0, 5)
        sigma_a = pm.HalfNormal("sigma_a", 1)
        b = pm.Normal("b", 0, 1)
        if centered:
            a = pm.Normal("a", mu_a, sigma_a, shape=data["groups"])
        else:
            a = mu_a + sigma_a * pm.Normal("z", 0, 1, shape=data["groups"])
        pm.Poisson("y", mu=pm.math.exp(a[g] + b * x), observed=data["y"])
    return model


def poisson_numpyro(numpyro, dist, jnp, data, centered):
    g, x, y = (jnp.asarray(data[k]) for k in ("group", "x", "y"))
    k = data["groups"]

    def model():
        mu_a = numpyro.sample("mu_a", dist.Normal(0.0, 5.0))
        sigma_a = numpyro.sample("sigma_a", dist.HalfNormal(1.0))
        b = numpyro.sample("b", dist.Normal(0.0, 1.0))
        if centered:
            a = numpyro.sample("a", dist.Normal(mu_a, sigma_a).expand([k]).to_event(1))
        else:
            z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([k]).to_event(1))
            a = mu_a + sigma_a * z
        numpyro.sample("y", dist.Poisson(jnp.exp(a[g] + b * x)), obs=y)
    return model


def _poisson(centered):
    """Builders of the hierarchical Poisson model in one parameterization."""
    return {"logdens": lambda ld, d: poisson_logdens(ld, d, centered),
            "pymc": lambda pm, d: poisson_pymc(pm, d, centered),
            "numpyro": lambda n, dist, jnp, d: poisson_numpyro(n, dist, jnp, d, centered)}


#: name -> data, builders, free parameters (for ESS and R-hat), key parameters
#: (for the means), title.
MODELS = {
    "eight_schools": dict(
        data=eight_schools_data, logdens=eight_schools_logdens, pymc=eight_schools_pymc,
        numpyro=eight_schools_numpyro, free=("mu", "tau", "z"), keys=("mu", "tau"),
        title="Eight schools, non-centered (10 parameters)"),
    "logistic": dict(
        data=logistic_data, logdens=logistic_logdens, pymc=logistic_pymc,
        numpyro=logistic_numpyro, free=("alpha", "beta"), keys=("alpha", "beta[0]"),
        title="Logistic regression, N = 10,000, D = 20 (21 parameters)"),
    "poisson": dict(
        data=poisson_data, **_poisson(True), free=("mu_a", "sigma_a", "b", "a"),
        keys=("mu_a", "sigma_a", "b"),
        title="Hierarchical Poisson, 100 groups, 20,000 observations, centered (103 parameters)"),
    "poisson_nc": dict(
        data=poisson_data, **_poisson(False), free=("mu_a", "sigma_a", "b", "z"),
        keys=("mu_a", "sigma_a", "b"),
        title="Hierarchical Poisson, non-centered: the hard case (103 parameters)"),
}


# ----- one tool on one model, in a worker process -----

def _arrays(group, names):
    """``{name: ndarray (chain, draw, ...)}`` from an xarray Dataset-like group."""
    return {name: np.asarray(group[name].values) for name in names}


def run_logdens(spec, data, draws, tune, seed):
    import arviz_base  # noqa: F401  (imports that compile nothing, outside the clock)
    import numba  # noqa: F401

    import logdens as ld

    start = time.perf_counter()
    exec(LIBRARY_CODE)  # compiled, or loaded from numba's cache
    KERNEL_S[0] = time.perf_counter() - start
    from logdens import samplers

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cache:
        density = spec["logdens"](ld, data).compile(cache_dir=cache)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            samplers.nuts(density, draws=5, tune=5, chains=1, seed=seed, progress=False, cores=1,
                          log_likelihood=LOG_LIKELIHOOD[0])
        compile_s = time.perf_counter() - start
        start, cpu = time.perf_counter(), time.process_time()
        idata = samplers.nuts(density, draws=draws, tune=tune, chains=4, seed=seed,
                              progress=False, cores=1, log_likelihood=LOG_LIKELIHOOD[0])
        sampling_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    stats = idata["sample_stats"]
    return (compile_s, sampling_s, cpu_s, _arrays(idata["posterior"], spec["free"]),
            np.asarray(stats["n_steps"].values), np.asarray(stats["diverging"].values))


def run_pymc(spec, data, draws, tune, seed):
    import pymc as pm

    clocks = []

    def callback(trace, draw):  # CPU share of the sampling loop, first to last draw
        clocks.append((time.perf_counter(), time.process_time()))
        del clocks[1:-1]

    start = time.perf_counter()
    model = spec["pymc"](pm, data)
    with model:
        idata = pm.sample(draws=draws, tune=tune, chains=4, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=PYMC_CHECKS[0],
                          callback=callback)
    total = time.perf_counter() - start
    stats = idata["sample_stats"]
    sampling_s = float(stats.attrs["sampling_time"])
    (wall0, cpu0), (wall1, cpu1) = clocks[0], clocks[-1]
    cpu_s = sampling_s * (cpu1 - cpu0) / max(wall1 - wall0, 1e-9)
    return (total - sampling_s, sampling_s, cpu_s, _arrays(idata["posterior"], spec["free"]),
            np.asarray(stats["n_steps"].values), np.asarray(stats["diverging"].values))


def run_nutpie(spec, data, draws, tune, seed):
    import nutpie
    import pymc as pm

    start = time.perf_counter()
    compiled = nutpie.compile_pymc_model(spec["pymc"](pm, data))
    compile_s = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    idata = nutpie.sample(compiled, draws=draws, tune=tune, chains=4, cores=1, seed=seed,
                          progress_bar=False)
    sampling_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    stats = idata["sample_stats"]
    return (compile_s, sampling_s, cpu_s, _arrays(idata["posterior"], spec["free"]),
            np.asarray(stats["n_steps"].values), np.asarray(stats["diverging"].values))


def run_numpyro(spec, data, draws, tune, seed):
    import numpyro

    numpyro.enable_x64()
    import jax
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    def one_run(warmup, samples):
        mcmc = MCMC(NUTS(model, target_accept_prob=0.8, max_tree_depth=10), num_warmup=warmup,
                    num_samples=samples, num_chains=4, chain_method="sequential",
                    progress_bar=False)
        start, cpu = time.perf_counter(), time.process_time()
        mcmc.run(jax.random.PRNGKey(seed), extra_fields=("num_steps", "diverging"))
        jax.block_until_ready(mcmc.get_samples())
        return mcmc, time.perf_counter() - start, time.process_time() - cpu

    start = time.perf_counter()
    model = spec["numpyro"](numpyro, dist, jnp, data)
    build_s = time.perf_counter() - start
    # Sequential chains recompile for every chain and every ``run`` (the
    # compiled code is not reused).  A first 10 + 10 iteration run pays the
    # cold compile (JAX's one-time work included): that is the compile time.
    # The full run's sampling time is the full run minus a second 10 + 10
    # run, both made warm, so both recompile the same way.
    _, cold_s, _ = one_run(10, 10)
    mcmc, full_s, full_cpu = one_run(tune, draws)
    _, tiny_s, tiny_cpu = one_run(10, 10)
    sampling_s = full_s - tiny_s
    # Compile times vary by several percent from run to run: a difference
    # below 10% of the tiny run is not resolved, only bounded.
    NUMPYRO_FLOOR[0] = 0.1 * tiny_s if sampling_s < 0.1 * tiny_s else 0.0
    sampling_s = max(sampling_s, NUMPYRO_FLOOR[0])
    cpu_s = min(max(full_cpu - tiny_cpu, 0.0), sampling_s)
    samples = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    return (build_s + cold_s, sampling_s, cpu_s,
            {name: np.asarray(samples[name]) for name in spec["free"]},
            np.asarray(extra["num_steps"]), np.asarray(extra["diverging"]))


#: Seconds ``import samplers`` and getting its NUTS loop took in this process
#: (logdens worker only).
KERNEL_S = [0.0]
# The library code a logdens run compiles once per install (numba's disk cache
# keeps it): the samplers' NUTS loop and the vectorizable exp/log/log1p.
LIBRARY_CODE = ("from logdens.samplers import kernel\nkernel.chunk_runner(kernel.NUTS, False)\n"
                "from logdens.distributions import vmath\n"
                "vmath.exp(1.0); vmath.log(1.0); vmath.log1p(1.0)\n")
#: Whether logdens adds the pointwise log-likelihood group (``--log-likelihood``).
LOG_LIKELIHOOD = [False]
#: Whether PyMC runs its convergence checks (its default; ``--no-pymc-checks``).
PYMC_CHECKS = [True]
#: Upper bound of NumPyro's sampling time when it was not resolved, else 0.
NUMPYRO_FLOOR = [0.0]

RUNNERS = {"logdens": run_logdens, "pymc": run_pymc, "nutpie": run_nutpie,
           "numpyro": run_numpyro}


def _key_value(arrays, key):
    """Draws (chain, draw) of a key parameter named like ``beta[0]``."""
    name, _, index = key.partition("[")
    values = arrays[name]
    return values[..., int(index[:-1])] if index else values


def summarize(spec, result):
    """ESS, R-hat, gradients, divergences and key means of one run, as a dict."""
    import arviz_base
    import arviz_stats

    compile_s, sampling_s, cpu_s, arrays, n_steps, diverging = result
    idata = arviz_base.from_dict({"posterior": arrays})
    ess = arviz_stats.ess(idata, method="bulk")
    rhat = arviz_stats.rhat(idata)
    min_ess = min(float(np.min(ess[name].values)) for name in arrays)
    keys = {key: _key_value(arrays, key) for key in spec["keys"]}
    means = {}
    for key, draws in keys.items():
        one = arviz_base.from_dict({"posterior": {"v": draws}})
        means[key] = (float(np.mean(draws)), float(arviz_stats.mcse(one)["v"].values))
    steps = float(np.sum(n_steps))
    return {"compile_s": compile_s, "sampling_s": sampling_s, "cpu_share": cpu_s / sampling_s,
            "min_ess": min_ess, "max_rhat": max(float(np.max(rhat[n].values)) for n in arrays),
            "grads_per_draw": steps / n_steps.size, "grads_per_ess": steps / min_ess,
            "divergences": int(np.sum(diverging)), "means": means}


def worker(model, tool, draws, tune, seed, core, out):
    """Run one tool on one model in this process; write the summary as JSON."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})
    spec = MODELS[model]
    data = spec["data"]()
    summary = summarize(spec, RUNNERS[tool](spec, data, draws, tune, seed))
    summary["import_samplers_s"] = KERNEL_S[0]
    summary["sampling_bound_only"] = NUMPYRO_FLOOR[0] > 0
    with open(out, "w") as f:
        json.dump(summary, f)


# ----- the driver -----

def available(tool, python):
    """None if the tool's modules import in interpreter ``python``, else the reason."""
    code = ("import importlib, sys\n"
            f"for name in {TOOL_MODULES[tool]!r}:\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "    except Exception as exc:\n"
            "        sys.exit(f'{name}: {type(exc).__name__}: {exc}')\n")
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["failed"])[-1]


def interpreter(tool, args):
    """The Python that runs ``tool``: peers may live in their own environment
    (``--peer-python``: PyMC pins an older numba than the one pip picks for logdens)."""
    return args.peer_python if tool != "logdens" and args.peer_python else sys.executable


def spawn(model, tool, args):
    """Run :func:`worker` in a fresh process with an empty numba cache; logdens
    then runs again in a second process that finds its library code (the NUTS
    loop, vmath, the distribution kernels) in that cache, its model compiled
    again from scratch (``run_logdens`` uses a fresh logdens cache directory)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
                   PYTHONWARNINGS="ignore")
        if args.cold_peers and tool != "logdens":  # PyTensor's compiled C modules, empty too
            env["PYTENSOR_FLAGS"] = f"compiledir={os.path.join(tmp, 'pytensor')}"
        cold = _spawn_one(model, tool, args, env, os.path.join(tmp, "cold.json"))
        if tool != "logdens" or "error" in cold:
            return cold
        return {"cold": cold, "warm": _spawn_one(model, tool, args, env, os.path.join(tmp, "warm.json"))}


def _spawn_one(model, tool, args, env, out):
    """One worker process; its summary, or ``{"error": ...}``."""
    cmd = [interpreter(tool, args), os.path.abspath(__file__), "--worker", model, tool,
           "--draws", str(args.draws), "--tune", str(args.tune), "--seed", str(args.seed),
           "--core", str(args.core), "--out", out] + (
               ["--log-likelihood"] if args.log_likelihood else []) + (
               ["--no-pymc-checks"] if args.no_pymc_checks else [])
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    wall = time.perf_counter() - start
    if proc.returncode != 0 or not os.path.exists(out):
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        return {"error": "worker failed:\n    " + "\n    ".join(tail)}
    with open(out) as f:
        result = json.load(f)
    result["process_s"] = wall
    return result


def logdens_rows(results):
    """The logdens result as two rows: library code loaded from numba's disk
    cache ("logdens") and compiled too ("logdens, empty numba cache"); each
    counts its library time in its compile column."""
    r = results.pop("logdens", None)
    if r is None or "error" in r:
        return dict({"logdens": r} if r else {}, **results)
    rows = {name: dict(r[key], compile_s=r[key]["compile_s"] + r[key]["import_samplers_s"])
            for name, key in (("logdens", "warm"), ("logdens, empty numba cache", "cold"))}
    return dict(rows, **results)


def check_means(model, results):
    """Messages for key means that disagree with the first tool's."""
    ran = [(tool, r) for tool, r in results.items() if "means" in r]
    if len(ran) < 2:
        return []
    ref_tool, ref = ran[0]
    problems = []
    for tool, r in ran[1:]:
        for key, (mean, mcse) in r["means"].items():
            ref_mean, ref_mcse = ref["means"][key]
            bound = MCSE_TOLERANCE * math.hypot(mcse, ref_mcse)
            if abs(mean - ref_mean) > bound:
                problems.append(f"{model}: {key} {tool} {mean:.4f} (mcse {mcse:.4f}) vs {ref_tool} "
                                f"{ref_mean:.4f} (mcse {ref_mcse:.4f}): |diff| "
                                f"{abs(mean - ref_mean):.4f} > {bound:.4f}")
    return problems


def table(model, results):
    """Markdown table of one model's results, with ratios to the best peer."""
    keys = MODELS[model]["keys"]
    head = ["tool", "compile s", "sampling s", "min bulk ESS", "ESS/s sampling",
            "ESS/s incl. compile", "grads/draw", "grads/ESS", "div", "max R-hat", "CPU share"]
    lines = ["| " + " | ".join(head + [f"mean {k}" for k in keys]) + " |",
             "|---|" + "---:|" * (len(head) - 1 + len(keys))]
    for tool, r in results.items():
        if "error" in r:
            lines.append(f"| {tool} | " + r["error"].splitlines()[0] + " |")
            continue
        total = r["compile_s"] + r["sampling_s"]
        bound = r.get("sampling_bound_only", False)  # then sampling_s is an upper bound
        cells = [tool, f"{r['compile_s']:.2f}", ("< " if bound else "") + f"{r['sampling_s']:.2f}",
                 f"{r['min_ess']:.0f}",
                 ("> " if bound else "") + _rate(r["min_ess"] / r["sampling_s"]),
                 _rate(r["min_ess"] / total),
                 f"{r['grads_per_draw']:.1f}", f"{r['grads_per_ess']:.1f}",
                 str(r["divergences"]), f"{r['max_rhat']:.3f}", f"{r['cpu_share']:.0%}"]
        cells += [f"{m:.4f} ± {s:.4f}" for m, s in (r["means"][k] for k in keys)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + ratios(results)


def _rate(x):
    """A rate with about three significant digits, no exponent."""
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def ratios(results):
    """One line: logdens against the best peer on each headline measure."""
    ok = {t: r for t, r in results.items() if "error" not in r}
    peers = {t: r for t, r in ok.items() if not t.startswith("logdens")}
    if "logdens" not in ok or not peers:
        return ""
    me = ok["logdens"]

    def rate(r, with_compile):
        return r["min_ess"] / (r["sampling_s"] + (r["compile_s"] if with_compile else 0.0))

    parts = []
    for label, with_compile in (("ESS/s incl. compile", True), ("ESS/s sampling", False)):
        fair = {t: r for t, r in peers.items()
                if with_compile or not r.get("sampling_bound_only", False)}
        if not fair:
            continue
        best = max(fair, key=lambda t: rate(fair[t], with_compile))
        parts.append(f"{label}: logdens / best peer ({best}) = "
                     f"{rate(me, with_compile) / rate(peers[best], with_compile):.2f}")
    cold = ok.get("logdens, empty numba cache")
    if cold is not None:  # the first run after installing (against cold peers with --cold-peers)
        best = max(peers, key=lambda t: rate(peers[t], True))
        parts.append(f"ESS/s incl. compile, logdens with an empty numba cache / best peer ({best}) = "
                     f"{rate(cold, True) / rate(peers[best], True):.2f}")
    best = min(peers, key=lambda t: peers[t]["grads_per_ess"])
    parts.append(f"grads/ESS: logdens / best peer ({best}) = "
                 f"{me['grads_per_ess'] / peers[best]['grads_per_ess']:.2f}")
    return "\n" + "; ".join(parts) + "\n"


def machine(args):
    """A few lines describing the machine, versions and settings."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    pythons = [sys.executable] + ([args.peer_python] if args.peer_python else [])
    return "\n".join([
        f"platform: {platform.platform()}, Python {platform.python_version()}",
        f"CPU: {cpu} ({os.cpu_count()} logical CPUs; every worker pinned to CPU {args.core})"]
        + [("peers: " if python != sys.executable else "") + _versions(python) for python in pythons] + [
        "threads: NUMBA_NUM_THREADS=OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1, "
        f"XLA_FLAGS={os.environ['XLA_FLAGS']}",
        f"4 chains, tune {args.tune}, draws {args.draws}, seed {args.seed}, "
        "one fresh process per (model, tool), empty numba cache"
        + (", empty PyTensor compile directory for the peers" if args.cold_peers else ""),
        f"load average at the start: {os.getloadavg()}"])


def _versions(python):
    """The versions of the packages that matter here, as ``python`` imports them."""
    code = ("import importlib.metadata as m\n"
            f"for name in {VERSIONED!r}:\n"
            "    try:\n"
            "        print(name, m.version(name), end=', ')\n"
            "    except m.PackageNotFoundError:\n"
            "        print(name, 'absent', end=', ')\n")
    return subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.rstrip(", ")


# The first ``ld.nuts`` of a process, phase by phase (``--first-call``): a
# two-parameter model on four observations, so that compiling is all there is.
FIRST_CALL_CODE = """
import time
t0 = time.perf_counter()
import numpy as np
import logdens as ld
t1 = time.perf_counter()
m = ld.Model()
mu = m.param("mu", ld.Normal(0, 5))
sigma = m.param("sigma", ld.HalfNormal(2))
m.observe("y", ld.Normal(mu, sigma), np.array([1.0, 2.0, 0.5, 1.5]))
density = m.compile()
t2 = time.perf_counter()
from logdens.samplers import kernel
kernel.chunk_runner(kernel.NUTS, False)
t3 = time.perf_counter()
ld.nuts(density, draws=100, tune=100, chains=2, progress=False)
t4 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0)
"""
FIRST_CALL_PHASES = ("import logdens", "model + compile", "samplers' NUTS loop",
                     "rest of the first ld.nuts", "total")


def first_call(rounds):
    """Time the first ``ld.nuts`` of fresh processes with empty numba and logdens
    caches (a fresh environment), ``rounds`` times; print each phase's min and max."""
    times = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
                       LOGDENS_CACHE_DIR=os.path.join(tmp, "logdens"), PYTHONWARNINGS="ignore")
            out = subprocess.run([sys.executable, "-c", FIRST_CALL_CODE], env=env, check=True,
                                 capture_output=True, text=True)
            times.append([float(x) for x in out.stdout.split()])
    times = np.array(times)
    for k, name in enumerate(FIRST_CALL_PHASES):
        print(f"{name:>28}: {times[:, k].min():5.2f} - {times[:, k].max():5.2f} s")


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS),
                   help=f"comma-separated subset of {', '.join(MODELS)}")
    p.add_argument("--tools", default=",".join(TOOLS),
                   help=f"comma-separated subset of {', '.join(TOOLS)}")
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--core", type=int, default=sorted(os.sched_getaffinity(0))[0]
                   if hasattr(os, "sched_getaffinity") else 0)
    p.add_argument("--timeout", type=float, default=1800.0,
                   help="seconds allowed per (model, tool) process")
    p.add_argument("--log-likelihood", action="store_true",
                   help="logdens also computes the pointwise log-likelihood group (the peers "
                        "do not by default)")
    p.add_argument("--no-pymc-checks", action="store_true",
                   help="PyMC skips its convergence checks (logdens still computes its warnings)")
    p.add_argument("--peer-python", help="the Python interpreter (of another environment) that runs "
                                        "the peers; logdens runs in this one")
    p.add_argument("--cold-peers", action="store_true",
                   help="the peers start from an empty PyTensor compile directory too, so every "
                        "tool runs as on its first run after installing (JAX keeps no cache)")
    p.add_argument("--json", help="also write all results to this file")
    p.add_argument("--report", help="print the tables of a --json file; run nothing")
    p.add_argument("--first-call", type=int, metavar="ROUNDS",
                   help="time the first ld.nuts in ROUNDS fresh environments (empty caches), "
                        "phase by phase; run nothing else")
    p.add_argument("--worker", nargs=2, metavar=("MODEL", "TOOL"), help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    if args.worker:
        LOG_LIKELIHOOD[0] = args.log_likelihood
        PYMC_CHECKS[0] = not args.no_pymc_checks
        worker(*args.worker, args.draws, args.tune, args.seed, args.core, args.out)
        return
    if args.first_call:
        first_call(args.first_call)
        return
    if args.report:
        with open(args.report) as f:
            for model, results in json.load(f).items():
                print(f"\n### {MODELS[model]['title']}\n\n{table(model, results)}")
        return
    models, tools = args.models.split(","), args.tools.split(",")
    for name in models + tools:
        if name not in MODELS and name not in TOOLS:
            raise SystemExit(f"unknown model or tool {name!r}")
    runnable = []
    for tool in tools:
        reason = available(tool, interpreter(tool, args))
        if reason:
            print(f"skipping {tool}: {reason}")
        else:
            runnable.append(tool)
    print(machine(args), flush=True)
    everything, problems = {}, []
    for model in models:
        results = {}
        for tool in runnable:
            results[tool] = spawn(model, tool, args)
            runs = [results[tool].get(k) for k in ("cold", "warm")]
            seconds = [r["process_s"] for r in (runs if all(runs) else [results[tool]]) if "process_s" in r]
            print(f"  {model} / {tool}: " + (results[tool].get("error") or
                  " + ".join(f"{s:.1f}" for s in seconds) + " s in its process(es)"), flush=True)
        results = logdens_rows(results)
        everything[model] = results
        problems += check_means(model, results)
        print(f"\n### {MODELS[model]['title']}\n\n{table(model, results)}", flush=True)
    print(f"load average at the end: {os.getloadavg()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)
    if problems:
        raise AssertionError("posterior means disagree:\n" + "\n".join(problems))
    print(f"posterior means agree within {MCSE_TOLERANCE:g} MCSE across tools")


if __name__ == "__main__":
    main()
