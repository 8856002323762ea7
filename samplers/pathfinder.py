"""Pathfinder variational inference (Zhang, Carpenter, Gelman & Vehtari 2022).

One path: L-BFGS from a uniform(-2, 2) start (:mod:`samplers.lbfgs`); at
every iterate the L-BFGS inverse-Hessian estimate (history of ``J`` pairs,
initial diagonal by Gilbert & Lemaréchal's update) gives a local normal
approximation ``N(theta + H grad, H)``; ``K`` draws estimate its ELBO, and the
iterate with the highest ELBO supplies the ``M`` returned draws, each with its
log density and its log density under the approximation.  Several paths are
pooled by Pareto-smoothed importance resampling (PSIS, from ``arviz_stats``).

Notation follows the paper's Algorithms 1-4: the optimizer minimizes
``-log p``, so ``s = theta_l - theta_{l-1}`` and ``y = g_l - g_{l-1}`` with
``g = -grad log p``; a pair enters the history only when ``s'y > 1e-12 y'y``
(:data:`samplers.lbfgs.CURVATURE_EPS`).
"""

import math
import warnings
from collections import deque
from typing import NamedTuple

import numpy as np

from .approximation import draws_datatree, log_densities
from .diagnostics import SamplerWarning
from .external import entry_for
from .initial_point import evaluate, find_initial_point, per_chain_inits
from .lbfgs import CURVATURE_EPS, Tolerances, lbfgs
from .output import LOG_LIKELIHOOD_MAX_BYTES
from .protocol import dimension, resolve

LOG_2PI = math.log(2.0 * math.pi)
#: Above this Pareto k the importance weights are unreliable (Vehtari et al. 2024).
PARETO_K_WARN = 0.7
#: Pathfinder of ``nuts(init="pathfinder")`` (:func:`pathfinder_init`): one
#: path, 100 draws, 5 draws per ELBO estimate.  The ELBO draws were 72-93% of
#: the four-path default's evaluations; this costs 10-18 times less on four
#: models (``benchmarks/bench_pathfinder_init.py --costs``, RESULTS.md
#: session 8) and its variances are still within a factor 3 of the truth on
#: a Gaussian with scales 0.1 .. 10, where the unit metric is off by up to 100.
INIT_PATHS, INIT_DRAWS, INIT_ELBO_DRAWS = 1, 100, 5


class LocalNormal(NamedTuple):
    """``N(mean, Sigma)`` with ``Sigma = diag(a)^(1/2) (I + Q (L L' - I) Q') diag(a)^(1/2)``.

    The paper's Algorithm 4: ``Sigma`` is the L-BFGS inverse-Hessian estimate
    ``diag(a) + beta gamma beta'``; ``Q R`` is the thin QR of
    ``diag(a)^(-1/2) beta`` and ``L L' = I + R gamma R'``.

    Attributes
    ----------
    mean : ndarray, shape (dim,)
    sqrt_alpha : ndarray, shape (dim,)
    q : ndarray, shape (dim, k)
    chol : ndarray, shape (k, k)
    log_det : float
        ``log |Sigma|``.
    """

    mean: np.ndarray
    sqrt_alpha: np.ndarray
    q: np.ndarray
    chol: np.ndarray
    log_det: float


def update_diagonal(alpha, s, y):
    """Gilbert & Lemaréchal's (1989, eq. 4.9) diagonal inverse-Hessian update.

    The paper's Algorithm 3: with the Hessian estimate ``B = diag(1 / alpha)``
    scaled by ``y' diag(alpha) y / y's`` (Oren-Luenberger), the new
    ``alpha`` is the reciprocal of the diagonal of B's BFGS update with the
    pair (s, y).  ``alpha`` is kept when the update is not positive and finite.
    """
    y_alpha_y = y @ (alpha * y)
    s_inv_alpha_s = s @ (s / alpha)
    new = (y @ s) / (y_alpha_y / alpha + y * y - (y_alpha_y / s_inv_alpha_s) * (s / alpha) ** 2)
    return new if np.all(np.isfinite(new)) and np.all(new > 0.0) else alpha


def inverse_hessian_factors(s_mat, y_mat, alpha):
    """``(beta, gamma)`` of the L-BFGS inverse Hessian ``diag(alpha) + beta gamma beta'``.

    The compact form of Byrd, Nocedal & Schnabel (1994, eq. 2.6), as in the
    paper's Algorithm 4: ``beta = [diag(alpha) Y, S]``; with ``R`` the upper
    triangle of ``S'Y`` and ``D`` its diagonal, ``gamma = [[0, -R^-1],
    [-R^-T, R^-T (D + Y' diag(alpha) Y) R^-1]]``.

    Parameters
    ----------
    s_mat, y_mat : ndarray, shape (dim, m)
        The history's pairs, oldest first.
    alpha : ndarray, shape (dim,)

    Returns
    -------
    beta : ndarray, shape (dim, 2 m)
    gamma : ndarray, shape (2 m, 2 m)
    """
    m = s_mat.shape[1]
    sy = s_mat.T @ y_mat
    r_inv = np.linalg.inv(np.triu(sy))
    middle = np.diag(np.diag(sy)) + y_mat.T @ (alpha[:, None] * y_mat)
    gamma = np.zeros((2 * m, 2 * m))
    gamma[:m, m:] = -r_inv
    gamma[m:, :m] = -r_inv.T
    gamma[m:, m:] = r_inv.T @ middle @ r_inv
    return np.hstack([alpha[:, None] * y_mat, s_mat]), gamma


def local_normal(theta, neg_grad, s_mat, y_mat, alpha):
    """The normal approximation at an iterate, or None when ``I + R gamma R'``
    is not positive definite (the iterate is skipped).

    Parameters
    ----------
    theta : ndarray, shape (dim,)
    neg_grad : ndarray, shape (dim,)
        ``-grad log p`` at ``theta``.
    s_mat, y_mat : ndarray, shape (dim, m)
    alpha : ndarray, shape (dim,)

    Returns
    -------
    LocalNormal or None
    """
    sqrt_alpha = np.sqrt(alpha)
    log_det = float(np.sum(np.log(alpha)))
    if s_mat.shape[1] == 0:
        return LocalNormal(theta - alpha * neg_grad, sqrt_alpha, np.zeros((theta.size, 0)),
                           np.zeros((0, 0)), log_det)
    beta, gamma = inverse_hessian_factors(s_mat, y_mat, alpha)
    # The mean is the quasi-Newton step theta - H g (Algorithm 4, line 6).
    mean = theta - (alpha * neg_grad + beta @ (gamma @ (beta.T @ neg_grad)))
    q, r = np.linalg.qr(beta / sqrt_alpha[:, None])
    inner = np.eye(r.shape[0]) + r @ gamma @ r.T
    try:
        chol = np.linalg.cholesky(0.5 * (inner + inner.T))
    except np.linalg.LinAlgError:
        return None
    log_det += 2.0 * float(np.sum(np.log(np.diag(chol))))
    if not (np.isfinite(log_det) and np.all(np.isfinite(mean))):
        return None
    return LocalNormal(mean, sqrt_alpha, q, chol, log_det)


def sample_local_normal(approx, u):
    """Draws and their log densities under ``approx`` from standard normals ``u``.

    Parameters
    ----------
    approx : LocalNormal
    u : ndarray, shape (n, dim)

    Returns
    -------
    draws : ndarray, shape (n, dim)
    log_q : ndarray, shape (n,)
    """
    u_q = u @ approx.q
    draws = approx.mean + approx.sqrt_alpha * (u + (u_q @ approx.chol.T - u_q) @ approx.q.T)
    log_q = -0.5 * (approx.log_det + np.sum(u * u, axis=1) + u.shape[1] * LOG_2PI)
    return draws, log_q


class SinglePath(NamedTuple):
    """One Pathfinder path (:func:`single_path`).

    Attributes
    ----------
    draws : ndarray, shape (M, dim)
        Unconstrained draws from the best iterate's approximation.
    lp, lq : ndarray, shape (M,)
        Their log densities under the target and under the approximation.
    elbo : float
        ELBO estimate of the best iterate (``-inf`` when none was usable).
    best_iter : int
        Its index on the path (0 is the start).
    n_iters : int
        L-BFGS iterations.
    n_evals : int
        Log-density evaluations (gradients by L-BFGS, values for the ELBO and
        the draws).
    message : str
        Why L-BFGS stopped.
    variance : ndarray, shape (dim,)
        Diagonal of the best approximation's covariance (empty when none was
        usable): the initial inverse metric of ``nuts(init="pathfinder")``.
    """

    draws: np.ndarray
    lp: np.ndarray
    lq: np.ndarray
    elbo: float
    best_iter: int
    n_iters: int
    n_evals: int
    message: str
    variance: np.ndarray


def local_normal_variance(approx):
    """Diagonal of the covariance ``Sigma`` of ``approx``, exactly.

    With ``Sigma = diag(a)^(1/2) (I + Q (L L' - I) Q') diag(a)^(1/2)``, entry
    ``i`` is ``a_i (1 + q_i' (L L' - I) q_i)`` for row ``q_i`` of ``Q``: no
    ``dim x dim`` matrix is formed.
    """
    inner = approx.chol @ approx.chol.T - np.eye(approx.chol.shape[0])
    quad = np.einsum("ij,jk,ik->i", approx.q, inner, approx.q)
    return approx.sqrt_alpha ** 2 * (1.0 + quad)


def _negative(entry):
    """``x -> (-log p, -grad)``, ``+inf`` outside the support, for the minimizer."""
    def fun(x):
        value, grad = evaluate(entry, x)
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            return np.inf, np.zeros_like(x)
        return -value, -grad
    return fun


def _elbo(entry, approx, rng, num_draws):
    """Monte Carlo ELBO ``mean(log p - log q)`` of ``num_draws`` draws (-inf
    when a draw leaves the support)."""
    draws, log_q = sample_local_normal(approx, rng.standard_normal((num_draws, approx.mean.size)))
    return float(np.mean(log_densities(entry, draws) - log_q))


def single_path(entry, dim, rng, init=None, draws=1000, history_size=5, num_elbo_draws=25,
                max_iters=1000, tolerances=Tolerances()):
    """Run one Pathfinder path (the paper's Algorithm 1).

    Parameters
    ----------
    entry : NumbaEntry
    dim : int
    rng : numpy.random.Generator
        Start point (uniform(-2, 2), as :func:`samplers.nuts`) and all draws.
    init : ndarray, optional
        Unconstrained start instead.
    draws : int
        ``M``: draws returned from the best approximation.
    history_size : int
        ``J``: pairs kept, for L-BFGS and for the approximations.
    num_elbo_draws : int
        ``K``: draws per ELBO estimate (Stan's default 25).
    max_iters : int
        ``L``: L-BFGS iteration limit.
    tolerances : samplers.lbfgs.Tolerances

    Returns
    -------
    SinglePath
    """
    start, _, _ = find_initial_point(entry, dim, rng, init)
    path = lbfgs(_negative(entry), start, history_size, max_iters, tolerances)
    alpha, history = np.ones(dim), deque(maxlen=int(history_size))
    best, best_elbo, best_iter = None, -np.inf, 0
    for it in range(1, path.x.shape[0]):
        s, y = path.x[it] - path.x[it - 1], path.grad[it] - path.grad[it - 1]
        if s @ y > CURVATURE_EPS * (y @ y):
            alpha = update_diagonal(alpha, s, y)
            history.append((s, y))
        s_mat = np.array([p[0] for p in history]).T.reshape(dim, len(history))
        y_mat = np.array([p[1] for p in history]).T.reshape(dim, len(history))
        approx = local_normal(path.x[it], path.grad[it], s_mat, y_mat, alpha)
        if approx is None:
            continue
        elbo = _elbo(entry, approx, rng, num_elbo_draws)
        if elbo > best_elbo:
            best, best_elbo, best_iter = approx, elbo, it
    n_evals = path.n_evals + (path.x.shape[0] - 1) * num_elbo_draws
    if best is None:
        empty = np.zeros((0, dim))
        return SinglePath(empty, np.zeros(0), np.zeros(0), -np.inf, 0, path.x.shape[0] - 1,
                          n_evals, path.message, np.zeros(0))
    theta, log_q = sample_local_normal(best, rng.standard_normal((int(draws), dim)))
    return SinglePath(theta, log_densities(entry, theta), log_q, best_elbo, best_iter,
                      path.x.shape[0] - 1, n_evals + int(draws), path.message,
                      local_normal_variance(best))


def psis_log_weights(log_ratios):
    """Pareto-smoothed, normalized log importance weights and the Pareto k.

    Parameters
    ----------
    log_ratios : ndarray, shape (n,)
        ``log p - log q``; non-finite entries get weight 0 (``-inf``).

    Returns
    -------
    log_weights : ndarray, shape (n,)
    pareto_k : float
    """
    from arviz_stats.base import array_stats  # loads xarray machinery: only when used

    log_ratios = np.asarray(log_ratios, dtype=float)
    finite = np.isfinite(log_ratios)
    out = np.full(log_ratios.shape, -np.inf)
    if not finite.any():
        return out, np.inf
    ratios = log_ratios[finite]
    if np.ptp(ratios) <= 1e-12 * max(1.0, abs(ratios[0])):
        # An exact approximation (q equal to p up to a constant): equal
        # weights; the Pareto fit would divide by a zero tail spread.
        out[finite] = -np.log(ratios.size)
        return out, -np.inf
    # arviz_stats smooths the weights 1 / p of LOO: its argument is minus the log ratio.
    with np.errstate(divide="ignore", invalid="ignore"):
        smoothed, k = array_stats.psislw(-ratios)
    out[finite] = smoothed
    return out, float(k)


class PathfinderResult(NamedTuple):
    """Unconstrained output of :func:`run_pathfinder`.

    Attributes
    ----------
    draws : ndarray, shape (n, dim)
    lp, lq, log_weight : ndarray, shape (n,)
        Log density, log density under the approximation, and PSIS log
        weight of each draw within the pool of all paths' draws.
    path : ndarray of int, shape (n,)
        The path each draw came from.
    pareto_k : float
        Of the pooled importance weights.
    paths : list of SinglePath
    """

    draws: np.ndarray
    lp: np.ndarray
    lq: np.ndarray
    log_weight: np.ndarray
    path: np.ndarray
    pareto_k: float
    paths: list


def run_pathfinder(entry, dim, seed=0, num_paths=4, draws=1000, init=None, psis_resample=True,
                   **path_options):
    """Run ``num_paths`` paths and pool them (the paper's Algorithm 5).

    Parameters
    ----------
    entry : NumbaEntry
    dim, seed, num_paths, draws, init, psis_resample
        As in :func:`pathfinder`.
    **path_options
        ``history_size``, ``num_elbo_draws``, ``max_iters``, ``tolerances``
        of :func:`single_path`.

    Returns
    -------
    PathfinderResult

    Raises
    ------
    RuntimeError
        When no path found an approximation with a finite ELBO.
    """
    inits = per_chain_inits(init, num_paths, dim)
    paths = [single_path(entry, dim, np.random.default_rng([int(seed), k, 0x9A7]), inits[k],
                         draws, **path_options) for k in range(num_paths)]
    if not any(np.isfinite(p.elbo) for p in paths):
        raise RuntimeError(
            "pathfinder: no path found an approximation with a finite ELBO (every draw "
            "of every iterate left the support, or L-BFGS failed); paths stopped with: "
            + "; ".join(sorted({p.message for p in paths})))
    theta = np.concatenate([p.draws for p in paths])
    lp = np.concatenate([p.lp for p in paths])
    lq = np.concatenate([p.lq for p in paths])
    path = np.concatenate([np.full(p.draws.shape[0], k) for k, p in enumerate(paths)])
    log_weight, k_hat = psis_log_weights(lp - lq)
    if psis_resample and num_paths > 1:
        rng = np.random.default_rng([int(seed), 0x9A8])
        keep = rng.choice(theta.shape[0], size=int(draws), replace=True, p=np.exp(log_weight))
        theta, lp, lq, log_weight, path = theta[keep], lp[keep], lq[keep], log_weight[keep], \
            path[keep]
    return PathfinderResult(theta, lp, lq, log_weight, path, k_hat, paths)


def _check(num_paths, draws, history_size, num_elbo_draws, max_iters):
    for name, value, low in (("num_paths", num_paths, 1), ("draws", draws, 1),
                             ("history_size", history_size, 1),
                             ("num_elbo_draws", num_elbo_draws, 1), ("max_iters", max_iters, 1)):
        if not (isinstance(value, (int, np.integer)) and value >= low):
            raise ValueError(f"{name}={value!r}; must be an integer >= {low}")


def _run(log_density, seed, num_paths, draws, init, psis_resample, path_options):
    """:func:`run_pathfinder` with the log density's entry (numba or external)."""
    dim = dimension(log_density)
    with entry_for(log_density) as entry:
        return run_pathfinder(entry, dim, seed, num_paths, draws, init, psis_resample,
                              **path_options)


def pathfinder(model, num_paths=4, draws=1000, seed=0, init=None, history_size=5,
               num_elbo_draws=25, max_iters=1000, psis_resample=True, tolerances=Tolerances(),
               log_likelihood=True, log_likelihood_max_bytes=LOG_LIKELIHOOD_MAX_BYTES):
    """Approximate the posterior with (multi-path) Pathfinder.

    Parameters
    ----------
    model : LogDensity, model or external log density
    num_paths : int
        Independent paths (Stan's default 4); with more than one their
        draws are pooled by PSIS importance resampling.
    draws : int
        Draws per path, and draws returned: one path returns its draws as
        they are (Stan's single-path Pathfinder); several paths return
        ``draws`` resampled from the pool, or the whole pool
        (``num_paths * draws``) when ``psis_resample=False``.
    seed : int
    init : array_like, optional
        Unconstrained start, shape (dim,) or (num_paths, dim); default
        uniform(-2, 2) per coordinate, as :func:`samplers.nuts`.
    history_size : int
        L-BFGS history ``J``: Stan's default 5 (the paper used 6).
    num_elbo_draws : int
        Draws per ELBO estimate ``K`` (Stan's 25).
    max_iters : int
        L-BFGS iterations per path ``L``.
    psis_resample : bool
    tolerances : samplers.lbfgs.Tolerances
        L-BFGS convergence tests (Stan's defaults).
    log_likelihood : bool
        Add the ``log_likelihood`` group when the log density provides it.
    log_likelihood_max_bytes : float or None

    Returns
    -------
    xarray.DataTree
        ``posterior`` (one chain; constrained values by name), and
        ``sample_stats`` with ``lp`` (log density), ``lp_approx`` (log density
        under the approximation), ``log_weight`` (PSIS log weight within the
        pool) and ``path``; ``posterior.attrs`` hold ``pareto_k`` and each
        path's ``elbo``, ``best_iter``, ``n_iters`` and the total ``n_evals``.
        A :class:`SamplerWarning` when ``pareto_k > 0.7``.
    """
    _check(num_paths, draws, history_size, num_elbo_draws, max_iters)
    log_density = resolve(model)
    options = dict(history_size=history_size, num_elbo_draws=num_elbo_draws,
                   max_iters=max_iters, tolerances=tolerances)
    res = _run(log_density, seed, num_paths, draws, init, psis_resample, options)
    if res.pareto_k > PARETO_K_WARN:
        warnings.warn(f"pathfinder: Pareto k = {res.pareto_k:.2f} > {PARETO_K_WARN}: the "
                      "importance weights are unreliable and the approximation may be poor",
                      SamplerWarning, stacklevel=2)
    attrs = {"sampler": "pathfinder", "seed": int(seed), "num_paths": int(num_paths),
             "pareto_k": res.pareto_k, "elbo": [float(p.elbo) for p in res.paths],
             "best_iter": [int(p.best_iter) for p in res.paths],
             "n_iters": [int(p.n_iters) for p in res.paths],
             "n_evals": int(sum(p.n_evals for p in res.paths))}
    stats = {"lp": res.lp, "lp_approx": res.lq, "log_weight": res.log_weight, "path": res.path}
    return draws_datatree(log_density, res.draws, stats, attrs, log_likelihood,
                          log_likelihood_max_bytes)


class PathfinderInit(NamedTuple):
    """Where ``nuts(init="pathfinder")`` starts its chains (:func:`pathfinder_init`).

    Attributes
    ----------
    points : ndarray, shape (chains, dim)
        Unconstrained starting points.
    inv_metric : ndarray, shape (chains, dim)
        Each chain's initial diagonal inverse metric: the variances of the
        approximation its point was drawn from.
    n_evals : int
        Log-density evaluations Pathfinder spent (each a value and gradient).
    """

    points: np.ndarray
    inv_metric: np.ndarray
    n_evals: int


def pathfinder_init(model, chains, seed=0, num_paths=INIT_PATHS, draws=INIT_DRAWS,
                    num_elbo_draws=INIT_ELBO_DRAWS):
    """Starting points and initial metrics of ``chains`` chains from a cheap Pathfinder.

    ``chains`` distinct draws of the pooled paths are chosen by their PSIS
    weights, without replacement (with replacement only when fewer draws
    than chains have weight); each chain also gets the covariance diagonal
    of its draw's path as its initial inverse metric (Stan's convention:
    the posterior variances).  The defaults are cheaper than
    :func:`pathfinder`'s (:data:`INIT_PATHS`, :data:`INIT_DRAWS`,
    :data:`INIT_ELBO_DRAWS`): a start and a scale need not be as good as an
    approximation meant to replace the sampler.  Used by
    ``nuts(init="pathfinder")``.

    Returns
    -------
    PathfinderInit
    """
    log_density = resolve(model)
    res = _run(log_density, seed, num_paths, draws, None, False,
               {"num_elbo_draws": num_elbo_draws})
    weights = np.exp(res.log_weight)
    rng = np.random.default_rng([int(seed), 0x9A9])
    replace = np.count_nonzero(weights) < chains
    keep = rng.choice(res.draws.shape[0], size=int(chains), replace=replace, p=weights)
    inv_metric = np.array([res.paths[k].variance for k in res.path[keep]])
    # Positive in exact arithmetic (the covariance's Cholesky factor exists);
    # a rounding casualty falls back to the unit metric's entry.
    inv_metric[~(np.isfinite(inv_metric) & (inv_metric > 0.0))] = 1.0
    return PathfinderInit(np.ascontiguousarray(res.draws[keep]), inv_metric,
                          int(sum(p.n_evals for p in res.paths)))


def initial_points(model, chains, seed=0, num_paths=INIT_PATHS, draws=INIT_DRAWS):
    """The starting points of :func:`pathfinder_init` alone, shape (chains, dim)."""
    return pathfinder_init(model, chains, seed, num_paths, draws).points
