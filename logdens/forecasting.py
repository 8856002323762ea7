"""Forecasts of time series h steps past their data: ``ld.forecast(idata, model, steps)``.

Every term whose distribution is an ``AR`` or a ``GaussianRandomWalk`` (an
observed series, or a parameter with such a prior) is continued from its last
values, once per posterior draw, by the recursion that defines it:

    AR(K):  x_{T+j} = sum_k rho_k x_{T+j-k} + sigma e_j
    GRW:    x_{T+j} = x_{T+j-1} + sigma e_j,        e_j ~ Normal(0, 1), j = 0..h-1

with the parameters at that draw: the draws are from the forecast's
posterior predictive distribution, p(x_{T..T+h-1} | x_{0..T-1}, theta)
averaged over the posterior of theta. The conditioning values are the
observed data, or the parameter's own posterior draw (a latent random walk).

An observed elementwise term whose distribution reads a scan (``ld.scan``:
a GARCH's variance recursion) is continued step by step: the scan's body
gives the next carry from the last one and the step's inputs, the term's
arguments at that carry give the next value's distribution, and a draw of it
feeds the next step. A scan's inputs after the data are the forecast's own
draws, which the model does not say: ``lagged={"r_previous": "r"}`` says
that input ``r_previous`` is term ``r`` one step back (r_previous[t] =
r[t-1], checked on the data).

This is a call of its own, not an option of ``sample_posterior_predictive``:
that draws replicates of the series at its observed length, while a forecast
continues it from the observed values (PyMC builds a second model with
``init_dist`` set from the last values; NumPyro's ``Predictive`` needs a
model written with a ``future`` argument). Forecasting needs no change to
the model, and ``steps`` is its only new argument.
"""

import numpy as np

from logdens import expr as ex
from logdens import predictive, scans
from logdens.distributions import AR, GaussianRandomWalk, Normal, random
from logdens.evaluate import evaluate
from logdens.expr import ModelError

#: The series distributions ``forecast`` continues.
SERIES = (AR, GaussianRandomWalk)


def _series_terms(model):
    """The terms ``forecast`` continues, by name: observed terms and priors whose
    distribution is a series, observed terms whose distribution reads a scan."""
    return {t.name: t for t in model.terms
            if (t.kind in ("observe", "prior") and isinstance(t.dist, SERIES))
            or (t.kind == "observe" and _scans(t))}


def _scans(term):
    """The scans that ``term``'s distribution arguments read."""
    return {id(n): n for a in term.args[1:] for n in ex.nodes(a) if isinstance(n, scans.Scan)}.values()


def _scan_recursion(term, source, lagged, what):
    """``(scan, value)``, ``value`` the observed series, of a term that reads one
    scan of its own length whose every input is the term lagged one step
    (``lagged``), and nothing else that varies over time; a ModelError that
    says which condition fails."""
    where = f"{what}: term {term.name!r}"
    found = list(_scans(term))
    if term.dist.spec.multivariate or len(found) != 1 or found[0].keep != "all" or found[0].has_y:
        raise ModelError(f"{where}: a term is forecast through a scan when it is elementwise and reads one scan "
                         "of all its carries (keep='all', no outputs ys)")
    scan = found[0]
    stop = lambda node: node is scan  # noqa: E731
    other = [n for a in term.args[1:] for n in ex.nodes(a, stop) if not n.children and n.ndim]
    if other:
        raise ModelError(f"{where}: its distribution reads {other[0].label()} of shape {other[0].shape} besides "
                         "the scan; their values after the data are unknown, so it cannot be forecast")
    value = np.asarray(evaluate(term.value, source.data), dtype=float)
    if value.ndim != 1 or scan.shape[0] != value.shape[0]:
        raise ModelError(f"{where}: a term forecast through a scan is one series of the scan's length; it has shape "
                         f"{value.shape} and the scan {scan.shape}")
    inputs = scan.children[1:1 + scan.n_xs]
    for x in inputs:
        name = getattr(x, "name", None)
        if not isinstance(x, ex.Data) or lagged.get(name) != term.name:
            raise ModelError(f"{where}: its scan reads {x.label()}, whose values after the data are unknown; if it "
                             f"is {term.name!r} one step back, say so: lagged={{{name or 'input'!r}: {term.name!r}}}")
        data = np.asarray(source.data[name], dtype=float)
        if data.shape != value.shape or not np.allclose(data[1:], value[:-1]):
            raise ModelError(f"{where}: lagged says {name!r} is {term.name!r} one step back, but {name}[1:] differs "
                             f"from {term.name}[:-1]")
    return scan, value


def _continue_scan(term, scan, value, values, n, steps, state, what):
    """(n, steps) draws of ``term`` continued through its ``scan``, each step's
    input the term's previous value (observed, then drawn)."""
    carry = predictive._at_draws(scan, values, n)[:, -1]
    at = scans.Placeholder("carry", scan.shape)  # the scan as the term reads it, one step at a time
    memo = {id(scan): (scan, at)}
    args = [ex.substitute(a, memo) for a in term.args[1:]]
    previous, out = np.broadcast_to(value[-1], (n,)), np.empty((n, steps))

    def bound(v, shape):  # a scalar as (n, 1), as the numpy evaluator binds one
        return np.reshape(v, (n,) + (shape or (1,)))
    for j in range(steps):
        step = {**values, scan.carry.key: bound(carry, scan.carry.shape),
                **{p.key: bound(previous, p.shape) for p in scan.inputs}}
        carry = predictive._at_draws(scan.next_carry, step, n).reshape((n,) + scan.carry.shape)
        now = {**values, at.key: carry[:, None]}
        arguments = {name: predictive._at_draws(a, now, n).reshape(n, -1)[:, -1]
                     for name, a in zip(term.dist.spec.param_names, args)}
        previous = out[:, j] = predictive._distribution(term, arguments, what).draw(state, (n,))
    return out


def _continue(term, history, arguments, steps, state):
    """(n, *batch, steps) draws continuing ``history`` (n, *batch, T) by the
    recursion of ``term``'s distribution with ``arguments`` at the draws."""
    noise = Normal(0.0, 1.0).draw(state, history.shape[:-1] + (steps,))
    if isinstance(term.dist, GaussianRandomWalk):
        return history[..., -1:] + np.cumsum(arguments["sigma"][..., None] * noise, axis=-1)
    rho, order = arguments["rho"], arguments["rho"].shape[-1]
    series = np.concatenate([history, np.empty(noise.shape)], axis=-1)
    for t in range(history.shape[-1], series.shape[-1]):
        e = noise[..., t - history.shape[-1]]
        if t < order:  # a series shorter than K continues its initial values
            series[..., t] = arguments["init_sigma"] * e
        else:
            lags = series[..., t - order:t][..., ::-1]  # x_{t-1}, ..., x_{t-K}
            series[..., t] = np.sum(rho * lags, axis=-1) + arguments["sigma"] * e
    return series[..., history.shape[-1]:]


def forecast(idata, model, steps, seed=None, var_names=None, lagged=None):
    """Draws of every ``AR`` and ``GaussianRandomWalk`` series, and of every
    observed term read through a scan, ``steps`` steps past its last value,
    one per posterior draw.

    Parameters
    ----------
    idata : xarray.DataTree
        With a ``posterior`` group holding every parameter (``ld.nuts``, ...).
    model : Model or LogDensity
        The model sampled; a LogDensity continues its current data.
    steps : int
        The horizon h >= 1.
    seed : int, optional
        Draws depend only on the seed (one xoshiro256** stream, terms in model
        order); default fresh entropy.
    var_names : list of str, optional
        The series terms to forecast (observed term or parameter names);
        default every one.
    lagged : dict, optional
        For a term read through a scan: ``{input data name: term name}`` for
        each input of the scan that is the term one step back.

    Returns
    -------
    xarray.DataTree
        Group ``predictions``: each series' forecast, dims (chain, draw,
        *batch, ``step``) with ``step`` = 1..h, the steps ahead.
    """
    what = "forecast"
    source = predictive._Source(model, what)
    m = source.model
    if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"{what}: steps={steps!r}, must be an integer >= 1 (the horizon)")
    h = int(steps)
    series = _series_terms(m)
    if not series:
        raise ModelError(f"{what}: the model has no AR or GaussianRandomWalk term, nor one read through a scan, "
                         f"to forecast; its terms are {[t.name for t in m.terms]}")
    unknown = sorted(set(lagged or {}) - set(m.data_nodes))
    if unknown:
        raise ValueError(f"{what}: lagged names {unknown[0]!r}, which is no data of the model; its data are "
                         f"{sorted(m.data_nodes)}")
    names = predictive._wanted(var_names, list(series), what,
                               "which is no AR or GaussianRandomWalk term, nor one read through a scan")
    posterior = idata["posterior"].to_dataset() if hasattr(idata["posterior"], "to_dataset") \
        else idata["posterior"]
    params = predictive._posterior_values(posterior, m, what)
    chains, n = posterior.sizes["chain"], posterior.sizes["draw"]
    values = predictive._batched_values(source, params, chains * n)
    state = random.seeded_state(seed, what)
    drawn, dims = {}, {}
    for name in names:
        term = series[name]
        if not isinstance(term.dist, SERIES):
            scan, value = _scan_recursion(term, source, lagged or {}, what)
            drawn[name] = _continue_scan(term, scan, value, values, chains * n, h, state, what).reshape(chains, n, h)
            dims[name] = ["step"]
            continue
        observed = None if term.kind == "prior" else np.asarray(evaluate(term.value, source.data), dtype=float)
        history = params[name] if observed is None else np.broadcast_to(observed, (chains * n,) + observed.shape)
        arguments = predictive._arguments(term, values, chains * n, history.shape[1:])
        out = _continue(term, history, arguments, h, state)
        drawn[name] = out.reshape((chains, n) + out.shape[1:])
        batch = source.dims.get(name, [f"{name}_dim_{i}" for i in range(out.ndim)])[:out.ndim - 2]
        dims[name] = [*batch, "step"]
    chain_draw = {"chain": posterior["chain"].values, "draw": posterior["draw"].values,
                  "step": np.arange(1, h + 1)}
    return predictive._datatree({"predictions": drawn}, source, chain_draw, dims)
