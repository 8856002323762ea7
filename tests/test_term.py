"""logdens.term: a model's terms, below the model that holds them."""

import ast
from pathlib import Path

import numpy as np

import logdens as ld
from logdens import term


def _imported(path):
    """The modules ``path`` imports, at module level or inside functions."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_the_rewrites_of_a_model_build_terms_without_importing_it():
    # model imports bounds and marginalize, which build terms: importing the
    # model back (as they did, inside functions) made an import circle
    root = Path(term.__file__).parent
    for name in ("term", "bounds", "marginalize"):
        assert "logdens.model" not in _imported(root / f"{name}.py"), name


def test_terms_of_a_model():
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    m.observe("y", ld.Normal(mu, 1), np.array([0.5, 1.5]))
    m.potential("penalty", -mu * mu)
    prior, observed, potential = m.terms
    assert all(isinstance(t, term.Term) for t in m.terms)
    assert [t.kind for t in m.terms] == ["prior", "observe", "potential"]
    assert [t.per_observation for t in m.terms] == [False, True, False]
    assert observed.params_read() == {"mu"} and potential.args == (potential.value,)
