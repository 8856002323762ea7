"""ChEES's leapfrog steps on the device (``samplers.chees_device``) against
the batch loop on the same CUDA density.

``tests/test_chees_device.py`` runs this file in numba's CUDA simulator, in
a separate process (the simulator is chosen when numba is imported), and
in-process when a GPU is present. ``python tests/chees_device_checks.py
[trajectories] [runs]`` prints one JSON object of the largest differences
found by each (both by default).

Sizes are small: the simulator runs every thread in Python.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import logdens as ld  # noqa: E402
from logdens.samplers.chees import (batch_steps, ensemble_init, make_proposal,  # noqa: E402
                                    proposal_start)
from logdens.samplers.chees_device import DeviceSteps  # noqa: E402
from logdens.samplers.metric import Metric  # noqa: E402
from engine_models import hierarchical  # noqa: E402

N, CHAINS = 4, 3


def _density():
    m, _, _, _, _ = hierarchical(N, np.random.default_rng(0), groups=2)
    return m.compile(backend="cuda")


def trajectories(n_steps=4, eps=0.05, max_energy_error=1000.0):
    """One iteration's ``n_steps`` steps from the same start both ways: the
    largest absolute difference of every per-chain output. One chain's
    energy limit is set low so that it stops early on both paths."""
    density = _density()
    entry = density.numba_entry
    ens = ensemble_init(entry, density.dim, CHAINS, seed=3)
    inv_diag = np.linspace(0.5, 1.5, density.dim)
    metric = Metric(inv_diag, np.zeros((1, 1)), np.zeros((1, 1)), False)
    props = []
    for steps in (batch_steps(density.log_density_gradient_batch), DeviceSteps(density, CHAINS, density.dim)):
        ens_k = type(ens)(*(a.copy() for a in ens))
        prop = make_proposal(CHAINS, density.dim)
        proposal_start(metric, ens_k, prop)
        prop.h0[0] = prop.h0[0] + 1e9  # chain 0 cannot stop; chain 1 stops at once
        prop.h0[1] = prop.h0[1] - 1e9
        assert steps(metric, eps, max_energy_error, prop, n_steps, np.zeros(1, dtype=np.int64))
        props.append(prop)
    a, b = props
    out = {name: float(np.max(np.abs(np.asarray(getattr(a, name), float) - np.asarray(getattr(b, name), float))))
           for name in ("q", "p", "v", "grad", "lp", "h", "steps", "alive")}
    out["stopped chain's steps"] = float(b.steps[1])
    out["steps taken"] = float(b.steps[0])
    return out


def runs(chains=3, tune=4, draws=2):
    """Whole ``ld.chees`` runs, ``gradient="device"`` against ``"batch"``:
    the largest difference of the draws and of the statistics."""
    density = _density()
    kw = dict(chains=chains, tune=tune, draws=draws, seed=1, progress=False, log_likelihood=False)
    device = ld.chees(density, gradient="device", **kw)
    batch = ld.chees(density, gradient="batch", **kw)
    diff = {"draws": max(float(np.max(np.abs(device.posterior[v].values - batch.posterior[v].values)))
                         for v in device.posterior.data_vars)}
    for stat in ("n_steps", "acceptance_rate", "step_size", "energy"):
        diff[stat] = float(np.max(np.abs(device.sample_stats[stat].values - batch.sample_stats[stat].values)))
    return diff


if __name__ == "__main__":
    checks = {"trajectories": trajectories, "runs": runs}
    print(json.dumps({name: checks[name]() for name in sys.argv[1:] or checks}))
