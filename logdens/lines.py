"""Lines of generated source: indentation, literals and adjoint accumulators."""


def literal(value):
    """Python source for the float ``value`` (never NaN: ``Const`` refuses it):
    ``repr`` writes infinity as ``inf``, a name generated code does not have."""
    if abs(value) == float("inf"):
        return "math.inf" if value > 0 else "-math.inf"
    return repr(float(value))


def indent(lines, depth=1):
    """``lines`` indented ``depth`` levels (an ``Accumulator`` stays one)."""
    return ["    " * depth + line for line in lines]


class Accumulator:
    """A line of an adjoint accumulator ``a<n>``: its ``a<n> = 0.0`` or one of its
    ``a<n> += value`` contributions, written out by ``tidy`` once the whole
    function is known. An accumulator with exactly one contribution, made in
    the straight-line code where it is set to zero, takes that contribution
    directly (``a3 = r4[2]``) and is never zeroed: fewer statements, a shorter
    compile. ``counts``: accumulator -> whether each of its contributions is
    made there, shared by a lowering's lines; ``prefix``: indentation."""

    def __init__(self, var, value, counts, prefix=""):
        self.var, self.value, self.counts, self.prefix = var, value, counts, prefix

    def __radd__(self, prefix):  # ``indent`` prepends the indentation
        return Accumulator(self.var, self.value, self.counts, prefix + self.prefix)

    def text(self):
        """The line, or None for the zeroing of an accumulator that takes its one contribution."""
        single = self.counts.get(self.var) == [True]
        if self.value is None:
            return None if single else f"{self.prefix}{self.var} = 0.0"
        return f"{self.prefix}{self.var} {'=' if single else '+='} {self.value}"


def tidy(lines):
    """The lines of a function body with their accumulators written out."""
    written = (line.text() if isinstance(line, Accumulator) else line for line in lines)
    return [line for line in written if line is not None]


def times(adjoint, derivative):
    """Code of ``adjoint * derivative``, without a factor ``1.0`` (``a * 1.0 / x`` is ``a / x``)."""
    if derivative == "1.0":
        return adjoint
    if derivative.startswith(("1.0 / ", "1.0 * ")):
        return f"{adjoint} {derivative[4:]}"
    return f"{adjoint} * {derivative}"


class Workspaces:
    """Arrays a generated function needs besides its arguments (buffers, hoisted
    values, constrained parameters), declared by name and shape while the
    function is written, allocated in one place: the CPU emitter writes them at
    the function's start, after the data lengths are bound; a GPU emitter
    allocates them once per model. ``shape``: code of each extent."""

    def __init__(self):
        self.shapes = {}

    def declare(self, name, *shape):
        """``name``, now allocated with ``shape`` at the function's start."""
        self.shapes[name] = shape
        return name

    def drop(self, name):
        """Forget ``name`` (a buffer the function turned out not to need)."""
        del self.shapes[name]

    def lines(self):
        """The allocations: ``np.empty``, filled where used (``np.zeros`` compiled
        0.1 s slower in a model with two such arrays)."""
        return [f"{name} = np.empty({_shape_code(shape)})" for name, shape in self.shapes.items()]

    def local_lines(self):
        """The allocations on a GPU thread: local arrays, of compile-time shapes."""
        return [f"{name} = cuda.local.array({_shape_code(shape)}, numba.float64)" for name, shape in self.shapes.items()]


def _shape_code(shape):
    """Code of an array shape: its one extent, or a tuple of them."""
    return str(shape[0]) if len(shape) == 1 else "(" + ", ".join(map(str, shape)) + ")"


def plus(*terms):
    """Code of the sum of ``terms`` (ints, or code: literals or names such as a
    run-time offset ``o_<ident>``): the literals added up first, then the
    names, a zero left out (``plus(3, "k")`` is ``3 + k``, ``plus("0", "k")``
    is ``k``)."""
    number, names = 0, []
    for term in map(str, terms):
        if term.lstrip("-").isdigit():
            number += int(term)
        else:
            names.append(term)
    return " + ".join(([str(number)] if number or not names else []) + names)

