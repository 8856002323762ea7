"""Automatic differentiation variational inference (Kucukelbir et al. 2017).

A Gaussian ``q`` on the unconstrained space, mean-field or full-rank, is
fitted by stochastic gradient ascent on the ELBO with reparameterization
gradients of the model's ``log_density_gradient``; the compiled loops are in
:mod:`samplers.advi_kernel`, so a step costs no Python call per gradient
(an external log density calls back into Python, :mod:`samplers.external`).

The schedule is Stan's (``stan::variational::advi``): the step-size scale
``eta`` is chosen among Stan's candidates 100, 10, 1, 0.1, 0.01
(``adapt_iters`` steps from the initial ``q`` each; the best ELBO wins, see
:func:`adapt_eta` for how this differs from Stan), unless given; the
ELBO is estimated every ``eval_elbo`` iterations from ``elbo_samples`` draws,
and the run stops when the mean or the median of the recent relative ELBO
changes falls below ``tol_rel_obj``.
"""

import math
import warnings
from collections import deque
from typing import NamedTuple

import numpy as np
from tqdm.auto import tqdm

from . import advi_kernel
from .approximation import draws_datatree, log_densities
from .diagnostics import SamplerWarning
from .external import entry_for
from .initial_point import find_initial_point
from .output import LOG_LIKELIHOOD_MAX_BYTES
from .protocol import dimension, dropped_constant, resolve
from .rng import make_state

#: Stan's step-size candidates, tried in this order.
ETA_SEQUENCE = (100.0, 10.0, 1.0, 0.1, 0.01)
#: The relative-change buffer holds this fraction of ``max_iters / eval_elbo``
#: evaluations, at least 2 (Stan's ``cb_size``).
BUFFER_FRACTION = 0.1
#: Stan warns that the run may be diverging when the mean or median relative
#: change exceeds this after ten ELBO evaluations.
DIVERGING_REL_CHANGE = 0.5


class _Fit:
    """The compiled loops bound to one model entry, ``q``'s family and workspaces."""

    def __init__(self, entry, dim, fullrank, rng_state):
        self.entry, self.dim, self.fullrank, self.rng = entry, dim, fullrank, rng_state
        self.work = (np.zeros(dim), np.zeros(dim), np.zeros(dim), np.zeros(n_params(dim, fullrank)))
        self.n_evals = 0

    def steps(self, params, hist, eta, first_iter, n_iters, grad_samples):
        """Run SGA iterations in place; return how many completed."""
        e = self.entry
        done = advi_kernel.steps_kernel()(e.function, e.fdata, e.idata, self.fullrank, params,
                                          hist, self.rng, float(eta), int(first_iter),
                                          int(n_iters), int(grad_samples), *self.work)
        self.n_evals += done * grad_samples
        return done

    def elbo(self, params, n_draws):
        e = self.entry
        self.n_evals += int(n_draws)
        return advi_kernel.elbo_kernel()(e.function, e.fdata, e.idata, self.fullrank, params,
                                         self.rng, int(n_draws), *self.work[:3])


def n_params(dim, fullrank):
    """Length of the flat variational parameters (see :mod:`samplers.advi_kernel`)."""
    return dim + (dim * dim if fullrank else dim)


def initial_params(theta, fullrank):
    """``q`` centred at ``theta`` with unit scale (Stan's start: ``omega = 0``, ``L = I``)."""
    dim = theta.shape[0]
    params = np.zeros(n_params(dim, fullrank))
    params[:dim] = theta
    if fullrank:
        params[dim:] = np.eye(dim).ravel()
    return params


def adapt_eta(fit, params0, adapt_iters, grad_samples, elbo_samples):
    """Step-size search: the ``eta`` of :data:`ETA_SEQUENCE` whose ELBO is highest
    after ``adapt_iters`` steps from ``params0``.

    Stan's ``advi::adapt_eta`` tries the same candidates with the same
    budget but stops at the first one whose ELBO is below its predecessor's;
    that picks ``eta = 100`` whenever ``eta = 10`` happens to do worse, even
    when smaller values do much better (on a 2-d Gaussian, full-rank, seed 0:
    ELBO -3.1 at 100, -3.4 at 10, 1.3 at 1, and the run at 100 never
    settles).  Trying all five costs Stan's worst case, 250 iterations.

    Raises
    ------
    RuntimeError
        When the ELBO of ``params0`` is not finite, or no ``eta`` improves on it.
    """
    elbo_init = fit.elbo(params0, elbo_samples)
    if not math.isfinite(elbo_init):
        raise RuntimeError("advi: the ELBO of the initial approximation is not finite (a draw "
                           "left the support); give another init or seed")
    elbo_best, eta_best = elbo_init, None
    for eta in ETA_SEQUENCE:
        params = params0.copy()
        done = fit.steps(params, np.zeros_like(params), eta, 1, adapt_iters, grad_samples)
        elbo = fit.elbo(params, elbo_samples) if done == adapt_iters else -math.inf
        if math.isfinite(elbo) and elbo > elbo_best:
            elbo_best, eta_best = elbo, eta
    if eta_best is None:
        raise RuntimeError(f"advi: every step size eta in {ETA_SEQUENCE} failed to improve "
                           f"the initial ELBO {elbo_init:.6g} within adapt_iters={adapt_iters}; "
                           "give eta, or check the model")
    return eta_best


class AdviResult(NamedTuple):
    """Fitted approximation of :func:`fit_advi`.

    Attributes
    ----------
    params : ndarray
        Flat variational parameters (see :mod:`samplers.advi_kernel`).
    eta : float
    n_iters : int
    n_evals : int
        Log-density (and gradient) evaluations, of the steps and the ELBO
        estimates, the step-size search included.
    elbo : ndarray
        ELBO estimates, one per ``eval_elbo`` iterations.
    converged : bool
    message : str
    """

    params: np.ndarray
    eta: float
    n_iters: int
    n_evals: int
    elbo: np.ndarray
    converged: bool
    message: str


def _relative_change(old, new):
    """Stan's ``rel_difference``: ``|(old - new) / new|``."""
    return abs((old - new) / new)


#: Frames from :func:`_stop_reason` up to the caller of :func:`advi`
#: (``_stop_reason`` < ``sga`` < ``fit_advi`` < ``advi`` < caller).
_CALLER_STACKLEVEL = 5


def _stop_reason(changes, iteration, eval_elbo, tol_rel_obj, warned):
    """Stan's tests on the buffer of relative changes: (converged, message).

    The first time the changes look like divergence a warning is given and
    ``warned`` (a one-element list) is set (Stan prints it at every test);
    it points at the caller of :func:`advi`."""
    mean, median = float(np.mean(changes)), float(np.median(changes))
    if mean < tol_rel_obj:
        return True, f"mean relative ELBO change {mean:.3g} < tol_rel_obj={tol_rel_obj}"
    if median < tol_rel_obj:
        return True, f"median relative ELBO change {median:.3g} < tol_rel_obj={tol_rel_obj}"
    if iteration > 10 * eval_elbo and max(mean, median) > DIVERGING_REL_CHANGE and not warned:
        warned.append(True)
        warnings.warn(f"advi: relative ELBO change (mean {mean:.3g}, median {median:.3g}) "
                      f"above {DIVERGING_REL_CHANGE} at iteration {iteration}: the "
                      "optimization may be diverging", SamplerWarning,
                      stacklevel=_CALLER_STACKLEVEL)
    return False, ""


def sga(fit, params, eta, max_iters, tol_rel_obj, eval_elbo, grad_samples, elbo_samples,
        progress, elbo_offset=0.0):
    """Stan's ``stochastic_gradient_ascent``: steps in chunks of ``eval_elbo``
    with the convergence test after each; ``params`` is updated in place.

    ``elbo_offset`` (the summands the compiled ``propto`` density drops) is
    added to every ELBO estimate: Stan's ELBO is of the normalized density,
    and the relative-change test depends on its level (eight schools: an
    ELBO of 7.6 without them never passes 0.01, -23 with them does).

    Returns
    -------
    (n_iters, elbo trace, converged, message)
    """
    hist = np.zeros_like(params)
    changes = deque(maxlen=max(int(BUFFER_FRACTION * max_iters / eval_elbo), 2))
    trace, elbo, it, warned = [], 0.0, 0, []
    converged, message = False, f"reached max_iters={max_iters}"
    with tqdm(total=max_iters, disable=not progress, desc="advi") as bar:
        while it < max_iters:
            n = min(eval_elbo, max_iters - it)
            done = fit.steps(params, hist, eta, it + 1, n, grad_samples)
            if done < n:
                raise RuntimeError(f"advi: a draw of q had a log density or gradient that is "
                                   f"not finite at iteration {it + done + 1} (eta={eta}); try a "
                                   "smaller eta or another seed")
            it += n
            bar.update(n)
            elbo_old, elbo = elbo, fit.elbo(params, elbo_samples) + elbo_offset
            if not math.isfinite(elbo):
                raise RuntimeError(f"advi: the ELBO is not finite at iteration {it} "
                                   f"(eta={eta}): a draw of q left the support")
            trace.append(elbo)
            changes.append(_relative_change(elbo_old, elbo))
            bar.set_postfix_str(f"ELBO={elbo:.4g}, rel change={changes[-1]:.3g}", refresh=False)
            converged, reason = _stop_reason(changes, it, eval_elbo, tol_rel_obj, warned)
            if converged:
                message = reason
                break
    return it, np.array(trace), converged, message


def fit_advi(entry, dim, fullrank, seed=0, init=None, eta=None, max_iters=10000,
             tol_rel_obj=0.01, eval_elbo=100, grad_samples=1, elbo_samples=100,
             adapt_iters=50, progress=False, elbo_offset=0.0):
    """Fit ``q`` by Stan's ADVI; see :func:`advi` for the arguments.

    Returns
    -------
    AdviResult
    """
    start, _, _ = find_initial_point(entry, dim, np.random.default_rng([int(seed), 0xAD1]), init)
    fit = _Fit(entry, dim, bool(fullrank), make_state(seed, 0xAD7))
    params0 = initial_params(start, fit.fullrank)
    if eta is None:
        eta = adapt_eta(fit, params0, adapt_iters, grad_samples, elbo_samples)
    params = params0.copy()
    n_iters, trace, converged, message = sga(fit, params, eta, max_iters, tol_rel_obj,
                                             eval_elbo, grad_samples, elbo_samples, progress,
                                             elbo_offset)
    return AdviResult(params, float(eta), n_iters, fit.n_evals, trace, converged, message)


def approximation_draws(params, dim, fullrank, rng, n):
    """``n`` draws of ``q`` and their log densities under ``q``.

    Returns
    -------
    draws : ndarray, shape (n, dim)
    log_q : ndarray, shape (n,)
    """
    u = rng.standard_normal((n, dim))
    mu = params[:dim]
    if fullrank:
        chol = params[dim:].reshape(dim, dim)
        draws, log_det = mu + u @ chol.T, 2.0 * np.sum(np.log(np.abs(np.diag(chol))))
    else:
        draws, log_det = mu + u * np.exp(params[dim:]), 2.0 * np.sum(params[dim:])
    log_q = -0.5 * (np.sum(u * u, axis=1) + log_det + dim * math.log(2.0 * math.pi))
    return draws, log_q


def _check(method, draws, max_iters, eval_elbo, grad_samples, elbo_samples, adapt_iters,
           tol_rel_obj, eta):
    if method not in ("meanfield", "fullrank"):
        raise ValueError(f"method={method!r}; expected 'meanfield' or 'fullrank'")
    for name, value in (("draws", draws), ("max_iters", max_iters), ("eval_elbo", eval_elbo),
                        ("grad_samples", grad_samples), ("elbo_samples", elbo_samples),
                        ("adapt_iters", adapt_iters)):
        if not (isinstance(value, (int, np.integer)) and value >= 1):
            raise ValueError(f"{name}={value!r}; must be an integer >= 1")
    if not tol_rel_obj > 0:
        raise ValueError(f"tol_rel_obj={tol_rel_obj!r}; must be > 0")
    if eta is not None and not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"eta={eta!r}; must be a finite number > 0, or None to search")


def _check_init(init, dim):
    """``init`` as a float vector of length ``dim``, or None.

    Checked before anything runs: the compiled log density reads ``dim``
    coordinates whatever the length of the array it is given.
    """
    if init is None:
        return None
    start = np.asarray(init, dtype=np.float64)
    if start.shape != (dim,):
        raise ValueError(f"init has shape {start.shape}; expected ({dim},)")
    return start


def advi(model, method="meanfield", draws=1000, seed=0, max_iters=10000, tol_rel_obj=0.01,
         eta=None, eval_elbo=100, grad_samples=1, elbo_samples=100, adapt_iters=50, init=None,
         progress=True, log_likelihood=True, log_likelihood_max_bytes=LOG_LIKELIHOOD_MAX_BYTES):
    """Approximate the posterior with ADVI (Stan's algorithm and defaults).

    Parameters
    ----------
    model : LogDensity, model or external log density
    method : {"meanfield", "fullrank"}
        A diagonal Gaussian (which underestimates the marginal variances of a
        correlated posterior: on a Gaussian target its variances are
        ``1 / diag(precision)``) or a Gaussian with a dense covariance.
    draws : int
        Draws returned from the fitted approximation.
    seed : int
    max_iters : int
    tol_rel_obj : float
        Convergence tolerance on the relative ELBO change (mean or median of
        the recent evaluations).
    eta : float, optional
        Step-size scale; by default chosen by Stan's search.
    eval_elbo : int
        Iterations between ELBO estimates.
    grad_samples, elbo_samples : int
        Draws per gradient estimate and per ELBO estimate.
    adapt_iters : int
        Iterations per candidate of the step-size search.
    init : array_like of shape (dim,), optional
        Unconstrained start of ``q``'s mean; default uniform(-2, 2).
    progress : bool
        Show a tqdm progress bar.
    log_likelihood : bool
    log_likelihood_max_bytes : float or None

    Returns
    -------
    xarray.DataTree
        ``posterior`` (one chain of ``draws``, constrained values by name),
        ``sample_stats`` with ``lp`` and ``lp_approx`` (log densities under
        the target and under ``q``); ``posterior.attrs`` hold ``method``,
        ``eta``, ``n_iters``, ``n_evals``, the last ``elbo`` (of the normalized density, as Stan's), ``converged``
        and ``message``.  A :class:`SamplerWarning` when it did not converge.
    """
    _check(method, draws, max_iters, eval_elbo, grad_samples, elbo_samples, adapt_iters,
           tol_rel_obj, eta)
    log_density = resolve(model)
    dim = dimension(log_density)
    init = _check_init(init, dim)
    fullrank = method == "fullrank"
    with entry_for(log_density) as entry:
        start, _, _ = find_initial_point(entry, dim, np.random.default_rng([int(seed), 0xAD1]), init)
        res = fit_advi(entry, dim, fullrank, seed, start, eta, max_iters, tol_rel_obj, eval_elbo,
                       grad_samples, elbo_samples, adapt_iters, progress,
                       dropped_constant(log_density, start))
        theta, log_q = approximation_draws(res.params, dim, fullrank,
                                           np.random.default_rng([int(seed), 0xAD2]), draws)
        lp = log_densities(entry, theta)
    if not res.converged:
        warnings.warn(f"advi did not converge: {res.message}", SamplerWarning, stacklevel=2)
    attrs = {"sampler": "advi", "method": method, "seed": int(seed), "eta": res.eta,
             "n_iters": res.n_iters, "n_evals": res.n_evals,
             "elbo": float(res.elbo[-1]) if res.elbo.size else float("nan"),
             "converged": int(res.converged), "message": res.message}
    return draws_datatree(log_density, theta, {"lp": lp, "lp_approx": log_q}, attrs,
                          log_likelihood, log_likelihood_max_bytes)
