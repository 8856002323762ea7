"""Warnings a Stan user gets when a model is built, checked when it is compiled.

Two rules, both read from the constraints the model already has (the
distributions' parameter constraints in ``distributions.spec``, the
parameters' own constraints from their priors or ``constraint=``):

- a parameter used directly as a distribution's argument whose constraint
  its values can leave (a parameter on the whole real line as a scale, a
  rate, a concentration, a probability): the sampler then rejects every
  draw outside, silently, and the posterior is cut there;
- a parameter with no prior and an unbounded constraint, read by no
  potential: its density is flat on an infinite set, improper.

They run at ``compile()``, not when a term is added: a prior or potential
added after the parameter's first use would otherwise be warned about
wrongly, and only the whole model says that a parameter has none. Each
message is given once per model, however often it is compiled.
"""

import warnings

import numpy as np

from logdens.distributions.constraints import describe
from logdens.expr import ModelWarning, Param


def warn(model, stacklevel=3):
    """Emit each ``ModelWarning`` of ``model`` not emitted for it before."""
    given = model.__dict__.setdefault("_warned", set())
    for message in [*outside_support(model), *improper(model)]:
        if message not in given:
            given.add(message)
            warnings.warn(message, ModelWarning, stacklevel=stacklevel)


def outside_support(model):
    """Messages for parameters whose constraint lets them leave the constraint of
    the distribution argument they are (e.g. a real parameter as a scale)."""
    for term in model.terms:
        if term.dist is None:
            continue
        for spec_param, arg in zip(term.dist.spec.params, term.args[1:]):
            wanted = spec_param.constraint
            if not isinstance(arg, Param) or wanted.integer or not _leaves(arg.constraint, wanted):
                continue
            yield (f"parameter {arg.name!r} ({_support(arg.constraint)}) is the {spec_param.name} of "
                   f"{term.dist.spec.name} in term {term.name!r}, which {describe(wanted)}: the sampler "
                   f"rejects every draw of {arg.name!r} outside that, silently, and the posterior is cut "
                   f"there. Give {arg.name!r} a prior on that set (ld.HalfNormal, ld.Exponential, ld.Gamma "
                   f"for > 0; ld.Beta for [0, 1]) or constraint=, or pass a transform of it that lies there "
                   f"(ld.exp({arg.name}), ld.logistic({arg.name}))")


def improper(model):
    """Messages for parameters with no prior, an unbounded constraint, and no potential."""
    with_density = {t.name for t in model.terms if t.kind == "prior"}
    for t in model.terms:
        if t.kind in ("potential", "likelihood"):
            with_density |= t.params_read() | {t.name}
    for name, node in model.params.items():
        c = node.constraint
        if name in with_density or (_number(c.lower) and _number(c.upper)):
            continue
        yield (f"parameter {name!r} has no prior: its density is flat over an unbounded set "
               f"({_support(c)}), an improper prior, and it has no prior predictive draws. Give it a "
               f"prior, e.g. m.param({name!r}, ld.Normal(0, 10)) (one whose support is {c.name}), or "
               f"bound it: constraint=ld.interval(lower, upper)")


def _leaves(inner, outer):
    """Whether values in constraint ``inner`` can lie outside ``outer``'s numeric
    bounds (a bound that names another argument or is an expression: unknown, no)."""
    below = _number(outer.lower) and (inner.lower is None or _number(inner.lower) and inner.lower < outer.lower)
    above = _number(outer.upper) and (inner.upper is None or _number(inner.upper) and inner.upper > outer.upper)
    return below or above


def _number(bound):
    return isinstance(bound, (int, float, np.number)) and not isinstance(bound, bool)


def _support(c):
    """A parameter's constraint as a user reads it: ``support: real, any number``."""
    return "support: real, any number" if c.lower is None and c.upper is None and c.name == "real" else (
        f"support: {c.name}")
