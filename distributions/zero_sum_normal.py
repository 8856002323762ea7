"""Zero-sum normal: a vector x_1, ..., x_n whose entries sum to zero, normal
with scale ``sigma`` on that (n - 1)-dimensional subspace (PyMC's
``ZeroSumNormal``, Stan's ``sum_to_zero_vector`` with a normal prior).

    log p(x) = -sum_i x_i^2 / (2 sigma^2) - (n - 1) log(sigma) - (n - 1) log(2 pi) / 2

the density of N(0, sigma^2 I) in orthonormal coordinates u of the subspace
(|x| = |u|): what a hierarchical model's effects need, where a Normal prior
on a sum-to-zero vector would count n scale terms for n - 1 free entries and
bias ``sigma``. Each entry's marginal variance is sigma^2 (n - 1) / n.

Support: vectors of length n >= 1 that sum to zero (to 1e-8 of sum |x_i|:
rounding); a model's parameter gets the isometric sum-to-zero transform,
whose Jacobian is 1. Parameter: ``sigma`` > 0, a scalar per vector. n is the
value's length; ``event_shape()`` (draws, and a model's parameter given no
``shape=``) needs ``n=``. scipy: ``norm(0, sigma).logpdf(x).sum() +
log(sigma) + log(2 pi) / 2``.

Partials: d/dx_i = -x_i / sigma^2, d/dsigma = (sum x_i^2 / sigma^2 - (n - 1)) / sigma.
"""

import math

from . import random, vmath
from .constraints import positive, sum_to_zero
from .frozen import InvalidArgumentError
from .jit import jitable, kernel
from .multivariate import MultivariateDistribution, is_integer
from .spec import Param, Spec, Summand
from .special import LOG_SQRT_2PI

#: How far from zero a value's sum may be, relative to sum |x_i|: the
#: transform's rounding is about n eps of it.
SUM_TOLERANCE = 1e-8


@kernel
def squares(x, sigma):
    """sum (x_i / sigma)^2, or NaN for a point outside the density's domain: no
    entries, sigma not positive and finite, entries that do not sum to zero or
    are not finite."""
    if not (x.size >= 1 and 0.0 < sigma < math.inf):
        return math.nan
    sq, total, size = 0.0, 0.0, 0.0
    for i in range(x.size):
        z = x[i] / sigma
        sq += z * z
        total += x[i]
        size += abs(x[i])
    return sq if abs(total) <= SUM_TOLERANCE * size else math.nan


@jitable
def logpdf(x, sigma):
    """Normalized log density of one vector; ``-inf`` off the support or for sigma <= 0."""
    sq = squares(x, sigma)
    if not math.isfinite(sq):
        return -math.inf
    return -0.5 * sq - (x.size - 1) * (vmath.log(sigma) + LOG_SQRT_2PI)


@kernel
def logpdf_grad(x, sigma, keep, work, d_x, d_sigma):
    """Log density of one vector; partials added into ``d_*`` (see ``distributions.spec``)."""
    sq = squares(x, sigma)
    if not math.isfinite(sq):
        return -math.inf
    n, lp = x.size, 0.0
    if keep[0]:
        lp -= 0.5 * sq
        if d_x is not None:
            for i in range(n):
                d_x[i] -= x[i] / sigma / sigma  # two divisions: sigma^2 underflows below 1e-154
        if d_sigma is not None:
            d_sigma[0] += sq / sigma
    if keep[1]:
        lp -= (n - 1) * vmath.log(sigma)
        if d_sigma is not None:
            d_sigma[0] -= (n - 1) / sigma
    if keep[2]:
        lp -= (n - 1) * LOG_SQRT_2PI
    return lp


@jitable
def rvs(state, sigma, out):
    """One vector: standard normals less their mean (the projection onto the
    subspace of a standard normal vector is standard normal there), times sigma."""
    random.fill_normal(state, out)
    mean = 0.0
    for i in range(out.size):
        mean += out[i]
    mean /= out.size
    for i in range(out.size):
        out[i] = sigma * (out[i] - mean)


SPEC = Spec(
    name="ZeroSumNormal",
    params=(Param("sigma", positive),),
    support=sum_to_zero,
    summands=(
        Summand(("x", "sigma"), "-sum_i x_i^2 / (2 sigma^2)"),
        Summand(("sigma",), "-(n - 1) log(sigma)"),
        Summand((), "-(n - 1) log(2 pi) / 2"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=(("n",), ()),
)


class ZeroSumNormal(MultivariateDistribution):
    __doc__ = __doc__
    spec = SPEC

    def __init__(self, sigma=1.0, n=None):
        if n is not None and not (is_integer(n) and n >= 1):
            raise InvalidArgumentError(f"ZeroSumNormal: n={n!r}, must be an integer >= 1 (the vector's length)")
        self.n = None if n is None else int(n)
        super().__init__(sigma)

    def event_shape(self):
        """``(n,)``; without ``n`` an error saying where the length comes from."""
        if self.n is None:
            raise InvalidArgumentError("ZeroSumNormal: the length n is the value's, not fixed by sigma: give "
                                       "the parameter shape=n (or dims=), or n=")
        return (self.n,)

    def fixed_event_shape(self):
        return None if self.n is None else self.event_shape()
