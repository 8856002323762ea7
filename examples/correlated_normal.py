"""A multivariate normal with unknown means, scales and correlations: an LKJ
prior on the Cholesky factor of the correlation matrix (Stan's and PyMC's
standard covariance prior), recovering a known correlation matrix.

    corr ~ LKJCholesky(d, 2),  sigma ~ HalfNormal(2),  mu ~ Normal(0, 5)
    y_i ~ MvNormal(mu, diag(sigma) corr),   Omega = corr corr^T

Run: python examples/correlated_normal.py [--quick]
"""

import arviz_stats
import numpy as np
import xarray as xr

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
n = 200 if args.quick else 2000
omega = np.array([[1.0, 0.7, -0.3, 0.0],
                  [0.7, 1.0, 0.1, 0.4],
                  [-0.3, 0.1, 1.0, -0.5],
                  [0.0, 0.4, -0.5, 1.0]])
truth = {"mu": np.array([1.0, -2.0, 0.5, 3.0]), "sigma": np.array([0.5, 1.0, 2.0, 1.5])}
d = len(truth["mu"])
y = rng.multivariate_normal(truth["mu"], np.outer(truth["sigma"], truth["sigma"]) * omega, size=n)

m = ld.Model(coords={"var": ["a", "b", "c", "d"], "var_": ["a", "b", "c", "d"]})
mu = m.param("mu", ld.Normal(0, 5), dims="var")
sigma = m.param("sigma", ld.HalfNormal(2), dims="var")
corr = m.param("corr", ld.LKJCholesky(d, 2.0))
m.deterministic("omega", corr @ corr.T, dims=("var", "var_"))
m.observe("y", ld.MvNormal(mu, scale_tril=ld.diag_pre_multiply(sigma, corr)), y)
print(m)

draws = 300 if args.quick else 1000
idata = ld.nuts(m, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False)
print(arviz_stats.summary(idata, var_names=["mu", "sigma", "omega"]))
print("posterior mean of the correlation matrix:")
print(np.round(idata.posterior["omega"].mean(("chain", "draw")).values, 2))
lower = np.tril_indices(d, -1)  # the correlations below the diagonal, one column each
omega_draws = idata.posterior["omega"].values
idata.posterior["omega_lower"] = xr.DataArray(omega_draws[:, :, lower[0], lower[1]], dims=("chain", "draw", "pair"))
checked = {"mu": truth["mu"], "sigma": truth["sigma"], "omega_lower": omega[lower]}
recovered(idata, checked)
trace_and_posterior(idata, ["mu", "sigma", "omega_lower"], f"{args.out}/correlated_normal.png", checked)
