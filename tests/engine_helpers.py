"""Shared checks for engine tests: directional finite differences of a LogDensity."""

import numpy as np


def directional_fd(f, theta, direction):
    """5-point central difference of ``f`` along ``direction`` at ``theta``.

    h = 1e-4 / |direction|: truncation error O(h^4) ~ 1e-16 relative for the
    smooth test models, rounding error ~ eps |f| / h ~ 1e-12 |f|.
    """
    h = 1e-4 / np.linalg.norm(direction)
    values = [f(theta + k * h * direction) for k in (-2, -1, 1, 2)]
    return (values[0] - 8 * values[1] + 8 * values[2] - values[3]) / (12 * h)


def check_gradient(density, theta, rng, n_directions=3, rtol=1e-6, **flags):
    """The gradient along random directions matches finite differences of the value.

    Tolerance: rtol 1e-6 of max(|fd|, 1e-8 * (|lp| + 1)), the 5-point stencil's
    accuracy at h = 1e-4 for these models plus its rounding floor.
    """
    lp, grad = density.log_density_gradient(theta, **flags)
    assert np.isfinite(lp), lp
    value = density.log_density(theta, **flags)
    assert value == lp or np.isclose(value, lp, rtol=1e-13, atol=0), (value, lp)
    for _ in range(n_directions):
        v = rng.normal(size=density.dim)
        fd = directional_fd(lambda t: density.log_density(t, **flags), theta, v)
        analytic = grad @ v
        scale = max(abs(fd), 1e-8 * (abs(lp) + 1.0))
        assert abs(analytic - fd) <= rtol * scale + 1e-9, (analytic, fd)


def per_sample_rows(density, theta, name):
    """Dense per-sample rows of term ``name``, checked equal to the sparse ones and
    to rows written into a buffer of NaNs.

    Both run the same arithmetic in the same order, except for a column held
    by two slots (``w[idx] - w[idx]``): the dense row adds both contributions
    in place (contracted to a fused multiply-add), scipy adds the slots. Where
    they cancel, one gives 0 and the other 1e-17: hence atol 1e-13 of the
    largest entry.
    """
    rows = density.per_sample_gradient(theta, name)
    stale = np.full(rows.shape, np.nan)  # every entry is written: none is left from before
    np.testing.assert_array_equal(density.per_sample_gradient(theta, name, out=stale), rows)
    sparse = density.per_sample_gradient(theta, name, sparse=True)
    assert sparse.shape == rows.shape
    atol = 1e-13 * np.max(np.abs(rows), initial=0.0)
    np.testing.assert_allclose(sparse.toarray(), rows, rtol=1e-13, atol=atol)
    return rows
