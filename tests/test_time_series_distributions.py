"""GaussianRandomWalk and AR: a whole series as one multivariate event.

Per distribution: values against scipy.stats.norm sums written out and
against the same series as a multivariate normal (the second formula:
GaussianRandomWalk's Cholesky factor is known exactly, AR's covariance is
B^-1 D^2 B^-T), partials against mpmath's derivatives and against central
differences at sigma from 1e-3 to 1e3, the summands adding up to the whole,
invalid arguments, seeded draws (moments within 5 Monte Carlo standard
errors), and compiled models (a prior, an observed series, prior
predictive draws, NUTS).

Tolerances: the value is a sum of T terms each good to a few ulps, so it is
checked to 1e-13 of the sum of the terms' magnitudes (no cancellation is
counted as accuracy), plus, for AR, the error that rounding the innovations
x_t - sum_k rho_k x_{t-k} themselves leaves (``ar_rounding``: a series of
scale 1e3 with innovations of scale 1e-3 has only ten digits of them).
Partials against mpmath's derivatives (40 digits): 1e-10 of the largest,
plus that rounding for AR. Against central differences: rtol 1e-6 with
atol 1e-6 max|grad| (STYLE 26), the step 1e-6 times the entry's own scale
(|x_t| or the series' scale for x, the parameter itself for a scale), so a
sigma of 1e-3 is stepped by 1e-9, not 1e-6 (which would leave a truncation
error of (1e-3)^2 relative). Draws: moments within 5 standard errors
estimated from the draws themselves; seeded, so each check is fixed.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import logdens as ld
from logdens.distributions.ar import SPEC as AR_SPEC
from logdens.distributions.frozen import InvalidArgumentError
from logdens.distributions.gaussian_random_walk import SPEC as GRW_SPEC
from logdens.distributions.multivariate import _compiled
from logdens.distributions.random import make_state
from logdens.samplers.diagnostics import bulk_ess

SIGMAS = (1e-3, 0.3, 1.0, 1e3)
EPS = np.finfo(float).eps


def central(f, x, floor, h=1e-6):
    """Central differences of the scalar ``f`` at the array ``x``, steps h max(floor, |x_i|)."""
    x = np.array(x, dtype=float)
    grad = np.empty(x.shape)
    for index in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[index] = h * max(floor, abs(x[index]))
        grad[index] = (f(x + e) - f(x - e)) / (2.0 * e[index])
    return grad


def assert_partials(analytic, numeric, rtol=1e-6):
    """rtol with an atol of rtol times the largest partial (entries near 0)."""
    scale = max(np.max(np.abs(numeric)), 1e-300)
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=rtol * scale)


def kernel_call(spec, args, keep):
    """The uncompiled ``logpdf_grad`` with ``keep``: ``(lp, partials by name)``,
    a scalar argument's partial in a length-1 array, as the engine gives it."""
    _, lengths = spec.split_shapes([np.shape(a) for a in args])
    partials = [np.zeros(np.shape(a) or (1,)) for a in args]
    lp = spec.logpdf_grad(*args, keep, np.empty(spec.work_size(lengths)), *partials)
    return lp, dict(zip(spec.arg_names, partials))


# ------------------------------------------------------------------ references


def grw_terms(x, sigma, init_mu, init_sigma):
    """The log density's terms, one per value, from scipy.stats.norm."""
    return np.concatenate([[stats.norm(init_mu, init_sigma).logpdf(x[0])],
                           stats.norm(0.0, sigma).logpdf(np.diff(x))])


def ar_innovations(x, rho):
    """e_t = x_t - sum_k rho_k x_{t-k} for t >= K."""
    k = len(rho)
    return np.array([x[t] - np.dot(rho, x[t - 1::-1][:k]) for t in range(k, len(x))])


def ar_rounding(x, rho, sigma):
    """Bounds on the errors that rounding the innovations e_t themselves leaves:
    e_t is a difference of terms of size s_t = |x_t| + sum_k |rho_k x_{t-k}|, so
    z_t = e_t / sigma is off by dz_t ~ 4 eps s_t / sigma (2e-10 for a series of
    scale 1e3 with sigma = 1e-3) and g_t = z_t / sigma by dz_t / sigma.
    ``(value bound, partial bounds)``: sum |z_t| dz_t, and the partials' in the
    order x, rho, sigma, init_sigma (what g_t's errors reach in each)."""
    k, n = len(rho), len(x)
    bx, brho, bsigma, value = np.zeros(n), np.zeros(k), 0.0, 0.0
    for t, e in zip(range(k, n), ar_innovations(x, rho)):
        before = np.abs(x[t - 1::-1][:k])
        dz = 4 * EPS * (abs(x[t]) + np.dot(np.abs(rho), before)) / sigma
        value += abs(e / sigma) * dz
        bsigma += 2 * abs(e / sigma) * dz / sigma
        bx[t] += dz / sigma
        bx[t - len(before):t] += (np.abs(rho[:len(before)]) * dz / sigma)[::-1]
        brho[:len(before)] += dz / sigma * before
    return value, np.concatenate([bx, brho, [bsigma, 0.0]])


def ar_terms(x, rho, sigma, init_sigma):
    k = min(len(rho), len(x))
    return np.concatenate([stats.norm(0.0, init_sigma).logpdf(x[:k]),
                           stats.norm(0.0, sigma).logpdf(ar_innovations(x, rho))])


def grw_factor(n, sigma, init_sigma):
    """L with x - init_mu = L z, z standard normal: L_t0 = init_sigma, L_ti = sigma (1 <= i <= t)."""
    chol = np.tril(np.full((n, n), sigma))
    chol[:, 0] = init_sigma
    return chol


def ar_covariance(n, rho, sigma, init_sigma):
    """B^-1 D^2 B^-T: B x is the initial values and the innovations, D their scales."""
    b = np.eye(n)
    for t in range(len(rho), n):
        for k, r in enumerate(rho):
            b[t, t - 1 - k] = -r
    scales = np.where(np.arange(n) < len(rho), init_sigma, sigma)
    inv = np.linalg.inv(b)
    return inv @ np.diag(scales ** 2) @ inv.T


def mp_grw(x, sigma, init_mu, init_sigma):
    """The random walk's log density in mpmath (the caller's precision)."""
    z0 = (x[0] - init_mu) / init_sigma
    total = -z0 * z0 / 2 - mp.log(init_sigma) - len(x) * mp.log(2 * mp.pi) / 2
    for t in range(1, len(x)):
        z = (x[t] - x[t - 1]) / sigma
        total += -z * z / 2 - mp.log(sigma)
    return total


def mp_ar(x, rho, sigma, init_sigma):
    """The AR density in mpmath (the caller's precision)."""
    k = len(rho)
    total = -len(x) * mp.log(2 * mp.pi) / 2
    for t in range(len(x)):
        if t < k:
            z = x[t] / init_sigma
            total += -z * z / 2 - mp.log(init_sigma)
        else:
            z = (x[t] - mp.fsum(rho[j] * x[t - 1 - j] for j in range(k))) / sigma
            total += -z * z / 2 - mp.log(sigma)
    return total


def mp_gradient(f, args):
    """Every partial of ``f(*args)`` (arguments numbers or lists) by mpmath's diff at 40 digits."""
    with mp.workdps(40):
        args = [[mp.mpf(float(v)) for v in a] if np.ndim(a) else mp.mpf(float(a)) for a in args]
        out = []
        for i, a in enumerate(args):
            for j in (range(len(a)) if isinstance(a, list) else [None]):
                def moved(h, i=i, j=j):
                    b = [list(v) if isinstance(v, list) else v for v in args]
                    if j is None:
                        b[i] = b[i] + h
                    else:
                        b[i][j] = b[i][j] + h
                    return f(*b)
                out.append(float(mp.diff(moved, 0)))
        return np.array(out)


def series(spec, params, n, seed):
    """A draw of length n of the distribution (typical scales at every sigma)."""
    out = np.empty(n)
    _compiled(spec)[2](make_state(seed), *params, out)
    return out


GRW_CASES = [(sigma, mu, s0, n) for sigma in SIGMAS for mu, s0 in ((0.0, 1.0), (-3.0, 1e-3), (2.0, 1e3))
             for n in (1, 2, 17)]
AR_CASES = [(rho, sigma, s0, n) for rho in ([0.7], [0.5, -0.3], [1.2, -0.1, 0.05]) for sigma in SIGMAS
            for s0 in (1e-3, 1.0, 1e3) for n in (1, 2, 17)]


# ------------------------------------------------------------------ GaussianRandomWalk


@pytest.mark.parametrize("sigma, init_mu, init_sigma, n", GRW_CASES)
def test_grw_value_against_scipy(sigma, init_mu, init_sigma, n):
    x = series(GRW_SPEC, (sigma, init_mu, init_sigma), n, seed=n)
    terms = grw_terms(x, sigma, init_mu, init_sigma)
    value = ld.GaussianRandomWalk(sigma, init_mu, init_sigma).logpdf(x)
    assert abs(value - terms.sum()) <= 1e-13 * np.abs(terms).sum()


def test_grw_value_as_a_multivariate_normal():
    """The walk is MvNormal(init_mu, L L^T) with L known exactly: the value to 1e-12
    (the forward substitution's error grows with T), x's partial to 1e-9 and
    init_mu's as the sum of loc's."""
    for sigma, init_sigma in ((0.3, 2.0), (1.0, 1e-3), (1e3, 1.0)):
        x = series(GRW_SPEC, (sigma, 0.5, init_sigma), 12, seed=3)
        lp, grads = ld.GaussianRandomWalk(sigma, 0.5, init_sigma).logpdf_grad(x)
        mvn = ld.MvNormal(np.full(12, 0.5), scale_tril=grw_factor(12, sigma, init_sigma))
        ref, ref_grads = mvn.logpdf_grad(x)
        assert lp == pytest.approx(ref, rel=1e-12)
        assert_partials(grads["x"], ref_grads["x"], rtol=1e-9)
        assert grads["init_mu"] == pytest.approx(ref_grads["loc"].sum(), rel=1e-9, abs=1e-9 * np.abs(
            ref_grads["loc"]).max())


@pytest.mark.parametrize("sigma, init_mu, init_sigma",
                         [(s, 0.5, s0) for s in SIGMAS for s0 in (1e-3, 1.0, 1e3)])
def test_grw_partials(sigma, init_mu, init_sigma):
    """Against mpmath's derivatives (rtol 1e-10 of the largest: the kernel sums T
    partials of size up to 1/sigma^2) and central differences (steps per entry)."""
    params = (sigma, init_mu, init_sigma)
    x = series(GRW_SPEC, params, 9, seed=int(1e3 * sigma) + 1)
    lp, grads = ld.GaussianRandomWalk(*params).logpdf_grad(x)
    analytic = np.concatenate([grads["x"], [grads["sigma"], grads["init_mu"], grads["init_sigma"]]])
    exact = mp_gradient(mp_grw, (x, *params))
    assert_partials(analytic, exact, rtol=1e-10)
    scale = min(sigma, init_sigma)
    assert_partials(grads["x"], central(lambda v: ld.GaussianRandomWalk(*params).logpdf(v), x, scale))
    for name, i in (("sigma", 0), ("init_mu", 1), ("init_sigma", 2)):
        def moved(v, i=i):
            p = list(params)
            p[i] = float(v)
            return ld.GaussianRandomWalk(*p).logpdf(x)
        floor = init_sigma if name == "init_mu" else params[i]
        assert_partials(grads[name], central(moved, np.array(params[i]), floor))


def test_grw_summands_add_up_and_propto():
    """Each summand alone with its partials sums to the whole; dropping the
    summands of fixed arguments leaves the partials of the others unchanged."""
    x = series(GRW_SPEC, (0.4, 1.0, 2.0), 10, seed=2)
    args = (x, 0.4, 1.0, 2.0)
    whole, grads = kernel_call(GRW_SPEC, args, GRW_SPEC.keep_all)
    parts = [kernel_call(GRW_SPEC, args, tuple(j == i for j in range(5))) for i in range(5)]
    assert sum(p[0] for p in parts) == pytest.approx(whole, rel=1e-14)
    for name in GRW_SPEC.arg_names:
        np.testing.assert_allclose(sum(p[1][name] for p in parts), grads[name], rtol=1e-14, atol=1e-14)
    keep = GRW_SPEC.keep_for(("init_mu", "init_sigma"))
    assert keep == (True, False, True, True, False)
    lp, dropped = kernel_call(GRW_SPEC, args, keep)
    assert lp == pytest.approx(whole - parts[1][0] - parts[4][0], rel=1e-14)
    np.testing.assert_allclose(dropped["x"], grads["x"], rtol=1e-14)
    np.testing.assert_allclose(dropped["sigma"], grads["sigma"], rtol=1e-14)


def test_grw_errors_and_support():
    with pytest.raises(InvalidArgumentError, match=r"GaussianRandomWalk: sigma=0.0, must be > 0"):
        ld.GaussianRandomWalk(0.0)
    with pytest.raises(InvalidArgumentError, match=r"GaussianRandomWalk: init_sigma=-1.0, must be > 0"):
        ld.GaussianRandomWalk(1.0, init_sigma=-1.0)
    with pytest.raises(InvalidArgumentError, match=r"GaussianRandomWalk: sigma\[1\]=nan"):
        ld.GaussianRandomWalk(np.array([1.0, np.nan]))
    with pytest.raises(InvalidArgumentError, match=r"GaussianRandomWalk: steps=2.0, must be an integer >= 0"):
        ld.GaussianRandomWalk(1.0, steps=2.0)
    with pytest.raises(InvalidArgumentError, match=r"the series length T is the value's.*give the parameter "
                                                    r"shape=T \(or dims=\), or steps= \(T = steps \+ 1\)"):
        ld.GaussianRandomWalk(1.0).rvs(seed=0)
    with pytest.raises(InvalidArgumentError, match=r"x has series of length 3 but steps=3 gives 4"):
        ld.GaussianRandomWalk(1.0, steps=3).logpdf(np.zeros(3))
    with pytest.raises(InvalidArgumentError, match=r"x has shape \(\) but needs 1 event axes \(t\)"):
        ld.GaussianRandomWalk(1.0).logpdf(0.0)
    assert ld.GaussianRandomWalk(1.0, steps=3).event_shape() == (4,)
    assert ld.GaussianRandomWalk in ld.MULTIVARIATE
    d = ld.GaussianRandomWalk(np.array([0.5, 1.0]), 0.0, 1.0)  # a batch of two walks
    x = np.array([[0.0, 1.0, np.inf], [0.0, 1e200, -1e200]])
    assert list(d.logpdf(x)) == [-np.inf, -np.inf]  # inf; squares that overflow
    assert GRW_SPEC.logpdf(np.zeros(0), 1.0, 0.0, 1.0) == -np.inf
    for bad in ((0.0, 0.0, 1.0), (1.0, 0.0, np.nan), (np.inf, 0.0, 1.0), (1.0, np.nan, 1.0)):
        assert GRW_SPEC.logpdf(np.zeros(3), *bad) == -np.inf
        lp, grads = kernel_call(GRW_SPEC, (np.zeros(3),) + bad, GRW_SPEC.keep_all)
        assert lp == -np.inf and all(np.all(g == 0.0) for g in grads.values())


def test_grw_draws():
    """Mean init_mu and Var(x_t) = init_sigma^2 + t sigma^2, Cov(x_s, x_t) =
    init_sigma^2 + min(s, t) sigma^2: each entry within 5 standard errors
    (from the draws' own spread) over 20000 seeded draws."""
    n, sigma, init_mu, init_sigma = 20000, 0.5, 1.0, 2.0
    draws = ld.GaussianRandomWalk(sigma, init_mu, init_sigma, steps=7).rvs(size=n, seed=11)
    assert draws.shape == (n, 8) and np.all(np.isfinite(draws))
    assert np.all(np.abs(draws.mean(0) - init_mu) < 5 * draws.std(0) / math.sqrt(n))
    t = np.arange(8)
    cov = init_sigma ** 2 + np.minimum.outer(t, t) * sigma ** 2
    centred = draws - init_mu
    products = centred[:, :, None] * centred[:, None, :]
    assert np.all(np.abs(products.mean(0) - cov) < 5 * products.std(0) / math.sqrt(n))
    again = ld.GaussianRandomWalk(sigma, init_mu, init_sigma, steps=7).rvs(size=n, seed=11)
    np.testing.assert_array_equal(draws, again)


# ------------------------------------------------------------------ AR


@pytest.mark.parametrize("rho, sigma, init_sigma, n", AR_CASES)
def test_ar_value_against_scipy(rho, sigma, init_sigma, n):
    x = series(AR_SPEC, (np.array(rho), sigma, init_sigma), n, seed=n)
    terms = ar_terms(x, np.array(rho), sigma, init_sigma)
    value = ld.AR(rho, sigma, init_sigma).logpdf(x)
    assert abs(value - terms.sum()) <= 1e-13 * np.abs(terms).sum() + ar_rounding(x, np.array(rho), sigma)[0]


def test_ar_value_as_a_multivariate_normal():
    """Against scipy's multivariate_normal with B^-1 D^2 B^-T, which it factors by
    eigh: relative 1e-9 at these moderate scales (condition numbers below 1e3)."""
    for rho, sigma, init_sigma in (([0.6], 0.5, 0.8), ([0.5, -0.3], 1.0, 1.5), ([0.2, 0.1, 0.3], 2.0, 1.0)):
        x = series(AR_SPEC, (np.array(rho), sigma, init_sigma), 10, seed=5)
        cov = ar_covariance(10, rho, sigma, init_sigma)
        ref = stats.multivariate_normal(np.zeros(10), cov).logpdf(x)
        lp, grads = ld.AR(rho, sigma, init_sigma).logpdf_grad(x)
        assert lp == pytest.approx(ref, rel=1e-9)
        assert_partials(grads["x"], -np.linalg.solve(cov, x), rtol=1e-9)


@pytest.mark.parametrize("rho, sigma, init_sigma",
                         [(r, s, s0) for r in ([0.7], [0.5, -0.3], [1.2, -0.1, 0.05]) for s in SIGMAS
                          for s0 in (1e-3, 1e3)])
def test_ar_partials(rho, sigma, init_sigma):
    """Against mpmath's derivatives (1e-10 of the largest, plus what rounding the
    innovations leaves: ``ar_rounding``) and central differences (steps per
    entry: the series' smaller scale for x, 1e-6 for rho)."""
    rho = np.array(rho)
    x = series(AR_SPEC, (rho, sigma, init_sigma), 11, seed=len(rho))
    lp, grads = ld.AR(rho, sigma, init_sigma).logpdf_grad(x)
    analytic = np.concatenate([grads["x"], grads["rho"], [grads["sigma"], grads["init_sigma"]]])
    exact = mp_gradient(mp_ar, (x, rho, sigma, init_sigma))
    bound = 1e-10 * np.max(np.abs(exact)) + ar_rounding(x, rho, sigma)[1]
    assert np.all(np.abs(analytic - exact) <= bound), np.abs(analytic - exact) / bound
    dist = ld.AR(rho, sigma, init_sigma)
    assert_partials(grads["x"], central(dist.logpdf, x, min(sigma, init_sigma)))
    assert_partials(grads["rho"], central(lambda r: ld.AR(r, sigma, init_sigma).logpdf(x), rho, 1.0))
    assert_partials(grads["sigma"], central(lambda s: ld.AR(rho, float(s), init_sigma).logpdf(x),
                                            np.array(sigma), sigma))
    assert_partials(grads["init_sigma"], central(lambda s: ld.AR(rho, sigma, float(s)).logpdf(x),
                                                 np.array(init_sigma), init_sigma))


def test_ar_summands_add_up():
    x = series(AR_SPEC, (np.array([0.5, -0.3]), 0.4, 2.0), 10, seed=2)
    args = (x, np.array([0.5, -0.3]), 0.4, 2.0)
    whole, grads = kernel_call(AR_SPEC, args, AR_SPEC.keep_all)
    parts = [kernel_call(AR_SPEC, args, tuple(j == i for j in range(5))) for i in range(5)]
    assert sum(p[0] for p in parts) == pytest.approx(whole, rel=1e-14)
    for name in AR_SPEC.arg_names:
        np.testing.assert_allclose(sum(p[1][name] for p in parts), grads[name], rtol=1e-14, atol=1e-14)
    assert AR_SPEC.keep_for(("x",)) == (True, True, True, True, False)


def test_ar_errors_and_support():
    with pytest.raises(InvalidArgumentError, match=r"AR: sigma=-0.5, must be > 0"):
        ld.AR([0.5], -0.5)
    with pytest.raises(InvalidArgumentError, match=r"AR: init_sigma=0.0, must be > 0"):
        ld.AR([0.5], 1.0, 0.0)
    with pytest.raises(InvalidArgumentError, match=r"AR: rho has shape \(0,\); it needs at least one"):
        ld.AR(np.zeros(0), 1.0)
    with pytest.raises(InvalidArgumentError, match=r"AR: rho\[1\]=inf"):
        ld.AR([0.5, np.inf], 1.0)
    with pytest.raises(InvalidArgumentError, match=r"AR: steps=-1, must be an integer >= 0"):
        ld.AR([0.5], 1.0, steps=-1)
    m = ld.Model()
    with pytest.raises(InvalidArgumentError, match=r"AR: the series length T is the value's.*T = steps \+ 2"):
        m.param("x", ld.AR(m.param("r2", ld.Normal(0, 1), shape=2), 1.0))
    # a number is an AR(1); rho's length fixes K, steps the rest
    assert ld.AR(0.5, 1.0).params["rho"].shape == (1,)
    assert ld.AR([0.5, 0.1, 0.0], 1.0, steps=4).event_shape() == (7,)
    x = np.array([0.3, -1.0, 2.0])
    assert ld.AR(0.5, 1.0).logpdf(x) == pytest.approx(ld.AR([0.5, 0.0], 1.0).logpdf(x) - stats.norm(
        0, 1).logpdf(x[1]) + stats.norm(0.5 * x[0], 1).logpdf(x[1]), rel=1e-14)
    # T <= K: all initial values, rho and sigma unread
    lp, grads = ld.AR([0.5, 0.2, 0.1], 2.0, 3.0).logpdf_grad(x[:2])
    assert lp == pytest.approx(stats.norm(0, 3.0).logpdf(x[:2]).sum(), rel=1e-14)
    assert np.all(grads["rho"] == 0.0) and grads["sigma"] == 0.0
    assert ld.AR in ld.MULTIVARIATE
    assert ld.AR([0.5], 1.0).logpdf(np.array([0.0, np.inf])) == -np.inf
    for bad in ((np.array([np.nan]), 1.0, 1.0), (np.array([0.5]), 0.0, 1.0), (np.array([0.5]), 1.0, np.inf)):
        lp, grads = kernel_call(AR_SPEC, (np.ones(4),) + bad, AR_SPEC.keep_all)
        assert lp == -np.inf and all(np.all(g == 0.0) for g in grads.values())


def test_ar1_with_a_scalar_parameter_is_ar1_with_a_vector_of_one(tmp_path):
    """``ld.AR(rho, s)`` with ``rho`` a scalar parameter, as PyMC users write an
    AR(1): the density and gradient of ``rho`` of shape 1, and scipy's
    (Normal(0, 1) first value, then Normal(rho x_{t-1}, s))."""
    y = np.random.default_rng(5).normal(size=30).cumsum() * 0.3

    def model(shape):
        m = ld.Model()
        rho = m.param("rho", ld.Normal(0, 0.5), shape=shape)
        s = m.param("s", ld.HalfNormal(1))
        m.observe("y", ld.AR(rho, s), y)
        return m.compile(cache_dir=tmp_path)

    scalar, vector = model(None), model(1)
    theta = np.array([0.6, -0.4])
    lp, grad = scalar.log_density_gradient(theta, propto=False)
    lp1, grad1 = vector.log_density_gradient(theta, propto=False)
    assert lp == pytest.approx(lp1, rel=1e-14) and np.allclose(grad, grad1, rtol=1e-13, atol=1e-13)
    rho, s = 0.6, math.exp(-0.4)
    want = stats.norm(0, 1).logpdf(y[0]) + stats.norm(rho * y[:-1], s).logpdf(y[1:]).sum()
    assert scalar.pointwise_log_likelihood(theta)["y"].sum() == pytest.approx(want, rel=1e-12)
    assert scalar.constrain(theta)["rho"].shape == ()


def test_ar_draws():
    """AR(1) started from its stationary law (init_sigma = sigma / sqrt(1 - rho^2)):
    every x_t has variance sigma^2 / (1 - rho^2) and Cov(x_t, x_{t+1}) = rho times
    it; AR(2) has the covariance B^-1 D^2 B^-T. Each within 5 standard errors
    of 20000 seeded draws."""
    n, rho, sigma = 20000, 0.7, 0.5
    stationary = sigma / math.sqrt(1.0 - rho * rho)
    draws = ld.AR(rho, sigma, stationary, steps=5).rvs(size=n, seed=3)
    assert draws.shape == (n, 6)
    sq, lag = draws ** 2, draws[:, 1:] * draws[:, :-1]
    assert np.all(np.abs(sq.mean(0) - stationary ** 2) < 5 * sq.std(0) / math.sqrt(n))
    assert np.all(np.abs(lag.mean(0) - rho * stationary ** 2) < 5 * lag.std(0) / math.sqrt(n))
    draws = ld.AR([0.5, -0.3], 1.0, 1.5, steps=6).rvs(size=n, seed=4)
    products = draws[:, :, None] * draws[:, None, :]
    cov = ar_covariance(8, [0.5, -0.3], 1.0, 1.5)
    assert np.all(np.abs(products.mean(0) - cov) < 5 * products.std(0) / math.sqrt(n))


# ------------------------------------------------------------------ models


@pytest.fixture(scope="module")
def walk_model():
    """s ~ HalfNormal(1), x ~ GaussianRandomWalk(s, init_sigma=2) of 20 values,
    y ~ Normal(x, 0.5) observed."""
    y = np.cumsum(np.random.default_rng(1).normal(size=20))
    m = ld.Model()
    s = m.param("s", ld.HalfNormal(1))
    x = m.param("x", ld.GaussianRandomWalk(s, init_sigma=2.0), shape=20)
    m.observe("y", ld.Normal(x, 0.5), y)
    return m, m.compile(), y


def test_random_walk_prior_in_a_model(walk_model):
    """The full density without the Jacobian against the scipy sums written out
    (rel 1e-12: 41 terms), the gradient against central differences of
    ``log_density``, the Python twin, and the listing."""
    m, lp, y = walk_model
    assert lp.dim == 21
    theta = np.random.default_rng(2).normal(size=lp.dim)
    v = lp.constrain(theta)
    s, x = float(v["s"]), v["x"]
    expected = (stats.halfnorm(scale=1.0).logpdf(s) + stats.norm(0.0, 2.0).logpdf(x[0])
                + stats.norm(0.0, s).logpdf(np.diff(x)).sum() + stats.norm(x, 0.5).logpdf(y).sum())
    assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, rel=1e-12)
    value, grad = lp.log_density_gradient(theta)
    assert value == pytest.approx(lp.log_density(theta), rel=1e-13)
    assert_partials(grad, central(lp.log_density, theta, 1.0))
    twin_value, twin_grad = m.compile(backend="python").log_density_gradient(theta)
    assert twin_value == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(twin_grad, grad, rtol=1e-10, atol=1e-12)
    assert "x[20] ~ GaussianRandomWalk(s, 0, 2)" in repr(m)


def test_a_prior_without_shape_takes_steps():
    m = ld.Model()
    w = m.param("w", ld.GaussianRandomWalk(1.0, steps=9))
    assert w.shape == (10,)


def test_a_shape_that_disagrees_with_steps_is_refused():
    """steps fixes T; a parameter's shape= or an observed series of another length
    is a ModelError (the kernels take T from the value and would ignore it),
    and the failed observe leaves its name free."""
    m = ld.Model()
    with pytest.raises(ld.ModelError, match=r"parameter 'x': shape \(5,\) does not end in \(10,\)"):
        m.param("x", ld.GaussianRandomWalk(1.0, steps=9), shape=5)
    with pytest.raises(ld.ModelError, match=r"observe 'y': shape \(3, 4\) does not end in \(5,\)"):
        m.observe("y", ld.AR([0.5, 0.2], 1.0, steps=3), np.zeros((3, 4)))
    m.observe("y", ld.AR([0.5, 0.2], 1.0, steps=3), np.zeros((3, 5)))
    with pytest.raises(ld.ModelError, match=r"parameter 'L': shape \(4, 4\) does not end in \(3, 3\)"):
        m.param("L", ld.LKJCholesky(3, 2.0), shape=(4, 4))


def test_ar2_observed_in_a_model():
    """rho ~ Normal(0, 0.5) (2), sigma ~ HalfNormal(1), y ~ AR(rho, sigma) observed:
    the value against the scipy sums (rel 1e-12) and the gradient against central
    differences; the propto value drops only y's constant."""
    rng = np.random.default_rng(3)
    y = series(AR_SPEC, (np.array([0.6, -0.2]), 0.8, 1.0), 50, seed=6)
    m = ld.Model()
    rho = m.param("rho", ld.Normal(0, 0.5), shape=2)
    sigma = m.param("sigma", ld.HalfNormal(1))
    m.observe("y", ld.AR(rho, sigma), y)
    lp = m.compile()
    theta = rng.normal(size=lp.dim) * 0.5
    v = lp.constrain(theta)
    r, s = v["rho"], float(v["sigma"])
    expected = (stats.norm(0, 0.5).logpdf(r).sum() + stats.halfnorm().logpdf(s)
                + ar_terms(y, r, s, 1.0).sum())
    assert lp.log_density(theta, propto=False, jacobian=False) == pytest.approx(expected, rel=1e-12)
    value, grad = lp.log_density_gradient(theta)
    assert_partials(grad, central(lp.log_density, theta, 1.0))
    # propto drops -sum_{t<K} y_t^2 / 2 - K log(1) and -T log(2 pi) / 2 (and the priors' constants)
    y_constant = -0.5 * np.sum(y[:2] ** 2) - 50 * 0.5 * math.log(2 * math.pi)
    prior_constants = 2 * stats.norm(0, 0.5).logpdf(0.0) + stats.halfnorm().logpdf(0.0)
    assert lp.log_density(theta, jacobian=False) == pytest.approx(expected - y_constant - prior_constants,
                                                                  rel=1e-12)


def test_prior_predictive_draws_of_a_random_walk(walk_model):
    """x_t given s is Normal(0, 4 + t s^2), s ~ HalfNormal(1): Var(x_t) = 4 + t
    (E s^2 = 1), each within 5 standard errors of 4000 draws (the error of a
    mean of x_t^2, from the draws' own spread)."""
    m, _, _ = walk_model
    prior = ld.sample_prior_predictive(m, draws=4000, seed=0).prior
    x = prior["x"].values[0]
    assert x.shape == (4000, 20)
    sq = x ** 2
    assert np.all(np.abs(sq.mean(0) - (4.0 + np.arange(20))) < 5 * sq.std(0) / math.sqrt(4000))


@pytest.mark.slow
def test_nuts_recovers_an_ar1():
    """300 steps of an AR(1) with rho = 0.7, sigma = 0.5: the posterior means of
    rho and sigma within 4 posterior standard deviations of the truth."""
    y = series(AR_SPEC, (np.array([0.7]), 0.5, 1.0), 300, seed=8)
    m = ld.Model()
    rho = m.param("rho", ld.Normal(0, 0.5), shape=1)
    sigma = m.param("sigma", ld.HalfNormal(1))
    m.observe("y", ld.AR(rho, sigma), y)
    post = ld.nuts(m, draws=500, tune=500, chains=2, seed=0, progress=False).posterior
    for name, truth in (("rho", 0.7), ("sigma", 0.5)):
        draws = post[name].values.reshape(-1)
        assert abs(draws.mean() - truth) < 4 * draws.std(), (name, draws.mean(), draws.std())
    assert bulk_ess(post["sigma"].values) > 100


@pytest.mark.slow
def test_nuts_on_an_ar5_matches_its_exact_gaussian_posterior():
    """AR(5) with sigma known (0.5) and rho ~ Normal(0, 10): the first five values'
    density does not involve rho, so the posterior of rho is Gaussian with
    precision X^T X / sigma^2 + I / 100 and mean that times X^T y / sigma^2
    (X the lagged values). NUTS's posterior means within 4 Monte Carlo standard
    errors (bulk ESS) of the exact ones, and its sds within 15%."""
    truth = np.array([0.4, -0.2, 0.15, 0.1, -0.1])
    y = series(AR_SPEC, (truth, 0.5, 1.0), 400, seed=9)
    m = ld.Model()
    rho = m.param("rho", ld.Normal(0, 10), shape=5)
    m.observe("y", ld.AR(rho, 0.5), y)
    post = ld.nuts(m, draws=1000, tune=500, chains=2, seed=2, progress=False).posterior["rho"].values
    X = np.column_stack([y[5 - k:len(y) - k] for k in range(1, 6)])
    precision = X.T @ X / 0.25 + np.eye(5) / 100.0
    mean = np.linalg.solve(precision, X.T @ y[5:] / 0.25)
    sd = np.sqrt(np.diag(np.linalg.inv(precision)))
    draws = post.reshape(-1, 5)
    for k in range(5):
        mcse = draws[:, k].std() / math.sqrt(bulk_ess(post[..., k]))
        assert abs(draws[:, k].mean() - mean[k]) < 4 * mcse, (k, draws[:, k].mean(), mean[k], mcse)
        assert abs(draws[:, k].std() / sd[k] - 1) < 0.15, (k, draws[:, k].std(), sd[k])


def test_one_observed_series_is_one_observation():
    """An observed series (one event) has one pointwise log-likelihood, the whole
    series', and its posterior predictive draws have the series' shape."""
    rng = np.random.default_rng(3)
    y = np.cumsum(rng.normal(size=30) * 0.5)
    m = ld.Model()
    sigma = m.param("sigma", ld.HalfNormal(1.0))
    m.observe("y", ld.AR(np.array([0.9]), sigma), y)
    lp = m.compile()
    theta = np.array([-0.5])
    pointwise = lp.pointwise_log_likelihood(theta)["y"]
    assert pointwise.shape == (1,)
    assert pointwise[0] == pytest.approx(lp.log_density(theta, propto=False, jacobian=False)
                                         - stats.halfnorm().logpdf(np.exp(-0.5)), abs=1e-10)
    idata = ld.nuts(lp, draws=50, tune=50, chains=1, seed=0, progress=False)
    draws = ld.sample_posterior_predictive(idata, m, seed=1).posterior_predictive["y"]
    assert draws.shape == (1, 50, 30)
