"""The numba-CPU emitter: a lowered program (``ir.Program``) as Python source.

It knows nothing of AD: each statement becomes its lines, a ``Map`` a loop.
The buffers are bound as the engine binds them (``Layout.prologue``): data
``d_<ident>``, index arrays ``i_<ident>``, lengths ``n_<ident>``, a
transformed vector parameter's values ``w_<ident>``, derivatives
``dw_<ident>`` and adjoints ``aw_<ident>``. ``jit=False`` writes the Python
twin (plain Python, for tests and debuggers), chosen here, not by stripping
decorators afterwards.
"""

import types

from logdens.compiler import ir
from logdens.cpu_blocks import BLOCK, column_groups, product_group, scatter, transposed_group
from logdens.layout import module_alias
from logdens.lines import indent, literal, plus
from logdens.ops import OPS


class Emitter:
    """Writes one program's function for one model's layout."""

    def __init__(self, layout):
        self.layout = layout
        self.workspaces = {}
        self.block, self.views = None, {}  # in a map in blocks: its row, and views of the block
        self.edge = None  # before or after a block's rows: the map's row

    def ident(self, name):
        return self.layout.params[name].ident

    def size(self, size):
        """Code of an ``ir.Size``."""
        if size.kind == "data":
            return f"n_{self.layout.data[size.name].ident}"
        if size.kind == "param":
            return self.layout.params[size.name].size_code
        if size.kind == "slice":
            return str(size.node.bounds(self.size(size.of))[1])
        return str(size.value)

    def arg(self, a):
        """Code of a statement's argument; the block's row as a position in the array (``b0 + i``)."""
        if isinstance(a, float):
            return literal(a)
        if isinstance(a, ir.Value):
            return a.name
        return f"(b0 + {a})" if self.block is not None and a == self.block else str(a)

    def position(self, at):
        index = None if at.index is None else self.arg(at.index)
        return plus(at.base, index) if index is not None else str(at.base)

    def array(self, buffer):
        """``(array, base)``: the code of ``buffer``'s array and of its first element's position."""
        kind = buffer.kind
        if kind in ("theta", "grad"):
            return kind, self.layout.params[buffer.name].offset_code
        if kind in ("constrained", "dconstrained", "aconstrained"):
            prefix = {"constrained": "w", "dconstrained": "dw", "aconstrained": "aw"}[kind]
            return f"{prefix}_{self.ident(buffer.name)}", "0"
        if kind == "data":
            return f"d_{self.layout.data[buffer.name].ident}", "0"
        if kind in ("workspace", "block", "out", "event"):
            return buffer.name, "0"
        raise ValueError(f"no element of {buffer}")

    def element(self, buffer, at):
        """Code of ``buffer[at]``. In a map in blocks, an element at the block's row
        is read through a view of the block (``rows``: numba then knows the
        position is not negative, and the loop vectorizes)."""
        if buffer.kind == "rows":  # a per-sample row: its parameter's columns
            slot = self.layout.params[buffer.name]
            column = plus(slot.offset_code, self.arg(at.index)) if at.index is not None else slot.offset_code
            return f"out[{self.arg(buffer.row)}, {column}]"
        array, base = self.array(buffer)
        if at.index is None:
            return f"{array}[{base}]"
        if buffer.kind == "block":  # the block's own rows
            return f"{array}[{at.index}]"
        if self.block is not None and at.index == self.block:
            view = f"{array}_b{len(self.views)}" if (array, base) not in self.views else self.views[(array, base)][0]
            self.views[(array, base)] = (view, f"{array}[{plus(base, 'b0')}:{plus(base, 'b1')}]")
            return f"{view}[{at.index}]"
        return f"{array}[{plus(base, self.arg(at.index))}]"

    def matrix(self, buffer, row, column):
        slot = self.layout.data[buffer.name]
        return f"d_{slot.ident}[{row}, {column}]" if slot.row_major else f"d_{slot.ident}[{column}, {row}]"


    # ----- statements -----------------------------------------------------
    def lines(self, body):
        out = []
        for statement in body:
            out += getattr(self, "_" + type(statement).__name__.lower())(statement)
        return out

    def _zero(self, s):
        if s.buffer.kind == "rows":  # before a block's rows: all of them; but the parameters ``kept``
            row = 'b0:b1' if s.buffer.row == self.edge else self.arg(s.buffer.row)
            if not s.kept:
                return [f"out[{row}, :] = 0.0"]
            return [f"out[{row}, {a}:{b}] = 0.0" for a, b in self.layout.spans(lambda p: p.name not in s.kept)]
        if s.buffer.kind == "grad":  # but the parameters whose first writer assigns (``kept``)
            return [f"grad[{a}:{b}] = 0.0" for a, b in self.layout.spans(lambda p: p.name not in s.kept)]
        if s.buffer.kind == "aconstrained":  # an event transform's adjoints: a workspace of the gradient's only
            slot = self.layout.params[s.buffer.name]
            self.workspaces[f"aw_{slot.ident}"] = slot.constrained_code
        return [f"{self.array(s.buffer)[0]}[:] = 0.0"]

    def _workspace(self, s):
        self.workspaces[s.buffer.name] = self.size(s.size)
        return []

    def _store(self, s):
        return [f"{self.element(s.buffer, s.at)} = {self.arg(s.value)}"]

    def _constrain(self, s):
        slot = self.layout.params[s.name]
        if s.out is not None:
            lines = []
            x, dx = slot.transform.emit(lines, f"theta[{slot.offset_code}]", s.out.name)
            return lines + [f"{s.out.name} = {x}", f"{s.dout.name} = {dx}"]
        w = f"w_{slot.ident}"
        self.workspaces[w] = slot.constrained_code
        if slot.transform.event:
            return [slot.transform.forward_code(slot.offset_code, slot.ident)]
        self.workspaces[f"dw_{slot.ident}"] = slot.size_code
        body = []
        x, dx = slot.transform.emit(body, f"theta[{plus(slot.offset_code, 'k')}]", f"u_{slot.ident}")
        return [f"for k in range({slot.size_code}):"] + indent(body + [f"{w}[k] = {x}", f"dw_{slot.ident}[k] = {dx}"])

    def _constrainadjoint(self, s):
        slot = self.layout.params[s.name]
        if s.row is not None:
            return [slot.transform.reverse_code(slot.offset_code, slot.ident, f"out[{s.row}]", "0.0")]
        return [slot.transform.reverse_code(slot.offset_code, slot.ident, "grad", "1.0 if jacobian else 0.0")]

    def _jacobian(self, s):
        slot = self.layout.params[s.name]
        if slot.transform.event:
            return [f"lp += lj_{slot.ident}"]
        col = slot.offset_code if slot.shape == () else plus(slot.offset_code, "k")
        log_j, derivative = slot.transform.emit_log_jacobian(f"theta[{col}]")
        body = [f"lp += {log_j}"] + ([f"grad[{col}] += {derivative}"] if s.gradient else [])
        return body if slot.shape == () else [f"for k in range({slot.size_code}):"] + indent(body)

    def _load(self, s):
        return [f"{s.out.name} = {self.element(s.buffer, s.at)}  # {s.out.label}"]

    def _index(self, s):
        if s.kind == "gather":
            ident = self.layout.data[s.array.name].ident
            return [f"{s.out.name} = i_{ident}[{self.arg(s.at)}]"]
        if s.kind == "flat":
            a, stride, b = s.at
            return [f"{s.out.name} = {self.arg(a)} * {stride} + {self.arg(b)}"]
        if s.kind == "broadcast":  # the operand's axes (aligned at the right) that are not 1
            j, event, shape = s.at
            terms, lead = [], len(event) - len(shape)
            for d, n in enumerate(shape):
                if n != 1:
                    index = f"({self.arg(j)} // {_size(event[lead + d + 1:])}) % {event[lead + d]}"
                    terms.append(f"{index} * {_size(shape[d + 1:])}")
            return [f"{s.out.name} = {' + '.join(terms) or '0'}"]
        if s.kind == "shift":
            start = s.node.bounds(self.size(s.size))[0]
            return [f"{s.out.name} = {start} + {s.node.step} * {self.arg(s.at)}"]
        return [f"{s.out.name} = {s.node.at(self.size(s.size))}"]

    def _let(self, s):
        return [f"{s.out.name} = {OPS[s.op].value.format(*map(self.arg, s.args))}  # {s.out.label}"]

    def _partial(self, s):
        derivative = OPS[s.op].derivatives[s.k].format(*map(self.arg, s.args), v=s.value.name)
        return [f"{s.out.name} = {derivative}"]

    def _call(self, s):
        result = f"r_{s.outs[0].name}"
        lines = [f"{result} = {module_alias(s.spec)}.logpdf_grad({', '.join(map(self.arg, s.args))}, {s.keep!r}"
                 f"{', True' if s.x_checked else ''})",
                 f"{s.outs[0].name} = {result}[0]  # {s.outs[0].label}"]
        return lines + [f"{o.name} = {result}[{j}]" for j, o in enumerate(s.outs) if j and o is not None]

    def _dot(self, s):
        array, offset = self.array(s.vector)
        j = f"j_{s.out.name}"
        return [f"{s.out.name} = 0.0  # {s.out.label}", f"for {j} in range({self.size(s.length)}):",
                f"    {s.out.name} += {self.matrix(s.matrix, self.arg(s.row), j)} * {array}[{plus(offset, j)}]"]

    def _dotadjoint(self, s):
        j = f"j_{s.scale.name}"
        value = f"{self.arg(s.scale)} * {self.matrix(s.matrix, self.arg(s.row), j)}"
        if s.through is not None:
            value += f" * dw_{self.ident(s.through.name)}[{j}]"
        return [f"for {j} in range({self.size(s.length)}):", f"    {self.element(s.dest, ir.At(j))} += {value}"]

    def _view(self, s):
        """An event as a flat view of the array that holds it (``ir.View``)."""
        kind, size = s.buffer.kind, max(1, _size(s.out.event))
        if kind in ("theta", "constrained"):
            array, base = self.array(s.buffer)
            if s.at.index is not None:  # row ``at`` of a matrix
                base = plus(base, f"{self.arg(s.at.index)} * {size}")
            return [f"{s.out.name} = {array}[{base}:{plus(base, size)}]  # {s.out.label}"]
        slot = self.layout.data[s.buffer.name]
        if s.at.index is not None:
            return [f"{s.out.name} = d_{slot.ident}[{self.arg(s.at.index)}]  # {s.out.label}"]
        return [f"{s.out.name} = d_{slot.ident}.reshape(({size},))  # {s.out.label}"]

    def _eventcall(self, s):
        def event(a):
            if not isinstance(a, ir.Value) or len(a.event) < 2:
                return self.arg(a)
            return f"{a.name}.reshape({a.event!r})"
        partials = [event(p) if p is not None else "None" for p in s.partials]
        args = ", ".join(map(event, s.args))
        return [f"{s.out.name} = {module_alias(s.spec)}.logpdf_grad({args}, {s.keep!r}, {s.work.name}, "
                f"{', '.join(partials)})  # {s.out.label}"]

    def _local(self, s):
        return [f"{s.out.name} = {literal(s.init)}"]

    def _accumulate(self, s):
        if isinstance(s.dest, ir.Value):
            dest = s.dest.name
        elif s.dest.kind == "lp":
            dest = "lp"
        else:
            dest = self.element(s.dest, s.at)
        if s.op == "max":
            return [f"{dest} = max({dest}, {self.arg(s.value)})"]
        return [f"{dest} += {self.arg(s.value)}"]

    def _length(self, s):
        return [f"{s.out.name} = float({self.size(s.size)})  # {s.out.label}"]

    def _map(self, s):
        n = self.size(s.plate.length)
        loop = f"range({n} - 1, -1, -1)" if s.backward else f"range({n})"
        return [f"for {s.index} in {loop}:  # {s.plate.name}"] + indent(self.lines(s.body) or ["pass"])

    def _blocked(self, s):
        """The map in blocks of ``BLOCK`` rows; its buffers rows of one array
        allocated once per call."""
        n = self.size(s.plate.length)
        buffers = [b for x in s.before + s.after for b in _block_buffers(x)]
        buffers += [x.buffer for x in ir.walk(s.body)
                    if isinstance(x, ir.Store) and x.buffer.kind == "block" and x.buffer not in buffers]
        scratch = f"scratch_{s.index}"
        self.workspaces[scratch] = f"({len(buffers)}, {BLOCK})"
        lines = [f"{b.name} = {scratch}[{k}]" for k, b in enumerate(buffers)]
        lines += [f"v{x.buffer.name} = {self.span(x.vector)}" for x in s.before if isinstance(x, ir.BlockProduct)]
        self.block, self.views = s.index, {}
        rows = self.lines(s.body)
        views = [f"{view} = {code}" for view, code in self.views.values()]
        self.block, self.edge = None, s.index
        inner = [f"b1 = min(b0 + {BLOCK}, {n})"] + views + self.lines(s.before)
        inner += [f"for {s.index} in range(b1 - b0):  # {s.plate.name}"] + indent(rows or ["pass"])
        rows_out = [x for x in s.after if x.dest.kind == "rows"]
        inner += self.lines([x for x in s.after if x.dest.kind != "rows"]) + self._row_writes(rows_out)
        self.edge = None
        return lines + [f"for b0 in range(0, {n}, {BLOCK}):"] + indent(inner)

    def span(self, buffer):
        """Code of a parameter vector's constrained values (a view of ``theta``)."""
        slot = self.layout.params[buffer.name]
        if buffer.kind == "theta":
            return f"theta[{slot.offset_code}:{slot.end_code}]"
        return f"w_{slot.ident}"

    def _blockproduct(self, s):
        X, size = f"d_{self.layout.data[s.matrix.name].ident}", self.layout.params[s.vector.name].constrained_size
        if self.layout.data[s.matrix.name].row_major:  # stored row by row (read whole elsewhere): a row's dot
            return ["for r in range(b1 - b0):", "    acc = 0.0", f"    for j in range({size}):",
                    f"        acc += {X}[b0 + r, j] * v{s.buffer.name}[j]", f"    {s.buffer.name}[r] = acc"]
        return [f"{s.buffer.name}[:b1 - b0] = 0.0"] + column_groups(
            size, lambda cols: product_group(X, s.buffer.name, cols))

    def _row_writes(self, statements):
        """Per-sample rows' entries after a block's rows (``BlockScatter`` and
        ``BlockProductAdjoint`` into ``rows``): one loop over the block's rows,
        each writing its own output row, its parameters in the row's order."""
        setup, body = [], []
        for s in sorted(statements, key=lambda s: self.layout.params[s.dest.name].offset):
            add = "=" if s.assign else "+="
            if isinstance(s, ir.BlockProductAdjoint):
                scale = f" * dw_{self.ident(s.through.name)}[j]" if s.through is not None else ""
                entry = self.element(s.dest._replace(row="b0 + r"), ir.At("j"))
                adjoint = f"r_{s.adjoints.name}"  # a local: LLVM cannot tell ``out`` is not the buffer
                body += [f"{adjoint} = {s.adjoints.name}[r]", f"for j in range({self.size(s.length)}):",
                         f"    {entry} {add} {adjoint} * {self.matrix(s.matrix, 'b0 + r', 'j')}{scale}"]
                continue
            view = None
            if s.index is not None:
                view = f"view_{s.adjoints.name}"
                setup.append(f"{view} = i_{self.layout.data[s.index.name].ident}[b0:b1]")
            at = ir.At(f"{view}[r]" if view else None, s.base)
            body.append(f"{self.element(s.dest._replace(row='b0 + r'), at)} {add} {s.adjoints.name}[r]")
        return setup + ["for r in range(b1 - b0):"] + indent(body) if body else []

    def _blockproductadjoint(self, s):
        X, size = f"d_{self.layout.data[s.matrix.name].ident}", self.layout.params[s.dest.name].constrained_size
        product = s.adjoints.name[1:]  # transposed_group reads a<product>

        def sink(c):
            scale = f"dw_{self.ident(s.through.name)}[{c}] * " if s.through is not None else ""
            return lambda value: f"{self.element(s.dest, ir.At(c))} += {scale}{value}"
        if self.layout.data[s.matrix.name].row_major:  # stored row by row: the column sums row by row
            return ["for j in range(" + str(size) + "):", "    acc = 0.0", "    for r in range(b1 - b0):",
                    f"        acc += {X}[b0 + r, j] * {s.adjoints.name}[r]", "    " + sink("j")("acc")]
        return column_groups(size, lambda cols: transposed_group(X, product, cols, [sink(c) for c in cols]))

    def _blockgather(self, s):
        """Through a view of the block's indices: numba wraps a negative index, and
        LLVM cannot tell ``b0 + r`` is not (``codegen.Lowering._value_gather``)."""
        ident, view = self.layout.data[s.index.name].ident, f"view_{s.buffer.name}"
        load = self.element(s.source, ir.At(f"{view}[r]", s.base))
        return [f"{view} = i_{ident}[b0:b1]", "for r in range(b1 - b0):", f"    {s.buffer.name}[r] = {load}"]

    def _blockscatter(self, s):
        ident, view = self.layout.data[s.index.name].ident, f"view_{s.adjoints.name}"

        def entry(k):
            return lambda value: f"{self.element(s.dest, ir.At(k, s.base))} += {value}"
        return [f"{view} = i_{ident}[b0:b1]"] + scatter(view, f"sorted_{ident}", entry, s.adjoints.name)

    def _when(self, s):
        body, otherwise = self.lines(s.body), self.lines(s.otherwise)
        if otherwise:
            return [f"if {s.flag}:"] + indent(body or ["pass"]) + ["else:"] + indent(otherwise)
        return [f"if {s.flag}:"] + indent(body) if body else []


def _size(event):
    out = 1
    for n in event:
        out *= n
    return out


def _block_buffers(statement):
    """The block buffers a statement before or after a block's rows fills or reads."""
    if isinstance(statement, (ir.BlockProduct, ir.BlockGather)):
        return [statement.buffer]
    return [statement.adjoints] if isinstance(statement, (ir.BlockScatter, ir.BlockProductAdjoint)) else []


def function(program, model, layout, jit=True):
    """The lines of ``program``'s function, compiled by numba (``jit``) or plain
    Python (the twin): a log density that is NaN or +inf is rejected (-inf),
    and ``core``'s also where its gradient overflowed (``engine.gradient_rejections``)."""
    from logdens import engine
    emitter = Emitter(layout)
    body = emitter.lines(program.body)
    allocations = [f"{name} = np.empty({size})" for name, size in emitter.workspaces.items()]
    ending = {"core": engine.gradient_rejections(layout), "value": engine.REJECT}.get(program.name, [])
    checked = []
    if program.term is not None:  # its output has one row per row of the data given
        term = next(t for t in model.terms if t.name == program.term)
        checked = engine._rows_checked(layout, term, program.name, ["out"])
    lines = layout.prologue() + allocations + checked + ["lp = 0.0"] + body + ending + ["return lp"]
    decorator = [f"@{engine.JIT.replace('cache=True', 'cache=False')}"] if jit else []
    name = program.name if program.term is None else f"{program.name}_{layout.term_idents[program.term]}"
    return decorator + [f"def {name}({ir.SIGNATURES[program.name]}):"] + indent(lines) + [""]


def source(programs, model, layout, jit=True):
    """The module of ``programs`` (one ``ir.Program`` or several)."""
    from logdens import engine
    programs = [programs] if isinstance(programs, ir.Program) else programs
    lines = engine.header(model, layout, "a lowered program")
    for program in programs:
        lines += function(program, model, layout, jit) + [""]
    return "\n".join(lines) + "\n"


def load(text):
    """The functions of generated module ``text``."""
    namespace = {"__name__": "logdens_program"}
    exec(compile(text, "<logdens program>", "exec"), namespace)
    return types.SimpleNamespace(**{k: v for k, v in namespace.items() if not k.startswith("__")})
