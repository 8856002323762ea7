"""ChEES's leapfrog steps on a GPU: an iteration's trajectories stay on the device.

The batch loop of :mod:`samplers.chees` sends every chain's position to the
device and fetches the gradients back once per leapfrog step; on an H200
that round trip (about 0.4 ms) cost more than the gradients of 256 chains.
:class:`DeviceSteps` instead uploads the trajectories' start once per
iteration, queues every step's launches (the density's gradient stages and
one kernel for the kick of a step and the drift of the next) without
waiting for any, and fetches the ends once.  The host keeps what needs all
chains or their RNG streams: momenta, Metropolis, adaptation, the draws.

The arithmetic per chain is :func:`samplers.chees.drift` and
:func:`samplers.chees.kick` with the diagonal metric (``ld.chees`` refuses
``metric="low_rank"`` with a device's steps),
the energy from :func:`samplers.metric.hamiltonian` itself; a device that
fuses multiply-adds rounds differently from the CPU in the last bits.
"""

import math

from numba import cuda

from .metric import hamiltonian

#: Rows of the packed vectors: position, momentum, velocity, gradient.
Q, P, V, GRAD = range(4)
#: Columns of the packed per-chain scalars (flags as 0.0 / 1.0).
LP, H0, H, ALIVE, STEPS, N_SCALARS = range(6)
#: Threads per block of the per-chain kernels (fewer for fewer chains).
THREADS = 128

_energy = cuda.jit(device=True)(hamiltonian.py_func)


@cuda.jit(device=True)
def _drift(k, eps, inv_diag, vectors):
    """Chain ``k``: ``p += eps/2 grad``, ``v = M^{-1} p``, ``q += eps v``."""
    half = 0.5 * eps
    for i in range(inv_diag.shape[0]):
        vectors[P, k, i] += half * vectors[GRAD, k, i]
        vectors[V, k, i] = inv_diag[i] * vectors[P, k, i]
        vectors[Q, k, i] += eps * vectors[V, k, i]


@cuda.jit
def _first_drift(eps, inv_diag, vectors, scalars):
    """The first half kick and drift of every live chain."""
    k = cuda.grid(1)
    if k < scalars.shape[0] and scalars[k, ALIVE] != 0.0:
        _drift(k, eps, inv_diag, vectors)


@cuda.jit
def _kick(eps, max_energy_error, inv_diag, lps, grads, vectors, scalars, drift_next):
    """Every live chain takes its new gradient and the second half kick; one
    whose energy error exceeds ``max_energy_error`` stops there, the others
    drift into the next step when ``drift_next``."""
    k = cuda.grid(1)
    if k >= scalars.shape[0] or scalars[k, ALIVE] == 0.0:
        return
    half = 0.5 * eps
    for i in range(inv_diag.shape[0]):
        vectors[GRAD, k, i] = grads[k, i]
        vectors[P, k, i] += half * vectors[GRAD, k, i]
        vectors[V, k, i] = inv_diag[i] * vectors[P, k, i]
    scalars[k, LP] = lps[k]
    h = _energy(lps[k], vectors[P, k], vectors[V, k])
    scalars[k, H] = h
    scalars[k, STEPS] += 1.0
    if h - scalars[k, H0] > max_energy_error:
        scalars[k, ALIVE] = 0.0
    elif drift_next:
        _drift(k, eps, inv_diag, vectors)


class DeviceSteps:
    """``steps(metric, eps, max_energy_error, prop, n, interrupt)`` for
    :func:`samplers.chees.chees` on a density with ``device_gradients``
    (``logdens.cuda_density``): ``n`` leapfrog steps of every chain of
    ``prop`` on the device; False when interrupted (checked once the
    iteration's steps are done).

    The trajectories' vectors (4, chains, dim), their scalars (chains,
    :data:`N_SCALARS`) and the inverse metric travel as one buffer each way:
    with a copy per array (five), the fixed cost of an iteration was 1.4 ms
    on an H200, more than seven steps of 256 chains.
    """

    def __init__(self, density, chains, dim):
        self.gradients = density.device_gradients
        sizes = (4 * chains * dim, chains * N_SCALARS, dim)
        self.device = cuda.device_array(sum(sizes))
        self.host = cuda.pinned_array(sum(sizes))
        (self.vectors, self.scalars, self.inv_diag), (self.host_vectors, self.host_scalars, self.host_inv_diag) = (
            _split(flat, sizes, ((4, chains, dim), (chains, N_SCALARS), (dim,))) for flat in (self.device, self.host))
        threads = min(THREADS, chains)
        launch = (math.ceil(chains / threads), threads)
        self.first_drift, self.kick = _first_drift[launch], _kick[launch]
        self.positions = self.vectors[Q]

    def __call__(self, metric, eps, max_energy_error, prop, n, interrupt):
        self._upload(metric, prop)
        self.first_drift(eps, self.inv_diag, self.vectors, self.scalars)
        for step in range(n):
            lps, grads = self.gradients(self.positions)
            self.kick(eps, max_energy_error, self.inv_diag, lps, grads, self.vectors, self.scalars,
                      step < n - 1)
        self._download(prop)
        return interrupt[0] == 0

    def _upload(self, metric, prop):
        hv, hs = self.host_vectors, self.host_scalars
        hv[Q], hv[P], hv[V], hv[GRAD] = prop.q, prop.p, prop.v, prop.grad
        hs[:, LP], hs[:, H0], hs[:, H], hs[:, ALIVE], hs[:, STEPS] = (
            prop.lp, prop.h0, prop.h, prop.alive, prop.steps)
        self.host_inv_diag[:] = metric.inv_diag
        self.device.copy_to_device(self.host)

    def _download(self, prop):
        self.device.copy_to_host(self.host)
        hv, hs = self.host_vectors, self.host_scalars
        prop.q[:], prop.p[:], prop.v[:], prop.grad[:] = hv[Q], hv[P], hv[V], hv[GRAD]
        prop.lp[:], prop.h[:] = hs[:, LP], hs[:, H]
        prop.alive[:], prop.steps[:] = hs[:, ALIVE] != 0.0, hs[:, STEPS]


def _split(flat, sizes, shapes):
    """Consecutive views of the 1-D array ``flat`` (host or device), of ``sizes`` and ``shapes``."""
    views, start = [], 0
    for size, shape in zip(sizes, shapes):
        views.append(flat[start:start + size].reshape(shape))
        start += size
    return views
