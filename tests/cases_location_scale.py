"""Case rows for the location scale distributions (see ``tests/cases.py``).

References are scipy.stats where scipy is accurate at the row's points. At
the extremes the reference is the density written out in mpmath at 50
digits (``mp_ref``), from the exact binary values of the arguments. scipy
fails (gives -inf or loses digits) in these mpmath rows:

* StudentT, HalfStudentT, HalfCauchy and Laplace far in the tails
  (x = 1e200 to 1e300), where scipy's x * x or exp(-|x|) overflows or
  underflows and it returns -inf;
* TruncatedNormal with narrow intervals (relative error 5e-12 at width 1e-6,
  2e-7 at width 1e-10) and with a huge scale (2e-10), where scipy forms the
  interval's mass by cancellation.

The other mpmath rows (LogNormal at scale 1e-8, StudentT and HalfStudentT
at df = 1e8, Cauchy far tails, TruncatedNormal 30 scales out) are exact
references at extreme parameters; scipy agrees with them to 4e-14 there.

Cauchy and StudentT at scale 1e-9 are checked at loc and far out
(|z| ~ 1e6), and at scale 1e-7 near the centre: the finite-difference
harness steps from 2^-7 max(|x|, 1) down to 2^-43 max(|x|, 1) and keeps the
step with the smallest absolute change plus rounding floor. For a
heavy-tailed density at scale 1e-9 near its centre the large steps, far in
both tails, give a flat and wrong estimate near 0 that beats the accurate
small steps (whose rounding floor is ~0.1 there). The light-tailed rows are
not affected.

The df = 1e8 rows are also compared with their Normal limit (HalfNormal for
HalfStudentT) at rtol 1e-7: the exact gap is
log t_df(z) - log phi(z) = (z^4 - 2 z^2 - 1) / (4 df) + O(df^-2), at most
3.1e-7 for |z| <= 3.5, i.e. below 5e-8 relative to |log phi(z)| there
(measured: 4.4e-8).
"""

import math

import mpmath
import numpy as np
from scipy import stats

from case_table import case, scipy_ref
from logdens.distributions.cauchy import Cauchy
from logdens.distributions.gumbel import Gumbel
from logdens.distributions.half_cauchy import HalfCauchy
from logdens.distributions.half_normal import HalfNormal
from logdens.distributions.half_student_t import HalfStudentT
from logdens.distributions.laplace import Laplace
from logdens.distributions.log_normal import LogNormal
from logdens.distributions.logistic import Logistic
from logdens.distributions.skew_normal import SkewNormal
from logdens.distributions.student_t import StudentT
from logdens.distributions.truncated_normal import TruncatedNormal

MP_DPS = 50


def mp_ref(log_density):
    """A reference from ``log_density(x, **params)`` over mpmath numbers at 50 digits."""
    def reference(x, **params):
        with mpmath.workdps(MP_DPS):
            mp_params = {k: mpmath.mpf(float(v)) for k, v in params.items()}
            values = [float(log_density(mpmath.mpf(float(v)), **mp_params)) for v in np.ravel(x)]
        return np.reshape(values, np.shape(x))
    return reference


def _mp_log_normal(x, loc, scale):
    z = (mpmath.log(x) - loc) / scale
    return -z * z / 2 - mpmath.log(x) - mpmath.log(scale) - mpmath.log(2 * mpmath.pi) / 2


def _mp_cauchy(x, loc, scale):
    z = (x - loc) / scale
    return -mpmath.log(mpmath.pi) - mpmath.log(scale) - mpmath.log1p(z * z)


def _mp_student_t(x, df, loc, scale):
    z = (x - loc) / scale
    return (mpmath.loggamma((df + 1) / 2) - mpmath.loggamma(df / 2) - mpmath.log(df * mpmath.pi) / 2
            - mpmath.log(scale) - (df + 1) / 2 * mpmath.log1p(z * z / df))


def _mp_truncated_normal(x, loc, scale, lower, upper):
    a, b, z = (lower - loc) / scale, (upper - loc) / scale, (x - loc) / scale
    # Phi(b) - Phi(a) = Phi(-a) - Phi(-b): take the side where both are small.
    mass = mpmath.ncdf(b) - mpmath.ncdf(a) if a < 0 else mpmath.ncdf(-a) - mpmath.ncdf(-b)
    return -z * z / 2 - mpmath.log(2 * mpmath.pi) / 2 - mpmath.log(scale) - mpmath.log(mass)


HALF_NORMAL = scipy_ref(lambda scale: stats.halfnorm(scale=scale))
LOG_NORMAL = scipy_ref(lambda loc, scale: stats.lognorm(s=scale, scale=math.exp(loc)))
LOG_NORMAL_MP = mp_ref(_mp_log_normal)
STUDENT_T = scipy_ref(lambda df, loc, scale: stats.t(df, loc, scale))
STUDENT_T_MP = mp_ref(_mp_student_t)
NORMAL_LIMIT = scipy_ref(lambda df, loc, scale: stats.norm(loc, scale))
HALF_STUDENT_T_MP = mp_ref(lambda x, df, scale: mpmath.log(2) + _mp_student_t(x, df, 0, scale))
HALF_NORMAL_LIMIT = scipy_ref(lambda df, scale: stats.halfnorm(scale=scale))


def HALF_STUDENT_T(x, df, scale):
    """scipy has no half-t: log 2 + the t density, for x >= 0."""
    return math.log(2.0) + stats.t(df, 0.0, scale).logpdf(x)


CAUCHY = scipy_ref(lambda loc, scale: stats.cauchy(loc, scale))
CAUCHY_MP = mp_ref(_mp_cauchy)
HALF_CAUCHY = scipy_ref(lambda scale: stats.halfcauchy(scale=scale))
HALF_CAUCHY_MP = mp_ref(lambda x, scale: mpmath.log(2) + _mp_cauchy(x, 0, scale))
LAPLACE = scipy_ref(lambda loc, scale: stats.laplace(loc, scale))
LAPLACE_MP = mp_ref(lambda x, loc, scale: -abs(x - loc) / scale - mpmath.log(2 * scale))
LOGISTIC = scipy_ref(lambda loc, scale: stats.logistic(loc, scale))
GUMBEL = scipy_ref(lambda loc, scale: stats.gumbel_r(loc, scale))
SKEW_NORMAL = scipy_ref(lambda loc, scale, alpha: stats.skewnorm(alpha, loc, scale))
TRUNCATED_NORMAL = scipy_ref(lambda loc, scale, lower, upper: stats.truncnorm(
    (lower - loc) / scale, (upper - loc) / scale, loc, scale))
TRUNCATED_NORMAL_MP = mp_ref(_mp_truncated_normal)

LIMIT_NOTE = "vs Normal limit, rtol 1e-7 = gap (z^4 - 2z^2 - 1)/(4 df)"

CASES = [
    case(HalfNormal, [0.0, 1e-300, 0.5, 1.0, 3.0], HALF_NORMAL, scale=1.0),
    case(HalfNormal, [0.0, 1e-9, 5e-9], HALF_NORMAL, scale=1e-9, note="tiny scale"),
    case(HalfNormal, [0.0, 1e10, 5e10], HALF_NORMAL, scale=1e10, note="huge scale"),
    case(HalfNormal, [40.0, 200.0, 1e3], HALF_NORMAL, scale=2.0, note="tail"),

    case(LogNormal, [1e-3, 0.5, 1.0, 2.0, 50.0], LOG_NORMAL, loc=0.0, scale=1.0),
    case(LogNormal, [5.0, 7.389, 10.0], LOG_NORMAL, loc=2.0, scale=0.25),
    case(LogNormal, [1.0 - 1e-8, 1.0, 1.0 + 3e-8], LOG_NORMAL_MP, loc=0.0, scale=1e-8,
         note="tiny scale, mpmath"),
    case(LogNormal, [1e-300, 1.0, 1e300], LOG_NORMAL, loc=0.0, scale=1e3, note="huge scale"),
    case(LogNormal, [1e-100, 1e100], LOG_NORMAL, loc=1.0, scale=1.0, note="tails"),

    case(StudentT, [-40.0, -2.0, 0.0, 0.5, 3.0, 1e3], STUDENT_T, df=3.0, loc=0.0, scale=1.0),
    case(StudentT, [-1e6, 0.0, 1.0, 1e10], STUDENT_T, df=0.5, loc=0.0, scale=1.0, note="heavy"),
    case(StudentT, [-3.0, 1.0, 7.0], STUDENT_T, df=1.0, loc=1.0, scale=2.0, note="Cauchy"),
    case(StudentT, [-5.0 - 1e-3, -5.0, -5.0 + 2e-3], STUDENT_T, df=30.0, loc=-5.0, scale=1e-9,
         note="tiny scale"),
    case(StudentT, [-3e-7, 1e-7, 2e-7], STUDENT_T, df=30.0, loc=0.0, scale=1e-7,
         note="small scale"),
    case(StudentT, [-3e10, 0.0, 1e10], STUDENT_T, df=4.0, loc=2.0, scale=1e10, note="huge scale"),
    case(StudentT, [-3.0, -1.0, 0.0, 1.0, 2.5, 40.0], STUDENT_T_MP, df=1e8, loc=0.0, scale=1.0,
         note="df 1e8, mpmath"),
    case(StudentT, [-3.0, -1.0, 0.0, 1.0, 3.0], NORMAL_LIMIT, rtol=1e-7, df=1e8, loc=0.5,
         scale=1.0, note=LIMIT_NOTE),
    case(StudentT, [-1e300, -1e200, 1e160], STUDENT_T_MP, df=2.0, loc=0.0, scale=1.0,
         note="far tails, mpmath"),

    case(HalfStudentT, [0.0, 0.5, 2.0, 100.0], HALF_STUDENT_T, df=3.0, scale=1.0),
    case(HalfStudentT, [0.0, 1e-9, 1e-6], HALF_STUDENT_T, df=0.5, scale=1e-9, note="tiny scale"),
    case(HalfStudentT, [0.0, 1e10, 1e12], HALF_STUDENT_T, df=5.0, scale=1e10, note="huge scale"),
    case(HalfStudentT, [0.0, 1.0, 2.0, 6.0, 80.0], HALF_STUDENT_T_MP, df=1e8, scale=2.0,
         note="df 1e8, mpmath"),
    case(HalfStudentT, [0.0, 1.0, 2.0, 6.0], HALF_NORMAL_LIMIT, rtol=1e-7, df=1e8, scale=2.0,
         note=LIMIT_NOTE),
    case(HalfStudentT, [1e200, 1e300], HALF_STUDENT_T_MP, df=1.5, scale=1.0,
         note="far tail, mpmath"),

    case(Cauchy, [-1e3, -1.0, 0.0, 0.3, 1e6], CAUCHY, loc=0.0, scale=1.0),
    case(Cauchy, [3.0 - 1e-3, 3.0, 3.0 + 2e-3], CAUCHY, loc=3.0, scale=1e-9, note="tiny scale"),
    case(Cauchy, [-3e-7, 1e-7, 2e-7], CAUCHY, loc=0.0, scale=1e-7, note="small scale"),
    case(Cauchy, [-1e11, 0.0, 5e10], CAUCHY, loc=-1.0, scale=1e10, note="huge scale"),
    case(Cauchy, [-1e300, 1e160, 1e200], CAUCHY_MP, loc=0.0, scale=1.0, note="far tails, mpmath"),

    case(HalfCauchy, [0.0, 0.3, 1.0, 1e5], HALF_CAUCHY, scale=1.0),
    case(HalfCauchy, [0.0, 1e-9, 1e-5], HALF_CAUCHY, scale=1e-9, note="tiny scale"),
    case(HalfCauchy, [0.0, 1e10, 1e13], HALF_CAUCHY, scale=1e10, note="huge scale"),
    case(HalfCauchy, [1e200, 1e300], HALF_CAUCHY_MP, scale=2.0, note="far tail, mpmath"),

    case(Laplace, [-5.0, -0.5, 0.0, 0.5, 700.0], LAPLACE, loc=0.0, scale=1.0),
    case(Laplace, [1.0 - 1e-8, 1.0, 1.0 + 3e-9], LAPLACE, loc=1.0, scale=1e-9, note="tiny scale"),
    case(Laplace, [-1e11, 2.0, 4e10], LAPLACE, loc=2.0, scale=1e10, note="huge scale"),
    case(Laplace, [-1e300, 1e300], LAPLACE_MP, loc=0.0, scale=1.0, note="far tails, mpmath"),

    case(Logistic, [-800.0, -30.0, -1.0, 0.0, 0.5, 30.0, 800.0], LOGISTIC, loc=0.0, scale=1.0),
    case(Logistic, [-2.0 - 1e-8, -2.0, -2.0 + 1e-9], LOGISTIC, loc=-2.0, scale=1e-9,
         note="tiny scale"),
    case(Logistic, [-1e12, 0.0, 3e10], LOGISTIC, loc=1.0, scale=1e10, note="huge scale"),

    case(Gumbel, [-700.0, -5.0, -1.0, 0.0, 1.0, 30.0, 800.0], GUMBEL, loc=0.0, scale=1.0),
    case(Gumbel, [1.0 - 5e-9, 1.0, 1.0 + 3e-8], GUMBEL, loc=1.0, scale=1e-9, note="tiny scale"),
    case(Gumbel, [-5e10, 0.0, 1e12], GUMBEL, loc=0.0, scale=1e10, note="huge scale"),

    case(SkewNormal, [-3.0, -0.5, 0.0, 1.0, 4.0], SKEW_NORMAL, loc=0.0, scale=1.0, alpha=3.0),
    case(SkewNormal, [-6.0, 1.0, 2.0, 9.0], SKEW_NORMAL, loc=1.0, scale=2.0, alpha=-2.0),
    case(SkewNormal, [-1.0, -0.3, -0.1, 0.0, 0.01, 2.0], SKEW_NORMAL, loc=0.0, scale=1.0,
         alpha=50.0, note="alpha 50"),
    case(SkewNormal, [-1.0, 0.5, 3.0], SKEW_NORMAL, loc=0.0, scale=1.0, alpha=-50.0,
         note="alpha -50"),
    case(SkewNormal, [-30.0, -8.0], SKEW_NORMAL, loc=0.0, scale=1.0, alpha=5.0,
         note="alpha z deep negative"),
    case(SkewNormal, [-2.0, 0.0, 1.5], SKEW_NORMAL, loc=0.0, scale=1.0, alpha=0.0,
         note="Normal"),
    case(SkewNormal, [-1e-9, 0.0, 2e-9], SKEW_NORMAL, loc=0.0, scale=1e-9, alpha=1.5,
         note="tiny scale"),
    case(SkewNormal, [-2e10, 0.0, 3e10], SKEW_NORMAL, loc=1.0, scale=1e10, alpha=-4.0,
         note="huge scale"),

    case(TruncatedNormal, [-1.0, -0.5, 0.0, 1.5, 2.0], TRUNCATED_NORMAL,
         loc=0.0, scale=1.0, lower=-1.0, upper=2.0),
    case(TruncatedNormal, [-3.0, 0.0, 2.0], TRUNCATED_NORMAL,
         loc=0.0, scale=1.0, lower=-50.0, upper=50.0, note="wide"),
    case(TruncatedNormal, [-1.0, 0.0, 1.0], TRUNCATED_NORMAL,
         loc=5.0, scale=0.5, lower=-1.0, upper=1.0, note="loc outside"),
    case(TruncatedNormal, [8.0, 8.001, 8.5, 9.0], TRUNCATED_NORMAL,
         loc=0.0, scale=1.0, lower=8.0, upper=9.0, note="right tail"),
    case(TruncatedNormal, [-9.0, -8.5, -8.0], TRUNCATED_NORMAL,
         loc=0.0, scale=1.0, lower=-9.0, upper=-8.0, note="left tail"),
    case(TruncatedNormal, [30.0, 30.2, 31.0], TRUNCATED_NORMAL_MP,
         loc=0.0, scale=1.0, lower=30.0, upper=31.0, note="far tail, mpmath"),
    case(TruncatedNormal, [-38.0, -37.9], TRUNCATED_NORMAL_MP,
         loc=2.0, scale=1.0, lower=-38.0, upper=-37.5, note="far left tail, mpmath"),
    case(TruncatedNormal, [1.0, 1.0 + 5e-7, 1.0 + 1e-6], TRUNCATED_NORMAL_MP,
         loc=0.0, scale=1.0, lower=1.0, upper=1.0 + 1e-6, note="width 1e-6, mpmath"),
    case(TruncatedNormal, [2.0, 2.0 + 4e-11, 2.0 + 1e-10], TRUNCATED_NORMAL_MP,
         loc=0.1, scale=1.3, lower=2.0, upper=2.0 + 1e-10, note="width 1e-10, mpmath"),
    case(TruncatedNormal, [-3e-9, -2.5e-9, -2e-9], TRUNCATED_NORMAL_MP,
         loc=0.0, scale=1e-9, lower=-3e-9, upper=-2e-9, note="tiny scale, mpmath"),
    case(TruncatedNormal, [-5.0, 0.0, 1e3], TRUNCATED_NORMAL_MP,
         loc=0.0, scale=1e10, lower=-5.0, upper=1e3, note="huge scale, mpmath"),
    case(TruncatedNormal, [0.0, 0.1, 3.0, 40.0], TRUNCATED_NORMAL,
         loc=0.5, scale=1.5, lower=0.0, upper=np.inf, note="no upper bound"),
    case(TruncatedNormal, [-30.0, -2.0, -1.0], TRUNCATED_NORMAL,
         loc=0.0, scale=1.0, lower=-np.inf, upper=-1.0, note="no lower bound"),
    case(TruncatedNormal, [-3.0, 0.0, 2.0], TRUNCATED_NORMAL,
         loc=1.0, scale=2.0, lower=-np.inf, upper=np.inf, note="no bounds: Normal"),
    case(TruncatedNormal, [30.0, 30.5, 45.0], TRUNCATED_NORMAL_MP,
         loc=0.0, scale=1.0, lower=30.0, upper=np.inf, note="far tail, no upper bound, mpmath"),
]

INVALID = [
    (HalfNormal, dict(scale=0.0), "scale"),
    (HalfNormal, dict(scale=-1.0), "scale"),
    (LogNormal, dict(loc=0.0, scale=0.0), "scale"),
    (LogNormal, dict(loc=0.0, scale=-2.0), "scale"),
    (StudentT, dict(df=0.0, loc=0.0, scale=1.0), "df"),
    (StudentT, dict(df=-1.0, loc=0.0, scale=1.0), "df"),
    (StudentT, dict(df=3.0, loc=0.0, scale=0.0), "scale"),
    (HalfStudentT, dict(df=0.0, scale=1.0), "df"),
    (HalfStudentT, dict(df=3.0, scale=-1.0), "scale"),
    (Cauchy, dict(loc=0.0, scale=0.0), "scale"),
    (Cauchy, dict(loc=0.0, scale=-1.0), "scale"),
    (HalfCauchy, dict(scale=0.0), "scale"),
    (HalfCauchy, dict(scale=-3.0), "scale"),
    (Laplace, dict(loc=0.0, scale=0.0), "scale"),
    (Laplace, dict(loc=0.0, scale=-1.0), "scale"),
    (Logistic, dict(loc=0.0, scale=0.0), "scale"),
    (Logistic, dict(loc=0.0, scale=-1.0), "scale"),
    (Gumbel, dict(loc=0.0, scale=0.0), "scale"),
    (Gumbel, dict(loc=0.0, scale=-1.0), "scale"),
    (SkewNormal, dict(loc=0.0, scale=0.0, alpha=1.0), "scale"),
    (SkewNormal, dict(loc=0.0, scale=-1.0, alpha=1.0), "scale"),
    (TruncatedNormal, dict(loc=0.0, scale=0.0, lower=-1.0, upper=1.0), "scale"),
    (TruncatedNormal, dict(loc=0.0, scale=-1.0, lower=-1.0, upper=1.0), "scale"),
    (TruncatedNormal, dict(loc=0.0, scale=1.0, lower=1.0, upper=1.0), "upper"),
    (TruncatedNormal, dict(loc=0.0, scale=1.0, lower=2.0, upper=1.0), "upper"),
]
