"""Autoregressive process of order K: a whole series x_0, ..., x_{T-1} as one event.

    x_t ~ Normal(0, init_sigma)                          t < K
    x_t ~ Normal(sum_{k=1..K} rho_k x_{t-k}, sigma)      t >= K

    log p(x) = -sum_{t<m} x_t^2 / (2 init_sigma^2) - m log(init_sigma)
               - sum_{t>=K} e_t^2 / (2 sigma^2) - (T - m) log(sigma) - T log(2 pi) / 2,
    e_t = x_t - sum_k rho_k x_{t-k},   m = min(K, T)

Support: x a real vector of length T >= 1 (a series no longer than K is all
initial values). Parameters: ``rho`` real, a vector of the K >= 1
coefficients (a number or a scalar expression for K = 1), rho_1 multiplying x_{t-1};
``sigma`` > 0, the innovations' scale; ``init_sigma`` > 0, the scale of
the K initial values, i.i.d. around 0. No stationarity constraint is put on
rho (as in PyMC): for an explosive rho (|rho_1| >= 1 for K = 1) the
density is still proper; a prior on rho decides. PyMC: ``AR(rho, sigma,
init_dist=Normal.dist(0, init_sigma), constant=False)``; scipy:
``norm(0, init_sigma).logpdf(x[:K]).sum() + norm(0, sigma).logpdf(e).sum()``.
With B unit lower triangular (B_tt = 1, B_{t,t-k} = -rho_k for t >= K),
B x is the vector of initial values and innovations, det B = 1, so x is
``MvNormal(0, B^-1 D^2 B^-T)`` (D the scales): the tests' second formula.

T is the value's length, as for ``GaussianRandomWalk`` (which says why):
``event_shape()`` (draws, a model's parameter given no ``shape=``) needs
``steps=``, T = steps + K (PyMC's convention).

Partials, with g_t = e_t / sigma^2 for K <= t < T and 0 elsewhere:
d/dx_t = -[t < K] x_t / init_sigma^2 - g_t + sum_k rho_k g_{t+k},
d/drho_k = sum_{t>=K} g_t x_{t-k}, d/dsigma = (sum_t e_t^2 / sigma^2 - (T - m)) / sigma,
d/dinit_sigma = (sum_{t<m} x_t^2 / init_sigma^2 - m) / init_sigma:
O(T K), one pass for the innovations e_t / sigma (kept in ``work``) and
one for the partials.
"""

import math

import numpy as np

from . import random, vmath
from .constraints import positive, real
from .frozen import InvalidArgumentError, is_numeric
from .gaussian_random_walk import SeriesBase, scales_ok
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from .special import LOG_SQRT_2PI


@kernel
def initial_squares(x, m, init_sigma):
    """sum_{t<m} (x_t / init_sigma)^2."""
    sq = 0.0
    for t in range(m):
        z = x[t] / init_sigma
        sq += z * z
    return sq


@kernel
def innovations(x, rho, sigma, z):
    """z_t = (x_t - sum_k rho_k x_{t-k}) / sigma into ``z[t]`` for K <= t < T;
    returns sum z_t^2 (inf or NaN when x or rho is not finite)."""
    order = rho.size
    sq = 0.0
    for t in range(order, x.size):
        acc = x[t]
        for k in range(order):
            acc -= rho[k] * x[t - 1 - k]
        z[t] = acc / sigma
        sq += z[t] * z[t]
    return sq


@jitable
def logpdf(x, rho, sigma, init_sigma):
    """Normalized log density of one series; ``-inf`` for T = 0 or a scale <= 0."""
    n = x.size
    if not (n >= 1 and scales_ok(sigma, init_sigma)):
        return -math.inf
    m = min(rho.size, n)
    sq = initial_squares(x, m, init_sigma) + innovations(x, rho, sigma, np.empty(n))
    if not math.isfinite(sq):
        return -math.inf
    return -0.5 * sq - m * vmath.log(init_sigma) - (n - m) * vmath.log(sigma) - n * LOG_SQRT_2PI


@kernel
def add_innovation_partials(x, rho, sigma, z, d_x, d_rho):
    """Add the partials of -sum_{t>=K} z_t^2 / 2 in x and rho: with g_t = z_t / sigma,
    -g_t to x_t, rho_k g_t to x_{t-k} and g_t x_{t-k} to rho_k."""
    order = rho.size
    for t in range(order, x.size):
        g = z[t] / sigma
        if d_x is not None:
            d_x[t] -= g
            for k in range(order):
                d_x[t - 1 - k] += rho[k] * g
        if d_rho is not None:
            for k in range(order):
                d_rho[k] += g * x[t - 1 - k]


@kernel
def logpdf_grad(x, rho, sigma, init_sigma, keep, work, d_x, d_rho, d_sigma, d_init_sigma):
    """Log density of one series; partials added into ``d_*`` (see ``distributions.spec``).

    The innovations go into ``work`` (T floats) and both sums of squares are
    taken before any partial is added: a value that overflows adds none.
    """
    n = x.size
    if not (n >= 1 and scales_ok(sigma, init_sigma)):
        return -math.inf
    m = min(rho.size, n)
    init_sq = initial_squares(x, m, init_sigma) if keep[0] else 0.0
    sq = innovations(x, rho, sigma, work) if keep[2] else 0.0
    if not math.isfinite(init_sq + sq):
        return -math.inf
    lp = 0.0
    if keep[0]:
        lp -= 0.5 * init_sq
        if d_x is not None:
            for t in range(m):
                d_x[t] -= x[t] / init_sigma / init_sigma
        if d_init_sigma is not None:
            d_init_sigma[0] += init_sq / init_sigma
    if keep[1]:
        lp -= m * vmath.log(init_sigma)
        if d_init_sigma is not None:
            d_init_sigma[0] -= m / init_sigma
    if keep[2]:
        lp -= 0.5 * sq
        if d_x is not None or d_rho is not None:
            add_innovation_partials(x, rho, sigma, work, d_x, d_rho)
        if d_sigma is not None:
            d_sigma[0] += sq / sigma
    if keep[3]:
        lp -= (n - m) * vmath.log(sigma)
        if d_sigma is not None:
            d_sigma[0] -= (n - m) / sigma
    if keep[4]:
        lp -= n * LOG_SQRT_2PI
    return lp


@jitable
def rvs(state, rho, sigma, init_sigma, out):
    """One series by the recursion that defines it (exact): x_t = init_sigma e_t
    for t < K, then x_t = sum_k rho_k x_{t-k} + sigma e_t, e standard normal;
    ``out[t]`` holds e_t until step t overwrites it, reading only x before t."""
    random.fill_normal(state, out)
    order = rho.size
    for t in range(out.size):
        if t < order:
            out[t] *= init_sigma
        else:
            acc = sigma * out[t]
            for k in range(order):
                acc += rho[k] * out[t - 1 - k]
            out[t] = acc


SPEC = Spec(
    name="AR",
    params=(Param("rho", real), Param("sigma", positive), Param("init_sigma", positive)),
    support=real,
    summands=(
        Summand(("x", "init_sigma"), "-sum_{t<K} x_t^2 / (2 init_sigma^2)"),
        Summand(("init_sigma",), "-min(K, T) log(init_sigma)"),
        Summand(("x", "rho", "sigma"), "-sum_{t>=K} (x_t - sum_k rho_k x_{t-k})^2 / (2 sigma^2)"),
        Summand(("sigma",), "-(T - min(K, T)) log(sigma)"),
        Summand((), "-T log(2 pi) / 2"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=(("t",), ("k",), (), ()),
    work=lambda lengths: lengths["t"],
)


class AR(SeriesBase):
    __doc__ = __doc__
    spec = SPEC

    def __init__(self, rho, sigma, init_sigma=1.0, steps=None):
        if is_numeric(rho) and np.ndim(rho) == 0:
            rho = np.reshape(np.asarray(rho, dtype=float), (1,))  # AR(1) from a number
        elif getattr(rho, "shape", None) == () and hasattr(rho, "reshape"):
            rho = rho.reshape(1)  # AR(1) from a scalar model expression, as from a number
        self._set_steps(steps)
        super().__init__(rho, sigma, init_sigma)

    def _validate_params(self):
        # rho's length is the order K, so its shape is checked for model expressions too
        # (a list of expressions has none: the model says what is wrong with it)
        shape = getattr(self.params["rho"], "shape", None)
        if shape is not None and shape[-1] == 0:
            raise InvalidArgumentError(f"AR: rho has shape {shape}; it needs at least one coefficient "
                                       "(K >= 1)")
        super()._validate_params()

    def _initial(self):
        return self.params["rho"].shape[-1]
