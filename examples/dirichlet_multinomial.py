"""Overdispersed counts: each row's K category counts come from its own
category probabilities, drawn around a common mean p_mean with concentration
kappa (small kappa, rows far from the mean), so the counts vary more than a
multinomial's; PSIS-LOO prefers the Dirichlet-multinomial to the multinomial.

    p_mean ~ Dirichlet(1, ..., 1),  kappa ~ Gamma(2, 0.1)
    counts_i ~ DirichletMultinomial(n_i, kappa * p_mean),   n_i = the row's total (data)

Run: python examples/dirichlet_multinomial.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
rows = 150 if args.quick else 1500
truth = {"p_mean": np.array([0.4, 0.3, 0.2, 0.1]), "kappa": 8.0}
totals = rng.integers(20, 60, rows)
counts = np.array([rng.multinomial(n, rng.dirichlet(truth["kappa"] * truth["p_mean"])) for n in totals])


def counts_model(overdispersed):
    """The counts given their row totals, Dirichlet-multinomial or multinomial."""
    m = ld.Model(coords={"row": np.arange(rows), "category": ["a", "b", "c", "d"]})
    p_mean = m.param("p_mean", ld.Dirichlet(np.ones(4)), dims="category")
    n = m.data("n", totals, dims="row")  # a count per row: n has no event axes
    if overdispersed:
        kappa = m.param("kappa", ld.Gamma(2, 0.1))  # mean 20: overdispersion from none to strong
        m.observe("counts", ld.DirichletMultinomial(n, kappa * p_mean), counts, dims=("row", "category"))
    else:
        m.observe("counts", ld.Multinomial(n, p_mean), counts, dims=("row", "category"))
    return m


m = counts_model(overdispersed=True)
print(m)
draws = 300 if args.quick else 1000
fits = {name: ld.nuts(model, draws=draws, tune=draws, chains=4, seed=args.seed, progress=False)
        for name, model in {"dirichlet_multinomial": m, "multinomial": counts_model(overdispersed=False)}.items()}
idata = fits["dirichlet_multinomial"]
print(arviz_stats.summary(idata, var_names=["p_mean", "kappa"]))
print("\nPSIS-LOO comparison (the Dirichlet-multinomial first):")
print(arviz_stats.compare(fits))
recovered(idata, truth)
trace_and_posterior(idata, ["p_mean", "kappa"], f"{args.out}/dirichlet_multinomial.png", truth)
