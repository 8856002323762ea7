"""GARCH(1,1) volatility of returns, its variance recursion written with
``ld.scan`` and its stationarity as a bound that is an expression of another
parameter, recovering the parameters the returns were simulated from.

    sigma2_t = omega + a1 r_{t-1}^2 + b1 sigma2_{t-1},   r_t ~ Normal(0, sqrt(sigma2_t))
    omega ~ HalfNormal(1),  a1 ~ Uniform(0, 1),  b1 ~ Uniform(0, 1 - a1)

Run: python examples/garch.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
T = 500 if args.quick else 2000
truth = {"omega": 0.1, "a1": 0.15, "b1": 0.75}
r, s = np.empty(T), truth["omega"] / (1 - truth["a1"] - truth["b1"])
for t in range(T):
    s = truth["omega"] + truth["a1"] * (r[t - 1] if t else 0.0) ** 2 + truth["b1"] * s
    r[t] = np.sqrt(s) * rng.normal()

m = ld.Model()
omega = m.param("omega", ld.HalfNormal(1))
a1 = m.param("a1", ld.Uniform(0, 1))
b1 = m.param("b1", ld.Uniform(0, 1 - a1))                      # stationary: a1 + b1 < 1
previous = m.data("r_previous", np.concatenate([[0.0], r[:-1]]))
sigma2 = ld.scan(lambda s, rp: omega + a1 * rp * rp + b1 * s, np.var(r), previous)
m.deterministic("persistence", a1 + b1)
m.observe("r", ld.Normal(0.0, ld.sqrt(sigma2)), r)
print(m)

draws = 300 if args.quick else 1000
idata = ld.nuts(m, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False)
print(arviz_stats.summary(idata, var_names=["omega", "a1", "b1", "persistence"]))
print("every draw stationary:", bool(np.all(idata.posterior["persistence"].values < 1)))
recovered(idata, truth)
trace_and_posterior(idata, ["omega", "a1", "b1"], f"{args.out}/garch.png", truth)
