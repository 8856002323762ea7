"""Radon: a hierarchical (non-centered) regression over counties.

log radon of house i in county j = a[j] + b * floor_i + noise, with county
effects a[j] = mu_a + sigma_a * z[j]. The data are simulated with the shape of
Gelman & Hill's Minnesota radon data (85 counties, 919 houses, a basement
indicator) from known parameters, which the posterior recovers.

Run: python examples/radon.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
n_counties, n_houses = (20, 200) if args.quick else (85, 919)
truth = {"mu_a": 1.5, "sigma_a": 0.35, "b": -0.7, "sigma": 0.75}
county = np.sort(rng.integers(0, n_counties, n_houses))
floor = (rng.uniform(size=n_houses) < 0.8).astype(float)   # 1: the ground floor, 0: a basement
a_true = truth["mu_a"] + truth["sigma_a"] * rng.normal(size=n_counties)
log_radon = a_true[county] + truth["b"] * floor + truth["sigma"] * rng.normal(size=n_houses)

m = ld.Model(coords={"county": [f"county {j}" for j in range(n_counties)]})
mu_a = m.param("mu_a", ld.Normal(0, 10))
sigma_a = m.param("sigma_a", ld.HalfNormal(1))
z = m.param("z", ld.Normal(0, 1), dims="county")
b = m.param("b", ld.Normal(0, 10))
sigma = m.param("sigma", ld.HalfNormal(1))
a = m.deterministic("a", mu_a + sigma_a * z, dims="county")
g = m.data("county_idx", county)
m.observe("log_radon", ld.Normal(a[g] + b * m.data("floor", floor), sigma), log_radon)
print(m)

draws = 300 if args.quick else 1000
idata = ld.nuts(m, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False)
print(arviz_stats.summary(idata, var_names=["mu_a", "sigma_a", "b", "sigma"]))
print("PSIS-LOO elpd:", round(float(arviz_stats.loo(idata).elpd), 1))
recovered(idata, truth)
trace_and_posterior(idata, ["mu_a", "sigma_a", "b", "sigma", "a"], f"{args.out}/radon.png",
                    {**truth, "a": a_true})
