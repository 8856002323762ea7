"""A compiled log density as a JAX function, for BlackJAX, NumPyro and optax.

:func:`as_jax_function` wraps a ``LogDensity`` in ``jax.pure_callback`` with
a custom VJP: the forward pass asks numba for the value and the gradient
together (the fused kernel costs about one value), the backward pass scales
the stored gradient by the cotangent. JAX sees a function of a flat float
array ``theta`` (the unconstrained vector) returning a scalar, so
``jax.grad``, ``jax.jit`` and ``jax.vmap`` all work; under ``vmap`` one
callback evaluates every row in one compiled loop (the ``*_batch`` methods).

JAX is optional: it is imported when a function is made. The callback runs on
the host, so under a GPU backend each call copies ``theta`` to the CPU and
back. Only first derivatives exist: ``jax.hessian`` and other forward-mode
transformations raise (a ``custom_vjp`` has no JVP).
"""

import numpy as np


def _jax():
    try:
        import jax
    except ImportError as err:
        raise ImportError("logdens.jax_bridge needs JAX: pip install jax") from err
    return jax


def as_jax_function(density, propto=True, jacobian=True):
    """``density``'s log density as a differentiable JAX function of ``theta``.

    Parameters
    ----------
    density : LogDensity
        A compiled model (``model.compile()``), or any object with ``dim``,
        ``log_density_batch`` and ``log_density_gradient_batch``.
    propto, jacobian : bool
        As in ``LogDensity.log_density``.

    Returns
    -------
    callable
        ``f(theta) -> scalar``: ``theta`` a JAX array of shape ``(dim,)``. The
        result has ``theta``'s dtype: enable ``jax_enable_x64`` to keep
        float64 (with float32 the values are computed in float64 and rounded).

    Examples
    --------
    >>> import jax
    >>> logdensity = as_jax_function(density)  # doctest: +SKIP
    >>> jax.jit(jax.value_and_grad(logdensity))(theta)  # doctest: +SKIP
    """
    jax = _jax()
    dim = int(density.dim)

    def values(theta):  # host side: theta (..., dim), read-only, from JAX
        rows = np.asarray(theta).reshape(-1, dim)
        lps = density.log_density_batch(rows, propto=propto, jacobian=jacobian)
        return lps.reshape(np.shape(theta)[:-1]).astype(theta.dtype)

    def values_and_gradients(theta):
        rows = np.asarray(theta).reshape(-1, dim)
        lps, grads = density.log_density_gradient_batch(rows, propto=propto, jacobian=jacobian)
        return (lps.reshape(np.shape(theta)[:-1]).astype(theta.dtype),
                grads.reshape(np.shape(theta)).astype(theta.dtype))

    def check(theta):
        if theta.shape != (dim,):
            raise ValueError(f"theta must have shape ({dim},), got {theta.shape}")
        return jax.ShapeDtypeStruct((), theta.dtype)

    # broadcast_all: under vmap the callback receives every row at once, (B, dim)
    @jax.custom_vjp
    def log_density(theta):
        return jax.pure_callback(values, check(theta), theta, vmap_method="broadcast_all")

    def forward(theta):
        value = check(theta)
        lp, grad = jax.pure_callback(values_and_gradients,
                                     (value, jax.ShapeDtypeStruct(theta.shape, theta.dtype)),
                                     theta, vmap_method="broadcast_all")
        return lp, grad

    def backward(grad, cotangent):
        return (cotangent * grad,)

    log_density.defvjp(forward, backward)
    return log_density
