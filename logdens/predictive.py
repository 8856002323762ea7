"""Prior and posterior predictive draws, as ArviZ DataTree groups.

``sample_prior_predictive`` draws every parameter from its prior in model
order (a prior's arguments may read parameters drawn before it), then the
deterministics and every observed term: the groups ``prior``,
``prior_predictive`` and ``observed_data``. ``sample_posterior_predictive``
draws every observed term once per posterior draw, with its distribution's
arguments evaluated at that draw: the group ``posterior_predictive`` (or
``predictions`` for new data set with ``set_data``), as PyMC and ArviZ name
them.

Arguments are evaluated by the numpy interpreter (``logdens.evaluate``) for
all draws at once, and each variable is one call of its distribution's
compiled draw loop (``Distribution.draw``) on one xoshiro256** stream of
``seed``, in model order: the draws depend only on the seed.

A parameter's distribution is its prior restricted to its constraint (the
model's density is the prior's times the constraint's indicator). Where the
constraint cuts into the prior's support (``param("s", ld.Normal(0, 1),
constraint=ld.positive)``), draws outside it are drawn again; that is the
model's distribution only when the cut does not depend on other parameters
(else the model's joint density is not normalized per draw), so then it is
an error. An ordered vector with i.i.d. elements is drawn as sorted i.i.d.
draws (its density is k! times theirs on the ordered cone).

An ``ld.Mixture`` (observed, or a prior whose constraint is its support) is
drawn as its own terms are: its weights and each component's arguments at the
draws, then ``Mixture.draw`` on the same stream.
"""

import warnings

import numpy as np

from logdens import bounds, gp, rules, validate
from logdens.distributions import random
from logdens.distributions.constraints import contains, resolve_bounds
from logdens.distributions.frozen import InvalidArgumentError
from logdens.evaluate import evaluate
from logdens.expr import Data, Expr, ModelError, as_expr, nodes
from logdens.layout import Layout
from logdens.mixture import Mixture
from logdens.model import Model

#: Rounds of redrawing the elements outside a parameter's constraint before
#: giving up (an acceptance below about 1 / MAX_ROUNDS).
MAX_ROUNDS = 1000


class _Source:
    """The model and what the draws read: current data, coords and dims.

    A ``Model`` is checked as ``compile()`` checks it; a ``LogDensity`` gives
    the data of its last ``set_data`` and its current coords.
    """

    def __init__(self, model, what):
        if isinstance(model, Model):
            self.model = model
            layout = Layout(model)
            arrays = {name: node.value for name, node in model.data_nodes.items()}
            arrays.update(layout.anonymous)
            validate.check_arrays(layout, model, arrays)
            validate.check_terms(model, layout, arrays)
            self.data, self.coords, self.dims = arrays, dict(model.coords), dict(model.dims)
        elif isinstance(getattr(model, "model", None), Model) and callable(getattr(model, "data", None)):
            self.model = model.model
            self.data, self.coords, self.dims = model.data(), model.coords(), model.dims()
        else:
            raise TypeError(f"{what}: model must be an ld.Model or its compiled LogDensity, "
                            f"got {type(model).__name__}")
        self.data = {k: v for k, v in self.data.items() if k in self.model.data_nodes}

    def observed_data(self):
        """The observed values by term name, as the samplers' ``observed_data``."""
        return {t.name: np.asarray(evaluate(_observed_value(t), self.data))
                for t in _observed_terms(self.model)}


def _observed_terms(model):
    """The terms whose values are drawn as observations: observed terms and observed Mixtures."""
    return [t for t in model.terms if t.kind == "observe" or (t.kind == "likelihood" and t.mixture)]


def _observed_value(term):
    """The observed value of an observed term (its log density's ``x``)."""
    return term.mixture.x if term.mixture else term.value


def _at_draws(node, values, n):
    """The value of expression ``node`` at ``n`` draws, with a leading draw axis.

    Evaluated for all draws at once (``logdens.evaluate``), a value that does
    not change with the draws broadcast to them (``rules.with_draws``).
    Shapes are the current data's, not those the model was built with.
    """
    value = rules.with_draws(node, evaluate(node, values, batch=True)).astype(float, copy=False)
    return np.broadcast_to(value, (n,) + value.shape[1:])


def _arguments(term, values, n, shape=()):
    """The term's distribution arguments at ``n`` draws, by name, broadcast to
    (n, *plate) with ``shape`` (the value's) taking part in the plate; for a
    multivariate distribution (n, *plate, *event), the plate without event axes."""
    return _spec_arguments(term.dist.spec, term.args[1:], values, n, shape)


def _spec_arguments(spec, nodes, values, n, shape):
    """``_arguments`` of a distribution ``spec`` whose parameters are the expressions ``nodes``."""
    arguments = {name: _at_draws(node, values, n) for name, node in zip(spec.param_names, nodes)}
    if spec.multivariate:
        batches, _ = spec.split_shapes([shape] + [a.shape[1:] for a in arguments.values()])
        plate = np.broadcast_shapes(*batches)
        return {name: np.broadcast_to(a.reshape((n,) + (1,) * (len(plate) - len(b)) + a.shape[1:]),
                                      (n,) + plate + a.shape[1 + len(b):])
                for (name, a), b in zip(arguments.items(), batches[1:])}
    plate = np.broadcast_shapes(shape, *(a.shape[1:] for a in arguments.values()))
    # numpy aligns shapes on the right: the draw axis stays first, 1s go after it
    return {name: np.broadcast_to(a.reshape((n,) + (1,) * (len(plate) + 1 - a.ndim) + a.shape[1:]),
                                  (n,) + plate)
            for name, a in arguments.items()}


def _draw_shape(term, n, shape):
    """The ``size`` of the draws of a value of ``shape`` per draw: (n, *shape), or for
    a multivariate distribution (n, *batch), its events left out."""
    if not term.dist.spec.multivariate:
        return (n,) + shape
    return (n,) + shape[:len(shape) - len(term.dist.spec.events[0])]


def _draw(dist, state, term, n, shape):
    """(n, *shape) draws of ``dist`` (``term``'s distribution at the draws), a
    multivariate one's events of the value's shape (a series' length)."""
    size = _draw_shape(term, n, shape)
    if not term.dist.spec.multivariate:
        return dist.draw(state, size)
    return dist.draw(state, size, event=shape[len(size) - 1:])


def _distribution(term, arguments, what, kind=None):
    """``term``'s distribution (or one of ``kind``) with numeric ``arguments``; an
    invalid one (a draw that gives a scale of 0) is a ModelError naming the term."""
    try:
        return (kind or type(term.dist))(**arguments)
    except InvalidArgumentError as err:
        raise ModelError(f"{what}: term {term.name!r}: {err} (index: draw, then element); the arguments come from "
                         "the draws of the parameters they depend on: give those priors under which they are always "
                         "valid (e.g. an upper bound as the lower one plus a positive width)") from None


def _mixture(term, values, n, shape, what):
    """``term``'s ``ld.Mixture`` at ``n`` draws: each component's arguments as
    ``_arguments`` gives them, (n, *plate), and weights (n, 1, ..., 1, K)."""
    mixture = term.mixture.dist
    components = [_distribution(term, _spec_arguments(c.spec, [as_expr(v) for v in c.params.values()],
                                                      values, n, shape), what, type(c))
                  for c in mixture.components]
    plate = np.broadcast_shapes(*(np.shape(v)[1:] for c in components for v in c.params.values()))
    if isinstance(mixture.weights, tuple):  # K scalar expressions
        weights = np.stack([_at_draws(w, values, n) for w in mixture.weights], axis=-1)
    else:
        weights = _at_draws(as_expr(mixture.weights), values, n)
    weights = weights.reshape((n,) + (1,) * len(plate) + weights.shape[-1:])
    return _distribution(term, {"weights": weights, "components": components}, what, Mixture)


def _check_cut(term, param, constraint, arguments, what):
    """Refuse a constraint that cuts into the prior's support where the cut's
    mass depends on other parameters (see the module docstring)."""
    support = term.dist.spec.support
    lower, upper = resolve_bounds(support, arguments)
    c_lower, c_upper = resolve_bounds(constraint, {})
    inside = np.all(lower >= c_lower) and np.all(upper <= c_upper)
    moving = [a for a in (*term.args[1:], param.constraint.lower, param.constraint.upper)
              if isinstance(a, Expr) and a.depends_on_params()]
    if not inside and moving:
        raise ModelError(
            f"{what}: parameter {param.name!r}: its constraint {param.constraint!r} cuts into the "
            f"support of its prior {term.dist.spec.name}, and the prior's mass inside it depends on "
            "other parameters: the model's density is then not the prior truncated per draw, and "
            "cannot be drawn from by ancestral sampling; give it a prior with that support "
            "(e.g. HalfNormal, TruncatedNormal, Uniform(0, 1 - alpha))")


def _at_draws_bounds(constraint, values, n, shape):
    """``constraint`` with its expression bounds (``logdens.bounds``) valued at the
    ``n`` draws, broadcasting against (n, *shape)."""
    def value(bound):
        if not isinstance(bound, Expr):
            return bound
        a = _at_draws(bound, values, n)
        return a.reshape((n,) + (1,) * (len(shape) + 1 - a.ndim) + a.shape[1:])
    return constraint._replace(lower=value(constraint.lower), upper=value(constraint.upper))


def _redraw_outside(dist, x, inside, state, what):
    """Draw the elements of ``x`` where ``inside(x)`` is false again, in place."""
    for _ in range(MAX_ROUNDS):
        outside = ~inside(x)
        if not outside.any():
            return x
        part = type(dist)(**{k: np.broadcast_to(v, x.shape)[outside] for k, v in dist.params.items()})
        x[outside] = part.draw(state, (int(outside.sum()),))
    raise ModelError(f"{what}: fewer than 1 in {MAX_ROUNDS} draws of its prior lie inside its "
                     "constraint; give it a prior whose support is its constraint")


def _draw_parameter(term, param, values, n, state, what):
    """(n, *shape) draws of ``param`` from its prior ``term`` restricted to its constraint."""
    where = f"{what}: parameter {param.name!r}"
    if term.mixture:
        if bounds.has_expression(param.constraint) or param.constraint != term.mixture.dist.support:
            raise ModelError(f"{where}: its constraint {param.constraint!r} is not the support of its "
                             "Mixture prior; it cannot be drawn from")
        return _mixture(term, values, n, param.shape, what).draw(state, (n,) + param.shape)
    arguments = _arguments(term, values, n, param.shape)
    constraint = _at_draws_bounds(param.constraint, values, n, param.shape)
    _check_cut(term, param, constraint, arguments, what)
    dist = _distribution(term, arguments, what)
    x = _draw(dist, state, term, n, param.shape)
    kind = param.constraint.name
    if term.dist.spec.multivariate:  # its draws are events of its support
        if kind != term.dist.spec.support.name:
            raise ModelError(f"{where}: its constraint {param.constraint!r} is not the support of its "
                             f"prior {term.dist.spec.name}; it cannot be drawn from")
        return x
    if kind == "simplex":
        raise ModelError(f"{where}: a simplex with a {term.dist.spec.name} prior on each element "
                         "cannot be drawn from by ancestral sampling")
    if kind in ("ordered", "positive_ordered"):
        if not all(np.all(a == a[:, :1]) for a in arguments.values()):
            raise ModelError(f"{where}: an {kind} vector can be drawn only when its prior's "
                             "arguments are the same for every element (then it is sorted i.i.d. "
                             "draws)")
        if kind == "positive_ordered":
            _redraw_outside(dist, x, lambda v: v > 0.0, state, where)
        return np.sort(x, axis=-1)
    return _redraw_outside(dist, x, lambda v: contains(constraint, v), state, where)


def _batched_values(source, params, n):
    """Evaluator inputs: current data and (n, *shape) parameter draws, scalars as (n, 1)."""
    return {**source.data, **{k: (v[:, None] if v.ndim == 1 else v) for k, v in params.items()}}


def _deterministics(model, values, n, names):
    """The deterministics in ``names`` at every draw, each with a leading draw axis."""
    return {name: _at_draws(e, values, n) for name, e in model.deterministics.items() if name in names}


def _draw_observed(source, values, n, state, names, what):
    """(n, *shape) draws of each observed term in ``names``, in model order."""
    out = {}
    for term in _observed_terms(source.model):
        if term.mixture and term.name in names:
            value_shape = np.shape(evaluate(term.mixture.x, source.data))
            out[term.name] = _mixture(term, values, n, value_shape, what).draw(state, (n,) + value_shape)
        elif term.name in names:
            value_shape = np.shape(evaluate(term.value, source.data))
            arguments = _arguments(term, values, n, value_shape)
            dist = _distribution(term, arguments, what)
            if term.dist.spec.multivariate:
                out[term.name] = _draw(dist, state, term, n, value_shape)
            else:
                out[term.name] = dist.draw(state, next(iter(arguments.values())).shape)
    return out


def _refuse_gp_at_new_inputs(term, source, what):
    """A ``ModelError`` for a term whose distribution reads a GP covariance
    (``ld.gp.exp_quad``, ...) of data that ``set_data`` changed: its posterior
    predictive draws would be the GP's prior at the new inputs, ignoring the
    observed values (the posterior holds the hyperparameters, not f). Prior
    predictive draws there are the prior, as they should be."""
    for node in (n for arg in term.args[1:] for n in nodes(arg) if isinstance(n, gp.GPCov)):
        for leaf in nodes(node.children[0]):
            if isinstance(leaf, Data) and leaf.name is not None and not (
                    np.shape(source.data[leaf.name]) == np.shape(leaf.value)
                    and np.array_equal(source.data[leaf.name], leaf.value)):
                raise ModelError(
                    f"{what}: term {term.name!r} reads the GP covariance {node.label()} of data {leaf.name!r}, "
                    "which set_data changed: its draws would come from the GP's prior at the new inputs, not "
                    f"from its conditional on the observed {term.name!r}. For predictions at new inputs, write "
                    "the GP as gp = ld.gp.Marginal(cov_func); gp.marginal_likelihood(m, name, x, y, sigma) and "
                    "draw gp.conditional(idata, x_new) (PyMC's gp.conditional); or set the model's data back")


def _check_draws(draws, what):
    if isinstance(draws, (bool, np.bool_)) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise ValueError(f"{what}: draws={draws!r}, must be an integer >= 1")
    return int(draws)


def _wanted(var_names, allowed, what, hint):
    """The names in ``var_names`` (default: ``allowed``), each of them allowed."""
    if var_names is None:
        return list(allowed)
    names = [var_names] if isinstance(var_names, str) else list(var_names)
    for name in names:
        if name not in allowed:
            raise ValueError(f"{what}: var_names has {name!r}, {hint}: {sorted(allowed)}")
    return names


def _datatree(groups, source, chain_draw=None, dims=None):
    """``arviz_base.from_dict`` with the model's dims and coords (``dims``: those
    of variables whose shapes are not the model's, a forecast's)."""
    from arviz_base import from_dict
    coords = dict(source.coords)
    if chain_draw is not None:
        coords.update(chain_draw)
    dims = {**{k: list(v) for k, v in source.dims.items()}, **(dims or {})}
    # ArviZ labels the predictions groups with pred_dims and pred_coords
    return from_dict(groups, coords=coords or None, dims=dims or None,
                     pred_coords=coords or None, pred_dims=dims or None)


def sample_prior_predictive(model, draws=500, seed=None, var_names=None):
    """Draws from the prior and the prior predictive distribution.

    Parameters
    ----------
    model : Model or LogDensity
        Every parameter needs a prior. Potentials are left out (a warning
        says so), as PyMC does.
    draws : int
    seed : int, optional
        Draws depend only on the seed; default fresh entropy.
    var_names : list of str, optional
        The parameters, deterministics and observed terms to return
        (default all); every parameter is drawn regardless.

    Returns
    -------
    xarray.DataTree
        Groups ``prior`` (parameters and deterministics), ``prior_predictive``
        (observed terms) and ``observed_data``, one chain of ``draws``,
        labelled with the model's dims and coords.
    """
    what = "sample_prior_predictive"
    source = _Source(model, what)
    m, n = source.model, _check_draws(draws, what)
    observed = [t.name for t in _observed_terms(m)]
    names = _wanted(var_names, [*m.params, *m.deterministics, *observed], what,
                    "which is no parameter, deterministic or observed term of the model")
    priors = {t.name: t for t in m.terms if t.kind == "prior" or (t.kind == "potential" and t.mixture)}
    flat = [name for name in m.params if name not in priors]
    if flat:
        raise ModelError(f"{what}: parameter {flat[0]!r} has no prior (a flat, improper one); "
                         "give every parameter a prior distribution to draw from")
    potentials = [t.name for t in m.terms if t.kind == "potential" and not t.mixture]
    if potentials:
        warnings.warn(f"{what}: the potentials {potentials} are left out of the prior draws",
                      stacklevel=2)
    state = random.seeded_state(seed, what)
    params = {}
    for name, param in m.params.items():
        params[name] = _draw_parameter(priors[name], param, _batched_values(source, params, n),
                                       n, state, what)
    values = _batched_values(source, params, n)
    prior = {**params, **_deterministics(m, values, n, names)}
    predictive = _draw_observed(source, values, n, state, names, what)
    groups = {"prior": {k: v[None] for k, v in prior.items() if k in names},
              "prior_predictive": {k: v[None] for k, v in predictive.items()},
              "observed_data": source.observed_data()}
    return _datatree({k: v for k, v in groups.items() if v}, source)


def _posterior_values(posterior, model, what):
    """Parameter draws of a posterior Dataset as (chains * draws, *shape)."""
    chains, n = posterior.sizes["chain"], posterior.sizes["draw"]
    params = {}
    for name, param in model.params.items():
        if name not in posterior:
            raise ValueError(f"{what}: the posterior has no parameter {name!r} of the model; "
                             f"it has {sorted(posterior.data_vars)}")
        value = np.asarray(posterior[name].transpose("chain", "draw", ...).values, dtype=float)
        if value.shape[2:] != param.shape:
            raise ValueError(f"{what}: posterior {name!r} has shape {value.shape[2:]} per draw; "
                             f"the model's parameter has shape {param.shape}")
        params[name] = value.reshape((chains * n,) + param.shape)
    return params


def sample_posterior_predictive(idata, model, seed=None, var_names=None,
                                extend_inferencedata=False, predictions=False):
    """Draws of the observed terms, one per posterior draw.

    For predictions on new data, ``set_data`` the compiled model first (the
    observed arrays too, to the new length: their values are not read) and
    pass ``predictions=True``.

    Parameters
    ----------
    idata : xarray.DataTree
        With a ``posterior`` group holding every parameter (``ld.nuts``,
        ``ld.laplace``, ``ld.pathfinder``, ``ld.advi``).
    model : Model or LogDensity
        The model sampled; a LogDensity draws with its current data.
    seed : int, optional
        Draws depend only on the seed; default fresh entropy.
    var_names : list of str, optional
        Observed terms to draw and deterministics to recompute (with the
        current data); default every observed term.
    extend_inferencedata : bool
        Add the groups to ``idata`` and return it, instead of a new DataTree.
    predictions : bool
        Name the groups ``predictions`` and ``predictions_constant_data`` (the
        current data), ArviZ's names for out-of-sample draws, instead of
        ``posterior_predictive`` and ``observed_data``.

    Returns
    -------
    xarray.DataTree
    """
    what = "sample_posterior_predictive"
    source = _Source(model, what)
    m = source.model
    posterior = idata["posterior"].to_dataset() if hasattr(idata["posterior"], "to_dataset") \
        else idata["posterior"]
    observed = [t.name for t in _observed_terms(m)]
    names = _wanted(var_names if var_names is not None else observed, [*observed, *m.deterministics],
                    what, "which is no observed term or deterministic of the model")
    for term in _observed_terms(m):
        if term.name in names and not term.mixture:
            _refuse_gp_at_new_inputs(term, source, what)
    params = _posterior_values(posterior, m, what)
    chains, n = posterior.sizes["chain"], posterior.sizes["draw"]
    values = _batched_values(source, params, chains * n)
    state = random.seeded_state(seed, what)
    drawn = {**_deterministics(m, values, chains * n, names),
             **_draw_observed(source, values, chains * n, state, names, what)}
    drawn = {k: drawn[k].reshape((chains, n) + drawn[k].shape[1:]) for k in names}
    group, data_group = ("predictions", "predictions_constant_data") if predictions else \
        ("posterior_predictive", "observed_data")
    data = source.data if predictions else source.observed_data()
    chain_draw = {"chain": posterior["chain"].values, "draw": posterior["draw"].values}
    out = _datatree({group: drawn, data_group: data} if data else {group: drawn}, source, chain_draw)
    if not extend_inferencedata:
        return out
    for child in out.children:
        idata[child] = out[child]
    return idata
