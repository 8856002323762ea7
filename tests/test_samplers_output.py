"""The DataTree output works with arviz_stats directly."""

import warnings

import arviz_stats
import numpy as np
import pytest

from logdens import samplers
from logdens.samplers.kernel import STAT_NAMES
from test_samplers_targets import EightSchools, NumbaTarget, std_normal


@pytest.fixture(scope="module")
def idata():
    return samplers.nuts(EightSchools(), draws=300, tune=300, seed=8, progress=False,
                         save_warmup=True)


def test_groups_and_shapes(idata):
    assert {"posterior", "sample_stats", "log_likelihood", "observed_data",
            "warmup_posterior", "warmup_sample_stats"} <= set(idata.children)
    assert idata.posterior["theta"].shape == (4, 300, 8)
    assert idata.warmup_posterior["mu"].shape == (4, 300)
    assert idata.log_likelihood["y"].shape == (4, 300, 8)
    ss = idata.sample_stats
    assert set(STAT_NAMES) | {"reached_max_treedepth"} == set(ss.data_vars)
    assert ss["diverging"].dtype == bool and ss["tree_depth"].dtype == np.int64
    assert (ss["n_steps"] <= 2 ** (ss["tree_depth"] + 1) - 1).all()
    # Deterministic equals its definition.
    post = idata.posterior
    np.testing.assert_allclose(post["theta"], post["mu"] + post["tau"] * post["z"])


def test_arviz_stats_functions_work_directly(idata):
    summary = arviz_stats.summary(idata)
    assert "mu" in summary.index and np.isfinite(summary["r_hat"]).all()
    assert float(arviz_stats.rhat(idata)["mu"]) < 1.05
    assert float(arviz_stats.ess(idata)["mu"]) > 100
    loo = arviz_stats.loo(idata)
    assert np.isfinite(loo.elpd) and -40 < loo.elpd < -25
    bfmi = arviz_stats.bfmi(idata)
    assert (bfmi["energy"].values > 0.3).all()


def test_unconstrained_output_uses_names():
    class Named(NumbaTarget):
        def param_unc_names(self):
            return ["a", "b"]

    idata = samplers.nuts(Named(std_normal, 2), draws=50, tune=50, chains=1,
                          progress=False)
    assert list(idata.posterior["theta"].coords["theta_dim_0"].values) == ["a", "b"]


def test_no_warmup_groups_by_default_and_settings_in_attrs():
    idata = samplers.nuts(NumbaTarget(std_normal, 2), draws=30, tune=30, chains=2,
                          progress=False, seed=3)
    assert not any(name.startswith("warmup") for name in idata.children)
    attrs = idata.posterior.attrs
    assert (attrs["sampler"], attrs["seed"], attrs["tune"], attrs["interrupted"]) == (
        "nuts", 3, 30, 0)
    assert "log_likelihood" not in idata.children  # the protocol gave none


def test_batch_methods_give_the_same_output():
    class Batched(EightSchools):
        def constrain_batch(self, thetas):
            mu, tau, z = thetas[:, 0], np.exp(thetas[:, 1]), thetas[:, 2:]
            return {"mu": mu, "tau": tau, "z": z.copy(), "theta": mu[:, None] + tau[:, None] * z}

        def pointwise_log_likelihood_batch(self, thetas):
            return {"y": np.array([self.pointwise_log_likelihood(t)["y"] for t in thetas])}

    a = samplers.nuts(EightSchools(), draws=50, tune=50, progress=False, seed=2)
    b = samplers.nuts(Batched(), draws=50, tune=50, progress=False, seed=2)
    for group in ("posterior", "log_likelihood"):
        for name in a[group].data_vars:
            np.testing.assert_allclose(a[group][name].values, b[group][name].values,
                                       rtol=1e-14)


def test_log_likelihood_can_be_left_out():
    class Counting(EightSchools):
        calls = 0

        def pointwise_log_likelihood(self, theta):
            Counting.calls += 1
            return super().pointwise_log_likelihood(theta)

    idata = samplers.nuts(Counting(), draws=20, tune=20, chains=2, progress=False, seed=3,
                          log_likelihood=False)
    assert "log_likelihood" not in idata.children and "posterior" in idata.children
    assert Counting.calls == 0


def test_observed_data_of_an_observed_slice_is_its_current_value():
    """Issue 36 item 13: the README's AR(1), observed ``y[1:]`` of ``m.data("y")``,
    lost observed_data ("the output lacks observed_data (KeyError: 1396...)")."""
    import logdens as ld
    m = ld.Model()
    y = m.data("y", np.array([0.3, -0.1, 0.4, 0.2, -0.5, 0.1]))
    a, b = m.param("a", ld.Normal(0.0, 1.0)), m.param("b", ld.Normal(0.0, 1.0))
    m.observe("ahead", ld.Normal(a + b * y[:-1], m.param("s", ld.HalfNormal(1.0))), y[1:])
    density = m.compile()
    density.set_data(y=np.arange(8.0))  # a longer series: the slice of the current data
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "the output lacks", samplers.SamplerWarning)
        warnings.filterwarnings("ignore", category=samplers.SamplerWarning)
        idata = samplers.nuts(density, draws=10, tune=10, chains=1, progress=False)
    np.testing.assert_array_equal(idata.observed_data["ahead"].values, np.arange(1.0, 8.0))
