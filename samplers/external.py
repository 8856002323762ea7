"""Run external (pure Python) log densities through the numba samplers.

An external log density has ``dim`` and ``log_density_gradient(theta)`` but
no numba entry.  Rather than writing the samplers twice, it gets a numba
entry whose function calls back into Python with ``numba.objmode``: the same
compiled NUTS runs it, at the cost of a Python call (a few microseconds plus
the log density itself) per gradient, with the GIL held during the call.

The callback finds its object through a registry keyed by ``idata[0]``, so
one compiled (and cached) function serves every external log density.
"""

import functools
import itertools
import math
import threading
from contextlib import contextmanager

import numpy as np
from numba import njit, objmode

from .protocol import ENTRY_SIGNATURE, NumbaEntry

_REGISTRY = {}
_KEYS = itertools.count(1)
_LOCK = threading.Lock()


def _call_python(key, theta, grad):
    """Evaluate the registered log density; a value that is not finite (NaN,
    or ``+inf`` from a faulty density) is reported as ``-inf``: a rejected
    point, whose gradient is not read."""
    value, gradient = _REGISTRY[int(key)].log_density_gradient(np.array(theta))
    value = float(value)
    if not math.isfinite(value):
        return -math.inf
    grad[:] = gradient
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
def external_entry(log_density):
    """Context manager yielding a :class:`NumbaEntry` for a Python log density.

    Parameters
    ----------
    log_density : object
        Has ``log_density_gradient(theta) -> (float, ndarray)``.

    Yields
    ------
    NumbaEntry
        Valid until the context exits (the registry entry is then removed).
    """
    with _LOCK:
        key = next(_KEYS)
        _REGISTRY[key] = log_density
    try:
        yield NumbaEntry(python_callback(), np.zeros(1), np.array([key], dtype=np.int64))
    finally:
        with _LOCK:
            del _REGISTRY[key]
