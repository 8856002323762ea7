"""LKJ distribution of the Cholesky factor of a correlation matrix.

    log p(L | eta) = sum_{i=1}^{d-1} (d - i - 1 + 2 (eta - 1)) log L_ii + log c_d(eta)
    log c_d(eta) = sum_{k=1}^{d-1} (d - k) [lgamma(b_k + 1/2) - lgamma(b_k) - log(pi) / 2],
    b_k = eta + (d - 1 - k) / 2                                          (i 0-based)

Support: L lower triangular with a positive diagonal and rows of unit length
(``cholesky_corr``), so that C = L L^T is a correlation matrix; the density
is over the strictly lower entries. It is LKJ's density of C,
c_d(eta) det(C)^(eta - 1) (Lewandowski, Kurowicka and Joe 2009, "Generating
random correlation matrices based on vines and extended onion method"),
times the Jacobian of C -> L, prod_i L_ii^(d - i - 1), with det(C) =
prod_i L_ii^2. eta = 1 is uniform over correlation matrices, eta > 1 favours
the identity, eta < 1 strong correlations; for d = 2 the correlation r has
density c_2(eta) (1 - r^2)^(eta - 1) on (-1, 1).

Parameters: ``dim`` = d >= 1, an integer (it fixes the value's shape (d, d)
and has no partial); ``concentration`` = eta > 0. NumPyro:
``LKJCholesky(dim, concentration)``; Stan: ``lkj_corr_cholesky_lpdf(L | eta)``
(``do_lkj_constant`` is its c_d); scipy has none.

The constant: the partial correlations of a C-vine are independent, the d - k
of tree level k Beta(b_k, b_k) on (-1, 1), whose normalizer is
2^(2 b_k - 1) B(b_k, b_k) (LKJ 2009, the vine method). Legendre's duplication
formula turns it into sqrt(pi) Gamma(b_k) / Gamma(b_k + 1/2), a rising
factorial: accurate for huge eta, where Stan Math's equivalent
(d - 1) lgamma(eta + (d-1)/2) - sum_k lgamma(eta + (d-1-k)/2) cancels.

Partials: d/dL_ii = (d - i - 1 + 2 (eta - 1)) / L_ii for i >= 1 (the other
entries are not read), d/deta = 2 sum_i log L_ii
+ sum_k (d - k) (psi(b_k + 1/2) - psi(b_k)).
"""

import math

import numpy as np

from . import random, vmath
from .constraints import cholesky_corr, nonnegative_integer, positive
from .frozen import InvalidArgumentError
from .jit import jitable, kernel
from .multivariate import MultivariateDistribution
from .spec import Param, Spec, Summand
from .special import LOG_SQRT_PI, digamma_diff, log_rising_factorial, logaddexp

#: Rows of L may differ from unit length by this much in squared length (the
#: tolerance ``logdens.density`` takes for simplexes and these factors): the
#: ``cholesky_corr`` transform and ``np.linalg.cholesky`` of a correlation
#: matrix are unit to a few ulps per entry.
UNIT_TOLERANCE = 1e-8


@kernel
def _valid(x, dim, concentration):
    """eta finite and > 0; x square of side ``dim``, zero above the diagonal,
    a positive finite diagonal, rows of unit length (NaN anywhere fails)."""
    d = x.shape[0]
    ok = dim == d and x.shape[1] == d and 0.0 < concentration < math.inf
    for i in range(d):
        ok &= 0.0 < x[i, i] < math.inf
        sq = 0.0
        for j in range(i + 1):
            sq += x[i, j] * x[i, j]
        for j in range(i + 1, d):
            ok &= x[i, j] == 0.0
        ok &= abs(sq - 1.0) <= UNIT_TOLERANCE
    return ok


@kernel
def log_constant(d, concentration):
    """log c_d(eta), one rising factorial per tree level of the C-vine."""
    lc = 0.0
    for k in range(1, d):
        b = concentration + 0.5 * (d - 1 - k)
        lc += (d - k) * (log_rising_factorial(b, 0.5) - LOG_SQRT_PI)
    return lc


@kernel
def dlog_constant(d, concentration):
    """d/deta log c_d(eta) = sum_k (d - k) (psi(b_k + 1/2) - psi(b_k))."""
    dc = 0.0
    for k in range(1, d):
        dc += (d - k) * digamma_diff(concentration + 0.5 * (d - 1 - k), 0.5)
    return dc


@jitable
def logpdf(x, dim, concentration):
    """Normalized log density of one factor; ``-inf`` off the support or for eta <= 0."""
    if not _valid(x, dim, concentration):
        return -math.inf
    d = x.shape[0]
    lp = log_constant(d, concentration)
    for i in range(1, d):
        lp += (d - i - 1.0 + 2.0 * (concentration - 1.0)) * vmath.log(x[i, i])
    return lp


@kernel
def logpdf_grad(x, dim, concentration, keep, work, d_x, d_dim, d_concentration):
    """Log density of one factor; partials added into ``d_*`` (see ``distributions.spec``)."""
    if not _valid(x, dim, concentration):
        return -math.inf
    d = x.shape[0]
    lp = 0.0
    sum_log = 0.0
    for i in range(1, d):
        log_l = vmath.log(x[i, i])
        coef = 0.0
        if keep[0]:
            coef += d - i - 1.0
        if keep[1]:
            coef += 2.0 * (concentration - 1.0)
            sum_log += log_l
        lp += coef * log_l
        if d_x is not None:
            d_x[i, i] += coef / x[i, i]
    if d_concentration is not None:
        d_concentration[0] += 2.0 * sum_log  # 0 unless keep[1]
    if keep[2]:
        lp += log_constant(d, concentration)
        if d_concentration is not None:
            d_concentration[0] += dlog_constant(d, concentration)
    return lp


@jitable
def rvs(state, dim, concentration, out):
    """One factor by the extended onion method of LKJ 2009, row by row:
    row i is (sqrt(y) u, sqrt(1 - y)) with y ~ Beta(i / 2, eta + (d - 1 - i) / 2)
    and u uniform on the unit sphere of R^i (normalized normals), as NumPyro's
    ``LKJCholesky``. y = G1 / (G1 + G2), G ~ Gamma, in logs, so that
    sqrt(1 - y) = exp((log G2 - log(G1 + G2)) / 2) stays positive where 1 - y
    rounds to 0. Near eta = 1e-3 the true diagonal is often below the smallest
    double (in a quarter of the draws at d = 3) and underflows to 0, off the support.
    """
    d = int(dim)
    for q in range(d * d):
        out[q] = 0.0
    out[0] = 1.0
    for i in range(1, d):
        log_g1 = random.log_gamma(state, 0.5 * i)
        log_g2 = random.log_gamma(state, concentration + 0.5 * (d - 1 - i))
        log_total = logaddexp(log_g1, log_g2)
        row = out[i * d:i * d + i]
        random.fill_normal(state, row)
        sq = 0.0
        for j in range(i):
            sq += row[j] * row[j]
        scale = math.exp(0.5 * (log_g1 - log_total)) / math.sqrt(sq)
        for j in range(i):
            row[j] *= scale
        out[i * d + i] = math.exp(0.5 * (log_g2 - log_total))


def check(x, lengths, known):
    """L is lower triangular with a positive diagonal and rows of unit length (to 1e-8)"""
    x = np.asarray(x, dtype=float)
    upper = np.all(np.triu(x, 1) == 0.0, axis=(-2, -1))
    diagonal = np.all(np.diagonal(x, axis1=-2, axis2=-1) > 0.0, axis=-1)
    unit = np.all(np.abs(np.sum(x * x, axis=-1) - 1.0) <= UNIT_TOLERANCE, axis=-1)
    return upper & diagonal & unit


SPEC = Spec(
    name="LKJCholesky",
    params=(Param("dim", nonnegative_integer), Param("concentration", positive)),
    support=cholesky_corr,
    summands=(
        Summand(("x", "dim"), "sum_{i>=1} (d - i - 1) log(L_ii)"),
        Summand(("x", "concentration"), "2 (eta - 1) sum_{i>=1} log(L_ii)"),
        Summand(("dim", "concentration"), "log c_d(eta)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    events=(("d", "d"), (), ()),
    check=check,
)


class LKJBase(MultivariateDistribution):
    """What ``LKJCholesky`` and ``LKJCorr`` share: ``dim`` fixes the side of the
    matrix, checked even when the concentration is a model expression."""

    def _validate_params(self):
        # dim fixes the value's shape, so it is checked even when eta is a model
        # expression (then the base class checks only the numeric parameters)
        name, dim = self.spec.name, self.params["dim"]
        if isinstance(dim, np.ndarray) and dim.size and np.all(dim == dim.flat[0]):
            dim = self.params["dim"] = np.asarray(dim.flat[0])  # one side, repeated per draw (predictive)
        if not isinstance(dim, np.ndarray) or dim.ndim != 0:
            raise InvalidArgumentError(f"{name}: dim={dim!r}, must be a single integer >= 1 "
                                       "(the matrix side)")
        super()._validate_params()
        if not dim >= 1:
            raise InvalidArgumentError(f"{name}: dim={dim.item()!r}, must be >= 1 (the matrix side)")

    def event_shape(self):
        """``(dim, dim)``: no parameter's shape fixes the side of the matrix."""
        d = int(self.params["dim"])
        return (d, d)

    def fixed_event_shape(self):
        return self.event_shape()

    def _events(self, x):
        batch, lengths, arrays = super()._events(x)
        d = int(self.params["dim"])
        if lengths["d"] != d:
            raise InvalidArgumentError(f"{self.spec.name}: x has events of shape ({lengths['d']}, "
                                       f"{lengths['d']}) but dim={d}")
        return batch, lengths, arrays


class LKJCholesky(LKJBase):
    __doc__ = __doc__
    spec = SPEC
