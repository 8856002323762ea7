"""Gaussian processes: the covariance functions (``logdens.gp``), ``ld.add_diag``
and ``ld.cholesky`` (``logdens.linalg``) inside compiled models.

Values against scipy's multivariate normal with the covariance written out
in numpy (the closed-form marginal likelihood of a GP regression), to 1e-10
(two Cholesky factorizations of matrices with condition numbers below 1e4);
gradients against central differences (h = 1e-6, log densities of size 10 to
100: errors near 1e-7, compared at 1e-5 relative to the largest entry).
"""

import math
import re

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import pdist, squareform

import logdens as ld
from logdens.samplers.diagnostics import bulk_ess

RNG = np.random.default_rng(0)
N = 12
X1 = np.sort(RNG.uniform(0, 5, N))
X2 = RNG.uniform(0, 3, (N, 2))
Y = np.sin(X1) + 0.3 * RNG.normal(size=N)


def covariance(name, x, alpha, rho, period=None):
    """The covariance functions in numpy, as Stan defines them."""
    x = x.reshape(len(x), -1)
    r = np.sqrt(np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1))
    if name == "exp_quad":
        k = np.exp(-0.5 * r ** 2 / rho ** 2)
    elif name == "matern32":
        k = (1 + math.sqrt(3) * r / rho) * np.exp(-math.sqrt(3) * r / rho)
    elif name == "matern52":
        s = math.sqrt(5) * r / rho
        k = (1 + s + s ** 2 / 3) * np.exp(-s)
    else:
        k = np.exp(-2 * np.sin(np.pi * r / period) ** 2 / rho ** 2)
    return alpha ** 2 * k


def regression(name, x, backend="cpu"):
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2.0))
    rho = m.param("rho", ld.Gamma(2.0, 1.0))
    sigma = m.param("sigma", ld.HalfNormal(1.0))
    args = [m.param("period", ld.LogNormal(1.0, 0.5))] if name == "periodic" else []
    K = getattr(ld.gp, name)(m.data("x", x), alpha, rho, *args)
    m.observe("y", ld.MvNormal(np.zeros(N), scale_tril=ld.cholesky(ld.add_diag(K, sigma ** 2))), Y)
    return m.compile(backend=backend)


def central_differences(f, theta, h=1e-6):
    return np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(len(theta))])


@pytest.mark.parametrize("name, x", [("exp_quad", X1), ("matern32", X2), ("matern52", X1), ("periodic", X1)])
def test_gp_regression_is_the_closed_form_marginal_likelihood(name, x):
    lp = regression(name, x)
    for theta in (np.array([0.1, 0.2, -1.0, 0.5]), np.array([-0.7, -0.5, 0.3, 1.2])):
        theta = theta[:4 if name == "periodic" else 3]
        alpha, rho, sigma, *period = np.exp(theta)
        K = covariance(name, x, alpha, rho, *period) + sigma ** 2 * np.eye(N)
        expected = (stats.halfnorm(scale=2).logpdf(alpha) + stats.gamma(2).logpdf(rho)
                    + stats.halfnorm().logpdf(sigma) + stats.multivariate_normal(np.zeros(N), K).logpdf(Y)
                    + (stats.lognorm(0.5, scale=math.e).logpdf(period[0]) if period else 0.0))
        assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, abs=1e-10)
        _, grad = lp.log_density_gradient(theta)
        fd = central_differences(lp.log_density, theta)
        np.testing.assert_allclose(grad, fd, atol=1e-5 * np.max(np.abs(fd)))


def test_the_factor_and_covariance_adjoints_share_buffers():
    """In a GP regression's gradient the factor's adjoint is the MvNormal kernel's
    partial and the covariance's is add_diag's: of the n x n adjoints only
    add_diag's (cholesky_reverse adds into it) is zeroed, and none is added into
    another whole."""
    source = regression("exp_quad", X1).source()
    body = source[source.index("def logp_grad"):source.index("\ndef ", source.index("def logp_grad"))]
    square = {name for name, size in re.findall(r"(\w+) = np\.empty\((\d+)\)", body) if int(size) == N * N}
    zeroed = [name for name in re.findall(r"(\w+)\[:\] = 0\.0", body) if name in square]
    assert len(zeroed) == 2, zeroed  # add_diag's adjoint and the kernel's partial
    assert not re.search(r"^\s+sa\d+ \+= s[ak]\d+", body, re.M)


def test_python_twin_and_vector_diagonal():
    """The generated code uncompiled equals the compiled one; a vector added to the
    diagonal (a noise variance per observation)."""
    noise = np.linspace(0.1, 0.3, N)

    def build(backend):
        m = ld.Model()
        alpha = m.param("alpha", ld.HalfNormal(2.0))
        rho = m.param("rho", ld.Gamma(2.0, 1.0))
        s = m.param("s", ld.HalfNormal(1.0))
        K = ld.add_diag(ld.gp.exp_quad(m.data("x", X1), alpha, rho), s * m.data("noise", noise))
        m.observe("y", ld.MvNormal(np.zeros(N), scale_tril=ld.cholesky(K)), Y)
        return m.compile(backend=backend)

    cpu, twin = build("cpu"), build("python")
    theta = np.array([0.3, -0.2, -1.1])
    alpha, rho, s = np.exp(theta)
    K = covariance("exp_quad", X1, alpha, rho) + np.diag(s * noise)
    assert cpu.log_density(theta, propto=False, jacobian=False) == pytest.approx(
        stats.halfnorm(scale=2).logpdf(alpha) + stats.gamma(2).logpdf(rho) + stats.halfnorm().logpdf(s)
        + stats.multivariate_normal(np.zeros(N), K).logpdf(Y), abs=1e-10)
    (v0, g0), (v1, g1) = twin.log_density_gradient(theta), cpu.log_density_gradient(theta)
    assert v1 == pytest.approx(v0, abs=1e-11)
    np.testing.assert_allclose(g1, g0, atol=1e-11)


def test_a_covariance_that_is_not_positive_definite_gives_minus_infinity():
    """Without noise, 12 inputs of which two coincide: K is singular, its
    Cholesky factor fails, and the log density is -inf (not an exception)."""
    x = X1.copy()
    x[1] = x[0]
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2.0))
    m.observe("y", ld.MvNormal(np.zeros(N), scale_tril=ld.cholesky(ld.gp.exp_quad(m.data("x", x), alpha, 1.0))), Y)
    lp = m.compile()
    assert lp.log_density(np.array([0.0])) == -math.inf
    assert lp.log_density_gradient(np.array([0.0]))[0] == -math.inf


def test_latent_gp_with_a_poisson_likelihood():
    """A latent GP (centred: an MvNormal prior whose factor is computed) under
    Poisson counts: the gradient against central differences, and the
    deterministic K evaluated by numpy."""
    counts = RNG.poisson(2.0, N).astype(float)
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2.0))
    rho = m.param("rho", ld.Gamma(2.0, 1.0))
    K = m.deterministic("K", ld.add_diag(ld.gp.matern52(m.data("x", X1), alpha, rho), 0.01))
    f = m.param("f", ld.MvNormal(np.zeros(N), scale_tril=ld.cholesky(K)))
    m.observe("y", ld.PoissonLog(f), counts)
    lp = m.compile()
    theta = RNG.normal(size=N + 2) * 0.3
    _, grad = lp.log_density_gradient(theta)
    fd = central_differences(lp.log_density, theta)
    np.testing.assert_allclose(grad, fd, atol=1e-5 * np.max(np.abs(fd)))
    alpha, rho = np.exp(theta[:2])
    np.testing.assert_allclose(lp.constrain(theta)["K"], covariance("matern52", X1, alpha, rho) + 0.01 * np.eye(N),
                               rtol=1e-12)


def test_non_centred_latent_gp_read_at_the_rows_of_its_data():
    """f = L z, a whole vector, read row by row by a Poisson likelihood of data
    rows: the gradient, the pointwise log-likelihood (scipy's Poisson at exp(f))
    and per-sample rows summing to the likelihood's gradient."""
    counts = RNG.poisson(2.0, N).astype(float)
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2.0))
    rho = m.param("rho", ld.Gamma(2.0, 1.0))
    z = m.param("z", ld.Normal(0, 1), shape=N)
    f = m.deterministic("f", ld.cholesky(ld.add_diag(ld.gp.matern32(m.data("x", X1), alpha, rho), 0.01)) @ z)
    m.observe("y", ld.PoissonLog(f + 0.5), counts)
    lp = m.compile()
    theta = RNG.normal(size=N + 2) * 0.3
    _, grad = lp.log_density_gradient(theta)
    fd = central_differences(lp.log_density, theta)
    np.testing.assert_allclose(grad, fd, atol=1e-6 * np.max(np.abs(fd)))
    rate = np.exp(lp.constrain(theta)["f"] + 0.5)
    np.testing.assert_allclose(lp.pointwise_log_likelihood(theta)["y"], stats.poisson(rate).logpmf(counts), rtol=1e-12)
    rows = lp.per_sample_gradient(theta, "y")

    def likelihood(t):
        return np.sum(lp.pointwise_log_likelihood(t)["y"])
    np.testing.assert_allclose(rows.sum(axis=0), central_differences(likelihood, theta), atol=1e-6)


def test_errors():
    m = ld.Model()
    a = m.param("a", ld.HalfNormal(1.0))
    v = m.param("v", ld.Normal(0, 1), shape=3)
    with pytest.raises(ld.ModelError, match="inputs must be data"):
        ld.gp.exp_quad(v, a, 1.0)
    with pytest.raises(ld.ModelError, match="are scalars"):
        ld.gp.exp_quad(np.arange(3.0), v, 1.0)
    with pytest.raises(ld.ModelError, match="needs a square matrix"):
        ld.cholesky(np.ones((2, 3)))
    with pytest.raises(ld.ModelError, match="a scalar or a vector of length 3"):
        ld.add_diag(np.eye(3), np.ones(2))
    x = m.data("x", X1)
    m.observe("y", ld.MvNormal(np.zeros(N), scale_tril=ld.cholesky(ld.add_diag(ld.gp.exp_quad(x, a, 1.0), 0.1))), Y)
    lp = m.compile(backend="python")
    with pytest.raises(ld.ModelError, match=r"term 'y': MvNormal kernel needs the length 12 it was built with and "
                                            "the 13 rows of data x to agree"):
        lp.set_data(x=np.arange(13.0))  # y keeps 12, as does the mean, a numpy array written into the model


@pytest.mark.slow
def test_nuts_on_a_gp_regression_recovers_the_function_and_the_noise():
    """NUTS on a GP regression of sin(x) plus noise of sd 0.2 at 30 inputs: the
    posterior mean of the latent function, E[K (K + sigma^2 I)^-1 y] over the
    draws, within 0.15 RMS of sin(x) (the noise's own RMS is 0.2), sigma's
    posterior mean near 0.2, and the chains mix (bulk ESS above 100)."""
    x = np.linspace(0, 6, 30)
    y = np.sin(x) + 0.2 * np.random.default_rng(1).normal(size=30)
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2.0))
    rho = m.param("rho", ld.InverseGamma(5.0, 5.0))
    sigma = m.param("sigma", ld.HalfNormal(1.0))
    m.observe("y", ld.MvNormal(np.zeros(30), scale_tril=ld.cholesky(
        ld.add_diag(ld.gp.exp_quad(m.data("x", x), alpha, rho), sigma ** 2))), y)
    post = ld.nuts(m.compile(), draws=500, tune=300, chains=2, seed=3, progress=False).posterior
    a, r, s = (post[k].values.ravel() for k in ("alpha", "rho", "sigma"))
    means = np.array([covariance("exp_quad", x, ai, ri) @ np.linalg.solve(
        covariance("exp_quad", x, ai, ri) + si ** 2 * np.eye(30), y) for ai, ri, si in zip(a, r, s)])
    assert np.sqrt(np.mean((means.mean(axis=0) - np.sin(x)) ** 2)) < 0.15
    assert 0.15 < s.mean() < 0.3 and 0.7 < r.mean() < 3.0
    for draws in (post["sigma"].values, post["rho"].values):
        assert bulk_ess(draws) > 100


def test_deterministics_of_factors_evaluated_per_draw_and_in_batches():
    """A deterministic Cholesky factor of a parameter-dependent covariance: numpy's
    factor at each draw, and the batched evaluation (the samplers' output) equal
    to the draw-by-draw one."""
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2.0))
    s = m.param("s", ld.HalfNormal(1.0), shape=N)
    m.deterministic("L", ld.cholesky(ld.add_diag(ld.gp.periodic(m.data("x", X1), alpha, 1.0, 2.0), s)))
    lp = m.compile(backend="python")
    thetas = RNG.normal(size=(3, N + 1)) * 0.3
    batch = lp.constrain_batch(thetas)["L"]
    for theta, factor in zip(thetas, batch):
        alpha, s = np.exp(theta[0]), np.exp(theta[1:])
        expected = np.linalg.cholesky(covariance("periodic", X1, alpha, 1.0, 2.0) + np.diag(s))
        np.testing.assert_allclose(lp.constrain(theta)["L"], expected, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(factor, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("rhs_columns", [None, 2])
def test_hand_written_gaussian_likelihood_with_solves_and_log_determinant(rhs_columns):
    """-1/2 |L^-1 r|^2 - 1/2 log det K - n/2 log 2 pi through ld.solve_triangular and
    ld.cholesky_logdet equals scipy's multivariate normal; K^-1 r through the two
    solves (L^-T L^-1 r) gives the same quadratic form; gradients against central
    differences. ``rhs_columns``: the residuals as a vector, or two data columns."""
    ys = Y if rhs_columns is None else np.column_stack([Y, np.cos(X1)])
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2.0))
    rho = m.param("rho", ld.Gamma(2.0, 1.0))
    mu = m.param("mu", ld.Normal(0, 1))
    L = ld.cholesky(ld.add_diag(ld.gp.matern52(m.data("x", X1), alpha, rho), 0.1))
    r = m.data("y", ys) - mu
    z = ld.solve_triangular(L, r)
    w = ld.solve_triangular(L, z, trans=True)  # K^-1 r
    columns = 1 if rhs_columns is None else rhs_columns
    m.potential("lik", -0.5 * ld.sum(z * z) - 0.5 * columns * ld.cholesky_logdet(L)
                - 0.5 * columns * N * math.log(2 * math.pi))
    m.potential("zero", 1e-3 * (ld.sum(r * w) - ld.sum(z * z)))  # 0 up to rounding, with a gradient
    lp = m.compile()
    theta = np.array([0.2, -0.1, 0.3])
    alpha, rho, mu = np.exp(theta[0]), np.exp(theta[1]), theta[2]
    K = covariance("matern52", X1, alpha, rho) + 0.1 * np.eye(N)
    cols = ys.reshape(N, -1).T
    expected = (stats.halfnorm(scale=2).logpdf(alpha) + stats.gamma(2).logpdf(rho) + stats.norm().logpdf(mu)
                + sum(stats.multivariate_normal(np.full(N, mu), K).logpdf(c) for c in cols))
    assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, abs=1e-9)
    _, grad = lp.log_density_gradient(theta)
    np.testing.assert_allclose(grad, central_differences(lp.log_density, theta), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, m, c, tolerance", [("exp_quad", 40, 2.0, 1e-8), ("matern32", 160, 3.0, 3e-4),
                                                   ("matern52", 160, 3.0, 1e-5)])
def test_hilbert_space_basis_converges_to_the_covariance(name, m, c, tolerance):
    """phi diag(S(sqrt(lambda))) phi^T against the exact covariance on 101 inputs
    over [0, 10], rho = 1.5: the exponentiated quadratic's spectral density falls
    like exp(-omega^2), so 40 functions reach 2e-10; the Matern ones fall like a
    power of omega, so their errors fall like a power of m (measured: 1.4e-4
    and 1.9e-6 at m = 160, 8.2e-3 and 1.5e-3 at m = 40, for alpha = 1; here alpha^2 = 1.69)."""
    from logdens.evaluate import evaluate
    x = np.linspace(0, 10, 101)
    phi, sqrt_eigenvalues = ld.gp.hsgp_basis(x, m, c)
    spectral = evaluate(getattr(ld.gp, f"{name}_spd")(sqrt_eigenvalues, 1.3, 1.5), {})
    np.testing.assert_allclose(phi @ np.diag(spectral) @ phi.T, covariance(name, x, 1.3, 1.5), atol=tolerance)


def test_hilbert_space_gp_regression_compiles_with_its_gradient():
    """f = phi @ (sqrt(S) * beta): a data basis times a whole vector whose frequencies
    are data (read whole, as every right operand of a product), under a normal
    likelihood; the value against numpy and the gradient against central
    differences."""
    x = np.sort(RNG.uniform(0, 10, 80))
    y = np.sin(x) + 0.2 * RNG.normal(size=80)
    phi, sqrt_eigenvalues = ld.gp.hsgp_basis(x, 20, 2.0)
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2.0))
    rho = m.param("rho", ld.InverseGamma(5.0, 5.0))
    beta = m.param("beta", ld.Normal(0, 1), shape=20)
    f = m.data("phi", phi) @ (ld.sqrt(ld.gp.matern52_spd(sqrt_eigenvalues, alpha, rho)) * beta)
    m.observe("y", ld.Normal(f, 0.2), y)
    lp = m.compile()
    theta = RNG.normal(size=22) * 0.3
    alpha, rho, b = np.exp(theta[0]), np.exp(theta[1]), theta[2:]
    s = 16 / 3 * 5 ** 2.5 * alpha ** 2 / rho ** 5 / (5 / rho ** 2 + sqrt_eigenvalues ** 2) ** 3
    expected = (stats.halfnorm(scale=2).logpdf(alpha) + stats.invgamma(5, scale=5).logpdf(rho)
                + stats.norm().logpdf(b).sum() + stats.norm(phi @ (np.sqrt(s) * b), 0.2).logpdf(y).sum())
    assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, abs=1e-9)
    _, grad = lp.log_density_gradient(theta)
    fd = central_differences(lp.log_density, theta)
    np.testing.assert_allclose(grad, fd, atol=1e-6 * np.max(np.abs(fd)))
    with pytest.raises(ld.ModelError, match="hsgp_basis: needs 1-D inputs"):
        ld.gp.hsgp_basis(np.ones((3, 2)), 5)


def test_a_constant_matrix_on_the_right_of_a_product():
    """Data below a product's right operand are whole: (x @ W) @ C with a constant
    C, which used to be read as rows of data and refused."""
    x = RNG.normal(size=(30, 3))
    C = RNG.normal(size=(2, 4))
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(3, 2))
    m.observe("y", ld.Normal((m.data("x", x) @ W) @ C, 1.0), RNG.normal(size=(30, 4)))
    lp = m.compile()
    theta = RNG.normal(size=6)
    _, grad = lp.log_density_gradient(theta)
    np.testing.assert_allclose(grad, central_differences(lp.log_density, theta), atol=1e-6)


X3 = np.random.default_rng(1).uniform(0, 3, (N, 3))  # its own generator: RNG's draws in the tests above stay


def ard_covariance(name, x, alpha, rho):
    """A covariance with a length scale per input dimension, from scipy's
    standardized Euclidean distance: sqrt(sum_k (x_ik - x_jk)^2 / V_k), V = rho^2."""
    r = squareform(pdist(x, "seuclidean", V=rho ** 2))
    s = {"matern32": math.sqrt(3), "matern52": math.sqrt(5)}.get(name, 0.0) * r
    k = {"exp_quad": np.exp(-0.5 * r ** 2), "matern32": (1 + s) * np.exp(-s),
         "matern52": (1 + s + s ** 2 / 3) * np.exp(-s)}[name]
    return alpha ** 2 * k


def ard_regression(name, backend="cpu"):
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2.0))
    rho = m.param("rho", ld.Gamma(2.0, 1.0), shape=3)
    sigma = m.param("sigma", ld.HalfNormal(1.0))
    K = m.deterministic("K", getattr(ld.gp, name)(m.data("x", X3), alpha, rho))
    m.observe("y", ld.MvNormal(np.zeros(N), scale_tril=ld.cholesky(ld.add_diag(K, sigma ** 2))), Y)
    return m.compile(backend=backend)


@pytest.mark.parametrize("name", ["exp_quad", "matern32", "matern52"])
def test_ard_length_scales_in_a_gp_regression(name):
    """rho of shape (3,) on inputs of shape (12, 3): the value is the closed-form
    marginal likelihood with scipy's covariance, to 1e-10; the deterministic K
    per draw and in a batch to 1e-12 relative; the gradient of each backend
    against central differences (errors measured below 1.2e-9 of the largest
    entry; compared at 1e-6 of it), and the two backends agree to 1e-11."""
    cpu, twin = ard_regression(name), ard_regression(name, "python")
    # length scales 0.61, 1.5 and 4.1 (nearly irrelevant inputs on [0, 3]), then 1.3, 0.82 and 1.0
    thetas = np.array([[0.1, -0.5, 0.4, 1.4, -1.0], [-0.7, 0.3, -0.2, 0.0, 0.5]])
    for theta in thetas:
        alpha, rho, sigma = np.exp(theta[0]), np.exp(theta[1:4]), np.exp(theta[4])
        K = ard_covariance(name, X3, alpha, rho)
        expected = (stats.halfnorm(scale=2).logpdf(alpha) + stats.gamma(2).logpdf(rho).sum()
                    + stats.halfnorm().logpdf(sigma)
                    + stats.multivariate_normal(np.zeros(N), K + sigma ** 2 * np.eye(N)).logpdf(Y))
        assert cpu.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, abs=1e-10)
        np.testing.assert_allclose(cpu.constrain(theta)["K"], K, rtol=1e-12)
        for lp in (cpu, twin):
            _, grad = lp.log_density_gradient(theta)
            fd = central_differences(lp.log_density, theta)
            np.testing.assert_allclose(grad, fd, atol=1e-6 * np.max(np.abs(fd)))
        (v0, g0), (v1, g1) = twin.log_density_gradient(theta), cpu.log_density_gradient(theta)
        assert v1 == pytest.approx(v0, abs=1e-11)
        np.testing.assert_allclose(g1, g0, atol=1e-11)
    for theta, K in zip(thetas, twin.constrain_batch(thetas)["K"]):
        np.testing.assert_allclose(K, ard_covariance(name, X3, np.exp(theta[0]), np.exp(theta[1:4])), rtol=1e-12)


@pytest.mark.parametrize("name", ["exp_quad", "matern32", "matern52"])
def test_ard_with_equal_length_scales_is_the_scalar_kernel(name):
    """rho * (1, 1, 1) as the vector of length scales: the value and the gradient
    (the ARD partials summed through the product) of the scalar-rho model."""
    def build(ard):
        m = ld.Model()
        alpha = m.param("alpha", ld.HalfNormal(2.0))
        rho = m.param("rho", ld.Gamma(2.0, 1.0))
        sigma = m.param("sigma", ld.HalfNormal(1.0))
        K = getattr(ld.gp, name)(m.data("x", X3), alpha, rho * np.ones(3) if ard else rho)
        m.observe("y", ld.MvNormal(np.zeros(N), scale_tril=ld.cholesky(ld.add_diag(K, sigma ** 2))), Y)
        return m.compile()

    scalar, ard = build(False), build(True)
    theta = np.array([0.2, 0.3, -0.8])
    (v0, g0), (v1, g1) = scalar.log_density_gradient(theta), ard.log_density_gradient(theta)
    assert v1 == pytest.approx(v0, abs=1e-12)
    np.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-12)


def test_ard_errors():
    m = ld.Model()
    a = m.param("a", ld.HalfNormal(1.0))
    rho = m.param("rho", ld.HalfNormal(1.0), shape=3)
    with pytest.raises(ld.ModelError, match=r"gp.exp_quad\(.*inputs of shape \(12,\) take rho of a scalar.*"
                                            r"rho of shape \(3,\)"):
        ld.gp.exp_quad(X1, a, rho)
    with pytest.raises(ld.ModelError, match=r"gp.matern32\(.*inputs of shape \(12, 2\) take rho of shape \(2,\), "
                                            r"got rho of shape \(3,\)"):
        ld.gp.matern32(X2, a, rho)
    with pytest.raises(ld.ModelError, match=r"gp.periodic\(.*takes a scalar length scale, got rho of shape \(3,\)"):
        ld.gp.periodic(X3, a, rho, 2.0)


@pytest.mark.parametrize("build, message", [
    (lambda: ld.gp.periodic(X1, 1.0, 0.5, 0.0), r"gp.periodic\(array\(12,\), ...\): its period=0.0, must be > 0"),
    (lambda: ld.gp.exp_quad(X1, -1.0, 0.5), r"gp.exp_quad\(array\(12,\), ...\): its amplitude alpha=-1.0, must be > 0"),
    (lambda: ld.gp.matern52(X1, 1.0, 0.0), r"its length scale rho=0.0, must be > 0"),
    (lambda: ld.gp.matern32(X2, 1.0, np.array([0.5, -2.0])), r"its length scale rho\[1\]=-2.0, must be > 0"),
])
def test_a_constant_amplitude_length_scale_or_period_must_be_positive(build, message):
    """As Stan's gp_*_cov require: a period of 0 gave -inf and a NaN gradient, a
    negative constant amplitude or length scale a finite density."""
    with pytest.raises(ld.ModelError, match=message + r" \(Stan's gp_\*_cov require it\); pass a positive number "
                                                      "or a parameter with a positive prior"):
        build()


@pytest.mark.parametrize("x, message", [
    (np.array([]), r"x is empty"),
    (np.full(4, 2.5), r"every input is 2.5: the basis spans \[-L, L\], L = c max\|x - center\| = 0"),
    (np.array([0.0, np.nan, 1.0]), r"x\[1\]=nan, must be finite"),
])
def test_hilbert_space_basis_of_inputs_without_a_range(x, message):
    """An empty input gave numpy's reduction error, a constant one NaN basis functions."""
    with pytest.raises(ld.ModelError, match="hsgp_basis: " + message):
        ld.gp.hsgp_basis(x, 5)


def marginal_gp(name, x, y, mean=False):
    """A GP regression written with ld.gp.Marginal (a linear mean b x with ``mean``)."""
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2.0))
    rho = m.param("rho", ld.Gamma(2.0, 1.0))
    sigma = m.param("sigma", ld.HalfNormal(1.0))
    b = m.param("b", ld.Normal(0.0, 1.0)) if mean else None
    gp = ld.gp.Marginal(lambda z: getattr(ld.gp, name)(z, alpha, rho), mean_func=(lambda z: b * z) if mean else None)
    gp.marginal_likelihood(m, "y", m.data("x", x), y, sigma)
    return m, gp


def closed_form(name, x, y, x_new, point, pred_noise):
    """Rasmussen and Williams (2006) eqs. 2.23-2.24 with the inverse written out."""
    n, s2, b = len(x), point["sigma"] ** 2, point.get("b", 0.0)
    K = covariance(name, np.concatenate([x, x_new]), point["alpha"], point["rho"])
    inverse = np.linalg.inv(K[:n, :n] + s2 * np.eye(n))
    mean_x = b * x if x.ndim == 1 else 0.0
    mean_new = (b * x_new if x.ndim == 1 else 0.0) + K[:n, n:].T @ inverse @ (y - mean_x)
    cov = K[n:, n:] - K[:n, n:].T @ inverse @ K[:n, n:] + (s2 * np.eye(len(x_new)) if pred_noise else 0.0)
    return mean_new, cov


@pytest.mark.parametrize("name, x, x_new, mean", [
    ("exp_quad", X1, np.array([-1.0, 0.3, 2.5, 6.0]), True),
    ("matern32", X2, RNG.uniform(0, 3, (5, 2)), False)])
@pytest.mark.parametrize("pred_noise", [False, True])
def test_marginal_gp_conditional_is_the_closed_form(name, x, x_new, mean, pred_noise):
    """gp.predict's mean and covariance at fixed hyperparameters against the
    closed form with an explicit inverse, to 1e-8 of the largest entry (K + sigma^2 I
    has a condition number below 1e3: both ways lose under 1e-12)."""
    from logdens.evaluate import evaluate
    point = {"alpha": 1.3, "rho": 0.9, "sigma": 0.3, **({"b": 0.5} if mean else {})}
    m, gp = marginal_gp(name, x, Y, mean)
    # the observed term is y ~ MvNormal(b x, K + sigma^2 I)
    term = next(t for t in m.terms if t.name == "y")
    loc, tril = (evaluate(a, {**point, "x": x}) for a in term.args[1:3])
    np.testing.assert_allclose(loc, 0.5 * x if mean else 0.0, rtol=1e-14)
    np.testing.assert_allclose(tril @ tril.T, covariance(name, x, 1.3, 0.9) + 0.09 * np.eye(N), rtol=1e-12, atol=1e-14)
    got_mean, got_cov = gp.predict(point, x_new, pred_noise=pred_noise)
    want_mean, want_cov = closed_form(name, x, Y, x_new, point, pred_noise)
    np.testing.assert_allclose(got_mean[0], want_mean, rtol=0, atol=1e-8 * np.max(np.abs(want_mean)))
    np.testing.assert_allclose(got_cov[0], want_cov, rtol=0, atol=1e-8 * np.max(np.abs(want_cov)))


def test_marginal_gp_conditional_draws_follow_the_conditional():
    """gp.conditional at 4000 independent posterior draws of varying hyperparameters:
    the draws' mean is the average conditional mean, their variance the average
    conditional variance plus the variance of the conditional means (the law of
    total variance); within 5 Monte Carlo standard errors at each input."""
    from arviz_base import from_dict
    rng = np.random.default_rng(3)
    draws = {"alpha": rng.uniform(1.0, 1.5, (2, 2000)), "rho": rng.uniform(0.7, 1.2, (2, 2000)),
             "sigma": rng.uniform(0.2, 0.4, (2, 2000))}
    idata = from_dict({"posterior": draws})
    _, gp = marginal_gp("exp_quad", X1, Y)
    x_new = np.array([0.5, 2.0, 5.5, 7.0])
    tree = gp.conditional(idata, x_new, seed=4)
    assert set(tree.children) == {"predictions", "predictions_constant_data"}
    f = tree.predictions["f_pred"]
    assert f.dims[:2] == ("chain", "draw") and f.shape == (2, 2000, 4)
    np.testing.assert_array_equal(tree.predictions_constant_data["f_pred_x"].values, x_new)
    mean, cov = gp.predict(idata, x_new)
    variance = np.diagonal(cov, axis1=1, axis2=2).mean(axis=0) + mean.var(axis=0)
    f = f.values.reshape(4000, 4)
    assert np.all(np.abs(f.mean(axis=0) - mean.mean(axis=0)) < 5 * np.sqrt(variance / 4000))
    assert np.all(np.abs(f.var(axis=0) / variance - 1) < 5 * np.sqrt(2 / 4000))
    # the seed alone fixes the draws
    np.testing.assert_array_equal(gp.conditional(idata, x_new, seed=4).predictions["f_pred"].values.reshape(4000, 4), f)


def test_marginal_gp_errors():
    gp = ld.gp.Marginal(lambda z: ld.gp.exp_quad(z, 1.0, 1.0))
    with pytest.raises(ld.ModelError, match="call marginal_likelihood"):
        gp.predict({}, np.zeros(2))
    m = ld.Model()
    with pytest.raises(ld.ModelError, match=r"y of shape \(n,\).*got \(12,\), \(11,\)"):
        gp.marginal_likelihood(m, "y", X1, Y[:11], 0.1)
    gp.marginal_likelihood(m, "y", X1, Y, 0.1)
    with pytest.raises(ld.ModelError, match="already observed as term 'y'"):
        gp.marginal_likelihood(m, "y2", X1, Y, 0.1)
    with pytest.raises(ld.ModelError, match=r"x_new has shape \(2, 2\); the inputs have shape \(12,\)"):
        gp.predict({}, np.zeros((2, 2)))
    m, gp = marginal_gp("exp_quad", X1, Y)
    with pytest.raises(ld.ModelError, match=r"the point has no value for the parameters \['rho', 'sigma'\]"):
        gp.predict({"alpha": 1.0}, np.zeros(2))
    with pytest.raises(TypeError, match="cov_func"):
        ld.gp.Marginal(ld.gp.exp_quad(X1, 1.0, 1.0))


def test_hilbert_space_gp_predicts_by_set_data_of_the_training_basis():
    """An HSGP is a parametric basis, so set_data of the basis at new inputs
    predicts, provided the basis is that of the training inputs (train=x: their
    center and L). Predicted f at two training inputs equals the in-sample f
    there at every draw (1e-12); a basis of the new inputs alone is another
    function (its f differs by O(1)); inputs outside [-L, L] are refused."""
    from arviz_base import from_dict
    x = np.sort(RNG.uniform(0, 10, 40))
    phi, sqrt_eigenvalues = ld.gp.hsgp_basis(x, 20, 2.0)
    x_new = np.array([x[3], x[17], 12.0])
    np.testing.assert_allclose(ld.gp.hsgp_basis(x_new, 20, 2.0, train=x)[0][:2], phi[[3, 17]], rtol=0, atol=1e-14)
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(2.0))
    rho = m.param("rho", ld.InverseGamma(5.0, 5.0))
    beta = m.param("beta", ld.Normal(0, 1), shape=20)
    f = m.deterministic("f", m.data("phi", phi) @ (ld.sqrt(ld.gp.matern52_spd(sqrt_eigenvalues, alpha, rho)) * beta))
    m.observe("y", ld.Normal(f, 0.2), np.sin(x))
    rng = np.random.default_rng(5)
    idata = from_dict({"posterior": {"alpha": rng.uniform(0.5, 1.5, (2, 50)), "rho": rng.uniform(1, 2, (2, 50)),
                                     "beta": rng.normal(size=(2, 50, 20))}})
    fitted = ld.sample_posterior_predictive(idata, m, var_names=["f"]).posterior_predictive["f"].values
    density = m.compile()
    density.set_data(phi=ld.gp.hsgp_basis(x_new, 20, 2.0, train=x)[0], y=np.zeros(3))
    predicted = ld.sample_posterior_predictive(idata, density, var_names=["f"], predictions=True).predictions["f"]
    np.testing.assert_allclose(predicted.values[..., :2], fitted[..., [3, 17]], rtol=0, atol=1e-12)
    density.set_data(phi=ld.gp.hsgp_basis(x_new, 20, 2.0)[0])
    wrong = ld.sample_posterior_predictive(idata, density, var_names=["f"], predictions=True).predictions["f"]
    assert np.max(np.abs(wrong.values[..., :2] - fitted[..., [3, 17]])) > 0.1
    with pytest.raises(ld.ModelError, match=r"hsgp_basis: x\[1\]=25.0, outside the basis' domain \[.*\] \(c=2.0"):
        ld.gp.hsgp_basis(np.array([1.0, 25.0]), 20, 2.0, train=x)
    assert ld.gp.hsgp_basis(np.array([4.0]), 5, train=x)[0].shape == (1, 5)
