"""ADVI's compiled loops: stochastic-gradient steps and the ELBO estimate.

The variational parameters are one flat vector ``params``:

- mean-field: ``[mu (dim), omega (dim)]``, ``q = N(mu, diag(exp(omega))^2)``;
- full-rank: ``[mu (dim), L (dim * dim, row-major)]``, ``q = N(mu, L L')``
  with ``L`` lower triangular (its upper entries stay zero: their gradient
  is zero).

A draw is ``zeta = mu + exp(omega) * eta`` or ``mu + L eta`` with ``eta``
standard normal (the reparameterization of Kucukelbir et al. 2017, eq. 5),
so ``d ELBO / d mu = E[grad log p(zeta)]``, ``d ELBO / d omega = E[grad log
p(zeta) * eta * exp(omega)] + 1`` and ``d ELBO / d L = E[tril(grad log p(zeta)
eta')] + diag(1 / L_ii)``, the last terms from the entropy (their eqs. 8-10,
as in Stan's ``normal_meanfield::calc_grad`` and ``normal_fullrank``).

Step sizes follow Stan's sequence (Kucukelbir et al. 2017, eq. 11):
``rho_k = eta k^(-1/2) / (1 + sqrt(s_k))``, with ``s_1 = g_1^2`` and
``s_k = 0.1 g_k^2 + 0.9 s_{k-1}``, elementwise.  The loops run against the
first-class function type of the model entry, like the chain runners, and
draw normals from the package's per-run xoshiro state (:mod:`samplers.rng`).
"""

import functools
import math

from numba import njit, types

from ._jit import compiled
from .approximation import SOURCE_HASH
from .protocol import ENTRY_TYPE
from .rng import fill_normal

LOG_2PI = math.log(2.0 * math.pi)
#: Weight of the newest squared gradient in ``s_k`` (Stan's ``post_factor``).
GRAD_SQUARED_WEIGHT = 0.1
#: ``tau`` of the step-size denominator (Stan's value).
STEP_TAU = 1.0

_F1 = types.float64[::1]
_ENTRY = (ENTRY_TYPE, _F1, types.int64[::1])
_STEPS_SIGNATURE = types.int64(*_ENTRY, types.boolean, _F1, _F1, types.uint64[::1],
                               types.float64, types.int64, types.int64, types.int64,
                               _F1, _F1, _F1, _F1)
_ELBO_SIGNATURE = types.float64(*_ENTRY, types.boolean, _F1, types.uint64[::1], types.int64,
                                _F1, _F1, _F1)


@compiled
def draw(params, fullrank, eta, zeta):
    """``zeta = mu + exp(omega) * eta`` (mean-field) or ``mu + L eta`` (full-rank)."""
    d = eta.shape[0]
    for i in range(d):
        value = params[i]
        if fullrank:
            for j in range(i + 1):
                value += params[d + i * d + j] * eta[j]
        else:
            value += math.exp(params[d + i]) * eta[i]
        zeta[i] = value


@compiled
def entropy(params, fullrank, d):
    """Entropy of ``q``: ``d (1 + log 2 pi) / 2 + sum(omega)`` or ``+ sum(log |L_ii|)``."""
    total = 0.5 * d * (1.0 + LOG_2PI)
    for i in range(d):
        total += math.log(abs(params[d + i * d + i])) if fullrank else params[d + i]
    return total


@compiled
def _accumulate(params, fullrank, eta, grad, pgrad):
    """Add one draw's reparameterization gradient (without the entropy term)."""
    d = eta.shape[0]
    for i in range(d):
        pgrad[i] += grad[i]
        if fullrank:
            for j in range(i + 1):
                pgrad[d + i * d + j] += grad[i] * eta[j]
        else:
            pgrad[d + i] += grad[i] * eta[i] * math.exp(params[d + i])


@compiled
def _finite(values):
    for i in range(values.shape[0]):
        if not math.isfinite(values[i]):
            return False
    return True


@compiled
def elbo_gradient(f, fdata, idata, fullrank, params, rng, grad_samples, eta, zeta, grad, pgrad):
    """Monte Carlo ELBO gradient into ``pgrad``; False when a draw's log density
    or gradient is not finite (Stan stops there too)."""
    d = eta.shape[0]
    for k in range(pgrad.shape[0]):
        pgrad[k] = 0.0
    for _ in range(grad_samples):
        fill_normal(rng, eta)
        draw(params, fullrank, eta, zeta)
        if not math.isfinite(f(zeta, grad, fdata, idata)) or not _finite(grad):
            return False
        _accumulate(params, fullrank, eta, grad, pgrad)
    for k in range(pgrad.shape[0]):
        pgrad[k] /= grad_samples
    for i in range(d):
        if fullrank:
            pgrad[d + i * d + i] += 1.0 / params[d + i * d + i]
        else:
            pgrad[d + i] += 1.0
    return True


def _make_steps():
    """The loop of :func:`steps_kernel`; a closure over the source hash (the
    disk-cache key sees every module it inlines, see :mod:`samplers._cache`)."""
    sources = SOURCE_HASH

    def steps(f, fdata, idata, fullrank, params, hist, rng, eta_scale, first_iter, n_iters,
              grad_samples, eta, zeta, grad, pgrad):
        sources  # noqa: B018  (a closure variable, so part of the cache key)
        for k in range(first_iter, first_iter + n_iters):
            if not elbo_gradient(f, fdata, idata, fullrank, params, rng, grad_samples,
                                 eta, zeta, grad, pgrad):
                return k - first_iter
            rate = eta_scale / math.sqrt(k)
            for i in range(params.shape[0]):
                g2 = pgrad[i] * pgrad[i]
                if k == 1:
                    hist[i] = g2
                else:
                    hist[i] = GRAD_SQUARED_WEIGHT * g2 + (1.0 - GRAD_SQUARED_WEIGHT) * hist[i]
                params[i] += rate * pgrad[i] / (STEP_TAU + math.sqrt(hist[i]))
        return n_iters

    return steps


def _make_elbo():
    sources = SOURCE_HASH

    def elbo(f, fdata, idata, fullrank, params, rng, n_draws, eta, zeta, grad):
        sources  # noqa: B018
        total = 0.0
        for _ in range(n_draws):
            fill_normal(rng, eta)
            draw(params, fullrank, eta, zeta)
            value = f(zeta, grad, fdata, idata)
            if not math.isfinite(value):
                return -math.inf
            total += value
        return total / n_draws + entropy(params, fullrank, eta.shape[0])

    return elbo


_OPTIONS = dict(cache=True, nogil=True, error_model="numpy")


@functools.cache
def steps_kernel():
    """Compiled ``steps(f, fdata, idata, fullrank, params, hist, rng, eta, first_iter,
    n_iters, grad_samples, eta_work, zeta, grad, pgrad) -> int``.

    Runs iterations ``first_iter .. first_iter + n_iters - 1`` (``first_iter``
    >= 1 is Stan's ``iter_counter``; iteration 1 starts the squared-gradient
    history) in place on ``params`` and ``hist``; returns the iterations
    completed: fewer than ``n_iters`` when a draw's log density or gradient
    was not finite.
    """
    return njit(_STEPS_SIGNATURE, **_OPTIONS)(_make_steps())


@functools.cache
def elbo_kernel():
    """Compiled ``elbo(f, fdata, idata, fullrank, params, rng, n_draws, eta, zeta,
    grad) -> float``: the mean log density of ``n_draws`` draws plus the
    entropy; ``-inf`` when a draw's log density is not finite."""
    return njit(_ELBO_SIGNATURE, **_OPTIONS)(_make_elbo())
