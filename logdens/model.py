"""``ld.Model``: parameters, data, deterministics and terms, before compilation.

A model is a list of terms whose log densities add up: priors of parameters,
observed data, and potentials. ``compile()`` hands it to the engine and
returns a ``LogDensity``.
"""

from typing import NamedTuple, Optional, Tuple

import numpy as np

from logdens.distributions.frozen import Distribution
from logdens import bounds
from logdens import dims as dimensions
from logdens import marginalize, missing, transforms
from logdens.expr import FUNCTIONS, Data, Expr, ModelError, Param, as_expr, frozen_array, kernel_plate
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


def check_name(name, what="name"):
    """Reject names that are not plain identifiers: generated code spells a name
    inside identifiers of its own (``w_lambda_1``: a keyword is fine), and
    generated arrays take names starting with ``_``."""
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise ModelError(f"{what} {name!r} must be a Python identifier not starting with '_' "
                         "(it is part of variable names in generated code)")
    return name


class Model:
    """A probabilistic model built term by term.

    Examples
    --------
    >>> m = Model(coords={"school": ["A", "B"]})
    >>> mu = m.param("mu", ld.Normal(0, 5), dims="school")
    >>> m.observe("y", ld.Normal(mu, 1.0), np.array([0.1, -0.3]), dims="school")
    >>> lp = m.compile()

    ``coords`` maps dim names to their values (``logdens.dims``); the
    samplers' DataTrees label the axes of variables given ``dims=`` with them.
    """

    def __init__(self, coords=None):
        self.params = {}          # name -> Param
        self.transforms = {}      # name -> Transform
        self.data_nodes = {}      # name -> Data
        self.deterministics = {}  # name -> Expr
        self.terms = []
        self.imputed = {}         # observed data name -> missing.Imputed: its missing entries
        self.coords = {}          # dim name -> read-only 1-D array of its values
        self.dims = {}            # variable or observed term name -> tuple of dim names
        self._names = {}          # name -> what holds it ("parameter", "data", ...)
        self._lengths = dimensions.DimLengths(self.coords)
        for dim, values in (coords or {}).items():
            self.add_coord(dim, values)

    def add_coord(self, name, values):
        """Give dim ``name`` the coordinates ``values`` (before or after variables use it)."""
        values = dimensions.coord_values(name, values)
        old = self.coords.get(name)
        if old is not None and not np.array_equal(old, values):
            raise ModelError(f"add_coord: dim {name!r} has coords already ({len(old)} values), "
                             "different from the new ones")
        known = self._lengths.lengths.get(name)
        if known is not None and known[0] != len(values):
            raise ModelError(f"add_coord: dim {name!r} has length {known[0]} ({known[1]}) but "
                             f"{len(values)} coords")
        self.coords[name] = values
        self._lengths.lengths[name] = (len(values), f"the coords of {name!r}")

    def _claim(self, name, kind, what):
        """Give ``name`` to a new ``kind`` of variable or term; ``what`` names the
        call in the error when something holds the name already."""
        check_name(name, kind)
        holder = self._names.get(name)
        if holder is not None:
            fix = "; to observe that array pass its node (what m.data returned)" if (
                (holder, kind) == ("data", "observed term")) else ""
            raise ModelError(f"{what}: the name is already used in this model by {holder} {name!r}{fix}")
        self._names[name] = kind

    def param(self, name, prior=None, shape=None, constraint=None, dims=None):
        """A parameter with an optional prior (no prior: flat, improper).

        The constraint defaults to the prior's support (``real`` without a
        prior); an explicit ``constraint`` overrides it. A prior of finite
        discrete support makes a discrete parameter, summed out when the
        model is compiled (``logdens.marginalize``). ``dims`` name its
        axis (PyMC's rule: without ``shape`` the dims' coords give the
        shape; with both, they must agree).
        """
        what = f"parameter {name!r}"
        dims = dimensions.as_dims(dims, what)
        mixture = isinstance(prior, Mixture)
        if shape is None and dims is None and prior is not None and not mixture and prior.spec.multivariate:
            shape = prior.event_shape()  # one event: MvNormal's d, LKJCholesky's (d, d)
        if shape is None:
            shape = () if dims is None else dimensions.shape_from_dims(what, dims, self._lengths)
        shape = _checked_shape(shape, name)
        if prior is not None and not mixture and prior.spec.multivariate:
            _check_fixed_event(prior, shape, what)
        self._lengths.check(what, dims, shape)
        self._claim(name, "parameter", what)
        if prior is not None and not isinstance(prior, (Distribution, Mixture)):
            raise ModelError(f"parameter {name!r}: the prior must be a distribution, got {prior!r}")
        if constraint is None and mixture:
            constraint = prior.support_constraint(what)
        elif constraint is None:
            constraint = prior.spec.support if prior is not None else transforms.c.real
            if prior is not None:
                constraint = _resolve_support(constraint, prior, name)
        if bounds.has_expression(constraint):
            for bound in (constraint.lower, constraint.upper):
                if isinstance(bound, Expr):
                    self._check_own(bound, f"{what}: its bound")
            bounds.check(constraint, shape, what)
        if constraint.integer and prior is not None and not mixture:  # summed out (logdens.marginalize)
            self.transforms[name] = marginalize.support(name, prior, constraint)
        else:
            self.transforms[name] = transforms.for_constraint(constraint, f"parameter {name!r}")
        if self.transforms[name].event:
            self.transforms[name].check_shape(shape, what)
        node = Param(name, shape, constraint)
        self.params[name] = node
        self._set_dims(name, what, dims, shape)
        if mixture:  # its density, built from expressions, is a potential of the parameter
            self._add_term(mixture_term(name, "potential", prior, node))
        elif prior is not None:
            self._add_term(make_term(name, "prior", prior, node))
        return node

    def data(self, name, value, dims=None):
        """Named data: usable in expressions and replaceable by ``set_data``
        (``dims`` name its axes)."""
        return self._add_data(name, value, dims, f"data {name!r}")

    def _add_data(self, name, value, dims, what, kind="data"):
        """``data(name, value, dims)`` for the call ``what``, which errors name
        (``observe`` of an array adds it as data, for a ``kind`` of "observed term")."""
        if name == "coords":
            raise ModelError(f"{what}: the name is reserved for set_data(..., coords=...)")
        array = frozen_array(value, what)
        dims = dimensions.as_dims(dims, what)
        self._lengths.check(what, dims, array.shape)
        self._claim(name, kind, what)
        node = Data(name, array, integer=np.issubdtype(array.dtype, np.integer))
        self.data_nodes[name] = node
        self._set_dims(name, f"data {name!r}", dims, array.shape)
        return node

    def deterministic(self, name, expr, dims=None):
        """A named function of parameters kept in the sampler output (``dims``
        name its axis there)."""
        what = f"deterministic {name!r}"
        expr, dims = as_expr(expr), dimensions.as_dims(dims, what)
        self._check_own(expr, what)
        self._lengths.check(what, dims, expr.shape)
        self._claim(name, "deterministic", what)
        self.deterministics[name] = expr
        self._set_dims(name, what, dims, expr.shape)
        return self.deterministics[name]

    def observe(self, name, dist, value=None, dims=None, *, observed=None):
        """Observed data ``value`` (an array, becoming data named ``name``, or a data expression).

        ``observed=`` is PyMC's spelling of ``value``: give one of them.
        ``dims`` name the observations' axis in ``log_likelihood`` and
        ``observed_data``; by default an observed named data array's dims.

        Missing entries of an array (NaN, or masked in a numpy masked array)
        are imputed as PyMC does (``logdens.missing``): they become the
        parameter ``<name>_unobserved``, the present ones the observed term
        ``<name>_observed``, and ``<name>`` a deterministic of the data with
        the imputed values, which ``observe`` returns (for other terms to
        read: an imputed predictor). ``set_data`` cannot change which entries
        are missing: compile the model again for that.
        """
        what = f"observe {name!r}"
        if (value is None) == (observed is None):
            raise ModelError(f"{what}: give the observed data once, as the third argument or as observed= "
                             f"(PyMC's spelling); got {'both' if value is not None else 'neither'}")
        value = observed if value is None else value
        if not isinstance(dist, (Distribution, Mixture)):
            raise ModelError(f"{what}: expected a distribution, got {dist!r}")
        dims = dimensions.as_dims(dims, what)
        if not isinstance(dist, Mixture) and dist.spec.multivariate:
            _check_fixed_event(dist, tuple(np.shape(value)) if not isinstance(value, Expr) else value.shape, what)
        mask = missing.missing_mask(value, what)
        if mask is not None:
            return missing.impute(self, name, dist, value, mask, dims)
        if isinstance(value, Expr):
            check_name(name, "observed term")
            if value.depends_on_params():
                raise ModelError(f"{what}: the observed value must be data, not a parameter expression")
            if dims is None and isinstance(value, Data):
                dims = self.dims.get(value.name)
            self._lengths.check(what, dims, value.shape)
            if self.data_nodes.get(name) is not value:  # the output names the term: one name, one thing
                self._claim(name, "observed term", what)
        if not isinstance(value, Expr):
            value = self._add_data(name, value, dims, what, "observed term")
        if isinstance(dist, Mixture):  # a per-observation likelihood built from expressions
            self._add_term(mixture_term(name, "likelihood", dist, value))
        else:
            self._add_term(make_term(name, "observe", dist, value), dims)
        self._set_dims(name, what, dims, value.shape)

    def _set_dims(self, name, what, dims, shape):
        """Record the dims of variable or observed term ``name`` (added to the
        model just now, so a failed call fixes no dim's length)."""
        if dims is not None:
            self._lengths.record(what, dims, shape)
            self.dims[name] = dims

    def potential(self, name, expr, observed=False, dims=None):
        """Add an expression to the log density (any function of parameters).

        A potential is a scalar. With ``observed=True`` it is a hand-written
        likelihood: a vector with one log-likelihood per observation (or a
        scalar, one observation), summed into the log density and, like an
        observed term, in ``pointwise_log_likelihood`` (hence the
        ``log_likelihood`` group and LOO) and ``per_sample_gradient``;
        ``dims`` name its axis there.
        """
        what = f"potential {name!r}"
        expr, dims = as_expr(expr), dimensions.as_dims(dims, what)
        if not observed and (expr.shape != () or dims is not None):
            raise ModelError(f"{what}: must be a scalar expression, got shape {expr.shape}; use "
                             "ld.sum(...), or observed=True for one log-likelihood per observation")
        self._check_own(expr, what)
        self._lengths.check(what, dims, expr.shape)
        self._claim(name, "potential", what)
        self._add_term(make_term(name, "likelihood" if observed else "potential", None, expr))
        self._set_dims(name, what, dims, expr.shape)

    def _add_term(self, term, dims=None):
        """Append ``term``; ``dims`` (of an observed term) must name the axes of its plate."""
        if any(t.name == term.name for t in self.terms):
            raise ModelError(f"term {term.name!r}: a term of that name exists already")
        for arg in term.args:
            self._check_own(arg, f"term {term.name!r}")
        if term.dist is not None:
            plate = kernel_plate(term.dist.spec, term.args,
                                 lambda: f"term {term.name!r}: {term.dist.spec.name} arguments")
            if dims is not None and term.value.shape[:len(plate)] != plate:
                raise ModelError(f"observe {term.name!r}: dims {dims} name the axes of the observed "
                                 f"value, shape {term.value.shape}, but the term's observations have "
                                 f"shape {plate}")
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
        copy.terms, copy._names = tuple(self.terms), dict(self._names)
        copy.imputed = dict(self.imputed)
        copy.coords, copy.dims = dict(self.coords), dict(self.dims)
        copy._lengths = self._lengths.copy(copy.coords)
        return copy

    def __repr__(self):
        """The model as a listing, one line per variable (``logdens.show``)."""
        from logdens import show
        return show.text(self)

    def _repr_html_(self):
        from logdens import show
        return show.html_table(self)

    def to_graphviz(self):
        """The model as a ``graphviz.Digraph`` (``logdens.graph``; needs ``pip install graphviz``)."""
        from logdens import graph
        return graph.to_graphviz(self)

    def compile(self, backend="cpu", cache_dir=None, parallel=False, dtype=None):
        """Generate, compile (or load from the disk cache) and return a ``LogDensity``.

        Discrete parameters (a finite support: ``ld.DiscreteUniform``,
        ``ld.Categorical``, ``ld.Bernoulli`` priors) are summed out first
        (``logdens.marginalize``); the samplers recover their draws.

        ``parallel=True`` makes ``log_density_gradient`` split each term's
        plate into fixed chunks over threads, for large data. Elements at a
        chunk's own index are written directly; other gradient entries go
        through per-chunk rows of length ``dim``, summed in order (results do
        not depend on the thread count). The numba entry point used by
        samplers stays serial, since chains already run in parallel.

        ``backend="cuda"`` returns a ``CudaLogDensity`` (``logdens.cuda_density``)
        whose value, gradient, batches and per-observation outputs run on a
        GPU (the ``cuda12``/``cuda13`` extras). There ``dtype=np.float32``
        keeps its float data on the device as float32 (and its index data as
        int32): half the bytes a large model's evaluation reads, with the
        arithmetic still in float64 (see ``CudaLogDensity``); the default,
        ``dtype=None``, is float64. Other backends take no ``dtype``.

        Warns (``ModelWarning``, once per model) of a parameter whose values can
        leave the constraint of a distribution argument it is (a real parameter
        as a scale) and of a parameter with no prior on an unbounded set
        (``logdens.model_warnings``).
        """
        from logdens import model_warnings
        model_warnings.warn(self)
        from logdens.engine import compile_model
        lowered, marginals = marginalize.rewrite(self.snapshot())  # discrete parameters summed out
        density = compile_model(lowered, backend=backend, cache_dir=cache_dir, parallel=parallel, dtype=dtype)
        return marginalize.attach(density, marginals) if marginals else density


def _check_fixed_event(prior, shape, what):
    """A ``ModelError`` unless ``shape`` ends in the event shape that ``prior``'s
    dim or steps fix (a kernel would take the value's and ignore them)."""
    event = prior.fixed_event_shape()
    if event is not None and tuple(shape[len(shape) - len(event):]) != event:
        raise ModelError(f"{what}: shape {shape} does not end in {event}, the shape of one value of "
                         f"{prior.spec.name} as its dim or steps fix it")


def _checked_shape(shape, name):
    """``shape`` as a tuple of non-negative ints (``shape=2.7`` is an error, not 2)."""
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
            raise ModelError(f"parameter {name!r}: shape={shape!r}: lengths must be non-negative integers")
    return tuple(int(d) for d in dims)


def _resolve_support(support, prior, name):
    """The prior's support with bounds that name its own arguments replaced by
    their values: numbers, or expressions (``logdens.bounds``)."""
    def resolve(bound):
        if not isinstance(bound, str):
            return bound
        value = prior.params[bound]
        if isinstance(value, np.ndarray) and value.ndim == 0:
            return float(value)
        return as_expr(value)
    return support._replace(lower=resolve(support.lower), upper=resolve(support.upper))
