"""samplers: NUTS, ChEES-HMC, static HMC, MAP, Laplace, Pathfinder and ADVI for any log density.

The samplers see only the log-density protocol (:mod:`samplers.protocol`);
models from ``logdens`` and external Python log densities both work.

Examples
--------
>>> from logdens import samplers
>>> idata = samplers.nuts(log_density, draws=1000, tune=1000, chains=4)  # doctest: +SKIP
>>> idata = samplers.chees(log_density, chains=64)  # doctest: +SKIP
>>> fit = samplers.find_map(log_density)  # doctest: +SKIP
"""

from .advi import advi
from .chees import chees
from .diagnostics import SamplerWarning
from .laplace import HessianError, laplace
from .optimize import MapResult, find_map
from .output import pointwise_log_likelihood
from .pathfinder import pathfinder
from .protocol import ENTRY_SIGNATURE, ENTRY_TYPE, LogDensity, NumbaEntry
from .sample import hmc, nuts

__all__ = ["nuts", "hmc", "chees", "find_map", "laplace", "pathfinder", "advi",
           "pointwise_log_likelihood", "LogDensity",
           "NumbaEntry", "ENTRY_SIGNATURE", "ENTRY_TYPE", "MapResult", "HessianError",
           "SamplerWarning"]
