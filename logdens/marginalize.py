"""Discrete parameters of finite support, summed out of the model.

``m.param("s", ld.DiscreteUniform(0, T - 1))``, ``ld.Categorical(p)``,
``ld.Bernoulli(p)``, and the same with ``shape=n`` (one label per
observation), as PyMC's ``MarginalModel`` and NumPyro's enumeration do. No
sampler moves a discrete value: the engine compiles the model with the
parameter summed over its support (``rewrite``), in nodes it already has,
as ``logdens.bounds`` rewrites expression bounds:

- a scalar ``s``: one potential logsumexp_k [log p(s = v_k) + sum_i l_i(v_k)],
  the rows summed inside each support value. Where ``s`` enters its one
  reading term only through a comparison with a sorted 1-D data array
  (``ld.where(t < s, early, late)``, PyMC's ``switch(s >= years, ...)``),
  each row's log density takes one of two values, A_i where the comparison
  holds and B_i where not, and sum_i l_i(v_k) = sum(B) + C[m_k] with C the
  cumulative sums of A - B (0 first) and m_k the number of rows the
  comparison holds on: one pass over the rows and a logsumexp over the
  support (``_step_total``). Otherwise each support value is a copy of the
  reading terms (at most ``MAX_COPIES``).
- a label per row ``z`` (shape of the reading terms' rows, read
  elementwise): per row, logsumexp_k [log p(z_i = v_k) + l_i(v_k)], K
  evaluations per row (as ``ld.Mixture``), a per-observation likelihood
  under the observed term's name.

After sampling, ``recover`` draws the parameter from its exact conditional
given each draw of the others (PyMC's ``recover_marginals``, NumPyro's
``infer_discrete``).
"""

import hashlib
from typing import Callable, NamedTuple

import numpy as np
from scipy import special as sp

from logdens import expr as ex
from logdens import rules
from logdens.distributions.categorical import Categorical
from logdens.distributions.categorical_logit import CategoricalLogit
from logdens.evaluate import evaluate

#: The most support values enumerated per row (the issue's limit).
MAX_EVALUATIONS = 10_000
#: The most copies of the reading terms (one per support value) where no
#: one-pass form applies: each copy is a pass over the rows in the generated code.
MAX_COPIES = 64


class Enumerated(NamedTuple):
    """The "transform" of a discrete parameter: none; it has no unconstrained
    coordinates, its support ``values`` are summed over (``rewrite``)."""

    values: np.ndarray
    event = False

    def unconstrained_size(self, shape):
        return 0


class Marginal(NamedTuple):
    """A summed-out parameter: ``logits(values)`` are its conditional log
    probabilities up to a constant, shape (draws, *shape, K), given batched
    ``values`` of the other parameters and the data (``evaluate``'s)."""

    name: str
    shape: tuple
    support: np.ndarray
    logits: Callable
    #: Named data whose values the rewrite read (the rows a comparison holds on).
    fixed: tuple = ()


def support(name, prior, constraint):
    """The values of a discrete prior's support as an ``Enumerated``; a ModelError
    when it is infinite, too large or depends on a parameter."""
    what = f"parameter {name!r}"
    if isinstance(prior, (Categorical, CategoricalLogit)):
        probs = next(iter(prior.params.values()))
        values = np.arange(np.shape(probs)[-1], dtype=float)
    else:
        bounds = (constraint.lower, constraint.upper)
        for bound in bounds:
            if isinstance(bound, ex.Expr):
                kind = "a parameter" if bound.depends_on_params() else "data"
                raise ex.ModelError(f"{what}: its {prior.spec.name} support has the bound {bound.label()}, "
                                    f"which depends on {kind}; a discrete parameter is summed over a support "
                                    "of fixed numbers: give numeric bounds")
        if any(b is None or not np.isfinite(b) for b in bounds):
            raise ex.ModelError(f"{what}: {prior.spec.name} has an infinite support, which cannot be "
                                "enumerated to sum it out; give a bounded prior (ld.DiscreteUniform, "
                                "ld.Categorical) or model the value as continuous")
        values = np.arange(bounds[0], bounds[1] + 1.0)
    if len(values) > MAX_EVALUATIONS:
        raise ex.ModelError(f"{what}: its support has {len(values)} values, more than {MAX_EVALUATIONS} "
                            "evaluations per row: too large to enumerate; narrow the prior's support")
    return Enumerated(values)


def discrete(model):
    """Names of the model's summed-out parameters, in declaration order."""
    return [name for name in model.params if isinstance(model.transforms[name], Enumerated)]


def rewrite(model):
    """``(model as the engine compiles it, its Marginal tuple)``: every discrete
    parameter, its prior and the terms that read it replaced by one term of
    the sum over its support. ``(model, ())`` when it has none."""
    names = discrete(model)
    if not names:
        return model, ()
    lowered, terms, marginals = model.snapshot(), list(model.terms), []
    for name in names:
        param = model.params[name]
        _check_no_other_reader(model, name, param)
        prior = next(t for t in terms if t.kind == "prior" and t.value is param)
        readers = [t for t in terms if t is not prior and any(_reads(a, param) for a in t.args)]
        for term in [prior] + readers:
            others = [n for n in names if n != name and any(_reads(a, model.params[n]) for a in term.args)]
            if others:
                raise ex.ModelError(f"term {term.name!r} reads discrete parameters {name!r} and {others[0]!r}: "
                                    "a discrete parameter that feeds another one would be summed jointly; "
                                    "not supported (sum one out by hand, e.g. with ld.Mixture)")
        term, marginal = _summed(name, param, prior, readers, model.transforms[name].values)
        at = next(i for i, t in enumerate(terms) if t is prior)
        gone = {id(prior)} | {id(t) for t in readers}
        terms = [t for t in terms if id(t) not in gone]
        terms.insert(min(at, len(terms)), term)
        del lowered.params[name], lowered.transforms[name]
        marginals.append(marginal)
    lowered.terms = tuple(terms)
    return lowered, tuple(marginals)


def _reads(node, param):
    """Whether expression ``node`` reads parameter node ``param``."""
    return any(leaf is param for leaf in node.leaves())


def _check_no_other_reader(model, name, param):
    """A ModelError for deterministics and parameter bounds that read ``param``."""
    for det, e in model.deterministics.items():
        if _reads(e, param):
            raise ex.ModelError(f"deterministic {det!r} reads discrete parameter {name!r}, which is summed "
                                "out of the model; compute it from the recovered draws in the posterior")
    for other, p in model.params.items():
        for bound in (p.constraint.lower, p.constraint.upper):
            if isinstance(bound, ex.Expr) and _reads(bound, param):
                raise ex.ModelError(f"parameter {other!r}: its bound reads discrete parameter {name!r}, "
                                    "which is summed out; not supported")


def _summed(name, param, prior, readers, values):
    """The term that replaces ``prior`` and ``readers``, and the Marginal."""
    from logdens.model import Term, make_term  # the model module imports this one
    log_prior = _log_prior(name, prior, values)
    rows = [_rows(t) for t in readers]
    if param.shape == ():
        total, logits, fixed = _scalar_total(name, param, log_prior, rows, values)
        return make_term(f"_marginal_{name}", "potential", None, total), Marginal(name, (), values, logits, fixed)
    for term, r in zip(readers, rows):
        _check_elementwise(name, param, term, r)
    _check_copies(name, len(values))
    per_row = [_tree_sum([lp] + [_at(r, param, ex.Const(v)) for r in rows]) for lp, v in zip(log_prior, values)]
    per_row = [p if p.shape == param.shape else ex.FUNCTIONS["broadcast_like"](p, param) for p in per_row]
    value = _logaddexp_tree(per_row)
    logits = _evaluated(per_row)
    observed = [t for t in readers if t.per_observation]
    marginal = Marginal(name, param.shape, values, logits)
    if len(observed) == 1:  # its rows stay the observations of the log-likelihood
        return Term(observed[0].name, "likelihood", None, value, (value,)), marginal
    return make_term(f"_marginal_{name}", "potential", None, ex.sum(value)), marginal


def _rows(term):
    """A reading term's log density as an expression: per row for a distribution
    term or a likelihood, the scalar itself for a potential."""
    if term.dist is None:
        return term.value
    if term.dist.spec.multivariate:
        raise ex.ModelError(f"term {term.name!r}: a multivariate {term.dist.spec.name} reads a discrete "
                            "parameter; only univariate terms, likelihoods and potentials may")
    return ex.LogPdf(term.dist.spec, term.args)


def _log_prior(name, prior, values):
    """log p(x = v) for each support value v: floats, or expressions (of the
    prior's parameters, per row where they have rows)."""
    dist = prior.dist
    if isinstance(dist, (Categorical, CategoricalLogit)):
        probs = next(iter(dist.params.values()))  # p or logits
        if np.ndim(probs) != 1:
            raise ex.ModelError(f"parameter {name!r}: {dist.spec.name} with a probability vector of shape "
                                f"{np.shape(probs)}; give one vector of shape (K,)")
        if isinstance(probs, np.ndarray):
            with np.errstate(divide="ignore"):
                logs = np.log(probs) if isinstance(dist, Categorical) else probs - sp.logsumexp(probs)
            return [float(v) for v in logs]
        logs = ex.FUNCTIONS["log"](probs) if isinstance(dist, Categorical) else ex.log_softmax(probs)
        return [ex.Element(logs, k) for k in range(len(values))]
    if dist.numeric:
        return [float(dist.logpdf(v)) for v in values]
    return [ex.LogPdf(dist.spec, [ex.Const(v)] + list(prior.args[1:])) for v in values]


def _scalar_total(name, param, log_prior, rows, values):
    """``(logsumexp_k [log p(v_k) + sum of the rows at v_k], logits, names of the
    data read as numbers)`` for a scalar parameter."""
    if len(rows) == 1:
        step = _step(param, rows[0])
        if step is not None:
            return _step_total(name, log_prior, values, *step)
    _check_copies(name, len(values))
    totals = [_tree_sum([lp] + [ex.sum(_at(r, param, ex.Const(v))) for r in rows])
              for lp, v in zip(log_prior, values)]
    return _logaddexp_tree(totals), _evaluated(totals), ()


#: For ``x <op> s``: whether the comparison holds on a prefix of rows sorted by x
#: (else on a suffix), and numpy's searchsorted side that counts that prefix
#: (x < v: "left"; x <= v: "right"; the suffixes are the complements).
_PREFIX = {"lt": (True, "left"), "le": (True, "right"), "gt": (False, "right"), "ge": (False, "left")}
_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _step(param, rows):
    """``(A, B, x, op)`` where ``param`` enters ``rows`` (a vector over rows) only
    through one comparison ``x <op> param`` with a 1-D data array ``x`` of
    those rows, sorted ascending; A and B are ``rows`` where the comparison
    holds and where not. None where no such comparison exists."""
    if rows.ndim != 1:
        return None
    found = [n for n in ex.nodes(rows) if isinstance(n, ex.Binary) and n.op in _PREFIX
             and any(c is param for c in n.children)]
    if len(found) != 1:
        return None
    cmp = found[0]
    x, op = (cmp.children[0], cmp.op) if cmp.children[1] is param else (cmp.children[1], _FLIPPED[cmp.op])
    if not isinstance(x, ex.Data) or x.shape != rows.shape or x.depends_on_params():
        return None
    if np.any(np.diff(np.asarray(x.value, dtype=float)) < 0):
        return None
    holds, fails = _at(rows, cmp, ex.Const(1.0)), _at(rows, cmp, ex.Const(0.0))
    if _reads(holds, param):
        return None  # it is read elsewhere too
    return holds, fails, x, op


def _step_total(name, log_prior, values, holds, fails, x, op):
    """The one-pass sum over the support (module docstring): with A the rows where
    the comparison holds on a prefix (else B and A swapped), the total at v_k
    is sum(B) + C[m_k], C = [0, cumsum(A - B)], m_k the prefix length at v_k."""
    prefix, side = _PREFIX[op]
    first, rest = (holds, fails) if prefix else (fails, holds)
    counts = np.searchsorted(np.asarray(x.value, dtype=float), values, side=side)
    c = ex.cumsum(first - rest)
    base = ex.sum(rest)

    def cumulative(j):  # C[j]
        return 0.0 if j == 0 else ex.Element(c, int(j) - 1)

    if all(isinstance(lp, float) and lp == log_prior[0] for lp in log_prior):
        total = log_prior[0] + base + _logaddexp_tree(_groups(counts, c, cumulative))
    else:
        _check_copies(name, len(values))
        total = base + _logaddexp_tree([ex.as_expr(lp + cumulative(j)) for lp, j in zip(log_prior, counts)])

    def logits(batch):
        a, b = (_batched(e, batch) for e in (first, rest))
        steps = np.concatenate([np.zeros(a.shape[:1] + (1,)), np.cumsum(a - b, axis=1)], axis=1)
        return _batched_prior(log_prior, batch) + np.sum(b, axis=1, keepdims=True) + steps[:, counts]
    return total, logits, () if x.name is None else (x.name,)


def _groups(counts, c, cumulative):
    """logsumexp_k C[m_k] as scalar expressions, one per stretch of the support
    where m_k rises by one (a slice of ``c``: one logsumexp) or stays (a tie:
    log of the count added once)."""
    out, k = [], 0
    while k < len(counts):
        end = k + 1
        step = counts[end] - counts[k] if end < len(counts) and counts[end] - counts[k] in (0, 1) else None
        while end < len(counts) and counts[end] - counts[end - 1] == step:
            end += 1
        m0, n = int(counts[k]), end - k
        if step == 1 and m0 == 0:  # C[0] = 0, then c[0], ..., c[n - 2]
            out.append(ex.FUNCTIONS["logaddexp"](0.0, ex.logsumexp(c[0:n - 1])))
        elif step == 1:
            out.append(ex.logsumexp(c[m0 - 1:m0 - 1 + n]))
        else:
            out.append(ex.as_expr(cumulative(m0)) + float(np.log(n)) if n > 1 else ex.as_expr(cumulative(m0)))
        k = end
    return out


def _check_elementwise(name, param, term, rows):
    """A ModelError unless ``rows`` has the parameter's shape and reads it only
    through elementwise nodes: then row i depends on its own label alone."""
    if rows.shape != param.shape:
        raise ex.ModelError(f"term {term.name!r} has rows of shape {rows.shape} but discrete parameter "
                            f"{name!r} has shape {param.shape}: a label per row must have the shape of the "
                            "rows it labels (summing it out otherwise couples rows: K^n terms)")
    elementwise = (ex.Unary, ex.Binary, ex.Ternary, ex.LogPdf)
    for node in ex.nodes(rows):
        picked = isinstance(node, ex.Gather) and node.children[1] is param and not _reads(node.children[0], param)
        if node is not param and _reads(node, param) and not (isinstance(node, elementwise) or picked):
            raise ex.ModelError(f"term {term.name!r} reads discrete parameter {name!r} through "
                                f"{type(node).__name__} ({node.label()}), not elementwise: its rows would not "
                                "be independent given their labels (K^n terms); not supported")


def _check_copies(name, k):
    if k > MAX_COPIES:
        raise ex.ModelError(f"parameter {name!r}: summing it out takes one copy of the terms that read it "
                            f"per support value, {k} copies, more than {MAX_COPIES}; read a scalar one "
                            "through one comparison with sorted data (ld.where(t < s, a, b)), or narrow "
                            "its support")


def _at(root, old, new):
    """``root`` with node ``old`` replaced by ``new``; elementwise nodes above it
    rebuilt (their shapes broadcast anew), a gather by a label at a constant
    label the element it picks, the others copied."""
    def combine(node, below):
        if node is old:
            return new
        if all(b is c for b, c in zip(below, node.children)):
            return node
        if isinstance(node, ex.Unary):
            return ex.Unary(node.op, *below)
        if isinstance(node, ex.Binary):
            return ex.Binary(node.op, *below)
        if isinstance(node, ex.Ternary):
            if node.op == "where" and isinstance(below[0], ex.Const):  # a branch known: no select per row
                return below[1] if below[0].value else below[2]
            return ex.Ternary(node.op, *below)
        if isinstance(node, ex.LogPdf):
            return ex.LogPdf(node.spec, below)
        if isinstance(node, ex.Gather) and isinstance(below[1], ex.Const):  # mu[z] at z = k: mu[k]
            k = int(below[1].value)
            return ex.Element(below[0], k) if below[0].ndim == 1 else ex.Take(below[0], k, 0)
        return ex.with_children(node, below)
    return rules.fold(root, combine)


def _tree_sum(parts):
    """The sum of floats and expressions (an expression)."""
    total = ex.as_expr(parts[0])
    for p in parts[1:]:
        total = total + p
    return total


def _logaddexp_tree(parts):
    """log(sum(exp(parts))) of scalar or same-shape expressions, pairwise: depth log2(K)."""
    parts = [ex.as_expr(p) for p in parts]
    while len(parts) > 1:
        pairs = [ex.FUNCTIONS["logaddexp"](a, b) for a, b in zip(parts[::2], parts[1::2])]
        parts = pairs + parts[len(pairs) * 2:]
    return parts[0]


def _batched(node, batch):
    """``node``'s value over the draws of ``batch``: (draws, *shape)."""
    return np.asarray(rules.with_draws(node, evaluate(node, batch, batch=True)), dtype=float)


def _batched_prior(log_prior, batch):
    """The log prior over the support, (draws or 1, K)."""
    if all(isinstance(lp, float) for lp in log_prior):
        return np.asarray(log_prior)[None]
    return _stack_last([_batched(ex.as_expr(lp), batch) for lp in log_prior])


def _evaluated(expressions):
    """``logits`` of one expression per support value: stacked on a last axis."""
    return lambda batch: _stack_last([_batched(e, batch) for e in expressions])


def _stack_last(arrays):
    return np.stack(np.broadcast_arrays(*arrays), axis=-1)


def recover(density, marginals, params, seed):
    """Draws of each summed-out parameter from its exact conditional given each
    draw of ``params`` (name -> (chains, draws, *shape), constrained), with a
    generator seeded by ``seed``: name -> integer array (chains, draws, *shape)."""
    rng = np.random.default_rng(seed)
    out = {}
    for m in marginals:
        chains, draws = next(iter(params.values())).shape[:2] if params else (1, 1)
        flat = {k: v.reshape((chains * draws,) + v.shape[2:]) for k, v in params.items()}
        flat = {k: (v[:, None] if v.ndim == 1 else v) for k, v in flat.items()}  # scalars as (n, 1)
        logits = m.logits({**density.data(), **flat})
        logits = np.broadcast_to(logits, (chains * draws,) + m.shape + (len(m.support),))
        probs = sp.softmax(logits, axis=-1)
        u = rng.random(probs.shape[:-1] + (1,))
        k = np.minimum(np.sum(np.cumsum(probs, axis=-1) < u, axis=-1), len(m.support) - 1)
        out[m.name] = m.support[k].astype(np.int64).reshape((chains, draws) + m.shape)
    return out


def attach(density, marginals):
    """``density`` given ``recover_discrete(params, draws)``, which the samplers'
    output calls (seeded by the draws: the same run gives the same recovered
    draws), and a ``set_data`` that refuses new values of the data a one-pass
    sum read as numbers (its split points are compiled in)."""
    density.marginals = marginals
    density.recover_discrete = lambda params, draws: recover(density, marginals, params, seed_of(draws))
    fixed = {name for m in marginals for name in m.fixed}
    if fixed:
        plain = density.set_data

        def set_data(*, coords=None, **arrays):
            for name in sorted(fixed & set(arrays)):
                new, old = np.asarray(arrays[name], dtype=float), density.data()[name]
                if new.shape != old.shape or not np.array_equal(new, old):
                    m = next(m for m in marginals if name in m.fixed)
                    raise ex.ModelError(f"set_data: data {name!r} give the rows where discrete parameter "
                                        f"{m.name!r} switches, compiled into the sum over its support; new "
                                        f"values of {name!r} need a new compile() of the model")
            plain(coords=coords, **arrays)
        density.set_data = set_data
    return density


def seed_of(draws):
    """A seed from the bytes of ``draws``: reproducible wherever the draws are."""
    digest = hashlib.sha256(np.ascontiguousarray(draws).tobytes()).digest()
    return np.random.SeedSequence(np.frombuffer(digest, dtype=np.uint32).tolist())
