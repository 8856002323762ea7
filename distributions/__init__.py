"""Closed-form log densities with analytic partials, one module per distribution.

Each module exports kernels (``logpdf``, ``logpdf_grad``), a ``SPEC``
(parameters, support, summands; event axes for multivariate ones) and a
public class with a scipy-like API. ``ALL`` lists the univariate
distributions, ``MULTIVARIATE`` the others.
"""

from .frozen import Distribution, InvalidArgumentError
from .ar import AR
from .bernoulli import Bernoulli
from .bernoulli_logit import BernoulliLogit
from .beta import Beta
from .beta_binomial import BetaBinomial
from .binomial import Binomial
from .binomial_logit import BinomialLogit
from .categorical import Categorical
from .categorical_logit import CategoricalLogit
from .cauchy import Cauchy
from .chi_squared import ChiSquared
from .dirichlet import Dirichlet
from .dirichlet_multinomial import DirichletMultinomial
from .discrete_uniform import DiscreteUniform
from .exponential import Exponential
from .gamma import Gamma
from .gaussian_random_walk import GaussianRandomWalk
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .half_student_t import HalfStudentT
from .hurdle_negative_binomial import HurdleNegativeBinomial
from .hurdle_poisson import HurdlePoisson
from .inverse_gamma import InverseGamma
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .lkj_corr import LKJCorr
from .mv_normal import MvNormal
from .mv_student_t import MvStudentT
from .log_normal import LogNormal
from .multinomial import Multinomial
from .logistic import Logistic
from .negative_binomial import NegativeBinomial
from .negative_binomial_log import NegativeBinomialLog
from .normal import Normal
from .ordered_logistic import OrderedLogistic
from .ordered_probit import OrderedProbit
from .pareto import Pareto
from .poisson import Poisson
from .poisson_log import PoissonLog
from .rayleigh import Rayleigh
from .skew_normal import SkewNormal
from .student_t import StudentT
from .truncated_normal import TruncatedNormal
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .zero_inflated_negative_binomial import ZeroInflatedNegativeBinomial
from .zero_inflated_poisson import ZeroInflatedPoisson
from .zero_sum_normal import ZeroSumNormal

ALL = (
    Bernoulli, BernoulliLogit, Beta, BetaBinomial, Binomial, BinomialLogit, Cauchy,
    ChiSquared, DiscreteUniform, Exponential, Gamma, Geometric, Gumbel, HalfCauchy, HalfNormal,
    HalfStudentT, HurdleNegativeBinomial, HurdlePoisson, InverseGamma, Laplace, LogNormal, Logistic,
    NegativeBinomial, NegativeBinomialLog, Normal, Pareto, Poisson, PoissonLog, Rayleigh, SkewNormal,
    StudentT, TruncatedNormal, Uniform, VonMises, Weibull, ZeroInflatedNegativeBinomial,
    ZeroInflatedPoisson,
)

MULTIVARIATE = (
    AR, Categorical, CategoricalLogit, Dirichlet, DirichletMultinomial, GaussianRandomWalk, LKJCholesky,
    LKJCorr, Multinomial, MvNormal, MvStudentT, OrderedLogistic, OrderedProbit, ZeroSumNormal,
)

__all__ = (["ALL", "MULTIVARIATE", "Distribution", "InvalidArgumentError"]
           + [d.__name__ for d in ALL + MULTIVARIATE])
