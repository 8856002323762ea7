"""The models' part of ``python -m logdens warmup``: the distributions' kernels.

A model's generated code is its own, compiled once per model, but the
distributions' scalar kernels it calls, their special functions and the
parameter transforms are numba functions cached on disk on their own
(:mod:`logdens.distributions.jit`): compiled for one model, they load for
the next.  Compiling one small model that uses the distributions most
models use leaves them in the cache, which took eight schools' first
``compile()`` after the samplers' warm-up from 2.05 to 1.22 CPU-seconds
(a loaded machine; only its own ``logp_grad`` was left to compile).
"""

import numpy as np

from logdens import distributions as d
from logdens.model import Model


def common_model():
    """A model with the common continuous priors (real, positive and unit-interval
    parameters) and likelihoods of real, count and binary data."""
    x = np.linspace(-1.0, 1.0, 4)
    counts, flags = np.array([0, 1, 3, 2]), np.array([0, 1, 1, 0])
    m = Model()
    loc = m.param("loc", d.Normal(0, 1))
    scale = m.param("scale", d.HalfNormal(1))
    tau = m.param("tau", d.HalfCauchy(1))
    rate = m.param("rate", d.Exponential(1))
    shape = m.param("shape", d.Gamma(2, 2))
    spread = m.param("spread", d.LogNormal(0, 1))
    p = m.param("p", d.Beta(2, 2))
    nu = m.param("nu", d.InverseGamma(3, 1))
    w = m.param("w", d.StudentT(3, 0, 1))
    v = m.param("v", d.Cauchy(0, 1))
    u = m.param("u", d.Uniform(-1, 1))
    e = m.param("e", d.Laplace(0, 1))
    mean = loc + w * x + v + u + e
    m.observe("y", d.Normal(mean, scale), x)
    m.observe("y_t", d.StudentT(nu + 1, mean, tau), x)
    m.observe("c", d.Poisson(rate * shape), counts)
    m.observe("c_nb", d.NegativeBinomial(spread, shape), counts)
    m.observe("k", d.Binomial(3, p), counts)
    m.observe("b", d.Bernoulli(p), flags)
    m.observe("b_logit", d.BernoulliLogit(mean), flags)
    return m


def compile_common_model():
    """Compile :func:`common_model` (its kernels land in numba's disk cache)."""
    density = common_model().compile()
    theta = np.zeros(density.dim)
    return density.log_density_gradient(theta)
