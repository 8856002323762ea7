"""Adaptation and trajectory statistics of logdens' NUTS next to NumPyro's and nutpie's.

Run: python benchmarks/bench_adaptation.py [--model poisson] [--seeds 1,2,3,4]
     [--tools logdens-stan,logdens-nutpie,numpyro,nutpie] [--fixed] [--metric diag]
     python benchmarks/bench_adaptation.py --compare all --seeds 1,2,3

``--compare``: gradients per effective draw (min bulk ESS over the free
parameters), ESS per wall second and per CPU second of sampling (compile
outside the clock) of logdens and nutpie, each with its diagonal and its
low-rank metric (``metric="low_rank"``, nutpie's ``adaptation="low_rank"``;
nutpie on PyMC's model), as a Markdown table of medians over the seeds.

Tools: ``logdens-stan`` (Stan's windowed warmup, as NumPyro's), ``logdens-nutpie``
(nutpie's warmup, :mod:`samplers.grad_adaptation`), ``logdens`` (the
default of ``ld.nuts`` for the metric), ``numpyro``, ``nutpie`` (optional:
through PyMC when it is installed, else on the logdens density itself with
``nutpie.compiled_pyfunc.from_pyfunc``, the same posterior and
parameterization).  Stan-style samplers on the same posterior should end
with similar step sizes and spend similar gradients per effective draw;
nutpie's warmup (its mass matrix uses gradients too) shows what that buys.
Per tool and seed (4 chains,
``--tune`` + ``--draws``) this prints the adapted step size of each chain,
the mean acceptance statistic of the kept draws, the histogram of
``bit_length(n_steps)`` (the tree depth, counted the same way for both
tools), gradients per draw, the min bulk ESS over all parameters, and
gradients per effective draw.

``--fixed`` adds a controlled run without adaptation: the step size and
diagonal inverse metric adapted by logdens (seed 1, chain 0) are given to
both samplers, which then differ only in their trajectory code (U-turn
criterion, multinomial sampling).  With ``--fixed-source nutpie`` they are
nutpie's instead (its gradient-based metric), to separate its adaptation
from its trajectories.

Everything runs in this process, pinned to one core (``--core``), with one
thread for numba, BLAS and XLA.  Nothing is asserted about time.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_samplers as bs  # noqa: E402

MAX_DEPTH_SHOWN = 6
#: logdens variants: tool name -> ``adaptation`` of ``ld.nuts``.
LOGDENS_TOOLS = {"logdens": None, "logdens-stan": "stan", "logdens-nutpie": "nutpie"}
#: Transitions discarded at the start of a ``--fixed`` run (no warmup there).
FIXED_BURN = 200


def eight_schools_centered_logdens(ld, data):
    """Eight schools, centered: ``theta ~ Normal(mu, tau)`` (a funnel)."""
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5))
    tau = m.param("tau", ld.HalfCauchy(5))
    theta = m.param("theta", ld.Normal(mu, tau), shape=8)
    m.observe("y", ld.Normal(theta, data["sigma"]), data["y"])
    return m


def gaussian_data(dim=10, rho=0.5):
    """A badly scaled, correlated Gaussian: scales 0.1 .. 10 (log-spaced),
    correlations ``rho**|i - j|``; the model observes ``0 ~ Normal(A x, 1)``
    with ``A = L^{-1}``, ``L L' = Sigma``."""
    scales = np.logspace(-1, 1, dim)
    corr = rho ** np.abs(np.subtract.outer(np.arange(dim), np.arange(dim)))
    cov = corr * np.outer(scales, scales)
    return {"A": np.linalg.inv(np.linalg.cholesky(cov)), "cov": cov}


def gaussian_logdens(ld, data):
    m = ld.Model()
    a = m.data("A", data["A"])
    x = m.param("x", shape=data["A"].shape[1])
    m.observe("zero", ld.Normal(a @ x, 1.0), np.zeros(data["A"].shape[0]))
    return m


#: Models with a logdens builder only (nutpie samples the logdens density).
EXTRA_MODELS = {
    "eight_schools_centered": dict(data=bs.eight_schools_data,
                                   logdens=eight_schools_centered_logdens,
                                   free=("mu", "tau", "theta")),
    "gaussian": dict(data=gaussian_data, logdens=gaussian_logdens, free=("x",)),
}


def _summary(tool, seed, eps, accept, n_steps, arrays, seconds):
    """One row of statistics (a dict) from a run's raw outputs."""
    import arviz_base
    import arviz_stats

    ess = arviz_stats.ess(arviz_base.from_dict({"posterior": arrays}), method="bulk")
    min_ess = min(float(np.min(ess[name].values)) for name in arrays)
    depth = np.vectorize(lambda n: int(n).bit_length())(n_steps.astype(np.int64))
    hist = [float(np.mean(depth == d)) for d in range(1, MAX_DEPTH_SHOWN + 1)]
    return {"tool": tool, "seed": seed, "eps": [float(e) for e in eps],
            "accept": float(np.mean(accept)), "depth_hist": hist,
            "grads_per_draw": float(np.mean(n_steps)), "min_ess": min_ess,
            "grads_per_ess": float(np.sum(n_steps)) / min_ess, "seconds": seconds}


def run_logdens(density, seed, tune, draws, metric, fixed=None, adaptation="stan",
                tool="logdens"):
    """Four chains through the low-level runner; returns (row, states).

    With ``fixed = (eps, inv_diag)`` there is no adaptation: every chain
    starts at its own random point with that step size and metric and the
    first ``FIXED_BURN`` transitions are discarded.
    """
    from logdens.samplers import kernel, sample
    from logdens.samplers.mass_matrix import warmup_schedule
    from logdens.samplers.protocol import numba_entry
    from logdens.samplers.runner import run_chains

    entry = numba_entry(density)
    dim = int(density.dim)
    states = [sample._chain_state(entry, dim, metric == "dense", seed, c, None)
              for c in range(4)]
    n_tune = tune
    if fixed is not None:
        eps, inv_diag = fixed
        # Iteration 0 runs the step-size heuristic: one warmup transition,
        # then the step size is overwritten.
        n_tune = 1
    iconf, fconf = sample._config(kernel.NUTS, 10, 0, n_tune, metric, 0.8,
                                  sample.resolve_adaptation(adaptation, metric))
    start = time.perf_counter()
    if fixed is None:
        res = run_chains(entry, states, warmup_schedule(tune), iconf, fconf, tune + draws,
                         tune, 1, False)
    else:
        for s in states:
            s.metric.inv_diag[:] = inv_diag
        burn = run_chains(entry, states, warmup_schedule(1), iconf, fconf, 1, 1, 1, False)
        del burn
        for s in states:
            s.scalars[kernel.STEP] = eps
        iconf[kernel.N_TUNE] = 0
        res = _continue(entry, states, iconf, fconf, FIXED_BURN + draws)
    seconds = time.perf_counter() - start
    drop = n_tune if fixed is None else FIXED_BURN
    kept, stats = res.draws[:, drop:], res.stats[:, drop:]
    names = kernel.STAT_NAMES
    eps_chain = stats[:, -1, names.index("step_size")]
    arrays = {"theta": kept}
    row = _summary(tool, seed, eps_chain, stats[..., names.index("acceptance_rate")],
                   stats[..., names.index("n_steps")], arrays, seconds)
    return row, states


def _continue(entry, states, iconf, fconf, draws):
    """Run ``draws`` more transitions of already started chains (no warmup)."""
    from logdens.samplers.kernel import DENSE, KIND, MAX_DEPTH, STAT_NAMES, advance, chunk_runner
    from logdens.samplers.runner import ChainsResult
    from logdens.samplers.trajectory import make_work

    dim = states[0].q.shape[0]
    out_d = np.zeros((len(states), draws + 1, dim))
    out_s = np.zeros((len(states), draws + 1, len(STAT_NAMES)))
    no = np.zeros(1, dtype=np.bool_)
    run_chunk = chunk_runner(iconf[KIND], iconf[DENSE])
    for c, s in enumerate(states):
        # start = 1 skips the step-size heuristic run at iteration 0.
        advance(run_chunk, entry, s, make_work(dim, int(iconf[MAX_DEPTH])), (no, no),
                iconf, fconf, 1, draws + 1, out_d[c], out_s[c])
    return ChainsResult(out_d[:, 1:], out_s[:, 1:], draws, False)


def run_numpyro(spec, data, seed, tune, draws, fixed=None, order=None):
    """NumPyro NUTS, 4 sequential chains; returns the row."""
    import numpyro

    numpyro.enable_x64()
    import jax
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    model = spec["numpyro"](numpyro, dist, jnp, data)
    if fixed is None:
        kern = NUTS(model, target_accept_prob=0.8, max_tree_depth=10)
    else:
        eps, inv_diag = fixed
        kern = NUTS(model, step_size=eps, adapt_step_size=False, adapt_mass_matrix=False,
                    inverse_mass_matrix=jnp.asarray(inv_diag[order]), max_tree_depth=10)
        tune = FIXED_BURN  # nothing adapts in NumPyro's warmup phase now
    mcmc = MCMC(kern, num_warmup=tune, num_samples=draws, num_chains=4,
                chain_method="sequential", progress_bar=False)
    start = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed),
             extra_fields=("num_steps", "accept_prob", "adapt_state.step_size"))
    seconds = time.perf_counter() - start
    samples = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    arrays = {name: np.asarray(samples[name]) for name in spec["free"]}
    eps = np.asarray(extra["adapt_state.step_size"])[:, -1]
    return _summary("numpyro", seed, eps, np.asarray(extra["accept_prob"]),
                    np.asarray(extra["num_steps"]), arrays, seconds)


def nutpie_model(spec, data, density):
    """nutpie's compiled model: PyMC's when installed, else the logdens density."""
    import nutpie

    try:
        import pymc as pm
    except ImportError:
        return _nutpie_pyfunc(density)
    return nutpie.compile_pymc_model(spec["pymc"](pm, data))


def _nutpie_pyfunc(density):
    """The logdens density as a nutpie model (one Python call per gradient)."""
    from nutpie.compiled_pyfunc import from_pyfunc

    dim = int(density.dim)

    def make_logp():
        def logp(x):
            lp, grad = density.log_density_gradient(np.asarray(x, dtype=float))
            return float(lp), np.array(grad, dtype=float)
        return logp

    def make_expand(seed1, seed2, chain):
        return lambda x: {name: np.asarray(x)[i:i + 1].copy()
                          for i, name in enumerate(_names(density))}

    names = _names(density)
    return from_pyfunc(dim, make_logp, make_expand, [np.dtype("float64")] * dim,
                       [(1,)] * dim, names)


def _names(density):
    return [n.replace("[", "_").replace("]", "") for n in density.param_unc_names()]


def run_nutpie(spec, data, seed, tune, draws, density):
    """nutpie (its own warmup: mass matrix from draws and gradients), 4 chains."""
    import nutpie

    compiled = nutpie_model(spec, data, density)
    start = time.perf_counter()
    idata = nutpie.sample(compiled, draws=draws, tune=tune, chains=4, cores=1, seed=seed,
                          progress_bar=False)
    seconds = time.perf_counter() - start
    stats = idata["sample_stats"]
    post = idata["posterior"]
    free = spec["free"] if all(n in post for n in spec["free"]) else _names(density)
    arrays = {name: np.asarray(post[name].values) for name in free}
    eps = np.asarray(stats["step_size"].values)[:, -1]
    return _summary("nutpie", seed, eps, np.asarray(stats["mean_tree_accept"].values),
                    np.asarray(stats["n_steps"].values), arrays, seconds)


def nutpie_adapted(spec, data, seed, density):
    """Step size and diagonal inverse metric at the end of nutpie's warmup
    (one chain), in logdens' parameter order."""
    import nutpie

    compiled = nutpie_model(spec, data, density)
    idata = nutpie.sample(compiled, draws=10, tune=1000, chains=1, cores=1, seed=seed,
                          progress_bar=False, store_mass_matrix=True)
    stats = idata["sample_stats"]
    inv = stats["mass_matrix_inv"].isel(chain=0, draw=-1)
    by_name = {}
    for name, value in zip(inv["unconstrained_parameter"].values, inv.values):
        base, _, index = str(name).replace("_log__", "").rpartition("_")
        key = f"{base}[{index}]" if index.isdigit() else str(name).replace("_log__", "")
        by_name[key] = float(value)
    inv_diag = np.array([by_name[n] for n in density.param_unc_names()])
    return float(stats["step_size"].isel(chain=0, draw=-1)), inv_diag


def numpyro_order(density):
    """Index array mapping NumPyro's flattened latent order onto logdens' order.

    NumPyro ravels latent sites sorted by name; logdens keeps declaration order.
    """
    names = density.param_unc_names()
    base = [n.split("[")[0] for n in names]
    order = []
    for site in sorted(dict.fromkeys(base)):
        order += [i for i, b in enumerate(base) if b == site]
    return np.array(order)


def show(row):
    eps = row["eps"]
    hist = " ".join(f"{h:4.0%}" for h in row["depth_hist"])
    print(f"{row['tool']:14s} seed {row['seed']}: eps {min(eps):.3f}-{max(eps):.3f} "
          f"accept {row['accept']:.3f} depth 1..{MAX_DEPTH_SHOWN} [{hist}] "
          f"grads/draw {row['grads_per_draw']:5.2f} min ESS {row['min_ess']:6.0f} "
          f"grads/ESS {row['grads_per_ess']:6.2f} ({row['seconds']:.0f} s)", flush=True)


def mean_line(rows, tool):
    mine = [r for r in rows if r["tool"] == tool]
    if not mine:
        return
    keys = ("accept", "grads_per_draw", "min_ess", "grads_per_ess")
    means = {k: np.mean([r[k] for r in mine]) for k in keys}
    eps = np.mean([np.mean(r["eps"]) for r in mine])
    print(f"{tool:14s} mean over {len(mine)} seeds: eps {eps:.3f} accept {means['accept']:.3f} "
          f"grads/draw {means['grads_per_draw']:.2f} min ESS {means['min_ess']:.0f} "
          f"grads/ESS {means['grads_per_ess']:.2f} (sd "
          f"{np.std([r['grads_per_ess'] for r in mine], ddof=1) if len(mine) > 1 else 0:.2f})")



# ----- the low-rank comparison (issue 39): --compare -----

def correlated_logistic_data(n=2000, d=10, rho=0.9, seed=20261128):
    """Logistic regression whose predictors are equicorrelated (``rho``): the
    coefficients' posterior is strongly correlated."""
    rng = np.random.default_rng(seed)
    corr = np.full((d, d), rho) + (1 - rho) * np.eye(d)
    X = rng.normal(size=(n, d)) @ np.linalg.cholesky(corr).T
    beta = rng.normal(0.0, 0.5, size=d)
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-(0.3 + X @ beta)))).astype(np.int64)
    return {"X": X, "y": y}


def dominant_gaussian_data(dim=100, seed=20261128):
    """N(0, I + U diag(399, 99, 24) U'): unit scales and three dominant
    correlated directions (a diagonal metric cannot see them)."""
    u, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, 3)))
    cov = np.eye(dim) + u @ np.diag([399.0, 99.0, 24.0]) @ u.T
    return {"A": np.linalg.inv(np.linalg.cholesky(cov)), "cov": cov}


def gaussian_pymc(pm, data):
    with pm.Model() as model:
        x = pm.Flat("x", shape=data["A"].shape[1])
        pm.Normal("zero", pm.math.dot(data["A"], x), 1.0, observed=np.zeros(len(data["A"])))
    return model


def eight_schools_centered_pymc(pm, data):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfCauchy("tau", 5)
        theta = pm.Normal("theta", mu, tau, shape=8)
        pm.Normal("y", theta, data["sigma"], observed=data["y"])
    return model


def hierarchical_data(n=1000, j1=20, j2=10, seed=20261128):
    """Normal regression with two crossed group levels (20 and 10 groups)."""
    rng = np.random.default_rng(seed)
    g1, g2 = rng.integers(j1, size=n), rng.integers(j2, size=n)
    x = rng.normal(size=n)
    y = (1.0 + rng.normal(0, 0.7, j1)[g1] + rng.normal(0, 0.3, j2)[g2] + 0.5 * x
         + rng.normal(0, 1.0, n))
    return {"g1": g1, "g2": g2, "x": x, "y": y, "j1": j1, "j2": j2}


def hierarchical_logdens(ld, data):
    m = ld.Model()
    g1, g2, x = m.data("g1", data["g1"]), m.data("g2", data["g2"]), m.data("x", data["x"])
    alpha, b = m.param("alpha", ld.Normal(0, 5)), m.param("b", ld.Normal(0, 1))
    s1, s2 = m.param("s1", ld.HalfNormal(1)), m.param("s2", ld.HalfNormal(1))
    sigma = m.param("sigma", ld.HalfNormal(2))
    z1 = m.param("z1", ld.Normal(0, 1), shape=data["j1"])
    z2 = m.param("z2", ld.Normal(0, 1), shape=data["j2"])
    m.observe("y", ld.Normal(alpha + (s1 * z1)[g1] + (s2 * z2)[g2] + b * x, sigma), data["y"])
    return m


def hierarchical_pymc(pm, data):
    with pm.Model() as model:
        alpha, b = pm.Normal("alpha", 0, 5), pm.Normal("b", 0, 1)
        s1, s2 = pm.HalfNormal("s1", 1), pm.HalfNormal("s2", 1)
        sigma = pm.HalfNormal("sigma", 2)
        z1 = pm.Normal("z1", 0, 1, shape=data["j1"])
        z2 = pm.Normal("z2", 0, 1, shape=data["j2"])
        mu = alpha + (s1 * z1)[data["g1"]] + (s2 * z2)[data["g2"]] + b * data["x"]
        pm.Normal("y", mu, sigma, observed=data["y"])
    return model


def gp_data(n=30, seed=20261128):
    """GP regression: 30 inputs on [0, 10], f a draw of exp_quad(1.5, 2), noise 0.3."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 10, n))
    k = 1.5**2 * np.exp(-0.5 * np.subtract.outer(x, x) ** 2 / 2.0**2) + 1e-9 * np.eye(n)
    return {"x": x, "y": np.linalg.cholesky(k) @ rng.normal(size=n) + rng.normal(0, 0.3, n)}


def gp_logdens(ld, data):
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2))
    rho = m.param("rho", ld.InverseGamma(5, 5))
    sigma = m.param("sigma", ld.HalfNormal(1))
    k = ld.add_diag(ld.gp.exp_quad(m.data("x", data["x"]), alpha, rho), sigma**2)
    m.observe("y", ld.MvNormal(0.0, scale_tril=ld.cholesky(k)), data["y"])
    return m


def gp_pymc(pm, data):
    x = data["x"]
    with pm.Model() as model:
        alpha = pm.HalfNormal("alpha", 2)
        rho = pm.InverseGamma("rho", 5, 5)
        sigma = pm.HalfNormal("sigma", 1)
        d2 = np.subtract.outer(x, x) ** 2
        k = alpha**2 * pm.math.exp(-0.5 * d2 / rho**2) + sigma**2 * np.eye(len(x))
        pm.MvNormal("y", mu=np.zeros(len(x)), cov=k, observed=data["y"])
    return model


#: Models of ``--compare``: name -> spec (as MODELS: data, builders, free parameters).
COMPARE_MODELS = {
    "eight_schools": bs.MODELS["eight_schools"],
    "eight_schools_centered": dict(EXTRA_MODELS["eight_schools_centered"],
                                   pymc=eight_schools_centered_pymc),
    "logistic_correlated": dict(data=correlated_logistic_data, logdens=bs.logistic_logdens,
                                pymc=bs.logistic_pymc, free=("alpha", "beta")),
    "gaussian_100d": dict(data=dominant_gaussian_data, logdens=gaussian_logdens,
                          pymc=gaussian_pymc, free=("x",)),
    "hierarchical": dict(data=hierarchical_data, logdens=hierarchical_logdens,
                         pymc=hierarchical_pymc,
                         free=("alpha", "b", "s1", "s2", "sigma", "z1", "z2")),
    "gp": dict(data=gp_data, logdens=gp_logdens, pymc=gp_pymc, free=("alpha", "rho", "sigma")),
}
#: Tools of ``--compare``: (sampler, metric or adaptation).
COMPARE_TOOLS = (("logdens", "diag"), ("logdens", "low_rank"), ("nutpie", "diag"),
                 ("nutpie", "low_rank"))


def _timed(fn):
    """``(result, wall seconds, CPU seconds of this process)``."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _compare_row(idata, free, wall, cpu):
    import arviz_stats

    post = idata["posterior"]
    post = post.to_dataset() if hasattr(post, "to_dataset") else post  # DataTree or Dataset
    ess = arviz_stats.ess(post[list(free)], method="bulk")
    min_ess = min(float(np.min(ess[name].values)) for name in free)
    steps = float(np.sum(idata["sample_stats"]["n_steps"].values))
    return {"grads_per_ess": steps / min_ess, "ess_wall": min_ess / wall,
            "ess_cpu": min_ess / cpu, "min_ess": min_ess}


def compare_one(tool, metric, density, nutpie_compiled, free, seed, tune, draws):
    """One run of one tool: 4 chains on one thread; its row of statistics."""
    import logdens as ld

    if tool == "logdens":
        run = lambda: ld.nuts(density, draws=draws, tune=tune, chains=4, cores=1,  # noqa: E731
                              seed=seed, metric=metric, progress=False, log_likelihood=False)
    else:
        import nutpie
        run = lambda: nutpie.sample(nutpie_compiled, draws=draws, tune=tune,  # noqa: E731
                                    chains=4, cores=1, seed=seed, progress_bar=False,
                                    adaptation=metric)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short warmups and funnels warn; the table says it all
        idata, wall, cpu = _timed(run)
    return _compare_row(idata, free, wall, cpu)


def compare(models, seeds, tune, draws):
    """The table of ``--compare``: medians (and ranges) over seeds per model and tool."""
    import logdens as ld
    import nutpie
    import pymc as pm

    for name in models:
        spec = COMPARE_MODELS[name]
        data = spec["data"]()
        density = spec["logdens"](ld, data).compile()
        compiled = nutpie.compile_pymc_model(spec["pymc"](pm, data))
        print(f"\n#### {name} ({density.dim} parameters)\n", flush=True)
        print("| tool | grads / ESS (median, range) | ESS/s wall | ESS/s CPU | min ESS |")
        print("|---|---|---|---|---|")
        for tool, metric in COMPARE_TOOLS:
            # An untimed short run: compiles (or loads from the caches) outside the clock.
            compare_one(tool, metric, density, compiled, spec["free"], 0, 60, 20)
            rows = [compare_one(tool, metric, density, compiled, spec["free"], s, tune, draws)
                    for s in seeds]
            med = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
            lo, hi = (f(r["grads_per_ess"] for r in rows) for f in (min, max))
            print(f"| {tool} {metric} | {med['grads_per_ess']:.1f} ({lo:.1f}-{hi:.1f}) | "
                  f"{med['ess_wall']:.0f} | {med['ess_cpu']:.0f} | {med['min_ess']:.0f} |",
                  flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="poisson", choices=list(bs.MODELS) + list(EXTRA_MODELS))
    p.add_argument("--seeds", default="1,2,3,4")
    p.add_argument("--tools", default="logdens-stan,logdens-nutpie,numpyro")
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--metric", default="diag", choices=("diag", "dense"))
    p.add_argument("--fixed", action="store_true")
    p.add_argument("--fixed-source", default="logdens", choices=("logdens", "nutpie"),
                   help="whose adapted step size and metric --fixed uses")
    p.add_argument("--core", type=int, default=sorted(os.sched_getaffinity(0))[0])
    p.add_argument("--compare", default="",
                   help="comma-separated models of COMPARE_MODELS (or 'all'): the table of "
                   "logdens and nutpie, diag and low_rank, medians over --seeds")
    args = p.parse_args(argv)
    os.sched_setaffinity(0, {args.core})
    if args.compare:
        models = list(COMPARE_MODELS) if args.compare == "all" else args.compare.split(",")
        compare(models, [int(s) for s in args.seeds.split(",")], args.tune, args.draws)
        return
    import logdens as ld

    spec = {**bs.MODELS, **EXTRA_MODELS}[args.model]
    data = spec["data"]()
    density = spec["logdens"](ld, data).compile()
    seeds = [int(s) for s in args.seeds.split(",")]
    tools = [t for t in args.tools.split(",") if t]
    print(f"{args.model}, {args.metric} metric, 4 chains, tune {args.tune}, draws {args.draws}, "
          f"core {args.core}, load {os.getloadavg()}", flush=True)
    rows, first_states = [], None
    for seed in seeds:
        for tool, adaptation in LOGDENS_TOOLS.items():
            if tool not in tools:
                continue
            row, states = run_logdens(density, seed, args.tune, args.draws, args.metric,
                                      adaptation=adaptation, tool=tool)
            first_states = first_states or states
            rows.append(row)
            show(row)
        if "numpyro" in tools:
            rows.append(run_numpyro(spec, data, seed, args.tune, args.draws))
            show(rows[-1])
        if "nutpie" in tools:
            rows.append(run_nutpie(spec, data, seed, args.tune, args.draws, density))
            show(rows[-1])
    for tool in tools:
        mean_line(rows, tool)
    if args.fixed and args.fixed_source == "nutpie":
        fixed = nutpie_adapted(spec, data, seeds[0], density)
        print(f"\nfixed step size {fixed[0]:.4f} and metric of nutpie seed {seeds[0]} chain 0:")
    elif args.fixed and first_states is not None:
        from logdens.samplers import kernel
        s0 = first_states[0]
        fixed = (float(s0.scalars[kernel.STEP]), s0.metric.inv_diag.copy())
        print(f"\nfixed step size {fixed[0]:.4f} and metric of logdens seed {seeds[0]} chain 0:")
    else:
        fixed = None
    if fixed is not None:
        fixed_rows = []
        for seed in seeds:
            row, _ = run_logdens(density, seed, 0, args.draws, "diag", fixed)
            fixed_rows.append(row)
            show(row)
            if "numpyro" in tools:
                fixed_rows.append(run_numpyro(spec, data, seed, 0, args.draws, fixed,
                                              numpyro_order(density)))
                show(fixed_rows[-1])
        for tool in dict.fromkeys(["logdens"] + tools):
            mean_line(fixed_rows, tool)


if __name__ == "__main__":
    main()
