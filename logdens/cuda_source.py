"""The CUDA emitter: a model's lowering as numba-cuda kernels over many points.

The same lowering as the CPU module (``codegen.Lowering``), with ``grid``:
every row of a term is one thread's work, as ``codegen`` writes it without
CPU blocks. Each evaluation of K points (``thetas`` of shape (K, dim)) is
three launches, a stage each:

``prepare`` (grid: columns x points)
    each column of ``theta`` by one thread: the constrained values ``w_<p>``
    and ``dw_<p>`` of elementwise transforms, the Jacobian's entry (or 0) as
    the gradient's first value; event transforms (simplex, ordered) by the
    point's first thread, with their adjoints ``aw_<p>`` zeroed. Not
    launched where there is nothing to do (``PREPARE``): no transform, and
    every gradient entry assigned by the terms.
``terms`` (grid: rows x points)
    every term, each thread taking rows ``row0, row0 + rows_step, ...``; the
    thread's ``lp_t``, scalar adjoints ``acc<col>`` and short product
    vectors' adjoints ``accv_<p>`` are summed per block and added to
    ``sums[point]`` and ``grad`` with one atomic add per block; adjoints
    gathered by an index go to the block's shared copy ``sh_<p>`` (short
    parameters) or atomically to ``grad`` (``targets.GridTarget``); entries a
    term alone writes, one per row, are stored.
``finish`` (one thread per point)
    the event transforms' reverse sweeps, the rejection of a NaN or +inf
    log density and of an overflowed gradient (as ``core``'s ending), the
    result into ``lps[point]``, and ``sums[point]`` zeroed for the next call.

Value-only variants (``prepare_value``, ``terms_value``, ``finish_value``)
compute no gradient; ``pointwise_<term>`` and ``per_sample_<term>`` write
one point's per-observation log-likelihood and gradient rows. The
distributions' kernels are the CPU's: numba compiles the same Python
functions for the device. The kernels are compiled for the dtypes of
``fdata`` and ``idata`` they are given (float64 and int64, or float32 and
int32 with ``compile(dtype=np.float32)``); each data value is read as a
float64 (``Lowering.data_read``), so the arithmetic is float64 either way.

Unlike the CPU module, the kernels have every parameter's length and offset
compiled in (``generate_cuda_source``).

Terms with values with shape (``logdens.shaped``) run a row per thread at a
time, their buffers in local arrays; a scan's loops run on the thread, its
copies between buffers as loops (``ShapedTerm._move``); a multivariate
density's kernel runs on the thread, once per row, its work buffer a local
array (``shaped.THREAD_EVENT_KERNELS``); linear algebra (Cholesky factors,
triangular solves, covariance functions) runs as the kernels' loops, with
no BLAS call. Not on this backend yet (``CudaUnsupported``): running sums
(``ld.cumsum``) over rows of data, whose workspaces would have run-time
lengths. Running sums of a parameter's length (a random walk's) are a
local array of that length; like any reduction, the term that reads them
runs on one thread per point (``splits_rows``), which sweeps their
adjoints back after its rows.
"""

import math

from logdens import engine, rules
from logdens import expr as ex
from logdens.codegen import Lowering, splits_rows
from logdens.compiler.ad import plate_source
from logdens.lines import indent
from logdens.rows import GridRows
from logdens.shaped import thread_unsupported
from logdens.targets import GridTarget


class CudaUnsupported(NotImplementedError):
    """A model the CUDA emitter cannot lower yet; the message names the term."""


# No disk cache: numba-cuda 0.30.4 cannot pickle some kernels ("Cannot pickle
# CUDACodeLibrary with linking files", the logistic regression's); compiling
# a model's kernels takes about a second.
KERNEL = "cuda.jit"

#: Local memory a GPU thread may have: CUDA's limit (compute capability 2.0 on).
LOCAL_BYTES = 512 * 1024


def _check(model):
    """``CudaUnsupported`` for the first term the emitter cannot lower."""
    for term in model.terms:
        node = thread_unsupported(term) if rules.shaped(term) else None
        if node is not None:
            raise CudaUnsupported(f"term {term.name!r}: {node} is not on the CUDA backend yet; use backend='cpu'")
        if any(rules.PREFIX in rules.rule(n).reads(n) and rules.rule(plate_source(n)).data
               for a in term.args for n in ex.nodes(a)):
            raise CudaUnsupported(f"term {term.name!r}: running sums (ld.cumsum) over rows of data are not on "
                                  "the CUDA backend yet; use backend='cpu'")


def _local_lines(model, lowering):
    """The kernel's local arrays (``Workspaces.local_lines``); ``CudaUnsupported``
    when they exceed ``LOCAL_BYTES`` (a Gaussian process of a few hundred
    inputs: its n x n matrices and their adjoints), which ptxas would refuse."""
    sizes = [math.prod(int(extent) for extent in shape) for shape in lowering.workspaces.shapes.values()]
    total = 8 * sum(sizes)
    if total > LOCAL_BYTES:
        shaped = ", ".join(repr(term.name) for term in model.terms if rules.shaped(term))
        raise CudaUnsupported(f"terms {shaped}: their buffers on a GPU thread take {total // 1024} KiB (the "
                              f"largest {max(sizes)} floats), beyond the {LOCAL_BYTES // 1024} "
                              "KiB of local memory CUDA gives a thread; use backend='cpu'")
    return lowering.workspaces.local_lines()


def _flat_elementwise(model):
    """``model`` with each term whose values with shape are all elementwise over
    one shape (a prior on a weight matrix, ``W ~ Normal(0, 1)``) written over
    that shape flattened: lowered as a vector term, its elements spread over
    the point's threads, where the lowering of values with shape runs such a
    term on one thread (the 10-32-32-10 network's priors: 1664 kernel calls
    on one thread per point)."""
    terms = tuple(_flattened(term) or term if rules.shaped(term) else term for term in model.terms)
    if all(new is old for new, old in zip(terms, model.terms)):
        return model
    flat = model.snapshot()
    flat.terms = terms
    return flat


def _flattened(term):
    """``term`` over its one shape flattened (see ``_flat_elementwise``), or None."""
    if term.dist is None or term.dist.spec.multivariate:
        return None
    nodes = [n for a in term.args for n in ex.nodes(a)]
    shapes = {n.shape for n in nodes} - {()}
    if len(shapes) != 1 or not all(rules.rule(n).param or rules.rule(n).elementwise
                                   or (rules.rule(n).constant and n.shape == ()) for n in nodes):
        return None
    size = math.prod(next(iter(shapes)))

    def flat(node, children):
        if rules.rule(node).param:
            return ex.Param(node.name, (size,) if node.shape else (), node.constraint)
        if not node.children:
            return node
        out = ex.with_children(node, children)
        out.shape = (size,) if node.shape else ()
        return out
    memo = {}
    return term._replace(value=rules.fold(term.value, flat, memo),
                         args=tuple(rules.fold(a, flat, memo) for a in term.args))


def workspace_sizes(layout, gradient):
    """``{argument name: per-point length}`` of the workspace arrays (K, length) a
    kernel takes: ``w_<p>s`` holds each point's ``w_<p>`` (constrained values),
    likewise ``dw_<p>s`` and, with ``gradient``, ``aw_<p>s`` (event adjoints)."""
    sizes = {}
    for p in layout.params.values():
        if p.shape == () or p.transform.identity:
            continue
        sizes[f"w_{p.ident}s"] = p.constrained_size
        if p.transform.event:
            if gradient:
                sizes[f"aw_{p.ident}s"] = p.constrained_size
        else:
            sizes[f"dw_{p.ident}s"] = p.size
    return sizes


def _point_args(layout, gradient):
    """The workspace arguments (``workspace_sizes``) and the lines binding the
    point's rows: ``theta``, with ``gradient`` ``grad``, ``w_<p> = w_<p>s[point]``."""
    names = list(workspace_sizes(layout, gradient))
    return names, (["theta = thetas[point]"] + (["grad = grads[point]"] if gradient else [])
                   + [f"{n[:-1]} = {n}[point]" for n in names])


def _kernel(header, body):
    return engine.function_lines(header, body, KERNEL)


_POINT = ["point = cuda.blockIdx.y",
          "row0 = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x",
          "rows_step = cuda.gridDim.x * cuda.blockDim.x"]


def _prepare(layout, gradient, assigned=()):
    """The ``prepare`` kernel (see the module docstring); the gradient entries
    of ``assigned`` parameters are left to the ``terms`` kernel."""
    args, binds = _point_args(layout, gradient)
    body = _POINT + binds + ["lp_t = 0.0"]
    columns = []  # (parameter, lines for one of its columns ``c``)
    for p in layout.params.values():
        if not p.size:
            continue
        lines = []
        if p.transform.identity or p.transform.event:
            lines += ["grad[c] = 0.0"] if gradient and p.name not in assigned else []
        else:
            if p.shape != ():  # a scalar's transform is computed where it is read
                x, dx = p.transform.emit(lines, "theta[c]", f"u_{p.ident}")
                lines += [f"w_{p.ident}[c - {p.offset}] = {x}", f"dw_{p.ident}[c - {p.offset}] = {dx}"]
            log_j, derivative = p.transform.emit_log_jacobian("theta[c]")
            lines += ["if jacobian:", f"    lp_t += {log_j}"]
            if gradient:
                lines += [f"    grad[c] = {derivative}", "else:", "    grad[c] = 0.0"]
        columns.append((p, lines))
    if any(lines for _, lines in columns):  # one branch per parameter, in column order
        chain = []
        for k, (p, lines) in enumerate(columns):
            chain += [f"{'elif' if k else 'if'} c < {p.offset + p.size}:  # {p.name}"] + indent(lines or ["pass"])
        body += [f"for c in range(row0, {layout.dim}, rows_step):"] + indent(chain)
    events = []
    for p in layout.params.values():
        if p.transform.event:
            events += [p.transform.forward_code(p.offset, p.ident), "if jacobian:", f"    lp_t += lj_{p.ident}"]
            if gradient:
                events += [f"for k in range({p.constrained_size}):", f"    aw_{p.ident}[k] = 0.0"]
    if events:
        body += ["if row0 == 0:  # event transforms: one thread per point"] + indent(events)
    body += ["buffer = cuda.shared.array(THREADS, numba.float64)", "block_add(buffer, lp_t, sums, point)"]
    name = "prepare" if gradient else "prepare_value"
    outputs = "thetas, grads, sums" if gradient else "thetas, sums"
    needed = any(lines for _, lines in columns) or bool(events)  # else no launch (``PREPARE``)
    return _kernel(f"def {name}({', '.join([outputs, 'jacobian'] + args)}):", body), needed


def _terms_kernel(model, layout, gradient):
    """The ``terms`` kernel: every term's rows over the threads (see the module docstring)."""
    target = GridTarget()
    lowering = Lowering(layout, gradient=gradient, target=target if gradient else None, grid=True)
    lowering.assign_first, lowering.terms = True, model.terms
    terms = engine.term_lines(lowering, model)
    args, binds = _point_args(layout, gradient)
    body = (_POINT + binds + layout.prologue() + _local_lines(model, lowering) + ["lp_t = 0.0"]
            + target.start_lines() + terms
            + ["buffer = cuda.shared.array(THREADS, numba.float64)", "block_add(buffer, lp_t, sums, point)"]
            + target.end_lines())
    name = "terms" if gradient else "terms_value"
    outputs = "thetas, grads, sums" if gradient else "thetas, sums"
    kernel = _kernel(f"def {name}({', '.join([outputs, 'jacobian, fdata, idata'] + args)}):", body)
    return kernel, lowering.assigned


def _finish(layout, gradient):
    """The ``finish`` kernel (see the module docstring)."""
    args, binds = _point_args(layout, gradient)
    body = ["point = cuda.grid(1)", "if point >= thetas.shape[0]:", "    return"] + binds
    body += ["lp = sums[point]", "sums[point] = 0.0  # zero again for the next call"]
    if gradient:
        body += engine.event_reverse(layout)
    body += (engine.gradient_rejections(layout) if gradient else engine.REJECT) + ["lps[point] = lp"]
    name = "finish" if gradient else "finish_value"
    outputs = "thetas, grads, sums, lps" if gradient else "thetas, sums, lps"
    return _kernel(f"def {name}({', '.join([outputs, 'jacobian'] + args)}):", body)


def _pointwise(model, layout, term):
    """``pointwise_<term>``: per observation of ``term``, the summands ``core``
    keeps, or with ``dropped`` those it drops, at point 0 (one thread per row)."""
    args, binds = _point_args(layout, False)
    zero = ["for i in range(row0, out.shape[0], rows_step):", "    out[i] = 0.0"]
    lowering, body = engine.pointwise_body(model, layout, term, zero, grid=True)
    ident = layout.term_idents[term.name]
    return _kernel(f"def pointwise_{ident}({', '.join(['thetas', 'fdata', 'idata', 'out', 'dropped'] + args)}):",
                   _POINT + binds + layout.prologue() + _local_lines(model, lowering) + body)


def per_sample_on_device(layout, term):
    """Whether ``term``'s per-sample rows have a kernel: its rows spread over
    threads (no reduction inside, or values with shape: each thread computes
    their whole values itself) and no event-transformed parameter read (its
    adjoints, shared by every row, would need a buffer per row)."""
    events = any(layout.params[name].transform.event for name in term.params_read())
    return term.per_observation and (rules.shaped(term) or splits_rows(term)) and not events


def _per_sample(model, layout, term):
    """``per_sample_<term>``: each row's gradient into row ``i`` of ``out`` (n_obs,
    dim), zeroed before the launch; ``prepare_value``'s workspaces."""
    args, binds = _point_args(layout, False)
    lowering = Lowering(layout, gradient=True, per_row=True, target=GridRows(layout), grid=True)
    terms = engine.term_lines(lowering, model, "lp", term)
    body = _POINT + binds + layout.prologue() + _local_lines(model, lowering) + ["lp_t = 0.0"] + terms
    ident = layout.term_idents[term.name]
    return _kernel(f"def per_sample_{ident}({', '.join(['thetas', 'fdata', 'idata', 'out'] + args)}):", body)


def generate_cuda_source(model, layout):
    """The module of CUDA kernels for ``model`` as Python source (see the module docstring).

    Its lengths and offsets are numbers (``Layout.compiled_in``): local and
    shared arrays (``targets.GridTarget``) need compile-time sizes, and the
    kernels have no disk cache for a shared source to hit.
    """
    _check(model)
    model, layout = _flat_elementwise(model), layout.compiled_in()
    out = engine.header(model, layout, "CUDA kernels of a model", ("from numba import cuda",),
                        ("from logdens.cuda_device import THREADS, block_add, total",))
    needed = {}
    for gradient in (True, False):
        terms, assigned = _terms_kernel(model, layout, gradient)
        prepare, needed[gradient] = _prepare(layout, gradient, assigned)
        out += prepare + terms + _finish(layout, gradient)
    out += ["# Whether ``prepare`` (``prepare_value``) has work to do: else it is not launched.",
            f"PREPARE = {{True: {needed[True]}, False: {needed[False]}}}", "", ""]
    for term in model.terms:
        if term.per_observation:
            out += _pointwise(model, layout, term)
        if per_sample_on_device(layout, term):
            out += _per_sample(model, layout, term)
    return "\n".join(out) + "\n"
