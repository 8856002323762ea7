"""The CPU schedule: passes over a lowered program that make its loops vectorize.

``assign_first``: a vector parameter whose gradient entries are first
written by one term's map, each at its own row, has them assigned there
instead of zeroed before the terms and added to (one pass over the gradient
less).

``row_blocks``: a term's map that reads ``X @ beta`` or gathers ``a[idx]`` at
its rows runs in blocks of rows. Per block, the products and the gathered
elements go into small buffers before the rows, the rows read and write only
those buffers at their own row (so the loop over them vectorizes), and the
products' transposes and the scatters of the gathered elements' adjoints run
after them. No array of the data's length is made.
"""

from logdens.compiler import ir


def row_blocks(program):
    """``program`` with its term maps that read products or gathers in blocks."""
    return ir.Program(program.name, _each(program.body))


def _each(body):
    out = []
    for s in body:
        if isinstance(s, ir.When):
            s = ir.When(s.flag, _each(s.body))
        elif isinstance(s, ir.Map) and not s.backward:
            s = _blocked(s)
        out.append(s)
    return tuple(out)


def _gathers(s):
    """The names of the positions ``s`` gathers at its own row: name -> its Index."""
    return {x.out.name: x for x in s.body if isinstance(x, ir.Index) and x.kind == "gather" and x.at == s.index}


def _blocked(s):
    """``s`` as a ``Blocked`` map, or as it is when it reads no product or gather at its rows."""
    gathers = _gathers(s)
    at_gather = {x.out.name for x in s.body if isinstance(x, ir.Load) and _gathered(x.at, gathers)}
    if not at_gather and not any(isinstance(x, ir.Dot) and x.row == s.index for x in s.body):
        return s
    before, body, after, row = [], [], [], ir.At(s.index)
    for x in s.body:
        if isinstance(x, ir.Dot) and x.row == s.index:
            buffer = ir.Buffer("block", f"eta_{x.out.name}")
            before.append(ir.BlockProduct(buffer, x.matrix, x.vector, x.length))
            body.append(ir.Load(x.out, buffer, row))
        elif isinstance(x, ir.DotAdjoint) and x.row == s.index:
            adjoints = ir.Buffer("block", f"aeta_{x.of.name}")
            body.append(ir.Store(adjoints, row, x.scale))
            after.append(ir.BlockProductAdjoint(x.dest, x.matrix, adjoints, x.length, x.through))
        elif isinstance(x, ir.Load) and _gathered(x.at, gathers):
            buffer = ir.Buffer("block", f"g_{x.out.name}")
            index = gathers[x.at.index.name]
            before.append(ir.BlockGather(buffer, x.buffer, index.array, x.at.base))
            body.append(ir.Load(x.out, buffer, row))
        elif isinstance(x, ir.Accumulate) and x.at is not None and _gathered(x.at, gathers):
            adjoints = ir.Buffer("block", f"ag_{x.value.name}")
            body.append(ir.Store(adjoints, row, x.value))
            after.append(ir.BlockScatter(x.dest, gathers[x.at.index.name].array, adjoints, x.at.base))
        else:
            body.append(x)
    used = {y.at.index.name for y in ir.walk(body) if isinstance(y, (ir.Load, ir.Accumulate))
            and y.at is not None and isinstance(y.at.index, ir.Value)}
    body = [x for x in body if not (isinstance(x, ir.Index) and x.out.name in gathers and x.out.name not in used)]
    return ir.Blocked(s.plate, s.index, tuple(before), tuple(body), tuple(after))


def _gathered(at, gathers):
    return at is not None and isinstance(at.index, ir.Value) and at.index.name in gathers



def assign_first(program):
    """``program`` with the first writer of each vector parameter's gradient
    entries assigning them, where one top-level map writes every entry once,
    at its own row, before anything else writes them."""
    writers = {}  # parameter -> (position of the top-level statement, statement) of every write
    for position, top in enumerate(program.body):
        for s in ir.walk([top]):
            name = _grad_written(s)
            if name is not None:
                writers.setdefault(name, []).append((position, top, s))
    assigned = {}
    for name, writes in writers.items():
        position, top, first = writes[0]
        rows = top.index if isinstance(top, (ir.Map, ir.Blocked)) and not getattr(top, "backward", False) else None
        in_top = [s for p, t, s in writes if p == position]
        if (rows is not None and len(in_top) == 1 and isinstance(first, ir.Accumulate)
                and first.kind == "own_row" and first.at.index == rows and any(x is first for x in top.body)):
            assigned[id(first)] = ir.Store(first.dest, first.at, first.value)
    if not assigned:
        return program
    kept = tuple(s.buffer.name for s in assigned.values())
    body = tuple(ir.Zero(s.buffer, kept) if isinstance(s, ir.Zero) and s.buffer.kind == "grad" else s
                 for s in program.body)
    return ir.Program(program.name, tuple(_replace(s, assigned) for s in body))


def _grad_written(s):
    """The parameter whose gradient entries ``s`` writes, or None."""
    if isinstance(s, (ir.Accumulate, ir.DotAdjoint, ir.BlockProductAdjoint, ir.BlockScatter)):
        dest = s.dest
        return dest.name if isinstance(dest, ir.Buffer) and dest.kind == "grad" else None
    if isinstance(s, (ir.ConstrainAdjoint, ir.Jacobian)):
        return s.name
    return None


def _replace(s, assigned):
    if id(s) in assigned:
        return assigned[id(s)]
    if isinstance(s, ir.Blocked):
        return s._replace(body=tuple(_replace(x, assigned) for x in s.body))
    if isinstance(s, (ir.Map, ir.When)):
        return s._replace(body=tuple(_replace(x, assigned) for x in s.body))
    return s
