"""logdens.rules: a rule for every node type, how each reads its children, the
shared walks, and the queries code generation asks of them."""

import numpy as np
import pytest
from arviz_base import from_dict

import logdens as ld
from logdens import expr as ex
from logdens import gp, linalg, scans
from logdens import rules
from logdens.layout import Layout
from logdens.rules import AT_ITS_ROW, AT_ROW, GATHERED, INDEX, ONE_PER_ROW, PREFIX, SHIFTED, WHOLE


def _nodes():
    """One node of each type, by type name."""
    m = ld.Model()
    a, s = m.param("a", shape=4), m.param("s")
    X, g = m.data("X", np.ones((3, 4))), m.data("g", np.array([0, 2, 3]))
    return {"Param": a, "Data": X, "Const": ex.Const(2.0), "Unary": ld.exp(a), "Binary": a * s,
            "Gather": a[g], "Slice": a[1:], "MatVec": X @ a, "Sum": ld.sum(a), "Element": a[-1],
            "LogPdf": ld.Normal(s, 2.0).logpdf(a), "Length": ex.Length(a),
            "LogSumExp": ld.logsumexp(a), "Ternary": ld.where(a > s, a, 0.0),
            "Cumsum": ld.cumsum(a), "MatMul": X @ ld.exp(a), "Reduce": ld.sum(X * a, axis=1),
            "LogSoftmax": ld.log_softmax(a), "Transpose": X.T, "Take": X[:, 1], "Reshape": a[:, None], "SliceAxis": X[:, 1:],
            "Cholesky": ld.cholesky(ld.add_diag(X.T @ X, s)), "AddDiag": ld.add_diag(X.T @ X, s),
            "GPCov": ld.gp.exp_quad(g, s, 1.0), "SolveTriangular": ld.solve_triangular(X.T @ X, a),
            "CholeskyLogDet": ld.cholesky_logdet(X.T @ X), "Stack": ld.stack([s, s * s]),
            "Concatenate": ld.concatenate([a, a * s]), **_scan_nodes(a, s)}


def _scan_nodes(a, s):
    """A scan with outputs, and its carry placeholder."""
    carries, outputs = ld.scan(lambda c, x: (s * c + x, c * c), a[0], a)
    return {"Scan": carries, "ScanOutputs": outputs, "Placeholder": carries.carry}


def test_every_node_type_has_a_rule():
    modules = (ex, linalg, gp, scans)  # every module that defines expression node types
    types = {c for module in modules for c in vars(module).values()
             if isinstance(c, type) and issubclass(c, ex.Expr) and c is not ex.Expr}
    assert types == set(rules.RULES) and {t.__name__ for t in types} == set(_nodes())


def test_an_unknown_node_type_is_a_type_error():
    class Custom(ex.Expr):
        pass

    with pytest.raises(TypeError, match="no rule for expression node type Custom"):
        rules.rule(Custom())


@pytest.mark.parametrize("kind, reads", [
    ("Param", ()), ("Data", ()), ("Const", ()), ("Unary", (AT_ROW,)), ("Binary", (AT_ROW, AT_ROW)),
    ("Gather", (GATHERED, INDEX)), ("Slice", (SHIFTED,)), ("MatVec", (AT_ROW, WHOLE)), ("Sum", (WHOLE,)),
    ("Element", (WHOLE,)), ("LogPdf", (AT_ROW, AT_ROW, AT_ROW)), ("Length", (WHOLE,)), ("LogSumExp", (WHOLE,)),
    ("Ternary", (AT_ROW, AT_ROW, AT_ROW)), ("Cumsum", (PREFIX,)), ("MatMul", (AT_ROW, WHOLE)),
    ("Reduce", (AT_ROW,)), ("LogSoftmax", (AT_ROW,)), ("Transpose", (WHOLE,)), ("Take", (AT_ROW,)),
    ("Reshape", (AT_ROW,)), ("SliceAxis", (AT_ROW,)),
])
def test_access_kinds_of_each_node_type(kind, reads):
    node = _nodes()[kind]
    assert rules.rule(node).reads(node) == reads and len(reads) == len(node.children)


def test_attributes_of_each_node_type():
    names = ("param", "data", "fixed", "elementwise", "reduces", "counts")
    flags = {kind: {f for f in names if getattr(rules.rule(n), f)}
             for kind, n in _nodes().items()}
    assert flags == {"Param": {"param"}, "Data": {"data", "fixed"}, "Const": {"fixed"},
                     "Unary": {"elementwise"}, "Binary": {"elementwise"}, "Gather": set(),
                     "Slice": set(), "MatVec": set(), "Sum": {"reduces"}, "Element": set(),
                     "LogPdf": {"elementwise"}, "Length": {"counts"},
                     "LogSumExp": {"reduces"}, "Ternary": {"elementwise"},
                     "Cumsum": {"reduces"}, "MatMul": set(), "Reduce": set(), "LogSoftmax": set(),
                     "Transpose": set(), "Take": set(), "Reshape": set(), "SliceAxis": set(), "Cholesky": set(), "AddDiag": set(), "GPCov": set(),
                     "SolveTriangular": set(), "CholeskyLogDet": set(), "Scan": set(), "ScanOutputs": set(),
                     "Placeholder": set(), "Stack": set(), "Concatenate": set()}
    assert {kind for kind, n in _nodes().items() if rules.rule(n).shaped_only} == {
        "MatMul", "Reduce", "LogSoftmax", "Transpose", "Take", "Reshape", "SliceAxis", "Cholesky", "AddDiag", "GPCov",
        "SolveTriangular", "CholeskyLogDet", "Scan", "ScanOutputs", "Placeholder", "Stack", "Concatenate"}
    whole = {"Cholesky", "AddDiag", "GPCov", "SolveTriangular", "CholeskyLogDet", "MatVec", "MatMul", "Scan",
             "ScanOutputs", "Stack", "Concatenate"}
    assert {kind for kind, n in _nodes().items() if tuple(rules.rule(n).whole_operands(n))} == whole


def test_fold_visits_a_shared_sub_expression_once_and_deeper_than_the_stack():
    m = ld.Model()
    x = m.param("x")
    node, calls = x, []
    for _ in range(3000):  # 2**3000 paths; and deeper than Python's recursion limit
        node = node + node
    count = rules.fold(node, lambda n, below: calls.append(n) or 1 + sum(below))
    assert len(calls) == 3001 and count == 2 ** 3001 - 1


def test_visits_each_node_once_per_context_in_depth_first_order():
    m = ld.Model()
    a = m.param("a", shape=3)
    g = m.data("g", np.array([0, 1, 1]))
    e = ld.exp(a)
    term = e + e[g]  # e read at the row and, through the gather, at other rows
    seen = list(rules.visits([term], True, lambda row, access: row and access in AT_ITS_ROW))
    assert seen == [(term, True), (e, True), (a, True), (term.children[1], True),
                    (e, False), (a, False), (g, True)]


def _term(build):
    """The observed term ``y`` of a model ``build(m)`` makes, and its layout."""
    m = ld.Model()
    build(m)
    return next(t for t in m.terms if t.name == "y"), Layout(m)


def _by_element(build):
    term, layout = _term(build)
    return (rules.params_read_by_element(layout, term, AT_ITS_ROW),
            rules.params_read_by_element(layout, term, ONE_PER_ROW))


Y3 = np.array([0.1, 0.2, 0.3])
G = np.array([0, 2, 2])


@pytest.mark.parametrize("build, own_row, one_per_row", [
    (lambda m: m.observe("y", ld.Normal(m.param("mu", shape=3), 1.0), Y3), {"mu"}, {"mu"}),
    (lambda m: m.observe("y", ld.Normal(m.param("z", shape=3)[m.data("g", G)], 1.0), Y3), set(), {"z"}),
    # a gather of an expression: z one element per row, the scalars whole
    (lambda m: m.observe("y", ld.Normal((m.param("mu") + m.param("s") * m.param("z", shape=3))[m.data("g", G)],
                                        1.0), Y3), set(), {"z"}),
    (lambda m: m.observe("y", ld.Normal(m.param("a", shape=4)[1:], 1.0), Y3), set(), {"a"}),
    (lambda m: m.observe("y", ld.Normal(m.data("X", np.ones((3, 2))) @ m.param("beta", shape=2), 1.0), Y3),
     set(), set()),
    (lambda m: m.observe("y", ld.Normal(ld.sum(m.param("w", shape=2)) + m.param("mu", shape=3), 1.0), Y3),
     {"mu"}, {"mu"}),
    # a simplex (an event transform) is never read one element at a time
    (lambda m: m.observe("y", ld.Normal(m.param("p", constraint=ld.simplex, shape=3), 1.0), Y3), set(), set()),
])
def test_params_read_by_element(build, own_row, one_per_row):
    assert _by_element(build) == (own_row, one_per_row)


def test_params_read_by_element_with_a_shared_sub_expression():
    """``e`` is read at the row and through a gather: one element per row, but not
    only at the row. A walk that visits ``e`` once whatever the context misses it."""
    def build(m):
        e = 2.0 * m.param("mu", shape=3)
        m.observe("y", ld.Normal(e + e[m.data("g", G)], 1.0), Y3)
    assert _by_element(build) == (set(), {"mu"})


def test_elementwise_use():
    m = ld.Model()
    mu, s = m.param("mu", shape=3), m.param("s")
    g = m.data("g", G)
    assert rules.elementwise_use(ld.exp(mu) * s + 1.0, "mu")
    assert rules.elementwise_use(s * 2.0, "mu")  # not read at all
    assert not rules.elementwise_use(mu + ld.sum(mu), "mu")
    assert not rules.elementwise_use(ld.exp(mu)[g], "mu")
    assert not rules.elementwise_use(mu[0:2], "mu")
    assert not rules.elementwise_use(m.data("X", np.ones((2, 3))) @ mu, "mu")
    shared = ld.exp(mu)
    assert not rules.elementwise_use(shared + shared[g], "mu")


def test_reads_outside():
    m = ld.Model()
    mu, s = m.param("mu", shape=3), m.param("s")
    total = ld.sum(ld.exp(mu))
    assert not rules.reads_outside(total * s, total, "mu")
    assert rules.reads_outside(total * s + mu[0:1], total, "mu")
    assert rules.reads_outside(total * s, total, "s")
    assert not rules.reads_outside(total, total, "mu")


def test_has_reduction():
    m = ld.Model()
    w, z = m.param("w", shape=2), m.param("z", shape=3)
    g = m.data("g", G)
    assert not rules.has_reduction(ld.exp(z)[g] + 1.0)
    assert rules.has_reduction(ld.sum(w) + 1.0)
    assert rules.has_reduction((ld.sum(w) + z)[g])


# ----- batched evaluation: a batch of draws equals a loop over single draws ----

N = 4


class _Pool:
    """The operands of a random model, parameters and data of each shape; each
    accessor picks one at random, so that a node reads draws, data or both."""

    def __init__(self, m, rng):
        self.rng, data = rng, np.random.default_rng(1)
        self.s, self.p = m.param("s", ld.Normal(0, 1)), m.param("p", ld.HalfNormal(1.0))
        self.v, self.W = m.param("v", ld.Normal(0, 1), shape=N), m.param("W", ld.Normal(0, 1), shape=(N, N))
        self.r = m.param("r", ld.HalfNormal(1.0), shape=2)
        self.x, self.X = m.data("x", data.normal(size=N)), m.data("X", data.normal(size=(N, N)))
        self.inputs, self.idx = m.data("inputs", data.uniform(0, 2, (N, 2))), m.data("idx", np.array([3, 0, 0, 2]))

    def pick(self, *options):
        return options[self.rng.integers(len(options))]

    def scalar(self):
        return self.pick(self.s, self.p, 0.7, self.x[1])

    def positive(self):
        return self.pick(self.p, 1.3, ld.exp(self.x[0]))

    def vector(self):
        return self.pick(self.v, self.x, ld.tanh(self.v))

    def matrix(self):
        return self.pick(self.W, self.X)

    def factor(self):
        """The Cholesky factor of a GP covariance of the inputs (scalar or ARD length scales)."""
        K = self.pick(ld.gp.exp_quad, ld.gp.matern32)(self.inputs, self.positive(), self.pick(self.r, 1.0, self.p))
        return ld.cholesky(ld.add_diag(K, 0.1))


def _nested_scan(P, a):
    """An outer scan whose step is an inner scan's last carry."""
    def outer(c, x):
        return ld.scan(lambda c2, y: 0.5 * c2 + y * x, c, P.vector(), keep="last")
    return ld.scan(outer, P.scalar(), a)


def _ode(P, a):
    """An ODE solver's shape: a vector carry, each step the last of an inner scan's substeps."""
    def step(c, _):
        return ld.scan(lambda y, __: y - 0.1 * P.vector() * y, c, length=2, keep="last")
    return ld.scan(step, a, length=3)[-1]


#: Node kinds, each a function (pool, vector of length N) -> vector of length N.
_KINDS = {
    "elementwise": lambda P, a: ld.tanh(a) * P.scalar() + P.vector(),
    "where": lambda P, a: ld.where(a > P.scalar(), a, P.vector()),
    "gather": lambda P, a: a[P.idx],
    "slice_concatenate": lambda P, a: ld.concatenate([a[1:], a[:1]]),
    "element": lambda P, a: a * a[-1],
    "matvec": lambda P, a: 0.5 * P.X @ a,
    "matmul": lambda P, a: 0.5 * P.matrix() @ a,
    "vecmat": lambda P, a: 0.5 * a @ P.matrix(),
    "sum_axis": lambda P, a: ld.sum(a[:, None] * P.matrix(), axis=P.pick(0, 1)),
    "logsumexp_axis": lambda P, a: ld.logsumexp(a[:, None] * P.matrix(), axis=P.pick(0, 1)),
    "cumsum": lambda P, a: ld.cumsum(a),
    "sum": lambda P, a: a - ld.sum(a[:, None] * P.matrix()),
    "mean": lambda P, a: a - ld.mean(a),
    "logsumexp": lambda P, a: a - ld.logsumexp(a),
    "log_softmax": lambda P, a: ld.log_softmax(a),
    "cholesky": lambda P, a: P.factor() @ a,
    "solve_triangular": lambda P, a: ld.solve_triangular(P.factor(), a),
    "cholesky_logdet": lambda P, a: a * ld.cholesky_logdet(P.factor()),
    "add_diag": lambda P, a: ld.add_diag(0.3 * a[:, None] * P.matrix(), P.scalar()) @ P.vector(),
    "scan": lambda P, a: ld.scan(lambda c, x: 0.5 * c + x, P.scalar(), a),
    "scan_outputs": lambda P, a: ld.scan(lambda c, x: (0.5 * c + x, c * x), a[0], a)[1],
    "scan_last": lambda P, a: ld.scan(lambda c, _: 0.5 * c + P.vector(), a, length=3, keep="last"),
    "nested_scan": _nested_scan,
    "ode": _ode,
    "stack": lambda P, a: ld.stack([a[0], ld.sum(a), P.scalar(), a[2] * a[3]]),
    "reshape_take": lambda P, a: ld.concatenate([a.reshape((2, 2))[:, 1], a.reshape(2, 2)[1]]),
    "transpose": lambda P, a: 0.5 * (a[:, None] * P.matrix()).T @ P.vector(),
    "slice_axis": lambda P, a: ld.sum((a[:, None] * P.matrix())[1:], axis=0),
    "logpdf": lambda P, a: ld.Normal(a, P.positive()).logpdf(P.vector()),
}


def _random_model(seed, kind):
    """A model whose deterministics ``d`` (a vector), ``dm`` (a matrix) and ``ds``
    (a scalar) chain ``kind`` and up to two more node kinds, all on operands
    picked at random."""
    rng = np.random.default_rng(seed)
    m = ld.Model()
    P = _Pool(m, rng)
    kinds = list(rng.choice(list(_KINDS), rng.integers(3)))
    kinds.insert(rng.integers(len(kinds) + 1), kind)
    d = P.vector()
    for k in kinds:
        d = _KINDS[k](P, d)
    m.deterministic("d", d)
    m.deterministic("dm", d[:, None] * P.matrix())
    m.deterministic("ds", ld.sum(d))
    return m


def _same(batch, singles, atol=1e-9):
    for name, values in batch.items():
        np.testing.assert_allclose(values, [s[name] for s in singles], rtol=1e-9, atol=atol, err_msg=name)


@pytest.mark.parametrize("kind", list(_KINDS))
def test_batched_evaluation_of_random_models_equals_a_loop_over_single_draws(kind):
    """``constrain_batch`` against ``constrain`` of each draw; posterior and prior
    predictive draws of ``y_d ~ Normal(d, 1e-9)`` (so each draw is ``d`` at its
    parameter draw, to 1e-8) and their deterministics against ``evaluate`` of
    each draw: their shapes and their values."""
    from logdens.evaluate import evaluate
    m = _random_model(list(_KINDS).index(kind), kind)
    lp = m.compile(backend="python")  # constrain needs no compiled kernel
    thetas = np.random.default_rng(2).normal(size=(3, lp.dim)) * 0.5
    batch = lp.constrain_batch(thetas)
    _same(batch, [lp.constrain(t) for t in thetas])
    names = list(m.deterministics)
    for name in names:
        m.observe(f"y_{name}", ld.Normal(m.deterministics[name], 1e-9), np.zeros(batch[name].shape[1:]))
    posterior = from_dict({"posterior": {k: batch[k][None] for k in m.params}})
    tree = ld.sample_posterior_predictive(posterior, m, seed=0, var_names=[*names, *(f"y_{n}" for n in names)])
    drawn = {k: v.values[0] for k, v in tree.posterior_predictive.items()}
    _same({k: drawn[k] for k in names}, [lp.constrain(t) for t in thetas])
    _same({k: drawn[f"y_{k}"] for k in names}, [lp.constrain(t) for t in thetas], atol=1e-7)
    prior = ld.sample_prior_predictive(m, draws=3, seed=0)
    data = {name: node.value for name, node in m.data_nodes.items()}
    singles = [{k: evaluate(e, {**data, **{p: prior.prior[p].values[0, i] for p in m.params}})
                for k, e in m.deterministics.items()} for i in range(3)]
    _same({k: prior.prior[k].values[0] for k in names}, singles)
    _same({k: prior.prior_predictive[f"y_{k}"].values[0] for k in names}, singles, atol=1e-7)


def _latent_gp_and_ode():
    """Issue 36's models: ``f = cholesky(K) @ z`` with K a covariance of data, and
    an ODE solution as a scan whose step is an inner scan's last carry."""
    m = ld.Model()
    z, th = m.param("z", ld.Normal(0, 1), shape=6), m.param("th", ld.HalfNormal(1.0), shape=2)
    K = ld.add_diag(ld.gp.exp_quad(m.data("x", np.linspace(0, 5, 6)), 1.0, 1.0), 1e-6)
    m.deterministic("f", ld.cholesky(K) @ z)
    m.deterministic("ode", ld.scan(lambda c, _: ld.scan(lambda y, __: y - 0.1 * th * y, c, length=3, keep="last"),
                                   np.array([1.0, 0.5]), length=5))
    return m.compile(backend="python")


def test_batched_deterministics_of_a_latent_gp_and_an_ode_scan():
    """Both failed in constrain_batch, the first thing ld.nuts does after sampling
    ("input operand has more dimensions than allowed by the axis remapping",
    "cannot reshape array of size 2 into shape (2,2)")."""
    lp = _latent_gp_and_ode()
    thetas = np.random.default_rng(0).normal(size=(2, lp.dim))
    batch = lp.constrain_batch(thetas)
    assert batch["f"].shape == (2, 6) and batch["ode"].shape == (2, 5, 2)
    _same(batch, [lp.constrain(t) for t in thetas])


def test_batched_deterministics_take_the_lengths_of_new_data():
    m = ld.Model()
    a, b = m.param("a", ld.Normal(0, 1)), m.param("b", ld.Normal(0, 1))
    x = m.data("x", np.arange(3.0))
    m.deterministic("mu", a + b * x)
    m.observe("y", ld.Normal(a + b * x, 1.0), np.zeros(3))
    lp = m.compile(backend="python")
    lp.set_data(x=np.arange(5.0), y=np.zeros(5))
    thetas = np.array([[0.1, 0.2], [0.3, 0.4]])
    batch = lp.constrain_batch(thetas)
    assert batch["mu"].shape == (2, 5)
    _same(batch, [lp.constrain(t) for t in thetas])
