"""An embedded-atom-style potential, F(rho) = rho^2 + rho^3 + rho^4 / 4 with
rho = sum(exp(-3 (x + 1))): the gradient through a reduction, written into a
preallocated array (``out=``, no allocation per call), against a hand-written
numba gradient.

Run: python examples/embedded_atom.py [--quick]
"""

import math

import numpy as np
from numba import njit

import logdens as ld
from common import arguments, median_time, table_and_chart


@njit(fastmath=True, error_model="numpy")
def hand_gradient(x, grad):
    """The same potential and its gradient by hand: dF/dx_i = -3 exp(-3 (x_i + 1)) F'(rho)."""
    rho = 0.0
    for i in range(x.size):
        grad[i] = math.exp(-3.0 * (x[i] + 1.0))
        rho += grad[i]
    slope = 2 * rho + 3 * rho ** 2 + rho ** 3
    for i in range(x.size):
        grad[i] *= -3.0 * slope
    return rho ** 2 + rho ** 3 + rho ** 4 / 4


args = arguments(__doc__.splitlines()[0])
rng = np.random.default_rng(args.seed)
sizes = [100, 1_000] if args.quick else [100, 1_000, 10_000, 100_000]
times = {"logdens out=": [], "hand-written": []}
for n in sizes:
    m = ld.Model()
    x = m.param("x", shape=n)
    rho = ld.sum(ld.exp(-3.0 * (x + 1.0)))
    m.potential("F", rho ** 2 + rho ** 3 + rho ** 4 / 4)
    density = m.compile()
    theta, out, hand = rng.normal(scale=0.3, size=n), np.empty(n), np.empty(n)
    lp = hand_gradient(theta, hand)
    assert np.isclose(density.log_density_gradient(theta, out=out)[0], lp, rtol=1e-12)
    np.testing.assert_allclose(out, hand, rtol=1e-12)
    times["logdens out="].append(median_time(lambda: density.log_density_gradient(theta, out=out)))
    times["hand-written"].append(median_time(lambda: hand_gradient(theta, hand)))
table_and_chart("F(sum(exp(-3 (x + 1)))): value and gradient", sizes, times, f"{args.out}/embedded_atom.png")
