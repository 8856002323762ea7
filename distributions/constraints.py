"""The one vocabulary for supports of values and constraints of parameters.

A constraint is data, not code: the public API validates numbers against it,
the engine picks an unconstraining transform from it, and the tests draw
points from it. Bounds are numbers or the name of another argument of the
same distribution (``Uniform``'s value lies in ``interval("lower", "upper")``);
a parameter's bounds may also be model expressions (``interval(0, 1 - alpha1)``,
``logdens.bounds``).
"""

import numbers
from typing import NamedTuple, Union

import numpy as np

Bound = Union[float, str, None, object]  # object: a model expression (logdens.bounds)


class InvalidArgumentError(ValueError):
    """An argument of a distribution violates its constraint."""


def is_numeric(value):
    """Whether ``value`` is a number or array (as opposed to a model expression)."""
    if isinstance(value, (numbers.Number, np.ndarray, np.generic)):
        return True
    if isinstance(value, (list, tuple)):
        return all(is_numeric(v) for v in value)
    return False


class Constraint(NamedTuple):
    """A set of admissible values.

    Attributes
    ----------
    name : str
        One of ``real``, ``positive``, ``nonnegative``, ``greater_than``,
        ``less_than``, ``interval``, ``unit_interval``, ``nonnegative_integer``,
        ``integer_interval``, ``simplex``, ``ordered``, ``positive_ordered``,
        ``cholesky_corr``, ``cholesky_cov``, ``corr_matrix``, ``cov_matrix``,
        ``sum_to_zero``, ``unit_vector``.
    lower, upper : float, str, expression or None
        Bounds; a string names another argument whose value is the bound, an
        expression of a model's parameters bounds a parameter.
    lower_closed, upper_closed : bool
        Whether the bound itself belongs to the set.
    integer : bool
        Whether only integers belong to the set.
    infinite : bool
        Whether -inf and inf belong to the set where its bounds allow them:
        a truncation's bound, where an infinite one means none.
    """

    name: str
    lower: Bound = None
    upper: Bound = None
    lower_closed: bool = False
    upper_closed: bool = False
    integer: bool = False
    infinite: bool = False

    def __repr__(self):
        plain = (self.lower is None and self.upper is None) or self.name in EVENT_CONSTRAINTS
        return f"ld.{self.name}" if plain else describe(self)


def greater_than(lower, closed=False):
    """Values above ``lower`` (a number or an argument name)."""
    return Constraint("greater_than", lower=lower, lower_closed=closed)


def less_than(upper, closed=False):
    """Values below ``upper`` (a number or an argument name)."""
    return Constraint("less_than", upper=upper, upper_closed=closed)


def interval(lower, upper, closed=False):
    """Values between ``lower`` and ``upper``; the ends belong to it if ``closed``."""
    return Constraint("interval", lower, upper, closed, closed)


def integer_interval(lower, upper):
    """Integers ``lower, lower + 1, ..., upper`` (bounds may be argument names)."""
    return Constraint("integer_interval", lower, upper, True, True, integer=True)


real = Constraint("real")
positive = Constraint("positive", lower=0.0)
nonnegative = Constraint("nonnegative", lower=0.0, lower_closed=True)
unit_interval = Constraint("unit_interval", 0.0, 1.0, True, True)
nonnegative_integer = Constraint("nonnegative_integer", lower=0.0, lower_closed=True, integer=True)
# Event constraints: they hold for a whole vector, not element by element.
simplex = Constraint("simplex", 0.0, 1.0, True, True)
ordered = Constraint("ordered")
positive_ordered = Constraint("positive_ordered", lower=0.0)
#: Lower-triangular with a positive diagonal and rows of unit length: the Cholesky
#: factor of a correlation matrix (LKJCholesky's support).
cholesky_corr = Constraint("cholesky_corr", -1.0, 1.0, True, True)

#: Lower-triangular with a positive diagonal: the Cholesky factor of a covariance matrix.
cholesky_cov = Constraint("cholesky_cov")
#: Symmetric positive definite with a unit diagonal: a correlation matrix (LKJCorr's support).
#: No elementwise bounds: a diagonal of 1 + 2e-16 from rounding would fail [-1, 1], where
#: the checks of the whole matrix (``LKJCorr``'s, ``unconstrain``'s) allow 1e-8.
corr_matrix = Constraint("corr_matrix")
#: Symmetric positive definite: a covariance matrix.
cov_matrix = Constraint("cov_matrix")
#: A vector whose entries sum to 0 (Stan's isometric transform).
sum_to_zero = Constraint("sum_to_zero")
#: A vector of length 1.
unit_vector = Constraint("unit_vector", -1.0, 1.0, True, True)

EVENT_CONSTRAINTS = ("simplex", "ordered", "positive_ordered", "cholesky_corr", "cholesky_cov",
                     "corr_matrix", "cov_matrix", "sum_to_zero", "unit_vector")


def describe(constraint):
    """The condition as a user reads it in an error message, e.g. ``must be > 0``."""
    c = constraint
    parts = []
    if c.lower is not None and c.upper is not None:
        left = "[" if c.lower_closed else "("
        right = "]" if c.upper_closed else ")"
        parts.append(f"in {left}{_fmt(c.lower)}, {_fmt(c.upper)}{right}")
    elif c.lower is not None:
        parts.append(f"{'>=' if c.lower_closed else '>'} {_fmt(c.lower)}{' (or inf: no bound)' if c.infinite else ''}")
    elif c.upper is not None:
        parts.append(f"{'<=' if c.upper_closed else '<'} {_fmt(c.upper)}")
    else:
        parts.append("a number (or infinite)" if c.infinite else "finite")
    if c.integer:
        parts.append("an integer")
    return "must be " + " and ".join(parts)


def _fmt(bound):
    if isinstance(bound, str):
        return bound
    return bound.label() if hasattr(bound, "label") else repr(float(bound))


def resolve_bounds(constraint, arguments):
    """Return ``(lower, upper)`` as numbers or arrays, looking up named bounds.

    Missing bounds become ``-inf`` / ``inf``.
    """
    def look_up(bound, default):
        if bound is None:
            return default
        return np.asarray(arguments[bound], dtype=float) if isinstance(bound, str) else bound

    return look_up(constraint.lower, -np.inf), look_up(constraint.upper, np.inf)


def contains(constraint, value, arguments=None):
    """Elementwise mask: which entries of ``value`` lie in the set.

    ``arguments`` maps argument names to values for named bounds. NaN is
    never contained; infinities only in a set marked ``infinite``, where its
    bounds allow them.
    """
    value = np.asarray(value, dtype=float)
    lower, upper = resolve_bounds(constraint, arguments or {})
    with np.errstate(invalid="ignore"):
        inside = np.isfinite(value) | (constraint.infinite & np.isinf(value))
        # a missing bound of an ``infinite`` set is its infinity, which belongs to it
        lower_closed = constraint.lower_closed or (constraint.infinite and constraint.lower is None)
        upper_closed = constraint.upper_closed or (constraint.infinite and constraint.upper is None)
        inside &= (value >= lower) if lower_closed else (value > lower)
        inside &= (value <= upper) if upper_closed else (value < upper)
        if constraint.integer:
            inside &= value == np.floor(value)
    return inside
