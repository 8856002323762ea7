"""logdens' NUTS against nutpie on the same compiled log density, over seeds.

Run: python benchmarks/bench_nutpie_models.py [--models eight_schools,poisson_nc]
     [--seeds 1,2,3,4,5] [--tools logdens,nutpie] [--tune 1000] [--draws 1000]
     [--json out.json]
     python benchmarks/bench_nutpie_models.py --report out.json   (tables again)

nutpie samples logdens' own compiled density: a numba ``cfunc`` with
nutpie's C signature calls the model's numba entry (the function
``samplers.nuts`` calls), and is handed to nutpie as its PyMC backend hands
over a PyTensor-generated one (``CompiledPyMCModel`` with a compiled logp
function and user data).  There is no Python call per gradient, so both
tools pay the same for a gradient and differ only in their samplers:
nutpie's defaults (diagonal mass matrix from draws and gradients, target
accept 0.8, max depth 10, step-size jitter 0.1) against ``ld.nuts``'s
(``adaptation="nutpie"``).  PyMC is not needed.  Both start every chain at
uniform(-2, 2) draws on the unconstrained space.

Each model runs in a fresh process pinned to one core (``--core``), one
thread for numba and BLAS.  Per model the process times logdens' compile
once (the model into a fresh logdens cache directory plus a first 5 + 5
iteration ``samplers.nuts`` and the samplers' NUTS loop from numba's disk
cache, as the "logdens" row of ``bench_samplers.py``) and the nutpie
wrapper's compile (the ``cfunc`` only: the model is logdens', compiled
already; nutpie's own compile of a PyMC model is not measured here), then
for every seed runs both tools with 4 chains, ``--tune`` + ``--draws``.
Per seed and tool: sampling seconds (the whole call, output built), min
bulk ESS over every free parameter (``arviz_stats.ess``; rank-normalized,
so the constrained draws logdens returns and the unconstrained ones nutpie
returns give the same numbers), gradients per kept draw and per effective
draw (leapfrog steps over the kept draws / min ESS), the mean final step
size over chains and the divergences.  The tables give mean and standard
deviation over seeds.  Nothing is asserted about time.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_samplers as bs  # noqa: E402
import machine  # noqa: E402

MODELS = ("eight_schools", "poisson_nc", "poisson", "logistic")
TOOLS = ("logdens", "nutpie")


# ----- nutpie on logdens' compiled density -----

def nutpie_model(density):
    """A nutpie ``CompiledPyMCModel`` whose logp is logdens' numba entry.

    The user data are four int64: the addresses and sizes of the entry's
    float and integer data arrays (kept alive by the returned model's
    ``shared_data``).  The expansion copies the unconstrained point.
    """
    import numba
    from nutpie.compile_pymc import CompiledPyMCModel, address_as_void_pointer

    from logdens.samplers.protocol import numba_entry

    entry = numba_entry(density)
    f, n = entry.function, int(density.dim)
    user_data = np.array([entry.fdata.ctypes.data, entry.fdata.size,
                          entry.idata.ctypes.data, entry.idata.size], dtype=np.int64)
    logp_sig = numba.types.int64(numba.types.uint64, numba.types.CPointer(numba.types.double),
                                 numba.types.CPointer(numba.types.double),
                                 numba.types.CPointer(numba.types.double), numba.types.voidptr)
    expand_sig = numba.types.int64(numba.types.uint64, numba.types.uint64,
                                   numba.types.CPointer(numba.types.double),
                                   numba.types.CPointer(numba.types.double),
                                   numba.types.voidptr)

    @numba.cfunc(logp_sig)
    def logp(dim, x_, out_, logp_, user_data_):
        if dim != n:
            return -1
        meta = numba.carray(user_data_, (4,), np.int64)
        fdata = numba.carray(address_as_void_pointer(meta[0]), (meta[1],), np.float64)
        idata = numba.carray(address_as_void_pointer(meta[2]), (meta[3],), np.int64)
        x, out = numba.carray(x_, (n,)), numba.carray(out_, (n,))
        value = f(x, out, fdata, idata)
        logp_[0] = value
        # nutpie's PyMC wrapper's codes: 3 for a gradient, 4 for a value
        # that is not finite (a rejected point).
        for i in range(n):
            if not np.isfinite(out[i]):
                return 3
        return 0 if np.isfinite(value) else 4

    @numba.cfunc(expand_sig)
    def expand(dim, expanded, x_, out_, user_data_):
        if dim != n or expanded != n:
            return -1
        for i in range(n):
            out_[i] = x_[i]
        return 0

    def initial_point(seed):
        return np.random.default_rng(seed).uniform(-2.0, 2.0, size=n)

    return CompiledPyMCModel(
        dims={}, _coords={}, _shapes={"theta": (n,)}, _n_dim=n,
        compiled_logp_func=logp, compiled_expand_func=expand,
        initial_point_func=initial_point, shared_data={"entry": entry, "meta": user_data},
        user_data=user_data, n_expanded=n, shape_info=(["theta"], [slice(0, n)], [(n,)]),
        logp_func=None, expand_func=None)


def run_nutpie(compiled, seed, tune, draws):
    """nutpie at its defaults, 4 chains on one core; (seconds, arrays, stats)."""
    import nutpie

    start = time.perf_counter()
    idata = nutpie.sample(compiled, draws=draws, tune=tune, chains=4, cores=1, seed=seed,
                          progress_bar=False)
    seconds = time.perf_counter() - start
    stats = idata["sample_stats"]
    return (seconds, {"theta": np.asarray(idata["posterior"]["theta"].values)},
            np.asarray(stats["n_steps"].values), np.asarray(stats["diverging"].values),
            np.asarray(stats["step_size"].values)[:, -1])


def run_logdens(density, free, seed, tune, draws):
    """``samplers.nuts`` at its defaults, 4 chains on one core."""
    from logdens import samplers

    start = time.perf_counter()
    idata = samplers.nuts(density, draws=draws, tune=tune, chains=4, seed=seed,
                          progress=False, cores=1, log_likelihood=False)
    seconds = time.perf_counter() - start
    stats = idata["sample_stats"]
    return (seconds, bs._arrays(idata["posterior"], free), np.asarray(stats["n_steps"].values),
            np.asarray(stats["diverging"].values), np.asarray(stats["step_size"].values)[:, -1])


def summarize(result):
    """One seed's row: seconds, min bulk ESS, gradients, step size, divergences."""
    import arviz_base
    import arviz_stats

    seconds, arrays, n_steps, diverging, eps = result
    ess = arviz_stats.ess(arviz_base.from_dict({"posterior": arrays}), method="bulk")
    min_ess = min(float(np.min(ess[name].values)) for name in arrays)
    steps = float(np.sum(n_steps))
    return {"sampling_s": seconds, "min_ess": min_ess, "grads_per_draw": steps / n_steps.size,
            "grads_per_ess": steps / min_ess, "step_size": float(np.mean(eps)),
            "divergences": int(np.sum(diverging))}


# ----- one model in a worker process -----

def compile_logdens(spec, data):
    """The density and the seconds from data to a ready sampler (see the docstring)."""
    import logdens as ld

    start = time.perf_counter()
    exec(bs.LIBRARY_CODE)
    from logdens import samplers

    cache = tempfile.mkdtemp()
    density = spec["logdens"](ld, data).compile(cache_dir=cache)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samplers.nuts(density, draws=5, tune=5, chains=1, seed=0, progress=False, cores=1,
                      log_likelihood=False)
    return density, time.perf_counter() - start


def worker(model, tools, seeds, tune, draws, core, out):
    os.sched_setaffinity(0, {core})
    spec = bs.MODELS[model]
    density, logdens_compile = compile_logdens(spec, spec["data"]())
    result = {"compile_s": {"logdens": logdens_compile}, "runs": {t: [] for t in tools}}
    if "nutpie" in tools:
        start = time.perf_counter()
        compiled = nutpie_model(density)
        result["compile_s"]["nutpie"] = time.perf_counter() - start
    for seed in seeds:
        for tool in tools:
            raw = (run_logdens(density, spec["free"], seed, tune, draws) if tool == "logdens"
                   else run_nutpie(compiled, seed, tune, draws))
            row = dict(summarize(raw), seed=seed)
            result["runs"][tool].append(row)
            print(f"{model} {tool} seed {seed}: " + ", ".join(
                f"{k} {v:.3g}" for k, v in row.items() if k != "seed"), flush=True)
    with open(out, "w") as f:
        json.dump(result, f)


# ----- the driver -----

def _mean_sd(values, fmt):
    """``mean ± sd`` (sd over seeds; ``fmt`` None: three significant digits, no exponent)."""
    values = np.asarray(values, dtype=float)
    sd = float(np.std(values, ddof=1)) if values.size > 1 else 0.0
    if fmt is None:
        return f"{bs._rate(float(np.mean(values)))} ± {bs._rate(sd)}"
    return f"{np.mean(values):{fmt}} ± {sd:{fmt}}"


def table(results):
    """Markdown: one row per (model, tool), means ± sd over seeds."""
    head = ["model", "tool", "seeds", "grads/ESS", "grads/draw", "min bulk ESS",
            "step size", "div (sum)", "sampling s", "ESS/s sampling", "compile s",
            "ESS/s incl. compile", "grads/ESS vs nutpie"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    for model, r in results.items():
        ref = r["runs"].get("nutpie")
        for tool, rows in r["runs"].items():
            if not rows:
                continue
            col = {k: [row[k] for row in rows] for k in rows[0]}
            compile_s = r["compile_s"][tool]
            rate = [e / s for e, s in zip(col["min_ess"], col["sampling_s"])]
            rate_c = [e / (s + compile_s) for e, s in zip(col["min_ess"], col["sampling_s"])]
            ratio = (np.mean(col["grads_per_ess"]) / np.mean([x["grads_per_ess"] for x in ref])
                     if ref else float("nan"))
            lines.append("| " + " | ".join([
                model, tool, str(len(rows)), _mean_sd(col["grads_per_ess"], ".1f"),
                _mean_sd(col["grads_per_draw"], ".1f"), _mean_sd(col["min_ess"], ".0f"),
                _mean_sd(col["step_size"], ".3f"), str(sum(col["divergences"])),
                _mean_sd(col["sampling_s"], ".2f"), _mean_sd(rate, None), f"{compile_s:.2f}",
                _mean_sd(rate_c, None), f"{ratio:.2f}"]) + " |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--seeds", default="1,2,3,4,5")
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--core", type=int, default=sorted(os.sched_getaffinity(0))[0])
    p.add_argument("--json", help="also write all results to this file")
    p.add_argument("--report", help="print the table of a --json file; run nothing")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    tools = [t for t in args.tools.split(",") if t]
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.worker:
        worker(args.worker, tools, seeds, args.tune, args.draws, args.core, args.out)
        return
    if args.report:
        with open(args.report) as f:
            print(table(json.load(f)))
        return
    print(f"CPU: {machine.cpu_model()}, pinned to CPU {args.core}; "
          + machine.versions(("numpy", "numba", "llvmlite", "nutpie", "arviz_stats")), flush=True)
    print(f"4 chains, tune {args.tune}, draws {args.draws}, seeds {args.seeds}, one process "
          f"per model; load average at the start: {os.getloadavg()}", flush=True)
    results = {}
    for model in args.models.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", model,
                   "--tools", ",".join(tools), "--seeds", args.seeds, "--tune", str(args.tune),
                   "--draws", str(args.draws), "--core", str(args.core), "--out", out]
            subprocess.run(cmd, check=True, env=dict(os.environ, PYTHONWARNINGS="ignore"))
            with open(out) as f:
                results[model] = json.load(f)
    print(f"load average at the end: {os.getloadavg()}\n\n{table(results)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
