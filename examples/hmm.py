"""A hidden Markov model: observations from three Gaussian regimes with sticky
switching, the regimes summed out by the forward algorithm
(``ld.hmm_marginal``, Stan's ``hmm_marginal``, a scan inside), recovering the
regimes' means, the noise and the probability of staying.

    z_t ~ Categorical(Gamma[z_{t-1}]),   y_t ~ Normal(mu[z_t], sigma)
    mu ~ Normal(0, 5) ordered,  sigma ~ HalfNormal(2),  Gamma rows ~ softmax(Z),  rho ~ Dirichlet(1)

Run: python examples/hmm.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
T, K = (300, 3) if args.quick else (2000, 3)
truth = {"mu": np.array([-2.0, 0.0, 2.5]), "sigma": 0.5, "stay": np.full(K, 0.9)}
gamma = np.full((K, K), 0.05) + np.diag(np.full(K, 0.85))
z = np.zeros(T, dtype=int)
for t in range(1, T):
    z[t] = rng.choice(K, p=gamma[z[t - 1]])
y = truth["mu"][z] + truth["sigma"] * rng.normal(size=T)

m = ld.Model()
mu = m.param("mu", ld.Normal(0, 5), shape=K, constraint=ld.ordered)
sigma = m.param("sigma", ld.HalfNormal(2))
Z = m.param("Z", ld.Normal(0, 2), shape=(K, K))
rho = m.param("rho", ld.Dirichlet(np.ones(K)))
transitions = ld.softmax(Z)
m.deterministic("stay", ld.sum(transitions * np.eye(K), axis=1))
log_emissions = ld.Normal(mu, sigma).logpdf(m.data("Y", np.repeat(y[:, None], K, axis=1)))   # (T, K)
m.potential("y", ld.hmm_marginal(log_emissions.T, transitions, rho))
print(m)

draws = 300 if args.quick else 1000
# the regimes are a mixture: a chain started at random can merge two of them (a poor local mode),
# so every chain starts with the means at the data's quantiles, as is usual for HMMs
density = m.compile()
start = density.unconstrain({"mu": np.quantile(y, [0.15, 0.5, 0.85]), "sigma": np.std(y) / 2,
                             "Z": 2 * np.eye(K), "rho": np.full(K, 1 / K)})
idata = ld.nuts(density, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False,
                init=np.tile(start, (4, 1)))
print(arviz_stats.summary(idata, var_names=["mu", "sigma", "stay"]))
recovered(idata, truth)
trace_and_posterior(idata, ["mu", "sigma", "stay"], f"{args.out}/hmm.png", truth)
