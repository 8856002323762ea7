"""Shape fuzz: random operands of random lengths (scalar, 0, 1, n, mismatched)
under every binary operator, slices and gathers, in every kind of term, then
new data of random lengths. Each model gives the numpy reference's value and
gradient or a ``ModelError`` (when building or in ``set_data``) exactly when
the shape rule says the lengths do not agree; never a crash, never a wrong
value (a length-1 slice in a potential read past its array, and ``set_data``
shortened the array under a slice: heap corruption)."""

import numpy as np
import pytest
from scipy import stats

import logdens as ld
from logdens import expr as ex
from logdens.evaluate import evaluate
from logdens.expr import ModelError

LENGTHS = (1, 4, 3, 0)
OPERATORS = (lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
             lambda a, b: a / (1.5 + ld.square(b)), lambda a, b: ld.logaddexp(a, b))
SCALE = 1.3


class Mismatch(Exception):
    """The oracle's verdict: these lengths do not agree."""


def strict_length(node, arrays):
    """The plate length under the shape rule, written independently of the engine:
    scalars broadcast, vectors agree exactly, a slice takes numpy's bounds of its
    source's current length."""
    if isinstance(node, ex.Const):
        return None
    if isinstance(node, ex.Param):
        return node.shape[0] if node.shape else None
    if isinstance(node, ex.Data):
        return len(arrays[node.name]) if node.shape else None
    below = [strict_length(c, arrays) for c in node.children]
    if isinstance(node, ex.Slice):  # numpy's bounds on the current length; a reversed one keeps its source's
        if node.index.step is not None and node.index.step < 0 and below[0] != node.children[0].shape[0]:
            raise Mismatch
        return len(range(*node.index.indices(below[0])))
    if isinstance(node, ex.Gather):
        return below[1]
    if isinstance(node, ex.Sum):
        return None
    sized = {n for n in below if n is not None}
    if len(sized) > 1:
        raise Mismatch
    return sized.pop() if sized else None


class Case:
    """One random model, its arrays, and its numpy reference."""

    def __init__(self, rng):
        self.rng, self.m, self.arrays, self.k = rng, ld.Model(), {}, 0
        a, b = self.operand(), self.operand()
        expr = OPERATORS[rng.integers(len(OPERATORS))](a, b)
        self.kind = ("potential", "observe", "prior")[rng.integers(3)]
        self.term = expr
        if self.kind == "potential":
            self.m.potential("t", ld.sum(expr))
        elif self.kind == "observe":
            self.m.observe("t", ld.Normal(expr, SCALE), self.data_array(self.length()))
        else:
            self.m.param("t", ld.Normal(expr, SCALE), shape=self.length())

    def length(self):
        return int(self.rng.choice(LENGTHS))

    def name(self, prefix):
        self.k += 1
        return f"{prefix}{self.k}"

    def data_array(self, n):
        return self.rng.normal(size=n)

    def data(self, n):
        name = self.name("d")
        self.arrays[name] = self.data_array(n)
        return self.m.data(name, self.arrays[name])

    def operand(self):
        n, rng = self.length(), self.rng
        choice = rng.integers(7)
        if choice == 0:
            return ex.as_expr(0.7)
        if choice == 1:
            return self.m.param(self.name("s"))
        if choice == 2:
            return self.m.param(self.name("v"), shape=n)
        if choice == 3:
            return self.data(n)
        if choice == 4:
            return self.m.param(self.name("w"), shape=n + 2)[1:1 + n]
        if choice == 5:
            return self.data(n + 2)[2:2 + n]
        name = self.name("i")
        self.arrays[name] = rng.integers(0, 3, size=n)
        return self.m.param(self.name("g"), shape=3)[self.m.data(name, self.arrays[name])]

    def observed(self):
        return self.arrays.get("t")

    def reference(self, density, theta):
        """The log density by numpy and scipy.stats (normalized, no Jacobian)."""
        values = {**density.data(), **density.constrain(theta)}
        if self.kind == "potential":
            return float(np.sum(evaluate(self.term, values)))
        loc = evaluate(self.term, values)
        x = values["t"]
        return float(np.sum(stats.norm.logpdf(x, loc=loc, scale=SCALE)))

    def agrees(self, arrays):
        try:
            lengths = [strict_length(self.term, arrays)]
            if self.kind == "observe":
                lengths.append(len(arrays["t"]))
            if self.kind == "prior":
                lengths.append(self.m.params["t"].shape[0] if self.m.params["t"].shape else None)
            return len({n for n in lengths if n is not None}) <= 1
        except Mismatch:
            return False


def check(density, case, rng):
    """Value and gradient against the numpy reference at a random point."""
    theta = rng.normal(size=density.dim)
    lp, grad = density.log_density_gradient(theta, propto=False, jacobian=False)
    expected = case.reference(density, theta)
    assert lp == pytest.approx(expected, rel=1e-10, abs=1e-12)
    h = 1e-6  # central differences of the reference: error ~ h^2 + eps / h ~ 1e-10 relative
    for j in range(density.dim):
        step = np.zeros(density.dim)
        step[j] = h
        fd = (case.reference(density, theta + step) - case.reference(density, theta - step)) / (2 * h)
        assert grad[j] == pytest.approx(fd, rel=1e-6, abs=1e-6)


def run_case(seed, backend):
    rng = np.random.default_rng(seed)
    try:
        case = Case(rng)
    except ModelError:
        return "refused"  # built elementwise: the operator's own check (tested below)
    arrays = {**case.arrays, "t": case.m.data_nodes["t"].value} if case.kind == "observe" else case.arrays
    if not case.agrees(arrays):
        with pytest.raises(ModelError):
            case.m.compile(backend=backend)
        return "refused"
    density = case.m.compile(backend=backend)
    check(density, case, rng)
    names = [n for n, node in case.m.data_nodes.items() if node.shape]
    if not names:
        return "checked"
    name = names[rng.integers(len(names))]
    old = density.data()[name]
    new = rng.integers(0, 3, size=case.length()) if old.dtype.kind == "i" else rng.normal(size=case.length())
    if case.agrees({**density.data(), name: new}):
        density.set_data(**{name: new})
        check(density, case, rng)
        return "checked twice"
    with pytest.raises(ModelError):
        density.set_data(**{name: new})
    check(density, case, rng)  # a refused set_data keeps the old data
    return "set_data refused"


def test_operators_refuse_exactly_the_lengths_the_rule_refuses():
    m = ld.Model()
    for n in LENGTHS:
        for k in LENGTHS:
            a, b = m.param(f"a{n}{k}", shape=n), m.param(f"b{n}{k}", shape=k)
            for op in OPERATORS:
                if n == k:
                    assert op(a, b).shape == (n,)
                else:
                    with pytest.raises(ModelError, match="has length"):
                        op(a, b)


def test_random_shapes_in_plain_python():
    outcomes = [run_case(seed, "python") for seed in range(250)]
    for outcome in ("refused", "checked", "checked twice", "set_data refused"):
        assert outcome in outcomes  # the fuzz reaches every branch


@pytest.mark.slow
def test_random_shapes_compiled():
    """Compiled, where an out-of-bounds read or write corrupts memory instead of raising."""
    outcomes = [run_case(seed, "cpu") for seed in range(1000, 1040)]
    assert "checked" in outcomes or "checked twice" in outcomes
