"""The public, scipy-like face of a distribution: parameters bound once.

``Normal(0.0, 2.0).logpdf(x)`` evaluates over numpy arrays with broadcasting.
The same object holds model expressions as parameters when it is used in a
model; then only the engine evaluates it. Numeric arguments are validated
here, at the boundary, with errors that name the distribution, the argument,
the offending index and value, and the violated condition.
"""

import importlib

import numpy as np

from . import aliases, random, vectorize
from .constraints import InvalidArgumentError, contains, describe, is_numeric  # noqa: F401 (their home was here)


def _first_violation(name, value, mask):
    """``name=value`` or ``name[i, j]=value`` for the first entry where ``mask`` is false."""
    value = np.asarray(value)
    if value.ndim == 0:
        return f"{name}={value.item()!r}"
    index = np.unravel_index(int(np.argmin(np.broadcast_to(mask, value.shape))), value.shape)
    where = ", ".join(str(int(i)) for i in index)
    return f"{name}[{where}]={value[index].item()!r}"


def _named_bounds(constraint, numeric, ok):
    """``; lower=v`` (or ``lower[i]=v``) for each bound of ``constraint`` named after
    another argument, at the first entry where ``ok`` is false: the value the
    violation is against."""
    shown = ""
    for name in (constraint.lower, constraint.upper):
        if isinstance(name, str) and name in numeric:
            bound = numeric[name]
            shown += f"; {_first_violation(name, bound if bound.ndim == 0 else np.broadcast_to(bound, ok.shape), ok)}"
    return shown


class Spelled(type):
    """The type of distribution classes: a call ``Normal(mu=0, sigma=1)`` binds
    PyMC's and NumPyro's keyword spellings to the canonical ones
    (``distributions.aliases``) before ``__new__`` and any class's ``__init__``
    see them: the one place where every constructor's keywords pass, so the
    table needs no code in the classes."""

    def __call__(cls, *args, **kwargs):
        if cls.spec is None:
            return super().__call__(*args, **kwargs)
        kwargs, notes = aliases.bind(cls, args, kwargs)
        try:
            return super().__call__(*args, **kwargs)
        except InvalidArgumentError as error:
            if not notes:
                raise
            raise InvalidArgumentError(f"{error} (computed as {'; '.join(notes)})") from None


class Distribution(metaclass=Spelled):
    """Base of every public distribution class; ``spec`` says which one it is."""

    spec = None
    #: ``(module, class, parameter)`` of the same family on the logit scale: given
    #: ``logits=`` (NumPyro's keyword) or ``logit_p=`` (PyMC's) instead of ``p``,
    #: the class builds that one (``Bernoulli(logits=x)`` is ``BernoulliLogit(x)``).
    logit_form = None

    def __new__(cls, *args, **kwargs):
        given = [k for k in ("logits", "logit_p") if k in kwargs]
        if cls.logit_form is None or not given:
            return super().__new__(cls)
        module, name, parameter = cls.logit_form
        logit_cls = getattr(importlib.import_module(f".{module}", __package__), name)
        if len(given) > 1 or "p" in kwargs or len(args) > logit_cls.spec.param_names.index(parameter):
            raise TypeError(f"{cls.spec.name}: give one of p, logits and logit_p")
        return logit_cls(*args, **{**{k: v for k, v in kwargs.items() if k != given[0]}, parameter: kwargs[given[0]]})

    def __init__(self, *args, **kwargs):
        names = self.spec.param_names
        if len(args) > len(names):
            raise TypeError(f"{self.spec.name} takes {len(names)} parameters {names}, got {len(args)}")
        bound = {**dict(zip(names, args)), **kwargs}  # keywords checked by Spelled.__call__
        missing = [n for n in names if n not in bound]
        if missing:
            raise TypeError(f"{self.spec.name}: missing parameter(s) {missing}")
        self.params = {n: self._convert(n, bound[n]) for n in names}
        self._validate_params()

    @staticmethod
    def _convert(name, value):
        return np.asarray(value, dtype=float) if is_numeric(value) else value

    @property
    def numeric(self):
        """Whether every parameter is a number or array (no model expression)."""
        return all(isinstance(v, np.ndarray) for v in self.params.values())

    def _validate_params(self):
        numeric = {n: v for n, v in self.params.items() if isinstance(v, np.ndarray)}
        for p in self.spec.params:
            if p.name not in numeric:
                continue
            bounds_known = all(b not in self.params or b in numeric
                               for b in (p.constraint.lower, p.constraint.upper) if isinstance(b, str))
            if not bounds_known:
                continue
            value = numeric[p.name]
            ok = contains(p.constraint, value, numeric)
            if not np.all(ok):
                raise InvalidArgumentError(f"{self.spec.name}: {_first_violation(p.name, value, ok)}, "
                                           f"{describe(p.constraint)}{_named_bounds(p.constraint, numeric, ok)}")

    def _arrays(self, x):
        if not self.numeric:
            raise TypeError(f"{self.spec.name}: parameters are model expressions; "
                            "evaluate it inside a model (Model.observe/param), not with logpdf")
        x = np.asarray(x, dtype=float)
        nan = np.isnan(x)
        if np.any(nan):
            raise InvalidArgumentError(f"{self.spec.name}: {_first_violation('x', x, ~nan)}, must not be NaN")
        return (x,) + tuple(self.params[n] for n in self.spec.param_names)

    def logpdf(self, x):
        """Normalized log density (log mass if discrete) at ``x``; ``-inf`` outside the support.

        When ``x`` or a parameter is a model expression, the result is the
        expression of this log density (built by the expression's
        ``logpdf_expression``: this package knows nothing of models).
        """
        symbolic = next((v for v in (x, *self.params.values()) if hasattr(v, "logpdf_expression")), None)
        if symbolic is not None:
            return symbolic.logpdf_expression(self, x)
        out = vectorize.logpdf(self.spec, self._arrays(x))
        return out[()] if out.ndim == 0 else out

    def logpmf(self, x):
        """Alias of ``logpdf`` in scipy's vocabulary for discrete distributions."""
        return self.logpdf(x)

    def logpdf_grad(self, x):
        """``(lp, grads)``: the log density and its partials by argument name.

        ``grads`` has ``"x"`` for continuous distributions and every real
        parameter; arrays have the broadcast shape. Partials are 0 where
        ``lp`` is ``-inf``.
        """
        lp, partials = vectorize.logpdf_grad(self.spec, self._arrays(x))
        wanted = self.spec.gradient_args()
        grads = {n: (g[()] if g.ndim == 0 else g)
                 for n, g in zip(self.spec.arg_names, partials) if n in wanted}
        return (lp[()] if lp.ndim == 0 else lp), grads

    def rvs(self, size=None, seed=None):
        """Random draws, scipy style: ``Normal(0, 1).rvs(size=3, seed=0)``.

        Parameters
        ----------
        size : int or tuple of int, optional
            Shape of the output; the parameters broadcast to it. Default: the
            parameters' broadcast shape.
        seed : int, optional
            Non-negative. The same seed gives the same draws on any machine
            and thread count (xoshiro256** stream 0 of ``seed``, see
            ``distributions.random``). Default: fresh entropy from the OS.

        Returns
        -------
        ndarray
            float64 draws, int64 for discrete distributions; a numpy scalar
            when the shape is ``()``.
        """
        out = self.draw(random.seeded_state(seed, f"{self.spec.name}.rvs"), size)
        return out[()] if out.ndim == 0 else out

    def draw(self, state, size=None):
        """Draws from an explicit generator ``state`` (``distributions.random.make_state``),
        advanced in place: for callers that thread one stream through many
        distributions (predictive sampling). ``size`` as in :meth:`rvs`; always
        returns an array."""
        params = self._arrays(0.0)[1:]
        shape = np.broadcast_shapes(*(np.shape(a) for a in params))
        if size is not None:
            size = tuple(int(d) for d in np.atleast_1d(size))
            try:
                shape = np.broadcast_shapes(shape, size)
            except ValueError:
                shape = None
            if shape != size:
                raise ValueError(f"{self.spec.name}.rvs: size={size} does not fit the parameters' "
                                 f"broadcast shape {np.broadcast_shapes(*(np.shape(a) for a in params))}")
        out = vectorize.rvs(self.spec, params, shape, state)
        if not self.spec.discrete:
            return out
        if not np.all(out < 2.0 ** 63):  # only for parameters whose draws exceed int64
            raise ValueError(f"{self.spec.name}.rvs: draws up to {out.max():g} do not fit in int64")
        return out.astype(np.int64)

    def __repr__(self):
        def show(v):
            return repr(v.item()) if isinstance(v, np.ndarray) and v.ndim == 0 else (
                f"array{v.shape}" if isinstance(v, np.ndarray) else repr(v))
        args = ", ".join(f"{n}={show(v)}" for n, v in self.params.items())
        return f"{self.spec.name}({args})"
