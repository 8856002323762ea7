"""What the gradient costs over the log density, and per-sample gradients over the
gradient, logdens against hand-written loops.

Issue 3 asks for gradient <= 1.3x the log density. This measures the same
ratio for hand-written numba loops that use the same vectorizing exp and log
(``distributions.vmath``) and no checks: one loop for the value alone, one
fused loop for value and gradient. Where the hand loops' ratio is above 1.3
too, the gradient's extra work (a division per element, an output array of
the data's length) is the limit, not the engine. The same for per-sample
gradients (<= 1.5x the gradient): a hand-written loop filling the sparse rows
of the hierarchical Poisson model, against logdens' compiled function for
them, both over logdens' gradient.

Run: python benchmarks/bench_grad_value.py (one core, about a minute).
"""

import os

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})

import math  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse  # noqa: E402
from numba import njit  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench_engine import median_time  # noqa: E402
from logdens.distributions import vmath  # noqa: E402
from engine_models import hierarchical, logistic, normal, poisson  # noqa: E402

FAST = dict(fastmath=True, error_model="numpy")


@njit(**FAST)
def poisson_value(theta, c):
    lp = 0.0
    for i in range(theta.size):
        lp += c[i] * vmath.log(theta[i]) - theta[i]
    return lp


@njit(**FAST)
def poisson_both(theta, c, grad):
    lp = 0.0
    for i in range(theta.size):
        lp += c[i] * vmath.log(theta[i]) - theta[i]
        grad[i] = c[i] / theta[i] - 1.0
    return lp


@njit(**FAST)
def normal_value(theta, y):
    lp = 0.0
    for i in range(theta.size):
        z = (y[i] - theta[i]) / 1.5
        lp -= 0.5 * z * z
    return lp


@njit(**FAST)
def logistic_value(theta, X, y):
    """Row by row, X as the user gives it (row-major): what one writes by hand."""
    lp = 0.0
    for i in range(X.shape[0]):
        eta = theta[0]
        for j in range(X.shape[1]):
            eta += X[i, j] * theta[1 + j]
        lp += y[i] * eta - max(eta, 0.0) - vmath.log1p(vmath.exp(-abs(eta)))
    return lp


@njit(**FAST)
def logistic_both(theta, X, y, grad):
    grad[:] = 0.0
    lp = 0.0
    for i in range(X.shape[0]):
        eta = theta[0]
        for j in range(X.shape[1]):
            eta += X[i, j] * theta[1 + j]
        e = vmath.exp(-abs(eta))
        lp += y[i] * eta - max(eta, 0.0) - vmath.log1p(e)
        a = y[i] - (1.0 if eta >= 0.0 else e) / (1.0 + e)  # y - sigmoid(eta)
        grad[0] += a
        for j in range(X.shape[1]):
            grad[1 + j] += a * X[i, j]
    return lp


@njit(**FAST)
def hierarchical_value(theta, group, x, c):
    groups = theta.size - 3
    mu, sigma, b = theta[0], math.exp(theta[1]), theta[groups + 2]
    lp = 0.0
    for i in range(group.size):
        eta = mu + sigma * theta[2 + group[i]] + b * x[i]
        lp += c[i] * eta - vmath.exp(eta)
    return lp


@njit(**FAST)
def hierarchical_both(theta, group, x, c, grad):
    groups = theta.size - 3
    mu, sigma, b = theta[0], math.exp(theta[1]), theta[groups + 2]
    lp, a_b = 0.0, 0.0
    a_group = np.zeros(groups)
    for i in range(group.size):
        eta = mu + sigma * theta[2 + group[i]] + b * x[i]
        rate = vmath.exp(eta)
        lp += c[i] * eta - rate
        a_group[group[i]] += c[i] - rate
        a_b += (c[i] - rate) * x[i]
    grad[:] = 0.0
    for k in range(groups):
        grad[0] += a_group[k]
        grad[1] += a_group[k] * sigma * theta[2 + k]
        grad[2 + k] = a_group[k] * sigma
    grad[groups + 2] = a_b
    return lp


@njit(**FAST)
def hierarchical_per_sample(theta, group, x, c, cols, vals):
    """Sparse rows: mu, log_sigma, b and the row's z[group] (logdens' slot order)."""
    groups = theta.size - 3
    mu, sigma, b = theta[0], math.exp(theta[1]), theta[groups + 2]
    for i in range(group.size):
        z = theta[2 + group[i]]
        r = c[i] - vmath.exp(mu + sigma * z + b * x[i])
        vals[i, 0], vals[i, 1], vals[i, 2], vals[i, 3] = r, r * sigma * z, r * x[i], r * sigma
        cols[i, 0], cols[i, 1], cols[i, 2], cols[i, 3] = 0, 1, groups + 2, 2 + group[i]


def per_sample_row(rng):
    model, _, _, _, theta = hierarchical(20_000, rng)
    density = model.compile()
    arrays = density.data()
    n, grad = len(arrays["c"]), np.empty(density.dim)
    cols, vals = np.empty((n, 4), dtype=np.int32), np.empty((n, 4))
    args = (theta, arrays["group"], arrays["x"], arrays["c"].astype(float), cols, vals)
    hierarchical_per_sample(*args)
    got = scipy.sparse.csr_array((vals.ravel(), cols.ravel(), np.arange(0, 4 * n + 1, 4)), shape=(n, density.dim))
    np.testing.assert_allclose(got.toarray(), density.per_sample_gradient(theta, "c", sparse=True).toarray(),
                               rtol=1e-9, atol=1e-9)
    module, (f, i) = density._module, density._row_data
    t_grad = median_time(lambda: module.core(theta, grad, density.fdata, density.idata, True))
    t_hand = median_time(lambda: hierarchical_per_sample(*args))
    t_ours = median_time(lambda: module.per_sample_sparse_c(theta, f, i, cols, vals))
    t_call = median_time(lambda: density.per_sample_gradient(theta, "c", sparse=True))
    print("\n| hierarchical, 20,000 rows | us | over logdens' gradient |\n|---|---:|---:|")
    for label, t in [("logdens gradient", t_grad), ("hand-written sparse rows", t_hand),
                     ("logdens sparse rows, compiled function", t_ours),
                     ("logdens `per_sample_gradient(sparse=True)`", t_call)]:
        print(f"| {label} | {t * 1e6:.1f} | {t / t_grad:.2f} |", flush=True)


def logdens_ratio(model, theta):
    density = model.compile()
    grad = np.empty(density.dim)
    value, core = density._module.value, density._module.core
    f, i = density.fdata, density.idata
    return (median_time(lambda: core(theta, grad, f, i, True)) / median_time(lambda: value(theta, f, i, True)))


def main():
    print("| model | N | hand value us | hand value + grad us | hand grad/value | logdens grad/value |")
    print("|---|---|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    sizes = (10_000, 100_000, 1_000_000)
    rows = ([("poisson", n) for n in sizes] + [("normal", n) for n in sizes]
            + [("logistic", 10_000), ("hierarchical", 20_000)])
    builds = {"poisson": poisson, "normal": normal, "logistic": logistic, "hierarchical": hierarchical}
    for name, n in rows:
        model, hand, _, _, theta = builds[name](n, rng)
        arrays = {k: np.asarray(v) for k, v in model.compile().data().items()}
        grad = np.empty(len(theta))
        if name == "poisson":
            counts = arrays["c"].astype(float)
            value = lambda: poisson_value(theta, counts)  # noqa: E731
            both = lambda: poisson_both(theta, counts, grad)  # noqa: E731
        elif name == "normal":  # the benchmark's own hand loop has no call: it is the fused loop
            value = lambda: normal_value(theta, arrays["y"])  # noqa: E731
            both = lambda: hand(theta, grad)  # noqa: E731
        elif name == "logistic":
            X, y = arrays["X"], arrays["y"].astype(float)
            value = lambda: logistic_value(theta, X, y)  # noqa: E731
            both = lambda: logistic_both(theta, X, y, grad)  # noqa: E731
        else:
            data = (theta, arrays["group"], arrays["x"], arrays["c"].astype(float))
            value = lambda: hierarchical_value(*data)  # noqa: E731
            both = lambda: hierarchical_both(*data, grad)  # noqa: E731
        lp, want = model.compile().log_density_gradient(theta, jacobian=False)
        assert abs(both() - lp) <= 1e-9 * abs(lp) and np.allclose(grad, want, rtol=1e-8, atol=1e-8)
        t_value, t_both = median_time(value), median_time(both)
        print(f"| {name} | {n:,} | {t_value * 1e6:.1f} | {t_both * 1e6:.1f} | {t_both / t_value:.2f} "
              f"| {logdens_ratio(model, theta):.2f} |", flush=True)
    per_sample_row(rng)


if __name__ == "__main__":
    main()
