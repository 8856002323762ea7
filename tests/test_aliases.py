"""PyMC's and NumPyro's keyword spellings (``distributions.aliases``).

Every spelling of the table is one row here: the distribution built with
that spelling against scipy with the other library's meaning written out
by hand (independently of the table's conversions), or against the
canonical spelling where scipy has no such distribution. The registry is
walked so a new distribution without a table entry, or a spelling without
a row, fails.

Tolerance: rtol 1e-12 where the spelling renames a keyword (the same
numbers reach the same kernel); 1e-10 where it converts, since the
conversion rounds the parameters by a few ulps and the log density
amplifies that by its condition number (at most ~1e2 at these points).
"""

from typing import Callable, NamedTuple

import numpy as np
import pytest
from scipy import special, stats

import logdens as ld
from logdens.distributions import ALL, MULTIVARIATE
from logdens.distributions.aliases import ALIASES
from logdens.distributions.frozen import InvalidArgumentError

COUNTS = np.array([0, 1, 2, 5, 9])
REALS = np.array([-2.5, -0.3, 0.0, 0.8, 3.0])
POSITIVE = np.array([0.05, 0.4, 1.0, 2.2, 6.0])
UNIT = np.array([0.05, 0.3, 0.5, 0.9])


class Row(NamedTuple):
    dist: type
    kwargs: dict
    x: object
    reference: Callable  # reference(x) -> log density
    converted: bool = False


def row(dist, kwargs, x, frozen=None, reference=None, converted=False):
    """A row against a scipy distribution ``frozen`` or a function ``reference``."""
    if frozen is not None:
        reference = frozen.logpmf if hasattr(frozen, "logpmf") else frozen.logpdf
    return Row(dist, kwargs, x, reference, converted)


def same_as(dist, **canonical):
    """The canonical spelling as the reference, where scipy has none."""
    return dist(**canonical).logpdf


def zero_inflated(p_other, base):
    """A zero-inflated count whose non-structural part has probability ``p_other``."""
    return lambda x: np.where(x == 0, np.log(1 - p_other + p_other * base.pmf(0)),
                              np.log(p_other) + base.logpmf(x))


def hurdle(psi, base):
    """A hurdle count that is non-zero with probability ``psi`` (PyMC's meaning)."""
    return lambda x: np.where(x == 0, np.log1p(-psi), np.log(psi) + base.logpmf(x) - base.logsf(0))


def mv_rows():
    x2 = np.array([[0.3, -1.2], [1.5, 0.2]])
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    chol = np.linalg.cholesky(cov)
    mvn = stats.multivariate_normal(np.array([0.5, -0.5]), cov)
    mvt = stats.multivariate_t(np.array([0.5, -0.5]), cov, df=4.0)
    p = np.array([0.2, 0.5, 0.3])
    r = 0.35
    corr = np.array([[1.0, r], [r, 1.0]])
    series = np.array([0.2, -0.4, 0.9, 0.5])
    return [
        row(ld.MvNormal, dict(mu=np.array([0.5, -0.5]), chol=chol), x2, mvn),
        row(ld.MvNormal, dict(mu=np.array([0.5, -0.5]), tau=np.linalg.inv(cov)), x2, mvn, converted=True),
        row(ld.MvNormal, dict(loc=np.array([0.5, -0.5]), covariance_matrix=cov), x2, mvn),
        row(ld.MvNormal, dict(loc=np.array([0.5, -0.5]), precision_matrix=np.linalg.inv(cov)), x2, mvn,
            converted=True),
        row(ld.MvStudentT, dict(nu=4.0, mu=np.array([0.5, -0.5]), chol=chol), x2, mvt),
        row(ld.MvStudentT, dict(nu=4.0, mu=np.array([0.5, -0.5]), Sigma=cov), x2, mvt, converted=True),
        row(ld.MvStudentT, dict(nu=4.0, mu=np.array([0.5, -0.5]), scale=cov), x2, mvt, converted=True),
        row(ld.MvStudentT, dict(nu=4.0, mu=np.array([0.5, -0.5]), tau=np.linalg.inv(cov)), x2, mvt, converted=True),
        row(ld.Categorical, dict(probs=p), np.array([0, 1, 2]), reference=lambda x: np.log(p[x])),
        row(ld.CategoricalLogit, dict(logit_p=np.log(p) + 1.0), np.array([0, 1, 2]),
            reference=lambda x: np.log(p[x])),
        row(ld.Dirichlet, dict(a=np.array([2.0, 3.0, 1.5])), p, stats.dirichlet([2.0, 3.0, 1.5])),
        row(ld.Dirichlet, dict(concentration=np.array([2.0, 3.0, 1.5])), p, stats.dirichlet([2.0, 3.0, 1.5])),
        row(ld.DirichletMultinomial, dict(n=6, a=np.array([2.0, 3.0, 1.5])), np.array([1, 3, 2]),
            stats.dirichlet_multinomial([2.0, 3.0, 1.5], 6)),
        row(ld.DirichletMultinomial, dict(total_count=6, concentration=np.array([2.0, 3.0, 1.5])),
            np.array([1, 3, 2]), stats.dirichlet_multinomial([2.0, 3.0, 1.5], 6)),
        row(ld.Multinomial, dict(total_count=6, probs=p), np.array([1, 3, 2]), stats.multinomial(6, p)),
        # LKJ of d = 2: the correlation r has density Beta(eta, eta) on (-1, 1) (lkj_corr's docstring)
        row(ld.LKJCorr, dict(n=2, eta=2.5), corr, reference=lambda x: stats.beta(2.5, 2.5, loc=-1, scale=2)
            .logpdf(x[0, 1])),
        row(ld.LKJCorr, dict(dimension=2, concentration=2.5), corr,
            reference=lambda x: stats.beta(2.5, 2.5, loc=-1, scale=2).logpdf(x[0, 1])),
        row(ld.LKJCholesky, dict(n=2, eta=2.5), np.linalg.cholesky(corr),
            reference=same_as(ld.LKJCholesky, dim=2, concentration=2.5)),
        row(ld.LKJCholesky, dict(dimension=2, concentration=2.5), np.linalg.cholesky(corr),
            reference=same_as(ld.LKJCholesky, dim=2, concentration=2.5)),
        row(ld.OrderedLogistic, dict(predictor=0.4, cutpoints=np.array([-1.0, 0.5])), np.array([0, 1, 2]),
            reference=lambda x: np.log(np.diff(np.concatenate([[0.0], special.expit(
                np.array([-1.0, 0.5]) - 0.4), [1.0]]))[x])),
        row(ld.ZeroSumNormal, dict(scale=1.5), np.array([0.5, -0.2, -0.3]),
            reference=lambda x: stats.norm(0, 1.5).logpdf(x).sum() + np.log(1.5) + np.log(2 * np.pi) / 2),
        row(ld.AR, dict(rho=0.6, tau=4.0), series, converted=True,
            reference=lambda x: stats.norm(0, 1.0).logpdf(x[0]) + stats.norm(0, 0.5).logpdf(
                x[1:] - 0.6 * x[:-1]).sum()),
        # NumPyro's walk: x_0 ~ Normal(0, scale), its increments Normal(0, scale); num_steps = T
        row(ld.GaussianRandomWalk, dict(scale=0.7, num_steps=4), series, converted=True,
            reference=lambda x: stats.norm(0, 0.7).logpdf(x[0]) + stats.norm(0, 0.7).logpdf(np.diff(x)).sum()),
    ]


ROWS = [
    row(ld.Normal, dict(mu=0.5, sigma=2.0), REALS, stats.norm(0.5, 2.0)),
    row(ld.Normal, dict(mu=0.5, tau=4.0), REALS, stats.norm(0.5, 0.5), converted=True),
    row(ld.LogNormal, dict(mu=0.3, sigma=0.8), POSITIVE, stats.lognorm(0.8, scale=np.exp(0.3))),
    row(ld.LogNormal, dict(mu=0.3, tau=4.0), POSITIVE, stats.lognorm(0.5, scale=np.exp(0.3)), converted=True),
    row(ld.SkewNormal, dict(mu=0.3, sigma=1.5, alpha=2.0), REALS, stats.skewnorm(2.0, 0.3, 1.5)),
    row(ld.SkewNormal, dict(mu=0.3, tau=0.25, alpha=2.0), REALS, stats.skewnorm(2.0, 0.3, 2.0), converted=True),
    row(ld.TruncatedNormal, dict(mu=0.3, sigma=1.5, lower=-1.0, upper=2.0), np.array([-0.9, 0.0, 1.9]),
        stats.truncnorm(-1.3 / 1.5, 1.7 / 1.5, 0.3, 1.5)),
    row(ld.TruncatedNormal, dict(mu=0.3, tau=1 / 2.25, lower=-1.0, upper=2.0), np.array([-0.9, 0.0, 1.9]),
        stats.truncnorm(-1.3 / 1.5, 1.7 / 1.5, 0.3, 1.5), converted=True),
    row(ld.TruncatedNormal, dict(loc=0.3, scale=1.5, low=-1.0, high=2.0), np.array([-0.9, 0.0, 1.9]),
        stats.truncnorm(-1.3 / 1.5, 1.7 / 1.5, 0.3, 1.5)),
    row(ld.HalfNormal, dict(sigma=2.0), POSITIVE, stats.halfnorm(scale=2.0)),
    row(ld.HalfNormal, dict(tau=4.0), POSITIVE, stats.halfnorm(scale=0.5), converted=True),
    row(ld.StudentT, dict(nu=3.0, mu=0.5, sigma=2.0), REALS, stats.t(3.0, 0.5, 2.0)),
    row(ld.StudentT, dict(nu=3.0, mu=0.5, lam=0.25), REALS, stats.t(3.0, 0.5, 2.0), converted=True),
    row(ld.HalfStudentT, dict(nu=3.0, sigma=2.0), POSITIVE,
        reference=lambda x: np.log(2) + stats.t(3.0, 0, 2.0).logpdf(x)),
    row(ld.HalfStudentT, dict(nu=3.0, lam=0.25), POSITIVE, converted=True,
        reference=lambda x: np.log(2) + stats.t(3.0, 0, 2.0).logpdf(x)),
    row(ld.Cauchy, dict(alpha=0.5, beta=2.0), REALS, stats.cauchy(0.5, 2.0)),
    row(ld.HalfCauchy, dict(beta=2.0), POSITIVE, stats.halfcauchy(scale=2.0)),
    row(ld.Laplace, dict(mu=0.5, b=2.0), REALS, stats.laplace(0.5, 2.0)),
    row(ld.Logistic, dict(mu=0.5, s=2.0), REALS, stats.logistic(0.5, 2.0)),
    row(ld.Gumbel, dict(mu=0.5, beta=2.0), REALS, stats.gumbel_r(0.5, 2.0)),
    row(ld.VonMises, dict(mu=0.5, kappa=2.0), np.array([-3.0, 0.0, 0.5, 2.0]), stats.vonmises(2.0, loc=0.5)),
    row(ld.Rayleigh, dict(sigma=2.0), POSITIVE, stats.rayleigh(scale=2.0)),
    row(ld.Uniform, dict(low=-1.0, high=2.0), REALS, stats.uniform(-1.0, 3.0)),
    row(ld.Exponential, dict(lam=2.0), POSITIVE, stats.expon(scale=0.5)),
    row(ld.Exponential, dict(scale=2.0), POSITIVE, stats.expon(scale=2.0), converted=True),
    row(ld.Gamma, dict(alpha=2.5, beta=1.3), POSITIVE, stats.gamma(2.5, scale=1 / 1.3)),
    # mean 3, sd 1.5: shape 4, scale 0.75
    row(ld.Gamma, dict(mu=3.0, sigma=1.5), POSITIVE, stats.gamma(4.0, scale=0.75), converted=True),
    row(ld.InverseGamma, dict(alpha=3.0, beta=2.0), POSITIVE, stats.invgamma(3.0, scale=2.0)),
    row(ld.InverseGamma, dict(concentration=3.0, rate=2.0), POSITIVE, stats.invgamma(3.0, scale=2.0)),
    # mean 2, sd 1: shape 6, scale 10
    row(ld.InverseGamma, dict(mu=2.0, sigma=1.0), POSITIVE, stats.invgamma(6.0, scale=10.0), converted=True),
    row(ld.Weibull, dict(alpha=1.5, beta=2.0), POSITIVE, stats.weibull_min(1.5, scale=2.0)),
    row(ld.Pareto, dict(alpha=3.0, m=0.3), POSITIVE + 0.3, stats.pareto(3.0, scale=0.3)),
    row(ld.ChiSquared, dict(nu=3.0), POSITIVE, stats.chi2(3.0)),
    row(ld.Beta, dict(concentration1=2.0, concentration0=3.0), UNIT, stats.beta(2.0, 3.0)),
    # mean 0.4, sd 0.2 (or "sample size" 5): Beta(2, 3)
    row(ld.Beta, dict(mu=0.4, sigma=0.2), UNIT, stats.beta(2.0, 3.0), converted=True),
    row(ld.Beta, dict(mu=0.4, nu=5.0), UNIT, stats.beta(2.0, 3.0), converted=True),
    row(ld.Poisson, dict(mu=3.5), COUNTS, stats.poisson(3.5)),
    row(ld.Bernoulli, dict(probs=0.3), np.array([0, 1]), stats.bernoulli(0.3)),
    row(ld.BernoulliLogit, dict(logits=0.4), np.array([0, 1]), stats.bernoulli(special.expit(0.4))),
    row(ld.Binomial, dict(total_count=10, probs=0.3), COUNTS, stats.binom(10, 0.3)),
    row(ld.BinomialLogit, dict(total_count=10, logits=0.4), COUNTS, stats.binom(10, special.expit(0.4))),
    row(ld.Geometric, dict(probs=0.3), COUNTS, reference=lambda x: stats.geom(0.3).logpmf(x + 1)),
    row(ld.DiscreteUniform, dict(low=0, high=5), COUNTS, stats.randint(0, 6)),
    row(ld.BetaBinomial, dict(concentration1=2.0, concentration0=3.0, total_count=10), COUNTS,
        stats.betabinom(10, 2.0, 3.0)),
    row(ld.NegativeBinomial, dict(mu=3.0, alpha=2.0), COUNTS, stats.nbinom(2.0, 0.4)),
    row(ld.NegativeBinomial, dict(mean=3.0, concentration=2.0), COUNTS, stats.nbinom(2.0, 0.4)),
    row(ld.NegativeBinomial, dict(n=2.0, p=0.4), COUNTS, stats.nbinom(2.0, 0.4), converted=True),
    # NumPyro's probs is the success probability: scipy's p is 1 - probs
    row(ld.NegativeBinomial, dict(total_count=2.0, probs=0.6), COUNTS, stats.nbinom(2.0, 0.4), converted=True),
    row(ld.NegativeBinomial, dict(total_count=2.0, logits=0.7), COUNTS, stats.nbinom(2.0, special.expit(-0.7)),
        converted=True),
    row(ld.ZeroInflatedPoisson, dict(psi=0.7, mu=3.0), COUNTS, converted=True,
        reference=zero_inflated(0.7, stats.poisson(3.0))),
    row(ld.ZeroInflatedPoisson, dict(gate=0.3, rate=3.0), COUNTS,
        reference=zero_inflated(0.7, stats.poisson(3.0))),
    row(ld.ZeroInflatedNegativeBinomial, dict(psi=0.7, mu=3.0, alpha=2.0), COUNTS, converted=True,
        reference=zero_inflated(0.7, stats.nbinom(2.0, 0.4))),
    row(ld.ZeroInflatedNegativeBinomial, dict(gate=0.3, mean=3.0, concentration=2.0), COUNTS,
        reference=zero_inflated(0.7, stats.nbinom(2.0, 0.4))),
    row(ld.HurdlePoisson, dict(psi=0.7, mu=3.0), COUNTS, reference=hurdle(0.7, stats.poisson(3.0))),
    # NumPyro's gate is the probability of the zero
    row(ld.HurdlePoisson, dict(gate=0.3, rate=3.0), COUNTS, converted=True,
        reference=hurdle(0.7, stats.poisson(3.0))),
    row(ld.HurdleNegativeBinomial, dict(psi=0.7, mu=3.0, alpha=2.0), COUNTS,
        reference=hurdle(0.7, stats.nbinom(2.0, 0.4))),
    row(ld.HurdleNegativeBinomial, dict(psi=0.7, n=2.0, p=0.4), COUNTS, converted=True,
        reference=hurdle(0.7, stats.nbinom(2.0, 0.4))),
] + mv_rows()


def row_id(r):
    return f"{r.dist.spec.name}({','.join(r.kwargs)})"


@pytest.mark.parametrize("r", ROWS, ids=[row_id(r) for r in ROWS])
def test_spelling_matches_reference(r):
    got = r.dist(**r.kwargs).logpdf(r.x)
    want = r.reference(np.asarray(r.x))
    np.testing.assert_allclose(got, want, rtol=1e-10 if r.converted else 1e-12, atol=0)


def test_every_distribution_has_an_entry():
    """A new distribution needs an entry in ALIASES (empty where no library names
    its parameters otherwise); an entry names a registered distribution."""
    names = {d.spec.name for d in ALL + MULTIVARIATE}
    assert names - set(ALIASES) == set()
    assert set(ALIASES) - names == set()


def test_every_spelling_has_a_row():
    """Each spelling of the table is tested above: a new one needs its row."""
    tested = {(r.dist.spec.name, k) for r in ROWS for k in r.kwargs}
    untested = [(name, s.given) for name, spellings in ALIASES.items() for s in spellings
                if not all((name, g) in tested for g in s.given)]
    assert untested == []


def test_spellings_set_own_keywords():
    """Every spelling sets keywords the class takes, and none shadows one of them."""
    from logdens.distributions.aliases import _keywords
    for dist in ALL + MULTIVARIATE:
        own = set(_keywords(dist))
        for s in ALIASES[dist.spec.name]:
            assert set(s.to) <= own, (dist.spec.name, s)
            assert not set(s.given) & own, (dist.spec.name, s)


@pytest.mark.parametrize("call, match", [
    (lambda: ld.Normal(0.0, mu=1.0), r"loc given twice, as argument 1 \(loc\) and as mu \(PyMC's spelling\)"),
    (lambda: ld.Normal(loc=0.0, mu=0.0), r"loc given twice, as loc and as mu"),
    (lambda: ld.Normal(mu=0.0, sigma=1.0, tau=1.0), r"scale given twice, as sigma .* and as tau"),
    (lambda: ld.Gamma(2.0, beta=1.0, rate=1.0), r"rate given twice"),
    (lambda: ld.MvNormal(np.zeros(2), mu=np.zeros(2), cov=np.eye(2)), r"loc given twice"),
    (lambda: ld.Bernoulli(0.3, probs=0.3), r"p given twice"),
    (lambda: ld.Normal(0.0, scal=1.0), r"Normal has no parameter 'scal'; it takes loc, scale "
                                        r"\(also spelled mu, sigma, tau\)"),
    (lambda: ld.PoissonLog(rate=1.0), r"PoissonLog has no parameter 'rate'; it takes log_rate$"),
    (lambda: ld.Gamma(mu=1.0), r"mu, sigma \(PyMC's spelling\) go together; missing sigma"),
])
def test_spelling_errors(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_converted_invalid_value_names_the_spelling():
    with pytest.raises(InvalidArgumentError, match=r"Normal: scale=nan, must be > 0.* tau=-1.0"):
        ld.Normal(0.0, tau=-1.0)
    with pytest.raises(InvalidArgumentError, match=r"ZeroInflatedPoisson: zi=-0.5.*zi = 1 - psi from psi=1.5"):
        ld.ZeroInflatedPoisson(psi=1.5, mu=2.0)
    with pytest.raises(InvalidArgumentError, match=r"MvStudentT: Sigma \(PyMC's spelling\): .*not positive"):
        ld.MvStudentT(3.0, np.zeros(2), Sigma=-np.eye(2))
    with pytest.raises(InvalidArgumentError, match=r"num_steps=2.5 must be an integer"):
        ld.GaussianRandomWalk(scale=1.0, num_steps=2.5)


def test_numpyro_walk_length():
    walk = ld.GaussianRandomWalk(scale=0.7, num_steps=4)
    assert walk.event_shape() == (4,)


def test_spelling_of_model_parameters():
    """A converted spelling of a parameter (PyMC's precision) holds in a model:
    the log density against scipy and the gradient against finite differences."""
    from engine_helpers import check_gradient

    y = np.array([0.1, -0.4, 1.3])
    m = ld.Model()
    mu = m.param("mu", ld.Normal(mu=0.0, sigma=2.0))
    tau = m.param("tau", ld.Gamma(alpha=2.0, beta=2.0))
    m.observe("y", ld.Normal(mu=mu, tau=tau), y)
    density = m.compile()
    theta = np.array([0.3, -0.2])
    t = np.exp(-0.2)
    want = (stats.norm(0, 2).logpdf(0.3) + stats.gamma(2.0, scale=0.5).logpdf(t) - 0.2
            + stats.norm(0.3, t ** -0.5).logpdf(y).sum())
    np.testing.assert_allclose(density.log_density(theta, propto=False), want, rtol=1e-12)
    check_gradient(density, theta, np.random.default_rng(0))


def test_numeric_only_spelling_refuses_expressions():
    m = ld.Model()
    s = m.param("s", ld.HalfNormal(1.0))
    with pytest.raises(InvalidArgumentError, match=r"MvNormal: tau= takes numbers \(cov = inv\(tau\), computed "
                                                  r"once when the distribution is built\), not model expressions"):
        ld.MvNormal(np.zeros(2), tau=s * np.eye(2))
    with pytest.raises(InvalidArgumentError, match=r"GaussianRandomWalk: num_steps= takes numbers"):
        ld.GaussianRandomWalk(scale=1.0, num_steps=s)


def test_the_docs_table_lists_every_spelling():
    """docs/pymc-spelling.md has one table row per distribution naming each of its
    spellings and, for a conversion, its formula."""
    import pathlib
    page = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "pymc-spelling.md").read_text()
    rows = {line.split("|")[1].strip().strip("`"): line for line in page.splitlines() if line.startswith("| `")}
    assert set(rows) == set(ALIASES)
    for name, spellings in ALIASES.items():
        for s in spellings:
            assert all(f"`{g}`" in rows[name] for g in s.given), (name, s.given)
            assert s.formula in rows[name], (name, s.formula)
