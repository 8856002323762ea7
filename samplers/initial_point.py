"""Initial points: uniform(-2, 2) on the unconstrained space, as in Stan."""

import numpy as np

from .external import raise_failure

#: Stan's default initialization radius and number of attempts.
INIT_RADIUS = 2.0
MAX_TRIES = 100


def evaluate(entry, theta):
    """Return ``(log density, gradient)`` through a numba entry (an external
    log density's exception is raised, not returned as ``-inf``)."""
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    if not theta.flags.writeable:  # the entry's one signature takes writable arrays
        theta = theta.copy()
    grad = np.zeros_like(theta)
    value = entry.function(theta, grad, entry.fdata, entry.idata)
    raise_failure(entry)
    return float(value), grad


def _is_usable(value, grad):
    return np.isfinite(value) and bool(np.all(np.isfinite(grad)))


def per_chain_inits(init, chains, dim):
    """Normalize ``init`` to a list of ``chains`` vectors (or Nones).

    Parameters
    ----------
    init : None, array_like of shape (dim,) or (chains, dim)
    chains, dim : int

    Returns
    -------
    list
    """
    if init is None:
        return [None] * chains
    arr = np.asarray(init, dtype=np.float64)
    if arr.shape == (dim,):
        return [arr.copy() for _ in range(chains)]
    if arr.shape == (chains, dim):
        return [row.copy() for row in arr]
    raise ValueError(f"init has shape {arr.shape}; expected ({dim},) or ({chains}, {dim})")


def find_initial_point(entry, dim, rng, init=None):
    """Return a starting ``(theta, log density, gradient)`` with finite values.

    Parameters
    ----------
    entry : NumbaEntry
    dim : int
    rng : numpy.random.Generator
    init : ndarray, optional
        A given start; it must have a finite log density and gradient.

    Raises
    ------
    ValueError
        When ``init`` is not usable.
    RuntimeError
        When 100 uniform(-2, 2) draws all fail.
    """
    if init is not None:
        value, grad = evaluate(entry, init)
        if not _is_usable(value, grad):
            raise ValueError(f"init={np.asarray(init).tolist()} gives log density {value} "
                             "or a non-finite gradient; both must be finite")
        return np.array(init, dtype=np.float64), value, grad
    for _ in range(MAX_TRIES):
        theta = rng.uniform(-INIT_RADIUS, INIT_RADIUS, size=dim)
        value, grad = evaluate(entry, theta)
        if _is_usable(value, grad):
            return theta, value, grad
    raise RuntimeError(
        f"no finite log density and gradient at {MAX_TRIES} uniform(-2, 2) "
        "initial points; give `init`"
    )
