"""Gaussian processes: a GP regression with its hyperparameters, and a latent
GP under Poisson counts (non-centred), each recovering the truth it was
simulated from.

    K = alpha^2 exp(-|x_i - x_j|^2 / (2 rho^2)),  alpha ~ HalfNormal(2),  rho ~ InverseGamma(5, 5)
    y ~ MvNormal(0, K + sigma^2 I),  sigma ~ HalfNormal(1)          (the marginal likelihood)
    f = cholesky(K + 1e-6 I) z,  z ~ Normal(0, 1),  counts_i ~ Poisson(exp(b + f_i))

Run: python examples/gp_regression.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
n = 40 if args.quick else 100
x = np.sort(rng.uniform(0, 10, n))
truth = {"alpha": 1.0, "rho": 1.5, "sigma": 0.3, "b": 1.0}


def exp_quad(x, alpha, rho):
    return alpha ** 2 * np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / rho ** 2)


f_true = rng.multivariate_normal(np.zeros(n), exp_quad(x, truth["alpha"], truth["rho"]) + 1e-9 * np.eye(n))
y = f_true + truth["sigma"] * rng.normal(size=n)
counts = rng.poisson(np.exp(truth["b"] + f_true)).astype(float)

m = ld.Model()
alpha = m.param("alpha", ld.HalfNormal(2))
rho = m.param("rho", ld.InverseGamma(5, 5))
sigma = m.param("sigma", ld.HalfNormal(1))
inputs = m.data("x", x)
K = ld.add_diag(ld.gp.exp_quad(inputs, alpha, rho), sigma ** 2)
m.observe("y", ld.MvNormal(np.zeros(n), scale_tril=ld.cholesky(K)), y)
print(m)

draws = 300 if args.quick else 1000
idata = ld.nuts(m, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False)
print(arviz_stats.summary(idata, var_names=["alpha", "rho", "sigma"]))
recovered(idata, {k: truth[k] for k in ("alpha", "rho", "sigma")})

latent = ld.Model()
alpha = latent.param("alpha", ld.HalfNormal(2))
rho = latent.param("rho", ld.InverseGamma(5, 5))
b = latent.param("b", ld.Normal(0, 2))
z = latent.param("z", ld.Normal(0, 1), shape=n)
L = ld.cholesky(ld.add_diag(ld.gp.exp_quad(latent.data("x", x), alpha, rho), 1e-6))
f = latent.deterministic("f", L @ z)
latent.observe("counts", ld.PoissonLog(b + f), counts)
posterior = ld.nuts(latent, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False,
                    target_accept=0.95)
print(arviz_stats.summary(posterior, var_names=["alpha", "rho", "b"]))
rate = np.exp(posterior.posterior["b"].values[..., None] + posterior.posterior["f"].values)
true_rate = np.exp(truth["b"] + f_true)
error = np.sqrt(np.mean((rate.mean(axis=(0, 1)) - true_rate) ** 2))
print(f"latent GP: RMS error of the posterior mean rate {error:.3f}, the true rates' sd {np.std(true_rate):.3f}")
trace_and_posterior(idata, ["alpha", "rho", "sigma"], f"{args.out}/gp_regression.png", truth)
if error > 0.5 * np.std(true_rate):
    raise SystemExit("the latent GP's rates were not recovered")
