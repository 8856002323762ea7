"""Far-tail points of constrained parameters: a finite log density has a finite gradient.

Issue 12, item 6. The mechanisms, each with points found by a sweep of
heavy-tailed u (Cauchy scaled by 1, 10, 100, 1000):

- a constrained value that underflows: x = exp(u) (or logistic(u), or an
  element of a positive_ordered vector or a simplex) subnormal or 0 for
  u < -708.4, where a kernel's partial c / x overflows and the chain rule
  gives inf * exp(u) = inf or inf * 0 = NaN. Fixed in the transforms: exp
  and logistic are floored at ``LOG_FLOOR`` (-700) with a derivative of 0
  below it (``test_floor_*``).
- a simplex entry z_k = logistic(y) that rounds to 1 (y > 37, not a far
  tail): the sticks after it are 0, and the reverse sweep's x_k / stick_k and
  jacobian / stick_k were 0 / 0 (``test_simplex_with_an_exhausted_stick``).
- a partial in x that overflows at a normal x while the value is finite and
  astronomically low (InverseGamma's b / x^2 below x = 1e-154, a Normal
  scale's z^2 / sigma), and gradients beyond the largest float (lp near
  -1.8e308). No finite partial in x exists there; the engine's gradient
  functions reject the point (``events.reject_nonfinite_gradient``).
"""

import numpy as np
import pytest

import logdens as ld
from engine_helpers import check_gradient, directional_fd
from logdens import event_transforms as events
from logdens.event_transforms import LOG_FLOOR, floored_exp, floored_logistic
from logdens.transforms import Interval, LowerBound, UpperBound


# ----- models ------------------------------------------------------------
def _prior(name, dist, shape=(), constraint=None):
    """A model of one parameter ``x`` with the prior ``dist``; ``name`` names the test case."""
    def build():
        m = ld.Model()
        m.param("x", dist, shape=shape, constraint=constraint)
        return m
    build.__name__ = name
    return build


def _upper_bound():
    """x < 0 with the potential 2 log(-x) + x: a Gamma(3, 1) on -x."""
    m = ld.Model()
    x = m.param("x", constraint=ld.less_than(0.0))
    m.potential("p", 2.0 * ld.log(-x) + x)
    return m


def _dirichlet(alpha=(0.5, 2.0, 1.0, 3.0)):
    """A simplex with the Dirichlet log density (up to its constant) as a potential."""
    m = ld.Model()
    x = m.param("x", shape=len(alpha), constraint=ld.simplex)
    m.potential("dirichlet", ld.sum((m.data("alpha", np.array(alpha)) - 1.0) * ld.log(x)))
    return m


def _simplex_linear():
    """A simplex under a linear potential: finite where some entries are 0."""
    m = ld.Model()
    x = m.param("x", shape=4, constraint=ld.simplex)
    m.potential("linear", ld.sum(m.data("c", np.array([1.0, -2.0, 0.5, 3.0])) * x))
    return m


def _scale():
    m = ld.Model()
    s = m.param("s", ld.HalfNormal(1.0))
    m.observe("y", ld.Normal(0.0, s), np.array([0.5, -1.0]))
    return m


def _eight_schools():
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5))
    tau = m.param("tau", ld.HalfCauchy(5))
    theta = m.param("theta", ld.Normal(mu, tau), shape=8)
    m.observe("y", ld.Normal(theta, np.array([15.0, 10, 16, 11, 9, 11, 10, 18])),
              np.array([28.0, 8, -3, 7, -1, 1, 18, 12]))
    return m


gamma = _prior("gamma", ld.Gamma(2.0, 1.0))
gamma_small_shape = _prior("gamma_small_shape", ld.Gamma(0.5, 1.0))
weibull = _prior("weibull", ld.Weibull(2.0, 1.0))
weibull_small_shape = _prior("weibull_small_shape", ld.Weibull(0.5, 1.0))
lognormal = _prior("lognormal", ld.LogNormal(0.0, 1.0))
lognormal_vector = _prior("lognormal_vector", ld.LogNormal(0.0, 1.0), 3)
beta = _prior("beta", ld.Beta(2.0, 2.0))
beta_small_shapes = _prior("beta_small_shapes", ld.Beta(0.5, 0.5))
beta_vector = _prior("beta_vector", ld.Beta(3.0, 0.7), 3)
positive_ordered_gamma = _prior("positive_ordered_gamma", ld.Gamma(2.0, 1.0), 4, ld.positive_ordered)
positive_ordered_normal = _prior("positive_ordered_normal", ld.Normal(0.0, 1.0), 4, ld.positive_ordered)
inverse_gamma = _prior("inverse_gamma", ld.InverseGamma(2.0, 1.0))
inverse_gamma_vector = _prior("inverse_gamma_vector", ld.InverseGamma(2.0, 1.0), 3)

_COMPILED = {}


def compiled(build):
    if build not in _COMPILED:
        _COMPILED[build] = build().compile()
    return _COMPILED[build]


def assert_finite_gradient(density, theta, **flags):
    lp, grad = density.log_density_gradient(np.asarray(theta, dtype=float), **flags)
    assert not np.isnan(lp)
    assert np.isfinite(lp), lp
    assert np.all(np.isfinite(grad)), (lp, grad)
    return lp, grad


# ----- the floor: values that would underflow ------------------------------
# Scalars: each was finite with an inf gradient before the floor (lognormal at
# -707.1: x is normal, but (log(x) - mu) / (sigma^2 x) = 707 / 1e-307 overflows),
# or -inf at -800 (x = 0), now the prior at exp(LOG_FLOOR) plus log|J|(u).
SCALARS = [(gamma, -744.08), (gamma, -720.0), (gamma_small_shape, -744.08),
           (weibull, -744.08), (weibull_small_shape, -740.87), (lognormal, -707.1),
           (lognormal, -744.08), (beta, -744.08), (beta_small_shapes, -740.87),
           (_upper_bound, -744.08), (gamma, -800.0), (beta, -1e4)]


@pytest.mark.parametrize("build, u", SCALARS, ids=lambda v: getattr(v, "__name__", repr(v)))
@pytest.mark.parametrize("jacobian", [True, False])
def test_floor_gives_the_log_jacobians_gradient(build, u, jacobian):
    """Below the floor x is constant: the gradient is d log|J| / du (1 for exp and,
    to rounding, for logistic), or 0 without the Jacobian; the value goes on from
    the floor along log|J|, so value and gradient agree."""
    density = compiled(build)
    lp, grad = assert_finite_gradient(density, [u], jacobian=jacobian)
    np.testing.assert_array_equal(grad, [1.0 if jacobian else 0.0])
    at_floor = density.log_density(np.array([LOG_FLOOR]), jacobian=jacobian)
    np.testing.assert_allclose(lp, at_floor + (u - LOG_FLOOR if jacobian else 0.0), rtol=1e-13)


# positive_ordered Gamma(2, 1): x_0 = exp(u_0) subnormal (the first two, inf
# before), and also exp(u_1) = 0 (the second: inf * 0 = NaN before). The third
# is the point (lp -9.0e283 there, on another model) with u_0 moved
# into the subnormal range.
ORDERED = [[-742.53466603, 30.62668152, 46.63869416, -538.30081889],
           [-715.39562799, -878.90235479, 121.14735672, -900.09269074],
           [-712.91, -17.2, 104.27, -221.85]]


@pytest.mark.parametrize("u", ORDERED)
@pytest.mark.parametrize("jacobian", [True, False])
def test_floor_positive_ordered(u, jacobian):
    """Gradient against the closed form: x_k = sum_{i<=k} exp(max(u_i, floor)),
    the Gamma(2, 1) partial 1 / x_j - 1, d/du_k = exp(u_k) sum_{j>=k} (1 / x_j - 1)
    above the floor, 0 below, plus 1 with the Jacobian."""
    density = compiled(positive_ordered_gamma)
    lp, grad = assert_finite_gradient(density, u, jacobian=jacobian)
    u = np.array(u)
    steps = np.exp(np.maximum(u, LOG_FLOOR))
    x = np.cumsum(steps)
    tails = np.cumsum((1.0 / x - 1.0)[::-1])[::-1]
    want = np.where(u < LOG_FLOOR, 0.0, steps * tails) + (1.0 if jacobian else 0.0)
    np.testing.assert_allclose(grad, want, rtol=1e-12)


# Dirichlet(0.5, 2, 1, 3) by stick-breaking: x_0 subnormal (inf before).
SIMPLEX = [[-725.39548822, -102.30801707, -236.66400949],
           [-742.58033016, 18.03875082, 7.24879072]]


@pytest.mark.parametrize("u", SIMPLEX)
@pytest.mark.parametrize("jacobian", [True, False])
def test_floor_simplex(u, jacobian):
    """z_0 is floored, so d lp / du_0 is the log-Jacobian's 1 - 2 z_0 = 1 alone;
    the other coordinates against a 5-point stencil with steps of 1e-3: the stick
    after z_1 = 1 - 3e-8 (the second point) is a difference, rounded to 4e-9 of
    itself, too coarse for smaller steps."""
    density = compiled(_dirichlet)
    lp, grad = assert_finite_gradient(density, u, jacobian=jacobian)
    assert grad[0] == (1.0 if jacobian else 0.0)
    for k in (1, 2):
        fd = directional_fd(lambda t: density.log_density(t, jacobian=jacobian), np.array(u),
                            0.1 * np.eye(3)[k])
        np.testing.assert_allclose(0.1 * grad[k], fd, rtol=1e-5, atol=1e-8)


Z0 = 1.0 / (1.0 + 3.0 * np.exp(-0.5))  # logistic(0.5 - log 3)


@pytest.mark.parametrize("u, want", [([40.0, 0.3, -0.2], [0.0, 0.0, 0.0]),
                                     ([0.5, 45.0, 1.0], [3.0 * Z0 * (1.0 - Z0), 0.0, 0.0])])
def test_simplex_with_an_exhausted_stick(u, want):
    """z_k = logistic(y) rounds to 1 for y > 37: the stick after it is 0, and so
    are the entries after it. The reverse sweep took z_k = x_k / stick_k = 0 / 0
    and jacobian / stick_k = 0 / 0: NaN, at a finite value without the Jacobian.
    Those entries are constant 0, so their coordinates get 0; the second point's
    first coordinate: lp = 3 z_0 - 2, d/du_0 = 3 z_0 (1 - z_0), z_0 = logistic(0.5 - log 3)."""
    lp, grad = assert_finite_gradient(compiled(_simplex_linear), u, jacobian=False)
    np.testing.assert_allclose(grad, want, rtol=1e-14)


def test_floored_helpers():
    assert floored_exp(-800.0) == (floored_exp(LOG_FLOOR)[0], 0.0)
    assert floored_exp(LOG_FLOOR)[0] > np.finfo(float).tiny  # a normal float
    assert floored_exp(-3.0) == (np.exp(-3.0), np.exp(-3.0))
    assert floored_logistic(-800.0) == (floored_logistic(LOG_FLOOR)[0], 0.0)
    assert np.isnan(floored_exp(np.nan)[0]) and np.isnan(floored_logistic(np.nan)[0])


def test_numpy_forward_floors_as_the_generated_code():
    """``constrain`` reports the value the kernels see."""
    floor = floored_exp(LOG_FLOOR)[0]
    assert LowerBound(0.0).forward(-800.0) == floor
    assert UpperBound(1.0).forward(-800.0) == 1.0 - floor
    assert Interval(0.0, 1.0).forward(-800.0) == floored_logistic(LOG_FLOOR)[0]
    assert np.isnan(LowerBound(0.0).forward(np.nan))
    density = compiled(gamma)
    assert density.param_constrain(np.array([-800.0]))[0] == floor


# ----- above the floor: gradients as before --------------------------------
@pytest.mark.parametrize("u", [-650.0, -30.0, -2.0, 0.3, 4.0])
def test_gamma_gradient_in_log_space(u):
    """Gamma(2, 1) on x = exp(u) with the Jacobian: lp = 2 u - exp(u), gradient 2 - exp(u)."""
    lp, grad = compiled(gamma).log_density_gradient(np.array([u]))
    np.testing.assert_allclose(lp, 2.0 * u - np.exp(u), rtol=1e-14)
    np.testing.assert_allclose(grad, [2.0 - np.exp(u)], rtol=1e-14)


@pytest.mark.parametrize("build", [lognormal, beta_small_shapes, _upper_bound, positive_ordered_gamma,
                                   _dirichlet, weibull_small_shape],
                         ids=lambda b: b.__name__)
def test_gradient_at_ordinary_points(build):
    density = compiled(build)
    rng = np.random.default_rng(5)
    for _ in range(3):
        theta = rng.normal(scale=1.5, size=density.dim)
        check_gradient(density, theta, rng)
        check_gradient(density, theta, rng, jacobian=False)


# ----- seeded sweeps -------------------------------------------------------
def heavy_tailed(dim, n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_cauchy((n, dim)) * rng.choice([1.0, 10.0, 100.0, 1000.0], (n, 1))


def assert_sweep(density, n=4000, seed=0):
    """Over heavy-tailed points, with and without the Jacobian: never NaN, and
    a finite log density has a finite gradient."""
    thetas = heavy_tailed(density.dim, n, seed)
    for jacobian in (True, False):
        lps, grads = density.log_density_gradient_batch(thetas, jacobian=jacobian)
        assert not np.any(np.isnan(lps))
        finite = np.isfinite(lps)
        assert finite.mean() > 0.5  # the sweep exercises finite values
        bad = finite & ~np.all(np.isfinite(grads), axis=1)
        assert not bad.any(), (np.sum(bad), thetas[bad][:3], lps[bad][:3], grads[bad][:3])


# Models whose far-tail failures were all underflows: the floor fixes them
# (before it, each had points with a finite value and an inf or NaN gradient).
FLOORED = [gamma, gamma_small_shape, weibull_small_shape, lognormal, lognormal_vector, beta,
           beta_small_shapes, beta_vector, _upper_bound, positive_ordered_gamma, _simplex_linear]


@pytest.mark.parametrize("build", FLOORED, ids=lambda b: b.__name__)
def test_sweep_of_floored_models(build):
    assert_sweep(compiled(build))


# Models with overflowing partials at a normal x (InverseGamma, a scale), a
# gradient beyond the largest float (Weibull(2), positive_ordered Normal, near
# lp = -1.8e308) and a simplex whose stick times a floored z_k underflows.
GUARDED = [inverse_gamma, inverse_gamma_vector, weibull, positive_ordered_normal,
           _dirichlet, _scale, _eight_schools]


@pytest.mark.parametrize("build", GUARDED, ids=lambda b: b.__name__)
def test_sweep_of_guarded_models(build):
    assert_sweep(compiled(build), n=20000)


# One point of each: (model, u); each had a finite value and an inf gradient.
REJECTED = [(inverse_gamma, [-446.74824575]),
            (_scale, [-345.93024752]),
            (weibull, [354.62639868]),
            (positive_ordered_normal, [354.47319204, -25.59529118, 86.13394731, 128.96749817]),
            (_dirichlet, [20.85518237, -892.26096672, 21.20287855])]


@pytest.mark.parametrize("build, u", REJECTED, ids=lambda v: getattr(v, "__name__", "u"))
def test_overflowing_gradient_rejects_the_point(build, u):
    """The gradient function says -inf; the value alone stays what it was
    (astronomically low, or for the simplex lp = -1.8e3 at u_1 = -892)."""
    density = compiled(build)
    lp, _ = density.log_density_gradient(np.array(u))
    assert lp == -np.inf
    assert -np.inf < density.log_density(np.array(u)) < -1e3


def test_guard_helper():
    assert events.reject_nonfinite_gradient(-3.0, np.array([1.0, 2.0])) == -3.0
    assert events.reject_nonfinite_gradient(-3.0, np.array([1.0, np.inf])) == -np.inf
    assert events.reject_nonfinite_gradient(-3.0, np.array([np.nan, 1.0])) == -np.inf
    assert events.reject_nonfinite_gradient(-np.inf, np.array([np.nan])) == -np.inf
