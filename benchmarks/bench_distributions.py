"""Benchmark: logdens ``logpdf_grad`` against scipy.stats and hand-written numpy.

For every distribution, at N points (default 1e6) with typical scalar
parameters and x drawn in the support with a fixed seed, four callables are
timed side by side in one process:

1. ``grad``   logdens ``Dist(*params).logpdf_grad(x)``: value and every partial;
2. ``value``  logdens ``Dist(*params).logpdf(x)``;
3. ``scipy``  ``scipy.stats.<dist>.logpdf`` / ``logpmf`` in the matching
   parameterization (value only);
4. ``numpy``  a vectorized numpy / scipy.special expression, written here per
   distribution, of the value and all the partials logdens returns.

Before timing, the numpy value and partials (4) and the scipy value (3) must
agree with logdens (1) to 1e-8 relative (asserted), so a wrong baseline cannot
give a flattering ratio. Each callable is called once to warm up (numba
compiles on first use), then timed in interleaved rounds (enough rounds for
about ``--min-time`` seconds per callable, at least 5); the median of each is
reported as wall-clock time (``time.perf_counter``) and, in a second table,
as this thread's CPU time (``time.thread_time``), which stays meaningful on a
machine shared with other processes. Nothing here asserts a time.

The numpy baselines evaluate the formula only: x is known to lie in the
support, so they skip the support and parameter checks that logdens makes.
Like logdens, they return a full-length array for the value and for every
partial (``np.full`` where the expression does not depend on x, e.g.
Uniform's partials), since that is the contract being compared.

Run: ``python benchmarks/bench_distributions.py [--n 1000000] [--only Normal,Gamma]``.
"""

import os

# One thread everywhere, set before numpy, scipy or numba are imported.
for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from typing import Callable, Dict, NamedTuple  # noqa: E402

from machine import cpu_model  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402
import scipy  # noqa: E402
from scipy import special as sp  # noqa: E402
from scipy import stats  # noqa: E402

from logdens import distributions  # noqa: E402

LOG_2PI = math.log(2.0 * math.pi)
LOG_2 = math.log(2.0)
RTOL = 1e-8


class Case(NamedTuple):
    """One row of the benchmark: a distribution at typical parameters.

    ``draw(rng, size, **params)`` gives ``size`` points in the support;
    ``scipy(x, **params)`` the scipy value; ``numpy(x, **params)`` the
    hand-written ``(lp, grads)`` with the keys of logdens' ``grads``.
    """

    name: str
    params: Dict[str, float]
    draw: Callable
    scipy: Callable
    numpy: Callable


def _full(x, value):
    """``value`` (a number) as a float array shaped like ``x``."""
    return np.full(x.shape, value, dtype=float)


# ---------------------------------------------------------------- continuous

def np_normal(x, loc, scale):
    z = (x - loc) / scale
    lp = -0.5 * z * z - math.log(scale) - 0.5 * LOG_2PI
    return lp, {"x": -z / scale, "loc": z / scale, "scale": (z * z - 1.0) / scale}


def np_half_normal(x, scale):
    z = x / scale
    lp = LOG_2 - 0.5 * LOG_2PI - math.log(scale) - 0.5 * z * z
    return lp, {"x": -z / scale, "scale": (z * z - 1.0) / scale}


def np_log_normal(x, loc, scale):
    lx = np.log(x)
    z = (lx - loc) / scale
    lp = -0.5 * z * z - lx - math.log(scale) - 0.5 * LOG_2PI
    return lp, {"x": -(z / scale + 1.0) / x, "loc": z / scale, "scale": (z * z - 1.0) / scale}


def _student_t(z, df, scale):
    """Value (without log 2 or loc) and partials in z, df, scale of Student's t."""
    q = z * z / df
    l1q = np.log1p(q)
    lp = (sp.gammaln(0.5 * (df + 1.0)) - sp.gammaln(0.5 * df) - 0.5 * math.log(df * math.pi)
          - math.log(scale) - 0.5 * (df + 1.0) * l1q)
    dz = -(df + 1.0) * z / (df + z * z)
    d_df = 0.5 * (sp.digamma(0.5 * (df + 1.0)) - sp.digamma(0.5 * df) - 1.0 / df
                  - l1q + (df + 1.0) * q / (df * (1.0 + q)))
    d_scale = (-dz * z - 1.0) / scale
    return lp, dz, d_df, d_scale


def np_student_t(x, df, loc, scale):
    z = (x - loc) / scale
    lp, dz, d_df, d_scale = _student_t(z, df, scale)
    return lp, {"x": dz / scale, "df": d_df, "loc": -dz / scale, "scale": d_scale}


def np_half_student_t(x, df, scale):
    lp, dz, d_df, d_scale = _student_t(x / scale, df, scale)
    return LOG_2 + lp, {"x": dz / scale, "df": d_df, "scale": d_scale}


def np_cauchy(x, loc, scale):
    z = (x - loc) / scale
    z2 = z * z
    lp = -math.log(math.pi) - math.log(scale) - np.log1p(z2)
    dx = -2.0 * z / (scale * (1.0 + z2))
    return lp, {"x": dx, "loc": -dx, "scale": (z2 - 1.0) / (scale * (1.0 + z2))}


def np_half_cauchy(x, scale):
    z = x / scale
    z2 = z * z
    lp = LOG_2 - math.log(math.pi) - math.log(scale) - np.log1p(z2)
    return lp, {"x": -2.0 * z / (scale * (1.0 + z2)), "scale": (z2 - 1.0) / (scale * (1.0 + z2))}


def np_exponential(x, rate):
    return math.log(rate) - rate * x, {"x": _full(x, -rate), "rate": 1.0 / rate - x}


def np_gamma(x, concentration, rate):
    a, b = concentration, rate
    lx = np.log(x)
    lp = a * math.log(b) - sp.gammaln(a) + (a - 1.0) * lx - b * x
    return lp, {"x": (a - 1.0) / x - b, "concentration": math.log(b) - sp.digamma(a) + lx,
                "rate": a / b - x}


def np_inverse_gamma(x, concentration, scale):
    a, s = concentration, scale
    lx = np.log(x)
    inv = 1.0 / x
    lp = a * math.log(s) - sp.gammaln(a) - (a + 1.0) * lx - s * inv
    return lp, {"x": (s * inv - (a + 1.0)) * inv, "concentration": math.log(s) - sp.digamma(a) - lx,
                "scale": a / s - inv}


def np_weibull(x, concentration, scale):
    k, s = concentration, scale
    lxs = np.log(x / s)
    w = np.exp(k * lxs)
    lp = math.log(k) - np.log(x) + k * lxs - w
    one_w = 1.0 - w
    return lp, {"x": (k * one_w - 1.0) / x, "concentration": 1.0 / k + lxs * one_w,
                "scale": -k * one_w / s}


def np_beta(x, alpha, beta):
    a, b = alpha, beta
    lx, l1x = np.log(x), np.log1p(-x)
    lp = (a - 1.0) * lx + (b - 1.0) * l1x - sp.betaln(a, b)
    dab = sp.digamma(a + b)
    return lp, {"x": (a - 1.0) / x - (b - 1.0) / (1.0 - x), "alpha": lx - sp.digamma(a) + dab,
                "beta": l1x - sp.digamma(b) + dab}


def np_uniform(x, lower, upper):
    width = upper - lower
    return _full(x, -math.log(width)), {"x": _full(x, 0.0), "lower": _full(x, 1.0 / width),
                                        "upper": _full(x, -1.0 / width)}


def np_laplace(x, loc, scale):
    d = x - loc
    a = np.abs(d)
    lp = -LOG_2 - math.log(scale) - a / scale
    dx = -np.sign(d) / scale
    return lp, {"x": dx, "loc": -dx, "scale": (a / scale - 1.0) / scale}


def np_logistic(x, loc, scale):
    # The density is symmetric in z, so lp = -|z| - 2 log1p(exp(-|z|)) never overflows.
    z = (x - loc) / scale
    a = np.abs(z)
    lp = -a - 2.0 * np.log1p(np.exp(-a)) - math.log(scale)
    t = np.tanh(0.5 * z)  # d lp / dz = -1 + 2 expit(-z) = -tanh(z / 2)
    return lp, {"x": -t / scale, "loc": t / scale, "scale": (z * t - 1.0) / scale}


def np_gumbel(x, loc, scale):
    z = (x - loc) / scale
    e = np.exp(-z)
    lp = -z - e - math.log(scale)
    return lp, {"x": (e - 1.0) / scale, "loc": (1.0 - e) / scale,
                "scale": (z * (1.0 - e) - 1.0) / scale}


def np_pareto(x, alpha, scale):
    lsx = np.log(scale / x)
    lp = math.log(alpha) + alpha * lsx - np.log(x)
    return lp, {"x": -(alpha + 1.0) / x, "alpha": 1.0 / alpha + lsx, "scale": _full(x, alpha / scale)}


def np_chi_squared(x, df):
    k = 0.5 * df
    lx = np.log(x)
    lp = (k - 1.0) * lx - 0.5 * x - k * LOG_2 - sp.gammaln(k)
    return lp, {"x": (k - 1.0) / x - 0.5, "df": 0.5 * (lx - LOG_2 - sp.digamma(k))}


def np_skew_normal(x, loc, scale, alpha):
    z = (x - loc) / scale
    az = alpha * z
    log_cdf = sp.log_ndtr(az)
    r = np.exp(-0.5 * az * az - 0.5 * LOG_2PI - log_cdf)  # phi(az) / Phi(az)
    lp = LOG_2 - 0.5 * LOG_2PI - math.log(scale) - 0.5 * z * z + log_cdf
    dz = -z + alpha * r
    return lp, {"x": dz / scale, "loc": -dz / scale, "scale": (-dz * z - 1.0) / scale, "alpha": z * r}


def np_von_mises(x, loc, concentration):
    k = concentration
    d = x - loc
    i0e = sp.i0e(k)
    lp = k * np.cos(d) - LOG_2PI - (math.log(i0e) + k)
    dx = -k * np.sin(d)
    return lp, {"x": dx, "loc": -dx, "concentration": np.cos(d) - sp.i1e(k) / i0e}


def np_truncated_normal(x, loc, scale, lower, upper):
    z = (x - loc) / scale
    a, b = (lower - loc) / scale, (upper - loc) / scale
    mass = sp.ndtr(b) - sp.ndtr(a)
    pa, pb = math.exp(-0.5 * a * a - 0.5 * LOG_2PI), math.exp(-0.5 * b * b - 0.5 * LOG_2PI)
    lp = -0.5 * z * z - math.log(scale) - 0.5 * LOG_2PI - math.log(mass)
    sm = scale * mass
    return lp, {"x": -z / scale, "loc": z / scale + (pb - pa) / sm,
                "scale": (z * z - 1.0) / scale + (b * pb - a * pa) / sm,
                "lower": _full(x, pa / sm), "upper": _full(x, -pb / sm)}


def np_rayleigh(x, scale):
    z = x / scale
    lp = np.log(x) - 2.0 * math.log(scale) - 0.5 * z * z
    return lp, {"x": 1.0 / x - z / scale, "scale": (z * z - 2.0) / scale}


# ------------------------------------------------------------------ discrete

def _lchoose(n, x):
    return sp.gammaln(n + 1.0) - sp.gammaln(x + 1.0) - sp.gammaln(n - x + 1.0)


def np_bernoulli(x, p):
    lp = x * math.log(p) + (1.0 - x) * math.log1p(-p)
    return lp, {"p": x / p - (1.0 - x) / (1.0 - p)}


def np_bernoulli_logit(x, logit_p):
    t = logit_p
    lp = x * sp.log_expit(t) + (1.0 - x) * sp.log_expit(-t)
    return lp, {"logit_p": x - sp.expit(t)}


def np_binomial(x, n, p):
    lp = _lchoose(n, x) + x * math.log(p) + (n - x) * math.log1p(-p)
    return lp, {"p": x / p - (n - x) / (1.0 - p)}


def np_binomial_logit(x, n, logit_p):
    t = logit_p
    lp = _lchoose(n, x) + x * sp.log_expit(t) + (n - x) * sp.log_expit(-t)
    return lp, {"logit_p": x - n * sp.expit(t)}


def np_poisson(x, rate):
    return x * math.log(rate) - rate - sp.gammaln(x + 1.0), {"rate": x / rate - 1.0}


def np_poisson_log(x, log_rate):
    rate = math.exp(log_rate)
    return x * log_rate - rate - sp.gammaln(x + 1.0), {"log_rate": x - rate}


def _neg_binomial(x, mu, phi):
    """Value, d/dmu and d/dphi of neg_binomial_2."""
    mp = mu + phi
    lp = (sp.gammaln(x + phi) - sp.gammaln(phi) - sp.gammaln(x + 1.0)
          + x * math.log(mu / mp) + phi * math.log(phi / mp))
    d_mu = x / mu - (x + phi) / mp
    d_phi = sp.digamma(x + phi) - sp.digamma(phi) + math.log(phi / mp) + (mu - x) / mp
    return lp, d_mu, d_phi


def np_negative_binomial(x, mu, phi):
    lp, d_mu, d_phi = _neg_binomial(x, mu, phi)
    return lp, {"mu": d_mu, "phi": d_phi}


def np_negative_binomial_log(x, log_mu, phi):
    mu = math.exp(log_mu)
    lp, d_mu, d_phi = _neg_binomial(x, mu, phi)
    return lp, {"log_mu": mu * d_mu, "phi": d_phi}


def np_geometric(x, p):
    return math.log(p) + x * math.log1p(-p), {"p": 1.0 / p - x / (1.0 - p)}


def np_beta_binomial(x, n, alpha, beta):
    a, b = alpha, beta
    lp = _lchoose(n, x) + sp.betaln(x + a, n - x + b) - sp.betaln(a, b)
    common = sp.digamma(a + b) - sp.digamma(n + a + b)
    return lp, {"alpha": sp.digamma(x + a) - sp.digamma(a) + common,
                "beta": sp.digamma(n - x + b) - sp.digamma(b) + common}


def np_zero_inflated_poisson(x, zi, rate):
    zero = x == 0
    e = math.exp(-rate)
    p0 = zi + (1.0 - zi) * e
    lp = np.where(zero, math.log(p0), math.log1p(-zi) + x * math.log(rate) - rate - sp.gammaln(x + 1.0))
    return lp, {"zi": np.where(zero, (1.0 - e) / p0, -1.0 / (1.0 - zi)),
                "rate": np.where(zero, -(1.0 - zi) * e / p0, x / rate - 1.0)}


def scipy_zero_inflated_poisson(x, zi, rate):
    """scipy has no zero-inflated Poisson: the mixture written with ``poisson.logpmf``."""
    return np.where(x == 0, np.log(zi + (1.0 - zi) * math.exp(-rate)),
                    np.log1p(-zi) + stats.poisson.logpmf(x, rate))


def _count(draw):
    """``draw`` returning counts as floats, the dtype logdens evaluates."""
    return lambda rng, size, **p: draw(rng, size, **p).astype(float)


CASES = [
    Case("Normal", dict(loc=0.5, scale=2.0),
         lambda rng, size, loc, scale: rng.normal(loc, scale, size),
         lambda x, loc, scale: stats.norm.logpdf(x, loc, scale), np_normal),
    Case("HalfNormal", dict(scale=1.5),
         lambda rng, size, scale: np.abs(rng.normal(0.0, scale, size)),
         lambda x, scale: stats.halfnorm.logpdf(x, scale=scale), np_half_normal),
    Case("LogNormal", dict(loc=0.3, scale=0.8),
         lambda rng, size, loc, scale: np.exp(rng.normal(loc, scale, size)),
         lambda x, loc, scale: stats.lognorm.logpdf(x, scale, scale=math.exp(loc)), np_log_normal),
    Case("StudentT", dict(df=4.5, loc=0.5, scale=2.0),
         lambda rng, size, df, loc, scale: loc + scale * rng.standard_t(df, size),
         lambda x, df, loc, scale: stats.t.logpdf(x, df, loc, scale), np_student_t),
    Case("HalfStudentT", dict(df=3.0, scale=1.5),
         lambda rng, size, df, scale: np.abs(scale * rng.standard_t(df, size)),
         lambda x, df, scale: LOG_2 + stats.t.logpdf(x, df, 0.0, scale), np_half_student_t),
    Case("Cauchy", dict(loc=0.5, scale=2.0),
         lambda rng, size, loc, scale: loc + scale * rng.standard_cauchy(size),
         lambda x, loc, scale: stats.cauchy.logpdf(x, loc, scale), np_cauchy),
    Case("HalfCauchy", dict(scale=1.5),
         lambda rng, size, scale: np.abs(scale * rng.standard_cauchy(size)),
         lambda x, scale: stats.halfcauchy.logpdf(x, scale=scale), np_half_cauchy),
    Case("Exponential", dict(rate=1.5),
         lambda rng, size, rate: rng.exponential(1.0 / rate, size),
         lambda x, rate: stats.expon.logpdf(x, scale=1.0 / rate), np_exponential),
    Case("Gamma", dict(concentration=2.5, rate=0.5),
         lambda rng, size, concentration, rate: rng.gamma(concentration, 1.0 / rate, size),
         lambda x, concentration, rate: stats.gamma.logpdf(x, concentration, scale=1.0 / rate), np_gamma),
    Case("InverseGamma", dict(concentration=3.0, scale=2.0),
         lambda rng, size, concentration, scale: scale / rng.gamma(concentration, 1.0, size),
         lambda x, concentration, scale: stats.invgamma.logpdf(x, concentration, scale=scale),
         np_inverse_gamma),
    Case("Weibull", dict(concentration=1.5, scale=2.0),
         lambda rng, size, concentration, scale: scale * rng.weibull(concentration, size),
         lambda x, concentration, scale: stats.weibull_min.logpdf(x, concentration, scale=scale),
         np_weibull),
    Case("Beta", dict(alpha=2.0, beta=3.0),
         lambda rng, size, alpha, beta: rng.beta(alpha, beta, size),
         lambda x, alpha, beta: stats.beta.logpdf(x, alpha, beta), np_beta),
    Case("Uniform", dict(lower=-1.0, upper=2.0),
         lambda rng, size, lower, upper: rng.uniform(lower, upper, size),
         lambda x, lower, upper: stats.uniform.logpdf(x, lower, upper - lower), np_uniform),
    Case("Laplace", dict(loc=0.5, scale=2.0),
         lambda rng, size, loc, scale: rng.laplace(loc, scale, size),
         lambda x, loc, scale: stats.laplace.logpdf(x, loc, scale), np_laplace),
    Case("Logistic", dict(loc=0.5, scale=2.0),
         lambda rng, size, loc, scale: rng.logistic(loc, scale, size),
         lambda x, loc, scale: stats.logistic.logpdf(x, loc, scale), np_logistic),
    Case("Gumbel", dict(loc=0.5, scale=2.0),
         lambda rng, size, loc, scale: rng.gumbel(loc, scale, size),
         lambda x, loc, scale: stats.gumbel_r.logpdf(x, loc, scale), np_gumbel),
    Case("Pareto", dict(alpha=3.0, scale=1.5),
         lambda rng, size, alpha, scale: scale * (1.0 + rng.pareto(alpha, size)),
         lambda x, alpha, scale: stats.pareto.logpdf(x, alpha, scale=scale), np_pareto),
    Case("ChiSquared", dict(df=5.0),
         lambda rng, size, df: rng.chisquare(df, size),
         lambda x, df: stats.chi2.logpdf(x, df), np_chi_squared),
    Case("SkewNormal", dict(loc=0.5, scale=2.0, alpha=3.0),
         lambda rng, size, loc, scale, alpha: stats.skewnorm.rvs(alpha, loc, scale, size=size, random_state=rng),
         lambda x, loc, scale, alpha: stats.skewnorm.logpdf(x, alpha, loc, scale), np_skew_normal),
    Case("VonMises", dict(loc=0.5, concentration=2.0),
         lambda rng, size, loc, concentration: rng.vonmises(loc, concentration, size),
         lambda x, loc, concentration: stats.vonmises.logpdf(x, concentration, loc=loc), np_von_mises),
    Case("Rayleigh", dict(scale=1.5),
         lambda rng, size, scale: rng.rayleigh(scale, size),
         lambda x, scale: stats.rayleigh.logpdf(x, scale=scale), np_rayleigh),
    Case("TruncatedNormal", dict(loc=0.5, scale=2.0, lower=-1.0, upper=3.0),
         lambda rng, size, loc, scale, lower, upper: stats.truncnorm.rvs(
             (lower - loc) / scale, (upper - loc) / scale, loc, scale, size=size, random_state=rng),
         lambda x, loc, scale, lower, upper: stats.truncnorm.logpdf(
             x, (lower - loc) / scale, (upper - loc) / scale, loc, scale), np_truncated_normal),
    Case("Bernoulli", dict(p=0.3),
         lambda rng, size, p: (rng.random(size) < p).astype(float),
         lambda x, p: stats.bernoulli.logpmf(x, p), np_bernoulli),
    Case("BernoulliLogit", dict(logit_p=0.4),
         lambda rng, size, logit_p: (rng.random(size) < sp.expit(logit_p)).astype(float),
         lambda x, logit_p: stats.bernoulli.logpmf(x, sp.expit(logit_p)), np_bernoulli_logit),
    Case("Binomial", dict(n=20.0, p=0.3),
         _count(lambda rng, size, n, p: rng.binomial(int(n), p, size)),
         lambda x, n, p: stats.binom.logpmf(x, n, p), np_binomial),
    Case("BinomialLogit", dict(n=20.0, logit_p=-0.5),
         _count(lambda rng, size, n, logit_p: rng.binomial(int(n), sp.expit(logit_p), size)),
         lambda x, n, logit_p: stats.binom.logpmf(x, n, sp.expit(logit_p)), np_binomial_logit),
    Case("Poisson", dict(rate=3.5),
         _count(lambda rng, size, rate: rng.poisson(rate, size)),
         lambda x, rate: stats.poisson.logpmf(x, rate), np_poisson),
    Case("PoissonLog", dict(log_rate=1.2),
         _count(lambda rng, size, log_rate: rng.poisson(math.exp(log_rate), size)),
         lambda x, log_rate: stats.poisson.logpmf(x, math.exp(log_rate)), np_poisson_log),
    Case("NegativeBinomial", dict(mu=4.0, phi=2.5),
         _count(lambda rng, size, mu, phi: rng.negative_binomial(phi, phi / (mu + phi), size)),
         lambda x, mu, phi: stats.nbinom.logpmf(x, phi, phi / (mu + phi)), np_negative_binomial),
    Case("NegativeBinomialLog", dict(log_mu=1.2, phi=2.5),
         _count(lambda rng, size, log_mu, phi: rng.negative_binomial(phi, phi / (math.exp(log_mu) + phi), size)),
         lambda x, log_mu, phi: stats.nbinom.logpmf(x, phi, phi / (math.exp(log_mu) + phi)),
         np_negative_binomial_log),
    Case("Geometric", dict(p=0.3),
         _count(lambda rng, size, p: rng.geometric(p, size) - 1),
         lambda x, p: stats.geom.logpmf(x + 1.0, p), np_geometric),
    Case("BetaBinomial", dict(n=20.0, alpha=2.0, beta=3.0),
         _count(lambda rng, size, n, alpha, beta: rng.binomial(int(n), rng.beta(alpha, beta, size))),
         lambda x, n, alpha, beta: stats.betabinom.logpmf(x, n, alpha, beta), np_beta_binomial),
    Case("ZeroInflatedPoisson", dict(zi=0.2, rate=3.5),
         _count(lambda rng, size, zi, rate: np.where(rng.random(size) < zi, 0, rng.poisson(rate, size))),
         scipy_zero_inflated_poisson, np_zero_inflated_poisson),
]


def check_close(name, what, mine, ref, x, params):
    """Assert ``mine`` matches logdens' ``ref`` to ``RTOL`` relative, naming the worst point.

    The absolute floor ``RTOL * max|ref| * 1e-4`` only covers partials that
    cross zero inside the data, where a relative comparison is meaningless.
    """
    mine = np.broadcast_to(np.asarray(mine, dtype=float), ref.shape)
    floor = RTOL * 1e-4 * float(np.max(np.abs(ref)))
    err = np.abs(mine - ref) / (np.abs(ref) + floor + 1e-300)
    worst = int(np.argmax(err))
    assert np.all(np.isfinite(mine)) and err[worst] <= RTOL, (
        f"{name} {what}: numpy {mine[worst]!r} vs logdens {ref[worst]!r} "
        f"(rel {err[worst]:.2e}) at x={x[worst]!r}, params={params}")


def verify(case, dist, x):
    """Check the scipy value and the numpy value and partials against logdens."""
    lp, grads = dist.logpdf_grad(x)
    check_close(case.name, "value (logpdf_grad vs logpdf)", dist.logpdf(x), lp, x, case.params)
    check_close(case.name, "scipy value", case.scipy(x, **case.params), lp, x, case.params)
    np_lp, np_grads = case.numpy(x, **case.params)
    assert set(np_grads) == set(grads), f"{case.name}: partials {sorted(np_grads)} vs {sorted(grads)}"
    check_close(case.name, "numpy value", np_lp, lp, x, case.params)
    for key in grads:
        check_close(case.name, f"d/d{key}", np_grads[key], grads[key], x, case.params)


def time_calls(calls, min_time):
    """Median wall-clock and CPU seconds of each callable in ``calls``, in interleaved rounds.

    Each callable is called once to warm up (numba compiles on first use) and
    once more to estimate its time. Then every round times each callable once,
    in turn, so that a slow spell of the machine (other processes, frequency
    changes) falls on all four alike; the number of rounds gives about
    ``min_time`` seconds per callable on average, and at least 5. Each call
    is timed by ``time.perf_counter`` (wall clock) and ``time.thread_time``
    (this thread's CPU time, which leaves out the time other processes held
    the core). Returns ``(wall medians, cpu medians)``, dicts by key.
    """
    first = {}
    for key, fn in calls.items():
        fn()
        start = time.perf_counter()
        fn()
        first[key] = time.perf_counter() - start
    mean = sum(first.values()) / len(first)
    rounds = int(min(200, max(5, math.ceil(min_time / max(mean, 1e-9)))))
    wall = {key: [] for key in calls}
    cpu = {key: [] for key in calls}
    for _ in range(rounds):
        for key, fn in calls.items():
            cpu_start, start = time.thread_time(), time.perf_counter()
            fn()
            wall[key].append(time.perf_counter() - start)
            cpu[key].append(time.thread_time() - cpu_start)
    return ({key: statistics.median(t) for key, t in wall.items()},
            {key: statistics.median(t) for key, t in cpu.items()})


def bench(case, n, seed, min_time):
    """Wall-clock and CPU medians (seconds) of the four callables, after checking the baselines."""
    rng = np.random.default_rng(seed)
    x = np.ascontiguousarray(case.draw(rng, n, **case.params), dtype=float)
    dist = getattr(distributions, case.name)(**case.params)
    verify(case, dist, x)
    p = case.params
    return time_calls({
        "grad": lambda: dist.logpdf_grad(x),
        "value": lambda: dist.logpdf(x),
        "scipy": lambda: case.scipy(x, **p),
        "numpy": lambda: case.numpy(x, **p),
    }, min_time)


def pin_one_core():
    """Pin this process to one CPU where the OS allows it; say which."""
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity)"
    core = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return f"pinned to CPU {core}"


def machine(pinned):
    """Lines describing the platform, CPU, library versions and threading."""
    svml = getattr(numba.core.config, "USING_SVML", "unknown")
    return "\n".join([
        f"platform: {platform.platform()}, Python {platform.python_version()}",
        f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs, {pinned})",
        f"numpy {np.__version__}, scipy {scipy.__version__}, numba {numba.__version__} (SVML: {svml})",
        "threads: NUMBA_NUM_THREADS=OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1",
    ])


def table(rows):
    """A markdown table of times (ms) and ratios."""
    lines = ["| distribution | grad ms | value ms | scipy ms | numpy v+g ms "
             "| scipy / grad | numpy / grad | grad / value |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, t in rows:
        ms = {k: 1e3 * v for k, v in t.items()}
        lines.append(f"| {name} | {ms['grad']:.2f} | {ms['value']:.2f} | {ms['scipy']:.2f} "
                     f"| {ms['numpy']:.2f} | {t['scipy'] / t['grad']:.2f} | {t['numpy'] / t['grad']:.2f} "
                     f"| {t['grad'] / t['value']:.2f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=float, default=1e6, help="points per distribution (default 1e6)")
    parser.add_argument("--only", default="", help="comma-separated distribution names (default all)")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds of repeats per entry")
    args = parser.parse_args(argv)
    cases = CASES
    if args.only:
        wanted = args.only.split(",")
        unknown = set(wanted) - {c.name for c in CASES}
        if unknown:
            parser.error(f"unknown distribution(s): {sorted(unknown)}")
        cases = [c for c in CASES if c.name in wanted]
    missing = {d.__name__ for d in distributions.ALL} - {c.name for c in CASES}
    assert not missing, f"no benchmark case for {sorted(missing)}"
    print(machine(pin_one_core()))
    print(f"load average (1, 5, 15 min) at the start: {os.getloadavg()}")
    print(f"N = {int(args.n)}, seed {args.seed}, median of interleaved rounds "
          f"(about {args.min_time} s per entry, at least 5 rounds)\n", flush=True)
    wall_rows, cpu_rows = [], []
    for case in cases:
        wall, cpu = bench(case, int(args.n), args.seed, args.min_time)
        wall_rows.append((case.name, wall))
        cpu_rows.append((case.name, cpu))
        print(f"  {case.name}: checked and timed", flush=True)
    print(f"\nload average (1, 5, 15 min) at the end: {os.getloadavg()}")
    share = sum(sum(t.values()) for _, t in cpu_rows) / sum(sum(t.values()) for _, t in wall_rows)
    print(f"CPU time / wall-clock time over the medians: {100 * share:.0f}% "
          "(below 100%: other processes held this core during the calls)")
    print("\nWall clock (time.perf_counter), median per call:\n")
    print(table(wall_rows))
    print("\nCPU time of this thread (time.thread_time), median per call:\n")
    print(table(cpu_rows))


if __name__ == "__main__":
    main()
