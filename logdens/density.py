"""``LogDensity``: a compiled model, with BridgeStan's method names.

The protocol every sampler relies on, written down once:

- ``theta`` is the unconstrained parameter vector, float64 of length ``dim``.
- ``log_density`` may return ``-inf`` (a point outside the support, an
  invalid parameter); NaN is never returned (it would be a bug).
- Where the value is not finite the gradient is unspecified. A finite value
  comes with a finite gradient: where a gradient entry overflows (far in a
  tail, below lp = -1e150 in our sweeps) ``log_density_gradient`` rejects the
  point with ``-inf``, while ``log_density`` keeps its finite value.
- ``gradient(theta)`` is the gradient without the value (cheaper; see its
  docstring): there nothing is rejected.
- Returned arrays belong to the caller, except ``out`` arguments, which are
  filled in place and returned.
- ``numba_entry`` is ``(function, fdata, idata)``: ``function(theta, grad,
  fdata, idata) -> float`` is compiled with one signature shared by every
  model, so a sampler compiled once in numba calls any model.
"""

from typing import Callable, NamedTuple

import numpy as np
import scipy.sparse

from logdens import bounds
from logdens import dims as dimensions
from logdens import expr as ex
from logdens.distributions.constraints import EVENT_CONSTRAINTS, contains, describe
from logdens.distributions.frozen import _first_violation
from logdens import validate
from logdens.evaluate import evaluate
from logdens.row_order import RowOrder


class NumbaEntry(NamedTuple):
    """The numba-level entry point: ``function(theta, grad, fdata, idata) -> lp``."""

    function: Callable
    fdata: np.ndarray
    idata: np.ndarray


_FLOAT64 = np.dtype(np.float64)


def _real(array, what):
    """``array`` as a writable, contiguous float64 array (a copy when it is read-only,
    as the arrays JAX's callbacks pass are); complex values are an error, not cut
    to their real part."""
    if getattr(array, "dtype", None) is _FLOAT64 and array.flags.carray:
        return array  # what samplers pass: no conversion and no further check
    if np.iscomplexobj(array):
        raise ValueError(f"{what} must be real, got a complex array")
    array = np.asarray(array, dtype=np.float64, order="C")
    return array if array.flags.writeable else array.copy()


def _vector(theta, dim):
    theta = _real(theta, "theta")
    if theta.shape != (dim,):
        raise ValueError(f"theta must have shape ({dim},), got {theta.shape}")
    return theta


def _entry_point(dispatcher):
    """The compiled ``logp_grad`` called without numba's dispatch (a third of a
    small model's call), or None (the Python twin, or a numba without it). Its
    arguments are not checked: only ``_direct_vector`` arrays may reach it."""
    try:
        return dispatcher.overloads[dispatcher.signatures[0]].entry_point
    except (AttributeError, IndexError, KeyError):
        return None


_UNIT_STRIDE = (8,)


def _direct_vector(array, shape):
    """Whether ``array`` can go to the entry point as it is: a writable, contiguous
    float64 ndarray of ``shape`` (cheap tests first: this is the samplers' call)."""
    return (type(array) is np.ndarray and array.dtype is _FLOAT64 and array.shape == shape
            and array.strides == _UNIT_STRIDE and array.flags.writeable)


def _checked_out(out, dim):
    """``out`` if the gradient can be written into it, else a ValueError (the
    compiled code does not check bounds)."""
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == (dim,)):
        raise ValueError(f"out must be a float64 array of shape ({dim},), got "
                         f"{getattr(out, 'dtype', type(out).__name__)} of shape {np.shape(out)}")
    if not out.flags.writeable:
        raise ValueError("out is read-only; pass a writable float64 array")
    return out


#: How far the sum of a simplex given to ``unconstrain`` may be from 1 (Stan's tolerance).
SIMPLEX_TOLERANCE = 1e-8


def _check_support(name, x, constraint):
    """Raise a ValueError naming the parameter, index and value when ``x`` lies
    outside the open set its transform maps onto (a bound itself, such as 0 for
    a positive parameter, has no unconstrained value)."""
    if constraint.name in _WHOLE_CHECKS:  # conditions on the whole value, not its elements
        _WHOLE_CHECKS[constraint.name](name, np.asarray(x, dtype=float))
        return
    open_set = constraint._replace(lower_closed=False, upper_closed=False)
    inside = contains(open_set, x)
    if constraint.name in ("ordered", "positive_ordered"):
        inside[1:] &= np.diff(x) > 0
    why = f"must be {constraint.name.replace('_', ' ')}" if constraint.name in EVENT_CONSTRAINTS else \
        describe(open_set)
    if not np.all(inside):
        raise ValueError(f"unconstrain: parameter {_first_violation(name, x, inside)} is outside "
                         f"its support: {why}")
    if constraint.name == "simplex" and not abs(np.sum(x) - 1.0) <= SIMPLEX_TOLERANCE:
        raise ValueError(f"unconstrain: parameter {name!r} sums to {float(np.sum(x))!r}; a simplex must sum to 1")


def _check_cholesky_cov(name, x):
    """A ValueError unless ``x`` is lower triangular with a positive diagonal."""
    upper = np.triu(x, 1)
    if np.any(upper != 0.0):
        i, j = np.argwhere(upper != 0.0)[0]
        raise ValueError(f"unconstrain: parameter {name}[{i}, {j}]={float(x[i, j])!r} lies above the diagonal of "
                         "a Cholesky factor: it must be 0")
    if not np.all(np.diagonal(x) > 0.0):
        i = int(np.argmin(np.diagonal(x) > 0.0))
        raise ValueError(f"unconstrain: parameter {name}[{i}, {i}]={float(x[i, i])!r}: the diagonal of a "
                         "Cholesky factor must be positive")


def _check_cholesky_corr(name, x):
    """``_check_cholesky_cov``, and rows of unit length (to ``SIMPLEX_TOLERANCE``)."""
    _check_cholesky_cov(name, x)
    norms = np.sum(x * x, axis=1)
    if not np.all(np.abs(norms - 1.0) <= SIMPLEX_TOLERANCE):
        i = int(np.argmax(np.abs(norms - 1.0)))
        raise ValueError(f"unconstrain: parameter {name!r}: row {i} has squared length {float(norms[i])!r}; "
                         "the rows of a Cholesky factor of a correlation matrix have length 1")


def _check_sum_to_zero(name, x):
    if not np.all(np.isfinite(x)) or not abs(np.sum(x)) <= SIMPLEX_TOLERANCE * max(1.0, np.abs(x).max()):
        raise ValueError(f"unconstrain: parameter {name!r} sums to {float(np.sum(x))!r}; it must sum to 0")


def _check_unit_vector(name, x):
    if not abs(np.linalg.norm(x) - 1.0) <= SIMPLEX_TOLERANCE:
        raise ValueError(f"unconstrain: parameter {name!r} has length {float(np.linalg.norm(x))!r}; "
                         "a unit vector has length 1")


def _check_cov_matrix(name, x):
    """A ValueError unless ``x`` is finite, symmetric (to ``SIMPLEX_TOLERANCE``
    relative to its largest entry) and positive definite (numpy's Cholesky of
    its symmetric part succeeds, as ``inverse`` needs)."""
    if not np.all(np.isfinite(x)):
        raise ValueError(f"unconstrain: parameter {_first_violation(name, x, np.isfinite(x))} is not finite")
    gap = np.abs(x - x.T)
    if not np.all(gap <= SIMPLEX_TOLERANCE * max(1.0, np.abs(x).max())):
        i, j = np.unravel_index(int(np.argmax(gap)), x.shape)
        raise ValueError(f"unconstrain: parameter {name}[{i}, {j}]={float(x[i, j])!r} but {name}[{j}, {i}]="
                         f"{float(x[j, i])!r}: the matrix must be symmetric")
    try:
        np.linalg.cholesky(0.5 * (x + x.T))
    except np.linalg.LinAlgError:
        raise ValueError(f"unconstrain: parameter {name!r} is not positive definite (its smallest eigenvalue "
                         f"is {float(np.linalg.eigvalsh(0.5 * (x + x.T))[0])!r}); a covariance or correlation "
                         "matrix must be") from None


def _check_corr_matrix(name, x):
    """``_check_cov_matrix``, and a diagonal of 1 (to ``SIMPLEX_TOLERANCE``)."""
    _check_cov_matrix(name, x)
    gap = np.abs(np.diagonal(x) - 1.0)
    if not np.all(gap <= SIMPLEX_TOLERANCE):
        i = int(np.argmax(gap))
        raise ValueError(f"unconstrain: parameter {name}[{i}, {i}]={float(x[i, i])!r}: the diagonal of a "
                         "correlation matrix must be 1")


#: The checks of constraints on whole values (``_check_support``).
_WHOLE_CHECKS = {"cholesky_corr": _check_cholesky_corr, "cholesky_cov": _check_cholesky_cov,
                 "corr_matrix": _check_corr_matrix, "cov_matrix": _check_cov_matrix,
                 "sum_to_zero": _check_sum_to_zero, "unit_vector": _check_unit_vector}


class LogDensity:
    """A model compiled to fused kernels (see the module docstring for the protocol)."""

    #: Whether data that terms with shape read whole keep their build shapes (the
    #: code is written for them); on the CPU their rows are read at run time.
    fixed_whole_sizes = False

    def __init__(self, model, layout, module, source, parallel=False, sort_rows=True):
        self.model, self.layout, self._module, self._source = model, layout, module, source
        self.dim = layout.dim
        if parallel and not hasattr(module, "core_parallel"):
            raise validate.ModelError("parallel=True: not available for models with simplex or "
                                      "ordered parameters")
        self._core = module.core_parallel if parallel else module.core
        self._shape = (self.dim,)
        self._direct = None if parallel else _entry_point(module.logp_grad)
        self._row_order = RowOrder(model, layout) if sort_rows else None
        arrays = {name: node.value for name, node in model.data_nodes.items()}
        arrays.update(layout.anonymous)
        self._arrays, self._coords = {}, dict(model.coords)
        self.set_data(**arrays)

    # ----- data ---------------------------------------------------------
    def set_data(self, *, coords=None, **arrays):
        """Replace named data (any length) without recompiling.

        The new arrays are validated (names, dtypes, finiteness, lengths,
        indices, support) and the constant summands are recomputed once.
        Data of a new length along a dim with coordinates needs new ones,
        ``coords={dim: values}`` (as in PyMC's ``set_data``).
        """
        unknown = sorted(set(arrays) - set(self.model.data_nodes) - set(self.layout.anonymous))
        if unknown:
            raise validate.ModelError(f"set_data: unknown data {unknown}; the model's data are "
                                      f"{sorted(self.model.data_nodes)}")
        new = {**self._arrays, **{k: ex.frozen_array(v, f"set_data: data {k!r}") for k, v in arrays.items()}}
        validate.check_arrays(self.layout, self.model, {k: new[k] for k in arrays})
        validate.check_terms(self.model, self.layout, new, fixed_whole=self.fixed_whole_sizes)
        coords = dimensions.new_coords(dimensions.names(self.model), self._coords, coords)
        dimensions.check_sizes(coords, dimensions.current_sizes(self.model, self.layout, new),
                               "; give its new coords: set_data(..., coords={{{dim!r}: values}})")
        self._arrays, self._coords = new, coords
        arrays = {k: new[k] for k in self.layout.data}
        # Per-row outputs read the rows in the user's order; sums read them
        # sorted by group where that is faster (logdens.row_order).
        self._row_data = self.layout.pack(arrays)
        packed = self._row_order.sort(arrays) if self._row_order else arrays
        self.fdata, self.idata = self._row_data if packed is arrays else self.layout.pack(packed)
        self.numba_entry = NumbaEntry(self._module.logp_grad, self.fdata, self.idata)
        self._n_obs = self._count_observations()
        self._constant = None  # the dropped summands, computed on first use
        self._dropped_rows = {}  # the same per observation, by observed term

    def _with_constant(self, lp, theta):
        """``lp`` plus the summands dropped by ``propto``, computed once per data set."""
        if self._constant is None:
            constant = self._module.constants(theta, self.fdata, self.idata)
            if not np.isfinite(constant):
                return -np.inf  # theta is outside the support: so is the full density
            self._constant = constant
        return lp + self._constant

    def data(self):
        """The current data arrays by name."""
        return {k: v for k, v in self._arrays.items() if k in self.model.data_nodes}

    def coords(self):
        """Coordinate values by dim name, for the dims that have them (ArviZ ``coords``)."""
        return dict(self._coords)

    def dims(self):
        """Dim names of the parameters, deterministics, data and observed terms
        that have them, by variable name (ArviZ ``dims``)."""
        return dict(self.model.dims)

    def observed_data(self):
        """The observed arrays by term name (for ArviZ's ``observed_data``)."""
        return {t.name: self._arrays[self.layout.data_name(t.mixture.x if t.mixture else t.value)]
                for t in self.model.terms if t.kind == "observe" or (t.kind == "likelihood" and t.mixture)}

    # ----- log density and gradient -------------------------------------
    def param_unc_num(self):
        return self.dim

    def log_density(self, theta, propto=True, jacobian=True):
        """The log density at unconstrained ``theta``."""
        theta = _vector(theta, self.dim)
        lp = self._module.value(theta, self.fdata, self.idata, jacobian)
        return lp if propto else self._with_constant(lp, theta)

    def log_density_gradient(self, theta, propto=True, jacobian=True, out=None):
        """``(log density, gradient)``; with ``out`` the gradient is written there, no allocation."""
        if (self._direct is not None and out is not None and propto and jacobian
                and _direct_vector(theta, self._shape) and _direct_vector(out, self._shape)):
            return self._direct(theta, out, self.fdata, self.idata), out
        theta = _vector(theta, self.dim)
        grad = np.empty(self.dim) if out is None else _checked_out(out, self.dim)
        # logp_grad's fixed signature wants a contiguous gradient; a strided `out` goes to core
        if jacobian and self._core is self._module.core and grad.flags.c_contiguous:
            lp = self._module.logp_grad(theta, grad, self.fdata, self.idata)  # compiled at load
        else:
            lp = self._core(theta, grad, self.fdata, self.idata, jacobian)
        return (lp if propto else self._with_constant(lp, theta)), grad

    def gradient(self, theta, jacobian=True, out=None):
        """The gradient of the log density alone, for callers that need no value
        (stochastic gradient methods, per-step updates): the value's own
        arithmetic is left out (a Poisson term's ``log(rate)``). Without the
        value nothing can be rejected: where ``log_density`` is ``-inf`` the
        entries are unspecified, and they may be non-finite where
        ``log_density_gradient`` would reject the point."""
        theta = _vector(theta, self.dim)
        grad = np.empty(self.dim) if out is None else _checked_out(out, self.dim)
        self._module.gradient(theta, grad, self.fdata, self.idata, jacobian)
        return grad

    def log_density_gradient_batch(self, thetas, propto=True, jacobian=True):
        """Log densities ``(K,)`` and gradients ``(K, dim)`` of the rows of ``thetas``."""
        thetas = _real(thetas, "thetas")
        if thetas.ndim != 2 or thetas.shape[1] != self.dim:
            raise ValueError(f"thetas must have shape (K, {self.dim}), got {thetas.shape}")
        lps, grads = np.empty(len(thetas)), np.empty_like(thetas)
        self._module.batch(thetas, lps, grads, self.fdata, self.idata, jacobian)
        return (lps if propto else self._with_constants(lps, thetas)), grads

    def log_density_batch(self, thetas, propto=True, jacobian=True):
        """Log densities ``(K,)`` of the rows of ``thetas``, without gradients.

        One compiled loop over the rows, for ensemble samplers that move many
        walkers at once (emcee's ``vectorize=True``). Any real array of shape
        ``(K, dim)`` is accepted; a read-only or non-contiguous one is copied.
        """
        thetas = _real(thetas, "thetas")
        if thetas.ndim != 2 or thetas.shape[1] != self.dim:
            raise ValueError(f"thetas must have shape (K, {self.dim}), got {thetas.shape}")
        lps = np.empty(len(thetas))
        self._module.value_batch(thetas, lps, self.fdata, self.idata, jacobian)
        return lps if propto else self._with_constants(lps, thetas)

    def _with_constants(self, lps, thetas):
        """``_with_constant`` of every row."""
        return np.array([self._with_constant(lp, t) for lp, t in zip(lps, thetas)])

    def _function(self, kind, name):
        """The generated module's ``<kind>_<ident>`` of the observed term ``name``."""
        return getattr(self._module, f"{kind}_{self.layout.term_idents[name]}")

    def _observed(self, name):
        term = next((t for t in self.model.terms if t.name == name and t.per_observation), None)
        if term is None:
            observed = [t.name for t in self.model.terms if t.per_observation]
            raise KeyError(f"no observed term or likelihood {name!r}; they are {observed}")
        return term

    def _count_observations(self):
        """Observations per observed term for the current data (checked once, in ``set_data``)."""
        counts = {}
        for term in self.model.terms:
            if not term.per_observation:
                continue
            if term.dist is not None and term.dist.spec.multivariate and \
                    term.args[0].ndim == len(term.dist.spec.events[0]):
                counts[term.name] = 1  # one event: a series, a Gaussian process's values
                continue
            lengths = [validate.length(a, self._arrays, self.layout, "") for a in term.args]
            counts[term.name] = max((n for n in lengths if n is not None), default=1)
        return counts

    def pointwise_log_likelihood(self, theta):
        """Per-observation log-likelihood (normalized) of every observed term and
        likelihood potential, by name."""
        theta = _vector(theta, self.dim)
        out = {}
        for term in self.model.terms:
            if term.per_observation:
                values = np.empty(self._n_obs[term.name])
                self._function("pointwise", term.name)(theta, *self._row_data, values, False)
                dropped = self._dropped_summands(term.name, theta)
                if dropped is not None:
                    values += dropped
                out[term.name] = values
        return out

    def _dropped_summands(self, name, theta):
        """Per observation of term ``name``, the summands ``propto`` drops (None
        when all are 0): they depend on the data only, so they are kept once
        computed, unless ``theta`` was outside the support (then they are -inf)."""
        if name in self._dropped_rows:
            return self._dropped_rows[name]
        rows = np.empty(self._n_obs[name])
        self._function("pointwise", name)(theta, *self._row_data, rows, True)
        if not np.isfinite(rows).all():
            return rows
        self._dropped_rows[name] = rows if rows.any() else None
        return self._dropped_rows[name]

    def per_sample_gradient(self, theta, name, sparse=False, out=None):
        """One gradient row (w.r.t. ``theta``) per observation of the observed term ``name``.

        A dense (n_obs, dim) array (written into ``out`` when given: a float64,
        C-contiguous array of that shape, so a loop over minibatches set by
        ``set_data`` allocates nothing), or with ``sparse=True`` a
        ``scipy.sparse.csr_array`` of that shape holding only the entries the
        term can touch (``logdens.rows``): for a term that reads most
        parameters one element per row (``a[group]``, a rate vector), a few
        entries per row instead of ``dim``.
        """
        term = self._observed(name)
        n, theta = self._n_obs[term.name], _vector(theta, self.dim)
        if not sparse:
            if out is None:
                out = np.empty((n, self.dim))
            elif not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == (n, self.dim)
                      and out.flags.c_contiguous and out.flags.writeable):
                raise ValueError(f"per_sample_gradient: out must be a writeable, C-contiguous float64 array of "
                                 f"shape {(n, self.dim)}, got {getattr(out, 'dtype', type(out).__name__)} of "
                                 f"shape {np.shape(out)}")
            self._function("per_sample", term.name)(theta, *self._row_data, out)
            return out
        if out is not None:
            raise ValueError("per_sample_gradient: out is for the dense rows (sparse=False)")
        width = int(self._function("slots", term.name)(self.idata))
        # 32-bit indices when they fit, as scipy would make them (by copying).
        index = np.int32 if max(self.dim, n * width) < np.iinfo(np.int32).max else np.int64
        cols, vals = np.empty((n, width), dtype=index), np.empty((n, width))
        self._function("per_sample_sparse", term.name)(theta, *self._row_data, cols, vals)
        starts = np.arange(0, n * width + 1, width, dtype=index) if width else np.zeros(n + 1, dtype=index)
        return scipy.sparse.csr_array((vals.ravel(), cols.ravel(), starts), shape=(n, self.dim))

    def empirical_fisher(self, theta, name):
        """The empirical Fisher information of observed term ``name``: the sum over
        its observations of g_i g_i^T, g_i the per-sample gradient (dim, dim).

        For a term with values with shape the rows are made and multiplied in
        blocks (no (n_obs, dim) array); for others from the sparse rows.
        """
        term = self._observed(name)
        theta = _vector(theta, self.dim)
        fused = getattr(self._module, f"fisher_{self.layout.term_idents[name]}", None)  # terms with shape
        if fused is not None:
            if self._n_obs[term.name] == 0:
                return np.zeros((self.dim, self.dim))
            fisher = np.empty((self.dim, self.dim))  # assigned by the first product
            fused(theta, *self._row_data, fisher)
            return fisher
        rows = self.per_sample_gradient(theta, name, sparse=True)
        return (rows.T @ rows).toarray()

    # ----- constrained space --------------------------------------------
    def param_num(self, include_tp=False):
        n = sum(p.constrained_size for p in self.layout.params.values())
        if include_tp:
            n += sum(int(np.prod(v.shape, dtype=int)) for v in self._deterministics(np.zeros(self.dim)).values())
        return n

    def param_names(self, include_tp=False):
        """Flat constrained names, ``mu``, ``z[0]``, ...; deterministics with ``include_tp``."""
        shapes = {p.name: p.shape for p in self.layout.params.values()}
        if include_tp:
            shapes.update({k: np.shape(v) for k, v in self._deterministics(np.zeros(self.dim)).items()})
        return [n if s == () else f"{n}[{i}]" for n, s in shapes.items() for i in range(int(np.prod(s)))]

    def param_unc_names(self):
        """Names of the unconstrained coordinates: ``mu``, ``z[0]``, ... (``w[0]`` .. ``w[K-2]`` for a simplex)."""
        return [p.name if p.shape == () else f"{p.name}[{i}]"
                for p in self.layout.params.values() for i in range(p.size)]

    def _params(self, theta):
        theta = _vector(theta, self.dim)
        params = {p.name: np.reshape(p.transform.forward(theta[p.offset:p.offset + p.size]), p.shape)
                  for p in self.layout.params.values()}
        values = bounds.constrained(self.model, {**self._arrays, **params})
        return {name: values[name] for name in params}

    def _deterministics(self, theta, params=None):
        values = {**self._arrays, **(params if params is not None else self._params(theta))}
        return {name: evaluate(e, values) for name, e in self.model.deterministics.items()}

    def constrain_batch(self, thetas):
        """``constrain`` of every row of ``thetas``: name -> array (n, *shape), in one numpy pass."""
        thetas = np.ascontiguousarray(thetas, dtype=np.float64).reshape(-1, self.dim)
        n = len(thetas)
        params = {}
        for p in self.layout.params.values():
            block = thetas[:, p.offset:p.offset + p.size]
            if p.transform.event:
                params[p.name] = np.array([p.transform.forward(row) for row in block]).reshape((n,) + p.shape)
            else:
                params[p.name] = p.transform.forward(block).reshape((n,) + p.shape)
        batched = {k: (v[:, None] if v.ndim == 1 else v) for k, v in params.items()}  # scalars as (n, 1)
        values = bounds.constrained(self.model, {**self._arrays, **batched}, batch=True)
        params = {name: values[name].reshape((n,) + np.shape(x)[1:]) for name, x in params.items()}
        for name, e in self.model.deterministics.items():
            out = np.asarray(evaluate(e, values, batch=True))
            params[name] = np.broadcast_to(out, (n,) + e.shape if e.shape else (n, 1)).reshape((n,) + e.shape)
        return params

    def pointwise_log_likelihood_batch(self, thetas):
        """``pointwise_log_likelihood`` of every row of ``thetas``: name -> array (n, n_obs)."""
        thetas = np.ascontiguousarray(thetas, dtype=np.float64).reshape(-1, self.dim)
        rows = [self.pointwise_log_likelihood(t) for t in thetas]
        names = rows[0].keys() if rows else [t.name for t in self.model.terms if t.kind == "observe"]
        return {k: np.array([r[k] for r in rows]) for k in names}

    def constrain(self, theta):
        """Constrained parameters and deterministics by name, in their shapes."""
        params = self._params(theta)
        return {**params, **self._deterministics(theta, params)}

    def param_constrain(self, theta, include_tp=False):
        """The flat constrained vector (deterministics appended with ``include_tp``)."""
        values = self.constrain(theta) if include_tp else self._params(theta)
        return np.concatenate([np.ravel(v) for v in values.values()]) if values else np.zeros(0)

    def unconstrain(self, values):
        """The unconstrained ``theta`` of constrained parameter values given by name."""
        theta = np.empty(self.dim)
        for p in self.layout.params.values():
            if p.name not in values:
                raise KeyError(f"unconstrain: missing parameter {p.name!r}")
            x = np.broadcast_to(_real(values[p.name], f"unconstrain: {p.name!r}"), p.shape)
            constraint = self.model.params[p.name].constraint
            if bounds.has_expression(constraint):  # its raw value (logdens.bounds)
                x = bounds.raw(p.name, constraint, x, {**self._arrays, **values})
                constraint = bounds.raw_constraint(constraint)
            _check_support(p.name, x, constraint)
            theta[p.offset:p.offset + p.size] = np.ravel(p.transform.inverse(x))
        return theta

    def param_unconstrain(self, flat):
        """Inverse of ``param_constrain`` (without deterministics)."""
        flat = np.asarray(flat, dtype=float)
        values, start = {}, 0
        for p in self.layout.params.values():
            values[p.name] = flat[start:start + p.constrained_size].reshape(p.shape)
            start += p.constrained_size
        return self.unconstrain(values)

    def cfunc_address(self):
        """Address of ``double f(const double *theta, double *grad, const double *fdata,
        int64 n_fdata, const int64 *idata, int64 n_idata)`` for C callers.

        Pass ``self.fdata``/``self.idata`` (and their lengths) as the data; the
        return value is the log density (``propto``, with the Jacobian).
        """
        if not hasattr(self, "_cfunc"):
            self._cfunc = self._module.c_entry()
        return self._cfunc.address

    def source(self):
        """The generated module's source code."""
        return self._source

    def __repr__(self):
        """The model as a listing with the current data's shapes (``logdens.show``)."""
        from logdens import show
        return show.text(self.model, "LogDensity", self.dim,
                         show.current_shapes(self.model, self.layout, self._arrays))

    def _repr_html_(self):
        from logdens import show
        return show.html_table(self.model, "LogDensity", self.dim,
                               show.current_shapes(self.model, self.layout, self._arrays))
