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

This is a call of its own, not an option of ``sample_posterior_predictive``:
that draws replicates of the series at its observed length, while a forecast
continues it from the observed values (PyMC builds a second model with
``init_dist`` set from the last values; NumPyro's ``Predictive`` needs a
model written with a ``future`` argument). Forecasting needs no change to
the model, and ``steps`` is its only new argument.
"""

import numpy as np

from logdens import predictive
from logdens.distributions import AR, GaussianRandomWalk, Normal, random
from logdens.evaluate import evaluate
from logdens.expr import ModelError

#: The series distributions ``forecast`` continues.
SERIES = (AR, GaussianRandomWalk)


def _series_terms(model):
    """The observed terms and priors whose distribution is a series, by name."""
    return {t.name: t for t in model.terms
            if t.kind in ("observe", "prior") and isinstance(t.dist, SERIES)}


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


def forecast(idata, model, steps, seed=None, var_names=None):
    """Draws of every ``AR`` and ``GaussianRandomWalk`` series ``steps`` steps past
    its last value, one per posterior draw.

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
        raise ModelError(f"{what}: the model has no AR or GaussianRandomWalk term to forecast; its terms are "
                         f"{[t.name for t in m.terms]}")
    names = predictive._wanted(var_names, list(series), what, "which is no AR or GaussianRandomWalk term")
    posterior = idata["posterior"].to_dataset() if hasattr(idata["posterior"], "to_dataset") \
        else idata["posterior"]
    params = predictive._posterior_values(posterior, m, what)
    chains, n = posterior.sizes["chain"], posterior.sizes["draw"]
    values = predictive._batched_values(source, params, chains * n)
    state = random.seeded_state(seed, what)
    drawn, dims = {}, {}
    for name in names:
        term = series[name]
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
