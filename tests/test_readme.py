"""The README's set-up commands are the ones CI and users run."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_readme_has_exactly_two_setup_commands():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", setup, re.S)
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/python examples/quickstart.py",
        'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest -q',
    ]
    assert 'grep -m1 -F \'pip install -e ".[test]"\' README.md' in (ROOT / ".ci" / "run").read_text()
