"""The compiler's parity gate (issue 37): every CPU model a test compiles is
also lowered into programs (``logdens.compiler``) with the CPU schedule's
passes, emitted as the Python twin, and compared with the engine's ``core``,
``value`` (with and without the Jacobian), ``constants`` and each observed
term's ``pointwise`` rows (kept and dropped summands) and ``per_sample``
gradient rows at two points.
Run a test selection with it:

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
    """Equal at ``TOLERANCE``, or the same infinity."""
    a, b = np.asarray(a), np.asarray(b)
    with np.errstate(invalid="ignore"):
        return bool(np.all((a == b) | (np.abs(a - b) <= TOLERANCE * np.maximum(1.0, np.abs(a)))))


def compare(density, points=2, seed=0):
    """``None`` if the program's value and gradient equal ``core``'s at ``points``
    random points (where ``core``'s value is finite), else what differs."""
    lowered, layout = engine.lower(density.model)
    observed = [t for t in lowered.terms if t.per_observation]
    programs = [cpu_program(lowered, layout, name) for name in ("core", "value", "constants")]
    programs += [cpu_program(lowered, layout, name, term) for term in observed for name in ("pointwise", "per_sample")]
    new, old = emit.load(emit.source(programs, lowered, layout, jit=False)), density._module
    data = density.fdata, density.idata
    rng = np.random.default_rng(seed)
    for _ in range(points):
        theta = rng.normal(0.0, 0.5, density.dim)
        old_grad, new_grad = np.empty(density.dim), np.empty(density.dim)
        pairs = {"core": (old.core(theta, old_grad, *data, True), new.core(theta, new_grad, *data, True)),
                 "value": (old.value(theta, *data, True), new.value(theta, *data, True)),
                 "value without the jacobian": (old.value(theta, *data, False), new.value(theta, *data, False)),
                 "constants": (old.constants(theta, *data), new.constants(theta, *data))}
        for what, (a, b) in pairs.items():
            if not _close(a, b):
                return f"{what}: {b} where the engine gives {a}"
        if np.isfinite(pairs["core"][0]) and not _close(old_grad, new_grad):
            return f"gradient max diff {np.max(np.abs(old_grad - new_grad), initial=0.0):.3g}"
        for term in observed:
            name = f"pointwise_{layout.term_idents[term.name]}"
            rows = density._data.n_obs[term.name]
            for dropped in (False, True):
                a, b = np.empty(rows), np.empty(rows)
                getattr(old, name)(theta, *data, a, dropped)
                getattr(new, name)(theta, *data, b, dropped)
                if not _close(a, b):
                    return f"{name} (dropped={dropped}): max diff {np.max(np.abs(a - b)):.3g}"
            name = f"per_sample_{layout.term_idents[term.name]}"
            a, b = np.full((rows, density.dim), np.nan), np.full((rows, density.dim), np.nan)
            getattr(old, name)(theta, *data, a)
            getattr(new, name)(theta, *data, b)
            if not _close(a, b):
                return f"{name}: max diff {np.nanmax(np.abs(a - b)):.3g}"
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
