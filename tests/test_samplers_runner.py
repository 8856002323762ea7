"""Chains on threads: reproducible by seed whatever the cores; Ctrl-C keeps draws."""

import _thread
import threading

import numpy as np
import pytest

import samplers
from samplers.runner import resolve_cores
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


def test_chains_differ_and_match_a_single_chain_run():
    many = run(cores=2)
    one = run(chains=1, cores=1)
    np.testing.assert_array_equal(many.posterior["z"].values[0], one.posterior["z"].values[0])
    assert not np.array_equal(many.posterior["z"].values[0], many.posterior["z"].values[1])


def test_resolve_cores():
    assert resolve_cores(None, 1) == 1
    assert resolve_cores(8, 4) == 4
    assert resolve_cores(0, 4) == 1


def test_keyboard_interrupt_returns_draws_so_far():
    timer = threading.Timer(1.0, _thread.interrupt_main)
    timer.start()
    try:
        idata = samplers.nuts(NumbaTarget(std_normal, 2000), draws=100000, tune=100,
                              chains=2, seed=0, progress=False, max_treedepth=6)
    finally:
        timer.cancel()
    assert idata.posterior.attrs["interrupted"] == 1
    n = idata.posterior.sizes["draw"]
    assert 0 < n < 100000
    assert np.isfinite(idata.posterior["theta"].values).all()


def test_progress_bar_runs(capsys):
    samplers.nuts(NumbaTarget(std_normal, 3), draws=50, tune=50, chains=2, progress=True)
    assert "draws" in capsys.readouterr().err
