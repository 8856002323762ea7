"""Simulation-based calibration (SBC; Talts et al. 2018, arXiv:1804.06788) of
NUTS on time-series and Gaussian-process models: a hidden Markov model
(``ld.hmm_marginal``), a GARCH(1,1) (``ld.scan`` with an expression bound)
and a latent GP under Poisson counts (``ld.gp.exp_quad``, ``ld.cholesky``),
and that GP's posterior against an importance-sampling reference. The AR(5)
posterior is checked against its exact answer in
test_time_series_distributions.py, a GARCH recovery in test_scan.py.

SBC: draw parameters from the prior, data from the model given them (numpy
loops, independent of the compiled code), sample the posterior with
``ld.nuts``, and take the rank of each true value among M thinned posterior
draws. If the log density, its gradient, the transforms and the sampler are
all right, each rank is uniform on 0..M; a wrong density or a sampler that
does not reach the posterior shows up as a skewed or U-shaped histogram.
Each model is compiled once and given each replication's data with
``set_data`` (of the same length: the parameter vectors have the data's).

Every replication runs 2 chains of 100 (300 for GARCH) kept draws thinned to
M = 20 (21 ranks, in 7 bins of 3), L = 100 replications per model. Per
quantity three statistics of the L ranks are tested: a chi-square test of
the 7 bins, the mean rank against M / 2 (a biased posterior), and the
variance of the ranks against the discrete uniform's (a posterior too
narrow, a U, or too wide, a hump); the last two as z-scores whose standard
errors come from the discrete uniform's moments. Every p-value must exceed
``FALSE_ALARM`` = 1e-3 divided by the number of statistics in the test
(Bonferroni), so a correct model fails a test with probability at most
about 1e-3. The seeds are fixed, so a test passes or fails
deterministically, but any change to the sampler's arithmetic draws fresh
ranks: 1e-3 keeps such a redraw from failing a correct model, while the
errors below give p-values of 1e-6 to 1e-40. The price is power: with
L = 100 a posterior off by half its sd in every replication (mean-rank z
about 4.6), 30% too narrow or 50% too wide (variance z about 4) is at the
edge of detection, a tenth of an sd (z about 1) is not seen.

Checked by hand with miscalibrated simulations (the model unchanged):
caught are HMM data shifted by 0.35 (half the noise; kept below as the
cheap ``test_sbc_detects_a_shifted_simulation``), the HMM's stay
probabilities swapped between the states (a transposed transition matrix:
U-shaped stay ranks), its stay prior Beta(9, 1) instead of Beta(8, 2), its
noise 20% larger, a GARCH recursion reading r_{t-2} for r_{t-1}, the GP's
f drawn with the upper Cholesky factor (the end point's ranks) and its
intercept shifted by 0.2 (just). Not caught at this L, as the power above
says: GARCH priors on (a1, b1) uniform on the triangle or with b1 / (1 -
a1) ~ Beta(1.5, 1), its first variance 3 instead of 1 (it fades within a
few steps), and the GP's length scale or amplitude off by sqrt(2) or 1.3:
twelve counts barely inform them. The length scale's convention is what
``test_latent_gp_posterior_matches_importance_sampling`` sees instead (z
of 13 against 4).

Sampler diagnostics per SBC test: at most ``MAX_DIVERGENCES`` divergent
transitions over its 20,000 to 60,000 kept ones (0 to 3 seen), a
rank-normalized split R-hat below ``MAX_RHAT`` in every replication (with
100 draws a chain R-hat is noisy, 1.04 to 1.11 at worst over 100
replications; a chain stuck in another mode gave 1.3 to 1.9), and a bulk
ESS of at least M / 2 for every quantity, so that the M thinned draws are
nearly independent (correlated draws push ranks to the ends, as a too
narrow posterior does).
"""

import math
import warnings
from typing import NamedTuple

import numpy as np
import pytest
from scipy import stats

import logdens as ld
from logdens.samplers.diagnostics import SamplerWarning, bulk_ess, rank_rhat

CHAINS = 2
M = 20  # thinned draws per replication: ranks 0..20
BINS = 7  # 21 ranks, 3 per bin
REPLICATIONS = 100
FALSE_ALARM = 1e-3
MAX_DIVERGENCES = 10
MAX_RHAT = 1.2


class Calibration(NamedTuple):
    """The ranks (replications, quantities) of the true values among M thinned
    draws, with the diagnostics of every replication."""

    ranks: np.ndarray
    divergences: int
    rhat: np.ndarray  # (replications,): the largest R-hat of each
    ess: np.ndarray  # (replications,): the smallest bulk ESS of each


def simulation_based_calibration(density, simulate, names, seed, draws, tune=300, init=None,
                                 target_accept=0.8, replications=REPLICATIONS):
    """Run SBC: ``simulate(rng) -> (truth, data)`` gives true values by name and
    data arrays for ``set_data``; ``init(rng)``, if given, the chains' start."""
    rng = np.random.default_rng(seed)
    thin = CHAINS * draws // M
    ranks, divergences, rhat, ess = [], 0, [], []
    for replication in range(replications):
        truth, data = simulate(rng)
        density.set_data(**data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplerWarning)  # short chains: ESS below 100 per chain
            idata = ld.nuts(density, draws=draws, tune=tune, chains=CHAINS, seed=replication,
                            target_accept=target_accept, init=None if init is None else init(rng),
                            progress=False, log_likelihood=False)
        kept = np.concatenate([idata.posterior[n].values.reshape(CHAINS, draws, -1) for n in names], axis=2)
        true = np.concatenate([np.ravel(truth[n]) for n in names])
        ranks.append(np.sum(kept[:, thin - 1::thin].reshape(M, -1) < true, axis=0))
        divergences += int(idata.sample_stats["diverging"].values.sum())
        rhat.append(np.max(rank_rhat(kept)))
        ess.append(np.min(bulk_ess(kept)))
    return Calibration(np.array(ranks), divergences, np.array(rhat), np.array(ess))


def rank_p_values(ranks):
    """p-values (3, quantities) of uniform ranks on 0..M: the chi-square test of
    the binned histogram, and two-sided z-tests of the mean and the variance."""
    L = len(ranks)
    values = np.arange(M + 1.0)
    variance = values.var()
    fourth = np.mean((values - values.mean()) ** 4)
    counts = np.stack([np.bincount(r * BINS // (M + 1), minlength=BINS) for r in ranks.T], axis=1)
    chi2 = stats.chisquare(counts, axis=0).pvalue
    z_mean = (ranks.mean(axis=0) - values.mean()) / math.sqrt(variance / L)
    z_var = (ranks.var(axis=0) - variance) / math.sqrt((fourth - variance ** 2) / L)
    return np.stack([chi2, 2 * stats.norm.sf(np.abs(z_mean)), 2 * stats.norm.sf(np.abs(z_var))])


def assert_calibrated(result, labels):
    """Uniform ranks (every p-value above the Bonferroni threshold) and sane
    sampler diagnostics; ``labels`` names the columns of the ranks."""
    p = rank_p_values(result.ranks)
    threshold = FALSE_ALARM / p.size
    for label, (chi2, mean, variance), column in zip(labels, p.T, result.ranks.T):
        histogram = np.bincount(column * BINS // (M + 1), minlength=BINS)
        assert min(chi2, mean, variance) > threshold, (label, histogram, column.mean(), chi2, mean, variance)
    assert result.divergences <= MAX_DIVERGENCES, result.divergences
    assert result.rhat.max() < MAX_RHAT, (result.rhat.argmax(), result.rhat.max())
    assert result.ess.min() >= M / 2, (result.ess.argmin(), result.ess.min())


# ----- a hidden Markov model -------------------------------------------------
# Two Gaussian regimes whose means have priors 8 sds apart: the posterior has
# no second mode with the labels swapped (it would be 64 nats down), so the
# means need no ordering (an ordered vector's transform couples them: the
# first's ESS fell to 20-60 of 200 draws, against 80 or more unordered).
HMM_T = 50
HMM_MU = np.array([-2.0, 2.0])


def hmm_model():
    """y_t ~ Normal(mu[z_t], sigma), z a Markov chain with P(stay in k) = stay[k],
    started from (1/2, 1/2); the data are y repeated for each state."""
    m = ld.Model()
    mu = m.param("mu", ld.Normal(HMM_MU, 0.5), shape=2)
    sigma = m.param("sigma", ld.LogNormal(math.log(0.7), 0.2))
    stay = m.param("stay", ld.Beta(8.0, 2.0), shape=2)
    transitions = ld.stack([ld.stack([stay[0], 1 - stay[0]]), ld.stack([1 - stay[1], stay[1]])])
    log_emissions = ld.Normal(mu, sigma).logpdf(m.data("y", np.zeros((HMM_T, 2))))  # (T, 2)
    m.potential("regimes", ld.hmm_marginal(log_emissions.T, transitions, np.full(2, 0.5)))
    return m.compile()


def simulate_hmm(rng, shift=0.0):
    """Parameters from the prior, the regimes by a loop over the chain, and y
    (plus ``shift``: a miscalibrated simulation)."""
    truth = {"mu": rng.normal(HMM_MU, 0.5), "sigma": math.exp(rng.normal(math.log(0.7), 0.2)),
             "stay": rng.beta(8.0, 2.0, size=2)}
    z = np.empty(HMM_T, dtype=int)
    z[0] = rng.integers(2)
    for t in range(1, HMM_T):
        z[t] = z[t - 1] if rng.uniform() < truth["stay"][z[t - 1]] else 1 - z[t - 1]
    y = truth["mu"][z] + truth["sigma"] * rng.normal(size=HMM_T) + shift
    return truth, {"y": np.repeat(y[:, None], 2, axis=1)}


def hmm_start(density):
    """Chains started near the prior means (never at the truth, which would
    hide a chain that cannot leave its start)."""
    centre = density.unconstrain({"mu": HMM_MU, "sigma": 0.7, "stay": np.full(2, 0.8)})
    return lambda rng: centre + 0.2 * rng.normal(size=(CHAINS, density.dim))


@pytest.fixture(scope="module")
def hmm():
    return hmm_model()


@pytest.mark.slow
def test_sbc_of_a_two_state_hidden_markov_model(hmm):
    """50 observations: both means, the noise and both stay probabilities."""
    result = simulation_based_calibration(hmm, simulate_hmm, ["mu", "sigma", "stay"], seed=1, draws=100,
                                          init=hmm_start(hmm))
    assert_calibrated(result, ["mu[0]", "mu[1]", "sigma", "stay[0]", "stay[1]"])


@pytest.mark.slow
def test_sbc_detects_a_shifted_simulation(hmm):
    """The same HMM with data shifted by half its typical noise, 20
    replications: the means' ranks pile up at 0 (the truth below almost every
    draw) and the check fails."""
    result = simulation_based_calibration(hmm, lambda rng: simulate_hmm(rng, shift=0.35), ["mu"], seed=2,
                                          draws=100, init=hmm_start(hmm), replications=20)
    with pytest.raises(AssertionError, match=r"\('mu\[0\]'"):
        assert_calibrated(result, ["mu[0]", "mu[1]"])


# ----- GARCH(1,1) ------------------------------------------------------------
GARCH_T = 100
GARCH_SIGMA2_0 = 1.0  # the variance before the first return, known


def garch_model():
    """tests/test_scan.py's GARCH(1,1) with a known first variance (that test's
    np.var(r) is a constant fixed at compile time, and would not follow
    set_data)."""
    m = ld.Model()
    omega = m.param("omega", ld.HalfNormal(1.0))
    a1 = m.param("a1", ld.Uniform(0, 1))
    b1 = m.param("b1", ld.Uniform(0, 1 - a1))
    previous = m.data("r_previous", np.zeros(GARCH_T))
    sigma2 = ld.scan(lambda s, rp: omega + a1 * rp * rp + b1 * s, GARCH_SIGMA2_0, previous)
    m.observe("r", ld.Normal(0.0, ld.sqrt(sigma2)), np.zeros(GARCH_T))
    return m.compile()


def simulate_garch(rng):
    a1 = rng.uniform()
    truth = {"omega": abs(rng.normal()), "a1": a1, "b1": rng.uniform(0, 1 - a1)}
    r, s = np.empty(GARCH_T), GARCH_SIGMA2_0
    for t in range(GARCH_T):
        s = truth["omega"] + truth["a1"] * (r[t - 1] if t else 0.0) ** 2 + truth["b1"] * s
        r[t] = math.sqrt(s) * rng.normal()
    return truth, {"r": r, "r_previous": np.concatenate([[0.0], r[:-1]])}


@pytest.mark.slow
def test_sbc_of_garch_1_1():
    """100 returns: omega and b1 are poorly separated (a long ridge), so 300
    draws per chain are thinned by 30."""
    result = simulation_based_calibration(garch_model(), simulate_garch, ["omega", "a1", "b1"], seed=3,
                                          draws=300, target_accept=0.9)
    assert_calibrated(result, ["omega", "a1", "b1"])


# ----- a latent GP under Poisson counts --------------------------------------
GP_X = np.linspace(0.0, 10.0, 12)
GP_JITTER = 1e-6


def gp_model(x, counts):
    """f = cholesky(K + jitter I) z (non-centred), counts ~ Poisson(exp(b + f)),
    K the squared-exponential kernel. The priors of alpha and rho are
    log-normal: a half-normal amplitude puts posterior mass at 0 (a long tail
    of log alpha) and a length scale the counts barely inform mixes slowly
    through L(rho) z; both made 100-draw chains too short."""
    m = ld.Model()
    alpha = m.param("alpha", ld.LogNormal(-0.3, 0.3))
    rho = m.param("rho", ld.LogNormal(0.4, 0.2))
    b = m.param("b", ld.Normal(1.0, 0.5))
    z = m.param("z", ld.Normal(0, 1), shape=len(x))
    K = ld.add_diag(ld.gp.exp_quad(m.data("x", x), alpha, rho), GP_JITTER)
    f = m.deterministic("f", ld.cholesky(K) @ z)
    m.observe("counts", ld.PoissonLog(b + f), counts)
    return m.compile()


def exp_quad(x, alpha, rho):
    """alpha^2 exp(-(x_i - x_j)^2 / (2 rho^2)) + jitter, batched over alpha and rho."""
    d2 = (x[:, None] - x[None, :]) ** 2
    alpha, rho = np.asarray(alpha)[..., None, None], np.asarray(rho)[..., None, None]
    return alpha ** 2 * np.exp(-0.5 * d2 / rho ** 2) + GP_JITTER * np.eye(len(x))


def gp_prior(rng, x, size=None):
    """Prior draws of alpha, rho, b and f = L z by numpy."""
    alpha, rho = np.exp(rng.normal(-0.3, 0.3, size)), np.exp(rng.normal(0.4, 0.2, size))
    b = rng.normal(1.0, 0.5, size)
    z = rng.normal(size=(() if size is None else (size,)) + (len(x),))
    f = np.einsum("...ij,...j->...i", np.linalg.cholesky(exp_quad(x, alpha, rho)), z)
    return {"alpha": alpha, "rho": rho, "b": b, "f": f}


def simulate_gp(rng):
    truth = gp_prior(rng, GP_X)
    return truth, {"counts": rng.poisson(np.exp(truth["b"] + truth["f"])).astype(float)}


@pytest.mark.slow
def test_sbc_of_a_latent_gp_poisson_regression():
    """12 points: the amplitude, the length scale, the intercept and f at every
    point. The counts say little about rho, so an error in the length scale
    (exp_quad's convention) is left to the next test."""
    result = simulation_based_calibration(gp_model(GP_X, np.zeros(len(GP_X))), simulate_gp,
                                          ["alpha", "rho", "b", "f"], seed=4, draws=100, target_accept=0.9)
    assert_calibrated(result, ["alpha", "rho", "b"] + [f"f[{i}]" for i in range(len(GP_X))])


@pytest.mark.slow
def test_latent_gp_posterior_matches_importance_sampling():
    """Six points with fixed counts: the posterior means of alpha, rho, b and
    the rates exp(b + f) from NUTS against self-normalized importance sampling
    from the prior (200,000 prior draws, every K factored by numpy): within 4
    standard errors, NUTS's (from its bulk ESS) and the reference's combined.
    Simulating with the length scale's convention halved (exp(-d^2 / rho^2))
    moves these means by up to 0.3 posterior sds, 10 of these standard
    errors; SBC does not see it."""
    x, counts = np.arange(6.0), np.array([1.0, 4.0, 6.0, 2.0, 0.0, 3.0])
    prior = gp_prior(np.random.default_rng(5), x, size=200_000)
    eta = prior["b"][:, None] + prior["f"]
    log_w = eta @ counts - np.exp(eta).sum(axis=1)  # the Poisson likelihood up to a constant
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    assert 1 / np.sum(w ** 2) > 5000  # the reference's own effective sample size
    values = np.column_stack([prior["alpha"], prior["rho"], prior["b"], np.exp(eta)])
    reference = w @ values
    reference_se = np.sqrt(w ** 2 @ (values - reference) ** 2)

    idata = ld.nuts(gp_model(x, counts), draws=1000, tune=500, chains=CHAINS, seed=6, target_accept=0.9,
                    progress=False, log_likelihood=False)
    post = {name: idata.posterior[name].values for name in ("alpha", "rho", "b", "f")}
    draws = np.concatenate([post["alpha"][..., None], post["rho"][..., None], post["b"][..., None],
                            np.exp(post["b"][..., None] + post["f"])], axis=2)
    assert idata.sample_stats["diverging"].values.sum() <= 2
    assert np.max(rank_rhat(draws)) < 1.02
    mcse = draws.std(axis=(0, 1)) / np.sqrt(bulk_ess(draws))
    z = (draws.mean(axis=(0, 1)) - reference) / np.sqrt(mcse ** 2 + reference_se ** 2)
    assert np.all(np.abs(z) < 4), z
