"""Iterative NUTS trajectory building (Stan's NUTS, without recursion).

Contract: :func:`nuts_transition` draws a momentum, doubles a leapfrog
trajectory in random directions until the generalized no-U-turn criterion
(with Stan's extra checks across neighbouring subtrees) fires, a subtree
diverges, or the maximum depth is reached (or the interrupt flag is set, see
:class:`TreeWork`), and returns a point drawn from the
trajectory: multinomially inside each subtree, with biased progressive
sampling at the top level (Betancourt 2017, appendix A.3.2).

The recursion of Stan's ``build_tree`` is replaced by a stack of pending left
subtrees, one slot per level: after leaf ``k`` of a subtree, one internal node
of the recursion completes per trailing one bit of ``k`` (``m`` of them); the
leaf is written to slot ``m`` and the pending subtrees of slots ``0 .. m-1``
are merged into it in the recursion's (post-) order, drawing the same random
numbers.  Slot ``m`` is free then, as bit ``m`` of ``k`` is zero, so no
subtree is ever copied.
The tests check this against a recursive reference.
"""

import math
from typing import NamedTuple

import numpy as np

from ._jit import compiled, inlined
from .integrator import leapfrog
from .metric import hamiltonian, sample_momentum, velocity
from .rng import uniform
from .termination import is_turning_merged


# Rows of TreeWork.ends (per direction: 0 backward, 1 forward).
Q, P, G, V = range(4)
# Rows of TreeWork.slots, per subtree slot.
RHO, P_BEG, V_BEG, P_LAST, V_LAST, Q_PROP, G_PROP = range(7)
# Rows of TreeWork.slot_scalars, per subtree slot.
LP_PROP, E_PROP, LSW = range(3)
# Rows of TreeWork.traj.
RHO_TRAJ, P_OLD, V_OLD = range(3)


class TreeWork(NamedTuple):
    """Preallocated buffers of one chain's trajectory (no allocation per step),
    and the flag that ends it early.

    Few arrays indexed by constant rows rather than many small arrays: numba
    reference-counts every array view it creates, with an atomic operation,
    and at cheap gradients that cost dominated a transition.

    Attributes
    ----------
    ends : ndarray, shape (4, 2, dim)
        Position, momentum, gradient and velocity (rows ``Q, P, G, V``) at
        the backward (0) and forward (1) end of the trajectory.
    end_lp : ndarray, shape (2,)
        Log density at each end.
    slots : ndarray, shape (7, max_depth + 1, dim)
        Per subtree slot: summed momentum, momentum and velocity at its first
        and last leaf, and the multinomial proposal's position and gradient.
        Slot ``j`` holds the pending left subtree of ``2**j`` leaves (or the
        finished subtree).
    slot_scalars : ndarray, shape (3, max_depth + 1)
        Per slot: the proposal's log density and energy, and the log of the
        summed multinomial weights.
    traj : ndarray, shape (3, dim)
        Summed momentum of the whole trajectory, and the momentum and
        velocity at the end being extended, before the extension.
    interrupt : ndarray of int64, shape (1,)
        Nonzero asks the transition to stop after its current leapfrog step
        (Ctrl-C, or another chain failed); shared by every chain and set
        from another thread.  A transition cut short is not a valid draw.
    """

    ends: np.ndarray
    end_lp: np.ndarray
    slots: np.ndarray
    slot_scalars: np.ndarray
    traj: np.ndarray
    interrupt: np.ndarray


class TransitionInfo(NamedTuple):
    """Diagnostics of one transition (Stan's sampler parameters)."""

    accept_stat: float
    n_steps: int
    depth: int
    diverging: bool
    energy: float
    energy_error: float


class SubtreeStats(NamedTuple):
    """What building one subtree reports to the top level."""

    valid: bool
    slot: int
    n_steps: int
    sum_accept: float
    diverging: bool


def make_work(dim, max_depth, interrupt=None):
    """Allocate the :class:`TreeWork` buffers of one chain (in Python: the
    compiled loops never allocate).

    Parameters
    ----------
    dim, max_depth : int
    interrupt : ndarray of int64, shape (1,), optional
        The shared stop flag; a fresh (unset) one by default.

    Returns
    -------
    TreeWork
    """
    n = max_depth + 1
    if interrupt is None:
        interrupt = np.zeros(1, dtype=np.int64)
    return TreeWork(np.zeros((4, 2, dim)), np.zeros(2), np.zeros((7, n, dim)),
                    np.zeros((3, n)), np.zeros((3, dim)), interrupt)


@inlined
def log_add_exp(a, b):
    """Return ``log(exp(a) + exp(b))`` without overflow; -inf safe.

    Inlined: called both by :func:`nuts_transition` (compiled inside the
    transition's entry point) and by a helper, a helper would be compiled
    twice (numba keys a helper's compilation by its caller's options).
    """
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


@compiled
def _set_leaf(slots, sc, s, ends, d, lp, h, log_weight):
    """Make slot ``s`` the one-point subtree at the integrator state of end ``d``."""
    for i in range(slots.shape[2]):
        p, v = ends[P, d, i], ends[V, d, i]
        slots[RHO, s, i] = p
        slots[P_BEG, s, i] = p
        slots[V_BEG, s, i] = v
        slots[P_LAST, s, i] = p
        slots[V_LAST, s, i] = v
        slots[Q_PROP, s, i] = ends[Q, d, i]
        slots[G_PROP, s, i] = ends[G, d, i]
    sc[LP_PROP, s] = lp
    sc[E_PROP, s] = h
    sc[LSW, s] = log_weight


@compiled
def _take_proposal(slots, sc, dst, src):
    for i in range(slots.shape[2]):
        slots[Q_PROP, dst, i] = slots[Q_PROP, src, i]
        slots[G_PROP, dst, i] = slots[G_PROP, src, i]
    sc[LP_PROP, dst] = sc[LP_PROP, src]
    sc[E_PROP, dst] = sc[E_PROP, src]


@compiled
def merge_subtrees(slots, sc, left, right, rng):
    """Merge subtree ``left`` into its successor ``right``; True if turning.

    The merged subtree replaces ``right`` (which already sits in the slot of
    the merged tree's level, so nothing is moved).  Multinomial sampling: the
    merged proposal stays the right one with probability
    ``w_right / (w_left + w_right)`` (one uniform, always drawn, as in Stan).
    Then the no-U-turn criterion on the merged subtree and on each half
    extended by the neighbouring point of the other half.
    """
    lsw = log_add_exp(sc[LSW, left], sc[LSW, right])
    if not uniform(rng) < math.exp(sc[LSW, right] - lsw):
        _take_proposal(slots, sc, right, left)
    sc[LSW, right] = lsw
    l, r = left, right
    turning = is_turning_merged(slots[V_BEG, l], slots[V_LAST, l], slots[RHO, l],
                                slots[P_LAST, l], slots[V_BEG, r], slots[V_LAST, r],
                                slots[RHO, r], slots[P_BEG, r])
    for i in range(slots.shape[2]):
        slots[RHO, r, i] += slots[RHO, l, i]
        slots[P_BEG, r, i] = slots[P_BEG, l, i]
        slots[V_BEG, r, i] = slots[V_BEG, l, i]
    return turning


@compiled
def build_subtree(f, fdata, idata, metric, eps, depth, direction, h0,
                  max_energy_error, rng, work):
    """Extend the trajectory end ``direction`` by a subtree of ``2**depth`` steps.

    Returns
    -------
    SubtreeStats
        ``valid`` is False when a leaf diverged, an inner subtree turned or
        ``work.interrupt`` was set; the subtree then must not be used.
        ``slot`` holds the subtree.
    """
    d = direction
    signed_eps = eps if d == 1 else -eps
    ends, slots, sc = work.ends, work.slots, work.slot_scalars
    q, p, g, v = ends[Q, d], ends[P, d], ends[G, d], ends[V, d]
    n_leaves = 1 << depth
    sum_accept = 0.0
    slot = 0
    for k in range(n_leaves):
        lp = leapfrog(f, fdata, idata, metric, signed_eps, q, p, g, v)
        work.end_lp[d] = lp
        h = hamiltonian(lp, p, v)
        log_weight = h0 - h
        sum_accept += 1.0 if log_weight > 0.0 else math.exp(log_weight)
        if h - h0 > max_energy_error:
            return SubtreeStats(False, 0, k + 1, sum_accept, True)
        if work.interrupt[0] != 0:  # read after every gradient: 2**depth can be huge
            return SubtreeStats(False, 0, k + 1, sum_accept, False)
        # Leaf k completes one inner node per trailing one bit of k; the
        # merged subtree then has that many levels and waits in that slot.
        slot = 0
        while (k >> slot) & 1:
            slot += 1
        _set_leaf(slots, sc, slot, ends, d, lp, h, log_weight)
        for level in range(slot):
            if merge_subtrees(slots, sc, level, slot, rng):
                return SubtreeStats(False, 0, k + 1, sum_accept, False)
    return SubtreeStats(True, slot, n_leaves, sum_accept, False)


@compiled
def _start_trajectory(metric, rng, q, g, lp, work):
    """Put the start point at both ends with a fresh momentum; return H0."""
    ends, traj = work.ends, work.traj
    p0, v0 = ends[P, 0], ends[V, 0]
    sample_momentum(metric, rng, p0)
    velocity(metric, p0, v0)
    for d in range(2):
        work.end_lp[d] = lp
        for i in range(q.shape[0]):
            ends[Q, d, i] = q[i]
            ends[G, d, i] = g[i]
            ends[P, d, i] = p0[i]
            ends[V, d, i] = v0[i]
    for i in range(q.shape[0]):
        traj[RHO_TRAJ, i] = p0[i]
    return hamiltonian(lp, p0, v0)


@compiled
def _trajectory_turned(work, s, d):
    """Top-level checks after appending subtree ``s`` at end ``d``.

    The old trajectory and the new subtree are the two halves of the root
    of the tree, so the checks are those of :func:`merge_subtrees` with the
    old part's end before the extension as its inner end.
    """
    ends, slots, traj = work.ends, work.slots, work.traj
    turning = is_turning_merged(ends[V, 1 - d], traj[V_OLD], traj[RHO_TRAJ], traj[P_OLD],
                                slots[V_BEG, s], ends[V, d], slots[RHO, s], slots[P_BEG, s])
    for i in range(traj.shape[1]):
        traj[RHO_TRAJ, i] += slots[RHO, s, i]
    return turning


@compiled
def _take_sample(work, s, q, g):
    """Copy the proposal of slot ``s`` into the current sample ``q, g``."""
    slots = work.slots
    for i in range(q.shape[0]):
        q[i] = slots[Q_PROP, s, i]
        g[i] = slots[G_PROP, s, i]


@inlined
def nuts_transition(f, fdata, idata, metric, eps, max_depth, max_energy_error,
                    rng, q, g, lp, work):
    """One NUTS transition from ``(q, g, lp)``; ``q`` and ``g`` are updated in place.

    Parameters
    ----------
    f, fdata, idata : the model's numba entry
    metric : Metric
    eps : float
        Step size.
    max_depth : int
        Maximum tree depth (at most ``2**max_depth - 1`` steps).
    max_energy_error : float
        A leaf whose energy exceeds the initial one by more than this is a
        divergence (Stan: 1000).
    rng : ndarray of uint64
    q, g : ndarray
        Current position and gradient; overwritten with the new sample.
    lp : float
        Log density at ``q``.
    work : TreeWork
        When ``work.interrupt`` is set the transition ends after the current
        leapfrog step; its result is then not a valid draw (callers drop it).

    Returns
    -------
    lp : float
        Log density at the new sample.
    info : TransitionInfo
    """
    h0 = _start_trajectory(metric, rng, q, g, lp, work)
    ends, traj, sc = work.ends, work.traj, work.slot_scalars
    lsw_traj, e_sample = 0.0, h0
    # np.int64, not a literal 0: numba would otherwise also compile
    # build_subtree for the literal type of the first iteration (about 2 s).
    depth, n_steps, sum_accept, diverging = np.int64(0), 0, 0.0, False
    while depth < max_depth:
        d = 1 if uniform(rng) > 0.5 else 0
        for i in range(q.shape[0]):
            traj[P_OLD, i] = ends[P, d, i]
            traj[V_OLD, i] = ends[V, d, i]
        st = build_subtree(f, fdata, idata, metric, eps, depth, d, h0,
                           max_energy_error, rng, work)
        n_steps += st.n_steps
        sum_accept += st.sum_accept
        if not st.valid:
            diverging = st.diverging
            break
        depth += 1
        s = st.slot
        # Biased progressive sampling: favour the new subtree.
        if sc[LSW, s] > lsw_traj or uniform(rng) < math.exp(sc[LSW, s] - lsw_traj):
            _take_sample(work, s, q, g)
            lp, e_sample = sc[LP_PROP, s], sc[E_PROP, s]
        lsw_traj = log_add_exp(lsw_traj, sc[LSW, s])
        if _trajectory_turned(work, s, d):
            break
    info = TransitionInfo(sum_accept / max(n_steps, 1), n_steps, depth,
                          diverging, e_sample, e_sample - h0)
    return lp, info
