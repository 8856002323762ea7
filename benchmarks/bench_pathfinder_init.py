"""Does ``ld.nuts(init="pathfinder")`` shorten warmup?  Gradients spent against quality.

Run: python benchmarks/bench_pathfinder_init.py [--models eight_schools,poisson_nc]
     [--seeds 1,2,3] [--tunes 100,200,500,1000] [--draws 500] [--adaptation nutpie]
     [--costs]

Models: those of ``bench_samplers`` and ``bench_adaptation`` (``gaussian``:
scales 0.1 .. 10, correlations 0.5**|i-j|; ``eight_schools_centered``: a
funnel).  For each model, seed and ``tune``, ``ld.nuts`` (4 chains, the
given warmup, diagonal metric) runs twice: from uniform(-2, 2) starts and
the unit metric (``init=None``), and from ``init="pathfinder"``: distinct
draws of a cheap Pathfinder run, each chain's initial inverse metric the
covariance diagonal of that run
(:func:`samplers.pathfinder.pathfinder_init`).  Per run this
prints the gradients spent before the kept draws (the warmup's leapfrog
steps, plus Pathfinder's own log-density evaluations: L-BFGS, its ELBO
draws and the returned draws, each a value and gradient), and the quality
of the kept draws: min bulk ESS per gradient, max R-hat, the final step
size, and the drift at the start of the kept draws (the largest, over
chains, difference between the mean log density of the first 50 kept
draws and that of the last half, in sds of the log density: a chain still
settling shows a large negative number).

Pathfinder's gradient count is ``posterior.attrs["init_evals"]``.
``--costs`` prints instead what Pathfinder configurations (paths, draws per
path, draws per ELBO estimate) cost per model and, on ``gaussian``, how far
their variances are from the true ones.  Everything runs in this process,
pinned to one core, with one thread for numba and BLAS.  Nothing is
asserted about time.
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
import bench_adaptation as ba  # noqa: E402
import bench_distributions as bd  # noqa: E402
import bench_samplers as bs  # noqa: E402

#: Kept draws at the start whose mean log density is compared with the rest.
DRIFT_DRAWS = 50
#: Every model this bench knows.
MODELS = {**bs.MODELS, **ba.EXTRA_MODELS}
#: Pathfinder configurations of ``--costs``: (paths, draws per path, ELBO draws);
#: the first is :func:`samplers.pathfinder.pathfinder`'s default.
COST_CONFIGS = ((4, 200, 25), (4, 100, 5), (1, 100, 25), (1, 100, 5), (1, 50, 2))


def machine_lines():
    """CPU with its vector ISA (``bench_distributions.cpu_model``) and versions."""
    versions = ", ".join(f"{name} {importlib.metadata.version(name)}"
                         for name in ("numpy", "numba", "llvmlite", "arviz_stats"))
    return (f"CPU: {bd.cpu_model()} ({os.cpu_count()} logical CPUs, {bd.pin_one_core()})\n"
            f"{versions}; NUMBA_NUM_THREADS=OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1\n"
            f"load average at the start: {os.getloadavg()}")


def costs(density, model, data, seeds):
    """Print the evaluations of each Pathfinder configuration of :data:`COST_CONFIGS`
    (and, on ``gaussian``, the largest and median ``|log(variance / true variance)|``)."""
    from logdens.samplers.pathfinder import pathfinder_init

    for paths, draws, elbo in COST_CONFIGS:
        for seed in seeds:
            res = pathfinder_init(density, 4, seed, paths, draws, elbo)
            line = (f"{model}: {paths} paths, {draws} draws, {elbo} ELBO draws, seed {seed}: "
                    f"{res.n_evals} evaluations")
            if "cov" in data:
                err = np.abs(np.log(res.inv_metric / np.diag(data["cov"])))
                line += f"; |log(var / true var)| max {err.max():.2f}, median {np.median(err):.2f}"
            print(line, flush=True)


def drift(lp):
    """Largest |mean lp of the first kept draws - mean lp of the last half| / sd(lp),
    signed, over chains (``lp``: chains x draws)."""
    half = lp.shape[1] // 2
    z = (lp[:, :DRIFT_DRAWS].mean(axis=1) - lp[:, half:].mean(axis=1)) / lp[:, half:].std(axis=1)
    return float(z[np.argmax(np.abs(z))])


def run(ld, density, spec, seed, tune, draws, init, adaptation):
    """One ``ld.nuts`` run; a dict of the statistics."""
    import arviz_stats

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short warmups warn about R-hat and ESS; reported
        idata = ld.nuts(density, draws=draws, tune=tune, chains=4, seed=seed, init=init,
                        progress=False, cores=1, save_warmup=True, log_likelihood=False,
                        adaptation=adaptation)
    seconds = time.perf_counter() - start
    warm = int(idata.warmup_sample_stats["n_steps"].values.sum()) if tune else 0
    pf = int(idata.posterior.attrs.get("init_evals", 0))
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
    p.add_argument("--adaptation", default="nutpie", choices=("nutpie", "stan"))
    p.add_argument("--costs", action="store_true",
                   help="print Pathfinder's cost per configuration instead of sampling")
    args = p.parse_args(argv)
    import logdens as ld

    print(machine_lines())
    print(f"4 chains, draws {args.draws}, {args.adaptation}'s warmup, diagonal metric",
          flush=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    for model in args.models.split(","):
        spec = MODELS[model]
        data = spec["data"]()
        density = spec["logdens"](ld, data).compile()
        if args.costs:
            costs(density, model, data, seeds)
            continue
        ld.nuts(density, draws=10, tune=10, chains=1, progress=False)  # compile outside timings
        print(f"\n### {spec.get('title', model)}", flush=True)
        rows = []
        for tune in (int(t) for t in args.tunes.split(",")):
            for seed in seeds:
                for init in (None, "pathfinder"):
                    rows.append(run(ld, density, spec, seed, tune, args.draws, init,
                                    args.adaptation))
                    show(rows[-1])
        print(summary(rows, f"{model}, {args.adaptation}"), flush=True)


if __name__ == "__main__":
    main()
