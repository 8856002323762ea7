"""The public face of a multivariate distribution: one density per event.

``MvNormal(loc, scale_tril=L).logpdf(Y)`` with ``Y`` of shape (n, d) gives n
log densities: the trailing axes of each argument are its event
(``Spec.events``), the leading ones its batch, broadcast as numpy does. The
kernels (``distributions.spec`` states their contract) run compiled, one
event per call. Inside a model the parameters may be expressions; then only
the engine evaluates the density, as for the univariate distributions.
"""

import numpy as np
from numba import njit

from .frozen import Distribution, InvalidArgumentError

_COMPILED = {}


def _compiled(spec):
    """``(logpdf, logpdf_grad, rvs)`` of ``spec``, compiled for calls from Python."""
    if spec.name not in _COMPILED:
        jit = njit(error_model="numpy", nogil=True)
        _COMPILED[spec.name] = (jit(spec.logpdf), jit(spec.logpdf_grad),
                                None if spec.rvs is None else jit(spec.rvs))
    return _COMPILED[spec.name]


def is_integer(value):
    """Whether ``value`` is a Python or numpy integer (a bool is not): a length."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _event(a, index):
    """The event of ``a`` at batch ``index``: an array, or a float for a scalar event."""
    e = a[index]
    return float(e) if np.ndim(e) == 0 else e


class MultivariateDistribution(Distribution):
    """Base of the multivariate distributions; ``spec.events`` names the event axes.

    ``scalar_events`` names parameters whose event has the value's axes and
    that may be a scalar, the same number at every position of the event (a
    location of 0.0, as PyMC and NumPyro users write it): the value's shape
    gives the length.
    """

    scalar_events = ()

    def _validate_params(self):
        super()._validate_params()
        if self.numeric:
            self._split((None,) + tuple(v.shape for v in self.params.values()))
            self._check_events()

    def scalars(self):
        """Names of the ``scalar_events`` parameters given as scalars."""
        return [n for n in self.scalar_events if getattr(self.params[n], "shape", None) == ()]

    def _check_events(self):
        """Conditions on whole events of numeric parameters (a positive diagonal,
        say); a subclass raises ``InvalidArgumentError`` naming the argument."""

    def _split(self, shapes):
        """``Spec.split_shapes`` (``x`` first), its errors as ``InvalidArgumentError``;
        a scalar of ``scalars()`` takes its event from the others."""
        scalars = self.scalars()
        shapes = [None if n in scalars else s for n, s in zip(self.spec.arg_names, shapes)]
        try:
            return self.spec.split_shapes(shapes)
        except ValueError as error:
            raise InvalidArgumentError(str(error)) from None

    def event_shape(self):
        """The shape of one value (an event of ``x``), from the parameters' shapes."""
        shapes = (None,) + tuple(np.shape(v) for v in self.params.values())
        _, lengths = self._split(shapes)
        missing = [a for a in self.spec.events[0] if a not in lengths]
        if missing:
            raise InvalidArgumentError(f"{self.spec.name}: the parameters do not fix the value's "
                                       f"axes {missing}")
        return tuple(lengths[a] for a in self.spec.events[0])

    def fixed_event_shape(self):
        """The shape of one value where an argument that is no array fixes it
        (LKJ's ``dim``, a series' ``steps``), else None: a model checks a
        parameter's shape against it, since no kernel argument's shape can."""
        return None

    def _events(self, x):
        """``(batch shape, axis lengths, [each argument broadcast to batch + its event])``."""
        arrays = self._arrays(x)
        batches, lengths = self._split([a.shape for a in arrays])
        scalars = self.scalars()
        arrays = [np.full([lengths[axis] for axis in axes], a) if n in scalars else a
                  for n, a, axes in zip(self.spec.arg_names, arrays, self.spec.events)]
        batches = [() if n in scalars else b for n, b in zip(self.spec.arg_names, batches)]
        try:
            batch = np.broadcast_shapes(*batches)
        except ValueError:
            raise InvalidArgumentError(f"{self.spec.name}: the batch shapes {batches} of "
                                       f"{self.spec.arg_names} do not broadcast") from None
        # np.require, not ascontiguousarray: that makes a 0-d array 1-d
        out = [np.require(np.broadcast_to(a, batch + a.shape[len(b):]), requirements="C")
               for a, b in zip(arrays, batches)]
        return batch, lengths, out

    def logpdf(self, x):
        """Normalized log density of each event of ``x``; its shape is the batch's."""
        symbolic = next((v for v in (x, *self.params.values()) if hasattr(v, "logpdf_expression")), None)
        if symbolic is not None:
            return symbolic.logpdf_expression(self, x)
        batch, _, arrays = self._events(x)
        logpdf = _compiled(self.spec)[0]
        out = np.empty(batch)
        for index in np.ndindex(batch):
            out[index] = logpdf(*(_event(a, index) for a in arrays))
        return out[()] if out.ndim == 0 else out

    def logpdf_grad(self, x):
        """``(lp, grads)``: the log density of each event, and the partials of
        each by argument name (shape: batch + the argument's event)."""
        batch, lengths, arrays = self._events(x)
        grad = _compiled(self.spec)[1]
        wanted = self.spec.gradient_args()
        # a scalar event's partials get a length-1 axis: the kernel adds into arrays
        partials = [np.zeros(a.shape if a.ndim > len(batch) else batch + (1,)) if n in wanted else None
                    for n, a in zip(self.spec.arg_names, arrays)]
        work = np.empty(self.spec.work_size(lengths))
        lp = np.empty(batch)
        for index in np.ndindex(batch):
            outs = [None if p is None else p[index] for p in partials]
            lp[index] = grad(*(_event(a, index) for a in arrays), self.spec.keep_all, work, *outs)
        grads = {n: (p if a.ndim > len(batch) else p[..., 0])
                 for n, a, p in zip(self.spec.arg_names, arrays, partials) if p is not None}
        for n in self.scalars():  # one number at every position: the sum of their partials
            grads[n] = grads[n].sum(axis=-1)
        return (lp[()] if lp.ndim == 0 else lp), {n: (g[()] if g.ndim == 0 else g) for n, g in grads.items()}

    def draw(self, state, size=None, event=None):
        """Draws of whole events from ``state`` (see ``Distribution.draw``), of shape
        ``event`` where no parameter fixes it (a series' length)."""
        event = self.event_shape() if event is None else tuple(int(n) for n in event)
        batch, _, arrays = self._events(np.zeros(event))
        params = arrays[1:]
        if size is not None:
            size = tuple(int(d) for d in np.atleast_1d(size))
            if np.broadcast_shapes(batch, size) != size:
                raise ValueError(f"{self.spec.name}.rvs: size={size} does not fit the parameters' batch "
                                 f"shape {batch}")
            params = [np.broadcast_to(a, size + a.shape[len(batch):]) for a in params]
            batch = size
        rvs = _compiled(self.spec)[2]
        out = np.empty(batch + event)
        for index in np.ndindex(batch):
            row = np.empty(max(int(np.prod(event)), 1))
            rvs(state, *(_event(a, index) for a in params), row)
            out[index] = row.reshape(event)
        return out.astype(np.int64) if self.spec.discrete else out
