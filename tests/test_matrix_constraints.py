"""The ``cov_matrix`` and ``corr_matrix`` constraints and ``LKJCorr``.

The transforms (``logdens.event_transforms``): log|J| against the log
determinant of a Jacobian of an independent implementation in mpmath (50
digits, central steps of 1e-20: the Jacobian is exact to ~1e-30, so the
tolerance, 1e-13 of max(1, |log|J||), is the float kernel's own rounding over
d^2 terms); values in the set, ``inverse`` undoing ``forward``; the reverse
sweeps against central differences of sum(a * w) + c log|J| for adjoints a
that are not symmetric (the engine adds the two entries of a pair apart).
``unconstrain`` errors through a compiled density. ``LKJCorr``: against
scipy's Beta for d = 2 and ``LKJCholesky`` by the change of variables C -> L,
partials, support, draws, compiled models, and one NUTS posterior.

Central differences: steps 1e-6 max(1, |x|), rtol 1e-6 with an atol of 1e-6
times the largest partial (truncation ~1e-12, rounding ~1e-10 |f|), unless a
test says otherwise.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import logdens as ld
from engine_helpers import check_gradient
from logdens import event_transforms as events
from logdens.distributions.frozen import InvalidArgumentError
from logdens.distributions.lkj_corr import check as lkj_corr_check
from logdens.samplers.diagnostics import bulk_ess

SIZES = {"cov_matrix": lambda d: d * (d + 1) // 2, "corr_matrix": lambda d: d * (d - 1) // 2}


def central(f, x, h=1e-6):
    """Central differences of the scalar ``f`` at the array ``x``, steps h max(1, |x_i|)."""
    x = np.array(x, dtype=float)
    grad = np.empty(x.shape)
    for index in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[index] = h * max(1.0, abs(x[index]))
        grad[index] = (f(x + e) - f(x - e)) / (2.0 * e[index])
    return grad


def assert_partials(analytic, numeric, rtol=1e-6):
    """rtol with an atol of rtol times the largest partial (entries near 0)."""
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=rtol * max(np.abs(numeric).max(), 1e-300))


def forward(name, u, d):
    """``(w as a d x d matrix, log|J|)`` of the float kernel."""
    w = np.empty(d * d)
    log_j = getattr(events, f"{name}_forward")(np.asarray(u, dtype=float), 0, w, d)
    return w.reshape(d, d), log_j


def random_corr(d, rng):
    """A random correlation matrix and its Cholesky factor (numpy's, rows unit)."""
    a = rng.normal(size=(d, d + 2))
    cov = a @ a.T
    s = np.sqrt(np.diag(cov))
    chol = np.linalg.cholesky(cov / s[:, None] / s[None, :])
    chol /= np.linalg.norm(chol, axis=1, keepdims=True)
    corr = chol @ chol.T
    return 0.5 * (corr + corr.T), chol


# ------------------------------------------------------------------ transforms


def _mp_factor(name, u, d):
    """L from u in mpmath, by Stan's formulas (not the kernels' running products):
    cov, row by row, u below the diagonal and exp(u) on it; corr, z = tanh(u),
    L_ij = z_ij sqrt(1 - sum_{k<j} L_ik^2), L_ii = sqrt(1 - sum_{k<i} L_ik^2)."""
    chol = [[mp.mpf(0)] * d for _ in range(d)]
    k = 0
    for i in range(d):
        if name == "cov_matrix":
            for j in range(i + 1):
                chol[i][j] = mp.exp(u[k]) if i == j else u[k]
                k += 1
            continue
        sq = mp.mpf(0)
        for j in range(i):
            chol[i][j] = mp.tanh(u[k]) * mp.sqrt(1 - sq)
            sq += chol[i][j] ** 2
            k += 1
        chol[i][i] = mp.sqrt(1 - sq)
    return chol


def _mp_free_entries(name, u, d):
    """The free entries of Sigma = L L^T: the lower triangle with its diagonal
    (cov), or without (corr: the diagonal is 1)."""
    chol = _mp_factor(name, u, d)
    last = 1 if name == "cov_matrix" else 0
    return [mp.fsum(chol[i][k] * chol[j][k] for k in range(j + 1)) for i in range(d) for j in range(i + last)]


def _mp_log_jacobian(name, u, d):
    """log|det| of the Jacobian of u -> free entries, by central differences at 50
    digits with steps of 1e-20 (truncation ~1e-40, rounding ~1e-30)."""
    with mp.workdps(50):
        u = [mp.mpf(float(x)) for x in u]
        h = mp.mpf("1e-20")
        columns = []
        for k in range(len(u)):
            up = [x + h if j == k else x for j, x in enumerate(u)]
            down = [x - h if j == k else x for j, x in enumerate(u)]
            columns.append([(a - b) / (2 * h) for a, b in zip(_mp_free_entries(name, up, d),
                                                                _mp_free_entries(name, down, d))])
        return float(mp.log(abs(mp.det(mp.matrix(columns)))))


@pytest.mark.parametrize("name, d", [("cov_matrix", 1), ("cov_matrix", 2), ("cov_matrix", 3), ("cov_matrix", 5),
                                     ("corr_matrix", 2), ("corr_matrix", 3), ("corr_matrix", 4),
                                     ("corr_matrix", 5)])
def test_log_jacobian(name, d):
    """cov: log|J| = sum_k (d - k + 1) u_kk + d log 2 (cholesky_cov's u_kk and
    log|J| of L -> L L^T, 2^d prod_k L_kk^(d - k)); corr: cholesky_corr's plus
    sum_i (d - 1 - i) log L_ii. Against ``_mp_log_jacobian``, rel 1e-13."""
    rng = np.random.default_rng(d)
    u = rng.normal(size=SIZES[name](d)) * 1.2
    _, log_j = forward(name, u, d)
    expected = _mp_log_jacobian(name, u, d)
    assert abs(log_j - expected) <= 1e-13 * max(1.0, abs(expected))


def test_corr_matrix_of_side_one():
    """No coordinates: Omega = [[1]], log|J| = 0."""
    w, log_j = forward("corr_matrix", np.empty(0), 1)
    assert w.tolist() == [[1.0]] and log_j == 0.0


@pytest.mark.parametrize("name, d", [("cov_matrix", 1), ("cov_matrix", 4), ("corr_matrix", 2),
                                     ("corr_matrix", 5)])
def test_values_and_round_trip(name, d):
    """Values are exactly symmetric (the upper triangle is a copy), positive
    definite, with a diagonal of exactly 1 for corr; ``inverse`` undoes
    ``forward`` (rel 1e-10: a Cholesky factorization and arctanh between)."""
    transform = events.for_event_constraint(name)
    transform.check_shape((d, d), "x")
    assert transform.unconstrained_size((d, d)) == SIZES[name](d)
    u = np.random.default_rng(d).normal(size=SIZES[name](d))
    x = transform.forward(u)
    assert x.shape == (d, d) and np.array_equal(x, x.T)
    assert np.all(np.linalg.eigvalsh(x) > 0.0)
    if name == "corr_matrix":
        assert np.all(np.diagonal(x) == 1.0)
    np.testing.assert_allclose(transform.inverse(x), u, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(transform.forward(transform.inverse(x)), x, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("jacobian", [0.7, 0.0])
@pytest.mark.parametrize("name, d", [("cov_matrix", 1), ("cov_matrix", 2), ("cov_matrix", 5),
                                     ("corr_matrix", 2), ("corr_matrix", 3), ("corr_matrix", 5)])
def test_reverse_sweep(name, d, jacobian):
    """The gradient of sum(a * w) + c log|J| in u, for adjoints a of every entry
    (not symmetric, the diagonal's too), against central differences; ``w``
    and ``a`` are unchanged afterwards (corr's sweep borrows w's repeated half
    and restores it exactly)."""
    rng = np.random.default_rng(10 + d)
    u = rng.normal(size=SIZES[name](d))
    adjoint = rng.normal(size=d * d)

    def objective(v):
        w, log_j = forward(name, v, d)
        return np.sum(adjoint * w.ravel()) + jacobian * log_j
    w = forward(name, u, d)[0].ravel()
    w_before, adjoint_before = w.copy(), adjoint.copy()
    grad = np.zeros(u.size)
    getattr(events, f"{name}_reverse")(u, 0, w, adjoint, grad, jacobian, d)
    assert np.array_equal(w, w_before) and np.array_equal(adjoint, adjoint_before)
    assert_partials(grad, central(objective, u))


def test_far_out_coordinates():
    """cov with a diagonal coordinate below the floor (-800): L_kk is exp(-700),
    its log|J| keeps the formula in u and its derivative (d - k + 1); corr at
    |u| = 30, where tanh rounds to 1: Omega is 1 to rounding but its factor's
    diagonal stays positive, log|J| finite."""
    u = np.array([-800.0, 0.3, 0.5])  # d = 2: u_00, u_10, u_11
    w, log_j = forward("cov_matrix", u, 2)
    assert np.all(np.isfinite(w)) and log_j == pytest.approx(2 * math.log(2) + 3 * -800.0 + 2 * 0.5, rel=1e-15)
    grad = np.zeros(3)
    events.cov_matrix_reverse(u, 0, w.ravel().copy(), np.ones(4), grad, 1.0, 2)
    assert grad[0] == 3.0 and np.all(np.isfinite(grad))
    w, log_j = forward("corr_matrix", np.array([30.0, -30.0, 1.0]), 3)
    assert np.isfinite(log_j) and np.all(np.isfinite(w))


# ------------------------------------------------------------------ compiled densities


@pytest.fixture(scope="module")
def matrices():
    """S: cov_matrix and R: corr_matrix under elementwise Normal priors (legal, if
    odd), linked by a potential that reads a row of S and a column of R (the
    adjoints of (i, j) and (j, i) differ, the diagonal's too), and observations
    whose mean reads one entry of each."""
    m = ld.Model()
    s = m.param("S", ld.Normal(0, 1), shape=(3, 3), constraint=ld.cov_matrix)
    r = m.param("R", ld.Normal(0, 1), shape=(3, 3), constraint=ld.corr_matrix)
    m.potential("link", ld.sum(s * r) + ld.sum(s[0] * ld.exp(r[:, 1])))
    rng = np.random.default_rng(0)
    m.observe("y", ld.Normal(s[1, 2] * m.data("x", rng.normal(size=12)) + r[2, 0], 1.0), rng.normal(size=12))
    return m, m.compile()


def test_matrix_params_gradient_and_round_trip(matrices):
    m, lp = matrices
    assert lp.dim == 6 + 3
    rng = np.random.default_rng(3)
    theta = rng.normal(size=lp.dim) * 0.7
    value, grad = lp.log_density_gradient(theta)
    assert value == pytest.approx(lp.log_density(theta), rel=1e-13)
    assert_partials(grad, central(lp.log_density, theta))
    check_gradient(lp, theta, rng, jacobian=False)
    values = lp.constrain(theta)
    assert np.array_equal(values["S"], values["S"].T) and np.all(np.diagonal(values["R"]) == 1.0)
    np.testing.assert_allclose(lp.unconstrain(values), theta, rtol=1e-10, atol=1e-12)
    twin = m.compile(backend="python")
    value2, grad2 = twin.log_density_gradient(theta)
    assert value2 == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(grad2, grad, rtol=1e-10, atol=1e-12)


def test_matrix_params_per_sample_rows(matrices):
    """Each row's gradient runs the reverse sweeps once per row (into that row,
    without the Jacobian) on the same ``w``: the rows sum to the gradient of the
    observations' log likelihood (central differences of the pointwise sum)."""
    _, lp = matrices
    theta = np.random.default_rng(4).normal(size=lp.dim) * 0.7
    rows = lp.per_sample_gradient(theta, "y")
    assert rows.shape == (12, lp.dim)
    assert_partials(rows.sum(0), central(lambda t: lp.pointwise_log_likelihood(t)["y"].sum(), theta))


def test_unconstrain_errors_name_the_parameter(matrices):
    _, lp = matrices
    values = lp.constrain(np.zeros(lp.dim))
    asymmetric = values["S"].copy()
    asymmetric[0, 2] += 1e-3
    cases = [
        (dict(values, S=asymmetric), r"S\[0, 2\]=0.001 but S\[2, 0\]=0.0: the matrix must be symmetric"),
        (dict(values, S=np.array([[1.0, 2.0, 0], [2.0, 1.0, 0], [0, 0, 1.0]])), r"'S' is not positive definite"),
        (dict(values, S=np.diag([1.0, np.inf, 1.0])), r"S\[1, 1\]=inf is not finite"),
        (dict(values, R=np.diag([1.0, 2.0, 1.0])), r"R\[1, 1\]=2.0: the diagonal of a correlation matrix must be 1"),
        (dict(values, R=np.array([[1.0, 0.9, 0.9], [0.9, 1.0, -0.9], [0.9, -0.9, 1.0]])),
         r"'R' is not positive definite"),
    ]
    for bad, message in cases:
        with pytest.raises(ValueError, match=message):
            lp.unconstrain(bad)
    near = values["R"].copy()
    near[0, 1] += 1e-10  # within the tolerance of symmetry: taken as its symmetric part
    np.testing.assert_allclose(lp.unconstrain(dict(values, R=near)), np.zeros(lp.dim), atol=1e-9)


def test_shape_errors():
    m = ld.Model()
    with pytest.raises(ld.ModelError, match="corr_matrix constraint needs a square matrix"):
        m.param("R", shape=(2, 3), constraint=ld.corr_matrix)
    with pytest.raises(ld.ModelError, match="cov_matrix constraint needs a square matrix"):
        m.param("S", shape=3, constraint=ld.cov_matrix)


# ------------------------------------------------------------------ LKJCorr


@pytest.mark.parametrize("eta", [0.3, 1.0, 2.0, 30.0])
def test_lkj_corr_d2_is_a_beta(eta):
    """d = 2: the correlation r has scipy's Beta(eta, eta) on (-1, 1); rel 1e-13."""
    r = np.array([-0.95, -0.3, 0.0, 0.4, 0.999])
    omega = np.stack([np.array([[1.0, x], [x, 1.0]]) for x in r])
    expected = stats.beta(eta, eta, loc=-1.0, scale=2.0).logpdf(r)
    np.testing.assert_allclose(ld.LKJCorr(2, eta).logpdf(omega), expected, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("d", [3, 5])
@pytest.mark.parametrize("eta", [0.5, 1.0, 4.0])
def test_lkj_corr_is_lkj_cholesky_through_the_change_of_variables(d, eta):
    """log p(Omega) = log p_LKJCholesky(L) - sum_i (d - 1 - i) log L_ii (log|J| of
    L -> Omega, see ``corr_matrix_forward``), at random matrices. Rel 1e-12:
    both sides are short sums, log det Omega from the kernel's own Cholesky
    (a few ulps times the condition number, < 1e2 here)."""
    rng = np.random.default_rng(d)
    for _ in range(3):
        corr, chol = random_corr(d, rng)
        log_j = np.sum((d - 1.0 - np.arange(d)) * np.log(np.diagonal(chol)))
        expected = ld.LKJCholesky(d, eta).logpdf(chol) - log_j
        assert ld.LKJCorr(d, eta).logpdf(corr) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("d, eta", [(2, 0.5), (3, 2.0), (5, 3.5)])
def test_lkj_corr_partials(d, eta):
    """The kernel's partials are those of (eta - 1) log det((x + x^T) / 2) + log c,
    a function of every entry: one entry at a time by central differences with
    steps of 2e-9 (a larger step leaves the 1e-8 tolerance of symmetry and of
    the unit diagonal, where the value is -inf). Their rounding, eps |lp| / h <
    1e-6 here, is the error (measured: 1.2e-7 of the largest partial at worst),
    within the atol of 1e-6 times the largest partial. Along symmetric changes
    (steps 1e-6) the two entries of a pair add up; d/deta by central differences."""
    corr, _ = random_corr(d, np.random.default_rng(20 + d))
    dist = ld.LKJCorr(d, eta)
    lp, grads = dist.logpdf_grad(corr)
    assert lp == pytest.approx(dist.logpdf(corr), rel=1e-14) and set(grads) == {"x", "concentration"}
    np.testing.assert_allclose(grads["x"], grads["x"].T, rtol=1e-14)
    assert_partials(grads["x"], central(dist.logpdf, corr, h=2e-9))
    rows, cols = np.tril_indices(d, -1)

    def along_pairs(lower):
        x = corr.copy()
        x[rows, cols] = lower
        x[cols, rows] = lower
        return dist.logpdf(x)
    pairs = grads["x"][rows, cols] + grads["x"][cols, rows]
    assert_partials(pairs, central(along_pairs, corr[rows, cols]))
    numeric = central(lambda e: ld.LKJCorr(d, float(e)).logpdf(corr), np.array(eta))
    assert_partials(grads["concentration"], numeric)


def test_lkj_corr_summands_add_up():
    """keep = (True, False) plus (False, True) gives the whole, value and partials."""
    from logdens.distributions import lkj_corr
    corr, _ = random_corr(4, np.random.default_rng(1))
    parts = []
    for keep in ((True, True), (True, False), (False, True)):
        d_x, d_eta = np.zeros((4, 4)), np.zeros(1)
        lp = lkj_corr.logpdf_grad(corr, 4.0, 2.5, keep, np.empty(16), d_x, None, d_eta)
        parts.append((lp, d_x, d_eta))
    (lp, d_x, d_eta), (lp1, d_x1, d_eta1), (lp2, d_x2, d_eta2) = parts
    assert lp == pytest.approx(lp1 + lp2, rel=1e-14)
    np.testing.assert_allclose(d_x, d_x1 + d_x2, rtol=1e-14)
    np.testing.assert_allclose(d_eta, d_eta1 + d_eta2, rtol=1e-14)
    assert np.all(d_x2 == 0.0)


def test_lkj_corr_support_and_errors():
    dist = ld.LKJCorr(3, 2.0)
    good, _ = random_corr(3, np.random.default_rng(0))
    asymmetric = good.copy()
    asymmetric[0, 2] += 1e-6
    off_diagonal = good.copy()
    off_diagonal[1, 1] = 1.0 + 1e-6
    singular = np.ones((3, 3))
    not_definite = np.array([[1.0, 0.9, 0.9], [0.9, 1.0, -0.9], [0.9, -0.9, 1.0]])
    bad = np.stack([asymmetric, off_diagonal, singular, not_definite])
    assert np.all(dist.logpdf(bad) == -np.inf) and np.isfinite(dist.logpdf(good))
    lp, grads = dist.logpdf_grad(bad)
    assert np.all(lp == -np.inf) and np.all(grads["x"] == 0.0) and np.all(grads["concentration"] == 0.0)
    np.testing.assert_array_equal(lkj_corr_check(np.stack([good, *bad]), {"d": 3}, {}),
                                  [True, False, False, False, False])
    assert bool(lkj_corr_check(good, {"d": 3}, {}))
    assert ld.LKJCorr(1, 0.5).logpdf(np.ones((1, 1))) == 0.0
    with pytest.raises(InvalidArgumentError, match=r"LKJCorr: concentration=0.0"):
        ld.LKJCorr(3, 0.0)
    with pytest.raises(InvalidArgumentError, match=r"LKJCorr: dim=2.5"):
        ld.LKJCorr(2.5, 1.0)
    with pytest.raises(InvalidArgumentError, match=r"LKJCorr: x has events of shape \(2, 2\) but dim=3"):
        dist.logpdf(np.eye(2))
    with pytest.raises(InvalidArgumentError, match=r"LKJCorr: x\[0, 1\]=nan"):
        dist.logpdf(np.array([[1.0, np.nan, 0], [0, 1.0, 0], [0, 0, 1.0]]))
    assert dist.event_shape() == (3, 3) and ld.LKJCorr in ld.MULTIVARIATE


@pytest.mark.parametrize("d, eta", [(4, 2.0), (3, 0.7)])
def test_lkj_corr_draws(d, eta):
    """Every draw is in the support, exactly symmetric with a unit diagonal; each
    off-diagonal entry has the marginal Beta(eta - 1 + d/2, same) on (-1, 1):
    mean 0 and variance 1 / (2 eta + d - 1), within 5 standard errors."""
    n = 4000
    draws = ld.LKJCorr(d, eta).rvs(size=n, seed=4)
    assert draws.shape == (n, d, d) and np.all(lkj_corr_check(draws, {"d": d}, {}))
    assert np.array_equal(draws, np.swapaxes(draws, 1, 2)) and np.all(np.diagonal(draws, axis1=1, axis2=2) == 1.0)
    r = draws[:, np.tril_indices(d, -1)[0], np.tril_indices(d, -1)[1]]
    assert np.all(np.abs(r.mean(0)) < 5 * r.std(0) / math.sqrt(n))
    variance = 1.0 / (2.0 * eta + d - 1.0)
    assert np.all(np.abs((r * r).mean(0) - variance) < 5 * (r * r).std(0) / math.sqrt(n))


@pytest.fixture(scope="module")
def lkj_model():
    """eta ~ Gamma(2, 1), Om ~ LKJCorr(3, eta) and one observed correlation matrix of
    the same distribution (eta's partial from both terms)."""
    seen, _ = random_corr(3, np.random.default_rng(5))
    m = ld.Model()
    eta = m.param("eta", ld.Gamma(2.0, 1.0))
    m.param("Om", ld.LKJCorr(3, eta))
    m.observe("Om_seen", ld.LKJCorr(3, eta), seen)
    return m, m.compile(), seen


def test_lkj_corr_model_value_and_gradient(lkj_model):
    """The full log density: Gamma's and both LKJCorr terms' (scipy, the kernel),
    log|J| of eta = exp(u) (u) and of corr_matrix (``_mp_log_jacobian``), rel
    1e-12; the gradient against central differences; the Python twin."""
    m, lp, seen = lkj_model
    assert lp.dim == 1 + 3
    theta = np.random.default_rng(4).normal(size=lp.dim) * 0.7
    values = lp.constrain(theta)
    eta = float(values["eta"])
    expected = (stats.gamma(2.0).logpdf(eta) + theta[0] + _mp_log_jacobian("corr_matrix", theta[1:], 3)
                + ld.LKJCorr(3, eta).logpdf(values["Om"]) + ld.LKJCorr(3, eta).logpdf(seen))
    assert lp.log_density(theta, propto=False) == pytest.approx(expected, rel=1e-12)
    value, grad = lp.log_density_gradient(theta)
    assert value == pytest.approx(lp.log_density(theta), rel=1e-13)
    assert_partials(grad, central(lp.log_density, theta))
    twin = m.compile(backend="python")
    value2, grad2 = twin.log_density_gradient(theta)
    assert value2 == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(grad2, grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lp.unconstrain(values), theta, rtol=1e-10, atol=1e-12)


def test_lkj_corr_observed_value_outside_the_support():
    m = ld.Model()
    with pytest.raises(ld.ModelError, match=r"(?s)LKJCorr value .* is outside the support: Omega is symmetric"):
        m.observe("Om", ld.LKJCorr(2, 2.0), np.array([[1.0, 0.5], [0.4, 1.0]]))
        m.compile()


@pytest.mark.slow
def test_nuts_on_an_lkj_corr_prior():
    """Omega ~ LKJCorr(3, 2) alone: each off-diagonal entry is Beta(eta - 1 + d/2,
    same) = Beta(2.5, 2.5) on (-1, 1), mean 0 and variance 1 / (2 eta + d - 1) =
    1/6; the draws' mean and mean square within 4 Monte Carlo standard errors
    (bulk ESS)."""
    m = ld.Model()
    m.param("Om", ld.LKJCorr(3, 2.0))
    post = ld.nuts(m, draws=1000, tune=500, chains=2, seed=1, progress=False).posterior
    omega = post["Om"].values
    for i, j in ((1, 0), (2, 0), (2, 1)):
        r = omega[..., i, j]
        for draws, truth in ((r, 0.0), (r * r, 1.0 / 6.0)):
            mcse = draws.std() / math.sqrt(bulk_ess(draws))
            assert abs(draws.mean() - truth) < 4 * mcse, (i, j, draws.mean(), truth, mcse)


def test_prior_draws_of_lkj_priors():
    """Prior predictive draws of LKJCholesky and LKJCorr (the latter with a random
    concentration): on their supports, and an off-diagonal with variance
    1 / (2 eta + d - 1) at eta = 2, d = 3 (Beta(eta - 1 + d / 2) on (-1, 1));
    the sample variance of 4000 draws has a standard error of about 2.3e-3."""
    m = ld.Model()
    m.param("chol", ld.LKJCholesky(3, 2.0))
    eta = m.param("eta", ld.Gamma(2.0, 1.0))
    m.param("corr", ld.LKJCorr(3, eta))
    prior = ld.sample_prior_predictive(m, draws=4000, seed=0).prior
    L, R = prior["chol"].values[0], prior["corr"].values[0]
    assert L.shape == R.shape == (4000, 3, 3)
    np.testing.assert_allclose(np.sum(L * L, axis=2), 1.0, rtol=1e-12)
    np.testing.assert_allclose(R, np.swapaxes(R, 1, 2))
    assert np.all(R[:, [0, 1, 2], [0, 1, 2]] == 1.0)
    off = np.einsum("nij,nkj->nik", L, L)[:, 1, 0]
    assert abs(off.var() - 1 / 6) < 4 * 2.3e-3


def test_sparse_per_sample_rows_of_a_term_reading_matrix_entries():
    """Sparse per-sample rows equal the dense ones when a term reads single entries
    of a Cholesky-factor parameter (its event sweep per row), and the Fisher
    information is their product."""
    m = ld.Model()
    c = m.param("c", ld.Normal(0, 2), shape=(3, 3), constraint=ld.cholesky_cov)
    y = m.data("y", np.arange(5.0))
    m.observe("o", ld.Normal(c[0, 0] + c[1, 0] * y, 1.0), np.arange(5.0) * 0.3)
    lp = m.compile()
    theta = np.linspace(-0.5, 0.5, 6)
    dense = lp.per_sample_gradient(theta, "o")
    np.testing.assert_allclose(lp.per_sample_gradient(theta, "o", sparse=True).toarray(), dense, atol=1e-14)
    np.testing.assert_allclose(lp.empirical_fisher(theta, "o"), dense.T @ dense, rtol=1e-12)
