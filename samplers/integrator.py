"""The leapfrog (velocity Verlet) integrator.

Contract: one symplectic, time-reversible step of size ``eps`` (negative to
integrate backwards) that updates position, momentum, gradient and velocity
in place and returns the new log density.  In place rather than returning a
new state: a trajectory takes thousands of steps and allocating per step
would cost more than the cheap gradients this package produces.
"""


from ._jit import compiled
from .metric import velocity


@compiled
def leapfrog(f, fdata, idata, metric, eps, q, p, grad, v):
    """Take one leapfrog step in place and return the new log density.

    Parameters
    ----------
    f : numba function ``(theta, grad, fdata, idata) -> float``
        The model's numba entry; writes the gradient of the log density.
    fdata, idata : ndarray
        The model's data arrays.
    metric : Metric
    eps : float
        Step size; negative integrates backwards in time.
    q, p, grad, v : ndarray, shape (dim,)
        Position, momentum, gradient of the log density at ``q`` and
        velocity ``M^{-1} p`` on entry; all are overwritten.

    Returns
    -------
    float
        The log density at the new position (may be ``-inf``).
    """
    dim = q.shape[0]
    half = 0.5 * eps
    for i in range(dim):
        p[i] += half * grad[i]
    velocity(metric, p, v)
    for i in range(dim):
        q[i] += eps * v[i]
    log_density = f(q, grad, fdata, idata)
    for i in range(dim):
        p[i] += half * grad[i]
    velocity(metric, p, v)
    return log_density
