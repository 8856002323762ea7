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
  filled in place and returned. An ``out`` that shares memory with ``theta``
  is refused (a ValueError): the kernels read ``theta`` while they write.
- ``set_data`` may run while other threads call the methods: each call uses
  the data before it or after it, whole (``DataSet``).
- ``numba_entry`` is ``(function, fdata, idata)``: ``function(theta, grad,
  fdata, idata) -> float`` is compiled with one signature shared by every
  model, so a sampler compiled once in numba calls any model.
"""

from typing import Callable, NamedTuple

import numpy as np
import scipy.sparse

from logdens import bounds, rules
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


def _shares_memory(a, b):
    """Whether the ndarrays ``a`` and ``b`` hold a common element: never two
    distinct arrays that each own their memory (the common case, tested first:
    numpy's test took 0.3-0.8 us, as long as the rest of the samplers' call
    takes over the compiled entry); else numpy's exact test. Exact, not
    ``np.may_share_memory``'s bounds check: that refuses a strided ``out``
    whose span merely holds ``theta``; for the contiguous vectors and rows
    here the exact test costs no more."""
    if a.base is None and b.base is None:
        return a is b
    return np.shares_memory(a, b)


def _shared_error(method):
    """The error for an ``out`` holding elements of ``theta``: one rule for every ``out``."""
    return ValueError(f"{method}: out shares memory with theta, which the kernel reads while it writes out "
                      "(theta itself or a view of it); pass an out of its own")


def _checked_out(out, shape, method, theta, contiguous=False):
    """``out`` if ``method`` can write its result there: a writable float64
    ndarray of ``shape`` (C-contiguous with ``contiguous``) holding no element
    of ``theta``; else a ValueError. The compiled code checks no bounds and
    reads ``theta`` while it writes, so a shared ``out`` is refused, not
    copied around: the caller asked for two arrays and gets them, or an error."""
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == shape
            and (out.flags.c_contiguous or not contiguous)):
        raise ValueError(f"{method}: out must be a {'C-contiguous ' if contiguous else ''}float64 array of shape "
                         f"{shape}, got {getattr(out, 'dtype', type(out).__name__)} of shape {np.shape(out)}")
    if not out.flags.writeable:
        raise ValueError(f"{method}: out is read-only; pass a writable float64 array")
    if _shares_memory(out, theta):
        raise _shared_error(method)
    return out


class DataSet(NamedTuple):
    """One data set as the methods read it. ``set_data`` binds a new one in a
    single assignment and every method reads ``_data`` once, so a call running
    while another thread sets data uses the old set or the new one whole: when
    ``set_data`` assigned the arrays, the packed data and the counts one at a
    time, a per-sample call took the rows of one set with an output sized for
    the other and wrote past it (a segfault)."""

    arrays: dict  #: name -> validated, read-only array
    coords: dict  #: dim -> coordinate values
    fdata: np.ndarray  #: packed for the sums, rows sorted by group where faster (``logdens.row_order``)
    idata: np.ndarray
    rows: tuple  #: ``(fdata, idata)`` in the user's row order, for per-row outputs
    n_obs: dict  #: observations per observed term
    #: The summands ``propto`` drops, computed on first use: None -> the
    #: constant, a term's name -> its values per observation (or None if all 0).
    dropped: dict
    #: A backend's copy on its device (``logdens.cuda_density``), or None.
    device: object = None


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
        self._data = self._new_data(arrays, None, {}, dict(model.coords))

    # ----- data ---------------------------------------------------------
    def set_data(self, *, coords=None, **arrays):
        """Replace named data (any length) without recompiling.

        The new arrays are validated (names, dtypes, finiteness, lengths,
        indices, support) and the constant summands are recomputed once.
        Data of a new length along a dim with coordinates needs new ones,
        ``coords={dim: values}`` (as in PyMC's ``set_data``). Calls in other
        threads meanwhile use the old data or the new, whole (``DataSet``).
        An observed array with imputed missing entries (``logdens.missing``)
        takes new values only where it had values: a NaN that appears or
        disappears, or a new length, is a ``ModelError``; build and compile
        the model again with the new data.
        """
        old = self._data
        self._data = self._new_data(arrays, coords, old.arrays, old.coords)

    def _new_data(self, arrays, coords, old_arrays, old_coords):
        """The ``DataSet`` of ``old_arrays`` and ``old_coords`` updated by
        ``arrays`` and ``coords`` (``set_data``'s), validated and packed."""
        unknown = sorted(set(arrays) - set(self.model.data_nodes) - set(self.layout.anonymous))
        if unknown:
            raise validate.ModelError(f"set_data: unknown data {unknown}; the model's data are "
                                      f"{sorted(self.model.data_nodes)}")
        new = {**old_arrays, **{k: ex.frozen_array(v, f"set_data: data {k!r}") for k, v in arrays.items()}}
        validate.check_arrays(self.layout, self.model, {k: new[k] for k in arrays})
        validate.check_terms(self.model, self.layout, new, fixed_whole=self.fixed_whole_sizes)
        coords = dimensions.new_coords(dimensions.names(self.model), old_coords, coords)
        dimensions.check_sizes(coords, dimensions.current_sizes(self.model, self.layout, new),
                               "; give its new coords: set_data(..., coords={{{dim!r}: values}})")
        arrays = {k: new[k] for k in self.layout.data}
        # Per-row outputs read the rows in the user's order; sums read them
        # sorted by group where that is faster (logdens.row_order).
        rows = self.layout.pack(arrays)
        packed = self._row_order.sort(arrays) if self._row_order else arrays
        fdata, idata = rows if packed is arrays else self.layout.pack(packed)
        return DataSet(new, coords, fdata, idata, rows, self._count_observations(new), {})

    @property
    def fdata(self):
        """The current data's packed floats (``logdens.layout``), as ``numba_entry`` passes them."""
        return self._data.fdata

    @property
    def idata(self):
        """The current data's packed integers and header (``logdens.layout``)."""
        return self._data.idata

    @property
    def numba_entry(self):
        """``NumbaEntry`` of the current data (a later ``set_data`` leaves it as it is)."""
        data = self._data
        return NumbaEntry(self._module.logp_grad, data.fdata, data.idata)

    @property
    def _arrays(self):
        """The current arrays by name, the anonymous ones included."""
        return self._data.arrays

    @property
    def _row_data(self):
        """The current data packed in the user's row order (``DataSet.rows``)."""
        return self._data.rows

    def _with_constant(self, data, lp, theta):
        """``lp`` plus the summands dropped by ``propto``, computed once per data set."""
        constant = data.dropped.get(None)
        if constant is None:
            constant = self._module.constants(theta, data.fdata, data.idata)
            if not np.isfinite(constant):
                return -np.inf  # theta is outside the support: so is the full density
            data.dropped[None] = constant
        return lp + constant

    def data(self):
        """The current data arrays by name."""
        return {k: v for k, v in self._data.arrays.items() if k in self.model.data_nodes}

    def coords(self):
        """Coordinate values by dim name, for the dims that have them (ArviZ ``coords``)."""
        return dict(self._data.coords)

    def dims(self):
        """Dim names of the parameters, deterministics, data and observed terms
        that have them, by variable name (ArviZ ``dims``)."""
        return dict(self.model.dims)

    def observed_data(self):
        """The observed values by term name (for ArviZ's ``observed_data``): an
        observed expression of data (``y[1:]``) evaluated on the current data."""
        arrays = self._data.arrays
        return {t.name: np.asarray(evaluate(t.mixture.x if t.mixture else t.value, arrays))
                for t in self.model.terms if t.kind == "observe" or (t.kind == "likelihood" and t.mixture)}

    # ----- log density and gradient -------------------------------------
    def param_unc_num(self):
        return self.dim

    def log_density(self, theta, propto=True, jacobian=True):
        """The log density at unconstrained ``theta``."""
        theta, data = _vector(theta, self.dim), self._data
        lp = self._module.value(theta, data.fdata, data.idata, jacobian)
        return lp if propto else self._with_constant(data, lp, theta)

    def log_density_gradient(self, theta, propto=True, jacobian=True, out=None):
        """``(log density, gradient)``; with ``out`` the gradient is written there, no
        allocation (an ``out`` that shares memory with ``theta`` is refused)."""
        data = self._data
        if (self._direct is not None and out is not None and propto and jacobian
                and _direct_vector(theta, self._shape) and _direct_vector(out, self._shape)
                and (theta.base is None and out.base is None and theta is not out  # _shares_memory's first test,
                     or not _shares_memory(theta, out))):  # inlined for the samplers' call
            return self._direct(theta, out, data.fdata, data.idata), out
        theta = _vector(theta, self.dim)
        grad = np.empty(self.dim) if out is None else _checked_out(out, self._shape, "log_density_gradient", theta)
        # logp_grad's fixed signature wants a contiguous gradient; a strided `out` goes to core
        if jacobian and self._core is self._module.core and grad.flags.c_contiguous:
            lp = self._module.logp_grad(theta, grad, data.fdata, data.idata)  # compiled at load
        else:
            lp = self._core(theta, grad, data.fdata, data.idata, jacobian)
        return (lp if propto else self._with_constant(data, lp, theta)), grad

    def gradient(self, theta, jacobian=True, out=None):
        """The gradient of the log density alone, for callers that need no value
        (stochastic gradient methods, per-step updates): the value's own
        arithmetic is left out (a Poisson term's ``log(rate)``). Without the
        value nothing can be rejected: where ``log_density`` is ``-inf`` the
        entries are unspecified, and they may be non-finite where
        ``log_density_gradient`` would reject the point."""
        theta, data = _vector(theta, self.dim), self._data
        grad = np.empty(self.dim) if out is None else _checked_out(out, self._shape, "gradient", theta)
        self._module.gradient(theta, grad, data.fdata, data.idata, jacobian)
        return grad

    def log_density_gradient_batch(self, thetas, propto=True, jacobian=True):
        """Log densities ``(K,)`` and gradients ``(K, dim)`` of the rows of ``thetas``."""
        thetas = _real(thetas, "thetas")
        if thetas.ndim != 2 or thetas.shape[1] != self.dim:
            raise ValueError(f"thetas must have shape (K, {self.dim}), got {thetas.shape}")
        lps, grads, data = np.empty(len(thetas)), np.empty_like(thetas), self._data
        self._module.batch(thetas, lps, grads, data.fdata, data.idata, jacobian)
        return (lps if propto else self._with_constants(data, lps, thetas)), grads

    def log_density_batch(self, thetas, propto=True, jacobian=True):
        """Log densities ``(K,)`` of the rows of ``thetas``, without gradients.

        One compiled loop over the rows, for ensemble samplers that move many
        walkers at once (emcee's ``vectorize=True``). Any real array of shape
        ``(K, dim)`` is accepted; a read-only or non-contiguous one is copied.
        """
        thetas = _real(thetas, "thetas")
        if thetas.ndim != 2 or thetas.shape[1] != self.dim:
            raise ValueError(f"thetas must have shape (K, {self.dim}), got {thetas.shape}")
        lps, data = np.empty(len(thetas)), self._data
        self._module.value_batch(thetas, lps, data.fdata, data.idata, jacobian)
        return lps if propto else self._with_constants(data, lps, thetas)

    def _with_constants(self, data, lps, thetas):
        """``_with_constant`` of every row."""
        return np.array([self._with_constant(data, lp, t) for lp, t in zip(lps, thetas)])

    def _function(self, kind, name):
        """The generated module's ``<kind>_<ident>`` of the observed term ``name``."""
        return getattr(self._module, f"{kind}_{self.layout.term_idents[name]}")

    def _observed(self, name):
        term = next((t for t in self.model.terms if t.name == name and t.per_observation), None)
        if term is None:
            observed = [t.name for t in self.model.terms if t.per_observation]
            raise KeyError(f"no observed term or likelihood {name!r}; they are {observed}")
        return term

    def _count_observations(self, arrays):
        """Observations per observed term for ``arrays`` (checked once, in ``set_data``)."""
        counts = {}
        for term in self.model.terms:
            if not term.per_observation:
                continue
            if term.dist is not None and term.dist.spec.multivariate and \
                    term.args[0].ndim == len(term.dist.spec.events[0]):
                counts[term.name] = 1  # one event: a series, a Gaussian process's values
                continue
            lengths = [validate.length(a, arrays, self.layout, "") for a in term.args]
            counts[term.name] = max((n for n in lengths if n is not None), default=1)
        return counts

    def pointwise_log_likelihood(self, theta):
        """Per-observation log-likelihood (normalized) of every observed term and
        likelihood potential, by name."""
        return self._pointwise(self._data, theta)

    def _pointwise(self, data, theta):
        """``pointwise_log_likelihood`` of ``data``."""
        theta, out = _vector(theta, self.dim), {}
        for term in self.model.terms:
            if term.per_observation:
                values = np.empty(data.n_obs[term.name])
                self._function("pointwise", term.name)(theta, *data.rows, values, False)
                dropped = self._dropped_summands(data, term.name, theta)
                if dropped is not None:
                    values += dropped
                out[term.name] = values
        return out

    def _dropped_summands(self, data, name, theta):
        """Per observation of term ``name``, the summands ``propto`` drops (None
        when all are 0): they depend on ``data`` only, so they are kept with it
        once computed, unless ``theta`` was outside the support (then they are -inf)."""
        if name in data.dropped:
            return data.dropped[name]
        rows = np.empty(data.n_obs[name])
        self._function("pointwise", name)(theta, *data.rows, rows, True)
        if not np.isfinite(rows).all():
            return rows
        data.dropped[name] = rows if rows.any() else None
        return data.dropped[name]

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
        term, theta, data = self._observed(name), _vector(theta, self.dim), self._data
        n = data.n_obs[term.name]
        if not sparse:
            shape = (n, self.dim)
            out = np.empty(shape) if out is None else _checked_out(out, shape, "per_sample_gradient", theta, True)
            self._function("per_sample", term.name)(theta, *data.rows, out)
            return out
        if out is not None:
            raise ValueError("per_sample_gradient: out is for the dense rows (sparse=False)")
        width = int(self._function("slots", term.name)(data.idata))
        # 32-bit indices when they fit, as scipy would make them (by copying).
        index = np.int32 if max(self.dim, n * width) < np.iinfo(np.int32).max else np.int64
        cols, vals = np.empty((n, width), dtype=index), np.empty((n, width))
        self._function("per_sample_sparse", term.name)(theta, *data.rows, cols, vals)
        starts = np.arange(0, n * width + 1, width, dtype=index) if width else np.zeros(n + 1, dtype=index)
        return scipy.sparse.csr_array((vals.ravel(), cols.ravel(), starts), shape=(n, self.dim))

    def empirical_fisher(self, theta, name):
        """The empirical Fisher information of observed term ``name``: the sum over
        its observations of g_i g_i^T, g_i the per-sample gradient (dim, dim).

        For a term with values with shape the rows are made and multiplied in
        blocks (no (n_obs, dim) array); for others from the sparse rows.
        """
        term, theta, data = self._observed(name), _vector(theta, self.dim), self._data
        fused = getattr(self._module, f"fisher_{self.layout.term_idents[name]}", None)  # terms with shape
        if fused is not None:
            if data.n_obs[term.name] == 0:
                return np.zeros((self.dim, self.dim))
            fisher = np.empty((self.dim, self.dim))  # assigned by the first product
            fused(theta, *data.rows, fisher)
            return fisher
        rows = self.per_sample_gradient(theta, name, sparse=True)
        return (rows.T @ rows).toarray()

    # ----- constrained space --------------------------------------------
    def param_num(self, include_tp=False):
        n = sum(p.constrained_size for p in self.layout.params.values())
        if include_tp:
            values = self.constrain(np.zeros(self.dim))
            n += sum(int(np.prod(np.shape(values[name]), dtype=int)) for name in self.model.deterministics)
        return n

    def param_names(self, include_tp=False):
        """Flat constrained names, ``mu``, ``z[0]``, ...; deterministics with ``include_tp``."""
        shapes = {p.name: p.shape for p in self.layout.params.values()}
        if include_tp:
            values = self.constrain(np.zeros(self.dim))
            shapes.update({name: np.shape(values[name]) for name in self.model.deterministics})
        return [n if s == () else f"{n}[{i}]" for n, s in shapes.items() for i in range(int(np.prod(s)))]

    def param_unc_names(self):
        """Names of the unconstrained coordinates: ``mu``, ``z[0]``, ... (``w[0]`` .. ``w[K-2]`` for a simplex)."""
        return [p.name if p.shape == () else f"{p.name}[{i}]"
                for p in self.layout.params.values() for i in range(p.size)]

    def _params(self, theta, arrays):
        """Constrained parameters by name (bounds that are expressions read ``arrays``)."""
        theta = _vector(theta, self.dim)
        params = {p.name: np.reshape(p.transform.forward(theta[p.offset:p.offset + p.size]), p.shape)
                  for p in self.layout.params.values()}
        values = bounds.constrained(self.model, {**arrays, **params})
        return {name: values[name] for name in params}

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
        for name, e in self.model.deterministics.items():  # in the current data's shapes
            out = rules.with_draws(e, evaluate(e, values, batch=True))
            params[name] = np.broadcast_to(out, (n,) + out.shape[1:]).copy()
        return params

    def pointwise_log_likelihood_batch(self, thetas):
        """``pointwise_log_likelihood`` of every row of ``thetas``: name -> array (n, n_obs)."""
        thetas = np.ascontiguousarray(thetas, dtype=np.float64).reshape(-1, self.dim)
        data = self._data  # one data set for every row
        rows = [self._pointwise(data, t) for t in thetas]
        names = rows[0].keys() if rows else [t.name for t in self.model.terms if t.kind == "observe"]
        return {k: np.array([r[k] for r in rows]) for k in names}

    def constrain(self, theta):
        """Constrained parameters and deterministics by name, in their shapes."""
        arrays = self._data.arrays  # one data set for the parameters' bounds and the deterministics
        params = self._params(theta, arrays)
        values = {**arrays, **params}
        return {**params, **{name: evaluate(e, values) for name, e in self.model.deterministics.items()}}

    def param_constrain(self, theta, include_tp=False):
        """The flat constrained vector (deterministics appended with ``include_tp``)."""
        values = self.constrain(theta) if include_tp else self._params(theta, self._data.arrays)
        return np.concatenate([np.ravel(v) for v in values.values()]) if values else np.zeros(0)

    def unconstrain(self, values):
        """The unconstrained ``theta`` of constrained parameter values given by name."""
        theta, arrays = np.empty(self.dim), self._data.arrays
        for p in self.layout.params.values():
            if p.name not in values:
                raise KeyError(f"unconstrain: missing parameter {p.name!r}")
            x = np.broadcast_to(_real(values[p.name], f"unconstrain: {p.name!r}"), p.shape)
            constraint = self.model.params[p.name].constraint
            if bounds.has_expression(constraint):  # its raw value (logdens.bounds)
                x = bounds.raw(p.name, constraint, x, {**arrays, **values})
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

    def program(self):
        """The lowered program of the log density and its gradient, with the CPU
        schedule's passes (``logdens.compiler``): ``print(density.program())``
        shows what is computed, one statement per line with the model's names,
        as ``jax.make_jaxpr`` shows a JAX function. (The compiler is replacing
        the engine's code generation step by step; it equals it at 1e-12.)"""
        from logdens import engine
        from logdens.compiler import cpu_program
        return cpu_program(*engine.lower(self.model))

    def __repr__(self):
        """The model as a listing with the current data's shapes (``logdens.show``)."""
        from logdens import show
        return show.text(self.model, "LogDensity", self.dim,
                         show.current_shapes(self.model, self.layout, self._data.arrays))

    def _repr_html_(self):
        from logdens import show
        return show.html_table(self.model, "LogDensity", self.dim,
                               show.current_shapes(self.model, self.layout, self._data.arrays))
