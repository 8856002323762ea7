"""The log-density protocol every sampler in this package consumes.

The samplers never import a model or a distribution: they see only an object
that satisfies :class:`LogDensity`.  This module writes the protocol down once
and resolves what users pass in (a model, a compiled log density, or an
external Python log density) into a :class:`LogDensity` and a
:class:`NumbaEntry`.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
from numba import types

#: The one numba signature of every model's numba-level function:
#: ``float64(theta, grad, fdata, idata)``.
ENTRY_SIGNATURE = types.float64(
    types.float64[::1], types.float64[::1], types.float64[::1], types.int64[::1]
)
#: The first-class function type samplers are compiled against, so one
#: compiled sampler calls any model's function with no recompilation.
ENTRY_TYPE = types.FunctionType(ENTRY_SIGNATURE)


class NumbaEntry(NamedTuple):
    """A model's numba-level log density and gradient.

    Attributes
    ----------
    function : numba dispatcher
        Compiled with exactly :data:`ENTRY_SIGNATURE`.  ``function(theta, grad,
        fdata, idata)`` returns the log density (``propto=True``,
        ``jacobian=True``) at the unconstrained point ``theta`` and writes its
        gradient into ``grad``.
    fdata : ndarray of float64, C-contiguous
        Floating-point data the function reads.
    idata : ndarray of int64, C-contiguous
        Integer data the function reads.
    """

    function: Any
    fdata: np.ndarray
    idata: np.ndarray


@runtime_checkable
class LogDensity(Protocol):
    """A differentiable log density on an unconstrained space (BridgeStan names).

    Required
    --------
    dim : int
        Length of the unconstrained parameter vector ``theta``.
    log_density_gradient(theta, propto=True, jacobian=True, out=None)
        Returns ``(value, gradient)``; ``theta`` is float64 of shape
        ``(dim,)``.  ``-inf`` is a valid value: the point lies outside the
        support and a sampler rejects it.  NaN is a bug of the log density.
        The gradient is unspecified where the value is not finite.  The
        returned gradient is owned by the caller (``out`` when given, else a
        fresh array); the log density never keeps a reference to ``theta``.

    Optional (used when present)
    ----------------------------
    numba_entry : NumbaEntry
        The same log density (``propto=True, jacobian=True``) as a numba
        function; samplers then run with no Python per gradient.  Without it
        a sampler calls ``log_density_gradient`` from numba through
        ``numba.objmode`` (correct, but a Python call per gradient: slower).
    param_unc_names() -> list of str
        Names of the ``dim`` unconstrained coordinates.
    constrain(theta) -> dict of str to ndarray
        Constrained parameters and deterministics in their natural shapes.
        Without it the posterior holds the unconstrained vector as ``theta``.
    pointwise_log_likelihood(theta) -> dict of str to ndarray
        One log-likelihood value per observation of each observed term.
    observed_data() -> dict of str to ndarray
        The observed data, for the ``observed_data`` group.
    param_unconstrain(flat) -> ndarray
        Maps constrained values (flattened) to ``theta``.
    unconstrain(values) -> ndarray
        Maps constrained values by name (extra names ignored) to ``theta``;
        used by :func:`samplers.pointwise_log_likelihood`.
    constrain_batch(thetas), pointwise_log_likelihood_batch(thetas)
        The same for many draws at once (``thetas`` of shape (n, dim); arrays
        with a leading axis of length n).  Used when present: building the
        output then costs one call instead of one Python call per draw, which
        otherwise dominates the run time of cheap models.

    A model (anything with a ``compile()`` method and no ``dim``) is compiled
    first; see :func:`resolve`.
    """

    dim: int

    def log_density_gradient(self, theta, propto=True, jacobian=True, out=None):
        """Return ``(log density, gradient)`` at ``theta``."""


def resolve(model_or_log_density):
    """Return a :class:`LogDensity` for a model, log density or external object.

    Parameters
    ----------
    model_or_log_density : object
        A log density (has ``dim``) is returned as it is; a model (has
        ``compile()`` and no ``dim``) is compiled first.

    Returns
    -------
    LogDensity

    Raises
    ------
    TypeError
        When the object is neither.
    """
    obj = model_or_log_density
    if not hasattr(obj, "dim") and callable(getattr(obj, "compile", None)):
        obj = obj.compile()
    if not hasattr(obj, "dim") or not callable(getattr(obj, "log_density_gradient", None)):
        raise TypeError(
            f"{type(model_or_log_density).__name__} is not a log density: it needs "
            "`dim` and `log_density_gradient(theta)` (or a `compile()` method)"
        )
    return obj


def dimension(log_density):
    """Return ``log_density.dim`` as an int, at least 1.

    Raises
    ------
    ValueError
        For a log density with no parameters (``dim == 0``): there is
        nothing to sample or optimize (PyMC refuses such a model too).
    """
    dim = int(log_density.dim)
    if dim < 1:
        raise ValueError(
            f"{type(log_density).__name__} has dim={dim}: no parameters to sample or "
            "optimize; evaluate its log density, deterministics and log-likelihood "
            "directly at the empty theta (np.zeros(0))")
    return dim


def dropped_constant(log_density, theta):
    """The summands ``propto=True`` leaves out of the log density (they depend on
    the data only, so one point of finite density gives them): from BridgeStan's
    ``log_density(theta, propto=)`` where the log density has it, else 0 (its
    values are taken as they are), and 0 where a value is not finite."""
    value = getattr(log_density, "log_density", None)
    if not callable(value):
        return 0.0
    full, kept = value(theta, propto=False), value(theta)
    return float(full - kept) if np.isfinite(full) and np.isfinite(kept) else 0.0


def numba_entry(log_density):
    """Return the numba entry of ``log_density``, or None for an external one."""
    entry = getattr(log_density, "numba_entry", None)
    if entry is None:
        return None
    function, fdata, idata = entry
    return NumbaEntry(
        function,
        np.ascontiguousarray(fdata, dtype=np.float64),
        np.ascontiguousarray(idata, dtype=np.int64),
    )
