"""Hurdle negative binomial distribution, mean-dispersion parameterization.

    p(0 | psi, mu, phi) = 1 - psi
    p(x | psi, mu, phi) = psi NB(x | mu, phi) / (1 - NB(0 | mu, phi)),   x = 1, 2, ...
    NB(x | mu, phi) = Gamma(x + phi) / (Gamma(phi) x!) (mu / (mu + phi))^x (phi / (mu + phi))^phi

psi is the probability of a non-zero count (PyMC's name and meaning): the
count is 0 with probability 1 - psi, otherwise a zero-truncated
NegativeBinomial(mu, phi) (Stan's ``neg_binomial_2``, as in
``distributions.negative_binomial``). With a = phi log1p(mu / phi),
NB(0) = exp(-a) and the truncation divides by 1 - exp(-a). Parameters:
psi in [0, 1] (psi = 0 is the point mass at 0, psi = 1 the zero-truncated
negative binomial), mu > 0 and phi > 0 (normal floats: below 2.2e-308,
1 / mu and 1 / phi overflow and the partials would be inf - inf).
scipy has no such class; the reference is ``log1p(-psi)`` at 0 and
``log(psi) + nbinom.logpmf(x) - nbinom.logsf(0)`` elsewhere, with
``nbinom(n=phi, p=phi / (mu + phi))``. PyMC:
``HurdleNegativeBinomial(psi, mu, alpha)`` with alpha = phi. Stan has no
built-in; the User's Guide's hurdle model writes theta = P(0) = 1 - psi.
"""

import math

from . import vmath
from .constraints import nonnegative_integer, positive, unit_interval
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from . import hurdle_poisson
from . import negative_binomial
from .special import SMALLEST_NORMAL, log1mexp, log1p_ratio


@jitable
def _zero_mass(x, psi, mu, phi, x_valid):
    """Invalid parameters (psi outside [0, 1], mu below the smallest normal
    float, or as ``negative_binomial.outside`` says), x above its largest
    count or off the nonnegative integers (unless ``x_valid``), x = 0 when
    psi = 1, or x > 0 when psi = 0."""
    if not (0.0 <= psi <= 1.0 and SMALLEST_NORMAL <= mu):
        return True
    if negative_binomial.outside(x, mu, phi, x_valid):
        return True
    return psi == 1.0 if x == 0.0 else psi == 0.0


@jitable
def _log_nb0(mu, phi, l0):
    """log NB(0) = -phi log1p(mu / phi), given as ``l0``, made strictly negative:
    where mu / phi is subnormal it lost bits or underflowed to 0 (phi > 1e15 mu),
    and there phi log1p(mu / phi) = mu (1 - mu / (2 phi) + ...) = mu to rounding."""
    if mu < SMALLEST_NORMAL * phi:
        return -mu
    return l0


@jitable
def logpdf(x, psi, mu, phi):
    """Normalized log mass; ``-inf`` off the nonnegative integers or for invalid parameters."""
    if _zero_mass(x, psi, mu, phi, False):
        return -math.inf
    if x == 0.0:
        return vmath.log1p(-psi)
    l0 = _log_nb0(mu, phi, -phi * log1p_ratio(mu, phi))
    # The truncation: -log(1 - NB(0)) = -log1mexp(l0).
    return vmath.log(psi) + negative_binomial.logpdf(x, mu, phi) - log1mexp(l0)


@kernel
def logpdf_grad(x, psi, mu, phi, keep, x_valid=False):
    """``(lp, d_x = 0, d_psi, d_mu, d_phi)``; see ``distributions.spec`` for ``keep`` and ``x_valid``."""
    if _zero_mass(x, psi, mu, phi, x_valid):
        return -math.inf, 0.0, 0.0, 0.0, 0.0
    # Summands 0-2 are the negative binomial's own (all 0 at x = 0) and their
    # partials are its partials; see distributions.negative_binomial.
    u = 1.0 / (1.0 + phi / mu)  # mu / (mu + phi)
    w = 1.0 / (1.0 + mu / phi)  # phi / (mu + phi)
    lp, d_mu, d_phi = negative_binomial.count_summands(x, mu, phi, w, keep)
    d_psi = 0.0
    if keep[3] and x == 0.0:
        lp += vmath.log1p(-psi)
        d_psi = -1.0 / (1.0 - psi)
    elif keep[3]:
        lp, d_psi, d_mu, d_phi = _truncation_summand(psi, mu, phi, u, w, lp, d_mu, d_phi)
    if lp == -math.inf:  # a summand overflowed (huge counts or parameters)
        return -math.inf, 0.0, 0.0, 0.0, 0.0
    return lp, 0.0, d_psi, d_mu, d_phi


@kernel  # inlined into the kernel's loop
def _truncation_summand(psi, mu, phi, u, w, lp, d_mu, d_phi):
    """Add the summand of x > 0, log(psi) + l0 - log(1 - exp(l0)) with l0 =
    log NB(0) = -a, that is log(psi) - log(exp(a) - 1), and its partials to
    ``(lp, d_mu, d_phi)``; returns ``(lp, d_psi, d_mu, d_phi)``.

    l0 and its partials come from the negative binomial's own summand;
    d/dl0 = 1 / (1 - exp(l0)) = q >= 1 multiplies them. For tiny mu, q ~ 1 / mu
    and the mu partial cancels against summand 2's x / mu to O(1) at x = 1
    (absolute error ~eps / mu, as for the hurdle Poisson's rate).
    """
    l0, l0_mu, l0_phi = negative_binomial.dispersion_summand(mu, phi, u, w, 0.0, 0.0, 0.0)
    l0 = _log_nb0(mu, phi, l0)
    q = -1.0 / math.expm1(l0)
    lp += vmath.log(psi) - hurdle_poisson.log_expm1(-l0)
    return lp, 1.0 / psi, d_mu + q * l0_mu, d_phi + q * l0_phi


# From this a = -log NB(0) on, zero-truncated draws reject the zeros of the
# negative binomial (acceptance 1 - exp(-a) >= 0.63); below, the compound
# Poisson form.
_REJECTION_FROM = 1.0


@jitable
def zero_truncated_rvs(state, mu, phi):
    """One draw of NegativeBinomial(mu, phi) conditioned on being positive.

    The negative binomial is a Poisson(a) sum of logarithmic-series(u)
    counts, a = phi log1p(mu / phi), u = mu / (mu + phi) (Quenouille 1949,
    "A relation between the logarithmic, Poisson, and negative binomial
    series", Biometrics 5). Each term is >= 1, so the zero-truncated law is
    the sum of N ~ zero-truncated Poisson(a) terms: fewer than 1.6 on
    average for a < 1. From a = 1 on, negative binomial draws are rejected
    until positive (at most 1.58 on average). O(1) either way, also for tiny
    mu or phi, where plain rejection would take ~1 / a draws.
    """
    log_w = -log1p_ratio(mu, phi)  # log(1 - u) = log(phi / (mu + phi))
    a = -_log_nb0(mu, phi, phi * log_w)
    if a >= _REJECTION_FROM:
        while True:
            k = negative_binomial.rvs(state, mu, phi)
            if k > 0.0:
                return k
    k = 0.0
    for _ in range(int(hurdle_poisson.zero_truncated_rvs(state, a))):
        k += _log_series_rvs(state, log_w)
    return k


@jitable
def _log_series_rvs(state, log_w):
    """One draw of the logarithmic series law p(k) = -u^k / (k log(1 - u)),
    k >= 1, given log_w = log(1 - u) < 0.

    A mixture of geometrics: with y = 1 - (1 - u)^U, U uniform, P(X > k | y) =
    y^k, so X = 1 + floor(log V / log y), V uniform (the representation behind
    algorithm LK of Kemp 1981, "Efficient generation of logarithmically
    distributed pseudo-random variables", Applied Statistics 30). log y =
    log1mexp(U log_w) stays accurate for u near 1.
    """
    log_y = log1mexp(random.uniform(state) * log_w)  # -inf when U = 0: X = 1
    return 1.0 + math.floor(math.log(random.uniform_open(state)) / log_y)


@jitable
def rvs(state, psi, mu, phi):
    """One draw: 0 with probability 1 - psi, else ``zero_truncated_rvs(mu, phi)``."""
    if random.uniform(state) < psi:
        return zero_truncated_rvs(state, mu, phi)
    return 0.0


SPEC = Spec(
    name="HurdleNegativeBinomial",
    params=(Param("psi", unit_interval), Param("mu", positive), Param("phi", positive)),
    support=nonnegative_integer,
    summands=(
        Summand(("x",), "-lgamma(x + 1)"),
        Summand(("x", "phi"), "lgamma(x + phi) - lgamma(phi)"),
        Summand(("x", "mu", "phi"), "x log(mu / (mu + phi))"),
        Summand(("x", "psi", "mu", "phi"),
                "log(1 - psi) if x == 0 "
                "else log(psi) + phi log(phi / (mu + phi)) - log(1 - (phi / (mu + phi))^phi)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class HurdleNegativeBinomial(Distribution):
    __doc__ = __doc__
    spec = SPEC
