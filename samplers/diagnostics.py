"""Warnings after sampling: divergences, tree depth, E-BFMI, R-hat, ESS.

Each problem gives one message with its numbers (:func:`sampler_warnings`),
which the runners issue as one :class:`SamplerWarning` each at the end of a
run (thresholds as in Stan and ArviZ).
"""

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.special import ndtri

#: Thresholds users expect from Stan/ArviZ.
MIN_BFMI = 0.3
MAX_RHAT = 1.01
MIN_ESS_PER_CHAIN = 100


class SamplerWarning(UserWarning):
    """A sampling diagnostic outside its usual range."""


def e_bfmi(energy):
    """Energy Bayesian fraction of missing information per chain.

    ``E-BFMI = sum (E_i - E_{i-1})^2 / sum (E_i - mean E)^2`` (Betancourt 2016).

    Parameters
    ----------
    energy : ndarray, shape (chains, draws)

    Returns
    -------
    ndarray, shape (chains,)
    """
    energy = np.asarray(energy, dtype=float)
    num = np.sum(np.diff(energy, axis=1) ** 2, axis=1)
    den = np.sum((energy - energy.mean(axis=1, keepdims=True)) ** 2, axis=1)
    return num / den


def _sampler_messages(stats, max_depth):
    n = stats["diverging"].size
    msgs = []
    n_div = int(np.sum(stats["diverging"]))
    if n_div:
        msgs.append(f"{n_div} of {n} draws ({n_div / n:.1%}) after warmup are divergent; "
                    "increase target_accept or reparameterize")
    if max_depth:
        n_max = int(np.sum(stats["tree_depth"] >= max_depth))
        if n_max:
            msgs.append(f"{n_max} of {n} draws ({n_max / n:.1%}) reached the maximum "
                        f"tree depth {max_depth}; increase max_treedepth")
    if stats["energy"].shape[1] > 2:
        bfmi = e_bfmi(stats["energy"])
        low = np.flatnonzero(bfmi < MIN_BFMI)
        if low.size:
            vals = ", ".join(f"chain {c}: {bfmi[c]:.2f}" for c in low)
            msgs.append(f"low E-BFMI (< {MIN_BFMI}) in {low.size} chain(s) ({vals})")
    return msgs


def _split(x):
    """(chains, draws, k) -> (2 chains, draws // 2, k): halves of every chain."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)


#: Draws (chains x draws x columns) from which ``_rank_normalize`` sorts its
#: columns in threads: numpy's sort releases the GIL, and the diagnostics of
#: a many-chain run (1024 chains x 100 draws x 102 columns) took longer
#: than its sampling on one thread.
THREADED_RANKS = 1_000_000


def _rank_normalize(x):
    """Normal scores of pooled average ranks per column (Vehtari et al. 2021).

    Columns are sorted as rows of the transpose: along contiguous memory,
    argsort is several times faster than down the columns. Large inputs are
    ranked in groups of rows by a thread each (``THREADED_RANKS``).
    """
    flat = x.reshape(-1, x.shape[2])
    rows = np.ascontiguousarray(flat.T)
    n = rows.shape[1]
    scores = ndtri((np.arange(1.0, n + 1) - 3.0 / 8.0) / (n + 0.25))  # by rank: no ndtri per draw
    out = np.empty_like(rows)
    workers = min(os.cpu_count() or 1, rows.shape[0])
    if workers < 2 or rows.size < THREADED_RANKS:
        _normal_scores(rows, scores, out)
    else:
        bounds = np.linspace(0, rows.shape[0], workers + 1).astype(int)
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda a, b: _normal_scores(rows[a:b], scores, out[a:b]), bounds[:-1], bounds[1:]))
    return out.T.reshape(x.shape)


def _normal_scores(rows, scores, out):
    """Each row's normal scores into ``out``: ``scores[rank - 1]``, or for a row
    with ties (stuck chains, discrete values) the score of each average rank.
    Ties are found after the sort, so it need not be stable (numpy's default
    sort is 5x faster than the stable one on 18 x 8,000 draws)."""
    order = np.argsort(rows, axis=1)
    np.put_along_axis(out, order, scores[None, :], axis=1)
    ties = np.any(np.diff(np.take_along_axis(rows, order, axis=1), axis=1) == 0, axis=1)
    n = rows.shape[1]
    for j in np.flatnonzero(ties):
        _, inverse, counts = np.unique(rows[j], return_inverse=True, return_counts=True)
        ranks = (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]
        out[j] = ndtri((ranks - 3.0 / 8.0) / (n + 0.25))


def _rhat(x):
    n = x.shape[1]
    within = x.var(axis=1, ddof=1).mean(axis=0)
    between = n * x.mean(axis=1).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # constant draws: nan
        return np.sqrt(((n - 1) / n * within + between / n) / within)


def _as_3d(x):
    x = np.asarray(x, dtype=float)
    return x[:, :, None] if x.ndim == 2 else x


def rank_rhat(x):
    """Rank-normalized split R-hat, max of bulk and folded (Vehtari et al. 2021).

    Parameters
    ----------
    x : ndarray, shape (chains, draws) or (chains, draws, k)

    Returns
    -------
    float or ndarray of shape (k,)
    """
    s = _split(_as_3d(x))
    out = _rank_rhat(s, _rank_normalize(s))
    return out if np.ndim(x) == 3 else float(out[0])


def _rank_rhat(s, normalized):
    """``rank_rhat`` of split chains ``s`` whose rank-normalized draws are given."""
    folded = np.abs(s - np.median(s.reshape(-1, s.shape[2]), axis=0))
    return np.maximum(_rhat(normalized), _rhat(_rank_normalize(folded)))


def _ess(x):
    """ESS per column with Geyer's initial monotone sequence (Stan's estimator)."""
    chains, n, _ = x.shape
    centered = x - x.mean(axis=1, keepdims=True)
    spec = np.fft.rfft(centered, n=2 * n, axis=1)
    acov = np.fft.irfft(spec * np.conjugate(spec), n=2 * n, axis=1)[:, :n].mean(axis=0) / n
    mean_var = acov[0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if chains > 1:
        var_plus = var_plus + x.mean(axis=1).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # constant draws
        rho = 1.0 - (mean_var - acov) / var_plus
    rho[0] = 1.0
    m = 2 * ((n - 2) // 2)  # pairs (rho[t], rho[t + 1]) with t + 1 < n - 2
    pairs = rho[0:m:2] + rho[1:m:2]
    before_negative = np.cumprod(pairs >= 0.0, axis=0).astype(bool)
    monotone = np.minimum.accumulate(pairs, axis=0)  # initial monotone sequence
    total = np.sum(np.where(before_negative, monotone, 0.0), axis=0)
    tau = np.maximum(-1.0 + 2.0 * total, 1.0 / np.log10(chains * n))
    return chains * n / tau


def bulk_ess(x):
    """Bulk effective sample size: ESS of the rank-normalized split chains.

    Parameters
    ----------
    x : ndarray, shape (chains, draws) or (chains, draws, k)

    Returns
    -------
    float or ndarray of shape (k,)
    """
    s = _split(_as_3d(x))
    out = _bulk_ess(s, _rank_normalize(s))
    return out if np.ndim(x) == 3 else float(out[0])


def _bulk_ess(s, normalized):
    """``bulk_ess`` of split chains ``s`` whose rank-normalized draws are given."""
    constant = np.ptp(s.reshape(-1, s.shape[2]), axis=0) < np.finfo(float).resolution
    return np.where(constant, float(s.shape[0] * s.shape[1]), _ess(normalized))


def _convergence_messages(idata, chains, n_draws, min_ess=None):
    """R-hat above ``MAX_RHAT``, and a bulk ESS below ``min_ess`` (default
    ``MIN_ESS_PER_CHAIN`` per chain)."""
    msgs = []
    if chains < 2 or n_draws < 4:
        return msgs
    flat = np.concatenate([v.values.reshape(chains, n_draws, -1)
                           for v in idata["posterior"].data_vars.values()], axis=2)
    s = _split(flat)
    normalized = _rank_normalize(s)  # shared by R-hat and ESS
    max_rhat, ess_min = np.nanmax(_rank_rhat(s, normalized)), np.nanmin(_bulk_ess(s, normalized))
    if max_rhat > MAX_RHAT:
        msgs.append(f"max R-hat is {max_rhat:.3f} (> {MAX_RHAT}); chains have not mixed")
    if min_ess is not None and ess_min < min_ess:
        msgs.append(f"min bulk ESS is {ess_min:.0f} (< {min_ess}); estimates are unreliable")
    elif min_ess is None and ess_min < MIN_ESS_PER_CHAIN * chains:
        msgs.append(f"min bulk ESS is {ess_min:.0f} (< {MIN_ESS_PER_CHAIN} per chain "
                    f"x {chains} chains); estimates are unreliable")
    return msgs


def sampler_warnings(idata, max_depth, min_ess=None):
    """Return the diagnostic messages of a run (empty when all is well).

    Parameters
    ----------
    idata : DataTree
        With ``posterior`` and ``sample_stats``.
    max_depth : int or None
        NUTS maximum tree depth (None for static HMC, ChEES).
    min_ess : float, optional
        Total bulk ESS below which to warn; default ``MIN_ESS_PER_CHAIN`` per
        chain (many-chain samplers pass a total instead).

    Returns
    -------
    list of str
    """
    ss = idata["sample_stats"]
    stats = {k: ss[k].values for k in ("diverging", "tree_depth", "energy")}
    chains, n_draws = stats["energy"].shape
    if n_draws == 0:
        return []
    return (_sampler_messages(stats, max_depth)
            + _convergence_messages(idata, chains, n_draws, min_ess))
