"""logdens.rules: a rule for every node type, how each reads its children, the
shared walks, and the queries code generation asks of them."""

import numpy as np
import pytest

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
