"""LKJCholesky, MvStudentT, OrderedLogistic and OrderedProbit: the distributions
whose arguments have event axes (a matrix, a vector, a vector of cutpoints).

Per distribution: values against scipy or the density written out in mpmath
on a table with extremes, partials against central differences (or mpmath's
derivative where float steps cannot resolve them), the summands adding up to
the whole, invalid parameters and values outside the support, seeded draws
(moments within 5 Monte Carlo standard errors), and one compiled model.

Tolerances, relative to max(1, |reference|) unless said otherwise:
1e-13 where the kernel's value is a short sum of terms each good to a few
ulps; where the inputs themselves are ill-conditioned (a near-singular
scale matrix, a cutpoint gap below eta's rounding) a bound from that
conditioning is added, as stated at each test. Partials against central
differences: rtol 1e-6 with atol 1e-6 max|grad| (steps 1e-6 max(1, |x|):
truncation ~1e-12, rounding ~1e-10 |lp|, STYLE 26).
"""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, stats

import logdens as ld
from logdens.distributions.frozen import InvalidArgumentError
from logdens.distributions.lkj_cholesky import SPEC as LKJ_SPEC
from logdens.distributions.lkj_cholesky import LKJCholesky
from logdens.distributions.lkj_cholesky import check as lkj_check
from logdens.distributions.multivariate import _compiled
from logdens.distributions.mv_student_t import SPEC as MVT_SPEC
from logdens.distributions.mv_student_t import MvStudentT
from logdens.distributions.ordered_logistic import SPEC as OL_SPEC
from logdens.distributions.ordered_logistic import OrderedLogistic
from logdens.distributions.ordered_logistic import check as ordered_check
from logdens.distributions.ordered_probit import SPEC as OP_SPEC
from logdens.distributions.ordered_probit import OrderedProbit
from logdens.event_transforms import cholesky_corr_forward

EPS = np.finfo(float).eps


def central(f, x, h=1e-6):
    """Central differences of the scalar ``f`` at the array ``x``, steps h max(1, |x_i|)."""
    x = np.array(x, dtype=float)
    grad = np.empty(x.shape)
    for index in np.ndindex(x.shape):
        step = h * max(1.0, abs(x[index]))
        e = np.zeros(x.shape)
        e[index] = step
        grad[index] = (f(x + e) - f(x - e)) / (2.0 * step)
    return grad


def assert_partials(analytic, numeric, rtol=1e-6):
    """rtol with an atol of rtol times the largest partial (entries near 0)."""
    scale = max(np.max(np.abs(numeric)), 1e-300)
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=rtol * scale)


def kernel_call(spec, args, keep):
    """The uncompiled ``logpdf_grad`` with ``keep``: ``(lp, partials by name)``;
    scalar arguments get a length-1 partials array, as the engine gives them."""
    _, lengths = spec.split_shapes([np.shape(a) for a in args])
    wanted = spec.gradient_args()
    partials = [np.zeros(np.shape(a) or (1,)) if n in wanted else None for n, a in zip(spec.arg_names, args)]
    lp = spec.logpdf_grad(*args, keep, np.empty(spec.work_size(lengths)), *partials)
    return lp, {n: p for n, p in zip(spec.arg_names, partials) if p is not None}


# ------------------------------------------------------------------ LKJCholesky


def corr_cholesky(d, rng, tiny=None):
    """The Cholesky factor of a random correlation matrix; with ``tiny`` every row
    i >= 1 rescaled to L_ii = tiny (det C = tiny^(2(d-1))), unit rows kept."""
    a = rng.normal(size=(d, d + 2))
    cov = a @ a.T
    s = np.sqrt(np.diag(cov))
    chol = np.linalg.cholesky(cov / s[:, None] / s[None, :])
    if tiny is not None:
        for i in range(1, d):
            chol[i, :i] *= math.sqrt(1.0 - tiny * tiny) / np.linalg.norm(chol[i, :i])
            chol[i, i] = tiny
    return chol


def lkj_reference(chol, eta):
    """The LKJ density of C = L L^T times the Jacobian of C -> L, in mpmath: the
    constant in the paper's own form, c_d^-1 = prod_k [2^(2 b_k - 1) B(b_k, b_k)]^(d-k),
    and det C from C itself (enough digits for its cancellation: the caller's dps)."""
    d = chol.shape[0]
    eta = mp.mpf(eta)
    log_c = mp.mpf(0)
    for k in range(1, d):
        b = eta + mp.mpf(d - 1 - k) / 2
        log_c -= (d - k) * ((2 * b - 1) * mp.log(2) + mp.log(mp.beta(b, b)))
    m = mp.matrix(chol.tolist())
    log_det = mp.log(mp.det(m * m.T))
    jacobian = mp.fsum((d - i - 1) * mp.log(mp.mpf(chol[i, i])) for i in range(1, d))
    return log_c + (eta - 1) * log_det + jacobian


LKJ_CASES = [(d, eta, tiny) for d in (1, 2, 3, 5, 10) for eta in (1e-3, 0.5, 1.0, 2.0, 1e3)
             for tiny in ((None,) if d == 1 else (None, 1e-6))] + [(50, 0.5, None), (50, 1e3, None)]


@pytest.mark.parametrize("d, eta, tiny", LKJ_CASES)
def test_lkj_value(d, eta, tiny):
    """Against ``lkj_reference`` (det C with 30 digits plus the 13 per row that a
    diagonal of 1e-6 cancels). Tolerance 1e-13: the kernel sums d - 1 logs and d - 1
    rising factorials, each within a few ulps (measured: 1.3e-15 at worst)."""
    chol = corr_cholesky(d, np.random.default_rng(d), tiny)
    with mp.workdps(30 if tiny is None else 30 + 13 * d):
        expected = lkj_reference(chol, eta)
    value = LKJCholesky(d, eta).logpdf(chol[None])[0]
    assert abs(value - float(expected)) <= 1e-13 * max(1.0, abs(float(expected)))


@pytest.mark.parametrize("eta", [1e-3, 0.1, 0.5, 1.0, 2.0, 30.0, 1e3])
def test_lkj_d2_integrates_to_one(eta):
    """d = 2: L = [[1, 0], [r, sqrt(1 - r^2)]] and the density of r integrates to 1 over
    (-1, 1). Below eta = 1 the integrand has (1 - r^2)^(eta - 1) poles at the ends:
    quad takes them as an algebraic weight, the rest (the constant) from logpdf."""
    logpdf = _compiled(LKJ_SPEC)[0]

    def chol(r):
        return np.array([[1.0, 0.0], [r, math.sqrt((1.0 - r) * (1.0 + r))]])
    if eta < 1.0:
        def rest(r):  # constant inside; quad also evaluates it at the ends, off the support
            r = min(max(r, -0.5), 0.5)
            return math.exp(logpdf(chol(r), 2.0, eta) - (eta - 1.0) * math.log((1.0 - r) * (1.0 + r)))
        total, _ = integrate.quad(rest, -1.0, 1.0, weight="alg", wvar=(eta - 1.0, eta - 1.0))
    else:
        total, _ = integrate.quad(lambda r: math.exp(logpdf(chol(r), 2.0, eta)), -1.0, 1.0,
                                  points=[0.0], epsabs=1e-13, epsrel=1e-12, limit=200)
    assert total == pytest.approx(1.0, rel=1e-9)  # quad's own accuracy


@pytest.mark.parametrize("eta", [1.0, 2.5])
def test_lkj_d3_marginal_is_beta(eta):
    """d = 3: integrating row 2 out (over the unit disk, in polar coordinates) leaves
    the density of C_10 = L_10, a Beta(eta - 1 + d/2, same) on (-1, 1) (LKJ 2009)."""
    logpdf = _compiled(LKJ_SPEC)[0]

    def density(rho, theta, r):
        chol = np.array([[1.0, 0.0, 0.0], [r, math.sqrt(1.0 - r * r), 0.0],
                         [rho * math.cos(theta), rho * math.sin(theta), math.sqrt(1.0 - rho * rho)]])
        return math.exp(logpdf(chol, 3.0, eta)) * rho
    a = eta + 0.5
    for r in (-0.7, 0.0, 0.4, 0.95):
        marginal, _ = integrate.dblquad(density, 0.0, 2.0 * math.pi, 0.0, 1.0, args=(r,), epsrel=1e-11)
        assert marginal == pytest.approx(stats.beta(a, a, loc=-1.0, scale=2.0).pdf(r), rel=1e-8)


@pytest.mark.parametrize("d, eta", [(2, 0.5), (3, 2.0), (5, 1e-3), (5, 1e3)])
def test_lkj_partials(d, eta):
    """On the support L_ii = sqrt(1 - sum_j<i L_ij^2) is fixed by the strictly lower
    entries l, the density's own coordinates: central differences of logpdf in l
    against d_l = d_x[i, j] - d_x[i, i] l_ij / L_ii (the kernel reads the diagonal
    only), and in eta."""
    chol = corr_cholesky(d, np.random.default_rng(10 + d))
    rows, cols = np.tril_indices(d, -1)

    def factor(lower):
        out = np.zeros((d, d))
        out[rows, cols] = lower
        out[np.diag_indices(d)] = np.sqrt(1.0 - np.sum(out * out, axis=1))
        return out
    lp, grads = LKJCholesky(d, eta).logpdf_grad(chol)
    assert lp == pytest.approx(LKJCholesky(d, eta).logpdf(chol), rel=1e-14)
    assert np.all(grads["x"][rows, cols] == 0.0) and set(grads) == {"x", "concentration"}
    d_lower = grads["x"][rows, cols] - grads["x"][rows, rows] * chol[rows, cols] / chol[rows, rows]
    if d > 1:
        assert_partials(d_lower, central(lambda v: LKJCholesky(d, eta).logpdf(factor(v)), chol[rows, cols]))
    numeric = central(lambda e: LKJCholesky(d, float(e)).logpdf(chol), np.array(eta))
    assert_partials(grads["concentration"], numeric)


def test_lkj_constant_derivative_for_huge_and_tiny_eta():
    """d/deta log c_d against mpmath's derivative of the paper's constant (float steps
    cannot resolve it at eta = 1e8); relative 1e-12: digamma differences, no cancellation."""
    chol = np.eye(4)  # log L_ii = 0: the partial is the constant's alone
    for eta in (1e-3, 1.0, 1e8):
        def log_c(e):
            return lkj_reference(chol, e)
        with mp.workdps(40):
            expected = float(mp.diff(log_c, mp.mpf(eta)))
        _, grads = LKJCholesky(4, eta).logpdf_grad(chol)
        assert grads["concentration"] == pytest.approx(expected, rel=1e-12)


def test_lkj_errors_and_support():
    with pytest.raises(InvalidArgumentError, match=r"concentration=-1.0"):
        LKJCholesky(3, -1.0)
    with pytest.raises(InvalidArgumentError, match=r"concentration=0.0"):
        LKJCholesky(3, 0.0)
    with pytest.raises(InvalidArgumentError, match=r"dim=2.5"):
        LKJCholesky(2.5, 1.0)
    with pytest.raises(InvalidArgumentError, match=r"dim=0.0, must be >= 1"):
        LKJCholesky(0, 1.0)
    with pytest.raises(InvalidArgumentError, match=r"dim=array"):
        LKJCholesky(np.array([2, 3]), 1.0)
    with pytest.raises(InvalidArgumentError, match=r"x has events of shape \(2, 2\) but dim=3"):
        LKJCholesky(3, 1.0).logpdf(np.eye(2))
    dist = LKJCholesky(3, 2.0)
    good = corr_cholesky(3, np.random.default_rng(0))
    upper = good.copy()
    upper[0, 2] = 1e-3
    long_row = good.copy()
    long_row[2, 0] += 1e-6
    negative = good.copy()
    negative[1] *= -1.0
    bad = np.stack([upper, long_row, negative])
    assert np.all(dist.logpdf(bad) == -np.inf)
    assert np.isfinite(dist.logpdf(good))
    np.testing.assert_array_equal(lkj_check(np.stack([good, *bad]), {"d": 3}, {}), [True, False, False, False])
    assert dist.event_shape() == (3, 3)


@pytest.mark.parametrize("d, eta", [(4, 2.0), (4, 0.5), (10, 50.0)])
def test_lkj_draws(d, eta):
    """Every draw is in the support, and each correlation C_ij (i > j) has the
    marginal Beta(eta - 1 + d/2, same) on (-1, 1): mean 0 and variance
    1 / (2 eta + d - 1) within 5 standard errors, and a Kolmogorov-Smirnov test
    (p > 1e-4) of the last row's first entry, which the onion's last step draws."""
    n = 4000
    draws = LKJCholesky(d, eta).rvs(size=n, seed=3)
    assert draws.shape == (n, d, d)
    assert np.all(lkj_check(draws, {"d": d}, {}))
    assert np.all(np.isfinite(LKJCholesky(d, eta).logpdf(draws)))
    corr = draws @ np.swapaxes(draws, -1, -2)
    r = corr[:, np.tril_indices(d, -1)[0], np.tril_indices(d, -1)[1]]
    assert np.all(np.abs(r.mean(0)) < 5 * r.std(0) / math.sqrt(n))
    variance = 1.0 / (2.0 * eta + d - 1.0)
    assert np.all(np.abs((r * r).mean(0) - variance) < 5 * (r * r).std(0) / math.sqrt(n))
    a = eta - 1.0 + d / 2.0
    assert stats.kstest(corr[:, d - 1, 0], stats.beta(a, a, loc=-1.0, scale=2.0).cdf).pvalue > 1e-4


def test_lkj_prior_in_a_model():
    """eta ~ Gamma(2, 1), L ~ LKJCholesky(4, eta) and one observed factor of the same
    distribution: the full log density with the transforms' log-Jacobians
    (eta = exp(u): u; L: the determinant of a numerical Jacobian of the map to L's
    strictly lower entries, good to ~1e-8) against the references, and the
    gradient (eta's partial included) against central differences."""
    d = 4
    observed = corr_cholesky(d, np.random.default_rng(5))
    m = ld.Model()
    eta = m.param("eta", ld.Gamma(2.0, 1.0))
    m.param("L", LKJCholesky(d, eta))
    m.observe("L_seen", LKJCholesky(d, eta), observed)
    lp = m.compile()
    assert lp.dim == 1 + d * (d - 1) // 2
    theta = np.random.default_rng(4).normal(size=lp.dim) * 0.7
    values = lp.constrain(theta)
    slot = lp.layout.params["L"]
    u = theta[slot.offset:slot.offset + slot.size]
    rows, cols = np.tril_indices(d, -1)

    def lower(v):
        out = np.empty(d * d)
        cholesky_corr_forward(v, 0, out, d)
        return out.reshape(d, d)[rows, cols]
    log_j = np.linalg.slogdet(np.array([(lower(u + 1e-6 * e) - lower(u - 1e-6 * e)) / 2e-6
                                        for e in np.eye(slot.size)]))[1]
    eta_value = float(values["eta"])
    with mp.workdps(30):
        expected = (stats.gamma(2.0).logpdf(eta_value) + math.log(eta_value)
                    + float(lkj_reference(values["L"], eta_value) + lkj_reference(observed, eta_value)) + log_j)
    assert lp.log_density(theta, propto=False) == pytest.approx(expected, abs=1e-7)
    value, grad = lp.log_density_gradient(theta)
    assert value == pytest.approx(lp.log_density(theta), rel=1e-13)
    assert_partials(grad, central(lp.log_density, theta))


# ------------------------------------------------------------------ MvStudentT


def lower_factor(d, rng, tiny=None):
    """A lower-triangular factor with a diagonal in [0.5, 2] (its last entry ``tiny``)
    and junk above the diagonal, which the kernel must not read."""
    chol = np.tril(rng.normal(size=(d, d)) * 0.5, -1) + np.diag(rng.uniform(0.5, 2.0, size=d))
    if tiny is not None:
        chol[-1, -1] = tiny
    return chol + np.triu(np.full((d, d), 7.0), 1)


def mvt_reference(x, df, loc, chol):
    """The log density written out in mpmath (z by an LU solve at the working precision)."""
    d = len(x)
    nu = mp.mpf(df)
    lower = mp.matrix(np.tril(chol).tolist())
    z = mp.lu_solve(lower, mp.matrix([mp.mpf(a) - mp.mpf(b) for a, b in zip(x, loc)]))
    quadratic = mp.fsum(v * v for v in z)
    return (mp.loggamma((nu + d) / 2) - mp.loggamma(nu / 2) - d * mp.log(nu * mp.pi) / 2
            - mp.fsum(mp.log(mp.mpf(chol[i, i])) for i in range(d)) - (nu + d) / 2 * mp.log1p(quadratic / nu))


def mvt_case(d, tiny, spread, seed):
    rng = np.random.default_rng(seed)
    chol = lower_factor(d, rng, tiny)
    loc = rng.normal(size=d)
    return loc + np.tril(chol) @ rng.normal(size=d) * spread, loc, chol


MVT_CASES = [(d, df, tiny, spread) for d in (1, 2, 5, 50) for df in (1e-3, 0.5, 3.0, 1e3, 1e8)
             for tiny in (None, 1e-6) for spread in (1.0, 1e3)]


@pytest.mark.parametrize("d, df, tiny, spread", MVT_CASES)
def test_mvt_value(d, df, tiny, spread):
    """Against ``mvt_reference`` with 1e-13 + 10 eps cond(L): the forward solve is
    backward stable, so z carries cond(L) eps of relative error (measured below
    4 eps cond(L)), and a diagonal entry of 1e-6 makes cond(L) 1e6 to 1e9. Where
    scipy's eigendecomposition can take the scale matrix (well conditioned,
    df <= 1e3; its gammaln difference cancels for huge df) also against
    ``scipy.stats.multivariate_t``, to 1e-10 (its own error reached 1.4e-12)."""
    x, loc, chol = mvt_case(d, tiny, spread, seed=d + int(spread))
    with mp.workdps(40):
        expected = float(mvt_reference(x, df, loc, chol))
    value = MvStudentT(df, loc, chol).logpdf(x[None])[0]
    tol = 1e-13 + 10 * EPS * np.linalg.cond(np.tril(chol))
    assert abs(value - expected) <= tol * max(1.0, abs(expected))
    if tiny is None and df <= 1e3:
        shape = np.tril(chol) @ np.tril(chol).T
        assert value == pytest.approx(stats.multivariate_t(loc, shape, df=df).logpdf(x), rel=1e-10)


@pytest.mark.parametrize("d, df, spread", [(1, 0.5, 1.0), (2, 3.0, 1e3), (3, 1e-3, 1.0), (5, 1e3, 1.0),
                                           (5, 3.0, 1.0)])
def test_mvt_partials(d, df, spread):
    """x, loc, scale_tril (the upper triangle included: its partials are 0, as its
    differences) and df against central differences of logpdf."""
    x, loc, chol = mvt_case(d, None, spread, seed=20 + d)
    lp, grads = MvStudentT(df, loc, chol).logpdf_grad(x)
    assert lp == pytest.approx(MvStudentT(df, loc, chol).logpdf(x), rel=1e-14)
    assert_partials(grads["x"], central(lambda v: MvStudentT(df, loc, chol).logpdf(v), x))
    assert_partials(grads["loc"], central(lambda v: MvStudentT(df, v, chol).logpdf(x), loc))
    assert_partials(grads["scale_tril"], central(lambda v: MvStudentT(df, loc, v).logpdf(x), chol))
    assert np.all(grads["scale_tril"][np.triu_indices(d, 1)] == 0.0)
    assert_partials(grads["df"], central(lambda v: MvStudentT(float(v), loc, chol).logpdf(x), np.array(df)))


@pytest.mark.parametrize("df", [1e-3, 3.0, 1e4, 1e8, 1e12])
def test_mvt_df_partial_against_mpmath(df):
    """d/d(df) against mpmath's derivative of the reference, relative 1e-9: for huge
    df it is of order d^2 / df^2 and float steps cannot resolve it; the kernel
    forms both of its brackets without cancellation."""
    for d, spread in ((3, 1.0), (4, 30.0)):
        x, loc, chol = mvt_case(d, None, spread, seed=30 + d)
        with mp.workdps(60):
            expected = float(mp.diff(lambda v: mvt_reference(x, v, loc, chol), mp.mpf(df)))
        _, grads = MvStudentT(df, loc, chol).logpdf_grad(x)
        assert grads["df"] == pytest.approx(expected, rel=1e-9)


def test_mvt_errors_and_support():
    loc, chol = np.zeros(2), np.eye(2)
    with pytest.raises(InvalidArgumentError, match=r"df=0.0"):
        MvStudentT(0.0, loc, chol)
    with pytest.raises(InvalidArgumentError, match=r"df=-2.0"):
        MvStudentT(-2.0, loc, chol)
    with pytest.raises(InvalidArgumentError, match=r"scale_tril\[1, 1\]=-1.0.*positive"):
        MvStudentT(3.0, loc, np.array([[1.0, 0.0], [0.3, -1.0]]))
    with pytest.raises(InvalidArgumentError, match=r"loc\[1\]=nan"):
        MvStudentT(3.0, np.array([0.0, np.nan]), chol)
    with pytest.raises(InvalidArgumentError, match=r"axis 'd' has length 3 in x but 2 in loc"):
        MvStudentT(3.0, loc, chol).logpdf(np.zeros(3))
    out = MvStudentT(3.0, loc, chol).logpdf(np.array([[np.inf, 0.0], [0.0, -np.inf], [1e200, 1e200]]))
    assert out[0] == -np.inf and out[1] == -np.inf
    # |z|^2 overflows at 1e200 but the density does not: -(nu + d)/2 log(|z|^2 / nu)
    assert out[2] == pytest.approx(float(mvt_reference([1e200, 1e200], 3.0, loc, chol)), rel=1e-14)


def test_mvt_draws():
    """Mean loc and covariance df / (df - 2) L L^T, each entry within 5 standard
    errors (estimated from the draws; df = 10 keeps the fourth moments finite);
    every draw finite."""
    n, df = 20000, 10.0
    loc = np.array([1.0, -2.0, 0.5])
    chol = np.tril(lower_factor(3, np.random.default_rng(6)))
    draws = MvStudentT(df, loc, chol).rvs(size=n, seed=7)
    assert draws.shape == (n, 3) and np.all(np.isfinite(draws))
    assert np.all(np.abs(draws.mean(0) - loc) < 5 * draws.std(0) / math.sqrt(n))
    centred = draws - loc
    products = centred[:, :, None] * centred[:, None, :]
    cov = df / (df - 2.0) * chol @ chol.T
    assert np.all(np.abs(products.mean(0) - cov) < 5 * products.std(0) / math.sqrt(n))


def test_mvt_observed_in_a_model():
    """Y ~ MvStudentT(nu, mu, diag_pre_multiply(sigma, Lc)) with every argument a
    parameter (Lc under an LKJ prior): the full density without Jacobians against
    scipy's multivariate_t and the priors' scipy densities (the LKJ one from
    ``lkj_reference``), relative 1e-11; the gradient against central differences."""
    d, n = 3, 40
    rng = np.random.default_rng(8)
    y = rng.standard_t(4.0, size=(n, d)) * [1.0, 2.0, 0.5] + [1.0, 0.0, -1.0]
    m = ld.Model()
    nu = m.param("nu", ld.Gamma(2.0, 0.1))
    mu = m.param("mu", ld.Normal(0.0, 5.0), shape=d)
    sigma = m.param("sigma", ld.HalfNormal(2.0), shape=d)
    corr = m.param("corr", LKJCholesky(d, 2.0))
    m.observe("y", MvStudentT(nu, mu, ld.diag_pre_multiply(sigma, corr)), y)
    lp = m.compile()
    theta = rng.normal(size=lp.dim) * 0.5
    v = lp.constrain(theta)
    chol = v["sigma"][:, None] * v["corr"]
    with mp.workdps(30):
        lkj = float(lkj_reference(v["corr"], 2.0))
    expected = (stats.gamma(2.0, scale=10.0).logpdf(v["nu"]) + stats.norm(0, 5).logpdf(v["mu"]).sum()
                + stats.halfnorm(scale=2.0).logpdf(v["sigma"]).sum() + lkj
                + stats.multivariate_t(v["mu"], chol @ chol.T, df=float(v["nu"])).logpdf(y).sum())
    assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, rel=1e-11)
    value, grad = lp.log_density_gradient(theta)
    assert value == pytest.approx(lp.log_density(theta), rel=1e-13)
    assert_partials(grad, central(lp.log_density, theta))


# ------------------------------------------------- OrderedLogistic, OrderedProbit


def ordered_reference(kind, k, eta, cutpoints):
    """log P(x = k) = log(F(s) - F(t)), s = eta - c_{k-1}, t = eta - c_k, in mpmath at
    the working precision, in a form that never subtracts numbers near 1 (the working
    precision is all mpmath carries): log1p of minus the two tails F(t) + F(-s) where
    they are small (P near 1), else F(s) - F(t), or F(-t) - F(-s) right of the middle."""
    cdf = (lambda u: 1 / (1 + mp.exp(-u))) if kind == "logistic" else mp.ncdf
    c = [mp.mpf(v) for v in cutpoints]
    s = mp.inf if k == 0 else mp.mpf(eta) - c[k - 1]
    t = -mp.inf if k == len(c) else mp.mpf(eta) - c[k]
    tails = cdf(t) + cdf(-s)
    if tails < 0.5:
        return mp.log1p(-tails)
    mass = cdf(s) - cdf(t) if s + t <= 0 else cdf(-t) - cdf(-s)
    assert mass > 0
    return mp.log(mass)


ORDERED = {"logistic": OrderedLogistic, "probit": OrderedProbit}
CUTPOINT_SETS = {"one": np.array([0.0]), "three": np.array([-1.0, 0.5, 2.0]),
                 "close": np.array([-20.0, 0.0, 1e-6, 20.0]), "wide": np.array([-400.0, 400.0]),
                 "many": np.linspace(-5.0, 5.0, 49)}
ETAS = (-40.0, -3.0, 0.0, 0.7, 40.0)


def gap_tolerance(kind, k, eta, cutpoints):
    """The probit's extra error: its gap b - a comes from a = c_{k-1} - eta and
    b = c_k - eta, each rounded by eps |.|, and log P moves by the gap's relative
    error. The logistic takes the gap from the cutpoints: nothing extra."""
    if kind == "logistic" or k == 0 or k == len(cutpoints):
        return 0.0
    a, b = cutpoints[k - 1] - eta, cutpoints[k] - eta
    return 2 * EPS * (abs(a) + abs(b)) / (cutpoints[k] - cutpoints[k - 1])


@pytest.mark.parametrize("kind", ORDERED)
@pytest.mark.parametrize("name", CUTPOINT_SETS)
def test_ordered_value(kind, name):
    """Every category at etas from -40 to 40 (masses down to 1e-350) against mpmath
    at 60 digits, 1e-13 (plus ``gap_tolerance``); the masses sum to 1."""
    cutpoints = CUTPOINT_SETS[name]
    categories = np.arange(len(cutpoints) + 1)
    for eta in ETAS:
        dist = ORDERED[kind](eta, cutpoints)
        values = dist.logpdf(categories)
        with mp.workdps(60):
            expected = [float(ordered_reference(kind, k, eta, cutpoints)) for k in categories]
        for k, (value, ref) in enumerate(zip(values, expected)):
            tol = 1e-13 * max(1.0, abs(ref)) + gap_tolerance(kind, k, eta, cutpoints)
            assert abs(value - ref) <= tol, (eta, k, value, ref)
        assert np.exp(values).sum() == pytest.approx(1.0, rel=1e-13)


@pytest.mark.parametrize("kind", ORDERED)
def test_ordered_partials_against_mpmath(kind):
    """d/deta and d/dc against mpmath's derivatives of the reference over the tails
    and the close gap, relative 1e-9 plus the gap's rounding (``gap_tolerance``, for
    the probit: its partials there are ~1/gap and carry the same relative error)."""
    for name in ("one", "three", "close", "wide"):
        cutpoints = CUTPOINT_SETS[name]
        for eta in ETAS:
            categories = np.arange(len(cutpoints) + 1)
            _, grads = ORDERED[kind](eta, cutpoints).logpdf_grad(categories)
            assert "x" not in grads
            for k in categories:
                with mp.workdps(60):
                    d_eta = float(mp.diff(lambda e: ordered_reference(kind, k, e, cutpoints), mp.mpf(eta)))
                    d_c = np.zeros(len(cutpoints))
                    for j in {k - 1, k} & set(range(len(cutpoints))):
                        def shifted(v, j=j):
                            c = [mp.mpf(t) for t in cutpoints]
                            c[j] = v
                            return ordered_reference(kind, k, eta, c)
                        d_c[j] = float(mp.diff(shifted, mp.mpf(cutpoints[j])))
                tol = 1e-9 + gap_tolerance(kind, k, eta, cutpoints)
                scale = max(abs(d_eta), np.max(np.abs(d_c)))
                assert abs(grads["eta"][k] - d_eta) <= tol * scale, (name, eta, k)
                np.testing.assert_allclose(grads["cutpoints"][k], d_c, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("kind", ORDERED)
def test_ordered_partials_central(kind):
    """Central differences of logpdf in eta and the cutpoints (steps 1e-6, far below
    the gaps of 0.25 and more), every category of four cutpoint vectors."""
    for cutpoints in (np.array([-1.0, 0.5, 2.0]), np.array([0.3]), np.linspace(-2.0, 3.0, 6)):
        for eta in (-2.5, 0.4, 3.0):
            for k in range(len(cutpoints) + 1):
                _, grads = ORDERED[kind](eta, cutpoints).logpdf_grad(k)
                assert_partials(grads["eta"],
                                central(lambda e: ORDERED[kind](float(e), cutpoints).logpdf(k), np.array(eta)))
                assert_partials(grads["cutpoints"], central(lambda c: ORDERED[kind](eta, c).logpdf(k), cutpoints))


@pytest.mark.parametrize("kind", ORDERED)
def test_ordered_errors_and_support(kind):
    cls = ORDERED[kind]
    name = cls.spec.name
    with pytest.raises(InvalidArgumentError, match=rf"{name}: cutpoints\[2\]=0.5 is not above .* 1.0"):
        cls(0.0, np.array([-1.0, 1.0, 0.5]))
    with pytest.raises(InvalidArgumentError, match=rf"{name}: cutpoints\[1, 1\]=0.0"):
        cls(0.0, np.array([[-1.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(InvalidArgumentError, match=rf"{name}: cutpoints is empty"):
        cls(0.0, np.zeros(0))
    with pytest.raises(InvalidArgumentError, match=rf"{name}: eta=nan"):
        cls(np.nan, np.array([0.0, 1.0]))
    with pytest.raises(InvalidArgumentError, match=rf"{name}: cutpoints\[1\]=inf"):
        cls(0.0, np.array([0.0, np.inf]))
    dist = cls(0.3, np.array([-1.0, 1.0]))
    np.testing.assert_array_equal(dist.logpdf(np.array([-1.0, 3.0, 1.5, 7.0])), -np.inf)
    assert np.all(np.isfinite(dist.logpdf(np.array([0.0, 1.0, 2.0]))))
    np.testing.assert_array_equal(ordered_check(np.array([0, 2, 3]), {"c": 2}, {}), [True, True, False])


@pytest.mark.parametrize("kind", ORDERED)
def test_ordered_draws(kind):
    """Category frequencies of 20000 seeded draws within 5 binomial standard errors
    of the masses; every draw a category."""
    n = 20000
    dist = ORDERED[kind](0.4, np.array([-1.0, 0.0, 1.5]))
    draws = dist.rvs(size=n, seed=9)
    assert draws.dtype == np.int64 and set(np.unique(draws)) <= {0, 1, 2, 3}
    p = np.exp(dist.logpdf(np.arange(4)))
    freq = np.bincount(draws, minlength=4) / n
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / n))


def test_summands_add_up():
    """Each distribution's kernel with one summand kept at a time, summed, gives the
    full value and partials (the uncompiled kernel, from Python)."""
    rng = np.random.default_rng(11)
    x, loc, chol = mvt_case(3, None, 1.0, seed=12)
    points = [
        (LKJ_SPEC, [corr_cholesky(4, rng), 4.0, 1.7]),
        (MVT_SPEC, [x, 2.5, loc, np.tril(chol)]),
        (OL_SPEC, [2.0, 0.3, np.array([-1.0, 0.5, 2.0])]),
        (OL_SPEC, [1.0, 0.3, np.array([-400.0, 400.0])]),  # a gap whose expm1 overflows
        (OP_SPEC, [1.0, 0.3, np.array([-1.0, 0.5, 2.0])]),
    ]
    for spec, args in points:
        full, full_partials = kernel_call(spec, args, spec.keep_all)
        assert full == pytest.approx(_compiled(spec)[0](*args), rel=1e-14)
        total, summed = 0.0, {n: 0.0 for n in full_partials}
        for k in range(len(spec.summands)):
            keep = tuple(j == k for j in range(len(spec.summands)))
            lp, partials = kernel_call(spec, args, keep)
            total += lp
            summed = {n: summed[n] + partials[n] for n in summed}
        assert total == pytest.approx(full, rel=1e-14), spec.name
        for n in full_partials:
            np.testing.assert_allclose(summed[n], full_partials[n], rtol=1e-14, atol=1e-15)


def test_ordered_terms_in_a_model():
    """eta = X @ beta, ordered cutpoints c as a parameter, one OrderedLogistic and one
    OrderedProbit term: the full density (the ordered transform's log-Jacobian is
    sum u_k, k >= 1) against scipy's normal priors and the mpmath masses, relative
    1e-12; the gradient against central differences. An observed category past the
    last is refused with the ``check`` condition."""
    rng = np.random.default_rng(13)
    n, p = 60, 2
    x = rng.normal(size=(n, p))
    y1, y2 = rng.integers(0, 4, size=n), rng.integers(0, 4, size=n)
    m = ld.Model()
    beta = m.param("beta", ld.Normal(0.0, 2.0), shape=p)
    c = m.param("c", ld.Normal(0.0, 5.0), shape=3, constraint=ld.ordered)
    eta = ld.matmul(m.data("x", x), beta)
    m.observe("y1", OrderedLogistic(eta, c), y1)
    m.observe("y2", OrderedProbit(eta, c), y2)
    lp = m.compile()
    theta = rng.normal(size=lp.dim) * 0.5
    v = lp.constrain(theta)
    slot = lp.layout.params["c"]
    etas = x @ v["beta"]
    with mp.workdps(30):
        masses = sum(float(ordered_reference("logistic", k, e, v["c"])) for k, e in zip(y1, etas))
        masses += sum(float(ordered_reference("probit", k, e, v["c"])) for k, e in zip(y2, etas))
    expected = (stats.norm(0, 2).logpdf(v["beta"]).sum() + stats.norm(0, 5).logpdf(v["c"]).sum()
                + theta[slot.offset + 1:slot.offset + slot.size].sum() + masses)
    assert lp.log_density(theta, propto=False) == pytest.approx(expected, rel=1e-12)
    value, grad = lp.log_density_gradient(theta)
    assert value == pytest.approx(lp.log_density(theta), rel=1e-13)
    assert_partials(grad, central(lp.log_density, theta))
    with pytest.raises(ld.ModelError, match="x is below K = len"):
        lp.set_data(y1=np.where(y1 == 3, 4, y1))
