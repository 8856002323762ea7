"""How the package's numba functions are compiled: one decorator, one policy.

Every numba function of the samplers but the chunk runners is a helper,
called from other compiled code, and compiled with:

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
"""

import functools

from numba import njit
from numba.extending import overload

#: Options of a helper called from compiled code.
HELPER_OPTIONS = dict(nogil=True, _nrt=False, error_model="numpy",
                      no_cpython_wrapper=True, no_cfunc_wrapper=True)


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
