"""Every distribution against scipy, finite differences and its own contracts.

All tests run over the rows of ``tests/cases.py``.
"""

import numpy as np
import pytest

from cases import CASES, INVALID

import logdens as ld
from logdens.distributions.constraints import contains, resolve_bounds
from logdens.distributions.frozen import InvalidArgumentError

EPS = np.finfo(float).eps
DISTS = sorted({c.dist for c in CASES}, key=lambda d: d.spec.name)


def by_case(fn):
    return pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])(fn)


def by_dist(fn):
    return pytest.mark.parametrize("dist", DISTS, ids=[d.spec.name for d in DISTS])(fn)


def args_of(case):
    """The kernel arguments ``(x, *params)`` as broadcast float arrays."""
    x = np.asarray(case.x, dtype=float)
    params = [np.full_like(x, case.params[n]) for n in case.dist.spec.param_names]
    return [x] + params


def kernel_lp(spec, args, keep=None):
    """Value of the grad kernel, compiled through the public loop or uncompiled."""
    keep = spec.keep_all if keep is None else keep
    return np.array([spec.logpdf_grad(*a, keep)[0] for a in zip(*args)])


@by_case
def test_logpdf_matches_reference(case):
    got = case.dist(**case.params).logpdf(case.x)
    want = case.reference(np.asarray(case.x, dtype=float), **case.params)
    np.testing.assert_allclose(got, want, rtol=case.rtol, atol=0)


@by_case
def test_value_of_logpdf_grad_equals_logpdf(case):
    d = case.dist(**case.params)
    lp, _ = d.logpdf_grad(case.x)
    np.testing.assert_allclose(lp, d.logpdf(case.x), rtol=4 * EPS, atol=0)


@by_case
def test_compiled_equals_uncompiled(case):
    """The numba loop and the plain-Python kernel agree to rounding.

    CPython's ``math.lgamma`` and the libm numba calls may differ by an ulp,
    so the bound is a few ulps of the summands' magnitude, not of the value
    (which can be a small difference of large summands).
    """
    spec = case.dist.spec
    args = args_of(case)
    lp, grads = case.dist(**case.params).logpdf_grad(case.x)
    for i, point in enumerate(zip(*args)):
        result = spec.logpdf_grad(*point, spec.keep_all)
        _, magnitude = value_and_magnitude(spec, list(point), spec.keep_all)
        assert abs(result[0] - lp[i]) <= 8 * EPS * magnitude or result[0] == lp[i]
        assert abs(spec.logpdf(*point) - result[0]) <= 8 * EPS * magnitude or spec.logpdf(*point) == result[0]
        for name, partial in zip(spec.arg_names, result[1:]):
            if name in grads:
                np.testing.assert_allclose(partial, grads[name][i], rtol=1e-12, atol=1e-300)


def finite_difference(f, v):
    """5-point central difference of the scalar function ``f`` at ``v``.

    ``f(v)`` returns ``(value, magnitude)``: the magnitude (sum of the
    absolute summands) bounds the rounding error of the value, eps * magnitude.
    Steps are powers of two from about 1e-2 down to 1e-13 times max(|v|, 1)
    (powers of two keep ``v + k h`` exact). The one kept is where the change
    from the previous step plus the rounding floor is smallest: the flat part
    between truncation and rounding error. Returns ``(derivative, floor)``;
    the floor is the stencil's rounding error, 10 eps max(magnitude) / h.
    """
    # Two families of steps: relative to max(|v|, 1), and relative to |v|
    # itself for 0 < |v| < 1 (a scale of 1e-10 needs steps below 1e-10).
    scales = [2.0 ** min(np.ceil(np.log2(max(abs(v), 1.0))), 1022)]
    if 0.0 < abs(v) < 1.0:
        scales.append(2.0 ** np.ceil(np.log2(abs(v))))
    best, best_score = (np.nan, np.inf), np.inf
    for scale in scales:
        previous = np.nan
        for k in range(7, 45, 3):
            h = scale * 2.0 ** -k
            values, magnitudes = zip(*(f(v + j * h) for j in (-2, -1, 0, 1, 2)))
            if not np.all(np.isfinite(values)):
                previous = np.nan
                continue
            d = (values[0] - 8 * values[1] + 8 * values[3] - values[4]) / (12 * h)
            floor = 10 * EPS * max(magnitudes) / h
            score = abs(d - previous) + floor
            if score < best_score:
                best, best_score = (d, floor), score
            previous = d
    return best


def value_and_magnitude(spec, point, keep):
    """The kept value and the sum of the absolute values of its summands."""
    value = spec.logpdf_grad(*point, keep)[0]
    magnitude = 0.0
    for k, kept in enumerate(keep):
        if kept:
            only_k = tuple(j == k for j in range(len(keep)))
            magnitude += abs(spec.logpdf_grad(*point, only_k)[0])
    return value, magnitude


def check_partials(spec, args, keep, grads_of, rtol=1e-6):
    """Compare each partial with finite differences of the value, point by point."""
    for i, point in enumerate(zip(*args)):
        point = list(point)
        if not np.isfinite(spec.logpdf_grad(*point, keep)[0]):
            continue
        analytic = grads_of(point)
        for j, name in enumerate(spec.arg_names):
            if name not in spec.gradient_args():
                continue

            def f(v):
                shifted = point.copy()
                shifted[j] = v
                return value_and_magnitude(spec, shifted, keep)

            fd, floor = finite_difference(f, point[j])
            if not np.isfinite(fd):
                continue  # every step leaves the support: a boundary point
            assert abs(analytic[j] - fd) <= rtol * abs(fd) + floor + 1e-290, (
                f"{spec.name} d/d{name} at {dict(zip(spec.arg_names, point))}: "
                f"analytic {analytic[j]!r}, finite difference {fd!r}")


@by_case
def test_partials_match_finite_differences(case):
    """rtol 1e-6: the 5-point stencil's truncation error at the chosen step,
    plus its rounding floor (about 10 eps |lp| / h)."""
    spec = case.dist.spec
    check_partials(spec, args_of(case), spec.keep_all,
                   lambda p: spec.logpdf_grad(*p, spec.keep_all)[1:])


@by_case
def test_summand_tags(case):
    """Summand k depends on nothing outside its tag: dropping it changes no
    partial with respect to an untagged argument, and the partials of what
    remains still match finite differences (so the dropped part is constant
    in those arguments). Discrete arguments are covered by the value checks."""
    spec = case.dist.spec
    args = args_of(case)
    for k, summand in enumerate(spec.summands):
        keep = tuple(j != k for j in range(len(spec.summands)))
        for point in zip(*args):
            full = spec.logpdf_grad(*point, spec.keep_all)
            part = spec.logpdf_grad(*point, keep)
            if not np.isfinite(full[0]):
                continue
            for name, g_full, g_part in zip(spec.arg_names, full[1:], part[1:]):
                if name not in summand.depends:
                    assert g_full == pytest.approx(g_part, rel=1e-12, abs=1e-300), (summand, name)
        check_partials(spec, args, keep, lambda p: spec.logpdf_grad(*p, keep)[1:])


@by_case
def test_three_copies_give_three_times_the_value(case):
    d = case.dist(**case.params)
    one = d.logpdf(case.x)
    three = d.logpdf(np.tile(case.x, 3)).reshape(3, -1)
    np.testing.assert_array_equal(three, np.broadcast_to(one, three.shape))
    assert np.sum(three) == pytest.approx(3 * np.sum(one), rel=1e-14)


def outside_points(dist, params):
    """Points outside the support: beyond each bound (by a relative step, so the
    point really moves even at bounds like 1e300), infinities, non-integers."""
    spec = dist.spec
    lower, upper = resolve_bounds(spec.support, params)
    lower, upper = float(np.min(lower)), float(np.max(upper))
    points = []
    with np.errstate(over="ignore"):
        if np.isfinite(lower):
            points += [lower - max(1.0, abs(lower)), lower - 1e-9 * max(1.0, abs(lower))]
            if not spec.support.lower_closed:
                points.append(lower)
        if np.isfinite(upper):
            points += [upper + max(1.0, abs(upper)), upper + 1e-9 * max(1.0, abs(upper))]
            if not spec.support.upper_closed:
                points.append(upper)
    if spec.support.integer:
        points += [0.5, (lower if np.isfinite(lower) else 0.0) + 1.5]
    points += [-np.inf, np.inf]
    return points


@by_case
def test_outside_support_is_minus_inf_with_zero_partials(case):
    d = case.dist(**case.params)
    points = outside_points(case.dist, case.params)
    lp, grads = d.logpdf_grad(points)
    assert np.all(lp == -np.inf), dict(zip(points, lp))
    assert np.all(d.logpdf(points) == -np.inf)
    for g in grads.values():
        assert np.all(g == 0.0)


def invalid_rows():
    """The INVALID table plus NaN and +-inf for every parameter of every
    distribution (but the infinity a truncation's bound may be)."""
    rows = list(INVALID)
    for dist in DISTS:
        valid = next(c.params for c in CASES if c.dist is dist)
        for param in dist.spec.params:
            for bad in (np.nan, np.inf, -np.inf):
                if not contains(param.constraint, bad, valid):
                    rows.append((dist, {**valid, param.name: bad}, param.name))
    return rows


@pytest.mark.parametrize("dist, params, bad", invalid_rows(),
                         ids=[f"{d.spec.name}-{b}={p[b]}" for d, p, b in invalid_rows()])
def test_invalid_parameters_raise_naming_everything(dist, params, bad):
    with pytest.raises(InvalidArgumentError) as err:
        dist(**params)
    message = str(err.value)
    assert message.startswith(dist.spec.name + ":")
    assert f"{bad}=" in message and "must" in message
    assert repr(float(params[bad])) in message


@by_dist
def test_invalid_entry_in_array_is_named_by_index(dist):
    valid = next(c.params for c in CASES if c.dist is dist)
    name = dist.spec.param_names[-1]
    values = np.full(4, valid[name], dtype=float)
    values[2] = np.nan
    with pytest.raises(InvalidArgumentError, match=rf"{name}\[2\]=nan"):
        dist(**{**valid, name: values})


@by_dist
def test_nan_value_raises(dist):
    valid = next(c.params for c in CASES if c.dist is dist)
    with pytest.raises(InvalidArgumentError, match=r"x\[1\]=nan"):
        dist(**valid).logpdf([0.0, np.nan])


@by_dist
def test_kernels_return_minus_inf_for_invalid_parameters(dist):
    """Inside a kernel an invalid parameter is a rejected point, never an exception."""
    spec = dist.spec
    valid = next(c for c in CASES if c.dist is dist)
    x = valid.x[0]
    for name in spec.param_names:
        params = [np.nan if n == name else valid.params[n] for n in spec.param_names]
        result = spec.logpdf_grad(x, *params, spec.keep_all)
        assert result[0] == -np.inf and all(g == 0.0 for g in result[1:])
        assert spec.logpdf(x, *params) == -np.inf


def test_gradient_keys_follow_the_spec():
    for dist in DISTS:
        valid = next(c for c in CASES if c.dist is dist)
        _, grads = dist(**valid.params).logpdf_grad(valid.x)
        assert tuple(grads) == dist.spec.gradient_args()


@pytest.mark.parametrize("case", [c for c in CASES if c.dist.spec.takes_x_valid],
                         ids=lambda c: c.id)
def test_x_valid_skips_only_checks_that_valid_values_pass(case):
    """``x_valid=True`` (the engine's promise for checked data) changes nothing at
    values in the support, compiled and in plain Python."""
    spec = case.dist.spec
    points = [p for p in zip(*args_of(case)) if np.isfinite(spec.logpdf(*p))]
    assert points
    for point in points:
        plain = spec.logpdf_grad(*point, spec.keep_all)
        assert spec.logpdf_grad(*point, spec.keep_all, True) == plain
    xs, params = np.array([p[0] for p in points]), [np.array(c) for c in zip(*[p[1:] for p in points])]
    compiled = _compiled_x_valid(spec.logpdf_grad, len(params))
    np.testing.assert_array_equal(compiled(xs, *params, spec.keep_all, False),
                                  compiled(xs, *params, spec.keep_all, True))


def _compiled_x_valid(kernel, n_params):
    """A numba loop over ``kernel(x, *params, keep, x_valid)``, returning the values."""
    import numba
    names = ", ".join(f"p{j}" for j in range(n_params))
    source = (f"def loop(x, {names}, keep, x_valid):\n    out = np.empty(x.size)\n"
              f"    for i in range(x.size):\n"
              f"        out[i] = kernel(x[i], {', '.join(f'p{j}[i]' for j in range(n_params))}, keep, x_valid)[0]\n"
              f"    return out\n")
    namespace = {"kernel": kernel, "np": np}
    exec(source, namespace)
    return numba.njit(namespace["loop"])


def test_logits_keywords_build_the_logit_families():
    """NumPyro's ``logits=`` and PyMC's ``logit_p=`` on Bernoulli, Binomial and
    Categorical give the logit-scale class with the same density as the
    probability form at ``p = sigmoid(logit)`` (softmax for Categorical)."""
    from scipy import special as sp
    x = np.array([0, 1, 1, 0])
    for dist, logit_cls in ((ld.Bernoulli(logits=0.4), ld.BernoulliLogit),
                            (ld.Bernoulli(logit_p=0.4), ld.BernoulliLogit)):
        assert type(dist) is logit_cls
        np.testing.assert_allclose(dist.logpdf(x), ld.Bernoulli(sp.expit(0.4)).logpdf(x), rtol=1e-13)
    binomial = ld.Binomial(10, logits=-0.7)
    assert type(binomial) is ld.BinomialLogit
    np.testing.assert_allclose(binomial.logpdf(np.array([0, 3, 10])),
                               ld.Binomial(10, sp.expit(-0.7)).logpdf(np.array([0, 3, 10])), rtol=1e-12)
    logits = np.array([0.2, -1.0, 0.5])
    categorical = ld.Categorical(logits=logits)
    assert type(categorical) is ld.CategoricalLogit
    np.testing.assert_allclose(categorical.logpdf(np.array([0, 2])),
                               ld.Categorical(sp.softmax(logits)).logpdf(np.array([0, 2])), rtol=1e-13)
    for both in (lambda: ld.Bernoulli(p=0.3, logits=1.0), lambda: ld.Bernoulli(0.3, logits=1.0),
                 lambda: ld.Binomial(10, 0.3, logit_p=1.0), lambda: ld.Bernoulli(logits=1.0, logit_p=1.0)):
        with pytest.raises(TypeError, match="give one of p, logits and logit_p"):
            both()
    m = ld.Model()
    w = m.param("w", ld.Normal(0, 1), shape=3)
    m.observe("y", ld.Categorical(logits=w), np.array([0, 2, 2]))  # model expressions too
    assert "CategoricalLogit" in repr(m)


@pytest.mark.parametrize("dist, params, message", [
    (ld.TruncatedNormal, dict(loc=0.0, scale=1.0, lower=1.0, upper=0.0),
     r"TruncatedNormal: upper=0.0, must be > lower \(or inf: no bound\); lower=1.0$"),
    (ld.TruncatedNormal, dict(loc=0.0, scale=1.0, lower=np.array([0.0, 2.0]), upper=np.array([1.0, 1.5])),
     r"TruncatedNormal: upper\[1\]=1.5, must be > lower \(or inf: no bound\); lower\[1\]=2.0$"),
    (ld.Uniform, dict(lower=1.0, upper=np.array([2.0, 0.5])), r"Uniform: upper\[1\]=0.5, must be > lower; lower=1.0$"),
])
def test_a_bound_named_after_another_argument_is_shown_with_its_value(dist, params, message):
    """An upper bound not above the lower one: the message said 'must be > lower
    (inf: none)' without lower's value (a truncation's bounds drawn from priors)."""
    with pytest.raises(InvalidArgumentError, match=message):
        dist(**params)


@pytest.mark.parametrize("lower, upper, transform", [(0.0, np.inf, "LowerBound"), (-np.inf, 1.0, "UpperBound"),
                                                     (-np.inf, np.inf, "Identity")])
def test_truncated_normal_with_an_infinite_bound_in_a_model(lower, upper, transform):
    """An infinite bound is none (PyMC's and NumPyro's missing one): a parameter
    with such a prior gets the one-sided transform, and the compiled log
    density is scipy's truncnorm, its gradient the central differences'
    (h = 1e-6: error about h^2 plus 1e-10 of rounding, asked 1e-7)."""
    from scipy import stats
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    m.param("x", ld.TruncatedNormal(mu, 2.0, lower, upper))
    m.observe("y", ld.TruncatedNormal(mu, 1.0, lower, upper), np.array([0.5, 0.9]))
    assert type(m.transforms["x"]).__name__ == transform
    density, theta = m.compile(), np.array([0.3, 0.2])
    x = density.constrain(theta)["x"]
    want = (stats.norm.logpdf(0.3) + stats.truncnorm.logpdf(x, (lower - 0.3) / 2, (upper - 0.3) / 2, 0.3, 2.0)
            + stats.truncnorm.logpdf([0.5, 0.9], lower - 0.3, upper - 0.3, 0.3).sum())
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(want, rel=1e-13)
    grad, h = density.log_density_gradient(theta)[1], 1e-6
    fd = [(density.log_density(theta + h * e) - density.log_density(theta - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(grad, fd, rtol=1e-7, atol=1e-7)
