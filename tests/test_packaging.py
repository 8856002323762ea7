"""The folders distributions/ and samplers/ install as logdens.distributions and
logdens.samplers: a user's own distributions.py or samplers.py (or the public
package named ``distributions``) must not shadow them."""

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent("""
    import json
    import numpy as np
    import logdens as ld

    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    m.observe("y", ld.Normal(mu, 1), np.array([0.5, 1.5]))
    idata = ld.nuts(m.compile(), draws=50, tune=50, chains=1, seed=0, progress=False)
    print(json.dumps({"draws": int(idata.posterior["mu"].size),
                      "module": ld.Normal.__module__}))
""")


@pytest.mark.slow
def test_user_modules_named_distributions_and_samplers_do_not_shadow_ours(tmp_path):
    for name in ("distributions", "samplers"):
        (tmp_path / f"{name}.py").write_text("raise ImportError('the user module was imported')\n")
    (tmp_path / "run.py").write_text(SCRIPT)
    done = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"draws": 50, "module": "logdens.distributions.normal"}


def test_no_top_level_distributions_or_samplers_package():
    import logdens
    assert logdens.distributions.__name__ == "logdens.distributions"
    assert "distributions" not in sys.modules or sys.modules["distributions"] is not logdens.distributions
    assert "samplers" not in sys.modules


def test_sampler_entry_points_in_the_logdens_namespace():
    import logdens as ld
    from logdens import samplers
    for name in ("nuts", "hmc", "find_map", "laplace", "pointwise_log_likelihood"):
        assert getattr(ld, name) is getattr(samplers, name)


def _imports_samplers(node):
    if isinstance(node, ast.Import):
        return any(a.name.startswith("logdens.samplers") for a in node.names)
    if isinstance(node, ast.ImportFrom) and node.module:
        return node.module.startswith("logdens.samplers") or (
            node.module == "logdens" and any(a.name == "samplers" for a in node.names))
    return False


def test_the_model_package_imports_nothing_from_the_samplers():
    """DESIGN's direction (distributions <- logdens <- samplers): no module of
    logdens/ imports the samplers, not even inside a function, but the package's
    face (``ld.nuts``, ``ld.nuts_distributed``, ... loaded on first use) and its
    command line."""
    import logdens
    root = Path(logdens.__file__).parent
    faces = {root / "__init__.py", root / "__main__.py"}
    found = [f"{path.relative_to(root)}:{node.lineno}" for path in sorted(root.rglob("*.py")) if path not in faces
             for node in ast.walk(ast.parse(path.read_text())) if _imports_samplers(node)]
    assert found == []


def test_dask_entry_points_in_the_logdens_namespace():
    import logdens as ld
    from logdens import distributed
    from logdens.samplers import distributed as runners
    for name in ("map_fits", "nuts_distributed", "fit_seeds"):
        assert getattr(ld, name) is getattr(runners, name)
    assert ld.ShardedLogDensity is distributed.ShardedLogDensity
