"""Random models (hypothesis) through the whole engine: value against the numpy
interpreter, gradient against finite differences, compiled against plain Python."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logdens as ld
from engine_helpers import check_gradient, per_sample_rows
from logdens.cpu_blocks import BLOCK
from logdens.engine import compile_model
from logdens.evaluate import evaluate

N, K, D = 6, 4, 2
RNG = np.random.default_rng(0)
DATA = {"x": RNG.normal(size=N), "idx": RNG.integers(0, K, size=N), "X": RNG.normal(size=(N, D)),
        "y": RNG.normal(size=N)}

UNARY = [ld.tanh, ld.logistic, ld.softplus, ld.square, ld.erf, ld.log_logistic, lambda e: -e, ld.sin, ld.cos,
         lambda e: ld.exp(ld.tanh(e)), lambda e: ld.log1p(ld.square(e)), lambda e: ld.sqrt(1.0 + ld.square(e))]
BINARY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
          lambda a, b: a / (1.0 + ld.square(b)), ld.logaddexp,
          lambda a, b: (ld.softplus(a) + 1.0) ** ld.logistic(b)]


def leaves(p):
    """Leaf expressions over the model's parameters and data (plate N or scalar)."""
    return [p["a"], p["s"], p["x"], p["b"][p["idx"]], p["w"][p["idx"]], p["X"] @ p["beta"],
            p["X"] @ p["q"], p["c"][::2], p["d"], p["d"][p["idx"]], 0.7, p["b"][0], p["q"][-1],
            ld.Normal(p["w"][p["idx"]], p["s"]).logpdf(p["x"]), ld.StudentT(3.0, p["d"], 0.5).logpdf(p["a"]),
            ld.mean(p["x"]), ld.mean(p["d"]) * p["a"], ld.dot(p["b"], p["w"]), ld.logsumexp(p["d"] * p["x"]),
            ld.cumsum(p["d"]), ld.cumsum(p["a"] * p["x"])]


@st.composite
def expression(draw, p, depth=3):
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(leaves(p)))
    if draw(st.booleans()):
        return draw(st.sampled_from(UNARY))(draw(expression(p, depth - 1)))
    return draw(st.sampled_from(BINARY))(draw(expression(p, depth - 1)), draw(expression(p, depth - 1)))


def model_with(pick):
    """A model whose location, scale and potential are ``pick(p, slot)`` for
    slots 0, 1, 2 (``p``: the leaves' parameters and data)."""
    m = ld.Model()
    p = {"a": m.param("a"), "s": m.param("s", ld.Exponential(1.0)), "b": m.param("b", ld.Normal(0, 1), shape=K),
         "w": m.param("w", constraint=ld.interval(-1.0, 2.0), shape=K), "beta": m.param("beta", shape=D),
         "q": m.param("q", shape=D, constraint=ld.simplex), "c": m.param("c", shape=2 * N),
         "d": m.param("d", ld.Normal(0, 2), shape=N), "x": m.data("x", DATA["x"]),
         "idx": m.data("idx", DATA["idx"]), "X": m.data("X", DATA["X"])}
    loc = ld.sum(0.0 * p["x"]) + pick(p, 0)
    scale = 0.5 + ld.softplus(pick(p, 1))
    m.observe("y", ld.Normal(loc, scale), DATA["y"])
    m.potential("extra", 0.1 * ld.tanh(ld.sum(pick(p, 2))))
    return m, loc, scale


def node_plan(slot, n_leaves):
    """Slot ``slot``'s part of the model of every node kind, as indices: its
    leaves (every third from ``slot``), each leaf's unary operation, and the
    binary operation joining each pair of them (over the three slots: every
    leaf, every unary and every binary operation)."""
    chosen = list(range(slot, n_leaves, 3))
    return chosen, [i % len(UNARY) for i in chosen], [(slot + 3 * j) % len(BINARY) for j in range(len(chosen) // 2)]


def every_node_kind(p, slot):
    """Slot ``slot``'s expression of ``node_plan``: binary operations of unary
    operations of leaves (the random models' depth), added."""
    chosen, unary, binary = node_plan(slot, len(leaves(p)))
    inner = [UNARY[u](leaves(p)[i]) for i, u in zip(chosen, unary)]
    terms = [BINARY[op](inner[2 * j], inner[2 * j + 1]) for j, op in enumerate(binary)] + inner[2 * len(binary):]
    return sum(terms[1:], terms[0])


def check_random_model(m, loc, scale):
    """The compiled model against the numpy interpreter, finite differences and
    its Python twin; its gradient-only and jacobian=False kernels against the
    full one; its per-sample rows dense and sparse."""
    density = m.compile()
    theta = np.random.default_rng(1).normal(scale=0.7, size=density.dim)
    values = {**DATA, **density.constrain(theta)}
    want = np.sum(ld.Normal(np.broadcast_to(evaluate(loc, values), (N,)),
                            evaluate(scale, values)).logpdf(DATA["y"]))
    got = density.pointwise_log_likelihood(theta)["y"].sum()
    assert got == pytest.approx(want, rel=1e-11)
    check_gradient(density, theta, np.random.default_rng(2))
    twin = m.compile(backend="python")
    lp, grad = density.log_density_gradient(theta)
    lp_py, grad_py = twin.log_density_gradient(theta)
    assert lp_py == pytest.approx(lp, rel=1e-12)
    np.testing.assert_allclose(grad_py, grad, rtol=1e-10, atol=1e-12)
    # the gradient alone: the same arithmetic less the value's (rtol 1e-13 for
    # a loop that LLVM may vectorize differently once lp is gone)
    for alone, want in ((density.gradient(theta), grad), (twin.gradient(theta), grad_py),
                        (density.gradient(theta, jacobian=False),
                         density.log_density_gradient(theta, jacobian=False)[1])):
        np.testing.assert_allclose(alone, want, rtol=1e-13, atol=1e-13 * np.max(np.abs(want)))
    rows = per_sample_rows(density, theta, "y")  # sparse rows equal to dense ones
    assert np.all(np.isfinite(rows))


def test_a_model_of_every_node_kind():
    """Every leaf, unary and binary operation of the random models, in one
    model, whichever models hypothesis draws (each random model compiles
    seven kernels, 15-25 s of CPU time cold: four are drawn, not eight)."""
    plans = []

    def pick(p, slot):
        plans.append((len(leaves(p)), node_plan(slot, len(leaves(p)))))
        return every_node_kind(p, slot)
    check_random_model(*model_with(pick))
    n_leaves = plans[0][0]
    assert sorted(i for _, plan in plans for i in plan[0]) == list(range(n_leaves))
    assert {u for _, plan in plans for u in plan[1]} == set(range(len(UNARY)))
    assert {op for _, plan in plans for op in plan[2]} == set(range(len(BINARY)))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_models(data):
    """Random compositions (the node kinds themselves: ``test_a_model_of_every_node_kind``)."""
    check_random_model(*model_with(lambda p, slot: data.draw(expression(p))))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_plain_loops_agree_with_the_cpu_schedule(data):
    """Blocks of rows, buffers, hoisted gathers and sorted scatters are the CPU
    emitter's choice: the plain loops (one row's work per iteration, what a GPU
    thread runs) give the same log density, gradient, per-observation values and
    per-sample rows. Both run as plain Python; they differ in summation order
    only (rtol 1e-12)."""
    m, _, _ = model_with(lambda p, slot: data.draw(expression(p)))
    blocked, plain = (compile_model(m, backend="python", blocks=b) for b in (True, False))
    assert "for b0 in range" not in plain.source() and "scratch" not in plain.source()
    theta = np.random.default_rng(3).normal(scale=0.7, size=blocked.dim)
    for got, want in zip(plain.log_density_gradient(theta), blocked.log_density_gradient(theta)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(plain.pointwise_log_likelihood(theta)["y"],
                               blocked.pointwise_log_likelihood(theta)["y"], rtol=1e-12)
    np.testing.assert_allclose(per_sample_rows(plain, theta, "y"), per_sample_rows(blocked, theta, "y"),
                               rtol=1e-12, atol=1e-12)


def _core(density):
    """The source of ``core`` alone (``core_parallel`` follows it)."""
    source = density.source()
    return source[source.index("def core("):source.index("def core_parallel(")]


def test_first_term_to_read_a_vector_assigns_its_gradient_entries():
    """``z``'s prior term writes ``grad[...] = ...`` (no zeroing pass over z); the
    terms after it, and a term that also gathers ``z``, add. Checked against
    finite differences and plain Python."""
    m = ld.Model()
    z = m.param("z", ld.Normal(0, 1), shape=N)
    u = m.param("u", shape=N, constraint=ld.positive)
    idx = m.data("idx", DATA["idx"])
    m.observe("y", ld.Normal(z + z[idx] + u, 1.5), DATA["y"])
    m.observe("x", ld.Normal(u * z, 2.0), DATA["x"])
    density = m.compile()
    core = _core(density)
    assert "grad[0:6] = 0.0" not in core and "grad[6:12] = 0.0" not in core
    assert len(re.findall(r"grad(?:_b\d+|_o_\w+)?\[[^]]*\] = a", core)) == 2  # z in its prior term, u (read directly) in term 'y'
    theta = np.random.default_rng(3).normal(size=density.dim)
    check_gradient(density, theta, np.random.default_rng(4))
    lp, grad = density.log_density_gradient(theta)
    lp_py, grad_py = m.compile(backend="python").log_density_gradient(theta)
    np.testing.assert_allclose(grad_py, grad, rtol=1e-12)


def test_a_sum_over_a_parameter_read_nowhere_else_takes_one_pass():
    """F(sum_i f(x_i)): the sum's loop stores f'(x_i) in x's gradient entries and
    a second loop only scales them by F'; with a constrained x (the Jacobian is
    added after the scaling) and a data array inside the sum."""
    m = ld.Model()
    x = m.param("x", shape=N, constraint=ld.positive)
    mu = m.param("mu", ld.Normal(0, 1))
    rho = ld.sum(ld.exp(-x) * m.data("x_data", DATA["x"]) + ld.log1p(ld.square(x)))
    m.potential("F", -0.5 * ld.square(rho - 1.0) - 0.1 * rho ** 3 / (1.0 + ld.square(rho)))
    m.observe("y", ld.Normal(mu, 1.5), DATA["y"])
    density = m.compile()
    core = _core(density)
    assert core.count("vmath.exp(") + core.count("events.floored_exp(") == 2  # x's transform and exp(-x): one pass
    assert "] *= a" in core and "grad[0:6] = 0.0" not in core
    rng = np.random.default_rng(5)
    for theta in rng.normal(scale=0.8, size=(3, density.dim)):
        check_gradient(density, theta, rng)
        check_gradient(density, theta, rng, jacobian=False)
        lp, grad = density.log_density_gradient(theta)
        lp_py, grad_py = m.compile(backend="python").log_density_gradient(theta)
        np.testing.assert_allclose(grad_py, grad, rtol=1e-12)


@pytest.mark.parametrize("other_use", ["prior", "scalar inside", "read again"])
def test_a_sum_over_a_parameter_read_elsewhere_takes_two_passes(other_use):
    """When anything else reads x (its prior, another term) or the sum also
    reads a scalar parameter, the elements are recomputed in a second loop.
    "read again" is also a regression test: the later term reading x at its
    row used to assign x's entries, erasing what the sum had added."""
    m = ld.Model()
    x = m.param("x", ld.Normal(0, 1) if other_use == "prior" else None, shape=N)
    s = m.param("s", ld.Exponential(1.0))
    element = ld.exp(-x) * (s if other_use == "scalar inside" else 1.0)
    m.potential("F", -ld.square(ld.sum(element)))
    if other_use == "read again":
        m.observe("y", ld.Normal(x, s), DATA["y"])
    density = m.compile()
    assert "] *= a" not in _core(density)
    rng = np.random.default_rng(6)
    check_gradient(density, rng.normal(scale=0.5, size=density.dim), rng)


def test_blocked_loop_with_gather_slice_and_product():
    """A term whose loop runs in blocks (a gather, ``X @ beta``) and also reads a
    slice: the slice's index is the plate's, ``b0 + i``. Checked against finite
    differences, plain Python, the parallel variant and the plain loops without
    blocks, with more rows than a block so that the blocks and the chunks split
    the rows."""
    n = 700
    rng = np.random.default_rng(5)
    m = ld.Model()
    b = m.param("b", ld.Normal(0, 1), shape=K)
    beta = m.param("beta", ld.Normal(0, 1), shape=D)
    c = m.param("c", ld.Normal(0, 1), shape=2 * n)
    s = m.param("s", ld.Exponential(1.0))
    loc = b[m.data("idx", rng.integers(0, K, n))] + m.data("X", rng.normal(size=(n, D))) @ beta + c[::2]
    m.observe("y", ld.Normal(loc, s), rng.normal(size=n))
    density = m.compile()
    assert re.search(rf"for b0 in range\(0, n_y_\d+, {BLOCK}\):", density.source())
    theta = np.random.default_rng(6).normal(scale=0.5, size=density.dim)
    check_gradient(density, theta, np.random.default_rng(7))
    lp, grad = density.log_density_gradient(theta)
    lp_py, grad_py = m.compile(backend="python").log_density_gradient(theta)
    assert lp_py == pytest.approx(lp, rel=1e-12)
    np.testing.assert_allclose(grad_py, grad, rtol=1e-10, atol=1e-12)
    lp_par, grad_par = m.compile(parallel=True).log_density_gradient(theta)
    assert lp_par == pytest.approx(lp, rel=1e-12)
    np.testing.assert_allclose(grad_par, grad, rtol=1e-10, atol=1e-12)
    plain = compile_model(m, backend="python", blocks=False)  # the same loops without blocks
    lp_plain, grad_plain = plain.log_density_gradient(theta)
    assert lp_plain == pytest.approx(lp, rel=1e-12)
    np.testing.assert_allclose(grad_plain, grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(per_sample_rows(plain, theta, "y"), per_sample_rows(density, theta, "y"),
                               rtol=1e-10, atol=1e-12)


def test_generated_source_is_readable():
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    m.observe("y", ld.Normal(mu + m.data("x", DATA["x"]), 1.0), DATA["y"])
    source = m.compile().source()
    assert "# term 'y': y ~ Normal(" in source
    assert "def logp_grad(theta, grad, fdata, idata):" in source
    compile(source, "<generated>", "exec")


def test_tidy_folds_single_contributions_and_times_drops_one():
    from logdens.lines import Accumulator, indent, tidy, times
    # where each accumulator's contributions are made: in its own straight-line code or not
    counts = {"a3": [True], "a4": [False], "a5": [True], "a6": [True, True]}

    def acc(var, value=None):
        return Accumulator(var, value, counts)
    lines = ([acc("a3"), acc("a4"), "for i in range(n):"]
             + indent([acc("a5"), "x = 2.0", acc("a5", times("r[2]", "1.0")), acc("a4", times("a5", "1.05")),
                       acc("a6"), acc("a6", "a5"), acc("a6", "x")])
             + [acc("a3", times("a4", "1.0 / 4.0")), "grad[0] += a3"])
    assert tidy(lines) == [
        "a4 = 0.0", "for i in range(n):", "    x = 2.0", "    a5 = r[2]", "    a4 += a5 * 1.05",
        "    a6 = 0.0", "    a6 += a5", "    a6 += x", "a3 = a4 / 4.0", "grad[0] += a3"]


def test_checked_observed_data_skips_the_kernels_value_checks():
    """Bare observed counts are checked when set, so the kernel is told
    (``x_valid``); counts computed from data are not checked then, so it is not."""
    counts = RNG.poisson(2.0, size=N).astype(float)
    densities = []
    for bare in (True, False):
        m = ld.Model()
        log_rate = m.param("log_rate", shape=N)
        c = m.data("c", counts)
        m.observe("y", ld.PoissonLog(log_rate), c if bare else 2.0 * c - c)
        density = m.compile()
        assert (", True)" in _core(density)) == bare
        densities.append(density)
    theta = RNG.normal(scale=0.3, size=N)
    (lp_bare, g_bare), (lp_expr, g_expr) = (d.log_density_gradient(theta) for d in densities)
    assert lp_bare == pytest.approx(lp_expr, rel=1e-14)
    np.testing.assert_allclose(g_bare, g_expr, rtol=1e-14)
    with pytest.raises(ld.ModelError, match="value"):
        densities[0].set_data(c=counts + 0.5)


# Blocks of 128 sorted rows holding a few groups each (one masked sum per
# group), many (one add per row), and group numbers with gaps between them;
# the gather of a parameter and of an expression computed once per group.
@pytest.mark.parametrize("labels", [np.arange(3), np.arange(40), np.arange(400), np.array([0, 5, 6, 90])])
@pytest.mark.parametrize("gathered", ["param", "expression"])
def test_sorted_and_shuffled_rows_give_the_same_gradient(labels, gathered):
    """Rows sorted by group (the scatter sums each group's rows at once) and the
    same rows shuffled, set by ``set_data`` on the same compiled model, give
    the same log density and gradient; checked against finite differences too."""
    n = 700
    rng = np.random.default_rng(len(labels))
    group = np.sort(rng.choice(labels, n))
    x, y = rng.normal(size=n), rng.normal(size=n)
    m = ld.Model()
    a = m.param("a", shape=int(labels.max()) + 1, constraint=ld.positive)
    b = m.param("b")
    s = m.param("s", ld.HalfNormal(1))
    location = a if gathered == "param" else ld.log(a) * s + b
    m.observe("y", ld.Normal(location[m.data("g", group)] + b * m.data("x", x), 1.3), y)
    density = m.compile()
    assert re.search(r"first, last = i_g_\d+_b0\[0\]", density.source())
    hoisted = re.search(r"\bh\d+ = np\.empty", density.source()) is not None
    assert hoisted == (gathered == "expression")
    theta = rng.normal(scale=0.5, size=density.dim)
    lp, grad = density.log_density_gradient(theta)
    check_gradient(density, theta, np.random.default_rng(16))
    order = rng.permutation(n)
    density.set_data(g=group[order], x=x[order], y=y[order])
    lp_shuffled, grad_shuffled = density.log_density_gradient(theta)
    assert lp == pytest.approx(lp_shuffled, rel=1e-12)  # only the order of the sums differs
    np.testing.assert_allclose(grad, grad_shuffled, rtol=1e-11, atol=1e-12)
    assert density.log_density(theta) == pytest.approx(lp, rel=1e-12)


def test_every_node_type_has_a_lowering():
    """``Lowering.value`` finds each node type's lowering in one table (constants
    are written as literals), and the lowering of values with shape
    (``logdens.shaped``) has the types only it lowers."""
    from logdens import expr as ex
    from logdens import rules
    from logdens.codegen import VALUE_RULES
    from logdens.shaped import KINDS
    types = {cls for cls in vars(ex).values() if isinstance(cls, type) and issubclass(cls, ex.Expr)}
    shaped_only = {t for t in types - {ex.Expr} if rules.rule_of_type(t).shaped_only}
    assert set(VALUE_RULES) | {ex.Const} == types - {ex.Expr} - shaped_only
    assert shaped_only <= set(KINDS)


def test_parallel_variant_with_a_hoisted_gathered_expression():
    """``(mu + exp(log_sigma) * z)[group]`` is computed per group before the rows, in a
    workspace each parallel chunk owns. Allocated inside ``prange`` (before the
    workspaces), numba 0.68 refused to compile the parallel variant ("Illegal
    IR, del found"); it now agrees with the serial kernel."""
    n, groups = 700, 100  # the benchmark's model; with 9 groups, or with priors, the old code compiled
    rng = np.random.default_rng(11)
    m = ld.Model()
    mu, log_sigma, z, b = m.param("mu"), m.param("log_sigma"), m.param("z", shape=groups), m.param("b")
    group, x = m.data("group", rng.integers(0, groups, n)), m.data("x", rng.normal(size=n))
    m.observe("c", ld.PoissonLog((mu + ld.exp(log_sigma) * z)[group] + b * x), rng.poisson(2.0, n))
    serial, parallel = m.compile(), m.compile(parallel=True)
    assert "_chunks[c]" in parallel.source()
    theta = np.random.default_rng(12).normal(scale=0.3, size=serial.dim)
    lp, grad = serial.log_density_gradient(theta)
    lp_par, grad_par = parallel.log_density_gradient(theta)
    assert lp_par == pytest.approx(lp, rel=1e-12)
    np.testing.assert_allclose(grad_par, grad, rtol=1e-10, atol=1e-12)


def test_workspaces_are_allocated_before_any_loop():
    """Buffers, hoisted values and constrained vectors are workspaces that the
    lowering declares; the CPU emitter allocates them once per call, at the
    function's start, never per block or per parallel chunk."""
    rng = np.random.default_rng(13)
    m = ld.Model()
    mu, sigma = m.param("mu"), m.param("sigma", ld.HalfNormal(1.0))
    z, w = m.param("z", ld.Normal(0, 1), shape=K), m.param("w", ld.Normal(0, 1), shape=D)
    idx, X = m.data("idx", rng.integers(0, K, 300)), m.data("X", rng.normal(size=(300, D)))
    m.observe("y", ld.Normal((mu + sigma * z)[idx] + X @ w, sigma), rng.normal(size=300))
    source = compile_model(m, backend="python", parallel=True).source()
    functions = source.split("\ndef ")[1:]
    assert any("scratch_" in f and "_chunks" in f for f in functions)
    for function in functions:
        body = function.splitlines()
        first_loop = next((k for k, line in enumerate(body) if line.lstrip().startswith("for ")), len(body))
        assert not [line for line in body[first_loop:] if "np.empty(" in line or "np.zeros(" in line], function


def mixture_model(y):
    """Two normal components written with logpdf expressions, means mu[0] < mu[-1]."""
    m = ld.Model()
    w = m.param("w", ld.Beta(2, 2))
    mu = m.param("mu", ld.Normal(0, 5), shape=2, constraint=ld.ordered)
    s = m.param("s", ld.HalfNormal(2))
    ys = m.data("y", y)
    m.potential("mix", ld.sum(ld.logaddexp(ld.log(w) + ld.Normal(mu[0], s).logpdf(ys),
                                            ld.log1p(-w) + ld.Normal(mu[-1], s).logpdf(ys))))
    m.observe("z", ld.Normal(mu[1] - mu[0], 1.0), np.array([4.0, 5.5]))  # an element in a plate
    return m


def test_logpdf_expressions_and_constant_elements():
    """Value against scipy, gradient against finite differences, the Python twin
    and per-sample rows of the term that reads mu[1] - mu[0]."""
    from scipy import stats
    y = np.random.default_rng(5).normal(0, 2, size=300)
    m = mixture_model(y)
    density, twin = m.compile(), m.compile(backend="python")
    theta = np.array([0.3, -1.0, 0.2, 0.1])
    c = density.constrain(theta)
    lo, hi = c["mu"]
    want = (np.sum(np.logaddexp(np.log(c["w"]) + stats.norm(lo, c["s"]).logpdf(y),
                                np.log1p(-c["w"]) + stats.norm(hi, c["s"]).logpdf(y)))
            + np.sum(stats.norm(hi - lo, 1.0).logpdf([4.0, 5.5])) + stats.beta(2, 2).logpdf(c["w"])
            + np.sum(stats.norm(0, 5).logpdf(c["mu"])) + stats.halfnorm(scale=2).logpdf(c["s"]))
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(want, rel=1e-12)
    check_gradient(density, theta, np.random.default_rng(6))
    lp, grad = density.log_density_gradient(theta)
    np.testing.assert_allclose(twin.log_density_gradient(theta)[1], grad, rtol=1e-12)
    rows = per_sample_rows(density, theta, "z")
    # ordered: mu = (u0, u0 + exp(u1)), so mu[1] - mu[0] = exp(u1) reads column 2 alone
    gap = np.exp(theta[2])
    np.testing.assert_allclose(rows[:, 2], (np.array([4.0, 5.5]) - gap) * gap, rtol=1e-12)
    assert np.count_nonzero(rows[:, [0, 1, 3]]) == 0
    assert "Normal(mu[0], s).logpdf(y)" in repr(m)


def test_constant_elements_in_the_parallel_variant():
    """b[0] and b[-1] read once per call, in every chunk: the same gradient as serial."""
    rng = np.random.default_rng(7)
    m = ld.Model()
    b = m.param("b", ld.Normal(0, 1), shape=3)
    m.observe("y", ld.Normal(b[0] + b[-1] * m.data("x", rng.normal(size=500)), 1.0), rng.normal(size=500))
    theta = rng.normal(size=3)
    serial, parallel = m.compile(), m.compile(parallel=True)
    for got, want in zip(parallel.log_density_gradient(theta), serial.log_density_gradient(theta)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert serial.log_density_gradient(theta)[1][1] == pytest.approx(-theta[1])  # the prior alone


def test_mean_divides_by_the_run_time_length():
    """``ld.mean`` of data follows ``set_data`` to a new length (its divisor is read
    at run time, not the length the model was built with); of a parameter it is
    the declared length. Value against numpy, gradient against finite differences."""
    m = ld.Model()
    mu = m.param("mu", shape=3)
    x = m.data("x", np.arange(5.0))
    m.potential("p", -(ld.mean(x) - ld.mean(mu)) ** 2 - ld.dot(mu, mu))
    density = m.compile()
    theta = np.array([0.1, 0.5, -0.2])
    for n in (5, 9):
        density.set_data(x=np.arange(float(n)))
        want = -((n - 1) / 2 - theta.mean()) ** 2 - theta @ theta
        assert density.log_density(theta) == pytest.approx(want, rel=1e-14)
        check_gradient(density, theta, np.random.default_rng(n))
    assert "sum(x) / len(x)" in repr(m)


def test_logsumexp_is_stable_and_exact():
    """Elements near 1500 (where exp overflows) and near -1000 (where it
    underflows to 0): the value against scipy (rtol 1e-14), the gradient (a
    softmax) against finite differences and in closed form, compiled and as
    the twin."""
    from scipy.special import logsumexp, softmax
    m = ld.Model()
    mu = m.param("mu", shape=4)
    m.potential("p", ld.logsumexp(3000.0 * mu) + ld.logsumexp(ld.logaddexp(mu, -np.inf) - 1e3))
    theta = np.array([0.5, 0.49, 0.2, -0.1])
    for density in (m.compile(), m.compile(backend="python")):
        lp, grad = density.log_density_gradient(theta)
        assert lp == pytest.approx(logsumexp(3000 * theta) + logsumexp(theta - 1e3), rel=1e-14)
        np.testing.assert_allclose(grad, 3000 * softmax(3000 * theta) + softmax(theta), rtol=1e-12)
    check_gradient(m.compile(), theta, np.random.default_rng(8))


def test_a_potential_that_is_a_sum_adds_its_rows_in_one_pass():
    """``potential(sum(x))`` runs as a loop over x's rows adding each element (no
    second, reverse pass over the rows): the same value and gradient as the
    likelihood potential of x, one loop fewer in the source."""
    y = np.random.default_rng(9).normal(size=40)

    def model(summed):
        m = ld.Model()
        mu, s = m.param("mu"), m.param("s", constraint=ld.positive)
        rows = ld.Normal(mu, s).logpdf(y)
        m.potential("lik", ld.sum(rows) if summed else rows, observed=not summed)
        return m

    summed, rows = model(True).compile(), model(False).compile()
    theta = np.array([0.3, -0.2])
    np.testing.assert_allclose(summed.log_density_gradient(theta)[1], rows.log_density_gradient(theta)[1],
                               rtol=1e-13)
    assert summed.log_density(theta) == pytest.approx(rows.log_density(theta), rel=1e-14)
    check_gradient(summed, theta, np.random.default_rng(10))
    loops = _core(summed).count("for i")
    assert loops == _core(rows).count("for i") == 1


def random_walk(y, group=None):
    """x = cumsum(sigma * z), a latent Gaussian random walk, observed with noise;
    with ``group``, a group effect gathered at the rows too (rows sorted by it
    would pair each row with another element of the walk)."""
    m = ld.Model()
    sigma = m.param("sigma", ld.HalfNormal(1))
    z = m.param("z", ld.Normal(0, 1), shape=len(y))
    walk = m.deterministic("walk", ld.cumsum(sigma * z))
    loc = walk if group is None else walk + m.param("g", ld.Normal(0, 1), shape=3)[m.data("group", group)]
    m.observe("y", ld.Normal(loc, 0.3), y)
    return m


def _walk_reference(c, y, group=None):
    from scipy import stats
    loc = np.cumsum(c["sigma"] * c["z"]) + (0.0 if group is None else c["g"][group])
    return stats.norm(loc, 0.3).logpdf(y)


@pytest.mark.parametrize("with_groups", [False, True])
def test_cumsum_random_walk(with_groups):
    """Pointwise values against numpy (rtol 1e-12), gradient against finite
    differences, the twin, per-sample rows summing to the likelihood's gradient,
    the parallel variant; with unsorted group labels the rows keep their order."""
    rng = np.random.default_rng(11)
    y = np.cumsum(rng.normal(size=40))
    group = rng.integers(0, 3, size=40) if with_groups else None
    m = random_walk(y, group)
    density = m.compile()
    theta = rng.normal(size=density.dim) * 0.5
    c = density.constrain(theta)
    np.testing.assert_allclose(density.pointwise_log_likelihood(theta)["y"], _walk_reference(c, y, group),
                               rtol=1e-12)
    check_gradient(density, theta, rng)
    lp, grad = density.log_density_gradient(theta)
    np.testing.assert_allclose(m.compile(backend="python").log_density_gradient(theta)[1], grad, rtol=1e-11)
    np.testing.assert_allclose(m.compile(parallel=True).log_density_gradient(theta)[1], grad, rtol=1e-11)
    rows = per_sample_rows(density, theta, "y")
    priors = density.log_density_gradient(theta)[1] - rows.sum(axis=0)
    sigma_prior = -np.exp(theta[0]) ** 2 + 1.0  # HalfNormal(1) on log sigma, with its Jacobian
    assert priors[0] == pytest.approx(sigma_prior, rel=1e-10)
    np.testing.assert_allclose(priors[1:41], -theta[1:41], rtol=1e-10, atol=1e-10)


def test_cumsum_of_data_follows_set_data():
    m = ld.Model()
    mu = m.param("mu")
    x = m.data("x", np.ones(5))
    m.observe("y", ld.Normal(mu + ld.cumsum(x), 1.0), np.zeros(5))
    density = m.compile()
    density.set_data(x=np.arange(8.0), y=np.zeros(8))
    want = -0.5 * np.sum((0.2 + np.cumsum(np.arange(8.0))) ** 2) - 8 * 0.5 * np.log(2 * np.pi)
    assert density.log_density(np.array([0.2]), propto=False) == pytest.approx(want, rel=1e-14)


def test_cumsum_read_by_a_reduction_and_a_gather():
    """The running sums are computed once per term whoever reads them: a sum's
    second pass and logsumexp read them again, a gather reads them elsewhere
    than the row; their adjoints are swept back after every reader's (the
    sweep ran before the sum's pass when each read set up its own, and lost
    its contribution). Gradient against finite differences, twin, per-sample rows."""
    rng = np.random.default_rng(12)
    m = ld.Model()
    a, d = m.param("a"), m.param("d", ld.Normal(0, 2), shape=6)
    x = m.data("x", rng.normal(size=6))
    c = ld.cumsum(d * a + x)
    m.potential("extra", 0.1 * ld.tanh(ld.sum(c)) + ld.logsumexp(c))
    m.observe("y", ld.Normal(c + ld.cumsum(x)[m.data("g", np.array([5, 0, 2, 2, 1, 3]))], 1.0),
              rng.normal(size=6))
    density, twin = m.compile(), m.compile(backend="python")
    for _ in range(3):
        theta = rng.normal(size=density.dim)
        check_gradient(density, theta, rng)
        np.testing.assert_allclose(twin.log_density_gradient(theta)[1], density.log_density_gradient(theta)[1],
                                   rtol=1e-11)
        per_sample_rows(density, theta, "y")
