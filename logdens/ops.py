"""The elementwise ops of model expressions, in one table.

Each op says everything the rest of the package needs about it: its numpy
implementation (the interpreter in ``logdens.evaluate``), its value and its
derivatives as templates of generated code (``codegen``), the operator that
writes it, if any, and so whether it is a user-facing function ``ld.<name>``
(``logdens.expr.FUNCTIONS``). A new elementwise function is one entry here.

Templates are Python source over the arguments' variables ``{0}``, ``{1}``
and, in derivatives, the op's value ``{v}``; they may call ``math``,
``special`` and ``vmath`` (``logdens.distributions``), which every generated
module imports. ``vmath``'s ``exp`` and ``log`` rather than ``math``'s, so
that loops vectorize.
"""

from typing import Callable, NamedTuple

import numpy as np
from scipy import special as sp


class Op(NamedTuple):
    """One elementwise op.

    ``derivatives[k]`` is d value / d argument ``k``. ``symbol`` is the Python
    operator that writes the op (``+`` for add, ``-`` for neg, ``<`` for lt),
    shown infix in the labels of binary ops; None for an op users call as
    ``ld.<name>``.
    """

    name: str
    arity: int
    numpy: Callable
    value: str
    derivatives: tuple
    symbol: str | None = None


def _indicator(compare):
    """A comparison as numpy floats 1.0 / 0.0."""
    return lambda a, b: compare(a, b).astype(float)


def _softplus(x):
    """log(1 + exp(x)), stable for large x."""
    return np.logaddexp(0.0, x)


OPS = {op.name: op for op in (
    Op("neg", 1, np.negative, "-{0}", ("-1.0",), symbol="-"),
    Op("exp", 1, np.exp, "vmath.exp({0})", ("{v}",)),
    Op("log", 1, np.log, "vmath.log({0})", ("1.0 / {0}",)),
    Op("log1p", 1, np.log1p, "vmath.log1p({0})", ("1.0 / (1.0 + {0})",)),
    Op("expm1", 1, np.expm1, "math.expm1({0})", ("({v} + 1.0)",)),
    Op("sqrt", 1, np.sqrt, "math.sqrt({0})", ("0.5 / {v}",)),
    Op("square", 1, np.square, "{0} * {0}", ("2.0 * {0}",)),
    Op("abs", 1, np.abs, "abs({0})", ("math.copysign(1.0, {0})",)),
    Op("logistic", 1, sp.expit, "special.logistic({0})", ("{v} * (1.0 - {v})",)),
    Op("logit", 1, sp.logit, "special.logit({0})", ("1.0 / ({0} * (1.0 - {0}))",)),
    Op("log_logistic", 1, sp.log_expit, "special.log_logistic({0})", ("special.logistic(-{0})",)),
    Op("softplus", 1, _softplus, "special.log1pexp({0})", ("special.logistic({0})",)),
    Op("tanh", 1, np.tanh, "vmath.tanh({0})", ("(1.0 - {v} * {v})",)),
    Op("sin", 1, np.sin, "math.sin({0})", ("math.cos({0})",)),
    Op("cos", 1, np.cos, "math.cos({0})", ("-math.sin({0})",)),
    # max and a comparison select without a branch, so loops over them vectorize;
    # the derivative at 0 is 0 (the subgradient PyTorch and JAX use)
    Op("relu", 1, lambda x: np.maximum(x, 0.0), "max({0}, 0.0)", ("(1.0 if {0} > 0.0 else 0.0)",)),
    Op("lgamma", 1, sp.gammaln, "math.lgamma({0})", ("special.digamma({0})",)),
    Op("digamma", 1, sp.digamma, "special.digamma({0})", ("special.trigamma({0})",)),
    # d erf(x) / dx = 2 / sqrt(pi) * exp(-x^2)
    Op("erf", 1, sp.erf, "math.erf({0})", ("1.1283791670955126 * vmath.exp(-{0} * {0})",)),
    Op("add", 2, np.add, "{0} + {1}", ("1.0", "1.0"), symbol="+"),
    Op("sub", 2, np.subtract, "{0} - {1}", ("1.0", "-1.0"), symbol="-"),
    Op("mul", 2, np.multiply, "{0} * {1}", ("{1}", "{0}"), symbol="*"),
    Op("div", 2, np.divide, "{0} / {1}", ("1.0 / {1}", "-{v} / {1}"), symbol="/"),
    Op("pow", 2, np.power, "{0} ** {1}", ("{1} * {0} ** ({1} - 1.0)", "{v} * vmath.log({0})"), symbol="**"),
    Op("logaddexp", 2, np.logaddexp, "special.logaddexp({0}, {1})",
       ("vmath.exp({0} - {v})", "vmath.exp({1} - {v})")),
    # comparisons are 1.0 or 0.0, flat (derivative 0) on either side, for ld.where
    *(Op(name, 2, _indicator(fn), f"(1.0 if {{0}} {symbol} {{1}} else 0.0)", ("0.0", "0.0"), symbol=symbol)
      for name, fn, symbol in (("lt", np.less, "<"), ("le", np.less_equal, "<="),
                               ("gt", np.greater, ">"), ("ge", np.greater_equal, ">="),
                               ("eq", np.equal, "=="), ("ne", np.not_equal, "!="))),
    # the larger / smaller of two, selects that vectorize; at a tie each side gets half
    # the derivative (as JAX's maximum)
    Op("maximum", 2, np.maximum, "max({0}, {1})", ("(1.0 if {0} > {1} else (0.5 if {0} == {1} else 0.0))",
                                                    "(0.0 if {0} > {1} else (0.5 if {0} == {1} else 1.0))")),
    Op("minimum", 2, np.minimum, "min({0}, {1})", ("(1.0 if {0} < {1} else (0.5 if {0} == {1} else 0.0))",
                                                    "(0.0 if {0} < {1} else (0.5 if {0} == {1} else 1.0))")),
    # broadcast_like(a, b): a at every element of b's shape, b's values unused (a scalar
    # location stretched over a multivariate value's event)
    Op("broadcast_like", 2, lambda a, b: np.add(a, np.zeros(np.shape(b))), "{0}", ("1.0", "0.0")),
    # where(c, a, b): a where c is not 0, else b (a select: loops still vectorize)
    Op("where", 3, lambda c, a, b: np.where(c != 0, a, b), "({1} if {0} != 0.0 else {2})",
       ("0.0", "(1.0 if {0} != 0.0 else 0.0)", "(0.0 if {0} != 0.0 else 1.0)")),
)}
