"""ZeroInflatedNegativeBinomial, HurdlePoisson and HurdleNegativeBinomial.

The contract checks of ``test_distributions.py`` run here over this file's
own rows (the shared case table is not edited; its helpers are imported):
values against scipy or mpmath, the grad kernel's value, compiled against
plain Python, partials against finite differences, summand tags, keep
subsets, out-of-support and invalid parameters. Then what is particular to
these laws: the mass sums to 1, partials in the tails against mpmath,
random draws against the pmf, a stress grid and one compiled model each.

Tolerances: values 1e-12 relative (rows with a note say why they are
looser); partials 1e-6 against finite differences (the 5-point stencil, as
in ``test_distributions``) and 1e-9 against mpmath (the kernels' summands
are each exact to rounding; where two of them cancel, at x = 1 for tiny
rates, the sum keeps an absolute error ~eps / rate, bounded per point).
"""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import logdens as ld
from case_table import case
from cases_discrete import mp_ref
from engine_helpers import check_gradient
from test_distributions import (EPS, _compiled_x_valid, args_of, check_partials, outside_points,
                                value_and_magnitude)
from logdens.distributions.frozen import InvalidArgumentError
from logdens.distributions.hurdle_negative_binomial import HurdleNegativeBinomial
from logdens.distributions.hurdle_poisson import HurdlePoisson
from logdens.distributions.zero_inflated_negative_binomial import ZeroInflatedNegativeBinomial

DISTS = (ZeroInflatedNegativeBinomial, HurdlePoisson, HurdleNegativeBinomial)

# The plain-Python kernels run on numpy scalars here, which warn where a
# quotient overflows to inf as intended (phi / mu at mu = 1e-300).
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


# ------------------------------------------------------------------ references


def _nbinom(mu, phi):
    """Stan's NB(mu, phi) in scipy's parameterization."""
    return stats.nbinom(phi, phi / (mu + phi))


def _zinb_scipy(x, zi, mu, phi):
    d = _nbinom(mu, phi)
    with np.errstate(divide="ignore"):
        return np.where(x == 0, np.log(zi + (1 - zi) * d.pmf(0)), np.log1p(-zi) + d.logpmf(x))


def _hurdle_scipy(d, x, psi):
    with np.errstate(divide="ignore"):
        return np.where(x == 0, np.log1p(-psi), np.log(psi) + d.logpmf(x) - d.logsf(0))


def _mp_nb(x, mu, phi):
    """log NB(x | mu, phi); the logs of mu / (mu + phi) and phi / (mu + phi) as
    -log1p(phi / mu) and -log1p(mu / phi), which mpmath keeps exact also where
    mu / phi = 1e-310 (1 + 1e-310 would need 310 digits)."""
    return (mp.loggamma(x + phi) - mp.loggamma(phi) - mp.loggamma(x + 1)
            - x * mp.log1p(phi / mu) - phi * mp.log1p(mu / phi))


def _mp_zinb(x, zi, mu, phi):
    if x == 0:
        return mp.log(zi + (1 - zi) * mp.exp(_mp_nb(x, mu, phi)))
    return mp.log(1 - zi) + _mp_nb(x, mu, phi)


def _mp_hurdle_poisson(x, psi, rate):
    if x == 0:
        return mp.log(1 - psi)
    return mp.log(psi) + x * mp.log(rate) - mp.loggamma(x + 1) - mp.log(mp.expm1(rate))


def _mp_hurdle_nb(x, psi, mu, phi):
    if x == 0:
        return mp.log(1 - psi)
    return mp.log(psi) + _mp_nb(x, mu, phi) - mp.log(-mp.expm1(_mp_nb(0, mu, phi)))


ZINB = _zinb_scipy
ZINB_MP = mp_ref(_mp_zinb)
HP = lambda x, psi, rate: _hurdle_scipy(stats.poisson(rate), x, psi)  # noqa: E731
HP_MP = mp_ref(_mp_hurdle_poisson)
HNB = lambda x, psi, mu, phi: _hurdle_scipy(_nbinom(mu, phi), x, psi)  # noqa: E731
HNB_MP = mp_ref(_mp_hurdle_nb)

# mpmath rows: scipy's nbinom is off by 1e-8 to 1e-7 at phi = 1e8 and mu = 1e-8.
CASES = [
    case(ZeroInflatedNegativeBinomial, [0, 1, 3, 10, 40], ZINB, zi=0.2, mu=3.0, phi=2.0),
    case(ZeroInflatedNegativeBinomial, [0, 1, 5], ZINB, zi=0.0, mu=3.0, phi=2.0, note="zi=0"),
    case(ZeroInflatedNegativeBinomial, [0, 1, 2], ZINB, zi=1.0, mu=3.0, phi=2.0, note="zi=1"),
    case(ZeroInflatedNegativeBinomial, [0, 1, 5, 100], ZINB_MP, zi=0.4, mu=5.0, phi=1e-3,
         note="tiny phi"),
    case(ZeroInflatedNegativeBinomial, [0, 1, 2], ZINB_MP, zi=0.3, mu=1e-8, phi=3.0, note="tiny mu"),
    case(ZeroInflatedNegativeBinomial, [0, 1, 5, 20], ZINB_MP, zi=0.1, mu=5.0, phi=1e8, note="phi 1e8"),
    case(ZeroInflatedNegativeBinomial, [0, 1, 1000, 1e6], ZINB_MP, rtol=5e-10, zi=1e-6, mu=1e6,
         phi=0.5, note="mu 1e6, zero mass from both parts; at x = 1e6 lgamma(x + phi) - lgamma(phi) "
                       "and lgamma(x + 1) ~ 1.3e7 cancel to ~-15, each rounded: NegativeBinomial's "
                       "own 5.6e-11 relative there (seen: 5.9e-11; bound eps 1.3e7 * 2 / 15 ~ 4e-10)"),
    case(ZeroInflatedNegativeBinomial, [0, 1e4], ZINB_MP, rtol=1e-11, zi=1e-300, mu=1e4, phi=1e3,
         note="NB(0) underflows; at x = 1e4 lgamma(x + phi) and lgamma(x + 1) ~ 8e4 cancel to "
              "-6.7, each rounded: eps 1.6e5 / 6.7 ~ 5e-12 (seen: 1.8e-12)"),
    case(ZeroInflatedNegativeBinomial, [0, 1, 20], ZINB_MP, zi=0.999, mu=20.0, phi=5.0,
         note="zi near 1"),
    case(ZeroInflatedNegativeBinomial, [0, 1, 3], ZINB_MP, zi=1e-12, mu=0.5, phi=1.0, note="zi near 0"),

    case(HurdlePoisson, [0, 1, 2, 5, 30], HP, psi=0.7, rate=3.5),
    case(HurdlePoisson, [0, 1], HP, psi=0.0, rate=3.5, note="psi=0 point mass"),
    case(HurdlePoisson, [0, 1, 4], HP, psi=1.0, rate=3.5, note="psi=1 truncated Poisson"),
    case(HurdlePoisson, [0, 1, 2, 3], HP_MP, psi=0.3, rate=1e-8, note="tiny rate"),
    case(HurdlePoisson, [1, 2], HP_MP, rtol=1e-6, psi=1.0, rate=1e-8,
         note="tiny rate, psi=1: lp(1) = -rate/2 = -5e-9 is x log(rate) = -18.4 plus "
              "-log(expm1(rate)) = 18.4, two summands each rounded: 4e-15 absolute, 8e-7 relative"),
    case(HurdlePoisson, [0, 1, 999_000, 1_000_000, 1_003_000], HP_MP, rtol=5e-10, psi=0.5, rate=1e6,
         note="huge rate at the mode: x log(rate) ~ lgamma(x + 1) ~ 1.3e7 cancel to ~-8, "
              "as in the Poisson row of cases_discrete (seen: ~1e-10)"),
    case(HurdlePoisson, [0, 1, 800], HP_MP, psi=0.6, rate=800.0, note="exp(rate) overflows"),
    case(HurdlePoisson, [0, 1, 50], HP_MP, psi=1e-10, rate=50.0, note="psi near 0"),
    case(HurdlePoisson, [0, 1, 5], HP_MP, psi=1.0 - 1e-10, rate=2.0, note="psi near 1"),

    case(HurdleNegativeBinomial, [0, 1, 3, 10, 40], HNB, psi=0.3, mu=3.0, phi=2.0),
    case(HurdleNegativeBinomial, [0, 1], HNB, psi=0.0, mu=3.0, phi=2.0, note="psi=0 point mass"),
    case(HurdleNegativeBinomial, [0, 1, 4], HNB, psi=1.0, mu=3.0, phi=2.0, note="psi=1 truncated"),
    case(HurdleNegativeBinomial, [0, 1, 5, 100, 1e4], HNB_MP, psi=0.5, mu=5.0, phi=1e-3,
         note="tiny phi"),
    case(HurdleNegativeBinomial, [0, 1, 2], HNB_MP, psi=0.9, mu=1e-8, phi=3.0, note="tiny mu"),
    case(HurdleNegativeBinomial, [1, 2], HNB_MP, rtol=1e-6, psi=1.0, mu=1e-8, phi=3.0,
         note="tiny mu, psi=1: lp(1) ~ -mu (1 + 1/phi)/2 is a sum of summands of size "
              "log(mu) ~ 18 and log(phi), each rounded: ~4e-15 absolute, ~1e-6 relative"),
    case(HurdleNegativeBinomial, [0, 1, 5, 20], HNB_MP, psi=0.4, mu=5.0, phi=1e8, note="phi 1e8"),
    case(HurdleNegativeBinomial, [0, 1, 1000, 1e6], HNB_MP, rtol=5e-10, psi=0.5, mu=1e6, phi=0.5,
         note="mu 1e6: at x = 1e6 the negative binomial's cancellation, as in the row above"),
    case(HurdleNegativeBinomial, [0, 1, 1e4], HNB_MP, rtol=1e-11, psi=0.2, mu=1e4, phi=1e3,
         note="NB(0) underflows; at x = 1e4 the cancellation of the row above (seen: 1.4e-12)"),
    case(HurdleNegativeBinomial, [0, 1, 2], HNB_MP, psi=0.5, mu=1e-300, phi=1e10,
         note="mu / phi subnormal: NB(0) = exp(-mu)"),
    case(HurdleNegativeBinomial, [0, 1, 50], HNB_MP, psi=1e-10, mu=2.0, phi=0.5, note="psi near 0"),
    case(HurdleNegativeBinomial, [0, 1, 5], HNB_MP, psi=1.0 - 1e-10, mu=2.0, phi=0.5,
         note="psi near 1"),
]

INVALID = [
    (ZeroInflatedNegativeBinomial, dict(zi=-0.1, mu=3.0, phi=2.0), "zi"),
    (ZeroInflatedNegativeBinomial, dict(zi=1.1, mu=3.0, phi=2.0), "zi"),
    (ZeroInflatedNegativeBinomial, dict(zi=0.2, mu=0.0, phi=2.0), "mu"),
    (ZeroInflatedNegativeBinomial, dict(zi=0.2, mu=-1.0, phi=2.0), "mu"),
    (ZeroInflatedNegativeBinomial, dict(zi=0.2, mu=3.0, phi=0.0), "phi"),
    (ZeroInflatedNegativeBinomial, dict(zi=0.2, mu=3.0, phi=-2.0), "phi"),
    (HurdlePoisson, dict(psi=-0.1, rate=3.0), "psi"),
    (HurdlePoisson, dict(psi=1.1, rate=3.0), "psi"),
    (HurdlePoisson, dict(psi=0.5, rate=0.0), "rate"),
    (HurdlePoisson, dict(psi=0.5, rate=-1.0), "rate"),
    (HurdleNegativeBinomial, dict(psi=-0.1, mu=3.0, phi=2.0), "psi"),
    (HurdleNegativeBinomial, dict(psi=1.1, mu=3.0, phi=2.0), "psi"),
    (HurdleNegativeBinomial, dict(psi=0.5, mu=0.0, phi=2.0), "mu"),
    (HurdleNegativeBinomial, dict(psi=0.5, mu=3.0, phi=-2.0), "phi"),
]


def by_case(fn):
    return pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])(fn)


def by_dist(fn):
    return pytest.mark.parametrize("dist", DISTS, ids=[d.spec.name for d in DISTS])(fn)


def _first_case(dist):
    return next(c for c in CASES if c.dist is dist)


# ------------------------------------------------------ the shared contract


@by_case
def test_logpdf_matches_reference(case):
    got = case.dist(**case.params).logpdf(case.x)
    want = case.reference(np.asarray(case.x, dtype=float), **case.params)
    np.testing.assert_allclose(got, want, rtol=case.rtol, atol=0)


@by_case
def test_compiled_and_plain_kernels_agree_with_logpdf(case):
    """The grad kernel's value is ``logpdf``'s to a few ulps of the summands'
    magnitude (CPython's lgamma and libm's may differ by an ulp), compiled
    (the public numba loop) and plain Python alike; the partials agree."""
    spec = case.dist.spec
    lp, grads = case.dist(**case.params).logpdf_grad(case.x)
    for i, point in enumerate(zip(*args_of(case))):
        result = spec.logpdf_grad(*point, spec.keep_all)
        _, magnitude = value_and_magnitude(spec, list(point), spec.keep_all)
        for value in (lp[i], spec.logpdf(*point)):
            assert value == result[0] or abs(value - result[0]) <= 8 * EPS * magnitude
        for name, partial in zip(spec.arg_names, result[1:]):
            if name in grads:
                np.testing.assert_allclose(partial, grads[name][i], rtol=1e-12, atol=1e-300)
        assert result[1] == 0.0  # d_x of a discrete value


@by_case
def test_partials_match_finite_differences(case):
    spec = case.dist.spec
    check_partials(spec, args_of(case), spec.keep_all, lambda p: spec.logpdf_grad(*p, spec.keep_all)[1:])


@by_case
def test_summand_tags_and_keep_subsets(case):
    """Each summand alone: its partials are 0 in every argument outside its tag,
    and the summands, kept one at a time, add up to the full value and partials.
    Dropping one leaves partials that still match finite differences."""
    spec = case.dist.spec
    n = len(spec.summands)
    args = args_of(case)
    for point in zip(*args):
        full = spec.logpdf_grad(*point, spec.keep_all)
        if not np.isfinite(full[0]):
            continue
        parts = [spec.logpdf_grad(*point, tuple(j == k for j in range(n))) for k in range(n)]
        for summand, part in zip(spec.summands, parts):
            for name, partial in zip(spec.arg_names, part[1:]):
                if name not in summand.depends:
                    assert partial == 0.0, (summand, name)
        magnitude = sum(abs(p[0]) for p in parts)
        assert abs(sum(p[0] for p in parts) - full[0]) <= 4 * EPS * magnitude
        for j in range(1, len(full)):
            total = sum(p[j] for p in parts)
            assert total == pytest.approx(full[j], rel=1e-13, abs=1e-13 * max(abs(p[j]) for p in parts))
    for k in range(n):
        keep = tuple(j != k for j in range(n))
        check_partials(spec, args, keep, lambda p: spec.logpdf_grad(*p, keep)[1:])


@by_case
def test_outside_support_is_minus_inf_with_zero_partials(case):
    d = case.dist(**case.params)
    points = outside_points(case.dist, case.params)
    lp, grads = d.logpdf_grad(points)
    assert np.all(lp == -np.inf), dict(zip(points, lp))
    assert np.all(d.logpdf(points) == -np.inf)
    for g in grads.values():
        assert np.all(g == 0.0)


@by_case
def test_x_valid_changes_nothing_in_the_support(case):
    spec = case.dist.spec
    points = [p for p in zip(*args_of(case)) if np.isfinite(spec.logpdf(*p))]
    for point in points:
        assert spec.logpdf_grad(*point, spec.keep_all, True) == spec.logpdf_grad(*point, spec.keep_all)
    if points:
        xs = np.array([p[0] for p in points])
        params = [np.array(c) for c in zip(*[p[1:] for p in points])]
        compiled = _compiled_x_valid(spec.logpdf_grad, len(params))
        np.testing.assert_array_equal(compiled(xs, *params, spec.keep_all, False),
                                      compiled(xs, *params, spec.keep_all, True))


def _invalid_rows():
    rows = list(INVALID)
    for dist in DISTS:
        valid = _first_case(dist).params
        for name in dist.spec.param_names:
            for bad in (np.nan, np.inf, -np.inf):
                rows.append((dist, {**valid, name: bad}, name))
    return rows


@pytest.mark.parametrize("dist, params, bad", _invalid_rows(),
                         ids=[f"{d.spec.name}-{b}={p[b]}" for d, p, b in _invalid_rows()])
def test_invalid_parameters_raise_and_give_minus_inf_in_kernels(dist, params, bad):
    """At the boundary an error naming everything; inside a kernel, -inf and zero partials."""
    with pytest.raises(InvalidArgumentError) as err:
        dist(**params)
    message = str(err.value)
    assert message.startswith(dist.spec.name + ":") and f"{bad}=" in message and "must" in message
    spec = dist.spec
    values = [params[n] for n in spec.param_names]
    for x in (0.0, 1.0, 3.0):
        result = spec.logpdf_grad(x, *values, spec.keep_all)
        assert result[0] == -np.inf and all(g == 0.0 for g in result[1:])
        assert spec.logpdf(x, *values) == -np.inf


def test_subnormal_rates_are_rejected_in_kernels():
    """Below the smallest normal float 1 / rate (1 / mu) overflows: -inf, not inf - inf."""
    for spec, params in ((HurdlePoisson.spec, (0.5, 1e-310)),
                         (HurdleNegativeBinomial.spec, (0.5, 1e-310, 2.0))):
        for x in (0.0, 1.0, 2.0):
            assert spec.logpdf_grad(x, *params, spec.keep_all)[0] == -np.inf
            assert spec.logpdf(x, *params) == -np.inf


# ----------------------------------------------------------------- the mass

MASS_POINTS = [
    (ZeroInflatedNegativeBinomial, dict(zi=0.3, mu=4.0, phi=2.0)),
    (ZeroInflatedNegativeBinomial, dict(zi=0.05, mu=50.0, phi=0.05)),
    (ZeroInflatedNegativeBinomial, dict(zi=0.5, mu=1e-3, phi=1e8)),
    (HurdlePoisson, dict(psi=0.7, rate=3.5)),
    (HurdlePoisson, dict(psi=0.9, rate=1e-8)),
    (HurdlePoisson, dict(psi=0.2, rate=1e4)),
    (HurdleNegativeBinomial, dict(psi=0.6, mu=4.0, phi=2.0)),
    (HurdleNegativeBinomial, dict(psi=0.8, mu=2.0, phi=0.05)),
    (HurdleNegativeBinomial, dict(psi=0.5, mu=1e-6, phi=1e3)),
]


def _reference_law(dist, params):
    """The scipy law of the count part: its pmf and tail, to size the support."""
    if dist is HurdlePoisson:
        return stats.poisson(params["rate"])
    return _nbinom(params["mu"], params["phi"])


@pytest.mark.parametrize("dist, params", MASS_POINTS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_mass_sums_to_one(dist, params):
    """Summed up to where the count part's tail is below 1e-15 (at most a few
    1e5 terms): 1 within 1e-12 (the sum's rounding and the cut tail)."""
    ref = _reference_law(dist, params)
    k = np.arange(int(ref.isf(1e-15)) + 2, dtype=float)
    total = math.fsum(np.exp(dist(**params).logpdf(k)))
    assert abs(total - 1.0) <= 1e-12, total


# --------------------------------------------------- partials against mpmath

MP_REFERENCE = {
    ZeroInflatedNegativeBinomial: _mp_zinb,
    HurdlePoisson: _mp_hurdle_poisson,
    HurdleNegativeBinomial: _mp_hurdle_nb,
}

# (dist, x, params): tails where finite differences are coarse.
MP_PARTIAL_POINTS = [
    (ZeroInflatedNegativeBinomial, 0, dict(zi=0.3, mu=5.0, phi=1e8)),
    (ZeroInflatedNegativeBinomial, 7, dict(zi=0.3, mu=5.0, phi=1e8)),
    (ZeroInflatedNegativeBinomial, 0, dict(zi=1e-6, mu=1e6, phi=1e-3)),
    (ZeroInflatedNegativeBinomial, 0, dict(zi=0.999, mu=1e-8, phi=2.0)),
    (ZeroInflatedNegativeBinomial, 3, dict(zi=1e-12, mu=0.2, phi=1e-3)),
    (HurdlePoisson, 1, dict(psi=0.3, rate=1e-8)),
    (HurdlePoisson, 2, dict(psi=0.3, rate=1e-8)),
    (HurdlePoisson, 1_000_300, dict(psi=0.3, rate=1e6)),
    (HurdlePoisson, 3, dict(psi=1.0 - 1e-10, rate=0.7)),
    (HurdleNegativeBinomial, 1, dict(psi=0.3, mu=1e-8, phi=3.0)),
    (HurdleNegativeBinomial, 4, dict(psi=0.3, mu=5.0, phi=1e8)),
    (HurdleNegativeBinomial, 2, dict(psi=0.3, mu=5.0, phi=1e-3)),
    (HurdleNegativeBinomial, 1000, dict(psi=0.3, mu=1e6, phi=0.5)),
]


def _mp_partials(dist, x, params):
    """d log p / d param for each parameter, by mpmath's differentiation at 50 digits
    (phi = 1e8 costs lgamma's differences 8 of them)."""
    log_mass = MP_REFERENCE[dist]
    names = dist.spec.param_names
    out = []
    with mp.workdps(50):
        values = {n: mp.mpf(float(v)) for n, v in params.items()}
        for name in names:
            def along(v, name=name):
                return log_mass(mp.mpf(x), **{**values, name: v})
            out.append(float(mp.diff(along, values[name])))
    return out


@pytest.mark.parametrize("dist, x, params", MP_PARTIAL_POINTS,
                         ids=[f"{d.spec.name}-x={x}-{p}" for d, x, p in MP_PARTIAL_POINTS])
def test_partials_match_mpmath_in_the_tails(dist, x, params):
    """Value and partials against mpmath: 1e-12 and 1e-9 relative, plus 8 eps
    times the sum of the summands' absolute values (of their partials): each
    summand is exact to a few ulps, their sum may cancel (the value at the
    Poisson mode; d/dphi ~ 1/phi^2 from summands ~ x/phi at phi = 1e8; the
    rate partial ~ -1/2 from summands ~ +-1/rate at x = 1)."""
    spec = dist.spec
    n = len(spec.summands)
    values = [float(params[name]) for name in spec.param_names]
    point = (float(x), *values)
    result = spec.logpdf_grad(*point, spec.keep_all)
    parts = [spec.logpdf_grad(*point, tuple(j == k for j in range(n))) for k in range(n)]
    with mp.workdps(50):
        exact = {k: mp.mpf(v) for k, v in zip(spec.param_names, values)}
        lp_want = float(MP_REFERENCE[dist](mp.mpf(x), **exact))
    assert abs(result[0] - lp_want) <= 1e-12 * abs(lp_want) + 8 * EPS * sum(abs(p[0]) for p in parts)
    for j, want in enumerate(_mp_partials(dist, x, params), start=2):
        bound = 1e-9 * abs(want) + 8 * EPS * sum(abs(p[j]) for p in parts)
        assert abs(result[j] - want) <= bound, (spec.arg_names[j - 1], result[j], want)


def test_stress_grid_gives_no_nan():
    """Parameters across the ranges the kernels promise (rate 1e-8..1e6,
    phi 1e-3..1e8, zi and psi at and near 0 and 1) and counts 0..1e6: every
    value is finite or -inf, every partial finite where the value is (but
    one that exceeds the float range)."""
    probs = (0.0, 1e-12, 0.3, 1.0 - 1e-12, 1.0)
    rates = (1e-8, 1e-3, 1.0, 50.0, 1e6)
    phis = (1e-3, 1.0, 1e4, 1e8)
    xs = (0.0, 1.0, 2.0, 40.0, 1e6)
    nb_grid = [(p, m, f) for p in probs for m in rates for f in phis]
    for dist, grid in ((ZeroInflatedNegativeBinomial, nb_grid),
                       (HurdlePoisson, [(p, r) for p in probs for r in rates]),
                       (HurdleNegativeBinomial, nb_grid)):
        for params in grid:
            lp, grads = dist(*params).logpdf_grad(np.array(xs))
            assert not np.any(np.isnan(lp)) and np.all(lp < np.inf), (dist, params, lp)
            for name, g in grads.items():
                g = g[np.isfinite(lp)]
                # d/dzi at 0 is (1 - NB(0)) / p(0): +inf where zi < 1e-308 and NB(0) < 1e-308
                ok = np.isfinite(g) | ((g == np.inf) if name == "zi" else False)
                assert np.all(ok), (dist, params, name, g)
            zero_inflated = dist is ZeroInflatedNegativeBinomial
            counts_possible = params[0] < 1.0 if zero_inflated else params[0] > 0.0
            assert np.all(np.isfinite(lp[1:]) == counts_possible), (dist, params, lp)
            assert np.isfinite(lp[0]) == (zero_inflated or params[0] < 1.0), (dist, params, lp)


# ------------------------------------------------------------------- draws

N = 20_000
DRAW_POINTS = [
    (ZeroInflatedNegativeBinomial, dict(zi=0.3, mu=4.0, phi=2.0)),
    (ZeroInflatedNegativeBinomial, dict(zi=0.6, mu=300.0, phi=0.5)),
    (HurdlePoisson, dict(psi=0.7, rate=3.5)),  # rejection of zeros
    (HurdlePoisson, dict(psi=0.4, rate=0.3)),  # inversion from 1
    (HurdlePoisson, dict(psi=0.5, rate=1e-8)),
    (HurdlePoisson, dict(psi=0.8, rate=1e4)),
    (HurdleNegativeBinomial, dict(psi=0.7, mu=5.0, phi=2.0)),  # a = 2.5: rejection of zeros
    (HurdleNegativeBinomial, dict(psi=0.6, mu=2.0, phi=0.05)),  # a = 0.19: compound Poisson
    (HurdleNegativeBinomial, dict(psi=0.5, mu=1e-3, phi=3.0)),  # a = 1e-3
    (HurdleNegativeBinomial, dict(psi=0.8, mu=50.0, phi=1e-3)),  # a = 0.011, log-series tail
    (HurdleNegativeBinomial, dict(psi=0.5, mu=0.5, phi=1e8)),  # a = 0.5, u = 5e-9
]


def _chi_square_pvalue(draws, pmf):
    """Chi-square of the counts of 0, 1, ... against ``pmf`` (the rest of the
    mass in one last cell), cells merged left to right until each expects >= 20."""
    cells = np.append(pmf, max(0.0, 1.0 - pmf.sum()))
    observed = np.bincount(np.minimum(draws, len(pmf)), minlength=len(cells))
    merged_obs, merged_exp, o, e = [], [], 0, 0.0
    for count, p in zip(observed, cells):
        o, e = o + count, e + N * p
        if e >= 20.0:
            merged_obs.append(o)
            merged_exp.append(e)
            o, e = 0, 0.0
    if merged_exp:
        merged_obs[-1] += o
        merged_exp[-1] += e
    else:
        merged_obs, merged_exp = [o], [e]
    if len(merged_exp) < 2:
        return 1.0
    merged_exp = np.array(merged_exp) * N / np.sum(merged_exp)
    return stats.chisquare(merged_obs, merged_exp).pvalue


@pytest.mark.parametrize("dist, params", DRAW_POINTS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_draws_follow_the_mass(dist, params):
    """N = 20,000 draws at a fixed seed: chi-square p >= 1e-4 against the pmf
    (scipy's, tabulated where the count part's tail is below 1e-12), and the
    frequency of 0 within 5 standard errors."""
    d = dist(**params)
    x = d.rvs(size=N, seed=7)
    assert x.dtype == np.int64 and np.all(x >= 0) and np.all(d.logpdf(x) > -np.inf)
    ref = _reference_law(dist, params)
    k = np.arange(int(ref.isf(1e-12)) + 2, dtype=float)
    pmf = np.exp(d.logpdf(k))
    p0 = pmf[0]
    assert abs(np.mean(x == 0) - p0) <= 5 * math.sqrt(p0 * (1 - p0) / N) + 1e-12
    assert _chi_square_pvalue(x, pmf) >= 1e-4


def test_a_wrong_law_is_rejected():
    """The draw checks can fail: HurdleNegativeBinomial(0.6, 2, 0.05) against phi = 0.06."""
    x = HurdleNegativeBinomial(0.6, 2.0, 0.05).rvs(size=N, seed=7)
    ref = _nbinom(2.0, 0.06)
    k = np.arange(int(ref.isf(1e-12)) + 2, dtype=float)
    assert _chi_square_pvalue(x, np.exp(HurdleNegativeBinomial(0.6, 2.0, 0.06).logpdf(k))) < 1e-4


# ------------------------------------------------------------------ models

MODEL_POINTS = [
    (ZeroInflatedNegativeBinomial, dict(zi=0.3, mu=4.0, phi=2.0),
     (ld.unit_interval, ld.positive, ld.positive)),
    (HurdlePoisson, dict(psi=0.7, rate=3.5), (ld.unit_interval, ld.positive)),
    (HurdleNegativeBinomial, dict(psi=0.6, mu=4.0, phi=1.5),
     (ld.unit_interval, ld.positive, ld.positive)),
]


@pytest.mark.parametrize("dist, params, constraints", MODEL_POINTS, ids=lambda v: getattr(v, "__name__", ""))
def test_compiled_model_matches_numpy_and_finite_differences(dist, params, constraints):
    """``m.observe("y", Dist(params as model parameters), y)``: the compiled value
    (propto=False, no Jacobian: flat priors) is numpy's sum of ``logpdf`` to
    1e-12; with propto the data-only summand sum(-lgamma(y + 1)) is dropped;
    the gradient matches directional finite differences (``engine_helpers``)."""
    y = dist(**params).rvs(size=60, seed=3).astype(float)
    y[:3] = (0.0, 1.0, 2.0)  # zeros and positive counts both present
    m = ld.Model()
    args = [m.param(name, constraint=c) for name, c in zip(dist.spec.param_names, constraints)]
    m.observe("y", dist(*args), y)
    density = m.compile()
    rng = np.random.default_rng(0)
    theta = rng.normal(scale=0.5, size=density.dim)
    values = density.constrain(theta)
    want = np.sum(dist(**{n: float(values[n]) for n in dist.spec.param_names}).logpdf(y))
    lp, grad = density.log_density_gradient(theta, propto=False, jacobian=False)
    assert lp == pytest.approx(want, rel=1e-12)
    lp_propto, grad_propto = density.log_density_gradient(theta, jacobian=False)
    dropped = -np.sum([math.lgamma(v + 1.0) for v in y])
    assert lp_propto == pytest.approx(want - dropped, rel=1e-12, abs=1e-9)
    np.testing.assert_allclose(grad_propto, grad, rtol=1e-13, atol=1e-13)
    check_gradient(density, theta, rng, jacobian=False)
    check_gradient(density, theta, rng)
