"""ChEES-HMC (samplers.chees, samplers.chees_adaptation) on known targets.

Tolerances are in Monte Carlo standard errors: ``|mean - truth| < 5 sd /
sqrt(ess)`` per coordinate with ArviZ-style bulk ESS, and variances within
``5 * sqrt(2 / ess)`` relative error (the standard error of a variance of
roughly normal draws).
"""

import math
import warnings

import numpy as np
import pytest
import scipy.linalg

from logdens.samplers.chees import (MAX_ENERGY_ERROR, chees, chees_step, ensemble_init,
                                    make_proposal)
from logdens.samplers.chees_adaptation import (chees_gradient, halton, harmonic_mean_accept,
                                              trajectory_init, trajectory_update)
from logdens.samplers.diagnostics import SamplerWarning, bulk_ess
from logdens.samplers.metric import Metric, diagonal_metric
from test_samplers_targets import (EightSchools, NumbaTarget, PythonGaussian,
                                   correlated_gaussian, gaussian)

SCALES = np.geomspace(0.1, 10.0, 10)
#: First root of tan(x) = x: the Halton-jittered ChEES criterion of a
#: standard Gaussian, E_h[sin^2(h T)] with h ~ U(0, 1), is maximal where
#: tan(2T) = 2T (derivation in test_gaussian_chees_optimum_closed_form).
CHEES_OPTIMUM = 4.493409457909064 / 2.0


def _sample(target, **kw):
    kw.setdefault("progress", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        return chees(target, **kw)


def _draws(idata, name="theta"):
    x = idata.posterior[name].values
    return x.reshape(x.shape[0], x.shape[1], -1)


def _check_moments(x, mean, var, z=5.0):
    ess = bulk_ess(x)
    flat = x.reshape(-1, x.shape[2])
    sd = np.sqrt(var)
    assert np.all(np.abs(flat.mean(axis=0) - mean) < z * sd / np.sqrt(ess))
    assert np.all(np.abs(flat.var(axis=0) / var - 1.0) < z * np.sqrt(2.0 / ess))


def _scaled_gaussian():
    prec = np.diag(1.0 / SCALES**2)
    return NumbaTarget(gaussian, SCALES.size, np.concatenate([np.zeros(SCALES.size),
                                                              prec.ravel()]))


def expected_chees(length, eps):
    """E_h[sin^2(w eps ceil(h T / eps))]: the ChEES criterion per coordinate of
    a standard Gaussian under leapfrog (angular frequency w per unit time,
    cos(w eps) = 1 - eps^2 / 2) with h uniform on (0, 1)."""
    h = (np.arange(1, 4097) - 0.5) / 4096
    w = np.arccos(1.0 - eps**2 / 2.0) / eps
    return np.mean(np.sin(w * eps * np.ceil(h * length / eps)) ** 2)


def test_gaussian_chees_optimum_closed_form():
    # Exact dynamics on N(0, 1): q(t) = q cos t + p sin t, and
    # ChEES(t) = 1/4 E[(q(t)^2 - q^2)^2] = sin(t)^2 per coordinate; averaged
    # over t = h T, h ~ U(0, 1): 1/2 - sin(2T) / (4T), maximal at tan(2T) = 2T.
    ts = np.linspace(0.5, 4.0, 35001)
    values = 0.5 - np.sin(2 * ts) / (4 * ts)
    assert ts[np.argmax(values)] == pytest.approx(CHEES_OPTIMUM, abs=1e-3)
    assert expected_chees(CHEES_OPTIMUM, 1e-3) == pytest.approx(values.max(), abs=1e-3)


def test_chees_gradient_sign_on_exact_dynamics():
    # The estimator of d ChEES / d log T at fixed time t is t * d * sin(2t) in
    # expectation: positive below pi / 2, negative above.
    rng = np.random.default_rng(0)
    k, d = 64, 10
    for t, sign in ((0.8, 1.0), (2.3, -1.0)):
        q0, p = rng.normal(size=(k, d)), rng.normal(size=(k, d))
        qn, vn = q0 * math.cos(t) + p * math.sin(t), -q0 * math.sin(t) + p * math.cos(t)
        g = chees_gradient(q0, qn, vn, np.ones(k), np.zeros(k, bool),
                           diagonal_metric(np.ones(d), False), t, np.zeros(d), np.zeros(d))
        assert np.sign(g) == sign


def test_halton_and_harmonic_mean():
    assert [halton(n) for n in range(1, 8)] == [0.5, 0.25, 0.75, 0.125, 0.625, 0.375, 0.875]
    accept, div = np.array([0.5, 1.0, 0.0]), np.array([False, False, True])
    assert harmonic_mean_accept(accept, div) == pytest.approx(2.0 / 3.0)
    assert harmonic_mean_accept(accept, np.ones(3, bool)) == 0.0


def test_trajectory_update_climbs_then_follows_adam():
    state = trajectory_init(1.0)
    state = trajectory_update(state, 5.0, 0.025, 10.0)
    assert state.log_length == pytest.approx(0.35) and state.climbing == 1.0
    state = trajectory_update(state, -5.0, 0.025, 10.0)
    assert state.climbing == 0.0 and state.log_length < 0.35
    assert trajectory_update(state, 1e6, 0.025, 0.1).log_length == 0.1  # the cap


def test_adaptation_on_gaussian_with_scales_0_1_to_10():
    idata = _sample(_scaled_gaussian(), chains=64, tune=500, draws=300, seed=1)
    _check_moments(_draws(idata), np.zeros(SCALES.size), SCALES**2)
    attrs = idata.posterior.attrs
    eps, length = attrs["step_size"], attrs["trajectory_length"]
    # With the adapted metric every coordinate is a standard Gaussian: the
    # criterion at the adapted T is near its maximum for the adapted step size.
    best = max(expected_chees(t, eps) for t in np.linspace(0.2, 6.0, 581))
    assert expected_chees(length, eps) > 0.93 * best
    assert 0.5 * CHEES_OPTIMUM < length < 1.5 * CHEES_OPTIMUM
    # Step size: harmonic-mean acceptance near its target.
    accept = idata.sample_stats["acceptance_rate"].values
    harmonic = accept.shape[0] / np.sum(1.0 / accept, axis=0)
    assert 0.5 < np.median(harmonic) < 0.85
    assert 0.3 < eps < 1.5


def test_correlated_gaussian_moments():
    target, mean, cov = correlated_gaussian()
    idata = _sample(target, chains=32, tune=400, draws=400, seed=3)
    _check_moments(_draws(idata), mean, np.diag(cov))
    flat = _draws(idata).reshape(-1, 2)
    assert np.corrcoef(flat.T)[0, 1] == pytest.approx(0.9, abs=0.02)


def test_eight_schools_groups_and_moments_against_nuts():
    from logdens.samplers import nuts
    target = EightSchools()
    idata = _sample(target, chains=64, tune=600, draws=400, seed=2)
    for group in ("posterior", "sample_stats", "log_likelihood", "observed_data"):
        assert group in idata.children
    for name in ("lp", "acceptance_rate", "step_size", "n_steps", "diverging", "energy"):
        assert idata.sample_stats[name].shape == (64, 400)
    assert idata.log_likelihood["y"].shape == (64, 400, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        ref = nuts(target, chains=4, draws=1000, tune=1000, seed=0, progress=False)
    for name in ("mu", "tau"):
        a, b = _draws(idata, name), _draws(ref, name)
        se = math.hypot(a.std() / math.sqrt(bulk_ess(a)[0]), b.std() / math.sqrt(bulk_ess(b)[0]))
        assert abs(a.mean() - b.mean()) < 4 * se


def test_same_seed_same_draws_and_uniform_jitter():
    target, _, _ = correlated_gaussian()
    a = _sample(target, chains=8, tune=60, draws=30, seed=5, jitter="uniform")
    b = _sample(target, chains=8, tune=60, draws=30, seed=5, jitter="uniform")
    c = _sample(target, chains=8, tune=60, draws=30, seed=6, jitter="uniform")
    np.testing.assert_array_equal(_draws(a), _draws(b))
    assert not np.array_equal(_draws(a), _draws(c))


class BatchOnly:
    """A log density with only the batch method (no numba entry), computed
    through a numba target's entry: the same gradients as the compiled path."""

    def __init__(self, target):
        self.dim, self._target, self.calls = target.dim, target, 0

    def log_density_gradient(self, theta):
        return self._target.log_density_gradient(np.array(theta, dtype=float))

    def log_density_gradient_batch(self, thetas):
        self.calls += 1
        out = [self._target.log_density_gradient(t.copy()) for t in thetas]
        return np.array([v for v, _ in out]), np.array([g for _, g in out])


def test_batch_path_gives_the_compiled_paths_draws():
    target, _, _ = correlated_gaussian()
    batch = BatchOnly(target)
    a = _sample(target, chains=6, tune=40, draws=20, seed=4)
    b = _sample(batch, chains=6, tune=40, draws=20, seed=4)
    assert b.posterior.attrs["gradient"] == "batch" and batch.calls > 60
    np.testing.assert_array_equal(_draws(a), _draws(b))
    np.testing.assert_array_equal(a.sample_stats["n_steps"].values,
                                  b.sample_stats["n_steps"].values)


def test_external_python_density():
    mean, cov = np.array([1.0, -2.0]), np.array([[1.0, 0.3], [0.3, 2.0]])
    target = PythonGaussian(mean, cov)  # no batch method: one Python call per chain and step
    idata = _sample(target, chains=16, tune=200, draws=200, seed=0)
    _check_moments(_draws(idata), mean, np.diag(cov))


def test_tier_two_step_keeps_a_gaussian():
    target = NumbaTarget(gaussian, 2, np.concatenate([[0.0, 0.0], np.eye(2).ravel()]))
    ens = ensemble_init(target.numba_entry, 2, 200, seed=0)
    prop = make_proposal(200, 2)
    for _ in range(30):
        chees_step(target.numba_entry, ens, prop, np.ones(2), 0.5, 3)
    assert np.abs(ens.q.mean(axis=0)).max() < 0.35
    assert np.all(np.abs(ens.q.var(axis=0) - 1.0) < 0.4)


def test_bad_arguments():
    target, _, _ = correlated_gaussian()
    for kw in ({"chains": 1}, {"jitter": "sobol"}, {"target_accept": 1.5}, {"tune": 0},
               {"gradient": "batch"}, {"step_size": -1.0}):
        with pytest.raises(ValueError):
            chees(target, progress=False, **kw)
    assert MAX_ENERGY_ERROR == 1000.0


def test_chees_gradient_with_a_low_rank_metric_is_the_whitened_one():
    # In the coordinates z = M^{1/2} q the criterion is the identity metric's.
    rng = np.random.default_rng(0)
    k, d = 16, 6
    inv_diag = rng.uniform(0.5, 2.0, d)
    u, _ = np.linalg.qr(rng.normal(size=(d, 2)))
    vecs, vals = np.ascontiguousarray((u * np.sqrt(inv_diag)[:, None]).T), np.array([30.0, 0.2])
    metric = Metric(inv_diag, np.eye(1), np.eye(1), False, vecs, vals)
    root = scipy.linalg.sqrtm(np.linalg.inv(np.diag(inv_diag) + vecs.T @ np.diag(vals - 1) @ vecs))
    q0, qn, vn = rng.normal(size=(3, k, d))
    accept, div = rng.uniform(0.2, 1.0, k), np.zeros(k, bool)
    g = chees_gradient(q0, qn, vn, accept, div, metric, 0.7, np.zeros(d), np.zeros(d))
    z0, zn, zv = (np.ascontiguousarray(a @ root.real) for a in (q0, qn, vn))
    unit = diagonal_metric(np.ones(d), False)
    assert g == pytest.approx(chees_gradient(z0, zn, zv, accept, div, unit, 0.7, np.zeros(d),
                                             np.zeros(d)), rel=1e-10)
