"""The numba-CUDA emitter: a lowered program's stages (``gpu_schedule``) as kernels.

It knows nothing of AD: the expressions of a row (``Load``, ``Index``,
``Let``, ``Partial``, ``Call``, ``Dot``) are the CPU emitter's
(``emit.Emitter``, whose subclass this is); what differs is how a stage
runs on the threads: a ``Spread`` map a grid-stride loop over the rows,
``First`` statements under ``row0 == 0``, each ``GridAdd`` by its ``how``
(a thread's sum block-added once per block, an atomic add, an atomic add
into the block's copy in shared memory flushed once per block, a plain add).
Data are read as float64 (the device may store them as float32).

The kernels have the engine's names and arguments (``logdens.cuda_source``:
``prepare``, ``terms``, ``finish`` and their ``_value`` variants, ``PREPARE``,
``pointwise_<term>``; the workspaces of ``cuda_source.workspace_sizes``), so
``CudaLogDensity`` launches either module (``cuda_density``). A term whose
per-sample rows do not spread over the threads (``per_sample_kernel``) has
no ``per_sample_<term>``: the density computes them on the CPU.
"""

from logdens import cache, engine
from logdens.compiler import ir
from logdens.compiler.ad import gradient_program, per_sample_program, pointwise_program
from logdens.compiler.emit import Emitter
from logdens.compiler.gpu_schedule import First, buffers, stages, unwrapped
from logdens.cuda_source import KERNEL, LOCAL_BYTES, workspace_sizes
from logdens.expr import ModelError
from logdens.lines import indent, plus


class NotOnDevice(ModelError):
    """A program the CUDA emitter cannot write: the message names what and why."""


_POINT = ["point = cuda.blockIdx.y",
          "row0 = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x",
          "rows_step = cuda.gridDim.x * cuda.blockDim.x"]


class CudaEmitter(Emitter):
    """Writes one stage of a program as a kernel's body for a layout whose
    lengths are compiled in (``Layout.compiled_in``)."""

    def __init__(self, layout):
        super().__init__(layout)
        self.sums = {}  # (array, index) -> a thread's sum, block-added at the kernel's end
        self.vectors = {}  # (array, base) -> (name, length) of a thread's local vector of product adjoints
        self.local = {}  # a workspace's name -> its length (a thread's local array)
        self.shared = {}  # a parameter's name -> the block's copy of its adjoints (``shared`` adds)

    # ----- reads: as float64 ----------------------------------------------
    def _load(self, s):
        element = self.element(s.buffer, s.at)
        if s.buffer.kind == "data":
            element = f"numba.float64({element})"
        return [f"{s.out.name} = {element}  # {s.out.label}"]

    def matrix(self, buffer, row, column):
        return f"numba.float64({super().matrix(buffer, row, column)})"

    # ----- the threads ----------------------------------------------------
    def _spread(self, s):
        m = s.map
        n = self.size(m.plate.length)
        return [f"for {m.index} in range(row0, {n}, rows_step):  # {m.plate.name}, rows over the threads"] + indent(
            self.lines(m.body) or ["pass"])

    def _first(self, s):
        return ["if row0 == 0:  # the point's first thread"] + indent(self.lines(s.body) or ["pass"])

    def target(self, buffer, at):
        """``(array, index)``: code of ``buffer``'s array and of element ``at``'s index."""
        if buffer.kind == "lp":
            return "lp_t", None
        array, base = self.array(buffer)  # as ``Emitter.element``: the array's base is the parameter's offset
        return array, base if at.index is None else plus(base, self.arg(at.index))

    def _gridadd(self, g):
        s = g.statement
        if isinstance(s, ir.DotAdjoint):
            return self._dot_adjoint(s, g.how)
        value = self.arg(s.value)
        if s.dest.kind == "rows":
            return [f"{self.element(s.dest, s.at)} += {value}"]
        array, index = self.target(s.dest, s.at)
        if array == "lp_t":
            return [f"lp_t += {value}"]
        if g.how == "block":
            name = self.sums.setdefault((array, index), f"acc{len(self.sums)}")
            return [f"{name} += {value}"]
        if g.how == "atomic":
            return [f"cuda.atomic.add({array}, {index}, {value})"]
        if g.how == "shared":  # at the parameter's own position ``at.index`` in its block's copy
            copy = self.shared.setdefault(s.dest.name, f"sh_{self.ident(s.dest.name)}")
            return [f"cuda.atomic.add({copy}, {self.arg(s.at.index)}, {value})"]
        return [f"{array}[{index}] += {value}"]

    def _dot_adjoint(self, s, how):
        j = f"j_{s.scale.name}"
        value = f"{self.arg(s.scale)} * {self.matrix(s.matrix, self.arg(s.row), j)}"
        if s.through is not None:
            value += f" * dw_{self.ident(s.through.name)}[{j}]"
        n = self.size(s.length)
        if how == "plain":
            return [f"for {j} in range({n}):", f"    {self.element(s.dest, ir.At(j))} += {value}"]
        array, base = self.array(s.dest)
        if how == "block":
            name = self.vectors.setdefault((array, base), (f"accv{len(self.vectors)}", n))[0]
            return [f"for {j} in range({n}):", f"    {name}[{j}] += {value}"]
        return [f"for {j} in range({n}):", f"    cuda.atomic.add({array}, {plus(base, j)}, {value})"]

    def start(self):
        """The kernel's lines before its statements: its sums zeroed."""
        lines = ["lp_t = 0.0"] + [f"{name} = 0.0" for name in self.sums.values()]
        for name, n in self.vectors.values():
            lines += [f"{name} = cuda.local.array({n}, numba.float64)", f"for j in range({n}):", f"    {name}[j] = 0.0"]
        for p, copy in self.shared.items():
            n = self.layout.params[p].size
            lines += [f"{copy} = cuda.shared.array({n}, numba.float64)",
                      f"for k in range(cuda.threadIdx.x, {n}, cuda.blockDim.x):", f"    {copy}[k] = 0.0"]
        return lines + (["cuda.syncthreads()"] if self.shared else [])

    def end(self, sums="sums"):
        """The kernel's last lines: each sum added once per block (every thread calls ``block_add``)."""
        lines = ["buffer = cuda.shared.array(THREADS, numba.float64)", f"block_add(buffer, lp_t, {sums}, point)"]
        lines += [f"block_add(buffer, {name}, {array}, {index})" for (array, index), name in self.sums.items()]
        for (array, base), (name, n) in self.vectors.items():
            lines += [f"for j in range({n}):", f"    block_add(buffer, {name}[j], {array}, {plus(base, 'j')})"]
        for p, copy in self.shared.items():  # after block_add's barrier: every row's adds are in
            slot = self.layout.params[p]
            lines += [f"for k in range(cuda.threadIdx.x, {slot.size}, cuda.blockDim.x):",
                      f"    if {copy}[k] != 0.0:",
                      f"        cuda.atomic.add(grad, {plus(slot.offset, 'k')}, {copy}[k])"]
        return lines

    # ----- buffers --------------------------------------------------------
    def _workspace(self, s):
        size = self.size(s.size)
        if not size.isdigit():
            raise NotOnDevice(f"{s.buffer}: a workspace of run-time length {size} (running sums over rows of "
                              "data) cannot be a GPU thread's local array; use backend='cpu'")
        self.local[s.buffer.name] = size
        total = 8 * sum(int(n) for n in self.local.values())
        if total > LOCAL_BYTES:
            raise NotOnDevice(f"{s.buffer}: the workspaces of a GPU thread take {total // 1024} KiB, "
                              f"beyond the {LOCAL_BYTES // 1024} KiB of local memory CUDA gives a thread; "
                              "use backend='cpu'")
        return [f"{s.buffer.name} = cuda.local.array({size}, numba.float64)"]

    def _zero(self, s):
        """A buffer zeroed: a thread's workspace by itself, a point's arrays over its threads."""
        if s.buffer.kind == "workspace":
            return [f"for k in range({self.local[s.buffer.name]}):", f"    {s.buffer.name}[k] = 0.0"]
        if s.buffer.kind == "grad":
            return [f"for c in range(row0, {self.layout.dim}, rows_step):", "    grad[c] = 0.0"]
        if s.buffer.kind == "out":
            return ["for k in range(row0, out.shape[0], rows_step):", "    out[k] = 0.0"]
        if s.buffer.kind == "rows":  # a per-sample row, by the thread of its observation
            return [f"for c in range({self.layout.dim}):", f"    out[{s.buffer.row}, c] = 0.0"]
        slot = self.layout.params[s.buffer.name]
        return [f"for k in range(row0, {slot.constrained_size}, rows_step):", f"    aw_{slot.ident}[k] = 0.0"]

    def _constrain(self, s):
        """A scalar's transform where it is read; a vector's over the point's
        threads, an event transform's on its first thread."""
        if s.out is not None:
            return super()._constrain(s)
        slot = self.layout.params[s.name]
        if slot.transform.event:
            return ["if row0 == 0:", f"    {slot.transform.forward_code(slot.offset, slot.ident)}"]
        body = []
        x, dx = slot.transform.emit(body, f"theta[{plus(slot.offset, 'k')}]", f"u_{slot.ident}")
        return [f"for k in range(row0, {slot.size}, rows_step):"] + indent(
            body + [f"w_{slot.ident}[k] = {x}", f"dw_{slot.ident}[k] = {dx}"])

    def _jacobian(self, s):
        slot = self.layout.params[s.name]
        if slot.transform.event:  # its log|J| from the forward sweep again (prepare's is gone)
            return [slot.transform.forward_code(slot.offset, slot.ident), f"lp += lj_{slot.ident}"]
        return super()._jacobian(s)


def _kernel(name, args, body):
    return engine.function_lines(f"def {name}({', '.join(args)}):", body, KERNEL)


def _lengths(layout):
    return {name: p.size for name, p in layout.params.items()}


def _binds(layout, gradient):
    """The workspace arguments and the lines binding the point's rows of them."""
    names = list(workspace_sizes(layout, gradient))
    return names, (["theta = thetas[point]"] + (["grad = grads[point]"] if gradient else [])
                   + [f"{n[:-1]} = {n}[point]" for n in names])


def stage_kernels(program, layout):
    """``(the lines of the three kernels of ``program`` (core or value), whether
    prepare has work)``: see ``gpu_schedule.stages``."""
    gradient = program.name == "core"
    suffix = "" if gradient else "_value"
    out = "thetas, grads, sums" if gradient else "thetas, sums"
    scheduled = stages(program, _lengths(layout))
    args, binds = _binds(layout, gradient)

    emitter = CudaEmitter(layout)
    prepare = emitter.lines(scheduled.prepare)
    lines = _kernel(f"prepare{suffix}", [out, "jacobian"] + args, _POINT + binds + prepare)

    emitter = CudaEmitter(layout)
    body = emitter.lines(scheduled.terms)
    lines += _kernel(f"terms{suffix}", [out, "jacobian, fdata, idata"] + args,
                     _POINT + binds + layout.prologue() + emitter.start() + body + emitter.end())

    emitter = CudaEmitter(layout)
    finish = emitter.lines(scheduled.finish)
    ending = engine.gradient_rejections(layout) if gradient else engine.REJECT
    head = ["point = cuda.grid(1)", "if point >= thetas.shape[0]:", "    return"] + binds
    lines += _kernel(f"finish{suffix}", [out, "lps, jacobian"] + args,
                     head + ["lp = sums[point]", "sums[point] = 0.0  # zero again for the next call"]
                     + finish + ending + ["lps[point] = lp"])
    return lines, bool(prepare)


def pointwise_kernel(model, layout, term):
    """``pointwise_<term>`` at point 0: the program's ``terms`` stage; its
    constrained values are ``prepare_value``'s (the density launches it first)."""
    scheduled = stages(pointwise_program(model, layout, term), _lengths(layout))
    return _row_kernel(layout, scheduled, f"pointwise_{layout.term_idents[term.name]}",
                       "thetas, fdata, idata, out, dropped")


def per_sample_kernel(model, layout, term):
    """``per_sample_<term>`` at point 0, a row per thread, or no lines where its
    rows do not spread over the threads (a reduction inside: a map per row)
    or share an event transform's adjoints (a buffer per point, not per row)."""
    scheduled = stages(per_sample_program(model, layout, term), _lengths(layout))
    per_row_maps = any(isinstance(s, First) and any(isinstance(x, ir.Map) for x in s.body) for s in scheduled.terms)
    if per_row_maps or any(b.kind == "aconstrained" for x in unwrapped(scheduled.terms) for b in buffers(x)):
        return []
    return _row_kernel(layout, scheduled, f"per_sample_{layout.term_idents[term.name]}", "thetas, fdata, idata, out")


def _row_kernel(layout, scheduled, name, signature):
    """The kernel ``name`` of one point's rows: the ``terms`` stage of ``scheduled``."""
    args, binds = _binds(layout, False)
    emitter = CudaEmitter(layout)
    body = emitter.lines(scheduled.terms)
    return _kernel(name, [signature] + args, _POINT + binds + layout.prologue() + emitter.start() + body)


def source(model, layout):
    """The module of CUDA kernels of ``model``'s programs (``model`` as ``engine.lower`` gives it)."""
    layout = layout.compiled_in()
    lines = engine.header(model, layout, "CUDA kernels of a lowered program", ("from numba import cuda",),
                          ("from logdens.cuda_device import THREADS, block_add",))
    needed = {}
    for name in ("core", "value"):
        kernels, needed[name == "core"] = stage_kernels(gradient_program(model, layout, name), layout)
        lines += kernels
    lines += [f"PREPARE = {{True: {needed[True]}, False: {needed[False]}}}", "", ""]
    for term in model.terms:
        if term.per_observation:
            lines += pointwise_kernel(model, layout, term) + per_sample_kernel(model, layout, term)
    return "\n".join(lines) + "\n"


def cuda_density(model, cache_dir=None, dtype=None):
    """``model`` compiled as ``compile(backend="cuda", dtype=dtype)`` does, its
    kernels from the lowered program (the compiler's switch, private until the
    old path goes)."""
    from logdens.cuda_density import CudaLogDensity
    dtype = engine._data_dtype("cuda", dtype)
    lowered, layout = engine.lower(model)
    text = engine.generate_source(lowered, layout, True)
    kernel_source = source(lowered, layout)
    return CudaLogDensity(model, layout, cache.load(text, cache_dir), text, cache.load(kernel_source, cache_dir),
                          kernel_source, dtype)
