"""Warnings after sampling: divergences, tree depth, E-BFMI, R-hat, ESS.

Each problem gives one :class:`SamplerWarning` with its numbers, issued once
at the end of a run (thresholds as in Stan and ArviZ).
"""

import warnings

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
    """(chains, draws) -> (2 chains, draws // 2): halves of every chain."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)


def _rank_normalize(x):
    """Normal scores of the pooled average ranks (Vehtari et al. 2021, eq. 14)."""
    flat = x.ravel()
    _, inverse, counts = np.unique(flat, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)
    ranks = (upper - (counts - 1) / 2.0)[inverse]  # average rank of ties
    return ndtri((ranks - 3.0 / 8.0) / (flat.size + 0.25)).reshape(x.shape)


def _rhat(x):
    n = x.shape[1]
    within = x.var(axis=1, ddof=1).mean()
    between = n * x.mean(axis=1).var(ddof=1)
    return np.sqrt(((n - 1) / n * within + between / n) / within)


def rank_rhat(x):
    """Rank-normalized split R-hat, max of bulk and folded (Vehtari et al. 2021).

    Parameters
    ----------
    x : ndarray, shape (chains, draws)

    Returns
    -------
    float
    """
    s = _split(np.asarray(x, dtype=float))
    folded = np.abs(s - np.median(s))
    return max(_rhat(_rank_normalize(s)), _rhat(_rank_normalize(folded)))


def _autocovariance(x):
    n = x.shape[1]
    centered = x - x.mean(axis=1, keepdims=True)
    spec = np.fft.rfft(centered, n=2 * n, axis=1)
    return np.fft.irfft(spec * np.conjugate(spec), n=2 * n, axis=1)[:, :n] / n


def _ess(x):
    """ESS with Geyer's initial monotone sequence (Stan's estimator)."""
    chains, n = x.shape
    acov = _autocovariance(x).mean(axis=0)
    mean_var = acov[0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n + (x.mean(axis=1).var(ddof=1) if chains > 1 else 0.0)
    rho = 1.0 - (mean_var - acov) / var_plus
    rho[0] = 1.0
    t, total, last_pair = 0, 0.0, np.inf
    while t + 1 < n - 2:
        pair = rho[t] + rho[t + 1]
        if pair < 0.0:
            break
        last_pair = min(pair, last_pair)  # initial monotone sequence
        total += last_pair
        t += 2
    tau = max(-1.0 + 2.0 * total, 1.0 / np.log10(chains * n))
    return chains * n / tau


def bulk_ess(x):
    """Bulk effective sample size: ESS of the rank-normalized split chains.

    Parameters
    ----------
    x : ndarray, shape (chains, draws)

    Returns
    -------
    float
    """
    s = _split(np.asarray(x, dtype=float))
    if np.ptp(s) < np.finfo(float).resolution:
        return float(s.size)
    return _ess(_rank_normalize(s))


def _convergence_messages(idata, chains, n_draws):
    msgs = []
    if chains < 2 or n_draws < 4:
        return msgs
    rhats, esss = [], []
    for var in idata["posterior"].data_vars.values():
        flat = var.values.reshape(chains, n_draws, -1)
        for k in range(flat.shape[2]):
            rhats.append(rank_rhat(flat[:, :, k]))
            esss.append(bulk_ess(flat[:, :, k]))
    max_rhat, min_ess = np.nanmax(rhats), np.nanmin(esss)
    if max_rhat > MAX_RHAT:
        msgs.append(f"max R-hat is {max_rhat:.3f} (> {MAX_RHAT}); chains have not mixed")
    if min_ess < MIN_ESS_PER_CHAIN * chains:
        msgs.append(f"min bulk ESS is {min_ess:.0f} (< {MIN_ESS_PER_CHAIN} per chain "
                    f"x {chains} chains); estimates are unreliable")
    return msgs


def sampler_warnings(idata, max_depth):
    """Return the diagnostic messages of a run (empty when all is well).

    Parameters
    ----------
    idata : DataTree
        With ``posterior`` and ``sample_stats``.
    max_depth : int or None
        NUTS maximum tree depth (None for static HMC).

    Returns
    -------
    list of str
    """
    ss = idata["sample_stats"]
    stats = {k: ss[k].values for k in ("diverging", "tree_depth", "energy")}
    chains, n_draws = stats["energy"].shape
    if n_draws == 0:
        return []
    return _sampler_messages(stats, max_depth) + _convergence_messages(idata, chains, n_draws)


def warn_sampler(idata, max_depth):
    """Issue one :class:`SamplerWarning` per problem found by :func:`sampler_warnings`."""
    for msg in sampler_warnings(idata, max_depth):
        warnings.warn(msg, SamplerWarning, stacklevel=4)
