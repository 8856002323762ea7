"""Reverse mode for values with an event shape (``ir``'s "Events"), mixed into
``ad.Builder``.

A node read with event rank ``r`` (its last ``r`` axes one event) is an event
value: one array per row of the term's plate when the node has one more axis
(a data matrix's rows, ``X @ W``), or one per call when it has none more (a
parameter vector or matrix, data read whole). Its elements are statements in
a ``Map`` over the event (a plate of fixed length); its adjoint is an array
of the same shape, zeroed where a scalar's is a ``Local``, and the sweeps add
into it element by element. A multivariate kernel is an ``ir.EventCall``.

Lowered so far: parameters, data, elementwise ops (an event and scalars),
``a @ b`` with a vector or matrix on the right, ``log_softmax`` and a sum or
log-sum-exp over a vector event, a whole matrix's transpose, constant
positions and slices along an event's axis, reshapes, and kernels
(multivariate, and univariate on rows of a matrix). The other shaped node
types (scans, linear algebra, Gaussian processes) raise ``NotLowered``
naming them.
"""

import math

from logdens import sizes
from logdens.compiler import ir
from logdens.expr import ModelError


class NotLowered(ModelError):
    """A node type the lowered program does not handle yet."""


def event_size(event):
    """Elements of an event (at least 1: a scalar argument's partial is one element)."""
    return max(1, math.prod(event))


class Events:
    """The event lowerings of ``ad.Builder`` (see the module docstring)."""

    def declared(self, value):
        """Statements declaring event ``value``'s array (a workspace of its size)."""
        return [ir.Workspace(value.array(), ir.Size("fixed", value=event_size(value.event)))]

    def event_value(self, scope, label, event, prefix="v"):
        return ir.Value(self.fresh(prefix), scope.plate.name if scope.plate else None, tuple(event), label)

    def over(self, event):
        """A plate over ``event``'s elements and its index's name."""
        return ir.Plate(self.fresh("e"), ir.Size("fixed", value=event_size(event))), self.fresh("j")

    def element(self, operand, j, body, plate, position=None):
        """``operand``'s element at ``j`` (``position``: another index) as a statement
        of ``body``: a number or scalar as it is, an event's element loaded."""
        if not isinstance(operand, ir.Value) or not operand.event:
            return operand
        x = ir.Value(self.fresh("x"), plate.name, (), operand.label)
        body.append(ir.Load(x, operand.array(), ir.At(j if position is None else position)))
        return x

    def push_at(self, node, value, contribution, scope, j):
        """``contribution`` added into the adjoint of ``node``'s ``value``, at element
        ``j`` when it is an event."""
        if not self.needs_grad(node) or not isinstance(value, ir.Value):
            return []
        owner, adjoint = self.owner[value.name]
        kind = "local" if owner is scope else "shared"
        if adjoint.event:
            return [ir.Accumulate(adjoint.array(), contribution, kind, ir.At(j))]
        return [ir.Accumulate(adjoint, contribution, kind)]

    def flat(self, plate, body, a, stride, b):
        """The position ``a * stride + b`` as an index statement of ``body`` (in a map over ``plate``)."""
        k = ir.Value(self.fresh("k"), plate.name if plate else None, (), "position")
        body.append(ir.Index(k, "flat", at=(a, stride, b)))
        return k

    def operands(self, node, out, scope, outer, at):
        """The children's values for an elementwise op of event ``out``: each an
        event of the same shape (rows of it, or one whole) or a scalar."""
        rank, args = len(out.event), []
        for child in node.children:
            rowed = child.ndim > rank
            if rowed and node.ndim == rank or (child.ndim == node.ndim and child.shape[:1] != node.shape[:1]):
                raise self.not_lowered(node, "an operand that broadcasts along the rows")
            arg = self.value(child, scope, outer, at, min(rank, child.ndim))
            if isinstance(arg, ir.Value) and arg.event and not _broadcasts(arg.event, out.event):
                raise self.not_lowered(node, f"operands of event shapes {arg.event} and {out.event}")
            args.append(arg)
        return args

    def total(self, x, dest, kind):
        """Statements adding event ``x``'s elements into the scalar ``dest``."""
        plate, j = self.over(x.event)
        body = []
        xj = self.element(x, j, body, plate)
        return [ir.Map(plate, j, tuple(body) + (ir.Accumulate(dest, xj, kind),))]

    def spread(self, node, x, a, scope):
        """Statements adding ``a`` into the adjoint of each element of ``node``'s
        event ``x`` (or of the scalar): the reverse of ``total``."""
        if not (isinstance(x, ir.Value) and x.event):
            return self.push(node, x, a, scope)
        plate, j = self.over(x.event)
        return [ir.Map(plate, j, tuple(self.push_at(node, x, a, scope, j)))]

    def not_lowered(self, node, what):
        return NotLowered(f"{node.label()}: {type(node).__name__} with {what} is not in the lowered program yet")

    # ----- node types -----------------------------------------------------
    def _event_param(self, node, out, scope, at):
        """A parameter's values as one event (a view); its adjoint swept into the
        gradient element by element (through the transform's derivative, or into
        an event transform's adjoints)."""
        slot = self.layout.params[node.name]
        if slot.runtime:
            raise self.not_lowered(node, "a length read at run time as an event")
        rowed = node.ndim > len(out.event)  # a matrix's rows, one event each
        if rowed and slot.transform.event:
            raise self.not_lowered(node, "rows of an event-transformed parameter")
        buffer = (ir.Buffer("theta", node.name, slot.offset) if slot.transform.identity
                  else ir.Buffer("constrained", node.name))
        scope.forward.append(ir.View(out, buffer, ir.At(at if rowed else None)))

        def sweep(a):
            plate, j = self.over(out.event)
            body = []
            x = self.element(a, j, body, plate)
            k = self.flat(plate, body, at, event_size(out.event), j) if rowed else j
            if slot.transform.event:
                body.append(ir.Accumulate(ir.Buffer("aconstrained", node.name), x, "own_row", ir.At(k)))
            elif slot.transform.identity:
                grad = ir.Buffer("grad", node.name, slot.offset)
                body.append(ir.Accumulate(grad, x, "own_row", ir.At(k, slot.offset)))
            else:
                dx = ir.Value(self.fresh("dx"), plate.name, (), f"d{node.name}")
                t = ir.Value(self.fresh("t"), plate.name, (), node.name)
                body += [ir.Load(dx, ir.Buffer("dconstrained", node.name), ir.At(k)), ir.Let(t, "mul", (x, dx)),
                         ir.Accumulate(ir.Buffer("grad", node.name, slot.offset), t, "own_row", ir.At(k, slot.offset))]
            return [ir.Map(plate, j, tuple(body))]
        return sweep

    def _event_data(self, node, out, scope, at):
        """A data array's row (``at``) or the whole array, as one event (a view)."""
        if node.ndim > 2:
            raise self.not_lowered(node, f"{node.ndim} axes")
        whole = node.ndim == len(out.event)
        if whole and sizes.runtime_rows(node):  # set_data may change its rows: a length read at run time
            raise self.not_lowered(node, "named data read whole (its rows a run-time length)")
        scope.forward.append(ir.View(out, ir.Buffer("data", self.layout.data_name(node)), ir.At(None if whole else at)))

    def operand_elements(self, args, event, j, body, plate):
        """``(elements, positions)``: each operand's element that element ``j`` of
        ``event`` reads (numpy's broadcasting), and its position there."""
        elements, positions = [], []
        for a in args:
            position = j
            if isinstance(a, ir.Value) and a.event and a.event != event:
                position = ir.Value(self.fresh("k"), plate.name, (), "position")
                body.append(ir.Index(position, "broadcast", at=(j, event, a.event)))
            elements.append(self.element(a, j, body, plate, position))
            positions.append(position)
        return elements, positions

    def _event_elementwise(self, node, out, scope, outer, at, op):
        args = self.operands(node, out, scope, outer, at)
        plate, j = self.over(out.event)
        body = []
        xs, _ = self.operand_elements(args, out.event, j, body, plate)
        v = ir.Value(self.fresh("v"), plate.name, (), node.label())
        body += [ir.Let(v, node.op, tuple(xs)), ir.Store(out.array(), ir.At(j), v)]
        scope.forward += self.declared(out) + [ir.Map(plate, j, tuple(body))]

        def sweep(a):
            plate, j = self.over(out.event)
            body = []
            aj = self.element(a, j, body, plate)
            xs, positions = self.operand_elements(args, out.event, j, body, plate)  # unused loads: dead to numba
            vj = self.element(out, j, body, plate)
            for k, (child, arg, d) in enumerate(zip(node.children, args, op.derivatives)):
                if not self.needs_grad(child) or d in ("0.0", "-0.0"):
                    continue
                contribution = aj
                if d != "1.0":
                    partial = ir.Value(self.fresh("p"), plate.name, (), f"d{node.op}/d{k}")
                    contribution = ir.Value(self.fresh("t"), plate.name, (), node.label())
                    body += [ir.Partial(partial, node.op, k, tuple(xs), vj), ir.Let(contribution, "mul", (aj, partial))]
                body += self.push_at(child, arg, contribution, scope, positions[k])
            return [ir.Map(plate, j, tuple(body))]
        return sweep

    def _lower_matmul(self, node, out, scope, outer, at):
        """``a @ b``: an event vector (a row of data, a hidden layer) or a whole
        matrix on the left, a whole vector or matrix on the right. Element
        ``(i, q)`` is a sum over ``j`` of ``a[i, j] * b[j, q]``; its adjoint adds
        ``b[j, q]`` and ``a[i, j]`` times the element's adjoint into theirs."""
        left, right = node.children
        lrank = left.ndim if node.ndim == len(out.event) else left.ndim - 1
        if right.ndim > 2 or left.ndim > 2 or lrank < 1:
            raise self.not_lowered(node, f"operands of shapes {left.shape} and {right.shape}")
        a, b = self.value(left, scope, outer, at, lrank), self.value(right, scope, outer, None, right.ndim)
        if not all(isinstance(v, ir.Value) and v.event for v in (a, b)):
            raise self.not_lowered(node, "a constant operand")
        p, k = (a.event[0] if len(a.event) == 2 else 1), a.event[-1]
        m = b.event[1] if len(b.event) == 2 else 1
        rows, cols, inner = (ir.Plate(self.fresh("e"), ir.Size("fixed", value=n)) for n in (p, m, k))
        i, q, j = self.fresh("j"), self.fresh("j"), self.fresh("j")

        def element(body, inside):
            """``(i, q)``'s position in ``out``; ``(i, j)``'s and ``(j, q)``'s in ``a`` and ``b``."""
            return (self.flat(cols, body, i, m, q), self.flat(inner, inside, i, k, j),
                    self.flat(inner, inside, j, m, q))

        def loops(before, inside, after=()):
            return [ir.Map(rows, i, (ir.Map(cols, q, tuple(before) + (ir.Map(inner, j, tuple(inside)),)
                                             + tuple(after)),))]
        scalar = not out.event  # a row times a vector: the sum is the value
        total = out if scalar else ir.Value(self.fresh("acc"), cols.name, (), node.label())
        before, inside = [], []
        at_out, at_a, at_b = element(before, inside)
        x, y = self.element(a, j, inside, inner, at_a), self.element(b, j, inside, inner, at_b)
        t = ir.Value(self.fresh("t"), inner.name, (), "product")
        inside += [ir.Let(t, "mul", (x, y)), ir.Accumulate(total, t, "local")]
        after = [] if scalar else [ir.Store(out.array(), ir.At(at_out), total)]
        scope.forward += ([] if scalar else self.declared(out)) + loops(before + [ir.Local(total)], inside, after)

        def sweep(adjoint):
            before, inside = [], []
            at_out, at_a, at_b = element(before, inside)
            g = adjoint if scalar else self.element(adjoint, q, before, cols, at_out)
            for child, mine, other, position, other_position in ((left, a, b, at_a, at_b), (right, b, a, at_b, at_a)):
                if self.needs_grad(child):
                    y = self.element(other, j, inside, inner, other_position)
                    t = ir.Value(self.fresh("t"), inner.name, (), f"d {node.label()} / d {child.label()}")
                    inside += [ir.Let(t, "mul", (g, y))] + self.push_at(child, mine, t, scope, position)
            return loops(before, inside)
        return sweep

    def log_sum_exp(self, x, out, scope):
        """Statements of ``out = log(sum(exp(x)))`` over event ``x``'s elements: the
        largest ``m``, then ``m + log(sum(exp(x - m)))`` (``-inf`` when every element is)."""
        top, total = self.new(scope, "max", "m"), self.new(scope, "sum exp", "s")
        (p1, j1), (p2, j2) = self.over(x.event), self.over(x.event)
        body1, body2 = [], []
        x1, x2 = self.element(x, j1, body1, p1), self.element(x, j2, body2, p2)
        shifted, e = (ir.Value(self.fresh("t"), p2.name, (), label) for label in ("x - max", "exp(x - max)"))
        finite, log_total, value = (self.new(scope, label, "t") for label in ("max > -inf", "log sum", "m + log s"))
        body1.append(ir.Accumulate(top, x1, "local", op="max"))
        body2 += [ir.Let(shifted, "sub", (x2, top)), ir.Let(e, "exp", (shifted,)), ir.Accumulate(total, e, "local")]
        return [ir.Local(top, -math.inf), ir.Map(p1, j1, tuple(body1)), ir.Local(total), ir.Map(p2, j2, tuple(body2)),
                ir.Let(finite, "gt", (top, -math.inf)), ir.Let(log_total, "log", (total,)),
                ir.Let(value, "add", (top, log_total)), ir.Let(out, "where", (finite, value, -math.inf))]

    def _lower_log_softmax(self, node, out, scope, outer, at):
        """``x - logsumexp(x)`` over a vector event; its adjoint ``a - softmax * sum(a)``."""
        if len(out.event) != 1:
            raise self.not_lowered(node, f"event shape {out.event}")
        (child,) = node.children
        x = self.value(child, scope, outer, at, 1)
        lse = self.new(scope, "lse", "t")
        plate, j = self.over(out.event)
        body = []
        xj = self.element(x, j, body, plate)
        y = ir.Value(self.fresh("t"), plate.name, (), node.label())
        body += [ir.Let(y, "sub", (xj, lse)), ir.Store(out.array(), ir.At(j), y)]
        scope.forward += self.declared(out) + self.log_sum_exp(x, lse, scope) + [ir.Map(plate, j, tuple(body))]

        def sweep(a):
            s = self.new(scope, "sum of adjoints", "t")
            (p1, j1), (p2, j2) = self.over(out.event), self.over(out.event)
            body1, body2 = [], []
            a1 = self.element(a, j1, body1, p1)
            a2, y2 = self.element(a, j2, body2, p2), self.element(out, j2, body2, p2)
            e, t, d = (ir.Value(self.fresh("t"), p2.name, (), label) for label in ("softmax", "softmax * sum", "d x"))
            body1.append(ir.Accumulate(s, a1, "local"))
            body2 += [ir.Let(e, "exp", (y2,)), ir.Let(t, "mul", (e, s)), ir.Let(d, "sub", (a2, t))]
            body2 += self.push_at(child, x, d, scope, j2)
            return [ir.Local(s), ir.Map(p1, j1, tuple(body1)), ir.Map(p2, j2, tuple(body2))]
        return sweep

    def _lower_reduce(self, node, out, scope, outer, at):
        """``ld.sum(x, axis)`` / ``ld.logsumexp(x, axis)`` over the last axis of a
        vector event (a row's logits): a scalar per row; each element's adjoint
        the node's (times ``exp(x - value)`` for the log-sum-exp)."""
        (child,) = node.children
        if out.event or node.axis != child.ndim - 1:
            raise self.not_lowered(node, f"axis {node.axis} of shape {child.shape}")
        x = self.value(child, scope, outer, at, 1)
        if node.op == "sum":
            scope.forward += [ir.Local(out)] + self.total(x, out, "local")
        else:
            scope.forward += self.log_sum_exp(x, out, scope)

        def sweep(a):
            if node.op == "sum":
                return self.spread(child, x, a, scope)
            plate, j = self.over(x.event)
            body = []
            xj = self.element(x, j, body, plate)
            d, w, contribution = (ir.Value(self.fresh("t"), plate.name, (), label)
                                  for label in ("x - lse", "exp(x - lse)", node.label()))
            body += [ir.Let(d, "sub", (xj, out)), ir.Let(w, "exp", (d,)), ir.Let(contribution, "mul", (a, w))]
            return [ir.Map(plate, j, tuple(body + self.push_at(child, x, contribution, scope, j)))]
        return sweep

    def copy(self, x, out, scope, loops, positions):
        """``out``'s elements from ``x``'s at other positions: ``loops`` the lengths of
        nested maps, ``positions(body, names) -> (out's, x's)`` flat positions;
        the sweep adds each element's adjoint back at its position in ``x``."""
        plates = [(ir.Plate(self.fresh("e"), ir.Size("fixed", value=n)), self.fresh("j")) for n in loops]

        def nest(body):
            for plate, j in reversed(plates):
                body = [ir.Map(plate, j, tuple(body))]
            return body
        names, inner = [j for _, j in plates], plates[-1][0]
        body = []
        to, at = positions(body, names)
        xj = self.element(x, at, body, inner, at)
        scope.forward += self.declared(out) + nest(body + [ir.Store(out.array(), ir.At(to), xj)])

        def sweep(a, node):
            body = []
            to, at = positions(body, names)
            aj = self.element(a, to, body, inner, to)
            return nest(body + self.push_at(node, x, aj, scope, at))
        return sweep

    def _lower_transpose(self, node, out, scope, outer, at):
        """``x.T`` of a whole matrix: element ``(a, b)`` is ``x``'s ``(b, a)``."""
        (child,) = node.children
        if node.ndim != 2 or len(out.event) != 2:
            raise self.not_lowered(node, f"shape {node.shape} read as rows")
        x = self.value(child, scope, outer, at, 2)
        r, c = child.shape

        def positions(body, names):
            return self.flat(None, body, names[0], r, names[1]), self.flat(None, body, names[1], c, names[0])
        sweep = self.copy(x, out, scope, (c, r), positions)
        return lambda a: sweep(a, child)

    def _lower_take(self, node, out, scope, outer, at):
        """``x[i]``, ``x[:, j]``: a constant position along one axis of an event."""
        return self._pick(node, out, scope, outer, at, node.position, 1, None)

    def _lower_slice_axis(self, node, out, scope, outer, at):
        """``W[1:]``, ``x[:, :-1]``: constant bounds along one axis of an event."""
        return self._pick(node, out, scope, outer, at, node.start, node.step, node.shape[node.axis])

    def _pick(self, node, out, scope, outer, at, start, step, count):
        """Positions ``start + step * r`` (``r < count``; None: the one position, the
        axis dropped) along ``node.axis`` of its child's event."""
        (child,) = node.children
        rowed = node.ndim > len(out.event)
        if rowed and node.axis == 0 and count is None and child.ndim == 2 and not out.event:
            return self._row_of_whole(node, out, scope, outer, at)
        if (rowed and node.axis == 0) or (not out.event and not rowed):
            raise self.not_lowered(node, f"axis {node.axis} of shape {child.shape} read as rows")
        x = self.value(child, scope, outer, at, child.ndim - (1 if rowed else 0))
        axis = node.axis - (1 if rowed else 0)
        pre, n, post = math.prod(x.event[:axis]), x.event[axis], math.prod(x.event[axis + 1:])
        if not out.event:  # one element of a row's vector: a scalar per row
            scope.forward.append(ir.Load(out, x.array(), ir.At(start)))
            return lambda a: self.push_at(child, x, a, scope, start)
        kept = 1 if count is None else count

        def positions(body, names):
            o, r, u = names
            along = self.flat(None, body, r, step, start)  # start + step * r
            row, picked = self.flat(None, body, o, n, along), self.flat(None, body, o, kept, r)
            return self.flat(None, body, picked, post, u), self.flat(None, body, row, post, u)
        sweep = self.copy(x, out, scope, (pre, kept, post), positions)
        return lambda a: sweep(a, child)

    def _row_of_whole(self, node, out, scope, outer, at):
        """``W[i]`` of a whole matrix, read one element per row: ``W``'s element
        ``(i, row)``."""
        (child,) = node.children
        x = self.value(child, scope, outer, at, 2)
        k = self.flat(scope.plate, scope.forward, node.position, child.shape[1], at)
        scope.forward.append(ir.Load(out, x.array(), ir.At(k)))
        return lambda a: self.push_at(child, x, a, scope, k)

    def _lower_reshape(self, node, out, scope, outer, at):
        """``x.reshape(shape)``: the same flat elements, so ``x``'s array itself with
        another event shape (its adjoint ``x``'s too)."""
        (child,) = node.children
        rowed = node.ndim > len(out.event)
        if rowed and not out.event:  # one element per row: of the row's event, or of the whole
            x = self.value(child, scope, outer, at, child.ndim - (1 if node.keeps_rows else 0))
            position = 0 if node.keeps_rows else at
            if isinstance(x, ir.Value) and not x.event:  # a scalar per row already
                return x
            if not isinstance(x, ir.Value) or (node.keeps_rows and math.prod(x.event) != 1):
                raise self.not_lowered(node, f"shape {child.shape} to {node.shape}")
            scope.forward.append(ir.Load(out, x.array(), ir.At(position)))
            return lambda a: self.push_at(child, x, a, scope, position)
        if rowed and not node.keeps_rows:
            raise self.not_lowered(node, f"shape {child.shape} to {node.shape} read as rows")
        x = self.value(child, scope, outer, at, child.ndim - (1 if rowed else 0))
        if not (isinstance(x, ir.Value) and x.event and out.event) or math.prod(x.event) != math.prod(out.event):
            raise self.not_lowered(node, f"shape {child.shape} to {node.shape}")
        return x._replace(event=out.event)

    # ----- multivariate kernels -------------------------------------------
    def event_call(self, spec, term_args, args, keep, loop, label):
        """``(lp, statements, seed)``: the kernel's call on one event per argument,
        its partials into zeroed arrays, and the seed adding them into the
        arguments' adjoints."""
        lengths = spec.split_shapes([a.shape for a in term_args])[1]
        work = ir.Buffer("workspace", self.fresh("work"))
        lines = [ir.Workspace(work, ir.Size("fixed", value=spec.work_size(lengths)))]
        partials = []
        for node, arg in zip(term_args, args):
            if not self.needs_grad(node):
                partials.append(None)
                continue
            event = arg.event if isinstance(arg, ir.Value) else ()
            partial = self.event_value(loop, f"d{label}/d{node.label()}", event or (1,), "r")
            lines += self.declared(partial) + [ir.Zero(partial.array())]
            partials.append(partial)
        row = self.new(loop, label, "lp")
        lines.append(ir.EventCall(row, spec, args, keep, work, tuple(partials)))
        seed = []
        for node, arg, partial in zip(term_args, args, partials):
            if partial is None:
                continue
            plate, j = self.over(partial.event)
            body = []
            pj = self.element(partial, j, body, plate)
            if isinstance(arg, ir.Value) and arg.event:
                seed.append(ir.Map(plate, j, tuple(body + self.push_at(node, arg, pj, loop, j))))
            else:
                p0 = ir.Value(self.fresh("x"), loop.plate.name if loop.plate else None, (), partial.label)
                seed += [ir.Load(p0, partial.array(), ir.At(0))] + self.push(node, arg, p0, loop)
        return row, lines, seed


    def elementwise_call(self, spec, term_args, args, keep, checked, loop, label):
        """``(lp, statements, seed)`` of a univariate kernel on rows of events (a
        prior on a parameter matrix): a ``Call`` per element, the row's log density
        their sum, the partials stored per element (a scalar argument's summed)
        and added into the arguments' adjoints by the seed."""
        event = next(a.event for a in args if isinstance(a, ir.Value) and a.event)
        if any(isinstance(a, ir.Value) and a.event not in ((), event) for a in args):
            raise self.not_lowered(term_args[0], "arguments of different event shapes")
        plate, j = self.over(event)
        row = self.new(loop, label, "lp")
        lines, body, seed, partials = [ir.Local(row)], [], [], []
        xs = [self.element(a, j, body, plate) for a in args]
        for node, arg in zip(term_args, args):
            if not self.needs_grad(node):
                partials.append(None)
            elif isinstance(arg, ir.Value) and arg.event:
                partial = self.event_value(loop, f"d{label}/d{node.label()}", event, "r")
                lines += self.declared(partial)
                partials.append(partial)
            else:
                partial = self.new(loop, f"d{label}/d{node.label()}", "r")
                lines.append(ir.Local(partial))
                partials.append(partial)
        element = ir.Value(self.fresh("lp"), plate.name, (), label)
        outs = tuple(ir.Value(self.fresh("r"), plate.name, (), p.label) if p is not None else None for p in partials)
        body += [ir.Call((element,) + outs, spec, tuple(xs), keep, checked), ir.Accumulate(row, element, "local")]
        for partial, out in zip(partials, outs):
            if partial is not None:
                body.append(ir.Store(partial.array(), ir.At(j), out) if partial.event
                            else ir.Accumulate(partial, out, "local"))
        lines.append(ir.Map(plate, j, tuple(body)))
        for node, arg, partial in zip(term_args, args, partials):
            if partial is None:
                continue
            if not partial.event:
                seed += self.push(node, arg, partial, loop)
                continue
            plate, j = self.over(event)
            body = []
            pj = self.element(partial, j, body, plate)
            seed.append(ir.Map(plate, j, tuple(body + self.push_at(node, arg, pj, loop, j))))
        return row, lines, seed


def _broadcasts(shape, event):
    """Whether an operand of event ``shape`` broadcasts to ``event`` (aligned at the right)."""
    return len(shape) <= len(event) and all(n in (1, m) for n, m in zip(shape[::-1], event[::-1]))


def event_ranks(term):
    """The event rank each of ``term``'s arguments is read with: a multivariate
    kernel's (``Spec.events``); a univariate kernel's on a matrix, its rows'
    (one less than the most axes); else 0."""
    if term.dist is None or not term.dist.spec.multivariate:  # rows of events of a matrix's rows
        return (max(a.ndim for a in term.args) - 1 if term.dist is not None and any(a.ndim > 1 for a in term.args)
                else 0,) * len(term.args)
    return tuple(len(axes) for axes in term.dist.spec.events)


def rows_of(term):
    """The argument whose leading axis is ``term``'s rows (None: one event, or a scalar term)."""
    return next((a for a, r in zip(term.args, event_ranks(term)) if a.ndim > r), None)
