"""A compiled log density as a nutpie model, with no Python call per gradient.

nutpie's public ``from_pyfunc`` calls a Python function for every gradient.
For PyMC models compiled with numba it instead calls a C function pointer
``int f(size_t dim, const double *x, double *grad, double *logp, void
*user_data)`` (``nutpie.compile_pymc``'s ``CompiledPyMCModel``). Every
compiled ``LogDensity`` already has a C entry (``cfunc_address()``), so
:func:`nutpie_model` hands nutpie one small adapter ``numba.cfunc`` (the same
for every model, compiled once and cached) whose ``user_data`` holds the
model's entry address and the addresses of its packed data: a gradient is two
C calls, no Python and no GIL.

The model's draws come back as one variable, the unconstrained ``theta``
(its "expand" function copies the position, also in C); ``ld.from_draws``
turns them into the DataTree ``ld.nuts`` returns.

``CompiledPyMCModel`` is a nutpie internal (tested with nutpie 0.16.8, where
``from_pyfunc`` too is only in ``nutpie.compiled_pyfunc``): where it changes,
``callback="python"`` still works, at the cost of a Python call per gradient
(about 22 us on this machine, benchmarks/RESULTS.md session 8).
"""

import functools
import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

#: What ``nutpie_model``'s ``user_data`` array holds, in order.
_USER_DATA = ("entry", "fdata", "n_fdata", "idata", "n_idata", "dim")
#: nutpie's return codes: 0 a finite value; > 0 a point it rejects (a
#: divergence); < 0 an error that stops sampling.
_OK, _REJECTED, _WRONG_DIM = 0, 4, -1
_F64P = types.CPointer(types.float64)
#: nutpie's C signatures (``nutpie.compile_pymc``): ``logp(dim, x, grad, lp,
#: user_data)`` and ``expand(dim, n_expanded, x, out, user_data)``.
LOGP_SIGNATURE = types.int64(types.uint64, _F64P, _F64P, _F64P, types.voidptr)
EXPAND_SIGNATURE = types.int64(types.uint64, types.uint64, _F64P, _F64P, types.voidptr)


def _nutpie():
    try:
        import nutpie
    except ImportError as err:
        raise ImportError("logdens.nutpie_bridge needs nutpie: pip install nutpie") from err
    return nutpie


@intrinsic
def _call_entry(typingctx, address, theta, grad, fdata, n_fdata, idata, n_idata):
    """Call the model's C entry (``LogDensity.cfunc_address``) at ``address``; the
    data come as integer addresses."""
    sig = types.float64(types.int64, _F64P, _F64P, types.int64, types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        double, i64 = ir.DoubleType(), ir.IntType(64)
        fnty = ir.FunctionType(double, [double.as_pointer()] * 3 + [i64, i64.as_pointer(), i64])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, [args[1], args[2], builder.inttoptr(args[3], double.as_pointer()),
                                 args[4], builder.inttoptr(args[5], i64.as_pointer()), args[6]])
    return sig, codegen


def _logp(dim, x, grad, lp, user_data):
    """nutpie's ``logp``: the model's entry, its address and data read from ``user_data``."""
    meta = numba.carray(user_data, (len(_USER_DATA),), np.int64)
    if dim != meta[5]:
        return _WRONG_DIM
    value = _call_entry(meta[0], x, grad, meta[1], meta[2], meta[3], meta[4])
    lp[0] = value
    return _OK if value > -math.inf else _REJECTED  # -inf: outside the support


def _expand(dim, n_expanded, x, out, user_data):
    """nutpie's ``expand``: the stored draw is ``theta`` itself."""
    if dim != n_expanded:
        return _WRONG_DIM
    for i in range(dim):
        out[i] = x[i]
    return _OK


@functools.cache
def _adapters():
    """The two ``numba.cfunc`` adapters nutpie calls, ``logp`` and ``expand``: the
    same for every model, compiled (or loaded from numba's cache) on first use."""
    return (numba.cfunc(LOGP_SIGNATURE, cache=True)(_logp),
            numba.cfunc(EXPAND_SIGNATURE, cache=True)(_expand))


def _initial_point(dim):
    """nutpie's ``seed -> theta``: uniform(-2, 2), Stan's default."""
    def initial_point(seed):
        return np.random.default_rng(seed).uniform(-2.0, 2.0, size=dim)
    return initial_point


def nutpie_model(density, callback="numba"):
    """A nutpie model sampling ``density``'s unconstrained ``theta``.

    Parameters
    ----------
    density : LogDensity
        A compiled model. Its data at this call are the ones sampled (the
        model keeps them alive); after ``set_data``, make a new nutpie model.
    callback : {"numba", "python"}
        ``"numba"``: nutpie calls the model's C entry through a C adapter,
        with no Python per gradient (uses nutpie internals). ``"python"``:
        nutpie's public ``from_pyfunc`` with a Python function per gradient.

    Returns
    -------
    nutpie CompiledModel
        For ``nutpie.sample``; its posterior holds ``theta`` (chain, draw,
        dim): pass ``trace.posterior["theta"].values`` to ``ld.from_draws``.
    """
    nutpie = _nutpie()
    if callback == "python":
        return _pyfunc_model(nutpie, density)
    if callback != "numba":
        raise ValueError(f"callback={callback!r}; must be 'numba' or 'python'")
    from nutpie.compile_pymc import CompiledPyMCModel
    dim = int(density.dim)
    logp, expand = _adapters()
    fdata, idata = density.fdata, density.idata  # kept alive by the model below
    user_data = np.array([density.cfunc_address(), fdata.ctypes.data, fdata.size,
                          idata.ctypes.data, idata.size, dim], dtype=np.int64)
    return CompiledPyMCModel(
        _n_dim=dim, dims={"theta": ("theta_dim_0",)}, _coords={"theta_dim_0": np.arange(dim)},
        _shapes={"theta": (dim,)}, compiled_logp_func=logp, compiled_expand_func=expand,
        initial_point_func=_initial_point(dim), shared_data={}, user_data=user_data,
        n_expanded=dim, shape_info=(["theta"], [slice(0, dim)], [(dim,)]),
        logp_func=(density, fdata, idata), expand_func=None)


def _pyfunc_model(nutpie, density):
    """``nutpie.from_pyfunc`` with a Python call per gradient (the public way)."""
    dim = int(density.dim)

    def make_logp_fn():
        def logp(x, **unused):
            return density.log_density_gradient(x)
        return logp

    def make_expand_fn(*seeds_and_chain):
        def expand(x, **unused):
            return {"theta": np.array(x)}
        return expand

    from nutpie.compiled_pyfunc import from_pyfunc
    return from_pyfunc(dim, make_logp_fn, make_expand_fn, [np.dtype(np.float64)], [(dim,)],
                              ["theta"], make_initial_point_fn=_initial_point(dim))
