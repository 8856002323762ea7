"""Case rows for the positive distributions (see ``tests/cases.py``).

References are scipy.stats at typical parameters, where scipy's log density
is accurate to a few ulps. At the extremes the reference is the density
written out in mpmath at 50 digits (``mp_ref``) from the exact binary values
of the arguments, because scipy itself is not accurate there:

* Gamma, InverseGamma and ChiSquared with shape 1e4 (df 1e4, 1e8), and Beta
  with both shapes 1e4: scipy sums ``xlogy(a - 1, x) - x - gammaln(a)``
  (``betaln`` for Beta), terms of size a log(a) that cancel to O(log a) and
  leave errors of 1e-12 to 1e-11 relative;
* Beta with one shape 1e-3 and the other 1e4, where scipy's ``betaln`` is off
  by about 3e-12 relative;
* Uniform, whose scipy form ``uniform(loc, scale=upper - lower)`` rounds the
  upper end ``loc + scale`` and overflows for lower = -1e308, upper = 1e308;
* Pareto far in the tail: scipy takes the log of ``b x**(-b - 1)``, which
  underflows to 0 (log density -inf where it is about -2989);
* Rayleigh and Weibull at points where (x / scale)^2 or (x / scale)^k
  overflows (scipy gives NaN or warns there).

Every row keeps the default rtol 1e-12.
"""

import math

import mpmath
import numpy as np
from scipy import stats

from case_table import case, scipy_ref
from logdens.distributions.beta import Beta
from logdens.distributions.chi_squared import ChiSquared
from logdens.distributions.exponential import Exponential
from logdens.distributions.gamma import Gamma
from logdens.distributions.inverse_gamma import InverseGamma
from logdens.distributions.pareto import Pareto
from logdens.distributions.rayleigh import Rayleigh
from logdens.distributions.uniform import Uniform
from logdens.distributions.von_mises import VonMises
from logdens.distributions.weibull import Weibull

MP_DPS = 50
PI = math.pi  # the float64 pi: the support of VonMises is [-PI, PI]


def mp_ref(log_density):
    """A reference from ``log_density(x, **params)`` over mpmath numbers at 50 digits.

    Arguments arrive as exact ``mpf`` copies of the float64 inputs; the result
    is rounded to float64 once (values below -1.8e308 become -inf).
    """
    def reference(x, **params):
        with mpmath.workdps(MP_DPS):
            mp_params = {k: mpmath.mpf(float(v)) for k, v in params.items()}
            values = [float(log_density(mpmath.mpf(float(v)), **mp_params)) for v in np.ravel(x)]
        return np.reshape(values, np.shape(x))
    return reference


def _mp_gamma(x, concentration, rate):
    return (concentration * mpmath.log(rate) - mpmath.loggamma(concentration)
            + (concentration - 1) * mpmath.log(x) - rate * x)


def _mp_inverse_gamma(x, concentration, scale):
    return (concentration * mpmath.log(scale) - mpmath.loggamma(concentration)
            - (concentration + 1) * mpmath.log(x) - scale / x)


def _mp_chi_squared(x, df):
    return ((df / 2 - 1) * mpmath.log(x) - x / 2 - df / 2 * mpmath.log(2)
            - mpmath.loggamma(df / 2))


def _mp_beta(x, alpha, beta):
    return ((alpha - 1) * mpmath.log(x) + (beta - 1) * mpmath.log1p(-x)
            - mpmath.log(mpmath.beta(alpha, beta)))


def _mp_uniform(x, lower, upper):
    return -mpmath.log(upper - lower) if lower <= x <= upper else mpmath.mpf("-inf")


def _mp_weibull(x, concentration, scale):
    z = x / scale
    return mpmath.log(concentration / scale) + (concentration - 1) * mpmath.log(z) - z ** concentration


def _mp_pareto(x, alpha, scale):
    return mpmath.log(alpha) + alpha * mpmath.log(scale) - (alpha + 1) * mpmath.log(x)


def _mp_rayleigh(x, scale):
    return mpmath.log(x) - 2 * mpmath.log(scale) - (x / scale) ** 2 / 2


def _mp_von_mises(x, loc, concentration):
    return (concentration * mpmath.cos(x - loc) - mpmath.log(2 * mpmath.pi)
            - mpmath.log(mpmath.besseli(0, concentration)))


EXPONENTIAL = scipy_ref(lambda rate: stats.expon(scale=1.0 / rate))
GAMMA = scipy_ref(lambda concentration, rate: stats.gamma(concentration, scale=1.0 / rate))
INVERSE_GAMMA = scipy_ref(lambda concentration, scale: stats.invgamma(concentration, scale=scale))
WEIBULL = scipy_ref(lambda concentration, scale: stats.weibull_min(concentration, scale=scale))
BETA = scipy_ref(lambda alpha, beta: stats.beta(alpha, beta))
PARETO = scipy_ref(lambda alpha, scale: stats.pareto(b=alpha, scale=scale))
CHI_SQUARED = scipy_ref(lambda df: stats.chi2(df))
VON_MISES = scipy_ref(lambda loc, concentration: stats.vonmises(kappa=concentration, loc=loc))
RAYLEIGH = scipy_ref(lambda scale: stats.rayleigh(scale=scale))

MP_GAMMA = mp_ref(_mp_gamma)
MP_INVERSE_GAMMA = mp_ref(_mp_inverse_gamma)
MP_CHI_SQUARED = mp_ref(_mp_chi_squared)
MP_BETA = mp_ref(_mp_beta)
MP_UNIFORM = mp_ref(_mp_uniform)
MP_WEIBULL = mp_ref(_mp_weibull)
MP_PARETO = mp_ref(_mp_pareto)
MP_RAYLEIGH = mp_ref(_mp_rayleigh)
MP_VON_MISES = mp_ref(_mp_von_mises)

CASES = [
    # Exponential: x = 0 is in the support.
    case(Exponential, [1e-10, 0.3, 1.0, 5.0, 40.0], EXPONENTIAL, rate=1.5),
    case(Exponential, [0.0], EXPONENTIAL, rate=1.5, note="at zero"),
    case(Exponential, [0.0, 1.0, 1e8, 3e9], EXPONENTIAL, rate=1e-8, note="tiny rate"),
    case(Exponential, [0.0, 1e-9, 1e-7, 5e-6], EXPONENTIAL, rate=1e8, note="huge rate"),
    case(Exponential, [300.0, 1e5], EXPONENTIAL, rate=2.0, note="tail"),

    # Gamma: shape < 1, = 1, > 1; x near 0; tiny and huge rates; shapes 1e-3 and 1e4.
    case(Gamma, [1e-8, 0.1, 1.0, 2.0, 10.0, 50.0], GAMMA, concentration=2.5, rate=1.3),
    case(Gamma, [1e-300, 1e-5, 0.5, 30.0], GAMMA, concentration=0.5, rate=2.0, note="shape<1"),
    case(Gamma, [1e-10, 1.0, 20.0], GAMMA, concentration=1.0, rate=0.7, note="shape=1"),
    case(Gamma, [1e8, 3e10, 1e11], GAMMA, concentration=3.0, rate=1e-10, note="tiny rate"),
    case(Gamma, [1e-12, 3e-10, 2e-9], GAMMA, concentration=3.0, rate=1e10, note="huge rate"),
    case(Gamma, [1e-300, 1e-100, 1e-10, 1e-3, 1.0, 10.0], MP_GAMMA,
         concentration=1e-3, rate=1.0, note="shape 1e-3"),
    case(Gamma, [9e3, 9.8e3, 9999.0, 1e4, 1.02e4, 1.1e4, 2e4], MP_GAMMA,
         concentration=1e4, rate=1.0, note="shape 1e4"),
    case(Gamma, [0.97, 0.99, 1.0, 1.01, 1.05], MP_GAMMA,
         concentration=1e4, rate=1e4, note="shape 1e4 rate 1e4"),
    case(Gamma, [2.0, 10.0, 30.0], GAMMA, concentration=10.0, rate=1.0, note="Stirling from"),
    case(Gamma, [2.0, 10.0, 30.0], GAMMA, concentration=9.99, rate=1.0, note="summands up to"),

    # InverseGamma
    case(InverseGamma, [0.01, 0.1, 0.5, 1.0, 5.0, 1e3], INVERSE_GAMMA, concentration=3.0, scale=2.0),
    case(InverseGamma, [1e-3, 1.0, 1e6], INVERSE_GAMMA, concentration=0.5, scale=1.0, note="shape<1"),
    case(InverseGamma, [1e-12, 1e-10, 1.0], INVERSE_GAMMA, concentration=2.0, scale=1e-10,
         note="tiny scale"),
    case(InverseGamma, [1e8, 1e10, 1e14], INVERSE_GAMMA, concentration=2.0, scale=1e10,
         note="huge scale"),
    case(InverseGamma, [0.1, 1.0, 1e10, 1e100], MP_INVERSE_GAMMA, concentration=1e-3, scale=1.0,
         note="shape 1e-3"),
    case(InverseGamma, [0.95, 0.99, 1.0, 1.01, 1.05], MP_INVERSE_GAMMA, concentration=1e4,
         scale=1e4, note="shape 1e4"),

    # Weibull
    case(Weibull, [1e-8, 0.5, 2.0, 5.0, 12.0], WEIBULL, concentration=1.5, scale=2.0),
    case(Weibull, [1e-12, 0.1, 1.0, 100.0], WEIBULL, concentration=0.5, scale=1.0, note="shape<1"),
    case(Weibull, [1e-10, 1.0, 20.0], WEIBULL, concentration=1.0, scale=3.0, note="shape=1"),
    case(Weibull, [0.5, 0.9, 1.0, 1.1, 1.3], WEIBULL, concentration=20.0, scale=1.0,
         note="large shape"),
    case(Weibull, [1e-12, 1e-10, 3e-10], WEIBULL, concentration=2.0, scale=1e-10,
         note="tiny scale"),
    case(Weibull, [1e8, 1e10, 3e10], WEIBULL, concentration=2.0, scale=1e10, note="huge scale"),
    case(Weibull, [30.0, 1e3, 1e200], MP_WEIBULL, concentration=2.0, scale=1.0, note="tail"),

    # Beta: x near 0 and 1; shapes 1e-3 and 1e4.
    case(Beta, [0.1, 0.25, 0.5, 0.75, 0.9], BETA, alpha=2.0, beta=3.0),
    case(Beta, [1e-300, 1e-10, 1.0 - 1e-10, 1.0 - 2.0**-53], BETA, alpha=2.0, beta=3.0,
         note="near the ends"),
    case(Beta, [1e-300, 1e-10, 0.5, 1.0 - 1e-12, 1.0 - 2.0**-53], BETA, alpha=0.5, beta=0.5,
         note="U shape"),
    case(Beta, [1e-300, 1e-20, 0.5, 1.0 - 2.0**-53], MP_BETA, alpha=1e-3, beta=1e-3,
         note="shapes 1e-3"),
    case(Beta, [1e-300, 1e-10, 1e-4], MP_BETA, alpha=1e-3, beta=1e4, note="shapes 1e-3 1e4"),
    case(Beta, [0.99, 1.0 - 1e-4, 1.0 - 1e-10, 1.0 - 2.0**-53], MP_BETA, alpha=1e4, beta=1e-3,
         note="shapes 1e4 1e-3"),
    case(Beta, [0.3, 0.48, 0.49, 0.5, 0.51, 0.52], MP_BETA, alpha=1e4, beta=1e4, note="shapes 1e4"),
    case(Beta, [0.99, 0.998, 0.999, 0.9995], MP_BETA, alpha=1e4, beta=10.0, note="shapes 1e4 10"),
    case(Beta, [0.1, 0.5, 0.9], BETA, alpha=10.0, beta=10.0, note="Stirling from"),

    # Uniform: both ends are in the support.
    case(Uniform, [-1.0, -0.3, 0.0, 2.0], MP_UNIFORM, lower=-1.0, upper=2.0),
    case(Uniform, [1.0, 1.0 + 5e-11, 1.0 + 1e-10], MP_UNIFORM, lower=1.0, upper=1.0 + 1e-10,
         note="narrow"),
    case(Uniform, [-1e300, 0.0, 1e300], MP_UNIFORM, lower=-1e300, upper=1e300, note="wide"),
    case(Uniform, [-1e308, 0.0, 1e308], MP_UNIFORM, lower=-1e308, upper=1e308,
         note="width overflows"),

    # Pareto: x = scale is in the support.
    case(Pareto, [2.0, 2.0000001, 3.0, 10.0, 1e6], PARETO, alpha=3.0, scale=2.0),
    case(Pareto, [1e-10, 1.0, 1e100], PARETO, alpha=0.5, scale=1e-10, note="tiny scale"),
    case(Pareto, [1e300, 1.001e300, 1e301], MP_PARETO, alpha=1e3, scale=1e300, note="huge scale"),
    case(Pareto, [1.0, 1e10, 1e300], MP_PARETO, alpha=1e-3, scale=1.0, note="heavy tail"),

    # ChiSquared: df < 2, = 2, > 2; large df.
    case(ChiSquared, [1e-10, 0.5, 3.0, 30.0], CHI_SQUARED, df=3.0),
    case(ChiSquared, [1e-300, 1e-5, 1.0, 50.0], CHI_SQUARED, df=1.0, note="df<2"),
    case(ChiSquared, [1e-10, 1.0, 100.0], CHI_SQUARED, df=2.0, note="df=2"),
    case(ChiSquared, [1e-100, 1e-3, 1.0], MP_CHI_SQUARED, df=0.01, note="tiny df"),
    case(ChiSquared, [5.0, 20.0, 40.0], CHI_SQUARED, df=20.0, note="Stirling from"),
    case(ChiSquared, [9e3, 9.8e3, 1e4, 1.02e4, 1.1e4], MP_CHI_SQUARED, df=1e4, note="df 1e4"),
    case(ChiSquared, [0.9999e8, 1e8, 1.0002e8], MP_CHI_SQUARED, df=1e8, note="df 1e8"),

    # VonMises: the ends -pi and pi are in the support; concentration 1e-8 to 1e8.
    case(VonMises, [-3.0, -1.0, 0.0, 0.5, 2.0, 3.1], VON_MISES, loc=0.5, concentration=2.0),
    case(VonMises, [-PI, PI], VON_MISES, loc=0.5, concentration=2.0, note="at -pi and pi"),
    case(VonMises, [-PI, 0.0, 3.0], VON_MISES, loc=0.0, concentration=1e-8,
         note="tiny concentration"),
    case(VonMises, [-3.0, 0.0, 3.0], VON_MISES, loc=10.0, concentration=3.0, note="loc off circle"),
    case(VonMises, [-1.0, 0.0, 0.1, 1.0], VON_MISES, loc=0.0, concentration=39.99,
         note="series up to"),
    case(VonMises, [-1.0, 0.0, 0.1, 1.0], VON_MISES, loc=0.0, concentration=40.0,
         note="asymptotic from"),
    case(VonMises, [2.4, 2.5, 2.55, PI], VON_MISES, loc=2.5, concentration=500.0,
         note="large concentration"),
    case(VonMises, [1.0 - 1e-3, 1.0 - 1e-4, 1.0, 1.0 + 1e-4, 1.0 + 3e-4], VON_MISES,
         loc=1.0, concentration=1e8, note="huge concentration"),

    # Rayleigh: x = 0 is in the support, with density 0.
    case(Rayleigh, [1e-10, 0.5, 2.0, 10.0, 30.0], RAYLEIGH, scale=2.0),
    case(Rayleigh, [0.0], RAYLEIGH, scale=2.0, note="at zero"),
    case(Rayleigh, [1e-12, 1e-10, 5e-10], RAYLEIGH, scale=1e-10, note="tiny scale"),
    case(Rayleigh, [1e8, 1e10, 5e10], RAYLEIGH, scale=1e10, note="huge scale"),
    case(Rayleigh, [40.0, 1e3, 1e200], MP_RAYLEIGH, scale=1.0, note="tail"),
]

INVALID = [
    (Exponential, dict(rate=0.0), "rate"),
    (Exponential, dict(rate=-1.0), "rate"),
    (Gamma, dict(concentration=0.0, rate=1.0), "concentration"),
    (Gamma, dict(concentration=-1.0, rate=1.0), "concentration"),
    (Gamma, dict(concentration=2.0, rate=0.0), "rate"),
    (Gamma, dict(concentration=2.0, rate=-2.0), "rate"),
    (InverseGamma, dict(concentration=0.0, scale=1.0), "concentration"),
    (InverseGamma, dict(concentration=2.0, scale=0.0), "scale"),
    (InverseGamma, dict(concentration=2.0, scale=-1.0), "scale"),
    (Weibull, dict(concentration=0.0, scale=1.0), "concentration"),
    (Weibull, dict(concentration=1.5, scale=-1.0), "scale"),
    (Beta, dict(alpha=0.0, beta=1.0), "alpha"),
    (Beta, dict(alpha=1.0, beta=-1.0), "beta"),
    (Uniform, dict(lower=1.0, upper=1.0), "upper"),
    (Uniform, dict(lower=2.0, upper=-1.0), "upper"),
    (Pareto, dict(alpha=0.0, scale=1.0), "alpha"),
    (Pareto, dict(alpha=2.0, scale=0.0), "scale"),
    (Pareto, dict(alpha=2.0, scale=-1.0), "scale"),
    (ChiSquared, dict(df=0.0), "df"),
    (ChiSquared, dict(df=-1.0), "df"),
    (VonMises, dict(loc=0.0, concentration=0.0), "concentration"),
    (VonMises, dict(loc=0.0, concentration=-1.0), "concentration"),
    (Rayleigh, dict(scale=0.0), "scale"),
    (Rayleigh, dict(scale=-1.0), "scale"),
]
