"""Logistic regression: y_i ~ BernoulliLogit(alpha + X_i beta), with a posterior
predictive check of the share of ones and the accuracy.

Data are simulated from known coefficients, which the posterior recovers.

Run: python examples/logistic_regression.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
n, d = (300, 5) if args.quick else (5000, 20)
truth = {"alpha": -0.5, "beta": rng.normal(0, 1, d)}
X = rng.normal(size=(n, d))
y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(truth["alpha"] + X @ truth["beta"])))).astype(np.int64)

m = ld.Model(coords={"predictor": [f"x{k}" for k in range(d)]})
alpha = m.param("alpha", ld.Normal(0, 2.5))
beta = m.param("beta", ld.Normal(0, 2.5), dims="predictor")
m.observe("y", ld.BernoulliLogit(alpha + m.data("X", X) @ beta), y)

draws = 300 if args.quick else 1000
idata = ld.nuts(m, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False)
print(arviz_stats.summary(idata, var_names=["alpha", "beta"]))
recovered(idata, truth)

# posterior predictive check: the share of ones in replicated data sets
ld.sample_posterior_predictive(idata, m, seed=args.seed, extend_inferencedata=True)
share = idata.posterior_predictive["y"].values.mean(axis=-1).ravel()  # one per replicated data set
print(f"share of ones: observed {y.mean():.3f}, replicated {share.mean():.3f} "
      f"(94% interval {np.quantile(share, 0.03):.3f}..{np.quantile(share, 0.97):.3f}), "
      f"p = {np.mean(share >= y.mean()):.2f}")
trace_and_posterior(idata, ["alpha", "beta"], f"{args.out}/logistic_regression.png", truth)
