"""External (pure Python) log densities run through the same compiled NUTS."""

import collections
import threading

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
    """Standard normal that raises on its ``fail_at``-th gradient call or, with
    ``chains``, on the call by which ``chains`` threads have each made
    ``fail_at`` calls.  Two chains share the total count in whatever order
    the scheduler runs their threads (on a loaded machine one chain can make
    thousands of calls before the other makes its first), while each chain's
    own count follows its own iterations."""

    def __init__(self, fail_at, chains=None, dim=2):
        super().__init__(np.zeros(dim), np.eye(dim))
        self.fail_at, self.chains = fail_at, chains
        self.by_thread = collections.Counter()
        self.failed_at = None
        self.lock = threading.Lock()

    def log_density_gradient(self, theta):
        with self.lock:  # the chains' threads call at once: count and test in one step
            self.by_thread[threading.get_ident()] += 1
            if self.failed_at is None and self._due():
                self.calls += 1
                self.failed_at = self.calls
                raise RuntimeError(f"density failed at call {self.calls}")
            return super().log_density_gradient(theta)

    def _due(self):
        if self.chains is None:
            return self.calls + 1 == self.fail_at
        return sum(n >= self.fail_at for n in self.by_thread.values()) == self.chains


@pytest.mark.parametrize("fail_at, chains", [(7, None), (500, 2)], ids=["first_step", "after_draws"])
def test_an_error_in_the_density_stops_nuts_with_the_draws_so_far(fail_at, chains, capfd):
    """Issue 36 item 4: the error reached numba's compiled loop through a
    pointer, where it cannot propagate, and the chains went on with
    undefined values.  The run stops, the error reaches the caller with the
    draws made before it, and the density is not called again.  The draws
    returned are those every chain made; the late failure waits for 500
    calls of each chain, not 3000 of both (a chain held up by a loaded
    machine made no draw by then and none were returned: issue 37)."""
    target = FailsAtCall(fail_at, chains)
    with pytest.raises(RuntimeError, match="density failed at call") as info:
        samplers.nuts(target, draws=2000, tune=100, chains=2, cores=2, seed=0, progress=False)
    assert str(info.value) == f"density failed at call {target.failed_at}"
    assert target.failed_at == fail_at or chains is not None
    assert target.calls <= target.failed_at + 1  # the other chain's call may have been under way
    assert "Exception ignored" not in capfd.readouterr().err
    idata = info.value.idata
    theta = np.concatenate([idata[g]["theta"].values for g in ("warmup_posterior", "posterior")
                            if g in idata.children], axis=1)
    assert np.isfinite(theta).all()
    assert theta.shape[1] == 0 if chains is None else theta.shape[1] > 0  # 7: in the first step
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
