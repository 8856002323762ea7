"""The declarative description every distribution module exports as ``SPEC``.

The engine reads a spec to generate code (which kernel to call, which
summands it may drop), the public API reads it to validate arguments, and the
tests read it to draw points and check tags. The math lives in two scalar
kernels of each distribution module:

``logpdf(x, *params) -> float``
    The full, normalized log density (log mass for discrete distributions).
``logpdf_grad(x, *params, keep) -> (lp, d_x, d_param1, ...)``
    Value and partials in one evaluation. ``keep`` is a tuple of booleans, one
    per entry of ``SPEC.summands``: summand ``k`` is added (with its partials)
    only when ``keep[k]`` is true. Partials come in argument order, ``d_x``
    first; discrete distributions return ``d_x = 0.0`` and integer parameters
    (Binomial's ``n``) get ``0.0``. Where the value is ``-inf`` every partial
    is ``0.0``. ``keep = (True,) * len(summands)`` gives the full density.
``logpdf_grad(x, *params, keep, x_valid=False)``, where ``SPEC.takes_x_valid``
    With ``x_valid=True`` the caller vouches that ``x`` lies in the support
    (the engine passes it for observed data it checked when the data were
    set), and the kernel skips those checks: they cost 12% of the
    hierarchical Poisson model's gradient (x off the integers is a floor and
    a compare per element). Parameters are still checked, and so is anything
    that guards against overflow.

Multivariate distributions (``SPEC.events`` not empty) have arguments with
event axes: MvNormal's ``x`` and ``loc`` are vectors of length d and its
``scale_tril`` a d x d matrix. Their kernels take one event per argument
(an array of the event's shape; a float for an argument without event axes)
and write partials into the caller's buffers, as Stan Math's partials do:

``logpdf(x, *params) -> float``
    The full, normalized log density of one event.
``logpdf_grad(x, *params, keep, work, d_x, d_param1, ...) -> lp``
    ``d_<arg>`` is an array of the argument's event shape (length 1 for an
    argument without event axes) to which the kernel *adds* the partials of
    the kept summands, or None where the caller wants none (numba prunes
    the branch). Adding lets the engine sum the partials of a parameter
    shared by every row in one buffer, with no buffer per row. Where the
    value is ``-inf`` nothing is added. ``work`` is a scratch array of at
    least ``SPEC.work_size(axis lengths)`` floats.
``rvs(state, *params, out)``
    One draw of a whole event into ``out`` (flat, the event's size).
``SPEC.rows.kernel(x, *params, keep, work, lp, d_x, d_param1, ...)``, optional
    The same over a block of rows at once (``RowsKernel``): the arguments
    named in ``SPEC.rows.aligned`` may come as rows of events (one more
    leading axis, the block's rows: (nb,) for a scalar event, (nb, d) for a
    vector; their partials too), the others as one event; ``lp`` takes each
    row's log density. A row-by-row solve is a chain
    of divisions whose latency bounds it; down the rows the loops
    vectorize. A row whose value is not finite gets ``-inf`` and the block
    adds no partials.

Both kernels are plain Python over ``math``, ``distributions.special`` and
``distributions.vmath`` (whose ``exp``, ``log`` and ``log1p`` let loops
vectorize), decorated with ``distributions.jit``'s ``jitable`` and ``kernel``:
they run uncompiled from Python and compile inside numba code, cached on
disk, without fastmath flags; ``kernel`` adds LLVM's ``alwaysinline`` to
``logpdf_grad``, and ``fast_kernel`` the engine's flags to the few kernels
tested with them (see ``distributions.jit`` for why). numba's own IR inlining
(``inline="always"``) also inlines, but made the eight-schools model compile
in 1.56 s instead of 0.7-0.95 s. The kernels never raise: an invalid
parameter or a value outside the support gives ``-inf``.

The kernels of Normal, Poisson, BernoulliLogit, Bernoulli, Geometric,
Laplace, LogNormal, Logistic, Uniform, Cauchy, HalfCauchy and Pareto are
branch-free: the checks give a flag ``ok``, the math
runs on a stand-in point where it is false (so plain Python never divides
by zero or leaves lgamma's domain), and ``-inf`` is chosen at the end. An
early return around the math puts it in a conditional block, and the loop
vectorizer of LLVM 22 (numba 0.68) weighs such a block by its branch
probability: it found the scalar loop cheaper and left the engine's loops
scalar, where LLVM 20 (numba 0.65) vectorized them. PoissonLog keeps its
early return: LLVM 22 vectorizes its loop (one guarded block, no division),
and the branch-free form took 5-10% longer. Helpers that kernels call in
their loops are always inlined too (``jit.kernel``): one loaded from the
disk cache, compiled there for another caller, stayed a call and kept the
loop scalar. ``tests/test_vectorize.py`` checks the generated loops and
the branch-free kernels' loops.

``rvs(state, *params) -> float``
    One random draw (a float, integral for discrete distributions) from a
    ``uint64[4]`` generator state of ``distributions.random``, advanced in
    place, so draws depend only on the seed. An exact algorithm, named and
    cited in a comment; NaN for invalid parameters (the public ``rvs``
    validates them first, as ``logpdf`` does).
"""

from typing import Callable, NamedTuple, Optional, Tuple

from .constraints import Constraint



class Param(NamedTuple):
    """A parameter: its name (scipy/Stan vocabulary) and its constraint."""

    name: str
    constraint: Constraint


class RowsKernel(NamedTuple):
    """A multivariate kernel over a block of rows (see the module docstring)."""

    kernel: Callable
    #: The arguments that may be rows of events (the others are one event).
    aligned: Tuple[str, ...]
    #: ``work(axis lengths, rows) -> int``: the scratch array's length.
    work: Callable


class Summand(NamedTuple):
    """One summand of the log density, tagged by the arguments it depends on.

    A summand whose arguments are all data or constants is the same at every
    evaluation, so the engine drops it (``propto``) or computes it once when
    data are set (Stan's ``include_summand``). ``depends`` names arguments as
    in the kernel signature (``"x"`` for the value).
    """

    depends: Tuple[str, ...]
    formula: str


class Spec(NamedTuple):
    """Everything the engine, the public API and the tests know about a distribution."""

    name: str
    params: Tuple[Param, ...]
    support: Constraint
    summands: Tuple[Summand, ...]
    logpdf: Callable
    logpdf_grad: Callable
    #: Whether ``logpdf_grad`` takes a last argument ``x_valid`` (default False).
    takes_x_valid: bool = False
    #: ``rvs(state, *params) -> float``: one draw, from a ``distributions.random``
    #: state (see the module docstring).
    rvs: Optional[Callable] = None
    #: Multivariate distributions: the named event axes of each argument, ``x``
    #: first (MvNormal: ``(("d",), ("d",), ("d", "d"))``); axes of one name have
    #: one length. Empty for univariate distributions.
    events: Tuple[Tuple[str, ...], ...] = ()
    #: Multivariate distributions: ``check(x, lengths, known) -> mask`` over x's
    #: batch, false where an event of ``x`` lies outside the support (a simplex
    #: that does not sum to 1, a category past the last, counts that do not sum
    #: to n); ``lengths`` are the event axes' (``split_shapes``), ``known`` the
    #: other arguments whose values are fixed data or constants, by name. Its
    #: docstring states the condition in errors. None: the elementwise check of
    #: ``support`` says it all.
    check: Optional[Callable] = None
    #: Multivariate distributions: ``work(axis lengths) -> int``, the length of
    #: the scratch array ``logpdf_grad`` takes (kernels allocate nothing: they
    #: run once per row). None: none needed.
    work: Optional[Callable] = None
    #: Multivariate distributions: the kernel over a block of rows, or None.
    rows: Optional[RowsKernel] = None

    @property
    def multivariate(self):
        """Whether the arguments have event axes (see the module docstring)."""
        return bool(self.events)

    def split_shapes(self, shapes):
        """``(batch shapes, axis lengths)`` of arguments of ``shapes`` (``x``
        first): each shape without its event axes, and the length of each named
        axis. A shape None (unknown) is skipped and gives None. A ValueError
        names the argument whose shape does not fit."""
        if not self.events:
            return tuple(shapes), {}
        lengths, batches = {}, []
        for name, axes, shape in zip(self.arg_names, self.events, shapes):
            if shape is None:
                batches.append(None)
                continue
            shape = tuple(shape)
            if len(shape) < len(axes):
                raise ValueError(f"{self.name}: {name} has shape {shape} but needs {len(axes)} event "
                                 f"axes ({', '.join(axes)})")
            event = shape[len(shape) - len(axes):]
            for axis, n in zip(axes, event):
                if lengths.setdefault(axis, (n, name))[0] != n:
                    first = lengths[axis]
                    raise ValueError(f"{self.name}: axis {axis!r} has length {first[0]} in {first[1]} but "
                                     f"{n} in {name} (shape {shape})")
            batches.append(shape[:len(shape) - len(axes)])
        return tuple(batches), {axis: n for axis, (n, _) in lengths.items()}

    def work_size(self, lengths):
        """Scratch floats a multivariate ``logpdf_grad`` needs for events of axis
        ``lengths`` (at least 1)."""
        return max(1, self.work(lengths)) if self.work is not None else 1

    @property
    def discrete(self):
        """Whether the value is an integer (a log mass function)."""
        return self.support.integer

    @property
    def param_names(self):
        return tuple(p.name for p in self.params)

    @property
    def arg_names(self):
        """Kernel argument names in order: the value ``x`` then the parameters."""
        return ("x",) + self.param_names

    @property
    def keep_all(self):
        """The ``keep`` tuple of the full, normalized density."""
        return (True,) * len(self.summands)

    def keep_for(self, fixed, propto=True):
        """The ``keep`` tuple when the arguments named in ``fixed`` never change.

        With ``propto`` a summand is dropped when all its arguments are fixed
        (pure constants included); without it, everything is kept.
        """
        if not propto:
            return self.keep_all
        return tuple(not set(s.depends) <= set(fixed) for s in self.summands)

    def gradient_args(self):
        """Names of the arguments that have partials: continuous ones only."""
        names = () if self.discrete else ("x",)
        return names + tuple(p.name for p in self.params if not p.constraint.integer)
