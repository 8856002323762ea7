"""Static HMC: a fixed number of leapfrog steps and a Metropolis correction.

Contract: :func:`hmc_transition` draws a momentum, integrates ``num_steps``
leapfrog steps and accepts the end point with probability
``min(1, exp(H0 - H))``.  Same state and diagnostics as NUTS.
"""

import math

from ._jit import inlined
from .integrator import leapfrog
from .metric import hamiltonian, sample_momentum, velocity
from .rng import uniform
from .trajectory import TransitionInfo


@inlined
def hmc_transition(f, fdata, idata, metric, eps, num_steps, max_energy_error,
                   rng, q, g, lp, work):
    """One static HMC transition; ``q`` and ``g`` are updated in place.

    Parameters are those of :func:`samplers.trajectory.nuts_transition` with
    ``num_steps`` (leapfrog steps per transition) instead of a tree depth.
    The uniform for the accept test is always drawn, so the random stream
    does not depend on the outcome.

    Returns
    -------
    lp : float
    info : TransitionInfo
        ``depth`` is 0; ``diverging`` when the energy error exceeds
        ``max_energy_error`` (the integration stops early then).  When
        ``work.interrupt`` is set the integration also stops early and the
        result is not a valid draw (callers drop it).
    """
    ends = work.ends
    qn, pn, gn, vn = ends[0, 1], ends[1, 1], ends[2, 1], ends[3, 1]
    for i in range(q.shape[0]):
        qn[i] = q[i]
        gn[i] = g[i]
    sample_momentum(metric, rng, pn)
    velocity(metric, pn, vn)
    h0 = hamiltonian(lp, pn, vn)
    h, lp_new, steps = h0, lp, 0
    for _ in range(num_steps):
        lp_new = leapfrog(f, fdata, idata, metric, eps, qn, pn, gn, vn)
        steps += 1
        h = hamiltonian(lp_new, pn, vn)
        if h - h0 > max_energy_error or work.interrupt[0] != 0:
            break
    diverging = h - h0 > max_energy_error
    accept = 1.0 if h < h0 else math.exp(h0 - h)
    energy = h0
    if uniform(rng) < accept and not diverging:
        for i in range(q.shape[0]):
            q[i] = qn[i]
            g[i] = gn[i]
        lp, energy = lp_new, h
    return lp, TransitionInfo(accept, steps, 0, diverging, energy, energy - h0)
