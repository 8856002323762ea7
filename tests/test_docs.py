"""The documentation site (docs/, mkdocs.yml): every page's ```python blocks
run as written, in order in one namespace (tests/markdown_blocks.py), and
compute what their comments say; the site builds with warnings as errors;
its generated parts (docs/hooks.py) cover the distribution registry and
every example."""

import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from markdown_blocks import ROOT, python_blocks, run_blocks

DOCS = ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))
# pages whose blocks take more than ~10 s: they sample, or compile several models
SLOW = {"distributions.md", "external-samplers.md", "for-numpyro-users.md", "for-pymc-users.md",
        "getting-started.md", "model-building.md", "plotting.md", "samplers.md"}
CHECKS = {}


def checks(page):
    """Register the function that checks what ``page``'s blocks computed."""
    def register(function):
        CHECKS[page] = function
        return function
    return register


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p in SLOW else p for p in PAGES])
def test_page_runs_as_written(page, tmp_path, monkeypatch, capsys):
    """A page's blocks in order, in a scratch directory (the figures they
    save go there), then the checks of what they computed."""
    monkeypatch.chdir(tmp_path)
    x64 = sys.modules["jax"].config.jax_enable_x64 if "jax" in sys.modules else None
    try:
        namespace, _ = run_blocks(f"docs/{page}")
    finally:  # BlackJAX's and NumPyro's blocks switch float64 on for the whole process
        if "jax" in sys.modules:
            sys.modules["jax"].config.update("jax_enable_x64", bool(x64))
    if page in CHECKS:
        CHECKS[page](namespace, capsys.readouterr().out)


@checks("getting-started.md")
def _getting_started(ns, out):
    # eight schools: posterior mean of mu about 4.4, sd 3.3; 4000 draws give an MCSE near 0.06
    assert abs(float(ns["idata"].posterior["mu"].mean()) - 4.4) < 0.5
    header = next(line for line in out.splitlines() if "mean" in line)
    assert "ess_bulk" in header and "r_hat" in header and "..." not in out


@checks("model-building.md")
def _model_building(ns, out):
    # the mixture's mode near the generating values (100 draws: SE of a mean about 0.15)
    np.testing.assert_allclose(ns["fit"].params["mu"], [-2.0, 3.0], atol=0.5)
    assert abs(ns["fit"].params["w"] - 0.6) < 0.15
    net = ns["net"]
    assert ns["rows"].shape == (40, net.dim)
    assert net.per_sample_gradient(ns["theta_map"], "Y").shape == (8, net.dim)  # the batch set after
    assert "z[8]     ~ Normal(0, 1)" in out
    draws = ns["prior"].prior
    a, b, g = (draws[k].values for k in ("alpha1", "beta1", "gamma"))
    assert np.all((b > 0) & (b < 1 - a) & (g > b))
    for name, dim, at in (("gp_density", 23, 0.0), ("scan_density", 3 + 3 + 9 + 2, 0.1)):
        density = ns[name]
        lp, grad = density.log_density_gradient(np.full(density.dim, at))
        assert density.dim == dim and np.isfinite(lp) and np.all(np.isfinite(grad))


@checks("distributions.md")
def _distributions(ns, out):
    fit = ns["mixture_fit"]
    np.testing.assert_allclose(fit.params["mu"], [-2.0, 3.0], atol=0.5)
    np.testing.assert_allclose(fit.params["w"], [0.6, 0.4], atol=0.15)
    corr = ns["mv_fit"].params["corr"] @ ns["mv_fit"].params["corr"].T
    # 500 draws: a sample correlation's SE is below 0.045; the MAP sits near the sample's
    np.testing.assert_allclose(corr, np.corrcoef(ns["Y"].T), atol=0.05)


@checks("samplers.md")
def _samplers(ns, out):
    for name, tolerance in (("idata", 0.5), ("idata_chees", 1.0)):
        assert abs(float(ns[name].posterior["mu"].mean()) - 4.4) < tolerance, name
    for name in ("idata", "approx", "path", "vi"):
        assert ns[name].posterior["z"].dims[-1] == "school", name
    assert set(ns["prior"].children) == {"prior", "prior_predictive", "observed_data"}
    assert ns["idata"].posterior_predictive["y"].dims == ("chain", "draw", "school")


@checks("for-pymc-users.md")
def _for_pymc_users(ns, out):
    assert "z[8]     ~ Normal(0, 1)" in out
    assert set(ns["prior"].children) == {"prior", "prior_predictive", "observed_data"}
    assert ns["idata"].posterior_predictive["y"].dims == ("chain", "draw", "school")
    for name in ("approx", "vi"):
        assert ns[name].posterior["z"].dims[-1] == "school"
    assert ns["draws"].shape == (1000,)


@checks("for-numpyro-users.md")
def _for_numpyro_users(ns, out):
    assert ns["idata"].posterior_predictive["y"].dims == ("chain", "draw", "school")
    assert ns["vi"].posterior["z"].dims[-1] == "school"


@checks("plotting.md")
def _plotting(ns, out):
    if "azp" not in ns:
        pytest.skip("arviz_plots is not installed (the plots extra)")
    for name in ("trace.png", "ppc.png"):
        data = pathlib.Path(name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, name


@checks("external-samplers.md")
def _external_samplers(ns, out):
    import logdens as ld
    assert ns["fit"].success
    expected = ld.find_map(ns["density"], jacobian=True)  # the same objective
    np.testing.assert_allclose(ns["mode"]["mu"], expected.params["mu"], rtol=1e-4, atol=1e-4)
    # each sampler that ran: nuts' groups, and eight schools' posterior mean of mu
    # (about 4.4, posterior sd about 3.3: within 2.5 at these draws)
    for name in ("idata_emcee", "idata_nutpie", "idata_blackjax", "idata_numpyro"):
        if name in ns:
            idata = ns[name]
            assert {"posterior", "sample_stats", "log_likelihood", "observed_data"} <= set(idata.children)
            assert idata.posterior["theta"].dims[-1] == "school"
            assert abs(float(idata.posterior["mu"].mean()) - 4.4) < 2.5, name


def test_the_gpu_page_runs_in_the_simulator():
    """The GPU page's example in numba's CUDA simulator (a separate process),
    with 40 rows and 4 points instead of 2000 and 1024 (the simulator runs
    each thread in Python); results against the CPU backend."""
    (block,) = python_blocks("docs/gpu.md")
    assert block.skip  # never run as written without a device
    small = block.code.replace("2000", "40").replace("1024", "4")
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
def test_the_gpu_page_runs_as_written_on_a_device():
    (block,) = python_blocks("docs/gpu.md")
    namespace = {}
    exec(compile(block.code, "docs/gpu.md", "exec"), namespace)
    cpu = namespace["m"].compile()
    lps, grads = cpu.log_density_gradient_batch(namespace["thetas"])
    np.testing.assert_allclose(namespace["lps"], lps, rtol=1e-12)
    np.testing.assert_allclose(namespace["grads"], grads, rtol=1e-10, atol=1e-10 * np.max(np.abs(grads)))
    np.testing.assert_allclose(namespace["rows"], cpu.per_sample_gradient(namespace["theta"], "c"), atol=1e-10)


def test_markers_skip_require_and_refuse_typos(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python\nx = 1\n```\n\n<!-- test: skip: needs a GPU -->\n```python\nraise SystemExit\n```\n"
                    "\n<!-- test: requires no_such_package_here -->\n```python\nraise SystemExit\n```\n")
    namespace, left_out = run_blocks(page)
    assert namespace["x"] == 1 and [b.line for b in left_out] == [8, 13]
    assert left_out[0].skip == "needs a GPU" and left_out[1].requires == ("no_such_package_here",)
    page.write_text("<!-- test: skipp: typo -->\n```python\nx = 1\n```\n")
    with pytest.raises(ValueError, match="unknown test marker"):
        python_blocks(page)
    page.write_text("<!-- test: skip: a blank line apart -->\n\n```python\nx = 1\n```\n")
    with pytest.raises(ValueError, match="not on the line just above"):
        python_blocks(page)


def test_a_failing_block_points_at_its_page_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# title\n\n```python\nx = 1\ny = undefined_name\n```\n")
    with pytest.raises(NameError) as error:
        run_blocks(page)
    frame = error.traceback[-1]
    assert frame.path == pathlib.Path(str(page)) or str(frame.path) == str(page)
    assert frame.lineno + 1 == 5  # pytest counts lines from 0


def test_the_distribution_tables_cover_the_registry():
    from logdens.distributions import ALL, MULTIVARIATE
    tables = _hooks().distribution_tables()
    for cls in ALL + MULTIVARIATE:
        row = next(line for line in tables.splitlines() if line.startswith(f"| `{cls.__name__}` |"))
        for param in cls.spec.params:
            assert f"`{param.name}`" in row, (cls.__name__, param.name)
    assert "| `Gamma` | `concentration`: > 0, `rate`: > 0 | > 0 |" in tables
    assert "| `MvNormal` | `loc` (d): real, `scale_tril` (d, d): real | (d) real |" in tables


def test_the_examples_page_has_every_example_with_its_figure():
    section = _hooks().examples_section()
    for script in sorted((ROOT / "examples").glob("*.py")):
        if script.stem == "common":
            continue
        assert f"## {script.stem}\n" in section and f"Source: examples/{script.name}" in section
        source = script.read_text()
        if f'/{script.stem}.png"' in source:
            figure = (DOCS / "figures" / f"{script.stem}.png").read_bytes()
            assert f"(figures/{script.stem}.png)" in section
            # 64-colour PNGs: trace plots take 38 KB and more, timing charts about 5 KB
            # (empty, 6 KB and 1.6 KB: tests/test_examples.py)
            assert figure[:8] == b"\x89PNG\r\n\x1a\n"
            assert len(figure) > (20_000 if "trace_and_posterior(" in source else 3_000), script.stem


def test_the_nav_lists_every_page():
    """Every page is in mkdocs.yml's nav (a page left out builds, unlisted)."""
    config = (ROOT / "mkdocs.yml").read_text()
    nav = re.findall(r"^  - [^:#\n]+: (\S+\.md)$", config, re.M)
    assert sorted(nav) == PAGES


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-5000:]
    assert "ZeroSumNormal" in (site / "distributions" / "index.html").read_text()
    api = (site / "api" / "index.html").read_text()
    assert 'id="samplers.sample.nuts"' in api and 'id="logdens.model.Model"' in api
    assert (site / "figures" / "radon.png").exists()
