"""A model's terms: the summands of its log density, as the engine and the
model's rewrites (bounds, marginalization) build and read them.

Below ``logdens.model`` so that the modules the model calls to rewrite its
terms (``bounds``, ``marginalize``) build terms without importing the model.
"""

from typing import NamedTuple, Optional, Tuple

from logdens.distributions.frozen import Distribution
from logdens.expr import FUNCTIONS, Expr, Param, as_expr
from logdens.expr import sum as expr_sum
from logdens.mixture import Mixture


class MixtureOf(NamedTuple):
    """What a term built from an ``ld.Mixture`` stands for: the mixture and its
    value ``x`` (observed data, or the parameter of a Mixture prior). The
    term's ``value`` is the log density as an expression, which the engine
    lowers like any potential; this is for predictive draws and printing."""

    dist: Mixture
    x: Expr


class Term(NamedTuple):
    """One summand of the model's log density.

    ``kind`` is ``"prior"`` (value is a parameter), ``"observe"`` (value is
    data), ``"potential"`` (``dist`` is None and ``value`` is a scalar
    expression added as it is) or ``"likelihood"`` (a potential whose
    elements are per-observation log-likelihoods, summed). ``mixture`` is set
    on the likelihood of an observed ``ld.Mixture`` and the potential of a
    Mixture prior (named after its parameter).
    """

    name: str
    kind: str
    dist: Optional[Distribution]
    value: Expr
    args: Tuple[Expr, ...]  # (x, *params) in kernel argument order; (value,) for a potential
    mixture: Optional[MixtureOf] = None

    @property
    def per_observation(self):
        """Whether the term's rows are observations: it has a pointwise
        log-likelihood and per-sample gradients."""
        return self.kind in ("observe", "likelihood")

    def params_read(self):
        """Names of the parameters the term's arguments read."""
        return {leaf.name for a in self.args for leaf in a.leaves() if isinstance(leaf, Param)}


def make_term(name, kind, dist, value):
    """A term with its distribution's parameters turned into expressions once; a
    multivariate one's scalar location stretched over the value's shape."""
    if dist is None:
        return Term(name, kind, dist, value, (value,))
    scalars = dist.scalars() if dist.spec.multivariate else ()
    params = tuple(FUNCTIONS["broadcast_like"](v, value) if n in scalars else as_expr(v)
                   for n, v in dist.params.items())
    return Term(name, kind, dist, value, (value,) + params)


def mixture_term(name, kind, mixture, x):
    """The term of ``mixture`` at ``x``: its log density as an expression,
    elementwise for a likelihood, summed for a prior's potential."""
    lp = mixture.logpdf(x)
    value = lp if kind == "likelihood" else expr_sum(lp)
    return Term(name, kind, None, value, (value,), MixtureOf(mixture, x))
