"""The chunked transition loop: chunking invariance and warmup adaptation."""

import math

import numpy as np
import pytest

from logdens.samplers import kernel, runner
from logdens.samplers.mass_matrix import warmup_schedule
from logdens.samplers.protocol import numba_entry
from logdens.samplers.sample import _chain_state, _config
from test_samplers_targets import NumbaTarget, correlated_gaussian, gaussian


def diagonal_gaussian(scales):
    scales = np.asarray(scales, float)
    fdata = np.concatenate([np.zeros(scales.size), np.diag(1 / scales**2).ravel()])
    return NumbaTarget(gaussian, scales.size, fdata)


def run(target, tune, draws, metric="diag", chunk=None, seed=0, monkeypatch=None):
    entry = numba_entry(target)
    low_rank = metric == "low_rank"
    state = _chain_state(entry, target.dim, metric == "dense", seed, 0, None,
                         low_rank_rows=tune + 1 if low_rank else 0)
    iconf, fconf = _config(kernel.NUTS, 10, 0, tune, metric, 0.8,
                           "nutpie" if low_rank else "stan")
    if chunk is not None:
        monkeypatch.setattr(runner, "MAX_CHUNK", chunk)
        monkeypatch.setattr(runner, "CHUNK_SECONDS", 1e9)
    res = runner.run_chains(entry, [state], warmup_schedule(tune), iconf, fconf,
                            tune + draws, tune, 1, False)
    return res, state


@pytest.mark.parametrize("chunk", [1, 7])
def test_chunking_does_not_change_results(chunk, monkeypatch):
    target = diagonal_gaussian([0.5, 2.0, 1.0])
    ref, _ = run(target, 150, 50)
    res, _ = run(target, 150, 50, chunk=chunk, monkeypatch=monkeypatch)
    np.testing.assert_array_equal(ref.draws, res.draws)
    np.testing.assert_array_equal(ref.stats, res.stats)


@pytest.mark.parametrize("chunk", [1, 7])
def test_chunking_does_not_change_low_rank_results(chunk, monkeypatch):
    # The loop returns for each low-rank estimate (advance() computes it):
    # where the chunks end must not matter.
    target, _, _ = correlated_gaussian(rho=0.95, scales=(1.0, 5.0))
    ref, ref_state = run(target, 150, 30, metric="low_rank")
    res, state = run(target, 150, 30, metric="low_rank", chunk=chunk, monkeypatch=monkeypatch)
    np.testing.assert_array_equal(ref.draws, res.draws)
    np.testing.assert_array_equal(ref.stats, res.stats)
    np.testing.assert_array_equal(ref_state.metric.lr_vecs, state.metric.lr_vecs)
    assert state.lr_counts[2] == 0 and state.lr_counts[4] > 0  # none pending; rank > 0


def test_diag_warmup_learns_the_variances_and_fixes_the_step_size():
    scales = np.array([0.1, 1.0, 10.0])
    res, state = run(diagonal_gaussian(scales), 1000, 200)
    np.testing.assert_allclose(state.metric.inv_diag, scales**2, rtol=0.3)
    step = res.stats[0, :, kernel.STAT_NAMES.index("step_size")]
    assert np.all(step[1000:] == step[1000])  # fixed after warmup
    assert step[1000] == pytest.approx(state.scalars[kernel.STEP])


def test_dense_warmup_learns_the_covariance():
    target, _, cov = correlated_gaussian(rho=0.9, scales=(1.0, 5.0))
    _, state = run(target, 1000, 10, metric="dense")
    np.testing.assert_allclose(state.metric.inv_dense, cov, rtol=0.3, atol=0.3)
    factor = state.metric.momentum_factor  # L^{-T}: factor factor' = M, Cov(p) = M
    np.testing.assert_allclose(factor @ factor.T @ state.metric.inv_dense, np.eye(2),
                               atol=1e-10)


def test_short_warmup_without_metric_windows():
    res, state = run(diagonal_gaussian([3.0, 3.0]), 10, 20)
    np.testing.assert_array_equal(state.metric.inv_diag, [1.0, 1.0])
    assert np.isfinite(res.draws).all()


def _warmup_only(target, tune, n_total):
    entry = numba_entry(target)
    state = _chain_state(entry, target.dim, False, 0, 0, None)
    iconf, fconf = _config(kernel.NUTS, 10, 0, tune, "diag", 0.8)
    res = runner.run_chains(entry, [state], warmup_schedule(tune), iconf, fconf,
                            n_total, tune, 1, False)
    return res, state


def test_first_window_shrinks_toward_ten_times_the_initial_step_size():
    # Stan's services set mu = log(10 * stepsize) before init_stepsize runs;
    # the restarts after each metric window use the heuristic's step size.
    target = diagonal_gaussian([0.01, 0.02])  # the heuristic moves far from 1
    res, state = _warmup_only(target, 1000, 1)
    sc = state.scalars
    assert res.stats[0, 0, kernel.STAT_NAMES.index("step_size")] < 0.1  # the heuristic's
    assert sc[kernel.DA_MU] == pytest.approx(math.log(10.0))
    assert sc[kernel.DA_COUNTER] == 1.0
    _, state = _warmup_only(target, 1000, 100)  # the first window ends at 99
    sc = state.scalars
    assert sc[kernel.DA_COUNTER] == 0.0
    assert sc[kernel.DA_MU] == pytest.approx(math.log(10.0 * sc[kernel.STEP]))


def test_metric_is_the_regularized_variance_of_the_first_window():
    target = diagonal_gaussian([0.5, 2.0, 1.0])
    _, state = _warmup_only(target, 1000, 99)
    np.testing.assert_array_equal(state.metric.inv_diag, np.ones(3))  # not yet
    res, state = _warmup_only(target, 1000, 100)
    window = res.draws[0, 75:100]  # Stan's first slow window: 25 draws
    expected = (25 / 30) * window.var(axis=0, ddof=1) + 1e-3 * 5 / 30
    np.testing.assert_allclose(state.metric.inv_diag, expected, rtol=1e-10)


@pytest.mark.parametrize("kind, dense", [(kernel.NUTS, True), (kernel.HMC, False),
                                         (kernel.HMC, True)])
def test_every_variant_runs(kind, dense):
    target = diagonal_gaussian([0.5, 2.0])
    entry = numba_entry(target)
    metric = "dense" if dense else "diag"
    state = _chain_state(entry, 2, dense, 0, 0, None)
    iconf, fconf = _config(kind, 10, 8, 150, metric, 0.8)
    res = runner.run_chains(entry, [state], warmup_schedule(150), iconf, fconf,
                            200, 150, 1, False)
    assert np.isfinite(res.draws).all()
    assert kernel.chunk_runner(kind, dense) is kernel.chunk_runner(kind, dense)
