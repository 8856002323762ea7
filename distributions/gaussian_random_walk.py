"""Gaussian random walk: a whole series x_0, ..., x_{T-1} as one event.

    x_0 ~ Normal(init_mu, init_sigma),   x_t - x_{t-1} ~ Normal(0, sigma)  (t = 1 .. T-1)

    log p(x) = -z_0^2 / 2 - log(init_sigma) - sum_{t>=1} z_t^2 / 2 - (T - 1) log(sigma)
               - T log(2 pi) / 2,
    z_0 = (x_0 - init_mu) / init_sigma,   z_t = (x_t - x_{t-1}) / sigma

Support: x a real vector of length T >= 1. Parameters: ``sigma`` > 0 (the
innovations' scale), ``init_mu`` real and ``init_sigma`` > 0 (the first
value's location and scale), each a scalar per series. PyMC:
``GaussianRandomWalk(mu=0, sigma, init_dist=Normal(init_mu, init_sigma))``;
scipy: ``norm(init_mu, init_sigma).logpdf(x[0]) + norm(0, sigma).logpdf(diff(x)).sum()``.
x is also ``MvNormal(init_mu, L L^T)`` with L_t0 = init_sigma and L_ti = sigma
for 1 <= i <= t, which the tests use as a second formula.

T is the value's length, as MvNormal's d is its mean's: a model's parameter
gets it from ``shape=`` (or ``dims=``), an observed series from its data. No
parameter fixes it, so ``event_shape()`` (draws, and a model's parameter
given no ``shape=``) needs ``steps=``, T = steps + 1 (PyMC's convention):
``GaussianRandomWalk(1.0, steps=99).rvs(size=10)`` gives 10 series of 100
values.

Partials, with g_t = z_t / sigma (t >= 1) and g_0 = z_0 / init_sigma:
d/dx_0 = -g_0 + g_1, d/dx_t = -g_t + g_{t+1} (g_T = 0), d/dinit_mu = g_0,
d/dinit_sigma = (z_0^2 - 1) / init_sigma, d/dsigma = (sum_{t>=1} z_t^2 - (T - 1)) / sigma:
one pass over the differences, no scratch.
"""

import math

from . import random, vmath
from .constraints import positive, real
from .frozen import InvalidArgumentError
from .jit import jitable, kernel
from .multivariate import MultivariateDistribution, is_integer
from .spec import Param, Spec, Summand
from .special import LOG_SQRT_2PI


@kernel
def scales_ok(sigma, init_sigma):
    """Whether both scales are positive and finite (NaN fails)."""
    return 0.0 < sigma < math.inf and 0.0 < init_sigma < math.inf


@kernel
def step_squares(x, sigma):
    """sum_{t>=1} ((x_t - x_{t-1}) / sigma)^2: inf or NaN when x is not finite."""
    sq = 0.0
    for t in range(1, x.size):
        z = (x[t] - x[t - 1]) / sigma
        sq += z * z
    return sq


@kernel
def add_step_partials(x, sigma, d_x):
    """Add the partials in x of -sum_{t>=1} z_t^2 / 2: with g_t = z_t / sigma, -g_t
    to x_t and g_t to x_{t-1}."""
    for t in range(1, x.size):
        g = (x[t] - x[t - 1]) / sigma / sigma  # two divisions: sigma^2 underflows below 1e-154
        d_x[t] -= g
        d_x[t - 1] += g


@jitable
def logpdf(x, sigma, init_mu, init_sigma):
    """Normalized log density of one series; ``-inf`` for T = 0 or a scale <= 0."""
    n = x.size
    if not (n >= 1 and scales_ok(sigma, init_sigma)):
        return -math.inf
    z0 = (x[0] - init_mu) / init_sigma
    sq = z0 * z0 + step_squares(x, sigma)
    if not math.isfinite(sq):
        return -math.inf
    return -0.5 * sq - vmath.log(init_sigma) - (n - 1) * vmath.log(sigma) - n * LOG_SQRT_2PI


@kernel
def logpdf_grad(x, sigma, init_mu, init_sigma, keep, work, d_x, d_sigma, d_init_mu, d_init_sigma):
    """Log density of one series; partials added into ``d_*`` (see ``distributions.spec``).

    The squares are summed before any partial is added, so that a value that
    overflows to ``-inf`` adds none; the differences are then taken again.
    """
    n = x.size
    if not (n >= 1 and scales_ok(sigma, init_sigma)):
        return -math.inf
    z0 = (x[0] - init_mu) / init_sigma if keep[0] else 0.0
    sq = step_squares(x, sigma) if keep[2] else 0.0
    if not math.isfinite(z0 * z0 + sq):
        return -math.inf
    lp = 0.0
    if keep[0]:
        lp -= 0.5 * z0 * z0
        g0 = z0 / init_sigma
        if d_x is not None:
            d_x[0] -= g0
        if d_init_mu is not None:
            d_init_mu[0] += g0
        if d_init_sigma is not None:
            d_init_sigma[0] += z0 * g0
    if keep[1]:
        lp -= vmath.log(init_sigma)
        if d_init_sigma is not None:
            d_init_sigma[0] -= 1.0 / init_sigma
    if keep[2]:
        lp -= 0.5 * sq
        if d_x is not None:
            add_step_partials(x, sigma, d_x)
        if d_sigma is not None:
            d_sigma[0] += sq / sigma
    if keep[3]:
        lp -= (n - 1) * vmath.log(sigma)
        if d_sigma is not None:
            d_sigma[0] -= (n - 1) / sigma
    if keep[4]:
        lp -= n * LOG_SQRT_2PI
    return lp


@jitable
def rvs(state, sigma, init_mu, init_sigma, out):
    """One series: x_0 = init_mu + init_sigma e_0, x_t = x_{t-1} + sigma e_t with
    e standard normal, the recursion that defines the walk (exact)."""
    random.fill_normal(state, out)
    out[0] = init_mu + init_sigma * out[0]
    for t in range(1, out.size):
        out[t] = out[t - 1] + sigma * out[t]


SPEC = Spec(
    name="GaussianRandomWalk",
    params=(Param("sigma", positive), Param("init_mu", real), Param("init_sigma", positive)),
    support=real,
    summands=(
        Summand(("x", "init_mu", "init_sigma"), "-(x_0 - init_mu)^2 / (2 init_sigma^2)"),
        Summand(("init_sigma",), "-log(init_sigma)"),
        Summand(("x", "sigma"), "-sum_{t>=1} (x_t - x_{t-1})^2 / (2 sigma^2)"),
        Summand(("sigma",), "-(T - 1) log(sigma)"),
        Summand((), "-T log(2 pi) / 2"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=(("t",), (), (), ()),
)


class SeriesBase(MultivariateDistribution):
    """What ``GaussianRandomWalk`` and ``AR`` share: the value is a series whose
    length T no parameter fixes. The kernels take T from the value; ``steps``
    (None, or T less the number of initial values: PyMC's convention) gives
    ``event_shape``, for draws and for a model's parameter given no ``shape=``."""

    def _set_steps(self, steps):
        """Keep ``steps`` (None or an integer >= 0), or raise naming it."""
        if steps is not None and not (is_integer(steps) and steps >= 0):
            raise InvalidArgumentError(f"{self.spec.name}: steps={steps!r}, must be an integer >= 0 (the "
                                       "number of values after the initial ones)")
        self.steps = None if steps is None else int(steps)

    def _initial(self):
        """How many leading values the initial distribution covers."""
        raise NotImplementedError

    def event_shape(self):
        """``(steps + the initial values,)``; without ``steps`` an error saying where
        T comes from."""
        if self.steps is None:
            raise InvalidArgumentError(
                f"{self.spec.name}: the series length T is the value's, not fixed by the parameters: "
                f"give the parameter shape=T (or dims=), or steps= (T = steps + {self._initial()})")
        return (self.steps + self._initial(),)

    def fixed_event_shape(self):
        return None if self.steps is None else self.event_shape()

    def _events(self, x):
        batch, lengths, arrays = super()._events(x)
        if self.steps is not None and lengths["t"] != self.event_shape()[0]:
            raise InvalidArgumentError(f"{self.spec.name}: x has series of length {lengths['t']} but "
                                       f"steps={self.steps} gives {self.event_shape()[0]}")
        return batch, lengths, arrays


class GaussianRandomWalk(SeriesBase):
    __doc__ = __doc__
    spec = SPEC

    def __init__(self, sigma, init_mu=0.0, init_sigma=1.0, steps=None):
        self._set_steps(steps)
        super().__init__(sigma, init_mu, init_sigma)

    def _initial(self):
        return 1
