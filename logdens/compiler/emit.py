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
from logdens.layout import module_alias
from logdens.lines import indent, literal, plus
from logdens.ops import OPS


class Emitter:
    """Writes one program's function for one model's layout."""

    def __init__(self, layout):
        self.layout = layout
        self.workspaces = {}

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
        return literal(a) if isinstance(a, float) else str(a.name) if isinstance(a, ir.Value) else str(a)

    def position(self, at):
        index = None if at.index is None else self.arg(at.index)
        return plus(at.base, index) if index is not None else str(at.base)

    def element(self, buffer, at):
        """Code of ``buffer[at]``."""
        kind = buffer.kind
        if kind == "theta":
            slot = self.layout.params[buffer.name]
            return f"theta[{plus(slot.offset_code, self.arg(at.index)) if at.index is not None else slot.offset_code}]"
        if kind == "grad":
            slot = self.layout.params[buffer.name]
            return f"grad[{plus(slot.offset_code, self.arg(at.index)) if at.index is not None else slot.offset_code}]"
        if kind in ("constrained", "dconstrained", "aconstrained"):
            prefix = {"constrained": "w", "dconstrained": "dw", "aconstrained": "aw"}[kind]
            return f"{prefix}_{self.ident(buffer.name)}[{self.arg(at.index)}]"
        if kind == "workspace":
            return f"{buffer.name}[{self.arg(at.index)}]"
        if kind == "data":
            ident = self.layout.data[buffer.name].ident
            return f"d_{ident}[{self.arg(at.index) if at.index is not None else 0}]"
        raise ValueError(f"no element of {buffer}")

    def matrix(self, buffer, row, column):
        slot = self.layout.data[buffer.name]
        return f"d_{slot.ident}[{row}, {column}]" if slot.row_major else f"d_{slot.ident}[{column}, {row}]"

    def vector(self, buffer):
        """``(array, offset)`` of a parameter vector's buffer."""
        if buffer.kind == "theta" or buffer.kind == "grad":
            return buffer.kind, self.layout.params[buffer.name].offset_code
        prefix = {"constrained": "w", "dconstrained": "dw", "aconstrained": "aw"}[buffer.kind]
        return f"{prefix}_{self.ident(buffer.name)}", "0"

    # ----- statements -----------------------------------------------------
    def lines(self, body):
        out = []
        for statement in body:
            out += getattr(self, "_" + type(statement).__name__.lower())(statement)
        return out

    def _zero(self, s):
        return [f"{s.buffer.name if s.buffer.kind == 'workspace' else s.buffer.kind}[:] = 0.0"]

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
            self.workspaces[f"aw_{slot.ident}"] = slot.constrained_code
            return [f"aw_{slot.ident}[:] = 0.0", slot.transform.forward_code(slot.offset_code, slot.ident)]
        self.workspaces[f"dw_{slot.ident}"] = slot.size_code
        body = []
        x, dx = slot.transform.emit(body, f"theta[{plus(slot.offset_code, 'k')}]", f"u_{slot.ident}")
        return [f"for k in range({slot.size_code}):"] + indent(body + [f"{w}[k] = {x}", f"dw_{slot.ident}[k] = {dx}"])

    def _constrainadjoint(self, s):
        slot = self.layout.params[s.name]
        return [slot.transform.reverse_code(slot.offset_code, slot.ident, "grad", "1.0 if jacobian else 0.0")]

    def _jacobian(self, s):
        slot = self.layout.params[s.name]
        if slot.transform.event:
            return [f"lp += lj_{slot.ident}"]
        col = slot.offset_code if slot.shape == () else plus(slot.offset_code, "k")
        log_j, derivative = slot.transform.emit_log_jacobian(f"theta[{col}]")
        body = [f"lp += {log_j}", f"grad[{col}] += {derivative}"]
        return body if slot.shape == () else [f"for k in range({slot.size_code}):"] + indent(body)

    def _load(self, s):
        return [f"{s.out.name} = {self.element(s.buffer, s.at)}  # {s.out.label}"]

    def _index(self, s):
        if s.kind == "gather":
            ident = self.layout.data[s.array.name].ident
            return [f"{s.out.name} = i_{ident}[{self.arg(s.at)}]"]
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
        lines = [f"{result} = {module_alias(s.spec)}.logpdf_grad({', '.join(map(self.arg, s.args))}, {s.keep!r})",
                 f"{s.outs[0].name} = {result}[0]  # {s.outs[0].label}"]
        return lines + [f"{o.name} = {result}[{j}]" for j, o in enumerate(s.outs) if j and o is not None]

    def _dot(self, s):
        array, offset = self.vector(s.vector)
        j = f"j_{s.out.name}"
        return [f"{s.out.name} = 0.0  # {s.out.label}", f"for {j} in range({self.size(s.length)}):",
                f"    {s.out.name} += {self.matrix(s.matrix, self.arg(s.row), j)} * {array}[{plus(offset, j)}]"]

    def _dotadjoint(self, s):
        array, offset = self.vector(s.dest)
        j = f"j_{s.scale.name}"
        value = f"{self.arg(s.scale)} * {self.matrix(s.matrix, self.arg(s.row), j)}"
        if s.through is not None:
            value += f" * dw_{self.ident(s.through.name)}[{j}]"
        return [f"for {j} in range({self.size(s.length)}):", f"    {array}[{plus(offset, j)}] += {value}"]

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

    def _when(self, s):
        body = self.lines(s.body)
        return [f"if {s.flag}:"] + indent(body) if body else []


def source(program, model, layout, jit=True):
    """The module holding ``program`` as ``core(theta, grad, fdata, idata,
    jacobian)``: compiled by numba (``jit``) or plain Python (the twin)."""
    from logdens import engine
    emitter = Emitter(layout)
    body = emitter.lines(program.body)
    allocations = [f"{name} = np.empty({size})" for name, size in emitter.workspaces.items()]
    lines = (layout.prologue() + allocations + ["lp = 0.0"] + body
             + engine.gradient_rejections(layout) + ["return lp"])
    decorator = [f"@{engine.JIT.replace('cache=True', 'cache=False')}"] if jit else []
    header = engine.header(model, layout, "a lowered program")
    return "\n".join(header + decorator + [f"def {program.name}(theta, grad, fdata, idata, jacobian):"]
                     + indent(lines) + [""]) + "\n"


def load(text):
    """The functions of generated module ``text``."""
    namespace = {"__name__": "logdens_program"}
    exec(compile(text, "<logdens program>", "exec"), namespace)
    return types.SimpleNamespace(**{k: v for k, v in namespace.items() if not k.startswith("__")})
