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
after them. No array of the data's length is made. Per-sample rows the same:
the block's output rows are zeroed before its rows, and the entries of its
scalars, its products and its gathered elements written after them, each
row into its own output row; rows not in blocks are zeroed all at once
before the map (one pass over the output, not one per row).

``hoist_gathers``: a gathered elementwise expression of parameters
(``(mu + sigma * z)[group]``) is computed once per element into a workspace
by a map before the term's, and the rows read it at their position as they
read a parameter (so ``row_blocks`` gathers it into a block's buffer). Its
adjoint, a linear function of the expression's own adjoint, is not swept back
in every row: the rows scatter that adjoint into a second workspace, and a
map after the term's sweeps it back once per element. The pass finds the
expression by data flow over the map's statements, not by node types: the
statements that read only the gathered position, values outside the map
and each other (the expression), and those that read only these and the
expression's adjoints (its sweep); the one expression value the rest of the
row reads is hoisted. Two annotations of the program make that a pass:
a gather's ``ir.Index`` carries the length of what it gathers from (the
element maps' plate), and ``ir.Value.adjoint`` names a value's adjoint.
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
            if isinstance(s, ir.Map) and s.body and _own_row(s.body[0], s.index) and isinstance(s.body[0], ir.Zero):
                out.append(ir.Zero(ir.Buffer("out", "out")))  # per-sample rows not in blocks: all at once
                s = s._replace(body=s.body[1:])
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
    if any(isinstance(x, (ir.Map, ir.When, ir.ConstrainAdjoint)) for x in s.body):
        return s  # per-sample rows that sweep a sum or an event transform back in each row
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
        elif _own_row(x, s.index) and isinstance(x, ir.Zero):
            before.append(x)
        elif _own_row(x, s.index) and isinstance(x, ir.Accumulate) and x.at.index is None:
            adjoints = ir.Buffer("block", f"as_{x.value.name}")
            body.append(ir.Store(adjoints, row, x.value))
            after.append(ir.BlockScatter(x.dest, None, adjoints, x.at.base))
        else:
            body.append(x)
    used = {y.at.index.name for y in ir.walk(body) if isinstance(y, (ir.Load, ir.Accumulate))
            and y.at is not None and isinstance(y.at.index, ir.Value)}
    used |= {y.at.name for y in ir.walk(body) if isinstance(y, ir.Index) and isinstance(y.at, ir.Value)}
    body = [x for x in body if not (isinstance(x, ir.Index) and x.out.name in gathers and x.out.name not in used)]
    before, after = _rows_assigned(before, body, after, s.index)
    return ir.Blocked(s.plate, s.index, tuple(before), tuple(body), tuple(after))


def _rows_assigned(before, body, after, row):
    """``(before, after)`` where a parameter's per-sample columns have one writer,
    after the block's rows, that writes each once per row (a product's
    transpose, a scalar's entry): it assigns them, and the zero of the block's
    rows leaves them out (as ``assign_first`` for ``grad``)."""
    zero = [x for x in before if isinstance(x, ir.Zero) and _own_row(x, row)]
    if not zero:
        return before, after
    writers = {}
    for x in list(ir.walk(body)) + after:
        if _own_row(x, row):
            writers.setdefault(x.dest.name, []).append(x)
    kept = {name for name, (x, *more) in writers.items() if not more and any(x is y for y in after)
            and (isinstance(x, ir.BlockProductAdjoint) or isinstance(x, ir.BlockScatter) and x.index is None)}
    before = [x._replace(kept=tuple(sorted(kept))) if x is zero[0] else x for x in before]
    return before, [x._replace(assign=True) if x.dest.name in kept and _own_row(x, row) else x for x in after]


def _own_row(x, row):
    """Whether ``x`` zeroes or adds into per-sample row ``row`` (a per-sample
    row's zero runs for the block's rows before them; an entry of a scalar
    parameter goes through a block buffer, written after them)."""
    dest = x.buffer if isinstance(x, ir.Zero) else getattr(x, "dest", None)
    return isinstance(dest, ir.Buffer) and dest.kind == "rows" and dest.row == row


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


def hoist_gathers(program):
    """``program`` with the gathered expressions of its maps computed once per
    element (see the module docstring); a sum's maps (``pair``) stay as they are."""
    return program._replace(body=_hoisted(program.body))


def _hoisted(body):
    out = []
    for s in body:
        if isinstance(s, ir.When):
            out.append(s._replace(body=_hoisted(s.body), otherwise=_hoisted(s.otherwise)))
        elif isinstance(s, ir.Map) and not s.backward and s.pair is None:
            out += _hoist(s)
        else:
            out.append(s)
    return tuple(out)


def _hoist(s):
    """Map ``s`` as statements: the element maps of its gathered expressions,
    the map reading them, and the maps sweeping their adjoints back."""
    if any(isinstance(x, (ir.Map, ir.Blocked, ir.When)) for x in s.body):
        return [s]
    before, after = [], []
    for index in [x for x in s.body if isinstance(x, ir.Index) and x.kind == "gather" and x.at == s.index]:
        found = _expression(s, index.out)
        if found is not None:
            s, ahead, behind = _moved(s, index, *found)
            before, after = before + ahead, behind + after
    return before + [s] + after


def _expression(s, k):
    """``(root, expression, sweep)``: the statements of map ``s`` that compute a
    value ``root`` from position ``k`` and values outside the map alone, and
    those that sweep its adjoint back; None where there is no such value
    worth hoisting (a parameter read alone, data alone) or the rest of the
    row reads more of it than ``root``."""
    positions, values, expression = {k.name}, {}, []
    for x in s.body:
        names = _names(x)
        if isinstance(x, ir.Index) and names & positions and _within(x, positions):
            positions.add(x.out.name)
        elif not (isinstance(x, ir.Load) and names & positions and _within(x, positions) or isinstance(
                x, (ir.Let, ir.Partial)) and names & values.keys() and _within(x, values.keys())):
            continue
        values.update({v.name: v for v in _writes(x) if v.name not in positions})
        expression.append(x)
    adjoints = {values[name].adjoint().name for name in values}
    sweep, written = [], set()
    for x in s.body:
        if not isinstance(x, ir.Local) and _names(x) & (adjoints | written) and \
                _within(x, positions | values.keys() | adjoints | written):
            sweep.append(x)
            written |= {w.name for w in _writes(x) if w.plate is not None}
    rest = [x for x in s.body if not _among(x, expression + sweep)]
    roots = {n for x in rest for n in _names(x)} & values.keys()
    if len(roots) != 1:
        return None
    root = values[roots.pop()]
    defined = next(x for x in expression if root in _writes(x))
    loads = [x for x in _needed(expression, {root.name}) if isinstance(x, ir.Load)]
    if not isinstance(defined, ir.Let) or all(x.buffer.kind == "data" for x in loads):
        return None
    moved = (adjoints | written) - {root.adjoint().name}
    if any(not isinstance(x, ir.Local) and (_names(x) | {w.name for w in _writes(x)}) & moved for x in rest):
        return None
    first = next((n for n, x in enumerate(s.body) if sweep and x is sweep[0]), len(s.body))
    if any(root.adjoint() in _writes(x) for x in s.body[first:] if not _among(x, sweep)):
        return None  # (reverse mode sweeps a value back after every addition to its adjoint)
    return root, expression, sweep


def _moved(s, index, root, expression, sweep):
    """``(s, before, after)``: map ``s`` reading ``root`` from a workspace the map
    ``before`` fills, its adjoint scattered into one the map ``after`` sweeps back."""
    k, j, size, name = index.out, f"j_{root.name}", index.size, f"h_{root.name}"
    h, ah, adjoint = ir.Buffer("workspace", name), ir.Buffer("workspace", "a" + name), root.adjoint()

    def element_map(statements):
        return ir.Map(ir.Plate(name, size), j, tuple(_at_row(x, k, j, name) for x in statements))
    before = [ir.Workspace(h, size), element_map(_needed(expression, {root.name}) + [ir.Store(h, ir.At(k), root)])]
    locals_ = [x for x in s.body if isinstance(x, ir.Local) and x.out != adjoint
               and any(x.out in _writes(y) for y in sweep)]
    body, after = [], []
    for x in s.body:
        if _among(x, expression):
            body += [ir.Load(root, h, ir.At(k))] if root in _writes(x) else []
        elif sweep and x is sweep[0]:
            body.append(ir.Accumulate(ah, adjoint, "scatter", ir.At(k)))
        elif not _among(x, sweep + locals_):
            body.append(x)
    if sweep:
        needs = {n for x in sweep for n in _names(x)}
        before += [ir.Workspace(ah, size), ir.Zero(ah)]
        after = [element_map(_needed(expression, needs) + locals_ + [ir.Load(adjoint, ah, ir.At(k))] + sweep)]
    return s._replace(body=tuple(body)), before, after


def _among(x, statements):
    return any(x is y for y in statements)


def _reads(x):
    """The values statement ``x`` reads (an accumulator it adds to included) and
    the row names it reads at."""
    out = []
    for field, v in zip(x._fields, x):
        if field in ("out", "outs"):
            continue
        for a in (v if type(v) is tuple else (v,)):
            a = a.index if isinstance(a, ir.At) else a
            if isinstance(a, ir.Value) or isinstance(a, str) and field in ("at", "row"):
                out.append(a)
    return out


def _names(x):
    return {a.name if isinstance(a, ir.Value) else a for a in _reads(x)}


def _within(x, names):
    """Whether statement ``x`` reads nothing but ``names`` and values outside the map."""
    return all(a.plate is None or a.name in names if isinstance(a, ir.Value) else a in names for a in _reads(x))


def _writes(x):
    """The values statement ``x`` sets or adds to."""
    outs = [getattr(x, "out", None)] + list(getattr(x, "outs", None) or ())
    if isinstance(x, ir.Accumulate):
        outs.append(x.dest)
    return [o for o in outs if isinstance(o, ir.Value)]


def _needed(statements, names):
    """The statements of ``statements`` that values ``names`` are computed from, in order."""
    keep, need = [], set(names)
    for x in reversed(statements):
        if {w.name for w in _writes(x)} & need:
            keep.append(x)
            need |= _names(x)
    return keep[::-1]


def _at_row(x, k, j, plate):
    """Statement ``x`` at row ``j`` of element map ``plate`` where it was at
    position ``k`` (an addition there is the row's own)."""
    def moved(a):
        if isinstance(a, ir.Value):
            return j if a == k else a._replace(plate=plate) if a.plate is not None else a
        if isinstance(a, ir.At):
            return a._replace(index=moved(a.index))
        return tuple(map(moved, a)) if type(a) is tuple else a
    y = x._replace(**{field: moved(v) for field, v in zip(x._fields, x)})
    own = isinstance(x, ir.Accumulate) and x.at is not None and x.at.index == k
    return y._replace(kind="own_row") if own else y
