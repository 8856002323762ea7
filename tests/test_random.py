"""Tests of the distributions' random draws (``rvs``) and of ``distributions.random``.

Every distribution is drawn at a few parameter points, extreme ones included
(tiny and huge shapes, rates 1e-3 and 1e4, n = 1e6, p near 0 and 1, deep
truncation tails), N = 20,000 draws each at a fixed seed, and compared with
scipy.stats:

- continuous: the Kolmogorov-Smirnov test against scipy's cdf, rejected when
  p < 1e-4 (with a fixed seed each test is deterministic; at alpha = 1e-4
  over the ~80 checks a correct sampler fails one about 1% of seeds);
- discrete: a chi-square test over about 40 bins of equal reference mass
  (cut at scipy's ppf, so every bin expects >= 5 draws), rejected when
  p < 1e-4;
- both: sample mean and variance within 5 standard errors of scipy's
  (SE of the mean sd / sqrt(N), of the variance sd^2 sqrt((kurtosis + 2) / N)),
  where the kurtosis is finite.
"""

import math

import numpy as np
import pytest
from scipy import special, stats

import logdens as ld
from logdens.distributions import normal, random
from logdens.samplers import rng as sampler_rng

N = 20_000
ALPHA = 1e-4
N_SE = 5.0


class _Custom:
    """A reference with only what the checks use, for laws scipy lacks."""

    def __init__(self, cdf, ppf=None, moments=(np.nan,) * 3):
        self.cdf, self.ppf, self._moments = cdf, ppf, moments

    def stats(self, moments):
        return self._moments


def _half_t(df, scale):
    t = stats.t(df, 0, scale)
    return _Custom(lambda x: np.clip(2.0 * t.cdf(x) - 1.0, 0.0, 1.0))


def _zip(zi, rate):
    p = stats.poisson(rate)
    p0 = zi + (1 - zi) * p.pmf(0)
    mean = (1 - zi) * rate
    var = mean * (1 + zi * rate)
    return _Custom(lambda x: np.where(x < 0, 0.0, zi + (1 - zi) * p.cdf(x)),
                   lambda q: np.where(q <= p0, 0.0, p.ppf((q - zi) / (1 - zi))),
                   (mean, var, np.nan))


def _tabulated(ref, n):
    """``ref`` (discrete on 0..n) with cdf and ppf from its cumulated pmf: scipy's
    betabinom ppf takes a minute at n = 1e6."""
    cum = np.cumsum(ref.pmf(np.arange(n + 1)))
    cum /= cum[-1]
    return _Custom(lambda x: np.where(np.asarray(x) < 0, 0.0, cum[np.clip(np.floor(x), 0, n).astype(int)]),
                   lambda q: np.searchsorted(cum, q).astype(float), ref.stats(moments="mvk"))


def _from_pmf(pmf, n):
    """The discrete law on 0..n with masses ``pmf(k)`` (zero-inflated and hurdle
    counts, from scipy's pmfs): cdf, ppf and moments from the table."""
    k = np.arange(n + 1)
    mass = pmf(k)
    cum = np.cumsum(mass)
    mean = float(np.sum(k * mass))
    var = float(np.sum((k - mean) ** 2 * mass))
    return _Custom(lambda x: np.where(np.asarray(x) < 0, 0.0, cum[np.clip(np.floor(x), 0, n).astype(int)]),
                   lambda q: np.searchsorted(cum, q).astype(float), (mean, var, np.nan))


def _zinb(zi, mu, phi, n=2000):
    return _from_pmf(lambda k: zi * (k == 0) + (1 - zi) * _nbinom(mu, phi).pmf(k), n)


def _hurdle(psi, counts, n=2000):
    return _from_pmf(lambda k: np.where(k == 0, 1 - psi, psi * counts.pmf(k) / counts.sf(0)), n)


def _poisson_normal(rate):
    """Poisson(rate) for a huge rate as the normal with continuity correction (the
    skewness 1 / sqrt(rate) moves the cdf by ~1e-7 at 1e12), whose ppf scipy
    computes there (poisson's gives NaN at 1e12)."""
    norm = stats.norm(rate, math.sqrt(rate))
    return _Custom(lambda x: norm.cdf(np.floor(x) + 0.5), lambda q: np.floor(norm.ppf(q)),
                   (rate, rate, 1.0 / rate))


def _truncnorm(loc, scale, lower, upper):
    return stats.truncnorm((lower - loc) / scale, (upper - loc) / scale, loc, scale)


def _nbinom(mu, phi):
    return stats.nbinom(phi, phi / (mu + phi))


CONTINUOUS = [
    (ld.Normal(1.5, 2.0), stats.norm(1.5, 2.0)),
    (ld.Normal(-1e6, 1e-6), stats.norm(-1e6, 1e-6)),
    (ld.HalfNormal(2.0), stats.halfnorm(scale=2.0)),
    (ld.LogNormal(0.5, 0.3), stats.lognorm(0.3, scale=math.exp(0.5))),
    (ld.LogNormal(0.0, 3.0), stats.lognorm(3.0)),
    (ld.Exponential(1e-3), stats.expon(scale=1e3)),
    (ld.Exponential(1e4), stats.expon(scale=1e-4)),
    (ld.Gamma(2.5, 1.5), stats.gamma(2.5, scale=1 / 1.5)),
    (ld.Gamma(0.05, 1.0), stats.gamma(0.05)),
    (ld.Gamma(1e6, 1e4), stats.gamma(1e6, scale=1e-4)),
    (ld.InverseGamma(3.0, 2.0), stats.invgamma(3.0, scale=2.0)),
    (ld.InverseGamma(0.5, 1.0), stats.invgamma(0.5)),
    (ld.ChiSquared(3.0), stats.chi2(3.0)),
    (ld.ChiSquared(0.2), stats.chi2(0.2)),
    (ld.Beta(2.0, 5.0), stats.beta(2.0, 5.0)),
    (ld.Beta(0.2, 0.2), stats.beta(0.2, 0.2)),  # below 0.2, ties at 1.0 - 2**-53 rounding to 1.0 fail KS
    (ld.Beta(1e4, 2e4), stats.beta(1e4, 2e4)),
    (ld.Uniform(-2.0, 3.0), stats.uniform(-2.0, 5.0)),
    (ld.Cauchy(1.0, 2.0), stats.cauchy(1.0, 2.0)),
    (ld.HalfCauchy(3.0), stats.halfcauchy(scale=3.0)),
    (ld.Laplace(1.0, 0.5), stats.laplace(1.0, 0.5)),
    (ld.Logistic(-1.0, 2.0), stats.logistic(-1.0, 2.0)),
    (ld.Gumbel(2.0, 3.0), stats.gumbel_r(2.0, 3.0)),
    (ld.Pareto(3.0, 2.0), stats.pareto(3.0, scale=2.0)),
    (ld.Pareto(0.5, 1.0), stats.pareto(0.5)),
    (ld.Rayleigh(2.0), stats.rayleigh(scale=2.0)),
    (ld.Weibull(1.5, 2.0), stats.weibull_min(1.5, scale=2.0)),
    (ld.Weibull(0.2, 1.0), stats.weibull_min(0.2)),
    (ld.StudentT(4.0, 1.0, 2.0), stats.t(4.0, 1.0, 2.0)),
    (ld.StudentT(0.3, 0.0, 1.0), stats.t(0.3)),
    (ld.StudentT(1e8, 0.0, 1.0), stats.t(1e8)),
    (ld.HalfStudentT(3.0, 2.0), _half_t(3.0, 2.0)),
    (ld.SkewNormal(1.0, 2.0, 4.0), stats.skewnorm(4.0, 1.0, 2.0)),
    (ld.SkewNormal(0.0, 1.0, -1e6), stats.skewnorm(-1e6)),
    (ld.VonMises(0.5, 2.0), stats.vonmises(2.0, 0.5)),
    (ld.VonMises(0.0, 1e-3), stats.vonmises(1e-3)),
    (ld.VonMises(3.0, 1e4), stats.vonmises(1e4, 3.0)),  # wraps around pi
    (ld.TruncatedNormal(0.0, 1.0, -1.0, 2.0), _truncnorm(0.0, 1.0, -1.0, 2.0)),
    (ld.TruncatedNormal(1.0, 2.0, -30.0, 40.0), _truncnorm(1.0, 2.0, -30.0, 40.0)),
    (ld.TruncatedNormal(0.0, 1.0, -0.1, 0.1), _truncnorm(0.0, 1.0, -0.1, 0.1)),
    (ld.TruncatedNormal(0.0, 1.0, 8.0, 9.0), _truncnorm(0.0, 1.0, 8.0, 9.0)),
    (ld.TruncatedNormal(0.0, 1.0, -9.0, -8.0), _truncnorm(0.0, 1.0, -9.0, -8.0)),
    (ld.TruncatedNormal(0.0, 1.0, 3.0, 3.05), _truncnorm(0.0, 1.0, 3.0, 3.05)),
    (ld.TruncatedNormal(0.0, 1.0, 0.5, 1e3), _truncnorm(0.0, 1.0, 0.5, 1e3)),
    (ld.TruncatedNormal(1.0, 2.0, 0.0, np.inf), _truncnorm(1.0, 2.0, 0.0, np.inf)),
    (ld.TruncatedNormal(0.0, 1.0, -np.inf, -6.0), _truncnorm(0.0, 1.0, -np.inf, -6.0)),
    (ld.TruncatedNormal(0.5, 1.0, -np.inf, np.inf), _truncnorm(0.5, 1.0, -np.inf, np.inf)),
]

DISCRETE = [
    (ld.Bernoulli(0.3), stats.bernoulli(0.3)),
    (ld.Bernoulli(1e-3), stats.bernoulli(1e-3)),
    (ld.BernoulliLogit(-2.0), stats.bernoulli(special.expit(-2.0))),
    (ld.BernoulliLogit(8.0), stats.bernoulli(special.expit(8.0))),
    (ld.Binomial(20, 0.3), stats.binom(20, 0.3)),
    (ld.Binomial(1e6, 0.3), stats.binom(10**6, 0.3)),
    (ld.Binomial(1e6, 1e-6), stats.binom(10**6, 1e-6)),
    (ld.Binomial(100, 1 - 1e-3), stats.binom(100, 1 - 1e-3)),
    (ld.Binomial(50, 0.5), stats.binom(50, 0.5)),
    (ld.BinomialLogit(30, 0.4), stats.binom(30, special.expit(0.4))),
    (ld.BinomialLogit(1e6, 12.0), stats.binom(10**6, special.expit(12.0))),
    (ld.Poisson(3.5), stats.poisson(3.5)),
    (ld.Poisson(1e-3), stats.poisson(1e-3)),
    (ld.Poisson(9.99), stats.poisson(9.99)),
    (ld.Poisson(1e4), stats.poisson(1e4)),
    (ld.Poisson(1e12), _poisson_normal(1e12)),
    (ld.PoissonLog(2.0), stats.poisson(math.exp(2.0))),
    (ld.PoissonLog(-8.0), stats.poisson(math.exp(-8.0))),
    (ld.NegativeBinomial(5.0, 2.0), _nbinom(5.0, 2.0)),
    (ld.NegativeBinomial(1e3, 1e-2), _nbinom(1e3, 1e-2)),
    (ld.NegativeBinomial(10.0, 1e12), _nbinom(10.0, 1e12)),
    (ld.NegativeBinomialLog(1.0, 3.0), _nbinom(math.exp(1.0), 3.0)),
    (ld.DiscreteUniform(0, 110), stats.randint(0, 111)),
    (ld.DiscreteUniform(-3, 4), stats.randint(-3, 5)),
    (ld.Geometric(0.3), stats.geom(0.3, loc=-1)),
    (ld.Geometric(1e-6), stats.geom(1e-6, loc=-1)),
    (ld.Geometric(0.999), stats.geom(0.999, loc=-1)),
    (ld.BetaBinomial(20, 2.0, 3.0), stats.betabinom(20, 2.0, 3.0)),
    (ld.BetaBinomial(1e6, 0.5, 0.5), _tabulated(stats.betabinom(10**6, 0.5, 0.5), 10**6)),
    (ld.ZeroInflatedPoisson(0.3, 4.0), _zip(0.3, 4.0)),
    (ld.ZeroInflatedPoisson(0.9, 1e4), _zip(0.9, 1e4)),
    (ld.ZeroInflatedNegativeBinomial(0.3, 4.0, 2.0), _zinb(0.3, 4.0, 2.0)),
    (ld.HurdlePoisson(0.6, 3.0), _hurdle(0.6, stats.poisson(3.0))),
    (ld.HurdlePoisson(0.8, 0.05), _hurdle(0.8, stats.poisson(0.05))),
    (ld.HurdleNegativeBinomial(0.7, 5.0, 1.5), _hurdle(0.7, _nbinom(5.0, 1.5))),
    (ld.HurdleNegativeBinomial(0.5, 0.1, 0.01), _hurdle(0.5, _nbinom(0.1, 0.01), n=200000)),
]


def _id(case):
    return repr(case[0])


def test_every_distribution_has_a_case():
    covered = {type(d) for d, _ in CONTINUOUS + DISCRETE}
    assert covered == set(ld.ALL)


def _check_moments(x, ref):
    mean, var, kurtosis = (float(v) for v in ref.stats(moments="mvk"))
    if np.isfinite(mean) and np.isfinite(var):
        assert abs(x.mean() - mean) <= N_SE * math.sqrt(var / N), (x.mean(), mean)
    if np.isfinite(var) and np.isfinite(kurtosis):
        se = var * math.sqrt((kurtosis + 2.0) / N)
        assert abs(x.var(ddof=1) - var) <= N_SE * se, (x.var(ddof=1), var)


def _wrapped(dist, x):
    """VonMises draws relative to loc, wrapped into [-pi, pi) (scipy's vonmises is not wrapped)."""
    if isinstance(dist, ld.VonMises):
        loc = float(dist.params["loc"])
        return np.mod(x - loc + np.pi, 2 * np.pi) - np.pi + loc
    return x


@pytest.mark.parametrize("case", CONTINUOUS, ids=_id)
def test_continuous_draws_follow_the_law(case):
    dist, ref = case
    x = dist.rvs(size=N, seed=11)
    assert x.shape == (N,) and x.dtype == np.float64 and np.all(np.isfinite(x))
    assert np.all(dist.logpdf(x[:200]) > -np.inf) or isinstance(dist, (ld.Beta, ld.Gamma))
    x = _wrapped(dist, x)
    assert stats.kstest(x, ref.cdf).pvalue >= ALPHA
    _check_moments(x, ref)


def _binned_chi2_pvalue(x, ref, bins=40):
    """Chi-square test over bins of about equal reference mass, cut at ``ref.ppf``."""
    cuts = np.unique(ref.ppf(np.linspace(0, 1, bins + 1)[1:-1]))  # bin k: (cuts[k-1], cuts[k]]
    cuts = np.concatenate(([cuts[0] - 1], cuts))  # the lowest point apart (Bernoulli(0.9997)'s 0)
    cdf = np.concatenate(([0.0], ref.cdf(cuts), [1.0]))
    expected = N * np.diff(cdf)
    observed = np.bincount(np.searchsorted(cuts, x, side="left"), minlength=len(expected))
    keep = expected > 0
    assert observed[~keep].sum() == 0, "draws where the reference has no mass"
    return stats.chisquare(observed[keep], expected[keep] * observed.sum() / expected[keep].sum()).pvalue


@pytest.mark.parametrize("case", DISCRETE, ids=_id)
def test_discrete_draws_follow_the_law(case):
    dist, ref = case
    x = dist.rvs(size=N, seed=11)
    assert x.shape == (N,) and x.dtype == np.int64
    assert np.all(dist.logpdf(x) > -np.inf)
    if np.unique(x).size > 1:
        assert _binned_chi2_pvalue(x, ref) >= ALPHA
    else:  # a point mass in N draws (Poisson(1e-3) draws 0 with p = 0.98): its chance
        assert ref.cdf(x[0]) - ref.cdf(x[0] - 1) > 0.9
    _check_moments(x.astype(float), ref)


def test_a_wrong_law_is_rejected():
    """The checks can fail: Gamma(2.5) draws against Gamma(2.6), Poisson(1e4) against
    Poisson(1.002e4) (two standard errors of a single draw apart)."""
    x = ld.Gamma(2.5, 1.0).rvs(size=N, seed=11)
    assert stats.kstest(x, stats.gamma(2.6).cdf).pvalue < ALPHA
    k = ld.Poisson(1e4).rvs(size=N, seed=11)
    assert _binned_chi2_pvalue(k, stats.poisson(1.002e4)) < ALPHA


def test_parameters_broadcast_like_numpy():
    d = ld.Normal(np.array([0.0, 100.0, -100.0]), np.array([[1.0], [2.0]]))
    x = d.rvs(seed=0)
    assert x.shape == (2, 3)
    assert np.all(np.abs(x - np.array([0.0, 100.0, -100.0])) < 20.0)
    assert d.rvs(size=(4, 2, 3), seed=0).shape == (4, 2, 3)
    assert ld.Poisson([1.0, 1e4]).rvs(size=(1000, 2), seed=0).mean(axis=0)[1] > 9e3
    with pytest.raises(ValueError, match=r"Normal.rvs: size=\(5,\) does not fit"):
        d.rvs(size=5)
    assert np.ndim(ld.Gamma(2.0, 1.0).rvs(seed=1)) == 0


def test_same_seed_same_draws_and_draws_depend_only_on_the_seed():
    d = ld.StudentT(3.0, 0.0, 1.0)
    a, b, c = d.rvs(size=500, seed=5), d.rvs(size=500, seed=5), d.rvs(size=500, seed=6)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # draws come in C order from one stream: the shape does not change them
    x = ld.Normal(0.0, 1.0).rvs(size=12, seed=7)
    np.testing.assert_array_equal(ld.Normal(0.0, 1.0).rvs(size=(3, 4), seed=7).ravel(), x)
    # the same as the scalar kernel run from Python on a stream seeded alike
    state = random.make_state(7)
    assert float(normal.rvs(state, 0.0, 1.0)) == pytest.approx(x[0], rel=1e-12)
    assert not np.array_equal(ld.Normal(0, 1).rvs(size=3), ld.Normal(0, 1).rvs(size=3))  # seed=None: fresh


def test_invalid_parameters_and_seeds_raise():
    with pytest.raises(ld.InvalidArgumentError, match=r"Gamma: rate\[1\]=-1.0, must be > 0"):
        ld.Gamma(2.0, [1.0, -1.0]).rvs(seed=0)
    with pytest.raises(TypeError, match="seed=-1, must be a non-negative int"):
        ld.Normal(0, 1).rvs(seed=-1)
    with pytest.raises(TypeError, match="seed=1.5"):
        ld.Normal(0, 1).rvs(seed=1.5)
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    with pytest.raises(TypeError, match="parameters are model expressions"):
        ld.Normal(mu, 1.0).rvs(seed=0)


def test_one_generator_for_samplers_and_distributions():
    """samplers.rng is distributions.random under the samplers' compile policy."""
    a, b = random.make_state(3, 1), sampler_rng.make_state(3, 1)
    np.testing.assert_array_equal(a, b)
    assert [int(sampler_rng.next_uint64(b)) for _ in range(3)] == \
        [int(x) for x in _python_stream(a, 3)]


def _python_stream(state, n):
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps, as in compiled code
        return [random.next_uint64(state) for _ in range(n)]
