"""The row type of the distribution case table (``tests/cases.py``).

Tolerances: ``rtol`` is the relative error allowed against the reference. It
is 1e-12 by default, where scipy's own value is accurate to a few ulps; a
looser value on a row says why (the reference, not our kernel, limits it).
"""

from typing import Callable, NamedTuple, Tuple

import numpy as np
from scipy import stats



class Case(NamedTuple):
    """One row: ``dist(**params)`` at the points ``x`` against ``reference``."""

    dist: type
    params: dict
    x: Tuple[float, ...]
    reference: Callable  # reference(x_array, **params) -> log density array
    rtol: float = 1e-12
    note: str = ""

    @property
    def id(self):
        args = ",".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{self.dist.spec.name}({args}){'-' + self.note if self.note else ''}"


def case(dist, x, reference, rtol=1e-12, note="", **params):
    return Case(dist, params, tuple(x), reference, rtol, note)


def scipy_ref(frozen):
    """A reference from a scipy.stats distribution built from our parameters."""
    def reference(x, **params):
        d = frozen(**params)
        return d.logpmf(x) if hasattr(d, "logpmf") else d.logpdf(x)
    return reference
