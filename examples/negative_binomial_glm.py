"""A negative-binomial GLM for overdispersed counts: log mean = alpha + X beta,
against a Poisson GLM whose posterior predictive check misses the spread.

Run: python examples/negative_binomial_glm.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
n, d = (300, 3) if args.quick else (3000, 6)
truth = {"alpha": 1.0, "beta": rng.normal(0, 0.4, d), "phi": 2.0}
X = rng.normal(size=(n, d))
mean = np.exp(truth["alpha"] + X @ truth["beta"])
counts = rng.negative_binomial(truth["phi"], truth["phi"] / (truth["phi"] + mean))


def glm(family):
    """Counts with log mean alpha + X beta, ``family(eta, m)`` their distribution."""
    m = ld.Model()
    alpha = m.param("alpha", ld.Normal(0, 5))
    beta = m.param("beta", ld.Normal(0, 1), shape=d)
    m.observe("counts", family(alpha + m.data("X", X) @ beta, m), counts)
    return m


families = {"negative binomial": lambda eta, m: ld.NegativeBinomialLog(eta, m.param("phi", ld.Gamma(2, 0.5))),
            "poisson": lambda eta, m: ld.PoissonLog(eta)}
draws = 300 if args.quick else 1000
for name, family in families.items():
    m = glm(family)
    idata = ld.nuts(m, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False)
    print(f"\n{name}:")
    print(arviz_stats.summary(idata, var_names=[v for v in ("alpha", "beta", "phi") if v in idata.posterior]))
    # posterior predictive check of the spread: the variance of replicated counts
    ld.sample_posterior_predictive(idata, m, seed=args.seed, extend_inferencedata=True)
    spread = idata.posterior_predictive["counts"].values.var(axis=-1).ravel()
    print(f"variance of the counts: observed {counts.var():.1f}, replicated median "
          f"{np.median(spread):.1f}, p = {np.mean(spread >= counts.var()):.2f}")
    if name == "negative binomial":
        recovered(idata, truth)
        trace_and_posterior(idata, ["alpha", "beta", "phi"], f"{args.out}/negative_binomial_glm.png", truth)
