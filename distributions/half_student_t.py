"""Half Student's t distribution: a StudentT(df, 0, scale) folded onto x >= 0.

    log p(x | df, scale) = log 2 + lgamma((df + 1) / 2) - lgamma(df / 2) - log(df pi) / 2
                           - log(scale) - (df + 1) / 2 log(1 + (x / scale)^2 / df)

Support: x >= 0 (zero included, as in Stan). Parameters: df > 0, scale > 0.
scipy has no class; the reference is ``log(2) + scipy.stats.t(df, 0, scale).logpdf(x)``
for x >= 0. Stan: ``student_t_lpdf(x | df, 0, scale)`` on a ``<lower=0>``
variable, plus log 2.
"""

import math

from .constraints import nonnegative, positive
from .frozen import Distribution
from .jit import jitable, kernel
from .spec import Param, Spec, Summand
from .student_t import standard_rvs
from .special import LOG_2
from .student_t import logpdf as t_logpdf, logpdf_grad as t_logpdf_grad


@jitable
def logpdf(x, df, scale):
    """Normalized log density; ``-inf`` for x < 0 or df, scale <= 0."""
    if not (0.0 <= x < math.inf):
        return -math.inf
    return LOG_2 + t_logpdf(x, df, 0.0, scale)


@kernel
def logpdf_grad(x, df, scale, keep):
    """``(lp, d_x, d_df, d_scale)``; see ``distributions.spec`` for ``keep``.

    The summands are StudentT's in the same order (loc = 0), with log 2 added
    to the constant one. At x = 0 ``d_x`` is the one-sided derivative, 0.
    """
    if not (0.0 <= x < math.inf):
        return -math.inf, 0.0, 0.0, 0.0
    lp, d_x, d_df, _, d_scale = t_logpdf_grad(x, df, 0.0, scale, keep)
    if keep[1]:
        lp += LOG_2
    return lp, d_x, d_df, d_scale


@jitable
def rvs(state, df, scale):
    """One draw: scale |t|, t a standard t draw."""
    return scale * abs(standard_rvs(state, df))


SPEC = Spec(
    name="HalfStudentT",
    params=(Param("df", positive), Param("scale", positive)),
    support=nonnegative,
    summands=(
        Summand(("df",), "lgamma((df + 1) / 2) - lgamma(df / 2) - log(df) / 2"),
        Summand((), "log 2 - log(pi) / 2"),
        Summand(("scale",), "-log(scale)"),
        Summand(("x", "df", "scale"), "-(df + 1) / 2 log(1 + (x / scale)**2 / df)"),
    ),
    logpdf=logpdf,
    logpdf_grad=logpdf_grad,
    rvs=rvs,
)


class HalfStudentT(Distribution):
    __doc__ = __doc__
    spec = SPEC
