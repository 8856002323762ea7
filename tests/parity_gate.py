"""The compiler's parity gate (issue 37): every CPU model a test compiles is
also lowered into a program (``logdens.compiler``) with the CPU schedule's
passes, emitted as the Python twin, and its value and gradient compared with the engine's ``core`` at two
points. Run a test selection with it:

    PYTHONPATH=tests python -m pytest -p parity_gate tests/test_model.py

The summary at the end counts the models lowered, matched and not lowered yet
(by reason); ``PARITY_OUT=file.json`` writes the same as JSON.
"""

import json
import os

import numpy as np

from logdens import engine
from logdens.compiler import NotLowered, cpu_program, emit

TOLERANCE = 1e-12  # relative: the same arithmetic in another order, rounding only
RESULTS = {"compiled": 0, "lowered": 0, "matched": 0, "not_lowered": {}, "mismatches": []}
_compile_model = engine.compile_model


def _close(a, b):
    return np.all(np.abs(a - b) <= TOLERANCE * np.maximum(1.0, np.abs(a)))


def compare(density, points=2, seed=0):
    """``None`` if the program's value and gradient equal ``core``'s at ``points``
    random points (where ``core``'s value is finite), else what differs."""
    lowered, layout = engine.lower(density.model)
    module = emit.load(emit.source(cpu_program(lowered, layout), lowered, layout, jit=False))
    rng = np.random.default_rng(seed)
    for _ in range(points):
        theta = rng.normal(0.0, 0.5, density.dim)
        old, new = np.empty(density.dim), np.empty(density.dim)
        lp_old = density._module.core(theta, old, density.fdata, density.idata, True)
        lp_new = module.core(theta, new, density.fdata, density.idata, True)
        if not np.isfinite(lp_old):
            if lp_new != lp_old:
                return f"value {lp_new} where core gives {lp_old}"
            continue
        if not (_close(lp_old, lp_new) and _close(old, new)):
            return f"value {lp_new} vs {lp_old}, gradient max diff {np.max(np.abs(old - new), initial=0.0):.3g}"
    return None


def _checked(model, backend="cpu", *args, **kwargs):
    density = _compile_model(model, backend, *args, **kwargs)
    if backend == "cpu":
        RESULTS["compiled"] += 1
        try:
            problem = compare(density)
        except NotLowered as error:
            reason = str(error).split(": ", 1)[-1]
            RESULTS["not_lowered"][reason] = RESULTS["not_lowered"].get(reason, 0) + 1
            return density
        except Exception as error:  # a bug of the new path: counted, the test goes on
            problem = f"{type(error).__name__}: {error}"
        RESULTS["lowered"] += 1
        if problem is None:
            RESULTS["matched"] += 1
        else:
            RESULTS["mismatches"].append(f"{os.environ.get('PYTEST_CURRENT_TEST', '?')}: {problem}")
    return density


def pytest_configure(config):
    """Registered with ``-p parity_gate``: every CPU compile is checked."""
    engine.compile_model = _checked


def pytest_terminal_summary(terminalreporter):
    write = terminalreporter.write_line
    write(f"parity gate: {RESULTS['compiled']} models compiled, {RESULTS['lowered']} lowered, "
          f"{RESULTS['matched']} equal at {TOLERANCE:g}")
    for reason, count in sorted(RESULTS["not_lowered"].items(), key=lambda kv: -kv[1]):
        write(f"  not lowered yet ({count}): {reason}")
    for line in RESULTS["mismatches"]:
        write(f"  MISMATCH {line}")
    if os.environ.get("PARITY_OUT"):
        with open(os.environ["PARITY_OUT"], "w") as f:
            json.dump(RESULTS, f, indent=1)
