"""ChEES-HMC (64 chains in lockstep) against NUTS (4 chains) on the CPU.

Run: python benchmarks/bench_chees.py [--models eight_schools,gaussian,poisson]
     [--chains 64] [--draws 1000] [--tune 1000] [--seed 0]

Per model and sampler, in one process (compiled kernels warmed up first by
a short run, so times exclude compilation): wall time of the sampling call
(warmup + draws), gradients (leapfrog steps of warmup and draws, summed over
chains), the minimum bulk ESS over the model's free parameters
(``arviz_stats.ess``), ESS per second and per 1,000 gradients, and the
posterior means of key parameters with the check that they agree within 5
Monte Carlo standard errors (combined).  ``ld.nuts`` uses its threads (2 on
this machine); ``ld.chees`` runs its chains in one thread.  Nothing is
asserted about time.
"""

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import logdens as ld  # noqa: E402
from bench_samplers import eight_schools_data, eight_schools_logdens  # noqa: E402
from bench_samplers import poisson_data, poisson_logdens  # noqa: E402
from machine import describe  # noqa: E402
from logdens.samplers.diagnostics import bulk_ess  # noqa: E402

MCSE_TOLERANCE = 5.0


def gaussian_target(d=20, rho=0.9):
    """A correlated Gaussian (AR(1) correlation ``rho^|i-j|``, scales 0.1 .. 10),
    the hand-written numba target of the sampler tests."""
    from test_samplers_targets import NumbaTarget, gaussian
    scales = np.geomspace(0.1, 10.0, d)
    cov = rho ** np.abs(np.subtract.outer(np.arange(d), np.arange(d))) * np.outer(scales, scales)
    return NumbaTarget(gaussian, d, np.concatenate([np.zeros(d), np.linalg.inv(cov).ravel()]))


MODELS = {
    "eight_schools": (lambda: eight_schools_logdens(ld, eight_schools_data()),
                      ("mu", "tau", "z"), ("mu", "tau")),
    "gaussian": (gaussian_target, ("theta",), ("theta[0]", "theta[19]")),
    "poisson": (lambda: poisson_logdens(ld, poisson_data(), True),
                ("mu_a", "sigma_a", "b", "a"), ("mu_a", "sigma_a", "b")),
}


def _key(post, key):
    name, _, idx = key.partition("[")
    x = post[name].values
    x = x.reshape(x.shape[0], x.shape[1], -1)
    return x[:, :, int(idx[:-1]) if idx else 0]


def run(sampler, density, free, keys, kw):
    import arviz_stats
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sampler(density, progress=False, save_warmup=True, log_likelihood=False, **kw)
    wall = time.perf_counter() - t0
    grads = int(idata.sample_stats["n_steps"].sum() + idata.warmup_sample_stats["n_steps"].sum())
    post = idata.posterior.to_dataset()[list(free)]
    ess = arviz_stats.ess(post)
    min_ess = float(min(float(ess[v].min()) for v in free))
    means = {}
    for key in keys:
        x = _key(idata.posterior, key)
        means[key] = (float(x.mean()), float(x.std() / math.sqrt(bulk_ess(x))))
    return dict(wall=wall, grads=grads, ess=min_ess, means=means,
                step=float(idata.sample_stats["step_size"].values[0, -1]),
                steps=float(idata.sample_stats["n_steps"].mean()),
                accept=float(idata.sample_stats["acceptance_rate"].mean()),
                length=idata.posterior.attrs.get("trajectory_length"))


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--chains", type=int, default=64)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    print(describe())
    for name in args.models.split(","):
        build, free, keys = MODELS[name]
        density = build()
        density = density.compile() if hasattr(density, "compile") else density
        for sampler in (ld.nuts, ld.chees):  # warm the compiled loops and the model
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sampler(density, draws=5, tune=5, chains=2, progress=False, log_likelihood=False,
                        **({"step_size": 0.1, "trajectory_length": 1.0} if sampler is ld.chees
                           else {}))
        nuts = run(ld.nuts, density, free, keys,
                   dict(chains=4, draws=args.draws, tune=args.tune, seed=args.seed))
        chees = run(ld.chees, density, free, keys,
                    dict(chains=args.chains, draws=args.draws, tune=args.tune, seed=args.seed))
        print(f"\n### {name} (dim {density.dim})\n")
        print("| sampler | chains | wall s | gradients | min bulk ESS | ESS/s | ESS per 1k grads "
              "| mean steps | step size | mean accept |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for label, r, c in (("ld.nuts", nuts, 4), ("ld.chees", chees, args.chains)):
            print(f"| {label} | {c} | {r['wall']:.2f} | {r['grads']:,} | {r['ess']:.0f} | "
                  f"{r['ess'] / r['wall']:.0f} | {1000 * r['ess'] / r['grads']:.2f} | "
                  f"{r['steps']:.1f} | {r['step']:.3g} | {r['accept']:.2f} |")
        print(f"\nChEES trajectory length {chees['length']:.3g}")
        for key in keys:
            (m1, s1), (m2, s2) = nuts["means"][key], chees["means"][key]
            z = abs(m1 - m2) / math.hypot(s1, s2)
            print(f"- {key}: NUTS {m1:.4g} +- {s1:.2g}, ChEES {m2:.4g} +- {s2:.2g}: "
                  f"|z| = {z:.2f} {'ok' if z < MCSE_TOLERANCE else 'DISAGREE'}")


if __name__ == "__main__":
    main()
