"""The examples run as users run them, at their --quick size: each exits
cleanly and saves its chart; a modelling example also recovers its simulated
truth (every true value within 4 posterior sds, which a correct fit misses
with probability below 1e-4 per value). The workload examples' timings are
printed, never asserted."""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
MODELS = ["radon", "logistic_regression", "robust_regression", "mixture", "negative_binomial_glm", "correlated_normal",
          "softmax_regression", "ordinal_regression", "varying_slopes", "dirichlet_multinomial", "gp_regression",
          "garch", "hmm", "stochastic_volatility"]
WORKLOADS = ["poisson_gradient", "embedded_atom", "normal_ad", "broadcast_sum_exp", "mlp_per_sample"]


def run(name, out):
    """``examples/<name>.py --quick``: its completed process, checked to exit 0 with its chart."""
    result = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), "--quick", "--out", str(out)],
                            capture_output=True, text=True, timeout=600, cwd=EXAMPLES,
                            env={**os.environ, "MPLBACKEND": "Agg"})
    assert result.returncode == 0, result.stderr[-3000:]
    # 64-colour PNGs (common.save): an empty chart is 1.6 KB, an empty grid of
    # trace plots 6 KB; a timing chart takes about 5 KB, trace plots 38 KB and more
    chart = (out / f"{name}.png").read_bytes()
    assert chart[:8] == b"\x89PNG\r\n\x1a\n" and len(chart) > (20_000 if name in MODELS else 3_000)
    return result


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_modelling_example_recovers_its_truth(name, tmp_path):
    result = run(name, tmp_path)
    assert "every true value within 4.0 posterior sds: True" in result.stdout, result.stdout[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("name", WORKLOADS)
def test_workload_example_prints_its_table(name, tmp_path):
    assert "| N |" in run(name, tmp_path).stdout


def test_every_example_is_tested():
    scripts = {p.stem for p in EXAMPLES.glob("*.py")} - {"common", "quickstart"}
    assert scripts == set(MODELS) | set(WORKLOADS)
