"""print(model), its HTML and graphviz forms (logdens.show, logdens.graph)."""

import sys

import numpy as np
import pytest

import logdens as ld
from logdens import show
from logdens.evaluate import evaluate

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools():
    m = ld.Model(coords={"school": list("ABCDEFGH")})
    mu = m.param("mu", ld.Normal(0, 5))
    tau = m.param("tau", ld.HalfCauchy(5))
    z = m.param("z", ld.Normal(0, 1), dims="school")
    theta = m.deterministic("theta", mu + tau * z, dims="school")
    sigma = m.data("sigma", SIGMA)
    m.observe("y", ld.Normal(theta, sigma), Y, dims="school")
    return m


EIGHT_SCHOOLS = """\
Model: 10 parameters (unconstrained dim 10)
  mu       ~ Normal(0, 5)           real
  tau      ~ HalfCauchy(5)          nonnegative
  z[8]     ~ Normal(0, 1)           real, dims=(school,)
  sigma[8]   data real
  theta[8] = mu + tau * z           deterministic, dims=(school,)
  y[8]     ~ Normal(theta, sigma)   observed, dims=(school,)"""


def test_print_model_exact_text():
    m = eight_schools()
    assert str(m) == repr(m) == EIGHT_SCHOOLS


def mixed_model():
    """Every kind of line: flat, bounded and simplex parameters, an index, a matrix,
    a potential, an observed data expression."""
    m = ld.Model()
    w = m.param("w", shape=3, constraint=ld.simplex)
    a = m.param("a", shape=2)
    s = m.param("s", ld.Uniform(0, 2))
    g = m.data("g", np.array([0, 1, 1, 0, 1]), dims="obs")
    X = m.data("X", np.ones((5, 2)))
    y = m.data("y_values", np.zeros(5))
    mu = m.deterministic("mu", a[g] - (a[g] - s) + X @ a, dims="obs")
    m.potential("F", -(ld.sum(w) - 1.0) ** 2)
    m.observe("y", ld.Normal(mu, s), y)
    return m


def test_every_kind_of_line():
    text = str(mixed_model()).splitlines()
    assert text[0] == "Model: 6 parameters (unconstrained dim 5)"  # a simplex of 3 has 2
    assert [line.split()[0] for line in text[1:]] == ["w[3]", "a[2]", "s", "g[5]", "X[5,", "y_values[5]",
                                                      "mu[5]", "F", "y[5]"]
    lines = {line.split()[0]: " ".join(line.split()) for line in text[1:]}
    assert lines["w[3]"] == "w[3] ~ flat simplex"
    assert lines["a[2]"] == "a[2] ~ flat real"
    assert lines["s"] == "s ~ Uniform(0, 2) interval(0, 2)"
    assert lines["g[5]"] == "g[5] data int dims=(obs,)"
    assert lines["mu[5]"] == "mu[5] = a[g] - (a[g] - s) + X @ a deterministic, dims=(obs,)"
    assert lines["F"] == "F = -(sum(w) - 1) ** 2 potential"
    assert lines["y[5]"] == "y[5] ~ Normal(mu, s) observed y_values"


def test_compiled_density_shows_current_lengths():
    density = eight_schools().compile()
    assert repr(density) == EIGHT_SCHOOLS.replace("Model:", "LogDensity:")
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    x = m.data("x", np.zeros(3))
    m.deterministic("shifted", x + mu)
    m.observe("y", ld.Normal(mu + x, 1.0), np.zeros(3))
    density = m.compile()
    density.set_data(x=np.zeros(7), y=np.ones(7))
    assert [line.split()[0] for line in repr(density).splitlines()[1:]] == ["mu", "x[7]", "shifted[7]", "y[7]"]


# Expressions whose parentheses matter; the printed text, evaluated as Python,
# must give what the model computes (so no needed parenthesis is dropped).
A, B = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.7, -0.4])
CASES = [
    (lambda a, b, c: a - (b - c), "a - (b - c)"),
    (lambda a, b, c: (a - b) - c, "a - b - c"),
    (lambda a, b, c: a / (b * c), "a / (b * c)"),
    (lambda a, b, c: (a + b) * c, "(a + b) * c"),
    (lambda a, b, c: -(a + b), "-(a + b)"),
    (lambda a, b, c: -a ** 2, "-a ** 2"),
    (lambda a, b, c: (-a) ** 2, "(-a) ** 2"),
    (lambda a, b, c: c ** (b ** 2), "c ** b ** 2"),
    (lambda a, b, c: (c ** b) ** 2, "(c ** b) ** 2"),
    (lambda a, b, c: 2 ** -c, "2 ** (-c)"),
    (lambda a, b, c: -3 * (a + 1), "-3 * (a + 1)"),
    (lambda a, b, c: ld.exp(a / 2) + ld.logaddexp(b, c), "exp(a / 2) + logaddexp(b, c)"),
    (lambda a, b, c: ld.sum(a * b) / 4, "sum(a * b) / 4"),
    (lambda a, b, c: a[1:] * b[:2], "a[1:] * b[:2]"),
    (lambda a, b, c: a[::2] - 0.25, "a[::2] - 0.25"),
]


@pytest.mark.parametrize("build, expected", CASES, ids=[c[1] for c in CASES])
def test_expression_text_keeps_python_meaning(build, expected):
    m = ld.Model()
    a, b = m.param("a", shape=3), m.param("b", shape=3)
    c = m.param("c", ld.HalfNormal(1))
    node = build(a, b, c)
    assert show.ExprPrinter()(node) == expected
    values = {"a": A, "b": B, "c": np.float64(1.3)}
    namespace = {**values, "exp": np.exp, "logaddexp": np.logaddexp, "sum": np.sum}
    np.testing.assert_allclose(eval(expected, namespace), evaluate(node, values), rtol=1e-15)


def test_long_shared_expressions_are_cut():
    m = ld.Model()
    x = m.param("x")
    for _ in range(40):  # 2**40 leaves if written out
        x = x * x + x
    assert "..." in str(show.ExprPrinter()(x)) and len(show.ExprPrinter()(x)) <= show.MAX_CHARS


def test_html_lists_every_name():
    html = eight_schools()._repr_html_()
    assert html.startswith("<table>") and "10 parameters" in html
    for cell in ("mu", "tau", "z[8]", "theta[8]", "sigma[8]", "y[8]", "HalfCauchy(5)",
                 "real, dims=(school,)", "mu + tau * z"):
        assert f">{cell}</td>" in html, cell
    assert "Normal(theta, sigma)" in eight_schools().compile()._repr_html_()


def test_graphviz_source():
    pytest.importorskip("graphviz")
    source = eight_schools().to_graphviz().source
    for line in ('mu [label="mu\n~\nNormal" shape=ellipse]',
                 'sigma [label="sigma\n~\nData" fillcolor=white shape=box style="rounded, filled"]',
                 'theta [label="theta\n~\nDeterministic" shape=box]',
                 'y [label="y\n~\nNormal" fillcolor=lightgrey shape=ellipse style=filled]',
                 'subgraph "cluster_school (8)" {', 'label="school (8)"',
                 "mu -> theta", "tau -> theta", "z -> theta", "theta -> y", "sigma -> y"):
        assert line in source, line
    # z, theta and y in the school plate; sigma has no dims: a plate of its own length
    school = source.split('subgraph "cluster_school (8)" {')[1].split("}")[0]
    assert all(f"\t\t{name} [" in school for name in ("z", "theta", "y"))
    assert "sigma [" not in school and "subgraph cluster_8 {" in source
    assert source.count("->") == 5


def test_graphviz_edges_through_index_and_potential():
    pytest.importorskip("graphviz")
    source = mixed_model().to_graphviz().source
    for edge in ("a -> mu", "s -> mu", "g -> mu", "X -> mu", "w -> F", "s -> y", "mu -> y", "y_values -> y"):
        assert edge in source, edge
    assert source.count("->") == 8
    assert 'F [label="F\n~\nPotential" shape=octagon]' in source


def test_graphviz_missing_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz now raises ImportError
    with pytest.raises(ImportError, match=r"pip install graphviz .*logdens\[viz\]"):
        eight_schools().to_graphviz()


def test_comparisons_are_shown_as_python_reads_them():
    """Python chains ``a < b < c``; a comparison of a comparison keeps its parentheses."""
    from logdens.show import ExprPrinter
    m = ld.Model()
    a, b, c = m.param("a"), m.param("b"), m.param("c")
    # a printer per expression: its memo is keyed by node identity, for one model's live nodes
    assert ExprPrinter()((a < b) < c) == "(a < b) < c"
    assert ExprPrinter()(a + 1 < b * 2) == "a + 1 < b * 2"
    assert ExprPrinter()(ld.where(a >= 0.5, a, -a)) == "where(a >= 0.5, a, -a)"


def test_transposes_and_products_keep_their_parentheses():
    m = ld.Model()
    s = m.param("s", ld.HalfNormal(1), shape=2)
    c = m.param("c", ld.LKJCholesky(2, 2.0))
    m.deterministic("D", ld.diag_pre_multiply(s, c))
    m.deterministic("E", (s * c + c).T)
    m.deterministic("F", c @ c.T + c)
    text = repr(m)
    assert "D[2, 2] = (s * c.T).T" in text and "E[2, 2] = (s * c + c).T" in text and "F[2, 2] = c @ c.T + c" in text


def test_expression_bounds_and_mixtures_in_the_listing_and_graph():
    """A bound that is an expression is printed as one and is an edge of the graph;
    a Mixture prior and a Mixture observation are a parameter and an observed node."""
    m = ld.Model()
    a = m.param("a", ld.Uniform(0, 1))
    m.param("b", constraint=ld.interval(0, 1 - a))
    w = m.param("w", ld.Uniform(0, 1))
    m.param("x", ld.Mixture([w, 1 - w], [ld.Normal(0, 1), ld.Normal(3, 1)]))
    m.observe("y", ld.Mixture([0.5, 0.5], [ld.Normal(a, 1), ld.Normal(w, 1)]), np.zeros(4))
    line = next(row for row in repr(m).splitlines() if row.startswith("  b "))
    assert line.split() == ["b", "~", "flat", "interval(0,", "1", "-", "a)"]
    pytest.importorskip("graphviz")
    source = m.to_graphviz().source
    for line in ("a -> b", "w -> x", "a -> y", "w -> y", 'x [label="x\n~\nMixture" shape=ellipse]',
                 'y [label="y\n~\nMixture" fillcolor=lightgrey shape=ellipse style=filled]'):
        assert line in source, line
    assert source.count("->") == 4 and "Potential" not in source
