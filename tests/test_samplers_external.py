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
