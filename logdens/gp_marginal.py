"""A marginal GP regression and its conditional at new inputs: ``ld.gp.Marginal``,
PyMC's ``pm.gp.Marginal``.

    f ~ GP(mean(x), k(x, x')),   y = f(x) + eps,   eps ~ Normal(0, sigma^2 I)

``marginal_likelihood`` observes ``y ~ MvNormal(mean(x), K + sigma^2 I)`` (f
integrated out). The model's posterior holds the hyperparameters, not f, so
predictions at new inputs x* need the conditional of f* = f(x*) given y at
each posterior draw (Rasmussen and Williams 2006, eqs. 2.23-2.24):

    mean* = mean(x*) + K*^T (K + sigma^2 I)^-1 (y - mean(x))
    cov*  = K** - K*^T (K + sigma^2 I)^-1 K*       (+ sigma^2 I with pred_noise)

with K* = k(x, x*) and K** = k(x*, x*). ``predict`` gives these moments,
``conditional`` draws f* from them once per posterior draw. The covariance
is the user's ``cov_func`` applied to the inputs [x; x*] stacked (one
covariance of n + n* inputs, evaluated by the model's own numpy evaluator), so
any kernel expression that ``cov_func`` builds (sums, products, ARD) has its
cross-covariance without a second implementation of the kernels.

Setting new inputs on the compiled model and drawing its observed term
instead would draw y at x* from the GP's prior, ignoring y:
``sample_posterior_predictive`` refuses that and points here.
"""

import numpy as np

from logdens import expr as ex
from logdens.expr import ModelError

#: Added to the diagonal of the conditional covariance before its Cholesky
#: factor is taken for draws (PyMC's ``jitter``): cov* is often singular to
#: rounding (x* near x, or a long length scale).
JITTER = 1e-6
#: Posterior draws per batch of the conditional: each batch holds
#: (n + n*)^2 covariance entries per draw.
BATCH = 64


class Marginal:
    """A GP regression with f integrated out, and its conditional at new inputs.

    Parameters
    ----------
    cov_func : callable
        ``cov_func(x)`` -> the (n, n) covariance expression of inputs ``x`` (an
        expression of shape (n,) or (n, d)), e.g.
        ``lambda x: ld.gp.exp_quad(x, alpha, rho)``.
    mean_func : callable, optional
        ``mean_func(x)`` -> the mean at ``x``, shape (n,); default 0.
    """

    def __init__(self, cov_func, mean_func=None):
        if not callable(cov_func) or (mean_func is not None and not callable(mean_func)):
            raise TypeError("Marginal: cov_func (and mean_func) are functions of the inputs, e.g. "
                            "cov_func=lambda x: ld.gp.exp_quad(x, alpha, rho)")
        self.cov_func, self.mean_func = cov_func, mean_func
        self.model = None

    def _mean(self, x):
        return self.mean_func(x) if self.mean_func is not None else np.zeros(x.shape[0])

    def marginal_likelihood(self, model, name, x, y, sigma):
        """Observe ``y ~ MvNormal(mean(x), cov_func(x) + sigma^2 I)`` in ``model``
        as term ``name`` (PyMC's ``gp.marginal_likelihood(name, X, y, sigma)``).

        ``x`` and ``y`` are arrays or the model's data (``model.data(...)``);
        ``sigma`` the noise's scale, a number or a scalar expression.
        """
        if self.model is not None:
            raise ModelError(f"Marginal: already observed as term {self.name!r}; make one Marginal per GP")
        from logdens.distributions import MvNormal
        from logdens.linalg import add_diag, cholesky
        x, sigma = ex.as_expr(x), ex.as_expr(sigma)
        y_shape = y.shape if isinstance(y, ex.Expr) else np.shape(y)
        if x.ndim not in (1, 2) or y_shape != x.shape[:1] or sigma.shape != ():
            raise ModelError(f"Marginal.marginal_likelihood {name!r}: needs inputs x of shape (n,) or (n, d), "
                             f"y of shape (n,) and a scalar sigma, got {x.shape}, {y_shape} and {sigma.shape}")
        cov = add_diag(self.cov_func(x), sigma * sigma)
        model.observe(name, MvNormal(self._mean(x), scale_tril=cholesky(cov)), y)
        self.model, self.name, self.x, self.y, self.sigma = model, name, x, model.terms[-1].value, sigma

    def predict(self, idata, x_new, pred_noise=False):
        """The conditional's mean (draws, n*) and covariance (draws, n*, n*) at
        ``x_new``, one per posterior draw of ``idata`` (chains flattened), or at
        one point: ``idata`` a dict of parameter values."""
        params = _draws(self, idata)
        return _moments(self, _training(self), params, np.asarray(x_new, dtype=float), pred_noise)

    def conditional(self, idata, x_new, name="f_pred", pred_noise=False, seed=None):
        """Draws of f* = f(x_new) given y (with ``pred_noise``, of y* = f* + noise),
        one per posterior draw of ``idata``, PyMC's ``gp.conditional`` then
        ``sample_posterior_predictive``.

        Returns a DataTree with the groups ``predictions`` (``name``: (chain,
        draw, n*)) and ``predictions_constant_data`` (``x_new``), ArviZ's names.
        Draws depend only on ``seed`` (one xoshiro256** stream). The training
        inputs and y are the model's as built (a compiled copy's ``set_data``
        does not change them).
        """
        from logdens import predictive
        from logdens.distributions import Normal, random
        x_new = np.asarray(x_new, dtype=float)
        posterior = _posterior(idata)
        chains, n = posterior.sizes["chain"], posterior.sizes["draw"]
        params, training = _draws(self, idata), _training(self)
        state = random.seeded_state(seed, "Marginal.conditional")
        out = np.empty((chains * n, x_new.shape[0]))
        for start in range(0, chains * n, BATCH):
            batch = {k: v[start:start + BATCH] for k, v in params.items()}
            mean, cov = _moments(self, training, batch, x_new, pred_noise)
            factor = np.linalg.cholesky(cov + JITTER * np.eye(cov.shape[-1]))
            z = Normal(0.0, 1.0).draw(state, mean.shape)
            out[start:start + BATCH] = mean + np.einsum("dij,dj->di", factor, z)
        groups = {"predictions": {name: out.reshape(chains, n, -1)},
                  "predictions_constant_data": {f"{name}_x": x_new}}
        chain_draw = {"chain": posterior["chain"].values, "draw": posterior["draw"].values}
        return predictive._datatree(groups, training[0], chain_draw)


def _posterior(idata):
    posterior = idata["posterior"]
    return posterior.to_dataset() if hasattr(posterior, "to_dataset") else posterior


def _draws(gp, idata):
    """The model's parameters at the posterior draws of ``idata`` as (draws, *shape),
    or at the one point of a dict (one draw)."""
    from logdens import predictive
    if gp.model is None:
        raise ModelError("Marginal: call marginal_likelihood(model, name, x, y, sigma) before predicting")
    if isinstance(idata, dict):
        missing = sorted(set(gp.model.params) - set(idata))
        if missing:
            raise ModelError(f"Marginal.predict {gp.name!r}: the point has no value for the parameters {missing}; "
                             f"give every parameter of the model: {sorted(gp.model.params)}")
        return {k: np.asarray(idata[k], dtype=float)[None] for k in gp.model.params}
    return predictive._posterior_values(_posterior(idata), gp.model, "Marginal.conditional")


def _training(gp):
    """``(source, x, y)``: the model's data (``predictive._Source``) and the
    training inputs and observations evaluated on them."""
    from logdens import predictive
    from logdens.evaluate import evaluate
    source = predictive._Source(gp.model, "Marginal.predict")
    return source, evaluate(gp.x, source.data), np.asarray(evaluate(gp.y, source.data), dtype=float)


def _moments(gp, training, params, x_new, pred_noise):
    """``predict``'s mean and covariance at the parameter draws ``params``."""
    from logdens import predictive
    source, x, y = training
    if x_new.ndim != x.ndim or x_new.shape[1:] != x.shape[1:]:
        raise ModelError(f"Marginal.predict {gp.name!r}: x_new has shape {x_new.shape}; the inputs have shape "
                         f"{x.shape}: give x_new the same number of input dimensions")
    draws = len(next(iter(params.values())))
    values = predictive._batched_values(source, params, draws)
    n = x.shape[0]
    inputs = ex.as_expr(np.concatenate([x, x_new]))

    def at_draws(node):
        return predictive._at_draws(ex.as_expr(node), values, draws)
    cov, mean = at_draws(gp.cov_func(inputs)), at_draws(gp._mean(inputs))
    noise = at_draws(gp.sigma * gp.sigma).reshape(draws, 1, 1)
    try:
        factor = np.linalg.cholesky(cov[:, :n, :n] + noise * np.eye(n))
    except np.linalg.LinAlgError:
        raise ModelError(f"Marginal.predict {gp.name!r}: the covariance of the training inputs plus sigma^2 I is "
                         "not positive definite at a posterior draw; give sigma a positive lower bound or add a "
                         "jitter to cov_func (ld.add_diag(K, 1e-6))") from None
    # one solve per draw for both right-hand sides: L^-1 [K*, y - mean(x)] (numpy's solve is
    # batched; scipy's solve_triangular only from scipy 1.15, above this project's floor)
    solved = np.linalg.solve(factor, np.concatenate([cov[:, :n, n:], (y - mean[:, :n])[..., None]], axis=-1))
    cross, residual = solved[..., :-1], solved[..., -1:]
    mean_new = mean[:, n:] + (np.swapaxes(cross, 1, 2) @ residual)[..., 0]
    cov_new = cov[:, n:, n:] - np.swapaxes(cross, 1, 2) @ cross
    if pred_noise:
        cov_new = cov_new + noise * np.eye(x_new.shape[0])
    return mean_new, cov_new
