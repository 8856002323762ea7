"""The `plots` extra: ArviZ's plots (arviz-plots on matplotlib) draw a logdens
DataTree. matplotlib 3.11 breaks arviz-plots' import (pyproject.toml says
why), so this also proves the extra's pins give a combination that works."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")  # headless, as CI and the examples run
azp = pytest.importorskip("arviz_plots")

import logdens as ld  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def idata():
    """A normal model of 30 observations: two chains of 200 draws and their posterior predictive."""
    y = np.random.default_rng(0).normal(1.0, 2.0, 30)
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 5))
    sigma = m.param("sigma", ld.HalfNormal(5))
    m.observe("y", ld.Normal(mu, sigma), y)
    density = m.compile()
    idata = ld.nuts(density, draws=200, tune=200, chains=2, seed=0, progress=False)
    return ld.sample_posterior_predictive(idata, density, seed=1, extend_inferencedata=True)


def _saved_png(plot, path):
    """Save a PlotCollection to ``path``; the file's bytes, checked to be a PNG of substance."""
    plot.savefig(path)
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    # an empty 640 x 480 figure is about 3 KB; axes, lines and labels take many more
    assert len(data) > 20_000, len(data)
    return data


@pytest.mark.slow  # the fixture compiles and samples: 12-40 s cold on the loaded build machine
def test_trace_plot_of_a_logdens_datatree(idata, tmp_path):
    plot = azp.plot_trace(idata, var_names=["mu", "sigma"], backend="matplotlib")
    _saved_png(plot, tmp_path / "trace.png")


@pytest.mark.slow
def test_posterior_predictive_plot_of_a_logdens_datatree(idata, tmp_path):
    plot = azp.plot_ppc_dist(idata, var_names=["y"], backend="matplotlib")
    _saved_png(plot, tmp_path / "ppc.png")
