"""Does ``ld.nuts(init="pathfinder")`` shorten warmup?  Gradients spent against quality.

Run: python benchmarks/bench_pathfinder_init.py [--models eight_schools,poisson_nc]
     [--seeds 1,2,3] [--tunes 100,200,500,1000] [--draws 500]

For each model, seed and ``tune``, ``ld.nuts`` (4 chains, default warmup)
runs twice: from uniform(-2, 2) starts (``init=None``) and from distinct
draws of a four-path Pathfinder run (``init="pathfinder"``).  Per run this
prints the gradients spent before the kept draws (the warmup's leapfrog
steps, plus Pathfinder's own log-density evaluations: L-BFGS, its ELBO
draws and the returned draws, each a value and gradient), and the quality
of the kept draws: min bulk ESS per gradient, max R-hat, the final step
size, and the drift at the start of the kept draws (the largest, over
chains, difference between the mean log density of the first 50 kept
draws and that of the last half, in sds of the log density: a chain still
settling shows a large negative number).

Pathfinder's gradient count is that of ``pathfinder.initial_points`` with
the arguments ``nuts`` gives it (a deterministic function of the seed),
recomputed here because ``nuts`` does not report it.  Everything runs in
this process, pinned to one core, with one thread for numba and BLAS.
Nothing is asserted about time.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import importlib.metadata  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_distributions as bd  # noqa: E402
import bench_samplers as bs  # noqa: E402

#: Kept draws at the start whose mean log density is compared with the rest.
DRIFT_DRAWS = 50
#: Pathfinder's arguments in ``nuts(init="pathfinder")``
#: (:func:`samplers.pathfinder.initial_points`).
PATHFINDER_PATHS, PATHFINDER_DRAWS = 4, 200


def machine_lines():
    """CPU with its vector ISA (``bench_distributions.cpu_model``) and versions."""
    versions = ", ".join(f"{name} {importlib.metadata.version(name)}"
                         for name in ("numpy", "numba", "llvmlite", "arviz_stats"))
    return (f"CPU: {bd.cpu_model()} ({os.cpu_count()} logical CPUs, {bd.pin_one_core()})\n"
            f"{versions}; NUMBA_NUM_THREADS=OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1\n"
            f"load average at the start: {os.getloadavg()}")


def pathfinder_gradients(density, seed):
    """Log-density evaluations of the Pathfinder run behind ``init="pathfinder"``."""
    from logdens.samplers.pathfinder import _run

    res = _run(density, seed, PATHFINDER_PATHS, PATHFINDER_DRAWS, None, False, {})
    return int(sum(p.n_evals for p in res.paths))


def drift(lp):
    """Largest |mean lp of the first kept draws - mean lp of the last half| / sd(lp),
    signed, over chains (``lp``: chains x draws)."""
    half = lp.shape[1] // 2
    z = (lp[:, :DRIFT_DRAWS].mean(axis=1) - lp[:, half:].mean(axis=1)) / lp[:, half:].std(axis=1)
    return float(z[np.argmax(np.abs(z))])


def run(ld, density, spec, seed, tune, draws, init):
    """One ``ld.nuts`` run; a dict of the statistics."""
    import arviz_stats

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short warmups warn about R-hat and ESS; reported
        idata = ld.nuts(density, draws=draws, tune=tune, chains=4, seed=seed, init=init,
                        progress=False, cores=1, save_warmup=True, log_likelihood=False)
    seconds = time.perf_counter() - start
    warm = int(idata.warmup_sample_stats["n_steps"].values.sum()) if tune else 0
    pf = pathfinder_gradients(density, seed) if init == "pathfinder" else 0
    kept_grads = float(idata.sample_stats["n_steps"].values.sum())
    post = idata.posterior.to_dataset()[list(spec["free"])]
    ess = arviz_stats.ess(post, method="bulk")
    rhat = arviz_stats.rhat(post)
    min_ess = min(float(ess[n].min()) for n in spec["free"])
    return {"init": init or "uniform", "seed": seed, "tune": tune, "warmup": warm,
            "pathfinder": pf, "before": warm + pf, "ess_per_grad": min_ess / kept_grads,
            "min_ess": min_ess, "rhat": max(float(rhat[n].max()) for n in spec["free"]),
            "eps": float(idata.sample_stats["step_size"].values[:, -1].mean()),
            "drift": drift(idata.sample_stats["lp"].values), "seconds": seconds}


def show(row):
    print(f"{row['init']:10s} seed {row['seed']} tune {row['tune']:5d}: grads before draws "
          f"{row['before']:7d} (warmup {row['warmup']:7d} + pathfinder {row['pathfinder']:5d}) "
          f"| min ESS {row['min_ess']:6.0f}, ESS/1000 grads {1000 * row['ess_per_grad']:6.2f}, "
          f"R-hat {row['rhat']:.3f}, eps {row['eps']:.3f}, drift {row['drift']:+.2f} "
          f"({row['seconds']:.1f} s)", flush=True)


def summary(rows, model):
    """Markdown table of means over seeds per (tune, init)."""
    lines = [f"\n{model}: means over seeds\n",
             "| tune | init | grads before draws | of which Pathfinder | ESS / 1000 grads "
             "| max R-hat (worst seed) | step size | drift (worst seed) |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for tune in sorted({r["tune"] for r in rows}):
        for init in ("uniform", "pathfinder"):
            mine = [r for r in rows if r["tune"] == tune and r["init"] == init]
            if not mine:
                continue
            worst = max(mine, key=lambda r: abs(r["drift"]))["drift"]
            lines.append(
                f"| {tune} | {init} | {np.mean([r['before'] for r in mine]):.0f} "
                f"| {np.mean([r['pathfinder'] for r in mine]):.0f} "
                f"| {1000 * np.mean([r['ess_per_grad'] for r in mine]):.2f} "
                f"| {max(r['rhat'] for r in mine):.3f} "
                f"| {np.mean([r['eps'] for r in mine]):.3f} | {worst:+.2f} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="eight_schools,poisson_nc")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--tunes", default="100,200,500,1000")
    p.add_argument("--draws", type=int, default=500)
    args = p.parse_args(argv)
    import logdens as ld

    print(machine_lines())
    print(f"4 chains, draws {args.draws}, default warmup (nutpie's, diagonal metric)",
          flush=True)
    for model in args.models.split(","):
        spec = bs.MODELS[model]
        density = spec["logdens"](ld, spec["data"]()).compile()
        ld.nuts(density, draws=10, tune=10, chains=1, progress=False)  # compile outside timings
        print(f"\n### {spec['title']}", flush=True)
        rows = []
        for tune in (int(t) for t in args.tunes.split(",")):
            for seed in (int(s) for s in args.seeds.split(",")):
                for init in (None, "pathfinder"):
                    rows.append(run(ld, density, spec, seed, tune, args.draws, init))
                    show(rows[-1])
        print(summary(rows, model), flush=True)


if __name__ == "__main__":
    main()
