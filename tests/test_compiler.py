"""The lowered program (logdens.compiler): its statements, the emitters, and
parity with the engine's generated ``core`` (value and gradient at 1e-12)."""

import os
import sys

import numpy as np
import pytest

import logdens as ld
from logdens import engine
from logdens.compiler import NotLowered, Program, cpu_program, emit, gradient_program, ir
from logdens.distributions import constraints

import parity_gate

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
from engine_models import hierarchical, logistic, normal, poisson, potential  # noqa: E402


def eight_schools():
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5))
    tau = m.param("tau", ld.HalfCauchy(5))
    z = m.param("z", ld.Normal(0, 1), shape=8)
    m.observe("y", ld.Normal(mu + tau * z, np.array([15.0, 10, 16, 11, 9, 11, 10, 18])),
              np.array([28.0, 8, -3, 7, -1, 1, 18, 12]))
    return m


def reductions():
    """A log-sum-exp and running sums of parameters, in a potential and an observed term."""
    rng = np.random.default_rng(1)
    m = ld.Model()
    x, s = m.param("x", shape=6), m.param("s", ld.HalfNormal(1))
    running = ld.cumsum(x)  # one node in three terms: each computes and sweeps back its own
    m.potential("p", ld.logsumexp(x * s) + ld.sum(running ** 2) * 0.1)
    m.observe("y", ld.Normal(running * s, 1.0), rng.normal(size=6))
    m.observe("z", ld.Normal(running, 2.0), rng.normal(size=6))
    return m


def sums():
    """Sums of a vector parameter alone (one pass) and with a scalar inside (two)."""
    m = ld.Model()
    x, s, t = m.param("x", shape=7), m.param("s", ld.HalfNormal(1)), m.param("t", shape=5)
    m.potential("alone", -ld.square(ld.sum(ld.exp(-x))))
    m.potential("with_scalar", -ld.square(ld.sum(ld.exp(-s * t))))
    return m


def positions():
    """Gathers (one of a gather), slices, a constant position and an event-transformed (simplex) vector."""
    rng = np.random.default_rng(2)
    m = ld.Model()
    v = m.param("v", ld.Normal(0, 1), shape=10)
    w = m.param("w", constraint=constraints.simplex, shape=3)
    m.observe("c", ld.Normal(w[np.array([0, 1, 2, 2])], 1.0), np.array([0.1, 0.2, 0.3, 0.4]))
    m.observe("y", ld.Normal(v[1:] - v[:-1], 1.0), rng.normal(size=9))
    m.potential("q", ld.sum(ld.exp(v[2]) * v))
    group, rows = m.data("group", np.array([1, 2, 3])), m.data("rows", np.array([0, 2, 1, 1]))
    x = m.data("x", np.array([0.5, -1.0, 2.0]))
    m.observe("twice", ld.Normal((v[group] + x)[rows], 1.0), np.zeros(4))  # gathers of a gather and of data
    return m


def bounded():
    """An interval-bounded scalar, a positive vector, a mean (``len`` at run time) and a
    data-matrix product."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 3))
    m = ld.Model()
    r = m.param("r", ld.Uniform(-1, 2))
    b = m.param("b", ld.HalfNormal(1), shape=3)
    y = m.data("y", rng.normal(size=12))
    m.observe("obs", ld.Normal(X @ b + r, 1.0), y)
    m.potential("centre", -ld.square(ld.mean(y) - r))  # len(y) at run time
    return m


def engine_model(build):
    return lambda: build(50, np.random.default_rng(0))[0]


MODELS = {"eight_schools": eight_schools, "reductions": reductions, "sums": sums, "positions": positions, "bounded": bounded,
          **{f.__name__: engine_model(f) for f in (poisson, normal, potential, logistic, hierarchical)}}


@pytest.mark.parametrize("name", MODELS)
def test_the_program_equals_the_engine(name):
    """Value and gradient of the program's Python twin equal the engine's compiled
    ``core`` at 1e-12 (relative; the same arithmetic, rounding only)."""
    assert parity_gate.compare(MODELS[name]().compile(), points=3) is None


@pytest.mark.parametrize("name", ["eight_schools", "hierarchical"])
def test_the_numba_emitter_compiles_the_program(name):
    density = MODELS[name]().compile()
    module = emit.load(emit.source(cpu_program(density.model, density.layout), density.model, density.layout))
    theta = np.linspace(-1, 1, density.dim)
    grad = np.empty(density.dim)
    lp = module.core(theta, grad, density.fdata, density.idata, True)
    expected = density.log_density_gradient(theta)
    assert lp == pytest.approx(expected[0], rel=1e-12) and np.allclose(grad, expected[1], rtol=1e-12, atol=0)


def test_the_program_prints_one_statement_per_line_with_the_models_names():
    text = str(eight_schools().compile().program())
    assert text.splitlines()[0] == "core(theta, grad, fdata, idata, jacobian):"
    assert "map" in text and "over y[len(y)]" in text
    assert "call Normal.logpdf_grad" in text and "constrain tau (LowerBound)" in text
    assert "(mu + (tau * z))" not in text  # labels are in Value.label, shown by the emitter's comments
    assert "accumulate grad[" in text and "(own_row)" in text


def kinds(program, buffer_kind):
    """The accumulation kinds into buffers of ``buffer_kind`` in ``program``."""
    return {s.kind for s in program.statements()
            if isinstance(s, ir.Accumulate) and isinstance(s.dest, ir.Buffer) and s.dest.kind == buffer_kind}


def test_accumulations_say_who_else_adds_there():
    program = gradient_program(*engine.lower(positions()))  # before the CPU schedule's passes
    assert isinstance(program, Program) and isinstance(positions().compile().program(), Program)
    assert kinds(program, "aconstrained") == {"scatter"}  # w[index]: rows may collide
    assert kinds(program, "grad") == {"own_row", "shared", "scatter"}  # v[i], v[1:] at their rows; v[2] once; v[..][..]
    assert any(isinstance(s, ir.ConstrainAdjoint) for s in program.statements())


def test_products_and_gathers_at_the_rows_run_in_blocks():
    """The CPU schedule: X @ beta and a[idx] go through per-block buffers, so the
    rows read and write only at their own row."""
    density = MODELS["hierarchical"]().compile()
    blocked = [s for s in cpu_program(density.model, density.layout).statements() if isinstance(s, ir.Blocked)]
    assert blocked and all(isinstance(x, ir.BlockGather) for x in blocked[0].before)
    assert any(isinstance(x, ir.BlockScatter) for x in blocked[0].after)
    assert not any(isinstance(x, ir.Index) for x in blocked[0].body)
    blocked = [s for s in cpu_program(*engine_model_density("logistic")).statements() if isinstance(s, ir.Blocked)]
    assert isinstance(blocked[0].before[0], ir.BlockProduct) and isinstance(blocked[0].after[0], ir.BlockProductAdjoint)


def test_a_vector_whose_entries_one_map_writes_at_its_rows_is_assigned_not_zeroed():
    program = cpu_program(*engine_model_density("normal"))
    zero = next(s for s in program.statements() if isinstance(s, ir.Zero))
    assert zero.kept == ("mu",)
    assert any(isinstance(s, ir.Store) and s.buffer.kind == "grad" for s in program.statements())
    eight = cpu_program(*engine_model_density("eight_schools"))  # z: written by its prior, then added to
    assert next(s for s in eight.statements() if isinstance(s, ir.Zero)).kept == ("z",)
    adds = [s for s in eight.statements() if isinstance(s, ir.Accumulate) and s.at is not None
            and s.dest.kind == "grad" and s.dest.name == "z"]
    assert len(adds) == 1


def test_a_sum_of_one_vector_parameter_stores_its_derivatives_in_one_pass():
    maps = [s for s in cpu_program(*engine_model_density("sums")).body if isinstance(s, ir.Map)]
    fused = [m for m in maps if m.pair and m.seed is None and any(isinstance(x, ir.Store) for x in m.body)]
    assert len(fused) == 1  # x alone; the sum with the scalar s inside keeps its reverse map
    assert any(m.seed is not None and m.pair != fused[0].pair for m in maps)


def engine_model_density(name):
    density = MODELS[name]().compile()
    return density.model, density.layout


def test_reductions_are_maps_before_the_terms_and_swept_back_after():
    statements = gradient_program(*engine.lower(reductions())).statements()
    maps = [s for s in statements if isinstance(s, ir.Map)]
    assert any(s.backward for s in maps)  # the running sums' adjoints, last row first
    assert any(isinstance(s, ir.Accumulate) and s.op == "max" for s in statements)  # log-sum-exp's largest
    assert any(isinstance(s, ir.Workspace) for s in statements)


def test_nodes_not_lowered_yet_are_named():
    m = ld.Model()
    x = m.param("x", ld.Normal(0, 1), shape=3)
    s = m.param("s", ld.HalfNormal(1), shape=3)
    m.observe("y", ld.MvNormal(x, scale_tril=ld.cholesky(ld.add_diag(np.eye(3), s))), np.zeros((2, 3)))
    with pytest.raises(NotLowered, match="Cholesky is not in the lowered program yet"):
        m.compile().program()


def test_a_gathered_expression_is_computed_once_per_element_and_swept_back_once():
    """Hoisting (``cpu_schedule.hoist_gathers``): ``(mu + sigma * z)[group]`` is
    computed by a map over z's elements into a workspace before the rows, the
    rows gather it and scatter its adjoint, and a map after them sweeps the
    adjoints back through the expression once per element."""
    model, layout = engine_model_density("hierarchical")
    body = cpu_program(model, layout).body
    rows = next(k for k, s in enumerate(body) if isinstance(s, ir.Blocked))
    fill, sweep = body[rows - 3], body[rows + 1]  # (the adjoints' workspace and its zero in between)
    assert isinstance(fill, ir.Map) and isinstance(sweep, ir.Map) and fill.plate == sweep.plate
    assert fill.plate.length == ir.Size("param", "z")  # z's elements, not the data's rows
    assert [x.op for x in fill.body if isinstance(x, ir.Let)] == ["mul", "add"]
    h = fill.body[-1].buffer
    assert isinstance(fill.body[-1], ir.Store) and h.kind == "workspace"
    blocked = body[rows]
    assert [x.source for x in blocked.before] == [h]  # gathered like a parameter
    assert not any(isinstance(x, (ir.Partial, ir.Let)) and x.op in ("mul", "add") and x.out.label.startswith("(mu")
                   for x in blocked.body)
    assert not any(isinstance(x, ir.Load) and x.buffer.kind == "theta" for x in blocked.body)
    scattered = [x.dest for x in blocked.after if isinstance(x, ir.BlockScatter)]
    assert scattered and scattered[0].kind == "workspace"
    assert any(isinstance(x, ir.Load) and x.buffer == scattered[0] for x in sweep.body)
    assert any(isinstance(x, ir.Store) and x.buffer.kind == "grad" and x.buffer.name == "z" for x in sweep.body)
    value = cpu_program(model, layout, "value").body  # no gradient: the element map alone
    assert sum(isinstance(s, ir.Map) for s in value) == 1 and sum(isinstance(s, ir.Workspace) for s in value) == 1


def test_a_parameter_gathered_alone_is_not_hoisted():
    """``w[index]`` (a parameter's own elements) has nothing to compute once per element."""
    program = cpu_program(*engine_model_density("positions"))
    stored = {x.buffer.name for x in program.statements() if isinstance(x, ir.Store) and x.buffer.kind == "workspace"}
    assert len(stored) == 1  # the gather of the gather's expression, (v[group] + x), alone


def test_per_sample_rows_run_in_blocks_and_their_one_writers_assign():
    """Per-sample rows of ``X @ beta + alpha`` in blocks, as ``core``'s: the block's
    output rows are not zeroed for alpha and beta, whose one writer after the
    rows (the product's transpose, alpha's entry) assigns them; a gathered
    parameter's columns (z of the hierarchical model) are zeroed and added to."""
    model, layout = engine_model_density("logistic")
    program = cpu_program(model, layout, "per_sample", model.terms[-1])
    blocked = next(s for s in program.body if isinstance(s, ir.Blocked))
    zero = next(x for x in blocked.before if isinstance(x, ir.Zero))
    assert zero.buffer.kind == "rows" and set(zero.kept) == {"alpha", "beta"}
    assert {type(x) for x in blocked.after} == {ir.BlockProductAdjoint, ir.BlockScatter}
    assert all(x.assign and x.dest.kind == "rows" for x in blocked.after)
    model, layout = engine_model_density("hierarchical")
    blocked = next(s for s in cpu_program(model, layout, "per_sample", model.terms[-1]).body
                   if isinstance(s, ir.Blocked))
    assert next(x for x in blocked.before if isinstance(x, ir.Zero)).kept == ("b", "log_sigma", "mu")
    assert [x.assign for x in blocked.after if x.index is not None] == [False]  # z[group]: one column of z per row


# ----- values with event shape (compiler/events.py) ------------------------
def softmax_regression():
    """K = 3 classes from 4 features: logits X @ W + b per row, a prior on a matrix."""
    rng = np.random.default_rng(4)
    m = ld.Model()
    W, b = m.param("W", ld.Normal(0, 1), shape=(4, 3)), m.param("b", ld.Normal(0, 1), shape=3)
    m.observe("y", ld.CategoricalLogit(m.data("X", rng.normal(size=(30, 4))) @ W + b), rng.integers(0, 3, 30))
    return m


def network():
    """A 2-layer network (tanh hidden layer of 4), and log_softmax with a row-wise
    log-sum-exp in a potential."""
    rng = np.random.default_rng(5)
    m = ld.Model()
    W1, W2 = m.param("W1", ld.Normal(0, 1), shape=(3, 4)), m.param("W2", ld.Normal(0, 1), shape=(4, 2))
    X = m.data("X", rng.normal(size=(25, 3)))
    m.observe("y", ld.CategoricalLogit(ld.tanh(X @ W1) @ W2), rng.integers(0, 2, 25))
    m.potential("mix", ld.sum(ld.logsumexp(ld.log_softmax(X @ W1) * 2.0, axis=1)))
    return m


def multivariate():
    """MvNormal rows with a data Cholesky factor and a positive scale, and with a
    scaled correlation factor (LKJ); a Dirichlet prior on a simplex and
    Categorical draws of it."""
    rng = np.random.default_rng(6)
    L = np.linalg.cholesky(np.array([[1.0, 0.3, 0.1], [0.3, 2.0, 0.2], [0.1, 0.2, 1.5]]))
    m = ld.Model()
    mu, s = m.param("mu", ld.Normal(0, 1), shape=3), m.param("s", ld.HalfNormal(1), shape=3)
    m.observe("y", ld.MvNormal(mu * s, scale_tril=L), rng.normal(size=(20, 3)))
    corr = m.param("corr", ld.LKJCholesky(3, 2.0))  # a (3,) scale broadcast against a (3, 3) factor
    m.observe("z", ld.MvNormal(np.zeros(3), scale_tril=ld.diag_pre_multiply(s, corr)), rng.normal(size=(10, 3)))
    p = m.param("p", ld.Dirichlet(np.array([2.0, 1.0, 3.0])))
    m.observe("c", ld.Categorical(p), np.array([0, 1, 2, 2, 1]))
    return m


def event_positions():
    """A whole matrix's transpose, a constant position and a slice along a row's
    event, a whole matrix's row read element by element, and a reshape."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(20, 4))
    m = ld.Model()
    W, V = m.param("W", ld.Normal(0, 1), shape=(3, 4)), m.param("V", ld.Normal(0, 1), shape=(4, 3))
    m.observe("y", ld.Normal((m.data("X", X) @ W.T)[:, 1], 1.0), rng.normal(size=20))
    m.observe("z", ld.CategoricalLogit((m.data("X2", X) @ V)[:, 1:]), rng.integers(0, 2, 20))
    m.observe("w", ld.Normal(W[1], 1.0), rng.normal(size=4))
    m.potential("r", -ld.sum(ld.square(V.reshape((12,)))))
    b = m.param("b", ld.Normal(0, 1), shape=(3, 1))
    m.potential("broadcast", -ld.sum(ld.square(W * b)))  # each row's (4,) event times its (1,)
    return m


def ordered_regression():
    """``X @ beta`` in blocks of rows where the term's kernel is multivariate (ordered
    cutpoints), so X is stored row by row (the block product read it as columns)."""
    rng = np.random.default_rng(8)
    m = ld.Model()
    beta = m.param("beta", ld.Normal(0.0, 2.0), shape=2)
    c = m.param("c", ld.Normal(0.0, 5.0), shape=3, constraint=ld.ordered)
    m.observe("y", ld.OrderedLogistic(ld.matmul(m.data("x", rng.normal(size=(60, 2))), beta), c),
              rng.integers(0, 4, size=60))
    return m


EVENT_MODELS = {"softmax_regression": softmax_regression, "network": network, "multivariate": multivariate,
                "event_positions": event_positions, "ordered_regression": ordered_regression}


@pytest.mark.parametrize("name", EVENT_MODELS)
def test_terms_with_events_equal_the_engine(name):
    """Core, value, constants, pointwise and per-sample rows of the programs equal
    the engine's shaped lowering (``logdens.shaped``) at 1e-12."""
    assert parity_gate.compare(EVENT_MODELS[name]().compile(), points=2) is None


def test_a_softmax_regressions_program_prints_its_events():
    density = softmax_regression().compile()
    text = str(density.program())
    assert "f64[y][4] = view data:X[i" in text  # a row of X, one event per row
    assert "= workspace f64[3]" in text and "map j" in text  # the logits: 3 per row, element by element
    assert "call CategoricalLogit.logpdf_grad" in text and "partials += into %r" in text
    module = emit.load(emit.source(cpu_program(density.model, density.layout), density.model, density.layout))
    theta = np.linspace(-1, 1, density.dim)
    grad = np.empty(density.dim)
    lp = module.core(theta, grad, density.fdata, density.idata, True)  # compiled by numba
    expected = density.log_density_gradient(theta)
    assert lp == pytest.approx(expected[0], rel=1e-12) and np.allclose(grad, expected[1], rtol=1e-12, atol=0)
