"""Forecasts of AR and GaussianRandomWalk series (logdens.forecasting).

At posterior draws made in numpy (so no sampler error enters), the draws'
mean and variance at each step ahead against the exact forecast
distribution, per draw by the AR's companion form and averaged over the
draws: within 5 Monte Carlo standard errors (independent draws: sd / sqrt(N)
for a mean, var sqrt(2 / N) for a variance of near-normal draws).
"""

import numpy as np
import pytest
from arviz_base import from_dict

import logdens as ld
from logdens.distributions import random
from logdens.expr import ModelError

N = 4000
RNG = np.random.default_rng(0)
SERIES = np.cumsum(RNG.normal(size=40)) * 0.3


def _posterior(values, chains=2):
    return from_dict({"posterior": {k: v.reshape((chains, -1) + v.shape[1:]) for k, v in values.items()}})


def exact_ar(rho, sigma, last, h):
    """The h-step forecast's means and variances of an AR(K) at one draw, from the
    companion form s_{t+1} = A s_t + (sigma e, 0, ...): mean A^j s, cov sum A^i Q A^i^T."""
    k = len(rho)
    A = np.vstack([rho, np.eye(k)[:-1]])
    s, cov, Q = last[::-1][:k].copy(), np.zeros((k, k)), np.zeros((k, k))
    Q[0, 0] = sigma ** 2
    means, variances = [], []
    for _ in range(h):
        s, cov = A @ s, A @ cov @ A.T + Q
        means.append(s[0])
        variances.append(cov[0, 0])
    return np.array(means), np.array(variances)


def assert_within_mcse(draws, means, variances):
    """Draws (N, h) against per-draw exact means and variances (N, h): the law of total variance."""
    total = variances.mean(axis=0) + means.var(axis=0)
    assert np.all(np.abs(draws.mean(axis=0) - means.mean(axis=0)) < 5 * np.sqrt(total / len(draws)))
    assert np.all(np.abs(draws.var(axis=0) / total - 1) < 5 * np.sqrt(2 / len(draws)))


def test_ar1_forecast_is_the_exact_one():
    """AR(1) at rho = 0.7, sigma = 0.5: mean rho^j x_T, variance sigma^2 sum_{i<j} rho^(2i)."""
    m = ld.Model()
    rho, sigma = m.param("rho", ld.Normal(0, 0.5)), m.param("sigma", ld.HalfNormal(1))
    m.observe("y", ld.AR(rho, sigma), SERIES)
    tree = ld.forecast(_posterior({"rho": np.full(N, 0.7), "sigma": np.full(N, 0.5)}), m, steps=6, seed=1)
    y = tree.predictions["y"]
    assert y.dims == ("chain", "draw", "step") and list(y["step"].values) == [1, 2, 3, 4, 5, 6]
    j = np.arange(1, 7)
    means = np.tile(0.7 ** j * SERIES[-1], (N, 1))
    variances = np.tile(0.25 * (1 - 0.49 ** j) / (1 - 0.49), (N, 1))
    assert_within_mcse(y.values.reshape(N, 6), means, variances)
    np.testing.assert_array_equal(ld.forecast(_posterior({"rho": np.full(N, 0.7), "sigma": np.full(N, 0.5)}), m,
                                              steps=6, seed=1).predictions["y"].values, y.values)


def test_ar2_forecast_at_varying_draws_is_the_exact_one():
    """AR(2) with rho and sigma varying over the draws: each draw's forecast is
    continued with its own parameters (the mean and variance of the mixture over
    draws, from the companion form per draw)."""
    m = ld.Model()
    rho, sigma = m.param("rho", ld.Normal(0, 0.5), shape=2), m.param("sigma", ld.HalfNormal(1))
    m.observe("y", ld.AR(rho, sigma), SERIES)
    post = {"rho": np.column_stack([RNG.uniform(0.3, 0.6, N), RNG.uniform(-0.3, 0.2, N)]),
            "sigma": RNG.uniform(0.3, 0.8, N)}
    y = ld.forecast(_posterior(post), m, steps=5, seed=2).predictions["y"].values.reshape(N, 5)
    exact = [exact_ar(r, s, SERIES, 5) for r, s in zip(post["rho"], post["sigma"])]
    assert_within_mcse(y, np.array([e[0] for e in exact]), np.array([e[1] for e in exact]))


def test_random_walk_forecast_variance_grows_linearly():
    """A latent GaussianRandomWalk of 3 series (a parameter), continued from each
    posterior draw's last values: mean x_T, variance j sigma^2 at step j; the
    series axis keeps its dim and coords."""
    m = ld.Model(coords={"series": ["a", "b", "c"]})
    sigma = m.param("sigma", ld.HalfNormal(1))
    m.param("w", ld.GaussianRandomWalk(sigma), shape=(3, 20), dims=("series", "time"))
    last = np.array([-1.0, 0.0, 2.0])
    w = np.tile(np.linspace(0, 1, 20), (N, 3, 1)) * last[:, None] * 1.0
    tree = ld.forecast(_posterior({"sigma": np.full(N, 0.4), "w": w}), m, steps=8, seed=3)
    f = tree.predictions["w"]
    assert f.dims == ("chain", "draw", "series", "step") and list(f["series"].values) == ["a", "b", "c"]
    f = f.values.reshape(N, 3, 8)
    j = np.arange(1, 9)
    for s in range(3):
        assert_within_mcse(f[:, s], np.full((N, 8), last[s]), np.tile(0.16 * j, (N, 1)))


def test_an_ar_series_shorter_than_its_order_continues_its_initial_values():
    """AR(3) observed at 2 values: step 1 is the third initial value,
    Normal(0, init_sigma); step 2 is rho . (x_2, x_1, x_0) + sigma e."""
    m = ld.Model()
    rho = m.param("rho", ld.Normal(0, 0.5), shape=3)
    m.observe("y", ld.AR(rho, 0.5, init_sigma=2.0), np.array([1.0, -1.0]))
    y = ld.forecast(_posterior({"rho": np.tile([0.5, 0.2, 0.1], (N, 1))}), m, steps=2, seed=4)
    y = y.predictions["y"].values.reshape(N, 2)
    assert_within_mcse(y[:, :1], np.zeros((N, 1)), np.full((N, 1), 4.0))
    means = 0.5 * y[:, 0] + 0.2 * -1.0 + 0.1 * 1.0
    assert np.abs(np.mean(y[:, 1] - means)) < 5 * 0.5 / np.sqrt(N)
    assert np.abs(np.std(y[:, 1] - means) / 0.5 - 1) < 5 * np.sqrt(1 / (2 * N))


def test_forecast_errors_name_the_problem():
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    m.observe("y", ld.Normal(mu, 1), SERIES)
    post = _posterior({"mu": np.zeros(8)})
    with pytest.raises(ModelError, match=r"no AR or GaussianRandomWalk term, nor one read through a scan, to forecast; "
                                         r"its terms are \['mu', 'y'\]"):
        ld.forecast(post, m, steps=3)
    m.observe("z", ld.GaussianRandomWalk(1.0), SERIES)
    with pytest.raises(ValueError, match=r"steps=0, must be an integer >= 1"):
        ld.forecast(post, m, steps=0)
    with pytest.raises(ValueError, match=r"var_names has 'y', which is no AR or GaussianRandomWalk term, "
                                         r"nor one read through a scan: \['z'\]"):
        ld.forecast(post, m, steps=3, var_names=["y"])
    assert ld.forecast(post, m, steps=3, seed=0).predictions["z"].shape == (2, 4, 3)


def garch(r, previous=None):
    """GARCH(1,1) as the README writes it: sigma2_t = omega + a1 r_{t-1}^2 + b1 sigma2_{t-1}
    (``previous``: the input r_previous, by default r one step back)."""
    m = ld.Model()
    omega, a1 = m.param("omega", ld.HalfNormal(1)), m.param("a1", ld.Uniform(0, 1))
    b1 = m.param("b1", ld.Uniform(0, 1 - a1))
    previous = m.data("r_previous", np.concatenate([[0.0], r[:-1]]) if previous is None else previous)
    sigma2 = ld.scan(lambda s, rp: omega + a1 * rp * rp + b1 * s, np.var(r), previous)
    m.observe("r", ld.Normal(0.0, ld.sqrt(sigma2)), r)
    return m


def test_garch_forecast_through_its_scan_is_the_exact_one():
    """r continued through its variance recursion, each step's input the value
    drawn before it: E r_{T+j} = 0 and, per draw, E r_{T+j}^2 = E sigma2_{T+j} =
    omega sum_{i<j-1} p^i + p^(j-1) sigma2_{T+1} (p = a1 + b1), sigma2_{T+1} =
    omega + a1 r_T^2 + b1 sigma2_T from the data; averaged over draws of varying
    parameters, within 5 Monte Carlo standard errors (of r and of r^2). Step 1
    exactly: sqrt(sigma2_{T+1}) times the seed's standard normals."""
    r = SERIES[1:] - SERIES[:-1]
    m = garch(r)
    post = {"omega": RNG.uniform(0.05, 0.15, N), "a1": RNG.uniform(0.1, 0.2, N), "b1": RNG.uniform(0.6, 0.7, N)}
    tree = ld.forecast(_posterior(post), m, steps=4, seed=5, lagged={"r_previous": "r"})
    f = tree.predictions["r"]
    assert f.dims == ("chain", "draw", "step")
    f = f.values.reshape(N, 4)
    s = np.full(N, np.var(r))
    for t in range(len(r)):  # the recursion over the data, per draw
        s = post["omega"] + post["a1"] * (r[t - 1] if t else 0.0) ** 2 + post["b1"] * s
    s = post["omega"] + post["a1"] * r[-1] ** 2 + post["b1"] * s  # sigma2_{T+1}
    # step 1 is Normal(0, sqrt(sigma2_{T+1})) at each draw: the stream's first N standard normals, scaled
    z = ld.Normal(0.0, 1.0).draw(random.seeded_state(5, "test"), (N,))
    np.testing.assert_allclose(f[:, 0], np.sqrt(s) * z, rtol=1e-12)
    p = post["a1"] + post["b1"]
    for j in range(4):
        assert abs(f[:, j].mean()) < 5 * f[:, j].std() / np.sqrt(N)
        assert abs(np.mean(f[:, j] ** 2) - s.mean()) < 5 * np.std(f[:, j] ** 2) / np.sqrt(N)
        s = post["omega"] + p * s


def test_a_scan_forecast_needs_its_lagged_inputs():
    r = SERIES[1:] - SERIES[:-1]
    m = garch(r)
    post = _posterior({"omega": np.full(8, 0.1), "a1": np.full(8, 0.1), "b1": np.full(8, 0.5)})
    with pytest.raises(ModelError, match=r"term 'r': its scan reads r_previous, whose values after the data are "
                                         r"unknown; .* say so: lagged=\{'r_previous': 'r'\}"):
        ld.forecast(post, m, steps=2)
    with pytest.raises(ModelError, match=r"lagged says 'r_previous' is 'r' one step back, but r_previous\[1:\] "
                                         r"differs from r\[:-1\]"):
        ld.forecast(post, garch(r, previous=r), steps=2, lagged={"r_previous": "r"})
    with pytest.raises(ValueError, match=r"lagged names 'r_prev', which is no data of the model; its data are "
                                         r"\['r', 'r_previous'\]"):
        ld.forecast(post, m, steps=2, lagged={"r_prev": "r"})
