"""Zero-inflated negative binomial distribution, mean-dispersion parameterization.

    p(0 | zi, mu, phi) = zi + (1 - zi) NB(0 | mu, phi)
    p(x | zi, mu, phi) = (1 - zi) NB(x | mu, phi),   x = 1, 2, ...
    NB(x | mu, phi) = Gamma(x + phi) / (Gamma(phi) x!) (mu / (mu + phi))^x (phi / (mu + phi))^phi

zi is the probability of a structural zero: with probability zi the count is
0, otherwise it is NegativeBinomial(mu, phi) (Stan's ``neg_binomial_2``, as
in ``distributions.negative_binomial``: mean mu, variance mu + mu^2 / phi).
Parameters: zi in [0, 1] (zi = 0 is NegativeBinomial, zi = 1 the point mass
at 0), mu > 0, phi > 0.
scipy has no such class; the reference is ``log(zi + (1 - zi) nbinom.pmf(0))``
at 0 and ``log1p(-zi) + nbinom.logpmf(x)`` elsewhere, with
``nbinom(n=phi, p=phi / (mu + phi))``. Stan has no built-in; it is the usual
``log_mix(zi, 0, neg_binomial_2_lpmf(0 | mu, phi))`` at 0. PyMC:
``ZeroInflatedNegativeBinomial(psi, mu, alpha)`` with psi = 1 - zi (PyMC's
psi is the probability of the negative binomial part) and alpha = phi.
"""

import math

from . import vmath
from .constraints import nonnegative_integer, positive, unit_interval
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from . import random
from . import negative_binomial
from . import zero_inflated_poisson
from .special import LOG_FLOAT_MAX, log1p_ratio


@jitable
def _zero_mass(x, zi, mu, phi, x_valid):
    """Invalid parameters (zi outside [0, 1], or as ``negative_binomial.outside``
    says), x above its largest count or off the nonnegative integers (unless
    ``x_valid``), or x > 0 when zi = 1."""
    if not (0.0 <= zi <= 1.0) or negative_binomial.outside(x, mu, phi, x_valid):
        return True
    return zi == 1.0 and x > 0.0


@jitable
def log_p0(zi, log_nb0):
    """log(zi + (1 - zi) NB(0)) from log NB(0) = -phi log1p(mu / phi) <= 0.

    The zero-inflated Poisson's mass at 0 is the same mixture with
    exp(-rate) in place of NB(0), so its stable form (log1p while the mass is
    above 1/2, logaddexp of the two terms' logs below) serves with
    rate = -log NB(0).
    """
    return zero_inflated_poisson.log_p0(zi, -log_nb0)


@jitable
def logpdf(x, zi, mu, phi):
    """Normalized log mass; ``-inf`` off the nonnegative integers or for invalid parameters."""
    if _zero_mass(x, zi, mu, phi, False):
        return -math.inf
    if x == 0.0:
        return log_p0(zi, -phi * log1p_ratio(mu, phi))
    return vmath.log1p(-zi) + negative_binomial.logpdf(x, mu, phi)


@kernel
def logpdf_grad(x, zi, mu, phi, keep, x_valid=False):
    """``(lp, d_x = 0, d_zi, d_mu, d_phi)``; see ``distributions.spec`` for ``keep`` and ``x_valid``."""
    if _zero_mass(x, zi, mu, phi, x_valid):
        return -math.inf, 0.0, 0.0, 0.0, 0.0
    # Summands 0-2 are the negative binomial's own (all 0 at x = 0) and their
    # partials are its partials; see distributions.negative_binomial.
    u = 1.0 / (1.0 + phi / mu)  # mu / (mu + phi)
    w = 1.0 / (1.0 + mu / phi)  # phi / (mu + phi)
    lp, d_mu, d_phi = negative_binomial.count_summands(x, mu, phi, w, keep)
    d_zi = 0.0
    if keep[3]:
        lp, d_zi, d_mu, d_phi = _mixture_summand(x, zi, mu, phi, u, w, lp, d_mu, d_phi)
    if lp == -math.inf:  # a summand overflowed (huge counts or parameters)
        return -math.inf, 0.0, 0.0, 0.0, 0.0
    return lp, 0.0, d_zi, d_mu, d_phi


@kernel  # inlined into the kernel's loop
def _mixture_summand(x, zi, mu, phi, u, w, lp, d_mu, d_phi):
    """Add the summand that holds zi (and NB's phi log(phi / (mu + phi))) and its
    partials to ``(lp, d_mu, d_phi)``; returns ``(lp, d_zi, d_mu, d_phi)``.

    With l0 = log NB(0) = -phi log1p(mu / phi) and its partials (l0_mu, l0_phi)
    from the negative binomial's own summand: at x > 0 the summand is
    log1p(-zi) + l0. At x = 0 it is lp0 = log p0, p0 = zi + (1 - zi) exp(l0):
    d/dzi = (1 - exp(l0)) / p0 = -expm1(l0) exp(-lp0), and d/dmu, d/dphi are
    r l0_mu, r l0_phi with r = (1 - zi) exp(l0 - lp0) in [0, 1], the share of
    the negative binomial in the mass at 0 (the exponent is <= -log(1 - zi),
    so it never overflows). 1 / p0 overflows only for zi < 1e-308 and
    NB(0) < 1e-308, where the true d/dzi exceeds the float range: inf.
    """
    l0, l0_mu, l0_phi = negative_binomial.dispersion_summand(mu, phi, u, w, 0.0, 0.0, 0.0)
    if x > 0.0:
        return lp + vmath.log1p(-zi) + l0, -1.0 / (1.0 - zi), d_mu + l0_mu, d_phi + l0_phi
    lp0 = log_p0(zi, l0)
    d_zi = -math.expm1(l0) * vmath.exp(-lp0) if -lp0 <= LOG_FLOAT_MAX else math.inf
    r = (1.0 - zi) * vmath.exp(l0 - lp0)
    return lp + lp0, d_zi, d_mu + r * l0_mu, d_phi + r * l0_phi


@jitable
def rvs(state, zi, mu, phi):
    """One draw of the mixture: 0 with probability zi, else NegativeBinomial(mu, phi)
    (the gamma-Poisson mixture of ``negative_binomial.rvs``)."""
    if random.uniform(state) < zi:
        return 0.0
    return negative_binomial.rvs(state, mu, phi)


SPEC = Spec(
    name="ZeroInflatedNegativeBinomial",
    params=(Param("zi", unit_interval), Param("mu", positive), Param("phi", positive)),
    support=nonnegative_integer,
    summands=(
        Summand(("x",), "-lgamma(x + 1)"),
        Summand(("x", "phi"), "lgamma(x + phi) - lgamma(phi)"),
        Summand(("x", "mu", "phi"), "x log(mu / (mu + phi))"),
        Summand(("x", "zi", "mu", "phi"),
                "log(zi + (1 - zi) (phi / (mu + phi))^phi) if x == 0 "
                "else log(1 - zi) + phi log(phi / (mu + phi))"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
    takes_x_valid=True,
)


class ZeroInflatedNegativeBinomial(Distribution):
    __doc__ = __doc__
    spec = SPEC
