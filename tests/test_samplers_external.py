"""External (pure Python) log densities run through the same compiled NUTS."""

import numpy as np
import pytest

from logdens import samplers
from logdens.samplers.external import _REGISTRY, external_entry
from test_samplers_sample import Z_MAX, z_scores
from test_samplers_targets import PythonGaussian


def test_callback_entry_evaluates_python_and_cleans_up():
    target = PythonGaussian([1.0, 2.0], np.eye(2))
    with external_entry(target) as entry:
        grad = np.zeros(2)
        value = entry.function(np.array([0.0, 0.0]), grad, entry.fdata, entry.idata)
        assert value == pytest.approx(-2.5)
        np.testing.assert_allclose(grad, [1.0, 2.0])
        assert int(entry.idata[0]) in _REGISTRY
    assert int(entry.idata[0]) not in _REGISTRY


def test_external_log_density_samples_correctly():
    mean, cov = np.array([1.0, -1.0]), np.array([[1.0, 0.6], [0.6, 2.0]])
    target = PythonGaussian(mean, cov)
    idata = samplers.nuts(target, draws=500, tune=500, seed=7, progress=False, cores=2)
    theta = idata.posterior["theta"].values
    assert np.max(np.abs(z_scores(theta, mean))) < Z_MAX
    assert np.max(np.abs(z_scores((theta - mean) ** 2, np.diag(cov)))) < Z_MAX
    assert target.calls >= idata.sample_stats["n_steps"].values.sum()


def test_external_nan_is_rejected_not_propagated():
    class HalfLine:
        dim = 1

        def log_density_gradient(self, theta):
            if theta[0] < 0:
                return np.nan, np.array([np.nan])
            return -0.5 * theta[0] ** 2, -theta.copy()

    idata = samplers.nuts(HalfLine(), draws=200, tune=200, chains=2, seed=0,
                          progress=False, init=[0.5])
    assert (idata.posterior["theta"].values >= 0).all()


class FailsAtCall(PythonGaussian):
    """Standard normal that raises on its ``fail_at``-th gradient call."""

    def __init__(self, fail_at, dim=2):
        super().__init__(np.zeros(dim), np.eye(dim))
        self.fail_at = fail_at

    def log_density_gradient(self, theta):
        if self.calls + 1 == self.fail_at:
            self.calls += 1
            raise RuntimeError(f"density failed at call {self.calls}")
        return super().log_density_gradient(theta)


@pytest.mark.parametrize("fail_at", [7, 3000])
def test_an_error_in_the_density_stops_nuts_with_the_draws_so_far(fail_at, capfd):
    """Issue 36 item 4: the error reached numba's compiled loop through a
    pointer, where it cannot propagate, and the chains went on with
    undefined values.  The run stops, the error reaches the caller with the
    draws made before it, and the density is not called again."""
    target = FailsAtCall(fail_at)
    with pytest.raises(RuntimeError, match=f"density failed at call {fail_at}") as info:
        samplers.nuts(target, draws=2000, tune=100, chains=2, seed=0, progress=False)
    assert target.calls <= fail_at + 1  # the other chain's call may have been under way
    assert "Exception ignored" not in capfd.readouterr().err
    idata = info.value.idata
    theta = np.concatenate([idata[g]["theta"].values for g in ("warmup_posterior", "posterior")
                            if g in idata.children], axis=1)
    assert np.isfinite(theta).all()
    assert theta.shape[1] == 0 if fail_at == 7 else theta.shape[1] > 0  # 7: in the first step
    assert idata.posterior.attrs["interrupted"] == 1


@pytest.mark.parametrize("run, fail_at", [
    (lambda t: samplers.find_map(t), 3),
    (lambda t: samplers.laplace(t), 7),  # in the Hessian
    (lambda t: samplers.pathfinder(t, num_paths=1, draws=20), 30),
    (lambda t: samplers.advi(t, progress=False), 30),
    (lambda t: samplers.chees(t, chains=4, draws=50, tune=50, progress=False), 30),
], ids=["find_map", "laplace", "pathfinder", "advi", "chees"])
def test_an_error_in_the_density_reaches_the_caller_of_every_runner(run, fail_at, capfd):
    target = FailsAtCall(fail_at)
    with pytest.raises(RuntimeError, match=f"density failed at call {fail_at}"):
        run(target)
    assert target.calls == fail_at
    assert "Exception ignored" not in capfd.readouterr().err
