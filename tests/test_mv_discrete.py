"""Dirichlet, CategoricalLogit, Categorical, Multinomial, DirichletMultinomial.

Per distribution: values against scipy (or a closed form where scipy has
none) on a table of cases from the extremes, partials against closed forms
and central differences, ``keep`` subsets, invalid parameters and values
outside the support, seeded draws, and one compiled model.

Tolerances. A value is a sum of K + 2 or so terms (lgammas, x log p), each
rounded to about one ulp of its own size, and both we and scipy add them in
some order: the bound is 4 K eps times the sum of the terms' magnitudes
(``_scale``), plus 1e-13 relative. Where the terms cancel (Dirichlet at
alpha = 1e3, multinomial counts of 1e6) that absolute bound is what
matters. Central differences use a relative step (h = 1e-5 |v|; arguments
may be 1e-3) and allow 1e-6 relative for truncation plus 20 eps scale / h
for the rounding of the two values they subtract. Simplex arguments (x of
Dirichlet, p of Categorical and Multinomial) are moved only along
directions that keep the sum 1 (the support's tolerance is 1e-8, far below
a step), so the differences check the partials' tangent part, which is what
a model's simplex transform uses; the closed forms check the whole vector.
Closed-form partials: relative 1e-12 to 1e-15 (one or two roundings of
terms of their size). Models: values relative 1e-12 (a few hundred terms
summed in another order than scipy's); gradients relative 1e-6 against
differences in theta with step 1e-6, as in ``test_multivariate.py``.
Monte Carlo: 5 standard errors, estimated from the draws themselves for
covariances.
"""

import numpy as np
import pytest
from scipy import special, stats

import logdens as ld
from logdens.distributions import InvalidArgumentError
from logdens.distributions.categorical import Categorical
from logdens.distributions.categorical_logit import CategoricalLogit
from logdens.distributions.dirichlet import Dirichlet
from logdens.distributions.dirichlet_multinomial import DirichletMultinomial
from logdens.distributions.multinomial import Multinomial

EPS = np.finfo(float).eps


def _scale(*terms):
    """The sum of the magnitudes of the terms a value is summed from."""
    return float(sum(np.sum(np.abs(t)) for t in terms))


def _assert_value(value, expected, k, scale):
    assert np.isfinite(value)
    assert abs(value - expected) <= 1e-13 * abs(expected) + 4 * k * EPS * scale, (value, expected)


def _fd(f, v, j, h):
    """Central difference of f in entry j of v."""
    up, down = v.copy(), v.copy()
    up[j] += h
    down[j] -= h
    return (f(up) - f(down)) / (2 * h)


def _check_fd(f, v, grad, scale):
    """Each entry of grad against a central difference with step 1e-5 |v_j|."""
    for j in range(v.size):
        h = 1e-5 * max(abs(v[j]), 1e-300)
        assert abs(_fd(f, v, j, h) - grad[j]) <= 1e-6 * abs(grad[j]) + 20 * EPS * scale / h, j


def _check_fd_tangent(f, v, grad, scale, seed=0):
    """Directional differences of f along directions of sum 0 that move each
    entry by a fraction of itself: u = v (w - v.w), sum u = 0 for sum v = 1."""
    rng = np.random.default_rng(seed)
    for _ in range(3):
        w = rng.normal(size=v.size)
        u = v * (w - v @ w)
        h = 1e-5
        fd = (f(v + h * u) - f(v - h * u)) / (2 * h)
        exact = grad @ u
        assert abs(fd - exact) <= 1e-6 * np.sum(np.abs(grad * u)) + 20 * EPS * scale / h, (fd, exact)


def _keep_subsets(spec, args, partial_shapes):
    """The kernel run from Python with each single summand kept: values and
    partials sum to those of the full density."""
    def run(keep):
        outs = [None if s is None else np.zeros(s) for s in partial_shapes]
        work = np.empty(spec.work_size({"k": max(np.size(a) for a in args)}))
        return spec.logpdf_grad(*args, keep, work, *outs), outs
    full, full_outs = run(spec.keep_all)
    parts = [run(tuple(i == k for i in range(len(spec.summands)))) for k in range(len(spec.summands))]
    assert sum(lp for lp, _ in parts) == pytest.approx(full, rel=1e-13, abs=1e-13)
    for j, out in enumerate(full_outs):
        if out is not None:
            np.testing.assert_allclose(sum(o[j] for _, o in parts), out, rtol=1e-13, atol=1e-13)
    return full, full_outs


def _mc_mean(draws, mean, var):
    """The sample mean within 5 standard errors of ``mean``."""
    se = np.sqrt(var / len(draws))
    assert np.all(np.abs(draws.mean(0) - mean) <= 5 * se + 1e-12), (draws.mean(0), mean, se)


def _mc_cov(draws, cov):
    """The sample covariance within 5 standard errors, each estimated from the
    draws' own products (the fourth moments)."""
    c = draws - draws.mean(0)
    products = c[:, :, None] * c[:, None, :]
    se = products.std(0) / np.sqrt(len(draws))
    assert np.all(np.abs(products.mean(0) - cov) <= 5 * se + 1e-12)


def _central(f, theta, h=1e-6):
    return np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(len(theta))])


def _check_model_gradient(lp, theta):
    """Value as ``log_density``; gradient against central differences (relative
    1e-6: steps of 1e-6 on log densities of size 1e2 leave ~1e-8 of rounding)."""
    value, grad = lp.log_density_gradient(theta)
    assert value == pytest.approx(lp.log_density(theta), rel=1e-13)
    np.testing.assert_allclose(grad, _central(lp.log_density, theta), rtol=1e-6,
                               atol=1e-6 * np.abs(grad).max())
    return grad


# ------------------------------------------------------------------ Dirichlet

_x10 = np.linspace(1, 10, 10) ** 2
_x50 = 1 + 0.1 * np.sin(np.arange(50.0))
DIRICHLET_CASES = [
    (np.array([2.0]), np.array([1.0])),  # K = 1: a point mass, log p = 0
    (np.array([1e-3, 1e-3]), np.array([1e-200, 1 - 1e-200])),  # near a vertex, tiny alpha
    (np.array([0.5, 2.0, 3.0]), np.array([0.2, 0.3, 0.5])),
    (np.ones(5), np.array([0.1, 0.2, 0.3, 0.15, 0.25])),  # uniform: lgamma(5)
    (np.logspace(-3, 3, 10), _x10 / _x10.sum()),
    (np.full(50, 1e3), _x50 / _x50.sum()),  # large concentrations: the summands cancel
    (np.array([1e3, 1e-3, 1.0, 50.0]), np.array([1 - 3e-10, 1e-10, 1e-10, 1e-10])),
]


def _dirichlet_scale(alpha, x):
    return _scale((alpha - 1) * np.log(x), special.gammaln(alpha), special.gammaln(alpha.sum()))


@pytest.mark.parametrize("alpha, x", DIRICHLET_CASES)
def test_dirichlet_value_and_partials(alpha, x):
    d = Dirichlet(alpha)
    scale = _dirichlet_scale(alpha, x)
    expected = stats.dirichlet(alpha).logpdf(x) if len(alpha) > 1 else 0.0
    _assert_value(d.logpdf(x), expected, len(x), scale)
    lp, grads = d.logpdf_grad(x)
    _assert_value(lp, d.logpdf(x), len(x), scale)  # summed in another order
    np.testing.assert_allclose(grads["x"], (alpha - 1) / x, rtol=1e-14)
    # d/dalpha: log x + digamma(A) - digamma(alpha), to a few ulps of its terms
    digammas = special.digamma(alpha.sum()) - special.digamma(alpha)
    np.testing.assert_allclose(grads["alpha"], np.log(x) + digammas, rtol=1e-12,
                               atol=8 * EPS * _scale(np.log(x), special.digamma(alpha), special.digamma(alpha.sum())))
    _check_fd(lambda a: Dirichlet(a).logpdf(x), alpha, grads["alpha"], scale)
    if len(x) > 1:
        _check_fd_tangent(d.logpdf, x, grads["x"], scale)


def test_dirichlet_keep_subsets_and_python_kernel():
    alpha, x = DIRICHLET_CASES[4]
    full, (d_x, d_alpha) = _keep_subsets(Dirichlet.spec, (x, alpha), [x.shape, alpha.shape])
    lp, grads = Dirichlet(alpha).logpdf_grad(x)  # compiled; CPython's lgamma differs by ulps
    assert full == pytest.approx(lp, rel=1e-13, abs=4 * EPS * _dirichlet_scale(alpha, x))
    np.testing.assert_allclose(d_alpha, grads["alpha"], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(d_x, grads["x"], rtol=1e-14)


def test_dirichlet_support_and_parameters():
    d = Dirichlet(np.array([0.5, 2.0, 3.0]))
    outside = np.array([[0.0, 0.5, 0.5],  # an entry 0: excluded for every alpha, as Beta's ends
                        [-0.1, 0.6, 0.5], [0.2, 0.3, 0.5 + 2e-8], [0.2, 0.3, np.inf]])
    assert np.all(d.logpdf(outside) == -np.inf)
    assert np.isfinite(d.logpdf(np.array([0.2, 0.3, 0.5 + 5e-9])))  # within Stan's 1e-8
    assert Dirichlet.spec.check(outside, {"k": 3}, {}).tolist() == [False, False, False, False]
    assert Dirichlet.spec.check(np.array([[0.2, 0.3, 0.5]]), {"k": 3}, {}).tolist() == [True]
    for bad in ([1.0, 0.0], [1.0, -2.0], [1.0, np.inf], [np.nan, 1.0]):
        with pytest.raises(InvalidArgumentError, match=r"Dirichlet: alpha\[\d\]"):
            Dirichlet(np.array(bad))
    assert Dirichlet(np.array([1e-310, 1.0])).logpdf(np.array([0.5, 0.5])) == -np.inf  # subnormal
    assert Dirichlet(np.ones(4)).event_shape() == (4,)


def test_dirichlet_rvs():
    alpha = np.array([0.5, 2.0, 3.0, 1.5])
    draws = Dirichlet(alpha).rvs(size=4000, seed=1)
    assert draws.shape == (4000, 4)
    assert np.all(draws > 0) and np.allclose(draws.sum(1), 1.0, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(draws[:5], Dirichlet(alpha).rvs(size=5, seed=1)[:5])
    a0, m = alpha.sum(), alpha / alpha.sum()
    cov = (np.diag(m) - np.outer(m, m)) / (a0 + 1)
    _mc_mean(draws, m, np.diag(cov))
    _mc_cov(draws, cov)
    # alpha = 1e-3: most entries underflow to 0 (see rvs), but every draw sums
    # to 1 and the mean holds
    tiny = np.full(5, 1e-3)
    draws = Dirichlet(tiny).rvs(size=2000, seed=2)
    assert np.all(draws >= 0) and np.allclose(draws.sum(1), 1.0, rtol=0, atol=1e-14)
    _mc_mean(draws, np.full(5, 0.2), np.full(5, 0.2 * 0.8 / (5e-3 + 1)))


# ----------------------------------------------------------- CategoricalLogit

_rng = np.random.default_rng(5)
LOGIT_CASES = [
    (np.array([3.0]), 0),  # K = 1: log p = 0
    (np.array([0.0, 0.0]), 1),
    (np.array([0.1, -2.0, 3.0]), 1),
    (_rng.normal(size=50) * 10, 17),
    (np.array([1e3, -1e3, 0.0]), 1),  # log p = -2e3
    (np.array([40.0, 0.0, 0.0]), 0),  # p_x = 1 - 8.5e-18: its partial must not round to 0
    (np.array([700.0, 700.0 + 1e-10, -700.0]), 2),
]


def _stable_logit_partials(logits, x):
    """onehot(x) - softmax, with the entry at x as the sum of the other probabilities."""
    p = special.softmax(logits)
    d = -p
    d[x] = np.sum(np.delete(p, x))
    return d


@pytest.mark.parametrize("logits, x", LOGIT_CASES)
def test_categorical_logit_value_and_partials(logits, x):
    d = CategoricalLogit(logits)
    expected = logits[x] - special.logsumexp(logits)
    # two terms of size max|logits| and a log of a sum of K exps
    _assert_value(d.logpdf([x])[0], expected, len(logits), _scale(logits[x], logits.max(), np.log(len(logits))))
    lp, grads = d.logpdf_grad([x])
    assert grads.keys() == {"logits"}
    np.testing.assert_allclose(grads["logits"][0], _stable_logit_partials(logits, x), rtol=1e-13, atol=1e-300)
    scale = _scale(logits.max(), logits[x])
    for j in range(len(logits)):  # absolute steps here: logits of 0 are common
        h = 1e-6 * max(1.0, abs(logits[j]))
        fd = _fd(lambda v: CategoricalLogit(v).logpdf([x])[0], logits, j, h)
        assert abs(fd - grads["logits"][0, j]) <= 1e-6 * abs(grads["logits"][0, j]) + 20 * EPS * scale / h


def test_categorical_logit_keep_support_parameters():
    logits = LOGIT_CASES[3][0]
    full, (d_x, d_logits) = _keep_subsets(CategoricalLogit.spec, (17.0, logits), [None, logits.shape])
    assert full == pytest.approx(CategoricalLogit(logits).logpdf([17])[0], rel=1e-14)
    d = CategoricalLogit(np.array([0.1, -2.0, 3.0]))
    assert np.all(d.logpdf([3, -1, 1.5, np.inf]) == -np.inf)
    assert CategoricalLogit.spec.check(np.array([0.0, 2.0, 3.0]), {"k": 3}, {}).tolist() == [True, True, False]
    for bad in ([0.0, np.inf], [np.nan, 1.0]):
        with pytest.raises(InvalidArgumentError, match=r"CategoricalLogit: logits\[\d\]"):
            CategoricalLogit(np.array(bad))
    assert d.event_shape() == ()


def test_categorical_logit_rvs():
    logits = np.array([0.1, -2.0, 3.0, 1.0])
    draws = CategoricalLogit(logits).rvs(size=4000, seed=3)
    assert draws.dtype == np.int64 and set(np.unique(draws)) <= {0, 1, 2, 3}
    p = special.softmax(logits)
    _mc_mean(np.eye(4)[draws], p, p * (1 - p))


# ---------------------------------------------------------------- Categorical

_p50 = _rng.dirichlet(np.ones(50))
CATEGORICAL_CASES = [
    (np.array([1.0]), 0),
    (np.array([0.5, 0.5]), 1),
    (np.array([1e-300, 1 - 1e-300]), 0),
    (np.array([0.0, 0.3, 0.7]), 1),  # a category of probability 0 elsewhere
    (_p50, 11),
]


@pytest.mark.parametrize("p, x", CATEGORICAL_CASES)
def test_categorical_value_and_partials(p, x):
    d = Categorical(p)
    onehot = np.eye(len(p))[x]
    assert d.logpdf([x])[0] == pytest.approx(np.log(p[x]), rel=1e-15, abs=1e-15)
    if len(p) > 1:
        assert d.logpdf([x])[0] == pytest.approx(stats.multinomial(1, p).logpmf(onehot), rel=1e-14, abs=1e-14)
    lp, grads = d.logpdf_grad([x])
    np.testing.assert_allclose(grads["p"][0], onehot / p[x], rtol=1e-15)
    if len(p) > 1:
        _check_fd_tangent(lambda v: Categorical(v).logpdf([x])[0], p, grads["p"][0], abs(lp[0]))


def test_categorical_keep_support_parameters():
    p = _p50
    full, (_, d_p) = _keep_subsets(Categorical.spec, (11.0, p), [None, p.shape])
    assert full == np.log(p[11]) and d_p[11] == 1 / p[11]
    d = Categorical(np.array([0.0, 0.3, 0.7]))
    assert np.all(d.logpdf([0, 3, -1, 0.5]) == -np.inf)
    assert Categorical.spec.check(np.array([0.0, 3.0]), {"k": 3}, {}).tolist() == [True, False]
    with pytest.raises(InvalidArgumentError, match=r"Categorical: p\[1\]=-0.1"):
        Categorical(np.array([0.6, -0.1, 0.5]))
    with pytest.raises(InvalidArgumentError, match=r"Categorical: p=\[0.5 0.4\] sums to 0.9.*must sum to 1"):
        Categorical(np.array([0.5, 0.4]))
    with pytest.raises(InvalidArgumentError, match=r"Categorical: p\[1\]=.* sums to"):
        Categorical(np.array([[0.5, 0.5], [0.5, 0.6]]))
    Categorical(np.array([0.5, 0.5 + 5e-9]))  # within Stan's 1e-8


def test_categorical_rvs():
    p = np.array([0.1, 0.0, 0.6, 0.3])
    draws = Categorical(p).rvs(size=4000, seed=4)
    assert set(np.unique(draws)) <= {0, 2, 3}  # never the category of probability 0
    _mc_mean(np.eye(4)[draws], p, p * (1 - p))


# ---------------------------------------------------------------- Multinomial

MULTINOMIAL_CASES = [
    (5.0, np.array([1.0]), np.array([5.0])),  # K = 1: log p = 0
    (0.0, np.array([0.3, 0.7]), np.array([0.0, 0.0])),
    (10.0, np.array([0.2, 0.3, 0.5]), np.array([3.0, 0.0, 7.0])),
    (10.0, np.array([0.0, 0.4, 0.6]), np.array([0.0, 4.0, 6.0])),  # 0 log 0 = 0
    (1000.0, _p50, _rng.multinomial(1000, _p50).astype(float)),
    (1e6, np.array([1e-3, 1 - 1e-3]), np.array([1500.0, 998500.0])),  # the lgammas cancel
]


@pytest.mark.parametrize("n, p, x", MULTINOMIAL_CASES)
def test_multinomial_value_and_partials(n, p, x):
    d = Multinomial(np.array([n]), p)  # n batched: see test_single_event_with_a_scalar_argument
    scale = _scale(special.gammaln(n + 1), special.gammaln(x + 1), special.xlogy(x, p))
    expected = stats.multinomial(int(n), p).logpmf(x) if len(p) > 1 else 0.0
    _assert_value(d.logpdf([x])[0], expected, len(p), scale)
    lp, grads = d.logpdf_grad([x])
    assert grads.keys() == {"p"}
    np.testing.assert_allclose(grads["p"][0], np.divide(x, p, out=np.zeros_like(p), where=x > 0), rtol=1e-15)
    if len(p) > 1 and np.all(p > 0):
        _check_fd_tangent(lambda v: Multinomial(np.array([n]), v).logpdf([x])[0], p, grads["p"][0], scale)


def test_multinomial_keep_support_parameters():
    n, p, x = MULTINOMIAL_CASES[4]
    full, (_, _, d_p) = _keep_subsets(Multinomial.spec, (x, n, p), [None, None, p.shape])
    assert full == pytest.approx(Multinomial(np.array([n]), p).logpdf([x])[0], rel=1e-13)
    d = Multinomial(np.array([10.0]), np.array([0.0, 0.4, 0.6]))
    outside = [[0, 4, 5], [0, 4, 7], [0, 4.5, 5.5], [0, -1, 11], [1, 3, 6], [0, np.inf, 6]]
    assert np.all(d.logpdf(outside) == -np.inf)  # sum != n, fractions, negative, x > 0 at p = 0
    for bad, match in [((2.5, [0.5, 0.5]), r"n=2.5"), ((-1.0, [0.5, 0.5]), r"n=-1.0"),
                       ((3.0, [0.5, 0.6]), r"p=\[0.5 0.6\] sums to 1.1"),
                       ((3.0, [1.5, -0.5]), r"p\[0\]=1.5")]:
        with pytest.raises(InvalidArgumentError, match="Multinomial: " + match):
            Multinomial(*bad)
    counts = np.array([[1.0, 2.0], [2.0, 2.0]])
    assert Multinomial.spec.check(counts, {"k": 2}, {"n": 3.0}).tolist() == [True, False]
    assert Multinomial.spec.check(counts, {"k": 2}, {}).tolist() == [True, True]  # n unknown: the kernels' -inf


def test_multinomial_rvs():
    p = np.array([0.1, 0.0, 0.6, 0.3])
    draws = Multinomial(np.array([20.0]), p).rvs(size=4000, seed=5)
    assert draws.dtype == np.int64 and np.all(draws.sum(1) == 20) and np.all(draws[:, 1] == 0)
    cov = 20 * (np.diag(p) - np.outer(p, p))
    _mc_mean(draws, 20 * p, np.diag(cov))
    _mc_cov(draws, cov)


# ------------------------------------------------------- DirichletMultinomial

DM_CASES = [
    (0.0, np.array([0.5, 2.0]), np.array([0.0, 0.0])),
    (5.0, np.array([1e-3, 1e3]), np.array([2.0, 3.0])),
    (10.0, np.array([0.5, 2.0, 3.0]), np.array([3.0, 0.0, 7.0])),
    (200.0, np.logspace(-3, 3, 50), _rng.multinomial(200, np.logspace(-3, 3, 50) / np.logspace(-3, 3, 50).sum())
     .astype(float)),
    (1e4, np.full(4, 1e3), np.array([2400.0, 2600.0, 2500.0, 2500.0])),
]


def _dm_scale(n, alpha, x):
    a0 = alpha.sum()
    return _scale(special.gammaln(n + 1), special.gammaln(x + 1), special.gammaln(x + alpha),
                  special.gammaln(alpha), special.gammaln(a0), special.gammaln(n + a0))


@pytest.mark.parametrize("n, alpha, x", DM_CASES)
def test_dirichlet_multinomial_value_and_partials(n, alpha, x):
    d = DirichletMultinomial(np.array([n]), alpha)
    scale = _dm_scale(n, alpha, x)
    _assert_value(d.logpdf([x])[0], stats.dirichlet_multinomial(alpha, int(n)).logpmf(x), len(x), scale)
    if len(x) == 2:  # and BetaBinomial's closed form
        assert d.logpdf([x])[0] == pytest.approx(stats.betabinom(n, *alpha).logpmf(x[0]), rel=1e-12, abs=1e-12)
    lp, grads = d.logpdf_grad([x])
    assert grads.keys() == {"alpha"}
    a0 = alpha.sum()
    terms = [special.digamma(x + alpha), special.digamma(alpha), special.digamma(n + a0), special.digamma(a0)]
    closed = terms[0] - terms[1] - terms[2] + terms[3]
    np.testing.assert_allclose(grads["alpha"][0], closed, rtol=1e-12, atol=8 * EPS * _scale(*terms))
    # the differences' rounding: the terms that move with alpha, formed as
    # rising factorials (not as the lgammas of the value's scale), and the value
    rising = _scale(special.gammaln(x + alpha) - special.gammaln(alpha), special.gammaln(n + a0) - special.gammaln(a0))
    _check_fd(lambda a: DirichletMultinomial(np.array([n]), a).logpdf([x])[0], alpha, grads["alpha"][0],
              rising + abs(lp[0]))


def test_dirichlet_multinomial_keep_support_parameters():
    n, alpha, x = DM_CASES[3]
    full, (_, _, d_alpha) = _keep_subsets(DirichletMultinomial.spec, (x, n, alpha), [None, None, alpha.shape])
    assert full == pytest.approx(DirichletMultinomial(np.array([n]), alpha).logpdf([x])[0], rel=1e-13)
    d = DirichletMultinomial(np.array([10.0]), np.array([0.5, 2.0, 3.0]))
    assert np.all(d.logpdf([[0, 4, 5], [0, 4.5, 5.5], [-1, 5, 6], [0, np.inf, 6]]) == -np.inf)
    for bad, match in [((2.5, [0.5, 0.5]), r"n=2.5"), ((3.0, [0.5, 0.0]), r"alpha\[1\]=0.0"),
                       ((3.0, [np.inf, 1.0]), r"alpha\[0\]=inf")]:
        with pytest.raises(InvalidArgumentError, match="DirichletMultinomial: " + match):
            DirichletMultinomial(*bad)


def test_dirichlet_multinomial_rvs():
    alpha, n = np.array([0.5, 2.0, 3.0, 1.5]), 30.0
    draws = DirichletMultinomial(np.array([n]), alpha).rvs(size=4000, seed=6)
    assert np.all(draws >= 0) and np.all(draws.sum(1) == n)
    m, a0 = alpha / alpha.sum(), alpha.sum()
    cov = n * (np.diag(m) - np.outer(m, m)) * (n + a0) / (1 + a0)
    _mc_mean(draws, n * m, np.diag(cov))
    _mc_cov(draws, cov)
    tiny = DirichletMultinomial(np.array([n]), np.full(3, 1e-3)).rvs(size=1000, seed=7)
    assert np.all(tiny.sum(1) == n) and np.mean(tiny.max(1) == n) > 0.9  # nearly all in one category


# Per spec, a valid point and, per argument, a second value that keeps the
# point valid (None where none can move alone: n fixes the counts' sum).
_x3, _a3, _p3 = np.array([0.2, 0.3, 0.5]), np.array([0.5, 2.0, 3.0]), np.array([0.2, 0.3, 0.5])
TAG_CASES = [
    (Dirichlet.spec, {"x": (_x3, np.array([0.3, 0.2, 0.5])), "alpha": (_a3, np.array([0.7, 2.0, 3.0]))}),
    (CategoricalLogit.spec, {"x": (1.0, 2.0), "logits": (_a3, np.array([0.7, 2.0, 3.0]))}),
    (Categorical.spec, {"x": (1.0, 2.0), "p": (_p3, np.array([0.3, 0.2, 0.5]))}),
    (Multinomial.spec, {"x": (np.array([3.0, 0.0, 7.0]), np.array([2.0, 1.0, 7.0])), "n": (10.0, None),
                        "p": (_p3, np.array([0.3, 0.2, 0.5]))}),
    (DirichletMultinomial.spec, {"x": (np.array([3.0, 0.0, 7.0]), np.array([2.0, 1.0, 7.0])), "n": (10.0, None),
                                 "alpha": (_a3, np.array([0.7, 2.0, 3.0]))}),
]


@pytest.mark.parametrize("spec, points", TAG_CASES, ids=[s.name for s, _ in TAG_CASES])
def test_summand_tags(spec, points):
    """Each summand moves with the arguments its tag names and with no other:
    the engine drops a summand whose arguments are all data."""
    assert tuple(points) == spec.arg_names and len(spec.events) == len(spec.arg_names)
    work = np.empty(spec.work_size({"k": 3}))
    base = {name: v for name, (v, _) in points.items()}
    for k, summand in enumerate(spec.summands):
        assert set(summand.depends) <= set(spec.arg_names)
        keep = tuple(i == k for i in range(len(spec.summands)))

        def value(args):
            return spec.logpdf_grad(*args.values(), keep, work, *([None] * len(args)))
        for name, (_, moved) in points.items():
            if moved is not None:
                assert (value(dict(base, **{name: moved})) != value(base)) == (name in summand.depends), \
                    (summand, name)


@pytest.mark.parametrize("call", ["logit", "multinomial"])
def test_single_event_with_a_scalar_argument(call):
    if call == "logit":
        assert CategoricalLogit(np.array([0.0, 0.0])).logpdf(1) == pytest.approx(-np.log(2))
    else:
        assert Multinomial(2, np.array([0.5, 0.5])).logpdf(np.array([1.0, 1.0])) == pytest.approx(np.log(0.5))


# ------------------------------------------------------------ compiled models


def test_model_dirichlet_prior_categorical_observed():
    """p ~ Dirichlet(alpha) through the simplex transform; y ~ Categorical(p)."""
    rng = np.random.default_rng(8)
    alpha = np.array([0.5, 2.0, 3.0, 1.5])
    y = rng.integers(0, 4, size=40)
    m = ld.Model()
    p = m.param("p", Dirichlet(alpha))
    m.observe("y", Categorical(p), y)
    lp = m.compile()
    theta = rng.normal(size=lp.dim)
    v = lp.constrain(theta)["p"]
    expected = stats.dirichlet(alpha).logpdf(v) + np.log(v[y]).sum()
    assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, rel=1e-12)
    _check_model_gradient(lp, theta)
    with pytest.raises(ld.ModelError, match=r"Categorical value y\[2\] = 4.* category 0, 1, ..., K - 1"):
        lp.set_data(y=np.array([0, 1, 4]))


def test_model_softmax_regression():
    """logits = X @ W, y ~ CategoricalLogit(logits): value, gradient and per-row
    gradients against numpy's closed forms (onehot - softmax) and differences."""
    rng = np.random.default_rng(9)
    n, p, k = 60, 3, 4
    X = rng.normal(size=(n, p))
    y = rng.integers(0, k, size=n)
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(p, k))
    m.observe("y", CategoricalLogit(ld.matmul(m.data("X", X), W)), y)
    lp = m.compile()
    theta = rng.normal(size=lp.dim)
    logits = X @ theta.reshape(p, k)
    residual = np.eye(k)[y] - special.softmax(logits, axis=1)
    expected = stats.norm.logpdf(theta).sum() + np.sum(logits[np.arange(n), y] - special.logsumexp(logits, axis=1))
    assert lp.log_density(theta, propto=False) == pytest.approx(expected, rel=1e-13)
    grad = _check_model_gradient(lp, theta)
    np.testing.assert_allclose(grad, (X.T @ residual).ravel() - theta, rtol=1e-10, atol=1e-12)
    rows = lp.per_sample_gradient(theta, "y")
    assert rows.shape == (n, lp.dim)
    np.testing.assert_allclose(rows, (X[:, :, None] * residual[:, None, :]).reshape(n, -1), rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(rows.sum(0), grad + theta, rtol=1e-10, atol=1e-12)  # the prior's is -theta


def test_model_multinomial_rows_of_counts():
    """q ~ Dirichlet(1); Y ~ Multinomial(n, q) with a count n per row (data)."""
    rng = np.random.default_rng(10)
    counts = rng.integers(0, 30, size=25).astype(float)
    q_true = np.array([0.1, 0.2, 0.3, 0.4])
    Y = np.array([rng.multinomial(int(c), q_true) for c in counts], dtype=float)
    m = ld.Model()
    q = m.param("q", Dirichlet(np.ones(4)))
    m.observe("Y", Multinomial(m.data("n", counts), q), Y)
    lp = m.compile()
    theta = rng.normal(size=lp.dim)
    v = lp.constrain(theta)["q"]
    expected = stats.dirichlet(np.ones(4)).logpdf(v) + sum(
        stats.multinomial(int(c), v).logpmf(row) for c, row in zip(counts, Y))
    assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, rel=1e-12)
    _check_model_gradient(lp, theta)


def test_model_dirichlet_multinomial_and_observed_dirichlet():
    """alpha ~ Gamma(2, 1); Y ~ DirichletMultinomial(30, alpha) and Z ~
    Dirichlet(alpha), both observed: the partials in alpha of both kernels."""
    rng = np.random.default_rng(11)
    alpha_true = np.array([0.5, 2.0, 3.0])
    Y = rng.multinomial(30, rng.dirichlet(alpha_true), size=20).astype(float)
    Z = rng.dirichlet(alpha_true, size=15)
    m = ld.Model()
    alpha = m.param("alpha", ld.Gamma(2, 1), shape=3)
    m.observe("Y", DirichletMultinomial(30, alpha), Y)
    m.observe("Z", Dirichlet(alpha), Z)
    lp = m.compile()
    theta = rng.normal(size=lp.dim) * 0.5
    a = lp.constrain(theta)["alpha"]
    expected = (stats.gamma(2).logpdf(a).sum() + stats.dirichlet_multinomial(a, 30).logpmf(Y).sum()
                + sum(stats.dirichlet(a).logpdf(z) for z in Z))
    assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, rel=1e-12)
    _check_model_gradient(lp, theta)
