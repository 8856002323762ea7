"""Multivariate terms in compiled models: one kernel call per row of events.

The distributions' own values and partials are checked in
``test_mv_discrete.py`` and ``test_mv_continuous.py``; here the engine's
lowering (``logdens.shaped``'s event kernels) is: values against scipy,
gradients against central differences (relative 1e-6: steps of 1e-6 in
theta on log densities of size 1e2-1e3 leave about 1e-7 of rounding),
per-sample rows and pointwise log-likelihoods against the sums, the
``cholesky_corr`` transform, and the errors.
"""

import numpy as np
import pytest
from scipy import stats

import logdens as ld
from logdens.event_transforms import cholesky_corr_forward, for_event_constraint


def _central(f, theta, h=1e-6):
    return np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(len(theta))])


def _correlated(d, n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    cov = a @ a.T + d * np.eye(d)
    return rng.multivariate_normal(np.arange(d, dtype=float), cov, size=n), cov


@pytest.fixture(scope="module")
def varying():
    """A multivariate normal with scales and a correlation factor as parameters."""
    d, n = 3, 200
    y, _ = _correlated(d, n)
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5), shape=d)
    sigma = m.param("sigma", ld.HalfNormal(3), shape=d)
    corr = m.param("corr", shape=(d, d), constraint=ld.cholesky_corr)
    m.observe("y", ld.MvNormal(mu, scale_tril=ld.diag_pre_multiply(sigma, corr)), y)
    return m, m.compile(), y, d


def _point(lp, d, seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=lp.dim) * 0.5


def test_mvnormal_term_matches_scipy(varying):
    m, lp, y, d = varying
    theta = _point(lp, d)
    values = lp.constrain(theta)
    chol = values["sigma"][:, None] * values["corr"]
    expected = (stats.norm(0, 5).logpdf(values["mu"]).sum() + stats.halfnorm(scale=3).logpdf(values["sigma"]).sum()
                + stats.multivariate_normal(values["mu"], chol @ chol.T).logpdf(y).sum())
    assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, rel=1e-12)


def test_mvnormal_term_gradient(varying):
    m, lp, y, d = varying
    theta = _point(lp, d)
    value, grad = lp.log_density_gradient(theta)
    assert value == pytest.approx(lp.log_density(theta), rel=1e-13)
    np.testing.assert_allclose(grad, _central(lp.log_density, theta), rtol=1e-6, atol=1e-6 * np.abs(grad).max())


def test_mvnormal_per_sample_rows_and_pointwise(varying):
    m, lp, y, d = varying
    theta = _point(lp, d)
    rows = lp.per_sample_gradient(theta, "y")
    assert rows.shape == (len(y), lp.dim)
    grad_all = lp.gradient(theta, jacobian=False)
    values = lp.constrain(theta)
    prior_grad = _central(lambda t: (stats.norm(0, 5).logpdf(lp.constrain(t)["mu"]).sum()
                                     + stats.halfnorm(scale=3).logpdf(lp.constrain(t)["sigma"]).sum()), theta)
    np.testing.assert_allclose(rows.sum(0), grad_all - prior_grad, rtol=1e-6, atol=1e-5)
    pointwise = lp.pointwise_log_likelihood(theta)["y"]
    chol = values["sigma"][:, None] * values["corr"]
    np.testing.assert_allclose(pointwise, stats.multivariate_normal(values["mu"], chol @ chol.T).logpdf(y),
                               rtol=1e-12)


def test_rows_of_means():
    """A mean per row (``X @ B``) and a data Cholesky factor (``cov=``): a regression
    of vectors, the rows' means row-aligned, the factor whole."""
    rng = np.random.default_rng(3)
    n, p, d = 150, 4, 3
    x = rng.normal(size=(n, p))
    y, cov = _correlated(d, n, seed=4)
    m = ld.Model()
    b = m.param("b", ld.Normal(0, 1), shape=(p, d))
    m.observe("y", ld.MvNormal(ld.matmul(m.data("x", x), b), cov=cov), y)
    lp = m.compile()
    theta = rng.normal(size=lp.dim)
    means = x @ theta.reshape(p, d)
    expected = stats.norm.logpdf(theta).sum() + sum(
        stats.multivariate_normal(mu, cov).logpdf(row) for mu, row in zip(means, y))
    assert lp.log_density(theta, propto=False) == pytest.approx(expected, rel=1e-12)
    value, grad = lp.log_density_gradient(theta)
    np.testing.assert_allclose(grad, _central(lp.log_density, theta), rtol=1e-6, atol=1e-6 * np.abs(grad).max())
    rows = lp.per_sample_gradient(theta, "y")
    np.testing.assert_allclose(rows.sum(0), grad + theta, rtol=1e-10, atol=1e-9)


def test_mvnormal_prior_on_a_vector():
    """No rows: one event, the kernel called once."""
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    m = ld.Model()
    m.param("z", ld.MvNormal(np.array([1.0, -1.0]), cov=cov))
    lp = m.compile()
    theta = np.array([0.3, 0.7])
    assert lp.log_density(theta, propto=False) == pytest.approx(
        stats.multivariate_normal([1.0, -1.0], cov).logpdf(theta), rel=1e-13)
    np.testing.assert_allclose(lp.log_density_gradient(theta)[1],
                               -np.linalg.solve(cov, theta - [1.0, -1.0]), rtol=1e-12)


def test_a_scalar_location_is_the_same_number_in_every_entry():
    """``MvNormal(0.0, ...)`` and ``MvNormal(mu, ...)`` with ``mu`` a scalar
    parameter, as PyMC and NumPyro users write them: scipy's density at
    ``np.full(d, mu)``; the gradient of ``mu`` the sum of the location's
    partials (against central differences)."""
    y, cov = _correlated(3, 30, seed=5)
    x = np.array([0.3, -1.0, 0.4])
    assert ld.MvNormal(0.7, cov=cov).logpdf(x) == pytest.approx(
        stats.multivariate_normal(np.full(3, 0.7), cov).logpdf(x), rel=1e-13)
    _, grads = ld.MvNormal(0.7, cov=cov).logpdf_grad(y[:4])
    assert grads["loc"].shape == (4,)
    np.testing.assert_allclose(grads["loc"], np.linalg.solve(cov, (y[:4] - 0.7).T).sum(axis=0), rtol=1e-12)
    factor = np.linalg.cholesky(cov)
    assert ld.MvStudentT(5.0, -0.2, factor).logpdf(x) == pytest.approx(
        stats.multivariate_t(np.full(3, -0.2), cov, df=5.0).logpdf(x), rel=1e-13)
    assert ld.MvNormal(0.0, cov=cov).rvs(size=5, seed=1).shape == (5, 3)

    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5))
    z = m.param("z", ld.MvNormal(0.0, scale_tril=factor))
    m.observe("y", ld.MvNormal(mu, cov=cov), y)
    assert "MvNormal(0, " in str(m)
    lp = m.compile()
    theta = np.array([0.4, 0.3, -0.2, 0.1])
    expected = (stats.norm(0, 5).logpdf(0.4) + stats.multivariate_normal(np.zeros(3), cov).logpdf(theta[1:])
                + stats.multivariate_normal(np.full(3, 0.4), cov).logpdf(y).sum())
    assert lp.log_density(theta, propto=False) == pytest.approx(expected, rel=1e-12)
    value, grad = lp.log_density_gradient(theta)
    np.testing.assert_allclose(grad, _central(lp.log_density, theta), rtol=1e-6, atol=1e-6 * np.abs(grad).max())
    assert lp.per_sample_gradient(theta, "y").sum(0)[0] == pytest.approx(grad[0] + 0.4 / 25, rel=1e-10)
    assert z.shape == (3,)


def test_a_model_without_parameters_compiles():
    """Only data and numbers (a fixed MvStudentT over rows): the per-sample
    functions have no entries to write (their loop over a row's entries was
    left without a body: a SyntaxError in the generated module)."""
    y, cov = _correlated(2, 20, seed=6)
    m = ld.Model()
    m.observe("y", ld.MvStudentT(4.0, 0.0, scale_tril=np.linalg.cholesky(cov)), y)
    for backend in ("python", "cpu"):
        density = m.compile(backend=backend)
        assert density.dim == 0
        assert density.log_density(np.zeros(0), propto=False) == pytest.approx(
            stats.multivariate_t(np.zeros(2), cov, df=4.0).logpdf(y).sum(), rel=1e-12)
        assert density.per_sample_gradient(np.zeros(0), "y").shape == (20, 0)


def test_a_scalar_location_keeps_a_latent_gaussian_process_free_of_its_length(tmp_path):
    """``MvNormal(0.0, scale_tril=L)`` over inputs of another length: the same
    generated module (``np.zeros(n)`` would write n into it)."""
    def latent(n):
        m = ld.Model()
        x = m.data("x", np.linspace(0, 1, n))
        K = ld.add_diag(ld.gp.exp_quad(x, m.param("eta", ld.HalfNormal(1)), 0.3), 1e-6)
        m.param("f", ld.MvNormal(0.0, scale_tril=ld.cholesky(K)))
        return m.compile(cache_dir=tmp_path)

    small, large = latent(6), latent(9)
    assert small.source() == large.source()
    theta = np.r_[0.1, np.linspace(-0.5, 0.5, 9)]
    values = large.constrain(theta)
    xs = np.linspace(0, 1, 9)
    K = values["eta"] ** 2 * np.exp(-0.5 * (xs[:, None] - xs[None, :]) ** 2 / 0.09) + 1e-6 * np.eye(9)
    want = stats.halfnorm.logpdf(values["eta"]) + stats.multivariate_normal(np.zeros(9), K).logpdf(theta[1:])
    assert large.log_density(theta, propto=False, jacobian=False) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("d", [1, 2, 3, 6])
def test_cholesky_corr_log_jacobian(d):
    """log|J| of cholesky_corr against the determinant of a numerical Jacobian of
    the map to the strictly lower entries (the diagonal follows from them)."""
    rng = np.random.default_rng(d)
    size = d * (d - 1) // 2
    u = rng.normal(size=size) * 1.5
    log_j = cholesky_corr_forward(u, 0, np.empty(d * d), d)
    if size == 0:
        assert log_j == 0.0
        return

    def lower(v):
        out = np.empty(d * d)
        cholesky_corr_forward(v, 0, out, d)
        return out.reshape(d, d)[np.tril_indices(d, -1)]
    jac = np.array([(lower(u + 1e-6 * e) - lower(u - 1e-6 * e)) / 2e-6 for e in np.eye(size)]).T
    assert log_j == pytest.approx(np.linalg.slogdet(jac)[1], abs=1e-7)


def _holds(name, x):
    """Whether ``x`` lies in event constraint ``name``."""
    if name.startswith("cholesky"):
        lower = np.all(np.triu(x, 1) == 0.0) and np.all(np.diagonal(x) > 0.0)
        return lower and (name == "cholesky_cov" or np.allclose(np.sum(x * x, axis=1), 1.0, rtol=1e-14))
    if name == "sum_to_zero":
        return abs(np.sum(x)) < 1e-13 * max(1.0, np.abs(x).max())
    return abs(np.linalg.norm(x) - 1.0) < 1e-14


@pytest.mark.parametrize("name, shape", [("cholesky_corr", (1, 1)), ("cholesky_corr", (4, 4)),
                                         ("cholesky_cov", (1, 1)), ("cholesky_cov", (4, 4)),
                                         ("sum_to_zero", (2,)), ("sum_to_zero", (6,)),
                                         ("unit_vector", (2,)), ("unit_vector", (5,))])
def test_event_transforms(name, shape):
    """Each matrix and vector transform: its values lie in the set, ``inverse``
    undoes ``forward``, and the reverse sweep is the gradient of sum(a * x) +
    c log|J| (central differences, 1e-6 relative: steps of 1e-6 on values of
    size 1)."""
    from logdens import event_transforms as events
    transform = for_event_constraint(name)
    transform.check_shape(shape, "x")
    size = transform.unconstrained_size(shape)
    rng = np.random.default_rng(size)
    u = rng.normal(size=size)
    x = transform.forward(u)
    assert x.shape == shape and _holds(name, x)
    np.testing.assert_allclose(transform.forward(transform.inverse(x)), x, rtol=1e-12, atol=1e-14)
    if name != "unit_vector":  # its inverse picks the point of radius 1
        np.testing.assert_allclose(transform.inverse(x), u, rtol=1e-10, atol=1e-12)
    extra = (shape[0],) if name.startswith("cholesky") else ()
    forward, reverse = getattr(events, f"{name}_forward"), getattr(events, f"{name}_reverse")
    adjoint, c = rng.normal(size=x.size), 0.7

    def objective(v):
        out = np.empty(x.size)
        log_j = forward(v, 0, out, *extra)
        return np.sum(adjoint * out) + c * log_j
    w = np.empty(x.size)
    forward(u, 0, w, *extra)
    grad = np.zeros(size)
    reverse(u, 0, w, adjoint, grad, c, *extra)
    np.testing.assert_allclose(grad, _central(objective, u), rtol=1e-6, atol=1e-8)


def test_sum_to_zero_basis_is_orthonormal():
    """x = V u with orthonormal columns: |x| = |u|, so a standard normal on u is one
    on the sum-to-zero subspace (Stan's reason for this transform)."""
    transform = for_event_constraint("sum_to_zero")
    basis = np.array([transform.forward(e) for e in np.eye(6)]).T
    np.testing.assert_allclose(basis.T @ basis, np.eye(6), atol=1e-14)


def test_cholesky_corr_far_out_stays_finite():
    """At |u| = 30 tanh rounds to 1, but 1 - z^2 is taken as exp(log sech^2): the
    diagonal stays positive and log|J| finite."""
    w = np.empty(4)
    log_j = cholesky_corr_forward(np.array([30.0]), 0, w, 2)
    assert w[3] > 0 and np.isfinite(log_j)


def test_unconstrain_checks_cholesky_corr(varying):
    m, lp, y, d = varying
    values = lp.constrain(np.zeros(lp.dim))
    bad = dict(values, corr=np.eye(d) * 2)
    with pytest.raises(ValueError, match="row 0 has squared length"):
        lp.unconstrain(bad)
    upper = dict(values, corr=np.eye(d) + np.triu(np.ones((d, d)), 1))
    with pytest.raises(ValueError, match=r"corr\[0, 1\].*above the diagonal"):
        lp.unconstrain(upper)


def test_shape_errors_name_the_term():
    m = ld.Model()
    mu = m.param("mu", shape=3)
    with pytest.raises(ld.ModelError, match="term 'y'.*axis 'd' has length 4 in x but 3 in loc"):
        m.observe("y", ld.MvNormal(mu, cov=np.eye(4)), np.zeros((5, 4)))
    with pytest.raises(ld.ModelError, match="cholesky_corr constraint needs a square matrix"):
        m.param("c", shape=(2, 3), constraint=ld.cholesky_corr)


def test_whole_batches_are_refused():
    """A parameter matrix of means, one row per observation, is a batch of whole
    events: the kernel takes whole events or rows of the term's data only."""
    m = ld.Model()
    mu = m.param("mu", shape=(3, 2))
    m.observe("y", ld.MvNormal(mu, cov=np.eye(2)), np.zeros((3, 2)))
    with pytest.raises(ld.ModelError, match="MvNormal argument mu has shape"):
        m.compile()


def test_bad_covariance_says_why():
    with pytest.raises(ld.InvalidArgumentError, match="not positive definite"):
        ld.MvNormal(np.zeros(2), cov=np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ld.InvalidArgumentError, match=r"scale_tril\[1, 1\]=-1.0"):
        ld.MvNormal(np.zeros(2), scale_tril=np.array([[1.0, 0.0], [0.3, -1.0]]))


def test_prior_shape_from_the_distribution():
    m = ld.Model()
    z = m.param("z", ld.MvNormal(np.zeros(4), cov=np.eye(4)))
    assert z.shape == (4,)


def test_python_twin_agrees(varying):
    """The generated source run as plain Python (kernels uncompiled, None partials
    skipped by the same branches) gives the compiled module's numbers."""
    m, lp, y, d = varying
    twin = m.compile(backend="python")
    theta = _point(lp, d)
    value, grad = lp.log_density_gradient(theta)
    value2, grad2 = twin.log_density_gradient(theta)
    assert value2 == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(grad2, grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(twin.per_sample_gradient(theta, "y"), lp.per_sample_gradient(theta, "y"),
                               rtol=1e-10, atol=1e-12)


def test_predictive_draws_events():
    """Prior and prior predictive draws of multivariate terms: whole events, with
    the distributions' moments (5 standard errors)."""
    cov = np.array([[1.0, 0.6], [0.6, 2.0]])
    m = ld.Model()
    mu = m.param("mu", ld.MvNormal(np.array([1.0, -1.0]), cov=cov))
    m.observe("y", ld.MvNormal(mu, cov=np.eye(2)), np.zeros((3, 2)))
    idata = ld.sample_prior_predictive(m, draws=4000, seed=5)
    mu_draws = idata["prior"]["mu"].values[0]
    y_draws = idata["prior_predictive"]["y"].values[0]
    assert mu_draws.shape == (4000, 2) and y_draws.shape == (4000, 3, 2)
    se = np.sqrt(np.diag(cov) / 4000)
    assert np.all(np.abs(mu_draws.mean(0) - [1.0, -1.0]) < 5 * se)
    np.testing.assert_allclose(np.cov(mu_draws.T), cov, atol=0.15)
    np.testing.assert_allclose(np.cov((y_draws[:, 0] - mu_draws).T), np.eye(2), atol=0.15)


@pytest.mark.parametrize("rowed_loc", [False, True])
@pytest.mark.parametrize("keep", [(True, True, True), (True, False, False), (False, True, True)])
def test_mvnormal_rows_kernel_equals_rows_of_events(rowed_loc, keep):
    """``logpdf_grad_rows`` over a block gives each row's ``logpdf_grad``: values to
    1e-12 relative (the same operations, summed in another order), partials
    summed over the rows for the whole arguments."""
    from logdens.distributions import mv_normal as mv
    rng = np.random.default_rng(7)
    nb, d = 37, 5
    x = rng.normal(size=(nb, d))
    loc = rng.normal(size=(nb, d)) if rowed_loc else rng.normal(size=d)
    chol = np.tril(rng.normal(size=(d, d)) * 0.3) + np.diag(rng.uniform(0.5, 2.0, size=d))
    work = np.empty(mv.SPEC.rows.work({"d": d}, nb))
    lp, d_x, d_loc, d_chol = np.empty(nb), np.zeros((nb, d)), np.zeros(loc.shape), np.zeros((d, d))
    mv.logpdf_grad_rows(x, loc, chol, keep, work, lp, d_x, d_loc, d_chol)
    want_dx, want_dloc, want_dchol = np.zeros((nb, d)), np.zeros(loc.shape), np.zeros((d, d))
    for r in range(nb):
        row_loc = loc[r] if rowed_loc else loc
        dloc = want_dloc[r] if rowed_loc else np.zeros(d)
        value = mv.logpdf_grad(x[r], row_loc, chol, keep, np.empty(2 * d), want_dx[r], dloc, want_dchol)
        assert lp[r] == pytest.approx(value, rel=1e-12, abs=1e-12)
        if not rowed_loc:
            want_dloc += dloc
    for got, want in ((d_x, want_dx), (d_loc, want_dloc), (d_chol, want_dchol)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_mvnormal_rows_kernel_bad_row():
    """A row that overflows is -inf and the block adds no partials."""
    from logdens.distributions import mv_normal as mv
    x = np.array([[0.0, 1.0], [1e300, 0.0]])
    chol = np.array([[1e-10, 0.0], [0.0, 1.0]])
    lp, d_loc = np.empty(2), np.zeros(2)
    with np.errstate(over="ignore", invalid="ignore"):  # plain Python: numpy scalars warn
        mv.logpdf_grad_rows(x, np.zeros(2), chol, (True, True, True), np.empty(10), lp, None, d_loc, None)
    assert np.isfinite(lp[0]) and lp[1] == -np.inf and np.all(d_loc == 0.0)


def test_matrix_and_vector_constraints_in_a_model():
    """Parameters with each new constraint, under elementwise priors: gradients
    against central differences (with the Jacobian), and constrain/unconstrain
    round trips."""
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=5, constraint=ld.sum_to_zero)
    u = m.param("u", ld.Normal(0, 1), shape=3, constraint=ld.unit_vector)
    cov = m.param("cov", ld.Normal(0, 2), shape=(3, 3), constraint=ld.cholesky_cov)
    corr = m.param("corr", ld.Normal(0, 2), shape=(3, 3), constraint=ld.cholesky_corr)
    m.potential("link", ld.sum(a[:3] * u) + ld.sum(cov * corr))
    lp = m.compile()
    assert lp.dim == 4 + 3 + 6 + 3
    theta = np.random.default_rng(11).normal(size=lp.dim)
    value, grad = lp.log_density_gradient(theta)
    np.testing.assert_allclose(grad, _central(lp.log_density, theta), rtol=1e-6, atol=1e-7)
    values = lp.constrain(theta)
    assert abs(values["a"].sum()) < 1e-14 and abs(np.linalg.norm(values["u"]) - 1) < 1e-14
    back = lp.unconstrain(values)
    np.testing.assert_allclose(lp.constrain(back)["u"], values["u"], rtol=1e-13)
    np.testing.assert_allclose(np.delete(back, [4, 5, 6]), np.delete(theta, [4, 5, 6]), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="'a' sums to"):
        lp.unconstrain(dict(values, a=np.ones(5)))
    with pytest.raises(ValueError, match=r"cov\[1, 1\]=-1.0"):
        lp.unconstrain(dict(values, cov=np.diag([1.0, -1.0, 1.0])))


def test_prior_on_the_rows_of_a_parameter_matrix():
    """Group effects with a multivariate normal prior per group (the centred
    varying-slopes prior): one kernel call per row of the whole matrix; means
    per group or shared."""
    rng = np.random.default_rng(12)
    groups, d = 6, 2
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1), shape=(groups, d))
    chol = m.param("chol", shape=(d, d), constraint=ld.cholesky_cov)
    m.param("ab", ld.MvNormal(mu, scale_tril=chol), shape=(groups, d))
    m.param("c", ld.MvNormal(np.zeros(d), scale_tril=chol), shape=(groups, d))
    lp = m.compile()
    theta = rng.normal(size=lp.dim) * 0.5
    values = lp.constrain(theta)
    cov = values["chol"] @ values["chol"].T
    expected = (stats.norm.logpdf(values["mu"]).sum()
                + sum(stats.multivariate_normal(mu_g, cov).logpdf(ab_g) for mu_g, ab_g in zip(values["mu"], values["ab"]))
                + stats.multivariate_normal(np.zeros(d), cov).logpdf(values["c"]).sum())
    assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, rel=1e-12)
    value, grad = lp.log_density_gradient(theta)
    np.testing.assert_allclose(grad, _central(lp.log_density, theta), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shared", [False, True])
def test_categorical_logit_rows_kernel_equals_rows_of_events(shared):
    """The block kernel gives each row's ``logpdf_grad`` (1e-12 relative), the
    partials of shared logits summed over the rows; an invalid row is -inf
    and the block adds nothing."""
    from logdens.distributions import categorical_logit as cl
    rng = np.random.default_rng(8)
    nb, k = 41, 4
    x = rng.integers(0, k, nb).astype(float)
    logits = rng.normal(size=k) * 3 if shared else rng.normal(size=(nb, k)) * 3
    logits_rows = np.broadcast_to(logits, (nb, k))
    work = np.empty(cl.SPEC.rows.work({"k": k}, nb))
    lp, d = np.empty(nb), np.zeros(logits.shape)
    cl.logpdf_grad_rows(x, logits, (True,), work, lp, None, d)
    want = np.zeros((nb, k))
    for r in range(nb):
        value = cl.logpdf_grad(x[r], logits_rows[r].copy(), (True,), np.empty(k), None, want[r])
        assert lp[r] == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(d, want.sum(0) if shared else want, rtol=1e-12, atol=1e-14)
    x[3] = k  # past the last category
    d[:] = 0.0
    cl.logpdf_grad_rows(x, logits, (True,), work, lp, None, d)
    assert lp[3] == -np.inf and np.isfinite(lp[2]) and np.all(d == 0.0)


@pytest.mark.parametrize("d", [1, 30])
def test_mvnormal_extreme_dimensions(d):
    """d = 1 and d = 30 (465 entries of a cholesky_cov factor): the value against
    scipy, and the gradient along random directions against central differences
    (relative 1e-6)."""
    rng = np.random.default_rng(d)
    n = 50
    y = rng.normal(size=(n, d))
    m = ld.Model()
    mu = m.param("mu", shape=d)
    chol = m.param("chol", shape=(d, d), constraint=ld.cholesky_cov)
    m.observe("y", ld.MvNormal(mu, scale_tril=chol), y)
    lp = m.compile()
    theta = rng.normal(size=lp.dim) * 0.2
    values = lp.constrain(theta)
    cov = values["chol"] @ values["chol"].T
    assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(
        stats.multivariate_normal(values["mu"], cov).logpdf(y).sum(), rel=1e-11)
    _, grad = lp.log_density_gradient(theta)
    for direction in rng.normal(size=(3, lp.dim)):
        h = 1e-6
        slope = (lp.log_density(theta + h * direction) - lp.log_density(theta - h * direction)) / (2 * h)
        assert grad @ direction == pytest.approx(slope, rel=1e-6)


def test_counts_must_sum_to_a_data_n():
    """Multinomial counts are checked against a fixed n when data are set (the
    term, the row and its counts named); the same check at set_data."""
    m = ld.Model()
    p = m.param("p", ld.Dirichlet(np.ones(3)))
    n = m.data("n", np.array([3.0, 4.0]))
    m.observe("y", ld.Multinomial(n, p), np.array([[1, 1, 1], [2, 2, 1]]))
    with pytest.raises(ld.ModelError, match=r"term .y.: Multinomial value y\[1\] = \[2. 2. 1.\].*sum to n"):
        m.compile()
    m = ld.Model()
    p = m.param("p", ld.Dirichlet(np.ones(3)))
    m.observe("y", ld.DirichletMultinomial(m.data("n", np.array([3.0])), 2.0 * p), np.array([[1, 1, 1]]))
    lp = m.compile()
    with pytest.raises(ld.ModelError, match="sum to n"):
        lp.set_data(n=np.array([3.0]), y=np.array([[1, 1, 2]]))


def test_arviz_groups_of_a_multivariate_term():
    """An observed (n, d) term named with two dims: its log-likelihood has one
    entry per row (the first dim), its data and predictive draws both dims."""
    rng = np.random.default_rng(13)
    m = ld.Model(coords={"obs": np.arange(40), "var": ["a", "b", "c"]})
    mu = m.param("mu", ld.Normal(0, 5), dims="var")
    m.observe("y", ld.MvNormal(mu, cov=np.eye(3)), rng.normal(size=(40, 3)), dims=("obs", "var"))
    idata = ld.nuts(m, draws=100, tune=100, chains=2, seed=0, progress=False)
    assert idata.log_likelihood["y"].dims == ("chain", "draw", "obs")
    assert idata.observed_data["y"].dims == ("obs", "var")
    draws = ld.sample_posterior_predictive(idata, m, seed=1).posterior_predictive["y"]
    assert draws.dims == ("chain", "draw", "obs", "var") and draws.shape == (2, 100, 40, 3)
