"""A model as text and HTML: ``print(model)`` reads like a Stan program.

One line per variable, in model order: parameters with their priors and
constraints, named data, deterministics with their expressions, observed
terms and potentials::

    Model: 10 parameters (unconstrained dim 10)
      mu        ~ Normal(0, 5)           real
      tau       ~ HalfCauchy(5)          positive
      z[8]      ~ Normal(0, 1)           real, dims=(school,)
      theta[8]  = mu + tau * z           deterministic, dims=(school,)
      y[8]      ~ Normal(theta, sigma)   observed, dims=(school,)

Expressions are written with Python's operator precedence, so they need no
more parentheses than the user wrote; a deterministic used inside another
expression is shown by its name.
"""

import html

import numpy as np

from logdens import expr as ex
from logdens import validate
from logdens.ops import OPS

#: Python's binding strength of each operator symbol, weakest first; names,
#: calls and subscripts bind tightest (ATOM).
_PRECEDENCE = {"<": 0, "<=": 0, ">": 0, ">=": 0, "==": 0, "!=": 0, "+": 1, "-": 1, "*": 2, "/": 2, "@": 2,
               "neg": 3, "**": 4}
ATOM = 5
#: Longest rendering of one sub-expression before it is cut to ``...``: a
#: shared sub-expression is written out at every use, so an unrolled recursion
#: would otherwise give a text exponential in its depth.
MAX_CHARS = 160


def number(value):
    """``5`` for 5.0, ``0.25``, ``inf``: constants as a user wrote them."""
    value = float(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def shape_text(shape):
    """``[8]``, ``[100, 3]``, or nothing for a scalar."""
    return f"[{', '.join(str(n) for n in shape)}]" if shape else ""


class ExprPrinter:
    """Renders expressions; ``names`` maps ``id(node)`` to a name shown instead
    (the model's deterministics)."""

    def __init__(self, names=None):
        self.names = names or {}
        self.memo = {}

    def __call__(self, node, top=False):
        """The text of ``node``; at ``top`` its own name is not used (a
        deterministic's definition)."""
        return self._render(node, top)[0]

    def _render(self, node, top=False):
        if not top and id(node) in self.names:
            return self.names[id(node)], ATOM
        if top or id(node) not in self.memo:
            text, prec = self._format(node)
            if len(text) > MAX_CHARS:
                text, prec = "...", ATOM
            if top:
                return text, prec
            self.memo[id(node)] = text, prec
        return self.memo[id(node)]

    def _operand(self, node, min_prec):
        text, prec = self._render(node)
        return f"({text})" if prec < min_prec else text

    def _format(self, node):
        kind = type(node)
        if kind is ex.Param:
            return node.name, ATOM
        if kind is ex.Data:
            return (node.name if node.name is not None else "array" + shape_text(node.shape)), ATOM
        if kind is ex.Const:
            text = number(node.value)
            return text, (ATOM if node.value >= 0 else _PRECEDENCE["neg"])
        if kind is ex.Unary:
            return self._unary(node)
        if kind is ex.Binary:
            return self._binary(node)
        if kind is ex.Gather:
            return f"{self._operand(node.children[0], ATOM)}[{self(node.children[1])}]", ATOM
        if kind is ex.Slice:
            return f"{self._operand(node.children[0], ATOM)}[{node.text()}]", ATOM
        if kind is ex.Element:
            return f"{self._operand(node.children[0], ATOM)}[{node.index}]", ATOM
        if kind is ex.Transpose:
            return f"{self._operand(node.children[0], ATOM)}.T", ATOM
        if kind in (ex.MatVec, ex.MatMul):
            p = _PRECEDENCE["@"]
            return f"{self._operand(node.children[0], p)} @ {self._operand(node.children[1], p + 1)}", p
        # the rest read as calls (sum(x), where(c, a, b), Normal(mu, s).logpdf(y)):
        # the node's own label with its children rendered here
        return node._format([self(c) for c in node.children]), ATOM

    def _unary(self, node):
        if node.op == "neg":
            p = _PRECEDENCE["neg"]
            return "-" + self._operand(node.children[0], p), p
        if node.op == "square":
            p = _PRECEDENCE["**"]
            return f"{self._operand(node.children[0], p + 1)} ** 2", p
        return f"{node.op}({self(node.children[0])})", ATOM

    def _binary(self, node):
        left, right = node.children
        symbol = OPS[node.op].symbol
        if node.op == "broadcast_like" and isinstance(right, (ex.Param, ex.Data)):  # a location as written
            return self(left), ATOM
        if symbol is None:
            return f"{node.op}({self(left)}, {self(right)})", ATOM
        p = _PRECEDENCE[symbol]
        if symbol == "**":  # right-associative: a ** b ** c is a ** (b ** c)
            return f"{self._operand(left, p + 1)} ** {self._operand(right, p)}", p
        if p == _PRECEDENCE["<"]:  # comparisons chain in Python: (a < b) < c keeps its parentheses
            return f"{self._operand(left, p + 1)} {symbol} {self._operand(right, p + 1)}", p
        # left-associative: a - (b - c) keeps its parentheses, (a - b) - c does not need them
        return f"{self._operand(left, p)} {symbol} {self._operand(right, p + 1)}", p


def mixture_text(mixture, printer):
    """``Mixture(w, [Normal(mu[0], s), Normal(mu[1], s)])``, numeric weights as numbers."""
    weights = mixture.weights
    if isinstance(weights, np.ndarray):
        weights = np.array2string(weights, separator=", ") if weights.ndim > 1 else \
            f"[{', '.join(number(v) for v in weights)}]"
    elif isinstance(weights, tuple):
        weights = f"[{', '.join(printer(w) for w in weights)}]"
    else:
        weights = printer(weights)

    def argument(value):  # numbers as written; a printer keyed by id() must not see temporaries
        if isinstance(value, np.ndarray):
            return number(value) if value.ndim == 0 else "array" + shape_text(value.shape)
        return printer(value)
    components = ", ".join(f"{c.spec.name}({', '.join(argument(v) for v in c.params.values())})"
                           for c in mixture.components)
    return f"Mixture({weights}, [{components}])"


def constraint_text(constraint, printer):
    """``real``, ``positive``, ``interval(0, 1)``, ``greater_than(2)``, ``simplex``;
    ``interval(0, 1 - alpha)`` where a bound is an expression (``printer``'s text)."""
    c = constraint

    def bound(value):
        return printer(value) if isinstance(value, ex.Expr) else number(value)
    if c.name == "interval":
        return f"interval({bound(c.lower)}, {bound(c.upper)})"
    if c.name == "greater_than":
        return f"greater_than({bound(c.lower)})"
    if c.name == "less_than":
        return f"less_than({bound(c.upper)})"
    return c.name


def dims_text(dims):
    return f"dims=({', '.join(dims)},)" if len(dims) == 1 else f"dims=({', '.join(dims)})"


def rows(model, shapes=None):
    """``(name, shape, relation, definition, notes)`` per line of the listing.

    ``relation`` is ``~`` (a distribution), ``=`` (an expression) or empty
    (data); ``shapes`` overrides the shapes the model was built with (a
    compiled density's current data).
    """
    shapes = shapes or {}
    printer = ExprPrinter({id(e): name for name, e in model.deterministics.items()})
    priors = {t.name: t for t in model.terms if t.kind == "prior" or (t.kind == "potential" and t.mixture)}
    observed = {t.name for t in model.terms if t.kind == "observe" or (t.kind == "likelihood" and t.mixture)}

    def notes(name, *first):
        dims = model.dims.get(name)
        return ", ".join(list(first) + ([dims_text(dims)] if dims else []))

    def distribution(term):
        if term.mixture:
            return mixture_text(term.mixture.dist, printer)
        return f"{term.dist.spec.name}({', '.join(printer(a) for a in term.args[1:])})"

    out = []
    for name, node in model.params.items():
        term = priors.get(name)
        out.append((name, node.shape, "~", distribution(term) if term else "flat",
                    notes(name, constraint_text(node.constraint, printer))))
    for name, node in model.data_nodes.items():
        if name not in observed:
            dtype = "int" if node.integer else "real"
            out.append((name, shapes.get(name, node.shape), "", f"data {dtype}", notes(name)))
    for name, e in model.deterministics.items():
        out.append((name, shapes.get(name, e.shape), "=", printer(e, top=True),
                    notes(name, "deterministic")))
    for term in model.terms:
        if term.name in observed:
            value = term.mixture.x if term.mixture else term.value
            own = isinstance(value, ex.Data) and value.name == term.name
            what = "observed" if own else f"observed {printer(value)}"
            out.append((term.name, shapes.get(term.name, value.shape), "~", distribution(term),
                        notes(term.name, what)))
        elif term.kind in ("potential", "likelihood") and term.name not in priors:
            out.append((term.name, shapes.get(term.name, term.value.shape), "=",
                        printer(term.value, top=True), notes(term.name, term.kind)))
    return out


def current_shapes(model, layout, arrays):
    """Shapes of the data, deterministics and observed values of a compiled model
    for its current data ``arrays`` (``set_data`` may have changed lengths)."""
    memo = {}

    def shape(e):
        n = validate.length(e, arrays, layout, "", memo)
        return () if n is None else (n,)

    shapes = {name: arrays[name].shape for name in model.data_nodes}
    shapes.update({name: shape(e) for name, e in model.deterministics.items()})
    shapes.update({t.name: shape(t.value) for t in model.terms if t.per_observation})
    return shapes


def header(model, dim):
    """``Model: 10 parameters (unconstrained dim 10)``."""
    n = sum(int(np.prod(p.shape, dtype=int)) for p in model.params.values())
    return f"{n} parameter{'s' if n != 1 else ''} (unconstrained dim {dim})"


def unconstrained_dim(model):
    """Length of ``theta``, from the parameters' transforms (a simplex of K has K - 1)."""
    return sum(model.transforms[name].unconstrained_size(p.shape) for name, p in model.params.items())


def text(model, title="Model", dim=None, shapes=None):
    """The listing of ``model`` as aligned plain text."""
    dim = unconstrained_dim(model) if dim is None else dim
    lines = [f"{title}: {header(model, dim)}"]
    table = [(name + shape_text(shape), relation, definition, note)
             for name, shape, relation, definition, note in rows(model, shapes)]
    if not table:
        return lines[0]
    width_name = max(len(r[0]) for r in table)
    width_def = max(len(r[2]) for r in table)
    for name, relation, definition, note in table:
        line = f"  {name:<{width_name}} {relation or ' '} {definition:<{width_def}}   {note}"
        lines.append(line.rstrip())
    return "\n".join(lines)


def html_table(model, title="Model", dim=None, shapes=None):
    """The listing as an HTML table (Jupyter's ``_repr_html_``)."""
    dim = unconstrained_dim(model) if dim is None else dim
    cells = "".join(
        "<tr>" + "".join(f"<td style='text-align:left'>{html.escape(str(c))}</td>" for c in (
            name + shape_text(shape), relation, definition, note)) + "</tr>"
        for name, shape, relation, definition, note in rows(model, shapes))
    return (f"<table><caption style='text-align:left'><b>{html.escape(title)}</b>: "
            f"{html.escape(header(model, dim))}</caption>{cells}</table>")
