"""ChEES with its leapfrog steps on the device (``samplers.chees_device``)
against the batch loop on the same CUDA density: in numba's CUDA simulator
(a separate process), and on a real device when one is present (marker
``gpu``).

Tolerance 1e-10 (absolute, on values of order one): both paths do the same
arithmetic, but the gradients' block sums are added atomically in whatever
order the threads finish, so gradients differ in the last bits between any
two calls, and a device that fuses multiply-adds rounds the steps
differently from the CPU.
"""

import os
import sys

import numpy as np
import pytest

from logdens.samplers.chees import _gradient_source

sys.path.insert(0, os.path.dirname(__file__))
from simulator import run_simulated  # noqa: E402

HERE = os.path.dirname(__file__)
TOLERANCE = 1e-10


SCRIPT = os.path.join(HERE, "chees_device_checks.py")


def _agree(differences):
    """Whether one iteration's steps agree, the early stop included."""
    assert differences["stopped chain's steps"] == 1.0  # its energy limit stopped it at once, on both paths
    assert differences["steps taken"] == 4.0
    return all(differences[k] <= TOLERANCE for k in ("q", "p", "v", "grad", "lp", "h", "steps", "alive"))


def test_simulated_steps_agree_with_the_batch_loop():
    differences = run_simulated(SCRIPT, "trajectories")["trajectories"]
    assert _agree(differences), differences


def test_simulated_run_gives_the_batch_loops_draws():
    differences = run_simulated(SCRIPT, "runs")["runs"]
    assert all(v <= TOLERANCE for v in differences.values()), differences


def _real_device():
    from numba import config, cuda
    return not config.ENABLE_CUDASIM and cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _real_device(), reason="no CUDA device")
def test_device_steps_agree_with_the_batch_loop():
    sys.path.insert(0, HERE)
    import chees_device_checks
    differences = chees_device_checks.trajectories()
    assert _agree(differences), differences


class _Batches:
    dim = 2
    batches_on_device = True

    def log_density_gradient_batch(self, thetas):
        return np.zeros(len(thetas)), np.zeros_like(thetas)


class _OnDevice(_Batches):
    def device_gradients(self, thetas):
        raise AssertionError("not called")


def test_the_default_source_is_the_device_where_there_is_one():
    assert _gradient_source(_OnDevice(), None, None) == "device"
    assert _gradient_source(_Batches(), None, None) == "batch"
    assert _gradient_source(_Batches(), object(), None) == "batch"  # a batch on a device beats the CPU entry
    with pytest.raises(ValueError, match="gradient='device': _Batches has no device_gradients"):
        _gradient_source(_Batches(), None, "device")
    with pytest.raises(ValueError, match="expected one of"):
        _gradient_source(_Batches(), None, "gpu")
