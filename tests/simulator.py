"""Scripts run in numba's CUDA simulator, each in a process of its own (the
simulator is chosen when numba is imported), one at a time: the simulator
runs every GPU thread as a Python thread, and a test waits for its process.

``LIMIT`` is a wall-clock limit for one process, many times what a process
takes on a quiet machine (each script run here takes at most about 75 s of
CPU time there with empty caches, when numba compiles the models' CPU
modules, and 15 s with full ones), so that a machine busy with other work
still passes; a process that runs past it fails its own test as a timeout,
not as an assertion, and no other test.
"""

import json
import os
import subprocess
import sys
import time

import pytest

#: Seconds one simulator process may run: below pytest's 900 s per test
#: (pyproject.toml), so that this message, not pytest-timeout's, reports it.
LIMIT = 800


def run_simulated(*args, limit=LIMIT):
    """Run ``python *args`` under ``NUMBA_ENABLE_CUDASIM=1``; return the JSON
    object it printed last. A process past ``limit`` seconds is killed and
    fails the calling test with ``pytest.fail``, as does one that exits with
    an error (with the end of its stderr)."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONWARNINGS": "ignore"}
    command = [sys.executable, *args]
    shown = " ".join(os.path.basename(a) if os.path.isabs(a) else a for a in args)
    start = time.perf_counter()
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:  # subprocess.run has killed it
        pytest.fail(f"simulator subprocess timed out after {time.perf_counter() - start:.0f} s (limit {limit} s): "
                    f"{shown}; it takes at most about 75 s of CPU time on a quiet machine, so this machine is "
                    "overloaded or the script hangs", pytrace=False)
    if result.returncode != 0:
        pytest.fail(f"simulator subprocess {shown} exited with status {result.returncode}:\n"
                    f"{result.stderr[-3000:]}", pytrace=False)
    return json.loads(result.stdout.strip().splitlines()[-1])
