"""Resolving what users pass in: log densities, models, external objects."""

import numpy as np
import pytest

from logdens import samplers
from logdens.samplers.protocol import LogDensity, numba_entry, resolve
from test_samplers_targets import NumbaTarget, PythonGaussian, std_normal


class FakeModel:
    """Duck-typed model: has compile() and no dim."""

    def __init__(self):
        self.compiled = 0

    def compile(self):
        self.compiled += 1
        return NumbaTarget(std_normal, 2)


def test_model_is_compiled_and_log_density_used_as_is():
    model = FakeModel()
    assert resolve(model).dim == 2 and model.compiled == 1
    target = NumbaTarget(std_normal, 3)
    assert resolve(target) is target
    assert isinstance(target, LogDensity)
    idata = samplers.nuts(FakeModel(), draws=20, tune=20, chains=1, progress=False)
    assert idata.posterior["theta"].shape == (1, 20, 2)


def test_not_a_log_density_raises():
    with pytest.raises(TypeError, match="not a log density"):
        resolve(object())


def test_numba_entry_is_normalized_and_absent_for_external():
    entry = numba_entry(NumbaTarget(std_normal, 2, fdata=[1, 2], idata=[3]))
    assert entry.fdata.dtype == np.float64 and entry.idata.dtype == np.int64
    assert numba_entry(PythonGaussian([0.0], np.eye(1))) is None


def test_bad_arguments_raise():
    target = NumbaTarget(std_normal, 2)
    with pytest.raises(ValueError, match="metric"):
        samplers.nuts(target, metric="full", progress=False)
    with pytest.raises(ValueError, match="target_accept"):
        samplers.nuts(target, target_accept=1.5, progress=False)
    with pytest.raises(ValueError, match="num_steps"):
        samplers.hmc(target, num_steps=0, progress=False)


@pytest.mark.parametrize("kw", [{"draws": -1}, {"tune": 1.5}, {"chains": 0},
                                {"max_treedepth": 0}])
def test_bad_counts_raise(kw):
    with pytest.raises(ValueError, match=list(kw)[0]):
        samplers.nuts(NumbaTarget(std_normal, 2), progress=False, **kw)


def test_lazy_dispatcher_and_cfunc_entries_work():
    from numba import njit
    from test_samplers_targets import first_class

    @njit
    def lazy(theta, grad, fdata, idata):
        for i in range(theta.shape[0]):
            grad[i] = -theta[i]
        return -0.5 * (theta**2).sum()

    for function in (lazy, first_class(std_normal)):
        target = NumbaTarget(std_normal, 2)
        target.numba_entry = target.numba_entry._replace(function=function)
        idata = samplers.nuts(target, draws=20, tune=20, chains=1, progress=False)
        assert np.isfinite(idata.posterior["theta"].values).all()
