"""The README: its set-up commands are the ones CI and users run, its examples run as written."""

import pathlib
import re
import textwrap

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_readme_has_exactly_two_setup_commands():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", setup, re.S)
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/python -m logdens warmup"
        " && .venv/bin/python examples/quickstart.py",
        'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest -q',
    ]
    assert 'grep -m1 -F \'pip install -e ".[test]"\' README.md' in (ROOT / ".ci" / "run").read_text()


def _python_blocks(section):
    """The ```python blocks of README section ``section``, in order."""
    readme = (ROOT / "README.md").read_text()
    text = readme.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [textwrap.dedent(block) for block in re.findall(r"```python\n(.*?)\n\s*```", text, re.S)]


def test_the_pymc_section_runs_as_written(capsys):
    """Every call the section shows exists and gives what its comments say."""
    first, predictions = _python_blocks("Coming from PyMC or NumPyro")
    namespace = {}
    exec(compile(first, "README.md", "exec"), namespace)
    assert "z[8]     ~ Normal(0, 1)" in capsys.readouterr().out
    assert set(namespace["prior"].children) == {"prior", "prior_predictive", "observed_data"}
    assert "posterior_predictive" in namespace["idata"].children
    assert namespace["idata"].posterior_predictive["y"].dims == ("chain", "draw", "school")
    for name in ("approx", "vi"):
        assert namespace[name].posterior["z"].dims[-1] == "school"
    assert namespace["draws"].shape == (1000,)
    # the predictions snippet, on a regression whose data it replaces
    ld, np = namespace["ld"], namespace["np"]
    m = ld.Model()
    a, b = m.param("a", ld.Normal(0, 1)), m.param("b", ld.Normal(0, 1))
    mu = m.deterministic("mu", a + b * m.data("x", np.linspace(0, 1, 10)))
    m.observe("y", ld.Normal(mu, 0.1), np.linspace(0, 1, 10))
    density = m.compile()
    idata = ld.pathfinder(density, seed=0)
    exec(compile(predictions, "README.md", "exec"),
         {"ld": ld, "np": np, "density": density, "idata": idata, "x_new": np.array([2.0, 3.0])})


def test_the_mixture_example_runs_and_fits():
    """The README's logpdf-expression mixture, on data from its own model."""
    import numpy as np

    import logdens as ld
    block = next(b for b in _python_blocks("Quickstart") if "logaddexp" in b)
    y = np.concatenate([np.random.default_rng(0).normal(-2, 1, 60), np.random.default_rng(1).normal(3, 1, 40)])
    namespace = {"ld": ld, "np": np, "y": y}
    exec(compile(block, "README.md", "exec"), namespace)
    fit = ld.find_map(namespace["m"])
    # the mode lies near the generating values (100 draws: SE of a mean about 0.15)
    np.testing.assert_allclose(fit.params["mu"], [-2.0, 3.0], atol=0.5)
    assert abs(fit.params["w"] - 0.6) < 0.15


def test_the_matrix_example_runs_as_written():
    """The README's neural network: per-sample rows summing to the likelihood's
    gradient, then a batch of another size on the same module."""
    import numpy as np

    import logdens as ld
    block = next(b for b in _python_blocks("Quickstart") if "W1" in b)
    rng = np.random.default_rng(0)
    namespace = {"ld": ld, "np": np, "X": rng.normal(size=(40, 10)), "Y": rng.normal(size=(40, 10)),
                 "X_batch": rng.normal(size=(8, 10)), "Y_batch": rng.normal(size=(8, 10))}
    exec(compile(block, "README.md", "exec"), namespace)
    density, theta, rows = namespace["density"], namespace["theta"], namespace["rows"]
    assert rows.shape == (40, density.dim)
    assert density.per_sample_gradient(theta, "Y").shape == (8, density.dim)


OTHER_SAMPLERS = "Using logdens with other samplers"


def _run_with_the_model(block=None):
    """The section's first block (the model, scipy.optimize), then ``block`` in its namespace."""
    first = _python_blocks(OTHER_SAMPLERS)[0]
    namespace = {}
    exec(compile(first, "README.md", "exec"), namespace)
    if block is not None:
        exec(compile(block, "README.md", "exec"), namespace)
    return namespace


def test_the_scipy_optimize_example_finds_the_mode_of_find_map():
    import numpy as np

    import logdens as ld
    namespace = _run_with_the_model()
    assert namespace["fit"].success
    expected = ld.find_map(namespace["density"], jacobian=True)  # the same objective
    np.testing.assert_allclose(namespace["mode"]["mu"], expected.params["mu"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("package, name", [("emcee", "idata_emcee"), ("nutpie", "idata_nutpie"),
                                           ("blackjax", "idata_blackjax"), ("numpyro", "idata_numpyro")])
def test_each_external_sampler_example_runs_as_written(package, name):
    """Each sampler's snippet runs where its package is installed and gives
    ``nuts``' groups with eight schools' posterior mean of mu (about 4.4,
    posterior sd about 3.3: within 2.5 at these draws)."""
    pytest.importorskip(package)
    block = next(b for b in _python_blocks(OTHER_SAMPLERS)[1:] if f"import {package}" in b)
    x64 = None
    if package in ("blackjax", "numpyro"):
        jax = pytest.importorskip("jax")
        x64 = jax.config.jax_enable_x64
    try:
        idata = _run_with_the_model(block)[name]
    finally:
        if x64 is not None:  # the snippets switch float64 on for the whole process
            jax.config.update("jax_enable_x64", x64)
    assert {"posterior", "sample_stats", "log_likelihood", "observed_data"} <= set(idata.children)
    assert idata.posterior["theta"].dims[-1] == "school"
    assert abs(float(idata.posterior["mu"].mean()) - 4.4) < 2.5


def test_the_gpu_section_runs_as_written_in_the_simulator():
    """The section's example in numba's CUDA simulator (a separate process),
    with 40 rows and 4 points instead of 2000 and 1024 (the simulator runs
    each thread in Python); results against the CPU backend."""
    import json
    import os
    import subprocess
    import sys
    (block,) = _python_blocks("On a GPU")
    small = block.replace("2000", "40").replace("1024", "4")
    assert small.count("40") >= 2 and "(4," in small
    check = small + textwrap.dedent("""
        import json
        cpu = m.compile()
        want_lp, want_grad = cpu.log_density_gradient(theta)
        want_lps, want_grads = cpu.log_density_gradient_batch(thetas)
        print(json.dumps([abs(lp - want_lp) / abs(want_lp), float(np.max(abs(grads - want_grads))),
                          float(np.max(abs(rows - cpu.per_sample_gradient(theta, "c")))), rows.shape[0]]))
        """)
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    result = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    lp_error, grad_error, rows_error, n_rows = json.loads(result.stdout.strip().splitlines()[-1])
    assert lp_error < 1e-12 and grad_error < 1e-10 and rows_error < 1e-10 and n_rows == 40


def _cuda_device():
    from numba import config, cuda
    return not config.ENABLE_CUDASIM and cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_device(), reason="no CUDA device")
def test_the_gpu_section_runs_as_written_on_a_device():
    (block,) = _python_blocks("On a GPU")
    namespace = {}
    exec(compile(block, "README.md", "exec"), namespace)
    cpu = namespace["m"].compile()
    lps, grads = cpu.log_density_gradient_batch(namespace["thetas"])
    np.testing.assert_allclose(namespace["lps"], lps, rtol=1e-12)
    np.testing.assert_allclose(namespace["grads"], grads, rtol=1e-10, atol=1e-10 * np.max(np.abs(grads)))
    np.testing.assert_allclose(namespace["rows"], cpu.per_sample_gradient(namespace["theta"], "c"), atol=1e-10)


def test_the_multivariate_example_compiles_and_fits_its_data():
    """The Distributions section's multivariate snippet, on data of its shapes:
    it compiles, and its MAP correlation is near the data's."""
    import logdens as ld
    block = _python_blocks("Distributions")[0]
    rng = np.random.default_rng(0)
    cov = np.array([[1.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 1.0]])
    namespace = {"ld": ld, "np": np, "Y": rng.multivariate_normal(np.zeros(3), cov, size=500),
                 "X": rng.normal(size=(300, 20)), "classes": rng.integers(0, 5, 300)}
    exec(compile(block, "README.md", "exec"), namespace)
    density = namespace["m"].compile()
    fit = ld.find_map(density)
    corr = fit.params["corr"] @ fit.params["corr"].T
    np.testing.assert_allclose(corr, np.corrcoef(namespace["Y"].T), atol=0.05)


def test_the_bounds_example_keeps_its_bounds():
    """The Distributions section's snippet of bounds that are expressions: prior
    draws and the compiled density's constrained values respect them."""
    import logdens as ld
    block = _python_blocks("Distributions")[1]
    namespace = {"ld": ld, "np": np}
    exec(compile(block, "README.md", "exec"), namespace)
    m = namespace["m"]
    draws = ld.sample_prior_predictive(m, draws=200, seed=0).prior
    a, b, g = (draws[k].values for k in ("alpha1", "beta1", "gamma"))
    assert np.all((b > 0) & (b < 1 - a) & (g > b))
    values = m.compile(backend="python").constrain(np.array([3.0, 3.0, -10.0]))
    assert 0 < values["beta1"] < 1 - values["alpha1"] and values["gamma"] > values["beta1"]


def test_the_gaussian_process_example_compiles_and_has_a_finite_gradient():
    """The Distributions section's Gaussian-process snippet: a GP regression and a
    non-centred latent GP in one model, compiled, with a finite gradient."""
    import logdens as ld
    block = _python_blocks("Distributions")[2]
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0, 5, 20))
    namespace = {"ld": ld, "np": np, "x": x, "y": np.sin(x), "counts": rng.poisson(2.0, 20).astype(float)}
    exec(compile(block, "README.md", "exec"), namespace)
    density = namespace["m"].compile()
    lp, grad = density.log_density_gradient(np.zeros(density.dim))
    assert np.isfinite(lp) and np.all(np.isfinite(grad)) and density.dim == 23


def test_the_scan_example_compiles_and_has_a_finite_gradient():
    """The Distributions section's scan snippet: GARCH(1,1) and an HMM in one
    model, compiled, with a finite gradient."""
    import logdens as ld
    block = _python_blocks("Distributions")[3]
    rng = np.random.default_rng(0)
    r = rng.normal(size=50) * 0.3
    namespace = {"ld": ld, "np": np, "r": r, "r_previous": np.concatenate([[0.0], r[:-1]]),
                 "y": rng.normal(size=40)}
    exec(compile(block, "README.md", "exec"), namespace)
    density = namespace["m"].compile()
    lp, grad = density.log_density_gradient(np.full(density.dim, 0.1))
    assert np.isfinite(lp) and np.all(np.isfinite(grad)) and density.dim == 3 + 3 + 9 + 2
