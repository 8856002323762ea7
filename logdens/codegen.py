"""Lowering: a model's terms become fused loops of generated Python source.

Every term is one loop over its plate (the broadcast index space of its
arguments). In one iteration the loop reads the observation, evaluates the
inlined expressions of the distribution's arguments, calls the distribution's
``logpdf_grad`` kernel, and sweeps the adjoints back through the inlined
expressions into the gradient: no tape, no temporaries of the data's length.

Nodes without a plate (scalars) are computed once before the loop, their
adjoints accumulate in locals inside it and flow back after it. A reduction
(``ld.sum``) inside an expression is its own loop before the term's loop,
and a second loop after it pushes the reduction's adjoint back (the
reduction's elements are recomputed, not stored). When the reduction's
elements read one vector parameter, element by element, and nothing else in
the model reads it, its loop also stores each element's derivative in that
parameter's gradient entry, and the loop after it only scales them by the
reduction's adjoint (``_one_pass_param``).

Variables: ``v<n>`` values and ``a<n>`` their adjoints (each with a comment
echoing the source node), ``d_<name>`` data arrays, ``i_<name>`` index
arrays, ``n_<name>`` data lengths, all names validated identifiers.

A term with values of more than one axis (matrices, rows of vectors) is lowered
by ``logdens.shaped`` instead (``rules.shaped``), into the same function.

What the lowering asks of a node comes from its rule (``logdens.rules``) and
the op table (``logdens.ops``); how each node type is lowered is one entry of
``VALUE_RULES``. Where adjoints land is a target's choice
(``logdens.targets``, ``logdens.rows``); the CPU schedule of blocked loops is
a switch (``blocks``) whose passes ``logdens.cpu_blocks`` writes; adjoint
accumulator lines are written out with the function (``logdens.lines``).
"""

import functools

from logdens import expr as ex
from logdens import rules, validate
from logdens.compiler.ad import plate_source
from logdens.cpu_blocks import BLOCK, column_groups, product_group, scatter, transposed_group
from logdens.layout import module_alias
from logdens.lines import Accumulator, Workspaces, indent, literal, plus, times
from logdens.ops import OPS
from logdens.shaped import ShapedTerm, potential_parts
from logdens.targets import OWN_ROW, Atomic, ChunkTarget, Entry, Rows, entry

class Block:
    """Straight-line code, or the body of one loop, with its own value cache.

    ``forward`` computes values; ``reverse`` (run after everything that uses
    them) propagates adjoints. ``records`` lists the values created here that
    depend on parameters, in forward order, each with its reverse rule.
    """

    def __init__(self, index=None, length=None):
        self.index, self.length = index, length
        self.forward, self.reverse = [], []
        self.values, self.records = {}, []
        self.level = self  # the block whose straight-line code holds this one's adjoint lines


class Lowering:
    """Writes the body of one generated function, term by term.

    ``gradient``: emit adjoint code; ``target(entry, row, rows)``: code of
    the gradient ``Entry`` at the loop's row ``row`` (``grad[col]``, or a row
    of the per-sample output); ``per_row``: scalar adjoints are flushed in
    every iteration (per-sample gradients) instead of once after the loop;
    ``blocks``: the CPU schedule of loops in blocks of rows, reading products,
    gathers and hoisted expressions through per-block buffers (``_blocks``);
    without it every row does its own work, as a GPU thread would. ``grid``:
    the body of a GPU kernel (``logdens.cuda_source``), whose threads each
    take the rows ``row0, row0 + rows_step, ...`` of every term with a plate
    and no reduction (``splits_rows``) and add to ``lp_t`` and, through the
    target (``targets.GridTarget``), to thread-local sums or atomically to
    arrays other threads add to (``Atomic``); other terms run in the point's
    first thread.
    """

    def __init__(self, layout, gradient, target=None, per_row=False, chunks=None, blocks=True, workspaces=None,
                 grid=False):
        self.layout, self.gradient, self.target, self.per_row = layout, gradient, target, per_row
        self.blocks, self.grid, self.serial = blocks and not grid, grid, False
        self.workspaces = Workspaces() if workspaces is None else workspaces
        self.private = None  # in a parallel chunk: its workspaces, one row each (``_workspace``)
        self.gathered_index, self.gathered_order, self.rows = {}, {}, Rows(False)
        # Vector parameters whose gradient entries a term assigns instead of
        # adding to (see ``assign_first``), those assigned so far, and those any
        # term so far has read (a later term must add to their entries).
        self.assign_first, self.assigning, self.assigned, self.touched = False, set(), set(), set()
        self.terms = ()  # the model's terms, with ``assign_first``: who else reads a parameter
        self.serial_target, self.chunks = target, chunks
        self.chunk_target = ChunkTarget()
        self.lp = "lp_t" if grid else "lp"
        self.counter = 0
        self.depends = {}
        self.owner, self.contributions = {}, {}  # record variable -> its block; see ``Accumulator``

    def fresh(self, prefix="v"):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def needs_grad(self, node):
        if id(node) not in self.depends:
            self.depends[id(node)] = self.gradient and node.depends_on_params()
        return self.depends[id(node)]

    # ----- values -------------------------------------------------------
    def value(self, node, block, outer, index):
        """Emit code for ``node`` at ``index`` (None for scalars); return its variable."""
        if rules.rule(node).constant:
            return literal(node.value)
        if node.shape == ():
            block, index = outer, None
        key = (id(node), index)
        if key in block.values:
            return block.values[key]
        var = self.fresh()
        block.values[key] = var
        rule = VALUE_RULES[type(node)](self, node, var, block, outer, index)
        if rule is not None and self.needs_grad(node):
            block.records.append((var, rule, node))
            self.owner[var] = block
        return var

    def _value_param(self, node, var, block, outer, index):
        p = self.layout.params[node.name]
        if node.shape == ():
            u = f"theta[{p.offset_code}]"
            if p.transform.identity:
                block.forward.append(f"{var} = {u}  # {node.name}")
                return lambda a, b: [self.add(self._target(entry(p)), a)]
            x, dx = p.transform.emit(block.forward, u, var)
            block.forward.append(f"{var} = {x}  # {node.name}")
            return lambda a, b: [self.add(self._target(entry(p)), f"{a} * {dx}")]
        if index in self.gathered_index:
            return self._gathered_param(node, p, var, block, index)
        if self._row_aligned(block, index):
            here = Entry(p, index, None, OWN_ROW)
        else:
            here = entry(p, index)
        if p.transform.event:
            block.forward.append(f"{var} = {self._element(f'w_{p.ident}', block, index)}  # {node.name}[{index}]")
            return lambda a, b: [self.add(self.event_adjoint(p, block, index), a)]
        op = "=" if node.name in self.assigning else "+="  # the first writer of these entries
        if p.transform.identity:
            block.forward.append(f"{var} = {self._element('theta', block, index, p.offset_code)}  # {node.name}[{index}]")
            return lambda a, b: [self.add(self._target(here), a, op)]
        block.forward.append(f"{var} = {self._element(f'w_{p.ident}', block, index)}  # {node.name}[{index}]")
        return lambda a, b: [self.add(self._target(here), f"{a} * {self._element(f'dw_{p.ident}', block, index)}", op)]

    def _value_data(self, node, var, block, outer, index):
        name, ident = self.layout.data_name(node), self.layout.data_ident(node)
        if index in self.gathered_index:  # data: no adjoint, so the rule is never used
            return self._buffered(var, block, f"d_{ident}[{self.gathered_index[index]}[r]]", None,
                                  f"{name}[{index}]")
        element = f"d_{ident}[0]" if node.shape == () else self._element(f"d_{ident}", block, index)
        block.forward.append(f"{var} = {self.data_read(element)}  # {name}")

    def data_read(self, element):
        """Code of a data ``element`` read as float64: on a GPU the data may be
        stored as float32 (``compile(backend="cuda", dtype=np.float32)``), and a
        float32 value would make float32 whatever it meets without a float64
        operand (``x * x``, ``log(x)``), or in the simulator anything at all.
        Not ``float()``: numba types ``float(x)`` of a float32 as float32."""
        return f"numba.float64({element})" if self.grid else element

    def _gathered_param(self, node, p, var, block, index):
        """``node[k]`` with ``k`` read from an index array at the row: gathered into
        a buffer before the block's rows, its adjoints scattered after them."""
        view = self.gathered_index[index]
        at = f"{view}[r]"
        load = f"theta[{plus(p.offset_code, at)}]" if p.transform.identity else f"w_{p.ident}[{at}]"
        def sink(k):  # code adding a value to the adjoint of element ``k`` of p
            return self._sink(p, k, scatter=True)
        return self._buffered(var, block, load, (view, sink) if self.gradient else None,
                              f"{node.name}[{index}]")

    def _buffered(self, var, block, load, sink, label):
        """``var`` read from the gather buffer ``g<n>``, filled by ``load`` before a
        block's rows; its adjoint into ``ag<n>``, scattered through ``sink`` after
        them. One record per gathered element, so one contribution per row: the
        adjoint is assigned, and its buffer needs no zeroing (hierarchical
        Poisson: 90 -> 88 us)."""
        buffer = f"g{var[1:]}"
        self.gathered.append((buffer, load, sink))
        block.forward.append(f"{var} = {buffer}[{block.index}]  # {label}")
        return lambda a, b: [f"a{buffer}[{block.index}] = {a}"]

    def _sink(self, p, at, scatter=False):
        """A function from the code of a value to the line adding it to the adjoint
        of element ``at`` of parameter ``p``; with ``scatter``, in a loop over a
        block's rows ``r`` after the rows' loop (per row: into row ``b0 + r``)."""
        if p.transform.event:
            return lambda value: self.add(self.event_adjoint(p, None, at), value)
        scale = "" if p.transform.identity else f"dw_{p.ident}[{at}] * "
        dest = self._target(entry(p, at), 'r' if scatter and self.per_row else None)
        return lambda value: self.add(dest, scale + value)

    def add(self, dest, value, op="+="):
        """The line adding ``value`` to ``dest`` (or assigning it, ``op="="``): an
        atomic add where ``dest`` is an ``Atomic`` element (a GPU thread's
        target that other threads add to as well)."""
        if isinstance(dest, Atomic) and op == "+=":
            return f"cuda.atomic.add({dest.array}, {dest.index}, {value})"
        return f"{dest} {op} {value}"

    def event_adjoint(self, p, block, index):
        """The adjoint of element ``index`` of event-transformed ``p``: shared by
        every row, so atomic on a GPU."""
        if self.grid:
            return Atomic(f"aw_{p.ident}", index)
        if block is None:
            return f"aw_{p.ident}[{index}]"
        return self._element(f"aw_{p.ident}", block, index)

    def _target(self, e, row=None):
        """Code of the gradient entry ``e`` at the loop's row (or at ``row``)."""
        return self.target(e, row or self.row, self.rows)

    def _row_aligned(self, block, index):
        """Whether ``index`` is the row of the term loop."""
        return block is self.term_loop and index == block.index

    def _blockable(self, block, index):
        """Whether a node at ``index`` may be read through a per-block buffer."""
        return self.blocks and self._row_aligned(block, index)

    def _element(self, array, block, index, offset="0"):
        """Code of element ``offset + index`` of ``array`` (through ``self.rows``
        when ``index`` is the term loop's row)."""
        if self._row_aligned(block, index):
            return self.rows.element(array, index, offset)
        return f"{array}[{plus(offset, index)}]"

    def _value_elementwise(self, node, var, block, outer, index):
        """An op of the table ``ops.OPS`` (``Unary``, ``Binary``, ``Ternary``): its value from its
        arguments', each argument's adjoint the node's times its partial."""
        op = OPS[node.op]
        args = [self.value(c, block, outer, index) for c in node.children]
        block.forward.append(f"{var} = {op.value.format(*args)}  # {node.label()}")
        partials = [d.format(*args, v=var) for d in op.derivatives]
        return lambda a, b: [line for child, arg, d in zip(node.children, args, partials)
                             for line in self._push(child, arg, times(a, d), b)]

    def _value_logpdf(self, node, var, block, outer, index):
        """``dist.logpdf(x)``: the kernel with every summand kept (inside an
        expression no constant may go), each argument's adjoint the node's
        times the kernel's partial."""
        args = [self.value(c, block, outer, index) for c in node.children]
        result = self.fresh("r")
        block.forward.append(f"{result} = {module_alias(node.spec)}.logpdf_grad({', '.join(args)}, "
                             f"{node.spec.keep_all!r})")
        block.forward.append(f"{var} = {result}[0]  # {node.label()}")
        return lambda a, b: [line for j, (child, arg) in enumerate(zip(node.children, args))
                             for line in self._push(child, arg, times(a, f"{result}[{j + 1}]"), b)]

    def _value_gather(self, node, var, block, outer, index):
        source, idx = node.children
        k = self.fresh("k")
        block.forward.append(f"{k} = {self._element(f'i_{self.layout.data_ident(idx)}', block, index)}")
        if self._blockable(block, index) and not (self.per_row and self.row_events):
            # Through the block's view: numba wraps a negative index, and LLVM cannot
            # tell ``b0 + r`` is not (a scatter of 20,000 rows: 21.7 against 14.6 us).
            name = self.layout.data_ident(idx)
            self.gathered_views[f"i_{name}_b0"] = f"i_{name}[b0:b1]"
            self.gathered_index[k] = f"i_{name}_b0"  # the view; element ``[r]`` at row r
            self.gathered_order[f"i_{name}_b0"] = f"sorted_{name}"
            if self._hoistable(source):
                return self._gathered_expression(source, var, block, outer, k)
        child = self.value(source, block, outer, k)
        block.forward.append(f"{var} = {child}  # {node.label()}")
        return lambda a, b: self._push(source, child, a, b)

    def _hoistable(self, source):
        """Whether a gathered vector expression is computed once per element
        before the rows instead of once per row: an elementwise expression of
        parameters (``(mu + sigma * z)[group]``), outside per-sample rows,
        which back-propagate each row through it on their own."""
        return not self.per_row and rules.rule(source).elementwise and source.depends_on_params()

    def _buffers_rows(self, term):
        """Whether ``term``'s loop reads through per-block buffers (see ``_blocks``):
        a product ``X @ beta`` at its rows, or a gather at its rows of a hoistable
        expression or of an expression whose vector leaves (data or parameters)
        are read at the gathered index. The mirror of ``_value_product`` and
        ``_value_gather``, asked before the loop's body is written because the
        body subscripts its rows by the answer (``Rows``)."""
        if not self.blocks:
            return False
        @functools.lru_cache(maxsize=None)  # keyed by node: a shared sub-expression is asked once
        def at_row(node):
            if node.shape == ():
                return False
            reads = dict(zip(rules.rule(node).reads(node), node.children))
            if rules.WHOLE in reads:  # a product: in blocks, unless a per-sample row reads an event
                return not (self.per_row and self.layout.params[reads[rules.WHOLE].name].transform.event)
            if rules.GATHERED in reads:
                source = reads[rules.GATHERED]
                return not (self.per_row and self.row_events) and (
                    self._hoistable(source) or gathered_leaf(source))
            return rules.rule(node).elementwise and any(at_row(c) for c in node.children)

        @functools.lru_cache(maxsize=None)
        def gathered_leaf(node):
            if node.shape == ():
                return False
            if rules.rule(node).param or rules.rule(node).data:
                return True
            return rules.rule(node).elementwise and any(gathered_leaf(c) for c in node.children)

        return any(at_row(a) for a in term.args)

    def _gathered_expression(self, source, var, block, outer, k):
        """``source[k]`` for a hoistable ``source``: its elements into ``h<n>``
        before the term's loop, gathered like a parameter; the rows' adjoints
        scattered into ``ah<n>`` and sent through ``source`` once per element
        after the loop. The rows then do no work for the expression's own
        parameters (hierarchical Poisson, 100 groups, 20,000 rows: 85 -> 79 us)."""
        view, n = self.gathered_index[k], var[1:]
        h, length = f"h{n}", self.length(source)
        ahead = Block(self.fresh("i"), length)
        element = self.value(source, ahead, outer, ahead.index)
        self._workspace(h, length)
        outer.forward += ([f"for {ahead.index} in range({length}):  # {h}: {source.label()}, element by element"]
                          + indent(ahead.forward + [f"{h}[{ahead.index}] = {element}"]))
        sink = None
        if self.needs_grad(source):
            self._workspace(f"a{h}", length)
            outer.forward += [f"a{h}[:] = 0.0"]
            sink = (view, lambda at: lambda value: f"a{h}[{at}] += {value}")
            back = Block(self.fresh("i"), length)
            element = self.value(source, back, outer, back.index)
            self._push(source, element, f"a{h}[{back.index}]", back, into=back.reverse)
            body = back.forward + self._adjoint_inits(back) + self._reverse(back)
            # Seeds of ``outer``: they run before its scalars' rules, which they feed.
            outer.reverse += [f"for {back.index} in range({length}):"] + indent(body)
        return self._buffered(var, block, f"{h}[{view}[r]]", sink, f"{source.label()}[{k}]")

    def _value_slice(self, node, var, block, outer, index):
        k = self.fresh("k")
        row = self.rows.plate(index) if self._row_aligned(block, index) else index
        block.forward.append(f"{k} = {self._slice_bounds(node)[0]} + {node.step} * {row}")
        child = self.value(node.children[0], block, outer, k)
        block.forward.append(f"{var} = {child}  # {node.label()}")
        return lambda a, b: self._push(node.children[0], child, a, b)

    def _value_cumsum(self, node, var, block, outer, index):
        """``cumsum(x)``: read at ``index`` from ``h<n>``, the running sums computed
        once per term before its rows (``_running_sums``); the adjoint added into
        ``ah<n>`` there."""
        h = self._running_sums(node, outer)
        block.forward.append(f"{var} = {self._element(h, block, index)}  # {node.label()}")
        if not self.needs_grad(node.children[0]):
            return None
        return lambda a, b: [f"{self._element(f'a{h}', block, index)} += {a}"]

    def _running_sums(self, node, outer):
        """The workspace of ``node``'s running sums, set up on the term's first read.

        With a gradient, ``ah<n>`` collects every read's adjoint, and a record of
        ``outer`` (after the records of what reads the sums, so its rule runs
        after theirs) sweeps it back: element ``k``'s adjoint is the sum of
        ``ah[k:]``, sent through ``x`` element by element. Per-sample rows run
        the sweep after each row and clear ``ah`` (their cost grows as n^2).
        """
        if id(node) in self.running:
            return self.running[id(node)]
        source, n = node.children[0], self.fresh("c")[1:]
        h, length = f"h{n}", self.length(node)
        self.running[id(node)] = h
        ahead = Block(self.fresh("i"), length)
        element = self.value(source, ahead, outer, ahead.index)
        self._workspace(h, length)
        outer.forward += ([f"t{n} = 0.0", f"for {ahead.index} in range({length}):  # {h}: {node.label()}"]
                          + indent(ahead.forward + [f"t{n} += {element}", f"{h}[{ahead.index}] = t{n}"]))
        if not self.needs_grad(source):
            return h
        self._workspace(f"a{h}", length)
        outer.forward.append(f"a{h}[:] = 0.0")

        def sweep(a, b):
            back = Block(self.fresh("i"), length)
            x = self.value(source, back, outer, back.index)
            self._push(source, x, f"r{n}", back, into=back.reverse)
            body = back.forward + self._adjoint_inits(back) + self._reverse(back)
            return ([f"r{n} = 0.0", f"for {back.index} in range({length} - 1, -1, -1):",
                     f"    r{n} += a{h}[{back.index}]"] + indent(body) + ([f"a{h}[:] = 0.0"] if self.per_row else []))
        outer.records.append((f"v{n}", sweep, node))
        return h

    def _value_element(self, node, var, block, outer, index):
        """``source[k]``: a scalar, so computed once in ``outer`` (see ``value``)."""
        k = self.fresh("k")
        block.forward.append(f"{k} = {node.at(self.length(node.children[0]))}")
        child = self.value(node.children[0], block, outer, k)
        block.forward.append(f"{var} = {child}  # {node.label()}")
        return lambda a, b: self._push(node.children[0], child, a, b)

    def _value_length(self, node, var, block, outer, index):
        """``len(x)``: the plate length's code (``n_<data>`` or the built length)."""
        block.forward.append(f"{var} = float({self.length(node.children[0])})  # {node.label()}")

    def _value_product(self, node, var, block, outer, index):
        matrix, vector = node.children
        p = self.layout.params[vector.name]
        X = f"d_{self.layout.data_ident(matrix)}"
        if self._blockable(block, index) and not (self.per_row and p.transform.event):
            # Row-aligned with the term's loop: computed a block of rows at a
            # time (see _blocks), read here from the block's buffer.
            buffer = f"eta{var[1:]}"
            self.blocked.append((buffer, X, p))
            block.forward.append(f"{var} = {buffer}[{index}]  # {node.label()}")
            # One record, so one contribution per row: assigned, and the buffer
            # needs no zeroing (logistic regression gradient: 113 -> 111 us).
            return lambda a, b: [f"a{buffer}[{index}] = {a}"]
        j = self.fresh("j")
        element = f"theta[{plus(p.offset_code, j)}]" if p.transform.identity else f"w_{p.ident}[{j}]"
        x = self.data_read(f"{X}[{j}, {index}]")
        block.forward += [f"{var} = 0.0  # {node.label()}", f"for {j} in range({p.constrained_code}):",
                          f"    {var} += {x} * {element}"]

        def rule(a, b):
            local = self.target.vector(p) if self.grid and not self.per_row else None
            add = self._sink(p, j) if local is None else (lambda value: f"{local}[{j}] += {value}")
            return [f"for {j} in range({p.constrained_code}):", "    " + add(f"{a} * {x}")]
        return rule

    def _value_sum(self, node, var, block, outer, index):
        arg = node.children[0]
        loop = Block(self.fresh("i"), self.length(arg))
        p = self._one_pass_param(node)
        if p is not None:
            self.assigning.add(p.name)  # its entries are assigned, not added to
            self.assigned.add(p.name)
        element = self.value(arg, loop, outer, loop.index)
        loop.forward.append(f"{var} += {element}")
        if p is not None:  # d element / d p[i] into p's gradient entries, scaled after
            self._push(arg, element, "1.0", loop, into=loop.reverse)
            loop.forward += self._adjoint_inits(loop) + self._reverse(loop)
            self.assigning.discard(p.name)
        outer.forward += [f"{var} = 0.0  # {node.label()}", f"for {loop.index} in range({loop.length}):"]
        outer.forward += indent(loop.forward)
        if p is not None:
            back = self.fresh("i")
            return lambda a, b: [f"for {back} in range({loop.length}):",
                                 f"    {self._target(entry(p, back))} *= {a}"]

        def rule(a, b):
            back = Block(self.fresh("i"), loop.length)
            element = self.value(arg, back, outer, back.index)
            self._push(arg, element, a, back, into=back.reverse)
            body = back.forward + self._adjoint_inits(back) + self._reverse(back)
            return [f"for {back.index} in range({back.length}):"] + indent(body)
        return rule

    def _value_logsumexp(self, node, var, block, outer, index):
        """``log(sum(exp(x)))``: a pass for the largest element ``m``, a pass for
        ``s = sum(exp(x - m))``, then ``m + log(s)`` (``-inf`` when every element
        is); each element's adjoint is the node's times ``exp(x_i - value)``."""
        arg = node.children[0]
        top, total = self.fresh("m"), self.fresh("s")
        passes = [(f"{top} = -math.inf", "{top} = max({top}, {x})"), (f"{total} = 0.0", "{total} += vmath.exp({x} - {top})")]
        for first, each in passes:
            loop = Block(self.fresh("i"), self.length(arg))
            x = self.value(arg, loop, outer, loop.index)
            outer.forward += [first, f"for {loop.index} in range({loop.length}):"]
            outer.forward += indent(loop.forward + [each.format(top=top, total=total, x=x)])
        outer.forward.append(f"{var} = {top} + vmath.log({total}) if {top} > -math.inf else -math.inf"
                             f"  # {node.label()}")

        def rule(a, b):
            back = Block(self.fresh("i"), self.length(arg))
            x = self.value(arg, back, outer, back.index)
            self._push(arg, x, f"{a} * vmath.exp({x} - {var})", back, into=back.reverse)
            body = back.forward + self._adjoint_inits(back) + self._reverse(back)
            return [f"for {back.index} in range({back.length}):"] + indent(body)
        return rule

    def _one_pass_param(self, node):
        """The parameter whose gradient entries the loop of the sum ``node`` can
        hold, or None: one vector parameter (no event transform) read only at
        the loop's row through elementwise operations, no other parameter
        below ``node``, and no use of it anywhere else in the model (so no
        other code touches its entries between the loop and the scaling)."""
        if not (self.gradient and self.assign_first and not self.per_row) or self.grid:
            return None
        names = {leaf.name for leaf in node.leaves() if rules.rule(leaf).param}
        if len(names) != 1:
            return None
        p = self.layout.params[names.pop()]
        if p.shape == () or p.transform.event or p.name in self.touched:
            return None
        if not rules.elementwise_use(node.children[0], p.name):
            return None
        return None if any(rules.reads_outside(a, node, p.name) for t in self.terms for a in t.args) else p

    # ----- adjoints -----------------------------------------------------
    def _push(self, node, var, contribution, block, into=None):
        """Lines adding ``contribution`` to the adjoint of ``node``'s variable ``var``,
        in the reverse sweep of ``block``."""
        if not self.needs_grad(node):
            return []
        adjoint = f"a{var[1:]}"
        self.contributions.setdefault(adjoint, []).append(self.owner[var].level is block.level)
        line = Accumulator(adjoint, contribution, self.contributions)
        if into is not None:
            into.append(line)
            return []
        return [line]

    def _adjoint_inits(self, block):
        return [Accumulator(f"a{var[1:]}", None, self.contributions) for var, _, _ in block.records]

    def _reverse(self, block):
        """Reverse rules of ``block``'s records, after its seeds (``block.reverse``)."""
        lines = list(block.reverse)
        for var, rule, node in reversed(block.records):
            lines += rule(f"a{var[1:]}", block)
        return lines

    def length(self, node):
        """Code for the plate length of a non-scalar node (see ``plate_source``): a
        data array's run-time length, a parameter's run-time length
        (``n_<ident>``), or else (a parameter of fixed length, a slice) the
        length it was built with."""
        source = plate_source(node)
        if rules.rule(source).data:
            return f"n_{self.layout.data_ident(source)}"
        if rules.rule(source).param and self.layout.params[source.name].runtime:
            return self.layout.params[source.name].size_code
        if isinstance(source, ex.Slice):
            return str(self._slice_bounds(source)[1])
        return str(source.shape[0])

    def _slice_bounds(self, node):
        """``(start, length)`` of a slice on its source's current length (``Slice.bounds``)."""
        return node.bounds(self.length(node.children[0]))

    # ----- terms --------------------------------------------------------
    def term(self, term, keep, mode):
        """Lines of one term. ``mode``: "lp" adds to ``lp``; "pointwise" writes ``out[i]``;
        "gradient" adds nothing (the gradient alone: numba then drops the
        arithmetic that only the value needs)."""
        lines = []
        for part in potential_parts(term) if rules.shaped(term) else [term]:
            if rules.shaped(part):
                lines += ShapedTerm(self, part, keep, mode).lines()
            elif self.grid:
                lines += self._grid_term(part, keep, mode)
            else:
                lines += self._term(part, keep, mode)
        self.touched |= term.params_read()
        return lines

    def _term(self, term, keep, mode):
        term = rules.rows_added(term, per_observation=self.per_row or mode == "pointwise")
        chunked = self.gradient and self.chunks and splits_rows(term)
        if chunked:  # each chunk adds into its own ``lps[c]`` and, unless disjoint, its own row of ``bufs``
            self.target, self.lp, self.private = self.chunk_target, "lp_c", []
        outer = Block()
        plate = next((a for a in term.args if a.shape != ()), None)
        loop = Block(self.fresh("i"), self.length(plate) if plate is not None else "1")
        self.row, self.term_loop, self.blocked = loop.index, loop, []
        self.gathered, self.gathered_index, self.gathered_views, self.gathered_order = [], {}, {}, {}
        self.running = {}  # id(cumsum node) -> its workspace of running sums, this term's
        self.row_events = self.per_row and any(
            self.layout.params[name].transform.event for name in term.params_read())
        if self.assign_first and not (self.per_row or chunked or term.kind == "jacobian"):  # it may not run
            self.assigning = self._row_only_params(term) - self.touched
            if self.grid:  # rows of other terms run at the same time: only what no other term reads
                self.assigning = {name for name in self.assigning if self.layout.params[name].transform.identity
                                  and not any(name in t.params_read() for t in self.terms if t is not term)}
            self.assigned |= self.assigning
        self.buffered = self._buffers_rows(term)
        self.rows = Rows(bool(chunked) or self.buffered)
        if self.per_row or (loop.length == "1" and not (chunked or self.buffered)):
            outer.level = loop  # the scalars' adjoint lines share the rows' body, or there is no loop
        result = self._term_value(term, keep, loop, outer, mode)
        head = [f"# term {term.name!r}: {self._describe(term)}"]
        if not self.gradient:
            return head + outer.forward + self._blocks(loop, loop.forward)
        self._seed(term, result, loop)
        inner = loop.forward + self._adjoint_inits(loop) + self._reverse(loop)
        if self.per_row:  # scalar and vector-transform adjoints flushed into each row
            read = term.params_read()
            events = [p for p in self.layout.params.values() if p.transform.event and p.name in read]
            rows = self.serial_target
            self.row_term, self.row_scalars = term, {}
            buffered = (self.blocked or self.gathered) and not events
            flush = self._buffered_scalars(outer) if buffered else self._reverse(outer)
            inner = ([f"aw_{p.ident}[:] = 0.0" for p in events] + self._adjoint_inits(outer) + inner + flush
                     + [line for p in events for line in rows.event_reverse(p, loop.index, self.rows)]
                     + rows.column_lines(loop.index, self.rows)
                     + ([] if self.blocked or self.gathered else rows.fixed_column_lines(loop.index, self.rows)))
            return head + rows.prologue() + outer.forward + self._blocks(loop, inner)
        if not chunked:
            return head + outer.forward + self._adjoint_inits(outer) + self._blocks(loop, inner) + self._reverse(outer)
        lines = self._chunks(head, outer, loop, inner)
        self.target, self.lp, self.private = self.serial_target, "lp", None
        return lines

    def _grid_term(self, term, keep, mode):
        """A term in a GPU kernel (``grid``): its rows spread over the point's
        threads, or the whole term in the point's first thread when it has no
        rows or a reduction inside (whose elements every row would read)."""
        if splits_rows(term):
            return self._term(term, keep, mode)
        self.serial = True
        lines = self._term(term, keep, mode)
        self.serial = False
        return ["if row0 == 0:  # no rows, or a reduction: one thread"] + indent(lines)

    def _buffered_scalars(self, outer):
        """``outer``'s reverse sweep with each scalar parameter's adjoint added to a
        per-block buffer (``sb_<ident>[row]``) instead of the output row: the rows
        loop then stores only at its own index, and the scalars' columns are
        assigned with the product's (logistic per-sample, both: 320 -> 169 us)."""
        serial = self.target

        def buffered(e, row, rows):
            if e.at is not None:  # a vector parameter's entry: the output itself
                return serial(e, row, rows)
            self.row_scalars[e.p.name] = e
            return f"sb_{e.p.ident}[{row}]"

        self.target = buffered
        lines = self._reverse(outer)
        self.target = serial
        return lines

    def _row_lines(self):
        """(buffers, lines before a block's rows, after them) of a blocked per-row term.

        Parameters whose columns are written exactly once per row (buffered
        scalars, a product's vector read nowhere else in the term) are assigned
        after the rows, row after row; every other column is zeroed before
        them. Both are sets of parameters, not of columns: their lengths may
        be read at run time.
        """
        once = set(self.row_scalars)
        for _, _, p in self.blocked:
            if self._only_in_one_product(p):
                once.add(p.name)
        scalars = [(p.ident, self.row_scalars[p.name]) for p in self.layout.params.values()
                   if p.name in self.row_scalars]  # in column order
        buffers = [f"sb_{ident}" for ident, _ in scalars]
        start = self.serial_target.zero_block(once) + [f"{b}[:b1 - b0] = 0.0" for b in buffers]
        writes = [f"{self._target(e, 'r')} = sb_{ident}[r]" for ident, e in scalars]
        writes += self.row_writes + self.serial_target.fixed_column_lines("r", self.rows)
        return buffers, start, ["for r in range(b1 - b0):"] + indent(writes) if writes else []

    def _only_in_one_product(self, p):
        """Whether vector parameter ``p`` is read once in the per-row term, by its product."""
        paths = {}  # id(node) -> paths from it to p: shared sub-expressions counted once each

        def uses(node):
            if id(node) not in paths:
                paths[id(node)] = (int(rules.rule(node).param and node.name == p.name)
                                   + sum(uses(c) for c in node.children))
            return paths[id(node)]
        return sum(uses(a) for a in self.row_term.args) == 1

    def _blocks(self, loop, inner, lo="0", hi=None):
        """The term's loop, in blocks of ``BLOCK`` rows when it holds row-aligned
        ``X @ beta`` or gathers ``a[idx]``.

        Per block, ``X[b0:b1] @ beta`` goes into a small buffer before the rows
        are visited, and ``X[b0:b1].T @ adjoints`` into the gradient after.
        Both run down the contiguous columns of X (stored transposed), so they
        vectorize. Gathered values are copied into buffers before the rows and
        their adjoints scattered after: the loop over the rows then reads and
        writes only at its own index, so it vectorizes too. No array of the
        data's length is made. A chunk of the parallel variant runs its rows
        ``lo:hi`` the same way, in one block when it needs no buffers.
        """
        hi = hi or loop.length
        buffered = self.buffered
        assert buffered == bool(self.blocked or self.gathered), "the body's buffers differ from _buffers_rows"
        if not buffered and lo == "0":
            zero = self.serial_target.zero() if self.per_row else []
            if self.grid and not self.serial:  # this thread's rows
                return zero + [f"for {loop.index} in range(row0, {hi}, rows_step):"] + indent(inner)
            if hi == "1":  # a term without a plate: its one row, no loop
                return zero + [f"{loop.index} = 0"] + inner
            return zero + [f"for {loop.index} in range({hi}):"] + indent(inner)
        views = {**self.gathered_views, **self.rows.views}
        if not buffered:
            return ([f"b0, b1 = {lo}, {hi}"] + [f"{v} = {e}" for v, e in views.items()]
                    + [f"for {loop.index} in range(b1 - b0):"] + indent(inner))
        buffers, before, start, finish = self._gather_lines()
        self.row_writes = []
        for lines, more in zip((buffers, before, start, finish), self._product_lines()):
            lines += more
        if self.per_row:  # the product's rows (``row_writes``) and the scalars' in one pass
            rows_buffers, rows_start, rows_finish = self._row_lines()
            buffers, start, finish = buffers + rows_buffers, rows_start + start, rows_finish + finish
        # The buffers are rows of one array: one allocation per call (or per chunk).
        scratch = self._workspace(f"scratch_{loop.index}", len(buffers), BLOCK)
        before = [f"{name} = {scratch}[{k}]" for k, name in enumerate(buffers)] + before
        return before + [f"for b0 in range({lo}, {hi}, {BLOCK}):"] + indent(
            [f"b1 = min(b0 + {BLOCK}, {hi})"] + [f"{v} = {e}" for v, e in views.items()] + start
            + [f"for {loop.index} in range(b1 - b0):"] + indent(inner) + finish)

    def _gather_lines(self):
        """(buffers, lines before the blocks, before a block's rows, after them) for the gathers."""
        buffers, fill, into_rows, summed = [], [], [], []
        for buffer, load, sink in self.gathered:
            buffers.append(buffer)
            fill.append(f"{buffer}[r] = {load}")
            if sink is None:
                continue
            view, entry = sink
            buffers.append(f"a{buffer}")
            if self.per_row:  # each row's adjoint into its own row
                into_rows.append(entry(f"{view}[r]")(f"a{buffer}[r]"))
            else:
                summed += scatter(view, self.gathered_order[view], entry, f"a{buffer}")
        if self.per_row:  # the columns of the scattered elements, row by row
            into_rows += self.serial_target.column_lines("r", self.rows)
        start = ["for r in range(b1 - b0):"] + indent(fill) if fill else []
        finish = (["for r in range(b1 - b0):"] + indent(into_rows) if into_rows else []) + summed
        return buffers, [], start, finish

    def _product_lines(self):
        """(buffers, lines before the blocks, before a block's rows, after them) for ``X @ beta``.

        Columns of the block as 1-D slices: numba types them contiguous, so the
        loops vectorize (a 2-D view ``X[:, b0:b1]`` has run-time strides and
        did not: 240 against 132 us on the logistic regression). ``UNROLL``
        columns per pass over the rows (see ``column_groups``).
        """
        buffers, before, start, finish = [], [], [], []
        for buffer, X, p in self.blocked:
            vector = f"theta[{p.offset_code}:{p.end_code}]" if p.transform.identity else f"w_{p.ident}"
            buffers.append(buffer)
            before.append(f"v{buffer} = {vector}")
            # The product runs over the constrained vector: K entries for a simplex of
            # K - 1 free coordinates (p.size) (it ran over p.size: a wrong log density).
            start += [f"{buffer}[:b1 - b0] = 0.0"] + column_groups(
                p.constrained_size, lambda cols: product_group(X, buffer, cols))
            if not self.gradient:
                continue
            buffers.append(f"a{buffer}")
            if self.per_row:  # row after row: the output is row-major (logistic: 371 -> 320 us)
                column = self._target(entry(p, "j"), "r")
                scale = "" if p.transform.identity else f"dw_{p.ident}[j] * "
                op = "=" if self._only_in_one_product(p) else "+="  # else zeroed before the rows
                self.row_writes += [f"adjoint = a{buffer}[r]", f"for j in range({p.size_code}):",
                                    f"    {column} {op} {scale}adjoint * {X}[j, b0 + r]"]
                continue
            finish += column_groups(p.constrained_size, lambda cols: transposed_group(
                X, buffer, cols, [self._sink(p, c) for c in cols]))
        return buffers, before, start, finish

    def _row_only_params(self, term):
        """Vector parameters ``term`` reads only element by element at its own row
        (not through a gather, slice, matrix product or sum). Plate lengths are
        checked equal, so its loop writes each of their gradient entries once."""
        return rules.params_read_by_element(self.layout, term, rules.AT_ITS_ROW)

    def _chunks(self, head, outer, loop, inner):
        """A term's loop split into ``self.chunks`` fixed chunks under ``prange``.

        The scalars before the loop are recomputed per chunk (they are cheap);
        the caller sums ``lps`` and ``bufs`` in chunk order, so results do not
        depend on the number of threads.
        """
        n = self.chunks
        rows = self._blocks(loop, inner, "lo", "hi")
        private = [f"{name} = {name}_chunks[c]" for name in self.private]  # all declared by now
        body = (["lo, hi = c * n_chunked // {0}, (c + 1) * n_chunked // {0}".format(n), "lp_c = 0.0"] + private
                + outer.forward + self._adjoint_inits(outer) + rows + self._reverse(outer) + ["lps[c] += lp_c"])
        return head + [f"n_chunked = {loop.length}", f"for c in numba.prange({n}):"] + indent(body)

    def _workspace(self, name, *shape):
        """``name`` declared in ``self.workspaces``; in a parallel chunk, a row of
        ``<name>_chunks`` (one row per chunk, bound by ``_chunks``)."""
        if self.private is None:
            return self.workspaces.declare(name, *shape)
        self.workspaces.declare(f"{name}_chunks", self.chunks, *shape)
        self.private.append(name)
        return name

    def _describe(self, term):
        if term.dist is None:
            return f"potential {term.value.label()}"
        args = ", ".join(a.label() for a in term.args[1:])
        return f"{term.value.label()} ~ {term.dist.spec.name}({args})"

    def _term_value(self, term, keep, loop, outer, mode):
        if term.dist is None:
            var = self.value(term.value, loop, outer, loop.index)
            if mode == "lp":
                loop.forward.append(f"{self.lp} += {var}")
            elif mode == "pointwise":  # a likelihood potential, row by row
                loop.forward.append(f"{self._element('out', loop, loop.index)} = {var}")
            return var
        args = [self.value(a, loop, outer, loop.index) for a in term.args]
        module = module_alias(term.dist.spec)
        result = self.fresh("r")
        checked = ", True" if term.dist.spec.takes_x_valid and validate.value_checked(term) else ""
        loop.forward.append(f"{result} = {module}.logpdf_grad({', '.join(args)}, {keep!r}{checked})")
        if mode == "pointwise":  # the summands ``keep`` selects, row by row
            loop.forward.append(f"{self._element('out', loop, loop.index)} = {result}[0]")
            return None
        if mode == "lp":
            loop.forward.append(f"{self.lp} += {result}[0]")
        self.term_args = args
        return result

    def _seed(self, term, result, loop):
        if term.dist is None:
            loop.reverse += self._push(term.value, result, "1.0", loop)
            return
        for j, (node, var) in enumerate(zip(term.args, self.term_args)):
            loop.reverse += self._push(node, var, f"{result}[{j + 1}]", loop)


def splits_rows(term):
    """Whether a term's rows can be split among threads (parallel chunks, GPU
    threads): it has a plate and no reduction inside."""
    return any(a.shape != () for a in term.args) and not any(rules.has_reduction(a) for a in term.args)


# How each node type is lowered (see ``Lowering.value``).
VALUE_RULES = {
    ex.Param: Lowering._value_param, ex.Data: Lowering._value_data, ex.Unary: Lowering._value_elementwise,
    ex.Binary: Lowering._value_elementwise, ex.Ternary: Lowering._value_elementwise,
    ex.Gather: Lowering._value_gather, ex.Slice: Lowering._value_slice,
    ex.MatVec: Lowering._value_product, ex.Sum: Lowering._value_sum, ex.LogPdf: Lowering._value_logpdf,
    ex.Element: Lowering._value_element, ex.Length: Lowering._value_length,
    ex.LogSumExp: Lowering._value_logsumexp, ex.Cumsum: Lowering._value_cumsum,
}
