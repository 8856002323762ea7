"""A two-component Gaussian mixture, written with logpdf expressions as a
hand-written likelihood (one log-likelihood per observation, so LOO works),
with ordered means so the components cannot swap labels.

    log p(y_i) = logaddexp(log w + Normal(mu[0], s).logpdf(y_i),
                           log(1 - w) + Normal(mu[1], s).logpdf(y_i))

Run: python examples/mixture.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
n = 200 if args.quick else 2000
truth = {"w": 0.35, "mu": np.array([-1.5, 2.0]), "s": 0.8}
first = rng.uniform(size=n) < truth["w"]
y = np.where(first, truth["mu"][0], truth["mu"][1]) + truth["s"] * rng.normal(size=n)

m = ld.Model(coords={"obs": np.arange(n)})
w = m.param("w", ld.Beta(2, 2))
mu = m.param("mu", ld.Normal(0, 5), shape=2, constraint=ld.ordered)
s = m.param("s", ld.HalfNormal(2))
ys = m.data("y", y, dims="obs")
m.potential("lik", ld.logaddexp(ld.log(w) + ld.Normal(mu[0], s).logpdf(ys),
                                ld.log1p(-w) + ld.Normal(mu[-1], s).logpdf(ys)),
            observed=True, dims="obs")
print(m)

draws = 300 if args.quick else 1000
idata = ld.nuts(m, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False)
print(arviz_stats.summary(idata, var_names=["w", "mu", "s"]))
print("PSIS-LOO elpd:", round(float(arviz_stats.loo(idata).elpd), 1))
recovered(idata, truth)
trace_and_posterior(idata, ["w", "mu", "s"], f"{args.out}/mixture.png", truth)
