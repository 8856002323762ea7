"""``opaque(n)``: ``n`` at run time, hidden from LLVM's optimizer.

For a loop bound that is a small constant: LLVM unrolls such an inner loop
whole and then vectorizes the loop around it instead, and for a row's outer
product (``for j in range(32): for q in range(32): row[j * 32 + q] = a[j] *
b[q]``) that means strided stores (scatters with AVX-512): 0.46-0.60 ns per
element against 0.09-0.14 with the bound hidden, host and haswell builds
(RESULTS.md, session 16). The same holds for each row's dot product with a
vector (``h[r] @ w``) and its adjoint (``g[r, 0] * w``): 0.39 and 0.29 ns
per element with 32 constant, 0.12 and 0.10 hidden. Products over two whole
operands keep their constants: one of their inner loops strides. Compiled,
it is an empty inline-asm statement that passes the value through a
register: no cost, and opaque to every pass. From Python (the generated
module's Python twin) it is ``n``. CPU code only.

Only for bounds of at least ``WIDEST`` (a vector register of float64): a
shorter hidden loop cannot fill one and runs scalar, where the unrolled one
is packed across iterations. An outer product's rows, unrolled against
hidden: of 4 entries, 0.19 against 0.63 ns per element; of 10, 0.50 against
0.36; of 32, 0.46 against 0.09.
"""

from llvmlite import ir
from numba.extending import intrinsic, overload


#: float64 lanes of the widest vector register (AVX-512).
WIDEST = 8


def loop_bound(n):
    """Code of the bound of an inner loop of ``n`` iterations (see the module)."""
    return f"opaque({n})" if n >= WIDEST else str(n)


def opaque(n):
    """``n``, which the optimizer cannot see through (an integer)."""
    return n


@intrinsic
def _through_register(typingctx, n):
    def codegen(context, builder, signature, args):
        (value,) = args
        return builder.asm(ir.FunctionType(value.type, [value.type]), "", "=r,0", [value], side_effect=False)
    return n(n), codegen


@overload(opaque)
def _opaque(n):
    return lambda n: _through_register(n)
