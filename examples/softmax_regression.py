"""A softmax (multinomial logistic) regression: three classes, two predictors.
Adding one vector to every class's weights changes no probability, so the
data identify only contrasts with a reference class (the last); the Normal
priors keep the posterior proper, and the contrasts are what is recovered.

    y_i ~ CategoricalLogit(x_i @ W + b),   W_contrast = W[:, :2] - W[:, 2], b likewise

Run: python examples/softmax_regression.py [--quick]
"""

import arviz_stats
import numpy as np
import xarray as xr

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
n = 400 if args.quick else 4000
weights = np.array([[1.5, -1.0, 0.0], [-0.5, 2.0, 0.0]])  # the last class is the reference
intercepts = np.array([0.5, -0.3, 0.0])
truth = {"W_contrast": weights[:, :2], "b_contrast": intercepts[:2]}
x = rng.normal(size=(n, 2))
logits = x @ weights + intercepts
probabilities = np.exp(logits - logits.max(1, keepdims=True))
probabilities /= probabilities.sum(1, keepdims=True)
y = np.array([rng.choice(3, p=p) for p in probabilities])

m = ld.Model(coords={"predictor": ["x1", "x2"], "class": ["a", "b", "c"]})
W = m.param("W", ld.Normal(0, 3), dims=("predictor", "class"))
b = m.param("b", ld.Normal(0, 3), dims="class")
m.observe("y", ld.CategoricalLogit(m.data("x", x) @ W + b), y)
print(m)

draws = 300 if args.quick else 1000
idata = ld.nuts(m, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False)
w_draws, b_draws = idata.posterior["W"].values, idata.posterior["b"].values  # (chain, draw, ...)
idata.posterior["W_contrast"] = xr.DataArray((w_draws - w_draws[..., 2:])[..., :2],
                                             dims=("chain", "draw", "predictor", "contrast"))
idata.posterior["b_contrast"] = xr.DataArray((b_draws - b_draws[..., 2:])[..., :2],
                                             dims=("chain", "draw", "contrast"))
print(arviz_stats.summary(idata, var_names=["W_contrast", "b_contrast"]))
print("PSIS-LOO elpd:", round(float(arviz_stats.loo(idata).elpd), 1))
recovered(idata, truth)
trace_and_posterior(idata, ["W_contrast", "b_contrast"], f"{args.out}/softmax_regression.png", truth)
