"""The compile policy of the samplers' helpers (samplers._jit)."""

import ast
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from logdens.samplers._jit import compiled
from logdens.samplers.rng import make_state, uniform


@compiled
def _twice_uniform(rng):
    return 2.0 * uniform(rng)


def test_a_helper_runs_from_python_and_from_another_helper():
    a, b = make_state(3, 0), make_state(3, 0)
    assert _twice_uniform(a) == 2.0 * uniform(b)
    np.testing.assert_array_equal(a, b)
    assert _twice_uniform.py_func.__name__ == "_twice_uniform"


@pytest.mark.slow
def test_runner_helpers_are_compiled_without_python_wrappers(tmp_path):
    """In a fresh numba cache, every function of the package compiled for the
    NUTS runner but the loop itself has no Python wrapper (they were a
    quarter of the runner's cold compile); no HMC, dense-metric or Stan
    warmup code is compiled; the transition is compiled inside its entry
    point, not as a library of its own; the trajectory's helpers and the
    warmup's are compiled once."""
    script = textwrap.dedent("""
        from numba.core import event
        from logdens.samplers import kernel

        seen = []

        class Listener(event.Listener):
            def on_start(self, ev):
                pass

            def on_end(self, ev):
                d = ev.data["dispatcher"]
                if d.py_func.__module__.startswith("logdens.samplers"):
                    seen.append((d.py_func.__name__,
                                 d.targetoptions.get("no_cpython_wrapper", False)))

        with event.install_listener("numba:compile", Listener()):
            kernel.chunk_runner(kernel.NUTS, False)
        print(sorted(n for n, no_wrapper in seen if not no_wrapper))
        print(sorted(n for n, _ in seen))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600, env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)))
    assert out.returncode == 0, out.stderr
    wrapped, names = (ast.literal_eval(line) for line in out.stdout.splitlines()[-2:])
    assert wrapped == ["run_chunk"]
    assert "transition" in names and "build_subtree" in names
    assert "nuts_transition" not in names and "find_reasonable_step_size" not in names
    for name in ("hmc_transition", "welford_dense_update", "welford_diag_update"):
        assert name not in names
    for name in ("grad_var_start", "build_subtree", "merge_subtrees", "leapfrog"):
        assert names.count(name) == 1, name
