"""Posterior mode by L-BFGS-B on the unconstrained space (:func:`find_map`)."""

import inspect
from typing import NamedTuple

import numpy as np

from .external import entry_for
from .initial_point import evaluate, find_initial_point
from .protocol import dimension, resolve

#: Stan's ``tol_rel_grad`` (1e7 machine epsilons): the run has converged when
#: the decrease a Newton step would still bring, relative to the objective,
#: is below this (see :func:`relative_gradient`).
REL_GRAD_TOL = 1e7 * np.finfo(float).eps


class MapResult(NamedTuple):
    """Result of :func:`find_map`.

    Attributes
    ----------
    params : dict of str to ndarray
        Constrained estimates (and deterministics) by name, via
        ``constrain``; ``{"theta": theta}`` when the log density has none.
    theta : ndarray
        The mode on the unconstrained space.
    log_density : float
        Log density at the mode (``propto=True``; with the Jacobian term only
        if ``find_map`` was called with ``jacobian=True``).
    success : bool
        A test of the gradient at ``theta`` passes: L-BFGS-B's own (every
        entry at most ``tol``) or Stan's relative gradient
        (:func:`relative_gradient` below :data:`REL_GRAD_TOL`).
    message : str
        Why the search stopped (never empty).
    n_iter : int
        Iterations of the best start.
    n_evals : int
        Gradient evaluations over all starts.
    """

    params: dict
    theta: np.ndarray
    log_density: float
    success: bool
    message: str
    n_iter: int
    n_evals: int


def constrained(log_density, theta):
    """Constrained values by name, or the unconstrained vector as ``theta``."""
    if hasattr(log_density, "constrain"):
        return {k: np.asarray(v) for k, v in log_density.constrain(theta).items()}
    return {"theta": np.array(theta)}


def _negative(value_and_gradient):
    """Objective for scipy: ``-log p`` and its gradient; +inf outside the support
    and where the gradient is not finite (a NaN gradient sends L-BFGS-B to a
    NaN point that it reports as converged), so the search avoids both."""
    def fun(theta):
        value, grad = value_and_gradient(theta)
        if not (np.isfinite(value) and np.isfinite(grad).all()):
            return np.inf, np.zeros_like(theta)
        return -value, -grad
    return fun


def _without_jacobian(log_density):
    """``theta -> (log p, grad)`` of the density without the transforms' Jacobian."""
    def value_and_gradient(theta):
        value, grad = log_density.log_density_gradient(np.ascontiguousarray(theta), jacobian=False)
        return value, np.array(grad)
    return value_and_gradient


def _takes_jacobian(log_density):
    """Whether ``log_density_gradient`` has a ``jacobian`` switch (densities without
    constraining transforms, like most external ones, have no Jacobian to drop)."""
    try:
        return "jacobian" in inspect.signature(log_density.log_density_gradient).parameters
    except (TypeError, ValueError):
        return False


def relative_gradient(result):
    """Stan's relative gradient ``g' H^{-1} g / max(|f|, 1)`` at a scipy result.

    ``g' H^{-1} g`` (with L-BFGS's own inverse-Hessian estimate) is twice
    the decrease of the objective ``f`` that a Newton step would still
    bring; relative to ``|f|`` it does not depend on the scale of the data.
    L-BFGS-B's absolute ``gtol`` does: on a regression with a thousand rows
    the gradient's rounding noise exceeds it at the optimum, and the line
    search then fails ("ABNORMAL") at the right answer.  NaN when the
    result has no usable gradient.
    """
    g = np.asarray(result.jac, dtype=float)
    decrement = float(g @ result.hess_inv.dot(g))
    return abs(decrement) / max(abs(float(result.fun)), 1.0)


def _outcome(result, tol):
    """``(success, message)`` of a scipy run, by a test of its gradient: scipy's
    own (every entry at most ``tol``) or the relative gradient, with a message
    that always gives a reason.

    scipy's other success, "RELATIVE REDUCTION OF F" (with our ``ftol`` of
    ``1e-12 * tol``: an iteration that lowered the objective by almost
    nothing), is no evidence of a mode: a line search stalled on the edge of
    the support, or on points of non-finite gradient, stops that way far
    from one.
    """
    reason = str(result.message).strip()
    if reason.endswith(":"):  # scipy's "ABNORMAL: " names no reason
        reason += " the line search found no lower point"
    rel = relative_gradient(result)
    if np.max(np.abs(result.jac)) <= tol:
        return True, reason
    if rel < REL_GRAD_TOL:
        return True, (f"converged: relative gradient {rel:.3g} < {REL_GRAD_TOL:.3g} "
                      f"(L-BFGS-B stopped with {reason!r})")
    return False, (f"not converged: L-BFGS-B stopped with {reason!r}; relative gradient "
                   f"{rel:.3g} >= {REL_GRAD_TOL:.3g}")


def _optimize(entry, objective, dim, rng, init, max_iter, tol):
    from scipy.optimize import minimize  # 0.1-0.2 s to import: only when optimizing

    start, _, _ = find_initial_point(entry, dim, rng, init)
    return minimize(_negative(objective), start, jac=True, method="L-BFGS-B",
                    options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-12 * tol})


def find_map(model, seed=0, init=None, num_starts=1, max_iter=1000, tol=1e-8, jacobian=False):
    """Find the posterior mode with L-BFGS-B, searching the unconstrained space.

    With ``jacobian=False`` (the default, as Stan's ``optimize``) this is the
    mode of the posterior of the constrained parameters, the usual MAP; with
    ``jacobian=True`` it is the mode of the density of the unconstrained
    parameters, the centre that :func:`laplace` uses.

    Parameters
    ----------
    model : LogDensity, model or external log density
    seed : int
        Seeds the uniform(-2, 2) starting points.
    init : array_like, optional
        Unconstrained start of the first run.
    num_starts : int
        Independent starts; the highest log density is kept.
    max_iter : int
        Iteration limit per start.
    tol : float
        Gradient tolerance (``gtol``).
    jacobian : bool
        Include the log-Jacobian of the constraining transforms. It only
        matters for log densities whose ``log_density_gradient`` takes a
        ``jacobian`` argument (compiled models do).

    Returns
    -------
    MapResult
    """
    log_density = resolve(model)
    dim = dimension(log_density)
    rng = np.random.default_rng([int(seed), 0x3A9])
    with entry_for(log_density) as entry:
        if jacobian or not _takes_jacobian(log_density):
            objective = lambda theta: evaluate(entry, theta)  # noqa: E731
        else:
            objective = _without_jacobian(log_density)
        runs = [_optimize(entry, objective, dim, rng, init if k == 0 else None, max_iter, tol)
                for k in range(max(1, int(num_starts)))]
    best = min(runs, key=lambda r: r.fun)
    success, message = _outcome(best, tol)
    return MapResult(constrained(log_density, best.x), np.array(best.x), float(-best.fun),
                     success, message, int(best.nit), int(sum(r.nfev for r in runs)))



