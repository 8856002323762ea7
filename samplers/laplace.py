"""Laplace approximation: a Gaussian at the mode, returned as a DataTree."""

import warnings

import numpy as np
from arviz_base import from_dict

from .diagnostics import SamplerWarning
from .external import entry_for
from .initial_point import evaluate
from .interrupt import Interrupt
from .optimize import find_map
from .output import LOG_LIKELIHOOD_MAX_BYTES, log_likelihood_groups, posterior_dict
from .protocol import dimension, resolve


class HessianError(ValueError):
    """The Hessian at the mode is not negative definite."""


def hessian(entry, theta, rel_step=1e-5):
    """Hessian of the log density by central differences of its gradient.

    Column ``i`` is ``(g(theta + h e_i) - g(theta - h e_i)) / (2 h)`` with
    ``h = rel_step * max(1, |theta_i|)``; the result is symmetrized.

    Parameters
    ----------
    entry : NumbaEntry
    theta : ndarray, shape (dim,)
    rel_step : float

    Returns
    -------
    ndarray, shape (dim, dim)
    """
    dim = theta.shape[0]
    hess = np.empty((dim, dim))
    for i in range(dim):
        h = rel_step * max(1.0, abs(theta[i]))
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        hess[:, i] = (_gradient(entry, up, i, "+") - _gradient(entry, down, i, "-")) / (2.0 * h)
    return 0.5 * (hess + hess.T)


def _gradient(entry, theta, i, sign):
    """The gradient at ``theta`` (``theta[i]`` moved by ``sign`` h from the mode);
    :class:`HessianError` unless it and the log density are finite."""
    value, grad = evaluate(entry, theta)
    if np.isfinite(value) and np.isfinite(grad).all():
        return grad
    what = "gradient is not finite" if np.isfinite(value) else f"log density is {value}"
    raise HessianError(
        f"the {what} at theta[{i}] {sign} h = {theta[i]:.6g}, the point "
        f"{np.array2string(theta, precision=4)} next to the mode: the Hessian's central "
        "differences need finite values around the mode; fix the log density there (a NaN "
        "is a bug of the log density), or sample with nuts")


def laplace_covariance(hess):
    """Return ``(-H)^{-1}``; raise :class:`HessianError` unless ``H`` is negative definite."""
    try:
        chol = np.linalg.cholesky(-hess)
    except np.linalg.LinAlgError:
        eig = np.linalg.eigvalsh(hess)
        raise HessianError(
            f"the Hessian at the mode is not negative definite (largest eigenvalue "
            f"{eig.max():.3g}): the mode is not a strict maximum (flat or "
            "improper direction, or the optimizer did not converge)") from None
    inv_chol = np.linalg.inv(chol)
    return inv_chol.T @ inv_chol


def laplace(model, draws=1000, seed=0, init=None, num_starts=1, log_likelihood=True,
            log_likelihood_max_bytes=LOG_LIKELIHOOD_MAX_BYTES):
    """Draw from the Laplace approximation ``N(mode, -H^{-1})`` on the unconstrained space.

    Parameters
    ----------
    model : LogDensity, model or external log density
    draws : int
    seed : int
    init : array_like, optional
        Start of the mode search.
    num_starts : int
        Starts of the mode search.
    log_likelihood : bool
        Add the pointwise ``log_likelihood`` group when the log density
        provides it.
    log_likelihood_max_bytes : float or None
        Leave it out, with a warning, above this size (as in
        :func:`samplers.nuts`).

    Returns
    -------
    xarray.DataTree
        ``posterior`` (one chain, draws mapped through ``constrain``), and
        ``log_likelihood`` / ``observed_data`` when the log density gives
        them; ``posterior.attrs`` hold the mode's log density.

    Raises
    ------
    HessianError
        When the Hessian at the mode is not negative definite, or the log
        density or its gradient is not finite next to the mode.

    Warns
    -----
    SamplerWarning
        When the mode search did not converge (``find_map``'s message).
    """
    log_density = resolve(model)
    dimension(log_density)  # a ValueError, before any work, for a model with no parameters
    fit = find_map(log_density, seed=seed, init=init, num_starts=num_starts, jacobian=True)
    if not fit.success:
        warnings.warn(f"laplace: the mode search has {fit.message}; the approximation is "
                      "centred at the point it reached, which may not be the mode",
                      SamplerWarning, stacklevel=2)
    with entry_for(log_density) as entry:
        cov = laplace_covariance(hessian(entry, fit.theta))
    rng = np.random.default_rng([int(seed), 0x1A9])
    z = rng.multivariate_normal(fit.theta, cov, size=draws, method="cholesky")[None]
    posterior, coords, dims = posterior_dict(log_density, z)
    groups, missing = {"posterior": posterior}, []
    if log_likelihood and hasattr(log_density, "pointwise_log_likelihood"):
        groups.update(log_likelihood_groups(log_density, {"": z}, log_likelihood_max_bytes,
                                            Interrupt(), missing))
    if missing:
        warnings.warn("the output lacks " + "; ".join(missing), SamplerWarning, stacklevel=2)
    if hasattr(log_density, "observed_data"):
        groups["observed_data"] = dict(log_density.observed_data())
    attrs = {"sampler": "laplace", "mode_log_density": fit.log_density,
             "optimizer_success": int(fit.success)}
    return from_dict(groups, coords=coords or None, dims=dims or None,
                     attrs={"posterior": attrs})
