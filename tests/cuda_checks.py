"""Models compared between the CUDA backend and the CPU backend.

``tests/test_cuda.py`` runs this file in numba's CUDA simulator, a process
per group of checks (``GROUPS``; the simulator is chosen when numba is
imported), there against the Python twin, and in-process against the CPU
when a GPU is present. ``python tests/cuda_checks.py`` (see ``main``) prints
one JSON object: under ``"compare"``, for each check (a case, or a case of
``FLOAT32`` with `` float32``: its data on the device as float32, compared
with the reference at the same data rounded to float32), the largest
relative differences found; under ``"float32"``, what ``float32_storage``
found.

Sizes are small: the simulator runs every thread in Python. Each case draws
its data from a generator of its own, so that its model (and its generated
source, a disk-cache entry) is the same whichever cases a process built
before it.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import logdens as ld  # noqa: E402
from engine_models import bernoulli_logit, hierarchical, logistic, normal, poisson, potential  # noqa: E402

N = 8


def _engine(build, **kwargs):
    def case():
        m, _, _, _, theta = build(N, np.random.default_rng(0), **kwargs)
        return m, theta
    return case


def transforms():
    """Every kind of transform: a positive scalar, an interval vector, a simplex and an ordered vector."""
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 4, N)
    X = rng.normal(size=(N, 3))
    m = ld.Model()
    s = m.param("s", ld.HalfNormal(1.0))
    w = m.param("w", constraint=ld.interval(-1.0, 2.0), shape=4)
    q = m.param("q", shape=3, constraint=ld.simplex)
    o = m.param("o", ld.Normal(0, 3), shape=3, constraint=ld.ordered)
    m.observe("y", ld.Normal(w[m.data("idx", idx)] + m.data("X", X) @ q + o[1], s), rng.normal(size=N))
    return m, rng.normal(scale=0.5, size=1 + 4 + 2 + 3)


def repeated_indices():
    """A vector read at its own rows by its prior, and through repeated indices by two terms."""
    rng = np.random.default_rng(0)
    idx = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 0])
    m = ld.Model()
    b = m.param("b", ld.Normal(0, 1), shape=3)
    g = m.data("g", idx)
    m.observe("y", ld.Normal(b[g], 1.0), rng.normal(size=idx.size))
    m.observe("c", ld.Poisson(ld.exp(b[g])), rng.poisson(2.0, idx.size).astype(float))
    return m, rng.normal(size=3)


def reductions():
    """Sums, means and logsumexp inside terms: run by one thread per point."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=N)
    m = ld.Model()
    a = m.param("a")
    z = m.param("z", ld.Normal(0, 1), shape=N)
    m.observe("y", ld.Normal(a + z - ld.mean(z), 1.0), x)
    m.potential("p", -0.5 * ld.square(ld.sum(z)) + ld.logsumexp(0.1 * z * m.data("x", x)))
    return m, rng.normal(size=1 + N)


def running_sums():
    """A Gaussian random walk as running sums of a parameter, read at the rows, through
    repeated indices and by element, and a scaled walk as a prior's location."""
    rng = np.random.default_rng(0)
    g = rng.integers(0, 6, N)
    m = ld.Model()
    z = m.param("z", ld.Normal(0, 1), shape=6)
    tau = m.param("tau", ld.HalfNormal(1))
    walk = ld.cumsum(z)
    m.observe("y", ld.Normal(walk[m.data("g", g)] * tau, 1.0), rng.normal(size=N))
    m.observe("w", ld.Normal(walk + walk[2], 2.0), rng.normal(size=6))
    m.param("u", ld.Normal(0.5 * ld.cumsum(z), 1.0), shape=6)
    return m, rng.normal(size=13)


def scans():
    """Scans in terms with shape: GARCH(1,1)'s variances (the last carry kept and
    stored every step for the gradient, data read whole), a vector carry with
    outputs and every carry kept, a last carry checkpointed every 3 steps; and
    a stack of whole values."""
    rng = np.random.default_rng(0)
    T = 10
    r = rng.normal(size=T)
    m = ld.Model()
    omega = m.param("omega", ld.HalfNormal(1))
    a1 = m.param("a1", ld.Uniform(0, 1))
    b1 = m.param("b1", ld.Uniform(0, 1 - a1))
    previous = m.data("r_previous", np.concatenate([[0.0], r[:-1]]))
    sigma2 = ld.scan(lambda s, rp: omega + a1 * rp * rp + b1 * s, float(np.var(r)), previous)
    m.observe("r", ld.Normal(0.0, ld.sqrt(sigma2)), r)
    rho = m.param("rho", ld.Normal(0, 0.3), shape=2)
    states, outputs = ld.scan(lambda c, x: (rho * c + x, ld.sum(c * c)), np.zeros(2) + 0.5,
                              m.data("shocks", rng.normal(size=(T, 2))))
    m.observe("s", ld.Normal(states, 1.0), rng.normal(size=(T, 2)))
    m.potential("energy", -0.01 * ld.sum(outputs))
    last = ld.scan(lambda c, _: 0.9 * c + omega, 0.0, length=T, keep="last", checkpoint=3)
    m.observe("z", ld.Normal(last, 1.0), np.array(1.0))
    m.potential("stacked", -0.5 * ld.sum(ld.square(ld.stack([rho * omega, rho + 1.0, ld.exp(rho)]))))
    return m, rng.normal(size=5) * 0.3


def scalars():
    """No rows at all, and a kernel called inside an expression."""
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 2))
    s = m.param("s", ld.Gamma(2.0, 1.0))
    m.potential("p", ld.StudentT(3.0, a, s).logpdf(0.3))
    return m, np.array([0.4, -0.2])


def outside_support():
    """An unconstrained scale: a negative one gives -inf on both backends."""
    rng = np.random.default_rng(0)
    m = ld.Model()
    s = m.param("s")
    m.observe("y", ld.Normal(0.0, s), rng.normal(size=N))
    return m, np.array(-0.5)


def expression_bounds():
    """Bounds that are expressions of other parameters (``logdens.bounds``): the
    log-Jacobian term runs only with the Jacobian."""
    rng = np.random.default_rng(0)
    m = ld.Model()
    a = m.param("a", ld.Uniform(0, 1))
    b = m.param("b", ld.Uniform(0, 1 - a))
    c = m.param("c", ld.Normal(0, 1), shape=3, constraint=ld.greater_than(b))
    m.observe("y", ld.Normal(a + b + c[m.data("k", rng.integers(0, 3, N))], 0.5), rng.normal(size=N))
    return m, rng.normal(size=5)


def random_model(seed):
    """A random expression of parameters and data (the operators of test_codegen)."""
    def case():
        rng = np.random.default_rng(seed)
        idx, X = rng.integers(0, 4, N), rng.normal(size=(N, 2))
        m = ld.Model()
        p = [m.param("a"), m.param("s", ld.Exponential(1.0)), m.param("b", ld.Normal(0, 1), shape=4)[m.data("idx", idx)],
             m.param("w", constraint=ld.interval(-1.0, 2.0), shape=N), m.data("X", X) @ m.param("beta", shape=2),
             m.data("x", rng.normal(size=N)), 0.7]
        unary = [ld.tanh, ld.softplus, ld.square, ld.erf, lambda e: -e, ld.sin, lambda e: ld.log1p(ld.square(e))]
        binary = [lambda u, v: u + v, lambda u, v: u * v, lambda u, v: u / (1.0 + ld.square(v)), ld.logaddexp]

        def draw(depth):
            if depth == 0 or rng.uniform() < 0.3:
                return p[rng.integers(len(p))]
            if rng.uniform() < 0.5:
                return unary[rng.integers(len(unary))](draw(depth - 1))
            return binary[rng.integers(len(binary))](draw(depth - 1), draw(depth - 1))
        m.observe("y", ld.Normal(draw(3) + 0.0 * p[5], 0.5 + ld.softplus(draw(2))), rng.normal(size=N))
        return m, rng.normal(scale=0.7, size=1 + 1 + 4 + N + 2)
    return case


def mlp():
    """A network (3-4-2, tanh) with Normal errors, priors on its matrices, and the
    network's sum as a potential: values with shape, a row per thread."""
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(N, 3)), rng.normal(size=(N, 2))
    m = ld.Model()
    W1 = m.param("W1", ld.Normal(0, 1), shape=(3, 4))
    b1 = m.param("b1", ld.Normal(0, 1), shape=4)
    W2 = m.param("W2", ld.Normal(0, 1), shape=(4, 2))
    b2 = m.param("b2", ld.Normal(0, 1), shape=2)
    sigma = m.param("sigma", ld.HalfNormal(1))
    out = ld.tanh(m.data("X", X) @ W1 + b1) @ W2 + b2
    m.observe("Y", ld.Normal(out, sigma), Y)
    m.potential("net", ld.sum(0.01 * out))
    return m, rng.normal(scale=0.5, size=12 + 4 + 8 + 2 + 1)


def softmax():
    """A softmax regression through ``log_softmax``, a likelihood potential."""
    rng = np.random.default_rng(0)
    X, onehot = rng.normal(size=(N, 3)), np.eye(4)[rng.integers(0, 4, N)]
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 2), shape=(3, 4))
    alpha = m.param("alpha", ld.Normal(0, 2), shape=4)
    m.potential("lik", ld.sum(ld.log_softmax(m.data("X", X) @ W + alpha) * onehot, axis=-1), observed=True)
    return m, rng.normal(size=12 + 4)


def shaped_whole():
    """Whole values: products of parameter matrices, a transpose, indexing, axis
    reductions, a mean, a matrix under a transform, a whole vector scaled."""
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(N, 3)), rng.normal(size=(N, 3))
    m = ld.Model()
    tau = m.param("tau", ld.HalfNormal(1))
    beta = m.param("beta", ld.Normal(0, 1), shape=3)
    A = m.param("A", ld.Normal(0, 1), shape=(2, 3))
    B = m.param("B", ld.Normal(0, 1), shape=(3, 2))
    s = m.param("s", ld.HalfNormal(1), shape=(2, 3))
    m.observe("y", ld.Normal(m.data("X", X) @ (tau * beta), 1.0), Y[:, 0])
    m.potential("products", ld.sum(A @ B) + beta @ (B @ A[:, 0]) + ld.sum(A.T * B) + A[1] @ beta)
    m.observe("Y", ld.Normal(A[0] + A[:, 1][1], s[1]), Y)
    m.potential("whole", ld.logsumexp(A, axis=0) @ s[0] * 0.1 + ld.sum(ld.mean(A, axis=1))
                + ld.sum(ld.sum(s, axis=1)[:1]))
    m.potential("rows", ld.logsumexp(m.data("Yd", Y) * A[0], axis=1) - ld.sum(s[1] ** 2), observed=True)
    return m, rng.normal(scale=0.5, size=1 + 3 + 6 + 6 + 6)


def row_gather():
    """Rows of a parameter matrix picked by an index, and a whole matrix read at the rows."""
    rng = np.random.default_rng(0)
    group = np.array([0, 1, 2, 3, 4, 0, 0, 2])
    Y = rng.normal(size=(group.size, 2))
    m = ld.Model()
    effects = m.param("effects", ld.Normal(0, 1), shape=(5, 2))
    scale = m.param("scale", ld.HalfNormal(1), shape=2)
    z = m.param("z", ld.Normal(0, 1), shape=(group.size, 2))
    m.observe("Y", ld.Normal(effects[m.data("group", group)] + 0.5 * z, scale), Y)
    return m, rng.normal(scale=0.5, size=10 + 2 + 2 * group.size)


def shaped_misc():
    """A density's ``logpdf`` inside a term with shape, ``where`` on a condition
    on data, a row and an element of parameters, ``sigmoid`` and ``sin``."""
    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(N, 3)), rng.normal(size=(N, 2))
    m = ld.Model()
    W = m.param("W", ld.Normal(0, 1), shape=(3, 2))
    v = m.param("v", ld.Normal(0, 1), shape=2)
    s = m.param("s", ld.HalfNormal(1))
    z = m.data("Z", Z)
    rows = ld.sigmoid(m.data("X", X) @ W) * v + ld.sin(W[1])
    rows = ld.where(z > 0.0, rows, 0.5 * rows)
    m.potential("lik", ld.sum(ld.Normal(rows, s).logpdf(z) + v[0], axis=1), observed=True)
    return m, rng.normal(scale=0.5, size=6 + 2 + 1)


def new_axes():
    """Rows of data with a new axis times a vector (``x[:, None] * w``), a
    (1, k) parameter stretched over the rows, an outer product of two vectors,
    a flattened weight matrix, a potential adding sums over rows to a mean over
    them and a constant, concatenations, a diagonal matrix and slices of
    matrices' axes, a random walk from 0 (running sums joined to a constant)."""
    rng = np.random.default_rng(0)
    x, Y = rng.normal(size=N), rng.normal(size=(N, 3))
    m = ld.Model()
    w = m.param("w", ld.Normal(0, 1), shape=3)
    c = m.param("c", ld.Normal(0, 1), shape=(1, 3))
    a = m.param("a", ld.Normal(0, 1), shape=2)
    s = m.param("s", ld.HalfNormal(1))
    m.observe("Y", ld.Normal(ld.tanh(m.data("x", x)[:, None] * w + c), s), Y)
    m.potential("outer", ld.sum(-ld.square(a[:, None] * w[None, :] - c).reshape(-1)))
    fit = ld.square(ld.tanh(m.data("x2", x)[:, None] * w) - m.data("Y2", Y))
    m.potential("mse", 1.0 - ld.mean(fit) + 0.5 * ld.sum(fit) - ld.sum(c ** 2))  # a loop per sum over rows
    joined = ld.concatenate([ld.concatenate([w, a]), ld.diag(c.reshape(-1)).reshape(-1)])
    m.potential("joined", -ld.sum(ld.square(joined)) - ld.sum(ld.concatenate([np.zeros((1, 3)), c], axis=0) ** 2))
    m.potential("sliced", ld.sum(-ld.square(ld.tanh(m.data("x3", x)[:, None] * w)[:, 1:] - c[:, ::2])))
    m.potential("walk", -ld.sum(ld.square(np.concatenate([np.zeros(1), np.cumsum(w)]))))  # running sums in a term with shape
    # an event-transformed parameter read at the rows: its adjoint has 3 entries, theta 2
    simplex = m.param("simplex", shape=3, constraint=ld.simplex)
    m.observe("Z", ld.Normal(m.data("x4", x)[:, None] * simplex, 1.0), Y)
    return m, rng.normal(scale=0.5, size=3 + 3 + 2 + 1 + 2)


def mv_normal():
    """Multivariate normal rows with a location vector and a data covariance, a
    row-aligned location (a regression of vectors), and a prior on a vector
    with a scalar location: kernels that are loops over an event run on a
    thread."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    X, Y = rng.normal(size=(N, 2)), rng.multivariate_normal(np.zeros(3), cov, size=N)
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1), shape=3)
    B = m.param("B", ld.Normal(0, 1), shape=(2, 3))
    z = m.param("z", ld.MvNormal(0.0, scale_tril=np.linalg.cholesky(cov)))
    m.observe("Y", ld.MvNormal(mu + z, cov=cov), Y)
    m.observe("Y2", ld.MvNormal(m.data("X", X) @ B, cov=cov), Y)
    return m, rng.normal(scale=0.5, size=3 + 6 + 3)


def mv_kernels():
    """Each multivariate density whose kernel is loops over its event, over rows
    of data or as a prior (``shaped.THREAD_EVENT_KERNELS``)."""
    rng = np.random.default_rng(0)
    K = 3
    counts = rng.multinomial(6, [0.2, 0.3, 0.5], size=N)
    classes = rng.integers(0, K, N)
    series = np.cumsum(rng.normal(size=12))
    m = ld.Model()
    s = m.param("s", ld.HalfNormal(1))
    alpha = m.param("alpha", ld.HalfNormal(2), shape=K)
    w = m.param("w", ld.Dirichlet(alpha))
    logits = m.param("logits", ld.Normal(0, 1), shape=K)
    cut = m.param("cut", ld.Normal(0, 2), shape=2, constraint=ld.ordered)
    eta = m.param("eta", ld.Normal(0, 1))
    L = m.param("L", ld.LKJCholesky(K, 2.0))
    rho = m.param("rho", ld.Normal(0, 0.5))
    m.observe("t", ld.MvStudentT(5.0, logits, scale_tril=ld.diag_pre_multiply(alpha, L)), rng.normal(size=(N, K)))
    m.observe("c", ld.DirichletMultinomial(6, alpha), counts)
    m.observe("k", ld.CategoricalLogit(logits), classes)
    m.observe("p", ld.Categorical(w), classes)
    m.observe("o", ld.OrderedLogistic(eta, cut), classes)
    m.observe("q", ld.OrderedProbit(eta, cut), classes)
    m.observe("walk", ld.GaussianRandomWalk(s), series)
    m.observe("ar", ld.AR(rho, s), series)
    m.observe("mn", ld.Multinomial(6, w), counts)
    m.param("C", ld.LKJCorr(K, 1.5))
    return m, rng.normal(scale=0.4, size=1 + K + (K - 1) + K + 2 + 1 + 3 + 1 + 3)


def zero_sum():
    """Group effects with a ZeroSumNormal prior (a multivariate kernel as a prior,
    the sum-to-zero event transform) read through an index."""
    rng = np.random.default_rng(0)
    g = rng.integers(0, 5, N)
    m = ld.Model()
    s = m.param("s", ld.HalfNormal(1))
    a = m.param("a", ld.ZeroSumNormal(s), shape=5)
    m.observe("y", ld.Normal(a[m.data("g", g)], 1.0), rng.normal(size=N))
    return m, rng.normal(scale=0.5, size=1 + 4)

def linalg():
    """Linear algebra on a thread, as loops (no BLAS): a latent GP ``L @ z`` read at
    the rows of data through an index; a GP regression with a length scale per
    input dimension as an MvNormal's factor, its n above the CPU's loop limit
    of the Cholesky (the CPU calls LAPACK there); triangular
    solves both ways with a matrix right side and a log-determinant in a
    hand-written likelihood; a vector added to a diagonal."""
    rng = np.random.default_rng(0)
    n, big = 6, 14
    x, X2 = np.linspace(0.0, 3.0, n), rng.normal(size=(big, 2))
    g = rng.integers(0, n, N)
    m = ld.Model()
    alpha = m.param("alpha", ld.HalfNormal(1))
    rho = m.param("rho", ld.HalfNormal(2))
    sigma = m.param("sigma", ld.HalfNormal(1))
    rho2 = m.param("rho2", ld.HalfNormal(2), shape=2)
    z = m.param("z", ld.Normal(0, 1), shape=n)
    jitter = m.param("jitter", ld.HalfNormal(1), shape=n)
    f = ld.cholesky(ld.add_diag(ld.gp.matern52(m.data("x", x), alpha, rho), 0.01 + jitter)) @ z
    m.observe("y", ld.Poisson(ld.exp(f[m.data("g", g)])), rng.poisson(2.0, N).astype(float))
    K2 = ld.add_diag(ld.gp.exp_quad(m.data("X2", X2), alpha, rho2), sigma ** 2)
    m.observe("y2", ld.MvNormal(0.0, scale_tril=ld.cholesky(K2)), rng.normal(size=big))
    L3 = ld.cholesky(ld.add_diag(ld.gp.periodic(m.data("x3", x), alpha, rho, 2.0), sigma ** 2))
    white = ld.solve_triangular(L3, m.data("R", rng.normal(size=(n, 2))))
    m.potential("lik", -0.5 * ld.sum(white * white) - ld.cholesky_logdet(L3)
                + 0.1 * ld.sum(ld.solve_triangular(L3, white, trans=True)))
    return m, rng.normal(scale=0.4, size=3 + 2 + 2 * n)


CASES = {
    "poisson": _engine(poisson), "normal": _engine(normal), "potential": _engine(potential),
    "bernoulli_logit": _engine(bernoulli_logit), "logistic": _engine(logistic, d=3),
    "hierarchical": _engine(hierarchical, groups=5), "transforms": transforms,
    "repeated_indices": repeated_indices, "reductions": reductions, "running_sums": running_sums, "scans": scans,
    "scalars": scalars,
    "outside_support": outside_support, "expression_bounds": expression_bounds, **{f"random_{k}": random_model(k) for k in range(4)},
    "mlp": mlp, "softmax": softmax, "shaped_whole": shaped_whole, "row_gather": row_gather, "shaped_misc": shaped_misc,
    "new_axes": new_axes, "mv_normal": mv_normal, "mv_kernels": mv_kernels, "linalg": linalg,
    "zero_sum": zero_sum,
}


#: Cases compared with ``compile(backend="cuda", dtype=np.float32)`` too: every
#: transform, int32 indices (repeated ones too), a product, reductions,
#: expression bounds and data inside expressions.
FLOAT32 = ("transforms", "repeated_indices", "reductions", "expression_bounds", "random_3", "mlp")
CHECKS = [*CASES, *(f"{name} float32" for name in FLOAT32)]

#: The checks by the simulator process that runs them (``test_cuda``), each
#: group at most about 75 s of CPU time on a quiet machine with empty caches
#: (numba compiling each case's CPU module, which the CUDA backend loads, is
#: most of it) and 15 s with full ones. ``SLOW``: those above 45 s.
GROUPS = {
    "engine_models": ["poisson", "normal", "potential", "bernoulli_logit", "logistic", "hierarchical", "scalars",
                      "outside_support"],
    "transforms_and_indices": ["transforms", "repeated_indices", "reductions", "running_sums", "expression_bounds",
                               "zero_sum"],
    "random_expressions": [f"random_{k}" for k in range(4)],
    "float32_data": [f"{name} float32" for name in FLOAT32],
    "values_with_shape": ["mlp", "softmax", "row_gather", "shaped_misc"],
    **{name: [name] for name in ("shaped_whole", "new_axes", "scans", "mv_normal", "mv_kernels", "linalg")},
}
SLOW = ("mv_kernels", "linalg")


def _rel(got, want):
    """Largest difference relative to the largest entry of ``want`` (0 where both are equal infinities)."""
    got, want = np.atleast_1d(np.asarray(got, dtype=float)), np.atleast_1d(np.asarray(want, dtype=float))
    same = (got == want)
    if np.all(same):
        return 0.0
    if not np.all(np.isfinite(want[~same])) or not np.all(np.isfinite(got[~same])):
        return float("inf")
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300))


def rounded(density):
    """``density``'s data arrays with the floats rounded to float32: what a
    density compiled with ``dtype=np.float32`` computes with."""
    arrays = {**density.data(), **density.layout.anonymous}
    return {k: v.astype(np.float32).astype(np.float64) if v.dtype.kind == "f" else v for k, v in arrays.items()}


def compare(check, reference="cpu"):
    """The largest relative differences, CUDA against ``reference`` (a backend:
    the CPU's, or in the simulator the Python twin, which compiles nothing), of
    ``check`` (in ``CHECKS``)."""
    from numba import cuda
    name, _, dtype = check.partition(" ")
    m, theta = CASES[name]()
    theta = np.atleast_1d(theta)
    cpu, gpu = m.compile(backend=reference), m.compile(backend="cuda", dtype=dtype or None)
    if dtype:
        cpu.set_data(**rounded(cpu))
    out = {}
    for jacobian in (True, False):
        (lp_g, g_g), (lp_c, g_c) = (d.log_density_gradient(theta, jacobian=jacobian) for d in (gpu, cpu))
        out[f"lp jacobian={jacobian}"] = _rel(lp_g, lp_c)
        if np.isfinite(lp_c):
            out[f"grad jacobian={jacobian}"] = _rel(g_g, g_c)
        out[f"value jacobian={jacobian}"] = _rel(gpu.log_density(theta, jacobian=jacobian),
                                                 cpu.log_density(theta, jacobian=jacobian))
    out["value propto=False"] = _rel(gpu.log_density(theta, propto=False), cpu.log_density(theta, propto=False))
    thetas = theta + 0.05 * np.random.default_rng(1).normal(size=(3, theta.size))
    (L_g, G_g), (L_c, G_c) = (d.log_density_gradient_batch(thetas) for d in (gpu, cpu))
    out["batch lp"], out["batch value"] = _rel(L_g, L_c), _rel(gpu.log_density_batch(thetas), L_c)
    finite = np.isfinite(L_c)
    out["batch grad"] = _rel(G_g[finite], G_c[finite])
    on_device = gpu.log_density_gradient_batch(cuda.to_device(thetas))  # device in, device out
    out["device batch"] = max(_rel(on_device[0].copy_to_host(), L_c),
                              _rel(on_device[1].copy_to_host()[finite], G_c[finite]))
    if np.isfinite(lp_c):
        pointwise = gpu.pointwise_log_likelihood(theta)
        for term, values in cpu.pointwise_log_likelihood(theta).items():
            out[f"pointwise {term}"] = _rel(pointwise[term], values)
            rows = cpu.per_sample_gradient(theta, term)
            out[f"per-sample {term}"] = _rel(gpu.per_sample_gradient(theta, term), rows)
        if pointwise:  # the last term's rows again, into a device array
            on_device = gpu.per_sample_gradient(theta, term, out=cuda.device_array(rows.shape))
            out["per-sample on device"] = _rel(on_device.copy_to_host(), rows)
    return out


def float32_storage():
    """Facts about ``dtype=np.float32`` (``test_cuda`` checks them): the dtypes
    on the device before and after ``set_data``, that the result differs
    from float64's where the data are not float32 numbers, and the errors
    for data beyond float32's range, at compile and at ``set_data`` (which
    then leaves the data as they were)."""
    m, theta = CASES["hierarchical"]()
    d32, d64 = m.compile(backend="cuda", dtype=np.float32), m.compile(backend="cuda")
    facts = {"dtypes": [str(d32._data.device.fdata.dtype), str(d32._data.device.idata.dtype)],
             "float64 dtypes": [str(d64._data.device.fdata.dtype), str(d64._data.device.idata.dtype)],
             "differs from float64": _rel(d32.log_density(theta), d64.log_density(theta)),
             "host data rounded": bool(np.array_equal(d32.fdata, d32.fdata.astype(np.float32)))}
    lp, x = d32.log_density(theta), d32.data()["x"].copy()
    x[3] = 1e39
    try:
        d32.set_data(x=x)
    except ValueError as e:
        facts["set_data error"] = str(e)
    facts["unchanged after the error"] = _rel(d32.log_density(theta), lp)
    d32.set_data(x=x[:6] * 0.0, c=np.arange(6.0), group=np.arange(6) % 5)  # new data, still float32
    facts["dtypes after set_data"] = [str(d32._data.device.fdata.dtype), str(d32._data.device.idata.dtype)]
    m2 = ld.Model()
    m2.observe("y", ld.Normal(m2.param("mu"), 1.0), np.array([0.0, -3e38, 5e38]))
    try:
        m2.compile(backend="cuda", dtype="float32")
    except ValueError as e:
        facts["compile error"] = str(e)
    return facts


def chunked_batch(points=5, per_launch=2):
    """A batch of more points than one launch takes (``MAX_POINTS``, lowered to
    ``per_launch``) against the Python twin: the largest relative differences."""
    from logdens import cuda_density
    m, theta = CASES["transforms"]()
    thetas = theta + 0.05 * np.random.default_rng(2).normal(size=(points, np.size(theta)))
    gpu, cpu = m.compile(backend="cuda"), m.compile(backend="python")
    lps, grads = cpu.log_density_gradient_batch(thetas)
    launches, launch = [], gpu._launch
    gpu._launch = lambda data, thetas, *args: launches.append(thetas.shape[0]) or launch(data, thetas, *args)
    limit, cuda_density.MAX_POINTS = cuda_density.MAX_POINTS, per_launch
    try:
        got = gpu.log_density_gradient_batch(thetas)
        values = gpu.log_density_batch(thetas)
    finally:
        cuda_density.MAX_POINTS = limit
    return {"lp": _rel(got[0], lps), "grad": _rel(got[1], grads), "value": _rel(values, lps),
            "points per launch": launches}


def compile_ptx(name):
    """Compile every kernel of case ``name`` to PTX for sm_90 with numba-cuda and
    its NVVM, with no device (``--ptx``): what the simulator cannot check,
    the kernels' typing and lowering on the real target. Returns the kernels'
    names. The signatures are the launches' (C-contiguous float64 arrays,
    int64 ``idata``)."""
    import inspect

    from numba import cuda, types
    from numba.cuda import dispatcher

    from logdens import cache, engine
    from logdens.cuda_source import generate_cuda_source

    class Device:  # the compute capability numba-cuda asks the current device for
        compute_capability = (9, 0)
    dispatcher.get_current_device = Device
    arguments = {"sums": types.float64[::1], "lps": types.float64[::1], "jacobian": types.boolean,
                 "dropped": types.boolean, "fdata": types.float64[::1], "idata": types.int64[::1]}
    m, _ = CASES[name]()
    module = cache.load(generate_cuda_source(*engine.lower(m.snapshot())))
    names = [k for k, v in vars(module).items() if type(v).__name__ == "CUDADispatcher" and k not in ("block_add", "total")]
    for kernel in names:
        fn = getattr(module, kernel).py_func
        rank = {"out": 2 if kernel.startswith("per_sample") else 1}
        signature = tuple(arguments.get(a) or (types.float64[::1] if rank.get(a) == 1 else types.float64[:, ::1])
                          for a in inspect.signature(fn).parameters)
        cuda.compile_ptx(fn, signature, cc=(9, 0))
    return names


def main(args):
    """``python cuda_checks.py NAME ...``, in the simulator: for each ``NAME``, a
    group of ``GROUPS`` or a check of ``CHECKS``, its checks against the
    Python twin under ``"compare"``; ``float32_storage`` adds its facts under
    ``"float32"``, ``chunked_batch`` its differences under ``"chunked"``. ``python
    cuda_checks.py --ptx [CASE ...]``: each case's kernels compiled to PTX
    (``compile_ptx``; numba-cuda installed, no simulator, no device needed)."""
    if args[:1] == ["--ptx"]:
        for name in args[1:] or CASES:
            print(name, "compiled to PTX:", ", ".join(compile_ptx(name)), flush=True)
        return
    result = {"compare": {}}
    for name in args:
        if name == "float32_storage":
            result["float32"] = float32_storage()
        elif name == "chunked_batch":
            result["chunked"] = chunked_batch()
        else:
            result["compare"].update({check: compare(check, "python") for check in GROUPS.get(name, [name])})
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
