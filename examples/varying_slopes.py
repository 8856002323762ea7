"""Varying intercepts and slopes with correlated group effects (McElreath's
cafes, Statistical Rethinking ch. 14; the Stan User's Guide's multivariate
hierarchical priors): each cafe's morning wait and afternoon difference are
drawn together, with an LKJ prior on their correlation. The group effects are
non-centred, z standard normal and scaled by the Cholesky factor of their
covariance, which keeps NUTS out of the funnel when the groups have few rows
(with many rows per group the centred form, the effects a parameter with prior
``ld.MvNormal(mean, scale_tril=ld.diag_pre_multiply(sigma, corr))``, mixes better).

    corr ~ LKJCholesky(2, 2),  sigma ~ HalfNormal(1),  a, b ~ Normal(0, 5),  s ~ HalfNormal(1)
    z_j ~ Normal(0, 1) (two values),  (alpha_j, beta_j) = (a, b) + z_j (diag(sigma) corr)^T
    y_i ~ Normal(alpha[cafe_i] + beta[cafe_i] * afternoon_i, s),   rho = (corr corr^T)[0, 1]

Run: python examples/varying_slopes.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
cafes, visits = (40, 6) if args.quick else (200, 10)
truth = {"a": 3.5, "b": -1.0, "sigma": np.array([1.0, 0.5]), "rho": -0.7, "s": 0.5}
cov = np.outer(truth["sigma"], truth["sigma"]) * np.array([[1.0, truth["rho"]], [truth["rho"], 1.0]])
effects = rng.multivariate_normal([truth["a"], truth["b"]], cov, size=cafes)  # (cafes, 2)
cafe = np.repeat(np.arange(cafes), visits)
afternoon = np.tile(np.arange(visits) % 2, cafes).astype(float)
y = effects[cafe, 0] + effects[cafe, 1] * afternoon + truth["s"] * rng.normal(size=cafe.size)

m = ld.Model(coords={"cafe": np.arange(cafes), "effect": ["intercept", "slope"]})
a = m.param("a", ld.Normal(0, 5))
b = m.param("b", ld.Normal(0, 5))
sigma = m.param("sigma", ld.HalfNormal(1), dims="effect")
corr = m.param("corr", ld.LKJCholesky(2, 2.0))
m.deterministic("rho", (corr @ corr.T)[0, 1])
z = m.param("z", ld.Normal(0, 1), dims=("cafe", "effect"))
offsets = z @ ld.diag_pre_multiply(sigma, corr).T  # row j: cafe j's (alpha_j - a, beta_j - b)
alpha, beta = a + offsets[:, 0], b + offsets[:, 1]
cafe_index = m.data("cafe_index", cafe)
s = m.param("s", ld.HalfNormal(1))
m.observe("y", ld.Normal(alpha[cafe_index] + beta[cafe_index] * m.data("afternoon", afternoon), s), y)
print(m)

draws = 300 if args.quick else 1000
idata = ld.nuts(m, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False)
print(arviz_stats.summary(idata, var_names=["a", "b", "sigma", "rho", "s"]))
recovered(idata, truth)
trace_and_posterior(idata, ["a", "b", "sigma", "rho", "s"], f"{args.out}/varying_slopes.png", truth)
