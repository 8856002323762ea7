"""The case table for distributions: every test in ``test_distributions.py``
runs over these rows, so a distribution is covered by adding rows, never by
special cases in test bodies. Rows live in one file per family of
distributions; ``CASES`` and ``INVALID`` are their concatenation.

``INVALID`` lists invalid parameters beyond the NaN and +-inf that every
argument gets automatically: (distribution, params, offending argument).
"""

from scipy import stats

import cases_discrete
import cases_location_scale
import cases_positive
from case_table import case, scipy_ref
from logdens.distributions.normal import Normal
from logdens.distributions.poisson import Poisson

NORMAL = scipy_ref(lambda loc, scale: stats.norm(loc, scale))
POISSON = scipy_ref(lambda rate: stats.poisson(rate))

CASES = [
    case(Normal, [-3.0, -0.5, 0.0, 0.7, 4.0], NORMAL, loc=0.0, scale=1.0),
    case(Normal, [-1e3, 1.5, 1e3], NORMAL, loc=1.5, scale=200.0),
    case(Normal, [1.0 - 3e-9, 1.0, 1.0 + 1e-9], NORMAL, loc=1.0, scale=1e-9, note="tiny scale"),
    case(Normal, [-1e10, 0.0, 3e10], NORMAL, loc=-2.0, scale=1e10, note="huge scale"),
    case(Normal, [-40.0, 35.0], NORMAL, loc=0.0, scale=1.0, note="tails"),
    case(Poisson, [0, 1, 2, 5, 30], POISSON, rate=3.5),
    case(Poisson, [0, 1, 3], POISSON, rate=1e-8, note="tiny rate"),
    case(Poisson, [0, 999_000, 1_000_000, 1_003_000], POISSON, rate=1e6, note="huge rate"),
    case(Poisson, [0, 50], POISSON, rate=0.5, note="tail"),
]

INVALID = [
    (Normal, dict(loc=0.0, scale=0.0), "scale"),
    (Normal, dict(loc=0.0, scale=-1.0), "scale"),
    (Poisson, dict(rate=0.0), "rate"),
    (Poisson, dict(rate=-2.0), "rate"),
]

CASES += cases_location_scale.CASES + cases_positive.CASES + cases_discrete.CASES
INVALID += cases_location_scale.INVALID + cases_positive.INVALID + cases_discrete.INVALID
