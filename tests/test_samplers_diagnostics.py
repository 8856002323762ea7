"""Diagnostic warnings with numbers."""

import arviz_stats
import pytest
import numpy as np
from arviz_base import from_dict

from logdens.samplers.diagnostics import bulk_ess, e_bfmi, rank_rhat, sampler_warnings


def fake_idata(diverging=0, at_max=0, energy=None, shift=0.0, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(4, 500))
    x[0] += shift
    depth = np.full((4, 500), 3)
    depth.ravel()[:at_max] = 10
    div = np.zeros((4, 500), dtype=bool)
    div.ravel()[:diverging] = True
    energy = rng.normal(size=(4, 500)) if energy is None else energy
    return from_dict({"posterior": {"x": x},
                      "sample_stats": {"diverging": div, "tree_depth": depth, "energy": energy}})


def test_clean_run_has_no_messages():
    assert sampler_warnings(fake_idata(), 10) == []


def test_each_problem_is_reported_with_numbers():
    msgs = sampler_warnings(fake_idata(diverging=7, at_max=20), 10)
    assert any("7 of 2000" in m and "divergent" in m for m in msgs)
    assert any("20 of 2000" in m and "tree depth 10" in m for m in msgs)
    walk = np.cumsum(np.random.default_rng(1).normal(size=(4, 500)), axis=1)
    assert any("E-BFMI" in m for m in sampler_warnings(fake_idata(energy=walk), 10))
    msgs = sampler_warnings(fake_idata(shift=1.0), 10)
    assert any("R-hat" in m for m in msgs)


def test_low_ess_is_reported():
    x = np.cumsum(np.random.default_rng(2).normal(size=(4, 500)), axis=1) * 0.01
    idata = from_dict({"posterior": {"x": x},
                       "sample_stats": {"diverging": np.zeros((4, 500), bool),
                                        "tree_depth": np.ones((4, 500)),
                                        "energy": np.random.default_rng(3).normal(size=(4, 500))}})
    assert any("bulk ESS" in m for m in sampler_warnings(idata, 10))


def test_e_bfmi_matches_arviz():
    energy = np.random.default_rng(4).normal(size=(3, 400)).cumsum(axis=1) * 0.1
    idata = from_dict({"sample_stats": {"energy": energy}})
    np.testing.assert_allclose(e_bfmi(energy), arviz_stats.bfmi(idata)["energy"].values,
                               rtol=1e-10)


def test_rhat_and_bulk_ess_match_arviz():
    rng = np.random.default_rng(5)
    for rho, shift in ((0.0, 0.0), (0.9, 0.0), (0.5, 0.3)):
        x = np.zeros((4, 501))
        e = rng.normal(size=(4, 501))
        for t in range(1, 501):  # AR(1) chains
            x[:, t] = rho * x[:, t - 1] + e[:, t]
        x[0] += shift
        assert rank_rhat(x) == pytest.approx(float(arviz_stats.rhat(x)), rel=1e-6)
        assert bulk_ess(x) == pytest.approx(float(arviz_stats.ess(x, method="bulk")), rel=1e-6)


def test_rhat_and_ess_vectorized_over_columns_and_ties():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(4, 300, 3))
    x[:, :, 1] = np.round(x[:, :, 1])  # ties
    x[:, :, 2] = 1.5                   # constant
    r, e = rank_rhat(x), bulk_ess(x)
    for k in range(2):
        assert r[k] == pytest.approx(float(arviz_stats.rhat(x[:, :, k])), rel=1e-6)
        assert e[k] == pytest.approx(float(arviz_stats.ess(x[:, :, k], method="bulk")), rel=1e-6)
    assert e[2] == 1200.0


def test_ranks_in_threads_equal_one_thread(monkeypatch):
    """Many draws are ranked in groups of columns by threads: the same normal
    scores as in one thread, ties (a stuck chain, rounded draws) included."""
    from logdens.samplers import diagnostics
    x = np.random.default_rng(3).normal(size=(64, 200, 90))
    x[3, :, 5] = 1.0
    x[:, :, 7] = np.round(x[:, :, 7])
    assert x.size >= diagnostics.THREADED_RANKS
    threaded = diagnostics._rank_normalize(x)
    r, e = rank_rhat(x), bulk_ess(x)
    for k in (0, 7):
        assert r[k] == pytest.approx(float(arviz_stats.rhat(x[:, :, k])), rel=1e-6)
        assert e[k] == pytest.approx(float(arviz_stats.ess(x[:, :, k], method="bulk")), rel=1e-6)
    monkeypatch.setattr(diagnostics, "THREADED_RANKS", 10 ** 12)
    np.testing.assert_array_equal(threaded, diagnostics._rank_normalize(x))
