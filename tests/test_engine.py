"""The engine against the distributions' own numpy API and finite differences.

Every distribution of the case table enters a model as an observed term with
each real parameter a model parameter, and (continuous ones) as the prior of
a vector parameter. Values must equal the sum of the public ``logpdf``;
gradients must match finite differences; the plain-Python run of the
generated code must equal the compiled one.
"""

import numpy as np
import pytest

import logdens as ld
from cases import CASES
from logdens.distributions.constraints import resolve_bounds
from engine_helpers import check_gradient

DISTS = sorted({c.dist for c in CASES}, key=lambda d: d.spec.name)


def interior_case(dist):
    """The first case whose parameters lie strictly inside their transforms' ranges,
    keeping its points with a moderate finite log density and away from bounds
    of the support that move with a parameter (finite differences of that
    parameter must not step outside)."""
    for case in CASES:
        if case.dist is not dist:
            continue
        if not all(_strictly_inside(p.constraint, case.params[p.name]) for p in dist.spec.params):
            continue
        support = dist.spec.support
        lower, upper = resolve_bounds(support, case.params)
        x = np.asarray(case.x, dtype=float)
        keep = np.abs(dist(**case.params).logpdf(x)) < 1e3
        margin = 1e-2 * np.maximum(np.abs(x), 1.0)
        keep &= (np.abs(x - lower) > margin) | (not isinstance(support.lower, str))
        keep &= (np.abs(x - upper) > margin) | (not isinstance(support.upper, str))
        if np.any(keep):
            return case._replace(x=tuple(x[keep]))
    pytest.skip(f"no interior case for {dist.spec.name}")


def _strictly_inside(constraint, value):
    lower, upper = constraint.lower, constraint.upper
    ok = True
    if isinstance(lower, (int, float)):
        ok &= value > lower
    if isinstance(upper, (int, float)):
        ok &= value < upper
    return bool(ok)


def as_parameters(m, dist, params):
    """Real parameters of ``dist`` become model parameters; the rest stay constants."""
    args = {}
    for p in dist.spec.params:
        named_bound = any(isinstance(b, str) for b in (p.constraint.lower, p.constraint.upper))
        if p.constraint.integer or named_bound:
            args[p.name] = params[p.name]
        else:
            args[p.name] = m.param(f"p_{p.name}", constraint=p.constraint)
    return args


def observed_model(case):
    m = ld.Model()
    args = as_parameters(m, case.dist, case.params)
    m.observe("y", case.dist(**args), np.asarray(case.x, dtype=float))
    return m


def theta_at(density, case):
    return density.unconstrain({f"p_{n}": v for n, v in case.params.items()
                                if f"p_{n}" in density.model.params})


@pytest.mark.parametrize("dist", DISTS, ids=[d.spec.name for d in DISTS])
def test_observed_term_value_and_gradient(dist):
    case = interior_case(dist)
    density = observed_model(case).compile()
    theta = theta_at(density, case)
    want = np.sum(case.dist(**case.params).logpdf(case.x))
    got = density.log_density(theta, propto=False, jacobian=False)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
    pointwise = density.pointwise_log_likelihood(theta)["y"]
    np.testing.assert_allclose(pointwise, case.dist(**case.params).logpdf(case.x), rtol=1e-12, atol=1e-300)
    if density.dim:
        check_gradient(density, theta, np.random.default_rng(0), propto=False)
        check_gradient(density, theta, np.random.default_rng(1), jacobian=False)


@pytest.mark.parametrize("dist", [d for d in DISTS if not d.spec.discrete],
                         ids=[d.spec.name for d in DISTS if not d.spec.discrete])
def test_prior_of_a_vector_parameter(dist):
    case = interior_case(dist)
    m = ld.Model()
    m.param("x", dist(**case.params), shape=len(case.x))
    transform = m.transforms["x"]
    with np.errstate(all="ignore"):  # points on a bound of the support map to +-inf: left out
        inside = [x for x in case.x if np.isfinite(transform.inverse(np.array([x]))).all()]
    assert inside, f"no point of {case.id} lies strictly inside the support"
    m = ld.Model()
    m.param("x", dist(**case.params), shape=len(inside))
    density = m.compile()
    theta = density.unconstrain({"x": np.array(inside, dtype=float)})
    want = np.sum(dist(**case.params).logpdf(inside))
    assert density.log_density(theta, propto=False, jacobian=False) == pytest.approx(want, rel=1e-12, abs=1e-12)
    check_gradient(density, theta, np.random.default_rng(2))


@pytest.mark.parametrize("dist", DISTS, ids=[d.spec.name for d in DISTS])
def test_python_twin_equals_compiled(dist):
    case = interior_case(dist)
    model = observed_model(case)
    compiled, twin = model.compile(), model.compile(backend="python")
    theta = theta_at(compiled, case)
    lp, grad = compiled.log_density_gradient(theta)
    lp_py, grad_py = twin.log_density_gradient(theta)
    assert lp_py == pytest.approx(lp, rel=1e-13, abs=1e-13)
    np.testing.assert_allclose(grad_py, grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_row_functions_refuse_an_output_sized_for_other_data(backend):
    """The generated functions that write one row per observation check their
    output against the rows of the data they are given: an output of 2 rows
    with data of 5 (a ``set_data`` between sizing and the call) was written
    past its end; now a ValueError naming the function and the term."""
    m = ld.Model()
    mu, sigma = m.param("mu"), m.param("sigma", constraint=ld.positive)
    m.observe("y", ld.Normal(mu + 0.1 * m.data("x", np.arange(5.0)), sigma), np.ones(5))
    density = m.compile(backend=backend)
    module, (fdata, idata), ident = density._module, density._row_data, density.layout.term_idents["y"]
    theta, width = np.zeros(2), int(getattr(module, f"slots_{ident}")(idata))
    calls = {"pointwise": lambda: getattr(module, f"pointwise_{ident}")(theta, fdata, idata, np.zeros(2), False),
             "per_sample": lambda: getattr(module, f"per_sample_{ident}")(theta, fdata, idata, np.zeros((2, 2))),
             "per_sample_sparse": lambda: getattr(module, f"per_sample_sparse_{ident}")(
                 theta, fdata, idata, np.zeros((2, width), dtype=np.int64), np.zeros((2, width)))}
    for function, call in calls.items():
        with pytest.raises(ValueError, match=f"{function}: term 'y': the output does not have one row per row "
                                             "of the data given"):
            call()
