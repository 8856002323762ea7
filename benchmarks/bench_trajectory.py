"""logdens' NUTS trajectories against nutpie's (nuts-rs) at the same fixed settings.

Run: python benchmarks/bench_trajectory.py [--models poisson_nc,eight_schools]
     [--seeds 1,2,3,4,5] [--tune 1000] [--draws 2000] [--core 1] [--json out.json]

Only the trajectory is compared: nothing adapts in the measured draws.  Per
model and seed, nutpie (on logdens' own compiled density, the ``cfunc`` of
``bench_nutpie_models.py``) runs 4 chains with its warmup and
``step_size_jitter=0``, so that its sampling phase keeps one step size and
one diagonal mass matrix per chain (both read back from its sample stats,
``step_size_bar`` and ``mass_matrix_inv``; checked constant).  With
``--jitter 0.1`` (nutpie's default) nutpie's draws use step sizes drawn
uniformly within ±10% of that centre, and logdens runs at the centre.  Then logdens'
transition (the compiled runner with no warmup) runs the same number of
draws per chain at that chain's step size and inverse metric, starting from
nutpie's last warmup draw of that chain.  Both therefore sample the same
Hamiltonian dynamics from the same stationary start and differ only in the
tree building (and the random numbers).

Per tool: gradients per draw (nutpie's ``n_steps`` stat against logdens'
``n_steps``: both count every leapfrog step, the diverging one and those of
a subtree abandoned because it turned included), the mean acceptance
statistic, the share of trajectories that ended because an inner subtree
turned (``n_steps`` is not ``2**depth - 1``), min bulk ESS over all
unconstrained coordinates (4 chains) and ESS per 1,000 gradients.  The
paired difference of gradients per draw is taken chain by chain (same step
size, metric and start), with its standard error over chains and seeds.
With ``--eps-scales 0.9,0.95,1,1.05,1.1`` logdens also runs at those
multiples of each chain's step size: every fixed-step transition leaves the
posterior invariant, so the mean of gradients per draw over an even grid
of scales (trapezoid weights) predicts what a sampler jittering its step size uniformly over
that range spends per draw (nutpie's default jitter is ±10%).
Runs in one process pinned to ``--core``, one thread.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_nutpie_models as bn  # noqa: E402
import bench_samplers as bs  # noqa: E402
import machine  # noqa: E402

MAX_DEPTH = 10


def nutpie_fixed(compiled, seed, tune, draws, jitter=0.0):
    """nutpie with the given step-size jitter: per chain its (eps, inv_diag, start)
    and its draws' stats; ``eps`` is the centre of the jitter (``step_size_bar``)."""
    import nutpie

    idata = nutpie.sample(compiled, draws=draws, tune=tune, chains=4, cores=1, seed=seed,
                          progress_bar=False, store_mass_matrix=True, step_size_jitter=jitter,
                          maxdepth=MAX_DEPTH)
    st = idata["sample_stats"]
    eps = np.asarray(st["step_size_bar"].values)
    inv = np.asarray(st["mass_matrix_inv"].values)
    assert np.ptp(eps, axis=1).max() == 0.0 and np.ptp(inv, axis=1).max() == 0.0
    if jitter == 0.0:
        assert np.array_equal(eps, np.asarray(st["step_size"].values))
    start = np.asarray(idata["warmup_posterior"]["theta"].values)[:, -1]
    run = {"draws": np.asarray(idata["posterior"]["theta"].values),
           "n_steps": np.asarray(st["n_steps"].values, dtype=np.int64),
           "depth": np.asarray(st["depth"].values, dtype=np.int64),
           "accept": np.asarray(st["mean_tree_accept"].values),
           "diverging": np.asarray(st["diverging"].values, dtype=bool)}
    return [(float(eps[c, 0]), inv[c, 0].copy(), start[c].copy()) for c in range(4)], run


def logdens_fixed(density, settings, seed, draws):
    """logdens' transition at each chain's fixed (eps, inv_diag), from its start."""
    from logdens.samplers import kernel, sample
    from logdens.samplers.protocol import numba_entry
    from logdens.samplers.trajectory import make_work

    entry = numba_entry(density)
    dim = int(density.dim)
    iconf, fconf = sample._config(kernel.NUTS, MAX_DEPTH, 0, 0, "diag", 0.8, "nutpie")
    run_chunk = kernel.chunk_runner(kernel.NUTS, False)
    no = np.zeros(1, dtype=np.bool_)
    names = kernel.STAT_NAMES
    out = {k: [] for k in ("draws", "n_steps", "depth", "accept", "diverging")}
    for c, (eps, inv_diag, start) in enumerate(settings):
        state = sample._chain_state(entry, dim, False, 1000 + seed, c, start, inv_diag)
        state.scalars[kernel.STEP] = eps
        d = np.zeros((draws + 1, dim))
        s = np.zeros((draws + 1, len(names)))
        # start = 1: iteration 0 would run the step-size heuristic.
        kernel.advance(run_chunk, entry, state, make_work(dim, MAX_DEPTH), (no, no), iconf,
                       fconf, 1, draws + 1, d, s)
        out["draws"].append(d[1:])
        out["n_steps"].append(s[1:, names.index("n_steps")].astype(np.int64))
        out["depth"].append(s[1:, names.index("tree_depth")].astype(np.int64))
        out["accept"].append(s[1:, names.index("acceptance_rate")])
        out["diverging"].append(s[1:, names.index("diverging")] > 0)
    return {k: np.stack(v) for k, v in out.items()}


def summarize(run):
    """Per-seed numbers of one tool (see the module docstring)."""
    import arviz_base
    import arviz_stats

    ess = arviz_stats.ess(arviz_base.from_dict({"posterior": {"theta": run["draws"]}}),
                          method="bulk")
    min_ess = float(np.min(ess["theta"].values))
    n, depth = run["n_steps"], run["depth"]
    inner = (n != (1 << depth) - 1) & ~run["diverging"]
    steps = float(n.sum())
    return {"grads_per_draw": float(n.mean()), "chain_grads": n.mean(axis=1).tolist(),
            "accept": float(run["accept"].mean()), "inner_turn": float(inner.mean()),
            "divergences": int(run["diverging"].sum()), "min_ess": min_ess,
            "ess_per_1k_grads": 1000.0 * min_ess / steps,
            "mean_depth": float(depth.mean())}


def run_model(model, seeds, tune, draws, jitter, scales=()):
    import logdens as ld

    exec(bs.LIBRARY_CODE)
    spec = bs.MODELS[model]
    density = spec["logdens"](ld, spec["data"]()).compile(cache_dir=tempfile.mkdtemp())
    compiled = bn.nutpie_model(density)
    rows = []
    for seed in seeds:
        t0 = time.perf_counter()
        settings, nut = nutpie_fixed(compiled, seed, tune, draws, jitter)
        t1 = time.perf_counter()
        ours = logdens_fixed(density, settings, seed, draws)
        t2 = time.perf_counter()
        row = {"seed": seed, "eps": [s[0] for s in settings],
               "nutpie": summarize(nut), "logdens": summarize(ours),
               "seconds": {"nutpie (tune+draws)": t1 - t0, "logdens (draws)": t2 - t1}}
        for scale in scales:
            scaled = [(e * scale, m, q) for e, m, q in settings]
            r = logdens_fixed(density, scaled, seed, draws)
            row.setdefault("scaled", []).append(
                {"scale": scale, "grads_per_draw": float(r["n_steps"].mean()),
                 "accept": float(r["accept"].mean())})
        rows.append(row)
        print(f"{model} seed {seed}: eps {np.round(row['eps'], 3).tolist()}", flush=True)
        for r in row.get("scaled", []):
            print(f"  logdens at {r['scale']:.3f} x eps: grads/draw {r['grads_per_draw']:6.2f} "
                  f"accept {r['accept']:.3f}", flush=True)
        for tool in ("nutpie", "logdens"):
            r = row[tool]
            print(f"  {tool:8s} grads/draw {r['grads_per_draw']:6.2f} accept {r['accept']:.3f} "
                  f"inner-turn {r['inner_turn']:.3f} div {r['divergences']:3d} "
                  f"min ESS {r['min_ess']:7.0f} ESS/1k grads {r['ess_per_1k_grads']:7.2f}",
                  flush=True)
    return rows


def _ms(values, fmt):
    v = np.asarray(values, dtype=float)
    sd = float(np.std(v, ddof=1)) if v.size > 1 else 0.0
    return f"{v.mean():{fmt}} ± {sd:{fmt}}"


def table(results):
    """Markdown: per model and tool, mean ± sd over seeds, and the paired ratio."""
    head = ["model", "tool", "seeds", "grads/draw", "accept", "inner-turn share", "div",
            "min bulk ESS", "ESS per 1k grads", "grads/draw logdens/nutpie (paired, ± 2 se)"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    for model, rows in results.items():
        diff = np.array([a / b for r in rows for a, b in
                         zip(r["logdens"]["chain_grads"], r["nutpie"]["chain_grads"])])
        se = diff.std(ddof=1) / np.sqrt(diff.size)
        for tool in ("nutpie", "logdens"):
            col = {k: [r[tool][k] for r in rows] for k in rows[0][tool]}
            ratio = (f"{diff.mean():.3f} ± {2 * se:.3f} ({diff.size} chains)"
                     if tool == "logdens" else "1")
            lines.append("| " + " | ".join([
                model, tool, str(len(rows)), _ms(col["grads_per_draw"], ".2f"),
                _ms(col["accept"], ".3f"), _ms(col["inner_turn"], ".3f"),
                str(sum(col["divergences"])), _ms(col["min_ess"], ".0f"),
                _ms(col["ess_per_1k_grads"], ".2f"), ratio]) + " |")
    for model, rows in results.items():
        if "scaled" not in rows[0]:
            continue
        lines.append(f"\nlogdens on {model} at multiples of nutpie's step sizes "
                     "(mean ± sd over seeds):\n")
        lines.append("| scale | grads/draw | accept |\n|---:|---:|---:|")
        grid = [[r["grads_per_draw"] for r in row["scaled"]] for row in rows]
        for j, sc in enumerate(rows[0]["scaled"]):
            lines.append(f"| {sc['scale']:.3f} | "
                         + _ms([row["scaled"][j]["grads_per_draw"] for row in rows], ".2f")
                         + " | " + _ms([row["scaled"][j]["accept"] for row in rows], ".3f")
                         + " |")
        # Trapezoid weights: the mean over a uniform jitter of the scale.
        w = np.ones(len(grid[0]))
        w[0] = w[-1] = 0.5
        lines.append("| mean over uniform jitter | "
                     + _ms(np.asarray(grid) @ (w / w.sum()), ".2f") + " | |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="poisson_nc,eight_schools")
    p.add_argument("--seeds", default="1,2,3,4,5")
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--core", type=int, default=sorted(os.sched_getaffinity(0))[0])
    p.add_argument("--jitter", type=float, default=0.0,
                   help="nutpie's step_size_jitter (logdens runs at its centre, unjittered)")
    p.add_argument("--eps-scales", default="",
                   help="also run logdens at these multiples of each chain's step size")
    p.add_argument("--json", help="also write all results to this file")
    p.add_argument("--report", help="print the table of a --json file; run nothing")
    args = p.parse_args(argv)
    if args.report:
        with open(args.report) as f:
            print(table(json.load(f)))
        return
    os.sched_setaffinity(0, {args.core})
    warnings.simplefilter("ignore")
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"CPU: {machine.cpu_model()}, pinned to CPU {args.core}; "
          + machine.versions(("numpy", "numba", "nutpie", "arviz_stats")), flush=True)
    print(f"4 chains, nutpie tune {args.tune} (jitter {args.jitter}), then {args.draws} draws "
          f"per chain for each tool at nutpie's final settings; seeds {args.seeds}", flush=True)
    scales = [float(x) for x in args.eps_scales.split(",") if x]
    results = {m: run_model(m, seeds, args.tune, args.draws, args.jitter, scales)
               for m in args.models.split(",")}
    print("\n" + table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
