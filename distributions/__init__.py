"""Closed-form log densities with analytic partials, one module per distribution.

Each module exports scalar kernels (``logpdf``, ``logpdf_grad``), a ``SPEC``
(parameters, support, summands) and a public class with a scipy-like API.
"""

from distributions.frozen import Distribution, InvalidArgumentError
from distributions.bernoulli import Bernoulli
from distributions.bernoulli_logit import BernoulliLogit
from distributions.beta import Beta
from distributions.beta_binomial import BetaBinomial
from distributions.binomial import Binomial
from distributions.binomial_logit import BinomialLogit
from distributions.cauchy import Cauchy
from distributions.chi_squared import ChiSquared
from distributions.exponential import Exponential
from distributions.gamma import Gamma
from distributions.geometric import Geometric
from distributions.gumbel import Gumbel
from distributions.half_cauchy import HalfCauchy
from distributions.half_normal import HalfNormal
from distributions.half_student_t import HalfStudentT
from distributions.inverse_gamma import InverseGamma
from distributions.laplace import Laplace
from distributions.log_normal import LogNormal
from distributions.logistic import Logistic
from distributions.negative_binomial import NegativeBinomial
from distributions.negative_binomial_log import NegativeBinomialLog
from distributions.normal import Normal
from distributions.pareto import Pareto
from distributions.poisson import Poisson
from distributions.poisson_log import PoissonLog
from distributions.rayleigh import Rayleigh
from distributions.skew_normal import SkewNormal
from distributions.student_t import StudentT
from distributions.truncated_normal import TruncatedNormal
from distributions.uniform import Uniform
from distributions.von_mises import VonMises
from distributions.weibull import Weibull
from distributions.zero_inflated_poisson import ZeroInflatedPoisson

ALL = (
    Bernoulli, BernoulliLogit, Beta, BetaBinomial, Binomial, BinomialLogit, Cauchy,
    ChiSquared, Exponential, Gamma, Geometric, Gumbel, HalfCauchy, HalfNormal,
    HalfStudentT, InverseGamma, Laplace, LogNormal, Logistic, NegativeBinomial,
    NegativeBinomialLog, Normal, Pareto, Poisson, PoissonLog, Rayleigh, SkewNormal,
    StudentT, TruncatedNormal, Uniform, VonMises, Weibull, ZeroInflatedPoisson,
)

__all__ = ["ALL", "Distribution", "InvalidArgumentError"] + [d.__name__ for d in ALL]
