"""``ld.Mixture``: a finite mixture of univariate distributions of any family.

    p(x | w, components) = sum_k w_k p_k(x),   log p = logsumexp_k(log w_k + log p_k(x))

Support: the components' common support (all continuous or all discrete,
with the same bounds). Parameters: ``weights`` of length K on the simplex,
``components`` K univariate distributions. PyMC's ``pm.Mixture(w, comp_dists)``,
NumPyro's ``MixtureGeneral``; there is no scipy.stats equivalent.

In a model the density is built from expressions the engine already lowers
(``ld.logaddexp`` of ``log w_k + component.logpdf(x)``): an observed Mixture
is a per-observation likelihood (``Model.potential(..., observed=True)``),
a Mixture prior a potential of its parameter. No kernel of its own, so the
gradient has the components' closed-form partials.
"""

import numpy as np
from scipy import special as sp

from logdens.distributions import random
from logdens.distributions.constraints import Constraint, contains, describe
from logdens.distributions.frozen import Distribution, InvalidArgumentError, _first_violation, is_numeric
from logdens.distributions.uniform import Uniform
from logdens.evaluate import evaluate
from logdens.expr import FUNCTIONS, Element, Expr, LogSoftmax, ModelError, Unary, as_expr
from logdens.expr import logsumexp as expr_logsumexp

#: How far numeric weights may sum from 1 (Stan's simplex tolerance).
WEIGHT_TOLERANCE = 1e-8


class Mixture:
    """A finite mixture: draw component ``k`` with probability ``weights[k]``,
    then ``x`` from it.

    Parameters
    ----------
    weights : array_like or expression
        Numbers (shape ``(K,)``, or ``(..., K)`` outside models: a batch of
        weight vectors) that are >= 0 and sum to 1 along the last axis; or a
        model expression of shape ``(K,)`` (a ``ld.simplex`` parameter,
        ``ld.softmax(z)``); or a list of K scalar expressions
        (``[w, 1 - w]``). Expressions are not checked to sum to 1.
    components : sequence of Distribution
        K univariate distributions (``ld.Normal(mu[0], s)``, ``ld.Poisson(rate)``),
        with one support; their parameters may be model expressions.

    Examples
    --------
    >>> ld.Mixture([0.3, 0.7], [ld.Normal(0, 1), ld.Normal(3, 1)]).logpdf(1.0)
    >>> m.observe("y", ld.Mixture(w, [ld.Normal(mu[0], s), ld.Normal(mu[1], s)]), y)
    """

    def __init__(self, weights, components):
        if isinstance(components, Distribution) or not isinstance(components, (list, tuple)):
            raise TypeError(f"Mixture: components must be a list of distributions, got {components!r}")
        self.components = tuple(components)
        if not self.components:
            raise InvalidArgumentError("Mixture: needs at least one component")
        for k, c in enumerate(self.components):
            if not isinstance(c, Distribution):
                raise TypeError(f"Mixture: components[{k}] must be a distribution (ld.Normal(...)), got {c!r}")
            if c.spec.multivariate:
                raise InvalidArgumentError(f"Mixture: components[{k}] is {c.spec.name}, a multivariate "
                                           "distribution; components must be univariate")
        self.weights = self._checked_weights(weights)
        self.support, self._bounds = _common_support(self.components)

    def _checked_weights(self, weights):
        """Numeric weights as an array (checked), a vector expression, or a tuple of
        K scalar expressions."""
        k = len(self.components)
        if is_numeric(weights):
            w = np.asarray(weights, dtype=float)
            if w.ndim == 0 or w.shape[-1] != k:
                raise InvalidArgumentError(f"Mixture: weights have shape {w.shape} but there are {k} "
                                           f"components: the last axis must have length {k}")
            ok = np.isfinite(w) & (w >= 0.0)
            if not np.all(ok):
                raise InvalidArgumentError(f"Mixture: {_first_violation('weights', w, ok)}, must be >= 0")
            total = np.sum(w, axis=-1)
            ok = np.abs(total - 1.0) <= WEIGHT_TOLERANCE
            if not np.all(ok):
                where = _first_violation("weights", total, ok)  # "weights=1.1", "weights[3]=1.1"
                raise InvalidArgumentError(f"Mixture: {where.replace('=', ' sum to ', 1)}, must sum to 1")
            return w
        if isinstance(weights, (list, tuple)):
            if len(weights) != k:
                raise InvalidArgumentError(f"Mixture: {len(weights)} weights but {k} components")
            items = tuple(as_expr(v) for v in weights)
            for j, v in enumerate(items):
                if v.shape != ():
                    raise ModelError(f"Mixture: weights[{j}] = {v.label()} has shape {v.shape}; a list "
                                     "of weights holds scalars")
            return items
        w = as_expr(weights)
        if w.shape != (k,):
            raise ModelError(f"Mixture: weights {w.label()} have shape {w.shape} but there are {k} "
                             f"components: expected shape ({k},)")
        return w

    @property
    def numeric(self):
        """Whether the weights and every component's parameters are numbers (no model expression)."""
        return isinstance(self.weights, np.ndarray) and all(c.numeric for c in self.components)

    @property
    def discrete(self):
        """Whether the value is an integer (the components have log mass functions)."""
        return self.support.integer

    # ----- in a model: the density as an expression ------------------------
    def _log_weights(self):
        """The K log weights as scalar expressions (numbers for numeric weights)."""
        w = self.weights
        if isinstance(w, np.ndarray):
            if w.ndim != 1:
                raise ModelError(f"Mixture: weights of shape {w.shape} in a model; give one weight "
                                 "vector of shape (K,)")
            with np.errstate(divide="ignore"):
                return [float(v) for v in np.log(w)]
        if isinstance(w, tuple):
            return [FUNCTIONS["log"](v) for v in w]
        if isinstance(w, Unary) and w.op == "exp":  # log(exp(a)) is a, exactly
            inner = w.children[0]
            if isinstance(inner, LogSoftmax):  # ld.softmax(z): log w_k = z_k - logsumexp(z)
                z = inner.children[0]
                total = expr_logsumexp(z)
                return [Element(z, k) - total for k in range(len(self.components))]
            return [Element(inner, k) for k in range(len(self.components))]
        return [FUNCTIONS["log"](Element(w, k)) for k in range(len(self.components))]

    def _logpdf_expression(self, x):
        """``logsumexp_k(log w_k + component_k.logpdf(x))`` elementwise, as a tree of
        ``logaddexp`` (stable: each is shifted by its larger argument)."""
        x = as_expr(x)
        parts = [lw + c.logpdf(x) for lw, c in zip(self._log_weights(), self.components)
                 if not (isinstance(lw, float) and lw == -np.inf)]  # a weight of 0 adds nothing
        while len(parts) > 1:  # pairwise: depth log2(K)
            pairs = [FUNCTIONS["logaddexp"](a, b) for a, b in zip(parts[::2], parts[1::2])]
            parts = pairs + parts[len(pairs) * 2:]
        return parts[0]

    # ----- numbers: scipy-like -------------------------------------------
    def logpdf(self, x):
        """Normalized log density (log mass if discrete) at ``x``; ``-inf`` outside the support.

        When ``x``, a weight or a component's parameter is a model expression,
        the result is the expression of this log density (for potentials).
        """
        if isinstance(x, Expr) or not self.numeric:
            return self._logpdf_expression(x)
        x = np.asarray(x, dtype=float)
        nan = np.isnan(x)
        if np.any(nan):
            raise InvalidArgumentError(f"Mixture: {_first_violation('x', x, ~nan)}, must not be NaN")
        lps = np.stack(np.broadcast_arrays(*[np.asarray(c.logpdf(x), dtype=float) for c in self.components]),
                       axis=-1)
        with np.errstate(divide="ignore"):  # a weight of 0, a point outside the support: -inf
            # scipy's logsumexp shifts by the largest term: no underflow in the tails
            out = sp.logsumexp(np.log(self.weights) + lps, axis=-1)
        return out[()] if out.ndim == 0 else out

    def logpmf(self, x):
        """Alias of ``logpdf`` in scipy's vocabulary for discrete distributions."""
        return self.logpdf(x)

    def rvs(self, size=None, seed=None):
        """Random draws, scipy style: ``Mixture(w, comps).rvs(size=3, seed=0)``.

        ``size`` and ``seed`` as in ``Distribution.rvs``: the weights and the
        components' parameters broadcast to ``size``; the same seed gives the
        same draws on any machine.
        """
        out = self.draw(random.seeded_state(seed, "Mixture.rvs"), size)
        return out[()] if out.ndim == 0 else out

    def draw(self, state, size=None):
        """Draws from an explicit generator ``state``, advanced in place: the
        component of each element by its weights (one uniform draw each), then
        the element from that component (``Distribution.draw``). Always an array."""
        if not self.numeric:
            raise TypeError("Mixture: parameters are model expressions; draw from it with "
                            "ld.sample_prior_predictive or ld.sample_posterior_predictive")
        params = [np.shape(v) for c in self.components for v in c.params.values()]
        shape = np.broadcast_shapes(self.weights.shape[:-1], *params)
        if size is not None:
            size = tuple(int(d) for d in np.atleast_1d(size))
            try:
                fits = np.broadcast_shapes(shape, size) == size
            except ValueError:
                fits = False
            if not fits:
                raise ValueError(f"Mixture.rvs: size={size} does not fit the parameters' broadcast shape {shape}")
            shape = size
        which = self._components_drawn(state, shape)
        out = np.zeros(shape, dtype=np.int64 if self.discrete else float)
        for k, c in enumerate(self.components):
            chosen = which == k
            if chosen.any():  # the elements drawn from component k, each with its own parameters
                part = type(c)(**{n: np.broadcast_to(v, shape)[chosen] for n, v in c.params.items()})
                out[chosen] = part.draw(state, (int(chosen.sum()),))
        return out

    def _components_drawn(self, state, shape):
        """The component of each element: k where u lies in [W_{k-1}, W_k), W the
        cumulative weights, u uniform on [0, W_K)."""
        u = Uniform(0.0, 1.0).draw(state, shape)
        cumulative = np.cumsum(np.broadcast_to(self.weights, shape + self.weights.shape[-1:]), axis=-1)
        u = u * cumulative[..., -1]  # the weights sum to 1 only to rounding
        return np.sum(cumulative[..., :-1] <= u[..., None], axis=-1)

    # ----- the support ------------------------------------------------------
    def support_constraint(self, what):
        """The support as a constraint with numeric bounds (a parameter's default
        constraint); a ModelError when a bound is an array or an expression."""
        for side, bound in zip(("lower", "upper"), self._bounds):
            if bound is not None and not isinstance(bound, float):
                raise ModelError(f"{what}: the support of its Mixture prior has a {side} bound given by "
                                 "a component's parameter that is not a number; give an explicit constraint")
        return self.support

    def check_value(self, x, data, where, shown="x"):
        """A ModelError naming the term (``where``), index and value when observed
        ``x`` (numbers; ``shown`` in the error) lies outside the support. Bounds
        given by data expressions are read from ``data`` (name -> array); bounds
        that depend on parameters are not checked (the density is ``-inf`` there)."""
        known, constraint = {}, self.support
        for side, bound in zip(("lower", "upper"), self._bounds):
            name = getattr(constraint, side)  # a component's parameter (Binomial's "n") or a number
            if isinstance(bound, Expr):
                if bound.depends_on_params():
                    constraint = constraint._replace(**{side: None})
                    continue
                known[name] = np.asarray(evaluate(bound, data), dtype=float)
            elif isinstance(bound, np.ndarray):
                known[name] = bound
        ok = contains(constraint, x, known)
        if not np.all(ok):
            raise ModelError(f"{where}: Mixture value x: {_first_violation(shown, np.asarray(x), ok)}, "
                             f"{describe(constraint)}")

    def __repr__(self):
        w = self.weights
        weights = (np.array2string(w, separator=", ") if isinstance(w, np.ndarray)
                   else f"[{', '.join(v.label() for v in w)}]" if isinstance(w, tuple) else w.label())
        return f"Mixture(weights={weights}, components=[{', '.join(repr(c) for c in self.components)}])"


def _resolved_bounds(component):
    """A component's support bounds, those naming its parameters replaced by their
    values: floats, arrays or expressions."""
    def resolve(bound):
        if not isinstance(bound, str):
            return None if bound is None else float(bound)
        value = component.params[bound]
        if isinstance(value, np.ndarray):
            return float(value) if value.ndim == 0 else value
        return value
    support = component.spec.support
    return resolve(support.lower), resolve(support.upper)


def _same_bound(a, b):
    if isinstance(a, Expr) or isinstance(b, Expr):
        return a is b
    if a is None or b is None:
        return a is b
    return np.shape(a) == np.shape(b) and bool(np.all(np.asarray(a) == np.asarray(b)))


def _common_support(components):
    """``(support, bounds)``: one support for every component, an
    InvalidArgumentError naming two that differ. A closed end of any component
    closes the mixture's (its density is finite there)."""
    first = components[0]
    bounds = _resolved_bounds(first)
    for k, c in enumerate(components[1:], 1):
        if c.spec.support.integer != first.spec.support.integer or not all(
                _same_bound(a, b) for a, b in zip(_resolved_bounds(c), bounds)):
            raise InvalidArgumentError(
                f"Mixture: components[0] {first.spec.name} has support {_support_text(first)} but "
                f"components[{k}] {c.spec.name} has {_support_text(c)}; every component needs one support "
                "(all continuous or all discrete, with the same bounds)")
    lower_closed = any(c.spec.support.lower_closed for c in components)
    upper_closed = any(c.spec.support.upper_closed for c in components)
    closed = [c.spec.support for c in components
              if (c.spec.support.lower_closed, c.spec.support.upper_closed) == (lower_closed, upper_closed)]
    # a bound that is an array or an expression keeps the name of the parameter that gives it
    named = [b if isinstance(b, float) or b is None else name
             for b, name in zip(bounds, (first.spec.support.lower, first.spec.support.upper))]
    support = Constraint((closed or [first.spec.support])[0].name, named[0], named[1], lower_closed,
                         upper_closed, first.spec.support.integer)
    return support, bounds


def _support_text(component):
    """``reals in (0.0, inf)``, ``integers in [0.0, n]``: a support in an error."""
    support = component.spec.support

    def shown(bound, default):
        if bound is None:
            return default
        return bound.label() if isinstance(bound, Expr) else (
            f"array{list(bound.shape)}" if isinstance(bound, np.ndarray) else repr(bound))
    lower, upper = _resolved_bounds(component)
    return (f"{'integers' if support.integer else 'reals'} in {'[' if support.lower_closed else '('}"
            f"{shown(lower, '-inf')}, {shown(upper, 'inf')}{']' if support.upper_closed else ')'}")
