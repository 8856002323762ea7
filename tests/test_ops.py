"""logdens.ops: each op's value and derivative templates, run as Python, against
its numpy function and central differences of it; the table against the
functions and operators users write.

Tolerances. Values: rtol 1e-12, both sides being within a few ulp of the
truth (``vmath``, ``special``, ``math`` and numpy/scipy; ``lgamma`` and
``digamma`` at negative arguments agree to about 1e-14). Derivatives: the
difference quotient of the numpy function with h = 1e-6 * max(1, |x|), less
near a singular point (a bound of the domain, a pole), has a truncation error
of about (h / x)^2 relative and a rounding error of about eps * |f| / h
absolute (each value is within a few ulp); we allow rtol 1e-6 plus
8 eps |f| / h. Where the derivative is tiny beside the value (``logistic``
and ``erf`` towards +inf, ``tanh`` at +-8) that second part dominates and the
check is weak: the quotient cannot do better in float64.
"""

import inspect
import math

import numpy as np
import pytest

import logdens as ld

from engine_helpers import check_gradient
from logdens import expr as ex
from logdens.distributions import special, vmath
from logdens.ops import OPS

EPS = np.finfo(float).eps

# Points in each op's domain, tails included (one tuple per call).
POINTS = {
    "neg": [(-3.0,), (0.5,), (1e3,)],
    "exp": [(-30.0,), (-1.0,), (0.3,), (5.0,), (300.0,)],
    "log": [(1e-8,), (0.5,), (3.0,), (1e300,)],
    "log1p": [(-0.999,), (-0.5,), (1e-10,), (2.0,), (1e10,)],
    "expm1": [(-40.0,), (-1e-8,), (1e-10,), (2.0,), (50.0,)],
    "sqrt": [(1e-10,), (0.25,), (4.0,), (1e12,)],
    "square": [(-1e3,), (-0.5,), (3.0,)],
    "abs": [(-2.5,), (3.0,)],
    "logistic": [(-40.0,), (-3.0,), (0.2,), (15.0,)],
    "logit": [(1e-10,), (0.3,), (0.5,), (0.9,), (1.0 - 1e-6,)],
    "log_logistic": [(-40.0,), (-2.0,), (0.5,), (30.0,)],
    "softplus": [(-40.0,), (-2.0,), (0.5,), (30.0,), (800.0,)],
    "tanh": [(-8.0,), (-0.5,), (0.3,), (5.0,)],
    "sin": [(-40.0,), (-1.0,), (1e-9,), (2.5,), (100.0,)],
    "cos": [(-40.0,), (-1.0,), (1e-9,), (2.5,), (100.0,)],
    "relu": [(-3.0,), (-1e-3,), (0.7,), (1e8,)],
    "lgamma": [(1e-8,), (0.5,), (3.5,), (1e6,), (-2.5,)],
    "digamma": [(1e-6,), (0.5,), (7.3,), (1e8,), (-2.5,)],
    "erf": [(-6.0,), (-0.5,), (1e-8,), (1.2,), (4.0,)],
    "add": [(-1.5, 2.0), (1e8, -3.0)],
    "sub": [(-1.5, 2.0), (1e8, -3.0)],
    "mul": [(-1.5, 2.0), (1e8, -3e-5)],
    "div": [(3.0, -2.0), (1e-3, 7.0), (-5.0, 1e-4)],
    "pow": [(2.0, 3.0), (0.5, -1.5), (10.0, 0.5), (1e-3, 2.5)],
    "logaddexp": [(-1.0, 2.0), (-800.0, -800.0), (30.0, -30.0), (0.5, 0.5), (700.0, 700.5)],
    "lt": [(-1.0, 2.0), (3.0, 1.0)],
    "le": [(-1.0, 2.0), (3.0, 1.0)],
    "gt": [(-1.0, 2.0), (3.0, 1.0)],
    "ge": [(-1.0, 2.0), (3.0, 1.0)],
    "eq": [(-1.0, 2.0), (1.5, 1.5)],
    "ne": [(-1.0, 2.0), (1.5, 1.5)],
    "where": [(1.0, 2.5, -3.0), (0.0, 2.5, -3.0)],
    "broadcast_like": [(1.5, -2.0), (-3.0, 0.0)],
    "maximum": [(1.5, -2.0), (-3.0, 0.5)],
    "minimum": [(1.5, -2.0), (-3.0, 0.5)],
}
# Per argument, the singular points (bounds of the domain, poles) that the step
# must stay well inside of.
SINGULAR = {"log": [(0.0,)], "log1p": [(-1.0,)], "sqrt": [(0.0,)], "logit": [(0.0, 1.0)],
            "lgamma": [(0.0, -2.0, -3.0)], "digamma": [(0.0, -2.0, -3.0)], "div": [(), (0.0,)],
            "pow": [(0.0,), ()]}
NAMESPACE = {"math": math, "special": special, "vmath": vmath}
CASES = [(name, point) for name, points in POINTS.items() for point in points]


def _render(template, args, value=None):
    """``template`` run as Python with the arguments (and value) bound to names."""
    names = {f"x{k}": float(a) for k, a in enumerate(args)}
    code = template.format(*names, v="v")
    return eval(code, dict(NAMESPACE), {**names, "v": value})


def _step(name, k, x):
    """h = 1e-6 * max(1, |x|), or 1e-6 of the distance to a nearer singular point."""
    h = 1e-6 * max(1.0, abs(x))
    for point in SINGULAR.get(name, [(), (), ()])[k]:
        h = min(h, 1e-6 * abs(x - point))
    return (x + h) - x  # exactly representable


def test_every_op_has_points():
    assert set(POINTS) == set(OPS)
    for name, op in OPS.items():
        assert op.name == name and op.arity in (1, 2, 3) and len(op.derivatives) == op.arity
        assert all(len(p) == op.arity for p in POINTS[name])


@pytest.mark.parametrize("name, point", CASES, ids=[f"{n}{p}" for n, p in CASES])
def test_value_template_matches_numpy(name, point):
    op = OPS[name]
    got, want = _render(op.value, point), float(op.numpy(*np.array(point)))
    assert got == pytest.approx(want, rel=1e-12, abs=0.0)


@pytest.mark.parametrize("name, point", CASES, ids=[f"{n}{p}" for n, p in CASES])
def test_derivative_templates_match_central_differences(name, point):
    op = OPS[name]
    value = _render(op.value, point)
    for k, template in enumerate(op.derivatives):
        h = _step(name, k, point[k])
        up, down = list(point), list(point)
        up[k], down[k] = point[k] + h, point[k] - h
        f_up, f_down = (float(op.numpy(*np.array(p))) for p in (up, down))
        quotient = (f_up - f_down) / (2.0 * h)
        rounding = 8.0 * EPS * max(abs(f_up), abs(f_down)) / h
        got = _render(template, point, value)
        assert abs(got - quotient) <= 1e-6 * abs(quotient) + rounding, (k, got, quotient)


def test_every_exported_elementwise_function_is_in_the_table():
    """``ld.<f>`` that builds an elementwise node builds one of a table op, and every
    op no operator writes is ``ld.<name>``."""
    m = ld.Model()
    x = m.param("x")
    built = {}
    for attr, fn in vars(ld).items():
        if inspect.isfunction(fn) and fn.__module__ == "logdens.expr":
            required = [p for p in inspect.signature(fn).parameters.values() if p.default is p.empty]
            try:
                node = fn(*[x] * len(required))
            except ex.ModelError:  # log_softmax, matmul: no scalar form
                continue
            if isinstance(node, (ex.Unary, ex.Binary, ex.Ternary)):
                built[attr] = node.op
    composed = {"dot": "mul"}  # dot(x, y) of scalars is x * y
    assert all(op in OPS and (OPS[op].symbol is None or composed.get(attr) == op) for attr, op in built.items())
    functions = {name for name, op in OPS.items() if op.symbol is None}
    assert functions <= set(built) and built["inv_logit"] == built["sigmoid"] == "logistic"


def test_operators_build_the_ops_with_their_symbols():
    m = ld.Model()
    a, b = m.param("a"), m.param("b")
    for name, op in OPS.items():
        if op.symbol is None:
            continue
        node = eval(f"a {op.symbol} b" if op.arity == 2 else f"{op.symbol}a", {"a": a, "b": b})
        assert (node.op, len(node.children)) == (name, op.arity)
        assert node.label() == (f"(a {op.symbol} b)" if op.arity == 2 else f"{name}(a)")


def test_every_op_compiles_and_agrees_with_the_python_twin():
    """The templates under numba (a template that only Python accepts, such as
    ``float(x > 0)``, fails here): one model using every op once, inside a
    vector loop, compiled against the twin (rtol 1e-12) and numpy."""
    from logdens.evaluate import evaluate
    m = ld.Model()
    x = m.param("x", shape=3, constraint=ld.interval(0.1, 0.9))  # inside every op's domain
    y = m.param("y", shape=3, constraint=ld.interval(1.5, 2.5))
    kinds = {1: lambda name: ex.Unary(name, x), 2: lambda name: ex.Binary(name, y, x),
             3: lambda name: ex.Ternary(name, x - 0.5, y, x)}
    terms = [ld.sum(kinds[op.arity](name)) for name, op in OPS.items()]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    m.potential("all", total)
    theta = np.array([0.3, -0.2, 0.8, 0.1, -0.4, 0.6])
    compiled, twin = m.compile(), m.compile(backend="python")
    lp, grad = compiled.log_density_gradient(theta, jacobian=False)
    lp_py, grad_py = twin.log_density_gradient(theta, jacobian=False)
    assert lp == pytest.approx(lp_py, rel=1e-12)
    np.testing.assert_allclose(grad, grad_py, rtol=1e-12)
    assert lp == pytest.approx(float(evaluate(total, compiled.constrain(theta))), rel=1e-12)


def test_maximum_minimum_and_clip_split_a_tie():
    """``ld.maximum``, ``ld.minimum``, ``ld.clip``: numpy's values; the derivative
    follows the side chosen, halved at a tie (JAX's convention)."""
    m = ld.Model()
    x = m.param("x", shape=4)
    m.potential("p", ld.sum(ld.maximum(x, 0.5) + 2.0 * ld.minimum(x, 0.5) + 10.0 * ld.clip(x, -1.0, 1.0)))
    theta = np.array([0.2, 0.5, -3.0, 2.0])
    want = np.maximum(theta, 0.5) + 2.0 * np.minimum(theta, 0.5) + 10.0 * np.clip(theta, -1.0, 1.0)
    want_grad = np.array([0.0 + 2.0 + 10.0, 0.5 + 1.0 + 10.0, 2.0, 1.0])
    for density in (m.compile(), m.compile(backend="python")):
        lp, grad = density.log_density_gradient(theta)
        assert lp == pytest.approx(want.sum(), rel=1e-14)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-14)


def test_where_with_comparisons_selects_and_differentiates_the_branch():
    """where(x > 0.5, a * x, -x): the value and the gradient follow the branch each
    element takes (compiled, twin, numpy); the comparison itself has no gradient."""
    from logdens.evaluate import evaluate
    m = ld.Model()
    x = m.param("x", shape=4)
    a = m.param("a")
    value = ld.where(x > 0.5, a * x, -x) + ld.where(0.0 >= x, 1.0, 0.0)
    m.potential("p", ld.sum(value))
    theta = np.array([0.2, 0.9, -1.0, 2.0, 3.0])  # x then a
    want_grad = np.array([-1.0, 3.0, -1.0, 3.0, 0.9 + 2.0])
    for density in (m.compile(), m.compile(backend="python")):
        lp, grad = density.log_density_gradient(theta)
        assert lp == pytest.approx(-0.2 + 2.7 + 1.0 + 6.0 + 1.0, rel=1e-14)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-14)
    assert float(evaluate(ld.sum(value), {"x": theta[:4], "a": 3.0})) == pytest.approx(lp)
    assert "where(x > 0.5, a * x, -x)" in repr(m)


def test_where_on_equality_selects_and_differentiates_the_branch():
    """where(x == 1.0, a, 0.0) and where(x != 1.0, ...) with data x holding some 1.0:
    the value and the gradient of the branch each element takes (compiled, twin,
    numpy, central differences); ``==`` was Python's identity, so the first was
    the constant 0.0."""
    from logdens.evaluate import evaluate
    x = np.array([1.0, 0.5, 1.0, -2.0])
    m = ld.Model()
    a = m.param("a", shape=4)
    b = m.param("b")
    data = m.data("x", x)
    value = ld.where(data == 1.0, a, 0.0) + ld.where(data != 1.0, b * a * a, 0.0) + (1.0 == data) * b
    m.potential("p", ld.sum(value))
    theta = np.array([0.3, -0.7, 1.1, 0.4, 2.0])
    av, bv = theta[:4], theta[4]
    hit = x == 1.0
    want = np.sum(np.where(hit, av, bv * av * av) + hit * bv)
    want_grad = np.r_[np.where(hit, 1.0, 2.0 * bv * av), np.sum(np.where(hit, 1.0, av * av))]
    for density in (m.compile(), m.compile(backend="python")):
        lp, grad = density.log_density_gradient(theta)
        assert lp == pytest.approx(want, rel=1e-14)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-14)
        check_gradient(density, theta, np.random.default_rng(0))
    assert float(evaluate(ld.sum(value), {"a": av, "b": bv, "x": x})) == pytest.approx(want, rel=1e-14)
    assert "where(x == 1, a, 0)" in repr(m) and "(x == 1) * b" in repr(m)
