"""Leapfrog against the harmonic oscillator (energy, end state, reversibility)."""

import math

import numpy as np
import pytest

from logdens.samplers.integrator import leapfrog
from logdens.samplers.metric import Metric, hamiltonian, identity_metric, velocity
from test_samplers_targets import first_class, std_normal

FDATA, IDATA = np.zeros(1), np.zeros(1, dtype=np.int64)


def metric_with(inv_diag, dense):
    """A metric with diagonal M^{-1} = inv_diag, in diag or dense form."""
    inv_diag = np.asarray(inv_diag, float)
    if dense:
        return Metric(inv_diag.copy(), np.diag(inv_diag), np.diag(1 / np.sqrt(inv_diag)), True)
    m = identity_metric(inv_diag.size, False)
    m.inv_diag[:] = inv_diag
    return m


def integrate(metric, q0, p0, eps, n):
    """n leapfrog steps on the standard normal (H = q'q/2 + p'M^{-1}p/2)."""
    q, p = q0.copy(), p0.copy()
    g, v = -q.copy(), np.empty_like(q)
    velocity(metric, p, v)
    lp = -0.5 * q @ q
    energies = [hamiltonian(lp, p, v)]
    for _ in range(n):
        lp = leapfrog(first_class(std_normal), FDATA, IDATA, metric, eps, q, p, g, v)
        energies.append(hamiltonian(lp, p, v))
    return q, p, np.array(energies)


def exact(inv_diag, q0, p0, t):
    """q'' = -a q with dq/dt = a p: frequency sqrt(a)."""
    w = np.sqrt(inv_diag)
    q = q0 * np.cos(w * t) + inv_diag * p0 / w * np.sin(w * t)
    p = -q0 * w / inv_diag * np.sin(w * t) + p0 * np.cos(w * t)
    return q, p


@pytest.mark.parametrize("dense", [False, True])
def test_end_state_matches_exact_solution_with_second_order_error(dense):
    a = np.array([1.0, 4.0, 0.25])
    metric = metric_with(a, dense)
    q0, p0 = np.array([1.0, -0.5, 2.0]), np.array([0.3, 1.0, -1.0])
    errors = []
    for eps in (0.02, 0.01):
        n = int(round(2.0 / eps))
        q, p, _ = integrate(metric, q0, p0, eps, n)
        qe, pe = exact(a, q0, p0, n * eps)
        errors.append(np.max(np.abs(np.concatenate([q - qe, p - pe]))))
    assert errors[1] < 1e-3
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.1)  # O(eps^2)


def test_energy_error_is_bounded_without_drift():
    metric = metric_with([1.0, 2.0], False)
    q0, p0 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    eps = 0.1
    _, _, energies = integrate(metric, q0, p0, eps, 10000)
    err = energies - energies[0]
    assert np.max(np.abs(err)) < eps**2  # shadow Hamiltonian: bounded, O(eps^2)
    assert abs(err[-1000:].mean() - err[:1000].mean()) < 1e-3  # no drift


@pytest.mark.parametrize("dense", [False, True])
def test_reversible(dense):
    metric = metric_with([1.0, 3.0, 0.5], dense)
    rng = np.random.default_rng(0)
    q0, p0 = rng.normal(size=3), rng.normal(size=3)
    q, p, _ = integrate(metric, q0, p0, 0.3, 50)
    q2, p2, _ = integrate(metric, q, p, -0.3, 50)
    np.testing.assert_allclose(q2, q0, atol=1e-12)
    np.testing.assert_allclose(p2, p0, atol=1e-12)


def test_returns_minus_inf_outside_support():
    from test_samplers_targets import half_line
    metric = identity_metric(1, False)
    q, p, g, v = np.array([0.1]), np.array([-5.0]), np.array([-0.1]), np.array([-5.0])
    lp = leapfrog(half_line, FDATA, IDATA, metric, 0.5, q, p, g, v)
    assert lp == -math.inf
