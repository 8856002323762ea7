"""``ld.scan`` and ``ld.hmm_marginal`` (``logdens.scans``): recursions against
Python loops, the HMM's marginal against brute-force enumeration of every
path, a Kalman filter written as a scan against the exact Gaussian
likelihood, gradients against central differences on the compiled kernels
and their Python twins, and a GARCH(1,1) posterior from NUTS.

Tolerances: values 1e-10 (the same sums in another order over at most a few
hundred steps); central differences with h = 1e-6 have errors near 1e-8 on
log densities of size 10 to 100, so gradients are compared at 1e-6 of their
largest entry.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import special as sp
from scipy import stats

import logdens as ld
from logdens.evaluate import evaluate

RNG = np.random.default_rng(0)


def central_differences(f, theta, h=1e-6):
    return np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(len(theta))])


def assert_gradient(density, theta):
    _, grad = density.log_density_gradient(theta)
    fd = central_differences(density.log_density, theta)
    np.testing.assert_allclose(grad, fd, atol=1e-6 * max(1.0, np.max(np.abs(fd))))


def garch(r, backend="cpu"):
    """GARCH(1,1): sigma2_t = omega + a1 r_{t-1}^2 + b1 sigma2_{t-1}, with the
    stationarity bound b1 < 1 - a1 (an expression bound)."""
    m = ld.Model()
    omega = m.param("omega", ld.HalfNormal(1.0))
    a1 = m.param("a1", ld.Uniform(0, 1))
    b1 = m.param("b1", ld.Uniform(0, 1 - a1))
    previous = m.data("r_previous", np.concatenate([[0.0], r[:-1]]))
    sigma2 = ld.scan(lambda s, rp: omega + a1 * rp * rp + b1 * s, np.var(r), previous)
    m.observe("r", ld.Normal(0.0, ld.sqrt(sigma2)), r)
    return m.compile(backend=backend)


def garch_likelihood(r, omega, a1, b1):
    s, total = np.var(r), 0.0
    for t in range(len(r)):
        s = omega + a1 * (r[t - 1] if t else 0.0) ** 2 + b1 * s
        total += stats.norm(0, math.sqrt(s)).logpdf(r[t])
    return total


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_garch_is_its_python_loop(backend):
    r = RNG.normal(size=40) * 0.5
    density = garch(r, backend)
    theta = np.array([-1.0, 0.2, -0.3])
    omega, a1 = math.exp(theta[0]), sp.expit(theta[1])
    b1 = (1 - a1) * sp.expit(theta[2])
    expected = (stats.halfnorm().logpdf(omega) + stats.uniform().logpdf(a1) + stats.uniform(0, 1 - a1).logpdf(b1)
                + garch_likelihood(r, omega, a1, b1))
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, abs=1e-10)
    assert_gradient(density, theta)
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["r"].sum(),
                               garch_likelihood(r, omega, a1, b1), rtol=1e-12)


def brute_force_hmm(log_emissions, transitions, initial):
    K, T = log_emissions.shape
    paths = []
    for path in itertools.product(range(K), repeat=T):
        total = math.log(initial[path[0]]) + log_emissions[path[0], 0]
        for t in range(1, T):
            total += math.log(transitions[path[t - 1], path[t]]) + log_emissions[path[t], t]
        paths.append(total)
    return sp.logsumexp(paths)


def hmm_model(y, K):
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 3), shape=K, constraint=ld.ordered)
    s = m.param("s", ld.HalfNormal(2))
    Z = m.param("Z", ld.Normal(0, 1), shape=(K, K))
    rho = m.param("rho", ld.Dirichlet(np.ones(K)))
    log_emissions = ld.Normal(mu, s).logpdf(m.data("Y", np.repeat(y[:, None], K, axis=1)))  # (T, K)
    m.potential("y", ld.hmm_marginal(log_emissions.T, ld.softmax(Z), rho))
    return m


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_hmm_marginal_is_the_sum_over_every_path(backend):
    """Three states over six observations: 729 paths enumerated."""
    y = RNG.normal(size=6) * 2
    density = hmm_model(y, 3).compile(backend=backend)
    theta = RNG.normal(size=density.dim) * 0.5
    v = density.constrain(theta)
    log_emissions = stats.norm(v["mu"], v["s"]).logpdf(y[:, None]).T
    exact = brute_force_hmm(log_emissions, sp.softmax(v["Z"], axis=-1), v["rho"])
    priors = (stats.norm(0, 3).logpdf(v["mu"]).sum() + stats.halfnorm(scale=2).logpdf(v["s"])
              + stats.norm().logpdf(v["Z"]).sum() + stats.dirichlet(np.ones(3)).logpdf(v["rho"]))
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(priors + exact, abs=1e-10)
    assert_gradient(density, theta)


def test_hmm_marginal_in_numpy_and_its_errors():
    log_emissions = RNG.normal(size=(2, 5))
    transitions = np.array([[0.9, 0.1], [0.3, 0.7]])
    initial = np.array([0.4, 0.6])
    value = evaluate(ld.hmm_marginal(log_emissions, transitions, initial), {})
    assert value == pytest.approx(brute_force_hmm(log_emissions, transitions, initial), abs=1e-12)
    with pytest.raises(ld.ModelError, match=r"hmm_marginal: needs log_emissions \(K, T\)"):
        ld.hmm_marginal(log_emissions, np.eye(3) / 3, initial)



STOCHASTIC = np.array([[0.9, 0.1], [0.3, 0.7]])


@pytest.mark.parametrize("arguments, message", [
    (lambda m: (STOCHASTIC, np.array([0.5, 0.6])),
     r"hmm_marginal: initial=\[0.5 0.6\] sums to 1.1; a probability vector must sum to 1 \(within 1e-08, Stan's "
     r"tolerance\)"),
    (lambda m: (STOCHASTIC, np.array([-0.2, 1.2])),
     r"hmm_marginal: initial\[0\]=-0.2, must be in \[0, 1\] \(a probability\)"),
    (lambda m: (np.array([[0.9, 0.1], [0.3, 0.5]]), np.array([0.4, 0.6])),
     r"hmm_marginal: transitions\[1\]=\[0.3 0.5\] sums to 0.8;"),
    (lambda m: (m.param("Gamma", shape=(2, 2)), np.array([0.4, 0.6])),
     r"hmm_marginal: transitions is parameter 'Gamma' with constraint ld.real; each of its rows must be a simplex "
     r"\(Stan's Gamma\): use ld.softmax\(Z\) of a \(K, K\) parameter Z, or ld.stack of K simplex parameters"),
    (lambda m: (STOCHASTIC, m.param("rho", shape=2)),
     r"hmm_marginal: initial is parameter 'rho' with constraint ld.real; it must be a simplex \(Stan's rho\): "
     r"give it constraint=ld.simplex or a Dirichlet prior"),
])
def test_hmm_marginal_needs_probability_vectors(arguments, message):
    """Stan's hmm_marginal requires rho and Gamma's rows to be simplexes: with
    initial summing to 1.1 the marginal was off by log(1.1), with rows summing
    to 0.8 by T log(0.8), silently."""
    transitions, initial = arguments(ld.Model())
    with pytest.raises(ld.ModelError, match=message):
        ld.hmm_marginal(RNG.normal(size=(2, 5)), transitions, initial)

def test_kalman_filter_as_a_scan_is_the_exact_gaussian_likelihood():
    """A local-level model, x_t = x_{t-1} + N(0, q), y_t = x_t + N(0, r), x_0 ~ N(0, p0):
    the filter's carry is ld.stack([mean, variance]), its output each step's predictive
    log density; their sum is the log density of y under the covariance
    p0 + q min(s, t) + r [s = t] (s, t from 1)."""
    T, p0 = 25, 2.0
    y = np.cumsum(RNG.normal(size=T) * 0.5) + RNG.normal(size=T) * 0.3
    m = ld.Model()
    q = m.param("q", ld.HalfNormal(1.0))
    r = m.param("r", ld.HalfNormal(1.0))

    def step(carry, y_t):
        mean, variance = carry[0], carry[1] + q           # predict
        total = variance + r
        gain = variance / total
        log_density = -0.5 * (ld.log(2 * math.pi * total) + (y_t - mean) ** 2 / total)
        return ld.stack([mean + gain * (y_t - mean), (1 - gain) * variance]), log_density
    _, log_densities = ld.scan(step, np.array([0.0, p0 - 0.0]), m.data("y", y))
    m.potential("lik", ld.sum(log_densities))
    density = m.compile()
    theta = np.array([-0.7, -1.1])
    qv, rv = np.exp(theta)
    steps = np.arange(1, T + 1)
    # x_1 = x_0 + w_1: Var(x_s) = p0 + q s; Cov(x_s, x_t) = p0 + q min(s, t)
    cov = p0 + qv * np.minimum.outer(steps, steps) + rv * np.eye(T)
    expected = (stats.halfnorm().logpdf(qv) + stats.halfnorm().logpdf(rv)
                + stats.multivariate_normal(np.zeros(T), cov).logpdf(y))
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, abs=1e-10)
    assert_gradient(density, theta)


def local_linear_trend_covariance(T, q, r, p0):
    """The exact covariance of y_t = [1 0] x_t + N(0, r), x_t = A x_{t-1} + N(0, diag(0, q)),
    x_0 ~ N(0, p0), t = 1..T: Cov(x_t, x_u) = A^t p0 A^u' + sum_{s<=min(t,u)} A^(t-s) Q A^(u-s)'."""
    A, Q = np.array([[1.0, 1.0], [0.0, 1.0]]), np.diag([0.0, q])
    power = [np.linalg.matrix_power(A, t) for t in range(T + 1)]
    cov = np.empty((T, T))
    for t in range(1, T + 1):
        for u in range(1, T + 1):
            c = power[t] @ p0 @ power[u].T + sum(power[t - s] @ Q @ power[u - s].T for s in range(1, min(t, u) + 1))
            cov[t - 1, u - 1] = c[0, 0]
    return cov + r * np.eye(T)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_kalman_filter_with_a_matrix_carry_is_the_exact_likelihood(backend):
    """A local linear trend (level and slope) filtered by a scan whose carry is a
    (3, 2) matrix: the state's mean on row 0, its covariance below. The summed
    predictive log densities equal the exact Gaussian likelihood to 1e-10."""
    T = 20
    y = np.cumsum(np.cumsum(RNG.normal(size=T) * 0.1)) + RNG.normal(size=T) * 0.3
    A, Q = np.array([[1.0, 1.0], [0.0, 1.0]]), np.array([[0.0, 0.0], [0.0, 1.0]])
    m = ld.Model()
    q = m.param("q", ld.HalfNormal(1.0))
    r = m.param("r", ld.HalfNormal(1.0))

    def step(carry, y_t):
        mean, P = A @ carry[0], A @ ld.stack([carry[1], carry[2]]) @ A.T + q * Q   # predict
        total = P[0, 0] + r
        gain = P[:, 0] / total
        error = y_t - mean[0]
        log_density = -0.5 * (ld.log(2 * math.pi * total) + error ** 2 / total)
        updated = P - ld.stack([gain * P[0, 0], gain * P[0, 1]]).T              # P - gain (H P)
        return ld.stack([mean + gain * error, updated[0], updated[1]]), log_density
    p0 = np.eye(2)
    _, log_densities = ld.scan(step, np.vstack([np.zeros(2), p0]), m.data("y", y))
    m.potential("lik", ld.sum(log_densities))
    density = m.compile(backend=backend)
    theta = np.array([-2.0, -1.2])
    qv, rv = np.exp(theta)
    expected = (stats.halfnorm().logpdf(qv) + stats.halfnorm().logpdf(rv) + stats.multivariate_normal(
        np.zeros(T), local_linear_trend_covariance(T, qv, rv, p0)).logpdf(y))
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, abs=1e-10)
    assert_gradient(density, theta)


def test_outputs_and_length_without_sequences():
    """``step`` returning (carry, y) without xs, over ``length`` steps: a latent
    AR(1) path's log density written with the scan's outputs."""
    m = ld.Model()
    phi = m.param("phi", ld.Uniform(-1, 1))
    carries, outputs = ld.scan(lambda c, _: (phi * c + 1.0, c * c), 0.5, length=7)
    m.potential("p", ld.sum(outputs) - ld.sum(carries))
    density = m.compile()
    theta = np.array([0.4])
    value, c = 0.0, 0.5
    ph = 2 * sp.expit(0.4) - 1
    for _ in range(7):
        value += c * c
        c = ph * c + 1.0
        value -= c
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(
        stats.uniform(-1, 2).logpdf(ph) + value, abs=1e-12)
    assert_gradient(density, theta)


def vector_recursion(keep, checkpoint=None, T=11):
    """A two-number carry through a nonlinear step reading a parameter vector and
    a data sequence, its output summed: the last carry or all of them read."""
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1), shape=2)
    x = m.data("x", np.linspace(-1.0, 1.0, T))

    def step(c, x_t):
        return ld.stack([ld.tanh(a[0] * c[0] + c[1] * x_t), 0.5 * c[1] + a[1] * ld.sin(c[0])]), c[0] * x_t
    if keep == "all":
        carries, ys = ld.scan(step, np.array([0.3, -0.2]), x)
        last = carries[T - 1]
    else:
        last, ys = ld.scan(step, np.array([0.3, -0.2]), x, keep="last", checkpoint=checkpoint)
    m.potential("p", ld.sum(last * last) + ld.sum(ys))
    return m


@pytest.mark.parametrize("backend", ["python", "cpu"])
@pytest.mark.parametrize("checkpoint", [None, 1, 3, 4, 11, 50])
def test_the_last_carry_with_checkpoints_is_the_scan_of_every_carry(checkpoint, backend):
    """keep='last' stores every ``checkpoint``-th carry (11 steps: segments of 3 and
    4 leave a short last one; 11 and 50 are one segment) and recomputes the rest:
    the same value and gradient as the scan that keeps every carry, to 1e-12."""
    theta = np.array([0.8, -0.6])
    full = vector_recursion("all").compile(backend=backend)
    last = vector_recursion("last", checkpoint).compile(backend=backend)
    assert last.log_density(theta) == pytest.approx(full.log_density(theta), abs=1e-12)
    np.testing.assert_allclose(last.log_density_gradient(theta)[1], full.log_density_gradient(theta)[1],
                               rtol=1e-12, atol=1e-12)
    assert_gradient(last, theta)
    values = {"a": theta, "x": np.linspace(-1.0, 1.0, 11)}
    assert evaluate(vector_recursion("last", checkpoint).terms[-1].value, values) == pytest.approx(
        evaluate(vector_recursion("all").terms[-1].value, values), abs=1e-12)


def test_a_long_hmm_checkpoints_its_carries(monkeypatch):
    """K = 4 states over T = 2000 steps, with ``STORE_ALL`` lowered below T x K: the
    marginal (``keep='last'``) stores every 45th carry (about sqrt(T)); its value
    and gradient equal the scan that stores every carry."""
    from logdens import scans
    T, K = 2000, 4
    y = RNG.normal(size=T)
    every_carry = hmm_model(y, K)
    monkeypatch.setattr(scans, "STORE_ALL", 1000)
    with_checkpoints = hmm_model(y, K)
    assert [n.checkpoint for n in ld.expr.nodes(with_checkpoints.terms[-1].value)
            if isinstance(n, scans.Scan)] == [45]
    a, b = with_checkpoints.compile(), every_carry.compile()
    theta = RNG.normal(size=a.dim) * 0.3
    value, grad = a.log_density_gradient(theta)
    expected, expected_grad = b.log_density_gradient(theta)
    assert value == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_a_scan_inside_another_scans_step(backend):
    """Each of 4 outer steps runs 3 inner steps over a row of X, started from the
    outer carry and reading it; both keep their last carry (a scalar). Value and
    gradient against the Python double loop (1e-12; central differences)."""
    X = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1))
    b = m.param("b", ld.Normal(0, 1), shape=3)

    def outer(c, row):
        inner = ld.scan(lambda d, u: ld.tanh(a * d + u * c) + b[0] * u, c, row, keep="last")
        return 0.5 * inner + b[1]
    last = ld.scan(outer, 0.2, m.data("X", X), keep="last")
    m.potential("p", last * last + b[2] * last)

    def loops(theta):
        av, bv, c = theta[0], theta[1:], 0.2
        for row in X:
            d = c
            for u in row:
                d = math.tanh(av * d + u * c) + bv[0] * u
            c = 0.5 * d + bv[1]
        return c * c + bv[2] * c
    density = m.compile(backend=backend)
    theta = np.array([0.3, 0.1, -0.4, 0.7])
    assert density.log_density(theta, propto=False) == pytest.approx(
        loops(theta) + stats.norm().logpdf(theta).sum(), abs=1e-12)
    assert evaluate(m.terms[-1].value, {"a": theta[0], "b": theta[1:], "X": X}) == pytest.approx(loops(theta), abs=1e-12)
    assert_gradient(density, theta)


def test_scan_errors():
    with pytest.raises(ld.ModelError, match="give xs or a positive length"):
        ld.scan(lambda c, x: c, 0.0)
    with pytest.raises(ld.ModelError, match="share their first axis"):
        ld.scan(lambda c, x: c, 0.0, [np.ones(3), np.ones(4)])
    with pytest.raises(ld.ModelError, match="step returns a carry of shape"):
        ld.scan(lambda c, x: c + np.ones(2), 0.0, np.ones(3))
    with pytest.raises(ld.ModelError, match=r"carry must be a scalar, a vector or a matrix, got shape \(2, 2, 2\)"):
        ld.scan(lambda c, x: c, np.ones((2, 2, 2)), np.ones(3))
    with pytest.raises(ld.ModelError, match="keep is 'all' or 'last'"):
        ld.scan(lambda c, x: c, 0.0, np.ones(3), keep="first")
    with pytest.raises(ld.ModelError, match="checkpoint is a positive number of steps"):
        ld.scan(lambda c, x: c, 0.0, np.ones(3), checkpoint=2)


@pytest.mark.slow
def test_nuts_recovers_a_garch_process():
    """500 returns of a GARCH(1,1) with omega 0.1, a1 0.15, b1 0.75: each within
    four posterior sds of its posterior mean, the stationarity bound held by
    every draw."""
    rng = np.random.default_rng(7)
    omega, a1, b1 = 0.1, 0.15, 0.75
    r, s = np.empty(500), omega / (1 - a1 - b1)
    for t in range(500):
        s = omega + a1 * (r[t - 1] if t else 0.0) ** 2 + b1 * s
        r[t] = math.sqrt(s) * rng.normal()
    post = ld.nuts(garch(r), draws=500, tune=500, chains=2, seed=1, progress=False).posterior
    for name, truth in (("omega", omega), ("a1", a1), ("b1", b1)):
        draws = post[name].values
        assert abs(draws.mean() - truth) < 4 * draws.std(), (name, draws.mean(), draws.std())
    assert np.all(post["a1"].values + post["b1"].values < 1)


def test_stack_of_whole_values_and_its_numpy_value():
    """ld.stack of scalars and of vectors: the compiled gradient against central
    differences, and the batched numpy value (the samplers' deterministics)."""
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1))
    v = m.param("v", ld.Normal(0, 1), shape=2)
    s = m.deterministic("s", ld.stack([a * a, ld.exp(a), 2.0]))
    t = m.deterministic("t", ld.stack([v, v * a]))
    m.potential("p", ld.sum(ld.tanh(s)) + ld.sum(t * t))
    density = m.compile()
    theta = np.array([0.3, -0.4, 0.7])
    assert_gradient(density, theta)
    batch = density.constrain_batch(np.array([theta, -theta]))
    for row, th in zip(range(2), (theta, -theta)):
        np.testing.assert_allclose(batch["s"][row], [th[0] ** 2, np.exp(th[0]), 2.0], rtol=1e-14)
        np.testing.assert_allclose(batch["t"][row], [th[1:], th[1:] * th[0]], rtol=1e-14)
    with pytest.raises(ld.ModelError, match="stack: needs values of one shape"):
        ld.stack([a, v])
