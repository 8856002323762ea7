"""How the package's numba functions are compiled: one policy, two decorators.

Every numba function of the samplers but the entry points (the chunk
runners, and in :mod:`samplers.kernel` the transitions and the step-size
search they call) is a helper, called from other compiled code, and
compiled with:

- ``nogil``: chains run on threads;
- no reference counting (``_nrt=False``): nothing allocates; workspaces
  come from Python;
- ``error_model="numpy"``: a division by zero gives inf or NaN (a rejected
  point) rather than a branch that raises; compiled kernels never raise;
- no Python or C wrappers.  numba compiles every jitted function as a
  whole library (optimized, then turned into machine code), and by default
  also builds the wrappers that let Python call it.  For a helper compiled
  inside the runner those wrappers are never used, and they were a quarter
  of the runner's cold compile (unboxing a NamedTuple of arrays or a
  first-class function type is a lot of code).

A helper is registered with ``numba.extending.overload``, which accepts
those options; a call from Python (tests, debugging) goes to a separate
twin, compiled with wrappers on first use.

numba compiles each helper into a library of its own, optimizes it and
turns it into machine code, then links its IR into every caller's
library, which optimizes it and turns it into machine code again: code
three calls deep is compiled four times.  A function with one call site
that would only add such a level is :func:`inlined` instead: numba copies
its IR into the caller before typing (``inline="always"`` on a jit
function; on an overload, numba re-types the callee at every typing step
and the runner took minutes).  The entry points of :mod:`samplers.kernel`
inline the transitions and the step-size search this way.  Not more:
inlining every helper made the runner's cold compile 2.6 times slower
(numba copies and re-analyses the IR at every call site, and LLVM gets one
huge function), inlining only the small leaves changed nothing.

numba compiles a helper once per set of options of its callers: one called
both by an entry point (or by code inlined into it) and by another helper
is compiled twice.
"""

import functools

from numba import njit
from numba.extending import overload

#: Options of a helper called from compiled code.
HELPER_OPTIONS = dict(nogil=True, _nrt=False, error_model="numpy",
                      no_cpython_wrapper=True, no_cfunc_wrapper=True)
#: Options of an inlined function called from Python (a caller inlines its
#: IR and compiles it with its own options).
INLINED_OPTIONS = dict(nogil=True, error_model="numpy")


def compiled(py_func):
    """Compile ``py_func`` as a helper of the samplers (see the module docstring).

    Parameters
    ----------
    py_func : function
        numba-compilable; it may call other helpers.

    Returns
    -------
    function
        Called from compiled code, the helper compiled with
        :data:`HELPER_OPTIONS`; called from Python, a twin compiled with
        Python wrappers on first use.  ``.py_func`` is ``py_func``.
    """
    twin = []

    @functools.wraps(py_func)
    def call_from_python(*args):
        if not twin:
            twin.append(njit(nogil=True, error_model="numpy")(py_func))
        return twin[0](*args)

    overload(call_from_python, jit_options=HELPER_OPTIONS, strict=False)(
        lambda *args: py_func)
    call_from_python.py_func = py_func
    return call_from_python


def inlined(py_func):
    """Compile ``py_func`` into the body of each compiled caller (see the module
    docstring): for a function with one call site in compiled code.

    Parameters
    ----------
    py_func : function
        numba-compilable; it may call helpers and other inlined functions.

    Returns
    -------
    numba dispatcher
        Inlined by numba into compiled callers before typing; called from
        Python, compiled with Python wrappers on first use.  ``.py_func`` is
        ``py_func``.
    """
    return njit(inline="always", **INLINED_OPTIONS)(py_func)
