"""Robust regression: Student-t errors with a Gamma prior on the degrees of
freedom, against Normal errors, on data with outliers; PSIS-LOO prefers the
robust model.

Run: python examples/robust_regression.py [--quick]
"""

import arviz_stats
import numpy as np

import logdens as ld
from common import arguments, recovered, trace_and_posterior

args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
n = 100 if args.quick else 1000
truth = {"intercept": 1.0, "slope": 2.0}
x = rng.uniform(-2, 2, n)
y = truth["intercept"] + truth["slope"] * x + 0.5 * rng.standard_t(3, n)
outliers = rng.choice(n, n // 20, replace=False)
y[outliers] += rng.choice([-1, 1], outliers.size) * rng.uniform(8, 15, outliers.size)


def regression(errors):
    """y = intercept + slope * x + error, with ``errors(loc, scale, m)`` the likelihood."""
    m = ld.Model()
    intercept = m.param("intercept", ld.Normal(0, 10))
    slope = m.param("slope", ld.Normal(0, 10))
    scale = m.param("scale", ld.HalfNormal(5))
    m.observe("y", errors(intercept + slope * m.data("x", x), scale, m), y)
    return m


def student_t(loc, scale, m):
    df = m.param("df", ld.Gamma(2, 0.1))  # Juarez & Steel's prior: mean 20, mode 10
    return ld.StudentT(df, loc, scale)


draws = 300 if args.quick else 1000
fits = {name: ld.nuts(regression(errors), draws=draws, tune=draws, chains=4, seed=args.seed,
                      progress=False)
        for name, errors in {"student_t": student_t,
                             "normal": lambda loc, scale, m: ld.Normal(loc, scale)}.items()}
for name, idata in fits.items():
    print(f"\n{name} errors:")
    print(arviz_stats.summary(idata, var_names=["intercept", "slope", "scale"]))
print("\nPSIS-LOO comparison (the robust model first):")
print(arviz_stats.compare(fits))
print("Student-t errors:")
recovered(fits["student_t"], truth)
trace_and_posterior(fits["student_t"], ["intercept", "slope", "scale", "df"],
                    f"{args.out}/robust_regression.png", truth)
