"""The lowered program: what a model compiles to, between AD and generated code.

A program is a list of statements over named values. A value has a plate
(the rows of the ``Map`` it lives in, or none: once per call), an event
shape (``()`` for a scalar) and the model's label of the node it holds.
Statements say what they do, not how a backend does it:

- ``Load``: an element of a buffer (``theta``, a data array, a workspace);
- ``Index``: an integer position (an index array's entry, a slice's shift, a
  constant position on a run-time length);
- ``Let``: an op of the op table ``logdens.ops.OPS``; ``Partial``: its
  derivative in one argument;
- ``Call``: a distribution's ``logpdf_grad`` kernel, its value and partials;
- ``Dot``: a data matrix's row times a parameter vector;
- ``Local``: a scalar accumulator, zeroed; ``Accumulate(dest, value, kind)``
  adds into a local or a buffer's element, ``kind`` saying who else adds there
  (see ``KINDS``), which is what a backend needs to schedule it;
- ``Map``: a loop over a plate's rows (``backward``: last row first);
- ``Constrain`` / ``ConstrainAdjoint`` / ``Jacobian``: a parameter's transform,
  its reverse sweep and its log-Jacobian;
- ``When``: statements run only under a call's flag (``jacobian``).

Events. A value with event shape ``(k,)`` or ``(k, m)`` (one event per row of
its plate, or one per call) is an array of ``k * m`` elements, flat and row
major, named by the value: ``Buffer("event", value.name)``. ``View`` makes it
a view of an array that holds it already (a data matrix's row, a parameter's
values, data read whole); otherwise a ``Workspace`` of that fixed size
declares it and the row's statements fill it element by element, in a
``Map`` over a plate of fixed length (``Size("fixed")``: the event's axis)
with ``Load``/``Store``/``Accumulate`` at the element's position. Its adjoint
is such an array too, zeroed (``Zero``) where a scalar's is a ``Local``. A
CPU pass may widen the per-row arrays to ``(BLOCK, event)`` buffers around a
block of rows and a CUDA emitter put them in local arrays: the program only
says "one event per row". A multivariate kernel is an ``EventCall``: one
event per argument, its partials *added* into arrays the caller zeroed
(``distributions.spec``: Stan Math's partials), which the reverse sweep
reads element by element.

``print(program)`` shows one statement per line with the model's labels, as
``jax.make_jaxpr`` shows a jaxpr. Emitters (``logdens.compiler.emit``) turn a
program into code; they know nothing of AD.
"""

from typing import NamedTuple, Optional, Tuple

#: Accumulation kinds: ``local`` (a scalar of this row or call), ``shared`` (one
#: destination every row of the plate adds to: a reduction), ``own_row`` (the
#: row's own element, no other row writes it), ``scatter`` (an element an index
#: array names: rows may collide).
KINDS = ("local", "shared", "own_row", "scatter")


class Plate(NamedTuple):
    """The rows a ``Map`` runs over: ``length`` is a ``Size``."""

    name: str
    length: "Size"

    def __str__(self):
        return self.name


class Size(NamedTuple):
    """A length read at run time or fixed at build: ``kind`` is ``data`` (an
    array's rows), ``param`` (a parameter's length), ``slice`` (a slice of
    ``of``'s length, ``node`` the slice) or ``fixed`` (``value``)."""

    kind: str
    name: str = ""
    value: int = 0
    of: Optional["Size"] = None
    node: object = None

    def __str__(self):
        if self.kind == "fixed":
            return str(self.value)
        if self.kind == "slice":
            return f"len({self.node.label()})"
        return f"len({self.name})"


class Value(NamedTuple):
    """A value of the program: ``%name``, per row of ``plate`` (None: per call)."""

    name: str
    plate: Optional[str]
    event: Tuple[int, ...]
    label: str

    def __str__(self):
        return f"%{self.name}"

    def array(self):
        """The array an event value is (see the module docstring)."""
        return Buffer("event", self.name)

    def typed(self):
        where = f"[{self.plate}]" if self.plate else ""
        return f"%{self.name}:f64{where}{list(self.event) if self.event else ''}"

    def adjoint(self):
        """The value reverse mode adds this value's adjoint into (``%a<name>``)."""
        return Value("a" + self.name, self.plate, self.event, self.label)


class Buffer(NamedTuple):
    """An array a program reads or adds into: ``theta``, ``grad``, ``lp`` (a
    scalar), a parameter's constrained values (``constrained``), its
    derivatives (``dconstrained``) or adjoints (``aconstrained``), a data
    array (``data``, ``index`` for an integer one, ``matrix``), a workspace,
    an event value's array (``event``),
    ``out`` (pointwise rows) or ``rows``: row ``row`` of the per-sample
    gradients, one gradient per observation (parameter ``name``'s columns)."""

    kind: str
    name: str
    offset: int = 0  # a parameter's block in theta / grad
    row: Optional[str] = None

    def __str__(self):
        if self.kind in ("theta", "grad", "lp"):
            return self.kind
        if self.kind == "rows":
            return f"rows[{self.row}]" if self.name == "rows" else f"rows[{self.row}]:{self.name}"
        return f"{self.kind}:{self.name}"


class At(NamedTuple):
    """A position in a buffer: ``base`` (an int) plus ``index`` (a Value, a
    plate's row name, or None)."""

    index: object = None
    base: int = 0

    def __str__(self):
        if self.index is None:
            return str(self.base)
        return f"{self.base} + {self.index}" if self.base else str(self.index)


class Load(NamedTuple):
    out: Value
    buffer: Buffer
    at: At

    def __str__(self):
        return f"{self.out.typed()} = load {self.buffer}[{self.at}]"


class Index(NamedTuple):
    """``kind``: ``gather`` (``array[at]``, a position on length ``size``),
    ``shift`` (``node``'s slice start + step * ``at`` on length ``size``),
    ``element`` (``node``'s position on length ``size``), ``flat`` (``a *
    stride + b`` for ``at = (a, stride, b)``: an element of an event matrix)
    or ``broadcast`` (for ``at = (j, event, shape)``: the position in an
    operand of ``shape`` that element ``j`` of ``event`` reads, numpy's
    broadcasting)."""

    out: Value
    kind: str
    at: object = None
    array: Optional[Buffer] = None
    node: object = None
    size: Optional[Size] = None

    def __str__(self):
        if self.kind == "gather":
            return f"%{self.out.name}:i64 = {self.array}[{self.at}]"
        if self.kind == "shift":
            return f"%{self.out.name}:i64 = shift {self.node.label()} row {self.at}"
        if self.kind == "flat":
            return f"%{self.out.name}:i64 = {self.at[0]} * {self.at[1]} + {self.at[2]}"
        if self.kind == "broadcast":
            return f"%{self.out.name}:i64 = element {self.at[0]} of {list(self.at[1])} in {list(self.at[2])}"
        return f"%{self.out.name}:i64 = position {self.node.label()} of {self.size}"


class Let(NamedTuple):
    out: Value
    op: str
    args: tuple

    def __str__(self):
        return f"{self.out.typed()} = {self.op} {' '.join(map(_arg, self.args))}"


class Partial(NamedTuple):
    """d ``op`` / d argument ``k`` at ``args``, the op's value ``value``."""

    out: Value
    op: str
    k: int
    args: tuple
    value: Value

    def __str__(self):
        return f"{self.out.typed()} = d{self.op}/d{self.k} {' '.join(map(_arg, self.args))}"


class Call(NamedTuple):
    """``spec.logpdf_grad(*args)`` with the summands ``keep``: ``outs[0]`` the
    value, ``outs[1 + j]`` the partial in argument ``j`` (None: not needed);
    ``x_checked``: the value is data checked when set, so the kernel skips its
    support test."""

    outs: tuple
    spec: object
    args: tuple
    keep: tuple
    x_checked: bool = False

    def __str__(self):
        names = ", ".join(str(o) if o is not None else "_" for o in self.outs)
        return f"{names} = call {self.spec.name}.logpdf_grad {' '.join(map(_arg, self.args))}"


class Dot(NamedTuple):
    """``out = matrix[row, :] @ vector`` (``vector`` a parameter's buffer)."""

    out: Value
    matrix: Buffer
    row: object
    vector: Buffer
    length: Size

    def __str__(self):
        return f"{self.out.typed()} = dot {self.matrix}[{self.row}, :] {self.vector}"


class DotAdjoint(NamedTuple):
    """``dest[j] += scale * matrix[row, j]`` for every column ``j`` (times
    ``dconstrained[j]`` when ``through`` names it; ``kind`` as ``Accumulate``'s):
    the adjoint of the product ``of``."""

    dest: Buffer
    matrix: Buffer
    row: object
    scale: Value
    length: Size
    kind: str
    through: Optional[Buffer] = None
    of: Optional[Value] = None  # the product's value

    def __str__(self):
        chain = f" * {self.through}[:]" if self.through is not None else ""
        return f"accumulate {self.dest}[:] += {self.scale} * {self.matrix}[{self.row}, :]{chain}  ({self.kind})"


class View(NamedTuple):
    """``out`` (an event) is ``buffer``'s values, not a copy: row ``at.index`` of
    a data matrix, or (``at.index`` None) the whole of a data array or of a
    parameter's values."""

    out: Value
    buffer: Buffer
    at: At

    def __str__(self):
        where = f"[{self.at.index}]" if self.at.index is not None else ""
        return f"{self.out.typed()} = view {self.buffer}{where}"


class EventCall(NamedTuple):
    """``out = spec.logpdf_grad(*args, keep, work, *partials)``: a multivariate
    kernel (``distributions.spec``) on one event per argument (an event value,
    or a float or scalar value for an argument without event axes); it *adds*
    each argument's partials into the event value ``partials[j]`` (None: not
    needed), ``work`` its scratch workspace."""

    out: Value
    spec: object
    args: tuple
    keep: tuple
    work: Buffer
    partials: tuple

    def __str__(self):
        added = ", ".join(str(p) for p in self.partials if p is not None)
        into = f"; partials += into {added}" if added else ""
        return f"{self.out.typed()} = call {self.spec.name}.logpdf_grad {' '.join(map(_arg, self.args))}{into}"


class Local(NamedTuple):
    out: Value
    init: float = 0.0

    def __str__(self):
        return f"{self.out.typed()} = local {self.init!r}"


class Accumulate(NamedTuple):
    """``dest[at] += value`` (``at`` None: ``dest`` is a local Value or ``lp``);
    ``op`` ``max`` keeps the larger instead."""

    dest: object
    value: object
    kind: str
    at: Optional[At] = None
    op: str = "add"

    def __str__(self):
        where = f"{self.dest}[{self.at}]" if self.at is not None else str(self.dest)
        return f"accumulate {where} {'+' if self.op == 'add' else self.op}= {_arg(self.value)}  ({self.kind})"


class Store(NamedTuple):
    """``buffer[at] = value``: a row's own element (of a workspace, a block's
    buffer, or a gradient entry its first writer assigns)."""

    buffer: Buffer
    at: At
    value: object

    def __str__(self):
        return f"store {self.buffer}[{self.at}] = {_arg(self.value)}"


class Workspace(NamedTuple):
    """A per-call array of ``size`` elements the program declares (not allocated in a loop)."""

    buffer: Buffer
    size: Size

    def __str__(self):
        return f"{self.buffer} = workspace f64[{self.size}]"


class Map(NamedTuple):
    """The statements ``body`` for every row ``index`` of ``plate`` (``backward``:
    last first). A reduction's two maps share a ``pair`` name: the forward one,
    and the reverse one that sweeps the reduction's adjoint ``seed`` back."""

    plate: Plate
    index: str
    body: tuple
    backward: bool = False
    pair: Optional[str] = None
    seed: Optional[Value] = None

    def __str__(self):
        seed = f" (adjoint {self.seed})" if self.seed is not None else ""
        return f"map {self.index} over {self.plate}[{self.plate.length}]{' backward' if self.backward else ''}{seed}:"


class Blocked(NamedTuple):
    """A ``Map`` run in blocks of rows (the CPU schedule, ``cpu_schedule``):
    per block, ``before`` fills buffers (``Buffer`` kind ``block``, one element
    per row of the block), ``body`` runs for each row reading and writing only
    them at its own row, ``after`` empties the adjoint buffers."""

    plate: Plate
    index: str
    before: tuple
    body: tuple
    after: tuple

    def __str__(self):
        return f"map {self.index} over {self.plate}[{self.plate.length}] in blocks of rows:"


class BlockProduct(NamedTuple):
    """``buffer = matrix[block, :] @ vector``."""

    buffer: Buffer
    matrix: Buffer
    vector: Buffer
    length: Size

    def __str__(self):
        return f"{self.buffer} = {self.matrix}[block, :] @ {self.vector}"


class BlockProductAdjoint(NamedTuple):
    """``dest += matrix[block, :].T @ adjoints`` (times ``through``, a ``dconstrained``
    buffer); a per-sample ``rows`` dest: row r's own gets ``adjoints[r] * matrix[r, :]``
    (``assign``: its first writer, ``=``)."""

    dest: Buffer
    matrix: Buffer
    adjoints: Buffer
    length: Size
    through: Optional[Buffer] = None
    assign: bool = False

    def __str__(self):
        chain = f" * {self.through}" if self.through is not None else ""
        op = "=" if self.assign else "+="
        return f"accumulate {self.dest} {op} {self.matrix}[block, :].T @ {self.adjoints}{chain}"


class BlockGather(NamedTuple):
    """``buffer[r] = source[base + index[r]]`` for the block's rows ``r``."""

    buffer: Buffer
    source: Buffer
    index: Buffer
    base: int = 0

    def __str__(self):
        return f"{self.buffer} = {self.source}[{self.index}[block]]"


class BlockScatter(NamedTuple):
    """``dest[base + index[r]] += adjoints[r]`` for the block's rows (indices may
    repeat; ``index`` None: ``dest[base]``); a per-sample ``rows`` dest: into row r's own
    (``assign``: its first writer, ``=``)."""

    dest: Buffer
    index: Optional[Buffer]
    adjoints: Buffer
    base: int = 0
    assign: bool = False

    def __str__(self):
        where = f"{self.index}[block]" if self.index is not None else self.base
        return f"accumulate {self.dest}[{where}] {'=' if self.assign else '+='} {self.adjoints}  (scatter)"


class Constrain(NamedTuple):
    """Parameter ``name``'s constrained value from ``theta``: a scalar's into
    ``out`` and its derivative into ``dout``; a vector's into its
    ``constrained`` buffer (and ``dconstrained``; an event transform's adjoints,
    ``aconstrained``, are a ``Zero`` of their own where a gradient needs them)."""

    name: str
    transform: str
    out: Optional[Value] = None
    dout: Optional[Value] = None

    def __str__(self):
        if self.out is None:
            return f"constrained:{self.name} = constrain {self.name} ({self.transform})"
        return f"{self.out.typed()}, {self.dout} = constrain {self.name} ({self.transform})"


class Zero(NamedTuple):
    """``buffer[:] = 0.0``; for ``grad`` or per-sample ``rows``, the parameters
    ``kept`` excepted (their first writer assigns every entry: ``cpu_schedule``)."""

    buffer: Buffer
    kept: tuple = ()

    def __str__(self):
        but = f" except {', '.join(self.kept)}" if self.kept else ""
        return f"{self.buffer}[:] = 0.0{but}"


class Length(NamedTuple):
    """A plate's length as a number (``len(x)`` in a model)."""

    out: Value
    size: Size

    def __str__(self):
        return f"{self.out.typed()} = {self.size}"


class ConstrainAdjoint(NamedTuple):
    """The adjoints of an event-transformed parameter back into ``grad`` (or into
    per-sample row ``row``, without the log-Jacobian's)."""

    name: str
    transform: str
    row: Optional[str] = None

    def __str__(self):
        into = "grad" if self.row is None else f"rows[{self.row}]"
        return f"accumulate {into}[{self.name}] += reverse {self.transform} aconstrained:{self.name}"


class Jacobian(NamedTuple):
    """log|J| of parameter ``name``'s transform into ``lp`` (and, with ``gradient``,
    its derivative into ``grad``)."""

    name: str
    transform: str
    gradient: bool = True

    def __str__(self):
        return f"accumulate lp += log|J| {self.name} ({self.transform})"


class When(NamedTuple):
    """``body`` when the call's ``flag`` is set, else ``otherwise``."""

    flag: str
    body: tuple
    otherwise: tuple = ()

    def __str__(self):
        return f"when {self.flag}:"


def _arg(a):
    return str(a) if not isinstance(a, float) else repr(a)


#: The arguments of each function a program may be (``Program.name``).
SIGNATURES = {"core": "theta, grad, fdata, idata, jacobian", "value": "theta, fdata, idata, jacobian",
              "constants": "theta, fdata, idata", "pointwise": "theta, fdata, idata, out, dropped",
              "per_sample": "theta, fdata, idata, out"}


class Program(NamedTuple):
    """A lowered function: ``name`` (a key of ``SIGNATURES``: ``core`` the log
    density and its gradient, ``value`` the log density, ``constants`` the
    summands ``core`` leaves out, ``pointwise`` one observed term's rows into
    ``out``, ``per_sample`` its gradient per observation into the rows of
    ``out``) and its statements; it returns ``lp``. ``term``: the observed
    term whose rows ``pointwise`` and ``per_sample`` write."""

    name: str
    body: tuple
    term: Optional[str] = None

    def lines(self):
        """One line per statement, nested bodies indented."""
        out = [f"{self.name}({SIGNATURES[self.name]}):"]
        _lines(self.body, 1, out)
        return out

    def __str__(self):
        return "\n".join(self.lines())

    def statements(self):
        """Every statement, nested ones included, in order."""
        return list(walk(self.body))


def _lines(body, depth, out):
    for statement in body:
        out.append("    " * depth + str(statement))
        if isinstance(statement, Blocked):
            for part in ("before", "body", "after"):
                out.append("    " * (depth + 1) + ("rows:" if part == "body" else f"{part} the rows:"))
                _lines(getattr(statement, part), depth + 2, out)
        elif isinstance(statement, (Map, When)):
            _lines(statement.body, depth + 1, out)
            if isinstance(statement, When) and statement.otherwise:
                out.append("    " * depth + "otherwise:")
                _lines(statement.otherwise, depth + 1, out)


def walk(body):
    """The statements of ``body`` and of the bodies nested in them, in order."""
    for statement in body:
        yield statement
        if isinstance(statement, Blocked):
            for part in (statement.before, statement.body, statement.after):
                yield from walk(part)
        elif isinstance(statement, (Map, When)):
            yield from walk(statement.body)
            if isinstance(statement, When):
                yield from walk(statement.otherwise)
