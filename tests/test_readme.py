"""The README: its set-up commands are the ones CI and users run, its quickstart runs as written
(the docs pages' blocks: tests/test_docs.py)."""

import os
import re
import subprocess
import sys

import pytest

from markdown_blocks import ROOT, run_blocks


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


@pytest.mark.slow
def test_the_quickstart_runs_as_written(capsys):
    """The README's quickstart block; its summary prints every column."""
    namespace, left_out = run_blocks("README.md")
    assert not left_out
    # eight schools: posterior mean of mu about 4.4, sd 3.3; 4000 draws give an MCSE near 0.06
    assert abs(float(namespace["idata"].posterior["mu"].mean()) - 4.4) < 0.5
    header = next(line for line in capsys.readouterr().out.splitlines() if "mean" in line)
    assert "ess_bulk" in header and "r_hat" in header


@pytest.mark.slow
def test_the_quickstart_script_prints_the_whole_posterior_summary_first():
    """examples/quickstart.py (the first set-up command): the posterior summary
    comes first, with every column (pandas cut it with "..." at its display
    width, hiding ess_bulk, and a gradient vector came before it)."""
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], capture_output=True,
                            text=True, timeout=600, env={**os.environ, "COLUMNS": "80"})
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "NUTS posterior summary:"
    assert lines[1].split() == ["mean", "sd", "eti89_lb", "eti89_ub", "ess_bulk", "ess_tail", "r_hat",
                                "mcse_mean", "mcse_sd"]
    assert [line.split()[0] for line in lines[2:12]] == ["mu", "tau"] + [f"theta[{i}]" for i in range(8)]
    assert "..." not in "\n".join(lines[:12])
