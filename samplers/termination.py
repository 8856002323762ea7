"""The generalized no-U-turn criterion (Betancourt 2017, section A.4.2).

Contract: a trajectory segment with summed momentum ``rho`` and velocities
``v_left``, ``v_right`` at its two ends is turning when ``rho`` has a
non-positive projection on either end's velocity.  The criterion is symmetric
in its two ends, so a segment may be given in either direction.
"""

from ._jit import compiled


@compiled
def is_turning(v_left, v_right, rho):
    """Return True when the segment has turned back (stop building)."""
    a = 0.0
    b = 0.0
    for i in range(rho.shape[0]):  # explicit loop: BLAS call overhead dominates here
        a += v_left[i] * rho[i]
        b += v_right[i] * rho[i]
    return a <= 0.0 or b <= 0.0


@compiled
def is_turning_extended(v_left, v_right, rho, p_extra):
    """The criterion on ``rho + p_extra`` without allocating.

    Used for Stan's extra checks across neighbouring subtrees (stan-dev/stan
    PR 2800): one subtree plus the first point of its neighbour.
    """
    a = 0.0
    b = 0.0
    for i in range(rho.shape[0]):
        r = rho[i] + p_extra[i]
        a += v_left[i] * r
        b += v_right[i] * r
    return a <= 0.0 or b <= 0.0


@compiled
def is_turning_merged(v_first_a, v_last_a, rho_a, p_last_a,
                      v_first_b, v_last_b, rho_b, p_first_b):
    """The criterion for a trajectory made of two adjacent halves, ``a`` then ``b``.

    Three checks, as in Stan's ``build_tree`` (2.26+): the whole trajectory
    (``rho_a + rho_b`` between its outer ends), ``a`` extended by the first
    point of ``b``, and ``b`` extended by the last point of ``a``.  All six
    projections in one pass over the coordinates.

    Parameters
    ----------
    v_first_a, v_last_a : ndarray
        Velocities at the outer and the inner end of ``a``.
    rho_a : ndarray
        Summed momentum of ``a``.
    p_last_a : ndarray
        Momentum at the inner end of ``a`` (next to ``b``).
    v_first_b, v_last_b, rho_b, p_first_b : ndarray
        The same for ``b`` (first = inner end, last = outer end).

    Returns
    -------
    bool
        True when any of the three segments has turned.
    """
    a1 = a2 = b1 = b2 = c1 = c2 = 0.0
    for i in range(rho_a.shape[0]):
        ext_a = rho_a[i] + p_first_b[i]
        ext_b = rho_b[i] + p_last_a[i]
        rho = rho_a[i] + rho_b[i]
        a1 += v_first_a[i] * ext_a
        a2 += v_first_b[i] * ext_a
        b1 += v_last_a[i] * ext_b
        b2 += v_last_b[i] * ext_b
        c1 += v_first_a[i] * rho
        c2 += v_last_b[i] * rho
    return min(a1, a2, b1, b2, c1, c2) <= 0.0
