"""Reverse mode over a model's terms into one lowered program (``ir.Program``).

Each term is a ``Map`` over its plate: in one row the inlined expressions of
its arguments, the kernel call, and the reverse sweep back through them.
Values without a plate are computed once before the map (``outer``), their
adjoints are locals every row adds to (``shared``), swept back after it. A
gather or a slice reads its source at a computed position (``ir.Index``): a
gather of an elementwise expression is the expression of gathers. A sum
inside an expression is its own map before the term's, and a map after it
sweeps the sum's adjoint back (its elements are recomputed, not stored).

Parameters: a scalar is constrained where it is read; a transformed vector
once per call into its ``constrained`` buffer (``ir.Constrain``), an event
transform's adjoints gathered in ``aconstrained`` and swept back after the
terms (``ir.ConstrainAdjoint``); the log-Jacobians last, under ``jacobian``.

Values with an event shape (a data matrix's rows, ``X @ W``, a multivariate
kernel's arguments) are lowered by the rules of ``logdens.compiler.events``:
each node's lowering (``Rule.lowering``) serves a scalar and an event. Node
types the program does not lower yet raise ``NotLowered``, naming the node:
scans, whole-value linear algebra and Gaussian processes are the compiler
issue's next steps.
"""

from logdens import expr as ex
from logdens import rules, validate
from logdens.compiler import ir
from logdens.compiler.events import Events, NotLowered, event_ranks, rows_of
from logdens.ops import OPS


class Scope:
    """The statements of one loop body (``plate`` set) or of the call (``outer``):
    its forward statements, the values it holds and its records (value, its
    adjoint, the statements that sweep the adjoint back)."""

    def __init__(self, plate=None, index=None):
        self.plate, self.index = plate, index
        self.forward, self.records, self.values = [], [], {}

    def adjoint_locals(self):
        """The adjoints zeroed: a scalar's a ``Local``, an event's array a ``Zero``."""
        return [ir.Zero(adjoint.array()) if adjoint.event else ir.Local(adjoint)
                for _, adjoint, _ in self.records if adjoint is not None]

    def reverse(self):
        out = []
        for _, adjoint, sweep in reversed(self.records):
            out += sweep(adjoint)
        return out


class Builder(Events):
    """Builds the program of one model's gradient (``program``)."""

    def __init__(self, model, layout, gradient=True):
        self.model, self.layout, self.gradient = model, layout, gradient
        self.counter, self.kinds, self.owner, self.depends, self.running = 0, {}, {}, {}, {}

    def fresh(self, prefix="v"):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def new(self, scope, label, prefix="v"):
        return ir.Value(self.fresh(prefix), scope.plate.name if scope.plate else None, (), label)

    def needs_grad(self, node):
        if id(node) not in self.depends:
            self.depends[id(node)] = self.gradient and node.depends_on_params()
        return self.depends[id(node)]

    # ----- sizes ----------------------------------------------------------
    def size(self, node):
        """The ``ir.Size`` of non-scalar ``node``'s plate (``plate_source``)."""
        source = plate_source(node)
        if rules.rule(source).data:
            return ir.Size("data", self.layout.data_name(source))
        if rules.rule(source).param:
            slot = self.layout.params[source.name]
            return ir.Size("param", source.name) if slot.runtime else ir.Size("fixed", value=source.shape[0])
        if isinstance(source, ex.Slice):
            return ir.Size("slice", of=self.size(source.children[0]), node=source)
        return ir.Size("fixed", value=source.shape[0])

    # ----- values ---------------------------------------------------------
    def value(self, node, scope, outer, at, rank=0):
        """The value of ``node`` at position ``at`` (None for a scalar; the scope's
        row name; an ``ir.Value`` index), its statements added to ``scope``;
        with ``rank``, its last ``rank`` axes one event (``events``): rows of
        events, or one event per call where it has no more axes."""
        node_rule = rules.rule(node)
        if node_rule.constant:
            return float(node.value)
        rank = min(rank, node.ndim)
        if node.ndim == rank:
            scope, at = outer, None
        key = (id(node), at.name if isinstance(at, ir.Value) else at, rank)
        if key in scope.values:
            return scope.values[key]
        if node_rule.lowering is None:
            raise NotLowered(f"{node.label()}: {type(node).__name__} is not in the lowered program yet")
        if node.ndim > rank + 1:
            raise NotLowered(f"{node.label()}: a value of shape {node.shape} read as rows of events of rank "
                             f"{rank} is not in the lowered program yet")
        out = self.event_value(scope, node.label(), node.shape[node.ndim - rank:] if rank else ())
        scope.values[key] = out
        sweep = getattr(self, "_lower_" + node_rule.lowering)(node, out, scope, outer, at)
        if isinstance(sweep, ir.Value):  # the node is another value read elsewhere (a gather)
            scope.values[key] = sweep
            return sweep
        if sweep is not None and self.needs_grad(node):
            adjoint = out.adjoint()
            scope.forward += self.declared(adjoint) if adjoint.event else []
            scope.records.append((out, adjoint, sweep))
            self.owner[out.name] = (scope, adjoint)
        return out

    def push(self, node, value, contribution, scope):
        """Statements adding ``contribution`` to the adjoint of ``node``'s ``value``
        (from a row of ``scope``)."""
        if not self.needs_grad(node) or not isinstance(value, ir.Value):
            return []
        owner, adjoint = self.owner[value.name]
        return [ir.Accumulate(adjoint, contribution, "local" if owner is scope else "shared")]

    def times(self, scope, a, d, label):
        """``a * d`` as a statement's value (``d`` the number 1.0: ``a`` itself)."""
        if d == 1.0:
            return a, []
        out = self.new(scope, label, "t")
        return out, [ir.Let(out, "mul", (a, d))]

    def _kind(self, scope, at):
        """How rows add into a parameter's entry at ``at``: see ``ir.KINDS``."""
        if at is None:
            return "shared"
        if isinstance(at, str):
            return "own_row"
        return self.kinds[at.name]

    def _lower_param(self, node, out, scope, outer, at):
        if out.event:
            return self._event_param(node, out, scope, at)
        slot = self.layout.params[node.name]
        transform = type(slot.transform).__name__
        grad = ir.Buffer("grad", node.name, slot.offset)
        if node.shape == ():
            if slot.transform.identity:
                scope.forward.append(ir.Load(out, ir.Buffer("theta", node.name, slot.offset), ir.At(None, slot.offset)))
                return lambda a: [ir.Accumulate(grad, a, "shared", ir.At(None, slot.offset))]
            dx = self.new(scope, f"d{node.name}", "dx")
            scope.forward.append(ir.Constrain(node.name, transform, out, dx))

            def sweep(a):
                t = self.new(scope, f"d lp / d {node.name}", "t")
                return [ir.Let(t, "mul", (a, dx)), ir.Accumulate(grad, t, "shared", ir.At(None, slot.offset))]
            return sweep
        kind, where = self._kind(scope, at), ir.At(at)
        if slot.transform.event:
            scope.forward.append(ir.Load(out, ir.Buffer("constrained", node.name), where))
            return lambda a: [ir.Accumulate(ir.Buffer("aconstrained", node.name), a, kind, where)]
        if slot.transform.identity:
            scope.forward.append(ir.Load(out, ir.Buffer("theta", node.name, slot.offset), ir.At(at, slot.offset)))
            return lambda a: [ir.Accumulate(grad, a, kind, ir.At(at, slot.offset))]
        scope.forward.append(ir.Load(out, ir.Buffer("constrained", node.name), where))

        def sweep(a):
            dx, t = self.new(scope, f"d{node.name}", "dx"), self.new(scope, f"d lp / d {node.name}", "t")
            return [ir.Load(dx, ir.Buffer("dconstrained", node.name), where), ir.Let(t, "mul", (a, dx)),
                    ir.Accumulate(grad, t, kind, ir.At(at, slot.offset))]
        return sweep

    def _lower_data(self, node, out, scope, outer, at):
        if out.event:
            return self._event_data(node, out, scope, at)
        if node.ndim > 1:
            raise NotLowered(f"{node.label()}: a data matrix outside X @ beta is not in the lowered program yet")
        buffer = ir.Buffer("data", self.layout.data_name(node))
        scope.forward.append(ir.Load(out, buffer, ir.At(None if node.shape == () else at)))

    def _lower_elementwise(self, node, out, scope, outer, at):
        op = OPS[node.op]
        if out.event:
            return self._event_elementwise(node, out, scope, outer, at, op)
        args = tuple(self.value(c, scope, outer, at) for c in node.children)
        scope.forward.append(ir.Let(out, node.op, args))

        def sweep(a):
            lines = []
            for k, (child, arg, d) in enumerate(zip(node.children, args, op.derivatives)):
                if not self.needs_grad(child) or d in ("0.0", "-0.0"):
                    continue
                if d == "1.0":
                    lines += self.push(child, arg, a, scope)
                    continue
                partial = self.new(scope, f"d{node.op}/d{k}", "p")
                contribution, product = self.times(scope, a, partial, node.label())
                lines += [ir.Partial(partial, node.op, k, args, out)] + product
                lines += self.push(child, arg, contribution, scope)
            return lines
        return sweep

    def _lower_logpdf(self, node, out, scope, outer, at):
        if node.spec.multivariate or out.event:
            raise self.not_lowered(node, "a multivariate kernel inside an expression")
        args = tuple(self.value(c, scope, outer, at) for c in node.children)
        partials = tuple(self.new(scope, f"d{node.spec.name}/d{n}", "r") if self.needs_grad(c) else None
                         for n, c in zip(node.spec.arg_names, node.children))
        scope.forward.append(ir.Call((out,) + partials, node.spec, args, node.spec.keep_all))

        def sweep(a):
            lines = []
            for child, arg, partial in zip(node.children, args, partials):
                if partial is not None:
                    contribution, product = self.times(scope, a, partial, node.label())
                    lines += product + self.push(child, arg, contribution, scope)
            return lines
        return sweep

    def _position(self, scope, kind, label, **fields):
        k = ir.Value(self.fresh("k"), scope.plate.name if scope.plate else None, (), label)
        self.kinds[k.name] = {"gather": "scatter", "shift": "own_row", "element": "shared"}[kind]
        scope.forward.append(ir.Index(k, kind, **fields))
        return k

    def _lower_gather(self, node, out, scope, outer, at):
        source, index = node.children
        k = self._position(scope, "gather", node.label(), at=at, size=self.size(source),
                           array=ir.Buffer("index", self.layout.data_name(index)))
        return self.value(source, scope, outer, k)

    def _lower_slice(self, node, out, scope, outer, at):
        k = self._position(scope, "shift", node.label(), at=at, node=node, size=self.size(node.children[0]))
        return self.value(node.children[0], scope, outer, k)

    def _lower_element(self, node, out, scope, outer, at):
        k = self._position(outer, "element", node.label(), node=node, size=self.size(node.children[0]))
        return self.value(node.children[0], outer, outer, k)

    def _lower_length(self, node, out, scope, outer, at):
        scope.forward.append(ir.Length(out, self.size(node.children[0])))

    def _lower_matvec(self, node, out, scope, outer, at):
        matrix, vector = node.children
        if not rules.rule(vector).param:
            raise NotLowered(f"{node.label()}: a product with a vector that is not a parameter is not in the "
                             "lowered program yet")
        slot = self.layout.params[vector.name]
        X = ir.Buffer("matrix", self.layout.data_name(matrix))
        operand = (ir.Buffer("theta", vector.name, slot.offset) if slot.transform.identity
                   else ir.Buffer("constrained", vector.name))
        length = ir.Size("fixed", value=vector.shape[0]) if not slot.runtime else ir.Size("param", vector.name)
        scope.forward.append(ir.Dot(out, X, at, operand, length))
        if slot.transform.event:
            dest, through = ir.Buffer("aconstrained", vector.name), None
        else:
            dest = ir.Buffer("grad", vector.name, slot.offset)
            through = None if slot.transform.identity else ir.Buffer("dconstrained", vector.name)
        return lambda a: [ir.DotAdjoint(dest, X, at, a, length, "shared", through, out)]

    def _lower_sum(self, node, out, scope, outer, at):
        arg = node.children[0]
        plate = ir.Plate(self.fresh("sum"), self.size(arg))
        loop, rank = Scope(plate, self.fresh("i")), max(arg.ndim - 1, 0)  # a matrix: rows of events
        element = self.value(arg, loop, outer, loop.index, rank)
        adds = self.total(element, out, "shared") if rank else [ir.Accumulate(out, element, "shared")]
        outer.forward += [ir.Local(out), ir.Map(plate, loop.index, tuple(loop.forward + adds), pair=plate.name)]

        def sweep(a):
            back = Scope(plate, loop.index)  # the forward map's row name: a pass may fuse the two
            x = self.value(arg, back, outer, back.index, rank)
            seed = self.spread(arg, x, a, back)
            body = back.forward + back.adjoint_locals() + seed + back.reverse()
            return [ir.Map(plate, back.index, tuple(body), pair=plate.name, seed=a)]
        return sweep

    def _lower_logsumexp(self, node, out, scope, outer, at):
        """``log(sum(exp(x)))``: a map for the largest element ``m``, a map for
        ``s = sum(exp(x - m))``, then ``m + log(s)`` (``-inf`` when every element
        is); each element's adjoint is the node's times ``exp(x_i - value)``."""
        arg = node.children[0]
        plate = ir.Plate(self.fresh("lse"), self.size(arg))
        top, total = self.new(outer, "max", "m"), self.new(outer, "sum exp", "s")
        first, second = Scope(plate, self.fresh("i")), Scope(plate, self.fresh("i"))
        x1, x2 = self.value(arg, first, outer, first.index), self.value(arg, second, outer, second.index)
        shifted, e = self.new(second, "x - max", "t"), self.new(second, "exp(x - max)", "t")
        finite, log_total, value = (self.new(outer, label, "t") for label in ("max > -inf", "log sum", "m + log s"))
        outer.forward += [ir.Local(top, -float("inf")),
                          ir.Map(plate, first.index, tuple(first.forward) + (ir.Accumulate(top, x1, "shared", op="max"),)),
                          ir.Local(total),
                          ir.Map(plate, second.index, tuple(second.forward) + (
                              ir.Let(shifted, "sub", (x2, top)), ir.Let(e, "exp", (shifted,)),
                              ir.Accumulate(total, e, "shared"))),
                          ir.Let(finite, "gt", (top, -float("inf"))), ir.Let(log_total, "log", (total,)),
                          ir.Let(value, "add", (top, log_total)), ir.Let(out, "where", (finite, value, -float("inf")))]

        def sweep(a):
            back = Scope(plate, self.fresh("i"))
            x = self.value(arg, back, outer, back.index)
            d, w, c = (self.new(back, label, "t") for label in ("x - lse", "exp(x - lse)", node.label()))
            seed = [ir.Let(d, "sub", (x, out)), ir.Let(w, "exp", (d,)), ir.Let(c, "mul", (a, w))]
            seed += self.push(arg, x, c, back)
            return [ir.Map(plate, back.index, tuple(back.forward + back.adjoint_locals() + seed + back.reverse()))]
        return sweep

    def _lower_cumsum(self, node, out, scope, outer, at):
        """``cumsum(x)`` read at ``at`` from the running sums, computed once before
        the term's rows; its adjoint added into their adjoints, which a backward
        map after the rows sweeps back through ``x``."""
        running = self.running.get(id(node))
        if running is None:
            running = self.running[id(node)] = self._running_sums(node, outer)
        h, ah = running
        scope.forward.append(ir.Load(out, h, ir.At(at)))
        if ah is None:
            return None
        kind = self._kind(scope, at)
        return lambda a: [ir.Accumulate(ah, a, kind, ir.At(at))]

    def _running_sums(self, node, outer):
        """``(h, ah)``: the workspaces of ``node``'s running sums and their adjoints
        (None without a gradient), filled in ``outer``; the sweep back is a
        record of ``outer``, after the records of what reads the sums."""
        source, size = node.children[0], self.size(node)
        name = self.fresh("h")
        h = ir.Buffer("workspace", name)
        plate = ir.Plate(name, size)
        loop = Scope(plate, self.fresh("i"))
        x = self.value(source, loop, outer, loop.index)
        total = self.new(outer, f"running {node.label()}", "c")
        outer.forward += [ir.Workspace(h, size), ir.Local(total),
                          ir.Map(plate, loop.index, tuple(loop.forward) + (
                              ir.Accumulate(total, x, "shared"), ir.Store(h, ir.At(loop.index), total)))]
        if not self.needs_grad(source):
            return h, None
        ah = ir.Buffer("workspace", "a" + name)
        outer.forward += [ir.Workspace(ah, size), ir.Zero(ah)]

        def sweep(_):
            back = Scope(plate, self.fresh("i"))
            carried = self.new(outer, f"adjoint of running {node.label()}", "c")
            element = self.new(back, f"{node.label()} adjoint", "t")
            y = self.value(source, back, outer, back.index)
            seed = [ir.Load(element, ah, ir.At(back.index)), ir.Accumulate(carried, element, "shared")]
            seed += self.push(source, y, carried, back)
            return [ir.Local(carried), ir.Map(plate, back.index, tuple(back.forward + back.adjoint_locals() + seed
                                                                      + back.reverse()), backward=True)]
        outer.records.append((None, None, sweep))
        return h, ah

    # ----- terms ----------------------------------------------------------
    def term(self, term, keep, rows_out=False, per_row=False):
        """The statements of one term: its map (or, without a plate, its scalar
        statements), every adjoint swept back; with ``rows_out``, each row's log
        density stored in ``out`` (a pointwise log-likelihood) instead of added;
        with ``per_row``, the adjoints of the values outside the map swept back
        in each row and no log density (``per_sample_program``)."""
        term = rules.rows_added(term, per_observation=rows_out or per_row)
        self.running = {}  # running sums are the term's own: filled in its outer, swept back after its rows
        lp = ir.Buffer("out", "out") if rows_out else ir.Buffer("lp", "lp")
        outer = Scope()
        rows, ranks = rows_of(term), event_ranks(term)
        if rows is None:
            loop = outer
        else:
            loop = Scope(ir.Plate(term.name, self.size(rows)), self.fresh("i"))
        if term.dist is None:  # a matrix's rows: each adds its event's elements
            rank = max(term.value.ndim - 1, 0)
            value = self.value(term.value, loop, outer, loop.index, rank)
            if rank:
                row = self.new(loop, term.name, "lp")
                loop.forward += [ir.Local(row)] + self.total(value, row, "local")
            loop.forward.append(self._add(lp, row if rank else value, loop.index))
            seed = self.spread(term.value, value, 1.0, loop)
        elif term.dist.spec.multivariate:
            args = tuple(self.value(a, loop, outer, loop.index, r) for a, r in zip(term.args, ranks))
            row, lines, seed = self.event_call(term.dist.spec, term.args, args, keep, loop, term.name)
            loop.forward += lines + [self._add(lp, row, loop.index)]
        elif any(ranks):  # a univariate kernel on rows of events
            spec = term.dist.spec
            args = tuple(self.value(a, loop, outer, loop.index, r) for a, r in zip(term.args, ranks))
            checked = spec.takes_x_valid and validate.value_checked(term)
            row, lines, seed = self.elementwise_call(spec, term.args, args, keep, checked, loop, term.name)
            loop.forward += lines + [self._add(lp, row, loop.index)]
        else:
            args = tuple(self.value(a, loop, outer, loop.index) for a in term.args)
            spec = term.dist.spec
            partials = tuple(self.new(loop, f"d{term.name}/d{n}", "r") if self.needs_grad(a) else None
                             for n, a in zip(spec.arg_names, term.args))
            row = self.new(loop, term.name, "lp")
            checked = spec.takes_x_valid and validate.value_checked(term)
            loop.forward += [ir.Call((row,) + partials, spec, args, keep, checked)]
            loop.forward += [] if per_row else [self._add(lp, row, loop.index)]  # per-sample rows: gradients only
            seed = [s for a, v, r in zip(term.args, args, partials) if r is not None
                    for s in self.push(a, v, r, loop)]
        if loop is outer:
            return outer.forward + outer.adjoint_locals() + seed + outer.reverse()
        body = loop.forward + loop.adjoint_locals() + seed + loop.reverse()
        if per_row:  # the row's own gradient: what every row adds outside, swept back in the row
            body = loop.forward + outer.adjoint_locals() + loop.adjoint_locals() + seed + loop.reverse() + outer.reverse()
            return outer.forward + [ir.Map(loop.plate, loop.index, tuple(body))]
        return outer.forward + outer.adjoint_locals() + [ir.Map(loop.plate, loop.index, tuple(body))] + outer.reverse()


    @staticmethod
    def _add(lp, value, row):
        """A row's log density added into ``lp``, or stored at its row of ``out``."""
        if lp.kind == "lp":
            return ir.Accumulate(lp, value, "shared")
        return ir.Store(lp, ir.At(row if row is not None else None), value)


def plate_source(node):
    """The node whose length is non-scalar ``node``'s plate: a data array or a
    parameter itself, the plate source of a child read at the node's rows,
    or else the node (its built length)."""
    if rules.rule(node).data or rules.rule(node).param:
        return node
    at_row = [c for c, access in zip(node.children, rules.rule(node).reads(node))
              if access in rules.SAME_PLATE and c.shape != ()]
    return plate_source(at_row[0]) if at_row else node


def keep_of(term):
    """The summands ``core`` and ``value`` keep: those with an argument that varies
    (``()`` for a potential)."""
    if term.dist is None:
        return ()
    fixed = {n for n, a in zip(term.dist.spec.arg_names, term.args) if not a.depends_on_params()}
    return term.dist.spec.keep_for(fixed)


def dropped_of(term):
    """The summands ``core`` leaves out (None when it keeps them all): ``constants``."""
    keep = keep_of(term)
    return None if all(keep) else tuple(not k for k in keep)


def gradient_program(model, layout, name="core"):
    """The program ``name`` (``ir.SIGNATURES``): ``core``, the log density and its
    gradient at ``theta``; ``value``, the log density alone; ``constants``, the
    summands of data alone that both leave out (``propto=False`` adds them)."""
    gradient = name == "core"
    builder = Builder(model, layout, gradient)
    vectors = [p for p in layout.params.values() if p.shape != () and not p.transform.identity]
    body = [ir.Zero(ir.Buffer("grad", "grad"))] if gradient else []
    body += [ir.Constrain(p.name, type(p.transform).__name__) for p in vectors]
    body += [ir.Zero(ir.Buffer("aconstrained", p.name)) for p in vectors if gradient and p.transform.event]
    for term in model.terms:
        keep = dropped_of(term) if name == "constants" else keep_of(term)
        if keep is None:
            continue
        lines = builder.term(term, keep)
        body += [ir.When("jacobian", tuple(lines))] if term.kind == "jacobian" else lines
    if gradient:
        body += [ir.ConstrainAdjoint(p.name, type(p.transform).__name__) for p in vectors if p.transform.event]
    jacobians = tuple(ir.Jacobian(p.name, type(p.transform).__name__, gradient)
                      for p in layout.params.values() if not p.transform.identity)
    body += [ir.When("jacobian", jacobians)] if jacobians and name != "constants" else []
    return ir.Program(name, tuple(body))


def pointwise_program(model, layout, term):
    """``pointwise``: the observed term ``term``'s log density per observation into
    ``out``, the summands ``core`` keeps, or with ``dropped`` those it leaves
    out (zeros when it leaves none): they depend on the data only."""
    builder = Builder(model, layout, gradient=False)
    vectors = [p for p in layout.params.values() if p.shape != () and not p.transform.identity]
    body = [ir.Constrain(p.name, type(p.transform).__name__) for p in vectors]
    dropped = dropped_of(term)
    leave_out = (builder.term(term, dropped, rows_out=True) if dropped is not None
                 else [ir.Zero(ir.Buffer("out", "out"))])
    body.append(ir.When("dropped", tuple(leave_out), tuple(builder.term(term, keep_of(term), rows_out=True))))
    return ir.Program("pointwise", tuple(body), term.name)


def per_sample_program(model, layout, term):
    """``per_sample``: observed term ``term``'s gradient per observation, one row of
    ``out`` (n_obs, dim) each, without priors or log-Jacobians (nor the log
    density: the function returns 0.0, as the engine's returns nothing): each row is
    zeroed, its map's adjoints and those of the values outside it (swept back
    in every row: a sum inside the term costs n passes per row; the adjoints
    of running sums are zeroed per row) go into it, and an event transform's
    adjoints are swept back into it row by row."""
    builder = Builder(model, layout)
    vectors = [p for p in layout.params.values() if p.shape != () and not p.transform.identity]
    body = [ir.Constrain(p.name, type(p.transform).__name__) for p in vectors]
    lines = builder.term(term, keep_of(term), per_row=True)
    rows = next((s for s in lines if isinstance(s, ir.Map) and s.plate.name == term.name), None)
    row = rows.index if rows is not None else "0"
    events = [p.name for p in vectors if p.transform.event and p.name in term.params_read()]
    start = [ir.Zero(ir.Buffer("rows", "rows", row=row))] + [ir.Zero(ir.Buffer("aconstrained", p)) for p in events]
    finish = [ir.ConstrainAdjoint(p, type(layout.params[p].transform).__name__, row) for p in events]
    if rows is None:  # one observation, no map
        return ir.Program("per_sample", tuple(body + start + _into_rows(lines, row) + finish), term.name)
    at = lines.index(rows)
    start += [s for s in lines[:at] if isinstance(s, ir.Zero) and s.buffer.kind == "workspace"]  # running sums' adjoints
    rows = rows._replace(body=tuple(start + _into_rows(rows.body, row) + finish))
    return ir.Program("per_sample", tuple(body + lines[:at] + [rows] + lines[at + 1:]), term.name)


def _into_rows(statements, row):
    """``statements`` with their writes into ``grad`` going to row ``row`` of the per-sample rows."""
    out = []
    for s in statements:
        dest = getattr(s, "dest", None)
        if isinstance(dest, ir.Buffer) and dest.kind == "grad":
            s = s._replace(dest=dest._replace(kind="rows", row=row))
        elif isinstance(s, ir.Map):
            s = s._replace(body=tuple(_into_rows(s.body, row)))
        out.append(s)
    return out
