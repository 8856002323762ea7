"""Case rows for the discrete distributions (see ``tests/cases.py``).

References: scipy.stats where its log mass is accurate (small counts and
moderate parameters: scipy's binom, nbinom and betabinom log masses are
differences of ``gammaln``, which lose digits for large counts and shapes),
otherwise the exact formula in mpmath at 50 digits (``mp_ref``), and for the
limits the issue names (NegativeBinomial as phi -> inf) the limiting
distribution with the difference bounded in the row's note.
"""

import math

import mpmath as mp
import numpy as np
from scipy import stats

from case_table import case, scipy_ref
from logdens.distributions.bernoulli import Bernoulli
from logdens.distributions.bernoulli_logit import BernoulliLogit
from logdens.distributions.beta_binomial import BetaBinomial
from logdens.distributions.binomial import Binomial
from logdens.distributions.binomial_logit import BinomialLogit
from logdens.distributions.discrete_uniform import DiscreteUniform
from logdens.distributions.geometric import Geometric
from logdens.distributions.negative_binomial import NegativeBinomial
from logdens.distributions.negative_binomial_log import NegativeBinomialLog
from logdens.distributions.poisson_log import PoissonLog
from logdens.distributions.zero_inflated_poisson import ZeroInflatedPoisson


def mp_ref(log_mass):
    """A reference from ``log_mass(x, **params)`` evaluated in mpmath at 50 digits.

    Arguments arrive as exact ``mpf`` copies of the float64 inputs; the result
    is rounded to float64 once, at the end.
    """
    def reference(x, **params):
        with mp.workdps(50):
            ps = {k: mp.mpf(float(v)) for k, v in params.items()}
            out = [float(log_mass(mp.mpf(float(xi)), **ps)) for xi in np.ravel(x)]
        return np.reshape(out, np.shape(x))
    return reference


def _xlogy(x, y):
    """x log(y) with 0 log(0) = 0, in mpmath."""
    return mp.mpf(0) if x == 0 else x * mp.log(y)


def _log_choose(n, x):
    return mp.loggamma(n + 1) - mp.loggamma(x + 1) - mp.loggamma(n - x + 1)


def _log_sigmoid(t):
    return -mp.log1p(mp.exp(-t))


def _mp_binomial(x, n, p):
    return _log_choose(n, x) + _xlogy(x, p) + _xlogy(n - x, 1 - p)


def _mp_binomial_logit(x, n, logit_p):
    return _log_choose(n, x) + x * _log_sigmoid(logit_p) + (n - x) * _log_sigmoid(-logit_p)


def _mp_poisson_log(x, log_rate):
    return x * log_rate - mp.exp(log_rate) - mp.loggamma(x + 1)


def _mp_negative_binomial(x, mu, phi):
    return (mp.loggamma(x + phi) - mp.loggamma(phi) - mp.loggamma(x + 1)
            + x * mp.log(mu / (mu + phi)) + phi * mp.log(phi / (mu + phi)))


def _mp_beta_binomial(x, n, alpha, beta):
    return _log_choose(n, x) + mp.log(mp.beta(x + alpha, n - x + beta) / mp.beta(alpha, beta))


def _mp_zero_inflated_poisson(x, zi, rate):
    if x == 0:
        return mp.log(zi + (1 - zi) * mp.exp(-rate))
    return mp.log(1 - zi) + x * mp.log(rate) - rate - mp.loggamma(x + 1)


BERNOULLI = scipy_ref(lambda p: stats.bernoulli(p))
BERNOULLI_LOGIT = mp_ref(lambda x, logit_p: _mp_binomial_logit(x, 1, logit_p))
BINOMIAL = scipy_ref(lambda n, p: stats.binom(n, p))
BINOMIAL_MP = mp_ref(_mp_binomial)
BINOMIAL_LOGIT = mp_ref(_mp_binomial_logit)
POISSON_LOG = mp_ref(_mp_poisson_log)
NEGATIVE_BINOMIAL = scipy_ref(lambda mu, phi: stats.nbinom(phi, phi / (mu + phi)))
NEGATIVE_BINOMIAL_MP = mp_ref(_mp_negative_binomial)
NEGATIVE_BINOMIAL_LOG = mp_ref(lambda x, log_mu, phi: _mp_negative_binomial(x, mp.exp(log_mu), phi))
POISSON_LIMIT = scipy_ref(lambda mu, phi: stats.poisson(mu))
POISSON_LOG_LIMIT = scipy_ref(lambda log_mu, phi: stats.poisson(math.exp(log_mu)))
DISCRETE_UNIFORM = scipy_ref(lambda lower, upper: stats.randint(lower, upper + 1))  # randint excludes high
GEOMETRIC = scipy_ref(lambda p: stats.geom(p, loc=-1))  # geom.logpmf(x + 1, p)
BETA_BINOMIAL = scipy_ref(lambda n, alpha, beta: stats.betabinom(n, alpha, beta))
BETA_BINOMIAL_MP = mp_ref(_mp_beta_binomial)
BINOMIAL_HALF_LIMIT = scipy_ref(lambda n, alpha, beta: stats.binom(n, alpha / (alpha + beta)))
ZERO_INFLATED_POISSON = mp_ref(_mp_zero_inflated_poisson)

LOG_1E6 = math.log(1e6)

CASES = [
    case(Bernoulli, [0, 1], BERNOULLI, p=0.3),
    case(Bernoulli, [0, 1], BERNOULLI, p=1e-10, note="tiny p"),
    case(Bernoulli, [0, 1], BERNOULLI, p=1.0 - 2.0**-40, note="p near 1"),
    case(Bernoulli, [0, 1], BERNOULLI, p=0.0, note="p=0 point mass"),
    case(Bernoulli, [0, 1], BERNOULLI, p=1.0, note="p=1 point mass"),

    case(BernoulliLogit, [0, 1], BERNOULLI_LOGIT, logit_p=0.3),
    case(BernoulliLogit, [0, 1], BERNOULLI_LOGIT, logit_p=-4.0),
    case(BernoulliLogit, [0, 1], BERNOULLI_LOGIT, logit_p=30.0, note="1 - p = 1e-13"),
    case(BernoulliLogit, [0, 1], BERNOULLI_LOGIT, logit_p=800.0, note="logit +800"),
    case(BernoulliLogit, [0, 1], BERNOULLI_LOGIT, logit_p=-800.0, note="logit -800"),

    case(Binomial, [0, 1, 3, 7, 10], BINOMIAL, n=10, p=0.3),
    case(Binomial, [0], BINOMIAL, n=0, p=0.4, note="n=0"),
    case(Binomial, [0, 1, 20], BINOMIAL, n=20, p=0.0, note="p=0 point mass"),
    case(Binomial, [0, 19, 20], BINOMIAL, n=20, p=1.0, note="p=1 point mass"),
    case(Binomial, [0, 1, 5, 50, 1000], BINOMIAL_MP, n=1000, p=1e-4, note="tail"),
    case(Binomial, [0, 1, 3, 10], BINOMIAL_MP, n=1e15, p=1e-15, note="huge n, Poisson regime"),
    case(Binomial, [0, 499_000, 500_000, 501_500], BINOMIAL_MP, rtol=1e-10, n=1e6, p=0.5,
         note="huge n at the mode: lchoose and the p-summand are each ~7e5 and cancel to ~-7.4; "
              "stored as separate summands, each is rounded alone: eps * 7e5 / 7.4 ~ 2e-11 "
              "relative "
              "(seen: 1.9e-11; scipy's gammaln form rounds the same way)"),

    case(BinomialLogit, [0, 1, 5, 10], BINOMIAL_LOGIT, n=10, logit_p=0.3),
    case(BinomialLogit, [0, 1, 100], BINOMIAL_LOGIT, n=100, logit_p=-5.0),
    case(BinomialLogit, [0, 9, 10], BINOMIAL_LOGIT, n=10, logit_p=800.0, note="logit +800"),
    case(BinomialLogit, [0, 1, 10], BINOMIAL_LOGIT, n=10, logit_p=-800.0, note="logit -800"),

    case(PoissonLog, [0, 1, 3, 10, 30], POISSON_LOG, log_rate=1.2),
    case(PoissonLog, [0, 1, 5], POISSON_LOG, log_rate=-30.0, note="tiny rate"),
    case(PoissonLog, [0, 1, 2], POISSON_LOG, log_rate=-700.0, note="log_rate -700"),
    case(PoissonLog, [0, 1, 1000], POISSON_LOG, log_rate=700.0, note="log_rate 700"),
    case(PoissonLog, [0, 999_000, 1_000_000, 1_003_000], POISSON_LOG, rtol=5e-10, log_rate=LOG_1E6,
         note="huge rate at the mode: x log_rate ~ lgamma(x + 1) ~ 1.3e7 cancel to ~-8; "
              "the two summands are rounded separately, half an ulp of 1.3e7 each: "
              "1.9e-9 / 7.8 ~ 2.4e-10 relative (seen: 8.7e-11; the Poisson row passes "
              "against scipy only because scipy rounds the same terms alike)"),

    case(NegativeBinomial, [0, 1, 3, 10, 40], NEGATIVE_BINOMIAL, mu=3.0, phi=2.0),
    case(NegativeBinomial, [0, 1, 5, 100], NEGATIVE_BINOMIAL_MP, mu=0.01, phi=1e-3,
         note="tiny phi"),
    case(NegativeBinomial, [0, 1, 2], NEGATIVE_BINOMIAL_MP, mu=1e-8, phi=3.0, note="tiny mu"),
    case(NegativeBinomial, [0, 1, 30, 150], NEGATIVE_BINOMIAL_MP, mu=40.0, phi=25.0),
    case(NegativeBinomial, [0, 1, 100, 2000], NEGATIVE_BINOMIAL_MP, mu=1e4, phi=1e3,
         note="large mu"),
    case(NegativeBinomial, [0, 1, 1000], NEGATIVE_BINOMIAL_MP, mu=1e8, phi=0.5, note="huge mu"),
    case(NegativeBinomial, [0, 1, 5, 20], NEGATIVE_BINOMIAL_MP, mu=5.0, phi=1e8, note="phi 1e8"),
    case(NegativeBinomial, [0, 1, 5, 20], NEGATIVE_BINOMIAL_MP, mu=5.0, phi=1e12, note="phi 1e12"),
    case(NegativeBinomial, [0, 1, 5, 20], POISSON_LIMIT, rtol=1e-11, mu=5.0, phi=1e12,
         note="Poisson limit: log NB - log Poisson = -((x - mu)^2 - x) / (2 phi) + O(phi^-2), "
              "largest at x = 20: 1.0e-10 absolute against lp = -15.2, 6.8e-12 relative"),

    case(NegativeBinomialLog, [0, 1, 3, 10, 40], NEGATIVE_BINOMIAL_LOG, log_mu=1.1, phi=2.0),
    case(NegativeBinomialLog, [0, 1, 5, 100], NEGATIVE_BINOMIAL_LOG, log_mu=-4.6, phi=1e-3,
         note="tiny phi"),
    case(NegativeBinomialLog, [0, 1, 1000], NEGATIVE_BINOMIAL_LOG, log_mu=800.0, phi=1.5,
         note="log_mu +800"),
    case(NegativeBinomialLog, [0, 1, 3], NEGATIVE_BINOMIAL_LOG, log_mu=-800.0, phi=2.0,
         note="log_mu -800"),
    case(NegativeBinomialLog, [0, 1, 5, 20], NEGATIVE_BINOMIAL_LOG, log_mu=math.log(5.0), phi=1e12,
         note="phi 1e12"),
    case(NegativeBinomialLog, [0, 1, 5, 20], POISSON_LOG_LIMIT, rtol=1e-11, log_mu=math.log(5.0),
         phi=1e12, note="Poisson limit, as for NegativeBinomial"),

    case(DiscreteUniform, [0, 1, 7, 110], DISCRETE_UNIFORM, lower=0, upper=110),
    case(DiscreteUniform, [-5, -3, 2], DISCRETE_UNIFORM, lower=-5, upper=2, note="negative lower"),
    case(DiscreteUniform, [4], DISCRETE_UNIFORM, lower=4, upper=4, note="one value"),
    case(DiscreteUniform, [1851, 1900, 1961], DISCRETE_UNIFORM, lower=1851, upper=1961, note="years"),

    case(Geometric, [0, 1, 5, 50], GEOMETRIC, p=0.3),
    case(Geometric, [0, 1, 1e8, 1e9], GEOMETRIC, p=1e-8, note="tiny p, tail"),
    case(Geometric, [0, 1, 10], GEOMETRIC, p=1.0 - 1e-6, note="p near 1"),
    case(Geometric, [0, 1, 5], GEOMETRIC, p=1.0, note="p=1 point mass"),

    case(BetaBinomial, [0, 1, 5, 10], BETA_BINOMIAL, n=10, alpha=2.0, beta=3.0),
    case(BetaBinomial, [0], BETA_BINOMIAL, n=0, alpha=2.0, beta=2.0, note="n=0"),
    case(BetaBinomial, [0, 1, 5, 10], BETA_BINOMIAL_MP, n=10, alpha=1e-3, beta=1e-3,
         note="shapes 1e-3"),
    case(BetaBinomial, [0, 17, 50], BETA_BINOMIAL_MP, n=50, alpha=1e4, beta=2e4, note="shapes 1e4"),
    case(BetaBinomial, [0, 10, 20], BETA_BINOMIAL_MP, n=20, alpha=1e10, beta=1e10,
         note="shapes 1e10"),
    case(BetaBinomial, [0, 10, 20], BINOMIAL_HALF_LIMIT, rtol=1e-9, n=20, alpha=1e10, beta=1e10,
         note="binomial limit: log BB - log Binomial = x(x-1)/(2 alpha) + (n-x)(n-x-1)/(2 beta) "
              "- n(n-1)/(2(alpha+beta)) + ..., largest at x = 0, 20: 9.5e-9 against lp = -13.9, "
              "6.9e-10 relative"),

    case(ZeroInflatedPoisson, [0, 1, 2, 10], ZERO_INFLATED_POISSON, zi=0.2, rate=3.0),
    case(ZeroInflatedPoisson, [0, 1, 5], ZERO_INFLATED_POISSON, zi=0.0, rate=3.0, note="zi=0"),
    case(ZeroInflatedPoisson, [0, 1, 2], ZERO_INFLATED_POISSON, zi=1.0, rate=3.0, note="zi=1"),
    case(ZeroInflatedPoisson, [0, 1, 2], ZERO_INFLATED_POISSON, zi=0.3, rate=1e-10,
         note="tiny rate"),
    case(ZeroInflatedPoisson, [0, 1, 50], ZERO_INFLATED_POISSON, zi=1e-6, rate=50.0,
         note="zero mass from both parts"),
    case(ZeroInflatedPoisson, [0, 800], ZERO_INFLATED_POISSON, zi=1e-300, rate=800.0,
         note="exp(-rate) underflows"),
    case(ZeroInflatedPoisson, [0, 1, 20], ZERO_INFLATED_POISSON, zi=0.999, rate=20.0,
         note="zi near 1"),
]

INVALID = [
    (Bernoulli, dict(p=-0.1), "p"),
    (Bernoulli, dict(p=1.5), "p"),
    (Binomial, dict(n=-1.0, p=0.3), "n"),
    (Binomial, dict(n=2.5, p=0.3), "n"),
    (Binomial, dict(n=10.0, p=-0.1), "p"),
    (Binomial, dict(n=10.0, p=1.1), "p"),
    (BinomialLogit, dict(n=-2.0, logit_p=0.3), "n"),
    (BinomialLogit, dict(n=0.5, logit_p=0.3), "n"),
    (NegativeBinomial, dict(mu=0.0, phi=2.0), "mu"),
    (NegativeBinomial, dict(mu=-1.0, phi=2.0), "mu"),
    (NegativeBinomial, dict(mu=3.0, phi=0.0), "phi"),
    (NegativeBinomial, dict(mu=3.0, phi=-2.0), "phi"),
    (NegativeBinomialLog, dict(log_mu=1.1, phi=0.0), "phi"),
    (NegativeBinomialLog, dict(log_mu=1.1, phi=-1.0), "phi"),
    (DiscreteUniform, dict(lower=0.5, upper=3.0), "lower"),
    (DiscreteUniform, dict(lower=0.0, upper=2.5), "upper"),
    (DiscreteUniform, dict(lower=3.0, upper=2.0), "upper"),
    (Geometric, dict(p=0.0), "p"),
    (Geometric, dict(p=-0.5), "p"),
    (Geometric, dict(p=1.5), "p"),
    (BetaBinomial, dict(n=-1.0, alpha=2.0, beta=3.0), "n"),
    (BetaBinomial, dict(n=1.5, alpha=2.0, beta=3.0), "n"),
    (BetaBinomial, dict(n=10.0, alpha=0.0, beta=3.0), "alpha"),
    (BetaBinomial, dict(n=10.0, alpha=2.0, beta=-1.0), "beta"),
    (ZeroInflatedPoisson, dict(zi=-0.1, rate=3.0), "zi"),
    (ZeroInflatedPoisson, dict(zi=1.1, rate=3.0), "zi"),
    (ZeroInflatedPoisson, dict(zi=0.2, rate=0.0), "rate"),
    (ZeroInflatedPoisson, dict(zi=0.2, rate=-1.0), "rate"),
]
