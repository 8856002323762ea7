"""An ordinal (proportional-odds) regression: ratings 0..3 from a linear
predictor and ordered cutpoints, with the logistic link (OrderedLogistic).

    y_i ~ OrderedLogistic(x_i @ beta, cutpoints),   cutpoints ordered

Run: python examples/ordinal_regression.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
n = 300 if args.quick else 3000
truth = {"beta": np.array([1.0, -0.7]), "cutpoints": np.array([-1.0, 0.5, 2.0])}
x = rng.normal(size=(n, 2))
latent = x @ truth["beta"] + rng.logistic(size=n)  # y = how many cutpoints the latent value passes
y = np.searchsorted(truth["cutpoints"], latent)

m = ld.Model(coords={"predictor": ["x1", "x2"]})
beta = m.param("beta", ld.Normal(0, 2), dims="predictor")
cutpoints = m.param("cutpoints", ld.Normal(0, 5), shape=3, constraint=ld.ordered)
m.observe("y", ld.OrderedLogistic(m.data("x", x) @ beta, cutpoints), y)
print(m)

draws = 300 if args.quick else 1000
idata = ld.nuts(m, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False)
print(arviz_stats.summary(idata, var_names=["beta", "cutpoints"]))
print("PSIS-LOO elpd:", round(float(arviz_stats.loo(idata).elpd), 1))
recovered(idata, truth)
trace_and_posterior(idata, ["beta", "cutpoints"], f"{args.out}/ordinal_regression.png", truth)
