"""Run external (pure Python) log densities through the numba samplers.

An external log density has ``dim`` and ``log_density_gradient(theta)`` but
no numba entry.  Rather than writing the samplers twice, it gets a numba
entry whose function calls back into Python with ``numba.objmode``: the same
compiled NUTS runs it, at the cost of a Python call (a few microseconds plus
the log density itself) per gradient, with the GIL held during the call.

The callback finds its object through a registry keyed by ``idata[0]``, so
one compiled (and cached) function serves every external log density.

An exception cannot leave the callback: numba drops an exception that
crosses a call through a function pointer (printing ``Exception ignored``)
and the caller goes on with an undefined value.  So the callback catches
whatever the log density raises, records it in the run's
:class:`samplers.interrupt.Interrupt` (which stops the chains, as Ctrl-C
does) and returns ``-inf``, without calling the log density again; the
error is raised once control is back in Python (:func:`raise_failure`, the
runners, or the end of :func:`external_entry`).
"""

import functools
import itertools
import math
import threading
from contextlib import contextmanager, nullcontext

import numpy as np
from numba import njit, objmode

from .interrupt import Interrupt
from .protocol import ENTRY_SIGNATURE, NumbaEntry, numba_entry

_REGISTRY = {}
_KEYS = itertools.count(1)
_LOCK = threading.Lock()


def _call_python(key, theta, grad):
    """Evaluate the registered log density; a value that is not finite (NaN,
    or ``+inf`` from a faulty density) is reported as ``-inf``: a rejected
    point, whose gradient is not read.  An exception is recorded in the
    run's interrupt, and ``-inf`` returned, from then on without a call."""
    log_density, interrupt = _REGISTRY[int(key)]
    if interrupt.failure is not None:
        return -math.inf
    try:
        value, gradient = log_density.log_density_gradient(np.array(theta))
        value = float(value)
        if not math.isfinite(value):
            return -math.inf
        grad[:] = gradient
    except BaseException as err:  # Ctrl-C too: it cannot leave the callback either
        interrupt.fail(err)
        return -math.inf
    return value


def _python_callback(theta, grad, fdata, idata):
    """Numba entry that evaluates the Python log density registered as ``idata[0]``."""
    with objmode(value="float64"):
        value = _call_python(idata[0], theta, grad)
    return value


@functools.cache
def python_callback():
    """Return the compiled :func:`_python_callback` (compiled, or loaded from
    numba's disk cache, on first use rather than at import)."""
    return njit(ENTRY_SIGNATURE, cache=True)(_python_callback)


@contextmanager
def external_entry(log_density, interrupt=None):
    """Context manager yielding a :class:`NumbaEntry` for a Python log density.

    Parameters
    ----------
    log_density : object
        Has ``log_density_gradient(theta) -> (float, ndarray)``.
    interrupt : Interrupt, optional
        Records an exception of the log density and stops the chains that
        read its flag; a fresh one by default.

    Yields
    ------
    NumbaEntry
        Valid until the context exits (the registry entry is then removed).

    Raises
    ------
    BaseException
        At the end of the block, the exception the log density raised in
        the block, if any, in place of what the block raised after it.
    """
    interrupt = Interrupt() if interrupt is None else interrupt
    with _LOCK:
        key = next(_KEYS)
        _REGISTRY[key] = (log_density, interrupt)
    try:
        yield NumbaEntry(python_callback(), np.zeros(1), np.array([key], dtype=np.int64))
    except BaseException:
        if interrupt.failure is None:
            raise
    finally:
        with _LOCK:
            del _REGISTRY[key]
    interrupt.raise_failure()


def entry_for(log_density, interrupt=None):
    """Context manager yielding the numba entry of ``log_density``: its own
    (:func:`samplers.protocol.numba_entry`), or for an external log density
    a Python callback (:func:`external_entry`, with ``interrupt``)."""
    entry = numba_entry(log_density)
    return nullcontext(entry) if entry is not None else external_entry(log_density, interrupt)


def raise_failure(entry):
    """Raise the exception the external log density of ``entry`` raised in its
    callback, if any (a no-op for any other entry).  For Python code that
    calls the entry itself: the callback returns ``-inf`` instead of raising."""
    if getattr(entry.function, "py_func", None) is _python_callback:
        _REGISTRY[int(entry.idata[0])][1].raise_failure()
