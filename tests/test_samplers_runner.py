"""Chains on threads: reproducible by seed whatever the cores; Ctrl-C keeps draws."""

import numpy as np
import pytest

from logdens import samplers
from logdens.samplers import runner
from logdens.samplers.runner import resolve_cores
from test_samplers_targets import EightSchools, NumbaTarget, std_normal


def run(**kw):
    args = dict(draws=200, tune=200, chains=3, seed=11, progress=False)
    args.update(kw)
    return samplers.nuts(EightSchools(), **args)


def test_same_seed_same_draws_whatever_the_cores():
    a, b, c = run(cores=1), run(cores=3), run(cores=2)
    for other in (b, c):
        np.testing.assert_array_equal(a.posterior["z"].values, other.posterior["z"].values)
        np.testing.assert_array_equal(a.sample_stats["step_size"].values,
                                      other.sample_stats["step_size"].values)
    d = run(seed=12, cores=1)
    assert not np.array_equal(a.posterior["z"].values, d.posterior["z"].values)


def test_low_rank_same_seed_same_draws_whatever_the_cores():
    # Each chain's estimates run in numpy on its own thread.
    a, b = run(cores=1, metric="low_rank"), run(cores=3, metric="low_rank")
    np.testing.assert_array_equal(a.posterior["z"].values, b.posterior["z"].values)
    np.testing.assert_array_equal(a.sample_stats["step_size"].values,
                                  b.sample_stats["step_size"].values)


def test_chains_differ_and_match_a_single_chain_run():
    many = run(cores=2)
    one = run(chains=1, cores=1)
    np.testing.assert_array_equal(many.posterior["z"].values[0], one.posterior["z"].values[0])
    assert not np.array_equal(many.posterior["z"].values[0], many.posterior["z"].values[1])


def test_resolve_cores():
    assert resolve_cores(None, 1) == 1
    assert resolve_cores(8, 4) == 4
    assert resolve_cores(0, 4) == 1


def interrupt_after(monkeypatch, n_draws):
    """Raise KeyboardInterrupt in the waiting loop once every chain has ``n_draws``
    iterations: deterministic, whatever the time numba takes to compile."""
    update = runner._update_bar

    def update_then_interrupt(bar, done, stats, n_tune):
        update(bar, done, stats, n_tune)
        if done.min() >= n_draws:
            raise KeyboardInterrupt
    monkeypatch.setattr(runner, "_update_bar", update_then_interrupt)


def test_keyboard_interrupt_returns_draws_so_far(monkeypatch):
    interrupt_after(monkeypatch, 150)
    idata = samplers.nuts(NumbaTarget(std_normal, 300), draws=100000, tune=100,
                          chains=2, seed=0, progress=False, max_treedepth=6)
    assert idata.posterior.attrs["interrupted"] == 1
    n = idata.posterior.sizes["draw"]
    assert 0 < n < 100000
    assert np.isfinite(idata.posterior["theta"].values).all()


def test_progress_bar_runs(capsys):
    samplers.nuts(NumbaTarget(std_normal, 3), draws=50, tune=50, chains=2, progress=True)
    assert "draws" in capsys.readouterr().err


def test_interrupt_during_warmup_keeps_the_warmup_draws(monkeypatch):
    interrupt_after(monkeypatch, 5)
    with pytest.warns(samplers.SamplerWarning, match="interrupted"):
        idata = samplers.nuts(NumbaTarget(std_normal, 300), draws=10, tune=10**5,
                              chains=2, seed=0, progress=False)
    assert idata.posterior.sizes["draw"] == 0
    assert idata.warmup_posterior.sizes["draw"] > 0
