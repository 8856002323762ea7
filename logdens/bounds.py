"""Parameters whose bounds are expressions of other parameters or data.

``m.param("beta1", constraint=ld.interval(0, 1 - alpha1))``, as GARCH(1,1)
needs, or a prior whose support moves with its arguments,
``ld.Uniform(0, 1 - alpha1)``. Stan writes ``real<lower=0, upper=1 - alpha1>``.

Such a parameter is sampled as a raw value r on a fixed set: r in (0, 1)
between two bounds, r > 0 past one. The parameter is the expression
``position`` of r: lower + (upper - lower) r, lower + r, or upper - r. The
engine compiles the model with every use of the parameter replaced by that
expression (``rewrite``), so the gradient reaches the parameters inside the
bounds through the ordinary reverse pass. Between two bounds the map from r
stretches by upper - lower: its log-Jacobian, log(upper - lower) per element,
is a term of kind ``"jacobian"`` (added only with the Jacobian), and an empty
interval (upper <= lower) gives the log density -inf through a second term,
with or without it. r's own transform (logistic, exp) and log-Jacobian are
the fixed-bound ones of ``logdens.transforms``. ``constrained`` and ``raw``
map between r and the parameter for ``constrain`` and ``unconstrain``.
"""

import math

import numpy as np

from logdens import expr as ex
from logdens.distributions import constraints as c
from logdens.evaluate import evaluate
from logdens.term import make_term


def has_expression(constraint):
    """Whether a bound of ``constraint`` is a model expression."""
    return isinstance(constraint.lower, ex.Expr) or isinstance(constraint.upper, ex.Expr)


def raw_constraint(constraint):
    """The fixed set of the raw value: (0, 1) between two bounds, (0, inf) past one."""
    both = constraint.lower is not None and constraint.upper is not None
    return c.interval(0.0, 1.0) if both else c.positive


def position(constraint, raw):
    """The parameter as an expression of its raw value ``raw``."""
    lower, upper = constraint.lower, constraint.upper
    if upper is None:
        return lower + raw
    if lower is None:
        return upper - raw
    return width(constraint) * raw if _is_zero(lower) else lower + width(constraint) * raw


def width(constraint):
    """upper - lower of an interval, as an expression."""
    lower, upper = constraint.lower, ex.as_expr(constraint.upper)
    return upper if _is_zero(lower) else upper - lower


def _is_zero(bound):
    return not isinstance(bound, ex.Expr) and bound == 0.0


def check(constraint, shape, what):
    """A ``ModelError`` naming ``what`` for an expression bound whose shape does not
    broadcast to the parameter's ``shape``."""
    for bound in (constraint.lower, constraint.upper):
        if not isinstance(bound, ex.Expr):
            continue
        try:
            fits = np.broadcast_shapes(bound.shape, shape) == tuple(shape)
        except ValueError:
            fits = False
        if not fits:
            raise ex.ModelError(f"{what}: its bound {bound.label()} has shape {bound.shape}, which does not "
                                f"broadcast to the parameter's shape {tuple(shape)}")


def bounded(model):
    """``name -> constraint`` of the parameters with expression bounds, in declaration
    order (a bound can only name parameters declared before)."""
    return {name: p.constraint for name, p in model.params.items() if has_expression(p.constraint)}


def rewrite(model):
    """``model`` as the engine compiles it: every use of a parameter with
    expression bounds is its ``position`` of the raw parameter of the same name,
    and each such interval adds its log-Jacobian and its emptiness check as
    terms. ``model`` itself when no parameter has expression bounds."""
    names = bounded(model)
    if not names:
        return model
    lowered = model.snapshot()
    memo, terms = {}, list(model.terms)
    for name, constraint in names.items():
        old = model.params[name]
        raw = ex.Param(name, old.shape, raw_constraint(constraint))
        lowered.params[name] = raw
        memo[id(old)] = (old, ex.substitute(position(constraint, raw), memo))  # its bounds may read earlier ones
        if constraint.lower is not None and constraint.upper is not None:
            terms += _interval_terms(name, constraint, old.shape)
    lowered.terms = tuple(term._replace(value=ex.substitute(term.value, memo),
                                        args=tuple(ex.substitute(a, memo) for a in term.args)) for term in terms)
    return lowered


def _interval_terms(name, constraint, shape):
    """The log-Jacobian of r -> lower + (upper - lower) r over ``shape``'s elements,
    and the check that upper > lower (a potential of 0 or -inf, flat)."""
    stretch = width(constraint)
    copies = math.prod(shape) // math.prod(stretch.shape)
    log_width = ex.sum(ex.FUNCTIONS["log"](stretch))
    empty = ex.sum(ex.FUNCTIONS["where"](stretch > 0.0, 0.0, -math.inf))
    return [make_term(f"_jacobian_{name}", "jacobian", None, log_width * copies if copies != 1 else log_width),
            make_term(f"_bounds_{name}", "potential", None, empty)]


def constrained(model, values, batch=False):
    """``values`` (name -> raw value of a bounded parameter, and everything its
    bounds read) with each bounded parameter's raw value replaced by the
    parameter, in declaration order; with ``batch``, values have a leading axis
    of draws as in ``evaluate``."""
    for name, constraint in bounded(model).items():
        raw = ex.Param(name, model.params[name].shape, raw_constraint(constraint))
        values[name] = np.asarray(evaluate(position(constraint, raw), values, batch), dtype=float)
    return values


def raw(name, constraint, x, values):
    """The raw value of bounded parameter ``name`` at ``x``, its bounds evaluated at
    ``values``; a ValueError naming the element outside its bounds."""
    lower = -np.inf if constraint.lower is None else evaluate(ex.as_expr(constraint.lower), values)
    upper = np.inf if constraint.upper is None else evaluate(ex.as_expr(constraint.upper), values)
    lower, upper = np.broadcast_to(lower, x.shape), np.broadcast_to(upper, x.shape)
    inside = (x > lower) & (x < upper)
    if not np.all(inside):
        at = tuple(int(i) for i in np.argwhere(~inside)[0])
        where = name + (f"[{', '.join(map(str, at))}]" if at else "")
        raise ValueError(f"unconstrain: parameter {where} = {float(x[at])!r} is outside its bounds "
                         f"({float(lower[at])!r}, {float(upper[at])!r}): {c.describe(constraint)}")
    if constraint.upper is None:
        return x - lower
    if constraint.lower is None:
        return upper - x
    return (x - lower) / (upper - lower)
