"""Stochastic volatility: a latent AR(1) log-variance, non-centred (its
standardized innovations are the parameters, the path is a scan over them),
recovering the persistence, the volatility of volatility and the mean level.

    h_t = mu + phi (h_{t-1} - mu) + sigma z_t,  h_0 = mu + sigma z_0 / sqrt(1 - phi^2),  z_t ~ Normal(0, 1)
    r_t ~ Normal(0, exp(h_t / 2)),   mu ~ Normal(-1, 2),  phi ~ Uniform(-1, 1),  sigma ~ HalfNormal(1)

Run: python examples/stochastic_volatility.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
T = 300 if args.quick else 1000
truth = {"mu": -1.0, "phi": 0.95, "sigma": 0.25}
h = np.empty(T)
h[0] = truth["mu"] + truth["sigma"] / np.sqrt(1 - truth["phi"] ** 2) * rng.normal()
for t in range(1, T):
    h[t] = truth["mu"] + truth["phi"] * (h[t - 1] - truth["mu"]) + truth["sigma"] * rng.normal()
r = np.exp(h / 2) * rng.normal(size=T)

m = ld.Model()
mu = m.param("mu", ld.Normal(-1, 2))
phi = m.param("phi", ld.Uniform(-1, 1))
sigma = m.param("sigma", ld.HalfNormal(1))
z = m.param("z", ld.Normal(0, 1), shape=T)
start = sigma * z[0] / ld.sqrt(1 - phi * phi)              # the stationary distribution's deviation
deviations = ld.scan(lambda d, z_t: phi * d + sigma * z_t, start, z[1:])
m.observe("r0", ld.Normal(0.0, ld.exp(0.5 * (mu + start))), r[:1])
m.observe("r", ld.Normal(0.0, ld.exp(0.5 * (mu + deviations))), r[1:])
print(m)

draws = 300 if args.quick else 1000
idata = ld.nuts(m, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False, target_accept=0.9)
print(arviz_stats.summary(idata, var_names=["mu", "phi", "sigma"]))
recovered(idata, truth)
trace_and_posterior(idata, ["mu", "phi", "sigma"], f"{args.out}/stochastic_volatility.png", truth)
