"""L-BFGS that keeps its path: every iterate, objective and gradient.

:func:`samplers.optimize.find_map` uses scipy's L-BFGS-B, which hides its
iterates and its (s, y) pairs; Pathfinder needs both.  This is a plain
L-BFGS (Nocedal & Wright 2006, Algorithm 7.4 and 7.5) with a strong-Wolfe
line search (their Algorithms 3.5 and 3.6, cubic interpolation), minimizing
``fun(x) -> (f, gradient)``.  A non-finite ``f`` (a point outside the
support) is treated as a failed sufficient-decrease test, so the line search
shrinks the step.  Convergence tests and their defaults are those of Stan's
``optimize`` and ``pathfinder`` (``tol_obj``, ``tol_rel_obj``, ``tol_grad``,
``tol_rel_grad``, ``tol_param``); relative tolerances are in machine epsilons,
as in Stan.
"""

from collections import deque
from typing import NamedTuple

import numpy as np

EPS = np.finfo(float).eps
#: Sufficient-decrease and curvature constants of the strong Wolfe conditions
#: (Nocedal & Wright's usual quasi-Newton choice).
C1, C2 = 1e-4, 0.9
#: Objective and gradient evaluations allowed per line search.
MAX_LINE_EVALS = 30
#: A pair enters the history only if s'y > CURVATURE_EPS * y'y (Stan's
#: pathfinder rejects y'y / s'y > 1e12): the inverse-Hessian estimate stays
#: positive definite and bounded.
CURVATURE_EPS = 1e-12


class LineSearchResult(NamedTuple):
    """Result of :func:`wolfe_line_search`.

    Attributes
    ----------
    step : float
        Accepted step length (0 when none decreased the objective).
    f : float
    grad : ndarray
        Objective and gradient at ``x + step * direction``.
    n_evals : int
    wolfe : bool
        Both strong Wolfe conditions hold at ``step``.
    """

    step: float
    f: float
    grad: np.ndarray
    n_evals: int
    wolfe: bool


class LbfgsPath(NamedTuple):
    """The optimization path of :func:`lbfgs`.

    Attributes
    ----------
    x : ndarray, shape (n_iter + 1, dim)
        Iterates, the start first.
    f : ndarray, shape (n_iter + 1,)
    grad : ndarray, shape (n_iter + 1, dim)
    n_evals : int
        Objective evaluations, the start included.
    converged : bool
        A convergence test passed (not the iteration limit or a failed line
        search).
    message : str
        Which test stopped the run.
    """

    x: np.ndarray
    f: np.ndarray
    grad: np.ndarray
    n_evals: int
    converged: bool
    message: str


def _cubic_minimizer(a, fa, da, b, fb, db):
    """Minimizer of the cubic through (a, fa, da) and (b, fb, db), or NaN
    (Nocedal & Wright eq. 3.59)."""
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    disc = d1 * d1 - da * db
    if not np.isfinite(disc) or disc < 0.0:
        return np.nan
    d2 = np.copysign(np.sqrt(disc), b - a)
    return b - (b - a) * (db + d2 - d1) / (db - da + 2.0 * d2)


def _trial(lo, hi):
    """Next trial step in the bracket between ``lo`` and ``hi`` (tuples
    ``(step, f, slope)``): the cubic's minimizer when it lies well inside,
    else the midpoint."""
    a, b = lo[0], hi[0]
    width = abs(b - a)
    trial = np.nan
    if np.isfinite(lo[1]) and np.isfinite(hi[1]):
        trial = _cubic_minimizer(*lo, *hi)
    if not np.isfinite(trial) or abs(trial - a) < 0.1 * width or abs(trial - b) < 0.1 * width \
            or (trial - a) * (trial - b) > 0.0:
        trial = 0.5 * (a + b)
    return trial


def wolfe_line_search(fun, x, f0, g0, direction, step=1.0, max_evals=MAX_LINE_EVALS):
    """Find a step satisfying the strong Wolfe conditions along ``direction``.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (f, gradient)``; ``f`` may be ``+inf`` (outside the domain).
    x, direction : ndarray
        ``direction`` must be a descent direction (``g0 @ direction < 0``).
    f0 : float
    g0 : ndarray
        Objective and gradient at ``x``.
    step : float
        First trial step.
    max_evals : int

    Returns
    -------
    LineSearchResult
        When the evaluations run out, the lowest point found with sufficient
        decrease (``wolfe=False``), or ``step=0`` when there is none.
    """
    slope0 = float(g0 @ direction)
    prev = (0.0, f0, slope0)
    best = LineSearchResult(0.0, f0, g0, 0, False)
    lo = hi = None
    for n in range(1, max_evals + 1):
        f, g = fun(x + step * direction)
        slope = float(g @ direction) if np.isfinite(f) else np.nan
        point = (step, f, slope)
        decrease = np.isfinite(f) and f <= f0 + C1 * step * slope0
        if decrease and f < best.f:
            best = LineSearchResult(step, f, g, n, False)
        if lo is None:  # bracketing phase (Algorithm 3.5)
            if not decrease or (n > 1 and f >= prev[1]):
                lo, hi = prev, point
            elif abs(slope) <= -C2 * slope0:
                return LineSearchResult(step, f, g, n, True)
            elif slope >= 0.0:
                lo, hi = point, prev
            else:
                prev, step = point, 2.0 * step
                continue
        else:  # zoom phase (Algorithm 3.6)
            if not decrease or f >= lo[1]:
                hi = point
            elif abs(slope) <= -C2 * slope0:
                return LineSearchResult(step, f, g, n, True)
            else:
                if slope * (hi[0] - lo[0]) >= 0.0:
                    hi = lo
                lo = point
        step = _trial(lo, hi)
    return best._replace(n_evals=max_evals)


def two_loop(grad, pairs):
    """``H grad`` for the L-BFGS inverse-Hessian estimate ``H`` of ``pairs``.

    The two-loop recursion (Nocedal & Wright, Algorithm 7.4) with the
    initial matrix ``(s'y / y'y) I`` of the newest pair (eq. 7.20).

    Parameters
    ----------
    grad : ndarray
    pairs : sequence of (s, y)
        Oldest first; each with ``s'y > 0``.

    Returns
    -------
    ndarray
    """
    q = np.array(grad, dtype=float)
    if not pairs:
        return q
    coefficients = []
    for s, y in reversed(pairs):
        rho = 1.0 / (s @ y)
        a = rho * (s @ q)
        q -= a * y
        coefficients.append((rho, a))
    s, y = pairs[-1]
    r = q * ((s @ y) / (y @ y))
    for (s, y), (rho, a) in zip(pairs, reversed(coefficients)):
        r += s * (a - rho * (y @ r))
    return r


class Tolerances(NamedTuple):
    """Stan's L-BFGS convergence tolerances (``tol_rel_*`` in machine epsilons)."""

    tol_obj: float = 1e-12
    tol_rel_obj: float = 1e4
    tol_grad: float = 1e-8
    tol_rel_grad: float = 1e7
    tol_param: float = 1e-8


def _converged(f_old, f, grad, s, pairs, tol):
    """The message of the first convergence test that passes, else ''."""
    if abs(f_old - f) < tol.tol_obj:
        return "converged: absolute change in objective below tol_obj"
    if abs(f_old - f) / max(abs(f_old), abs(f), 1.0) < tol.tol_rel_obj * EPS:
        return "converged: relative change in objective below tol_rel_obj"
    if np.linalg.norm(grad) < tol.tol_grad:
        return "converged: gradient norm below tol_grad"
    if abs(grad @ two_loop(grad, pairs)) / max(abs(f), 1.0) < tol.tol_rel_grad * EPS:
        return "converged: relative gradient below tol_rel_grad"
    if np.linalg.norm(s) < tol.tol_param:
        return "converged: parameter change below tol_param"
    return ""


def lbfgs(fun, x0, history_size=5, max_iters=1000, tolerances=Tolerances()):
    """Minimize ``fun`` with L-BFGS, recording every iterate.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (f, gradient)``; ``f`` is finite at ``x0``.
    x0 : array_like, shape (dim,)
    history_size : int
        Pairs (s, y) kept (Stan's and Pathfinder's ``J``).
    max_iters : int
    tolerances : Tolerances

    Returns
    -------
    LbfgsPath
        A failed line search ends the run, keeping the path so far.

    Raises
    ------
    ValueError
        When ``fun(x0)`` is not finite.
    """
    x = np.array(x0, dtype=float)
    f, g = fun(x)
    g = np.array(g, dtype=float)
    if not (np.isfinite(f) and np.all(np.isfinite(g))):
        raise ValueError(f"lbfgs: objective {f} or its gradient is not finite at x0={x.tolist()}")
    xs, fs, gs = [x], [f], [g]
    pairs = deque(maxlen=int(history_size))
    n_evals, converged, message = 1, False, f"reached max_iters={max_iters}"
    for _ in range(int(max_iters)):
        direction = -two_loop(g, pairs)
        # First step (or after a reset): a unit-length move along -g.
        step = 1.0 if pairs else min(1.0, 1.0 / max(np.linalg.norm(g), EPS))
        ls = wolfe_line_search(fun, x, f, g, direction, step)
        n_evals += ls.n_evals
        if ls.step == 0.0:
            message = "line search found no lower point"
            break
        s = ls.step * direction
        x_new, g_new = x + s, np.array(ls.grad, dtype=float)
        y = g_new - g
        if s @ y > CURVATURE_EPS * (y @ y):
            pairs.append((s, y))
        f_old, x, f, g = f, x_new, float(ls.f), g_new
        xs.append(x), fs.append(f), gs.append(g)
        message = _converged(f_old, f, g, s, pairs, tolerances)
        if message:
            converged = True
            break
    else:
        message = f"reached max_iters={max_iters}"
    return LbfgsPath(np.array(xs), np.array(fs), np.array(gs), n_evals, converged, message)
