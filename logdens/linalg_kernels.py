"""Cholesky factorization, triangular solves and their reverse modes, as numba
kernels that generated code calls (``ld.cholesky``, ``ld.solve_triangular``,
``ld.logdet``).

Conventions, for every kernel here:

* A matrix is a flat row-major (C order) float64 array of n * n entries, and
  ``n`` is passed explicitly; B and X of the solves are n x m row-major (m = 1
  for a vector).
* The caller owns every buffer, scratch included (``cholesky_reverse_work``,
  ``solve_reverse_work`` give its size): a kernel allocates nothing, so a
  gradient evaluation costs no heap traffic however often it runs.
* ``cholesky_forward`` reads only the lower triangle of S, diagonal included,
  as LAPACK's ``dpotrf`` does, writes L with zeros above the diagonal, and
  returns False instead of raising when a pivot is not positive and finite
  (the caller turns that into a log density of ``-inf``).
* A ``*_reverse`` kernel ADDS the adjoints of its inputs into the given
  arrays. An adjoint of a lower-triangular matrix lives in its lower
  triangle: the upper entries of aL are not read, and those of aS and aL are
  not written.

``ld.logdet`` needs no kernel here: log det S = 2 sum_i log L_ii, whose
adjoint adds 2 a / L_ii to the diagonal of aL.

The reverse of the Cholesky factorization is Murray (2016), "Differentiation
of the Cholesky decomposition", arXiv:1602.07527, blocked form (his
``chol_rev_blocked`` with ``chol_rev_unblocked`` on the diagonal blocks). In
closed form, with Phi(A) the lower triangle of A with its diagonal halved,

    G = L^-T Phi(L^T aL) L^-1,        aS = tril of Phi(G + G^T).

The paper states the result for a function of a symmetric S (perturbations
dS = dS^T give df = <sym G, dS>). Here the forward reads the lower triangle
only, so moving the entry S_ij (i > j) is the symmetric perturbation
E_ij + E_ji, and its partial is G_ij + G_ji: twice the symmetric gradient
off the diagonal, once on it, which is what Phi(G + G^T) says and what
Murray's in-place sweeps leave in the lower triangle. (n = 1: aS = aL / 2L.)
``tests/test_linalg_kernels.py`` checks it by finite differences, one lower
entry of S at a time.

Speed. Above a crossover (``FORWARD_LOOPS_MAX``, ``REVERSE_LOOPS_MAX``,
``SOLVE_LOOPS_MAX``, measured) the kernels call OpenBLAS through scipy's
Cython BLAS/LAPACK, the library ``scipy.linalg`` uses; at or below it, plain
loops (the ``*_reference`` functions, also the tests' references), because a
BLAS call costs a fraction of a microsecond before any work and small
matrices gain nothing from its blocking. ``cholesky_forward`` is then
LAPACK's ``dpotrf`` plus a copy; ``cholesky_reverse`` does about twice its
flops, mostly in ``dgemm``. A row-major lower L is, read column-major, the
upper factor U = L^T, so the BLAS calls pass uplo = "U" and ask for the
transpose of the row-major product they want (``cholesky_forward`` says why
its ``dpotrf`` transposes instead).

How BLAS is called without allocating: ``_fortran`` registers each routine's
address under a symbol of its own (llvmlite ``add_symbol``) and returns a
numba intrinsic that puts the by-reference arguments (Fortran takes ``char*``,
``int*``, ``double*``) in stack slots of the calling function; ``_at`` gives
the address of an array entry. A call by symbol rather than by a ctypes
pointer keeps ``cache=True`` working: numba refuses to cache a function that
holds a ctypes function pointer (a "dynamic global").
"""

import math

import llvmlite.binding
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import get_cython_function_address, intrinsic

from logdens.distributions.jit import njit

# Crossovers and block sizes, measured on one core of an AMD EPYC (AVX2) with
# scipy's OpenBLAS 0.3.31, numba 0.68 (minimum over interleaved repeats).

#: Largest n for the loops of ``cholesky_forward``: at n = 8 they take 0.45 µs
#: and dpotrf 0.55; at 16, 1.1 and 1.0; at 32, 4.4 and 2.5.
FORWARD_LOOPS_MAX = 12

#: Largest n for the loops of ``cholesky_reverse``: at n = 24 they take 2.6 µs
#: and the blocked sweep 2.8; at 48, 10.5 and 8.7; at 96, 76 and 36.
REVERSE_LOOPS_MAX = 24

#: Largest n for the loops of the solves: at n = 8, m = 1 they take 0.41 µs
#: and dtrsv 0.36; at 32, 1.6 and 0.6 (m = 8: 2.2 and 1.3).
SOLVE_LOOPS_MAX = 8

#: Rows of the block columns of the Cholesky reverse, and of the panels of
#: the solves' reverse. 32, 64 and 128 came within 5-10% of each other at
#: n = 300-2000 (noise on a shared machine); at n = 2000 the sweep takes
#: 2.0x dpotrf's time, its flop count being 2x (two gemms of n^3 / 3).
BLOCK = 64

#: Rows of the block columns inside each diagonal block of ``BLOCK`` rows;
#: the loops run on blocks of this size. 8 and 16 came within 5% (n = 32-300),
#: one level of ``BLOCK``-sized loops took 30-60% longer at n = 100-500.
INNER_BLOCK = 8


def _fortran(module, name, returns_info=False):
    """A numba intrinsic calling the BLAS/LAPACK routine ``name`` of scipy's
    Cython module ``module``, every argument passed by reference as Fortran
    wants it.

    Arguments, in the routine's order: a one-character string literal for a
    ``char*`` ("U", "N", ...), an integer for an ``int*`` (cast to 32 bits,
    as scipy's wrappers take), a float for a ``double*`` scalar (cast to
    float64), an ``_at`` pointer for an array. With ``returns_info`` the
    trailing ``info`` argument is supplied here and returned. Values go into
    stack slots made once in the caller's entry block, so a call in a loop
    does not grow the stack.
    """
    symbol = "logdens_linalg_" + name
    llvmlite.binding.add_symbol(symbol, get_cython_function_address(module, name))

    def codegen(context, builder, signature, arguments):
        references = []
        values = cgutils.unpack_tuple(builder, arguments[0])
        for kind, value in zip(signature.args[0], values):
            if isinstance(kind, types.StringLiteral):
                value = ir.Constant(ir.IntType(8), ord(kind.literal_value))
            elif isinstance(kind, types.Integer):
                value = context.cast(builder, value, kind, types.int32)
            elif isinstance(kind, types.Float):
                value = context.cast(builder, value, kind, types.float64)
            if isinstance(kind, types.CPointer):
                references.append(value)
            else:
                references.append(cgutils.alloca_once_value(builder, value))
        if returns_info:
            info = cgutils.alloca_once(builder, ir.IntType(32))
            references.append(info)
        callee = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [r.type for r in references]), symbol)
        builder.call(callee, references)
        return builder.load(info) if returns_info else context.get_dummy_value()

    @intrinsic
    def call(typingctx, *arguments):
        for kind in arguments:
            # A str that is not a literal fails here, and numba retries with literals.
            if not isinstance(kind, (types.StringLiteral, types.Integer, types.Float, types.CPointer)):
                return None
        result = types.int32 if returns_info else types.none
        return result(types.StarArgTuple(arguments)), codegen

    return call


@intrinsic
def _at(typingctx, array, offset):
    """The address of ``array[offset]`` as a ``double*``, for a BLAS argument."""
    def codegen(context, builder, signature, arguments):
        data = context.make_array(signature.args[0])(context, builder, arguments[0]).data
        return builder.gep(data, [arguments[1]])
    return types.CPointer(types.float64)(array, offset), codegen


_dpotrf = _fortran("scipy.linalg.cython_lapack", "dpotrf", returns_info=True)
_dtrsm = _fortran("scipy.linalg.cython_blas", "dtrsm")
_dgemm = _fortran("scipy.linalg.cython_blas", "dgemm")
_dsymm = _fortran("scipy.linalg.cython_blas", "dsymm")
_dtrsv = _fortran("scipy.linalg.cython_blas", "dtrsv")


# ----- Cholesky factorization -----

@njit()
def _copy_lower(source, target, n):
    """target = the lower triangle of source, zeros above the diagonal."""
    for i in range(n):
        row = i * n
        for j in range(i + 1):
            target[row + j] = source[row + j]
        for j in range(i + 1, n):
            target[row + j] = 0.0


@njit()
def _diagonal_ok(L, n):
    """Whether every diagonal entry of L is positive and finite.

    OpenBLAS's dpotrf stops at a pivot <= 0 but not at a NaN one (``NaN <= 0``
    is false), so a NaN in S comes back as info = 0 and NaN entries. A NaN or
    inf anywhere in the lower triangle of S reaches every later pivot of its
    row, so checking the diagonal is enough.
    """
    ok = True
    for i in range(n):
        ok &= 0.0 < L[i * (n + 1)] < math.inf
    return ok


@njit()
def cholesky_forward_reference(S, L, n):
    """L L^T = S by the row-by-row (Cholesky-Banachiewicz) loops; False for a
    pivot that is not positive and finite (NaN included), L then arbitrary.

    Reads the lower triangle of S only; the path of ``cholesky_forward`` for
    n <= FORWARD_LOOPS_MAX, and its reference in the tests.
    """
    for i in range(n):
        row = i * n
        for j in range(i + 1):
            s = S[row + j]
            for k in range(j):
                s -= L[row + k] * L[j * n + k]
            if j < i:
                L[row + j] = s / L[j * n + j]
            elif 0.0 < s < math.inf:
                L[row + i] = math.sqrt(s)
            else:
                return False
        for j in range(i + 1, n):
            L[row + j] = 0.0
    return True


@njit()
def _lower_into_column_major(S, L, n):
    """L read column-major = the lower triangle of row-major S (the entries
    of L that dpotrf with uplo = "L" reads; the rest is left as it was)."""
    for j in range(n):
        for i in range(j, n):
            L[j * n + i] = S[i * n + j]


@njit()
def _upper_to_lower(L, n):
    """Move the strict upper triangle of L to the lower one, transposed,
    leaving zeros: dpotrf's column-major lower factor into row-major lower."""
    for i in range(n):
        for j in range(i):
            L[i * n + j] = L[j * n + i]
            L[j * n + i] = 0.0


@njit()
def cholesky_forward(S, L, n):
    """L L^T = S (lower L, zeros above its diagonal), reading the lower
    triangle of S only. Returns False, with L arbitrary, when S is not
    numerically positive definite (a pivot <= 0, NaN or inf); never raises.
    ``n`` (and ``m`` of the solves) must be a signed integer.

    LAPACK ``dpotrf`` above ``FORWARD_LOOPS_MAX``, with uplo = "L" on a
    transposed copy of S's lower triangle, then L transposed back in place.
    uplo = "U" on a plain copy would need no transposes (row-major lower is
    column-major upper), but OpenBLAS's "U" took 10-25% longer than its "L"
    at n = 100-1000: with the transposes, "L" still took 6-12% less time
    than "U" there (n = 2000: a tie).
    """
    if n <= FORWARD_LOOPS_MAX:
        return cholesky_forward_reference(S, L, n)
    _lower_into_column_major(S, L, n)
    if _dpotrf("L", n, _at(L, 0), n) != 0:
        return False
    _upper_to_lower(L, n)
    return _diagonal_ok(L, n)


# ----- its reverse mode (Murray 2016) -----

def cholesky_reverse_work(n):
    """Floats of scratch ``cholesky_reverse`` needs: one n x n matrix, where the
    adjoint of L turns into the adjoint of S in place (aL is not modified)."""
    return n * n


@njit()
def _reverse_diagonal_block(L, A, n, start, size):
    """Murray's ``chol_rev_unblocked`` on the diagonal block of rows and
    columns [start, start + size) of the n x n matrices L and A, in place:
    on entry A holds the adjoint of that block of L, on exit the adjoint of
    the matrix the block was factored from (lower triangle, lower-read).

    Column p, last first, with d = L_pp, c the column below it, r the row to
    its left and B the block below r: the forward set d = sqrt(M_pp - r.r)
    and c = (M_c - B r) / d. Every update below runs along rows, contiguous.
    """
    end = start + size
    for p in range(end - 1, start - 1, -1):
        row = p * n
        d = L[row + p]
        cc = 0.0
        for i in range(p + 1, end):
            A[i * n + p] /= d  # the adjoint of M_c - B r
            cc += L[i * n + p] * A[i * n + p]
        # The adjoint of d is A_pp - c.ac / d (c = (M_c - B r) / d); dbar is it
        # over d, twice the adjoint of M_pp, which r's adjoint gets times -r.
        dbar = (A[row + p] - cc) / d
        # Row views indexed from 0: numba then knows the index is not
        # negative, drops its wraparound test, and LLVM vectorizes (3x).
        ar, r = A[row + start:row + p], L[row + start:row + p]
        for k in range(p - start):
            ar[k] -= dbar * r[k]
        for i in range(p + 1, end):
            ca = A[i * n + p]
            ab, b = A[i * n + start:i * n + p], L[i * n + start:i * n + p]
            for k in range(p - start):
                ar[k] -= ca * b[k]
            for k in range(p - start):
                ab[k] -= ca * r[k]
        A[row + p] = 0.5 * dbar


@njit()
def _add_lower(source, target, n):
    """target += source on and below the diagonal; the upper part untouched."""
    for i in range(n):
        row = i * n
        for j in range(i + 1):
            target[row + j] += source[row + j]


@njit()
def cholesky_reverse_reference(L, aL, aS, n, work):
    """``cholesky_reverse`` by Murray's unblocked loops on the whole matrix:
    its path for n <= REVERSE_LOOPS_MAX, and its reference in the tests."""
    _copy_lower(aL, work, n)
    _reverse_diagonal_block(L, work, n, 0, n)
    _add_lower(work, aS, n)


@njit()
def _reverse_below_diagonal(L, A, n, origin, end, j, k):
    """First half of a step of Murray's ``chol_rev_blocked`` on the diagonal
    block [origin, end) of the n x n matrices: block column [j, k), with
    D = L[j:k, j:k], R = L[j:k, origin:j] left of it, C = L[k:end, j:k] below
    it and B = L[k:end, origin:j] below R. The forward made
    D = chol(S_DD - R R^T) and C = (S_CD - B R^T) D^-T; A holds their adjoints.
    This step turns aC into the adjoint of S_CD, and adds the terms through C
    to aB and aD.

    Row-major blocks are the column-major transposes, hence the "U" and the
    swapped products in each BLAS call (the comment gives the row-major one).
    """
    size, left, below = k - j, j - origin, end - k
    if below == 0:
        return
    D, C, B = j * n + j, k * n + j, k * n + origin
    # aC <- aC D^-1
    _dtrsm("L", "U", "N", "N", size, below, 1.0, _at(L, D), n, _at(A, C), n)
    if left > 0:
        # aB -= aC R
        _dgemm("N", "N", left, below, size, -1.0, _at(L, j * n + origin), n, _at(A, C), n,
               1.0, _at(A, B), n)
    # aD -= aC^T C, on the whole block: the loops read its lower triangle only,
    # and no later step reads the block's upper part.
    _dgemm("N", "T", size, size, below, -1.0, _at(L, C), n, _at(A, C), n, 1.0, _at(A, D), n)


@njit()
def _reverse_left_of_diagonal(L, A, n, origin, end, j, k):
    """Second half of the step of ``_reverse_below_diagonal``, once aD holds
    the adjoint of S_DD - R R^T: adds the terms through B and D to aR."""
    size, left, below = k - j, j - origin, end - k
    if left == 0:
        return
    D, C, R = j * n + j, k * n + j, j * n + origin
    if below > 0:
        # aR -= aC^T B
        _dgemm("N", "T", left, size, below, -1.0, _at(L, k * n + origin), n, _at(A, C), n,
               1.0, _at(A, R), n)
    # aR -= (aD + aD^T) R with aD lower: dsymm's symmetric matrix is the lower
    # triangle with its diagonal doubled (x2 and x0.5 are exact).
    for i in range(j, k):
        A[i * (n + 1)] *= 2.0
    _dsymm("R", "U", left, size, -1.0, _at(A, D), n, _at(L, R), n, 1.0, _at(A, R), n)
    for i in range(j, k):
        A[i * (n + 1)] *= 0.5


@njit()
def _reverse_sweep(L, A, n, origin, end, block):
    """Murray's ``chol_rev_blocked`` on the diagonal block [origin, end), in
    place in A, with block columns of ``block`` rows from the last (the first
    takes the remainder) and the loops on their diagonal blocks."""
    k = end
    while k > origin:
        j = max(origin, k - block)
        _reverse_below_diagonal(L, A, n, origin, end, j, k)
        _reverse_diagonal_block(L, A, n, j, k - j)
        _reverse_left_of_diagonal(L, A, n, origin, end, j, k)
        k = j


@njit()
def cholesky_reverse(L, aL, aS, n, work):
    """Add into the lower triangle of aS the adjoint of S, given the adjoint aL
    of L = cholesky_forward(S) (its upper part not read). ``work`` holds
    ``cholesky_reverse_work(n)`` floats; aL is not modified.

    Murray's blocked sweep in two levels: block columns of ``BLOCK`` rows,
    whose diagonal blocks are swept again in blocks of ``INNER_BLOCK`` rows,
    the loops on theirs; the loops alone for n <= REVERSE_LOOPS_MAX.
    """
    if n <= REVERSE_LOOPS_MAX:
        cholesky_reverse_reference(L, aL, aS, n, work)
        return
    _copy_lower(aL, work, n)
    k = n
    while k > 0:
        j = max(0, k - BLOCK)
        _reverse_below_diagonal(L, work, n, 0, n, j, k)
        _reverse_sweep(L, work, n, j, k, INNER_BLOCK)
        _reverse_left_of_diagonal(L, work, n, 0, n, j, k)
        k = j
    _add_lower(work, aS, n)


# ----- triangular solves -----

@njit()
def solve_lower_reference(L, B, X, n, m):
    """X = L^-1 B by forward substitution, a row of X at a time (X may be B)."""
    for i in range(n):
        x = X[i * m:(i + 1) * m]
        for c in range(m):
            x[c] = B[i * m + c]
        row = L[i * n:(i + 1) * n]
        for k in range(i):
            xk = X[k * m:(k + 1) * m]
            for c in range(m):
                x[c] -= row[k] * xk[c]
        for c in range(m):
            x[c] /= row[i]


@njit()
def solve_upper_transposed_reference(L, B, X, n, m):
    """X = L^-T B by back substitution (X may be B). Row i of X, once final,
    is taken off the rows above it times row i of L: contiguous in L."""
    for k in range(n * m):
        X[k] = B[k]
    for i in range(n - 1, -1, -1):
        x, row = X[i * m:(i + 1) * m], L[i * n:(i + 1) * n]
        for c in range(m):
            x[c] /= row[i]
        for k in range(i):
            xk = X[k * m:(k + 1) * m]
            for c in range(m):
                xk[c] -= row[k] * x[c]


@njit()
def solve_lower(L, B, X, n, m):
    """X = L^-1 B for lower-triangular L (n x n) and B (n x m), row-major;
    the upper part of L is not read, X may be B. BLAS above SOLVE_LOOPS_MAX:
    ``dtrsv`` for a vector, ``dtrsm`` (X^T L^T = B^T column-major) for more."""
    if n <= SOLVE_LOOPS_MAX:
        solve_lower_reference(L, B, X, n, m)
        return
    for k in range(n * m):
        X[k] = B[k]
    if m == 1:
        _dtrsv("U", "T", "N", n, _at(L, 0), n, _at(X, 0), 1)
    else:
        _dtrsm("R", "U", "N", "N", m, n, 1.0, _at(L, 0), n, _at(X, 0), m)


@njit()
def solve_upper_transposed(L, B, X, n, m):
    """X = L^-T B for lower-triangular L (n x n) and B (n x m), row-major;
    the upper part of L is not read, X may be B. As ``solve_lower``, with
    the transposes swapped."""
    if n <= SOLVE_LOOPS_MAX:
        solve_upper_transposed_reference(L, B, X, n, m)
        return
    for k in range(n * m):
        X[k] = B[k]
    if m == 1:
        _dtrsv("U", "N", "N", n, _at(L, 0), n, _at(X, 0), 1)
    else:
        _dtrsm("R", "U", "T", "N", m, n, 1.0, _at(L, 0), n, _at(X, 0), m)


# ----- their reverse modes -----

def solve_reverse_work(n, m):
    """Floats of scratch the solve reverses need: one n x m matrix (L^-T aX or
    L^-1 aX)."""
    return n * m


@njit()
def _subtract_lower_product(P, Q, aL, n, m):
    """aL -= P Q^T on and below the diagonal (P, Q: n x m), the upper part
    untouched. Panels of BLOCK rows: dgemm left of the diagonal block, loops
    on its lower triangle (only there would dgemm write above the diagonal)."""
    for top in range(0, n, BLOCK):
        bottom = min(n, top + BLOCK)
        if top > 0:
            # aL[top:bottom, :top] -= P[top:bottom] Q[:top]^T
            _dgemm("T", "N", top, bottom - top, m, -1.0, _at(Q, 0), m, _at(P, top * m), m,
                   1.0, _at(aL, top * n), n)
        _subtract_lower_block(P, Q, aL, n, m, top, bottom)


@njit()
def _subtract_lower_block(P, Q, aL, n, m, top, bottom):
    """aL[i, j] -= P[i] . Q[j] for top <= j <= i < bottom, by loops."""
    for i in range(top, bottom):
        p = P[i * m:(i + 1) * m]
        for j in range(top, i + 1):
            q, s = Q[j * m:(j + 1) * m], 0.0
            for c in range(m):
                s += p[c] * q[c]
            aL[i * n + j] -= s


@njit()
def _add(source, target, size):
    """target += source, entry by entry."""
    for k in range(size):
        target[k] += source[k]


@njit()
def solve_lower_reverse(L, X, aX, aL, aB, n, m, work):
    """Reverse of X = solve_lower(L, B): add aB += L^-T aX and, on and below
    the diagonal of aL, aL -= (L^-T aX) X^T (from dX = L^-1 (dB - dL X)).
    ``work`` holds ``solve_reverse_work(n, m)`` floats."""
    solve_upper_transposed(L, aX, work, n, m)
    _add(work, aB, n * m)
    _subtract_lower_product(work, X, aL, n, m)


@njit()
def solve_upper_transposed_reverse(L, X, aX, aL, aB, n, m, work):
    """Reverse of X = solve_upper_transposed(L, B): add aB += L^-1 aX and, on
    and below the diagonal of aL, aL -= X (L^-1 aX)^T (from
    dX = L^-T (dB - dL^T X)). ``work`` holds ``solve_reverse_work(n, m)``."""
    solve_lower(L, aX, work, n, m)
    _add(work, aB, n * m)
    _subtract_lower_product(X, work, aL, n, m)


@njit()
def solve_lower_reverse_reference(L, X, aX, aL, aB, n, m, work):
    """``solve_lower_reverse`` by loops, with no BLAS call (a GPU thread's)."""
    solve_upper_transposed_reference(L, aX, work, n, m)
    _add(work, aB, n * m)
    _subtract_lower_block(work, X, aL, n, m, 0, n)


@njit()
def solve_upper_transposed_reverse_reference(L, X, aX, aL, aB, n, m, work):
    """``solve_upper_transposed_reverse`` by loops, with no BLAS call (a GPU thread's)."""
    solve_lower_reference(L, aX, work, n, m)
    _add(work, aB, n * m)
    _subtract_lower_block(X, work, aL, n, m, 0, n)
