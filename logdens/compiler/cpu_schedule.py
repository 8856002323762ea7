"""The CPU schedule: passes over a lowered program that make its loops vectorize.

``one_pass_sums``: a sum whose elements read one vector parameter, at their
rows, that nothing else reads, stores each element's derivative in that
parameter's gradient entry in its forward map; the map after the terms only
scales them by the sum's adjoint (no second pass recomputing the elements).

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
    return program._replace(body=_each(program.body))


def _each(body):
    out = []
    for s in body:
        if isinstance(s, ir.When):
            s = s._replace(body=_each(s.body), otherwise=_each(s.otherwise))
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
    used |= {y.at.name for y in ir.walk(body) if isinstance(y, ir.Index) and isinstance(y.at, ir.Value)}
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
        at_rows = (rows is not None and len(in_top) == 1 and isinstance(first, (ir.Store, ir.Accumulate))
                   and first.at is not None and first.at.index == rows and any(x is first for x in top.body))
        if at_rows and isinstance(first, ir.Store):  # assigned already (``one_pass_sums``)
            assigned[id(first)] = first
        elif at_rows and isinstance(first, ir.Accumulate) and first.kind == "own_row":
            assigned[id(first)] = ir.Store(first.dest, first.at, first.value)
    if not assigned:
        return program
    kept = tuple(s.buffer.name for s in assigned.values())
    body = tuple(ir.Zero(s.buffer, kept) if isinstance(s, ir.Zero) and s.buffer.kind == "grad" else s
                 for s in program.body)
    return program._replace(body=tuple(_replace(s, assigned) for s in body))


def _grad_written(s):
    """The parameter whose gradient entries ``s`` writes, or None."""
    if isinstance(s, (ir.Accumulate, ir.DotAdjoint, ir.BlockProductAdjoint, ir.BlockScatter, ir.Store)):
        dest = s.buffer if isinstance(s, ir.Store) else s.dest
        return dest.name if isinstance(dest, ir.Buffer) and dest.kind == "grad" else None
    if isinstance(s, (ir.ConstrainAdjoint, ir.Jacobian)):
        return s.name
    return None


def _replace(s, assigned):
    if id(s) in assigned:
        return assigned[id(s)]
    if isinstance(s, ir.Blocked):
        return s._replace(body=tuple(_replace(x, assigned) for x in s.body))
    if isinstance(s, ir.When):
        return s._replace(body=tuple(_replace(x, assigned) for x in s.body),
                          otherwise=tuple(_replace(x, assigned) for x in s.otherwise))
    if isinstance(s, ir.Map):
        return s._replace(body=tuple(_replace(x, assigned) for x in s.body))
    return s


def one_pass_sums(program):
    """``program`` with each eligible sum's reverse map fused into its forward one
    (see the module docstring)."""
    body = list(program.body)
    forward = {s.pair: k for k, s in enumerate(body) if isinstance(s, ir.Map) and s.pair and s.seed is None}
    for k, back in enumerate(body):
        if not (isinstance(back, ir.Map) and back.pair and back.seed is not None and back.pair in forward):
            continue
        f = forward[back.pair]
        name = _sole_row_parameter(back, [s for j, s in enumerate(body) if j not in (f, k)])
        if name is None:
            continue
        derivative = tuple(_with_unit_seed(s, back.seed) for s in back.body)
        body[f] = body[f]._replace(body=body[f].body + derivative)
        g, scaled = (ir.Value(f"{prefix}_{back.pair}", back.plate.name, (), f"d lp / d {name}") for prefix in ("g", "sg"))
        grad, at = _written(back).dest, _written(back).at
        body[k] = ir.Map(back.plate, back.index, (ir.Load(g, grad, at), ir.Let(scaled, "mul", (g, back.seed)),
                                                  ir.Store(grad, at, scaled)))
    return program._replace(body=tuple(body))


def _written(back):
    return next(s for s in ir.walk(back.body) if _grad_written(s) is not None)


def _sole_row_parameter(back, others):
    """The vector parameter whose gradient ``back`` writes, once per row at its own
    row and nothing else, if no statement of ``others`` reads or writes it; else None."""
    writes = [s for s in ir.walk(back.body) if _grad_written(s) is not None]
    if len(writes) != 1 or not isinstance(writes[0], ir.Accumulate):
        return None
    write = writes[0]
    if write.kind != "own_row" or write.at.index != back.index or write.dest.kind != "grad":
        return None
    name = write.dest.name
    if any(_touches(s, name) for s in ir.walk(others)):
        return None
    own = {getattr(s, "out").name for s in ir.walk(back.body) if isinstance(getattr(s, "out", None), ir.Value)}
    if any(isinstance(s, ir.Accumulate) and isinstance(s.dest, ir.Value) and s.dest.name not in own
           for s in ir.walk(back.body)):
        return None  # it also adds to the adjoint of a value outside (a scalar in the sum)
    return name


def _touches(s, name):
    """Whether statement ``s`` reads or writes parameter ``name``'s values or gradient."""
    if _grad_written(s) == name and not isinstance(s, ir.Jacobian):
        return True
    buffers = [getattr(s, field) for field in ("buffer", "vector", "source") if hasattr(s, field)]
    return any(isinstance(b, ir.Buffer) and b.name == name and b.kind in ("theta", "constrained", "grad")
               for b in buffers)


def _with_unit_seed(s, seed):
    """``s`` with the reduction's adjoint ``seed`` replaced by 1.0, and its gradient
    write an assignment (the derivative of the row's element)."""
    if isinstance(s, ir.Accumulate) and s.value == seed:
        return s._replace(value=1.0)
    if isinstance(s, ir.Accumulate) and _grad_written(s) is not None:
        return ir.Store(s.dest, s.at, s.value)
    if isinstance(s, ir.Map):
        return s._replace(body=tuple(_with_unit_seed(x, seed) for x in s.body))
    return s
