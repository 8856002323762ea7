"""``ld.scan``: a recursion over time, as ``jax.lax.scan``.

``carries = ld.scan(step, init, xs)`` calls ``step(carry, x_t)`` once, on
placeholder nodes, and records the expression it returns: the next carry, or
``(next carry, y_t)``. The scan is one whole value of shape (T, *carry): the
carry after each step (``carries[-1]`` is the last); with outputs,
``ld.scan`` returns ``(carries, ys)``. The body may read parameters, data and
any whole value of the model (a transition matrix computed from parameters),
which are computed once, outside the loop.

``logdens.shaped`` lowers it to a forward loop over t that stores every
carry, and a backward loop that recomputes each step's body from its stored
carry and sweeps its adjoints back (into the previous carry, x_t and the
values the body reads): memory T x carry, no tape of the body's
intermediates. Carries are scalars, vectors or matrices (a Kalman filter's
mean and covariance as one (k + 1, k) matrix), inputs scalars or vectors;
T is fixed when the model is built.

``keep="last"`` makes the scan's value the last carry only (as the carry
``jax.lax.scan`` returns). Its gradient then stores the carry every
``checkpoint`` steps (every step while T x carry is at most
``STORE_ALL`` numbers, else about every sqrt(T) steps) and recomputes the
steps between two stored carries before sweeping them back: memory about
2 sqrt(T) carries instead of T, for one more forward pass.
"""

import itertools
import math

import numpy as np

from logdens import expr as ex
from logdens.distributions.dirichlet import check_probability_vectors
from logdens.distributions.frozen import InvalidArgumentError, _first_violation
from logdens.expr import ModelError

_KEYS = itertools.count()

#: A scan that keeps its last carry stores every carry for its gradient up to
#: this many numbers (32 MiB), and checkpoints beyond: recomputing costs one
#: more forward pass (a third more time for an HMM), worth it only where the
#: carries would outgrow the data the scan reads.
STORE_ALL = 1 << 22


class Placeholder(ex.Expr):
    """The carry or an input of one step inside a scan's body: a leaf whose value
    the loop sets at each step (``key`` names it for the numpy evaluator)."""

    varies = True  # the loop's values: conservatively, they carry gradients

    def __init__(self, role, shape):
        self.role, self.shape, self.key = role, tuple(shape), f"_scan_{role}_{next(_KEYS)}"

    def _format(self, children):
        return self.role


class Scan(ex.Expr):
    """The carries after each of T steps, or the last (``keep="last"``): children
    ``(init, *xs, next_carry[, y])``."""

    def __init__(self, init, xs, carry, inputs, next_carry, y, length, keep="all", checkpoint=None):
        self.carry, self.inputs, self.length, self.n_xs = carry, tuple(inputs), length, len(xs)
        self.has_y, self.keep = y is not None, keep
        self.children = (init, *xs, next_carry) + ((y,) if y is not None else ())
        self.shape = (length, *init.shape) if keep == "all" else init.shape
        size = max(math.prod(init.shape), 1)
        every = 1 if length * size <= STORE_ALL else math.isqrt(length - 1) + 1
        #: steps from one carry stored for the gradient to the next (``keep="last"``)
        self.checkpoint = min(checkpoint or every, length)

    @property
    def next_carry(self):
        return self.children[1 + self.n_xs]

    @property
    def y(self):
        return self.children[-1] if self.has_y else None

    def _format(self, children):
        return f"scan({children[0]}, ...)"


class ScanOutputs(ex.Expr):
    """The outputs y_t of a scan's steps, stacked: (T, *y); computed by the scan's loop."""

    def __init__(self, scan):
        self.children, self.shape = (scan,), (scan.length, *scan.y.shape)

    def _format(self, children):
        return f"outputs({children[0]})"


def scan(step, init, xs=None, length=None, keep="all", checkpoint=None):
    """The carries of the recursion ``carry_t = step(carry_{t-1}, xs[t])`` over
    t = 0..T-1 from ``init``, as a (T, *carry) expression (``keep="last"``: the
    last carry only); if ``step`` returns ``(carry, y)``, the pair
    ``(carries, ys)``.

    ``xs`` is an expression (or a list of them) whose first axis is time, or
    None with ``length`` steps; ``step`` gets one x_t each (or a list).
    ``checkpoint`` (with ``keep="last"``): the steps between the carries its
    gradient stores, instead of the automatic choice.
    """
    if keep not in ("all", "last"):
        raise ModelError(f"scan: keep is 'all' or 'last', got {keep!r}")
    if checkpoint is not None and (keep != "last" or not isinstance(checkpoint, int) or checkpoint < 1):
        raise ModelError(f"scan: checkpoint is a positive number of steps, with keep='last'; got "
                         f"checkpoint={checkpoint!r}, keep={keep!r}")
    init = ex.as_expr(init)
    many = isinstance(xs, (list, tuple))
    xs = [] if xs is None else [ex.as_expr(x) for x in (xs if many else [xs])]
    lengths = {x.shape[0] for x in xs if x.ndim >= 1}
    if any(x.ndim == 0 for x in xs) or len(lengths) > 1 or (length is not None and lengths - {length}):
        raise ModelError(f"scan: the sequences xs must share their first axis (time) and agree with "
                         f"length={length}, got shapes {[x.shape for x in xs]}")
    length = length if length is not None else (lengths.pop() if lengths else None)
    if length is None or length < 1:
        raise ModelError("scan: give xs or a positive length")
    if init.ndim > 2:
        raise ModelError(f"scan: the carry must be a scalar, a vector or a matrix, got shape {init.shape}")
    carry = Placeholder("carry", init.shape)
    inputs = [Placeholder(f"x{k}", x.shape[1:]) for k, x in enumerate(xs)]
    if xs:
        out = step(carry, inputs if many else inputs[0])
    else:
        out = step(carry, None)
    next_carry, y = out if isinstance(out, tuple) else (out, None)
    next_carry = ex.as_expr(next_carry)
    if next_carry.shape != init.shape:
        raise ModelError(f"scan: step returns a carry of shape {next_carry.shape}, but init has shape "
                         f"{init.shape}")
    y = None if y is None else ex.as_expr(y)
    if y is not None and y.ndim > 1:
        raise ModelError(f"scan: each step's output must be a scalar or a vector, got shape {y.shape}")
    node = Scan(init, xs, carry, inputs, next_carry, y, length, keep, checkpoint)
    return (node, ScanOutputs(node)) if y is not None else node


def hmm_marginal(log_emissions, transitions, initial):
    """log p(y) of a hidden Markov model, the hidden states summed out by the
    forward algorithm (Stan's ``hmm_marginal``): ``log_emissions`` (K, T) the log
    density of each observation under each state, ``transitions`` (K, K)
    row-stochastic (row i: the next state's probabilities from state i),
    ``initial`` the first state's probabilities (K,). As in Stan, ``initial`` and
    each row of ``transitions`` must be a simplex (the result is not log p(y)
    otherwise): arrays are checked here, a bare parameter must have the simplex
    constraint, and an expression (``ld.softmax(Z)``) is trusted.

    The carry is the log probability of the states before each observation
    and the observations so far: c_0 = log(initial), then with a_t = c_t + e_t,
    c_{t+1} = log(exp(a_t - m) @ transitions) + m, m = logsumexp(a_t) (no
    overflow). The rows of ``transitions`` sum to 1, so logsumexp(c_T) is
    logsumexp(a_{T-1}) = log p(y).
    """
    log_emissions, transitions, initial = (ex.as_expr(a) for a in (log_emissions, transitions, initial))
    if log_emissions.ndim != 2 or transitions.shape != (log_emissions.shape[0],) * 2 or \
            initial.shape != log_emissions.shape[:1]:
        raise ModelError(f"hmm_marginal: needs log_emissions (K, T), transitions (K, K) and initial (K,), got "
                         f"{log_emissions.shape}, {transitions.shape} and {initial.shape}")
    _check_simplex("initial", initial)
    _check_simplex("transitions", transitions)

    def step(carry, emission):
        joint = carry + emission
        top = ex.logsumexp(joint, axis=0)
        return ex.FUNCTIONS["log"](ex.FUNCTIONS["exp"](joint - top) @ transitions) + top
    last = scan(step, ex.FUNCTIONS["log"](initial), log_emissions.T, keep="last")
    return ex.logsumexp(last, axis=0)


def _check_simplex(name, node):
    """A ``ModelError`` unless ``hmm_marginal``'s argument ``name`` (its initial
    probabilities, or the transition matrix, a simplex per row) is one: an
    array written into the model is checked entry by entry, a bare parameter
    by its constraint."""
    if isinstance(node, ex.Param) and node.constraint.name != "simplex":
        wanted = ("it must be a simplex (Stan's rho): give it constraint=ld.simplex or a Dirichlet prior"
                  if name == "initial" else "each of its rows must be a simplex (Stan's Gamma): use "
                  "ld.softmax(Z) of a (K, K) parameter Z, or ld.stack of K simplex parameters")
        raise ModelError(f"hmm_marginal: {name} is parameter {node.name!r} with constraint {node.constraint!r}; "
                         f"{wanted}")
    if not isinstance(node, ex.Data) or node.name is not None:
        return
    value = np.asarray(node.value, dtype=float)
    ok = (value >= 0.0) & (value <= 1.0)
    if not np.all(ok):
        raise ModelError(f"hmm_marginal: {_first_violation(name, value, ok)}, must be in [0, 1] (a probability)")
    try:
        check_probability_vectors("hmm_marginal", name, value)
    except InvalidArgumentError as err:
        raise ModelError(str(err)) from None
