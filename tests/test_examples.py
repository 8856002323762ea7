"""The modelling examples run as users run them, at their --quick size: each
exits cleanly, recovers its simulated truth (every true value within 4
posterior sds, which a correct fit misses with probability below 1e-4 per
value) and saves its chart."""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
MODELS = ["radon", "logistic_regression", "robust_regression", "mixture", "negative_binomial_glm"]


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_example_runs_and_recovers_its_truth(name, tmp_path):
    result = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), "--quick", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=600, cwd=EXAMPLES,
                            env={**os.environ, "MPLBACKEND": "Agg"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "every true value within 4.0 posterior sds: True" in result.stdout, result.stdout[-3000:]
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000


def test_every_example_is_tested():
    scripts = {p.stem for p in EXAMPLES.glob("*.py")} - {"common", "quickstart"}
    assert scripts == set(MODELS)
