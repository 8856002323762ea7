"""The models of the engine benchmarks, each as logdens, a hand-written fused
numba loop, a JAX function and a PyMC model, with the same parameter layout.

``build(n, rng) -> (logdens model, hand loop, jax_fn(jnp), pymc_fn(pm), theta)``.
"""

import math

import numpy as np
from numba import njit

import logdens as ld


def poisson(n, rng):
    """Poisson log-likelihood gradient w.r.t. a rate vector (identity transform)."""
    counts = rng.poisson(3.0, n).astype(float)
    m = ld.Model()
    rate = m.param("rate", shape=n)
    m.observe("c", ld.Poisson(rate), counts)

    @njit(fastmath=True, error_model="numpy")
    def hand(theta, grad):
        lp = 0.0
        for i in range(theta.size):
            lp += counts[i] * math.log(theta[i]) - theta[i]
            grad[i] = counts[i] / theta[i] - 1.0
        return lp

    def jax_fn(jnp):
        return lambda t: jnp.sum(counts * jnp.log(t) - t)

    def pymc(pm):
        with pm.Model() as model:
            r = pm.Flat("rate", shape=n)
            pm.Poisson("c", mu=r, observed=counts)
        return model

    theta = rng.uniform(1.0, 5.0, n)
    return m, hand, jax_fn, pymc, theta


def normal(n, rng):
    """Normal log-density sum w.r.t. the means."""
    y = rng.normal(size=n)
    m = ld.Model()
    mu = m.param("mu", shape=n)
    m.observe("y", ld.Normal(mu, 1.5), y)

    @njit(fastmath=True, error_model="numpy")
    def hand(theta, grad):
        lp = 0.0
        for i in range(theta.size):
            z = (y[i] - theta[i]) / 1.5
            lp -= 0.5 * z * z
            grad[i] = z / 1.5
        return lp

    def jax_fn(jnp):
        return lambda t: jnp.sum(-0.5 * ((y - t) / 1.5) ** 2)

    def pymc(pm):
        with pm.Model() as model:
            mu_ = pm.Flat("mu", shape=n)
            pm.Normal("y", mu=mu_, sigma=1.5, observed=y)
        return model

    return m, hand, jax_fn, pymc, rng.normal(size=n)


def potential(n, rng):
    """F(rho) = rho^2 + rho^3 + rho^4 / 4, rho = sum(exp(-3 (x + 1)))."""
    m = ld.Model()
    x = m.param("x", shape=n)
    rho = ld.sum(ld.exp(-3.0 * (x + 1.0)))
    m.potential("F", rho ** 2 + rho ** 3 + rho ** 4 / 4)

    @njit(fastmath=True, error_model="numpy")
    def hand(theta, grad):
        rho = 0.0
        for i in range(theta.size):
            grad[i] = math.exp(-3.0 * (theta[i] + 1.0))
            rho += grad[i]
        dF = 2 * rho + 3 * rho ** 2 + rho ** 3
        for i in range(theta.size):
            grad[i] *= -3.0 * dF
        return rho ** 2 + rho ** 3 + rho ** 4 / 4

    def jax_fn(jnp):
        def F(t):
            r = jnp.sum(jnp.exp(-3.0 * (t + 1.0)))
            return r ** 2 + r ** 3 + r ** 4 / 4
        return F

    def pymc(pm):
        with pm.Model() as model:
            x_ = pm.Flat("x", shape=n)
            r = pm.math.sum(pm.math.exp(-3.0 * (x_ + 1.0)))
            pm.Potential("F", r ** 2 + r ** 3 + r ** 4 / 4)
        return model

    return m, hand, jax_fn, pymc, rng.normal(scale=0.3, size=n)


def bernoulli_logit(n, rng):
    """Bernoulli log-likelihood gradient w.r.t. a logit vector (identity transform)."""
    y = (rng.uniform(size=n) < 0.4).astype(float)
    m = ld.Model()
    m.observe("y", ld.BernoulliLogit(m.param("eta", shape=n)), y)

    @njit(fastmath=True, error_model="numpy")
    def hand(theta, grad):
        lp = 0.0
        for i in range(theta.size):
            # log p = y eta - log1p(exp(eta)) = y eta - max(eta, 0) - log1p(exp(-|eta|))
            e = math.exp(-abs(theta[i]))
            lp += y[i] * theta[i] - max(theta[i], 0.0) - math.log1p(e)
            p = 1.0 / (1.0 + e) if theta[i] > 0 else e / (1.0 + e)
            grad[i] = y[i] - p
        return lp

    def jax_fn(jnp):
        import jax
        return lambda t: jnp.sum(y * t - jax.nn.softplus(t))

    def pymc(pm):
        with pm.Model() as model:
            eta = pm.Flat("eta", shape=n)
            pm.Bernoulli("y", logit_p=eta, observed=y)
        return model

    return m, hand, jax_fn, pymc, rng.normal(size=n)


def logistic(n, rng, d=20):
    """Logistic regression: BernoulliLogit(X @ beta + alpha), flat priors."""
    X = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < 0.5).astype(float)
    m = ld.Model()
    alpha = m.param("alpha")
    beta = m.param("beta", shape=d)
    m.observe("y", ld.BernoulliLogit(m.data("X", X) @ beta + alpha), y)

    @njit(fastmath=True, error_model="numpy")
    def hand(theta, grad):
        lp = 0.0
        grad[:] = 0.0
        for i in range(X.shape[0]):
            eta = theta[0]
            for j in range(d):
                eta += X[i, j] * theta[1 + j]
            # log p = y eta - log1p(exp(eta)); d/deta = y - logistic(eta)
            if eta > 0:
                e = math.exp(-eta)
                lp += y[i] * eta - eta - math.log1p(e)
                g = y[i] - 1.0 / (1.0 + e)
            else:
                e = math.exp(eta)
                lp += y[i] * eta - math.log1p(e)
                g = y[i] - e / (1.0 + e)
            grad[0] += g
            for j in range(d):
                grad[1 + j] += g * X[i, j]
        return lp

    def jax_fn(jnp):
        import jax
        return lambda t: jnp.sum(y * (X @ t[1:] + t[0]) - jax.nn.softplus(X @ t[1:] + t[0]))

    def pymc(pm):
        with pm.Model() as model:
            a = pm.Flat("alpha")
            b = pm.Flat("beta", shape=d)
            pm.Bernoulli("y", logit_p=pm.math.dot(X, b) + a, observed=y)
        return model

    return m, hand, jax_fn, pymc, rng.normal(scale=0.1, size=d + 1)


def hierarchical(n, rng, groups=100, sort=False):
    """Hierarchical Poisson, non-centered: PoissonLog((mu + sigma z)[group] + b x), flat priors.

    Rows in random order, or with ``sort`` sorted by group, as data often come.
    """
    group = rng.integers(0, groups, n)
    group = np.sort(group) if sort else group
    x = rng.normal(size=n)
    counts = rng.poisson(np.exp(0.5 + 0.3 * rng.normal(size=groups)[group] + 0.2 * x)).astype(float)
    m = ld.Model()
    mu = m.param("mu")
    log_sigma = m.param("log_sigma")
    z = m.param("z", shape=groups)
    b = m.param("b")
    g = m.data("group", group)
    m.observe("c", ld.PoissonLog((mu + ld.exp(log_sigma) * z)[g] + b * m.data("x", x)), counts)

    @njit(fastmath=True, error_model="numpy")
    def hand(theta, grad):
        mu_, sigma, b_ = theta[0], math.exp(theta[1]), theta[groups + 2]
        lp = 0.0
        grad[:] = 0.0
        for i in range(group.size):
            k = group[i]
            eta = mu_ + sigma * theta[2 + k] + b_ * x[i]
            rate = math.exp(eta)
            lp += counts[i] * eta - rate
            r = counts[i] - rate
            grad[0] += r
            grad[1] += r * sigma * theta[2 + k]
            grad[2 + k] += r * sigma
            grad[groups + 2] += r * x[i]
        return lp

    def jax_fn(jnp):
        def f(t):
            eta = (t[0] + jnp.exp(t[1]) * t[2:groups + 2])[group] + t[groups + 2] * x
            return jnp.sum(counts * eta - jnp.exp(eta))
        return f

    def pymc(pm):
        with pm.Model() as model:
            mu_ = pm.Flat("mu")
            ls = pm.Flat("log_sigma")
            z_ = pm.Flat("z", shape=groups)
            b_ = pm.Flat("b")
            eta = (mu_ + pm.math.exp(ls) * z_)[group] + b_ * x
            pm.Poisson("c", mu=pm.math.exp(eta), observed=counts)
        return model

    return m, hand, jax_fn, pymc, rng.normal(scale=0.1, size=groups + 3)


def hierarchical_sorted(n, rng):
    """``hierarchical`` with the rows sorted by group."""
    return hierarchical(n, rng, sort=True)
