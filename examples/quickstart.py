"""logdens in one page: a model, its posterior, its log density and gradient, distributions.

Run: python examples/quickstart.py
"""

import numpy as np

import logdens as ld

# 1. A model: eight schools, non-centered.
y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
m = ld.Model()
mu = m.param("mu", ld.Normal(0, 5))
tau = m.param("tau", ld.HalfCauchy(5))
z = m.param("z", ld.Normal(0, 1), shape=8)
theta = m.deterministic("theta", mu + tau * z)
m.observe("y", ld.Normal(theta, sigma), y)
density = m.compile()  # one fused numba kernel, cached on disk

# 2. Sampling: NUTS, 4 chains, results as an ArviZ DataTree; the summary first,
# every column (pandas would cut a wide table with "..." at its display width).
# target_accept=0.9 (Stan's default is 0.8): smaller steps for the funnel of
# mu, tau and z, which at 0.8 gives a few divergent transitions.
import arviz_stats  # noqa: E402

idata = ld.nuts(density, draws=1000, tune=1000, chains=4, seed=0, target_accept=0.9, progress=False)
print("NUTS posterior summary:")
print(arviz_stats.summary(idata, var_names=["mu", "tau", "theta"]).to_string())
print("PSIS-LOO elpd:", round(float(arviz_stats.loo(idata).elpd), 2))
# The joint mode of eight schools sits at tau -> 0, the neck of the funnel:
# a reminder of why a MAP estimate summarizes a hierarchical posterior badly.
fit = ld.find_map(density, seed=0)
print("MAP (L-BFGS on the unconstrained space): mu =", np.round(fit.params["mu"], 3),
      " tau =", np.round(fit.params["tau"], 3))

# 3. Log density and gradient on the unconstrained space, in one pass.
point = density.unconstrain({"mu": 4.0, "tau": 3.0, "z": np.zeros(8)})
value, gradient = density.log_density_gradient(point)
print(f"\neight schools: dim = {density.dim}, log density = {value:.6f}")
print("gradient:", np.round(gradient, 6))
print("per-school log-likelihood:", np.round(density.pointwise_log_likelihood(point)["y"], 4))

# 4. Distributions on their own: closed-form log densities and partials, scipy-style.
d = ld.Gamma(concentration=2.0, rate=0.5)
lp, grads = d.logpdf_grad(np.array([0.5, 1.0, 4.0]))
print("\nGamma(2, 0.5).logpdf at [0.5, 1, 4]:", lp)
print("  d/dx:", grads["x"], " d/dconcentration:", grads["concentration"], " d/drate:", grads["rate"])
print("Poisson(3.5).logpmf at [0, 3, 10]:", ld.Poisson(3.5).logpmf(np.array([0, 3, 10])))
