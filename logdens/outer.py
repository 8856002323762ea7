"""One row's outer product into a flat buffer, as LLVM vector stores:
``row_outer(dst, h, g, m, n)`` sets ``dst[j * n + q] = h[j] * g[q]`` and
``row_outer_add`` adds it, for ``j < m``, ``q < n``.

A per-sample gradient row of a product ``X @ W`` holds the outer product of
the observation's input row and its output adjoint. numba runs LLVM without
its SLP vectorizer, and the loop vectorizer does badly on this nest when
rows are short: with the inner bound hidden (``logdens.opaque``) each of the
``m`` inner loops pays its alias checks and scalar remainder; with a constant
bound LLVM unrolls the inner loop and vectorizes the outer one into strided
stores. Here the IR is written directly: the ``g`` row is loaded once as
vectors of ``WIDTH``, each ``h[j]`` is broadcast, and a row of up to
``UNROLLED`` entries is that many vector stores (a loop over them beyond).
The buffers are distinct arrays, so no alias check is needed. Called from
Python (the generated module's twin) they are numpy. CPU only: a GPU thread
keeps plain loops.
"""

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload

#: Doubles per vector: AVX2's registers (AVX-512 machines run them as well).
WIDTH = 4
#: Rows up to this long (a compile-time constant) are written as straight-line
#: stores; longer ones, or lengths known only at run time, in a loop.
UNROLLED = 64


def _check(name, arrays):
    """A TypingError unless every array is one-dimensional, contiguous float64."""
    for label, a in arrays:
        if not (isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" and a.dtype == types.float64):
            raise TypingError(f"{name}: {label} must be a contiguous 1-d float64 array, got {a}")


def row_outer(dst, h, g, m, n):
    """``dst[j * n + q] = h[j] * g[q]`` for ``j < m``, ``q < n``."""
    dst[:m * n] = np.outer(h[:m], g[:n]).ravel()


def row_outer_add(dst, h, g, m, n):
    """``dst[j * n + q] += h[j] * g[q]`` for ``j < m``, ``q < n``."""
    dst[:m * n] += np.outer(h[:m], g[:n]).ravel()


def _stores(add):
    """The intrinsic writing ``row_outer`` (``add``: ``row_outer_add``) as vector stores."""
    name = "row_outer_add" if add else "row_outer"

    def typer(typingctx, dst, h, g, m, n):
        _check(name, (("dst", dst), ("h", h), ("g", g)))
        n_const = n.literal_value if isinstance(n, types.IntegerLiteral) else None

        def codegen(context, builder, signature, args):
            dst_t, h_t, g_t = signature.args[:3]
            data = [context.make_array(t)(context, builder, v).data for t, v in zip((dst_t, h_t, g_t), args[:3])]
            m_v, n_v = (context.cast(builder, v, t, types.intp) for v, t in zip(args[3:], signature.args[3:]))
            _emit(builder, *data, m_v, n_v, n_const, add)
            return context.get_dummy_value()
        return types.none(dst, h, g, m, n), codegen

    typer.__name__ = f"_{name}_stores"
    return intrinsic(typer)


def _emit(builder, dst, h, g, m, n, n_const, add):
    """The loops of ``dst[j * n + q] (+)= h[j] * g[q]`` (pointers to doubles)."""
    i64, i32 = ir.IntType(64), ir.IntType(32)
    vector = ir.VectorType(ir.DoubleType(), WIDTH)

    def at(pointer, offset, vec):
        address = builder.gep(pointer, [offset])
        return builder.bitcast(address, vector.as_pointer()) if vec else address

    def put(pointer, offset, value, vec):
        address = at(pointer, offset, vec)
        if add:
            value = builder.fadd(builder.load(address, align=8), value)
        builder.store(value, address, align=8)

    def const(k):
        return ir.Constant(i64, k)

    unrolled = n_const is not None and n_const <= UNROLLED
    if unrolled:  # the g row in registers, loaded once
        g_vectors = [builder.load(at(g, const(k), True), align=8) for k in range(0, n_const - WIDTH + 1, WIDTH)]
        g_tail = [builder.load(at(g, const(q), False)) for q in range(len(g_vectors) * WIDTH, n_const)]
    full = None if unrolled else builder.and_(n, const(-WIDTH))
    with cgutils.for_range(builder, m) as j_loop:
        j = j_loop.index
        hj = builder.load(at(h, j, False))
        hv = builder.insert_element(ir.Constant(vector, ir.Undefined), hj, ir.Constant(i32, 0))
        hv = builder.shuffle_vector(hv, hv, ir.Constant(ir.VectorType(i32, WIDTH), [0] * WIDTH))
        row = builder.gep(dst, [builder.mul(j, n)])
        if unrolled:
            for k, gv in enumerate(g_vectors):
                put(row, const(k * WIDTH), builder.fmul(hv, gv), True)
            for k, gq in enumerate(g_tail):
                put(row, const(len(g_vectors) * WIDTH + k), builder.fmul(hj, gq), False)
        else:
            with cgutils.for_range_slice(builder, const(0), full, const(WIDTH)) as (q, _):
                put(row, q, builder.fmul(hv, builder.load(at(g, q, True), align=8)), True)
            with cgutils.for_range_slice(builder, full, n, const(1)) as (q, _):
                put(row, q, builder.fmul(hj, builder.load(at(g, q, False))), False)


def _overload(function, add):
    """Compiled calls of ``function`` go to its intrinsic, with a constant row
    length kept literal (its stores are then unrolled)."""
    stores = _stores(add)

    @overload(function, prefer_literal=True)
    def _compiled(dst, h, g, m, n):
        return lambda dst, h, g, m, n: stores(dst, h, g, m, n)


_overload(row_outer, add=False)
_overload(row_outer_add, add=True)
