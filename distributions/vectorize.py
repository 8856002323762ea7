"""Compiled elementwise loops that apply a distribution's scalar kernels to arrays,
and draw from it (``rvs``).

One loop pair per distribution, compiled on first use. The loops are made from
one template because numba cannot unpack a row of an array into positional
arguments; ``error_model="numpy"`` makes ``1/0`` give ``inf`` as in the
compiled engine, never an exception.
"""

import numpy as np
from numba import njit

_TEMPLATE = """
def value_loop(args, out):
    for i in range(out.size):
        out[i] = logpdf({call_args})

def grad_loop(args, keep, out):
    for i in range(out.shape[1]):
        result = logpdf_grad({call_args}, keep)
        for k in range({n_results}):
            out[k, i] = result[k]
"""

_RVS_TEMPLATE = """
def rvs_loop(args, state, out):
    for i in range(out.size):
        out[i] = rvs(state, {call_args})
"""

_COMPILED = {}
_COMPILED_RVS = {}


def _loops(spec):
    """``(value_loop, grad_loop)`` for ``spec``, compiled once per process."""
    if spec.name not in _COMPILED:
        n_args = len(spec.arg_names)
        call_args = ", ".join(f"args[{j}, i]" for j in range(n_args))
        namespace = {"logpdf": spec.logpdf, "logpdf_grad": spec.logpdf_grad}
        exec(_TEMPLATE.format(call_args=call_args, n_results=n_args + 1), namespace)
        jit = njit(error_model="numpy", nogil=True)
        _COMPILED[spec.name] = (jit(namespace["value_loop"]), jit(namespace["grad_loop"]))
    return _COMPILED[spec.name]


def _stack(arrays):
    """Broadcast the arguments and pack them as rows of one float64 array."""
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    packed = np.empty((len(arrays), int(np.prod(shape))))
    for row, a in zip(packed, arrays):
        row[:] = np.broadcast_to(np.asarray(a, dtype=float), shape).ravel()
    return packed, shape


def logpdf(spec, arrays):
    """The normalized log density of ``spec`` at broadcast ``arrays = (x, *params)``."""
    args, shape = _stack(arrays)
    out = np.empty(args.shape[1])
    _loops(spec)[0](args, out)
    return out.reshape(shape)


def logpdf_grad(spec, arrays):
    """Value and partials of ``spec`` at broadcast ``arrays``; rows in argument order."""
    args, shape = _stack(arrays)
    out = np.empty((args.shape[0] + 1, args.shape[1]))
    _loops(spec)[1](args, spec.keep_all, out)
    return out[0].reshape(shape), [row.reshape(shape) for row in out[1:]]


def _rvs_loop(spec):
    """The draw loop of ``spec``, compiled once per process."""
    if spec.name not in _COMPILED_RVS:
        call_args = ", ".join(f"args[{j}, i]" for j in range(len(spec.params)))
        namespace = {"rvs": spec.rvs}
        exec(_RVS_TEMPLATE.format(call_args=call_args), namespace)
        _COMPILED_RVS[spec.name] = njit(error_model="numpy", nogil=True)(namespace["rvs_loop"])
    return _COMPILED_RVS[spec.name]


def rvs(spec, params, shape, state):
    """Draws of ``spec`` with parameters ``params`` broadcast to ``shape``.

    ``state`` (a ``distributions.random`` state) is advanced in place; draws
    are made in C order of ``shape``. Parameters must be valid (not checked).
    Returns float64 draws of shape ``shape`` (integral for discrete ones).
    """
    args, _ = _stack([np.broadcast_to(np.asarray(a, dtype=float), shape) for a in params])
    out = np.empty(args.shape[1])
    if out.size:
        _rvs_loop(spec)(args, state, out)
    return out.reshape(shape)
