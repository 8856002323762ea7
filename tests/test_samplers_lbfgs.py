"""L-BFGS with a recorded path, and its strong-Wolfe line search."""

import numpy as np
import pytest

from logdens.samplers.lbfgs import C1, C2, lbfgs, two_loop, wolfe_line_search


def rosenbrock(x):
    """Rosenbrock's function in any dimension and its gradient (minimum 0 at ones)."""
    x = np.asarray(x, dtype=float)
    f = np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return f, g


@pytest.mark.parametrize("x0", [[-1.2, 1.0], [3.0, -2.0, 1.0, 0.5, 2.0]])
def test_minimizes_rosenbrock(x0):
    path = lbfgs(rosenbrock, x0, max_iters=500)
    assert path.converged, path.message
    # Stopped by the relative-gradient test at f ~ 1e-10: x within 1e-4 of the minimum.
    np.testing.assert_allclose(path.x[-1], np.ones(len(x0)), atol=1e-4)


def test_path_is_recorded_and_decreasing():
    path = lbfgs(rosenbrock, [-1.2, 1.0], max_iters=500)
    assert path.x.shape == (path.f.size, 2) and path.grad.shape == path.x.shape
    np.testing.assert_array_equal(path.x[0], [-1.2, 1.0])
    for x, f, g in zip(path.x, path.f, path.grad):  # rows are fun's values at the iterates
        f_ref, g_ref = rosenbrock(x)
        assert f == f_ref
        np.testing.assert_array_equal(g, g_ref)
    assert np.all(np.diff(path.f) < 0)  # sufficient decrease at every step
    assert path.n_evals >= path.f.size


def test_two_loop_is_the_bfgs_inverse_hessian():
    # Nocedal & Wright (7.19): H_{k+1} = V' H_k V + rho s s' from H_0 = (s'y / y'y) I.
    rng = np.random.default_rng(0)
    d = 4
    a = rng.normal(size=(d, d))
    a = a @ a.T + np.eye(d)
    pairs = [(s, a @ s) for s in rng.normal(size=(3, d))]
    s, y = pairs[-1]
    h = np.eye(d) * (s @ y) / (y @ y)
    for s, y in pairs:
        rho = 1.0 / (s @ y)
        v = np.eye(d) - rho * np.outer(y, s)
        h = v.T @ h @ v + rho * np.outer(s, s)
    g = rng.normal(size=d)
    np.testing.assert_allclose(two_loop(g, pairs), h @ g, rtol=1e-12)
    np.testing.assert_array_equal(two_loop(g, []), g)


def test_line_search_satisfies_the_strong_wolfe_conditions():
    x = np.array([-1.2, 1.0])
    f0, g0 = rosenbrock(x)
    direction = -g0
    for step in (1.0, 1e-6, 10.0):  # too long, too short, far too long
        res = wolfe_line_search(rosenbrock, x, f0, g0, direction, step)
        assert res.wolfe and res.step > 0
        assert res.f <= f0 + C1 * res.step * (g0 @ direction)
        assert abs(res.grad @ direction) <= -C2 * (g0 @ direction)


def test_line_search_backs_off_where_the_objective_is_infinite():
    # f = x - 3 log x on x > 0 (minimum at 3), +inf at x <= 0: a step of 10 leaves the domain.
    def fun(x):
        if x[0] <= 0:
            return np.inf, np.zeros(1)
        return x[0] - 3 * np.log(x[0]), np.array([1 - 3 / x[0]])

    f0, g0 = fun(np.array([0.5]))
    res = wolfe_line_search(fun, np.array([0.5]), f0, g0, np.array([-1.0]) * np.sign(g0), 10.0)
    assert res.step > 0 and np.isfinite(res.f) and res.f < f0
    path = lbfgs(fun, [0.1])
    assert path.x[-1][0] == pytest.approx(3.0, rel=1e-6)


def test_not_finite_start_raises():
    with pytest.raises(ValueError, match="not finite at x0"):
        lbfgs(lambda x: (np.inf, np.zeros(1)), [1.0])
