"""``ld.Model``: parameters, data, deterministics and terms, before compilation.

A model is a list of terms whose log densities add up: priors of parameters,
observed data, and potentials. ``compile()`` hands it to the engine and
returns a ``LogDensity``.
"""

import keyword
from typing import NamedTuple, Optional, Tuple

import numpy as np

from logdens.distributions.frozen import Distribution
from logdens import transforms
from logdens.expr import Data, Expr, ModelError, Param, as_expr, frozen_array, plate_shape


class Term(NamedTuple):
    """One summand of the model's log density.

    ``kind`` is ``"prior"`` (value is a parameter), ``"observe"`` (value is
    data) or ``"potential"`` (``dist`` is None and ``value`` is a scalar
    expression added as it is).
    """

    name: str
    kind: str
    dist: Optional[Distribution]
    value: Expr
    args: Tuple[Expr, ...]  # (x, *params) in kernel argument order; (value,) for a potential

    def params_read(self):
        """Names of the parameters the term's arguments read."""
        return {leaf.name for a in self.args for leaf in a.leaves() if isinstance(leaf, Param)}


def make_term(name, kind, dist, value):
    """A term with its distribution's parameters turned into expressions once."""
    params = () if dist is None else tuple(as_expr(v) for v in dist.params.values())
    return Term(name, kind, dist, value, (value,) + params)


def check_name(name, what="name"):
    """Reject names that are not plain identifiers: they end up in generated code."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise ModelError(f"{what} {name!r} must be a Python identifier not starting with '_' "
                         "(it names variables in generated code)")
    return name


class Model:
    """A probabilistic model built term by term.

    Examples
    --------
    >>> m = Model()
    >>> mu = m.param("mu", ld.Normal(0, 5))
    >>> m.observe("y", ld.Normal(mu, 1.0), np.array([0.1, -0.3]))
    >>> lp = m.compile()
    """

    def __init__(self):
        self.params = {}          # name -> Param
        self.transforms = {}      # name -> Transform
        self.data_nodes = {}      # name -> Data
        self.deterministics = {}  # name -> Expr
        self.terms = []
        self._names = set()

    def _claim(self, name, what):
        check_name(name, what)
        if name in self._names:
            raise ModelError(f"{what} {name!r}: the name is already used in this model")
        self._names.add(name)

    def param(self, name, prior=None, shape=(), constraint=None):
        """A parameter with an optional prior (no prior: flat, improper).

        The constraint defaults to the prior's support (``real`` without a
        prior); an explicit ``constraint`` overrides it.
        """
        self._claim(name, "parameter")
        shape = _checked_shape(shape, name)
        if len(shape) > 1:
            raise ModelError(f"parameter {name!r}: shape {shape}: only scalars and vectors are supported")
        if prior is not None and not isinstance(prior, Distribution):
            raise ModelError(f"parameter {name!r}: the prior must be a distribution, got {prior!r}")
        if constraint is None:
            constraint = prior.spec.support if prior is not None else transforms.c.real
            if prior is not None:
                constraint = _resolve_support(constraint, prior, name)
        self.transforms[name] = transforms.for_constraint(constraint, f"parameter {name!r}")
        if self.transforms[name].event and len(shape) != 1:
            raise ModelError(f"parameter {name!r}: the {constraint.name} constraint needs a vector shape")
        if self.transforms[name].event and shape[0] < 2:
            raise ModelError(f"parameter {name!r}: a {constraint.name} vector needs at least 2 elements")
        node = Param(name, shape, constraint)
        self.params[name] = node
        if prior is not None:
            self._add_term(make_term(name, "prior", prior, node))
        return node

    def data(self, name, value):
        """Named data: usable in expressions and replaceable by ``set_data``."""
        self._claim(name, "data")
        array = frozen_array(value, f"data {name!r}")
        node = Data(name, array, integer=np.issubdtype(array.dtype, np.integer))
        self.data_nodes[name] = node
        return node

    def deterministic(self, name, expr):
        """A named function of parameters kept in the sampler output."""
        self._claim(name, "deterministic")
        self._check_own(as_expr(expr), f"deterministic {name!r}")
        self.deterministics[name] = as_expr(expr)
        return self.deterministics[name]

    def observe(self, name, dist, value):
        """Observed data ``value`` (an array, becoming data named ``name``, or a data expression)."""
        if not isinstance(dist, Distribution):
            raise ModelError(f"observe {name!r}: expected a distribution, got {dist!r}")
        if isinstance(value, Expr):
            check_name(name, "observed term")
            if value.depends_on_params():
                raise ModelError(f"observe {name!r}: the observed value must be data, not a parameter expression")
        else:
            value = self.data(name, value)
        self._add_term(make_term(name, "observe", dist, value))

    def potential(self, name, expr):
        """Add a scalar expression to the log density (any function of parameters)."""
        self._claim(name, "potential")
        expr = as_expr(expr)
        if expr.shape != ():
            raise ModelError(f"potential {name!r}: must be a scalar expression, got shape {expr.shape}; "
                             "use ld.sum(...)")
        self._add_term(make_term(name, "potential", None, expr))

    def _add_term(self, term):
        if any(t.name == term.name for t in self.terms):
            raise ModelError(f"term {term.name!r}: a term of that name exists already")
        for arg in term.args:
            self._check_own(arg, f"term {term.name!r}")
        if term.dist is not None:
            plate_shape(term.args, lambda: f"term {term.name!r}: {term.dist.spec.name} arguments")
        self.terms.append(term)

    def _check_own(self, expr, what):
        """Refuse parameters and named data of another model (or a stale copy of ours)."""
        for leaf in expr.leaves():
            if isinstance(leaf, Param):
                kind, mine = "parameter", self.params.get(leaf.name)
            elif isinstance(leaf, Data) and leaf.name is not None:
                kind, mine = "data", self.data_nodes.get(leaf.name)
            else:
                continue
            if mine is not leaf:
                raise ModelError(f"{what}: {kind} {leaf.name!r} belongs to another model; "
                                 "build every term from this model's m.param(...) and m.data(...)")

    def snapshot(self):
        """A copy that later ``param``/``observe``/... calls on this model do not
        change: what a compiled density depends on is fixed at ``compile()``."""
        copy = Model.__new__(Model)
        copy.params, copy.transforms = dict(self.params), dict(self.transforms)
        copy.data_nodes, copy.deterministics = dict(self.data_nodes), dict(self.deterministics)
        copy.terms, copy._names = tuple(self.terms), frozenset(self._names)
        return copy

    def compile(self, backend="cpu", cache_dir=None, parallel=False):
        """Generate, compile (or load from the disk cache) and return a ``LogDensity``.

        ``parallel=True`` makes ``log_density_gradient`` split each term's
        plate into fixed chunks over threads, for large data. Elements at a
        chunk's own index are written directly; other gradient entries go
        through per-chunk rows of length ``dim``, summed in order (results do
        not depend on the thread count). The numba entry point used by
        samplers stays serial, since chains already run in parallel.
        """
        from logdens.engine import compile_model
        return compile_model(self.snapshot(), backend=backend, cache_dir=cache_dir, parallel=parallel)


def _checked_shape(shape, name):
    """``shape`` as a tuple of non-negative ints (``shape=2.7`` is an error, not 2)."""
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
            raise ModelError(f"parameter {name!r}: shape={shape!r}: lengths must be non-negative integers")
    return tuple(int(d) for d in dims)


def _resolve_support(support, prior, name):
    """The prior's support with bounds that name its own parameters replaced by numbers."""
    def resolve(bound):
        if not isinstance(bound, str):
            return bound
        value = prior.params[bound]
        if not isinstance(value, np.ndarray) or value.ndim != 0:
            raise ModelError(f"parameter {name!r}: the support of its prior {prior.spec.name} depends on "
                             f"{bound!r}, which must then be a number; give an explicit constraint")
        return float(value)
    return support._replace(lower=resolve(support.lower), upper=resolve(support.upper))
