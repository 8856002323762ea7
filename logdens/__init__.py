"""logdens: log densities whose gradients cost about as much as the log density.

``import logdens as ld`` gives the whole user-facing namespace: the model
builder, expression functions, constraints, every distribution, and the
sampler entry points.
"""

__version__ = "0.1.0"

from logdens.distributions import *  # noqa: F401,F403  (every distribution class)
from logdens.distributions.constraints import (cholesky_corr, cholesky_cov, corr_matrix,  # noqa: F401
                                               cov_matrix, greater_than, interval, less_than, ordered,
                                               positive, positive_ordered, real, simplex, sum_to_zero,
                                               unit_interval, unit_vector)
from logdens.expr import FUNCTIONS as _FUNCTIONS
from logdens.expr import (ModelError, ModelWarning, clip, cumsum, diag_pre_multiply, dot,  # noqa: F401
                          inv_logit, log_softmax, logsumexp, matmul, mean, sigmoid, softmax, sum, transpose)
from logdens import gp  # noqa: F401  (ld.gp.exp_quad, ...)
from logdens.linalg import (add_diag, cholesky, cholesky_logdet, concatenate, diag,  # noqa: F401
                            solve_triangular, stack)
from logdens.mixture import Mixture  # noqa: F401
from logdens.scans import hmm_marginal, scan  # noqa: F401
from logdens.model import Model  # noqa: F401

# ld.exp, ld.log, ld.logaddexp, ...: one per elementwise op of logdens.ops.OPS
globals().update(_FUNCTIONS)

_SAMPLER_ENTRY_POINTS = ("nuts", "hmc", "chees", "find_map", "laplace", "pathfinder", "advi",
                         "pointwise_log_likelihood")


_PREDICTIVE = ("sample_prior_predictive", "sample_posterior_predictive")

_DISTRIBUTED = ("map_fits", "nuts_distributed", "ShardedLogDensity", "fit_seeds")


def __getattr__(name):
    """``ld.nuts``, ``ld.hmc``, ``ld.chees``, ``ld.find_map``, ``ld.laplace``, ``ld.pathfinder``,
    ``ld.advi``, ``ld.pointwise_log_likelihood``, ``ld.from_draws``,
    ``ld.sample_prior_predictive``, ``ld.sample_posterior_predictive``, ``ld.forecast``: imported on first use (they load ArviZ,
    the samplers their own kernels too); ``ld.map_fits``, ``ld.nuts_distributed``,
    ``ld.ShardedLogDensity``, ``ld.fit_seeds`` from ``logdens.distributed`` (Dask itself
    is imported when they run)."""
    if name in _DISTRIBUTED:
        from logdens import distributed
        return getattr(distributed, name)
    if name in _PREDICTIVE:  # imports ArviZ on first use, as the samplers do
        from logdens import predictive
        return getattr(predictive, name)
    if name == "forecast":
        from logdens.forecasting import forecast
        return forecast
    if name == "from_draws":
        from logdens.samplers.external_draws import from_draws
        return from_draws
    if name in _SAMPLER_ENTRY_POINTS:
        from logdens import samplers
        return getattr(samplers, name)
    raise AttributeError(f"module 'logdens' has no attribute {name!r}")
