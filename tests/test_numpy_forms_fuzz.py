"""Shape fuzz over the numpy forms (new axes, reshapes, slices of an axis,
concatenation, reductions with keepdims, broadcasting a length-1 axis, running
sums, numpy's functions of expressions): random
expressions of whole matrices and of rows of data, in a potential or as an
observed term's mean. Each gives the numpy evaluator's value (which numpy's
own broadcasting computes) and central-difference gradients, or a
``ModelError``; never another exception, never a wrong value.

Tolerances: values 1e-10 relative (the same arithmetic in another order);
gradients against central differences of the numpy reference with h = 1e-6,
1e-6 relative and absolute (the stencil's error, h^2 + eps / h).
"""

import numpy as np
import pytest
from scipy import stats

import logdens as ld
from logdens.evaluate import evaluate
from logdens.expr import ModelError

ROWS = 5


class Case:
    """One random model over a few matrices and, maybe, rows of data."""

    def __init__(self, rng):
        self.rng, self.m, self.k = rng, ld.Model(), 0
        self.rows = bool(rng.integers(2))
        self.X = rng.normal(size=(ROWS, 4)) if self.rows else None
        expr = self.combine(self.operand(), self.operand())
        for _ in range(rng.integers(3)):
            expr = self.transform(expr)
        self.expr = expr
        if self.rows and expr.ndim >= 1 and rng.integers(2):
            self.kind = "observe"
            self.y = rng.normal(size=expr.shape)
            self.m.observe("y", ld.Normal(expr, 1.3), self.y)
        else:
            self.kind = "potential"
            self.m.potential("p", ld.sum(-ld.square(expr)))

    def name(self, prefix):
        self.k += 1
        return f"{prefix}{self.k}"

    def operand(self):
        rng = self.rng
        if self.rows and rng.integers(2):
            X = self.m.data(self.name("X"), self.X)
            return ld.tanh(X @ self.m.param(self.name("W"), shape=(4, int(rng.choice([1, 3])))))
        shape = [(3, 4), (1, 4), (3, 1), (4,), (3,), (), (2, 3, 4)][rng.integers(7)]
        return self.m.param(self.name("p"), shape=shape)

    def combine(self, a, b):
        return (lambda: a + b, lambda: a * b, lambda: a - ld.tanh(b))[self.rng.integers(3)]()

    def transform(self, x):
        rng = self.rng
        forms = [lambda: x[:, None], lambda: x[None], lambda: x[..., None], lambda: x.T,
                 lambda: x.reshape(-1), lambda: x[:, 1:], lambda: x[1:], lambda: x[:, ::-1],
                 lambda: ld.sum(x, axis=-1, keepdims=True), lambda: ld.logsumexp(x, axis=0),
                 lambda: ld.mean(x, axis=(0, -1)), lambda: ld.concatenate([x, 2.0 * x], axis=-1),
                 lambda: ld.concatenate([x, x], axis=0), lambda: x * self.operand(),
                 lambda: ld.maximum(x, 0.1), lambda: np.cumsum(x), lambda: np.concatenate([np.zeros(1), x])]
        try:
            return forms[rng.integers(len(forms))]()
        except ModelError:
            return x  # a form this shape does not take: built elementwise, refused by its own check

    def reference(self, density, theta):
        values = {**density.data(), **density.constrain(theta)}
        value = evaluate(self.expr, values)
        if self.kind == "potential":
            return float(np.sum(-np.square(value)))
        return float(np.sum(stats.norm.logpdf(self.y, loc=value, scale=1.3)))


def run(seed, backend):
    rng = np.random.default_rng(seed)
    try:
        case = Case(rng)
        density = case.m.compile(backend=backend)
    except ModelError:
        return "refused"
    theta = rng.normal(size=density.dim) * 0.5
    lp, grad = density.log_density_gradient(theta, propto=False, jacobian=False)
    assert lp == pytest.approx(case.reference(density, theta), rel=1e-10, abs=1e-12)
    h = 1e-6
    for j in range(density.dim):
        step = np.zeros(density.dim)
        step[j] = h
        fd = (case.reference(density, theta + step) - case.reference(density, theta - step)) / (2 * h)
        assert grad[j] == pytest.approx(fd, rel=1e-6, abs=1e-6), (j, case.expr.label())
    return "checked"


def test_numpy_forms_in_plain_python():
    outcomes = [run(seed, "python") for seed in range(120)]
    assert outcomes.count("checked") >= 60, outcomes  # most random models build


@pytest.mark.slow
def test_numpy_forms_compiled():
    outcomes = [run(seed, "cpu") for seed in range(12)]
    assert outcomes.count("checked") >= 6, outcomes
